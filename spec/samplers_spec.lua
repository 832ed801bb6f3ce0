-- torch.distributions' samplers in C (core/tensor/samplers.c): torch._standard_gamma, _sample_dirichlet,
-- poisson, binomial draw PyTorch 1.13's numbers after the same seed, bit for bit, float32 and float64
-- (spec/support/samplers_wants.lua, written by spec/support/samplers_record.py with /usr/bin/python3's
-- torch 1.13); the reparameterized gradients _standard_gamma_grad / _dirichlet_grad equal PyTorch's;
-- StandardGammaBackward0 and PoissonBackward0; errors in PyTorch's words; moments of large samples.
local H = require 'spec.support.helper'
local torch = H.torch
local W = dofile('spec/support/samplers_wants.lua')

local function list(t) return t:tolist() end -- (a number for a 0-d tensor)
local same = H.same_values -- nested arrays equal within tol

local function rep3(t) return torch.cat({ t, t, t }) end

local GAMMA = { 0.0, 1e-3, 0.3, 0.5, 0.999, 1.0, 1.5, 2.0, 3.7, 10.0, 55.0, 1e3 }
local POISSON = { 0.0, 1e-3, 0.5, 1.0, 4.2, 9.99, 10.0, 17.5, 100.0, 1e4 }
local COUNT = { 0.0, 1.0, 5.0, 10.0, 20.0, 50.0, 100.0, 1000.0, 37.0, 7.0, 200.0, -2.0, 4.0 }
local PROB = { 0.3, 0.5, 0.1, 0.9, 0.5, 0.3, 0.05, 0.7, 0.99, 0.01, 0.999, 0.5, 0.0 }
local DIRICHLET = { { 0.5, 1.0, 2.0 }, { 10.0, 0.1, 3.0 }, { 1e-3, 1.0, 1e-2 } }
local GG_ALPHA = { 0.5, 2.0, 3.0, 9.0, 20.0, 20.0, 20.0, 1.5, 0.2, 50.0 }
local GG_X = { 0.3, 0.1, 2.5, 8.5, 20.5, 10.0, 35.0, 4.0, 1.2, 52.0 }
local DG_X = { 0.1, 0.9, 0.5, 0.4, 0.3, 0.05, 0.97 }
local DG_ALPHA = { 0.5, 3.0, 10.0, 2.0, 1.5, 0.2, 4.0 }
local DG_TOTAL = { 2.0, 3.5, 20.0, 5.0, 4.0, 1.0, 4.2 }

