-- Quantization (issue 25): quantized tensors, observers, fake quantization, dynamic / static / QAT models,
-- fusion, save and load, printing. PyTorch 1.13's values are in spec/support/quant_wants.lua, recorded by
-- spec/support/quant_record.py from the same inputs (grid(): sin of a lattice). Integer representations,
-- qparams and observer ranges are compared exactly (or to float32's rounding); model outputs within
-- PyTorch's own quantization error (twice its distance from the float model).
local H = require 'spec.support.helper'
local torch = H.torch
local nn = torch.nn
local F = nn.functional
local Q = torch.quantization
local W = require 'spec.support.quant_wants'

local function grid(shape, k, scale)
  scale = scale or 1.0
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local v = {}
  for i = 0, n - 1 do v[i + 1] = math.sin(i * 0.7 + k * 1.3) * scale * (1 + i % 3) end
  return torch.tensor(v, { dtype = torch.float64 }):float():reshape(shape)
end
local function T(v, dt) return torch.tensor(v, dt and { dtype = dt } or nil) end
local function exact(got, want, what) assert.are.same(want, got:tolist(), what) end
local function near(got, want, rel, what)
  H.near(got:double(), T(want, torch.float64), 1e-7, rel or 1e-6, what)
end
-- within PyTorch's quantization error: |ours - PyTorch| <= 2 * max|PyTorch - float| (+ a little)
local function within_qerror(got, want, float, what)
  local w, f = T(want), T(float)
  local err = (w - f):abs():max():item()
  local d = (got:float() - w):abs():max():item()
  assert(d <= 2 * err + 1e-5, ('%s: differs from PyTorch 1.13 by %g, PyTorch from the float model by %g'):format(what, d, err))
end

describe('quantized tensors', function()
  local x = T({ 0.1, -0.25, 1.0, 2.55, 0.05, 0.15, -1e-9, 30.0, -30.0, 0.35, 0.45, -0.45 })

  it('quantize_per_tensor: integer representations and dequantized values of quint8, qint8, qint32', function()
    for _, dt in ipairs({ 'quint8', 'qint8', 'qint32' }) do
      local q = torch.quantize_per_tensor(x, 0.1, dt == 'quint8' and 10 or -3, torch[dt])
      exact(q:int_repr(), W['qpt_' .. dt], dt)
      exact(q:dequantize(), W['qpt_' .. dt .. '_deq'], dt)
      assert.are.equal(torch[dt], q.dtype)
      assert.is_true(q.is_quantized)
      assert.are.equal(0.1, q:q_scale())
      assert.are.equal(torch.per_tensor_affine, q:qscheme())
    end
    assert.are.equal(torch.uint8, torch.quantize_per_tensor(x, 0.1, 10, torch.quint8):int_repr().dtype)
    assert.are.equal(torch.int32, torch.quantize_per_tensor(x, 0.1, 0, torch.qint32):int_repr().dtype)
    -- a scale and zero point given as tensors
    local q = torch.quantize_per_tensor(x, T({ 0.1 }), T({ 10 }, torch.int64), torch.quint8)
    exact(q:int_repr(), W.qpt_quint8)
  end)

  it('quantize_per_channel along either axis (axis counts from 1)', function()
    local m = grid({ 3, 4 }, 1)
    local q = torch.quantize_per_channel(m, T({ 0.1, 0.05, 0.2 }, torch.float64), T({ 0, 3, -2 }, torch.int64), 1,
      torch.qint8)
    exact(q:int_repr(), W.qpc0)
    exact(q:dequantize(), W.qpc0_deq)
    assert.are.same({ 0.1, 0.05, 0.2 }, q:q_per_channel_scales():tolist())
    assert.are.equal(torch.float64, q:q_per_channel_scales().dtype)
    assert.are.same({ 0, 3, -2 }, q:q_per_channel_zero_points():tolist())
    assert.are.equal(1, q:q_per_channel_axis())
    assert.are.equal(torch.per_channel_affine, q:qscheme())
    local q1 = torch.quantize_per_channel(m, T({ 0.1, 0.05, 0.2, 0.3 }, torch.float64), T({ 10, 3, 0, 200 }, torch.int64),
      2, torch.quint8)
    exact(q1:int_repr(), W.qpc1)
    exact(q1:dequantize(), W.qpc1_deq)
    H.errors_with(function() q:q_scale() end, 'kPerTensorAffine')
    H.errors_with(function() torch.quantize_per_channel(m, T({ 0.1 }, torch.float64), T({ 0 }, torch.int64), 1, torch.qint8) end,
      'expected 3 scales')
  end)

  it('prints as PyTorch prints it', function()
    assert.are.equal(W.qpt_str, tostring(torch.quantize_per_tensor(x:narrow(1, 1, 5), 0.1, 10, torch.quint8)))
  end)

  it('views, indexing, clone, _make_per_tensor_quantized_tensor, and errors', function()
    local q = torch.quantize_per_tensor(grid({ 2, 6 }, 3), 0.05, 128, torch.quint8)
    assert.are.same({ 3, 4 }, q:view(3, 4):size())
    assert.are.same(q:int_repr():reshape(-1):tolist(), q:flatten():int_repr():tolist())
    assert.are.same(q:int_repr()[2]:tolist(), q[2]:int_repr():tolist())
    local c = q:clone()
    assert.are.same(q:int_repr():tolist(), c:int_repr():tolist())
    local m = torch._make_per_tensor_quantized_tensor(T({ 1, 2, 250 }, torch.uint8), 0.5, 2)
    assert.are.same({ -0.5, 0, 124 }, m:dequantize():tolist())
    H.errors_with(function() torch.quantize_per_tensor(x, 0.1, 0, torch.float32) end, 'expected a quantized dtype')
    H.errors_with(function() torch.quantize_per_tensor(x, -1, 0, torch.quint8) end, 'scales must be positive')
    H.errors_with(function() torch.zeros(2, { dtype = torch.qint8 }) end, 'dtype')
    assert.is_true(torch.qint8.is_quantized)
    assert.is_false(torch.int8.is_quantized)
  end)

  it('save and load keep a quantized tensor', function()
    local q = torch.quantize_per_channel(grid({ 3, 4 }, 1), T({ 0.1, 0.05, 0.2 }, torch.float64), T({ 0, 3, -2 }, torch.int64),
      1, torch.qint8)
    local path = os.tmpname()
    torch.save({ q = q, d = torch.qint8 }, path)
    local r = torch.load(path)
    os.remove(path)
    assert.are.same(q:int_repr():tolist(), r.q:int_repr():tolist())
    assert.are.equal(torch.qint8, r.q.dtype)
    assert.are.equal(torch.qint8, r.d)
    assert.are.equal(torch.per_channel_affine, r.q:qscheme())
  end)
end)

describe('observers', function()
  local batches = { grid({ 4, 6 }, 0), grid({ 4, 6 }, 1, 2.0), grid({ 4, 6 }, 2, 0.5) + 0.3 }
  local O = Q
  local makers = {
    minmax = function() return O.MinMaxObserver() end,
    minmax_sym_qint8 = function() return O.MinMaxObserver({ dtype = torch.qint8, qscheme = torch.per_tensor_symmetric }) end,
    minmax_reduce = function() return O.MinMaxObserver({ reduce_range = true }) end,
    minmax_sym_quint8 = function() return O.MinMaxObserver({ qscheme = torch.per_tensor_symmetric }) end,
    minmax_custom = function() return O.MinMaxObserver({ quant_min = 0, quant_max = 15 }) end,
    moving = function() return O.MovingAverageMinMaxObserver() end,
    moving_c = function() return O.MovingAverageMinMaxObserver({ averaging_constant = 0.5, dtype = torch.qint8 }) end,
    perchannel = function() return O.PerChannelMinMaxObserver() end,
    perchannel_sym_axis1 = function()
      return O.PerChannelMinMaxObserver({ ch_axis = 2, dtype = torch.qint8, qscheme = torch.per_channel_symmetric })
    end,
    moving_perchannel = function() return O.MovingAveragePerChannelMinMaxObserver() end,
    histogram = function() return O.HistogramObserver() end,
    histogram_reduce = function() return O.HistogramObserver({ reduce_range = true }) end,
    histogram_sym = function() return O.HistogramObserver({ dtype = torch.qint8, qscheme = torch.per_tensor_symmetric }) end,
  }

  it('see the ranges and compute the scales and zero points PyTorch 1.13 computes', function()
    local n = 0
    for name, want in pairs(W.observers) do
      local o = makers[name]()
      for _, b in ipairs(batches) do assert.are.equal(b, o(b)) end
      local s, z = o:calculate_qparams()
      near(o.min_val, want.min, 1e-6, name .. ' min')
      near(o.max_val, want.max, 1e-6, name .. ' max')
      near(s, want.scale, 1e-6, name .. ' scale')
      exact(z:to(torch.int64), want.zp, name .. ' zero point')
      n = n + 1
    end
    assert.is_true(n >= 13)
  end)

  it('HistogramObserver: the histogram combined across batches of other ranges', function()
    local o = Q.HistogramObserver({ bins = 64 })
    o(grid({ 50 }, 3, 1.5))
    o(grid({ 40 }, 4, 3.0))
    local w = W.histogram_small
    near(o.min_val, w.min)
    near(o.max_val, w.max)
    near(o.histogram, w.hist, 1e-5, 'histogram')
    local s, z = o:calculate_qparams()
    near(s, w.scale, 1e-6, 'scale')
    exact(z:to(torch.int64), w.zp)
  end)

  it('print, state_dict, errors, defaults', function()
    local o = Q.MinMaxObserver()
    assert.are.equal('MinMaxObserver(min_val=inf, max_val=-inf)', tostring(o))
    o(T({ -1, 2 }))
    assert.are.equal('MinMaxObserver(min_val=-1.0, max_val=2.0)', tostring(o))
    assert.are.same({ 'eps', 'min_val', 'max_val' }, o:state_dict():keys())
    H.errors_with(function() Q.MinMaxObserver({ qscheme = torch.per_channel_affine }) end, 'qscheme only support')
    H.errors_with(function() Q.MinMaxObserver({ quant_min = 1, quant_max = 5 }) end, 'must include 0')
    local w = Q.default_weight_observer()
    assert.are.equal(torch.qint8, w.dtype)
    assert.are.equal(-128, w.quant_min)
    local a = Q.default_observer()
    assert.are.same({ 0, 127 }, { a.quant_min, a.quant_max })
    -- an observer that saw nothing gives PyTorch's defaults
    local s, z = Q.MinMaxObserver():calculate_qparams()
    assert.are.same({ { 1 }, { 0 } }, { s:tolist(), z:tolist() })
  end)
end)

describe('fake quantization', function()
  it('fake_quantize_per_tensor_affine: values and the straight-through gradient', function()
    local x = grid({ 10 }, 5, 2.0):requires_grad_()
    local y = torch.fake_quantize_per_tensor_affine(x, 0.05, 10, 0, 63)
    near(y, W.fq, 1e-7, 'values')
    y:backward(torch.arange(1, 11):float())
    exact(x.grad, W.fq_grad, 'gradient')
  end)
  it('fake_quantize_per_channel_affine', function()
    local x = grid({ 2, 5 }, 6, 2.0):requires_grad_()
    local y = torch.fake_quantize_per_channel_affine(x, T({ 0.05, 0.1 }), T({ 0, 5 }, torch.int32), 1, -8, 7)
    near(y, W.fqc, 1e-7)
    y:backward(torch.ones(2, 5))
    exact(x.grad, W.fqc_grad)
  end)
  it('FakeQuantize module: observer then fake quant, switches', function()
    local fq = Q.FakeQuantize()
    local x = grid({ 4, 6 }, 1)
    local y = fq(x)
    local s, z = fq:calculate_qparams()
    H.near(y, torch.fake_quantize_per_tensor_affine(x, s:item(), z:item(), 0, 255), 0, 0)
    fq:disable_fake_quant()
    assert.are.equal(x, fq(x))
    fq:disable_observer()
    fq:enable_fake_quant()
    local before = fq.scale:item()
    fq(x * 100)
    assert.are.equal(before, fq.scale:item())
  end)
end)

local function mlp()
  local m = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))
  torch.no_grad(function()
    m[1].weight:copy_(grid({ 16, 12 }, 7, 0.3)); m[1].bias:copy_(grid({ 16 }, 8, 0.1))
    m[3].weight:copy_(grid({ 5, 16 }, 9, 0.25)); m[3].bias:copy_(grid({ 5 }, 10, 0.1))
  end)
  return m:eval()
