-- .safetensors read and write, checked against the format's specification
-- (huggingface/safetensors README: u64 little-endian header size, JSON header with dtype / shape /
-- data_offsets and optional __metadata__, padded with spaces to 8 bytes, then the byte buffer
-- covered exactly by the tensors).
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'

local function read_all(p) local f = assert(io.open(p, 'rb')); local s = f:read('*a'); f:close(); return s end
local function write_all(p, s) local f = assert(io.open(p, 'wb')); f:write(s); f:close() end
local function u64le(n)
  local b = {}
  for i = 1, 8 do b[i] = string.char(n % 256); n = math.floor(n / 256) end
  return table.concat(b)
end
local function bytes_of(ctype, values)
  local n = #values
  local a = ffi.new(ctype .. '[?]', n, values)
  return ffi.string(a, ffi.sizeof(ctype) * n)
end

describe('safetensors', function()
  it('round trips every dtype, 0-dim, empty and non-contiguous tensors, with metadata', function()
    local p = os.tmpname()
    local ts = {}
    for _, d in ipairs { torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
      torch.int16, torch.int8, torch.uint8, torch.bool } do
      ts['t_' .. tostring(d):gsub('torch%.', '')] = (torch.arange(0, 6):reshape(2, 3) % 2):to(d)
    end
    ts.scalar = torch.tensor(2.5)
    ts.empty = torch.empty(0, 4)
    ts.transposed = torch.arange(0, 6):reshape(2, 3):t()
    torch.save_safetensors(ts, p, { format = 'pt', note = 'caf\u{e9} "quoted"' })
    local r, meta = torch.load_safetensors(p)
    for k, t in pairs(ts) do
      assert.are.equal(t.dtype, r[k].dtype, k)
      assert.are.same(t:size(), r[k]:size(), k)
      assert.is_true(torch.equal(r[k], t), k)
    end
    assert.are.same({ format = 'pt', note = 'caf\u{e9} "quoted"' }, meta)
    os.remove(p)
  end)
  it('writes the layout the specification describes', function()
    local p = os.tmpname()
    torch.save_safetensors(torch.OrderedDict { { 'b', torch.ones(3) }, { 'a', torch.zeros(2, { dtype = torch.float64 }) },
      { 'c', torch.ones(1, { dtype = torch.uint8 }) } }, p)
    local s = read_all(p)
    local n = 0
    for i = 8, 1, -1 do n = n * 256 + s:byte(i) end
    assert.are.equal(0, n % 8, 'header padded to a multiple of 8')
    local header = s:sub(9, 8 + n)
    assert.is_truthy(header:match('^{.*} *$'))
    -- larger dtypes first, then names (as the reference writer orders them); offsets from 0, no gaps
    assert.are.equal('{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[3],' ..
      '"data_offsets":[16,28]},"c":{"dtype":"U8","shape":[1],"data_offsets":[28,29]}}', (header:gsub(' +$', '')))
    assert.are.equal(8 + n + 29, #s)
    assert.are.equal(bytes_of('double', { 0, 0 }) .. bytes_of('float', { 1, 1, 1 }) .. '\1', s:sub(9 + n))
    local ordered = torch.load_safetensors(p, { ordered = true })
    assert.are.same({ 'a', 'b', 'c' }, ordered:keys())
    os.remove(p)
  end)
  it('reads a file built byte by byte from the specification', function()
    local data = bytes_of('float', { 1.5, -2 }) .. bytes_of('int64_t', { -7 }) .. '\128\63' -- bf16 1.0 = 0x3F80
    local json = '{"__metadata__":{"format":"pt"},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},' ..
      '"i":{"dtype":"I64","shape":[],"data_offsets":[8,16]},"h":{"dtype":"BF16","shape":[1,1],"data_offsets":[16,18]}}'
    json = json .. (' '):rep((8 - #json % 8) % 8)
    local p = os.tmpname()
    write_all(p, u64le(#json) .. json .. data)
    local r, meta = torch.load_safetensors(p)
    H.near(r.x, { 1.5, -2 })
    assert.are.equal(-7, r.i:item())
    assert.are.equal(0, r.i:dim())
    assert.are.equal(torch.bfloat16, r.h.dtype)
    assert.are.equal(1, r.h:item())
    assert.are.same({ format = 'pt' }, meta)
    os.remove(p)
  end)
  it('refuses malformed files with a clear error, never crashing', function()
    local p = os.tmpname()
    local function hdr(json, data) write_all(p, u64le(#json) .. json .. (data or '')) end
    local function refuses(what)
      local ok, err = pcall(torch.load_safetensors, p)
      assert(not ok, 'loaded: ' .. what)
      assert(tostring(err):find('moontorch.load_safetensors', 1, true), err)
    end
    write_all(p, 'abc'); refuses('short file')
    write_all(p, u64le(1000) .. '{}'); refuses('header size beyond the file')
    write_all(p, u64le(2 ^ 40) .. '{}'); refuses('huge header size')
    hdr('[1]'); refuses('not an object')
    hdr('{"x":1}'); refuses('entry not an object')
    hdr('{"x":{"dtype":"F99","shape":[1],"data_offsets":[0,4]}}', '\0\0\0\0'); refuses('unknown dtype')
    hdr('{"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}', '\0\0\0\0'); refuses('negative shape')
    hdr('{"x":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}', '\0\0\0\0'); refuses('fractional shape')
    hdr('{"x":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}}', '\0\0\0\0'); refuses('begin > end')
    hdr('{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}}', '\0\0\0\0'); refuses('end beyond the buffer')
    hdr('{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}', '\0\0\0\0'); refuses('size mismatch')
    hdr('{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
      '\0\0\0\0'); refuses('overlap')
    hdr('{"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', ('\0'):rep(8)); refuses('hole')
    hdr('{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', ('\0'):rep(8)); refuses('buffer not covered')
    hdr('{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
      '\0\0\0\0'); refuses('duplicate keys')
    hdr('{"__metadata__":{"a":1}}'); refuses('non-string metadata')
    hdr('{} x'); refuses('trailing garbage')
    hdr('{"a":"\\ud800"}'); refuses('unpaired surrogate')
    hdr(('['):rep(100) .. (']'):rep(100)); refuses('deep nesting')
    -- every prefix of a good file
    local good_p = os.tmpname()
    torch.save_safetensors({ w = torch.randn(2, 2), b = torch.ones(3, { dtype = torch.int64 }) }, good_p)
    local good = read_all(good_p)
    for len = 0, #good - 1 do
      write_all(p, good:sub(1, len))
      refuses('a file cut at ' .. len)
    end
    os.remove(good_p)
    os.remove(p)
  end)
  it('refuses what cannot be written', function()
    local p = os.tmpname()
    H.errors_with(function() torch.save_safetensors({ x = 3 }, p) end, 'x is not a tensor')
    H.errors_with(function() torch.save_safetensors({ x = torch.ones(1) }, p, { v = 1 }) end,
      'metadata keys and values must be strings')
    os.remove(p)
  end)
end)
