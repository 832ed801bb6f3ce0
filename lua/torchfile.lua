-- torch.save(obj, path) / torch.load(path, {map_location=, mmap=}).
--
-- File format, version 1, little-endian:
--   header (64 bytes): magic "MOONTRCH", u32 version, u32 flags (0), u64 meta_size, u64 data_size,
--     u64 checksum, u64 root (unused, 0), then zeros
--   meta (meta_size bytes): the object graph as a stream of values (below)
--   zeros up to a multiple of 64, then the data section (data_size bytes): each storage's bytes
--     at a 64-byte aligned offset
--   checksum = mt_hash64 over the meta, then mt_hash_storage over each storage's bytes, chained
--     in order of appearance.
-- A value is a tag byte and its body:
--   0 nil  1 false  2 true  3 number (f64)  4 string (u64 length, bytes)
--   5 table: u32 id, u64 number of pairs, then key value ... (id: for shared references/cycles)
--   6 reference: u32 id of a table, tensor or object already read
--   7 tensor: u32 id, u32 storage id, u8 dtype, u8 ndim, u32 flags (bit 1 nn.Parameter, bit 2
--     requires_grad), i64 offset, ndim x i64 sizes, ndim x i64 strides
--   8 storage (always just before the first tensor using it): u32 id, u64 byte offset in the data
--     section, u64 byte size
--   9 object of a registered class: u32 id, string class name (u64 length, bytes), then its state
--     (the value its class's __serialize returned, or a table of its raw fields)
-- Loading validates every tag, id, size, offset and view against the file, and the checksum,
-- before any object is handed out: a truncated, corrupted or hostile file is an error, and no
-- file can run code (no functions are ever written or read).
local ffi = require 'ffi'
local bit = require 'bit'
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local class = require 'moontorch.class'
local dtype_mod = require 'moontorch.dtype'

local C = core.C
local fail = core.fail
local is_tensor = T.is_tensor
local type, pairs, next, tostring, tonumber, rawget, getmetatable, setmetatable = type, pairs, next, tostring, tonumber,
  rawget, getmetatable, setmetatable

local libc = core.libc

local M = {}
local MAGIC = 'MOONTRCH'
local VERSION = 1
local HEADER = 64
local ALIGN = 64
local MAX_DEPTH = 200

local PARAMETER = 2
local REQUIRES_GRAD = 4

local u8 = ffi.typeof('uint8_t *')
local scratch = ffi.new('char[8]')
local scratch_u32 = ffi.cast('uint32_t *', scratch)
local scratch_u64 = ffi.cast('uint64_t *', scratch)
local scratch_i64 = ffi.cast('int64_t *', scratch)
local scratch_f64 = ffi.cast('double *', scratch)

local function align(n) return math.ceil(n / ALIGN) * ALIGN end

------------------------------------------------------------------------------ save
local function u32s(v) scratch_u32[0] = v return ffi.string(scratch, 4) end
local function u64s(v) scratch_u64[0] = v return ffi.string(scratch, 8) end
local function i64s(v) scratch_i64[0] = v return ffi.string(scratch, 8) end
local function f64s(v) scratch_f64[0] = v return ffi.string(scratch, 8) end

local function describe(path) return #path == 0 and 'the object itself' or table.concat(path, '') end

local function key_str(k)
  if type(k) == 'string' then return '.' .. k end
  return '[' .. tostring(k) .. ']'
end

local function writer()
  local w = { buf = {}, n = 0, ids = {}, next_id = 0, storages = {}, storage_list = {}, data_size = 0 }
  function w.put(s) w.n = w.n + 1; w.buf[w.n] = s end
  return w
end

local write_value

local function write_tensor(w, t, path)
  local id = w.next_id + 1
  w.next_id = id
  w.ids[t] = id
  local st = t._storage
  local skey = tonumber(ffi.cast('intptr_t', st))
  local s = w.storages[skey]
  if s == nil then
    local sid = w.next_id + 1
    w.next_id = sid
    local off = align(w.data_size)
    s = { id = sid, offset = off, size = tonumber(st._nbytes), ptr = st._data, dtype = t._dtype }
    w.storages[skey] = s
    w.storage_list[#w.storage_list + 1] = s
    w.data_size = off + s.size
    w.put('\8' .. u32s(sid) .. u64s(off) .. u64s(s.size))
  elseif s.dtype ~= t._dtype then
    fail('save', ('tensors of different dtypes sharing one storage cannot be saved (at %s)'):format(describe(path)))
  end
  if t._device_type ~= 0 then fail('save', 'only CPU tensors can be saved') end
  local flags = 0
  if bit.band(t._flags, PARAMETER) ~= 0 then flags = flags + 1 end
  if t.requires_grad then flags = flags + 2 end
  local nd = t._ndim
  local parts = { '\7', u32s(id), u32s(s.id), string.char(t._dtype, nd), u32s(flags), i64s(t._offset) }
  for d = 0, nd - 1 do parts[#parts + 1] = i64s(t._sizes[d]) end
  for d = 0, nd - 1 do parts[#parts + 1] = i64s(t._strides[d]) end
  w.put(table.concat(parts))
end

write_value = function(w, v, path, depth)
  if depth > MAX_DEPTH then fail('save', ('nesting deeper than %d levels (at %s)'):format(MAX_DEPTH, describe(path))) end
  local tv = type(v)
  if v == nil then w.put('\0')
  elseif v == false then w.put('\1')
  elseif v == true then w.put('\2')
  elseif tv == 'number' then w.put('\3' .. f64s(v))
  elseif tv == 'string' then w.put('\4' .. u64s(#v) .. v)
  elseif is_tensor(v) then
    local id = w.ids[v]
    if id then w.put('\6' .. u32s(id)) else write_tensor(w, v, path) end
  elseif tv == 'table' then
    local id = w.ids[v]
    if id then w.put('\6' .. u32s(id)) return end
    id = w.next_id + 1
    w.next_id = id
    w.ids[v] = id
    local mt = getmetatable(v)
    if mt ~= nil then
      local name = class.typename(v)
      if not name or class.find(name) ~= mt then
        fail('save', ('cannot save a table with a metatable that is not a registered class (at %s)')
          :format(describe(path)))
      end
      w.put('\9' .. u32s(id) .. u64s(#name) .. name)
      local ser = rawget(mt, '__serialize') or mt.__serialize
      local state
      if ser then
        state = ser(v)
      else
        state = {}
        for k, x in next, v do state[k] = x end
      end
      path[#path + 1] = '<' .. name .. '>'
      write_value(w, state, path, depth + 1)
      path[#path] = nil
      return
    end
    local count = 0
    for _ in next, v do count = count + 1 end
    w.put('\5' .. u32s(id) .. u64s(count))
    for k, x in next, v do
      path[#path + 1] = key_str(k)
      write_value(w, k, path, depth + 1)
      write_value(w, x, path, depth + 1)
      path[#path] = nil
    end
  else
    fail('save', ('cannot save a %s (at %s)'):format(tv == 'cdata' and 'non-tensor cdata' or tv, describe(path)))
  end
end

-- torch.save(obj, path): written to a temporary file beside path, flushed to the disk, then
-- renamed over path, so a crash leaves either the old file or the new one
function M.save(obj, path)
  if type(path) ~= 'string' then fail('save', 'path must be a string') end
  local w = writer()
  write_value(w, obj, {}, 0)
  local meta = table.concat(w.buf)
  local h = C.mt_hash64(meta, #meta, 0)
  for _, s in ipairs(w.storage_list) do h = C.mt_hash_storage(s.ptr, s.size, h) end
  local header = MAGIC .. u32s(VERSION) .. u32s(0) .. u64s(#meta) .. u64s(w.data_size) .. u64s(h) .. u64s(0)
  header = header .. ('\0'):rep(HEADER - #header)
  local tmp = ('%s.tmp.%d'):format(path, libc.getpid())
  local f = libc.fopen(tmp, 'wb')
  if f == nil then fail('save', ('%s: cannot open %s for writing'):format(path, tmp)) end
  local ok, err = pcall(function()
    local function put(p, n)
      if n > 0 and libc.fwrite(p, 1, n, f) ~= n then fail('save', ('%s: write failed (disk full?)'):format(path)) end
    end
    put(header, #header)
    put(meta, #meta)
    local pos = 0
    local base = HEADER + align(#meta)
    put(('\0'):rep(base - HEADER - #meta), base - HEADER - #meta)
    for _, s in ipairs(w.storage_list) do
      if s.offset > pos then put(('\0'):rep(s.offset - pos), s.offset - pos) end
      put(s.ptr, s.size)
      pos = s.offset + s.size
    end
    if C.mt_fsync_file(f) ~= 0 then core.raise_last() end
  end)
  libc.fclose(f)
  if not ok then
    libc.remove(tmp)
    error(err, 0)
  end
  if libc.rename(tmp, path) ~= 0 then
    libc.remove(tmp)
    fail('save', ('%s: cannot rename %s over it'):format(path, tmp))
  end
  if C.mt_fsync_dir(path) ~= 0 then core.raise_last() end
end

------------------------------------------------------------------------------ load
local function loader(path, buf, size)
  local r = { pos = 0, size = size, buf = buf, path = path }
  function r.bad(what) fail('load', ('%s: %s'):format(path, what)) end
  function r.need(n)
    if n < 0 or r.pos + n > r.size then r.bad('truncated or corrupted (a record runs past the end of its section)') end
  end
  function r.u8()
    r.need(1)
    local v = buf[r.pos]
    r.pos = r.pos + 1
    return v
  end
  function r.u32()
    r.need(4)
    ffi.copy(scratch, buf + r.pos, 4)
    r.pos = r.pos + 4
    return tonumber(scratch_u32[0])
  end
  function r.u64()
    r.need(8)
    ffi.copy(scratch, buf + r.pos, 8)
    r.pos = r.pos + 8
    local v = scratch_u64[0]
    if v > 2 ^ 53 then r.bad('a size or offset is out of range') end
    return tonumber(v)
  end
  function r.i64()
    r.need(8)
    ffi.copy(scratch, buf + r.pos, 8)
    r.pos = r.pos + 8
    local v = scratch_i64[0]
    if v > 2 ^ 53 or v < -2 ^ 53 then r.bad('a size or offset is out of range') end
    return tonumber(v)
  end
  function r.f64()
    r.need(8)
    ffi.copy(scratch, buf + r.pos, 8)
    r.pos = r.pos + 8
    return tonumber(scratch_f64[0])
  end
  function r.str()
    local n = r.u64()
    r.need(n)
    local s = ffi.string(buf + r.pos, n)
    r.pos = r.pos + n
    return s
  end
  return r
end

local dtype_by_id = {}
for _, name in ipairs { 'uint8', 'int8', 'int16', 'int32', 'int64', 'float16', 'float32', 'float64', 'bool', 'bfloat16' } do
  local d = dtype_mod[name]
  dtype_by_id[d.id] = d
end

-- the meta stream -> objects; storages are described first, their bytes read afterwards
local function read_meta(r, data_size)
  local objs = {}        -- id -> object (tables, tensors, class instances) or storage record
  local storages = {}    -- in order
  local tensors = {}     -- tensor records to build once storages hold their bytes
  local fixups = {}      -- class instances, built after their state (depth-first order)
  local function new_id(id)
    if objs[id] ~= nil or id == 0 then r.bad(('object id %d is defined twice'):format(id)) end
  end
  local read
  read = function(depth)
    if depth > MAX_DEPTH then r.bad(('nesting deeper than %d levels'):format(MAX_DEPTH)) end
    local tag = r.u8()
    if tag == 0 then return nil
    elseif tag == 1 then return false
    elseif tag == 2 then return true
    elseif tag == 3 then return r.f64()
    elseif tag == 4 then return r.str()
    elseif tag == 5 then
      local id = r.u32()
      new_id(id)
      local t = {}
      objs[id] = t
      local n = r.u64()
      if n > r.size - r.pos then r.bad('a table claims more entries than the file holds') end
      for _ = 1, n do
        local k = read(depth + 1)
        local v = read(depth + 1)
        if k == nil or k ~= k then r.bad('a table key is nil or nan') end
        t[k] = v
      end
      return t
    elseif tag == 6 then
      local id = r.u32()
      local o = objs[id]
      if o == nil then r.bad(('reference to object %d before it was defined'):format(id)) end
      if type(o) == 'table' and o.__storage_record then r.bad('a reference names a storage') end
      return o
    elseif tag == 8 then
      local id = r.u32()
      new_id(id)
      local off, size = r.u64(), r.u64()
      if off % ALIGN ~= 0 or off + size > data_size then r.bad('a storage lies outside the data section') end
      local s = { __storage_record = true, offset = off, size = size, order = #storages + 1 }
      objs[id] = s
      storages[#storages + 1] = s
      return read(depth)
    elseif tag == 7 then
      local id = r.u32()
      new_id(id)
      local sid = r.u32()
      local s = objs[sid]
      if type(s) ~= 'table' or not s.__storage_record then r.bad('a tensor names an unknown storage') end
      local dt, nd = r.u8(), r.u8()
      local d = dtype_by_id[dt]
      if not d then r.bad(('unknown dtype code %d'):format(dt)) end
      if nd > 16 then r.bad(('a tensor with %d dimensions'):format(nd)) end
      if s.dtype and s.dtype ~= d then r.bad('tensors of different dtypes share a storage') end
      s.dtype = d
      local flags = r.u32()
      local offset = r.i64()
      local sizes, strides = {}, {}
      for i = 1, nd do sizes[i] = r.i64() end
      for i = 1, nd do strides[i] = r.i64() end
      -- the view must lie inside its storage
      local item = d.itemsize
      if s.size % item ~= 0 then r.bad('a storage size is not a multiple of its dtype size') end
      local numel, last = 1, offset
      for i = 1, nd do
        if sizes[i] < 0 or strides[i] < 0 then r.bad('a negative size or stride') end
        numel = numel * sizes[i]
        if numel > 2 ^ 50 then r.bad('a tensor too large') end
        if sizes[i] > 0 then last = last + (sizes[i] - 1) * strides[i] end
      end
      if offset < 0 or (numel > 0 and (last + 1) * item > s.size) then r.bad('a tensor view lies outside its storage') end
      local rec = { storage = s, dtype = d, sizes = sizes, strides = strides, offset = offset, flags = flags }
      local holder = {}
      rec.holder = holder
      objs[id] = holder
      tensors[#tensors + 1] = rec
      return holder
    elseif tag == 9 then
      local id = r.u32()
      new_id(id)
      local name = r.str()
      local placeholder = {}
      objs[id] = placeholder
      local state = read(depth + 1)
      local cls = class.find(name)
      if not cls then r.bad(("unknown class '%s' (require the module that defines it before loading)"):format(name)) end
      fixups[#fixups + 1] = { placeholder = placeholder, cls = cls, state = state, name = name }
      return placeholder
    end
    r.bad(('unknown record tag %d'):format(tag))
  end
  local root = read(0)
  if r.pos ~= r.size then r.bad('unexpected bytes after the object') end
  return root, storages, tensors, fixups
end

-- replace placeholders (tensor holders, class placeholders) by the real objects everywhere
local function resolve(root, map)
  local seen = {}
  local function fix(v)
    local m = map[v]
    if m ~= nil then return m end
    if type(v) == 'table' and not seen[v] then
      seen[v] = true
      local repl = {}
      for k, x in next, v do
        local nk, nx = fix(k), fix(x)
        if nk ~= k or nx ~= x then repl[#repl + 1] = { k, nk, nx } end
      end
      for _, e in ipairs(repl) do
        if e[1] ~= e[2] then rawset(v, e[1], nil) end
        rawset(v, e[2], e[3])
      end
    end
    return v
  end
  return fix(root)
end

-- torch.load(path, {map_location=, mmap=})
function M.load(path, opts)
  if type(path) ~= 'string' then fail('load', 'path must be a string') end
  opts = type(opts) == 'table' and opts or (type(opts) == 'string' and { map_location = opts }) or {}
  local loc = opts.map_location
  if loc ~= nil and type(loc) ~= 'function' then
    local dev = dtype_mod.device(loc)
    if dev.type ~= 'cpu' then fail('load', ('%s: map_location %s is not available: moontorch was built without CUDA')
      :format(path, tostring(dev))) end
  end
  local f = libc.fopen(path, 'rb')
  if f == nil then fail('load', ('%s: cannot open the file'):format(path)) end
  local mapping
  local ok, res = pcall(function()
    libc.fseek(f, 0, 2)
    local fsize = tonumber(libc.ftell(f))
    libc.fseek(f, 0, 0)
    if fsize < HEADER then fail('load', ('%s: not a moontorch file (too short)'):format(path)) end
    local head = ffi.new('uint8_t[?]', HEADER)
    if libc.fread(head, 1, HEADER, f) ~= HEADER then fail('load', ('%s: cannot read the header'):format(path)) end
    if ffi.string(head, 8) ~= MAGIC then fail('load', ('%s: not a moontorch file (bad magic)'):format(path)) end
    local hr = loader(path, head, HEADER)
    hr.pos = 8
    local version = hr.u32()
    if version ~= VERSION then fail('load', ('%s: unsupported format version %d'):format(path, version)) end
    local flags = hr.u32()
    local meta_size, data_size = hr.u64(), hr.u64()
    -- reserved fields and padding are zero
    local reserved = flags
    for i = 40, HEADER - 1 do reserved = reserved + head[i] end
    if reserved ~= 0 then fail('load', ('%s: corrupted header (reserved bytes are not zero)'):format(path)) end
    ffi.copy(scratch, head + 32, 8)
    local checksum = scratch_u64[0]
    local data_base = HEADER + align(meta_size)
    if data_base + data_size ~= fsize then
      fail('load', ('%s: truncated or corrupted (the file has %d bytes, its header says %d)')
        :format(path, fsize, data_base + data_size))
    end
    local meta = ffi.new('uint8_t[?]', math.max(meta_size, 1))
    if libc.fread(meta, 1, meta_size, f) ~= meta_size then fail('load', ('%s: cannot read the file'):format(path)) end
    local r = loader(path, meta, meta_size)
    local root, storages, trecs, fixups = read_meta(r, data_size)
    -- storage bytes: read into fresh tensors (or mapped), hashing as we go
    local h = C.mt_hash64(meta, meta_size, 0)
    local bases = {}
    -- storages are copied out of a mapping of the file (or, with {mmap=true}, used in place)
    local mp = ffi.new('mt_mapping *[1]')
    if C.mt_mapping_open(path, mp) ~= 0 then core.raise_last() end
    mapping = mp[0]
    if mapping.size ~= fsize then fail('load', ('%s: the file changed while loading'):format(path)) end
    -- every byte between records (alignment padding) must be zero: the checksum does not cover it
    local gap = ffi.new('uint8_t[?]', ALIGN)
    local function check_zero(from, to)
      local n = to - from
      if n <= 0 then return end
      if mapping then
        for k = 0, n - 1 do
          if mapping.data[from + k] ~= 0 then fail('load', ('%s: corrupted padding'):format(path)) end
        end
        return
      end
      libc.fseek(f, from, 0)
      if libc.fread(gap, 1, n, f) ~= n then fail('load', ('%s: truncated'):format(path)) end
      for k = 0, n - 1 do
        if gap[k] ~= 0 then fail('load', ('%s: corrupted padding'):format(path)) end
      end
    end
    check_zero(HEADER + meta_size, data_base)
    local done = 0
    table.sort(storages, function(a, b) return a.offset < b.offset end)
    for _, s in ipairs(storages) do
      if s.offset < done then fail('load', ('%s: storages overlap'):format(path)) end
      check_zero(data_base + done, data_base + s.offset)
      done = s.offset + s.size
    end
    check_zero(data_base + done, data_base + data_size)
    table.sort(storages, function(a, b) return a.order < b.order end)
    for i, s in ipairs(storages) do
      local d = s.dtype or torch.uint8
      local n = s.size / d.itemsize
      local base
      local ptr = mapping.data + data_base + s.offset
      if opts.mmap then
        h = C.mt_hash_storage(ptr, s.size, h)
        C.mt_mapping_retain(mapping)
        local out = ffi.new('mt_tensor *[1]')
        local sz = ffi.new('int64_t[1]', n)
        if C.mt_tensor_from_blob(ptr, sz, nil, 1, d.id, C.mt_mapping_release, mapping, out) ~= 0 then
          C.mt_mapping_release(mapping, nil)
          core.raise_last()
        end
        base = T.wrap(out[0])
      else
        base = torch.empty(n, { dtype = d })
        h = C.mt_copy_hashed(base:data_ptr(), ptr, s.size, h)
      end
      bases[s] = base
    end
    if h ~= checksum then fail('load', ('%s: checksum mismatch (the file is corrupted)'):format(path)) end
    -- tensors, then class instances, then every placeholder replaced
    local map = {}
    for _, t in ipairs(trecs) do
      local base = bases[t.storage]
      local v = base:as_strided(t.sizes, t.strides, t.offset)
      if bit.band(t.flags, 1) ~= 0 then v._flags = bit.bor(v._flags, PARAMETER) end
      if bit.band(t.flags, 2) ~= 0 and v:is_floating_point() then v:requires_grad_(true) end
      map[t.holder] = v
    end
    for _, fx in ipairs(fixups) do
      local state = resolve(fx.state, map)
      local des = rawget(fx.cls, '__deserialize') or fx.cls.__deserialize
      local obj
      if des then
        local okd, o = pcall(des, fx.cls, state)
        if not okd then fail('load', ('%s: cannot rebuild a %s: %s'):format(path, fx.name, tostring(o))) end
        obj = o
      else
        if type(state) ~= 'table' then fail('load', ('%s: the state of a %s is not a table'):format(path, fx.name)) end
        obj = setmetatable(state, fx.cls)
      end
      map[fx.placeholder] = obj
    end
    -- class instances built before the objects they hold were known
    for _, fx in ipairs(fixups) do resolve(map[fx.placeholder], map) end
    return resolve(root, map)
  end)
  libc.fclose(f)
  if mapping ~= nil then C.mt_mapping_release(mapping, nil) end
  if not ok then error(res, 0) end
  return res
end

return M
