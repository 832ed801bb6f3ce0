-- Every nn module's constructor takes PyTorch's arguments by position or by name in a trailing
-- options table, the required ones too (issue 27, part 3): nn.Conv2d(3, 64, {kernel_size = 7,
-- stride = 2, padding = 3, bias = false}) was "kernel_size must be an integer or a table of 2
-- integers (got table: 0x...)". The walk goes over every module class in nn; PyTorch 1.13's
-- signatures (names, which are required, defaults) were recorded by
--   /usr/bin/python3 spec/support/nn_signatures_record.py > spec/support/nn_signatures.lua
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local SIG = require 'spec.support.nn_signatures'
-- (torch.nn.modules.linear's, not exported by torch.nn: Linear's signature)
SIG.NonDynamicallyQuantizableLinear = SIG.NonDynamicallyQuantizableLinear or SIG.Linear

-- example values of the required arguments, in PyTorch's order
local EXAMPLE = {
  AdaptiveAvgPool1d = { 2 }, AdaptiveAvgPool2d = { 2 }, AdaptiveAvgPool3d = { 2 }, AdaptiveMaxPool1d = { 2 },
  AdaptiveMaxPool2d = { 2 }, AdaptiveMaxPool3d = { 2 },
  AvgPool1d = { 2 }, AvgPool2d = { 2 }, AvgPool3d = { 2 }, MaxPool1d = { 2 }, MaxPool2d = { 2 }, MaxPool3d = { 2 },
  MaxUnpool1d = { 2 }, MaxUnpool2d = { 2 }, MaxUnpool3d = { 2 }, Unfold = { 2 },
  BatchNorm1d = { 3 }, BatchNorm2d = { 3 }, BatchNorm3d = { 3 }, InstanceNorm1d = { 3 }, InstanceNorm2d = { 3 },
  InstanceNorm3d = { 3 },
  Bilinear = { 2, 3, 4 }, ChannelShuffle = { 2 },
  ConstantPad1d = { 1, 0.5 }, ConstantPad2d = { 1, 0.5 }, ConstantPad3d = { 1, 0.5 },
  ReflectionPad1d = { 1 }, ReflectionPad2d = { 1 }, ReflectionPad3d = { 1 }, ReplicationPad1d = { 1 },
  ReplicationPad2d = { 1 }, ReplicationPad3d = { 1 }, ZeroPad2d = { 1 },
  Conv1d = { 3, 4, 3 }, Conv2d = { 3, 4, 3 }, Conv3d = { 3, 4, 3 }, ConvTranspose1d = { 3, 4, 3 },
  ConvTranspose2d = { 3, 4, 3 }, ConvTranspose3d = { 3, 4, 3 },
  Embedding = { 10, 3 }, EmbeddingBag = { 10, 3 }, Fold = { { 4, 4 }, 2 },
  RNN = { 2, 3 }, LSTM = { 2, 3 }, GRU = { 2, 3 }, RNNCell = { 2, 3 }, LSTMCell = { 2, 3 }, GRUCell = { 2, 3 },
  GroupNorm = { 2, 4 }, LPPool1d = { 2, 2 }, LPPool2d = { 2, 2 }, LayerNorm = { 4 }, Linear = { 2, 3 },
  NonDynamicallyQuantizableLinear = { 2, 3 }, LocalResponseNorm = { 2 }, MultiheadAttention = { 4, 2 },
  PixelShuffle = { 2 }, PixelUnshuffle = { 2 }, Threshold = { 0.1, 20 },
  TransformerEncoderLayer = { 4, 2 }, TransformerDecoderLayer = { 4, 2 },
  TransformerEncoder = { function() return nn.TransformerEncoderLayer(4, 2) end, 2 },
  TransformerDecoder = { function() return nn.TransformerDecoderLayer(4, 2) end, 2 },
  Unflatten = { 2, { 2, 2 } },
}
-- dims and class positions count from 1 here: PyTorch's non-negative default + 1
local ONE_BASED = { dim = true, start_dim = true, end_dim = true, blank = true }
-- the containers take their one table argument as their items, not as options
local NOT_OPTIONS = { Sequential = true, ModuleList = true, ModuleDict = true, ParameterList = true,
  ParameterDict = true, Module = true, Parameter = true, RNNBase = true, RNNCellBase = true }

