-- spec/linalg_decomp_spec.lua: torch.linalg's decompositions by LAPACK (lua/ops/decomp.lua, core/ops/lapack.c,
-- core/tensor/lapack.c): cholesky, solve_triangular, qr, eigh, svd, lstsq, pinv, matrix_rank, lu, and the
-- older torch.* spellings.
--
-- Expected values (REF below) were recorded from PyTorch 1.13 (/usr/bin/python3) with the matrices written
-- here: `torch.linalg.cholesky(A)`, `torch.linalg.qr(M)`, ... in float64, printed with .tolist(); the
-- gradients (G_*) by `x.requires_grad_(); f(x).backward(); x.grad` for the losses written beside each case
-- (the same losses are computed here). Error messages were taken from the same PyTorch. Larger and batched
-- inputs are checked by invariants (A = L L^T, Q R, U diag(S) Vh, A V = V diag(w), orthonormality).
local H = require 'spec.support.helper'
local torch = H.torch

local f64 = { dtype = torch.float64 }
local function t64(v) return torch.tensor(v, f64) end
local function mT(x) return x:transpose(-2, -1) end
local function close(a, b, tol) return H.near(a, b, tol or 1e-9, tol or 1e-9) end
-- a random symmetric positive-definite batch
local function spd(shape, dt)
  local n = shape[#shape]
  local X = torch.randn(shape, { dtype = dt or torch.float64 })
  return X:matmul(mT(X)) + torch.eye(n, { dtype = dt or torch.float64 }) * n
end
local function eye(n, dt) return torch.eye(n, { dtype = dt or torch.float64 }) end

local A = t64 { { 4, 2, 0.6 }, { 2, 5, 1 }, { 0.6, 1, 3 } }
local M = t64 { { 1, 2 }, { 3, 4 }, { 5, 7 } }
local Tl = t64 { { 2, 0, 0 }, { 1, 3, 0 }, { -1, 0.5, 4 } }
local Bm = t64 { { 1, 2 }, { 3, 4 }, { 5, 6 } }
local G = t64 { { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 10 } }
local W = t64 { { 0.3, -1.2, 0.7 }, { 0.5, 0.1, -0.4 }, { 1.1, 0.9, 0.2 } }
local W2 = t64 { { 0.3, -1.2 }, { 0.5, 0.1 }, { 1.1, 0.9 } }

-- recorded from PyTorch 1.13 (see the top)
local REF = {
  chol = { { 2.0, 0.0, 0.0 }, { 1.0, 2.0, 0.0 }, { 0.3, 0.35, 1.6695807857064 } },
  cholU = { { 2.0, 1.0, 0.3 }, { 0.0, 2.0, 0.35 }, { 0.0, 0.0, 1.6695807857064 } },
  f32chol = { { 2.0, 0.0, 0.0 }, { 1.0, 2.0, 0.0 }, { 0.30000001192092896, 0.3499999940395355, 1.6695806980133057 } },
  qrQ = { { -0.16903085094570325, 0.9486832980505133 }, { -0.50709255283711, -0.31622776601683833 }, { -0.8451542547285166, 2.3208668709370606e-16 } },
  qrR = { { -5.916079783099616, -8.282511696339462 }, { 0.0, 0.6324555320336759 } },
  qrQc = { { -0.16903085094570325, 0.9486832980505133, -0.26726124191242506 }, { -0.50709255283711, -0.31622776601683833, -0.8017837257372729 }, { -0.8451542547285166, 2.3208668709370606e-16, 0.5345224838248488 } },
  qrRc = { { -5.916079783099616, -8.282511696339462 }, { 0.0, 0.6324555320336759 }, { 0.0, 0.0 } },
  qrQw = { { -0.44721359549995787, -0.8944271909999157 }, { -0.8944271909999157, 0.4472135954999581 } },
  qrRw = { { -2.23606797749979, -4.919349550499537, -8.497058314499197 }, { 0.0, -0.8944271909999153, -1.341640786499871 } },
  eighw = { 2.3724689848089806, 2.7225082073229028, 6.905022807868116 },
  eighV = { { -0.6395061503940452, -0.5013667246014896, -0.582806392441404 }, { 0.6456215540598845, 0.06132834139402199, -0.7611909375939513 }, { -0.41737835658008093, 0.8630586550195953, -0.28447331237618506 } },
  svdU = { { -0.2167838956617988, 0.9389228781711104 }, { -0.4904541352657366, -0.3414639048912723 }, { -0.8440731507295044, -0.04273441825135222 } },
  svdS = { 10.191428257097224, 0.3671376859438993 },
  svdVh = { { -0.5797530930948657, -0.814792213418204 }, { -0.814792213418204, 0.5797530930948657 } },
  stL = { { 0.5, 1.0 }, { 0.8333333333333333, 1.0 }, { 1.2708333333333333, 1.625 } },
  stU = { { 0.7291666666666667, 1.2083333333333335 }, { 0.7916666666666666, 1.0833333333333333 }, { 1.25, 1.5 } },
  stR = { { 0.7291666666666667, 0.7916666666666666, 1.25 }, { 1.2083333333333335, 1.0833333333333333, 1.5 } },
  stUnit = { { 1.0, 2.0 }, { 2.0, 2.0 }, { 5.0, 7.0 } },
  lsX = { { -0.21428571428571333 }, { 0.4999999999999992 } },
  lsRes = { 0.6428571428571429 },
  lsS = { 10.191428257097224, 0.36713768594389923 },
  pinv = { { -2.0714285714285703, 0.7857142857142865, 0.14285714285714235 }, { 1.4999999999999991, -0.5000000000000006, 3.556069936635525e-16 } },
  pinvRk = { { -0.033333333333333964, -0.06666666666666653, 0.833333333333334 }, { 0.06666666666666717, 0.13333333333333314, -0.6666666666666666 }, { 0.033333333333333236, 0.06666666666666668, 0.16666666666666669 } },
  LU = { { 7.0, 8.0, 10.0 }, { 0.14285714285714285, 0.8571428571428572, 1.5714285714285716 }, { 0.5714285714285714, 0.5000000000000002, -0.5 } },
  piv = { 3, 3, 3 },
  P = { { 0.0, 1.0, 0.0 }, { 0.0, 0.0, 1.0 }, { 1.0, 0.0, 0.0 } },
  L = { { 1.0, 0.0, 0.0 }, { 0.14285714285714285, 1.0, 0.0 }, { 0.5714285714285714, 0.5000000000000002, 1.0 } },
  U = { { 7.0, 8.0, 10.0 }, { 0.0, 0.8571428571428572, 1.5714285714285716 }, { 0.0, 0.0, -0.5 } },
  csolve = { { -0.16143497757847533, 0.008968609865470822 }, { 0.3479820627802691, 0.4251121076233184 }, { 1.5829596412556053, 1.8565022421524664 } },
  cinv = { { 0.31390134529147984, -0.1210762331838565, -0.022421524663677125 }, { -0.1210762331838565, 0.2609865470852018, -0.06278026905829596 }, { -0.022421524663677125, -0.06278026905829596, 0.3587443946188341 } },
  lusolve = { { 0.3333333333333327, -0.6666666666666663 }, { 0.333333333333335, 1.333333333333333 }, { -8.881784197001252e-16, -0.0 } },
  -- gradients: (cholesky(A) * W).sum()
  g_chol = { { 0.0016402159172795028, 0.09909260456838254, 0.15875654532352826 }, { 0.09909260456838256, -0.012540707208528838, 0.2145183269058791 }, { 0.1587565453235283, 0.2145183269058791, 0.059895274823547985 } },
  -- (eigh(A)[1].abs() * W).sum() + (eigh(A)[0] * [1, 2, 3]).sum()
  g_eigh = { { 1.7888988544592197, 1.07666662584713, 0.029529046576238394 }, { 1.07666662584713, 2.039750390245464, 0.1610264144144954 }, { 0.029529046576238366, 0.16102641441449528, 2.1713507552953213 } },
  -- (qr(M)[0] * W2).sum() + qr(M)[1].sum()
  g_qr = { { -1.2847315974041984, 0.474718529874286 }, { 1.303930819338705, -1.7381220705455158 }, { -1.7086281287423049, -0.2352864202674717 } },
  -- (svd(M, full_matrices=False)[0].abs() * W2).sum() + svd(M)[1].sum()
  g_svd = { { -0.6286530382723042, 0.838179256888975 }, { 0.3913837493909669, 0.2664904484562804 }, { 0.6170228229237467, 0.5979476158455315 } },
  -- (pinv(M) * W2.T).sum()
  g_pinv = { { -3.6530612244897944, 2.8071428571428383 }, { 3.0051020408163303, -2.2285714285714233 }, { -1.058163265306117, 0.7357142857142829 } },
  -- lstsq(M, b).solution.sum(), b = [[1], [2], [2]]
  g_lstsq_A = { { 0.1836734694, 0.0714285714 }, { 0.9795918367, -0.7857142857 }, { -0.5816326531, 0.3571428571 } },
  g_lstsq_b = { { -0.5714285714 }, { 0.2857142857 }, { 0.1428571429 } },
  -- (solve_triangular(Tl, Bm, upper=False) * W2).sum()
  g_st_A = { { 0.3718750000, 0, 0 }, { -0.0562500000, -0.0965277778, 0 }, { -0.3625000000, -0.4541666667, -0.7151041667 } },
  g_st_B = { { 0.2270833333, -0.4854166667 }, { 0.1208333333, -0.0041666667 }, { 0.2750000000, 0.2250000000 } },
  -- (lu(G)[1] * W).sum() + (lu(G)[2] * W.T).sum()
  g_lu = { { -0.7952380952380947, -0.2416666666666668, 0.7999999999999999 }, { -0.9095238095238094, 0.6833333333333331, 0.2 }, { 0.9333333333333333, 0.1440476190476193, 0.8714285714285714 } },
  -- (lu_factor(G)[0] * W).sum()
  g_luf = { { 1.0619047619047621, -0.2416666666666667, -0.5000000000000001 }, { -0.9095238095238093, 0.6833333333333331, 0.2 }, { 0.6680272108843536, -1.5559523809523805, 0.657142857142857 } },
}

local function grad_of(f, ...)
  local xs = { ... }
  for i, x in ipairs(xs) do xs[i] = x:clone():requires_grad_() end
  f(unpack(xs)):backward()
  local gs = {}
  for i, x in ipairs(xs) do gs[i] = x.grad end
  return unpack(gs)
end

describe('linalg.cholesky', function()
  it('matches PyTorch, lower and upper, float64 and float32', function()
    close(torch.linalg.cholesky(A), REF.chol)
    close(torch.linalg.cholesky(A, { upper = true }), REF.cholU)
    local L32 = torch.linalg.cholesky(A:float())
    assert.are.equal(torch.float32, L32.dtype)
    H.near(L32, REF.f32chol, 1e-6, 1e-6)
    close(torch.cholesky(A), REF.chol)
    close(torch.cholesky(A, true), REF.cholU)
    close(A:cholesky(), REF.chol)
  end)
  it('reads only the lower (upper) triangle', function()
    local B = A:clone()
    B[1][3] = 100 -- the upper triangle
    close(torch.linalg.cholesky(B), REF.chol)
    local C = A:clone()
    C[3][1] = 100
    close(torch.linalg.cholesky(C, { upper = true }), REF.cholU)
  end)
  it('batched: A = L L^T, L lower, float32 and float64', function()
    torch.manual_seed(1)
    for _, dt in ipairs { torch.float64, torch.float32 } do
      local S = spd({ 2, 3, 5, 5 }, dt)
      local L = torch.linalg.cholesky(S)
      assert.are.same({ 2, 3, 5, 5 }, H.shape(L))
      assert.are.equal(dt, L.dtype)
      local tol = dt == torch.float64 and 1e-10 or 1e-4
      H.near(L:matmul(mT(L)), S, tol, tol)
      H.near(L:triu(1), torch.zeros(2, 3, 5, 5), 0, 0)
      local U = torch.linalg.cholesky(S, { upper = true })
      H.near(mT(U):matmul(U), S, tol, tol)
    end
  end)
  it('transposed and sliced inputs', function()
    torch.manual_seed(2)
    local S = spd({ 6, 6 })
    close(torch.linalg.cholesky(mT(S)), torch.linalg.cholesky(S:contiguous()))
    local big = spd({ 4, 4 })
    local sub = big:narrow(1, 1, 3):narrow(2, 1, 3)
    close(torch.linalg.cholesky(sub), torch.linalg.cholesky(sub:contiguous()))
  end)
  it('empty and 1x1', function()
    assert.are.same({ 0, 0 }, H.shape(torch.linalg.cholesky(torch.zeros(0, 0))))
    assert.are.same({ 3, 0, 0 }, H.shape(torch.linalg.cholesky(torch.zeros(3, 0, 0))))
    assert.are.same({ 0, 2, 2 }, H.shape(torch.linalg.cholesky(torch.zeros(0, 2, 2))))
    close(torch.linalg.cholesky(t64 { { 9 } }), { { 3 } })
  end)
  it("errors as PyTorch's", function()
    local np = t64 { { 1, 2 }, { 2, 1 } }
    H.errors_with(function() torch.linalg.cholesky(np) end, 'linalg.cholesky: The factorization could not be completed '
      .. 'because the input is not positive-definite (the leading minor of order 2 is not positive-definite).')
    H.errors_with(function() torch.cholesky(np) end, 'cholesky: The factorization could not be completed')
    local batch = torch.stack { t64 { { 4, 0 }, { 0, 4 } }, np }
    H.errors_with(function() torch.linalg.cholesky(batch) end, '(Batch element 2): The factorization could not be completed')
    H.errors_with(function() torch.linalg.cholesky(torch.ones(2, 3)) end,
      'linalg.cholesky: A must be batches of square matrices, but they are 2 by 3 matrices')
    H.errors_with(function() torch.linalg.cholesky(torch.ones(3)) end,
      'linalg.cholesky: The input tensor A must have at least 2 dimensions.')
    H.errors_with(function() torch.linalg.cholesky(torch.ones(2, 2, { dtype = torch.int64 })) end,
      'linalg.cholesky: Expected a floating point or complex tensor as input. Got Long')
    H.errors_with(function() torch.linalg.cholesky('x') end, 'linalg.cholesky')
  end)
  it('cholesky_ex: info instead of an error', function()
    local L, info = torch.linalg.cholesky_ex(t64 { { 1, 2 }, { 2, 1 } })
    assert.are.equal(torch.int32, info.dtype)
    assert.are.equal(0, info:dim())
    assert.are.equal(2, info:item())
    assert.are.same({ 2, 2 }, H.shape(L))
    local L2, info2 = torch.linalg.cholesky_ex(A)
    close(L2, REF.chol)
    assert.are.equal(0, info2:item())
    local _, infos = torch.linalg.cholesky_ex(torch.stack { A, -A, A })
    assert.are.same({ 0, 1, 0 }, infos:tolist())
    H.errors_with(function() torch.linalg.cholesky_ex(-A, { check_errors = true }) end,
      'linalg.cholesky_ex: The factorization could not be completed because the input is not positive-definite '
      .. '(the leading minor of order 1 is not positive-definite).')
  end)
  it('gradient as PyTorch 1.13 (LinalgCholeskyExBackward0), gradcheck', function()
    local gA = grad_of(function(a) return (torch.linalg.cholesky(a) * W):sum() end, A)
    close(gA, REF.g_chol, 1e-8)
    local Ar = A:clone():requires_grad_()
    assert.are.equal('LinalgCholeskyExBackward0', torch.linalg.cholesky(Ar).grad_fn:name())
    assert.are.equal('LinalgCholeskyExBackward0', torch.linalg.cholesky_ex(Ar).grad_fn:name())
    assert.are.equal('CholeskyBackward0', torch.cholesky(Ar).grad_fn:name())
    torch.manual_seed(3)
    local X = torch.randn(2, 3, 3, f64):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(x)
      return torch.linalg.cholesky(x:matmul(mT(x)) + eye(3))
    end, { X }))
    assert.is_true(torch.autograd.gradcheck(function(x)
      return torch.linalg.cholesky(x:matmul(mT(x)) + eye(3), { upper = true })
    end, { X }))
    assert.is_true(torch.autograd.gradgradcheck(function(x)
      return torch.linalg.cholesky(x:matmul(mT(x)) + eye(3))
    end, { X:narrow(1, 1, 1):detach():requires_grad_() }))
  end)
