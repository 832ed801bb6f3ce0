-- The docs of torch.distributed (also require 'moontorch.distributed'), nn.parallel and
-- torch.utils.data.distributed (moontorch.doc: lua/doc/init.lua says how an entry is written).
-- Ranks count from 0. The examples run in one process: a world of one (where MPI is built).
local doc = ...

local INIT = "local dist = torch.distributed\nif dist.is_available() and not dist.is_initialized() then dist.init_process_group('mpi') end\n"

doc.section 'Process groups'
doc { 'torch.distributed.is_available() -> boolean', 'torch.distributed.is_mpi_available() -> boolean',
  does = 'Whether this build has the MPI backend (libmoontorch_mpi.so, built where CMake found Open MPI).',
  ex = 'print(type(torch.distributed.is_available()))  --> boolean' }
doc { 'torch.distributed.is_nccl_available() -> boolean', 'torch.distributed.is_gloo_available() -> boolean',
  'torch.distributed.is_ucc_available() -> boolean',
  does = 'false: moontorch has no NCCL (owed with the CUDA backend), gloo or UCC.',
  ex = 'print(torch.distributed.is_gloo_available())  --> false' }
doc { 'torch.distributed.is_torchelastic_launched() -> boolean',
  does = "Whether a launcher started this process: PyTorch's test, TORCHELASTIC_RUN_ID in the environment (torchrun sets it, and so does `moontorch -m distributed.run`).",
  ex = "print(torch.distributed.is_torchelastic_launched() == (os.getenv('TORCHELASTIC_RUN_ID') ~= nil))  --> true" }
doc { "torch.distributed.init_process_group([backend='mpi'], {timeout=1800, world_size=, rank=, init_method=, group_name=})",
  does = "Joins this process's world: rank and size come from MPI (mpirun, srun, `moontorch -m distributed.run`; started alone: a world of one); rank= and world_size= must agree with them, and WORLD_SIZE > 1 in the environment of a process started alone is an error saying how to start the others. timeout: seconds (or {seconds=, minutes=}) after which an operation that another rank keeps from finishing raises. Sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, and MASTER_ADDR (rank 0's host name; 127.0.0.1 alone) and MASTER_PORT (29500) where unset. Twice is an error; after destroy_process_group it may be called again.",
  ex = INIT .. "print(dist.is_initialized() == dist.is_available())  --> true" }
doc { 'torch.distributed.is_initialized() -> boolean',
  does = 'Whether the default process group exists.',
  ex = 'print(type(torch.distributed.is_initialized()))  --> boolean' }
doc { 'torch.distributed.destroy_process_group([group])',
  does = 'Forgets the group (nil: every group and the default one). MPI itself stays up until the process exits.',
  ex = INIT .. "if dist.is_available() then\n  local g = dist.new_group({0})\n  dist.destroy_process_group(g)\n  print(pcall(dist.barrier, {group = g}))\nend" }
doc { 'torch.distributed.get_rank([group]) -> number', 'torch.distributed.get_world_size([group]) -> number',
  does = "This process's rank in the group (0..size-1; -1 outside it) and the group's size (the default group's without one).",
  ex = INIT .. "if dist.is_available() then print(dist.get_rank(), dist.get_world_size()) end" }
doc { 'torch.distributed.get_backend([group]) -> string',
  does = "The group's backend: 'mpi'.",
  ex = INIT .. "if dist.is_available() then print(dist.get_backend()) end" }
doc { 'torch.distributed.new_group([ranks], {timeout=, backend=}) -> ProcessGroup',
  does = "A group of some of the world's ranks (all without ranks; sorted, as PyTorch's). Every process of the world calls it with the same ranks; one outside them gets a group whose get_rank is -1, and collectives over it do nothing there. timeout defaults to the world's.",
  ex = INIT .. "if dist.is_available() then\n  local g = dist.new_group({0})\n  print(dist.get_rank(g), g:size())\nend" }
doc { 'torch.distributed.get_global_rank(group, group_rank) -> number', 'torch.distributed.get_group_rank(group, global_rank) -> number',
  'torch.distributed.get_process_group_ranks(group) -> {number, ...}',
  pt = 'torch.distributed.get_global_rank, torch.distributed.get_group_rank, torch.distributed.get_process_group_ranks',
  does = "A group's rank as a world rank and back; the world ranks of a group, in its order.",
  ex = INIT .. "if dist.is_available() then print(dist.get_global_rank(dist.group.WORLD, 0), #dist.get_process_group_ranks()) end" }
