-- Elementwise ops: values, broadcasting, type promotion, in-place/out forms, strided inputs, errors.
local H = require 'spec.support.helper'
local torch = H.torch

-- Produced with /usr/bin/python3 (torch 1.13):
--   x = torch.tensor([-2.5, -1.0, -0.3, 0.0, 0.4, 1.0, 2.7]); getattr(torch, op)(x).tolist()
--   (gelu, silu through torch.nn.functional; gelu_tanh is F.gelu(x, approximate='tanh'))
local X = { -2.5, -1.0, -0.3, 0.0, 0.4, 1.0, 2.7 }
local UNARY = {
  neg = { 2.5, 1.0, 0.30000001192092896, -0.0, -0.4000000059604645, -1.0, -2.700000047683716 },
  abs = { 2.5, 1.0, 0.30000001192092896, 0.0, 0.4000000059604645, 1.0, 2.700000047683716 },
  sign = { -1.0, -1.0, -1.0, 0.0, 1.0, 1.0, 1.0 },
  exp = { 0.08208499848842621, 0.3678794503211975, 0.740818202495575, 1.0, 1.4918246269226074, 2.7182817459106445, 14.879732131958008 },
  exp2 = { 0.1767766922712326, 0.5, 0.812252402305603, 1.0, 1.3195079565048218, 2.0, 6.498019218444824 },
  log = { 0/0, 0/0, 0/0, -math.huge, -0.9162907004356384, 0.0, 0.9932518005371094 },
  log2 = { 0/0, 0/0, 0/0, -math.huge, -1.3219280242919922, 0.0, 1.4329594373703003 },
  log10 = { 0/0, 0/0, 0/0, -math.huge, -0.3979400098323822, 0.0, 0.4313637614250183 },
  log1p = { 0/0, -math.huge, -0.3566749691963196, 0.0, 0.3364722430706024, 0.6931471824645996, 1.3083328008651733 },
  expm1 = { -0.9179149866104126, -0.6321205496788025, -0.25918179750442505, 0.0, 0.4918247163295746, 1.718281865119934, 13.879732131958008 },
  sqrt = { 0/0, 0/0, 0/0, 0.0, 0.6324555277824402, 1.0, 1.6431677341461182 },
  rsqrt = { 0/0, 0/0, 0/0, math.huge, 1.5811388492584229, 1.0, 0.6085805892944336 },
  sin = { -0.5984721183776855, -0.8414709568023682, -0.29552021622657776, 0.0, 0.389418363571167, 0.8414709568023682, 0.427379846572876 },
  cos = { -0.8011435866355896, 0.5403023362159729, 0.9553365111351013, 1.0, 0.9210609793663025, 0.5403023362159729, -0.9040721654891968 },
  tan = { 0.7470223307609558, -1.5574077367782593, -0.30933627486228943, 0.0, 0.4227932393550873, 1.5574077367782593, -0.47272756695747375 },
  asin = { 0/0, -1.5707963705062866, -0.30469265580177307, 0.0, 0.41151684522628784, 1.5707963705062866, 0/0 },
  acos = { 0/0, 3.1415927410125732, 1.8754889965057373, 1.5707963705062866, 1.159279465675354, 0.0, 0/0 },
  atan = { -1.1902899742126465, -0.7853981256484985, -0.29145681858062744, 0.0, 0.38050639629364014, 0.7853981256484985, 1.2160906791687012 },
  sinh = { -6.050204753875732, -1.175201177597046, -0.30452030897140503, 0.0, 0.4107523262500763, 1.175201177597046, 7.40626335144043 },
  cosh = { 6.132289409637451, 1.5430805683135986, 1.04533851146698, 1.0, 1.0810723304748535, 1.5430805683135986, 7.473468780517578 },
  tanh = { -0.9866142868995667, -0.7615941762924194, -0.29131263494491577, 0.0, 0.3799489736557007, 0.7615941762924194, 0.9910074472427368 },
  sigmoid = { 0.07585817575454712, 0.2689414322376251, 0.4255574941635132, 0.5, 0.5986876487731934, 0.7310585975646973, 0.9370266199111938 },
  relu = { 0.0, 0.0, 0.0, 0.0, 0.4000000059604645, 1.0, 2.700000047683716 },
  erf = { -0.9995930194854736, -0.8427007794380188, -0.3286267817020416, 0.0, 0.42839235067367554, 0.8427007794380188, 0.9998656511306763 },
  erfc = { 1.9995930194854736, 1.8427008390426636, 1.3286267518997192, 1.0, 0.5716076493263245, 0.15729920566082, 0.00013433270214591175 },
  floor = { -3.0, -1.0, -1.0, 0.0, 0.0, 1.0, 2.0 },
  ceil = { -2.0, -1.0, -0.0, 0.0, 1.0, 1.0, 3.0 },
  round = { -2.0, -1.0, -0.0, 0.0, 0.0, 1.0, 3.0 },
  trunc = { -2.0, -1.0, -0.0, 0.0, 0.0, 1.0, 2.0 },
  frac = { -0.5, 0.0, -0.30000001192092896, 0.0, 0.4000000059604645, 0.0, 0.7000000476837158 },
  reciprocal = { -0.4000000059604645, -1.0, -3.3333332538604736, math.huge, 2.5, 1.0, 0.37037035822868347 },
  square = { 6.25, 1.0, 0.09000000357627869, 0.0, 0.1600000113248825, 1.0, 7.2900004386901855 },
  lgamma = { -0.056243717670440674, math.huge, 1.464840054512024, math.huge, 0.796677827835083, 0.0, 0.43482059240341187 },
  digamma = { 1.1031566858291626, 0/0, 2.113309860229492, -math.huge, -2.561384439468384, -0.5772159099578857, 0.7967831492424011 },
  gelu = { -0.015524178743362427, -0.1586552858352661, -0.11462658643722534, 0.0, 0.26216867566108704, 0.8413447141647339, 2.690639019012451 },
  gelu_tanh = { -0.015084296464920044, -0.15880799293518066, -0.11462908238172531, 0.0, 0.26216116547584534, 0.8411920070648193, 2.6911122798919678 },
  silu = { -0.189645454287529, -0.2689414322376251, -0.12766724824905396, 0.0, 0.2394750714302063, 0.7310585975646973, 2.5299718379974365 },
  logit = { 0/0, 0/0, 0/0, -math.huge, -0.40546515583992004, math.huge, 0/0 },
  sinc = { 0.1273239552974701, -2.7827534054836178e-08, 0.858393669128418, 1.0, 0.7568266987800598, -2.7827534054836178e-08, 0.09537702798843384 },
}

