-- Hostile arguments found by a sweep of the public API (every torch function, Tensor method,
-- nn.functional, linalg, special, fft called with nil, wrong types, huge and negative sizes, NaN,
-- 0-size tensors, views): each must be a Lua error naming the op, quickly; these hung (a loop
-- over a huge size before anything was allocated) or failed on index tables of empty results.
-- PyTorch 1.13 (/usr/bin/python3) gives the same shapes for the empty results of flip, roll and the
-- pools (its repeat_interleave tries to allocate one there).
local H = require 'spec.support.helper'
local torch = H.torch
local F = torch.nn.functional

describe('hostile arguments', function()
  it('adaptive pools to a huge output size: an allocation error, not a loop over 10^12 outputs', function()
    H.errors_with(function() F.adaptive_avg_pool1d(torch.randn(3, 4), 1e12) end, 'out of memory')
    H.errors_with(function() torch.adaptive_avg_pool1d(torch.randn(3, 4), 1e12) end, 'adaptive_avg_pool')
    H.errors_with(function() F.adaptive_avg_pool3d(torch.randn(1, 2, 1, 2, 1), 1e12) end, 'adaptive_avg_pool3d')
    -- an empty batch to a huge size: an empty result (PyTorch: torch.Size([0, 3, 1000000000000]))
    assert.are.same({ 0, 3, 1e12 }, H.shape(F.adaptive_avg_pool1d(torch.empty(0, 3, 4), 1e12)))
    -- and the usual sizes still pool
    H.near(F.adaptive_avg_pool1d(torch.tensor({ { 1, 2, 3, 4 } }), 2), { { 1.5, 3.5 } })
  end)
  it('matrix_power: a non-integer, infinite or NaN exponent is an error (it looped forever on inf)', function()
    for _, n in ipairs({ math.huge, -math.huge, 0 / 0, 0.5 }) do
      H.errors_with(function() torch.matrix_power(torch.eye(2), n) end, 'matrix_power: expected an integer exponent n')
      H.errors_with(function() torch.linalg.matrix_power(torch.eye(2), n) end, 'matrix_power')
      H.errors_with(function() torch.eye(2):matrix_power(n) end, 'matrix_power')
    end
    H.near(torch.matrix_power(torch.tensor({ { 1, 1 }, { 0, 1 } }), 5), { { 1, 5 }, { 0, 1 } })
  end)
  it('vander: N checked as PyTorch; a huge N allocates once (and fails at once), an empty x gives an empty result', function()
    -- torch.vander(tensor([2, 3]), 4) -> [[8, 4, 2, 1], [27, 9, 3, 1]]; increasing=True, N=3 on [2., 3.]
    assert.are.same({ { 8, 4, 2, 1 }, { 27, 9, 3, 1 } }, torch.vander(torch.tensor({ 2, 3 }, { dtype = torch.int64 }), 4):tolist())
    assert.are.same({ { 1, 2, 4 }, { 1, 3, 9 } }, torch.vander(torch.tensor({ 2, 3 }), 3, { increasing = true }):tolist())
    -- uint8 [200, 3], N=3 -> int64 [[40000, 200, 1], [9, 3, 1]]; bool [True, False] -> [[1, 1, 1], [0, 0, 1]]
    local u = torch.vander(torch.tensor({ 200, 3 }, { dtype = torch.uint8 }), 3)
    assert.are.same({ { 40000, 200, 1 }, { 9, 3, 1 } }, u:tolist())
    assert.are.equal(torch.int64, u.dtype)
    assert.are.same({ { 1, 1, 1 }, { 0, 0, 1 } }, torch.vander(torch.tensor({ true, false }), 3):tolist())
    assert.are.same({ 2, 0 }, H.shape(torch.vander(torch.tensor({ 1, 2 }), 0)))
    assert.are.same({ 0, 1e12 }, H.shape(torch.vander(torch.empty(0), 1e12)))
    H.errors_with(function() torch.vander(torch.tensor({ 1, 2 }), 1e12) end, 'out of memory')
    for _, n in ipairs({ 0.5, math.huge, 0 / 0 }) do
      H.errors_with(function() torch.vander(torch.tensor({ 1, 2 }), n) end, "vander: argument 'N' must be an integer")
    end
    H.errors_with(function() torch.vander(torch.tensor({ 1, 2 }), -1) end, 'vander: N must be non-negative.')
    -- the gradient: d/dx sum(x^2 + x + 1) = 2x + 1
    local x = torch.tensor({ 1.5, 2 }, { requires_grad = true })
    torch.vander(x, 3):sum():backward()
    H.near(x.grad, { 4, 5 })
  end)
  it('flip, roll and repeat_interleave of an empty tensor with a huge dim: an empty result, no index tables', function()
    local e = torch.empty(0, 1e12)
    assert.are.same({ 0, 1e12 }, H.shape(e:flip(2)))
    assert.are.same({ 0, 1e12 }, H.shape(e:roll(1, 2)))
    assert.are.same({ 0, 2e12 }, H.shape(e:repeat_interleave(2, 2)))
    assert.are.same({ { 3, 2, 1 } }, torch.tensor({ { 1, 2, 3 } }):flip(2):tolist())
  end)
end)

