-- Autograd: the graph, backward, grad modes, hooks, higher order, gradcheck over the ops.
local H = require 'spec.support.helper'
local torch = H.torch
local T = require 'moontorch.tensor'

local function leaf(t, dtype) return torch.tensor(t, { dtype = dtype or torch.float64, requires_grad = true }) end

describe('autograd semantics', function()
  it('records grad_fn with PyTorch\'s names and next_functions', function()
    local a, b = leaf({ 1, 2 }), leaf({ 3, 4 })
    assert.is_true(a.requires_grad and a.is_leaf)
    assert.is_nil(a.grad_fn)
    local c = a * b + 1
    assert.is_false(c.is_leaf)
    assert.are.equal('AddBackward0', c.grad_fn:name()) -- PyTorch 1.13 (Python wraps the number)
    local mul = c.grad_fn.next_functions[1][1]
    assert.are.equal('MulBackward0', mul:name())
    assert.are.equal('AccumulateGrad', mul.next_functions[1][1]:name())
    assert.is_true(torch.equal(mul.next_functions[2][1].variable, b))
    assert.are.equal('SumBackward0', c:sum().grad_fn:name())
    assert.are.equal('MmBackward0', torch.ones(2, 2, { requires_grad = true }):matmul(torch.ones(2, 2)).grad_fn:name())
    assert.truthy(tostring(c):find('grad_fn=<AddBackward0>', 1, true))
    assert.truthy(tostring(a):find('requires_grad=True', 1, true))
  end)

  it('computes gradients and accumulates them across backward calls', function()
    local a, b = leaf({ 1, 2, 3 }), leaf({ 4, 5, 6 })
    local function f() return (a * b + a:exp()):sum() end
    f():backward()
    H.near(a.grad, { 4 + math.exp(1), 5 + math.exp(2), 6 + math.exp(3) }, 1e-9)
    H.near(b.grad, { 1, 2, 3 })
    f():backward()
    H.near(b.grad, { 2, 4, 6 })
    a.grad = nil
    assert.is_nil(a.grad)
    b.grad:zero_()
    f():backward()
    H.near(b.grad, { 1, 2, 3 })
  end)

  it('accumulates a gradient in the leaf\'s own dtype', function()
    local x = torch.ones(3, { requires_grad = true })
    x:sum({ dtype = torch.float64 }):backward()
    assert.are.equal(torch.float32, x.grad.dtype)
    H.near(x.grad, { 1, 1, 1 })
  end)

  it('sums the gradient of an input used twice', function()
    local x = leaf({ 3 })
    local y = x * x + x
    y:backward()
    H.near(x.grad, { 7 })
  end)

  it('needs a gradient for non-scalar outputs', function()
    local x = leaf({ 1, 2 })
    local y = x * 2
    H.errors_with(function() y:backward() end, 'grad can be implicitly created only for scalar outputs')
    y:backward(torch.tensor({ 1, 10 }, { dtype = torch.float64 }))
    H.near(x.grad, { 2, 20 })
    H.errors_with(function() (x * 2):backward(torch.ones(3, { dtype = torch.float64 })) end, 'Mismatch in shape')
  end)

  it('frees saved tensors unless retain_graph, and says so on a second backward', function()
    local x = leaf({ 1, 2 })
    local y = (x * x):sum()
    y:backward(nil, { retain_graph = true })
    y:backward()
    H.near(x.grad, { 4, 8 })
    H.errors_with(function() y:backward() end, 'Trying to backward through the graph a second time')
    -- a graph without saved tensors can go backward twice, as in PyTorch
    local z = (x + 1):sum()
    z:backward()
    z:backward()
  end)

  it('refuses a backward through a saved tensor modified in place', function()
    local x = leaf({ 1, 2 })
    local y = x:exp()
    local w = y:sin():sum() -- SinBackward saves its input y (and ExpBackward its output y)
    y:add_(1)
    H.errors_with(function() w:backward() end, 'has been modified by an inplace operation')
    -- a graph that saved nothing of y goes through
    local a = leaf({ 1, 2 })
    local b = a * 1
    local c = (b + 1):sum()
    b:add_(1)
    c:backward()
    H.near(a.grad, { 1, 1 })
  end)

  it('refuses in-place ops on a leaf that requires grad, and out= with grad', function()
    local x = leaf({ 1, 2 })
    H.errors_with(function() x:add_(1) end, 'a leaf Variable that requires grad is being used in an in-place operation')
    H.errors_with(function() torch.add(x, 1, { out = torch.zeros(2, { dtype = torch.float64 }) }) end, "don't support automatic differentiation")
    H.errors_with(function() x[1]:add_(1) end, 'a view of a leaf Variable that requires grad is being used in an in-place operation')
    H.errors_with(function() x:narrow(1, 1, 1):mul_(2) end, 'a view of a leaf Variable')
    torch.no_grad(function() x:add_(1); x[1]:add_(1) end)
    H.near(x, { 3, 3 })
    local d = x:detach()
    d:add_(1) -- a detached alias is outside the graph, as in PyTorch
    H.near(x, { 4, 4 })
  end)

  it('records in-place ops on non-leaves', function()
    local x = leaf({ 1, 2 })
    local y = x * 1
    y:mul_(3)
    y:exp_()
    y:sum():backward()
    H.near(x.grad, { 3 * math.exp(3), 3 * math.exp(6) }, 1e-6)
  end)

  it('detach and no_grad stop recording', function()
    local x = leaf({ 1, 2 })
    local d = x:detach()
    assert.is_false(d.requires_grad)
    assert.is_nil((d * 2).grad_fn)
    local f = torch.no_grad(function(t) return t * 2 end)
    local y = f(x)
    assert.is_false(y.requires_grad)
    assert.is_true(torch.is_grad_enabled())
    torch.set_grad_enabled(false)
    assert.is_false(torch.is_grad_enabled())
    assert.is_nil((x * 2).grad_fn)
    torch.set_grad_enabled(true)
    local e = torch.no_grad(function() return torch.enable_grad(function() return x * 2 end) end)
    assert.truthy(e.grad_fn)
    local i = torch.inference_mode(function() return x * 2 end)
    assert.is_false(i.requires_grad)
    -- an error inside still restores the mode
    pcall(torch.no_grad, function() error('boom') end)
    assert.is_true(torch.is_grad_enabled())
  end)

  it('runs tensor hooks that can replace the gradient', function()
    local x = leaf({ 1, 2 })
    local seen
    local h = x:register_hook(function(g) seen = g:clone(); return g * 10 end)
    ;(x * 3):sum():backward()
    H.near(seen, { 3, 3 })
    H.near(x.grad, { 30, 30 })
    h:remove()
    h:remove() -- twice is harmless
    x.grad = nil
    ;(x * 3):sum():backward()
    H.near(x.grad, { 3, 3 })
    -- on a non-leaf: changes what flows on
    local y = x * 2
    y:register_hook(function(g) return g * 0 + 1 end)
    x.grad = nil
    ;(y * 5):sum():backward()
    H.near(x.grad, { 2, 2 })
    H.errors_with(function() torch.ones(2):register_hook(function() end) end, "doesn't require gradient")
  end)

  it('keeps a non-leaf gradient with retain_grad', function()
    local x = leaf({ 1, 2 })
    local y = x * 2
    y:retain_grad()
    ;(y * y):sum():backward()
    H.near(y.grad, { 4, 8 })
    H.near(x.grad, { 8, 16 })
    assert.is_nil((x * 3).grad)
  end)

  it('runs node hooks (pre and post)', function()
    local x = leaf({ 1, 2 })
    local y = x * 2
    local pre_seen, post_seen
    local h1 = y.grad_fn:register_prehook(function(gout) pre_seen = gout[1]:clone() end)
    local h2 = y.grad_fn:register_hook(function(gin, gout) post_seen = gin[1]:clone(); return { gin[1] * 0 } end)
    ;(y * 3):sum():backward()
    H.near(pre_seen, { 3, 3 })
    H.near(post_seen, { 6, 6 })
    H.near(x.grad, { 0, 0 })
    h1:remove(); h2:remove()
  end)

  it('torch.autograd.grad returns gradients without touching .grad', function()
    local x, w = leaf({ 1, 2 }), leaf({ 3, 4 })
    local y = (x * w):sum()
    local g = torch.autograd.grad(y, { x, w })
    H.near(g[1], { 3, 4 })
    H.near(g[2], { 1, 2 })
    assert.is_nil(x.grad)
    local u = leaf({ 5 })
    H.errors_with(function() torch.autograd.grad((x * 2):sum(), { u }) end, 'appears to not have been used')
    local r = torch.autograd.grad((x * 2):sum(), { u }, { allow_unused = true })
    assert.is_nil(r[1])
  end)

  it('differentiates twice with create_graph', function()
    local x = leaf({ 2 })
    local y = x ^ 3
    local g = torch.autograd.grad(y, { x }, { create_graph = true })[1]
    H.near(g, { 12 }) -- 3x^2
    local g2 = torch.autograd.grad(g, { x })[1]
    H.near(g2, { 12 }) -- 6x
    local z = leaf({ 0.5 })
    local t = z:tanh()
    local dt = torch.autograd.grad(t, { z }, { create_graph = true })[1]
    dt:backward()
    local th = math.tanh(0.5)
    H.near(z.grad, { -2 * th * (1 - th * th) }, 1e-9)
  end)

  it('backpropagates a 100 000-op chain without recursion', function()
    local x = leaf({ 1 })
    local y = x
    for _ = 1, 100000 do y = y * 1 end
    y:backward()
    H.near(x.grad, { 1 })
    y = nil
    T.sweep()
    assert.are.equal(0, tonumber(torch._C.mt_live_nodes()))
  end)

  it('frees the graph: no node outlives its tensors', function()
    T.sweep()
    local before = tonumber(torch._C.mt_live_nodes())
    local function work()
      local x = leaf({ 1, 2, 3 })
      for _ = 1, 200 do
        local l = (x:matmul(x) + x:exp():sum() * x:t():sum()):relu()
        l:backward()
      end
    end
    work()
    T.sweep()
    assert.are.equal(before, tonumber(torch._C.mt_live_nodes()))
  end)
end)

