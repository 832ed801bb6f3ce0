-- torch.distributions.Distribution: the base class (PyTorch's), and what the distributions share:
-- their shapes (batch_shape: independent draws side by side; event_shape: one draw's own shape;
-- a sample of sample_shape has sample_shape .. batch_shape .. event_shape), the validation of
-- parameters and values against their constraints (on by default, as PyTorch's), properties read
-- as fields (d.mean, d.stddev, d.batch_shape, d.probs, ...), broadcast_all and the printed form.
--
-- A subclass lists its parameters' constraints in `_arg_constraints` (an array of {name, constraint},
-- PyTorch's arg_constraints in its order), its properties in `_props` (name -> getter(self)), and
-- defines the methods it has: rsample, log_prob, cdf, icdf, entropy, enumerate_support, expand.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local constraints = require 'moontorch.distributions.constraints'

local fail = core.fail
local is_tensor = torch.is_tensor
local pyfloat = constraints._pyfloat

local M = {}

local Distribution = class.class('torch.distributions.Distribution')
M.Distribution = Distribution
Distribution._arg_constraints = {}
Distribution._default_validate = true -- PyTorch validates unless Python runs with -O

-- the short name, as messages and the printed form show it ('Normal')
local function short(d) return (class.typename(d) or 'Distribution'):match('([^.]+)$') end
M.short = short
local function op(d) return 'distributions.' .. short(d) end
M.op = op

-- fields: the class's methods first, then its properties (computed on each read), walking the
-- class chain; a lazy parameter (Bernoulli's logits from its probs) is stored once computed
local function find_prop(cls, k)
  while cls do
    local ps = rawget(cls, '_props')
    if ps and ps[k] then return ps[k] end
    cls = rawget(cls, '__parent')
  end
end
Distribution.__index = function(self, k)
  local cls = getmetatable(self)
  local v = cls[k]
  if v ~= nil then return v end
  local getter = find_prop(cls, k)
  if getter then return getter(self) end
  return nil
end

-- a shape argument: nothing (an empty shape), numbers (d:sample(3, 2)), or an array / torch.Size
function M.shape_arg(opname, ...)
  local a = ...
  local out = {}
  if a == nil then return out end
  if type(a) == 'number' then
    for i = 1, select('#', ...) do
      local n = select(i, ...)
      if type(n) ~= 'number' or n ~= math.floor(n) or n < 0 then
        fail(opname, ('expected a shape of non-negative integers, got %s'):format(tostring(n)))
      end
      out[i] = n
    end
    return out
  end
  if type(a) ~= 'table' or is_tensor(a) then
    fail(opname, ('expected a shape (numbers, an array or a torch.Size), got %s'):format(is_tensor(a) and 'a tensor' or type(a)))
  end
  for i = 1, #a do
    local n = a[i]
    if type(n) ~= 'number' or n ~= math.floor(n) or n < 0 then
      fail(opname, ('expected a shape of non-negative integers, got %s at position %d'):format(tostring(n), i))
    end
    out[i] = n
  end
  return out
end

local function concat(...)
  local out = {}
  for i = 1, select('#', ...) do
    for _, n in ipairs((select(i, ...))) do out[#out + 1] = n end
  end
  return out
end
M.concat = concat

local function size_list(t)
  local out = {}
  for i = 1, t:dim() do out[i] = t:size(i) end
  return out
end
M.size_list = size_list

-- PyTorch's broadcast_all: numbers become tensors (of the tensors' dtype, else the default dtype)
-- and every value is broadcast to the common shape. Returns the tensors and whether all were numbers.
function M.broadcast_all(opname, ...)
  local n = select('#', ...)
  local vals, dtype, all_numbers = { ... }, nil, true
  for i = 1, n do
    local v = vals[i]
    if is_tensor(v) then
      all_numbers = false
      dtype = dtype or v.dtype
    elseif type(v) ~= 'number' then
      fail(opname, ('expected a tensor or a number, got %s'):format(v == nil and 'nil' or type(v)))
    end
  end
  for i = 1, n do
    if not is_tensor(vals[i]) then vals[i] = torch.tensor(vals[i], { dtype = dtype or torch.get_default_dtype() }) end
  end
  if n > 1 then
    local ok, out = pcall(torch.broadcast_tensors, unpack(vals, 1, n))
    if not ok then fail(opname, 'the parameters do not broadcast: ' .. tostring(out):gsub('^.-moontorch%.[%w_.]+: ', '')) end
    vals = out
  end
  return vals, all_numbers
end

-- probabilities kept off 0 and 1 by the dtype's eps (PyTorch's distributions.utils.clamp_probs)
function M.clamp_probs(p)
  local eps = torch.finfo(p.dtype).eps
  return p:clamp(eps, 1 - eps)
end

-- the `probs` and `logits` properties of a distribution over {0, 1} made from either, each computed
-- from the other on first use and kept (PyTorch's lazy_property over logits_to_probs /
-- probs_to_logits(is_binary=True)); clamp_derived: the probabilities derived from logits are clamped
-- too (ContinuousBernoulli). Adds them to `props`, which it returns.
function M.binary_params(props, clamp_derived)
  props.probs = function(self)
    local p = torch.sigmoid(rawget(self, 'logits'))
    if clamp_derived then p = M.clamp_probs(p) end
    rawset(self, 'probs', p)
    return p
  end
  props.logits = function(self)
    local p = M.clamp_probs(rawget(self, 'probs'))
    local l = p:log() - (-p):log1p()
    rawset(self, 'logits', l)
    return l
  end
  return props
end

-- runs fn(...) with gradients off (PyTorch's `with torch.no_grad():`), errors passed on
function M.no_grad(fn, ...)
  local prev = torch.is_grad_enabled()
  torch.set_grad_enabled(false)
  local r = { pcall(fn, ...) }
  torch.set_grad_enabled(prev)
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, table.maxn(r))
end

-- the constructor's trailing options: validate_args
function M.validate_opt(opname, opts)
  if opts == nil then return nil end
  if type(opts) ~= 'table' or is_tensor(opts) then
    fail(opname, ('expected an options table {validate_args=} last, got %s'):format(is_tensor(opts) and 'a tensor' or type(opts)))
  end
  for k in pairs(opts) do
    if k ~= 'validate_args' then fail(opname, ("unknown option '%s' (it takes validate_args)"):format(tostring(k))) end
  end
  return opts.validate_args
end

-- a constructor's arguments: positional (a, b, ..., {validate_args=}) or one options table
-- {name=, ..., validate_args=}. Returns the values (in names' order) and validate_args.
function M.args(opname, names, ...)
  local first, vals = ..., {}
  -- (a plain table: an object, a distribution say, is a positional argument)
  if type(first) == 'table' and not is_tensor(first) and getmetatable(first) == nil then
    local allowed = { validate_args = true }
    for _, k in ipairs(names) do allowed[k] = true end
    for k in pairs(first) do
      if not allowed[k] then
        fail(opname, ("unknown option '%s' (it takes %s, validate_args)"):format(tostring(k), table.concat(names, ', ')))
      end
    end
    for i, k in ipairs(names) do vals[i] = first[k] end
    return vals, first.validate_args
  end
  for i = 1, #names do vals[i] = (select(i, ...)) end
  return vals, M.validate_opt(opname, (select(#names + 1, ...)))
end

local function shape_str(shape)
  return 'torch.Size([' .. table.concat(shape, ', ') .. '])'
end
local function tuple_str(shape)
  if #shape == 1 then return '(' .. shape[1] .. ',)' end
  return '(' .. table.concat(shape, ', ') .. ')'
end

-- Distribution(batch_shape, event_shape, validate_args): subclasses call it last in their __init
function Distribution:__init(batch_shape, event_shape, validate_args)
  self._batch_shape = M.shape_arg(op(self), batch_shape)
  self._event_shape = M.shape_arg(op(self), event_shape)
  if validate_args ~= nil then self._validate_args = validate_args and true or false end
  if self:_validating() then
    for _, ac in ipairs(self._arg_constraints) do
      local name, c = ac[1], ac[2]
      local value = rawget(self, name)
      -- a parameter computed from others (Chi2's df, Beta's concentrations) is checked as PyTorch
      -- checks it, through its property
      if value == nil and self._computed_args and self._computed_args[name] then value = self[name] end
      if value ~= nil and not constraints.is_dependent(c) then
        if not c:check(value):all() then
          fail(op(self), ('Expected parameter %s (Tensor of shape %s) of distribution %s to satisfy the constraint %s, '
            .. 'but found invalid values:\n%s'):format(name, tuple_str(size_list(value)), tostring(self), tostring(c),
            value:dim() == 0 and pyfloat(value:item()) or tostring(value)))
        end
      end
    end
  end
end

function Distribution:_validating()
  local v = rawget(self, '_validate_args')
  if v == nil then return Distribution._default_validate end
  return v
end

-- PyTorch's Distribution.set_default_validate_args(value)
function Distribution.set_default_validate_args(value, ...)
  if type(value) == 'table' and select('#', ...) > 0 then value = ... end -- called with ':'
  if type(value) ~= 'boolean' then
    fail('distributions.Distribution.set_default_validate_args', 'expected a boolean, got ' .. type(value))
  end
  Distribution._default_validate = value
end

-- sample_shape .. batch_shape .. event_shape
function Distribution:_extended_shape(sample_shape)
  return concat(sample_shape or {}, self._batch_shape, self._event_shape)
end

-- the checks PyTorch makes of a value given to log_prob, cdf (when validating)
function Distribution:_validate_sample(value, name)
  name = name or 'log_prob'
  if not is_tensor(value) then fail(op(self) .. '.' .. name, ('the value argument to %s must be a Tensor, got %s'):format(name, type(value))) end
  local vs, es = size_list(value), self._event_shape
  local start = #vs - #es
  local same = start >= 0
  for i = 1, #es do if not same or vs[start + i] ~= es[i] then same = false end end
  if not same then
    fail(op(self) .. '.' .. name, ('The right-most size of value must match event_shape: %s vs %s.'):format(shape_str(vs), shape_str(es)))
  end
  local expected = concat(self._batch_shape, es)
  for i = 0, math.min(#vs, #expected) - 1 do
    local a, b = vs[#vs - i], expected[#expected - i]
    if a ~= 1 and b ~= 1 and a ~= b then
      fail(op(self) .. '.' .. name, ('Value is not broadcastable with batch_shape+event_shape: %s vs %s.'):format(shape_str(vs), shape_str(expected)))
    end
  end
  local support = self.support
  if support and not support:check(value):all() then
    fail(op(self) .. '.' .. name, ('Expected value argument (Tensor of shape %s) to be within the support (%s) of the distribution %s, '
      .. 'but found invalid values:\n%s'):format(tuple_str(vs), tostring(support), tostring(self),
      value:dim() == 0 and pyfloat(value:item()) or tostring(value)))
  end
end

-- a value given to log_prob or cdf (checked against the support when validating) or icdf (a
-- probability: never checked, as PyTorch): a tensor, or a number made a tensor of dtype
function Distribution:_value(value, name, dtype)
  if not is_tensor(value) then
    if type(value) ~= 'number' then
      fail(op(self) .. '.' .. name, ('expected a tensor (or a number) as value, got %s'):format(type(value)))
    end
    value = torch.tensor(value, { dtype = dtype or torch.get_default_dtype() })
  end
  if name ~= 'icdf' and self:_validating() then self:_validate_sample(value, name) end
  return value
end

local function missing(self, what)
  fail(op(self) .. '.' .. what, ('%s does not implement %s'):format(short(self), what))
end

-- d:sample(sample_shape): a draw without gradient (from rsample where there is one)
function Distribution:sample(...)
  local shape = M.shape_arg(op(self) .. '.sample', ...)
  return M.no_grad(self.rsample, self, shape)
end
-- d:rsample(sample_shape): a reparameterized draw (gradients flow to the parameters)
function Distribution:rsample()
  fail(op(self) .. '.rsample', ('%s has no reparameterized sampler (has_rsample is false): use sample()'):format(short(self)))
end
-- d:sample_n(n): sample({n})
function Distribution:sample_n(n)
  if type(n) ~= 'number' then fail(op(self) .. '.sample_n', 'expected a number of samples, got ' .. type(n)) end
  return self:sample({ n })
end
function Distribution:log_prob() missing(self, 'log_prob') end
function Distribution:cdf() missing(self, 'cdf') end
function Distribution:icdf() missing(self, 'icdf') end
function Distribution:entropy() missing(self, 'entropy') end
function Distribution:enumerate_support() missing(self, 'enumerate_support') end
function Distribution:expand() missing(self, 'expand') end
-- exp(entropy)
function Distribution:perplexity() return torch.exp(self:entropy()) end

-- an instance of the same class, left to the caller to fill (expand)
function Distribution:_new_instance()
  local new = setmetatable({}, getmetatable(self))
  new._validate_args = rawget(self, '_validate_args')
  return new
end

Distribution._props = {
  batch_shape = function(self) return torch.Size(self._batch_shape) end,
  event_shape = function(self) return torch.Size(self._event_shape) end,
  arg_constraints = function(self)
    local out = {}
    for _, ac in ipairs(self._arg_constraints) do out[ac[1]] = ac[2] end
    return out
  end,
  has_rsample = function() return false end,
  has_enumerate_support = function() return false end,
  mean = function(self) missing(self, 'mean') end,
  mode = function(self) missing(self, 'mode') end,
  variance = function(self) missing(self, 'variance') end,
  stddev = function(self) return self.variance:sqrt() end,
}

function Distribution:__tostring()
  local parts = {}
  for _, ac in ipairs(self._arg_constraints) do
    local v = rawget(self, ac[1])
    if v ~= nil then
      parts[#parts + 1] = ac[1] .. ': ' .. (v:numel() == 1 and (v:dim() == 0 and pyfloat(v:item()) or tostring(v))
        or shape_str(size_list(v)))
    end
  end
  return short(self) .. '(' .. table.concat(parts, ', ') .. ')'
end

return M
