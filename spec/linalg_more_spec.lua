-- spec/linalg_more_spec.lua: torch.linalg.multi_dot, vander, diagonal, tensorinv, tensorsolve (lua/ops/linalg.lua).
--
-- Expected values were recorded from PyTorch 1.13 (/usr/bin/python3, `import torch`) with the tensors written here
-- (float64): `torch.linalg.multi_dot([a, b, c])`, `torch.linalg.vander(x)`, ... printed with .tolist(); shapes by
-- .shape, grad_fn names by .grad_fn.name(); the gradient of tensorsolve by `r.sum().backward()`. Error messages
-- were taken from the same PyTorch (its 0-based tensor numbers are 1-based here, as everywhere in moontorch).
local H = require 'spec.support.helper'
local torch = H.torch

local f64 = { dtype = torch.float64 }
local function close(a, b, tol) return H.near(a, b, tol or 1e-9, tol or 1e-9) end

describe('linalg.multi_dot', function()
  local a = torch.arange(6, f64):reshape(2, 3)
  local b = torch.arange(12, f64):reshape(3, 4)
  local c = torch.arange(4, f64):reshape(4, 1)
  it('products, vectors at the ends, grad_fn as PyTorch 1.13', function()
    local ag = a:clone():requires_grad_()
    local r = torch.linalg.multi_dot({ ag, b })
    close(r, { { 20, 23, 26, 29 }, { 56, 68, 80, 92 } })
    assert.are.equal('ViewBackward0', r.grad_fn:name())
    close(torch.linalg.multi_dot({ ag, b, c }), { { 162 }, { 504 } })
    local v = torch.ones(3, f64):requires_grad_()
    local s = torch.linalg.multi_dot({ v, b, torch.ones(4, f64) })
    assert.are.same({}, H.shape(s))
    close(s:item(), 66)
    assert.are.equal('ViewBackward0', s.grad_fn:name())
    close(torch.linalg.multi_dot({ v, b }), { 12, 15, 18, 21 })
    close(torch.linalg.multi_dot({ torch.ones(3, f64), torch.ones(3, f64) }):item(), 3)
  end)
  it('any order of a long chain gives the product (and the gradients)', function()
    local ms = { torch.randn(10, 2, f64), torch.randn(2, 30, f64), torch.randn(30, 3, f64), torch.randn(3, 40, f64),
      torch.randn(40, 1, f64) }
    local naive = ms[1]
    for i = 2, #ms do naive = naive:mm(ms[i]) end
    close(torch.linalg.multi_dot(ms), naive, 1e-10)
    local gs = {}
    for i = 1, 3 do gs[i] = ms[i]:clone():requires_grad_() end
    assert.is_true(torch.autograd.gradcheck(function(x, y, z) return torch.linalg.multi_dot({ x, y, z }) end, gs))
  end)
  it('PyTorch\'s errors', function()
    H.errors_with(function() torch.linalg.multi_dot({ a }) end, 'multi_dot(): expected at least 2 tensors but got 1')
    H.errors_with(function() torch.linalg.multi_dot({}) end, 'multi_dot(): expected at least 2 tensors but got 0')
    H.errors_with(function() torch.linalg.multi_dot({ torch.ones(2, 2, 2), b }) end,
      'multi_dot(): the first tensor must be 1D or 2D but got 3D')
    H.errors_with(function() torch.linalg.multi_dot({ a, torch.ones(2, 2, 2) }) end,
      'multi_dot(): the last tensor must be 1D or 2D but got 3D')
    H.errors_with(function() torch.linalg.multi_dot({ a, torch.ones(3), b }) end, 'multi_dot(): tensor 2 must be 2D but got 1D')
    H.errors_with(function() torch.linalg.multi_dot({ a, b:float() }) end, 'multi_dot(): all tensors must have be the same dtype')
    H.errors_with(function() torch.linalg.multi_dot({ a, torch.ones(4, 5, f64) }) end,
      'multi_dot(): tensors 1 and 2 with shapes [2, 3] and [4, 5] cannot be multiplied')
    H.errors_with(function() torch.linalg.multi_dot(a) end, 'linalg.multi_dot: expected a table of tensors, got a tensor')
    H.errors_with(function() torch.linalg.multi_dot({ a, 3 }) end, 'linalg.multi_dot: expected a tensor for tensor 2')
  end)
end)

