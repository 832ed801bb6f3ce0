-- bfloat16 and float16 compute on the CPU (issue 25): the products (core/tensor/bf16.c: float32
-- accumulation, vdpbf16ps where the CPU has AVX512-BF16; float16 through float32) and the
-- elementwise and reduction ops, which compute in float32 and store the low precision, as PyTorch
-- does. Values from PyTorch 1.13 (/usr/bin/python3 spec/support/lowp_record.py: the same inputs,
-- sin of a lattice, see grid()); a product may differ from PyTorch's by the rounding of another
-- summation order, so results are compared within one unit in the last place of the dtype.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = torch.nn
local F = nn.functional

local function grid(r, c, k, dtype)
  local t = {}
  for i = 0, r - 1 do
    local row = {}
    for j = 0, c - 1 do row[j + 1] = math.sin(i * 0.7 + j * 1.3 + k) * (1 + (i + j) % 3) end
    t[i + 1] = row
  end
  return torch.tensor(t, { dtype = torch.float64 }):to(dtype)
end

-- recorded by spec/support/lowp_record.py
local W = {
  bf16_add = {{-0.6171875, -3.5, -0.95703125, 1.578125, 2.328125, -2.859375}, {-3.0625, -3.71875, 0.8671875, 3.40625, 0.125, -1.6796875}, {-5.1875, -0.146484375, 3.28125, 3.078125, -1.09375, -3.21875}, {-1.109375, 2.03125, 4.96875, -0.130859375, -3.4375, -2.375}},
  bf16_addmm = {{13.125, 12.5, -1.25}, {7.9375, 19.625, 9.875}, {-13.8125, 16.75, 15.0}, {-29.5, -6.34375, 15.75}, {-17.5, -20.875, -6.53125}},
  bf16_addmm_f32 = {{13.125, 12.5625, -1.21875}, {7.9375, 19.625, 9.875}, {-13.8125, 16.75, 15.0625}, {-29.5, -6.28125, 15.75}, {-17.375, -20.875, -6.53125}},
  bf16_div = {{0.08056640625, -0.69140625, -0.9765625, 0.2890625, 1.3046875, -0.06201171875}, {-0.353515625, -1.5625, 0.00909423828125, 0.78515625, 0.6328125, -0.3515625}, {-0.86328125, -0.392578125, 0.44140625, 1.96875, -0.0908203125, -0.890625}, {-0.78515625, 0.08349609375, 0.98828125, 0.265625, -0.53125, -2.234375}},
  bf16_exp = {{1.1484375, 0.1591796875, 0.1513671875, 1.78125, 6.5625, 0.796875}, {0.345703125, 0.056396484375, 1.015625, 6.9375, 4.46875, 0.49609375}, {0.057373046875, 0.578125, 3.71875, 14.9375, 0.83984375, 0.13671875}, {0.396484375, 1.265625, 19.5, 1.5078125, 0.21484375, 0.08447265625}},
  bf16_layer_norm = {{0.27734375, -1.2109375, -1.2578125, 0.60546875, 1.59375, 0.000827789306640625}, {-0.53125, -1.6484375, 0.1337890625, 1.3203125, 1.046875, -0.30859375}, {-1.390625, -0.158203125, 0.83984375, 1.5859375, 0.043212890625, -0.9296875}, {-0.408203125, 0.263671875, 1.84375, 0.365234375, -0.76171875, -1.296875}},
  bf16_log_softmax = {{-2.21875, -4.1875, -4.25, -1.78125, -0.48046875, -2.59375}, {-3.65625, -5.46875, -2.578125, -0.65234375, -1.09375, -3.28125}, {-5.875, -3.5625, -1.6953125, -0.306640625, -3.1875, -5.0}, {-4.0625, -2.90625, -0.1650390625, -2.71875, -4.6875, -5.59375}},
  bf16_mean = -0.2255859375,
  bf16_mm = {{6.375, 6.34375, 0.140625}, {3.78125, 10.375, 5.15625}, {-6.71875, 8.625, 7.6875}, {-14.625, -2.796875, 7.5625}, {-8.25, -10.3125, -3.5}},
  bf16_mm_f32 = {{6.34375, 6.34375, 0.13671875}, {3.75, 10.375, 5.15625}, {-6.6875, 8.625, 7.65625}, {-14.5625, -2.765625, 7.5625}, {-8.25, -10.25, -3.5}},
  bf16_mm_grad_a = {{1.0, 1.4921875, -0.4140625, -3.515625, -3.890625, -1.9375, 2.546875}, {1.0, 1.4921875, -0.4140625, -3.515625, -3.890625, -1.9375, 2.546875}, {1.0, 1.4921875, -0.4140625, -3.515625, -3.890625, -1.9375, 2.546875}, {1.0, 1.4921875, -0.4140625, -3.515625, -3.890625, -1.9375, 2.546875}, {1.0, 1.4921875, -0.4140625, -3.515625, -3.890625, -1.9375, 2.546875}},
  bf16_mm_grad_a_f32 = {{1.0, 1.4921875, -0.4140625, -3.515625, -3.890625, -1.9375, 2.546875}, {1.0, 1.4921875, -0.4140625, -3.515625, -3.890625, -1.9375, 2.546875}, {1.0, 1.4921875, -0.4140625, -3.515625, -3.890625, -1.9375, 2.546875}, {1.0, 1.4921875, -0.4140625, -3.515625, -3.890625, -1.9375, 2.546875}, {1.0, 1.4921875, -0.4140625, -3.515625, -3.890625, -1.9375, 2.546875}},
  bf16_mm_grad_b = {{5.8125, 5.8125, 5.8125}, {2.140625, 2.140625, 2.140625}, {-3.90625, -3.90625, -3.90625}, {-4.65625, -4.65625, -4.65625}, {2.09375, 2.09375, 2.09375}, {5.75, 5.75, 5.75}, {0.96875, 0.96875, 0.96875}},
  bf16_mm_grad_b_f32 = {{5.78125, 5.78125, 5.78125}, {2.125, 2.125, 2.125}, {-3.90625, -3.90625, -3.90625}, {-4.65625, -4.65625, -4.65625}, {2.09375, 2.09375, 2.09375}, {5.75, 5.75, 5.75}, {0.9609375, 0.9609375, 0.9609375}},
  bf16_mul = {{-0.107421875, 3.0625, -1.765625, 0.578125, 0.83984375, 0.59375}, {2.125, 2.421875, 0.01434326171875, 2.84375, -2.0625, 0.6875}, {6.625, -0.22265625, 2.59375, 1.0078125, 0.1611328125, 2.453125}, {0.1689453125, 0.419921875, 5.90625, -0.2236328125, 2.9375, -0.25}},
  bf16_relu = {{0.1416015625, 0.0, 0.0, 0.578125, 1.8828125, 0.0}, {0.0, 0.0, 0.016845703125, 1.9375, 1.5, 0.0}, {0.0, 0.0, 1.3125, 2.703125, 0.0, 0.0}, {0.0, 0.2333984375, 2.96875, 0.412109375, 0.0, 0.0}},
  bf16_sigmoid = {{0.53515625, 0.1376953125, 0.130859375, 0.640625, 0.8671875, 0.443359375}, {0.255859375, 0.053466796875, 0.50390625, 0.875, 0.81640625, 0.33203125}, {0.05419921875, 0.365234375, 0.7890625, 0.9375, 0.45703125, 0.1201171875}, {0.283203125, 0.55859375, 0.94921875, 0.6015625, 0.1767578125, 0.078125}},
  bf16_softmax = {{0.1083984375, 0.0150146484375, 0.01422119140625, 0.16796875, 0.6171875, 0.0751953125}, {0.02587890625, 0.004241943359375, 0.076171875, 0.51953125, 0.3359375, 0.037353515625}, {0.0028228759765625, 0.0284423828125, 0.18359375, 0.73828125, 0.04150390625, 0.006744384765625}, {0.017333984375, 0.05517578125, 0.84765625, 0.06591796875, 0.00933837890625, 0.003692626953125}},
  bf16_sum = {-1.3515625, -1.1796875, -1.5625, -1.3203125},
  bf16_tanh = {{0.140625, -0.94921875, -0.95703125, 0.51953125, 0.953125, -0.2216796875}, {-0.78515625, -0.9921875, 0.016845703125, 0.9609375, 0.90625, -0.60546875}, {-0.9921875, -0.5, 0.86328125, 0.9921875, -0.1728515625, -0.96484375}, {-0.73046875, 0.2294921875, 0.99609375, 0.390625, -0.91015625, -0.984375}},
  f16_add = {{-0.61572265625, -3.49609375, -0.958984375, 1.578125, 2.328125, -2.86328125}, {-3.05859375, -3.71484375, 0.8671875, 3.404296875, 0.1298828125, -1.6787109375}, {-5.171875, -0.14599609375, 3.29296875, 3.080078125, -1.09765625, -3.2265625}, {-1.107421875, 2.03125, 4.953125, -0.1318359375, -3.443359375, -2.3671875}},
  f16_div = {{0.080322265625, -0.6875, -0.97900390625, 0.28955078125, 1.3017578125, -0.06195068359375}, {-0.353271484375, -1.5654296875, 0.00908660888671875, 0.7841796875, 0.63330078125, -0.353759765625}, {-0.8603515625, -0.39208984375, 0.44140625, 1.9716796875, -0.09063720703125, -0.890625}, {-0.78369140625, 0.0833740234375, 0.9921875, 0.266845703125, -0.52783203125, -2.2421875}},
  f16_mean = -0.2249755859375,
  f16_mm = {{6.31640625, 6.33984375, 0.1319580078125}, {3.73046875, 10.375, 5.1875}, {-6.66796875, 8.640625, 7.6640625}, {-14.515625, -2.75390625, 7.578125}, {-8.203125, -10.265625, -3.498046875}},
  f16_mul = {{-0.1068115234375, 3.048828125, -1.76953125, 0.578125, 0.8388671875, 0.5947265625}, {2.119140625, 2.412109375, 0.01430511474609375, 2.84375, -2.064453125, 0.68505859375}, {6.62109375, -0.222900390625, 2.6015625, 1.0107421875, 0.160888671875, 2.4609375}, {0.1685791015625, 0.419189453125, 5.8984375, -0.22412109375, 2.9296875, -0.2490234375}},
  f16_sum = {-1.349609375, -1.1806640625, -1.55078125, -1.3193359375},
}

