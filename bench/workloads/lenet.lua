-- One training step of LeNet-5 (conv 1->6 5x5, ReLU, max-pool 2, conv 6->16 5x5, ReLU, max-pool 2,
-- flatten, 256->120->84->10), batch 64 of 1x28x28, cross-entropy, plain SGD: forward, zero_grad,
-- backward, step. Milliseconds per step, best of rounds. Threads: $BENCH_THREADS.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local F = nn.functional
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
torch.manual_seed(0)
local net = nn.Sequential(
  nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
  nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
  nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
local opt = optim.SGD(net:parameters(), { lr = 0.01 })
local x = torch.randn(64, 1, 28, 28)
local y = torch.randint(1, 11, { 64 }) -- class targets are 1-based
local function step()
  local loss = F.cross_entropy(net(x), y)
  opt:zero_grad()
  loss:backward()
  opt:step()
end
local steps = tonumber(arg[1]) or 50
local t = B.best(function(r) for _ = 1, r do step() end end, steps, 5)
B.report('ms', t * 1e3)
B.report('peak_kb', B.peak_kb())
