-- torch.class: Torch7's class system (used by nn), isinstance and typename.
local H = require 'spec.support.helper'
local torch = H.torch

describe('torch.class', function()
  it('defines classes with parents, constructors and methods', function()
    local Animal = torch.class('spec.Animal')
    function Animal:__init(name) self.name = name end
    function Animal:speak() return self.name .. ' makes a sound' end
    local Dog, Parent = torch.class('spec.Dog', 'spec.Animal')
    assert.are.equal(Animal, Parent)
    function Dog:__init(name)
      Parent.__init(self, name)
      self.tricks = 0
    end
    function Dog:speak() return self.name .. ' barks' end
    local a, d = Animal('cat'), Dog('rex')
    assert.are.equal('cat makes a sound', a:speak())
    assert.are.equal('rex barks', d:speak())
    assert.are.equal(0, d.tricks)
    assert.is_true(torch.isinstance(d, Dog))
    assert.is_true(torch.isinstance(d, Animal))
    assert.is_true(torch.isinstance(d, 'spec.Animal'))
    assert.is_false(torch.isinstance(a, Dog))
    assert.are.equal('spec.Dog', torch.typename(d))
    assert.are.equal('spec.Dog', tostring(Dog))
  end)

  it('accepts a parent class object and copies metamethods down', function()
    local Base = torch.class('spec.Base')
    function Base:__init(v) self.v = v end
    Base.__tostring = function(s) return 'Base(' .. s.v .. ')' end
    local Sub = torch.class('spec.Sub', Base)
    local s = Sub(3)
    assert.are.equal('Base(3)', tostring(s))
  end)

  it('names unknown parents', function()
    H.errors_with(function() torch.class('spec.Orphan', 'spec.NoSuchParent') end, "unknown parent class 'spec.NoSuchParent'")
  end)

  it('knows tensors', function()
    assert.is_true(torch.isinstance(torch.ones(1), torch.Tensor))
    assert.is_false(torch.isinstance({}, torch.Tensor))
    assert.are.equal('torch.FloatTensor', torch.typename(torch.ones(1)))
    assert.is_true(torch.is_tensor(torch.zeros(1)))
    assert.is_false(torch.is_tensor(3))
  end)
end)

describe('threads', function()
  it('set_num_threads changes the pool and results stay the same', function()
    local n0 = torch.get_num_threads()
    local a = torch.ones(500, 400)
    torch.set_num_threads(1)
    assert.are.equal(1, torch.get_num_threads())
    local one = (a * 3 + a:t():t()):sum():item()
    torch.set_num_threads(2)
    assert.are.equal(2, torch.get_num_threads())
    local two = (a * 3 + a:t():t()):sum():item()
    assert.are.equal(one, two)
    assert.are.equal(800000, two)
    torch.set_num_threads(n0)
    H.errors_with(function() torch.set_num_threads(0) end, 'set_num_threads')
  end)
end)
