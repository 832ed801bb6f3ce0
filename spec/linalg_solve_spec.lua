-- spec/linalg_solve_spec.lua: torch.linalg's solve / solve_ex / inv / inv_ex / det / slogdet (torch.inverse,
-- torch.det, torch.slogdet, torch.logdet) by LAPACK's getrf + getrs (lua/ops/decomp.lua, core/ops/lapack.c
-- mt_linalg_lu_solve), the matrix norms 'nuc', 2, -2 (lua/ops/linalg.lua matrix_norm, torch.norm p='nuc'), the
-- float32 decompositions by LAPACK's s-routines, and the messages that show arguments.
--
-- Expected values were recorded from PyTorch 1.13 (/usr/bin/python3, `import torch`) with the matrices written
-- here in float64: `torch.linalg.solve(a, b)`, `torch.linalg.inv(a)`, `torch.linalg.det(a)`, ... printed with
-- .tolist(); the gradients by `a = A.clone().requires_grad_(); f(a).backward(); a.grad` for the losses written
-- beside each case (the same losses are computed here). Error messages were taken from the same PyTorch.
local H = require 'spec.support.helper'
local torch = H.torch

local f64 = { dtype = torch.float64 }
local function t64(v) return torch.tensor(v, f64) end
local function close(a, b, tol) return H.near(a, b, tol or 1e-9, tol or 1e-9) end

local A = t64({ { 2, 1, 0.5 }, { 1, 3, -1 }, { 0, 4, 1 } })
local B = t64({ { 1, 2 }, { 0, -1 }, { 3, 1 } })
local W = t64({ { 1, -2 }, { 0.5, 3 }, { 2, 1 } })

describe('linalg.matrix_norm: nuc, 2, -2 (the singular values)', function()
  -- torch.linalg.matrix_norm(a, o).backward() for o in ['nuc', 2, -2, 'fro', 1, -1, inf]
  local REF = {
    { 'nuc', 8.649793104625697, 'SumBackward1', { { 0.9322507421755082, 0.05240077734867862, 0.35799820145702954 },
      { 0.25903581372059703, 0.5941388859349018, -0.7615112812231619 },
      { -0.25260443567625995, 0.802653812520247, 0.540312739368035 } } },
    { 2, 5.216844505982877, 'AmaxBackward0', { { 0.06057181892855669, 0.26912624405691954, 0.01616991072347058 },
      { 0.1295174499913979, 0.5754581168699499, 0.03457524704619882 },
      { 0.16614660902025952, 0.7382048886653999, 0.04435356049046066 } } },
    { -2, 1.4500485498766444, 'AminBackward0', { { 0.08341149513942424, -0.04833461261565082, 0.4920080826113154 },
      { -0.12668751607042766, 0.07341184811838905, -0.7472744825927546 },
      { 0.06834841898973652, -0.03960598415409138, 0.40315755664666064 } } },
    { 'fro', 5.766281297335398, 'LinalgVectorNormBackward0', { { 0.346843987809648, 0.173421993904824, 0.086710996952412 },
      { 0.173421993904824, 0.5202659817144719, -0.173421993904824 }, { 0.0, 0.693687975619296, 0.173421993904824 } } },
    { 1, 8.0, 'AmaxBackward0', { { 0, 1, 0 }, { 0, 1, 0 }, { 0, 1, 0 } } },
    { -1, 2.5, 'AminBackward0', { { 0, 0, 1 }, { 0, 0, -1 }, { 0, 0, 1 } } },
    { math.huge, 5.0, 'AmaxBackward0', { { 0, 0, 0 }, { 0.5, 0.5, -0.5 }, { 0, 0.5, 0.5 } } },
  }
  it('values, gradients and grad_fn names as PyTorch 1.13', function()
    for _, c in ipairs(REF) do
      local x = A:clone():requires_grad_()
      local r = torch.linalg.matrix_norm(x, c[1])
      r:backward()
      close(r:item(), c[2], 1e-12)
      assert.are.equal(c[3], r.grad_fn:name(), tostring(c[1]))
      close(x.grad, c[4], 1e-9)
    end
  end)
  it('linalg.norm and torch.norm take nuc (a 2-D input, or two dims)', function()
    close(torch.linalg.norm(A, 'nuc'):item(), 8.649793104625697, 1e-12)
    close(torch.norm(A, 'nuc'):item(), 8.649793104625697, 1e-12)
    close(A:norm('nuc'):item(), 8.649793104625697, 1e-12)
    assert.are.equal('SumBackward1', torch.linalg.norm(A:clone():requires_grad_(), 'nuc').grad_fn:name())
    -- torch.norm(torch.ones(2, 3, 3), 'nuc', dim=(1, 2)) -> [3., 3.]
    close(torch.norm(torch.ones(2, 3, 3), 'nuc', { 2, 3 }), { 3, 3 }, 1e-5)
    close(torch.linalg.norm(A, 2):item(), 5.216844505982877, 1e-12)
    close(torch.linalg.norm(A, -2, { 1, 2 }):item(), 1.4500485498766444, 1e-12)
  end)
  it('batches, dims and keepdim: the shapes of PyTorch', function()
    local X = torch.randn(2, 3, 4, f64)
    -- torch.linalg.matrix_norm(X, 2, dim=(0, 2)).shape == [3]; 'nuc' keepdim [2, 1, 1]; -2 dim (2, 0) keepdim [1, 3, 1]
    assert.are.same({ 3 }, H.shape(torch.linalg.matrix_norm(X, 2, { 1, 3 })))
    assert.are.same({ 2, 1, 1 }, H.shape(torch.linalg.matrix_norm(X, 'nuc', nil, true)))
    assert.are.same({ 1, 3, 1 }, H.shape(torch.linalg.matrix_norm(X, -2, { 3, 1 }, true)))
    assert.are.same({ 2 }, H.shape(torch.linalg.matrix_norm(X, { ord = 'nuc' })))
    -- each batch element's nuclear norm is its own matrix's
    local r = torch.linalg.matrix_norm(X, 'nuc')
    for i = 1, 2 do close(r[i]:item(), torch.linalg.svdvals(X[i]):sum():item(), 1e-12) end
    -- over dims {1, 3}: the matrices X[:, j, :]
    local r2 = torch.linalg.matrix_norm(X, 2, { 1, 3 })
    for j = 1, 3 do close(r2[j]:item(), torch.linalg.svdvals(X:select(2, j)):max():item(), 1e-12) end
    -- float32 stays float32
    assert.are.equal(torch.float32, torch.linalg.matrix_norm(torch.ones(3, 3), 'nuc').dtype)
  end)
  it('PyTorch\'s errors', function()
    H.errors_with(function() torch.linalg.matrix_norm(A, 3) end, 'linalg.matrix_norm: Order 3 not supported.')
    H.errors_with(function() torch.linalg.matrix_norm(A, 'foo') end, 'linalg.matrix_norm: Order foo not supported.')
    H.errors_with(function() torch.linalg.matrix_norm(torch.ones(3), 'nuc') end,
      'The input tensor A must have at least 2 dimensions.')
    H.errors_with(function() torch.linalg.matrix_norm(torch.ones(3, 3, { dtype = torch.int32 }), 'nuc') end,
      'Expected a floating point or complex tensor as input. Got Int')
    H.errors_with(function() torch.linalg.matrix_norm(A, 2, { 1, 1 }) end, 'dims must be different. Got (1, 1)')
    H.errors_with(function() torch.linalg.norm(A, 'nuc', 1) end, 'dim must be a 2-tuple. Got 1')
    H.errors_with(function() torch.linalg.norm(torch.ones(2, 2, 2), 2) end,
      'linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D.')
    H.errors_with(function() torch.norm(torch.ones(2, 2, 2), 'nuc') end,
      'norm: Expected a tensor with 2 dimensions, but got a tensor with 3 dimensions instead.')
    H.errors_with(function() torch.linalg.vector_norm(A, 'nuc') end, "linalg.vector_norm: argument 'ord' must be a number")
  end)
end)

