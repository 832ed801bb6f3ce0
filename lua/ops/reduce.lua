-- Reductions: sum, mean, prod, amax, amin, max, min, argmax, argmin, all, any, var, std,
-- var_mean, std_mean, norm, logsumexp, nansum, count_nonzero, aminmax, cumsum, cumprod, softmax,
-- log_softmax, equal, isclose, allclose. Every op is a method and a torch function.
-- Dims are 1-based (negative from the end), given as a number or an array (`t:sum({1, 2})`);
-- keepdim positionally or as an option, dtype/out as options: `t:sum(2, {keepdim=true, dtype=torch.float64})`.
-- Indices that come back (max/min/argmax/argmin) are 1-based.
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local C = core.C
local raise_last, fail = core.raise_last, core.fail
local methods = T.methods
local is_tensor, take, wrap, outp, outp2 = T.is_tensor, T.take, T.wrap, T.outp, T.outp2
local is_opts, resolve_dtype, int_arg = T.is_opts, T.resolve_dtype, T.int_arg
local is_dtype = require('moontorch.dtype').is_dtype
local type, huge, tostring = type, math.huge, tostring
local release = C.mt_tensor_release

local M = {}
local torch -- set by install()

-- reduction op ids by name, from the op list
local R = require('moontorch.ops.list').ids('REDUCE')
M.reduce_ops = R

local dimbuf = ffi.new('int64_t[16]')
local ibuf = ffi.new('int[1]')
local dbl = ffi.new('double[1]')

local function check_tensor(t, op)
  if not is_tensor(t) then fail(op, 'expected a tensor, got ' .. core.typeof(t)) end
end

-- one 1-based dim (negative from the end) of t -> 0-based, with a 1-based message
local function one_dim(t, d, op)
  d = int_arg(d, op, 'dimension')
  local n = t._ndim
  local lim = n > 0 and n or 1
  if d == 0 or d > lim or d < -lim then
    fail(op, ('dimension %d out of range (expected to be in range of [%d, -1] or [1, %d])%s'):format(d, -lim, lim,
      d == 0 and ': dimensions are 1-based (1 is the first, -1 the last)' or ''))
  end
  return d > 0 and d - 1 or d
end

-- one dim: a number, or an int64 cdata (2LL)
local function is_one_dim(d) return type(d) == 'number' or (type(d) == 'cdata' and not is_tensor(d)) end

-- dims (nil, a number or an array) into dimbuf; returns their count (0: all dims)
local function dims_of(t, d, op)
  if d == nil then return 0 end
  if is_one_dim(d) then
    dimbuf[0] = one_dim(t, d, op)
    return 1
  end
  if type(d) ~= 'table' or is_tensor(d) then
    fail(op, 'dim must be a number or a table of numbers, got ' .. (is_tensor(d) and 'a tensor' or type(d)))
  end
  local k = T.seq_len(d) or T.seq_fail(d, op, 'dim')
  if k > 16 then fail(op, 'too many dimensions (' .. k .. ')') end
  local n = t._ndim
  local lim = n > 0 and n or 1
  for i = 1, k do
    local c = one_dim(t, d[i], op)
    dimbuf[i - 1] = c
    local ci = c < 0 and c + lim or c
    for j = 1, i - 1 do
      local cj = tonumber(dimbuf[j - 1])
      if (cj < 0 and cj + lim or cj) == ci then
        fail(op, ('dim %d appears multiple times in the list of dims'):format(ci + 1))
      end
    end
  end
  return k
end

local function dtype_id(opts, op)
  if opts == nil or opts.dtype == nil then return -1 end
  return resolve_dtype(opts.dtype, op).id
end

-- (dim, keepdim, opts) from the arguments after the tensor: dim and keepdim positionally or in opts
local function parse(a1, a2, a3, op)
  local dim, keepdim, opts = a1, nil, nil
  if is_opts(a1) then
    dim, opts = nil, a1
  elseif is_opts(a2) then
    opts = a2
  else
    keepdim = a2
    if is_opts(a3) then opts = a3 end
  end
  if opts then
    if opts.dim ~= nil then
      if dim ~= nil then fail(op, "got multiple values for argument 'dim'") end
      dim = opts.dim
    end
    if opts.keepdim ~= nil then
      if keepdim ~= nil then fail(op, "got multiple values for argument 'keepdim'") end
      keepdim = opts.keepdim
    end
  end
  if keepdim ~= nil and type(keepdim) ~= 'boolean' then
    fail(op, 'keepdim must be a boolean, got ' .. tostring(keepdim))
  end
  return dim, keepdim and 1 or 0, opts
