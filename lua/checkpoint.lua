-- torch.save(obj, path [, {sync=}]) / torch.load(path [, {map_location=, mmap=}]).
--
-- This file walks the object graph; core/checkpoint.c does the bytes (its top comment describes
-- the file format). What can be saved: nil (as the whole object), booleans, numbers (as doubles),
-- strings (any bytes), tensors of any dtype and strides (each storage once, whole: views that
-- share a storage share it again after loading), tables with keys of those kinds, shared
-- references and cycles (every table, tensor and object is written once and then referred to by
-- id), and instances of classes registered with torch.class: a class with __serialize saves its
-- name and what __serialize returns (rebuilt by cls.__deserialize(cls, state) on load), other
-- classes their raw fields (loaded into a fresh table given the class as metatable). Functions,
-- coroutines, userdata and other cdata are errors naming where they were found. Loading runs no
-- code from the file: it only builds values, and looks classes up by name (an unknown name is an
-- error that names it). Tensors on a device are written as their values (read back through the C
-- core, each storage once) and load on the CPU; map_location puts every loaded tensor on a device
-- (the C core says whether it is there), views of one storage still sharing one.
local ffi = require 'ffi'
local bit = require 'bit'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local class = require 'moontorch.class'
local dtype_mod = require 'moontorch.dtype'

local C = core.C
local fail, raise_last = core.fail, core.raise_last
local is_tensor, wrap = T.is_tensor, T.wrap
local type, next, tostring, tonumber, getmetatable, setmetatable, rawset, pcall, error =
  type, next, tostring, tonumber, getmetatable, setmetatable, rawset, pcall, error
local band = bit.band
local concat = table.concat

local M = {}

local MAX_DEPTH = 1000    -- nesting of tables / objects, on save and on load
local PARAMETER = 2       -- mt_tensor._flags: nn.Parameter

local NIL, FALSE, TRUE, NUMBER, STRING = C.MT_CKPT_NIL, C.MT_CKPT_FALSE, C.MT_CKPT_TRUE, C.MT_CKPT_NUMBER,
  C.MT_CKPT_STRING
local TABLE, REF, TENSOR, OBJECT = C.MT_CKPT_TABLE, C.MT_CKPT_REF, C.MT_CKPT_TENSOR, C.MT_CKPT_OBJECT

------------------------------------------------------------------------------ save
-- ".layers[2].weight": where a value sits, for messages
local function where(keys)
  if #keys == 0 then return 'the object itself' end
  local parts = {}
  for i = 1, #keys do
    local k = keys[i]
    if type(k) == 'string' and k:sub(1, 1) ~= '<' then parts[i] = '.' .. k
    elseif type(k) == 'string' then parts[i] = k -- '<ClassName>': inside an object's state
    else parts[i] = '[' .. tostring(k) .. ']' end
  end
  return concat(parts)
end

-- a C call's status: the C message on failure
local function check(st)
  if st ~= 0 then raise_last() end
end

-- The writer's state s: w (mt_ckpt_writer *), ids (table or tensor address -> id), n (last id),
-- keys (the path being walked, for messages). Tensors are known by their head's address (two
-- Lua handles of one head are one tensor).
local tensor_ptr = ffi.typeof('mt_tensor *')
local intptr = ffi.typeof('intptr_t')
local function tensor_key(t) return tonumber(ffi.cast(intptr, ffi.cast(tensor_ptr, t))) end

-- A tensor on a device, written as its values: a CPU tensor of its geometry over its whole storage
-- read back once (through the C core's readback, mt_tensor_to_host), so that views of one storage
-- share one in the file too. It loads on the CPU (map_location puts it on a device again).
local storage_ptr = ffi.typeof('mt_storage *')
local host_outp = ffi.new('mt_tensor *[1]')
local function storage_key(t) return tonumber(ffi.cast(intptr, ffi.cast(storage_ptr, t._storage))) .. ':' .. t._dtype end
local function host_view(s, t)
  local key = storage_key(t)
  local flat = s.hosts[key]
  if not flat then
    local n = math.floor(tonumber(t._storage._nbytes) / dtype_mod.by_id[t._dtype].itemsize)
    local whole = t:detach():as_strided({ n }, { 1 }, 0)
    if C.mt_tensor_to_host(whole, host_outp) ~= 0 then T.raise_as('save') end
    flat = wrap(host_outp[0])
    s.hosts[key] = flat
  end
  return flat:as_strided(t:size(), t:stride(), t:storage_offset())
end

-- map_location: a device (nil for the CPU, where tensors load); the C core says whether it is there
local function check_location(path, loc, op)
  op = op or 'load'
  if loc == nil then return nil end
  local ok, dev = pcall(dtype_mod.device, loc)
  if not ok or type(dev) ~= 'table' and type(dev) ~= 'userdata' then
    fail(op, ('%s: map_location must be a device (such as \'cpu\'), got %s'):format(path, tostring(loc)))
  end
  if dev._c ~= nil and C.mt_device_check(dev._c) ~= 0 then
    fail(op, ('%s: map_location %s'):format(path, (ffi.string(C.mt_last_error()):gsub('^[%w_]+: ', '', 1))))
  end
  if dev.type == 'cpu' then return nil end
  return dev
end

-- A loaded tensor moved onto map_location's device in place (it keeps its identity, parameter
-- flag and requires_grad): its storage carried over once, so that views of one storage share one
-- on the device too.
local function to_location(s, t)
  local key = storage_key(t)
  local base = s.moved[key]
  if not base then
    local n = math.floor(tonumber(t._storage._nbytes) / dtype_mod.by_id[t._dtype].itemsize)
    base = t:as_strided({ n }, { 1 }, 0):to(s.device)
    s.moved[key] = base
  end
  if C.mt_tensor_set_data(t, base:as_strided(t:size(), t:stride(), t:storage_offset())) ~= 0 then raise_last() end
