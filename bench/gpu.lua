-- bench/gpu.lua: moontorch's GPU benchmark rows (issues 21 and 22), printed as `key value` lines; its
-- PyTorch twin is bench/gpu_torch.py, and ./run gpu-check runs both on one GPU in one call. Each figure is
-- the median of 5 repeats of N steps with one synchronize at the end (fp32, TF32 off); N is cut so that
-- a repeat takes about BENCH_ROW_S seconds (0.4) at most, so a slow row never eats the check's time:
--   add4_us, add4_grad_us      a + b on 4 elements, without and with autograd (microseconds an op)
--   matmul64_us                a 64x64 float32 matmul
--   modules_loop_us            one iteration of the Modules note's training loop (MyLinear 4-3, ReLU,
--                              MyLinear 3-1, abs loss, SGD momentum + weight decay), its input drawn on the GPU
--   mlp_step_ms, mlp_infer_ms  MLP 784-512-256-10, batch 128: one train step (cross entropy, SGD momentum);
--                              the forward alone under no_grad
--   lenet_step_ms              LeNet-5, batch 64: one train step (SGD momentum)
--   resnet_block_ms            ResNet basic block (2x conv 3x3, 64 channels, 56x56, batch 32, BN, ReLU,
--                              residual): forward + backward of the sum
--   lstm2_ms                   LSTM, 2 layers, hidden 256, seq 32, batch 32: forward + backward
--   transformer_ms             TransformerEncoderLayer d 256, 4 heads, ff 1024, seq 64, batch 16: fwd + bwd
--   sgemm_tflops               4096^3 float32 matmul (BENCH_GEMM_N)
-- A row that fails prints `error <key> <message>` and the others go on.
-- BENCH_SCALE (default 1) divides the step counts; BENCH_TINY=1 shrinks every shape (a smoke test of the
-- code on the CPU emulator: MOONTORCH_CUDA_EMULATE=1); BENCH_ROWS=a,b runs only those rows.
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
local row_s = tonumber(os.getenv('BENCH_ROW_S') or '0.4')
local tiny = os.getenv('BENCH_TINY') == '1'
local only
if os.getenv('BENCH_ROWS') and os.getenv('BENCH_ROWS') ~= '' then
  only = {}
  for k in os.getenv('BENCH_ROWS'):gmatch('[^,%s]+') do only[k] = true end
end
local dev = 'cuda'
if not torch.cuda.is_available() then
  io.stderr:write('bench/gpu.lua: no CUDA device (' .. (torch.config():match('CUDA: ([^\n]*)') or '?') .. ')\n')
  os.exit(2)
end
torch.backends.cuda.matmul.allow_tf32 = false

-- median seconds of one of n runs of f (5 repeats after a warm-up; n cut to about row_s seconds a repeat)
local function median(n, f)
  n = math.max(1, math.floor(n / scale))
  f()
  torch.cuda.synchronize()
  local t0 = now()
  for _ = 1, math.min(n, 3) do f() end
  torch.cuda.synchronize()
  local one = (now() - t0) / math.min(n, 3)
  n = math.max(1, math.min(n, math.floor(row_s / math.max(one, 1e-9))))
  local t = {}
  for r = 1, 5 do
    t0 = now()
    for _ = 1, n do f() end
    torch.cuda.synchronize()
    t[r] = (now() - t0) / n
    collectgarbage('step', 0)
  end
  table.sort(t)
  return t[3]
end

local function out(k, v) io.write(('%s %.6g\n'):format(k, v)) io.flush() end
-- row(keys, f): f returns the figures of keys (in order); an error is printed and the next row runs
local function row(keys, f)
  if type(keys) == 'string' then keys = { keys } end
  if only then
    local any = false
    for _, k in ipairs(keys) do any = any or only[k] end
    if not any then return end
  end
  local r = { pcall(f) }
  if not r[1] then
    io.write(('error %s %s\n'):format(keys[1], (tostring(r[2]):gsub('%s+', ' '))))
    io.flush()
    return
  end
  for i, k in ipairs(keys) do out(k, r[i + 1]) end
end
local function sz(big, small) return tiny and small or big end

print('device ' .. torch.cuda.get_device_name():gsub(' ', '_') .. '')
print('runtime ' .. tostring(torch.cuda.runtime()))

row({ 'add4_us', 'add4_grad_us' }, function()
  local a, b = torch.rand(4, { device = dev }), torch.rand(4, { device = dev })
  local plain = median(20000, function() local _ = a + b end) * 1e6
  local ag, bg = a:clone():requires_grad_(), b:clone():requires_grad_()
  return plain, median(20000, function() local _ = ag + bg end) * 1e6
end)

