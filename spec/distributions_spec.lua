-- torch.distributions (lua/distributions/): PyTorch 1.13's values (spec/support/distributions_wants.lua,
-- written by spec/support/distributions_record.py with /usr/bin/python3's torch 1.13), draws equal to
-- PyTorch's after the same seed (float32 and float64: the same generator calls in the same order),
-- gradients through rsample and log_prob, KL of each registered pair, shapes, validation and errors.
local H = require 'spec.support.helper'
local torch = H.torch
local D = torch.distributions
local W = dofile('spec/support/distributions_wants.lua')

local function list(t) return t:tolist() end -- (a number for a 0-d tensor)
local same = H.same_values -- nested arrays equal within tol

local function P(vals, dt) return torch.tensor(vals, { dtype = dt }) end

local function plus_one(t)
  if type(t) == 'table' then
    local out = {}
    for i, v in ipairs(t) do out[i] = plus_one(v) end
    return out
  end
  return t + 1
end

-- the spec's cases: the same parameters and points as distributions_record.py
local CASES = {
  normal = { function(dt) return D.Normal(P({ 0.0, 1.5, -2.0 }, dt), P({ 1.0, 0.5, 3.0 }, dt)) end, { 0.3, 1.0, -4.0 }, { 0.1, 0.5, 0.975 } },
  uniform = { function(dt) return D.Uniform(P({ 0.0, -1.0, 2.0 }, dt), P({ 1.0, 3.0, 2.5 }, dt)) end, { 0.3, 2.9, 2.25 }, { 0.1, 0.5, 0.975 } },
  exponential = { function(dt) return D.Exponential(P({ 0.5, 1.0, 4.0 }, dt)) end, { 0.3, 1.0, 4.0 }, { 0.1, 0.5, 0.975 } },
  laplace = { function(dt) return D.Laplace(P({ 0.0, 1.5, -2.0 }, dt), P({ 1.0, 0.5, 3.0 }, dt)) end, { 0.3, 1.0, -4.0 }, { 0.1, 0.5, 0.975 } },
  bernoulli = { function(dt) return D.Bernoulli(P({ 0.1, 0.5, 0.9 }, dt)) end, { 0.0, 1.0, 1.0 } },
  bernoulli_logits = { function(dt) return D.Bernoulli { logits = P({ -2.0, 0.0, 3.0 }, dt) } end, { 1.0, 0.0, 1.0 } },
  categorical = { function(dt) return D.Categorical(P({ { 0.1, 0.2, 0.7 }, { 0.5, 0.25, 0.25 } }, dt)) end, { 3, 1 } },
  categorical_logits = { function(dt) return D.Categorical { logits = P({ { 1.0, -1.0, 0.5, 2.0 } }, dt) } end, { 4 } },
  cauchy = { function(dt) return D.Cauchy(P({ 0.0, 1.5, -2.0 }, dt), P({ 1.0, 0.5, 3.0 }, dt)) end, { 0.3, 1.0, -4.0 }, { 0.1, 0.5, 0.975 } },
  geometric = { function(dt) return D.Geometric(P({ 0.2, 0.5, 0.9 }, dt)) end, { 0.0, 3.0, 1.0 } },
  lognormal = { function(dt) return D.LogNormal(P({ 0.0, 1.5, -2.0 }, dt), P({ 1.0, 0.5, 3.0 }, dt)) end, { 0.3, 1.0, 4.0 }, { 0.1, 0.5, 0.975 } },
  halfnormal = { function(dt) return D.HalfNormal(P({ 1.0, 0.5, 3.0 }, dt)) end, { 0.3, 1.0, 4.0 }, { 0.1, 0.5, 0.975 } },
  gumbel = { function(dt) return D.Gumbel(P({ 0.0, 1.5, -2.0 }, dt), P({ 1.0, 0.5, 3.0 }, dt)) end, { 0.3, 1.0, -4.0 }, { 0.1, 0.5, 0.975 } },
}
-- draws that pass uniform or normal numbers through log, exp, tan: PyTorch's math library and ours may
-- round the last bit differently (float64), or a few ulp in float32 (exp/log of the vector library)
local TRANSFORMED_DRAWS = { laplace = true, cauchy = true, geometric = true, lognormal = true, gumbel = true }