describe('linalg.solve (getrf + getrs)', function()
  it('X and the gradients of A and B as PyTorch 1.13 (loss (X * W):sum())', function()
    local a, b = A:clone():requires_grad_(), B:clone():requires_grad_()
    local X = torch.linalg.solve(a, b)
    assert.are.equal('LinalgSolveExBackward0', X.grad_fn:name())
    ;(X * W):sum():backward()
    close(X, { { -0.0333333333333333, 0.7000000000000001 }, { 0.4333333333333333, -0.10000000000000009 },
      { 1.2666666666666666, 1.4 } })
    close(a.grad, { { 0.6388888888888891, -0.5055555555555555, -0.011111111111110772 },
      { 0.15555555555555545, 0.3777777777777777, 1.5555555555555551 },
      { -0.7972222222222222, -0.13611111111111096, -2.372222222222222 } })
    close(b.grad, { { 0.9666666666666666, -0.8666666666666668 }, { -0.9333333333333332, -0.26666666666666644 },
      { 0.5833333333333333, 1.1666666666666665 } })
  end)
  it('left=false: X A = B (loss (X * W^T):sum())', function()
    local a, b = A:clone():requires_grad_(), B:t():clone():requires_grad_()
    local X = torch.linalg.solve(a, b, { left = false })
    ;(X * W:t()):sum():backward()
    close(X, { { 1.2666666666666666, -1.5333333333333332, 0.8333333333333333 },
      { 1.2666666666666666, -0.5333333333333334, -0.16666666666666666 } })
    close(a.grad, { { 0.928888888888889, -1.3088888888888888, 1.4355555555555557 },
      { -0.22444444444444459, 0.8844444444444445, 0.062222222222221936 },
      { -0.2888888888888889, -0.16111111111111107, -0.8555555555555555 } })
    close(b.grad, { { 0.1666666666666667, 0.3333333333333333, 0.6666666666666666 },
      { -0.9000000000000001, 0.7000000000000001, -1.8 } })
  end)
  it('a vector right-hand side (loss (x * {1, -1, 2}):sum())', function()
    local a, v = A:clone():requires_grad_(), t64({ 1, 2, 3 }):requires_grad_()
    local x = torch.linalg.solve(a, v)
    assert.are.equal('LinalgSolveExBackward0', x.grad_fn:name())
    ;(x * t64({ 1, -1, 2 })):sum():backward()
    close(x, { 0.10000000000000003, 0.7, 0.20000000000000004 })
    close(a.grad, { { -0.1066666666666667, -0.7466666666666666, -0.21333333333333337 },
      { 0.11333333333333337, 0.7933333333333332, 0.2266666666666667 },
      { -0.03333333333333334, -0.2333333333333333, -0.06666666666666668 } })
    close(v.grad, { 1.0666666666666667, -1.1333333333333333, 0.3333333333333333 })
  end)
  it('broadcasts the batch dims as PyTorch (shapes), each matrix solved', function()
    local I3 = torch.eye(3)
    assert.are.same({ 2, 3 }, H.shape(torch.linalg.solve(I3:expand(2, 3, 3), torch.ones(2, 3))))
    assert.are.same({ 4, 2, 3, 1 }, H.shape(torch.linalg.solve(I3:expand(4, 2, 3, 3), torch.ones(2, 3, 1))))
    assert.are.same({ 2, 3 }, H.shape(torch.linalg.solve(I3:expand(2, 3, 3), torch.ones(3))))
    assert.are.same({ 5, 2, 3, 2 }, H.shape(torch.linalg.solve(I3:expand(2, 3, 3), torch.ones(5, 1, 3, 2))))
    local As = torch.randn(4, 1, 5, 5, f64) + torch.eye(5, f64) * 5
    local Bs = torch.randn(3, 5, 2, f64)
    local X = torch.linalg.solve(As, Bs)
    assert.are.same({ 4, 3, 5, 2 }, H.shape(X))
    close(As:matmul(X), Bs:expand(4, 3, 5, 2), 1e-10)
    -- the gradient of a broadcast operand comes back in its own shape
    local a, b = As:clone():requires_grad_(), Bs:clone():requires_grad_()
    torch.linalg.solve(a, b):sum():backward()
    assert.are.same({ 4, 1, 5, 5 }, H.shape(a.grad))
    assert.are.same({ 3, 5, 2 }, H.shape(b.grad))
  end)
  it('gradcheck, and second derivatives record', function()
    local a, b = A:clone():requires_grad_(), B:clone():requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(x, y) return torch.linalg.solve(x, y) end, { a, b }))
    assert.is_true(torch.autograd.gradcheck(function(x, y) return torch.linalg.solve(x, y, { left = false }) end,
      { a, B:t():clone():requires_grad_() }))
    assert.is_true(torch.autograd.gradgradcheck(function(x, y) return torch.linalg.solve(x, y) end, { a, b }))
  end)
  it('a singular matrix: PyTorch\'s error; solve_ex gives info', function()
    local S = t64({ { 1, 2 }, { 2, 4 } })
    local Sb = torch.stack({ torch.eye(2, f64), S })
    H.errors_with(function() torch.linalg.solve(S, torch.ones(2, f64)) end,
      'linalg.solve: The solver failed because the input matrix is singular.')
    -- PyTorch: (Batch element 0) counts from 0; moontorch's batch elements count from 1
    H.errors_with(function() torch.linalg.solve(Sb, torch.ones(2, f64)) end,
      'linalg.solve: (Batch element 2): The solver failed because the input matrix is singular.')
    -- torch.linalg.solve_ex(Sb, ones(2)) -> result [[1, 1], [-inf, inf]], info [0, 2]
    local X, info = torch.linalg.solve_ex(Sb, torch.ones(2, f64))
    close(X, { { 1, 1 }, { -math.huge, math.huge } })
    assert.are.equal(torch.int32, info.dtype)
    assert.are.same({ 0, 2 }, info:tolist())
    H.errors_with(function() torch.linalg.solve_ex(Sb, torch.ones(2, f64), { check_errors = true }) end,
      'linalg.solve_ex: (Batch element 2): The solver failed because the input matrix is singular.')
    local X1, info1 = torch.linalg.solve_ex(torch.eye(2), torch.ones(2))
    close(X1, { 1, 1 })
    assert.are.same({}, H.shape(info1))
    assert.are.equal(0, info1:item())
  end)
  it('PyTorch\'s argument errors', function()
    H.errors_with(function() torch.linalg.solve(torch.ones(2, 3), torch.ones(2)) end,
      'linalg.solve: A must be batches of square matrices, but they are 2 by 3 matrices')
    H.errors_with(function() torch.linalg.solve(torch.ones(3, 3), torch.ones(2)) end,
      'linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 2x1)')
    H.errors_with(function() torch.linalg.solve(torch.eye(3), torch.ones(3, 4), { left = false }) end,
      'Incompatible shapes of A and B for the equation XA = B (3x3 and 3x4)')
    H.errors_with(function() torch.linalg.solve(torch.eye(3), torch.ones(3, f64)) end,
      'linalg.solve: Expected A and B to have the same dtype, but found A of type Float and B of type Double instead')
    H.errors_with(function() torch.linalg.solve(torch.eye(3, { dtype = torch.int32 }), torch.ones(3)) end,
      'linalg.solve: Expected a floating point or complex tensor as input. Got Int')
    H.errors_with(function() torch.linalg.solve(torch.eye(3):expand(2, 3, 3), torch.ones(4, 3, 1)) end,
      'linalg.solve: Incompatible shapes of A and B for the equation AX = B: the batch dimensions')
    H.errors_with(function() torch.linalg.solve(torch.eye(3), 'x') end, 'linalg.solve: expected a tensor for B, got string')
    H.errors_with(function() torch.linalg.solve(torch.eye(3), torch.ones(3), { left = 1 }) end,
      'linalg.solve: left must be a boolean, got 1')
  end)
  it('{out=} writes into the tensor given', function()
    local out = torch.empty(0, f64)
    local r = torch.linalg.solve(A, B, { out = out })
    assert.are.equal(out, r)
    close(out, torch.linalg.solve(A, B))
    local o2 = torch.empty(0, f64)
    assert.are.equal(o2, torch.linalg.inv(A, { out = o2 }))
    close(o2, torch.linalg.inv(A))
    local o3 = torch.empty(0, f64)
    torch.norm(A, 'nuc', nil, false, { out = o3 })
    close(o3:item(), 8.649793104625697, 1e-12)
    H.errors_with(function() torch.linalg.solve(A, B, { out = 3 }) end, 'linalg.solve: out must be a tensor, got 3')
  end)
