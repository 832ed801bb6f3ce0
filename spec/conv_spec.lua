-- Convolution (issue 12, conv part): torch.convolution, F.conv1d/2d/3d, F.conv_transpose1d/2d/3d,
-- F.unfold, F.fold and nn.Conv1d/2d/3d, nn.ConvTranspose1d/2d/3d, nn.Unfold, nn.Fold. Values are
-- PyTorch 1.13's, recorded by spec/support/conv_record.py into spec/support/conv_wants.lua
-- (/usr/bin/python3 spec/support/conv_record.py > spec/support/conv_wants.lua), on inputs both
-- sides make without a generator (sin(0.37 i + c), reshaped).
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local F = nn.functional
local W = require 'spec.support.conv_wants'

local f64 = { dtype = torch.float64 }
local function det(shape, c)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return (torch.arange(n, f64) * 0.37 + c):sin():reshape(shape)
end
local function gy_like(y)
  return (torch.arange(y:numel(), f64) * 0.23):cos():reshape(y:size())
end
local function live() return tonumber(torch._C.mt_get_stats().live_tensors) end

-- the Lua call of a recorded case: F.fn(x, w, bias, {kw}) with PyTorch's keyword names
local function call(c, x, w, b)
  local kw = {}
  for k, v in pairs(c.kw) do kw[k] = v end
  if c.fn == 'unfold' then
    local ks = kw.kernel_size
    kw.kernel_size = nil
    return F.unfold(x, ks, kw)
  elseif c.fn == 'fold' then
    local os_, ks = kw.output_size, kw.kernel_size
    kw.output_size, kw.kernel_size = nil, nil
    return F.fold(x, os_, ks, kw)
  end
  kw.bias = b
  return F[c.fn](x, w, kw)
end

