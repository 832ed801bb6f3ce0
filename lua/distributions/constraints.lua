-- torch.distributions.constraints: the sets a distribution's parameters and samples live in
-- (PyTorch's torch.distributions.constraints). A constraint's check(value) gives a bool tensor, one
-- element per event (event_dim rightmost dimensions reduced); it prints as PyTorch's does
-- (`GreaterThan(lower_bound=0.0)`), which is what the validation messages show.
local torch = require 'moontorch'
local class = require 'moontorch.class'

local M = {}

-- a bound as PyTorch prints it: 0.0 for a float, 0 for an integer bound, a tensor as a tensor
local function pyfloat(v)
  if torch.is_tensor(v) then
    if v:dim() ~= 0 then return tostring(v) end
    v = v:item()
  end
  if v == math.floor(v) and math.abs(v) < 1e16 then return ('%.1f'):format(v) end
  for digits = 15, 16 do -- Python's repr: the shortest form that reads back the same double
    local s = ('%.' .. digits .. 'g'):format(v)
    if tonumber(s) == v then return s end
  end
  return ('%.17g'):format(v)
end
M._pyfloat = pyfloat

local Constraint = class.class('torch.distributions.constraints.Constraint')
M.Constraint = Constraint
Constraint.is_discrete = false
Constraint.event_dim = 0

function Constraint:__init(name, check, fields)
  self._name, self._check = name, check
  for k, v in pairs(fields or {}) do self[k] = v end
end

-- a bool tensor: true where value lies in the set (reduced over the event's dimensions)
function Constraint:check(value)
  if not torch.is_tensor(value) then value = torch.tensor(value) end
  return self._check(self, value)
end

function Constraint:__tostring() return self._name end

local function make(name, check, fields) return Constraint(name, check, fields) end

-- reduce the rightmost n dimensions with all()
local function all_rightmost(b, n)
  for _ = 1, n do b = b:all(-1) end
  return b
end

M.real = make('Real()', function(_, v) return v:eq(v) end)
M.boolean = make('Boolean()', function(_, v) return v:eq(0):logical_or(v:eq(1)) end, { is_discrete = true })
M.nonnegative_integer = make('IntegerGreaterThan(lower_bound=0)',
  function(_, v) return torch.remainder(v, 1):eq(0):logical_and(v:ge(0)) end, { is_discrete = true })
M.positive_integer = make('IntegerGreaterThan(lower_bound=1)',
  function(_, v) return torch.remainder(v, 1):eq(0):logical_and(v:ge(1)) end, { is_discrete = true })

function M.greater_than(lb)
  return make(('GreaterThan(lower_bound=%s)'):format(pyfloat(lb)), function(_, v) return v:gt(lb) end, { lower_bound = lb })
end
function M.greater_than_eq(lb)
  return make(('GreaterThanEq(lower_bound=%s)'):format(pyfloat(lb)), function(_, v) return v:ge(lb) end, { lower_bound = lb })
end
function M.less_than(ub)
  return make(('LessThan(upper_bound=%s)'):format(pyfloat(ub)), function(_, v) return v:lt(ub) end, { upper_bound = ub })
end
function M.interval(lb, ub)
  return make(('Interval(lower_bound=%s, upper_bound=%s)'):format(pyfloat(lb), pyfloat(ub)),
    function(_, v) return v:ge(lb):logical_and(v:le(ub)) end, { lower_bound = lb, upper_bound = ub })
end
function M.half_open_interval(lb, ub)
  return make(('HalfOpenInterval(lower_bound=%s, upper_bound=%s)'):format(pyfloat(lb), pyfloat(ub)),
    function(_, v) return v:ge(lb):logical_and(v:lt(ub)) end, { lower_bound = lb, upper_bound = ub })
end
-- an integer bound as PyTorch prints it: a number as an integer, a 0-d tensor as its float (Python's
-- format of a 0-d tensor), another tensor as a tensor
local function int_bound(v)
  if torch.is_tensor(v) then return pyfloat(v) end
  return ('%d'):format(v)
end
function M.integer_interval(lb, ub)
  return make(('IntegerInterval(lower_bound=%s, upper_bound=%s)'):format(int_bound(lb), int_bound(ub)),
    function(_, v) return torch.remainder(v, 1):eq(0):logical_and(v:ge(lb)):logical_and(v:le(ub)) end,
    { lower_bound = lb, upper_bound = ub, is_discrete = true })
end
-- base's check with the rightmost n batch dimensions taken as event dimensions
function M.independent(base, n)
  return make(('IndependentConstraint(%s, %d)'):format(tostring(base), n),
    function(_, v) return all_rightmost(base:check(v), n) end,
    { base_constraint = base, reinterpreted_batch_ndims = n, is_discrete = base.is_discrete, event_dim = base.event_dim + n })
end
-- a parameter whose set depends on the others (Uniform's low and high): never checked alone
function M.dependent(is_discrete, event_dim)
  return make('Dependent()', function() error('moontorch.distributions.constraints: a dependent constraint cannot be checked', 3) end,
    { is_dependent = true, is_discrete = is_discrete or false, event_dim = event_dim or 0 })
end
function M.is_dependent(c) return type(c) == 'table' and c.is_dependent == true end

M.positive = M.greater_than(0)
M.nonnegative = M.greater_than_eq(0)
M.unit_interval = M.interval(0, 1)
M.real_vector = M.independent(M.real, 1)
M.simplex = make('Simplex()', function(_, v)
  return v:ge(0):all(-1):logical_and(v:sum(-1):sub(1):abs():lt(1e-6))
end, { event_dim = 1 })
-- square matrices equal to their transpose (within PyTorch's tolerance), with a Cholesky factor
M.positive_definite = make('PositiveDefinite()', function(_, v)
  local sym = v:sub(v:transpose(-2, -1)):abs():le(1e-6):all(-1):all(-1)
  local _, info = torch.linalg.cholesky_ex(v)
  return sym:logical_and(info:eq(0))
end, { event_dim = 2 })
-- lower triangular with a positive diagonal
M.lower_cholesky = make('LowerCholesky()', function(_, v)
  local lower = v:tril():eq(v):all(-1):all(-1)
  local diag = v:diagonal(0, -2, -1):gt(0):all(-1)
  return lower:logical_and(diag)
end, { event_dim = 2 })
-- vectors of nonnegative counts summing to at most upper_bound (Multinomial's support)
function M.multinomial(upper_bound)
  return make('Multinomial()', function(_, v) return v:ge(0):all(-1):logical_and(v:sum(-1):le(upper_bound)) end,
    { upper_bound = upper_bound, is_discrete = true, event_dim = 1 })
end
M.one_hot = make('OneHot()', function(_, v)
  return v:eq(0):logical_or(v:eq(1)):all(-1):logical_and(v:sum(-1):eq(1))
end, { is_discrete = true, event_dim = 1 })

return M
