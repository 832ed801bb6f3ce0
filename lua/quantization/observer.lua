-- Observers (issue 25): modules that watch the tensors going through them and compute quantization
-- parameters from what they saw, as PyTorch 1.13's torch.ao.quantization.observer: MinMaxObserver,
-- MovingAverageMinMaxObserver, PerChannelMinMaxObserver, MovingAveragePerChannelMinMaxObserver,
-- HistogramObserver (the L2 search over a histogram), PlaceholderObserver, NoopObserver. Their arithmetic
-- is PyTorch's, in float32 tensors, so their ranges and qparams are PyTorch's. Options as PyTorch's keyword
-- arguments in one table; ch_axis counts from 1 (PyTorch's 0 is 1). Obs.with_args{...} is a factory.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local qt = require 'moontorch.quantization.qtensor'

local fail = core.fail
local Module = nn.Module
local pyfloat = require('moontorch.nn.layers').pyfloat

local M = {}
local EPS = 1.1920928955078125e-07 -- torch.finfo(torch.float32).eps

-- the factory of a class with some arguments (PyTorch's _PartialWrapper): call it for an instance,
-- with_args{...} for more arguments
-- (a registered class: saved with its class's name and its arguments)
local Partial = class.class('torch.ao.quantization.Partial')
Partial.__serialize = function(p) return { cls = p.cls.__typename, args = p.args } end
Partial.__deserialize = function(c, st) return setmetatable({ cls = class.find(st.cls), args = st.args }, c) end
Partial.__call = function(p, more)
  local o = {}
  for k, v in pairs(p.args) do o[k] = v end
  for k, v in pairs(more or {}) do o[k] = v end
  return p.cls(o)
end
function Partial:with_args(more)
  local o = {}
  for k, v in pairs(self.args) do o[k] = v end
  for k, v in pairs(more or {}) do o[k] = v end
  return setmetatable({ cls = self.cls, args = o }, Partial)
end
Partial.__tostring = function(p)
  local keys = {}
  for k in pairs(p.args) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = k .. '=' .. tostring(p.args[k]) end
  return ('functools.partial(<class \'%s\'>, %s){}'):format(p.cls.__typename, table.concat(parts, ', '))
end
M.Partial = Partial
function M.is_factory(x) return getmetatable(x) == Partial end
local function with_args(cls) return function(args) return setmetatable({ cls = cls, args = args or {} }, Partial) end end
M.with_args = with_args

-- PyTorch's calculate_qmin_qmax
function M.calculate_qmin_qmax(quant_min, quant_max, customized, dt, reduce_range)
  if customized then
    local qmin, qmax = quant_min, quant_max
    if reduce_range then qmin, qmax = math.floor(qmin / 2), math.floor(qmax / 2) end
    return qmin, qmax
  end
  if dt == torch.qint8 then
    if reduce_range then return -64, 63 end
    return -128, 127
  elseif dt == torch.quint8 then
    if reduce_range then return 0, 127 end
    return 0, 255
  elseif dt == torch.qint32 then
    return -2 ^ 31, 2 ^ 31 - 1
  end
  return 0, 15 -- quint4x2
end

------------------------------------------------------------------------------ the base
local ObserverBase = class.class('torch.ao.quantization.ObserverBase', Module)
M.ObserverBase = ObserverBase
function ObserverBase:__init(o)
  Module.__init(self)
  self.dtype = o.dtype or torch.quint8
end
ObserverBase.with_args = function(args) return with_args(ObserverBase)(args) end

-- Python's '{}'.format(tensor): a 0-dim tensor formats as its number
local function fmt(t) return t:dim() == 0 and pyfloat(t:item()) or tostring(t) end
M.fmt = fmt

local function is_per_tensor(s) return s == qt.per_tensor_affine or s == qt.per_tensor_symmetric end
local function is_symmetric(s) return s == qt.per_tensor_symmetric or s == qt.per_channel_symmetric end

local Uniform = class.class('torch.ao.quantization.UniformQuantizationObserverBase', ObserverBase)
M.UniformQuantizationObserverBase = Uniform
function Uniform:__init(o)
  o = o or {}
  ObserverBase.__init(self, o)
  self.qscheme = o.qscheme or qt.per_tensor_affine
  self.reduce_range = o.reduce_range == true
  self:register_buffer('eps', torch.tensor({ o.eps or EPS }))
  if not (self.dtype == torch.qint8 or self.dtype == torch.quint8 or self.dtype == torch.qint32) then
    fail(self:_get_name(), 'Default Observer only works for qint8, quint8 and quint4x2 data type')
  end
  self.has_customized_qrange = o.quant_min ~= nil and o.quant_max ~= nil
  if self.has_customized_qrange then
    if not (o.quant_min <= 0 and 0 <= o.quant_max) then fail(self:_get_name(), 'Used-specified quantization range must include 0.') end
    if not (o.quant_min < o.quant_max) then
      fail(self:_get_name(), 'qmin must be strictly less than qmax for user-specified quantization range.')
    end
  end
  self.quant_min, self.quant_max = M.calculate_qmin_qmax(o.quant_min, o.quant_max, self.has_customized_qrange,
    self.dtype, self.reduce_range)
end

-- PyTorch's _calculate_qparams: float32 scales and int64 zero points of min_val / max_val's shape
function Uniform:_calculate_qparams(min_val, max_val)
  if min_val:numel() == 0 or max_val:numel() == 0 or
    (min_val:dim() == 0 and min_val:item() == math.huge and max_val:item() == -math.huge) then
    return torch.tensor({ 1.0 }), torch.tensor({ 0 }, { dtype = torch.int64 })
  end
  if not torch.all(min_val:le(max_val)) then
    fail(self:_get_name(), ('min %s should be less than max %s'):format(tostring(min_val), tostring(max_val)))
  end
  local qmin, qmax = self.quant_min, self.quant_max
  local min_neg = torch.min(min_val, torch.zeros_like(min_val))
  local max_pos = torch.max(max_val, torch.zeros_like(max_val))
  local zero_point = torch.zeros(min_neg:size(), { dtype = torch.int64 })
  local scale
  if is_symmetric(self.qscheme) then
    max_pos = torch.max(-min_neg, max_pos)
    scale = max_pos / ((qmax - qmin) / 2)
    scale = torch.maximum(scale, self.eps)
    if self.dtype == torch.quint8 then
      zero_point:fill_(self.has_customized_qrange and math.floor((qmin + qmax) / 2) or 128)
    end
  elseif self.qscheme == qt.per_channel_affine_float_qparams then
    scale = (max_val - min_val) / (qmax - qmin)
    scale = torch.where(scale:gt(self.eps), scale, torch.ones_like(scale))
    zero_point = (min_val * -1) / scale
  else
    scale = (max_pos - min_neg) / (qmax - qmin)
    scale = torch.maximum(scale, self.eps)
    zero_point = torch.round(min_neg / scale):to(torch.int32):neg():add(qmin) -- int32, as PyTorch's
    zero_point = torch.clamp(zero_point, qmin, qmax)
  end
  if scale:dim() == 0 then scale = scale:reshape(1) end
  if zero_point:dim() == 0 then zero_point = zero_point:reshape(1) end
  return scale, zero_point
end

------------------------------------------------------------------------------ MinMaxObserver
local MinMax = class.class('torch.ao.quantization.MinMaxObserver', Uniform)
M.MinMaxObserver = MinMax
function MinMax:__init(o)
  o = o or {}
  local s = o.qscheme or qt.per_tensor_affine
  if not is_per_tensor(s) then
    fail(self.__typename:match('[^.]+$'), 'qscheme only support torch.per_tensor_symmetric and torch.per_tensor_affine.')
  end
  Uniform.__init(self, o)
  self:register_buffer('min_val', torch.tensor(math.huge))
  self:register_buffer('max_val', torch.tensor(-math.huge))
  if self.qscheme == qt.per_tensor_symmetric and self.reduce_range and self.dtype == torch.quint8 then
    fail('MinMaxObserver', 'Cannot reduce range for symmetric quantization for quint8')
  end
end
MinMax.with_args = with_args(MinMax)
function MinMax:forward(x_orig)
  if x_orig:numel() == 0 then return x_orig end
  local x = x_orig:detach():to(self.min_val.dtype)
  local mn, mx = torch.aminmax(x)
  self.min_val:copy_(torch.min(mn, self.min_val))
  self.max_val:copy_(torch.max(mx, self.max_val))
  return x_orig
end
function MinMax:calculate_qparams() return self:_calculate_qparams(self.min_val, self.max_val) end
function MinMax:extra_repr() return ('min_val=%s, max_val=%s'):format(fmt(self.min_val), fmt(self.max_val)) end
function MinMax:reset_min_max_vals()
  self.min_val:fill_(math.huge)
  self.max_val:fill_(-math.huge)
end

local MovingAverage = class.class('torch.ao.quantization.MovingAverageMinMaxObserver', MinMax)
M.MovingAverageMinMaxObserver = MovingAverage
function MovingAverage:__init(o)
  o = o or {}
  self.averaging_constant = o.averaging_constant or 0.01
  MinMax.__init(self, o)
end
MovingAverage.with_args = with_args(MovingAverage)
function MovingAverage:forward(x_orig)
  if x_orig:numel() == 0 then return x_orig end
  local x = x_orig:detach():to(self.min_val.dtype)
  local mn, mx
  if self.min_val:item() == math.huge and self.max_val:item() == -math.huge then
    mn, mx = torch.aminmax(x)
  else
    local cmn, cmx = torch.aminmax(x)
    mn = self.min_val + (cmn - self.min_val) * self.averaging_constant
    mx = self.max_val + (cmx - self.max_val) * self.averaging_constant
  end
  self.min_val:copy_(mn)
  self.max_val:copy_(mx)
  return x_orig
end

------------------------------------------------------------------------------ per channel
local PerChannel = class.class('torch.ao.quantization.PerChannelMinMaxObserver', Uniform)
M.PerChannelMinMaxObserver = PerChannel
function PerChannel:__init(o)
  o = o or {}
  if is_per_tensor(o.qscheme or qt.per_channel_affine) then
    fail('PerChannelMinMaxObserver', "PerChannelMinMaxObserver's qscheme only support torch.per_channel_symmetric, torch.per_channel_affine and torch.per_channel_affine_float_qparams.")
  end
  o.qscheme = o.qscheme or qt.per_channel_affine
  Uniform.__init(self, o)
  self.ch_axis = o.ch_axis or 1
  self:register_buffer('min_val', torch.tensor({}))
  self:register_buffer('max_val', torch.tensor({}))
  if is_symmetric(self.qscheme) and self.reduce_range and self.dtype == torch.quint8 then
    fail('PerChannelMinMaxObserver', 'Cannot reduce range for symmetric quantization for quint8')
  end
end
PerChannel.with_args = with_args(PerChannel)
local function channels_first(self, x)
  local nd = x:dim()
  local axis = self.ch_axis < 0 and self.ch_axis + nd + 1 or self.ch_axis
  local perm = {}
  for i = 1, nd do perm[i] = i end
  perm[axis], perm[1] = 1, axis
  return torch.flatten(x:permute(perm):to(self.min_val.dtype), 2)
end
function PerChannel:forward(x_orig)
  if x_orig:numel() == 0 then return x_orig end
  local y = channels_first(self, x_orig:detach())
  local mn, mx = torch.aminmax(y, { dim = 2 })
  if self.min_val:numel() ~= 0 and self.max_val:numel() ~= 0 then
    mn, mx = torch.min(mn, self.min_val), torch.max(mx, self.max_val)
  end
  self.min_val = mn:clone()
  self.max_val = mx:clone()
  return x_orig
end
function PerChannel:calculate_qparams() return self:_calculate_qparams(self.min_val, self.max_val) end
function PerChannel:extra_repr() return ('min_val=%s, max_val=%s'):format(fmt(self.min_val), fmt(self.max_val)) end
function PerChannel:reset_min_max_vals()
  self.min_val = torch.tensor({})
  self.max_val = torch.tensor({})
end

local MovingAveragePerChannel = class.class('torch.ao.quantization.MovingAveragePerChannelMinMaxObserver', PerChannel)
M.MovingAveragePerChannelMinMaxObserver = MovingAveragePerChannel
function MovingAveragePerChannel:__init(o)
  o = o or {}
  self.averaging_constant = o.averaging_constant or 0.01
  PerChannel.__init(self, o)
end
MovingAveragePerChannel.with_args = with_args(MovingAveragePerChannel)
function MovingAveragePerChannel:forward(x_orig)
  if x_orig:numel() == 0 then return x_orig end
  local y = channels_first(self, x_orig:detach())
  local mn, mx
  if self.min_val:numel() == 0 or self.max_val:numel() == 0 then
    mn, mx = torch.aminmax(y, { dim = 2 })
  else
    local cmn, cmx = torch.aminmax(y, { dim = 2 })
    mn = self.min_val + (cmn - self.min_val) * self.averaging_constant
    mx = self.max_val + (cmx - self.max_val) * self.averaging_constant
  end
  self.min_val = mn:clone()
  self.max_val = mx:clone()
  return x_orig
end

------------------------------------------------------------------------------ HistogramObserver
local Histogram = class.class('torch.ao.quantization.HistogramObserver', Uniform)
M.HistogramObserver = Histogram
function Histogram:__init(o)
  o = o or {}
  if not is_per_tensor(o.qscheme or qt.per_tensor_affine) then
    fail('HistogramObserver', "HistogramObserver's qscheme only support torch.per_tensor_symmetric and torch.per_tensor_affine.")
  end
  Uniform.__init(self, o)
  self.bins = o.bins or 2048
  self:register_buffer('histogram', torch.zeros(self.bins))
  self:register_buffer('min_val', torch.tensor(math.huge))
  self:register_buffer('max_val', torch.tensor(-math.huge))
  self.dst_nbins = self.dtype == torch.qint32 and 2 ^ 32 or 256
  self.upsample_rate = o.upsample_rate or 128
end
Histogram.with_args = with_args(Histogram)

local function trunc(x) return x < 0 and math.ceil(x) or math.floor(x) end -- Python's int()

function Histogram:_get_norm(db, de, density)
  return density * ((de * de * de - db * db * db) / 3)
end
function Histogram:_compute_quantization_error(s, e)
  local bin_width = (self.max_val:item() - self.min_val:item()) / self.bins
  local dst_w = bin_width * (e - s + 1) / self.dst_nbins
  if dst_w == 0 then return 0 end
  local src = torch.arange(self.bins, { dtype = torch.int64 })
  local sb = (src - s) * bin_width
  local se = sb + bin_width
  local db = torch.clamp(torch.div(sb, dst_w, { rounding_mode = 'floor' }), 0, self.dst_nbins - 1)
  local dbc = (db + 0.5) * dst_w
  local de = torch.clamp(torch.div(se, dst_w, { rounding_mode = 'floor' }), 0, self.dst_nbins - 1)
  local density = self.histogram / bin_width
  local norm = torch.zeros(self.bins)
  norm = norm + self:_get_norm(sb - dbc, torch.ones(self.bins) * (dst_w / 2), density)
  norm = norm + (de - db - 1) * self:_get_norm(torch.tensor(-dst_w / 2), torch.tensor(dst_w / 2), density)
  local dec = de * dst_w + dst_w / 2
  norm = norm + self:_get_norm(torch.tensor(-dst_w / 2), se - dec, density)
  return norm:sum():item()
end
function Histogram:_non_linear_param_search()
  local bin_width = (self.max_val - self.min_val) / self.bins
  local total = torch.sum(self.histogram):item()
  local csum = torch.cumsum(self.histogram, 1):tolist()
  local stepsize, alpha, beta = 1e-5, 0.0, 1.0
  local start_bin, end_bin = 0, self.bins - 1
  local norm_min = math.huge
  while alpha < beta do
    local na, nb = alpha + stepsize, beta - stepsize
    local l, r = start_bin, end_bin
    while l < end_bin and csum[l + 1] < na * total do l = l + 1 end
    while r > start_bin and csum[r + 1] > nb * total do r = r - 1 end
    local ns, ne = start_bin, end_bin
    if (l - start_bin) > (end_bin - r) then
      ns, alpha = l, na
    else
      ne, beta = r, nb
    end
    if not (ns == start_bin and ne == end_bin) then
      local norm = self:_compute_quantization_error(ns, ne)
      if norm > norm_min then break end
      norm_min = norm
      start_bin, end_bin = ns, ne
    end
  end
  return self.min_val + bin_width * start_bin, self.min_val + bin_width * (end_bin + 1)
end
function Histogram:_adjust_min_max(cmin, cmax, up)
  local hbw = (self.max_val - self.min_val) / (self.bins * up)
  local down = math.floor(torch.ceil((cmax - cmin) / (hbw * self.bins)):item() + 0.5)
  local e = (hbw * self.bins) * down - (cmax - cmin)
  cmax = cmax + e
  local start = math.floor(torch.round((self.min_val - cmin) / hbw):item() + 0.5)
  return cmin, cmax, down, start
end
function Histogram:_combine_histograms(orig, new, up, down, start, n)
  local upsampled = new:repeat_interleave(up)
  local with_range = torch.zeros(n * down)
  with_range:narrow(1, start + 1, n * up):copy_(upsampled)
  local integral = torch.cumsum(with_range, 1, { dtype = torch.float64 })
  integral = integral:narrow(1, down, n * down - down + 1)
  integral = integral:as_strided({ n }, { down }, integral:storage_offset())
  local shifted = torch.zeros(n)
  if n > 1 then shifted:narrow(1, 2, n - 1):copy_(integral:narrow(1, 1, n - 1)) end
  local interp = (integral - shifted) / up
  return orig + interp:to(torch.float32)
end
function Histogram:forward(x_orig)
  if x_orig:numel() == 0 then return x_orig end
  local x = x_orig:detach()
  local mnv, mxv = self.min_val:item(), self.max_val:item()
  if (mnv == math.huge and mxv == -math.huge) or mnv == mxv then
    local mn, mx = torch.aminmax(x)
    self.min_val = mn:clone()
    self.max_val = mx:clone()
    self.histogram = torch.histc(x, self.bins, trunc(mn:item()), trunc(mx:item()))
  else
    local nmn, nmx = torch.aminmax(x)
    local cmin, cmax = torch.min(nmn, self.min_val), torch.max(nmx, self.max_val)
    local down, start
    cmin, cmax, down, start = self:_adjust_min_max(cmin, cmax, self.upsample_rate)
    local combined = torch.histc(x, self.bins, trunc(cmin:item()), trunc(cmax:item()))
    if cmin:item() == mnv and cmax:item() == mxv then
      combined = combined + self.histogram
    else
      combined = self:_combine_histograms(combined, self.histogram, self.upsample_rate, down, start, self.bins)
    end
    self.histogram = combined
    self.min_val = cmin:clone()
    self.max_val = cmax:clone()
  end
  return x_orig
end
function Histogram:calculate_qparams()
  if self.min_val:item() == math.huge and self.max_val:item() == -math.huge then
    return torch.tensor({ 1.0 }), torch.tensor({ 0 }, { dtype = torch.int64 })
  end
  local mn, mx = self:_non_linear_param_search()
  return self:_calculate_qparams(mn, mx)
end
function Histogram:extra_repr() return ('min_val=%s, max_val=%s'):format(fmt(self.min_val), fmt(self.max_val)) end

------------------------------------------------------------------------------ placeholders
local Placeholder = class.class('torch.ao.quantization.PlaceholderObserver', ObserverBase)
M.PlaceholderObserver = Placeholder
function Placeholder:__init(o)
  o = o or {}
  ObserverBase.__init(self, o)
  self.dtype = o.dtype or torch.float32
  self.compute_dtype = o.compute_dtype
  self.custom_op = o.custom_op_name or ''
end
Placeholder.with_args = with_args(Placeholder)
function Placeholder:forward(x) return x end
function Placeholder:calculate_qparams() fail('PlaceholderObserver', "calculate_qparams should not be called for PlaceholderObserver") end

local Noop = class.class('torch.ao.quantization.NoopObserver', ObserverBase)
M.NoopObserver = Noop
function Noop:__init(o)
  o = o or {}
  ObserverBase.__init(self, o)
  self.dtype = o.dtype or torch.float16
end
Noop.with_args = with_args(Noop)
function Noop:forward(x) return x end
function Noop:calculate_qparams() fail('NoopObserver', 'calculate_qparams should not be called for NoopObserver') end

-- the default observers of PyTorch 1.13
M.default_observer = MinMax.with_args({ quant_min = 0, quant_max = 127 })
M.default_placeholder_observer = with_args(Placeholder)({})
M.default_weight_observer = MinMax.with_args({ dtype = torch.qint8, qscheme = qt.per_tensor_symmetric })
M.weight_observer_range_neg_127_to_127 = MinMax.with_args({ dtype = torch.qint8, qscheme = qt.per_tensor_symmetric,
  quant_min = -127, quant_max = 127, eps = 2 ^ -12 })
M.default_histogram_observer = Histogram.with_args({ quant_min = 0, quant_max = 127 })
M.default_per_channel_weight_observer = PerChannel.with_args({ dtype = torch.qint8, qscheme = qt.per_channel_symmetric })
M.per_channel_weight_observer_range_neg_127_to_127 = PerChannel.with_args({ dtype = torch.qint8,
  qscheme = qt.per_channel_symmetric, quant_min = -127, quant_max = 127, eps = 2 ^ -12 })
M.default_dynamic_quant_observer = Placeholder.with_args({ dtype = torch.quint8, compute_dtype = torch.quint8 })
M.default_float_qparams_observer = PerChannel.with_args({ dtype = torch.quint8,
  qscheme = qt.per_channel_affine_float_qparams, ch_axis = 1 })

return M
