-- Calling modules: every built-in module checks the arguments its forward takes, as Python does
-- (PyTorch 1.13, /usr/bin/python3: nn.Linear(3, 2)(x, x) -> "Linear.forward() takes 2 positional
-- arguments but 3 were given" (self counted); nn.Linear(3, 2)() -> "Linear.forward() missing 1
-- required positional argument: 'input'"; nn.Linear(3, 2)(x, foo=1) -> "Linear.forward() got an
-- unexpected keyword argument 'foo'"; the same for ReLU, Identity, Sequential, BatchNorm1d). Lua
-- counts the arguments the caller wrote, so self is not counted. Modules with a forward of their
-- own take any arguments.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local Mod = require 'moontorch.nn.Module'

local x = torch.ones(2, 3)

-- every built-in module that has a forward, built with arguments that suit x
local builtins = {
  Identity = function() return nn.Identity() end,
  Linear = function() return nn.Linear(3, 2) end,
  ReLU = function() return nn.ReLU() end,
  LeakyReLU = function() return nn.LeakyReLU() end,
  Sigmoid = function() return nn.Sigmoid() end,
  Tanh = function() return nn.Tanh() end,
  Softmax = function() return nn.Softmax(2) end,
  LogSoftmax = function() return nn.LogSoftmax(2) end,
  BatchNorm1d = function() return nn.BatchNorm1d(3) end,
  BatchNorm2d = function() return nn.BatchNorm2d(3) end,
  BatchNorm3d = function() return nn.BatchNorm3d(3) end,
  Sequential = function() return nn.Sequential(nn.Linear(3, 2)) end,
}

-- issue 12, the modules part: the one-input modules of lua/nn/{activation,normalization,sparse,misc}.lua,
-- and (multi_input) those whose forward takes more: name -> {make, positional count, first name}
for name, make in pairs({
  ReLU6 = function() return nn.ReLU6() end, Hardtanh = function() return nn.Hardtanh() end,
  ELU = function() return nn.ELU() end, CELU = function() return nn.CELU() end, SELU = function() return nn.SELU() end,
  GELU = function() return nn.GELU() end, SiLU = function() return nn.SiLU() end, Mish = function() return nn.Mish() end,
  Hardsigmoid = function() return nn.Hardsigmoid() end, Hardswish = function() return nn.Hardswish() end,
  Softsign = function() return nn.Softsign() end, LogSigmoid = function() return nn.LogSigmoid() end,
  Tanhshrink = function() return nn.Tanhshrink() end, Softplus = function() return nn.Softplus() end,
  PReLU = function() return nn.PReLU(3) end, Threshold = function() return nn.Threshold(0.1, 0) end,
  Hardshrink = function() return nn.Hardshrink() end, Softshrink = function() return nn.Softshrink() end,
  Softmin = function() return nn.Softmin(2) end, Softmax2d = function() return nn.Softmax2d() end,
  GLU = function() return nn.GLU() end, Dropout = function() return nn.Dropout() end,
  Dropout1d = function() return nn.Dropout1d() end, Dropout2d = function() return nn.Dropout2d() end,
  Dropout3d = function() return nn.Dropout3d() end, AlphaDropout = function() return nn.AlphaDropout() end,
  FeatureAlphaDropout = function() return nn.FeatureAlphaDropout() end, Flatten = function() return nn.Flatten() end,
  Unflatten = function() return nn.Unflatten(2, { 3, 1 }) end, LayerNorm = function() return nn.LayerNorm(3) end,
  GroupNorm = function() return nn.GroupNorm(1, 3) end, InstanceNorm1d = function() return nn.InstanceNorm1d(3) end,
  InstanceNorm2d = function() return nn.InstanceNorm2d(3) end, InstanceNorm3d = function() return nn.InstanceNorm3d(3) end,
  LocalResponseNorm = function() return nn.LocalResponseNorm(2) end, Embedding = function() return nn.Embedding(4, 2) end,
}) do builtins[name] = make end
local multi_input = {
  Bilinear = { function() return nn.Bilinear(3, 3, 2) end, 2, 'input1' },
  CosineSimilarity = { function() return nn.CosineSimilarity() end, 2, 'x1' },
  PairwiseDistance = { function() return nn.PairwiseDistance() end, 2, 'x1' },
  EmbeddingBag = { function() return nn.EmbeddingBag(4, 2) end, 3, 'input' },
  MarginRankingLoss = { function() return nn.MarginRankingLoss() end, 3, 'input1' },
  CosineEmbeddingLoss = { function() return nn.CosineEmbeddingLoss() end, 3, 'input1' },
  TripletMarginLoss = { function() return nn.TripletMarginLoss() end, 3, 'anchor' },
  TripletMarginWithDistanceLoss = { function() return nn.TripletMarginWithDistanceLoss() end, 3, 'anchor' },
  GaussianNLLLoss = { function() return nn.GaussianNLLLoss() end, 3, 'input' },
  CTCLoss = { function() return nn.CTCLoss() end, 4, 'log_probs' },
}
for _, name in ipairs({ 'L1Loss', 'MSELoss', 'SoftMarginLoss', 'MultiLabelMarginLoss', 'BCELoss', 'BCEWithLogitsLoss',
  'MultiLabelSoftMarginLoss', 'NLLLoss', 'CrossEntropyLoss', 'SmoothL1Loss', 'HuberLoss', 'KLDivLoss',
  'HingeEmbeddingLoss', 'MultiMarginLoss', 'PoissonNLLLoss' }) do
  multi_input[name] = { function() return nn[name]() end, 2, 'input' }
end
describe('module call arity (issue 12, the modules part: forwards of several arguments)', function()
  for name, c in pairs(multi_input) do
    it(name, function()
      local m = c[1]()
      local op = 'moontorch.nn.' .. name .. ': '
      local args = {}
      for i = 1, c[2] + 1 do args[i] = x end
      -- (EmbeddingBag's forward takes from 1 to 3)
      local want = name == 'EmbeddingBag' and 'forward() takes from 1 to 3 positional arguments but 4 were given'
        or ('forward() takes %d positional arguments but %d were given'):format(c[2], c[2] + 1)
      local err = H.errors_with(function() m(unpack(args)) end, op .. want)
      assert.is_truthy(err:find('module_call_spec.lua', 1, true), 'raised at the caller\'s line: ' .. err)
      H.errors_with(function() m() end, op .. 'forward() missing')
      H.errors_with(function() m() end, "'" .. c[3] .. "'")
    end)
  end
end)

describe('module call arity', function()
  it('covers every built-in layer class with a forward', function()
    for name, cls in pairs(nn) do
      if type(cls) == 'table' and rawget(cls, '__typename') and rawget(cls, 'forward') and name:sub(1, 1) ~= '_'
        and name ~= 'Module' and name ~= 'ModuleList' and name ~= 'ModuleDict' then
        assert.is_not_nil(builtins[name] or multi_input[name], 'no arity case for nn.' .. name)
      end
    end
  end)
  for name, make in pairs(builtins) do
    it(name .. ': too many, too few, nil, unknown options', function()
      local m = make()
      local op = 'moontorch.nn.' .. name .. ': '
      local err = H.errors_with(function() m(x, x) end, op .. 'forward() takes 1 positional argument but 2 were given')
      assert.is_truthy(err:find('module_call_spec.lua', 1, true), 'raised at the caller\'s line: ' .. err)
      H.errors_with(function() m() end, op .. "forward() missing 1 required positional argument: 'input'")
      H.errors_with(function() m(nil) end, op .. "forward() missing 1 required positional argument: 'input' (nil given)")
      H.errors_with(function() m(nil, x) end, op .. 'forward() takes 1 positional argument but 2 were given')
      H.errors_with(function() m(x, nil) end, op .. 'forward() takes 1 positional argument but 2 were given')
      H.errors_with(function() m(x, { foo = 1 }) end, op .. "forward() got an unexpected keyword argument 'foo'")
      H.errors_with(function() m(x, x, x) end, 'but 3 were given')
    end)
  end
  it('is checked after forward pre hooks, which may fix the arguments', function()
    local m = nn.Linear(3, 2)
    local h = m:register_forward_pre_hook(function(_, inp) return { inp[1] } end)
    assert.are.same({ 2, 2 }, m(x, x):size())
    h:remove()
    m:register_forward_pre_hook(function(_, inp) return { inp[1], inp[1] } end)
    H.errors_with(function() m(x) end, 'moontorch.nn.Linear: forward() takes 1 positional argument but 2 were given')
    local g = nn.register_module_forward_hook(function() end)
    local ok, err = pcall(nn.ReLU(), x, x)
    g:remove()
    assert.is_false(ok)
    assert.is_truthy(err:find('moontorch.nn.ReLU: forward() takes 1 positional argument but 2 were given', 1, true))
  end)
  it('leaves modules with a forward of their own alone; a subclass that inherits forward is checked', function()
    local Mine, P = torch.class('spec.CallMine', 'nn.Module')
    function Mine:__init() P.__init(self) end
    function Mine:forward(a, b, c) return { a, b, c } end
    local r = Mine()(1, nil, 3)
    assert.are.same({ 1, nil, 3 }, r)
    assert.are.same({}, Mine()())
    local Wide, WP = torch.class('spec.CallWideLinear', 'nn.Linear')
    function Wide:forward(a, b) return WP.forward(self, a) + WP.forward(self, b) end
    assert.are.same({ 2, 2 }, Wide(3, 2)(x, x):size())
    local Same = torch.class('spec.CallSameLinear', 'nn.Linear')
    H.errors_with(function() Same(3, 2)(x, x) end, 'moontorch.spec.CallSameLinear: forward() takes 1 positional argument')
  end)
  it('declared signatures with optional arguments and options', function()
    local S, SP = torch.class('spec.CallDeclared', 'nn.Module')
    function S:__init() SP.__init(self) end
    function S:forward(a, b, c, opts) return a + b + (c or 0) + (opts and opts.k or 0) end
    Mod.declare_forward(S, { 'input', 'target', 'weight' }, { nreq = 2, kwargs = { 'k' } })
    local m = S()
    assert.are.equal(3, m(1, 2))
    assert.are.equal(6, m(1, 2, 3))
    assert.are.equal(16, m(1, 2, 3, { k = 10 }))
    H.errors_with(function() m(1) end, "forward() missing 1 required positional argument: 'target'")
    H.errors_with(function() m() end, "forward() missing 2 required positional arguments: 'input' and 'target'")
    H.errors_with(function() m(nil, 2) end, "missing 1 required positional argument: 'input' (nil given)")
    H.errors_with(function() m(1, 2, 3, 4) end, 'forward() takes from 2 to 3 positional arguments but 4 were given')
    H.errors_with(function() m(1, 2, { j = 1 }) end, "forward() got an unexpected keyword argument 'j'")
  end)
  it('compiles: a loop of checked module calls hits no NYI in the call path', function()
    local lin, relu, v = nn.Linear(3, 2), nn.ReLU(), torch.ones(3)
    local nyi, traces = H.watch_jit(function() for _ = 1, 3000 do relu(lin(v)) end end, 'nn/Module.lua', 'nn/Module.lua')
    assert.are.same({}, nyi)
    assert.is_true(traces > 0, 'the call path was not compiled')
  end)
end)