end)

describe('linalg.solve_triangular', function()
  it('matches PyTorch: lower, upper, right side, unitriangular', function()
    close(torch.linalg.solve_triangular(Tl, Bm, { upper = false }), REF.stL)
    close(torch.linalg.solve_triangular(mT(Tl), Bm, { upper = true }), REF.stU)
    close(torch.linalg.solve_triangular(Tl, mT(Bm), { upper = false, left = false }), REF.stR)
    close(torch.linalg.solve_triangular(Tl, Bm, { upper = false, unitriangular = true }), REF.stUnit)
  end)
  it("B of another dtype: the result has A's dtype, as PyTorch's", function()
    local X = torch.linalg.solve_triangular(Tl:float(), Bm, { upper = false })
    assert.are.equal(torch.float32, X.dtype)
    H.near(X, REF.stL, 1e-6, 1e-6)
    assert.are.equal(torch.float64, torch.linalg.solve_triangular(Tl, Bm:float(), { upper = false }).dtype)
  end)
  it('does not read the other triangle', function()
    local T2 = Tl:clone()
    T2[1][3] = 1e6
    close(torch.linalg.solve_triangular(T2, Bm, { upper = false }), REF.stL)
  end)
  it('broadcasts batch dims, float32', function()
    torch.manual_seed(4)
    local Ab = torch.randn(2, 1, 4, 4):tril() + eye(4, torch.float32) * 4
    local B = torch.randn(3, 4, 2)
    local X = torch.linalg.solve_triangular(Ab, B, { upper = false })
    assert.are.same({ 2, 3, 4, 2 }, H.shape(X))
    assert.are.equal(torch.float32, X.dtype)
    H.near(Ab:matmul(X), B:expand(2, 3, 4, 2), 1e-4, 1e-4)
    local Xr = torch.linalg.solve_triangular(Ab, mT(B), { upper = false, left = false })
    H.near(Xr:matmul(Ab), mT(B):expand(2, 3, 2, 4), 1e-4, 1e-4)
  end)
  it('errors', function()
    H.errors_with(function() torch.linalg.solve_triangular(eye(2), torch.ones(3, 1, f64), { upper = true }) end,
      'linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B (2x2 and 3x1)')
    H.errors_with(function() torch.linalg.solve_triangular(eye(2), torch.ones(2, 1, f64)) end, 'upper')
    H.errors_with(function() torch.linalg.solve_triangular(torch.ones(2, 3, f64), torch.ones(2, 1, f64), { upper = true }) end,
      'A must be batches of square matrices')
  end)
  it('empty', function()
    assert.are.same({ 3, 0 }, H.shape(torch.linalg.solve_triangular(eye(3), torch.zeros(3, 0, f64), { upper = true })))
    assert.are.same({ 0, 2 }, H.shape(torch.linalg.solve_triangular(eye(0), torch.zeros(0, 2, f64), { upper = true })))
  end)
  it('gradient as PyTorch 1.13 (LinalgSolveTriangularBackward0), gradcheck', function()
    local gA, gB = grad_of(function(a, b) return (torch.linalg.solve_triangular(a, b, { upper = false }) * W2):sum() end, Tl, Bm)
    close(gA, REF.g_st_A, 1e-8)
    close(gB, REF.g_st_B, 1e-8)
    local Ar = Tl:clone():requires_grad_()
    assert.are.equal('LinalgSolveTriangularBackward0', torch.linalg.solve_triangular(Ar, Bm, { upper = false }).grad_fn:name())
    torch.manual_seed(5)
    local Ab = (torch.randn(2, 3, 3, f64) + eye(3) * 3):requires_grad_()
    local B = torch.randn(2, 3, 2, f64):requires_grad_()
    for _, o in ipairs { { upper = false }, { upper = true }, { upper = true, left = false }, { upper = false, unitriangular = true } } do
      assert.is_true(torch.autograd.gradcheck(function(a, b)
        return torch.linalg.solve_triangular(a, o.left == false and mT(b) or b, o)
      end, { Ab, B }))
    end
    -- broadcast B: its gradient summed back
    local b1 = torch.randn(3, 2, f64):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(a, b) return torch.linalg.solve_triangular(a, b, { upper = true }) end, { Ab, b1 }))
  end)
