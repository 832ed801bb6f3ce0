-- moontorch.distributed (also torch.distributed): PyTorch 1.13's torch.distributed over MPI.
--   local dist = require 'moontorch.distributed'
--   dist.init_process_group('mpi')                       -- or {backend='mpi', timeout=60}
--   local rank, size = dist.get_rank(), dist.get_world_size()
--   dist.all_reduce(t)                                    -- sum over the ranks, in place
--   local work = dist.all_reduce(t, {op=dist.ReduceOp.MAX, async_op=true}); work:wait()
-- Processes are started by `mpirun -np N moontorch script.lua`, Slurm's srun, or
-- `moontorch -m distributed.run --nproc N script.lua`; a script started alone is a world of one.
-- Ranks count from 0, as MPI, RANK and PyTorch count them (they are process numbers, not tensor
-- positions). Arguments follow PyTorch's order, positionally or by name in a trailing options table.
-- Tensors may have any dtype and any strides (a non-contiguous one travels through a contiguous copy).
-- Timeouts are seconds (a number, or {seconds=, minutes=, hours=}); an operation that another rank
-- keeps from finishing (dead, hung, or calling something else) raises after the group's timeout.
-- The backends: 'mpi' (CPU tensors; lua/distributed/mpi.lua over core/dist/), 'nccl' for CUDA
-- tensors once moontorch has a CUDA backend (the seam: a backend table per device type, below).
local ffi = require 'ffi'
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local class = require 'moontorch.class'
local T = require 'moontorch.tensor'
local argcheck = require 'moontorch.argcheck'

local fail, is_tensor, describe = core.fail, T.is_tensor, argcheck.describe
local type, select, pairs, ipairs, next, tostring, getmetatable, setmetatable, rawget =
  type, select, pairs, ipairs, next, tostring, getmetatable, setmetatable, rawget
local floor = math.floor
local unpack = unpack or table.unpack

local ffi = require 'ffi'
local libc = require('moontorch.libc').declare {
  setenv = 'int %s(const char *name, const char *value, int overwrite)',
  gethostname = 'int %s(char *name, size_t len)',
}

local M = {}
local P = 'distributed.'
-- the size of DDP's first bucket once its buckets are rebuilt (PyTorch's, and settable as there)
M._DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024
local DEFAULT_TIMEOUT = 1800 -- PyTorch's default_pg_timeout: 30 minutes

------------------------------------------------------------------------------ arguments
-- args(fn, names, ...): the values of `names` given positionally, or by name in a trailing options
-- table (a plain table with no array items: Lua arrays of tensors and class instances are values)
local function is_opts(v)
  return type(v) == 'table' and getmetatable(v) == nil and rawget(v, 1) == nil
end
local function args(fn, names, ...)
  local n = select('#', ...)
  local v = { ... }
  while n > 0 and v[n] == nil do n = n - 1 end
  local opts = v[n]
  if n > 0 and is_opts(opts) then
    v[n] = nil
    n = n - 1
    for k, val in pairs(opts) do
      local found = false
      for i = 1, #names do
        if names[i] == k then
          if i <= n and v[i] ~= nil then fail(P .. fn, ("got multiple values for argument '%s'"):format(k)) end
          v[i], found = val, true
          break
        end
      end
      if not found then fail(P .. fn, ("got an unexpected keyword argument '%s'"):format(tostring(k))) end
    end
  end
  if n > #names then fail(P .. fn, ('takes at most %d arguments, got %d'):format(#names, n)) end
  for i = 1, #names do v[names[i]] = v[i] end
  return v
end

local function int_arg(fn, v, what, default)
  if v == nil then return default end
  if type(v) ~= 'number' or v ~= floor(v) then fail(P .. fn, ('%s must be an integer, got %s'):format(what, describe(v))) end
  return v
end

-- a timeout: seconds, or {seconds=, minutes=, hours=} (PyTorch's timedelta)
local function seconds(fn, v, default)
  if v == nil then return default end
  local s = v
  if type(v) == 'table' and getmetatable(v) == nil then
    s = (v.seconds or 0) + (v.minutes or 0) * 60 + (v.hours or 0) * 3600 + (v.milliseconds or 0) / 1000
  end
  if type(s) ~= 'number' or not (s > 0) then
    fail(P .. fn, ('timeout must be a positive number of seconds (or {seconds=, minutes=}), got %s'):format(describe(v)))
  end
  return s
end

------------------------------------------------------------------------------ ReduceOp
local RO = {}
RO.__index = RO
RO.__tostring = function(o) return 'ReduceOp.' .. o.name end
local ReduceOp = {}
for id, name in pairs({ [0] = 'SUM', 'AVG', 'PRODUCT', 'MIN', 'MAX', 'BAND', 'BOR', 'BXOR' }) do
  ReduceOp[name] = setmetatable({ name = name, id = id }, RO)
end
-- (an unknown name is an error, not nil)
setmetatable(ReduceOp, { __index = function(_, k)
  fail(P .. 'ReduceOp', ("has no operation '%s' (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR)"):format(tostring(k)))
end })
M.ReduceOp = ReduceOp
M.reduce_op = ReduceOp -- PyTorch's deprecated spelling

local function op_id(fn, op)
  if op == nil then return 0 end
  if getmetatable(op) == RO then return op.id end
  if type(op) == 'string' and rawget(ReduceOp, op:upper()) then return rawget(ReduceOp, op:upper()).id end
  fail(P .. fn, ('op must be a distributed.ReduceOp (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR), got %s')
    :format(describe(op)))
end

------------------------------------------------------------------------------ backends
M.Backend = setmetatable({ MPI = 'mpi', NCCL = 'nccl', GLOO = 'gloo', UNDEFINED = 'undefined' }, { __index = function(_, k)
  fail(P .. 'Backend', ("has no backend '%s' (MPI, NCCL, GLOO)"):format(tostring(k)))
end })

local function mpi_backend() return require 'moontorch.distributed.mpi' end

-- The backend for one device type: 'mpi' serves CPU tensors. 'nccl' would serve CUDA tensors
-- through a module with the same functions as lua/distributed/mpi.lua over device pointers; it needs
-- moontorch's CUDA backend and NCCL (issue 23's NCCL part, owed).
local function backend(fn, name)
  if name == 'mpi' then
    local B = mpi_backend()
    local ok, why = B.available()
    if not ok then fail(P .. fn, why) end
    return B
  elseif name == 'nccl' then
    local cuda = rawget(torch, 'cuda') or torch.cuda
    fail(P .. fn, "backend 'nccl' (CUDA tensors) needs moontorch's CUDA backend and NCCL, which this build does " ..
      'not have (torch.cuda.is_available() is ' .. tostring(cuda and cuda.is_available and cuda.is_available()) ..
      "); use 'mpi' for CPU tensors")
  elseif name == 'gloo' or name == 'ucc' then
    fail(P .. fn, ("backend '%s' is not part of moontorch: use 'mpi' (CPU tensors), starting the processes with " ..
      "mpirun, srun or `moontorch -m distributed.run`"):format(name))
  end
  fail(P .. fn, ("Invalid backend: '%s'"):format(tostring(name)))