describe('unary ops', function()
  for name, want in pairs(UNARY) do
    it(name .. ' matches PyTorch on float32', function()
      local x = torch.tensor(X)
      local got
      if name == 'gelu_tanh' then got = torch.gelu(x, { approximate = 'tanh' })
      else got = torch[name](x) end
      assert.are.equal(torch.float32, got.dtype)
      H.near(got, want, 1e-5, 1e-5)
    end)
  end

  it('computes in float64 for float64 input', function()
    local x = torch.tensor(X, { dtype = torch.float64 })
    local y = x:exp()
    assert.are.equal(torch.float64, y.dtype)
    H.near(y, UNARY.exp, 1e-6, 1e-6)
  end)

  it('computes float16 and bfloat16 through float32 and rounds once', function()
    for _, dt in ipairs { torch.float16, torch.bfloat16 } do
      local x = torch.tensor(X, { dtype = dt })
      local y = x:sigmoid()
      assert.are.equal(dt, y.dtype)
      H.near(y, UNARY.sigmoid, 1e-2, 1e-2)
    end
  end)

  it('turns integers into the default float dtype for float-only ops', function()
    local x = torch.tensor({ 1, 4, 9 }, { dtype = torch.int64 })
    local y = x:sqrt()
    assert.are.equal(torch.float32, y.dtype)
    H.near(y, { 1, 2, 3 })
  end)

  it('keeps integer dtypes for neg, abs, sign, relu, square', function()
    local x = torch.tensor({ -3, 0, 2 }, { dtype = torch.int32 })
    assert.are.same({ 3, 0, -2 }, (-x):tolist())
    assert.are.equal(torch.int32, x:abs().dtype)
    assert.are.same({ 3, 0, 2 }, x:abs():tolist())
    assert.are.same({ -1, 0, 1 }, x:sign():tolist())
    assert.are.same({ 0, 0, 2 }, x:relu():tolist())
    assert.are.same({ 9, 0, 4 }, x:square():tolist())
  end)

  it('works in place and on views', function()
    local x = torch.tensor({ { 1, 2 }, { 3, 4 } })
    local xt = x:t()
    local r = xt:exp()
    H.near(r, { { math.exp(1), math.exp(3) }, { math.exp(2), math.exp(4) } }, 1e-4, 1e-6)
    xt:neg_() -- writes through the view
    H.near(x, { { -1, -2 }, { -3, -4 } })
    local col = x:narrow(2, 2, 1)
    col:abs_()
    H.near(x, { { -1, 2 }, { -3, 4 } })
  end)

  it('predicates give bool tensors', function()
    local x = torch.tensor({ 1, 0 / 0, math.huge, -math.huge })
    assert.are.same({ false, true, false, false }, x:isnan():tolist())
    assert.are.same({ false, false, true, true }, x:isinf():tolist())
    assert.are.same({ true, false, false, false }, x:isfinite():tolist())
    assert.are.equal(torch.bool, x:isnan().dtype)
    assert.are.same({ false, false }, torch.tensor({ 1, 2 }, { dtype = torch.int64 }):isnan():tolist())
    assert.are.same({ true, false }, torch.tensor({ 0, 3 }):logical_not():tolist())
    -- a true is 1, also for -inf (isinf(-inf) in C may be -1): PyTorch's
    -- torch.isinf(torch.tensor([-inf, 1., inf])).sum() is 2, .long() is [1, 0, 1]
    local inf = torch.isinf(torch.tensor({ -math.huge, 1, math.huge }))
    assert.are.equal(2, inf:sum():item())
    assert.are.same({ 1, 0, 1 }, inf:to(torch.int64):tolist())
    assert.is_true(inf:eq(torch.tensor({ true, false, true })):all())
  end)

  it('clamps with numbers, one-sided bounds and tensors', function()
    -- torch.clamp(torch.tensor([-2.,0.5,3.]), -1, 1) -> [-1.0, 0.5, 1.0]
    H.near(torch.clamp(torch.tensor({ -2, 0.5, 3 }), -1, 1), { -1, 0.5, 1 })
    -- torch.clamp(torch.tensor([-2,0,3]), min=0) -> [0, 0, 3]
    local i = torch.tensor({ -2, 0, 3 }, { dtype = torch.int64 })
    local c = i:clamp({ min = 0 })
    assert.are.equal(torch.int64, c.dtype)
    assert.are.same({ 0, 0, 3 }, c:tolist())
    -- an integer tensor with float bounds becomes float32 (torch.clamp(torch.tensor([1,5]), 0.5, 2.5).dtype)
    assert.are.equal(torch.float32, torch.tensor({ 1, 5 }, { dtype = torch.int64 }):clamp(0.5, 2.5).dtype)
    H.near(torch.tensor({ 1, 5, -3 }):clamp(torch.tensor({ 2, 2, 2 }), nil), { 2, 5, 2 })
    local y = torch.tensor({ -5, 5 })
    y:clamp_(-1, 1)
    H.near(y, { -1, 1 })
    H.errors_with(function() torch.tensor({ 1 }):clamp() end, "at least one of 'min' or 'max'")
  end)

  it('rejects bool negation and bitwise ops on floats', function()
    H.errors_with(function() return -torch.tensor({ true, false }) end, 'neg: negation')
    H.errors_with(function() return torch.tensor({ 1.5 }):bitwise_not() end, 'bitwise_not')
    assert.are.same({ -2, 0 }, torch.tensor({ 1, -1 }, { dtype = torch.int64 }):bitwise_not():tolist())
  end)
end)