end

describe('dynamic quantization', function()
  local xin = grid({ 6, 12 }, 11, 1.5)
  it('quantize_dynamic of Linear layers: int8 weights as PyTorch\'s, outputs within its quantization error', function()
    local fm = mlp()
    local dq = Q.quantize_dynamic(mlp(), { nn.Linear }, torch.qint8)
    assert.are.equal(W.dyn_repr, tostring(dq))
    exact(dq[1]:weight():int_repr(), W.dyn_w_int)
    assert.are.equal(torch.tensor(W.dyn_w_scale):item(), torch.tensor(dq[1]:weight():q_scale()):item())
    local out = torch.no_grad(function() return dq(xin) end)
    H.near(T(W.dyn_float), fm(xin):detach(), 1e-5, 1e-5)
    within_qerror(out, W.dyn_out, W.dyn_float, 'dynamic per tensor')
    local dqc = Q.quantize_dynamic(mlp(), { [nn.Linear] = Q.per_channel_dynamic_qconfig }, torch.qint8)
    near(dqc[1]:weight():q_per_channel_scales(), W.dyn_pc_scales)
    within_qerror(dqc(xin), W.dyn_pc_out, W.dyn_float, 'dynamic per channel')
    -- the original model is left alone (inplace = false), the copy's float layers are gone
    assert.is_true(torch.isinstance(mlp()[1], nn.Linear))
  end)

  it('the int8 product: every path equals the others and the exact integer result', function()
    -- the C product against an integer reference, through the public front door
    local xq = torch.randint(0, 256, { 7, 37 }):to(torch.uint8)
    local w = torch.randint(-128, 128, { 35, 37 }):to(torch.int8)
    local qx = torch._make_per_tensor_quantized_tensor(xq, 0.5, 3)
    local qw = torch._make_per_tensor_quantized_tensor(w, 0.25, 0)
    local y = require('moontorch.quantization.functional').linear(qx, qw, nil, 1000.0, 0, false)
    local ref = ((xq:double() - 3) * 0.5):matmul((w:double() * 0.25):t())
    local want = torch.round(ref / 1000):clamp(0, 255)
    assert.are.same(want:tolist(), y:int_repr():double():tolist())
  end)

  it('quantize_dynamic of an LSTM: outputs close to the float LSTM', function()
    torch.manual_seed(3)
    local lstm = nn.LSTM(6, 8, { num_layers = 2 })
    local m = nn.Sequential(lstm)
    local x = torch.randn(5, 3, 6)
    local fo = lstm(x)
    local q = Q.quantize_dynamic(m, { nn.LSTM, nn.Linear }, torch.qint8)
    assert.are.equal('DynamicQuantizedLSTM', q[1]:_get_name())
    local qo, hc = q[1](x)
    assert.are.same({ 5, 3, 8 }, qo:size())
    assert.is_true((qo - fo):abs():max():item() < 0.05)
    assert.are.same({ 2, 3, 8 }, hc[1]:size())
  end)
end)

