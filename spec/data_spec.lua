-- moontorch.utils.data (lua/utils/data.lua): datasets, random_split, samplers, default_collate and
-- DataLoader, with the orders PyTorch 1.13 draws for the same seeds and its error messages.
-- The expected orders were recorded with /usr/bin/python3 (torch 1.13), e.g.
--   g = torch.Generator().manual_seed(42)
--   dl = DataLoader(TensorDataset(torch.arange(10)), batch_size=3, shuffle=True, generator=g)
--   [[b[0].tolist() for b in dl] for epoch in range(2)]
--   list(RandomSampler(range(10), replacement=True, num_samples=40, generator=torch.Generator().manual_seed(0)))
--   [list(s.indices) for s in random_split(range(11), [0.5, 0.2, 0.3], generator=torch.Generator().manual_seed(1))]
-- and shifted by one where they are indices (PyTorch counts from 0, moontorch from 1).
local H = require 'spec.support.helper'
local torch = H.torch
local data = require 'moontorch.utils.data'

local function gen(s) return torch.Generator():manual_seed(s) end
local function list(f)
  local r = {}
  for i in f do r[#r + 1] = i end
  return r
end
local function plus1(t)
  local r = {}
  for k, v in ipairs(t) do r[k] = type(v) == 'table' and plus1(v) or v + 1 end
  return r
end
local function batches(loader)
  local r = {}
  for x in loader() do r[#r + 1] = x:tolist() end
  return r
end

describe('moontorch.utils.data', function()
  it('is torch.utils.data', function()
    assert.are.equal(data, torch.utils.data)
    assert.are.equal(require 'moontorch.utils.progress', torch.utils.progress)
  end)

  describe('datasets', function()
    it('TensorDataset: ds[i] and :__getitem(i) give {t1[i], t2[i]}, 1-based, negative from the end', function()
      local x, y = torch.arange(12):view(6, 2), torch.arange(6) * 10
      local ds = data.TensorDataset(x, y)
      assert.are.equal(6, ds:__len())
      assert.are.same({ 4, 5 }, ds[3][1]:tolist())
      assert.are.same(20, ds:__getitem(3)[2]:item())
      assert.are.same({ 10, 11 }, ds[-1][1]:tolist())
      assert.are.equal(x, ds.tensors[1])
      H.errors_with(function() return ds[7] end, 'moontorch.utils.data.TensorDataset: index 7 is out of range for a dataset of 6 items')
      H.errors_with(function() data.TensorDataset(torch.ones(3), torch.ones(4)) end, 'Size mismatch between tensors')
      local err = H.errors_with(function() data.TensorDataset(torch.ones(3), 5) end, 'argument 2 is not a tensor')
      assert.truthy(err:find('data_spec.lua', 1, true))
    end)

    it('a Dataset subclass defines __getitem and __len; ds1 + ds2 concatenates', function()
      local Squares = torch.class('spec.Squares', data.Dataset)
      function Squares:__init(n) self.n = n end
      function Squares:__getitem(i) return i * i end
      function Squares:__len() return self.n end
      local a, b = Squares(3), Squares(2)
      assert.are.equal(9, a[3])
      local c = a + b
      assert.are.equal('data.ConcatDataset', torch.typename(c))
      assert.are.equal(5, c:__len())
      assert.are.same({ 1, 4, 9, 1, 4 }, { c[1], c[2], c[3], c[4], c[5] })
      assert.are.equal(4, c[-1])
      H.errors_with(function() return c[-6] end, 'absolute value of index should not exceed dataset length')
      H.errors_with(function() return data.Dataset()[1] end, 'must define __getitem')
      H.errors_with(function() data.ConcatDataset({}) end, 'datasets should not be an empty iterable')
    end)

    it('every dataset class has an __init that a subclass calls as modules do', function()
      local Base = torch.class('spec.InitBase', data.Dataset)
      function Base:__init(n)
        data.Dataset.__init(self)
        self.n = n
      end
      function Base:__getitem(i) return i end
      function Base:__len() return self.n end
      local Stream = torch.class('spec.InitStream', data.IterableDataset)
      function Stream:__init(n)
        data.IterableDataset.__init(self)
        self.n = n
      end
      function Stream:__iter()
        local i = 0
        return function() i = i + 1; if i <= self.n then return i end end
      end
      local Scaled = torch.class('spec.InitScaled', data.TensorDataset)
      function Scaled:__init(t, k)
        data.TensorDataset.__init(self, t * k)
      end
      assert.are.equal(4, Base(4):__len())
      assert.are.same({ 1, 2, 3 }, list(Stream(3):__iter()))
      assert.are.equal(30, Scaled(torch.arange(5), 10)[4][1]:item())
      for _, name in ipairs({ 'Dataset', 'IterableDataset', 'TensorDataset', 'Subset', 'ConcatDataset', 'ChainDataset' }) do
        assert.are.equal('function', type(data[name].__init), name)
      end
    end)

    it('len(ds) is data.len(ds) or ds:__len(): LuaJIT\'s # does not call __len on a table', function()
      local ds = data.TensorDataset(torch.zeros(7, 2))
      assert.are.equal(7, ds:__len())
      assert.are.equal(7, data.len(ds))
      assert.are.equal(0, #ds) -- the trap the README's Data section warns of
      assert.are.equal(3, data.len(data.DataLoader(ds, { batch_size = 3 })))
      assert.are.equal(7, data.len(data.SequentialSampler(ds)))
      assert.are.equal(5, data.len(torch.zeros(5, 2)))
      assert.are.equal(2, data.len({ 'a', 'b' }))
      H.errors_with(function() data.len(3) end, "object of type 'number' has no len()")
      H.errors_with(function() data.len(data.Dataset()) end, "object of type 'data.Dataset' has no len()")
    end)

    it('Subset views a dataset through 1-based indices (an array or a tensor)', function()
      local ds = data.TensorDataset(torch.arange(10) * 2)
      local s = data.Subset(ds, { 10, 1, 5 })
      assert.are.equal(3, s:__len())
      assert.are.same({ 18, 0, 8 }, { s[1][1]:item(), s[2][1]:item(), s[3][1]:item() })
      local s2 = data.Subset(ds, torch.tensor({ 2, 3 }, { dtype = torch.int64 }))
      assert.are.equal(4, s2[2][1]:item())
      H.errors_with(function() return s[4] end, 'index 4 is out of range')
    end)

    it('IterableDataset streams; ChainDataset chains them', function()
      local Count = torch.class('spec.Count', data.IterableDataset)
      function Count:__init(a, b) self.a, self.b = a, b end
      function Count:__iter()
        local i = self.a - 1
        return function()
          i = i + 1
          if i <= self.b then return i end
        end
      end
      local ch = data.ChainDataset({ Count(1, 3), Count(7, 8) })
      assert.are.same({ 1, 2, 3, 7, 8 }, list(ch:__iter()))
      local dl = data.DataLoader(Count(1, 5), { batch_size = 2 })
      local got = {}
      for b in dl() do got[#got + 1] = b:tolist() end
      assert.are.same({ { 1, 2 }, { 3, 4 }, { 5 } }, got)
      -- a pass draws its base seed first, for an iterable dataset too: the global stream goes on as
      -- PyTorch's (torch.manual_seed(0); iterate; torch.rand(1) -> 0.08847743272781372)
      torch.manual_seed(0)
      for _ in dl() do end
      assert.are.equal(0.08847743272781372, torch.rand(1):item())
      H.errors_with(function() data.DataLoader(Count(1, 5), { shuffle = true }) end,
        'DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle=True')
    end)
  end)

  it('datasets and loaders go through torch.save / torch.load, found by name in a fresh process', function()
    local path = os.tmpname()
    local ds = data.TensorDataset(torch.arange(6), torch.arange(6) * 2)
    torch.save({ ds = data.Subset(ds, { 5, 2 }), loader = data.DataLoader(ds, { batch_size = 4 }) }, path, { sync = false })
    local out, ok, err = H.run_lua(([[
      local torch = require 'moontorch'
      local obj = torch.load(%q)
      print(torch.typename(obj.ds), obj.ds:__len(), obj.ds[1][2]:item(), obj.loader:__len())
      for x, y in obj.loader() do io.write(table.concat(y:tolist(), ','), ';') end
    ]]):format(path))
    os.remove(path)
    assert.is_true(ok, out .. err)
    assert.are.equal('data.Subset\t2\t8\t2\n0,2,4,6;8,10;', out)
  end)

  describe('random_split', function()
    it('cuts randperm(n, generator) as PyTorch 1.13 does: counts or fractions', function()
      local ds = data.TensorDataset(torch.arange(10))
      local want = plus1({ { 2, 6, 1 }, { 8, 4, 5, 0, 9, 3, 7 } })
      for _, lengths in ipairs({ { 3, 7 }, { 0.3, 0.7 } }) do
        local parts = data.random_split(ds, lengths, { generator = gen(42) })
        assert.are.same(want, { parts[1].indices, parts[2].indices })
        assert.are.equal('data.Subset', torch.typename(parts[1]))
      end
      -- 11 items in fractions: floors 5, 2, 3 and the remainder goes to the first
      local parts = data.random_split(data.TensorDataset(torch.arange(11)), { 0.5, 0.2, 0.3 }, { generator = gen(1) })
      assert.are.same(plus1({ { 0, 10, 2, 3, 7, 6 }, { 4, 8 }, { 1, 9, 5 } }),
        { parts[1].indices, parts[2].indices, parts[3].indices })
      H.errors_with(function() data.random_split(ds, { 3, 6 }) end,
        'moontorch.utils.data.random_split: Sum of input lengths does not equal the length of the input dataset!')
    end)

    it('without a generator draws from the global one', function()
      local ds = data.TensorDataset(torch.arange(10))
      torch.manual_seed(42)
      local a = data.random_split(ds, { 3, 7 })
      assert.are.same(plus1({ 2, 6, 1 }), a[1].indices)
    end)
  end)

  describe('samplers', function()
    local ds = data.TensorDataset(torch.arange(10))
    it('SequentialSampler yields 1..n', function()
      local s = data.SequentialSampler(ds)
      assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, list(s:__iter()))
      assert.are.equal(10, s:__len())
    end)

    it('RandomSampler: PyTorch 1.13 orders with a generator (permutations, replacement, num_samples)', function()
      assert.are.same(plus1({ 4, 1, 7, 5, 3, 9, 0, 8, 6, 2 }), list(data.RandomSampler(ds, { generator = gen(0) })()))
      assert.are.same(plus1({ 4, 9, 3, 0, 3, 9, 7, 3, 7, 3, 1, 6, 6, 9, 8, 6, 6, 8, 4, 3, 6, 9, 1, 4, 4, 1, 9, 9, 9,
        0, 1, 2, 3, 0, 5, 5, 2, 9, 1, 8 }),
        list(data.RandomSampler(ds, { replacement = true, num_samples = 40, generator = gen(0) })()))
      local s = data.RandomSampler(ds, { num_samples = 25, generator = gen(0) })
      assert.are.equal(25, s:__len())
      assert.are.same(plus1({ 4, 1, 7, 5, 3, 9, 0, 8, 6, 2, 3, 9, 4, 2, 7, 8, 6, 0, 5, 1, 4, 0, 8, 5, 9 }), list(s()))
      H.errors_with(function() data.RandomSampler(ds, { num_samples = 0 }) end,
        'num_samples should be a positive integer value, but got num_samples=0')
      H.errors_with(function() data.RandomSampler(ds, { replacement = 1 }) end,
        'replacement should be a boolean value, but got replacement=1')
    end)

    it('SubsetRandomSampler and WeightedRandomSampler draw as PyTorch 1.13', function()
      assert.are.same({ 7, 9, 8, 6 }, list(data.SubsetRandomSampler({ 6, 7, 8, 9 }, { generator = gen(1) })()))
      local w = data.WeightedRandomSampler({ 0.1, 0.9, 0.4, 0.7, 3.0 }, 10, { generator = gen(3) })
      assert.are.equal(10, w:__len())
      assert.are.same(plus1({ 1, 3, 4, 1, 4, 4, 2, 4, 3, 4 }), list(w()))
      assert.are.same(plus1({ 3, 0, 1 }), list(data.WeightedRandomSampler({ 0.1, 0.9, 0.4, 0.7, 3.0 }, 3,
        { replacement = false, generator = gen(3) })()))
      H.errors_with(function() data.WeightedRandomSampler({ 1, 2 }, -1) end,
        'num_samples should be a positive integer value, but got num_samples=-1')
    end)

    it('BatchSampler groups indices, keeping or dropping the last short batch', function()
      local b = data.BatchSampler(data.SequentialSampler(ds), 4, false)
      assert.are.same({ { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10 } }, list(b()))
      assert.are.equal(3, b:__len())
      local d = data.BatchSampler({ 3, 1, 2, 5, 4 }, 2, true)
      assert.are.same({ { 3, 1 }, { 2, 5 } }, list(d()))
      assert.are.equal(2, d:__len())
      H.errors_with(function() data.BatchSampler(ds, 0, false) end,
        'batch_size should be a positive integer value, but got batch_size=0')
      H.errors_with(function() data.BatchSampler(ds, 2, 'no') end,
        'drop_last should be a boolean value, but got drop_last=no')
    end)
  end)

  describe('default_collate', function()
    it('stacks tensors, turns numbers into a tensor and collates arrays and tables member by member', function()
      local c = data.default_collate
      local t = c({ torch.tensor({ 1, 2 }), torch.tensor({ 3, 4 }) })
      assert.are.same({ { 1, 2 }, { 3, 4 } }, t:tolist())
      assert.are.equal(torch.int64, c({ 1, 2, 3 }).dtype)
      assert.are.equal(torch.float64, c({ 1, 2.5 }).dtype)
      assert.are.equal(torch.bool, c({ true, false }).dtype)
      assert.are.same({ 'a', 'b' }, c({ 'a', 'b' }))
      local r = c({ { torch.ones(2), 1 }, { torch.zeros(2), 2 } })
      assert.are.same({ { 1, 1 }, { 0, 0 } }, r[1]:tolist())
      assert.are.same({ 1, 2 }, r[2]:tolist())
      local d = c({ { x = 1, y = { 2 } }, { x = 3, y = { 4 } } })
      assert.are.same({ 1, 3 }, d.x:tolist())
      assert.are.same({ 2, 4 }, d.y[1]:tolist())
      H.errors_with(function() c({ { 1, 2 }, { 1 } }) end, 'each element in list of batch should be of equal size')
      H.errors_with(function() c({ function() end }) end, 'batch must contain tensors, numbers, dicts or lists; found function')
    end)
  end)

  describe('DataLoader', function()
    local ds = data.TensorDataset(torch.arange(10))

    it('batches in order by default; __len counts batches; drop_last drops the short one', function()
      local dl = data.DataLoader(ds, { batch_size = 4 })
      assert.are.equal(3, dl:__len())
      assert.are.same({ { 0, 1, 2, 3 }, { 4, 5, 6, 7 }, { 8, 9 } }, batches(dl))
      local d = data.DataLoader(ds, { batch_size = 4, drop_last = true })
      assert.are.equal(2, d:__len())
      assert.are.same({ { 0, 1, 2, 3 }, { 4, 5, 6, 7 } }, batches(d))
      local one = data.DataLoader(ds)
      assert.are.equal(10, one:__len())
      assert.are.same({ 1 }, H.shape(select(1, one:iter()())))
    end)

    it('shuffle with a generator: the batches of PyTorch 1.13, epoch after epoch', function()
      local dl = data.DataLoader(ds, { batch_size = 3, shuffle = true, generator = gen(42) })
      assert.are.same({ { 6, 5, 4 }, { 0, 8, 9 }, { 2, 1, 3 }, { 7 } }, batches(dl))
      assert.are.same({ { 3, 6, 5 }, { 8, 9, 4 }, { 2, 0, 7 }, { 1 } }, batches(dl))
    end)

    it('shuffle without a generator: PyTorch 1.13 order after torch.manual_seed, and the same global stream after', function()
      torch.manual_seed(7)
      local dl = data.DataLoader(ds, { batch_size = 4, shuffle = true })
      assert.are.same({ { 3, 2, 7, 8 }, { 6, 1, 5, 9 }, { 0, 4 } }, batches(dl))
      assert.are.same({ 83, 47, 87 }, torch.randint(0, 100, { 3 }):tolist())
    end)

    it('yields the members of {x, y} samples as values; works with progress', function()
      local x, y = torch.randn(7, 3), torch.arange(7)
      local dl = data.DataLoader(data.TensorDataset(x, y), { batch_size = 5 })
      local seen = {}
      for bx, by in dl:iter() do
        seen[#seen + 1] = { H.shape(bx), by:tolist() }
      end
      assert.are.same({ { { 5, 3 }, { 0, 1, 2, 3, 4 } }, { { 2, 3 }, { 5, 6 } } }, seen)
      -- the fast path (index_select) and the general path (stack) agree
      local plain = data.DataLoader(data.TensorDataset(x, y), { batch_size = 5, collate_fn = data.default_collate })
      local a1 = dl:iter()()
      local b1 = plain:iter()()
      assert.is_true(torch.equal(a1, b1))
      local progress = require 'moontorch.utils.progress'
      local out = { text = '' }
      function out:write(...) for i = 1, select('#', ...) do self.text = self.text .. select(i, ...) end end
      function out:flush() end
      local n = 0
      for i, bx, by in progress(dl, { out = out, tty = false, interval = 0 }) do
        n = n + 1
        assert.are.equal(n, i)
        assert.is_true(torch.is_tensor(by))
      end
      assert.are.equal(2, n)
      assert.truthy(out.text:find('2/2', 1, true))
    end)

    it('takes a sampler, a batch_sampler and a collate_fn; batch_size=false turns batching off', function()
      local dl = data.DataLoader(ds, { batch_size = 2, sampler = { 10, 9, 8 } })
      assert.are.same({ { 9, 8 }, { 7 } }, batches(dl))
      local bs = data.DataLoader(ds, { batch_sampler = { { 1, 2 }, { 5 } } })
      assert.are.same({ { 0, 1 }, { 4 } }, batches(bs))
      local sums = {}
      local c = data.DataLoader(ds, { batch_size = 5, collate_fn = function(b)
        local s = 0
        for _, item in ipairs(b) do s = s + item[1]:item() end
        return s
      end })
      for s in c() do sums[#sums + 1] = s end
      assert.are.same({ 10, 35 }, sums)
      local nb = data.DataLoader(ds, { batch_size = false })
      assert.are.equal(10, nb:__len())
      local first = nb:iter()()
      assert.are.equal(0, first:dim())
    end)

    it('default_convert (the collate without automatic batching) keeps values and copies plain tables', function()
      local t = torch.ones(2)
      local sample = { t, 3, 'x', { a = t, b = { 1, 2 } } }
      local c = data.default_convert(sample)
      assert.are_not.equal(sample, c)
      assert.are.equal(t, c[1])
      assert.are.equal(3, c[2])
      assert.are.equal('x', c[3])
      assert.are_not.equal(sample[4], c[4])
      assert.are.equal(t, c[4].a)
      assert.are.same({ 1, 2 }, c[4].b)
      assert.are.equal(t, data.default_convert(t))
      -- a dataset of {x, y} samples without batching yields each sample's values
      local pairs_ds = data.TensorDataset(torch.arange(3), torch.arange(3) * 10)
      local got = {}
      for x, y in data.DataLoader(pairs_ds, { batch_size = false })() do got[#got + 1] = { x:item(), y:item() } end
      assert.are.same({ { 0, 0 }, { 1, 10 }, { 2, 20 } }, got)
    end)

    it('get_worker_info is nil: every batch is loaded in the iterating process, as PyTorch\'s main process', function()
      assert.is_nil(data.get_worker_info())
      local seen = 'unset'
      local D = torch.class('spec.WorkerInfoDataset', data.Dataset)
      function D:__getitem(i) seen = data.get_worker_info() return torch.tensor(i) end
      function D:__len() return 2 end
      for _ in data.DataLoader(D(), { batch_size = 2 })() do end
      assert.is_nil(seen)
    end)

    it('errors as PyTorch, at the caller\'s line', function()
      local err = H.errors_with(function() data.DataLoader(ds, { sampler = { 1 }, shuffle = true }) end,
        'moontorch.utils.data.DataLoader: sampler option is mutually exclusive with shuffle')
      assert.truthy(err:find('data_spec.lua', 1, true))
      H.errors_with(function() data.DataLoader(ds, { batch_sampler = { { 1 } }, batch_size = 2 }) end,
        'batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last')
      H.errors_with(function() data.DataLoader(ds, { batch_size = false, drop_last = true }) end,
        'batch_size=None option disables auto-batching and is mutually exclusive with drop_last')
      H.errors_with(function() data.DataLoader(ds, { batch_size = 0 }) end,
        'batch_size should be a positive integer value, but got batch_size=0')
      H.errors_with(function() data.DataLoader(ds, { batchsize = 2 }) end,
        "__init__() got an unexpected keyword argument 'batchsize'")
      H.errors_with(function() data.DataLoader(ds, { num_workers = -1 }) end,
        'num_workers option should be a non-negative integer (got -1); use num_workers=0 to disable multiprocessing.')
      H.errors_with(function() data.DataLoader(ds, { num_workers = 1.5 }) end, 'num_workers option should be a non-negative integer')
      H.errors_with(function() data.DataLoader(ds, { timeout = -1, num_workers = 1 }) end, 'timeout option should be non-negative')
      H.errors_with(function() data.DataLoader(ds, { timeout = 1 }) end, 'timeout option applies to worker processes: it needs num_workers > 0')
      H.errors_with(function() data.DataLoader(ds, { prefetch_factor = 4 }) end,
        'prefetch_factor option could only be specified in multiprocessing. let num_workers > 0 to enable multiprocessing.')
      H.errors_with(function() data.DataLoader(ds, { prefetch_factor = 0, num_workers = 1 }) end,
        'prefetch_factor option should be a positive integer, but got prefetch_factor=0')
      H.errors_with(function() data.DataLoader(ds, { persistent_workers = true }) end, 'persistent_workers option needs num_workers > 0')
      H.errors_with(function() data.DataLoader(ds, { worker_init_fn = 3, num_workers = 1 }) end, 'worker_init_fn should be a function, got number')
      H.errors_with(function() data.DataLoader(ds, { multiprocessing_context = 'fork' }) end,
        'multiprocessing_context can only be used with multi-process loading (num_workers > 0), but got num_workers=0')
      H.errors_with(function() data.DataLoader(ds, { multiprocessing_context = 'spawn', num_workers = 1 }) end,
        "multiprocessing_context option should specify a valid start method in ['fork'] (moontorch's workers are forked processes), but got multiprocessing_context='spawn'")
      H.errors_with(function() data.DataLoader(ds, { pin_memory = 'yes' }) end, 'pin_memory option should be a boolean')
      -- accepted as PyTorch accepts them (pin_memory: nothing to pin without CUDA)
      local dl = data.DataLoader(ds, { num_workers = 2, prefetch_factor = 3, persistent_workers = true, timeout = 5,
        pin_memory = true, multiprocessing_context = 'fork', pin_memory_device = '' })
      assert.are.same({ 2, 3, true, 5, true, '' }, { dl.num_workers, dl.prefetch_factor, dl.persistent_workers, dl.timeout,
        dl.pin_memory, dl.pin_memory_device })
      assert.are.same({ 0, false, 0 }, { data.DataLoader(ds).num_workers, data.DataLoader(ds).pin_memory, data.DataLoader(ds).timeout })
      assert.are.equal(2, data.DataLoader(ds, { num_workers = 1 }).prefetch_factor)
    end)
  end)
end)