-- |got - want| within `ulps` units in the last place of the dtype (8 bits for bfloat16, 11 float16), of
-- each element, or with `of_max` of the largest |want| (results that cancel: layer_norm)
local function near_ulp(got, want, dtype, ulps, what, of_max)
  local bits = dtype == torch.bfloat16 and 8 or 11
  local g = got:double():reshape(-1):tolist()
  local w = torch.tensor(want, { dtype = torch.float64 }):reshape(-1):tolist()
  assert.are.equal(#w, #g, what)
  local function ulp(a) return a > 0 and 2 ^ (math.floor(math.log(a, 2)) + 1 - bits) or 2 ^ -133 end
  local top = 0
  for i = 1, #w do top = math.max(top, math.abs(w[i])) end
  for i = 1, #w do
    local u = ulp(of_max and top or math.abs(w[i]))
    if math.abs(g[i] - w[i]) > ulps * u + 1e-30 then
      error(('%s: element %d is %.9g, PyTorch 1.13 gives %.9g (%d ulp allowed)'):format(what, i, g[i], w[i], ulps), 2)
    end
  end
end

describe('low precision compute', function()
  local base
  before_each(function()
    require('moontorch.tensor').sweep()
    base = torch._C.mt_get_stats().live_tensors
  end)
  after_each(function()
    require('moontorch.tensor').sweep()
    assert.are.equal(base, torch._C.mt_get_stats().live_tensors)
  end)

  for _, d in ipairs({ { 'bf16', torch.bfloat16 }, { 'f16', torch.float16 } }) do
    local name, dt = d[1], d[2]
    it(name .. ': products keep the dtype and equal PyTorch\'s within one ulp', function()
      local a, b = grid(5, 7, 0, dt), grid(7, 3, 1, dt)
      local r = a:matmul(b)
      assert.are.equal(dt, r.dtype)
      if name == 'bf16' then
        -- PyTorch 1.13's own small bfloat16 product rounds partial sums (within K = 7 ulps of the largest);
        -- the float32 product rounded once is ours to the bit, or one ulp
        near_ulp(r, W.bf16_mm, dt, 7, 'bf16 mm (PyTorch 1.13)', true)
        near_ulp(r, W.bf16_mm_f32, dt, 1, 'bf16 mm (float32 accumulation)')
      else
        near_ulp(r, W.f16_mm, dt, 1, 'f16 mm')
      end
      -- B transposed in memory, out=, and the batched forms give the same values
      local bt = b:t():contiguous():t()
      assert.is_true(torch.equal(r, a:matmul(bt)))
      local o = torch.empty(5, 3, { dtype = dt })
      torch.mm(a, b, { out = o })
      assert.is_true(torch.equal(r, o))
      local ab = torch.stack({ a, a }):bmm(torch.stack({ b, b }))
      assert.is_true(torch.equal(ab[1], r) and torch.equal(ab[2], r))
      if name == 'bf16' then
        local c = torch.addmm(grid(5, 3, 2, dt), a, b, { beta = 0.5, alpha = 2 })
        near_ulp(c, W.bf16_addmm, dt, 14, 'bf16 addmm (PyTorch 1.13)', true)
        near_ulp(c, W.bf16_addmm_f32, dt, 1, 'bf16 addmm (float32 accumulation)')
      end
    end)

    it(name .. ': elementwise ops and reductions compute in float32 and round once', function()
      local x, y = grid(4, 6, 3, dt), grid(4, 6, 4, dt)
      local cases = {
        add = function() return x + y end, mul = function() return x * y end,
        div = function() return x / (y:abs() + 1) end, exp = function() return x:exp() end,
        tanh = function() return x:tanh() end, sigmoid = function() return x:sigmoid() end,
        sum = function() return x:sum(2) end, mean = function() return x:mean() end,
        softmax = function() return F.softmax(x, 2) end, log_softmax = function() return F.log_softmax(x, 2) end,
        relu = function() return F.relu(x) end, layer_norm = function() return F.layer_norm(x, { 6 }) end,
      }
      local n = 0
      for op, f in pairs(cases) do
        local want = W[name .. '_' .. op]
        local got = f()
        assert.are.equal(dt, got.dtype, op)
        if want then
          -- one rounding of a float32 result: equal, or one ulp where float32 libm results differ
          near_ulp(got, want, dt, op == 'layer_norm' and 2 or 1, name .. ' ' .. op, op == 'layer_norm')
          n = n + 1
        end
      end
      assert.is_true(n >= (dt == torch.bfloat16 and 12 or 5))
      -- the float32 value of x + y rounded once: the same as adding in float32 and converting
      assert.is_true(torch.equal(x + y, (x:float() + y:float()):to(dt)))
      assert.is_true(torch.equal(x:exp(), x:float():exp():to(dt)))
    end)
  end

  it('bf16: gradients of a product are bfloat16 and PyTorch\'s', function()
    local a = grid(5, 7, 0, torch.bfloat16):requires_grad_()
    local b = grid(7, 3, 1, torch.bfloat16):requires_grad_()
    a:matmul(b):sum():backward()
    assert.are.equal(torch.bfloat16, a.grad.dtype)
    near_ulp(a.grad, W.bf16_mm_grad_a, torch.bfloat16, 3, 'grad a (PyTorch 1.13)', true)
    near_ulp(b.grad, W.bf16_mm_grad_b, torch.bfloat16, 5, 'grad b (PyTorch 1.13)', true)
    near_ulp(a.grad, W.bf16_mm_grad_a_f32, torch.bfloat16, 1, 'grad a (float32 accumulation)')
    near_ulp(b.grad, W.bf16_mm_grad_b_f32, torch.bfloat16, 1, 'grad b (float32 accumulation)')
  end)

  it('bf16 products: float32 accumulation over long sums, odd K, shapes and strides', function()
    torch.manual_seed(3)
    for _, s in ipairs({ { 1, 1, 1 }, { 3, 1, 5 }, { 1, 300, 1 }, { 9, 301, 40 }, { 70, 33, 65 }, { 8, 2, 32 } }) do
      local M, K, N = s[1], s[2], s[3]
      local a, b = torch.randn(M, K):bfloat16(), torch.randn(K, N):bfloat16()
      local ref = a:double():matmul(b:double())
      local got = a:matmul(b)
      -- one float32 accumulator: error about K * 2^-24 * sum|a||b|, plus the final rounding (2^-9 relative)
      local bound = (a:double():abs():matmul(b:double():abs())) * (K * 2 ^ -23) + ref:abs() * 2 ^ -8
      assert.is_true(((got:double() - ref):abs() - bound):le(1e-30):all(), ('%dx%dx%d'):format(M, K, N))
      -- transposed A (A^T @ B) and B, strided out
      assert.is_true(torch.equal(got, a:t():contiguous():t():matmul(b)))
      assert.is_true(torch.equal(got, a:matmul(b:t():contiguous():t())))
      local o = torch.empty(N, M, { dtype = torch.bfloat16 }):t()
      torch.mm(a, b, { out = o })
      assert.is_true(torch.equal(got, o))
    end
  end)

  it('bf16 products: empty, K = 0, matrix-vector, dot, inf and NaN', function()
    local z = torch.zeros(2, 0):bfloat16():mm(torch.zeros(0, 3):bfloat16())
    assert.are.same({ 2, 3 }, z:size())
    assert.are.equal(0, z:abs():sum():item())
    local c = torch.addmm(torch.ones(2, 3):bfloat16(), torch.zeros(2, 0):bfloat16(), torch.zeros(0, 3):bfloat16(),
      { beta = 0.5 })
    assert.are.same({ { 0.5, 0.5, 0.5 }, { 0.5, 0.5, 0.5 } }, c:float():tolist())
    local m = torch.tensor({ { 1, 2 }, { 3, 4 } }):bfloat16()
    assert.are.same({ 5, 11 }, m:mv(torch.tensor({ 1, 2 }):bfloat16()):float():tolist())
    assert.are.equal(5, torch.tensor({ 1, 2 }):bfloat16():dot(torch.tensor({ 1, 2 }):bfloat16()):item())
    local s = torch.tensor({ { math.huge, 1 }, { 0 / 0, 1 }, { 1, 1 } }):bfloat16():mm(torch.tensor({ { 1 }, { 1 } }):bfloat16())
    local v = s:float():reshape(-1):tolist()
    assert.are.equal(math.huge, v[1])
    assert.is_true(v[2] ~= v[2])
    assert.are.equal(2, v[3])
    -- bfloat16's range: a product past float32's overflows to inf
    local big = torch.tensor({ { 3e38, 3e38 } }):bfloat16():mm(torch.tensor({ { 2 }, { 2 } }):bfloat16())
    assert.are.equal(math.huge, big:item())
  end)

  it('mixing dtypes in a product is PyTorch\'s error; a bfloat16 and a float32 operand of add promote', function()
    local a, b = torch.randn(2, 3), torch.randn(3, 2):bfloat16()
    H.errors_with(function() return a:mm(b) end, 'expected scalar type Float but found BFloat16')
    assert.are.equal(torch.float32, (torch.randn(2):bfloat16() + torch.randn(2)).dtype)
    assert.are.equal(torch.bfloat16, (torch.randn(2):bfloat16() + 1.5).dtype)
    assert.are.equal(torch.float32, (torch.randn(2):bfloat16() + torch.randn(2):half()).dtype)
  end)

  it('convolutions, pools, interpolation, padding and recurrent layers take bfloat16 and float16: float32 inside, rounded once', function()
    torch.manual_seed(5)
    for _, dt in ipairs({ torch.bfloat16, torch.float16 }) do
      local x, w, b = torch.randn(2, 3, 7, 7):to(dt), torch.randn(4, 3, 3, 3):to(dt), torch.randn(4):to(dt)
      local y = F.conv2d(x, w, b, { padding = 1 })
      assert.are.equal(dt, y.dtype)
      assert.is_true(torch.equal(y, F.conv2d(x:float(), w:float(), b:float(), { padding = 1 }):to(dt)))
      local p, i = F.max_pool2d(x, 2, { return_indices = true })
      local pf, iff = F.max_pool2d(x:float(), 2, { return_indices = true })
      assert.are.equal(dt, p.dtype)
      assert.is_true(torch.equal(p:float(), pf) and torch.equal(i, iff))
      assert.is_true(torch.equal(F.avg_pool2d(x, 2), F.avg_pool2d(x:float(), 2):to(dt)))
      assert.is_true(torch.equal(F.adaptive_avg_pool2d(x, 1), F.adaptive_avg_pool2d(x:float(), 1):to(dt)))
      assert.is_true(torch.equal(F.interpolate(x, { scale_factor = 2, mode = 'bilinear' }),
        F.interpolate(x:float(), { scale_factor = 2, mode = 'bilinear' }):to(dt)))
      assert.is_true(torch.equal(F.pad(x, { 1, 1, 2, 0 }, 'reflect'):float(), F.pad(x:float(), { 1, 1, 2, 0 }, 'reflect')))
      -- gradients come back in the input's dtype
      local xr = x:clone():requires_grad_()
      F.max_pool2d(F.conv2d(xr, w, b), 2):float():sum():backward()
      assert.are.equal(dt, xr.grad.dtype)
      local lstm = nn.LSTM(3, 4):to(dt)
      local out, hc = lstm(torch.randn(5, 2, 3):to(dt))
      assert.are.equal(dt, out.dtype)
      assert.are.equal(dt, hc[2].dtype)
      assert.are.equal(dt, nn.GRU(3, 4):to(dt)(torch.randn(5, 2, 3):to(dt)).dtype)
      assert.are.equal(dt, (nn.LSTMCell(3, 4):to(dt)(torch.randn(2, 3):to(dt))).dtype)
    end
  end)

  it('conversions: every bfloat16 widens exactly and float32 rounds to nearest even', function()
    assert.are.same({ 1, 1.0078125, 1.015625, 1.015625 },
      torch.tensor({ 1.00390625, 1.0078125, 1.01171875, 1.013671875 }):bfloat16():float():tolist())
    assert.are.same({ 1, 1.001953125, 65504, math.huge }, torch.tensor({ 1.00048828125, 1.00146484375, 65504, 65520 })
      :half():float():tolist())
    -- strided and broadcast sources
    local x = torch.randn(5, 7)
    assert.is_true(torch.equal(x:t():bfloat16(), x:bfloat16():t()))
    assert.is_true(torch.equal(x:t():half():float(), x:half():float():t()))
  end)
end)
