-- torch.distributions' Gamma family: Gamma, Chi2, Beta, Dirichlet, StudentT (PyTorch 1.13's, same
-- formulas, same draws after the same seed: torch._standard_gamma and torch._sample_dirichlet are
-- PyTorch's CPU samplers in C, core/tensor/samplers.c). Their rsample is differentiable in the
-- parameters by the implicit reparameterization gradient (StandardGammaBackward0 for Gamma, Chi2 and
-- StudentT; _DirichletBackward, torch._dirichlet_grad, for Dirichlet and Beta). Parameters are tensors
-- or numbers, positional or in an options table: Gamma(2, 1), Beta{concentration1 = a, concentration0 = b}.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local D = require 'moontorch.distributions.distribution'
local C = require 'moontorch.distributions.continuous'
local constraints = require 'moontorch.distributions.constraints'

local fail = core.fail
local is_tensor = torch.is_tensor
local Distribution = D.Distribution
local params, expander = C._params, C._expander
local LGAMMA_HALF = 0.5 * math.log(math.pi) -- lgamma(0.5)

local M = {}

---------------------------------------------------------------------------------------- Gamma
local Gamma = class.class('torch.distributions.Gamma', Distribution)
M.Gamma = Gamma
Gamma._arg_constraints = { { 'concentration', constraints.positive }, { 'rate', constraints.positive } }

-- Gamma(concentration, rate, {validate_args=}): density rate^a x^(a-1) e^(-rate x) / Gamma(a)
function Gamma:__init(concentration, rate, opts)
  local numbers, validate
  self.concentration, self.rate, numbers, validate = params('distributions.' .. D.short(self), { 'concentration', 'rate' },
    concentration, rate, opts)
  self._dtype = self.rate.dtype
  Distribution.__init(self, numbers and {} or D.size_list(self.concentration), {}, validate)
end
Gamma.expand = expander({ 'concentration', 'rate' })

function Gamma:rsample(...)
  local shape = self:_extended_shape(D.shape_arg(D.op(self) .. '.rsample', ...))
  local value = torch._standard_gamma(self.concentration:expand(shape)) / self.rate:expand(shape)
  value:detach():clamp_({ min = torch.finfo(value.dtype).tiny }) -- not recorded, as PyTorch's
  return value
end
function Gamma:log_prob(value)
  value = self:_value(value, 'log_prob', self._dtype)
  local a, b = self.concentration, self.rate
  return torch.xlogy(a, b) + torch.xlogy(a - 1, value) - b * value - torch.lgamma(a)
end
function Gamma:entropy()
  local a = self.concentration
  return a - torch.log(self.rate) + torch.lgamma(a) + (1.0 - a) * torch.digamma(a)
end
Gamma._props = {
  support = function() return constraints.nonnegative end,
  has_rsample = function() return true end,
  mean = function(self) return self.concentration / self.rate end,
  mode = function(self) return ((self.concentration - 1) / self.rate):clamp({ min = 0 }) end,
  variance = function(self) return self.concentration / self.rate:pow(2) end,
}

---------------------------------------------------------------------------------------- Chi2
local Chi2 = class.class('torch.distributions.Chi2', Gamma)
M.Chi2 = Chi2
Chi2._arg_constraints = { { 'df', constraints.positive } }
Chi2._computed_args = { df = true }

-- Chi2(df, {validate_args=}): Gamma(df / 2, 1 / 2)
function Chi2:__init(df, opts)
  local vals, validate = D.args('distributions.Chi2', { 'df' }, df, opts)
  df = vals[1]
  if not is_tensor(df) and type(df) ~= 'number' then
    fail('distributions.Chi2', 'expected df (a tensor or a number), got ' .. type(df))
  end
  Gamma.__init(self, 0.5 * df, 0.5, { validate_args = validate })
end
Chi2._props = { df = function(self) return self.concentration * 2 end }

