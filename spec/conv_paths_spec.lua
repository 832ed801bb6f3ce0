-- spec/conv_paths_spec.lua: every way a float32 convolution can be computed gives the right numbers
-- (issue 27 part 3 "Speed"; core/tensor/conv.c, core/tensor/onednn.c): oneDNN's Winograd and direct
-- primitives (MT_CONV unset or `direct`), moontorch's own im2col + matrix products (MT_CONV=own, float64,
-- small channel counts, a machine without oneDNN), each at every level of moontorch's own kernels
-- (MOONTORCH_VMATH: scalar, AVX2, AVX-512, where this CPU has them). The reference is the same
-- convolution in float64 (moontorch's own kernels, whose float64 results equal PyTorch 1.13's: see
-- spec/conv_spec.lua); errors are relative to the largest magnitude of the reference.
local H = require 'spec.support.helper'
local torch = H.torch

-- The cases: F.conv*(x, w, {bias, kw...}) or F.conv_transpose*, forward and both gradients. The
-- ones with 16+ channels per group take oneDNN where it is present; 3x3 stride 1 with 32+ output tiles
-- of 4x4 take its Winograd algorithm unless MT_CONV=direct.
local script = [==[
local torch = require 'moontorch'
local F = require('moontorch.nn').functional
torch.manual_seed(1)
local cases = {
  { x = { 4, 64, 14, 14 }, w = { 64, 64, 3, 3 }, kw = { padding = 1 } },               -- Winograd (64 tiles)
  { x = { 1, 32, 28, 28 }, w = { 48, 32, 3, 3 }, kw = { padding = 1 } },               -- Winograd (49 tiles)
  { x = { 2, 16, 9, 9 }, w = { 32, 16, 3, 3 }, kw = { padding = 1 } },                 -- direct (18 tiles)
  { x = { 3, 32, 12, 12 }, w = { 16, 32, 3, 3 }, kw = { padding = 1, stride = 2 } },
  { x = { 2, 32, 10, 11 }, w = { 32, 16, 3, 3 }, kw = { padding = 2, dilation = 2, groups = 2 } },
  { x = { 2, 16, 8, 8 }, w = { 32, 16, 3, 3 }, kw = { stride = 2 } },                  -- right padding < left
  { x = { 2, 16, 20 }, w = { 16, 16, 5 }, kw = { padding = 2 } },
  { x = { 2, 16, 5, 6, 7 }, w = { 16, 16, 3, 3, 3 }, kw = { padding = 1 } },
  { x = { 2, 32, 7, 7 }, w = { 32, 16, 3, 3 }, kw = { padding = 1, stride = 2, output_padding = 1 }, tr = true },
  { x = { 2, 32, 7, 7 }, w = { 32, 8, 4, 4 }, kw = { padding = 1, stride = 2, groups = 2 }, tr = true },
  { x = { 2, 3, 12, 12 }, w = { 8, 3, 5, 5 }, kw = {} },                               -- own kernels (3 channels)
  { x = { 2, 32, 6, 6 }, w = { 32, 32, 1, 1 }, kw = {} },                              -- own kernels (1x1)
}
local worst = { y = 0, gx = 0, gw = 0, gb = 0 }
for _, c in ipairs(cases) do
  local nsp = #c.x - 2
  local x64 = torch.randn(c.x, { dtype = torch.float64 })
  local fan = c.w[2]
  for i = 3, #c.w do fan = fan * c.w[i] end
  local w64 = torch.randn(c.w, { dtype = torch.float64 }) * math.sqrt(2 / fan)
  local cout = c.tr and c.w[2] * (c.kw.groups or 1) or c.w[1]
  local b64 = torch.randn({ cout }, { dtype = torch.float64 })
  local fn = (c.tr and 'conv_transpose' or 'conv') .. nsp .. 'd'
  local function go(dt)
    local x, w = x64:to(dt):clone():requires_grad_(), w64:to(dt):clone():requires_grad_()
    local b = b64:to(dt):clone():requires_grad_()
    local kw = { bias = b }
    for k, v in pairs(c.kw) do kw[k] = v end
    local y = F[fn](x, w, kw)
    local g = (torch.arange(y:numel(), { dtype = torch.float64 }) * 0.23):cos():reshape(y:size()):to(dt)
    y:backward(g)
    return { y = y, gx = x.grad, gw = w.grad, gb = b.grad }
  end
  local r64, r32 = go(torch.float64), go(torch.float32)
  for k in pairs(worst) do
    local e = (r32[k]:double() - r64[k]):abs():max():item() / r64[k]:abs():max():item()
    if e > worst[k] then worst[k] = e end
  end
end
io.write(('y %.3g gx %.3g gw %.3g gb %.3g'):format(worst.y, worst.gx, worst.gw, worst.gb))
]==]

