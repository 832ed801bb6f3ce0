-- torch.save_safetensors(tensors, path, metadata) / torch.load_safetensors(path, {ordered=})
--
-- The safetensors format (huggingface/safetensors): an 8-byte little-endian unsigned header
-- size N, then N bytes of UTF-8 JSON, then the byte buffer. The JSON object maps each tensor's
-- name to {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]} (offsets into the
-- buffer) and may hold "__metadata__": {string: string}. The header is padded with spaces to a
-- multiple of 8 bytes; tensors are little-endian, row-major and contiguous, and cover the buffer
-- exactly (no holes, no overlaps). We write tensors as the reference writer orders them (larger
-- dtypes first, then by name) and check everything the reference loader checks.
local ffi = require 'ffi'
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local class = require 'moontorch.class'

local fail = core.fail
local is_tensor = T.is_tensor

local libc = core.libc

local M = {}

-- dtype codes; `rank` orders them as the reference writer does (larger alignment first)
local codes = {
  { 'F64', 'float64', 8 }, { 'I64', 'int64', 8 }, { 'F32', 'float32', 4 }, { 'I32', 'int32', 4 },
  { 'BF16', 'bfloat16', 2 }, { 'F16', 'float16', 2 }, { 'I16', 'int16', 2 }, { 'I8', 'int8', 1 },
  { 'U8', 'uint8', 1 }, { 'BOOL', 'bool', 1 },
}
local by_code, by_dtype = {}, {}
for i, c in ipairs(codes) do
  local d = torch[c[2]]
  by_code[c[1]] = d
  by_dtype[d] = { code = c[1], rank = i }
end

------------------------------------------------------------------------------ JSON
local function json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    if c == '"' then return '\\"' elseif c == '\\' then return '\\\\' elseif c == '\n' then return '\\n'
    elseif c == '\r' then return '\\r' elseif c == '\t' then return '\\t' end
    return ('\\u%04x'):format(c:byte())
  end) .. '"'
end

-- a strict parser for the header: objects, arrays, strings, integers (what the format uses),
-- also other numbers, true/false/null; nesting limited; duplicate keys refused
local ARRAY = {} -- metatable of parsed JSON arrays (objects have none)
local function is_array(x) return type(x) == 'table' and getmetatable(x) == ARRAY end
local function is_object(x) return type(x) == 'table' and getmetatable(x) == nil end

