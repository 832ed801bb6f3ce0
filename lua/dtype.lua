-- moontorch.dtype: dtype and device objects (torch.float32, torch.device('cuda:0'), ...).
local ffi = require 'ffi'

local M = {}

-- (a registered class, 'torch.dtype', so that torch.save keeps dtypes: saved by name, loaded as the same object)
local dtype_mt = require('moontorch.class').class('torch.dtype')
dtype_mt.__index = dtype_mt
dtype_mt.__tostring = function(d) return 'torch.' .. d.name end
dtype_mt.__serialize = function(d) return d.name end
dtype_mt.__deserialize = function(_, name) return M[name] end

-- id (the C enum) -> dtype object
local by_id = {}
M.by_id = by_id

local function def(name, id, itemsize, floating, signed)
  local d = setmetatable({ name = name, id = id, itemsize = itemsize, is_floating_point = floating,
                           is_signed = signed, is_complex = false }, dtype_mt)
  by_id[id] = d
  return d
end

M.uint8 = def('uint8', 0, 1, false, false)
M.int8 = def('int8', 1, 1, false, true)
M.int16 = def('int16', 2, 2, false, true)
M.int32 = def('int32', 3, 4, false, true)
M.int64 = def('int64', 4, 8, false, true)
M.float16 = def('float16', 5, 2, true, true)
M.float32 = def('float32', 6, 4, true, true)
M.float64 = def('float64', 7, 8, true, true)
M.bool = def('bool', 11, 1, false, false)
M.bfloat16 = def('bfloat16', 15, 2, true, true)
-- issue 25: the quantized dtypes (PyTorch's ScalarType numbers). No kernel computes in them: a quantized
-- tensor is a Lua object (lua/quantization/qtensor.lua) holding its values as an int8 / uint8 / int32
-- tensor (`storage`) and its quantizer; a tensor op given one of these says the dtype is not supported.
dtype_mt.is_quantized = false
M.qint8 = def('qint8', 12, 1, false, true)
M.quint8 = def('quint8', 13, 1, false, false)
M.qint32 = def('qint32', 14, 4, false, true)
M.qint8.is_quantized, M.quint8.is_quantized, M.qint32.is_quantized = true, true, true
M.qint8.storage, M.quint8.storage, M.qint32.storage = M.int8, M.uint8, M.int32

-- PyTorch's ScalarType name of a dtype, as its messages print it ("expected scalar type Long but found Float")
local scalar_types = { uint8 = 'Byte', int8 = 'Char', int16 = 'Short', int32 = 'Int', int64 = 'Long', float16 = 'Half',
  float32 = 'Float', float64 = 'Double', bool = 'Bool', bfloat16 = 'BFloat16', qint8 = 'QInt8', quint8 = 'QUInt8',
  qint32 = 'QInt32' }
function M.scalar_type(d) return scalar_types[d.name] or d.name end

-- aliases, as PyTorch has them
M.aliases = {
  float = M.float32, double = M.float64, half = M.float16, long = M.int64, int = M.int32,
  short = M.int16, byte = M.uint8, char = M.int8,
}

-- Torch7-style type names ('torch.FloatTensor')
M.tensor_type_names = {
  [0] = 'torch.ByteTensor', [1] = 'torch.CharTensor', [2] = 'torch.ShortTensor', [3] = 'torch.IntTensor',
  [4] = 'torch.LongTensor', [5] = 'torch.HalfTensor', [6] = 'torch.FloatTensor', [7] = 'torch.DoubleTensor',
  [11] = 'torch.BoolTensor', [15] = 'torch.BFloat16Tensor',
}

function M.is_dtype(x) return getmetatable(x) == dtype_mt end

-- Accept a dtype object or its name ('float32', 'float', 'torch.float32').
function M.resolve(x)
  if getmetatable(x) == dtype_mt then return x end
  if type(x) == 'string' then
    local name = x:gsub('^torch%.', '')
    return M[name] ~= nil and getmetatable(M[name]) == dtype_mt and M[name] or M.aliases[name]
  end
  return nil
end

-- Devices ----------------------------------------------------------------------------------
-- A device object: its type ('cpu', 'cuda', 'meta'), its index (CUDA only; nil: the current
-- device, as PyTorch's torch.device('cuda')), and `_c`, the mt_device the C core takes (a pointer
-- to it; nil for the CPU, the core's default; index -1 for the current device). A device object
-- names a device whether or not this build or machine has it: the C core says so when it is used.
local ffi = require 'ffi'
require 'moontorch.ffi' -- the C declarations (mt_device)
local device_mt = {}
device_mt.__index = device_mt
device_mt.__tostring = function(d)
  if d.index ~= nil then return d.type .. ':' .. d.index end
  return d.type
end
device_mt.__eq = function(a, b) return a.type == b.type and a.index == b.index end

local TYPE_IDS = { cpu = 0, cuda = 1, meta = 2 }
M.device_type_ids = TYPE_IDS
local function new_device(kind, index)
  local c = nil
  if kind ~= 'cpu' then
    c = ffi.new('mt_device[1]')
    c[0].type, c[0].index = TYPE_IDS[kind], index or (kind == 'cuda' and -1 or 0)
  end
  return setmetatable({ type = kind, index = index, _c = c }, device_mt)
end
local cpu = new_device('cpu')
M.cpu_device = cpu
M.cpu_c = ffi.new('mt_device[1]') -- the CPU as a C device (type 0), where nil would mean "the same"
local meta = new_device('meta')
M.meta_device = meta
local cuda_devices = {}

-- torch.device('cuda:1'), torch.device('cuda', 1), torch.device('cpu'), torch.device('meta')
function M.device(spec, index)
  if getmetatable(spec) == device_mt then return spec end
  if type(spec) ~= 'string' then
    require('moontorch.ffi').fail('device', 'expected a string such as "cpu" or "cuda:0", got ' .. require('moontorch.ffi').typeof(spec))
  end
  local kind, idx = spec:match('^(%a+):(%d+)$')
  if not kind then kind = spec end
  idx = tonumber(idx) or index
  if kind == 'cpu' then return cpu end
  if kind == 'meta' then return meta end
  if kind ~= 'cuda' then
    require('moontorch.ffi').fail('device', ("expected one of cpu, cuda, meta device type at start of device string: %s"):format(spec))
  end
  if idx ~= nil and (idx ~= math.floor(idx) or idx < 0 or idx >= 2 ^ 31) then
    require('moontorch.ffi').fail('device', ('the device index must be a non-negative integer, got %s'):format(tostring(idx)))
  end
  local key = idx or -1
  local d = cuda_devices[key]
  if not d then
    d = new_device('cuda', idx)
    cuda_devices[key] = d
  end
  return d
end

-- the device object of a tensor's device fields
function M.device_of(type_id, index)
  if type_id == 0 then return cpu end
  if type_id == 2 then return meta end
  return M.device('cuda', index)
end

function M.is_device(x) return getmetatable(x) == device_mt end

return M
