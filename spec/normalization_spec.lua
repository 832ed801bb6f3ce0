-- Normalisation modules and the other modules with parameters or shapes (lua/nn/normalization.lua,
-- lua/nn/misc.lua): LayerNorm, GroupNorm, InstanceNorm1d/2d/3d, LocalResponseNorm, Bilinear,
-- CosineSimilarity, PairwiseDistance, Flatten, Unflatten. Each case loads the state_dict PyTorch
-- 1.13 recorded (same keys) and compares outputs, input and parameter gradients and the buffers
-- after the call (spec/support/nn_modules_record.py writes spec/support/nn_modules_wants.lua).
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local F = nn.functional
local W = dofile('spec/support/nn_modules_wants.lua')

local d64 = { dtype = torch.float64 }
local function t64(v) return torch.tensor(v, d64) end

local function state(sd)
  local out = torch.OrderedDict()
  local keys = {}
  for k in pairs(sd) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do
    out[k] = k == 'num_batches_tracked' and torch.tensor(sd[k], { dtype = torch.int64 }) or t64(sd[k])
  end
  return out
end

local made = {
  LayerNorm = function() return nn.LayerNorm({ 3, 4 }, d64) end,
  LayerNorm_noaffine = function() return nn.LayerNorm(4, 1e-3, false, d64) end,
  GroupNorm = function() return nn.GroupNorm(2, 4, d64) end,
  InstanceNorm1d_train = function() return nn.InstanceNorm1d(3, { affine = true, track_running_stats = true, momentum = 0.2, dtype = torch.float64 }) end,
  InstanceNorm1d_eval = function()
    return nn.InstanceNorm1d(3, { affine = true, track_running_stats = true, momentum = 0.2, dtype = torch.float64 }):eval()
  end,
  InstanceNorm2d = function() return nn.InstanceNorm2d(2) end,
  InstanceNorm2d_unbatched = function() return nn.InstanceNorm2d(2) end,
  InstanceNorm3d = function() return nn.InstanceNorm3d(2, { affine = true, dtype = torch.float64 }) end,
  LocalResponseNorm3d = function() return nn.LocalResponseNorm(3, 0.5, 0.8, 1.5) end,
  LocalResponseNorm4d = function() return nn.LocalResponseNorm(2) end,
  Bilinear = function() return nn.Bilinear(3, 2, 4, d64) end,
  Bilinear_nobias = function() return nn.Bilinear(2, 2, 3, false, d64) end,
  CosineSimilarity = function() return nn.CosineSimilarity(1, 1e-6) end,
  PairwiseDistance = function() return nn.PairwiseDistance({ p = 3, keepdim = true }) end,
  Flatten = function() return nn.Flatten(1, 2) end,
  Unflatten = function() return nn.Unflatten(2, { 2, 2 }) end,
}

describe('normalisation and shape modules against PyTorch 1.13 (recorded state_dicts)', function()
  for name, make in pairs(made) do
    it(name, function()
      local w = W['mod_' .. name]
      assert.is_not_nil(w, name)
      local m = make()
      local res = m:load_state_dict(state(w.state))
      assert.are.same({}, res.missing_keys)
      local ins = {}
      for i, v in ipairs(w.inputs) do ins[i] = t64(v):requires_grad_() end
      local out = m(unpack(ins))
      H.near(out, w.out, 1e-9, 1e-9)
      local s = (out * t64(w.g)):sum()
      s:backward()
      for i, v in ipairs(w.dinputs) do H.near(ins[i].grad, v, 1e-9, 1e-9) end
      for k, v in pairs(w.grads) do H.near(m[k].grad, v, 1e-9, 1e-9) end
      local after = m:state_dict()
      for k, v in pairs(w.after) do H.near(after[k], v, 1e-9, 1e-9) end
    end)
  end
end)

