-- torch.distributions.kl_divergence(p, q) and register_kl(P, Q, fn): KL(p || q) by the pair of
-- classes, the most specific registered pair winning (a subclass of Normal uses Normal's formula
-- unless a pair of its own is registered), as PyTorch's. The formulas are the closed forms PyTorch
-- has for these pairs (inf where q has no mass where p has).
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local D = require 'moontorch.distributions.distribution'
local C = require 'moontorch.distributions.continuous'
local Dd = require 'moontorch.distributions.discrete'
local Ind = require 'moontorch.distributions.independent'
local Tr = require 'moontorch.distributions.transformed'
local Mv = require 'moontorch.distributions.multivariate'
local G = require 'moontorch.distributions.gamma'
local Cn = require 'moontorch.distributions.counts'
local Mo = require 'moontorch.distributions.more'
local LRm = require 'moontorch.distributions.lowrank'

local fail = core.fail
local Distribution = D.Distribution
local softplus = function(x) return torch.nn.functional.softplus(x) end

local M = {}
local registry = {} -- array of {P, Q, fn}

-- a class deriving from Distribution (or Distribution itself)
local function is_class(c)
  while type(c) == 'table' do
    if c == Distribution then return true end
    c = rawget(c, '__parent')
  end
  return false
end

-- register_kl(P, Q, fn), or register_kl(P, Q) returning a function that registers fn (PyTorch's
-- decorator form: register_kl(P, Q)(fn)); fn(p, q) returns KL(p || q)
function M.register_kl(P, Q, fn)
  if not is_class(P) or not is_class(Q) then
    fail('distributions.register_kl', 'Expected type_p and type_q to be subclasses of Distribution')
  end
  local function reg(f)
    if type(f) ~= 'function' then fail('distributions.register_kl', 'expected a function(p, q), got ' .. type(f)) end
    for _, e in ipairs(registry) do
      if e[1] == P and e[2] == Q then e[3] = f; return f end
    end
    registry[#registry + 1] = { P, Q, f }
    return f
  end
  if fn == nil then return reg end
  return reg(fn)
end

-- how many steps up the class chain from obj's class to cls (nil: not an instance)
local function distance(obj, cls)
  local mt, d = getmetatable(obj), 0
  while mt do
    if mt == cls then return d end
    mt = rawget(mt, '__parent')
    d = d + 1
  end
end

-- kl_divergence(p, q): KL(p || q), of the batch shape
function M.kl_divergence(p, q)
  if not class.isinstance(p, Distribution) or not class.isinstance(q, Distribution) then
    fail('distributions.kl_divergence', ('expected two distributions, got %s and %s'):format(type(p), type(q)))
  end
  local best, bd
  for _, e in ipairs(registry) do
    local dp, dq = distance(p, e[1]), distance(q, e[2])
    if dp and dq and (not bd or dp < bd[1] or (dp == bd[1] and dq < bd[2])) then best, bd = e[3], { dp, dq } end
  end
  if not best then
    fail('distributions.kl_divergence', ('No KL(p || q) is implemented for p = %s and q = %s'):format(D.short(p), D.short(q)))
  end
  return best(p, q)
end

-- where cond holds, the value v (a masked fill that keeps the gradient elsewhere)
local function put(t, cond, v)
  return torch.where(cond:expand(t:size()), torch.full({}, v, { dtype = t.dtype }), t)
end

M.register_kl(C.Normal, C.Normal, function(p, q)
  local var_ratio = (p.scale / q.scale):pow(2)
  local t1 = ((p.loc - q.loc) / q.scale):pow(2)
  return (var_ratio + t1 - 1 - var_ratio:log()) * 0.5
end)

M.register_kl(C.Uniform, C.Uniform, function(p, q)
  local r = ((q.high - q.low) / (p.high - p.low)):log()
  return put(r, q.low:gt(p.low):logical_or(q.high:lt(p.high)), math.huge)
end)

M.register_kl(C.Exponential, C.Exponential, function(p, q)
  local ratio = q.rate / p.rate
  return -ratio:log() + ratio - 1
end)

M.register_kl(C.Laplace, C.Laplace, function(p, q)
  local scale_ratio = p.scale / q.scale
  local diff = (p.loc - q.loc):abs()
  return -scale_ratio:log() + diff / q.scale + scale_ratio * (-diff / p.scale):exp() - 1
end)

M.register_kl(Dd.Bernoulli, Dd.Bernoulli, function(p, q)
  local t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
  t1 = put(t1, q.probs:eq(0), math.huge)
  t1 = put(t1, p.probs:eq(0), 0)
  local t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
  t2 = put(t2, q.probs:eq(1), math.huge)
  t2 = put(t2, p.probs:eq(1), 0)
  return t1 + t2
end)

local function kl_categorical(p, q)
  local t = p.probs * (p.logits - q.logits)
  t = put(t, q.probs:eq(0), math.huge)
  t = put(t, p.probs:eq(0), 0)
  return t:sum(-1)
end
M.register_kl(Dd.Categorical, Dd.Categorical, kl_categorical)
M.register_kl(Dd.OneHotCategorical, Dd.OneHotCategorical, function(p, q) return kl_categorical(p._categorical, q._categorical) end)

M.register_kl(Dd.Geometric, Dd.Geometric, function(p, q)
  return -p:entropy() - (-q.probs):log1p() / p.probs - q.logits
end)

M.register_kl(Tr.Gumbel, Tr.Gumbel, function(p, q)
  local ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
  local t1 = -ct1:log() - ct2 + ct3
  local t2 = ct1 * Tr.EULER_GAMMA
  local t3 = (ct2 + (ct1 + 1):lgamma() - ct3):exp()
  return t1 + t2 + t3 - (1 + Tr.EULER_GAMMA)
end)

M.register_kl(Tr.HalfNormal, Tr.HalfNormal, function(p, q) return M.kl_divergence(p.base_dist, q.base_dist) end)

-- the same transforms of two bases: the bases' KL
M.register_kl(Tr.TransformedDistribution, Tr.TransformedDistribution, function(p, q)
  local same = #p.transforms == #q.transforms
  for i = 1, #p.transforms do same = same and p.transforms[i]:equals(q.transforms[i]) end
  if not same then
    fail('distributions.kl_divergence', 'No KL(p || q) is implemented for TransformedDistributions with different transforms')
  end
  return M.kl_divergence(p.base_dist, q.base_dist)
end)

M.register_kl(Mv.MultivariateNormal, Mv.MultivariateNormal, function(p, q)
  if p._event_shape[1] ~= q._event_shape[1] then
    fail('distributions.kl_divergence', 'KL-divergence between two Multivariate Normals with different event shapes cannot be computed')
  end
  local n = p._event_shape[1]
  local Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
  local half_term1 = Lq:diagonal(0, -2, -1):log():sum(-1) - Lp:diagonal(0, -2, -1):log():sum(-1)
  local bs = torch.broadcast_shapes(torch.Size(D.size_list(Lq)), torch.Size(D.size_list(Lp)))
  local term2 = torch.linalg.solve_triangular(Lq:expand(bs), Lp:expand(bs), { upper = false }):pow(2):sum({ -2, -1 })
  local term3 = Mv._mahalanobis(Lq, q.loc - p.loc)
  return half_term1 + (term2 + term3 - n) * 0.5
end)

M.register_kl(Ind.Independent, Ind.Independent, function(p, q)
  if p.reinterpreted_batch_ndims ~= q.reinterpreted_batch_ndims then
    fail('distributions.kl_divergence', 'KL between Independents with different reinterpreted_batch_ndims is not implemented')
  end
  return Ind.sum_rightmost(M.kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
end)

---------------------------------------------------------------------------------------- the Gamma family and counts
local EULER = 0.57721566490153286060
local function inf_like(t) return torch.full_like(t, math.huge) end
local function x_log_x(t) return t * t:log() end

M.register_kl(G.Gamma, G.Gamma, function(p, q)
  local t1 = q.concentration * (p.rate / q.rate):log()
  local t2 = torch.lgamma(q.concentration) - torch.lgamma(p.concentration)
  local t3 = (p.concentration - q.concentration) * torch.digamma(p.concentration)
  local t4 = (q.rate - p.rate) * (p.concentration / p.rate)
  return t1 + t2 + t3 + t4
end)

M.register_kl(G.Beta, G.Beta, function(p, q)
  local sp = p.concentration1 + p.concentration0
  local sq = q.concentration1 + q.concentration0
  local t1 = q.concentration1:lgamma() + q.concentration0:lgamma() + sp:lgamma()
  local t2 = p.concentration1:lgamma() + p.concentration0:lgamma() + sq:lgamma()
  local t3 = (p.concentration1 - q.concentration1) * torch.digamma(p.concentration1)
  local t4 = (p.concentration0 - q.concentration0) * torch.digamma(p.concentration0)
  local t5 = (sq - sp) * torch.digamma(sp)
  return t1 - t2 + t3 + t4 + t5
end)

M.register_kl(G.Dirichlet, G.Dirichlet, function(p, q)
  local sp, sq = p.concentration:sum(-1), q.concentration:sum(-1)
  local t1 = sp:lgamma() - sq:lgamma()
  local t2 = (p.concentration:lgamma() - q.concentration:lgamma()):sum(-1)
  local t3 = p.concentration - q.concentration
  local t4 = p.concentration:digamma() - sp:digamma():unsqueeze(-1)
  return t1 - t2 + (t3 * t4):sum(-1)
end)

M.register_kl(Cn.Poisson, Cn.Poisson, function(p, q)
  return p.rate * (p.rate:log() - q.rate:log()) - (p.rate - q.rate)
end)

M.register_kl(Cn.Binomial, Cn.Binomial, function(p, q)
  if p.total_count:lt(q.total_count):any() then
    fail('distributions.kl_divergence', 'KL between Binomials where q.total_count > p.total_count is not implemented')
  end
  local kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs):log1p() - (-q.probs):log1p())
  return put(kl, p.total_count:gt(q.total_count), math.huge)
end)