describe('gradcheck', function()
  local f64 = torch.float64
  local function r(...)
    local t = torch.randn(...)
    return t:to(f64):requires_grad_()
  end
  torch.manual_seed(0)

  local unary = { 'neg', 'abs', 'exp', 'exp2', 'log', 'log2', 'log10', 'log1p', 'expm1', 'sqrt', 'rsqrt', 'sin',
    'cos', 'tan', 'atan', 'sinh', 'cosh', 'tanh', 'sigmoid', 'relu', 'gelu', 'silu', 'erf', 'erfc', 'reciprocal',
    'square', 'frac' }
  for _, name in ipairs(unary) do
    it(name, function()
      -- positive inputs away from kinks for log/sqrt/abs/relu
      local x = (torch.rand(3, 2, { dtype = f64 }) + 0.5):requires_grad_()
      assert.is_true(torch.autograd.gradcheck(function(t) return torch[name](t) end, { x }))
      local xt = (torch.rand(2, 3, { dtype = f64 }) + 0.5):t():requires_grad_()
      assert.is_true(torch.autograd.gradcheck(function(t) return torch[name](t) end, { xt }))
    end)
  end
  for _, name in ipairs { 'asin', 'acos' } do
    it(name, function()
      local x = (torch.rand(4, { dtype = f64 }) * 0.8 - 0.4):requires_grad_()
      assert.is_true(torch.autograd.gradcheck(function(t) return torch[name](t) end, { x }))
    end)
  end

  it('parameterised unary ops', function()
    local x = r(5)
    local ag = torch.autograd
    assert.is_true(ag.gradcheck(function(t) return t:clamp(-0.5, 0.5) end, { x }))
    assert.is_true(ag.gradcheck(function(t) return t:abs() ^ 2.5 end, { x }))
    assert.is_true(ag.gradcheck(function(t) return 2 ^ t end, { x }))
    assert.is_true(ag.gradcheck(function(t) return torch.leaky_relu(t, 0.1) end, { x }))
    assert.is_true(ag.gradcheck(function(t) return torch.elu(t, 1.5) end, { x }))
    assert.is_true(ag.gradcheck(function(t) return torch.gelu(t, { approximate = 'tanh' }) end, { x }))
  end)

  it('binary ops with broadcasting', function()
    local ag = torch.autograd
    local a, b = r(3, 1), r(1, 4)
    for _, f in ipairs {
      function(x, y) return x + y end, function(x, y) return x - y end, function(x, y) return x * y end,
      function(x, y) return x / (y:abs() + 1) end, function(x, y) return torch.maximum(x, y) end,
      function(x, y) return torch.minimum(x, y) end, function(x, y) return torch.atan2(x, y) end,
      function(x, y) return torch.hypot(x, y) end, function(x, y) return (x:abs() + 0.5) ^ y end,
      function(x, y) return torch.add(x, y, { alpha = 2.5 }) end,
    } do
      assert.is_true(ag.gradcheck(f, { a, b }))
    end
    assert.is_true(ag.gradcheck(function(x) return 3 - x end, { a }))
    assert.is_true(ag.gradcheck(function(x) return 3 / (x:abs() + 1) end, { a }))
  end)

  it('reductions', function()
    local ag = torch.autograd
    local x = r(3, 4)
    for _, f in ipairs {
      function(t) return t:sum() end, function(t) return t:sum(2) end, function(t) return t:sum(1, { keepdim = true }) end,
      function(t) return t:mean() end, function(t) return t:mean({ 1, 2 }) end, function(t) return t:prod(2) end,
      function(t) return t:amax(2) end, function(t) return t:var(2) end, function(t) return t:std() end,
      function(t) return t:norm() end, function(t) return t:norm(1) end, function(t) return t:logsumexp(2) end,
      function(t) return (t:max(2)) end, function(t) return (t:min(1)) end, function(t) return t:max() end,
      function(t) return torch.softmax(t, 2) end, function(t) return torch.log_softmax(t, 1) end,
    } do
      assert.is_true(ag.gradcheck(f, { x }))
    end
  end)

  it('views and shape ops', function()
    local ag = torch.autograd
    local x = r(2, 3, 4)
    for _, f in ipairs {
      function(t) return t:view(6, 4) end, function(t) return t:reshape(4, 6) end, function(t) return t:transpose(1, 3) end,
      function(t) return t:permute(3, 1, 2) end, function(t) return t:narrow(2, 2, 2) end, function(t) return t[2] end,
      function(t) return t:select(3, -1) end, function(t) return t:unsqueeze(2) end, function(t) return t:flatten() end,
      function(t) return t[1]:expand(5, 3, 4) end, function(t) return t[1]:t() end, function(t) return t:transpose(1, 2):contiguous() end,
      function(t) return torch.cat({ t, t * 2 }, 2) end, function(t) return t:index_select(3, torch.tensor({ 4, 1, 1 }, { dtype = torch.int64 })) end,
      function(t) return t:gather(3, torch.tensor({ { { 1 }, { 2 }, { 3 } }, { { 4 }, { 1 }, { 2 } } }, { dtype = torch.int64 })) end,
      function(t) return t:masked_fill(t:gt(0), 0) end, function(t) return torch.where(t:gt(0), t, t * 3) end,
      function(t) return t:squeeze() end,
    } do
      assert.is_true(ag.gradcheck(f, { x }))
    end
  end)

  it('dtype conversions send the gradient back in the input\'s dtype', function()
    local x = r(3)
    local y = x:to(torch.float32)
    assert.are.equal('ToCopyBackward0', y.grad_fn:name())
    ;(y * 2):sum():backward()
    assert.are.equal(torch.float64, x.grad.dtype)
    H.near(x.grad, { 2, 2, 2 })
  end)

  it('linear algebra in every shape combination', function()
    local ag = torch.autograd
    assert.is_true(ag.gradcheck(function(a, b) return a:matmul(b) end, { r(3, 4), r(4, 2) }))
    assert.is_true(ag.gradcheck(function(a, b) return a:matmul(b) end, { r(4), r(4) }))
    assert.is_true(ag.gradcheck(function(a, b) return a:matmul(b) end, { r(3, 4), r(4) }))
    assert.is_true(ag.gradcheck(function(a, b) return a:matmul(b) end, { r(4), r(4, 2) }))
    assert.is_true(ag.gradcheck(function(a, b) return a:matmul(b) end, { r(2, 3, 4), r(4, 2) }))
    assert.is_true(ag.gradcheck(function(a, b) return torch.bmm(a, b) end, { r(2, 3, 4), r(2, 4, 2) }))
    assert.is_true(ag.gradcheck(function(a, b) return a:matmul(b) end, { r(2, 1, 3, 4), r(3, 4, 2) }))
    assert.is_true(ag.gradcheck(function(a, b) return a:t():matmul(b:t()) end, { r(4, 3), r(2, 4) }))
    assert.is_true(ag.gradcheck(function(c, a, b) return torch.addmm(c, a, b, { beta = 0.5, alpha = 2 }) end,
      { r(3), r(2, 4), r(4, 3) }))
    assert.is_true(ag.gradcheck(function(a, b) return torch.mv(a, b) end, { r(3, 4), r(4) }))
    assert.is_true(ag.gradcheck(function(a, b) return torch.dot(a, b) end, { r(4), r(4) }))
  end)

  it('second derivatives (gradgradcheck)', function()
    local ag = torch.autograd
    for _, f in ipairs {
      function(t) return t:tanh() end, function(t) return t:sigmoid() end, function(t) return t:exp() * t end,
      function(t) return (t * t):sum() end, function(t) return torch.softmax(t, 1) end, function(t) return t:sin() end,
    } do
      assert.is_true(ag.gradgradcheck(f, { r(3) }))
    end
    assert.is_true(ag.gradgradcheck(function(a, b) return a:matmul(b) end, { r(2, 3), r(3, 2) }))
  end)

  it('reports a wrong gradient', function()
    local x = r(3)
    local ok = torch.autograd.gradcheck(function(t)
      return t:sign() * t:detach() -- zero analytic gradient, a non-zero numerical one
    end, { x }, { raise_exception = false })
    assert.is_false(ok)
  end)

  it('records every op (spec/autograd_ops_spec.lua checks each backward); no_grad records none', function()
    local x = r(3)
    assert.are.equal('CumsumBackward0', x:cumsum(1).grad_fn:name())
    local y = torch.no_grad(function() return x:cumsum(1) end)
    assert.is_false(y.requires_grad)
  end)
end)

