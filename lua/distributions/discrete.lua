-- torch.distributions' discrete distributions: Bernoulli, Categorical, OneHotCategorical, Geometric (PyTorch's,
-- same formulas, same draws from the same seed). Each takes probs or logits (not both): positional
-- probs (Categorical(p)), or {probs=} / {logits=} (+ validate_args). Categories count from 1, as
-- every index in moontorch: Categorical's samples, log_prob's values, enumerate_support and mode are
-- 1..K (PyTorch's 0..K-1 plus one), as torch.multinomial's are.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local D = require 'moontorch.distributions.distribution'
local constraints = require 'moontorch.distributions.constraints'

local fail = core.fail
local is_tensor = torch.is_tensor
local Distribution = D.Distribution

local M = {}

-- (probs, logits, opts) or ({probs=} / {logits=}, validate_args=): which one was given and its value
local function probs_or_logits(opname, ...)
  local vals, validate = D.args(opname, { 'probs', 'logits' }, ...)
  local a, b = vals[1], vals[2]
  if (a == nil) == (b == nil) then fail(opname, 'Either `probs` or `logits` must be specified, but not both.') end
  return a, b, validate
end

-- Bernoulli's and Geometric's construction: one number or tensor of probs or logits, the batch its shape
local function init_probs_or_logits(self, opname, ...)
  local probs, logits, validate = probs_or_logits(opname, ...)
  local vals, number = D.broadcast_all(opname, probs ~= nil and probs or logits)
  if probs ~= nil then self.probs = vals[1] else self.logits = vals[1] end
  self._param = vals[1]
  Distribution.__init(self, number and {} or D.size_list(vals[1]), {}, validate)
end

local clamp_probs = D.clamp_probs

-- the values 1..n (or 0, 1 for Bernoulli) as a column over the batch dimensions
local function support_column(values, batch, expand)
  local view = { -1 }
  for i = 1, #batch do view[i + 1] = 1 end
  values = values:view(view)
  if expand == nil or expand == true then values = values:expand(D.concat({ -1 }, batch)) end
  return values
end
local function expand_opt(opname, expand)
  if type(expand) == 'table' and not is_tensor(expand) then expand = expand.expand end
  if expand ~= nil and type(expand) ~= 'boolean' then fail(opname, 'expected expand to be a boolean, got ' .. type(expand)) end
  return expand
end

---------------------------------------------------------------------------------------- Bernoulli
local Bernoulli = class.class('torch.distributions.Bernoulli', Distribution)
M.Bernoulli = Bernoulli
Bernoulli._arg_constraints = { { 'probs', constraints.unit_interval }, { 'logits', constraints.real } }

-- Bernoulli(probs) / Bernoulli{logits = l}: 1 with probability probs, else 0
function Bernoulli:__init(probs, logits, opts)
  init_probs_or_logits(self, 'distributions.Bernoulli', probs, logits, opts)
end

function Bernoulli:expand(...)
  local shape = D.shape_arg('distributions.Bernoulli.expand', ...)
  local new = self:_new_instance()
  if rawget(self, 'probs') then new.probs = self.probs:expand(shape); new._param = new.probs end
  if rawget(self, 'logits') then new.logits = self.logits:expand(shape); new._param = new.logits end
  new._batch_shape, new._event_shape = shape, {}
  return new
end

function Bernoulli:sample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.Bernoulli.sample', ...))
  return D.no_grad(function() return torch.bernoulli(self.probs:expand(shape)) end)
end
function Bernoulli:log_prob(value)
  value = self:_value(value, 'log_prob', self._param.dtype)
  local v = D.broadcast_all('distributions.Bernoulli.log_prob', self.logits, value)
  return -torch.nn.functional.binary_cross_entropy_with_logits(v[1], v[2], { reduction = 'none' })
end
function Bernoulli:entropy()
  return torch.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs, { reduction = 'none' })
