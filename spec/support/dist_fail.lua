-- What goes wrong across ranks, in an mpirun job run by spec/distributed_spec.lua:
--   mismatch  DDP over models that differ between ranks (counts, shapes, dtypes): a clear error on every rank
--   raise     rank 1 raises in the middle of DDP training: the job ends (mpirun stops the others)
--   hang      rank 1 stops answering: the others raise after the timeout (DIST_TIMEOUT seconds)
--   kill      rank 1 is killed (SIGKILL): under mpirun --enable-recovery the others raise after the timeout
--   kill_inside  as kill, but inside an all_reduce after reaching it (MOONTORCH_DIST_TEST_DIE, set by the spec)
-- Prints `[r] elapsed <s> <message>` for the error each surviving rank caught.
local W = dofile((arg[0]:gsub('[^/]*$', '')) .. 'dist_harness.lua')
local torch, dist = W.torch, W.dist
local nn, F = require 'moontorch.nn', require 'moontorch.nn.functional'
local libc = require('moontorch.libc')
local C = libc.declare { usleep = 'int %s(unsigned int us)', kill = 'int %s(int pid, int sig)' }
local clock = require('moontorch.utils.progress').clock
local DDP = nn.parallel.DistributedDataParallel

local mode = arg[1]
dist.init_process_group { backend = 'mpi', timeout = tonumber(os.getenv('DIST_TIMEOUT') or '60') }
local rank, ws = dist.get_rank(), dist.get_world_size()
W.rank = rank

if mode == 'mismatch' then
  W.check('different numbers of parameters', function()
    local m = rank == 0 and nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2)) or nn.Sequential(nn.Linear(3, 4))
    local other = rank == 0 and 1 or 0
    W.raises(function() DDP(m) end, ('DDP expects same model across all ranks, but Rank %d has %d params, while rank %d has inconsistent %d params.')
      :format(rank, rank == 0 and 4 or 2, other, rank == 0 and 2 or 4))
  end)
  W.check('a parameter of another shape', function()
    local m = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, rank == ws - 1 and 3 or 2))
    if rank == ws - 1 then
      W.raises(function() DDP(m) end, ('[%d]: params[3] (1.weight) in this process with sizes [3, 4] appears not to match sizes ([2, 4]) of the same param in process 0.'):format(rank))
    else
      W.raises(function() DDP(m) end, ('[%d]: params[3] (1.weight) in this process with sizes [2, 4] appears not to match sizes ([3, 4]) of the same param in process %d.'):format(rank, ws - 1))
    end
  end)
  W.check('a parameter of another dtype', function()
    local m = nn.Linear(2, 2)
    if rank == 0 then m:double() end
    W.raises(function() DDP(m) end, 'appears not to match the dtype of the same param in process')
  end)
  W.check('buckets out of step between ranks (two models run in another order): a clear error', function()
    torch.manual_seed(1)
    local a, b = DDP(nn.Linear(4, 3)), DDP(nn.Linear(4, 3)) -- the same sizes: only the tags tell them apart
    local first, second = a, b
    if rank == 1 then first, second = b, a end
    local x = torch.ones(2, 4)
    local o1, o2 = first(x):sum(), second(x):sum()
    W.raises(function() o1:backward() end, 'met another bucket on another rank')
    W.raises(function() o2:backward() end, 'met another bucket on another rank')
    W.raises(function() first(x) end, 'a previous synchronisation failed')
  end)
  W.check('the group still works after those errors', function()
    local t = torch.ones(3)
    dist.all_reduce(t)
    W.eq(t, torch.ones(3) * ws, 'all_reduce')
  end)
  W.say('done')
  return
end

torch.manual_seed(1)
local ddp = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)))
local function step(i)
  local x = torch.randn(4, 8)
  F.cross_entropy(ddp(x), torch.randint(1, 3, { 4 })):backward()
  if rank == 1 and i == 3 then
    if mode == 'raise' then error('rank 1 gives up at step 3') end
    if mode == 'hang' then while true do C.usleep(100000) end end
    if mode == 'kill' then C.kill(libc.getpid(), 9) end
  end
end
if mode == 'raise' then
  -- uncaught: rank 1's script fails as any script does, and mpirun ends the job
  for i = 1, 6 do step(i) end
  W.say('FAIL rank ' .. rank .. ' finished')
  return
end
local t0
local ok, err = pcall(function()
  for i = 1, 6 do
    t0 = clock()
    step(i)
  end
end)
if ok then W.say('FAIL no error') else W.say(('elapsed %.2f %s'):format(clock() - t0, tostring(err))) end
-- and afterwards every operation fails at once, naming the first failure
local t1 = clock()
local ok2, err2 = pcall(dist.barrier)
W.say(('after %.2f %s %s'):format(clock() - t1, tostring(ok2), tostring(err2)))
os.exit(3)