end

local function finish(st, out)
  if st ~= 0 then raise_last() end
  if out ~= nil then
    release(outp[0])
    return out
  end
  return take()
end

-- max-like reductions have no identity: an empty reduced dim is an error (1-based in the message)
local function check_nonempty(t, nd, name)
  if t._numel ~= 0 then return end
  local n = t._ndim
  if nd == 0 or n == 0 then
    fail(name, "Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.")
  end
  for i = 0, nd - 1 do
    local d = tonumber(dimbuf[i])
    if d < 0 then d = d + n end
    if t._sizes[d] == 0 then fail(name, ('Expected reduction dim %d to have non-zero size.'):format(d + 1)) end
  end
end

local function reduce(op, name, t, dim, keepdim, dtype, p, out)
  local nd = dims_of(t, dim, name)
  if op == R.amax or op == R.amin then check_nonempty(t, nd, name) end
  return finish(C.mt_reduce(op, t, dimbuf, nd, keepdim, dtype, p, out, outp), out)
end
M.reduce = reduce

-- sum-like ops: f(t, dim?, keepdim?, {dim=, keepdim=, dtype=, out=})
local function def_reduce(name, op, use_dtype)
  local function f(t, a1, a2, a3)
    check_tensor(t, name)
    local dim, keepdim, opts = parse(a1, a2, a3, name)
    local dt = use_dtype and dtype_id(opts, name) or -1
    return reduce(op, name, t, dim, keepdim, dt, 0, opts and opts.out or nil)
  end
  methods[name] = f
  M[name] = f
end
def_reduce('sum', R.sum, true)
def_reduce('nansum', R.nansum, true)
def_reduce('mean', R.mean, true)
def_reduce('prod', R.prod, true)
def_reduce('amax', R.amax, false)
def_reduce('amin', R.amin, false)
def_reduce('logsumexp', R.logsumexp, false)
def_reduce('count_nonzero', R.count_nonzero, false)

-- all / any: a Lua boolean without a dim, a bool tensor with one
local function def_bool(name, op)
  local function f(t, a1, a2, a3)
    check_tensor(t, name)
    local dim, keepdim, opts = parse(a1, a2, a3, name)
    if dim == nil then
      local r = reduce(op, name, t, nil, 0, -1, 0, nil)
      if r._device_type == 2 then return r end -- meta: no value to read, the 0-dim tensor
      if C.mt_tensor_item(r, dbl) ~= 0 then raise_last() end -- read on the host through the readback
      return dbl[0] ~= 0
    end
    return reduce(op, name, t, dim, keepdim, -1, 0, opts and opts.out or nil)
  end
  methods[name] = f
  M[name] = f
end
def_bool('all', R.all)
def_bool('any', R.any)

-- max / min: no dim -> a 0-dim tensor; a dim -> values, indices (1-based); a tensor -> maximum/minimum
local function def_maxmin(name, is_min)
  local amop = is_min and R.amin or R.amax
  local other = is_min and 'minimum' or 'maximum'
  local grad_name = is_min and 'MinBackward1' or 'MaxBackward1'
  local function f(t, a1, a2, a3)
    check_tensor(t, name)
    if is_tensor(a1) then return methods[other](t, a1, a2) end
    local dim, keepdim, opts = parse(a1, a2, a3, name)
    if dim == nil then
      check_nonempty(t, 0, name)
      return T.name_grad_fn(reduce(amop, name, t, nil, 0, -1, 0, nil), grad_name) -- PyTorch's max() node
    end
    if not is_one_dim(dim) then fail(name, 'dim must be a single number, got ' .. (is_tensor(dim) and 'a tensor' or type(dim))) end
    local d = one_dim(t, dim, name)
    dimbuf[0] = d
    check_nonempty(t, 1, name)
    if C.mt_reduce_with_index(t, d, keepdim, is_min and 1 or 0, 1, outp, outp2) ~= 0 then raise_last() end
    local v = take()
    return v, wrap(outp2[0])
  end
  methods[name] = f
  M[name] = f
end
def_maxmin('max', false)
def_maxmin('min', true)

