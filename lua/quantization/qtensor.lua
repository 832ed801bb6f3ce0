-- Quantized tensors (issue 25): torch.quantize_per_tensor, torch.quantize_per_channel, dequantize,
-- int_repr, q_scale, q_zero_point, q_per_channel_scales / zero_points / axis, qscheme, printing as
-- PyTorch prints them, torch.save / load (a registered class).
--
-- torch.qint8, torch.quint8 and torch.qint32 are dtype objects (is_quantized = true, PyTorch's
-- ScalarType numbers 12, 13, 14) that no kernel computes in: a quantized tensor is this Lua object,
-- holding its integer values as an ordinary int8 / uint8 / int32 tensor and its quantizer (a scale and
-- zero point, or float64 scales and int64 zero points along an axis). The C dtype list stays the list of
-- what kernels compute in; PyTorch itself computes with quantized tensors only in its quantized kernels,
-- which here take the integer tensor and the quantizer (core/ops/quant.c).
-- Dims count from 1: the axis of a per-channel tensor is 1-based (PyTorch's axis 0 is axis 1).
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local dtype = require 'moontorch.dtype'
local format = require 'moontorch.format'

local C = core.C
local fail, raise_last = core.fail, core.raise_last
local is_tensor, take, outp = T.is_tensor, T.take, T.outp
local type, tostring, ipairs = type, tostring, ipairs

local M = {}

-- the quantized dtypes: their integer storage and range
local QINFO = {
  qint8 = { storage = torch.int8, qmin = -128, qmax = 127 },
  quint8 = { storage = torch.uint8, qmin = 0, qmax = 255 },
  qint32 = { storage = torch.int32, qmin = -2147483648, qmax = 2147483647 },
}
M.QINFO = QINFO
local function qdtype(d, op)
  local r = dtype.resolve(d)
  if not (r and r.is_quantized) then
    fail(op, ('expected a quantized dtype (torch.qint8, torch.quint8, torch.qint32), got %s'):format(tostring(d)))
  end
  return r
end
M.qdtype = qdtype

-- the schemes, as PyTorch prints them
-- (a registered class: torch.save keeps them by name and loads the same objects)
local scheme_mt = class.class('torch.qscheme')
scheme_mt.__tostring = function(s) return 'torch.' .. s.name end
scheme_mt.__serialize = function(s) return s.name end
scheme_mt.__deserialize = function(_, name) return M[name] end
local function scheme(name) return setmetatable({ name = name }, scheme_mt) end
function M.is_scheme(x) return getmetatable(x) == scheme_mt end
M.per_tensor_affine = scheme('per_tensor_affine')
M.per_channel_affine = scheme('per_channel_affine')
M.per_tensor_symmetric = scheme('per_tensor_symmetric')
M.per_channel_symmetric = scheme('per_channel_symmetric')
M.per_channel_affine_float_qparams = scheme('per_channel_affine_float_qparams')

local QTensor = class.class('torch.QTensor')
local same_quantizer -- (below)
M.QTensor = QTensor
QTensor.is_quantized = true
-- saved without the packed weight kept beside it (lua/quantization/functional.lua's wparams)
QTensor.__serialize = function(q)
  local t = {}
  for k, v in pairs(q) do if k ~= '_cache' then t[k] = v end end
  return t
end
QTensor.__deserialize = function(cls, t) return setmetatable(t, cls) end
function M.is_qtensor(x) return type(x) == 'table' and getmetatable(x) == QTensor end

local function new(int_repr, qd, s)
  local q = setmetatable({}, QTensor)
  q._int, q.dtype = int_repr, qd
  for k, v in pairs(s) do q[k] = v end
  return q
end
M.new = new

------------------------------------------------------------------------------ making them
local function scale_tensor(x, op, what, dt)
  if is_tensor(x) then return x:to(dt) end
  if type(x) ~= 'number' then fail(op, ('%s: expected a number or a tensor, got %s'):format(what, type(x))) end
  return torch.tensor({ x }, { dtype = dt })
end

-- torch.quantize_per_tensor(input, scale, zero_point, dtype)
function M.quantize_per_tensor(x, scale, zero_point, qd)
  local op = 'quantize_per_tensor'
  if not is_tensor(x) then fail(op, 'expected a tensor as input, got ' .. type(x)) end
  qd = qdtype(qd, op)
  local info = QINFO[qd.name]
  local s = scale_tensor(scale, op, 'scale', torch.float64)
  local z = scale_tensor(zero_point, op, 'zero_point', torch.int64)
  if s:numel() ~= 1 or z:numel() ~= 1 then fail(op, 'expected a scale and a zero point of one element each') end
  if C.mt_quantize(x, s, z, -1, info.storage.id, info.qmin, info.qmax, outp) ~= 0 then raise_last() end
  local scale_v = s:item()
  return new(take(), qd, { _qscheme = M.per_tensor_affine, _scale = scale_v, _zero_point = z:item() })
end

-- torch.quantize_per_channel(input, scales, zero_points, axis, dtype): axis counts from 1
function M.quantize_per_channel(x, scales, zero_points, axis, qd)
  local op = 'quantize_per_channel'
  if not is_tensor(x) then fail(op, 'expected a tensor as input, got ' .. type(x)) end
  if not is_tensor(scales) or not is_tensor(zero_points) then fail(op, 'expected tensors of scales and zero points') end
  qd = qdtype(qd, op)
  if type(axis) ~= 'number' or axis % 1 ~= 0 then fail(op, 'expected an integer axis, got ' .. tostring(axis)) end
  local nd = x:dim()
  local a = axis < 0 and axis + nd + 1 or axis
  if a < 1 or a > nd then fail(op, ('axis %d is out of range for a tensor of %d dims'):format(axis, nd)) end
  local info = QINFO[qd.name]
  local s, z = scales:to(torch.float64):contiguous(), zero_points:to(torch.int64):contiguous()
  if C.mt_quantize(x, s, z, a - 1, info.storage.id, info.qmin, info.qmax, outp) ~= 0 then raise_last() end
  return new(take(), qd, { _qscheme = M.per_channel_affine, _scales = s:clone(), _zero_points = z:clone(), _axis = a })
end

-- torch._make_per_tensor_quantized_tensor(int_repr, scale, zero_point) and its per-channel twin
function M.make_per_tensor(int_repr, scale, zero_point)
  local op = '_make_per_tensor_quantized_tensor'
  if not is_tensor(int_repr) then fail(op, 'expected a tensor') end
  local byst = { int8 = 'qint8', uint8 = 'quint8', int32 = 'qint32' }
  local qn = byst[int_repr.dtype.name]
  if not qn then fail(op, 'expected an int8, uint8 or int32 tensor, got ' .. tostring(int_repr.dtype)) end
  return new(int_repr:contiguous():clone(), torch[qn], { _qscheme = M.per_tensor_affine, _scale = scale,
    _zero_point = zero_point })
end
function M.make_per_channel(int_repr, scales, zero_points, axis)
  local op = '_make_per_channel_quantized_tensor'
  local byst = { int8 = 'qint8', uint8 = 'quint8', int32 = 'qint32' }
  local qn = is_tensor(int_repr) and byst[int_repr.dtype.name]
  if not qn then fail(op, 'expected an int8, uint8 or int32 tensor') end
  return new(int_repr:contiguous():clone(), torch[qn], { _qscheme = M.per_channel_affine,
    _scales = scales:to(torch.float64):contiguous():clone(), _zero_points = zero_points:to(torch.int64):contiguous():clone(),
    _axis = axis })
end

------------------------------------------------------------------------------ reading them
local function per_channel(q) return q._axis ~= nil end

function QTensor:dequantize()
  if per_channel(self) then
    if C.mt_dequantize(self._int, self._scales, self._zero_points, self._axis - 1, outp) ~= 0 then raise_last() end
  else
    local s = torch.tensor({ self._scale }, { dtype = torch.float64 })
    local z = torch.tensor({ self._zero_point }, { dtype = torch.int64 })
    if C.mt_dequantize(self._int, s, z, -1, outp) ~= 0 then raise_last() end
  end
  return take()
end
function QTensor:int_repr() return self._int:clone() end
function QTensor:qscheme() return self._qscheme end
function QTensor:q_scale()
  if per_channel(self) then fail('q_scale', 'Expected quantizer->qscheme() == kPerTensorAffine to be true, but got false.') end
  return self._scale
end
function QTensor:q_zero_point()
  if per_channel(self) then fail('q_zero_point', 'Expected quantizer->qscheme() == kPerTensorAffine to be true, but got false.') end
  return self._zero_point
end
local function need_channel(q, op)
  if not per_channel(q) then fail(op, 'Expected quantizer->qscheme() == kPerChannelAffine to be true, but got false.') end
end
function QTensor:q_per_channel_scales() need_channel(self, 'q_per_channel_scales'); return self._scales:clone() end
function QTensor:q_per_channel_zero_points() need_channel(self, 'q_per_channel_zero_points'); return self._zero_points:clone() end
function QTensor:q_per_channel_axis() need_channel(self, 'q_per_channel_axis'); return self._axis end

-- the shape and the views of a per-tensor quantized tensor (the quantizer is shared)
function QTensor:size(d) return self._int:size(d) end
function QTensor:dim() return self._int:dim() end
function QTensor:numel() return self._int:numel() end
function QTensor:nelement() return self._int:numel() end
function QTensor:element_size() return self._int:element_size() end
function QTensor:is_contiguous() return self._int:is_contiguous() end
function QTensor:is_floating_point() return false end
function QTensor:__len() return self._int:size(1) end
local props = {
  shape = function(q) return q._int:size() end,
  ndim = function(q) return q._int:dim() end,
  device = function(q) return q._int.device end,
  is_cuda = function() return false end,
  requires_grad = function() return false end,
  grad_fn = function() return nil end,
  is_leaf = function() return true end,
}
local method_index = QTensor.__index
QTensor.__index = function(q, k)
  local p = props[k]
  if p then return p(q) end
  if type(k) == 'number' then return same_quantizer(q, q._int[k]) end
  if type(method_index) == 'table' then return method_index[k] end
  return method_index(q, k)
end

same_quantizer = function(q, int)
  local r = new(int, q.dtype, { _qscheme = q._qscheme, _scale = q._scale, _zero_point = q._zero_point })
  if per_channel(q) then r._scales, r._zero_points, r._axis = q._scales, q._zero_points, q._axis end
  return r
end
M.same_quantizer = same_quantizer
function QTensor:clone() local r = same_quantizer(self, self._int:clone()); if r._scales then r._scales, r._zero_points = r._scales:clone(), r._zero_points:clone() end return r end
function QTensor:contiguous() return self._int:is_contiguous() and self or same_quantizer(self, self._int:contiguous()) end
function QTensor:detach() return self end
local function view_op(name)
  return function(q, ...)
    if per_channel(q) then fail(name, 'views of a per-channel quantized tensor are not supported') end
    return same_quantizer(q, q._int[name](q._int, ...))
  end
end
for _, n in ipairs({ 'view', 'reshape', 'flatten', 'squeeze', 'unsqueeze', 'transpose', 'permute', 't', 'narrow',
  'select', 'expand', 'view_as', 'reshape_as' }) do
  QTensor[n] = view_op(n)
end

-- the integer values with the quantizer's dtype
function QTensor:type() return 'torch.' .. ({ qint8 = 'QInt8', quint8 = 'QUInt8', qint32 = 'QInt32' })[self.dtype.name] .. 'Tensor' end

------------------------------------------------------------------------------ printing, as PyTorch's
local function shape_tuple(q)
  local s = q._int:size()
  if #s == 1 then return '(' .. s[1] .. ',)' end
  return '(' .. table.concat(s, ', ') .. ')'
end
local pyfloat = require('moontorch.nn.layers').pyfloat
function QTensor:__tostring()
  local prefix = 'tensor('
  local indent = #prefix
  local deq = self:dequantize()
  local body = deq:numel() == 0 and '[]' or format.tensor_str(deq, indent)
  local suffixes = { 'size=' .. shape_tuple(self), 'dtype=' .. tostring(self.dtype),
    'quantization_scheme=' .. tostring(self._qscheme) }
  if per_channel(self) then
    suffixes[#suffixes + 1] = 'scale=' .. tostring(self._scales)
    suffixes[#suffixes + 1] = 'zero_point=' .. tostring(self._zero_points)
    suffixes[#suffixes + 1] = 'axis=' .. self._axis
  else
    suffixes[#suffixes + 1] = 'scale=' .. pyfloat(self._scale)
    suffixes[#suffixes + 1] = 'zero_point=' .. self._zero_point
  end
  -- PyTorch's _add_suffixes: a suffix goes on a new line when it would pass the line width
  local s = prefix .. body
  local last = s:match('([^\n]*)$')
  local len = #last + 2
  local parts = { s }
  for _, suf in ipairs(suffixes) do
    if len + #suf + 2 > 80 then
      parts[#parts + 1] = ',\n' .. (' '):rep(indent) .. suf
      len = indent + #suf
    else
      parts[#parts + 1] = ', ' .. suf
      len = len + #suf + 2
    end
  end
  parts[#parts + 1] = ')'
  return table.concat(parts)
end

------------------------------------------------------------------------------ torch functions
function M.dequantize(x)
  if M.is_qtensor(x) then return x:dequantize() end
  if type(x) == 'table' and getmetatable(x) == nil then
    local r = {}
    for i, q in ipairs(x) do r[i] = M.dequantize(q) end
    return r
  end
  if is_tensor(x) then return x end -- PyTorch's dequantize of a float tensor is itself
  fail('dequantize', 'expected a quantized tensor, got ' .. type(x))
end

function M.install(t)
  t.quantize_per_tensor = M.quantize_per_tensor
  t.quantize_per_channel = M.quantize_per_channel
  t.dequantize = M.dequantize
  t._make_per_tensor_quantized_tensor = M.make_per_tensor
  t._make_per_channel_quantized_tensor = M.make_per_channel
  for _, n in ipairs({ 'per_tensor_affine', 'per_channel_affine', 'per_tensor_symmetric', 'per_channel_symmetric',
    'per_channel_affine_float_qparams' }) do
    t[n] = M[n]
  end
end

return M