-- between families (PyTorch's closed forms; inf where q has no mass where p has)
M.register_kl(C.Exponential, G.Gamma, function(p, q)
  local ratio = q.rate / p.rate
  local t1 = -q.concentration * torch.log(ratio)
  return t1 + ratio + q.concentration:lgamma() + q.concentration * EULER - (1 + EULER)
end)
M.register_kl(G.Gamma, C.Exponential, function(p, q)
  return -p:entropy() - q.rate:log() + q.rate * p.concentration / p.rate
end)
M.register_kl(G.Gamma, C.Normal, function(p, q)
  local var_normal = q.scale:pow(2)
  local beta_sqr = p.rate:pow(2)
  local t1 = 0.5 * torch.log(beta_sqr * var_normal * 2 * math.pi) - p.concentration - p.concentration:lgamma()
  local t2 = 0.5 * (p.concentration:pow(2) + p.concentration) / beta_sqr
  local t3 = q.loc * p.concentration / p.rate
  local t4 = 0.5 * q.loc:pow(2)
  return t1 + (p.concentration - 1) * p.concentration:digamma() + (t2 - t3 + t4) / var_normal
end)
M.register_kl(G.Gamma, Tr.Gumbel, function(p, q)
  local beta_scale_prod = p.rate * q.scale
  local loc_scale_ratio = q.loc / q.scale
  local t1 = (p.concentration - 1) * p.concentration:digamma() - p.concentration:lgamma() - p.concentration
  local t2 = beta_scale_prod:log() + p.concentration / beta_scale_prod
  local t3 = torch.exp(loc_scale_ratio) * (1 + beta_scale_prod:reciprocal()):pow(-p.concentration) - loc_scale_ratio
  return t1 + t2 + t3
end)
M.register_kl(G.Beta, C.Exponential, function(p, q)
  return -p:entropy() - q.rate:log() + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0))
