-- parity.lua -- PyTorch 1.13 functions a user meets that the other op modules did not have (the
-- parity session), composed from the existing ops so that autograd, dtypes and devices follow:
-- memory formats; torch.<name> for every method PyTorch also has as a function; elementwise
-- (deg2rad, logaddexp, signbit, asinh, erfinv, ...), shape and indexing (broadcast_tensors,
-- meshgrid, take_along_dim, rot90, kron, block_diag, diag_embed, *_scatter, ...), reductions and
-- scans (diff, trace, cummax, logcumsumexp, nanmean, histc, quantile, ...), products (einsum,
-- inner, cdist, addr, ...), torch.linalg's norms, and the Torch7 constructors (torch.FloatTensor).
-- Each one follows PyTorch's function with moontorch's conventions: 1-based dims and positions
-- (cummax's indices, tril_indices, unique_consecutive's inverse), a variable number of results as
-- one Lua array (broadcast_tensors, meshgrid), options in a trailing table.
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local fail = core.fail
local is_tensor = T.is_tensor
local methods = T.methods
local type, floor, huge, pi = type, math.floor, math.huge, math.pi
local unpack, select, ipairs = unpack, select, ipairs

local M = {}
local torch -- set by install()

local function need(op, x, what)
  if not is_tensor(x) then fail(op, ('expected a tensor for %s, got %s'):format(what or 'input', type(x))) end
end
-- a 1-based dim (negative from the end) as a positive 1-based one
local function pdim(op, d, nd)
  if type(d) ~= 'number' or d ~= floor(d) then fail(op, 'expected an integer dim, got ' .. tostring(d)) end
  local n = nd > 0 and nd or 1
  if d < -n or d > n or d == 0 then
    fail(op, ('dimension %d out of range (expected to be in range of [%d, -1] or [1, %d])%s'):format(d, -n, n,
      d == 0 and ': dimensions are 1-based (1 is the first, -1 the last)' or ''))
  end
  return d < 0 and d + n + 1 or d
end
-- the trailing options table of a call (a table that is no tensor and has no array part)
local function opts_of(...)
  local n = select('#', ...)
  local last = n > 0 and select(n, ...) or nil
  if type(last) == 'table' and not is_tensor(last) and last[1] == nil then return last, n - 1 end
  return nil, n
end
local function size_of(t) return t:size() end
local function is_float(t) return t:is_floating_point() end
local function as_float(t)
  if is_float(t) then return t end
  return t:to(torch.get_default_dtype())
end
local function sizes(t)
  local s = {}
  for i = 1, t:dim() do s[i] = t:size(i) end
  return s
end

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

------------------------------------------------------------------------------ elementwise
local function deg2rad(x) need('deg2rad', x) return as_float(x) * (pi / 180) end
local function rad2deg(x) need('rad2deg', x) return as_float(x) * (180 / pi) end

local function logaddexp(a, b)
  need('logaddexp', a) need('logaddexp', b, 'other')
  local m = torch.maximum(a, b)
  local r = m + (-(a - b):abs()):exp():log1p()
  -- equal infinities: the infinity itself (the formula gives nan)
  local same_inf = a:eq(b):logical_and(a:isinf())
  if same_inf:any() then r = torch.where(same_inf, a, r) end
  return r
end
local function logaddexp2(a, b)
  need('logaddexp2', a) need('logaddexp2', b, 'other')
  local m = torch.maximum(a, b)
  local r = m + (-(a - b):abs() * math.log(2)):exp():log1p() * (1 / math.log(2))
  local same_inf = a:eq(b):logical_and(a:isinf())
  if same_inf:any() then r = torch.where(same_inf, a, r) end
  return r
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
local function angle(x)
  need('angle', x)
  local fx = as_float(x)
  local r = torch.where(fx:lt(0), pi, torch.zeros_like(fx))
  return torch.where(fx:isnan(), fx, r)
end
local function sgn(x) return x:sign() end

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

------------------------------------------------------------------------------ shapes, indexing
local function broadcast_shapes(...)
  local n = select('#', ...)
  local out = {}
  local nd = 0
  local shapes = {}
  for i = 1, n do
    local s = select(i, ...)
    if is_tensor(s) then s = sizes(s) elseif type(s) == 'number' then s = { s } end
    shapes[i] = s
    if #s > nd then nd = #s end
  end
  for d = 1, nd do out[d] = 1 end
  for i = 1, n do
    local s = shapes[i]
    for k = 1, #s do
      local d = nd - #s + k
      local v = s[k]
      if v ~= 1 then
        if out[d] ~= 1 and out[d] ~= v then
          fail('broadcast_shapes', ('Shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is '
            .. 'between arg %d and arg %d.'):format(i - 1, i - 1))
        end
        out[d] = v
      end
    end
  end
  return setmetatable(out, getmetatable(torch.empty(0):size()))
end
local function broadcast_tensors(...)
  local ts = ...
  if select('#', ...) ~= 1 or is_tensor(ts) then ts = { ... } end
  for i, t in ipairs(ts) do need('broadcast_tensors', t, 'tensor ' .. i) end
  local shape = broadcast_shapes(unpack(ts))
  local r = {}
  for i, t in ipairs(ts) do r[i] = t:expand(shape) end
  return r
end

local function meshgrid(...)
  local opts, n = opts_of(...)
  local ts = ...
  if n ~= 1 or is_tensor(ts) then ts = { ... } ts[n + 1] = nil end
  local indexing = opts and opts.indexing or 'ij'
  if indexing ~= 'ij' and indexing ~= 'xy' then
    fail('meshgrid', 'torch.meshgrid: indexing must be one of "xy" or "ij", but received: ' .. tostring(indexing))
  end
  local k = #ts
  if k == 0 then fail('meshgrid', 'meshgrid expects a non-empty TensorList') end
  for i, t in ipairs(ts) do
    need('meshgrid', t, 'tensor ' .. i)
    if t:dim() > 1 then
      fail('meshgrid', ('torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: %dD'):format(t:dim()))
    end
  end
  local order = {}
  for i = 1, k do order[i] = i end
  if indexing == 'xy' and k >= 2 then order[1], order[2] = 2, 1 end
  local shape = {}
  for i = 1, k do shape[i] = ts[order[i]]:numel() end
  local r = {}
  for i = 1, k do
    local view = {}
    for j = 1, k do view[j] = 1 end
    local pos
    for j = 1, k do if order[j] == i then pos = j end end
    view[pos] = ts[i]:numel()
    r[i] = ts[i]:reshape(view):expand(shape)
  end
  return r
end
local function cartesian_prod(...)
  local ts = ...
  if select('#', ...) ~= 1 or is_tensor(ts) then ts = { ... } end
  if #ts == 1 then return ts[1] end
  local g = meshgrid(ts)
  local cols = {}
  for i = 1, #g do cols[i] = g[i]:reshape(-1) end
  return torch.stack(cols, 2)
