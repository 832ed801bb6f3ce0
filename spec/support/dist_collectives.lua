-- Every collective of moontorch.distributed on every dtype, in each rank of an mpirun job
-- (spec/distributed_spec.lua runs it with -np 2 and -np 4): each rank computes what every rank
-- holds (inputs are a function of the rank), so the expected results are computed here, in one
-- process, and compared with what the collective gave.
local W = dofile((arg[0]:gsub('[^/]*$', '')) .. 'dist_harness.lua')
local torch, dist = W.torch, W.dist
local check, eq, raises = W.check, W.eq, W.raises

dist.init_process_group { backend = 'mpi', timeout = 60 }
local rank, ws = dist.get_rank(), dist.get_world_size()
W.rank = rank

local dtypes = { torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.float32,
  torch.float64, torch.bool, torch.bfloat16 }
local N = 16 -- elements of the in-place collectives (more than one chunk when MOONTORCH_DIST_MAX_COUNT is small)
local G = 6  -- elements per rank of the gathering ones

-- rank r's input: 1..5 (bool: alternate), shifted by rank
local function input(r, dt, n, shape)
  local base = torch.arange(n, { dtype = torch.int64 }) + r * 3
  local t
  if dt == torch.bool then t = (base % 2):eq(0) else t = (base % 5 + 1):to(dt) end
  return shape and t:view(shape) or t
end
-- values 1 or 2, for products that stay small
local function small(r, dt, n)
  local base = torch.arange(n, { dtype = torch.int64 }) + r
  if dt == torch.bool then return (base % 3):ne(0) end
  return (base % 2 + 1):to(dt)
end

-- what the reduction over all ranks gives, computed here
local function expected(op, dt, make)
  local acc = make(0)
  for r = 1, ws - 1 do
    local x = make(r)
    if dt == torch.bool then
      if op == 'SUM' or op == 'MAX' or op == 'BOR' then acc = torch.logical_or(acc, x)
      elseif op == 'BXOR' then acc = torch.logical_xor(acc, x)
      else acc = torch.logical_and(acc, x) end
    elseif op == 'SUM' or op == 'AVG' then acc = (acc:double() + x:double()):to(dt)
    elseif op == 'PRODUCT' then acc = (acc:double() * x:double()):to(dt)
    elseif op == 'MIN' then acc = torch.minimum(acc, x)
    elseif op == 'MAX' then acc = torch.maximum(acc, x)
    elseif op == 'BAND' then acc = torch.bitwise_and(acc, x)
    elseif op == 'BOR' then acc = torch.bitwise_or(acc, x)
    elseif op == 'BXOR' then acc = torch.bitwise_xor(acc, x) end
  end
  if op == 'AVG' then acc = (acc:double() / ws):to(dt) end
  return acc
end

local function ops_for(dt)
  if dt.is_floating_point then return { 'SUM', 'AVG', 'PRODUCT', 'MIN', 'MAX' } end
  return { 'SUM', 'PRODUCT', 'MIN', 'MAX', 'BAND', 'BOR', 'BXOR' }
end

