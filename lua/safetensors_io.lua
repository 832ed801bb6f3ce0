-- torch.save_safetensors(tensors, path[, metadata[, {sync=true}]]) / torch.load_safetensors(path[, {ordered=true}])
--
-- The .safetensors format (huggingface/safetensors, README "Format"):
--   8 bytes    N, little-endian u64: the size of the header
--   N bytes    a UTF-8 JSON object: name -> {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}
--              (b, e relative to the byte buffer that follows), plus an optional
--              "__metadata__": {string: string}
--   the rest   the byte buffer: each tensor little-endian, row-major, contiguous; together the
--              tensors cover the buffer exactly (no holes, no overlaps, nothing after them)
--
-- What we write is byte-identical to safetensors.torch.save_file (Rust `prepare` + serde_json):
-- tensors ordered by dtype descending in the reference's Dtype enum order (I64, F64, F32, I32, BF16,
-- F16, I16, I8, U8, BOOL), then by name (bytewise); offsets assigned in that order from 0; the header
-- is compact JSON with "__metadata__" first (only when metadata is given, even if empty), then each
-- entry with its fields in the order dtype, shape, data_offsets; strings escaped as serde_json does
-- (\" \\ \b \f \n \r \t, other bytes below 0x20 as \u00xx, everything else raw UTF-8); the header is
-- padded with spaces to a multiple of 8. The one thing the reference leaves to chance is the order of
-- metadata keys (a Rust HashMap); we sort them.
--
-- Loading checks what the reference loader checks (and a little more: duplicate JSON keys are refused)
-- and reports every problem as `moontorch.load_safetensors: <path>: <problem>`. The header is parsed
-- and checked in C (core/safetensors.c, fuzzed under fuzz/); parse_json below is a JSON reader of
-- our own for tools and specs (a second implementation the spec compares the C parser with).
local ffi = require 'ffi'
local torch = require 'moontorch'
local core = require 'moontorch.ffi' -- declares fopen/fread/fwrite/fclose/fseek/ftell/rename/remove/getpid
local T = require 'moontorch.tensor'
local class = require 'moontorch.class'

local libc = core.libc
local is_tensor = T.is_tensor
local byte, char, sub, find, format, concat = string.byte, string.char, string.sub, string.find, string.format,
  table.concat
local floor, tonumber, type, pairs, ipairs = math.floor, tonumber, type, pairs, ipairs

local M = {}

local MAX_HEADER = core.C.MT_ST_MAX_HEADER -- the reference's MAX_HEADER_SIZE (100 MB)
local MAX_DEPTH = 64                       -- JSON nesting limit (the format itself needs 3)

------------------------------------------------------------------------------------------- dtypes
-- code, moontorch dtype name; listed in the order the reference writer puts them (its Dtype enum,
-- descending: BOOL < U8 < I8 < I16 < F16 < BF16 < I32 < F32 < F64 < I64)
local dtype_list = {
  { 'I64', 'int64' }, { 'F64', 'float64' }, { 'F32', 'float32' }, { 'I32', 'int32' }, { 'BF16', 'bfloat16' },
  { 'F16', 'float16' }, { 'I16', 'int16' }, { 'I8', 'int8' }, { 'U8', 'uint8' }, { 'BOOL', 'bool' },
}
local dtype_of_code, code_of_dtype, rank_of_dtype = {}, {}, {}
for i, e in ipairs(dtype_list) do
  local d = torch[e[2]]
  dtype_of_code[e[1]] = d
  code_of_dtype[d] = e[1]
  rank_of_dtype[d] = i
end
M.dtype_of_code = dtype_of_code
M.code_of_dtype = code_of_dtype

----------------------------------------------------------------------------------------- UTF-8
-- true when s is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF)
local function valid_utf8(s)
  local i = find(s, '[\128-\255]')
  if not i then return true end
  local n = #s
  while i <= n do
    local c = byte(s, i)
    if c < 0x80 then
      i = i + 1
    else
      local len, lo, hi = 0, 0x80, 0xBF -- lo/hi: the allowed range of the second byte
      if c >= 0xC2 and c <= 0xDF then len = 2
      elseif c == 0xE0 then len, lo = 3, 0xA0
      elseif c == 0xED then len, hi = 3, 0x9F
      elseif c >= 0xE1 and c <= 0xEF then len = 3
      elseif c == 0xF0 then len, lo = 4, 0x90
      elseif c >= 0xF1 and c <= 0xF3 then len = 4
      elseif c == 0xF4 then len, hi = 4, 0x8F
      else return false end
      if i + len - 1 > n then return false end
      local c2 = byte(s, i + 1)
      if c2 < lo or c2 > hi then return false end
      for j = i + 2, i + len - 1 do
        local cj = byte(s, j)
        if cj < 0x80 or cj > 0xBF then return false end
      end
      i = i + len
      -- skip the next ASCII run at once
      i = find(s, '[\128-\255]', i) or n + 1
    end
  end
  return true