describe('an options table where one goes', function()
  it('anything else there is the op\'s error (it was an index into a number deeper in)', function()
    local F = torch.nn.functional
    local x = torch.randn(3, 4)
    local calls = {
      { 'log_softmax', function() return F.log_softmax(x, nil, -1) end },
      { 'softmax', function() return F.softmax(x, 2, -1) end },
      { 'backward', function() return x:backward(nil, -1) end },
      { 'bernoulli', function() return x:bernoulli(nil, -1) end },
      { 'exponential_', function() return x:exponential_(nil, -1) end },
      { 'cat', function() return torch.cat({ x }, nil, -1) end },
      { 'stack', function() return torch.stack({ x }, 1, -1) end },
      { 'hann_window', function() return torch.hann_window(4, nil, -1) end },
      { 'eye', function() return torch.eye(3, nil, -1) end },
      { 'zeros_like', function() return torch.zeros_like(x, true) end },
      { 'rand_like', function() return torch.rand_like(x, true) end },
      { 'randn_like', function() return torch.randn_like(x, 5) end },
    }
    for _, c in ipairs(calls) do
      H.errors_with(c[2], 'moontorch.' .. c[1] .. ': expected an options table {...} as the last argument, got ')
    end
    H.errors_with(function() torch.full_like(x, 'str') end, 'moontorch.full_like: fill value must be a number, got string')
    -- and the tables still work
    assert.are.same({ 3, 4 }, H.shape(torch.zeros_like(x, { dtype = torch.float64 })))
    assert.are.same({ 6, 4 }, H.shape(torch.cat({ x, x }, { dim = 1 })))
  end)
end)

