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
  fail(op, 'expected a tensor or a number, got ' .. type(s))
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
    if type(a) == 'number' then a = torch.tensor(a) else fail(name, 'expected a tensor, got ' .. type(a)) end
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
        if v ~= nil and type(v) ~= 'number' then fail(fname, params[i] .. ' must be a number, got ' .. type(v)) end
        if v ~= nil then p[i] = v end
      end
      if opts then
        for k, pname in ipairs(params) do
          local v = opts[pname]
          if v ~= nil and type(v) ~= 'number' then fail(fname, pname .. ' must be a number, got ' .. type(v)) end
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
  if not is_tensor(a) then fail(name, 'expected a tensor, got ' .. type(a)) end
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
  fail('where', 'expected a tensor or a number, got ' .. type(x))
end

function M.where(cond, a, b)
  if a == nil and b == nil then return cond:nonzero({ as_tuple = true }) end
  if not is_tensor(cond) then fail('where', 'condition must be a tensor') end
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

function M.lerp(a, b, w)
  if type(w) == 'number' then return a + (b - a) * w end
  if C.mt_lerp(a, b, w, nil, outp) ~= 0 then raise_last() end
  return take()
end
methods.lerp = M.lerp

local function addc(divide, name)
  return function(a, t1, t2, opts)
    local v = type(opts) == 'table' and opts.value or (type(opts) == 'number' and opts) or 1
    if C.mt_addcmul(a, t1, t2, v, divide, nil, outp) ~= 0 then raise_last() end
    return take()
  end, function(a, t1, t2, opts)
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

return M
