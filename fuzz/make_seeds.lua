-- fuzz/make_seeds.lua: seed files for the fuzzers, written by torch.save and
-- torch.save_safetensors themselves (so they follow the writers: a format change cannot leave
-- stale seeds behind).
--
--   bin/moontorch fuzz/make_seeds.lua [DIR]   writes DIR/fuzz_checkpoint/seed-*,
--                                             DIR/fuzz_safetensors/seed-* (DIR: fuzz/corpus) and
--                                             DIR/fuzz_pytorch/seed-* (PyTorch's files, copied),
--                                             DIR/fuzz_t7/seed-* (Torch7's, spec/support/t7_writer.lua),
--                                             DIR/fuzz_program/seed-* (torch.export's programs),
--                                             DIR/fuzz_onnx/seed-* (ONNX files, copied)
-- As a module (dofile), it gives the objects to fuzz/lua_load_use.lua: M.checkpoints() and
-- M.safetensors(), lists of { name =, obj =, [module =] function making a module whose
-- state_dict the object is, [metadata =] }.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'

local M = {}

local all_dtypes = { torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.float32,
  torch.float64, torch.bool, torch.bfloat16 }

-- small values of every kind a dtype holds (negative, fractional, large, inf, nan where it can)
local function every_dtype()
  local t = {}
  local vals = { 0, 1, -2, 3.5, 100, -0.25, 1e30, -1 / 0, 0 / 0, 65504, 2 ^ 40, -(2 ^ 31) }
  for _, d in ipairs(all_dtypes) do
    local v = {}
    for i, x in ipairs(vals) do
      if d == torch.bool then v[i] = x ~= 0
      elseif d.is_floating_point then v[i] = x
      elseif x ~= x or x == 1 / 0 or x == -1 / 0 or math.abs(x) > 1e9 then v[i] = i
      elseif d == torch.uint8 then v[i] = math.abs(math.floor(x)) % 256
      else v[i] = math.floor(x) % 100 - 50 end
    end
    t[d.name] = torch.tensor(v, { dtype = d }):reshape(3, 4)
  end
  return t
end

local function net()
  torch.manual_seed(0)
  return nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.ReLU(), nn.Linear(3, 2))
end

-- objects for torch.save
function M.checkpoints()
  local list = {}
  local function add(name, obj, module) list[#list + 1] = { name = name, obj = obj, module = module } end
  add('state_dict', net():state_dict(), net)
  add('module', net())
  -- an optimizer after a step (momentum buffers), with its model
  local m = nn.Linear(3, 2)
  local opt = optim.SGD(m:parameters(), { lr = 0.1, momentum = 0.9 })
  m(torch.randn(4, 3)):sum():backward()
  opt:step()
  add('optimizer', { model = m, opt = opt, sd = opt:state_dict() })
  add('every_dtype', every_dtype())
  -- views of one storage: narrowed, transposed, selected, expanded (stride 0), a 0-dim element
  local base = torch.arange(0, 24, { dtype = torch.float32 }):reshape(4, 6)
  add('views', { base = base, t = base:t(), n = base:narrow(2, 2, 3), s = base:select(1, 3),
    e = torch.tensor({ 7 }, { dtype = torch.float64 }):expand(5), item = base[2][3],
    d = base:view(-1):narrow(1, 5, 10) })
  add('empty', { torch.empty(0), torch.empty({ 2, 0, 3 }, { dtype = torch.int16 }),
    torch.tensor(2.5, { dtype = torch.float64 }), torch.tensor(true), torch.empty(0, { dtype = torch.bfloat16 }) })
  -- plain Lua values: nested tables, a cycle, shared references, keys of every kind, odd numbers
  local shared = { 'shared' }
  local nested = { a = { b = { c = { d = { 1, 2, { 3 } } } } }, shared, shared, [true] = false, [1.5] = 'x',
    ['bin\0ary\255'] = 'a\0b', n = { 1 / 0, -1 / 0, 0 / 0, -0.0, 1e-310, 2 ^ 53 + 1 } }
  nested.self = nested
  add('nested', nested)
  add('params', { w = nn.Parameter(torch.randn(3, 2)), frozen = nn.Parameter(torch.randn(2), false),
    leaf = torch.randn(2):requires_grad_(true), od = torch.OrderedDict { { 'x', torch.ones(2) }, { 'y', 3 } } })
  add('number', 42.5)
  add('string', 'hello')
  add('nil', nil)
  return list
end

-- tensors (and metadata) for torch.save_safetensors
function M.safetensors()
  local list = {}
  local function add(name, obj, metadata, module)
    list[#list + 1] = { name = name, obj = obj, metadata = metadata, module = module }
  end
  add('state_dict', net():state_dict(), { format = 'pt' }, net)
  add('every_dtype', every_dtype())
  local base = torch.arange(0, 12, { dtype = torch.float32 }):reshape(3, 4)
  add('views_and_empty', { t = base:t(), n = base:narrow(2, 2, 2), s = torch.tensor(2.5, { dtype = torch.float64 }),
    b = torch.tensor(true), e = torch.empty(0, 4), e3 = torch.empty({ 2, 0, 3 }, { dtype = torch.int16 }) }, {})
  add('names', { ['a"b'] = torch.ones(1), ['c\\d'] = torch.zeros(2, { dtype = torch.uint8 }), ['e\nf\1'] = torch.ones(1),
    ['\230\151\165\230\156\172'] = torch.ones(1, { dtype = torch.int64 }), ['\240\159\152\128'] = torch.ones(1),
    [''] = torch.zeros(1, { dtype = torch.float16 }) },
    { ['k\195\169'] = 'caf\195\169 "q" \\ \n\t\1', [''] = '', format = 'pt' })
  add('none', {}, nil)
  return list
end

-- A header written by other tools: pretty-printed, metadata last, fields in another order, a field
-- moontorch does not know, \u escapes (the format's README example style).
local function foreign_safetensors()
  local header = '{\n  "w": {"shape": [2], "dtype": "F32", "data_offsets": [0, 8], "extra": [null, true, -1.5e3]},\n'
    .. '  "\\u0041\\u00e9": {"dtype": "BF16", "shape": [1, 1], "data_offsets": [8, 10]},\n'
    .. '  "__metadata__": {"format": "pt", "k\\ud83d\\ude00": "\\/"}\n}'
  local n, b = #header, {}
  for i = 1, 8 do b[i] = string.char(n % 256); n = math.floor(n / 256) end
  return table.concat(b) .. header .. string.char(0, 0, 0xC0, 0x3F, 0, 0, 0, 0xC0, 0x00, 0xBF)
end

function M.write(dir)
  local function mkdir(d) os.execute(("mkdir -p '%s'"):format(d)) end
  local ck, st = dir .. '/fuzz_checkpoint', dir .. '/fuzz_safetensors'
  mkdir(ck)
  mkdir(st)
  local n = 0
  for _, e in ipairs(M.checkpoints()) do
    torch.save(e.obj, ck .. '/seed-' .. e.name, { sync = false })
    n = n + 1
  end
  for _, e in ipairs(M.safetensors()) do
    torch.save_safetensors(e.obj, st .. '/seed-' .. e.name, e.metadata, { sync = false })
    n = n + 1
  end
  local f = assert(io.open(st .. '/seed-foreign', 'wb'))
  f:write(foreign_safetensors())
  f:close()
  assert(torch.load_safetensors(st .. '/seed-foreign').w:tolist()[2] == -2)
  n = n + 1
  -- PyTorch's own files (fuzz_pytorch): the ones PyTorch 1.13 wrote for spec/pytorch_files_spec.lua,
  -- zip archives and legacy files, those under 16 KB (LeNet's weights would only slow each run)
  local pt = dir .. '/fuzz_pytorch'
  mkdir(pt)
  local ls = io.popen("ls spec/support/pytorch/ 2>/dev/null")
  for name in ls:lines() do
    local src = io.open('spec/support/pytorch/' .. name, 'rb')
    local bytes = src and src:read('*a')
    if src then src:close() end
    if name:match('%.pt$') and bytes and #bytes < 16384 then
      local out = assert(io.open(pt .. '/seed-' .. name, 'wb'))
      out:write(bytes)
      out:close()
      n = n + 1
    end
  end
  ls:close()
  -- ONNX files (fuzz_onnx): PyTorch 1.13's exports and the refused ones of spec/onnx_spec.lua, under 16 KB
  local ox = dir .. '/fuzz_onnx'
  mkdir(ox)
  ls = io.popen("ls spec/support/onnx/ 2>/dev/null")
  for name in ls:lines() do
    local src = io.open('spec/support/onnx/' .. name, 'rb')
    local bytes = src and src:read('*a')
    if src then src:close() end
    if name:match('%.onnx$') and bytes and #bytes < 16384 then
      local out = assert(io.open(ox .. '/seed-' .. name, 'wb'))
      out:write(bytes)
      out:close()
      n = n + 1
    end
  end
  ls:close()
  -- and torch.onnx.export's own files (where this build writes ONNX): an MLP with a dynamic batch, a
  -- CNN (Conv, BatchNormalization, MaxPool, GlobalAveragePool, Flatten), a transformer layer (opset 13)
  if require('moontorch.ffi').C.mt_onnx_built() ~= 0 then
    torch.manual_seed(5)
    local cnn = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.MaxPool2d(2),
      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2, 3)):eval()
    local exports = {
      { 'mlp', nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 2)):eval(), torch.randn(2, 3),
        { dynamic_axes = { input = { 1 } } } },
      { 'cnn', cnn, torch.randn(1, 1, 6, 6) },
      { 'encoder', nn.TransformerEncoderLayer(4, 2, { dim_feedforward = 4 }):eval(), torch.randn(3, 1, 4), { opset = 13 } },
    }
    for _, e in ipairs(exports) do
      torch.onnx.export(e[2], e[3], ox .. '/seed-export-' .. e[1] .. '.onnx', e[4])
      n = n + 1
    end
  end
  -- Torch7's files (fuzz_t7): written by the specs' writer of Torch7's layout, in its three forms
  local t7 = dir .. '/fuzz_t7'
  mkdir(t7)
  local ok, W = pcall(dofile, 'spec/support/t7_writer.lua')
  if ok then
    local F = function(sizes, values, o) return W.tensor('Float', sizes, values, o) end
    local st = W.storage('Double', { 1, 2, 3, 4, 5, 6 })
    local values = { n = 2.5, s = 'str', b = true, list = { 1, 2, 3 },
      t = { W.tensor('Byte', { 2 }, { 1, 2 }), W.tensor('Char', { 1 }, { -1 }), W.tensor('Short', { 1 }, { 3 }),
        W.tensor('Int', { 1 }, { 4 }), W.tensor('Long', { 2 }, { 5, -6 }), W.tensor('Half', { 1 }, { 0.5 }),
        W.tensor('Cuda', { 1 }, { 1 }), W.tensor('Double', { 2, 3 }, nil, { storage = st }),
        W.tensor('Double', { 3, 2 }, nil, { storage = st, strides = { 1, 3 } }), W.tensor('Float', {}, nil) },
      fn = W.func(string.dump(function() return 1 end), { { name = 'x', id = 1, value = 2 } }) }
    values.self = values
    local model = W.module('nn.Sequential', { modules = {
      W.module('nn.SpatialConvolutionMM', { nInputPlane = 1, nOutputPlane = 1, kW = 2, kH = 2, dW = 1, dH = 1, padW = 0,
        padH = 0, weight = F({ 1, 4 }, { 1, 2, 3, 4 }), bias = F({ 1 }, { 0 }) }),
      W.module('nn.SpatialBatchNormalization', { eps = 1e-5, running_mean = F({ 1 }, { 0 }), running_var = F({ 1 }, { 1 }),
        weight = F({ 1 }, { 1 }), bias = F({ 1 }, { 0 }) }),
      W.module('nn.View', { size = W.storage('Long', { -1 }), numElements = 1 }),
      W.module('nn.Linear', { weight = F({ 2, 4 }, { 1, 2, 3, 4, 5, 6, 7, 8 }), bias = F({ 2 }, { 0, 1 }) }) } })
    for name, obj in pairs({ values = values, model = model }) do
      for form, o in pairs({ b64 = {}, b32 = { long_size = 4 }, ascii = { ascii = true } }) do
        local out = assert(io.open(t7 .. '/seed-' .. name .. '-' .. form, 'wb'))
        out:write(W.serialize(obj, o))
        out:close()
        n = n + 1
      end
    end
  end
  -- programs (fuzz_program): torch.export of small models
  local pg = dir .. '/fuzz_program'
  mkdir(pg)
  torch.manual_seed(0)
  local nn = require 'moontorch.nn'
  local programs = {
    mlp = { nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2), nn.Softmax(2)), torch.randn(3, 4) },
    conv = { nn.Sequential(nn.Conv2d(2, 3, 3, { padding = 1 }), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2),
      nn.AvgPool2d(2), nn.Flatten(), nn.Linear(3, 2)), torch.randn(1, 2, 4, 4) },
    encoder = { nn.TransformerEncoderLayer(4, 2, { dim_feedforward = 8 }), torch.randn(3, 1, 4) },
  }
  for name, e in pairs(programs) do
    e[1]:eval()
    torch.export(e[1], { e[2] }, pg .. '/seed-' .. name)
    n = n + 1
  end
  return n
end

if arg and arg[0] and arg[0]:match('make_seeds%.lua$') then
  local dir = arg[1] or 'fuzz/corpus'
  print(('make_seeds: %d seed files under %s'):format(M.write(dir), dir))
end
return M
