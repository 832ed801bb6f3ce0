-- DataLoader with worker processes (issue 27, part 5): a dataset whose __getitem does 1 ms of Lua
-- work (a loop calibrated first in this process, on one core) and returns a 3x32x32 float32 image
-- and a label; 512 samples in batches of 16, one pass, worker start-up included. Arg: num_workers.
-- Reports ms per batch (best of 3 passes) and the calibration (loop turns per ms).
local B = require 'bench.workloads.common'
local torch = require 'moontorch'
local data = torch.utils.data
local workers = tonumber(arg[1]) or 0
torch.set_num_threads(1)

local function spin(n)
  local x = 1
  for _ = 1, n do x = (x * 1103515245 + 12345) % 2147483648 end
  return x
end
-- turns of spin per millisecond: the best of a few timed runs
local turns = 200000
spin(turns)
local best = math.huge
for _ = 1, 5 do
  local t0 = B.now()
  spin(turns)
  best = math.min(best, B.now() - t0)
end
local per_ms = math.floor(turns / (best * 1e3))

local Work = torch.class('bench.Work', data.Dataset)
function Work:__len() return 512 end
function Work:__getitem(i)
  spin(per_ms)
  return { torch.full({ 3, 32, 32 }, i), i % 10 }
end

local ds = Work()
local function pass()
  local n = 0
  for x, y in data.DataLoader(ds, { batch_size = 16, num_workers = workers })() do n = n + x:size(1) end
  assert(n == 512)
end
local t = B.best(function() pass() end, 1, 3)
B.report('ms_per_batch', t * 1e3 / 32)
B.report('turns_per_ms', per_ms)
B.report('peak_kb', B.peak_kb())