end

function M.is_mpi_available() return (mpi_backend().available()) end
function M.is_available() return M.is_mpi_available() end
function M.is_nccl_available() return false end
function M.is_gloo_available() return false end
function M.is_ucc_available() return false end
-- (PyTorch's test: torchrun sets TORCHELASTIC_RUN_ID; moontorch's launcher sets it too)
function M.is_torchelastic_launched() return os.getenv('TORCHELASTIC_RUN_ID') ~= nil end

------------------------------------------------------------------------------ process groups
local ProcessGroup = class.class('distributed.ProcessGroup', nil, M)
local world -- the default group
local groups = setmetatable({}, { __mode = 'k' }) -- every live group, to destroy them with the world

function ProcessGroup:rank() return self._rank end
function ProcessGroup:size() return self._size end
function ProcessGroup:name() return self._backend_name end
function ProcessGroup:__tostring()
  return ('<distributed.ProcessGroup %s: rank %d of %d%s>'):format(self._backend_name, self._rank, self._size,
    self._destroyed and ', destroyed' or '')
end

local function new_pg(B, h, ranks, timeout, backend_name)
  local rank, size = B.rank(h), B.size(h)
  local index
  if ranks then
    index = {}
    for i, r in ipairs(ranks) do index[r] = i - 1 end
  end
  local pg = setmetatable({ _backends = { [B.device_type] = B }, _B = B, _h = h, _ranks = ranks, _index = index,
    _rank = rank, _size = rank >= 0 and size or -1, _timeout = timeout, _backend_name = backend_name,
    _pending = {} }, ProcessGroup)
  groups[pg] = true
  return pg
end

local NOT_INIT = 'Default process group has not been initialized, please make sure to call init_process_group.'

local function default_group(fn)
  if not world then fail(P .. fn, NOT_INIT) end
  return world
end

