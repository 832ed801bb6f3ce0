-- nn.parallel.DistributedDataParallel in each rank of an mpirun job (spec/distributed_spec.lua
-- runs it with -np 2 and -np 4). Every rank also trains the one-process reference itself (the same
-- model on the whole global batch), so that "DDP gives the same parameters as one process" is
-- checked in each rank against values computed there.
local W = dofile((arg[0]:gsub('[^/]*$', '')) .. 'dist_harness.lua')
local torch, dist = W.torch, W.dist
local nn, optim = require 'moontorch.nn', require 'moontorch.optim'
local F = nn.functional
local check, eq, near, raises = W.check, W.eq, W.near, W.raises
local DDP = nn.parallel.DistributedDataParallel

dist.init_process_group { backend = 'mpi', timeout = 120 }
local rank, ws = dist.get_rank(), dist.get_world_size()
W.rank = rank

local function mlp() return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 5)) end
local function lenet()
  return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
end

-- the same K steps twice: one process on the whole batch (ref) and DDP on this rank's share;
-- returns both models. make(): a fresh model; shape: one sample's shape; per: samples per rank
local function train_both(make, dtype, shape, per, steps, ddp_opts, classes)
  torch.manual_seed(11)
  local ref = make():to(dtype)
  torch.manual_seed(1000 + rank) -- each rank starts elsewhere: DDP must take rank 0's parameters
  local mine = make():to(dtype)
  if rank == 0 then mine:load_state_dict(ref:state_dict()) end
  local ddp = DDP(mine, ddp_opts)
  local o1 = optim.SGD(ref:parameters(), { lr = 0.05, momentum = 0.9 })
  local o2 = optim.SGD(ddp:parameters(), { lr = 0.05, momentum = 0.9 })
  torch.manual_seed(77) -- the same data in every rank
  for _ = 1, steps do
    local size = { per * ws }
    for _, s in ipairs(shape) do size[#size + 1] = s end
    local x = torch.randn(size, { dtype = dtype })
    local y = torch.randint(1, (classes or 5) + 1, { per * ws })
    o1:zero_grad()
    F.cross_entropy(ref(x), y):backward()
    o1:step()
    o2:zero_grad()
    F.cross_entropy(ddp(x:narrow(1, rank * per + 1, per)), y:narrow(1, rank * per + 1, per)):backward()
    o2:step()
  end
  return ref, ddp
end

local function same_params(ref, ddp, atol, rtol, what)
  local a, b = ref:parameters(), ddp.module:parameters()
  assert(#a == #b, 'parameter counts')
  for i = 1, #a do
    near(b[i], a[i], atol, rtol, ('%s: parameter %d'):format(what, i))
    -- and each .grad keeps the layout one process gives it (a Linear's weight gradient arrives
    -- transposed: its bucket slot takes that layout)
    if a[i].grad ~= nil and atol < math.huge then
      assert(table.concat(b[i].grad:stride(), ',') == table.concat(a[i].grad:stride(), ','),
        ('%s: parameter %d\'s gradient has strides %s, one process\'s %s'):format(what, i,
          table.concat(b[i].grad:stride(), ','), table.concat(a[i].grad:stride(), ',')))
    end
  end
end

check('MLP float64: K steps of DDP = one process on the whole batch (to 1e-12)', function()
  local ref, ddp = train_both(mlp, torch.float64, { 20 }, 4, 4)
  same_params(ref, ddp, 1e-12, 0, 'MLP float64')
end)
check('MLP float32 (PyTorch\'s tolerance: atol 1e-5, rtol 1.3e-6)', function()
  local ref, ddp = train_both(mlp, torch.float32, { 20 }, 4, 4)
  same_params(ref, ddp, 1e-5, 1.3e-6, 'MLP float32')
end)
check('LeNet float64 (to 1e-12)', function()
  local ref, ddp = train_both(lenet, torch.float64, { 1, 28, 28 }, 2, 3, nil, 10)
  same_params(ref, ddp, 1e-12, 0, 'LeNet float64')
end)
check('LeNet float32', function()
  local ref, ddp = train_both(lenet, torch.float32, { 1, 28, 28 }, 2, 3, nil, 10)
  same_params(ref, ddp, 1e-5, 1.3e-6, 'LeNet float32')
end)
check('gradient_as_bucket_view: the same numbers, .grad a view of its bucket', function()
  local ref, ddp = train_both(mlp, torch.float64, { 20 }, 4, 3, { gradient_as_bucket_view = true })
  same_params(ref, ddp, 1e-12, 0, 'as view')
  local R = ddp._reducer
  for i, p in ipairs(R.params) do
    local b = R.buckets[R.where[i][1]]
    assert(p.grad._storage == b.flat._storage, 'grad ' .. i .. ' shares its bucket\'s storage')
  end
end)

check('.grad kept across steps: a reference held sees each step\'s averages; a storage of its own; set_to_none; the DDP dropped', function()
  -- where the ranks share a node (and MOONTORCH_DIST_SHM is not 0) the gradients live in memory the
  -- ranks share and are reduced there; what a script sees of them must not change
  torch.manual_seed(31)
  local ref = mlp()
  local m = mlp()
  m:load_state_dict(ref:state_dict())
  local ddp = DDP(m)
  local shared = ws > 1 and os.getenv('MOONTORCH_DIST_SHM') ~= '0'
  assert(ddp:comm_stats().shared_gradients == shared, 'shared_gradients ' .. tostring(ddp:comm_stats().shared_gradients))
  local o1 = optim.SGD(ref:parameters(), { lr = 0.1 })
  local o2 = optim.SGD(ddp:parameters(), { lr = 0.1 })
  torch.manual_seed(32)
  local held
  for step = 1, 4 do
    local x, y = torch.randn(3 * ws, 20), torch.randint(1, 6, { 3 * ws })
    local none = step == 4 -- the last step: zero_grad(set_to_none): new .grad tensors
    o1:zero_grad(none)
    o2:zero_grad(none)
    F.cross_entropy(ref(x), y):backward()
    F.cross_entropy(ddp(x:narrow(1, rank * 3 + 1, 3)), y:narrow(1, rank * 3 + 1, 3)):backward()
    for i, p in ipairs(m:parameters()) do
      local want = ref:parameters()[i].grad
      near(p.grad, want, 1e-5, 1.3e-6, ('step %d: param %d'):format(step, i))
      assert(p.grad:storage_offset() == 0, 'a storage of its own: offset ' .. p.grad:storage_offset())
      assert(p.grad:is_contiguous() == want:is_contiguous(), 'layout as one process')
    end
    if step == 1 then held = m[1].weight.grad end
    if step > 1 and step < 4 then near(held, ref[1].weight.grad, 1e-5, 1.3e-6, ('step %d: the .grad held since step 1'):format(step)) end
    o1:step()
    o2:step()
  end
  -- the DDP dropped: the gradients stay (and stay usable)
  local keep = m[1].weight.grad:clone()
  ddp, o2 = nil, nil
  collectgarbage()
  collectgarbage()
  eq(m[1].weight.grad, keep, '.grad after the DDP went')
  m[1].weight.grad:mul_(2)
  eq(m[1].weight.grad, keep * 2, 'and writable')
end)

check('ZeroRedundancyOptimizer: Adam over DDP = Adam on the whole batch (to 1e-12); each rank holds its share of the state; state_dict/load_state_dict', function()
  local Zero = dist.optim.ZeroRedundancyOptimizer
  local function same(x, y, what) assert(x == y, ('%s: %s, expected %s'):format(what, tostring(x), tostring(y))) end
  torch.manual_seed(41)
  local ref = mlp():double()
  local m = mlp():double()
  m:load_state_dict(ref:state_dict())
  local ddp = DDP(m)
  local zero = Zero(ddp:parameters(), { optimizer_class = optim.Adam, lr = 0.01, weight_decay = 0.1 })
  local plain = optim.Adam(ref:parameters(), { lr = 0.01, weight_decay = 0.1 })
  -- PyTorch's partition: largest first, each to the rank with the fewest elements so far
  -- (sizes 640, 512, 80, 32, 16, 5)
  local owner = {}
  local sizes = {}
  for r = 1, ws do sizes[r] = 0 end
  local ps = m:parameters()
  local order = { 1, 3, 5, 2, 4, 6 }
  for _, i in ipairs(order) do
    local best = 1
    for r = 2, ws do if sizes[r] < sizes[best] then best = r end end
    owner[i] = best - 1
    sizes[best] = sizes[best] + ps[i]:numel()
  end
  local mine = 0
  for i = 1, #ps do if owner[i] == rank then mine = mine + 1 end end
  same(#zero.optim.param_groups[1].params, mine, 'parameters stepped here')
  torch.manual_seed(42)
  local function train(steps)
    for _ = 1, steps do
      local x, y = torch.randn(2 * ws, 20, { dtype = torch.float64 }), torch.randint(1, 6, { 2 * ws })
      plain:zero_grad()
      F.cross_entropy(ref(x), y):backward()
      plain:step()
      zero:zero_grad()
      F.cross_entropy(ddp(x:narrow(1, rank * 2 + 1, 2)), y:narrow(1, rank * 2 + 1, 2)):backward()
      zero:step()
    end
  end
  train(3)
  same_params(ref, ddp, 1e-12, 0, 'ZeRO Adam')
  local held = 0
  for _ in pairs(zero.optim.state) do held = held + 1 end
  same(held, mine, 'optimizer state held here (only this rank\'s share)')
  -- a learning-rate change reaches the local optimizer
  zero.param_groups[1].lr = 0.002
  plain.param_groups[1].lr = 0.002
  train(1)
  same_params(ref, ddp, 1e-12, 0, 'after lr changed')
  -- the whole state on rank 0, as the plain optimizer's
  raises(function() zero:state_dict() end, 'Optimizer state has not been consolidated on this rank')
  zero:consolidate_state_dict(0)
  if rank == 0 then
    local a, b = zero:state_dict(), plain:state_dict()
    for i = 0, #ps - 1 do
      near(a.state[i].exp_avg, b.state[i].exp_avg, 1e-12, 0, 'exp_avg ' .. i)
      near(a.state[i].exp_avg_sq, b.state[i].exp_avg_sq, 1e-12, 0, 'exp_avg_sq ' .. i)
      same(torch.is_tensor(a.state[i].step) and a.state[i].step:item() or a.state[i].step,
        torch.is_tensor(b.state[i].step) and b.state[i].step:item() or b.state[i].step, 'step ' .. i)
    end
    same(a.param_groups[1].lr, 0.002, 'lr in the state_dict')
  else
    raises(function() zero:state_dict() end, 'consolidate_state_dict(to=' .. rank .. ')')
  end
  -- a new ZeRO over a fresh model, loaded from the plain optimizer's state, goes on as it does
  local m2 = mlp():double()
  m2:load_state_dict(ref:state_dict())
  local ddp2 = DDP(m2)
  local zero2 = Zero(ddp2:parameters(), optim.Adam, { lr = 0.5 })
  zero2:load_state_dict(plain:state_dict())
  same(zero2.param_groups[1].lr, 0.002, 'lr loaded')
  ddp, zero = ddp2, zero2
  train(2)
  same_params(ref, ddp2, 1e-12, 0, 'ZeRO after load_state_dict')
  -- parameters_as_bucket_view: each rank's share travels as one buffer; the same numbers
  local m3 = mlp():double()
  m3:load_state_dict(ref:state_dict())
  local ddp3 = DDP(m3)
  local zero3 = Zero(ddp3:parameters(), { optimizer_class = optim.SGD, lr = 0.1, momentum = 0.9, parameters_as_bucket_view = true })
  plain = optim.SGD(ref:parameters(), { lr = 0.1, momentum = 0.9 })
  ddp, zero = ddp3, zero3
  train(2)
  same_params(ref, ddp3, 1e-12, 0, 'ZeRO SGD, parameters_as_bucket_view')
  raises(function() Zero(m:parameters(), { lr = 0.1 }) end, 'optimizer_class is required')
  raises(function() Zero(m:parameters(), { optimizer_class = optim.SGD, lr = 0.1, overlap_with_ddp = true }) end,
    'overlap_with_ddp = true is not supported')
end)

check('buckets: one per dtype at first, then rebuilt in the order gradients came (first 1 MiB)', function()
  local saved = dist._DEFAULT_FIRST_BUCKET_BYTES
  dist._DEFAULT_FIRST_BUCKET_BYTES = 600 * 8 -- a first bucket of 600 float64
  local ref, ddp = train_both(mlp, torch.float64, { 20 }, 2, 1, { bucket_cap_mb = 1000 * 8 / 2 ^ 20 })
  dist._DEFAULT_FIRST_BUCKET_BYTES = saved
  local names = ddp:bucket_names()
  assert(#names == 1, 'before the rebuild: ' .. #names .. ' buckets')
  assert(table.concat(names[1], ' ') == '0.weight 0.bias 2.weight 2.bias 4.weight 4.bias',
    'first layout: one bucket, registration order: ' .. table.concat(names[1], ' '))
  -- a second step rebuilds: gradients arrive 4.bias, 4.weight, 2.bias, 2.weight, 0.bias, 0.weight
  -- (5, 80, 16, 512, 32, 640 elements): 600 elements close the first bucket, 1000 the next ones
  local x, y = torch.randn(2, 20, { dtype = torch.float64 }), torch.randint(1, 6, { 2 })
  F.cross_entropy(ddp(x), y):backward()
  names = ddp:bucket_names()
  local got = {}
  for i, b in ipairs(names) do got[i] = table.concat(b, ' ') end
  assert(table.concat(got, ' | ') == '4.bias 4.weight 2.bias 2.weight | 0.bias 0.weight',
    'rebuilt: ' .. table.concat(got, ' | '))
  local st = ddp:comm_stats()
  assert(st.buckets == 2 and st.steps == 2, 'stats ' .. st.buckets .. ' ' .. st.steps)
  assert(st.comm_ms >= 0 and st.unhidden_ms >= 0, 'times')
  -- and training goes on with the same numbers as one process
  same_params(ref, ddp, math.huge, 0, 'sanity')
end)

local Mixed = torch.class('spec.DistMixed', 'nn.Module')
function Mixed:__init()
  nn.Module.__init(self)
  self.a = nn.Linear(4, 3):double()
  self.b = nn.Linear(3, 2)
end
function Mixed:forward(x) return self.b(self.a(x):float()) end

check('parameters of two dtypes: a bucket each, the same averages', function()
  torch.manual_seed(12)
  local ref, m = Mixed(), Mixed()
  m:load_state_dict(ref:state_dict())
  local ddp = DDP(m)
  assert(#ddp:bucket_names() == 2, 'buckets per dtype: ' .. #ddp:bucket_names())
  local x = torch.randn(2 * ws, 4, { dtype = torch.float64 })
  ref(x):pow(2):mean():backward()
  ddp(x:narrow(1, rank * 2 + 1, 2)):pow(2):mean():backward()
  for i, p in ipairs(m:parameters()) do
    local want = ref:parameters()[i].grad
    -- (float32's tolerance for both: the float64 layer's gradient comes back through float32, and
    -- the mean over 2 x world_size samples is exact in float32 only for a power of two ranks)
    near(p.grad, want, 1e-6, 1e-6, 'param ' .. i)
    assert(p.grad.dtype == want.dtype, 'dtype kept')
  end
end)

-- unused parameters: a branch no rank uses, and one only some ranks use
local Branchy = torch.class('spec.DistBranchy', 'nn.Module')
function Branchy:__init()
  nn.Module.__init(self)
  self.a = nn.Linear(6, 4)
  self.b = nn.Linear(4, 3)
  self.never = nn.Linear(4, 3)   -- used by no rank
  self.sometimes = nn.Linear(4, 3) -- used where use_sometimes is set
  self.use_sometimes = false
end
function Branchy:forward(x)
  local h = F.relu(self.a(x))
  local out = self.b(h)
  if self.use_sometimes then out = out + self.sometimes(h) end
  return out
end

check('find_unused_parameters: averages with zeros for the ranks that skipped a layer; unused by all: .grad untouched', function()
  torch.manual_seed(3)
  local ref = Branchy():double()
  local m = Branchy():double()
  m:load_state_dict(ref:state_dict())
  local ddp = DDP(m, { find_unused_parameters = true })
  torch.manual_seed(5)
  for step = 1, 3 do
    local x = torch.randn(3 * ws, 6, { dtype = torch.float64 })
    -- rank r uses `sometimes` when r is odd (with one rank: on odd steps)
    local function uses(r) return ws == 1 and step % 2 == 1 or r % 2 == 1 end
    -- the expected gradients: each rank's own, averaged (an unused layer contributes zeros)
    local sum = {}
    for r = 0, ws - 1 do
      ref:zero_grad()
      ref.use_sometimes = uses(r)
      ref(x:narrow(1, r * 3 + 1, 3)):pow(2):mean():backward()
      for name, p in ref:named_parameters() do
        local g = p.grad and p.grad:clone() or torch.zeros_like(p)
        sum[name] = sum[name] and sum[name] + g or g
      end
    end
    ddp:zero_grad()
    m.use_sometimes = uses(rank)
    ddp(x:narrow(1, rank * 3 + 1, 3)):pow(2):mean():backward()
    for name, p in m:named_parameters() do
      if name:match('^never') then
        assert(p.grad == nil, name .. ' kept no gradient')
      else
        near(p.grad, sum[name] / ws, 1e-12, 0, 'step ' .. step .. ' ' .. name)
      end
    end
  end
end)

check('without find_unused_parameters, an unused parameter is an error at the next forward', function()
  torch.manual_seed(3)
  local m = Branchy():double()
  local ddp = DDP(m)
  local x = torch.randn(3, 6, { dtype = torch.float64 })
  ddp(x):sum():backward()
  local err = raises(function() ddp(x) end, 'Expected to have finished reduction in the prior iteration')
  assert(err:find('find_unused_parameters=true', 1, true) and err:find('never.weight', 1, true), err)
end)

check('no_sync: gradients accumulate locally, the next synchronised backward averages the sums', function()
  torch.manual_seed(9)
  local ref = mlp():double()
  local m = mlp():double()
  m:load_state_dict(ref:state_dict())
  local ddp = DDP(m)
  torch.manual_seed(10)
  local xs, ys = {}, {}
  for k = 1, 3 do
    xs[k] = torch.randn(2 * ws, 20, { dtype = torch.float64 })
    ys[k] = torch.randint(1, 6, { 2 * ws })
  end
  -- one process: the three micro-batches' gradients summed, each batch the mean over all ranks
  ref:zero_grad()
  for k = 1, 3 do F.cross_entropy(ref(xs[k]), ys[k]):backward() end
  ddp:zero_grad()
  local mine = function(k) return xs[k]:narrow(1, rank * 2 + 1, 2), ys[k]:narrow(1, rank * 2 + 1, 2) end
  local r = ddp:no_sync(function(a)
    for k = 1, 2 do
      local x, y = mine(k)
      F.cross_entropy(ddp(x), y):backward()
    end
    return a + 1
  end, 41)
  assert(r == 42, 'no_sync returns what its function returns')
  -- still local: rank r's gradient is its own
  if ws > 1 then
    local g = m[1].weight.grad:clone()
    local all = {}
    for i = 1, ws do all[i] = torch.zeros_like(g) end
    dist.all_gather(all, g)
    assert(not torch.equal(all[1], all[2]), 'gradients differ between ranks inside no_sync')
  end
  local x, y = mine(3)
  F.cross_entropy(ddp(x), y):backward()
  for i, p in ipairs(m:parameters()) do near(p.grad, ref:parameters()[i].grad, 1e-12, 0, 'param ' .. i) end
end)

check('construction: rank 0\'s parameters and buffers everywhere; broadcast_buffers before each forward', function()
  torch.manual_seed(20 + rank)
  local m = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Linear(6, 2))
  m[2].running_mean:fill_(rank)
  local ddp = DDP(m)
  local function gathered(t)
    local all = {}
    for i = 1, ws do all[i] = torch.zeros_like(t) end
    dist.all_gather(all, t)
    return all
  end
  for _, p in ipairs(m:parameters()) do
    local all = gathered(p:detach())
    for i = 2, ws do eq(all[i], all[1], 'parameters equal after construction') end
  end
  eq(m[2].running_mean, torch.zeros(6), "rank 0's buffer")
  -- each forward starts from rank 0's buffers (each rank then updates them with its own batch)
  local seen = {}
  local h = m:register_forward_pre_hook(function() seen[#seen + 1] = m[2].running_mean:clone() end)
  torch.manual_seed(30 + rank)
  for _ = 1, 3 do ddp(torch.randn(5, 4) + rank):sum():backward() end
  h:remove()
  for k = 1, 3 do
    local all = gathered(seen[k])
    for i = 2, ws do eq(all[i], all[1], 'buffers at forward ' .. k) end
  end
  if ws > 1 then
    local all = gathered(m[2].running_mean:clone())
    assert(not torch.equal(all[1], all[2]), 'after its forward each rank has its own running_mean')
  end
  -- broadcast_buffers=false: each keeps its own
  torch.manual_seed(40)
  local m2 = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6))
  local d2 = DDP(m2, { broadcast_buffers = false })
  for _ = 1, 2 do d2(torch.randn(5, 4) + rank):sum():backward() end
  if ws > 1 then
    local all = gathered(m2[2].running_mean:clone())
    assert(not torch.equal(all[1], all[2]), 'broadcast_buffers=false keeps each rank\'s')
  end
end)

check('state_dict: module. keys; load_state_dict takes either; checkpoints written by rank 0, loaded by all', function()
  torch.manual_seed(50)
  local ddp = DDP(mlp())
  local sd = ddp:state_dict()
  assert(sd['module.0.weight'] ~= nil and sd['0.weight'] == nil, 'keys carry module.')
  local plain = ddp.module:state_dict()
  assert(plain['0.weight'] ~= nil, 'ddp.module:state_dict() has the plain keys')
  -- a checkpoint: rank 0 writes it (atomically), everyone loads it after a barrier
  local path = os.getenv('DIST_SPEC_DIR') .. '/ckpt.mt'
  ddp.module[1].bias:detach():fill_(0.25)
  if rank == 0 then torch.save(ddp.module:state_dict(), path) end
  dist.barrier()
  local m2 = mlp()
  m2:load_state_dict(torch.load(path))
  eq(m2[1].bias, torch.full({ 32 }, 0.25), 'loaded by rank ' .. rank)
  local d2 = DDP(mlp())
  d2:load_state_dict(torch.load(path)) -- plain keys into the wrapper
  eq(d2.module[1].bias, torch.full({ 32 }, 0.25), 'plain keys into the wrapper')
  d2:load_state_dict(sd) -- prefixed keys
  raises(function() d2:load_state_dict({ ['module.nope'] = torch.ones(1) }) end, 'Unexpected key(s) in state_dict')
  dist.barrier()
end)

check('a DDP over a subgroup', function()
  local firsts = {}
  for r = 0, math.max(0, ws - 2) do firsts[#firsts + 1] = r end
  local g = dist.new_group(firsts)
  if dist.get_rank(g) < 0 then return end
  torch.manual_seed(60 + rank)
  local ddp = DDP(nn.Linear(3, 2):double(), { process_group = g })
  local x = torch.ones(1, 3, { dtype = torch.float64 }) * (rank + 1)
  ddp(x):sum():backward()
  local want = 0
  for _, r in ipairs(firsts) do want = want + r + 1 end
  eq(ddp.module.weight.grad, torch.ones(2, 3, { dtype = torch.float64 }) * (want / #firsts), 'group average')
end)

check('a forward without grad (evaluation) synchronises nothing; training goes on after it', function()
  torch.manual_seed(70)
  local ref = mlp():double()
  local m = mlp():double()
  m:load_state_dict(ref:state_dict())
  local ddp = DDP(m)
  local x = torch.randn(2 * ws, 20, { dtype = torch.float64 })
  local y = torch.randint(1, 6, { 2 * ws })
  ddp:eval()
  local out = torch.no_grad(function() return ddp(x) end)
  assert(out.grad_fn == nil, 'no graph')
  ddp:train()
  F.cross_entropy(ref(x), y):backward()
  F.cross_entropy(ddp(x:narrow(1, rank * 2 + 1, 2)), y:narrow(1, rank * 2 + 1, 2)):backward()
  for i, p in ipairs(m:parameters()) do near(p.grad, ref:parameters()[i].grad, 1e-12, 0, 'param ' .. i) end
end)

check('construction errors', function()
  local frozen = nn.Linear(2, 2)
  frozen:requires_grad_(false)
  raises(function() DDP(frozen) end, "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient.")
  raises(function() DDP(nn.Linear(2, 2), { device_ids = { 0 } }) end, 'device_ids and output_device arguments only work with')
  raises(function() DDP(42) end, 'module must be an nn.Module')
  raises(function() DDP(nn.Linear(2, 2), { bucket_cap_mb = -1 }) end, 'bucket_cap_mb must be a positive number')
end)

check('DistributedSampler through a DataLoader with 2 worker processes in each rank: the rank\'s share, nothing on stderr', function()
  -- (workers forked after MPI_Init never call MPI; the spec checks stderr is empty)
  local data = torch.utils.data
  local ds = data.TensorDataset(torch.arange(1, 42):double():view(41, 1))
  local sampler = data.DistributedSampler(ds, { shuffle = true, seed = 3 })
  sampler:set_epoch(2)
  local got = {}
  for b in data.DataLoader(ds, { batch_size = 4, sampler = sampler, num_workers = 2 })() do
    local x = torch.is_tensor(b) and b or b[1]
    for i = 1, x:size(1) do got[#got + 1] = x[i][1]:item() end
  end
  local want = sampler:indices()
  assert(#got == #want and #got == math.ceil(41 / ws), ('%d samples, want %d'):format(#got, #want))
  for i = 1, #want do assert(got[i] == want[i], ('sample %d: %s, want %s'):format(i, got[i], want[i])) end
  -- every sample once over the ranks, padded from the start as PyTorch pads
  local all = {}
  dist.all_gather_object(all, got)
  local seen = {}
  for _, g in ipairs(all) do for _, v in ipairs(g) do seen[v] = (seen[v] or 0) + 1 end end
  for v = 1, 41 do assert(seen[v], 'sample ' .. v .. ' on no rank') end
end)

dist.barrier()
W.say('done')
