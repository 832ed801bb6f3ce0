-- torch.autograd.Function (Lua backward functions) and anomaly mode.
local H = require 'spec.support.helper'
local torch = H.torch
local T = require 'moontorch.tensor'

local f64 = torch.float64
local function leaf(t) return torch.tensor(t, { dtype = f64, requires_grad = true }) end
local function live() return tonumber(torch._C.mt_live_nodes()) end
-- the line of this file that holds `marker` (twice: the marker and the search for it)
local function line_of(marker)
  local n = 0
  for l in io.lines(debug.getinfo(1, 'S').source:sub(2)) do
    n = n + 1
    if l:find(marker, 1, true) and not l:find('line_of', 1, true) then return n end
  end
end

local Exp = torch.autograd.Function('Exp')
function Exp.forward(ctx, x)
  local y = x:exp()
  ctx:save_for_backward(y)
  return y
end
function Exp.backward(ctx, g)
  local y = unpack(ctx.saved_tensors)
  return g * y
end

-- forget the state of dead nodes (as every apply and backward does) and collect
local function settle()
  for _ = 1, 4 do
    T.sweep()
    Exp.apply(torch.ones(1, { requires_grad = true }))
  end
  T.sweep()
end

-- y = x @ w^T + b, as PyTorch's LinearFunction example
local Linear = torch.autograd.Function('LinearFn')
function Linear.forward(ctx, x, w, b)
  ctx:save_for_backward(x, w, b)
  local y = x:matmul(w:t())
  if b then y = y + b end
  return y
end
function Linear.backward(ctx, g)
  local x, w, b = unpack(ctx.saved_tensors)
  local gx, gw, gb
  if ctx.needs_input_grad[1] then gx = g:matmul(w) end
  if ctx.needs_input_grad[2] then gw = g:t():matmul(x) end
  if b and ctx.needs_input_grad[3] then gb = g:sum(1) end
  return gx, gw, gb
end