-- logit and sinc came in through the op list (its entry, a kernel, a derivative: nothing else).
-- Produced with /usr/bin/python3 (torch 1.13), float64 unless said:
--   x = torch.tensor([0.0, 0.1, 0.25, 0.5, 0.9, 1.0, -0.5, 1.5, nan], dtype=torch.float64, requires_grad=True)
--   y = torch.logit(x) (and torch.logit(x, 0.2)); y.sum().backward(); y.tolist(), x.grad.tolist()
--   s = torch.tensor([0.0, 0.5, 1.0, -1.5, 2.25, 1e-8, inf], dtype=torch.float64, requires_grad=True)
--   y = torch.sinc(s); y.sum().backward(); y.tolist(), s.grad.tolist()
describe('logit and sinc', function()
  local nan, inf = 0 / 0, math.huge
  local LX = { 0.0, 0.1, 0.25, 0.5, 0.9, 1.0, -0.5, 1.5, nan }
  local function leaf(v) return torch.tensor(v, { dtype = torch.float64, requires_grad = true }) end

  it('logit without eps: values, and nan gradients outside [0, 1]', function()
    local x = leaf(LX)
    local y = torch.logit(x)
    H.near(y, { -inf, -2.197224577336219, -1.0986122886681098, 0.0, 2.1972245773362196, inf, nan, nan, nan }, 1e-12, 1e-12)
    assert.are.equal('LogitBackward0', y.grad_fn:name())
    y:sum():backward()
    H.near(x.grad, { inf, 11.111111111111109, 5.333333333333333, 4.0, 11.111111111111112, inf, nan, nan, nan }, 1e-12, 1e-12)
  end)

  it('logit with eps clamps the input and gives zero gradients where it clamped', function()
    local x = leaf(LX)
    local y = torch.logit(x, 0.2)
    local lo, hi = -1.3862943611198906, 1.3862943611198908
    H.near(y, { lo, lo, -1.0986122886681098, 0.0, hi, hi, lo, hi, nan }, 1e-12, 1e-12)
    y:sum():backward()
    H.near(x.grad, { 0, 0, 5.333333333333333, 4.0, 0, 0, 0, 0, nan }, 1e-12, 1e-12)
    -- eps by name, in place, and torch.special.logit (float32:
    --   torch.logit(torch.tensor([0.05, 0.3, 0.96]), eps=0.1).tolist())
    local want = { -2.1972246170043945, -0.8472977876663208, 2.1972243785858154 }
    H.near(torch.logit(torch.tensor({ 0.05, 0.3, 0.96 }), { eps = 0.1 }), want, 1e-6, 1e-6)
    local t = torch.tensor({ 0.05, 0.3, 0.96 })
    assert.are.equal(t, t:logit_(0.1))
    H.near(t, want, 1e-6, 1e-6)
    H.near(torch.special.logit(torch.tensor({ 0.05, 0.3, 0.96 }), 0.1), want, 1e-6, 1e-6)
    -- a negative eps is no eps, as in PyTorch (torch.logit(torch.tensor([0.0, 1.0]), -1.0) -> [-inf, inf])
    H.near(torch.logit(torch.tensor({ 0.0, 1.0 }), -1), { -inf, inf })
    H.errors_with(function() torch.logit(torch.tensor({ 0.5 }), 'x') end, 'moontorch.logit: eps must be a number')
    H.errors_with(function() torch.logit(torch.tensor({ 0.5 }), 0.1, 0.2) end, 'moontorch.logit: takes 1 parameter')
  end)

  it('logit and sinc turn integers into floats (torch.sinc(torch.tensor([0, 1, 2])))', function()
    local l = torch.logit(torch.tensor({ 0, 1 }))
    assert.are.equal(torch.float32, l.dtype)
    H.near(l, { -inf, inf })
    local s = torch.sinc(torch.tensor({ 0, 1, 2 }))
    assert.are.equal(torch.float32, s.dtype)
    H.near(s, { 1.0, -2.7827534054836178e-08, 2.7827534054836178e-08 }, 1e-12, 1e-6)
  end)

  it('sinc: 1 at 0, its derivative 0 there', function()
    local x = leaf({ 0.0, 0.5, 1.0, -1.5, 2.25, 1e-8, inf })
    local y = torch.sinc(x)
    H.near(y, { 1.0, 0.6366197723675814, 3.8981718325193755e-17, -0.2122065907891938, 0.10003514623967844,
      0.9999999999999998, nan }, 1e-15, 1e-12)
    assert.are.equal('SincBackward0', y.grad_fn:name())
    y:sum():backward()
    H.near(x.grad, { 0.0, -1.2732395447351625, -1.0, -0.14147106052612907, 0.26980961553194194,
      -2.1063981330815398e-08, nan }, 1e-15, 1e-9)
    assert.are.equal(torch.special.sinc, torch.sinc)
  end)
end)