local function case_name(c)
  local parts = {}
  for k, v in pairs(c.kw) do
    parts[#parts + 1] = k .. '=' .. (type(v) == 'table' and ('{' .. table.concat(v, ',') .. '}') or tostring(v))
  end
  table.sort(parts)
  return ('%s x[%s] %s'):format(c.fn, table.concat(c.x, ','), table.concat(parts, ' '))
end

describe('F.conv*, F.conv_transpose*, F.unfold, F.fold', function()
  for _, c in ipairs(W.functional) do
    it('match PyTorch 1.13, output and gradients: ' .. case_name(c), function()
      local x = det(c.x, 0.1):requires_grad_()
      local w, b
      if c.w then
        w = det(c.w, 0.7):requires_grad_()
        if c.bias then
          local cout = c.fn:match('transpose') and c.w[2] * (c.kw.groups or 1) or c.w[1]
          b = det({ cout }, 1.3):requires_grad_()
        end
      end
      local y = call(c, x, w, b)
      assert.are.same(c.y.shape, H.shape(y))
      H.near(y:reshape(-1), c.y.values, 1e-12, 1e-10)
      if #c.x == (c.w and #c.w or c.fn == 'unfold' and 4 or 3) then -- batched (unbatched ends in a squeeze)
        assert.are.equal(c.w and 'ConvolutionBackward0' or c.fn == 'unfold' and 'Im2ColBackward0' or 'Col2ImBackward0',
          y.grad_fn:name())
      end
      local g = gy_like(y)
      ;(y * g):sum():backward()
      H.near(x.grad:reshape(-1), c.gx, 1e-12, 1e-10)
      if c.gw then H.near(w.grad:reshape(-1), c.gw, 1e-12, 1e-10) end
      if c.gb then H.near(b.grad:reshape(-1), c.gb, 1e-12, 1e-10) end
    end)
  end

  it('float32 agrees with float64 on shapes that take the BLAS, the thread pool and chunks of samples', function()
    torch.manual_seed(3)
    local n_threads = torch.get_num_threads()
    local shapes = {
      { x = { 3, 16, 20, 20 }, w = { 32, 16, 3, 3 }, kw = { padding = 1 } },     -- BLAS products
      { x = { 64, 6, 12, 12 }, w = { 16, 6, 5, 5 }, kw = {} },                    -- many small products
      { x = { 8, 64, 96, 96 }, w = { 4, 64, 3, 3 }, kw = { stride = 1 } },        -- columns over 48 MB: chunks
      { x = { 4, 8, 9, 9 }, w = { 8, 1, 3, 3 }, kw = { groups = 8, stride = 2 } }, -- depthwise
      { x = { 4, 32, 10, 10 }, w = { 16, 32, 1, 1 }, kw = {} },                   -- 1x1: a plain product
      { x = { 2, 64, 40, 40 }, w = { 64, 64, 1, 1 }, kw = {} },                   -- the same with the BLAS
    }
    for _, s in ipairs(shapes) do
      local x, w = torch.randn(s.x), torch.randn(s.w)
      local b, bt = torch.randn(s.w[1]), torch.randn(s.w[2] * (s.kw.groups or 1))
      local y32 = F.conv2d(x, w, b, s.kw)
      local y64 = F.conv2d(x:double(), w:double(), b:double(), s.kw)
      H.near(y32:double(), y64, 1e-3, 1e-4)
      local xt = torch.randn(s.x[1], s.w[1], 6, 6)
      local t32 = F.conv_transpose2d(xt, w, bt, s.kw)
      H.near(t32:double(), F.conv_transpose2d(xt:double(), w:double(), bt:double(), s.kw), 1e-3, 1e-4)
      -- the gradients (the weight's: one sample at a time per thread, or per chunk with the BLAS)
      local function grads(dt, f, xx, ww, bb)
        local xv, wv, bv = xx:detach():to(dt):requires_grad_(), ww:detach():to(dt):requires_grad_(),
          bb:detach():to(dt):requires_grad_()
        local y = f(xv, wv, bv, s.kw)
        y:backward(torch.ones(y:size(), { dtype = dt }))
        return { xv.grad:double(), wv.grad:double(), bv.grad:double() }
      end
      if s.x[3] < 50 then
        for _, f in ipairs({ { F.conv2d, x, b }, { F.conv_transpose2d, xt, bt } }) do
          local g32, g64 = grads(torch.float32, f[1], f[2], w, f[3]), grads(torch.float64, f[1], f[2], w, f[3])
          for i = 1, 3 do H.near(g32[i], g64[i], 2e-3, 1e-4) end
        end
      end
      -- and with one thread (no sample-at-a-time path)
      torch.set_num_threads(1)
      H.near(F.conv2d(x, w, b, s.kw):double(), y64, 1e-3, 1e-4)
      torch.set_num_threads(n_threads)
    end
  end)

  it('pass gradcheck and gradgradcheck in float64', function()
    torch.manual_seed(0)
    local function r(...) return torch.randn({ ... }, f64):requires_grad_() end
    local cases = {
      { function(x, w, b) return F.conv2d(x, w, b, { 2, 1 }, { 1, 2 }, { 1, 2 }) end, { r(2, 3, 6, 7), r(4, 3, 3, 2), r(4) } },
      { function(x, w, b) return F.conv2d(x, w, b, 1, 1, 1, 2) end, { r(2, 4, 5, 5), r(6, 2, 3, 3), r(6) } },
      { function(x, w) return F.conv2d(x, w, nil, 2, 1, 1, 4) end, { r(2, 4, 5, 5), r(8, 1, 3, 3) } },
      { function(x, w) return F.conv2d(x, w, nil, 1, 'same') end, { r(1, 2, 5, 5), r(3, 2, 4, 2) } },
      { function(x, w, b) return F.conv2d(x, w, b) end, { r(2, 3, 4, 4), r(5, 3, 1, 1), r(5) } },
      { function(x, w, b) return F.conv1d(x, w, b, 2, 1, 2) end, { r(2, 3, 9), r(4, 3, 3), r(4) } },
      { function(x, w, b) return F.conv3d(x, w, b, { 1, 2, 1 }, 1) end, { r(1, 2, 4, 4, 3), r(2, 2, 2, 3, 2), r(2) } },
      { function(x, w, b) return F.conv2d(x, w, b, 1, 1) end, { r(3, 4, 4), r(2, 3, 3, 3), r(2) } },
      { function(x, w, b) return F.conv_transpose2d(x, w, b, 2, 1, 1) end, { r(2, 4, 3, 3), r(4, 3, 3, 3), r(3) } },
      { function(x, w, b) return F.conv_transpose2d(x, w, b, { 2, 1 }, { 1, 0 }, { 1, 0 }, 2, { 1, 2 }) end,
        { r(2, 4, 3, 4), r(4, 2, 3, 2), r(4) } },
      -- output_padding at least the stride (allowed below the dilation)
      { function(x, w, b) return F.conv_transpose2d(x, w, b, 1, 0, 1, 1, 2) end, { r(1, 2, 3, 3), r(2, 2, 2, 2), r(2) } },
      { function(x, w, b) return F.conv_transpose1d(x, w, b) end, { r(2, 4, 5), r(4, 3, 1), r(3) } },
      { function(x, w, b) return F.conv_transpose3d(x, w, b, 2, 1, 1) end, { r(1, 2, 2, 3, 2), r(2, 2, 3, 2, 3), r(2) } },
      { function(x) return F.unfold(x, { 2, 3 }, { 1, 2 }, 1, { 2, 1 }) end, { r(2, 3, 5, 6) } },
      { function(x) return F.fold(x, { 4, 5 }, 2) end, { r(2, 8, 12) } },
    }
    for i, c in ipairs(cases) do
      assert.is_true(torch.autograd.gradcheck(c[1], c[2]), 'gradcheck ' .. i)
      assert.is_true(torch.autograd.gradgradcheck(c[1], c[2]), 'gradgradcheck ' .. i)
    end
  end)

  it('torch.convolution takes PyTorch\'s arguments', function()
    local x, w, b = det({ 1, 2, 5, 5 }, 0.1), det({ 3, 2, 3, 3 }, 0.7), det({ 3 }, 1.3)
    H.near(torch.convolution(x, w, b, { 2, 2 }, { 1, 1 }, { 1, 1 }, false, { 0, 0 }, 1), F.conv2d(x, w, b, 2, 1), 1e-12)
    local wt = det({ 2, 3, 3, 3 }, 0.7)
    H.near(torch.convolution(x, wt, b, 2, 1, 1, true, 1, 1), F.conv_transpose2d(x, wt, b, 2, 1, 1), 1e-12)
  end)

  it('work on the meta device: shapes only', function()
    local m = { device = 'meta' }
    local x, w = torch.empty({ 2, 3, 10, 9 }, m), torch.empty({ 4, 3, 3, 2 }, m)
    local y = F.conv2d(x, w, torch.empty({ 4 }, m), { 2, 1 }, 1, { 1, 2 })
    assert.are.equal('meta', y.device.type)
    assert.are.same({ 2, 4, 5, 9 }, H.shape(y))
    assert.are.same({ 2, 3, 18, 19 }, H.shape(F.conv_transpose2d(torch.empty({ 2, 4, 8, 9 }, m), w, nil, 2, 0, 1)))
    assert.are.same({ 2, 12, 72 }, H.shape(F.unfold(x, 2)))
    assert.are.same({ 2, 3, 10, 9 }, H.shape(F.fold(torch.empty({ 2, 12, 72 }, m), { 10, 9 }, 2)))
    assert.are.same({ 3, 5 }, H.shape(F.conv1d(torch.empty({ 2, 5 }, m), torch.empty({ 3, 2, 1 }, m))))
    -- gradients too
    local xg = torch.empty({ 2, 3, 6, 6 }, m):requires_grad_()
    local wg = torch.empty({ 4, 3, 3, 3 }, m):requires_grad_()
    F.conv2d(xg, wg, nil, 2):sum():backward()
    assert.are.same({ 2, 3, 6, 6 }, H.shape(xg.grad))
    assert.are.same({ 4, 3, 3, 3 }, H.shape(wg.grad))
    -- a module made on meta, then given memory
    local conv = nn.Conv2d(3, 4, 3, { device = 'meta' })
    assert.are.equal('meta', conv.weight.device.type)
    assert.are.same({ 2, 4, 8, 7 }, H.shape(conv(x)))
  end)

  it('raise PyTorch\'s errors at the caller\'s line', function()
    local x = torch.randn(64, 3, 28, 28)
    local err = H.errors_with(function()
      local y = F.conv2d(x, torch.randn(6, 1, 5, 5))
      return y
    end,
      'moontorch.nn.functional.conv2d: Given groups=1, weight of size [6, 1, 5, 5], expected input[64, 3, 28, 28] ' ..
      'to have 1 channels, but got 3 channels instead')
    assert.truthy(err:find('conv_spec.lua:', 1, true))
    H.errors_with(function() return F.conv2d(torch.randn(2, 3), torch.randn(6, 1, 5, 5)) end,
      'Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [2, 3]')
    H.errors_with(function() return F.conv2d(torch.randn(1, 1, 2, 2), torch.randn(1, 1, 3, 3)) end,
      "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be greater than " ..
      'actual input size')
    H.errors_with(function() return F.conv2d(torch.randn(1, 1, 4, 4), torch.randn(1, 1, 3, 3), nil, 0) end,
      'non-positive stride is not supported')
    H.errors_with(function() return F.conv2d(torch.randn(1, 1, 4, 4), torch.randn(1, 1, 3, 3), nil, 1, -1) end,
      'negative padding is not supported')
    H.errors_with(function() return F.conv2d(torch.randn(1, 1, 4, 4), torch.randn(1, 1, 3, 3), { dilation = 0 }) end,
      'dilation should be greater than zero, but got [0, 0]')
    H.errors_with(function() return F.conv2d(torch.randn(1, 4, 4, 4), torch.randn(3, 2, 3, 3), { groups = 2 }) end,
      'Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [[3, 2, 3, 3]] instead')
    H.errors_with(function() return F.conv2d(torch.randn(1, 4, 4, 4), torch.randn(4, 2, 3, 3), { groups = 0 }) end,
      'non-positive groups is not supported')
    H.errors_with(function() return F.conv2d(torch.randn(1, 4, 4, 4), torch.randn(4, 4, 3, 3), torch.randn(3)) end,
      'Given weight of size [4, 4, 3, 3], expected bias to be 1-dimensional with 4 elements, but got bias of size [3] instead')
    H.errors_with(function() return F.conv2d(torch.randn(1, 4, 4, 4), torch.randn(4, 4, 3, 3), { stride = 2, padding = 'same' }) end,
      "padding='same' is not supported for strided convolutions")
    H.errors_with(function() return F.conv2d(torch.randn(1, 4, 4, 4), torch.randn(4, 4, 3, 3), { padding = 'foo' }) end,
      "Invalid padding string: 'foo'")
    H.errors_with(function() return F.conv2d(torch.randn(1, 4, 4, 4):double(), torch.randn(4, 4, 3, 3)) end,
      'expected scalar type Double but found Float')
    H.errors_with(function() return F.conv2d(torch.randn(1, 4, 4, 4), torch.randn(4, 4, 3, 3), torch.randn(4):double()) end,
      'Input type (float) and bias type (double) should be the same')
    H.errors_with(function() return F.conv_transpose2d(torch.randn(1, 4, 4, 4), torch.randn(3, 2, 3, 3)) end,
      'Given transposed=1, weight of size [3, 2, 3, 3], expected input[1, 4, 4, 4] to have 3 channels, but got 4 ' ..
      'channels instead')
    H.errors_with(function() return F.conv_transpose2d(torch.randn(1, 4, 4, 4), torch.randn(4, 2, 3, 3), nil, 1, 0, 1) end,
      'output padding must be smaller than either stride or dilation')
    H.errors_with(function() return F.conv1d(torch.randn(1, 4, 4, 4), torch.randn(4, 4, 3)) end,
      'Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [1, 4, 4, 4]')
    H.errors_with(function() return F.conv2d(torch.randn(1, 2, 4, 4):long(), torch.randn(1, 2, 3, 3):long()) end,
      "not implemented for 'Long'")
    H.errors_with(function() return F.fold(torch.randn(1, 15, 9), { 4, 4 }, 2) end,
      "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=15 " ..
      'and kernel_size=(2, 2).')
    H.errors_with(function() return F.fold(torch.randn(1, 16, 8), { 4, 4 }, 2) end,
      "Given output_size=(4, 4), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), stride=(1, 1), expected size of " ..
      "input's dimension 2 to match the calculated number of sliding blocks 3 * 3 = 9, but got input.size(2)=8.")
    H.errors_with(function() return F.unfold(torch.randn(1, 4, 4, 4), 5) end,
      'Given input with spatial size (4, 4), kernel_size=(5, 5), dilation=(1, 1), padding=(0, 0), calculated shape of ' ..
      'the array of sliding blocks as (0, 0), but its components must be at least one.')
    H.errors_with(function() return F.unfold(torch.randn(4, 4), 2) end,
      'Input Error: Only 3D or 4D input Tensors are supported (got 2D)')
    H.errors_with(function() return F.conv2d(torch.randn(1, 1, 4, 4), torch.randn(1, 1, 3, 3), nil, { 1, 2, 3 }) end,
      'expected stride to be a single integer value or a list of 2 values')
    H.errors_with(function() return F.conv2d(torch.randn(1, 1, 4, 4), torch.randn(1, 1, 3, 3), nil, 1.5) end, 'stride')
  end)

  it('free everything they make', function()
    local sweep = require('moontorch.tensor').sweep
    collectgarbage()
    sweep()
    local before = live()
    for _ = 1, 3 do
      local x = torch.randn(2, 4, 6, 6):requires_grad_()
      local w = torch.randn(4, 2, 3, 3):requires_grad_()
      local y = F.conv2d(x, w, torch.randn(4), 1, 1, 1, 2):sum() + F.conv_transpose2d(x, w, nil, 1, 1):sum()
      local gx = torch.autograd.grad(y, { x }, { create_graph = true })[1]
      gx:sum():backward()
      F.fold(F.unfold(x, 2), { 6, 6 }, 2):sum():backward()
    end
    collectgarbage()
    sweep()
    assert.are.equal(before, live())
  end)
end)

describe('nn.Conv*, nn.ConvTranspose*', function()
  for _, c in ipairs(W.modules) do
    local label = c.repr
    local function make(opts)
      local kw = {}
      for k, v in pairs(c.kw) do kw[k] = v end
      for k, v in pairs(opts or {}) do kw[k] = v end
      local a = c.args
      return nn[c.cls](a[1], a[2], a[3], kw)
    end
    it('draw PyTorch\'s initial parameters under its seed and print as it does: ' .. label, function()
      torch.manual_seed(c.seed)
      local m = make()
      assert.are.equal(c.repr, tostring(m))
      local sd = m:state_dict()
      local keys = {}
      for i, kv in ipairs(c.state) do
        keys[i] = kv[1]
        local t = sd[kv[1]]
        assert.are.same(kv[2].shape, H.shape(t))
        H.near(t:double():reshape(-1), kv[2].values, 0, 0)
      end
      assert.are.same(keys, sd:keys())
    end)
    it('give PyTorch\'s output and gradients with its state_dict loaded: ' .. label, function()
      local m = make({ dtype = torch.float64 })
      local sd = {}
      for _, kv in ipairs(c.state) do sd[kv[1]] = torch.tensor(kv[2].values, f64):reshape(kv[2].shape) end
      m:load_state_dict(sd)
      local x = det(c.x, 0.1):requires_grad_()
      local y = c.output_size and m(x, c.output_size) or m(x)
      assert.are.same(c.y.shape, H.shape(y))
      H.near(y:reshape(-1), c.y.values, 1e-12, 1e-10)
      ;(y * gy_like(y)):sum():backward()
      H.near(x.grad:reshape(-1), c.gx, 1e-12, 1e-10)
      for _, kv in ipairs(c.grads) do
        local p = m:get_parameter(kv[1])
        H.near(p.grad:reshape(-1), kv[2], 1e-12, 1e-10)
      end
    end)
  end

  it('take their arguments by position or by name, with {device=, dtype=}', function()
    local a = nn.Conv2d(4, 6, 3, 2, 1, 1, 2, false, 'zeros', { dtype = torch.float64 })
    local b = nn.Conv2d(4, 6, 3, { stride = 2, padding = 1, groups = 2, bias = false, dtype = torch.float64 })
    assert.are.equal(tostring(a), tostring(b))
    assert.are.equal(torch.float64, a.weight.dtype)
    assert.are.same({ 6, 2, 3, 3 }, H.shape(a.weight))
    assert.is_nil(a.bias)
    local t = nn.ConvTranspose2d(4, 6, { 3, 2 }, { stride = 2, output_padding = 1, groups = 2, dilation = 2 })
    assert.are.same({ 4, 3, 3, 2 }, H.shape(t.weight))
    assert.are.equal('ConvTranspose2d(4, 6, kernel_size=(3, 2), stride=(2, 2), dilation=(2, 2), output_padding=(1, 1), ' ..
      'groups=2)', tostring(t))
    assert.are.equal('Conv2d(4, 6, kernel_size=(3, 3), stride=(1, 1), padding=valid)', tostring(nn.Conv2d(4, 6, 3,
      { padding = 'valid' })))
    assert.are.equal('Unfold(kernel_size=2, dilation=1, padding=0, stride=1)', tostring(nn.Unfold(2)))
    assert.are.equal('Fold(output_size=(4, 4), kernel_size=2, dilation=1, padding=0, stride=1)',
      tostring(nn.Fold({ 4, 4 }, 2)))
    local x = det({ 1, 3, 4, 4 }, 0.1)
    H.near(nn.Fold({ 4, 4 }, 2)(nn.Unfold(2)(x)), F.fold(F.unfold(x, 2), { 4, 4 }, 2), 0)
    assert.are.same({ 1, 12, 9 }, H.shape(nn.Unfold(2, { padding = 0 })(x)))
  end)

  it('raise PyTorch\'s errors, naming the module', function()
    local err = H.errors_with(function()
      local y = nn.Conv2d(1, 6, 5)(torch.randn(2, 3))
      return y
    end,
      'Conv2d: Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [2, 3]')
    assert.truthy(err:find('conv_spec.lua:', 1, true))
    H.errors_with(function() return nn.Conv2d(1, 6, 5)(torch.randn(64, 3, 28, 28)) end,
      'Given groups=1, weight of size [6, 1, 5, 5], expected input[64, 3, 28, 28] to have 1 channels, but got 3 ' ..
      'channels instead')
    H.errors_with(function() return nn.Conv2d(4, 6, 3, { groups = 4 }) end, 'out_channels must be divisible by groups')
    H.errors_with(function() return nn.Conv2d(3, 6, 3, { groups = 2 }) end, 'in_channels must be divisible by groups')
    H.errors_with(function() return nn.Conv2d(4, 6, 3, { groups = 0 }) end, 'groups must be a positive integer')
    H.errors_with(function() return nn.Conv2d(4, 6, 3, { padding = 'same', stride = 2 }) end,
      "padding='same' is not supported for strided convolutions")
    H.errors_with(function() return nn.Conv2d(4, 6, 3, { padding_mode = 'foo' }) end,
      "padding_mode must be one of {'replicate', 'circular', 'reflect', 'zeros'}, but got padding_mode='foo'")
    H.errors_with(function() return nn.ConvTranspose2d(4, 4, 3, { padding_mode = 'reflect' }) end,
      'Only "zeros" padding mode is supported for ConvTranspose2d')
    H.errors_with(function() return nn.Conv2d(4, 6, 3, { bogus = 1 }) end, "unexpected keyword argument 'bogus'")
    H.errors_with(function() return nn.ConvTranspose2d(2, 3, 3, 2)(torch.randn(1, 2, 3, 3), { 10, 10 }) end,
      'requested an output size of [10, 10], but valid sizes range from [7, 7] to [8, 8] (for an input of [3, 3])')
  end)
end)