end
M.valid_utf8 = valid_utf8

---------------------------------------------------------------------------------- JSON writing
-- serde_json's escapes: quote, backslash, the five short forms, other control bytes as \u00xx
local short_escape = { ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n',
  ['\r'] = '\\r', ['\t'] = '\\t' }
local function escape_char(c) return short_escape[c] or format('\\u%04x', byte(c)) end
local function json_string(s)
  return '"' .. s:gsub('[%z\1-\31"\\]', escape_char) .. '"'
end
M.json_string = json_string

---------------------------------------------------------------------------------- JSON parsing
-- A strict RFC 8259 parser (the loader uses core/safetensors.c; this one reads any JSON text and
-- gives the same messages for the same faults, which the spec checks). Objects come back as a table
-- with the values by key plus, under the
-- table key KEYS, the keys in document order, under the OBJECT metatable; arrays as tables with `n` under ARRAY;
-- null as NULL; numbers written as plain integers (-?digits, at most 15 of them, so exact in a
-- double) as Lua numbers and every other number as a NUMBER box holding its text.
local OBJECT, ARRAY, NUMBER, KEYS = {}, {}, {}, {}
M.KEYS = KEYS
local NULL = setmetatable({}, { __tostring = function() return 'null' end })
M.NULL = NULL
local function is_object(x) return type(x) == 'table' and getmetatable(x) == OBJECT end
local function is_array(x) return type(x) == 'table' and getmetatable(x) == ARRAY end
M.is_object, M.is_array = is_object, is_array