end)
M.register_kl(G.Beta, G.Gamma, function(p, q)
  local t1 = -p:entropy()
  local t2 = q.concentration:lgamma() - q.concentration * q.rate:log()
  local t3 = (q.concentration - 1) * (p.concentration1:digamma() - (p.concentration1 + p.concentration0):digamma())
  local t4 = q.rate * p.concentration1 / (p.concentration1 + p.concentration0)
  return t1 + t2 - t3 + t4
end)
M.register_kl(G.Beta, C.Normal, function(p, q)
  local E_beta = p.concentration1 / (p.concentration1 + p.concentration0)
  local var_normal = q.scale:pow(2)
  local t1 = -p:entropy()
  local t2 = 0.5 * (var_normal * 2 * math.pi):log()
  local t3 = (E_beta * (1 - E_beta) / (p.concentration1 + p.concentration0 + 1) + E_beta:pow(2)) * 0.5
  local t4 = q.loc * E_beta
  local t5 = q.loc:pow(2) * 0.5
  return t1 + t2 + (t3 - t4 + t5) / var_normal
end)
M.register_kl(G.Beta, C.Uniform, function(p, q)
  local result = -p:entropy() + (q.high - q.low):log()
  return put(result, q.low:gt(0):logical_or(q.high:lt(1)), math.huge)
end)
M.register_kl(C.Uniform, G.Beta, function(p, q)
  local common = p.high - p.low
  local t1 = torch.log(common)
  local t2 = (q.concentration1 - 1) * (x_log_x(p.high) - x_log_x(p.low) - common) / common
  local t3 = (q.concentration0 - 1) * (x_log_x(1 - p.high) - x_log_x(1 - p.low) + common) / common
  local t4 = q.concentration1:lgamma() + q.concentration0:lgamma() - (q.concentration1 + q.concentration0):lgamma()
  local result = t3 + t4 - t1 - t2
  return put(result, p.high:gt(1):logical_or(p.low:lt(0)), math.huge)
end)
M.register_kl(C.Uniform, G.Gamma, function(p, q)
  local common = p.high - p.low
  local t1 = common:log()
  local t2 = q.concentration:lgamma() - q.concentration * q.rate:log()
  local t3 = (1 - q.concentration) * (x_log_x(p.high) - x_log_x(p.low) - common) / common
  local t4 = q.rate * (p.high + p.low) / 2
  return put(-t1 + t2 + t3 + t4, p.low:lt(0), math.huge)
end)
M.register_kl(Dd.Bernoulli, Cn.Poisson, function(p, q)
  return -p:entropy() - (p.probs * q.rate:log() - q.rate)
end)
-- q has no mass where p has
for _, pq in ipairs {
  { G.Gamma, G.Beta, 'concentration' }, { G.Gamma, C.Uniform, 'concentration' },
  { C.Exponential, G.Beta, 'rate' }, { C.Normal, G.Beta, 'loc' }, { C.Normal, G.Gamma, 'loc' },
  { Tr.Gumbel, G.Beta, 'loc' }, { Tr.Gumbel, G.Gamma, 'loc' }, { C.Laplace, G.Beta, 'loc' }, { C.Laplace, G.Gamma, 'loc' },
  { Cn.Poisson, Dd.Bernoulli, 'rate' }, { Cn.Poisson, Cn.Binomial, 'rate' },
} do
  M.register_kl(pq[1], pq[2], function(p) return inf_like(p[pq[3]]) end)
