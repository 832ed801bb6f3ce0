-- A backward started while another runs (re-entrant, as PyTorch's engine): torch.autograd.grad in
-- a Function's backward (a gradient penalty), backward/autograd.grad in hooks, create_graph nested,
-- a Function whose backward applies another. Each used to crash the process (the inner engine took
-- the outer one's per-node scratch). Values recorded from PyTorch 1.13 (/usr/bin/python3, float64)
-- running the same programs.
local H = require 'spec.support.helper'
local torch = H.torch

local grad, eg, Fn = torch.autograd.grad, torch.enable_grad, torch.autograd.Function
local f64 = torch.float64
local function leaf(t) return torch.tensor(t, { dtype = f64, requires_grad = true }) end

describe('re-entrant backward', function()
  it('autograd.grad inside a Function backward, through the outer graph (x = a*3)', function()
    local F = Fn('PenaltyThrough')
    function F.forward(ctx, x) ctx:save_for_backward(x) return x * 2 end
    function F.backward(ctx, g)
      local x = unpack(ctx.saved_tensors)
      local gx = eg(function() return grad((x ^ 3):sum(), x, { retain_graph = true })[1] end)
      return g * gx
    end
    local a = leaf({ 1, 2, 3 })
    local x = a * 3
    ;(F.apply(x):sum() + (x * x):sum()):backward()
    H.near(a.grad, { 99, 360, 783 }, 1e-9)
  end)

  it('autograd.grad inside a Function backward, to the leaf the outer graph also reaches', function()
    local F = Fn('PenaltyLeaf')
    function F.forward(ctx, x, a) ctx:save_for_backward(x, a) return x * 2 end
    function F.backward(ctx, g)
      local x, a = unpack(ctx.saved_tensors)
      local ga = eg(function() return grad((x ^ 2):sum(), a, { retain_graph = true })[1] end)
      return g * 2, g * ga
    end
    local a = leaf({ 1, 2, 3 })
    local x = a:sin()
    ;(F.apply(x, a) ^ 2):sum():backward()
    H.near(a.grad, { 6.6977793122, -5.7798442276, -1.2753864622 }, 1e-9)
    -- the leaf's own input saved: the inner grad's graph meets the outer's AccumulateGrad node
    local G = Fn('PenaltySaved')
    function G.forward(ctx, x) ctx:save_for_backward(x) return x * 2 end
    function G.backward(ctx, g)
      local x = unpack(ctx.saved_tensors)
      return g * eg(function() return grad((x ^ 3):sum(), x)[1] end)
    end
    local y = leaf({ 1, 2, 3 })
    G.apply(y):sum():backward()
    H.near(y.grad, { 3, 12, 27 }, 1e-12)
  end)

  it('backward inside a tensor hook: of another graph, and of the same graph (retain_graph)', function()
    local b, a = leaf({ 0.5, 1.5 }), leaf({ 1, 2 })
    local y = a * a
    y:register_hook(function(g) eg(function() (b * b * g:sum()):sum():backward() end) return g * 2 end)
    y:sum():backward()
    H.near(a.grad, { 4, 8 }, 1e-12)
    H.near(b.grad, { 2, 6 }, 1e-12)
    a = leaf({ 1, 2 })
    local z = a * a
    local w = z:exp()
    w:register_hook(function(g) eg(function() z:sum():backward({ retain_graph = true }) end) return g end)
    w:sum():backward()
    H.near(a.grad, { 7.4365636569, 222.3926001326 }, 1e-8)
  end)

  it('autograd.grad inside a tensor hook', function()
    local a, c = leaf({ 1, 2 }), leaf({ 3, 4 })
    local y = a * c
    y:register_hook(function(g) return g * eg(function() return grad((c ^ 3):sum(), c)[1] end) end)
    y:sum():backward()
    H.near(a.grad, { 81, 192 }, 1e-12)
    H.near(c.grad, { 27, 96 }, 1e-12)
  end)

  it('create_graph nested: a double backward inside a backward; a nested grad under an outer create_graph', function()
    local GP = Fn('NestedDouble')
    function GP.forward(ctx, x) ctx:save_for_backward(x) return (x ^ 3):sum() end
    function GP.backward(ctx, g)
      local x = unpack(ctx.saved_tensors)
      return eg(function()
        local xx = x:detach():requires_grad_()
        local gx = grad((xx ^ 3):sum(), xx, { create_graph = true })[1]
        local ggx = grad(gx:sum(), xx)[1]
        H.near(ggx, { 6, 12, 18 }, 1e-12)
        return g * gx:detach()
      end)
    end
    local x = leaf({ 1, 2, 3 })
    GP.apply(x):backward()
    H.near(x.grad, { 3, 12, 27 }, 1e-12)
    local Sq = Fn('NestedSq')
    function Sq.forward(ctx, v) ctx:save_for_backward(v) return v * v end
    function Sq.backward(ctx, g)
      local v = unpack(ctx.saved_tensors)
      return g * eg(function() local vv = v:detach():requires_grad_() return grad((vv * vv):sum(), vv)[1] end)
    end
    x = leaf({ 1, 2, 3 })
    H.near(grad(Sq.apply(x):sum(), x, { create_graph = true })[1], { 2, 4, 6 }, 1e-12)
  end)

  it("a Function whose backward applies another Function (recorded under create_graph)", function()
    local Twice = Fn('Twice')
    function Twice.forward(_, v) return v * 2 end
    function Twice.backward(_, g) return g * 2 end
    local Outer = Fn('OuterExp')
    function Outer.forward(ctx, v) ctx:save_for_backward(v) return v:exp() end
    function Outer.backward(ctx, g) local v = unpack(ctx.saved_tensors) return Twice.apply(g * v:exp()) end
    local x = leaf({ 0, 1 })
    Outer.apply(x):sum():backward()
    H.near(x.grad, { 2, 5.4365636569 }, 1e-9)
    x = leaf({ 0, 1 })
    local gx = grad(Outer.apply(x):sum(), x, { create_graph = true })[1]
    assert.are.equal('TwiceBackward', gx.grad_fn:name())
    gx:sum():backward()
    H.near(x.grad, { 2, 5.4365636569 }, 1e-9)
  end)

  it('an error in the inner backward reaches the outer one as a Lua error; the engine stays usable', function()
    local F = Fn('InnerFails')
    function F.forward(_, v) return v * 2 end
    function F.backward(_, g)
      local p = leaf({ 1, 2 })
      eg(function() grad((p * 2):sum(), leaf({ 5 })) end) -- not in the graph
      return g
    end
    local x = leaf({ 1, 2 })
    H.errors_with(function() F.apply(x):sum():backward() end, 'appears to not have been used in the graph')
    local q = leaf({ 1, 2 })
    ;(q * q):sum():backward()
    H.near(q.grad, { 2, 4 }, 1e-12)
  end)

  it('a backward left suspended in a coroutine: the outer one resumed is a Lua error, not a crash', function()
    local a = leaf({ 1, 2 })
    local y = a * a
    y:register_hook(function(g) coroutine.yield() return g end)
    local co = coroutine.create(function() y:sum():backward() end)
    assert.is_true((coroutine.resume(co)))
    local a2 = leaf({ 1, 2 })
    local y2 = a2 * 3
    local ok, err
    y2:register_hook(function(g) ok, err = coroutine.resume(co) return g end)
    y2:sum():backward()
    assert.is_false(ok)
    assert.truthy(tostring(err):find('backward: a backward started inside this one', 1, true))
    H.near(a2.grad, { 3, 3 }, 1e-12)
    assert.is_nil(a.grad)
    local q = leaf({ 1, 2 })
    ;(q * q):sum():backward()
    H.near(q.grad, { 2, 4 }, 1e-12)
  end)
end)