local function utf8_char(cp)
  if cp < 0x80 then return char(cp)
  elseif cp < 0x800 then return char(0xC0 + floor(cp / 0x40), 0x80 + cp % 0x40)
  elseif cp < 0x10000 then
    return char(0xE0 + floor(cp / 0x1000), 0x80 + floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
  end
  return char(0xF0 + floor(cp / 0x40000), 0x80 + floor(cp / 0x1000) % 0x40, 0x80 + floor(cp / 0x40) % 0x40,
    0x80 + cp % 0x40)
end

local simple_unescape = { [34] = '"', [92] = '\\', [47] = '/', [98] = '\b', [102] = '\f', [110] = '\n',
  [114] = '\r', [116] = '\t' }

-- parse_json(s) -> value, or nil and a message naming the byte offset
local function parse_json(s)
  local pos, depth = 1, 0
  local parse_value

  local function err(msg, at)
    error({ json_error = format('invalid JSON header at byte %d: %s', (at or pos) - 1, msg) }, 0)
  end
  local function skip_ws()
    pos = find(s, '[^ \t\n\r]', pos) or #s + 1
  end

  local function parse_string()
    pos = pos + 1 -- opening quote
    local parts, np = {}, 0
    while true do
      local j = find(s, '[%z\1-\31"\\]', pos)
      if not j then err('unterminated string', #s + 1) end
      if j > pos then np = np + 1; parts[np] = sub(s, pos, j - 1) end
      local c = byte(s, j)
      if c == 34 then
        pos = j + 1
        break
      elseif c < 32 then
        err('control character in a string', j)
      end
      -- backslash
      local e = byte(s, j + 1)
      if e == 117 then -- \uXXXX
        local hex = sub(s, j + 2, j + 5)
        if not hex:find('^%x%x%x%x$') then err('bad \\u escape', j) end
        local cp = tonumber(hex, 16)
        pos = j + 6
        if cp >= 0xD800 and cp <= 0xDBFF then
          local hex2 = s:match('^\\u(%x%x%x%x)', pos)
          local lo = hex2 and tonumber(hex2, 16)
          if not lo or lo < 0xDC00 or lo > 0xDFFF then err('unpaired surrogate in a \\u escape', j) end
          cp = 0x10000 + (cp - 0xD800) * 0x400 + (lo - 0xDC00)
          pos = pos + 6
        elseif cp >= 0xDC00 and cp <= 0xDFFF then
          err('unpaired surrogate in a \\u escape', j)
        end
        np = np + 1; parts[np] = utf8_char(cp)
      else
        local r = e and simple_unescape[e]
        if not r then err('bad escape', j) end
        np = np + 1; parts[np] = r
        pos = j + 2
      end
    end
    return concat(parts, '', 1, np)
  end

  local function parse_number()
    local start = pos
    local int = s:match('^-?%d+', pos)
    if not int then err('unexpected character') end
    if int:find('^-?0%d') then err('number with a leading zero') end
    pos = pos + #int
    local frac = s:match('^%.%d+', pos)
    if sub(s, pos, pos) == '.' and not frac then err('bad number') end
    if frac then pos = pos + #frac end
    local ex = s:match('^[eE][-+]?%d+', pos)
    if (sub(s, pos, pos) == 'e' or sub(s, pos, pos) == 'E') and not ex then err('bad number') end
    if ex then pos = pos + #ex end
    local text = sub(s, start, pos - 1)
    if not frac and not ex and #int:gsub('^-', '') <= 15 then return tonumber(text) end
    return setmetatable({ text = text }, NUMBER)
  end

  local function enter()
    depth = depth + 1
    if depth > MAX_DEPTH then err('nested too deeply') end
    pos = pos + 1
  end

  parse_value = function()
    skip_ws()
    local c = byte(s, pos)
    if c == 123 then -- {
      enter()
      local obj, keys = setmetatable({}, OBJECT), {}
      obj[KEYS] = keys -- a table key: no JSON (string) key can clash with it
      skip_ws()
      if byte(s, pos) == 125 then pos = pos + 1; depth = depth - 1; return obj end
      while true do
        skip_ws()
        if byte(s, pos) ~= 34 then err('expected a string key') end
        local kpos = pos
        local k = parse_string()
        if obj[k] ~= nil then err(format('duplicate key %s', json_string(k)), kpos) end
        skip_ws()
        if byte(s, pos) ~= 58 then err('expected ":"') end
        pos = pos + 1
        obj[k] = parse_value()
        keys[#keys + 1] = k
        skip_ws()
        local d = byte(s, pos)
        if d == 125 then pos = pos + 1; break end
        if d ~= 44 then err('expected "," or "}"') end
        pos = pos + 1
      end
      depth = depth - 1
      return obj
    elseif c == 91 then -- [
      enter()
      local arr = setmetatable({ n = 0 }, ARRAY)
      skip_ws()
      if byte(s, pos) == 93 then pos = pos + 1; depth = depth - 1; return arr end
      while true do
        local v = parse_value()
        arr.n = arr.n + 1
        arr[arr.n] = v
        skip_ws()
        local d = byte(s, pos)
        if d == 93 then pos = pos + 1; break end
        if d ~= 44 then err('expected "," or "]"') end
        pos = pos + 1
      end
      depth = depth - 1
      return arr
    elseif c == 34 then
      return parse_string()
    elseif c == 116 and sub(s, pos, pos + 3) == 'true' then pos = pos + 4; return true
    elseif c == 102 and sub(s, pos, pos + 4) == 'false' then pos = pos + 5; return false
    elseif c == 110 and sub(s, pos, pos + 3) == 'null' then pos = pos + 4; return NULL
    elseif c == nil then err('unexpected end')
    end
    return parse_number()
  end

  local ok, v = pcall(function()
    local root = parse_value()
    skip_ws()
    if pos <= #s then err('trailing characters after the JSON value') end
    return root
  end)
  if ok then return v end
  if type(v) == 'table' and v.json_error then return nil, v.json_error end
  error(v, 0) -- not ours: a bug, let it through
end
M.parse_json = parse_json

-------------------------------------------------------------------------------------------- save
local u64 = ffi.new('uint64_t[1]')
local tmp_counter = 0

-- the entries to write, in the reference writer's order
local function collect(op, tensors)
  if type(tensors) ~= 'table' then core.fail(op, 'expected a table (or torch.OrderedDict) of tensors by name') end
  local list = {}
  local iter, state
  if class.typename(tensors) == 'torch.OrderedDict' then iter, state = tensors:items() else iter, state = pairs(tensors) end
  for name, t in iter, state do
    if type(name) ~= 'string' then core.fail(op, format('tensor names must be strings, got a %s', type(name))) end
    if name == '__metadata__' then core.fail(op, 'the name __metadata__ is reserved by the format') end
    if not valid_utf8(name) then core.fail(op, format('tensor name %q is not valid UTF-8', name)) end
    if not is_tensor(t) then core.fail(op, format('%s is not a tensor (got a %s)', name, type(t))) end
    if not code_of_dtype[t.dtype] then
      core.fail(op, format('%s: dtype %s has no safetensors code', name, tostring(t.dtype)))
    end
    if t.is_meta then core.fail(op, format('%s: a tensor on device meta has no data to save', name)) end
    if t._device_type ~= 0 then t = t:to('cpu') end
    t = t:contiguous() -- the same tensor when it already is
    list[#list + 1] = { name = name, t = t, rank = rank_of_dtype[t.dtype], nbytes = t:numel() * t.dtype.itemsize }
  end
  table.sort(list, function(a, b)
    if a.rank ~= b.rank then return a.rank < b.rank end
    return a.name < b.name -- LuaJIT compares strings bytewise, as Rust's str::cmp does
  end)
  return list
end

-- the JSON header, padded with spaces to a multiple of 8
local function header_of(op, list, metadata)
  local parts = {}
  if metadata ~= nil then
    if type(metadata) ~= 'table' then core.fail(op, 'metadata must be a table of strings by string') end
    local keys = {}
    for k, v in pairs(metadata) do
      if type(k) ~= 'string' or type(v) ~= 'string' then
        core.fail(op, 'metadata keys and values must be strings')
      end
      if not valid_utf8(k) or not valid_utf8(v) then core.fail(op, 'metadata must be valid UTF-8') end
      keys[#keys + 1] = k
    end
    table.sort(keys)
    for i, k in ipairs(keys) do keys[i] = json_string(k) .. ':' .. json_string(metadata[k]) end
    parts[1] = '"__metadata__":{' .. concat(keys, ',') .. '}'
  end
  local offset = 0
  for _, e in ipairs(list) do
    local t = e.t
    local shape = {}
    for i = 1, t:dim() do shape[i] = format('%d', t:size(i)) end
    parts[#parts + 1] = format('%s:{"dtype":"%s","shape":[%s],"data_offsets":[%d,%d]}', json_string(e.name),
      code_of_dtype[t.dtype], concat(shape, ','), offset, offset + e.nbytes)
    offset = offset + e.nbytes
  end
  local header = '{' .. concat(parts, ',') .. '}'
  header = header .. (' '):rep((8 - #header % 8) % 8)
  if #header > MAX_HEADER then core.fail(op, 'the header would exceed the format\'s 100 MB limit') end
  return header
end

-- opts.sync (default true): fdatasync the file before the rename and fsync its directory after,
-- as torch.save does; false leaves the writing back to the kernel
function M.save(tensors, path, metadata, opts)
  local op = 'save_safetensors'
  if type(path) ~= 'string' then core.fail(op, 'path must be a string') end
  if opts ~= nil and type(opts) ~= 'table' then core.fail(op, 'options must be a table') end
  local sync = not (opts and opts.sync == false)
  local list = collect(op, tensors)
  local header = header_of(op, list, metadata)
  -- write a sibling temporary file, then rename it over path: readers never see half a file
  tmp_counter = tmp_counter + 1
  local tmp = format('%s.tmp%d.%d', path, libc.getpid(), tmp_counter)
  local f = libc.fopen(tmp, 'wb')
  if f == nil then core.fail(op, format('%s: cannot open %s for writing', path, tmp)) end
  u64[0] = #header
  local ok = libc.fwrite(u64, 8, 1, f) == 1 and libc.fwrite(header, 1, #header, f) == #header
  for _, e in ipairs(list) do
    if not ok then break end
    if e.nbytes > 0 then ok = libc.fwrite(e.t:data_ptr(), 1, e.nbytes, f) == e.nbytes end
  end
  local synced = not ok or not sync or core.C.mt_fsync_file(f) == 0
  if libc.fclose(f) ~= 0 then ok = false end
  if not ok or not synced then
    libc.remove(tmp)
    core.fail(op, format('%s: writing %s failed%s', path, tmp,
      synced and '' or ' (' .. ffi.string(core.C.mt_last_error()) .. ')'))
  end
  if libc.rename(tmp, path) ~= 0 then
    libc.remove(tmp)
    core.fail(op, format('%s: cannot rename %s to it', path, tmp))
  end
  if sync and core.C.mt_fsync_dir(path) ~= 0 then core.raise_last() end
end

-------------------------------------------------------------------------------------------- load
-- The header is parsed and checked in C (core/safetensors.c: every check, in a fixed order, and
-- fuzzed under fuzz/); here the file is read and the tensors built from its entries.
local C = core.C
local dtype_by_id = require('moontorch.dtype').by_id
local header_ptr = ffi.typeof('mt_st_header *[1]')
local size_out = ffi.new('uint64_t[1]')
local str_out, len_out = ffi.new('const char *[2]'), ffi.new('size_t[2]')

-- the C message without its "load_safetensors: " (bad() puts the op and the path in front)
local function c_problem()
  return (ffi.string(C.mt_last_error()):gsub('^load_safetensors: ', ''))
end

local function load_open(path, opts, f, bad)
  if libc.fseek(f, 0, 2) ~= 0 then bad('cannot seek (not a regular file?)') end
  local fsize = tonumber(libc.ftell(f))
  if fsize < 0 or libc.fseek(f, 0, 0) ~= 0 then bad('cannot seek (not a regular file?)') end
  local nhead = math.min(fsize, 8)
  if nhead > 0 and libc.fread(u64, 1, nhead, f) ~= nhead then bad('cannot read the header size') end
  if C.mt_st_header_size(u64, fsize, size_out) ~= 0 then bad(c_problem()) end
  local n = tonumber(size_out[0])
  local hbuf = ffi.new('char[?]', n + 1) -- n <= MT_ST_MAX_HEADER and n <= the file's size: checked
  if n > 0 and libc.fread(hbuf, 1, n, f) ~= n then bad('cannot read the header') end
  local hp = header_ptr()
  if C.mt_st_header_parse(hbuf, n, fsize - 8 - n, hp) ~= 0 then bad(c_problem()) end
  local h = ffi.gc(hp[0], C.mt_st_header_free)
  hbuf = nil

  local metadata
  local nmeta = tonumber(C.mt_st_header_metadata_count(h))
  if nmeta >= 0 then
    metadata = {}
    for i = 0, nmeta - 1 do
      if C.mt_st_header_metadata(h, i, str_out, len_out, str_out + 1, len_out + 1) ~= 0 then bad(c_problem()) end
      metadata[ffi.string(str_out[0], len_out[0])] = ffi.string(str_out[1], len_out[1])
    end
  end

  -- the buffer is covered in offset order: read it front to back, one fread per tensor
  local count = tonumber(C.mt_st_header_count(h))
  local by_name = {}
  for i = 0, count - 1 do
    local e = C.mt_st_header_entry(h, i, 1)
    local name = ffi.string(e.name, e.name_len)
    local sizes = {}
    for d = 1, e.ndim do sizes[d] = tonumber(e.sizes[d - 1]) end
    local ok, t = pcall(torch.empty, sizes, { dtype = dtype_by_id[e.dtype] }) -- refuses, say, [1e15, 1e15, 0]
    if not ok then
      bad(format('tensor %s: cannot make a tensor of that shape: %s', json_string(name),
        (tostring(t):gsub('^.-moontorch%.', ''))))
    end
    local nb = tonumber(e.data_end - e.data_begin)
    if nb > 0 and libc.fread(t:data_ptr(), 1, nb, f) ~= nb then bad('the file ended early (truncated?)') end
    by_name[name] = t
  end

  local out = (opts and opts.ordered) and torch.OrderedDict() or {}
  for i = 0, count - 1 do
    local e = C.mt_st_header_entry(h, i, 0)
    local name = ffi.string(e.name, e.name_len)
    out[name] = by_name[name]
  end
  C.mt_st_header_free(ffi.gc(h, nil))
  return out, metadata
end

-- load(path[, {ordered=true}]) -> tensors by name (a torch.OrderedDict in header order when ordered),
-- and the metadata (a table of strings, nil when the file has none)
function M.load(path, opts)
  local op = 'load_safetensors'
  if type(path) ~= 'string' then core.fail(op, 'path must be a string') end
  if opts ~= nil and type(opts) ~= 'table' then core.fail(op, 'options must be a table such as {ordered=true}') end
  if not ffi.abi('le') then core.fail(op, 'only little-endian machines are supported') end
  local function bad(msg) core.fail(op, path .. ': ' .. msg) end
  local f = libc.fopen(path, 'rb')
  if f == nil then bad('cannot open the file') end
  local ok, res, meta = pcall(load_open, path, opts, f, bad)
  libc.fclose(f)
  if not ok then error(res, 0) end
  return res, meta
end

return M
