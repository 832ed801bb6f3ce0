-- The optional arguments of nn.functional and of the attention and transformer modules: after the
-- required ones, positionally in the order of `names`, or by name in a trailing options table.
--   local args = require('moontorch.nn.optargs').parser { prefix = 'nn.functional.', is_opts = f }
--   local v = args('conv2d', { 'bias', 'stride' }, ...)  -- v[1], v[2] (and v.bias, v.stride)
-- prefix goes before the function's name in messages; is_opts(v, n, names) says whether the
-- trailing table v, the n-th argument, is the options (by default any table that is not a tensor);
-- unexpected is how a name it does not know is called in the message ('option' by default,
-- 'keyword argument' as PyTorch says it).
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local fail, is_tensor = core.fail, T.is_tensor
local type, select, pairs, tostring = type, select, pairs, tostring

local M = {}

local function any_table(v) return type(v) == 'table' and not is_tensor(v) end

function M.parser(o)
  local prefix, is_opts = o.prefix or '', o.is_opts or any_table
  local unexpected = "got an unexpected " .. (o.unexpected or 'option') .. " '%s'"
  return function(fn, names, ...)
    local n = select('#', ...)
    local v = { ... }
    while n > 0 and v[n] == nil do n = n - 1 end
    local opts = v[n]
    if is_opts(opts, n, names) then
      v[n] = nil
      n = n - 1
      for k, val in pairs(opts) do
        local found = false
        for i = 1, #names do
          if names[i] == k then
            if i <= n and v[i] ~= nil then fail(prefix .. fn, ("got multiple values for argument '%s'"):format(k)) end
            v[i], found = val, true
            break
          end
        end
        if not found then fail(prefix .. fn, unexpected:format(tostring(k))) end
      end
    end
    if n > #names then fail(prefix .. fn, ('takes at most %d optional arguments, got %d'):format(#names, n)) end
    for i = 1, #names do v[names[i]] = v[i] end
    return v
  end
end

return M