end)

describe('linalg.qr', function()
  it('matches PyTorch: reduced, complete, r, wide', function()
    local Q, R = torch.linalg.qr(M)
    close(Q, REF.qrQ)
    close(R, REF.qrR)
    Q, R = torch.linalg.qr(M, 'complete')
    close(Q, REF.qrQc)
    close(R, REF.qrRc)
    Q, R = torch.linalg.qr(M, { mode = 'r' })
    assert.are.same({ 0 }, H.shape(Q))
    close(R, REF.qrR)
    Q, R = torch.linalg.qr(mT(M))
    close(Q, REF.qrQw)
    close(R, REF.qrRw)
    Q, R = torch.qr(M)
    close(Q, REF.qrQ)
    Q, R = M:qr(false)
    close(Q, REF.qrQc)
  end)
  it('batched invariants, float32 and float64', function()
    torch.manual_seed(6)
    for _, dt in ipairs { torch.float64, torch.float32 } do
      local tol = dt == torch.float64 and 1e-10 or 1e-4
      for _, shape in ipairs { { 2, 5, 3 }, { 2, 3, 5 }, { 4, 4 } } do
        local X = torch.randn(shape, { dtype = dt })
        local Q, R = torch.linalg.qr(X)
        local k = math.min(shape[#shape - 1], shape[#shape])
        H.near(Q:matmul(R), X, tol, tol)
        H.near(mT(Q):matmul(Q), eye(k, dt):expand(Q:size(-1) == k and mT(Q):matmul(Q):size() or nil), tol, tol)
        H.near(R:tril(-1), torch.zeros(R:size()), 0, 0)
        local Qc, Rc = torch.linalg.qr(X, 'complete')
        H.near(Qc:matmul(Rc), X, tol, tol)
        local m = shape[#shape - 1]
        H.near(mT(Qc):matmul(Qc), eye(m, dt):expand(mT(Qc):matmul(Qc):size()), tol, tol)
      end
    end
  end)
  it('empty and 1x1', function()
    local Q, R = torch.linalg.qr(torch.zeros(3, 0, f64))
    assert.are.same({ 3, 0 }, H.shape(Q))
    assert.are.same({ 0, 0 }, H.shape(R))
    Q, R = torch.linalg.qr(torch.zeros(3, 0, f64), 'complete')
    close(Q, eye(3))
    assert.are.same({ 3, 0 }, H.shape(R))
    Q, R = torch.linalg.qr(t64 { { -2 } })
    close(Q:matmul(R), { { -2 } })
    close(Q:abs(), { { 1 } })
  end)
  it('errors', function()
    H.errors_with(function() torch.linalg.qr(torch.ones(3)) end, 'linalg.qr: The input tensor A must have at least 2 dimensions.')
    H.errors_with(function() torch.linalg.qr(torch.ones(2, 2), 'x') end,
      "qr received unrecognized mode 'x' but expected one of 'reduced' (default), 'r', or 'complete'")
  end)
  it('gradient as PyTorch 1.13 (LinalgQrBackward0), gradcheck tall, square, wide', function()
    local gM = grad_of(function(a)
      local Q, R = torch.linalg.qr(a)
      return (Q * W2):sum() + R:sum()
    end, M)
    close(gM, REF.g_qr, 1e-8)
    local Mr = M:clone():requires_grad_()
    local Q, R = torch.linalg.qr(Mr)
    assert.are.equal('LinalgQrBackward0', Q.grad_fn:name())
    assert.are.equal('LinalgQrBackward0', R.grad_fn:name())
    torch.manual_seed(7)
    for _, shape in ipairs { { 4, 3 }, { 3, 3 }, { 2, 4, 2 }, { 2, 4 } } do
      local X = torch.randn(shape, f64):requires_grad_()
      assert.is_true(torch.autograd.gradcheck(function(x)
        local q, r = torch.linalg.qr(x)
        return q, r
      end, { X }), table.concat(shape, 'x'))
    end
    local X = torch.randn(3, 3, f64):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(x) return torch.linalg.qr(x, 'complete') end, { X }))
    H.errors_with(function()
      local _, r = torch.linalg.qr(torch.randn(3, 2, f64):requires_grad_(), 'r')
      r:sum():backward()
    end, "The derivative of linalg.qr depends on Q, which is not computed when mode='r'")
  end)
end)

describe('geqrf, orgqr, ormqr', function()
  -- PyTorch 1.13: a, tau = torch.geqrf(M); torch.ormqr(a, tau, O), (..., transpose=True), (a, tau, O.T, left=False)
  it('match PyTorch', function()
    local a, tau = torch.geqrf(M)
    close(a, { { -5.916079783099616, -8.282511696339462 }, { 0.4337717455676132, 0.6324555320336759 }, { 0.7229529092793553, 0.3969656540625643 } })
    close(tau, { 1.1690308509457032, 1.7277397762030497 })
    close(torch.orgqr(a, tau), REF.qrQ)
    local O = t64 { { 1, 0 }, { 2, 1 }, { 0, 3 } }
    close(torch.ormqr(a, tau, O), { { 1.7283357451553236, 0.14689957231323775 }, { -1.1395480848707864, -2.7215789432286566 }, { -0.8451542547285159, 1.6035674514745466 } })
    close(torch.ormqr(a, tau, O, true, true), { { -1.183215956619923, -3.0425553170226594 }, { 0.31622776601683666, -0.3162277660168376 }, { -1.8708286933869709, 0.8017837257372735 } })
    close(a:ormqr(tau, mT(O), { left = false }), { { -1.1832159566199232, 0.316227766016837, -1.8708286933869709 }, { -3.0425553170226594, -0.3162277660168373, 0.8017837257372734 } })
    local a3, tau3 = torch.geqrf(torch.stack { M, M * 2 }:float())
    assert.are.same({ 2, 3, 2 }, H.shape(a3))
    assert.are.same({ 2, 2 }, H.shape(tau3))
    assert.are.equal(torch.float32, a3.dtype)
  end)
end)

describe('linalg.eigh', function()
  it('matches PyTorch: ascending eigenvalues, eigenvectors', function()
    local w, V = torch.linalg.eigh(A)
    close(w, REF.eighw)
    close(V, REF.eighV)
    close(torch.linalg.eigvalsh(A), REF.eighw)
    -- UPLO='U' reads the upper triangle
    local B = A:clone()
    B[3][1] = 100
    close(torch.linalg.eigh(B, 'U'), REF.eighw)
    close(torch.linalg.eigvalsh(B, { UPLO = 'U' }), REF.eighw)
  end)
  it("torch.symeig (1.13's older spelling): the upper triangle, eigenvectors only when asked", function()
    -- PyTorch 1.13: A[2, 0] = 100; torch.symeig(A, eigenvectors=True)
    local B = A:clone()
    B[3][1] = 100
    local w, V = torch.symeig(B, true)
    close(w, { 2.3724689848089815, 2.7225082073229023, 6.90502280786812 })
    close(V, { { 0.6395061503940443, 0.5013667246014902, 0.5828063924414036 }, { -0.6456215540598841, -0.06132834139402295, 0.7611909375939515 }, { 0.41737835658008204, -0.8630586550195947, 0.28447331237618473 } })
    local w2, V2 = B:symeig()
    close(w2, w)
    assert.are.same({ 0 }, H.shape(V2))
    assert.are.equal('SymeigBackward0', torch.symeig(A:clone():requires_grad_(), true).grad_fn:name())
  end)
  it('batched invariants: A V = V diag(w), V orthonormal, ascending; float32', function()
    torch.manual_seed(8)
    for _, dt in ipairs { torch.float64, torch.float32 } do
      local tol = dt == torch.float64 and 1e-9 or 1e-3
      local X = torch.randn(3, 2, 5, 5, { dtype = dt })
      local S = X + mT(X)
      local w, V = torch.linalg.eigh(S)
      assert.are.equal(dt, w.dtype)
      H.near(S:matmul(V), V * w:unsqueeze(-2), tol, tol)
      H.near(mT(V):matmul(V), eye(5, dt):expand(3, 2, 5, 5), tol, tol)
      local d = w:narrow(-1, 2, 4) - w:narrow(-1, 1, 4)
      assert.is_true(d:ge(0):all())
    end
  end)
  it('empty and 1x1', function()
    local w, V = torch.linalg.eigh(torch.zeros(2, 0, 0, f64))
    assert.are.same({ 2, 0 }, H.shape(w))
    assert.are.same({ 2, 0, 0 }, H.shape(V))
    w, V = torch.linalg.eigh(t64 { { -3 } })
    close(w, { -3 })
    close(V:abs(), { { 1 } })
  end)
  it('errors', function()
    H.errors_with(function() torch.linalg.eigh(torch.ones(2, 3)) end, 'linalg.eigh: A must be batches of square matrices, but they are 2 by 3 matrices')
    H.errors_with(function() torch.linalg.eigh(torch.ones(2, 2), 'X') end, "Expected UPLO argument to be 'L' or 'U', but got X")
    H.errors_with(function() torch.linalg.eigvalsh(torch.ones(2, 2, { dtype = torch.int32 })) end, 'Got Int')
  end)
  it('gradient as PyTorch 1.13 (LinalgEighBackward0, symmetric), gradcheck', function()
    local gA = grad_of(function(a)
      local w, V = torch.linalg.eigh(a)
      return (V:abs() * W):sum() + (w * t64 { 1, 2, 3 }):sum()
    end, A)
    close(gA, REF.g_eigh, 1e-8)
    local Ar = A:clone():requires_grad_()
    local w, V = torch.linalg.eigh(Ar)
    assert.are.equal('LinalgEighBackward0', w.grad_fn:name())
    assert.are.equal('LinalgEighBackward0', V.grad_fn:name())
    assert.are.equal('LinalgEighBackward0', torch.linalg.eigvalsh(Ar).grad_fn:name())
    torch.manual_seed(9)
    local X = torch.randn(2, 4, 4, f64):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(x) return torch.linalg.eigvalsh(x + mT(x)) end, { X }))
    assert.is_true(torch.autograd.gradcheck(function(x)
      local _, v = torch.linalg.eigh(x + mT(x))
      return v * v -- sign-free
    end, { X }))
  end)
