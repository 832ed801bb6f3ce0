-- moontorch writes no globals and reads none it does not define (a stray global read once left
-- RNNBase:_weights returning a global `ns`, and the REPL's sigint_interrupts read a global `sfd`
-- declared below it as a local). Checked twice: in the bytecode of every Lua file of the library
-- (no GSET; every GGET a standard Lua/LuaJIT global), and at run time in a fresh process whose _G
-- records every write and every read of a missing name while moontorch loads and every module
-- family runs a forward and a backward.
local H = require 'spec.support.helper'
local torch = H.torch
local bc = require 'jit.bc'

local standard = {}
for n in ([[_G _VERSION arg assert bit collectgarbage coroutine debug dofile error gcinfo getfenv getmetatable io
  ipairs jit load loadfile loadstring math module newproxy next os package pairs pcall print rawequal rawget
  rawlen rawset require select setfenv setmetatable string table tonumber tostring type unpack xpcall]]):gmatch('%S+') do
  standard[n] = true
end

-- the Lua files of the loaded library: the folder moontorch's init.lua is in, and below
local function library_files()
  local init = package.searchpath('moontorch', package.path)
  local dir = init:match('^(.*)/init%.lua$')
  local files = {}
  local p = io.popen("find -L " .. H.sh_quote(dir) .. " -name '*.lua' | sort")
  for f in p:lines() do files[#files + 1] = f end
  p:close()
  return dir, files
end

local function globals_of(path)
  local fn = assert(loadfile(path))
  local out = {}
  bc.dump(fn, { write = function(_, s) out[#out + 1] = s end, flush = function() end }, true)
  local text = table.concat(out)
  local gets, sets = {}, {}
  for n in text:gmatch('GGET[^\n]-; "([^"\n]+)"') do gets[n] = true end
  for n in text:gmatch('GSET[^\n]-; "([^"\n]+)"') do sets[n] = true end
  return gets, sets
end

describe('globals', function()
  it('no Lua file of the library sets a global or reads one Lua does not define (bytecode)', function()
    local dir, files = library_files()
    assert.is_true(#files > 100, 'found the library files in ' .. dir)
    local bad = {}
    for _, f in ipairs(files) do
      local gets, sets = globals_of(f)
      for n in pairs(sets) do bad[#bad + 1] = f:sub(#dir + 2) .. ' sets ' .. n end
      for n in pairs(gets) do
        if not standard[n] then bad[#bad + 1] = f:sub(#dir + 2) .. ' reads ' .. n end
      end
    end
    table.sort(bad)
    assert.are.same({}, bad)
  end)

  it('loading moontorch and running every module family writes and reads no stray global', function()
    local out, ok, err = H.run_lua([==[
local strays = {}
local function note(what, k)
  local where = debug.getinfo(3, 'Sl')
  strays[#strays + 1] = ('%s %s at %s:%s'):format(what, tostring(k), where and where.short_src or '?', where and where.currentline or '?')
end
setmetatable(_G, {
  __newindex = function(t, k, v) note('wrote', k) rawset(t, k, v) end,
  __index = function(_, k) note('read', k) end,
})
local torch = require 'moontorch'
local nn, F = torch.nn, torch.nn.functional
torch.manual_seed(0)
local r = torch.randn
local function img() return r(2, 3, 6, 6) end
local cases = {
  { nn.Linear(3, 2), r(4, 3) }, { nn.Bilinear(3, 2, 4), r(5, 3), r(5, 2) },
  { nn.Conv1d(3, 2, 3), r(2, 3, 7) }, { nn.Conv2d(3, 2, 3, { padding = 1 }), img() },
  { nn.Conv3d(3, 2, 2), r(1, 3, 4, 4, 4) }, { nn.ConvTranspose1d(3, 2, 3), r(2, 3, 5) },
  { nn.ConvTranspose2d(3, 2, 3, { stride = 2 }), img() }, { nn.ConvTranspose3d(3, 2, 2), r(1, 3, 3, 3, 3) },
  { nn.BatchNorm1d(3), r(4, 3) }, { nn.BatchNorm2d(3), img() }, { nn.BatchNorm3d(3), r(2, 3, 2, 2, 2) },
  { nn.InstanceNorm1d(3), r(2, 3, 5) }, { nn.InstanceNorm2d(3), img() }, { nn.GroupNorm(1, 3), img() },
  { nn.LayerNorm(6), img() }, { nn.LocalResponseNorm(2), img() },
  { nn.MaxPool1d(2), r(2, 3, 6) }, { nn.MaxPool2d(2), img() }, { nn.MaxPool3d(2), r(1, 3, 4, 4, 4) },
  { nn.AvgPool1d(2), r(2, 3, 6) }, { nn.AvgPool2d(2), img() }, { nn.AvgPool3d(2), r(1, 3, 4, 4, 4) },
  { nn.AdaptiveAvgPool1d(2), r(2, 3, 6) }, { nn.AdaptiveAvgPool2d(2), img() }, { nn.AdaptiveAvgPool3d(2), r(1, 3, 4, 4, 4) },
  { nn.AdaptiveMaxPool1d(2), r(2, 3, 6) }, { nn.AdaptiveMaxPool2d(2), img() }, { nn.AdaptiveMaxPool3d(2), r(1, 3, 4, 4, 4) },
  { nn.LPPool1d(2, 2), r(2, 3, 6) }, { nn.LPPool2d(2, 2), img() },
  { nn.ConstantPad1d(1, 0.5), r(2, 3, 4) }, { nn.ConstantPad2d(1, 0.5), img() }, { nn.ConstantPad3d(1, 0.5), r(1, 3, 2, 2, 2) },
  { nn.ReflectionPad1d(1), r(2, 3, 4) }, { nn.ReflectionPad2d(1), img() }, { nn.ReflectionPad3d(1), r(1, 3, 2, 2, 2) },
  { nn.ReplicationPad1d(1), r(2, 3, 4) }, { nn.ReplicationPad2d(1), img() }, { nn.ReplicationPad3d(1), r(1, 3, 2, 2, 2) },
  { nn.ZeroPad2d(1), img() }, { nn.PixelShuffle(2), r(1, 4, 2, 2) }, { nn.PixelUnshuffle(2), img() },
  { nn.ChannelShuffle(3), r(1, 6, 2, 2) }, { nn.Unflatten(2, { 1, 3 }), r(2, 3) },
  { nn.Unfold(2), img() }, { nn.Fold({ 3, 3 }, 2), r(1, 12, 4) }, { nn.Threshold(0.1, 0), img() },
  { nn.Flatten(), img() }, { nn.Identity(), img() }, { nn.Dropout(0.5), img() }, { nn.Dropout2d(0.5), img() },
  { nn.Softmax(2), r(2, 3) }, { nn.LogSoftmax(2), r(2, 3) }, { nn.GELU(), r(2, 3) }, { nn.PReLU(), r(2, 3) },
  { nn.RNN(3, 4, 2), r(5, 2, 3) }, { nn.RNN(3, 4, { bidirectional = true, batch_first = true }), r(2, 5, 3) },
  { nn.LSTM(3, 4, { num_layers = 2, proj_size = 2 }), r(5, 2, 3) }, { nn.GRU(3, 4, { bidirectional = true }), r(5, 2, 3) },
  { nn.RNNCell(3, 4), r(2, 3) }, { nn.LSTMCell(3, 4), r(2, 3) }, { nn.GRUCell(3, 4), r(2, 3) },
  { nn.MultiheadAttention(4, 2), r(3, 2, 4), r(3, 2, 4), r(3, 2, 4) },
  { nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, { dim_feedforward = 8 }), 2), r(3, 2, 4) },
  { nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, { dim_feedforward = 8 }), 1), r(3, 2, 4), r(3, 2, 4) },
  { nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1)), r(2, 3) },
  { nn.Embedding(5, 3), torch.tensor({ 1, 2, 4 }, { dtype = torch.int64 }) },
  { nn.EmbeddingBag(5, 3), torch.tensor({ { 1, 2 }, { 4, 5 } }, { dtype = torch.int64 }) },
}
local function total(y)
  if torch.is_tensor(y) then return y:sum() end
  local s = 0
  for _, v in ipairs(y) do local t = total(v) if t then s = s + t end end
  return s
end
for i, c in ipairs(cases) do
  local m = c[1]
  local args = {}
  for k = 2, #c do
    local x = c[k]
    if x:is_floating_point() then x = x:requires_grad_() end
    args[#args + 1] = x
  end
  total({ m(unpack(args)) }):backward()
end
-- losses, functional, optimizers, schedulers, clipping, save/load
local x, t = r(4, 3):requires_grad_(), torch.tensor({ 1, 3, 2, 1 }, { dtype = torch.int64 })
for _, l in ipairs({ nn.CrossEntropyLoss(), nn.NLLLoss(), nn.MultiMarginLoss() }) do l(x, t):backward() end
for _, l in ipairs({ nn.MSELoss(), nn.L1Loss(), nn.SmoothL1Loss(), nn.HuberLoss(), nn.BCEWithLogitsLoss(), nn.KLDivLoss(),
  nn.SoftMarginLoss(), nn.MultiLabelSoftMarginLoss() }) do l(x, r(4, 3):sigmoid()):backward() end
F.interpolate(img():requires_grad_(), { scale_factor = 2, mode = 'bilinear' }):sum():backward()
local model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
for _, mk in ipairs({ torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.RMSprop, torch.optim.Adagrad }) do
  local opt = mk(model:parameters(), { lr = 0.01 })
  local sched = torch.optim.lr_scheduler.StepLR(opt, 1)
  opt:zero_grad()
  model(r(2, 3)):sum():backward()
  nn.utils.clip_grad_norm_(model:parameters(), 1.0)
  opt:step()
  sched:step()
end
local path = os.tmpname()
torch.save(model:state_dict(), path)
model:load_state_dict(torch.load(path))
os.remove(path)
local gm = torch.fx.symbolic_trace(model)
gm(r(2, 3))
print(#strays .. ' strays')
for _, s in ipairs(strays) do print(s) end
]==])
    assert.is_true(ok, err)
    assert.are.equal('0 strays\n', out)
  end)
end)
