-- moontorch.safetensors_io: .safetensors files checked against the format's specification
-- (huggingface/safetensors README "Format": u64 little-endian header size N, N bytes of JSON,
-- then the byte buffer) and against the byte strings the reference writer's own tests expect
-- (bindings/python/tests/test_simple.py and safetensors/src/tensor.rs, commit 24b0b285).
local H = require 'spec.support.helper'
local torch = H.torch
local S = require 'moontorch.safetensors_io'

local dir = os.getenv('TMPDIR') or '/tmp'
local counter = 0
local function tmp_path()
  counter = counter + 1
  return ('%s/mt_st_spec_%d_%d.safetensors'):format(dir, os.time(), counter)
end
local read_all, write_all = H.read_file, H.write_file
local function u64le(n)
  local b = {}
  for i = 1, 8 do b[i] = string.char(n % 256); n = math.floor(n / 256) end
  return table.concat(b)
end
local function le_u64(s) -- the first 8 bytes of s as a number
  local n = 0
  for i = 8, 1, -1 do n = n * 256 + s:byte(i) end
  return n
end
-- a file from a header string (padded to 8 with spaces unless raw) and the buffer bytes
local function st_file(header, buffer, raw)
  if not raw then header = header .. (' '):rep((8 - #header % 8) % 8) end
  return u64le(#header) .. header .. (buffer or '')
end
local function bytes(...) return string.char(...) end
local function same_tensor(a, b, what)
  assert.are.equal(b.dtype, a.dtype, what)
  assert.are.same(b:size(), a:size(), what)
  assert.is_true(torch.equal(a, b), what)
end

describe('safetensors_io', function()
  local paths = {}
  local function path() local p = tmp_path(); paths[#paths + 1] = p; return p end
  teardown(function() for _, p in ipairs(paths) do os.remove(p) end end)

  describe('round trip', function()
    it('keeps every dtype, value by value', function()
      local p = path()
      local vals = { 0, 1, -2, 3.5, 100, -0.25 }
      local ts = {}
      for code, d in pairs(S.dtype_of_code) do
        local v = {}
        for i, x in ipairs(vals) do
          if d == torch.bool then v[i] = x ~= 0
          elseif d.is_floating_point then v[i] = x
          elseif d == torch.uint8 then v[i] = math.abs(math.floor(x))
          else v[i] = math.floor(x) end
        end
        ts['t_' .. code] = torch.tensor(v, { dtype = d }):reshape(2, 3)
      end
      ts.big_i64 = torch.tensor({ 2 ^ 40 + 5, -(2 ^ 50) - 3 }, { dtype = torch.int64 })
      S.save(ts, p)
      local r, meta = S.load(p)
      assert.is_nil(meta)
      local n = 0
      for k, t in pairs(ts) do same_tensor(r[k], t, k); n = n + 1 end
      for _ in pairs(r) do n = n - 1 end
      assert.are.equal(0, n, 'no extra tensors')
      assert.are.same({ 2 ^ 40 + 5, -(2 ^ 50) - 3 }, r.big_i64:tolist())
    end)

    it('keeps 0-dim, empty and non-contiguous tensors', function()
      local p = path()
      local base = torch.arange(0, 12, { dtype = torch.float32 }):reshape(3, 4)
      local ts = {
        scalar = torch.tensor(2.5, { dtype = torch.float64 }),
        scalar_bool = torch.tensor(true),
        empty = torch.empty(0, 4),
        empty3 = torch.empty({ 2, 0, 3 }, { dtype = torch.int16 }),
        transposed = base:t(),            -- strides (1, 4)
        narrowed = base:narrow(2, 2, 2),  -- a storage offset and a gap
        stepped = torch.arange(0, 10, { dtype = torch.int64 }):reshape(5, 2):select(2, 2),
      }
      assert.is_false(ts.transposed:is_contiguous())
      assert.is_false(ts.narrowed:is_contiguous())
      S.save(ts, p)
      local r = S.load(p)
      for k, t in pairs(ts) do same_tensor(r[k], t, k) end
      assert.are.equal(0, r.scalar:dim())
      assert.are.same({ { 0, 4, 8 }, { 1, 5, 9 }, { 2, 6, 10 }, { 3, 7, 11 } }, r.transposed:tolist())
      assert.are.same({ { 1, 2 }, { 5, 6 }, { 9, 10 } }, r.narrowed:tolist())
      assert.are.same({ 1, 3, 5, 7, 9 }, r.stepped:tolist())
      assert.is_true(r.transposed:is_contiguous())
    end)

    it('keeps metadata (escapes, UTF-8), also empty metadata', function()
      local p = path()
      local meta = { format = 'pt', note = 'caf\195\169 "quoted" back\\slash\n\ttab \1 \127', [''] = '' }
      S.save({ w = torch.ones(2) }, p, meta)
      local r, m = S.load(p)
      assert.are.same(meta, m)
      same_tensor(r.w, torch.ones(2))
      S.save({ w = torch.ones(2) }, p, {})
      local _, m2 = S.load(p)
      assert.are.same({}, m2)
      assert.is_truthy(read_all(p):find('"__metadata__":{}', 1, true))
    end)

    it('takes a torch.OrderedDict and gives one back in file order with {ordered=true}', function()
      local p = path()
      local d = torch.OrderedDict()
      d.zeta = torch.ones(3)
      d.alpha = torch.zeros(2, { dtype = torch.float64 })
      d['layer.0.weight'] = torch.ones(1, { dtype = torch.uint8 })
      d.mid = torch.ones(2, { dtype = torch.int64 })
      S.save(d, p)
      local o = S.load(p, { ordered = true })
      assert.are.equal('torch.OrderedDict', require('moontorch.class').typename(o))
      -- file order is the writer's order: dtype (I64, F64, F32, ..., U8) then name
      assert.are.same({ 'mid', 'alpha', 'zeta', 'layer.0.weight' }, o:keys())
      for k, t in d:items() do same_tensor(o[k], t, k) end
    end)

    it('names with quotes, backslashes, control and non-ASCII characters', function()
      local p = path()
      local names = { 'a"b', 'c\\d', 'e\nf', 'g\31h', '\230\151\165\230\156\172', '\240\159\152\128', '' }
      local ts = {}
      for i, n in ipairs(names) do ts[n] = torch.tensor({ i }) end
      S.save(ts, p)
      local r = S.load(p)
      for i, n in ipairs(names) do assert.are.same({ i }, r[n]:tolist(), n) end
    end)

    it('round trips a large tensor through the bulk path', function()
      local p = path()
      local t = torch.arange(0, 1000000, { dtype = torch.float32 }):reshape(1000, 1000)
      S.save({ t = t }, p)
      -- header {"t":{"dtype":"F32","shape":[1000,1000],"data_offsets":[0,4000000]}}: 72 bytes, no padding
      assert.are.equal(8 + 72 + 4e6, #read_all(p))
      local r = S.load(p)
      assert.is_true(torch.equal(r.t, t))
    end)

    it('is reached as torch.save_safetensors / torch.load_safetensors', function()
      local p = path()
      torch.save_safetensors({ x = torch.ones(2) }, p)
      assert.is_true(torch.equal(torch.load_safetensors(p).x, torch.ones(2)))
    end)
  end)

  describe('bytes written', function()
    -- expected bytes from the reference's tests (bindings/python/tests/test_simple.py)
    it('matches the reference writer for one int32 tensor', function()
      local p = path()
      S.save({ test = torch.zeros(2, 2, { dtype = torch.int32 }) }, p)
      assert.are.equal('@\0\0\0\0\0\0\0{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}    '
        .. ('\0'):rep(16), read_all(p))
      local t = torch.tensor({ { 0, 0 }, { 0, 1 } }, { dtype = torch.int32 })
      S.save({ test = t }, p)
      assert.are.equal('@\0\0\0\0\0\0\0{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}    '
        .. ('\0'):rep(12) .. '\1\0\0\0', read_all(p))
    end)

    it('matches the reference writer for two dtypes, whatever the input order', function()
      local p = path()
      local expected = '\128\0\0\0\0\0\0\0{"test1":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]},'
        .. '"test2":{"dtype":"F16","shape":[2,2],"data_offsets":[16,24]}}      ' .. ('\0'):rep(24)
      S.save(torch.OrderedDict { { 'test2', torch.zeros(2, 2, { dtype = torch.float16 }) },
        { 'test1', torch.zeros(2, 2, { dtype = torch.int32 }) } }, p)
      assert.are.equal(expected, read_all(p))
      S.save(torch.OrderedDict { { 'test1', torch.zeros(2, 2, { dtype = torch.int32 }) },
        { 'test2', torch.zeros(2, 2, { dtype = torch.float16 }) } }, p)
      assert.are.equal(expected, read_all(p))
    end)

    it('matches the reference writer with metadata', function()
      local p = path()
      S.save({ test1 = torch.zeros(2, 2, { dtype = torch.int32 }) }, p, { framework = 'pt' })
      assert.are.equal('`\0\0\0\0\0\0\0{"__metadata__":{"framework":"pt"},"test1":{"dtype":"I32","shape":[2,2],'
        .. '"data_offsets":[0,16]}} ' .. ('\0'):rep(16), read_all(p))
    end)

    it('matches the reference serializer for a float32 [1,2,3] tensor (tensor.rs test_serialization)', function()
      local p = path()
      S.save({ ['attn.0'] = torch.arange(0, 6, { dtype = torch.float32 }):reshape(1, 2, 3) }, p)
      local expected = { 64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100,
        116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34,
        58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115,
        101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63,
        0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64 }
      assert.are.equal(string.char(unpack(expected)), read_all(p))
    end)

    it('orders tensors as the reference Dtype enum does (I64 before F64, F32 before I32), then by name', function()
      local p = path()
      local ts = {}
      local codes = { 'BOOL', 'U8', 'I8', 'I16', 'F16', 'BF16', 'I32', 'F32', 'F64', 'I64' }
      for _, c in ipairs(codes) do
        ts['b_' .. c] = torch.zeros(1, { dtype = S.dtype_of_code[c] })
        ts['a_' .. c] = torch.zeros(1, { dtype = S.dtype_of_code[c] })
      end
      S.save(ts, p)
      local s = read_all(p)
      local order = {}
      for name in s:sub(9, 8 + le_u64(s)):gmatch('"([ab]_[%u%d]+)"') do order[#order + 1] = name end
      local expected = {}
      for i = #codes, 1, -1 do
        expected[#expected + 1] = 'a_' .. codes[i]
        expected[#expected + 1] = 'b_' .. codes[i]
      end
      assert.are.same(expected, order)
    end)

    it('escapes strings as serde_json does', function()
      assert.are.equal('"a\\"b\\\\c\\b\\f\\n\\r\\t\\u0000\\u001f\\u000b\127/\195\169"',
        S.json_string('a"b\\c\b\f\n\r\t\0\31\11\127/\195\169'))
    end)

    it('writes the layout the specification describes', function()
      local p = path()
      S.save({ b = torch.ones(3), a = torch.zeros(2, { dtype = torch.float64 }), c = torch.ones(1, { dtype = torch.uint8 }),
        e = torch.empty(0, 3), s = torch.tensor(7, { dtype = torch.int16 }) }, p, { k = 'v' })
      local s = read_all(p)
      local n = le_u64(s)
      assert.are.equal(0, n % 8, 'header size a multiple of 8')
      local header = s:sub(9, 8 + n)
      assert.are.equal('{', header:sub(1, 1))
      local json_end = header:find(' *$')
      assert.are.equal('}', header:sub(json_end - 1, json_end - 1), 'padding is spaces only')
      assert.is_true(n - (json_end - 1) < 8, 'less than 8 bytes of padding')
      assert.is_nil(header:find('[\n\r\t]'), 'compact JSON')
      local obj = S.parse_json(header)
      assert.are.same({ k = 'v' }, { k = obj.__metadata__.k })
      local keys = obj[S.KEYS]
      assert.are.equal('__metadata__', keys[1])
      local at, itemsize = 0, { F64 = 8, F32 = 4, U8 = 1, I16 = 2 }
      for i = 2, #keys do
        local e = obj[keys[i]]
        assert.are.equal(at, e.data_offsets[1], keys[i] .. ' starts where the previous one ended')
        local numel = 1
        for j = 1, e.shape.n do numel = numel * e.shape[j] end
        assert.are.equal(numel * itemsize[e.dtype], e.data_offsets[2] - e.data_offsets[1], keys[i])
        at = e.data_offsets[2]
      end
      assert.are.equal(16 + 12 + 0 + 2 + 1, at)
      assert.are.equal(8 + n + at, #s, 'nothing after the buffer')
      -- the values themselves, little-endian: a (2 x F64 zero) first, then b (3 x F32 one)
      assert.are.equal(('\0'):rep(16) .. ('\0\0\128\63'):rep(3), s:sub(9 + n, 8 + n + 28))
    end)

    it('leaves no temporary file behind and replaces an existing file', function()
      local p = path()
      write_all(p, 'old contents')
      S.save({ x = torch.ones(1) }, p)
      assert.are.same({ 1 }, S.load(p).x:tolist())
      local name = p:match('[^/]*$')
      local ls = io.popen('ls -a ' .. dir)
      for f in ls:lines() do
        assert.is_falsy(f:find(name .. '.tmp', 1, true), 'temporary file left: ' .. f)
      end
      ls:close()
      -- {sync = false} writes the same bytes without the fsyncs
      local q = path()
      S.save({ x = torch.arange(1, 7):reshape(2, 3) }, q, nil, { sync = false })
      local r = path()
      S.save({ x = torch.arange(1, 7):reshape(2, 3) }, r)
      assert.are.equal(read_all(r), read_all(q))
      H.errors_with(function() S.save({ x = torch.ones(1) }, q, nil, 'nosync') end,
        'moontorch.save_safetensors: options must be a table')
    end)
  end)

  describe('reading a file built from the specification', function()
    it('reads float32, int64, bfloat16, float16, uint8 and bool values', function()
      local p = path()
      local header = '{"f":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
        .. '"i":{"dtype":"I64","shape":[],"data_offsets":[8,16]},'
        .. '"h":{"dtype":"BF16","shape":[1,1],"data_offsets":[16,18]},'
        .. '"g":{"dtype":"F16","shape":[1],"data_offsets":[18,20]},'
        .. '"u":{"dtype":"U8","shape":[2],"data_offsets":[20,22]},'
        .. '"b":{"dtype":"BOOL","shape":[2],"data_offsets":[22,24]}}'
      local buffer = bytes(0x00, 0x00, 0xC0, 0x3F) .. bytes(0x00, 0x00, 0x00, 0xC0) -- float32 1.5, -2
        .. bytes(0x05, 0, 0, 0, 0, 0x01, 0, 0)                                       -- int64 2^40 + 5
        .. bytes(0x00, 0xBF)                                                          -- bfloat16 -0.5
        .. bytes(0x00, 0x3C)                                                          -- float16 1
        .. bytes(0xFF, 0x07)                                                          -- uint8 255, 7
        .. bytes(0x01, 0x00)                                                          -- bool true, false
      local file = st_file(header, buffer)
      assert.are.equal(0, (#file - 8 - #buffer) % 8)
      write_all(p, file)
      local r, meta = S.load(p)
      assert.is_nil(meta)
      assert.are.equal(torch.float32, r.f.dtype)
      assert.are.same({ 1.5, -2 }, r.f:tolist())
      assert.are.equal(torch.int64, r.i.dtype)
      assert.are.equal(0, r.i:dim())
      assert.are.equal(2 ^ 40 + 5, r.i:item())
      assert.are.equal(torch.bfloat16, r.h.dtype)
      assert.are.same({ { -0.5 } }, r.h:tolist())
      assert.are.equal(torch.float16, r.g.dtype)
      assert.are.same({ 1 }, r.g:tolist())
      assert.are.same({ 255, 7 }, r.u:tolist())
      assert.are.equal(torch.bool, r.b.dtype)
      assert.are.same({ true, false }, r.b:tolist())
      -- file order with {ordered=true}: the header's order
      assert.are.same({ 'f', 'i', 'h', 'g', 'u', 'b' }, S.load(p, { ordered = true }):keys())
    end)

    it('reads the reference test files: unpadded header, whitespace, "__metadata__": {"format": "pt"}', function()
      local p = path()
      -- test_simple.py test_deserialization: header size 60, no padding
      write_all(p, '<\0\0\0\0\0\0\0{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}' .. ('\0'):rep(16))
      assert.are.same({ { 0, 0 }, { 0, 0 } }, S.load(p).test:tolist())
      -- test_deserialization_metadata: header size 102 (7 spaces of padding, not a multiple of 8)
      write_all(p, 'f\0\0\0\0\0\0\0{"__metadata__":{"framework":"pt"},"test1":{"dtype":"I32","shape":[2,2],'
        .. '"data_offsets":[0,16]}}       ' .. ('\0'):rep(16))
      local r, meta = S.load(p)
      assert.are.same({ framework = 'pt' }, meta)
      assert.are.equal(torch.int32, r.test1.dtype)
      -- what PyTorch tools write: {"format": "pt"}, pretty-printed JSON, metadata after the tensors
      write_all(p, st_file('{\n  "w": {"shape": [2], "dtype": "F32", "data_offsets": [0, 8], "extra": null},\n'
        .. '  "__metadata__": {"format": "pt"}\n}', bytes(0, 0, 0x80, 0x3F, 0, 0, 0, 0x40)))
      r, meta = S.load(p)
      assert.are.same({ format = 'pt' }, meta)
      assert.are.same({ 1, 2 }, r.w:tolist())
      -- no tensors at all
      write_all(p, st_file('{}'))
      r, meta = S.load(p)
      assert.are.same({}, r)
      assert.is_nil(meta)
    end)

    it('decodes \\u escapes, surrogate pairs included, in names and metadata', function()
      local p = path()
      write_all(p, st_file('{"__metadata__":{"k\\u00e9":"\\ud83d\\ude00\\n\\/"},'
        .. '"\\u0041\\u00e9\\u65e5":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', '\42'))
      local r, meta = S.load(p)
      assert.are.same({ ['k\195\169'] = '\240\159\152\128\n/' }, meta)
      assert.are.same({ 42 }, r['A\195\169\230\151\165']:tolist())
    end)
  end)

  describe('malformed files', function()
    local function load_error(content, problem)
      local p = path()
      write_all(p, content)
      -- `moontorch.load_safetensors: <path>: <...problem...>`
      local err = H.errors_with(function() S.load(p) end, 'moontorch.load_safetensors: ' .. p .. ': ')
      local _, stop = err:find('moontorch.load_safetensors: ' .. p .. ': ', 1, true)
      assert(err:find(problem, stop + 1, true), 'expected the problem "' .. problem .. '", got: ' .. err)
      return p
    end
    local ok_entry = '"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}'
    local eight = ('\0'):rep(8)

    it('a file too short for the header size', function()
      load_error('', 'file too short')
      load_error('\8\0\0\0\0', 'file too short')
    end)
    it('a header size beyond the file or the 100 MB limit', function()
      load_error(u64le(100) .. '{}', 'larger than the rest of the file')
      load_error(u64le(2 ^ 40) .. '{}', 'exceeds the 100 MB limit')
      load_error('\0\0\0\0\0\0\0\255{}', 'exceeds the 100 MB limit')
      load_error(u64le(100000001) .. '{}', 'exceeds the 100 MB limit')
    end)
    it('invalid JSON', function()
      load_error(st_file(''), 'invalid JSON header')
      load_error(st_file('{"a":'), 'invalid JSON header')
      load_error(st_file('{' .. ok_entry), 'invalid JSON header')
      load_error(st_file('{' .. ok_entry .. ',}', eight), 'invalid JSON header')
      load_error(st_file("{'a':1}"), 'invalid JSON header')
      load_error(st_file('{} x'), 'trailing characters')
      load_error(st_file('{}{}'), 'trailing characters')
    end)
    it('JSON details: escapes, surrogates, control characters, numbers, nesting, duplicates', function()
      load_error(st_file('{"__metadata__":{"k":"\\x"}}'), 'bad escape')
      load_error(st_file('{"__metadata__":{"k":"\\u12"}}'), 'bad \\u escape')
      load_error(st_file('{"__metadata__":{"k":"\\ud800"}}'), 'unpaired surrogate')
      load_error(st_file('{"__metadata__":{"k":"\\ud800\\u0041"}}'), 'unpaired surrogate')
      load_error(st_file('{"__metadata__":{"k":"\\udc00"}}'), 'unpaired surrogate')
      load_error(st_file('{"__metadata__":{"k":"a\tb"}}'), 'control character')
      load_error(st_file('{"__metadata__":{"k":"abc}}'), 'unterminated string')
      load_error(st_file('{"a":{"dtype":"F32","shape":[02],"data_offsets":[0,8]}}', eight), 'leading zero')
      load_error(st_file('{"a":{"dtype":"F32","shape":[2.],"data_offsets":[0,8]}}', eight), 'bad number')
      load_error(st_file('{"a":{"dtype":"F32","shape":[-],"data_offsets":[0,8]}}', eight), 'invalid JSON')
      load_error(st_file('{"a":{"dtype":"F32","shape":[+2],"data_offsets":[0,8]}}', eight), 'invalid JSON')
      load_error(st_file('{"x":' .. ('['):rep(100) .. (']'):rep(100) .. '}'), 'nested too deeply')
      load_error(st_file('{' .. ok_entry .. ',' .. ok_entry .. '}', eight), 'duplicate key "a"')
      load_error(st_file('{"__metadata__":{},"__metadata__":{}}'), 'duplicate key')
      load_error(st_file('{"__metadata__":{"k":"\255"}}'), 'not valid UTF-8')
      load_error(st_file('{"__metadata__":{"k":"\192\128"}}'), 'not valid UTF-8') -- overlong NUL
      load_error(st_file('{"__metadata__":{"k":"\237\160\128"}}'), 'not valid UTF-8') -- encoded surrogate
    end)
    it('a header that is not a JSON object', function()
      load_error(st_file('[]'), 'not a JSON object')
      load_error(st_file('"a"'), 'not a JSON object')
      load_error(st_file('null'), 'not a JSON object')
      load_error(st_file('12'), 'not a JSON object')
    end)
    it('metadata that is not strings by string', function()
      load_error(st_file('{"__metadata__":[]}'), '"__metadata__" is not a JSON object')
      load_error(st_file('{"__metadata__":{"k":1}}'), 'value for "k" is not a string')
      load_error(st_file('{"__metadata__":{"k":null}}'), 'value for "k" is not a string')
    end)
    it('an entry that is not an object, or lacks a field', function()
      load_error(st_file('{"a":[1]}'), 'tensor "a": the entry is not a JSON object')
      load_error(st_file('{"a":"F32"}'), 'tensor "a": the entry is not a JSON object')
      load_error(st_file('{"a":{"shape":[2],"data_offsets":[0,8]}}', eight), '"dtype" is missing')
      load_error(st_file('{"a":{"dtype":"F32","data_offsets":[0,8]}}', eight), '"shape" is missing')
      load_error(st_file('{"a":{"dtype":"F32","shape":[2]}}', eight), '"data_offsets" must be')
    end)
    it('an unknown or unsupported dtype', function()
      load_error(st_file('{"a":{"dtype":"F128","shape":[1],"data_offsets":[0,8]}}', eight), 'unknown dtype "F128"')
      load_error(st_file('{"a":{"dtype":"f32","shape":[2],"data_offsets":[0,8]}}', eight), 'unknown dtype "f32"')
      load_error(st_file('{"a":{"dtype":"U16","shape":[4],"data_offsets":[0,8]}}', eight), 'dtype U16 is not supported')
      load_error(st_file('{"a":{"dtype":32,"shape":[2],"data_offsets":[0,8]}}', eight), '"dtype" is missing or not a string')
    end)
    it('shape entries that are not non-negative integers', function()
      for _, s in ipairs { '-2', '2.5', '2.0', '2e0', '"2"', 'null', 'true', '[2]', '1234567890123456789' } do
        load_error(st_file('{"a":{"dtype":"F32","shape":[' .. s .. '],"data_offsets":[0,8]}}', eight),
          'shape" entries must be non-negative integers')
      end
      load_error(st_file('{"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}}', eight), '"shape" is missing or not')
      load_error(st_file('{"a":{"dtype":"F32","shape":[' .. ('1,'):rep(16) .. '2],"data_offsets":[0,8]}}', eight),
        '17 dimensions')
    end)
    it('data_offsets that are not [begin, end] with begin <= end inside the buffer', function()
      local function offs(o) return st_file('{"a":{"dtype":"F32","shape":[2],"data_offsets":' .. o .. '}}', eight) end
      for _, o in ipairs { '[0]', '[0,8,8]', '[]', '[0,"8"]', '[-1,7]', '[0,8.0]', '{"0":8}', '8' } do
        load_error(offs(o), '"data_offsets" must be [begin, end]')
      end
      load_error(offs('[8,0]'), 'begin 8 is after end 0')
      load_error(offs('[0,16]'), 'end 16 is beyond the 8-byte buffer')
      load_error(offs('[8,16]'), 'end 16 is beyond the 8-byte buffer')
    end)
    it('a byte size that is not numel * itemsize', function()
      load_error(st_file('{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', eight), '8 bytes for 3 elements of F32')
      load_error(st_file('{"a":{"dtype":"F64","shape":[2,0],"data_offsets":[0,8]}}', eight), '8 bytes for 0 elements')
    end)
    it('holes, overlaps and trailing bytes in the buffer', function()
      load_error(st_file('{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', eight), 'bytes 0 to 4 of the buffer')
      load_error(st_file('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
        .. '"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}', eight), 'overlaps')
      load_error(st_file('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
        .. '"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', eight), 'overlaps')
      load_error(st_file('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
        .. '"b":{"dtype":"F32","shape":[0],"data_offsets":[6,6]}}', eight), 'bytes 4 to 6')
      load_error(st_file('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', eight), 'cover 4 bytes of the 8-byte')
      load_error(st_file('{}', 'x'), 'cover 0 bytes of the 1-byte buffer')
      -- the reference's polyglot test: valid file followed by extra data
      load_error('<\0\0\0\0\0\0\0{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}' .. ('\0'):rep(16)
        .. 'extra_bogus_data_for_polyglot_file', 'trailing bytes')
    end)
    it('every prefix of a valid file fails cleanly', function()
      local p = path()
      S.save({ w = torch.arange(0, 5, { dtype = torch.float32 }), b = torch.tensor({ 7 }, { dtype = torch.int64 }),
        s = torch.tensor(true) }, p, { format = 'pt' })
      local whole = read_all(p)
      assert.are.equal(5, #S.load(p).w:tolist())
      local q = path()
      for len = 0, #whole - 1 do
        write_all(q, whole:sub(1, len))
        local ok, err = pcall(S.load, q)
        assert.is_false(ok, 'prefix of ' .. len .. ' bytes loaded')
        assert.is_truthy(tostring(err):find('moontorch.load_safetensors: ' .. q .. ': ', 1, true), err)
      end
    end)
    it('a shape moontorch cannot allocate, even with no elements', function()
      load_error(st_file('{"a":{"dtype":"F32","shape":[999999999999999,999999999999999,0],"data_offsets":[0,0]}}'),
        'tensor "a": cannot make a tensor of that shape')
    end)
    it('random byte changes to a valid file load or fail cleanly', function()
      local p = path()
      S.save({ a = torch.arange(0, 6, { dtype = torch.float32 }):reshape(3, 2), b = torch.tensor({ 1, 2 }, { dtype = torch.int64 }),
        c = torch.tensor(true) }, p, { format = 'pt' })
      local whole = { read_all(p):byte(1, -1) }
      local q = path()
      local seed = 12345
      local function rand(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n end
      for _ = 1, 2000 do
        local b = { unpack(whole) }
        for _ = 1, 1 + rand(3) do b[1 + rand(#b)] = rand(256) end
        write_all(q, string.char(unpack(b)))
        local ok, err = pcall(S.load, q)
        assert.is_true(ok or tostring(err):find('moontorch.load_safetensors: ' .. q .. ': ', 1, true) ~= nil,
          tostring(err))
      end
    end)
    it('a missing file, a directory, bad arguments', function()
      H.errors_with(function() S.load(dir .. '/mt_st_no_such_file.safetensors') end, 'cannot open the file')
      local ok, err = pcall(S.load, dir)
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find('moontorch.load_safetensors: ' .. dir .. ': ', 1, true), err)
      H.errors_with(function() S.load(42) end, 'moontorch.load_safetensors: path must be a string')
      H.errors_with(function() S.load(path(), 'ordered') end, 'options must be a table')
    end)
    it('errors point at the caller', function()
      local p = load_error(st_file('[]'), 'not a JSON object')
      local _, err = pcall(function() S.load(p) end)
      assert.is_truthy(err:find('safetensors_io_spec.lua:%d+: moontorch%.load_safetensors'), err)
    end)
  end)

  describe('the C header parser (core/safetensors.c)', function()
    local ffi = require 'ffi'
    local C = require('moontorch.ffi').C
    local function load_message(content)
      local p = path()
      write_all(p, content)
      local ok, err = pcall(S.load, p)
      if ok then return nil end
      local prefix = 'moontorch.load_safetensors: ' .. p .. ': '
      local _, stop = tostring(err):find(prefix, 1, true)
      assert(stop, tostring(err))
      return tostring(err):sub(stop + 1)
    end

    it('gives the messages of the Lua JSON reader for the same faults, in 3000 edited real headers', function()
      -- a second implementation as the reference: S.parse_json (Lua) and S.valid_utf8
      local p = path()
      S.save({ w = torch.ones(2, 3), ['n\\a"me'] = torch.tensor({ 7 }, { dtype = torch.int64 }),
        s = torch.tensor(true) }, p, { format = 'pt', ['k\n'] = 'caf\195\169' })
      local headers = { read_all(p) }
      headers[1] = headers[1]:sub(9, 8 + le_u64(headers[1]))
      headers[2] = '{\n "w": {"shape": [2], "dtype": "F32", "data_offsets": [0, 8], "x": [null, true, -1.5e3, {}]},\n'
        .. ' "\\u0041\\ud83d\\ude00": {"dtype": "U8", "shape": [], "data_offsets": [8, 9]}, "__metadata__": {"a": "\\/"}\n}'
      local tokens = { '{', '}', '[', ']', ',', ':', '"', '\\', '\\u', '\\ud800', '\\udc00', '0', '-', '-0', '1e', '.',
        '9999999999999999', 'true', 'null', ' ', '\0', '\255', '\192\128', '"dtype"', '"shape"', '"__metadata__"',
        '"U16"', '[0,8]', '{}', '"a"', '\t', '\\u0000' }
      local seed = 4242
      local function rand(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n end
      local json_faults, semantic = 0, 0
      for _ = 1, 3000 do
        local h = headers[1 + rand(#headers)]
        for _ = 1, 1 + rand(3) do
          local at = rand(#h + 1)
          local r = rand(4)
          if r == 0 then h = h:sub(1, at) .. tokens[1 + rand(#tokens)] .. h:sub(at + 1)
          elseif r == 1 then h = h:sub(1, at) .. h:sub(at + 2 + rand(4))
          elseif r == 2 then h = h:sub(1, at) .. string.char(rand(256)) .. h:sub(at + 2)
          else h = h:sub(1, at) .. tokens[1 + rand(#tokens)] .. h:sub(at + 2 + rand(3)) end
        end
        local msg = load_message(st_file(h, ('\0'):rep(rand(2) == 0 and 9 or 25), true))
        if not S.valid_utf8(h) then
          assert.are.equal('the header is not valid UTF-8', msg)
        else
          local obj, jerr = S.parse_json(h)
          if jerr then
            json_faults = json_faults + 1
            assert.are.equal(jerr, msg, h)
          elseif msg then
            semantic = semantic + 1
            assert.is_nil(msg:find('invalid JSON', 1, true), msg)
          end
        end
      end
      assert.is_true(json_faults > 500 and semantic > 100, json_faults .. ' ' .. semantic)
    end)

    it('bounds nesting at 64 levels, also in fields it ignores, however deep the input goes', function()
      local prefix = '{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":'
      local function entry_with(x) return st_file(prefix .. x .. '}}', '\1') end
      assert.is_nil(load_message(entry_with(('['):rep(62) .. (']'):rep(62)))) -- root, entry, 62 arrays: 64
      assert.are.equal(('invalid JSON header at byte %d: nested too deeply'):format(#prefix + 62), -- the 63rd [
        load_message(entry_with(('['):rep(63) .. (']'):rep(63))))
      local deep = '{"x":' .. ('[{"a":'):rep(100000) -- the 65th level is the 32nd {, at byte 5 + 6 * 31 + 1
      assert.are.equal('invalid JSON header at byte 192: nested too deeply', load_message(st_file(deep)))
      assert.are.equal('invalid JSON header at byte 192: nested too deeply', select(2, S.parse_json(deep)))
    end)

    it('refuses numbers it cannot hold exactly, whatever their length', function()
      local function shape(s) return st_file('{"a":{"dtype":"U8","shape":[' .. s .. '],"data_offsets":[0,0]}}') end
      for _, s in ipairs { '1e400', ('9'):rep(5000), '1' .. ('0'):rep(15), '-' .. ('0'):rep(2) } do
        assert.is_truthy(load_message(shape(s)):find('shape" entries must be non-negative integers', 1, true) or
          load_message(shape(s)):find('leading zero', 1, true), s)
      end
      assert.are.equal('tensor "a": 0 bytes for 999999999999999 elements of U8 (1 bytes each)',
        load_message(shape('999999999999999')))
      -- "-0" is a plain integer, as in the Lua reader
      assert.are.same({ 0 }, S.load((function()
        local p = path()
        write_all(p, shape('-0'))
        return p
      end)()).a:size())
      assert.are.equal('tensor "a": "data_offsets" end 999999999999999 is beyond the 0-byte buffer',
        load_message(st_file('{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,999999999999999]}}')))
    end)

    it('takes NUL bytes as the JSON grammar says: escaped in names, refused raw', function()
      local p = path()
      write_all(p, st_file('{"a\\u0000b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', '\9'))
      assert.are.same({ 9 }, S.load(p)['a\0b']:tolist())
      assert.are.equal('invalid JSON header at byte 3: control character in a string',
        load_message(st_file('{"a\0b":{}}')))
      assert.are.equal('invalid JSON header at byte 1: expected a string key', load_message(st_file('{\0}')))
      assert.are.equal('invalid JSON header at byte 5: unexpected character', load_message(st_file('{"a":\0}')))
    end)

    it('quotes at most 240 bytes of a name in a message, cut at a character', function()
      local name = ('\230\151\165'):rep(100) -- 300 bytes, 100 characters
      local msg = load_message(st_file('{"' .. name .. '":[]}'))
      assert.are.equal('tensor "' .. ('\230\151\165'):rep(79) .. '"...: the entry is not a JSON object', msg)
      msg = load_message(st_file('{"' .. ('\\u0001'):rep(300) .. '":[]}'))
      assert.are.equal('tensor "' .. ('\\u0001'):rep(39) .. '"...: the entry is not a JSON object', msg)
    end)

    it('is reachable from C: header size, entries in header and buffer order, metadata', function()
      local n = ffi.new('uint64_t[1]')
      assert.are.equal(C.MT_EFORMAT, C.mt_st_header_size(nil, 0, n))
      assert.are.equal('load_safetensors: file too short for a header size (0 bytes)', ffi.string(C.mt_last_error()))
      assert.are.equal(C.MT_EFORMAT, C.mt_st_header_size(u64le(9), 16, n))
      assert.are.equal('load_safetensors: header size 9 is larger than the rest of the file (8 bytes)',
        ffi.string(C.mt_last_error()))
      assert.are.equal(0, C.mt_st_header_size(u64le(8), 16, n))
      assert.are.equal(8, tonumber(n[0]))

      local json = '{"b":{"dtype":"F64","shape":[1],"data_offsets":[4,12]},"a\\u0000":{"dtype":"I16","shape":[2,1],'
        .. '"data_offsets":[0,4]},"e":{"dtype":"BOOL","shape":[0],"data_offsets":[12,12]}}'
      local hp = ffi.new('mt_st_header *[1]')
      assert.are.equal(0, C.mt_st_header_parse(json, #json, 12, hp))
      local h = ffi.gc(hp[0], C.mt_st_header_free)
      assert.are.equal(3, tonumber(C.mt_st_header_count(h)))
      local function names(by_offset)
        local r = {}
        for i = 0, 2 do
          local e = C.mt_st_header_entry(h, i, by_offset)
          r[#r + 1] = ffi.string(e.name, e.name_len)
        end
        return r
      end
      assert.are.same({ 'b', 'a\0', 'e' }, names(0))
      assert.are.same({ 'a\0', 'b', 'e' }, names(1))
      local e = C.mt_st_header_entry(h, 1, 0)
      assert.are.equal(C.MT_INT16, e.dtype)
      assert.are.same({ 2, 2, 1, 0, 4 }, { e.ndim, tonumber(e.sizes[0]), tonumber(e.sizes[1]), tonumber(e.data_begin),
        tonumber(e.data_end) })
      assert.is_true(C.mt_st_header_entry(h, 3, 0) == nil)
      assert.is_true(C.mt_st_header_entry(h, -1, 1) == nil)
      assert.are.equal(-1, tonumber(C.mt_st_header_metadata_count(h)))
      local k, v, kl, vl = ffi.new('const char *[1]'), ffi.new('const char *[1]'), ffi.new('size_t[1]'), ffi.new('size_t[1]')
      assert.are.equal(C.MT_ERANGE, C.mt_st_header_metadata(h, 0, k, kl, v, vl))

      json = '{"__metadata__":{"x":"1","y":"2"}}'
      assert.are.equal(0, C.mt_st_header_parse(json, #json, 0, hp))
      h = ffi.gc(hp[0], C.mt_st_header_free)
      assert.are.equal(2, tonumber(C.mt_st_header_metadata_count(h)))
      assert.are.equal(0, C.mt_st_header_metadata(h, 1, k, kl, v, vl))
      assert.are.same({ 'y', '2' }, { ffi.string(k[0], kl[0]), ffi.string(v[0], vl[0]) })
      assert.are.equal(0, tonumber(C.mt_st_header_count(h)))

      -- the text is not NUL-terminated: only n bytes are read (ASan would say otherwise)
      local buf = ffi.new('char[2]', '{}')
      assert.are.equal(0, C.mt_st_header_parse(buf, 2, 0, hp))
      C.mt_st_header_free(hp[0])
      assert.are.equal(C.MT_EFORMAT, C.mt_st_header_parse(buf, 1, 0, hp))
      assert.is_true(hp[0] == nil)
      assert.are.equal(C.MT_EFORMAT, C.mt_st_header_parse(nil, 100000001, 0, hp))
      assert.are.equal('load_safetensors: header size 100000001 exceeds the 100 MB limit', ffi.string(C.mt_last_error()))
      C.mt_st_header_free(nil)
    end)
  end)

  describe('saving errors', function()
    it('refuses what the format cannot hold', function()
      local p = path()
      H.errors_with(function() S.save({ [1] = torch.ones(1) }, p) end, 'moontorch.save_safetensors: tensor names must be strings')
      H.errors_with(function() S.save({ a = 1 }, p) end, 'a is not a tensor')
      H.errors_with(function() S.save({ __metadata__ = torch.ones(1) }, p) end, '__metadata__ is reserved')
      H.errors_with(function() S.save({ ['\255'] = torch.ones(1) }, p) end, 'not valid UTF-8')
      H.errors_with(function() S.save({ a = torch.ones(1) }, p, { k = 1 }) end, 'metadata keys and values must be strings')
      H.errors_with(function() S.save({ a = torch.ones(1) }, p, 'pt') end, 'metadata must be a table')
      H.errors_with(function() S.save(torch.ones(1), p) end, 'expected a table')
      H.errors_with(function() S.save({ a = torch.ones(1) }, nil) end, 'path must be a string')
      H.errors_with(function() S.save({ a = torch.ones(1) }, dir .. '/no/such/dir/x.safetensors') end, 'cannot open')
      assert.is_nil(io.open(p, 'rb'), 'nothing written after a refusal')
    end)
  end)
end)