-- argmax / argmin: 1-based; no dim -> position in the flattened tensor
local function def_arg(name, is_min)
  local function f(t, a1, a2, a3)
    check_tensor(t, name)
    local dim, keepdim, opts = parse(a1, a2, a3, name)
    local st
    if dim == nil then
      check_nonempty(t, 0, name)
      st = C.mt_argmax(t, 0, 1, keepdim, is_min and 1 or 0, 1, outp)
    else
      if not is_one_dim(dim) then fail(name, 'dim must be a single number, got ' .. (is_tensor(dim) and 'a tensor' or type(dim))) end
      dimbuf[0] = one_dim(t, dim, name)
      check_nonempty(t, 1, name)
      st = C.mt_argmax(t, dimbuf[0], 0, keepdim, is_min and 1 or 0, 1, outp)
    end
    if st ~= 0 then raise_last() end
    return take()
  end
  methods[name] = f
  M[name] = f
end
def_arg('argmax', false)
def_arg('argmin', true)

-- aminmax(t, {dim=, keepdim=}) -> min, max
function M.aminmax(t, opts)
  check_tensor(t, 'aminmax')
  local dim, keepdim = nil, 0
  if opts ~= nil then
    if not is_opts(opts) then fail('aminmax', 'expected an options table {dim=, keepdim=}') end
    dim, keepdim = opts.dim, opts.keepdim and 1 or 0
  end
  if dim ~= nil and not is_one_dim(dim) then fail('aminmax', 'dim must be a single number') end
  return reduce(R.amin, 'aminmax', t, dim, keepdim, -1, 0, nil), reduce(R.amax, 'aminmax', t, dim, keepdim, -1, 0, nil)
end
methods.aminmax = M.aminmax

-- var / std and var_mean / std_mean: f(t), f(t, unbiased), f(t, dim, unbiased?, keepdim?),
-- options {dim=, correction=, unbiased=, keepdim=}
local function parse_var(a1, a2, a3, a4, op)
  local dim, unbiased, keepdim, opts
  if type(a1) == 'boolean' then
    unbiased = a1
    if is_opts(a2) then opts = a2 end
  elseif is_opts(a1) then
    opts = a1
  else
    dim = a1
    if is_opts(a2) then
      opts = a2
    else
      unbiased = a2
      if is_opts(a3) then
        opts = a3
      else
        keepdim = a3
        if is_opts(a4) then opts = a4 end
      end
    end
  end
  local correction
  if opts then
    if opts.dim ~= nil then dim = opts.dim end
    if opts.keepdim ~= nil then keepdim = opts.keepdim end
    if opts.unbiased ~= nil then unbiased = opts.unbiased end
    correction = opts.correction
  end
  if unbiased ~= nil and type(unbiased) ~= 'boolean' then fail(op, 'unbiased must be a boolean, got ' .. tostring(unbiased)) end
  if keepdim ~= nil and type(keepdim) ~= 'boolean' then fail(op, 'keepdim must be a boolean, got ' .. tostring(keepdim)) end
  if correction ~= nil then
    if unbiased ~= nil then fail(op, 'cannot specify both unbiased and correction') end
    if type(correction) ~= 'number' then fail(op, 'correction must be a number, got ' .. tostring(correction)) end
  else
    correction = (unbiased == false) and 0 or 1
  end
  return dim, correction, keepdim and 1 or 0, opts
end

local function def_var(name, op)
  local function f(t, a1, a2, a3, a4)
    check_tensor(t, name)
    local dim, correction, keepdim, opts = parse_var(a1, a2, a3, a4, name)
    return reduce(op, name, t, dim, keepdim, -1, correction, opts and opts.out or nil)
  end
  methods[name] = f
  M[name] = f
end
def_var('var', R.var)
def_var('std', R.std)

local function def_var_mean(name, take_sqrt)
  local function f(t, a1, a2, a3, a4)
    check_tensor(t, name)
    local dim, correction, keepdim = parse_var(a1, a2, a3, a4, name)
    local nd = dims_of(t, dim, name)
    if C.mt_var_mean(t, dimbuf, nd, correction, keepdim, take_sqrt, outp, outp2) ~= 0 then raise_last() end
    local v = take()
    return v, wrap(outp2[0])
  end
  methods[name] = f
  M[name] = f
end
def_var_mean('var_mean', 0)
def_var_mean('std_mean', 1)