describe('normalisation modules: construction, printing, meta, errors, gradchecks', function()
  it('PyTorch\'s printing and state_dict keys', function()
    local cases = {
      { nn.LayerNorm(10), 'LayerNorm((10,), eps=1e-05, elementwise_affine=True)' },
      { nn.LayerNorm({ 3, 4 }, { elementwise_affine = false }), 'LayerNorm((3, 4), eps=1e-05, elementwise_affine=False)' },
      { nn.GroupNorm(2, 4), 'GroupNorm(2, 4, eps=1e-05, affine=True)' },
      { nn.InstanceNorm1d(3), 'InstanceNorm1d(3, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)' },
      { nn.InstanceNorm2d(3, { affine = true, track_running_stats = true }),
        'InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)' },
      { nn.LocalResponseNorm(2), 'LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)' },
      { nn.Bilinear(2, 3, 4), 'Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True)' },
      { nn.Bilinear(2, 3, 4, false), 'Bilinear(in1_features=2, in2_features=3, out_features=4, bias=False)' },
      { nn.Flatten(), 'Flatten(start_dim=2, end_dim=-1)' },
      { nn.Unflatten(2, { 2, 3 }), 'Unflatten(dim=2, unflattened_size=(2, 3))' },
      { nn.CosineSimilarity(), 'CosineSimilarity()' }, { nn.PairwiseDistance(), 'PairwiseDistance()' },
    }
    for _, c in ipairs(cases) do assert.are.equal(c[2], tostring(c[1])) end
    assert.are.same({ 'weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked' },
      nn.InstanceNorm1d(3, { affine = true, track_running_stats = true }):state_dict():keys())
    assert.are.same({}, nn.InstanceNorm1d(3):state_dict():keys())
    assert.are.same({ 'weight', 'bias' }, nn.LayerNorm(3):state_dict():keys())
    assert.are.same({ 'weight', 'bias' }, nn.Bilinear(1, 2, 3):state_dict():keys())
  end)

  it('Bilinear draws PyTorch\'s init: U(-1/sqrt(in1), 1/sqrt(in1)), weight then bias', function()
    -- PyTorch 1.13: torch.manual_seed(0); m = nn.Bilinear(2, 3, 2); print(m.weight[0, 0], m.bias)
    torch.manual_seed(0)
    local m = nn.Bilinear(2, 3, 2)
    H.near(m.weight[1][1], { -0.0053, 0.3793, -0.5820 }, 1e-4)
    H.near(m.bias, { -0.6755, -0.4683 }, 1e-4)
  end)

  it('run on the meta device and go to memory with to_empty', function()
    local meta = { device = 'meta' }
    local x = torch.empty({ 2, 4, 6 }, meta)
    for _, m in ipairs({ nn.LayerNorm(6, meta), nn.GroupNorm(2, 4, meta), nn.InstanceNorm1d(4, { affine = true, device = 'meta' }),
      nn.LocalResponseNorm(3) }) do
      for _, p in ipairs(m:parameters()) do assert.is_true(p.is_meta) end
      local y = m(x)
      assert.is_true(y.is_meta, tostring(m))
      assert.are.same({ 2, 4, 6 }, y:size(), tostring(m))
    end
    local b = nn.Bilinear(3, 2, 5, meta)
    local y = b(torch.empty({ 4, 3 }, meta), torch.empty({ 4, 2 }, meta))
    assert.are.same({ 4, 5 }, y:size())
    b:to_empty({ device = 'cpu' })
    assert.is_false(b.weight.is_meta)
    assert.are.same({ 4, 6 }, nn.Flatten()(torch.empty({ 4, 2, 3 }, meta)):size())
  end)

  it('errors name the module and are raised at the caller\'s line', function()
    local cases = {
      { function() nn.GroupNorm(3, 4) end, 'moontorch.nn.GroupNorm: num_channels must be divisible by num_groups' },
      { function() nn.InstanceNorm1d(3)(torch.ones(2, 3, 4, 5)) end, 'moontorch.InstanceNorm1d: expected 2D or 3D input (got 4D input)' },
      { function() nn.InstanceNorm1d(3, { affine = true })(torch.ones(2, 4, 5)) end,
        "expected input's size at dim=2 to match num_features (3), but got: 4." },
      { function() nn.InstanceNorm1d(3)(torch.ones(2, 3, 1)) end,
        'Expected more than 1 spatial element when training, got input size torch.Size([2, 3, 1])' },
      { function() nn.LayerNorm(3)(torch.ones(2, 4)) end,
        'Given normalized_shape=[3], expected input with shape [*, 3], but got input of size[2, 4]' },
      { function() nn.LocalResponseNorm(2)(torch.ones(2, 3)) end, 'Expected 3D or higher dimensionality input (got 2 dimensions)' },
      { function() nn.Bilinear(2, 3, 4)(torch.ones(5, 2), torch.ones(5, 2)) end,
        'input2 size does not match weight size: got 2 but expected 3' },
      { function() nn.Unflatten(2, { 2, 2.5 }) end, 'unflattened_size must be tuple of ints, but found element of type number at pos 2' },
      { function() nn.LayerNorm({ 3 }, { eps = 'x' }) end, 'moontorch.nn.LayerNorm: eps must be a number (got string)' },
    }
    for _, c in ipairs(cases) do
      local err = H.errors_with(c[1], c[2])
      assert.is_truthy(tostring(err):find('normalization_spec.lua:', 1, true), 'raised at the caller: ' .. tostring(err))
    end
  end)

  it('gradchecks in float64', function()
    torch.manual_seed(7)
    local x = torch.randn({ 2, 4, 5 }, d64):requires_grad_()
    local w, b = torch.randn({ 4 }, d64):requires_grad_(), torch.randn({ 4 }, d64):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(t, ww, bb) return F.instance_norm(t, nil, nil, ww, bb) end, { x, w, b }))
    assert.is_true(torch.autograd.gradcheck(function(t) return F.local_response_norm(t, 3, 0.1, 0.6, 2) end, { x }))
    assert.is_true(torch.autograd.gradcheck(function(t, ww, bb) return F.group_norm(t, 2, ww, bb) end, { x, w, b }))
    local lw, lb = torch.randn({ 4, 5 }, d64):requires_grad_(), torch.randn({ 4, 5 }, d64):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(t, ww, bb) return F.layer_norm(t, { 4, 5 }, ww, bb) end, { x, lw, lb }))
    local x1, x2 = torch.randn({ 3, 2 }, d64):requires_grad_(), torch.randn({ 3, 4 }, d64):requires_grad_()
    local bw = torch.randn({ 5, 2, 4 }, d64):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(a, c, ww) return F.bilinear(a, c, ww) end, { x1, x2, bw }))
  end)