row('matmul64_us', function()
  local a, b = torch.randn(64, 64, { device = dev }), torch.randn(64, 64, { device = dev })
  return median(10000, function() local _ = a:mm(b) end) * 1e6
end)

row('modules_loop_us', function()
  -- the Modules note's MyLinear and Net
  local MyLinear, Module = torch.class('BenchGpuMyLinear', 'nn.Module')
  function MyLinear:__init(i, o)
    Module.__init(self)
    self.weight = nn.Parameter(torch.randn(i, o))
    self.bias = nn.Parameter(torch.randn(o))
  end
  function MyLinear:forward(x) return x:matmul(self.weight) + self.bias end
  torch.manual_seed(0)
  local net = nn.Sequential(MyLinear(4, 3), nn.ReLU(), MyLinear(3, 1)):to(dev)
  local optimizer = torch.optim.SGD(net:parameters(), { lr = 1e-4, weight_decay = 1e-2, momentum = 0.9 })
  return median(5000, function()
    local input = torch.randn(4, { device = dev })
    local loss = torch.abs(net(input))
    net:zero_grad()
    loss:backward()
    optimizer:step()
  end) * 1e6
end)

row({ 'mlp_step_ms', 'mlp_infer_ms' }, function()
  torch.manual_seed(0)
  torch.cuda.manual_seed(0)
  local mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)):to(dev)
  local opt = torch.optim.SGD(mlp:parameters(), { lr = 0.01, momentum = 0.9 })
  local x, y = torch.randn(128, 784, { device = dev }), torch.randint(1, 11, { 128 }, { device = dev })
  local step = median(300, function()
    opt:zero_grad()
    local loss = F.cross_entropy(mlp(x), y)
    loss:backward()
    opt:step()
  end) * 1e3
  local infer = torch.no_grad(function() return median(1000, function() local _ = mlp(x) end) end) * 1e3
  return step, infer
end)

row('lenet_step_ms', function()
  local lenet = nn.Sequential(nn.Conv2d(1, 6, 5, { padding = 2 }), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5),
    nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
    nn.Linear(84, 10)):to(dev)
  local lopt = torch.optim.SGD(lenet:parameters(), { lr = 0.01, momentum = 0.9 })
  local n = sz(64, 2)
  local lx, ly = torch.randn(n, 1, 28, 28, { device = dev }), torch.randint(1, 11, { n }, { device = dev })
  return median(200, function()
    lopt:zero_grad()
    local loss = F.cross_entropy(lenet(lx), ly)
    loss:backward()
    lopt:step()
  end) * 1e3
end)

row('resnet_block_ms', function()
  local c, hw, n = sz(64, 4), sz(56, 8), sz(32, 2)
  local conv1, bn1 = nn.Conv2d(c, c, 3, { padding = 1, bias = false }):to(dev), nn.BatchNorm2d(c):to(dev)
  local conv2, bn2 = nn.Conv2d(c, c, 3, { padding = 1, bias = false }):to(dev), nn.BatchNorm2d(c):to(dev)
  local x = torch.randn(n, c, hw, hw, { device = dev, requires_grad = true })
  return median(50, function()
    local h = F.relu(bn1(conv1(x)))
    local o = F.relu(bn2(conv2(h)) + x)
    o:sum():backward()
  end) * 1e3
end)

row('lstm2_ms', function()
  local h, seq, n = sz(256, 8), sz(32, 3), sz(32, 2)
  local lstm = nn.LSTM(h, h, { num_layers = 2 }):to(dev)
  local x = torch.randn(seq, n, h, { device = dev, requires_grad = true })
  return median(50, function()
    local o = lstm(x)
    o:sum():backward()
  end) * 1e3
end)

row('transformer_ms', function()
  local d, heads, ff, seq, n = sz(256, 8), sz(4, 2), sz(1024, 16), sz(64, 4), sz(16, 2)
  local layer = nn.TransformerEncoderLayer(d, heads, { dim_feedforward = ff }):to(dev)
  local x = torch.randn(seq, n, d, { device = dev, requires_grad = true })
  return median(50, function()
    layer(x):sum():backward()
  end) * 1e3
end)

row('sgemm_tflops', function()
  local n = tonumber(os.getenv('BENCH_GEMM_N') or sz(4096, 64))
  local ga, gb = torch.randn(n, n, { device = dev }), torch.randn(n, n, { device = dev })
  local t = median(20, function() local _ = ga:mm(gb) end)
  return 2 * n ^ 3 / t / 1e12
end)
