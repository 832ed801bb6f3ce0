-- Issue 26's measure: LeNet-5 inference at batch 1 (1x28x28, eval) run by the C runner
-- (torch.export, then build/bin/moontorch-run --repeat: mt_program_run in a process without Lua),
-- and the same module called from Lua under no_grad, for comparison. Microseconds per inference.
-- Threads: $BENCH_THREADS (MT_NUM_THREADS for the runner).
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local threads = tonumber(os.getenv('BENCH_THREADS') or 2)
torch.set_num_threads(threads)
torch.manual_seed(0)
local net = nn.Sequential(
  nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
  nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
  nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10)):eval()
local x = torch.randn(1, 1, 28, 28)
local reps = tonumber(arg[1]) or 2000
local dir = os.tmpname()
torch.export(net, { x }, dir .. '.mtp')
torch.save_safetensors({ input = x }, dir .. '.safetensors')
local build = os.getenv('MOONTORCH_BUILD_DIR') or 'build'
local best = math.huge
for _ = 1, 5 do
  local p = io.popen(('MT_NUM_THREADS=%d %s/bin/moontorch-run %s.mtp %s.safetensors --quiet --repeat %d 2>&1')
    :format(threads, build, dir, dir, reps))
  local out = p:read('*a')
  p:close()
  local us = tonumber(out:match('runs: ([%d.]+) us a run'))
  if not us then error('moontorch-run failed: ' .. out) end
  best = math.min(best, us)
end
os.remove(dir); os.remove(dir .. '.mtp'); os.remove(dir .. '.safetensors')
B.report('runner_us', best)
local t = B.best(function(r) torch.no_grad(function() for _ = 1, r do net(x) end end) end, reps, 5)
B.report('lua_us', t * 1e6)
