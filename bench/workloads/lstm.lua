-- A 2-layer LSTM (input 128, hidden 256, batch_first), sequences of 32 steps, batch 32: forward,
-- zero_grad, backward of the outputs' sum. Milliseconds per step, best of rounds. Threads:
-- $BENCH_THREADS. Its PyTorch twin is lstm() in bench/torch_workloads.py.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
torch.manual_seed(0)
local m = nn.LSTM(128, 256, { num_layers = 2, batch_first = true })
local x = torch.randn(32, 32, 128)
local function step()
  local out = m(x)
  m:zero_grad()
  out:sum():backward()
end
local steps = tonumber(arg[1]) or 20
local t = B.best(function(r) for _ = 1, r do step() end end, steps, 5)
B.report('ms', t * 1e3)
B.report('peak_kb', B.peak_kb())
