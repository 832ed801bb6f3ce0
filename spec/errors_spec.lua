-- Every error a user can cause is a Lua error that names the op and what was wrong, raised at the
-- user's line; nothing crashes, and the process and every tensor stay usable afterwards.
local H = require 'spec.support.helper'
local torch = H.torch

local function still_usable(t)
  local before = t:clone()
  assert.are.same(before:tolist(), t:tolist())
  H.near(torch.ones(3) + 1, { 2, 2, 2 })
end

describe('errors', function()
  local t
  before_each(function() t = torch.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }) end)

  it('out-of-range indices and dims', function()
    H.errors_with(function() return t[3] end, 'moontorch.select: index 3 is out of bounds for dimension 1 with size 2')
    H.errors_with(function() return t:select(3, 1) end, 'dimension')
    H.errors_with(function() return t:size(3) end, 'out of range')
    H.errors_with(function() return t:transpose(1, 0) end, '1-based')
    H.errors_with(function() return t:narrow(1, 2, 5) end, 'narrow')
    H.errors_with(function() t[{ 1, 7 }] = 1 end, 'out of bounds')
    still_usable(t)
  end)

  it('shape mismatches', function()
    H.errors_with(function() return t + torch.ones(2) end, 'moontorch.add')
    H.errors_with(function() return t:view(5) end, 'invalid for input of size 6')
    H.errors_with(function() return t:expand(3, 3) end, 'expand')
    H.errors_with(function() t:copy_(torch.ones(4)) end, 'cannot be broadcast')
    still_usable(t)
  end)

  it('dtype mismatches', function()
    H.errors_with(function() t:long():add_(0.5) end, "can't be cast")
    H.errors_with(function() return t:bitwise_and(t) end, 'bitwise_and')
    H.errors_with(function() return torch.zeros(2, { dtype = 'complex' }) end, 'unknown dtype')
    H.errors_with(function() return torch.tensor({ 1 }):to('banana') end, 'to')
    still_usable(t)
  end)

  it('negative, fractional and overflowing sizes', function()
    H.errors_with(function() return torch.zeros(-1) end, 'negative dimension -1')
    H.errors_with(function() return torch.zeros(2.5) end, 'size at position 1 must be an integer, got 2.5')
    H.errors_with(function() return torch.zeros(2 ^ 40, 2 ^ 40) end, 'too many elements')
    H.errors_with(function() return torch.zeros(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1) end, 'dimensions')
    still_usable(t)
  end)

  it('non-tensors where tensors belong', function()
    H.errors_with(function() return t + 'x' end, 'expected a tensor or a number')
    H.errors_with(function() return torch.exp('x') end, 'expected a tensor')
    H.errors_with(function() return t:copy_({}) end, 'expected a tensor')
    H.errors_with(function() return torch.tensor({ 1, 'a' }) end, 'expected a number')
    H.errors_with(function() return torch.tensor({ { 1, 2 }, { 3 } }) end, 'expected sequence of length 2')
    H.errors_with(function() return torch.mul(1, 2) end, 'expected at least one tensor')
    still_usable(t)
  end)

  it('allocation failure is an error, not a crash', function()
    H.errors_with(function() return torch.empty(2 ^ 50) end, 'out of memory')
    local big = torch.zeros(1000) -- and memory still works
    assert.are.equal(1000, big:numel())
    still_usable(t)
  end)

  it('raises at the caller\'s line with the moontorch.<op> prefix', function()
    local ok, err = pcall(function() return t + torch.ones(4) end) -- this line is in the message
    assert.is_false(ok)
    assert.truthy(err:match('errors_spec%.lua:%d+: moontorch%.add: '))
    local ok2, err2 = pcall(function() return t:view(7) end)
    assert.is_false(ok2)
    assert.truthy(err2:match('errors_spec%.lua:%d+: moontorch%.view: '))
  end)
end)
