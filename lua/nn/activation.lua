-- Activation modules (issue 12): ReLU6, ELU, SELU, CELU, GELU, SiLU, Mish, PReLU, Hardtanh,
-- Hardsigmoid, Hardswish, Softplus, Softsign, Threshold, Softmin, Softmax2d, GLU, LogSigmoid,
-- Tanhshrink, Hardshrink, Softshrink, RReLU (and F.rrelu, F.gumbel_softmax). PyTorch's constructor
-- arguments (by position or in a trailing options table), each forward one nn.functional call,
-- extra_repr as PyTorch prints.
-- (ReLU, LeakyReLU, Sigmoid, Tanh, Softmax, LogSoftmax are in layers.lua.)
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local Mod = require 'moontorch.nn.Module'
local A = require 'moontorch.nn.modargs'

local fail = core.fail
local Module, Parameter = Mod.Module, Mod.Parameter
local check_int, declare_forward = Mod.check_int, Mod.declare_forward
local pyfloat, pynum = A.pyfloat, A.pynum
local type, tostring = type, tostring

local M = {}
local nn, F -- set by install

local define = Mod.definer(M)

local function inplace_repr(self) return self.inplace and 'inplace=True' or '' end
local function inplace_tail(self) return self.inplace and ', inplace=True' or '' end

-- modules whose only argument is inplace=false
local function inplace_only(name, fn, printed)
  local cls = define(name)
  function cls:__init(...)
    Module.__init(self)
    local v = A.parse('nn.' .. name, { 'inplace' }, false, ...)
    self.inplace = A.bool('nn.' .. name, 'inplace', v.inplace, false)
  end
  function cls:forward(input) return F[fn](input, self.inplace) end
  declare_forward(cls, { 'input' })
  if printed then cls.extra_repr = inplace_repr end
  return cls
end

-- modules without arguments
local function plain(name, fn)
  local cls = define(name)
  function cls:__init() Module.__init(self) end
  function cls:forward(input) return F[fn](input) end
  declare_forward(cls, { 'input' })
  return cls
end

------------------------------------------------------------------------------ Hardtanh, ReLU6
-- nn.Hardtanh(min_val=-1, max_val=1, inplace=false)
local Hardtanh = define('Hardtanh')
function Hardtanh:__init(...)
  Module.__init(self)
  local v = A.parse('nn.Hardtanh', { 'min_val', 'max_val', 'inplace', 'min_value', 'max_value' }, false, ...)
  local lo = A.number('nn.Hardtanh', 'min_val', v.min_value or v.min_val, -1.0)
  local hi = A.number('nn.Hardtanh', 'max_val', v.max_value or v.max_val, 1.0)
  if not (hi > lo) then fail('nn.Hardtanh', ('max_val (%s) must be greater than min_val (%s)'):format(pyfloat(hi), pyfloat(lo))) end
  self.min_val, self.max_val = lo, hi
  self.inplace = A.bool('nn.Hardtanh', 'inplace', v.inplace, false)
end
function Hardtanh:forward(input) return F.hardtanh(input, self.min_val, self.max_val, self.inplace) end
declare_forward(Hardtanh, { 'input' })
function Hardtanh:extra_repr()
  return ('min_val=%s, max_val=%s%s'):format(pyfloat(self.min_val), pyfloat(self.max_val), inplace_tail(self))
end

-- nn.ReLU6(inplace=false): Hardtanh(0, 6)
local ReLU6 = define('ReLU6', Hardtanh)
function ReLU6:__init(...)
  Module.__init(self)
  local v = A.parse('nn.ReLU6', { 'inplace' }, false, ...)
  self.min_val, self.max_val = 0.0, 6.0
  self.inplace = A.bool('nn.ReLU6', 'inplace', v.inplace, false)
end
ReLU6.extra_repr = inplace_repr

------------------------------------------------------------------------------ ELU family
-- nn.ELU(alpha=1, inplace=false), nn.CELU(alpha=1, inplace=false)
local function alpha_class(name, fn)
  local cls = define(name)
  function cls:__init(...)
    Module.__init(self)
    local v = A.parse('nn.' .. name, { 'alpha', 'inplace' }, false, ...)
    self.alpha = A.number('nn.' .. name, 'alpha', v.alpha, 1.0)
    self.inplace = A.bool('nn.' .. name, 'inplace', v.inplace, false)
  end
  function cls:forward(input) return F[fn](input, self.alpha, self.inplace) end
  declare_forward(cls, { 'input' })
  function cls:extra_repr() return 'alpha=' .. pyfloat(self.alpha) .. inplace_tail(self) end
end
alpha_class('ELU', 'elu')
alpha_class('CELU', 'celu')
inplace_only('SELU', 'selu', true)

