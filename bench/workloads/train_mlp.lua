-- One training step of a 784-512-256-10 MLP (nn.Linear, ReLU), batch 128, cross-entropy, SGD with
-- momentum 0.9: forward, zero_grad, backward, step. Milliseconds per step, best of rounds; then
-- inference (the forward of the same batch under no_grad, `infer_ms`) and the peak resident memory.
-- Threads: $BENCH_THREADS.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local F = nn.functional
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
torch.manual_seed(0)
local net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
local opt = optim.SGD(net:parameters(), { lr = 0.01, momentum = 0.9 })
local x = torch.randn(128, 784)
local y = torch.randint(1, 11, { 128 }) -- class targets are 1-based
local function step()
  local loss = F.cross_entropy(net(x), y)
  opt:zero_grad()
  loss:backward()
  opt:step()
end
local steps = tonumber(arg[1]) or 50
local forward = torch.no_grad(function(r) for _ = 1, r do local out = net(x) end end)
local infer = B.best(forward, steps, 5)
B.report('infer_ms', infer * 1e3)
B.report_loop('ms', 1e3, step, steps, 5)