---------------------------------------------------------------------------------------- Dirichlet
-- the draw and its gradient (PyTorch's _Dirichlet function: grad_fn _DirichletBackward)
local DirichletFn = torch.autograd.Function('torch.distributions._Dirichlet')
function DirichletFn.forward(ctx, concentration)
  local x = torch._sample_dirichlet(concentration)
  ctx:save_for_backward(x, concentration)
  return x
end
function DirichletFn.backward(ctx, grad_output)
  local x, concentration = unpack(ctx.saved_tensors)
  local total = concentration:sum(-1, true):expand_as(concentration)
  local grad = torch._dirichlet_grad(x, concentration, total)
  return grad * (grad_output - (x * grad_output):sum(-1, true))
end

local Dirichlet = class.class('torch.distributions.Dirichlet', Distribution)
M.Dirichlet = Dirichlet
Dirichlet._arg_constraints = { { 'concentration', constraints.independent(constraints.positive, 1) } }

-- Dirichlet(concentration, {validate_args=}): vectors on the simplex, K the last dimension of
-- concentration (the event), the dimensions before it the batch
function Dirichlet:__init(concentration, opts)
  local vals, validate = D.args('distributions.Dirichlet', { 'concentration' }, concentration, opts)
  concentration = vals[1]
  if not is_tensor(concentration) then
    fail('distributions.Dirichlet', 'expected concentration as a tensor, got ' .. type(concentration))
  end
  if concentration:dim() < 1 then
    fail('distributions.Dirichlet', '`concentration` parameter must be at least one-dimensional.')
  end
  self.concentration = concentration
  local batch = D.size_list(concentration)
  local k = table.remove(batch)
  Distribution.__init(self, batch, { k }, validate)
end

function Dirichlet:expand(...)
  local shape = D.shape_arg('distributions.Dirichlet.expand', ...)
  local new = self:_new_instance()
  new.concentration = self.concentration:expand(D.concat(shape, self._event_shape))
  new._batch_shape, new._event_shape = shape, self._event_shape
  return new
end

function Dirichlet:rsample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.Dirichlet.rsample', ...))
  return DirichletFn.apply(self.concentration:expand(shape))
end
function Dirichlet:log_prob(value)
  value = self:_value(value, 'log_prob', self.concentration.dtype)
  local a = self.concentration
  return (torch.log(value) * (a - 1.0)):sum(-1) + torch.lgamma(a:sum(-1)) - torch.lgamma(a):sum(-1)
end
function Dirichlet:entropy()
  local a = self.concentration
  local k, a0 = a:size(-1), a:sum(-1)
  return torch.lgamma(a):sum(-1) - torch.lgamma(a0) - (k - a0) * torch.digamma(a0)
    - ((a - 1.0) * torch.digamma(a)):sum(-1)
end
Dirichlet._props = {
  support = function() return constraints.simplex end,
  has_rsample = function() return true end,
  mean = function(self) return self.concentration / self.concentration:sum(-1, true) end,
  -- the interior mode; a vertex (the largest concentration's) where every concentration is below 1
  mode = function(self)
    local a = self.concentration
    local am1 = (a - 1):clamp({ min = 0 })
    local mode = am1 / am1:sum(-1, true)
    local mask = a:lt(1):all(-1)
    local k = a:size(-1)
    if a:dim() == 1 then
      if mask:all() then mode = torch.nn.functional.one_hot(mode:argmax(-1), k):to(mode.dtype) end
    elseif mask:any() then
      mode[mask] = torch.nn.functional.one_hot(mode[mask]:argmax(-1), k):to(mode.dtype)
    end
    return mode
  end,
  variance = function(self)
    local a = self.concentration
    local a0 = a:sum(-1, true)
    return a * (a0 - a) / (a0:pow(2) * (a0 + 1))
  end,
}

---------------------------------------------------------------------------------------- Beta
local Beta = class.class('torch.distributions.Beta', Distribution)
M.Beta = Beta
Beta._arg_constraints = { { 'concentration1', constraints.positive }, { 'concentration0', constraints.positive } }
Beta._computed_args = { concentration1 = true, concentration0 = true }

-- Beta(concentration1, concentration0, {validate_args=}): a Dirichlet of the pair (x, 1 - x)
function Beta:__init(c1, c0, opts)
  local vals, validate = D.args('distributions.Beta', { 'concentration1', 'concentration0' }, c1, c0, opts)
  c1, c0 = vals[1], vals[2]
  local both
  if type(c1) == 'number' and type(c0) == 'number' then
    both = torch.tensor({ c1, c0 }, { dtype = torch.get_default_dtype() })
  else
    if c1 == nil or c0 == nil then
      fail('distributions.Beta', ('expected concentration1 and concentration0 (tensors or numbers), got %s and %s'):format(type(c1), type(c0)))
    end
    local b = D.broadcast_all('distributions.Beta', c1, c0)
    both = torch.stack({ b[1], b[2] }, -1)
  end
  self._dirichlet = Dirichlet(both, { validate_args = validate })
  Distribution.__init(self, self._dirichlet._batch_shape, {}, validate)
end

function Beta:expand(...)
  local shape = D.shape_arg('distributions.Beta.expand', ...)
  local new = self:_new_instance()
  new._dirichlet = self._dirichlet:expand(shape)
  new._batch_shape, new._event_shape = shape, {}
  return new
end

function Beta:rsample(...)
  return self._dirichlet:rsample(D.shape_arg('distributions.Beta.rsample', ...)):select(-1, 1)
end
function Beta:log_prob(value)
  value = self:_value(value, 'log_prob', self._dirichlet.concentration.dtype)
  return self._dirichlet:log_prob(torch.stack({ value, 1.0 - value }, -1))
end
function Beta:entropy() return self._dirichlet:entropy() end
Beta._props = {
  concentration1 = function(self) return self._dirichlet.concentration:select(-1, 1) end,
  concentration0 = function(self) return self._dirichlet.concentration:select(-1, 2) end,
  support = function() return constraints.unit_interval end,
  has_rsample = function() return true end,
  mean = function(self) return self.concentration1 / (self.concentration1 + self.concentration0) end,
  mode = function(self) return self._dirichlet.mode:select(-1, 1) end,
  variance = function(self)
    local a, b = self.concentration1, self.concentration0
    local total = a + b
    return a * b / (total:pow(2) * (total + 1))
  end,
}

---------------------------------------------------------------------------------------- StudentT
local StudentT = class.class('torch.distributions.StudentT', Distribution)
M.StudentT = StudentT
StudentT._arg_constraints = { { 'df', constraints.positive }, { 'loc', constraints.real }, { 'scale', constraints.positive } }

-- StudentT(df, loc = 0, scale = 1, {validate_args=})
function StudentT:__init(df, loc, scale, opts)
  local vals, validate = D.args('distributions.StudentT', { 'df', 'loc', 'scale' }, df, loc, scale, opts)
  if vals[1] == nil then fail('distributions.StudentT', 'expected df (a tensor or a number), got nil') end
  local b = D.broadcast_all('distributions.StudentT', vals[1], vals[2] == nil and 0.0 or vals[2], vals[3] == nil and 1.0 or vals[3])
  self.df, self.loc, self.scale = b[1], b[2], b[3]
  self._chi2 = Chi2(self.df)
  Distribution.__init(self, D.size_list(self.df), {}, validate)
end

function StudentT:expand(...)
  local shape = D.shape_arg('distributions.StudentT.expand', ...)
  local new = self:_new_instance()
  new.df, new.loc, new.scale = self.df:expand(shape), self.loc:expand(shape), self.scale:expand(shape)
  new._chi2 = self._chi2:expand(shape)
  new._batch_shape, new._event_shape = shape, {}
  return new
end

function StudentT:rsample(...)
  local ss = D.shape_arg('distributions.StudentT.rsample', ...)
  local X = torch.empty(self:_extended_shape(ss), { dtype = self.df.dtype }):normal_()
  local Z = self._chi2:rsample(ss)
  local Y = X * torch.rsqrt(Z / self.df)
  return self.loc + self.scale * Y
end
function StudentT:log_prob(value)
  value = self:_value(value, 'log_prob', self.df.dtype)
  local y = (value - self.loc) / self.scale
  local df = self.df
  local Z = self.scale:log() + 0.5 * df:log() + 0.5 * math.log(math.pi) + torch.lgamma(0.5 * df) - torch.lgamma(0.5 * (df + 1.0))
  return -0.5 * (df + 1.0) * torch.log1p(y:pow(2.0) / df) - Z
end
function StudentT:entropy()
  local df = self.df
  local lbeta = torch.lgamma(0.5 * df) + LGAMMA_HALF - torch.lgamma(0.5 * (df + 1))
  return self.scale:log() + 0.5 * (df + 1) * (torch.digamma(0.5 * (df + 1)) - torch.digamma(0.5 * df))
    + 0.5 * df:log() + lbeta
end
StudentT._props = {
  support = function() return constraints.real end,
  has_rsample = function() return true end,
  mean = function(self) return torch.where(self.df:le(1), torch.full({}, 0 / 0, { dtype = self.loc.dtype }), self.loc) end,
  mode = function(self) return self.loc end,
  variance = function(self)
    local df = self.df
    local big = self.scale:pow(2) * df / (df - 2)
    local mid = torch.where(df:gt(1), torch.full({}, math.huge, { dtype = df.dtype }), torch.full({}, 0 / 0, { dtype = df.dtype }))
    return torch.where(df:gt(2), big, mid)
  end,
}

return M