local function value(v) if type(v) == 'function' then return v() end return v end
local function required(sig)
  local r = {}
  for _, p in ipairs(sig) do if p.required then r[#r + 1] = p[1] end end
  return r
end
local function layout(m)
  local s = {}
  local sd = m:state_dict()
  for _, name in ipairs(sd:keys()) do s[#s + 1] = name .. ' ' .. table.concat(sd[name]:size(), 'x') end
  table.sort(s)
  return tostring(m) .. '\n' .. table.concat(s, '\n')
end

local classes = {}
for name, cls in pairs(nn) do
  if type(cls) == 'table' and rawget(cls, '__typename') == 'nn.' .. name and not NOT_OPTIONS[name] then
    classes[#classes + 1] = name
  end
end
table.sort(classes)

describe('nn module constructors', function()
  it('walks every module class that PyTorch 1.13 has too', function()
    assert.is_true(#classes > 120, #classes)
    local missing = {}
    for _, name in ipairs(classes) do
      if name:sub(1, 1) ~= '_' and not SIG[name] then missing[#missing + 1] = name end
    end
    assert.are.same({}, missing)
    for _, name in ipairs(classes) do
      local req = SIG[name] and required(SIG[name]) or {}
      if #req > 0 then assert.is_not_nil(EXAMPLE[name], 'no example for ' .. name) end
    end
  end)

  for _, name in ipairs(classes) do
    local sig = SIG[name]
    if sig then
      it(name .. ' takes its arguments by position or by name', function()
        local req = required(sig)
        local ex = EXAMPLE[name] or {}
        local pos = {}
        for i = 1, #req do pos[i] = value(ex[i]) end
        torch.manual_seed(0)
        local want = layout(nn[name](unpack(pos, 1, #req)))
        -- every required one by name
        local byname = {}
        for i, k in ipairs(req) do byname[k] = value(ex[i]) end
        if #req > 0 then
          assert.are.equal(want, layout(nn[name](byname)))
          -- the first by position, the rest by name
          local rest = {}
          for i = 2, #req do rest[req[i]] = value(ex[i]) end
          if #req > 1 then assert.are.equal(want, layout(nn[name](value(ex[1]), rest))) end
          -- one given both ways
          local twice = { [req[1]] = value(ex[1]) }
          H.errors_with(function() nn[name](value(ex[1]), twice) end,
            ("moontorch.nn.%s: __init__() got multiple values for argument '%s'"):format(name, req[1]))
          -- a missing one before one given by name
          if #req > 1 then
            H.errors_with(function() nn[name]({ [req[2]] = value(ex[2]) }) end,
              ("__init__() missing required argument '%s'"):format(req[1]))
          end
        end
        -- and every optional one PyTorch gives a default Lua can spell, by name at that default
        local all = {}
        for k, v in pairs(byname) do all[k] = v end
        for _, p in ipairs(sig) do
          if not p.required and p.default ~= nil then
            local d = p.default
            if ONE_BASED[p[1]] and type(d) == 'number' and d >= 0 then d = d + 1 end
            all[p[1]] = d
          end
        end
        if next(all) ~= nil then assert.are.equal(want, layout(nn[name](all))) end
      end)
    end
  end

  it('never shows a table address in a message', function()
    for _, f in ipairs({
      function() nn.Conv2d(3, 64, { 7, 7, 7 }) end,
      function() nn.Linear({ a = 1 }, 2) end,
      function() nn.Linear(2, nn.ReLU()) end,
      function() nn.ZeroPad2d({ 1, 2, 3 }) end,
      function() nn.BatchNorm2d(function() end) end,
      function() nn.Embedding(10, { 3 }) end,
    }) do
      local ok, err = pcall(f)
      assert.is_false(ok)
      assert.is_nil(tostring(err):find('0x%x'), err)
      assert.truthy(tostring(err):find('moontorch.nn.', 1, true), err)
    end
    H.errors_with(function() nn.Conv2d(3, 64, { 7, 7, 7 }) end, 'kernel_size must be an integer or a table of 2 integers (got {7, 7, 7})')
    H.errors_with(function() nn.Linear(2, nn.ReLU()) end, 'out_features must be a non-negative integer (got an nn.ReLU)')
  end)

  it('the issue\'s ports: ResNet stem, DCGAN, LSTM, GroupNorm by name', function()
    local conv = nn.Conv2d(3, 64, { kernel_size = 7, stride = 2, padding = 3, bias = false })
    assert.are.same({ 1, 64, 16, 16 }, conv(torch.randn(1, 3, 32, 32)):size())
    assert.is_nil(conv.bias)
    local up = nn.ConvTranspose2d({ in_channels = 100, out_channels = 64, kernel_size = 4, stride = 1, padding = 0,
      bias = false })
    assert.are.same({ 2, 64, 4, 4 }, up(torch.randn(2, 100, 1, 1)):size())
    local lstm = nn.LSTM({ input_size = 5, hidden_size = 7, num_layers = 2, batch_first = true })
    local out = lstm(torch.randn(3, 4, 5))
    assert.are.same({ 3, 4, 7 }, out:size())
    assert.are.same({ 2, 8 }, nn.GroupNorm({ num_groups = 2, num_channels = 8 })(torch.randn(2, 8)):size())
    assert.are.same({ 4, 3 }, nn.Embedding({ num_embeddings = 10, embedding_dim = 3 })(torch.tensor({ 1, 2, 3, 10 },
      { dtype = torch.int64 })):size())
  end)

  it('a subclass keeps it, through its own __init calling the parent\'s', function()
    local MyConv, Parent = torch.class('spec.MyConvOpts', nn.Conv2d)
    function MyConv:__init(c) Parent.__init(self, c, 8, { kernel_size = 3, padding = 1 }) end
    assert.are.same({ 1, 8, 5, 5 }, MyConv(2)(torch.randn(1, 2, 5, 5)):size())
    local Plain = torch.class('spec.PlainLinearOpts', nn.Linear)
    assert.are.same({ 3 }, Plain({ in_features = 2, out_features = 3 })(torch.randn(2)):size())
  end)
end)