-- the spec's conv net, as the recorder's
local Net, Parent = torch.class('QuantSpecNet', 'nn.Module')
function Net:__init()
  Parent.__init(self)
  self.quant = Q.QuantStub()
  self.conv = nn.Conv2d(1, 3, 3)
  self.relu = nn.ReLU()
  self.pool = nn.MaxPool2d(2)
  self.fc = nn.Linear(27, 4)
  self.relu2 = nn.ReLU()
  self.fc2 = nn.Linear(4, 3)
  self.dequant = Q.DeQuantStub()
  torch.no_grad(function()
    self.conv.weight:copy_(grid({ 3, 1, 3, 3 }, 12, 0.4)); self.conv.bias:copy_(grid({ 3 }, 13, 0.1))
    self.fc.weight:copy_(grid({ 4, 27 }, 14, 0.3)); self.fc.bias:copy_(grid({ 4 }, 15, 0.1))
    self.fc2.weight:copy_(grid({ 3, 4 }, 16, 0.5)); self.fc2.bias:copy_(grid({ 3 }, 17, 0.1))
  end)
end
function Net:forward(x)
  x = self.pool(self.relu(self.conv(self.quant(x))))
  x = self.relu2(self.fc(x:flatten(2)))
  return self.dequant(self.fc2(x))
