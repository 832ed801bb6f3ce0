-- torch.onnx.export (lua/interop/onnx_export.lua, core/formats/onnx.c's mt_onnx_write): the models
-- of issue 26 and the layers people export, written as ONNX files that Debian's python3-onnx
-- (/usr/bin/python3, onnx 1.12) accepts with onnx.checker.check_model(full_check=True) (its strict
-- shape inference included), read back by our torch.onnx.load with the module's outputs (1e-5), and
-- run on another batch where the batch is a dynamic axis. (onnx 1.12 has no reference evaluator, and
-- ONNX Runtime is not a test dependency: bench/ compares with it where it is installed.)
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local C = require('moontorch.ffi').C

local built = C.mt_onnx_built() ~= 0
local dir = os.tmpname()
os.remove(dir)
os.execute("mkdir -p '" .. dir .. "'")
local function path(name) return dir .. '/' .. name .. '.onnx' end

-- python3-onnx's checker on the files: { [file] = 'ok' or its message }
local PY = [[
import sys
try:
    import onnx
except ImportError:
    print('NO_ONNX'); sys.exit(0)
for p in sys.argv[1:]:
    try:
        m = onnx.load(p)
        onnx.checker.check_model(m, full_check=True)
        print('ok', p)
    except Exception as e:
        print('FAIL', p, str(e).replace('\n', ' '))
]]
local function check_files(files)
  local script = dir .. '/check.py'
  H.write_file(script, PY)
  local cmd = '/usr/bin/python3 ' .. H.sh_quote(script)
  for _, f in ipairs(files) do cmd = cmd .. ' ' .. H.sh_quote(f) end
  local p = io.popen(cmd .. ' 2>&1')
  local out = p:read('*a')
  p:close()
  if out:match('NO_ONNX') or out == '' then return nil, out end
  local r = {}
  for line in out:gmatch('[^\n]+') do
    local st, f, msg = line:match('^(%a+) (%S+)%s*(.*)$')
    if st then r[f] = st == 'ok' and 'ok' or msg end
  end
  return r, out
end

local Block, Module = torch.class('spec_onnx_export.ResBlock', 'nn.Module')
function Block:__init(c)
  Module.__init(self)
  self.conv1 = nn.Conv2d(c, c, 3, { padding = 1, bias = false })
  self.bn1 = nn.BatchNorm2d(c)
  self.conv2 = nn.Conv2d(c, c, 3, { padding = 1, bias = false })
  self.bn2 = nn.BatchNorm2d(c)
  self.relu = nn.ReLU()
end
function Block:forward(x)
  local out = self.relu(self.bn1(self.conv1(x)))
  out = self.bn2(self.conv2(out))
  return self.relu(out + x)
end

-- LeNet written the usual way: x:view(x:size(1), -1) (a size read from the batch)
local LeNet, LM = torch.class('spec_onnx_export.LeNet', 'nn.Module')
function LeNet:__init()
  LM.__init(self)
  self.c1, self.c2 = nn.Conv2d(1, 6, 5), nn.Conv2d(6, 16, 5)
  self.pool = nn.MaxPool2d(2)
  self.f1, self.f2, self.f3 = nn.Linear(256, 120), nn.Linear(120, 84), nn.Linear(84, 10)
end
function LeNet:forward(x)
  x = self.pool(self.c1(x):relu())
  x = self.pool(torch.relu(self.c2(x)))
  x = x:view(x:size(1), -1)
  return self.f3(self.f2(self.f1(x):relu()):relu())
end

-- the other layers: Conv1d, BatchNorm1d, pools, GroupNorm, activations, Dropout, cat/permute/matmul
local Mixed, MM = torch.class('spec_onnx_export.Mixed', 'nn.Module')
function Mixed:__init()
  MM.__init(self)
  self.conv = nn.Conv1d(3, 8, 3, { padding = 1 })
  self.bn = nn.BatchNorm1d(8)
  self.gn = nn.GroupNorm(2, 8)
  self.pool = nn.AvgPool1d(2)
  self.mpool = nn.MaxPool1d(3, { stride = 2, padding = 1 })
  self.adapt = nn.AdaptiveAvgPool1d(3)
  self.act1, self.act2, self.act3 = nn.LeakyReLU(0.2), nn.SiLU(), nn.GELU({ approximate = 'tanh' })
  self.act4, self.act5, self.act6 = nn.GELU(), nn.ELU(), nn.Hardtanh(-0.5, 0.5)
  self.drop = nn.Dropout(0.3)
  self.ln = nn.LayerNorm(6)
  self.sm = nn.Softmax(-1)
end
function Mixed:forward(x)
  local y = self.act1(self.bn(self.conv(x)))
  y = self.gn(self.act2(y))
  local a = self.adapt(self.pool(self.act3(y)))  -- (N, 8, 3)
  local b = self.adapt(self.mpool(self.act4(y))) -- (N, 8, 3)
  local c = torch.cat({ a, self.act5(b) }, 3)    -- (N, 8, 6)
  c = self.drop(self.ln(c))
  local d = torch.matmul(c, c:permute(1, 3, 2))  -- (N, 8, 8)
  return self.sm(self.act6(d * 0.5 - 1)):flatten(2)
end

local Seq, SM = torch.class('spec_onnx_export.Tokens', 'nn.Module')
function Seq:__init()
  SM.__init(self)
  self.emb = nn.Embedding(20, 8)
  self.attn = nn.MultiheadAttention(8, 2, { batch_first = true })
end
function Seq:forward(idx)
  local e = self.emb(idx)
  local out, w = self.attn(e, e, e)
  return out:transpose(1, 2):contiguous(), w
end

-- an LSTM or GRU and what it returns: the output and the final states
local Rec, RecM = torch.class('spec_onnx_export.Recurrent', 'nn.Module')
function Rec:__init(rnn) RecM.__init(self); self.rnn = rnn end
function Rec:forward(x, hx)
  local out, h = self.rnn(x, hx)
  if self.rnn.mode == 'LSTM' then return out, h[1], h[2] end
  return out, h
end

local function models()
  torch.manual_seed(7)
  local m = {}
  m.mlp = { nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4)), { torch.randn(3, 6) } }
  m.lenet = { LeNet(), { torch.randn(2, 1, 28, 28) } }
  m.lenet_seq = { nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
    nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
    nn.Linear(84, 10)), { torch.randn(2, 1, 28, 28) } }
  local rb = Block(4)
  for _, bn in ipairs({ rb.bn1, rb.bn2 }) do
    bn.running_mean:uniform_(-0.5, 0.5)
    bn.running_var:uniform_(0.5, 1.5)
    torch.no_grad(function() bn.weight:uniform_(0.5, 1.5); bn.bias:uniform_(-0.2, 0.2) end)
  end
  m.resblock = { rb, { torch.randn(2, 4, 8, 8) } }
  m.encoder = { nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16 }), { torch.randn(4, 2, 8) } }
  m.encoder_bf = { nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, batch_first = true, norm_first = true,
    activation = 'gelu' }), { torch.randn(2, 5, 8) } }
  local mixed = Mixed()
  mixed.bn.running_mean:uniform_(-0.5, 0.5)
  mixed.bn.running_var:uniform_(0.5, 1.5)
  m.mixed = { mixed, { torch.randn(2, 3, 12) } }
  m.tokens = { Seq(), { torch.tensor({ { 1, 4, 7, 19, 20 }, { 3, 3, 2, 5, 11 } }, { dtype = torch.int64 }) } }
  m.lstm = { Rec(nn.LSTM(4, 5)), { torch.randn(3, 2, 4) } }
  m.lstm2 = { Rec(nn.LSTM(4, 5, { num_layers = 2, bidirectional = true, batch_first = true })), { torch.randn(2, 3, 4) } }
  m.gru = { Rec(nn.GRU(4, 5, { num_layers = 2, bidirectional = true })), { torch.randn(3, 2, 4) } }
  for _, e in pairs(m) do e[1]:eval() end
  return m
