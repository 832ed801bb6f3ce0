-- Module hooks: forward pre / forward (with_kwargs, prepend, always_call), full backward pre /
-- full backward hooks (several inputs and outputs), global hooks, handles. The Linear numbers are
-- the ones PyTorch's "Modules" note prints (torch.manual_seed(1); nn.Linear(3, 3);
-- x = torch.randn(2, 3, requires_grad=True)).
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'

local Two, P = torch.class('spec.TwoInTwoOut', 'nn.Module')
function Two:__init() P.__init(self) end
function Two:forward(x, y) return x * y, x + y end

describe('forward hooks', function()
  it("reproduce the note's numbers", function()
    torch.manual_seed(1)
    local m = nn.Linear(3, 3)
    local x = torch.randn(2, 3, { requires_grad = true })
    local plain = { { -0.5059, -0.8158, 0.2390 }, { -0.0043, 0.4724, -0.1714 } }
    H.near(m(x), plain, 1e-4)
    local h1 = m:register_forward_pre_hook(function(_, inputs) return inputs[1] + 1.0 end)
    H.near(m(x), { { -0.5752, -0.7421, 0.4942 }, { -0.0736, 0.5461, 0.0838 } }, 1e-4)
    local h2 = m:register_forward_hook(function(_, inputs, out) return out + inputs[1] end)
    H.near(m(x), { { -1.0980, 0.6396, 0.4666 }, { 0.3634, 0.6538, 1.0256 } }, 1e-4)
    h1:remove(); h2:remove(); h2:remove()
    H.near(m(x), plain, 1e-4)
    m(x):sum():backward()
    H.near(x.grad, { { 0.4497, -0.5046, 0.3146 }, { 0.4497, -0.5046, 0.3146 } }, 1e-4)
    m:zero_grad()
    x.grad:zero_()
    m:register_full_backward_hook(function(_, gi)
      local new = {}
      for i, g in ipairs(gi) do new[i] = torch.ones_like(g) * 42 end
      return new
    end)
    m(x):sum():backward()
    H.near(x.grad, { { 42, 42, 42 }, { 42, 42, 42 } })
  end)
  it('pre hooks may return an array of new inputs; hooks run in order, prepend goes first', function()
    local m = Two()
    local order = {}
    m:register_forward_pre_hook(function(_, inp) order[#order + 1] = 'a'; return { inp[2], inp[1] } end)
    m:register_forward_pre_hook(function() order[#order + 1] = 'b' end, { prepend = true })
    local p, s = m(torch.tensor({ 2 }), torch.tensor({ 3 }))
    assert.are.same({ 'b', 'a' }, order)
    H.near(p, { 6 }); H.near(s, { 5 })
    -- a forward hook sees a multi-value output as an array and may replace it
    m:register_forward_hook(function(_, _, out) return { out[2], out[1] } end)
    p, s = m(torch.tensor({ 2 }), torch.tensor({ 3 }))
    H.near(p, { 5 }); H.near(s, { 6 })
  end)
  it('with_kwargs hooks see the options table; always_call hooks run when forward fails', function()
    local K, KP = torch.class('spec.Kw', 'nn.Module')
    function K:__init() KP.__init(self) end
    function K:forward(x, opts)
      if opts and opts.fail then error('boom') end
      return x * ((opts and opts.scale) or 1)
    end
    local m = K()
    m:register_forward_pre_hook(function(_, args, kw) return { args, { scale = kw.scale * 10, fail = kw.fail } } end, { with_kwargs = true })
    H.near(m(torch.tensor({ 1 }), { scale = 2 }), { 20 })
    local called = false
    m:register_forward_hook(function() called = true end, { always_call = true })
    assert.has_error(function() m(torch.tensor({ 1 }), { scale = 1, fail = true }) end)
    assert.is_true(called)
  end)
  it('global hooks run for every module, before its own', function()
    local order = {}
    local m = nn.ReLU()
    m:register_forward_hook(function() order[#order + 1] = 'local' end)
    local g = nn.register_module_forward_hook(function() order[#order + 1] = 'global' end)
    m(torch.ones(1))
    g:remove()
    m(torch.ones(1))
    assert.are.same({ 'global', 'local', 'local' }, order)
  end)
end)

describe('full backward hooks', function()
  it('see the gradients with respect to every input and output', function()
    local m = Two()
    local gi, go
    m:register_full_backward_hook(function(_, a, b) gi, go = a, b end)
    local x = torch.tensor({ 1, 2 }, { requires_grad = true })
    local y = torch.tensor({ 3, 4 }, { requires_grad = true })
    local p, s = m(x, y)
    assert.are.equal('BackwardHookFunctionBackward', p.grad_fn:name())
    ;(p * 2 + s * 3):sum():backward()
    H.near(go[1], { 2, 2 }); H.near(go[2], { 3, 3 })
    H.near(gi[1], { 2 * 3 + 3, 2 * 4 + 3 }) -- d/dx = 2y + 3
    H.near(gi[2], { 2 * 1 + 3, 2 * 2 + 3 }) -- d/dy = 2x + 3
    H.near(x.grad, gi[1]); H.near(y.grad, gi[2])
  end)
  it('pre hooks replace grad_outputs; an input without grad is nil; non-tensor inputs keep their place', function()
    local M2, MP = torch.class('spec.Scaled', 'nn.Module')
    function M2:__init() MP.__init(self) end
    function M2:forward(x, k, y) return x * k + y end
    local m = M2()
    local seen
    m:register_full_backward_pre_hook(function(_, go) return { go[1] * 10 } end)
    m:register_full_backward_hook(function(_, gi, go) seen = { gi = gi, go = go } end)
    local x = torch.tensor({ 1, 2 }, { requires_grad = true })
    m(x, 3, torch.tensor({ 5, 5 })):sum():backward()
    H.near(seen.go[1], { 10, 10 })
    H.near(seen.gi[1], { 30, 30 })
    assert.is_nil(seen.gi[2]); assert.is_nil(seen.gi[3])
    assert.are.equal(3, seen.gi.n)
    H.near(x.grad, { 30, 30 })
  end)
  it('run with nil grad_inputs when no input requires grad', function()
    local m = nn.Linear(2, 1)
    local seen
    m:register_full_backward_hook(function(_, gi, go) seen = { gi[1], go[1] } end)
    m(torch.ones(2)):sum():backward()
    assert.is_nil(seen[1])
    H.near(seen[2], { 1 })
    m:register_full_backward_hook(function(_, gi) return { torch.ones(2) } end)
    H.errors_with(function() m(torch.ones(2)):sum():backward() end,
      'Backward hook for Modules where no input requires gradient should always return None')
  end)
  it('a hook returning the wrong number of gradients is an error', function()
    local m = Two()
    m:register_full_backward_hook(function() return { torch.ones(1) } end)
    local x = torch.tensor({ 1 }, { requires_grad = true })
    local p = m(x, torch.tensor({ 2 }, { requires_grad = true }))
    H.errors_with(function() p:sum():backward() end, 'invalid number of grad_input, got 1, but expected 2')
  end)
end)