end)

describe('the fused layer norm (torch.layer_norm, core/ops/norm.c)', function()
  it('is what F.layer_norm runs for float32 and float64, and agrees with the composite', function()
    torch.manual_seed(9)
    local x = torch.randn({ 4, 5, 6 }):requires_grad_()
    local w, b = torch.randn({ 6 }):requires_grad_(), torch.randn({ 6 }):requires_grad_()
    local y = F.layer_norm(x, { 6 }, w, b)
    assert.are.equal('NativeLayerNormBackward0', y.grad_fn:name())
    local g = torch.randn({ 4, 5, 6 })
    local s = (y * g):sum()
    s:backward()
    -- the composite of PyTorch's formula in float64
    local x2, w2, b2 = x:detach():double():requires_grad_(), w:detach():double():requires_grad_(),
      b:detach():double():requires_grad_()
    local mean = x2:mean(3, { keepdim = true })
    local var = x2:var(3, { correction = 0, keepdim = true })
    local y2 = (x2 - mean) * (var + 1e-5):rsqrt() * w2 + b2
    local s2 = (y2 * g:double()):sum()
    s2:backward()
    H.near(y, y2, 1e-5, 1e-5)
    H.near(x.grad, x2.grad, 1e-4, 1e-4)
    H.near(w.grad, w2.grad, 1e-4, 1e-4)
    H.near(b.grad, b2.grad, 1e-4, 1e-4)
    -- a transposed (non-contiguous) input, and float16 through the composite
    local xt = torch.randn({ 6, 4 }):t()
    H.near(F.layer_norm(xt, { 6 }), F.layer_norm(xt:contiguous(), { 6 }), 1e-6)
    local h = F.layer_norm(torch.randn(2, 4):half(), { 4 })
    assert.are.equal(torch.float16, h.dtype)
  end)

  it('runs on the meta device, with gradients', function()
    local x = torch.empty({ 3, 4 }, { device = 'meta', requires_grad = true })
    local w = torch.empty({ 4 }, { device = 'meta', requires_grad = true })
    local y = torch.layer_norm(x, { 4 }, w)
    assert.is_true(y.is_meta)
    assert.are.same({ 3, 4 }, y:size())
  end)

  it('errors', function()
    local cases = {
      { function() torch.layer_norm(torch.ones(2, 3), { 3 }, torch.ones(4)) end,
        'moontorch.layer_norm: Expected weight to be of same shape as normalized_shape, but got weight of shape [4] and normalized_shape = [3]' },
      { function() torch.layer_norm(torch.ones(2, 3, { dtype = torch.int64 }), { 3 }) end,
        'moontorch.layer_norm: expected a float32 or float64 input, got int64' },
      { function() torch.layer_norm(torch.ones(2, 3), { 3 }, torch.ones(3, { dtype = torch.float64 })) end,
        'moontorch.layer_norm: expected weight of the input\'s dtype float32, got float64' },
    }
    for _, c in ipairs(cases) do
      local err = H.errors_with(c[1], c[2])
      assert.is_truthy(tostring(err):find('normalization_spec.lua:', 1, true), 'raised at the caller: ' .. tostring(err))
    end
  end)

  it('leaves no tensors or nodes behind', function()
    local tensor = require 'moontorch.tensor'
    collectgarbage()
    tensor.sweep()
    local before, nodes = torch._C.mt_get_stats().live_tensors, torch._C.mt_live_nodes()
    do
      local x = torch.randn({ 8, 16 }):requires_grad_()
      local w = torch.ones({ 16 }):requires_grad_()
      local y = F.layer_norm(x, { 16 }, w, w * 0)
      y:sum():backward()
      local g = torch.autograd.grad({ F.layer_norm(x, { 16 }, w):square():sum() }, { x }, { create_graph = true })[1]
      g:sum():backward()
    end
    collectgarbage()
    tensor.sweep()
    assert.are.equal(before, torch._C.mt_get_stats().live_tensors)
    assert.are.equal(nodes, torch._C.mt_live_nodes())
  end)
end)
