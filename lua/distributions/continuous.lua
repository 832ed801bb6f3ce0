-- torch.distributions' continuous distributions of one real number per draw: Normal, Uniform,
-- Exponential, Laplace, Cauchy (PyTorch's, same formulas, same draws from the same seed: each sampler asks
-- the generator for the numbers PyTorch's does, in the same order). Parameters are tensors or
-- numbers, broadcast against each other (the batch_shape); positional or in an options table:
-- Normal(0, 1), Normal{loc = mu, scale = sigma, validate_args = false}.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local D = require 'moontorch.distributions.distribution'
local constraints = require 'moontorch.distributions.constraints'

local fail = core.fail
local Distribution = D.Distribution
local LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))

local M = {}

-- the parameters (positional or in an options table, D.args), each a tensor or a number, broadcast
-- together: the tensors, whether all were numbers, validate_args
local function params(opname, names, ...)
  local vals, validate = D.args(opname, names, ...)
  local missing, types = false, {}
  for i = 1, #names do
    missing = missing or vals[i] == nil
    types[i] = type(vals[i])
  end
  if missing then
    fail(opname, ('expected %s (%s), got %s'):format(table.concat(names, ' and '),
      #names == 1 and 'a tensor or a number' or 'tensors or numbers', table.concat(types, ' and ')))
  end
  local out, numbers = D.broadcast_all(opname, unpack(vals, 1, #names))
  out[#names + 1], out[#names + 2] = numbers, validate
  return unpack(out, 1, #names + 2)
end
M._params = params

-- expand(batch_shape) for a distribution whose parameters all have the batch shape
local function expander(names)
  return function(self, ...)
    local shape = D.shape_arg(D.op(self) .. '.expand', ...)
    local new = self:_new_instance()
    for _, n in ipairs(names) do new[n] = self[n]:expand(shape) end
    new._dtype = self._dtype
    new._batch_shape, new._event_shape = shape, {}
    return new
  end
end
M._expander = expander

---------------------------------------------------------------------------------------- Normal
local Normal = class.class('torch.distributions.Normal', Distribution)
M.Normal = Normal
Normal._arg_constraints = { { 'loc', constraints.real }, { 'scale', constraints.positive } }

-- Normal(loc, scale, {validate_args=})
function Normal:__init(loc, scale, opts)
  local numbers, validate
  self.loc, self.scale, numbers, validate = params('distributions.Normal', { 'loc', 'scale' }, loc, scale, opts)
  self._dtype = self.loc.dtype
  Distribution.__init(self, numbers and {} or D.size_list(self.loc), {}, validate)
end
Normal.expand = expander({ 'loc', 'scale' })

function Normal:rsample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.Normal.rsample', ...))
  local eps = torch.empty(shape, { dtype = self._dtype }):normal_()
  return self.loc + eps * self.scale
end
function Normal:sample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.Normal.sample', ...))
  return D.no_grad(function() return torch.normal(self.loc:expand(shape), self.scale:expand(shape)) end)
end
function Normal:log_prob(value)
  value = self:_value(value, 'log_prob', self._dtype)
  local var = self.scale ^ 2
  return -((value - self.loc) ^ 2) / (var * 2) - self.scale:log() - LOG_SQRT_2PI
end
function Normal:cdf(value)
  value = self:_value(value, 'cdf', self._dtype)
  return ((value - self.loc) * self.scale:reciprocal() / math.sqrt(2)):erf():add(1):mul(0.5)
end
function Normal:icdf(value)
  value = self:_value(value, 'icdf', self._dtype)
  return self.loc + self.scale * (value * 2 - 1):erfinv() * math.sqrt(2)
end
function Normal:entropy() return self.scale:log() + (0.5 + 0.5 * math.log(2 * math.pi)) end
Normal._props = {
  support = function() return constraints.real end,
  has_rsample = function() return true end,
  mean = function(self) return self.loc end,
  mode = function(self) return self.loc end,
  stddev = function(self) return self.scale end,
  variance = function(self) return self.scale:pow(2) end,
}

---------------------------------------------------------------------------------------- Uniform
local Uniform = class.class('torch.distributions.Uniform', Distribution)
M.Uniform = Uniform
Uniform._arg_constraints = { { 'low', constraints.dependent(false, 0) }, { 'high', constraints.dependent(false, 0) } }

-- Uniform(low, high, {validate_args=}): the half-open interval [low, high)
function Uniform:__init(low, high, opts)
  local numbers, validate
  self.low, self.high, numbers, validate = params('distributions.Uniform', { 'low', 'high' }, low, high, opts)
  self._dtype = self.low.dtype
  Distribution.__init(self, numbers and {} or D.size_list(self.low), {}, validate)
  if self:_validating() and not self.low:lt(self.high):all() then
    fail('distributions.Uniform', 'Uniform is not defined when low>= high')
  end
end
Uniform.expand = expander({ 'low', 'high' })

function Uniform:rsample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.Uniform.rsample', ...))
  local r = torch.rand(shape, { dtype = self._dtype })
  return self.low + r * (self.high - self.low)
end
function Uniform:log_prob(value)
  value = self:_value(value, 'log_prob', self._dtype)
  local lb = self.low:le(value):type_as(self.low)
  local ub = self.high:gt(value):type_as(self.low)
  return lb:mul(ub):log() - (self.high - self.low):log()
end
function Uniform:cdf(value)
  value = self:_value(value, 'cdf', self._dtype)
  return ((value - self.low) / (self.high - self.low)):clamp(0, 1)
end
function Uniform:icdf(value)
  value = self:_value(value, 'icdf', self._dtype)
  return value * (self.high - self.low) + self.low
end
function Uniform:entropy() return (self.high - self.low):log() end
Uniform._props = {
  support = function(self) return constraints.interval(self.low, self.high) end,
  has_rsample = function() return true end,
  mean = function(self) return (self.high + self.low) / 2 end,
  mode = function(self) return self.high * (0 / 0) end,
  stddev = function(self) return (self.high - self.low) / math.sqrt(12) end,
  variance = function(self) return (self.high - self.low):pow(2) / 12 end,
}

---------------------------------------------------------------------------------------- Exponential
local Exponential = class.class('torch.distributions.Exponential', Distribution)
M.Exponential = Exponential
Exponential._arg_constraints = { { 'rate', constraints.positive } }

-- Exponential(rate, {validate_args=})
function Exponential:__init(rate, opts)
  local number, validate
  self.rate, number, validate = params('distributions.Exponential', { 'rate' }, rate, opts)
  self._dtype = self.rate.dtype
  Distribution.__init(self, number and {} or D.size_list(self.rate), {}, validate)
end
Exponential.expand = expander({ 'rate' })

function Exponential:rsample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.Exponential.rsample', ...))
  return torch.empty(shape, { dtype = self._dtype }):exponential_() / self.rate
end
function Exponential:log_prob(value)
  value = self:_value(value, 'log_prob', self._dtype)
  return self.rate:log() - self.rate * value
end
function Exponential:cdf(value)
  value = self:_value(value, 'cdf', self._dtype)
  return 1 - (-self.rate * value):exp()
end
function Exponential:icdf(value)
  value = self:_value(value, 'icdf', self._dtype)
  return -(1 - value):log() / self.rate
end
function Exponential:entropy() return 1 - self.rate:log() end
Exponential._props = {
  support = function() return constraints.nonnegative end,
  has_rsample = function() return true end,
  mean = function(self) return self.rate:reciprocal() end,
  mode = function(self) return torch.zeros_like(self.rate) end,
  stddev = function(self) return self.rate:reciprocal() end,
  variance = function(self) return self.rate:pow(-2) end,
}

---------------------------------------------------------------------------------------- Laplace
local Laplace = class.class('torch.distributions.Laplace', Distribution)
M.Laplace = Laplace
Laplace._arg_constraints = { { 'loc', constraints.real }, { 'scale', constraints.positive } }

-- Laplace(loc, scale, {validate_args=})
function Laplace:__init(loc, scale, opts)
  local numbers, validate
  self.loc, self.scale, numbers, validate = params('distributions.Laplace', { 'loc', 'scale' }, loc, scale, opts)
  self._dtype = self.loc.dtype
  Distribution.__init(self, numbers and {} or D.size_list(self.loc), {}, validate)
end
Laplace.expand = expander({ 'loc', 'scale' })

function Laplace:rsample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.Laplace.rsample', ...))
  local eps = torch.finfo(self._dtype).eps
  local u = torch.empty(shape, { dtype = self._dtype }):uniform_(eps - 1, 1)
  return self.loc - self.scale * u:sign() * (-u:abs()):log1p()
end
function Laplace:log_prob(value)
  value = self:_value(value, 'log_prob', self._dtype)
  return -(self.scale * 2):log() - (value - self.loc):abs() / self.scale
end
function Laplace:cdf(value)
  value = self:_value(value, 'cdf', self._dtype)
  local d = value - self.loc
  return 0.5 - d:sign() * 0.5 * (-d:abs() / self.scale):expm1()
end
function Laplace:icdf(value)
  value = self:_value(value, 'icdf', self._dtype)
  local term = value - 0.5
  return self.loc - self.scale * term:sign() * (-term:abs() * 2):log1p()
end
function Laplace:entropy() return (self.scale * 2):log() + 1 end
Laplace._props = {
  support = function() return constraints.real end,
  has_rsample = function() return true end,
  mean = function(self) return self.loc end,
  mode = function(self) return self.loc end,
  stddev = function(self) return self.scale * math.sqrt(2) end,
  variance = function(self) return self.scale:pow(2) * 2 end,
}


---------------------------------------------------------------------------------------- Cauchy
local Cauchy = class.class('torch.distributions.Cauchy', Distribution)
M.Cauchy = Cauchy
Cauchy._arg_constraints = { { 'loc', constraints.real }, { 'scale', constraints.positive } }

-- Cauchy(loc, scale, {validate_args=})
function Cauchy:__init(loc, scale, opts)
  local numbers, validate
  self.loc, self.scale, numbers, validate = params('distributions.Cauchy', { 'loc', 'scale' }, loc, scale, opts)
  self._dtype = self.loc.dtype
  Distribution.__init(self, numbers and {} or D.size_list(self.loc), {}, validate)
end
Cauchy.expand = expander({ 'loc', 'scale' })

function Cauchy:rsample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.Cauchy.rsample', ...))
  local eps = torch.empty(shape, { dtype = self._dtype }):cauchy_()
  return self.loc + eps * self.scale
end
function Cauchy:log_prob(value)
  value = self:_value(value, 'log_prob', self._dtype)
  return -math.log(math.pi) - self.scale:log() - ((value - self.loc) / self.scale):pow(2):log1p()
end
function Cauchy:cdf(value)
  value = self:_value(value, 'cdf', self._dtype)
  return ((value - self.loc) / self.scale):atan() / math.pi + 0.5
end
function Cauchy:icdf(value)
  value = self:_value(value, 'icdf', self._dtype)
  return ((value - 0.5) * math.pi):tan() * self.scale + self.loc
end
function Cauchy:entropy() return self.scale:log() + math.log(4 * math.pi) end
Cauchy._props = {
  support = function() return constraints.real end,
  has_rsample = function() return true end,
  mean = function(self) return torch.full(self:_extended_shape(), 0 / 0, { dtype = self._dtype }) end,
  mode = function(self) return self.loc end,
  variance = function(self) return torch.full(self:_extended_shape(), math.huge, { dtype = self._dtype }) end,
}

return M
