-- torch.load_pytorch / torch.load of PyTorch's own torch.save files (core/formats/pytorch.c, the
-- restricted unpickler core/formats/pickle.c, lua/interop/pytorch.lua).
-- The files in spec/support/pytorch/ were written by PyTorch 1.13 (/usr/bin/python3) with
--   cd spec/support/pytorch && /usr/bin/python3 ../pytorch_record.py
-- (that script says what each holds); the expected outputs are PyTorch's, saved beside the
-- state_dicts in <model>_io.pt. Hostile files are the recorded evil*.pt (os.system through
-- __reduce__, as an attacker writes it) and files built or damaged below.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local T = require 'moontorch.tensor'
local C = require('moontorch.ffi').C

local DIR = 'spec/support/pytorch/'
local function file(name) return DIR .. name end
local read_all, write_all = H.read_file, H.write_file

local tmp_paths = {}
local function tmp(bytes)
  local p = os.tmpname()
  tmp_paths[#tmp_paths + 1] = p
  if bytes then write_all(p, bytes) end
  return p
end

-- the legacy format's three header pickles (magic number, protocol 1001, system info), as PyTorch
-- 1.13 writes them: the bytes of a recorded file up to its third STOP
local function legacy_header()
  local s = read_all(file('mlp_legacy.pt'))
  return s:sub(1, 137)
end
-- a legacy file holding `pickle` as the object, then `keys` (a pickle of the key list) and `tail`
local EMPTY_KEYS = '\128\2]q\0.'
local function legacy(pickle, keys, tail)
  return legacy_header() .. pickle .. (keys or EMPTY_KEYS) .. (tail or '')
end
local function u32(n) return string.char(n % 256, math.floor(n / 256) % 256, math.floor(n / 65536) % 256,
  math.floor(n / 16777216) % 256) end
local function binunicode(s) return 'X' .. u32(#s) .. s end

local function live() T.sweep(); return tonumber(C.mt_get_stats().live_tensors) end

describe('PyTorch files', function()
  teardown(function() for _, p in ipairs(tmp_paths) do os.remove(p) end end)

  it('the legacy header used below is what PyTorch writes (three pickles)', function()
    local h = legacy_header()
    assert.are.equal('\128\2\138\10', h:sub(1, 4))
    assert.are.equal('.', h:sub(-1))
    -- and a file with it and an empty dict loads
    assert.are.same({}, torch.load_pytorch(tmp(legacy('\128\2}.'))))
  end)

  describe('state_dicts saved by PyTorch 1.13 load into the matching modules and give its outputs', function()
    local function check(name, m, run, formats, tol)
      for _, suffix in ipairs(formats) do
        local sd = torch.load(file(name .. suffix .. '.pt'))
        assert.are.equal('torch.OrderedDict', torch.typename(sd))
        -- the keys PyTorch wrote, in its order, are the module's own
        assert.are.same(m:state_dict():keys(), sd:keys())
        local r = m:load_state_dict(sd)
        assert.are.equal(0, #r.missing_keys)
        assert.are.equal(0, #r.unexpected_keys)
        m:eval()
        local io = torch.load_pytorch(file(name .. '_io.pt'))
        local outs, wants = { torch.no_grad(function() return run(m, io) end) }, io.output
        if torch.is_tensor(wants) then wants = { wants } end
        assert.are.equal(#wants, #outs)
        for i = 1, #wants do H.near(outs[i], wants[i], tol or 1e-6, 1e-5) end
      end
    end

    it('an MLP (zip and legacy formats)', function()
      check('mlp', nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4)), function(m, io) return m(io.input) end,
        { '', '_legacy' })
    end)

    it('LeNet-5', function()
      local lenet = nn.Sequential(
        nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
      check('lenet', lenet, function(m, io) return m(io.input) end, { '' }, 1e-5)
    end)

    it('a 2-layer LSTM (output, h_n, c_n)', function()
      check('lstm', nn.LSTM(4, 5, 2), function(m, io)
        local out, hc = m(io.input, { io.extra[1], io.extra[2] })
        return out, hc[1], hc[2]
      end, { '', '_legacy' })
    end)

    it('a TransformerEncoderLayer (eval)', function()
      check('transformer', nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, dropout = 0.1 }),
        function(m, io) return m(io.input) end, { '', '_legacy' }, 1e-5)
    end)

    it('keeps the state_dict\'s _metadata (module versions) and the dtypes and shapes', function()
      local sd = torch.load_pytorch(file('transformer.pt'))
      assert.are.same({ version = 1 }, sd._metadata[''])
      assert.are.same({ 24, 8 }, H.shape(sd['self_attn.in_proj_weight']))
      assert.are.equal(torch.float32, sd['linear1.bias'].dtype)
      assert.is_false(sd['linear1.bias'].requires_grad)
    end)
  end)

  describe('values', function()
    for _, name in ipairs({ 'values.pt', 'values_legacy.pt' }) do
      it('every kind, from ' .. name, function()
        local v = torch.load(file(name))
        local function same(t, dtype, list)
          assert.are.equal(dtype, t.dtype)
          assert.are.same(list, t:tolist())
        end
        same(v.f32, torch.float32, { 1.5, -2 }); same(v.f64, torch.float64, { 1.5, -2 })
        same(v.f16, torch.float16, { 1.5, -2 }); same(v.bf16, torch.bfloat16, { 1.5, -2 })
        same(v.i8, torch.int8, { -3, 7 }); same(v.i16, torch.int16, { -300, 7 })
        same(v.i32, torch.int32, { -70000, 7 }); same(v.i64, torch.int64, { -2 ^ 40, 7 })
        same(v.u8, torch.uint8, { 200, 7 }); same(v.bool, torch.bool, { true, false })
        assert.are.equal(0, v.scalar:dim()); assert.are.equal(3.25, v.scalar:item())
        assert.are.same({ 0, 3 }, H.shape(v.empty))
        -- views keep sharing one storage, with PyTorch's offsets and strides
        assert.are.same({ 1, 5, 9 }, v.col:tolist())
        assert.are.equal(1, v.col:storage_offset())
        assert.are.same({ 4 }, v.col:stride())
        assert.are.same({ 1, 4 }, v.tr:stride())
        assert.are.equal(8, v.row:storage_offset())
        v.base[{ 1, 2 }] = 100
        assert.are.equal(100, v.col[1]:item())
        assert.are.equal(100, v.tr[{ 2, 1 }]:item())
        -- parameters and requires_grad
        assert.is_true(torch.isinstance(v.param, nn.Parameter))
        assert.is_true(v.param.requires_grad)
        assert.is_true(torch.isinstance(v.frozen, nn.Parameter))
        assert.is_false(v.frozen.requires_grad)
        assert.is_false(torch.isinstance(v.grad, nn.Parameter))
        assert.is_true(v.grad.requires_grad)
        -- plain values
        assert.are.equal(42, v.int); assert.are.equal(-7, v.neg); assert.are.equal(2 ^ 40, v.big)
        assert.are.equal(2 ^ 70, v.huge) -- (beyond 2^53: the nearest double)
        assert.are.equal(0.1, v.float); assert.is_true(v['true']); assert.is_false(v['false'])
        assert.is_nil(v.none) -- None: the entry is left out
        assert.are.equal('h\195\169llo', v.str); assert.are.equal('\0\255ab', v.bytes)
        assert.are.same({ 1, 'two', 3, { 4 } }, v.list); assert.are.same({ 1, 2 }, v.tuple)
        assert.are.same({ 2, 3 }, v.size); assert.are.same({ [5] = true, [6] = true }, v.set)
        assert.are.same({ a = { b = { c = 1 } } }, v.nested)
        assert.are.same({ [0] = 'zero', [1] = 'one' }, v.intkeys)
        assert.are.equal('torch.OrderedDict', torch.typename(v.od))
        assert.are.same({ 'z', 'a', 'm' }, v.od:keys())
        assert.are.equal(torch.float16, v.dtype)
        assert.are.equal('meta', v.meta.device.type)
        assert.are.same({ 2, 3 }, H.shape(v.meta))
        assert.are.equal(v.shared1, v.shared2) -- one list, shared
      end)
    end

    it('reads from an open file too, and map_location = cpu', function()
      local f = assert(io.open(file('mlp.pt'), 'rb'))
      local sd = torch.load(f, { map_location = 'cpu' })
      f:close()
      assert.are.same({ 16, 6 }, H.shape(sd['0.weight']))
      local sd2 = torch.load_pytorch(file('mlp_legacy.pt'), { map_location = torch.device('cpu') })
      assert.is_true(torch.equal(sd['2.bias'], sd2['2.bias']))
      H.errors_with(function() torch.load_pytorch(file('mlp.pt'), { map_location = 'banana' }) end,
        'map_location must be a device')
    end)

    it('PyTorch 2.x\'s _rebuild_parameter_with_state and _rebuild_tensor_v2 with metadata', function()
      -- Parameter(_rebuild_tensor_v2(storage 'k' of 2 floats, 0, (2,), (1,), False, OrderedDict(), {}), True,
      -- OrderedDict(), {'note': 1}) (what PyTorch 2.x writes for a parameter with a Python attribute)
      local p = '\128\2ctorch._utils\n_rebuild_parameter_with_state\n(ctorch._utils\n_rebuild_tensor_v2\n('
        .. '(X\7\0\0\0storagectorch\nFloatStorage\nX\1\0\0\0kX\3\0\0\0cpuK\2NtQK\0K\2\133K\1\133\137'
        .. 'ccollections\nOrderedDict\n)R}tR\136ccollections\nOrderedDict\n)R}X\4\0\0\0noteK\1stR.'
      local keys = '\128\2]X\1\0\0\0ka.'
      local t = torch.load_pytorch(tmp(legacy(p, keys, string.char(2, 0, 0, 0, 0, 0, 0, 0) .. ('\0\0\128\63'):rep(2))))
      assert.is_true(torch.isinstance(t, nn.Parameter))
      assert.is_true(t.requires_grad)
      assert.are.same({ 1, 1 }, t:tolist())
    end)

    it('leaves no tensor behind', function()
      local before = live()
      for _ = 1, 3 do
        local v = torch.load_pytorch(file('values.pt'))
        local sd = torch.load_pytorch(file('lstm_legacy.pt'))
        v, sd = nil, nil
      end
      pcall(torch.load_pytorch, file('evil.pt'))
      assert.are.equal(before, live())
    end)
  end)

  describe('hostile and damaged files are errors, never crashes, and nothing in them runs', function()
    it('a pickle that asks for os.system is refused, naming it, and never run', function()
      os.remove('/tmp/moontorch_pt_evil_marker')
      for _, name in ipairs({ 'evil.pt', 'evil_legacy.pt' }) do
        local err = H.errors_with(function() torch.load(file(name)) end, "the Python global 'posix.system'")
        assert.truthy(err:find('is not allowed', 1, true))
        assert.truthy(err:find('moontorch.load: ' .. file(name), 1, true))
      end
      assert.is_nil(io.open('/tmp/moontorch_pt_evil_marker', 'rb'))
    end)

    it('a whole module (torch.save(model)) is refused with what to do instead', function()
      local err = H.errors_with(function() torch.load(file('module.pt')) end,
        "'torch.nn.modules.linear.Linear', which is not allowed")
      assert.truthy(err:find('torch.save(model.state_dict(), path)', 1, true))
    end)

    it('a TorchScript archive is refused as code', function()
      H.errors_with(function() torch.load(file('script.pt')) end, 'a TorchScript archive (torch.jit.save)')
    end)

    it('pickles built by hand: other globals, calls and opcodes', function()
      local cases = {
        -- GLOBAL / REDUCE of os.system, protocol 2
        { '\128\2cos\nsystem\nq\0X\4\0\0\0trueq\1\133q\2Rq\3.', "the Python global 'os.system'" },
        -- STACK_GLOBAL (protocol 4) of builtins.eval
        { '\128\4\140\8builtins\140\4eval\147\140\0041+1\133R.', "the Python global 'builtins.eval'" },
        -- INST and OBJ (protocol 0/1 object building), PERSID in text, EXT1
        { '(ios\nsystem\nX\1\0\0\0a.', 'unsupported pickle opcode 0x69' },
        { '(cos\nsystem\no.', "the Python global 'os.system'" },
        { 'P0\n.', 'unsupported pickle opcode 0x50' },
        { '\130\1.', 'unsupported pickle opcode 0x82' },
        -- an allowed callable called with what it does not take, or a value that is not callable
        { '\128\2ccollections\nOrderedDict\nK\1\133R.', 'collections.OrderedDict: its argument is not a list of pairs' },
        { '\128\2K\1)R.', 'REDUCE on a value that is not an allowed callable' },
        { '\128\2ctorch\nFloatStorage\n)R.', 'torch.FloatStorage cannot be called' },
        { '\128\2ctorch._utils\n_rebuild_sparse_tensor\n)R.', 'a sparse tensor' },
        { '\128\2ctorch._utils\n_rebuild_tensor_v2\n(K\0K\0))\137NtR.', 'its first argument is not a storage' },
        -- BUILD on anything but an OrderedDict; NEWOBJ of another class
        { '\128\2]}b.', 'BUILD on a value that is not an OrderedDict' },
        { '\128\2ccollections\nOrderedDict\n)\129.', 'NEWOBJ of a class other than torch.nn.Parameter' },
        -- stack and memo misuse
        { '\128\2a.', "the pickle's stack is empty" },
        { '\128\2h\7.', 'the memo has no entry 7' },
        { '\128\2K\1e.', 'no MARK to pop to' },
        { '\128\2K\0K\1K\2s.', 'SETITEM on a value that is not a dict' },
        { '\128\2(K\1d.', 'DICT with an odd number of items' },
        { '\128\2', 'the pickle ends without STOP' },
        { '\128\9N.', 'pickle protocol 9' },
        -- sizes beyond the bytes there are
        { '\128\2X\255\255\255\127ab.', 'a string of 2147483647 bytes runs past the end of the pickle' },
        { '\128\2\141\255\255\255\255\255\255\255\255.', 'runs past the end of the pickle' },
        { '\128\2\139\0\0\0\128.', 'LONG4 with a negative length' },
        { '\128\2\149\0\0\0\0\0\0\0\1N.', 'a frame runs past the end' },
        -- a persistent id that is not a storage, and a storage class moontorch lacks
        { '\128\2X\6\0\0\0moduleq\0\133Q.', "a persistent id of type 'module'" },
        { '\128\2(X\7\0\0\0storagectorch\nComplexFloatStorage\nX\1\0\0\0' .. '0X\3\0\0\0cpuK\1NtQ.',
          'a storage of type torch.ComplexFloatStorage' },
      }
      for i, c in ipairs(cases) do
        local path = tmp(legacy(c[1]))
        local ok, err = pcall(torch.load_pytorch, path)
        assert(not ok, 'case ' .. i .. ' loaded')
        assert(tostring(err):find(c[2], 1, true), ('case %d: %s'):format(i, tostring(err)))
        assert(tostring(err):find('moontorch.load_pytorch: ', 1, true), err)
      end
    end)

    it('tensors that reach past their storage, and storages without data', function()
      -- _rebuild_tensor_v2((storage 'k' of 4 floats), offset, size, stride, False, OrderedDict())
      local function tensor_pickle(offset, size, stride, numel)
        return '\128\2ctorch._utils\n_rebuild_tensor_v2\n((X\7\0\0\0storagectorch\nFloatStorage\nX\1\0\0\0kX\3\0\0\0cpu'
          .. 'K' .. string.char(numel) .. 'NtQK' .. string.char(offset) .. 'K' .. string.char(size) .. '\133K'
          .. string.char(stride) .. '\133\137ccollections\nOrderedDict\n)RtR.'
      end
      local keys = '\128\2]X\1\0\0\0ka.'
      local function data(n) return string.char(n, 0, 0, 0, 0, 0, 0, 0) .. string.rep('\0\0\128\63', n) end
      -- a good one first: 4 ones, a view of 2 of them
      local t = torch.load_pytorch(tmp(legacy(tensor_pickle(1, 2, 1, 4), keys, data(4))))
      assert.are.same({ 1, 1 }, t:tolist())
      local bad = {
        { tensor_pickle(3, 2, 1, 4), keys, data(4), 'a tensor lies outside its storage' },
        { tensor_pickle(0, 3, 2, 4), keys, data(4), 'a tensor lies outside its storage' },
        { tensor_pickle(0, 2, 1, 4), keys, data(2), 'fewer than its 16' },
        { tensor_pickle(0, 2, 1, 4), keys, data(4) .. 'x', '1 bytes after the last storage' },
        { tensor_pickle(0, 2, 1, 4), keys, string.char(255, 255, 255, 255, 255, 255, 255, 127),
          'more than the file holds' },
        { tensor_pickle(0, 2, 1, 4), EMPTY_KEYS, '', "storage 'k' has no data" },
        { tensor_pickle(0, 2, 1, 4), '\128\2]X\1\0\0\0jq\0a.', data(4), "storage 'j' is listed but no tensor uses it" },
        { tensor_pickle(0, 2, 1, 4), keys, data(4):sub(1, 12), 'more than the file holds' },
        { tensor_pickle(0, 2, 1, 4), keys, data(4):sub(1, 5), 'the storages is truncated' },
      }
      for i, c in ipairs(bad) do
        local ok, err = pcall(torch.load_pytorch, tmp(legacy(c[1], c[2], c[3])))
        assert(not ok, 'case ' .. i .. ' loaded')
        assert(tostring(err):find(c[4], 1, true), ('case %d: %s'):format(i, tostring(err)))
      end
    end)

    it('a list that holds itself loads as a table that holds itself; deep nesting is an error', function()
      -- l = []; l.append(l); l.append(1)
      local l = torch.load_pytorch(tmp(legacy('\128\2]q\0h\0aK\1a.')))
      assert.are.equal(l, l[1])
      assert.are.equal(1, l[2])
      -- d = {}; d['self'] = d
      local d = torch.load_pytorch(tmp(legacy('\128\2}q\0X\4\0\0\0selfh\0s.')))
      assert.are.equal(d, d.self)
      -- 100000 nested lists: read by the C unpickler (no recursion there), refused by the depth limit
      local deep = '\128\2' .. string.rep(']', 100000) .. string.rep('a', 99999) .. '.'
      H.errors_with(function() torch.load_pytorch(tmp(legacy(deep))) end, 'nesting deeper than 1000 levels')
      -- many memo entries at arbitrary indices
      local many = { '\128\2(' }
      for i = 1, 2000 do many[#many + 1] = 'K' .. string.char(i % 256) .. 'r' .. u32(i * 7919 % 4294967291) end
      many[#many + 1] = 'l.'
      assert.are.equal(2000, #torch.load_pytorch(tmp(legacy(table.concat(many)))))
    end)

    it('every truncation of a file is an error', function()
      for _, name in ipairs({ 'mlp.pt', 'mlp_legacy.pt', 'values_legacy.pt' }) do
        local s = read_all(file(name))
        local path = tmp()
        local step = math.max(1, math.floor(#s / 150))
        for n = 0, #s - 1, step do
          write_all(path, s:sub(1, n))
          local ok, err = pcall(torch.load, path)
          assert(not ok, name .. ' cut at ' .. n .. ' loaded')
          assert(tostring(err):find(': moontorch%.load'), err)
        end
      end
    end)

    it('damaged zip directories and offsets are errors', function()
      local s = read_all(file('mlp.pt'))
      local eocd = s:find('PK\5\6', 1, true)
      local cd = s:find('PK\1\2', 1, true)
      assert.truthy(eocd and cd)
      local function patch(at, bytes) return s:sub(1, at - 1) .. bytes .. s:sub(at + #bytes) end
      local cases = {
        { patch(eocd + 16, u32(#s)), 'its central directory lies outside the file' },       -- directory offset
        { patch(eocd + 12, u32(0x7fffffff)), 'its central directory lies outside the file' }, -- directory size
        { patch(eocd + 8, '\255\0\255\0'), 'more entries than its central directory holds' },
        { patch(cd + 42, u32(#s - 10)), 'lies outside the archive' },                        -- a local header offset
        { patch(cd + 20, u32(0x7ffffff0) .. u32(0x7ffffff0)), 'lies outside the archive' },   -- sizes
        { patch(cd + 24, u32(3)), 'is stored but its sizes differ' },
        { patch(cd + 10, '\8\0'), 'is compressed (method 8)' },
        { patch(cd + 8, '\1\0'), 'is encrypted' },
        { patch(s:find('PK\3\4', 2, true), 'PK\3\3'), 'has a damaged local header' },
        { patch(eocd, 'PK\5\5'), 'no end of central directory record' },
        { patch(200, 'XXXX'), 'CRC-32 mismatch' },                                         -- inside data.pkl
      }
      for i, c in ipairs(cases) do
        local ok, err = pcall(torch.load_pytorch, tmp(c[1]))
        assert(not ok, 'case ' .. i .. ' loaded')
        assert(tostring(err):find(c[2], 1, true), ('case %d: %s'):format(i, tostring(err)))
      end
    end)

    it('random byte damage never crashes (zip and legacy)', function()
      math.randomseed(7)
      local path = tmp()
      local n_loaded = 0
      for _, name in ipairs({ 'values.pt', 'values_legacy.pt', 'lstm_legacy.pt' }) do
        local s = read_all(file(name))
        for _ = 1, 150 do
          local b = { s:byte(1, -1) }
          for _ = 1, math.random(1, 4) do
            local at = math.random(1, #b)
            b[at] = math.random(0, 255)
          end
          local parts = {}
          for i = 1, #b, 4096 do parts[#parts + 1] = string.char(unpack(b, i, math.min(#b, i + 4095))) end
          write_all(path, table.concat(parts))
          local ok, err = pcall(torch.load_pytorch, path)
          if ok then n_loaded = n_loaded + 1 else assert(tostring(err):find(': moontorch%.load'), err) end
        end
      end
      assert.is_true(n_loaded > 0) -- (damage to tensor bytes still loads)
    end)

    it('files that are not PyTorch\'s say what they are', function()
      H.errors_with(function() torch.load_pytorch(tmp('hello')) end, 'not a PyTorch file')
      local tar = string.rep('\0', 257) .. 'ustar' .. string.rep('\0', 300)
      H.errors_with(function() torch.load_pytorch(tmp(tar)) end, 'a tar archive')
      H.errors_with(function() torch.load_pytorch(DIR .. 'missing.pt') end, 'cannot open the file')
      H.errors_with(function() torch.load_pytorch(tmp('\128\2K\1.')) end, 'bad magic number')
      H.errors_with(function() torch.load_pytorch(42) end, 'path must be a string or an open file')
    end)
  end)
end)
