-- The quantized ops (issue 25): what quantized modules compute, on quantized tensors (qtensor.lua) through
-- the C front doors (core/ops/quant.c): linear and conv2d (static: quint8 in and out; dynamic: float in and
-- out), relu, the pools, add / mul / cat with requantization (QFunctional), choose_qparams, and the fake
-- quantization of QAT with its straight-through gradient.
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local qt = require 'moontorch.quantization.qtensor'

local C = core.C
local fail, raise_last = core.fail, core.raise_last
local is_tensor, take, outp = T.is_tensor, T.take, T.outp
local is_q = qt.is_qtensor
local ffi = require 'ffi'

local M = {}

local function need_q(x, op, what)
  if not is_q(x) then fail(op, ('expected a quantized tensor as %s, got %s'):format(what or 'input', tostring(x))) end
  if x._axis then fail(op, ('expected a per-tensor quantized %s'):format(what or 'input')) end
end

-- the weight's quantizer as the C calls take it: float64 scales, int64 zero points (1 or per channel), and
-- the weight packed for the int8 product: made once per quantized weight, kept beside it (not saved)
-- (the convolution's kernel reads the weight as it is: nopack)
local function wparams(w, nopack)
  local c = rawget(w, '_cache')
  if not c then
    local s, z
    if w._axis then s, z = w._scales, w._zero_points
    else s, z = torch.tensor({ w._scale }, { dtype = torch.float64 }), torch.tensor({ w._zero_point }, { dtype = torch.int64 }) end
    c = { s, z }
    rawset(w, '_cache', c)
  end
  if not nopack and not c[3] then
    local int = w._int
    if int:dim() > 2 then int = int:reshape(int:size(1), -1) end
    if C.mt_qpack(int, outp) ~= 0 then raise_last() end
    c[3] = take()
  end
  return c[1], c[2], c[3]
end
M.wparams = wparams

------------------------------------------------------------------------------ choose_qparams
local f32 = ffi.new('float[1]')
local function to_f32(x) f32[0] = x; return f32[0] end
-- PyTorch's quant_utils::ChooseQuantizationParams (the dynamic quantization of activations)
function M.choose_qparams(min, max, qmin, qmax, reduce_range)
  if reduce_range then qmin, qmax = math.floor(qmin / 2), math.floor(qmax / 2) end
  min, max = math.min(min, 0), math.max(max, 0)
  local scale = (max - min) / (qmax - qmin)
  if to_f32(scale) == 0 or 1 / to_f32(scale) == math.huge then scale = 0.1 end
  local zfmin, zfmax = qmin - min / scale, qmax - max / scale
  local efmin, efmax = math.abs(qmin) - math.abs(min / scale), math.abs(qmax) - math.abs(max / scale)
  local z = efmin < efmax and zfmin or zfmax
  local nz
  if z < qmin then nz = qmin elseif z > qmax then nz = qmax
  else
    -- nearbyint: half to even
    local f = math.floor(z)
    local d = z - f
    if d > 0.5 or (d == 0.5 and f % 2 == 1) then nz = f + 1 else nz = f end
  end
  return to_f32(scale), nz
end

------------------------------------------------------------------------------ linear
-- static: x quint8 -> quint8 (scale, zero_point)
function M.linear(x, w, b, scale, zero_point, relu)
  need_q(x, 'quantized.linear')
  local ws, wz, packed = wparams(w)
  if C.mt_qlinear(x._int, x._scale, x._zero_point, w._int, ws, wz, b, packed, scale, zero_point, 1, relu and 1 or 0,
    outp) ~= 0 then
    raise_last()
  end
  return qt.new(take(), torch.quint8, { _qscheme = qt.per_tensor_affine, _scale = scale, _zero_point = zero_point })
end

-- dynamic: x float -> float: x quantized to quint8 with its own range, then the int8 product (all in C)
function M.linear_dynamic(x, w, b, reduce_range)
  if not is_tensor(x) then fail('quantized.linear_dynamic', 'expected a float tensor as input, got ' .. tostring(x)) end
  local ws, wz, packed = wparams(w)
  if C.mt_qlinear_dynamic(x, w._int, ws, wz, b, packed, reduce_range and 1 or 0, outp) ~= 0 then raise_last() end
  return take()
end

------------------------------------------------------------------------------ conv2d
local function pair(v, name)
  if type(v) == 'number' then return { v, v } end
  if type(v) == 'table' and #v == 2 then return v end
  fail('quantized.conv2d', ('%s: expected a number or two numbers'):format(name))
end
function M.conv2d(x, w, b, stride, padding, dilation, groups, scale, zero_point, relu)
  need_q(x, 'quantized.conv2d')
  local ws, wz = wparams(w, true)
  local s, p, d = pair(stride or 1, 'stride'), pair(padding or 0, 'padding'), pair(dilation or 1, 'dilation')
  local sa, pa, da = ffi.new('int64_t[2]', s), ffi.new('int64_t[2]', p), ffi.new('int64_t[2]', d)
  if C.mt_qconv2d(x._int, x._scale, x._zero_point, w._int, ws, wz, b, sa, pa, da, groups or 1, scale,
    zero_point, relu and 1 or 0, outp) ~= 0 then
    raise_last()
  end
  return qt.new(take(), torch.quint8, { _qscheme = qt.per_tensor_affine, _scale = scale, _zero_point = zero_point })
end

------------------------------------------------------------------------------ ops on the integers
-- relu: max(q, zero_point), the quantizer kept
function M.relu(x)
  need_q(x, 'relu')
  return qt.same_quantizer(x, x._int:clamp_min(x._zero_point))
end
-- a pool of the integers (a max, or an average rounded half to even as PyTorch's quantized avg pool),
-- the quantizer kept: fn runs on the values widened to float32
local function on_values(x, op, fn)
  need_q(x, op)
  local v = x._int:float()
  local r, extra = fn(v)
  local info = qt.QINFO[x.dtype.name]
  r = torch.round(r):clamp(info.qmin, info.qmax):to(x._int.dtype)
  return qt.same_quantizer(x, r), extra
end
function M.max_pool(fname, x, ...)
  need_q(x, fname)
  if fname == 'max_pool2d' then -- the integers pooled as they are (2 x 2 windows of uint8: 16 at a time)
    local r = require('moontorch.nn.pooling').quantized_max_pool2d(x._int, ...)
    if r then return qt.same_quantizer(x, r) end
  end
  local F = require('moontorch.nn').functional
  -- the max of integers is one of them: widened, pooled, narrowed back exactly
  local r, extra = F[fname](x._int:float(), ...)
  return qt.same_quantizer(x, r:to(x._int.dtype)), extra
end
function M.avg_pool(fname, x, ...)
  local F = require('moontorch.nn').functional
  local args = { ... }
  return on_values(x, fname, function(v) return F[fname](v, unpack(args)) end)
end

------------------------------------------------------------------------------ QFunctional's ops
local function requant(v, scale, zero_point)
  return qt.quantize_per_tensor(v, scale, zero_point, torch.quint8)
end
function M.add(a, b, scale, zero_point, relu)
  need_q(a, 'quantized.add')
  local r = a:dequantize() + (is_q(b) and b:dequantize() or b)
  if relu then r = r:clamp_min(0) end
  return requant(r, scale, zero_point)
end
function M.mul(a, b, scale, zero_point, relu)
  need_q(a, 'quantized.mul')
  local r = a:dequantize() * (is_q(b) and b:dequantize() or b)
  if relu then r = r:clamp_min(0) end
  return requant(r, scale, zero_point)
end
function M.add_scalar(a, s)
  need_q(a, 'quantized.add_scalar')
  return requant(a:dequantize() + s, a._scale, a._zero_point)
end
function M.mul_scalar(a, s)
  need_q(a, 'quantized.mul_scalar')
  return requant(a:dequantize() * s, a._scale, a._zero_point)
end
function M.cat(xs, dim, scale, zero_point)
  local d = {}
  for i, x in ipairs(xs) do need_q(x, 'quantized.cat'); d[i] = x:dequantize() end
  return requant(torch.cat(d, dim or 1), scale, zero_point)
end

------------------------------------------------------------------------------ fake quantization (QAT)
local FQ -- the autograd Function, made on first use
local function fq_function()
  if FQ then return FQ end
  FQ = torch.autograd.Function('FakeQuantizeAffine')
  function FQ.forward(ctx, x, scale, zp, axis, qmin, qmax)
    -- unclamped integers, then the mask of those inside the range (the straight-through estimator
    -- passes the gradient there), then the clamped values back in float
    local wide = C.mt_quantize(x, scale, zp, axis, torch.int32.id, -2147483648, 2147483647, outp)
    if wide ~= 0 then raise_last() end
    local q = take()
    local mask = q:ge(qmin):logical_and(q:le(qmax))
    q = q:clamp(qmin, qmax)
    if C.mt_dequantize(q, scale, zp, axis, outp) ~= 0 then raise_last() end
    local y = take()
    if x.dtype ~= torch.float32 then y = y:to(x.dtype) end
    ctx:save_for_backward(mask)
    return y
  end
  function FQ.backward(ctx, g)
    local mask = ctx.saved_tensors[1]
    return g * mask:to(g.dtype), nil, nil, nil, nil, nil
  end
  return FQ
end

-- torch.fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max)
function M.fake_quantize_per_tensor_affine(x, scale, zero_point, qmin, qmax)
  local op = 'fake_quantize_per_tensor_affine'
  if not is_tensor(x) then fail(op, 'expected a tensor as input') end
  if not (qmin <= qmax) then fail(op, ('`quant_min` should be less than or equal to `quant_max`.')) end
  local s = is_tensor(scale) and scale:to(torch.float64):reshape(1) or torch.tensor({ scale }, { dtype = torch.float64 })
  local z = is_tensor(zero_point) and zero_point:to(torch.int64):reshape(1) or
    torch.tensor({ zero_point }, { dtype = torch.int64 })
  local zv = z:item()
  if zv < qmin or zv > qmax then fail(op, '`zero_point` must be between `quant_min` and `quant_max`.') end
  return fq_function().apply(x, s, z, -1, qmin, qmax)
end
-- torch.fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max): axis from 1
function M.fake_quantize_per_channel_affine(x, scale, zero_point, axis, qmin, qmax)
  local op = 'fake_quantize_per_channel_affine'
  if not is_tensor(x) then fail(op, 'expected a tensor as input') end
  if not (qmin <= qmax) then fail(op, ('`quant_min` should be less than or equal to `quant_max`.')) end
  local nd = x:dim()
  local a = axis < 0 and axis + nd + 1 or axis
  if a < 1 or a > nd then fail(op, ('axis %d is out of range for a tensor of %d dims'):format(axis, nd)) end
  return fq_function().apply(x, scale:to(torch.float64):contiguous(), zero_point:to(torch.int64):contiguous(), a - 1,
    qmin, qmax)
end

return M
