-- The constructor arguments of the modules of activation.lua, loss.lua, normalization.lua,
-- sparse.lua and misc.lua: PyTorch's optional arguments by position in its order, or by name in
-- a trailing options table (with device= and dtype= for modules that have parameters), and the
-- number formats of PyTorch's extra_repr.
local T = require 'moontorch.tensor'
local core = require 'moontorch.ffi'
local layers = require 'moontorch.nn.layers'

local fail, is_tensor = core.fail, T.is_tensor
local type, select, pairs, getmetatable, tostring = type, select, pairs, getmetatable, tostring

local M = {}

-- an options table: a plain table (no class, no tensor) without array items
local function is_opts(v)
  return type(v) == 'table' and not is_tensor(v) and getmetatable(v) == nil and v[1] == nil
end
M.is_opts = is_opts

-- parse(owner, names, ...): the arguments as a table by name. Positional values fill `names` in
-- order; a trailing options table sets them by name; device/dtype (when `factory` allows them)
-- come back as the second value, a table for torch.empty & co. or nil.
function M.parse(owner, names, factory, ...)
  local n = select('#', ...)
  local v = { ... }
  while n > 0 and v[n] == nil do n = n - 1 end
  local opts
  if n > 0 and is_opts(v[n]) then
    opts = v[n]
    v[n] = nil
    n = n - 1
  end
  if n > #names then
    fail(owner, ('takes at most %d positional arguments after the required ones (got %d)'):format(#names, n))
  end
  local r, fk = {}, nil
  for i = 1, n do r[names[i]] = v[i] end
  if opts then
    for k, val in pairs(opts) do
      if factory and (k == 'device' or k == 'dtype') then
        fk = fk or {}
        fk[k] = val
      else
        local found = false
        for i = 1, #names do
          if names[i] == k then
            if i <= n and v[i] ~= nil then fail(owner, ("got multiple values for argument '%s'"):format(k)) end
            found = true
          end
        end
        if not found then fail(owner, ("__init__() got an unexpected keyword argument '%s'"):format(tostring(k))) end
        r[k] = val
      end
    end
  end
  return r, fk
end

function M.number(owner, name, v, default)
  if v == nil then return default end
  if type(v) ~= 'number' then fail(owner, ('%s must be a number (got %s)'):format(name, type(v))) end
  return v
end

function M.bool(owner, name, v, default)
  if v == nil then return default end
  if type(v) ~= 'boolean' then fail(owner, ('%s must be a boolean (got %s)'):format(name, type(v))) end
  return v
end

M.pyfloat = layers.pyfloat
function M.pybool(b) return b and 'True' or 'False' end
-- a number as Python prints an int-or-float argument that was most likely written as an int
function M.pynum(x)
  if type(x) == 'number' and x % 1 == 0 and math.abs(x) < 2 ^ 53 then return ('%d'):format(x) end
  return layers.pyfloat(x)
end

return M