end)

describe('linalg.inv / inv_ex, torch.inverse', function()
  it('the inverse and its gradient as PyTorch 1.13 (loss (inv(a) * A):sum())', function()
    local a = A:clone():requires_grad_()
    local Ai = torch.linalg.inv(a)
    assert.are.equal('LinalgInvExBackward0', Ai.grad_fn:name())
    assert.are.equal('LinalgInvExBackward0', torch.inverse(a).grad_fn:name())
    assert.are.equal('LinalgInvExBackward0', a:inverse().grad_fn:name())
    assert.are.equal('LinalgInvExBackward0', torch.linalg.inv_ex(a).grad_fn:name())
    ;(Ai * A):sum():backward()
    close(Ai, { { 0.4666666666666667, 0.06666666666666665, -0.16666666666666666 },
      { -0.06666666666666668, 0.13333333333333336, 0.16666666666666666 },
      { 0.26666666666666666, -0.5333333333333333, 0.3333333333333333 } })
    close(a.grad, { { -0.39888888888888885, -0.21444444444444447, 0.2911111111111111 },
      { -0.11888888888888892, 0.34555555555555556, -0.7488888888888888 },
      { -0.01944444444444442, -0.24722222222222223, 0.9055555555555556 } })
    assert.is_true(torch.autograd.gradgradcheck(torch.linalg.inv, { A:clone():requires_grad_() }))
  end)
  it('batches, float32, empty matrices', function()
    local X = torch.randn(3, 2, 4, 4) + torch.eye(4) * 4
    local Xi = torch.linalg.inv(X)
    assert.are.equal(torch.float32, Xi.dtype)
    H.near(X:matmul(Xi), torch.eye(4):expand(3, 2, 4, 4), 1e-5, 1e-5)
    assert.are.same({ 0, 0 }, H.shape(torch.linalg.inv(torch.ones(0, 0))))
    assert.are.same({ 2, 0, 0 }, H.shape(torch.linalg.inv(torch.ones(2, 0, 0))))
  end)
  it('a singular matrix: PyTorch\'s errors; inv_ex gives info', function()
    local S = t64({ { 1, 2 }, { 2, 4 } })
    local Sb = torch.stack({ torch.eye(2, f64), S })
    local msg = 'The diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular.'
    H.errors_with(function() torch.linalg.inv(S) end, 'linalg.inv: ' .. msg)
    H.errors_with(function() torch.linalg.inv(Sb) end, 'linalg.inv: (Batch element 2): ' .. msg)
    H.errors_with(function() torch.inverse(S) end, 'inverse: ' .. msg)
    H.errors_with(function() S:inverse() end, 'inverse: ' .. msg)
    H.errors_with(function() torch.linalg.inv_ex(S, { check_errors = true }) end, 'linalg.inv_ex: ' .. msg)
    -- torch.linalg.inv_ex(Sb) -> inverse [[1, 0], [0, 1]], [[-inf, inf], [inf, -inf]]; info [0, 2]
    local X, info = torch.linalg.inv_ex(Sb)
    close(X, { { { 1, 0 }, { 0, 1 } }, { { -math.huge, math.huge }, { math.huge, -math.huge } } })
    assert.are.same({ 0, 2 }, info:tolist())
    H.errors_with(function() torch.linalg.inv(torch.ones(2, 3)) end,
      'linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices')
    H.errors_with(function() torch.linalg.inv(torch.ones(3)) end, 'The input tensor A must have at least 2 dimensions.')
    H.errors_with(function() torch.linalg.inv_ex(A, { check_errors = 'yes' }) end,
      "check_errors must be a boolean, got yes")
  end)
  it('matrix_power with a negative exponent goes through it', function()
    close(torch.matrix_power(A, -2), torch.linalg.inv(A):matmul(torch.linalg.inv(A)), 1e-12)
  end)
end)