describe('torch.autograd.Function', function()
  it('computes values and gradients, names its node, passes gradcheck', function()
    local x = leaf({ 0.5, 1, 2 })
    local y = Exp.apply(x)
    H.near(y, { math.exp(0.5), math.exp(1), math.exp(2) }, 1e-12)
    assert.are.equal('ExpBackward', y.grad_fn:name())
    assert.truthy(tostring(y):find('grad_fn=<ExpBackward>', 1, true))
    assert.are.equal('AccumulateGrad', y.grad_fn.next_functions[1][1]:name())
    y:sum():backward()
    H.near(x.grad, { math.exp(0.5), math.exp(1), math.exp(2) }, 1e-12)
    -- Exp:apply(x) is the same call
    local y2 = Exp:apply(x)
    assert.is_true(torch.equal(y, y2))
    assert.is_true(torch.autograd.gradcheck(Exp.apply, { leaf({ 0.1, -0.3 }) }))
    assert.is_true(torch.autograd.gradcheck(function(a) return Exp.apply(a * 2):sin() end, { leaf({ 0.1, -0.3 }) }))
  end)

  it('works as a class made with torch.class (Cls:apply)', function()
    local Sq = torch.class('SquareFn', 'torch.autograd.Function')
    function Sq.forward(ctx, x) ctx:save_for_backward(x) return x * x end
    function Sq.backward(ctx, g) local x = unpack(ctx.saved_tensors) return g * 2 * x end
    local x = leaf({ 3 })
    local y = Sq:apply(x)
    assert.are.equal('SquareFnBackward', y.grad_fn:name())
    y:backward()
    H.near(x.grad, { 6 })
    H.errors_with(function() Sq.apply(x) end, 'Cls:apply')
    H.errors_with(function() Exp(x) end, 'Exp.apply')
  end)

  it('handles several inputs (with nil and numbers) and gradchecks a linear layer', function()
    torch.manual_seed(1)
    local x = torch.randn(4, 3, { dtype = f64, requires_grad = true })
    local w = torch.randn(2, 3, { dtype = f64, requires_grad = true })
    local b = torch.randn(2, { dtype = f64, requires_grad = true })
    local y = Linear.apply(x, w, b)
    H.near(y, x:detach():matmul(w:detach():t()) + b:detach(), 1e-12)
    assert.is_true(torch.autograd.gradcheck(Linear.apply, { x, w, b }))
    assert.is_true(torch.autograd.gradcheck(Linear.apply, { x, w }))
    -- an input that needs no grad gets none, and needs_input_grad says so
    local seen
    local Opt = torch.autograd.Function('OptSave')
    function Opt.forward(ctx, a, b) ctx:save_for_backward(nil, b) return a * b end
    function Opt.backward(ctx, g)
      local s = ctx.saved_tensors
      assert(s[1] == nil)
      return g * s[2], nil
    end
    local o1 = leaf({ 2 })
    Opt.apply(o1, torch.tensor({ 5 }, { dtype = f64 })):sum():backward()
    H.near(o1.grad, { 5 })
    local Probe = torch.autograd.Function('Probe')
    function Probe.forward(ctx, a, k, c, name)
      assert(type(k) == 'number' and name == 'tag')
      ctx.k = k
      return a * k + c
    end
    function Probe.backward(ctx, g)
      seen = ctx.needs_input_grad
      return g * ctx.k, nil, g, nil
    end
    local a, c = leaf({ 1, 2 }), torch.tensor({ 5, 6 }, { dtype = f64 })
    Probe.apply(a, 3, c, 'tag'):sum():backward()
    assert.are.same({ true, false, false, false }, seen)
    H.near(a.grad, { 3, 3 })
    assert.is_nil(c.grad)
    -- no input requires grad: no node, the outputs need none
    local z = Probe.apply(c, 2, c, 'tag')
    assert.is_nil(z.grad_fn)
    assert.is_false(z.requires_grad)
    -- under no_grad: no node either
    assert.is_nil(torch.no_grad(function() return Exp.apply(a) end).grad_fn)
  end)

  it('forward runs under no_grad; several outputs as values or an array', function()
    local inside
    local Split = torch.autograd.Function('Split')
    function Split.forward(ctx, x)
      inside = torch.is_grad_enabled()
      return x * 2, x * 3, 'label'
    end
    function Split.backward(ctx, g1, g2, g3)
      assert(g3 == nil)
      return g1 * 2 + g2 * 3
    end
    local x = leaf({ 1, 2 })
    local a, b, s = Split.apply(x)
    assert.is_false(inside)
    assert.are.equal('label', s)
    assert.are.equal(a.grad_fn, b.grad_fn)
    assert.are.equal(0, a.output_nr)
    assert.are.equal(1, b.output_nr)
    ;(a + b):sum():backward()
    H.near(x.grad, { 5, 5 })
    -- only one output used: the other's gradient is materialized as zeros
    x.grad = nil
    local a2 = Split.apply(x)
    a2:sum():backward()
    H.near(x.grad, { 2, 2 })

    local Arr = torch.autograd.Function('Arr')
    function Arr.forward(ctx, x) return { x + 1, x - 1 } end
    function Arr.backward(ctx, g1, g2) return { g1 + g2 } end
    local r = Arr.apply(x)
    assert.are.equal('table', type(r))
    assert.are.equal('ArrBackward', r[1].grad_fn:name())
    x.grad = nil
    ;(r[1] * r[2]):sum():backward()
    H.near(x.grad, { 2, 4 }) -- d/dx (x+1)(x-1) = 2x
    assert.is_true(torch.autograd.gradcheck(function(t) local q = Arr.apply(t) return q[1] * q[2] end, { leaf({ 0.3, 0.7 }) }))
  end)

  it('set_materialize_grads(false) passes nil for missing gradients', function()
    local got
    local Two = torch.autograd.Function('Two')
    function Two.forward(ctx, x)
      ctx:set_materialize_grads(false)
      return x * 1, x * 1
    end
    function Two.backward(ctx, g1, g2)
      got = { g1 == nil, g2 == nil }
      local g = g1 or g2
      return g
    end
    local x = leaf({ 1 })
    local a, b = Two.apply(x)
    b:sum():backward()
    assert.are.same({ true, false }, got)
    H.near(x.grad, { 1 })
  end)

  it('mark_non_differentiable: no grad_fn, zeros in backward', function()
    local got
    local Sort = torch.autograd.Function('SortFn')
    function Sort.forward(ctx, x)
      local v, i = x:sort()
      local m = x:max()
      ctx:mark_non_differentiable(m)
      ctx:save_for_backward(i)
      return v, i, m
    end
    function Sort.backward(ctx, gv, gi, gm)
      got = gm
      local i = unpack(ctx.saved_tensors)
      local gx = torch.zeros(gv:size(), { dtype = gv.dtype })
      for k = 1, gv:numel() do gx[i[k]:item()] = gv[k] end
      return gx
    end
    local x = leaf({ 3, 1, 2 })
    local v, i, m = Sort.apply(x)
    assert.are.equal('SortFnBackward', v.grad_fn:name())
    assert.is_false(i.requires_grad) -- integer outputs are never differentiable
    assert.is_nil(m.grad_fn)
    assert.is_false(m.requires_grad)
    ;(v * torch.tensor({ 1, 10, 100 }, { dtype = f64 })):sum():backward()
    H.near(x.grad, { 100, 1, 10 })
    H.near(got, 0)
  end)

  it('mark_dirty: an in-place forward, refusing leaves that require grad', function()
    local Double = torch.autograd.Function('DoubleInPlace')
    function Double.forward(ctx, x)
      x:mul_(2)
      ctx:mark_dirty(x)
      return x
    end
    function Double.backward(ctx, g) return g * 2 end
    local a = leaf({ 1, 2 })
    local x = a * 1
    local y = Double.apply(x)
    assert.is_true(rawequal(x, y) or torch.equal(x, y))
    assert.are.equal('DoubleInPlaceBackward', x.grad_fn:name())
    assert.are.equal('MulBackward0', x.grad_fn.next_functions[1][1]:name())
    H.near(x, { 2, 4 })
    ;(y * y):sum():backward()
    H.near(a.grad, { 8, 16 }) -- d/da (2a)^2
    H.errors_with(function() Double.apply(leaf({ 1 })) end, 'a leaf Variable that requires grad is being used in an in-place operation')
    local Forgot = torch.autograd.Function('Forgot')
    function Forgot.forward(ctx, x) x:add_(1) ctx:mark_dirty(x) return x * 1 end
    function Forgot.backward(ctx, g) return g end
    H.errors_with(function() Forgot.apply(a * 1) end, 'marked as dirty')
  end)

  it('returns an input unchanged as a new tensor (not the input itself)', function()
    local Id = torch.autograd.Function('Id')
    function Id.forward(ctx, x) return x end
    function Id.backward(ctx, g) return g * 3 end
    local x = leaf({ 1, 2 })
    local y = Id.apply(x)
    assert.is_true(x.is_leaf)
    assert.are.equal('IdBackward', y.grad_fn:name())
    y:sum():backward()
    H.near(x.grad, { 3, 3 })
  end)

  it('refuses a saved tensor modified in place', function()
    local x = leaf({ 1, 2 })
    local y = Exp.apply(x)
    y:mul_(2)
    H.errors_with(function() y:sum():backward() end,
      'one of the variables needed for gradient computation has been modified by an inplace operation: ' ..
      '[torch.DoubleTensor [2]], which is output 0 of ExpBackward, is at version 1; expected version 0 instead')
    local h = x * 1
    local z = Linear.apply(h, leaf({ { 1, 1 } }))
    h:add_(1)
    H.errors_with(function() z:sum():backward() end, 'which is an input of LinearFnBackward')
  end)

  it('frees saved tensors after backward unless retain_graph', function()
    local x = leaf({ 1 })
    local y = Exp.apply(x)
    y:backward(nil, { retain_graph = true })
    y:backward()
    H.near(x.grad, { 2 * math.exp(1) })
    H.errors_with(function() y:backward() end, 'Trying to backward through the graph a second time')
  end)

  it('names the function when backward returns a wrong number of gradients or a bad one', function()
    local Bad = torch.autograd.Function('BadCount')
    function Bad.forward(ctx, x) return x * 1 end
    function Bad.backward(ctx, g) return g, g end
    H.errors_with(function() Bad.apply(leaf({ 1 })):sum():backward() end,
      'function BadCountBackward returned an incorrect number of gradients (expected 1, got 2)')
    local Extra = torch.autograd.Function('ExtraNil')
    function Extra.forward(ctx, x) return x * 1 end
    function Extra.backward(ctx, g) return g, nil end
    local x = leaf({ 1 })
    Extra.apply(x):sum():backward() -- extra nils are fine
    H.near(x.grad, { 1 })
    local Shape = torch.autograd.Function('BadShape')
    function Shape.forward(ctx, x) return x * 1 end
    function Shape.backward(ctx, g) return torch.ones(3, { dtype = f64 }) end
    H.errors_with(function() Shape.apply(leaf({ 1, 2 })):sum():backward() end,
      'Function BadShapeBackward returned an invalid gradient at index 0 - got [3] but expected shape compatible with [2]')
    local NonT = torch.autograd.Function('GradForNumber')
    function NonT.forward(ctx, x, k) return x * k end
    function NonT.backward(ctx, g) return g, g end
    H.errors_with(function() NonT.apply(leaf({ 1 }), 2):sum():backward() end, 'was not a Tensor')
    -- a broadcast gradient is summed down to the input's shape
    local Bc = torch.autograd.Function('Broadcasting')
    function Bc.forward(ctx, x) return x * 1 end
    function Bc.backward(ctx, g) return torch.ones(4, 2, { dtype = f64 }) end
    local x2 = leaf({ 1, 2 })
    Bc.apply(x2):sum():backward()
    H.near(x2.grad, { 4, 4 })
  end)

  it('differentiates twice through a Function', function()
    -- saved input: d/dx (x^3) with backward 3x^2 g
    local Cube = torch.autograd.Function('Cube')
    function Cube.forward(ctx, x) ctx:save_for_backward(x) return x ^ 3 end
    function Cube.backward(ctx, g) local x = unpack(ctx.saved_tensors) return g * 3 * x * x end
    local x = leaf({ 1, 2 })
    local g = torch.autograd.grad(Cube.apply(x):sum(), x, { create_graph = true })[1]
    H.near(g, { 3, 12 })
    assert.truthy(g.grad_fn)
    local gg = torch.autograd.grad(g:sum(), x)[1]
    H.near(gg, { 6, 12 })
    assert.is_true(torch.autograd.gradgradcheck(Cube.apply, { leaf({ 0.5, -1.5 }) }))
    -- saved output, also when no Lua handle of the output is left
    local ge = torch.autograd.grad(Exp.apply(x):sum(), x, { create_graph = true })[1]
    T.sweep()
    local gge = torch.autograd.grad(ge:sum(), x)[1]
    H.near(gge, { math.exp(1), math.exp(2) }, 1e-12)
    local y = Exp.apply(x)
    T.sweep()
    local ge2 = torch.autograd.grad(y, x, { grad_outputs = torch.ones(2, { dtype = f64 }), create_graph = true })[1]
    H.near(torch.autograd.grad(ge2:sum(), x)[1], { math.exp(1), math.exp(2) }, 1e-12)
    assert.is_true(torch.autograd.gradgradcheck(Exp.apply, { leaf({ 0.5, -1.5 }) }))
    assert.is_true(torch.autograd.gradgradcheck(Linear.apply, { leaf({ { 1, 2 } }), leaf({ { 3, 4 }, { 5, 6 } }) }))
  end)

  it('runs tensor and node hooks around a Function', function()
    local x = leaf({ 1, 2 })
    local y = Exp.apply(x)
    local seen_out, seen_post
    y:register_hook(function(g) seen_out = g:clone() return g * 2 end)
    local h = y.grad_fn:register_hook(function(gin, gout) seen_post = { gin[1]:clone(), gout[1]:clone() } end)
    y.grad_fn:register_prehook(function(gout) return { gout[1] + 1 } end)
    y:sum():backward()
    H.near(seen_out, { 1, 1 })
    H.near(x.grad, { 3 * math.exp(1), 3 * math.exp(2) }, 1e-12)
    H.near(seen_post[2], { 3, 3 })
    H.near(seen_post[1], x.grad, 1e-12)
    h:remove()
    -- retain_grad on a Function's output
    local z = Exp.apply(x)
    z:retain_grad()
    ;(z * 5):sum():backward()
    H.near(z.grad, { 5, 5 })
  end)

  it('keeps no node, context or tensor alive after use', function()
    T.sweep()
    local before, tensors = live(), tonumber(torch._C.mt_get_stats().live_tensors)
    local function work()
      local x = leaf({ 0.1, 0.2, 0.3 })
      for _ = 1, 50 do
        local y = Exp.apply(x * 2)
        local l = Linear.apply(y:view(1, 3), leaf({ { 1, 2, 3 } }))
        l:sum():backward()
        local a, b = Exp.apply(y), Exp.apply(y) -- graphs never run backward
        local g = torch.autograd.grad(Exp.apply(x):sum(), x, { create_graph = true })[1]
        g:sum():backward()
      end
    end
    work()
    settle()
    assert.are.equal(before, live())
    assert.is_true(tonumber(torch._C.mt_get_stats().live_tensors) <= tensors)
  end)
end)

