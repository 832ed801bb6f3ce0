-- nn.utils.prune (lua/nn/prune.lua) and the CSR weight of a pruned Linear (lua/ops/sparse.lua,
-- core/ops/sparse.c): masks, keys and values recorded from PyTorch 1.13 by
-- spec/support/inspect_record.py (modules made after torch.manual_seed(0); the random methods'
-- masks drawn after the seeds written there).
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local W = dofile('spec/support/inspect_wants.lua')
local prune = nn.utils.prune

local function keys(m) return m:state_dict():keys() end
local function pre_hooks(m) return require('moontorch.nn.Module').hooks_of(m, 'forward_pre') or {} end

describe('nn.utils.prune', function()
  it('l1_unstructured: weight_orig, weight_mask, the pre-hook, repeated pruning, remove', function()
    local w = W.prune_l1
    torch.manual_seed(0)
    local m = nn.Linear(4, 3)
    local orig = m.weight
    assert.are.equal(m, prune.l1_unstructured(m, 'weight', 0.5))
    H.near(m.weight_mask, w.mask, 0)
    H.near(m.weight, w.weight, 1e-7)
    assert.are.same(w.keys, keys(m))
    assert.is_true(rawequal(orig, m.weight_orig))
    assert.is_true(torch.isinstance(m.weight_orig, nn.Parameter))
    assert.is_false(torch.isinstance(m.weight, nn.Parameter))
    assert.are.equal(w.hooks, #pre_hooks(m))
    H.near(m(torch.ones(2, 4)), w.y, 1e-6)
    assert.is_true(prune.is_pruned(m))
    -- the hook recomputes weight from weight_orig at each call
    m.weight_orig.data = torch.ones(3, 4)
    local y = m(torch.ones(1, 4))
    H.near(m.weight, m.weight_mask, 0)
    H.near(y, (m.weight_mask:sum(2) + m.bias):view(1, 3), 1e-6)
    m.weight_orig.data = orig:detach():clone()
    -- pruning again: a PruningContainer, the new amount taken of what was kept
    torch.manual_seed(0)
    m = nn.Linear(4, 3)
    prune.l1_unstructured(m, 'weight', 0.5)
    prune.l1_unstructured(m, 'weight', 2)
    H.near(m.weight_mask, w.mask2, 0)
    local hooks = pre_hooks(m)
    assert.are.equal(1, #hooks)
    assert.is_true(torch.isinstance(hooks[1].fn, prune.PruningContainer))
    assert.are.equal(w.container_len, hooks[1].fn:len())
    assert.is_true(torch.isinstance(hooks[1].fn[1], prune.L1Unstructured))
    prune.remove(m, 'weight')
    H.near(m.weight, w.removed, 1e-7)
    assert.are.same(w.removed_keys, keys(m))
    assert.is_true(torch.isinstance(m.weight, nn.Parameter))
    assert.is_false(prune.is_pruned(m))
    assert.are.equal(0, #pre_hooks(m))
    -- gradients reach weight_orig through the mask
    torch.manual_seed(0)
    m = prune.l1_unstructured(nn.Linear(4, 3), 'weight', 0.5)
    m(torch.ones(2, 4)):sum():backward()
    H.near(m.weight_orig.grad, m.weight_mask * 2, 0)
  end)

  it('random_unstructured draws PyTorch\'s mask under the same seed', function()
    local w = W.prune_random
    torch.manual_seed(0)
    local m = nn.Linear(4, 3)
    torch.manual_seed(1)
    prune.random_unstructured(m, 'weight', 0.3)
    H.near(m.weight_mask, w.mask, 0)
    prune.random_unstructured(m, 'weight', 0.5)
    H.near(m.weight_mask, w.mask2, 0)
  end)

  it('ln_structured over output and input channels, with n = 2, 1 and inf', function()
    local w = W.prune_ln
    torch.manual_seed(0)
    local c = nn.Conv2d(2, 4, 3)
    prune.ln_structured(c, 'weight', 0.5, 2, 1) -- PyTorch's dim 0
    H.near(c.weight_mask:sum({ 2, 3, 4 }), w.channels, 0)
    prune.ln_structured(c, 'weight', 1, 1, 2)
    H.near(c.weight_mask:sum({ 1, 3, 4 }), w.in_channels, 0)
    H.near(c.weight_mask:sum({ 2, 3, 4 }), w.channels2, 0)
    torch.manual_seed(0)
    local lin = nn.Linear(5, 4)
    prune.ln_structured(lin, 'weight', 0.4, math.huge, -1)
    H.near(lin.weight_mask:sum(1), w.inf_cols, 0)
  end)

  it('random_structured draws PyTorch\'s channels under the same seed', function()
    local w = W.prune_random_structured
    torch.manual_seed(0)
    local m = nn.Linear(5, 4)
    torch.manual_seed(3)
    prune.random_structured(m, 'weight', 2, 2)
    H.near(m.weight_mask, w.mask, 0)
    torch.manual_seed(4)
    prune.random_structured(m, 'weight', 0.5, 1)
    H.near(m.weight_mask, w.mask2, 0)
  end)

  it('global_unstructured with importance_scores, and with a random method', function()
    local w = W.prune_global
    torch.manual_seed(0)
    local a, b = nn.Linear(4, 3), nn.Linear(3, 2)
    local scores = torch.arange(0, 12):float():view(3, 4)
    prune.global_unstructured({ { a, 'weight' }, { b, 'weight' }, { a, 'bias' } }, {
      pruning_method = prune.L1Unstructured, amount = 0.4, importance_scores = { { a, 'weight', scores } } })
    H.near(a.weight_mask, w.a_weight, 0)
    H.near(b.weight_mask, w.b_weight, 0)
    H.near(a.bias_mask, w.a_bias, 0)
    -- scores as module -> {name -> scores}, and the method by position
    torch.manual_seed(0)
    local a2, b2 = nn.Linear(4, 3), nn.Linear(3, 2)
    prune.global_unstructured({ { a2, 'weight' }, { b2, 'weight' }, { a2, 'bias' } }, prune.L1Unstructured,
      { amount = 0.4, importance_scores = { [a2] = { weight = scores } } })
    H.near(a2.weight_mask, w.a_weight, 0)
    local wr = W.prune_global_random
    torch.manual_seed(0)
    a, b = nn.Linear(4, 3), nn.Linear(3, 2)
    torch.manual_seed(5)
    prune.global_unstructured({ { a, 'weight' }, { b, 'weight' } }, { pruning_method = prune.RandomUnstructured, amount = 7 })
    H.near(a.weight_mask, wr.a_weight, 0)
    H.near(b.weight_mask, wr.b_weight, 0)
    H.errors_with(function()
      prune.global_unstructured({ { a, 'weight' } }, { pruning_method = prune.LnStructured, amount = 1, n = 2 })
    end, 'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`')
  end)

  it('custom_from_mask, identity, then another method on top', function()
    local w = W.prune_custom
    torch.manual_seed(0)
    local m = nn.Linear(3, 2)
    prune.custom_from_mask(m, 'bias', torch.tensor({ 0, 1 }))
    prune.l1_unstructured(m, 'bias', 1)
    H.near(m.bias_mask, w.mask, 0)
    H.near(m.bias, w.bias, 0)
    assert.are.same(w.keys, keys(m))
    local i = prune.identity(nn.Linear(2, 2), 'weight')
    H.near(i.weight_mask, torch.ones(2, 2), 0)
    H.near(i.weight, i.weight_orig, 0)
  end)

  it('BasePruningMethod for a method of one\'s own; prune() on a tensor', function()
    local Every2, Base = torch.class('spec_prune.Every2', prune.BasePruningMethod)
    Every2.PRUNING_TYPE = 'unstructured'
    function Every2:compute_mask(t, default_mask)
      local mask = default_mask:clone()
      local flat = mask:view(-1)
      for k = 1, flat:numel(), 2 do flat[k] = 0 end
      return mask
    end
    assert.are.equal(prune.BasePruningMethod, Base)
    local m = nn.Linear(3, 2)
    Every2:apply(m, 'weight')
    H.near(m.weight_mask, { { 0, 1, 0 }, { 1, 0, 1 } }, 0)
    -- applied again: the container hands the new method only what was kept
    Every2:apply(m, 'weight')
    H.near(m.weight_mask, { { 0, 0, 0 }, { 1, 0, 0 } }, 0)
    local t = torch.tensor({ 1, 2, 3, 4 })
    H.near(prune.L1Unstructured(0.5):prune(t), { 0, 0, 3, 4 }, 0)
    H.near(prune.L1Unstructured(1):prune(t, { importance_scores = torch.tensor({ 9, 1, 9, 9 }) }), { 1, 0, 3, 4 }, 0)
  end)

  it('amounts as PyTorch: fractions round half to even, integers are counts; errors', function()
    local m = nn.Linear(5, 2) -- 10 weights: 0.25 prunes round(2.5) = 2
    prune.random_unstructured(m, 'weight', 0.25)
    assert.are.equal(2, 10 - m.weight_mask:sum():item())
    local m2 = nn.Linear(5, 2) -- 0.35 prunes round(3.5) = 4
    prune.l1_unstructured(m2, 'weight', 0.35)
    assert.are.equal(4, 10 - m2.weight_mask:sum():item())
    H.errors_with(function() prune.l1_unstructured(nn.Linear(2, 2), 'weight', 1.5) end,
      'amount=1.5 should either be a float in the range [0, 1] or a non-negative integer')
    H.errors_with(function() prune.l1_unstructured(nn.Linear(2, 2), 'weight', 5) end,
      'amount=5 should be smaller than the number of parameters to prune=4')
    H.errors_with(function() prune.l1_unstructured(nn.Linear(2, 2), 'weight', -1) end, 'non-negative integer')
    H.errors_with(function() prune.remove(nn.Linear(2, 2), 'weight') end,
      "Parameter 'weight' of module Linear(in_features=2, out_features=2, bias=True) has to be pruned before pruning can be removed")
    H.errors_with(function() prune.ln_structured(nn.Linear(2, 2), 'bias', 1, 2, 1) end,
      'Structured pruning can only be applied to multidimensional tensors')
    H.errors_with(function() prune.l1_unstructured(nn.Linear(2, 2), 'weight', 0.5, { importance_scores = torch.ones(3) }) end,
      'importance_scores should have the same shape as parameter weight')
    -- a failed compute_mask leaves the module as it was
    local l = nn.Linear(2, 2)
    pcall(prune.l1_unstructured, l, 'weight', 9)
    assert.are.same({ 'bias', 'weight' }, keys(l)) -- weight registered again, last (PyTorch's order too)
    assert.is_false(prune.is_pruned(l))
  end)

  it('pruned modules survive torch.save / torch.load (the hooks are saved) and torch.deepcopy', function()
    torch.manual_seed(0)
    local m = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    prune.l1_unstructured(m[1], 'weight', 0.5)
    assert.is_true(prune.is_pruned(m))
    local path = os.tmpname()
    torch.save(m, path)
    local m2 = torch.load(path)
    os.remove(path)
    assert.is_true(prune.is_pruned(m2))
    m2[1].weight_orig.data = torch.ones(3, 4)
    m2(torch.ones(1, 4))
    H.near(m2[1].weight, m2[1].weight_mask, 0)
    prune.remove(m2[1], 'weight')
    assert.is_false(prune.is_pruned(m2))
    local c = torch.deepcopy(m)
    assert.is_true(prune.is_pruned(c))
    c[1].weight_orig.data = torch.ones(3, 4)
    c(torch.ones(1, 4))
    H.near(c[1].weight, c[1].weight_mask, 0)
    H.near(m[1].weight, W.prune_l1.weight, 1e-7) -- the original untouched
  end)
end)

describe('a pruned Linear\'s CSR weight (prune.remove{sparse=true})', function()
  it('keeps a weight with at least 90% zeros as CSR; forward and training as the dense one', function()
    torch.manual_seed(0)
    local m = nn.Linear(40, 30)
    prune.l1_unstructured(m, 'weight', 0.9)
    local dense = nn.Linear(40, 30)
    dense.weight.data = m.weight:detach():clone()
    dense.bias.data = m.bias:detach():clone()
    prune.remove(m, 'weight', { sparse = true })
    assert.are.same({ 'bias', 'weight_values', 'weight_crow_indices', 'weight_col_indices' }, keys(m))
    assert.is_true(torch.sparse.is_csr(m.weight))
    assert.are.equal('torch.sparse_csr', m.weight.layout)
    assert.are.equal(120, m.weight:_nnz()) -- round(0.9 * 1200) pruned
    H.near(m.weight:to_dense(), dense.weight, 0)
    local x = torch.randn(70, 40) -- more rows than a block of 64
    H.near(m(x), dense(x), 1e-5)
    H.near(m(torch.randn(2, 5, 40)):size(), { 2, 5, 30 }, 0)
    -- gradients: values get the dense gradient at their places, the input its gradient
    local xd = x:clone():requires_grad_()
    local xs = x:clone():requires_grad_()
    dense(xd):pow(2):sum():backward()
    m(xs):pow(2):sum():backward()
    H.near(xs.grad, xd.grad, 1e-4)
    local gd = dense.weight.grad:masked_select(dense.weight:ne(0))
    H.near(m.weight_values.grad, gd, 1e-4)
    -- an optimizer step keeps the pattern
    local opt = torch.optim.SGD(m:parameters(), { lr = 0.1 })
    opt:step()
    m(x)
    assert.are.equal(120, m.weight:_nnz())
    -- the module converts, saves and loads
    m:double()
    assert.are.equal(torch.float64, m.weight.dtype)
    local path = os.tmpname()
    torch.save(m, path)
    local m2 = torch.load(path)
    os.remove(path)
    H.near(m2(x:double()), m(x:double()), 1e-12)
    -- under 90% zeros: the weight stays dense
    local d = nn.Linear(10, 10)
    prune.l1_unstructured(d, 'weight', 0.5)
    prune.remove(d, 'weight', { sparse = true })
    assert.is_true(torch.is_tensor(d.weight))
    -- 90% of a 4096 x 4096 Linear (15099494 zeros: 0.9 of it rounded) counts as 90%
    assert.is_true(prune.sparse_weight(nn.Linear(1, 10), 'weight', { threshold = 0 }))
  end)

  it('torch.sparse_csr_tensor, to_sparse_csr, printing and sparse.mm as PyTorch (1-based positions)', function()
    -- /usr/bin/python3: print(torch.tensor([[0., 2, 0], [1, 0, 3]], dtype=torch.float64).to_sparse_csr())
    -- (its crow_indices [0, 1, 3] and col_indices [1, 0, 2], 0-based)
    local A = torch.tensor({ { 0, 2, 0 }, { 1, 0, 3 } }, { dtype = torch.float64 })
    local c = A:to_sparse_csr()
    assert.are.equal([[tensor(crow_indices=tensor([1, 2, 4]),
       col_indices=tensor([2, 1, 3]),
       values=tensor([2., 1., 3.]), size=(2, 3), nnz=3, dtype=torch.float64,
       layout=torch.sparse_csr)]], tostring(c))
    H.near(c:to_dense(), A, 0)
    assert.are.same({ 2, 3 }, H.shape(c))
    local B = torch.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, { dtype = torch.float64 })
    H.near(torch.sparse.mm(c, B), A:matmul(B), 0)
    H.near(c:matmul(torch.tensor({ 1, 1, 1 }, { dtype = torch.float64 })), { 2, 4 }, 0)
    local e = torch.sparse_csr_tensor({ 1, 1, 2 }, { 3 }, { 5 }, { 2, 4 })
    H.near(e:to_dense(), { { 0, 0, 0, 0 }, { 0, 0, 5, 0 } }, 0)
    -- empty rows and an all-zero matrix
    local z = torch.zeros(3, 2):to_sparse_csr()
    assert.are.equal(0, z:_nnz())
    H.near(torch.sparse.mm(z, torch.ones(2, 4)), torch.zeros(3, 4), 0)
    -- meta: shapes only
    local mc = torch.sparse_csr_tensor(torch.tensor({ 1, 2, 4 }, { dtype = torch.int64, device = 'meta' }),
      torch.tensor({ 2, 1, 3 }, { dtype = torch.int64, device = 'meta' }), torch.empty(3, { device = 'meta' }), { 2, 3 })
    local r = torch.sparse.mm(mc, torch.empty(3, 5, { device = 'meta' }))
    assert.is_true(r.is_meta)
    assert.are.same({ 2, 5 }, H.shape(r))
  end)

  it('bad CSR arrays are errors naming what is wrong', function()
    local v = torch.ones(2)
    local function mm(crow, col, ncols)
      return torch.sparse.mm(torch.sparse_csr_tensor(crow, col, v, { #crow - 1, ncols or 3 }), torch.ones(ncols or 3, 2))
    end
    H.errors_with(function() mm({ 1, 2, 3 }, { 1, 4 }) end, 'moontorch.csr_mm: col_indices[2] = 4 is out of range for 3 columns')
    H.errors_with(function() mm({ 1, 3, 2 }, { 1, 2 }) end, 'crow_indices must not decrease')
    H.errors_with(function() mm({ 2, 2, 3 }, { 1, 2 }) end, 'crow_indices must start at 1')
    H.errors_with(function() mm({ 1, 2, 4 }, { 1, 2 }) end, 'crow_indices end at 4 but there are 2 values')
    H.errors_with(function() torch.sparse.mm(torch.ones(2, 2):to_sparse_csr(), torch.ones(3, 2)) end,
      'the sparse matrix is 2 x 2 but dense is [3, 2]')
    H.errors_with(function() torch.sparse.mm(torch.ones(2, 2):to_sparse_csr(), torch.ones(2, 2, { dtype = torch.float64 })) end,
      'expected dense of the values\' dtype float32, got float64')
    H.errors_with(function() torch.ones(2, 2, 2):to_sparse_csr() end, 'only 2-D tensors')
  end)
end)
