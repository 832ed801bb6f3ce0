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
-- issue 12, pooling: the one-input modules of lua/nn/pooling.lua and lua/nn/padding.lua; MaxUnpool's
-- forward takes (input, indices, output_size=None), checked below
for _, name in ipairs({ 'MaxPool1d', 'MaxPool2d', 'MaxPool3d', 'AvgPool1d', 'AvgPool2d', 'AvgPool3d', 'LPPool1d',
  'LPPool2d' }) do
  builtins[name] = function() return nn[name](2, 2) end
end
for _, name in ipairs({ 'AdaptiveAvgPool1d', 'AdaptiveAvgPool2d', 'AdaptiveAvgPool3d', 'AdaptiveMaxPool1d',
  'AdaptiveMaxPool2d', 'AdaptiveMaxPool3d', 'PixelShuffle', 'PixelUnshuffle', 'ChannelShuffle', 'ZeroPad2d',
  'ReflectionPad1d', 'ReflectionPad2d', 'ReflectionPad3d', 'ReplicationPad1d', 'ReplicationPad2d', 'ReplicationPad3d' }) do
  builtins[name] = function() return nn[name](1) end
end
for _, name in ipairs({ 'ConstantPad1d', 'ConstantPad2d', 'ConstantPad3d' }) do
  builtins[name] = function() return nn[name](1, 0) end
end
-- parity session: nn.RReLU (lua/nn/activation.lua)
builtins.RReLU = function() return nn.RReLU() end
for _, name in ipairs({ 'Upsample', 'UpsamplingNearest2d', 'UpsamplingBilinear2d' }) do
  builtins[name] = function() return nn[name]({ scale_factor = 2 }) end
end
local own_arity = { MaxUnpool1d = true, MaxUnpool2d = true, MaxUnpool3d = true }

-- attention and transformers (issue 12, the attention part): forwards of several arguments, their
-- arity checked in spec/attention_spec.lua and spec/transformer_spec.lua
local covered_elsewhere = {
  NonDynamicallyQuantizableLinear = true, MultiheadAttention = true, TransformerEncoderLayer = true,
  TransformerDecoderLayer = true, TransformerEncoder = true, TransformerDecoder = true, Transformer = true,
}

-- issue 12, conv part: the convolutions that take one input (ConvTranspose*: `conv_others` below)
builtins.Conv1d = function() return nn.Conv1d(2, 2, 1) end
builtins.Conv2d = function() return nn.Conv2d(2, 2, 1) end
builtins.Conv3d = function() return nn.Conv3d(2, 2, 1) end
builtins.Unfold = function() return nn.Unfold(2) end
builtins.Fold = function() return nn.Fold({ 3, 3 }, 2) end
local conv_others = {
  ConvTranspose1d = function() return nn.ConvTranspose1d(2, 2, 1) end,
  ConvTranspose2d = function() return nn.ConvTranspose2d(2, 2, 1) end,
  ConvTranspose3d = function() return nn.ConvTranspose3d(2, 2, 1) end,
}

-- recurrent layers (issue 12, rnn part): forwards of two arguments (input, hx), whose arity
-- spec/rnn_spec.lua checks
local two_args = { RNNBase = true, RNN = true, LSTM = true, GRU = true, RNNCell = true, LSTMCell = true, GRUCell = true }

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
        assert.is_not_nil(builtins[name] or covered_elsewhere[name] or own_arity[name] or conv_others[name]
          or two_args[name] or multi_input[name], 'no arity case for nn.' .. name)
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
  it('MaxUnpool: (input, indices, output_size=None)', function()
    for name in pairs(own_arity) do
      local m = nn[name](2)
      local op = 'moontorch.nn.' .. name .. ': '
      H.errors_with(function() m(x) end, op .. "forward() missing 1 required positional argument: 'indices'")
      H.errors_with(function() m(x, x, x, x) end, op .. 'forward() takes from 2 to 3 positional arguments but 4 were given')
      H.errors_with(function() m(x, x, { foo = 1 }) end, op .. "forward() got an unexpected keyword argument 'foo'")
    end
    local v, i = nn.functional.max_pool2d(torch.randn(1, 1, 5, 5), 2, { return_indices = true })
    assert.are.same({ 1, 1, 5, 5 }, nn.MaxUnpool2d(2)(v, i, { output_size = { 5, 5 } }):size())
  end)
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

-- issue 12, conv part: ConvTranspose*'s forward(input, output_size=nil), as PyTorch 1.13's
-- (ConvTranspose1d.forward() takes from 2 to 3 positional arguments but 4 were given, self counted)
describe('module call arity of ConvTranspose*', function()
  for name, make in pairs(conv_others) do
    it(name .. ': input and an optional output_size, by position or name', function()
      local m = make()
      local op = 'moontorch.nn.' .. name .. ': '
      local xin = torch.ones(2, 3, 3, 3):narrow(1, 1, 2)
      if name == 'ConvTranspose1d' then xin = torch.ones(2, 3) elseif name == 'ConvTranspose2d' then xin = torch.ones(2, 3, 3) end
      local err = H.errors_with(function() m(xin, nil, xin) end,
        op .. 'forward() takes from 1 to 2 positional arguments but 3 were given')
      assert.is_truthy(err:find('module_call_spec.lua', 1, true), err)
      H.errors_with(function() m() end, op .. "forward() missing 1 required positional argument: 'input'")
      H.errors_with(function() m(xin, { foo = 1 }) end, op .. "forward() got an unexpected keyword argument 'foo'")
      local sizes = {}
      for i = 2, xin:dim() do sizes[#sizes + 1] = xin:size(i) end
      assert.are.same(xin:size(), m(xin, sizes):size())
      assert.are.same(xin:size(), m(xin, { output_size = sizes }):size())
    end)
  end
end)