end

describe('static quantization', function()
  local calib = { grid({ 2, 1, 8, 8 }, 20, 1.0), grid({ 2, 1, 8, 8 }, 21, 1.0), grid({ 2, 1, 8, 8 }, 22, 1.0) }
  local xs = grid({ 3, 1, 8, 8 }, 30, 1.0)
  local configs = { fbgemm = Q.get_default_qconfig('fbgemm'), qnnpack = Q.get_default_qconfig('qnnpack'),
    default = Q.default_qconfig }
  for name, qc in pairs(configs) do
    it(name .. ': fuse, prepare, calibrate, convert: qparams and weights as PyTorch\'s, outputs within its error', function()
      local want = W['static_' .. name]
      local net = Net():eval()
      net.qconfig = qc
      local f = Q.fuse_modules(net, { { 'conv', 'relu' }, { 'fc', 'relu2' } })
      local p = Q.prepare(f)
      for _, c in ipairs(calib) do p(c) end
      local q = Q.convert(p)
      near(torch.tensor(q.quant.scale:item()), want.quant_scale, 1e-6, 'input scale')
      assert.are.equal(want.quant_zp, q.quant.zero_point:item())
      for _, l in ipairs({ 'conv', 'fc', 'fc2' }) do
        near(torch.tensor(q[l].scale), want[l .. '_scale'], 1e-6, l .. ' scale')
        assert.are.equal(want[l .. '_zp'], q[l].zero_point, l .. ' zero point')
      end
      exact(q.conv:weight():int_repr(), want.conv_w_int)
      local out = q(xs)
      assert.are.equal(torch.float32, out.dtype)
      within_qerror(out, want.out, want.float, name)
      -- the quantized layers print as PyTorch's
      local text = tostring(q)
      for _, line in ipairs({ 'conv', 'fc', 'fc2', 'quant' }) do
        local wl = want['repr']:match('%(' .. line .. '%): ([^\n]*)')
        local gl = text:match('%(' .. line .. '%): ([^\n]*)')
        assert.are.equal(wl, gl, line)
      end
    end)
  end

  it('the quantized model saves and loads, whole and as a state_dict', function()
    local net = Net():eval()
    net.qconfig = Q.get_default_qconfig('fbgemm')
    local p = Q.prepare(Q.fuse_modules(net, { { 'conv', 'relu' }, { 'fc', 'relu2' } }))
    for _, c in ipairs(calib) do p(c) end
    local q = Q.convert(p)
    local path = os.tmpname()
    torch.save(q, path)
    local back = torch.load(path)
    assert.is_true(torch.equal(back(xs), q(xs)))
    local sd = q:state_dict()
    assert.truthy(sd['fc._packed_params._packed_params'])
    assert.truthy(sd['conv.weight'].is_quantized)
    assert.truthy(sd['fc.scale'])
    torch.save(sd, path)
    local other = Net():eval()
    other.qconfig = Q.get_default_qconfig('fbgemm')
    local p2 = Q.prepare(Q.fuse_modules(other, { { 'conv', 'relu' }, { 'fc', 'relu2' } }))
    p2(calib[1] * 5)
    local q2 = Q.convert(p2)
    assert.is_false(torch.equal(q2(xs), q(xs)))
    assert.are.equal('<All keys matched successfully>', tostring(q2:load_state_dict(torch.load(path))))
    os.remove(path)
    assert.is_true(torch.equal(q2(xs), q(xs)))
  end)

  it('fuse_modules: conv-bn-relu folds the batch norm (eval), linear-relu, errors', function()
    torch.manual_seed(4)
    local m = nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    m[2].running_mean:copy_(torch.randn(4))
    m[2].running_var:copy_(torch.rand(4) + 0.5)
    m:eval()
    local x = torch.randn(2, 2, 6, 6)
    local f = Q.fuse_modules(m, { '0', '1', '2' })
    assert.are.equal('ConvReLU2d', f[1]:_get_name())
    assert.are.equal('Identity', f[2]:_get_name())
    H.near(f(x):detach(), m(x):detach(), 1e-5, 1e-5)
    H.errors_with(function() Q.fuse_modules(nn.Sequential(nn.ReLU(), nn.Linear(2, 2)), { '0', '1' }) end,
      'Cannot fuse modules')
    local mt = nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4))
    H.errors_with(function() Q.fuse_modules(mt, { '0', '1' }) end, 'Fusion only for eval!')
  end)

  it('FloatFunctional becomes QFunctional: quantized add', function()
    local AddNet, P = torch.class('QuantSpecAddNet', 'nn.Module')
    function AddNet:__init()
      P.__init(self)
      self.q1, self.q2 = Q.QuantStub(), Q.QuantStub()
      self.add = nn.quantized.FloatFunctional()
      self.dq = Q.DeQuantStub()
    end
    function AddNet:forward(a, b) return self.dq(self.add:add(self.q1(a), self.q2(b))) end
    local n = AddNet():eval()
    n.qconfig = Q.default_qconfig
    local p = Q.prepare(n)
    local a, b = grid({ 10 }, 1), grid({ 10 }, 2)
    p(a, b)
    local q = Q.convert(p)
    assert.are.equal('QFunctional', q.add:_get_name())
    local s = q.add.scale
    assert.is_true((q(a, b) - (a + b)):abs():max():item() <= s * 2)
  end)
