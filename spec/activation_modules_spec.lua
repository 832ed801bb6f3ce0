-- Activation and dropout modules (lua/nn/activation.lua, lua/nn/misc.lua): values and gradients
-- recorded from PyTorch 1.13 (spec/support/nn_modules_record.py writes
-- spec/support/nn_modules_wants.lua: every input beside its results), printing, gradchecks in
-- float64, the meta device, errors at the caller's line, and dropout masks identical to
-- PyTorch's under the same seed.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local F = nn.functional
local W = dofile('spec/support/nn_modules_wants.lua')

local d64 = { dtype = torch.float64 }
local function t64(v) return torch.tensor(v, d64) end

-- the Lua module of each recorded case (PyTorch's constructor there, beside)
local modules = {
  ReLU6 = function() return nn.ReLU6() end,
  ELU = function() return nn.ELU(0.7) end,
  SELU = function() return nn.SELU() end,
  CELU = function() return nn.CELU(1.5) end,
  GELU = function() return nn.GELU() end,
  GELU_tanh = function() return nn.GELU('tanh') end,
  SiLU = function() return nn.SiLU() end,
  Mish = function() return nn.Mish() end,
  Hardtanh = function() return nn.Hardtanh(-2.0, 1.5) end,
  Hardsigmoid = function() return nn.Hardsigmoid() end,
  Hardswish = function() return nn.Hardswish() end,
  Softplus = function() return nn.Softplus(2, 3) end,
  Softsign = function() return nn.Softsign() end,
  Threshold = function() return nn.Threshold(0.5, -1.0) end,
  Softmin = function() return nn.Softmin(2) end,
  GLU = function() return nn.GLU() end,
  LogSigmoid = function() return nn.LogSigmoid() end,
  Tanhshrink = function() return nn.Tanhshrink() end,
  Hardshrink = function() return nn.Hardshrink(0.7) end,
  Softshrink = function() return nn.Softshrink(0.7) end,
  LeakyReLU = function() return nn.LeakyReLU(0.2) end,
  Softmax2d = function() return nn.Softmax2d() end,
  PReLU = function() return nn.PReLU(3, { dtype = torch.float64 }) end,
  PReLU1 = function() return nn.PReLU({ dtype = torch.float64 }) end,
}

describe('activation modules against PyTorch 1.13', function()
  for name, make in pairs(modules) do
    it(name .. ': output and gradients', function()
      local w = W['act_' .. name]
      assert.is_not_nil(w, name)
      local m = make()
      if w.param_weight then torch.no_grad(function() m.weight:copy_(t64(w.param_weight)) end) end
      local x = t64(w.x):requires_grad_()
      local y = m(x)
      H.near(y, w.out, 1e-10, 1e-10)
      local s = (y * t64(w.g)):sum()
      s:backward()
      -- (1e-7: PyTorch's hardsigmoid gradient multiplies by 1/6 rounded to float32, also in float64)
      H.near(x.grad, w.dx, 1e-10, 1e-7)
      if w.grad_weight then H.near(m.weight.grad, w.grad_weight, 1e-10, 1e-10) end
    end)
  end

  it('inplace forms write into their input and give the same values', function()
    local w = W.act_ELU
    local x = t64(w.x)
    local r = nn.ELU(0.7, true)(x)
    assert.is_true(rawequal(r, x) or r:data_ptr() == x:data_ptr())
    H.near(x, w.out, 1e-12)
    for _, c in ipairs({ { nn.ReLU6({ inplace = true }), 'ReLU6' }, { nn.SELU(true), 'SELU' }, { nn.SiLU(true), 'SiLU' },
      { nn.Mish(true), 'Mish' }, { nn.Hardsigmoid(true), 'Hardsigmoid' }, { nn.Hardswish(true), 'Hardswish' },
      { nn.Threshold(0.5, -1.0, true), 'Threshold' }, { nn.Hardtanh(-2.0, 1.5, true), 'Hardtanh' },
      { nn.CELU(1.5, true), 'CELU' } }) do
      local xi = t64(W['act_' .. c[2]].x)
      c[1](xi)
      H.near(xi, W['act_' .. c[2]].out, 1e-10, 1e-10)
    end
  end)
end)

describe('activation modules: printing, construction, errors', function()
  it('print as PyTorch prints them', function()
    -- repr() of the same constructions in PyTorch 1.13
    local cases = {
      { nn.ReLU6(), 'ReLU6()' }, { nn.ReLU6(true), 'ReLU6(inplace=True)' }, { nn.ELU(), 'ELU(alpha=1.0)' },
      { nn.ELU(0.5, true), 'ELU(alpha=0.5, inplace=True)' }, { nn.SELU(), 'SELU()' }, { nn.SELU(true), 'SELU(inplace=True)' },
      { nn.CELU(), 'CELU(alpha=1.0)' }, { nn.GELU(), "GELU(approximate='none')" },
      { nn.GELU({ approximate = 'tanh' }), "GELU(approximate='tanh')" }, { nn.SiLU(), 'SiLU()' },
      { nn.SiLU(true), 'SiLU(inplace=True)' }, { nn.Mish(true), 'Mish(inplace=True)' },
      { nn.PReLU(), 'PReLU(num_parameters=1)' }, { nn.PReLU(3, 0.1), 'PReLU(num_parameters=3)' },
      { nn.Hardtanh(), 'Hardtanh(min_val=-1.0, max_val=1.0)' },
      { nn.Hardtanh(-2, 2, true), 'Hardtanh(min_val=-2.0, max_val=2.0, inplace=True)' },
      { nn.Hardsigmoid(true), 'Hardsigmoid()' }, { nn.Hardswish(true), 'Hardswish()' },
      { nn.Softplus(), 'Softplus(beta=1, threshold=20)' }, { nn.Softplus(2, 10), 'Softplus(beta=2, threshold=10)' },
      { nn.Softsign(), 'Softsign()' }, { nn.Threshold(0.1, 20), 'Threshold(threshold=0.1, value=20)' },
      { nn.Softmin(), 'Softmin(dim=None)' }, { nn.Softmin(2), 'Softmin(dim=2)' }, { nn.Softmax2d(), 'Softmax2d()' },
      { nn.GLU(), 'GLU(dim=-1)' }, { nn.LogSigmoid(), 'LogSigmoid()' }, { nn.Tanhshrink(), 'Tanhshrink()' },
      { nn.Hardshrink(), 'Hardshrink(0.5)' }, { nn.Softshrink(0.3), 'Softshrink(0.3)' },
      { nn.Dropout(), 'Dropout(p=0.5, inplace=False)' }, { nn.Dropout1d(0.2), 'Dropout1d(p=0.2, inplace=False)' },
      { nn.Dropout2d(), 'Dropout2d(p=0.5, inplace=False)' }, { nn.Dropout3d(), 'Dropout3d(p=0.5, inplace=False)' },
      { nn.AlphaDropout(), 'AlphaDropout(p=0.5, inplace=False)' },
      { nn.FeatureAlphaDropout(0.3, true), 'FeatureAlphaDropout(p=0.3, inplace=True)' },
    }
    for _, c in ipairs(cases) do assert.are.equal(c[2], tostring(c[1])) end
  end)

  it('PReLU: PyTorch\'s init, state_dict keys, the meta device, skip_init', function()
    local p = nn.PReLU(4, 0.3)
    H.near(p.weight, { 0.3, 0.3, 0.3, 0.3 }, 1e-7)
    assert.are.same({ 'weight' }, p:state_dict():keys())
    local m = nn.PReLU(3, { device = 'meta' })
    assert.is_true(m.weight.is_meta)
    local y = m(torch.empty({ 2, 3, 5 }, { device = 'meta' }))
    assert.is_true(y.is_meta)
    assert.are.same({ 2, 3, 5 }, y:size())
    m:to_empty({ device = 'cpu' })
    assert.is_false(m.weight.is_meta)
    assert.are.same({ 3 }, nn.utils.skip_init(nn.PReLU, 3).weight:size())
  end)

  it('parameterless modules run on the meta device', function()
    for _, m in ipairs({ nn.ReLU6(), nn.ELU(), nn.SELU(), nn.CELU(0.5), nn.GELU(), nn.GELU('tanh'), nn.SiLU(), nn.Mish(),
      nn.Hardtanh(), nn.Hardsigmoid(), nn.Hardswish(), nn.Softplus(), nn.Softsign(), nn.Threshold(0.1, 2), nn.Softmin(2),
      nn.Softmax2d(), nn.LogSigmoid(), nn.Tanhshrink(), nn.Hardshrink(), nn.Softshrink() }) do
      local y = m(torch.empty({ 2, 3, 4 }, { device = 'meta' }))
      assert.is_true(y.is_meta, tostring(m))
      assert.are.same({ 2, 3, 4 }, y:size(), tostring(m))
    end
    assert.are.same({ 2, 3, 2 }, nn.GLU()(torch.empty({ 2, 3, 4 }, { device = 'meta' })):size())
  end)

  it('errors name the module and are raised at the caller\'s line', function()
    local cases = {
      { function() nn.Hardtanh(1, -1) end, 'moontorch.nn.Hardtanh: max_val (-1.0) must be greater than min_val (1.0)' },
      { function() nn.GELU('fast') end, 'moontorch.nn.GELU: approximate argument must be either none or tanh (got fast)' },
      { function() nn.Softmax2d()(torch.ones(2, 3)) end, 'moontorch.Softmax2d: expected input to be 3D or 4D, got 2D instead' },
      { function() nn.Threshold(0.1) end, "missing 2 required positional arguments: 'threshold' and 'value'" },
      { function() nn.PReLU(0) end, 'moontorch.nn.PReLU: num_parameters must be a positive integer (got 0)' },
      { function() nn.PReLU(3)(torch.ones(2, 4)) end, 'Mismatch of parameter numbers and input channel size. Found parameter numbers = 3 and channel size = 4.' },
      { function() nn.GLU()(torch.ones(2, 3)) end, 'Halving dimension must be even, but dimension 2 is size 3' },
      { function() nn.ELU({ alhpa = 1 }) end, "moontorch.nn.ELU: __init__() got an unexpected keyword argument 'alhpa'" },
      { function() nn.Dropout(1.5) end, 'moontorch.nn.Dropout: dropout probability has to be between 0 and 1, but got 1.5' },
      { function() nn.Dropout1d()(torch.ones(2, 3, 4, 5)) end, 'Expected 2D or 3D input, but received a 4D input' },
      { function() nn.ReLU6()(torch.ones(2), torch.ones(2)) end, 'forward() takes 1 positional argument but 2 were given' },
    }
    for _, c in ipairs(cases) do
      local err = H.errors_with(c[1], c[2])
      assert.is_truthy(tostring(err):find('activation_modules_spec.lua:', 1, true), 'raised at the caller: ' .. tostring(err))
    end
  end)

  it('gradchecks in float64', function()
    torch.manual_seed(3)
    -- away from the kinks (finite differences are not defined there)
    local x = (torch.rand(3, 4, d64) * 6 - 3):requires_grad_()
    for _, m in ipairs({ nn.ELU(0.7), nn.SELU(), nn.CELU(1.5), nn.GELU(), nn.GELU('tanh'), nn.SiLU(), nn.Mish(),
      nn.Softplus(2, 3), nn.Softsign(), nn.Softmin(2), nn.GLU(), nn.LogSigmoid(), nn.Tanhshrink(), nn.Hardsigmoid(),
      nn.Hardswish() }) do
      assert.is_true(torch.autograd.gradcheck(function(t) return m(t) end, { x }), tostring(m))
    end
    local p = nn.PReLU(3, { dtype = torch.float64 })
    local xp = torch.randn({ 2, 3, 4 }, d64):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(t, w) return F.prelu(t, w) end, { xp, p.weight }))
    local x4 = torch.randn({ 2, 3, 2, 2 }, d64):requires_grad_()
    assert.is_true(torch.autograd.gradcheck(function(t) return nn.Softmax2d()(t) end, { x4 }))
  end)
end)