end

---------------------------------------------------------------------------------------- Pareto, ContinuousBernoulli
M.register_kl(Mo.Pareto, Mo.Pareto, function(p, q)
  local scale_ratio = p.scale / q.scale
  local alpha_ratio = q.alpha / p.alpha
  local result = q.alpha * scale_ratio:log() - alpha_ratio:log() + alpha_ratio - 1
  return put(result, p.scale:lt(q.scale), math.huge)
end)
M.register_kl(Mo.ContinuousBernoulli, Mo.ContinuousBernoulli, function(p, q)
  local t1 = p.mean * (p.logits - q.logits)
  local t2 = p:_cont_bern_log_norm() + torch.log1p(-p.probs)
  local t3 = -q:_cont_bern_log_norm() - torch.log1p(-q.probs)
  return t1 + t2 + t3
end)
M.register_kl(G.Beta, Mo.ContinuousBernoulli, function(p, q)
  return -p:entropy() - p.mean * q.logits - torch.log1p(-q.probs) - q:_cont_bern_log_norm()
end)
M.register_kl(Mo.ContinuousBernoulli, C.Exponential, function(p, q)
  return -p:entropy() - torch.log(q.rate) + q.rate * p.mean
end)
M.register_kl(Mo.ContinuousBernoulli, C.Normal, function(p, q)
  local t1 = -p:entropy()
  local t2 = 0.5 * (math.log(2.0 * math.pi) + torch.square(q.loc / q.scale)) + torch.log(q.scale)
  local t3 = (p.variance + torch.square(p.mean) - 2.0 * q.loc * p.mean) / (2.0 * torch.square(q.scale))
  return t1 + t2 + t3
end)
M.register_kl(Mo.ContinuousBernoulli, C.Uniform, function(p, q)
  local result = -p:entropy() + (q.high - q.low):log()
  return torch.where(torch.ge(q.low, 0):logical_or(torch.le(q.high, 1)), torch.ones_like(result) * math.huge, result)
end)
M.register_kl(C.Uniform, Mo.ContinuousBernoulli, function(p, q)
  local result = -p:entropy() - p.mean * q.logits - torch.log1p(-q.probs) - q:_cont_bern_log_norm()
  return torch.where(torch.ge(p.high, 1):logical_or(torch.le(p.low, 0)), torch.ones_like(result) * math.huge, result)
end)
M.register_kl(Mo.Pareto, C.Exponential, function(p, q)
  local scale_rate_prod = p.scale * q.rate
  local t1 = (p.alpha / scale_rate_prod):log()
  local t2 = p.alpha:reciprocal()
  local t3 = p.alpha * scale_rate_prod / (p.alpha - 1)
  return put(t1 - t2 + t3 - 1, p.alpha:le(1), math.huge)
end)
M.register_kl(Mo.Pareto, G.Gamma, function(p, q)
  local common = p.scale:log() + p.alpha:reciprocal()
  local t1 = p.alpha:log() - common
  local t2 = q.concentration:lgamma() - q.concentration * q.rate:log()
  local t3 = (1 - q.concentration) * common
  local t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
  return put(t1 + t2 + t3 + t4 - 1, p.alpha:le(1), math.huge)
end)
M.register_kl(Mo.Pareto, C.Normal, function(p, q)
  local var_normal = 2 * q.scale:pow(2)
  local common = p.scale / (p.alpha - 1)
  local t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale):log()
  local t2 = p.alpha:reciprocal()
  local t3 = p.alpha * common:pow(2) / (p.alpha - 2)
  local t4 = (p.alpha * common - q.loc):pow(2)
  return put(t1 - t2 + (t3 + t4) / var_normal - 1, p.alpha:le(2), math.huge)
