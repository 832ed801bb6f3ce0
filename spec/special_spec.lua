-- torch.special (lua/ops/special.lua): the other names of the core's ops, and the functions composed
-- from them against PyTorch 1.13's values (float64; recorded with /usr/bin/python3's torch 1.13:
-- torch.special.<f>(torch.tensor(values, dtype=torch.float64)), and .backward() of the sum for the
-- gradients), far tails included (log_ndtr at -40, erfcx at 1e5).
local H = require 'spec.support.helper'
local torch = H.torch
local S = torch.special

local function f(v) return torch.tensor(v, { dtype = torch.float64 }) end
local function close(got, want, tol, what)
  local g = got:tolist()
  assert.equal(#want, #g, what)
  for i = 1, #want do
    local a, b = g[i], want[i]
    if b == math.huge or b == -math.huge then
      assert(a == b, ('%s[%d]: got %s, want %s'):format(what, i, tostring(a), tostring(b)))
    else
      assert(math.abs(a - b) <= tol * math.max(1, math.abs(b)), ('%s[%d]: got %.17g, want %.17g'):format(what, i, a, b))
    end
  end
end

describe('torch.special', function()
  it('has PyTorch\'s other names of the core\'s ops (the same functions)', function()
    assert.equal(torch.sigmoid, S.expit)
    assert.equal(torch.lgamma, S.gammaln)
    for _, n in ipairs { 'exp2', 'expm1', 'log1p', 'erf', 'erfc', 'erfinv', 'logsumexp', 'softmax', 'log_softmax', 'round' } do
      assert.equal(torch[n], S[n], n)
    end
    assert.equal(torch.xlogy, S.xlogy)
    close(S.softmax(f({ 1, 2 }), 1), { 0.2689414213699951, 0.7310585786300049 }, 1e-15, 'softmax')
  end)

  it('ndtr, log_ndtr and ndtri as torch 1.13 (the lower tail through an asymptotic series)', function()
    local x = f({ -40.0, -25.0, -8.0, -1.5, 0.0, 0.3, 2.0, 7.0 })
    close(S.ndtr(x), { 0.0, 0.0, 6.106226635438361e-16, 0.06680720126885803, 0.5, 0.6179114221889527, 0.9772498680518208, 0.9999999999987201 }, 1e-14, 'ndtr')
    close(S.log_ndtr(x), { -804.6084420137539, -316.63940800802027, -35.01343715991456, -2.7059444008238898, -0.6931471805599453,
      -0.48141016158848127, -0.02301290932896348, -1.2798125438866539e-12 }, 1e-13, 'log_ndtr')
    close(S.ndtri(f({ 1e-10, 0.01, 0.3, 0.5, 0.9, 0.999 })),
      { -6.361340902404056, -2.3263478740408408, -0.5244005127080409, 0.0, 1.2815515655446004, 3.090232306167813 }, 1e-13, 'ndtri')
    -- deep in the tail, and the ends (torch 1.13: -11.464024688443613, -5.9978070150076865, -37.0470962993612)
    close(S.ndtri(f({ 1e-30, 1e-9, 1e-300, 0, 1 })), { -11.464024688443613, -5.9978070150076865, -37.0470962993612, -math.huge, math.huge },
      1e-13, 'ndtri tail')
    -- float32 in, float32 out (the tail computed in float64 inside)
    local y = S.log_ndtr(torch.tensor({ -40.0, 0.0 }))
    assert.equal(torch.float32, y.dtype)
    close(y, { -804.6084420137539, -0.6931471805599453 }, 1e-6, 'log_ndtr float32')
    local a = f({ 0.3, -2.0, 5.0 }):requires_grad_()
    S.log_ndtr(a):sum():backward()
    close(a.grad, { 0.6172208536127346, 2.3732155328228406, 1.4867199409049054e-06 }, 1e-12, 'log_ndtr grad')
  end)

  it('erfcx, entr, xlog1py, multigammaln (and torch.mvlgamma) as torch 1.13, gradients too', function()
    close(S.erfcx(f({ -3.0, -0.5, 0.0, 1.0, 5.0, 24.0, 26.0, 100.0, 1e5 })), { 16205.988853999586, 1.952360489182557, 1.0,
      0.427583576155807, 0.11070463773306861, 0.023487546063682644, 0.021683584850562907, 0.005641613782989433, 5.6418958351954685e-06 },
      1e-13, 'erfcx')
    local a = f({ 0.3, 1.0, 4.0 }):requires_grad_()
    S.erfcx(a):sum():backward()
    close(a.grad, { -0.6876195663549194, -0.27321201478389856, -0.032383506095021275 }, 1e-12, 'erfcx grad')
    close(S.entr(f({ 0.0, 0.25, 1.0, 3.0, -1.0 })), { 0.0, 0.34657359027997264, -0.0, -3.295836866004329, -math.huge }, 1e-15, 'entr')
    close(S.xlog1py(f({ 0.0, 0.0, 2.0, -1.5 }), f({ -1.0, 3.0, 0.5, 10.0 })), { 0.0, 0.0, 0.8109302162163288, -3.596842909197556 }, 1e-15, 'xlog1py')
    local x, y = f({ 0.25, 2.0 }):requires_grad_(), f({ 0.5, 1.5 }):requires_grad_()
    S.xlog1py(x, y):sum():backward()
    close(x.grad, { 0.4054651081081644, 0.9162907318741551 }, 1e-15, 'xlog1py dx')
    close(y.grad, { 0.16666666666666666, 0.8 }, 1e-15, 'xlog1py dy')
    close(S.xlog1py(2, f({ 0.5 })), { 0.8109302162163288 }, 1e-15, 'xlog1py number')
    close(S.multigammaln(f({ 2.5, 3.0, 10.0 }), 3), { 1.8809954616117743, 2.694924879806965, 36.81285863239809 }, 1e-13, 'multigammaln')
    close(torch.mvlgamma(f({ 2.5, 3.0, 10.0 }), 3), { 1.8809954616117743, 2.694924879806965, 36.81285863239809 }, 1e-13, 'mvlgamma')
    close(f({ 2.5 }):mvlgamma(3), { 1.8809954616117743 }, 1e-13, 't:mvlgamma')
    local m = f({ 3.0, 4.5 }):requires_grad_()
    S.multigammaln(m, 2):sum():backward()
    close(m.grad, { 1.6259409757437102, 2.6449885947913288 }, 1e-12, 'multigammaln grad')
  end)

  it('names the function in its errors', function()
    local ok, err = pcall(S.multigammaln, f({ 2.5 }), 0)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('moontorch.special.multigammaln: p has to be greater than or equal to 1', 1, true), err)
    ok, err = pcall(S.ndtr, 'x')
    assert.truthy(tostring(err):find('moontorch.special.ndtr: expected a tensor as input, got string', 1, true), err)
    ok, err = pcall(S.xlog1py, f({ 1 }), nil)
    assert.truthy(tostring(err):find('moontorch.special.xlog1py: expected a tensor as other, got nil', 1, true), err)
  end)
end)