doc { 'torch.distributed.group',
  does = 'group.WORLD: the default process group (nil before init_process_group).',
  ex = INIT .. "if dist.is_available() then print(dist.group.WORLD:size() == dist.get_world_size()) end" }
doc { 'torch.distributed.GroupMember',
  does = 'GroupMember.WORLD is group.WORLD; GroupMember.NON_GROUP_MEMBER is false here (a non-member gets a group whose rank is -1).',
  ex = 'print(torch.distributed.GroupMember.NON_GROUP_MEMBER)  --> false' }
doc { 'torch.distributed.Backend', 'torch.distributed.Backend.MPI', 'torch.distributed.Backend.NCCL',
  'torch.distributed.Backend.GLOO', 'torch.distributed.Backend.UNDEFINED',
  does = "Backend.MPI ('mpi'), NCCL, GLOO, UNDEFINED: the names init_process_group takes (MPI is moontorch's).",
  ex = 'print(torch.distributed.Backend.MPI)  --> mpi' }
doc { 'torch.distributed.ProcessGroup', 'torch.distributed.ProcessGroup:rank() -> number',
  'torch.distributed.ProcessGroup:size() -> number', 'torch.distributed.ProcessGroup:name() -> string',
  does = 'A process group (from init_process_group: group.WORLD, or new_group): its rank of this process, its size, its backend.',
  ex = INIT .. "if dist.is_available() then print(dist.group.WORLD:name()) end" }

doc.section 'Collectives'
doc { 'torch.distributed.ReduceOp', 'torch.distributed.ReduceOp.SUM', 'torch.distributed.ReduceOp.AVG',
  'torch.distributed.ReduceOp.PRODUCT', 'torch.distributed.ReduceOp.MIN', 'torch.distributed.ReduceOp.MAX',
  'torch.distributed.ReduceOp.BAND', 'torch.distributed.ReduceOp.BOR', 'torch.distributed.ReduceOp.BXOR',
  does = "The reductions: SUM, AVG (floating point), PRODUCT, MIN, MAX, BAND, BOR, BXOR (integer and bool). bool's SUM and MAX are or, PRODUCT and MIN and. A string names one too ('max').",
  ex = 'print(torch.distributed.ReduceOp.MAX)  --> ReduceOp.MAX' }
doc.alias('torch.distributed.reduce_op', 'torch.distributed.ReduceOp')
doc { 'torch.distributed.all_reduce(tensor, [op=SUM], [group], [async_op=false]) -> nil | Work',
  does = "Every rank's tensor becomes the reduction over the ranks, in place (any dtype, any strides). With async_op, a Work to wait on; the other collectives take async_op too.",
  ex = INIT .. "if dist.is_available() then\n  local t = torch.tensor({1, 2})\n  dist.all_reduce(t, {op = dist.ReduceOp.MAX})\n  print(t)\nend" }
doc { 'torch.distributed.all_reduce_coalesced(tensors, [op=SUM], [group], [async_op=false]) -> nil | Work',
  does = "all_reduce of each tensor of the array (one dtype and device, any strides), done as one reduction of them laid end to end: one collective rather than one per tensor.",
  ex = INIT .. "if dist.is_available() then\n  local a, b = torch.ones(2), torch.ones(3)\n  dist.all_reduce_coalesced({a, b})\n  print(a, b)\nend" }
doc { 'torch.distributed.broadcast(tensor, src, [group], [async_op])',
  does = "src's tensor into every rank's (src a world rank, also with a group).",
  ex = INIT .. "if dist.is_available() then local t = torch.ones(2); dist.broadcast(t, 0); print(t) end" }
doc { 'torch.distributed.reduce(tensor, dst, [op=SUM], [group], [async_op])',
  does = "The reduction over the ranks into dst's tensor; the others keep theirs.",
  ex = INIT .. "if dist.is_available() then local t = torch.ones(2); dist.reduce(t, 0); print(t) end" }
