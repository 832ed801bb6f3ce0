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
    local h = m:register_full_backward_hook(function() return { torch.ones(1), torch.ones(1), torch.ones(1) } end)
    local x = torch.tensor({ 1 }, { requires_grad = true })
    local p = m(x, torch.tensor({ 2 }, { requires_grad = true }))
    H.errors_with(function() p:sum():backward() end, 'invalid number of grad_input, got 3, but expected 2')
    h:remove()
    -- an explicit n must match; without one, an array may stop early (its last gradients nil)
    m:register_full_backward_hook(function() return { n = 1, torch.ones(1) } end)
    p = m(x, torch.tensor({ 2 }, { requires_grad = true }))
    H.errors_with(function() p:sum():backward() end, 'invalid number of grad_input, got 1, but expected 2')
  end)
end)

-- PyTorch 1.13 (/usr/bin/python3), for the specs below:
--   class K(nn.Module): forward(self, x, scale=1) -> x * scale; pre hook returning inp[0] + 1 and a
--   forward hook, m(torch.ones(1), scale=3) -> tensor([6.]), both hooks see len(inp) == 1; a full
--   backward hook on m(x, scale=t) sees len(grad_input) == 1.
--   A pre hook that removes itself, then another: two calls run ['a', 'b', 'b']; a forward hook
--   registering another runs only itself; a backward hook removed after forward still runs, one
--   registered after forward does not.
--   Two.forward(x, y) = x * y with a hook returning (gi[0] * 10, None): x.grad [30, 40], y.grad None.
--   Sequential(Linear(1, 1)) with load post hooks on both: the child's runs first, both see
--   missing ['0.bias']; load pre hooks renaming 'old_' keys (on the child) and 'old.' keys (on the
--   parent) load the values.
local KW, KWP = torch.class('spec.HookKwargs', 'nn.Module')
function KW:__init() KWP.__init(self) end
function KW:forward(x, opts) return x * ((opts and opts.scale) or 1) end

describe('hooks and options tables', function()
  it('an options table is not an input: pre hooks replace the inputs, the options stay', function()
    local m = KW()
    local seen = {}
    m:register_forward_pre_hook(function(_, inp)
      seen[#seen + 1] = #inp
      return inp[1] + 1
    end)
    m:register_forward_hook(function(_, inp) seen[#seen + 1] = inp.n end)
    H.near(m(torch.ones(1), { scale = 3 }), { 6 })
    assert.are.same({ 1, 1 }, seen)
  end)
  it('full backward hooks see one gradient per positional input', function()
    local m = KW()
    local gis
    m:register_full_backward_hook(function(_, gi) gis = gi end)
    local x = torch.ones(1, { requires_grad = true })
    m(x, { scale = torch.full({ 1 }, 2.5, { requires_grad = true }) }):sum():backward()
    assert.are.equal(1, gis.n)
    H.near(gis[1], { 2.5 })
  end)
end)

describe('hook lists', function()
  it('a hook that removes itself does not make the next one be skipped', function()
    local m = nn.ReLU()
    local order, h1 = {}, nil
    h1 = m:register_forward_pre_hook(function() order[#order + 1] = 'a'; h1:remove() end)
    m:register_forward_pre_hook(function() order[#order + 1] = 'b' end)
    m(torch.ones(1))
    m(torch.ones(1))
    assert.are.same({ 'a', 'b', 'b' }, order)
  end)
  it('a hook registered during a call runs from the next call on', function()
    local m = nn.ReLU()
    local order = {}
    m:register_forward_hook(function(mod)
      order[#order + 1] = 'c'
      if #order == 1 then mod:register_forward_hook(function() order[#order + 1] = 'new' end) end
    end)
    m(torch.ones(1))
    assert.are.same({ 'c' }, order)
    m(torch.ones(1))
    assert.are.same({ 'c', 'c', 'new' }, order)
  end)
  it('backward hooks are the ones registered at forward', function()
    local m = nn.Linear(2, 1)
    local seen = {}
    local x = torch.ones(1, 2, { requires_grad = true })
    local h = m:register_full_backward_hook(function() seen[#seen + 1] = 'h1' end)
    local y = m(x)
    h:remove()
    m:register_full_backward_hook(function() seen[#seen + 1] = 'h2' end)
    y:sum():backward()
    assert.are.same({ 'h1' }, seen)
  end)
  it('global hooks removed during a call', function()
    local order, g = {}, nil
    g = nn.register_module_forward_hook(function() order[#order + 1] = 'g'; g:remove() end)
    local g2 = nn.register_module_forward_hook(function() order[#order + 1] = 'g2' end)
    nn.ReLU()(torch.ones(1))
    g2:remove()
    assert.are.same({ 'g', 'g2' }, order)
  end)
  it('a replacement gradient array may end in nil', function()
    local m = Two()
    m:register_full_backward_hook(function(_, gi) return { gi[1] * 10, nil } end)
    local x = torch.tensor({ 1, 2 }, { requires_grad = true })
    local y = torch.tensor({ 3, 4 }, { requires_grad = true })
    local p = m(x, y)
    p:sum():backward()
    H.near(x.grad, { 30, 40 })
    assert.is_nil(y.grad)
  end)
end)

describe('load_state_dict hooks', function()
  it('post hooks run children first', function()
    local outer = nn.Sequential(nn.Linear(1, 1))
    local order = {}
    outer:register_load_state_dict_post_hook(function(_, k) order[#order + 1] = { 'outer', k.missing_keys[1] } end)
    outer[1]:register_load_state_dict_post_hook(function(_, k) order[#order + 1] = { 'inner', k.missing_keys[1] } end)
    outer:load_state_dict({ ['0.weight'] = torch.ones(1, 1) }, { strict = false })
    assert.are.same({ { 'inner', '0.bias' }, { 'outer', '0.bias' } }, order)
  end)
  it('pre hooks may rename keys, their own or their children\'s', function()
    local m = nn.Sequential(nn.Linear(1, 1))
    m[1]:_register_load_state_dict_pre_hook(function(sd, prefix)
      for _, k in ipairs(sd:keys()) do
        if k:sub(1, #prefix + 4) == prefix .. 'old_' then
          sd[prefix .. k:sub(#prefix + 5)] = sd:pop(k)
        end
      end
    end)
    assert.are.equal('<All keys matched successfully>', tostring(m:load_state_dict({
      ['0.old_weight'] = torch.full({ 1, 1 }, 3), ['0.old_bias'] = torch.full({ 1 }, 4) })))
    assert.are.equal(3, m[1].weight:item())
    assert.are.equal(4, m[1].bias:item())
    local p = nn.Sequential(nn.Linear(1, 1))
    p:_register_load_state_dict_pre_hook(function(sd)
      for _, k in ipairs(sd:keys()) do
        if k:sub(1, 4) == 'old.' then sd['0.' .. k:sub(5)] = sd:pop(k) end
      end
    end)
    local sd = torch.OrderedDict { { 'old.weight', torch.full({ 1, 1 }, 5) }, { 'old.bias', torch.full({ 1 }, 6) } }
    assert.are.equal('<All keys matched successfully>', tostring(p:load_state_dict(sd)))
    assert.are.equal(5, p[1].weight:item())
    assert.are.same({ 'old.weight', 'old.bias' }, sd:keys(), 'the caller\'s dict is not changed')
    -- with_module passes the module first
    local got
    local l = nn.Linear(1, 1)
    l:register_load_state_dict_pre_hook(function(mod) got = mod end, { with_module = true })
    l:load_state_dict(l:state_dict())
    assert.is_true(rawequal(got, l))
  end)
end)