describe('copysign gradients', function()
  -- a = torch.tensor([1.5, -2.0, 0.0, 3.0], dtype=torch.float64, requires_grad=True)
  -- b = torch.tensor([-1.0, -1.0, -2.0, 2.0], dtype=torch.float64, requires_grad=True)
  -- y = torch.copysign(a, b); y.sum().backward() -> a.grad [-1, 1, 0, 1], b.grad zeros;
  -- torch.copysign(a, -2.0) -> a.grad [-1, 1, 0, -1], CopysignBackward1
  it('flow to the magnitude, not to the sign', function()
    local a = torch.tensor({ 1.5, -2.0, 0.0, 3.0 }, { dtype = torch.float64, requires_grad = true })
    local b = torch.tensor({ -1.0, -1.0, -2.0, 2.0 }, { dtype = torch.float64, requires_grad = true })
    local y = torch.copysign(a, b)
    assert.are.equal('CopysignBackward0', y.grad_fn:name())
    y:sum():backward()
    H.near(a.grad, { -1, 1, 0, 1 })
    H.near(b.grad, { 0, 0, 0, 0 })
    a.grad = nil
    y = torch.copysign(a, -2.0)
    assert.are.equal('CopysignBackward1', y.grad_fn:name())
    y:sum():backward()
    H.near(a.grad, { -1, 1, 0, -1 })
  end)
end)