for _, dt in ipairs(dtypes) do
  local name = tostring(dt)
  -- all_reduce, each op, contiguous and transposed (a view into a larger tensor)
  for _, op in ipairs(ops_for(dt)) do
    local make = op == 'PRODUCT' and function(r) return small(r, dt, N) end or function(r) return input(r, dt, N) end
    check(('all_reduce %s %s'):format(op, name), function()
      local t = make(rank)
      dist.all_reduce(t, dist.ReduceOp[op])
      eq(t, expected(op, dt, make), 'all_reduce')
    end)
    check(('all_reduce %s %s, non-contiguous'):format(op, name), function()
      local host = torch.zeros(4, 8, { dtype = dt })
      local t = host:narrow(2, 2, 4):t() -- 4x4 view, strides (1, 8)
      t:copy_(make(rank):view(4, 4))
      dist.all_reduce(t, { op = dist.ReduceOp[op] })
      eq(t:contiguous(), expected(op, dt, make):view(4, 4), 'all_reduce non-contiguous')
      eq(host:narrow(2, 1, 1), torch.zeros(4, 1, { dtype = dt }), 'the rest of the storage')
    end)
  end
  check('broadcast ' .. name, function()
    local src = ws - 1
    local t = input(rank, dt, N, { 4, 4 }):t()
    dist.broadcast(t, src)
    eq(t, input(src, dt, N, { 4, 4 }):t(), 'broadcast')
  end)
  check('reduce ' .. name, function()
    local dst = 1 % ws
    local t = input(rank, dt, N)
    dist.reduce(t, dst, dist.ReduceOp.MAX)
    if rank == dst then eq(t, expected('MAX', dt, function(r) return input(r, dt, N) end), 'reduce at dst')
    else eq(t, input(rank, dt, N), 'reduce elsewhere: unchanged') end
  end)
  check('all_gather ' .. name, function()
    local out = {}
    for i = 1, ws do out[i] = torch.zeros(2, 3, { dtype = dt }) end
    out[ws] = torch.zeros(3, 2, { dtype = dt }):t() -- a non-contiguous output
    dist.all_gather(out, input(rank, dt, G, { 2, 3 }))
    for i = 1, ws do eq(out[i]:contiguous(), input(i - 1, dt, G, { 2, 3 }), 'all_gather[' .. i .. ']') end
  end)
  check('all_gather_into_tensor ' .. name, function()
    local out = torch.zeros(ws, G, { dtype = dt })
    dist.all_gather_into_tensor(out, input(rank, dt, G))
    for i = 1, ws do eq(out[i], input(i - 1, dt, G), 'row ' .. i) end
  end)
  check('gather ' .. name, function()
    local dst = ws - 1
    local list = nil
    if rank == dst then
      list = {}
      for i = 1, ws do list[i] = torch.zeros(G, { dtype = dt }) end
    end
    dist.gather(input(rank, dt, G), list, dst)
    if rank == dst then for i = 1, ws do eq(list[i], input(i - 1, dt, G), 'gather[' .. i .. ']') end end
  end)
  check('scatter ' .. name, function()
    local list
    if rank == 0 then
      list = {}
      for i = 1, ws do list[i] = input(10 + i, dt, G) end
    end
    local t = torch.zeros(G, { dtype = dt })
    dist.scatter(t, list, 0)
    eq(t, input(10 + rank + 1, dt, G), 'scatter')
  end)
  check('reduce_scatter ' .. name, function()
    local list = {}
    for j = 1, ws do list[j] = input(rank * 7 + j, dt, G) end
    local out = torch.zeros(G, { dtype = dt })
    dist.reduce_scatter(out, list, dist.ReduceOp.MAX)
    eq(out, expected('MAX', dt, function(r) return input(r * 7 + rank + 1, dt, G) end), 'reduce_scatter')
  end)
  check('reduce_scatter_tensor ' .. name, function()
    local inp = input(rank, dt, G * ws)
    local out = torch.zeros(G, { dtype = dt })
    dist.reduce_scatter_tensor(out, inp, dist.ReduceOp.MIN)
    eq(out, expected('MIN', dt, function(r) return input(r, dt, G * ws):narrow(1, rank * G + 1, G) end),
      'reduce_scatter_tensor')
  end)
  check('all_to_all ' .. name, function()
    -- rank r sends r + j + 1 elements to rank j
    local ins, outs = {}, {}
    for j = 1, ws do
      ins[j] = input(rank * 5 + j, dt, rank + j)
      outs[j] = torch.zeros(j - 1 + rank + 1, { dtype = dt })
    end
    dist.all_to_all(outs, ins)
    for j = 1, ws do eq(outs[j], input((j - 1) * 5 + rank + 1, dt, j - 1 + rank + 1), 'all_to_all[' .. j .. ']') end
  end)
  check('all_to_all_single ' .. name, function()
    local inp = input(rank, dt, ws * 2, { ws, 2 })
    local out = torch.zeros(ws, 2, { dtype = dt })
    dist.all_to_all_single(out, inp)
    for j = 1, ws do eq(out[j], input(j - 1, dt, ws * 2, { ws, 2 })[rank + 1], 'row ' .. j) end
  end)
  check('send/recv ring ' .. name, function()
    local nxt, prv = (rank + 1) % ws, (rank - 1 + ws) % ws
    local got = torch.zeros(N, { dtype = dt })
    if ws == 1 then return end
    if rank % 2 == 0 then
      dist.send(input(rank, dt, N), nxt)
      local from = dist.recv(got, prv)
      assert(from == prv, 'recv returned ' .. tostring(from))
    else
      local from = dist.recv(got, prv)
      assert(from == prv, 'recv returned ' .. tostring(from))
      dist.send(input(rank, dt, N), nxt)
    end
    eq(got, input(prv, dt, N), 'recv')
  end)
