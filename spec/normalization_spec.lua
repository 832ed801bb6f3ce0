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

describe('F.instance_norm as PyTorch 1.13 composes it', function()
  it('is a batch norm of n*c channels viewed back: values, running statistics, ViewBackward0', function()
    -- torch.manual_seed(0); x = torch.randn(2, 3, 4, 5, dtype=torch.float64); rm = torch.randn(3, ...);
    -- rv = torch.rand(3, ...) + 0.5; w, b = torch.randn(3, ...), torch.randn(3, ...)
    -- F.instance_norm(x, rm, rv, w, b, use_input_stats=True, momentum=0.2): y[:8], y.sum(), rm, rv after;
    -- then F.instance_norm(x, rm, rv, w, b, use_input_stats=False)[:8]
    local x = torch.tensor({ -2.310411800234176, -0.3732508612577643, -1.0608166785462863, 0.9995093547811761, -0.8840250045832653, -1.2755469302148053, -0.623224579866079, -0.8664416019125772, -1.2956271403277857, 1.52363162310635, 0.3236605664983738, 2.0177260314861085, 1.1357423400213507, -1.226881339001083, 0.07138847120511693, 0.3380174030507378, 0.15351883531544036, -0.6332746088675096, -1.2609246557194385, -0.726951062065411, -0.019964750907762653, 0.2102998901016947, 0.17718935139366584, -0.830510051008449, 1.0111892074660187, -0.2426793824588577, -0.7730112772958181, -1.5951814880783068, -0.6870036940435463, 1.4880743158106724, -0.4484158047114511, -0.8910030351707375, -0.09174174090816388, 0.5563227724483105, -0.009446277892507904, -1.21768777910687, -1.2654653080284903, -1.1195351830271254, 1.1664857205254855, 0.9262324572968778, 0.6539244967350809, 0.14821544548810084, -1.1461092231976013, 1.8727763768553416, -0.30991497424174674, 0.24018023403782535, -1.3487610270963772, 0.2443990933828689, -3.1452962731231335, -0.11373127757597257, 1.6962024805143952, -0.6652034805381666, -0.587222598359879, 2.832104167511146, 0.9039973689601122, 0.947836532432321, -1.3809366518587674, -2.0547510174380235, 0.04757655385024031, -0.3855687975933702, -0.27503491919216155, 0.886589630091246, 1.4857416299332185, -0.007855617400547969, -1.1287986397999445, -0.09376858138313218, 0.998343579451126, -0.08262167465143246, 0.1825319491801699, 0.9509038124935927, -1.7631617835191395, 1.0107316682629284, 0.7494883300195011, -0.560555214098722, 0.07424681473465156, 1.9936457271364452, 0.44986533984459376, 1.5531453898519594, 0.05398594882285299, 1.4744415042312724, -0.7012303945657874, 0.326255796287562, -0.8738640219900763, 0.3941269998738486, 0.8915170821381018, 1.1731555158319225, -0.39490340565105597, 0.44642257211843217, -0.1726536808458421, 0.975120345181078, 0.4164541966117019, -0.4986513835421579, -0.4754698199105609, 0.28634406331767814, -1.3181871188381729, 0.8887144617352294, -0.5918823592164963, 0.6195092629710962, -1.4872950971304264, 1.3626823808042956, 0.4188191254194787, 0.34341487809757076, -0.34859980650048067, -1.2090699446332276, 0.8578627239959242, 1.3883334151939664, -0.11720721184327226, 1.553109128881493, -0.3208693214135495, 1.5621195343675542, -0.20353861724647299, 1.0938443736921497, 0.19405819710962857, 0.7513056269519641, -0.32941223804852077, 1.427469253078078, 0.10227104997923495, -1.4266772777357957, 0.8330497625994617, 0.8754186991348559 }, d64):view(2, 3, 4, 5)
    local rm, rv = torch.tensor({ 0.33380446173297984, 1.6443168265369494, -1.2534804623790516 }, d64), torch.tensor({ 0.6274333673781886, 1.2667131887721665, 1.15135525896179 }, d64)
    local w, b = torch.tensor({ -0.05916036749304203, -0.22841280179511864, -0.3551562051565328 }, d64), torch.tensor({ -0.7219184325326881, -0.3060858745461238, 1.376756561377978 }, d64)
    local y = F.instance_norm(x, rm, rv, w, b, { use_input_stats = true, momentum = 0.2 })
    H.near(y:flatten():narrow(1, 1, 8), { -0.6109346705, -0.7178060321, -0.6798736675, -0.7935399324, -0.6896270992, -0.6680271998, -0.7040152153, -0.6905971591 }, 1e-9)
    H.near(y:sum(), 13.950090172, 1e-8)
    H.near(rm, { 0.27693198567076865, 1.3035050279174847, -0.973307276004119 }, 1e-12)
    H.near(rv, { 0.7119882117869845, 1.16011326035064, 1.1895007946584935 }, 1e-12)
    H.near(F.instance_norm(x, rm, rv, w, b, { use_input_stats = false }):flatten():narrow(1, 1, 8), { -0.5405149794, -0.6763329119, -0.6281264021, -0.7725796669, -0.640521593, -0.6130712674, -0.6588067926, -0.6417543979 }, 1e-9)
    local xr = x:clone():requires_grad_()
    assert.are.equal('ViewBackward0', F.instance_norm(xr).grad_fn:name())
    assert.is_true(torch.autograd.gradcheck(function(t, p, q) return F.instance_norm(t, nil, nil, p, q) end,
      { xr, w:clone():requires_grad_(), b:clone():requires_grad_() }))
  end)
end)
