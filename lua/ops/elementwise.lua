-- Elementwise ops: arithmetic operators, unary math, comparisons, logical ops, where, clamp.
-- Every op is a method and a torch function; `name_` forms work in place; `{out=t}` writes into t.
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local list = require 'moontorch.ops.list'

local C = core.C
local raise_last, fail = core.raise_last, core.fail
local methods, tensor_mt = T.methods, T.tensor_mt
local is_tensor, take, outp = T.is_tensor, T.take, T.outp
local type, floor, huge = type, math.floor, math.huge
local istype, tensor_ct = ffi.istype, ffi.typeof('mt_tensor')
local nan = 0 / 0

local M = {}
local torch -- set by install()

-- number kind for type promotion: 0 bool, 1 integral, 2 floating
local function kind_of(s)
  if s == floor(s) and s > -9.2e18 and s < 9.2e18 then return 1 end
  return 2
end

local function scalar_tensor(s, op)
  -- a Lua value where a tensor is expected: numbers and booleans become 0-dim tensors
  if type(s) == 'boolean' then return torch.tensor(s) end
  fail(op, 'expected a tensor or a number, got ' .. core.typeof(s))
end

------------------------------------------------------------------------------ binary
local B = list.ids('BINARY') -- op ids by name
M.binary_ops = B