end)
M.register_kl(C.Uniform, Mo.Pareto, function(p, q)
  local support = p.high - p.low
  local t1 = (q.alpha * q.scale:pow(q.alpha) * support):log()
  local t2 = (x_log_x(p.high) - x_log_x(p.low) - support) / support
  return put(t2 * (q.alpha + 1) - t1, p.low:lt(q.scale), math.huge)
end)
for _, pq in ipairs {
  { G.Beta, Mo.Pareto, 'concentration1' }, { Mo.ContinuousBernoulli, Mo.Pareto, 'probs' },
  { C.Exponential, Mo.ContinuousBernoulli, 'rate' }, { C.Exponential, Mo.Pareto, 'rate' },
  { G.Gamma, Mo.ContinuousBernoulli, 'concentration' }, { G.Gamma, Mo.Pareto, 'concentration' },
  { Tr.Gumbel, Mo.ContinuousBernoulli, 'loc' }, { Tr.Gumbel, Mo.Pareto, 'loc' },
  { C.Laplace, Mo.ContinuousBernoulli, 'loc' }, { C.Laplace, Mo.Pareto, 'loc' },
  { C.Normal, Mo.ContinuousBernoulli, 'loc' }, { C.Normal, Mo.Pareto, 'loc' },
  { Mo.Pareto, G.Beta, 'scale' }, { Mo.Pareto, Mo.ContinuousBernoulli, 'scale' }, { Mo.Pareto, C.Uniform, 'scale' },
} do
  M.register_kl(pq[1], pq[2], function(p) return inf_like(p[pq[3]]) end)