end)

describe('linalg.svd', function()
  it('matches PyTorch: descending S, U, Vh; svdvals; torch.svd returns V', function()
    local U, S, Vh = torch.linalg.svd(M, false)
    close(U, REF.svdU)
    close(S, REF.svdS)
    close(Vh, REF.svdVh)
    close(torch.linalg.svdvals(M), REF.svdS)
    local U2, S2, V2 = torch.svd(M)
    close(U2, REF.svdU)
    close(S2, REF.svdS)
    close(V2, mT(t64(REF.svdVh)))
    local U3, _, V3 = M:svd(true, false)
    assert.are.same({ 3, 3 }, H.shape(U3))
    assert.are.equal(0, U3:abs():sum():item() + V3:abs():sum():item())
  end)
  it('full_matrices shapes and batched invariants, float32', function()
    torch.manual_seed(10)
    for _, dt in ipairs { torch.float64, torch.float32 } do
      local tol = dt == torch.float64 and 1e-9 or 1e-4
      for _, shape in ipairs { { 2, 5, 3 }, { 3, 5 }, { 2, 2, 4, 4 } } do
        local X = torch.randn(shape, { dtype = dt })
        local m, n = shape[#shape - 1], shape[#shape]
        local k = math.min(m, n)
        local U, S, Vh = torch.linalg.svd(X)
        assert.are.equal(m, U:size(-1))
        assert.are.equal(n, Vh:size(-2))
        local Ur, Sr, Vhr = torch.linalg.svd(X, { full_matrices = false })
        assert.are.equal(k, Ur:size(-1))
        H.near((Ur * Sr:unsqueeze(-2)):matmul(Vhr), X, tol, tol)
        H.near(mT(U):matmul(U), eye(m, dt):expand(mT(U):matmul(U):size()), tol, tol)
        H.near(Vh:matmul(mT(Vh)), eye(n, dt):expand(Vh:matmul(mT(Vh)):size()), tol, tol)
        H.near(S, Sr, tol, tol)
        local d = S:narrow(-1, 1, k - 1) - S:narrow(-1, 2, k - 1)
        assert.is_true(d:ge(0):all())
      end
    end
  end)
  it('empty, 1x1, non-finite input', function()
    local U, S, Vh = torch.linalg.svd(torch.zeros(3, 0, f64))
    close(U, eye(3))
    assert.are.same({ 0 }, H.shape(S))
    assert.are.same({ 0, 0 }, H.shape(Vh))
    U, S, Vh = torch.linalg.svd(t64 { { -2 } })
    close(S, { 2 })
    close(U * Vh, { { -1 } })
    H.errors_with(function() torch.linalg.svd(t64 { { 0 / 0, 1 }, { 1, 1 } }) end,
      'linalg.svd: The algorithm failed to converge because the input matrix contained non-finite values.')
  end)
  it('gradient as PyTorch 1.13 (LinalgSvdBackward0), gradcheck through S alone and all', function()
    local gM = grad_of(function(a)
      local U, S = torch.linalg.svd(a, false)
      return (U:abs() * W2):sum() + S:sum()
    end, M)
    close(gM, REF.g_svd, 1e-8)
    local Mr = M:clone():requires_grad_()
    local U, S, Vh = torch.linalg.svd(Mr)
    assert.are.equal('LinalgSvdBackward0', U.grad_fn:name())
    assert.are.equal('LinalgSvdBackward0', S.grad_fn:name())
    assert.are.equal('LinalgSvdBackward0', Vh.grad_fn:name())
    assert.are.equal('LinalgSvdBackward0', torch.linalg.svdvals(Mr).grad_fn:name())
    torch.manual_seed(11)
    for _, shape in ipairs { { 4, 3 }, { 3, 4 }, { 2, 3, 3 } } do
      local X = torch.randn(shape, f64):requires_grad_()
      assert.is_true(torch.autograd.gradcheck(function(x) return torch.linalg.svdvals(x) end, { X }))
      assert.is_true(torch.autograd.gradcheck(function(x)
        local u, s, vh = torch.linalg.svd(x, false)
        -- gauge-invariant functions of U and Vh (a column's sign flips with its row of Vh)
        return u * u, s, (u:narrow(-1, 1, 1) * vh:narrow(-2, 1, 1))
      end, { X }), table.concat(shape, 'x'))
    end
    -- full_matrices: the gradient through U's first k columns, as PyTorch's (the same as the reduced one's)
    close(grad_of(function(a)
      local U, S = torch.linalg.svd(a)
      return (U:narrow(2, 1, 2):abs() * W2):sum() + S:sum()
    end, M), REF.g_svd, 1e-8)
    local X = torch.randn(4, 3, f64):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(x)
      local u, s, vh = torch.linalg.svd(x, true)
      return u:narrow(-1, 1, 3) * u:narrow(-1, 1, 3), s, vh * vh
    end, { X }))
  end)
end)

describe('linalg.lstsq', function()
  it('matches PyTorch: solution, residuals, rank, singular values (gelsd)', function()
    local b = t64 { { 1 }, { 2 }, { 2 } }
    local X, res, rank, S = torch.linalg.lstsq(M, b, { driver = 'gelsd' })
    close(X, REF.lsX)
    close(res, REF.lsRes)
    assert.are.equal(2, rank:item())
    assert.are.equal(torch.int64, rank.dtype)
    close(S, REF.lsS)
    -- the default driver gelsy: no residuals, no singular values, the rank
    X, res, rank, S = torch.linalg.lstsq(M, b)
    close(X, REF.lsX)
    assert.are.same({ 0 }, H.shape(res))
    assert.are.same({ 0 }, H.shape(S))
    assert.are.equal(2, rank:item())
    local _, _, rk = torch.linalg.lstsq(M, b, { driver = 'gels' })
    assert.are.same({ 0 }, H.shape(rk))
    -- a vector right-hand side
    local xv = torch.linalg.lstsq(M, t64 { 1, 2, 2 })
    close(xv, { REF.lsX[1][1], REF.lsX[2][1] })
  end)
  it('batched, broadcast, wide (minimum norm), float32', function()
    torch.manual_seed(12)
    local Ab = torch.randn(2, 6, 3, f64)
    local B = torch.randn(6, 2, f64)
    local X = torch.linalg.lstsq(Ab, B)
    assert.are.same({ 2, 3, 2 }, H.shape(X))
    -- the normal equations hold
    H.near(mT(Ab):matmul(Ab:matmul(X) - B), torch.zeros(2, 3, 2, f64), 1e-9, 1e-9)
    local Aw = torch.randn(2, 4, f64)
    local bw = torch.randn(2, 1, f64)
    local xw = torch.linalg.lstsq(Aw, bw)
    H.near(Aw:matmul(xw), bw, 1e-9, 1e-9)
    close(xw, torch.linalg.pinv(Aw):matmul(bw), 1e-9)
    local x32 = torch.linalg.lstsq(Ab:float(), B:float())
    assert.are.equal(torch.float32, x32.dtype)
    H.near(x32, X, 1e-4, 1e-4)
  end)
  it('non-finite inputs: an error (lstsq) or NaN (eigh), nothing on stderr', function()
    local out, ok, err = H.run_lua([[
local torch = require 'moontorch'
local x = torch.tensor({{0/0, 1}, {1, 1}}, {dtype = torch.float64})
print(select(2, pcall(torch.linalg.lstsq, x, torch.ones(2, 1, {dtype = torch.float64}), {driver = 'gelsd'})))
local w, V = torch.linalg.eigh(x)
print(w[1]:item() ~= w[1]:item(), V[1][1]:item() ~= V[1][1]:item())
]])
    assert.is_true(ok, err)
    assert.are.equal('', err)
    assert.is_truthy(out:find('linalg.lstsq: The algorithm failed to converge because the input matrix contained '
      .. 'non-finite values.', 1, true), out)
    assert.is_truthy(out:find('true\ttrue', 1, true), out)
  end)
  it('errors', function()
    H.errors_with(function() torch.linalg.lstsq(torch.ones(3, 2, f64), torch.ones(4, 1, f64)) end,
      'input.size(-2) should match other.size(-2)')
    H.errors_with(function() torch.linalg.lstsq(M, M, { driver = 'x' }) end, 'driver')
    H.errors_with(function() torch.linalg.lstsq(M, M:float()) end, "torch.linalg.lstsq: Expected input and other to have "
      .. "the same dtype, but got input's dtype Double and other's dtype Float")
  end)
  it('gradient as PyTorch 1.13 (LinalgLstsqBackward0), gradcheck', function()
    local b = t64 { { 1 }, { 2 }, { 2 } }
    local gA, gb = grad_of(function(a, bb) return torch.linalg.lstsq(a, bb):sum() end, M, b)
    close(gA, REF.g_lstsq_A, 1e-8)
    close(gb, REF.g_lstsq_b, 1e-8)
    assert.are.equal('LinalgLstsqBackward0', torch.linalg.lstsq(M:clone():requires_grad_(), b).grad_fn:name())
    torch.manual_seed(13)
    local X = torch.randn(5, 3, f64):requires_grad_()
    local B = torch.randn(5, 2, f64):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(a, bb) return torch.linalg.lstsq(a, bb) end, { X, B }))
  end)
