-- PyTorch parity found by trying docs/API.md as a PyTorch user would (the parity session): the
-- layout of elementwise results and of clone / to / *_like, interpolate's nearest-exact mode and
-- antialiasing, and the smaller things listed in each block. Every expected value was printed by
-- PyTorch 1.13 (/usr/bin/python3) for the same expression, written in Python (the expression is
-- in each case's name or comment).
local H = require 'spec.support.helper'
local torch = H.torch
local F = torch.nn.functional

local function strides(t)
  local s = t:stride()
  return s
end

describe('elementwise results keep their operands\' layout (TensorIterator\'s rule)', function()
  -- x = arange(6.).view(2, 3); a = arange(24.).view(2, 3, 4).permute(2, 0, 1);
  -- s = arange(12.).view(3, 1, 4).transpose(0, 2); n = arange(24.).view(4, 6).t()[::2];
  -- e = arange(3.).view(3, 1).expand(3, 4); c2 = arange(24.).view(4, 2, 3); then `print(expr.stride())`
  local x = torch.arange(6):float():view(2, 3)
  local a = torch.arange(24):float():view(2, 3, 4):permute(3, 1, 2)
  local s = torch.arange(12):float():view(3, 1, 4):transpose(1, 3)
  local n = torch.arange(24):float():as_strided({ 3, 4 }, { 2, 6 }) -- x.t()[::2] of a 4x6 x
  local e = torch.arange(3):float():view(3, 1):expand(3, 4)
  local c2 = torch.arange(24):float():view(4, 2, 3)
  local cases = {
    { 'x:t() + 1', function() return x:t() + 1 end, { 1, 3 } },
    { 'x:t():neg()', function() return x:t():neg() end, { 1, 3 } },
    { 'x:t():exp()', function() return x:t():exp() end, { 1, 3 } },
    { 'x:t():gt(1)', function() return x:t():gt(1) end, { 1, 3 } },
    { 'a * 2', function() return a * 2 end, { 1, 12, 4 } },
    { 'a + a', function() return a + a end, { 1, 12, 4 } },
    { 'a:sigmoid()', function() return a:sigmoid() end, { 1, 12, 4 } },
    { 's + 1', function() return s + 1 end, { 1, 4, 4 } },
    { 'n + 1', function() return n + 1 end, { 1, 3 } },
    { 'n:clone()', function() return n:clone() end, { 1, 3 } },
    { 'e + 1', function() return e + 1 end, { 4, 1 } },
    { 'torch.where(a:gt(3), a, 0.5)', function() return torch.where(a:gt(3), a, 0.5) end, { 1, 12, 4 } },
    { 'a:to(torch.float64)', function() return a:to(torch.float64) end, { 1, 12, 4 } },
    { 'a:clone()', function() return a:clone() end, { 1, 12, 4 } },
    { 'torch.zeros_like(a)', function() return torch.zeros_like(a) end, { 1, 12, 4 } },
    { 'torch.empty_like(n)', function() return torch.empty_like(n) end, { 1, 3 } },
    { 'torch.rand_like(a)', function() return torch.rand_like(a) end, { 1, 12, 4 } },
    { 'a:sum(2)', function() return a:sum(2) end, { 3, 1 } },
    { 'a:half()', function() return a:half() end, { 1, 12, 4 } },
    { 'a:int()', function() return a:int() end, { 1, 12, 4 } },
    { 'a + c2', function() return a + c2 end, { 1, 12, 4 } },
    { 'c2 + a', function() return c2 + a end, { 6, 3, 1 } },
    { 'x:t() + torch.arange(2)', function() return x:t() + torch.arange(2) end, { 1, 3 } },
    { 'torch.arange(2) + x:t()', function() return torch.arange(2) + x:t() end, { 1, 3 } },
    { 'x:t() + torch.arange(3):view(3, 1)', function() return x:t() + torch.arange(3):view(3, 1) end, { 1, 3 } },
    { 'torch.arange(4):view(4, 1, 1) + a', function() return torch.arange(4):view(4, 1, 1) + a end, { 1, 12, 4 } },
    { 'x:t():contiguous()', function() return x:t():contiguous() end, { 2, 1 } },
    { 'x:t():mul(x:t())', function() return x:t():mul(x:t()) end, { 1, 3 } },
    { 'x:t():clamp(1, 3)', function() return x:t():clamp(1, 3) end, { 1, 3 } },
    { 'torch.lerp(a, a, 0.5)', function() return torch.lerp(a, a, 0.5) end, { 1, 12, 4 } },
    { 'a:addcmul(a, a)', function() return a:addcmul(a, a) end, { 1, 12, 4 } },
    { 'a:pow(2)', function() return a:pow(2) end, { 1, 12, 4 } },
    { 'a:abs()', function() return a:abs() end, { 1, 12, 4 } },
    { 'a:softmax(1)', function() return a:softmax(1) end, { 6, 3, 1 } },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local r = c[2]()
      assert.are.same(c[3], strides(r))
    end)
  end

  it('computes the same values as on contiguous copies', function()
    local ac = a:contiguous()
    assert.is_true(torch.equal(a * 2, ac * 2))
    assert.is_true(torch.equal(a + c2, ac + c2))
    assert.is_true(torch.equal(c2 + a, c2 + ac))
    assert.is_true(torch.equal(a:exp(), ac:exp()))
    assert.is_true(torch.equal(torch.where(a:gt(3), a, 0.5), torch.where(ac:gt(3), ac, 0.5)))
    assert.is_true(torch.equal(a:half():float(), ac:half():float()))
    assert.is_true(torch.equal(n + 1, n:contiguous() + 1))
    assert.are.same({ 1, 4, 2, 5, 3, 6 }, (x:t() + 1):reshape(6):tolist())
  end)

  it('view of a permuted result fails as in PyTorch; reshape copies', function()
    -- (x.t() + 1).view(6): RuntimeError "view size is not compatible with input tensor's size and stride ..."
    H.errors_with(function() return (x:t() + 1):view(6) end, 'view')
    assert.are.same({ 1, 2, 3, 4, 5, 6 }, (x:t() + 1):t():reshape(6):tolist())
  end)

  it('rand_like of a permuted tensor draws in memory order, as PyTorch', function()
    -- torch.manual_seed(0); r = torch.rand_like(a); r[:, 0, 0], r[0, :, 1]
    torch.manual_seed(0)
    local r = torch.rand_like(a)
    H.near(r:select(2, 1):select(2, 1), { 0.4963, 0.7682, 0.0885, 0.132 }, 1e-4)
    H.near(r[1]:select(2, 2), { 0.3074, 0.6977 }, 1e-4)
  end)

  it('clone keeps CloneBackward0 and its gradient; clone{memory_format=contiguous_format} is contiguous', function()
    local w = torch.randn(2, 3, { requires_grad = true, dtype = torch.float64 })
    local y = w:t():clone()
    assert.are.equal('CloneBackward0', y.grad_fn:name())
    assert.are.same({ 1, 3 }, y:stride())
    y:sum():backward()
    assert.is_true(torch.equal(w.grad, torch.ones(2, 3, { dtype = torch.float64 })))
    assert.are.same({ 2, 1 }, w:t():clone({ memory_format = torch.contiguous_format }):stride())
    assert.is_true(torch.autograd.gradcheck(function(v) return (v:t() * 2):clone():exp() end, { w }))
  end)

  it('in-place ops with autograd on a permuted result (the whole storage)', function()
    local w = torch.randn(3, 4, { dtype = torch.float64, requires_grad = true })
    local y = w:t() * 1
    y:masked_fill_(y:gt(0), 0)
    y:sum():backward()
    assert.is_true(torch.equal(w.grad, w:le(0):to(torch.float64)))
  end)

  it('meta tensors get the same strides', function()
    local m = torch.empty(2, 3, 4, { device = 'meta' }):permute(3, 1, 2)
    assert.are.same({ 1, 12, 4 }, (m * 2):stride())
    assert.are.same({ 1, 12, 4 }, torch.zeros_like(m):stride())
  end)
end)

describe('F.interpolate nearest-exact and antialias', function()
  local y = torch.arange(16):float():view(1, 1, 4, 4)
  local x = torch.arange(30):float():view(1, 1, 5, 6)
  it('nearest-exact', function()
    -- F.interpolate(arange(16.).view(1,1,4,4), size=3, mode='nearest-exact')
    H.near(F.interpolate(y, { size = 3, mode = 'nearest-exact' }), { { { { 0, 2, 3 }, { 8, 10, 11 }, { 12, 14, 15 } } } })
    -- F.interpolate(arange(5.).view(1,1,5), scale_factor=1.7, mode='nearest-exact')
    H.near(F.interpolate(torch.arange(5):float():view(1, 1, 5), { scale_factor = 1.7, mode = 'nearest-exact' }),
      { { { 0, 0, 1, 2, 2, 3, 3, 4 } } })
    H.near(F.interpolate(torch.arange(5):float():view(1, 1, 5), { size = 3, mode = 'nearest-exact' }), { { { 0, 2, 4 } } })
    local m = torch.nn.Upsample({ scale_factor = 0.75, mode = 'nearest-exact' })
    H.near(m(y), { { { { 0, 2, 3 }, { 8, 10, 11 }, { 12, 14, 15 } } } })
  end)
  it('bilinear and bicubic with antialias=true', function()
    -- F.interpolate(y, scale_factor=0.5, mode='bilinear', antialias=True)
    H.near(F.interpolate(y, { scale_factor = 0.5, mode = 'bilinear', antialias = true }),
      { { { { 3.5714, 5.1429 }, { 9.8571, 11.4286 } } } }, 1e-4)
    -- F.interpolate(y, size=(3, 3), mode='bicubic', antialias=True)
    H.near(F.interpolate(y, { size = { 3, 3 }, mode = 'bicubic', antialias = true }),
      { { { { 0.9497, 2.2597, 3.5698 }, { 6.1899, 7.5000, 8.8101 }, { 11.4302, 12.7403, 14.0503 } } } }, 1e-4)
    -- x = arange(30.).view(1,1,5,6); F.interpolate(x, size=(2,4), mode='bilinear', antialias=True)
    H.near(F.interpolate(x, { size = { 2, 4 }, mode = 'bilinear', antialias = true }),
      { { { { 6.3750, 7.7778, 9.2222, 10.6250 }, { 18.3750, 19.7778, 21.2222, 22.6250 } } } }, 1e-4)
    -- F.interpolate(x, size=(7,3), mode='bicubic', antialias=True): downsampled columns, upsampled rows
    local r = F.interpolate(x, { size = { 7, 3 }, mode = 'bicubic', antialias = true })
    H.near(r[1][1][1], { 0.1944, 2.1505, 4.1066 }, 1e-4)
    H.near(r[1][1][4], { 12.5439, 14.5000, 16.4561 }, 1e-4)
    H.near(r[1][1][7], { 24.8934, 26.8495, 28.8056 }, 1e-4)
    -- F.interpolate(x, size=(2,9), mode='bilinear', antialias=True, align_corners=True)[0,0,:,:3]
    r = F.interpolate(x, { size = { 2, 9 }, mode = 'bilinear', antialias = true, align_corners = true })
    H.near(r[1][1]:narrow(2, 1, 3), { { 10.6667, 11.1042, 11.7292 }, { 20.6667, 21.1042, 21.7292 } }, 1e-4)
    -- F.interpolate(x, scale_factor=0.4, mode='bicubic', antialias=True)
    H.near(F.interpolate(x, { scale_factor = 0.4, mode = 'bicubic', antialias = true }),
      { { { { 5.9411, 8.4876 }, { 19.6598, 22.2062 } } } }, 1e-4)
  end)
  it('grad_fn names and gradients', function()
    local g = x:to(torch.float64):requires_grad_()
    assert.are.equal('UpsampleNearestExact2DBackward1', F.interpolate(g, { size = 3, mode = 'nearest-exact' }).grad_fn:name())
    assert.are.equal('UpsampleBilinear2DAaBackward1',
      F.interpolate(g, { scale_factor = 0.5, mode = 'bilinear', antialias = true }).grad_fn:name())
    assert.are.equal('UpsampleBicubic2DAaBackward1',
      F.interpolate(g, { scale_factor = 0.5, mode = 'bicubic', antialias = true }).grad_fn:name())
    local v = torch.randn(1, 2, 5, 6, { dtype = torch.float64, requires_grad = true })
    assert.is_true(torch.autograd.gradcheck(function(t)
      return F.interpolate(t, { size = { 3, 8 }, mode = 'bicubic', antialias = true })
    end, { v }))
  end)
  it("errors as PyTorch's", function()
    H.errors_with(function() return F.interpolate(x, { size = 3, mode = 'nearest', antialias = true }) end,
      'Anti-alias option is only supported for bilinear and bicubic modes')
    H.errors_with(function() return F.interpolate(x, { size = 3, mode = 'nearest-exact', align_corners = true }) end,
      'align_corners option can only be set with the interpolating modes')
  end)
end)

describe('MOONTORCH_VMATH=0 (the scalar paths of every kernel it names)', function()
  it('small float32 products and the 2x2 max pool run without the AVX2 kernels, with the same results', function()
    local out, ok = H.run_lua([[
      local ffi = require 'ffi'
      ffi.cdef 'int setenv(const char *name, const char *value, int overwrite);'
      ffi.C.setenv('MOONTORCH_VMATH', '0', 1)
      local torch = require 'moontorch'
      local F = torch.nn.functional
      assert(torch.config():find("CPU capability of moontorch's own kernels: scalar", 1, true), torch.config())
      torch.manual_seed(0)
      for _, s in ipairs { { 64, 48, 40 }, { 5, 7, 3 }, { 33, 65, 17 } } do
        local a, b = torch.randn(s[1], s[2]), torch.randn(s[2], s[3])
        local want = a:double():matmul(b:double())
        local got = a:matmul(b)
        assert(torch.allclose(got:double(), want, 1e-5, 1e-4), 'matmul ' .. s[1])
      end
      local x = torch.randn(2, 3, 8, 10)
      local want = x:unfold(3, 2, 2):unfold(4, 2, 2):reshape(2, 3, 4, 5, 4):amax(5)
      assert(torch.equal(F.max_pool2d(x, 2), want), 'max_pool2d')
      print('ok')
    ]])
    assert.is_true(ok, out)
    assert.are.equal('ok\n', out)
  end)
end)

describe('pixel_shuffle / pixel_unshuffle with autograd', function()
  it("are one node each, named as PyTorch's, with first and second derivatives", function()
    -- F.pixel_shuffle(x, 2).grad_fn -> PixelShuffleBackward0 (batched or not); pixel_unshuffle -> PixelUnshuffleBackward0
    local x = torch.randn(2, 8, 3, 2, { dtype = torch.float64, requires_grad = true })
    assert.are.equal('PixelShuffleBackward0', F.pixel_shuffle(x, 2).grad_fn:name())
    assert.are.equal('PixelShuffleBackward0', F.pixel_shuffle(x[1], 2).grad_fn:name())
    assert.are.equal('PixelUnshuffleBackward0', F.pixel_unshuffle(x, 1).grad_fn:name())
    local y = torch.randn(1, 2, 4, 6, { dtype = torch.float64, requires_grad = true })
    assert.are.equal('PixelUnshuffleBackward0', torch.nn.PixelUnshuffle(2)(y).grad_fn:name())
    assert.is_true(torch.autograd.gradcheck(function(t) return F.pixel_shuffle(t, 2) end, { x }))
    assert.is_true(torch.autograd.gradgradcheck(function(t) return F.pixel_shuffle(t, 2) end, { x }))
    assert.is_true(torch.autograd.gradcheck(function(t) return F.pixel_unshuffle(t, 2) end, { y }))
    assert.is_true(torch.autograd.gradgradcheck(function(t) return F.pixel_unshuffle(t, 2) end, { y }))
    -- the same values with and without autograd, and a copy even where a view would do
    assert.is_true(torch.equal(F.pixel_shuffle(x, 2), F.pixel_shuffle(x:detach(), 2)))
    local z = torch.randn(1, 4, 1, 1)
    local s = F.pixel_shuffle(z, 1)
    s:fill_(0)
    assert.is_true(z:ne(0):all())
  end)
end)