describe('ops given a dtype', function()
  -- PyTorch 1.13: x = torch.randn(3, requires_grad=True); for f in x.cumsum(0, dtype=torch.float64),
  -- x.sum(dtype=...), x.log_softmax(0, dtype=...), x.prod(dtype=...), x.mean(dtype=...):
  -- f.grad_fn, f.grad_fn.next_functions, torch.autograd.grad(f.sum(), x)[0].dtype — the gradient is
  -- float32 every time; softmax and log_softmax convert first (ToCopyBackward0), the reductions do not
  it('hand the gradient back in the input\'s dtype, with PyTorch\'s graph', function()
    local x = torch.tensor({ 0.5, -1.25, 2.0 }, { requires_grad = true })
    local xd = x:detach():double():requires_grad_()
    local cases = {
      { function(t) return t:cumsum(1, { dtype = torch.float64 }) end, function(t) return t:cumsum(1) end, 'CumsumBackward0', 'AccumulateGrad' },
      { function(t) return t:sum({ dtype = torch.float64 }) end, function(t) return t:sum() end, 'SumBackward0', 'AccumulateGrad' },
      { function(t) return t:sum(1, { dtype = torch.float64 }) end, function(t) return t:sum(1) end, 'SumBackward1', 'AccumulateGrad' },
      { function(t) return t:mean({ dtype = torch.float64 }) end, function(t) return t:mean() end, 'MeanBackward0', 'AccumulateGrad' },
      { function(t) return t:prod({ dtype = torch.float64 }) end, function(t) return t:prod() end, 'ProdBackward0', 'AccumulateGrad' },
      { function(t) return t:softmax(1, { dtype = torch.float64 }) end, function(t) return t:softmax(1) end, 'SoftmaxBackward0', 'ToCopyBackward0' },
      { function(t) return t:log_softmax(1, torch.float64) end, function(t) return t:log_softmax(1) end, 'LogSoftmaxBackward0', 'ToCopyBackward0' },
      { function(t) return torch.nn.functional.softmax(t, 1, { dtype = torch.float64 }) end, function(t) return t:softmax(1) end, 'SoftmaxBackward0', 'ToCopyBackward0' },
    }
    for i, c in ipairs(cases) do
      local y = c[1](x)
      assert.are.equal(torch.float64, y.dtype, i)
      assert.are.equal(c[3], y.grad_fn:name(), i)
      assert.are.equal(c[4], y.grad_fn.next_functions[1][1]:name(), i)
      local w = torch.tensor({ 0.3, -0.7, 1.1 }, { dtype = torch.float64 })
      local g = torch.autograd.grad({ (y * w:narrow(1, 1, y:numel()):view(y:size())):sum() }, { x })[1]
      assert.are.equal(torch.float32, g.dtype, i)
      -- the same as the float64 computation, rounded to float32
      local want = torch.autograd.grad({ (c[2](xd) * w:narrow(1, 1, y:numel()):view(y:size())):sum() }, { xd })[1]
      assert.is_true(torch.allclose(g:double(), want, 1e-6, 1e-6), i)
    end
  end)
end)

