-- torch.distributions.LowRankMultivariateNormal(loc, cov_factor, cov_diag): the normal distribution of
-- vectors whose covariance is W W^T + diag(D), W (n x m) of low rank (PyTorch's: its capacitance matrix
-- I + W^T D^-1 W and its Cholesky factor, Woodbury's identity for the Mahalanobis term, the matrix
-- determinant lemma for the log determinant; torch.linalg's LAPACK decompositions). rsample draws m
-- normals then n, as PyTorch's (the same numbers after a seed).
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local D = require 'moontorch.distributions.distribution'
local Mv = require 'moontorch.distributions.multivariate'
local constraints = require 'moontorch.distributions.constraints'

local fail = core.fail
local is_tensor = torch.is_tensor
local Distribution = D.Distribution
local LOG_2PI = math.log(2 * math.pi)

local M = {}

local function batch_mv(A, x) return torch.matmul(A, x:unsqueeze(-1)):squeeze(-1) end
local function trace_XXT(X) return X:pow(2):sum({ -2, -1 }) end

-- the Cholesky factor of I + W^T D^-1 W
local function capacitance_tril(W, Dg)
  local m = W:size(-1)
  local K = torch.matmul(W:transpose(-2, -1) / Dg:unsqueeze(-2), W)
  return torch.linalg.cholesky(K + torch.eye(m, { dtype = K.dtype }))
end
local function lowrank_logdet(Dg, C)
  return 2 * C:diagonal(0, -2, -1):log():sum(-1) + Dg:log():sum(-1)
end
local function lowrank_mahalanobis(W, Dg, x, C)
  local Wt_Dinv = W:transpose(-2, -1) / Dg:unsqueeze(-2)
  local term1 = (x:pow(2) / Dg):sum(-1)
  return term1 - Mv._mahalanobis(C, batch_mv(Wt_Dinv, x))
end
M._logdet, M._mahalanobis, M._trace_XXT = lowrank_logdet, lowrank_mahalanobis, trace_XXT

local LR = class.class('torch.distributions.LowRankMultivariateNormal', Distribution)
M.LowRankMultivariateNormal = LR
LR._arg_constraints = { { 'loc', constraints.real_vector }, { 'cov_factor', constraints.independent(constraints.real, 2) },
  { 'cov_diag', constraints.independent(constraints.positive, 1) } }

-- LowRankMultivariateNormal(loc, cov_factor, cov_diag, {validate_args=}) or {loc=, cov_factor=, cov_diag=}
function LR:__init(loc, cov_factor, cov_diag, opts)
  local op = 'distributions.LowRankMultivariateNormal'
  local vals, validate = D.args(op, { 'loc', 'cov_factor', 'cov_diag' }, loc, cov_factor, cov_diag, opts)
  loc, cov_factor, cov_diag = vals[1], vals[2], vals[3]
  for i, name in ipairs { 'loc', 'cov_factor', 'cov_diag' } do
    if not is_tensor(vals[i]) then fail(op, ('expected %s as a tensor, got %s'):format(name, type(vals[i]))) end
  end
  if loc:dim() < 1 then fail(op, 'loc must be at least one-dimensional.') end
  local n = loc:size(-1)
  if cov_factor:dim() < 2 then
    fail(op, 'cov_factor must be at least two-dimensional, with optional leading batch dimensions')
  end
  if cov_factor:size(-2) ~= n then fail(op, ('cov_factor must be a batch of matrices with shape %d x m'):format(n)) end
  if cov_diag:dim() < 1 or cov_diag:size(-1) ~= n then
    fail(op, ('cov_diag must be a batch of vectors with shape torch.Size([%d])'):format(n))
  end
  local ok, b = pcall(torch.broadcast_tensors, loc:unsqueeze(-1), cov_factor, cov_diag:unsqueeze(-1))
  if not ok then
    fail(op, ('Incompatible batch shapes: loc %s, cov_factor %s, cov_diag %s'):format(tostring(loc:size()),
      tostring(cov_factor:size()), tostring(cov_diag:size())))
  end
  self.cov_factor = b[2]
  self.loc = b[1]:select(-1, 1)
  self.cov_diag = b[3]:select(-1, 1)
  local batch = D.size_list(self.loc)
  batch[#batch] = nil
  self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
  self._capacitance_tril = capacitance_tril(cov_factor, cov_diag)
  Distribution.__init(self, batch, { n }, validate)
end

function LR:expand(...)
  local shape = D.shape_arg('distributions.LowRankMultivariateNormal.expand', ...)
  local new = self:_new_instance()
  local loc_shape = D.concat(shape, self._event_shape)
  new.loc, new.cov_diag = self.loc:expand(loc_shape), self.cov_diag:expand(loc_shape)
  new.cov_factor = self.cov_factor:expand(D.concat(loc_shape, { self.cov_factor:size(-1) }))
  new._unbroadcasted_cov_factor, new._unbroadcasted_cov_diag = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
  new._capacitance_tril = self._capacitance_tril
  new._batch_shape, new._event_shape = shape, self._event_shape
  return new
end

function LR:rsample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.LowRankMultivariateNormal.rsample', ...))
  local W_shape = {}
  for i = 1, #shape - 1 do W_shape[i] = shape[i] end
  W_shape[#W_shape + 1] = self.cov_factor:size(-1)
  local eps_W = torch.empty(W_shape, { dtype = self.loc.dtype }):normal_()
  local eps_D = torch.empty(shape, { dtype = self.loc.dtype }):normal_()
  return self.loc + batch_mv(self._unbroadcasted_cov_factor, eps_W) + self._unbroadcasted_cov_diag:sqrt() * eps_D
end
function LR:log_prob(value)
  if not is_tensor(value) then fail('distributions.LowRankMultivariateNormal.log_prob', 'expected a tensor as value, got ' .. type(value)) end
  if self:_validating() then self:_validate_sample(value, 'log_prob') end
  local W, Dg, C = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, self._capacitance_tril
  local m = lowrank_mahalanobis(W, Dg, value - self.loc, C)
  return -0.5 * (self._event_shape[1] * LOG_2PI + lowrank_logdet(Dg, C) + m)
end
function LR:entropy()
  local h = 0.5 * (self._event_shape[1] * (1.0 + LOG_2PI) + lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril))
  if #self._batch_shape == 0 then return h end
  return h:expand(self._batch_shape)
end

local function cached(name, fn)
  return function(self)
    local v = fn(self)
    rawset(self, name, v)
    return v
  end
end
local function full(self, t) return t:expand(D.concat(self._batch_shape, self._event_shape, self._event_shape)) end
LR._props = {
  support = function() return constraints.real_vector end,
  has_rsample = function() return true end,
  mean = function(self) return self.loc end,
  mode = function(self) return self.loc end,
  variance = cached('variance', function(self)
    return (self._unbroadcasted_cov_factor:pow(2):sum(-1) + self._unbroadcasted_cov_diag):expand(D.concat(self._batch_shape, self._event_shape))
  end),
  scale_tril = cached('scale_tril', function(self)
    local n = self._event_shape[1]
    local dsq = self._unbroadcasted_cov_diag:sqrt():unsqueeze(-1)
    local Dinvsqrt_W = self._unbroadcasted_cov_factor / dsq
    local K = torch.matmul(Dinvsqrt_W, Dinvsqrt_W:transpose(-2, -1)) + torch.eye(n, { dtype = dsq.dtype })
    return full(self, dsq * torch.linalg.cholesky(K))
  end),
  covariance_matrix = cached('covariance_matrix', function(self)
    local W = self._unbroadcasted_cov_factor
    return full(self, torch.matmul(W, W:transpose(-2, -1)) + torch.diag_embed(self._unbroadcasted_cov_diag))
  end),
  precision_matrix = cached('precision_matrix', function(self)
    local Dg = self._unbroadcasted_cov_diag
    local Wt_Dinv = self._unbroadcasted_cov_factor:transpose(-2, -1) / Dg:unsqueeze(-2)
    local A = torch.linalg.solve_triangular(self._capacitance_tril, Wt_Dinv, { upper = false })
    return full(self, torch.diag_embed(Dg:reciprocal()) - torch.matmul(A:transpose(-2, -1), A))
  end),
}

return M