-- the process_group option of DDP or ZeroRedundancyOptimizer (op: the caller's name): nil for the
-- default group; a group this process is not a member of is an error there
local function member_group(op, pg)
  if pg == nil then
    if not world then
      fail(op, 'Default process group has not been initialized, please make sure to call init_process_group.')
    end
    return world
  end
  if getmetatable(pg) ~= ProcessGroup then fail(op, ('process_group must be a ProcessGroup, got %s'):format(describe(pg))) end
  if pg:rank() < 0 then fail(op, 'this process is not a member of process_group') end
  return pg
end

-- the group to use: nil for the default; nil back when this process is not a member (PyTorch
-- skips the call then)
local function group_of(fn, group)
  if group == nil then return default_group(fn) end
  if getmetatable(group) ~= ProcessGroup then
    fail(P .. fn, ('group must be a distributed.ProcessGroup, got %s'):format(describe(group)))
  end
  if group._destroyed then fail(P .. fn, 'the process group was destroyed (destroy_process_group)') end
  if group._rank < 0 then return nil end
  return group
end

-- a global rank's rank in the group
local function group_rank(fn, pg, r, what)
  r = int_arg(fn, r, what)
  if pg._index then
    local gr = pg._index[r]
    if gr == nil then fail(P .. fn, ('The global rank %d is not part of the group'):format(r)) end
    return gr
  end
  if r < 0 or r >= pg._size then
    fail(P .. fn, ('%s %d is not a rank of the group (its ranks are 0..%d)'):format(what, r, pg._size - 1))
  end
  return r
end
local function global_rank(pg, r)
  if pg._ranks then return pg._ranks[r + 1] end
  return r
end

function M.is_initialized() return world ~= nil end

-- init_process_group(backend='mpi', {init_method=, timeout=, world_size=, rank=, group_name=})
function M.init_process_group(...)
  local fn = 'init_process_group'
  local a = args(fn, { 'backend', 'init_method', 'timeout', 'world_size', 'rank', 'store', 'group_name', 'pg_options' },
    ...)
  if world then fail(P .. fn, 'trying to initialize the default process group twice!') end
  local name = a.backend or 'mpi'
  if type(name) ~= 'string' then fail(P .. fn, ('backend must be a string, got %s'):format(describe(name))) end
  name = name:lower()
  -- PyTorch's 'cpu:gloo,cuda:nccl' form: each device type its backend
  local per_device = {}
  if name:find(':') then
    for dev, b in name:gmatch('(%w+):(%w+)') do per_device[dev] = b end
    name = per_device.cpu or per_device.cuda
  end
  local timeout = seconds(fn, a.timeout, DEFAULT_TIMEOUT)
  if a.store ~= nil then fail(P .. fn, "a store is not used by the 'mpi' backend: MPI finds the other processes itself") end
  local B = backend(fn, name)
  if per_device.cuda and per_device.cuda ~= name then backend(fn, per_device.cuda) end
  local h = B.init(timeout)
  local rank, size = B.rank(h), B.size(h)
  -- the launcher's variables, and the caller's rank= / world_size=, must agree with MPI's
  local env_size = tonumber(os.getenv('WORLD_SIZE') or '')
  if env_size and env_size > 1 and size == 1 then
    fail(P .. fn, ('WORLD_SIZE=%d in the environment, but MPI started this process alone: start the %d processes ' ..
      'with `moontorch -m distributed.run --nproc %d script.lua` or `mpirun -np %d moontorch script.lua`')
      :format(env_size, env_size, env_size, env_size))
  end
  local slurm = os.getenv('SLURM_STEP_ID') and tonumber(os.getenv('SLURM_NTASKS') or '')
  if slurm and slurm > 1 and size == 1 then
    fail(P .. fn, ('srun started %d tasks, but MPI sees this one alone: Debian\'s Open MPI joins them through ' ..
      'PMIx (srun --mpi=pmix), or start them with mpirun'):format(slurm))
  end
  local ws, rk = int_arg(fn, a.world_size, 'world_size', -1), int_arg(fn, a.rank, 'rank', -1)
  if ws ~= -1 and ws ~= size then
    fail(P .. fn, ('world_size=%d, but MPI started %d process%s'):format(ws, size, size == 1 and '' or 'es'))
  end
  if rk ~= -1 and rk ~= rank then fail(P .. fn, ('rank=%d, but MPI gave this process rank %d'):format(rk, rank)) end
  world = new_pg(B, h, nil, timeout, name)
  -- the environment a script expects from a launcher (torchrun's names), whoever started it
  local local_rank = os.getenv('OMPI_COMM_WORLD_LOCAL_RANK') or os.getenv('MPI_LOCALRANKID') or
    os.getenv('SLURM_LOCALID') or (size == 1 and '0') or nil
  local local_size = os.getenv('OMPI_COMM_WORLD_LOCAL_SIZE') or os.getenv('MPI_LOCALNRANKS') or
    (size == 1 and '1') or nil
  libc.setenv('RANK', tostring(rank), 1)
  libc.setenv('WORLD_SIZE', tostring(size), 1)
  if local_rank then libc.setenv('LOCAL_RANK', local_rank, 0) end
  if local_size then libc.setenv('LOCAL_WORLD_SIZE', local_size, 0) end
  -- MASTER_ADDR: rank 0's host name (the launcher sets 127.0.0.1), MASTER_PORT torchrun's 29500; MPI
  -- needs neither, scripts written for torchrun may read them
  if not os.getenv('MASTER_ADDR') then
    local host = '127.0.0.1'
    if size > 1 then
      local buf = ffi.new('char[256]')
      local list = { rank == 0 and libc.gethostname(buf, 255) == 0 and ffi.string(buf) or host }
      M.broadcast_object_list(list, 0)
      host = list[1]
    end
    libc.setenv('MASTER_ADDR', host, 0)
  end
  libc.setenv('MASTER_PORT', '29500', 0)
end

-- destroy_process_group([group]): the group, or every group and the default one
function M.destroy_process_group(group)
  local fn = 'destroy_process_group'
  if group == nil then
    if not world then fail(P .. fn, NOT_INIT) end
    for g in pairs(groups) do g._destroyed = true end
    groups = setmetatable({}, { __mode = 'k' })
    world = nil
    collectgarbage() -- the C groups go (their communicators are freed by the communication thread)
    return
  end
  if getmetatable(group) ~= ProcessGroup then fail(P .. fn, ('expected a ProcessGroup, got %s'):format(describe(group))) end
  if group == world then return M.destroy_process_group() end
  group._destroyed = true
  groups[group] = nil
end

function M.get_rank(group)
  if group == nil then return default_group('get_rank')._rank end
  if getmetatable(group) ~= ProcessGroup then fail(P .. 'get_rank', ('expected a ProcessGroup, got %s'):format(describe(group))) end
  default_group('get_rank')
  return group._rank
end

function M.get_world_size(group)
  if group == nil then return default_group('get_world_size')._size end
  if getmetatable(group) ~= ProcessGroup then
    fail(P .. 'get_world_size', ('expected a ProcessGroup, got %s'):format(describe(group)))
  end
  default_group('get_world_size')
  return group._size
end

function M.get_backend(group)
  local pg = group == nil and default_group('get_backend') or group
  if getmetatable(pg) ~= ProcessGroup then fail(P .. 'get_backend', 'Invalid process group specified') end
  return pg._backend_name
end

-- get_global_rank(group, group_rank) / get_group_rank(group, global_rank) / get_process_group_ranks(group)
function M.get_global_rank(group, r)
  if group == nil or group == world then return r end
  if r < 0 or r >= #group._ranks then fail(P .. 'get_global_rank', ('Group rank %d is not part of group'):format(r)) end
  return group._ranks[r + 1]
end
function M.get_group_rank(group, r)
  if group == nil or group == world then return r end
  local gr = group._index and group._index[r]
  if gr == nil then fail(P .. 'get_group_rank', ('Global rank %d is not part of group'):format(r)) end
  return gr
end
function M.get_process_group_ranks(group)
  if group == nil or group == world then
    local r = {}
    for i = 1, default_group('get_process_group_ranks')._size do r[i] = i - 1 end
    return r
  end
  local r = {}
  for i, v in ipairs(group._ranks) do r[i] = v end
  return r
end

-- new_group([ranks], {timeout=, backend=}): a group of some of the world's ranks (all by default).
-- Every process of the world calls it with the same ranks; one outside them gets a group whose
-- get_rank is -1, and collectives over that group do nothing there (as PyTorch's).
function M.new_group(...)
  local fn = 'new_group'
  local a = args(fn, { 'ranks', 'timeout', 'backend', 'pg_options' }, ...)
  local w = default_group(fn)
  local ranks = {}
  if a.ranks == nil then
    for i = 1, w._size do ranks[i] = i - 1 end
  else
    if type(a.ranks) ~= 'table' then fail(P .. fn, ('ranks must be an array of ranks, got %s'):format(describe(a.ranks))) end
    for i, r in ipairs(a.ranks) do
      ranks[i] = int_arg(fn, r, 'a rank')
      if r < 0 or r >= w._size then
        fail(P .. fn, ('rank %d is not in the world (its ranks are 0..%d)'):format(r, w._size - 1))
      end
    end
    table.sort(ranks)
    for i = 2, #ranks do
      if ranks[i] == ranks[i - 1] then fail(P .. fn, ('rank %d is listed twice'):format(ranks[i])) end
    end
    if #ranks == 0 then fail(P .. fn, 'ranks is empty') end
  end
  local name = a.backend and tostring(a.backend):lower() or w._backend_name
  local B = backend(fn, name)
  local timeout = seconds(fn, a.timeout, w._timeout)
  local h = B.new_group(w._h, ranks, timeout)
  return new_pg(B, h, ranks, timeout, name)
end

M.group = setmetatable({}, { __index = function(_, k) if k == 'WORLD' then return world end end })
M.GroupMember = setmetatable({ NON_GROUP_MEMBER = false }, { __index = M.group })

------------------------------------------------------------------------------ works
local Work = class.class('distributed.Work', nil, M)

local function settle(work)
  if work._state ~= 'pending' then return true end
  local B = work._B
  local st = B.state(work._w)
  if st == 0 then return false end
  if st == 1 then
    work._state = 'done'
    local after = work._after
    work._after = nil
    if after then after() end
  else
    work._state = 'failed'
    work._err = 'moontorch.' .. B.error(work._w)
  end
  work._keep = nil
  return true
end

-- drop the group's finished works (their tensors are no longer held)
local function sweep(pg)
  local list = pg._pending
  local j = 0
  for i = 1, #list do
    local w = list[i]
    list[i] = nil
    if not settle(w) then
      j = j + 1
      list[j] = w
    end
  end
end

-- work:wait([timeout]): until done; raises if it failed or the timeout (the group's by default) passed
function Work:wait(timeout)
  if self._state == 'pending' then
    local t = seconds('Work.wait', timeout, self._pg._timeout)
    local err = self._B.wait(self._w, t)
    if err and self._B.state(self._w) == 0 then
      self._state = 'failed'
      self._err = 'moontorch.' .. err
    end
    settle(self)
  end
  if self._state == 'failed' then error(self._err, core.user_level()) end
  return true
end
function Work:is_completed() return settle(self) end
function Work:is_success()
  settle(self)
  return self._state == 'done'
end
function Work:exception()
  settle(self)
  return self._err
end
-- the output tensors (all_gather's list, ...), as PyTorch's work.result()
function Work:result()
  self:wait()
  return self._result or {}
end
-- irecv from any rank: who sent it (a global rank), once done
function Work:source_rank()
  self:wait()
  local s = self._B.source(self._w)
  return s >= 0 and global_rank(self._pg, s) or nil
end
Work._source_rank = Work.source_rank
function Work:__tostring()
  settle(self)
  return ('<distributed.Work %s: %s>'):format(self._op, self._state)
end

-- The end of every operation: async, a Work (holding `keep` until done); else wait now, then
-- `after` (the copy back into a non-contiguous tensor). Returns the Work, or the C work's source.
local function finish(pg, B, op, w, keep, after, async, result)
  if async then
    sweep(pg)
    local work = setmetatable({ _w = ffi.gc(w, B.release), _B = B, _pg = pg, _op = op, _keep = keep,
      _after = after, _state = 'pending', _result = result }, Work)
    local list = pg._pending
    list[#list + 1] = work
    return work
  end
  local err = B.wait(w, pg._timeout)
  local src = B.source(w)
  B.release(w)
  if err then error('moontorch.' .. err, core.user_level()) end
  if after then after() end
  return src
end
M._finish = finish

------------------------------------------------------------------------------ tensors
local device_names = { [0] = 'cpu', [1] = 'cuda', [2] = 'meta' }

local function need_tensor(fn, t, what)
  if not is_tensor(t) then fail(P .. fn, ('%s must be a tensor, got %s'):format(what, describe(t))) end
  return t
end

-- the group's backend for t's device
local function backend_for(fn, pg, t)
  local B = pg._backends[t._device_type]
  if B then return B end
  local dev = device_names[tonumber(t._device_type)] or '?'
  if dev == 'meta' then fail(P .. fn, 'a tensor on the meta device has no data to communicate') end
  fail(P .. fn, ("a tensor on %s needs a backend for %s tensors ('nccl' for cuda), which this process group " ..
    "does not have (it was made with backend '%s')"):format(tostring(t.device), dev, pg._backend_name))
end

-- t itself when contiguous, else a contiguous copy and the function that writes it back
local function inplace(t)
  if t:is_contiguous() then return t, nil end
  local d = t:detach()
  local c = d:contiguous()
  return c, function() d:copy_(c) end
end
-- a contiguous tensor with t's values (t itself when it is)
local function readable(t)
  if t:is_contiguous() then return t end
  return t:detach():contiguous()
end

local function same_kind(fn, t, ref, what)
  if t.dtype ~= ref.dtype then
    fail(P .. fn, ('%s has dtype %s, but the input tensor has %s'):format(what, tostring(t.dtype), tostring(ref.dtype)))
  end
  if t._device_type ~= ref._device_type then
    fail(P .. fn, ('%s is on %s, but the input tensor on %s'):format(what, tostring(t.device), tostring(ref.device)))
  end
end

local function tensor_list(fn, list, what, n)
  if type(list) ~= 'table' or is_tensor(list) then
    fail(P .. fn, ('%s must be an array of tensors, got %s'):format(what, describe(list)))
  end
  if n and #list ~= n then
    fail(P .. fn, ('%s must hold one tensor per rank of the group (%d), got %d'):format(what, n, #list))
  end
  for i = 1, #list do need_tensor(fn, list[i], ('%s[%d]'):format(what, i)) end
  return list
end

local function flat_empty(n, like)
  return torch.empty(n, { dtype = like.dtype, device = like.device })
end

------------------------------------------------------------------------------ collectives
-- all_reduce(tensor, op=SUM, group, async_op): every rank's tensor becomes the reduction over the ranks
function M.all_reduce(...)
  local fn = 'all_reduce'
  local a = args(fn, { 'tensor', 'op', 'group', 'async_op' }, ...)
  local t = need_tensor(fn, a.tensor, 'tensor')
  local op = op_id(fn, a.op)
  local pg = group_of(fn, a.group)
  if not pg then return nil end
  local B = backend_for(fn, pg, t)
  local buf, after = inplace(t)
  local w = B.all_reduce(pg._h, buf, op)
  local r = finish(pg, B, fn, w, { buf, t }, after, a.async_op, { t })
  if a.async_op then return r end
end

-- all_reduce_coalesced(tensors, op=SUM, group, async_op): all_reduce of each tensor (one dtype and
-- device), done as one reduction of them laid end to end
function M.all_reduce_coalesced(...)
  local fn = 'all_reduce_coalesced'
  local a = args(fn, { 'tensors', 'op', 'group', 'async_op' }, ...)
  local list = tensor_list(fn, a.tensors, 'tensors')
  local op = op_id(fn, a.op)
  local pg = group_of(fn, a.group)
  if not pg then return nil end
  if #list == 0 then fail(P .. fn, 'tensors must not be empty') end
  for i = 2, #list do same_kind(fn, list[i], list[1], ('tensors[%d]'):format(i)) end
  local B = backend_for(fn, pg, list[1])
  local bufs, afters, keep = {}, {}, {}
  for i, t in ipairs(list) do
    local buf, after = inplace(t)
    bufs[i] = buf
    keep[#keep + 1], keep[#keep + 2] = buf, t
    if after then afters[#afters + 1] = after end
  end
  local after = #afters > 0 and function() for _, f in ipairs(afters) do f() end end or nil
  local r = finish(pg, B, fn, B.all_reduce_coalesced(pg._h, bufs, op), keep, after, a.async_op, list)
  if a.async_op then return r end
end

-- broadcast(tensor, src, group, async_op): src's tensor is copied into every rank's
function M.broadcast(...)
  local fn = 'broadcast'
  local a = args(fn, { 'tensor', 'src', 'group', 'async_op' }, ...)
  local t = need_tensor(fn, a.tensor, 'tensor')
  local pg = group_of(fn, a.group)
  if not pg then return nil end
  if a.src == nil then fail(P .. fn, 'src (the rank to broadcast from) is required') end
  local root = group_rank(fn, pg, a.src, 'src')
  local B = backend_for(fn, pg, t)
  local buf, after = inplace(t)
  local r = finish(pg, B, fn, B.broadcast(pg._h, buf, root), { buf, t }, after, a.async_op, { t })
  if a.async_op then return r end
end

-- reduce(tensor, dst, op=SUM, group, async_op): the reduction lands in dst's tensor (the others
-- keep theirs)
function M.reduce(...)
  local fn = 'reduce'
  local a = args(fn, { 'tensor', 'dst', 'op', 'group', 'async_op' }, ...)
  local t = need_tensor(fn, a.tensor, 'tensor')
  local op = op_id(fn, a.op)
  local pg = group_of(fn, a.group)
  if not pg then return nil end
  if a.dst == nil then fail(P .. fn, 'dst (the rank to reduce to) is required') end
  local root = group_rank(fn, pg, a.dst, 'dst')
  local B = backend_for(fn, pg, t)
  local buf, after = inplace(t)
  if pg._rank ~= root then after = nil end
  local r = finish(pg, B, fn, B.reduce(pg._h, buf, op, root), { buf, t }, after, a.async_op, { t })
  if a.async_op then return r end
end

-- the outputs of a gather into a flat buffer: copied into each list entry afterwards
local function scatter_back(flat, list, n)
  return function()
    for i = 1, #list do
      local dst = list[i]
      dst:detach():copy_(flat:narrow(1, (i - 1) * n + 1, n):view(dst:size()))
    end
  end
end
local function check_numel(fn, t, n, what)
  if t:numel() ~= n then
    fail(P .. fn, ('%s has %d elements, but the input tensor has %d'):format(what, t:numel(), n))
  end
end

-- all_gather(tensor_list, tensor, group, async_op): tensor_list[i] receives rank i-1's tensor
function M.all_gather(...)
  local fn = 'all_gather'
  local a = args(fn, { 'tensor_list', 'tensor', 'group', 'async_op' }, ...)
  local t = need_tensor(fn, a.tensor, 'tensor')
  local pg = group_of(fn, a.group)
  if not pg then return nil end
  local list = tensor_list(fn, a.tensor_list, 'tensor_list', pg._size)
  local n = t:numel()
  for i = 1, #list do
    same_kind(fn, list[i], t, ('tensor_list[%d]'):format(i))
    check_numel(fn, list[i], n, ('tensor_list[%d]'):format(i))
  end
  local B = backend_for(fn, pg, t)
  local src = readable(t)
  local flat = flat_empty(n * pg._size, t)
  local r = finish(pg, B, fn, B.all_gather(pg._h, flat, src), { src, flat, list }, scatter_back(flat, list, n),
    a.async_op, list)
  if a.async_op then return r end
end

-- all_gather_into_tensor(output_tensor, input_tensor, group, async_op): the ranks' inputs one after
-- another along output's first dimension (or flat)
function M.all_gather_into_tensor(...)
  local fn = 'all_gather_into_tensor'
  local a = args(fn, { 'output_tensor', 'input_tensor', 'group', 'async_op' }, ...)
  local out = need_tensor(fn, a.output_tensor, 'output_tensor')
  local t = need_tensor(fn, a.input_tensor, 'input_tensor')
  local pg = group_of(fn, a.group)
  if not pg then return nil end
  same_kind(fn, out, t, 'output_tensor')
  if out:numel() ~= t:numel() * pg._size then
    fail(P .. fn, ('output tensor size must be equal to world_size times input tensor size (%d x %d), got %d')
      :format(pg._size, t:numel(), out:numel()))
  end
  local B = backend_for(fn, pg, t)
  local src = readable(t)
  local buf, after = inplace(out)
  local r = finish(pg, B, fn, B.all_gather(pg._h, buf, src), { src, buf, out }, after, a.async_op, { out })
  if a.async_op then return r end
end
M._all_gather_base = M.all_gather_into_tensor

-- gather(tensor, gather_list, dst=0, group, async_op): dst's gather_list[i] receives rank i-1's tensor
function M.gather(...)
  local fn = 'gather'
  local a = args(fn, { 'tensor', 'gather_list', 'dst', 'group', 'async_op' }, ...)
  local t = need_tensor(fn, a.tensor, 'tensor')
  local pg = group_of(fn, a.group)
  if not pg then return nil end
  local root = group_rank(fn, pg, a.dst or 0, 'dst')
  local list = a.gather_list
  if list ~= nil and type(list) == 'table' and not is_tensor(list) and #list == 0 then list = nil end
  local n = t:numel()
  local flat, after
  if pg._rank == root then
    if list == nil then fail(P .. fn, 'Argument ``gather_list`` must be specified on destination rank.') end
    tensor_list(fn, list, 'gather_list', pg._size)
    for i = 1, #list do
      same_kind(fn, list[i], t, ('gather_list[%d]'):format(i))
      check_numel(fn, list[i], n, ('gather_list[%d]'):format(i))
    end
    flat = flat_empty(n * pg._size, t)
    after = scatter_back(flat, list, n)
  elseif list ~= nil then
    fail(P .. fn, 'Argument ``gather_list`` must NOT be specified on non-destination ranks.')
  end
  local B = backend_for(fn, pg, t)
  local src = readable(t)
  local r = finish(pg, B, fn, B.gather(pg._h, flat, src, root), { src, flat, list }, after, a.async_op, list)
  if a.async_op then return r end
end

-- scatter(tensor, scatter_list, src=0, group, async_op): rank i-1's tensor receives src's scatter_list[i]
function M.scatter(...)
  local fn = 'scatter'
  local a = args(fn, { 'tensor', 'scatter_list', 'src', 'group', 'async_op' }, ...)
  local t = need_tensor(fn, a.tensor, 'tensor')
  local pg = group_of(fn, a.group)
  if not pg then return nil end
  local root = group_rank(fn, pg, a.src or 0, 'src')
  local list = a.scatter_list
  if list ~= nil and type(list) == 'table' and not is_tensor(list) and #list == 0 then list = nil end
  local n = t:numel()
  local flat
  if pg._rank == root then
    if list == nil then fail(P .. fn, 'Argument ``scatter_list`` must be specified on source rank.') end
    tensor_list(fn, list, 'scatter_list', pg._size)
    local parts = {}
    for i = 1, #list do
      same_kind(fn, list[i], t, ('scatter_list[%d]'):format(i))
      check_numel(fn, list[i], n, ('scatter_list[%d]'):format(i))
      parts[i] = list[i]:detach():reshape(n)
    end
    flat = torch.cat(parts)
  elseif list ~= nil then
    fail(P .. fn, 'Argument ``scatter_list`` must NOT be specified on non-source ranks.')
  end
  local B = backend_for(fn, pg, t)
  local buf, after = inplace(t)
  local r = finish(pg, B, fn, B.scatter(pg._h, buf, flat, root), { buf, flat, t }, after, a.async_op, { t })
  if a.async_op then return r end
end

-- reduce_scatter(output, input_list, op=SUM, group, async_op): rank i-1's output receives the
-- reduction of every rank's input_list[i]
function M.reduce_scatter(...)
  local fn = 'reduce_scatter'
  local a = args(fn, { 'output', 'input_list', 'op', 'group', 'async_op' }, ...)
  local out = need_tensor(fn, a.output, 'output')
  local op = op_id(fn, a.op)
  local pg = group_of(fn, a.group)
  if not pg then return nil end
  local list = tensor_list(fn, a.input_list, 'input_list', pg._size)
  local n = out:numel()
  local parts = {}
  for i = 1, #list do
    same_kind(fn, list[i], out, ('input_list[%d]'):format(i))
    if list[i]:numel() ~= n then
      fail(P .. fn, ('input_list[%d] has %d elements, but the output tensor has %d'):format(i, list[i]:numel(), n))
    end
    parts[i] = list[i]:detach():reshape(n)
  end
  local flat = torch.cat(parts)
  local B = backend_for(fn, pg, out)
  local buf, after = inplace(out)
  local r = finish(pg, B, fn, B.reduce_scatter(pg._h, buf, flat, op), { buf, flat, out }, after, a.async_op, { out })
  if a.async_op then return r end
end

-- reduce_scatter_tensor(output, input, op=SUM, group, async_op): input is the ranks' blocks one
-- after another (world_size times output's size)
function M.reduce_scatter_tensor(...)
  local fn = 'reduce_scatter_tensor'
  local a = args(fn, { 'output', 'input', 'op', 'group', 'async_op' }, ...)
  local out = need_tensor(fn, a.output, 'output')
  local input = need_tensor(fn, a.input, 'input')
  local op = op_id(fn, a.op)
  local pg = group_of(fn, a.group)
  if not pg then return nil end
  same_kind(fn, input, out, 'input')
  if input:numel() ~= out:numel() * pg._size then
    fail(P .. fn, ('input tensor must be the same size as output size times world size (%d x %d), got %d')
      :format(pg._size, out:numel(), input:numel()))
  end
  local B = backend_for(fn, pg, out)
  local src = readable(input)
  local buf, after = inplace(out)
  local r = finish(pg, B, fn, B.reduce_scatter(pg._h, buf, src, op), { buf, src, out }, after, a.async_op, { out })
  if a.async_op then return r end
end
M._reduce_scatter_base = M.reduce_scatter_tensor

-- all_to_all(output_tensor_list, input_tensor_list, group, async_op): rank r's input_list[j] goes
-- to rank j-1's output_list[r+1]; sizes may differ between pairs
function M.all_to_all(...)
  local fn = 'all_to_all'
  local a = args(fn, { 'output_tensor_list', 'input_tensor_list', 'group', 'async_op' }, ...)
  local pg = group_of(fn, a.group)
  if not pg then return nil end
  local outs = tensor_list(fn, a.output_tensor_list, 'output_tensor_list', pg._size)
  local ins = tensor_list(fn, a.input_tensor_list, 'input_tensor_list', pg._size)
  local ref = ins[1]
  local sc, rc, parts, total = {}, {}, {}, 0
  for i = 1, pg._size do
    same_kind(fn, ins[i], ref, ('input_tensor_list[%d]'):format(i))
    same_kind(fn, outs[i], ref, ('output_tensor_list[%d]'):format(i))
    sc[i] = ins[i]:numel()
    rc[i] = outs[i]:numel()
    parts[i] = ins[i]:detach():reshape(sc[i])
    total = total + rc[i]
  end
  local flat_in = torch.cat(parts)
  local flat_out = flat_empty(total, ref)
  local B = backend_for(fn, pg, ref)
  local after = function()
    local off = 1
    for i = 1, #outs do
      if rc[i] > 0 then outs[i]:detach():copy_(flat_out:narrow(1, off, rc[i]):view(outs[i]:size())) end
      off = off + rc[i]
    end
  end
  local r = finish(pg, B, fn, B.all_to_all(pg._h, flat_out, rc, flat_in, sc), { flat_in, flat_out, outs }, after,
    a.async_op, outs)
  if a.async_op then return r end
end

-- all_to_all_single(output, input, output_split_sizes, input_split_sizes, group, async_op): input's
-- first dimension split among the ranks (evenly, or by input_split_sizes), output gathers the pieces
function M.all_to_all_single(...)
  local fn = 'all_to_all_single'
  local a = args(fn, { 'output', 'input', 'output_split_sizes', 'input_split_sizes', 'group', 'async_op' }, ...)
  local out = need_tensor(fn, a.output, 'output')
  local input = need_tensor(fn, a.input, 'input')
  local pg = group_of(fn, a.group)
  if not pg then return nil end
  same_kind(fn, out, input, 'output')
  local n = pg._size
  local function counts(t, splits, what)
    local rows = t:dim() > 0 and t:size(1) or 1
    local per_row = rows > 0 and t:numel() / rows or 0
    local c = {}
    if splits == nil or (type(splits) == 'table' and #splits == 0) then
      if rows % n ~= 0 then
        fail(P .. fn, ('%s\'s first dimension (%d) is not divisible by the group size (%d)'):format(what, rows, n))
      end
      for i = 1, n do c[i] = rows / n * per_row end
    else
      if type(splits) ~= 'table' or #splits ~= n then
        fail(P .. fn, ('%s_split_sizes must hold one size per rank (%d)'):format(what, n))
      end
      local sum = 0
      for i = 1, n do
        c[i] = int_arg(fn, splits[i], what .. '_split_sizes[' .. i .. ']') * per_row
        sum = sum + splits[i]
      end
      if sum ~= rows then
        fail(P .. fn, ('%s_split_sizes add up to %d, but %s\'s first dimension is %d'):format(what, sum, what, rows))
      end
    end
    return c
  end
  local sc = counts(input, a.input_split_sizes, 'input')
  local rc = counts(out, a.output_split_sizes, 'output')
  local B = backend_for(fn, pg, input)
  local src = readable(input)
  local buf, after = inplace(out)
  local r = finish(pg, B, fn, B.all_to_all(pg._h, buf, rc, src, sc), { src, buf, out }, after, a.async_op, { out })
  if a.async_op then return r end
end

-- barrier(group, async_op): until every rank of the group has called it
function M.barrier(...)
  local fn = 'barrier'
  local a = args(fn, { 'group', 'async_op', 'device_ids' }, ...)
  local pg = group_of(fn, a.group)
  if not pg then return nil end
  local B = pg._B
  local r = finish(pg, B, fn, B.barrier(pg._h), nil, nil, a.async_op)
  if a.async_op then return r end
end

------------------------------------------------------------------------------ point to point
local function p2p(fn, kind, async, ...)
  local a = args(fn, { 'tensor', kind == 'send' and 'dst' or 'src', 'group', 'tag' }, ...)
  local t = need_tensor(fn, a.tensor, 'tensor')
  local pg = group_of(fn, a.group)
  if not pg then return nil end
  local tag = int_arg(fn, a.tag, 'tag', 0)
  local B = backend_for(fn, pg, t)
  if kind == 'send' then
    if a.dst == nil then fail(P .. fn, 'dst (the rank to send to) is required') end
    local dst = group_rank(fn, pg, a.dst, 'dst')
    if dst == pg._rank then
      fail(P .. fn, 'Invalid destination rank: destination rank should not be the same as the rank of the current process.')
    end
    local src = readable(t)
    return finish(pg, B, fn, B.send(pg._h, src, dst, tag), { src, t }, nil, async, { t }), pg
  end
  local src = -1
  if a.src ~= nil then
    src = group_rank(fn, pg, a.src, 'src')
    if src == pg._rank then
      fail(P .. fn, 'Invalid source rank: source rank should not be the same as the rank of the current process.')
    end
  end
  local buf, after = inplace(t)
  return finish(pg, B, fn, B.recv(pg._h, buf, src, tag), { buf, t }, after, async, { t }), pg
end

-- send(tensor, dst, group, tag=0) / isend (a Work)
function M.send(...) p2p('send', 'send', false, ...) end
function M.isend(...) return (p2p('isend', 'send', true, ...)) end
-- recv(tensor, src=any, group, tag=0) -> the sender's rank / irecv (a Work)
function M.recv(...)
  local s, pg = p2p('recv', 'recv', false, ...)
  if pg == nil then return -1 end
  return global_rank(pg, s)
end
function M.irecv(...) return (p2p('irecv', 'recv', true, ...)) end

-- P2POp(op, tensor, peer, group, tag) and batch_isend_irecv(list) -> Works
local P2POp = class.class('distributed.P2POp', nil, M)
function P2POp:__init(op, tensor, peer, group, tag)
  if op ~= M.isend and op ~= M.irecv then
    fail(P .. 'P2POp', 'Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or ``torch.distributed.irecv``.')
  end
  need_tensor('P2POp', tensor, 'tensor')
  self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag or 0
end
function M.batch_isend_irecv(list)
  if type(list) ~= 'table' or #list == 0 then
    fail(P .. 'batch_isend_irecv', 'Invalid ``p2p_op_list``. Each op is expected to to be of type ``torch.distributed.P2POp``.')
  end
  local works = {}
  for i, p in ipairs(list) do
    if getmetatable(p) ~= P2POp then
      fail(P .. 'batch_isend_irecv', 'Invalid ``p2p_op_list``. Each op is expected to to be of type ``torch.distributed.P2POp``.')
    end
    works[i] = p.op(p.tensor, p.peer, p.group, p.tag)
  end
  return works
end

------------------------------------------------------------------------------ Lua values
-- Values travel as torch.save's bytes (anything torch.save takes: tables, numbers, strings,
-- tensors, registered objects), through a temporary file.
local function to_bytes(obj)
  local path = os.tmpname()
  torch.save(obj, path, { sync = false })
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  os.remove(path)
  return s
end
local function from_bytes(s)
  local path = os.tmpname()
  local f = assert(io.open(path, 'wb'))
  f:write(s)
  f:close()
  local ok, v = pcall(torch.load, path)
  os.remove(path)
  if not ok then error(v, 0) end
  return v
end
local function bytes_tensor(s, n)
  local t = torch.zeros(n or #s, { dtype = torch.uint8 })
  if #s > 0 then ffi.copy(t._data, s, #s) end
  return t
end

-- all_gather_object(object_list, obj, group): object_list[i] receives rank i-1's obj
function M.all_gather_object(object_list, obj, group)
  local fn = 'all_gather_object'
  local pg = group_of(fn, group)
  if not pg then return nil end
  if type(object_list) ~= 'table' then fail(P .. fn, 'object_list must be an array') end
  local s = to_bytes(obj)
  local sizes = {}
  for i = 1, pg._size do sizes[i] = torch.zeros(1, { dtype = torch.int64 }) end
  M.all_gather(sizes, torch.tensor({ #s }, { dtype = torch.int64 }), pg)
  local max = 0
  for i = 1, pg._size do max = math.max(max, sizes[i]:item()) end
  local bufs = {}
  for i = 1, pg._size do bufs[i] = torch.zeros(max, { dtype = torch.uint8 }) end
  M.all_gather(bufs, bytes_tensor(s, max), pg)
  for i = 1, pg._size do object_list[i] = from_bytes(ffi.string(bufs[i]._data, sizes[i]:item())) end
end

-- broadcast_object_list(object_list, src=0, group): every rank's object_list takes src's values
function M.broadcast_object_list(object_list, src, group)
  local fn = 'broadcast_object_list'
  local pg = group_of(fn, group)
  if not pg then return nil end
  if type(object_list) ~= 'table' then fail(P .. fn, 'object_list must be an array') end
  local root = group_rank(fn, pg, src or 0, 'src')
  local n = #object_list
  local size = torch.zeros(1, { dtype = torch.int64 })
  local s
  if pg._rank == root then
    s = to_bytes({ n = n, unpack(object_list, 1, n) })
    size[1] = #s
  end
  M.broadcast(size, global_rank(pg, root), pg)
  local buf = pg._rank == root and bytes_tensor(s) or torch.zeros(size:item(), { dtype = torch.uint8 })
  M.broadcast(buf, global_rank(pg, root), pg)
  if pg._rank ~= root then
    local v = from_bytes(ffi.string(buf._data, size:item()))
    for i = 1, math.max(n, v.n) do object_list[i] = v[i] end
  end
end

-- gather_object(obj, object_gather_list, dst=0, group) / scatter_object_list(out, in, src=0, group)
function M.gather_object(obj, object_gather_list, dst, group)
  local fn = 'gather_object'
  local pg = group_of(fn, group)
  if not pg then return nil end
  local all = {}
  M.all_gather_object(all, obj, pg)
  local root = group_rank(fn, pg, dst or 0, 'dst')
  if pg._rank == root then
    if type(object_gather_list) ~= 'table' then fail(P .. fn, 'object_gather_list must be given on the destination rank') end
    for i = 1, pg._size do object_gather_list[i] = all[i] end
  end
end
function M.scatter_object_list(scatter_object_output_list, scatter_object_input_list, src, group)
  local fn = 'scatter_object_list'
  local pg = group_of(fn, group)
  if not pg then return nil end
  if type(scatter_object_output_list) ~= 'table' then fail(P .. fn, 'scatter_object_output_list must be an array') end
  local root = group_rank(fn, pg, src or 0, 'src')
  local list = { scatter_object_input_list or false }
  M.broadcast_object_list(list, global_rank(pg, root), pg)
  local all = list[1]
  if type(all) ~= 'table' or #all ~= pg._size then
    fail(P .. fn, 'scatter_object_input_list must hold one object per rank on the source rank')
  end
  scatter_object_output_list[1] = all[pg._rank + 1]
end

------------------------------------------------------------------------------ submodules
-- torch.distributed.optim (ZeroRedundancyOptimizer), loaded on first use (it needs this module)
setmetatable(M, { __index = function(t, k)
  if k == 'optim' then
    local o = require 'moontorch.distributed.optim'
    rawset(t, 'optim', o)
    return o
  end
end })

------------------------------------------------------------------------------ for DDP and the launcher
M._internal = {
  args = args, seconds = seconds, group_of = group_of, default_group = default_group, backend_for = backend_for,
  member_group = member_group,
  finish = finish, global_rank = global_rank, op_id = op_id, sweep = sweep,
  world = function() return world end,
}

return M