describe('binary ops', function()
  it('broadcasts', function()
    local a = torch.tensor({ { 1 }, { 2 }, { 3 } })
    local b = torch.tensor({ 10, 20 })
    local c = a + b
    assert.are.same({ 3, 2 }, H.shape(c))
    H.near(c, { { 11, 21 }, { 12, 22 }, { 13, 23 } })
    H.near(torch.ones(2, 1, 3) * torch.tensor({ 1, 2, 3 }), { { { 1, 2, 3 } }, { { 1, 2, 3 } } })
  end)

  it('takes numbers on either side, with operators', function()
    local a = torch.tensor({ 1, 2, 4 })
    H.near(a + 1, { 2, 3, 5 })
    H.near(1 + a, { 2, 3, 5 })
    H.near(a - 1, { 0, 1, 3 })
    H.near(10 - a, { 9, 8, 6 })
    H.near(a * 2, { 2, 4, 8 })
    H.near(2 * a, { 2, 4, 8 })
    H.near(a / 2, { 0.5, 1, 2 })
    H.near(8 / a, { 8, 4, 2 })
    H.near(a ^ 2, { 1, 4, 16 })
    H.near(2 ^ a, { 2, 4, 16 })
    H.near(-a, { -1, -2, -4 })
    H.near(a % 3, { 1, 2, 1 })
  end)

  -- Produced with /usr/bin/python3 (torch 1.13): a=torch.tensor([7,-7,5,-5]); b=torch.tensor([2,2,-3,-3])
  -- floor_divide [3,-4,-2,1], remainder [1,1,-1,-2], fmod [1,-1,2,-2], div trunc [3,-3,-1,1]
  it('divides integers like PyTorch', function()
    local a = torch.tensor({ 7, -7, 5, -5 }, { dtype = torch.int64 })
    local b = torch.tensor({ 2, 2, -3, -3 }, { dtype = torch.int64 })
    assert.are.same({ 3, -4, -2, 1 }, torch.floor_divide(a, b):tolist())
    assert.are.same({ 1, 1, -1, -2 }, torch.remainder(a, b):tolist())
    assert.are.same({ 1, -1, 2, -2 }, torch.fmod(a, b):tolist())
    assert.are.same({ 3, -3, -1, 1 }, torch.div(a, b, { rounding_mode = 'trunc' }):tolist())
    assert.are.same({ 3, -4, -2, 1 }, torch.div(a, b, { rounding_mode = 'floor' }):tolist())
    local q = a / b
    assert.are.equal(torch.float32, q.dtype)
    H.near(q, { 3.5, -3.5, -5 / 3, 5 / 3 })
    local af, bf = a:float(), b:float()
    H.near(torch.floor_divide(af, bf), { 3, -4, -2, 1 })
    H.near(torch.remainder(af, bf), { 1, 1, -1, -2 })
    H.near(torch.fmod(af, bf), { 1, -1, 2, -2 })
  end)

  it('reports integer division by zero instead of crashing', function()
    local a = torch.tensor({ 1, 2 }, { dtype = torch.int64 })
    local z = torch.tensor({ 1, 0 }, { dtype = torch.int64 })
    H.errors_with(function() return torch.floor_divide(a, z) end, 'ZeroDivisionError')
    H.errors_with(function() return torch.remainder(a, z) end, 'ZeroDivisionError')
    assert.are.same({ 2, 3 }, (a + 1):tolist()) -- still usable
    -- float division by zero is inf, as IEEE says
    assert.are.equal(math.huge, (torch.tensor({ 1 }) / 0):item())
  end)

  -- Produced with /usr/bin/python3 (torch 1.13): dtypes of the expressions named in each line
  it('promotes types as PyTorch does', function()
    local i64 = torch.tensor({ 1, 2 }, { dtype = torch.int64 })
    assert.are.equal(torch.float32, (i64 / 2).dtype)                                     -- int / int -> float32
    assert.are.equal(torch.int64, (i64 * 2).dtype)                                       -- int64 * 2 -> int64
    assert.are.equal(torch.float32, (i64 + 1.5).dtype)                                   -- int64 + 1.5 -> float32
    assert.are.equal(torch.int32, (torch.tensor({ 1, 2 }, { dtype = torch.int32 }) + torch.tensor(5, { dtype = torch.int64 })).dtype)
    assert.are.equal(torch.int16, (torch.tensor({ 1 }, { dtype = torch.uint8 }) + torch.tensor({ 1 }, { dtype = torch.int8 })).dtype)
    assert.are.equal(torch.int64, (torch.tensor({ true }) + 1).dtype)                    -- bool + 1 -> int64
    assert.are.equal(torch.float16, (torch.tensor({ 1 }, { dtype = torch.float16 }) + 2.0).dtype)
    assert.are.equal(torch.float32, (torch.tensor({ 1 }, { dtype = torch.float16 }) + torch.tensor({ 1 })).dtype)
    assert.are.equal(torch.float32, (torch.tensor({ 1 }) + torch.tensor(1, { dtype = torch.float64 })).dtype)
    assert.are.equal(torch.float64, (i64 + torch.tensor(1.5, { dtype = torch.float64 })).dtype)
    assert.are.equal(torch.float32, (torch.tensor({ 1 }, { dtype = torch.bfloat16 }) + torch.tensor({ 1 }, { dtype = torch.float16 })).dtype)
    local bb = torch.tensor({ true }) + torch.tensor({ true })
    assert.are.equal(torch.bool, bb.dtype)
    assert.are.same({ true }, bb:tolist())
    assert.are.equal(torch.float64, (torch.tensor({ 1 }, { dtype = torch.float64 }) * torch.tensor({ 2 })).dtype)
  end)

  it('compares into bool tensors and mixes dtypes', function()
    local a = torch.tensor({ 1, 2, 3 })
    local b = torch.tensor({ 3, 2, 1 }, { dtype = torch.int64 })
    assert.are.same({ false, true, false }, a:eq(b):tolist())
    assert.are.same({ true, false, true }, a:ne(b):tolist())
    assert.are.same({ true, false, false }, a:lt(b):tolist())
    assert.are.same({ true, true, false }, a:le(b):tolist())
    assert.are.same({ false, false, true }, a:gt(b):tolist())
    assert.are.same({ false, true, true }, a:ge(2):tolist())
    assert.are.equal(torch.bool, a:gt(b).dtype)
    assert.are.same({ true, false, true }, torch.logical_or(a:gt(2), a:lt(2)):tolist())
    assert.are.same({ false, false, true }, torch.logical_and(a:gt(1), b:lt(2)):tolist())
    assert.are.same({ true, false, true }, torch.logical_xor(a:gt(2), a:lt(2)):tolist())
  end)

  -- Produced with /usr/bin/python3 (torch 1.13): torch.maximum / torch.fmax with nan, atan2, hypot, pow
  it('computes maximum, fmax, atan2, hypot and pow', function()
    local nan = 0 / 0
    local a, b = torch.tensor({ 1, nan, 3 }), torch.tensor({ 2, 1, nan })
    H.near(torch.maximum(a, b), { 2, nan, nan })
    H.near(torch.fmax(a, b), { 2, 1, 3 })
    H.near(torch.minimum(torch.tensor({ 1, 5 }), torch.tensor({ 2, 4 })), { 1, 4 })
    H.near(torch.atan2(torch.tensor({ 1, -1 }), torch.tensor({ -1, 2 })), { 2.356194496154785, -0.46364760398864746 })
    H.near(torch.hypot(torch.tensor({ 3, 5 }), torch.tensor({ 4, 12 })), { 5, 13 })
    local ip = torch.pow(torch.tensor({ 2, 3, -2 }, { dtype = torch.int64 }), 3)
    assert.are.equal(torch.int64, ip.dtype)
    assert.are.same({ 8, 27, -8 }, ip:tolist())
    H.near(torch.pow(torch.tensor({ 2, 3, 4 }), 0.5), { 1.4142135381698608, 1.7320507764816284, 2.0 })
    H.near(torch.pow(2, torch.tensor({ 1, 2, 3 })), { 2, 4, 8 })
    H.errors_with(function() return torch.pow(torch.tensor({ 2 }, { dtype = torch.int64 }), torch.tensor({ -1 }, { dtype = torch.int64 })) end,
      'negative integer powers')
  end)

  it('adds with alpha, addcmul and addcdiv, lerp', function()
    local a, b = torch.tensor({ 1, 2 }), torch.tensor({ 10, 20 })
    H.near(torch.add(a, b, { alpha = 2 }), { 21, 42 })
    H.near(torch.sub(a, b, { alpha = 0.5 }), { -4, -8 })
    H.near(a:addcmul(b, b, { value = 0.5 }), { 51, 202 })
    H.near(a:addcdiv(b, torch.tensor({ 2, 4 })), { 6, 7 })
    H.near(torch.lerp(a, b, 0.5), { 5.5, 11 })
    H.near(torch.lerp(a, b, torch.tensor({ 0, 1 })), { 1, 20 })
  end)

  it('works in place, with out=, and on strided views', function()
    local a = torch.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    local r = a:add_(1)
    assert.is_true(rawequal(r, a))
    H.near(a, { { 2, 3, 4 }, { 5, 6, 7 } })
    local at = a:t() -- 3x2, strides (1, 3)
    local s = at + torch.tensor({ 100, 200 })
    H.near(s, { { 102, 205 }, { 103, 206 }, { 104, 207 } })
    local out = torch.zeros(2, 3)
    local o = torch.mul(a, 2, { out = out })
    assert.is_true(rawequal(o, out))
    H.near(out, { { 4, 6, 8 }, { 10, 12, 14 } })
    local e = torch.tensor({ 1, 2, 3 }):expand(2, 3)
    H.near(e * a, { { 2, 6, 12 }, { 5, 12, 21 } })
    local sl = a:narrow(2, 2, 2) -- a non-contiguous slice
    sl:mul_(10)
    H.near(a, { { 2, 30, 40 }, { 5, 60, 70 } })
    -- a big tensor exercises the threaded path
    local big = torch.ones(300, 400)
    local bt = big:t() * 2 + big:t()
    assert.are.equal(3, bt:select(1, 7):select(1, 9):item())
  end)

  it('in place keeps the dtype of self and refuses a wider result', function()
    local i = torch.tensor({ 1, 2 }, { dtype = torch.int64 })
    H.errors_with(function() i:add_(1.5) end, "can't be cast to the desired output type")
    H.errors_with(function() i:exp_() end, "result type Float can't be cast to the desired output type Long")
    -- narrowing within a category is allowed, as PyTorch's canCast says
    local i32 = torch.tensor({ 1, 2 }, { dtype = torch.int32 })
    i32:add_(torch.tensor({ 5, 5 }, { dtype = torch.int64 }))
    assert.are.equal(torch.int32, i32.dtype)
    assert.are.same({ 6, 7 }, i32:tolist())
    -- comparisons in place write 0/1 in self's dtype (torch.tensor([1.,2.]).gt_(1) -> tensor([0., 1.]))
    assert.are.same({ 0, 1 }, torch.tensor({ 1, 2 }):gt_(1):tolist())
    local f = torch.tensor({ 1, 2 })
    f:add_(torch.tensor({ 1, 1 }, { dtype = torch.int64 }))
    assert.are.equal(torch.float32, f.dtype)
    H.near(f, { 2, 3 })
  end)

  it('raises clear errors for shapes that do not broadcast, and stays usable', function()
    local a, b = torch.ones(2, 3), torch.ones(4)
    local err = H.errors_with(function() return a + b end, 'moontorch.add:')
    assert.truthy(err:find('[2, 3]', 1, true) and err:find('[4]', 1, true))
    -- the error is raised at the caller's line
    assert.truthy(err:find('elementwise_spec.lua', 1, true))
    H.errors_with(function() return torch.tensor({ true }) - torch.tensor({ false }) end, 'sub: subtraction')
    H.errors_with(function() return torch.mul(a, 'x') end, 'expected a tensor or a number')
    H.near(a + 1, { { 2, 2, 2 }, { 2, 2, 2 } })
  end)

  it('where selects with broadcasting and numbers', function()
    local c = torch.tensor({ true, false, true })
    H.near(torch.where(c, torch.tensor({ 1, 2, 3 }), torch.tensor({ -1, -2, -3 })), { 1, -2, 3 })
    H.near(torch.where(c, torch.tensor({ 1, 2, 3 }), 0), { 1, 0, 3 })
    local w = torch.where(c, 1, 0)
    assert.are.equal(torch.int64, w.dtype)
    assert.are.same({ 1, 0, 1 }, w:tolist())
    H.errors_with(function() torch.where(torch.tensor({ 1, 0 }), torch.ones(2), torch.zeros(2)) end, 'where:')
  end)

  it('covers every dtype for add and mul', function()
    for _, dt in ipairs { torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
      torch.float32, torch.float64, torch.bfloat16 } do
      local a = torch.tensor({ 1, 2, 3 }, { dtype = dt })
      local s = a + a
      assert.are.equal(dt, s.dtype)
      assert.are.same({ 2, 4, 6 }, s:tolist())
      assert.are.same({ 3, 6, 9 }, (a * 3):tolist())
    end
  end)
end)