end)

describe('linalg.pinv and matrix_rank', function()
  it('match PyTorch', function()
    close(torch.linalg.pinv(M), REF.pinv)
    close(torch.pinverse(M), REF.pinv)
    close(M:pinverse(), REF.pinv)
    local Rk = t64 { { 1, 2, 3 }, { 2, 4, 6 }, { 1, 0, 1 } }
    close(torch.linalg.pinv(Rk), REF.pinvRk)
    assert.are.equal(2, torch.linalg.matrix_rank(Rk):item())
    assert.are.equal(3, torch.linalg.matrix_rank(G):item())
    assert.are.equal(2, torch.linalg.matrix_rank(M):item())
    assert.are.equal(1, torch.linalg.matrix_rank(G, { atol = 5 }):item())
    assert.are.equal(1, torch.linalg.matrix_rank(G, { rtol = 0.1 }):item())
    assert.are.equal(2, torch.linalg.matrix_rank(Rk, { hermitian = false }):item())
  end)
  it('Penrose conditions, batched, hermitian, float32', function()
    torch.manual_seed(14)
    local X = torch.randn(2, 4, 3, f64)
    local P = torch.linalg.pinv(X)
    assert.are.same({ 2, 3, 4 }, H.shape(P))
    H.near(X:matmul(P):matmul(X), X, 1e-9, 1e-9)
    H.near(P:matmul(X):matmul(P), P, 1e-9, 1e-9)
    local S = X:matmul(mT(X)) -- symmetric, rank 3 of 4
    assert.are.same({ 3, 3 }, torch.linalg.matrix_rank(S, { hermitian = true }):add(0):tolist())
    close(torch.linalg.pinv(S, { hermitian = true }), torch.linalg.pinv(S), 1e-8)
    local P32 = torch.linalg.pinv(X:float())
    assert.are.equal(torch.float32, P32.dtype)
    H.near(P32, P, 1e-4, 1e-4)
    assert.are.same({ 2 }, H.shape(torch.linalg.matrix_rank(X)))
  end)
  it('errors', function()
    H.errors_with(function() torch.linalg.matrix_rank(torch.ones(3)) end,
      'The input tensor input must have at least 2 dimensions.')
    H.errors_with(function() torch.linalg.pinv(torch.ones(3)) end, 'linalg.pinv')
  end)
  it('gradient as PyTorch 1.13 (LinalgPinvBackward0), gradcheck', function()
    close(grad_of(function(a) return (torch.linalg.pinv(a) * mT(W2)):sum() end, M), REF.g_pinv, 1e-8)
    assert.are.equal('LinalgPinvBackward0', torch.linalg.pinv(M:clone():requires_grad_()).grad_fn:name())
    torch.manual_seed(15)
    for _, shape in ipairs { { 4, 3 }, { 3, 4 }, { 2, 3, 3 } } do
      local X = torch.randn(shape, f64):requires_grad_()
      assert.is_true(torch.autograd.gradcheck(function(x) return torch.linalg.pinv(x) end, { X }))
    end
  end)
end)

