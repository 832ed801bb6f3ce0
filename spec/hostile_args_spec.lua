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

-- An error found inside a composite names the op the user called, with the inner op's words (the
-- substance of PyTorch's message), at the user's line: (call, the op named, what was wrong). Before
-- this, each named an inner op (sub, mul, where, matmul, maximum, div, norm, the alias's target) or
-- a module's inner function. PyTorch 1.13 (/usr/bin/python3): F.l1_loss(randn(3, 4), randn(4, 5))
-- "The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1";
-- nn.Linear(4, 5)(randn(3, 3)) "mat1 and mat2 shapes cannot be multiplied (3x3 and 4x5)".
describe('errors name the op the user called', function()
  local nn, F = torch.nn, torch.nn.functional
  local a, b = torch.randn(3, 4), torch.randn(4, 5)
  local rows = {
    -- F losses composed of elementwise ops
    { function() local _ = F.l1_loss(a, b) end, 'nn.functional.l1_loss', 'the size of tensor a [3, 4] must match the size of tensor b [4, 5]' },
    { function() local _ = F.mse_loss(a, b) end, 'nn.functional.mse_loss', 'must match the size of tensor b' },
    { function() local _ = F.smooth_l1_loss(a, b) end, 'nn.functional.smooth_l1_loss', 'must match the size of tensor b' },
    { function() local _ = F.huber_loss(a, b) end, 'nn.functional.huber_loss', 'must match the size of tensor b' },
    { function() local _ = F.kl_div(a, b) end, 'nn.functional.kl_div', 'must match the size of tensor b' },
    { function() local _ = F.poisson_nll_loss(a, b) end, 'nn.functional.poisson_nll_loss', 'must match the size of tensor b' },
    { function() local _ = F.soft_margin_loss(a, b) end, 'nn.functional.soft_margin_loss', 'must match the size of tensor b' },
    { function() local _ = F.hinge_embedding_loss(a, b) end, 'nn.functional.hinge_embedding_loss', 'do not broadcast' },
    { function() local _ = F.margin_ranking_loss(a, a, b) end, 'nn.functional.margin_ranking_loss', 'must match the size of tensor b' },
    { function() local _ = F.triplet_margin_loss(a, a, b) end, 'nn.functional.triplet_margin_loss', 'must match the size of tensor b' },
    { function() local _ = F.binary_cross_entropy_with_logits(a, a, b) end, 'binary_cross_entropy_with_logits', 'must match the size of tensor b' },
    { function() local _ = F.pairwise_distance(a, b) end, 'nn.functional.pairwise_distance', 'must match the size of tensor b' },
    -- F activations and layers
    { function() local _ = F.linear(a, b) end, 'nn.functional.linear', 'mat1 and mat2 shapes cannot be multiplied (3x4 and 5x4)' },
    { function() local _ = F.logsigmoid(torch.tensor({ true })) end, 'nn.functional.logsigmoid', 'on a bool tensor is not supported' },
    { function() local _ = F.dropout(torch.ones(3, { dtype = torch.int64 })) end, 'nn.functional.dropout', "can't be cast to the desired output type Long" },
    { function() local _ = F.glu(a, 99) end, 'nn.functional.glu', 'dimension 99 out of range' },
    -- PyTorch 1.13: "running_mean should contain 4 elements not 12", "weight should contain 4 elements not 3"
    { function() local _ = F.batch_norm(a, a, torch.ones(4)) end, 'nn.functional.batch_norm', 'running_mean should contain 4 elements not 12' },
    { function() local _ = F.batch_norm(a, torch.zeros(4), torch.ones(4), torch.ones(3)) end, 'nn.functional.batch_norm', 'weight should contain 4 elements not 3' },
    -- modules: the innermost module whose forward was running
    { function() local _ = nn.Linear(4, 5)(torch.randn(3, 3)) end, 'nn.Linear', 'mat1 and mat2 shapes cannot be multiplied (3x3 and 4x5)' },
    { function() local _ = nn.Sequential(nn.ReLU(), nn.Linear(4, 5))(torch.randn(3, 3)) end, 'nn.Linear', 'mat1 and mat2 shapes cannot be multiplied' },
    { function() local _ = nn.L1Loss()(a, b) end, 'nn.L1Loss', 'must match the size of tensor b' },
    -- torch composites
    { function() local _ = torch.logaddexp(a, b) end, 'logaddexp', 'must match the size of tensor b' },
    { function() local _ = torch.addcmul(a, a, b) end, 'addcmul', 'must match the size of tensor b' },
    { function() local _ = torch.lerp(a, a, b) end, 'lerp', 'must match the size of tensor b' },
    { function() local _ = torch.clamp(a, b) end, 'clamp', 'must match the size of tensor b' },
    { function() local _ = torch.dist(a, b) end, 'dist', 'must match the size of tensor b' },
    { function() local _ = torch.heaviside(a, b) end, 'heaviside', 'do not broadcast' },
    { function() local _ = torch.vdot(a, b) end, 'vdot', '1D tensors expected' },
    { function() local _ = torch.inverse(a) end, 'inverse', '' },
    { function() local _ = torch.linalg.inv(a) end, 'linalg.inv', '' },
    { function() local _ = torch.trapz(a, b) end, 'trapz', 'must match the size of tensor b' },
    -- linalg's own name when a torch function shares it (PyTorch 1.13: "linalg.cross: inputs dimension
    -- -1 must have length 3. Got 4 and 5"); tail-called inner functions found by their namespace
    { function() local _ = torch.linalg.cross(a, b) end, 'linalg.cross', 'inputs dimension -1 must have length 3. Got 4 and 5' },
    { function() local _ = torch.cross(a, b, 1) end, 'cross', 'inputs dimension 1 must have length 3. Got 3 and 4' },
    { function() local _ = torch.linalg.norm(torch.randn(3), 'fro') end, 'linalg.norm', 'The input tensor A must have at least 2 dimensions.' },
    { function() local _ = torch.broadcast_tensors(a, b) end, 'broadcast_tensors', 'Mismatch is between arg 1 and arg 2: size 3 and size 4 at dimension -2' },
    { function() local _ = torch.take(a, b) end, 'take', 'expected dtype int64 for index' },
    -- aliases name themselves
    { function() local _ = torch.absolute(nil) end, 'absolute', 'expected a tensor, got nil' },
    { function() local _ = torch.arccos(nil) end, 'arccos', 'expected a tensor, got nil' },
    { function() local _ = torch.subtract(a, b) end, 'subtract', 'must match the size of tensor b' },
    { function() local _ = torch.greater(a, b) end, 'greater', 'must match the size of tensor b' },
    { function() local _ = torch.special.psi(nil) end, 'psi', 'expected a tensor, got nil' },
    -- Tensor methods
    { function() local _ = a:new_full({ math.huge }, 1) end, 'new_full', 'size at position 1 must be an integer' },
    { function() local _ = a:logaddexp(b) end, 'logaddexp', 'must match the size of tensor b' },
    { function() local _ = a:clamp_min(b) end, 'clamp_min', 'must match the size of tensor b' },
  }
  it('every row: moontorch.<the op called>: <what was wrong>, at the caller\'s line', function()
    for i, row in ipairs(rows) do
      local ok, err = pcall(row[1])
      assert(not ok, 'row ' .. i .. ': no error')
      local line = debug.getinfo(row[1], 'S').linedefined
      local want = ('hostile_args_spec.lua:%d: moontorch.%s: '):format(line, row[2])
      if not err:find(want, 1, true) or not err:find(row[3], 1, true) then
        error(('row %d: expected "%s...%s", got: %s'):format(i, want, row[3], err))
      end
    end
  end)
  it('called through pcall or a local, the op is found by the function itself', function()
    local ok, err = pcall(F.l1_loss, a, b)
    assert.is_false(ok)
    assert.truthy(err:find('moontorch.nn.functional.l1_loss: the size of tensor a', 1, true))
    local l1 = F.l1_loss
    err = H.errors_with(function() local _ = l1(a, b) end, 'moontorch.nn.functional.l1_loss: the size of tensor a')
    -- an inner op's own name stays when the function called is that op (an alias called by pcall)
    ok, err = pcall(torch.abs, nil)
    assert.truthy(err:find('moontorch.abs: expected a tensor, got nil', 1, true))
    -- and a module called inside a user's forward: the user's forward is the user's line
    local Net, Parent = torch.class('spec.HostileNet', 'nn.Module')
    function Net:__init() Parent.__init(self); self.fc = nn.Linear(4, 5) end
    function Net:forward(x) return F.relu(self.fc(x)) end
    err = H.errors_with(function() local _ = Net()(torch.randn(2, 3)) end, 'moontorch.nn.Linear: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)')
    assert.truthy(err:find('hostile_args_spec.lua:%d+: moontorch.nn.Linear'))
  end)
end)

-- The same calls with something other than a tensor where a tensor goes: the op's error, not a Lua
-- error inside moontorch ("attempt to index local 't' (a nil value)", "cannot convert 'string' to
-- 'struct mt_tensor *'"). PyTorch 1.13: torch.view(None) "view() ... must be Tensor, not NoneType".
describe('a value that is not a tensor where a tensor goes', function()
  local x = torch.randn(3, 4)
  local rows = {
    { function() local _ = torch.view('str', 12) end, 'view', 'expected a tensor for input, got string' },
    { function() local _ = torch.reshape('str', 12) end, 'reshape', 'expected a tensor for input' },
    { function() local _ = torch.permute('str', 1) end, 'permute', 'expected a tensor for input' },
    { function() local _ = torch.t(nil) end, 't', 'expected a tensor for input, got nil' },
    { function() local _ = torch.movedim(nil, 1, 2) end, 'movedim', 'expected a tensor for input, got nil' },
    { function() local _ = torch.moveaxis(nil, 1, 2) end, 'moveaxis', 'expected a tensor for input, got nil' },
    { function() local _ = x:view_as(3) end, 'view_as', 'expected a tensor for other, got 3' },
    { function() local _ = x:expand_as(nil) end, 'expand_as', 'expected a tensor for other, got nil' },
    { function() local _ = x:type_as(3) end, 'type_as', 'expected a tensor for other, got 3' },
    { function() local _ = torch.atleast_2d(nil) end, 'atleast_2d', 'expected a tensor or an array of tensors, got nil' },
    { function() local _ = torch.broadcast_tensors('str') end, 'broadcast_tensors', 'expected a tensor for tensor 1, got string' },
    { function() local _ = torch.meshgrid('str') end, 'meshgrid', 'expected a tensor for tensor 1, got string' },
    { function() local _ = torch.cartesian_prod('str') end, 'cartesian_prod', 'expected a tensor for tensor 1, got string' },
    { function() local _ = torch.arange(nil) end, 'arange', 'start, end and step must be numbers, got 0, nil and 1' },
    { function() local _ = torch.hann_window(nil) end, 'hann_window', 'window_length must be a non-negative integer, got nil' },
    { function() local _ = torch.clone(nil) end, 'clone', 'expected a tensor for input, got nil' },
    { function() local _ = torch.empty_strided(3, 1) end, 'empty_strided', 'expected tables of integers for size and stride' },
    { function() local _ = torch.addcmul(x, x, 2) end, 'addcmul', 'expected tensors for input, tensor1 and tensor2' },
    { function() local _ = x:addcdiv_(x, 2) end, 'addcdiv_', 'expected tensors for input, tensor1 and tensor2' },
    { function() local _ = torch.lerp('str', x, 0.5) end, 'lerp', 'expected tensors for input and end' },
    { function() local _ = torch.nan_to_num(nil) end, 'nan_to_num', 'expected a tensor for input, got nil' },
    { function() local _ = torch.where(nil) end, 'where', 'condition must be a tensor, got nil' },
    { function() local _ = torch.rsub(nil, 1) end, 'rsub', 'expected a tensor for input, got nil' },
    { function() local _ = torch.sgn(nil) end, 'sgn', 'expected a tensor for input, got nil' },
    { function() local _ = torch.sum_to_size(nil, 1) end, 'sum_to_size', 'expected a tensor for input, got nil' },
    { function() local _ = torch.is_same_size(x, 3) end, 'is_same_size', 'expected two tensors' },
    { function() local _ = torch.is_nonzero(nil) end, 'is_nonzero', 'expected a tensor, got nil' },
    { function() local _ = torch.can_cast(x, x) end, 'can_cast', 'expected two dtypes (from, to)' },
    { function() local _ = torch.is_floating_point(nil) end, 'is_floating_point', 'expected a tensor, got nil' },
    { function() local _ = torch.numel('str') end, 'numel', 'expected a tensor, got' },
    { function() local _ = torch.dist(nil, x) end, 'dist', 'expected a tensor for input, got nil' },
    { function() local _ = torch.linalg.norm(nil) end, 'linalg.norm', 'expected a tensor for input, got nil' },
    { function() local _ = torch.linalg.vecdot(x, 'str') end, 'linalg.vecdot', 'expected a tensor for y, got string' },
    { function() local _ = torch.nn.functional.rrelu(nil) end, 'rrelu', 'expected a tensor for input, got nil' },
    { function() local _ = torch.nn.functional.affine_grid(torch.randn(1, 2, 3), 5) end, 'affine_grid', 'expected the size of the output' },
    { function() local _ = x:to('str') end, 'to', 'expected one of cpu, cuda, meta device type' },
    { function() local _ = torch.device(3) end, 'device', 'expected a string such as "cpu" or "cuda:0", got number' },
    { function() local _ = torch.class(3) end, 'class', 'class name must be a string, got number' },
    -- a module's input (PyTorch: "argument 'input' (position 1) must be Tensor, not str")
    { function() local _ = torch.nn.Sigmoid()('str') end, 'nn.Sigmoid', "expected a tensor for input, got 'str'" },
    { function() local _ = torch.nn.BatchNorm1d(4)('str') end, 'nn.BatchNorm1d', "expected a tensor for input, got 'str'" },
    { function() local _ = torch.nn.InstanceNorm2d(4)('str') end, 'nn.InstanceNorm2d', "expected a tensor for input, got 'str'" },
    { function() local _ = torch.nn.Flatten()('str') end, 'nn.Flatten', "expected a tensor for input, got 'str'" },
    { function() local _ = torch.nn.Softmax2d()('str') end, 'nn.Softmax2d', "expected a tensor for input, got 'str'" },
    -- a tensor where a number goes is shown by its size, never its elements
    { function() local _ = x:cummax(x) end, 'cummax', 'expected an integer dim, got a tensor of size [3, 4]' },
    { function() local _ = x:sum(x) end, 'sum', 'dim must be a number or a table of numbers, got a tensor' },
    { function() local _ = x:norm(x) end, 'norm', 'p must be a number, math.huge, -math.huge, "fro" or "nuc", got a tensor' },
    { function() local _ = x:diff(x) end, 'diff', 'expected an integer n, got tensor' },
    { function() local _ = torch.unique(x, x) end, 'unique', 'expected an options table, got tensor' },
    { function() local _ = x:roll(x) end, 'roll', 'shifts must be a number or an array of numbers, got tensor' },
    { function() local _ = torch.iinfo(x) end, 'iinfo', 'dtype must be an integer type, got a tensor of size [3, 4]' },
  }
  it('every row: moontorch.<op>: <what was wrong>, at the caller\'s line', function()
    for i, row in ipairs(rows) do
      local ok, err = pcall(row[1])
      assert(not ok, 'row ' .. i .. ': no error')
      local line = debug.getinfo(row[1], 'S').linedefined
      local want = ('hostile_args_spec.lua:%d: moontorch.%s: '):format(line, row[2])
      if not err:find(want, 1, true) or not err:find(row[3], 1, true) then
        error(('row %d: expected "%s...%s", got: %s'):format(i, want, row[3], err))
      end
    end
    -- and the calls still work
    assert.are.same({ 4, 3 }, H.shape(torch.t(x)))
    assert.are.same({ 12 }, H.shape(torch.clone(x):view(12)))
    assert.are.equal(8, torch.hann_window(8):numel())
    assert.are.same({ 0, 1, 2 }, torch.arange(3):tolist())
    H.near(torch.lerp(torch.zeros(2), torch.ones(2), 0.25), { 0.25, 0.25 })
  end)
end)
