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
-- and reports every problem as `moontorch.load_safetensors: <path>: <problem>`.
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

local MAX_HEADER = 100000000 -- the reference's MAX_HEADER_SIZE
local MAX_DEPTH = 64         -- JSON nesting limit (the format itself needs 3)
local MAX_DIMS = 16          -- MT_MAX_DIMS

------------------------------------------------------------------------------------------- dtypes
-- code, moontorch dtype name; listed in the order the reference writer puts them (its Dtype enum,
-- descending: BOOL < U8 < I8 < I16 < F16 < BF16 < I32 < F32 < F64 < I64)
local dtype_list = {
  { 'I64', 'int64' }, { 'F64', 'float64' }, { 'F32', 'float32' }, { 'I32', 'int32' }, { 'BF16', 'bfloat16' },
  { 'F16', 'float16' }, { 'I16', 'int16' }, { 'I8', 'int8' }, { 'U8', 'uint8' }, { 'BOOL', 'bool' },
}
-- codes the reference knows that moontorch has no dtype for
local unsupported = {
  U16 = true, U32 = true, U64 = true, C64 = true, F4 = true, F6_E2M3 = true, F6_E3M2 = true, F8_E5M2 = true,
  F8_E4M3 = true, F8_E8M0 = true, F8_E4M3FNUZ = true, F8_E5M2FNUZ = true,
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
-- A strict RFC 8259 parser. Objects come back as a table with the values by key plus, under the
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
-- a non-negative integer as the format needs it (JSON integer literal)
local function is_count(x) return type(x) == 'number' and x >= 0 and x % 1 == 0 end

local function bad_entry(bad, name, msg) bad(format('tensor %s: %s', json_string(name), msg)) end

-- check the header's entries against a buffer of buf_size bytes; returns the entries in header order
local function entries_of(obj, buf_size, bad)
  local list = {}
  for _, name in ipairs(obj[KEYS]) do
    if name ~= '__metadata__' then
      local e = obj[name]
      if not is_object(e) then bad_entry(bad, name, 'the entry is not a JSON object') end
      local code = e.dtype
      if type(code) ~= 'string' then bad_entry(bad, name, '"dtype" is missing or not a string') end
      local d = dtype_of_code[code]
      if not d then
        if unsupported[code] then bad_entry(bad, name, format('dtype %s is not supported by moontorch', code)) end
        bad_entry(bad, name, format('unknown dtype %s', json_string(code)))
      end
      local shape = e.shape
      if not is_array(shape) then bad_entry(bad, name, '"shape" is missing or not an array') end
      if shape.n > MAX_DIMS then bad_entry(bad, name, format('%d dimensions (at most %d)', shape.n, MAX_DIMS)) end
      local sizes, numel = {}, 1
      for i = 1, shape.n do
        local s = shape[i]
        if not is_count(s) then bad_entry(bad, name, '"shape" entries must be non-negative integers') end
        sizes[i] = s
        numel = numel * s
      end
      local offs = e.data_offsets
      if not is_array(offs) or offs.n ~= 2 or not is_count(offs[1]) or not is_count(offs[2]) then
        bad_entry(bad, name, '"data_offsets" must be [begin, end], two non-negative integers')
      end
      local b, en = offs[1], offs[2]
      if b > en then bad_entry(bad, name, format('"data_offsets" begin %d is after end %d', b, en)) end
      if en > buf_size then bad_entry(bad, name, format('"data_offsets" end %d is beyond the %d-byte buffer', en, buf_size)) end
      if en - b ~= numel * d.itemsize then
        bad_entry(bad, name, format('%d bytes for %s elements of %s (%d bytes each)', en - b, format('%.0f', numel), code,
          d.itemsize))
      end
      list[#list + 1] = { name = name, dtype = d, sizes = sizes, b = b, e = en }
    end
  end
  return list
end

-- the tensors must cover [0, buf_size) exactly; returns them sorted by offset
local function check_coverage(list, buf_size, bad)
  local sorted = {}
  for i, s in ipairs(list) do sorted[i] = s end
  table.sort(sorted, function(x, y)
    if x.b ~= y.b then return x.b < y.b end
    return x.e < y.e
  end)
  local at = 0
  for _, s in ipairs(sorted) do
    if s.b > at then bad(format('bytes %d to %d of the buffer belong to no tensor (a hole)', at, s.b)) end
    if s.b < at then bad(format('tensor %s overlaps the one before it at byte %d', json_string(s.name), s.b)) end
    at = s.e
  end
  if at ~= buf_size then
    bad(format('the tensors cover %d bytes of the %d-byte buffer (trailing bytes)', at, buf_size))
  end
  return sorted
end

local function load_open(path, opts, f, bad)
  if libc.fseek(f, 0, 2) ~= 0 then bad('cannot seek (not a regular file?)') end
  local fsize = tonumber(libc.ftell(f))
  if fsize < 0 or libc.fseek(f, 0, 0) ~= 0 then bad('cannot seek (not a regular file?)') end
  if fsize < 8 then bad(format('file too short for a header size (%d bytes)', fsize)) end
  if libc.fread(u64, 8, 1, f) ~= 1 then bad('cannot read the header size') end
  local n64 = u64[0]
  if n64 > MAX_HEADER then bad(format('header size %s exceeds the 100 MB limit', tostring(n64):gsub('ULL$', ''))) end
  local n = tonumber(n64)
  if n > fsize - 8 then bad(format('header size %d is larger than the rest of the file (%d bytes)', n, fsize - 8)) end
  local header = ''
  if n > 0 then
    local hbuf = ffi.new('char[?]', n)
    if libc.fread(hbuf, 1, n, f) ~= n then bad('cannot read the header') end
    header = ffi.string(hbuf, n)
  end
  if not valid_utf8(header) then bad('the header is not valid UTF-8') end
  local obj, jerr = parse_json(header)
  if obj == nil then bad(jerr) end
  if not is_object(obj) then bad('the header is not a JSON object') end

  local metadata = obj.__metadata__
  if metadata ~= nil then
    if not is_object(metadata) then bad('"__metadata__" is not a JSON object') end
    local plain = {}
    for _, k in ipairs(metadata[KEYS]) do
      local v = metadata[k]
      if type(v) ~= 'string' then bad(format('"__metadata__" value for %s is not a string', json_string(k))) end
      plain[k] = v
    end
    metadata = plain
  end

  local buf_size = fsize - 8 - n
  local list = entries_of(obj, buf_size, bad)
  local sorted = check_coverage(list, buf_size, bad)

  -- the buffer is covered in offset order: read it front to back, one fread per tensor
  for _, s in ipairs(sorted) do
    local ok, t = pcall(torch.empty, s.sizes, { dtype = s.dtype }) -- refuses, say, [1e15, 1e15, 0]
    if not ok then
      bad_entry(bad, s.name, 'cannot make a tensor of that shape: ' .. tostring(t):gsub('^.-moontorch%.', ''))
    end
    s.t = t
    local nb = s.e - s.b
    if nb > 0 and libc.fread(s.t:data_ptr(), 1, nb, f) ~= nb then bad('the file ended early (truncated?)') end
  end

  local out = (opts and opts.ordered) and torch.OrderedDict() or {}
  for _, s in ipairs(list) do out[s.name] = s.t end
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
