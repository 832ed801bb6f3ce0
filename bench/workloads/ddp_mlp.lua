-- The 784-512-256-10 MLP's training step (cross-entropy, SGD with momentum 0.9), batch 128 per
-- process: alone, or as one rank of an mpirun job under nn.parallel.DistributedDataParallel (the
-- global batch is then 128 x ranks). Threads: $BENCH_THREADS (1). BENCH_DDP_VIEW=1 builds the DDP
-- with gradient_as_bucket_view; BENCH_DDP_FIRST_BYTES=n sets dist._DEFAULT_FIRST_BUCKET_BYTES
-- (PyTorch's 1 MiB). Rank 0 reports the best round's milliseconds per step, samples per second
-- (the whole job's), and, under DDP, the all-reduce time per step and the part of it that backward
-- did not hide (`unhidden_ms`: DDP's wait after the last bucket started); and the step's phases
-- (rank 0's): fwd_ms, bwd_ms (zero_grad + backward, with DDP's work), opt_ms, and cpu_ms, the CPU
-- time rank 0's process took per step (every thread: a figure that other work on the machine
-- changes less than the wall time).
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local F = nn.functional
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 1))
local world = tonumber(os.getenv('OMPI_COMM_WORLD_SIZE') or '1')
local dist, ddp, rank = nil, nil, 0
torch.manual_seed(0)
local net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
local model = net
if world > 1 then
  dist = require 'moontorch.distributed'
  dist.init_process_group('mpi')
  rank = dist.get_rank()
  if os.getenv('BENCH_DDP_FIRST_BYTES') then dist._DEFAULT_FIRST_BUCKET_BYTES = tonumber(os.getenv('BENCH_DDP_FIRST_BYTES')) end
  ddp = nn.parallel.DistributedDataParallel(net, { gradient_as_bucket_view = os.getenv('BENCH_DDP_VIEW') == '1' })
  model = ddp
end
local opt = optim.SGD(model:parameters(), { lr = 0.01, momentum = 0.9 })
torch.manual_seed(1 + rank)
local x = torch.randn(128, 784)
local y = torch.randint(1, 11, { 128 })
-- each phase's time, summed over a round (fwd: forward and loss; bwd: zero_grad and backward, which
-- under DDP holds the copies into the buckets, the all-reduce's wait and the copies back; opt: the
-- optimizer's step)
local ph = { 0, 0, 0 }
local function step()
  local t0 = B.now()
  local loss = F.cross_entropy(model(x), y)
  local t1 = B.now()
  opt:zero_grad()
  loss:backward()
  local t2 = B.now()
  opt:step()
  local t3 = B.now()
  ph[1], ph[2], ph[3] = ph[1] + (t1 - t0), ph[2] + (t2 - t1), ph[3] + (t3 - t2)
end
local steps = tonumber(arg[1]) or 50
for _ = 1, 10 do step() end
local best, best_stats, best_ph = math.huge, nil, nil
for _ = 1, 5 do
  if dist then dist.barrier() end
  if ddp then ddp:reset_comm_stats() end
  ph = { 0, 0, 0 }
  local c0 = os.clock()
  local t0 = B.now()
  for _ = 1, steps do step() end
  local t = (B.now() - t0) / steps
  local cpu = (os.clock() - c0) / steps
  -- every rank keeps the round rank 0 found best: the slowest rank sets the pace anyway
  if dist then
    local tt = torch.tensor({ t }, { dtype = torch.float64 })
    dist.all_reduce(tt, dist.ReduceOp.MAX)
    t = tt:item()
  end
  if t < best then
    best, best_stats = t, ddp and ddp:comm_stats()
    best_ph = { ph[1] / steps, ph[2] / steps, ph[3] / steps, cpu }
  end
end
if rank == 0 then
  B.report('ms', best * 1e3)
  B.report('samples_s', 128 * world / best)
  B.report('fwd_ms', best_ph[1] * 1e3)
  B.report('bwd_ms', best_ph[2] * 1e3)
  B.report('opt_ms', best_ph[3] * 1e3)
  B.report('cpu_ms', best_ph[4] * 1e3)
  if best_stats then
    B.report('comm_ms', best_stats.comm_ms)
    B.report('unhidden_ms', best_stats.unhidden_ms)
    B.report('buckets', best_stats.buckets)
  end
  B.report('peak_kb', B.peak_kb())
end
