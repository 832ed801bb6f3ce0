-- torch.distributions' count distributions: Poisson, Binomial, Multinomial, NegativeBinomial
-- (PyTorch 1.13's, same formulas, same draws after the same seed: torch.poisson and torch.binomial are
-- PyTorch's CPU samplers in C, core/tensor/samplers.c; Multinomial counts Categorical draws, whose
-- categories count from 1, into a vector of K counts). Binomial and NegativeBinomial take probs or
-- logits (not both), as Bernoulli: Binomial(10, p), Binomial{total_count = 10, logits = l}.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local D = require 'moontorch.distributions.distribution'
local C = require 'moontorch.distributions.continuous'
local Dd = require 'moontorch.distributions.discrete'
local G = require 'moontorch.distributions.gamma'
local constraints = require 'moontorch.distributions.constraints'

local fail = core.fail
local is_tensor = torch.is_tensor
local Distribution = D.Distribution
local F = torch.nn.functional

local M = {}

---------------------------------------------------------------------------------------- Poisson
local Poisson = class.class('torch.distributions.Poisson', Distribution)
M.Poisson = Poisson
Poisson._arg_constraints = { { 'rate', constraints.nonnegative } }

-- Poisson(rate, {validate_args=})
function Poisson:__init(rate, opts)
  local number, validate
  self.rate, number, validate = C._params('distributions.Poisson', { 'rate' }, rate, opts)
  Distribution.__init(self, number and {} or D.size_list(self.rate), {}, validate)
end
Poisson.expand = C._expander({ 'rate' })

function Poisson:sample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.Poisson.sample', ...))
  return D.no_grad(function() return torch.poisson(self.rate:expand(shape)) end)
end
function Poisson:log_prob(value)
  value = self:_value(value, 'log_prob', self.rate.dtype)
  local v = D.broadcast_all('distributions.Poisson.log_prob', self.rate, value)
  local rate, x = v[1], v[2]
  return torch.xlogy(x, rate) - rate - (x + 1):lgamma()
end
Poisson._props = {
  support = function() return constraints.nonnegative_integer end,
  mean = function(self) return self.rate end,
  mode = function(self) return self.rate:floor() end,
  variance = function(self) return self.rate end,
}

---------------------------------------------------------------------------------------- Binomial
-- total_count and one of probs / logits, broadcast, total_count of the parameter's dtype
local function count_and_param(self, opname, default_count, ...)
  local vals, validate = D.args(opname, { 'total_count', 'probs', 'logits' }, ...)
  local total_count, probs, logits = vals[1], vals[2], vals[3]
  if total_count == nil then total_count = default_count end
  if (probs == nil) == (logits == nil) then fail(opname, 'Either `probs` or `logits` must be specified, but not both.') end
  if total_count == nil then fail(opname, 'expected total_count (a tensor or a number), got nil') end
  local b = D.broadcast_all(opname, total_count, probs ~= nil and probs or logits)
  self.total_count = b[1]:type_as(b[2])
  if probs ~= nil then self.probs = b[2] else self.logits = b[2] end
  self._param = b[2]
  Distribution.__init(self, D.size_list(b[2]), {}, validate)
end

local function count_expand(self, ...)
  local shape = D.shape_arg(D.op(self) .. '.expand', ...)
  local new = self:_new_instance()
  new.total_count = self.total_count:expand(shape)
  if rawget(self, 'probs') then new.probs = self.probs:expand(shape); new._param = new.probs end
  if rawget(self, 'logits') then new.logits = self.logits:expand(shape); new._param = new.logits end
  new._batch_shape, new._event_shape = shape, {}
  return new
end

-- PyTorch's _clamp_by_zero: x where positive, else 0, with half the gradient at 0
local function clamp_by_zero(x) return (x:clamp({ min = 0 }) + x - x:clamp({ max = 0 })) / 2 end

local Binomial = class.class('torch.distributions.Binomial', Distribution)
M.Binomial = Binomial
Binomial._arg_constraints = { { 'total_count', constraints.nonnegative_integer }, { 'probs', constraints.unit_interval },
  { 'logits', constraints.real } }

-- Binomial(total_count = 1, probs, logits, {validate_args=}) or Binomial{total_count=, probs= | logits=}
function Binomial:__init(total_count, probs, logits, opts)
  count_and_param(self, 'distributions.Binomial', 1, total_count, probs, logits, opts)
end
Binomial.expand = count_expand

