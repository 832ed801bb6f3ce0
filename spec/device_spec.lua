-- Devices and their backends (core/backend.h, core/ops/device.c): the registry, the C device
-- functions, factories and t:to() taking a device, and tensors whose device fields were forged
-- from Lua answering with errors, never crashes.
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'
local C = torch._C
local list = require 'moontorch.ops.list'

local function dev(type_id, index)
  local d = ffi.new('mt_device[1]')
  d[0].type, d[0].index = type_id, index or 0
  return d
end

-- CUDA as the registry has it in this build: no backend ("built without CUDA"), or core/gpu's on a
-- machine without a GPU (0 devices); on a machine with one, the tests of an absent device are skipped
local CUDA_BACKEND = C.mt_device_backend(1) ~= nil
local CUDA_DEVICES = C.mt_device_count(1)
-- how the registry words the absence of a CUDA device (`index`: the one asked for, nil: the current)
local function absent(devstr, index)
  if not CUDA_BACKEND then return 'device ' .. devstr .. ' is not available: moontorch was built without CUDA' end
  if index then return ('CUDA device %d is not available (0 devices'):format(index) end
  return 'no CUDA device is available (0 devices'
end

describe('the device registry', function()
  it('names the device types and knows which this build has', function()
    assert.are.equal('cpu', ffi.string(C.mt_device_name(0)))
    assert.are.equal('cuda', ffi.string(C.mt_device_name(1)))
    assert.are.equal('meta', ffi.string(C.mt_device_name(2)))
    assert.are.equal('?', ffi.string(C.mt_device_name(3)))
    assert.are.equal(1, C.mt_device_available(nil))
    assert.are.equal(1, C.mt_device_available(dev(0)))
    assert.are.equal(C.mt_device_backend(1) ~= nil and C.mt_device_count(1) > 0 and 1 or 0, C.mt_device_available(dev(1)))
    assert.are.equal(0, C.mt_device_available(dev(9)))
    assert.are.equal(0, C.mt_synchronize(nil))
    assert.are.equal(0, C.mt_synchronize(dev(0)))
    if CUDA_DEVICES == 0 then
      assert.are_not.equal(0, C.mt_synchronize(dev(1)))
      assert.matches(absent('cuda:0', 0), ffi.string(C.mt_last_error()), 1, true)
    end
  end)

  it('the CPU backend runs every op of the list, a device without a backend none', function()
    for _, op in ipairs(list.ops()) do
      assert.are.equal(1, C.mt_device_supports(nil, op.id, nil, 0), op.name)
      if CUDA_DEVICES == 0 then assert.are.equal(0, C.mt_device_supports(dev(1), op.id, nil, 0), op.name) end
    end
    assert.are.equal(0, C.mt_device_supports(nil, -1, nil, 0))
    assert.are.equal(0, C.mt_device_supports(nil, #list.ops(), nil, 0))
  end)

  it('factories take a device; an unknown one is an error naming the factory', function()
    local outp = ffi.new('mt_tensor *[1]')
    local sz = ffi.new('int64_t[1]', 2)
    assert.are.equal(0, C.mt_tensor_empty(sz, 1, 6, dev(0), outp))
    C.mt_tensor_release(outp[0])
    assert.are_not.equal(0, C.mt_tensor_empty(sz, 1, 6, dev(7), outp))
    assert.matches('empty: unknown device', ffi.string(C.mt_last_error()))
    if CUDA_DEVICES < 3 then
      assert.are_not.equal(0, C.mt_arange(0, 3, 1, 6, dev(1, 2), outp))
      assert.matches('arange: ' .. (CUDA_DEVICES == 0 and absent('cuda:2', 2) or 'CUDA device 2 is not available ('),
        ffi.string(C.mt_last_error()), 1, true)
    end
    assert.are.equal('cpu', tostring(torch.zeros(2, { device = 'cpu' }).device))
    assert.are.equal('cpu', tostring(torch.arange(3, { device = torch.device('cpu') }).device))
    if CUDA_DEVICES == 0 then
      H.errors_with(function() torch.ones(2, { device = 'cuda:1' }) end, 'moontorch.ones: ' .. absent('cuda:1', 1))
    end
    assert.are.equal(0, C.mt_arange(0, 3, 1, 6, dev(2, 0), outp)) -- meta has one device, 0
    C.mt_tensor_release(outp[0])
    assert.are_not.equal(0, C.mt_arange(0, 3, 1, 6, dev(2, 1), outp))
    assert.are.equal('arange: meta device 1 is not available (1 device)', ffi.string(C.mt_last_error()))
    assert.are_not.equal(0, C.mt_arange(0, 3, 1, 6, dev(0, -2), outp))
    assert.are.equal('arange: unknown device (type 0, index -2)', ffi.string(C.mt_last_error()))
    H.errors_with(function() torch.eye(2, { device = 'tpu' }) end,
      'moontorch.eye: expected one of cpu, cuda, meta device type at start of device string: tpu')
  end)

  it('asks the C core about CUDA: without a device, false and 0, and every use an error saying why', function()
    if CUDA_DEVICES > 0 then
      print('device_spec: skipped the tests of an absent CUDA device: this machine has ' .. CUDA_DEVICES)
      return
    end
    assert.is_false(torch.cuda.is_available())
    assert.are.equal(0, torch.cuda.device_count())
    assert.are.equal(CUDA_BACKEND, torch.cuda.is_built())
    assert.are.equal(0, C.mt_device_count(1))
    assert.are.equal(1, C.mt_device_count(0))
    assert.are.equal(1, C.mt_device_count(2))
    assert.are.equal(0, C.mt_device_count(7))
    assert.are.equal('cpu', ffi.string(C.mt_device_backend(0)))
    assert.are.equal('meta', ffi.string(C.mt_device_backend(2)))
    assert.is_true(C.mt_device_backend(7) == nil)
    assert.are_not.equal(0, C.mt_device_check(dev(1, -1)))
    assert.matches('device: ' .. absent('cuda'), ffi.string(C.mt_last_error()), 1, true)
    assert.are.equal(0, C.mt_device_check(dev(2, -1)))
    assert.are.equal(0, C.mt_device_check(nil))
    local cur, one = absent('cuda'), absent('cuda:1', 1)
    H.errors_with(function() torch.cuda.current_device() end, 'moontorch.cuda.current_device: ' .. cur)
    H.errors_with(function() torch.cuda.set_device(1) end, 'moontorch.cuda.set_device: ' .. one)
    H.errors_with(function() torch.cuda.synchronize() end, 'moontorch.cuda.synchronize: ' .. cur)
    H.errors_with(function() torch.cuda.memory_allocated() end, 'moontorch.cuda.memory_allocated: ' .. cur)
    H.errors_with(function() torch.cuda.Stream() end, 'moontorch.cuda.Stream: ' .. cur)
    H.errors_with(function() torch.cuda.Event() end, 'moontorch.cuda.Event: ' .. cur)
    torch.cuda.empty_cache() -- nothing to give back: no error
    assert.are.equal('cuda:1', tostring(torch.device('cuda:1'))) -- naming a device is no error
    local t = torch.ones(2)
    H.errors_with(function() t:cuda() end, 'moontorch.cuda: ' .. cur)
    H.errors_with(function() t:cuda(1) end, 'moontorch.cuda: ' .. one)
    H.errors_with(function() t:to('cuda') end, 'moontorch.to: ' .. cur)
    H.errors_with(function() t:type('torch.cuda.FloatTensor') end, 'moontorch.type: ' .. cur)
    if not CUDA_BACKEND then
      H.errors_with(function() t:pin_memory() end,
        'moontorch.pin_memory: no device of this build has page-locked host memory (moontorch was built without CUDA)')
    end
    H.errors_with(function() torch.nn.Linear(2, 2):cuda() end, 'moontorch.nn.Module.cuda: ' .. cur)
    H.errors_with(function() torch.nn.Linear(2, 2):to('cuda:1') end, 'moontorch.nn.Module.to: ' .. one)
    H.errors_with(function() torch.nn.Sequential():to('cuda') end, 'moontorch.nn.Module.to: ' .. cur)
    H.errors_with(function() torch.Generator('cuda') end, 'moontorch.Generator: ' .. cur)
    local path = os.tmpname()
    torch.save({ t }, path)
    H.errors_with(function() torch.load(path, { map_location = 'cuda:1' }) end,
      'moontorch.load: ' .. path .. ': map_location ' .. one)
    os.remove(path)
    assert.matches(CUDA_BACKEND and '  - CUDA: ' or '  - CUDA: not built (', torch.config(), 1, true)
  end)

  it('t:to(device) on the device it is on is t itself, or a copy when asked', function()
    local t = torch.tensor({ 1, 2 })
    assert.are.equal(t, t:to('cpu'))
    assert.are.equal(t, t:cpu())
    local c = t:to('cpu', { copy = true })
    assert.are_not.equal(t, c)
    H.near(c, { 1, 2 })
    assert.are.equal(torch.float64, t:to('cpu', torch.float64).dtype)
  end)

  it('Tensor.new_* keep the tensor\'s dtype and device unless told', function()
    local t = torch.zeros(2, { dtype = torch.float64 })
    local n = t:new_ones(3)
    assert.are.equal(torch.float64, n.dtype)
    assert.are.equal('cpu', tostring(n.device))
    assert.are.equal(torch.int32, t:new_zeros({ 2 }, { dtype = torch.int32 }).dtype)
  end)

  it('a tensor whose device fields were forged answers with errors, not crashes', function()
    local t = torch.tensor({ 1.5, 2 })
    if not CUDA_BACKEND then -- (a CUDA backend would take the CPU pointer for its own: forge nothing there)
      t._device_type = 1
      local ok1, e1 = pcall(function() return t + 1 end)
      local ok2, e2 = pcall(function() return t:fill_(1) end)
      local ok3, e3 = pcall(function() return t:tolist() end)
      t._device_type = 0
      assert.is_false(ok1)
      assert.matches('moontorch.add: not supported on device cuda:0', e1, 1, true)
      assert.is_false(ok2)
      assert.matches('moontorch.fill_: not supported on device cuda:0', e2, 1, true)
      assert.is_false(ok3)
      assert.matches('moontorch.tolist: a tensor on device cuda:0 holds no data', e3, 1, true)
    end
    t._device_type = 9
    local ok4, e4 = pcall(function() return t:exp() end)
    local ok5, e5 = pcall(function() return t + t end)
    t._device_type = 0
    assert.is_false(ok4)
    assert.matches("moontorch.exp: 'input' has an unknown device type 9", e4, 1, true)
    assert.is_false(ok5)
    assert.matches("moontorch.add: 'input' has an unknown device type 9", e5, 1, true)
    H.near(t, { 1.5, 2 })
  end)
end)
