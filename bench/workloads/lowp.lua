-- Low precision (issue 25), `luajit bench/workloads/lowp.lua` (bench/run.lua's `lowp` section runs it
-- beside bench/torch_workloads.py lowp): milliseconds of
--   f32_step_ms / amp_step_ms: a 784-512-256-10 MLP training step (batch 256, cross-entropy, SGD with
--     momentum), float32 and under bfloat16 autocast (torch.autocast('cpu'));
--   f32_infer_ms / qdyn_infer_ms: the same MLP's inference at batch 128, float32 and after
--     quantize_dynamic(model, {nn.Linear}, torch.qint8);
--   lenet_f32_ms / lenet_q_ms: LeNet-5 (the demo's) inference of 1000 images, float32 and statically
--     quantized (fused conv-relu / linear-relu, x86 qconfig, calibrated on 8 batches);
-- and bf16_gflops / f32_gflops: a 1024x1024x1024 product in bfloat16 and float32. Threads: $BENCH_THREADS.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local F = nn.functional
local Q = torch.quantization
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
torch.manual_seed(0)

local function mlp() return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)) end
local net = mlp()
local opt = optim.SGD(net:parameters(), { lr = 0.01, momentum = 0.9 })
local x, y = torch.randn(256, 784), torch.randint(1, 11, { 256 })
local function step32()
  local loss = F.cross_entropy(net(x), y)
  opt:zero_grad(); loss:backward(); opt:step()
end
local ac = torch.autocast('cpu', { dtype = torch.bfloat16 })
local function stepamp()
  ac:__enter()
  local ok, loss = pcall(function() return F.cross_entropy(net(x), y) end)
  ac:__exit()
  assert(ok, loss)
  opt:zero_grad(); loss:backward(); opt:step()
end
local function loop(f) return function(k) for _ = 1, k do f() end end end
-- the two alternate, so that a noisy moment of a shared machine falls on both
local best32, bestamp = math.huge, math.huge
for _ = 1, 3 do
  best32 = math.min(best32, B.best(loop(step32), 10, 3))
  bestamp = math.min(bestamp, B.best(loop(stepamp), 10, 3))
end
B.report('f32_step_ms', best32 * 1e3)
B.report('amp_step_ms', bestamp * 1e3)

local inf = mlp():eval()
local xi = torch.randn(128, 784)
local qinf = Q.quantize_dynamic(inf, { nn.Linear }, torch.qint8)
local f32i = torch.no_grad.wrap(function(k) for _ = 1, k do inf(xi) end end)
local qi = torch.no_grad.wrap(function(k) for _ = 1, k do qinf(xi) end end)
local bf, bq = math.huge, math.huge
for _ = 1, 3 do
  bf = math.min(bf, B.best(f32i, 20, 3))
  bq = math.min(bq, B.best(qi, 20, 3))
end
B.report('f32_infer_ms', bf * 1e3)
B.report('qdyn_infer_ms', bq * 1e3)

local lenet = nn.Sequential(Q.QuantStub(), nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
  nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10),
  Q.DeQuantStub()):eval()
local imgs = torch.randn(1000, 1, 28, 28)
lenet.qconfig = Q.get_default_qconfig('x86')
local fused = Q.fuse_modules(lenet, { { '1', '2' }, { '4', '5' }, { '8', '9' }, { '10', '11' } })
local prepared = Q.prepare(fused)
for i = 0, 7 do prepared(imgs:narrow(1, i * 64 + 1, 64)) end
local qlenet = Q.convert(prepared)
local lf = torch.no_grad.wrap(function(k) for _ = 1, k do lenet(imgs) end end)
local lq = torch.no_grad.wrap(function(k) for _ = 1, k do qlenet(imgs) end end)
local blf, blq = math.huge, math.huge
for _ = 1, 3 do
  blf = math.min(blf, B.best(lf, 3, 2))
  blq = math.min(blq, B.best(lq, 3, 2))
end
B.report('lenet_f32_ms', blf * 1e3)
B.report('lenet_q_ms', blq * 1e3)

local a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
local ab, bb = a:bfloat16(), b:bfloat16()
local tf = B.best(function(k) for _ = 1, k do a:matmul(b) end end, 5, 3)
local tb = B.best(function(k) for _ = 1, k do ab:matmul(bb) end end, 5, 3)
B.report('f32_gflops', 2 * 1024 ^ 3 / tf / 1e9)
B.report('bf16_gflops', 2 * 1024 ^ 3 / tb / 1e9)
B.report('peak_kb', B.peak_kb())