end)

  it('quantized max_pool2d: the max of the integers, the quantizer kept (2 x 2 fast path, other windows, indices)', function()
    -- the max of values quantized with one scale is the quantized max: compared with the float pool of the
    -- integers (exact), for quint8 (the 2 x 2 path: rows of 8 and 16 outputs and a tail), qint8 and qint32
    torch.manual_seed(3)
    for _, c in ipairs({
      { { 3, 4, 24, 38 }, { 2 } }, { { 2, 5, 9, 9 }, { 2 } }, { { 1, 2, 11, 13 }, { 3, 2, 1 } },
      { { 2, 3, 10, 12 }, { { 2, 3 }, { 1, 2 }, 0, 2 } }, { { 4, 7, 7 }, { 2, { ceil_mode = true } } },
    }) do
      for _, dt in ipairs({ torch.quint8, torch.qint8, torch.qint32 }) do
        local x = torch.randn(c[1]) * 3
        local q = torch.quantize_per_tensor(x, 0.05, dt == torch.qint32 and 7 or 0, dt)
        local got = F.max_pool2d(q, unpack(c[2]))
        assert.are.equal(dt, got.dtype)
        assert.are.equal(q:q_scale(), got:q_scale())
        assert.are.equal(q:q_zero_point(), got:q_zero_point())
        local want = F.max_pool2d(q:int_repr():float(), unpack(c[2]))
        assert.is_true(torch.equal(got:int_repr():float(), want), dt.name .. ' ' .. table.concat(c[1], 'x'))
        assert.is_true(torch.equal(nn.MaxPool2d(unpack(c[2]))(q):int_repr(), got:int_repr()))
      end
    end
    -- with indices: the values pooled widened, the indices as the float pool's
    local q = torch.quantize_per_tensor(torch.randn(2, 3, 8, 8), 0.1, 128, torch.quint8)
    local v, i = F.max_pool2d(q, 2, { return_indices = true })
    local fv, fi = F.max_pool2d(q:int_repr():float(), 2, { return_indices = true })
    assert.is_true(torch.equal(v:int_repr():float(), fv) and torch.equal(i, fi))
    -- the C door refuses other dtypes and wrong shapes, naming itself
    local ok, err = pcall(function()
      return require('moontorch.nn.pooling').quantized_max_pool2d(torch.randn(1, 2, 4, 4), 2)
    end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('quantized max_pool2d: expected a quantized tensor\'s integers (uint8, int8 or int32), got float32', 1, true), err)
    ok, err = pcall(function() return F.max_pool2d(torch.quantize_per_tensor(torch.randn(4, 4), 0.1, 0, torch.quint8), 2) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('quantized max_pool2d', 1, true), err)
  end)

