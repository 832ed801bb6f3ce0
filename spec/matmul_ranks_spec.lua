-- matmul over every rank pair (issue 27, part 2): 1-D to 4-D on each side, batch dims broadcast,
-- forward, grad_fn's name and both gradients against PyTorch 1.13's, recorded by
--   /usr/bin/python3 spec/support/matmul_record.py > spec/support/matmul_wants.lua
-- on inputs both sides make the same way (small dyadic rationals, exact in float64: see the script).
-- A 1-D a with a batched b, both requiring grad, raised "moontorch.outer: Expected 1-D argument vec2"
-- in backward before.
local H = require 'spec.support.helper'
local torch = H.torch
local W = require 'spec.support.matmul_wants'
local f64 = torch.float64

local function numel(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end
-- x[i] = ((i * mul) % mod - sub) / div over i = 0..numel-1, row-major, as the recorder makes it
local function det(shape, mul, mod, sub, div)
  local v = {}
  for i = 0, numel(shape) - 1 do v[#v + 1] = ((i * mul) % mod - sub) / div end
  return torch.tensor(v, { dtype = f64 }):reshape(shape)
end
-- the same values in a column-major layout of the last two dims (a transposed view's strides)
local function colmajor(t)
  if t:dim() < 2 then return t end
  return t:transpose(-1, -2):contiguous():transpose(-1, -2)
end
local function label(c) return ('(%s) @ (%s)'):format(table.concat(c.a, ', '), table.concat(c.b, ', ')) end

describe('matmul, every rank pair against PyTorch 1.13', function()
  it('has the cases (1-D to 4-D on each side)', function()
    local seen = {}
    for _, c in ipairs(W) do seen[#c.a .. 'x' .. #c.b] = true end
    for ra = 1, 4 do
      for rb = 1, 4 do assert.is_true(seen[ra .. 'x' .. rb] or false, ra .. 'x' .. rb) end
    end
  end)

  for _, layout in ipairs({ 'contiguous', 'column-major' }) do
    for _, c in ipairs(W) do
      it(label(c) .. ', ' .. layout .. ': forward, name and both gradients', function()
        local a, b = det(c.a, 5, 7, 3, 4), det(c.b, 3, 11, 5, 8)
        if layout ~= 'contiguous' then a, b = colmajor(a), colmajor(b) end
        a:requires_grad_(); b:requires_grad_()
        local y = a:matmul(b)
        assert.are.same(c.ys, y:size())
        H.near(y, c.y, 1e-12, 1e-12)
        assert.are.equal(c.name, y.grad_fn:name())
        local gy = det(c.ys, 7, 5, 2, 2)
        ;(y * gy):sum():backward()
        assert.are.same(c.a, a.grad:size())
        assert.are.same(c.b, b.grad:size())
        H.near(a.grad, c.ga, 1e-12, 1e-12)
        H.near(b.grad, c.gb, 1e-12, 1e-12)
      end)
    end
  end

  it('gives one side its gradient when only that side requires grad', function()
    for _, c in ipairs(W) do
      for side = 1, 2 do
        local a, b = det(c.a, 5, 7, 3, 4), det(c.b, 3, 11, 5, 8)
        local x = side == 1 and a or b
        x:requires_grad_()
        local y = torch.matmul(a, b)
        ;(y * det(c.ys, 7, 5, 2, 2)):sum():backward()
        H.near(x.grad, side == 1 and c.ga or c.gb, 1e-12, 1e-12)
      end
    end
  end)

  it('float32 gives the same values (float32 rounding)', function()
    for _, c in ipairs(W) do
      local a = det(c.a, 5, 7, 3, 4):float():requires_grad_()
      local b = det(c.b, 3, 11, 5, 8):float():requires_grad_()
      local y = a:matmul(b)
      assert.are.equal(torch.float32, y.dtype)
      H.near(y, c.y, 1e-6, 1e-6)
      ;(y * det(c.ys, 7, 5, 2, 2):float()):sum():backward()
      H.near(a.grad, c.ga, 1e-5, 1e-5)
      H.near(b.grad, c.gb, 1e-5, 1e-5)
    end
  end)

  it('passes gradcheck and gradgradcheck for the vector-with-batch and broadcast pairs', function()
    local ag = torch.autograd
    torch.manual_seed(0)
    local r = function(...) return torch.randn(...):to(f64):requires_grad_() end
    local pairs_ = { { { 3 }, { 2, 3, 4 } }, { { 3 }, { 2, 1, 3, 2 } }, { { 2, 4, 3 }, { 3 } },
      { { 2, 3 }, { 2, 3, 4 } }, { { 2, 1, 2, 3 }, { 4, 3, 2 } }, { { 4, 2, 3 }, { 3, 2 } } }
    for _, p in ipairs(pairs_) do
      local inputs = { r(unpack(p[1])), r(unpack(p[2])) }
      local f = function(a, b) return a:matmul(b) end
      assert.is_true(ag.gradcheck(f, inputs))
      assert.is_true(ag.gradgradcheck(f, inputs))
    end
  end)
end)
