-- The softmax family of a training step (s6-vec, issue 12's speed): microseconds per call, best of a
-- few rounds after a warm-up.
--   sm_fwd_us:    F.softmax over the last dim of (16, 4, 64, 64) float32 (a transformer's attention
--                 scores: batch 16, 4 heads, 64 x 64), no grad
--   sm_step_us:   the same forward with grad, then backward with a given output gradient
--   lsm_fwd_us:   F.log_softmax over the 1000 classes of (128, 1000) float32, no grad
--   sm_dim1_step_us: F.softmax over dim 2 (PyTorch's dim 1, the channels) of (32, 64, 32, 32) float32,
--                 forward + backward (a softmax over an inner dim)
--   ce1k_step_us: F.cross_entropy of (128, 1000) logits forward and backward
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local F = require('moontorch.nn').functional
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
torch.manual_seed(0)

local x = torch.randn(16, 4, 64, 64)
local xg = x:clone():requires_grad_()
local g = torch.randn(16, 4, 64, 64)
B.report('sm_fwd_us', B.best(function(k)
  torch.no_grad(function() for _ = 1, k do local y = F.softmax(x, -1) end end)
end, 100) * 1e6)
B.report('sm_step_us', B.best(function(k)
  for _ = 1, k do
    xg.grad = nil
    F.softmax(xg, -1):backward(g)
  end
end, 100) * 1e6)

local logits = torch.randn(128, 1000)
B.report('lsm_fwd_us', B.best(function(k)
  torch.no_grad(function() for _ = 1, k do local y = F.log_softmax(logits, 2) end end)
end, 500) * 1e6)

local c = torch.randn(32, 64, 32, 32):requires_grad_()
local gc = torch.randn(32, 64, 32, 32)
B.report('sm_dim1_step_us', B.best(function(k)
  for _ = 1, k do
    c.grad = nil
    F.softmax(c, 2):backward(gc)
  end
end, 50) * 1e6)

local lg = torch.randn(128, 1000):requires_grad_()
local target = torch.randint(1, 1001, { 128 })
B.report('ce1k_step_us', B.best(function(k)
  for _ = 1, k do
    lg.grad = nil
    F.cross_entropy(lg, target):backward()
  end
end, 500) * 1e6)
B.report('peak_kb', B.peak_kb())