doc { 'torch.distributed.all_gather(tensor_list, tensor, [group], [async_op])',
  does = "tensor_list[i] receives rank i-1's tensor (one entry per rank, each of tensor's dtype and size).",
  ex = INIT .. "if dist.is_available() then\n  local out = {}\n  for i = 1, dist.get_world_size() do out[i] = torch.zeros(2) end\n  dist.all_gather(out, torch.ones(2))\n  print(out[1])\nend" }
doc { 'torch.distributed.all_gather_into_tensor(output_tensor, input_tensor, [group], [async_op])',
  does = "The ranks' inputs one after another in output_tensor (world_size times the input's size).",
  ex = INIT .. "if dist.is_available() then\n  local out = torch.zeros(dist.get_world_size(), 2)\n  dist.all_gather_into_tensor(out, torch.ones(2))\nend" }
doc { 'torch.distributed.gather(tensor, [gather_list], [dst=0], [group], [async_op])',
  does = "dst's gather_list[i] receives rank i-1's tensor; the other ranks give no list.",
  ex = INIT .. "if dist.is_available() then\n  local l = {}\n  for i = 1, dist.get_world_size() do l[i] = torch.zeros(1) end\n  dist.gather(torch.ones(1), dist.get_rank() == 0 and l or nil, 0)\nend" }
doc { 'torch.distributed.scatter(tensor, [scatter_list], [src=0], [group], [async_op])',
  does = "Rank i-1's tensor receives src's scatter_list[i]; the other ranks give no list.",
  ex = INIT .. "if dist.is_available() then\n  local l = {}\n  for i = 1, dist.get_world_size() do l[i] = torch.full({1}, i) end\n  local t = torch.zeros(1, {dtype = torch.int64})\n  dist.scatter(t, dist.get_rank() == 0 and l or nil, 0)\nend" }
doc { 'torch.distributed.reduce_scatter(output, input_list, [op=SUM], [group], [async_op])',
  does = "Rank i-1's output receives the reduction of every rank's input_list[i].",
  ex = INIT .. "if dist.is_available() then\n  local l = {}\n  for i = 1, dist.get_world_size() do l[i] = torch.ones(2) end\n  local out = torch.zeros(2)\n  dist.reduce_scatter(out, l)\nend" }
doc { 'torch.distributed.reduce_scatter_tensor(output, input, [op=SUM], [group], [async_op])',
  does = "As reduce_scatter, input holding the ranks' blocks one after another.",
  ex = INIT .. "if dist.is_available() then\n  local out = torch.zeros(2)\n  dist.reduce_scatter_tensor(out, torch.ones(2 * dist.get_world_size()))\nend" }
doc { 'torch.distributed.all_to_all(output_tensor_list, input_tensor_list, [group], [async_op])',
  does = "Rank r's input_tensor_list[j] goes to rank j-1's output_tensor_list[r+1]; sizes may differ between pairs.",
  ex = INIT .. "if dist.is_available() then\n  local ins, outs = {}, {}\n  for i = 1, dist.get_world_size() do ins[i] = torch.ones(i); outs[i] = torch.zeros(dist.get_rank() + 1) end\n  dist.all_to_all(outs, ins)\nend" }
doc { 'torch.distributed.all_to_all_single(output, input, [output_split_sizes], [input_split_sizes], [group], [async_op])',
  does = "input's first dimension split among the ranks (evenly, or by input_split_sizes), output gathering the pieces that come back.",
  ex = INIT .. "if dist.is_available() then\n  local n = dist.get_world_size()\n  local out = torch.zeros(n, 2)\n  dist.all_to_all_single(out, torch.ones(n, 2))\nend" }
doc { 'torch.distributed.barrier([group], [async_op])',
  does = 'Returns once every rank of the group has called it.',
  ex = INIT .. "if dist.is_available() then dist.barrier() end" }
doc { 'torch.distributed.Work', 'torch.distributed.Work:wait([timeout]) -> true',
  'torch.distributed.Work:is_completed() -> boolean', 'torch.distributed.Work:is_success() -> boolean',
  'torch.distributed.Work:exception() -> string | nil', 'torch.distributed.Work:result() -> {Tensor, ...}',
  'torch.distributed.Work:source_rank() -> number',
  does = "What async_op=true returns: wait() until done (raising if it failed or the group's timeout, or the one given, passed), is_completed() without waiting, result() the output tensors, source_rank() the sender of an irecv from any rank. A non-contiguous tensor holds the result once the work is waited for or seen completed.",
  ex = INIT .. "if dist.is_available() then\n  local w = dist.all_reduce(torch.ones(3), {async_op = true})\n  print(w:wait(), w:is_completed())\nend" }