end

---------------------------------------------------------------------------------------- low-rank normals
local LR = LRm.LowRankMultivariateNormal
local function same_event(p, q, what)
  if p._event_shape[1] ~= q._event_shape[1] then
    fail('distributions.kl_divergence', ('KL-divergence between two %s with different event shapes cannot be computed'):format(what))
  end
end
local function lr_A(q)
  local qWt_qDinv = q._unbroadcasted_cov_factor:transpose(-2, -1) / q._unbroadcasted_cov_diag:unsqueeze(-2)
  return torch.linalg.solve_triangular(q._capacitance_tril, qWt_qDinv, { upper = false })
end
M.register_kl(LR, LR, function(p, q)
  same_event(p, q, 'Low Rank Multivariate Normals')
  local term1 = LRm._logdet(q._unbroadcasted_cov_diag, q._capacitance_tril) - LRm._logdet(p._unbroadcasted_cov_diag, p._capacitance_tril)
  local term3 = LRm._mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q.loc - p.loc, q._capacitance_tril)
  local A = lr_A(q)
  local term21 = (p._unbroadcasted_cov_diag / q._unbroadcasted_cov_diag):sum(-1)
  local term22 = LRm._trace_XXT(p._unbroadcasted_cov_factor * q._unbroadcasted_cov_diag:rsqrt():unsqueeze(-1))
  local term23 = LRm._trace_XXT(A * p._unbroadcasted_cov_diag:sqrt():unsqueeze(-2))
  local term24 = LRm._trace_XXT(A:matmul(p._unbroadcasted_cov_factor))
  local term2 = term21 + term22 - term23 - term24
  return 0.5 * (term1 + term2 + term3 - p._event_shape[1])
end)
M.register_kl(Mv.MultivariateNormal, LR, function(p, q)
  same_event(p, q, '(Low Rank) Multivariate Normals')
  local term1 = LRm._logdet(q._unbroadcasted_cov_diag, q._capacitance_tril)
    - 2 * p._unbroadcasted_scale_tril:diagonal(0, -2, -1):log():sum(-1)
  local term3 = LRm._mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q.loc - p.loc, q._capacitance_tril)
  local A = lr_A(q)
  local term21 = LRm._trace_XXT(p._unbroadcasted_scale_tril * q._unbroadcasted_cov_diag:rsqrt():unsqueeze(-1))
  local term22 = LRm._trace_XXT(A:matmul(p._unbroadcasted_scale_tril))
  return 0.5 * (term1 + (term21 - term22) + term3 - p._event_shape[1])
end)
M.register_kl(LR, Mv.MultivariateNormal, function(p, q)
  same_event(p, q, '(Low Rank) Multivariate Normals')
  local term1 = 2 * q._unbroadcasted_scale_tril:diagonal(0, -2, -1):log():sum(-1)
    - LRm._logdet(p._unbroadcasted_cov_diag, p._capacitance_tril)
  local term3 = Mv._mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
  local qb, pb = D.size_list(q._unbroadcasted_scale_tril), D.size_list(p._unbroadcasted_cov_factor)
  qb[#qb], qb[#qb - 1], pb[#pb], pb[#pb - 1] = nil, nil, nil, nil
  local bs = torch.broadcast_shapes(torch.Size(qb), torch.Size(pb))
  local batch = {}
  for i = 1, #bs do batch[i] = bs[i] end
  local n = p._event_shape[1]
  local q_tril = q._unbroadcasted_scale_tril:expand(D.concat(batch, { n, n }))
  local p_W = p._unbroadcasted_cov_factor:expand(D.concat(batch, { n, p.cov_factor:size(-1) }))
  local p_D = torch.diag_embed(p._unbroadcasted_cov_diag:sqrt()):expand(D.concat(batch, { n, n }))
  local term21 = LRm._trace_XXT(torch.linalg.solve_triangular(q_tril, p_W, { upper = false }))
  local term22 = LRm._trace_XXT(torch.linalg.solve_triangular(q_tril, p_D, { upper = false }))
  return 0.5 * (term1 + term21 + term22 + term3 - n)
end)

return M
