-- torch.linalg's decompositions by LAPACK (the C front doors mt_linalg_* of core/ops/lapack.c, kernels
-- core/tensor/lapack.c): cholesky (+ cholesky_ex), solve_triangular, qr, eigh, eigvalsh, svd, svdvals, lstsq,
-- lu_factor (+ lu_factor_ex), lu, lu_solve, pinv, matrix_rank, cond, solve (+ solve_ex), inv (+ inv_ex), det, slogdet
-- (getrf + getrs), ldl_factor (+ ldl_factor_ex), ldl_solve; torch.cholesky_solve, cholesky_inverse, lu_unpack, lu_solve,
-- inverse, det, slogdet, logdet, geqrf, orgqr, ormqr,
-- and PyTorch 1.13's older spellings (torch.cholesky, torch.svd with its some= / V, torch.qr, torch.lu,
-- torch.triangular_solve, torch.pinverse) as torch functions and Tensor methods. Each differentiable one is one
-- autograd node named as PyTorch 1.13's (LinalgCholeskyExBackward0, ...), its derivative written with ops
-- (so second derivatives record), the factorization recomputed from the saved inputs. Options by position as
-- PyTorch's positional arguments, or in a trailing table ({upper=true}); several results come back as several
-- Lua values (`local Q, R = torch.linalg.qr(A)`). No complex dtypes: linalg.eig/eigvals are not here.
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local K = require 'moontorch.ops.compose'
local dtype = require 'moontorch.dtype'

local C = core.C
local raise_last, fail = core.raise_last, core.fail
local is_tensor, wrap, methods = T.is_tensor, T.wrap, T.methods
local need, sizes, shown = K.need, K.sizes, K.shown
local type, select, unpack, huge, max, min = type, select, unpack, math.huge, math.max, math.min

local M = {}
local torch -- set by install
-- what a node's forward computed beside its differentiable outputs (info codes, pivots, rank), read by the
-- caller right after the call (the forward runs inside it)
local stash = {}
-- stash[k], emptied (a tensor left there would stay alive)
local function pop(k)
  local v = stash[k]
  stash[k] = nil
  return v
