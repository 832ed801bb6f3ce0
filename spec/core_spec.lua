-- The binding itself: the FFI declarations agree with the C header (also struct layouts), no
-- tensor outlives its last handle, and the hot path compiles.
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local function sh(cmd)
  local p = io.popen('env -u LD_PRELOAD ' .. cmd .. ' 2>&1') -- tools run without the sanitizer of an ASan run
  local out = p:read('*a')
  local ok = p:close()
  return out, ok
end

local root = debug.getinfo(1, 'S').source:sub(2):gsub('spec/core_spec.lua$', '')
if root == '' then root = './' end

describe('FFI declarations', function()
  it('are what the preprocessor makes of core/moontorch.h', function()
    local out = sh(('cc -E -P -DMT_FFI %score/moontorch.h'):format(root))
    assert.are.equal(out, core.decls)
  end)

  it('give the C compiler\'s struct sizes and offsets', function()
    local src = os.tmpname() .. '.c'
    local exe = src:gsub('%.c$', '')
    local f = io.open(src, 'w')
    f:write([[
#include <moontorch.h>
#include <stddef.h>
#include <stdio.h>
#define F(T, m) printf("%s.%s %zu\n", #T, #m, offsetof(T, m));
int main(void) {
  printf("mt_tensor %zu\nmt_storage %zu\nmt_stats %zu\nmt_allocator %zu\n", sizeof(mt_tensor), sizeof(mt_storage),
         sizeof(mt_stats), sizeof(mt_allocator));
  F(mt_tensor, _storage) F(mt_tensor, _data) F(mt_tensor, _offset) F(mt_tensor, _numel) F(mt_tensor, _dtype)
  F(mt_tensor, _ndim) F(mt_tensor, _device_type) F(mt_tensor, _flags) F(mt_tensor, _autograd)
  F(mt_tensor, _sizes) F(mt_tensor, _strides) F(mt_storage, _data) F(mt_storage, _nbytes) F(mt_storage, _version)
  F(mt_storage, _allocator) F(mt_stats, live_tensors) F(mt_stats, bytes_since_gc)
  printf("mt_st_entry %zu\n", sizeof(mt_st_entry));
  F(mt_st_entry, name_len) F(mt_st_entry, dtype) F(mt_st_entry, ndim) F(mt_st_entry, sizes)
  F(mt_st_entry, data_begin) F(mt_st_entry, data_end)
  return 0;
}
]])
    f:close()
    local out, ok = sh(('cc -I%score %s -o %s && %s'):format(root, src, exe, exe))
    os.remove(src); os.remove(exe)
    assert.is_truthy(ok, out)
    local n = 0
    for line in out:gmatch('[^\n]+') do
      local name, value = line:match('^(%S+) (%d+)$')
      local ty, field = name:match('^([%w_]+)%.([%w_]+)$')
      local mine = ty and ffi.offsetof(ty, field) or ffi.sizeof(name)
      assert.are.equal(tonumber(value), mine, name)
      n = n + 1
    end
    assert.is_true(n >= 20)
  end)
end)

describe('memory', function()
  it('returns the count of live C tensors to its baseline after a collection', function()
    local stats = torch._C.mt_get_stats()
    T.sweep()
    local base = tonumber(stats.live_tensors)
    do
      local a = torch.ones(100)
      for _ = 1, 20000 do
        local b = a + 1
        local c = b:view(10, 10):t()
        local d = c[3]
      end
    end
    T.sweep()
    assert.are.equal(base, tonumber(stats.live_tensors))
  end)

  it('keeps tensors alive while a handle holds them, however many collections run', function()
    local keep = torch.tensor({ 1, 2, 3 })
    local view = keep:narrow(1, 2, 2)
    keep = nil
    for _ = 1, 3 do T.sweep() end
    for _ = 1, 50000 do local _ = torch.zeros(2) end -- registry churn
    assert.are.same({ 2, 3 }, view:tolist())
  end)

  it('frees big tensors in time (C memory pressure triggers collection)', function()
    local stats = torch._C.mt_get_stats()
    T.sweep()
    local base = tonumber(stats.live_bytes)
    for _ = 1, 40 do local _ = torch.empty(16 * 1024 * 1024) end -- 64 MB each, 2.5 GB in all
    assert.is_true(tonumber(stats.live_bytes) - base < 1024 * 1024 * 1024)
  end)
end)

describe('the JIT', function()
  it('compiles a hot loop of small ops: the loop becomes a trace, no NYI in moontorch code', function()
    local a, b = torch.ones(4), torch.ones(4)
    local nyi, loop_traces, c = H.watch_jit(function()
      local c
      for _ = 1, 20000 do c = a + b * 2 - a / b end
      return c
    end, 'moontorch', 'core_spec')
    assert.are.same({}, nyi)
    assert.is_true(loop_traces > 0, 'the loop was not compiled')
    H.near(c, { 2, 2, 2, 2 })
  end)
end)

describe('loading', function()
  it('a second require after package.loaded was cleared gives the same modules, and tensors keep working', function()
    local t1 = torch.ones(3)
    local saved = {}
    for k, v in pairs(package.loaded) do
      if k == 'moontorch' or k:sub(1, 10) == 'moontorch.' then saved[k] = v; package.loaded[k] = nil end
    end
    local again = require 'moontorch'
    local T2 = require 'moontorch.tensor'
    for k, v in pairs(saved) do package.loaded[k] = v end
    assert.is_true(rawequal(again, torch))
    assert.is_true(rawequal(T2, require 'moontorch.tensor'))
    local t2 = again.ones(3, { dtype = again.float64 })
    H.near(t1 + t2, { 2, 2, 2 })
    collectgarbage()
    H.near(again.ones(2) * 3, { 3, 3 })
  end)
end)