describe('linalg.vander / diagonal', function()
  it('vander: increasing powers, N, batches, CatBackward0 as PyTorch 1.13', function()
    local x = torch.tensor({ 1, 2, 3 }, f64):requires_grad_()
    local v = torch.linalg.vander(x)
    close(v, { { 1, 1, 1 }, { 1, 2, 4 }, { 1, 3, 9 } })
    assert.are.equal('CatBackward0', v.grad_fn:name())
    close(torch.linalg.vander(x, { N = 2 }), { { 1, 1 }, { 1, 2 }, { 1, 3 } })
    close(torch.linalg.vander(x, 4), { { 1, 1, 1, 1 }, { 1, 2, 4, 8 }, { 1, 3, 9, 27 } })
    assert.are.same({ 2, 3, 4 }, H.shape(torch.linalg.vander(torch.ones(2, 3), { N = 4 })))
    v:sum():backward()
    close(x.grad, { 3, 5, 7 }) -- d/dx (1 + x + x^2)
    H.errors_with(function() torch.linalg.vander(x, { N = 1 }) end, 'linalg.vander: N must be greater than 1.')
    H.errors_with(function() torch.linalg.vander(x, 0) end, 'N must be greater than 1.')
    H.errors_with(function() torch.linalg.vander(torch.tensor(2)) end, 'N must be greater than 1.')
    H.errors_with(function() torch.linalg.vander(x, 2.5) end, 'linalg.vander: expected an integer N, got 2.5')
  end)
  it('diagonal: the last two dims by default, offset / dim1 / dim2 as torch.diagonal', function()
    local t = torch.arange(24):reshape(2, 3, 4)
    close(torch.linalg.diagonal(t), { { 0, 5, 10 }, { 12, 17, 22 } })
    close(torch.linalg.diagonal(t, { offset = 1, dim1 = 1, dim2 = 3 }), { { 1, 14 }, { 5, 18 }, { 9, 22 } })
    local g = torch.randn(3, 3, f64):requires_grad_()
    assert.are.equal('DiagonalBackward0', torch.linalg.diagonal(g).grad_fn:name())
    H.errors_with(function() torch.linalg.diagonal(t, 1) end, 'linalg.diagonal: expected an options table')
  end)
end)

describe('linalg.tensorinv / tensorsolve', function()
  local T = torch.eye(6, f64):reshape(2, 3, 6) * 2 + 0.1
  local TT = (torch.eye(6, f64) * 2 + torch.arange(36, f64):reshape(6, 6) / 100):reshape(2, 3, 2, 3)
  it('tensorinv: shapes and values as PyTorch 1.13', function()
    assert.are.same({ 2, 3, 6 }, H.shape(torch.linalg.tensorinv(T:reshape(6, 2, 3), 1)))
    local r = torch.linalg.tensorinv(T, { ind = 2 })
    assert.are.same({ 6, 2, 3 }, H.shape(r))
    -- the defining property: tensordot(r, T) over r's last two and T's first two dims is the identity
    close(r:reshape(6, 6):matmul(T:reshape(6, 6)), torch.eye(6, f64), 1e-12)
    -- torch.linalg.tensorinv(TT.reshape(6, 2, 3), ind=1)[0, 0]
    close(torch.linalg.tensorinv(TT:reshape(6, 2, 3), 1)[1][1], { 0.5027331456021202, 0.0003312903760145768,
      -0.002070564850091105, -0.004472420076196786, -0.006874275302302467, -0.009276130528408151 }, 1e-12)
    H.errors_with(function() torch.linalg.tensorinv(T, 0) end, "Expected a strictly positive integer for 'ind', but got 0")
    H.errors_with(function() torch.linalg.tensorinv(T, 1) end,
      'Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), but got 18 != 2')
    H.errors_with(function() torch.linalg.tensorinv(torch.zeros(2, 2, 4, f64), 2) end,
      'linalg.tensorinv: The diagonal element 1 is zero, the inversion could not be completed')
  end)
  it('tensorsolve: shapes, dims, values and gradient as PyTorch 1.13', function()
    close(torch.linalg.tensorsolve(T, torch.ones(2, 3, f64)), torch.full({ 6 }, 0.3846153846153846, f64), 1e-12)
    assert.are.same({ 2, 3 }, H.shape(torch.linalg.tensorsolve(T:reshape(2, 3, 2, 3), torch.ones(2, 3, f64))))
    assert.are.same({ 3, 2 }, H.shape(torch.linalg.tensorsolve(T:reshape(2, 3, 2, 3), torch.ones(2, 3, f64), { 1 })))
    -- r = torch.linalg.tensorsolve(TT, arange(6).reshape(2, 3), dims=(0,)); r.sum().backward(); TT.grad.flatten()[:6]
    local tt = TT:clone():requires_grad_()
    local r = torch.linalg.tensorsolve(tt, torch.arange(6, f64):reshape(2, 3), { dims = { 1 } })
    close(r, { { -0.3064435978134835, 0.12423389100546633 }, { 0.5549113798244162, 0.9855888686433658 },
      { 1.4162663574623156, 1.8469438462812653 } }, 1e-12)
    r:sum():backward()
    close(tt.grad:reshape(-1):narrow(1, 1, 6), { 0.1319783591709553, -0.238987839579838, -0.6099540383306311,
      0.07715657920763541, -0.13971596775436684, -0.35658851471636904 }, 1e-12)
    H.errors_with(function() torch.linalg.tensorsolve(T, torch.ones(6, f64)) end,
      'prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), but got 18 != 6')
    H.errors_with(function() torch.linalg.tensorsolve(torch.zeros(2, 3, 6, f64), torch.ones(2, 3, f64)) end,
      'linalg.tensorsolve: The solver failed because the input matrix is singular.')
  end)
end)
