-- torch.distributions.transforms: elementwise maps with the log of their derivative, for
-- TransformedDistribution (PyTorch's): ExpTransform, AffineTransform, SigmoidTransform,
-- TanhTransform, AbsTransform, PowerTransform, ComposeTransform, and t.inv (the inverse map of a
-- bijective one). A transform is called on a tensor: t(x); t:inv(y) is t.inv(y).
-- Elementwise transforms (event_dim 0), and StickBreakingTransform (vectors to the simplex); the other
-- transforms that map vectors (Softmax, CorrCholesky, ...) are not provided.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local constraints = require 'moontorch.distributions.constraints'

local fail = core.fail
local is_tensor = torch.is_tensor
local softplus = function(x) return torch.nn.functional.softplus(x) end

local M = {}

local Transform = class.class('torch.distributions.transforms.Transform')
M.Transform = Transform
Transform.bijective = true
Transform.sign = 1
Transform.event_dim = 0
Transform.domain = constraints.real
Transform.codomain = constraints.real

-- a transform's field: inv (its inverse, made on first read), then the class's
Transform.__index = function(self, k)
  if k == 'inv' then
    local inv = rawget(self, '_inv')
    if not inv then
      if not self.bijective then fail('distributions.transforms.' .. self:_name() .. '.inv', 'the transform is not bijective') end
      inv = M._InverseTransform(self)
      rawset(self, '_inv', inv)
    end
    return inv
  end
  return getmetatable(self)[k]
end

function Transform:__init() end
function Transform:_name() return (class.typename(self) or 'Transform'):match('([^.]+)$') end
Transform.__call = function(self, x) return self:_call(x) end
function Transform:_call() fail('distributions.transforms.' .. self:_name(), 'the transform does not define its map') end
function Transform:_inverse() fail('distributions.transforms.' .. self:_name(), 'the transform has no inverse') end
-- log |dy/dx| at x (y = t(x)), elementwise
function Transform:log_abs_det_jacobian() fail('distributions.transforms.' .. self:_name(), 'the transform has no log_abs_det_jacobian') end
-- the same kind of map with the same parameters (PyTorch's __eq__)
function Transform:equals(other) return getmetatable(self) == getmetatable(other) end
function Transform:forward_shape(shape) return shape end
function Transform:inverse_shape(shape) return shape end
function Transform:__tostring() return self:_name() .. '()' end

-- t.inv: the inverse map of t (its own inverse is t)
local InverseTransform = class.class('torch.distributions.transforms._InverseTransform', Transform)
M._InverseTransform = InverseTransform
function InverseTransform:__init(t)
  self._t, self._inv = t, t
  self.domain, self.codomain, self.sign = t.codomain, t.domain, t.sign
end
function InverseTransform:_call(x) return self._t:_inverse(x) end
function InverseTransform:_inverse(y) return self._t:_call(y) end
function InverseTransform:log_abs_det_jacobian(x, y) return -self._t:log_abs_det_jacobian(y, x) end
function InverseTransform:equals(o) return getmetatable(o) == InverseTransform and self._t:equals(o._t) end
function InverseTransform:__tostring() return tostring(self._t) .. '.inv' end
function InverseTransform:forward_shape(shape) return self._t:inverse_shape(shape) end
function InverseTransform:inverse_shape(shape) return self._t:forward_shape(shape) end

local function simple(name, call, inverse, ladj, fields)
  local T = class.class('torch.distributions.transforms.' .. name, Transform)
  M[name] = T
  T._call = function(_, x) return call(x) end
  T._inverse = function(_, y) return inverse(y) end
  T.log_abs_det_jacobian = function(_, x, y) return ladj(x, y) end
  for k, v in pairs(fields or {}) do T[k] = v end
  return T
end

-- y = exp(x)
simple('ExpTransform', function(x) return x:exp() end, function(y) return y:log() end, function(x) return x end,
  { codomain = constraints.positive })
-- y = sigmoid(x)
simple('SigmoidTransform', function(x) return torch.sigmoid(x) end,
  function(y)
    local eps = torch.finfo(y.dtype).eps
    y = y:clamp(eps, 1 - eps)
    return y:log() - (-y):log1p()
  end,
  function(x) return -softplus(-x) - softplus(x) end, { codomain = constraints.unit_interval })
-- y = tanh(x)
simple('TanhTransform', function(x) return x:tanh() end,
  function(y) return (y:log1p() - (-y):log1p()) * 0.5 end,
  function(x) return (-x - softplus(x * -2) + math.log(2)) * 2 end, { codomain = constraints.interval(-1, 1) })
-- y = |x| (not bijective: no inverse map but the positive branch)
local Abs = simple('AbsTransform', function(x) return x:abs() end, function(y) return y end,
  function() fail('distributions.transforms.AbsTransform', 'the transform is not bijective: no log_abs_det_jacobian') end,
  { bijective = false, codomain = constraints.positive })
Abs.sign = 1

-- y = loc + scale * x (loc, scale: numbers or tensors)
local Affine = class.class('torch.distributions.transforms.AffineTransform', Transform)
M.AffineTransform = Affine
function Affine:__init(loc, scale, event_dim)
  if type(loc) == 'table' and not is_tensor(loc) then loc, scale, event_dim = loc.loc, loc.scale, loc.event_dim end
  for name, v in pairs { loc = loc, scale = scale } do
    if type(v) ~= 'number' and not is_tensor(v) then
      fail('distributions.transforms.AffineTransform', ('expected %s as a number or a tensor, got %s'):format(name, type(v)))
    end
  end
  if event_dim ~= nil and event_dim ~= 0 then
    fail('distributions.transforms.AffineTransform', 'only event_dim 0 (elementwise) is provided')
  end
  self.loc, self.scale = loc, scale
  -- the direction: a number, or per element for a tensor scale (as PyTorch's)
  if type(scale) == 'number' then self.sign = scale > 0 and 1 or (scale < 0 and -1 or 0) else self.sign = scale:sign() end
end
function Affine:_call(x) return x * self.scale + self.loc end
function Affine:_inverse(y) return (y - self.loc) / self.scale end
function Affine:log_abs_det_jacobian(x)
  local s = self.scale
  if type(s) == 'number' then return torch.full(x:size(), math.log(math.abs(s)), { dtype = x.dtype }) end
  return s:abs():log():expand(torch.broadcast_shapes(s:size(), x:size()))
end
local function same_value(a, b)
  if type(a) == 'number' and type(b) == 'number' then return a == b end
  if type(a) == 'number' then a, b = b, a end
  if is_tensor(a) then return a:eq(b):all() end
  return false
end
function Affine:equals(o)
  return getmetatable(o) == Affine and same_value(self.loc, o.loc) and same_value(self.scale, o.scale)
end
Affine.__tostring = function() return 'AffineTransform()' end

-- y = x ^ exponent on the positive reals
local Power = class.class('torch.distributions.transforms.PowerTransform', Transform)
M.PowerTransform = Power
Power.domain, Power.codomain = constraints.positive, constraints.positive
function Power:__init(exponent)
  if type(exponent) ~= 'number' and not is_tensor(exponent) then
    fail('distributions.transforms.PowerTransform', 'expected an exponent (a number or a tensor), got ' .. type(exponent))
  end
  self.exponent = exponent
end
function Power:_call(x) return x:pow(self.exponent) end
function Power:_inverse(y)
  if type(self.exponent) == 'number' then return y:pow(1 / self.exponent) end
  return y:pow(self.exponent:reciprocal())
end
function Power:log_abs_det_jacobian(x, y) return (y * self.exponent / x):abs():log() end
function Power:equals(o) return getmetatable(o) == Power and same_value(self.exponent, o.exponent) end

-- the maps one after another
local Compose = class.class('torch.distributions.transforms.ComposeTransform', Transform)
M.ComposeTransform = Compose
function Compose:__init(parts)
  if type(parts) ~= 'table' or is_tensor(parts) then fail('distributions.transforms.ComposeTransform', 'expected an array of transforms') end
  for i, t in ipairs(parts) do
    if not class.isinstance(t, Transform) then
      fail('distributions.transforms.ComposeTransform', ('part %d is not a transform (%s)'):format(i, type(t)))
    end
  end
  self.parts = parts
  local bij, sign = true, 1
  for _, t in ipairs(parts) do
    bij = bij and t.bijective
    sign = sign * t.sign
  end
  self.bijective, self.sign = bij, sign
  if #parts > 0 then self.domain, self.codomain = parts[1].domain, parts[#parts].codomain end
end
function Compose:_call(x)
  for _, t in ipairs(self.parts) do x = t(x) end
  return x
end
function Compose:_inverse(y)
  for i = #self.parts, 1, -1 do y = self.parts[i].inv(y) end
  return y
end
function Compose:log_abs_det_jacobian(x, y)
  if #self.parts == 0 then return torch.zeros_like(x) end
  local total
  for i, t in ipairs(self.parts) do
    local yi = i == #self.parts and y or t(x)
    local l = t:log_abs_det_jacobian(x, yi)
    total = total and total + l or l
    x = yi
  end
  return total
end
function Compose:equals(o)
  if getmetatable(o) ~= Compose or #o.parts ~= #self.parts then return false end
  for i, t in ipairs(self.parts) do if not t:equals(o.parts[i]) then return false end end
  return true
end

M.identity_transform = Compose({})

-- vectors of K - 1 reals to points of the K-simplex by stick breaking (PyTorch's StickBreakingTransform:
-- the event dimension grows by one; what LogisticNormal is made with)
local StickBreaking = class.class('torch.distributions.transforms.StickBreakingTransform', Transform)
M.StickBreakingTransform = StickBreaking
StickBreaking.domain, StickBreaking.codomain = constraints.real_vector, constraints.simplex
-- the offsets K - 1, ..., 1 of a vector of n
local function offsets(n, like) return n + 1 - torch.ones(n, { dtype = like.dtype }):cumsum(-1) end
local function clipped_sigmoid(x)
  local fi = torch.finfo(x.dtype)
  return torch.sigmoid(x):clamp(fi.tiny, 1 - fi.eps)
end
function StickBreaking:_call(x)
  local n = x:size(-1)
  local z = clipped_sigmoid(x - offsets(n, x):log())
  local z_cumprod = (1 - z):cumprod(-1)
  local F = torch.nn.functional
  return F.pad(z, { 0, 1 }, 'constant', 1) * F.pad(z_cumprod, { 1, 0 }, 'constant', 1)
end
function StickBreaking:_inverse(y)
  local k = y:size(-1)
  local y_crop = y:narrow(-1, 1, k - 1)
  local offset = k - torch.ones(k - 1, { dtype = y.dtype }):cumsum(-1)
  local sf = (1 - y_crop:cumsum(-1)):clamp({ min = torch.finfo(y.dtype).tiny })
  return y_crop:log() - sf:log() + offset:log()
end
function StickBreaking:log_abs_det_jacobian(x, y)
  local n = x:size(-1)
  x = x - offsets(n, x):log()
  return (-x + torch.nn.functional.logsigmoid(x) + y:narrow(-1, 1, y:size(-1) - 1):log()):sum(-1)
end
function StickBreaking:forward_shape(shape)
  if #shape < 1 then fail('distributions.transforms.StickBreakingTransform', 'Too few dimensions on input') end
  local out = {}
  for i = 1, #shape do out[i] = shape[i] end
  out[#out] = out[#out] + 1
  return out
end
function StickBreaking:inverse_shape(shape)
  if #shape < 1 then fail('distributions.transforms.StickBreakingTransform', 'Too few dimensions on input') end
  local out = {}
  for i = 1, #shape do out[i] = shape[i] end
  out[#out] = out[#out] - 1
  return out
end

return M
