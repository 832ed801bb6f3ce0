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

describe('the device registry', function()
  it('names the device types and knows which this build has', function()
    assert.are.equal('cpu', ffi.string(C.mt_device_name(0)))
    assert.are.equal('cuda', ffi.string(C.mt_device_name(1)))
    assert.are.equal('meta', ffi.string(C.mt_device_name(2)))
    assert.are.equal('?', ffi.string(C.mt_device_name(3)))
    assert.are.equal(1, C.mt_device_available(nil))
    assert.are.equal(1, C.mt_device_available(dev(0)))
    assert.are.equal(0, C.mt_device_available(dev(1)))
    assert.are.equal(0, C.mt_device_available(dev(9)))
    assert.are.equal(0, C.mt_synchronize(nil))
    assert.are.equal(0, C.mt_synchronize(dev(0)))
    assert.are_not.equal(0, C.mt_synchronize(dev(1)))
    assert.matches('built without CUDA', ffi.string(C.mt_last_error()))
  end)

  it('the CPU backend runs every op of the list, a device without a backend none', function()
    for _, op in ipairs(list.ops()) do
      assert.are.equal(1, C.mt_device_supports(nil, op.id, nil, 0), op.name)
      assert.are.equal(0, C.mt_device_supports(dev(1), op.id, nil, 0), op.name)
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
    assert.are_not.equal(0, C.mt_arange(0, 3, 1, 6, dev(1, 2), outp))
    assert.are.equal('arange: device cuda:2 is not available: moontorch was built without CUDA',
      ffi.string(C.mt_last_error()))
    assert.are.equal('cpu', tostring(torch.zeros(2, { device = 'cpu' }).device))
    assert.are.equal('cpu', tostring(torch.arange(3, { device = torch.device('cpu') }).device))
    H.errors_with(function() torch.ones(2, { device = 'cuda:1' }) end,
      'moontorch.ones: device cuda:1 is not available: moontorch was built without CUDA')
    H.errors_with(function() torch.eye(2, { device = 'tpu' }) end,
      'moontorch.eye: expected one of cpu, cuda, meta device type at start of device string: tpu')
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
    t._device_type = 1
    local ok1, e1 = pcall(function() return t + 1 end)
    local ok2, e2 = pcall(function() return t:fill_(1) end)
    local ok3, e3 = pcall(function() return t:tolist() end)
    t._device_type = 9
    local ok4, e4 = pcall(function() return t:exp() end)
    t._device_type = 0
    assert.is_false(ok1)
    assert.matches('moontorch.add: not supported on device cuda:0', e1, 1, true)
    assert.is_false(ok2)
    assert.matches('moontorch.fill_: not supported on device cuda:0', e2, 1, true)
    assert.is_false(ok3)
    assert.matches('moontorch.tolist: a tensor on device cuda:0 holds no data', e3, 1, true)
    assert.is_false(ok4)
    assert.matches("moontorch.exp: 'input' has an unknown device type 9", e4, 1, true)
    H.near(t, { 1.5, 2 })
  end)
end)
