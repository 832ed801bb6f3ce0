-- The device seam (issue 21) shown on the fake CUDA device (core/fake/fake.c): a CPU-run backend in
-- the CUDA slot whose memory the host cannot read outside its kernels and transfers (a direct read
-- faults), which counts what it does. Everything here reaches it through core/backend.h alone:
-- the registry's devices (count, current, errors naming a device that is not there), torch.cuda,
-- reading values back through its transfer, copies between devices, pinned memory, out= results
-- resized on the device, per-device memory counts that make Lua collect dead tensors, streams and
-- events, the fused paths behind kernel slots, modules, torch.save / torch.load(map_location).
-- The op table's fake column (spec/op_table_spec.lua) runs every op on it.
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'
local T = require 'moontorch.tensor'
local C = torch._C
local nn = torch.nn

local cnt = C.mt_fake_cuda_counts()
-- what fn did to the fake's counters: { field = delta }
local function counted(fn)
  local fields = { 'kernels', 'transfers', 'to_host', 'to_device', 'peer', 'allocs', 'frees', 'synchronizes' }
  local before = {}
  for _, f in ipairs(fields) do before[f] = tonumber(cnt[f]) end
  local r = { fn() }
  local d = {}
  for _, f in ipairs(fields) do d[f] = tonumber(cnt[f]) - before[f] end
  return d, unpack(r)
end
local function calls(slot) return tonumber(C.mt_fake_cuda_calls(slot)) end

local function install(n, bytes)
  T.sweep()
  local st = C.mt_fake_cuda_install(n, bytes or 0)
  assert(st == 0, ffi.string(C.mt_last_error()))
end

