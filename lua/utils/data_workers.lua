-- moontorch.utils.data_workers: a DataLoader's worker processes (num_workers > 0), PyTorch 1.13's
-- _MultiProcessingDataLoaderIter and _worker_loop. Loaded by lua/utils/data.lua; not a public module.
--
-- Workers are forked processes (core/proc.c), each going on in its own copy of the Lua state: a
-- worker sees the dataset, collate_fn and worker_init_fn as the main process had them when it
-- forked. The main process sends each worker tasks (a task: its number and the indices of one
-- batch) over a Unix socket, round robin over the workers still active, keeping prefetch_factor
-- tasks per worker in flight; a worker answers each with the collated batch, an error (message and
-- traceback) or, for an IterableDataset, the end of its stream. Batches come back in the sampler's
-- order whatever the workers' speed (results that arrive early wait), as PyTorch 1.13's do.
--
-- A batch travels as a message: its Lua structure serialised (string.buffer; tables, numbers,
-- strings, booleans, int64 cdata, instances of registered classes) with each tensor replaced by a
-- reference to a block of shared memory (core/shm.c). In a worker, default_collate stacks the
-- samples straight into such a block (and TensorDataset's batches are index_select'ed into one), so
-- the batch is written once; any other tensor is copied into one block per batch. The main process
-- maps the blocks and makes tensors over them: nothing is copied on its side, and a block goes when
-- the last tensor over it dies.
--
-- Seeding (PyTorch's): each pass of a loader draws its base seed from the loader's generator (the
-- global one by default), before the sampler's first index; worker w seeds torch's generator with
-- base_seed + w (and Lua's math.random with its low bits). A persistent loader's workers are seeded
-- once, at the first pass, and later passes draw no base seed, as in PyTorch.
--
-- Shutdown: at the end of a pass (persistent workers stay for the next one), on an error in a
-- worker, a worker's death, a timeout, or any error raised while the main process waits (Ctrl-C's
-- "interrupted!"), the main process closes its channels, kills the workers that do not exit at
-- once, and reaps them (waitpid). A pass abandoned half way (a `break`) shuts its workers down when
-- the iterator is collected, or when the Lua state closes. Workers die with the main process
-- (PR_SET_PDEATHSIG) if it dies without that.
local ffi = require 'ffi'
local buffer = require 'string.buffer'
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local dtype = require 'moontorch.dtype'
local data = require 'moontorch.utils.data'

local C = core.C
local fail, raise_last = core.fail, core.raise_last
local is_tensor, take, outp, szbuf = T.is_tensor, T.take, T.outp, T.szbuf
local type, pairs, ipairs, next, tostring, setmetatable, getmetatable, rawset, pcall, xpcall =
  type, pairs, ipairs, next, tostring, setmetatable, getmetatable, rawset, pcall, xpcall

local M = {}
local OP = 'utils.data.DataLoader'
local MAX_FDS = 250       -- MT_PROC_MAX_FDS
local MAX_OWN_BLOCKS = 200 -- shared blocks sent as they are; tensors beyond are copied into one
local GRACE = 0.1         -- seconds a worker is given to exit at a shutdown before it is killed

local i64, u64 = ffi.typeof('int64_t'), ffi.typeof('uint64_t')
local stbuf = ffi.new('int64_t[16]')
local size_out, off_out = ffi.new('size_t[1]'), ffi.new('int64_t[1]')
local map_out = ffi.new('mt_shm_map *[1]')
local int_out, int_out2 = ffi.new('int[1]'), ffi.new('int[1]')

-- shm_empty(sizes, dt): a new contiguous tensor in a block of shared memory (data.lua's collate in a worker)
function M.shm_empty(sizes, dt)
  local n = #sizes
  for i = 1, n do szbuf[i - 1] = sizes[i] end
  if C.mt_shm_empty(szbuf, n, dt.id, outp) ~= 0 then raise_last() end
  return take()
end

------------------------------------------------------------------------------ messages
-- A message is string.buffer's encoding of its header: kind, fields, `maps` (the bytes of each shared
-- block, whose descriptors travel with it in that order), `tensors` (each one's block, byte offset,
-- dtype, sizes, strides), `classes` (the registered class names of the metatables in the body) and
-- `body`: the value, encoded with those metatables, where a table with the metatable TREF stands
-- for tensor number TREF[1].
local TREF = setmetatable({}, { __tostring = function() return 'TREF' end })
-- dtypes and devices (moontorch's own values) stand as {name} with these metatables
local DTYPE, DEVICE = {}, {}
local plain = buffer.new()

local function unsendable(what)
  error(('moontorch.%s: a worker cannot hand over %s: a batch may hold tensors, numbers, strings, booleans, '
    .. 'int64 cdata and tables (instances of registered classes too)'):format(OP, what), 0)
end

-- a copy of v with its tensors replaced by TREF tables, noting classes and tensors in st
local function wire(v, st)
  local tv = type(v)
  if tv == 'number' or tv == 'string' or tv == 'boolean' or tv == 'nil' then return v end
  if tv == 'cdata' then
    if is_tensor(v) then
      local k = #st.tensors + 1
      st.tensors[k] = v
      return setmetatable({ k }, TREF)
    end
    if ffi.istype(i64, v) or ffi.istype(u64, v) then return v end
    unsendable(('a cdata value (%s)'):format(tostring(ffi.typeof(v))))
  end
  if tv ~= 'table' then unsendable('a ' .. tv) end
  if dtype.is_dtype(v) then return setmetatable({ v.id }, DTYPE) end
  if dtype.is_device(v) then return setmetatable({ tostring(v) }, DEVICE) end
  if st.open[v] then unsendable('a table that holds itself') end
  local out = {}
  local mt = getmetatable(v)
  if mt ~= nil then
    local name = class.typename(v)
    if type(name) ~= 'string' or class.find(name) ~= mt then unsendable('a table whose metatable is not a registered class') end
    if not st.class_ix[name] then
      st.classes[#st.classes + 1] = name
      st.mts[#st.mts + 1] = mt
      st.class_ix[name] = #st.mts
    end
    setmetatable(out, mt)
  end
  st.open[v] = true
  for k, x in next, v do
    if is_tensor(k) then unsendable('a table keyed by a tensor') end
    rawset(out, wire(k, st), wire(x, st))
  end
  st.open[v] = nil
  return out
end

local function sizes_of(t)
  local s, n = {}, t._ndim
  for i = 1, n do s[i] = tonumber(t._sizes[i - 1]) end
  return s
end
local function strides_of(t)
  local s, n = {}, t._ndim
  for i = 1, n do s[i] = tonumber(t._strides[i - 1]) end
  return s
end
local function contiguous_strides(sizes)
  local s, acc = {}, 1
  for i = #sizes, 1, -1 do
    s[i] = acc
    acc = acc * (sizes[i] > 0 and sizes[i] or 1)
  end
  return s
end

-- encode(hdr, value): the message's bytes, the descriptors to send and the tensors that hold their
-- blocks (alive until the message went; then every block's descriptor is closed)
local function encode(hdr, value)
  local st = { tensors = {}, open = {}, classes = {}, mts = { TREF, DTYPE, DEVICE }, class_ix = {} }
  local body = wire(value, st)
  local maps, fds, descs, held, by_fd, packed = {}, {}, {}, {}, {}, {}
  for k, t in ipairs(st.tensors) do
    if t._device_type ~= 0 then unsendable('a tensor on ' .. tostring(t.device)) end
    local rg = nil
    if t.requires_grad then
      if not t.is_leaf then
        error(('moontorch.%s: Cowardly refusing to send a non-leaf tensor which requires_grad from a worker, since '
          .. 'autograd does not support crossing process boundaries. If you just want to transfer the data, call '
          .. 'detach() on the tensor before returning it'):format(OP), 0)
      end
      t, rg = t:detach(), true
    end
    local d = { dtype = tonumber(t._dtype), sizes = sizes_of(t), rg = rg, map = 0 }
    descs[k] = d
    if t._numel > 0 then
      local fd = C.mt_shm_fd_of(t, size_out, off_out)
      local j = fd >= 0 and by_fd[fd]
      if fd >= 0 and not j and #maps < MAX_OWN_BLOCKS then
        j = #maps + 1
        maps[j], fds[j], by_fd[fd] = tonumber(size_out[0]), fd, j
        held[#held + 1] = t
      end
      if j then
        d.map, d.off, d.strides = j, tonumber(off_out[0]), strides_of(t)
      else
        packed[#packed + 1] = k
        st.tensors[k] = t
      end
    end
  end
  if #packed > 0 then
    local arr = ffi.new('mt_tensor *[?]', #packed)
    local offs = ffi.new('int64_t[?]', #packed)
    for i, k in ipairs(packed) do arr[i - 1] = st.tensors[k] end
    if C.mt_shm_pack(arr, #packed, offs, outp) ~= 0 then raise_last() end
    local block = take()
    local fd = C.mt_shm_fd_of(block, size_out, off_out)
    local j = #maps + 1
    maps[j], fds[j] = tonumber(size_out[0]), fd
    held[#held + 1] = block
    for i, k in ipairs(packed) do
      local d = descs[k]
      d.map, d.off, d.strides = j, tonumber(offs[i - 1]), contiguous_strides(d.sizes)
    end
  end
  local bb = buffer.new({ metatable = st.mts })
  hdr.body = bb:encode(body):get()
  hdr.maps, hdr.tensors, hdr.classes = maps, descs, st.classes
  return plain:reset():encode(hdr):get(), fds, held
end

-- send(fd, hdr[, value]): raises on failure
local fd_arr = ffi.new('int[?]', MAX_FDS)
local function send(fd, hdr, value)
  local bytes, fds, held = encode(hdr, value)
  for i, d in ipairs(fds) do fd_arr[i - 1] = d end
  local rc = C.mt_proc_send(fd, bytes, #bytes, fd_arr, #fds)
  C.mt_shm_close_fds()
  held = nil
  if rc ~= 0 then raise_last() end
end

-- the value in a received message's header: its blocks mapped (their descriptors taken from msg and
-- closed), its tensors made over them
local function restore(x, ts)
  local mt = getmetatable(x)
  if mt == TREF then return ts[x[1]] end
  if mt == DTYPE then return dtype.by_id[x[1]] end
  if mt == DEVICE then return dtype.device(x[1]) end
end
local function put_tensors(v, ts)
  for k, x in next, v do
    if type(x) == 'table' then
      local r = restore(x, ts)
      if r ~= nil then rawset(v, k, r) else put_tensors(x, ts) end
    end
  end
end
local function materialise(hdr, msg)
  local maps, ts = {}, {}
  local ok, err = pcall(function()
    for j, nbytes in ipairs(hdr.maps) do
      local fd = msg.fds[j - 1]
      msg.fds[j - 1] = -1
      if C.mt_shm_map_fd(fd, nbytes, map_out) ~= 0 then raise_last() end
      maps[j] = map_out[0]
    end
    for k, d in ipairs(hdr.tensors) do
      local n = #d.sizes
      if d.map == 0 then
        ts[k] = torch.empty(d.sizes, { dtype = dtype.by_id[d.dtype] })
      else
        for i = 1, n do szbuf[i - 1], stbuf[i - 1] = d.sizes[i], d.strides[i] end
        if C.mt_shm_map_tensor(maps[d.map], d.off, d.dtype, szbuf, stbuf, n, outp) ~= 0 then raise_last() end
        ts[k] = take()
      end
      if d.rg then ts[k]:requires_grad_(true) end
    end
  end)
  for _, m in ipairs(maps) do C.mt_shm_map_release(m) end
  if not ok then error(err, 0) end
  local mts = { TREF, DTYPE, DEVICE }
  for _, name in ipairs(hdr.classes) do
    local c = class.find(name)
    if not c then fail(OP, ("a worker sent an instance of class '%s', unknown here"):format(name)) end
    mts[#mts + 1] = c
  end
  local v = buffer.new({ metatable = mts }):set(hdr.body):decode()
  if type(v) == 'table' then
    local r = restore(v, ts)
    if r ~= nil then return r end
    put_tensors(v, ts)
  end
  return v
end

-- recv(fd, msg): the next message's header with its value in hdr.value; nil when the channel closed
local function recv(fd, msg)
  if C.mt_proc_recv(fd, msg) ~= 0 then
    C.mt_proc_msg_clear(msg)
    raise_last()
  end
  if msg.closed ~= 0 then return nil end
  local ok, hdr = pcall(buffer.decode, ffi.string(msg.data, msg.nbytes))
  if not ok or type(hdr) ~= 'table' then
    C.mt_proc_msg_clear(msg)
    fail(OP, 'a damaged message from a worker')
  end
  local ok2, v = pcall(materialise, hdr, msg)
  C.mt_proc_msg_clear(msg)
  if not ok2 then error(v, 0) end
  hdr.value, hdr.body = v, nil
  return hdr
end

------------------------------------------------------------------------------ the worker
-- the error and the worker's traceback, up to the worker's own loop (below it lie the main
-- process's frames at the moment it forked)
local function traceback(e)
  local msg = type(e) == 'string' and e or tostring(e)
  local lines = {}
  for line in debug.traceback('', 2):gmatch('[^\n]+') do
    if line:find('data_workers%.lua') then break end
    lines[#lines + 1] = line
  end
  if lines[#lines] and lines[#lines]:find("in function 'xpcall'", 1, true) then lines[#lines] = nil end
  return { msg = msg, tb = table.concat(lines, '\n') }
end

-- runs in the forked child and never returns
local function worker_main(cfg, wid, fd)
  local ok, err = xpcall(function()
    torch.set_num_threads(1)
    local seed = cfg.base_seed + wid
    torch.manual_seed(seed)
    math.randomseed(tonumber(ffi.cast(u64, seed) % 4503599627370496ULL))
    local info = data._WorkerInfo({ id = wid, num_workers = cfg.num_workers, seed = seed, dataset = cfg.loader.dataset })
    data._set_worker_info(info)
    local loader, iterable = cfg.loader, cfg.loader._iterable
    local fetch, init_err
    local function make_fetcher()
      local okf, e = xpcall(function()
        fetch = iterable and data._iterable_fetcher(loader) or data._map_fetcher(loader)
      end, traceback)
      if not okf then init_err = e end
    end
    local okf, e = xpcall(function() if cfg.init_fn then cfg.init_fn(wid) end end, traceback)
    if okf then make_fetcher() else init_err = e end
    local msg = ffi.new('mt_proc_msg')
    local ended = false
    while true do
      local task = recv(fd, msg)
      if task == nil or task.kind == 'stop' then break end
      if task.kind == 'resume' then
        ended, init_err = false, nil
        make_fetcher()
        send(fd, { kind = 'resumed', worker = wid })
      elseif not ended then
        if init_err then
          local e = init_err
          init_err = nil
          send(fd, { kind = 'error', idx = task.idx, worker = wid, err = e })
        else
          local arg = task.value
          if iterable and arg == false then arg = nil end
          local okb, batch = xpcall(fetch, traceback, arg)
          if okb and batch == nil and iterable then
            ended = true
            send(fd, { kind = 'end', idx = task.idx, worker = wid })
          elseif okb then
            local oks, e2 = xpcall(send, traceback, fd, { kind = 'data', idx = task.idx, worker = wid }, batch)
            if not oks then send(fd, { kind = 'error', idx = task.idx, worker = wid, err = e2 }) end
          else
            send(fd, { kind = 'error', idx = task.idx, worker = wid, err = batch })
          end
        end
      end
    end
  end, traceback)
  if not ok then
    -- the channel itself failed (the main process went away): nobody to tell
    C.mt_proc_exit(1)
  end
  C.mt_proc_exit(0)
end

------------------------------------------------------------------------------ the main process
-- A pass's state (PyTorch's _MultiProcessingDataLoaderIter): the workers (pids, the channels' ends,
-- whether each is still given tasks), the tasks sent (send_idx) and the next one to hand out
-- (rcvd_idx), which worker has each task, and the results that arrived ahead of their turn.
local Pass = {}
Pass.__index = Pass

local pid_arr = ffi.new('int[256]')
local poll_fds, poll_w = ffi.new('int[256]'), {}

-- end the workers: close the channels (an idle worker exits at once), give them GRACE seconds (none
-- when `now`), kill and reap the rest
function Pass:shutdown(now)
  if not self.started or self.owner ~= C.mt_proc_self() then return end
  self.started = false
  local n = 0
  for w = 0, self.n - 1 do
    if self.fds[w] then C.mt_proc_close(self.fds[w]) end
    if self.pids[w] then
      pid_arr[n] = self.pids[w]
      n = n + 1
    end
  end
  self.fds, self.pids = {}, {}
  C.mt_proc_reap(pid_arr, n, now and 0 or GRACE * 1000)
end

function Pass:start(base_seed)
  local cfg = { loader = self.loader, base_seed = base_seed, num_workers = self.n, init_fn = self.loader.worker_init_fn }
  self.pids, self.fds, self.stopping, self.dead = {}, {}, {}, {}
  self.owner = C.mt_proc_self()
  self.started = true
  for w = 0, self.n - 1 do
    if C.mt_proc_fork(int_out, int_out2) ~= 0 then
      local err = ffi.string(C.mt_last_error())
      self:shutdown(true)
      fail(OP, err:gsub('^[%w._]+: ', ''))
    end
    if int_out[0] == 0 then worker_main(cfg, w, int_out2[0]) end -- the worker: never returns
    self.pids[w], self.fds[w] = int_out[0], int_out2[0]
  end
end

-- a worker ended without being told to: the error that says how
local function death_message(w, pid)
  local how = C.mt_proc_wait(pid, 1, int_out)
  if how == 2 then
    return ('DataLoader worker (pid %d) is killed by signal: %s. (worker id %d)'):format(pid,
      ffi.string(C.mt_proc_signal_name(int_out[0])), w)
  elseif how == 1 then
    return ('DataLoader worker (pid %d) exited unexpectedly with exit code %d. (worker id %d)'):format(pid, int_out[0], w)
  end
  return ('DataLoader worker (pid %d) exited unexpectedly. (worker id %d)'):format(pid, w)
end

-- the next message from any worker (PyTorch's _get_data): waits at most `timeout` seconds when that
-- is > 0. A worker whose channel closes was told to stop (reaped, and waiting goes on) or died (an
-- error). Not compiled (jit.off below): while it waits, Ctrl-C's hook must get its chance to run.
local function wait_any(self)
  local deadline = self.timeout > 0 and C.mt_proc_clock() + self.timeout or nil
  while true do
    local n = 0
    for w = 0, self.n - 1 do
      if self.fds[w] then
        poll_fds[n], poll_w[n] = self.fds[w], w
        n = n + 1
      end
    end
    if n == 0 then fail(OP, 'no worker is left to wait for') end
    local ms = -1
    if deadline then
      ms = math.ceil((deadline - C.mt_proc_clock()) * 1000)
      if ms < 0 then ms = 0 end
    end
    local r = C.mt_proc_poll(poll_fds, n, ms)
    if r == -1 then
      self:shutdown(true)
      fail(OP, ('DataLoader timed out after %s seconds'):format(tostring(self.timeout)))
    elseif r == -3 then
      self:shutdown(true)
      fail(OP, 'waiting for the workers failed')
    elseif r >= 0 then
      local w = poll_w[r]
      local m = recv(self.fds[w], self.msg)
      if m then return m end
      C.mt_proc_close(self.fds[w])
      self.fds[w] = nil
      local pid = self.pids[w]
      if self.stopping[w] and not self.dead[w] then
        C.mt_proc_wait(pid, 1, int_out)
        self.pids[w] = nil
      else
        local why = death_message(w, pid)
        self.pids[w] = nil
        self:shutdown(true)
        fail(OP, why)
      end
    end
    -- r == -2: a signal interrupted the wait; the hook it set (if any) runs on the next call
  end
end
jit.off(wait_any)

-- wait_any, shutting the workers down when anything is raised while waiting
function Pass:get_data()
  local ok, m = pcall(wait_any, self)
  if not ok then
    self:shutdown(true)
    error(m, 0)
  end
  return m
end

-- A worker whose channel is closed died (or is dying): the task is dropped and the pass goes on, so
-- the batches the worker sent before it died are still given in their turn; waiting for its next
-- result reads the channel's end and raises how it died (wait_any).
function Pass:send_to(w, hdr, value)
  local ok, err = pcall(send, self.fds[w], hdr, value)
  if not ok then
    if err:find('channel to the other process is closed', 1, true) then
      self.dead[w] = true
      return
    end
    self:shutdown(true)
    fail(OP, err:gsub('^moontorch%.[%w._]+: ', ''))
  end
end

-- the next task to the next active worker (PyTorch's _try_put_index)
function Pass:put_index()
  local index = self.next_index()
  if index == nil then return end
  local w
  for _ = 1, self.n do
    local c = self.cycle
    self.cycle = (c + 1) % self.n
    if self.status[c] then w = c; break end
  end
  if w == nil then return end
  self:send_to(w, { kind = 'task', idx = self.send_idx }, index)
  self.task_worker[self.send_idx] = w
  self.outstanding = self.outstanding + 1
  self.send_idx = self.send_idx + 1
end

-- a worker that will get no more tasks: told to stop, unless it stays for the next pass
function Pass:retire(w)
  self.status[w] = false
  if not self.persistent and self.fds[w] then
    self.stopping[w] = true
    self:send_to(w, { kind = 'stop' })
  end
end

-- a result in its turn (PyTorch's _process_data): the next task goes out first, then an error
-- raised or the batch given
function Pass:process(m)
  self.rcvd_idx = self.rcvd_idx + 1
  self:put_index()
  if m.kind == 'error' then
    local e = m.err
    if not self.persistent then self:shutdown(true) end
    fail(OP, ('Caught an error in DataLoader worker process %d: %s\nOriginal traceback (in the worker):\n%s')
      :format(m.worker, e.msg, e.tb))
  end
  return m.value
end

-- the next batch in the sampler's order, or nil at the end of the pass (PyTorch's _next_data)
function Pass:next_data()
  while true do
    while self.rcvd_idx < self.send_idx do
      local i = self.rcvd_idx
      if self.results[i] ~= nil or self.status[self.task_worker[i]] then break end
      self.task_worker[i] = nil -- the task of a worker whose stream ended: it sends nothing for it
      self.rcvd_idx = i + 1
    end
    if self.rcvd_idx >= self.send_idx then
      self.finished = true
      if not self.persistent then self:shutdown(false) end
      return nil
    end
    local i = self.rcvd_idx
    local r = self.results[i]
    if r ~= nil then
      self.results[i], self.task_worker[i] = nil, nil
      return self:process(r)
    end
    local m = self:get_data()
    if m.kind == 'resumed' then
      -- (only while a pass resets)
    else
      self.outstanding = self.outstanding - 1
      if m.kind == 'end' then
        self:retire(m.worker)
        self:put_index()
      elseif m.idx ~= i then
        self.results[m.idx] = m
      else
        self.task_worker[i] = nil
        return self:process(m)
      end
    end
  end
end

-- a fresh pass over the loader's sampler (PyTorch's _reset): for workers that stay from the last
-- pass, each is told to resume (an iterable dataset's stream starts again) and what the last pass
-- left in flight is read and dropped until every worker said it resumed
function Pass:reset(first)
  local loader = self.loader
  if loader._iterable then
    local bs = loader.batch_size ~= false and loader.batch_size or nil
    self.next_index = function() return bs or false end -- an endless stream of "the next (bs) samples"
  else
    local it = data._sampler_iter(loader.batch_sampler or loader.sampler)
    self.next_index = it
  end
  self.send_idx, self.rcvd_idx, self.outstanding, self.cycle = 0, 0, 0, 0
  self.task_worker, self.results, self.status, self.finished = {}, {}, {}, false
  for w = 0, self.n - 1 do self.status[w] = true end
  if not first then
    for w = 0, self.n - 1 do self:send_to(w, { kind = 'resume' }) end
    local left = self.n
    while left > 0 do
      local m = self:get_data()
      if m.kind == 'resumed' then left = left - 1 end
    end
  end
  for _ = 1, self.prefetch * self.n do self:put_index() end
end

-- ends the pass's workers when it is collected (a loop left by `break`, an error in the loop's body)
local function guard(pass)
  local g = newproxy(true)
  getmetatable(g).__gc = function() pass:shutdown(false) end
  return g
end


-- a persistent loader's pass, kept from one `iter()` to the next (weak keys: it goes with the loader)
local passes = setmetatable({}, { __mode = 'k' })

-- the pass keeps a copy of the loader's fields, not the loader: a persistent loader's pass is the
-- value of a weak key, which must not lead back to its key
local function snapshot(loader)
  local c = {}
  for k, v in next, loader do c[k] = v end
  return setmetatable(c, getmetatable(loader))
end

local function new_pass(loader)
  local self = setmetatable({
    loader = snapshot(loader), n = loader.num_workers, prefetch = loader.prefetch_factor or 2,
    timeout = loader.timeout or 0, persistent = loader.persistent_workers,
    msg = ffi.gc(ffi.new('mt_proc_msg'), C.mt_proc_msg_clear), pids = {}, fds = {}, stopping = {}, dead = {},
  }, Pass)
  self.guard = guard(self)
  return self
end

-- loader:iter() with num_workers > 0
function M.iter(loader)
  local pass = loader.persistent_workers and passes[loader]
  if pass and pass.started then
    pass:reset(false)
  else
    pass = new_pass(loader)
    if loader.persistent_workers then passes[loader] = pass end
    local base_seed = data._base_seed(loader)
    pass.base_seed = base_seed
    pass:start(base_seed)
    pass:reset(true)
  end
  local values_of = data._values_of
  return function()
    if not pass.started and not pass.finished then
      fail(OP, 'this pass over the DataLoader ended with an error; start a new one (loader:iter())')
    end
    if pass.finished then return nil end
    local b = pass:next_data()
    if b ~= nil then return values_of(b) end
  end
end

return M
