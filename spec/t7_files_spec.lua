-- torch.load_t7: Torch7's serialisation (core/formats/t7.c, lua/interop/t7.lua).
-- Torch7 is not installed: the files are written by spec/support/t7_writer.lua, which follows
-- torch7's File.lua layout (binary with 8- or 4-byte longs, and ASCII), and the outputs Torch7
-- would give are computed by hand (the arithmetic is in the comments) or, for the LSTM, step by
-- step below from rnn's SeqLSTM equations.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local T = require 'moontorch.tensor'
local C = require('moontorch.ffi').C
local W = dofile('spec/support/t7_writer.lua')

local FORMATS = { { name = 'binary, 8-byte longs' }, { name = 'binary, 4-byte longs', long_size = 4 },
  { name = 'ascii', ascii = true } }

local paths = {}
local function write(value, opts)
  local p = os.tmpname()
  paths[#paths + 1] = p
  H.write_file(p, W.serialize(value, opts))
  return p
end
local function raw(bytes)
  local p = os.tmpname()
  paths[#paths + 1] = p
  H.write_file(p, bytes)
  return p
end
-- value written in every format and loaded back
local function each_format(value, fn, load_opts)
  for _, o in ipairs(FORMATS) do fn(torch.load_t7(write(value, o), load_opts), o.name) end
end
local F = function(sizes, values, opts) return W.tensor('Float', sizes, values, opts) end
local function live() T.sweep(); return tonumber(C.mt_get_stats().live_tensors) end

describe('Torch7 files', function()
  teardown(function() for _, p in ipairs(paths) do os.remove(p) end end)

  describe('values', function()
    it('numbers, strings, booleans, tables, references and cycles', function()
      local shared = { 1, 2 }
      local t = { n = 2.5, neg = -7, big = 2 ^ 40, s = 'h\0i\n', yes = true, no = false, list = { 10, 20, 30 },
        a = shared, b = shared, nested = { x = { y = { z = 'deep' } } }, [3] = 'three', [1.5] = 'x', inf = 1 / 0 }
      t.self = t
      each_format(t, function(v, fmt)
        assert.are.equal(2.5, v.n, fmt); assert.are.equal(-7, v.neg); assert.are.equal(2 ^ 40, v.big)
        assert.are.equal('h\0i\n', v.s); assert.is_true(v.yes); assert.is_false(v.no)
        assert.are.same({ 10, 20, 30 }, v.list); assert.are.same({ 1, 2 }, v.a)
        assert.are.equal(v.a, v.b, fmt) -- one table, twice
        assert.are.equal(v, v.self, fmt) -- a cycle
        assert.are.equal('deep', v.nested.x.y.z); assert.are.equal('three', v[3]); assert.are.equal('x', v[1.5])
        assert.are.equal(1 / 0, v.inf)
      end)
      each_format(42, function(v) assert.are.equal(42, v) end)
      each_format('just a string', function(v) assert.are.equal('just a string', v) end)
      assert.is_nil(torch.load_t7(write(nil)))
    end)

    it('tensors and storages of every Torch7 type, views sharing one storage', function()
      local st = W.storage('Double', { 1, 2, 3, 4, 5, 6 })
      local v = {
        byte = W.tensor('Byte', { 2 }, { 200, 7 }), char = W.tensor('Char', { 2 }, { -3, 7 }),
        short = W.tensor('Short', { 2 }, { -300, 7 }), int = W.tensor('Int', { 2 }, { -70000, 7 }),
        long = W.tensor('Long', { 2 }, { -2 ^ 31, 2 ^ 31 - 1 }), float = F({ 2, 2 }, { 1.5, -2, 0.25, 8 }),
        double = W.tensor('Double', { 2 }, { 0.1, -1e300 }), half = W.tensor('Half', { 2 }, { 0.5, -65504 }),
        cuda = W.tensor('Cuda', { 2 }, { 3.5, 4 }),
        whole = W.tensor('Double', { 2, 3 }, nil, { storage = st }),
        col = W.tensor('Double', { 2 }, nil, { storage = st, offset = 2, strides = { 3 } }), -- column 2
        tr = W.tensor('Double', { 3, 2 }, nil, { storage = st, strides = { 1, 3 } }),
        empty = W.tensor('Float', {}, nil), storage = W.storage('Int', { 5, 6, 7 }),
      }
      each_format(v, function(x, fmt)
        local function same(t, dtype, list)
          assert.are.equal(dtype, t.dtype, fmt)
          assert.are.same(list, t:tolist(), fmt)
        end
        same(x.byte, torch.uint8, { 200, 7 }); same(x.char, torch.int8, { -3, 7 })
        same(x.short, torch.int16, { -300, 7 }); same(x.int, torch.int32, { -70000, 7 })
        same(x.long, torch.int64, { -2 ^ 31, 2 ^ 31 - 1 }); same(x.float, torch.float32, { { 1.5, -2 }, { 0.25, 8 } })
        same(x.double, torch.float64, { 0.1, -1e300 }); same(x.half, torch.float16, { 0.5, -65504 })
        same(x.cuda, torch.float32, { 3.5, 4 })
        same(x.whole, torch.float64, { { 1, 2, 3 }, { 4, 5, 6 } })
        same(x.col, torch.float64, { 2, 5 }); assert.are.equal(1, x.col:storage_offset())
        same(x.tr, torch.float64, { { 1, 4 }, { 2, 5 }, { 3, 6 } })
        x.whole[{ 1, 2 }] = 100 -- one storage under the three
        assert.are.equal(100, x.col[1]:item())
        assert.are.equal(100, x.tr[{ 2, 1 }]:item())
        assert.are.same({ 0 }, H.shape(x.empty))
        same(x.storage, torch.int32, { 5, 6, 7 })
      end)
    end)

    it('torch classes it does not map become plain tables, their class under __typename', function()
      local obj = W.object('nn.SpatialFullConvolution', { kW = 3, weight = F({ 1 }, { 2 }) })
      local old = W.object('nn.Foo', { x = 1 }, 0) -- written before versions: the class name alone
      old.version = nil
      each_format({ obj, old }, function(v)
        assert.are.equal('nn.SpatialFullConvolution', v[1].__typename)
        assert.are.equal(3, v[1].kW)
        assert.are.same({ 2 }, v[1].weight:tolist())
      end)
    end)

    it('a stored Lua function is refused, naming where, unless trusted', function()
      local dumped = string.dump(function(a) return (a or 1) * 42 end)
      local value = { model = { hook = W.func(dumped, {}) } }
      for _, o in ipairs(FORMATS) do
        local p = write(value, o)
        H.errors_with(function() torch.load_t7(p) end, 'a Lua function is stored at .model.hook: refused')
        local v = torch.load_t7(p, { trust = true })
        assert.are.equal(84, v.model.hook(2))
      end
      -- the older forms (tags 6 and 7) too, and upvalues
      local k = 5
      local with_up = string.dump(function() return k end)
      for _, tag in ipairs({ 6, 7, 8 }) do
        local ups = tag == 8 and { { name = 'k', id = 1, value = 9 } } or { 9 }
        local p = write({ f = W.func(with_up, ups, tag) })
        H.errors_with(function() torch.load_t7(p) end, 'refused')
        assert.are.equal(9, torch.load_t7(p, { trust = true }).f())
      end
    end)
  end)

  describe('nn modules, with Torch7\'s outputs computed by hand', function()
    local function module(class, fields, version) return W.module(class, fields, version) end
    local function linear(w, b, nout, nin) return module('nn.Linear', { weight = F({ nout, nin }, w), bias = b and F({ nout }, b) }) end

    it('Sequential(Linear, ReLU, Linear, Tanh)', function()
      -- y1 = [1 2 3; 4 5 6] x + [0.5, -1] at x = (1, 1, -1): (0.5, 2); relu; y2 = [1, -0.5] y1 + 0.25 = -0.25;
      -- tanh(-0.25); at x = 0: y1 = (0.5, -1), relu (0.5, 0), y2 = 0.5 + 0.25: tanh(0.75)
      local seq = module('nn.Sequential', { modules = { linear({ 1, 2, 3, 4, 5, 6 }, { 0.5, -1 }, 2, 3),
        module('nn.ReLU', { threshold = 0, val = 0 }), linear({ 1, -0.5 }, { 0.25 }, 1, 2), module('nn.Tanh', {}) } })
      each_format(seq, function(m, fmt)
        assert.is_true(torch.isinstance(m, nn.Sequential), fmt)
        assert.is_true(torch.isinstance(m[1], nn.Linear))
        assert.is_false(m.training) -- train = false in the file: eval()
        H.near(m(torch.tensor({ 1, 1, -1 })), { math.tanh(-0.25) }, 1e-6)
        H.near(m(torch.tensor({ { 1, 1, -1 }, { 0, 0, 0 } })), { { math.tanh(-0.25) }, { math.tanh(0.75) } }, 1e-6)
      end)
      -- a Linear without bias (noBias())
      local m = torch.load_t7(write(linear({ 1, 2 }, nil, 1, 2)))
      assert.is_nil(m.bias)
      H.near(m(torch.tensor({ 3, 4 })), { 11 }, 0)
    end)

    it('SpatialConvolution and SpatialConvolutionMM (2-D weight, padding, stride)', function()
      local x = torch.arange(1, 10):reshape(1, 1, 3, 3):float()
      -- kernel [[1, 2], [0, -1]], bias 0.5: out(i, j) = x(i, j) + 2 x(i, j+1) - x(i+1, j+1) + 0.5
      -- = (1 + 4 - 5, 2 + 6 - 6; 4 + 10 - 8, 5 + 12 - 9) + 0.5
      local conv = module('nn.SpatialConvolution', { nInputPlane = 1, nOutputPlane = 1, kW = 2, kH = 2, dW = 1, dH = 1,
        padW = 0, padH = 0, weight = F({ 1, 1, 2, 2 }, { 1, 2, 0, -1 }), bias = F({ 1 }, { 0.5 }) })
      each_format(conv, function(m, fmt)
        assert.is_true(torch.isinstance(m, nn.Conv2d), fmt)
        H.near(m(x), { { { { 0.5, 2.5 }, { 6.5, 8.5 } } } }, 1e-6)
      end)
      -- MM: the weight as 1 x 4, padding 1, stride 2 over the zero-padded 5x5 input:
      -- out(0,0) = 0 + 0 - 1, out(0,1) = 0 + 0 - 3, out(1,0) = 0 + 8 - 7, out(1,1) = 5 + 12 - 9; + 0.5
      local mm = module('nn.SpatialConvolutionMM', { nInputPlane = 1, nOutputPlane = 1, kW = 2, kH = 2, dW = 2, dH = 2,
        padW = 1, padH = 1, weight = F({ 1, 4 }, { 1, 2, 0, -1 }), bias = F({ 1 }, { 0.5 }) })
      each_format(mm, function(m) H.near(m(x), { { { { -0.5, -2.5 }, { 1.5, 8.5 } } } }, 1e-6) end)
      -- an old file: `padding` for both sides
      local old = module('nn.SpatialConvolutionMM', { nInputPlane = 1, nOutputPlane = 1, kW = 2, kH = 2, dW = 2, dH = 2,
        padding = 1, weight = F({ 1, 4 }, { 1, 2, 0, -1 }), bias = F({ 1 }, { 0.5 }) })
      H.near(torch.load_t7(write(old))(x), { { { { -0.5, -2.5 }, { 1.5, 8.5 } } } }, 1e-6)
    end)

    it('SpatialMaxPooling (floor and ceil)', function()
      local pool = module('nn.SpatialMaxPooling', { kW = 2, kH = 2, dW = 2, dH = 2, padW = 0, padH = 0, ceil_mode = false })
      local x = torch.arange(1, 17):reshape(1, 1, 4, 4):float()
      each_format(pool, function(m) H.near(m(x), { { { { 6, 8 }, { 14, 16 } } } }, 0) end)
      local ceil = module('nn.SpatialMaxPooling', { kW = 2, kH = 2, dW = 2, dH = 2, padW = 0, padH = 0, ceil_mode = true })
      H.near(torch.load_t7(write(ceil))(torch.arange(1, 10):reshape(1, 1, 3, 3):float()), { { { { 5, 6 }, { 8, 9 } } } }, 0)
    end)

    it('SpatialBatchNormalization: running_var, and running_std of version 1 files', function()
      -- eval: (x - mean) / sqrt(var + eps) * w + b with mean (1, -1), var (4, 0.25), w (2, 1), b (0, 3), eps 0:
      -- channel 1 (3, 5) -> (2, 4); channel 2 (0, -2) -> (5, 1)
      local fields = { eps = 0, momentum = 0.1, affine = true, running_mean = F({ 2 }, { 1, -1 }),
        running_var = F({ 2 }, { 4, 0.25 }), weight = F({ 2 }, { 2, 1 }), bias = F({ 2 }, { 0, 3 }) }
      local x = torch.tensor({ { { { 3, 5 } }, { { 0, -2 } } } })
      local want = { { { { 2, 4 } }, { { 5, 1 } } } }
      each_format(module('nn.SpatialBatchNormalization', fields, 2), function(m, fmt)
        assert.is_true(torch.isinstance(m, nn.BatchNorm2d), fmt)
        H.near(m(x), want, 1e-6)
      end)
      -- version 1: running_std = 1 / sqrt(var + eps) = (0.5, 2)
      local old = { eps = 0, momentum = 0.1, affine = true, running_mean = F({ 2 }, { 1, -1 }),
        running_std = F({ 2 }, { 0.5, 2 }), weight = F({ 2 }, { 2, 1 }), bias = F({ 2 }, { 0, 3 }) }
      local m = torch.load_t7(write(module('nn.SpatialBatchNormalization', old, 1)))
      H.near(m.running_var, { 4, 0.25 }, 1e-6)
      H.near(m(x), want, 1e-6)
      -- BatchNormalization (2-D input), without affine
      local bn = module('nn.BatchNormalization', { eps = 0, affine = false, running_mean = F({ 2 }, { 1, -1 }),
        running_var = F({ 2 }, { 4, 0.25 }) }, 2)
      H.near(torch.load_t7(write(bn))(torch.tensor({ { 3, 0 } })), { { 1, 2 } }, 1e-6)
    end)

    it('View, Reshape (batch modes), Concat, Dropout v1 and v2', function()
      local function run(mod, x) return torch.load_t7(write(mod))(x) end
      local x = torch.arange(1, 9):reshape(2, 1, 2, 2):float()
      -- View(4) with numInputDims 3: 2 x 1 x 2 x 2 -> 2 x 4; View(2, 2) of 4 numbers; View(-1, 2)
      local view = module('nn.View', { size = W.storage('Long', { 4 }), numElements = 4, numInputDims = 3 })
      assert.are.same({ 2, 4 }, H.shape(run(view, x)))
      local v22 = module('nn.View', { size = W.storage('Long', { 2, 2 }), numElements = 4 })
      assert.are.same({ 2, 2 }, H.shape(run(v22, torch.arange(1, 5):float())))
      assert.are.same({ 2, 2, 2 }, H.shape(run(v22, torch.arange(1, 9):float():reshape(2, 4))))
      -- Reshape(4): 8 numbers, not 4: a batch of 2; Reshape(2, 2, false) of 4 numbers
      local r4 = module('nn.Reshape', { size = W.storage('Long', { 4 }), nelement = 4 })
      assert.are.same({ 2, 4 }, H.shape(run(r4, x)))
      local r22 = module('nn.Reshape', { size = W.storage('Long', { 2, 2 }), nelement = 4, batchMode = false })
      assert.are.same({ 2, 2 }, H.shape(run(r22, torch.arange(1, 5):float())))
      -- Concat(2) of Linear(2->1) [1, 1] and Linear(2->2) [[1, -1], [2, 0]] + (0, 1) at (1, 2): (3) and (-1, 3)
      local cat = module('nn.Concat', { dimension = 2, modules = { linear({ 1, 1 }, { 0 }, 1, 2),
        linear({ 1, -1, 2, 0 }, { 0, 1 }, 2, 2) } })
      each_format(cat, function(m) H.near(m(torch.tensor({ { 1, 2 } })), { { 3, -1, 3 } }, 0) end)
      -- Dropout in evaluation: v2 passes the input; v1 scales it by 1 - p
      local d2 = module('nn.Dropout', { p = 0.25, v2 = true })
      local d1 = module('nn.Dropout', { p = 0.25, v2 = false })
      H.near(run(d2, torch.tensor({ 4, 8 })), { 4, 8 }, 0)
      H.near(run(d1, torch.tensor({ 4, 8 })), { 3, 6 }, 0)
      -- a Sequential with LeNet's tail, saved and loaded again by moontorch's own torch.save
      local seq = torch.load_t7(write(module('nn.Sequential', { modules = { view, cat } }), { long_size = 4 }))
      local p = os.tmpname()
      torch.save(seq, p)
      local back = torch.load(p)
      os.remove(p)
      assert.are.equal('t7.View', torch.typename(back[1]))
    end)

    it('rnn\'s SeqLSTM: the gates reordered into an LSTM, checked step by step', function()
      -- D = 2, H = 1; weight (D + H) x 4H, columns i, f, o, g; bias 4H
      local Wt = { { 0.1, 0.2, 0.3, 0.4 }, { -0.1, 0.5, 0.2, -0.3 }, { 0.05, -0.05, 0.1, 0.2 } }
      local b = { 0, 1, 0, 0.1 }
      local flat = {}
      for _, row in ipairs(Wt) do for _, v in ipairs(row) do flat[#flat + 1] = v end end
      local lstm = module('nn.SeqLSTM', { inputsize = 2, outputsize = 1, hiddensize = 1, weight = F({ 3, 4 }, flat),
        bias = F({ 4 }, b), batchfirst = false, maskzero = false })
      local xs = { { 1, 2 }, { 0.5, -1 } }
      -- SeqLSTM's equations: a = b + x Wx + h Wh; i, f, o = sigmoid; g = tanh; c = f c + i g; h = o tanh(c)
      local function sig(z) return 1 / (1 + math.exp(-z)) end
      local h, c, want = 0, 0, {}
      for t = 1, 2 do
        local a = {}
        for k = 1, 4 do a[k] = b[k] + xs[t][1] * Wt[1][k] + xs[t][2] * Wt[2][k] + h * Wt[3][k] end
        local i, f, o, g = sig(a[1]), sig(a[2]), sig(a[3]), math.tanh(a[4])
        c = f * c + i * g
        h = o * math.tanh(c)
        want[t] = { { h } }
      end
      each_format(lstm, function(m, fmt)
        assert.are.equal('t7.SeqLSTM', torch.typename(m), fmt)
        H.near(m(torch.tensor(xs):reshape(2, 1, 2)), want, 1e-6)
      end)
    end)
  end)

  describe('damaged and hostile files are errors, never crashes', function()
    local model = W.module('nn.Sequential', { modules = { W.module('nn.Linear', { weight = F({ 2, 3 }, { 1, 2, 3, 4, 5, 6 }),
      bias = F({ 2 }, { 0.5, -1 }) }), W.module('nn.ReLU', {}) } })

    it('every truncation', function()
      for _, o in ipairs(FORMATS) do
        local s = W.serialize(model, o)
        local p = raw('')
        for n = 0, #s - 1, math.max(1, math.floor(#s / 120)) do
          H.write_file(p, s:sub(1, n))
          local ok, err = pcall(torch.load_t7, p)
          if ok then
            -- an ASCII file cut inside its last number may still read as a (different) complete file
            assert(o.ascii, o.name .. ': cut at ' .. n .. ' loaded')
          else
            assert(tostring(err):find(': moontorch%.load_t7: '), err)
          end
        end
      end
    end)

    it('random byte damage', function()
      math.randomseed(11)
      local p = raw('')
      local loaded = 0
      for _, o in ipairs(FORMATS) do
        local s = W.serialize({ model, { t = F({ 2, 2 }, { 1, 2, 3, 4 }), s = 'str', n = 1 } }, o)
        for _ = 1, 150 do
          local b = { s:byte(1, -1) }
          for _ = 1, math.random(1, 3) do b[math.random(1, #b)] = math.random(0, 255) end
          H.write_file(p, string.char(unpack(b)))
          local ok, err = pcall(torch.load_t7, p)
          if ok then loaded = loaded + 1 else assert(tostring(err):find('moontorch%.'), err) end
        end
      end
      assert.is_true(loaded > 0)
    end)

    it('hand-made damage: each named', function()
      local function i32(n) if n < 0 then n = n + 2 ^ 32 end return string.char(n % 256, math.floor(n / 256) % 256,
        math.floor(n / 65536) % 256, math.floor(n / 16777216) % 256) end
      local function i64(n) if n < 0 then return i32(n) .. i32(-1) end return i32(n % 2 ^ 32) .. i32(math.floor(n / 2 ^ 32)) end
      local function s(x) return i32(#x) .. x end
      local tensor_head = i32(4) .. i32(1) .. s('V 1') .. s('torch.FloatTensor')
      local storage4 = i32(4) .. i32(2) .. s('V 1') .. s('torch.FloatStorage') .. i64(4) .. string.rep('\0\0\128\63', 4)
      local cases = {
        { i32(99) .. i32(0), 'an unknown type tag 99' },
        { i32(2) .. i32(0x7fffffff) .. 'ab', 'a string of 2147483647 bytes runs past the end' },
        { i32(3) .. i32(1) .. i32(0x7fffffff), 'more than the file holds' },
        { i32(3) .. i32(1) .. i32(-1), 'a table of -1 entries' },
        { tensor_head .. i32(1) .. i64(3) .. i64(1) .. i64(3) .. storage4, 'lies outside its storage' },     -- offset 3 + 3 > 4
        { tensor_head .. i32(1) .. i64(5) .. i64(1) .. i64(1) .. storage4, 'lies outside its storage' },
        { tensor_head .. i32(1) .. i64(-2) .. i64(1) .. i64(1) .. storage4, 'a negative size or stride' },
        { tensor_head .. i32(1) .. i64(2) .. i64(1) .. i64(0) .. storage4, 'lies outside its storage' },     -- offset 0
        { tensor_head .. i32(1) .. i64(2) .. i64(1) .. string.rep('\0', 7) .. '\128' .. storage4,
          'storage offset out of range' },                                                                 -- -2^63
        { tensor_head .. i32(40) .. '', 'a tensor of 40 dimensions' },
        { tensor_head .. i32(1) .. i64(2) .. i64(1) .. i64(1) .. i32(0), 'with elements but no storage' },
        { tensor_head .. i32(1) .. i64(2) .. i64(1) .. i64(1) .. i32(4) .. i32(2) .. s('V 1') .. s('torch.DoubleStorage')
          .. i64(2) .. string.rep('\0', 16), 'over a storage of another type' },
        { i32(4) .. i32(1) .. s('V 1') .. s('torch.FloatStorage') .. i64(2 ^ 40), 'more than the file holds' },
        { i32(1) .. string.rep('\0', 8) .. 'junk', '4 bytes after the object' },
        { i32(4) .. i32(1) .. s('V 1') .. s('nn.Linear') .. i32(1) .. string.rep('\0', 8), 'the fields of a nn.Linear are not a table' },
        { i32(4) .. i32(1) .. s('V 1') .. s('nn.Linear') .. i32(3) .. i32(2) .. i32(0), 'without its field weight' },
        { i32(3) .. i32(1) .. i32(1) .. i32(0) .. i32(1) .. string.rep('\0', 8), 'a table key is nil' },
      }
      for i, c in ipairs(cases) do
        local ok, err = pcall(torch.load_t7, raw(c[1]), { long_size = 8 })
        assert(not ok, 'case ' .. i .. ' loaded')
        assert(tostring(err):find(c[2], 1, true), ('case %d: %s'):format(i, tostring(err)))
        assert(tostring(err):find('moontorch.load_t7: ', 1, true), err)
      end
      -- 100000 nested tables: read by the C reader (no recursion there), refused by the depth limit
      local deep = {}
      for k = 1, 100000 do deep[k] = i32(3) .. i32(k) .. i32(1) .. i32(1) .. string.rep('\0', 8) end
      H.errors_with(function() torch.load_t7(raw(table.concat(deep) .. i32(0))) end, 'nesting deeper than 1000 levels')
      -- forcing the wrong long size, and options checked
      local p8 = write(model)
      assert.is_true(torch.isinstance(torch.load_t7(p8, { long_size = 8 }), nn.Sequential))
      H.errors_with(function() torch.load_t7(p8, { long_size = 4 }) end, 'moontorch.load_t7: ')
      H.errors_with(function() torch.load_t7(p8, { long_size = 3 }) end, 'long_size must be 4 or 8')
      H.errors_with(function() torch.load_t7(p8, { format = 'json' }) end, "format must be 'binary' or 'ascii'")
      H.errors_with(function() torch.load_t7('/nonexistent/x.t7') end, 'cannot open the file')
      H.errors_with(function() torch.load_t7(raw('x')) end, 'not a Torch7 file (too short)')
    end)

    it('leaves no tensor behind', function()
      local before = live()
      local p = write(model)
      for _ = 1, 3 do local m = torch.load_t7(p); m = nil end
      pcall(torch.load_t7, raw(W.serialize(model):sub(1, 100)))
      assert.are.equal(before, live())
    end)
  end)
end)
