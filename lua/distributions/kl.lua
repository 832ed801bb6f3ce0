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

return M