-- norm(p?, dim?, keepdim?, {dtype=, keepdim=, dim=, p=}): p a number (math.huge for inf) or 'fro'
function M.norm(t, a1, a2, a3, a4)
  check_tensor(t, 'norm')
  local p, dim, keepdim, opts = a1, nil, nil, nil
  if is_opts(a1) then
    p, opts = nil, a1
  elseif is_opts(a2) then
    opts = a2
  elseif is_opts(a3) then
    dim, opts = a2, a3
  else
    dim, keepdim = a2, a3
    if is_opts(a4) then opts = a4 end
  end
  if opts then
    if opts.p ~= nil then p = opts.p end
    if opts.dim ~= nil then dim = opts.dim end
    if opts.keepdim ~= nil then keepdim = opts.keepdim end
  end
  if p == 'nuc' then -- the nuclear norm of the matrices (linalg.matrix_norm's), of a 2-D t or over two dims
    if dim == nil and t:dim() ~= 2 then
      fail('norm', ('Expected a tensor with 2 dimensions, but got a tensor with %d dimensions instead.'):format(t:dim()))
    end
    local r = require('moontorch.ops.linalg').composed.matrix_norm(t, 'nuc', dim or { -2, -1 }, keepdim or false,
      opts and { dtype = opts.dtype } or nil)
    if opts and opts.out then return require('moontorch').mul(r, 1, { out = opts.out }) end
    return r
  end
  if p == nil or p == 'fro' then
    p = 2
  elseif type(p) ~= 'number' then
    fail('norm', 'p must be a number, math.huge, -math.huge, "fro" or "nuc", got ' .. (is_tensor(p) and 'a tensor' or tostring(p)))
  end
  if p ~= p then fail('norm', 'p must be a number, got nan') end
  if keepdim ~= nil and type(keepdim) ~= 'boolean' then fail('norm', 'keepdim must be a boolean, got ' .. tostring(keepdim)) end
  return reduce(R.norm, 'norm', t, dim, keepdim and 1 or 0, dtype_id(opts, 'norm'), p, opts and opts.out or nil)
end
methods.norm = M.norm

-- cumsum / cumprod(dim, {dtype=, out=}); cumsum_ / cumprod_ in place
local function def_cum(name, is_prod)
  local function f(t, dim, opts)
    check_tensor(t, name)
    if is_opts(dim) then opts, dim = dim, dim.dim end
    if dim == nil then fail(name, 'dim is required') end
    if opts ~= nil and not is_opts(opts) then fail(name, 'expected an options table {dtype=, out=}') end
    local out = opts and opts.out or nil
    return finish(C.mt_cumulative(t, one_dim(t, dim, name), is_prod, dtype_id(opts, name), out, outp), out)
  end
  local function f_(t, dim)
    check_tensor(t, name .. '_')
    if dim == nil then fail(name .. '_', 'dim is required') end
    return finish(C.mt_cumulative(t, one_dim(t, dim, name .. '_'), is_prod, t._dtype, t, outp), t)
  end
  methods[name], methods[name .. '_'] = f, f_
  M[name] = f
end
def_cum('cumsum', 0)
def_cum('cumprod', 1)

-- softmax / log_softmax(dim, {dtype=}) (a dtype may also come positionally)
local function def_softmax(name, log)
  local function f(t, dim, opts)
    check_tensor(t, name)
    if is_opts(dim) then opts, dim = dim, dim.dim end
    if dim == nil then fail(name, 'dim is required') end
    local dt = -1
    if opts ~= nil then
      if is_dtype(opts) or type(opts) == 'string' then
        dt = resolve_dtype(opts, name).id
      elseif is_opts(opts) then
        dt = dtype_id(opts, name)
      else
        fail(name, 'expected a dtype or an options table {dtype=}, got ' .. tostring(opts))
      end
    end
    if C.mt_softmax(t, one_dim(t, dim, name), log, dt, outp) ~= 0 then raise_last() end
    return take()
  end
  methods[name] = f
  M[name] = f
end
def_softmax('softmax', 0)
def_softmax('log_softmax', 1)

-- equal: a Lua boolean
function M.equal(a, b)
  check_tensor(a, 'equal')
  check_tensor(b, 'equal')
  if C.mt_equal(a, b, ibuf) ~= 0 then raise_last() end
  return ibuf[0] ~= 0
end
methods.equal = M.equal

-- isclose / allclose(a, b, rtol?, atol?, equal_nan?) or (a, b, {rtol=, atol=, equal_nan=})
local function close_args(a, b, r, at, en, op)
  check_tensor(a, op)
  if type(b) == 'number' then b = torch.tensor(b, { dtype = a.dtype }) end
  check_tensor(b, op)
  if is_opts(r) then r, at, en = r.rtol, r.atol, r.equal_nan end
  r, at = r == nil and 1e-5 or r, at == nil and 1e-8 or at
  if type(r) ~= 'number' then fail(op, 'rtol must be a number, got ' .. tostring(r)) end
  if type(at) ~= 'number' then fail(op, 'atol must be a number, got ' .. tostring(at)) end
  return a, b, r, at, en and 1 or 0
end
function M.isclose(a, b, r, at, en)
  local x, y, rtol, atol, eqn = close_args(a, b, r, at, en, 'isclose')
  if C.mt_isclose(x, y, rtol, atol, eqn, outp) ~= 0 then raise_last() end
  return take()
end
function M.allclose(a, b, r, at, en)
  local x, y, rtol, atol, eqn = close_args(a, b, r, at, en, 'allclose')
  if C.mt_allclose(x, y, rtol, atol, eqn, ibuf) ~= 0 then raise_last() end
  return ibuf[0] ~= 0
end
methods.isclose, methods.allclose = M.isclose, M.allclose

function M.install(t)
  torch = t
  for k, v in pairs(M) do
    if type(v) == 'function' and k ~= 'install' and k ~= 'reduce' then t[k] = v end
  end
end

------------------------------------------------------------------------------ composed in Lua
-- diff, trace, cummax/cummin, logcumsumexp, nanmean, histc, quantile/nanquantile,
-- renorm, sum_to_size, trapezoid/trapz, cov/corrcoef.
-- Written with the ops above, so that autograd, dtypes and devices follow; 1-based dims and
-- positions, options in a trailing table. composed.install(torch) puts them in torch and on the
-- Tensor type where those lack the name (lua/init.lua calls it once every op file is installed).
M.composed = {}
do
  local K = require 'moontorch.ops.compose'
  local composed = M.composed
  local need, pdim, sizes, is_float = K.need, K.pdim, K.sizes, K.is_float
  local type, floor = type, math.floor
  local logaddexp = require('moontorch.ops.elementwise').composed.logaddexp

  local function diff(x, n, dim, prepend, append)
    need('diff', x)
    if type(n) == 'table' and not is_tensor(n) then
      local o = n
      n, dim, prepend, append = o.n, o.dim, o.prepend, o.append
    end
    K.int('diff', 'n', n, true)
    n, dim = n or 1, dim or -1
    if x:dim() == 0 then fail('diff', 'diff expects input to be at least one-dimensional') end
    local d = pdim('diff', dim, x:dim())
    local parts = {}
    if prepend ~= nil then parts[#parts + 1] = prepend end
    parts[#parts + 1] = x
    if append ~= nil then parts[#parts + 1] = append end
    local y = #parts > 1 and torch.cat(parts, d) or x
    for _ = 1, n do
      local L = y:size(d)
      if L == 0 then break end
      local a, b = y:narrow(d, 2, L - 1), y:narrow(d, 1, L - 1)
      y = y.dtype == torch.bool and a:logical_xor(b) or a - b
    end
    return y
  end
  local trace_of = K.node('TraceBackward0', function(x) return x:diagonal():sum() end,
    function(g, x) return torch.eye(x:size(1), x:size(2), { dtype = g.dtype, device = g.device }) * g end)
  local function trace(x)
    need('trace', x)
    if x:dim() ~= 2 then fail('trace', 'trace: expected a matrix, but got tensor with dim ' .. x:dim()) end
    return trace_of(x)
  end
  local function cum_extreme(op, ge)
    return function(x, dim)
      need(op, x)
      if dim == nil then fail(op, op .. '() missing 1 required positional argument: "dim"') end
      if x:dim() == 0 then return x:clone(), torch.ones({}, { dtype = torch.int64 }) end
      local d = pdim(op, dim, x:dim())
      local L = x:size(d)
      if L == 0 then return x:clone(), torch.empty(sizes(x), { dtype = torch.int64 }) end
      local cur = x:select(d, 1)
      local idx = torch.ones(sizes(cur), { dtype = torch.int64 })
      local vals, idxs = { cur }, { idx }
      for i = 2, L do
        local s = x:select(d, i)
        local take_it = (ge and s:ge(cur) or s:le(cur))
        if is_float(x) then take_it = take_it:logical_or(s:isnan()):logical_and(cur:isnan():logical_not():logical_or(s:isnan())) end
        cur = torch.where(take_it, s, cur)
        idx = torch.where(take_it, i, idx)
        vals[i], idxs[i] = cur, idx
      end
      return torch.stack(vals, d), torch.stack(idxs, d)
    end
  end
  -- cummax/cummin as one node named as PyTorch's (CummaxBackward0, CumminBackward0): the gradient
  -- of each value goes to the element it came from, summed (PyTorch's cummaxmin_backward)
  local function cum_node(name, raw)
    local Fn
    return function(x, dim)
      if not (torch.is_tensor(x) and x.requires_grad and torch.is_grad_enabled()) then return raw(x, dim) end
      if not Fn then
        Fn = torch.autograd.Function('moontorch.' .. name)
        Fn._backward_name = name
        function Fn.forward(ctx, t, d)
          local v, i = raw(t, d)
          ctx:mark_non_differentiable(i)
          ctx:save_for_backward(i)
          ctx.d = t:dim() == 0 and 0 or pdim(name, d, t:dim())
          ctx.shape = t:size()
          return v, i
        end
        function Fn.backward(ctx, g)
          local i = unpack(ctx.saved_tensors)
          if ctx.d == 0 then return g, nil end
          return torch.zeros(ctx.shape, { dtype = g.dtype, device = g.device }):scatter_add(ctx.d, i, g), nil
        end
      end
      return Fn.apply(x, dim)
    end
  end
  local function logcumsumexp_raw(x, d)
    local L = x:size(d)
    if L == 0 then return x:clone() end
    local cur = x:select(d, 1)
    local outs = { cur }
    for i = 2, L do
      cur = logaddexp(cur, x:select(d, i))
      outs[i] = cur
    end
    return torch.stack(outs, d)
  end
  -- one node named as PyTorch's, with PyTorch's backward (logcumsumexp_backward): the positive and
  -- the negative parts of the gradient summed in log space, from the end
  local logcumsumexp_node
  logcumsumexp_node = K.node('LogcumsumexpBackward0', logcumsumexp_raw, function(g, x, d)
    local out = logcumsumexp_node(x, d)
    local lowest = torch.full_like(g, torch.finfo(g.dtype).min)
    local function rev(t) return logcumsumexp_node(t:flip(d), d):flip(d) end
    local lp = torch.where(g:gt(0), g:log(), lowest)
    local ln = torch.where(g:lt(0), (-g):log(), lowest)
    return (rev(lp - out) + x):exp() - (rev(ln - out) + x):exp()
  end)
  local function logcumsumexp(x, dim)
    need('logcumsumexp', x)
    return logcumsumexp_node(x, pdim('logcumsumexp', dim, x:dim()))
  end
  -- nanmean(dim, keepdim, {dtype =}): dim and keepdim by position or in the options
  local function nanmean(x, dim, keepdim, opts)
    need('nanmean', x)
    if type(dim) == 'table' and dim[1] == nil then dim, keepdim, opts = nil, nil, dim end
    if type(keepdim) == 'table' then keepdim, opts = nil, keepdim end
    if opts and opts.dim ~= nil then dim = opts.dim end
    if opts and opts.dtype ~= nil then x = x:to(opts.dtype) end
    if not is_float(x) then
      fail('nanmean', 'nanmean(): expected input to have floating point dtype but got ' .. tostring(x.dtype):gsub('^torch%.', ''))
    end
    local keep = keepdim == true or (keepdim == nil and opts and opts.keepdim) or false
    local ok = x:isnan():logical_not()
    if dim == nil then return x:nansum() / ok:sum() end
    return x:nansum(dim, { keepdim = keep }) / ok:sum(dim, { keepdim = keep })
  end
  local function histc(x, bins, lo, hi)
    need('histc', x)
    if type(bins) == 'table' then
      local o = bins
      bins, lo, hi = o.bins, o.min, o.max
    end
    K.int('histc', 'bins', bins, true)
    if (lo ~= nil and type(lo) ~= 'number') or (hi ~= nil and type(hi) ~= 'number') then
      fail('histc', ('expected numbers for min and max, got %s and %s'):format(type(lo), type(hi)))
    end
    bins, lo, hi = bins or 100, lo or 0, hi or 0
    if not is_float(x) then fail('histc', '"histogram_cpu" not implemented for \'' .. tostring(x.dtype):gsub('^torch%.', '') .. "'") end
    if bins <= 0 then fail('histc', 'torch.histc: bins must be > 0, but got ' .. bins .. ' for dimension 0') end
    if lo == hi and x:numel() > 0 then lo, hi = x:min():item(), x:max():item() end
    if lo == hi then lo, hi = lo - 1, hi + 1 end
    if lo > hi then fail('histc', ('torch.histc: min must be less than max, but got min %s, max %s'):format(lo, hi)) end
    local flat = x:detach():reshape(-1)
    local inside = flat:ge(lo):logical_and(flat:le(hi))
    local v = flat:masked_select(inside)
    local pos = ((v - lo) * bins / (hi - lo)):floor():to(torch.int64):clamp(0, bins - 1)
    local r = torch.zeros(bins, { dtype = x.dtype })
    if v:numel() > 0 then r:index_add_(1, pos + 1, torch.ones_like(v)) end
    return r
  end
  -- quantile(x, q, dim=nil, keepdim=false, {interpolation='linear'})
  local function quantile_impl(op, ignore_nan)
    return function(x, q, dim, keepdim, opts)
      need(op, x)
      if type(dim) == 'table' then dim, keepdim, opts = nil, nil, dim end
      if type(keepdim) == 'table' then keepdim, opts = nil, keepdim end
      opts = opts or {}
      if keepdim == nil then keepdim = opts.keepdim or false end
      if dim == nil then dim = opts.dim end
      local interp = opts.interpolation or 'linear'
      if not is_float(x) then fail(op, 'quantile() input tensor must be either float or double dtype') end
      local scalar_q = type(q) == 'number'
      if not scalar_q and not is_tensor(q) then fail(op, 'quantile() q must be a number or a tensor, got ' .. core.typeof(q)) end
      local qt = scalar_q and torch.tensor({ q }, { dtype = x.dtype }) or q:to(x.dtype)
      if qt:dim() > 1 then fail(op, 'quantile() q must be a scalar or 1D tensor') end
      if qt:lt(0):any() or qt:gt(1):any() then fail(op, 'quantile() q values must be in the range [0, 1]') end
      local y, d
      if dim == nil then
        y, d = x:reshape(-1), 1
      else
        d = pdim(op, dim, x:dim())
        y = x
      end
      local sorted = y:sort(d)
      local n = y:size(d)
      local nq = qt:numel()
      local outs = {}
      -- positions per slice: nan sorts last; a slice with a nan gives nan (quantile) or ignores them (nanquantile)
      local valid = sorted:isnan():logical_not():sum(d, { keepdim = true })
      local has_nan = valid:lt(n)
      for k = 1, nq do
        local qk = qt[k]:item()
        local cnt = ignore_nan and valid or torch.full_like(valid, n)
        local rank = (cnt - 1):to(x.dtype) * qk
        local lo_i, hi_i = rank:floor(), rank:ceil()
        if interp == 'lower' then hi_i = lo_i
        elseif interp == 'higher' then lo_i = hi_i
        elseif interp == 'nearest' then lo_i = rank:round(); hi_i = lo_i end
        local li = lo_i:clamp(0, math.max(n - 1, 0)):to(torch.int64) + 1
        local hi2 = hi_i:clamp(0, math.max(n - 1, 0)):to(torch.int64) + 1
        local a, b = sorted:gather(d, li), sorted:gather(d, hi2)
        local r
        if interp == 'midpoint' then r = a + (b - a) * 0.5
        elseif interp == 'linear' then r = torch.lerp(a, b, rank - lo_i)
        else r = a end
        if not ignore_nan then r = torch.where(has_nan, 0 / 0, r)
        else r = torch.where(valid:eq(0), 0 / 0, r) end
        -- the size-1 dim left by the gather is the quantile's: squeezed last, as PyTorch squeezes its
        -- q dim (squeeze over a list of dims: SqueezeBackward3)
        if not keepdim or dim == nil then r = T.name_grad_fn(r:squeeze(d), 'SqueezeBackward3') end
        if dim == nil and keepdim then
          local one = {}
          for i = 1, x:dim() do one[i] = 1 end
          r = r:reshape(one)
        end
        outs[k] = r
      end
      if scalar_q then return outs[1] end
      return torch.stack(outs, 1)
    end
  end
  -- renorm: each slice along dim whose p-norm is above maxnorm scaled to maxnorm; one node named as
  -- PyTorch's, whose gradient also goes through the norm (as PyTorch's renorm_backward)
  local renorm_node = K.node_autograd('RenormBackward0', function(x, p, d, maxnorm)
    local others = {}
    for i = 1, x:dim() do if i ~= d then others[#others + 1] = i end end
    local norms = #others > 0 and x:norm(p, others, { keepdim = true }) or x:abs()
    return x * torch.where(norms:gt(maxnorm), maxnorm / (norms + 1e-7), torch.ones_like(norms))
  end)
  local function renorm(x, p, dim, maxnorm)
    need('renorm', x)
    return renorm_node(x, p, pdim('renorm', dim, x:dim()), maxnorm)
  end
  local function sum_to_size(x, ...)
    need('sum_to_size', x)
    local s = ...
    if type(s) ~= 'table' then s = { ... } end
    local nd, k = x:dim(), #s
    local lead = nd - k
    local y = x
    if lead > 0 then
      local dims = {}
      for i = 1, lead do dims[i] = i end
      y = y:sum(dims)
    end
    local dims = {}
    for i = 1, k do
      if s[i] == 1 and y:size(i) ~= 1 then dims[#dims + 1] = i end
    end
    if #dims > 0 then y = y:sum(dims, { keepdim = true }) end
    return y
  end

  local fns = { -- torch functions and methods
    diff = diff, trace = trace, cummax = cum_node('CummaxBackward0', cum_extreme('cummax', true)),
    cummin = cum_node('CumminBackward0', cum_extreme('cummin', false)),
    logcumsumexp = logcumsumexp, nanmean = nanmean, histc = histc, quantile = quantile_impl('quantile', false),
    nanquantile = quantile_impl('nanquantile', true), renorm = renorm, sum_to_size = sum_to_size,
  }
  function composed.install(tt)
    torch = tt
    K.install_functions(torch, fns, true)
    -- trapezoid(y, x=nil, {dx=1, dim=-1}) / trapz
    local function trapezoid(y, x, opts)
      need('trapezoid', y)
      if type(x) == 'table' and not is_tensor(x) then x, opts = nil, x end
      if type(x) == 'number' then opts = { dx = x } x = nil end
      if x ~= nil and not is_tensor(x) then fail('trapezoid', 'expected x to be a tensor, a number (dx) or options, got ' .. core.typeof(x)) end
      opts = opts or {}
      local d = pdim('trapezoid', opts.dim or -1, y:dim())
      local n = y:size(d)
      if n == 0 then return y:sum(d) * 0 end
      local s = y:narrow(d, 2, n - 1) + y:narrow(d, 1, n - 1)
      if x ~= nil then
        local dx = diff(x, 1, x:dim() == 1 and 1 or d)
        if x:dim() == 1 then
          local view = {}
          for i = 1, y:dim() do view[i] = i == d and n - 1 or 1 end
          dx = dx:reshape(view)
        end
        -- (PyTorch divides and multiplies by a Scalar here: DivBackward1, MulBackward1)
        return T.name_grad_fn((s * dx):sum(d) / 2, 'DivBackward1')
      end
      return T.name_grad_fn(s:sum(d) * ((opts.dx or 1) / 2), 'MulBackward1')
    end
    if torch.trapezoid == nil then torch.trapezoid = trapezoid end
    if torch.trapz == nil then torch.trapz = trapezoid end
    -- the methods PyTorch also has as torch functions
    K.functions_of_methods(torch, { 'nansum', 'count_nonzero', 'aminmax', 'std_mean', 'var_mean' })
    if torch.cov == nil then
      -- cov(input, {correction=1, fweights=, aweights=}): rows are variables, columns observations
      torch.cov = function(x, opts)
        need('cov', x)
        T.options(opts, 'cov')
        opts = opts or {}
        local c = opts.correction == nil and 1 or opts.correction
        local m = x:dim() == 1 and x:view(1, -1) or x
        if not is_float(m) then m = m:to(torch.get_default_dtype()) end
        local n = m:size(2)
        local w = opts.fweights
        if opts.aweights then w = w and w * opts.aweights or opts.aweights end
        local r
        if w then
          w = w:to(m.dtype)
          local ws = w:sum()
          local avg = (m * w):sum(2, { keepdim = true }) / ws
          local xm = m - avg
          local norm = c == 0 and ws or (opts.aweights and ws - c * (w * opts.aweights:to(m.dtype)):sum() / ws or ws - c)
          r = (xm * w):matmul(xm:t()) / norm
        else
          local xm = m - m:mean(2, { keepdim = true })
          r = xm:matmul(xm:t()) / math.max(n - c, 0)
        end
        -- PyTorch squeezes the result (one variable: a 0-d tensor), its last node (SqueezeBackward0)
        return r:squeeze()
      end
      torch.corrcoef = function(x)
        local c = torch.cov(x)
        if c:dim() == 0 then return c / c end
        local d = c:diagonal():sqrt()
        return (c / d:view(-1, 1) / d:view(1, -1)):clamp(-1, 1)
      end
    end
  end
end

return M