-- an operand that is neither a tensor nor a number but an object whose metatable answers the
-- operator itself (moontorch.fx's traced values: `tensor + proxy`): its answer, else nil
local function foreign(name, a, b)
  for _, x in ipairs({ a, b }) do
    local mt = type(x) == 'table' and getmetatable(x)
    if mt and mt.__moontorch_binary then return mt.__moontorch_binary(name, a, b) end
  end
  return nil
end

-- a (op) b for tensors and numbers on either side; out may be nil
local function binary(op, name, a, b, out)
  local st
  if type(b) == 'number' then
    if not istype(tensor_ct, a) then
      if type(a) == 'number' then return fail(name, 'expected at least one tensor, got two numbers') end
      local r = foreign(name, a, b)
      if r ~= nil then return r end
      a = scalar_tensor(a, name)
    end
    st = C.mt_binary_scalar(op, a, b, kind_of(b), 0, out, outp)
  elseif type(a) == 'number' then
    if not istype(tensor_ct, b) then
      local r = foreign(name, a, b)
      if r ~= nil then return r end
      b = scalar_tensor(b, name)
    end
    st = C.mt_binary_scalar(op, b, a, kind_of(a), 1, out, outp)
  else
    if not istype(tensor_ct, a) or not istype(tensor_ct, b) then
      local r = foreign(name, a, b)
      if r ~= nil then return r end
    end
    if not istype(tensor_ct, a) then a = scalar_tensor(a, name) end
    if not istype(tensor_ct, b) then b = scalar_tensor(b, name) end
    st = C.mt_binary(op, a, b, out, outp)
  end
  if st ~= 0 then raise_last() end
  if out ~= nil then C.mt_tensor_release(outp[0]); return out end
  return take()
end
M.binary = binary

local function out_of(opts)
  if type(opts) == 'table' and not is_tensor(opts) then return opts.out end
  return nil
end

local function def_binary(name, op)
  local function f(a, b, opts)
    return binary(op, name, a, b, out_of(opts))
  end
  local function f_(a, b)
    if not is_tensor(a) then fail(name .. '_', 'expected a tensor') end
    return binary(op, name .. '_', a, b, a)
  end
  methods[name] = f
  methods[name .. '_'] = f_
  M[name] = f
end
-- the list's PLAIN binary ops: torch.f(a, b, {out=t}), t:f(b), t:f_(b)
for _, op in ipairs(list.ops()) do
  if op.binding == 'PLAIN' and op.kind:sub(1, 6) == 'BINARY' then def_binary(op.name, op.id) end
end

-- add / sub with alpha (torch.add(a, b, {alpha=2}))
local function add_like(op, name, sign)
  local function f(a, b, opts)
    local out = out_of(opts)
    local alpha = type(opts) == 'table' and not is_tensor(opts) and opts.alpha or nil
    if alpha == nil or alpha == 1 then
      return binary(op, name, a, b, out)
    end
    if type(b) == 'number' then return binary(op, name, a, b * alpha, out) end
    if not is_tensor(a) then a = torch.tensor(a) end
    if C.mt_add_scaled(a, b, sign * alpha, out, outp) ~= 0 then raise_last() end
    if out ~= nil then C.mt_tensor_release(outp[0]); return out end
    return take()
  end
  local function f_(a, b, opts)
    local alpha = type(opts) == 'table' and opts.alpha or nil
    if alpha == nil or alpha == 1 then return binary(op, name .. '_', a, b, a) end
    if type(b) == 'number' then return binary(op, name .. '_', a, b * alpha, a) end
    if C.mt_add_scaled(a, b, sign * alpha, a, nil) ~= 0 then raise_last() end
    return a
  end
  return f, f_
end
methods.add, methods.add_ = add_like(B.add, 'add', 1)
methods.sub, methods.sub_ = add_like(B.sub, 'sub', -1)
M.add, M.sub = methods.add, methods.sub

-- div with rounding_mode = nil | 'trunc' | 'floor'
local function div(a, b, opts)
  local mode = type(opts) == 'table' and not is_tensor(opts) and opts.rounding_mode or nil
  local op = B.div
  if mode == 'trunc' then op = B.div_trunc
  elseif mode == 'floor' then op = B.floor_divide
  elseif mode ~= nil then fail('div', 'expected rounding_mode to be one of nil, "trunc", or "floor" but found "' .. tostring(mode) .. '"') end
  return binary(op, 'div', a, b, out_of(opts))
end
methods.div = div
methods.div_ = function(a, b, opts)
  local mode = type(opts) == 'table' and opts.rounding_mode or nil
  local op = mode == 'trunc' and B.div_trunc or (mode == 'floor' and B.floor_divide or B.div)
  return binary(op, 'div_', a, b, a)
end
M.div = div

-- operators: + - * / ^ % and unary minus; `..` is not used.
-- (the op ids as constants of the closures: a compiled trace needs no table lookup for them)
-- The metamethods are fixed by ffi.metatype, so each asks `observed` (one upvalue test) and, while
-- an observer of the observation point (lua/observe.lua: the profiler) is installed, calls the
-- function of `operators`, a table it may wrap like the other op tables.
local ADD, SUB, MUL, DIV, REM = B.add, B.sub, B.mul, B.div, B.remainder
local operators = {}
M.operators = operators
local observed = false
-- (in a table: install hands every function of M to torch)
M.observation = { set = function(b) observed = b and true or false end }
operators.__add = function(a, b) return binary(ADD, 'add', a, b, nil) end
operators.__sub = function(a, b) return binary(SUB, 'sub', a, b, nil) end
operators.__mul = function(a, b) return binary(MUL, 'mul', a, b, nil) end
operators.__div = function(a, b)
  -- parity: a number over a tensor is PyTorch's __rtruediv__, b.reciprocal() * a (its values and MulBackward0)
  if type(a) == 'number' and istype(tensor_ct, b) then return binary(MUL, 'mul', methods.reciprocal(b), a, nil) end
  return binary(DIV, 'div', a, b, nil)
end
operators.__mod = function(a, b) return binary(REM, 'remainder', a, b, nil) end
tensor_mt.__add = function(a, b)
  if observed then return operators.__add(a, b) end
  return binary(ADD, 'add', a, b, nil)
end
tensor_mt.__sub = function(a, b)
  if observed then return operators.__sub(a, b) end
  return binary(SUB, 'sub', a, b, nil)
end
tensor_mt.__mul = function(a, b)
  if observed then return operators.__mul(a, b) end
  return binary(MUL, 'mul', a, b, nil)
end
local div_op = operators.__div
tensor_mt.__div = function(a, b)
  if observed then return operators.__div(a, b) end
  return div_op(a, b)
end
tensor_mt.__mod = function(a, b)
  if observed then return operators.__mod(a, b) end
  return binary(REM, 'remainder', a, b, nil)
end

------------------------------------------------------------------------------ unary
local U = list.ids('UNARY') -- op ids by name
M.unary_ops = U

local function unary(op, name, a, p1, p2, out)
  if not is_tensor(a) then
    if type(a) == 'number' then a = torch.tensor(a) else fail(name, 'expected a tensor, got ' .. core.typeof(a)) end
  end
  if (p1 ~= nil and type(p1) ~= 'number') or (p2 ~= nil and type(p2) ~= 'number') then
    fail(name, ('expected numbers for its parameters, got %s and %s'):format(type(p1), type(p2)))
  end
  if C.mt_unary(op, a, p1 or 0, p2 or 0, out, outp) ~= 0 then raise_last() end
  if out ~= nil then C.mt_tensor_release(outp[0]); return out end
  return take()
end
M.unary = unary

-- The list's PLAIN unary ops: torch.f(a, {out=t}), t:f(), t:f_() (no in-place form for the
-- UNARY_TEST ops: isnan, ...). An op with parameters takes them after the tensor, as numbers or by
-- name in the options table (torch.logit(a, 1e-6), torch.logit(a, {eps=1e-6})); one not given is NaN.
local function def_unary(op)
  local id, name, params = op.id, op.name, op.params
  local f, f_
  if #params == 0 then
    f = function(a, opts) return unary(id, name, a, 0, 0, out_of(opts)) end
    f_ = function(a) return unary(id, name .. '_', a, 0, 0, a) end
  else
    local function args(fname, ...)
      local p, opts = { nan, nan }, nil
      for i = 1, select('#', ...) do
        local v = select(i, ...)
        if type(v) == 'table' and not is_tensor(v) then
          opts = v
          break
        end
        if i > #params then fail(fname, 'takes ' .. #params .. ' parameter(s) after the tensor, got more') end
        if v ~= nil and type(v) ~= 'number' then fail(fname, params[i] .. ' must be a number, got ' .. core.typeof(v)) end
        if v ~= nil then p[i] = v end
      end
      if opts then
        for k, pname in ipairs(params) do
          local v = opts[pname]
          if v ~= nil and type(v) ~= 'number' then fail(fname, pname .. ' must be a number, got ' .. core.typeof(v)) end
          if v ~= nil then p[k] = v end
        end
      end
      return p[1], p[2], opts and opts.out or nil
    end
    f = function(a, ...)
      local p1, p2, out = args(name, ...)
      return unary(id, name, a, p1, p2, out)
    end
    f_ = function(a, ...)
      local p1, p2 = args(name .. '_', ...)
      return unary(id, name .. '_', a, p1, p2, a)
    end
  end
  methods[name], M[name] = f, f
  if op.kind ~= 'UNARY_TEST' then methods[name .. '_'] = f_ end
