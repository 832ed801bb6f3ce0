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
local broadcast_tensors = require('moontorch.ops.shape').composed.broadcast_tensors



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
  kron = kron, inner = inner, cross = cross, addr = addr, addbmm = addbmm, dist = dist, matrix_power = matrix_power,
}
-- torch-only functions
M.only = {
  tril_indices = tri_indices('tril_indices', true), triu_indices = tri_indices('triu_indices', false), vander = vander,
  einsum = einsum, cdist = cdist, pdist = pdist, FloatTensor = constructor('float32'),
  DoubleTensor = constructor('float64'), HalfTensor = constructor('float16'), BFloat16Tensor = constructor('bfloat16'),
  LongTensor = constructor('int64'), IntTensor = constructor('int32'), ShortTensor = constructor('int16'),
  CharTensor = constructor('int8'), ByteTensor = constructor('uint8'), BoolTensor = constructor('bool'),
}
function M.install(tt)
  torch = tt

  for name, f in pairs(M.fns) do
    if torch[name] == nil then torch[name] = f end
    if methods[name] == nil then methods[name] = f end
  end
  for name, f in pairs(M.only) do if torch[name] == nil then torch[name] = f end end
  -- every method PyTorch also has as a torch function (torch.clamp_min(x, 0), torch.swapdims, ...)
  for _, name in ipairs { 'det' } do
    if torch[name] == nil and methods[name] ~= nil then
      local m = methods[name]
      torch[name] = function(t, ...) return m(t, ...) end
    end
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
  if torch.chain_matmul == nil then
    torch.chain_matmul = function(...)
      local ms = { ... }
      if #ms == 1 and not is_tensor(ms[1]) then ms = ms[1] end
      local r = ms[1]
      for i = 2, #ms do r = r:matmul(ms[i]) end
      return r
    end
  end
  -- torch.relu_(x), torch.sigmoid_(x), ...: the in-place methods PyTorch also has as torch functions
  for _, name in ipairs { 'fill_' } do
    local m = methods[name]
    if torch[name] == nil and m ~= nil then torch[name] = function(t, ...) return m(t, ...) end end
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
