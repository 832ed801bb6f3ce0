-- More of torch.distributions (PyTorch 1.13's, same formulas, same draws after the same seed): Pareto,
-- Weibull, Kumaraswamy (transformed distributions), FisherSnedecor (a ratio of Gammas),
-- ContinuousBernoulli, VonMises (PyTorch's rejection sampler, draw for draw).
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local D = require 'moontorch.distributions.distribution'
local C = require 'moontorch.distributions.continuous'
local G = require 'moontorch.distributions.gamma'
local Tr = require 'moontorch.distributions.transformed'
local T = require 'moontorch.distributions.transforms'
local constraints = require 'moontorch.distributions.constraints'

local fail = core.fail
local is_tensor = torch.is_tensor
local Distribution = D.Distribution
local TD = Tr.TransformedDistribution
local EULER = Tr.EULER_GAMMA
local NAN = 0 / 0

local M = {}

-- value where cond holds, else t (a masked fill that keeps t's gradient elsewhere)
local function put(t, cond, value)
  return torch.where(cond, torch.full({}, value, { dtype = t.dtype }), t)
end

-- two parameters broadcast together: the tensors, whether both were numbers, validate_args
local function two(opname, names, ...)
  return C._params(opname, names, ...)
end

---------------------------------------------------------------------------------------- Pareto
local Pareto = class.class('torch.distributions.Pareto', TD)
M.Pareto = Pareto
Pareto._arg_constraints = { { 'alpha', constraints.positive }, { 'scale', constraints.positive } }

-- Pareto(scale, alpha, {validate_args=}): scale exp(X), X ~ Exponential(alpha)
function Pareto:__init(scale, alpha, opts)
  local numbers, validate
  self.scale, self.alpha, numbers, validate = two('distributions.Pareto', { 'scale', 'alpha' }, scale, alpha, opts)
  local o = { validate_args = validate }
  TD.__init(self, C.Exponential(self.alpha, o), { T.ExpTransform(), T.AffineTransform(0, self.scale) }, o)
  if numbers then self._batch_shape = {} end
end
function Pareto:expand(...)
  local new = TD.expand(self, ...)
  new.scale, new.alpha = self.scale:expand(new._batch_shape), self.alpha:expand(new._batch_shape)
  new.transforms = { T.ExpTransform(), T.AffineTransform(0, new.scale) }
  return new
end
function Pareto:entropy() return (self.scale / self.alpha):log() + (1 + self.alpha:reciprocal()) end
Pareto._props = {
  support = function(self) return constraints.greater_than_eq(self.scale) end,
  mean = function(self)
    local a = self.alpha:clamp({ min = 1 })
    return a * self.scale / (a - 1)
  end,
  mode = function(self) return self.scale end,
  variance = function(self)
    local a = self.alpha:clamp({ min = 2 })
    return self.scale:pow(2) * a / ((a - 1):pow(2) * (a - 2))
  end,
}

---------------------------------------------------------------------------------------- Weibull
local Weibull = class.class('torch.distributions.Weibull', TD)
M.Weibull = Weibull
Weibull._arg_constraints = { { 'scale', constraints.positive }, { 'concentration', constraints.positive } }

local function weibull_transforms(self)
  return { T.PowerTransform(self.concentration_reciprocal), T.AffineTransform(0, self.scale) }
end
-- Weibull(scale, concentration, {validate_args=}): scale X^(1/concentration), X ~ Exponential(1)
function Weibull:__init(scale, concentration, opts)
  local _, validate
  self.scale, self.concentration, _, validate = two('distributions.Weibull', { 'scale', 'concentration' }, scale, concentration, opts)
  self.concentration_reciprocal = self.concentration:reciprocal()
  local o = { validate_args = validate }
  TD.__init(self, C.Exponential(torch.ones_like(self.scale), o), weibull_transforms(self), o)
end
function Weibull:expand(...)
  local new = TD.expand(self, ...)
  new.scale, new.concentration = self.scale:expand(new._batch_shape), self.concentration:expand(new._batch_shape)
  new.concentration_reciprocal = new.concentration:reciprocal()
  new.transforms = weibull_transforms(new)
  return new
end
function Weibull:entropy()
  return EULER * (1 - self.concentration_reciprocal) + torch.log(self.scale * self.concentration_reciprocal) + 1
end
Weibull._props = {
  support = function() return constraints.positive end,
  mean = function(self) return self.scale * torch.exp(torch.lgamma(1 + self.concentration_reciprocal)) end,
  mode = function(self)
    return self.scale * ((self.concentration - 1) / self.concentration):pow(self.concentration:reciprocal())
  end,
  variance = function(self)
    local r = self.concentration_reciprocal
    return self.scale:pow(2) * (torch.exp(torch.lgamma(1 + 2 * r)) - torch.exp(2 * torch.lgamma(1 + r)))
  end,
}

---------------------------------------------------------------------------------------- Kumaraswamy
local Kumaraswamy = class.class('torch.distributions.Kumaraswamy', TD)
M.Kumaraswamy = Kumaraswamy
Kumaraswamy._arg_constraints = { { 'concentration1', constraints.positive }, { 'concentration0', constraints.positive } }

local function kumaraswamy_transforms(self)
  return { T.PowerTransform(self.concentration0:reciprocal()), T.AffineTransform(1.0, -1.0),
    T.PowerTransform(self.concentration1:reciprocal()) }
end
-- Kumaraswamy(concentration1, concentration0, {validate_args=}): (1 - U^(1/c0))^(1/c1), U uniform
function Kumaraswamy:__init(c1, c0, opts)
  local _, validate
  self.concentration1, self.concentration0, _, validate = two('distributions.Kumaraswamy', { 'concentration1', 'concentration0' }, c1, c0, opts)
  local o = { validate_args = validate }
  local base = C.Uniform(torch.full_like(self.concentration0, 0), torch.full_like(self.concentration0, 1), o)
  TD.__init(self, base, kumaraswamy_transforms(self), o)
end
function Kumaraswamy:expand(...)
  local new = TD.expand(self, ...)
  new.concentration1, new.concentration0 = self.concentration1:expand(new._batch_shape), self.concentration0:expand(new._batch_shape)
  new.transforms = kumaraswamy_transforms(new)
  return new
end
-- the n-th moment
local function kumaraswamy_moment(a, b, n)
  local arg1 = 1 + n / a
  return b * torch.exp(torch.lgamma(arg1) + torch.lgamma(b) - torch.lgamma(arg1 + b))
end
function Kumaraswamy:entropy()
  local t1 = 1 - self.concentration1:reciprocal()
  local t0 = 1 - self.concentration0:reciprocal()
  local H0 = torch.digamma(self.concentration0 + 1) + EULER
  return t0 + t1 * H0 - torch.log(self.concentration1) - torch.log(self.concentration0)
end
Kumaraswamy._props = {
  support = function() return constraints.unit_interval end,
  has_rsample = function() return true end,
  mean = function(self) return kumaraswamy_moment(self.concentration1, self.concentration0, 1) end,
  mode = function(self)
    local a, b = self.concentration1, self.concentration0
    local log_mode = b:reciprocal() * (-b):log1p() - (-b * a):log1p()
    return put(log_mode, b:lt(1):logical_or(a:lt(1)), NAN):exp()
  end,
  variance = function(self)
    return kumaraswamy_moment(self.concentration1, self.concentration0, 2) - torch.pow(self.mean, 2)
  end,
}

---------------------------------------------------------------------------------------- FisherSnedecor
local FisherSnedecor = class.class('torch.distributions.FisherSnedecor', Distribution)
M.FisherSnedecor = FisherSnedecor
FisherSnedecor._arg_constraints = { { 'df1', constraints.positive }, { 'df2', constraints.positive } }

-- FisherSnedecor(df1, df2, {validate_args=}): (X1 / df1) / (X2 / df2), Xi ~ Chi2(dfi)
function FisherSnedecor:__init(df1, df2, opts)
  local numbers, validate
  self.df1, self.df2, numbers, validate = two('distributions.FisherSnedecor', { 'df1', 'df2' }, df1, df2, opts)
  self._gamma1 = G.Gamma(self.df1 * 0.5, self.df1)
  self._gamma2 = G.Gamma(self.df2 * 0.5, self.df2)
  Distribution.__init(self, numbers and {} or D.size_list(self.df1), {}, validate)
end
function FisherSnedecor:expand(...)
  local shape = D.shape_arg('distributions.FisherSnedecor.expand', ...)
  local new = self:_new_instance()
  new.df1, new.df2 = self.df1:expand(shape), self.df2:expand(shape)
  new._gamma1, new._gamma2 = self._gamma1:expand(shape), self._gamma2:expand(shape)
  new._batch_shape, new._event_shape = shape, {}
  return new
end
function FisherSnedecor:rsample(...)
  local ss = D.shape_arg('distributions.FisherSnedecor.rsample', ...)
  local shape = self:_extended_shape(ss)
  local X1 = self._gamma1:rsample(ss):view(shape)
  local X2 = self._gamma2:rsample(ss):view(shape)
  local tiny = torch.finfo(X2.dtype).tiny
  X2 = X2:clamp({ min = tiny })
  return (X1 / X2):clamp({ min = tiny })
end
function FisherSnedecor:log_prob(value)
  value = self:_value(value, 'log_prob', self.df1.dtype)
  local ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
  local t1 = (ct1 + ct2):lgamma() - ct1:lgamma() - ct2:lgamma()
  local t2 = ct1 * ct3:log() + (ct1 - 1) * torch.log(value)
  local t3 = (ct1 + ct2) * torch.log1p(ct3 * value)
  return t1 + t2 - t3
end
FisherSnedecor._props = {
  support = function() return constraints.positive end,
  has_rsample = function() return true end,
  mean = function(self)
    local df2 = put(self.df2, self.df2:le(2), NAN)
    return df2 / (df2 - 2)
  end,
  mode = function(self)
    local mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
    return put(mode, self.df1:le(2), NAN)
  end,
  variance = function(self)
    local df2 = put(self.df2, self.df2:le(4), NAN)
    return 2 * df2:pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2):pow(2) * (df2 - 4))
  end,
}

---------------------------------------------------------------------------------------- ContinuousBernoulli
local CB = class.class('torch.distributions.ContinuousBernoulli', Distribution)
M.ContinuousBernoulli = CB
CB._arg_constraints = { { 'probs', constraints.unit_interval }, { 'logits', constraints.real } }

local clamp_probs = D.clamp_probs

-- ContinuousBernoulli(probs, logits, lims = {0.499, 0.501}, {validate_args=}) or {probs= | logits=, lims=}:
-- densities on [0, 1] proportional to p^x (1 - p)^(1 - x); lims: where the Taylor expansions take over
function CB:__init(probs, logits, lims, opts)
  local vals, validate = D.args('distributions.ContinuousBernoulli', { 'probs', 'logits', 'lims' }, probs, logits, lims, opts)
  probs, logits, lims = vals[1], vals[2], vals[3]
  if (probs == nil) == (logits == nil) then
    fail('distributions.ContinuousBernoulli', 'Either `probs` or `logits` must be specified, but not both.')
  end
  local given = probs ~= nil and probs or logits
  local v, number = D.broadcast_all('distributions.ContinuousBernoulli', given)
  if probs ~= nil then
    if validate ~= nil and not constraints.unit_interval:check(v[1]):all() then
      fail('distributions.ContinuousBernoulli', 'The parameter probs has invalid values')
    end
    self.probs = clamp_probs(v[1])
    self._param = self.probs
  else
    self.logits = v[1]
    self._param = self.logits
  end
  self._lims = lims or { 0.499, 0.501 }
  Distribution.__init(self, number and {} or D.size_list(self._param), {}, validate)
end
function CB:expand(...)
  local shape = D.shape_arg('distributions.ContinuousBernoulli.expand', ...)
  local new = self:_new_instance()
  new._lims = self._lims
  if rawget(self, 'probs') then new.probs = self.probs:expand(shape); new._param = new.probs end
  if rawget(self, 'logits') then new.logits = self.logits:expand(shape); new._param = new.logits end
  new._batch_shape, new._event_shape = shape, {}
  return new
end
function CB:_outside_unstable_region()
  return torch.le(self.probs, self._lims[1]):logical_or(torch.gt(self.probs, self._lims[2]))
end
function CB:_cut_probs()
  return torch.where(self:_outside_unstable_region(), self.probs, self._lims[1] * torch.ones_like(self.probs))
end
function CB:_cont_bern_log_norm()
  local cut = self:_cut_probs()
  local below = torch.where(torch.le(cut, 0.5), cut, torch.zeros_like(cut))
  local above = torch.where(torch.ge(cut, 0.5), cut, torch.ones_like(cut))
  local log_norm = torch.log(torch.abs(torch.log1p(-cut) - torch.log(cut)))
    - torch.where(torch.le(cut, 0.5), torch.log1p(-2.0 * below), torch.log(2.0 * above - 1.0))
  local x = torch.pow(self.probs - 0.5, 2)
  local taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
  return torch.where(self:_outside_unstable_region(), log_norm, taylor)
end
function CB:rsample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.ContinuousBernoulli.rsample', ...))
  local u = torch.rand(shape, { dtype = self.probs.dtype })
  return self:icdf(u)
end
function CB:sample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.ContinuousBernoulli.sample', ...))
  local u = torch.rand(shape, { dtype = self.probs.dtype })
  return D.no_grad(self.icdf, self, u)
end
function CB:log_prob(value)
  value = self:_value(value, 'log_prob', self._param.dtype)
  local v = D.broadcast_all('distributions.ContinuousBernoulli.log_prob', self.logits, value)
  return -torch.nn.functional.binary_cross_entropy_with_logits(v[1], v[2], { reduction = 'none' }) + self:_cont_bern_log_norm()
end
function CB:cdf(value)
  value = self:_value(value, 'cdf', self._param.dtype)
  local cut = self:_cut_probs()
  local cdfs = (torch.pow(cut, value) * torch.pow(1.0 - cut, 1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
  local unbounded = torch.where(self:_outside_unstable_region(), cdfs, value)
  return torch.where(torch.le(value, 0.0), torch.zeros_like(value),
    torch.where(torch.ge(value, 1.0), torch.ones_like(value), unbounded))
end
function CB:icdf(value)
  value = self:_value(value, 'icdf', self._param.dtype)
  local cut = self:_cut_probs()
  return torch.where(self:_outside_unstable_region(),
    (torch.log1p(-cut + value * (2.0 * cut - 1.0)) - torch.log1p(-cut)) / (torch.log(cut) - torch.log1p(-cut)), value)
end
function CB:entropy()
  local log_probs0 = torch.log1p(-self.probs)
  local log_probs1 = torch.log(self.probs)
  return self.mean * (log_probs0 - log_probs1) - self:_cont_bern_log_norm() - log_probs0
end
CB._props = D.binary_params({
  param_shape = function(self) return self._param:size() end,
  support = function() return constraints.unit_interval end,
  has_rsample = function() return true end,
  mean = function(self)
    local cut = self:_cut_probs()
    local mus = cut / (2.0 * cut - 1.0) + 1.0 / (torch.log1p(-cut) - torch.log(cut))
    local x = self.probs - 0.5
    local taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * torch.pow(x, 2)) * x
    return torch.where(self:_outside_unstable_region(), mus, taylor)
  end,
  stddev = function(self) return torch.sqrt(self.variance) end,
  variance = function(self)
    local cut = self:_cut_probs()
    local vars = cut * (cut - 1.0) / torch.pow(1.0 - 2.0 * cut, 2) + 1.0 / torch.pow(torch.log1p(-cut) - torch.log(cut), 2)
    local x = torch.pow(self.probs - 0.5, 2)
    local taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
    return torch.where(self:_outside_unstable_region(), vars, taylor)
  end,
}, true)

---------------------------------------------------------------------------------------- VonMises
local I0_SMALL = { 1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2 }
local I0_LARGE = { 0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
  -0.1647633e-1, 0.392377e-2 }
local I1_SMALL = { 0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3 }
local I1_LARGE = { 0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1, -0.2895312e-1,
  0.1787654e-1, -0.420059e-2 }

-- Horner's rule from the last coefficient (PyTorch's _eval_poly)
local function eval_poly(y, coef)
  local result = torch.full_like(y, coef[#coef])
  for i = #coef - 1, 1, -1 do result = y * result + coef[i] end
  return result
end
-- log I_order(x), order 0 or 1 (polynomial approximations)
local function log_bessel(x, order)
  local y = (x / 3.75)
  y = y * y
  local small = eval_poly(y, order == 0 and I0_SMALL or I1_SMALL)
  if order == 1 then small = x:abs() * small end
  small = small:log()
  y = 3.75 / x
  local large = x - 0.5 * x:log() + eval_poly(y, order == 0 and I0_LARGE or I1_LARGE):log()
  return torch.where(x:lt(3.75), small, large)
end

local VonMises = class.class('torch.distributions.VonMises', Distribution)
M.VonMises = VonMises
VonMises._arg_constraints = { { 'loc', constraints.real }, { 'concentration', constraints.positive } }

-- VonMises(loc, concentration, {validate_args=}): the circular normal distribution on [-pi, pi)
function VonMises:__init(loc, concentration, opts)
  local _, validate
  self.loc, self.concentration, _, validate = two('distributions.VonMises', { 'loc', 'concentration' }, loc, concentration, opts)
  local tau = 1 + (1 + 4 * self.concentration:pow(2)):sqrt()
  local rho = (tau - (2 * tau):sqrt()) / (2 * self.concentration)
  self._proposal_r = (1 + rho:pow(2)) / (2 * rho)
  Distribution.__init(self, D.size_list(self.loc), {}, validate)
end
function VonMises:expand(...)
  local shape = D.shape_arg('distributions.VonMises.expand', ...)
  return VonMises(self.loc:expand(shape), self.concentration:expand(shape), { validate_args = rawget(self, '_validate_args') })
end
function VonMises:log_prob(value)
  value = self:_value(value, 'log_prob', self.loc.dtype)
  local lp = self.concentration * torch.cos(value - self.loc)
  return lp - math.log(2 * math.pi) - log_bessel(self.concentration, 0)
end
-- Best and Fisher's rejection sampler, three uniforms a try for every element, as PyTorch's
function VonMises:sample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.VonMises.sample', ...))
  return D.no_grad(function()
    local loc, conc, r = self.loc, self.concentration, self._proposal_r
    local x = torch.zeros(shape, { dtype = loc.dtype })
    local done = torch.zeros(shape, { dtype = torch.bool })
    while not done:all() do
      local u = torch.rand(D.concat({ 3 }, shape), { dtype = loc.dtype })
      local u1, u2, u3 = u:select(1, 1), u:select(1, 2), u:select(1, 3)
      local z = torch.cos(math.pi * u1)
      local f = (1 + r * z) / (r + z)
      local c = conc * (r - f)
      local accept = (c * (2 - c) - u2):gt(0):logical_or(((c / u2):log() + 1 - c):ge(0))
      if accept:any() then
        x = torch.where(accept, (u3 - 0.5):sign() * f:acos(), x)
        done = done:logical_or(accept)
      end
    end
    return torch.remainder(x + math.pi + loc, 2 * math.pi) - math.pi
  end)
end
VonMises._props = {
  support = function() return constraints.real end,
  mean = function(self) return self.loc end,
  mode = function(self) return self.loc end,
  variance = function(self)
    local v = 1 - (log_bessel(self.concentration, 1) - log_bessel(self.concentration, 0)):exp()
    rawset(self, 'variance', v)
    return v
  end,
}

---------------------------------------------------------------------------------------- the relaxed ones
-- a temperature: a tensor (a number becomes one, of the parameter's dtype)
local function temperature_arg(opname, temperature, dtype)
  if is_tensor(temperature) then return temperature end
  if type(temperature) ~= 'number' then fail(opname, 'expected temperature (a tensor or a number), got ' .. type(temperature)) end
  return torch.tensor(temperature, { dtype = dtype })
end

local LRB = class.class('torch.distributions.LogitRelaxedBernoulli', Distribution)
M.LogitRelaxedBernoulli = LRB
LRB._arg_constraints = { { 'probs', constraints.unit_interval }, { 'logits', constraints.real } }

-- LogitRelaxedBernoulli(temperature, probs, logits, {validate_args=}): the logit of a RelaxedBernoulli draw
function LRB:__init(temperature, probs, logits, opts)
  local vals, validate = D.args('distributions.' .. D.short(self), { 'temperature', 'probs', 'logits' }, temperature, probs, logits, opts)
  temperature, probs, logits = vals[1], vals[2], vals[3]
  if (probs == nil) == (logits == nil) then fail('distributions.' .. D.short(self), 'Either `probs` or `logits` must be specified, but not both.') end
  local v, number = D.broadcast_all('distributions.' .. D.short(self), probs ~= nil and probs or logits)
  if probs ~= nil then self.probs = v[1] else self.logits = v[1] end
  self._param = v[1]
  self.temperature = temperature_arg('distributions.' .. D.short(self), temperature, v[1].dtype)
  Distribution.__init(self, number and {} or D.size_list(v[1]), {}, validate)
end
function LRB:expand(...)
  local shape = D.shape_arg(D.op(self) .. '.expand', ...)
  local new = self:_new_instance()
  new.temperature = self.temperature
  if rawget(self, 'probs') then new.probs = self.probs:expand(shape); new._param = new.probs end
  if rawget(self, 'logits') then new.logits = self.logits:expand(shape); new._param = new.logits end
  new._batch_shape, new._event_shape = shape, {}
  return new
end
function LRB:rsample(...)
  local shape = self:_extended_shape(D.shape_arg(D.op(self) .. '.rsample', ...))
  local probs = clamp_probs(self.probs:expand(shape))
  local u = clamp_probs(torch.rand(shape, { dtype = probs.dtype }))
  return (u:log() - (-u):log1p() + probs:log() - (-probs):log1p()) / self.temperature
end
function LRB:log_prob(value)
  value = self:_value(value, 'log_prob', self._param.dtype)
  local v = D.broadcast_all(D.op(self) .. '.log_prob', self.logits, value)
  local diff = v[1] - v[2]:mul(self.temperature)
  return self.temperature:log() + diff - 2 * diff:exp():log1p()
end
LRB._props = D.binary_params {
  param_shape = function(self) return self._param:size() end,
  support = function() return constraints.real end,
  has_rsample = function() return true end,
}

local RelaxedBernoulli = class.class('torch.distributions.RelaxedBernoulli', TD)
M.RelaxedBernoulli = RelaxedBernoulli
RelaxedBernoulli._arg_constraints = { { 'probs', constraints.unit_interval }, { 'logits', constraints.real } }
-- RelaxedBernoulli(temperature, probs, logits, {validate_args=}): sigmoid of a LogitRelaxedBernoulli, in (0, 1)
function RelaxedBernoulli:__init(temperature, probs, logits, opts)
  local vals, validate = D.args('distributions.RelaxedBernoulli', { 'temperature', 'probs', 'logits' }, temperature, probs, logits, opts)
  TD.__init(self, LRB(vals[1], vals[2], vals[3]), { T.SigmoidTransform() }, { validate_args = validate })
end
RelaxedBernoulli._props = {
  temperature = function(self) return self.base_dist.temperature end,
  logits = function(self) return self.base_dist.logits end,
  probs = function(self) return self.base_dist.probs end,
  support = function() return constraints.unit_interval end,
  has_rsample = function() return true end,
}

local ERC = class.class('torch.distributions.ExpRelaxedCategorical', Distribution)
M.ExpRelaxedCategorical = ERC
ERC._arg_constraints = { { 'probs', constraints.simplex }, { 'logits', constraints.real_vector } }
-- ExpRelaxedCategorical(temperature, probs, logits, {validate_args=}): the log of a RelaxedOneHotCategorical draw
function ERC:__init(temperature, probs, logits, opts)
  local vals, validate = D.args('distributions.ExpRelaxedCategorical', { 'temperature', 'probs', 'logits' }, temperature, probs, logits, opts)
  self._categorical = require('moontorch.distributions.discrete').Categorical(vals[2], vals[3])
  self.temperature = temperature_arg('distributions.ExpRelaxedCategorical', vals[1], self._categorical._param.dtype)
  Distribution.__init(self, self._categorical._batch_shape, { self._categorical._num_events }, validate)
end
function ERC:expand(...)
  local shape = D.shape_arg('distributions.ExpRelaxedCategorical.expand', ...)
  local new = self:_new_instance()
  new.temperature = self.temperature
  new._categorical = self._categorical:expand(shape)
  new._batch_shape, new._event_shape = shape, self._event_shape
  return new
end
function ERC:rsample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.ExpRelaxedCategorical.rsample', ...))
  local u = clamp_probs(torch.rand(shape, { dtype = self.logits.dtype }))
  local gumbels = -((-(u:log())):log())
  local scores = (self.logits + gumbels) / self.temperature
  return scores - scores:logsumexp(-1, true)
end
function ERC:log_prob(value)
  local K = self._categorical._num_events
  value = self:_value(value, 'log_prob', self._categorical._param.dtype)
  local v = D.broadcast_all('distributions.ExpRelaxedCategorical.log_prob', self.logits, value)
  local log_scale = torch.full_like(self.temperature, K):lgamma() - self.temperature:log():mul(-(K - 1))
  local score = v[1] - v[2]:mul(self.temperature)
  score = (score - score:logsumexp(-1, true)):sum(-1)
  return score + log_scale
end
ERC._props = {
  param_shape = function(self) return self._categorical.param_shape end,
  logits = function(self) return self._categorical.logits end,
  probs = function(self) return self._categorical.probs end,
  support = function() return constraints.real_vector end,
  has_rsample = function() return true end,
}

local ROHC = class.class('torch.distributions.RelaxedOneHotCategorical', TD)
M.RelaxedOneHotCategorical = ROHC
ROHC._arg_constraints = { { 'probs', constraints.simplex }, { 'logits', constraints.real_vector } }
-- RelaxedOneHotCategorical(temperature, probs, logits, {validate_args=}): points of the simplex (Gumbel-softmax)
function ROHC:__init(temperature, probs, logits, opts)
  local vals, validate = D.args('distributions.RelaxedOneHotCategorical', { 'temperature', 'probs', 'logits' }, temperature, probs, logits, opts)
  local o = { validate_args = validate }
  TD.__init(self, ERC(vals[1], vals[2], vals[3], o), { T.ExpTransform() }, o)
end
ROHC._props = {
  temperature = function(self) return self.base_dist.temperature end,
  logits = function(self) return self.base_dist.logits end,
  probs = function(self) return self.base_dist.probs end,
  support = function() return constraints.simplex end,
  has_rsample = function() return true end,
}

---------------------------------------------------------------------------------------- MixtureSameFamily
local MSF = class.class('torch.distributions.MixtureSameFamily', Distribution)
M.MixtureSameFamily = MSF
MSF._arg_constraints = {}

-- MixtureSameFamily(mixture_distribution (a Categorical), component_distribution, {validate_args=}): the
-- components are the component distribution's rightmost batch dimension
function MSF:__init(mix, comp, opts)
  local vals, validate = D.args('distributions.MixtureSameFamily', { 'mixture_distribution', 'component_distribution' }, mix, comp, opts)
  mix, comp = vals[1], vals[2]
  local Dd = require 'moontorch.distributions.discrete'
  if not class.isinstance(mix, Dd.Categorical) then
    fail('distributions.MixtureSameFamily', ' The Mixture distribution needs to be an  instance of torch.distributions.Categorical')
  end
  if not class.isinstance(comp, Distribution) then
    fail('distributions.MixtureSameFamily', 'The Component distribution need to be an instance of torch.distributions.Distribution')
  end
  local mdbs, cdbs = mix._batch_shape, {}
  for i = 1, #comp._batch_shape - 1 do cdbs[i] = comp._batch_shape[i] end
  for i = 0, math.min(#mdbs, #cdbs) - 1 do
    local a, b = mdbs[#mdbs - i], cdbs[#cdbs - i]
    if a ~= 1 and b ~= 1 and a ~= b then
      fail('distributions.MixtureSameFamily', ('`mixture_distribution.batch_shape` (%s) is not compatible with `component_distribution.batch_shape`(%s)')
        :format(tostring(torch.Size(mdbs)), tostring(torch.Size(cdbs))))
    end
  end
  local km, kc = mix._num_events, comp._batch_shape[#comp._batch_shape]
  if km ~= kc then
    fail('distributions.MixtureSameFamily', ('`mixture_distribution component` (%d) does not equal `component_distribution.batch_shape[-1]` (%s)')
      :format(km, tostring(kc)))
  end
  self._mixture_distribution, self._component_distribution = mix, comp
  self._num_component = km
  self._event_ndims = #comp._event_shape
  Distribution.__init(self, cdbs, comp._event_shape, validate)
end
function MSF:expand(...)
  local shape = D.shape_arg('distributions.MixtureSameFamily.expand', ...)
  local new = self:_new_instance()
  new._component_distribution = self._component_distribution:expand(D.concat(shape, { self._num_component }))
  new._mixture_distribution = self._mixture_distribution:expand(shape)
  new._num_component, new._event_ndims = self._num_component, self._event_ndims
  new._batch_shape, new._event_shape = shape, new._component_distribution._event_shape
  return new
end
function MSF:_pad(x) return x:unsqueeze(-1 - self._event_ndims) end
function MSF:_pad_mixture_dimensions(x)
  local dist_batch_ndims = torch.Size(self._batch_shape):numel()
  local cat_batch_ndims = torch.Size(self._mixture_distribution._batch_shape):numel()
  local pad_ndims = cat_batch_ndims == 1 and 0 or dist_batch_ndims - cat_batch_ndims
  local xs = D.size_list(x)
  local shape = {}
  for i = 1, #xs - 1 do shape[#shape + 1] = xs[i] end
  for _ = 1, pad_ndims do shape[#shape + 1] = 1 end
  shape[#shape + 1] = xs[#xs]
  for _ = 1, self._event_ndims do shape[#shape + 1] = 1 end
  return x:reshape(shape)
end
function MSF:cdf(x)
  x = self:_pad(x)
  return torch.sum(self._component_distribution:cdf(x) * self._mixture_distribution.probs, -1)
end
function MSF:log_prob(x)
  x = self:_value(x, 'log_prob')
  x = self:_pad(x)
  local log_prob_x = self._component_distribution:log_prob(x)
  local log_mix_prob = torch.log_softmax(self._mixture_distribution.logits, -1)
  return torch.logsumexp(log_prob_x + log_mix_prob, -1)
end
function MSF:sample(...)
  local ss = D.shape_arg('distributions.MixtureSameFamily.sample', ...)
  return D.no_grad(function()
    local gather_dim = #ss + #self._batch_shape + 1
    local es = self._event_shape
    local mix_sample = self._mixture_distribution:sample(ss)
    local mix_shape = D.size_list(mix_sample)
    local comp_samples = self._component_distribution:sample(ss)
    local r = D.concat(mix_shape, { 1 })
    for _ = 1, #es do r[#r + 1] = 1 end
    local mix_sample_r = mix_sample:reshape(r)
    local reps = {}
    for i = 1, #mix_shape + 1 do reps[i] = 1 end
    for _, e in ipairs(es) do reps[#reps + 1] = e end
    mix_sample_r = mix_sample_r['repeat'](mix_sample_r, reps)
    return torch.gather(comp_samples, gather_dim, mix_sample_r):squeeze(gather_dim)
  end)
end
MSF._props = {
  mixture_distribution = function(self) return self._mixture_distribution end,
  component_distribution = function(self) return self._component_distribution end,
  support = function(self) return self._component_distribution.support end,
  mean = function(self)
    local probs = self:_pad_mixture_dimensions(self._mixture_distribution.probs)
    return torch.sum(probs * self._component_distribution.mean, -1 - self._event_ndims)
  end,
  variance = function(self)
    local probs = self:_pad_mixture_dimensions(self._mixture_distribution.probs)
    local comp = self._component_distribution
    local mean_cond_var = torch.sum(probs * comp.variance, -1 - self._event_ndims)
    local var_cond_mean = torch.sum(probs * (comp.mean - self:_pad(self.mean)):pow(2.0), -1 - self._event_ndims)
    return mean_cond_var + var_cond_mean
  end,
}
function MSF:__tostring()
  return 'MixtureSameFamily(\n  ' .. tostring(self._mixture_distribution) .. ',\n  ' .. tostring(self._component_distribution) .. ')'
end

return M
