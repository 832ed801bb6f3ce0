-- Fashion-MNIST with a LeNet-style network: moontorch's main demo (`./run demo`).
--   bin/moontorch examples/fashion_mnist.lua [options]      (installed: moontorch fashion_mnist.lua)
-- Trains on the 60 000 training images, evaluates on the 10 000 test images after every epoch,
-- shows a progress bar, saves a checkpoint after every epoch (model, optimizer, scheduler, epoch,
-- random state, curves) that --resume continues from, and draws the loss and accuracy curves as
-- an SVG picture. The data is Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist).
-- bench/fashion_mnist.py is its PyTorch twin (bench/run.lua's `fashion` section runs both).
-- --ranks N trains data-parallel in N processes (moontorch.distributed over MPI: each rank a share of
-- every global batch through a DistributedSampler, gradients averaged by DistributedDataParallel);
-- started by mpirun itself (`mpirun -np N moontorch examples/fashion_mnist.lua`) it does the same.
-- Rank 0 prints, draws and saves; the checkpoints are the plain network's, so a run resumes with any
-- number of ranks.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local data = require 'moontorch.utils.data'
local datasets = require 'moontorch.datasets'
local progress = require 'moontorch.utils.progress'
local plot = require 'moontorch.utils.plot'
local F = nn.functional

local USAGE = [[
usage: moontorch examples/fashion_mnist.lua [options]
  --epochs N         passes over the training set (2)
  --batch-size N     images per training step (64)
  --lr X             the peak learning rate of the one-cycle schedule (adam, adamw: 0.003; sgd: 0.1;
                     rmsprop: 0.001)
  --optimizer NAME   adam, adamw, sgd (momentum 0.9) or rmsprop (adam)
  --threads N        threads for the kernels (all the CPUs this process may use)
  --seed N           the random seed of the weights and the shuffling (1)
  --data DIR         the folder of the IDX files (/usr/share/datasets/fashion-mnist)
  --out DIR          where the checkpoint and the plot go (fashion_mnist_run)
  --resume [FILE]    continue from a checkpoint (DIR/checkpoint.mt, the latest; DIR/epochN.mt
                     is the one saved after epoch N)
  --subset N         train on the first N training images only (all)
  --ranks N          train data-parallel in N processes (through mpirun); the batch size stays the
                     global one and must divide by N; --ranks 1 samples as the ranks do, in one process
  --amp              forward and loss under bfloat16 autocast (torch.autocast('cpu'); the weights,
                     gradients and optimizer stay float32)
  --profile FILE     profile the first 20 training steps (torch.profiler): their trace in FILE (Chrome's
                     Trace Event JSON, for Perfetto or chrome://tracing; gzip'd when FILE ends in .gz)
                     and a table of the ops
  --help             this text]]

local DEFAULT_LR = { adam = 3e-3, adamw = 3e-3, sgd = 0.1, rmsprop = 1e-3 }
local MEAN, STD = 0.2860, 0.3530 -- of the training images, scaled to [0, 1]

local function usage_error(msg)
  io.stderr:write('fashion_mnist: ', msg, '\n', USAGE, '\n')
  os.exit(2)
end

-- options ---------------------------------------------------------------------------------------
local function parse(argv)
  local o = { given = {} }
  local i = 1
  local function value(name)
    local v = argv[i + 1]
    if v == nil then usage_error(name .. ' needs a value') end
    i = i + 1
    return v
  end
  local function count(name, v)
    local n = tonumber(v)
    if not n or n ~= math.floor(n) or n < 1 or n > 2 ^ 31 then
      usage_error(('%s needs a positive whole number, got %q'):format(name, v))
    end
    return n
  end
  while i <= #argv do
    local a = argv[i]
    local name, inline = a:match('^(%-%-[%w-]+)=(.*)$')
    if name then a = name table.insert(argv, i + 1, inline) end
    if a == '--help' or a == '-h' then
      print(USAGE)
      os.exit(0)
    elseif a == '--epochs' then o.epochs = count(a, value(a))
    elseif a == '--batch-size' then o.batch_size = count(a, value(a))
    elseif a == '--threads' then o.threads = count(a, value(a))
    elseif a == '--subset' then o.subset = count(a, value(a))
    elseif a == '--ranks' then o.ranks = count(a, value(a))
    elseif a == '--amp' then o.amp = true
    elseif a == '--seed' then
      local v = value(a)
      o.seed = tonumber(v)
      if not o.seed or o.seed ~= math.floor(o.seed) or o.seed < 0 or o.seed >= 2 ^ 53 then
        usage_error(('--seed needs a whole number from 0, got %q'):format(v))
      end
    elseif a == '--lr' then
      local v = value(a)
      o.lr = tonumber(v)
      if not o.lr or not (o.lr > 0 and o.lr < math.huge) then usage_error(('--lr needs a positive number, got %q'):format(v)) end
    elseif a == '--optimizer' then
      o.optimizer = value(a)
      if not DEFAULT_LR[o.optimizer] then usage_error(('--optimizer must be adam, adamw, sgd or rmsprop, got %q'):format(o.optimizer)) end
    elseif a == '--profile' then o.profile = value(a)
    elseif a == '--data' then o.data = value(a)
    elseif a == '--out' then o.out = value(a)
    elseif a == '--resume' then
      o.resume = true
      local v = argv[i + 1]
      if v ~= nil and v:sub(1, 2) ~= '--' then o.resume, i = v, i + 1 end
    else
      usage_error(('unknown option %q'):format(a))
    end
    if a:sub(1, 2) == '--' then o.given[a:sub(3):gsub('-', '_')] = true end
    i = i + 1
  end
  return o
end

local opts = parse({ unpack(arg or {}) })

-- data parallel: --ranks N starts the N processes (mpirun, through moontorch's launcher), each of
-- which runs this script; one started by mpirun or the launcher joins its world
local world_env = tonumber(os.getenv('OMPI_COMM_WORLD_SIZE') or os.getenv('WORLD_SIZE') or '')
if opts.ranks and opts.ranks > 1 and not world_env then
  require('moontorch.distributed.run').launch { nproc = opts.ranks, script = arg[0], args = { unpack(arg) } }
end
local dist, rank, world = nil, 0, 1
if opts.ranks or (world_env and world_env > 1) then
  dist = require 'moontorch.distributed'
  dist.init_process_group('mpi')
  rank, world = dist.get_rank(), dist.get_world_size()
  if opts.ranks and opts.ranks ~= world then
    usage_error(('--ranks %d, but this process is one of %d'):format(opts.ranks, world))
  end
end
local function say(...) if rank == 0 then print(...) end end
opts.out = opts.out or 'fashion_mnist_run'
local ckpt_path = opts.out .. '/checkpoint.mt'
local plot_path = opts.out .. '/curves.svg'

local ffi = require 'ffi'
pcall(ffi.cdef, 'int mkdir(const char *path, unsigned int mode);')
local function make_dir(dir)
  if ffi.C.mkdir(dir, tonumber('755', 8)) ~= 0 and ffi.errno() ~= 17 then -- 17: EEXIST
    io.stderr:write(('fashion_mnist: cannot make the folder %s (errno %d)\n'):format(dir, ffi.errno()))
    os.exit(1)
  end
end

-- the run's plan: what the checkpoint must agree with when resumed
local PLAN = { 'epochs', 'batch_size', 'lr', 'optimizer', 'seed', 'subset' }
local checkpoint
if opts.resume then
  local path = opts.resume == true and ckpt_path or opts.resume
  local ok, c = pcall(torch.load, path)
  if not ok then
    io.stderr:write(('fashion_mnist: cannot resume from %s: %s\n'):format(path, tostring(c)))
    os.exit(1)
  end
  if type(c) ~= 'table' or type(c.plan) ~= 'table' or type(c.epoch) ~= 'number' then
    io.stderr:write(('fashion_mnist: %s is not a checkpoint of this demo\n'):format(path))
    os.exit(1)
  end
  for _, k in ipairs(PLAN) do
    if opts.given[k] and opts[k] ~= c.plan[k] then
      usage_error(('%s was made with --%s %s; resume it without --%s (or start afresh)')
        :format(path, k:gsub('_', '-'), tostring(c.plan[k] or 'all'), k:gsub('_', '-')))
    end
    opts[k] = c.plan[k]
  end
  checkpoint = c
end
opts.epochs = opts.epochs or 2
opts.batch_size = opts.batch_size or 64
opts.optimizer = opts.optimizer or 'adam'
opts.lr = opts.lr or DEFAULT_LR[opts.optimizer]
opts.seed = opts.seed or 1
if dist and opts.batch_size % world ~= 0 then
  usage_error(('--batch-size %d does not divide among %d ranks'):format(opts.batch_size, world))
end
if opts.threads then torch.set_num_threads(opts.threads) end
torch.manual_seed(opts.seed)

-- data ------------------------------------------------------------------------------------------
local normalize = datasets.transforms.Normalize(MEAN, STD)
local function load(train)
  local ok, ds = pcall(datasets.FashionMNIST, opts.data, { train = train, transform = normalize })
  if not ok then
    io.stderr:write('fashion_mnist: ', tostring(ds), '\n')
    os.exit(1)
  end
  return ds
end
local train_set, test_set = load(true), load(false)
if opts.subset and opts.subset < train_set:__len() then
  local idx = {}
  for k = 1, opts.subset do idx[k] = k end
  train_set = data.Subset(train_set, idx)
end
local train_loader, test_loader, sampler
if dist then
  -- each rank its share of every global batch (the same shuffle in every rank, from seed + epoch),
  -- and its share of the test set (every world-th image), whose sums are added up over the ranks
  sampler = data.DistributedSampler(train_set, { num_replicas = world, rank = rank, seed = opts.seed })
  train_loader = data.DataLoader(train_set, { batch_size = opts.batch_size / world, sampler = sampler })
  local mine = {}
  for k = rank + 1, test_set:__len(), world do mine[#mine + 1] = k end
  test_loader = data.DataLoader(data.Subset(test_set, mine), { batch_size = 1000 })
else
  train_loader = data.DataLoader(train_set, { batch_size = opts.batch_size, shuffle = true })
  test_loader = data.DataLoader(test_set, { batch_size = 1000 })
end
-- sums over the ranks (each rank's own numbers when alone)
local function total(...)
  if not dist then return ... end
  local t = torch.tensor({ ... }, { dtype = torch.float64 })
  dist.all_reduce(t)
  return unpack(t:tolist())
end

-- the network, its optimizer and schedule -----------------------------------------------------
local net = nn.Sequential(
  nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),   -- 1x28x28 -> 6x24x24 -> 6x12x12
  nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),  -- -> 16x8x8 -> 16x4x4
  nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
-- in a world of ranks the network trains through DistributedDataParallel (rank 0's initial
-- weights everywhere, gradients averaged over the ranks)
local model = dist and nn.parallel.DistributedDataParallel(net) or net
local opt
if opts.optimizer == 'sgd' then
  opt = optim.SGD(net:parameters(), { lr = opts.lr, momentum = 0.9 })
else
  local make = { adam = optim.Adam, adamw = optim.AdamW, rmsprop = optim.RMSprop }
  opt = make[opts.optimizer](net:parameters(), { lr = opts.lr })
end
-- the learning rate rises, then anneals over the whole run; stepped after every batch
local sched = optim.lr_scheduler.OneCycleLR(opt, { max_lr = opts.lr, total_steps = opts.epochs * train_loader:__len() })

local history = { epoch = {}, train_loss = {}, test_loss = {}, test_acc = {} }
local first_epoch = 1
if checkpoint then
  net:load_state_dict(checkpoint.model)
  opt:load_state_dict(checkpoint.optimizer)
  sched:load_state_dict(checkpoint.scheduler)
  torch.set_rng_state(checkpoint.rng_state)
  history = checkpoint.history
  first_epoch = checkpoint.epoch + 1
  say(('resumed from %s after epoch %d of %d'):format(opts.resume == true and ckpt_path or opts.resume,
    checkpoint.epoch, opts.epochs))
end

say(('Fashion-MNIST: %d training and %d test images; %s, lr %g, batch %d, %d epoch%s, %d thread%s, seed %d%s')
  :format(train_set:__len(), test_set:__len(), opts.optimizer, opts.lr, opts.batch_size, opts.epochs,
    opts.epochs == 1 and '' or 's', torch.get_num_threads(), torch.get_num_threads() == 1 and '' or 's', opts.seed,
    dist and (', %d ranks (batch %d each)'):format(world, opts.batch_size / world) or ''))
if first_epoch == 1 then say(net) end

local evaluate = torch.no_grad.wrap(function()
  net:eval()
  local loss, correct = 0, 0
  for x, y in test_loader() do
    local out = net(x)
    loss = loss + F.cross_entropy(out, y, { reduction = 'sum' }):item()
    correct = correct + out:argmax(2):eq(y):sum():item()
  end
  net:train()
  loss, correct = total(loss, correct)
  return loss / test_set:__len(), correct / test_set:__len()
end)

local function save_plot()
  if #history.epoch == 0 or rank ~= 0 then return end
  make_dir(opts.out)
  local h = history
  plot.save(plot_path, {
    title = ('Fashion-MNIST, LeNet-5, %s, batch %d'):format(opts.optimizer, opts.batch_size),
    panels = {
      { title = 'loss', xlabel = 'epoch', series = {
        { name = 'train', x = h.window_x, y = h.window_loss },
        { name = 'test', x = h.epoch, y = h.test_loss } } },
      { title = 'accuracy (%)', xlabel = 'epoch', series = {
        { name = 'train', x = h.window_x, y = h.window_acc },
        { name = 'test', x = h.epoch, y = h.test_acc } } },
    } })
end

-- the training curves: the mean loss and accuracy of each twentieth of an epoch
local batches = train_loader:__len()
local window = math.max(1, math.floor(batches / 20))
for _, k in ipairs({ 'window_x', 'window_loss', 'window_acc' }) do history[k] = history[k] or {} end

-- the training step's forward and loss: under bfloat16 autocast with --amp (issue 25)
local function forward(x, y)
  local out = model(x) -- (DistributedDataParallel around net under --ranks)
  return out, F.cross_entropy(out, y)
end
if opts.amp then
  local plain = forward
  forward = function(x, y) return torch.autocast('cpu', { dtype = torch.bfloat16 }, plain, x, y) end
end

local saved = first_epoch - 1 -- the last epoch whose checkpoint is on disk, and its file
local saved_path = checkpoint and (opts.resume == true and ckpt_path or opts.resume)
local saving -- the epoch whose checkpoint is being written
-- --profile: the first 20 steps recorded (ops with their input shapes, memory, FLOPs, module paths)
local prof
if opts.profile and rank == 0 then -- (in a world of ranks: rank 0's steps)
  local profiler = torch.profiler
  prof = profiler.profile {
    schedule = profiler.schedule { wait = 0, warmup = 0, active = 20, ['repeat'] = 1 },
    record_shapes = true, profile_memory = true, with_modules = true, with_flops = true,
    on_trace_ready = function(p)
      p:export_chrome_trace(opts.profile)
      local ops = p:key_averages { group_by_input_shape = true }:filter(function(e) return not e.key:find('^ProfilerStep#') end)
      print(ops:table { sort_by = 'cpu_time_total', row_limit = 20 })
      print('profile of the first 20 steps: ' .. opts.profile)
    end,
  }
end

local function train()
  if prof then prof:start() end
  for epoch = first_epoch, opts.epochs do
    net:train()
    if sampler then sampler:set_epoch(epoch) end
    local t0 = progress.clock()
    local sum, seen = 0, 0
    local wsum, wright, wseen = 0, 0, 0
    local batches_of
    if rank == 0 then
      batches_of = progress(train_loader, { desc = ('epoch %d/%d'):format(epoch, opts.epochs), unit = 'batch' })
    else
      local it, i = train_loader(), 0
      batches_of = function()
        local x, y = it()
        if x == nil then return nil end
        i = i + 1
        return i, x, y
      end
    end
    for i, x, y in batches_of do
      local out, loss = forward(x, y)
      opt:zero_grad()
      loss:backward()
      opt:step()
      sched:step()
      if prof then prof:step() end
      local l, n = loss:item(), x:size(1)
      sum, seen = sum + l * n, seen + n
      wsum, wseen = wsum + l * n, wseen + n
      wright = wright + out:argmax(2):eq(y):sum():item()
      if i % window == 0 or i == batches then
        wsum, wright, wseen = total(wsum, wright, wseen)
        local hx = history.window_x
        hx[#hx + 1] = epoch - 1 + i / batches
        history.window_loss[#hx] = wsum / wseen
        history.window_acc[#hx] = wright / wseen * 100
        wsum, wright, wseen = 0, 0, 0
      end
      if rank == 0 then progress.set { loss = l } end
    end
    sum, seen = total(sum, seen)
    local train_s = progress.clock() - t0
    local t1 = progress.clock()
    local test_loss, acc = evaluate()
    local test_s = progress.clock() - t1
    history.epoch[#history.epoch + 1] = epoch
    history.train_loss[#history.train_loss + 1] = sum / seen
    history.test_loss[#history.test_loss + 1] = test_loss
    history.test_acc[#history.test_acc + 1] = acc * 100
    say(('epoch %d: train loss %.4f, test loss %.4f, test accuracy %.2f%% (train %.2f s, test %.2f s)')
      :format(epoch, sum / seen, test_loss, acc * 100, train_s, test_s))
    make_dir(opts.out)
    local plan = {}
    for _, k in ipairs(PLAN) do plan[k] = opts[k] end
    local state = { model = net:state_dict(), optimizer = opt:state_dict(), scheduler = sched:state_dict(),
      epoch = epoch, rng_state = torch.get_rng_state(), history = history, plan = plan }
    -- the epoch's own checkpoint, and the latest one that a bare --resume takes (each written
    -- atomically: an interrupted save leaves the previous file whole)
    saving = epoch
    if rank == 0 then -- (the plain network's state_dict: a run with any number of ranks resumes from it)
      torch.save(state, ('%s/epoch%d.mt'):format(opts.out, epoch))
      torch.save(state, ckpt_path)
    end
    if dist then dist.barrier() end
    saved, saved_path = epoch, ckpt_path
    save_plot()
  end
end

-- Ctrl-C stops the run with a word on what is saved, not a traceback
local ok, err = xpcall(train, debug.traceback)
if prof then prof:stop() end -- (a run of fewer than 20 steps: its trace is written now)
if not ok then
  if tostring(err):find('interrupted!', 1, true) then
    io.stdout:write('\n')
    io.stdout:flush()
    -- an interrupt may land after the latest checkpoint's rename and before `saved` heard of it (the
    -- plot is drawn in between): what is on disk decides
    if saving then
      local ok_disk, on_disk = pcall(torch.load, ckpt_path)
      if ok_disk and type(on_disk) == 'table' and on_disk.epoch == saving then saved, saved_path = saving, ckpt_path end
    end
    if saved > 0 then
      io.stderr:write(('fashion_mnist: interrupted; %s holds epoch %d: --resume continues from it\n'):format(saved_path, saved))
    else
      io.stderr:write('fashion_mnist: interrupted before the first epoch ended; nothing was saved\n')
    end
    os.exit(130, true) -- (closing the Lua state: finalizers free what C holds)
  end
  error(err, 0)
end

if first_epoch > opts.epochs then say(('the checkpoint has finished all %d epoch%s'):format(opts.epochs, opts.epochs == 1 and '' or 's')) end
save_plot()
local n = #history.test_acc
if n > 0 then
  say(('final test accuracy: %.2f%%'):format(history.test_acc[n]))
  say(('checkpoint: %s; curves: %s'):format(ckpt_path, plot_path))
end