describe('torch.distributions\' samplers', function()
  for _, dtn in ipairs { 'float32', 'float64' } do
    local dt, want = torch[dtn], W[dtn]
    local P = function(v) return torch.tensor(v, { dtype = dt }) end
    it(('draw PyTorch\'s numbers after the same seed, bit for bit (%s)'):format(dtn), function()
      torch.manual_seed(11)
      local g = torch._standard_gamma(rep3(P(GAMMA)))
      assert.equal(dt, g.dtype)
      same(list(g), want.gamma, 0, 'gamma')
      torch.manual_seed(12)
      same(list(torch.poisson(rep3(P(POISSON)))), want.poisson, 0, 'poisson')
      torch.manual_seed(13)
      same(list(torch.binomial(rep3(P(COUNT)), rep3(P(PROB)))), want.binomial, 0, 'binomial')
      torch.manual_seed(14)
      -- the rows are normalised by a double sum (PyTorch's own reduction): within an ulp of float64
      same(list(torch._sample_dirichlet(P(DIRICHLET))), want.dirichlet, dtn == 'float64' and 4e-16 or 0, 'dirichlet')
      torch.manual_seed(15)
      same(list(torch._standard_gamma(P({ { 0.5 }, { 4.0 } }):expand(2, 3))), want.gamma_expanded, 0, 'gamma expanded')
      torch.manual_seed(16)
      same(list(torch._standard_gamma(P({ { 0.5, 2.0 }, { 4.0, 9.0 }, { 1.0, 0.1 } }):t())), want.gamma_t, 0, 'gamma t()')
    end)

    it(('a generator argument draws from that generator (%s)'):format(dtn), function()
      local gen = torch.Generator():manual_seed(12)
      torch.manual_seed(99)
      same(list(torch.poisson(rep3(P(POISSON)), { generator = gen })), want.poisson, 0, 'poisson {generator=}')
      gen:manual_seed(11)
      same(list(torch._standard_gamma(rep3(P(GAMMA)), gen)), want.gamma, 0, 'gamma, generator positional')
    end)

    it(('reparameterized gradients equal PyTorch\'s (%s)'):format(dtn), function()
      local tol = dtn == 'float32' and 2e-6 or 1e-14
      same(list(torch._standard_gamma_grad(P(GG_ALPHA), P(GG_X))), want.gamma_grad, tol, '_standard_gamma_grad')
      same(list(torch._dirichlet_grad(P(DG_X), P(DG_ALPHA), P(DG_TOTAL))), want.dirichlet_grad, tol, '_dirichlet_grad')
      local a = P({ 0.4, 1.0, 2.5, 12.0 }):requires_grad_()
      torch.manual_seed(17)
      local x = torch._standard_gamma(a)
      assert.equal('StandardGammaBackward0', x.grad_fn:name())
      same(list(x), want.rsample_x, 0, 'rsample draws')
      x:mul(P({ 1.0, 2.0, 3.0, 4.0 })):sum():backward()
      same(list(a.grad), want.rsample_grad, tol, 'd draw / d alpha')
    end)
  end

  it('normal_ on a strided float64 tensor (the double normals the Gamma sampler takes) draws PyTorch\'s numbers', function()
    torch.manual_seed(21)
    local t = torch.empty(300, 2, { dtype = torch.float64 }):select(2, 1)
    t:normal_()
    same(list(t), W.normal_strided, 0, 'normal_ strided') -- r = sqrt(-2 log(1 - u)): log1p(-u) differs in ~3% of draws
  end)

  it('poisson is recorded with a zero gradient; binomial and _sample_dirichlet are not recorded', function()
    local r = torch.tensor({ 0.5, 30.0 }, { requires_grad = true })
    local p = torch.poisson(r)
    assert.equal('PoissonBackward0', p.grad_fn:name())
    p:sum():backward()
    assert.same({ 0, 0 }, list(r.grad))
    local c = torch.tensor({ 5.0 }, { requires_grad = true })
    assert.is_false(torch.binomial(c, torch.tensor({ 0.5 })).requires_grad)
    assert.is_false(torch._sample_dirichlet(torch.tensor({ 1.0, 2.0 }, { requires_grad = true })).requires_grad)
    -- under no_grad nothing is recorded
    torch.no_grad(function() assert.is_nil(torch._standard_gamma(c).grad_fn) end)
  end)

  it('errors name the op, in PyTorch\'s words', function()
    local function err(fn, msg)
      local ok, e = pcall(fn)
      assert(not ok, 'no error, want ' .. msg)
      assert.truthy(tostring(e):find(msg, 1, true), tostring(e))
    end
    err(function() torch.poisson(torch.tensor({ 1.0, -1.0 })) end, 'poisson: invalid Poisson rate, expected rate to be non-negative')
    err(function() torch.poisson(torch.tensor({ 0 / 0 })) end, 'poisson: invalid Poisson rate')
    err(function() torch.poisson(torch.tensor({ 1 }, { dtype = torch.int64 })) end, 'poisson: "poisson_cpu" not implemented for \'Long\'')
    err(function() torch._standard_gamma(torch.tensor({ 1 }, { dtype = torch.int64 })) end, '_standard_gamma: "gamma_cpu" not implemented for \'Long\'')
    err(function() torch._standard_gamma(torch.tensor({ 1 }, { dtype = torch.float16 })) end, '"gamma_cpu" not implemented for \'Half\'')
    err(function() torch._sample_dirichlet(torch.tensor({ 1 }, { dtype = torch.int64 })) end, '_sample_dirichlet: "dirichlet" not implemented for \'Long\'')
    err(function() torch.binomial(torch.tensor({ 1.0 }), torch.tensor({ 0.5 }, { dtype = torch.float64 })) end,
      'binomial: Found dtype Double but expected Float')
    err(function() torch.binomial(torch.tensor({ 1.0, 2.0 }), torch.tensor({ 0.5, 0.2, 0.1 })) end, 'binomial: The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0')
    err(function() torch.binomial(torch.tensor({ 1.0 }), 0.5) end, 'binomial: expected a tensor')
    err(function() torch.poisson(3) end, 'poisson: expected a tensor')
    err(function() torch.poisson(torch.tensor({ 1.0 }), { generator = 3 }) end, 'poisson: generator must be a torch.Generator')
    err(function() torch._standard_gamma_grad(torch.tensor({ 1.0 }), torch.tensor({ 1.0 }, { dtype = torch.float64 })) end,
      '_standard_gamma_grad: Found dtype Double but expected Float')
    -- the process is usable afterwards: the generator was not advanced by the failed poisson
    torch.manual_seed(12)
    pcall(torch.poisson, torch.tensor({ -1.0 }))
    same(list(torch.poisson(rep3(torch.tensor(POISSON, { dtype = torch.float64 })))), W.float64.poisson, 0, 'after an error')
  end)

  it('edge values: alpha 0 and NaN give the smallest normal; binomial count 0, prob 0 or 1, NaN prob; 0-d and empty tensors', function()
    local g = torch._standard_gamma(torch.tensor({ 0.0, 0 / 0, -1.0 }, { dtype = torch.float64 }))
    same(list(g), { 2.2250738585072014e-308, 2.2250738585072014e-308, 2.2250738585072014e-308 }, 0, 'gamma edges')
    local b = torch.binomial(torch.tensor({ 0.0, 5.0, 5.0, 5.0 }), torch.tensor({ 0.5, 0.0, 1.0, 0 / 0 }))
    same(list(b), { 0, 0, 5, 0 / 0 }, 0, 'binomial edges')
    assert.equal(0.99999994039535522461, torch._sample_dirichlet(torch.tensor(2.0)):item()) -- below 1, as PyTorch's
    assert.equal(0, torch.poisson(torch.empty(0)):numel())
    -- the far ends, as PyTorch's (a count beyond int64 reads as its smallest value, what its cast gives on x86-64)
    local f64 = function(v) return torch.tensor(v, { dtype = torch.float64 }) end
    torch.manual_seed(22)
    same(list(torch.poisson(f64({ math.huge, 1e30, 1e19, 5e18 }))), W.far.poisson, 0, 'poisson far')
    same(list(torch._standard_gamma(f64({ math.huge, 1e300 }))), W.far.gamma, 0, 'gamma far')
    same(list(torch.binomial(f64({ math.huge, 1e30, 10.0 }), f64({ 0.5, 0.5, 0 / 0 }))), W.far.binomial, 0, 'binomial far')
    assert.same({ 2, 0 }, list(torch.tensor(torch._standard_gamma(torch.empty(2, 0)):size())))
  end)

  it('moments of large samples (fixed seed): Gamma, Poisson, Binomial, Dirichlet', function()
    torch.manual_seed(1)
    local n = 20000
    local g = torch._standard_gamma(torch.full({ n }, 2.5, { dtype = torch.float64 }))
    assert.is_true(math.abs(g:mean():item() - 2.5) < 0.06 and math.abs(g:var():item() - 2.5) < 0.15)
    local gs = torch._standard_gamma(torch.full({ n }, 0.3, { dtype = torch.float64 }))
    assert.is_true(math.abs(gs:mean():item() - 0.3) < 0.02 and gs:min():item() > 0)
    local p = torch.poisson(torch.full({ n }, 25.0, { dtype = torch.float64 }))
    assert.is_true(math.abs(p:mean():item() - 25) < 0.2 and math.abs(p:var():item() - 25) < 1.5)
    assert.is_true(torch.equal(p, p:floor()))
    local b = torch.binomial(torch.full({ n }, 40.0, { dtype = torch.float64 }), torch.full({ n }, 0.7, { dtype = torch.float64 }))
    assert.is_true(math.abs(b:mean():item() - 28) < 0.1 and math.abs(b:var():item() - 8.4) < 0.5)
    assert.is_true(b:min():item() >= 0 and b:max():item() <= 40)
    local d = torch._sample_dirichlet(torch.tensor({ 1.0, 2.0, 3.0 }, { dtype = torch.float64 }):expand(n, 3))
    same(list(d:sum(-1)), list(torch.ones(n, { dtype = torch.float64 })), 1e-15, 'rows sum to 1')
    same(list(d:mean(1)), { 1 / 6, 2 / 6, 3 / 6 }, 0.01, 'dirichlet mean')
  end)
end)