describe('linalg.lu_factor, lu, lu_unpack, lu_solve', function()
  it('match PyTorch', function()
    local LU, piv = torch.linalg.lu_factor(G)
    close(LU, REF.LU)
    assert.are.equal(torch.int32, piv.dtype)
    assert.are.same(REF.piv, piv:tolist())
    local P, L, U = torch.linalg.lu(G)
    close(P, REF.P)
    close(L, REF.L)
    close(U, REF.U)
    local P2, L2, U2 = torch.lu_unpack(LU, piv)
    close(P2, REF.P)
    close(L2, REF.L)
    close(U2, REF.U)
    local LU3, piv3 = torch.lu(G)
    close(LU3, REF.LU)
    local _, _, info = G:lu(true, true)
    assert.are.equal(0, info:item())
    close(torch.lu_solve(Bm, LU, piv), REF.lusolve, 1e-9)
  end)
  it('A = P L U batched, non-square, float32', function()
    torch.manual_seed(16)
    for _, shape in ipairs { { 2, 4, 4 }, { 5, 3 }, { 3, 5 } } do
      for _, dt in ipairs { torch.float64, torch.float32 } do
        local tol = dt == torch.float64 and 1e-10 or 1e-4
        local X = torch.randn(shape, { dtype = dt })
        local P, L, U = torch.linalg.lu(X)
        H.near(P:matmul(L):matmul(U), X, tol, tol)
        local LU, piv = torch.linalg.lu_factor(X)
        local P2, L2, U2 = torch.lu_unpack(LU, piv)
        H.near(P2:matmul(L2):matmul(U2), X, tol, tol)
      end
    end
  end)
  it('singular: lu_factor errors, lu_factor_ex gives info', function()
    H.errors_with(function() torch.linalg.lu_factor(torch.zeros(2, 2)) end,
      'U[1,1] is zero and using it on lu_solve would result in a division by zero.')
    local LU, piv, info = torch.linalg.lu_factor_ex(torch.zeros(2, 2))
    assert.are.equal(1, info:item())
    assert.are.same({ 1, 2 }, piv:tolist())
    assert.are.same({ 2, 2 }, H.shape(LU))
    H.errors_with(function() torch.linalg.lu_factor(torch.ones(3)) end, 'Expected tensor with 2 or more dimensions.')
  end)
  it('gradients as PyTorch 1.13 (LinalgLuBackward0, LinalgLuFactorExBackward0), gradcheck', function()
    close(grad_of(function(a)
      local _, L, U = torch.linalg.lu(a)
      return (L * W):sum() + (U * mT(W)):sum()
    end, G), REF.g_lu, 1e-8)
    close(grad_of(function(a) return (torch.linalg.lu_factor(a) * W):sum() end, G), REF.g_luf, 1e-8)
    local Gr = G:clone():requires_grad_()
    assert.are.equal('LinalgLuFactorExBackward0', torch.linalg.lu_factor(Gr).grad_fn:name())
    local _, L = torch.linalg.lu(Gr)
    assert.are.equal('LinalgLuBackward0', L.grad_fn:name())
    torch.manual_seed(17)
    local X = torch.randn(2, 3, 3, f64):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(x) local _, l, u = torch.linalg.lu(x) return l, u end, { X }))
    assert.is_true(torch.autograd.gradcheck(function(x) return torch.linalg.lu_factor(x) end, { X }))
  end)