end

-- asynchronous forms: works, wait, is_completed, result, overlapping isend/irecv
check('async all_reduce and work handles', function()
  local t = torch.ones(1000) * (rank + 1)
  local w = dist.all_reduce(t, { async_op = true })
  assert(w:wait() == true, 'wait returns true')
  assert(w:is_completed() and w:is_success() and w:exception() == nil, 'completed')
  eq(t, torch.ones(1000) * (ws * (ws + 1) / 2), 'value')
  local works, ts = {}, {}
  for k = 1, 5 do
    ts[k] = torch.full({ 64 }, k + rank)
    works[k] = dist.all_reduce(ts[k], dist.ReduceOp.SUM, nil, true)
  end
  for k = 5, 1, -1 do works[k]:wait() end
  for k = 1, 5 do eq(ts[k], torch.full({ 64 }, k * ws + ws * (ws - 1) / 2), 'async ' .. k) end
  local out = {}
  for i = 1, ws do out[i] = torch.zeros(3) end
  local w2 = dist.all_gather(out, torch.ones(3) * rank, { async_op = true })
  local res = w2:result()
  assert(res == out, 'result() is the output list')
  for i = 1, ws do eq(out[i], torch.ones(3) * (i - 1), 'async all_gather') end
  local b = dist.barrier({ async_op = true })
  b:wait()
  -- a non-contiguous tensor gets its values once the work is waited for
  local host = torch.zeros(3, 4)
  local v = host:t()
  v:fill_(rank)
  local w3 = dist.all_reduce(v, { async_op = true })
  w3:wait()
  eq(host, torch.ones(3, 4) * (ws * (ws - 1) / 2), 'non-contiguous async')
end)

check('isend/irecv both ways at once, recv from any rank, tags', function()
  if ws == 1 then return end
  -- pairs (0, 1), (2, 3), ...; with an odd world size the last rank has no pair
  local peer = rank % 2 == 0 and rank + 1 or rank - 1
  if peer >= ws then peer = nil end
  if peer then
    local a, b = torch.zeros(100), torch.zeros(5, { dtype = torch.int64 })
    local r1 = dist.irecv(a, peer)
    local r2 = dist.irecv(b, { src = peer, tag = 7 })
    local s2 = dist.isend(torch.arange(5) + rank, peer, nil, 7)
    local s1 = dist.isend(torch.ones(100) * rank, peer)
    for _, w in ipairs({ s1, s2, r1, r2 }) do w:wait() end
    eq(a, torch.ones(100) * peer, 'irecv')
    eq(b, torch.arange(5) + peer, 'irecv with a tag')
  end
  -- from any rank: rank 0 hears from every other rank (tag 5: a message of the pairs' exchange
  -- below, tag 3, must not match)
  if rank == 0 then
    local seen = {}
    for _ = 1, ws - 1 do
      local t = torch.zeros(1, { dtype = torch.int64 })
      local from = dist.recv(t, { tag = 5 })
      assert(t:item() == from * 10, 'the sender wrote its rank')
      seen[from] = true
    end
    for r = 1, ws - 1 do assert(seen[r], 'heard from ' .. r) end
  else
    dist.send(torch.tensor({ rank * 10 }, { dtype = torch.int64 }), 0, nil, 5)
  end
  -- batch_isend_irecv
  if peer then
    local x, y = torch.ones(4) * rank, torch.zeros(4)
    local works = dist.batch_isend_irecv({ dist.P2POp(dist.isend, x, peer, nil, 3), dist.P2POp(dist.irecv, y, peer, nil, 3) })
    for _, w in ipairs(works) do w:wait() end
    eq(y, torch.ones(4) * peer, 'batch_isend_irecv')
  end
end)