------------------------------------------------------------------------------ smooth ones
-- nn.GELU(approximate='none'|'tanh')
local GELU = define('GELU')
function GELU:__init(...)
  Module.__init(self)
  local v = A.parse('nn.GELU', { 'approximate' }, false, ...)
  local a = v.approximate or 'none'
  if a ~= 'none' and a ~= 'tanh' then
    fail('nn.GELU', ('approximate argument must be either none or tanh (got %s)'):format(tostring(a)))
  end
  self.approximate = a
end
function GELU:forward(input) return F.gelu(input, self.approximate) end
declare_forward(GELU, { 'input' })
function GELU:extra_repr() return "approximate='" .. self.approximate .. "'" end

inplace_only('SiLU', 'silu', true)
inplace_only('Mish', 'mish', true)
inplace_only('Hardsigmoid', 'hardsigmoid', false)
inplace_only('Hardswish', 'hardswish', false)
plain('Softsign', 'softsign')
plain('LogSigmoid', 'logsigmoid')
plain('Tanhshrink', 'tanhshrink')

-- nn.Softplus(beta=1, threshold=20)
local Softplus = define('Softplus')
function Softplus:__init(...)
  Module.__init(self)
  local v = A.parse('nn.Softplus', { 'beta', 'threshold' }, false, ...)
  self.beta = A.number('nn.Softplus', 'beta', v.beta, 1)
  self.threshold = A.number('nn.Softplus', 'threshold', v.threshold, 20)
end
function Softplus:forward(input) return F.softplus(input, self.beta, self.threshold) end
declare_forward(Softplus, { 'input' })
function Softplus:extra_repr() return ('beta=%s, threshold=%s'):format(pynum(self.beta), pynum(self.threshold)) end

------------------------------------------------------------------------------ PReLU
-- nn.PReLU(num_parameters=1, init=0.25, {device=, dtype=}): one learnt slope, or one per channel
local PReLU = define('PReLU')
function PReLU:__init(...)
  Module.__init(self)
  local v, fk = A.parse('nn.PReLU', { 'num_parameters', 'init' }, true, ...)
  local n = v.num_parameters or 1
  check_int('nn.PReLU', 'num_parameters', n, 1)
  self.num_parameters = n
  self.init = A.number('nn.PReLU', 'init', v.init, 0.25)
  self.weight = Parameter(fk and torch.empty({ n }, fk) or torch.empty({ n }))
  if require('moontorch.nn.layers').skipping == 0 then self:reset_parameters() end
end
function PReLU:reset_parameters() nn.init.constant_(self.weight, self.init) end
function PReLU:forward(input) return F.prelu(input, self.weight) end
declare_forward(PReLU, { 'input' })
function PReLU:extra_repr() return ('num_parameters=%d'):format(self.num_parameters) end

------------------------------------------------------------------------------ thresholds, shrinks
-- nn.Threshold(threshold, value, inplace=false)
local Threshold = define('Threshold')
function Threshold:__init(threshold, value, ...)
  Module.__init(self)
  local v = A.parse('nn.Threshold', { 'inplace' }, false, ...)
  if type(threshold) == 'table' and A.is_opts(threshold) then
    v = A.parse('nn.Threshold', { 'threshold', 'value', 'inplace' }, false, threshold)
    threshold, value = v.threshold, v.value
  end
  if threshold == nil or value == nil then
    fail('nn.Threshold', "__init__() missing 2 required positional arguments: 'threshold' and 'value'")
  end
  self.threshold = A.number('nn.Threshold', 'threshold', threshold)
  self.value = A.number('nn.Threshold', 'value', value)
  self.inplace = A.bool('nn.Threshold', 'inplace', v.inplace, false)
end
function Threshold:forward(input) return F.threshold(input, self.threshold, self.value, self.inplace) end
declare_forward(Threshold, { 'input' })
function Threshold:extra_repr()
  return ('threshold=%s, value=%s%s'):format(pynum(self.threshold), pynum(self.value), inplace_tail(self))
end

-- nn.Hardshrink(lambd=0.5), nn.Softshrink(lambd=0.5)
local function shrink(name, fn)
  local cls = define(name)
  function cls:__init(...)
    Module.__init(self)
    local v = A.parse('nn.' .. name, { 'lambd' }, false, ...)
    self.lambd = A.number('nn.' .. name, 'lambd', v.lambd, 0.5)
  end
  function cls:forward(input) return F[fn](input, self.lambd) end
  declare_forward(cls, { 'input' })
  function cls:extra_repr() return pyfloat(self.lambd) end
end
shrink('Hardshrink', 'hardshrink')
shrink('Softshrink', 'softshrink')

------------------------------------------------------------------------------ softmin, softmax2d, glu
-- nn.Softmin(dim=nil): dim 1-based
local Softmin = define('Softmin')
function Softmin:__init(...)
  Module.__init(self)
  local v = A.parse('nn.Softmin', { 'dim' }, false, ...)
  if v.dim ~= nil then check_int('nn.Softmin', 'dim', v.dim) end
  self.dim = v.dim