describe('quantization-aware training', function()
  it('prepare_qat, three steps of SGD through fake quantization, convert: PyTorch 1.13\'s losses and weights', function()
    local calib = { grid({ 2, 1, 8, 8 }, 20, 1.0), grid({ 2, 1, 8, 8 }, 21, 1.0), grid({ 2, 1, 8, 8 }, 22, 1.0) }
    local xs = grid({ 3, 1, 8, 8 }, 30, 1.0)
    local net = Net():train()
    net.qconfig = Q.get_default_qat_qconfig('fbgemm', 0)
    local f = Q.fuse_modules_qat(net, { { 'conv', 'relu' }, { 'fc', 'relu2' } })
    local p = Q.prepare_qat(f)
    assert.are.equal('nn.intrinsic.qat.ConvReLU2d', torch.typename(p.conv))
    local opt = torch.optim.SGD(p:parameters(), { lr = 0.1 })
    local target = T({ 1, 3, 2 }, torch.int64)
    local losses = {}
    for i = 0, 2 do
      local inp = calib[i % 3 + 1]:narrow(1, 1, 1):expand(3, 1, 8, 8) + 0.1 * i
      local loss = F.cross_entropy(p(inp), target)
      opt:zero_grad()
      loss:backward()
      opt:step()
      losses[#losses + 1] = loss:item()
    end
    H.near(T(losses), T(W.qat.losses), 1e-5, 1e-4)
    H.near(p.conv.weight:detach(), T(W.qat.conv_w), 1e-5, 1e-4)
    H.near(p.fc2.weight:detach(), T(W.qat.fc2_w), 1e-5, 1e-4)
    p:eval()
    local prepared = p(xs):detach()
    H.near(prepared, T(W.qat.prepared_out), 1e-4, 1e-3)
    local q = Q.convert(p)
    within_qerror(q(xs), W.qat.out, W.qat.prepared_out, 'converted QAT model')
  end)
end)