-- A leaf's first gradient becomes its .grad without a copy when nothing else holds it (as
-- PyTorch's AccumulateGrad takes it); these hold that what a user can see is never shared.
describe('a leaf\'s .grad', function()
  it('is its own tensor: not the gradient a hook, retain_grad or the caller holds', function()
    local x = torch.randn(3, 4):requires_grad_()
    local y = x + 0 -- AddBackward0 hands its gradient on as it is
    y:retain_grad()
    local hooked
    local z = x * 2
    z:register_hook(function(g) hooked = g end)
    local g = torch.ones(3, 4)
    ;(y + z):backward(g)
    H.near(x.grad, torch.full({ 3, 4 }, 3), 0, 0)
    x.grad:add_(100)
    H.near(y.grad, torch.ones(3, 4), 0, 0)
    H.near(hooked, torch.ones(3, 4), 0, 0)
    H.near(g, torch.ones(3, 4), 0, 0)
    -- the gradient given to backward of a leaf itself
    local w = torch.randn(2, 2):requires_grad_()
    local gw = torch.full({ 2, 2 }, 2)
    w:backward(gw)
    w.grad:mul_(10)
    H.near(gw, torch.full({ 2, 2 }, 2), 0, 0)
  end)

  it('accumulates over backwards, keeps its layout, and does not move under create_graph', function()
    local x = torch.randn(4, 3):requires_grad_()
    local xt = torch.randn(3, 4):t():requires_grad_() -- a transposed leaf: its gradient is a copy
    local loss = (x:mm(torch.ones(3, 2))):sum() + (xt * 3):sum()
    loss:backward({ retain_graph = true })
    local first = x.grad
    loss:backward()
    assert.is_true(rawequal(first, x.grad) or first:data_ptr() == x.grad:data_ptr())
    H.near(x.grad, torch.full({ 4, 3 }, 4), 0, 0)
    H.near(xt.grad, torch.full({ 4, 3 }, 6), 0, 0)
    local v = torch.randn(3):requires_grad_()
    local g = torch.autograd.grad({ (v * v):sum() }, { v }, { create_graph = true })[1]
    g:sum():backward()
    H.near(v.grad, torch.full({ 3 }, 2), 0, 0)
  end)
end)

