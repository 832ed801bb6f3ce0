-- bench/gpu.lua: moontorch's GPU benchmark rows (issues 21 and 22), printed as `key value` lines; its
-- PyTorch twin is bench/gpu_torch.py, and ./run gpu-check runs both on one GPU in one call. Each figure is
-- the median of 5 repeats of N steps with one synchronize at the end (fp32, TF32 off):
--   add4_us, add4_grad_us      a + b on 4 elements, without and with autograd (microseconds an op)
--   mlp_step_ms                MLP 784-512-256-10, batch 128, cross entropy, SGD momentum: one train step
--   lenet_step_ms              LeNet-5, batch 64: one train step (SGD momentum)
--   sgemm_tflops               4096^3 float32 matmul
-- BENCH_SCALE (default 1) divides the step counts (the CPU emulator smoke-tests it with a large one).
package.path = (os.getenv('MOONTORCH_BUILD_DIR') or 'build') .. '/lua/?.lua;' ..
  (os.getenv('MOONTORCH_BUILD_DIR') or 'build') .. '/lua/?/init.lua;' .. package.path
package.cpath = (os.getenv('MOONTORCH_BUILD_DIR') or 'build') .. '/lib/?.so;' .. package.cpath
local torch = require 'moontorch'
local nn, F = torch.nn, torch.nn.functional
local ffi = require 'ffi'
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } bench_gpu_timespec;
int clock_gettime(int clk, bench_gpu_timespec *ts);
]]
local ts = ffi.new('bench_gpu_timespec')
local function now()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end
local scale = tonumber(os.getenv('BENCH_SCALE') or '1')
local dev = 'cuda'
assert(torch.cuda.is_available(), 'bench/gpu.lua: no CUDA device')
torch.backends.cuda.matmul.allow_tf32 = false

-- median seconds of one of n runs of f (5 repeats, a warm-up first)
local function median(n, f)
  n = math.max(1, math.floor(n / scale))
  for _ = 1, math.min(n, 3) do f() end
  torch.cuda.synchronize()
  local t = {}
  for r = 1, 5 do
    local t0 = now()
    for _ = 1, n do f() end
    torch.cuda.synchronize()
    t[r] = (now() - t0) / n
    collectgarbage('step', 0)
  end
  table.sort(t)
  return t[3]
end

local function out(k, v) io.write(('%s %.6g\n'):format(k, v)) io.flush() end

print('device ' .. torch.cuda.get_device_name():gsub(' ', '_'))
-- a + b on 4 elements
local a, b = torch.rand(4, { device = dev }), torch.rand(4, { device = dev })
out('add4_us', median(20000, function() local _ = a + b end) * 1e6)
local ag, bg = a:clone():requires_grad_(), b:clone():requires_grad_()
out('add4_grad_us', median(20000, function() local _ = ag + bg end) * 1e6)

-- the MLP train step
torch.manual_seed(0)
torch.cuda.manual_seed(0)
local mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)):to(dev)
local opt = torch.optim.SGD(mlp:parameters(), { lr = 0.01, momentum = 0.9 })
local x, y = torch.randn(128, 784, { device = dev }), torch.randint(1, 11, { 128 }, { device = dev })
local function mlp_step()
  opt:zero_grad()
  local loss = F.cross_entropy(mlp(x), y)
  loss:backward()
  opt:step()
end
out('mlp_step_ms', median(300, mlp_step) * 1e3)

-- the LeNet-5 train step
local lenet = nn.Sequential(nn.Conv2d(1, 6, 5, { padding = 2 }), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5),
  nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
  nn.Linear(84, 10)):to(dev)
local lopt = torch.optim.SGD(lenet:parameters(), { lr = 0.01, momentum = 0.9 })
local lx, ly = torch.randn(64, 1, 28, 28, { device = dev }), torch.randint(1, 11, { 64 }, { device = dev })
local function lenet_step()
  lopt:zero_grad()
  local loss = F.cross_entropy(lenet(lx), ly)
  loss:backward()
  lopt:step()
end
out('lenet_step_ms', median(200, lenet_step) * 1e3)

-- sgemm 4096^3
local n = tonumber(os.getenv('BENCH_GEMM_N') or '4096')
local ga, gb = torch.randn(n, n, { device = dev }), torch.randn(n, n, { device = dev })
local t = median(20, function() local _ = ga:mm(gb) end)
out('sgemm_tflops', 2 * n ^ 3 / t / 1e12)
