-- DataLoader workers (num_workers > 0: lua/utils/data_workers.lua, core/proc.c, core/shm.c): PyTorch
-- 1.13's ordering and seeding, persistent workers, IterableDataset streams, errors, a killed worker,
-- a timeout, Ctrl-C, batches of any structure through shared memory, and nothing left behind.
-- Expected values were recorded with /usr/bin/python3 (torch 1.13) from the same datasets, e.g.
--   class D(Dataset):
--       def __len__(self): return 10
--       def __getitem__(self, i):
--           w = get_worker_info()
--           return torch.tensor([float(i), float(w.id) if w else -1.0]), torch.rand(())
--   g = torch.Generator(); g.manual_seed(0)
--   [(x[:, 0].long().tolist(), x[:, 1].long().tolist(), r.tolist())
--    for x, r in DataLoader(D(), batch_size=3, shuffle=True, num_workers=2, generator=g)]
-- (sample numbers printed here count from 0 as PyTorch's; the Lua datasets give i - 1).
local H = require 'spec.support.helper'
local torch = H.torch
local data = require 'moontorch.utils.data'
local C = require('moontorch.ffi').C
local T = require 'moontorch.tensor'

------------------------------------------------------------------------------ helpers
local function sleep_ms(ms) C.mt_proc_poll(nil, 0, ms) end

-- this process's pid, from /proc (in a worker: the worker's)
local function my_pid()
  local f = assert(io.open('/proc/self/stat'))
  local s = f:read('*a')
  f:close()
  return tonumber(s:match('^(%d+)'))
end

-- the state letter and parent of a process, or nil when it is gone
local function proc_state(pid)
  local f = io.open('/proc/' .. pid .. '/stat')
  if not f then return nil end
  local s = f:read('*a')
  f:close()
  local state, ppid = s:match('%) (%a) (%d+)')
  return state, tonumber(ppid)
end