end

local ORDER = { 'mlp', 'lenet', 'lenet_seq', 'resblock', 'encoder', 'encoder_bf', 'mixed', 'tokens', 'lstm', 'lstm2',
  'gru' }
-- the batch dim of each model's first input, made dynamic (those without batch_first: dim 2)
local BATCH = { encoder = 2, lstm = 2, gru = 2 }

describe('ONNX export (torch.onnx.export)', function()
  teardown(function() os.execute("rm -rf '" .. dir .. "'") end)
  if not built then
    it('this build has no ONNX: export and load say so', function()
      H.errors_with(function() torch.onnx.export(nn.Linear(2, 2), torch.randn(1, 2), path('x')) end,
        'onnx.export: this moontorch was built without ONNX')
      pending('built without ONNX (-DMT_ONNX=OFF or protobuf-c missing): only the error is checked')
    end)
    return
  end
  local M = models()

  it('the models and layers export, load back with torch.onnx.load and give the module\'s outputs (1e-5)', function()
    for _, name in ipairs(ORDER) do
      local m, ins = M[name][1], M[name][2]
      local n = torch.onnx.export(m, ins, path(name))
      assert.is_true(n > 0, name)
      local gm = torch.onnx.load(path(name))
      local want = { m(unpack(ins)) }
      local got = { gm(unpack(ins)) }
      assert.are.equal(#want, #got, name)
      for i = 1, #want do
        assert.are.same(want[i]:size(), got[i]:size(), name)
        H.near(got[i], want[i], 1e-5, 1e-5)
      end
    end
  end)

  it('the files pass python3-onnx\'s onnx.checker.check_model(full_check=True)', function()
    local files = {}
    for _, name in ipairs(ORDER) do
      files[#files + 1] = path(name)
      torch.onnx.export(M[name][1], M[name][2], path(name))
      local b = BATCH[name] or 1
      files[#files + 1] = path(name .. '_dyn')
      torch.onnx.export(M[name][1], M[name][2], path(name .. '_dyn'),
        { dynamic_axes = { input = { [b] = 'batch' } } })
    end
    local r, out = check_files(files)
    if not r then
      pending('python3-onnx is not installed for /usr/bin/python3 (./run ensure_deps installs it): ' .. out)
      return
    end
    for _, f in ipairs(files) do
      assert.are.equal('ok', r[f], f .. ': ' .. tostring(r[f]))
    end
  end)

  it('dynamic_axes: the batch is symbolic (dim_param) and the file runs another batch', function()
    for _, name in ipairs(ORDER) do
      local m, ins = M[name][1], M[name][2]
      local b = BATCH[name] or 1
      local p = path(name .. '_dyn')
      torch.onnx.export(m, ins, p, { dynamic_axes = { input = { [b] = 'batch' } } })
      local gm = torch.onnx.load(p)
      -- another batch: the example's rows and the first again
      local x = ins[1]
      local bigger = torch.cat({ x, x:narrow(b, 1, 1), x:narrow(b, 1, 1) }, b)
      local other = { bigger, unpack(ins, 2) }
      local want = { m(unpack(other)) }
      local got = { gm(unpack(other)) }
      for i = 1, #want do
        assert.are.same(want[i]:size(), got[i]:size(), name)
        H.near(got[i], want[i], 1e-5, 1e-5)
      end
    end
    -- the batch dim is written as a dim_param: its name is in the file, and a fixed export has none
    local f = H.read_file(path('mlp_dyn'))
    assert.is_truthy(f:find('batch', 1, true))
    assert.is_falsy(H.read_file(path('mlp')):find('batch', 1, true))
  end)

  it('input_names, output_names, {dim, ...} dynamic axes, opset 13 (layer norm as its arithmetic)', function()
    local m, ins = M.encoder_bf[1], M.encoder_bf[2]
    local p = path('named')
    torch.onnx.export(m, ins, p, { opset = 13, input_names = { 'tokens' }, output_names = { 'hidden' },
      dynamic_axes = { tokens = { 1, 2 }, hidden = { [1] = 'N', [2] = 'L' } } })
    local f = H.read_file(p)
    for _, s in ipairs({ 'tokens', 'hidden', 'tokens_dim_1', 'tokens_dim_2', 'N', 'L' }) do
      assert.is_truthy(f:find(s, 1, true), s)
    end
    assert.is_falsy(f:find('LayerNormalization', 1, true))
    local gm = torch.onnx.load(p)
    local x = torch.randn(3, 7, 8)
    H.near(gm(x), m(x), 1e-5, 1e-5)
    local r = check_files({ p })
    if r then assert.are.equal('ok', r[p], tostring(r[p])) end
  end)

  it('LSTM and GRU: ONNX\'s gate orders, initial states from the inputs, a sequence length of its own', function()
    torch.manual_seed(11)
    for _, rnn in ipairs({ nn.LSTM(3, 4, { num_layers = 2 }), nn.GRU(3, 4, { bidirectional = true, bias = false }) }) do
      local m = Rec(rnn):eval()
      local x = torch.randn(5, 2, 3)
      local dirs = rnn.bidirectional and 2 or 1
      local h0 = torch.randn(rnn.num_layers * dirs, 2, 4)
      local hx = rnn.mode == 'LSTM' and { h0, torch.randn(rnn.num_layers * dirs, 2, 4) } or h0
      local p = path('rnn_h0')
      local ins = rnn.mode == 'LSTM' and { x, hx } or { x, hx }
      -- (an LSTM's {h0, c0} is one argument of forward: traced as given)
      torch.onnx.export(m, ins, p, { dynamic_axes = { input_1 = { [1] = 'steps' } } })
      local f = H.read_file(p)
      assert.is_truthy(f:find(rnn.mode, 1, true))
      local gm = torch.onnx.load(p)
      local longer = torch.randn(8, 2, 3)
      local want, got = { m(longer, hx) }, { gm(longer, unpack(rnn.mode == 'LSTM' and hx or { hx })) }
      assert.are.equal(#want, #got)
      for i = 1, #want do H.near(got[i], want[i], 1e-5, 1e-5) end
      local r = check_files({ p })
      if r then assert.are.equal('ok', r[p], tostring(r[p])) end
    end
  end)

  it('the weights are initializers named after the parameters, written once', function()
    local p = path('mlp')
    torch.onnx.export(M.mlp[1], M.mlp[2], p)
    local gm = torch.onnx.load(p)
    local sd = gm:state_dict()
    H.near(sd['v_0_weight'], M.mlp[1][1].weight, 0, 0)
    H.near(sd['v_2_bias'], M.mlp[1][3].bias, 0, 0)
    -- a layer used twice: its weight once in the file
    local lin = nn.Linear(4, 4)
    local Twice, TM = torch.class('spec_onnx_export.Twice', 'nn.Module')
    function Twice:__init() TM.__init(self); self.lin = lin end
    function Twice:forward(x) return self.lin(self.lin(x)) end
    local t = Twice():eval()
    torch.onnx.export(t, torch.randn(2, 4), path('twice'))
    local n = 0
    for k in pairs(torch.onnx.load(path('twice')):state_dict()) do n = n + 1 end
    assert.are.equal(2, n)
  end)

  describe('what cannot be exported is an error naming it, at the caller\'s line', function()
    it('a layer without an ONNX lowering, a training-mode layer, a bad option', function()
      local m = nn.Sequential(nn.Linear(4, 4), nn.PReLU())
      m:eval()
      H.errors_with(function() torch.onnx.export(m, torch.randn(2, 4), path('bad')) end,
        'onnx.export: nn.PReLU (at 1) cannot be exported to ONNX')
      local d = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
      H.errors_with(function() torch.onnx.export(d, torch.randn(2, 4), path('bad')) end,
        'onnx.export: nn.Dropout in training mode')
      H.errors_with(function() torch.onnx.export(M.mlp[1], M.mlp[2], path('bad'), { opset = 9 }) end,
        'onnx.export: opset 9')
      H.errors_with(function() torch.onnx.export(M.mlp[1], M.mlp[2], path('bad'), { dynamic_axes = { x = { 1 } } }) end,
        "onnx.export: dynamic_axes names 'x'")
      H.errors_with(function() torch.onnx.export(M.mlp[1], { 'x' }, path('bad')) end, 'onnx.export: example input 1')
      H.errors_with(function() torch.onnx.export(M.mlp[1], M.mlp[2], '/nonexistent-dir/x.onnx') end,
        'onnx.export: /nonexistent-dir/x.onnx: cannot open the file for writing')
      -- the error is raised at the caller's line
      local ok, err = pcall(function() torch.onnx.export(m, torch.randn(2, 4), path('bad')) end)
      assert.is_false(ok)
      assert.is_truthy(err:find('onnx_export_spec.lua', 1, true), err)
    end)
    it('a reshape that cannot follow a dynamic batch', function()
      local R, RM = torch.class('spec_onnx_export.FixedView', 'nn.Module')
      function R:__init() RM.__init(self); self.lin = nn.Linear(6, 3) end
      function R:forward(x) return self.lin(x):view(6) end -- (2, 3) -> 6: the batch folded into a fixed size
      local r = R():eval()
      H.errors_with(function() torch.onnx.export(r, torch.randn(2, 6), path('bad'), {
        dynamic_axes = { input = { 1 } } }) end, 'onnx.export: Reshape does not follow the dynamic axes')
    end)
  end)

  it('an ONNX op form torch.onnx.load does not run is an error naming the op and the node', function()
    -- a Slice with steps 2, made with python3-onnx's onnx.helper
    local p = path('slice2')
    local script = dir .. '/slice.py'
    H.write_file(script, [[
import sys
try:
    import onnx
    from onnx import helper, TensorProto
except ImportError:
    print('NO_ONNX'); sys.exit(0)
ints = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [len(v)], v)
g = helper.make_graph([helper.make_node('Slice', ['x', 's', 'e', 'a', 'st'], ['y'], name='the_slice')], 'g',
    [helper.make_tensor_value_info('x', TensorProto.FLOAT, [4, 6])],
    [helper.make_tensor_value_info('y', TensorProto.FLOAT, [4, 3])],
    [ints('s', [0]), ints('e', [6]), ints('a', [1]), ints('st', [2])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), sys.argv[1])
print('made')
]])
    local f = io.popen('/usr/bin/python3 ' .. H.sh_quote(script) .. ' ' .. H.sh_quote(p) .. ' 2>&1')
    local out = f:read('*a')
    f:close()
    if not out:match('made') then pending('python3-onnx is not installed for /usr/bin/python3: ' .. out); return end
    local gm = torch.onnx.load(p)
    H.errors_with(function() return gm(torch.randn(4, 6)) end,
      'moontorch.onnx.Slice: the_slice: Slice with a step other than 1')
  end)
end)