local function parse_json(s, fail_at)
  local pos = 1
  local depth = 0
  local function err(msg) fail_at(('invalid JSON header at byte %d: %s'):format(pos, msg)) end
  local function ws() pos = s:find('[^ \t\r\n]', pos) or #s + 1 end
  local value
  local function str()
    pos = pos + 1
    local out = {}
    while true do
      local c = s:sub(pos, pos)
      if c == '' then err('unterminated string') end
      if c == '"' then pos = pos + 1 break end
      if c == '\\' then
        local e = s:sub(pos + 1, pos + 1)
        local simple = ({ ['"'] = '"', ['\\'] = '\\', ['/'] = '/', b = '\b', f = '\f', n = '\n', r = '\r', t = '\t' })[e]
        if simple then
          out[#out + 1] = simple
          pos = pos + 2
        elseif e == 'u' then
          local hex = s:sub(pos + 2, pos + 5)
          if not hex:match('^%x%x%x%x$') then err('bad \\u escape') end
          local cp = tonumber(hex, 16)
          pos = pos + 6
          if cp >= 0xD800 and cp <= 0xDBFF then
            local lo = s:match('^\\u(%x%x%x%x)', pos)
            lo = lo and tonumber(lo, 16)
            if not lo or lo < 0xDC00 or lo > 0xDFFF then err('unpaired surrogate') end
            cp = 0x10000 + (cp - 0xD800) * 0x400 + (lo - 0xDC00)
            pos = pos + 6
          elseif cp >= 0xDC00 and cp <= 0xDFFF then
            err('unpaired surrogate')
          end
          -- UTF-8
          if cp < 0x80 then out[#out + 1] = string.char(cp)
          elseif cp < 0x800 then out[#out + 1] = string.char(0xC0 + math.floor(cp / 64), 0x80 + cp % 64)
          elseif cp < 0x10000 then
            out[#out + 1] = string.char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
          else
            out[#out + 1] = string.char(0xF0 + math.floor(cp / 262144), 0x80 + math.floor(cp / 4096) % 64,
              0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
          end
        else
          err('bad escape')
        end
      elseif c:byte() < 32 then
        err('control character in a string')
      else
        local run = s:match('^[^"\\%c]+', pos)
        out[#out + 1] = run
        pos = pos + #run
      end
    end
    return table.concat(out)
  end
  value = function()
    ws()
    local c = s:sub(pos, pos)
    if c == '{' then
      depth = depth + 1
      if depth > 32 then err('nested too deeply') end
      pos = pos + 1
      local obj, keys = {}, {}
      ws()
      if s:sub(pos, pos) == '}' then pos = pos + 1; depth = depth - 1; return obj, keys end
      while true do
        ws()
        if s:sub(pos, pos) ~= '"' then err('expected a string key') end
        local k = str()
        if obj[k] ~= nil then err(('duplicate key "%s"'):format(k)) end
        ws()
        if s:sub(pos, pos) ~= ':' then err('expected ":"') end
        pos = pos + 1
        local v = value()
        obj[k] = v
        keys[#keys + 1] = k
        ws()
        local d = s:sub(pos, pos)
        pos = pos + 1
        if d == '}' then break end
        if d ~= ',' then err('expected "," or "}"') end
      end
      depth = depth - 1
      return obj, keys
    elseif c == '[' then
      depth = depth + 1
      if depth > 32 then err('nested too deeply') end
      pos = pos + 1
      local arr = setmetatable({ n = 0 }, ARRAY)
      ws()
      if s:sub(pos, pos) == ']' then pos = pos + 1; depth = depth - 1; return arr end
      while true do
        arr.n = arr.n + 1
        local v = value()
        if v == nil then err('null in an array') end
        arr[arr.n] = v
        ws()
        local d = s:sub(pos, pos)
        pos = pos + 1
        if d == ']' then break end
        if d ~= ',' then err('expected "," or "]"') end
      end
      depth = depth - 1
      return arr
    elseif c == '"' then
      return str()
    elseif s:sub(pos, pos + 3) == 'true' then pos = pos + 4; return true
    elseif s:sub(pos, pos + 4) == 'false' then pos = pos + 5; return false
    elseif s:sub(pos, pos + 3) == 'null' then pos = pos + 4; return nil
    else
      local num = s:match('^-?%d+%.?%d*[eE]?[-+]?%d*', pos)
      if not num or num == '' or num == '-' then err('unexpected character') end
      if num:match('^-?0%d') then err('leading zero') end
      pos = pos + #num
      local v = tonumber(num)
      if not v then err('bad number') end
      return v
    end
  end
  local root, keys = value()
  ws()
  if pos <= #s then err('trailing characters') end
  return root, keys
end
M._parse_json = parse_json

------------------------------------------------------------------------------ save
local u64 = ffi.new('uint64_t[1]')

local function entries_of(op, tensors)
  if type(tensors) ~= 'table' then fail(op, 'expected a table of tensors by name') end
  local list = {}
  local iter
  if class.typename(tensors) == 'torch.OrderedDict' then iter = tensors:items() else iter = pairs(tensors) end
  for name, t in iter, tensors do
    if type(name) ~= 'string' then fail(op, ('tensor names must be strings (got %s)'):format(type(name))) end
    if name == '__metadata__' then fail(op, 'the name __metadata__ is reserved') end
    if not is_tensor(t) then fail(op, ('%s is not a tensor'):format(name)) end
    local d = by_dtype[t.dtype]
    if not d then fail(op, ('%s: dtype %s has no safetensors code'):format(name, tostring(t.dtype))) end
    list[#list + 1] = { name = name, t = t:contiguous(), d = d }
  end
  table.sort(list, function(a, b)
    if a.d.rank ~= b.d.rank then return a.d.rank < b.d.rank end
    return a.name < b.name
  end)
  return list
end

function M.save(tensors, path, metadata)
  local op = 'save_safetensors'
  if type(path) ~= 'string' then fail(op, 'path must be a string') end
  local list = entries_of(op, tensors)
  local parts, off = {}, 0
  if metadata ~= nil then
    if type(metadata) ~= 'table' then fail(op, 'metadata must be a table of strings') end
    local keys, kv = {}, {}
    for k, v in pairs(metadata) do
      if type(k) ~= 'string' or type(v) ~= 'string' then fail(op, 'metadata keys and values must be strings') end
      keys[#keys + 1] = k
    end
    table.sort(keys)
    for i, k in ipairs(keys) do kv[i] = json_string(k) .. ':' .. json_string(metadata[k]) end
    parts[#parts + 1] = '"__metadata__":{' .. table.concat(kv, ',') .. '}'
  end
  for _, e in ipairs(list) do
    local n = e.t:numel() * e.t.dtype.itemsize
    local shape = {}
    for i = 1, e.t:dim() do shape[i] = ('%d'):format(e.t:size(i)) end
    parts[#parts + 1] = ('%s:{"dtype":"%s","shape":[%s],"data_offsets":[%d,%d]}'):format(json_string(e.name),
      e.d.code, table.concat(shape, ','), off, off + n)
    e.nbytes = n
    off = off + n
  end
  local header = '{' .. table.concat(parts, ',') .. '}'
  header = header .. (' '):rep((8 - #header % 8) % 8)
  local tmp = ('%s.tmp.%d'):format(path, libc.getpid())
  local f = libc.fopen(tmp, 'wb')
  if f == nil then fail(op, ('%s: cannot open %s for writing'):format(path, tmp)) end
  u64[0] = #header
  local ok = libc.fwrite(u64, 8, 1, f) == 1 and libc.fwrite(header, 1, #header, f) == #header
  for _, e in ipairs(list) do
    if ok and e.nbytes > 0 then ok = libc.fwrite(e.t:data_ptr(), 1, e.nbytes, f) == e.nbytes end
  end
  if libc.fclose(f) ~= 0 then ok = false end
  if not ok then
    libc.remove(tmp)
    fail(op, ('%s: write failed (disk full?)'):format(path))
  end
  if libc.rename(tmp, path) ~= 0 then
    libc.remove(tmp)
    fail(op, ('%s: cannot rename %s over it'):format(path, tmp))
  end
end

------------------------------------------------------------------------------ load
local MAX_HEADER = 100 * 1000 * 1000

-- load_safetensors(path, {ordered=true}): name -> tensor (a torch.OrderedDict in file order when
-- ordered), and the metadata table as a second result
function M.load(path, opts)
  local op = 'load_safetensors'
  if type(path) ~= 'string' then fail(op, 'path must be a string') end
  local function bad(msg) fail(op, ('%s: %s'):format(path, msg)) end
  local f = libc.fopen(path, 'rb')
  if f == nil then bad('cannot open the file') end
  local ok, res, meta = pcall(function()
    libc.fseek(f, 0, 2)
    local fsize = tonumber(libc.ftell(f))
    libc.fseek(f, 0, 0)
    if fsize < 8 then bad('file too short for a safetensors header') end
    libc.fread(u64, 8, 1, f)
    if u64[0] > MAX_HEADER then bad('header too large') end
    local n = tonumber(u64[0])
    if 8 + n > fsize then bad('header size larger than the file') end
    local hbuf = ffi.new('char[?]', math.max(n, 1))
    if libc.fread(hbuf, 1, n, f) ~= n then bad('cannot read the header') end
    local header = ffi.string(hbuf, n)
    if header:sub(1, 1) ~= '{' then bad('the header is not a JSON object') end
    local obj, keys = parse_json(header, bad)
    if not is_object(obj) then bad('the header is not a JSON object') end
    local buf_size = fsize - 8 - n
    local metadata = obj.__metadata__
    if metadata ~= nil then
      if not is_object(metadata) then bad('__metadata__ is not an object') end
      for k, v in pairs(metadata) do
        if type(v) ~= 'string' then bad(('__metadata__ value for "%s" is not a string'):format(k)) end
      end
    end
    local specs = {}
    for _, name in ipairs(keys) do
      if name ~= '__metadata__' then
        local e = obj[name]
        if not is_object(e) then bad(('entry "%s" is not an object'):format(name)) end
        local d = by_code[e.dtype]
        if not d then bad(('entry "%s": unknown dtype %s'):format(name, tostring(e.dtype))) end
        local shape = e.shape
        if not is_array(shape) then bad(('entry "%s": shape is not an array'):format(name)) end
        local numel = 1
        for i = 1, shape.n do
          local s = shape[i]
          if type(s) ~= 'number' or s < 0 or s % 1 ~= 0 or s > 2 ^ 48 then
            bad(('entry "%s": shape entries must be non-negative integers'):format(name))
          end
          numel = numel * s
        end
        if shape.n > 16 then bad(('entry "%s": too many dimensions'):format(name)) end
        local offs = e.data_offsets
        if not is_array(offs) or offs.n ~= 2 then bad(('entry "%s": data_offsets must be [begin, end]'):format(name)) end
        local b, en = offs[1], offs[2]
        if type(b) ~= 'number' or type(en) ~= 'number' or b % 1 ~= 0 or en % 1 ~= 0 or b < 0 or en < b then
          bad(('entry "%s": data_offsets must be two integers with begin <= end'):format(name))
        end
        if en > buf_size then bad(('entry "%s": data_offsets end beyond the buffer'):format(name)) end
        if en - b ~= numel * d.itemsize then
          bad(('entry "%s": %d bytes for %d elements of %s'):format(name, en - b, numel, e.dtype))
        end
        local sizes = {}
        for i = 1, shape.n do sizes[i] = shape[i] end
        specs[#specs + 1] = { name = name, d = d, sizes = sizes, b = b, e = en }
      end
    end
    -- the tensors cover the buffer exactly
    local sorted = {}
    for i, s in ipairs(specs) do sorted[i] = s end
    table.sort(sorted, function(a, b) return a.b < b.b or (a.b == b.b and a.e < b.e) end)
    local at = 0
    for _, s in ipairs(sorted) do
      if s.b ~= at then bad(('entry "%s": the buffer has a hole or an overlap at byte %d'):format(s.name, at)) end
      at = s.e
    end
    if at ~= buf_size then bad(('the tensors cover %d bytes of a %d-byte buffer'):format(at, buf_size)) end
    local out = (opts and opts.ordered) and torch.OrderedDict() or {}
    for _, s in ipairs(specs) do
      local t = torch.empty(s.sizes, { dtype = s.d })
      local nb = s.e - s.b
      if nb > 0 then
        libc.fseek(f, 8 + n + s.b, 0)
        if libc.fread(t:data_ptr(), 1, nb, f) ~= nb then bad('truncated') end
      end
      out[s.name] = t
    end
    return out, metadata
  end)
  libc.fclose(f)
  if not ok then error(res, 0) end
  return res, meta
end

return M
