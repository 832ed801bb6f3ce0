-- torch.distributions.MultivariateNormal(loc, {covariance_matrix= | precision_matrix= | scale_tril=}):
-- the normal distribution of vectors (PyTorch's): one of the three matrices, each broadcast with loc's
-- batch dimensions; the others computed on first read from the lower Cholesky factor (torch.linalg's
-- LAPACK decompositions). rsample is loc + L eps with eps drawn as PyTorch's (the same numbers after
-- a seed).
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local D = require 'moontorch.distributions.distribution'
local constraints = require 'moontorch.distributions.constraints'

local fail = core.fail
local is_tensor = torch.is_tensor
local Distribution = D.Distribution
local LOG_2PI = math.log(2 * math.pi)

local M = {}

local MVN = class.class('torch.distributions.MultivariateNormal', Distribution)
M.MultivariateNormal = MVN
MVN._arg_constraints = { { 'loc', constraints.real_vector }, { 'covariance_matrix', constraints.positive_definite },
  { 'precision_matrix', constraints.positive_definite }, { 'scale_tril', constraints.lower_cholesky } }

local OPTS = { loc = true, covariance_matrix = true, precision_matrix = true, scale_tril = true, validate_args = true }

-- L with L L^T = P^-1 (PyTorch's route: the Cholesky factor of P flipped)
local function precision_to_scale_tril(P)
  local Lf = torch.linalg.cholesky(P:flip({ -2, -1 }))
  local L_inv = Lf:flip({ -2, -1 }):transpose(-2, -1)
  local I = torch.eye(P:size(-1), { dtype = P.dtype })
  return torch.linalg.solve_triangular(L_inv, I, { upper = false })
end

-- x^T (L L^T)^-1 x for a batch of vectors x and factors L broadcast against them
local function mahalanobis(L, x)
  local n = x:size(-1)
  local xb = D.size_list(x)
  xb[#xb] = nil
  local lb = D.size_list(L)
  lb[#lb], lb[#lb - 1] = nil, nil
  local bs, shape = torch.broadcast_shapes(torch.Size(xb), torch.Size(lb)), {}
  for i = 1, #bs do shape[i] = bs[i] end
  local Lx = L:expand(D.concat(shape, { n, n }))
  local xx = x:expand(D.concat(shape, { n })):unsqueeze(-1)
  return torch.linalg.solve_triangular(Lx, xx, { upper = false }):squeeze(-1):pow(2):sum(-1)
end
M._mahalanobis = mahalanobis

-- MultivariateNormal(loc, covariance_matrix, precision_matrix, scale_tril, {validate_args=}) or
-- MultivariateNormal(loc, {covariance_matrix=}) / MultivariateNormal{loc=, scale_tril=, ...}
function MVN:__init(loc, a, b, c, opts)
  local cov, prec, tril
  if type(loc) == 'table' and not is_tensor(loc) then
    for k in pairs(loc) do
      if not OPTS[k] then fail('distributions.MultivariateNormal', ("unknown option '%s'"):format(tostring(k))) end
    end
    cov, prec, tril, opts = loc.covariance_matrix, loc.precision_matrix, loc.scale_tril, { validate_args = loc.validate_args }
    loc = loc.loc
  elseif type(a) == 'table' and not is_tensor(a) then
    for k in pairs(a) do
      if not OPTS[k] or k == 'loc' then fail('distributions.MultivariateNormal', ("unknown option '%s'"):format(tostring(k))) end
    end
    cov, prec, tril, opts = a.covariance_matrix, a.precision_matrix, a.scale_tril, { validate_args = a.validate_args }
  else
    cov, prec, tril = a, b, c
  end
  if not is_tensor(loc) then fail('distributions.MultivariateNormal', 'expected loc as a tensor, got ' .. type(loc)) end
  if loc:dim() < 1 then fail('distributions.MultivariateNormal', 'loc must be at least one-dimensional.') end
  local given = (cov ~= nil and 1 or 0) + (prec ~= nil and 1 or 0) + (tril ~= nil and 1 or 0)
  if given ~= 1 then
    fail('distributions.MultivariateNormal', 'Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.')
  end
  local mat, name = cov or prec or tril, cov and 'covariance_matrix' or (prec and 'precision_matrix' or 'scale_tril')
  if not is_tensor(mat) then fail('distributions.MultivariateNormal', ('expected %s as a tensor, got %s'):format(name, type(mat))) end
  if mat:dim() < 2 then
    fail('distributions.MultivariateNormal', ('%s must be at least two-dimensional, with optional leading batch dimensions')
      :format(name == 'scale_tril' and 'scale_tril matrix' or name))
  end
  local n = loc:size(-1)
  if mat:size(-1) ~= n or mat:size(-2) ~= n then
    fail('distributions.MultivariateNormal', ('%s must be %dx%d to match loc\'s last dimension, got %dx%d')
      :format(name, n, n, mat:size(-2), mat:size(-1)))
  end
  local mb, lb = D.size_list(mat), D.size_list(loc)
  mb[#mb], mb[#mb - 1], lb[#lb] = nil, nil, nil
  local ok, bs = pcall(torch.broadcast_shapes, torch.Size(mb), torch.Size(lb))
  if not ok then fail('distributions.MultivariateNormal', ('the batch shapes of loc and %s do not broadcast'):format(name)) end
  local batch = {}
  for i = 1, #bs do batch[i] = bs[i] end
  self[name] = mat:expand(D.concat(batch, { n, n }))
  self.loc = loc:expand(D.concat(batch, { n }))
  Distribution.__init(self, batch, { n }, D.validate_opt('distributions.MultivariateNormal', opts))
  if tril then
    self._unbroadcasted_scale_tril = tril
  elseif cov then
    self._unbroadcasted_scale_tril = torch.linalg.cholesky(cov)
  else
    self._unbroadcasted_scale_tril = precision_to_scale_tril(prec)
  end
end

function MVN:expand(...)
  local shape = D.shape_arg('distributions.MultivariateNormal.expand', ...)
  local n = self._event_shape[1]
  local new = self:_new_instance()
  new.loc = self.loc:expand(D.concat(shape, { n }))
  new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
  for _, k in ipairs { 'covariance_matrix', 'scale_tril', 'precision_matrix' } do
    if rawget(self, k) then new[k] = self[k]:expand(D.concat(shape, { n, n })) end
  end
  new._batch_shape, new._event_shape = shape, self._event_shape
  return new
end

function MVN:rsample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.MultivariateNormal.rsample', ...))
  local eps = torch.empty(shape, { dtype = self.loc.dtype }):normal_()
  return self.loc + torch.matmul(self._unbroadcasted_scale_tril, eps:unsqueeze(-1)):squeeze(-1)
end

function MVN:log_prob(value)
  if not is_tensor(value) then fail('distributions.MultivariateNormal.log_prob', 'expected a tensor as value, got ' .. type(value)) end
  if self:_validating() then self:_validate_sample(value, 'log_prob') end
  local diff = value - self.loc
  local m = mahalanobis(self._unbroadcasted_scale_tril, diff)
  local half_log_det = self._unbroadcasted_scale_tril:diagonal(0, -2, -1):log():sum(-1)
  return (m + self._event_shape[1] * LOG_2PI) * -0.5 - half_log_det
end

function MVN:entropy()
  local half_log_det = self._unbroadcasted_scale_tril:diagonal(0, -2, -1):log():sum(-1)
  local h = half_log_det + 0.5 * self._event_shape[1] * (1 + LOG_2PI)
  if #self._batch_shape == 0 then return h end
  return h:expand(self._batch_shape)
end

local function full(self, t)
  local n = self._event_shape[1]
  return t:expand(D.concat(self._batch_shape, { n, n }))
end
MVN._props = {
  scale_tril = function(self)
    local v = full(self, self._unbroadcasted_scale_tril)
    rawset(self, 'scale_tril', v)
    return v
  end,
  covariance_matrix = function(self)
    local L = self._unbroadcasted_scale_tril
    local v = full(self, torch.matmul(L, L:transpose(-2, -1)))
    rawset(self, 'covariance_matrix', v)
    return v
  end,
  precision_matrix = function(self)
    local v = full(self, torch.cholesky_inverse(self._unbroadcasted_scale_tril))
    rawset(self, 'precision_matrix', v)
    return v
  end,
  support = function() return constraints.real_vector end,
  has_rsample = function() return true end,
  mean = function(self) return self.loc end,
  mode = function(self) return self.loc end,
  variance = function(self)
    return self._unbroadcasted_scale_tril:pow(2):sum(-1):expand(D.concat(self._batch_shape, self._event_shape))
  end,
}

return M
