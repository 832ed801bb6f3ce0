-- Conversions and odd corners of the Tensor API that users reach early: t:type(name),
-- t:new_tensor's options, tolist of huge empty tensors, assigning .data.
-- Expected behaviour from PyTorch 1.13 (/usr/bin/python3): t.type('torch.DoubleTensor') converts;
-- x.new_tensor(data, requires_grad=True) keeps the option; p.data = <int64 tensor> on a parameter
-- raises "data set to a tensor that requires gradients must be floating point or complex dtype";
-- torch.zeros(2**51, 0, 3).tolist() raises MemoryError.
local H = require 'spec.support.helper'
local torch = H.torch

describe('t:type', function()
  it('takes the legacy type names as well as dtypes', function()
    local t = torch.ones(2, 3)
    assert.are.equal('torch.FloatTensor', t:type())
    assert.are.equal(torch.float64, t:type('torch.DoubleTensor').dtype)
    assert.are.equal(torch.int64, t:type('torch.LongTensor').dtype)
    assert.are.equal(torch.int32, t:type(torch.int32).dtype)
    assert.are.equal(torch.float64, t:type('float64').dtype)
    assert.are.same({ { 1, 1, 1 }, { 1, 1, 1 } }, t:type('torch.DoubleTensor'):tolist())
  end)
  it('refuses unknown names and CUDA types, naming them', function()
    local t = torch.ones(2)
    H.errors_with(function() t:type('torch.NopeTensor') end, 'moontorch.type: unknown type torch.NopeTensor')
    if torch.cuda.is_available() then return end
    H.errors_with(function() t:type('torch.cuda.FloatTensor') end,
      torch.cuda.is_built() and 'moontorch.type: no CUDA device is available (0 devices'
        or 'moontorch.type: device cuda is not available: moontorch was built without CUDA')
  end)
end)

describe('t:new_tensor and the other new_* factories', function()
  it('keep every option given, taking dtype and device from t where not given', function()
    local x = torch.ones(2, { dtype = torch.float64 })
    local y = x:new_tensor({ 1, 2 }, { requires_grad = true })
    assert.are.equal(torch.float64, y.dtype)
    assert.is_true(y.requires_grad)
    assert.is_true(y.is_leaf)
    assert.are.equal(torch.int32, x:new_tensor({ 1, 2 }, { dtype = torch.int32 }).dtype)
    local z = x:new_zeros({ 2, 2 }, { requires_grad = true })
    assert.is_true(z.requires_grad)
    assert.are.equal(torch.float64, z.dtype)
    assert.is_false(x:new_ones(3).requires_grad)
  end)
end)

describe('tolist', function()
  it('of an empty tensor with huge outer sizes is an error, not a hang', function()
    H.errors_with(function() torch.zeros(2 ^ 51, 0, 3):tolist() end,
      'moontorch.tolist: a tensor of sizes [2251799813685248, 0, 3] would need more than 2^27 Lua tables')
    -- the process is still usable, and ordinary empty tensors still nest
    assert.are.same({ {}, {}, {} }, torch.zeros(3, 0, 2):tolist())
    assert.are.same({}, torch.zeros(0, 5):tolist())
  end)
end)

describe('.data assignment', function()
  it('refuses a non-float tensor on a tensor that requires grad, and keeps the old data', function()
    local p = torch.nn.Parameter(torch.ones(3))
    local err = H.errors_with(function() p.data = torch.ones(3, { dtype = torch.int64 }) end,
      'moontorch.data: data set to a tensor that requires gradients must be floating point or complex dtype (got int64)')
    assert.truthy(err:find('conversions_spec.lua:%d+: '), err) -- raised at the user's line
    assert.are.equal(torch.float32, p.dtype)
    assert.are.same({ 1, 1, 1 }, p:tolist())
  end)
  it('takes any dtype on a tensor that does not require grad, and floats on one that does', function()
    local q = torch.ones(3)
    q.data = torch.ones(2, { dtype = torch.int64 })
    assert.are.equal(torch.int64, q.dtype)
    assert.are.equal(2, q:size(1))
    local p = torch.nn.Parameter(torch.ones(3))
    p.data = torch.zeros(4, { dtype = torch.float64 })
    assert.are.equal(torch.float64, p.dtype)
    assert.is_true(p.requires_grad)
  end)
end)

describe('sizes whose strides would overflow', function()
  it('are refused even when a zero size makes the tensor empty (the strides still span them)', function()
    -- (found by fuzz_idx: the strides of 0 x 3419130827^3 wrapped around int64)
    H.errors_with(function() torch.empty(0, 3419130827, 3419130827, 3419130827) end,
      'moontorch.empty: size [0, 3419130827, 3419130827, 3419130827] has too many elements')
    H.errors_with(function() torch.zeros({ 3419130827, 3419130827, 3419130827, 0 }) end, 'has too many elements')
    -- still fine: big empty tensors whose strides fit
    local t = torch.empty(0, 2 ^ 40, 2 ^ 20)
    assert.are.same({ 2 ^ 60, 2 ^ 20, 1 }, { t:stride(1), t:stride(2), t:stride(3) })
    assert.are.equal(0, t:numel())
  end)
end)
