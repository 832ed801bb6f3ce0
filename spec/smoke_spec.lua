local H = require 'spec.support.helper'
local torch = H.torch

describe('smoke', function()
  it('adds with broadcasting', function()
    local a = torch.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    local b = torch.tensor({ 10, 20, 30 })
    H.near(a + b, { { 11, 22, 33 }, { 14, 25, 36 } })
  end)
end)
