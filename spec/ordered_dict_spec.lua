-- torch.OrderedDict: insertion order, replace in place, delete, methods, and PyTorch's printing
-- (strings recorded from /usr/bin/python3, torch 1.13:
--   repr(collections.OrderedDict([('w', torch.tensor([[1.,2.],[3.,4.]])), ('n', 3), ('f', 0.5),
--                                 ('s', "it's"), ('b', True)])) and repr(OrderedDict())).
local H = require 'spec.support.helper'
local torch = H.torch

describe('torch.OrderedDict', function()
  it('keeps insertion order; replacing keeps the position; nil deletes', function()
    local d = torch.OrderedDict()
    d.b = 1; d.a = 2; d['x.y'] = 3
    assert.are.same({ 'b', 'a', 'x.y' }, d:keys())
    d.b = 10
    assert.are.same({ 'b', 'a', 'x.y' }, d:keys())
    assert.are.same({ 10, 2, 3 }, d:values())
    d.a = nil
    assert.are.same({ 'b', 'x.y' }, d:keys())
    assert.is_nil(d.missing)
    assert.are.equal(2, d:len())
    d.a = 5
    assert.are.same({ 'b', 'x.y', 'a' }, d:keys(), 'a re-inserted key goes last')
  end)
  it('items() iterates in order, and the loop may delete', function()
    local d = torch.OrderedDict { { 'one', 1 }, { 'two', 2 }, { 'three', 3 } }
    local seen = {}
    for k, v in d:items() do
      seen[#seen + 1] = k .. '=' .. v
      d[k] = nil
    end
    assert.are.same({ 'one=1', 'two=2', 'three=3' }, seen)
    assert.are.equal(0, d:len())
  end)
  it('get, pop, contains, copy, update, clear, move_to_end', function()
    local d = torch.OrderedDict { { 'a', 1 }, { 'b', 2 } }
    assert.is_true(d:contains('a'))
    assert.are.equal(7, d:get('zz', 7))
    assert.are.equal(1, d:pop('a'))
    assert.is_false(d:contains('a'))
    H.errors_with(function() d:pop('a') end, "key 'a' is not in the dict")
    local c = d:copy()
    c.z = 1
    assert.are.same({ 'b' }, d:keys())
    d:update(c)
    assert.are.same({ 'b', 'z' }, d:keys())
    d:update { zz = 1, aa = 2 } -- a plain table: sorted keys
    assert.are.same({ 'b', 'z', 'aa', 'zz' }, d:keys())
    d:move_to_end('b')
    assert.are.same({ 'z', 'aa', 'zz', 'b' }, d:keys())
    d:clear()
    assert.are.equal(0, d:len())
  end)
  it('an entry named like a method is reached with get', function()
    local d = torch.OrderedDict()
    d.keys = 5
    assert.are.same({ 'keys' }, d:keys())
    assert.are.equal(5, d:get('keys'))
  end)
  it('prints as PyTorch prints an OrderedDict', function()
    local d = torch.OrderedDict()
    d.w = torch.tensor({ { 1, 2 }, { 3, 4 } })
    d.n = 3
    d.f = 0.5
    d.s = "it's"
    d.b = true
    assert.are.equal("OrderedDict([('w', tensor([[1., 2.],\n        [3., 4.]])), ('n', 3), ('f', 0.5), ('s', \"it's\"), ('b', True)])",
      tostring(d))
    assert.are.equal('OrderedDict()', tostring(torch.OrderedDict()))
  end)
  it('is a registered class', function()
    local d = torch.OrderedDict()
    assert.is_true(torch.isinstance(d, torch.OrderedDict))
    assert.are.equal('torch.OrderedDict', torch.typename(d))
    H.errors_with(function() d[nil] = 1 end, 'a key cannot be nil')
  end)
end)