end
-- enumerate_support(expand=true): the values 0 and 1 (of the parameter's dtype) over the batch
function Bernoulli:enumerate_support(expand)
  expand = expand_opt('distributions.Bernoulli.enumerate_support', expand)
  return support_column(torch.arange(2, { dtype = self._param.dtype }), self._batch_shape, expand)
end
Bernoulli._props = D.binary_params {
  param_shape = function(self) return self._param:size() end,
  support = function() return constraints.boolean end,
  has_enumerate_support = function() return true end,
  mean = function(self) return self.probs end,
  mode = function(self)
    local p = self.probs
    local mode = p:ge(0.5):to(p.dtype)
    mode[p:eq(0.5)] = 0 / 0
    return mode
  end,
  variance = function(self) return self.probs * (1 - self.probs) end,
}

---------------------------------------------------------------------------------------- Categorical
local Categorical = class.class('torch.distributions.Categorical', Distribution)
M.Categorical = Categorical
Categorical._arg_constraints = { { 'probs', constraints.simplex }, { 'logits', constraints.independent(constraints.real, 1) } }

-- Categorical(probs) / Categorical{logits = l}: one of K categories (1..K) per draw, K the last
-- dimension of probs/logits (normalized along it); the dimensions before it are the batch
function Categorical:__init(probs, logits, opts)
  local validate
  probs, logits, validate = probs_or_logits('distributions.Categorical', probs, logits, opts)
  local given = probs ~= nil and probs or logits
  if not is_tensor(given) then
    fail('distributions.Categorical', ('expected %s as a tensor, got %s'):format(probs ~= nil and 'probs' or 'logits', type(given)))
  end
  if given:dim() < 1 then
    fail('distributions.Categorical', ('`%s` parameter must be at least one-dimensional.'):format(probs ~= nil and 'probs' or 'logits'))
  end
  if probs ~= nil then
    self.probs = probs / probs:sum(-1, true)
    self._param = self.probs
  else
    self.logits = logits - logits:logsumexp(-1, true)
    self._param = self.logits
  end
  self._num_events = given:size(-1)
  local batch = D.size_list(given)
  batch[#batch] = nil
  Distribution.__init(self, batch, {}, validate)
end

function Categorical:expand(...)
  local shape = D.shape_arg('distributions.Categorical.expand', ...)
  local pshape = D.concat(shape, { self._num_events })
  local new = self:_new_instance()
  if rawget(self, 'probs') then new.probs = self.probs:expand(pshape); new._param = new.probs end
  if rawget(self, 'logits') then new.logits = self.logits:expand(pshape); new._param = new.logits end
  new._num_events = self._num_events
  new._batch_shape, new._event_shape = shape, {}
  return new
end

function Categorical:sample(...)
  local ss = D.shape_arg('distributions.Categorical.sample', ...)
  local n = 1
  for _, s in ipairs(ss) do n = n * s end
  return D.no_grad(function()
    local p2 = self.probs:reshape(-1, self._num_events)
    local s2 = torch.multinomial(p2, n, true):t()
    return s2:reshape(self:_extended_shape(ss))
  end)
end
function Categorical:log_prob(value)
  value = self:_value(value, 'log_prob', self._param.dtype)
  local v = torch.broadcast_tensors(value:long():unsqueeze(-1), self.logits)
  return v[2]:gather(-1, v[1]:narrow(-1, 1, 1)):squeeze(-1)
end
function Categorical:entropy()
  local logits = self.logits:clamp({ min = torch.finfo(self.logits.dtype).min })
  return -(logits * self.probs):sum(-1)
end
-- enumerate_support(expand=true): the categories 1..K (int64) over the batch
function Categorical:enumerate_support(expand)
  expand = expand_opt('distributions.Categorical.enumerate_support', expand)
  return support_column(torch.arange(1, self._num_events + 1, { dtype = torch.int64 }), self._batch_shape, expand)
end
Categorical._props = {
  probs = function(self)
    local p = torch.softmax(rawget(self, 'logits'), -1)
    rawset(self, 'probs', p)
    return p
  end,
  logits = function(self)
    local l = clamp_probs(rawget(self, 'probs')):log()
    rawset(self, 'logits', l)
    return l
  end,
  param_shape = function(self) return self._param:size() end,
  support = function(self) return constraints.integer_interval(1, self._num_events) end,
  has_enumerate_support = function() return true end,
  mean = function(self) return torch.full(self:_extended_shape(), 0 / 0, { dtype = self.probs.dtype }) end,
  mode = function(self) return self.probs:argmax(-1) end,
  variance = function(self) return torch.full(self:_extended_shape(), 0 / 0, { dtype = self.probs.dtype }) end,
}

---------------------------------------------------------------------------------------- OneHotCategorical
local OneHotCategorical = class.class('torch.distributions.OneHotCategorical', Distribution)
M.OneHotCategorical = OneHotCategorical
OneHotCategorical._arg_constraints = { { 'probs', constraints.simplex }, { 'logits', constraints.real_vector } }

-- OneHotCategorical(probs) / {logits=}: Categorical's draws as one-hot vectors of length K
-- (event_shape {K})
function OneHotCategorical:__init(probs, logits, opts)
  local validate
  probs, logits, validate = probs_or_logits('distributions.OneHotCategorical', probs, logits, opts)
  self._categorical = Categorical(probs, logits, { validate_args = validate })
  local k = self._categorical._num_events
  Distribution.__init(self, self._categorical._batch_shape, { k }, validate)
end

function OneHotCategorical:expand(...)
  local shape = D.shape_arg('distributions.OneHotCategorical.expand', ...)
  local new = self:_new_instance()
  new._categorical = self._categorical:expand(shape)
  new._batch_shape, new._event_shape = shape, { self._categorical._num_events }
  return new
end

function OneHotCategorical:sample(...)
  local ss = D.shape_arg('distributions.OneHotCategorical.sample', ...)
  local c = self._categorical
  local idx = c:sample(ss)
  return torch.nn.functional.one_hot(idx, c._num_events):to(c.probs.dtype)
end
function OneHotCategorical:log_prob(value)
  value = self:_value(value, 'log_prob', self._param.dtype)
  local _, idx = value:max(-1)
  return self._categorical:log_prob(idx)
end
function OneHotCategorical:entropy() return self._categorical:entropy() end
-- enumerate_support(expand=true): the K one-hot vectors over the batch
function OneHotCategorical:enumerate_support(expand)
  expand = expand_opt('distributions.OneHotCategorical.enumerate_support', expand)
  local n = self._categorical._num_events
  local view = { n }
  for i = 1, #self._batch_shape do view[i + 1] = 1 end
  view[#view + 1] = n
  local values = torch.eye(n, { dtype = self._categorical._param.dtype }):view(view)
  if expand == nil or expand == true then values = values:expand(D.concat({ n }, self._batch_shape, { n })) end
  return values
end
OneHotCategorical._props = {
  _param = function(self) return self._categorical._param end,
  probs = function(self) return self._categorical.probs end,
  logits = function(self) return self._categorical.logits end,
  param_shape = function(self) return self._categorical.param_shape end,
  support = function() return constraints.one_hot end,
  has_enumerate_support = function() return true end,
  mean = function(self) return self._categorical.probs end,
  mode = function(self)
    local p = self._categorical.probs
    return torch.nn.functional.one_hot(p:argmax(-1), p:size(-1)):to(p.dtype)
  end,
  variance = function(self)
    local p = self._categorical.probs
    return p * (1 - p)
  end,
}


---------------------------------------------------------------------------------------- Geometric
local Geometric = class.class('torch.distributions.Geometric', Distribution)
M.Geometric = Geometric
Geometric._arg_constraints = { { 'probs', constraints.unit_interval }, { 'logits', constraints.real } }

-- Geometric(probs) / Geometric{logits = l}: the number of failures before the first success of
-- Bernoulli(probs) trials (0, 1, 2, ...: counts, not positions)
function Geometric:__init(probs, logits, opts)
  init_probs_or_logits(self, 'distributions.Geometric', probs, logits, opts)
  if self:_validating() and rawget(self, 'probs') and not self.probs:gt(0):all() then
    local pv = self.probs
    fail('distributions.Geometric', ('Expected parameter probs (Tensor of shape (%s%s) of distribution %s to be positive but found invalid values:\n%s')
      :format(table.concat(D.size_list(pv), ', '), pv:dim() == 1 and ',)' or ')', tostring(self), tostring(pv[pv:le(0)])))
  end
end
Geometric.expand = Bernoulli.expand

function Geometric:sample(...)
  local shape = self:_extended_shape(D.shape_arg('distributions.Geometric.sample', ...))
  return D.no_grad(function()
    local tiny = torch.finfo(self.probs.dtype).tiny
    local u = torch.rand(shape, { dtype = self.probs.dtype }):clamp({ min = tiny })
    return (u:log() / (-self.probs):log1p()):floor()
  end)
end
function Geometric:log_prob(value)
  value = self:_value(value, 'log_prob', self._param.dtype)
  local v = D.broadcast_all('distributions.Geometric.log_prob', value, self.probs)
  local p = torch.where(v[2]:eq(1):logical_and(v[1]:eq(0)), torch.zeros({}, { dtype = v[2].dtype }), v[2])
  return v[1] * (-p):log1p() + self.probs:log()
end
function Geometric:entropy()
  return torch.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs, { reduction = 'none' }) / self.probs
end
Geometric._props = {
  probs = Bernoulli._props.probs,
  logits = Bernoulli._props.logits,
  support = function() return constraints.nonnegative_integer end,
  mean = function(self) return self.probs:reciprocal() - 1 end,
  mode = function(self) return torch.zeros_like(self.probs) end,
  variance = function(self) return (self.probs:reciprocal() - 1) / self.probs end,
}

return M
