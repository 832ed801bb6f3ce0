-- The meta device (core/meta/meta.c): tensors with shapes, dtypes and strides but no data, as
-- PyTorch 1.13's device='meta'. Every op gives its result's shape, dtype and strides without
-- computing (spec/op_table_spec.lua checks each op of the list against the CPU); here: factories,
-- printing, what cannot run without data, mixing devices, autograd, modules and to_empty.
-- Expected values were recorded from PyTorch 1.13 (/usr/bin/python3) as noted at each.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = torch.nn
local C = torch._C

local function meta(...)
  local args = { ... }
  args[#args + 1] = { device = 'meta' }
  return torch.empty(unpack(args))
end

describe('meta tensors', function()
  it('are made by every factory and hold no data', function()
    local cases = {
      torch.empty(2, 3, { device = 'meta' }), torch.zeros(2, 3, { device = 'meta' }),
      torch.ones(2, 3, { device = torch.device('meta') }), torch.full({ 2, 3 }, 7.5, { device = 'meta' }),
      torch.rand(2, 3, { device = 'meta' }), torch.randn(2, 3, { device = 'meta' }),
      torch.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, { dtype = torch.float32, device = 'meta' }),
      torch.zeros_like(torch.ones(2, 3), { device = 'meta' }),
    }
    for i, t in ipairs(cases) do
      assert.are.equal('meta', tostring(t.device), i)
      assert.is_true(t.is_meta, i)
      assert.are.same({ 2, 3 }, H.shape(t), i)
      assert.are.same({ 3, 1 }, { t:stride(1), t:stride(2) }, i)
      assert.is_nil(t:data_ptr() ~= nil and t:data_ptr() or nil, i)
    end
    -- torch.arange(5, device='meta') -> size (5,), int64; torch.eye, linspace, randperm likewise
    assert.are.equal(torch.int64, torch.arange(5, { device = 'meta' }).dtype)
    assert.are.same({ 5 }, H.shape(torch.arange(5, { device = 'meta' })))
    assert.are.same({ 3, 4 }, H.shape(torch.eye(3, 4, { device = 'meta' })))
    assert.are.same({ 7 }, H.shape(torch.linspace(0, 1, 7, { device = 'meta' })))
    assert.are.same({ 6 }, H.shape(torch.randperm(6, { device = 'meta' })))
    assert.is_true(torch.randint(0, 5, { 4 }, { device = 'meta' }).is_meta)
  end)

  it("print as PyTorch's: tensor(..., device='meta', size=(2, 3))", function()
    -- repr() of torch.ones(2, 3, device='meta'), torch.empty(0, device='meta'),
    -- torch.ones((), device='meta'), torch.ones(2, dtype=torch.int64, device='meta'),
    -- torch.zeros(2, dtype=torch.bool, device='meta'), nn.Linear(3, 2, device='meta').weight,
    -- torch.ones(2, 3, device='meta', requires_grad=True).exp()
    assert.are.equal("tensor(..., device='meta', size=(2, 3))", tostring(torch.ones(2, 3, { device = 'meta' })))
    assert.are.equal("tensor(..., device='meta', size=(0,))", tostring(meta(0)))
    assert.are.equal("tensor(..., device='meta', size=())", tostring(torch.ones({}, { device = 'meta' })))
    assert.are.equal("tensor(..., device='meta', size=(2,), dtype=torch.int64)",
      tostring(torch.ones(2, { dtype = torch.int64, device = 'meta' })))
    assert.are.equal("tensor(..., device='meta', size=(2,), dtype=torch.bool)",
      tostring(torch.zeros(2, { dtype = torch.bool, device = 'meta' })))
    assert.are.equal("Parameter containing:\ntensor(..., device='meta', size=(2, 3), requires_grad=True)",
      tostring(nn.Linear(3, 2, { device = 'meta' }).weight))
    assert.are.equal("tensor(..., device='meta', size=(2, 3), grad_fn=<ExpBackward0>)",
      tostring(torch.ones(2, 3, { device = 'meta', requires_grad = true }):exp()))
  end)

  it('give shapes, dtypes and strides as PyTorch does', function()
    -- x = torch.empty(2, 3, 4, device='meta'): x.stride() (12, 4, 1); x.permute(2, 0, 1).stride()
    -- (1, 12, 4), .contiguous().stride() (6, 3, 1); x[:, 1].stride() (12, 1); x.sum(1) [2, 4]
    -- float32; x.mean(1, keepdim=True) [2, 1, 4]
    local x = meta(2, 3, 4)
    assert.are.same({ 12, 4, 1 }, x:stride())
    assert.are.same({ 1, 12, 4 }, x:permute(3, 1, 2):stride())
    assert.are.same({ 6, 3, 1 }, x:permute(3, 1, 2):contiguous():stride())
    assert.are.same({ 12, 1 }, x[{ {}, 2 }]:stride())
    assert.are.same({ 2, 4 }, H.shape(x:sum(2)))
    assert.are.same({ 2, 1, 4 }, H.shape(x:mean(2, true)))
    -- i = torch.empty(2, 3, dtype=torch.int32, device='meta'): (i + 1).dtype int32, (i / 2).dtype
    -- float32, (i > 0).dtype bool; torch.matmul(empty(5, 2, 3), empty(3, 4)) [5, 2, 4];
    -- cat of [2, 3] and [1, 3]: [3, 3]; max(1) indices int64; empty(4).topk(2) values [2];
    -- empty(3, 4).argmax() [], argmax(1, keepdim=True) [3, 1]
    local i = torch.empty(2, 3, { dtype = torch.int32, device = 'meta' })
    assert.are.equal(torch.int32, (i + 1).dtype)
    assert.are.equal(torch.float32, (i / 2).dtype)
    assert.are.equal(torch.bool, (i:gt(0)).dtype)
    assert.are.same({ 5, 2, 4 }, H.shape(torch.matmul(meta(5, 2, 3), meta(3, 4))))
    assert.are.same({ 3, 3 }, H.shape(torch.cat({ meta(2, 3), meta(1, 3) })))
    local _, ix = meta(2, 3):max(2)
    assert.are.equal(torch.int64, ix.dtype)
    assert.are.same({ 2 }, H.shape((meta(4):topk(2))))
    assert.are.same({}, H.shape(meta(3, 4):argmax()))
    assert.are.same({ 3, 1 }, H.shape(meta(3, 4):argmax(2, true)))
  end)

  it('refuse what needs their values, naming the op', function()
    -- PyTorch: item, tolist, .to('cpu') ("Cannot copy out of meta tensor; no data!"), nonzero,
    -- masked_select, unique, bincount and equal all fail on meta tensors
    local m = torch.ones(2, 3, { device = 'meta' })
    H.errors_with(function() m:item() end, 'moontorch.item: a tensor on device meta holds no data')
    H.errors_with(function() m:tolist() end, 'moontorch.tolist: a tensor on device meta holds no data')
    H.errors_with(function() m:to('cpu') end, 'moontorch.to: cannot copy out of a tensor on device meta: it holds no data')
    H.errors_with(function() m:cpu() end, 'cannot copy out of a tensor on device meta')
    H.errors_with(function() torch.zeros(2, 3):copy_(m) end, 'moontorch.copy_: cannot copy out of a tensor on device meta')
    H.errors_with(function() m:nonzero() end, 'moontorch.nonzero: not supported on device meta')
    H.errors_with(function() return m[m:gt(0)] end, 'not supported on device meta')
    H.errors_with(function() m:masked_select(m:gt(0)) end, 'moontorch.masked_select: not supported on device meta')
    H.errors_with(function() m:unique() end, 'moontorch.unique: not supported on device meta')
    H.errors_with(function() torch.bincount(torch.ones(3, { dtype = torch.int64, device = 'meta' })) end,
      'moontorch.bincount: not supported on device meta')
    H.errors_with(function() torch.equal(m, m) end, 'moontorch.equal: a tensor on device meta holds no data')
    H.errors_with(function() torch.allclose(m, m) end, 'moontorch.allclose: a tensor on device meta holds no data')
    H.errors_with(function() nn.functional.one_hot(torch.ones(3, { dtype = torch.int64, device = 'meta' })) end,
      'moontorch.one_hot: the number of classes of a tensor on device meta cannot be inferred')
    assert.are.same({ 3, 4 },
      H.shape(nn.functional.one_hot(torch.ones(3, { dtype = torch.int64, device = 'meta' }), 4)))
    H.errors_with(function() torch.save({ m }, os.tmpname()) end, 'moontorch.save: a tensor on device meta holds no data')
    H.errors_with(function() torch.save_safetensors({ w = m }, os.tmpname()) end,
      'moontorch.save_safetensors: w: a tensor on device meta has no data to save')
    -- all()/any() without a dim give the 0-dim meta tensor (a CPU tensor's give a Lua boolean)
    assert.is_true(m:all().is_meta)
  end)

  it('mix with CPU tensors only as numbers and 0-dim tensors, as in PyTorch', function()
    -- torch.ones(2, 3, device='meta') + torch.tensor(1.) -> meta; + torch.ones(3) -> "Expected
    -- all tensors to be on the same device, but found at least two devices, meta and cpu!"
    local m = torch.ones(2, 3, { device = 'meta' })
    assert.is_true((m + torch.tensor(1)).is_meta)
    assert.is_true((torch.tensor(1) * m).is_meta)
    assert.is_true((m + 1).is_meta)
    H.errors_with(function() return m + torch.ones(3) end,
      'moontorch.add: expected all tensors on the same device, found meta and cpu')
    H.errors_with(function() return torch.ones(3, 2):mm(meta(2, 2)) end,
      'moontorch.mm: expected all tensors on the same device, found cpu and meta')
    H.errors_with(function() return torch.cat({ m, torch.ones(1, 3) }) end,
      'moontorch.cat: expected all tensors on the same device, found meta and cpu')
    H.errors_with(function() return torch.add(m, m, { out = torch.empty(2, 3) }) end,
      'moontorch.add: expected out on device meta, found it on cpu')
    -- a CPU tensor goes to the meta device (its values dropped); indexing takes CPU positions
    assert.is_true(torch.ones(2, 3):to('meta').is_meta)
    assert.are.same({ 2, 3 }, H.shape(m[{ torch.tensor({ 1, 2 }, { dtype = torch.int64 }) }]))
  end)

  it('record autograd graphs and run backward without data', function()
    local x = torch.ones(4, 3, { device = 'meta', requires_grad = true })
    local w = torch.ones(3, 2, { device = 'meta', requires_grad = true })
    local y = (x:mm(w):tanh() * 2):sum()
    assert.are.equal('SumBackward0', y.grad_fn:name())
    y:backward()
    assert.is_true(x.grad.is_meta)
    assert.are.same({ 4, 3 }, H.shape(x.grad))
    assert.are.same({ 3, 2 }, H.shape(w.grad))
  end)
end)

describe('modules on the meta device', function()
  it('nn.Linear(4096, 4096, {device=meta}) allocates nothing; to_empty{device=cpu} gives it memory', function()
    local stats = C.mt_get_stats()
    local before = tonumber(stats.live_bytes)
    local l = nn.Linear(4096, 4096, { device = 'meta' })
    assert.are.equal(before, tonumber(stats.live_bytes))
    assert.is_true(l.weight.is_meta and l.bias.is_meta)
    -- torch.nn.Linear(3, 2, device='meta').to_empty(device='cpu'): weight on cpu, [2, 3],
    -- requires_grad, still a Parameter
    local s = nn.Linear(3, 2, { device = 'meta' })
    local w = s.weight
    assert.are.equal(s, s:to_empty({ device = 'cpu' }))
    assert.are.equal(w, s.weight) -- the same parameter, now with memory
    assert.are.equal('cpu', tostring(s.weight.device))
    assert.are.same({ 2, 3 }, H.shape(s.weight))
    assert.is_true(s.weight.requires_grad)
    local mid = tonumber(stats.live_bytes)
    l:to_empty({ device = 'cpu' })
    assert.is_true(tonumber(stats.live_bytes) - mid >= 4096 * 4096 * 4)
    assert.are.equal('cpu', tostring(l.weight.device))
    s:reset_parameters()
    assert.are.same({ 1, 2 }, H.shape(s(torch.ones(1, 3))))
    -- PyTorch: nn.Linear(3, 2, device='meta').to('cpu') fails ("Cannot copy out of meta tensor")
    H.errors_with(function() nn.Linear(3, 2, { device = 'meta' }):to('cpu') end, 'cannot copy out of a tensor on device meta')
    H.errors_with(function() s:to_empty() end, 'moontorch.nn.Module.to_empty: a device is required')
  end)

  it('every module constructor takes device=meta, and a forward and backward run on it', function()
    local ms = {
      nn.Linear(5, 4, { device = 'meta' }), nn.BatchNorm1d(5, { device = 'meta' }),
      nn.Sequential(nn.Linear(5, 8, { device = 'meta' }), nn.ReLU(), nn.Linear(8, 5, { device = 'meta' }),
        nn.LogSoftmax(2)),
    }
    for i, m in ipairs(ms) do
      for _, p in ipairs(m:parameters()) do assert.is_true(p.is_meta, i) end
      local y = m(torch.ones(3, 5, { device = 'meta' }))
      assert.is_true(y.is_meta, i)
      y:sum():backward()
      for _, p in ipairs(m:parameters()) do assert.is_true(p.grad.is_meta, i) end
    end
    -- a module made on the CPU goes to the meta device whole
    local c = nn.Linear(3, 2):to('meta')
    assert.is_true(c.weight.is_meta and c.bias.is_meta)
    -- losses and an optimizer step
    local lin = nn.Linear(3, 4, { device = 'meta' })
    local opt = torch.optim.SGD(lin:parameters(), { lr = 0.1, momentum = 0.9 })
    local out = lin(torch.ones(2, 3, { device = 'meta' }))
    local loss = nn.functional.cross_entropy(out, torch.zeros(2, { dtype = torch.int64, device = 'meta' }))
    assert.is_true(loss.is_meta)
    loss:backward()
    opt:step()
    assert.is_true(lin.weight.is_meta)
  end)
end)
