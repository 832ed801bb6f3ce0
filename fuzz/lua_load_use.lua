-- fuzz/lua_load_use.lua: load-then-use, from Lua, on damaged files.
--
--   bin/moontorch fuzz/lua_load_use.lua [SECONDS=20] [SEED=1] [WORKDIR=build-fuzz/lua-fuzz]
--
-- Real files (torch.save and torch.save_safetensors of fuzz/make_seeds.lua's objects) are mutated
-- (bit flips, truncations, splices of two files, chunks duplicated or dropped, NaN bit patterns
-- written over float data and over the numbers of the value stream, edits of the JSON header), the
-- checkpoint's sizes and checksum recomputed (as the writer computes them, with mt_xxh3_64) so
-- that most mutants get past the checksum, and loaded with torch.load ({mmap=} either way) or
-- torch.load_safetensors. A mutant that loads is used: every tensor in it (walking every table)
-- gives item, tolist, indexing and tostring; a state_dict is loaded into the module it came from
-- (load_state_dict), which then runs forward and prints. Every number handed out must be a number
-- (not a NaN whose bits LuaJIT reads as another type), every failure a Lua error whose message
-- starts with 'moontorch.'. Run it under `timeout`: a hang is a finding too. The mutant being tried
-- is always WORKDIR/current.*: after a crash it is the reproducer; failures are copied to
-- WORKDIR/failure-N.*. Exits 1 when anything failed.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local ffi = require 'ffi'
local bit = require 'bit'
local C = require('moontorch.ffi').C

local seconds = tonumber(arg[1]) or 20
local seed = tonumber(arg[2]) or 1
local workdir = arg[3] or 'build-fuzz/lua-fuzz'
os.execute(("mkdir -p '%s'"):format(workdir))
local here = (arg[0]:match('^(.*)/[^/]*$') or '.')
local Seeds = dofile(here .. '/make_seeds.lua')

io.stdout:setvbuf('line')
math.randomseed(seed)
local random = math.random
local byte, char, sub, format = string.byte, string.char, string.sub, string.format

local function read_file(p)
  local f = assert(io.open(p, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end
local function write_file(p, s)
  local f = assert(io.open(p, 'wb'))
  f:write(s)
  f:close()
end

------------------------------------------------------------------------------------ base files
local bases = { ckpt = {}, st = {} }
for _, e in ipairs(Seeds.checkpoints()) do
  local p = workdir .. '/base.pt'
  torch.save(e.obj, p, { sync = false })
  table.insert(bases.ckpt, { bytes = read_file(p), module = e.module, name = e.name })
end
for _, e in ipairs(Seeds.safetensors()) do
  local p = workdir .. '/base.safetensors'
  torch.save_safetensors(e.obj, p, e.metadata, { sync = false })
  table.insert(bases.st, { bytes = read_file(p), module = e.module, name = e.name })
end

------------------------------------------------------------------------------------ bytes
local u64buf = ffi.new('uint64_t[1]')
local function le64(s, at) -- the u64 at byte offset `at` (0-based) of s, as a Lua number (exact below 2^53)
  if at + 8 > #s then return nil end
  local v = 0
  for i = at + 8, at + 1, -1 do v = v * 256 + byte(s, i) end
  return v
end
local function put(s, at, bytes) -- overwrite at (0-based), clipped to s
  if at < 0 or at >= #s then return s end
  bytes = sub(bytes, 1, #s - at)
  return sub(s, 1, at) .. bytes .. sub(s, at + 1 + #bytes)
end
local function u64le(v)
  u64buf[0] = v
  return ffi.string(u64buf, 8)
end

-- NaN bit patterns, little-endian: LuaJIT's tag range (0xfff9... to 0xffff...), canonical,
-- signalling and random payloads, for each float width
local function nan_bytes(width)
  local r = random(0, 0x7fffffff)
  if width == 8 then
    local pats = { 0xfff8000000000000ULL, 0xfffa000000000000ULL + r, 0xffffffffffffffffULL, 0x7ff0000000000001ULL,
      0x7ff8000000000000ULL + r, 0xfff9000000000000ULL + r * 4096ULL, 0xfffd000000000000ULL + r,
      0xfff0000000000000ULL + 1ULL + r }
    return u64le(pats[random(#pats)])
  elseif width == 4 then
    local pats = { 0xffd00000, 0xffffffff, 0xffc9cd65, 0x7fc00001, 0x7f800001, 0x7f800000 + 1 + r % 0x7fffff,
      0xff800000 + 1 + r % 0x7fffff }
    local v = pats[random(#pats)]
    return char(v % 256, math.floor(v / 256) % 256, math.floor(v / 65536) % 256, math.floor(v / 16777216) % 256)
  end
  local pats = { 0x7e01, 0xfe00, 0x7c01, 0xffff, 0x7fc1, 0xff81, 0x7f81 } -- float16 and bfloat16
  local v = pats[random(#pats)]
  return char(v % 256, math.floor(v / 256))
end

-- where the element data lies: a checkpoint's payloads, a safetensors file's byte buffer
local function data_region(kind, s)
  if kind == 'ckpt' then
    local t = le64(s, 24)
    if not t then return nil end
    return 64, math.min(t, #s)
  end
  local n = le64(s, 0)
  if not n or 8 + n >= #s then return nil end
  return 8 + n, #s
end

------------------------------------------------------------------------------------ mutations
local mutators = {}
function mutators.flip(kind, s)
  for _ = 1, random(1, 8) do
    local at = random(0, #s - 1)
    s = put(s, at, char(bit.bxor(byte(s, at + 1), bit.lshift(1, random(0, 7)))))
  end
  return s
end
function mutators.truncate(kind, s)
  return sub(s, 1, random(0, #s - 1))
end
function mutators.splice(kind, s)
  local other = bases[kind][random(#bases[kind])].bytes
  local i, j = random(0, #s), random(0, #other)
  return sub(s, 1, i) .. sub(other, j + 1)
end
function mutators.chunk(kind, s)
  local i = random(0, #s - 1)
  local len = random(1, 32)
  local r = random(3)
  if r == 1 then return sub(s, 1, i) .. sub(s, i + 1 + len) end                     -- drop
  if r == 2 then return sub(s, 1, i) .. sub(s, i + 1, i + len) .. sub(s, i + 1) end -- duplicate
  local bytes = {}
  for k = 1, len do bytes[k] = char(random(0, 255)) end
  return put(s, i, table.concat(bytes))                                              -- overwrite
end
function mutators.nan(kind, s)
  local lo, hi = data_region(kind, s)
  if not lo or hi - lo < 2 then return mutators.flip(kind, s) end
  for _ = 1, random(1, 6) do
    local width = ({ 2, 4, 8 })[random(3)]
    if hi - lo >= width then
      local at = lo + random(0, math.floor((hi - lo - width) / width)) * width
      s = put(s, at, nan_bytes(width))
    end
  end
  return s
end
function mutators.nan_number(kind, s)
  if kind ~= 'ckpt' then return mutators.nan(kind, s) end
  -- the value stream's numbers: a tag byte 3 then 8 bytes (other 3s get hit too: fine)
  local t, nst = le64(s, 24), le64(s, 16)
  if not t or not nst or t + 16 * nst >= #s then return mutators.nan(kind, s) end
  local hits, from = {}, t + 16 * nst
  for i = from + 1, #s - 8 do if byte(s, i) == 3 then hits[#hits + 1] = i end end
  if #hits == 0 then return mutators.nan(kind, s) end
  return put(s, hits[random(#hits)], nan_bytes(8))
end
local tokens = { '{', '}', '[', ']', ',', ':', '"', '\\', '\\u00', '\\ud800', '0', '-', '1e400', '.5', '999999999999999',
  'true', 'null', ' ', '\0', '\255', '"dtype"', '"shape"', '"data_offsets"', '"__metadata__"', '"F32"', '"F64"',
  '"BF16"', '"I64"', '[0,8]', '[2]', '[]', '{}', '"a"' }
function mutators.json(kind, s)
  if kind ~= 'st' then return mutators.chunk(kind, s) end
  local n = le64(s, 0)
  if not n or 8 + n > #s then return mutators.flip(kind, s) end
  local h, rest = sub(s, 9, 8 + n), sub(s, 9 + n)
  for _ = 1, random(1, 3) do
    local p = random(0, #h)
    local r = random(3)
    if r == 1 then h = sub(h, 1, p) .. tokens[random(#tokens)] .. sub(h, p + 1)
    elseif r == 2 then h = sub(h, 1, p) .. sub(h, p + 1 + random(1, 6))
    else h = sub(h, 1, p) .. tokens[random(#tokens)] .. sub(h, p + 1 + random(1, 4)) end
  end
  return u64le(#h) .. h .. rest -- the header size follows the edit
end
local mutator_names = { 'flip', 'truncate', 'splice', 'chunk', 'nan', 'nan', 'nan_number', 'json', 'json' }

-- a checkpoint as the writer would have finished it: sizes and checksum (core/checkpoint.c's top comment)
local function repair(s)
  local n = #s
  if n < 64 then return s end
  s = put(s, 12, '\0\0\0\0')
  s = put(s, 40, u64le(n))
  local nst, t = le64(s, 16), le64(s, 24)
  if t < 64 or t > n or nst > (n - t) / 16 then return s end
  s = put(s, 32, u64le(n - t - 16 * nst))
  local digests = {}
  for i = 0, nst - 1 do
    local off, nb = le64(s, t + 16 * i), le64(s, t + 16 * i + 8)
    if off > n or nb > n - off then return s end
    for done = 0, nb - 1, 131072 do
      local len = math.min(131072, nb - done)
      digests[#digests + 1] = u64le(C.mt_xxh3_64(ffi.cast('const char *', s) + off + done, len))
    end
  end
  local tail = sub(s, t + 1)
  digests[#digests + 1] = u64le(C.mt_xxh3_64(tail, #tail))
  local d = table.concat(digests)
  local h = put(sub(s, 1, 64), 56, u64le(C.mt_xxh3_64(d, #d)))
  return put(s, 56, u64le(C.mt_xxh3_64(h, 64)))
end

------------------------------------------------------------------------------------ use
local Failure = {} -- marks failures found by the checks below (not errors of moontorch)
local function fail(msg) error(setmetatable({ msg = msg }, Failure), 0) end

-- a value handed out as an element: a plain number or boolean (type() reads the tag only)
local function check_scalar(v, what)
  local tv = type(v)
  if tv ~= 'number' and tv ~= 'boolean' then fail(format('%s gave a %s, not a number', what, tv)) end
end
local function check_list(l, t, d)
  if type(l) ~= 'table' then fail(format('tolist gave a %s at depth %d', type(l), d)) end
  local size = t:size(d)
  if #l ~= size then fail(format('tolist gave %d elements for a size of %d', #l, size)) end
  for i = 1, size do
    if d == t:dim() then check_scalar(l[i], 'tolist') else check_list(l[i], t, d + 1) end
  end
end

local function use_tensor(t)
  local n = t:numel()
  if n == 1 then check_scalar(t:item(), 'item') end
  -- tolist makes a table per row at every level: bounded by the rows, not the elements (a tensor
  -- of size 2^51 x 0 holds nothing, and its tolist would still make 2^51 tables, as PyTorch's would)
  local rows, tables = 1, 1
  for d = 1, t:dim() - 1 do
    rows = rows * t:size(d)
    tables = tables + rows
  end
  if t:dim() == 0 then
    check_scalar(t:tolist(), 'tolist of a 0-dim tensor')
  elseif n <= 4096 and tables <= 4096 then
    check_list(t:tolist(), t, 1)
  end
  if t:dim() > 0 and t:size(1) > 0 then
    local e = t[1] -- a tensor, as in PyTorch
    if t:dim() == 1 then check_scalar(e:item(), 'indexing, then item') else tostring(e) end
  end
  local s = tostring(t)
  if type(s) ~= 'string' then fail('tostring gave no string') end
end

local function walk(v, seen, depth)
  if torch.is_tensor(v) then
    use_tensor(v)
    return
  end
  if type(v) ~= 'table' or seen[v] or depth > 100 then return end
  seen[v] = true
  for k, x in next, v do
    walk(k, seen, depth + 1)
    walk(x, seen, depth + 1)
  end
end

local x_in = torch.randn(5, 4)
local function use_state_dict(module, sd)
  if type(sd) ~= 'table' then return false end
  local m = module()
  m:load_state_dict(sd)
  for _, mode in ipairs({ 'train', 'eval' }) do
    m[mode](m)
    local y = m(x_in)
    use_tensor(y)
  end
  return true
end

------------------------------------------------------------------------------------ the loop
local counts = { tried = 0, loaded = 0, refused = 0, state_dicts = 0, failures = 0 }
local outcomes = {}  -- error messages seen, by their first words
local function moontorch_error(err)
  local msg = tostring(err):gsub('^[^\n]-:%d+: ', '', 1)
  return msg:sub(1, 10) == 'moontorch.', msg
end

local t0 = os.time()
local deadline = t0 + seconds -- wall-clock seconds (the machine may be shared)
local ext = { ckpt = 'pt', st = 'safetensors' }
while os.time() < deadline do
  local kind = random(2) == 1 and 'ckpt' or 'st'
  local base = bases[kind][random(#bases[kind])]
  local s = base.bytes
  local how = {}
  for _ = 1, random(1, 3) do
    local m = mutator_names[random(#mutator_names)]
    how[#how + 1] = m
    s = mutators[m](kind, s)
    if #s == 0 then break end
  end
  if kind == 'ckpt' and random(10) > 1 then s = repair(s) end
  local path = format('%s/current.%s', workdir, ext[kind])
  write_file(path, s)
  counts.tried = counts.tried + 1
  local mmap = random(2) == 1
  local ok, err = pcall(function()
    local obj
    if kind == 'ckpt' then obj = torch.load(path, { mmap = mmap }) else obj = torch.load_safetensors(path) end
    counts.loaded = counts.loaded + 1
    walk(obj, {}, 0)
    if base.module and use_state_dict(base.module, obj) then counts.state_dicts = counts.state_dicts + 1 end
  end)
  if not ok then
    local good, msg = moontorch_error(err)
    if getmetatable(err) == Failure or not good then
      counts.failures = counts.failures + 1
      local keep = format('%s/failure-%d.%s', workdir, counts.failures, ext[kind])
      write_file(keep, s)
      print(format('FAILURE (%s of %s, %s): %s\n  reproducer: %s', table.concat(how, '+'), base.name,
        mmap and 'mmap' or 'read', getmetatable(err) == Failure and err.msg or tostring(err), keep))
    else
      counts.refused = counts.refused + 1
      local key = msg:match('^(moontorch%.[%w_]+: )') or msg:sub(1, 30)
      outcomes[key] = (outcomes[key] or 0) + 1
    end
  end
  if counts.tried % 500 == 0 then collectgarbage() end
end
os.remove(workdir .. '/current.pt')
os.remove(workdir .. '/current.safetensors')
os.remove(workdir .. '/base.pt')
os.remove(workdir .. '/base.safetensors')
local keys = {}
for k in pairs(outcomes) do keys[#keys + 1] = k end
table.sort(keys)
for _, k in ipairs(keys) do print(format('  refused: %6d  %s', outcomes[k], k)) end
print(format('lua_load_use: %d mutants in %ds (seed %d): %d loaded and used, %d state_dicts loaded into '
  .. 'their module, %d refused with moontorch errors, %d failures', counts.tried, os.time() - t0, seed,
  counts.loaded, counts.state_dicts, counts.refused, counts.failures))
os.exit(counts.failures == 0 and 0 or 1)