end)

describe('linalg.lu_solve and linalg.cond', function()
  -- PyTorch 1.13: torch.linalg.lu_solve(LU, piv, B), (..., adjoint=True), (LU, piv, B.T, left=False) with
  -- LU, piv = torch.linalg.lu_factor(G); torch.linalg.cond(G, p) for each p
  local LUS = { { 0.3333333333333327, -0.6666666666666663 }, { 0.333333333333335, 1.333333333333333 }, { -8.881784197001252e-16, -0.0 } }
  local LUS_adj = { { 2.3333333333333335, 2.0 }, { -0.3333333333333339, -0.0 }, { 3.119198021565916e-16, 0.0 } }
  local COND = { { nil, 88.4482799206987 }, { 2, 88.4482799206987 }, { -2, 0.011306042366189414 }, { 'fro', 90.78423749626243 },
    { 'nuc', 116.07658777239594 }, { math.huge, 158.33333333333337 }, { -math.huge, 17.999999999999996 }, { 1, 133.0 },
    { -1, 28.000000000000018 } }
  it('lu_solve matches PyTorch: left, adjoint, right', function()
    local LU, piv = torch.linalg.lu_factor(G)
    close(torch.linalg.lu_solve(LU, piv, Bm), LUS, 1e-9)
    close(torch.linalg.lu_solve(LU, piv, Bm, { adjoint = true }), LUS_adj, 1e-9)
    close(torch.linalg.lu_solve(LU, piv, mT(Bm), { left = false }), mT(t64(LUS_adj)), 1e-9)
    assert.are.equal('LinalgLuSolveBackward0', torch.linalg.lu_solve(LU:clone():requires_grad_(), piv, Bm).grad_fn:name())
    torch.manual_seed(18)
    local X = torch.randn(2, 3, 3, f64)
    local B = torch.randn(2, 3, 2, f64):requires_grad_()
    local LUx, pivx = torch.linalg.lu_factor(X)
    H.near(X:matmul(torch.linalg.lu_solve(LUx, pivx, B)), B, 1e-9, 1e-9)
    assert.is_true(torch.autograd.gradcheck(function(lu, b) return torch.linalg.lu_solve(lu, pivx, b) end,
      { LUx:clone():requires_grad_(), B }))
  end)
  it('cond matches PyTorch for every p; singular: inf', function()
    for _, c in ipairs(COND) do
      close(torch.linalg.cond(G, c[1]), c[2], 1e-8)
    end
    assert.are.equal(math.huge, torch.linalg.cond(t64 { { 1, 0 }, { 0, 0 } }):item())
    assert.are.equal(math.huge, torch.linalg.cond(t64 { { 1, 0 }, { 0, 0 } }, 1):item())
    close(torch.linalg.cond(t64 { { 1, 2, 3 }, { 4, 5, 6 } }), 12.302245, 1e-5)
    H.errors_with(function() torch.linalg.cond(t64 { { 1, 2, 3 }, { 4, 5, 6 } }, 'fro') end,
      'linalg.cond(ord=fro): A must be batches of square matrices, but they are 2 by 3 matrices')
    assert.are.same({ 2 }, H.shape(torch.linalg.cond(torch.stack { G, G })))
    torch.manual_seed(19)
    assert.is_true(torch.autograd.gradcheck(function(x) return torch.linalg.cond(x) end, { torch.randn(3, 3, f64):requires_grad_() }))
  end)
end)