describe('numbers where numbers go', function()
  it('a boolean, nil or string for an integer argument is the op\'s error', function()
    local F = torch.nn.functional
    local x = torch.randn(3, 4)
    local calls = {
      { 'nn.functional.glu: expected an integer dim, got true', function() return F.glu(x, true) end },
      { 'diag_embed: expected an integer offset, got boolean', function() return torch.diag_embed(x, true) end },
      { 'diagflat: expected an integer offset, got boolean', function() return torch.diagflat(x, true) end },
      { 'diff: expected an integer n, got boolean', function() return torch.diff(x, true) end },
      { 'histc: expected an integer bins, got boolean', function() return torch.histc(x, true) end },
      { 'histc: expected numbers for min and max, got nil and string', function() return torch.histc(x, 10, nil, 'a') end },
      { 'rot90: expected an integer k, got boolean', function() return torch.rot90(x, true) end },
      { 'quantile: quantile() q must be a number or a tensor, got nil', function() return torch.quantile(x) end },
      { 'nanquantile: quantile() q must be a number or a tensor, got nil', function() return x:nanquantile() end },
      { 'select_scatter: expected a tensor for src, got nil', function() return torch.select_scatter(x, nil, -1) end },
      { 'select_scatter: expected an integer index, got nil', function() return torch.select_scatter(x, x[1], 1) end },
      { 'slice_scatter: expected a tensor for src, got nil', function() return torch.slice_scatter(x) end },
      { 'trapezoid: expected x to be a tensor, a number (dx) or options, got boolean', function() return torch.trapezoid(x, true) end },
      { 'nn.RNNBase: expected the name of the layer', function() return torch.nn.RNNBase(x) end },
      { 'nn.RNNCellBase: expected the name of the cell', function() return torch.nn.RNNCellBase(x) end },
    }
    for _, c in ipairs(calls) do H.errors_with(c[2], 'moontorch.' .. c[1]) end
    -- the usual calls still work
    assert.are.same({ 2, 1 }, torch.histc(torch.tensor({ 1, 2, 1 }), 2):tolist())
    assert.are.same({ 2 }, torch.diff(torch.tensor({ 1, 4, 9 }), 2):tolist())
    assert.are.same({ { 4, 3 }, { 2, 1 } }, torch.rot90(torch.tensor({ { 1, 2 }, { 3, 4 } }), 2):tolist())
  end)
end)

describe('more argument checks the sweep asked for', function()
  it('parameters of the unary ops, tril/triu_indices sizes, and the options of vander, isin, combinations, cov', function()
    local x = torch.randn(3, 4)
    H.errors_with(function() torch.elu(x, 'str') end, 'moontorch.elu: expected numbers for its parameters, got string')
    H.errors_with(function() torch.hardtanh(x, 'str') end, 'moontorch.hardtanh: expected numbers for its parameters')
    H.errors_with(function() torch.leaky_relu(x, 'str') end, 'moontorch.leaky_relu: expected numbers for its parameters')
    H.errors_with(function() torch.tril_indices(x) end, 'moontorch.tril_indices: expected an integer row')
    H.errors_with(function() torch.triu_indices(3, 'a') end, 'moontorch.triu_indices: expected an integer col')
    H.errors_with(function() torch.vander(x:flatten(), nil, -1) end, 'moontorch.vander: expected an options table')
    H.errors_with(function() torch.isin(x, x, -1) end, 'moontorch.isin: expected an options table')
    H.errors_with(function() torch.combinations(x:flatten(), nil, -1) end, 'moontorch.combinations: expected an options table')
    H.errors_with(function() torch.cov(x, true) end, 'moontorch.cov: expected an options table')
    H.errors_with(function() x:cauchy_(nil, 's') end, 'moontorch.cauchy_: sigma must be a number, got string')
    H.errors_with(function() x:log_normal_('str') end, 'moontorch.log_normal_: mean must be a number, got string')
    local F = torch.nn.functional
    H.errors_with(function() F.batch_norm(x, -1, -1) end, 'moontorch.nn.functional.batch_norm: running_mean must be a tensor or nil, got number')
    H.errors_with(function() F.group_norm(x, 2, -1) end, 'moontorch.nn.functional.group_norm: weight must be a tensor or nil, got number')
    H.errors_with(function() torch.broadcast_shapes(x, nil) end, 'moontorch.broadcast_shapes: expected shapes (tables, numbers or tensors), got nil at 2')
    -- PyTorch: "expected scalar type Long but found Float"
    H.errors_with(function() F.multilabel_margin_loss(torch.randn(2, 3), torch.zeros(2, 3)) end,
      "multilabel_margin_loss: expected an integer tensor of classes for argument #2 'target', got torch.float32")
    assert.are.same({ { 1, 2, 2, 3, 3, 3 }, { 1, 1, 2, 1, 2, 3 } }, torch.tril_indices(3, 3):tolist())
    assert.are.same({ 3, 2 }, H.shape(torch.combinations(torch.tensor({ 1, 2, 3 }))))
  end)
end)
