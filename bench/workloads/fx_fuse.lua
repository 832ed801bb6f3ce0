-- issue 24: inference (no grad, eval mode) of a ResNet basic block (64 channels, batch 8 of 56x56)
-- and of a LeNet-5 with a BatchNorm after each conv (batch 64 of 1x28x28), as written and after
-- moontorch.fx's conv-batchnorm fusion (fx.passes.fuse). Milliseconds per forward, best of
-- rounds, the two alternating. Threads: $BENCH_THREADS.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local fx = require 'moontorch.fx'
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
torch.manual_seed(0)

local Block, Module = torch.class('bench.Block', 'nn.Module')
function Block:__init(c)
  Module.__init(self)
  self.conv1 = nn.Conv2d(c, c, 3, { padding = 1, bias = false })
  self.bn1 = nn.BatchNorm2d(c)
  self.relu = nn.ReLU()
  self.conv2 = nn.Conv2d(c, c, 3, { padding = 1, bias = false })
  self.bn2 = nn.BatchNorm2d(c)
end
function Block:forward(x)
  local out = self.relu(self.bn1(self.conv1(x)))
  out = self.bn2(self.conv2(out))
  return self.relu(out + x)
end

local function bench(name, model, x, reps)
  -- running statistics of a few training batches, then eval
  model:train()
  torch.no_grad(function(k) for _ = 1, k do model(x) end end)(2)
  model:eval()
  local fused = fx.passes.fuse(model)
  local err = torch.no_grad(function(a) return (fused(a) - model(a)):abs():max():item() end)(x)
  local f1 = torch.no_grad(function(r) for _ = 1, r do model(x) end end)
  local f2 = torch.no_grad(function(r) for _ = 1, r do fused(x) end end)
  local t1, t2 = math.huge, math.huge
  for _ = 1, 3 do
    t1 = math.min(t1, B.best(f1, reps, 3))
    t2 = math.min(t2, B.best(f2, reps, 3))
  end
  B.report(name .. '_ms', t1 * 1e3)
  B.report(name .. '_fused_ms', t2 * 1e3)
  B.report(name .. '_maxdiff', err)
end

bench('block', Block(64), torch.randn(8, 64, 56, 56), 3)
local lenet = nn.Sequential(nn.Conv2d(1, 6, 5), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
  nn.Conv2d(6, 16, 5), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
  nn.Linear(256, 120), nn.BatchNorm1d(120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
bench('lenet', lenet, torch.randn(64, 1, 28, 28), 20)
B.report('peak_kb', B.peak_kb())