describe('digamma and polygamma', function()
  it('polygamma(n, x) takes n first as PyTorch does, and x:polygamma(n)', function()
    local x = torch.tensor({ 1, 2.5, -0.5 }, { dtype = torch.float64 })
    -- exact values: psi'(1) = pi^2/6, psi''(1) = -2 zeta(3), psi(1) = -euler_gamma
    H.near(torch.polygamma(1, x):narrow(1, 1, 1), torch.tensor({ math.pi ^ 2 / 6 }, { dtype = torch.float64 }), 1e-15, 1e-15)
    H.near(x:polygamma(2):narrow(1, 1, 1), torch.tensor({ -2 * 1.2020569031595942 }, { dtype = torch.float64 }), 1e-14, 1e-14)
    H.near(torch.special.polygamma(0, x), x:digamma(), 0, 0)
    assert.are.equal(torch.digamma, torch.psi)
    assert.are.equal(torch.digamma, torch.special.psi)
    assert.are.equal(torch.digamma, torch.special.digamma)
    H.near(torch.digamma(torch.tensor({ 1 }, { dtype = torch.float64 })), torch.tensor({ -0.5772156649015329 },
      { dtype = torch.float64 }), 1e-13, 1e-13)
  end)
  it('refuses an n that is not a whole number >= 0', function()
    local x = torch.ones(2)
    H.errors_with(function() torch.polygamma(1.5, x) end, 'moontorch.polygamma: n must be a non-negative integer, got 1.5')
    H.errors_with(function() x:polygamma(-1) end, 'moontorch.polygamma: n must be a non-negative integer, got -1')
  end)
  it('are differentiable: d digamma = polygamma(1), d polygamma(n) = polygamma(n + 1)', function()
    local x = torch.tensor({ 0.5, 3 }, { dtype = torch.float64, requires_grad = true })
    local y = x:digamma()
    assert.are.equal('DigammaBackward0', y.grad_fn:name())
    y:sum():backward()
    H.near(x.grad, torch.polygamma(1, x:detach()), 1e-15, 1e-15)
    x.grad = nil
    torch.polygamma(2, x):sum():backward()
    H.near(x.grad, torch.polygamma(3, x:detach()), 1e-15, 1e-15)
  end)
end)