describe('cholesky_solve, cholesky_inverse, triangular_solve', function()
  it('match PyTorch', function()
    local L = torch.linalg.cholesky(A)
    close(torch.cholesky_solve(Bm, L), REF.csolve, 1e-9)
    close(torch.cholesky_solve(Bm, mT(L), true), REF.csolve, 1e-9)
    close(Bm:cholesky_solve(L), REF.csolve, 1e-9)
    close(torch.cholesky_inverse(L), REF.cinv, 1e-9)
    close(L:cholesky_inverse(), REF.cinv, 1e-9)
    local X, Acopy = torch.triangular_solve(Bm, Tl, false)
    close(X, REF.stL)
    close(Acopy, Tl)
    close(torch.triangular_solve(Bm, mT(Tl), true), REF.stU)
    close(torch.triangular_solve(Bm, Tl, { upper = false, transpose = true }), torch.linalg.solve_triangular(mT(Tl), Bm, { upper = true }))
    H.errors_with(function() torch.cholesky_solve(torch.ones(2, 1, f64), torch.ones(3, 3, f64)) end,
      'Incompatible matrix sizes for cholesky_solve: each A matrix is 3 by 3 but each b matrix is 2 by 1')
  end)
  it('gradients (CholeskySolveBackward0, CholeskyInverseBackward0), gradcheck', function()
    local L = torch.linalg.cholesky(A):requires_grad_()
    assert.are.equal('CholeskySolveBackward0', torch.cholesky_solve(Bm, L).grad_fn:name())
    assert.are.equal('CholeskyInverseBackward0', torch.cholesky_inverse(L).grad_fn:name())
    local Lc = torch.linalg.cholesky(A):detach():requires_grad_()
    local B = Bm:clone():requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(b, l) return torch.cholesky_solve(b, l:tril()) end, { B, Lc }))
    assert.is_true(torch.autograd.gradcheck(function(l) return torch.cholesky_inverse(l:tril()) end, { Lc }))
  end)
end)

describe('linalg decompositions: where LAPACK comes from', function()
  local refblas = '/usr/lib/x86_64-linux-gnu/blas/libblas.so.3'
  local code = [[
local torch = require 'moontorch'
local ok, err = pcall(torch.linalg.cholesky, torch.tensor({{4, 2}, {2, 5}}))
print(ok and tostring(ok and torch.linalg.cholesky(torch.tensor({{4, 2}, {2, 5}}))[2][1]:item()) or err)
print(torch.tensor({{1, 2}}):matmul(torch.tensor({{3}, {4}})):item())
]]
  it('a BLAS without LAPACK (the reference libblas): liblapack.so.3 is used', function()
    if not io.open(refblas) then return pending('no reference libblas.so.3 here') end
    local out, ok, err = H.run_lua(code, { 'MT_OPENBLAS_LIB=' .. refblas })
    assert.is_true(ok, err)
    assert.are.equal('1\n11\n', out)
  end)
  it('neither: the op is an error naming it, the rest keeps working', function()
    if not io.open(refblas) then return pending('no reference libblas.so.3 here') end
    local out, ok, err = H.run_lua(code, { 'MT_OPENBLAS_LIB=' .. refblas, 'MT_LAPACK_LIB=/nonexistent/liblapack.so' })
    assert.is_true(ok, err)
    assert.is_truthy(out:find('moontorch.linalg.cholesky: needs LAPACK: ', 1, true), out)
    assert.is_truthy(out:find('has no spotrf_ and /nonexistent/liblapack.so cannot be loaded', 1, true), out)
    assert.is_truthy(out:find('\n11\n', 1, true), out)
  end)
end)

describe('linalg decompositions: memory', function()
  it('no tensors leak from the ops, their gradients and their errors', function()
    local stats = torch._C.mt_get_stats()
    local T = require 'moontorch.tensor'
    local S = A:clone()
    local function round()
      for _ = 1, 5 do
        local a = S:clone():requires_grad_()
        local L = torch.linalg.cholesky(a)
        local Q, R = torch.linalg.qr(M)
        local w, V = torch.linalg.eigh(a)
        local U, s, Vh = torch.linalg.svd(a)
        local x = torch.linalg.lstsq(a, Bm)
        local p = torch.linalg.pinv(a)
        local P, Ll, Uu = torch.linalg.lu(a)
        ;(L:sum() + w:sum() + V:abs():sum() + s:sum() + x:sum() + p:sum() + Ll:sum() + Uu:sum()):backward()
        pcall(torch.linalg.cholesky, -S)
        pcall(torch.linalg.lu_factor, torch.zeros(2, 2))
        pcall(torch.linalg.svd, t64 { { 0 / 0 } })
        local _ = Q, R, U, Vh, P
      end
      T.sweep()
      for _ = 1, 4 do collectgarbage() end
      return tonumber(stats.live_tensors)
    end
    local first = round()
    round()
    local third = round()
    assert.is_true(third - first < 20, ('live tensors grew from %d to %d'):format(first, third))
  end)
end)