describe('create_graph through views of an op\'s result', function()
  -- PyTorch 1.13: x = torch.randn(4, requires_grad=True); v = torch.randn(2, requires_grad=True);
  -- g = torch.autograd.grad(x.sin().narrow(0, 0, 2), x, grad_outputs=v, create_graph=True)[0];
  -- torch.autograd.grad(g.sum(), v) is (cos(x[0]), cos(x[1])): the gradient stays a function of v
  it('keeps the gradient a function of grad_outputs (narrow, select, unbind, strided slices)', function()
    local x = torch.tensor({ 0.3, -1.1, 0.7, 2.0 }, { dtype = torch.float64, requires_grad = true })
    local c = x:detach():cos()
    local cases = {
      { function(t) return t:sin():narrow(1, 2, 2) end, 2, torch.tensor({ 2, 3 }, { dtype = torch.int64 }) },
      { function(t) return t:sin():select(1, 3) end, 0, torch.tensor({ 3 }, { dtype = torch.int64 }) },
      { function(t) return t:sin():unbind(1)[4] end, 0, torch.tensor({ 4 }, { dtype = torch.int64 }) },
      { function(t) return t:sin()[{ { 1, 4, 2 } }] end, 2, torch.tensor({ 1, 3 }, { dtype = torch.int64 }) },
    }
    for i, case in ipairs(cases) do
      local v = case[2] == 0 and torch.tensor(1.5, { dtype = torch.float64, requires_grad = true })
        or torch.tensor({ 1.5, -0.5 }, { dtype = torch.float64, requires_grad = true })
      local g = torch.autograd.grad({ case[1](x) }, { x }, { grad_outputs = { v }, create_graph = true })[1]
      -- g is v at the view's positions times cos(x) there, zeros elsewhere
      local want = torch.zeros(4, { dtype = torch.float64 })
      want:index_copy_(1, case[3], (v:detach():reshape(-1) * c:index_select(1, case[3])))
      assert.is_true(torch.allclose(g:detach(), want), i)
      local dv = torch.autograd.grad({ g:sum() }, { v })[1]
      assert.is_true(torch.allclose(dv:reshape(-1), c:index_select(1, case[3])), i)
      -- and x's second derivative through it: -sin(x) * v at those positions
      local g2 = torch.autograd.grad({ case[1](x) }, { x }, { grad_outputs = { v:detach() }, create_graph = true })[1]
      local dx = torch.autograd.grad({ g2:sum() }, { x })[1]
      local want2 = torch.zeros(4, { dtype = torch.float64 })
      want2:index_copy_(1, case[3], -x:detach():sin():index_select(1, case[3]) * v:detach():reshape(-1))
      assert.is_true(torch.allclose(dx, want2), i)
    end
  end)
end)