end
for _, op in ipairs(list.ops()) do
  if op.binding == 'PLAIN' and op.kind:sub(1, 5) == 'UNARY' then def_unary(op) end
end

local NEG = U.neg
operators.__unm = function(a) return unary(NEG, 'neg', a, 0, 0, nil) end
tensor_mt.__unm = function(a)
  if observed then return operators.__unm(a) end
  return unary(NEG, 'neg', a, 0, 0, nil)
end

-- round(decimals=)
local function round(a, opts)
  local d = type(opts) == 'table' and opts.decimals or (type(opts) == 'number' and opts) or 0
  d = T.int_arg(d, 'round', 'decimals')
  if d == 0 then return unary(U.round, 'round', a, 0, 0, out_of(opts)) end
  return unary(U.round_decimals, 'round', a, d, 0, out_of(opts))
end
methods.round, M.round = round, round
methods.round_ = function(a, opts)
  local d = type(opts) == 'table' and opts.decimals or (type(opts) == 'number' and opts) or 0
  d = T.int_arg(d, 'round_', 'decimals')
  if d == 0 then return unary(U.round, 'round_', a, 0, 0, a) end
  return unary(U.round_decimals, 'round_', a, d, 0, a)
end

-- gelu(approximate='none'|'tanh')
local function gelu(a, opts)
  local approx = type(opts) == 'table' and opts.approximate or 'none'
  if approx == 'tanh' then return unary(U.gelu_tanh, 'gelu', a, 0, 0, nil) end
  if approx ~= 'none' then fail('gelu', 'approximate must be "none" or "tanh", got ' .. tostring(approx)) end
  return unary(U.gelu, 'gelu', a, 0, 0, nil)
end
methods.gelu, M.gelu = gelu, gelu

