-- The layer norm and the classifier loss of a training step (issue 12, the modules part):
-- microseconds per call, best of a few rounds after a warm-up.
--   ln_fwd_us:   F.layer_norm of a (1024, 256) float32 input (a transformer's 16 x 64 tokens of
--                width 256) with weight and bias, no grad
--   ln_step_us:  the same forward with grad, then backward to the input, weight and bias
--   ln_composite_step_us: that step with the layer norm written as tensor ops (what
--                F.layer_norm was before the fused op), for comparison
--   ce_step_us:  F.cross_entropy of (128, 10) logits (the MLP's batch) forward and backward
--   ce1k_step_us: the same with 1000 classes
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local F = require('moontorch.nn').functional
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
torch.manual_seed(0)

local x = torch.randn(1024, 256)
local xg = x:clone():requires_grad_()
local w, b = torch.randn(256):requires_grad_(), torch.randn(256):requires_grad_()
local g = torch.randn(1024, 256)
local reps = 200

local function clear() xg.grad, w.grad, b.grad = nil, nil, nil end
B.report('ln_fwd_us', B.best(function(k)
  torch.no_grad(function() for _ = 1, k do local y = F.layer_norm(x, { 256 }, w, b) end end)
end, reps) * 1e6)
B.report('ln_step_us', B.best(function(k)
  for _ = 1, k do
    clear()
    F.layer_norm(xg, { 256 }, w, b):backward(g)
  end
end, reps) * 1e6)
local function composite(t)
  local mean = t:mean(2, { keepdim = true })
  local var = t:var(2, { correction = 0, keepdim = true })
  return (t - mean) * (var + 1e-5):rsqrt() * w + b
end
B.report('ln_composite_step_us', B.best(function(k)
  for _ = 1, k do
    clear()
    composite(xg):backward(g)
  end
end, reps) * 1e6)

local function ce(c)
  local logits = torch.randn(128, c):requires_grad_()
  local target = torch.randint(1, c + 1, { 128 })
  return B.best(function(k)
    for _ = 1, k do
      logits.grad = nil
      F.cross_entropy(logits, target):backward()
    end
  end, 500) * 1e6
end
B.report('ce_step_us', ce(10))
B.report('ce1k_step_us', ce(1000))
B.report('peak_kb', B.peak_kb())