doc.section 'Point to point'
doc { 'torch.distributed.send(tensor, dst, [group], [tag=0])', 'torch.distributed.recv(tensor, [src], [group], [tag=0]) -> number',
  does = "tensor to rank dst; recv fills tensor from src (any rank without one) and returns the sender's rank. Sizes must agree.",
  ex = INIT .. "if dist.is_available() and dist.get_world_size() > 1 then\n  if dist.get_rank() == 0 then dist.send(torch.ones(2), 1) elseif dist.get_rank() == 1 then dist.recv(torch.zeros(2), 0) end\nend" }
doc { 'torch.distributed.isend(tensor, dst, [group], [tag=0]) -> Work', 'torch.distributed.irecv(tensor, [src], [group], [tag=0]) -> Work',
  does = 'send and recv without waiting: both ways at once between two ranks, then wait().',
  ex = INIT .. "if dist.is_available() and dist.get_world_size() > 1 and dist.get_rank() < 2 then\n  local peer = 1 - dist.get_rank()\n  local r = dist.irecv(torch.zeros(2), peer)\n  dist.isend(torch.ones(2), peer):wait()\n  r:wait()\nend" }
doc { 'torch.distributed.P2POp(op, tensor, peer, [group], [tag=0]) -> P2POp', 'torch.distributed.batch_isend_irecv(p2p_op_list) -> {Work, ...}',
  does = 'A list of isend / irecv operations started together.',
  ex = "local dist = torch.distributed\nlocal op = dist.P2POp(dist.isend, torch.ones(1), 0)\nprint(torch.isinstance(op, dist.P2POp))  --> true" }

doc.section 'Lua values'
doc { 'torch.distributed.all_gather_object(object_list, obj, [group])', 'torch.distributed.broadcast_object_list(object_list, [src=0], [group])',
  'torch.distributed.gather_object(obj, [object_gather_list], [dst=0], [group])',
  'torch.distributed.scatter_object_list(scatter_object_output_list, scatter_object_input_list, [src=0], [group])',
  does = "The collectives of Lua values (anything torch.save takes: tables, numbers, strings, tensors, modules), through torch.save's bytes.",
  ex = INIT .. "if dist.is_available() then\n  local all = {}\n  dist.all_gather_object(all, {rank = dist.get_rank()})\n  print(all[1].rank)\nend" }

doc.section 'Data parallel'
doc { 'nn.parallel',
  does = 'nn.parallel.DistributedDataParallel, loaded on first use.',
  pt = 'torch.nn.parallel',
  ex = 'print(nn.parallel.DistributedDataParallel ~= nil)  --> true' }
doc { 'nn.parallel.DistributedDataParallel(module, {broadcast_buffers=true, process_group=, bucket_cap_mb=25, find_unused_parameters=false, gradient_as_bucket_view=false, static_graph=false, device_ids=, output_device=, dim=}) -> DistributedDataParallel',
  does = "PyTorch's DDP: rank 0's parameters and buffers everywhere at construction (every rank must hold the same parameters: a different count, shape or dtype is an error), then each backward averages the gradients over the ranks, bucket by bucket, each bucket's all-reduce starting as soon as its gradients are there. ddp.module is the module; state_dict keys carry module. and load_state_dict takes either kind.",
  unchecked_args = true,
  ex = INIT .. "if dist.is_available() then\n  local ddp = nn.parallel.DistributedDataParallel(nn.Linear(3, 2))\n  ddp(torch.ones(4, 3)):sum():backward()\n  print(ddp.module.bias.grad)\nend" }
doc { 'nn.parallel.DistributedDataParallel:no_sync(fn, ...) -> fn\'s results',
  does = "fn(...) with gradient synchronisation off (PyTorch's `with ddp.no_sync():`): gradients accumulate locally; the next synchronised backward averages the sums.",
  ex = INIT .. "if dist.is_available() then\n  local ddp = nn.parallel.DistributedDataParallel(nn.Linear(3, 2))\n  print(ddp:no_sync(function() ddp(torch.ones(1, 3)):sum():backward() return 'local' end))\nend" }