describe('anomaly mode', function()
  after_each(function() torch.autograd.set_detect_anomaly(false) end)

  it('is off by default, switched by set_detect_anomaly and detect_anomaly(fn)', function()
    assert.is_false(torch.autograd.is_anomaly_enabled())
    torch.autograd.set_detect_anomaly(true)
    assert.is_true(torch.autograd.is_anomaly_enabled())
    torch.autograd.set_detect_anomaly(false)
    local inside = torch.autograd.detect_anomaly(function(a) return torch.autograd.is_anomaly_enabled(), a end)
    local on, a = inside(7)
    assert.is_true(on)
    assert.are.equal(7, a)
    assert.is_false(torch.autograd.is_anomaly_enabled())
  end)

  it('names the backward that returned NaN and shows the forward traceback', function()
    torch.autograd.set_detect_anomaly(true)
    local x = leaf({ 0, 1 })
    local y = (x * 0):sqrt() -- FORWARD-LINE-1
    local err = H.errors_with(function() y:sum():backward() end, "returned nan values in its 0th output.")
    assert.truthy(err:find("Function 'MulBackward", 1, true))
    assert.truthy(err:find('Traceback of forward call that caused the error:', 1, true))
    assert.truthy(err:find('autograd_function_spec.lua:' .. line_of('FORWARD-LINE-1') .. ':', 1, true), err)
    assert.is_nil(err:find('[anomaly:', 1, true))
    -- without anomaly mode there is no error, only NaN
    torch.autograd.set_detect_anomaly(false)
    local x2 = leaf({ 0 })
    ;(x2 * 0):sqrt():sum():backward()
    assert.is_true(x2.grad:isnan():any())
  end)

  it('checks a Function\'s backward too', function()
    local NaNy = torch.autograd.Function('NaNy')
    function NaNy.forward(ctx, x) return x * 1 end
    function NaNy.backward(ctx, g) return g * (0 / 0) end
    local f = torch.autograd.detect_anomaly(function()
      local x = leaf({ 1 })
      local y = NaNy.apply(x) -- FORWARD-LINE-2
      y:sum():backward()
    end)
    local err = H.errors_with(f, "Function 'NaNyBackward' returned nan values in its 0th output.")
    assert.truthy(err:find('autograd_function_spec.lua:' .. line_of('FORWARD-LINE-2') .. ':', 1, true), err)
  end)

  it('drops stored tracebacks with their nodes', function()
    local traces = require('moontorch.function')._traces
    local function count() local n = 0 for _ in pairs(traces) do n = n + 1 end return n end
    settle()
    local before, ntr = live(), count()
    torch.autograd.set_detect_anomaly(true)
    for _ = 1, 20 do
      local x = leaf({ 1 })
      ;(Exp.apply(x * 2 + 1)):exp():sum():backward()
    end
    assert.is_true(count() >= ntr + 20 * 4)
    torch.autograd.set_detect_anomaly(false)
    settle()
    assert.are.equal(before, live())
    assert.are.equal(ntr, count())
  end)
end)
