-- torch.distributions' Gamma family (Gamma, Chi2, Beta, Dirichlet, StudentT) and count distributions
-- (Poisson, Binomial, Multinomial, NegativeBinomial): PyTorch 1.13's values
-- (spec/support/distributions_gamma_wants.lua, written by spec/support/distributions_gamma_record.py with
-- /usr/bin/python3's torch 1.13): draws equal to PyTorch's after the same seed (the C samplers of
-- core/tensor/samplers.c), log_prob, entropy, moments, rsample's reparameterized gradients, KL of each
-- registered pair, shapes, validation and errors.
local H = require 'spec.support.helper'
local torch = H.torch
local D = torch.distributions
local W = dofile('spec/support/distributions_gamma_wants.lua')

local function list(t) return t:tolist() end -- (a number for a 0-d tensor)
local same = H.same_values -- nested arrays equal within tol

local function err(fn, msg)
  local ok, e = pcall(fn)
  assert(not ok, 'no error, want: ' .. msg)
  assert(tostring(e):find(msg, 1, true), tostring(e))
end

local function P(vals, dt) return torch.tensor(vals, { dtype = dt }) end

-- the spec's cases: the same parameters and points as distributions_gamma_record.py
local CASES = {
  gamma = { function(dt) return D.Gamma(P({ 0.5, 2.0, 5.0 }, dt), P({ 1.0, 0.5, 3.0 }, dt)) end, { 0.3, 1.0, 4.0 } },
  chi2 = { function(dt) return D.Chi2(P({ 0.5, 3.0, 10.0 }, dt)) end, { 0.3, 1.0, 4.0 } },
  beta = { function(dt) return D.Beta(P({ 0.5, 2.0, 3.0 }, dt), P({ 1.5, 3.0, 0.8 }, dt)) end, { 0.3, 0.8, 0.999 } },
  dirichlet = { function(dt) return D.Dirichlet(P({ { 0.5, 2.0, 1.0 }, { 3.0, 0.7, 0.2 } }, dt)) end, { { 0.2, 0.5, 0.3 }, { 0.6, 0.1, 0.3 } } },
  dirichlet_small = { function(dt) return D.Dirichlet(P({ 0.5, 0.7, 0.2 }, dt)) end, { 0.2, 0.5, 0.3 } },
  studentt = { function(dt) return D.StudentT(P({ 0.5, 1.5, 5.0 }, dt), P({ 0.0, 1.0, -2.0 }, dt), P({ 1.0, 2.0, 0.5 }, dt)) end, { 0.3, 1.0, -4.0 } },
  poisson = { function(dt) return D.Poisson(P({ 0.5, 4.0, 25.0 }, dt)) end, { 0.0, 3.0, 20.0 } },
  binomial = { function(dt) return D.Binomial(P({ 10.0, 10.0, 10.0 }, dt), P({ 0.3, 0.5, 0.95 }, dt)) end, { 3.0, 0.0, 10.0 } },
  binomial_logits = { function(dt) return D.Binomial { total_count = P({ 5.0, 40.0, 7.0 }, dt), logits = P({ -1.0, 0.5, 2.0 }, dt) } end, { 1.0, 20.0, 7.0 } },
  multinomial = { function(dt) return D.Multinomial(6, P({ { 0.2, 0.3, 0.5 }, { 0.6, 0.0, 0.4 } }, dt)) end, { { 1.0, 2.0, 3.0 }, { 2.0, 0.0, 4.0 } } },
  negbinomial = { function(dt) return D.NegativeBinomial(P({ 3.0, 5.0, 0.5 }, dt), P({ 0.3, 0.6, 0.1 }, dt)) end, { 2.0, 0.0, 7.0 } },
  pareto = { function(dt) return D.Pareto(P({ 1.0, 2.0, 0.5 }, dt), P({ 0.5, 3.0, 2.5 }, dt)) end, { 2.5, 3.0, 0.7 } },
  weibull = { function(dt) return D.Weibull(P({ 1.0, 2.0, 0.5 }, dt), P({ 0.5, 3.0, 1.5 }, dt)) end, { 0.5, 2.5, 0.1 } },
  kumaraswamy = { function(dt) return D.Kumaraswamy(P({ 1.0, 2.0, 0.5 }, dt), P({ 0.5, 3.0, 1.5 }, dt)) end, { 0.5, 0.9, 0.1 } },
  fishersnedecor = { function(dt) return D.FisherSnedecor(P({ 1.0, 5.0, 3.0 }, dt), P({ 3.0, 6.0, 4.5 }, dt)) end, { 0.5, 2.5, 1.0 } },
  contbernoulli = { function(dt) return D.ContinuousBernoulli(P({ 0.2, 0.5, 0.4995 }, dt)) end, { 0.5, 0.9, 0.1 } },
  contbernoulli_logits = { function(dt) return D.ContinuousBernoulli { logits = P({ -1.0, 0.0, 3.0 }, dt) } end, { 0.3, 0.0, 1.0 } },
  vonmises = { function(dt) return D.VonMises(P({ 0.0, 1.0, -2.0 }, dt), P({ 0.5, 3.0, 20.0 }, dt)) end, { 0.5, 2.5, -3.0 } },
  relaxed_bernoulli = { function(dt) return D.RelaxedBernoulli(P(0.5, dt), P({ 0.2, 0.7, 0.5 }, dt)) end, { 0.3, 0.9, 0.5 } },
  relaxed_bernoulli_logits = { function(dt) return D.RelaxedBernoulli { temperature = P(2.0, dt), logits = P({ -1.0, 0.0, 3.0 }, dt) } end, { 0.3, 0.9, 0.5 } },
  relaxed_onehot = { function(dt) return D.RelaxedOneHotCategorical(P(0.7, dt), P({ { 0.2, 0.3, 0.5 }, { 0.6, 0.3, 0.1 } }, dt)) end, { { 0.2, 0.3, 0.5 }, { 0.1, 0.1, 0.8 } } },
  mixture = { function(dt)
    return D.MixtureSameFamily(D.Categorical(P({ { 0.3, 0.7 }, { 0.5, 0.5 }, { 0.9, 0.1 } }, dt)),
      D.Normal(P({ { -1.0, 2.0 }, { 0.0, 1.0 }, { 3.0, -3.0 } }, dt), P({ { 0.5, 1.0 }, { 1.0, 2.0 }, { 0.3, 0.4 } }, dt)))
  end, { 0.0, 1.5, -1.0 } },
  logistic_normal = { function(dt) return D.LogisticNormal(P({ { 0.0, 1.0 }, { 0.5, -1.0 } }, dt), P({ { 1.0, 0.5 }, { 2.0, 1.0 } }, dt)) end, { 0.2, 0.3, 0.5 } },
  negbinomial_logits = { function(dt) return D.NegativeBinomial(P({ 3.0, 12.0, 1.0 }, dt), nil, P({ -1.0, 0.5, 2.0 }, dt)) end, { 4.0, 10.0, 0.0 } },
}
-- draws that pass through a float64 sum (Dirichlet, Beta) or rsqrt (StudentT): within an ulp or two
-- or through exp, log, pow, acos of the vector library (the transformed ones, ContinuousBernoulli's icdf, VonMises)
local ROUNDED_DRAWS = { beta = true, dirichlet = true, dirichlet_small = true, studentt = true, pareto = true, weibull = true,
  kumaraswamy = true, fishersnedecor = true, contbernoulli = true, contbernoulli_logits = true, vonmises = true,
  relaxed_bernoulli = true, relaxed_bernoulli_logits = true, relaxed_onehot = true, logistic_normal = true }

describe('torch.distributions: the Gamma family and counts', function()
  for _, dtn in ipairs { 'float32', 'float64' } do
    local dt = torch[dtn]
    local tol = dtn == 'float32' and 4e-6 or 1e-13
    for name, case in pairs(CASES) do
      it(('%s in %s: draws as PyTorch\'s after the same seed, log_prob, entropy, mean, mode, variance'):format(name, dtn), function()
        local want = W[dtn][name]
        local d = case[1](dt)
        torch.manual_seed(7)
        local s = d:sample({ 4 })
        local draw_tol = ROUNDED_DRAWS[name] and (dtn == 'float64' and 1e-15 or 3e-7) or 0
        same(list(s), want.sample, draw_tol, name .. ' sample')
        assert.equal(dt, s.dtype)
        assert.is_false(s.requires_grad)
        if want.rsample then
          assert.is_true(d.has_rsample)
          torch.manual_seed(7)
          same(list(d:rsample(2)), want.rsample, draw_tol, name .. ' rsample')
        else
          assert.is_false(d.has_rsample)
        end
        same(list(d:log_prob(P(case[2], dt))), want.log_prob, tol, name .. ' log_prob')
        if want.entropy then same(list(d:entropy()), want.entropy, tol, name .. ' entropy') end
        if want.cdf then same(list(d:cdf(P(case[2], dt))), want.cdf, tol, name .. ' cdf') end
        if want.icdf then same(list(d:icdf(P({ 0.1, 0.5, 0.975 }, dt))), want.icdf, tol, name .. ' icdf') end
        for _, prop in ipairs { 'mean', 'mode', 'variance' } do
          if want[prop] then same(list(d[prop]), want[prop], tol, name .. ' ' .. prop) end
        end
      end)
    end
  end

  it('rsample is differentiable in every parameter: the implicit reparameterization gradients of torch 1.13', function()
    local f = function(v) return torch.tensor(v, { dtype = torch.float64, requires_grad = true }) end
    local function check(name, make, params, weights)
      torch.manual_seed(3)
      local x = make(unpack(params)):rsample(2)
      x:mul(torch.tensor(weights, { dtype = torch.float64 })):sum():backward()
      local want = W[name .. '_grad']
      same(list(x), want.x, 1e-15, name .. ' draws')
      for i, p in ipairs(params) do same(list(p.grad), want['g' .. i], 1e-12, name .. ' gradient ' .. i) end
    end
    check('gamma', D.Gamma, { f({ 0.5, 2.0, 9.0 }), f({ 1.0, 0.5, 3.0 }) }, { 1.0, 2.0, 3.0 })
    check('chi2', D.Chi2, { f({ 0.5, 3.0, 10.0 }) }, { 1.0, 2.0, 3.0 })
    check('beta', D.Beta, { f({ 0.5, 2.0, 8.0 }), f({ 1.5, 3.0, 7.0 }) }, { 1.0, 2.0, 3.0 })
    check('dirichlet', D.Dirichlet, { f({ { 0.5, 2.0, 1.0 }, { 3.0, 0.7, 0.2 } }) }, { { 1.0, 2.0, 3.0 }, { 4.0, 5.0, 6.0 } })
    check('studentt', D.StudentT, { f({ 1.5, 3.0, 10.0 }), f({ 0.0, 1.0, -2.0 }), f({ 1.0, 2.0, 0.5 }) }, { 1.0, 2.0, 3.0 })
    check('kumaraswamy', D.Kumaraswamy, { f({ 0.5, 2.0, 3.0 }), f({ 1.5, 3.0, 0.7 }) }, { 1.0, 2.0, 3.0 })
    check('fishersnedecor', D.FisherSnedecor, { f({ 1.0, 5.0, 3.0 }), f({ 3.0, 6.0, 4.5 }) }, { 1.0, 2.0, 3.0 })
    check('weibull', D.Weibull, { f({ 1.0, 2.0, 0.5 }), f({ 0.5, 3.0, 1.5 }) }, { 1.0, 2.0, 3.0 })
    check('pareto', D.Pareto, { f({ 1.0, 2.0, 0.5 }), f({ 0.5, 3.0, 2.5 }) }, { 1.0, 2.0, 3.0 })
    check('contbernoulli', D.ContinuousBernoulli, { f({ 0.2, 0.7, 0.4 }) }, { 1.0, 2.0, 3.0 })
    check('relaxed_bernoulli', function(t, l) return D.RelaxedBernoulli(t, nil, l) end, { f(0.5), f({ -1.0, 0.0, 3.0 }) }, { 1.0, 2.0, 3.0 })
    check('relaxed_onehot', function(t, l) return D.RelaxedOneHotCategorical(t, nil, l) end, { f(0.7), f({ -1.0, 0.0, 3.0 }) }, { 1.0, 2.0, 3.0 })
    check('lowrank', D.LowRankMultivariateNormal, { f({ 1.0, -1.0, 0.5 }), f({ { 1.0, 0.5 }, { 0.2, -0.3 }, { 0.7, 1.1 } }), f({ 0.5, 1.5, 0.8 }) }, { 1.0, 2.0, 3.0 })
    check('logistic_normal', D.LogisticNormal, { f({ 0.0, 1.0 }), f({ 1.0, 0.5 }) }, { 1.0, 2.0, 3.0 })
    -- the nodes PyTorch's graph has
    local a = f({ 1.0, 2.0 })
    assert.equal('DivBackward0', D.Gamma(a, 1.0):rsample().grad_fn:name())
    assert.equal('StandardGammaBackward0', D.Gamma(a, 1.0):rsample().grad_fn.next_functions[1][1]:name())
    assert.equal('_DirichletBackward', D.Dirichlet(a):rsample().grad_fn:name())
    assert.equal('SelectBackward0', D.Beta(a, 1.0):rsample().grad_fn:name())
    -- log_prob's gradient
    local c1, c0 = f({ 0.5, 2.0 }), f({ 1.5, 3.0 })
    D.Beta(c1, c0):log_prob(torch.tensor({ 0.3, 0.8 }, { dtype = torch.float64 })):sum():backward()
    same(list(c1.grad), W.beta_log_prob_grad[1], 1e-12, 'beta log_prob d/dconcentration1')
    same(list(c0.grad), W.beta_log_prob_grad[2], 1e-12, 'beta log_prob d/dconcentration0')
    -- log_prob's gradients in every parameter
    local function lp(name, make, params, x)
      make(unpack(params)):log_prob(torch.tensor(x, { dtype = torch.float64 })):sum():backward()
      local want = W[name .. '_lp_grad']
      local k = 0
      for _, p in ipairs(params) do
        if p.requires_grad then
          k = k + 1
          same(list(p.grad), want[k], 1e-11, name .. ' log_prob gradient ' .. k)
        end
      end
      assert.equal(#want, k, name .. ': gradients')
    end
    local c = function(v) return torch.tensor(v, { dtype = torch.float64 }) end
    lp('gamma', D.Gamma, { f({ 0.5, 2.0, 5.0 }), f({ 1.0, 0.5, 3.0 }) }, { 0.3, 1.0, 4.0 })
    lp('chi2', D.Chi2, { f({ 0.5, 3.0, 10.0 }) }, { 0.3, 1.0, 4.0 })
    lp('dirichlet', D.Dirichlet, { f({ { 0.5, 2.0, 1.0 }, { 3.0, 0.7, 0.2 } }) }, { { 0.2, 0.5, 0.3 }, { 0.6, 0.1, 0.3 } })
    lp('studentt', D.StudentT, { f({ 0.5, 1.5, 5.0 }), f({ 0.0, 1.0, -2.0 }), f({ 1.0, 2.0, 0.5 }) }, { 0.3, 1.0, -4.0 })
    lp('poisson', D.Poisson, { f({ 0.5, 4.0, 25.0 }) }, { 0.0, 3.0, 20.0 })
    lp('binomial', D.Binomial, { c({ 10.0, 10.0, 10.0 }), f({ 0.3, 0.5, 0.95 }) }, { 3.0, 0.0, 10.0 })
    lp('binomial_logits', function(n, l) return D.Binomial(n, nil, l) end, { c({ 5.0, 40.0, 7.0 }), f({ -1.0, 0.5, 2.0 }) }, { 1.0, 20.0, 7.0 })
    lp('negbinomial', D.NegativeBinomial, { f({ 3.0, 5.0, 0.5 }), f({ 0.3, 0.6, 0.1 }) }, { 2.0, 0.0, 7.0 })
    lp('multinomial', function(p) return D.Multinomial(6, p) end, { f({ { 0.2, 0.3, 0.5 }, { 0.6, 0.1, 0.3 } }) }, { { 1.0, 2.0, 3.0 }, { 2.0, 0.0, 4.0 } })
    lp('vonmises', D.VonMises, { f({ 0.0, 1.0, -2.0 }), f({ 0.5, 3.0, 20.0 }) }, { 0.5, 2.5, -3.0 })
    lp('kumaraswamy', D.Kumaraswamy, { f({ 1.0, 2.0, 0.5 }), f({ 0.5, 3.0, 1.5 }) }, { 0.5, 0.9, 0.1 })
    lp('contbernoulli', D.ContinuousBernoulli, { f({ 0.2, 0.5, 0.7 }) }, { 0.5, 0.9, 0.1 })
    -- sample() records nothing; the count distributions have no rsample
    assert.is_nil(D.Gamma(a, 1.0):sample().grad_fn)
    err(function() D.Poisson(a):rsample() end, 'distributions.Poisson.rsample: Poisson has no reparameterized sampler')
  end)

  it('kl_divergence of each registered pair (torch 1.13\'s values; inf where q has no mass)', function()
    local f = function(v) return torch.tensor(v, { dtype = torch.float64 }) end
    local KL = {
      gamma = { D.Gamma(f({ 0.5, 2.0 }), f({ 1.0, 3.0 })), D.Gamma(f({ 1.5, 2.0 }), f({ 0.5, 1.0 })) },
      chi2_gamma = { D.Chi2(f({ 3.0, 1.0 })), D.Gamma(f({ 1.5, 2.0 }), f({ 0.5, 1.0 })) },
      beta = { D.Beta(f({ 0.5, 2.0 }), f({ 1.5, 3.0 })), D.Beta(f({ 1.0, 4.0 }), f({ 2.0, 0.5 })) },
      dirichlet = { D.Dirichlet(f({ { 0.5, 2.0, 1.0 }, { 3.0, 0.7, 0.2 } })), D.Dirichlet(f({ 1.0, 1.0, 2.0 })) },
      poisson = { D.Poisson(f({ 0.5, 4.0 })), D.Poisson(f({ 1.0, 3.0 })) },
      binomial = { D.Binomial(f({ 10.0, 12.0 }), f({ 0.3, 0.6 })), D.Binomial(f({ 10.0, 10.0 }), f({ 0.5, 0.2 })) },
      exponential_gamma = { D.Exponential(f({ 1.0, 3.0 })), D.Gamma(f({ 1.5, 2.0 }), f({ 0.5, 1.0 })) },
      gamma_exponential = { D.Gamma(f({ 1.5, 2.0 }), f({ 0.5, 1.0 })), D.Exponential(f({ 1.0, 3.0 })) },
      gamma_normal = { D.Gamma(f({ 1.5, 2.0 }), f({ 0.5, 1.0 })), D.Normal(f({ 0.0, 1.0 }), f({ 1.0, 2.0 })) },
      gamma_gumbel = { D.Gamma(f({ 1.5, 2.0 }), f({ 0.5, 1.0 })), D.Gumbel(f({ 0.0, 1.0 }), f({ 1.0, 2.0 })) },
      beta_exponential = { D.Beta(f({ 0.5, 2.0 }), f({ 1.5, 3.0 })), D.Exponential(f({ 1.0, 3.0 })) },
      beta_gamma = { D.Beta(f({ 0.5, 2.0 }), f({ 1.5, 3.0 })), D.Gamma(f({ 1.5, 2.0 }), f({ 0.5, 1.0 })) },
      beta_normal = { D.Beta(f({ 0.5, 2.0 }), f({ 1.5, 3.0 })), D.Normal(f({ 0.0, 1.0 }), f({ 1.0, 2.0 })) },
      beta_uniform = { D.Beta(f({ 0.5, 2.0 }), f({ 1.5, 3.0 })), D.Uniform(f({ 0.0, 0.1 }), f({ 1.0, 2.0 })) },
      uniform_beta = { D.Uniform(f({ 0.1, 0.2 }), f({ 0.5, 1.5 })), D.Beta(f({ 0.5, 2.0 }), f({ 1.5, 3.0 })) },
      uniform_gamma = { D.Uniform(f({ 0.1, -0.2 }), f({ 0.5, 1.5 })), D.Gamma(f({ 1.5, 2.0 }), f({ 0.5, 1.0 })) },
      bernoulli_poisson = { D.Bernoulli(f({ 0.3, 0.9 })), D.Poisson(f({ 1.0, 3.0 })) },
      gamma_beta = { D.Gamma(f({ 1.5, 2.0 }), f({ 0.5, 1.0 })), D.Beta(f({ 0.5, 2.0 }), f({ 1.5, 3.0 })) },
      normal_gamma = { D.Normal(f({ 0.0, 1.0 }), f({ 1.0, 2.0 })), D.Gamma(f({ 1.5, 2.0 }), f({ 0.5, 1.0 })) },
      pareto = { D.Pareto(f({ 1.0, 2.0 }), f({ 0.5, 3.0 })), D.Pareto(f({ 0.5, 3.0 }), f({ 1.5, 2.0 })) },
      contbernoulli = { D.ContinuousBernoulli(f({ 0.2, 0.7 })), D.ContinuousBernoulli(f({ 0.5, 0.1 })) },
      beta_contbernoulli = { D.Beta(f({ 0.5, 2.0 }), f({ 1.5, 3.0 })), D.ContinuousBernoulli(f({ 0.2, 0.7 })) },
      contbernoulli_exponential = { D.ContinuousBernoulli(f({ 0.2, 0.7 })), D.Exponential(f({ 1.0, 3.0 })) },
      contbernoulli_normal = { D.ContinuousBernoulli(f({ 0.2, 0.7 })), D.Normal(f({ 0.0, 1.0 }), f({ 1.0, 2.0 })) },
      contbernoulli_uniform = { D.ContinuousBernoulli(f({ 0.2, 0.7 })), D.Uniform(f({ -1.0, 0.5 }), f({ 2.0, 3.0 })) },
      uniform_contbernoulli = { D.Uniform(f({ 0.1, 0.2 }), f({ 0.5, 1.5 })), D.ContinuousBernoulli(f({ 0.2, 0.7 })) },
      pareto_exponential = { D.Pareto(f({ 1.0, 2.0 }), f({ 0.5, 3.0 })), D.Exponential(f({ 1.0, 3.0 })) },
      pareto_gamma = { D.Pareto(f({ 1.0, 2.0 }), f({ 1.5, 3.0 })), D.Gamma(f({ 1.5, 2.0 }), f({ 0.5, 1.0 })) },
      pareto_normal = { D.Pareto(f({ 1.0, 2.0 }), f({ 1.5, 3.0 })), D.Normal(f({ 0.0, 1.0 }), f({ 1.0, 2.0 })) },
      uniform_pareto = { D.Uniform(f({ 1.5, 0.2 }), f({ 2.5, 1.5 })), D.Pareto(f({ 1.0, 0.5 }), f({ 1.5, 2.0 })) },
      normal_pareto = { D.Normal(f({ 0.0, 1.0 }), f({ 1.0, 2.0 })), D.Pareto(f({ 1.0, 0.5 }), f({ 1.5, 2.0 })) },
      poisson_binomial = { D.Poisson(f({ 1.0, 3.0 })), D.Binomial(f({ 10.0, 10.0 }), f({ 0.5, 0.2 })) },
    }
    for name, pq in pairs(KL) do
      same(list(D.kl_divergence(pq[1], pq[2])), W.kl[name], 1e-12, 'kl ' .. name)
    end
    err(function() D.kl_divergence(D.Binomial(f({ 5.0 }), f({ 0.5 })), D.Binomial(f({ 10.0 }), f({ 0.5 }))) end,
      'KL between Binomials where q.total_count > p.total_count is not implemented')
  end)

  it('LowRankMultivariateNormal: draws as PyTorch\'s, log_prob, entropy, the derived matrices, KL with MultivariateNormal', function()
    for _, dtn in ipairs { 'float32', 'float64' } do
      local dt, want = torch[dtn], W['lowrank_' .. dtn]
      local tol = dtn == 'float32' and 4e-6 or 1e-12
      local d = D.LowRankMultivariateNormal(P({ { 1.0, -1.0, 0.5 }, { 0.0, 2.0, -0.5 } }, dt),
        P({ { 1.0, 0.5 }, { 0.2, -0.3 }, { 0.7, 1.1 } }, dt), P({ 0.5, 1.5, 0.8 }, dt))
      assert.equal(torch.Size({ 2 }), d.batch_shape)
      assert.equal(torch.Size({ 3 }), d.event_shape)
      torch.manual_seed(5)
      same(list(d:sample(2)), want.sample, dtn == 'float32' and 1e-6 or 1e-14, 'lowrank sample ' .. dtn)
      torch.manual_seed(5)
      same(list(d:rsample(2)), want.rsample, dtn == 'float32' and 1e-6 or 1e-14, 'lowrank rsample ' .. dtn)
      same(list(d:log_prob(P({ { 0.5, 0.5, 0.0 }, { 1.0, -1.0, 2.0 } }, dt))), want.log_prob, tol, 'lowrank log_prob')
      same(list(d:entropy()), want.entropy, tol, 'lowrank entropy')
      same(list(d.variance), want.variance, tol, 'lowrank variance')
      same(list(d.covariance_matrix[1]), want.covariance, tol, 'lowrank covariance')
      same(list(d.precision_matrix[1]), want.precision, tol, 'lowrank precision')
      same(list(d.scale_tril[1]), want.scale_tril, tol, 'lowrank scale_tril')
      assert.equal(torch.Size({ 4, 2, 3 }), d:expand({ 4, 2 }):sample():size())
    end
    local f = function(v) return torch.tensor(v, { dtype = torch.float64 }) end
    local p = D.LowRankMultivariateNormal(f({ { 1.0, -1.0, 0.5 } }), f({ { 1.0, 0.5 }, { 0.2, -0.3 }, { 0.7, 1.1 } }), f({ 0.5, 1.5, 0.8 }))
    local q = D.LowRankMultivariateNormal(f({ 0.0, 2.0, -0.5 }), f({ { 0.3 }, { 1.0 }, { -0.4 } }), f({ 1.0, 0.7, 2.0 }))
    local mv = D.MultivariateNormal(f({ 0.5, 0.0, 1.0 }), f({ { 2.0, 0.3, 0.1 }, { 0.3, 1.0, -0.2 }, { 0.1, -0.2, 1.5 } }))
    same(list(D.kl_divergence(p, q)), W.lowrank_kl.lr_lr, 1e-12, 'kl lowrank lowrank')
    same(list(D.kl_divergence(mv, q)), W.lowrank_kl.mvn_lr, 1e-12, 'kl mvn lowrank')
    same(list(D.kl_divergence(p, mv)), W.lowrank_kl.lr_mvn, 1e-12, 'kl lowrank mvn')
    err(function() D.LowRankMultivariateNormal(f({ 1.0, 2.0 }), f({ { 1.0 }, { 2.0 }, { 3.0 } }), f({ 1.0, 1.0 })) end,
      'distributions.LowRankMultivariateNormal: cov_factor must be a batch of matrices with shape 2 x m')
    err(function() D.LowRankMultivariateNormal(f({ 1.0, 2.0 }), f({ { 1.0 }, { 0.1 } }), f({ 1.0, -100.0 })) end,
      'constraint IndependentConstraint(GreaterThan(lower_bound=0.0), 1)')
    -- (as PyTorch, the capacitance matrix is factored before the validation)
    err(function() D.LowRankMultivariateNormal(f({ 1.0, 2.0 }), f({ { 1.0 }, { 2.0 } }), f({ 1.0, -1.0 })) end,
      'linalg.cholesky: The factorization could not be completed because the input is not positive-definite')
  end)

  it('shapes: batch and event shapes, expand, sample shapes, enumerate_support', function()
    local d = D.Dirichlet(torch.ones(4, 3))
    assert.equal(torch.Size({ 4 }), d.batch_shape)
    assert.equal(torch.Size({ 3 }), d.event_shape)
    assert.equal(torch.Size({ 2, 5, 4, 3 }), d:sample({ 2, 5 }):size())
    local e = d:expand({ 2, 4 })
    assert.equal(torch.Size({ 2, 4, 3 }), e:rsample():size())
    assert.equal(torch.Size({ 2, 4 }), e:log_prob(torch.full({ 3 }, 1 / 3)):size())
    assert.equal(torch.Size({}), D.Gamma(2.0, 1.0).batch_shape)
    assert.equal(torch.get_default_dtype(), D.Gamma(2.0, 1.0):sample().dtype)
    assert.equal(torch.Size({ 3 }), D.Gamma(2.0, 1.0):sample(3):size())
    assert.equal(torch.Size({ 2, 3 }), D.Gamma(torch.ones(3), 1.0):expand({ 2, 3 }):sample():size())
    assert.equal(getmetatable(D.Chi2(3.0)), getmetatable(D.Chi2(torch.ones(2)):expand({ 2 })))
    assert.equal(torch.Size({ 5, 2 }), D.Beta(torch.ones(2), 2.0):expand({ 5, 2 }):sample():size())
    assert.equal(torch.Size({ 2, 3 }), D.StudentT(torch.ones(3)):expand({ 2, 3 }):rsample():size())
    local m = D.Multinomial(4, torch.ones(2, 3))
    assert.equal(torch.Size({ 2 }), m.batch_shape)
    assert.equal(torch.Size({ 3 }), m.event_shape)
    local ms = m:sample(5)
    assert.equal(torch.Size({ 5, 2, 3 }), ms:size())
    assert.is_true(ms:sum(-1):eq(4):all())
    assert.equal(torch.Size({ 7, 2, 3 }), m:expand({ 7, 2 }):sample():size())
    local b = D.Binomial(torch.tensor({ 3.0, 3.0 }), torch.tensor({ 0.2, 0.5 }, { dtype = torch.float64 }))
    same(list(b:enumerate_support()), W.binomial_support, 0, 'binomial enumerate_support')
    assert.equal(torch.Size({ 4, 1 }), b:enumerate_support(false):size())
    assert.is_true(b.has_enumerate_support)
    assert.equal(torch.float64, b.total_count.dtype) -- total_count takes the parameter's dtype
    assert.equal(torch.Size({ 3, 2 }), D.Poisson(torch.ones(2)):expand({ 3, 2 }):sample():size())
    assert.equal(torch.Size({ 4, 2 }), D.NegativeBinomial(torch.ones(2), torch.full({ 2 }, 0.5)):sample(4):size())
    assert.equal('IntegerInterval(lower_bound=0, upper_bound=tensor([3., 3.]))', tostring(D.Binomial(torch.tensor({ 3.0, 3.0 }), 0.5).support))
    assert.equal('Multinomial()', tostring(m.support))
    assert.equal('Chi2()', tostring(D.Chi2(3.0)))
    assert.equal('Gamma(concentration: 2.0, rate: 1.0)', tostring(D.Gamma(2.0, 1.0)))
    -- LogisticNormal: the stick breaking takes the Normal's last batch dimension as its event, one longer
    local ln = D.LogisticNormal(torch.zeros(4, 2), 1.0)
    assert.equal(torch.Size({ 4 }), ln.batch_shape)
    assert.equal(torch.Size({ 3 }), ln.event_shape)
    assert.equal(torch.Size({ 5, 4, 3 }), ln:rsample(5):size())
    assert.equal(torch.Size({ 2, 4, 3 }), ln:expand({ 2, 4 }):sample():size())
    assert.equal(torch.Size({ 2 }), D.LogisticNormal(0.0, 1.0).event_shape)
    local T = D.transforms
    local sb = T.StickBreakingTransform()
    local y = sb(torch.tensor({ 0.3, -1.2, 2.0 }, { dtype = torch.float64 }))
    same(list(y:sum()), 1, 1e-15, 'stick breaking sums to 1')
    same(list(sb.inv(y)), { 0.3, -1.2, 2.0 }, 1e-12, 'stick breaking inverse')
  end)

  it('validation and errors in PyTorch\'s words, naming the distribution', function()
    err(function() D.Gamma(-1.0, 1.0) end,
      'Expected parameter concentration (Tensor of shape ()) of distribution Gamma(concentration: -1.0, rate: 1.0) to satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid values:\n-1.0')
    err(function() D.Chi2(torch.tensor({ 1.0, -2.0 })) end, 'Expected parameter df (Tensor of shape (2,)) of distribution Chi2() to satisfy the constraint GreaterThan(lower_bound=0.0)')
    err(function() D.Beta(torch.tensor({ 1.0, -2.0 }), 1.0) end, 'distributions.Dirichlet: Expected parameter concentration (Tensor of shape (2, 2)) of distribution Dirichlet(concentration: torch.Size([2, 2]))')
    err(function() D.Dirichlet(torch.tensor(1.0)) end, 'distributions.Dirichlet: `concentration` parameter must be at least one-dimensional.')
    err(function() D.Dirichlet(3) end, 'distributions.Dirichlet: expected concentration as a tensor, got number')
    err(function() D.StudentT(-1.0) end, 'distributions.Chi2: Expected parameter df')
    err(function() D.Poisson(-1.0) end, 'constraint GreaterThanEq(lower_bound=0.0)')
    err(function() D.Binomial(10, 0.5, 0.0) end, 'distributions.Binomial: Either `probs` or `logits` must be specified, but not both.')
    err(function() D.Binomial(2.5, 0.5) end, 'Expected parameter total_count (Tensor of shape ()) of distribution Binomial(total_count: 2.5, probs: 0.5) to satisfy the constraint IntegerGreaterThan(lower_bound=0)')
    err(function() D.Binomial(3, 1.5) end, 'constraint Interval(lower_bound=0.0, upper_bound=1.0)')
    err(function() D.Multinomial(2.5, torch.ones(3)) end, 'distributions.Multinomial: inhomogeneous total_count is not supported')
    err(function() D.NegativeBinomial(3.0, 1.0) end, 'constraint HalfOpenInterval(lower_bound=0.0, upper_bound=1.0)')
    err(function() D.NegativeBinomial(nil, 0.5) end, 'distributions.NegativeBinomial: expected total_count')
    err(function() D.Gamma { concentration = 1.0, rte = 2.0 } end, "distributions.Gamma: unknown option 'rte'")
    -- values outside the support
    err(function() D.Gamma(2.0, 1.0):log_prob(torch.tensor(-1.0)) end,
      'distributions.Gamma.log_prob: Expected value argument (Tensor of shape ()) to be within the support (GreaterThanEq(lower_bound=0.0)) of the distribution Gamma(concentration: 2.0, rate: 1.0), but found invalid values:\n-1.0')
    err(function() D.Beta(2.0, 1.0):log_prob(torch.tensor(1.5)) end, 'within the support (Interval(lower_bound=0.0, upper_bound=1.0))')
    err(function() D.Poisson(2.0):log_prob(torch.tensor(1.5)) end, 'within the support (IntegerGreaterThan(lower_bound=0))')
    err(function() D.Binomial(3, 0.5):log_prob(torch.tensor(4.0)) end, 'within the support (IntegerInterval(lower_bound=0, upper_bound=3.0))')
    err(function() D.Dirichlet(torch.ones(3)):log_prob(torch.tensor({ 0.5, 0.6, 0.1 })) end, 'within the support (Simplex())')
    err(function() D.Multinomial(3, torch.ones(3)):log_prob(torch.tensor({ 2.0, 2.0, 0.0 })) end, 'within the support (Multinomial())')
    err(function() D.Binomial(torch.tensor({ 2.0, 3.0 }), 0.5):entropy() end, 'Inhomogeneous total count not supported by `entropy`.')
    -- validate_args = false skips the checks
    assert.is_true(D.Gamma(-1.0, 1.0, { validate_args = false }):log_prob(torch.tensor(1.0)):item() ~= nil)
  end)
end)
