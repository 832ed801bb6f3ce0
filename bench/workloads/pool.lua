-- Pooling as a CNN's training step runs it (issue 12, pooling): forward and backward
-- (torch.autograd.grad of the pooled output with a given gradient) of LeNet-5's two max pools,
-- max_pool2d 2x2 on 64x6x24x24 and on 64x16x8x8 float32, and of an adaptive avg pool
-- 64x512x7x7 -> 1x1 (a ResNet's head): microseconds per forward+backward, best of 5 rounds
-- after a warm-up. Twin: pool in bench/torch_workloads.py.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local F = require('moontorch.nn').functional
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
torch.manual_seed(0)
local grad = torch.autograd.grad

local function bench(key, shape, pool, reps)
  local x = torch.randn(shape):requires_grad_()
  local g = torch.randn(pool(x:detach()):size())
  local function step(k)
    for _ = 1, k do
      local y = pool(x)
      local gx = grad({ y }, { x }, { grad_outputs = { g } })
    end
  end
  B.report(key, B.best(step, reps, 5) * 1e6)
end
bench('lenet_pool1_us', { 64, 6, 24, 24 }, function(x) return F.max_pool2d(x, 2) end, 100)
bench('lenet_pool2_us', { 64, 16, 8, 8 }, function(x) return F.max_pool2d(x, 2) end, 300)
bench('adaptive_avg_us', { 64, 512, 7, 7 }, function(x) return F.adaptive_avg_pool2d(x, 1) end, 50)
B.report('peak_kb', B.peak_kb())
