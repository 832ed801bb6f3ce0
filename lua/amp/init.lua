-- moontorch.amp (torch.amp): automatic mixed precision (issue 25). torch.autocast and PyTorch's
-- functions of the autocast state (lua/amp/autocast.lua), the op lists (lua/amp/policy.lua) and
-- GradScaler (lua/amp/grad_scaler.lua). Loaded on first use of any of these names.
local autocast = require 'moontorch.amp.autocast'
local policy = require 'moontorch.amp.policy'

local M = {}
M.autocast = autocast.autocast
M.Autocast = autocast.Autocast
-- the default lists (PyTorch's op names by kind, per device type): patching them changes later scopes
M.lists = { cpu = policy.cpu, cuda = policy.cuda }
-- policy(device_type): a new {op = kind} table of the default lists; current_policy: the one in effect
M.policy = policy.policy
M.current_policy = autocast.current_policy

-- the names torch itself carries (torch.autocast, torch.is_autocast_enabled, ...)
M.torch_names = {
  'autocast', 'is_autocast_enabled', 'is_autocast_cpu_enabled', 'set_autocast_enabled', 'set_autocast_cpu_enabled',
  'get_autocast_cpu_dtype', 'get_autocast_gpu_dtype', 'set_autocast_cpu_dtype', 'set_autocast_gpu_dtype',
  'is_autocast_cache_enabled', 'set_autocast_cache_enabled', 'clear_autocast_cache', 'autocast_increment_nesting',
  'autocast_decrement_nesting',
}
for _, n in ipairs(M.torch_names) do
  if n ~= 'autocast' then M[n] = autocast[n] end
end

-- torch.cpu.amp / torch.cuda.amp: autocast with the device type given (PyTorch's keyword arguments in
-- the options table: enabled, dtype, cache_enabled)
local function device_autocast(device_type)
  return function(opts, fn, ...)
    if type(opts) == 'function' then opts, fn = nil, opts end
    return autocast.autocast(device_type, opts, fn, ...)
  end
end
M.cpu = { autocast = device_autocast('cpu') }
M.cuda = { autocast = device_autocast('cuda') }

setmetatable(M, {
  __index = function(t, k)
    if k == 'GradScaler' then
      local g = require('moontorch.amp.grad_scaler').GradScaler
      rawset(t, k, g)
      t.cuda.GradScaler = g
      return g
    end
  end,
})
setmetatable(M.cuda, { __index = function(t, k) if k == 'GradScaler' then return M.GradScaler end end })
return M
