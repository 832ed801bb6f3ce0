-- The modules of eager-mode quantization (issue 25), PyTorch 1.13's, printed as PyTorch prints them:
--   QuantStub, DeQuantStub, QuantWrapper                 (torch.ao.quantization)
--   nn.quantized: Quantize, DeQuantize, Linear, Conv2d, FloatFunctional, QFunctional
--   nn.quantized.dynamic: Linear, LSTM
--   nn.intrinsic: LinearReLU, ConvReLU2d, ConvBn2d, ConvBnReLU2d, BNReLU2d (fused float modules)
--   nn.intrinsic.quantized: LinearReLU, ConvReLU2d
--   nn.qat: Linear, Conv2d; nn.intrinsic.qat: LinearReLU, ConvReLU2d (fake-quantized weights)
-- A quantized module's state_dict has PyTorch's keys (scale, zero_point, _packed_params._packed_params
-- holding {weight, bias} for Linear; weight, bias, scale, zero_point for Conv2d).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local qt = require 'moontorch.quantization.qtensor'
local qF = require 'moontorch.quantization.functional'
local obs = require 'moontorch.quantization.observer'

local fail = core.fail
local Module = nn.Module
local pyfloat = require('moontorch.nn.layers').pyfloat
local F = nn.functional

local M = { quantized = {}, dynamic = {}, intrinsic = {}, intrinsic_quantized = {}, qat = {}, intrinsic_qat = {} }

local function tuple(v)
  if type(v) == 'number' then return '(' .. v .. ', ' .. v .. ')' end
  return '(' .. table.concat(v, ', ') .. ')'
end
local function two(v) if type(v) == 'number' then return { v, v } end return { v[1], v[2] } end

------------------------------------------------------------------------------ stubs
local QuantStub = class.class('torch.ao.quantization.QuantStub', Module)
M.QuantStub = QuantStub
function QuantStub:__init(qconfig)
  Module.__init(self)
  if qconfig then self.qconfig = qconfig end
end
function QuantStub:forward(x) return x end

local DeQuantStub = class.class('torch.ao.quantization.DeQuantStub', Module)
M.DeQuantStub = DeQuantStub
function DeQuantStub:__init(qconfig)
  Module.__init(self)
  if qconfig then self.qconfig = qconfig end
end
function DeQuantStub:forward(x) return x end

local QuantWrapper = class.class('torch.ao.quantization.QuantWrapper', Module)
M.QuantWrapper = QuantWrapper
function QuantWrapper:__init(module)
  Module.__init(self)
  local qconfig = rawget(module, '_attrs') and module.qconfig or nil
  self.quant = QuantStub(qconfig)
  self.dequant = DeQuantStub(qconfig)
  self.module = module
end
function QuantWrapper:forward(x) return self.dequant(self.module(self.quant(x))) end

------------------------------------------------------------------------------ Quantize, DeQuantize
local Quantize = class.class('nn.quantized.Quantize', Module)
M.quantized.Quantize = Quantize
function Quantize:__init(scale, zero_point, dtype)
  Module.__init(self)
  self:register_buffer('scale', torch.tensor({ scale }))
  self:register_buffer('zero_point', torch.tensor({ zero_point }, { dtype = torch.int64 }))
  self.dtype = dtype or torch.quint8
end
function Quantize:forward(x) return qt.quantize_per_tensor(x, self.scale:item(), self.zero_point:item(), self.dtype) end
function Quantize:extra_repr()
  return ('scale=%s, zero_point=%s, dtype=%s'):format(tostring(self.scale), tostring(self.zero_point), tostring(self.dtype))
end
function Quantize.from_float(mod)
  local s, z = mod.activation_post_process:calculate_qparams()
  return Quantize(s:item(), z:item(), mod.activation_post_process.dtype)
end

local DeQuantize = class.class('nn.quantized.DeQuantize', Module)
M.quantized.DeQuantize = DeQuantize
function DeQuantize:__init() Module.__init(self) end
function DeQuantize:forward(x) return qt.dequantize(x) end
function DeQuantize.from_float() return DeQuantize() end

