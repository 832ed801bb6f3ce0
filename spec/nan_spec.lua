-- NaNs with payloads reach Lua as plain NaN numbers, whatever path they take. LuaJIT keeps the
-- tags of its other types inside the NaN space of a double: handed over unchanged, such bits are
-- read as nil, a boolean, a table, ... and the process crashes or hangs. The core canonicalises
-- every double it hands out (mt_number_out; core/tests/test_nan.c walks every float32 NaN).
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'

-- float32 patterns: the reported ones (0xffd00000 read as a table, 0xffffffff as nil, 0xffc9cd65
-- hung tostring), then one in each LuaJIT tag range once widened to double, and positive NaNs
local F32 = { 0xffd00000, 0xffffffff, 0xffc9cd65, 0x7fc00001, 0x7f800001, 0xff800001 }
for tag = 0, 15 do F32[#F32 + 1] = 0xffc00000 + tag * 0x40000 + 0x1234 end
-- float64 high words: every tag range (0xfff9 .. 0xffff), the reported 0xfffa0000, positive NaNs
local F64 = {}
for hi = 0xfff80001, 0xffffffff, 0x10000 do F64[#F64 + 1] = hi end
F64[#F64 + 1] = 0xfffa0000
F64[#F64 + 1] = 0x7ff00001
F64[#F64 + 1] = 0x7fffffff
local F16 = { 0xfc01, 0xffff, 0x7c01, 0xfe00 }
local BF16 = { 0xff81, 0xffff, 0x7f81, 0xffc0 }

local function is_nan_number(x) return type(x) == 'number' and x ~= x end

-- s with every occurrence of the bytes `from` replaced by `to` (plain search: patterns with NUL
-- bytes misbehave under AddressSanitizer's string interceptors), and the count
local function replace_all(s, from, to)
  local parts, pos, n = {}, 1, 0
  while true do
    local a, b = s:find(from, pos, true)
    if not a then break end
    parts[#parts + 1] = s:sub(pos, a - 1) .. to
    pos, n = b + 1, n + 1
  end
  parts[#parts + 1] = s:sub(pos)
  return table.concat(parts), n
end

-- a 1-D tensor of dtype whose elements have the given bit patterns (plus an ordinary 1.5 last)
local function with_bits(dtype, pats)
  local n = #pats + 1
  local t = torch.zeros(n, { dtype = dtype })
  t[n] = 1.5
  local p = t:data_ptr()
  for i, v in ipairs(pats) do
    if dtype == torch.float32 then ffi.cast('uint32_t *', p)[i - 1] = v
    elseif dtype == torch.float64 then ffi.cast('uint32_t *', p)[2 * (i - 1) + 1] = v; ffi.cast('uint32_t *', p)[2 * (i - 1)] = 0xdeadbeef
    else ffi.cast('uint16_t *', p)[i - 1] = v end
  end
  return t
end

local cases = {
  { torch.float32, F32 }, { torch.float64, F64 }, { torch.float16, F16 }, { torch.bfloat16, BF16 },
}

describe('NaN payloads reach Lua as NaN numbers', function()
  for _, c in ipairs(cases) do
    local dtype, pats = c[1], c[2]
    local name = tostring(dtype)

    it(name .. ': item, indexing, tolist', function()
      local t = with_bits(dtype, pats)
      for i = 1, #pats do
        assert.is_true(is_nan_number(t[i]:item()), ('%s element %d: item gave %s'):format(name, i, type(t[i]:item())))
        assert.is_true(is_nan_number(t:select(1, i):item()))
        assert.is_true(is_nan_number(t:narrow(1, i, 1):view({}):item()))
      end
      local l = t:tolist()
      assert.are.equal(#pats + 1, #l)
      for i = 1, #pats do assert.is_true(is_nan_number(l[i]), ('tolist[%d] is a %s'):format(i, type(l[i]))) end
      assert.are.equal(1.5, l[#l])
      -- a 2-D strided view and a 0-dim tensor
      local t2 = torch.stack({ t, t }):t()
      for _, row in ipairs(t2:tolist()) do
        assert.is_true(row[1] ~= row[1] or row[1] == 1.5)
      end
      for i = 1, #pats do
        local z = t[i]:clone()
        assert.are.equal(0, z:dim())
        assert.is_true(is_nan_number(z:item()))
        assert.is_true(is_nan_number(z:tolist()))
      end
    end)

    it(name .. ': printing ends and says nan', function()
      local t = with_bits(dtype, pats)
      local s = tostring(t)
      assert.is_truthy(s:find('nan', 1, true), s)
      for i = 1, #pats do
        local z = tostring(t[i])
        assert.is_truthy(z:find('nan', 1, true), z)
      end
      assert.is_truthy(tostring(t:view(1, -1)):find('nan', 1, true))
    end)

    it(name .. ': reductions returned as numbers', function()
      local t = with_bits(dtype, pats)
      for _, op in ipairs { 'sum', 'mean', 'max', 'min', 'prod', 'amax', 'nansum' } do
        if t[op] then
          local ok, r = pcall(t[op], t)
          if ok and torch.is_tensor(r) then
            local v = r:item()
            assert.are.equal('number', type(v), op)
          end
        end
      end
      assert.is_true(is_nan_number(t:sum():item()))
      assert.is_true(is_nan_number(t:max():item()))
      assert.are.equal('number', type(t:nansum():item()))
    end)

    it(name .. ': through torch.save / torch.load and safetensors', function()
      local t = with_bits(dtype, pats)
      local p = os.tmpname()
      torch.save({ t = t }, p)
      local r = torch.load(p).t
      for i = 1, #pats do assert.is_true(is_nan_number(r[i]:item())) end
      assert.is_truthy(tostring(r):find('nan', 1, true))
      torch.save_safetensors({ t = t }, p)
      r = torch.load_safetensors(p).t
      for i = 1, #pats do assert.is_true(is_nan_number(r[i]:item())) end
      for _, v in ipairs(r:tolist()) do assert.are.equal('number', type(v)) end
      os.remove(p)
    end)
  end

  it('a number field of a torch.save file with payload bits loads as NaN', function()
    local p = os.tmpname()
    -- 1.25 is 0x3ff4000000000000: find its bytes in the value stream and replace them
    torch.save({ lr = 1.25, state = { step = 1.25 }, list = { 1.25, 2 } }, p)
    local s = H.read_file(p)
    local one25 = ffi.string(ffi.new('double[1]', 1.25), 8)
    local count = 0
    for hi = 0xfff90000, 0xffff0000, 0x10000 do
      local forged = ffi.new('uint32_t[2]', 0x12345678, hi)
      local bad, n = replace_all(s, one25, ffi.string(forged, 8))
      count = count + n
      H.write_file(p, H.ckpt_rechecksum(bad))
      local r = torch.load(p)
      assert.is_true(is_nan_number(r.lr), ('high word %x: lr is a %s'):format(hi, type(r.lr)))
      assert.is_true(is_nan_number(r.state.step))
      assert.is_true(is_nan_number(r.list[1]))
      assert.are.equal(2, r.list[2])
    end
    assert.are.equal(7 * 3, count)
    os.remove(p)
  end)

  it('an optimizer loaded with forged numbers in its state keeps plain numbers', function()
    local nn, optim = require 'moontorch.nn', require 'moontorch.optim'
    local m = nn.Linear(2, 2)
    local opt = optim.SGD(m:parameters(), { lr = 1.25, momentum = 0.5 })
    local p = os.tmpname()
    torch.save(opt:state_dict(), p)
    local s = H.read_file(p)
    local one25 = ffi.string(ffi.new('double[1]', 1.25), 8)
    local bad = replace_all(s, one25, ffi.string(ffi.new('uint32_t[2]', 0, 0xfffa0000), 8))
    H.write_file(p, H.ckpt_rechecksum(bad))
    local sd = torch.load(p)
    assert.is_true(is_nan_number(sd.param_groups[1].lr))
    os.remove(p)
  end)

  it('half and bfloat16 conversions hand out plain NaNs', function()
    local C = torch._C
    for _, h in ipairs(F16) do assert.is_true(is_nan_number(C.mt_half_to_float(h))) end
    for _, h in ipairs(BF16) do assert.is_true(is_nan_number(C.mt_bfloat16_to_float(h))) end
  end)
end)