doc { 'nn.parallel.DistributedDataParallel:comm_stats() -> {steps=, comm_ms=, unhidden_ms=, buckets=, bucket_sizes=, shared_gradients=}',
  'nn.parallel.DistributedDataParallel:reset_comm_stats()', 'nn.parallel.DistributedDataParallel:bucket_names() -> {{name, ...}, ...}',
  pt = false,
  does = "Per synchronised step, the mean time of the all-reduces and the part of it backward did not hide (the wait after the last bucket started); shared_gradients: the gradients live in memory the ranks share and are averaged there (every rank on this node); the buckets' parameter names.",
  ex = INIT .. "if dist.is_available() then\n  local ddp = nn.parallel.DistributedDataParallel(nn.Linear(3, 2))\n  ddp(torch.ones(1, 3)):sum():backward()\n  print(ddp:comm_stats().steps, #ddp:bucket_names())\nend" }
doc { 'nn.parallel.DistributedDataParallel:will_sync_module_buffers() -> boolean',
  does = "Whether the next forward copies rank 0's buffers to every rank (broadcast_buffers, after a synchronised forward).",
  ex = INIT .. "if dist.is_available() then print(nn.parallel.DistributedDataParallel(nn.BatchNorm1d(2)):will_sync_module_buffers()) end" }

doc.section 'Optimizers'
doc { 'torch.distributed.optim.ZeroRedundancyOptimizer(params, {optimizer_class=, process_group=, parameters_as_bucket_view=false, <the optimizer\'s options>}) -> ZeroRedundancyOptimizer',
  'torch.distributed.optim.ZeroRedundancyOptimizer(params, optimizer_class, {options})',
  'torch.distributed.optim.ZeroRedundancyOptimizer:step([closure])', 'torch.distributed.optim.ZeroRedundancyOptimizer:consolidate_state_dict([to=0])',
  'torch.distributed.optim.ZeroRedundancyOptimizer:state_dict() -> table', 'torch.distributed.optim.ZeroRedundancyOptimizer:load_state_dict(state_dict)',
  does = "PyTorch 1.13's ZeRO stage 1: the parameters are shared out over the ranks (group after group, largest first, each to the rank with the fewest elements so far); each rank keeps the optimizer state of its share only (`.optim`, an optimizer_class over it), step() steps that share and broadcasts every parameter from the rank that owns it. zero_grad and param_groups are the whole model's (a scheduler's lr reaches the local optimizer). state_dict() answers on the rank that consolidate_state_dict(to) (called on every rank) sent the states to, in a plain optimizer's layout; load_state_dict takes such a dict on every rank. overlap_with_ddp is not supported.",
  ex = INIT .. "if dist.is_available() then\n  local net = nn.Linear(3, 2)\n  local zero = dist.optim.ZeroRedundancyOptimizer(net:parameters(), {optimizer_class = optim.Adam, lr = 0.1})\n  net(torch.ones(1, 3)):sum():backward()\n  zero:step()\n  print(#zero.optim.param_groups[1].params)\nend" }

doc { 'torch.utils.data.distributed.DistributedSampler(dataset, {num_replicas=, rank=, shuffle=true, seed=0, drop_last=false}) -> DistributedSampler',
  'torch.utils.data.distributed.DistributedSampler:set_epoch(epoch)',
  does = "This rank's share of a dataset (num_replicas and rank from the default group when not given): every rank draws the same permutation from seed + epoch (PyTorch's numbers), padded to a multiple of the ranks by repeating its start (drop_last: cut), and takes every num_replicas-th index from its rank. Indices from 1.",
  ex = "local s = data.DistributedSampler(data.TensorDataset(torch.arange(10)), {num_replicas = 3, rank = 1, shuffle = false})\nprint(table.concat(s:indices(), ' '), s:__len())  --> 2 5 8 1 4" }
doc { 'torch.utils.data.distributed.DistributedSampler:indices() -> {number, ...}',
  pt = false,
  does = "This rank's indices for the current epoch, as an array (what iterating the sampler yields).",
  ex = "local s = data.DistributedSampler(data.TensorDataset(torch.arange(4)), {num_replicas = 2, rank = 0, shuffle = false})\nprint(table.concat(s:indices(), ' '))  --> 1 3" }
doc.alias('torch.utils.data.DistributedSampler', 'torch.utils.data.distributed.DistributedSampler')