describe('the fake CUDA device', function()
  setup(function() install(2) end)
  teardown(function()
    torch.cuda.set_device(0)
    install(0)
  end)

  describe('the registry answers for it', function()
    it('is_available, device_count, current_device, set_device, torch.cuda.device', function()
      assert.is_true(torch.cuda.is_available())
      assert.are.equal(2, torch.cuda.device_count())
      assert.is_true(torch.cuda.is_built())
      assert.are.equal('fake', ffi.string(C.mt_device_backend(1)))
      assert.are.equal(0, torch.cuda.current_device())
      torch.cuda.set_device(1)
      assert.are.equal(1, torch.cuda.current_device())
      -- torch.device('cuda') is the current device, wherever a tensor is made or moved
      assert.are.equal('cuda:1', tostring(torch.zeros(2, { device = 'cuda' }).device))
      assert.are.equal('cuda:1', tostring(torch.ones(2):cuda().device))
      assert.are.equal('cuda:0', tostring(torch.ones(2):cuda(0).device))
      local inside = torch.cuda.device(0, function() return torch.cuda.current_device(), torch.empty(1):cuda().device end)
      assert.are.equal(0, inside)
      assert.are.equal(1, torch.cuda.current_device())
      torch.cuda.set_device(0)
      assert.matches('CUDA: a fake device for specs', torch.config(), 1, true)
    end)

    it('a device that is not there is an error naming it and the devices there are', function()
      H.errors_with(function() torch.ones(2, { device = 'cuda:2' }) end,
        'moontorch.ones: CUDA device 2 is not available (2 devices)')
      H.errors_with(function() torch.randn(2):to('cuda:7') end, 'moontorch.to: CUDA device 7 is not available (2 devices)')
      H.errors_with(function() torch.cuda.set_device(3) end,
        'moontorch.cuda.set_device: CUDA device 3 is not available (2 devices)')
      H.errors_with(function() torch.cuda.memory_allocated('cuda:2') end,
        'moontorch.cuda.memory_allocated: CUDA device 2 is not available')
      H.errors_with(function() torch.cuda.set_device('cpu') end, 'moontorch.cuda.set_device: expected a CUDA device, got cpu')
      assert.are.equal('cuda:2', tostring(torch.device('cuda:2'))) -- naming one is no error
      local d = ffi.new('mt_device[1]')
      d[0].type, d[0].index = 1, 2
      assert.are.equal(0, C.mt_device_available(d))
      assert.are_not.equal(0, C.mt_device_check(d))
      assert.are.equal('device: CUDA device 2 is not available (2 devices)', ffi.string(C.mt_last_error()))
      d[0].index = 1
      assert.are.equal(1, C.mt_device_available(d))
    end)

    it('cannot be taken out while a tensor lives on it', function()
      local x = torch.ones(3):cuda()
      assert.are.equal(C.MT_ESTATE, C.mt_fake_cuda_install(0, 0))
      assert.matches('tensors still live on the fake device cuda:0', ffi.string(C.mt_last_error()), 1, true)
      H.near(x:cpu(), { 1, 1, 1 })
    end)
  end)

  describe('values come back to the host through its transfer', function()
    it('item, tolist, printing, all / any, equal each read through the transfer', function()
      local x = torch.tensor({ { 1.5, -2 }, { 0, 4 } }):cuda()
      local d, v = counted(function() return x:sum():item() end)
      assert.are.equal(3.5, v)
      assert.are.equal(1, d.to_host)
      d, v = counted(function() return x:tolist() end)
      assert.are.same({ { 1.5, -2 }, { 0, 4 } }, v)
      assert.are.equal(1, d.to_host)
      d, v = counted(function() return tostring(x) end)
      assert.are.equal("tensor([[ 1.5000, -2.0000],\n        [ 0.0000,  4.0000]], device='cuda:0')", v)
      assert.is_true(d.to_host >= 1)
      d, v = counted(function() return x:all() end)
      assert.is_false(v)
      assert.are.equal(1, d.to_host)
      d, v = counted(function() return x:any() end)
      assert.is_true(v)
      assert.are.equal(1, d.to_host)
      assert.is_true(torch.equal(x, x:clone()))
      -- one element by index: read (and written) on the device
      local outp = ffi.new('mt_tensor *[1]')
      local idx = ffi.new('int64_t[2]', 1, 0)
      local dbl = ffi.new('double[1]')
      assert.are.equal(0, C.mt_tensor_get(x, idx, dbl))
      assert.are.equal(0, dbl[0])
      assert.are.equal(0, C.mt_tensor_set(x, idx, 7))
      assert.are.same({ { 1.5, -2 }, { 7, 4 } }, x:tolist())
      -- the public readback: a CPU tensor of the values
      assert.are.equal(0, C.mt_tensor_to_host(x, outp))
      local h = T.wrap(outp[0])
      assert.are.equal('cpu', tostring(h.device))
      assert.are.same({ { 1.5, -2 }, { 7, 4 } }, h:tolist())
      -- a device that holds no data has no values to read back
      assert.are_not.equal(0, C.mt_tensor_to_host(torch.empty(2, { device = 'meta' }), outp))
      assert.are.equal('to_host: a tensor on device meta holds no data', ffi.string(C.mt_last_error()))
    end)

    it('a direct read of its memory from the host faults, naming the fake device', function()
      local out, ok, err = H.run_lua([[
        local torch = require 'moontorch'
        local x = torch.ones(4):cuda()
        io.write(tostring(x:sum():item()), '\n'); io.flush()
        local v = require('ffi').cast('float *', x._data)[0]
        print('read', v)
      ]], { 'MOONTORCH_FAKE_CUDA=1' })
      assert.are.equal('4\n', out) -- and nothing after: the process died at the read
      assert.matches('the host touched memory of the fake device cuda:0 outside its backend', err, 1, true)
    end)

    it('kthvalue, median and mode pick on the device and give the CPU\'s results', function()
      local a = torch.tensor({ { 3, 1, 2, 2 }, { 0 / 0, 5, -1, 5 }, { 4, 4, 4, 1 } })
      local c = a:cuda()
      for _, f in ipairs({
        function(t) return t:kthvalue(2, 2) end,
        function(t) return t:kthvalue(1, 1, true) end,
        function(t) return t:median(2) end,
        function(t) return t:median() end,
        function(t) return t:mode(2) end,
      }) do
        local v1, i1 = f(a)
        local v2, i2 = f(c)
        assert.is_true(v2.is_cuda)
        assert.are.same(H.shape(v1), H.shape(v2))
        local x, y = v1:reshape(-1):tolist(), v2:reshape(-1):tolist()
        for k = 1, #x do assert.is_true(x[k] == y[k] or (x[k] ~= x[k] and y[k] ~= y[k])) end
        if i1 then assert.are.same(i1:tolist(), i2:tolist()) end
      end
      -- the picked values keep their gradient
      local g = torch.tensor({ 3, 1, 2 }, { dtype = torch.float64 }):cuda():requires_grad_()
      g:kthvalue(2):backward()
      assert.are.same({ 0, 0, 1 }, g.grad:tolist())
    end)

    it('nn.init.sparse_ builds its mask for the device, its normals from the device\'s generator', function()
      -- (s7-numconv: each device has its own generator, as in PyTorch; the fake's engine is the CPU's, so
      -- after manual_seed(3) its normals are a CPU tensor's, and the mask's randperms come from the CPU's
      -- generator, which the normals no longer advanced)
      torch.manual_seed(3)
      local normals = torch.empty(5, 3):normal_(0, 0.01)
      torch.manual_seed(3)
      local zero = {}
      for c = 1, 3 do
        local perm = torch.randperm(5):tolist()
        for k = 1, 2 do zero[(perm[k] - 1) * 3 + c] = true end
      end
      local w1 = normals:reshape(-1):tolist()
      for i in pairs(zero) do w1[i] = 0 end
      torch.manual_seed(3)
      local w2 = nn.init.sparse_(torch.empty(5, 3):cuda(), 0.4)
      assert.is_true(w2.is_cuda)
      assert.are.same(w1, w2:reshape(-1):tolist())
      local zeros = 0
      for _, v in ipairs(w2:reshape(-1):tolist()) do if v == 0 then zeros = zeros + 1 end end
      assert.are.equal(6, zeros) -- ceil(0.4 * 5) per column
    end)

    it('ctc_loss and embedding_bag read their lengths and bags back to check them', function()
      local lp = torch.randn(4, 2, 3):log_softmax(3)
      local tg = torch.tensor({ { 2, 3 }, { 3, 2 } }, { dtype = torch.int64 })
      local want = nn.functional.ctc_loss(lp, tg, { 4, 4 }, { 2, 1 }, { reduction = 'none' })
      local d, got = counted(function()
        return nn.functional.ctc_loss(lp:cuda(), tg:cuda(), { 4, 4 }, { 2, 1 }, { reduction = 'none' })
      end)
      assert.are.same(want:tolist(), got:tolist())
      assert.is_true(d.to_host >= 3) -- input_lengths, target_lengths and targets, checked on the host
      H.errors_with(function()
        nn.functional.ctc_loss(lp:cuda(), tg:cuda(), { 5, 4 }, { 2, 1 })
      end, 'input_lengths to have value at most 4, but got value 5')
      local w = torch.randn(4, 2)
      local idx = torch.tensor({ 1, 3, 4 }, { dtype = torch.int64 })
      local off = torch.tensor({ 1, 2 }, { dtype = torch.int64 })
      assert.are.same(nn.functional.embedding_bag(idx, w, off):tolist(),
        nn.functional.embedding_bag(idx:cuda(), w:cuda(), off:cuda()):tolist())
    end)

    it('gradcheck reads and writes single elements of device tensors', function()
      local x = torch.randn(3, { dtype = torch.float64 }):cuda():requires_grad_()
      assert.is_true(torch.autograd.gradcheck(function(t) return (t * t):sin() end, { x }))
    end)
  end)

  describe('copies between devices', function()
    it('host to device, device to device (a peer copy, not through the host), any strides', function()
      local a = torch.arange(12, { dtype = torch.float32 }):reshape(3, 4)
      local d, x = counted(function() return a:cuda(0) end)
      assert.are.same({ to_device = 1, to_host = 0 }, { to_device = d.to_device, to_host = d.to_host })
      local d2, y = counted(function() return x:to('cuda:1') end)
      assert.are.equal('cuda:1', tostring(y.device))
      assert.are.same({ peer = 1, to_host = 0, to_device = 0 }, { peer = d2.peer, to_host = d2.to_host, to_device = d2.to_device })
      assert.are.same(a:tolist(), y:cpu():tolist())
      -- non-contiguous on either side, and a dtype change on the way
      assert.are.same(a:t():tolist(), a:t():cuda():tolist())
      assert.are.same(a:t():tolist(), x:t():cpu():tolist())
      assert.are.same(a:t():tolist(), x:t():to('cuda:1'):tolist())
      assert.are.equal(torch.float64, x:to('cpu', torch.float64).dtype)
      assert.are.same(a:tolist(), x:to('cuda:1', torch.float64):tolist())
      local dst = torch.zeros(4, 3):cuda()
      dst:t():copy_(a) -- into a transposed device view, from the host
      assert.are.same(a:t():tolist(), dst:tolist())
      local host = torch.zeros(4, 3)
      host:t():copy_(x) -- into a transposed host view, from the device
      assert.are.same(a:t():tolist(), host:tolist())
      -- and with a device that holds no data: through the host one way, an error the other
      local m = x:to('meta')
      assert.is_true(m.is_meta)
      assert.are.same({ 3, 4 }, H.shape(m))
      H.errors_with(function() m:to('cuda') end, 'moontorch.to: cannot copy out of a tensor on device meta: it holds no data')
      -- mixed devices in an op are an error naming both
      H.errors_with(function() return x + y end, 'expected all tensors on the same device, found cuda:0 and cuda:1')
      H.errors_with(function() return x + a end, 'expected all tensors on the same device, found cuda:0 and cpu')
      H.near(x + torch.tensor(1), a + 1) -- a 0-dim CPU tensor is a number beside any device
    end)

    it('pinned host memory, and non_blocking copies from it', function()
      local p = torch.arange(6, { dtype = torch.float32 }):pin_memory()
      assert.is_true(p:is_pinned())
      assert.is_false(torch.arange(6):is_pinned())
      assert.are.equal(p, p:pin_memory())
      local x = p:to('cuda', { non_blocking = true })
      assert.are.same(p:tolist(), x:tolist())
      assert.are.same(p:tolist(), p:cuda({ non_blocking = true }):tolist())
      H.errors_with(function() x:pin_memory() end, 'moontorch.pin_memory: cannot pin a tensor on device cuda:0')
    end)

    it('an out= result resized on the device keeps its old bytes, as on the CPU', function()
      for _, dev in ipairs({ 'cpu', 'cuda' }) do
        local base = torch.tensor({ 10, 11, 12, 13 }):to(dev)
        local o = base:narrow(1, 3, 2) -- storage offset 2, 2 elements
        torch.add(torch.ones(6):to(dev), 1, { out = o })
        assert.are.same({ 6 }, H.shape(o))
        assert.are.same({ 10, 11, 2, 2, 2, 2, 2, 2 }, o:as_strided({ 8 }, { 1 }, 0):tolist(), dev)
        assert.are.same({ 10, 11, 12, 13 }, base:tolist(), dev) -- the base keeps its own storage
      end
      local m = torch.empty(2, { device = 'meta' })
      torch.add(torch.ones(5, { device = 'meta' }), 1, { out = m })
      assert.are.same({ 5 }, H.shape(m))
    end)
  end)

  describe('memory', function()
    it('counts each device\'s bytes; peaks, reset, free and total, stats, summary', function()
      T.sweep()
      torch.cuda.reset_peak_memory_stats()
      local base = torch.cuda.memory_allocated()
      local x = torch.empty(1000, { device = 'cuda' })
      assert.are.equal(base + 4000, torch.cuda.memory_allocated())
      assert.are.equal(base + 4000, torch.cuda.max_memory_allocated())
      assert.is_true(torch.cuda.memory_reserved() >= base + 4096) -- the fake hands out whole pages
      local y = torch.empty(10, { device = 'cuda:1' })
      assert.are.equal(40, torch.cuda.memory_allocated(1) - (torch.cuda.memory_allocated(1) - 40))
      local free, total = torch.cuda.mem_get_info()
      assert.are.equal(256 * 2 ^ 20, total)
      assert.is_true(free <= total - 4096)
      local st = torch.cuda.memory_stats()
      assert.are.equal(base + 4000, st['allocated_bytes.all.current'])
      assert.matches('allocated (live tensors)', torch.cuda.memory_summary(), 1, true)
      x, y = nil, nil
      T.sweep()
      assert.are.equal(base, torch.cuda.memory_allocated())
      assert.are.equal(base + 4000, torch.cuda.max_memory_allocated())
      torch.cuda.reset_peak_memory_stats()
      assert.are.equal(base, torch.cuda.max_memory_allocated())
      torch.cuda.empty_cache()
      -- the host's count is the host's alone
      local stats = C.mt_get_stats()
      local host = tonumber(stats.live_bytes)
      local z = torch.empty(2 ^ 20, { device = 'cuda' })
      assert.are.equal(host, tonumber(stats.live_bytes))
      z = nil
    end)

    it('dead tensors on the device are collected when its bytes grow, whatever the host does', function()
      install(0)
      install(1, 48 * 2 ^ 20) -- one device of 48 MB
      local ok, err = pcall(function()
        -- 60 live tensors of 1 MB do not fit: the device's memory is really that small
        local held = {}
        local fits, e = pcall(function() for i = 1, 60 do held[i] = torch.empty(2 ^ 18, { device = 'cuda' }) end end)
        assert.is_false(fits)
        assert.matches('moontorch.empty: out of memory', e, 1, true)
        held = nil
        T.sweep()
        torch.cuda.reset_peak_memory_stats()
        -- 400 dead ones go by: an allocation past the device's limit has Lua collect
        local frees0 = tonumber(cnt.frees)
        for _ = 1, 400 do torch.empty(2 ^ 18, { device = 'cuda' }):fill_(1) end
        assert.is_true(torch.cuda.max_memory_allocated() <= 40 * 2 ^ 20, tostring(torch.cuda.max_memory_allocated()))
        assert.is_true(tonumber(cnt.frees) - frees0 >= 350)
        local s = ffi.new('mt_memory_stats')
        assert.are.equal(0, C.mt_memory_stats_of(torch.device('cuda:0')._c, s))
        -- the next collection: a quarter of what the device has left beyond its live bytes (48 MB: 12 MB)
        assert.is_true(s.gc_limit > s.allocated and s.gc_limit <= s.allocated + 12 * 2 ^ 20, tostring(s.gc_limit))
      end)
      install(0)
      install(2)
      assert(ok, err)
    end)
  end)

  describe('streams and events', function()
    it('Stream, current_stream, set_stream, stream(s, fn), synchronize, Event', function()
      local s = torch.cuda.Stream()
      local default = torch.cuda.default_stream()
      assert.are.equal(default, torch.cuda.current_stream())
      assert.are_not.equal(s, torch.cuda.current_stream())
      local inside = torch.cuda.stream(s, function() return torch.cuda.current_stream() end)
      assert.are.equal(s, inside)
      assert.are.equal(default, torch.cuda.current_stream())
      torch.cuda.set_stream(s)
      assert.are.equal(s, torch.cuda.current_stream())
      torch.cuda.set_stream(default)
      local d = counted(function() s:synchronize(); torch.cuda.synchronize() end)
      assert.are.equal(2, d.synchronizes)
      assert.is_true(s:query())
      local x = torch.ones(3):cuda()
      x:record_stream(s)
      H.errors_with(function() torch.ones(3):record_stream(s) end, 'the tensor is on device cpu, the stream on cuda:0')
      local e1, e2 = torch.cuda.Event({ enable_timing = true }), torch.cuda.Event({ enable_timing = true })
      e1:record()
      local _ = (x * 2):sum()
      e2:record(s)
      e2:synchronize()
      assert.is_true(e2:query())
      assert.is_true(e1:elapsed_time(e2) >= 0)
      s:wait_event(e1)
      H.errors_with(function() torch.cuda.Event():elapsed_time(e2) end, 'both events must be created with enable_timing=true')
      assert.are.equal('cuda:1', tostring(torch.cuda.Stream(1).device))
    end)
  end)

  describe('the fused paths are kernel slots any backend fills', function()
    it('elementwise fast paths, the fused unary and softmax backwards run on the device\'s kernels', function()
      local a = torch.randn(5):cuda()
      local b0, c0 = calls('binary'), calls('copy')
      local _ = a + a
      local _ = a * 2
      assert.are.equal(2, calls('binary') - b0)
      assert.are.equal(0, calls('copy') - c0) -- no conversion of the operands or of the number
      local x = torch.randn(4, 5):cuda():requires_grad_()
      local y = x:softmax(2)
      local s0 = calls('softmax_backward')
      y:backward(torch.randn(4, 5):cuda())
      assert.are.equal(1, calls('softmax_backward') - s0)
      local z = torch.randn(4):cuda():requires_grad_()
      local g0 = calls('unary_grad')
      z:relu():backward(torch.ones(4):cuda()) -- (the CPU's kernels fuse relu's and abs's)
      assert.are.equal(1, calls('unary_grad') - g0)
      assert.are.equal(-1, tonumber(C.mt_fake_cuda_calls('no_such_slot')))
    end)
  end)

  describe('modules, optimizers, files', function()
    it('m:cuda() trains as on the CPU, bit for bit', function()
      torch.manual_seed(1)
      local m1 = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
      torch.manual_seed(1)
      local m2 = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)):cuda()
      local w = m2:parameters()[1]
      assert.is_true(w.is_cuda)
      assert.is_true(w.requires_grad)
      local o1 = torch.optim.SGD(m1:parameters(), { lr = 0.1, momentum = 0.9 })
      local o2 = torch.optim.SGD(m2:parameters(), { lr = 0.1, momentum = 0.9 })
      local x, t = torch.randn(6, 4), torch.tensor({ 1, 2, 3, 1, 2, 3 }, { dtype = torch.int64 })
      for _ = 1, 3 do
        o1:zero_grad(); o2:zero_grad()
        nn.functional.cross_entropy(m1(x), t):backward()
        nn.functional.cross_entropy(m2(x:cuda()), t:cuda()):backward()
        o1:step(); o2:step()
      end
      for i, p in ipairs(m1:parameters()) do assert.are.same(p:tolist(), m2:parameters()[i]:tolist()) end
      assert.are.equal('cuda:1', tostring(nn.Linear(2, 2):cuda(1).weight.device))
      assert.are.equal('cpu', tostring(m2:cpu():parameters()[1].device))
    end)

    it('torch.save writes device tensors\' values; torch.load puts them on map_location, views shared', function()
      local base = torch.arange(6, { dtype = torch.float32 }):cuda()
      local obj = { a = base, b = base:narrow(1, 2, 3), p = nn.Parameter(torch.ones(2):cuda()) }
      local path = os.tmpname()
      torch.save(obj, path)
      local cpu = torch.load(path)
      assert.are.equal('cpu', tostring(cpu.a.device))
      assert.are.same({ 0, 1, 2, 3, 4, 5 }, cpu.a:tolist())
      local dev = torch.load(path, { map_location = 'cuda:1' })
      assert.are.equal('cuda:1', tostring(dev.a.device))
      assert.are.equal('cuda:1', tostring(dev.b.device))
      assert.is_true(dev.p.requires_grad)
      dev.a:fill_(7)
      assert.are.same({ 7, 7, 7 }, dev.b:tolist()) -- b is still a view of a
      H.errors_with(function() torch.load(path, { map_location = 'cuda:4' }) end,
        'map_location CUDA device 4 is not available (2 devices)')
      os.remove(path)
    end)

    it('tensor types name the device', function()
      local x = torch.ones(2)
      local c = x:type('torch.cuda.DoubleTensor')
      assert.is_true(c.is_cuda)
      assert.are.equal(torch.float64, c.dtype)
      assert.are.equal('torch.cuda.DoubleTensor', c:type())
      assert.are.equal('torch.FloatTensor', c:type('torch.FloatTensor'):type())
      assert.is_false(c:type('torch.FloatTensor').is_cuda)
    end)
  end)
end)
