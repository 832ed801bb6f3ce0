-- The small ops' path (issue 11's speed figures): the handle registry (lua/tensor.lua: slots made
-- whole in the table's array part, the reclaim done by mt_handles_reclaim in C), the last reference
-- released without an atomic read-modify-write (core/alloc.c), the allocation statistics outside
-- and inside parallel jobs, and the binary ops' recording with both inputs' shapes side by side
-- (mt_input_shapes in core/grad/node.h). Values from PyTorch 1.13 where they are PyTorch's.
local H = require 'spec.support.helper'
local torch = H.torch
local T = require 'moontorch.tensor'
local C = torch._C
local stats = C.mt_get_stats()

local function live_tensors() return tonumber(stats.live_tensors) end

describe('small ops: the handle registry', function()
  it('gives back the memory of a loop of recorded ops as it runs (no sweep), graph nodes too', function()
    local a = torch.tensor({ 1, 2, 3, 4 }, { requires_grad = true })
    local b = torch.tensor({ 5, 6, 7, 8 }, { requires_grad = true })
    T.sweep()
    local base, nodes = live_tensors(), tonumber(C.mt_live_nodes())
    local most, most_nodes = 0, 0
    for i = 1, 200000 do
      local c = a + b
      if i % 1000 == 0 then
        most = math.max(most, live_tensors() - base)
        most_nodes = math.max(most_nodes, tonumber(C.mt_live_nodes()) - nodes)
      end
    end
    -- bounded by the registry's slots (4096 for a heap this size; run before the test below
    -- grows them), whatever the count of ops
    assert.is_true(most < 40000, most)
    assert.is_true(most_nodes < 40000, most_nodes)
    T.sweep()
    assert.are.equal(base, live_tensors())
    assert.are.equal(nodes, tonumber(C.mt_live_nodes()))
  end)

  it('keeps every live handle through growth and reclaims, and releases all of them after', function()
    T.sweep()
    local base, nodes = live_tensors(), tonumber(C.mt_live_nodes())
    local keep = {}
    -- far more live handles than the registry's first 4096 slots, made among dead ones, so that
    -- it grows while slots are reclaimed around the live ones
    for i = 1, 30000 do
      local t = torch.tensor({ i, -i })
      local _ = t + 1 -- a dead handle beside each live one
      if i % 3 ~= 0 then keep[#keep + 1] = t end
    end
    collectgarbage()
    for _ = 1, 20000 do local _ = torch.zeros(2) end -- reclaims run with the live handles in place
    for k = 1, #keep do
      local i = k + math.floor((k - 1) / 2) -- the i of the k-th kept tensor (every third skipped)
      local v = keep[k]:tolist()
      if v[1] ~= i or v[2] ~= -i then error(('kept tensor %d holds %s, %s'):format(k, v[1], v[2])) end
    end
    assert.are.equal(20000, #keep)
    keep = nil
    T.sweep()
    assert.are.equal(base, live_tensors())
    assert.are.equal(nodes, tonumber(C.mt_live_nodes()))
  end)

  it('compiles `a + b` with and without grad into loops without NYI in moontorch', function()
    for _, rg in ipairs { false, true } do
      local a = torch.tensor({ 1, 2, 3, 4 }, { requires_grad = rg })
      local b = torch.tensor({ 5, 6, 7, 8 }, { requires_grad = rg })
      local nyi, loop_traces, c = H.watch_jit(function()
        local c
        for _ = 1, 50000 do c = a + b end -- reclaims (their scan) run inside the loop
        return c
      end, 'moontorch', 'small_ops_spec')
      assert.are.same({}, nyi)
      assert.is_true(loop_traces > 0, 'the loop was not compiled')
      assert.are.same({ 6, 8, 10, 12 }, c:tolist())
      assert.are.equal(rg and 'AddBackward0' or nil, rg and c.grad_fn:name() or nil)
    end
  end)
end)

describe('small ops: references', function()
  it('a tensor with a second reference outlives the first one; the last one frees it', function()
    T.sweep()
    local base = live_tensors()
    local t = torch.tensor({ 1, 2, 3 })
    local own = C.mt_tensor_retain(t) -- a reference of C's own
    local v = t:narrow(1, 2, 2) -- a view: a second reference to the storage
    t = nil
    T.sweep() -- the handle's reference goes: C's own keeps the head, the view the storage
    assert.are.equal(base + 2, live_tensors())
    assert.are.same({ 2, 3 }, v:tolist())
    v = nil
    T.sweep()
    assert.are.equal(base + 1, live_tensors())
    C.mt_tensor_release(own) -- the last reference: the tensor goes
    assert.are.equal(base, live_tensors())
  end)

  it('the statistics stay exact over parallel jobs and small ops between them', function()
    T.sweep()
    local base, bytes = live_tensors(), tonumber(stats.live_bytes)
    local big = torch.ones(1048576) -- above the pool's grain: its ops run as parallel jobs
    for _ = 1, 20 do
      local s = (big * 2 + 1):exp()
      local small = torch.ones(4) + 1
    end
    big = nil
    T.sweep()
    assert.are.equal(base, live_tensors())
    assert.are.equal(bytes, tonumber(stats.live_bytes))
  end)
end)

describe('small ops: recording binary ops (both inputs\' shapes kept side by side)', function()
  -- the gradients from PyTorch 1.13:
  --   a = arange(3).reshape(3,1), b = arange(4).reshape(1,4) (float64): ((a+b)**2).sum().backward()
  --   a = arange(12).reshape(3,4), b = [1,2,3,4]: (a*b).sum().backward()
  --   a = ones(2,3), b = ones(3): add(a, b, alpha=2.5).sum().backward()
  local f64 = { dtype = torch.float64, requires_grad = true }
  it('sums each broadcast input\'s gradient down to its shape (add)', function()
    local a = torch.tensor({ { 0 }, { 1 }, { 2 } }, f64)
    local b = torch.tensor({ { 0, 1, 2, 3 } }, f64)
    local c = a + b
    assert.are.equal('AddBackward0', c.grad_fn:name())
    c:pow(2):sum():backward()
    assert.are.same({ { 12 }, { 20 }, { 28 } }, a.grad:tolist())
    assert.are.same({ { 6, 12, 18, 24 } }, b.grad:tolist())
  end)

  it('one input broadcast, the other not, with saved inputs (mul)', function()
    local a = torch.arange(12, { dtype = torch.float64 }):view(3, 4):requires_grad_()
    local b = torch.tensor({ 1, 2, 3, 4 }, f64)
    local c = a * b
    assert.are.equal('MulBackward0', c.grad_fn:name())
    c:sum():backward()
    assert.are.same({ { 1, 2, 3, 4 }, { 1, 2, 3, 4 }, { 1, 2, 3, 4 } }, a.grad:tolist())
    assert.are.same({ 12, 15, 18, 21 }, b.grad:tolist())
  end)

  it('a + alpha * b and a - alpha * b, broadcast', function()
    local a, b = torch.ones(2, 3, f64), torch.ones(3, f64)
    local c = torch.add(a, b, { alpha = 2.5 })
    assert.are.equal('AddBackward0', c.grad_fn:name())
    c:sum():backward()
    assert.are.same({ { 1, 1, 1 }, { 1, 1, 1 } }, a.grad:tolist())
    assert.are.same({ 5, 5, 5 }, b.grad:tolist())
    assert.are.equal('SubBackward0', torch.sub(a, b, { alpha = 2.5 }).grad_fn:name())
  end)

  it('passes gradcheck and gradgradcheck with broadcast inputs', function()
    local a = torch.randn(3, 1, f64)
    local b = torch.randn(1, 4, f64)
    for _, f in ipairs {
      function(x, y) return x + y end, function(x, y) return x * y end, function(x, y) return x / (y * y + 1) end,
      function(x, y) return torch.add(x, y, { alpha = -0.5 }) end,
    } do
      assert.is_true(torch.autograd.gradcheck(f, { a, b }))
      assert.is_true(torch.autograd.gradgradcheck(f, { a, b }))
    end
  end)
end)