end
local function combinations(x, r, opts)
  need('combinations', x)
  if type(r) == 'table' then r, opts = nil, r end
  r = r or (opts and opts.r) or 2
  local rep = opts and opts.with_replacement or false
  if x:dim() ~= 1 then fail('combinations', ('Expect a 1D vector, but got shape [%s]'):format(table.concat(sizes(x), ', '))) end
  local n = x:size(1)
  local rows = {}
  local cur = {}
  local function rec(start, depth)
    if depth > r then
      local c = {}
      for i = 1, r do c[i] = cur[i] end
      rows[#rows + 1] = c
      return
    end
    for i = start, n do
      cur[depth] = i
      rec(rep and i or i + 1, depth + 1)
    end
  end
  if r > 0 then rec(1, 1) end
  if #rows == 0 then return torch.empty(0, r, { dtype = x.dtype }) end
  local cols = {}
  for j = 1, r do
    local idx = {}
    for i = 1, #rows do idx[i] = rows[i][j] end
    cols[j] = x:index_select(1, torch.tensor(idx, { dtype = torch.int64 }))
  end
  return torch.stack(cols, 2)
end

local function take(x, index)
  need('take', x) need('take', index, 'index')
  return x:reshape(-1):gather(1, index:reshape(-1)):reshape(sizes(index))
end
local function take_along_dim(x, index, dim)
  need('take_along_dim', x) need('take_along_dim', index, 'indices')
  if dim == nil then return x:reshape(-1):gather(1, index:reshape(-1)) end
  local nd = x:dim()
  local d = pdim('take_along_dim', dim, nd)
  if index:dim() ~= nd then
    fail('take_along_dim', ('torch.take_along_dim(): input and indices should have the same number of dimensions, '
      .. 'but got %d dimensions for input, and %d dimensions for indices'):format(nd, index:dim()))
  end
  local xs, is = sizes(x), sizes(index)
  local bx, bi = {}, {}
  for i = 1, nd do
    if i == d then
      bx[i], bi[i] = xs[i], is[i]
    else
      local s = broadcast_shapes({ xs[i] }, { is[i] })[1]
      bx[i], bi[i] = s, s
    end
  end
  return x:expand(bx):gather(d, index:expand(bi))
end
local function rot90(x, k, dims)
  need('rot90', x)
  if type(k) == 'table' then k, dims = nil, k end
  k = k or 1
  dims = dims or { 1, 2 }
  if #dims ~= 2 then fail('rot90', 'expected total rotation dims == 2, but got dims = ' .. #dims) end
  local nd = x:dim()
  if nd < 2 then fail('rot90', 'expected total dims >= 2, but got total dims = ' .. nd) end
  local d0, d1 = pdim('rot90', dims[1], nd), pdim('rot90', dims[2], nd)
  if d0 == d1 then fail('rot90', ('expected rotation dims to be different, but got dim0 = %d and dim1 = %d'):format(dims[1], dims[2])) end
  k = k % 4
  if k == 1 then return x:flip(d1):transpose(d0, d1) end
  if k == 2 then return x:flip({ d0, d1 }) end
  if k == 3 then return x:flip(d0):transpose(d0, d1) end
  return x:clone()
end
local function kron(a, b)
  need('kron', a) need('kron', b, 'other')
  local nd = math.max(a:dim(), b:dim())
  local as, bs = sizes(a), sizes(b)
  while #as < nd do table.insert(as, 1, 1) end
  while #bs < nd do table.insert(bs, 1, 1) end
  local va, vb, out = {}, {}, {}
  for i = 1, nd do
    va[2 * i - 1], va[2 * i] = as[i], 1
    vb[2 * i - 1], vb[2 * i] = 1, bs[i]
    out[i] = as[i] * bs[i]
  end
  return (a:reshape(va) * b:reshape(vb)):reshape(out)
end
local function block_diag(...)
  local ts = { ... }
  if #ts == 0 then return torch.empty(1, 0) end
  local mats, rows, cols = {}, 0, 0
  local dt = ts[1].dtype
  for i, t in ipairs(ts) do
    need('block_diag', t, 'tensor ' .. i)
    if t:dim() > 2 then
      fail('block_diag', ('torch.block_diag: Input tensors must have 2 or fewer dimensions. Input %d has %d dimensions')
        :format(i - 1, t:dim()))
    end
    local m = t:dim() == 0 and t:reshape(1, 1) or t:dim() == 1 and t:reshape(1, -1) or t
    mats[i] = m
    rows, cols = rows + m:size(1), cols + m:size(2)
    dt = torch.promote_types(dt, t.dtype)
  end
  local parts, left = {}, 0
  for i, m in ipairs(mats) do
    local h, w = m:size(1), m:size(2)
    local row = {}
    if left > 0 then row[#row + 1] = torch.zeros(h, left, { dtype = dt }) end
    row[#row + 1] = m:to(dt)
    if cols - left - w > 0 then row[#row + 1] = torch.zeros(h, cols - left - w, { dtype = dt }) end
    parts[i] = #row == 1 and row[1] or torch.cat(row, 2)
    left = left + w
  end
  return torch.cat(parts, 1)
end
-- diag_embed(x, offset=0, dim1=-2, dim2=-1)
local function diag_embed(x, offset, dim1, dim2)
  need('diag_embed', x)
  offset = offset or 0
  local n = x:size(-1)
  local m = n + math.abs(offset)
  -- P[i, r, c] = 1 where (r, c) is the i-th place of the diagonal
  local P = torch.zeros(n, m, m, { dtype = x.dtype, device = x.device })
  for i = 1, n do
    local r, c = offset >= 0 and i or i - offset, offset >= 0 and i + offset or i
    P[i][r][c] = 1
  end
  local r = (x:unsqueeze(-1):unsqueeze(-1) * P):sum(-3)
  local nd = r:dim()
  local a, b = pdim('diag_embed', dim1 or -2, nd), pdim('diag_embed', dim2 or -1, nd)
  if a == b then fail('diag_embed', ('diagonal dimensions cannot be identical %d, %d'):format(dim1, dim2)) end
  if a ~= nd - 1 or b ~= nd then -- the diagonal's two dims (r's last two) go to a and b, the others keep their order
    local perm, k = {}, 1
    for i = 1, nd do
      if i == a then perm[i] = nd - 1
      elseif i == b then perm[i] = nd
      else perm[i] = k; k = k + 1 end
    end
    r = r:permute(perm)
  end
  return r
end
local function diagflat(x, offset)
  need('diagflat', x)
  return diag_embed(x:reshape(-1), offset or 0)
end
local function select_scatter(x, src, dim, index)
  need('select_scatter', x)
  local d = pdim('select_scatter', dim, x:dim())
  local n = x:size(d)
  local i = index < 0 and index + n + 1 or index
  local parts = {}
  if i > 1 then parts[#parts + 1] = x:narrow(d, 1, i - 1) end
  parts[#parts + 1] = src:unsqueeze(d):to(x.dtype)
  if i < n then parts[#parts + 1] = x:narrow(d, i + 1, n - i) end
  return torch.cat(parts, d)
end
-- slice_scatter(x, src, dim=1, start=nil, end=nil, step=1): start 1-based, end inclusive-exclusive as Lua's narrow
local function slice_scatter(x, src, dim, start, stop, step)
  need('slice_scatter', x)
  if type(dim) == 'table' then
    local o = dim
    dim, start, stop, step = o.dim, o.start, o['end'], o.step
  end
  local d = pdim('slice_scatter', dim or 1, x:dim())
  local n = x:size(d)
  start = start or 1
  if start < 0 then start = start + n + 1 end
  stop = stop or n + 1
  if stop < 0 then stop = stop + n + 1 end
  step = step or 1
  if step == 1 then
    local parts = {}
    if start > 1 then parts[#parts + 1] = x:narrow(d, 1, start - 1) end
    parts[#parts + 1] = src:to(x.dtype)
    if stop <= n then parts[#parts + 1] = x:narrow(d, stop, n - stop + 1) end
    return torch.cat(parts, d)
  end
  local pos = {}
  for p = start, stop - 1, step do pos[#pos + 1] = p end
  local idx = torch.tensor(pos, { dtype = torch.int64 })
  local shape = sizes(src)
  local view = {}
  for i = 1, #shape do view[i] = i == d and #pos or 1 end
  return x:scatter(d, idx:reshape(view):expand(shape), src:to(x.dtype))
end
local function diagonal_scatter(x, src, offset, dim1, dim2)
  need('diagonal_scatter', x)
  local mask = diag_embed(torch.ones_like(src), offset or 0, dim1, dim2)
  local placed = diag_embed(src, offset or 0, dim1, dim2)
  -- diag_embed is square; x may not be: take x's own extent
  local nd = x:dim()
  for d = 1, nd do
    if placed:size(d) ~= x:size(d) then
      placed, mask = placed:narrow(d, 1, x:size(d)), mask:narrow(d, 1, x:size(d))
    end
  end
  return torch.where(mask:ne(0), placed, x)
end
local function hsplit(x, s)
  need('hsplit', x)
  if x:dim() < 1 then fail('hsplit', 'torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 dimensions!') end
  return x:tensor_split(s, x:dim() == 1 and 1 or 2)
end
local function vsplit(x, s)
  need('vsplit', x)
  if x:dim() < 2 then fail('vsplit', ('torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with %d dimensions!'):format(x:dim())) end
  return x:tensor_split(s, 1)
end
local function dsplit(x, s)
  need('dsplit', x)
  if x:dim() < 3 then fail('dsplit', ('torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with %d dimensions!'):format(x:dim())) end
  return x:tensor_split(s, 3)
end
local function tri_indices(op, lower)
  return function(row, col, offset, opts)
    if type(offset) == 'table' then offset, opts = nil, offset end
    offset = offset or 0
    local rs, cs = {}, {}
    for i = 0, row - 1 do
      for j = 0, col - 1 do
        if (lower and j - i <= offset) or (not lower and j - i >= offset) then
          rs[#rs + 1], cs[#cs + 1] = i + 1, j + 1
        end
      end
    end
    local dt = opts and opts.dtype or torch.int64
    if #rs == 0 then return torch.empty(2, 0, { dtype = dt }) end
    return torch.tensor({ rs, cs }, { dtype = dt })
  end
end
local function vander(x, N, opts)
  need('vander', x)
  if type(N) == 'table' then N, opts = nil, N end
  N = N or (opts and opts.N) or x:size(1)
  local inc = opts and opts.increasing or false
  if x:dim() ~= 1 then fail('vander', 'x must be a one-dimensional tensor.') end
  local cols = {}
  local dt = x.dtype == torch.bool and torch.int64 or x.dtype
  local xx = x:to(dt)
  local p = torch.ones_like(xx)
  for i = 1, N do
    cols[i] = p
    p = p * xx
  end
  if not inc then
    local r = {}
    for i = 1, N do r[i] = cols[N + 1 - i] end
    cols = r
  end
  if N == 0 then return torch.empty(x:size(1), 0, { dtype = dt }) end
  return torch.stack(cols, 2)
end

------------------------------------------------------------------------------ reductions, scans
local function diff(x, n, dim, prepend, append)
  need('diff', x)
  if type(n) == 'table' and not is_tensor(n) then
    local o = n
    n, dim, prepend, append = o.n, o.dim, o.prepend, o.append
  end
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
local function trace(x)
  need('trace', x)
  if x:dim() ~= 2 then fail('trace', 'trace: expected a matrix, but got tensor with dim ' .. x:dim()) end
  return x:diagonal():sum()
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
local function logcumsumexp(x, dim)
  need('logcumsumexp', x)
  local d = pdim('logcumsumexp', dim, x:dim())
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
      if not keepdim or dim == nil then r = r:squeeze(d) end
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
local function renorm(x, p, dim, maxnorm)
  need('renorm', x)
  local d = pdim('renorm', dim, x:dim())
  local others = {}
  for i = 1, x:dim() do if i ~= d then others[#others + 1] = i end end
  local norms = #others > 0 and x:norm(p, others, { keepdim = true }) or x:abs()
  local f = torch.where(norms:gt(maxnorm), maxnorm / (norms + 1e-7), torch.ones_like(norms))
  return x * f:detach()
end
local function unique_consecutive(x, opts)
  need('unique_consecutive', x)
  opts = opts or {}
  if opts.dim ~= nil then fail('unique_consecutive', 'unique_consecutive with dim is not supported by moontorch yet') end
  local flat = x:reshape(-1)
  local n = flat:numel()
  if n == 0 then
    local r = { flat:clone() }
    if opts.return_inverse then r[#r + 1] = torch.empty(sizes(x), { dtype = torch.int64 }) end
    if opts.return_counts then r[#r + 1] = torch.empty(0, { dtype = torch.int64 }) end
    return unpack(r)
  end
  local starts = torch.ones(n, { dtype = torch.bool })
  if n > 1 then starts = torch.cat({ torch.ones(1, { dtype = torch.bool }), flat:narrow(1, 2, n - 1):ne(flat:narrow(1, 1, n - 1)) }) end
  local values = flat:masked_select(starts)
  local r = { values }
  if opts.return_inverse then r[#r + 1] = starts:to(torch.int64):cumsum(1):reshape(sizes(x)) end
  if opts.return_counts then
    local pos = starts:nonzero():reshape(-1)
    local ends = torch.cat({ pos:narrow(1, 2, pos:numel() - 1), torch.tensor({ n + 1 }, { dtype = torch.int64 }) })
    r[#r + 1] = ends - pos
  end
  return unpack(r)
end
local function sum_to_size(x, ...)
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

------------------------------------------------------------------------------ products
local function inner(a, b)
  need('inner', a) need('inner', b, 'other')
  if a:dim() == 0 or b:dim() == 0 then return a * b end
  local K = a:size(-1)
  if b:size(-1) ~= K then
    fail('inner', ('inner() the last dimension must match on both input tensors but got shapes [%s] and [%s]')
      :format(table.concat(sizes(a), ', '), table.concat(sizes(b), ', ')))
  end
  local out = {}
  for i = 1, a:dim() - 1 do out[#out + 1] = a:size(i) end
  for i = 1, b:dim() - 1 do out[#out + 1] = b:size(i) end
  local r = a:reshape(-1, K):matmul(b:reshape(-1, K):t())
  return r:reshape(out)
end
local function cross(a, b, dim)
  need('cross', a) need('cross', b, 'other')
  local bt = broadcast_tensors(a, b)
  a, b = bt[1], bt[2]
  local nd = a:dim()
  local d
  if dim == nil then
    for i = 1, nd do if a:size(i) == 3 then d = i break end end
    if not d then fail('cross', 'no dimension of size 3 in input') end
  else
    d = pdim('cross', dim, nd)
    if a:size(d) ~= 3 then
      fail('cross', ('linalg.cross: inputs dimension %d must have length 3. Got %d and %d'):format(dim, a:size(d), b:size(d)))
    end
  end
  local function c(t, i) return t:narrow(d, i, 1) end
  return torch.cat({ c(a, 2) * c(b, 3) - c(a, 3) * c(b, 2), c(a, 3) * c(b, 1) - c(a, 1) * c(b, 3),
    c(a, 1) * c(b, 2) - c(a, 2) * c(b, 1) }, d)
end
local function cdist(x1, x2, p)
  need('cdist', x1) need('cdist', x2, 'x2')
  if type(p) == 'table' then p = p.p end
  p = p or 2
  if x1:dim() < 2 or x2:dim() < 2 then
    fail('cdist', ('cdist only supports at least 2D tensors, X1 got: %dD'):format(x1:dim()))
  end
  if x1:size(-1) ~= x2:size(-1) then
    fail('cdist', ('X1 and X2 must have the same number of columns. X1: %d X2: %d'):format(x1:size(-1), x2:size(-1)))
  end
  local diffs = x1:unsqueeze(-2) - x2:unsqueeze(-3)
  if p == 0 then return diffs:ne(0):sum(-1):to(x1.dtype) end
  return diffs:norm(p, -1)
end
local function pdist(x, p)
  need('pdist', x)
  p = p or 2
  if x:dim() ~= 2 then fail('pdist', 'pdist only supports 2D tensors, got: ' .. x:dim() .. 'D') end
  local n = x:size(1)
  if n < 2 then return torch.empty(0, { dtype = x.dtype }) end
  local ii, jj = {}, {}
  for i = 1, n - 1 do for j = i + 1, n do ii[#ii + 1], jj[#jj + 1] = i, j end end
  local I, J = torch.tensor(ii, { dtype = torch.int64 }), torch.tensor(jj, { dtype = torch.int64 })
  return (x:index_select(1, I) - x:index_select(1, J)):norm(p, 2)
end
local function addr(m, v1, v2, opts)
  opts = opts or {}
  local beta, alpha = opts.beta or 1, opts.alpha or 1
  local o = torch.outer(v1, v2)
  if alpha ~= 1 then o = o * alpha end
  if beta == 0 then return o + m * 0 end
  return (beta ~= 1 and m * beta or m) + o
end
local function addbmm(m, b1, b2, opts)
  opts = opts or {}
  local beta, alpha = opts.beta or 1, opts.alpha or 1
  local s = torch.bmm(b1, b2):sum(1)
  if alpha ~= 1 then s = s * alpha end
  return (beta ~= 1 and m * beta or m) + s
end
local function dist(a, b, p) return (a - b):norm(p or 2) end
local matrix_power
function matrix_power(x, n)
  need('matrix_power', x)
  if x:dim() < 2 or x:size(-1) ~= x:size(-2) then
    fail('matrix_power', 'matrix_power: expected a tensor of square matrices')
  end
  if n < 0 then return matrix_power(torch.linalg.inv(x), -n) end
  if n == 0 then
    local e = torch.eye(x:size(-1), { dtype = x.dtype })
    return e:expand(sizes(x)):clone()
  end
  local r, base = nil, x
  while n > 0 do
    if n % 2 == 1 then r = r and r:matmul(base) or base end
    n = floor(n / 2)
    if n > 0 then base = base:matmul(base) end
  end
  return r
end

-- einsum(equation, operands...): operands brought to one order of letters, multiplied pairwise
-- left to right, each letter summed away once no later operand and not the output has it
local function einsum(eq, ...)
  local ops = { ... }
  if #ops == 1 and type(ops[1]) == 'table' and not is_tensor(ops[1]) then ops = ops[1] end
  if type(eq) ~= 'string' then fail('einsum', 'einsum(): expected an equation string') end
  eq = eq:gsub('%s', '')
  local lhs, rhs = eq:match('^(.-)%->(.*)$')
  if not lhs then lhs = eq end
  local terms = {}
  for term in (lhs .. ','):gmatch('([^,]*),') do terms[#terms + 1] = term end
  if #terms ~= #ops then
    fail('einsum', ('einsum(): more operands were provided than specified in the equation'):gsub('more', #terms < #ops and 'more' or 'fewer'))
  end
  local has_ell = lhs:find('...', 1, true) ~= nil
  -- expand '...' into fresh letters (uppercase Greek-free placeholders: digits)
  local ell_dims = 0
  for i, term in ipairs(terms) do
    need('einsum', ops[i], 'operand ' .. i)
    if term:find('...', 1, true) then
      local nl = #term:gsub('%.%.%.', '')
      ell_dims = math.max(ell_dims, ops[i]:dim() - nl)
    end
  end
  local ell = {}
  for k = 1, ell_dims do ell[k] = string.char(48 + k) end -- '1', '2', ...
  local function expand_term(term, nd)
    if not term:find('...', 1, true) then return term end
    local nl = #term:gsub('%.%.%.', '')
    local e = table.concat(ell, '', ell_dims - (nd - nl) + 1, ell_dims)
    return (term:gsub('%.%.%.', e, 1))
  end
  for i, term in ipairs(terms) do
    terms[i] = expand_term(term, ops[i]:dim())
    if #terms[i] ~= ops[i]:dim() then
      fail('einsum', ('einsum(): the number of subscripts in the equation (%d) does not match the number of dimensions '
        .. '(%d) for operand %d%s'):format(#terms[i], ops[i]:dim(), i - 1, has_ell and '' or ' and no ellipsis was given'))
    end
  end
  -- the output's letters
  local out
  if rhs then
    out = rhs:gsub('%.%.%.', table.concat(ell))
  else
    local count = {}
    for _, term in ipairs(terms) do for ch in term:gmatch('.') do count[ch] = (count[ch] or 0) + 1 end end
    local letters = {}
    for ch, c in pairs(count) do if c == 1 and not ch:match('%d') then letters[#letters + 1] = ch end end
    table.sort(letters)
    out = table.concat(ell) .. table.concat(letters)
  end
  -- every letter's size
  local size = {}
  for i, term in ipairs(terms) do
    for k = 1, #term do
      local ch, s = term:sub(k, k), ops[i]:size(k)
      if size[ch] == nil or size[ch] == 1 then size[ch] = s
      elseif s ~= 1 and s ~= size[ch] then
        fail('einsum', ('einsum(): operands do not broadcast with remapped shapes (original->remapped)'))
      end
    end
  end
  for k = 1, #out do
    if size[out:sub(k, k)] == nil then
      fail('einsum', ("einsum(): output subscript %s does not appear in the equation for any input operand"):format(out:sub(k, k)))
    end
  end
  -- all letters in one order: the output's first, then the rest as met
  local order, pos = {}, {}
  local function add_letter(ch) if not pos[ch] then order[#order + 1] = ch pos[ch] = #order end end
  for k = 1, #out do add_letter(out:sub(k, k)) end
  for _, term in ipairs(terms) do for k = 1, #term do add_letter(term:sub(k, k)) end end
  -- an operand over all letters: its repeated letters' diagonal taken, then unsqueezed and permuted
  local function aligned(t, term)
    local seen = {}
    local k = 1
    while k <= #term do
      local ch = term:sub(k, k)
      if seen[ch] then
        t = t:diagonal(0, seen[ch], k):movedim(-1, seen[ch])
        term = term:sub(1, k - 1) .. term:sub(k + 1)
      else
        seen[ch] = k
        k = k + 1
      end
    end
    local perm, view = {}, {}
    local present = {}
    for i = 1, #term do present[term:sub(i, i)] = i end
    local letters = {}
    for _, ch in ipairs(order) do if present[ch] then letters[#letters + 1] = ch end end
    for i, ch in ipairs(letters) do perm[i] = present[ch] end
    if #perm > 0 then t = t:permute(perm) end
    local j = 0
    for i, ch in ipairs(order) do
      if present[ch] then j = j + 1 view[i] = t:size(j) else view[i] = 1 end
    end
    return t:reshape(view)
  end
  local cur = aligned(ops[1], terms[1])
  local function needed_after(i)
    local need_set = {}
    for k = 1, #out do need_set[out:sub(k, k)] = true end
    for j = i + 1, #terms do for k = 1, #terms[j] do need_set[terms[j]:sub(k, k)] = true end end
    return need_set
  end
  local function sum_unneeded(t, i)
    local keep = needed_after(i)
    local dims = {}
    for k, ch in ipairs(order) do if not keep[ch] and t:size(k) > 1 then dims[#dims + 1] = k end end
    if #dims > 0 then t = t:sum(dims, { keepdim = true }) end
    return t
  end
  cur = sum_unneeded(cur, 1)
  for i = 2, #ops do
    cur = sum_unneeded(cur * aligned(ops[i], terms[i]), i)
  end
  -- drop the summed letters (now size 1) and broadcast the output's to their sizes
  local shape = {}
  for k = 1, #out do shape[k] = size[out:sub(k, k)] end
  local r = cur:reshape(#order > 0 and (function()
    local v = {}
    for k = 1, #out do v[k] = cur:size(k) end
    return v
  end)() or {})
  if #out > 0 then r = r:expand(shape) end
  if r:dim() == 0 and #out == 0 then return r end
  return r
end

------------------------------------------------------------------------------ torch.linalg (norms)
local function vector_norm(x, ord, dim, keepdim, opts)
  need('linalg.vector_norm', x)
  if type(ord) == 'table' and not is_tensor(ord) and ord[1] == nil then ord, dim, keepdim, opts = nil, nil, nil, ord end
  if type(dim) == 'table' and dim[1] == nil and next(dim) ~= nil then dim, keepdim, opts = nil, nil, dim end
  if type(keepdim) == 'table' then keepdim, opts = nil, keepdim end
  opts = opts or {}
  ord = ord or opts.ord or 2
  if dim == nil then dim = opts.dim end
  if keepdim == nil then keepdim = opts.keepdim or false end
  local y = x
  if opts.dtype then y = y:to(opts.dtype) end
  if not y:is_floating_point() then
    fail('linalg.vector_norm', 'Expected a floating point or complex tensor as input. Got ' .. tostring(y.dtype):gsub('^torch%.', ''))
  end
  if dim == nil then
    local r = y:reshape(-1):norm(ord)
    if keepdim then
      local one = {}
      for i = 1, x:dim() do one[i] = 1 end
      r = r:reshape(one)
    end
    return r
  end
  return y:norm(ord, dim, { keepdim = keepdim })
end
local function matrix_norm(x, ord, dim, keepdim, opts)
  need('linalg.matrix_norm', x)
  if type(ord) == 'table' then ord, dim, keepdim, opts = nil, nil, nil, ord end
  opts = opts or {}
  ord = ord or opts.ord or 'fro'
  dim = dim or opts.dim or { -2, -1 }
  if keepdim == nil then keepdim = opts.keepdim or false end
  local d1, d2 = pdim('linalg.matrix_norm', dim[1], x:dim()), pdim('linalg.matrix_norm', dim[2], x:dim())
  if ord == 'fro' then return x:norm(2, { d1, d2 }, { keepdim = keepdim }) end
  if ord == 1 or ord == -1 or ord == huge or ord == -huge then
    local sum_d, red_d = d1, d2
    if ord == huge or ord == -huge then sum_d, red_d = d2, d1 end
    local s = x:abs():sum(sum_d, { keepdim = true })
    local r = (ord > 0) and s:amax(red_d, { keepdim = true }) or s:amin(red_d, { keepdim = true })
    if not keepdim then r = r:squeeze(math.max(d1, d2)):squeeze(math.min(d1, d2)) end
    return r
  end
  fail('linalg.matrix_norm', 'ord ' .. tostring(ord) .. ' is not supported by moontorch yet (fro, 1, -1, inf, -inf are)')
end

------------------------------------------------------------------------------ torch.linalg: solve, inv, det
-- Gauss-Jordan elimination with partial pivoting over a batch (..., n, n), written with tensor ops
-- (autograd follows). Returns X solving A X = B (B nil: none), det(A), log|det(A)|, sign, and the
-- 1-based step whose pivot was zero (nil: none).
local function gauss_jordan(op, A, B)
  need(op, A, 'A')
  if A:dim() < 2 or A:size(-1) ~= A:size(-2) then
    fail(op, ('A must be batches of square matrices, but they are %d by %d matrices'):format(
      A:dim() >= 2 and A:size(-2) or 0, A:dim() >= 1 and A:size(-1) or 0))
  end
  if not is_float(A) then
    fail(op, ('Expected a floating point or complex tensor as input. Got %s'):format((tostring(A.dtype):gsub('^torch%.', ''))))
  end
  local n = A:size(-1)
  local M = B and torch.cat({ A, B:to(A.dtype) }, -1) or A
  local width = M:size(-1)
  local bs = sizes(A)
  bs[#bs], bs[#bs - 1] = nil, nil
  local sign = torch.ones(bs, { dtype = A.dtype }) -- the permutation's sign times the pivots' signs
  local psign = torch.ones(bs, { dtype = A.dtype }) -- the permutation's
  local logabs = torch.zeros(bs, { dtype = A.dtype })
  local det = torch.ones(bs, { dtype = A.dtype })
  local rows = torch.arange(1, n + 1):to(torch.int64)
  local zero_at
  for k = 1, n do
    local col = M:narrow(-2, k, n - k + 1):select(-1, k):abs()
    local _, p = col:detach():max(-1, { keepdim = true })
    p = p + (k - 1)
    -- swap rows k and p (a gather, so gradients follow the rows)
    local perm = torch.where(rows:eq(k), p, torch.where(rows:eq(p), k, rows))
    local shape = sizes(M)
    M = M:gather(-2, perm:unsqueeze(-1):expand(shape))
    local swapped = p:squeeze(-1):ne(k)
    sign = torch.where(swapped, -sign, sign)
    psign = torch.where(swapped, -psign, psign)
    local pivot = M:select(-2, k):select(-1, k)
    det = det * pivot
    logabs = logabs + pivot:abs():log()
    sign = sign * pivot:sign()
    if not zero_at and pivot:eq(0):any() then zero_at = k end
    local safe = torch.where(pivot:eq(0), 1, pivot)
    local rowk = M:select(-2, k) / safe:unsqueeze(-1)
    local factors = M:select(-1, k)
    M = M - factors:unsqueeze(-1) * rowk:unsqueeze(-2)
    local is_k = rows:eq(k):view(n, 1):expand(n, width)
    M = torch.where(is_k, rowk:unsqueeze(-2):expand(shape), M)
  end
  local X = B and M:narrow(-1, n + 1, width - n) or nil
  return X, det * psign, logabs, sign, zero_at
end
local function linalg_det(A)
  local _, det = gauss_jordan('linalg.det', A, nil) -- the pivots' product with the permutation's sign
  return det
end
local function linalg_solve(A, B)
  need('linalg.solve', B, 'B')
  local vec = B:dim() == 1 or (B:dim() == A:dim() - 1)
  local Bm = vec and B:unsqueeze(-1) or B
  local X, _, _, _, zero_at = gauss_jordan('linalg.solve', A, Bm)
  if zero_at then fail('linalg.solve', 'The solver failed because the input matrix is singular.') end
  return vec and X:squeeze(-1) or X
end
local function linalg_inv(A)
  need('linalg.inv', A, 'A')
  local n = A:size(-1)
  local I = torch.eye(n, { dtype = A.dtype }):expand(sizes(A))
  local X, _, _, _, zero_at = gauss_jordan('linalg.inv', A, I)
  if zero_at then
    fail('linalg.inv', ('The diagonal element %d is zero, the inversion could not be completed because the '
      .. 'input matrix is singular.'):format(zero_at))
  end
  return X
end
local function linalg_slogdet(A)
  local _, _, logabs, sign = gauss_jordan('linalg.slogdet', A, nil)
  return sign:detach(), logabs
end

------------------------------------------------------------------------------ torch.linalg: matrix_exp, householder_product
-- matrix_exp(A): e^A of each square matrix of (..., n, n), by scaling and squaring around a Taylor
-- polynomial of degree 18 (whose remainder is below float64's eps for a norm up to 1/2), written
-- with matmuls, so autograd follows.
local function matrix_exp(A)
  need('matrix_exp', A, 'A')
  if A:dim() < 2 or A:size(-1) ~= A:size(-2) then
    fail('matrix_exp', ('Expected a square matrix or batch of square matrices, but got a tensor of shape %s')
      :format(tostring(A:size())))
  end
  if not is_float(A) then
    fail('matrix_exp', ('Expected a floating point tensor as input. Got %s'):format((tostring(A.dtype):gsub('^torch%.', ''))))
  end
  local n = A:size(-1)
  if A:numel() == 0 then return A:clone() end
  local I = torch.eye(n, { dtype = A.dtype, device = A.device })
  if A.device.type == 'meta' then return A + I end
  -- the 1-norm (largest column sum of |A|) of the largest matrix
  local norm1 = A:detach():abs():sum(-2):max():item()
  local s = 0
  if norm1 > 0.5 then s = math.max(0, math.ceil(math.log(norm1 / 0.5) / math.log(2))) end
  local X = s > 0 and A / (2 ^ s) or A
  local P = I + X / 18
  for k = 17, 1, -1 do P = I + X:matmul(P) / k end
  for _ = 1, s do P = P:matmul(P) end
  return P
end

-- householder_product(A, tau): the first n columns of H_1 H_2 ... H_k for A (..., m, n) and tau
-- (..., k), H_i = I - tau_i v_i v_i^T with v_i = (0, ..., 0, 1, A[i+1:, i]) (LAPACK's orgqr), as
-- tensor ops (autograd follows)
local function householder_product(A, tau)
  local op = 'linalg.householder_product'
  need(op, A, 'input')
  need(op, tau, 'tau')
  if A:dim() < 2 then fail(op, 'input must have at least 2 dimensions.') end
  local m, n = A:size(-2), A:size(-1)
  if m < n then fail(op, 'input.shape[-2] must be greater than or equal to input.shape[-1]') end
  if tau:dim() ~= A:dim() - 1 then fail(op, 'input.dim() - tau.dim() must be equal to 1') end
  local k = tau:size(-1)
  if k > n then fail(op, 'input.shape[-1] must be greater than or equal to tau.shape[-1]') end
  if tau.dtype ~= A.dtype then
    fail(op, ('tau dtype %s does not match input dtype %s'):format(tostring(tau.dtype), tostring(A.dtype)))
  end
  local shape = sizes(A)
  local Q = torch.eye(m, n, { dtype = A.dtype, device = A.device }):expand(shape)
  local rows = torch.arange(1, m + 1, { device = A.device }):to(A.dtype):unsqueeze(-1) -- (m, 1)
  for i = k, 1, -1 do
    local col = A:narrow(-1, i, 1) -- (..., m, 1)
    local v = torch.where(rows:lt(i), 0, torch.where(rows:eq(i), 1, col))
    local t = tau:narrow(-1, i, 1):unsqueeze(-1) -- (..., 1, 1)
    Q = Q - (v * t):matmul(v:transpose(-2, -1):matmul(Q))
  end
  return Q
end
M.matrix_exp, M.householder_product = matrix_exp, householder_product

------------------------------------------------------------------------------ nn.functional extras
local function rrelu(x, lower, upper, training, inplace)
  if type(lower) == 'table' then
    local o = lower
    lower, upper, training, inplace = o.lower, o.upper, o.training, o.inplace
  end
  lower, upper = lower or 1 / 8, upper or 1 / 3
  if training then
    -- PyTorch draws one uniform double per non-positive element, in order
    local neg = x:le(0)
    local k = neg:sum():item()
    local slope = torch.ones_like(x)
    if k > 0 then
      local u = torch.empty(k, { dtype = torch.float64 }):uniform_(lower, upper):to(x.dtype)
      slope = slope:masked_scatter(neg, u)
    end
    local r = x * slope:detach()
    if inplace then x:copy_(r) return x end
    return r
  end
  local r = torch.nn.functional.leaky_relu(x, (lower + upper) / 2)
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

------------------------------------------------------------------------------ affine_grid, grid_sample
-- affine_grid(theta, size, align_corners=false): theta (N, 2, 3) and size (N, C, H, W), or (N, 3, 4)
-- and (N, C, D, H, W); the grid (N, H, W, 2) / (N, D, H, W, 3) of theta applied to the pixels' centres
local function base_coords(n, align, dtype)
  if align then return n > 1 and torch.linspace(-1, 1, n, { dtype = dtype }) or torch.zeros(1, { dtype = dtype }) end
  return (torch.arange(n):to(dtype) * 2 + 1) / n - 1
end
local function affine_grid(theta, size, align_corners)
  need('affine_grid', theta, 'theta')
  if type(align_corners) == 'table' then align_corners = align_corners.align_corners end
  local align = align_corners or false
  if not is_float(theta) then
    fail('affine_grid', 'Expected theta to have floating point type, but got ' .. tostring(theta.dtype))
  end
  local ns = #size
  local dt = theta.dtype
  if ns == 4 then
    if theta:dim() ~= 3 or theta:size(2) ~= 2 or theta:size(3) ~= 3 then
      fail('affine_grid', ('Expected a batch of 2D affine matrices of shape Nx2x3 for size [%s]. Got [%s].')
        :format(table.concat(size, ', '), table.concat(sizes(theta), ', ')))
    end
    local N, H, W = size[1], size[3], size[4]
    local xs = base_coords(W, align, dt):view(1, W):expand(H, W)
    local ys = base_coords(H, align, dt):view(H, 1):expand(H, W)
    local base = torch.stack({ xs, ys, torch.ones(H, W, { dtype = dt }) }, 3):view(1, H * W, 3)
    return base:expand(N, H * W, 3):bmm(theta:transpose(2, 3)):view(N, H, W, 2)
  elseif ns == 5 then
    if theta:dim() ~= 3 or theta:size(2) ~= 3 or theta:size(3) ~= 4 then
      fail('affine_grid', ('Expected a batch of 3D affine matrices of shape Nx3x4 for size [%s]. Got [%s].')
        :format(table.concat(size, ', '), table.concat(sizes(theta), ', ')))
    end
    local N, D, H, W = size[1], size[3], size[4], size[5]
    local xs = base_coords(W, align, dt):view(1, 1, W):expand(D, H, W)
    local ys = base_coords(H, align, dt):view(1, H, 1):expand(D, H, W)
    local zs = base_coords(D, align, dt):view(D, 1, 1):expand(D, H, W)
    local base = torch.stack({ xs, ys, zs, torch.ones(D, H, W, { dtype = dt }) }, 4):view(1, D * H * W, 4)
    return base:expand(N, D * H * W, 4):bmm(theta:transpose(2, 3)):view(N, D, H, W, 3)
  end
  fail('affine_grid', 'affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. Got size '
    .. '[' .. table.concat(size, ', ') .. '].')
end

-- a coordinate in [-1, 1] to pixels, then padding_mode's treatment (PyTorch's grid_sampler_compute_source_index)
local function reflect(x, lo2, hi2) -- reflect x into [lo2 / 2, hi2 / 2] (twice the bounds, as PyTorch)
  if lo2 == hi2 then return torch.zeros_like(x) end
  local mn, span = lo2 / 2, (hi2 - lo2) / 2
  local d = (x - mn):abs()
  local extra = d:fmod(span)
  local flips = (d / span):floor()
  return torch.where(flips:remainder(2):eq(0), extra + mn, span - extra + mn)
end
local function source_index(c, n, padding, align)
  local x = align and (c + 1) / 2 * (n - 1) or ((c + 1) * n - 1) / 2
  if padding == 'border' then
    x = x:clamp(0, n - 1)
  elseif padding == 'reflection' then
    if align then x = reflect(x, 0, 2 * (n - 1)) else x = reflect(x, -1, 2 * n - 1) end
    x = x:clamp(0, n - 1)
  end
  return x
end
-- grid_sample(input, grid, mode='bilinear', padding_mode='zeros', align_corners=false): 4-D input
-- (bilinear and nearest); composed of gathers, so both input and grid get gradients
local function grid_sample(input, grid, mode, padding_mode, align_corners)
  need('grid_sample', input) need('grid_sample', grid, 'grid')
  if type(mode) == 'table' then
    local o = mode
    mode, padding_mode, align_corners = o.mode, o.padding_mode, o.align_corners
  end
  mode, padding_mode = mode or 'bilinear', padding_mode or 'zeros'
  local align = align_corners or false
  if mode ~= 'bilinear' and mode ~= 'nearest' and mode ~= 'bicubic' then
    fail('grid_sample', ("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '%s'"):format(tostring(mode)))
  end
  if padding_mode ~= 'zeros' and padding_mode ~= 'border' and padding_mode ~= 'reflection' then
    fail('grid_sample', ("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '%s'"):format(tostring(padding_mode)))
  end
  if input:dim() ~= 4 then
    fail('grid_sample', 'grid_sample of a ' .. input:dim() .. '-D input is not supported by moontorch yet (4-D only)')
  end
  if mode == 'bicubic' then fail('grid_sample', "grid_sample mode 'bicubic' is not supported by moontorch yet") end
  if grid:dim() ~= 4 or grid:size(4) ~= 2 or grid:size(1) ~= input:size(1) then
    fail('grid_sample', ('grid_sampler(): expected grid to have size 2 in last dimension and the same batch size as input, '
      .. 'but got input with sizes [%s] and grid with sizes [%s]'):format(table.concat(sizes(input), ', '),
      table.concat(sizes(grid), ', ')))
  end
  local N, Cc, H, W = input:size(1), input:size(2), input:size(3), input:size(4)
  local Ho, Wo = grid:size(2), grid:size(3)
  local x = source_index(grid:select(4, 1), W, padding_mode, align)
  local y = source_index(grid:select(4, 2), H, padding_mode, align)
  local flat = input:reshape(N, Cc, H * W)
  local function tap(ix, iy, w)
    -- value at integer (ix, iy) times w, zero outside the image
    local inside = ix:ge(0):logical_and(ix:le(W - 1)):logical_and(iy:ge(0)):logical_and(iy:le(H - 1))
    local pos = (iy:clamp(0, H - 1) * W + ix:clamp(0, W - 1) + 1):to(torch.int64):reshape(N, 1, Ho * Wo) -- 1-based
    local v = flat:gather(3, pos:expand(N, Cc, Ho * Wo)):view(N, Cc, Ho, Wo)
    return v * (w * inside:to(w.dtype)):unsqueeze(2)
  end
  if mode == 'nearest' then
    local ix, iy = x:detach():round(), y:detach():round()
    return tap(ix, iy, torch.ones_like(x))
  end
  local x0, y0 = x:detach():floor(), y:detach():floor()
  local x1, y1 = x0 + 1, y0 + 1
  local wx1, wy1 = x - x0, y - y0
  local wx0, wy0 = 1 - wx1, 1 - wy1
  return tap(x0, y0, wx0 * wy0) + tap(x1, y0, wx1 * wy0) + tap(x0, y1, wx0 * wy1) + tap(x1, y1, wx1 * wy1)
end

------------------------------------------------------------------------------ Torch7 constructors
local function constructor(name)
  return function(...)
    local dt = torch[name]
    local a = ...
    if type(a) == 'table' and not is_tensor(a) and a[1] ~= nil and getmetatable(a) == nil then
      return torch.tensor(a, { dtype = dt })
    end
    if is_tensor(a) then return a:to(dt) end
    if select('#', ...) == 0 then return torch.empty(0, { dtype = dt }) end
    local s = type(a) == 'table' and a or { ... }
    return torch.empty(s, { dtype = dt })
  end
end

M.fns = {
  deg2rad = deg2rad, rad2deg = rad2deg, logaddexp = logaddexp, logaddexp2 = logaddexp2, signbit = signbit,
  isposinf = isposinf, isneginf = isneginf, isreal = isreal, heaviside = heaviside, angle = angle, sgn = sgn,
  asinh = asinh, acosh = acosh, atanh = atanh, arcsinh = asinh, arccosh = acosh, arctanh = atanh, erfinv = erfinv,
  gcd = gcd, lcm = lcm,
  take = take, take_along_dim = take_along_dim, rot90 = rot90, kron = kron, diag_embed = diag_embed,
  diagflat = diagflat, select_scatter = select_scatter, slice_scatter = slice_scatter,
  diagonal_scatter = diagonal_scatter, hsplit = hsplit, vsplit = vsplit, dsplit = dsplit, vander = nil,
  diff = diff, trace = trace, cummax = cum_extreme('cummax', true), cummin = cum_extreme('cummin', false),
  logcumsumexp = logcumsumexp, nanmean = nanmean, histc = histc, quantile = quantile_impl('quantile', false),
  nanquantile = quantile_impl('nanquantile', true), renorm = renorm, unique_consecutive = unique_consecutive,
  inner = inner, cross = cross, addr = addr, addbmm = addbmm, dist = dist, matrix_power = matrix_power,
  positive = function(x) return x end,
  is_nonzero = function(x)
    if x:numel() ~= 1 then
      fail('is_nonzero', x:numel() == 0 and 'Boolean value of Tensor with no values is ambiguous'
        or 'Boolean value of Tensor with more than one value is ambiguous')
    end
    return x:item() ~= 0
  end,
  is_same_size = function(a, b) return a:size() == b:size() end,
  sum_to_size = sum_to_size,
}
-- torch-only functions
M.only = {
  broadcast_shapes = broadcast_shapes, broadcast_tensors = broadcast_tensors, meshgrid = meshgrid,
  cartesian_prod = cartesian_prod, combinations = combinations, block_diag = block_diag,
  tril_indices = tri_indices('tril_indices', true), triu_indices = tri_indices('triu_indices', false),
  vander = vander, einsum = einsum, cdist = cdist, pdist = pdist, trapz = nil,
  is_complex = function() return false end, is_storage = function() return false end,
  FloatTensor = constructor('float32'), DoubleTensor = constructor('float64'),
  HalfTensor = constructor('float16'), BFloat16Tensor = constructor('bfloat16'),
  LongTensor = constructor('int64'), IntTensor = constructor('int32'),
  ShortTensor = constructor('int16'), CharTensor = constructor('int8'),
  ByteTensor = constructor('uint8'), BoolTensor = constructor('bool'),
}
function M.install(tt)
  torch = tt
  -- memory formats: clone takes {memory_format = torch.contiguous_format}
  for _, name in ipairs { 'contiguous_format', 'preserve_format', 'channels_last', 'channels_last_3d' } do
    torch[name] = name
  end

  for name, f in pairs(M.fns) do
    if torch[name] == nil then torch[name] = f end
    if methods[name] == nil then methods[name] = f end
  end
  for name, f in pairs(M.only) do if torch[name] == nil then torch[name] = f end end
  -- trapezoid(y, x=nil, {dx=1, dim=-1}) / trapz
  local function trapezoid(y, x, opts)
    need('trapezoid', y)
    if type(x) == 'table' and not is_tensor(x) then x, opts = nil, x end
    if type(x) == 'number' then opts = { dx = x } x = nil end
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
      return (s * dx):sum(d) / 2
    end
    return s:sum(d) * ((opts.dx or 1) / 2)
  end
  if torch.trapezoid == nil then torch.trapezoid = trapezoid end
  if torch.trapz == nil then torch.trapz = trapezoid end
  -- every method PyTorch also has as a torch function (torch.clamp_min(x, 0), torch.swapdims, ...)
  for _, name in ipairs { 'clamp_min', 'clamp_max', 'float_power', 'swapdims', 'swapaxes', 'moveaxis', 'movedim',
    'narrow_copy', 'nansum', 'square', 'frac', 'exp2', 'logit', 'nan_to_num', 'copysign', 'fmax', 'fmin', 'msort',
    'ravel', 'absolute', 'negative', 'fix', 'count_nonzero', 'aminmax', 'hypot', 'sinc', 'true_divide',
    'conj', 'resolve_conj', 'resolve_neg', 'adjoint', 'det', 'std_mean', 'var_mean' } do
    if torch[name] == nil and methods[name] ~= nil then
      local m = methods[name]
      torch[name] = function(t, ...) return m(t, ...) end
    end
  end
  if methods.moveaxis == nil and methods.movedim then methods.moveaxis = methods.movedim torch.moveaxis = torch.movedim end
  if methods.swapdims == nil and methods.transpose then
    methods.swapdims = methods.transpose
    torch.swapdims = torch.transpose
  end
  if torch.result_type == nil then
    torch.result_type = function(a, b)
      local ta = is_tensor(a) and a or torch.tensor(a)
      if is_tensor(a) and is_tensor(b) then return (torch.zeros({}, { dtype = a.dtype }) + torch.zeros({}, { dtype = b.dtype })).dtype end
      return (ta * (is_tensor(b) and b or b)).dtype
    end
  end
  if torch.promote_types == nil then
    torch.promote_types = function(a, b)
      return (torch.zeros({}, { dtype = a }) + torch.zeros({}, { dtype = b })).dtype
    end
  end
  if torch.can_cast == nil then
    local rank = function(d)
      if d == torch.bool then return 0 end
      if d.is_floating_point then return 2 end
      return 1
    end
    torch.can_cast = function(from, to) return rank(from) <= rank(to) end
  end
  -- torch.linalg: the norms and cross (the rest of linalg is not in moontorch yet)
  if torch.linalg == nil then
    torch.linalg = {
      vector_norm = vector_norm, matrix_norm = matrix_norm,
      norm = function(x, ord, dim, keepdim, opts)
        if type(ord) == 'table' then ord, dim, keepdim, opts = nil, nil, nil, ord end
        opts = opts or {}
        ord = ord or opts.ord
        dim = dim or opts.dim
        if type(ord) == 'string' or (ord ~= nil and type(dim) == 'table' and #dim == 2) then
          return matrix_norm(x, ord, dim, keepdim, opts)
        end
        if ord == nil and dim == nil and x:dim() == 2 then return matrix_norm(x, 'fro', nil, keepdim, opts) end
        return vector_norm(x, ord or 2, dim, keepdim, opts)
      end,
      cross = function(a, b, dim) return cross(a, b, dim or -1) end,
      matrix_power = matrix_power,
      vecdot = function(a, b, dim) return (a * b):sum(dim or -1) end,
      det = linalg_det, solve = linalg_solve, inv = linalg_inv, slogdet = linalg_slogdet,
      matrix_exp = matrix_exp, householder_product = householder_product,
    }
    if torch.matrix_exp == nil then torch.matrix_exp = matrix_exp end
    if methods.matrix_exp == nil then methods.matrix_exp = matrix_exp end
    if torch.det == nil then torch.det = linalg_det end
    if methods.det == nil then methods.det = linalg_det end
    if torch.inverse == nil then torch.inverse = linalg_inv end
    if methods.inverse == nil then methods.inverse = linalg_inv end
    if torch.slogdet == nil then torch.slogdet = linalg_slogdet end
    if methods.slogdet == nil then methods.slogdet = linalg_slogdet end
    local function logdet(A)
      local sign, la = linalg_slogdet(A)
      return torch.where(sign:lt(0), 0 / 0, torch.where(sign:eq(0), -huge, la))
    end
    if torch.logdet == nil then torch.logdet = logdet end
    if methods.logdet == nil then methods.logdet = logdet end
  end
  -- smaller torch.* names
  if torch.bucketize == nil then
    -- bucketize(input, boundaries, {right=, out_int32=}): searchsorted with the roles swapped (1-based)
    torch.bucketize = function(input, boundaries, opts)
      if type(input) == 'number' then input = torch.tensor(input) end
      return torch.searchsorted(boundaries, input, opts)
    end
  end
  if torch.isin == nil then
    torch.isin = function(elements, test, opts)
      local inv = opts and opts.invert or false
      local e = is_tensor(elements) and elements or torch.tensor(elements)
      local t = is_tensor(test) and test or torch.tensor({ test })
      local r = e:unsqueeze(-1):eq(t:reshape(-1)):any(-1)
      if e:dim() == 0 then r = e:reshape(1):unsqueeze(-1):eq(t:reshape(-1)):any(-1):reshape({}) end
      return inv and r:logical_not() or r
    end
  end
  if torch.cov == nil then
    -- cov(input, {correction=1, fweights=, aweights=}): rows are variables, columns observations
    torch.cov = function(x, opts)
      need('cov', x)
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
      if x:dim() == 1 then return r:reshape({}) end
      return r
    end
    torch.corrcoef = function(x)
      local c = torch.cov(x)
      if c:dim() == 0 then return c / c end
      local d = c:diagonal():sqrt()
      return (c / d:view(-1, 1) / d:view(1, -1)):clamp(-1, 1)
    end
  end
  -- windows: hann, hamming, bartlett, blackman (periodic=true by default), computed in the result's
  -- dtype in PyTorch's order of operations (the same roundings)
  local function window(name, f)
    if torch[name] ~= nil then return end
    torch[name] = function(n, periodic, opts)
      if type(periodic) == 'table' then periodic, opts = nil, periodic end
      if periodic == nil then periodic = true end
      local dt = opts and opts.dtype or torch.get_default_dtype()
      if n == 0 then return torch.empty(0, { dtype = dt }) end
      if n == 1 then return torch.ones(1, { dtype = dt }) end
      local L = periodic and n + 1 or n
      return f(torch.arange(L):to(dt), L):narrow(1, 1, n)
    end
  end
  local function hamming(alpha, beta)
    return function(k, L) return (k * (2 * pi / (L - 1))):cos() * -beta + alpha end
  end
  window('hann_window', hamming(0.5, 0.5))
  window('hamming_window', hamming(0.54, 0.46))
  window('blackman_window', function(k, L)
    local w = k * (pi / (L - 1))
    return (w * 4):cos() * 0.08 - (w * 2):cos() * 0.5 + 0.42
  end)
  window('bartlett_window', function(k, L)
    local w = k * (2 / (L - 1))
    local half = floor((L - 1) / 2) + 1
    if half >= L then return w end
    return torch.cat({ w:narrow(1, 1, half), 2 - w:narrow(1, half + 1, L - half) })
  end)
  if torch.empty_strided == nil then
    torch.empty_strided = function(size, stride, opts)
      local n = 1
      for i = 1, #size do if size[i] == 0 then n = 0 break end n = n + (size[i] - 1) * stride[i] end
      return torch.empty(n, opts):as_strided(size, stride)
    end
  end
  if torch.rsub == nil then
    torch.rsub = function(a, b, opts)
      local alpha = opts and opts.alpha or 1
      return b - (alpha ~= 1 and a * alpha or a)
    end
  end
  if torch.chain_matmul == nil then
    torch.chain_matmul = function(...)
      local ms = { ... }
      if #ms == 1 and not is_tensor(ms[1]) then ms = ms[1] end
      local r = ms[1]
      for i = 2, #ms do r = r:matmul(ms[i]) end
      return r
    end
  end
  if torch.ldexp == nil then torch.ldexp = function(x, e) return x * torch.pow(2, e) end end
  -- PyTorch's torch.<op> for nn.functional ops (torch.conv2d, torch.dropout(x, p, train), ...), loaded with nn
  for _, name in ipairs { 'conv1d', 'conv2d', 'conv3d', 'conv_transpose1d', 'conv_transpose2d', 'conv_transpose3d',
    'max_pool1d', 'max_pool2d', 'max_pool3d', 'avg_pool1d', 'adaptive_avg_pool1d', 'adaptive_max_pool1d', 'embedding',
    'cosine_similarity', 'pairwise_distance', 'pdist', 'pixel_shuffle', 'pixel_unshuffle', 'channel_shuffle',
    'batch_norm', 'instance_norm', 'group_norm', 'prelu', 'selu', 'celu', 'hardshrink', 'rrelu', 'bilinear',
    'binary_cross_entropy_with_logits', 'cosine_embedding_loss', 'ctc_loss', 'hinge_embedding_loss', 'kl_div',
    'margin_ranking_loss', 'poisson_nll_loss', 'triplet_margin_loss', 'threshold' } do
    if torch[name] == nil then
      torch[name] = function(...) return torch.nn.functional[name](...) end
    end
  end
  if torch.dropout == nil then
    torch.dropout = function(x, p, train) return torch.nn.functional.dropout(x, p, train) end
  end
  -- the in-place view ops: the tensor itself takes the view's shape (core: mt_set_view_)
  local C, raise_last = core.C, core.raise_last
  local function inplace_view(name, f)
    if methods[name] ~= nil then return end
    methods[name] = function(t, ...)
      need(name, t)
      local v = f(t, ...)
      if C.mt_set_view_(t, v, name) ~= 0 then raise_last() end
      return t
    end
  end
  inplace_view('t_', function(t) return t:t() end)
  inplace_view('transpose_', function(t, a, b) return t:transpose(a, b) end)
  inplace_view('swapdims_', function(t, a, b) return t:transpose(a, b) end)
  inplace_view('swapaxes_', function(t, a, b) return t:transpose(a, b) end)
  inplace_view('unsqueeze_', function(t, d) return t:unsqueeze(d) end)
  inplace_view('squeeze_', function(t, d) if d == nil then return t:squeeze() end return t:squeeze(d) end)
  inplace_view('as_strided_', function(t, size, stride, offset) return t:as_strided(size, stride, offset) end)
  -- torch.relu_(x), torch.sigmoid_(x), ...: the in-place methods PyTorch also has as torch functions
  for _, name in ipairs { 'relu_', 'sigmoid_', 'tanh_', 'exp_', 'log_', 'sqrt_', 'rsqrt_', 'abs_', 'neg_', 'clamp_',
    'clamp_min_', 'clamp_max_', 'ceil_', 'floor_', 'round_', 'trunc_', 'frac_', 'sin_', 'cos_', 'reciprocal_',
    'fill_', 'selu_', 'celu_', 'square_', 'sinh_', 'cosh_', 'tan_', 'asin_', 'acos_', 'atan_', 'erf_', 'erfc_',
    'expm1_', 'log1p_', 'log2_', 'log10_', 'sign_', 'fix_', 'logit_', 'nan_to_num_', 'index_put_', 'dropout_' } do
    local m = methods[name]
    if torch[name] == nil and m ~= nil then torch[name] = function(t, ...) return m(t, ...) end end
  end
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
  -- unique({dim = d}): the distinct slices along d, in sorted (lexicographic) order
  do
    local base = methods.unique
    local function unique_dim(t, opts)
      local d = pdim('unique', opts.dim, t:dim())
      local moved = t:movedim(d, 1)
      local n = moved:size(1)
      local rows = moved:reshape(n, -1)
      local list = rows:tolist()
      local m = rows:size(2)
      local order = {}
      for i = 1, n do order[i] = i end
      local function less(a, b)
        local ra, rb = list[a], list[b]
        for k = 1, m do
          if ra[k] ~= rb[k] then return ra[k] < rb[k] end
        end
        return a < b
      end
      table.sort(order, less)
      local keep, inverse, counts = {}, {}, {}
      for j, i in ipairs(order) do
        local same = j > 1
        if same then
          local prev = list[order[j - 1]]
          for k = 1, m do if prev[k] ~= list[i][k] then same = false break end end
        end
        if not same then keep[#keep + 1] = i counts[#keep] = 0 end
        counts[#keep] = counts[#keep] + 1
        inverse[i] = #keep
      end
      local values = moved:index_select(1, torch.tensor(keep, { dtype = torch.int64 })):movedim(1, d)
      local r = { values }
      if opts.return_inverse then r[#r + 1] = torch.tensor(inverse, { dtype = torch.int64 }) end
      if opts.return_counts then r[#r + 1] = torch.tensor(counts, { dtype = torch.int64 }) end
      return unpack(r)
    end
    local function unique(t, opts, ...)
      if type(opts) == 'table' and not is_tensor(opts) and opts.dim ~= nil and is_tensor(t) then
        return unique_dim(t, opts)
      end
      return base(t, opts, ...)
    end
    methods.unique = unique
    torch.unique = unique
  end
  -- torch.finfo(dtype) / torch.iinfo(dtype): PyTorch 1.13's fields and printing
  if torch.finfo == nil then
    local F_INFO = {
      float32 = { 32, 1.1920928955078125e-07, 3.4028234663852886e+38, 1.1754943508222875e-38, 1e-06 },
      float64 = { 64, 2.220446049250313e-16, 1.7976931348623157e+308, 2.2250738585072014e-308, 1e-15 },
      float16 = { 16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001 },
      bfloat16 = { 16, 0.0078125, 3.3895313892515355e+38, 1.1754943508222875e-38, 0.01 },
    }
    local I_INFO = { uint8 = { 8, 0, 255 }, int8 = { 8, -128, 127 }, int16 = { 16, -32768, 32767 },
      int32 = { 32, -2147483648, 2147483647 }, int64 = { 64, -2 ^ 63, 2 ^ 63 } }
    local function g6(x) -- C's %g with 6 digits, as PyTorch prints finfo
      local s = ('%g'):format(x)
      return s
    end
    local finfo_mt = {
      __tostring = function(f)
        return ('finfo(resolution=%s, min=%s, max=%s, eps=%s, smallest_normal=%s, tiny=%s, dtype=%s)'):format(
          g6(f.resolution), g6(f.min), g6(f.max), g6(f.eps), g6(f.smallest_normal), g6(f.tiny), f.dtype)
      end,
    }
    local iinfo_mt = {
      __tostring = function(i) return ('iinfo(min=%s, max=%s, dtype=%s)'):format(g6(i.min), g6(i.max), i.dtype) end,
    }
    local function short(d) return (tostring(d):gsub('^torch%.', '')) end
    torch.finfo = function(d)
      d = d or torch.get_default_dtype()
      local v = F_INFO[short(d)]
      if not v then fail('finfo', 'torch.finfo() requires a floating point input type. Use torch.iinfo to handle '
        .. "'torch.finfo'") end
      return setmetatable({ bits = v[1], eps = v[2], max = v[3], min = -v[3], tiny = v[4], smallest_normal = v[4],
        resolution = v[5], dtype = short(d) }, finfo_mt)
    end
    torch.iinfo = function(d)
      local v = d and I_INFO[short(d)]
      if not v then fail('iinfo', 'dtype must be an integer type, got ' .. tostring(d)) end
      return setmetatable({ bits = v[1], min = v[2], max = v[3], dtype = short(d) }, iinfo_mt)
    end
  end
  -- torch.Size({2, 3}): the sizes' type (compares equal to t:size())
  if torch.Size == nil then
    torch.Size = function(s)
      local size_mt = getmetatable(torch.empty(0):size())
      local r = {}
      for i = 1, #(s or {}) do r[i] = s[i] end
      return setmetatable(r, size_mt)
    end
  end

  -- nn.functional extras (loaded with nn: installed when nn loads, see lua/nn/init.lua's parity block)
  local function with_indices(name)
    return function(x, k, ...)
      local args = { ... }
      local n = select('#', ...)
      local last = args[n]
      if type(last) == 'table' and not is_tensor(last) and last[1] == nil then
        local o = {}
        for key, v in pairs(last) do o[key] = v end
        o.return_indices = true
        args[n] = o
      else
        n = n + 1
        args[n] = { return_indices = true }
      end
      return torch.nn.functional[name](x, k, unpack(args, 1, n))
    end
  end
  M.functional = { rrelu = rrelu, gumbel_softmax = gumbel_softmax, pdist = pdist, affine_grid = affine_grid,
    grid_sample = grid_sample, max_pool2d_with_indices = with_indices('max_pool2d'),
    max_pool3d_with_indices = with_indices('max_pool3d') }
end

return M