-- the largest total_count, which must be everyone's (entropy, enumerate_support)
local function homogeneous_count(self, what)
  local n = self.total_count:max():item()
  if self.total_count:min():item() ~= n then
    fail('distributions.Binomial.' .. what, ('Inhomogeneous total count not supported by `%s`.'):format(what))
  end
  return math.floor(n)
end

function Binomial:sample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.Binomial.sample', ...))
  return D.no_grad(function() return torch.binomial(self.total_count:expand(shape), self.probs:expand(shape)) end)
end
function Binomial:log_prob(value)
  value = self:_value(value, 'log_prob', self._param.dtype)
  local n, logits = self.total_count, self.logits
  local log_factorial_n = torch.lgamma(n + 1)
  local log_factorial_k = torch.lgamma(value + 1)
  local log_factorial_nmk = torch.lgamma(n - value + 1)
  local normalize_term = n * clamp_by_zero(logits) + n * torch.log1p(torch.exp(-torch.abs(logits))) - log_factorial_n
  return value * logits - log_factorial_k - log_factorial_nmk - normalize_term
end
function Binomial:entropy()
  homogeneous_count(self, 'entropy')
  local log_prob = self:log_prob(self:enumerate_support(false))
  return -(torch.exp(log_prob) * log_prob):sum(1)