------------------------------------------------------------------------------ weights
-- the quantized weight of a float weight, by its observer (PyTorch's _quantize_weight)
local function quantize_weight(w, observer)
  local s, z = observer:calculate_qparams()
  local q = observer.qscheme
  if q == qt.per_tensor_affine or q == qt.per_tensor_symmetric then
    return qt.quantize_per_tensor(w:float(), s:item(), z:item(), torch.qint8)
  end
  return qt.quantize_per_channel(w:float(), s:to(torch.float64), z:to(torch.int64), observer.ch_axis, torch.qint8)
end
M.quantize_weight = quantize_weight

-- the scheme PyTorch prints for a quantized weight
local function wscheme(w) return tostring(w._qscheme) end

------------------------------------------------------------------------------ quantized Linear
local QLinear = class.class('nn.quantized.Linear', Module)
M.quantized.Linear = QLinear
QLinear._FLOAT_MODULE = 'nn.Linear'
function QLinear:__init(in_features, out_features, bias, dtype)
  Module.__init(self)
  if type(bias) == 'table' then dtype, bias = bias.dtype, bias.bias end
  if bias == nil then bias = true end
  self.in_features, self.out_features = in_features, out_features
  self._qweight = qt.quantize_per_tensor(torch.zeros(out_features, in_features), 1.0, 0, torch.qint8)
  self._qbias = bias and torch.zeros(out_features) or nil
  self._wdtype = dtype or torch.qint8
  self.scale, self.zero_point = 1.0, 0
  self.training = false
end
function QLinear:_get_name() return 'QuantizedLinear' end
function QLinear:weight() return self._qweight end
function QLinear:bias() return self._qbias end
function QLinear:set_weight_bias(w, b)
  if not qt.is_qtensor(w) or w.dtype ~= torch.qint8 then fail('nn.quantized.Linear', 'expected a qint8 quantized weight') end
  self._qweight, self._qbias = w, b and b:detach():float():contiguous() or nil
end
function QLinear:forward(x) return qF.linear(x, self._qweight, self._qbias, self.scale, self.zero_point, false) end
function QLinear:extra_repr()
  return ('in_features=%d, out_features=%d, scale=%s, zero_point=%d, qscheme=%s'):format(self.in_features,
    self.out_features, pyfloat(self.scale), self.zero_point, wscheme(self._qweight))
end
function QLinear:_save_to_state_dict(dest, prefix, keep_vars)
  Module._save_to_state_dict(self, dest, prefix, keep_vars)
  dest[prefix .. 'scale'] = torch.tensor(self.scale)
  dest[prefix .. 'zero_point'] = torch.tensor(self.zero_point, { dtype = torch.int64 })
  dest[prefix .. '_packed_params.dtype'] = self._wdtype
  dest[prefix .. '_packed_params._packed_params'] = { self._qweight, self._qbias }
end
local function load_packed(self, sd, prefix, strict, missing, keys)
  local got = {}
  for _, k in ipairs(keys) do
    local v = sd[prefix .. k]
    if v == nil then
      if strict then missing[#missing + 1] = prefix .. k end
    else
      got[k] = v
      sd[prefix .. k] = nil
    end
  end
  return got
end
function QLinear:_load_from_state_dict(sd, prefix, meta, strict, missing, unexpected, errors)
  if class.typename(sd) ~= 'torch.OrderedDict' then sd = require('moontorch.ordered_dict')(sd) end
  local got = load_packed(self, sd, prefix, strict, missing,
    { 'scale', 'zero_point', '_packed_params.dtype', '_packed_params._packed_params' })
  if got.scale then self.scale = torch.is_tensor(got.scale) and got.scale:item() or got.scale end
  if got.zero_point then self.zero_point = torch.is_tensor(got.zero_point) and got.zero_point:item() or got.zero_point end
  if got['_packed_params.dtype'] then self._wdtype = got['_packed_params.dtype'] end
  local p = got['_packed_params._packed_params']
  if p then self:set_weight_bias(p[1], p[2]) end
  return Module._load_from_state_dict(self, sd, prefix, meta, strict, missing, unexpected, errors)
end
-- from a float Linear (or a fused LinearReLU, or a QAT Linear) with its qconfig and observer
function QLinear.from_float(mod, cls)
  cls = cls or QLinear
  local lin = mod
  local fused = class.isinstance(mod, M.intrinsic.LinearReLU)
  if fused then lin = mod[1] end
  local act = mod.activation_post_process
  if not act then fail('from_float', 'Input float module must have observer attached') end
  local wq = lin.weight_fake_quant or mod.qconfig.weight()
  wq(lin.weight)
  if wq.dtype ~= torch.qint8 then fail('from_float', 'Weight observer must have dtype torch.qint8') end
  local qw = quantize_weight(lin.weight:detach(), wq)
  local s, z = act:calculate_qparams()
  local q = cls(lin.in_features, lin.out_features, lin.bias ~= nil)
  q:set_weight_bias(qw, lin.bias)
  q.scale, q.zero_point = s:item(), z:item()
  return q
end

local QLinearReLU = class.class('nn.intrinsic.quantized.LinearReLU', QLinear)
M.intrinsic_quantized.LinearReLU = QLinearReLU
function QLinearReLU:_get_name() return 'QuantizedLinearReLU' end
function QLinearReLU:forward(x) return qF.linear(x, self._qweight, self._qbias, self.scale, self.zero_point, true) end
function QLinearReLU.from_float(mod) return QLinear.from_float(mod, QLinearReLU) end

------------------------------------------------------------------------------ quantized Conv2d
local QConv2d = class.class('nn.quantized.Conv2d', Module)
M.quantized.Conv2d = QConv2d
function QConv2d:__init(in_channels, out_channels, kernel_size, o)
  Module.__init(self)
  o = o or {}
  self.in_channels, self.out_channels = in_channels, out_channels
  self.kernel_size = two(kernel_size)
  self.stride, self.padding, self.dilation = two(o.stride or 1), two(o.padding or 0), two(o.dilation or 1)
  self.groups = o.groups or 1
  self.padding_mode = o.padding_mode or 'zeros'
  if self.groups ~= 1 then fail('nn.quantized.Conv2d', 'groups other than 1 are not supported') end
  local k = self.kernel_size
  self._qweight = qt.quantize_per_tensor(torch.zeros(out_channels, in_channels, k[1], k[2]), 1.0, 0, torch.qint8)
  self._qbias = (o.bias ~= false) and torch.zeros(out_channels) or nil
  self.scale, self.zero_point = 1.0, 0
  self.training = false
end
function QConv2d:_get_name() return 'QuantizedConv2d' end
function QConv2d:weight() return self._qweight end
function QConv2d:bias() return self._qbias end
function QConv2d:set_weight_bias(w, b) self._qweight, self._qbias = w, b and b:detach():float():contiguous() or nil end
function QConv2d:_relu() return false end
function QConv2d:forward(x)
  if self.padding_mode ~= 'zeros' then
    -- the other padding modes pad the integers first
    local p = self.padding
    local v = F.pad(x._int:float(), { p[2], p[2], p[1], p[1] }, self.padding_mode)
    x = qt.same_quantizer(x, v:to(x._int.dtype))
    return qF.conv2d(x, self._qweight, self._qbias, self.stride, 0, self.dilation, self.groups, self.scale,
      self.zero_point, self:_relu())
  end
  return qF.conv2d(x, self._qweight, self._qbias, self.stride, self.padding, self.dilation, self.groups, self.scale,
    self.zero_point, self:_relu())
end
function QConv2d:extra_repr()
  local s = ('%d, %d, kernel_size=%s, stride=%s, scale=%s, zero_point=%d'):format(self.in_channels, self.out_channels,
    tuple(self.kernel_size), tuple(self.stride), pyfloat(self.scale), self.zero_point)
  if self.padding[1] ~= 0 or self.padding[2] ~= 0 then s = s .. ', padding=' .. tuple(self.padding) end
  if self.dilation[1] ~= 1 or self.dilation[2] ~= 1 then s = s .. ', dilation=' .. tuple(self.dilation) end
  if self._qbias == nil then s = s .. ', bias=False' end
  if self.padding_mode ~= 'zeros' then s = s .. ', padding_mode=' .. self.padding_mode end
  return s
end
function QConv2d:_save_to_state_dict(dest, prefix, keep_vars)
  Module._save_to_state_dict(self, dest, prefix, keep_vars)
  dest[prefix .. 'weight'] = self._qweight
  dest[prefix .. 'bias'] = self._qbias
  dest[prefix .. 'scale'] = torch.tensor(self.scale)
  dest[prefix .. 'zero_point'] = torch.tensor(self.zero_point, { dtype = torch.int64 })
end
function QConv2d:_load_from_state_dict(sd, prefix, meta, strict, missing, unexpected, errors)
  if class.typename(sd) ~= 'torch.OrderedDict' then sd = require('moontorch.ordered_dict')(sd) end
  local got = load_packed(self, sd, prefix, strict, missing, { 'weight', 'scale', 'zero_point' })
  local b = sd[prefix .. 'bias']
  sd[prefix .. 'bias'] = nil
  if got.weight then self:set_weight_bias(got.weight, b) end
  if got.scale then self.scale = torch.is_tensor(got.scale) and got.scale:item() or got.scale end
  if got.zero_point then self.zero_point = torch.is_tensor(got.zero_point) and got.zero_point:item() or got.zero_point end
  return Module._load_from_state_dict(self, sd, prefix, meta, strict, missing, unexpected, errors)
end
function QConv2d.from_float(mod, cls)
  cls = cls or QConv2d
  local conv = mod
  if class.isinstance(mod, M.intrinsic.ConvReLU2d) then conv = mod[1] end
  local act = mod.activation_post_process
  if not act then fail('from_float', 'Input float module must have observer attached') end
  local wq = conv.weight_fake_quant or mod.qconfig.weight()
  wq(conv.weight)
  local qw = quantize_weight(conv.weight:detach(), wq)
  local s, z = act:calculate_qparams()
  local q = cls(conv.in_channels, conv.out_channels, conv.kernel_size, { stride = conv.stride, padding = conv.padding,
    dilation = conv.dilation, groups = conv.groups, bias = conv.bias ~= nil, padding_mode = conv.padding_mode })
  q:set_weight_bias(qw, conv.bias)
  q.scale, q.zero_point = s:item(), z:item()
  return q
end

local QConvReLU2d = class.class('nn.intrinsic.quantized.ConvReLU2d', QConv2d)
M.intrinsic_quantized.ConvReLU2d = QConvReLU2d
function QConvReLU2d:_get_name() return 'QuantizedConvReLU2d' end
function QConvReLU2d:_relu() return true end
function QConvReLU2d.from_float(mod) return QConv2d.from_float(mod, QConvReLU2d) end

------------------------------------------------------------------------------ FloatFunctional, QFunctional
local FloatFunctional = class.class('nn.quantized.FloatFunctional', Module)
M.quantized.FloatFunctional = FloatFunctional
function FloatFunctional:__init()
  Module.__init(self)
  self.activation_post_process = nn.Identity()
end
function FloatFunctional:forward() fail('FloatFunctional', 'FloatFunctional is not intended to use the \'forward\'. Please use the underlying operation') end
local function post(self, r) return self.activation_post_process(r) end
function FloatFunctional:add(x, y) return post(self, torch.add(x, y)) end
function FloatFunctional:add_scalar(x, y) return torch.add(x, y) end
function FloatFunctional:mul(x, y) return post(self, torch.mul(x, y)) end
function FloatFunctional:mul_scalar(x, y) return torch.mul(x, y) end
function FloatFunctional:cat(xs, dim) return post(self, torch.cat(xs, dim or 1)) end
function FloatFunctional:add_relu(x, y) return post(self, F.relu(torch.add(x, y))) end

local QFunctional = class.class('nn.quantized.QFunctional', Module)
M.quantized.QFunctional = QFunctional
function QFunctional:__init()
  Module.__init(self)
  self.scale, self.zero_point = 1.0, 0
  self.activation_post_process = nn.Identity()
end
function QFunctional:forward() fail('QFunctional', 'Functional is not intended to use the \'forward\'. Please use the underlying operation') end
function QFunctional:extra_repr() return ('scale=%s, zero_point=%d'):format(pyfloat(self.scale), self.zero_point) end
function QFunctional:add(x, y) return qF.add(x, y, self.scale, self.zero_point, false) end
function QFunctional:add_scalar(x, y) return qF.add_scalar(x, y) end
function QFunctional:mul(x, y) return qF.mul(x, y, self.scale, self.zero_point, false) end
function QFunctional:mul_scalar(x, y) return qF.mul_scalar(x, y) end
function QFunctional:cat(xs, dim) return qF.cat(xs, dim, self.scale, self.zero_point) end
function QFunctional:add_relu(x, y) return qF.add(x, y, self.scale, self.zero_point, true) end
function QFunctional:_save_to_state_dict(dest, prefix, keep_vars)
  Module._save_to_state_dict(self, dest, prefix, keep_vars)
  dest[prefix .. 'scale'] = torch.tensor(self.scale)
  dest[prefix .. 'zero_point'] = torch.tensor(self.zero_point, { dtype = torch.int64 })
end
function QFunctional:_load_from_state_dict(sd, prefix, meta, strict, missing, unexpected, errors)
  local got = load_packed(self, sd, prefix, strict, missing, { 'scale', 'zero_point' })
  if got.scale then self.scale = got.scale:item() end
  if got.zero_point then self.zero_point = got.zero_point:item() end
  return Module._load_from_state_dict(self, sd, prefix, meta, strict, missing, unexpected, errors)
end
function QFunctional.from_float(mod)
  local s, z = mod.activation_post_process:calculate_qparams()
  local q = QFunctional()
  q.scale, q.zero_point = s:item(), z:item()
  return q
end

------------------------------------------------------------------------------ dynamic Linear
local DLinear = class.class('nn.quantized.dynamic.Linear', QLinear)
M.dynamic.Linear = DLinear
function DLinear:__init(in_features, out_features, bias, dtype)
  QLinear.__init(self, in_features, out_features, bias, dtype)
  self.reduce_range = false -- the int8 product here is exact over uint8's whole range (vpdpbusd or vpmaddwd)
end
function DLinear:_get_name() return 'DynamicQuantizedLinear' end
function DLinear:forward(x) return qF.linear_dynamic(x, self._qweight, self._qbias, self.reduce_range) end
function DLinear:extra_repr()
  return ('in_features=%d, out_features=%d, dtype=%s, qscheme=%s'):format(self.in_features, self.out_features,
    tostring(self._wdtype), wscheme(self._qweight))
end
function DLinear.from_float(mod)
  local lin = class.isinstance(mod, M.intrinsic.LinearReLU) and mod[1] or mod
  if not mod.qconfig then fail('nn.quantized.dynamic.Linear.from_float', 'Input float module must have qconfig defined') end
  local wq = mod.qconfig.weight()
  wq(lin.weight)
  if wq.dtype ~= torch.qint8 then fail('from_float', 'The only supported dtypes for dynamic quantized linear are qint8 and float16') end
  local q = DLinear(lin.in_features, lin.out_features, lin.bias ~= nil, torch.qint8)
  q:set_weight_bias(quantize_weight(lin.weight:detach(), wq), lin.bias)
  return q
end

------------------------------------------------------------------------------ dynamic LSTM
-- each layer's input and hidden projections through the dynamic int8 product, the gates as the float
-- LSTM's (torch.lstm_cell_pointwise), one step at a time
local DLSTM = class.class('nn.quantized.dynamic.LSTM', Module)
M.dynamic.LSTM = DLSTM
function DLSTM:_get_name() return 'DynamicQuantizedLSTM' end
function DLSTM:__init(mod)
  Module.__init(self)
  if mod == nil then return end
  for _, k in ipairs({ 'input_size', 'hidden_size', 'num_layers', 'bias', 'batch_first', 'dropout', 'bidirectional' }) do
    self[k] = mod[k]
  end
  if mod.proj_size and mod.proj_size ~= 0 then fail('nn.quantized.dynamic.LSTM', 'proj_size is not supported') end
  self.training = false
  self._weights = {}
end
function DLSTM.from_float(mod)
  local q = DLSTM(mod)
  local dirs = mod.bidirectional and 2 or 1
  for l = 0, mod.num_layers - 1 do
    for d = 0, dirs - 1 do
      local sfx = '_l' .. l .. (d == 1 and '_reverse' or '')
      local entry = {}
      for _, k in ipairs({ 'ih', 'hh' }) do
        local w = mod['weight_' .. k .. sfx]
        local wq = mod.qconfig.weight()
        wq(w)
        entry[k] = quantize_weight(w:detach(), wq)
        local b = mod['bias_' .. k .. sfx]
        entry['b' .. k] = b and b:detach():clone() or nil
      end
      q._weights[#q._weights + 1] = entry
    end
  end
  return q
end
function DLSTM:extra_repr()
  local s = ('%d, %d'):format(self.input_size, self.hidden_size)
  if self.num_layers ~= 1 then s = s .. ', num_layers=' .. self.num_layers end
  if self.batch_first then s = s .. ', batch_first=True' end
  if self.bidirectional then s = s .. ', bidirectional=True' end
  return s
end
function DLSTM:forward(x, hx)
  local bf = self.batch_first
  if bf then x = x:transpose(1, 2) end
  local unbatched = x:dim() == 2
  if unbatched then x = x:unsqueeze(2) end
  local Tn, B, H = x:size(1), x:size(2), self.hidden_size
  local dirs = self.bidirectional and 2 or 1
  local h0, c0
  if hx then h0, c0 = hx[1], hx[2]; if unbatched then h0, c0 = h0:unsqueeze(2), c0:unsqueeze(2) end
  else h0 = torch.zeros(self.num_layers * dirs, B, H, { dtype = x.dtype }); c0 = h0:clone() end
  local hn, cn = {}, {}
  local layer_in = x
  for l = 0, self.num_layers - 1 do
    local outs = {}
    for d = 0, dirs - 1 do
      local e = self._weights[l * dirs + d + 1]
      local idx = l * dirs + d + 1
      local h, c = h0[idx], c0[idx]
      local ig = qF.linear_dynamic(layer_in:reshape(Tn * B, layer_in:size(3)), e.ih, e.bih, false):view(Tn, B, 4 * H)
      local steps = {}
      for s = 1, Tn do
        local t = d == 0 and s or Tn - s + 1
        local hg = qF.linear_dynamic(h, e.hh, e.bhh, false)
        h, c = torch.lstm_cell_pointwise(ig[t], hg, c)
        steps[t] = h
      end
      outs[d + 1] = torch.stack(steps, 1)
      hn[#hn + 1], cn[#cn + 1] = h, c
    end
    layer_in = dirs == 2 and torch.cat(outs, 3) or outs[1]
  end
  local out, h_n, c_n = layer_in, torch.stack(hn, 1), torch.stack(cn, 1)
  if unbatched then out, h_n, c_n = out:squeeze(2), h_n:squeeze(2), c_n:squeeze(2) end
  if bf then out = out:transpose(1, 2) end
  return out, { h_n, c_n }
end

------------------------------------------------------------------------------ fused float modules
local function fused(name, parts)
  local cls = class.class('nn.intrinsic.' .. name, nn.Sequential)
  M.intrinsic[name] = cls
  cls._parts = parts
  function cls:__init(...)
    nn.Sequential.__init(self, ...)
  end
  return cls
end
fused('LinearReLU', { 'nn.Linear', 'nn.ReLU' })
fused('ConvReLU2d', { 'nn.Conv2d', 'nn.ReLU' })
fused('ConvBn2d', { 'nn.Conv2d', 'nn.BatchNorm2d' })
fused('ConvBnReLU2d', { 'nn.Conv2d', 'nn.BatchNorm2d', 'nn.ReLU' })
fused('BNReLU2d', { 'nn.BatchNorm2d', 'nn.ReLU' })
fused('LinearBn1d', { 'nn.Linear', 'nn.BatchNorm1d' })
M.is_fused = function(m)
  for _, cls in pairs(M.intrinsic) do if class.isinstance(m, cls) then return true end end
  return false
end

------------------------------------------------------------------------------ QAT modules
local QATLinear = class.class('nn.qat.Linear', nn.Linear)
M.qat.Linear = QATLinear
function QATLinear:__init(in_features, out_features, bias, qconfig)
  nn.Linear.__init(self, in_features, out_features, bias)
  if not qconfig then fail('nn.qat.Linear', 'qconfig must be provided for QAT module') end
  self.qconfig = qconfig
  self.weight_fake_quant = qconfig.weight()
end
function QATLinear:_relu() return false end
function QATLinear:forward(x)
  local y = F.linear(x, self.weight_fake_quant(self.weight), self.bias)
  if self:_relu() then y = F.relu(y) end
  return y
end
function QATLinear.from_float(mod, cls)
  cls = cls or QATLinear
  local lin = class.isinstance(mod, M.intrinsic.LinearReLU) and mod[1] or mod
  if not mod.qconfig then fail('from_float', 'Input float module must have a valid qconfig') end
  local q = cls(lin.in_features, lin.out_features, lin.bias ~= nil, mod.qconfig)
  q.weight = lin.weight
  q.bias = lin.bias
  return q
end
function QATLinear:to_float()
  local l = nn.Linear(self.in_features, self.out_features, self.bias ~= nil)
  l.weight = nn.Parameter(self.weight:detach())
  if self.bias ~= nil then l.bias = nn.Parameter(self.bias:detach()) end
  return l
end
local QATLinearReLU = class.class('nn.intrinsic.qat.LinearReLU', QATLinear)
M.intrinsic_qat.LinearReLU = QATLinearReLU
function QATLinearReLU:_relu() return true end
function QATLinearReLU.from_float(mod) return QATLinear.from_float(mod, QATLinearReLU) end

local QATConv2d = class.class('nn.qat.Conv2d', nn.Conv2d)
M.qat.Conv2d = QATConv2d
function QATConv2d:__init(in_channels, out_channels, kernel_size, o, qconfig)
  o = o or {}
  nn.Conv2d.__init(self, in_channels, out_channels, kernel_size, o)
  if not qconfig then fail('nn.qat.Conv2d', 'qconfig must be provided for QAT module') end
  self.qconfig = qconfig
  self.weight_fake_quant = qconfig.weight()
end
function QATConv2d:_relu() return false end
function QATConv2d:forward(x)
  local y
  if self.padding_mode ~= 'zeros' then
    local p = two(self.padding)
    y = F.conv2d(F.pad(x, { p[2], p[2], p[1], p[1] }, self.padding_mode), self.weight_fake_quant(self.weight),
      self.bias, { stride = self.stride, padding = 0, dilation = self.dilation, groups = self.groups })
  else
    y = F.conv2d(x, self.weight_fake_quant(self.weight), self.bias, { stride = self.stride, padding = self.padding,
      dilation = self.dilation, groups = self.groups })
  end
  if self:_relu() then y = F.relu(y) end
  return y
end
function QATConv2d.from_float(mod, cls)
  cls = cls or QATConv2d
  local conv = class.isinstance(mod, M.intrinsic.ConvReLU2d) and mod[1] or mod
  if not mod.qconfig then fail('from_float', 'Input float module must have a valid qconfig') end
  local q = cls(conv.in_channels, conv.out_channels, conv.kernel_size, { stride = conv.stride, padding = conv.padding,
    dilation = conv.dilation, groups = conv.groups, bias = conv.bias ~= nil, padding_mode = conv.padding_mode },
    mod.qconfig)
  q.weight = conv.weight
  q.bias = conv.bias
  return q
end
local QATConvReLU2d = class.class('nn.intrinsic.qat.ConvReLU2d', QATConv2d)
M.intrinsic_qat.ConvReLU2d = QATConvReLU2d
function QATConvReLU2d:_relu() return true end
function QATConvReLU2d.from_float(mod) return QATConv2d.from_float(mod, QATConvReLU2d) end

------------------------------------------------------------------------------ FakeQuantize
local FakeQuantize = class.class('torch.ao.quantization.FakeQuantize', Module)
M.FakeQuantize = FakeQuantize
-- FakeQuantize({observer = MovingAverageMinMaxObserver, quant_min =, quant_max =, ...observer options})
function FakeQuantize:__init(o)
  Module.__init(self)
  o = o or {}
  local observer = o.observer or obs.MovingAverageMinMaxObserver
  local oo = {}
  for k, v in pairs(o) do if k ~= 'observer' then oo[k] = v end end
  if o.quant_min ~= nil and o.quant_max ~= nil and o.quant_min > o.quant_max then
    fail('FakeQuantize', 'quant_min must be less than or equal to quant_max')
  end
  self:register_buffer('fake_quant_enabled', torch.tensor({ 1 }, { dtype = torch.uint8 }))
  self:register_buffer('observer_enabled', torch.tensor({ 1 }, { dtype = torch.uint8 }))
  self.activation_post_process = obs.is_factory(observer) and observer(oo) or observer(oo)
  local app = self.activation_post_process
  self.quant_min, self.quant_max = app.quant_min, app.quant_max
  self:register_buffer('scale', torch.tensor({ 1.0 }))
  self:register_buffer('zero_point', torch.tensor({ 0 }, { dtype = torch.int32 }))
  self.dtype, self.qscheme = app.dtype, app.qscheme
  self.ch_axis = app.ch_axis or -1
  self.is_per_channel = app.qscheme == qt.per_channel_affine or app.qscheme == qt.per_channel_symmetric or
    app.qscheme == qt.per_channel_affine_float_qparams
end
FakeQuantize.with_args = obs.with_args(FakeQuantize)
function FakeQuantize:calculate_qparams() return self.activation_post_process:calculate_qparams() end
function FakeQuantize:enable_fake_quant(enabled) self.fake_quant_enabled[1] = (enabled == nil or enabled) and 1 or 0; return self end
function FakeQuantize:disable_fake_quant() return self:enable_fake_quant(false) end
function FakeQuantize:enable_observer(enabled) self.observer_enabled[1] = (enabled == nil or enabled) and 1 or 0; return self end
function FakeQuantize:disable_observer() return self:enable_observer(false) end
function FakeQuantize:forward(x)
  if self.observer_enabled[1]:item() == 1 then
    self.activation_post_process(x:detach())
    local s, z = self:calculate_qparams()
    self.scale = s:to(torch.float32):clone()
    self.zero_point = z:to(torch.int32):clone()
  end
  if self.fake_quant_enabled[1]:item() == 1 then
    if self.is_per_channel then
      x = qF.fake_quantize_per_channel_affine(x, self.scale, self.zero_point, self.ch_axis, self.quant_min, self.quant_max)
    else
      x = qF.fake_quantize_per_tensor_affine(x, self.scale, self.zero_point, self.quant_min, self.quant_max)
    end
  end
  return x
end
function FakeQuantize:extra_repr()
  return ('fake_quant_enabled=%s, observer_enabled=%s, quant_min=%d, quant_max=%d, dtype=%s, qscheme=%s, ch_axis=%d, scale=%s, zero_point=%s')
    :format(tostring(self.fake_quant_enabled), tostring(self.observer_enabled), self.quant_min, self.quant_max,
      tostring(self.dtype), tostring(self.qscheme), self.ch_axis == -1 and -1 or self.ch_axis, tostring(self.scale),
      tostring(self.zero_point))
end

-- the default fake quants of PyTorch 1.13
M.default_fake_quant = FakeQuantize.with_args({ observer = obs.MovingAverageMinMaxObserver, quant_min = 0, quant_max = 255,
  dtype = torch.quint8, qscheme = qt.per_tensor_affine, reduce_range = true })
M.default_weight_fake_quant = FakeQuantize.with_args({ observer = obs.MovingAverageMinMaxObserver, quant_min = -128,
  quant_max = 127, dtype = torch.qint8, qscheme = qt.per_tensor_symmetric, reduce_range = false })
M.default_per_channel_weight_fake_quant = FakeQuantize.with_args({
  observer = obs.MovingAveragePerChannelMinMaxObserver, quant_min = -128, quant_max = 127, dtype = torch.qint8,
  qscheme = qt.per_channel_symmetric, reduce_range = false, ch_axis = 1 })
M.default_dynamic_fake_quant = FakeQuantize.with_args({ observer = obs.MovingAverageMinMaxObserver, quant_min = 0,
  quant_max = 255, dtype = torch.quint8, averaging_constant = 1 })

return M
