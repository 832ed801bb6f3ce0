-- The types' facts as PyTorch's torch functions: torch.finfo / torch.iinfo (PyTorch 1.13's fields
-- and printing), promote_types, result_type, can_cast, torch.Size, the memory formats
-- (torch.contiguous_format, ...), is_complex / is_storage (always false here), is_nonzero and
-- is_same_size. Installed by lua/init.lua once the op files are (each name only where torch lacks it).
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local K = require 'moontorch.ops.compose'
local dtype = require 'moontorch.dtype'

local fail = core.fail
local is_tensor = T.is_tensor
local type = type

local M = {}

local fns = { -- torch functions and methods
  is_nonzero = function(x)
    if not is_tensor(x) then fail('is_nonzero', 'expected a tensor, got ' .. T.describe(x)) end
    if x:numel() ~= 1 then
      fail('is_nonzero', x:numel() == 0 and 'Boolean value of Tensor with no values is ambiguous'
        or 'Boolean value of Tensor with more than one value is ambiguous')
    end
    return x:item() ~= 0
  end,
  is_same_size = function(a, b)
    if not is_tensor(a) or not is_tensor(b) then
      fail('is_same_size', ('expected two tensors, got %s and %s'):format(T.describe(a), T.describe(b)))
    end
    return a:size() == b:size()
  end,
}
local only = { -- torch functions only
  is_complex = function() return false end,
  is_storage = function() return false end,
}
function M.install(torch)
  -- memory formats: clone takes {memory_format = torch.contiguous_format}
  for _, name in ipairs { 'contiguous_format', 'preserve_format', 'channels_last', 'channels_last_3d' } do
    torch[name] = name
  end
  K.install_functions(torch, fns, true)
  K.install_functions(torch, only, false)
  if torch.result_type == nil then
    torch.result_type = function(a, b)
      local ta = is_tensor(a) and a or torch.tensor(a)
      if is_tensor(a) and is_tensor(b) then return (torch.zeros({}, { dtype = a.dtype }) + torch.zeros({}, { dtype = b.dtype })).dtype end
      return (ta * (is_tensor(b) and b or b)).dtype
    end
  end
  if torch.promote_types == nil then
    torch.promote_types = function(a, b)
      return (torch.zeros({}, { dtype = a }) + torch.zeros({}, { dtype = b })).dtype
    end
  end
  if torch.can_cast == nil then
    local rank = function(d)
      if d == torch.bool then return 0 end
      if d.is_floating_point then return 2 end
      return 1
    end
    torch.can_cast = function(from, to)
      if not dtype.is_dtype(from) or not dtype.is_dtype(to) then
        fail('can_cast', ('expected two dtypes (from, to), got %s and %s'):format(T.describe(from), T.describe(to)))
      end
      return rank(from) <= rank(to)
    end
  end
  -- torch.finfo(dtype) / torch.iinfo(dtype): PyTorch 1.13's fields and printing
  if torch.finfo == nil then
    local F_INFO = {
      float32 = { 32, 1.1920928955078125e-07, 3.4028234663852886e+38, 1.1754943508222875e-38, 1e-06 },
      float64 = { 64, 2.220446049250313e-16, 1.7976931348623157e+308, 2.2250738585072014e-308, 1e-15 },
      float16 = { 16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001 },
      bfloat16 = { 16, 0.0078125, 3.3895313892515355e+38, 1.1754943508222875e-38, 0.01 },
    }
    local I_INFO = { uint8 = { 8, 0, 255 }, int8 = { 8, -128, 127 }, int16 = { 16, -32768, 32767 },
      int32 = { 32, -2147483648, 2147483647 }, int64 = { 64, -2 ^ 63, 2 ^ 63 } }
    local function g6(x) -- C's %g with 6 digits, as PyTorch prints finfo
      local s = ('%g'):format(x)
      return s
    end
    local finfo_mt = {
      __tostring = function(f)
        return ('finfo(resolution=%s, min=%s, max=%s, eps=%s, smallest_normal=%s, tiny=%s, dtype=%s)'):format(
          g6(f.resolution), g6(f.min), g6(f.max), g6(f.eps), g6(f.smallest_normal), g6(f.tiny), f.dtype)
      end,
    }
    local iinfo_mt = {
      __tostring = function(i) return ('iinfo(min=%s, max=%s, dtype=%s)'):format(g6(i.min), g6(i.max), i.dtype) end,
    }
    local function short(d) return (tostring(d):gsub('^torch%.', '')) end
    torch.finfo = function(d)
      d = d or torch.get_default_dtype()
      local v = F_INFO[short(d)]
      if not v then fail('finfo', 'torch.finfo() requires a floating point input type. Use torch.iinfo to handle '
        .. "'torch.finfo'") end
      return setmetatable({ bits = v[1], eps = v[2], max = v[3], min = -v[3], tiny = v[4], smallest_normal = v[4],
        resolution = v[5], dtype = short(d) }, finfo_mt)
    end
    torch.iinfo = function(d)
      local v = d and I_INFO[short(d)]
      if not v then fail('iinfo', 'dtype must be an integer type, got ' .. K.shown(d)) end
      return setmetatable({ bits = v[1], min = v[2], max = v[3], dtype = short(d) }, iinfo_mt)
    end
  end
  -- torch.Size({2, 3}): the sizes' type (compares equal to t:size())
  if torch.Size == nil then
    torch.Size = function(s)
      local size_mt = getmetatable(torch.empty(0):size())
      local r = {}
      for i = 1, #(s or {}) do r[i] = s[i] end
      return setmetatable(r, size_mt)
    end
  end
end

return M
