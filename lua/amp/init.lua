-- moontorch.amp (torch.amp): automatic mixed precision (issue 25): torch.autocast and PyTorch's functions
-- of the autocast state (lua/amp/autocast.lua, which torch itself carries: torch.is_autocast_enabled, ...),
-- the op lists (lua/amp/policy.lua) and GradScaler (lua/amp/grad_scaler.lua). Loaded on first use.
local autocast = require 'moontorch.amp.autocast'
local policy = require 'moontorch.amp.policy'

local M = {}
M.autocast = autocast.autocast
-- the default lists (PyTorch's op names by kind, per device type): patching them changes later scopes
M.lists = { cpu = policy.cpu, cuda = policy.cuda }
-- policy(device_type): a new {op = kind} table of the default lists; current_policy: the one in effect
M.policy = policy.policy
M.current_policy = autocast.current_policy
M.policy_changed = autocast.policy_changed

-- torch.cpu.amp / torch.cuda.amp: autocast with the device type given (PyTorch's keyword arguments in
-- the options table: enabled, dtype, cache_enabled)
local function device_autocast(device_type)
  return function(opts, fn, ...)
    if type(opts) == 'function' then opts, fn = nil, opts end
    return autocast.autocast(device_type, opts, fn, ...)
  end
end
local function scaler() return require('moontorch.amp.grad_scaler').GradScaler end
M._cpu = { autocast = device_autocast('cpu') }
M._cuda = setmetatable({ autocast = device_autocast('cuda') }, {
  __index = function(t, k) if k == 'GradScaler' then rawset(t, k, scaler()); return t[k] end end,
})

return setmetatable(M, {
  __index = function(t, k) if k == 'GradScaler' then rawset(t, k, scaler()); return t[k] end end,
})
