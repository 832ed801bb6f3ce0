-- The CUDA backend's runtime (core/gpu/): devices and their absence, copies between the host and the
-- devices and between devices, the caching allocator (reuse, accounting, giving memory back, freeing its
-- cache and trying again when the device is full, out-of-memory errors), streams and events (work on a
-- stream runs in its order; record_stream keeps memory from being reused too early), the device's
-- errors (an index out of range found by a kernel is an error at the next synchronisation, naming the op),
-- random numbers (Philox4x32-10, PyTorch's CUDA generator) and the CPU emulator's own guarantees (device
-- memory the host cannot read, work that waits for a synchronisation).
--
-- Runs on a GPU or on the emulator (MOONTORCH_CUDA_EMULATE=1, as ./run test runs spec/cuda_*); the
-- checks of the machine without a device run in a child process either way.
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'
local C = require('moontorch.ffi').C

local EMU = torch.cuda.runtime and torch.cuda.runtime() == 'emulator'

describe('CUDA without a device', function()
  it('is not available, and says why when asked for', function()
    local out, ok, err = H.run_lua([[
      local torch = require 'moontorch'
      print(torch.cuda.is_available(), torch.cuda.device_count())
      local ok, e = pcall(function() return torch.ones(2):cuda() end)
      print(ok, e)
      local ok2, e2 = pcall(function() return torch.zeros(2, { device = 'cuda:1' }) end)
      print(ok2, e2)
      print(torch.ones(2):sum():item())
    ]], { 'MOONTORCH_CUDA_EMULATE=0' })
    assert.is_true(ok, err)
    assert.are.equal('', err)
    local lines = {}
    for l in out:gmatch('[^\n]+') do lines[#lines + 1] = l end
    assert.are.equal('false\t0', lines[1])
    assert.matches('^false\t.*[Cc][Uu][Dd][Aa]', lines[2])
    assert.matches('^false\t.*[Cc][Uu][Dd][Aa]', lines[3])
    assert.are.equal('2', lines[4])
  end)
end)

describe('the CUDA backend', function()
  if not torch.cuda.is_available() then
    it('needs a GPU or the emulator', function()
      pending('no CUDA device: run with MOONTORCH_CUDA_EMULATE=1 (./run test does)')
    end)
    return
  end

  after_each(function()
    require('moontorch.tensor').sweep()
    torch.cuda.synchronize()
  end)

  it('names its devices and their properties', function()
    local p = torch.cuda.get_device_properties(0)
    assert.is_string(p.name)
    assert.is_true(p.major >= 8)
    assert.is_true(p.multi_processor_count >= 1)
    assert.is_true(p.total_memory > 0)
    assert.are.equal(p.name, torch.cuda.get_device_name())
    assert.are.same({ p.major, p.minor }, torch.cuda.get_device_capability(0))
    if EMU then assert.are.equal('moontorch CPU emulator', p.name) end
  end)

  it('copies to a device, between devices and back, any dtype, any layout', function()
    local x = torch.arange(24, { dtype = torch.float64 }):reshape(2, 3, 4)
    for _, dt in ipairs({ torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int8,
      torch.uint8, torch.bool, torch.int32, torch.int16 }) do
      local c = x:to(dt)
      local g = c:cuda()
      assert.are.equal('cuda', g.device.type)
      assert.are.equal(dt, g.dtype)
      H.near(g:cpu():double(), c:double(), 0, 0)
      -- a transposed (not contiguous) tensor, both ways
      local t = c:transpose(1, 3)
      H.near(t:cuda():cpu():double(), t:double(), 0, 0)
      H.near(g:transpose(1, 3):cpu():double(), t:double(), 0, 0)
    end
    if torch.cuda.device_count() >= 2 then
      local a = x:to('cuda:0')
      local b = a:to('cuda:1')
      assert.are.equal(1, b.device.index)
      H.near(b:cpu(), x, 0, 0)
      H.near((b * 2):to('cuda:0'):cpu(), x * 2, 0, 0)
      H.errors_with(function() return a + b end, 'same device')
    end
  end)

  it('computes with CPU numbers and 0-dim CPU tensors beside device tensors', function()
    local g = torch.tensor({ 1.5, -2, 4 }):cuda()
    H.near((g * torch.tensor(2.0)):cpu(), { 3, -4, 8 }, 0, 0)
    H.near((torch.tensor(1.0) - g):cpu(), { -0.5, 3, -3 }, 0, 0)
    H.near((g + 1):cpu(), { 2.5, -1, 5 }, 0, 0)
    H.errors_with(function() return g + torch.ones(3) end, 'same device')
  end)

  it('reuses freed memory, counts it, and gives its cache back', function()
    torch.cuda.empty_cache()
    local base = torch.cuda.memory_allocated()
    local a = torch.empty(1000, { device = 'cuda' })
    assert.are.equal(base + 4000, torch.cuda.memory_allocated())
    local reserved = torch.cuda.memory_reserved()
    assert.is_true(reserved >= 4000)
    local p = a:data_ptr()
    a = nil
    require('moontorch.tensor').sweep()
    collectgarbage()
    assert.are.equal(base, torch.cuda.memory_allocated())
    assert.are.equal(reserved, torch.cuda.memory_reserved()) -- kept for reuse
    local b = torch.empty(1000, { device = 'cuda' })
    assert.are.equal(p, b:data_ptr()) -- the same block, on the same stream
    assert.are.equal(reserved, torch.cuda.memory_reserved())
    -- peaks, and their reset
    torch.cuda.reset_peak_memory_stats()
    local c = torch.empty(50000, { device = 'cuda' })
    assert.is_true(torch.cuda.max_memory_allocated() >= torch.cuda.memory_allocated())
    assert.is_true(torch.cuda.max_memory_reserved() >= torch.cuda.memory_reserved())
    b, c = nil, nil
    require('moontorch.tensor').sweep()
    collectgarbage()
    torch.cuda.empty_cache()
    assert.are.equal(base, torch.cuda.memory_allocated())
    assert.matches('reserved', torch.cuda.memory_summary())
  end)

  it('frees its cache and tries again when the device is full, then says what it holds', function()
    if not EMU then pending('the emulator sets the device\'s memory (64 MiB here)'); return end
    local out, ok, err = H.run_lua([[
      local torch = require 'moontorch'
      local a = torch.empty(10 * 2^20, { device = 'cuda' })   -- 40 MiB
      a = nil
      require('moontorch.tensor').sweep(); collectgarbage()
      print(torch.cuda.memory_reserved() >= 40 * 2^20)         -- cached
      local b = torch.empty(12 * 2^20, { device = 'cuda' })   -- 48 MiB: only after freeing the cache
      print(b:numel(), torch.cuda.memory_reserved() < 64 * 2^20)
      local ok, e = pcall(function() return torch.empty(20 * 2^20, { device = 'cuda' }) end)
      print(ok, e)
      b:fill_(2)
      print(b[1]:item())                                       -- still usable
    ]], { 'MOONTORCH_CUDA_EMULATE=1', 'MOONTORCH_CUDA_EMULATE_MEMORY=' .. 64 * 2 ^ 20 })
    assert.is_true(ok, err)
    assert.are.equal('', err)
    local lines = {}
    for l in out:gmatch('[^\n]+') do lines[#lines + 1] = l end
    assert.are.equal('true', lines[1])
    assert.are.equal(tostring(12 * 2 ^ 20) .. '\ttrue', lines[2])
    assert.matches('^false\t.*CUDA out of memory%. Tried to allocate 80%.00 MiB', lines[3])
    assert.matches('reserved in total by moontorch', lines[3])
    assert.are.equal('2', lines[4])
  end)

  it('runs work on a stream in order, events order streams and time them', function()
    local s = torch.cuda.Stream()
    local x = torch.arange(1000, { dtype = torch.float32, device = 'cuda' })
    local y
    torch.cuda.synchronize()
    local e0, e1 = torch.cuda.Event({ enable_timing = true }), torch.cuda.Event({ enable_timing = true })
    torch.cuda.stream(s, function()
      s:wait_stream(torch.cuda.current_stream())
      e0:record()
      y = (x * 2):add(1)
      e1:record()
    end)
    if EMU then assert.is_false(s:query()) end -- the emulator runs it when someone waits
    e1:synchronize()
    assert.is_true(s:query())
    assert.is_true(e1:elapsed_time(e0) <= 0 or e0:elapsed_time(e1) >= 0)
    torch.cuda.current_stream():wait_stream(s)
    H.near(y:cpu(), (torch.arange(1000, { dtype = torch.float32 }) * 2 + 1), 0, 0)
  end)

  it('keeps memory another stream used from reuse until that stream is done (record_stream)', function()
    local s = torch.cuda.Stream()
    local t = torch.full({ 4096 }, 3, { device = 'cuda' })
    torch.cuda.synchronize()
    local u
    torch.cuda.stream(s, function() u = t * 2 end)
    t:record_stream(s)
    t = nil
    require('moontorch.tensor').sweep()
    collectgarbage()
    -- a tensor of the same size on the default stream, written before s runs: not t's block
    local v = torch.full({ 4096 }, 7, { device = 'cuda' })
    torch.cuda.current_stream():synchronize()
    s:synchronize()
    H.near(u:cpu(), torch.full({ 4096 }, 6), 0, 0)
    H.near(v:cpu(), torch.full({ 4096 }, 7), 0, 0)
  end)

  it('copies from pinned memory without blocking, ordered on the stream', function()
    local h = torch.arange(100, { dtype = torch.float32 }):pin_memory()
    assert.is_true(h:is_pinned())
    local g = h:to('cuda', { non_blocking = true })
    local r = (g * 3):to('cpu')
    H.near(r, torch.arange(100, { dtype = torch.float32 }) * 3, 0, 0)
  end)

  it('reports an index a kernel found out of range at the next synchronisation, naming the op', function()
    local x = torch.arange(6, { dtype = torch.float32 }):reshape(2, 3):cuda()
    local bad = torch.tensor({ 1, 7 }, { dtype = torch.int64 }):cuda()
    local ok, e = pcall(function()
      local r = x:index_select(2, bad)
      return r:cpu()
    end)
    assert.is_false(ok)
    assert.matches('index_select: index 7 is out of bounds for dimension 2 with size 3', tostring(e))
    -- the device goes on
    H.near(x:sum():item(), 15, 0, 0)
    ok, e = pcall(function()
      return torch.floor_divide(torch.tensor({ 5 }, { dtype = torch.int64 }):cuda(), torch.tensor({ 0 }, { dtype = torch.int64 }):cuda())
    end)
    if ok then ok, e = pcall(function() return e:cpu() end) end
    assert.is_false(ok)
    assert.matches('ZeroDivisionError', tostring(e))
  end)

  it('checks CSR arrays on the device: a bad column or crow is the next synchronisation\'s error', function()
    local i64 = { dtype = torch.int64, device = 'cuda' }
    local function mm(crow, col)
      local w = torch.sparse_csr_tensor(torch.tensor(crow, i64), torch.tensor(col, i64), torch.ones(#col, { device = 'cuda' }),
        { #crow - 1, 3 })
      return torch.sparse.mm(w, torch.ones(3, 2, { device = 'cuda' })):cpu()
    end
    -- (the CPU's messages, with the device: spec/prune_spec.lua)
    local ok, e = pcall(mm, { 1, 2, 3 }, { 1, 4 })
    assert.is_false(ok)
    assert.matches('csr_mm: col_indices[2] = 4 is out of range for 3 columns (on device cuda:', tostring(e), 1, true)
    ok, e = pcall(mm, { 1, 3, 2 }, { 1, 2 })
    assert.is_false(ok)
    assert.matches('csr_mm: crow_indices must run from 1 to 3 (the number of values) without decreasing; not so at crow_indices[3]',
      tostring(e), 1, true)
    ok, e = pcall(mm, { 1, 2, 4 }, { 1, 2 })
    assert.is_false(ok)
    assert.matches('crow_indices must run from 1 to 3', tostring(e), 1, true)
    -- good arrays: W @ D and its gradients equal the CPU's (empty rows too)
    local crow, col = { 1, 1, 3, 4 }, { 1, 3, 2 }
    local v = torch.tensor({ 0.5, -2, 3 }, { dtype = torch.float64 })
    local d = torch.arange(6, { dtype = torch.float64 }):reshape(3, 2)
    local function run(dev)
      local vv, dd = v:to(dev):detach():requires_grad_(), d:to(dev):detach():requires_grad_()
      local w = torch.sparse_csr_tensor(torch.tensor(crow, { dtype = torch.int64, device = dev }),
        torch.tensor(col, { dtype = torch.int64, device = dev }), vv, { 3, 3 })
      local r = torch.sparse.mm(w, dd)
      r:backward(torch.arange(6, { dtype = torch.float64, device = dev }):reshape(3, 2))
      return r:cpu(), vv.grad:cpu(), dd.grad:cpu()
    end
    local r1, gv1, gd1 = run('cpu')
    local r2, gv2, gd2 = run('cuda')
    H.near(r2, r1, 0, 0)
    H.near(gv2, gv1, 0, 0)
    H.near(gd2, gd1, 0, 0)
    H.near(r1, { { 0, 0 }, { -8, -9.5 }, { 6, 9 } }, 0, 0)
  end)

  it('draws PyTorch\'s CUDA random numbers: Philox4x32-10 (Random123\'s known answers) under a seed', function()
    local ctr, key, out = ffi.new('uint32_t[4]'), ffi.new('uint32_t[2]'), ffi.new('uint32_t[4]')
    local function kat(c, k, want)
      for i = 0, 3 do ctr[i] = c[i + 1] end
      key[0], key[1] = k[1], k[2]
      C.mt_cuda_philox(ctr, key, out)
      for i = 0, 3 do assert.are.equal(want[i + 1], tonumber(out[i])) end
    end
    -- Random123's kat_vectors for philox4x32_10
    kat({ 0, 0, 0, 0 }, { 0, 0 }, { 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 })
    kat({ 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff }, { 0xffffffff, 0xffffffff },
      { 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd })
    kat({ 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 }, { 0xa4093822, 0x299f31d0 },
      { 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 })
    -- thread i's first word is element i of a small tensor: (x + 1/2) / 2^32, as cuRAND's uniform
    torch.cuda.manual_seed(0)
    local r = torch.rand(4, { device = 'cuda' }):cpu()
    for i = 0, 3 do
      for k = 0, 3 do ctr[k] = 0 end
      ctr[2] = i
      key[0], key[1] = 0, 0
      C.mt_cuda_philox(ctr, key, out)
      local want = tonumber(out[0]) * 2 ^ -32 + 2 ^ -33
      assert.is_true(math.abs(r[i + 1]:item() - want) < 1e-7)
    end
    -- the same seed, the same numbers; the state round-trips
    torch.cuda.manual_seed(5)
    local a = torch.randn(7, { device = 'cuda' }):cpu()
    torch.cuda.manual_seed(5)
    local st = torch.cuda.get_rng_state()
    assert.are.equal(16, st:numel())
    local b = torch.randn(7, { device = 'cuda' }):cpu()
    torch.cuda.set_rng_state(st)
    local c = torch.randn(7, { device = 'cuda' }):cpu()
    H.near(b, a, 0, 0)
    H.near(c, a, 0, 0)
    assert.are.equal(5, torch.cuda.initial_seed())
    -- the state is PyTorch's: the seed, then the offset (a multiple of 4), little-endian
    torch.cuda.manual_seed(258)
    local s0 = torch.cuda.get_rng_state()
    assert.are.same({ 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }, s0:tolist())
    torch.rand(3, { device = 'cuda' })
    local s1 = torch.cuda.get_rng_state():tolist()
    assert.is_true(s1[9] > 0 and s1[9] % 4 == 0)
    assert.has_error(function() torch.cuda.set_rng_state(torch.zeros(15, { dtype = torch.uint8 })) end,
      'moontorch.set_rng_state: RNG state is wrong size (expected 16 bytes, got 15)')
    -- torch.manual_seed seeds the device's generator too; a cuda Generator draws the same numbers
    torch.manual_seed(3)
    local d = torch.rand(5, { device = 'cuda' }):cpu()
    local g = torch.Generator('cuda')
    g:manual_seed(3)
    H.near(torch.rand(5, { device = 'cuda', generator = g }):cpu(), d, 0, 0)
  end)

  it('draws from the distributions asked for', function()
    torch.cuda.manual_seed(1)
    local n = 200000
    local u = torch.rand(n, { device = 'cuda', dtype = torch.float64 })
    assert.is_true(u:min():item() >= 0 and u:max():item() < 1)
    assert.is_true(math.abs(u:mean():item() - 0.5) < 0.01)
    local z = torch.randn(n, { device = 'cuda' })
    assert.is_true(math.abs(z:mean():item()) < 0.01 and math.abs(z:std():item() - 1) < 0.01)
    local e = torch.empty(n, { device = 'cuda' }):exponential_(2)
    assert.is_true(math.abs(e:mean():item() - 0.5) < 0.01 and e:min():item() > 0)
    local b = torch.empty(n, { device = 'cuda' }):bernoulli_(0.3)
    assert.is_true(math.abs(b:mean():item() - 0.3) < 0.01)
    local i = torch.randint(3, 9, { n }, { device = 'cuda' })
    assert.are.equal(3, i:min():item())
    assert.are.equal(8, i:max():item())
    local p = torch.randperm(1000, { device = 'cuda' }):cpu()
    H.near(p:sort(), torch.arange(1, 1001), 0, 0)
    local m = torch.multinomial(torch.tensor({ 0.1, 0, 0.6, 0.3 }):cuda(), 3)
    local ms = m:cpu():sort()
    H.near(ms, { 1, 3, 4 }, 0, 0)
    local mr = torch.multinomial(torch.tensor({ 0, 1, 0 }):cuda(), 5, true):cpu()
    H.near(mr, { 2, 2, 2, 2, 2 }, 0, 0)
  end)

  it('protects device memory from the host and runs queued work only when waited for (emulator)', function()
    if not EMU then pending('the emulator\'s own guarantees'); return end
    local out = H.run_lua([[
      local torch = require 'moontorch'
      local ffi = require 'ffi'
      local t = torch.ones(4, { device = 'cuda' })
      io.stdout:write('before\n'); io.stdout:flush()
      local v = ffi.cast('float *', t._data)[0]   -- a host read of device memory: faults, as on a GPU
      print('read', v)
    ]], { 'MOONTORCH_CUDA_EMULATE=1' })
    assert.matches('^before', out)
    assert.is_nil(out:find('read', 1, true))
  end)
end)
