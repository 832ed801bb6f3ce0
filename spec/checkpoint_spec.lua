-- torch.save / torch.load (lua/checkpoint.lua, core/checkpoint.c): round trips of every kind of
-- value (every dtype, strides, shared storages, cycles, classes, modules, parameters), the
-- errors, the checksum (XXH3-64, checked against published test vectors), a fuzz of truncations
-- and bit flips (every one an error, never a crash or a wrong value), and a process killed in
-- the middle of a save (the previous checkpoint survives).
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local class = require 'moontorch.class'
local ffi = require 'ffi'
local bit = require 'bit'
local C = require('moontorch.ffi').C

local function tmp() return os.tmpname() end
local function roundtrip(obj, opts)
  local p = tmp()
  torch.save(obj, p)
  local r = torch.load(p, opts)
  os.remove(p)
  return r
end
local read_all, write_all = H.read_file, H.write_file
local function exists(p)
  local f = io.open(p, 'rb')
  if f then f:close() end
  return f ~= nil
end
-- the message of a failed call, without the "file:line: " position
local function message(fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, 'expected an error')
  return (tostring(err):gsub('^[^:]*:%d+: ', ''))
end

local all_dtypes = { torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.float32,
  torch.float64, torch.bool, torch.bfloat16 }

describe('checkpoint round trips', function()
  it('tensors of every dtype keep their dtype, shape and values', function()
    for _, d in ipairs(all_dtypes) do
      local t = (torch.arange(0, 24):reshape(2, 3, 4) % 5 - 1):to(d)
      local r = roundtrip(t)
      assert.are.equal(d, r.dtype)
      assert.are.same({ 2, 3, 4 }, H.shape(r))
      assert.is_true(torch.equal(r, t), tostring(d))
    end
    -- int64 beyond 2^53 and float values that are not plain numbers
    local big = torch.tensor({ 0, 1, -1 }, { dtype = torch.int64 })
    big[1] = 2 ^ 62
    local rb = roundtrip(big)
    assert.is_true(torch.equal(rb, big))
    local f = torch.tensor({ math.huge, -math.huge, 0 / 0, -0.0, 1e-40 }, { dtype = torch.float64 })
    local rf = roundtrip(f)
    local v = rf:tolist()
    assert.are.equal(math.huge, v[1])
    assert.are.equal(-math.huge, v[2])
    assert.is_true(v[3] ~= v[3])
    assert.are.equal('-0', tostring(v[4]))
    assert.are.equal(1e-40, v[5])
  end)

  it('non-contiguous tensors keep their strides and offset', function()
    local base = torch.randn(6, 7)
    local views = { base:t(), base:narrow(2, 3, 4), base:select(1, 2), base:t():narrow(1, 2, 3),
      base:as_strided({ 3, 3 }, { 14, 2 }, 1) }
    for _, v in ipairs(views) do
      local r = roundtrip(v)
      assert.are.same(v:stride(), r:stride())
      assert.are.equal(v:storage_offset(), r:storage_offset())
      assert.are.same(H.shape(v), H.shape(r))
      assert.is_true(torch.equal(r, v))
    end
  end)

  it('views of one storage share it after loading; each storage is saved once, whole', function()
    local a = torch.arange(0, 20):float()
    local obj = { a = a, v = a:narrow(1, 5, 10), m = a:view(4, 5):t(), again = a }
    local r = roundtrip(obj)
    assert.are.equal(r.a, r.again) -- the same tensor twice: one tensor
    r.a[6] = 100
    assert.are.equal(100, r.v[2]:item())
    assert.are.equal(100, r.m[1][2]:item())
    -- two tensors over one 4 MB storage make a file of about 4 MB, not 8
    local p = tmp()
    local big = torch.zeros(1024 * 1024)
    torch.save({ big, big:narrow(1, 1, 1024 * 1024 - 1) }, p)
    local size = #read_all(p)
    os.remove(p)
    assert.is_true(size < 4 * 1024 * 1024 + 4096, size)
  end)

  it('0-dim and empty tensors', function()
    local s = roundtrip(torch.tensor(3.5))
    assert.are.equal(0, s:dim())
    assert.are.equal(3.5, s:item())
    for _, t in ipairs { torch.zeros(0), torch.zeros(3, 0), torch.zeros(0, 4):t(), torch.ones(5):narrow(1, 3, 0) } do
      local r = roundtrip(t)
      assert.are.same(H.shape(t), H.shape(r))
      assert.are.equal(0, r:numel())
    end
  end)

  it('numbers, binary strings, booleans, nested tables and keys of every kind', function()
    local tk = { 'table key' }
    local s = {}
    for i = 0, 255 do s[#s + 1] = string.char(i) end
    local obj = {
      n = 1.5, neg = -7, big = 2 ^ 53, tiny = 5e-324, inf = math.huge, ninf = -math.huge,
      bin = table.concat(s) .. '\0end', empty = '', yes = true, no = false,
      list = { 1, 2, { 3, { 4, { 5 } } } },
      [1] = 'one', [2.5] = 'two and a half', [true] = 'yes', [false] = 'no', [tk] = 'a table as a key',
    }
    local r = roundtrip(obj)
    assert.are.equal(1.5, r.n)
    assert.are.equal(-7, r.neg)
    assert.are.equal(2 ^ 53, r.big)
    assert.are.equal(5e-324, r.tiny)
    assert.are.equal(math.huge, r.inf)
    assert.are.equal(-math.huge, r.ninf)
    assert.are.equal(obj.bin, r.bin)
    assert.are.equal('', r.empty)
    assert.is_true(r.yes)
    assert.is_false(r.no)
    assert.are.same(obj.list, r.list)
    assert.are.equal('one', r[1])
    assert.are.equal('two and a half', r[2.5])
    assert.are.equal('yes', r[true])
    assert.are.equal('no', r[false])
    local found
    for k, v in pairs(r) do
      if type(k) == 'table' then found = { k, v } end
    end
    assert.are.same({ 'table key' }, found[1])
    assert.are.equal('a table as a key', found[2])
    -- plain values as the whole object
    assert.are.equal(42, roundtrip(42))
    assert.are.equal('s', roundtrip('s'))
    assert.is_false(roundtrip(false))
    assert.is_nil(roundtrip(nil))
  end)

  it('shared references and cycles', function()
    local shared = { x = 1 }
    local t = torch.ones(2)
    local obj = { a = shared, b = shared, list = { shared, t, t } }
    obj.self = obj
    obj.list.parent = obj
    local r = roundtrip(obj)
    assert.are.equal(r.a, r.b)
    assert.are.equal(r.a, r.list[1])
    assert.are.equal(r.list[2], r.list[3])
    assert.are.equal(r, r.self)
    assert.are.equal(r, r.list.parent)
    -- a table used as a key and as a value is one table
    local k = {}
    local r2 = roundtrip({ [k] = k })
    local kk, vv = next(r2)
    assert.are.equal(kk, vv)
  end)

  it('OrderedDict keeps its order and values', function()
    local d = torch.OrderedDict()
    d.zeta = torch.ones(2)
    d.alpha = 'x'
    d['a.b'] = { 1, 2 }
    local r = roundtrip(d)
    assert.are.equal('torch.OrderedDict', class.typename(r))
    assert.are.same({ 'zeta', 'alpha', 'a.b' }, r:keys())
    assert.is_true(torch.equal(r.zeta, torch.ones(2)))
    assert.are.same({ 1, 2 }, r['a.b'])
  end)

  it('instances of registered classes, with and without __serialize, in cycles', function()
    local Point = torch.class('ckspec.Point')
    function Point:__init(x, y) self.x, self.y = x, y end
    function Point:norm2() return self.x * self.x + self.y * self.y end
    local p = Point(3, 4)
    p.me = p
    p.t = torch.arange(0, 3)
    local r = roundtrip({ p, p })
    assert.are.equal('ckspec.Point', class.typename(r[1]))
    assert.are.equal(r[1], r[2])
    assert.are.equal(25, r[1]:norm2())
    assert.are.equal(r[1], r[1].me)
    assert.is_true(torch.equal(r[1].t, torch.arange(0, 3)))

    -- a class with __serialize / __deserialize, referred to from inside its own state
    local Box = torch.class('ckspec.Box')
    function Box:__init(v) self.v = v end
    function Box.__serialize(b) return { value = b.v, hold = b.hold } end
    function Box.__deserialize(cls, s) local b = cls(s.value); b.hold = s.hold; return b end
    local b = Box(torch.ones(2))
    b.hold = { b }
    local rb = roundtrip({ b = b, again = b })
    assert.are.equal('ckspec.Box', class.typename(rb.b))
    assert.are.equal(rb.b, rb.again)
    assert.are.equal(rb.b, rb.b.hold[1]) -- the placeholder was replaced by the object
    assert.is_true(torch.equal(rb.b.v, torch.ones(2)))
  end)

  it('nn.Parameter keeps its kind and requires_grad; plain tensors their requires_grad', function()
    local w = nn.Parameter(torch.randn(3, 2))
    local frozen = nn.Parameter(torch.randn(2), false)
    local leaf = torch.randn(2):requires_grad_(true)
    local r = roundtrip({ w = w, frozen = frozen, leaf = leaf, plain = torch.ones(1) })
    assert.is_true(bit.band(r.w._flags, 2) ~= 0)
    assert.is_true(r.w.requires_grad)
    assert.is_true(bit.band(r.frozen._flags, 2) ~= 0)
    assert.is_false(r.frozen.requires_grad)
    assert.is_true(bit.band(r.leaf._flags, 2) == 0)
    assert.is_true(r.leaf.requires_grad)
    assert.is_false(r.plain.requires_grad)
    assert.is_true(tostring(r.w):find('Parameter containing', 1, true) ~= nil)
    assert.is_true(torch.equal(r.w, w))
  end)

  it('a whole nn.Module: same structure, state_dict and outputs', function()
    torch.manual_seed(0)
    local net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    local r = roundtrip(net)
    assert.are.equal(tostring(net), tostring(r))
    local a, b = net:state_dict(), r:state_dict()
    assert.are.same(a:keys(), b:keys())
    for _, k in ipairs(a:keys()) do assert.is_true(torch.equal(a[k], b[k]), k) end
    local x = torch.randn(5, 4)
    assert.is_true(torch.equal(net:forward(x), r:forward(x)))
    local n = 0
    for _, p in ipairs(r:parameters()) do
      assert.is_true(p.requires_grad)
      n = n + 1
    end
    assert.are.equal(4, n)
    -- and a state_dict loads back into a fresh module
    local fresh = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    fresh:load_state_dict(roundtrip(net:state_dict()))
    assert.is_true(torch.equal(fresh:forward(x), net:forward(x)))
  end)

  it('optimizers: a state_dict, and a whole SGD saved with its model keeps stepping that model', function()
    local optim = require 'moontorch.optim'
    torch.manual_seed(3)
    local net = nn.Linear(3, 2)
    local opt = optim.SGD(net:parameters(), { lr = 0.1, momentum = 0.9 })
    local x = torch.randn(4, 3)
    net(x):sum():backward()
    opt:step()
    local sd = roundtrip(opt:state_dict())
    local want = opt:state_dict()
    assert.is_true(torch.equal(sd.state[0].momentum_buffer, want.state[0].momentum_buffer))
    assert.is_true(torch.equal(sd.state[1].momentum_buffer, want.state[1].momentum_buffer))
    assert.are.same(want.param_groups[1].params, sd.param_groups[1].params)
    assert.are.equal(0.1, sd.param_groups[1].lr)
    local both = roundtrip({ model = net, opt = opt })
    assert.is_true(rawequal(both.opt.param_groups[1].params[1], both.model.weight))
    assert.is_true(rawequal(both.opt.param_groups[1].params[2], both.model.bias))
    -- one more step on each side: the same numbers (momentum buffers came along)
    for _, pair in ipairs({ { net, opt }, { both.model, both.opt } }) do
      pair[2]:zero_grad()
      pair[1](x):sum():backward()
      pair[2]:step()
    end
    assert.is_true(torch.equal(both.model.weight, net.weight))
    assert.is_true(torch.equal(both.model.bias, net.bias))
  end)

  it('map_location = cpu, and {mmap = true}: copy-on-write views that outlive the load', function()
    local t = torch.randn(1000)
    local p = tmp()
    torch.save({ t = t, v = t:narrow(1, 10, 5) }, p)
    assert.is_true(torch.equal(torch.load(p, { map_location = 'cpu' }).t, t))
    assert.is_true(torch.equal(torch.load(p, 'cpu').t, t))
    local m = torch.load(p, { mmap = true })
    collectgarbage()
    assert.is_true(torch.equal(m.t, t))
    m.t[10] = 42 -- private: the file does not change
    assert.are.equal(42, m.v[1]:item())
    assert.is_true(torch.equal(torch.load(p).t, t))
    m = nil
    collectgarbage()
    collectgarbage()
    os.remove(p)
  end)

  it('saving over an existing file replaces it and leaves no temporary file', function()
    local dir = tmp()
    os.remove(dir)
    os.execute('mkdir -p ' .. dir)
    local p = dir .. '/ck.pt'
    torch.save({ v = 1 }, p)
    torch.save({ v = 2 }, p)
    torch.save({ v = 3 }, p, { sync = false })
    assert.are.equal(3, torch.load(p).v)
    local ls = io.popen('ls ' .. dir):read('*a')
    assert.are.equal('ck.pt\n', ls)
    -- a save that fails half-way keeps the old file and removes its temporary file
    assert.is_false(pcall(torch.save, { a = torch.ones(3), f = print }, p))
    assert.are.equal(3, torch.load(p).v)
    assert.are.equal('ck.pt\n', io.popen('ls ' .. dir):read('*a'))
    os.execute('rm -rf ' .. dir)
  end)

  it('{sync = false} makes a new file, replaces an old one, and leaves tensors mapped from the old one intact', function()
    local dir = tmp()
    os.remove(dir)
    os.execute('mkdir -p ' .. dir)
    local p = dir .. '/ck.pt'
    local a = torch.arange(1, 200001, { dtype = torch.float32 })
    torch.save({ t = a }, p, { sync = false }) -- no old file: a plain rename
    local mapped = torch.load(p, { mmap = true })
    torch.save({ t = a * 2 }, p, { sync = false }) -- over it: the names are exchanged, the old file removed
    assert.are.equal('ck.pt\n', io.popen('ls ' .. dir):read('*a'))
    assert.is_true(torch.equal(torch.load(p).t, a * 2))
    -- the mapping still reads the old file's bytes (the file was unlinked, not truncated)
    assert.is_true(torch.equal(mapped.t, a))
    mapped = nil
    collectgarbage()
    collectgarbage()
    os.execute('rm -rf ' .. dir)
  end)
end)

describe('checkpoint errors', function()
  it('values that cannot be saved, naming where they are', function()
    local p = tmp()
    assert.are.equal('moontorch.save: cannot save a function (at .a.f)', message(torch.save, { a = { f = print } }, p))
    assert.are.equal('moontorch.save: cannot save a function (at the object itself)', message(torch.save, print, p))
    assert.are.equal('moontorch.save: cannot save a thread (at .list[2])',
      message(torch.save, { list = { 1, coroutine.create(print) } }, p))
    assert.are.equal('moontorch.save: cannot save a userdata (at .io)', message(torch.save, { io = io.stdout }, p))
    assert.are.equal('moontorch.save: cannot save a cdata value that is not a tensor (at [1])',
      message(torch.save, { ffi.new('int[1]') }, p))
    H.errors_with(function() torch.save(setmetatable({}, {}), p) end, 'not a registered class')
    H.errors_with(function() torch.save({}, 42) end, 'moontorch.save: path must be a string or an open file')
    H.errors_with(function() torch.save({}, '/nonexistent/dir/x.pt') end, 'moontorch.save: /nonexistent/dir/x.pt: cannot create')
    os.remove(p)
  end)

  it('missing or foreign files, unknown classes, unavailable devices', function()
    assert.are.equal('moontorch.load: /nonexistent/x.pt: cannot open the file (No such file or directory)',
      message(torch.load, '/nonexistent/x.pt'))
    local p = tmp()
    write_all(p, ('PK\3\4'):rep(40)) -- PyTorch's zip archive: read by torch.load_pytorch (issue 26), damaged here
    H.errors_with(function() torch.load(p) end, 'moontorch.load: ' .. p .. ': not a zip archive, or a damaged one')
    write_all(p, ('XY\3\4'):rep(40))
    H.errors_with(function() torch.load(p) end, 'moontorch.load: ' .. p .. ': not a moontorch checkpoint')
    write_all(p, '')
    H.errors_with(function() torch.load(p) end, 'too short')
    local Gone = torch.class('ckspec.Gone')
    torch.save({ x = Gone() }, p)
    class.registry['ckspec.Gone'] = nil
    H.errors_with(function() torch.load(p) end, "moontorch.load: " .. p .. ": unknown class 'ckspec.Gone'")
    torch.save(torch.ones(2), p)
    if not torch.cuda.is_available() then -- no backend ("built without CUDA"), or one without a device
      H.errors_with(function() torch.load(p, { map_location = 'cuda' }) end,
        torch.cuda.is_built() and 'no CUDA device is available (0 devices' or 'built without CUDA')
    end
    H.errors_with(function() torch.load(p, { map_location = 'cuda:1' }) end, 'moontorch.load: ' .. p .. ': map_location')
    os.remove(p)
  end)
end)

describe('checkpoint checksum', function()
  it('is XXH3-64 (published test vectors) on every code path', function()
    -- XXH3_64bits of the empty input is 0x2D06800538D394C2 (xxHash's documentation and test
    -- suite); the other values were produced by the reference libxxhash 0.8.1 (XXH3_64bits)
    -- over the bytes i % 251, i = 0 .. n-1.
    local buf = ffi.new('uint8_t[?]', 4096)
    for i = 0, 4095 do buf[i] = i % 251 end
    assert.are.equal('2d06800538d394c2', bit.tohex(C.mt_xxh3_64(buf, 0)))
    -- every vector loop (scalar, SSE2, AVX2, AVX-512 where the CPU has them) gives the same values
    for _, n in ipairs { 1, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 1024, 1025, 4096 } do
      local want = C.mt_xxh3_64_impl(buf, n, 1)
      for impl = 0, 4 do assert.is_true(C.mt_xxh3_64_impl(buf, n, impl) == want, n .. ' ' .. impl) end
    end
  end)
end)

describe('checkpoint fuzz: damaged files are errors, never crashes or wrong values', function()
  it('every truncation and 400 single-bit flips', function()
    local p = tmp()
    local shared = torch.arange(0, 40):float()
    local obj = { w = torch.randn(3, 4), b = torch.arange(0, 5), name = 'net', list = { 1, 2, { x = true } },
      view = shared:narrow(1, 3, 7), base = shared:view(5, 8):t(), half = torch.ones(3):half(),
      od = torch.OrderedDict { { 'k', torch.ones(2) } }, p = nn.Parameter(torch.zeros(2)) }
    obj.cycle = obj
    torch.save(obj, p)
    local good = read_all(p)
    local bad = tmp()
    local n = 0
    local function must_fail(what)
      local ok, err = pcall(torch.load, bad)
      assert(not ok, what .. ' loaded')
      local msg = tostring(err):gsub('^[^:]*:%d+: ', '')
      assert(msg:sub(1, 14) == 'moontorch.load', what .. ': ' .. tostring(err))
      n = n + 1
    end
    for len = 0, #good - 1 do
      write_all(bad, good:sub(1, len))
      must_fail('a file cut at ' .. len .. ' bytes')
    end
    local rng = 20240611
    for _ = 1, 400 do
      rng = (rng * 1103515245 + 12345) % 2147483648
      local pos = rng % #good + 1
      local bitno = math.floor(rng / 65536) % 8
      write_all(bad, good:sub(1, pos - 1) .. string.char(bit.bxor(good:byte(pos), bit.lshift(1, bitno)))
        .. good:sub(pos + 1))
      must_fail(('a flip of bit %d at byte %d'):format(bitno, pos))
    end
    -- every bit of the header, appended bytes, a zeroed checksum
    for pos = 1, 64 do
      for bitno = 0, 7, 3 do
        write_all(bad, good:sub(1, pos - 1) .. string.char(bit.bxor(good:byte(pos), bit.lshift(1, bitno)))
          .. good:sub(pos + 1))
        must_fail(('a header flip at byte %d'):format(pos))
      end
    end
    write_all(bad, good .. 'x')
    must_fail('appended garbage')
    write_all(bad, good:sub(1, 56) .. ('\0'):rep(8) .. good:sub(65))
    must_fail('a zeroed checksum')
    -- the undamaged file still loads, with its values
    write_all(bad, good)
    local r = torch.load(bad)
    assert.is_true(torch.equal(r.w, obj.w))
    os.remove(bad)
    os.remove(p)
    assert.is_true(n > #good + 400)
  end)

  it('hostile files with a valid checksum: bad records are errors', function()
    -- rebuild a file around a value stream we choose, with a correct checksum, and load it
    local function file_with(stream, storages)
      storages = storages or {}
      local payload, table_ = {}, {}
      local pos = 64
      for _, s in ipairs(storages) do
        table_[#table_ + 1] = ffi.string(ffi.new('uint64_t[2]', pos, #s), 16)
        payload[#payload + 1] = s .. ('\0'):rep((64 - #s % 64) % 64)
        pos = pos + #s + (64 - #s % 64) % 64
      end
      local body = table.concat(payload)
      local tail = table.concat(table_) .. stream
      local size = 64 + #body + #tail
      local head = 'MTCKPT\0\1' .. ffi.string(ffi.new('uint32_t[2]', 1, 0), 8)
        .. ffi.string(ffi.new('uint64_t[5]', #storages, 64 + #body, #stream, size, 0), 40)
      -- the digests: 128 KiB pieces of each payload, then the table and stream
      local digests = {}
      for _, s in ipairs(storages) do
        for off = 0, #s - 1, 131072 do
          local piece = s:sub(off + 1, off + 131072)
          digests[#digests + 1] = ffi.string(ffi.new('uint64_t[1]', C.mt_xxh3_64(piece, #piece)), 8)
        end
      end
      digests[#digests + 1] = ffi.string(ffi.new('uint64_t[1]', C.mt_xxh3_64(tail, #tail)), 8)
      local d = table.concat(digests)
      local h = head .. ffi.string(ffi.new('uint64_t[1]', C.mt_xxh3_64(d, #d)), 8)
      local sum = ffi.string(ffi.new('uint64_t[1]', C.mt_xxh3_64(h, 64)), 8)
      local p = tmp()
      write_all(p, head .. sum .. body .. tail)
      return p
    end
    local function u32(x) return ffi.string(ffi.new('uint32_t[1]', x), 4) end
    local function u64(x) return ffi.string(ffi.new('uint64_t[1]', x), 8) end
    local function tensor_rec(id, sid, dt, sizes, strides, offset, flags)
      local s = '\7' .. u32(id) .. u32(sid) .. string.char(dt, #sizes, flags or 0, 0) .. u64(offset or 0)
      for _, x in ipairs(sizes) do s = s .. u64(x) end
      for _, x in ipairs(strides) do s = s .. u64(x) end
      return s
    end
    local F32 = 6
    -- sanity: a hand-built file loads
    local p = file_with('\5' .. u32(1) .. u64(1) .. '\4' .. u64(1) .. 'w' .. tensor_rec(2, 0, F32, { 2 }, { 1 }),
      { ffi.string(ffi.new('float[2]', 1.5, 2.5), 8) })
    local r = torch.load(p)
    os.remove(p)
    assert.are.same({ 1.5, 2.5 }, r.w:tolist())
    local cases = {
      { 'a view past its storage', tensor_rec(1, 0, F32, { 3 }, { 1 }), 'outside its storage' },
      { 'an offset past its storage', tensor_rec(1, 0, F32, { 1 }, { 1 }, 2), 'outside its storage' },
      { 'a stride past its storage', tensor_rec(1, 0, F32, { 2 }, { 2 }), 'outside its storage' },
      { 'sizes that overflow', tensor_rec(1, 0, F32, { 2 ^ 40, 2 ^ 40 }, { 0, 0 }), 'overflows' },
      { 'an extent that overflows', tensor_rec(1, 0, F32, { 3 }, { 2 ^ 62 }), 'overflows' },
      { 'a negative size', tensor_rec(1, 0, F32, { -1 }, { 1 }), 'negative' },
      { 'an unknown dtype', tensor_rec(1, 0, 9, { 1 }, { 1 }), 'unknown dtype' },
      { 'too many dimensions', '\7' .. u32(1) .. u32(0) .. string.char(F32, 17, 0, 0) .. u64(0), 'too many dimensions' },
      { 'a missing storage', tensor_rec(1, 5, F32, { 1 }, { 1 }), 'storage that does not exist' },
      { 'requires_grad on integers', tensor_rec(1, 0, 3, { 1 }, { 1 }, 0, 2), 'non-floating' },
      { 'unknown tensor flags', tensor_rec(1, 0, F32, { 1 }, { 1 }, 0, 8), 'flags' },
      { 'a forward reference', '\5' .. u32(1) .. u64(1) .. '\3' .. u64(0) .. '\6' .. u32(2), 'not defined before' },
      { 'a reference to id 0', '\6' .. u32(0), 'not defined before' },
      { 'an id out of sequence', '\5' .. u32(7) .. u64(0), 'out of sequence' },
      { 'a huge table', '\5' .. u32(1) .. u64(2 ^ 60), 'more entries' },
      { 'a huge string', '\4' .. u64(2 ^ 62), 'truncated string' },
      { 'nil inside a table', '\5' .. u32(1) .. u64(1) .. '\0' .. '\2', 'nil' },
      { 'a NaN key', '\5' .. u32(1) .. u64(1) .. '\3' .. ffi.string(ffi.new('double[1]', 0 / 0), 8) .. '\2', 'NaN' },
      { 'an unknown tag', '\99', 'unknown value tag' },
      { 'bytes after the object', '\2\2', 'bytes after' },
      { 'an empty class name', '\8' .. u32(1) .. u64(0), 'class name' },
      { 'an unknown class', '\8' .. u32(1) .. u64(11) .. 'evil.Thing!' .. '\2', "unknown class 'evil.Thing!'" },
      { 'raw state that is not a table', '\8' .. u32(1) .. u64(12) .. 'ckspec.Point' .. '\2', 'not a table' },
      { 'a broken OrderedDict', '\8' .. u32(1) .. u64(17) .. 'torch.OrderedDict' .. '\2', 'cannot rebuild' },
    }
    local deep = {}
    for i = 1, 1100 do deep[i] = '\5' .. u32(i) .. u64(1) .. '\3' .. u64(0) end
    cases[#cases + 1] = { 'nesting too deep', table.concat(deep) .. '\2', 'nesting deeper' }
    local storage = { ffi.string(ffi.new('float[2]', 1, 2), 8) }
    for _, c in ipairs(cases) do
      p = file_with(c[2], storage)
      local ok, err = pcall(torch.load, p)
      os.remove(p)
      assert(not ok, c[1] .. ' loaded')
      err = tostring(err):gsub('^[^:]*:%d+: ', '')
      assert(err:sub(1, 14) == 'moontorch.load', c[1] .. ': ' .. err)
      assert(err:find(c[3], 1, true), c[1] .. ': ' .. err)
    end
  end)
end)

describe('checkpoint atomicity', function()
  it('a process killed in the middle of saving leaves the previous checkpoint intact', function()
    local build = os.getenv('MOONTORCH_BUILD_DIR') or 'build'
    local dir = tmp()
    os.remove(dir)
    os.execute('mkdir -p ' .. dir)
    local p = dir .. '/ck.pt'
    torch.save({ gen = 0, w = torch.zeros(16) }, p)
    local script = dir .. '/child.lua'
    -- the child saves 128 MB tensors filled with the generation number, over and over, and
    -- notes each save it completed
    write_all(script, ([[
package.path = '%s/lua/?.lua;%s/lua/?/init.lua;' .. package.path
package.cpath = '%s/lib/?.so;' .. package.cpath
local torch = require 'moontorch'
local big = torch.empty(32 * 1024 * 1024)
for gen = 1, 1000 do
  big:fill_(gen)
  torch.save({ gen = gen, w = big }, '%s')
  local f = io.open('%s.done', 'w'); f:write(gen); f:close()
end
]]):format(build, build, build, p, p))
    local caught_mid_save = 0
    for trial = 1, 3 do
      os.remove(p .. '.done')
      os.execute(('luajit %s >/dev/null 2>&1 & echo $! > %s.pid'):format(script, p))
      local pid = read_all(p .. '.pid'):match('%d+')
      -- wait for one complete save, then kill at different moments of the next ones
      for _ = 1, 400 do
        if exists(p .. '.done') then break end
        os.execute('sleep 0.02')
      end
      os.execute(('sleep %.2f'):format(0.05 + 0.1 * trial))
      os.execute('kill -9 ' .. pid)
      os.execute('sleep 0.05')
      if io.popen('ls ' .. dir):read('*a'):find('ck.pt.tmp.' .. pid, 1, true) then
        caught_mid_save = caught_mid_save + 1
      end
      -- the destination holds a complete checkpoint: the previous one or a newer complete one
      local r = torch.load(p)
      assert.is_true(r.gen >= 1)
      local w = r.w
      assert.are.equal(32 * 1024 * 1024, w:numel())
      assert.are.equal(r.gen, w:min():item())
      assert.are.equal(r.gen, w:max():item())
      r, w = nil, nil
      collectgarbage()
      os.execute(('rm -f %s/ck.pt.tmp.*'):format(dir))
    end
    os.execute('rm -rf ' .. dir)
    assert.is_true(caught_mid_save >= 1, 'no kill landed in the middle of a save')
  end)
end)