end
-- ..., after emptying the stash (the backward's recomputed factorizations leave theirs)
local function unstashed(...)
  for k in pairs(stash) do stash[k] = nil end
  return ...
end

local outs = ffi.new('mt_tensor *[4]')
local function clear() outs[0], outs[1], outs[2], outs[3] = nil, nil, nil, nil end
local function grab(i)
  local p = outs[i]
  outs[i] = nil
  if p == nil then return nil end
  return wrap(p)
end
local function call(st)
  if st ~= 0 then
    for i = 0, 3 do if outs[i] ~= nil then C.mt_tensor_release(outs[i]) outs[i] = nil end end
    raise_last()
  end
end

------------------------------------------------------------------------------ checks (PyTorch's messages)
-- r written into out (resized to r's shape; out's dtype kept), out returned; no out: r
local function out_to(op, out, r)
  if out == nil then return r end
  if not is_tensor(out) then fail(op, 'out must be a tensor, got ' .. shown(out)) end
  return torch.mul(r, 1, { out = out })
end
local function check(op, A, square, what)
  what = what or 'A'
  need(op, A, what)
  if A:dim() < 2 then fail(op, ('The input tensor %s must have at least 2 dimensions.'):format(what)) end
  local dt = A.dtype
  if dt == dtype.float16 or dt == dtype.bfloat16 then
    fail(op, 'Low precision dtypes not supported. Got ' .. dtype.scalar_type(dt))
  end
  if not A:is_floating_point() then
    fail(op, 'Expected a floating point or complex tensor as input. Got ' .. dtype.scalar_type(dt))
  end
  if square and A:size(-1) ~= A:size(-2) then
    fail(op, ('%s must be batches of square matrices, but they are %d by %d matrices'):format(what, A:size(-2),
      A:size(-1)))
  end
  local dev = A.device
  if dev.type ~= 'cpu' then fail(op, ('runs on the CPU (LAPACK); %s is on %s'):format(what, tostring(dev))) end
end
local function float_type(a, b)
  if a.dtype == dtype.float64 or b.dtype == dtype.float64 then return dtype.float64 end
  return dtype.float32
end
-- options: the trailing table of a call, or {}
local function opts_at(v)
  if type(v) == 'table' and not is_tensor(v) then return v end
  return nil
end
local function bool_opt(op, name, v, default)
  if v == nil then return default end
  if type(v) ~= 'boolean' then fail(op, ('%s must be a boolean, got %s'):format(name, shown(v))) end
  return v
end
-- the batch element (1-based) of the first nonzero info, and that info; nil when all are 0
local function first_failure(info)
  if info:numel() == 0 then return nil end
  local bad = info:ne(0)
  if not bad:any() then return nil end
  local flat = info:reshape(-1)
  local idx = bad:reshape(-1):nonzero():reshape(-1)[1]:item()
  return info:dim() > 0 and idx or nil, flat[idx]:item()
end
local function batch_prefix(batch) return batch and ('(Batch element %d): '):format(batch) or '' end

------------------------------------------------------------------------------ the C calls (not recorded)
local raw = {}
function raw.cholesky(A, upper)
  clear()
  call(C.mt_linalg_cholesky(A:detach(), upper and 1 or 0, outs, outs + 1))
  return grab(0), grab(1)
end
function raw.eigh(A, upper, vectors)
  clear()
  call(C.mt_linalg_eigh(A:detach(), upper and 1 or 0, vectors and 1 or 0, outs, outs + 1, outs + 2))
  return grab(0), grab(1), grab(2)
end
function raw.svd(A, full, uv)
  clear()
  call(C.mt_linalg_svd(A:detach(), full and 1 or 0, uv and 1 or 0, outs, outs + 1, outs + 2, outs + 3))
  return grab(0), grab(1), grab(2), grab(3)
end
function raw.qr(A, mode)
  clear()
  call(C.mt_linalg_qr(A:detach(), mode, outs, outs + 1))
  return grab(0), grab(1)
end
function raw.lu_factor(A)
  clear()
  call(C.mt_linalg_lu_factor(A:detach(), outs, outs + 1, outs + 2))
  return grab(0), grab(1), grab(2)
end
-- X with A X = B (adjoint: A^T X = B) from lu_factor's LU and pivots; LU (..., n, n), pivots (..., n), B (..., n, k)
-- with one batch shape
function raw.lu_solve(LU, piv, B, adjoint)
  clear()
  call(C.mt_linalg_lu_solve(LU:detach(), piv, B:detach(), adjoint and 1 or 0, outs))
  return grab(0)
end
function raw.ldl_factor(A)
  clear()
  call(C.mt_linalg_ldl_factor(A:detach(), outs, outs + 1, outs + 2))
  return grab(0), grab(1), grab(2)
end
function raw.ldl_solve(LD, piv, B)
  clear()
  call(C.mt_linalg_ldl_solve(LD:detach(), piv, B:detach(), outs))
  return grab(0)
end
-- A (..., n, n) and B (..., n, k) / (..., k, n) with their batch dims broadcast
local function broadcast_batch(A, B)
  local sa, sb = sizes(A), sizes(B)
  local na, nb = #sa - 2, #sb - 2
  local n = max(na, nb)
  local batch = {}
  for i = 1, n do
    local x, y = sa[na - n + i] or 1, sb[nb - n + i] or 1
    if x ~= y and x ~= 1 and y ~= 1 then return nil end
    batch[i] = x == 1 and y or x
  end
  local ea, eb = { unpack(batch) }, { unpack(batch) }
  ea[n + 1], ea[n + 2] = sa[na + 1], sa[na + 2]
  eb[n + 1], eb[n + 2] = sb[nb + 1], sb[nb + 2]
  return A:expand(ea), B:expand(eb)
end
function raw.solve_triangular(A, B, upper, left, unit)
  clear()
  local op = 'linalg.solve_triangular'
  local Ae, Be = broadcast_batch(A:detach(), B:detach())
  if not Ae then
    fail(op, ('Incompatible shapes of A and B for the equation %s (%s and %s)'):format(left and 'AX = B' or 'XA = B',
      tostring(A:size()), tostring(B:size())))
  end
  call(C.mt_linalg_solve_triangular(Ae, Be, upper and 1 or 0, left and 1 or 0, unit and 1 or 0, outs))
  return grab(0)
end
function raw.lstsq(A, B, rcond, svd)
  clear()
  local Ae, Be = broadcast_batch(A:detach(), B:detach())
  if not Ae then fail('linalg.lstsq', 'A and B must be broadcastable in their batch dimensions') end
  call(C.mt_linalg_lstsq(Ae, Be, rcond, svd and 1 or 0, outs, outs + 1, outs + 2, outs + 3))
  return grab(0), grab(1), grab(2), grab(3)
end

------------------------------------------------------------------------------ autograd: one node, several outputs
-- node(name, fn, grad): fn(...) -> its differentiable outputs (tensors); recorded as one node named as
-- PyTorch's when a tensor argument requires grad. grad(gs, ...) gets the outputs' gradients (a table: nil
-- where none arrived) and fn's arguments, and returns one gradient per argument; it recomputes what it
-- needs from the arguments with the recording functions, so that create_graph records through it.
local function node(name, fn, grad)
  return K.node_multi(name, fn, function(...) return unstashed(grad(...)) end)
end
local function node1(name, fn, grad)
  return K.node(name, fn, function(...) return unstashed(grad(...)) end)
end

local function mT(x) return x:transpose(-2, -1) end
local function eye_like(n, A) return torch.eye(n, { dtype = A.dtype }) end
local function sum_to(g, t)
  if g ~= nil and g:size() ~= t:size() then return g:sum_to_size(t:size()) end
  return g
end
local function tri(x, upper, k)
  if upper then return x:triu(k or 0) end
  return x:tril(-(k or 0))
end

------------------------------------------------------------------------------ solve_triangular
local solve_triangular
local function st_grad(gs, A, B, upper, left, unit)
  local g = gs[1]
  if g == nil then return nil, nil end
  local X = solve_triangular(A, B, upper, left, unit)
  local At = mT(A)
  local gB = solve_triangular(At, g, not upper, left, unit)
  local gA = left and -gB:matmul(mT(X)) or -mT(X):matmul(gB)
  gA = tri(gA, upper, unit and 1 or 0)
  return sum_to(gA, A), sum_to(gB, B)
end
solve_triangular = node('LinalgSolveTriangularBackward0', function(A, B, upper, left, unit)
  -- A's other triangle is not read: tri() keeps the saved A's gradient there zero
  return raw.solve_triangular(A, B, upper, left, unit)
end, st_grad)

function M.solve_triangular(A, B, opts)
  local op = 'linalg.solve_triangular'
  check(op, A, true, 'A')
  need(op, B, 'B')
  if B:dim() < 2 then fail(op, 'The input tensor B must have at least 2 dimensions.') end
  opts = opts_at(opts)
  if opts == nil or opts.upper == nil then fail(op, 'missing the required keyword argument upper ({upper = true|false})') end
  local upper = bool_opt(op, 'upper', opts.upper)
  local left = bool_opt(op, 'left', opts.left, true)
  local unit = bool_opt(op, 'unitriangular', opts.unitriangular, false)
  local n = A:size(-1)
  if (left and B:size(-2) or B:size(-1)) ~= n then
    fail(op, ('Incompatible shapes of A and B for the equation %s (%dx%d and %dx%d)'):format(
      left and 'AX = B' or 'XA = B', A:size(-2), n, B:size(-2), B:size(-1)))
  end
  if B.dtype ~= A.dtype then B = B:to(A.dtype) end -- (PyTorch's result has A's dtype)
  local r = solve_triangular(A, B, upper, left, unit)
  if opts.out ~= nil then return out_to(op, opts.out, r) end
  return r
end

------------------------------------------------------------------------------ cholesky
-- gA = sym(L^-T Phi(L^T gL) L^-1), Phi: the lower triangle with the diagonal halved (A's derivative
-- taken as a symmetric matrix's, as PyTorch's)
local cholesky_nodes = {}
local function cholesky_node(name)
  if cholesky_nodes[name] then return cholesky_nodes[name] end
  local f
  f = node(name, function(A, upper)
    local L, info = raw.cholesky(A, upper)
    stash.info = info
    return L
  end, function(gs, A, upper)
    local g = gs[1]
    if g == nil then return nil end
    local L = f(A, upper)
    if upper then L, g = mT(L), mT(g) end
    local phi = mT(L):matmul(g):tril()
    phi = phi - phi:diagonal(0, -2, -1):diag_embed() * 0.5
    local X = solve_triangular(mT(L), phi, true, true, false) -- L^-T phi
    local gA = solve_triangular(L, X, false, false, false)    -- (L^-T phi) L^-1
    return (gA + mT(gA)) * 0.5
  end)
  cholesky_nodes[name] = f
  return f
end
local function cholesky_info_message(op, info)
  local batch, code = first_failure(info)
  if code == nil then return nil end
  return batch_prefix(batch) .. ('The factorization could not be completed because the input is not positive-definite '
    .. '(the leading minor of order %d is not positive-definite).'):format(code)
end
-- cholesky_ex: L and info; the factorization's failure an error only with check_errors
local function cholesky_impl(op, name, A, upper, check_errors)
  check(op, A, true)
  local L = cholesky_node(name)(A, upper)
  local info = pop('info')
  if check_errors then
    local msg = cholesky_info_message(op, info)
    if msg then fail(op, msg) end
  end
  return L, info
end

function M.cholesky(A, opts)
  local upper = bool_opt('linalg.cholesky', 'upper', opts_at(opts) and opts.upper, false)
  local L = cholesky_impl('linalg.cholesky', 'LinalgCholeskyExBackward0', A, upper, true)
  return L
end
function M.cholesky_ex(A, opts)
  opts = opts_at(opts) or {}
  local upper = bool_opt('linalg.cholesky_ex', 'upper', opts.upper, false)
  local ce = bool_opt('linalg.cholesky_ex', 'check_errors', opts.check_errors, false)
  return cholesky_impl('linalg.cholesky_ex', 'LinalgCholeskyExBackward0', A, upper, ce)
end
-- torch.cholesky(A, upper=False): deprecated in PyTorch 1.13, its own node name
function M.old_cholesky(A, upper)
  if opts_at(upper) then upper = upper.upper end
  upper = bool_opt('cholesky', 'upper', upper, false)
  return (cholesky_impl('cholesky', 'CholeskyBackward0', A, upper, true))
end

------------------------------------------------------------------------------ qr
local mode_ids = { reduced = 0, complete = 1, r = 2 }
local qr
-- m >= n (reduced or complete with m == n): M = R gR^T - gQ^T Q, gA = (gQ + Q copyltu(M)) R^-T;
-- m < n: A = [X | Y], R = [U | V]: gY = Q gV, X's gradient the square case's with gQ + Y gV^T
local function qr_square_grad(Q, R, gQ, gR)
  local Mm
  if gR ~= nil then Mm = R:matmul(mT(gR)) end
  if gQ ~= nil then
    local t = mT(gQ):matmul(Q)
    Mm = Mm and Mm - t or -t
  end
  local b = gQ
  if Mm ~= nil then
    local low = Mm:tril(-1)
    local sym = low + mT(low) + Mm:diagonal(0, -2, -1):diag_embed()
    local qs = Q:matmul(sym)
    b = b and b + qs or qs
  end
  if b == nil then return nil end
  -- b R^-T: X with X R^T = b (R^T lower)
  return solve_triangular(mT(R), b, false, false, false)
end
qr = node('LinalgQrBackward0', function(A, mode)
  return raw.qr(A, mode_ids[mode])
end, function(gs, A, mode)
  local gQ, gR = gs[1], gs[2]
  if gQ == nil and gR == nil then return nil end
  local m, n = A:size(-2), A:size(-1)
  if mode == 'r' then
    fail('linalg.qr', "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
      .. "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
  end
  if mode == 'complete' and m > n then
    fail('linalg.qr', "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
  end
  local Q, R = qr(A, mode)
  if m >= n then return qr_square_grad(Q, R, gQ, gR) end
  local U, V, Y = R:narrow(-1, 1, m), R:narrow(-1, m + 1, n - m), A:narrow(-1, m + 1, n - m)
  local gU, gV = gR and gR:narrow(-1, 1, m), gR and gR:narrow(-1, m + 1, n - m)
  local gX_Q = gQ
  local gY
  if gV ~= nil then
    gX_Q = gX_Q and gX_Q + Y:matmul(mT(gV)) or Y:matmul(mT(gV))
    gY = Q:matmul(gV)
  else
    gY = torch.zeros_like(Y)
  end
  local gX = qr_square_grad(Q, U, gX_Q, gU) or torch.zeros_like(A:narrow(-1, 1, m))
  return torch.cat({ gX, gY }, -1)
end)

function M.qr(A, mode, opts)
  local op = 'linalg.qr'
  if opts_at(mode) then mode, opts = mode.mode, mode end
  mode = mode or 'reduced'
  if mode_ids[mode] == nil then
    fail(op, ("qr received unrecognized mode '%s' but expected one of 'reduced' (default), 'r', or 'complete'")
      :format(shown(mode)))
  end
  check(op, A, false)
  local Q, R = qr(A, mode)
  if mode == 'r' then Q = torch.empty(0, { dtype = A.dtype }) end
  return Q, R
end
-- torch.qr(A, some=True)
function M.old_qr(A, some)
  if opts_at(some) then some = some.some end
  some = bool_opt('qr', 'some', some, true)
  return M.qr(A, some and 'reduced' or 'complete')
end

-- torch.geqrf(A): LAPACK's geqrf as it leaves them (R above the diagonal, the Householder vectors below; tau), not
-- differentiable; torch.orgqr(A, tau): linalg.householder_product; torch.ormqr(A, tau, other, left, transpose):
-- other multiplied by the full Q (m, m) of A's reflectors
-- (with grad, one node whose backward is PyTorch's error, as 1.13's GeqrfBackward0)
local geqrf_node = node('GeqrfBackward0', function(A) return raw.qr(A, 3) end, function()
  fail('geqrf', "the derivative for 'geqrf' is not implemented.")
end)
function M.geqrf(A)
  check('geqrf', A, false, 'input')
  return geqrf_node(A)
end
function M.orgqr(A, tau) return torch.linalg.householder_product(A, tau) end
function M.ormqr(A, tau, other, left, transpose)
  local op = 'ormqr'
  local o = opts_at(left)
  if o then left, transpose = o.left, o.transpose end
  left = bool_opt(op, 'left', left, true)
  transpose = bool_opt(op, 'transpose', transpose, false)
  check(op, A, false, 'input')
  need(op, tau, 'tau')
  need(op, other, 'other')
  local m, k = A:size(-2), tau:size(-1)
  if k > m or k > A:size(-1) then fail(op, 'tau.shape[-1] must be less than or equal to input.shape[-1] and input.shape[-2]') end
  if (left and other:size(-2) or other:size(-1)) ~= m then
    fail(op, ('other.shape[%d] must be equal to input.shape[-2]'):format(left and -2 or -1))
  end
  local V = A:narrow(-1, 1, k)
  if k < m then
    local zs = sizes(V)
    zs[#zs] = m - k
    V = torch.cat({ V, torch.zeros(zs, { dtype = A.dtype }) }, -1)
  end
  local Q = torch.linalg.householder_product(V, tau)
  if transpose then Q = mT(Q) end
  return left and Q:matmul(other) or other:matmul(Q)
end

------------------------------------------------------------------------------ eigh, eigvalsh
-- gA = V (diag(gw) + skew(V^T gV) / 2E) V^T, E_ij = w_j - w_i (its diagonal left out): symmetric, as PyTorch's
local function uplo_of(op, uplo)
  if opts_at(uplo) then uplo = uplo.UPLO or uplo.uplo end
  uplo = uplo or 'L'
  if uplo ~= 'L' and uplo ~= 'U' then
    fail(op, ("Expected UPLO argument to be 'L' or 'U', but got %s"):format(shown(uplo)))
  end
  return uplo == 'U'
end
local function eigh_node(name)
  local f
  f = node(name, function(A, upper)
    local w, V, info = raw.eigh(A, upper, true)
    stash.info = info
    return w, V
  end, function(gs, A, upper)
  local gw, gV = gs[1], gs[2]
  if gw == nil and gV == nil then return nil end
  local w, V = f(A, upper)
  local inner
  if gV ~= nil then
    local E = w:unsqueeze(-2) - w:unsqueeze(-1)
    local n = w:size(-1)
    local I = eye_like(n, A):to(torch.bool)
    E = torch.where(I, 1, E)
    local VgV = mT(V):matmul(gV)
    inner = torch.where(I, 0, (VgV - mT(VgV)) * 0.5 / E) -- V^T dV is skew: gV's skew part, as PyTorch's
  end
  if gw ~= nil then
    local d = gw:diag_embed()
    inner = inner and inner + d or d
  end
  return V:matmul(inner):matmul(mT(V))
  end)
  return f
end
local eigh = eigh_node('LinalgEighBackward0')
local function eigh_check(op, info)
  local batch, code = first_failure(info)
  if code then
    fail(op, batch_prefix(batch) .. ('The algorithm failed to converge because the input matrix is ill-conditioned or '
      .. 'has too many repeated eigenvalues (error code: %d).'):format(code))
  end
end
function M.eigh(A, uplo)
  local op = 'linalg.eigh'
  local upper = uplo_of(op, uplo)
  check(op, A, true)
  local w, V = eigh(A, upper)
  eigh_check(op, pop('info'))
  return w, V
end
function M.eigvalsh(A, uplo)
  local op = 'linalg.eigvalsh'
  local upper = uplo_of(op, uplo)
  check(op, A, true)
  if A.requires_grad and torch.is_grad_enabled() then
    local w = eigh(A, upper)
    eigh_check(op, pop('info'))
    return w
  end
  local w, _, info = raw.eigh(A, upper, false)
  eigh_check(op, info)
  return w
end

-- torch.symeig(input, eigenvectors=False, upper=True): PyTorch 1.13's older eigh (the upper triangle by default;
-- without eigenvectors, an empty tensor in their place); its own node name
local symeig_node = eigh_node('SymeigBackward0')
function M.symeig(A, eigenvectors, upper)
  local op = 'symeig'
  local o = opts_at(eigenvectors)
  if o then eigenvectors, upper = o.eigenvectors, o.upper end
  eigenvectors = bool_opt(op, 'eigenvectors', eigenvectors, false)
  upper = bool_opt(op, 'upper', upper, true)
  check(op, A, true, 'input')
  local w, V = symeig_node(A, upper)
  eigh_check(op, pop('info'))
  if not eigenvectors then V = torch.empty(0, { dtype = A.dtype }) end
  return w, V
end

------------------------------------------------------------------------------ svd, svdvals
-- k = min(m, n), U (m, k), S (k), Vh (k, n) (full_matrices: U, Vh's first k columns / rows carry the
-- gradient, as PyTorch's). gS alone: U diag(gS) Vh. Else (Townsend's formula, real case):
-- gA = U [skew(U^T gU) / E S + S skew(V^T gV) / E + diag(gS)] V^T (E_ij = S_j^2 - S_i^2)
--      + (I - U U^T) gU S^-1 V^T (m > k) + U S^-1 gV^T (I - V V^T) (n > k)
local svd
local function svd_check(op, info)
  local batch, code = first_failure(info)
  if code == nil then return end
  if code < 0 then
    fail(op, batch_prefix(batch) .. 'The algorithm failed to converge because the input matrix contained non-finite values.')
  end
  fail(op, batch_prefix(batch) .. ('The algorithm failed to converge because the input matrix is ill-conditioned or has '
    .. 'too many repeated singular values (error code: %d).'):format(code))
end
svd = node('LinalgSvdBackward0', function(A, full)
  local U, S, Vh, info = raw.svd(A, full, true)
  svd_check('linalg.svd', info)
  return U, S, Vh
end, function(gs, A, full)
  local gU, gS, gVh = gs[1], gs[2], gs[3]
  if gU == nil and gS == nil and gVh == nil then return nil end
  local m, n = A:size(-2), A:size(-1)
  local k = min(m, n)
  local U, S, Vh = svd(A, full)
  if full then
    U, Vh = U:narrow(-1, 1, k), Vh:narrow(-2, 1, k)
    if gU ~= nil then gU = gU:narrow(-1, 1, k) end
    if gVh ~= nil then gVh = gVh:narrow(-2, 1, k) end
  end
  if gU == nil and gVh == nil then
    return U:matmul(gS:unsqueeze(-1) * Vh)
  end
  local V = mT(Vh)
  local gV = gVh and mT(gVh)
  local S2 = S * S
  local E = S2:unsqueeze(-2) - S2:unsqueeze(-1)
  local I = eye_like(k, A):to(torch.bool)
  E = torch.where(I, 1, E)
  local inner = gS and gS:diag_embed() or nil
  local function add(x) inner = inner and inner + x or x end
  if gU ~= nil then
    local UgU = mT(U):matmul(gU)
    add((UgU - mT(UgU)) / E * S:unsqueeze(-2))
  end
  if gV ~= nil then
    local VgV = mT(V):matmul(gV)
    add(S:unsqueeze(-1) * ((VgV - mT(VgV)) / E))
  end
  local gA = U:matmul(inner):matmul(Vh)
  if gU ~= nil and m > k then
    local proj = gU - U:matmul(mT(U):matmul(gU))
    gA = gA + (proj / S:unsqueeze(-2)):matmul(Vh)
  end
  if gV ~= nil and n > k then
    local proj = mT(gV) - mT(gV):matmul(V):matmul(Vh)
    gA = gA + U:matmul(proj / S:unsqueeze(-1))
  end
  return gA
end)

function M.svd(A, full_matrices, opts)
  local op = 'linalg.svd'
  if opts_at(full_matrices) then full_matrices = full_matrices.full_matrices end
  local full = bool_opt(op, 'full_matrices', full_matrices, true)
  check(op, A, false)
  return svd(A, full)
end
-- the singular values; with grad, through svd's node (PyTorch's LinalgSvdBackward0)
local function svdvals(op, A)
  check(op, A, false)
  if A.requires_grad and torch.is_grad_enabled() then
    local _, S = svd(A, false)
    return S
  end
  local _, S, _, info = raw.svd(A, false, false)
  svd_check(op, info)
  return S
end
function M.svdvals(A) return svdvals('linalg.svdvals', A) end
-- torch.svd(A, some=True, compute_uv=True): U, S, V (V, not Vh); without compute_uv, U and V zero-filled
function M.old_svd(A, some, compute_uv)
  local op = 'svd'
  local o = opts_at(some)
  if o then some, compute_uv = o.some, o.compute_uv end
  some = bool_opt(op, 'some', some, true)
  compute_uv = bool_opt(op, 'compute_uv', compute_uv, true)
  check(op, A, false)
  local m, n = A:size(-2), A:size(-1)
  if not compute_uv then
    local S = svdvals(op, A)
    local bs = sizes(A)
    bs[#bs], bs[#bs - 1] = nil, nil
    local su, sv = { unpack(bs) }, { unpack(bs) }
    su[#su + 1], su[#su + 2] = m, m
    sv[#sv + 1], sv[#sv + 2] = n, n
    return torch.zeros(su, { dtype = A.dtype }), S, torch.zeros(sv, { dtype = A.dtype })
  end
  local U, S, Vh = svd(A, not some)
  return U, S, mT(Vh)
end

------------------------------------------------------------------------------ pinv, matrix_rank
-- the tolerance of PyTorch's pinv / matrix_rank: max(atol, rtol * S_max) per matrix, rtol's default eps * max(m, n)
-- when atol is not given (else 0)
local function tolerance(A, S, atol, rtol)
  local m, n = A:size(-2), A:size(-1)
  local eps = torch.finfo(A.dtype).eps
  if rtol == nil then rtol = (atol == nil or (not is_tensor(atol) and atol == 0)) and eps * max(m, n) or 0 end
  atol = atol or 0
  local smax = S:numel() > 0 and S:amax(-1, { keepdim = true }) or torch.zeros(S:size(), { dtype = S.dtype })
  if S:size(-1) == 0 then smax = torch.zeros(S:size(), { dtype = S.dtype }):narrow(-1, 1, 0) end
  if is_tensor(atol) then atol = atol:to(S.dtype):unsqueeze(-1) end
  if is_tensor(rtol) then rtol = rtol:to(S.dtype):unsqueeze(-1) end
  local tol = smax * rtol
  if is_tensor(atol) then return torch.maximum(tol, atol:expand_as(tol)) end
  return tol:clamp({ min = atol })
end
local function pinv_opts(op, rtol_pos, hermitian_pos, opts)
  if opts_at(rtol_pos) then opts, rtol_pos = rtol_pos, nil end
  if opts_at(hermitian_pos) then opts, hermitian_pos = hermitian_pos, nil end
  opts = opts or {}
  local rtol = opts.rtol
  if rtol == nil then rtol = opts.rcond end
  if rtol == nil then rtol = rtol_pos end
  local herm = opts.hermitian
  if herm == nil then herm = hermitian_pos end
  return opts.atol, rtol, bool_opt(op, 'hermitian', herm, false)
end
local function pinv_raw(A, atol, rtol, herm)
  if herm then
    local w, V = raw.eigh(A, false, true)
    local aw = w:abs()
    local tol = tolerance(A, aw, atol, rtol)
    local winv = torch.where(aw:gt(tol), w:reciprocal(), 0)
    return (V * winv:unsqueeze(-2)):matmul(mT(V))
  end
  local U, S, Vh, info = raw.svd(A, false, true)
  svd_check('linalg.pinv', info)
  local tol = tolerance(A, S, atol, rtol)
  local sinv = torch.where(S:gt(tol), S:reciprocal(), 0)
  return (mT(Vh) * sinv:unsqueeze(-2)):matmul(mT(U))
end
-- gA = -P^T gP P^T + (I - A P) gP^T P P^T + P^T P gP^T (I - P A) (P = pinv(A); a constant rank)
local pinv
local function pinv_backward(gP, A, P)
  local Pt = mT(P)
  local gA = -Pt:matmul(gP):matmul(Pt)
  local gPt = mT(gP)
  local AP, PA = A:matmul(P), P:matmul(A)
  gA = gA + (gPt - AP:matmul(gPt)):matmul(P):matmul(Pt)
  gA = gA + Pt:matmul(P):matmul(gPt - gPt:matmul(PA))
  return gA
end
pinv = node('LinalgPinvBackward0', function(A, atol, rtol, herm)
  return pinv_raw(A, atol, rtol, herm)
end, function(gs, A, atol, rtol, herm)
  local g = gs[1]
  if g == nil then return nil end
  return pinv_backward(g, A, pinv(A, atol, rtol, herm))
end)
function M.pinv(A, rcond, hermitian, opts)
  local op = 'linalg.pinv'
  local atol, rtol, herm = pinv_opts(op, rcond, hermitian, opts)
  check(op, A, herm)
  return pinv(A, atol, rtol, herm)
end
-- torch.pinverse(A, rcond=1e-15)
function M.pinverse(A, rcond)
  if opts_at(rcond) then rcond = rcond.rcond end
  check('pinverse', A, false)
  return pinv(A, nil, rcond or 1e-15, false)
end
function M.matrix_rank(A, tol, hermitian, opts)
  local op = 'linalg.matrix_rank'
  if opts_at(tol) then opts, tol = tol, nil end
  if opts_at(hermitian) then opts, hermitian = hermitian, nil end
  opts = opts or {}
  need(op, A)
  if A:dim() < 2 then fail(op, 'The input tensor input must have at least 2 dimensions.') end
  check(op, A, false, 'input')
  local herm = bool_opt(op, 'hermitian', opts.hermitian == nil and hermitian or opts.hermitian, false)
  local atol, rtol = opts.atol, opts.rtol
  if opts.tol ~= nil or tol ~= nil then atol, rtol = opts.tol or tol, 0 end
  if herm and A:size(-1) ~= A:size(-2) then check(op, A, true, 'input') end
  local S
  if herm then
    S = raw.eigh(A, false, false):abs()
  else
    local _, s, _, info = raw.svd(A, false, false)
    S = s
    svd_check(op, info)
  end
  local t = tolerance(A, S, atol, rtol)
  return S:gt(t):sum(-1)
end

------------------------------------------------------------------------------ lstsq
-- X = pinv(A) B for a full-rank A: gB = pinv(A)^T gX, gA = pinv's gradient with gP = gX B^T
local lstsq_node
lstsq_node = node('LinalgLstsqBackward0', function(A, B, rcond, svd)
  local X, rank, S, info = raw.lstsq(A, B, rcond, svd)
  local batch, code = first_failure(info)
  if code and code < 0 then
    fail('linalg.lstsq', batch_prefix(batch) .. 'The algorithm failed to converge because the input matrix contained '
      .. 'non-finite values.')
  elseif code then
    fail('linalg.lstsq', batch_prefix(batch) .. ('The algorithm failed to converge because the input matrix is '
      .. 'ill-conditioned or has too many repeated singular values (error code: %d).'):format(code))
  end
  stash.rank, stash.S = rank, S
  return X
end, function(gs, A, B)
  local g = gs[1]
  if g == nil then return nil, nil end
  local P = pinv(A)
  local Bb = B
  local gA = pinv_backward(g:matmul(mT(Bb)), A, P)
  local gB = mT(P):matmul(g)
  return sum_to(gA, A), sum_to(gB, B)
end)
local drivers = { gels = true, gelsy = true, gelsd = true, gelss = true }
function M.lstsq(A, B, rcond, opts)
  local op = 'linalg.lstsq'
  if opts_at(rcond) then opts, rcond = rcond, nil end
  opts = opts or {}
  if rcond == nil then rcond = opts.rcond end
  local driver = opts.driver or 'gelsy'
  if not drivers[driver] then
    fail(op, ("parameter `driver` should be one of (gels, gelsy, gelsd, gelss), but got %s"):format(shown(driver)))
  end
  need(op, A, 'A')
  need(op, B, 'B')
  if A:dim() < 2 then fail(op, 'input must have at least 2 dimensions.') end
  check(op, A, false)
  if B:dim() < 1 then fail(op, 'other must have at least 1 dimension.') end
  if not B:is_floating_point() then
    fail(op, 'Expected a floating point or complex tensor as input. Got ' .. dtype.scalar_type(B.dtype))
  end
  if A.dtype ~= B.dtype then
    fail('torch.linalg.lstsq', ("Expected input and other to have the same dtype, but got input's dtype %s and other's "
      .. 'dtype %s'):format(dtype.scalar_type(A.dtype), dtype.scalar_type(B.dtype)))
  end
  -- a vector right-hand side as PyTorch's: B 1-D, or B of A's shape without its last dim
  local vec = B:dim() == 1
  if not vec and B:dim() == A:dim() - 1 then
    vec = true
    for i = 1, B:dim() do if B:size(i) ~= A:size(i) then vec = false end end
  end
  local Bm = vec and B:unsqueeze(-1) or B
  if Bm:size(-2) ~= A:size(-2) then
    fail('torch.linalg.lstsq', (vec and 'input.size(-2) should match other.size(-1)' or 'input.size(-2) should match other.size(-2)'))
  end
  local m, n = A:size(-2), A:size(-1)
  if rcond == nil then rcond = torch.finfo(A.dtype).eps * max(m, n) end
  -- gelsd (an SVD) for the drivers that give singular values, gelsy (QR with column pivoting) for the others
  local X = lstsq_node(A, Bm, rcond, driver == 'gelsd' or driver == 'gelss')
  local rank, S = pop('rank'), pop('S')
  local empty = torch.empty(0, { dtype = A.dtype })
  local residuals = empty
  if driver ~= 'gelsy' and m > n and rank:eq(n):all() then
    local r = A:matmul(X) - Bm
    residuals = (r * r):sum(-2)
    if vec then residuals = residuals:squeeze(-1) end
  end
  if driver == 'gels' then rank = torch.empty(0, { dtype = torch.int64 }) end
  if driver ~= 'gelsd' and driver ~= 'gelss' then S = empty end
  if vec then X = X:squeeze(-1) end
  return X, residuals, rank, S
end

------------------------------------------------------------------------------ lu_factor, lu, lu_unpack, lu_solve
-- P from 1-based pivots (LAPACK's row swaps), per matrix: a float tensor (..., m, m) of A's dtype
local function perm_of(pivots, m, dt)
  local bs = sizes(pivots)
  local k = bs[#bs]
  bs[#bs] = nil
  local flat = pivots:reshape(-1, k)
  local nb = flat:size(1)
  local perms = {}
  local pv = flat:tolist()
  for b = 1, nb do
    local p = {}
    for i = 1, m do p[i] = i end
    for i = 1, k do
      local j = pv[b][i]
      if j < 1 or j > m then
        fail('lu_unpack', ('Pivots given to lu_solve must all be %s. Did you properly pass the result of lu_factor?'):format(
          j < 1 and 'greater or equal to 1' or 'smaller or equal to LU.size(-2)'))
      end
      p[i], p[j] = p[j], p[i]
    end
    perms[b] = p
  end
  -- row i of P^T A is A's row p[i]: A = P L U with P[p[i], i] = 1
  local idx = torch.tensor(nb > 0 and perms or {}, { dtype = torch.int64 }):reshape(nb, m)
  local P = torch.zeros(nb, m, m, { dtype = dt })
  if nb > 0 and m > 0 then
    P:scatter_(-1, idx:unsqueeze(-1), 1)
    P = mT(P)
  end
  bs[#bs + 1], bs[#bs + 2] = m, m
  return P:reshape(bs)
end
local function unpack_lu(LU)
  local m, n = LU:size(-2), LU:size(-1)
  local k = min(m, n)
  local L = LU:narrow(-1, 1, k):tril(-1) + torch.eye(m, k, { dtype = LU.dtype })
  local U = LU:narrow(-2, 1, k):triu()
  return L, U
end
-- A = P L U (m, n), k = min(m, n), L (m, k), U (k, n) (PyTorch's linalg_lu_backward):
-- square: gA = P L^-T [tril(L^T gL, -1) + triu(gU U^T)] U^-T;
-- wide (m < n, U = [U1 | U2]): gA = P L^-T [tril(L^T gL - triu(gU) U^T, -1) U1^-T + triu(gU1) | gU2];
-- tall (m > n, L = [L1; L2]): gA = P [L1^-T triu(gU U^T - L^T tril(gL, -1)) + tril(gL1, -1); gL2] U^-T
local function lu_backward(A, P, L, U, gL, gU)
  local m, n = A:size(-2), A:size(-1)
  if m == n then
    local inner
    if gL ~= nil then inner = mT(L):matmul(gL):tril(-1) end
    if gU ~= nil then
      local t = gU:matmul(mT(U)):triu()
      inner = inner and inner + t or t
    end
    local X = solve_triangular(mT(L), inner, true, true, true)
    X = solve_triangular(mT(U), X, false, false, false)
    return P:matmul(X)
  end
  local k = min(m, n)
  local g
  if m < n then
    local U1 = U:narrow(-1, 1, k)
    if gL ~= nil then g = mT(L):matmul(gL) end
    if gU ~= nil then
      local t = gU:triu():matmul(mT(U))
      g = g and g - t or -t
    end
    g = solve_triangular(mT(U1), g:tril(-1), false, false, false) -- X U1^T = g
    if gU ~= nil then
      g = torch.cat({ g + gU:narrow(-1, 1, k):triu(), gU:narrow(-1, k + 1, n - k) }, -1)
    else
      local zs = sizes(U)
      zs[#zs] = n - k
      g = torch.cat({ g, torch.zeros(zs, { dtype = A.dtype }) }, -1)
    end
    g = solve_triangular(mT(L), g, true, true, true)
  else
    local L1 = L:narrow(-2, 1, k)
    if gU ~= nil then g = gU:matmul(mT(U)) end
    if gL ~= nil then
      local t = mT(L):matmul(gL:tril(-1))
      g = g and g - t or -t
    end
    g = solve_triangular(mT(L1), g:triu(), true, true, true)
    if gL ~= nil then
      g = torch.cat({ g + gL:narrow(-2, 1, k):tril(-1), gL:narrow(-2, k + 1, m - k) }, -2)
    else
      local zs = sizes(L)
      zs[#zs - 1] = m - k
      g = torch.cat({ g, torch.zeros(zs, { dtype = A.dtype }) }, -2)
    end
    g = solve_triangular(mT(U), g, false, false, false) -- X U^T = g
  end
  return P:matmul(g)
end
local lu_factor_node, lu_node
lu_factor_node = node('LinalgLuFactorExBackward0', function(A)
  local LU, piv, info = raw.lu_factor(A)
  stash.piv, stash.info = piv, info
  return LU
end, function(gs, A)
  local g = gs[1]
  if g == nil then return nil end
  local LU, piv = raw.lu_factor(A)
  local P = perm_of(piv, A:size(-2), A.dtype)
  local L, U = unpack_lu(lu_factor_node(A))
  local k = min(A:size(-2), A:size(-1))
  return lu_backward(A, P, L, U, g:narrow(-1, 1, k):tril(-1), g:narrow(-2, 1, k):triu())
end)
lu_node = node('LinalgLuBackward0', function(A)
  local LU, piv = raw.lu_factor(A)
  stash.piv = piv
  return unpack_lu(LU)
end, function(gs, A)
  local gL, gU = gs[1], gs[2]
  if gL == nil and gU == nil then return nil end
  local _, piv = raw.lu_factor(A)
  local P = perm_of(piv, A:size(-2), A.dtype)
  local L, U = lu_node(A)
  return lu_backward(A, P, L, U, gL, gU)
end)
local function pivot_opt(op, opts)
  local o = opts_at(opts)
  local pivot = true
  if o then pivot = o.pivot
  elseif opts ~= nil then pivot = opts end
  pivot = bool_opt(op, 'pivot', pivot, true)
  if not pivot then fail(op, 'LU without pivoting is not implemented on the CPU') end
  return o or {}
end
function M.lu_factor_ex(A, opts)
  local op = 'linalg.lu_factor_ex'
  opts = pivot_opt(op, opts)
  if is_tensor(A) and A:dim() < 2 then
    fail('torch.lu_factor', ('Expected tensor with 2 or more dimensions. Got size: %s instead'):format(tostring(A:size())))
  end
  check(op, A, false)
  local LU = lu_factor_node(A)
  local piv, info = pop('piv'), pop('info')
  if opts.check_errors then
    local batch, code = first_failure(info)
    if code then fail(op, batch_prefix(batch) .. ('U[%d,%d] is zero and using it on lu_solve would result in a division '
      .. 'by zero.'):format(code, code)) end
  end
  return LU, piv, info
end
function M.lu_factor(A, opts)
  local op = 'linalg.lu_factor'
  pivot_opt(op, opts)
  if is_tensor(A) and A:dim() < 2 then
    fail('torch.lu_factor', ('Expected tensor with 2 or more dimensions. Got size: %s instead'):format(tostring(A:size())))
  end
  local LU, piv, info = M.lu_factor_ex(A)
  local batch, code = first_failure(info)
  if code then
    fail('torch.linalg.lu_factor', batch_prefix(batch) .. ('U[%d,%d] is zero and using it on lu_solve would result in a '
      .. 'division by zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or '
      .. 'linalg.lu_factor_ex(A, pivot)'):format(code, code))
  end
  return LU, piv
end
function M.lu(A, opts)
  local op = 'linalg.lu'
  pivot_opt(op, opts)
  check(op, A, false)
  local L, U = lu_node(A)
  local piv = pop('piv')
  return perm_of(piv, A:size(-2), A.dtype), L, U
end
-- torch.lu_unpack(LU, pivots, unpack_data=True, unpack_pivots=True): P, L, U (L and U recorded through the
-- ops that cut them out)
function M.lu_unpack(LU, pivots, unpack_data, unpack_pivots)
  local op = 'lu_unpack'
  local o = opts_at(unpack_data)
  if o then unpack_data, unpack_pivots = o.unpack_data, o.unpack_pivots end
  check(op, LU, false, 'LU_data')
  need(op, pivots, 'LU_pivots')
  if pivots.dtype ~= torch.int32 then fail(op, 'LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.') end
  local P, L, U = torch.empty(0, { dtype = LU.dtype }), torch.empty(0, { dtype = LU.dtype }), torch.empty(0, { dtype = LU.dtype })
  if unpack_data ~= false then L, U = unpack_lu(LU) end
  if unpack_pivots ~= false then P = perm_of(pivots, LU:size(-2), LU.dtype) end
  return P, L, U
end
-- torch.lu(A, pivot=True, get_infos=False)
function M.old_lu(A, pivot, get_infos)
  local o = opts_at(pivot)
  if o then pivot, get_infos = o.pivot, o.get_infos end
  local LU, piv, info = M.lu_factor_ex(A, { pivot = pivot })
  if get_infos then return LU, piv, info end
  return LU, piv
end
local getrs_fast -- (the solve section's getrs)
-- torch.lu_solve(b, LU_data, LU_pivots): X with A X = b
function M.lu_solve(b, LU, pivots)
  local op = 'lu_solve'
  need(op, b, 'b')
  check(op, LU, true, 'LU_data')
  if not ((LU.requires_grad or b.requires_grad) and torch.is_grad_enabled()) and is_tensor(pivots)
    and pivots.dtype == torch.int32 and pivots:dim() == LU:dim() - 1 and pivots:size(-1) == LU:size(-1)
    and b:dim() >= 2 and b.dtype == LU.dtype and b:size(-2) == LU:size(-1) then
    return getrs_fast(LU, pivots, b, true, false) -- nothing to record: LAPACK's getrs
  end
  local P, L, U = M.lu_unpack(LU, pivots)
  local y = solve_triangular(L, mT(P):matmul(b), false, true, true)
  return solve_triangular(U, y, true, true, false)
end

-- torch.linalg.lu_solve(LU, pivots, B, {left=, adjoint=}): X with A X = B (left), X A = B; adjoint: A^T for A
local function lu_solve_left(LU, pivots, B, adjoint)
  local P, L, U = M.lu_unpack(LU, pivots)
  if adjoint then -- A^T X = B: U^T L^T P^T X = B
    local y = solve_triangular(mT(U), B, false, true, false)
    return P:matmul(solve_triangular(mT(L), y, true, true, true))
  end
  local y = solve_triangular(L, mT(P):matmul(B), false, true, true)
  return solve_triangular(U, y, true, true, false)
end
local linalg_lu_solve = K.node_autograd('LinalgLuSolveBackward0', function(LU, pivots, B, left, adjoint)
  if left then return lu_solve_left(LU, pivots, B, adjoint) end
  return mT(lu_solve_left(LU, pivots, mT(B), not adjoint)) -- X A = B: A^T X^T = B^T
end)
function M.linalg_lu_solve(LU, pivots, B, opts)
  local op = 'linalg.lu_solve'
  opts = opts_at(opts) or {}
  check(op, LU, true, 'LU')
  need(op, pivots, 'pivots')
  need(op, B, 'B')
  local left = bool_opt(op, 'left', opts.left, true)
  local adjoint = bool_opt(op, 'adjoint', opts.adjoint, false)
  if B:dim() < 2 then fail(op, 'The input tensor B must have at least 2 dimensions.') end
  if B.dtype ~= LU.dtype then
    fail(op, ('Expected LU and B to have the same dtype, but found LU of type %s and B of type %s instead'):format(
      dtype.scalar_type(LU.dtype), dtype.scalar_type(B.dtype)))
  end
  local n = LU:size(-1)
  if (left and B:size(-2) or B:size(-1)) ~= n then
    fail(op, ('Incompatible shapes of A and B for the equation %s (%dx%d and %dx%d)'):format(
      left and 'AX = B' or 'XA = B', n, n, B:size(-2), B:size(-1)))
  end
  -- nothing to record: LAPACK's getrs itself (the pivots checked there), else the composite that autograd follows
  if not ((LU.requires_grad or B.requires_grad) and torch.is_grad_enabled()) and pivots.dtype == torch.int32
    and pivots:dim() == LU:dim() - 1 and pivots:size(-1) == n then
    return getrs_fast(LU, pivots, B, left, adjoint)
  end
  return linalg_lu_solve(LU, pivots, B, left, adjoint)
end

-- torch.linalg.cond(A, p): S_max / S_min (p nil or 2; -2 the inverse), else norm(A, p) * norm(A^-1, p) for square
-- A (p 'fro', 'nuc', math.huge, -math.huge, 1, -1); a singular A's is inf
local cond_ps = { fro = true, nuc = true, [1] = true, [-1] = true, [huge] = true, [-huge] = true }
function M.cond(A, p)
  local op = 'linalg.cond'
  if opts_at(p) then p = p.p end
  check(op, A, false)
  if p == nil or p == 2 or p == -2 then
    local S = svdvals(op, A)
    local k = S:size(-1)
    if k == 0 then return torch.zeros(S:narrow(-1, 1, 0):sum(-1):size(), { dtype = A.dtype }) end
    local hi, lo = S:narrow(-1, 1, 1), S:narrow(-1, k, 1)
    return (p == -2 and lo / hi or hi / lo):squeeze(-1)
  end
  if not cond_ps[p] then fail(op, 'linalg.cond got an invalid norm type: ' .. shown(p)) end
  if A:size(-1) ~= A:size(-2) then
    fail(op, ('linalg.cond(ord=%s): A must be batches of square matrices, but they are %d by %d matrices'):format(
      tostring(p), A:size(-2), A:size(-1)))
  end
  local function norm(x)
    if p == 'nuc' then return svdvals(op, x):sum(-1) end
    return torch.linalg.matrix_norm(x, p)
  end
  local LU, piv, info = M.lu_factor_ex(A)
  local n = A:size(-1)
  local I = torch.eye(n, { dtype = A.dtype }):expand(sizes(A))
  local singular = info:ne(0)
  -- a singular matrix's inverse is not computed (its U has a zero on the diagonal): the identity's stands in
  local LUs = torch.where(singular:unsqueeze(-1):unsqueeze(-1), torch.eye(n, { dtype = A.dtype }), LU)
  local inv = lu_solve_left(LUs, piv, I, false)
  local r = norm(A) * norm(inv)
  return torch.where(singular, huge, r)
end

------------------------------------------------------------------------------ solve, inv, det, slogdet (getrf + getrs)
-- the broadcast of two batch shapes (tables), nil when they do not broadcast
local function broadcast_shapes(sa, sb)
  local n = max(#sa, #sb)
  local r = {}
  for i = 1, n do
    local x, y = sa[#sa - n + i] or 1, sb[#sb - n + i] or 1
    if x ~= y and x ~= 1 and y ~= 1 then return nil end
    r[i] = x == 1 and y or x
  end
  return r
end
local function batch_of(t, keep)
  local s = sizes(t)
  for _ = 1, keep do s[#s] = nil end
  return s
end
local function with(batch, ...)
  local s = { unpack(batch) }
  for i = 1, select('#', ...) do s[#s + 1] = select(i, ...) end
  return s
end
-- X with A X = B (left) or X A = B, B (..., n, k) / (..., k, n) of A's dtype, the batch dims broadcast: getrf of A
-- (its own batch), getrs of each right-hand side; the info of getrf in stash.info (A's batch shape)
-- X with A X = B (left; adjoint: A^T X = B) or X A = B (X A^T = B) from getrf's LU and pivots (getrs), the batch dims
-- of LU and B broadcast
local function getrs(LU, piv, B, left, adjoint)
  local n = LU:size(-1)
  if not left then B, adjoint = mT(B), not adjoint end -- X A = B: A^T X^T = B^T
  local batch = broadcast_shapes(batch_of(LU, 2), batch_of(B, 2))
  local k = B:size(-1)
  LU, piv, B = LU:expand(with(batch, n, n)), piv:expand(with(batch, n)), B:expand(with(batch, n, k))
  local X = raw.lu_solve(LU, piv, B, adjoint)
  if not left then X = mT(X) end
  return X
end
getrs_fast = getrs
local function solve_raw(A, B, left)
  local LU, piv, info = raw.lu_factor(A)
  stash.info = info
  return getrs(LU, piv, B, left, false)
end
-- the right-hand side is a vector (PyTorch's rule): B 1-D, or B of A's shape without its last dim
local function vector_rhs(A, B)
  if B:dim() == 1 then return true end
  if B:dim() ~= A:dim() - 1 then return false end
  for i = 1, B:dim() do if B:size(i) ~= A:size(i) then return false end end
  return true
end
-- gB = solve(A^T, gX) (the same side), gA = -gB X^T (left) or -X^T gB, each reduced to its operand's shape
local solve_node
solve_node = node1('LinalgSolveExBackward0', function(A, B, left, vec)
  local X = solve_raw(A, vec and B:unsqueeze(-1) or B, left)
  return vec and X:squeeze(-1) or X
end, function(g, A, B, left, vec)
  local X, gB
  if torch.is_grad_enabled() then -- create_graph: recorded, through this node again
    X, gB = solve_node(A, B, left, vec), solve_node(mT(A), g, left, vec)
  else -- one getrf for both: X, and gB = solve(A^T, g) by getrs's transpose
    local LU, piv = raw.lu_factor(A)
    X = getrs(LU, piv, vec and B:unsqueeze(-1) or B, left, false)
    gB = getrs(LU, piv, vec and g:unsqueeze(-1) or g, left, true)
    if vec then X, gB = X:squeeze(-1), gB:squeeze(-1) end
  end
  if vec then X, gB = X:unsqueeze(-1), gB:unsqueeze(-1) end
  local gA = left and -gB:matmul(mT(X)) or -mT(X):matmul(gB)
  if vec then gB = gB:squeeze(-1) end
  return sum_to(gA, A), sum_to(gB, B)
end)
local function solve_impl(op, A, B, opts)
  opts = opts_at(opts) or {}
  check(op, A, true)
  need(op, B, 'B')
  local left = bool_opt(op, 'left', opts.left, true)
  if B.dtype ~= A.dtype then
    fail(op, ('Expected A and B to have the same dtype, but found A of type %s and B of type %s instead'):format(
      dtype.scalar_type(A.dtype), dtype.scalar_type(B.dtype)))
  end
  local vec = vector_rhs(A, B)
  local n = A:size(-1)
  local Bm = vec and B:unsqueeze(-1) or B
  if Bm:dim() < 2 then fail(op, 'The input tensor B must have at least 2 dimensions.') end
  if (left and Bm:size(-2) or Bm:size(-1)) ~= n then
    fail(op, ('Incompatible shapes of A and B for the equation %s (%dx%d and %dx%d)'):format(left and 'AX = B' or 'XA = B',
      n, n, Bm:size(-2), Bm:size(-1)))
  end
  if not broadcast_shapes(batch_of(A, 2), batch_of(Bm, 2)) then
    fail(op, ('Incompatible shapes of A and B for the equation %s: the batch dimensions of %s and %s do not broadcast')
      :format(left and 'AX = B' or 'XA = B', shown(A), shown(B)))
  end
  local X = solve_node(A, B, left, vec)
  return X, pop('info')
end
local function singular_solve(op, info)
  local batch, code = first_failure(info)
  if code then fail(op, batch_prefix(batch) .. 'The solver failed because the input matrix is singular.') end
end
-- linalg.solve(A, B, {left=true, out=}); linalg.solve_ex(A, B, {left=, check_errors=false}): X, info
function M.solve(A, B, opts)
  local X, info = solve_impl('linalg.solve', A, B, opts)
  singular_solve('linalg.solve', info)
  return out_to('linalg.solve', opts_at(opts) and opts.out, X)
end
function M.solve_ex(A, B, opts)
  local op = 'linalg.solve_ex'
  local X, info = solve_impl(op, A, B, opts)
  if bool_opt(op, 'check_errors', opts_at(opts) and opts.check_errors, false) then singular_solve(op, info) end
  return X, info
end

-- inv(A): solve(A, I) as PyTorch's; the gradient -X^T g X^T
local inv_node
inv_node = node1('LinalgInvExBackward0', function(A)
  local n = A:size(-1)
  return solve_raw(A, torch.eye(n, { dtype = A.dtype }):expand(sizes(A)), true)
end, function(g, A)
  local Xt = mT(inv_node(A))
  return -Xt:matmul(g):matmul(Xt)
end)
local function inv_impl(op, A)
  check(op, A, true)
  local X = inv_node(A)
  return X, pop('info')
end
local function singular_inv(op, info)
  local batch, code = first_failure(info)
  if code then
    fail(op, batch_prefix(batch) .. ('The diagonal element %d is zero, the inversion could not be completed because the '
      .. 'input matrix is singular.'):format(code))
  end
end
function M.inv(A, opts)
  local X, info = inv_impl('linalg.inv', A)
  singular_inv('linalg.inv', info)
  return out_to('linalg.inv', opts_at(opts) and opts.out, X)
end
function M.inverse(A, opts)
  local X, info = inv_impl('inverse', A)
  singular_inv('inverse', info)
  return out_to('inverse', opts_at(opts) and opts.out, X)
end
function M.inv_ex(A, opts)
  local op = 'linalg.inv_ex'
  local X, info = inv_impl(op, A)
  if bool_opt(op, 'check_errors', opts_at(opts) and opts.check_errors, false) then singular_inv(op, info) end
  return X, info
end

-- det, sign and log|det| from getrf's LU: the product of U's diagonal, the permutation's sign (-1 per pivot
-- that swapped)
local function lu_det_parts(A)
  local LU, piv = raw.lu_factor(A)
  local n = A:size(-1)
  local d = LU:diagonal(0, -2, -1)
  local swaps = piv:ne(torch.arange(1, n + 1, { dtype = torch.int32 })):sum(-1)
  local psign = 1 - (swaps % 2):to(A.dtype) * 2
  return d, psign
end
-- gA = g adj(A)^T: g det A^-T for an invertible A; for a batch with a singular matrix, the cofactors by the SVD
-- (A = U S Vh: det(U) det(Vh) U diag(prod_{j ~= i} S_j) Vh, as PyTorch's)
local det_node
det_node = node1('LinalgDetBackward0', function(A)
  local d, psign = lu_det_parts(A)
  return d:prod(-1) * psign
end, function(g, A)
  local det = det_node(A)
  local n = A:size(-1)
  if n == 0 then return torch.zeros_like(A) end
  if not det:eq(0):any() then
    return (g * det):unsqueeze(-1):unsqueeze(-1) * mT(inv_node(A))
  end
  local U, S, Vh = svd(A, false)
  local I = eye_like(n, A):to(torch.bool)
  local others = torch.where(I, 1, S:unsqueeze(-2):expand(with(batch_of(S, 1), n, n))):prod(-1)
  local sgn = det_node(U) * det_node(Vh)
  local cof = (U * others:unsqueeze(-2)):matmul(Vh) * sgn:unsqueeze(-1):unsqueeze(-1)
  return g:unsqueeze(-1):unsqueeze(-1) * cof
end)
function M.det(A)
  check('linalg.det', A, true)
  return det_node(A)
end
function M.old_det(A)
  check('det', A, true, 'input')
  return det_node(A)
end
-- slogdet: sign (0 for a singular matrix) and log|det| (-inf); log|det|'s gradient g A^-T
local slogdet_node
slogdet_node = node('LinalgSlogdetBackward0', function(A)
  local d, psign = lu_det_parts(A)
  return psign * d:sign():prod(-1), d:abs():log():sum(-1)
end, function(gs, A)
  local g = gs[2]
  if g == nil then return nil end
  return g:unsqueeze(-1):unsqueeze(-1) * mT(inv_node(A))
end)
function M.slogdet(A)
  check('linalg.slogdet', A, true)
  return slogdet_node(A)
end
function M.old_slogdet(A)
  check('slogdet', A, true, 'input')
  return slogdet_node(A)
end
-- logdet: log|det| where det > 0, nan where det < 0, -inf where 0 (PyTorch's: a where over slogdet)
function M.logdet(A)
  check('logdet', A, true, 'input')
  local sign, la = slogdet_node(A)
  return torch.where(sign:lt(0), 0 / 0, la)
end

------------------------------------------------------------------------------ ldl_factor, ldl_solve (sytrf, sytrs)
-- not differentiable in PyTorch 1.13: with grad, one node whose backward is PyTorch's error
local ldl_node = node('LinalgLdlFactorExBackward0', function(A)
  local LD, piv, info = raw.ldl_factor(A)
  stash.piv, stash.info = piv, info
  return LD
end, function()
  fail('linalg.ldl_factor', 'derivative for aten::linalg_ldl_factor_ex is not implemented')
end)
local function ldl_impl(op, A, hermitian, check_errors)
  check(op, A, true)
  bool_opt(op, 'hermitian', hermitian, false) -- (real matrices: symmetric and Hermitian are one)
  local LD = ldl_node(A)
  local piv, info = pop('piv'), pop('info')
  if check_errors then
    local batch, code = first_failure(info)
    if code then
      fail(op, batch_prefix(batch) .. ('The factorization could not be completed because the input matrix is singular '
        .. '(D[%d,%d] is exactly zero).'):format(code, code))
    end
  end
  return LD, piv, info
end
-- linalg.ldl_factor_ex(A, {hermitian=false, check_errors=false}): LD, pivots, info; linalg.ldl_factor: LD, pivots,
-- the singular case an error (PyTorch 1.13 raises an internal assertion there)
function M.ldl_factor_ex(A, opts)
  local op = 'linalg.ldl_factor_ex'
  opts = opts_at(opts) or {}
  return ldl_impl(op, A, opts.hermitian, bool_opt(op, 'check_errors', opts.check_errors, false))
end
function M.ldl_factor(A, opts)
  opts = opts_at(opts) or {}
  local LD, piv = ldl_impl('linalg.ldl_factor', A, opts.hermitian, true)
  return LD, piv
end
-- linalg.ldl_solve(LD, pivots, B, {hermitian=false}): X with A X = B (sytrs), the batch dims broadcast; not recorded
function M.ldl_solve(LD, pivots, B, opts)
  local op = 'linalg.ldl_solve'
  opts = opts_at(opts) or {}
  check(op, LD, true, 'LD')
  need(op, pivots, 'pivots')
  need(op, B, 'B')
  bool_opt(op, 'hermitian', opts.hermitian, false)
  if B:dim() < 2 then fail(op, 'The input tensor B must have at least 2 dimensions.') end
  if B.dtype ~= LD.dtype then
    fail(op, ('Expected b and A to have the same dtype, but found b of type %s and A of type %s instead.'):format(
      dtype.scalar_type(B.dtype), dtype.scalar_type(LD.dtype)))
  end
  if pivots.dtype ~= torch.int32 and pivots.dtype ~= torch.int64 then
    fail(op, 'pivots must be an integer tensor (int32, as ldl_factor gives), got ' .. tostring(pivots.dtype))
  end
  local n = LD:size(-1)
  if B:size(-2) ~= n then
    fail(op, ('Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is %d by %d but each b matrix is %d '
      .. 'by %d'):format(n, n, B:size(-2), B:size(-1)))
  end
  if pivots:dim() ~= LD:dim() - 1 or pivots:size(-1) ~= n then
    fail(op, ('pivots of shape %s do not go with LD of shape %s'):format(shown(pivots), shown(LD)))
  end
  local batch = broadcast_shapes(batch_of(LD, 2), batch_of(B, 2))
  if not batch then
    fail(op, ('the batch dimensions of LD %s and B %s do not broadcast'):format(shown(LD), shown(B)))
  end
  local k = B:size(-1)
  local piv = pivots.dtype == torch.int32 and pivots or pivots:to(torch.int32)
  return raw.ldl_solve(LD:expand(with(batch, n, n)), piv:expand(with(batch, n)), B:expand(with(batch, n, k)))
end

------------------------------------------------------------------------------ cholesky_solve, cholesky_inverse
local function cs_raw(B, L, upper)
  if upper then L = mT(L) end
  local y = solve_triangular(L, B, false, true, false)
  return solve_triangular(mT(L), y, true, true, false)
end
local cholesky_solve = K.node_autograd('CholeskySolveBackward0', cs_raw)
function M.cholesky_solve(B, L, upper)
  local op = 'cholesky_solve'
  if opts_at(upper) then upper = upper.upper end
  upper = bool_opt(op, 'upper', upper, false)
  need(op, B, 'input')
  check(op, L, true, 'input2')
  if B:dim() < 2 then fail(op, 'b should have at least 2 dimensions, but has ' .. B:dim() .. ' dimensions instead') end
  if B.dtype ~= L.dtype then
    fail(op, ('Expected b and A to have the same dtype, but found b of type %s and A of type %s instead.'):format(
      dtype.scalar_type(B.dtype), dtype.scalar_type(L.dtype)))
  end
  if B:size(-2) ~= L:size(-1) then
    fail(op, ('Incompatible matrix sizes for cholesky_solve: each A matrix is %d by %d but each b matrix is %d by %d')
      :format(L:size(-2), L:size(-1), B:size(-2), B:size(-1)))
  end
  return cholesky_solve(B, L, upper)
end
local cholesky_inverse = K.node_autograd('CholeskyInverseBackward0', function(L, upper)
  local n = L:size(-1)
  local I = torch.eye(n, { dtype = L.dtype }):expand(sizes(L))
  return cs_raw(I, L, upper)
end)
function M.cholesky_inverse(L, upper)
  local op = 'cholesky_inverse'
  if opts_at(upper) then upper = upper.upper end
  upper = bool_opt(op, 'upper', upper, false)
  check(op, L, true, 'input')
  return cholesky_inverse(L, upper)
end
-- torch.triangular_solve(b, A, upper=True, transpose=False, unitriangular=False): solution, a copy of A
function M.triangular_solve(b, A, upper, transpose, unitriangular)
  local op = 'triangular_solve'
  local o = opts_at(upper)
  if o then upper, transpose, unitriangular = o.upper, o.transpose, o.unitriangular end
  upper = bool_opt(op, 'upper', upper, true)
  transpose = bool_opt(op, 'transpose', transpose, false)
  unitriangular = bool_opt(op, 'unitriangular', unitriangular, false)
  need(op, b, 'self')
  check(op, A, true, 'A')
  local At = A
  if transpose then At, upper = mT(A), not upper end
  return solve_triangular(At, b, upper, true, unitriangular), A:clone()
end

------------------------------------------------------------------------------ installation
-- torch.linalg's table (made by lua/ops/linalg.lua's composed.install, which calls this), torch's old
-- spellings and the Tensor methods, each where the name is not taken
function M.install(tt, linalg)
  torch = tt
  local L = {
    cholesky = M.cholesky, cholesky_ex = M.cholesky_ex, solve_triangular = M.solve_triangular, qr = M.qr,
    eigh = M.eigh, eigvalsh = M.eigvalsh, svd = M.svd, svdvals = M.svdvals, lstsq = M.lstsq, pinv = M.pinv,
    matrix_rank = M.matrix_rank, lu_factor = M.lu_factor, lu_factor_ex = M.lu_factor_ex, lu = M.lu,
    lu_solve = M.linalg_lu_solve, cond = M.cond, solve = M.solve, solve_ex = M.solve_ex, inv = M.inv, inv_ex = M.inv_ex,
    det = M.det, slogdet = M.slogdet, ldl_factor = M.ldl_factor, ldl_factor_ex = M.ldl_factor_ex, ldl_solve = M.ldl_solve,
  }
  for k, v in pairs(L) do if linalg[k] == nil then linalg[k] = v end end
  local fns = {
    cholesky = M.old_cholesky, qr = M.old_qr, svd = M.old_svd, pinverse = M.pinverse, lu = M.old_lu,
    lu_unpack = M.lu_unpack, lu_solve = M.lu_solve, cholesky_solve = M.cholesky_solve,
    cholesky_inverse = M.cholesky_inverse, triangular_solve = M.triangular_solve, symeig = M.symeig,
    geqrf = M.geqrf, orgqr = M.orgqr, ormqr = M.ormqr, det = M.old_det, slogdet = M.old_slogdet, logdet = M.logdet,
    inverse = M.inverse,
  }
  for k, v in pairs(fns) do if torch[k] == nil then torch[k] = v end end
  for _, k in ipairs { 'cholesky', 'qr', 'svd', 'pinverse', 'lu', 'lu_solve', 'cholesky_solve', 'cholesky_inverse',
    'triangular_solve', 'symeig', 'geqrf', 'orgqr', 'ormqr', 'det', 'slogdet', 'logdet', 'inverse' } do
    if methods[k] == nil then methods[k] = fns[k] end
  end
end

return M