end
-- (for the other formats' loaders: lua/interop/pytorch.lua)
function M._check_location(op, path, loc) return check_location(path, loc, op) end
M._to_location = to_location


local write_value

-- the next id for v (a table, or a tensor's address)
local function new_id(s, key)
  local id = s.n + 1
  if id >= 4294967295 then fail('save', 'too many tables, tensors and objects (ids are 32-bit)') end
  s.n = id
  s.ids[key] = id
  return id
end

local function write_table(s, v, depth)
  local w = s.w
  local count = 0
  for _ in next, v do count = count + 1 end
  check(C.mt_ckpt_put_table(w, new_id(s, v), count))
  local keys = s.keys
  local nk = #keys + 1
  for k, x in next, v do
    keys[nk] = k
    write_value(s, k, depth + 1)
    write_value(s, x, depth + 1)
  end
  keys[nk] = nil
end

write_value = function(s, v, depth)
  local tv = type(v)
  local w = s.w
  if tv == 'number' then check(C.mt_ckpt_put_number(w, v))
  elseif tv == 'string' then check(C.mt_ckpt_put_string(w, v, #v))
  elseif tv == 'boolean' then check(C.mt_ckpt_put_tag(w, v and TRUE or FALSE))
  elseif tv == 'table' then
    local id = s.ids[v]
    if id then check(C.mt_ckpt_put_ref(w, id)) return end
    if depth > MAX_DEPTH then
      fail('save', ('nesting deeper than %d levels (at %s)'):format(MAX_DEPTH, where(s.keys)))
    end
    local mt = getmetatable(v)
    if mt == nil then return write_table(s, v, depth) end
    local name = class.typename(v)
    if type(name) ~= 'string' or class.find(name) ~= mt then
      fail('save', ('cannot save a table whose metatable is not a registered class (at %s)'):format(where(s.keys)))
    end
    check(C.mt_ckpt_put_object(w, new_id(s, v), name, #name))
    local ser = mt.__serialize
    local keys = s.keys
    keys[#keys + 1] = '<' .. name .. '>'
    if ser then
      write_value(s, ser(v), depth + 1)
    else
      write_table(s, v, depth + 1) -- its raw fields
    end
    keys[#keys] = nil
  elseif tv == 'nil' then
    if depth > 0 then fail('save', ('cannot save nil (at %s)'):format(where(s.keys))) end
    check(C.mt_ckpt_put_tag(w, NIL))
  elseif is_tensor(v) then
    local key = tensor_key(v)
    local id = s.ids[key]
    if id then check(C.mt_ckpt_put_ref(w, id)) return end
    local flags = band(v._flags, PARAMETER) ~= 0 and 1 or 0
    if v.requires_grad then flags = flags + 2 end
    check(C.mt_ckpt_put_tensor(w, new_id(s, key), v._device_type == 0 and v or host_view(s, v), flags))
  else
    local what = tv == 'cdata' and 'cdata value that is not a tensor' or tv
    fail('save', ('cannot save a %s (at %s)'):format(what, where(s.keys)))
  end
end

-- torch.save(obj, path [, {sync = false}]): written to `path.tmp.<pid>`, flushed to the disk
-- (fsync), renamed over path, and the directory flushed: a crash leaves the old file or the new
-- one. {sync=false} skips both fsyncs (still atomic for other processes, not across a power loss).
-- An open Lua file (io.open(p, 'wb')) in place of the path: the checkpoint is written to it at its
-- position (through a temporary file), and the file stays open, as PyTorch's torch.save(obj, f).
local function save_to_handle(obj, f, opts)
  if io.type(f) ~= 'file' then fail('save', 'the file is closed') end
  local tmp = os.tmpname()
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.sync = false
  local ok, err = pcall(M.save, obj, tmp, o)
  if not ok then os.remove(tmp) error(err, 0) end
  local r = io.open(tmp, 'rb')
  local bytes = r:read('*a')
  r:close()
  os.remove(tmp)
  local wok, werr = f:write(bytes)
  if not wok then fail('save', 'cannot write to the file: ' .. tostring(werr)) end
end

function M.save(obj, path, opts)
  if io.type(path) then return save_to_handle(obj, path, opts) end
  if type(path) ~= 'string' then fail('save', 'path must be a string or an open file (io.open(path, \'wb\'))') end
  if opts ~= nil and type(opts) ~= 'table' then fail('save', 'options must be a table') end
  local sync = not (opts and opts.sync == false)
  local wp = ffi.new('mt_ckpt_writer *[1]')
  if C.mt_ckpt_writer_open(path, wp) ~= 0 then raise_last() end
  local w = wp[0]
  local s = { w = w, ids = {}, n = 0, keys = {}, hosts = {} }
  local ok, err = pcall(write_value, s, obj, 0)
  if not ok then
    C.mt_ckpt_writer_abort(w)
    error(err, 0)
  end
  if C.mt_ckpt_writer_commit(w, sync and 1 or 0) ~= 0 then raise_last() end
end

------------------------------------------------------------------------------ load
-- the reader's state: r (mt_ckpt_reader *), v (mt_ckpt_value scratch), objs (id -> value),
-- path, pending (placeholder -> object, for objects referred to while their state was read)
local function bad(s, what) fail('load', ('%s: %s'):format(s.path, what)) end

local read_value

-- a table's pairs into t (rawset: t may already carry its class)
local function read_pairs(s, t, n, depth)
  for _ = 1, n do
    local k = read_value(s, depth + 1)
    local x = read_value(s, depth + 1)
    if k == nil or k ~= k then bad(s, 'corrupted (a table key is nil or NaN)') end
    if x == nil then bad(s, 'corrupted (a table value is nil)') end
    rawset(t, k, x)
  end
end

local function read_object(s, id, name, depth)
  local cls = class.find(name)
  if not cls then
    bad(s, ("unknown class '%s' (load the code that registers it with torch.class first)"):format(name))
  end
  local des = cls.__deserialize
  if not des then
    -- raw fields, read straight into the instance (so references to it inside them work)
    local obj = setmetatable({}, cls)
    s.objs[id] = obj
    local v = s.v
    if C.mt_ckpt_read_value(s.r, v) ~= 0 then raise_last() end
    if v.tag ~= TABLE then bad(s, ("corrupted (the state of a %s is not a table)"):format(name)) end
    s.objs[v.id] = obj
    read_pairs(s, obj, tonumber(v.count), depth + 1)
    return obj
  end
  local ph = {}  -- stands for the object until it exists (given out by references inside its state)
  s.objs[id] = ph
  s.placeholders[ph] = false
  local state = read_value(s, depth + 1)
  local ok, obj = pcall(des, cls, state)
  if not ok then bad(s, ('cannot rebuild a %s: %s'):format(name, tostring(obj))) end
  if obj == nil then bad(s, ('cannot rebuild a %s: its __deserialize returned nil'):format(name)) end
  s.objs[id] = obj
  if s.placeholders[ph] then -- given out: replaced everywhere once the whole value is read
    s.pending[ph] = obj
    s.npending = s.npending + 1
  end
  s.placeholders[ph] = nil
  return obj
end

read_value = function(s, depth)
  if depth > MAX_DEPTH then bad(s, ('nesting deeper than %d levels'):format(MAX_DEPTH)) end
  local v = s.v
  if C.mt_ckpt_read_value(s.r, v) ~= 0 then raise_last() end
  local tag = v.tag
  if tag == NUMBER then return v.number
  elseif tag == STRING then return ffi.string(v.str, v.count)
  elseif tag == TABLE then
    local t = {}
    s.objs[v.id] = t
    read_pairs(s, t, tonumber(v.count), depth)
    return t
  elseif tag == REF then
    local o = s.objs[v.id]
    if o == nil then bad(s, 'corrupted (a reference to a value that is not a table, tensor or object)') end
    if s.placeholders[o] == false then s.placeholders[o] = true end
    return o
  elseif tag == TENSOR then
    local id, flags = v.id, v.flags
    local t = wrap(v.tensor)
    if s.device then to_location(s, t) end
    if band(flags, 2) ~= 0 then t:requires_grad_(true) end
    s.objs[id] = t
    return t
  elseif tag == TRUE then return true
  elseif tag == FALSE then return false
  elseif tag == OBJECT then
    return read_object(s, v.id, ffi.string(v.str, v.count), depth)
  end
  return nil -- NIL (the C reader allows it only as the whole object)
end

-- replace the placeholders of objects by the objects, everywhere reachable from root
local function resolve(root, map, extra)
  local seen = {}
  local function fix(x)
    local m = map[x]
    if m ~= nil then return m end
    if type(x) == 'table' and not seen[x] then
      seen[x] = true
      local repl
      for k, y in next, x do
        local nk, ny = fix(k), fix(y)
        if nk ~= k or ny ~= y then
          repl = repl or {}
          repl[#repl + 1] = { k, nk, ny }
        end
      end
      if repl then
        for _, e in ipairs(repl) do
          if e[1] ~= e[2] then rawset(x, e[1], nil) end
          rawset(x, e[2], e[3])
        end
      end
    end
    return x
  end
  for _, o in pairs(extra) do fix(o) end
  return fix(root)
end

local rp = ffi.new('mt_ckpt_reader *[1]')
local value = ffi.new('mt_ckpt_value') -- scratch: read_value copies out what it needs at once

-- A file that is not moontorch's: PyTorch's torch.save writes a zip archive ("PK\3\4", since 1.6)
-- or a bare pickle (protocol 2+: "\128"): torch.load reads those through torch.load_pytorch.
local function foreign_format(path)
  local f = io.open(path, 'rb')
  if not f then return nil end
  local head = f:read(9) or ''
  f:close()
  if head:sub(1, 4) == 'PK\3\4' or head:sub(1, 4) == 'PK\5\6' or head:byte(1) == 0x80 then return 'pytorch' end
  if #head == 9 and head:sub(9, 9) == '{' then return 'a safetensors file' end -- (8 bytes of header size, then JSON)
  return nil
end

-- an open Lua file (io.open(p, 'rb')) in place of the path: one checkpoint read from its position
-- (its header says how long it is: the file is left just after it, as PyTorch leaves it)
local function load_from_handle(f, opts)
  if io.type(f) ~= 'file' then fail('load', 'the file is closed') end
  local bytes = f:read(64) or ''
  if #bytes == 64 and bytes:sub(1, 8) == 'MTCKPT\0\1' then
    local size = 0
    for i = 48, 41, -1 do size = size * 256 + bytes:byte(i) end -- the u64 file size at offset 40
    if size > 64 and size < 2 ^ 53 then bytes = bytes .. (f:read(size - 64) or '') end
  else
    bytes = bytes .. (f:read('*a') or '') -- (not ours: the path's checks name what it is)
  end
  local tmp = os.tmpname()
  local w = io.open(tmp, 'wb')
  w:write(bytes)
  w:close()
  local o = {}
  for k, v in pairs(type(opts) == 'table' and opts or {}) do o[k] = v end
  if type(opts) == 'string' then o.map_location = opts end
  o.mmap = nil -- (the temporary file goes at once)
  local ok, res = pcall(M.load, tmp, o)
  os.remove(tmp)
  if not ok then error((tostring(res):gsub(tmp:gsub('%p', '%%%0'), 'the file')), 0) end
  return res
end

-- torch.load(path [, {map_location = 'cpu', mmap = false}])
function M.load(path, opts)
  if io.type(path) then return load_from_handle(path, opts) end
  if type(path) ~= 'string' then fail('load', 'path must be a string or an open file (io.open(path, \'rb\'))') end
  local foreign = foreign_format(path)
  if foreign == 'a safetensors file' then
    fail('load', ('%s is a safetensors file: read it with torch.load_safetensors(path)'):format(path))
  elseif foreign == 'pytorch' then -- PyTorch's own torch.save file: read safely (weights_only's set)
    if opts ~= nil and type(opts) ~= 'table' and type(opts) ~= 'string' then fail('load', 'options must be a table') end
    local o = type(opts) == 'string' and { map_location = opts } or opts
    return require('moontorch.interop.pytorch').load(path, o and { map_location = o.map_location })
  end
  if type(opts) == 'string' then opts = { map_location = opts } end
  if opts ~= nil and type(opts) ~= 'table' then fail('load', 'options must be a table') end
  opts = opts or {}
  local device = check_location(path, opts.map_location)
  if C.mt_ckpt_reader_open(path, opts.mmap and 1 or 0, rp) ~= 0 then raise_last() end
  local r = rp[0]
  local s = { r = r, v = value, objs = {}, path = path, pending = {}, npending = 0, placeholders = {},
    device = device, moved = {} }
  local ok, res = pcall(read_value, s, 0)
  if ok and C.mt_ckpt_reader_end(r) ~= 0 then
    ok, res = false, 'moontorch.' .. ffi.string(C.mt_last_error())
  end
  C.mt_ckpt_reader_close(r)
  if not ok then error(res, 0) end
  if s.npending > 0 then
    local objs = {}
    for ph, o in pairs(s.pending) do objs[#objs + 1] = o end
    res = resolve(res, s.pending, objs)
  end
  return res
end

return M