-- clamp(min, max) with numbers (nil for none) or tensors
local function clamp_impl(name, a, lo, hi, out)
  if lo == nil and hi == nil then fail(name, "at least one of 'min' or 'max' must not be None") end
  if is_tensor(lo) or is_tensor(hi) then
    local r = a
    if lo ~= nil then r = binary(B.maximum, name, r, lo, nil) end
    if hi ~= nil then r = binary(B.minimum, name, r, hi, nil) end
    if out ~= nil then out:copy_(r); return out end
    return r
  end
  if lo ~= nil and type(lo) ~= 'number' then fail(name, 'min must be a number or a tensor') end
  if hi ~= nil and type(hi) ~= 'number' then fail(name, 'max must be a number or a tensor') end
  if not is_tensor(a) then fail(name, 'expected a tensor, got ' .. core.typeof(a)) end
  -- an integer tensor clamped by a float bound becomes float (PyTorch's promotion)
  if not a.dtype.is_floating_point and ((lo and kind_of(lo) == 2) or (hi and kind_of(hi) == 2)) and out ~= a then
    a = a:to(torch.get_default_dtype())
  end
  return unary(U.clamp, name, a, lo == nil and nan or lo, hi == nil and nan or hi, out)
end
local function clamp_args(lo, hi)
  if type(lo) == 'table' and not is_tensor(lo) then return lo.min, lo.max, lo.out end
  if type(hi) == 'table' and not is_tensor(hi) then return lo, hi.max, hi.out end
  return lo, hi, nil
end
local function clamp(a, lo, hi, opts)
  local l, h, out = clamp_args(lo, hi)
  if type(opts) == 'table' then out = opts.out end
  return clamp_impl('clamp', a, l, h, out)
end
methods.clamp, M.clamp = clamp, clamp
methods.clamp_ = function(a, lo, hi)
  local l, h = clamp_args(lo, hi)
  return clamp_impl('clamp_', a, l, h, a)
end
-- parity: a number bound is maximum / minimum with a number (PyTorch's ClampMinBackward0 / ClampMaxBackward0)
methods.clamp_min = function(a, lo)
  if type(lo) == 'number' and is_tensor(a) then return binary(B.maximum, 'clamp_min', a, lo, nil) end
  return clamp_impl('clamp_min', a, lo, nil, nil)
end
methods.clamp_max = function(a, hi)
  if type(hi) == 'number' and is_tensor(a) then return binary(B.minimum, 'clamp_max', a, hi, nil) end
  return clamp_impl('clamp_max', a, nil, hi, nil)
end
methods.clamp_min_ = function(a, lo) return clamp_impl('clamp_min_', a, lo, nil, a) end
methods.clamp_max_ = function(a, hi) return clamp_impl('clamp_max_', a, nil, hi, a) end

-- parameterised activations used by nn.functional
function M.leaky_relu(a, slope, inplace)
  return unary(U.leaky_relu, 'leaky_relu', a, slope or 0.01, 0, inplace and a or nil)
end
function M.elu(a, alpha, inplace) return unary(U.elu, 'elu', a, alpha or 1, 0, inplace and a or nil) end
function M.hardtanh(a, lo, hi, inplace)
  return unary(U.hardtanh, 'hardtanh', a, lo or -1, hi or 1, inplace and a or nil)
end
function M.threshold(a, th, value, inplace)
  return unary(U.threshold, 'threshold', a, th, value, inplace and a or nil)
end
function M.softplus_unit(a) return unary(U.softplus, 'softplus', a, 0, 0, nil) end
function M.nan_to_num(a, nan_v, posinf, neginf)
  if not is_tensor(a) then fail('nan_to_num', 'expected a tensor for input, got ' .. T.describe(a)) end
  if type(nan_v) == 'table' then nan_v, posinf, neginf = nan_v.nan, nan_v.posinf, nan_v.neginf end
  local info = a.dtype
  local big = info == torch.float64 and 1.7976931348623157e308 or (info == torch.float16 and 65504 or 3.4028234663852886e38)
  local r = unary(U.nan_to_num, 'nan_to_num', a, posinf or big, neginf or -big, nil)
  if nan_v and nan_v ~= 0 then r = torch.where(a:isnan(), nan_v, r) end
  return r
end
methods.nan_to_num = M.nan_to_num

-- pow with a number exponent goes through the unary kernel (exact integer powers, no promotion
-- surprises); number ^ tensor through rpow.
local function pow_tensor(a, b, opts) return binary(B.pow, 'pow', a, b, out_of(opts)) end
local function pow(a, b, opts)
  if is_tensor(a) and type(b) == 'number' then
    local out = out_of(opts)
    if not a.dtype.is_floating_point and kind_of(b) == 2 then
      return binary(B.pow, 'pow', a, b, out)
    end
    if a.dtype == torch.bool then return binary(B.pow, 'pow', a, b, out) end
    if b == 2 then return unary(U.square, 'pow', a, 0, 0, out) end
    return unary(U.pow_scalar, 'pow', a, b, 0, out)
  end
  return pow_tensor(a, b, opts)
end
methods.pow, M.pow = pow, pow
methods.pow_ = function(a, b)
  if not is_tensor(a) then fail('pow_', 'expected a tensor') end
  return binary(B.pow, 'pow_', a, b, a)
end
operators.__pow = function(a, b)
  -- parity: a number to a tensor power is PyTorch's __rpow__, tensor(s) ** b (PowBackward1)
  if type(a) == 'number' and istype(tensor_ct, b) then
    local dt = binary(ADD, 'pow', b:new_zeros({}), a, nil).dtype -- result_type(a, b)
    return pow(torch.full({}, a, { dtype = dt, device = b.device }), b)
  end
  return pow(a, b)
end
local pow_op = operators.__pow
tensor_mt.__pow = function(a, b)
  if observed then return operators.__pow(a, b) end
  return pow_op(a, b)
end
methods.float_power = function(a, b)
  local x = is_tensor(a) and a:double() or a
  local y = is_tensor(b) and b:double() or b
  return pow(x, y)
end

------------------------------------------------------------------------------ ternary and friends
local function as_tensor_like(x, ref)
  if is_tensor(x) then return x end
  if type(x) == 'number' then
    local t = torch.tensor(x, { dtype = (kind_of(x) == 2 and not ref.dtype.is_floating_point) and torch.get_default_dtype() or ref.dtype })
    return t
  end
  if type(x) == 'boolean' then return torch.tensor(x) end
  fail('where', 'expected a tensor or a number, got ' .. core.typeof(x))
end

function M.where(cond, a, b)
  if not is_tensor(cond) then fail('where', 'condition must be a tensor, got ' .. T.describe(cond)) end
  if a == nil and b == nil then return cond:nonzero({ as_tuple = true }) end
  if not is_tensor(a) and not is_tensor(b) then
    local dt = (kind_of(a) == 2 or kind_of(b) == 2) and torch.get_default_dtype() or torch.int64
    a, b = torch.tensor(a, { dtype = dt }), torch.tensor(b, { dtype = dt })
  else
    a = as_tensor_like(a, is_tensor(b) and b or cond)
    b = as_tensor_like(b, a)
  end
  if C.mt_where(cond, a, b, nil, outp) ~= 0 then raise_last() end
  return take()
end
methods.where = function(self, cond, other) return M.where(cond, self, other) end

-- lerp by a number: a + (b - a) w, one node named as PyTorch's (LerpBackward0)
local lerp_number = require('moontorch.ops.compose').node('LerpBackward0',
  function(a, b, w) return a + (b - a) * w end,
  function(g, a, b, w)
    local ga, gb = g * (1 - w), g * w
    if ga:dim() ~= a:dim() or ga:size() ~= a:size() then ga = ga:sum_to_size(a:size()) end
    if gb:dim() ~= b:dim() or gb:size() ~= b:size() then gb = gb:sum_to_size(b:size()) end
    return ga, gb
  end)
function M.lerp(a, b, w)
  if not is_tensor(a) or not is_tensor(b) or not (is_tensor(w) or type(w) == 'number') then
    fail('lerp', ('expected tensors for input and end and a tensor or a number for weight, got %s, %s and %s')
      :format(T.describe(a), T.describe(b), T.describe(w)))
  end
  if type(w) == 'number' then return lerp_number(a, b, w) end
  if C.mt_lerp(a, b, w, nil, outp) ~= 0 then raise_last() end
  return take()
end
methods.lerp = M.lerp

-- addcmul/addcdiv: a + v t1 t2, a + v t1 / t2; recorded as one node named as PyTorch's (the C op
-- composes them of binary ops); the gradients broadcast back by the Function (fit_grad)
local function addc_raw(a, t1, t2, v, divide)
  if C.mt_addcmul(a, t1, t2, v, divide, nil, outp) ~= 0 then raise_last() end
  return take()
end
local addc_nodes = {
  [0] = require('moontorch.ops.compose').node('AddcmulBackward0', addc_raw, function(g, _, t1, t2, v)
    local gv = v == 1 and g or g * v
    return g, gv * t2, gv * t1
  end),
  [1] = require('moontorch.ops.compose').node('AddcdivBackward0', addc_raw, function(g, _, t1, t2, v)
    local gv = v == 1 and g or g * v
    local g1 = gv / t2
    return g, g1, -g1 * t1 / t2
  end),
}
local function addc(divide, name)
  local node = addc_nodes[divide]
  local function check(op, a, t1, t2)
    if not is_tensor(a) or not is_tensor(t1) or not is_tensor(t2) then
      fail(op, ('expected tensors for input, tensor1 and tensor2, got %s, %s and %s')
        :format(T.describe(a), T.describe(t1), T.describe(t2)))
    end
  end
  return function(a, t1, t2, opts)
    check(name, a, t1, t2)
    local v = type(opts) == 'table' and opts.value or (type(opts) == 'number' and opts) or 1
    return node(a, t1, t2, v, divide)
  end, function(a, t1, t2, opts)
    check(name .. '_', a, t1, t2)
    local v = type(opts) == 'table' and opts.value or (type(opts) == 'number' and opts) or 1
    if C.mt_addcmul(a, t1, t2, v, divide, a, nil) ~= 0 then raise_last() end
    return a
  end
end
methods.addcmul, methods.addcmul_ = addc(0, 'addcmul')
methods.addcdiv, methods.addcdiv_ = addc(1, 'addcdiv')
M.addcmul, M.addcdiv = methods.addcmul, methods.addcdiv

function M.install(t)
  torch = t
  for k, v in pairs(M) do
    if type(v) == 'function' and k ~= 'install' and k ~= 'binary' and k ~= 'unary' and t[k] == nil then t[k] = v end
  end
end

------------------------------------------------------------------------------ composed in Lua
-- deg2rad/rad2deg, logaddexp(2), signbit, isposinf/isneginf, isreal, heaviside, angle, sgn,
-- asinh/acosh/atanh and erfinv with derivatives of their own, gcd/lcm, positive, rsub, ldexp,
-- the methods and in-place methods PyTorch also has as torch functions, t:apply_ / t:map_.
-- Written with the ops above, so that autograd, dtypes and devices follow; 1-based dims and
-- positions, options in a trailing table. composed.install(torch) puts them in torch and on the
-- Tensor type where those lack the name (lua/init.lua calls it once every op file is installed).
M.composed = {}
do
  local K = require 'moontorch.ops.compose'
  local composed = M.composed
  local need, sizes, size_of, is_float, as_float = K.need, K.sizes, K.size_of, K.is_float, K.as_float
  local type, huge, pi = type, math.huge, math.pi
  local ipairs = ipairs

  -- a function of one tensor computed without autograd, with its own derivative: one node named
  -- as PyTorch's (AsinhBackward0, ...); `grad(x, g)` is written with ops, so second derivatives work
  local function unary_with_grad(name, node, value, grad)
    local Fn -- made at the first call that records (torch.autograd loads after this file)
    return function(x)
      need(name, x)
      if x.requires_grad and torch.is_grad_enabled() then
        if not Fn then
          Fn = torch.autograd.Function(name)
          Fn._backward_name = node
          function Fn.forward(ctx, t)
            ctx:save_for_backward(t)
            return value(t)
          end
          function Fn.backward(ctx, g) return grad(ctx.saved_tensors[1], g) end
        end
        return Fn.apply(x)
      end
      return value(x)
    end
  end
  -- float32 (and half) inputs computed in float64, rounded once
  local function in_f64(f)
    return function(x)
      local fx = as_float(x)
      if fx.dtype == torch.float64 then return f(fx) end
      return f(fx:to(torch.float64)):to(fx.dtype)
    end
  end

  -- x times a constant, one node named as PyTorch's
  local function scaled(op, node, c)
    local f = K.node(node, function(x) return x * c end, function(g) return g * c end)
    return function(x) need(op, x) return f(as_float(x)) end
  end
  local deg2rad = scaled('deg2rad', 'Deg2RadBackward0', pi / 180)
  local rad2deg = scaled('rad2deg', 'Rad2DegBackward0', 180 / pi)

  -- the gradients of a broadcast binary op reduced to each operand's shape
  local function to_sizes(ga, gb, a, b)
    if ga:dim() ~= a:dim() or ga:size() ~= a:size() then ga = ga:sum_to_size(a:size()) end
    if gb:dim() ~= b:dim() or gb:size() ~= b:size() then gb = gb:sum_to_size(b:size()) end
    return ga, gb
  end
  local logaddexp = K.node('LogaddexpBackward0', function(a, b)
    local m = torch.maximum(a, b)
    local r = m + (-(a - b):abs()):exp():log1p()
    -- equal infinities: the infinity itself (the formula gives nan)
    local same_inf = a:eq(b):logical_and(a:isinf())
    if same_inf:any() then r = torch.where(same_inf, a, r) end
    return r
  end, function(g, a, b) return to_sizes(g / ((b - a):exp() + 1), g / ((a - b):exp() + 1), a, b) end)
  local logaddexp2 = K.node('Logaddexp2Backward0', function(a, b)
    local m = torch.maximum(a, b)
    local r = m + (-(a - b):abs() * math.log(2)):exp():log1p() * (1 / math.log(2))
    local same_inf = a:eq(b):logical_and(a:isinf())
    if same_inf:any() then r = torch.where(same_inf, a, r) end
    return r
  end, function(g, a, b)
    return to_sizes(g / (((b - a) * math.log(2)):exp() + 1), g / (((a - b) * math.log(2)):exp() + 1), a, b)
  end)
  local function checked(name, f)
    return function(a, b)
      need(name, a) need(name, b, 'other')
      return f(a, b)
    end
  end
  local function signbit(x)
    need('signbit', x)
    if not is_float(x) then return x:lt(0) end
    -- -0.0 too: 1 / x is -inf there
    return x:lt(0):logical_or(x:eq(0):logical_and((1 / x):lt(0)))
  end
  local function isposinf(x) need('isposinf', x) return x:eq(huge) end
  local function isneginf(x) need('isneginf', x) return x:eq(-huge) end
  local function isreal(x) need('isreal', x) return torch.ones(size_of(x), { dtype = torch.bool, device = x.device }) end
  local function heaviside(x, values)
    need('heaviside', x) need('heaviside', values, 'values')
    if x.dtype ~= values.dtype then
      fail('heaviside', 'heaviside is not yet implemented for tensors with different dtypes')
    end
    return torch.where(x:eq(0), values, x:gt(0):to(x.dtype))
  end
  -- angle and sgn of real numbers are piecewise constant: their gradient is zero (PyTorch's too)
  local function zero_grad(g) return torch.zeros_like(g) end
  local angle_of = K.node('AngleBackward0', function(fx)
    local r = torch.where(fx:lt(0), pi, torch.zeros_like(fx))
    return torch.where(fx:isnan(), fx, r)
  end, zero_grad)
  local function angle(x)
    need('angle', x)
    return angle_of(as_float(x))
  end
  local sgn_node = K.node('SgnBackward0', function(x) return x:sign() end, zero_grad)
  local function sgn(x)
    need('sgn', x)
    return sgn_node(x)
  end

  local asinh = unary_with_grad('asinh', 'AsinhBackward0', in_f64(function(x)
    local a = x:abs()
    return (a + a * a / ((a * a + 1):sqrt() + 1)):log1p() * x:sign()
  end), function(x, g) return g / (x * x + 1):sqrt() end)
  local acosh = unary_with_grad('acosh', 'AcoshBackward0', in_f64(function(x)
    local t = x - 1
    return (t + (t * (x + 1)):sqrt()):log1p()
  end), function(x, g) return g / (x * x - 1):sqrt() end)
  local atanh = unary_with_grad('atanh', 'AtanhBackward0', in_f64(function(x)
    return (2 * x / (1 - x)):log1p() * 0.5
  end), function(x, g) return g / (1 - x * x) end)

  -- erfinv: Giles' single-precision approximation, then Newton steps on erf in float64
  local erfinv
  erfinv = unary_with_grad('erfinv', 'ErfinvBackward0', in_f64(function(x)
    local w = -((1 - x) * (1 + x)):log()
    local small = w:lt(5)
    local ws, wl = w - 2.5, w:sqrt() - 3
    local p1 = torch.full_like(w, 2.81022636e-08)
    for _, c in ipairs { 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
      -0.00417768164, 0.246640727, 1.50140941 } do p1 = p1 * ws + c end
    local p2 = torch.full_like(w, -0.000200214257)
    for _, c in ipairs { 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
      0.00943887047, 1.00167406, 2.83297682 } do p2 = p2 * wl + c end
    local y = torch.where(small, p1, p2) * x
    local k = 2 / math.sqrt(pi)
    for _ = 1, 3 do
      local ok = y:isfinite()
      local step = (y:erf() - x) / ((-(y * y)):exp() * k)
      y = torch.where(ok, y - step, y)
    end
    y = torch.where(x:eq(1), huge, y)
    y = torch.where(x:eq(-1), -huge, y)
    return torch.where(x:abs():gt(1), 0 / 0, y)
  end), function(x, g)
    local y = erfinv(x) -- PyTorch's formula: sqrt(pi) / 2 * exp(erfinv(x)^2) * grad
    return g * (y * y):exp() * (math.sqrt(pi) / 2)
  end)

  local function gcd(a, b)
    need('gcd', a) need('gcd', b, 'other')
    if is_float(a) or is_float(b) then fail('gcd', '"gcd_cpu" not implemented for \'' .. tostring(a.dtype) .. "'") end
    a, b = torch.broadcast_tensors(a, b)[1]:abs(), torch.broadcast_tensors(a, b)[2]:abs()
    while b:ne(0):any() do
      local nz = b:ne(0)
      local safe = torch.where(nz, b, 1)
      local r = a:remainder(safe)
      a, b = torch.where(nz, b, a), torch.where(nz, r, 0)
    end
    return a
  end
  local function lcm(a, b)
    local g = gcd(a, b)
    local safe = torch.where(g:eq(0), 1, g)
    return torch.where(g:eq(0), 0, (a:abs() / safe):floor():to(g.dtype) * b:abs()):to(g.dtype)
  end
  composed.logaddexp = logaddexp -- (logcumsumexp's: lua/ops/reduce.lua)

  local fns = { -- torch functions and methods
    deg2rad = deg2rad, rad2deg = rad2deg, logaddexp = checked('logaddexp', logaddexp),
    logaddexp2 = checked('logaddexp2', logaddexp2), signbit = signbit,
    isposinf = isposinf, isneginf = isneginf, isreal = isreal, heaviside = heaviside, angle = angle, sgn = sgn,
    asinh = asinh, acosh = acosh, atanh = atanh, arcsinh = asinh, arccosh = acosh, arctanh = atanh, erfinv = erfinv,
    gcd = gcd, lcm = lcm,
    positive = function(x) return x end,
  }
  function composed.install(tt)
    torch = tt
    K.install_functions(torch, fns, true)
    -- the methods PyTorch also has as torch functions
    K.functions_of_methods(torch, { 'clamp_min', 'clamp_max', 'float_power', 'square', 'frac', 'exp2', 'logit',
    'nan_to_num', 'copysign', 'fmax', 'fmin', 'absolute', 'negative', 'fix', 'hypot', 'sinc', 'true_divide', 'conj',
    'resolve_conj', 'resolve_neg' })
    if torch.rsub == nil then
      torch.rsub = function(a, b, opts)
        need('rsub', a)
        if not (is_tensor(b) or type(b) == 'number') then
          fail('rsub', 'expected a tensor or a number for other, got ' .. T.describe(b))
        end
        local alpha = opts and opts.alpha or 1
        return b - (alpha ~= 1 and a * alpha or a)
      end
    end
    if torch.ldexp == nil then torch.ldexp = function(x, e) return x * torch.pow(2, e) end end
    -- the in-place methods PyTorch also has as torch functions
    K.functions_of_methods(torch, { 'relu_', 'sigmoid_', 'tanh_', 'exp_', 'log_', 'sqrt_', 'rsqrt_', 'abs_', 'neg_',
    'clamp_', 'clamp_min_', 'clamp_max_', 'ceil_', 'floor_', 'round_', 'trunc_', 'frac_', 'sin_', 'cos_',
    'reciprocal_', 'selu_', 'celu_', 'square_', 'sinh_', 'cosh_', 'tan_', 'asin_', 'acos_', 'atan_', 'erf_', 'erfc_',
    'expm1_', 'log1p_', 'log2_', 'log10_', 'sign_', 'fix_', 'logit_', 'nan_to_num_' })
    -- t:apply_(fn) / t:map_(other, fn): a Lua function over every element in order (PyTorch's CPU
    -- apply_ / map_, Torch7's apply / map), written back in place
    local function flat_values(t) return t:contiguous():reshape(-1):tolist() end
    local function write_back(t, vals, op)
      local src = torch.tensor(vals, { dtype = t.dtype }):reshape(sizes(t))
      t:copy_(src)
      return t
    end
    if methods.apply_ == nil then
      methods.apply_ = function(t, fn)
        need('apply_', t)
        if type(fn) ~= 'function' then fail('apply_', 'expected a function') end
        if t.requires_grad then fail('apply_', "apply_ is only implemented on CPU tensors that don't require grad") end
        local v = flat_values(t)
        for i = 1, #v do
          local r = fn(v[i])
          if r ~= nil then v[i] = r end
        end
        return write_back(t, v, 'apply_')
      end
    end
    if methods.map_ == nil then
      methods.map_ = function(t, other, fn)
        need('map_', t) need('map_', other, 'other')
        if type(fn) ~= 'function' then fail('map_', 'expected a function') end
        if t.requires_grad then fail('map_', "map_ is only implemented on CPU tensors that don't require grad") end
        local v, o = flat_values(t), flat_values(other:expand_as(t))
        for i = 1, #v do
          local r = fn(v[i], o[i])
          if r ~= nil then v[i] = r end
        end
        return write_back(t, v, 'map_')
      end
    end
  end
end

return M