describe('linalg.det / slogdet, torch.det / slogdet / logdet (LU)', function()
  local Ab = torch.stack({ A, A:t() * 2, torch.eye(3, f64) + 0.5 })
  it('det and its gradient as PyTorch 1.13 (loss (det * {1, 2, 3}):sum())', function()
    local a = Ab:clone():requires_grad_()
    local d = torch.linalg.det(a)
    assert.are.equal('LinalgDetBackward0', d.grad_fn:name())
    assert.are.equal('LinalgDetBackward0', torch.det(a).grad_fn:name())
    assert.are.equal('LinalgDetBackward0', a:det().grad_fn:name())
    ;(d * t64({ 1, 2, 3 })):sum():backward()
    close(d, { 15.0, 120.0, 2.5 }, 1e-12)
    close(a.grad, { { { 7.0, -1.0, 4.0 }, { 1.0, 2.0, -8.0 }, { -2.5, 2.5, 5.0 } },
      { { 56.0, 8.0, -20.0 }, { -8.0, 16.0, 20.0 }, { 32.0, -64.0, 40.0 } },
      { { 6.0, -1.5, -1.5 }, { -1.5, 6.0, -1.5 }, { -1.5, -1.5, 6.0 } } })
    assert.is_true(torch.autograd.gradgradcheck(torch.linalg.det, { A:clone():requires_grad_() }))
  end)
  it('the sign of the row swaps, singular and empty matrices', function()
    close(torch.det(t64({ { 0, 1 }, { 1, 0 } })):item(), -1)
    close(torch.det(t64({ { 0, 0, 1 }, { 0, 1, 0 }, { 1, 0, 0 } })):item(), -1)
    close(torch.det(t64({ { 0, 1, 0 }, { 0, 0, 1 }, { 1, 0, 0 } })):item(), 1)
    assert.are.equal(0, torch.det(t64({ { 1, 2 }, { 2, 4 } })):item())
    close(torch.linalg.det(torch.ones(2, 0, 0)), { 1, 1 })
    local X = torch.randn(4, 5, 5, f64)
    local d = torch.linalg.det(X)
    for i = 1, 4 do
      local _, la = torch.linalg.slogdet(X[i])
      close(math.abs(d[i]:item()), math.exp(la:item()), 1e-9)
    end
  end)
  it('the gradient at a singular matrix: its cofactors (as PyTorch 1.13 with create_graph=True)', function()
    -- torch.autograd.grad(torch.linalg.det(x), x, create_graph=True) for these x (PyTorch 1.13 gives zeros
    -- without create_graph; the cofactors are the derivative, and PyTorch 2's answer)
    local cases = {
      { { { 1, 2 }, { 2, 4 } }, { { 4, -2 }, { -2, 1 } } },
      { { { 0, 1 }, { 0, 2 } }, { { 2, 0 }, { -1, 0 } } },
      { { { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } }, { { -3, 6, -3 }, { 6, -12, 6 }, { -3, 6, -3 } } },
      { { { 1, 2, 3 }, { 2, 4, 6 }, { 1, 0, 1 } }, { { 4, 4, -4 }, { -2, -2, 2 }, { 0, 0, 0 } } },
    }
    for _, c in ipairs(cases) do
      local x = t64(c[1]):requires_grad_()
      torch.linalg.det(x):backward()
      close(x.grad, c[2], 1e-9)
    end
    -- a batch with one singular matrix: each its own
    local x = torch.stack({ t64({ { 1, 2 }, { 2, 4 } }), t64({ { 2, 1 }, { 1, 3 } }) }):requires_grad_()
    torch.linalg.det(x):sum():backward()
    close(x.grad, { { { 4, -2 }, { -2, 1 } }, { { 3, -1 }, { -1, 2 } } }, 1e-9)
  end)
  it('second derivative of det as PyTorch 1.13 (create_graph, then grad of the sum)', function()
    -- x = [[2, 1], [1, 3]]: g = [[3, -1], [-1, 2]], grad(g.sum(), x) = [[1, -1], [-1, 1]]
    local x = t64({ { 2, 1 }, { 1, 3 } }):requires_grad_()
    local g = torch.autograd.grad(torch.linalg.det(x), x, { create_graph = true })[1]
    close(g, { { 3, -1 }, { -1, 2 } })
    close(torch.autograd.grad(g:sum(), x)[1], { { 1, -1 }, { -1, 1 } })
  end)
  it('slogdet, its gradient (loss logabsdet:sum()) and logdet as PyTorch 1.13', function()
    local a = Ab:clone():requires_grad_()
    local s, la = torch.linalg.slogdet(a)
    assert.are.equal('LinalgSlogdetBackward0', la.grad_fn:name())
    assert.are.equal('LinalgSlogdetBackward0', select(2, torch.slogdet(a)).grad_fn:name())
    la:sum():backward()
    close(s, { 1, 1, 1 })
    close(la, { 2.7080502011022105, 4.787491742782046, 0.9162907318741549 }, 1e-12)
    close(a.grad, { { { 0.4666666666666667, -0.06666666666666668, 0.26666666666666666 },
      { 0.06666666666666665, 0.13333333333333336, -0.5333333333333333 },
      { -0.16666666666666666, 0.16666666666666666, 0.3333333333333333 } },
      { { 0.23333333333333334, 0.03333333333333333, -0.08333333333333334 },
        { -0.03333333333333333, 0.06666666666666667, 0.08333333333333334 },
        { 0.13333333333333333, -0.26666666666666666, 0.16666666666666666 } },
      { { 0.8, -0.2, -0.19999999999999998 }, { -0.19999999999999996, 0.8, -0.20000000000000004 },
        { -0.2, -0.2, 0.8 } } })
    -- [[1, 2], [3, 4]]: sign -1, log 2, logdet nan; singular: sign 0, -inf
    local N = t64({ { 1, 2 }, { 3, 4 } })
    local sn, ln = torch.linalg.slogdet(N)
    close(sn:item(), -1)
    close(ln:item(), 0.6931471805599453, 1e-12)
    assert.is_true(torch.logdet(N):isnan():item())
    local s0, l0 = torch.linalg.slogdet(t64({ { 1, 2 }, { 2, 4 } }))
    assert.are.equal(0, s0:item())
    assert.are.equal(-math.huge, l0:item())
    assert.are.equal(-math.huge, torch.logdet(t64({ { 1, 2 }, { 2, 4 } })):item())
    close(t64({ { 2, 0 }, { 0, 3 } }):logdet():item(), math.log(6), 1e-12)
  end)
  it('PyTorch\'s argument errors', function()
    H.errors_with(function() torch.linalg.det(torch.ones(2, 3)) end,
      'linalg.det: A must be batches of square matrices, but they are 2 by 3 matrices')
    H.errors_with(function() torch.linalg.slogdet(torch.ones(3)) end,
      'linalg.slogdet: The input tensor A must have at least 2 dimensions.')
    H.errors_with(function() torch.linalg.det(torch.eye(3, { dtype = torch.int32 })) end,
      'linalg.det: Expected a floating point or complex tensor as input. Got Int')
    H.errors_with(function() torch.det({}) end, 'det: expected a tensor for input, got table')
    -- LAPACK runs on the CPU: another device is the called op's error
    local meta = torch.eye(3, { device = 'meta' })
    H.errors_with(function() torch.linalg.det(meta) end, 'linalg.det: runs on the CPU (LAPACK); A is on meta')
    H.errors_with(function() torch.linalg.solve(meta, torch.ones(3, { device = 'meta' })) end, 'linalg.solve: runs on the CPU')
    H.errors_with(function() torch.linalg.matrix_norm(meta, 'nuc') end, 'linalg.matrix_norm: runs on the CPU')
  end)
end)

describe('float32 decompositions: LAPACK\'s s-routines, as PyTorch', function()
  -- the 7x7 Hilbert matrix: ill-conditioned enough that float32 arithmetic shows. PyTorch 1.13:
  -- torch.linalg.det(H) = 2.08e-24 in float32 and 7.586773341264981e-25 in float64
  local Hm = torch.zeros(7, 7)
  for i = 1, 7 do for j = 1, 7 do Hm[i][j] = 1 / (i + j - 1) end end
  it('a float32 matrix is factored in float32 (not float64 and rounded)', function()
    local d32, d64 = torch.linalg.det(Hm):item(), torch.linalg.det(Hm:double()):item()
    close(d64, 7.586773341264981e-25, 1e-30)
    assert.is_true(math.abs(d32 - d64) > 0.1 * d64, ('float32 det %g too close to float64 %g'):format(d32, d64))
    local c32, c64 = torch.linalg.cholesky(Hm)[7][7]:item(), torch.linalg.cholesky(Hm:double())[7][7]:item()
    assert.is_true(math.abs(c32 - c64) > 1e-2 * c64, ('float32 cholesky %g too close to float64 %g'):format(c32, c64))
  end)
  it('agrees with PyTorch 1.13\'s float32 results on a well-conditioned matrix', function()
    local A32 = A:float()
    H.near(torch.linalg.inv(A32), { { 0.4666666666666667, 0.06666666666666665, -0.16666666666666666 },
      { -0.06666666666666668, 0.13333333333333336, 0.16666666666666666 },
      { 0.26666666666666666, -0.5333333333333333, 0.3333333333333333 } }, 1e-6, 1e-5)
    H.near(torch.linalg.svdvals(A32), torch.linalg.svdvals(A), 1e-5, 1e-5)
    local S = A32:matmul(A32:t()) + torch.eye(3)
    local w, V = torch.linalg.eigh(S)
    assert.are.equal(torch.float32, w.dtype)
    H.near(V:matmul(torch.diag(w)):matmul(V:t()), S, 1e-5, 1e-5)
    local L = torch.linalg.cholesky(S)
    assert.are.equal(torch.float32, L.dtype)
    H.near(L:matmul(L:t()), S, 1e-5, 1e-5)
    local Q, R = torch.linalg.qr(A32)
    H.near(Q:matmul(R), A32, 1e-5, 1e-5)
    local X = torch.linalg.lstsq(A32, B:float())
    H.near(X, torch.linalg.solve(A, B), 1e-5, 1e-5)
    H.near(torch.linalg.solve_triangular(A32:triu(), B:float(), { upper = true }),
      torch.linalg.solve_triangular(A:triu(), B, { upper = true }), 1e-5, 1e-5)
  end)
  it('mixed float32 A and float64 B: the result in A\'s dtype, as PyTorch (solve_triangular)', function()
    local X = torch.linalg.solve_triangular(A:float():triu(), B, { upper = true })
    assert.are.equal(torch.float32, X.dtype)
    H.near(X, torch.linalg.solve_triangular(A:triu(), B, { upper = true }), 1e-5, 1e-5)
  end)
end)

describe('linalg messages show the values given (never "cdata")', function()
  it('a tensor where an option belongs is named by its size', function()
    local x = torch.ones(3, 3)
    H.errors_with(function() torch.linalg.cholesky(x, { upper = x }) end,
      'linalg.cholesky: upper must be a boolean, got a tensor of size [3, 3]')
    H.errors_with(function() torch.linalg.svd(x, x) end, 'full_matrices must be a boolean, got a tensor of size [3, 3]')
    H.errors_with(function() torch.linalg.eigh(x, x) end, "but got a tensor of size [3, 3]")
    H.errors_with(function() torch.linalg.lstsq(x, x, { driver = x }) end, 'but got a tensor of size [3, 3]')
    H.errors_with(function() torch.linalg.cond(x, x) end, 'invalid norm type: a tensor of size [3, 3]')
    H.errors_with(function() torch.linalg.qr(x, x) end, "unrecognized mode 'a tensor of size [3, 3]'")
    H.errors_with(function() torch.linalg.pinv(x, { hermitian = x }) end,
      'hermitian must be a boolean, got a tensor of size [3, 3]')
    H.errors_with(function() torch.linalg.matrix_norm(x, x) end, 'Order a tensor of size [3, 3] not supported.')
    H.errors_with(function() torch.linalg.solve(x, x, { left = x }) end, 'left must be a boolean, got a tensor of size')
  end)
end)

describe('linalg.lu_solve / torch.lu_solve by getrs', function()
  -- LU, piv = torch.linalg.lu_factor(A); torch.linalg.lu_solve(LU, piv, B or B.T, **kw)
  local REF = {
    { {}, B, { { -0.033333333333333326, 0.7 }, { 0.43333333333333335, -0.09999999999999998 }, { 1.2666666666666666, 1.4 } } },
    { { adjoint = true }, B, { { 1.2666666666666666, 1.2666666666666666 }, { -1.5333333333333332, -0.5333333333333333 },
      { 0.8333333333333333, -0.16666666666666669 } } },
    { { left = false }, B:t(), { { 1.2666666666666666, -1.5333333333333332, 0.8333333333333333 },
      { 1.2666666666666666, -0.5333333333333333, -0.16666666666666669 } } },
    { { left = false, adjoint = true }, B:t(), { { -0.033333333333333326, 0.43333333333333335, 1.2666666666666666 },
      { 0.7, -0.09999999999999998, 1.4 } } },
  }
  it('values as PyTorch 1.13, without and with autograd (the same answer)', function()
    local LU, piv = torch.linalg.lu_factor(A)
    for _, c in ipairs(REF) do
      close(torch.linalg.lu_solve(LU, piv, c[2], c[1]), c[3], 1e-12)
      local lu = LU:clone():requires_grad_()
      local X = torch.linalg.lu_solve(lu, piv, c[2], c[1])
      assert.are.equal('LinalgLuSolveBackward0', X.grad_fn:name())
      close(X, c[3], 1e-12)
    end
    close(torch.lu_solve(B, LU, piv), REF[1][3], 1e-12)
    -- batched LU against one B, float32
    local As = torch.randn(3, 4, 4) + torch.eye(4) * 4
    local LUs, ps = torch.linalg.lu_factor(As)
    local Bs = torch.randn(4, 2)
    H.near(As:matmul(torch.linalg.lu_solve(LUs, ps, Bs)), Bs:expand(3, 4, 2), 1e-5, 1e-5)
  end)
  it('pivots out of range are PyTorch\'s error (never read out of bounds)', function()
    local LU = torch.linalg.lu_factor(A)
    local lo, hi = torch.tensor({ 0, 2, 3 }, { dtype = torch.int32 }), torch.tensor({ 4, 2, 3 }, { dtype = torch.int32 })
    local m1 = 'Pivots given to lu_solve must all be greater or equal to 1. Did you properly pass the result of lu_factor?'
    local m2 = 'Pivots given to lu_solve must all be smaller or equal to LU.size(-2).'
    H.errors_with(function() torch.linalg.lu_solve(LU, lo, B) end, m1)
    H.errors_with(function() torch.linalg.lu_solve(LU, hi, B) end, m2)
    H.errors_with(function() torch.lu_solve(B, LU, lo) end, m1)
    H.errors_with(function() torch.linalg.lu_solve(LU:clone():requires_grad_(), hi, B) end, m2)
    H.errors_with(function() torch.linalg.lu_solve(LU, torch.tensor({ 1, 2, 3 }), B) end, 'torch.int32')
  end)
end)

describe('linalg.ldl_factor / ldl_factor_ex / ldl_solve (sytrf, sytrs)', function()
  -- torch.linalg.ldl_factor(M) for these M (float64): LD.tolist(), pivots.tolist()
  local CASES = {
    { { { 4, 1, 2 }, { 1, -3, 0.5 }, { 2, 0.5, 3 } }, { { 4, 0, 0 }, { 0.25, -3.25, 0 }, { 0.5, 0, 2 } }, { 1, 2, 3 } },
    { { { 0, 1 }, { 1, 0 } }, { { 0, 0 }, { 1, 0 } }, { -2, -2 } },
    { { { 1, 2, 3 }, { 2, 1, 4 }, { 3, 4, 1 } }, { { 1, 0, 0 }, { 3, 1, 0 }, { 1.25, 0.25, -2.5 } }, { -3, -3, 3 } },
    { { { 0, 2, 3 }, { 2, 0, 4 }, { 3, 4, 0 } }, { { 0, 0, 0 }, { 3, 0, 0 }, { 4 / 3, 2 / 3, -16 / 3 } }, { -3, -3, 3 } },
  }
  it('LD and LAPACK\'s pivots as PyTorch 1.13 (1x1 and 2x2 blocks), ldl_solve solves', function()
    for _, c in ipairs(CASES) do
      local M = torch.tensor(c[1], f64)
      local LD, piv = torch.linalg.ldl_factor(M)
      close(LD, c[2], 1e-12)
      assert.are.equal(torch.int32, piv.dtype)
      assert.are.same(c[3], piv:tolist())
      local R = torch.randn(M:size(1), 2, f64)
      close(M:matmul(torch.linalg.ldl_solve(LD, piv, R)), R, 1e-10)
    end
    -- torch.linalg.ldl_solve(LD, piv, B) of the first case
    local LD, piv = torch.linalg.ldl_factor(torch.tensor(CASES[1][1], f64))
    close(torch.linalg.ldl_solve(LD, piv, B), { { -0.3942307692307693, 0.3846153846153846 },
      { 0.07692307692307693, 0.46153846153846156 }, { 1.25, 0.0 } }, 1e-12)
    close(torch.linalg.ldl_solve(LD, piv:long(), B, { hermitian = true }), torch.linalg.solve(torch.tensor(CASES[1][1], f64), B), 1e-12)
  end)
  it('batches and float32; ldl_factor_ex\'s info; not differentiable (PyTorch\'s error)', function()
    local X = torch.randn(3, 5, 5)
    local S = X + X:transpose(-2, -1)
    local LD, piv, info = torch.linalg.ldl_factor_ex(S)
    assert.are.equal(torch.float32, LD.dtype)
    assert.are.same({ 3, 5 }, H.shape(piv))
    assert.are.same({ 0, 0, 0 }, info:tolist())
    local R = torch.randn(5, 2)
    H.near(S:matmul(torch.linalg.ldl_solve(LD, piv, R)), R:expand(3, 5, 2), 1e-4, 1e-4)
    local _, p0, i0 = torch.linalg.ldl_factor_ex(torch.zeros(2, 2, f64))
    assert.are.same({ 1, 2 }, p0:tolist())
    assert.are.equal(1, i0:item())
    H.errors_with(function() torch.linalg.ldl_factor(torch.zeros(2, 2)) end,
      'linalg.ldl_factor: The factorization could not be completed because the input matrix is singular')
    H.errors_with(function() torch.linalg.ldl_factor_ex(torch.zeros(2, 2), { check_errors = true }) end,
      'linalg.ldl_factor_ex: The factorization could not be completed')
    local x = A:clone():requires_grad_()
    local LDg = torch.linalg.ldl_factor(x)
    H.errors_with(function() LDg:sum():backward() end, 'derivative for aten::linalg_ldl_factor_ex is not implemented')
  end)
  it('PyTorch\'s argument errors; pivots that are not a factorization\'s are refused (sytrs would read out of bounds)', function()
    local LD, piv = torch.linalg.ldl_factor(torch.tensor(CASES[1][1], f64))
    H.errors_with(function() torch.linalg.ldl_factor(torch.ones(2, 3)) end,
      'A must be batches of square matrices, but they are 2 by 3 matrices')
    H.errors_with(function() torch.linalg.ldl_factor(torch.ones(3)) end, 'The input tensor A must have at least 2 dimensions.')
    H.errors_with(function() torch.linalg.ldl_factor(torch.eye(2, { dtype = torch.int32 })) end,
      'Expected a floating point or complex tensor as input. Got Int')
    H.errors_with(function() torch.linalg.ldl_solve(LD, piv, torch.ones(2, 2, f64)) end,
      'Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is 3 by 3 but each b matrix is 2 by 2')
    H.errors_with(function() torch.linalg.ldl_solve(LD, piv, B:float()) end,
      'Expected b and A to have the same dtype, but found b of type Float and A of type Double instead.')
    for _, bad in ipairs({ { -1, 2, 3 }, { 1, 2, -3 }, { 1, 2, 4 }, { 0, 2, 3 }, { -2, -3, 3 } }) do
      H.errors_with(function() torch.linalg.ldl_solve(LD, torch.tensor(bad, { dtype = torch.int32 }), B) end,
        'is not a pivot of an LDL factorization of a 3 by 3 matrix')
    end
  end)
end)

describe('linalg.lu / lu_factor: the gradient of a non-square matrix (PyTorch\'s wide and tall formulas)', function()
  -- A = the top-left (4, 3) / (3, 5) block of FULL; loss (L * W1):sum() + (U * W2):sum() for linalg.lu, (LU * W):sum()
  -- for lu_factor, W1 = arange(L.numel()).reshape(L.shape) / 10, W2 = arange(U.numel()).reshape(U.shape) / 7 - 1,
  -- W = arange(LU.numel()).reshape(LU.shape) / 9 - 0.5; A.grad from PyTorch 1.13
  local FULL = torch.tensor({ { 2, 1, 0.5, 1, -1 }, { 1, 3, -1, 0, 2 }, { 0, 4, 1, 1, 1 }, { 1, 1, 1, 2, 0 } }, f64)
  local REF = {
    { { 4, 3 }, { { -1.3087103174603176, -1.149563492063492, -0.3946031746031746 },
      { 0.21908730158730155, 0.1881746031746032, -0.05269841269841278 },
      { 0.49274305555555553, -0.5957638888888889, -0.17944444444444438 },
      { 0.3983333333333333, 0.39666666666666667, -0.5866666666666667 } },
      { { -0.6189043209876541, -0.5155864197530865, -0.21543209876543207 },
        { 0.016049382716049373, 0.004320987654321012, 0.26049382716049374 },
        { -0.023861882716049394, -0.08939043209876547, -0.05910493827160485 },
        { 0.22175925925925927, 0.24907407407407411, -0.38518518518518524 } } },
    { { 3, 5 }, { { -1.2133928571428572, -0.6232142857142858, -1.0714285714285714, -1.0, -0.9285714285714286 },
      { 0.4267857142857142, -0.4678571428571428, 0.7142857142857142, 0.8571428571428572, 1.0 },
      { 0.21361607142857153, 0.14955357142857134, -0.4464285714285714, -0.392857142857143, -0.3392857142857142 } },
      { { -0.7083333333333333, -0.12500000000000006, -0.6944444444444444, -0.6388888888888888, -0.5833333333333334 },
        { 0.41666666666666663, -0.5277777777777777, 0.8333333333333333, 0.9444444444444444, 1.0555555555555556 },
        { -0.1388888888888888, 0.4965277777777777, -0.24305555555555547, -0.20138888888888895, -0.1597222222222222 } } },
  }
  it('values as PyTorch 1.13', function()
    for _, c in ipairs(REF) do
      local A0 = FULL:narrow(1, 1, c[1][1]):narrow(2, 1, c[1][2])
      local a = A0:clone():requires_grad_()
      local _, L, U = torch.linalg.lu(a)
      local W1 = torch.arange(L:numel(), f64):reshape(L:size()) / 10
      local W2 = torch.arange(U:numel(), f64):reshape(U:size()) / 7 - 1
      ;((L * W1):sum() + (U * W2):sum()):backward()
      close(a.grad, c[2], 1e-12)
      local a2 = A0:clone():requires_grad_()
      local LU = torch.linalg.lu_factor(a2)
      ;(LU * (torch.arange(LU:numel(), f64):reshape(LU:size()) / 9 - 0.5)):sum():backward()
      close(a2.grad, c[3], 1e-12)
    end
  end)
  it('gradcheck: tall and wide, L alone, U alone, batched', function()
    for _, sh in ipairs({ { 5, 3 }, { 3, 5 }, { 2, 4, 3 } }) do
      local a = torch.randn(sh, f64):requires_grad_()
      assert.is_true(torch.autograd.gradcheck(function(x) local _, L, U = torch.linalg.lu(x) return L:sum() + U:sum() end, { a }))
      assert.is_true(torch.autograd.gradcheck(function(x) local _, L = torch.linalg.lu(x) return L end, { a }))
      assert.is_true(torch.autograd.gradcheck(function(x) local _, _, U = torch.linalg.lu(x) return U end, { a }))
      assert.is_true(torch.autograd.gradcheck(function(x) return (torch.linalg.lu_factor(x)) end, { a }))
    end
  end)
end)

describe('torch.geqrf with grad', function()
  it('records GeqrfBackward0, whose backward is PyTorch 1.13\'s error', function()
    local x = torch.randn(4, 3, f64):requires_grad_()
    local a, tau = torch.geqrf(x)
    assert.are.equal('GeqrfBackward0', a.grad_fn:name())
    assert.are.equal('GeqrfBackward0', tau.grad_fn:name())
    H.errors_with(function() a:sum():backward() end, "the derivative for 'geqrf' is not implemented.")
    local a0 = torch.geqrf(x:detach())
    close(a, a0, 0)
  end)
end)