end
-- enumerate_support(expand=true): 0..total_count (of the parameter's dtype) over the batch
function Binomial:enumerate_support(expand)
  if type(expand) == 'table' and not is_tensor(expand) then expand = expand.expand end
  local n = homogeneous_count(self, 'enumerate_support')
  local view = { -1 }
  for i = 1, #self._batch_shape do view[i + 1] = 1 end
  local values = torch.arange(1 + n, { dtype = self._param.dtype }):view(view)
  if expand == nil or expand == true then values = values:expand(D.concat({ -1 }, self._batch_shape)) end
  return values
end
Binomial._props = {
  probs = Dd.Bernoulli._props.probs,
  logits = Dd.Bernoulli._props.logits,
  param_shape = function(self) return self._param:size() end,
  support = function(self) return constraints.integer_interval(0, self.total_count) end,
  has_enumerate_support = function() return true end,
  mean = function(self) return self.total_count * self.probs end,
  mode = function(self) return torch.minimum(((self.total_count + 1) * self.probs):floor(), self.total_count) end,
  variance = function(self) return self.total_count * self.probs * (1 - self.probs) end,
}

---------------------------------------------------------------------------------------- Multinomial
local Multinomial = class.class('torch.distributions.Multinomial', Distribution)
M.Multinomial = Multinomial
Multinomial._arg_constraints = { { 'probs', constraints.simplex }, { 'logits', constraints.real_vector } }

-- Multinomial(total_count = 1, probs, logits, {validate_args=}) or Multinomial{total_count=, probs= | logits=}:
-- vectors of K counts summing to total_count (a whole number), K the last dimension of probs/logits
function Multinomial:__init(total_count, probs, logits, opts)
  local vals, validate
  if type(total_count) == 'table' and not is_tensor(total_count) then
    vals, validate = D.args('distributions.Multinomial', { 'total_count', 'probs', 'logits' }, total_count)
  else
    vals = { total_count, probs, logits }
    validate = D.validate_opt('distributions.Multinomial', opts)
  end
  total_count = vals[1] == nil and 1 or vals[1]
  if type(total_count) ~= 'number' or total_count ~= math.floor(total_count) then
    fail('distributions.Multinomial', 'inhomogeneous total_count is not supported')
  end
  self.total_count = total_count
  self._categorical = Dd.Categorical(vals[2], vals[3])
  self._binomial = Binomial(total_count, self.probs)
  Distribution.__init(self, self._categorical._batch_shape, { self._categorical._num_events }, validate)
end

function Multinomial:expand(...)
  local shape = D.shape_arg('distributions.Multinomial.expand', ...)
  local new = self:_new_instance()
  new.total_count = self.total_count
  new._categorical = self._categorical:expand(shape)
  new._binomial = self._binomial -- (as PyTorch's expand, which keeps the unexpanded Binomial)
  new._batch_shape, new._event_shape = shape, self._event_shape
  return new
end

function Multinomial:sample(...)
  local ss = D.shape_arg('distributions.Multinomial.sample', ...)
  return D.no_grad(function()
    local samples = self._categorical:sample(D.concat({ self.total_count }, ss))
    local perm = {}
    for i = 2, samples:dim() do perm[#perm + 1] = i end
    perm[#perm + 1] = 1
    samples = samples:permute(perm)
    local counts = torch.zeros(self:_extended_shape(ss), { dtype = samples.dtype })
    counts:scatter_add_(-1, samples, torch.ones_like(samples))
    return counts:type_as(self.probs)
  end)
end
function Multinomial:log_prob(value)
  value = self:_value(value, 'log_prob', self._categorical._param.dtype)
  local v = D.broadcast_all('distributions.Multinomial.log_prob', self.logits, value)
  local logits, x = v[1]:clone(), v[2]
  local log_factorial_n = torch.lgamma(x:sum(-1) + 1)
  local log_factorial_xs = torch.lgamma(x + 1):sum(-1)
  logits = torch.where(x:eq(0):logical_and(logits:eq(-math.huge)), torch.zeros({}, { dtype = logits.dtype }), logits)
  local log_powers = (logits * x):sum(-1)
  return log_factorial_n - log_factorial_xs + log_powers
end
function Multinomial:entropy()
  -- n is an integer tensor, as PyTorch's torch.tensor(total_count): its lgamma is of the default dtype
  local n = torch.tensor(self.total_count, { dtype = torch.int64 })
  local cat_entropy = self._categorical:entropy()
  local term1 = n * cat_entropy - torch.lgamma(n + 1)
  local support = self._binomial:enumerate_support(false)
  support = support:narrow(1, 2, support:size(1) - 1)
  local binomial_probs = torch.exp(self._binomial:log_prob(support))
  local weights = torch.lgamma(support + 1)
  local term2 = (binomial_probs * weights):sum({ 1, -1 })
  return term1 + term2
end
Multinomial._props = {
  _param = function(self) return self._categorical._param end,
  probs = function(self) return self._categorical.probs end,
  logits = function(self) return self._categorical.logits end,
  param_shape = function(self) return self._categorical.param_shape end,
  support = function(self) return constraints.multinomial(self.total_count) end,
  mean = function(self) return self.probs * self.total_count end,
  variance = function(self) return self.total_count * self.probs * (1 - self.probs) end,
}

---------------------------------------------------------------------------------------- NegativeBinomial
local NegativeBinomial = class.class('torch.distributions.NegativeBinomial', Distribution)
M.NegativeBinomial = NegativeBinomial
NegativeBinomial._arg_constraints = { { 'total_count', constraints.greater_than_eq(0) },
  { 'probs', constraints.half_open_interval(0, 1) }, { 'logits', constraints.real } }

-- NegativeBinomial(total_count, probs, logits, {validate_args=}): the number of successes before
-- total_count failures of Bernoulli(probs) trials
function NegativeBinomial:__init(total_count, probs, logits, opts)
  count_and_param(self, 'distributions.NegativeBinomial', nil, total_count, probs, logits, opts)
end
NegativeBinomial.expand = count_expand

function NegativeBinomial:sample(...)
  local ss = D.shape_arg('distributions.NegativeBinomial.sample', ...)
  return D.no_grad(function()
    local rate = self._gamma:sample(ss)
    return torch.poisson(rate)
  end)
end
function NegativeBinomial:log_prob(value)
  value = self:_value(value, 'log_prob', self._param.dtype)
  local n, logits = self.total_count, self.logits
  local log_unnormalized_prob = n * F.logsigmoid(-logits) + value * F.logsigmoid(logits)
  local log_normalization = -torch.lgamma(n + value) + torch.lgamma(1.0 + value) + torch.lgamma(n)
  log_normalization = torch.where((n + value):eq(0), torch.zeros({}, { dtype = log_normalization.dtype }), log_normalization)
  return log_unnormalized_prob - log_normalization
end
NegativeBinomial._props = {
  probs = Dd.Bernoulli._props.probs,
  logits = Dd.Bernoulli._props.logits,
  param_shape = function(self) return self._param:size() end,
  _gamma = function(self)
    local g = G.Gamma(self.total_count, torch.exp(-self.logits), { validate_args = false })
    rawset(self, '_gamma', g)
    return g
  end,
  support = function() return constraints.nonnegative_integer end,
  mean = function(self) return self.total_count * torch.exp(self.logits) end,
  mode = function(self) return ((self.total_count - 1) * self.logits:exp()):floor():clamp({ min = 0 }) end,
  variance = function(self) return self.mean / torch.sigmoid(-self.logits) end,
}

return M
