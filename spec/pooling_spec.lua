-- Pooling, resampling, shuffles and padding (issue 12, pooling): nn.functional's max / avg /
-- adaptive / lp pools, max_unpool, interpolate, pixel_shuffle, pixel_unshuffle, channel_shuffle,
-- pad, and their modules. Values are PyTorch 1.13's (spec/support/pool_wants.lua, recorded by
-- spec/support/pool_record.lua from the cases of spec/support/pool_cases.lua); gradients are
-- checked in float64 by finite differences; every case also runs on the meta device.
local H = require 'spec.support.helper'
local torch = H.torch
_G.torch = torch
local nn = require 'moontorch.nn'
local F = nn.functional
local cases = require 'spec.support.pool_cases'
local wants = require 'spec.support.pool_wants'
local ag = torch.autograd
local f64 = torch.float64

local gen = cases.gen
local function r(...) return torch.randn(...):to(f64):requires_grad_() end
local function seq(t) return { t:size() } end

describe('pooling and resampling: PyTorch 1.13\'s values', function()
  for _, c in ipairs(cases.cases) do
    it(c.name, function()
      local want = wants[c.name]
      assert(want, 'no recorded result for ' .. c.name)
      local got = { c.lua() }
      assert.are.equal(#want, #got, 'outputs')
      for i, w in ipairs(want) do
        local g = got[i]
        assert.are.equal(w.dtype, tostring(g.dtype), 'dtype of output ' .. i)
        assert.are.same(w.shape, H.shape(g), 'shape of output ' .. i)
        if g.dtype == torch.int64 then
          assert.are.same(w.values, H.flat(g:tolist()))
        else
          H.near(g, w.values, 1e-12, 1e-12)
        end
      end
    end)
  end
end)

describe('pooling and resampling on the meta device', function()
  it('gives every case\'s shapes, dtypes and strides without data', function()
    for _, c in ipairs(cases.cases) do
      local cpu = { c.lua() }
      cases.device = 'meta'
      local ok, meta = pcall(function() return { c.lua() } end)
      cases.device = nil
      assert(ok, c.name .. ': ' .. tostring(meta))
      assert.are.equal(#cpu, #meta, c.name)
      for i = 1, #cpu do
        assert(meta[i].is_meta, c.name .. ' output ' .. i .. ' is not on meta')
        assert.are.same(H.shape(cpu[i]), H.shape(meta[i]), c.name .. ' shape')
        assert.are.equal(cpu[i].dtype, meta[i].dtype, c.name .. ' dtype')
      end
    end
  end)
end)

describe('pooling gradients (float64 gradcheck)', function()
  local checks = {
    { 'max_pool2d padding dilation ceil_mode', function(x) return F.max_pool2d(x, 3, 2, 1, 2, true) end, { 2, 2, 7, 8 } },
    { 'max_pool2d overlapping windows', function(x) return F.max_pool2d(x, 3, 1) end, { 1, 2, 5, 5 } },
    { 'max_pool1d', function(x) return F.max_pool1d(x, 3, 2, 1) end, { 2, 3, 9 } },
    { 'max_pool3d', function(x) return F.max_pool3d(x, 2, { 1, 2, 2 }, { 1, 0, 1 }) end, { 1, 2, 4, 5, 4 } },
    { 'avg_pool2d count_include_pad', function(x) return F.avg_pool2d(x, 3, 2, 1) end, { 2, 2, 6, 7 } },
    { 'avg_pool2d exclude pad ceil', function(x) return F.avg_pool2d(x, 3, 2, 1, true, false) end, { 1, 2, 6, 7 } },
    { 'avg_pool2d divisor_override', function(x) return F.avg_pool2d(x, 2, 1, 1, false, true, 3) end, { 1, 2, 4, 5 } },
    { 'avg_pool1d', function(x) return F.avg_pool1d(x, 3, 2, 1) end, { 2, 3, 8 } },
    { 'avg_pool3d', function(x) return F.avg_pool3d(x, 2, 1, 1, true, false) end, { 1, 2, 3, 4, 3 } },
    { 'adaptive_avg_pool1d', function(x) return F.adaptive_avg_pool1d(x, 3) end, { 2, 3, 7 } },
    { 'adaptive_avg_pool2d', function(x) return F.adaptive_avg_pool2d(x, { 3, 2 }) end, { 2, 2, 7, 5 } },
    { 'adaptive_avg_pool3d', function(x) return F.adaptive_avg_pool3d(x, 2) end, { 1, 2, 3, 5, 4 } },
    { 'adaptive_max_pool1d', function(x) return F.adaptive_max_pool1d(x, 3) end, { 2, 3, 7 } },
    { 'adaptive_max_pool2d', function(x) return F.adaptive_max_pool2d(x, { 3, 2 }) end, { 2, 2, 7, 5 } },
    { 'adaptive_max_pool3d', function(x) return F.adaptive_max_pool3d(x, 2) end, { 1, 2, 3, 5, 4 } },
    { 'lp_pool2d', function(x) return F.lp_pool2d(x, 2, 2) end, { 1, 2, 4, 4 } },
    { 'lp_pool1d', function(x) return F.lp_pool1d(x:abs() + 0.5, 3, 2) end, { 2, 2, 6 } },
    { 'nearest 2d', function(x) return F.interpolate(x, { scale_factor = 1.5 }) end, { 1, 2, 3, 4 } },
    { 'nearest 1d', function(x) return F.interpolate(x, { size = 7 }) end, { 1, 2, 3 } },
    { 'nearest 3d', function(x) return F.interpolate(x, { scale_factor = 2 }) end, { 1, 1, 2, 3, 2 } },
    { 'linear', function(x) return F.interpolate(x, { size = 7, mode = 'linear' }) end, { 1, 2, 4 } },
    { 'bilinear align_corners', function(x)
      return F.interpolate(x, { size = { 5, 3 }, mode = 'bilinear', align_corners = true })
    end, { 1, 2, 3, 4 } },
    { 'bicubic', function(x) return F.interpolate(x, { scale_factor = 2, mode = 'bicubic' }) end, { 1, 1, 3, 4 } },
    { 'trilinear', function(x) return F.interpolate(x, { scale_factor = 1.5, mode = 'trilinear' }) end, { 1, 1, 2, 3, 2 } },
    { 'area', function(x) return F.interpolate(x, { size = { 2, 3 }, mode = 'area' }) end, { 1, 2, 5, 7 } },
    { 'pixel_shuffle', function(x) return F.pixel_shuffle(x, 2) end, { 1, 8, 2, 3 } },
    { 'pixel_unshuffle', function(x) return F.pixel_unshuffle(x, 2) end, { 1, 2, 4, 2 } },
    { 'channel_shuffle', function(x) return F.channel_shuffle(x, 2) end, { 1, 4, 2, 3 } },
    { 'pad reflect', function(x) return F.pad(x, { 2, 1, 1, 2 }, 'reflect') end, { 1, 2, 3, 4 } },
    { 'pad replicate', function(x) return F.pad(x, { 2, 1, 1, 0, 1, 1 }, 'replicate') end, { 1, 1, 2, 3, 2 } },
    { 'pad circular', function(x) return F.pad(x, { 2, 1 }, 'circular') end, { 1, 2, 4 } },
    { 'non-contiguous input', function(x) return F.max_pool2d(x:transpose(3, 4), 2, 1) end, { 1, 2, 4, 5 } },
    { 'unbatched', function(x) return F.avg_pool2d(x, 2, 1, 1) end, { 2, 3, 4 } },
  }
  for _, c in ipairs(checks) do
    it(c[1], function()
      torch.manual_seed(7)
      local x = r(unpack(c[3]))
      assert.is_true(ag.gradcheck(c[2], { x }))
    end)
  end
  it('max_unpool 1d, 2d, 3d', function()
    torch.manual_seed(3)
    local _, i1 = F.max_pool1d(torch.randn(2, 2, 6, { dtype = f64 }), 2, { return_indices = true })
    assert.is_true(ag.gradcheck(function(v) return F.max_unpool1d(v, i1, 2) end, { r(2, 2, 3) }))
    local _, i2 = F.max_pool2d(torch.randn(1, 2, 4, 6, { dtype = f64 }), 2, { return_indices = true })
    assert.is_true(ag.gradcheck(function(v) return F.max_unpool2d(v, i2, 2) end, { r(1, 2, 2, 3) }))
    local _, i3 = F.max_pool3d(torch.randn(1, 1, 4, 2, 4, { dtype = f64 }), 2, { return_indices = true })
    assert.is_true(ag.gradcheck(function(v) return F.max_unpool3d(v, i3, 2) end, { r(1, 1, 2, 1, 2) }))
  end)
  it('second derivatives (gradgradcheck)', function()
    torch.manual_seed(5)
    assert.is_true(ag.gradgradcheck(function(x) return F.avg_pool2d(x, 2, 1, 1) end, { r(1, 2, 3, 4) }))
    assert.is_true(ag.gradgradcheck(function(x) return F.max_pool2d(x, 2, 1) end, { r(1, 2, 3, 4) }))
    assert.is_true(ag.gradgradcheck(function(x)
      return F.interpolate(x, { scale_factor = 2, mode = 'bilinear' })
    end, { r(1, 1, 2, 3) }))
    assert.is_true(ag.gradgradcheck(function(x) return F.adaptive_max_pool2d(x, 2) end, { r(1, 2, 3, 5) }))
    local _, i = F.max_pool2d(torch.randn(1, 2, 4, 4, { dtype = f64 }), 2, { return_indices = true })
    assert.is_true(ag.gradgradcheck(function(v) return F.max_unpool2d(v, i, 2) end, { r(1, 2, 2, 2) }))
  end)
  it('names its backwards as PyTorch does', function()
    local x = r(1, 2, 4, 4)
    local x3 = r(1, 1, 2, 4, 4)
    local x1 = r(1, 2, 4)
    assert.are.equal('MaxPool2DWithIndicesBackward0', F.max_pool2d(x, 2).grad_fn:name())
    assert.are.equal('MaxPool3DWithIndicesBackward0', F.max_pool3d(x3, 2).grad_fn:name())
    assert.are.equal('SqueezeBackward1', F.max_pool1d(x1, 2).grad_fn:name())
    assert.are.equal('AvgPool2DBackward0', F.avg_pool2d(x, 2).grad_fn:name())
    assert.are.equal('AvgPool3DBackward0', F.avg_pool3d(x3, 2).grad_fn:name())
    assert.are.equal('SqueezeBackward1', F.avg_pool1d(x1, 2).grad_fn:name())
    assert.are.equal('AdaptiveAvgPool2DBackward0', F.adaptive_avg_pool2d(x, 2).grad_fn:name())
    assert.are.equal('AdaptiveMaxPool2DBackward0', F.adaptive_max_pool2d(x, 2).grad_fn:name())
    assert.are.equal('UpsampleNearest2DBackward1', F.interpolate(x, { scale_factor = 2 }).grad_fn:name())
    assert.are.equal('UpsampleLinear1DBackward1', F.interpolate(x1, { scale_factor = 2, mode = 'linear' }).grad_fn:name())
    assert.are.equal('UpsampleBilinear2DBackward1',
      F.interpolate(x, { scale_factor = 2, mode = 'bilinear' }).grad_fn:name())
    assert.are.equal('UpsampleBicubic2DBackward1', F.interpolate(x, { scale_factor = 2, mode = 'bicubic' }).grad_fn:name())
    assert.are.equal('UpsampleTrilinear3DBackward1',
      F.interpolate(x3, { scale_factor = 2, mode = 'trilinear' }).grad_fn:name())
    assert.are.equal('ReflectionPad2DBackward0', F.pad(x, { 1, 1, 2, 0 }, 'reflect').grad_fn:name())
    assert.are.equal('ReplicationPad1DBackward0', F.pad(x1, { 1, 3 }, 'replicate').grad_fn:name())
    assert.are.equal('ReplicationPad3DBackward0', F.pad(x3, { 1, 1, 1, 1, 1, 1 }, 'replicate').grad_fn:name())
    local v, i = F.max_pool2d(x:detach(), 2, { return_indices = true })
    assert.are.equal('MaxUnpool2DBackward0', F.max_unpool2d(v:requires_grad_(), i, 2).grad_fn:name())
    local g = torch.ones(1, 2, 2, 2, { dtype = f64, requires_grad = true })
    local gx = ag.grad({ F.avg_pool2d(x, 2) }, { x }, { grad_outputs = { g }, create_graph = true })[1]
    assert.are.equal('AvgPool2DBackwardBackward0', gx.grad_fn:name())
  end)
end)

describe('pooling in float32', function()
  it('agrees with float64 on LeNet\'s shapes, the 2x2 path and the threaded planes included', function()
    torch.manual_seed(1)
    for _, shape in ipairs({ { 64, 6, 24, 24 }, { 64, 16, 8, 8 }, { 3, 5, 7 } }) do
      local x = torch.randn(shape)
      local x64 = x:to(f64)
      local v, i = F.max_pool2d(x, 2, { return_indices = true })
      local v64, i64 = F.max_pool2d(x64, 2, { return_indices = true })
      assert.is_true(torch.equal(v:to(f64), v64))
      assert.is_true(torch.equal(i, i64))
      local y = x:clone():requires_grad_()
      local g = torch.randn(v:size())
      F.max_pool2d(y, 2):backward(g)
      local y64 = x64:clone():requires_grad_()
      F.max_pool2d(y64, 2):backward(g:to(f64))
      assert.is_true(torch.equal(y.grad:to(f64), y64.grad))
      H.near(F.avg_pool2d(x, 2, 1, 1):to(f64), F.avg_pool2d(x64, 2, 1, 1), 1e-5, 1e-5)
    end
  end)
  it('adaptive avg pool 64x512x7x7 to 1x1 is the mean of each plane', function()
    torch.manual_seed(2)
    local x = torch.randn(64, 512, 7, 7)
    local y = F.adaptive_avg_pool2d(x, 1)
    assert.are.same({ 64, 512, 1, 1 }, H.shape(y))
    H.near(y:reshape(64, 512), x:reshape(64, 512, 49):mean(3), 1e-5, 1e-5)
    local xg = x:clone():requires_grad_()
    F.adaptive_avg_pool2d(xg, 1):sum():backward()
    H.near(xg.grad:reshape(-1):narrow(1, 1, 100), torch.full({ 100 }, 1 / 49), 1e-7, 1e-6)
  end)
  it('propagates NaN as PyTorch does (the maximum of a window with a NaN is NaN, its index the NaN\'s)', function()
    local nan = 0 / 0
    local x = torch.tensor({ { { { 1, nan }, { 3, 2 } } } })
    local v, i = F.max_pool2d(x, 2, { return_indices = true })
    assert.is_true(v:isnan():item())
    assert.are.equal(2, i:item())
    local v2, i2 = F.max_pool2d(x:to(f64), 2, { return_indices = true })
    assert.is_true(v2:isnan():item())
    assert.are.equal(2, i2:item())
    -- rows wide enough for the vectorised 2x2 path: NaNs anywhere in the windows, ties, -inf
    torch.manual_seed(9)
    local w = torch.randn(3, 2, 6, 40)
    w:view(-1):index_fill_(1, torch.randperm(w:numel()):narrow(1, 1, 60), nan)
    w[1][1][1]:fill_(1.5)
    w[2][1][2]:fill_(-math.huge)
    local v32, i32 = F.max_pool2d(w, 2, { return_indices = true })
    local vref, iref = F.max_pool2d(w:to(f64), 2, { return_indices = true }) -- float64: the general loop
    assert.is_true(torch.equal(i32, iref))
    assert.is_true(torch.equal(v32:to(f64):isnan(), vref:isnan()))
    assert.is_true(torch.equal(v32:to(f64):nan_to_num(0), vref:nan_to_num(0)))
  end)
end)

describe('pooling errors', function()
  local x = torch.randn(1, 1, 4, 4)
  it('are PyTorch\'s, at the caller\'s line', function()
    H.errors_with(function() F.max_pool2d(x, 2, { padding = 2 }) end,
      'pad should be at most half of kernel size, but got pad=2 and kernel_size=2')
    H.errors_with(function() F.max_pool2d(x, 5) end,
      'Given input size: (1x4x4). Calculated output size: (1x0x0). Output size is too small')
    H.errors_with(function() F.avg_pool2d(x, 5) end,
      'Given input size: (1x4x4). Calculated output size: (1x0x0). Output size is too small')
    H.errors_with(function() F.max_pool3d(x, 2) end,
      'Given input size: (1x1x4x4). Calculated output size: (1x0x2x2). Output size is too small')
    H.errors_with(function() F.max_pool2d(torch.randn(4, 4), 2) end,
      'non-empty 3D or 4D (batch mode) tensor expected for input')
    H.errors_with(function() F.max_pool2d(x, 2, 0) end, 'stride should not be zero')
    H.errors_with(function() F.max_pool2d(x:long(), 2) end, '"max_pool2d" not implemented for \'Long\'')
    H.errors_with(function() F.avg_pool2d(x, 2, { divisor_override = 0 }) end, 'divisor must be not zero')
    H.errors_with(function() F.max_pool1d(x, 2) end,
      'max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:[1, 1, 4, 4]')
    H.errors_with(function() F.avg_pool1d(x, 2) end,
      "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking arguments for avg_pool1d)")
    H.errors_with(function() F.adaptive_avg_pool2d(torch.randn(4), 2) end,
      'adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [4]')
    H.errors_with(function() F.adaptive_avg_pool2d(x, { 2, 2, 2 }) end, 'adaptive_avg_pool2d: output_size must be 2')
    H.errors_with(function() F.adaptive_avg_pool2d(torch.randn(1, 2, 0, 4), 2) end,
      'adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes '
      .. '[1, 2, 0, 4] with dimension 3 being empty')
    H.errors_with(function() F.max_pool2d(torch.randn(1, 2, 0, 4), 2) end,
      'Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[1, 2, 0, 4]')
    local v, i = F.max_pool2d(x, 2, { return_indices = true })
    H.errors_with(function() F.max_unpool2d(v, i, 2, { output_size = { 9, 9 } }) end,
      'invalid output_size "(9, 9)" (dim 0 must be between 2 and 6)')
    H.errors_with(function() F.max_unpool2d(v, i + 100, 2) end, 'max_unpool2d: Found an invalid max index: 102 (output volumes are of size 4x4)')
    H.errors_with(function() F.max_unpool2d(v, i:float(), 2) end,
      'elements in indices should be type int64 but got: float32')
    H.errors_with(function() F.interpolate(x, { size = 3, scale_factor = 2 }) end,
      'only one of size or scale_factor should be defined')
    H.errors_with(function() F.interpolate(x) end, 'either size or scale_factor should be defined')
    H.errors_with(function() F.interpolate(x, { scale_factor = 2, mode = 'foo' }) end,
      'Input Error: Only 3D, 4D and 5D input Tensors supported (got 4D) for the modes: nearest | linear | bilinear | '
      .. 'bicubic | trilinear | area | nearest-exact (got foo)')
    H.errors_with(function() F.interpolate(x, { scale_factor = 2, mode = 'linear' }) end,
      'Got 4D input, but linear mode needs 3D input')
    H.errors_with(function() F.interpolate(x, { scale_factor = 2, align_corners = true }) end,
      'align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear')
    H.errors_with(function() F.interpolate(x, { size = { 2, 3, 4 } }) end,
      'Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of '
      .. '[4, 4] and output size of (2, 3, 4).')
    H.errors_with(function() F.pixel_shuffle(torch.randn(1, 3, 2, 2), 2) end,
      "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but "
      .. 'input.size(-3)=3 is not divisible by 4')
    H.errors_with(function() F.pixel_unshuffle(torch.randn(1, 3, 3, 2), 2) end,
      'pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=3 is not divisible by 2')
    H.errors_with(function() F.channel_shuffle(torch.randn(1, 3, 2, 2), 2) end,
      'Number of channels must be divisible by groups. Got 3 channels and 2 groups.')
    H.errors_with(function() F.lp_pool2d(x, 2, 5) end, 'Output size is too small')
    H.errors_with(function() F.pad(x, { 1, 1 }, 'reflect') end,
      'Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now')
    H.errors_with(function() F.pad(x, { 4, 1, 0, 0 }, 'reflect') end,
      'Padding size should be less than the corresponding input dimension, but got: padding (4, 1) at dimension 4')
    -- raised at the caller's line
    local ok, err = pcall(function() F.max_pool2d(x, 5) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('pooling_spec.lua', 1, true), err)
    assert.truthy(tostring(err):find('^[^:]*:%d+: moontorch%.'), err)
  end)
  it('of modules name them and come at the caller\'s line', function()
    local m = nn.MaxPool2d(2, { padding = 2 })
    local ok, err = pcall(function() return m(x) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('pad should be at most half of kernel size', 1, true), err)
    assert.truthy(tostring(err):find('pooling_spec.lua', 1, true), err)
    H.errors_with(function() nn.MaxPool2d() end, "missing 1 required positional argument: 'kernel_size'")
    H.errors_with(function() nn.AvgPool2d(0) end, 'kernel_size must be a positive int')
    H.errors_with(function() nn.MaxPool2d(2)(x, x) end, 'forward() takes 1 positional argument but 2 were given')
  end)
end)

describe('pooling modules', function()
  it('print as PyTorch prints them', function()
    local want = {
      { nn.MaxPool1d(2), 'MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)' },
      { nn.MaxPool2d(2), 'MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)' },
      { nn.MaxPool2d({ 2, 3 }, { stride = 1, padding = { 1, 0 }, dilation = 2, ceil_mode = true }),
        'MaxPool2d(kernel_size=(2, 3), stride=1, padding=(1, 0), dilation=2, ceil_mode=True)' },
      { nn.MaxPool3d(2, { return_indices = true }), 'MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)' },
      { nn.AvgPool1d(2), 'AvgPool1d(kernel_size=(2,), stride=(2,), padding=(0,))' },
      { nn.AvgPool2d(2), 'AvgPool2d(kernel_size=2, stride=2, padding=0)' },
      { nn.AvgPool2d(3, 2, 1, true, false, 2), 'AvgPool2d(kernel_size=3, stride=2, padding=1)' },
      { nn.AvgPool3d(2), 'AvgPool3d(kernel_size=2, stride=2, padding=0)' },
      { nn.AdaptiveAvgPool1d(3), 'AdaptiveAvgPool1d(output_size=3)' },
      { nn.AdaptiveAvgPool2d({ 2, false }), 'AdaptiveAvgPool2d(output_size=(2, None))' },
      { nn.AdaptiveAvgPool3d(1), 'AdaptiveAvgPool3d(output_size=1)' },
      { nn.AdaptiveMaxPool1d(2), 'AdaptiveMaxPool1d(output_size=2)' },
      { nn.AdaptiveMaxPool2d(2, true), 'AdaptiveMaxPool2d(output_size=2)' },
      { nn.MaxUnpool1d(2), 'MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))' },
      { nn.MaxUnpool2d(2, 1), 'MaxUnpool2d(kernel_size=(2, 2), stride=(1, 1), padding=(0, 0))' },
      { nn.MaxUnpool3d(2), 'MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))' },
      { nn.LPPool1d(2, 3), 'LPPool1d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)' },
      { nn.LPPool2d(1.5, 2, 1, true), 'LPPool2d(norm_type=1.5, kernel_size=2, stride=1, ceil_mode=True)' },
      { nn.Upsample({ scale_factor = 2 }), 'Upsample(scale_factor=2.0, mode=nearest)' },
      { nn.Upsample({ size = { 3, 4 }, mode = 'bilinear' }), 'Upsample(size=(3, 4), mode=bilinear)' },
      { nn.UpsamplingNearest2d({ scale_factor = 2 }), 'UpsamplingNearest2d(scale_factor=2.0, mode=nearest)' },
      { nn.UpsamplingBilinear2d(4), 'UpsamplingBilinear2d(size=4, mode=bilinear)' },
      { nn.PixelShuffle(2), 'PixelShuffle(upscale_factor=2)' },
      { nn.PixelUnshuffle(2), 'PixelUnshuffle(downscale_factor=2)' },
      { nn.ChannelShuffle(2), 'ChannelShuffle(groups=2)' },
      { nn.ZeroPad2d(1), 'ZeroPad2d((1, 1, 1, 1))' },
      { nn.ZeroPad2d({ 1, 2, 3, 4 }), 'ZeroPad2d((1, 2, 3, 4))' },
      { nn.ConstantPad1d(2, 3.5), 'ConstantPad1d(padding=(2, 2), value=3.5)' },
      { nn.ConstantPad2d({ 1, 2, 3, 4 }, 1), 'ConstantPad2d(padding=(1, 2, 3, 4), value=1)' },
      { nn.ConstantPad3d(1, 0), 'ConstantPad3d(padding=(1, 1, 1, 1, 1, 1), value=0)' },
      { nn.ReflectionPad1d(2), 'ReflectionPad1d((2, 2))' },
      { nn.ReflectionPad2d({ 1, 1, 2, 0 }), 'ReflectionPad2d((1, 1, 2, 0))' },
      { nn.ReflectionPad3d(1), 'ReflectionPad3d((1, 1, 1, 1, 1, 1))' },
      { nn.ReplicationPad1d({ 1, 2 }), 'ReplicationPad1d((1, 2))' },
      { nn.ReplicationPad2d(1), 'ReplicationPad2d((1, 1, 1, 1))' },
      { nn.ReplicationPad3d(2), 'ReplicationPad3d((2, 2, 2, 2, 2, 2))' },
    }
    for _, w in ipairs(want) do assert.are.equal(w[2], tostring(w[1])) end
  end)
  it('compute what nn.functional computes, unbatched input too', function()
    torch.manual_seed(4)
    local x = torch.randn(2, 3, 6, 7)
    assert.is_true(torch.equal(nn.MaxPool2d(3, 2, 1)(x), F.max_pool2d(x, 3, 2, 1)))
    assert.is_true(torch.equal(nn.MaxPool2d(2)(x[1]), F.max_pool2d(x, 2)[1]))
    assert.is_true(torch.equal(nn.AvgPool2d(2, { count_include_pad = false, padding = 1 })(x),
      F.avg_pool2d(x, 2, 2, 1, false, false)))
    assert.is_true(torch.equal(nn.AvgPool1d(3)(x[1]), F.avg_pool1d(x[1], 3)))
    assert.is_true(torch.equal(nn.AdaptiveAvgPool2d({ false, 3 })(x), F.adaptive_avg_pool2d(x, { 6, 3 })))
    local m = nn.MaxPool2d(2, { return_indices = true })
    local v, i = m(x)
    -- the default size (6, 6) cannot hold the maxima of the 7th column: PyTorch's error too
    H.errors_with(function() nn.MaxUnpool2d(2)(v, i) end, 'Found an invalid max index')
    assert.is_true(torch.equal(nn.MaxUnpool2d(2)(v, i, { 2, 3, 6, 7 }), F.max_unpool2d(v, i, 2, { output_size = { 6, 7 } })))
    local av, ai = nn.AdaptiveMaxPool2d(2, true)(x)
    local fv, fi = F.adaptive_max_pool2d(x, 2, true)
    assert.is_true(torch.equal(av, fv) and torch.equal(ai, fi))
    assert.is_true(torch.equal(nn.LPPool2d(2, 2)(x), F.lp_pool2d(x, 2, 2)))
    assert.is_true(torch.equal(nn.Upsample({ scale_factor = 2, mode = 'bilinear' })(x),
      F.interpolate(x, { scale_factor = 2, mode = 'bilinear' })))
    local y = nn.PixelShuffle(2)(torch.randn(1, 8, 3, 3))
    assert.are.same({ 1, 2, 6, 6 }, H.shape(y))
    assert.is_true(torch.equal(nn.PixelUnshuffle(2)(y), F.pixel_unshuffle(y, 2)))
    assert.is_true(torch.equal(F.pixel_unshuffle(F.pixel_shuffle(x:reshape(2, 18, 7, 1), 1), 1), x:reshape(2, 18, 7, 1)))
    assert.is_true(torch.equal(nn.ChannelShuffle(3)(x), F.channel_shuffle(x, 3)))
    assert.is_true(torch.equal(nn.ReflectionPad2d(2)(x[1]), F.pad(x[1], { 2, 2, 2, 2 }, 'reflect')))
    assert.is_true(torch.equal(nn.ZeroPad2d({ 1, 0, 0, 2 })(x), F.pad(x, { 1, 0, 0, 2 })))
    assert.is_true(torch.equal(nn.ConstantPad3d(1, 2.5)(x), F.pad(x, { 1, 1, 1, 1, 1, 1 }, 'constant', 2.5)))
    assert.is_true(torch.equal(nn.ReplicationPad1d({ 3, 1 })(x[1][1]), F.pad(x[1][1], { 3, 1 }, 'replicate')))
  end)
  it('unpool what they pooled (max_unpool inverts max_pool where the maxima were)', function()
    torch.manual_seed(6)
    local x = torch.rand(2, 3, 6, 8) + 0.1
    local v, i = F.max_pool2d(x, 2, { return_indices = true })
    local u = F.max_unpool2d(v, i, 2)
    assert.is_true(torch.equal(F.max_pool2d(u, 2), v))
    assert.is_true(torch.equal(u:ne(0):sum(), torch.tensor(v:numel(), { dtype = torch.int64 })))
  end)
  it('run on meta, and take {device=, dtype=} options as other modules do', function()
    local m = nn.MaxPool2d(2, { stride = 1 })
    local y = m(torch.empty(4, 3, 10, 10, { device = 'meta' }))
    assert.is_true(y.is_meta)
    assert.are.same({ 4, 3, 9, 9 }, H.shape(y))
    local v, i = nn.MaxPool3d(2, { return_indices = true })(torch.empty(1, 2, 4, 4, 4, { device = 'meta' }))
    assert.are.same({ 1, 2, 2, 2, 2 }, H.shape(i))
    assert.are.equal(torch.int64, i.dtype)
    assert.is_true(v.is_meta)
    assert.are.same({ 2, 3, 4, 4 }, H.shape(nn.Upsample({ scale_factor = 2 })(torch.empty(2, 3, 2, 2, { device = 'meta' }))))
  end)
end)

describe('pooling frees what it makes', function()
  it('leaves no tensor behind after forward and backward', function()
    local stats = torch._C.mt_get_stats()
    collectgarbage()
    collectgarbage()
    require('moontorch.tensor').sweep()
    local before = stats.live_tensors
    for _ = 1, 3 do
      local x = torch.randn(2, 3, 8, 8, { requires_grad = true })
      local v, i = F.max_pool2d(x, 2, { return_indices = true })
      local y = F.avg_pool2d(v, 2, 1, 1) + F.interpolate(v, { size = { 5, 5 }, mode = 'bicubic' })
      local u = F.max_unpool2d(v, i, 2)
      ;(y:sum() + u:sum() + F.adaptive_max_pool2d(x, 3):sum()):backward()
    end
    collectgarbage()
    collectgarbage()
    require('moontorch.tensor').sweep()
    assert.are.equal(before, stats.live_tensors)
  end)
end)