-- the pids of this process's children now
local function children()
  local me, pids = my_pid(), {}
  local p = io.popen('ls /proc')
  local names = p:read('*a')
  p:close()
  for name in names:gmatch('%d+') do
    local _, ppid = proc_state(name)
    if ppid == me then pids[#pids + 1] = tonumber(name) end
  end
  return pids
end

-- the descriptors open in this process (probed one by one: a listing through io.popen would race
-- with popen's own pipe)
local function open_fds()
  local n = 0
  for fd = 0, 1100 do
    local f = io.open('/proc/self/fdinfo/' .. fd)
    if f then
      n = n + 1
      f:close()
    end
  end
  return n
end

local function fmt(v) return ('%.9g'):format(v) end

-- D: sample i is {tensor{i - 1, worker id or -1}, torch.rand(())} (PyTorch's D above)
local D = torch.class('spec.workers.D', data.Dataset)
function D:__init(n) self.n = n or 10 end
function D:__len() return self.n end
function D:__getitem(i)
  local w = data.get_worker_info()
  return { torch.tensor({ i - 1, w and w.id or -1 }), torch.rand({}) }
end

-- the batches of a loader over D as {samples, worker ids, random numbers}
local function run(loader)
  local out = {}
  for x, r in loader() do
    local a, b, c = {}, {}, {}
    for k = 1, x:size(1) do
      a[k], b[k], c[k] = x[k][1]:item(), x[k][2]:item(), fmt(r[k]:item())
    end
    out[#out + 1] = { a, b, c }
  end
  return out
end

local function floats(t)
  local r = {}
  for k, v in ipairs(t) do r[k] = fmt(v) end
  return r
end

-- R(a, b): the numbers a .. b - 1, split between the workers as PyTorch's documentation splits them
local R = torch.class('spec.workers.R', data.IterableDataset)
function R:__init(a, b)
  data.IterableDataset.__init(self)
  self.a, self.b = a, b
end
function R:__iter()
  local w = data.get_worker_info()
  local s, e = self.a, self.b
  if w then
    local per = math.ceil((self.b - self.a) / w.num_workers)
    s = self.a + w.id * per
    e = math.min(s + per, self.b)
  end
  local k = s - 1
  return function()
    k = k + 1
    if k < e then return k end
  end
end

local function lists(loader)
  local out = {}
  for b in loader() do out[#out + 1] = torch.is_tensor(b) and b:tolist() or b end
  return out
end

-- waits until the processes are gone (reaped); true when they all are
local function all_gone(pids, seconds)
  for _ = 1, (seconds or 2) * 100 do
    local left = false
    for _, pid in ipairs(pids) do
      if proc_state(pid) then left = true end
    end
    if not left then return true end
    sleep_ms(10)
  end
  return false
end

describe('DataLoader workers', function()
  local baseline_tensors, baseline_fds
  setup(function()
    T.sweep()
    baseline_tensors = tonumber(C.mt_get_stats().live_tensors)
    baseline_fds = open_fds()
  end)

  describe('order', function()
    it('batches come back in the sampler\'s order whatever the workers\' speed, tasks round robin', function()
      local Slow = torch.class('spec.workers.Slow', data.Dataset)
      function Slow:__len() return 12 end
      function Slow:__getitem(i)
        local w = data.get_worker_info()
        if w.id == 0 then sleep_ms(30) end -- worker 0 is much slower: later batches are ready first
        return torch.tensor({ i, w.id })
      end
      local got = {}
      for b in data.DataLoader(Slow(), { batch_size = 2, num_workers = 3 })() do got[#got + 1] = b:tolist() end
      assert.are.same({ { { 1, 0 }, { 2, 0 } }, { { 3, 1 }, { 4, 1 } }, { { 5, 2 }, { 6, 2 } },
        { { 7, 0 }, { 8, 0 } }, { { 9, 1 }, { 10, 1 } }, { { 11, 2 }, { 12, 2 } } }, got)
    end)

    it('a shuffled loader draws PyTorch\'s order and its workers PyTorch\'s random numbers', function()
      -- PyTorch: D(), batch_size=3, shuffle=True, num_workers=2, generator=manual_seed(0)
      local got = run(data.DataLoader(D(), { batch_size = 3, shuffle = true, num_workers = 2,
        generator = torch.Generator():manual_seed(0) }))
      assert.are.same({
        { { 3, 7, 5 }, { 0, 0, 0 }, floats({ 0.782139897, 0.053599, 0.988786936 }) },
        { { 2, 0, 8 }, { 1, 1, 1 }, floats({ 0.693817854, 0.29795897, 0.16685462 }) },
        { { 1, 6, 9 }, { 0, 0, 0 }, floats({ 0.194859326, 0.524179041, 0.198717773 }) },
        { { 4 }, { 1 }, floats({ 0.284719765 }) },
      }, got)
    end)

    it('the batches equal those of num_workers=0: TensorDataset, samplers, drop_last, batch_size=false', function()
      local x = torch.arange(30):view(10, 3):double()
      local ds = data.TensorDataset(x, torch.arange(10) * 7)
      local function both(opts)
        local a, b = {}, {}
        local seed = opts.generator and opts.generator:initial_seed()
        for p, q in data.DataLoader(ds, opts)() do a[#a + 1] = { p:tolist(), q:tolist() } end
        opts.num_workers = 2
        if seed then opts.generator:manual_seed(seed) end
        for p, q in data.DataLoader(ds, opts)() do b[#b + 1] = { p:tolist(), q:tolist() } end
        assert.are.same(a, b)
        return a
      end
      assert.are.equal(4, #both({ batch_size = 3 }))
      assert.are.equal(3, #both({ batch_size = 3, drop_last = true }))
      assert.are.equal(10, #both({ batch_size = false }))
      both({ batch_size = 4, shuffle = true, generator = torch.Generator():manual_seed(3) })
      both({ batch_sampler = { { 10, 1 }, { 5 }, { 2, 2, 2 } } })
      torch.manual_seed(1)
      local a = {}
      for p in data.DataLoader(ds, { batch_size = 2, sampler = data.SubsetRandomSampler({ 1, 4, 9 }) })() do a[#a + 1] = p:tolist() end
      torch.manual_seed(1)
      local b = lists(data.DataLoader(ds, { batch_size = 2, num_workers = 2, sampler = data.SubsetRandomSampler({ 1, 4, 9 }) }))
      assert.are.same(a, b)
      local sub = data.Subset(ds, { 9, 8, 1 })
      local a = {}
      for p in data.DataLoader(sub, { batch_size = 2, num_workers = 2 })() do a[#a + 1] = p:select(2, 1):tolist() end
      assert.are.same({ { 24, 21 }, { 0 } }, a)
    end)
  end)

  describe('seeding', function()
    it('each pass draws its base seed from the loader\'s generator; worker w seeds torch with base_seed + w', function()
      local S = torch.class('spec.workers.Seeds', data.Dataset)
      function S:__len() return 4 end
      function S:__getitem()
        local w = data.get_worker_info()
        return tostring(w.seed) .. ' ' .. tostring(torch.initial_seed() == tonumber(w.seed))
      end
      local got = {}
      for s in data.DataLoader(S(), { batch_size = 1, num_workers = 2, generator = torch.Generator():manual_seed(123) })() do
        got[#got + 1] = s
      end
      -- PyTorch: get_worker_info().seed for the same loader; base seed torch.empty((), dtype=torch.int64).random_(generator=g)
      assert.are.same({ '3624216819017203053LL true', '3624216819017203054LL true', '3624216819017203053LL true',
        '3624216819017203054LL true' }, got)
    end)

    it('the global generator feeds the base seed when the loader has none, and goes on as PyTorch\'s', function()
      torch.manual_seed(7)
      local got = run(data.DataLoader(D(), { batch_size = 4, num_workers = 2 }))
      assert.are.same({
        { { 0, 1, 2, 3 }, { 0, 0, 0, 0 }, floats({ 0.11662513, 0.134143531, 0.806562483, 0.837457836 }) },
        { { 4, 5, 6, 7 }, { 1, 1, 1, 1 }, floats({ 0.314840436, 0.280844867, 0.867925882, 0.484298766 }) },
        { { 8, 9 }, { 0, 0 }, floats({ 0.719229221, 0.575550437 }) },
      }, got)
      assert.are.equal(fmt(0.659211695), fmt(torch.rand({}):item()))
    end)

    it('the same generator seed gives the same batches, the workers\' random numbers included', function()
      local function with(seed, opts)
        opts = opts or {}
        opts.batch_size, opts.shuffle, opts.num_workers = 3, true, 2
        opts.generator = torch.Generator():manual_seed(seed)
        return run(data.DataLoader(D(), opts))
      end
      local a = with(0)
      assert.are.same(a, with(0))
      assert.are.same(a, with(0, { persistent_workers = true, prefetch_factor = 1 }))
      assert.are_not.same(a, with(1))
      -- the global generator likewise
      torch.manual_seed(3)
      local g1 = run(data.DataLoader(D(), { batch_size = 3, shuffle = true, num_workers = 3 }))
      torch.manual_seed(3)
      assert.are.same(g1, run(data.DataLoader(D(), { batch_size = 3, shuffle = true, num_workers = 3 })))
      collectgarbage(); collectgarbage() -- the persistent loader's workers
      assert.is_true(all_gone(children()))
      assert.are.same({}, children())
    end)

    it('Lua\'s math.random is seeded per worker too', function()
      local M = torch.class('spec.workers.MathRandom', data.Dataset)
      function M:__len() return 2 end
      function M:__getitem() return math.random() end
      local vals = {}
      for v in data.DataLoader(M(), { batch_size = 1, num_workers = 2 })() do vals[#vals + 1] = v:item() end
      assert.are.equal(2, #vals)
      assert.are_not.equal(vals[1], vals[2])
    end)
  end)

  describe('get_worker_info and worker_init_fn', function()
    it('gives id, num_workers, seed and the worker\'s own copy of the dataset; nil in the main process', function()
      local I = torch.class('spec.workers.Info', data.Dataset)
      function I:__init() self.tag = 'before' end
      function I:__len() return 3 end
      function I:__getitem(i)
        local w = data.get_worker_info()
        local same = rawequal(w.dataset, self)
        self.tag = 'changed in a worker'
        H.errors_with(function() w.id = 5 end, 'Cannot assign attributes to WorkerInfo objects')
        return { w.id, w.num_workers, same, self.seen, tostring(w):match('^WorkerInfo%(id=%d, num_workers=3, seed=%d+, ') ~= nil }
      end
      local ds = I()
      ds.seen = 'set after the loader was made'
      local dl = data.DataLoader(ds, { batch_size = false, num_workers = 3 })
      local got = {}
      for id, n, same, seen, repr in dl() do got[#got + 1] = { id, n, same, seen, repr } end
      assert.are.same({ { 0, 3, true, 'set after the loader was made', true }, { 1, 3, true, 'set after the loader was made', true },
        { 2, 3, true, 'set after the loader was made', true } }, got)
      assert.are.equal('before', ds.tag)
      assert.is_nil(data.get_worker_info())
    end)

    it('worker_init_fn runs in each worker, with its id, before any sample', function()
      local W = torch.class('spec.workers.Init', data.Dataset)
      function W:__len() return 4 end
      function W:__getitem(i) return self.offset + i end
      local ds = W()
      local dl = data.DataLoader(ds, { batch_size = 2, num_workers = 2, worker_init_fn = function(id)
        data.get_worker_info().dataset.offset = 100 * (id + 1)
      end })
      assert.are.same({ { 101, 102 }, { 203, 204 } }, lists(dl))
      assert.is_nil(ds.offset)
    end)

    it('prefetch_factor bounds the batches a worker loads ahead', function()
      local log = os.tmpname()
      local L = torch.class('spec.workers.Logged', data.Dataset)
      function L:__len() return 8 end
      function L:__getitem(i)
        local f = io.open(log, 'a')
        f:write('f', i, '\n')
        f:close()
        return i
      end
      local function most_ahead(prefetch)
        io.open(log, 'w'):close()
        local ahead = 0
        local dl = data.DataLoader(L(), { batch_size = 1, num_workers = 1, prefetch_factor = prefetch })
        local k = 0
        for _ in dl() do
          k = k + 1
          sleep_ms(60) -- the worker runs ahead as far as it may
          local n = 0
          for _ in io.lines(log) do n = n + 1 end
          if n - k > ahead then ahead = n - k end
        end
        return ahead
      end
      assert.are.equal(1, most_ahead(1))
      assert.are.equal(4, most_ahead(4))
      os.remove(log)
    end)
  end)

  describe('persistent workers', function()
    it('stay from one pass to the next (the same processes), seeded once, in PyTorch\'s orders', function()
      local P = torch.class('spec.workers.Pids', D)
      function P:__getitem(i)
        local r = D.__getitem(self, i)
        r[3] = my_pid()
        return r
      end
      local dl = data.DataLoader(P(), { batch_size = 2, shuffle = true, num_workers = 2,
        generator = torch.Generator():manual_seed(5), persistent_workers = true })
      local passes, pids = {}, {}
      for ep = 1, 2 do
        local out = {}
        for x, r, pid in dl() do
          out[#out + 1] = { x:select(2, 1):tolist(), x[1][2]:item(), fmt(r[1]:item()), fmt(r[2]:item()) }
          pids[ep] = pids[ep] or {}
          pids[ep][x[1][2]:item()] = pid[1]:item()
        end
        passes[ep] = out
      end
      -- PyTorch, persistent_workers=True: the second pass draws no base seed, and the workers' streams go on
      assert.are.same({
        { { 7, 4 }, 0, fmt(0.710600674), fmt(0.348305941) }, { { 8, 1 }, 1, fmt(0.290518641), fmt(0.585715234) },
        { { 2, 3 }, 0, fmt(0.6387555), fmt(0.655748487) }, { { 6, 5 }, 1, fmt(0.293526888), fmt(0.288263917) },
        { { 9, 0 }, 0, fmt(0.116080046), fmt(0.622262359) } }, passes[1])
      assert.are.same({
        { { 9, 7 }, 0, fmt(0.386762977), fmt(0.106095076) }, { { 2, 1 }, 1, fmt(0.0383281112), fmt(0.401174486) },
        { { 6, 3 }, 0, fmt(0.15234524), fmt(0.253400445) }, { { 0, 5 }, 1, fmt(0.984039366), fmt(0.729433477) },
        { { 4, 8 }, 0, fmt(0.631284475), fmt(0.969897449) } }, passes[2])
      assert.are.same(pids[1], pids[2])
      assert.are.equal(2, #children())
      -- a pass left half way: the next one starts afresh with the same workers
      local it = dl()
      it()
      assert.are.equal(5, #lists(dl))
      assert.are.same(pids[1], { [0] = proc_state(pids[1][0]) and pids[1][0], proc_state(pids[1][1]) and pids[1][1] })
      dl, it = nil, nil
      collectgarbage(); collectgarbage()
      assert.is_true(all_gone({ pids[1][0], pids[1][1] }))
      assert.are.same({}, children())
    end)

    it('without them each pass has new workers, reaped at its end, and draws a base seed (PyTorch\'s orders)', function()
      local dl = data.DataLoader(D(), { batch_size = 2, shuffle = true, num_workers = 2,
        generator = torch.Generator():manual_seed(5) })
      local orders = {}
      for ep = 1, 2 do
        local o = {}
        for x in dl() do
          o[#o + 1] = x:select(2, 1):tolist()
          assert.are.equal(2, #children())
        end
        orders[ep] = o
        assert.are.same({}, children())
      end
      assert.are.same({ { 7, 4 }, { 8, 1 }, { 2, 3 }, { 6, 5 }, { 9, 0 } }, orders[1])
      assert.are.same({ { 2, 1 }, { 6, 3 }, { 5, 9 }, { 4, 7 }, { 8, 0 } }, orders[2])
    end)
  end)

  describe('IterableDataset', function()
    it('each worker reads its own copy of the stream; get_worker_info shards it (PyTorch\'s interleaving)', function()
      assert.are.same({ 3, 5, 4, 6 }, lists(data.DataLoader(R(3, 7), { num_workers = 2, batch_size = false })))
      assert.are.same({ { 3, 4 }, { 7, 8 }, { 5, 6 }, { 9 } }, lists(data.DataLoader(R(3, 10), { num_workers = 2, batch_size = 2 })))
      assert.are.same({ { 3, 4 }, { 7, 8 }, { 5, 6 } },
        lists(data.DataLoader(R(3, 10), { num_workers = 2, batch_size = 2, drop_last = true })))
      assert.are.same({ { 0, 1, 2 }, { 4, 5, 6 }, { 8, 9 }, { 3 }, { 7 } },
        lists(data.DataLoader(R(0, 10), { num_workers = 3, batch_size = 3 })))
      -- without sharding every worker yields the whole stream
      local U = torch.class('spec.workers.Unsharded', data.IterableDataset)
      function U:__iter()
        local k = -1
        return function() k = k + 1; if k < 5 then return k end end
      end
      assert.are.same({ { 0, 1 }, { 0, 1 }, { 2, 3 }, { 2, 3 }, { 4 }, { 4 } },
        lists(data.DataLoader(U(), { num_workers = 2, batch_size = 2 })))
      -- persistent workers start their streams again at each pass
      local dl = data.DataLoader(R(0, 7), { num_workers = 2, batch_size = 2, persistent_workers = true })
      assert.are.same({ { 0, 1 }, { 4, 5 }, { 2, 3 }, { 6 } }, lists(dl))
      assert.are.same({ { 0, 1 }, { 4, 5 }, { 2, 3 }, { 6 } }, lists(dl))
      dl = nil
      collectgarbage(); collectgarbage()
      assert.is_true(all_gone(children()))
    end)
  end)

  describe('errors', function()
    local Boom = torch.class('spec.workers.Boom', data.Dataset)
    function Boom:__init(at) self.at = at end
    function Boom:__len() return 10 end
    function Boom:__getitem(i)
      if i == self.at then error('boom at ' .. i) end
      return i
    end

    it('an error in a worker is raised in the main process, at the loop, with the worker id and traceback', function()
      local dl = data.DataLoader(Boom(5), { batch_size = 2, num_workers = 2 })
      local got = {}
      local err = H.errors_with(function()
        for b in dl() do got[#got + 1] = b:tolist() end
      end, 'moontorch.utils.data.DataLoader: Caught an error in DataLoader worker process 0: ')
      assert.are.same({ { 1, 2 }, { 3, 4 } }, got)
      assert.truthy(err:find('data_workers_spec.lua:%d+: boom at 5\nOriginal traceback %(in the worker%):\nstack traceback:'), err)
      assert.truthy(err:find("in function 'error'", 1, true), err)
      assert.truthy(err:match('^[^\n]*data_workers_spec.lua:%d+: moontorch'), err) -- raised at the caller's line
      assert.is_nil(err:find('worker_main', 1, true), err) -- the main process's frames before the fork are not shown
      assert.are.same({}, children())
      -- the pass is over; a new one runs
      H.errors_with(function() for _ in dl() do end end, 'Caught an error in DataLoader worker process 0')
      assert.are.equal(4, #lists(data.DataLoader(Boom(0), { batch_size = 3, num_workers = 2 })))
    end)

    it('in worker_init_fn or an IterableDataset\'s __iter: raised for the worker\'s first batch', function()
      local dl = data.DataLoader(Boom(0), { batch_size = 2, num_workers = 2, worker_init_fn = function(id)
        if id == 1 then error('init failed in ' .. id) end
      end })
      local got = {}
      H.errors_with(function() for b in dl() do got[#got + 1] = b:tolist() end end,
        'Caught an error in DataLoader worker process 1: ')
      assert.are.same({ { 1, 2 } }, got)
      local Bad = torch.class('spec.workers.BadIter', data.IterableDataset)
      function Bad:__iter() error('no stream here') end
      H.errors_with(function() lists(data.DataLoader(Bad(), { num_workers = 2 })) end, 'no stream here')
      assert.are.same({}, children())
    end)

    it('with persistent workers the pass goes on after an error, as PyTorch\'s iterator does', function()
      local dl = data.DataLoader(Boom(3), { batch_size = 2, num_workers = 2, persistent_workers = true })
      local it = dl()
      assert.are.same({ 1, 2 }, it():tolist())
      H.errors_with(it, 'boom at 3')
      assert.are.same({ 5, 6 }, it():tolist())
      assert.are.same({ 7, 8 }, it():tolist())
      assert.are.equal(2, #children())
      it, dl = nil, nil
      collectgarbage(); collectgarbage()
      assert.is_true(all_gone(children()))
    end)

    it('a worker killed by a signal or exiting is a clear error, not a hang; the others are reaped', function()
      local K = torch.class('spec.workers.Killed', data.Dataset)
      function K:__init(how) self.how = how end
      function K:__len() return 10 end
      function K:__getitem(i)
        if i == 5 then
          if self.how == 'kill' then os.execute('kill -9 ' .. my_pid()) sleep_ms(5000)
          else os.exit(3) end -- as a user's dataset would (exit() in a forked worker)
        end
        return i
      end
      local err = H.errors_with(function() lists(data.DataLoader(K('kill'), { batch_size = 2, num_workers = 2 })) end,
        'moontorch.utils.data.DataLoader: DataLoader worker (pid ')
      assert.truthy(err:find('^[^\n]*data_workers_spec.lua:%d+: moontorch.utils.data.DataLoader: DataLoader worker %(pid %d+%) is killed by signal: Killed%. %(worker id 0%)$'), err)
      assert.are.same({}, children())
      H.errors_with(function() lists(data.DataLoader(K('exit'), { batch_size = 2, num_workers = 2 })) end,
        'exited unexpectedly with exit code 3')
      assert.are.same({}, children())
      -- what a worker sent before it died is given in its turn: one worker, dead in its second batch
      -- (the main process's next task to it finds the channel closed; the error comes at that batch)
      local got = {}
      H.errors_with(function()
        local it = data.DataLoader(K('exit'), { batch_size = 4, num_workers = 1 })()
        sleep_ms(300) -- it has sent the first batch and died before the loop asks
        for b in it do got[#got + 1] = b:tolist() end
      end, 'exited unexpectedly with exit code 3. (worker id 0)')
      assert.are.same({ { 1, 2, 3, 4 } }, got)
      assert.are.same({}, children())
      -- an idle worker killed from outside
      local dl = data.DataLoader(D(20), { batch_size = 1, num_workers = 2 })
      local it = dl()
      it()
      local kids = children()
      assert.are.equal(2, #kids)
      os.execute('kill -9 ' .. kids[2])
      H.errors_with(function() for _ in it do end end, 'is killed by signal: Killed')
      assert.are.same({}, children())
    end)

    it('timeout: a batch slower than `timeout` seconds is an error, and the workers are ended', function()
      local Sleepy = torch.class('spec.workers.Sleepy', data.Dataset)
      function Sleepy:__len() return 4 end
      function Sleepy:__getitem(i)
        if i == 3 then sleep_ms(3000) end
        return i
      end
      local t0 = C.mt_proc_clock()
      local got = {}
      H.errors_with(function()
        for b in data.DataLoader(Sleepy(), { batch_size = 2, num_workers = 1, timeout = 0.3 })() do got[#got + 1] = b:tolist() end
      end, 'moontorch.utils.data.DataLoader: DataLoader timed out after 0.3 seconds')
      assert.are.same({ { 1, 2 } }, got)
      assert.is_true(C.mt_proc_clock() - t0 < 2.5)
      assert.are.same({}, children())
    end)

    it('what a worker cannot hand over is an error naming it', function()
      local F = torch.class('spec.workers.Fn', data.Dataset)
      function F:__len() return 2 end
      function F:__getitem(i) return { f = print } end
      H.errors_with(function() lists(data.DataLoader(F(), { batch_size = false, num_workers = 1 })) end,
        'a worker cannot hand over a function')
      local G = torch.class('spec.workers.NonLeaf', data.Dataset)
      function G:__len() return 1 end
      function G:__getitem(i) return torch.ones(2, { requires_grad = true }) * 2 end
      H.errors_with(function() lists(data.DataLoader(G(), { batch_size = false, num_workers = 1 })) end,
        'Cowardly refusing to send a non-leaf tensor which requires_grad')
      assert.are.same({}, children())
    end)
  end)

  describe('shutdown', function()
    it('a loop left with break: its workers end when the pass is collected; the next pass is whole', function()
      local dl = data.DataLoader(D(40), { batch_size = 2, num_workers = 2 })
      local kids
      for x in dl() do
        kids = children()
        if x[1][1]:item() >= 4 then break end
      end
      assert.are.equal(2, #kids)
      collectgarbage(); collectgarbage()
      assert.is_true(all_gone(kids))
      assert.are.equal(20, #run(dl))
      assert.are.same({}, children())
    end)

    it('a pass left with break ends its workers when it is collected', function()
      local it = data.DataLoader(D(100), { batch_size = 1, num_workers = 2 })()
      it()
      local kids = children()
      assert.are.equal(2, #kids)
      it = nil
      collectgarbage(); collectgarbage()
      assert.is_true(all_gone(kids))
    end)

    -- a script that iterates a loader with two workers, after writing their pids to `pids`
    local script = [[
      local torch = require 'moontorch'
      local data = torch.utils.data
      local C = require('moontorch.ffi').C
      local pids = %q
      local S = torch.class('Forever', data.Dataset)
      function S:__len() return 1000000 end
      function S:__getitem(i) C.mt_proc_poll(nil, 0, 20) return i end
      local dl = data.DataLoader(S(), { batch_size = 1, num_workers = 2, worker_init_fn = function(id)
        local f = io.open('/proc/self/stat'); local pid = f:read('*a'):match('^%%d+'); f:close()
        f = io.open(pids, 'a'); f:write(pid, '\n'); f:close()
      end })
      if os.getenv('MT_SPEC_SHM_FILES') then C.mt_shm_use_memfd(0) end -- blocks as /dev/shm files
      local ok, err = pcall(function() for x in dl() do io.write('.') io.flush() end end)
      -- by the time the error reaches the loop's caller the workers are reaped (gone from /proc,
      -- not zombies waiting for this process)
      local kids = 0
      for pid in io.open(pids):read('*a'):gmatch('%%d+') do
        local f = io.open('/proc/' .. pid .. '/stat')
        if f then kids = kids + 1; f:close() end
      end
      io.stderr:write('workers left: ', kids, '\n')
      error(err, 0)
    ]]

    local function start(pidfile)
      local path = os.tmpname()
      H.write_file(path, ('package.path = %q .. package.path\npackage.cpath = %q .. package.cpath\n'):format(
        package.path, package.cpath) .. script:format(pidfile))
      return path
    end

    local function worker_pids(pidfile)
      for _ = 1, 500 do
        local f = io.open(pidfile)
        local s = f and f:read('*a') or ''
        if f then f:close() end
        local pids = {}
        for p in s:gmatch('%d+') do pids[#pids + 1] = tonumber(p) end
        if #pids == 2 then return pids end
        sleep_ms(10)
      end
      error('the workers did not start')
    end

    -- the names blocks could have in /dev/shm (core/shm.c's fallback: unlinked at once)
    local function shm_names()
      local p = io.popen('ls /dev/shm 2>/dev/null')
      local n = 0
      for name in p:read('*a'):gmatch('[^\n]+') do if name:match('^moontorch%-') then n = n + 1 end end
      p:close()
      return n
    end

    -- runs the script, sends SIGINT to it (`group`: to its whole process group, as a terminal's
    -- Ctrl-C does; the script runs under setsid so that the group is its own) once its workers run
    local function interrupt(group, env)
      local pidfile = os.tmpname()
      local path = start(pidfile)
      local p = io.popen(('%s %s %s %s >/dev/null 2>%s.err & echo $!; wait $!; echo "rc=$?"'):format(
        env or '', group and 'setsid' or '', H.luajit, path, path))
      local pid = tonumber(p:read('*l'))
      local wp = worker_pids(pidfile)
      for _, w in ipairs(wp) do assert.are.equal(pid, select(2, proc_state(w))) end
      sleep_ms(100)
      local pgid = H.read_file('/proc/' .. pid .. '/stat'):match('%) %a %d+ (%d+)')
      local sent = os.execute(group and pgid == tostring(pid) and ('kill -INT -' .. pgid) or ('kill -INT ' .. pid))
      sent = sent == 0 or sent == true
      if not sent then os.execute('kill -KILL ' .. pid) end -- or the read below would wait for ever
      local rest = p:read('*a')
      assert.is_true(sent)
      -- with setsid the script leads a group of its own: the signal reaches it and its workers only
      if group then assert.are.equal(tostring(pid), pgid) end
      p:close()
      local err = H.read_file(path .. '.err')
      assert.truthy(rest:find('rc=1', 1, true), rest)
      assert.truthy(err:find('interrupted!', 1, true), err)
      assert.truthy(err:find('workers left: 0\n', 1, true), err)
      -- gone, not zombies left to init
      for _, w in ipairs(wp) do assert.is_nil(proc_state(w)) end
      os.remove(path); os.remove(path .. '.err'); os.remove(pidfile)
    end

    it('Ctrl-C: the main process raises "interrupted!", ends and reaps its workers; none outlives it', function()
      local before = shm_names()
      interrupt(false)
      -- a terminal's Ctrl-C reaches the workers too: they ignore it, the main process ends them
      interrupt(true)
      -- with blocks as /dev/shm files: none is left behind by name
      interrupt(true, 'MT_SPEC_SHM_FILES=1')
      assert.are.equal(before, shm_names())
    end)

    it('a main process that is killed takes its workers with it', function()
      local pidfile = os.tmpname()
      local path = start(pidfile)
      local p = io.popen(('exec 2>/dev/null; %s %s >/dev/null & echo $!; wait $!; echo "rc=$?"'):format(H.luajit, path))
      local pid = tonumber(p:read('*l'))
      local wp = worker_pids(pidfile)
      os.execute('kill -KILL ' .. pid)
      local rest = p:read('*a')
      p:close()
      assert.truthy(rest:find('rc=137', 1, true), rest)
      -- PR_SET_PDEATHSIG: the workers die at once (left for init to reap: gone or zombies)
      for _ = 1, 200 do
        local alive = false
        for _, w in ipairs(wp) do
          local st = proc_state(w)
          if st and st ~= 'Z' then alive = true end
        end
        if not alive then break end
        sleep_ms(10)
      end
      for _, w in ipairs(wp) do
        local st = proc_state(w)
        assert.is_true(st == nil or st == 'Z', tostring(st))
      end
      os.remove(path); os.remove(pidfile)
    end)
  end)

  describe('batches through shared memory', function()
    local Box = torch.class('spec.workers.Box', nil)
    function Box:__init(v) self.v = v end

    -- a structure with tensors of many kinds
    local Rich = torch.class('spec.workers.Rich', data.Dataset)
    function Rich:__len() return 3 end
    function Rich:__getitem(i)
      local many = {}
      for k = 1, 230 do many[k] = torch.full({ k % 3 + 1 }, i * 1000 + k) end
      local leaf = torch.tensor({ i, i + 0.5 }, { requires_grad = true })
      return {
        image = torch.arange(24):view(2, 3, 4):float() + i,
        transposed = torch.arange(6):view(2, 3):double():t(),
        empty = torch.zeros(0, 3),
        many = many,
        big = ('x'):rep(300000) .. i,
        id = 5000000000LL + i,
        flag = i % 2 == 0,
        nested = { a = { b = { c = 'deep' .. i } }, list = { 1, 2.5, 'three' } },
        box = Box(torch.tensor({ i * 10 }, { dtype = torch.int32 })),
        leaf = leaf,
        kind = { torch.float64, torch.device('cpu') },
      }
    end

    local function check(s, i)
      assert.are.same((torch.arange(24):view(2, 3, 4):float() + i):tolist(), s.image:tolist())
      assert.are.equal(torch.float32, s.image.dtype)
      assert.are.same({ { 0, 3 }, { 1, 4 }, { 2, 5 } }, s.transposed:tolist())
      assert.are.same({ 0, 3 }, { s.empty:size(1), s.empty:size(2) })
      assert.are.equal(230, #s.many)
      assert.are.same({ i * 1000 + 229, i * 1000 + 229 }, s.many[229]:tolist())
      assert.are.equal(300001, #s.big)
      assert.are.equal(5000000000LL + i, s.id)
      assert.are.equal(i % 2 == 0, s.flag)
      assert.are.equal('deep' .. i, s.nested.a.b.c)
      assert.are.same({ 1, 2.5, 'three' }, s.nested.list)
      assert.are.equal('spec.workers.Box', torch.typename(s.box))
      assert.are.same({ i * 10 }, s.box.v:tolist())
      assert.are.equal(torch.int32, s.box.v.dtype)
      assert.is_true(s.leaf.requires_grad)
      assert.is_true(s.leaf.is_leaf)
      assert.are.equal(torch.float64, s.kind[1])
      assert.are.equal(torch.device('cpu'), s.kind[2])
    end

    it('any structure of tables, numbers, strings, booleans, int64 and class instances with tensors', function()
      local n = 0
      for s in data.DataLoader(Rich(), { batch_size = false, num_workers = 2 })() do
        n = n + 1
        check(s, n)
      end
      assert.are.equal(3, n)
    end)

    it('default_collate stacks into shared memory in the worker; the main process maps it, no copy', function()
      local seen
      local function collate(batch)
        local b = data.default_collate(batch)
        -- in the worker: the stacked tensors are blocks of shared memory
        return { b[1], C.mt_shm_fd_of(b[1], nil, nil) >= 0, C.mt_shm_fd_of(b[2], nil, nil) >= 0 }
      end
      local ds = data.TensorDataset(torch.randn(10, 4), torch.arange(10))
      for x, a, b in data.DataLoader(D(), { batch_size = 5, num_workers = 1, collate_fn = collate })() do
        seen = { a, b }
        assert.are.same({ 5, 2 }, { x:size(1), x:size(2) })
      end
      assert.are.same({ true, true }, seen)
      -- in the main process a batch's tensors are over mapped blocks, which go with the last of them
      T.sweep()
      local before = tonumber(C.mt_shm_live())
      local held = {}
      for x, y in data.DataLoader(ds, { batch_size = 5, num_workers = 2 })() do held[#held + 1] = { x, y } end
      assert.are.same(ds.tensors[1]:narrow(1, 6, 5):tolist(), held[2][1]:tolist())
      assert.is_true(tonumber(C.mt_shm_live()) >= before + 4)
      held[2][1]:fill_(0) -- an ordinary tensor: writable
      assert.are.same({ 0, 0, 0, 0 }, held[2][1][1]:tolist())
      held = nil
      T.sweep()
      assert.are.equal(before, tonumber(C.mt_shm_live()))
    end)

    it('a worker\'s descriptors do not pile up when its collate drops the blocks it made', function()
      local N = torch.class('spec.workers.Numbers', data.Dataset)
      function N:__len() return 400 end
      function N:__getitem(i) return i end
      local counts = {}
      local function collate(b)
        local x = data.default_collate(b) -- a block in shared memory, dropped below
        if b[1] % 100 == 0 then return open_fds() end
        return x:clone()
      end
      for v in data.DataLoader(N(), { batch_size = 1, num_workers = 1, collate_fn = collate })() do
        if type(v) == 'number' then counts[#counts + 1] = v end
      end
      assert.are.equal(4, #counts)
      assert.is_true(counts[4] <= counts[1] + 2, table.concat(counts, ' '))
    end)

    it('blocks also work as unlinked /dev/shm files (a kernel without memfd)', function()
      assert.are.equal(1, C.mt_shm_use_memfd(-1))
      C.mt_shm_use_memfd(0)
      local ok, err = pcall(function()
        local n = 0
        for s in data.DataLoader(Rich(), { batch_size = false, num_workers = 1 })() do
          n = n + 1
          check(s, n)
        end
      end)
      C.mt_shm_use_memfd(1)
      assert.is_true(ok, err)
    end)

    it('pin_memory is accepted and changes nothing (nothing to pin without CUDA)', function()
      local got = lists(data.DataLoader(R(0, 4), { batch_size = 2, num_workers = 1, pin_memory = true }))
      assert.are.same({ { 0, 1 }, { 2, 3 } }, got)
    end)
  end)

  it('leaves nothing behind: tensors, shared blocks, descriptors, processes', function()
    for _ = 1, 3 do
      for _ in data.DataLoader(data.TensorDataset(torch.randn(40, 8)), { batch_size = 4, num_workers = 2, shuffle = true })() do end
    end
    T.sweep()
    assert.are.equal(0, tonumber(C.mt_shm_live()))
    assert.are.equal(baseline_tensors, tonumber(C.mt_get_stats().live_tensors))
    assert.are.equal(baseline_fds, open_fds())
    assert.are.same({}, children())
  end)
end)