describe('dropout modules: PyTorch\'s masks under the same seed', function()
  local made = {
    Dropout = function() return nn.Dropout(0.3) end,
    Dropout1d = function() return nn.Dropout1d(0.5) end,
    Dropout1d_unbatched = function() return nn.Dropout1d(0.5) end,
    Dropout2d = function() return nn.Dropout2d(0.4) end,
    Dropout3d = function() return nn.Dropout3d(0.5) end,
    AlphaDropout = function() return nn.AlphaDropout(0.2) end,
    FeatureAlphaDropout = function() return nn.FeatureAlphaDropout(0.5) end,
  }
  for name, make in pairs(made) do
    it(name, function()
      local w = W['drop_' .. name]
      local m = make()
      torch.manual_seed(w.seed)
      local y = m(torch.ones(w.shape))
      H.near(y, w.out, 1e-6, 1e-6)
      m:eval()
      local x = torch.randn(w.shape)
      assert.is_true(torch.equal(m(x), x))
    end)
  end

  it('inplace dropout writes its input; p = 0 and p = 1; gradients through the mask', function()
    torch.manual_seed(W.drop_Dropout.seed)
    local x = torch.ones(W.drop_Dropout.shape)
    nn.Dropout(0.3, true)(x)
    H.near(x, W.drop_Dropout.out, 1e-6)
    local z = torch.randn(3, 4)
    assert.is_true(torch.equal(nn.Dropout(0)(z), z))
    H.near(nn.Dropout(1)(z), torch.zeros(3, 4))
    torch.manual_seed(W.drop_Dropout.seed)
    local a = torch.ones(W.drop_Dropout.shape, { requires_grad = true })
    nn.Dropout(0.3)(a):sum():backward()
    H.near(a.grad, W.drop_Dropout.out, 1e-6)
    -- F.feature_alpha_dropout: identity unless training=true (PyTorch's default is false)
    assert.is_true(torch.equal(F.feature_alpha_dropout(z, 0.5), z))
    H.errors_with(function() F.feature_alpha_dropout(torch.ones(3), 0.5, true) end,
      'Feature dropout requires at least 2 dimensions in the input')
  end)

  it('dropout runs on the meta device', function()
    for _, m in ipairs({ nn.Dropout(), nn.Dropout2d(), nn.AlphaDropout(), nn.FeatureAlphaDropout() }) do
      local y = m(torch.empty({ 2, 3, 4, 4 }, { device = 'meta' }))
      assert.is_true(y.is_meta)
      assert.are.same({ 2, 3, 4, 4 }, y:size())
    end
  end)
end)
