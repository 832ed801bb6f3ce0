-- torch.distributions.TransformedDistribution(base, transforms): draws of base passed through the
-- transforms (lua/distributions/transforms.lua), log_prob by the change of variables; and the
-- distributions PyTorch defines so: LogNormal (exp of a Normal), Gumbel (of a Uniform), HalfNormal
-- (|Normal|), LogisticNormal (a Normal's stick breaking). The transforms' event dimensions are PyTorch's:
-- a base whose batch dimensions a transform takes as an event is wrapped in Independent.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local D = require 'moontorch.distributions.distribution'
local C = require 'moontorch.distributions.continuous'
local T = require 'moontorch.distributions.transforms'
local constraints = require 'moontorch.distributions.constraints'

local fail = core.fail
local is_tensor = torch.is_tensor
local Distribution = D.Distribution
local EULER_GAMMA = 0.57721566490153286060

-- t summed over its rightmost n dimensions
local function sum_rightmost(t, n)
  if n <= 0 or not is_tensor(t) then return t end
  for _ = 1, n do t = t:sum(-1) end
  return t
end

local M = {}

local TD = class.class('torch.distributions.TransformedDistribution', Distribution)
M.TransformedDistribution = TD

-- TransformedDistribution(base_distribution, transforms (one or an array), {validate_args=})
function TD:__init(base, transforms, opts)
  if not class.isinstance(base, Distribution) then
    fail('distributions.TransformedDistribution', 'expected a distribution as base_distribution, got ' .. type(base))
  end
  if class.isinstance(transforms, T.Transform) then
    transforms = { transforms }
  elseif type(transforms) ~= 'table' or is_tensor(transforms) then
    fail('distributions.TransformedDistribution', ('transforms must be a Transform or list, but was %s'):format(type(transforms)))
  end
  for _, t in ipairs(transforms) do
    if not class.isinstance(t, T.Transform) then
      fail('distributions.TransformedDistribution', 'transforms must be a Transform or a list of Transforms')
    end
  end
  -- the event dimensions the transforms take and give (PyTorch's ComposeTransform domain / codomain)
  local n = #transforms
  local dom_ed, cod_ed = 0, 0
  if n > 0 then
    dom_ed = transforms[n].codomain.event_dim
    for i = n, 1, -1 do
      local t = transforms[i]
      dom_ed = math.max(dom_ed + t.domain.event_dim - t.codomain.event_dim, t.domain.event_dim)
    end
    cod_ed = transforms[1].domain.event_dim
    for i = 1, n do
      local t = transforms[i]
      cod_ed = math.max(cod_ed + t.codomain.event_dim - t.domain.event_dim, t.codomain.event_dim)
    end
  end
  -- the base reshaped for the transforms, its batch dimensions that they take as events reinterpreted
  local base_shape = D.concat(base._batch_shape, base._event_shape)
  local base_ed = #base._event_shape
  if #base_shape < dom_ed then
    fail('distributions.TransformedDistribution', ('base_distribution needs to have shape with size at least %d, but got %s.')
      :format(dom_ed, tostring(torch.Size(base_shape))))
  end
  local fwd = base_shape
  for _, t in ipairs(transforms) do fwd = t:forward_shape(fwd) end
  if dom_ed - base_ed > 0 then base = require('moontorch.distributions.independent').Independent(base, dom_ed - base_ed) end
  self.base_dist, self.transforms = base, transforms
  local event_dim = math.max(cod_ed, base_ed + cod_ed - dom_ed)
  local batch, event = {}, {}
  for i = 1, #fwd do
    if i <= #fwd - event_dim then batch[#batch + 1] = fwd[i] else event[#event + 1] = fwd[i] end
  end
  Distribution.__init(self, batch, event, D.validate_opt('distributions.TransformedDistribution', opts))
end

function TD:expand(...)
  local shape = D.shape_arg(D.op(self) .. '.expand', ...)
  local new = self:_new_instance()
  for k, v in pairs(self) do rawset(new, k, v) end
  -- the base's batch: the expanded batch and the event dimensions the transforms add or take away
  local shape_full = D.concat(shape, self._event_shape)
  for i = #self.transforms, 1, -1 do shape_full = self.transforms[i]:inverse_shape(shape_full) end
  local base_batch = {}
  for i = 1, #shape_full - #self.base_dist._event_shape do base_batch[i] = shape_full[i] end
  new.base_dist = self.base_dist:expand(base_batch)
  new._batch_shape = shape
  return new
end

local function through(self, x)
  for _, t in ipairs(self.transforms) do x = t(x) end
  return x
end
function TD:sample(...)
  local x = self.base_dist:sample(...)
  return D.no_grad(through, self, x)
end
function TD:rsample(...) return through(self, self.base_dist:rsample(...)) end

-- the change of variables; the (elementwise) jacobians summed over the event's dimensions, as
-- PyTorch's (a base with an event shape: RelaxedOneHotCategorical, a MultivariateNormal)
function TD:log_prob(y)
  y = self:_value(y, 'log_prob')
  local lp = 0
  local event_dim = #self._event_shape
  for i = #self.transforms, 1, -1 do
    local t = self.transforms[i]
    local x = t.inv(y)
    event_dim = event_dim + t.domain.event_dim - t.codomain.event_dim
    lp = lp - sum_rightmost(t:log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
    y = x
  end
  return sum_rightmost(self.base_dist:log_prob(y), event_dim - #self.base_dist._event_shape) + lp
end

-- monotone transforms map the base's cdf; a decreasing one flips it (sign: a number, or a tensor
-- of signs where a transform's direction is per element)
local function monotonize(self, v)
  local sign = 1
  for _, t in ipairs(self.transforms) do sign = t.sign * sign end
  if type(sign) == 'number' then return sign == 1 and v or (v - 0.5) * sign + 0.5 end
  return (v - 0.5) * sign + 0.5
end
function TD:cdf(value)
  for i = #self.transforms, 1, -1 do value = self.transforms[i].inv(value) end
  return monotonize(self, self.base_dist:cdf(value))
end
function TD:icdf(value)
  return through(self, self.base_dist:icdf(monotonize(self, value)))
end
TD._props = {
  has_rsample = function(self) return self.base_dist.has_rsample end,
  support = function(self)
    local t = self.transforms[#self.transforms]
    return t and t.codomain or self.base_dist.support
  end,
}

---------------------------------------------------------------------------------------- LogNormal
local LogNormal = class.class('torch.distributions.LogNormal', TD)
M.LogNormal = LogNormal
LogNormal._arg_constraints = { { 'loc', constraints.real }, { 'scale', constraints.positive } }
-- LogNormal(loc, scale, {validate_args=}): exp of Normal(loc, scale)
function LogNormal:__init(...)
  local v, validate = D.args('distributions.LogNormal', { 'loc', 'scale' }, ...)
  local opts = { validate_args = validate }
  TD.__init(self, C.Normal(v[1], v[2], opts), { T.ExpTransform() }, opts)
end
LogNormal._props = {
  loc = function(self) return self.base_dist.loc end,
  scale = function(self) return self.base_dist.scale end,
  support = function() return constraints.positive end,
  has_rsample = function() return true end,
  mean = function(self) return (self.loc + self.scale:pow(2) / 2):exp() end,
  mode = function(self) return (self.loc - self.scale:pow(2)):exp() end,
  variance = function(self)
    local s2 = self.scale:pow(2)
    return s2:expm1() * (self.loc * 2 + s2):exp()
  end,
}
function LogNormal:entropy() return self.base_dist:entropy() + self.loc end

---------------------------------------------------------------------------------------- HalfNormal
local HalfNormal = class.class('torch.distributions.HalfNormal', TD)
M.HalfNormal = HalfNormal
-- HalfNormal(scale, {validate_args=}): |Normal(0, scale)|
function HalfNormal:__init(...)
  local v, validate = D.args('distributions.HalfNormal', { 'scale' }, ...)
  local opts = { validate_args = validate }
  TD.__init(self, C.Normal(0, v[1], opts), { T.AbsTransform() }, opts)
end
HalfNormal._props = {
  scale = function(self) return self.base_dist.scale end,
  support = function() return constraints.nonnegative end,
  has_rsample = function() return true end,
  mean = function(self) return self.scale * math.sqrt(2 / math.pi) end,
  mode = function(self) return torch.zeros_like(self.scale) end,
  variance = function(self) return self.scale:pow(2) * (1 - 2 / math.pi) end,
}
function HalfNormal:log_prob(value)
  value = self:_value(value, 'log_prob', self.scale.dtype)
  local lp = self.base_dist:log_prob(value) + math.log(2)
  return torch.where(value:ge(0), lp, torch.full({}, -math.huge, { dtype = lp.dtype }))
end
function HalfNormal:cdf(value)
  value = self:_value(value, 'cdf', self.scale.dtype)
  return self.base_dist:cdf(value) * 2 - 1
end
function HalfNormal:icdf(prob) return self.base_dist:icdf((prob + 1) / 2) end
function HalfNormal:entropy() return self.base_dist:entropy() - math.log(2) end

---------------------------------------------------------------------------------------- Gumbel
local Gumbel = class.class('torch.distributions.Gumbel', TD)
M.Gumbel = Gumbel
Gumbel._arg_constraints = { { 'loc', constraints.real }, { 'scale', constraints.positive } }
-- Gumbel(loc, scale, {validate_args=}): loc - scale log(-log U), U uniform on (0, 1)
function Gumbel:__init(...)
  local v, validate = D.args('distributions.Gumbel', { 'loc', 'scale' }, ...)
  local opts = { validate_args = validate }
  local vals, numbers = D.broadcast_all('distributions.Gumbel', v[1], v[2])
  self.loc, self.scale = vals[1], vals[2]
  local fi = torch.finfo(self.loc.dtype)
  local base = C.Uniform(torch.full(self.loc:size(), fi.tiny, { dtype = self.loc.dtype }),
    torch.full(self.loc:size(), 1 - fi.eps, { dtype = self.loc.dtype }), { validate_args = false })
  local exp = T.ExpTransform()
  TD.__init(self, base, { exp.inv, T.AffineTransform(0, -1), exp.inv, T.AffineTransform(self.loc, -self.scale) }, opts)
  if numbers then self._batch_shape = {} end
end
function Gumbel:log_prob(value)
  value = self:_value(value, 'log_prob', self.loc.dtype)
  local y = (self.loc - value) / self.scale
  return (y - y:exp()) - self.scale:log()
end
function Gumbel:entropy() return self.scale:log() + (1 + EULER_GAMMA) end
Gumbel._props = {
  support = function() return constraints.real end,
  has_rsample = function() return true end,
  mean = function(self) return self.loc + self.scale * EULER_GAMMA end,
  mode = function(self) return self.loc end,
  stddev = function(self) return self.scale * (math.pi / math.sqrt(6)) end,
  variance = function(self) return self.scale:pow(2) * (math.pi ^ 2 / 6) end,
}

---------------------------------------------------------------------------------------- LogisticNormal
local LogisticNormal = class.class('torch.distributions.LogisticNormal', TD)
M.LogisticNormal = LogisticNormal
LogisticNormal._arg_constraints = { { 'loc', constraints.real }, { 'scale', constraints.positive } }
LogisticNormal._computed_args = { loc = true, scale = true }
-- LogisticNormal(loc, scale, {validate_args=}): points of the K-simplex, the stick breaking of a
-- Normal(loc, scale) of K - 1 numbers
function LogisticNormal:__init(...)
  local v, validate = D.args('distributions.LogisticNormal', { 'loc', 'scale' }, ...)
  local opts = { validate_args = validate }
  local base = C.Normal(v[1], v[2], opts)
  if #base._batch_shape == 0 then base = base:expand({ 1 }) end
  TD.__init(self, base, { T.StickBreakingTransform() }, opts)
end
LogisticNormal._props = {
  loc = function(self) return self.base_dist.base_dist.loc end,
  scale = function(self) return self.base_dist.base_dist.scale end,
  support = function() return constraints.simplex end,
  has_rsample = function() return true end,
}

M.EULER_GAMMA = EULER_GAMMA
return M
