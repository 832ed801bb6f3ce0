-- softmax and log_softmax (s6-vec): the vector kernels of core/tensor/softmax.c in this process (the
-- CPU's best level; spec/softmax_paths_spec.lua runs every level) and the fused backward of
-- core/ops/softmax.c, which SoftmaxBackward0 / LogSoftmaxBackward0 use when the backward is not recorded:
-- float64 gradchecks, the fused backward against the composed formula (what create_graph records),
-- gradients of other dtypes and layouts, threads, the meta device, and no leaks.
local H = require 'spec.support.helper'
local torch = H.torch
local F = require('moontorch.nn').functional
local ag = torch.autograd
local C = torch._C

local f64 = torch.float64

-- the input gradient of y = f(x) for the output gradient g, as backward computes it without
-- create_graph (the fused kernel) and with it (the formula of front doors)
local function grads(f, x, g)
  local xa = x:detach():requires_grad_()
  local fused = ag.grad(f(xa), { xa }, { grad_outputs = { g } })[1]
  local xb = x:detach():requires_grad_()
  local composed = ag.grad(f(xb), { xb }, { grad_outputs = { g }, create_graph = true })[1]
  return fused, composed:detach()
end

describe('softmax and log_softmax', function()
  it('pass gradcheck and gradgradcheck in float64 over every dim and on transposed inputs', function()
    torch.manual_seed(3)
    local x = torch.randn(3, 4, 5, { dtype = f64 })
    local xt = torch.randn(5, 4, { dtype = f64 }):t()
    for _, name in ipairs({ 'softmax', 'log_softmax' }) do
      for dim = 1, 3 do
        local f = function(a) return a[name](a, dim) end
        assert.is_true(ag.gradcheck(f, { x:clone():requires_grad_() }), name .. ' dim ' .. dim)
        assert.is_true(ag.gradgradcheck(f, { x:clone():requires_grad_() }), name .. ' dim ' .. dim .. ' (second order)')
      end
      for dim = 1, 2 do
        local f = function(a) return a:t()[name](a:t(), dim) end
        assert.is_true(ag.gradcheck(f, { xt:t():clone():requires_grad_() }), name .. ' transposed, dim ' .. dim)
      end
      -- cross_entropy through log_softmax and nll_loss
      local t = torch.tensor({ 2, 5, 1 }, { dtype = torch.int64 })
      assert.is_true(ag.gradcheck(function(a) return F.cross_entropy(a, t) end,
        { torch.randn(3, 5, { dtype = f64 }):requires_grad_() }))
    end
  end)

  it('fused backward equals the composed formula: float64 to rounding, float32 to float32 rounding', function()
    torch.manual_seed(4)
    for _, shape in ipairs({ { 6, 1000 }, { 4, 5, 70 }, { 3, 17, 2 }, { 33 } }) do
      for dim = 1, #shape do
        for _, name in ipairs({ 'softmax', 'log_softmax' }) do
          local f = function(a) return a[name](a, dim) end
          local x = torch.randn(unpack(shape)) * 4
          local g = torch.randn(unpack(shape))
          local fu, co = grads(f, x:double(), g:double())
          assert.are.equal(f64, fu.dtype)
          H.near(fu, co, 1e-13, 1e-12)
          local fu32, co32 = grads(f, x, g)
          assert.are.equal(torch.float32, fu32.dtype)
          H.near(fu32, co32, 2e-6, 1e-5)
          H.near(fu32:double(), fu, 2e-6, 1e-5)
        end
      end
    end
  end)

  it('keep PyTorch\'s grad_fn names, and the fused backward gives what create_graph gives on dtype=float64',
    function()
      local x = torch.randn(4, 9):requires_grad_()
      assert.are.equal('SoftmaxBackward0', x:softmax(2).grad_fn:name())
      assert.are.equal('LogSoftmaxBackward0', x:log_softmax(1).grad_fn:name())
      local t = torch.tensor({ 1, 2, 3, 9 }, { dtype = torch.int64 })
      local loss = F.cross_entropy(x, t)
      assert.are.equal('NllLossBackward0', loss.grad_fn:name())
      assert.are.equal('LogSoftmaxBackward0', loss.grad_fn.next_functions[1][1]:name())
      -- a float32 input with a float64 result: the float64 gradient of the fused kernel and of the formula
      -- agree, and x.grad is float32
      local g = torch.randn(4, 9, { dtype = f64 })
      local fu, co = grads(function(a) return a:softmax(2, f64) end, x, g)
      assert.are.equal(co.dtype, fu.dtype)
      H.near(fu, co, 1e-12, 1e-12)
      x:softmax(2, f64):backward(g)
      assert.are.equal(torch.float32, x.grad.dtype)
      H.near(x.grad:double(), fu, 1e-7, 1e-6)
    end)

  it('take broadcast output gradients (y:sum():backward()) and empty tensors', function()
    local x = torch.randn(5, 7):requires_grad_()
    x:softmax(2):sum():backward()
    H.near(x.grad, torch.zeros(5, 7), 1e-6) -- each row of a softmax sums to 1
    local xl = x:detach():double():requires_grad_()
    xl:log_softmax(2):sum():backward()
    H.near(xl.grad, 1 - xl:detach():softmax(2) * 7, 1e-12)
    local e = torch.randn(0, 4):requires_grad_()
    e:softmax(2):sum():backward()
    assert.are.same({ 0, 4 }, H.shape(e.grad))
    local e2 = torch.randn(3, 0):requires_grad_()
    e2:log_softmax(1):sum():backward()
    assert.are.same({ 3, 0 }, H.shape(e2.grad))
  end)

  it('give the same bits on 1 and 2 threads (rows and column blocks split over the pool)', function()
    torch.manual_seed(5)
    local x = torch.randn(300, 1000) * 5
    local c = torch.randn(16, 40, 200) * 5
    local n0 = torch.get_num_threads()
    local out = {}
    for _, n in ipairs({ 1, 2 }) do
      torch.set_num_threads(n)
      local xg, cg = x:clone():requires_grad_(), c:clone():requires_grad_()
      local y, z = xg:log_softmax(2), cg:softmax(2)
      y:backward(x); z:backward(c)
      out[n] = { y:detach(), z:detach(), xg.grad, cg.grad }
    end
    torch.set_num_threads(n0)
    for i = 1, 4 do assert.is_true(torch.equal(out[1][i], out[2][i]), 'result ' .. i) end
  end)

  it('run forward and backward on the meta device', function()
    local x = torch.ones(4, 6, { device = 'meta', requires_grad = true })
    x:log_softmax(2):sum():backward()
    assert.is_true(x.grad.is_meta)
    assert.are.same({ 4, 6 }, H.shape(x.grad))
  end)

  it('return the live tensor count to its baseline', function()
    local sweep = require('moontorch.tensor').sweep
    local x = torch.randn(8, 100)
    local g = torch.randn(8, 100)
    sweep()
    local base = C.mt_get_stats().live_tensors
    for _ = 1, 10 do
      for _, name in ipairs({ 'softmax', 'log_softmax' }) do
        for dim = 1, 2 do
          local xg = x:clone():requires_grad_()
          xg[name](xg, dim):backward(g)
          local _ = xg.grad:t() + x:t()[name](x:t(), dim)
        end
      end
    end
    sweep()
    assert.are.equal(base, C.mt_get_stats().live_tensors)
  end)
end)
