-- Embedding and EmbeddingBag (lua/nn/sparse.lua): outputs, weight gradients and renormalised
-- weights recorded from PyTorch 1.13 after loading its state_dict (spec/support/nn_modules_record.py
-- writes spec/support/nn_modules_wants.lua; indices and offsets there are 0-based and get 1 added
-- here, padding_idx too), PyTorch's init, from_pretrained, printing, meta, errors.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local F = nn.functional
local W = dofile('spec/support/nn_modules_wants.lua')

local d64 = { dtype = torch.float64 }
local i64 = { dtype = torch.int64 }
local function t64(v) return torch.tensor(v, d64) end
local function idx(v) return torch.tensor(v, i64) + 1 end

-- name -> the module and its inputs (PyTorch's construction in the recorder, beside)
local made = {
  Embedding = function(i) return nn.Embedding(6, 3, d64), { idx(i[1]) } end,
  Embedding_padding = function(i) return nn.Embedding(6, 3, 3, d64), { idx(i[1]) } end,
  Embedding_max_norm = function(i) return nn.Embedding(6, 3, { max_norm = 0.9, norm_type = 1.5, dtype = torch.float64 }), { idx(i[1]) } end,
  Embedding_freq = function(i)
    return nn.Embedding(6, 3, { scale_grad_by_freq = true, padding_idx = -1, dtype = torch.float64 }), { idx(i[1]) }
  end,
  EmbeddingBag_mean = function(i) return nn.EmbeddingBag(6, 3, d64), { idx(i[1]), idx(i[2]) } end,
  EmbeddingBag_sum_psw = function(i)
    return nn.EmbeddingBag(6, 3, { mode = 'sum', dtype = torch.float64 }), { idx(i[1]), idx(i[2]), t64(i[3]) }
  end,
  EmbeddingBag_max = function(i) return nn.EmbeddingBag(6, 3, { mode = 'max', dtype = torch.float64 }), { idx(i[1]), idx(i[2]) } end,
  EmbeddingBag_mean_pad_last = function(i)
    return nn.EmbeddingBag(6, 3, { include_last_offset = true, padding_idx = 3, dtype = torch.float64 }), { idx(i[1]), idx(i[2]) }
  end,
  EmbeddingBag_max_pad = function(i)
    return nn.EmbeddingBag(6, 3, { mode = 'max', padding_idx = 5, max_norm = 1.0, dtype = torch.float64 }), { idx(i[1]), idx(i[2]) }
  end,
  EmbeddingBag_2d_sum = function(i)
    return nn.EmbeddingBag(6, 3, { mode = 'sum', padding_idx = 1, dtype = torch.float64 }), { idx(i[1]) }
  end,
}

describe('Embedding and EmbeddingBag against PyTorch 1.13', function()
  for name, make in pairs(made) do
    it(name, function()
      local w = W['emb_' .. name]
      assert.is_not_nil(w, name)
      local m, ins = make(w.inputs)
      m:load_state_dict(torch.OrderedDict({ { 'weight', t64(w.state.weight) } }))
      local out = m(unpack(ins))
      H.near(out, w.out, 1e-9, 1e-9)
      local s = (out * t64(w.g)):sum()
      s:backward()
      H.near(m.weight.grad, w.dweight, 1e-9, 1e-9)
      H.near(m.weight, w.after, 1e-9, 1e-9) -- max_norm renormalises the rows used, in place
    end)
  end

  it('scale_grad_by_freq divides each row\'s gradient by its count among the indices', function()
    -- (PyTorch 1.13's CPU kernel divides the wrong rows here: see spec/support/nn_modules_record.py)
    local w = torch.ones({ 6, 1 }, d64):requires_grad_()
    local flat, offs = idx({ 1, 2, 4, 5, 4, 3, 2, 0 }), idx({ 0, 2, 2, 5 })
    F.embedding_bag(flat, w, offs, { mode = 'sum', scale_grad_by_freq = true }):sum():backward()
    H.near(w.grad:reshape(-1), { 1, 1, 1, 1, 1, 1 }, 1e-12)
    w.grad = nil
    F.embedding_bag(flat, w, offs, { mode = 'mean', scale_grad_by_freq = true }):sum():backward()
    -- bag sizes 2, 0, 3, 3; row r gets sum over its uses of 1 / (bag size * count of r)
    H.near(w.grad:reshape(-1), { 1 / 3, 1 / 2, (1 / 2 + 1 / 3) / 2, 1 / 3, (2 / 3) / 2, 1 / 3 }, 1e-12)
    -- and F.embedding the same way
    w.grad = nil
    F.embedding(flat, w, { scale_grad_by_freq = true }):sum():backward()
    H.near(w.grad:reshape(-1), { 1, 1, 1, 1, 1, 1 }, 1e-12)
  end)

  it('the functional forms and int32 indices', function()
    local w = W.emb_EmbeddingBag_mean
    local weight = t64(w.state.weight)
    H.near(F.embedding_bag(idx(w.inputs[1]):to(torch.int32), weight, idx(w.inputs[2]):to(torch.int32)), w.out, 1e-12)
    H.near(F.embedding_bag(idx(w.inputs[1]), weight, { offsets = idx(w.inputs[2]), mode = 'mean' }), w.out, 1e-12)
    local e = W.emb_Embedding
    H.near(F.embedding(idx(e.inputs[1]):to(torch.int32), t64(e.state.weight)), e.out, 1e-12)
  end)
end)

describe('Embedding: init, from_pretrained, printing, meta, errors', function()
  it('draws PyTorch\'s N(0, 1) and zeroes the padding row', function()
    -- PyTorch 1.13: torch.manual_seed(0); nn.Embedding(4, 2, padding_idx=1).weight
    torch.manual_seed(0)
    local m = nn.Embedding(4, 2, 2)
    H.near(m.weight, { { 1.5410, -0.2934 }, { 0, 0 }, { -1.0845, -1.3986 }, { 0.4033, 0.8380 } }, 1e-4)
  end)

  it('from_pretrained shares the tensor, freezes by default, keeps the padding row', function()
    local e = torch.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
    local m = nn.Embedding.from_pretrained(e, { padding_idx = 2 })
    assert.is_false(m.weight.requires_grad)
    H.near(m(torch.tensor({ 2, 3 }, i64)), { { 3, 4 }, { 5, 6 } })
    e[1][1] = 9
    assert.are.equal(9, m.weight[1][1]:item())
    assert.is_true(nn.Embedding.from_pretrained(e, false).weight.requires_grad)
    local b = nn.EmbeddingBag.from_pretrained(e, { mode = 'sum' })
    H.near(b(torch.tensor({ { 1, 2 }, { 3, 3 } }, i64)), { { 12, 6 }, { 10, 12 } })
    assert.are.equal('Embedding(3, 2, padding_idx=2)', tostring(m))
  end)

  it('prints as PyTorch prints', function()
    assert.are.equal('Embedding(10, 3)', tostring(nn.Embedding(10, 3)))
    assert.are.equal('Embedding(10, 3, padding_idx=3, max_norm=1.0, norm_type=3.0, scale_grad_by_freq=True)',
      tostring(nn.Embedding(10, 3, { padding_idx = 3, max_norm = 1.0, norm_type = 3.0, scale_grad_by_freq = true })))
    assert.are.equal('EmbeddingBag(10, 3, mode=mean)', tostring(nn.EmbeddingBag(10, 3)))
    assert.are.equal('EmbeddingBag(10, 3, max_norm=2.0, mode=max, padding_idx=1)',
      tostring(nn.EmbeddingBag(10, 3, { max_norm = 2.0, mode = 'max', padding_idx = 1, include_last_offset = true })))
  end)

  it('runs on the meta device', function()
    local m = nn.Embedding(10, 4, { device = 'meta' })
    assert.is_true(m.weight.is_meta)
    local y = m(torch.empty({ 2, 3 }, { dtype = torch.int64, device = 'meta' }))
    assert.is_true(y.is_meta)
    assert.are.same({ 2, 3, 4 }, y:size())
    local b = nn.EmbeddingBag(10, 4, { device = 'meta', mode = 'sum' })
    local z = b(torch.empty({ 7 }, { dtype = torch.int64, device = 'meta' }), torch.tensor({ 1, 3, 3 }, i64))
    assert.are.same({ 3, 4 }, z:size())
    assert.is_true(z.is_meta)
    m:to_empty({ device = 'cpu' })
    assert.is_false(m.weight.is_meta)
  end)

  it('gradchecks in float64', function()
    torch.manual_seed(8)
    local w = torch.randn({ 6, 3 }, d64):requires_grad_()
    local input = torch.tensor({ 1, 2, 4, 5, 4, 3, 2, 6 }, i64)
    local offsets = torch.tensor({ 1, 3, 3, 6 }, i64)
    for _, mode in ipairs({ 'sum', 'mean', 'max' }) do
      assert.is_true(torch.autograd.gradcheck(function(t)
        return F.embedding_bag(input, t, offsets, { mode = mode, padding_idx = 4 })
      end, { w }), mode)
    end
    local psw = torch.randn({ 8 }, d64):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(t, p)
      return F.embedding_bag(input, t, offsets, { mode = 'sum', per_sample_weights = p })
    end, { w, psw }))
    assert.is_true(torch.autograd.gradcheck(function(t) return F.embedding(torch.tensor({ { 1, 3 }, { 3, 6 } }, i64), t) end, { w }))
  end)

  it('errors as PyTorch words them, at the caller\'s line', function()
    local w = torch.randn(10, 3)
    local x = torch.tensor({ 1, 2, 3 }, i64)
    local cases = {
      { function() nn.Embedding(10, 3, 11) end, 'moontorch.nn.Embedding: Padding_idx must be within num_embeddings' },
      { function() nn.Embedding.from_pretrained(torch.ones(3)) end, 'Embeddings parameter is expected to be 2-dimensional' },
      { function() nn.Embedding(10, 3)(torch.tensor({ 11 }, i64)) end, 'index out of range in self' },
      { function() nn.Embedding(10, 3)(torch.tensor({ 1.0 })) end,
        "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.float32 instead" },
      { function() F.embedding_bag(x, w, torch.tensor({ 2, 3 }, i64)) end,
        'offsets[1] has to be 1, i.e., the first sequence in the mini-batch has to start from position 1. However, got 2' },
      { function() F.embedding_bag(x, w, torch.tensor({ 1, 6 }, i64)) end, "offsets[-1] can not be greater than input's length 3" },
      { function() F.embedding_bag(x, w, torch.tensor({ 1, 3 }, i64), { mode = 'foo' }) end, 'mode has to be one of sum, mean or max' },
      { function() F.embedding_bag(x:reshape(1, 3), w, torch.tensor({ 1 }, i64)) end,
        'if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length sequences' },
      { function() F.embedding_bag(x, w, nil, { per_sample_weights = torch.ones(3) }) end, 'offsets has to be a 1D Tensor but got None' },
      { function() F.embedding_bag(x, w, torch.tensor({ 1 }, i64), { per_sample_weights = torch.ones(3) }) end,
        "per_sample_weights is only supported for mode='sum' (got mode='mean')" },
      { function() F.embedding_bag(x, w, torch.tensor({ 1 }, i64), { mode = 'sum', per_sample_weights = torch.ones(2) }) end,
        'If per_sample_weights (torch.Size([2])) is not None, then it must have the same shape as the input (torch.Size([3]))' },
      { function() nn.EmbeddingBag(10, 3, { sparse = true }) end, 'sparse gradients are not supported' },
      { function() F.embedding_bag(x, w, torch.tensor({ 1 }, i64), { mode = 'max', scale_grad_by_freq = true }) end,
        'max mode does not support scaling the gradient by the frequency' },
      { function() nn.EmbeddingBag(10, 3, { _weight = torch.ones(3, 3) }) end, 'Shape of weight does not match num_embeddings and embedding_dim' },
    }
    for _, c in ipairs(cases) do
      local err = H.errors_with(c[1], c[2])
      assert.is_truthy(tostring(err):find('embedding_spec.lua:', 1, true), 'raised at the caller: ' .. tostring(err))
    end
  end)
end)