check('new_group: a subgroup, its ranks, members and non-members', function()
  local evens = {}
  for r = 0, ws - 1, 2 do evens[#evens + 1] = r end
  local g = dist.new_group(evens)
  local t = torch.ones(3) * (rank + 1)
  local w = dist.all_reduce(t, { group = g })
  if rank % 2 == 0 then
    local want = 0
    for _, r in ipairs(evens) do want = want + r + 1 end
    eq(t, torch.ones(3) * want, 'subgroup all_reduce')
    assert(dist.get_rank(g) == rank / 2, 'rank in the group')
    assert(dist.get_world_size(g) == #evens, 'group size')
    -- src is a global rank
    local b = torch.full({ 2 }, rank)
    dist.broadcast(b, evens[#evens], g)
    eq(b, torch.full({ 2 }, evens[#evens]), 'broadcast in the group from a global rank')
    assert(dist.get_global_rank(g, #evens - 1) == evens[#evens], 'get_global_rank')
  else
    assert(w == nil, 'a non-member does nothing')
    eq(t, torch.ones(3) * (rank + 1), 'unchanged')
    assert(dist.get_rank(g) == -1, 'not a member: rank -1')
  end
  -- a group of every rank in reverse: sorted, as PyTorch's
  local rev = {}
  for r = ws - 1, 0, -1 do rev[#rev + 1] = r end
  local all = dist.new_group(rev)
  assert(dist.get_rank(all) == rank, 'ranks sorted')
  dist.destroy_process_group(all)
  raises(function() dist.all_reduce(torch.ones(1), { group = all }) end, 'destroyed')
end)

check('Lua values: all_gather_object, broadcast_object_list, gather_object, scatter_object_list', function()
  local got = {}
  dist.all_gather_object(got, { rank = rank, name = 'r' .. rank, t = torch.full({ 2 }, rank) })
  for i = 1, ws do
    assert(got[i].rank == i - 1 and got[i].name == 'r' .. (i - 1), 'all_gather_object ' .. i)
    eq(got[i].t, torch.full({ 2 }, i - 1), 'a tensor inside')
  end
  local list = rank == 0 and { 'a', { b = 2 }, 3 } or { false, false, false }
  dist.broadcast_object_list(list, 0)
  assert(list[1] == 'a' and list[2].b == 2 and list[3] == 3, 'broadcast_object_list')
  local gl = rank == 0 and {} or nil
  dist.gather_object(rank * 2, gl, 0)
  if rank == 0 then for i = 1, ws do assert(gl[i] == (i - 1) * 2, 'gather_object') end end
  local out = {}
  local inp = nil
  if rank == ws - 1 then
    inp = {}
    for i = 1, ws do inp[i] = 'to ' .. (i - 1) end
  end
  dist.scatter_object_list(out, inp, ws - 1)
  assert(out[1] == 'to ' .. rank, 'scatter_object_list')
end)

check('argument errors name the op and what was wrong', function()
  raises(function() dist.all_reduce(42) end, 'distributed.all_reduce: tensor must be a tensor, got 42')
  raises(function() dist.all_reduce(torch.ones(2), 'median') end, 'op must be a distributed.ReduceOp')
  raises(function() dist.all_reduce(torch.ones(2, { dtype = torch.int64 }), dist.ReduceOp.AVG) end,
    'ReduceOp.AVG needs a floating-point tensor, got int64')
  raises(function() dist.all_reduce(torch.ones(2), dist.ReduceOp.BAND) end, 'ReduceOp.BAND needs an integer or bool tensor')
  raises(function() dist.broadcast(torch.ones(2), ws) end, ('src %d is not a rank of the group'):format(ws))
  raises(function() dist.all_gather({ torch.ones(2), torch.ones(2), torch.ones(2), torch.ones(2), torch.ones(2) },
    torch.ones(2)) end, ('must hold one tensor per rank of the group (%d), got 5'):format(ws))
  local out = {}
  for i = 1, ws do out[i] = torch.zeros(2, { dtype = torch.float64 }) end
  raises(function() dist.all_gather(out, torch.ones(2)) end, 'tensor_list[1] has dtype torch.float64, but the input tensor has torch.float32')
  raises(function() dist.all_reduce(torch.ones(2, { device = 'meta' })) end, 'meta device')
  raises(function() dist.send(torch.ones(2), rank) end, 'Invalid destination rank')
  raises(function() dist.init_process_group('mpi') end, 'trying to initialize the default process group twice!')
  raises(function() dist.all_reduce(torch.ones(2), { opp = 1 }) end, "got an unexpected keyword argument 'opp'")
  if rank ~= 0 then
    raises(function() dist.gather(torch.ones(1), { torch.ones(1) }, 0) end, 'must NOT be specified on non-destination ranks')
  else
    raises(function() dist.gather(torch.ones(1), nil, 0) end, 'must be specified on destination rank')
  end
end)

check('rank, size, backend, environment', function()
  assert(dist.is_initialized() and dist.is_available() and dist.is_mpi_available(), 'available')
  assert(dist.get_backend() == 'mpi', 'backend')
  assert(tonumber(os.getenv('RANK')) == rank and tonumber(os.getenv('WORLD_SIZE')) == ws, 'RANK/WORLD_SIZE set')
  assert(os.getenv('LOCAL_RANK') ~= nil, 'LOCAL_RANK set')
  -- MASTER_ADDR: rank 0's host name (this machine's: every rank runs here), or 127.0.0.1 alone; MASTER_PORT 29500
  local f = io.open('/proc/sys/kernel/hostname', 'rb') -- (no child process: ./run asan preloads ASan into children)
  local hostname = f:read('*l')
  f:close()
  assert(os.getenv('MASTER_ADDR') == (ws == 1 and '127.0.0.1' or hostname), 'MASTER_ADDR ' .. tostring(os.getenv('MASTER_ADDR')))
  assert(os.getenv('MASTER_PORT') == '29500', 'MASTER_PORT')
  assert(dist.group.WORLD:size() == ws and dist.group.WORLD:rank() == rank, 'group.WORLD')
end)

-- the on-node all_reduce (a shared segment when every rank runs on this node, see core/dist/mpi.c's
-- shm_all_reduce; MOONTORCH_DIST_SHM=0: MPI_Allreduce): random values, every rank's input made in
-- every rank (seeded by rank), the reduction computed here in float64 in rank order
local chunked = os.getenv('MOONTORCH_DIST_CHUNK') ~= nil
local on_node = ws > 1 and os.getenv('MOONTORCH_DIST_SHM') ~= '0'
check('the on-node all_reduce is used where every rank runs on this node', function()
  local B = dist.group.WORLD._B
  local bytes = tonumber(B.D.mt_dist_group_shared_bytes(dist.group.WORLD._h))
  assert((bytes > 0) == on_node, ('shared bytes %d with %d ranks'):format(bytes, ws))
  -- (by default 16 MiB over the ranks, within 1..4 MiB)
  local want = tonumber(os.getenv('MOONTORCH_DIST_SHM_BYTES') or math.max(1, math.min(4, 16 / ws)) * 1024 * 1024)
  if on_node then assert(bytes == math.floor(want), ('rounds of %d bytes per rank, got %d'):format(want, bytes)) end
end)
local shm_ops = {
  [torch.float64] = { 'SUM', 'AVG', 'PRODUCT' }, [torch.float32] = { 'SUM', 'AVG', 'PRODUCT' },
  [torch.int32] = { 'SUM', 'PRODUCT', 'MIN', 'MAX' }, [torch.int64] = { 'SUM', 'PRODUCT', 'MIN', 'MAX' } }
-- lengths: empty, one, not divisible by the world size, and (not in pieces of 7) more than one round
-- of 4 MiB (float32: 2 rounds, float64: 3)
local lengths = { 0, 1, 2, 3, 17, 1001 }
if not chunked then lengths[#lengths + 1] = 1200007 end
local function random_input(r, dt, n, salt)
  local gen = torch.Generator():manual_seed(1000 + 97 * r + n + salt)
  if dt.is_floating_point then return torch.randn(n, { dtype = torch.float64, generator = gen }):to(dt) end
  return torch.randint(-40, 41, { n }, { dtype = dt, generator = gen })
end
for _, dt in ipairs({ torch.float64, torch.float32, torch.int32, torch.int64 }) do
  for oi, op in ipairs(shm_ops[dt]) do
    check(('on-node all_reduce %s %s, lengths %s'):format(op, tostring(dt), table.concat(lengths, ' ')), function()
      for _, n in ipairs(lengths) do
        local t = random_input(rank, dt, n, oi)
        dist.all_reduce(t, dist.ReduceOp[op])
        local acc = random_input(0, dt, n, oi):double()
        for r = 1, ws - 1 do
          local x = random_input(r, dt, n, oi):double()
          if op == 'SUM' or op == 'AVG' then acc = acc + x
          elseif op == 'PRODUCT' then acc = acc * x
          elseif op == 'MIN' then acc = torch.minimum(acc, x)
          else acc = torch.maximum(acc, x) end
        end
        if op == 'AVG' then acc = acc / ws end
        assert(t.dtype == dt and t:numel() == n, 'dtype and size kept')
        local what = ('%s %s n=%d'):format(op, tostring(dt), n)
        if dt == torch.float64 then W.near(t, acc, 0, 1e-12, what)
        elseif dt == torch.float32 then W.near(t, acc, 1e-5, 1e-5, what)
        else eq(t, acc:to(dt), what) end
      end
    end)
  end
end
check('on-node all_reduce: a non-contiguous float64 view, AVG, and every rank gets the same bits', function()
  local base = random_input(rank, torch.float64, 7 * 9, 5):view(7, 9)
  local v = base:t()
  dist.all_reduce(v, dist.ReduceOp.AVG)
  local acc = random_input(0, torch.float64, 63, 5)
  for r = 1, ws - 1 do acc = acc + random_input(r, torch.float64, 63, 5) end
  W.near(base:reshape(63), acc / ws, 0, 1e-12, 'non-contiguous')
  local all = {}
  for r = 1, ws do all[r] = torch.zeros(7, 9, { dtype = torch.float64 }) end
  dist.all_gather(all, base)
  for r = 2, ws do eq(all[r], all[1], 'rank ' .. (r - 1) .. ' got the same bits as rank 0') end
end)
check('all_reduce_coalesced: several tensors (one non-contiguous, one empty) = each all_reduce, one process', function()
  for oi, op in ipairs({ 'SUM', 'AVG' }) do
    local sizes = { 5, 0, 1001, 63 }
    local ts = {}
    for i, n in ipairs(sizes) do ts[i] = random_input(rank, torch.float64, n, 10 * oi + i) end
    ts[4] = ts[4]:view(7, 9):t() -- non-contiguous
    dist.all_reduce_coalesced(ts, dist.ReduceOp[op])
    for i, n in ipairs(sizes) do
      local acc = random_input(0, torch.float64, n, 10 * oi + i)
      for r = 1, ws - 1 do acc = acc + random_input(r, torch.float64, n, 10 * oi + i) end
      if op == 'AVG' then acc = acc / ws end
      local got = i == 4 and ts[i]:t():reshape(n) or ts[i]
      W.near(got, acc, 0, 1e-12, ('%s tensor %d'):format(op, i))
    end
  end
  local a, b = torch.tensor({ rank, -rank }, { dtype = torch.int64 }), torch.tensor({ 10 * rank }, { dtype = torch.int64 })
  local w = dist.all_reduce_coalesced({ a, b }, dist.ReduceOp.MAX, nil, true)
  w:wait()
  eq(a, torch.tensor({ ws - 1, 0 }, { dtype = torch.int64 }), 'MAX a')
  eq(b, torch.tensor({ 10 * (ws - 1) }, { dtype = torch.int64 }), 'MAX b')
  raises(function() dist.all_reduce_coalesced({ torch.ones(2), torch.ones(2, { dtype = torch.float64 }) }) end,
    'distributed.all_reduce_coalesced: tensors[2] has dtype torch.float64, but the input tensor has torch.float32')
  raises(function() dist.all_reduce_coalesced({ tensors = {} }) end, 'tensors must not be empty')
  raises(function() dist.all_reduce_coalesced(torch.ones(2)) end, 'tensors must be an array of tensors')
end)
if on_node then
  check('on-node all_reduce: tensors that differ between ranks are an error on every rank; the group still works', function()
    local t = torch.ones(rank == 0 and 3 or 4)
    raises(function() dist.all_reduce(t) end, "distributed.all_reduce: the ranks' tensors differ")
    local d = torch.ones(5, { dtype = rank == ws - 1 and torch.float64 or torch.float32 })
    raises(function() dist.all_reduce(d) end, "distributed.all_reduce: the ranks' tensors differ")
    local u = torch.ones(2)
    dist.all_reduce(u)
    eq(u, torch.ones(2) * ws, 'after the error')
  end)
end

dist.barrier()
dist.destroy_process_group()
W.check('destroy_process_group', function()
  assert(not dist.is_initialized(), 'not initialized after destroy')
  raises(function() dist.get_rank() end, 'Default process group has not been initialized')
end)
-- a new default group after destroy (MPI itself stays up until exit)
W.check('backends moontorch has not', function()
  raises(function() dist.init_process_group('gloo') end, "backend 'gloo' is not part of moontorch")
  raises(function() dist.init_process_group('nccl') end, "backend 'nccl' (CUDA tensors) needs moontorch's CUDA backend")
  raises(function() dist.init_process_group('tcp') end, "Invalid backend: 'tcp'")
end)
dist.init_process_group('mpi')
W.check('init again after destroy', function()
  local t = torch.ones(2)
  dist.all_reduce(t)
  eq(t, torch.ones(2) * ws, 'after re-init')
end)
W.say('done')