end
function Softmin:forward(input) return F.softmin(input, self.dim) end
declare_forward(Softmin, { 'input' })
function Softmin:extra_repr() return 'dim=' .. (self.dim == nil and 'None' or tostring(self.dim)) end

-- nn.Softmax2d(): softmax over the channels of (N, C, H, W) or (C, H, W)
local Softmax2d = define('Softmax2d')
function Softmax2d:__init() Module.__init(self) end
function Softmax2d:forward(input)
  Mod.need_input('nn.Softmax2d', input)
  local nd = input:dim()
  if nd ~= 3 and nd ~= 4 then fail('Softmax2d', ('expected input to be 3D or 4D, got %dD instead'):format(nd)) end
  return F.softmax(input, -3)
end
declare_forward(Softmax2d, { 'input' })

-- nn.GLU(dim=-1)
local GLU = define('GLU')
function GLU:__init(...)
  Module.__init(self)
  local v = A.parse('nn.GLU', { 'dim' }, false, ...)
  self.dim = v.dim == nil and -1 or v.dim
  check_int('nn.GLU', 'dim', self.dim)
end
function GLU:forward(input) return F.glu(input, self.dim) end
declare_forward(GLU, { 'input' })
function GLU:extra_repr() return 'dim=' .. tostring(self.dim) end

------------------------------------------------------------------------------ RReLU, gumbel_softmax
-- F.rrelu (PyTorch's draws under the same seed), F.rrelu_, nn.RReLU, F.gumbel_softmax: composed from
-- the tensor ops (autograd follows)
local functional = {} -- name -> function, put in nn.functional by install
do
  -- x times the slopes drawn (1 where x > 0), one node named as PyTorch's
  local with_noise = require('moontorch.ops.compose').node('RreluWithNoiseBackward0',
    function(x, slope) return x * slope end, function(g, _, slope) return g * slope end)
  local function rrelu(x, lower, upper, training, inplace)
    if type(lower) == 'table' then
      local o = lower
      lower, upper, training, inplace = o.lower, o.upper, o.training, o.inplace
    end
    lower, upper = lower or 1 / 8, upper or 1 / 3
    if not torch.is_tensor(x) then fail('rrelu', 'expected a tensor for input, got ' .. require('moontorch.tensor').describe(x)) end
    if type(lower) ~= 'number' or type(upper) ~= 'number' then
      fail('rrelu', ('expected numbers for lower and upper, got %s and %s'):format(type(lower), type(upper)))
    end
    if training then
      -- PyTorch draws one uniform double per non-positive element, in order
      local neg = x:le(0)
      local k = neg:sum():item()
      local slope = torch.ones_like(x)
      if k > 0 then
        local u = torch.empty(k, { dtype = torch.float64 }):uniform_(lower, upper):to(x.dtype)
        slope = slope:masked_scatter(neg, u)
      end
      local r = with_noise(x, slope)
      if inplace then x:copy_(r) return x end
      return r
    end
    local r = with_noise(x, torch.where(x:gt(0), 1, (lower + upper) / 2):to(x.dtype))
    if inplace then x:copy_(r) return x end
    return r
  end
  local function gumbel_softmax(logits, tau, hard, eps, dim)
    if type(tau) == 'table' then
      local o = tau
      tau, hard, dim = o.tau, o.hard, o.dim
    end
    tau, dim = tau or 1, dim or -1
    local g = -torch.empty_like(logits):exponential_():log()
    local y = ((logits + g) / tau):softmax(dim)
    if hard then
      local _, idx = y:max(dim, { keepdim = true })
      local y_hard = torch.zeros_like(logits):scatter(dim, idx, 1.0)
      return y_hard - y:detach() + y
    end
    return y
  end
  functional.rrelu, functional.gumbel_softmax = rrelu, gumbel_softmax
end
-- nn.RReLU(lower=1/8, upper=1/3, inplace=false)
local RReLU = define('RReLU')
function RReLU:__init(...)
  Module.__init(self)
  local v = A.parse('nn.RReLU', { 'lower', 'upper', 'inplace' }, false, ...)
  self.lower = A.number('nn.RReLU', 'lower', v.lower, 1 / 8)
  self.upper = A.number('nn.RReLU', 'upper', v.upper, 1 / 3)
  self.inplace = A.bool('nn.RReLU', 'inplace', v.inplace, false)
end
function RReLU:forward(input) return F.rrelu(input, self.lower, self.upper, self.training, self.inplace) end
declare_forward(RReLU, { 'input' })
function RReLU:extra_repr()
  return ('lower=%s, upper=%s%s'):format(pyfloat(self.lower), pyfloat(self.upper), self.inplace and ', inplace=True' or '')
end

function M.install(nn_)
  nn, F = nn_, nn_.functional
  class.export(M, nn)
  for name, f in pairs(functional) do
    if F[name] == nil then F[name] = f end
  end
  if F.rrelu_ == nil then
    F.rrelu_ = function(x, lower, upper, training) return F.rrelu(x, lower, upper, training, true) end
  end
end

return M
