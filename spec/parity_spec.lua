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
    local out, ok, err = H.run_lua([[
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
    assert.is_true(ok, out .. err)
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

describe('PyTorch functions composed in lua/ops/parity.lua', function()
  -- Each case's value, printed with 4 decimals, its dtype and its shape, as PyTorch 1.13 printed them
  -- for the same expression in Python (/usr/bin/python3; positions there + 1, Lua's 1-based dims).
  local want = {
  ['deg2rad'] = { '[[0.0262,-0.0349,0.0524],[0.0698,0.0087,-0.1047]]', 'torch.float32', '2x3' },
  ['rad2deg'] = { '[[85.9437,-114.5916,171.8873],[229.1831,28.6479,-343.7747]]', 'torch.float32', '2x3' },
  ['deg2rad int'] = { '[3.1416,1.5708]', 'torch.float32', '2' },
  ['logaddexp'] = { '[[3.2014,-1.3069,3.2014],[4.0000,1.1931,4.0000]]', 'torch.float32', '2x3' },
  ['logaddexp inf'] = { '[inf,-inf,1.0000]', 'torch.float32', '3' },
  ['logaddexp2'] = { '[[3.4368,-1.0000,3.4368],[4.0014,1.5000,4.0014]]', 'torch.float32', '2x3' },
  ['signbit'] = { '[T,F,T,F]', 'torch.bool', '4' },
  ['asinh'] = { '[-0.8089,-0.2957,0.0000,0.3900,0.8743]', 'torch.float32', '5' },
  ['acosh'] = { '[1.2572,0.7564,0.0000,0.8670,1.3112]', 'torch.float32', '5' },
  ['atanh'] = { '[-1.4722,-0.3095,0.0000,0.4236,2.6467]', 'torch.float32', '5' },
  ['erfinv'] = { '[-1.1631,-0.2725,0.0000,0.3708,1.8214]', 'torch.float32', '5' },
  ['erfinv edge'] = { '[inf,-inf,nan,3.4571]', 'torch.float32', '4' },
  ['gcd'] = { '[4.0000,6.0000,5.0000,7.0000]', 'torch.int64', '4' },
  ['lcm'] = { '[24.0000,36.0000,0.0000,21.0000]', 'torch.int64', '4' },
  ['heaviside'] = { '[0.0000,0.5000,1.0000]', 'torch.float32', '3' },
  ['bcast'] = { '[[1.0000,1.0000],[1.0000,1.0000],[1.0000,1.0000]] [[0.0000,0.0000],[0.0000,0.0000],[0.0000,0.0000]]', '', '' },
  ['meshgrid'] = { '[[1.0000,1.0000],[2.0000,2.0000],[3.0000,3.0000]] [[4.0000,5.0000],[4.0000,5.0000],[4.0000,5.0000]]', '', '' },
  ['meshgrid xy'] = { '[[1.0000,2.0000,3.0000],[1.0000,2.0000,3.0000]] [[4.0000,4.0000,4.0000],[5.0000,5.0000,5.0000]]', '', '' },
  ['cartesian'] = { '[[1.0000,3.0000],[1.0000,4.0000],[1.0000,5.0000],[2.0000,3.0000],[2.0000,4.0000],[2.0000,5.0000]]', 'torch.float32', '6x2' },
  ['combinations'] = { '[[1.0000,2.0000],[1.0000,3.0000],[1.0000,4.0000],[2.0000,3.0000],[2.0000,4.0000],[3.0000,4.0000]]', 'torch.float32', '6x2' },
  ['combinations3r'] = { '[[1.0000,1.0000],[1.0000,2.0000],[1.0000,3.0000],[2.0000,2.0000],[2.0000,3.0000],[3.0000,3.0000]]', 'torch.float32', '6x2' },
  ['take'] = { '[[1.5000,-6.0000],[3.0000,-2.0000]]', 'torch.float32', '2x2' },
  ['take_along'] = { '[[-2.0000,1.5000,3.0000],[-6.0000,0.5000,4.0000]]', 'torch.float32', '2x3' },
  ['take_along nil'] = { '[1.5000,0.5000]', 'torch.float32', '2' },
  ['rot90'] = { '[[3.0000,-6.0000],[-2.0000,0.5000],[1.5000,4.0000]]', 'torch.float32', '3x2' },
  ['rot90 k2'] = { '[[-6.0000,0.5000,4.0000],[3.0000,-2.0000,1.5000]]', 'torch.float32', '2x3' },
  ['rot90 k3'] = { '[[4.0000,1.5000],[0.5000,-2.0000],[-6.0000,3.0000]]', 'torch.float32', '3x2' },
  ['kron'] = { '[[0.0000,1.0000,0.0000,2.0000],[1.0000,0.0000,2.0000,0.0000],[0.0000,3.0000,0.0000,4.0000],[3.0000,0.0000,4.0000,0.0000]]', 'torch.float32', '4x4' },
  ['block_diag'] = { '[[1.0000,2.0000,0.0000,0.0000],[0.0000,0.0000,3.0000,0.0000],[0.0000,0.0000,0.0000,4.0000],[0.0000,0.0000,0.0000,5.0000]]', 'torch.float32', '4x4' },
  ['diag_embed'] = { '[[[1.0000,0.0000],[0.0000,2.0000]],[[3.0000,0.0000],[0.0000,4.0000]]]', 'torch.float32', '2x2x2' },
  ['diag_embed off'] = { '[[0.0000,1.0000,0.0000],[0.0000,0.0000,2.0000],[0.0000,0.0000,0.0000]]', 'torch.float32', '3x3' },
  ['diagflat'] = { '[[0.0000,0.0000,0.0000,0.0000,0.0000],[1.0000,0.0000,0.0000,0.0000,0.0000],[0.0000,2.0000,0.0000,0.0000,0.0000],[0.0000,0.0000,3.0000,0.0000,0.0000],[0.0000,0.0000,0.0000,4.0000,0.0000]]', 'torch.float32', '5x5' },
  ['select_scatter'] = { '[[0.0000,0.0000,0.0000],[1.0000,1.0000,1.0000]]', 'torch.float32', '2x3' },
  ['slice_scatter'] = { '[[0.0000,0.0000],[1.0000,1.0000],[1.0000,1.0000],[0.0000,0.0000]]', 'torch.float32', '4x2' },
  ['slice_scatter step'] = { '[[1.0000,1.0000],[0.0000,0.0000],[1.0000,1.0000],[0.0000,0.0000],[1.0000,1.0000]]', 'torch.float32', '5x2' },
  ['diagonal_scatter'] = { '[[1.0000,0.0000,0.0000],[0.0000,1.0000,0.0000],[0.0000,0.0000,1.0000]]', 'torch.float32', '3x3' },
  ['hsplit'] = { '[[0.0000,1.0000],[6.0000,7.0000]] [[2.0000,3.0000],[8.0000,9.0000]] [[4.0000,5.0000],[10.0000,11.0000]]', '', '' },
  ['tril_idx'] = { '[[1.0000,2.0000,2.0000,3.0000,3.0000,3.0000],[1.0000,1.0000,2.0000,1.0000,2.0000,3.0000]]', 'torch.int64', '2x6' },
  ['triu_idx'] = { '[[1.0000,1.0000,1.0000,2.0000,2.0000,3.0000],[2.0000,3.0000,4.0000,3.0000,4.0000,4.0000]]', 'torch.int64', '2x6' },
  ['vander'] = { '[[1.0000,1.0000,1.0000],[4.0000,2.0000,1.0000],[9.0000,3.0000,1.0000]]', 'torch.int64', '3x3' },
  ['vander inc'] = { '[[1.0000,1.0000,1.0000,1.0000],[1.0000,2.0000,4.0000,8.0000],[1.0000,3.0000,9.0000,27.0000]]', 'torch.float32', '3x4' },
  ['diff'] = { '[[-3.5000,5.0000],[-3.5000,-6.5000]]', 'torch.float32', '2x2' },
  ['diff n2 dim1'] = { '[2.0000,2.0000,2.0000]', 'torch.float32', '3' },
  ['diff prepend'] = { '[[1.5000,-2.0000,3.0000],[2.5000,2.5000,-9.0000]]', 'torch.float32', '2x3' },
  ['trace'] = { '2.0000', 'torch.float32', '' },
  ['cummax'] = { '[1.0000,3.0000,3.0000,3.0000,5.0000,nan,nan]', 'torch.float32', '7' },
  ['cummax i'] = { '[1.0000,2.0000,2.0000,4.0000,5.0000,6.0000,6.0000]', 'torch.int64', '7' },
  ['cummin'] = { '[[1.5000,-2.0000,-2.0000],[4.0000,0.5000,-6.0000]]', 'torch.float32', '2x3' },
  ['cummin i'] = { '[[1.0000,2.0000,2.0000],[1.0000,2.0000,3.0000]]', 'torch.int64', '2x3' },
  ['logcumsumexp'] = { '[[1.5000,1.5298,3.2069],[4.0000,4.0298,4.0298]]', 'torch.float32', '2x3' },
  ['nanmean'] = { '[2.0000,nan]', 'torch.float32', '2' },
  ['nanmean all'] = { '2.0000', 'torch.float32', '' },
  ['histc'] = { '[0.0000,2.0000,1.0000,1.0000]', 'torch.float32', '4' },
  ['histc auto'] = { '[2.0000,2.0000,1.0000]', 'torch.float32', '3' },
  ['quantile'] = { '0.5000', 'torch.float32', '' },
  ['quantile dim'] = { '[[[-0.2500],[-2.7500]],[[1.5000],[0.5000]]]', 'torch.float32', '2x2x1' },
  ['quantile lower'] = { '[1.5000,-2.0000,-6.0000]', 'torch.float32', '3' },
  ['quantile nearest'] = { '3.0000', 'torch.float32', '' },
  ['nanquantile'] = { '3.0000', 'torch.float32', '' },
  ['quantile nan'] = { 'nan', 'torch.float32', '' },
  ['renorm'] = { '[[1.1523,-1.5364,2.3047],[1.6601,0.2075,-2.4902]]', 'torch.float32', '2x3' },
  ['uc'] = { '[1.0000,2.0000,3.0000,1.0000,2.0000]', 'torch.float32', '5' },
  ['uc inv'] = { '[1.0000,1.0000,2.0000,2.0000,3.0000,4.0000,4.0000,5.0000]', 'torch.int64', '8' },
  ['uc cnt'] = { '[2.0000,2.0000,1.0000,2.0000,1.0000]', 'torch.int64', '5' },
  ['inner'] = { '[[15.2500,-13.0000],[-13.0000,52.2500]]', 'torch.float32', '2x2' },
  ['inner 1d'] = { '11.0000', 'torch.float32', '' },
  ['cross'] = { '[[-3.0000,0.0000,1.0000],[0.0000,6.0000,-5.0000]]', 'torch.float32', '2x3' },
  ['cdist'] = { '[[3.9051,3.6401],[7.2284,7.6322]]', 'torch.float32', '2x2' },
  ['cdist p1'] = { '[[6.5000,5.5000],[10.5000,10.5000]]', 'torch.float32', '2x2' },
  ['pdist'] = { '[5.0000,1.4142,3.6056]', 'torch.float32', '3' },
  ['addr'] = { '[[3.5000,4.0000],[5.0000,6.0000]]', 'torch.float32', '2x2' },
  ['dist'] = { '6.8292', 'torch.float32', '' },
  ['matrix_power'] = { '[[8.0000,5.0000],[5.0000,3.0000]]', 'torch.float32', '2x2' },
  ['einsum ij,jk'] = { '[[15.2500,-13.0000],[-13.0000,52.2500]]', 'torch.float32', '2x2' },
  ['einsum trace'] = { '5.0000', 'torch.float32', '' },
  ['einsum diag'] = { '[1.0000,4.0000]', 'torch.float32', '2' },
  ['einsum outer'] = { '[[3.0000,4.0000,5.0000],[6.0000,8.0000,10.0000]]', 'torch.float32', '2x3' },
  ['einsum bmm'] = { '[[[2.0000,3.0000],[6.0000,11.0000]],[[46.0000,55.0000],[66.0000,79.0000]]]', 'torch.float32', '2x2x2' },
  ['einsum implicit'] = { '[[15.2500,-13.0000],[-13.0000,52.2500]]', 'torch.float32', '2x2' },
  ['einsum ell'] = { '[[[0.0000,2.0000],[1.0000,3.0000]],[[4.0000,6.0000],[5.0000,7.0000]]]', 'torch.float32', '2x2x2' },
  ['einsum sum'] = { '1.0000', 'torch.float32', '' },
  ['einsum transpose'] = { '[[1.5000,4.0000],[-2.0000,0.5000],[3.0000,-6.0000]]', 'torch.float32', '3x2' },
  ['einsum 3 ops'] = { '63.0000', 'torch.float32', '' },
  ['vnorm'] = { '8.2158', 'torch.float32', '' },
  ['vnorm ord1 dim'] = { '[6.5000,10.5000]', 'torch.float32', '2' },
  ['vnorm inf'] = { '6.0000', 'torch.float32', '' },
  ['mnorm'] = { '8.2158', 'torch.float32', '' },
  ['mnorm 1'] = { '9.0000', 'torch.float32', '' },
  ['mnorm inf'] = { '10.5000', 'torch.float32', '' },
  ['lnorm'] = { '8.2158', 'torch.float32', '' },
  ['lnorm v'] = { '5.0000', 'torch.float32', '' },
  ['trapz'] = { '4.0000', 'torch.float32', '' },
  ['trapz x'] = { '6.5000', 'torch.float32', '' },
  ['trapz dx'] = { '[2.0000,1.0000]', 'torch.float32', '2' },
  ['angle'] = { '[3.1416,0.0000,0.0000]', 'torch.float32', '3' },
  ['FloatTensor'] = { '[1.0000,2.0000]', 'torch.float32', '2' },
  ['LongTensor sz'] = { '[[1.0000,1.0000,1.0000],[1.0000,1.0000,1.0000]]', 'torch.int64', '2x3' },
  ['sum_to_size'] = { '[[5.5000,-1.5000,-3.0000]]', 'torch.float32', '1x3' },
  ['rrelu'] = { '[-0.2940,2.0000,-0.7247,-0.0959,4.0000]', 'torch.float32', '5' },
  ['rrelu module'] = { '[-0.3271,2.0000,-0.8174]', 'torch.float32', '3' },
  ['rrelu eval'] = { '[-0.2292,2.0000]', 'torch.float32', '2' },
  ['gumbel'] = { '[[0.0005,0.0327,0.9668]]', 'torch.float32', '1x3' },
  ['gumbel hard'] = { '[[0.0000,0.0000,1.0000]]', 'torch.float32', '1x3' },
  }
  local got, errors = {}, {}
  local function fmt(v)
    if type(v) == 'table' then local r = {} for i, x in ipairs(v) do r[i] = fmt(x) end return '[' .. table.concat(r, ',') .. ']' end
    if type(v) == 'boolean' then return v and 'T' or 'F' end
    if v ~= v then return 'nan' end
    if v == math.huge then return 'inf' elseif v == -math.huge then return '-inf' end
    return ('%.4f'):format(v)
  end
  local function P(name, t)
    if type(t) == 'table' and not torch.is_tensor(t) then
      local r = {}
      for i, x in ipairs(t) do r[i] = fmt(x:tolist()) end
      got[name] = { table.concat(r, ' ') }
      return
    end
    got[name] = { fmt(t:tolist()), tostring(t.dtype), table.concat(t:size(), 'x') }
  end
  local function S(name, f) local ok, e = pcall(f) if not ok then errors[#errors + 1] = name .. ': ' .. tostring(e) end end
  local print = function() end
  setup(function()
    local F = torch.nn.functional
    local x = torch.tensor({{1.5,-2,3},{4,0.5,-6}})
    local v = torch.tensor({-0.9, -0.3, 0, 0.4, 0.99})
    S('a', function() P('deg2rad', torch.deg2rad(x)) P('rad2deg', x:rad2deg()) end)
    S('b', function() P('deg2rad int', torch.deg2rad(torch.tensor({180, 90}, {dtype=torch.int64}))) end)
    S('c', function() P('logaddexp', torch.logaddexp(x, x:flip(2))) end)
    S('d', function() P('logaddexp inf', torch.logaddexp(torch.tensor({math.huge, -math.huge, 1}), torch.tensor({math.huge, -math.huge, -math.huge}))) end)
    S('e', function() P('logaddexp2', torch.logaddexp2(x, x:flip(2))) end)
    S('f', function() P('signbit', torch.signbit(torch.tensor({-1, 0, -0.0, 2}))) end)
    S('g', function() P('asinh', v:asinh()) P('acosh', (v:abs()+1):acosh()) P('atanh', v:atanh()) P('erfinv', v:erfinv()) end)
    S('h', function() P('erfinv edge', torch.erfinv(torch.tensor({1, -1, 1.5, 0.999999}))) end)
    S('i', function() P('gcd', torch.gcd(torch.tensor({12, -18, 0, 7}, {dtype=torch.int64}), torch.tensor({8, 12, 5, 0}, {dtype=torch.int64}))) end)
    S('j', function() P('lcm', torch.lcm(torch.tensor({12, -18, 0, 7}, {dtype=torch.int64}), torch.tensor({8, 12, 5, 3}, {dtype=torch.int64}))) end)
    S('k', function() P('heaviside', torch.heaviside(torch.tensor({-1, 0, 2}), torch.tensor({0.5}))) end)
    S('l', function() P('bcast', torch.broadcast_tensors(torch.ones(3,1), torch.zeros(2))) end)
    S('m', function() print('bshapes\t' .. tostring(torch.broadcast_shapes({3,1}, {2}, {1,1,1}))) end)
    S('n', function() P('meshgrid', torch.meshgrid(torch.tensor({1,2,3}), torch.tensor({4,5}), {indexing='ij'})) end)
    S('o', function() P('meshgrid xy', torch.meshgrid(torch.tensor({1,2,3}), torch.tensor({4,5}), {indexing='xy'})) end)
    S('p', function() P('cartesian', torch.cartesian_prod(torch.tensor({1,2}), torch.tensor({3,4,5}))) end)
    S('q', function() P('combinations', torch.combinations(torch.tensor({1,2,3,4}))) end)
    S('r', function() P('combinations3r', torch.combinations(torch.tensor({1,2,3}), 2, {with_replacement=true})) end)
    S('s', function() P('take', torch.take(x, torch.tensor({{1,6},{3,2}}, {dtype=torch.int64}))) end)
    S('t', function() P('take_along', torch.take_along_dim(x, x:argsort(2), 2)) end)
    S('u', function() P('take_along nil', torch.take_along_dim(x, torch.tensor({1,5}, {dtype=torch.int64}))) end)
    S('v', function() P('rot90', torch.rot90(x)) P('rot90 k2', torch.rot90(x, 2)) P('rot90 k3', torch.rot90(x, -1, {1,2})) end)
    S('w', function() P('kron', torch.kron(torch.tensor({{1,2},{3,4}}), torch.tensor({{0,1},{1,0}}))) end)
    S('x', function() P('block_diag', torch.block_diag(torch.tensor({{1,2}}), torch.tensor(3), torch.tensor({{4},{5}}))) end)
    S('y', function() P('diag_embed', torch.diag_embed(torch.tensor({{1,2},{3,4}}))) end)
    S('z', function() P('diag_embed off', torch.diag_embed(torch.tensor({1,2}), 1)) end)
    S('A', function() P('diagflat', torch.diagflat(torch.tensor({{1,2},{3,4}}), -1)) end)
    S('B', function() P('select_scatter', torch.select_scatter(torch.zeros(2,3), torch.ones(3), 1, 2)) end)
    S('C', function() P('slice_scatter', torch.slice_scatter(torch.zeros(4,2), torch.ones(2,2), 1, 2, 4)) end)
    S('D', function() P('slice_scatter step', torch.slice_scatter(torch.zeros(5,2), torch.ones(3,2), {dim=1, start=1, step=2})) end)
    S('E', function() P('diagonal_scatter', torch.diagonal_scatter(torch.zeros(3,3), torch.ones(3))) end)
    S('F', function() P('hsplit', torch.hsplit(torch.arange(12):view(2,6), 3)) end)
    S('G', function() P('tril_idx', torch.tril_indices(3, 3)) P('triu_idx', torch.triu_indices(3, 4, 1)) end)
    S('H', function() P('vander', torch.vander(torch.tensor({1,2,3}, {dtype=torch.int64}))) end)
    S('I', function() P('vander inc', torch.vander(torch.tensor({1.,2,3}), 4, {increasing=true})) end)
    S('J', function() P('diff', torch.diff(x)) P('diff n2 dim1', torch.diff(torch.tensor({1,4,9,16,25}), 2)) end)
    S('K', function() P('diff prepend', torch.diff(x, 1, 1, torch.zeros(1,3))) end)
    S('L', function() P('trace', torch.trace(x:narrow(2,1,2))) end)
    S('M', function() local cv, ci = torch.cummax(torch.tensor({1, 3, 2, 3, 5, 0/0, 4}), 1) P('cummax', cv) P('cummax i', ci) end)
    S('N', function() local mv, mi = torch.cummin(x, 2) P('cummin', mv) P('cummin i', mi) end)
    S('O', function() P('logcumsumexp', torch.logcumsumexp(x, 2)) end)
    S('P', function() P('nanmean', torch.nanmean(torch.tensor({{1, 0/0, 3},{0/0,0/0,0/0}}), 2)) end)
    S('Q', function() P('nanmean all', torch.nanmean(torch.tensor({1, 0/0, 3}))) end)
    S('R', function() P('histc', torch.histc(torch.tensor({1., 2, 1, 2.5, 4}), 4, 0, 3)) end)
    S('S', function() P('histc auto', torch.histc(torch.tensor({1., 2, 1, 2.5, 4}), 3)) end)
    S('T', function() P('quantile', torch.quantile(x, 0.4)) P('quantile dim', torch.quantile(x, torch.tensor({0.25, 0.5}), 2, true)) end)
    S('U', function() P('quantile lower', torch.quantile(x, 0.3, 1, false, {interpolation='lower'})) end)
    S('V', function() P('quantile nearest', torch.quantile(torch.tensor({1.,2,3,4}), 0.5, {interpolation='nearest'})) end)
    S('W', function() P('nanquantile', torch.nanquantile(torch.tensor({1, 0/0, 3, 4}), 0.5)) end)
    S('X', function() P('quantile nan', torch.quantile(torch.tensor({1, 0/0, 3, 4}), 0.5)) end)
    S('Y', function() P('renorm', torch.renorm(x, 2, 1, 3)) end)
    S('Z', function() local uv, ui, uc = torch.unique_consecutive(torch.tensor({1,1,2,2,3,1,1,2}), {return_inverse=true, return_counts=true}) P('uc', uv) P('uc inv', ui) P('uc cnt', uc) end)
    S('a1', function() P('inner', torch.inner(x, x)) P('inner 1d', torch.inner(torch.tensor({1.,2}), torch.tensor({3.,4}))) end)
    S('a2', function() P('cross', torch.cross(torch.tensor({{1.,2,3},{4,5,6}}), torch.tensor({{0.,1,0},{1,0,0}}), 2)) end)
    S('a3', function() P('cdist', torch.cdist(x, torch.tensor({{0.,0,0},{1,1,1}}))) end)
    S('a4', function() P('cdist p1', torch.cdist(x, torch.tensor({{0.,0,0},{1,1,1}}), 1)) end)
    S('a5', function() P('pdist', F.pdist(torch.tensor({{0.,0},{3,4},{1,1}}))) end)
    S('a6', function() P('addr', torch.addr(torch.ones(2,2), torch.tensor({1.,2}), torch.tensor({3.,4}), {beta=2, alpha=0.5})) end)
    S('a7', function() P('dist', torch.dist(x, torch.zeros(2,3), 3)) end)
    S('a8', function() P('matrix_power', torch.matrix_power(torch.tensor({{1.,1},{1,0}}), 5)) end)
    S('a9', function() P('einsum ij,jk', torch.einsum('ij,jk->ik', x, x:t())) end)
    S('b1', function() P('einsum trace', torch.einsum('ii', torch.tensor({{1.,2},{3,4}}))) end)
    S('b2', function() P('einsum diag', torch.einsum('ii->i', torch.tensor({{1.,2},{3,4}}))) end)
    S('b3', function() P('einsum outer', torch.einsum('i,j->ij', torch.tensor({1.,2}), torch.tensor({3.,4,5}))) end)
    S('b4', function() P('einsum bmm', torch.einsum('bij,bjk->bik', torch.arange(8):float():view(2,2,2), torch.arange(8):float():view(2,2,2))) end)
    S('b5', function() P('einsum implicit', torch.einsum('ij,jk', x, x:t())) end)
    S('b6', function() P('einsum ell', torch.einsum('...ij->...ji', torch.arange(8):float():view(2,2,2))) end)
    S('b7', function() P('einsum sum', torch.einsum('ij->', x)) end)
    S('b8', function() P('einsum transpose', torch.einsum('ji', x)) end)
    S('b9', function() P('einsum 3 ops', torch.einsum('i,i,i->', torch.tensor({1.,2}), torch.tensor({3.,4}), torch.tensor({5.,6}))) end)
    S('c1', function() P('vnorm', torch.linalg.vector_norm(x)) P('vnorm ord1 dim', torch.linalg.vector_norm(x, 1, 2)) end)
    S('c2', function() P('vnorm inf', torch.linalg.vector_norm(x, math.huge)) end)
    S('c3', function() P('mnorm', torch.linalg.matrix_norm(x)) P('mnorm 1', torch.linalg.matrix_norm(x, 1)) P('mnorm inf', torch.linalg.matrix_norm(x, math.huge)) end)
    S('c4', function() P('lnorm', torch.linalg.norm(x)) P('lnorm v', torch.linalg.norm(torch.tensor({3.,4}))) end)
    S('c5', function() P('trapz', torch.trapz(torch.tensor({1.,2,3}))) P('trapz x', torch.trapz(torch.tensor({1.,2,3}), torch.tensor({0.,1,3}))) end)
    S('c6', function() P('trapz dx', torch.trapezoid(torch.tensor({{1.,2,3},{1,1,1}}), {dx=0.5})) end)
    S('c7', function() P('angle', torch.angle(torch.tensor({-1., 0, 2}))) end)
    S('c8', function() P('FloatTensor', torch.FloatTensor({1,2})) P('LongTensor sz', torch.LongTensor(2,3):fill_(1)) end)
    S('c9', function() print('promote', torch.promote_types(torch.int32, torch.float16), torch.result_type(torch.tensor({1}, {dtype=torch.int32}), 1.0), torch.can_cast(torch.float64, torch.int32), torch.can_cast(torch.int32, torch.float32)) end)
    S('d1', function() P('sum_to_size', x:sum_to_size(1, 3)) end)
    S('d2', function()
    torch.manual_seed(0)
    P('rrelu', F.rrelu(torch.tensor({-1., 2, -3, -0.5, 4}), 0.1, 0.3, true))
    torch.manual_seed(0)
    P('rrelu module', torch.nn.RReLU()(torch.tensor({-1., 2, -3})))
    print(torch.nn.RReLU(), torch.nn.RReLU(0.1, 0.3, true))
    P('rrelu eval', F.rrelu(torch.tensor({-1., 2})))
    torch.manual_seed(0)
    P('gumbel', F.gumbel_softmax(torch.tensor({{1., 2, 3}}), 0.5))
    torch.manual_seed(0)
    P('gumbel hard', F.gumbel_softmax(torch.tensor({{1., 2, 3}}), {hard=true}))
    end)

  end)
  it('runs every case', function() assert.are.same({}, errors) end)
  local names = {}
  for name in pairs(want) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    it(name, function()
      local w, g = want[name], got[name]
      assert.is_not_nil(g, 'no result')
      assert.are.equal(w[1], g[1])
      if w[2] ~= '' and w[2] ~= nil and g[2] then
        -- deg2rad of an int64 tensor: PyTorch 1.13's own gives float32 (recorded from the float input)
        assert.are.equal(w[2], g[2])
        assert.are.equal(w[3], g[3])
      end
    end)
  end
end)

describe('gradients of the composed functions', function()
  local f64 = torch.float64
  local function r(...) return torch.randn({ ... }, { dtype = f64 }) end
  local function leaf(t) return t:requires_grad_() end
  local gc, ggc = torch.autograd.gradcheck, torch.autograd.gradgradcheck
  it("asinh, acosh, atanh and erfinv are one node each, with PyTorch's names and both derivatives", function()
    torch.manual_seed(0)
    local x = leaf(torch.rand(5, { dtype = f64 }) * 1.6 - 0.8)
    local y = leaf(torch.rand(5, { dtype = f64 }) + 1.5)
    for _, c in ipairs { { 'asinh', 'AsinhBackward0', x }, { 'acosh', 'AcoshBackward0', y }, { 'atanh', 'AtanhBackward0', x },
      { 'erfinv', 'ErfinvBackward0', x } } do
      local f = torch[c[1]]
      assert.are.equal(c[2], f(c[3]).grad_fn:name())
      assert.is_true(gc(f, { c[3] }), c[1])
      assert.is_true(ggc(f, { c[3] }), c[1])
    end
    -- erfinv(erf(v)) == v to float64 precision
    local v = torch.linspace(-3, 3, 13, { dtype = f64 })
    H.near(torch.erfinv(torch.erf(v)), v, 1e-12)
  end)
  it('the composed ops pass gradcheck', function()
    torch.manual_seed(0)
    local a, b = leaf(r(3, 4)), leaf(r(4, 2))
    assert.is_true(gc(function(p, q) return torch.einsum('ij,jk->ik', p, q) end, { a, b }))
    assert.is_true(gc(function(p) return torch.einsum('ii->i', p:narrow(2, 1, 3)) end, { a }))
    assert.is_true(gc(function(p, q) return torch.logaddexp(p, q) end, { leaf(r(3)), leaf(r(3)) }))
    assert.is_true(gc(function(p, q) return torch.cdist(p, q) end, { leaf(r(3, 2)), leaf(r(4, 2)) }))
    assert.is_true(gc(function(p, q) return torch.kron(p, q) end, { leaf(r(2, 2)), leaf(r(2, 3)) }))
    assert.is_true(gc(function(p) return torch.diff(p, 2) end, { leaf(r(2, 5)) }))
    assert.is_true(gc(function(p) return (torch.cummax(p, 2)) end, { leaf(r(2, 5)) }))
    assert.is_true(gc(function(p) return torch.logcumsumexp(p, 2) end, { leaf(r(2, 5)) }))
    assert.is_true(gc(function(p) return torch.quantile(p, 0.3, 2) end, { leaf(r(2, 5)) }))
    assert.is_true(gc(function(p, q) return torch.block_diag(p, q) end, { leaf(r(2, 2)), leaf(r(1, 3)) }))
    assert.is_true(gc(function(p) return torch.diag_embed(p, 1) end, { leaf(r(2, 3)) }))
    assert.is_true(gc(function(p, q) return torch.cross(p, q, 2) end, { leaf(r(2, 3)), leaf(r(2, 3)) }))
    assert.is_true(gc(function(p) return torch.trapz(p) end, { leaf(r(2, 5)) }))
    assert.is_true(gc(function(p) return torch.linalg.vector_norm(p, 3, 2) end, { leaf(r(2, 5)) }))
    assert.is_true(gc(function(p) return torch.rot90(p) end, { leaf(r(2, 5)) }))
    assert.is_true(gc(function(p) return torch.take_along_dim(p, p:argsort(2), 2) end, { leaf(r(2, 5)) }))
  end)
  it('meshgrid and broadcast_tensors return arrays of views; errors as PyTorch', function()
    local g = torch.meshgrid(torch.arange(3), torch.arange(2))
    assert.are.equal(2, #g)
    assert.are.same({ 1, 0 }, g[1]:stride()) -- torch.meshgrid(arange(3), arange(2), indexing='ij')[0].stride()
    H.errors_with(function() return torch.broadcast_shapes({ 3 }, { 2 }) end,
      'Shape mismatch: objects cannot be broadcast to a single shape')
    H.errors_with(function() return torch.meshgrid(torch.ones(2, 2)) end, 'Expected 0D or 1D tensor')
    H.errors_with(function() return torch.trace(torch.ones(2)) end, 'trace: expected a matrix')
    H.errors_with(function() return torch.is_nonzero(torch.ones(2)) end,
      'Boolean value of Tensor with more than one value is ambiguous')
  end)
end)

describe('grad_fn names of tensor-number arithmetic, as PyTorch 1.13 prints them from Python', function()
  it('a number is wrapped as a tensor: AddBackward0, SubBackward0, MulBackward0, DivBackward0; 2 / a is a:reciprocal() * 2', function()
    -- a = torch.ones(2, requires_grad=True); print(expr.grad_fn) for each
    local a = torch.ones(2, { requires_grad = true })
    local cases = {
      { a + 2, 'AddBackward0' }, { 2 + a, 'AddBackward0' }, { a - 2, 'SubBackward0' }, { 2 - a, 'RsubBackward1' },
      { a * 2, 'MulBackward0' }, { 2 * a, 'MulBackward0' }, { a / 2, 'DivBackward0' }, { 2 / a, 'MulBackward0' },
      { a:add(2), 'AddBackward0' }, { a:mul(2), 'MulBackward0' }, { a:div(2), 'DivBackward0' }, { a:sub(2), 'SubBackward0' },
      { a ^ 2, 'PowBackward0' }, { a:fmod(2), 'FmodBackward0' }, { a:remainder(2), 'RemainderBackward0' },
      { a:clamp_min(0), 'ClampMinBackward0' },
      { 2 ^ a, 'PowBackward1' }, { torch.pow(2, a), 'PowBackward2' }, -- 2 ** a, torch.pow(2, a)
    }
    for i, c in ipairs(cases) do assert.are.equal(c[2], c[1].grad_fn:name(), 'case ' .. i) end
    assert.are.equal('ReciprocalBackward0', (2 / a).grad_fn.next_functions[1][1]:name())
    -- (2 / x).tolist() for x = [3, 7, 0.1, 11] (float32): the reciprocal's rounding, then the product's
    local x = torch.tensor({ 3, 7, 0.1, 11 })
    assert.are.same({ 0.6666666865348816, 0.2857142984867096, 20.0, 0.1818181872367859 }, (2 / x):tolist())
  end)
end)

describe('F.affine_grid and F.grid_sample', function()
  local F = torch.nn.functional
  it("sample as PyTorch's in every padding mode, bilinear and nearest, with both align_corners", function()
    -- theta = [[[0.8, -0.3, 0.1], [0.2, 1.1, -0.2]]]; inp = arange(24.).view(1, 2, 3, 4);
    -- g = F.affine_grid(theta * 1.7, (1, 2, 3, 4), ac); F.grid_sample(inp, g, mode, padding_mode, align_corners=ac)[0, 0]
    local theta = torch.tensor({ { { 0.8, -0.3, 0.1 }, { 0.2, 1.1, -0.2 } } })
    local inp = torch.arange(24):float():view(1, 2, 3, 4)
    H.near(F.affine_grid(theta, { 1, 2, 3, 4 }, false)[1][2],
      { { -0.5000, -0.3500 }, { -0.1000, -0.2500 }, { 0.3000, -0.1500 }, { 0.7000, -0.0500 } }, 1e-4)
    local want = {
      ['zeros false bilinear'] = { { 0, 0, 0, 0 }, { 0.3440, 2.6100, 4.9900, 0.7788 }, { 0.9492, 6.5084, 5.0430, 2.2660 } },
      ['zeros false nearest'] = { { 0, 0, 0, 0 }, { 0, 1, 7, 0 }, { 0, 8, 10, 0 } },
      ['zeros true bilinear'] = { { 0, 0, 0, 0 }, { 0.9152, 3.2617, 5.5283, 1.4350 }, { 0, 4.8475, 3.4490, 1.3871 } },
      ['border false bilinear'] = { { 0.48, 1.84, 3, 3 }, { 0.43, 2.61, 4.99, 6.49 }, { 7.91, 8.48, 9.84, 11 } },
      ['border true nearest'] = { { 0, 2, 3, 3 }, { 0, 5, 6, 7 }, { 8, 8, 10, 11 } },
      ['reflection false bilinear'] = { { 3.53, 3.87, 4.01, 2.44 }, { 0.43, 2.61, 4.99, 6.49 }, { 7.91, 8.48, 9.84, 11 } },
      ['reflection false nearest'] = { { 4, 6, 3, 2 }, { 0, 1, 7, 7 }, { 8, 8, 10, 11 } },
      ['reflection true bilinear'] = { { 6.6800, 7.1333, 7.1867, 4.9200 }, { 1.5650, 3.2617, 5.5283, 6.2050 },
        { 8.2900, 6.6433, 7.0967, 7.4900 } },
      ['reflection true nearest'] = { { 8, 6, 7, 5 }, { 0, 5, 6, 6 }, { 9, 8, 6, 7 } },
    }
    for key, w in pairs(want) do
      local pm, ac, mode = key:match('^(%S+) (%S+) (%S+)$')
      local g = F.affine_grid(theta * 1.7, { 1, 2, 3, 4 }, ac == 'true')
      local out = F.grid_sample(inp, g, { mode = mode, padding_mode = pm, align_corners = ac == 'true' })
      H.near(out[1][1], w, 1e-4)
    end
  end)
  it('gradients of input and theta', function()
    -- theta, inp float64 requiring grad; out = F.grid_sample(inp, F.affine_grid(theta * 1.7, (1, 2, 3, 4), False),
    -- padding_mode='border'); out.pow(2).sum().backward(); theta.grad, inp.grad[0, 0]
    local theta = torch.tensor({ { { 0.8, -0.3, 0.1 }, { 0.2, 1.1, -0.2 } } }, { dtype = torch.float64, requires_grad = true })
    local inp = torch.arange(24):double():view(1, 2, 3, 4):requires_grad_()
    local g = F.affine_grid(theta * 1.7, { 1, 2, 3, 4 }, false)
    F.grid_sample(inp, g, { padding_mode = 'border' }):pow(2):sum():backward()
    H.near(theta.grad:reshape(-1), { -80.036, 145.0667, 873.664, -215.934, 378.352, 2139.144 }, 1e-3)
    H.near(inp.grad[1][1], { { 1.2668, 3.8449, 5.456, 15.64 }, { 0.4484, 1.5895, 3.2608, 14.5296 },
      { 24.2832, 11.2896, 16.5312, 22.0 } }, 1e-4)
    -- (away from integer sample positions, where the bilinear weights have kinks)
    local t2 = torch.tensor({ { { 0.83, -0.31, 0.07 }, { 0.21, 1.13, -0.17 } } }, { dtype = torch.float64, requires_grad = true })
    for _, pm in ipairs { 'zeros', 'border', 'reflection' } do
      assert.is_true(torch.autograd.gradcheck(function(t, x)
        return F.grid_sample(x, F.affine_grid(t, { 1, 2, 3, 4 }, false), { padding_mode = pm })
      end, { t2, inp }), pm)
    end
  end)
end)

describe('torch.linalg det, inv, solve, slogdet (Gauss-Jordan with partial pivoting, composed)', function()
  -- A = [[4., 3, 2], [1, 5, 7], [2, 8, 1]]; B = [[1., 2], [3, 4], [5, 6]] in PyTorch 1.13
  local A = torch.tensor({ { 4, 3, 2 }, { 1, 5, 7 }, { 2, 8, 1 } })
  local B = torch.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
  it("gives PyTorch's values", function()
    H.near(torch.linalg.det(A), -169, 1e-4)
    H.near(torch.det(A:view(1, 3, 3)), { -169 }, 1e-4)
    H.near(torch.det(torch.tensor({ { 0, 1 }, { 1, 0 } })), -1)
    H.near(torch.linalg.inv(A), { { 0.3018, -0.0769, -0.0651 }, { -0.0769, 0.0000, 0.1538 }, { 0.0118, 0.1538, -0.1006 } }, 1e-4)
    H.near(torch.linalg.solve(A, B), { { -0.2544, -0.0947 }, { 0.6923, 0.7692 }, { -0.0296, 0.0355 } }, 1e-4)
    H.near(torch.linalg.solve(A, torch.tensor({ 1, 2, 3 })), { -0.0473, 0.3846, 0.0178 }, 1e-4)
    local sign, logabs = torch.linalg.slogdet(A)
    H.near(sign, -1)
    H.near(logabs, 5.1299, 1e-4)
    assert.is_true(torch.logdet(A):isnan():item())
    -- a batch: each matrix its own pivots
    local batch = torch.stack({ A, A:t(), torch.eye(3) * 2 })
    H.near(torch.linalg.det(batch), { -169, -169, 8 }, 1e-3)
    H.near(torch.linalg.inv(batch):matmul(batch), torch.eye(3):expand(3, 3, 3), 1e-5)
  end)
  it('errors as PyTorch for singular and non-square matrices', function()
    H.errors_with(function() return torch.linalg.inv(torch.tensor({ { 1, 2 }, { 2, 4 } })) end,
      'moontorch.linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular.')
    H.errors_with(function() return torch.linalg.solve(torch.tensor({ { 1, 2 }, { 2, 4 } }), torch.ones(2)) end,
      'The solver failed because the input matrix is singular.')
    H.errors_with(function() return torch.linalg.det(torch.ones(2, 3)) end,
      'A must be batches of square matrices, but they are 2 by 3 matrices')
  end)
  it('has gradients', function()
    local a = A:double():requires_grad_()
    local b = B:double():requires_grad_()
    assert.is_true(torch.autograd.gradcheck(torch.linalg.det, { a }))
    assert.is_true(torch.autograd.gradcheck(torch.linalg.inv, { a }))
    assert.is_true(torch.autograd.gradcheck(torch.linalg.solve, { a, b }))
    -- d det(A) / dA = det(A) * inv(A)^T
    torch.linalg.det(a):backward()
    H.near(a.grad, torch.linalg.inv(A:double()):t() * -169, 1e-8)
  end)
end)

describe('smaller torch names', function()
  it("bucketize, isin, cov, corrcoef, the windows, rsub, chain_matmul, torch.conv2d & co, torch.relu_, max_pool2d_with_indices", function()
    -- PyTorch 1.13: torch.bucketize(tensor([1, 3, 5, 7]), tensor([2, 4, 6])) + 1 -> [1, 2, 3, 4];
    -- right=True on [2, 4] -> [2, 3]
    assert.are.same({ 1, 2, 3, 4 }, torch.bucketize(torch.tensor({ 1, 3, 5, 7 }), torch.tensor({ 2, 4, 6 })):tolist())
    assert.are.same({ 2, 3 }, torch.bucketize(torch.tensor({ 2, 4 }), torch.tensor({ 2, 4, 6 }), { right = true }):tolist())
    assert.are.same({ false, true, false, true }, torch.isin(torch.tensor({ 1, 2, 3, 4 }), torch.tensor({ 2, 4 })):tolist())
    -- x = [[0, 1, 2], [2, 1, 0.5]]: torch.cov(x), cov(x, correction=0), corrcoef(x), cov with fweights [1, 2, 1], aweights [0.5, 1, 2]
    local x = torch.tensor({ { 0, 1, 2 }, { 2, 1, 0.5 } })
    H.near(torch.cov(x), { { 1.0, -0.75 }, { -0.75, 0.5833 } }, 1e-4)
    H.near(torch.cov(x, { correction = 0 }), { { 0.6667, -0.5 }, { -0.5, 0.3889 } }, 1e-4)
    H.near(torch.corrcoef(x), { { 1, -0.9820 }, { -0.9820, 1 } }, 1e-4)
    H.near(torch.cov(x, { fweights = torch.tensor({ 1, 2, 1 }, { dtype = torch.int64 }), aweights = torch.tensor({ 0.5, 1, 2 }) }),
      { { 0.6429, -0.4286 }, { -0.4286, 0.3036 } }, 1e-4)
    -- torch.hann_window(5), hann_window(5, False), hamming_window(4), blackman_window(5) (its first value is
    -- -2.9802e-08 in float32), bartlett_window(6, False)
    H.near(torch.hann_window(5), { 0, 0.3455, 0.9045, 0.9045, 0.3455 }, 1e-4)
    H.near(torch.hann_window(5, false), { 0, 0.5, 1, 0.5, 0 }, 1e-6)
    H.near(torch.hamming_window(4), { 0.08, 0.54, 1, 0.54 }, 1e-6)
    H.near(torch.blackman_window(5), { -2.9802322387695312e-08, 0.2008, 0.8492, 0.8492, 0.2008 }, 1e-4)
    assert.are.equal(-2.9802322387695312e-08, torch.blackman_window(5)[1]:item())
    H.near(torch.bartlett_window(6, false), { 0, 0.4, 0.8, 0.8, 0.4, 0 }, 1e-6)
    assert.are.same({ 4, 3 }, torch.rsub(torch.tensor({ 1, 2 }), 5):tolist())
    H.near(torch.chain_matmul(torch.ones(2, 3), torch.ones(3, 4), torch.ones(4, 1)), { { 12 }, { 12 } })
    H.near(torch.conv2d(torch.ones(1, 1, 3, 3), torch.ones(1, 1, 2, 2)), { { { { 4, 4 }, { 4, 4 } } } })
    local r = torch.tensor({ -1, 2 })
    assert.is_true(rawequal(torch.relu_(r), r) or torch.equal(torch.relu_(r), r))
    assert.are.same({ 0, 2 }, r:tolist())
    -- F.max_pool2d_with_indices(arange(16.).view(1, 1, 4, 4), 2): indices + 1 -> [[6, 8], [14, 16]]
    local v, i = torch.nn.functional.max_pool2d_with_indices(torch.arange(16):float():view(1, 1, 4, 4), 2)
    assert.are.same({ { { { 5, 7 }, { 13, 15 } } } }, v:tolist())
    assert.are.same({ { { { 6, 8 }, { 14, 16 } } } }, i:tolist())
    assert.are.same({ 1, 2 }, torch.empty_strided({ 2, 3 }, { 1, 2 }):stride())
  end)
end)

describe('nn.utils.weight_norm / remove_weight_norm', function()
  it("split the weight into _g and _v as PyTorch's, recompute it before each forward, and undo", function()
    -- torch.manual_seed(0); m = nn.utils.weight_norm(nn.Linear(3, 2)); x = [[1., 2, 3]]; y = m(x);
    -- y.sum().backward(); then remove_weight_norm(m); and weight_norm(nn.Conv2d(2, 3, 2), 'weight', None).weight_g
    local nn = torch.nn
    torch.manual_seed(0)
    local m = nn.utils.weight_norm(nn.Linear(3, 2))
    H.near(m.weight_g, { { 0.5672 }, { 0.5039 } }, 1e-4)
    assert.are.same({ 'bias', 'weight_g', 'weight_v' }, m:state_dict():keys())
    local x = torch.tensor({ { 1, 2, 3 } })
    local y = m(x)
    H.near(y, { { -0.8219, 0.0526 } }, 1e-4)
    y:sum():backward()
    H.near(m.weight_g.grad, { { -1.4288 }, { -0.8040 } }, 1e-4)
    H.near(m.weight_v.grad, { { 0.9891, 2.7801, 1.8030 }, { 0.3221, 1.6452, 3.2470 } }, 1e-4)
    -- the weight follows g: doubling g doubles the product
    torch.no_grad(function() m.weight_g:mul_(2) end)
    H.near(m(x) - m.bias, (y - m.bias) * 2, 1e-5)
    torch.no_grad(function() m.weight_g:div_(2) end)
    nn.utils.remove_weight_norm(m)
    assert.are.same({ 'bias', 'weight' }, m:state_dict():keys())
    H.near(m(x), { { -0.8219, 0.0526 } }, 1e-4)
    local c = nn.utils.weight_norm(nn.Conv2d(2, 3, 2), 'weight', false)
    H.near(c.weight_g, 0.9615, 1e-4)
    H.errors_with(function() nn.utils.remove_weight_norm(nn.Linear(2, 2)) end, "weight_norm of 'weight' not found in Linear")
  end)
end)

describe('in-place view ops', function()
  it('t_, transpose_, unsqueeze_, squeeze_, as_strided_ change the tensor itself and return it', function()
    -- PyTorch 1.13: x = arange(6.).view(2, 3); x.t_() -> size (3, 2), stride (1, 3); x.unsqueeze_(0) -> (1, 3, 2)
    local x = torch.arange(6):float():view(2, 3)
    assert.is_true(rawequal(x:t_(), x))
    assert.are.same({ 3, 2 }, x:size())
    assert.are.same({ 1, 3 }, x:stride())
    assert.are.same({ { 0, 3 }, { 1, 4 }, { 2, 5 } }, x:tolist())
    x:unsqueeze_(1)
    assert.are.same({ 1, 3, 2 }, x:size())
    x:squeeze_()
    x:transpose_(1, 2)
    assert.are.same({ 2, 3 }, x:size())
    assert.is_true(x:is_contiguous())
    local z = torch.zeros(2, 1, 3)
    z:squeeze_(2)
    assert.are.same({ 2, 3 }, z:size())
    z:as_strided_({ 3 }, { 2 })
    assert.are.same({ 3 }, z:size())
    H.errors_with(function() torch.ones(2, { requires_grad = true }):unsqueeze_(1) end,
      'moontorch.unsqueeze_: an in-place view op on a tensor that requires grad is not supported')
  end)
end)

describe('torch.finfo, torch.iinfo, torch.Size', function()
  it("have PyTorch 1.13's fields and printing", function()
    -- torch.finfo(torch.float32) etc., torch.iinfo(torch.int32), printed by PyTorch 1.13
    local f = torch.finfo(torch.float32)
    assert.are.equal(1.1920928955078125e-07, f.eps)
    assert.are.equal(3.4028234663852886e+38, f.max)
    assert.are.equal(1.1754943508222875e-38, f.tiny)
    assert.are.equal(32, f.bits)
    assert.are.equal(2.220446049250313e-16, torch.finfo(torch.float64).eps)
    assert.are.equal(65504, torch.finfo(torch.float16).max)
    assert.are.equal(0.0078125, torch.finfo(torch.bfloat16).eps)
    assert.are.equal('finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, eps=1.19209e-07, smallest_normal=1.17549e-38, '
      .. 'tiny=1.17549e-38, dtype=float32)', tostring(torch.finfo()))
    assert.are.equal('iinfo(min=-2.14748e+09, max=2.14748e+09, dtype=int32)', tostring(torch.iinfo(torch.int32)))
    assert.are.equal(127, torch.iinfo(torch.int8).max)
    assert.are.equal(0, torch.iinfo(torch.uint8).min)
    assert.is_true(torch.Size({ 2, 3 }) == torch.zeros(2, 3):size())
    assert.are.equal('torch.Size([2, 3])', tostring(torch.Size({ 2, 3 })))
  end)
end)

describe('unique with dim, matrix_power with a negative exponent', function()
  it("as PyTorch's", function()
    -- torch.unique(tensor([[3, 4], [1, 2], [3, 4], [1, 5]]), dim=0, return_inverse=True, return_counts=True)
    -- -> [[1, 2], [1, 5], [3, 4]], inverse + 1 = [3, 1, 3, 2], counts [1, 1, 2]
    local v, i, c = torch.unique(torch.tensor({ { 3, 4 }, { 1, 2 }, { 3, 4 }, { 1, 5 } }),
      { dim = 1, return_inverse = true, return_counts = true })
    assert.are.same({ { 1, 2 }, { 1, 5 }, { 3, 4 } }, v:tolist())
    assert.are.same({ 3, 1, 3, 2 }, i:tolist())
    assert.are.same({ 1, 1, 2 }, c:tolist())
    assert.are.same({ { 1, 3 }, { 2, 4 } }, torch.unique(torch.tensor({ { 3, 1, 3 }, { 4, 2, 4 } }), { dim = 2 }):tolist())
    -- torch.matrix_power(tensor([[2., 1], [1, 1]]), -2) -> [[2., -3.], [-3., 5.]]
    H.near(torch.matrix_power(torch.tensor({ { 2, 1 }, { 1, 1 } }), -2), { { 2, -3 }, { -3, 5 } }, 1e-5)
  end)
end)

describe('nn.utils.spectral_norm / remove_spectral_norm', function()
  it("draw u and v, iterate and divide as PyTorch 1.13's", function()
    -- torch.manual_seed(0); m = nn.utils.spectral_norm(nn.Linear(3, 2)); x = [[1., 2, 3]]; y = m(x);
    -- y.sum().backward(); m.eval(); m(x); nn.utils.remove_spectral_norm(m); m.weight
    local nn = torch.nn
    torch.manual_seed(0)
    local m = nn.utils.spectral_norm(nn.Linear(3, 2))
    assert.are.same({ 'bias', 'weight_orig', 'weight_u', 'weight_v' }, m:state_dict():keys())
    H.near(m.weight_u, { -0.6128, -0.7902 }, 1e-4)
    H.near(m.weight_v, { 0.3431, 0.7128, -0.6118 }, 1e-4)
    local x = torch.tensor({ { 1, 2, 3 } })
    local y = m(x)
    H.near(y, { { -2.1526, -0.6127 } }, 1e-4)
    H.near(m.weight_u, { -0.6007, -0.7995 }, 1e-4) -- one power iteration in training mode
    y:sum():backward()
    H.near(m.weight_orig.grad, { { -1.9156, 5.4733, 5.6521 }, { -3.4239, 5.5360, 4.8996 } }, 1e-4)
    m:eval()
    H.near(m(x), { { -2.1526, -0.6127 } }, 1e-4)
    H.near(m.weight_u, { -0.6007, -0.7995 }, 1e-4) -- no iteration in eval mode
    local c = nn.utils.spectral_norm(nn.ConvTranspose2d(2, 3, 2))
    assert.are.same({ 3 }, c.weight_u:size()) -- dim 2 for ConvTranspose
    assert.are.same({ 8 }, c.weight_v:size())
    nn.utils.remove_spectral_norm(m)
    assert.are.same({ 'bias', 'weight' }, m:state_dict():keys())
    H.near(m.weight, { { -0.0114, 0.8183, -1.2554 }, { -1.1226, -0.5875, 0.4090 } }, 1e-4)
  end)
end)

describe('apply_ and map_', function()
  it('run a Lua function over every element, in place (PyTorch: x.apply_(lambda v: v * v))', function()
    local x = torch.arange(6):view(2, 3)
    assert.is_true(rawequal(x:apply_(function(v) return v * v end), x))
    assert.are.same({ { 0, 1, 4 }, { 9, 16, 25 } }, x:tolist())
    local y = torch.arange(6):float():view(3, 2):t()
    y:apply_(function(v) return v + 1 end)
    assert.are.same({ { 1, 3, 5 }, { 2, 4, 6 } }, y:tolist())
    local z = torch.zeros(2, 3)
    z:map_(torch.tensor({ 1, 2, 3 }), function(a, b) return a + b * 10 end)
    assert.are.same({ { 10, 20, 30 }, { 10, 20, 30 } }, z:tolist())
    H.errors_with(function() torch.ones(2, { requires_grad = true }):apply_(function(v) return v end) end,
      "moontorch.apply_: apply_ is only implemented on CPU tensors that don't require grad")
  end)
end)