local function run(env)
  local out, ok, err = H.run_lua(script, env)
  assert(ok, err)
  assert.equal('', err) -- nothing on stderr, whichever path runs
  local r = {}
  for k, v in out:gmatch('(%a+) (%S+)') do r[k] = tonumber(v) end
  assert(r.y and r.gx and r.gw and r.gb, 'unexpected output: ' .. out)
  return r
end

describe('float32 convolutions on every path', function()
  local levels = {}
  for level, have in pairs(H.cpu_levels()) do
    if have then levels[#levels + 1] = level end
  end
  table.sort(levels)
  for _, mode in ipairs({ 'auto', 'direct', 'own' }) do
    for _, level in ipairs(levels) do
      it(('MT_CONV=%s, kernels %s: output and gradients within float32 rounding of float64'):format(mode, level),
        function()
          local env = { 'MOONTORCH_VMATH=' .. (level == 'scalar' and '0' or level) }
          if mode ~= 'auto' then env[#env + 1] = 'MT_CONV=' .. mode end
          local r = run(env)
          -- direct sums: a few units of float32's 6e-8 relative to the largest value; Winograd's
          -- transforms add cancellation: about 10x that (measured 1e-6 to 2e-6 here)
          local tol = mode == 'auto' and 1e-5 or 3e-6
          for k, v in pairs(r) do assert(v < tol, ('%s: relative error %.3g above %g'):format(k, v, tol)) end
        end)
    end
  end

  it('a machine without oneDNN runs its own kernels, says so, and prints nothing', function()
    local r = run({ 'MT_ONEDNN_LIB=/nonexistent/libdnnl.so' })
    for k, v in pairs(r) do assert(v < 3e-6, ('%s: relative error %.3g'):format(k, v)) end
    local out, ok, err = H.run_lua([[io.write(require('moontorch').config())]], { 'MT_ONEDNN_LIB=/nonexistent/libdnnl.so' })
    assert(ok, err)
    assert.equal('', err)
    assert.truthy(out:find("float32 convolutions: moontorch's own", 1, true))
  end)

  it('a forked child (a DataLoader worker) convolves on its own kernels: oneDNN\'s threads do not survive fork', function()
    local out, ok, err = H.run_lua([[
      local ffi = require 'ffi'
      ffi.cdef 'int fork(void); int waitpid(int pid, int *status, int options); void _exit(int status);'
      local torch = require 'moontorch'
      local F = require('moontorch.nn').functional
      torch.manual_seed(0)
      local x, w = torch.randn(2, 32, 12, 12), torch.randn(32, 32, 3, 3) * 0.1
      local y = F.conv2d(x, w, nil, { padding = 1 }) -- oneDNN loaded and its threads started here
      local pid = ffi.C.fork()
      if pid == 0 then
        local y2 = F.conv2d(x, w, nil, { padding = 1 })
        ffi.C._exit((y2 - y):abs():max():item() < 1e-4 and 0 or 3)
      end
      local st = ffi.new('int[1]')
      ffi.C.waitpid(pid, st, 0)
      io.write('child ', st[0])
    ]])
    assert(ok, err)
    assert.equal('child 0', out)
  end)

  it('torch.config() names the convolutions\' path and MT_CONV=own is honoured', function()
    local out, ok, err = H.run_lua([[io.write(require('moontorch').config())]], { 'MT_CONV=own' })
    assert(ok, err)
    assert.truthy(out:find("float32 convolutions: moontorch's own (im2col and matrix products), MT_CONV=own", 1, true))
    assert.truthy(torch.config():find('float32 convolutions:', 1, true))
  end)

  it('oneDNN and the own kernels agree on a ResNet block, forward and backward (in this process)', function()
    -- the default path of this process, against the float64 result
    local nn = require 'moontorch.nn'
    torch.manual_seed(5)
    local conv = nn.Conv2d(64, 64, 3, { padding = 1 })
    local x = torch.randn(2, 64, 28, 28):requires_grad_()
    local y = conv(x)
    y:sum():backward()
    local c64 = nn.Conv2d(64, 64, 3, { padding = 1, dtype = torch.float64 })
    c64.weight.data:copy_(conv.weight.data)
    c64.bias.data:copy_(conv.bias.data)
    local x64 = x:detach():double():requires_grad_()
    local y64 = c64(x64)
    y64:sum():backward()
    H.near(y:double(), y64, 1e-5 * y64:abs():max():item(), 0)
    H.near(x.grad:double(), x64.grad, 1e-5 * x64.grad:abs():max():item(), 0)
    H.near(conv.weight.grad:double(), c64.weight.grad, 1e-5 * c64.weight.grad:abs():max():item(), 0)
    H.near(conv.bias.grad:double(), c64.bias.grad, 1e-9, 1e-6)
  end)
end)