describe('torch.distributions', function()
  for _, dtn in ipairs { 'float32', 'float64' } do
    local dt = torch[dtn]
    -- float32: PyTorch's float32 formulas give the same float32 roundings up to a few ulp
    local tol = dtn == 'float32' and 2e-6 or 1e-13
    for name, case in pairs(CASES) do
      it(('%s in %s: draws as PyTorch\'s after the same seed, log_prob, entropy, moments, cdf and icdf'):format(name, dtn), function()
        local want = W[dtn][name]
        local categorical = name:match('^categorical') ~= nil
        local d = case[1](dt)
        torch.manual_seed(7)
        local s = d:sample({ 4 })
        -- the draws: bit for bit (Categorical's are PyTorch's plus one); Laplace's pass its uniform
        -- draws through log1p, whose float64 result may differ from glibc's in the last bit
        local draw_tol = TRANSFORMED_DRAWS[name] and (dtn == 'float64' and 1e-15 or 1e-6) or 0
        same(list(s), categorical and plus_one(want.sample) or want.sample, draw_tol, name .. ' sample')
        assert.equal(categorical and torch.int64 or dt, s.dtype)
        if want.rsample then
          torch.manual_seed(7)
          same(list(d:rsample(2)), want.rsample, draw_tol, name .. ' rsample')
        end
        local x = categorical and torch.tensor(case[2], { dtype = torch.int64 }) or P(case[2], dt)
        same(list(d:log_prob(x)), want.log_prob, tol, name .. ' log_prob')
        same(list(d:entropy()), want.entropy, tol, name .. ' entropy')
        if want.mean then
          same(list(d.mean), want.mean, tol, name .. ' mean')
          same(list(d.variance), want.variance, tol, name .. ' variance')
          same(list(d.stddev), list(d.variance:sqrt()), tol, name .. ' stddev')
        end
        if want.cdf then
          same(list(d:cdf(P(case[2], dt))), want.cdf, tol, name .. ' cdf')
          same(list(d:icdf(P(case[3], dt))), want.icdf, tol, name .. ' icdf')
        end
      end)
    end
  end

  it('rsample is differentiable in the parameters; log_prob in probs (values of torch 1.13)', function()
    torch.manual_seed(3)
    local loc = torch.tensor({ 0.5, -1.0 }, { dtype = torch.float64, requires_grad = true })
    local scale = torch.tensor({ 2.0, 0.5 }, { dtype = torch.float64, requires_grad = true })
    local draws = D.Normal(loc, scale):rsample(3)
    draws:pow(2):sum():backward()
    same(list(loc.grad), W.normal_grad.loc, 1e-12, 'loc.grad')
    same(list(scale.grad), W.normal_grad.scale, 1e-12, 'scale.grad')
    -- sample() records nothing
    assert.is_nil(D.Normal(loc, scale):sample().grad_fn)
    assert.is_false(D.Normal(loc, scale):sample().requires_grad)
    local lp = torch.tensor({ 0.2, 0.3, 0.5 }, { dtype = torch.float64, requires_grad = true })
    D.Categorical(lp):log_prob(torch.tensor({ 1, 3, 3 }, { dtype = torch.int64 })):sum():backward()
    same(list(lp.grad), W.categorical_grad, 1e-12, 'probs.grad')
    -- a Bernoulli with no rsample says so
    local ok, err = pcall(function() return D.Bernoulli(0.5):rsample() end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('moontorch.distributions.Bernoulli.rsample: Bernoulli has no reparameterized sampler', 1, true), err)
  end)

  it('kl_divergence of each registered pair (torch 1.13\'s values, inf where q has no mass)', function()
    local f = function(v) return torch.tensor(v, { dtype = torch.float64 }) end
    local pairs_ = {
      normal = { D.Normal(f({ 0.0, 1.0 }), f({ 1.0, 2.0 })), D.Normal(f({ 1.0, 1.0 }), f({ 0.5, 2.0 })) },
      uniform = { D.Uniform(f({ 0.0, 0.0 }), f({ 1.0, 2.0 })), D.Uniform(f({ -1.0, 0.5 }), f({ 2.0, 3.0 })) },
      exponential = { D.Exponential(f({ 1.0, 3.0 })), D.Exponential(f({ 2.0, 0.5 })) },
      laplace = { D.Laplace(f({ 0.0, 1.0 }), f({ 1.0, 2.0 })), D.Laplace(f({ 1.0, 1.0 }), f({ 0.5, 2.0 })) },
      bernoulli = { D.Bernoulli(f({ 0.2, 0.0, 1.0, 0.5 })), D.Bernoulli(f({ 0.5, 0.3, 0.7, 0.0 })) },
      categorical = { D.Categorical(f({ { 0.2, 0.8, 0.0 }, { 0.5, 0.5, 0.0 } })), D.Categorical(f({ { 0.5, 0.25, 0.25 }, { 0.0, 0.5, 0.5 } })) },
      gumbel = { D.Gumbel(f({ 0.0, 1.0 }), f({ 1.0, 2.0 })), D.Gumbel(f({ 1.0, 1.0 }), f({ 0.5, 2.0 })) },
      geometric = { D.Geometric(f({ 0.3, 0.9 })), D.Geometric(f({ 0.5, 0.2 })) },
      lognormal = { D.LogNormal(f({ 0.0, 1.0 }), f({ 1.0, 2.0 })), D.LogNormal(f({ 1.0, 1.0 }), f({ 0.5, 2.0 })) },
      halfnormal = { D.HalfNormal(f({ 1.0, 2.0 })), D.HalfNormal(f({ 0.5, 2.0 })) },
      mvn = { D.MultivariateNormal(f({ { 0.0, 1.0 } }), f({ { 2.0, 0.5 }, { 0.5, 1.0 } })),
        D.MultivariateNormal(f({ 1.0, 0.0 }), { scale_tril = f({ { 1.0, 0.0 }, { 0.5, 2.0 } }) }) },
      independent = { D.Independent(D.Normal(f({ { 0.0, 1.0 } }), f({ { 1.0, 2.0 } })), 1), D.Independent(D.Normal(f({ { 1.0, 1.0 } }), f({ { 0.5, 2.0 } })), 1) },
    }
    for name, pq in pairs(pairs_) do
      same(list(D.kl_divergence(pq[1], pq[2])), W.kl[name], 1e-13, 'kl ' .. name)
    end
    -- OneHotCategorical: its categorical's
    local p, q = D.OneHotCategorical(f({ 0.2, 0.8 })), D.OneHotCategorical(f({ 0.5, 0.5 }))
    same(list(D.kl_divergence(p, q)), list(D.kl_divergence(D.Categorical(f({ 0.2, 0.8 })), D.Categorical(f({ 0.5, 0.5 })))), 1e-15, 'kl onehot')
    assert.equal(D.kl_divergence, D.kl.kl_divergence)
    -- a pair with no formula is an error naming both
    local ok, err = pcall(D.kl_divergence, D.Normal(0, 1), D.Bernoulli(0.5))
    assert.is_false(ok)
    assert.truthy(tostring(err):find('No KL(p || q) is implemented for p = Normal and q = Bernoulli', 1, true), err)
    ok, err = pcall(D.kl_divergence, D.Normal(0, 1), 3)
    assert.truthy(tostring(err):find('expected two distributions', 1, true), err)
  end)

  it('TransformedDistribution: log_prob, cdf, icdf through the transforms (torch 1.13\'s values); transforms', function()
    local T = D.transforms
    local f = function(v) return torch.tensor(v, { dtype = torch.float64 }) end
    local td = D.TransformedDistribution(D.Normal(f({ 0.0, 1.0 }), f({ 1.0, 0.5 })), { T.AffineTransform(1.0, -2.0), T.SigmoidTransform() })
    local x = f({ 0.3, 0.8 })
    same(list(td:log_prob(x)), W.transformed.log_prob, 1e-13, 'td log_prob')
    same(list(td:cdf(x)), W.transformed.cdf, 1e-13, 'td cdf')
    same(list(td:icdf(x)), W.transformed.icdf, 1e-13, 'td icdf')
    assert.equal(torch.Size({ 2 }), td.batch_shape)
    assert.equal(torch.Size({ 5, 2 }), td:rsample(5):size())
    -- the maps and their inverses
    local y = f({ -1.0, 0.5, 2.0 })
    for _, t in ipairs { T.ExpTransform(), T.SigmoidTransform(), T.TanhTransform(), T.AffineTransform(2, -3), T.PowerTransform(3),
      T.ComposeTransform({ T.AffineTransform(1, 2), T.ExpTransform() }) } do
      local xx = t == nil and y or (getmetatable(t) == T.PowerTransform and y:abs() or y)
      same(list(t.inv(t(xx))), list(xx), 1e-12, tostring(t) .. ' inverse')
      -- the jacobian against a finite difference
      local h = 1e-6
      local fd = ((t(xx + h) - t(xx - h)) / (2 * h)):abs():log()
      same(list(t:log_abs_det_jacobian(xx, t(xx))), list(fd), 1e-6, tostring(t) .. ' log_abs_det_jacobian')
    end
    assert.is_true(T.AffineTransform(1, 2):equals(T.AffineTransform(1, 2)))
    assert.is_false(T.AffineTransform(1, 2):equals(T.AffineTransform(1, 3)))
    local ok, err = pcall(function() return T.AbsTransform().inv end)
    assert.truthy(tostring(err):find('not bijective', 1, true), err)
    ok, err = pcall(D.TransformedDistribution, D.Normal(0, 1), { 3 })
    assert.truthy(tostring(err):find('transforms must be a Transform or a list of Transforms', 1, true), err)
    -- KL of two transformed distributions needs the same transforms
    ok, err = pcall(D.kl_divergence, D.TransformedDistribution(D.Normal(0, 1), T.ExpTransform()),
      D.TransformedDistribution(D.Normal(0, 1), T.SigmoidTransform()))
    assert.truthy(tostring(err):find('different transforms', 1, true), err)
    same(D.kl_divergence(D.TransformedDistribution(D.Normal(0, 1), T.ExpTransform()),
      D.TransformedDistribution(D.Normal(1, 1), T.ExpTransform())):item(), 0.5, 1e-7, 'td kl')
    -- Geometric's probs must be positive (PyTorch's extra check)
    ok, err = pcall(D.Geometric, torch.tensor({ 0.0, 0.5 }))
    assert.truthy(tostring(err):find('to be positive but found invalid values', 1, true), err)
  end)

  it('MultivariateNormal from each matrix: draws as PyTorch\'s, log_prob, entropy, the derived matrices, gradients', function()
    for _, dtn in ipairs { 'float32', 'float64' } do
      local dt, want = torch[dtn], W['mvn_' .. dtn]
      local tol = dtn == 'float32' and 2e-6 or 1e-12
      local cov = torch.tensor({ { 2.0, 0.5 }, { 0.5, 1.0 } }, { dtype = dt })
      local m = D.MultivariateNormal(torch.tensor({ 1.0, -1.0 }, { dtype = dt }), cov)
      torch.manual_seed(5)
      same(list(m:sample(3)), want.sample, tol, dtn .. ' mvn sample')
      torch.manual_seed(5)
      same(list(m:rsample({ 3 })), want.rsample, tol, dtn .. ' mvn rsample')
      same(list(m:log_prob(torch.tensor({ { 0.5, 0.5 }, { 1.0, -1.0 } }, { dtype = dt }))), want.log_prob, tol, dtn .. ' mvn log_prob')
      same(list(m:entropy()), want.entropy, tol, dtn .. ' mvn entropy')
      same(list(m.variance), want.variance, tol, dtn .. ' mvn variance')
      same(list(m.precision_matrix), want.precision, tol, dtn .. ' mvn precision')
      same(list(m.scale_tril), want.scale_tril, tol, dtn .. ' mvn scale_tril')
      local mp = D.MultivariateNormal(torch.zeros(3, 2, { dtype = dt }), { precision_matrix = cov })
      assert.equal(torch.Size({ 3 }), mp.batch_shape)
      same(list(mp:log_prob(torch.ones(3, 2, { dtype = dt }))), want.prec_log_prob, tol, dtn .. ' mvn precision log_prob')
      same(list(mp.covariance_matrix[1]), want.prec_cov, tol * 10, dtn .. ' mvn precision cov')
      local ml = D.MultivariateNormal { loc = torch.tensor({ { 0.0, 1.0 } }, { dtype = dt }), scale_tril = torch.tensor({ { 1.0, 0.0 }, { 0.5, 2.0 } }, { dtype = dt }) }
      same(list(ml:log_prob(torch.tensor({ { 1.0, 2.0 }, { 0.0, 0.0 } }, { dtype = dt }))), want.tril_log_prob, tol, dtn .. ' mvn tril log_prob')
      same(list(ml.covariance_matrix[1]), want.tril_cov, tol, dtn .. ' mvn tril cov')
    end
    local f = function(v) return torch.tensor(v, { dtype = torch.float64 }) end
    local loc = f({ 0.5, -1.0 }):requires_grad_()
    local L0 = f({ { 1.0, 0.0 }, { 0.3, 2.0 } }):requires_grad_()
    D.MultivariateNormal(loc, nil, nil, L0):log_prob(f({ { 1.0, 2.0 }, { 0.0, -1.0 } })):sum():backward()
    same(list(loc.grad), W.mvn_grad.loc, 1e-12, 'mvn dloc')
    same(list(L0.grad), W.mvn_grad.scale_tril, 1e-12, 'mvn dscale_tril')
    -- shapes and errors
    local m = D.MultivariateNormal(torch.zeros(4, 1, 3), torch.eye(3))
    assert.equal(torch.Size({ 4, 1 }), m.batch_shape)
    assert.equal(torch.Size({ 3 }), m.event_shape)
    assert.equal(torch.Size({ 2, 4, 1, 3 }), m:sample(2):size())
    assert.equal(torch.Size({ 4, 5 }), m:expand({ 4, 5 }):log_prob(torch.zeros(3)):size())
    local function err_of(...)
      local ok, e = pcall(...)
      assert.is_false(ok)
      return tostring(e)
    end
    assert.truthy(err_of(D.MultivariateNormal, torch.zeros(2)):find('Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.', 1, true))
    assert.truthy(err_of(D.MultivariateNormal, torch.tensor(0.0), torch.eye(1)):find('loc must be at least one-dimensional.', 1, true))
    assert.truthy(err_of(D.MultivariateNormal, torch.zeros(2), torch.tensor({ { 1.0, 2 }, { 2, 1 } })):find('to satisfy the constraint PositiveDefinite()', 1, true))
    assert.truthy(err_of(D.MultivariateNormal, torch.zeros(2), { scale_tril = torch.tensor({ { 1.0, 1 }, { 0, 1 } }) }):find('LowerCholesky()', 1, true))
    assert.truthy(err_of(D.MultivariateNormal, torch.zeros(3), torch.eye(2)):find('must be 3x3 to match loc', 1, true))
    assert.truthy(err_of(D.MultivariateNormal, torch.zeros(2), { cov = torch.eye(2) }):find("unknown option 'cov'", 1, true))
  end)

  it('register_kl: the most specific registered pair wins; the decorator form', function()
    local Sub = torch.class('spec_distributions.SubNormal', 'torch.distributions.Normal')
    local p, q = Sub(0, 1), D.Normal(1, 1)
    same(list(D.kl_divergence(p, q)), 0.5, 1e-7, 'the parent\'s formula')
    D.register_kl(Sub, D.Normal)(function() return torch.tensor(7.0) end)
    assert.equal(7, D.kl_divergence(p, q):item())
    assert.equal(0.5, D.kl_divergence(D.Normal(0, 1), q):item()) -- the parent pair unchanged
    local ok, err = pcall(D.register_kl, {}, D.Normal, function() end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('subclasses of Distribution', 1, true), err)
  end)

  it('shapes: batch and event shapes, sample shapes in every spelling, expand, Independent', function()
    local d = D.Normal(torch.zeros(2, 3), 1)
    assert.same({ 2, 3 }, list(torch.tensor(d.batch_shape)))
    assert.equal(0, #d.event_shape)
    assert.same({ 5, 2, 3 }, { d:sample(5):size(1), d:sample(5):size(2), d:sample(5):size(3) })
    assert.equal(torch.Size({ 4, 5, 2, 3 }), d:sample({ 4, 5 }):size())
    assert.equal(torch.Size({ 4, 5, 2, 3 }), d:rsample(torch.Size({ 4, 5 })):size())
    assert.equal(torch.Size({ 4, 5, 2, 3 }), d:sample(4, 5):size())
    assert.equal(torch.Size({ 3, 2, 3 }), d:sample_n(3):size())
    assert.equal(torch.Size({}), D.Normal(0, 1):sample():size())
    assert.equal(torch.float32, D.Normal(0, 1):sample().dtype)
    local e = D.Normal(torch.tensor({ 1.0 }), 2):expand({ 4, 3 })
    assert.equal(torch.Size({ 4, 3 }), e.batch_shape)
    assert.equal(torch.Size({ 4, 3 }), e.loc:size())
    local ind = D.Independent(d, 1)
    assert.equal(torch.Size({ 2 }), ind.batch_shape)
    assert.equal(torch.Size({ 3 }), ind.event_shape)
    same(list(ind:log_prob(torch.zeros(2, 3))), list(d:log_prob(torch.zeros(2, 3)):sum(-1)), 1e-6, 'Independent log_prob')
    same(list(ind:entropy()), list(d:entropy():sum(-1)), 1e-6, 'Independent entropy')
    assert.equal(torch.Size({ 7, 2, 3 }), ind:rsample(7):size())
    assert.equal(torch.Size({ 5 }), ind:expand({ 5, 2 }).batch_shape:numel() == 10 and torch.Size({ 5 }) or nil)
    assert.equal(torch.Size({ 5, 2 }), ind:expand({ 5, 2 }).batch_shape)
    local ok, err = pcall(D.Independent, d, 3)
    assert.truthy(tostring(err):find('Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual 3 vs 2', 1, true), err)
    -- Categorical: the batch is every dimension but the last; OneHotCategorical's event is K
    local c = D.Categorical(torch.ones(4, 3))
    assert.equal(torch.Size({ 4 }), c.batch_shape)
    assert.equal(torch.Size({ 6, 4 }), c:sample(6):size())
    local oh = D.OneHotCategorical(torch.ones(4, 3))
    assert.equal(torch.Size({ 3 }), oh.event_shape)
    assert.equal(torch.Size({ 6, 4, 3 }), oh:sample(6):size())
    assert.equal(torch.Size({ 2, 5, 3 }), D.Categorical(torch.ones(3)):expand({ 2, 5 }):sample():size() == torch.Size({ 2, 5 })
      and torch.Size({ 2, 5, 3 }) or nil)
    ok, err = pcall(function() return d:sample(-1) end)
    assert.truthy(tostring(err):find('distributions.Normal.sample: expected a shape of non-negative integers', 1, true), err)
  end)

  it('enumerate_support, mode, probs and logits of the discrete ones (categories from 1)', function()
    local b = D.Bernoulli(torch.tensor({ 0.2, 0.5, 0.7 }))
    assert.same({ { 0, 0, 0 }, { 1, 1, 1 } }, list(b:enumerate_support()))
    assert.equal(torch.Size({ 2, 1 }), b:enumerate_support(false):size())
    local m = list(b.mode)
    assert.equal(0, m[1]); assert.is_true(m[2] ~= m[2]); assert.equal(1, m[3])
    same(list(b.logits), { math.log(0.2 / 0.8), 0, math.log(0.7 / 0.3) }, 1e-6, 'Bernoulli logits')
    local c = D.Categorical { logits = torch.tensor({ { 0.0, math.log(3) }, { math.log(3), 0.0 } }) }
    same(list(c.probs), { { 0.25, 0.75 }, { 0.75, 0.25 } }, 1e-6, 'Categorical probs')
    assert.same({ 2, 1 }, list(c.mode))
    assert.same({ { 1, 1 }, { 2, 2 } }, list(c:enumerate_support()))
    assert.equal(torch.int64, c:enumerate_support().dtype)
    local mean = list(c.mean)
    assert.is_true(mean[1] ~= mean[1])
    local oh = D.OneHotCategorical(torch.tensor({ 0.2, 0.8 }))
    assert.same({ { 1, 0 }, { 0, 1 } }, list(oh:enumerate_support()))
    assert.same({ 0, 1 }, list(oh.mode))
    same(list(oh:log_prob(torch.tensor({ 0.0, 1.0 }))), math.log(0.8), 1e-6, 'OneHot log_prob')
    -- the draws: torch.multinomial's, so 1..K
    torch.manual_seed(1)
    local s = D.Categorical(torch.tensor({ 0.0, 0.0, 1.0 })):sample(10)
    assert.same({ 3, 3, 3, 3, 3, 3, 3, 3, 3, 3 }, list(s))
  end)

  it('validates parameters and values as PyTorch (messages with its words), unless told not to', function()
    local function err_of(fn, ...)
      local ok, e = pcall(fn, ...)
      assert.is_false(ok, 'expected an error')
      return tostring(e)
    end
    local e = err_of(D.Normal, 0, -1)
    assert.truthy(e:find('moontorch.distributions.Normal: Expected parameter scale (Tensor of shape ()) of distribution '
      .. 'Normal(loc: 0.0, scale: -1.0) to satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid values:\n-1.0', 1, true), e)
    -- raised at the caller's line
    assert.truthy(e:find('^spec/distributions_spec.lua:%d+:') or e:find('distributions_spec.lua:%d+:'), e)
    e = err_of(D.Bernoulli, torch.tensor({ 0.5, 1.5 }))
    assert.truthy(e:find('Expected parameter probs (Tensor of shape (2,))', 1, true), e)
    assert.truthy(e:find('Interval(lower_bound=0.0, upper_bound=1.0)', 1, true), e)
    e = err_of(D.Categorical, torch.tensor({ -0.5, 1.5 }))
    assert.truthy(e:find('Simplex()', 1, true), e)
    e = err_of(D.Uniform, 1, 0)
    assert.truthy(e:find('Uniform is not defined when low>= high', 1, true), e)
    e = err_of(function() return D.Normal(torch.zeros(3), 1):log_prob(torch.zeros(2)) end)
    assert.truthy(e:find('Value is not broadcastable with batch_shape+event_shape: torch.Size([2]) vs torch.Size([3]).', 1, true), e)
    e = err_of(function() return D.Categorical(torch.ones(3)):log_prob(torch.tensor(4)) end)
    assert.truthy(e:find('to be within the support (IntegerInterval(lower_bound=1, upper_bound=3))', 1, true), e)
    e = err_of(function() return D.Exponential(1):log_prob(torch.tensor({ -1.0 })) end)
    assert.truthy(e:find('GreaterThanEq(lower_bound=0.0)', 1, true), e)
    e = err_of(function() return D.OneHotCategorical(torch.ones(3)):log_prob(torch.ones(2)) end)
    assert.truthy(e:find('The right-most size of value must match event_shape: torch.Size([2]) vs torch.Size([3]).', 1, true), e)
    e = err_of(function() return D.Normal(0, 1):log_prob('x') end)
    assert.truthy(e:find('expected a tensor (or a number) as value, got string', 1, true), e)
    -- validate_args = false: no checks, PyTorch's formula's value
    local d = D.Normal(0, -1, { validate_args = false })
    assert.equal(-1, d.scale:item())
    assert.is_true(D.Uniform { low = 0, high = 1, validate_args = false }:log_prob(torch.tensor(2.0)):item() == -math.huge)
    D.Distribution.set_default_validate_args(false)
    local ok = pcall(D.Normal, 0, -1)
    D.Distribution.set_default_validate_args(true)
    assert.is_true(ok)
    assert.is_false((pcall(D.Normal, 0, -1)))
    -- arguments
    e = err_of(D.Bernoulli, 0.5, 0.5)
    assert.truthy(e:find('Either `probs` or `logits` must be specified, but not both.', 1, true), e)
    e = err_of(D.Categorical)
    assert.truthy(e:find('Either `probs` or `logits` must be specified', 1, true), e)
    e = err_of(D.Categorical, torch.tensor(1.0))
    assert.truthy(e:find('`probs` parameter must be at least one-dimensional.', 1, true), e)
    e = err_of(D.Normal, { loc = 0, sigma = 1 })
    assert.truthy(e:find("unknown option 'sigma'", 1, true), e)
    e = err_of(D.Normal, 'a', 1)
    assert.truthy(e:find('moontorch.distributions.Normal: expected a tensor or a number, got string', 1, true), e)
    e = err_of(D.Normal, torch.zeros(2), torch.ones(3))
    assert.truthy(e:find('moontorch.distributions.Normal: the parameters do not broadcast', 1, true), e)
  end)

  it('take their parameters positional or in an options table, numbers or tensors, and print as PyTorch', function()
    local a, b = D.Normal(1, 2), D.Normal { loc = 1, scale = 2 }
    assert.equal(a.loc:item(), b.loc:item())
    assert.equal(a.scale:item(), b.scale:item())
    assert.equal('Normal(loc: 1.0, scale: 2.0)', tostring(a))
    assert.equal('Normal(loc: torch.Size([2]), scale: torch.Size([2]))', tostring(D.Normal(torch.zeros(2), 1)))
    assert.equal('Categorical(probs: torch.Size([3]))', tostring(D.Categorical(torch.ones(3))))
    assert.equal('Bernoulli(probs: 0.30000001192092896)', tostring(D.Bernoulli(0.3)))
    assert.equal('Independent(Normal(loc: torch.Size([2]), scale: torch.Size([2])), 1)',
      tostring(D.Independent(D.Normal(torch.zeros(2), 1), 1)))
    assert.equal('Uniform(low: 0.0, high: 1.0)', tostring(D.Uniform { low = 0, high = 1 }))
    assert.equal('Exponential(rate: 0.5)', tostring(D.Exponential { rate = 0.5 }))
    -- a number beside a float64 tensor takes its dtype
    assert.equal(torch.float64, D.Normal(torch.zeros(2, { dtype = torch.float64 }), 1).scale.dtype)
    assert.equal(torch.float64, D.Normal(torch.zeros(2, { dtype = torch.float64 }), 1):sample().dtype)
    -- a number as value
    same(D.Normal(0, 1):log_prob(0):item(), -0.91893853320467, 1e-6, 'log_prob(0)')
    -- the constraints print and check as PyTorch's
    local cs = D.constraints
    assert.equal('IndependentConstraint(Real(), 1)', tostring(cs.real_vector))
    assert.same({ true, false }, list(cs.interval(0, 1):check(torch.tensor({ 0.5, 2.0 }))))
    assert.is_true(cs.simplex:check(torch.tensor({ 0.3, 0.7 })):item())
    assert.is_false(cs.one_hot:check(torch.tensor({ 1.0, 1.0 })):item())
    -- the namespace is torch.distributions, loaded on first use; the classes are found by name
    assert.equal(D.Normal, require('moontorch.class').registry['torch.distributions.Normal'])
    same(D.Normal(0, 2):perplexity():item(), math.exp(D.Normal(0, 2):entropy():item()), 1e-6, 'perplexity')
  end)

  it('run a REINFORCE-style policy-gradient step and a VAE-style reparameterized KL as PyTorch scripts do', function()
    torch.manual_seed(0)
    local nn = require 'moontorch.nn'
    local policy = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2), nn.Softmax(-1))
    local opt = torch.optim.Adam(policy:parameters(), { lr = 1e-2 })
    local state = torch.randn(5, 4)
    local m = D.Categorical(policy(state))
    local action = m:sample()
    assert.equal(torch.Size({ 5 }), action:size())
    local loss = (-m:log_prob(action) * torch.randn(5)):sum()
    loss:backward()
    for _, p in ipairs(policy:parameters()) do assert.truthy(p.grad) end
    opt:step()
    -- VAE: z = mu + sigma eps, KL(q || N(0, 1)) against the closed form
    local mu = torch.randn(3, 2, { requires_grad = true })
    local logvar = torch.randn(3, 2, { requires_grad = true })
    local q = D.Normal(mu, (logvar * 0.5):exp())
    local z = q:rsample()
    assert.equal(torch.Size({ 3, 2 }), z:size())
    local kl = D.kl_divergence(q, D.Normal(torch.zeros_like(mu), torch.ones_like(mu))):sum()
    local closed = ((logvar:exp() + mu ^ 2 - 1 - logvar) * 0.5):sum()
    same(kl:item(), closed:item(), 1e-5, 'VAE KL')
    kl:backward()
    same(list(mu.grad), list(mu:detach()), 1e-5, 'dKL/dmu = mu')
  end)
end)
