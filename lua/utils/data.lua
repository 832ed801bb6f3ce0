-- moontorch.utils.data (also torch.utils.data): PyTorch 1.13's torch.utils.data in Lua.
--   local data = require 'moontorch.utils.data'
--   local ds = data.TensorDataset(x, y)                      -- ds[i] / ds:__getitem(i), ds:__len()
--   local train, val = unpack(data.random_split(ds, {0.8, 0.2}, {generator = g}))
--   local loader = data.DataLoader(train, {batch_size = 64, shuffle = true, generator = g})
--   for x, y in loader:iter() do ... end                    -- or `for x, y in loader() do`
--   loader:__len(), data.len(loader)                         -- the number of batches (LuaJIT's # ignores __len)
--   data.DataLoader(ds, {num_workers = 2, ...})              -- 2 worker processes (data_workers.lua)
-- Indices are 1-based everywhere (samplers yield 1..n). A sample that is a Lua array (TensorDataset's
-- {x, y}) is PyTorch's tuple: the loader yields a batch's members as several values.
-- Shuffled orders equal PyTorch 1.13's for the same seed: RandomSampler draws randperm / randint(·, 32)
-- from the generator as PyTorch does, and each pass of a DataLoader first draws its base seed (one
-- int64) from the loader's generator (or the global one), as PyTorch's iterator does.
-- Batching a TensorDataset with the default collate is one index_select per tensor (in C). In a
-- worker process, default_collate and that index_select write into shared memory (data_workers.lua).
local ffi = require 'ffi'
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'

local fail = core.fail
local is_tensor = torch.is_tensor
local type, pairs, ipairs, tostring, select, getmetatable = type, pairs, ipairs, tostring, select, getmetatable
local floor, ceil = math.floor, math.ceil
local unpack = unpack or table.unpack

local M = {}

local function is_int(v) return type(v) == 'number' and v == floor(v) and v > -math.huge and v < math.huge end
local function pybool(b) return b and 'True' or 'False' end
local function pyrepr(v)
  if v == nil then return 'None' end
  if type(v) == 'boolean' then return pybool(v) end
  return tostring(v)
end

-- len(x) as Python's: an object's __len method, a tensor's first size, an array's length
local function len(x, op)
  if is_tensor(x) then return x:size(1) end
  if type(x) == 'table' then
    local mt = getmetatable(x)
    if mt and mt.__len then return mt.__len(x) end
    return #x
  end
  fail(op or 'utils.data', ("object of type '%s' has no len()"):format(type(x)))
end
M.len = len

------------------------------------------------------------------------------ datasets
local Dataset = class.class('data.Dataset', nil, M)
-- nothing to set up: here so that a subclass calls its parent's constructor as modules do
-- (`data.Dataset.__init(self)`)
function Dataset:__init() end
-- ds[i] calls ds:__getitem(i); other keys are the class's fields
function Dataset.__index(self, k)
  if type(k) == 'number' then return self:__getitem(k) end
  return getmetatable(self)[k]
end
function Dataset.__getitem(self, i)
  fail('utils.data.Dataset', ('%s must define __getitem (NotImplementedError)'):format(class.typename(self) or 'Dataset'))
end
function Dataset.__len(self)
  fail('utils.data.Dataset', ("object of type '%s' has no len()"):format(class.typename(self) or 'Dataset'))
end
function Dataset.__add(a, b) return M.ConcatDataset({ a, b }) end
function Dataset.__tostring(self) return ('<%s object>'):format(class.typename(self) or 'Dataset') end

-- IterableDataset: a dataset read as a stream; subclasses define :__iter() returning an iterator function
local IterableDataset = class.class('data.IterableDataset', Dataset, M)
function IterableDataset:__init() Dataset.__init(self) end
function IterableDataset.__iter(self)
  fail('utils.data.IterableDataset', ('%s must define __iter (NotImplementedError)'):format(class.typename(self) or 'IterableDataset'))
end
function IterableDataset.__add(a, b) return M.ChainDataset({ a, b }) end
function IterableDataset.__getitem(self, i)
  fail('utils.data.IterableDataset', 'an IterableDataset is read by iterating it (:__iter()), not by index')
end

-- ChainDataset(datasets): iterable datasets one after another
local ChainDataset = class.class('data.ChainDataset', IterableDataset, M)
function ChainDataset:__init(datasets) rawset(self, 'datasets', datasets) end
function ChainDataset:__iter()
  local k, it = 0, nil
  local dss = rawget(self, 'datasets')
  return function()
    while true do
      if it then
        local v = it()
        if v ~= nil then return v end
      end
      k = k + 1
      if dss[k] == nil then return nil end
      it = dss[k]:__iter()
    end
  end
end
function ChainDataset:__len()
  local n = 0
  for _, d in ipairs(rawget(self, 'datasets')) do n = n + len(d) end
  return n
end

-- a 1-based index into n items, negative counting from the end
local function check_index(i, n, op)
  if not is_int(i) then fail(op, ('index must be an integer, got %s'):format(tostring(i))) end
  if i < 0 then i = n + 1 + i end
  if i < 1 or i > n then fail(op, ('index %d is out of range for a dataset of %d items'):format(i, n)) end
  return i
end

-- TensorDataset(t1, t2, ...): sample i is {t1[i], t2[i], ...}
local TensorDataset = class.class('data.TensorDataset', Dataset, M)
function TensorDataset:__init(...)
  local ts = { ... }
  if #ts == 0 or select('#', ...) ~= #ts then fail('utils.data.TensorDataset', 'expects one or more tensors') end
  for k, t in ipairs(ts) do
    if not is_tensor(t) then fail('utils.data.TensorDataset', ('argument %d is not a tensor (got %s)'):format(k, type(t))) end
    if t:dim() == 0 then fail('utils.data.TensorDataset', ('tensor %d is 0-dimensional: it has no samples'):format(k)) end
    if t:size(1) ~= ts[1]:size(1) then fail('utils.data.TensorDataset', 'Size mismatch between tensors') end
  end
  rawset(self, 'tensors', ts)
end
function TensorDataset:__getitem(i)
  local ts = rawget(self, 'tensors')
  i = check_index(i, ts[1]:size(1), 'utils.data.TensorDataset')
  local r = {}
  for k = 1, #ts do r[k] = ts[k][i] end
  return r
end
function TensorDataset:__len() return rawget(self, 'tensors')[1]:size(1) end

-- indices given as an array of numbers or a 1-D integer tensor, as a Lua array
local function index_array(ix, op)
  if is_tensor(ix) then
    if ix:dim() ~= 1 then fail(op, 'indices must be a 1-D tensor') end
    return ix:tolist()
  end
  if type(ix) ~= 'table' then fail(op, ('indices must be an array or a tensor, got %s'):format(type(ix))) end
  local mt = getmetatable(ix)
  if mt and mt.__iter then -- a sampler
    local r = {}
    for i in ix:__iter() do r[#r + 1] = i end
    return r
  end
  return ix
end

-- Subset(dataset, indices): the dataset seen through the (1-based) indices
local Subset = class.class('data.Subset', Dataset, M)
function Subset:__init(dataset, indices)
  rawset(self, 'dataset', dataset)
  rawset(self, 'indices', index_array(indices, 'utils.data.Subset'))
end
function Subset:__getitem(i)
  local ix = rawget(self, 'indices')
  if type(i) == 'table' then -- a batch of positions (PyTorch: a list)
    local r = {}
    for k, j in ipairs(i) do r[k] = rawget(self, 'dataset')[ix[check_index(j, #ix, 'utils.data.Subset')]] end
    return r
  end
  return rawget(self, 'dataset')[ix[check_index(i, #ix, 'utils.data.Subset')]]
end
function Subset:__len() return #rawget(self, 'indices') end
-- a whole batch from the dataset beneath, when it offers one (see DataLoader)
function Subset:__getbatch(idx)
  local ds = rawget(self, 'dataset')
  if type(ds.__getbatch) ~= 'function' then return nil end
  local ix, r = rawget(self, 'indices'), {}
  for k, j in ipairs(idx) do r[k] = ix[check_index(j, #ix, 'utils.data.Subset')] end
  return ds:__getbatch(r)
end

-- ConcatDataset(datasets): one dataset after another
local ConcatDataset = class.class('data.ConcatDataset', Dataset, M)
function ConcatDataset:__init(datasets)
  if type(datasets) ~= 'table' or #datasets == 0 then
    fail('utils.data.ConcatDataset', 'datasets should not be an empty iterable')
  end
  local cum, n = {}, 0
  for k, d in ipairs(datasets) do
    if class.isinstance(d, IterableDataset) then
      fail('utils.data.ConcatDataset', 'ConcatDataset does not support IterableDataset')
    end
    n = n + len(d, 'utils.data.ConcatDataset')
    cum[k] = n
  end
  rawset(self, 'datasets', datasets)
  rawset(self, 'cumulative_sizes', cum)
end
function ConcatDataset:__len() local c = rawget(self, 'cumulative_sizes'); return c[#c] end
function ConcatDataset:__getitem(i)
  local cum, dss = rawget(self, 'cumulative_sizes'), rawget(self, 'datasets')
  if is_int(i) and i < 0 and -i > cum[#cum] then
    fail('utils.data.ConcatDataset', 'absolute value of index should not exceed dataset length')
  end
  i = check_index(i, cum[#cum], 'utils.data.ConcatDataset')
  local lo, hi = 1, #cum -- the first dataset whose cumulative size reaches i
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    if cum[mid] >= i then hi = mid else lo = mid + 1 end
  end
  return dss[lo][i - (cum[lo - 1] or 0)]
end

-- random_split(dataset, lengths, {generator=}): an array of Subsets. lengths are counts summing to
-- the dataset's length, or fractions summing to 1 (the remainder spread one by one from the first).
-- The indices are randperm(n, generator) cut in order, as PyTorch 1.13's.
function M.random_split(dataset, lengths, opts)
  local op = 'utils.data.random_split'
  local generator = opts and opts.generator
  if type(lengths) ~= 'table' then fail(op, 'lengths must be an array of counts or fractions') end
  local n = len(dataset, op)
  local sum = 0
  for _, l in ipairs(lengths) do
    if type(l) ~= 'number' then fail(op, 'lengths must be numbers') end
    sum = sum + l
  end
  local ls = {}
  if math.abs(sum - 1) <= 1e-9 and sum <= 1 then
    for k, frac in ipairs(lengths) do
      if frac < 0 or frac > 1 then fail(op, ('Fraction at index %d is not between 0 and 1'):format(k)) end
      ls[k] = floor(n * frac)
    end
    local got = 0
    for _, l in ipairs(ls) do got = got + l end
    for k = 0, n - got - 1 do
      local j = k % #ls + 1
      ls[j] = ls[j] + 1
    end
    for k, l in ipairs(ls) do
      if l == 0 then
        io.stderr:write(('warning: moontorch.utils.data.random_split: Length of split at index %d is 0. This might result in an empty dataset.\n'):format(k))
      end
    end
    sum = n
  else
    for k, l in ipairs(lengths) do
      if not is_int(l) or l < 0 then fail(op, ('lengths must be non-negative integers or fractions summing to 1, got %s at %d'):format(tostring(l), k)) end
      ls[k] = l
    end
  end
  if sum ~= n then fail(op, 'Sum of input lengths does not equal the length of the input dataset!') end
  local perm = torch.randperm(n, generator and { generator = generator } or nil):tolist()
  local out, off = {}, 0
  for k, l in ipairs(ls) do
    local ix = {}
    for j = 1, l do ix[j] = perm[off + j] end
    off = off + l
    out[k] = Subset(dataset, ix)
  end
  return out
end

------------------------------------------------------------------------------ samplers
-- A sampler yields dataset indices: `for i in sampler:__iter() do` (or `for i in sampler() do`).
local Sampler = class.class('data.Sampler', nil, M)
function Sampler:__init(data_source) self.data_source = data_source end
function Sampler:__iter() fail('utils.data.Sampler', ('%s must define __iter (NotImplementedError)'):format(class.typename(self))) end
function Sampler:__call() return self:__iter() end
function Sampler:iter() return self:__iter() end

local function array_iter(a)
  local k = 0
  return function()
    k = k + 1
    return a[k]
  end
end

local SequentialSampler = class.class('data.SequentialSampler', Sampler, M)
function SequentialSampler:__iter()
  local n, k = len(self.data_source), 0
  return function()
    k = k + 1
    if k <= n then return k end
  end
end
function SequentialSampler:__len() return len(self.data_source) end

-- a fresh generator seeded from the global one, as PyTorch's samplers make when given none
local function seeded_generator(op)
  local s = torch.empty({}, { dtype = torch.int64 }):random_()
  return torch.Generator():manual_seed(ffi.cast('int64_t *', s._data)[0])
end

-- RandomSampler(data_source, {replacement=false, num_samples=len, generator=})
local RandomSampler = class.class('data.RandomSampler', Sampler, M)
function RandomSampler:__init(data_source, opts)
  local op = 'utils.data.RandomSampler'
  opts = opts or {}
  self.data_source = data_source
  self.replacement = opts.replacement or false
  self._num_samples = opts.num_samples
  self.generator = opts.generator
  if type(self.replacement) ~= 'boolean' then
    fail(op, ('replacement should be a boolean value, but got replacement=%s'):format(pyrepr(opts.replacement)))
  end
  local ns = self:num_samples()
  if not is_int(ns) or ns <= 0 then
    fail(op, ('num_samples should be a positive integer value, but got num_samples=%s'):format(pyrepr(ns)))
  end
end
function RandomSampler:num_samples()
  if self._num_samples == nil then return len(self.data_source) end
  return self._num_samples
end
function RandomSampler:__len() return self:num_samples() end
-- lazy as PyTorch's generator function: nothing is drawn until the first index is asked for
function RandomSampler:__iter()
  local n, ns = len(self.data_source), self:num_samples()
  local buf, k, done, pass = nil, 0, 0, 0
  local gen
  local function refill()
    if gen == nil then gen = self.generator or seeded_generator() end
    local g = { generator = gen }
    if self.replacement then
      local left = ns - done
      local m = left >= 32 and 32 or left
      if m == 0 then return false end
      buf = (torch.randint(0, n, { m }, g) + 1):tolist()
    else
      -- whole permutations, then the first num_samples % n of one more
      local full = floor(ns / n)
      pass = pass + 1
      if pass > full + 1 then return false end
      -- (PyTorch draws that last permutation even when it keeps none of it)
      local p = torch.randperm(n, g):tolist()
      if pass == full + 1 then
        local r = ns % n
        for j = #p, r + 1, -1 do p[j] = nil end
        if r == 0 then return false end
      end
      buf = p
    end
    k = 0
    return true
  end
  return function()
    if buf == nil or k >= #buf then
      if not refill() then return nil end
    end
    k = k + 1
    done = done + 1
    return buf[k]
  end
end

-- SubsetRandomSampler(indices, {generator=}): the given indices in a random order
local SubsetRandomSampler = class.class('data.SubsetRandomSampler', Sampler, M)
function SubsetRandomSampler:__init(indices, opts)
  self.indices = index_array(indices, 'utils.data.SubsetRandomSampler')
  self.generator = opts and opts.generator
end
function SubsetRandomSampler:__len() return #self.indices end
function SubsetRandomSampler:__iter()
  local perm, k = nil, 0
  return function()
    if perm == nil then
      perm = torch.randperm(#self.indices, self.generator and { generator = self.generator } or nil):tolist()
    end
    k = k + 1
    local p = perm[k]
    if p then return self.indices[p] end
  end
end

-- WeightedRandomSampler(weights, num_samples, {replacement=true, generator=}): indices drawn with
-- probabilities proportional to the weights (torch.multinomial)
local WeightedRandomSampler = class.class('data.WeightedRandomSampler', Sampler, M)
function WeightedRandomSampler:__init(weights, num_samples, opts)
  local op = 'utils.data.WeightedRandomSampler'
  opts = opts or {}
  local replacement = opts.replacement
  if replacement == nil then replacement = true end
  if not is_int(num_samples) or num_samples <= 0 then
    fail(op, ('num_samples should be a positive integer value, but got num_samples=%s'):format(pyrepr(num_samples)))
  end
  if type(replacement) ~= 'boolean' then
    fail(op, ('replacement should be a boolean value, but got replacement=%s'):format(pyrepr(replacement)))
  end
  local w = is_tensor(weights) and weights:to({ dtype = torch.float64 }) or torch.tensor(weights, { dtype = torch.float64 })
  if w:dim() ~= 1 then
    fail(op, ('weights should be a 1d sequence but given weights have shape %s'):format(tostring(w:size())))
  end
  self.weights, self.num_samples, self.replacement, self.generator = w, num_samples, replacement, opts.generator
end
function WeightedRandomSampler:__len() return self.num_samples end
function WeightedRandomSampler:__iter()
  local r, k = nil, 0
  return function()
    if r == nil then
      r = torch.multinomial(self.weights, self.num_samples, self.replacement,
        self.generator and { generator = self.generator } or nil):tolist()
    end
    k = k + 1
    return r[k]
  end
end

-- the iterator of a sampler object or a plain array of indices
local function sampler_iter(s)
  local mt = getmetatable(s)
  if type(s) == 'table' and mt and mt.__iter then return s:__iter() end
  if type(s) == 'table' then return array_iter(s) end
  if type(s) == 'function' then return s end
  fail('utils.data', ('a sampler must be a Sampler or an array of indices, got %s'):format(type(s)))
end

-- BatchSampler(sampler, batch_size, drop_last): arrays of batch_size indices
local BatchSampler = class.class('data.BatchSampler', Sampler, M)
function BatchSampler:__init(sampler, batch_size, drop_last)
  local op = 'utils.data.BatchSampler'
  if not is_int(batch_size) or batch_size <= 0 then
    fail(op, ('batch_size should be a positive integer value, but got batch_size=%s'):format(pyrepr(batch_size)))
  end
  if type(drop_last) ~= 'boolean' then
    fail(op, ('drop_last should be a boolean value, but got drop_last=%s'):format(pyrepr(drop_last)))
  end
  self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last
end
function BatchSampler:__len()
  local n = len(self.sampler)
  if self.drop_last then return floor(n / self.batch_size) end
  return ceil(n / self.batch_size)
end
function BatchSampler:__iter()
  local it, bs, drop = nil, self.batch_size, self.drop_last
  local finished = false
  return function()
    if finished then return nil end
    it = it or sampler_iter(self.sampler)
    local b = {}
    for k = 1, bs do
      local i = it()
      if i == nil then
        finished = true
        break
      end
      b[k] = i
    end
    if #b == 0 or (drop and #b < bs) then return nil end
    return b
  end
end

------------------------------------------------------------------------------ collation
-- the WorkerInfo of this process when it is a DataLoader's worker (get_worker_info, below)
local worker_info

-- a new tensor for a batch: in a worker, in shared memory (handed to the main process without a copy)
local shm_empty
local function batch_out(sizes, dt)
  if not worker_info then return nil end
  shm_empty = shm_empty or require('moontorch.utils.data_workers').shm_empty
  return shm_empty(sizes, dt)
end

local function is_array(t) return rawget(t, 1) ~= nil or (next(t) == nil) end

-- default_collate(samples): PyTorch's default_collate. Tensors are stacked along a new first
-- dimension; Lua numbers become one tensor (int64 when every one is integral, else float64);
-- booleans a bool tensor; strings stay an array; arrays (tuples) and tables (dicts) are collated
-- member by member.
local function default_collate(batch)
  local op = 'utils.data.default_collate'
  local elem = batch[1]
  local te = type(elem)
  if is_tensor(elem) then
    if worker_info then -- stacked straight into shared memory, when the samples allow it
      local dt, ok = elem.dtype, true
      for _, t in ipairs(batch) do
        if not is_tensor(t) or t.dtype ~= dt or t.requires_grad or t._device_type ~= 0 then ok = false; break end
      end
      if ok then
        local sizes = { #batch }
        for d = 1, elem:dim() do sizes[d + 1] = elem:size(d) end
        return torch.stack(batch, 1, { out = batch_out(sizes, dt) })
      end
    end
    return torch.stack(batch, 1)
  elseif te == 'number' then
    local all_int = true
    for _, v in ipairs(batch) do
      if type(v) ~= 'number' then fail(op, 'batch must contain tensors, numbers, dicts or lists; found a mix') end
      if not is_int(v) then all_int = false end
    end
    return torch.tensor(batch, { dtype = all_int and torch.int64 or torch.float64 })
  elseif te == 'boolean' then
    return torch.tensor(batch, { dtype = torch.bool })
  elseif te == 'string' then
    return batch
  elseif te == 'table' and getmetatable(elem) == nil then
    if is_array(elem) then
      local n = #elem
      for _, s in ipairs(batch) do
        if type(s) ~= 'table' or #s ~= n then fail(op, 'each element in list of batch should be of equal size') end
      end
      local out = {}
      for k = 1, n do
        local col = {}
        for j, s in ipairs(batch) do col[j] = s[k] end
        out[k] = default_collate(col)
      end
      return out
    end
    local out = {}
    for key in pairs(elem) do
      local col = {}
      for j, s in ipairs(batch) do col[j] = s[key] end
      out[key] = default_collate(col)
    end
    return out
  end
  fail(op, ('default_collate: batch must contain tensors, numbers, dicts or lists; found %s')
    :format(class.typename(elem) or te))
end
M.default_collate = default_collate

-- default_convert(data): PyTorch's collate when automatic batching is off (batch_size=false). It
-- turns NumPy arrays into tensors, which Lua has none of, so it keeps tensors, numbers, strings and
-- objects as they are and gives plain tables (arrays and dicts) as new tables of converted values.
local function default_convert(data)
  if type(data) == 'table' and getmetatable(data) == nil then
    local out = {}
    for k, v in pairs(data) do out[k] = default_convert(v) end
    return out
  end
  return data
end
M.default_convert = default_convert

------------------------------------------------------------------------------ workers
-- get_worker_info(): in a DataLoader's worker process, its WorkerInfo (id: 0 to num_workers - 1, as
-- PyTorch's, num_workers, seed: the seed its torch generator got, an int64 cdata, dataset: the
-- worker's copy of the dataset); nil in the main process
function M.get_worker_info() return worker_info end
M._set_worker_info = function(w) worker_info = w end

-- read-only, as PyTorch's: the fields live in a table of their own, so that every assignment
-- reaches __newindex
-- (not a public name, as in PyTorch: torch.utils.data._utils.worker.WorkerInfo)
local WorkerInfo = class.class('data.WorkerInfo')
M._WorkerInfo = WorkerInfo
local info_keys = { 'id', 'num_workers', 'seed', 'dataset' }
function WorkerInfo:__init(fields)
  local f = {}
  for _, k in ipairs(info_keys) do f[k] = fields[k] end
  rawset(self, '_fields', f)
end
function WorkerInfo.__index(self, k)
  local v = rawget(self, '_fields')[k]
  if v ~= nil then return v end
  return WorkerInfo[k]
end
function WorkerInfo:__newindex() fail('utils.data.WorkerInfo', 'Cannot assign attributes to WorkerInfo objects') end
function WorkerInfo:__tostring()
  local f = rawget(self, '_fields')
  return ('WorkerInfo(id=%d, num_workers=%d, seed=%s, dataset=%s)'):format(f.id, f.num_workers,
    (tostring(f.seed):gsub('LL$', '')), tostring(f.dataset))
end

------------------------------------------------------------------------------ DataLoader
local DataLoader = class.class('data.DataLoader', nil, M)
local loader_keys = { batch_size = true, shuffle = true, sampler = true, batch_sampler = true, num_workers = true,
  collate_fn = true, pin_memory = true, drop_last = true, timeout = true, worker_init_fn = true, generator = true,
  prefetch_factor = true, persistent_workers = true, multiprocessing_context = true, pin_memory_device = true }

-- DataLoader(dataset, {batch_size=1, shuffle=false, sampler=, batch_sampler=, collate_fn=,
-- drop_last=false, generator=, num_workers=0, worker_init_fn=, prefetch_factor=2,
-- persistent_workers=false, timeout=0, pin_memory=false}); batch_size=false turns automatic
-- batching off (PyTorch's None). num_workers > 0 loads batches in that many forked worker processes
-- (lua/utils/data_workers.lua).
function DataLoader:__init(dataset, opts)
  local op = 'utils.data.DataLoader'
  opts = opts or {}
  for k in pairs(opts) do
    if not loader_keys[k] then fail(op, ("__init__() got an unexpected keyword argument '%s'"):format(tostring(k))) end
  end
  local batch_size = opts.batch_size
  if batch_size == nil then batch_size = 1 end
  local shuffle, sampler, batch_sampler = opts.shuffle, opts.sampler, opts.batch_sampler
  local drop_last = opts.drop_last or false
  local num_workers = opts.num_workers or 0
  if not is_int(num_workers) or num_workers < 0 then
    fail(op, ('num_workers option should be a non-negative integer (got %s); use num_workers=0 to disable multiprocessing.')
      :format(pyrepr(num_workers)))
  end
  if num_workers > 256 then fail(op, ('num_workers=%d: at most 256 worker processes'):format(num_workers)) end
  local timeout = opts.timeout or 0
  if type(timeout) ~= 'number' or timeout ~= timeout then fail(op, 'timeout option should be a number of seconds') end
  if timeout < 0 then fail(op, 'timeout option should be non-negative') end
  if timeout > 0 and num_workers == 0 then
    fail(op, 'timeout option applies to worker processes: it needs num_workers > 0')
  end
  local prefetch_factor = opts.prefetch_factor
  if prefetch_factor ~= nil then
    if not is_int(prefetch_factor) or prefetch_factor <= 0 then
      fail(op, ('prefetch_factor option should be a positive integer, but got prefetch_factor=%s'):format(pyrepr(prefetch_factor)))
    end
    if num_workers == 0 and prefetch_factor ~= 2 then
      fail(op, 'prefetch_factor option could only be specified in multiprocessing. let num_workers > 0 to enable multiprocessing.')
    end
  end
  local persistent = opts.persistent_workers or false
  if type(persistent) ~= 'boolean' then fail(op, 'persistent_workers option should be a boolean') end
  if persistent and num_workers == 0 then fail(op, 'persistent_workers option needs num_workers > 0') end
  if opts.worker_init_fn ~= nil and type(opts.worker_init_fn) ~= 'function' and not (getmetatable(opts.worker_init_fn) or {}).__call then
    fail(op, ('worker_init_fn should be a function, got %s'):format(type(opts.worker_init_fn)))
  end
  local pin_memory = opts.pin_memory or false
  if type(pin_memory) ~= 'boolean' then fail(op, 'pin_memory option should be a boolean') end
  if opts.pin_memory_device ~= nil and type(opts.pin_memory_device) ~= 'string' then
    fail(op, 'pin_memory_device option should be a string')
  end
  local ctx = opts.multiprocessing_context
  if ctx ~= nil then
    if num_workers == 0 then
      fail(op, ('multiprocessing_context can only be used with multi-process loading (num_workers > 0), but got num_workers=0'))
    end
    if ctx ~= 'fork' then
      fail(op, ("multiprocessing_context option should specify a valid start method in ['fork'] (moontorch's workers are forked processes), but got multiprocessing_context=%s")
        :format(type(ctx) == 'string' and ("'" .. ctx .. "'") or tostring(ctx)))
    end
  end
  if class.isinstance(dataset, IterableDataset) then
    if shuffle then
      fail(op, ('DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle=%s'):format(pyrepr(shuffle)))
    elseif sampler ~= nil then
      fail(op, ('DataLoader with IterableDataset: expected unspecified sampler option, but got sampler=%s'):format(tostring(sampler)))
    elseif batch_sampler ~= nil then
      fail(op, ('DataLoader with IterableDataset: expected unspecified batch_sampler option, but got batch_sampler=%s'):format(tostring(batch_sampler)))
    end
    self._iterable = true
  end
  shuffle = shuffle or false
  if sampler ~= nil and shuffle then fail(op, 'sampler option is mutually exclusive with shuffle') end
  if batch_sampler ~= nil then
    if batch_size ~= 1 or shuffle or sampler ~= nil or drop_last then
      fail(op, 'batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last')
    end
    batch_size, drop_last = false, false
  elseif batch_size == false and drop_last then
    fail(op, 'batch_size=None option disables auto-batching and is mutually exclusive with drop_last')
  end
  if batch_size ~= false and (not is_int(batch_size) or batch_size <= 0) then
    fail(op, ('batch_size should be a positive integer value, but got batch_size=%s'):format(pyrepr(batch_size)))
  end
  if sampler == nil and not self._iterable then
    if shuffle then sampler = RandomSampler(dataset, { generator = opts.generator })
    else sampler = SequentialSampler(dataset) end
  end
  if batch_size ~= false and batch_sampler == nil and not self._iterable then
    batch_sampler = BatchSampler(sampler, batch_size, drop_last)
  end
  self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
  self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, opts.generator
  self.num_workers, self.timeout, self.worker_init_fn = num_workers, timeout, opts.worker_init_fn
  self.prefetch_factor = prefetch_factor or 2
  self.persistent_workers, self.pin_memory = persistent, pin_memory
  self.pin_memory_device = opts.pin_memory_device or ''
  self.multiprocessing_context = ctx
  self._auto_collation = batch_sampler ~= nil or (self._iterable and batch_size ~= false)
  -- a given collate_fn only: the default is the class's (so that torch.save can save a loader)
  self.collate_fn = opts.collate_fn
  self._default_collate = opts.collate_fn == nil
end

-- the number of batches (samples without batching)
function DataLoader:__len()
  if self._iterable then
    local n = len(self.dataset, 'utils.data.DataLoader')
    if self.batch_size == false then return n end
    if self.drop_last then return floor(n / self.batch_size) end
    return ceil(n / self.batch_size)
  end
  if self.batch_sampler ~= nil then return len(self.batch_sampler) end
  return len(self.sampler)
end

DataLoader.collate_fn = default_collate

local function values_of(batch)
  if type(batch) == 'table' and getmetatable(batch) == nil and rawget(batch, 1) ~= nil then return unpack(batch) end
  return batch
end
M._values_of = values_of

-- a batch with the default collate: one index_select per tensor (in a worker, into shared memory)
function TensorDataset:__getbatch(idx)
  local ts = rawget(self, 'tensors')
  local n = ts[1]:size(1)
  local ix = idx
  for k, i in ipairs(idx) do
    if not is_int(i) or i < 1 or i > n then
      if ix == idx then ix = { unpack(idx) } end
      ix[k] = check_index(i, n, 'utils.data.TensorDataset')
    end
  end
  local it = torch.tensor(ix, { dtype = torch.int64 })
  local out = {}
  for k, t in ipairs(ts) do
    local o
    if worker_info and not t.requires_grad then
      local sizes = { #ix }
      for d = 2, t:dim() do sizes[d] = t:size(d) end
      o = batch_out(sizes, t.dtype)
    end
    out[k] = o and t:index_select(1, it, { out = o }) or t:index_select(1, it)
  end
  return out
end

-- The fetchers (PyTorch's _MapDatasetFetcher and _IterableDatasetFetcher), one per loader pass and
-- one per worker: map_fetcher(loader)(index) gives the collated batch of a batch of indices (or the
-- converted sample of one index); iterable_fetcher(loader)(n) the batch of the next n samples of
-- the dataset's iterator (nil n: the next sample), or nil once it ended.
local function collate_of(loader)
  if loader._default_collate and not loader._auto_collation then return default_convert end
  return loader.collate_fn
end
function M._map_fetcher(loader)
  local ds, collate, auto = loader.dataset, collate_of(loader), loader._auto_collation
  -- with the default collate, a dataset with __getbatch (TensorDataset, the MNIST family) hands
  -- over a whole batch at once (nil: it cannot, collate its samples)
  local fast = loader._default_collate and auto and type(ds.__getbatch) == 'function'
  return function(idx)
    if not auto then return collate(ds[idx]) end
    if fast then
      local b = ds:__getbatch(idx)
      if b ~= nil then return b end
    end
    local samples = {}
    for k, i in ipairs(idx) do samples[k] = ds[i] end
    return collate(samples)
  end
end
function M._iterable_fetcher(loader)
  local it = loader.dataset:__iter()
  local collate, drop, ended = collate_of(loader), loader.drop_last, false
  return function(n)
    if ended then return nil end
    if n == nil then
      local v = it()
      if v == nil then ended = true; return nil end
      return collate(v)
    end
    local b = {}
    for k = 1, n do
      local v = it()
      if v == nil then ended = true; break end
      b[k] = v
    end
    if #b == 0 or (drop and #b < n) then return nil end
    return collate(b)
  end
end

-- PyTorch's iterator draws its base seed (one int64) as it starts, from the loader's generator (or
-- the global one), before the first index; workers seed their generators from it
function M._base_seed(loader)
  local s = torch.empty({}, { dtype = torch.int64 }):random_(loader.generator and { generator = loader.generator } or nil)
  return ffi.cast('int64_t *', s._data)[0]
end

-- loader:iter(): an iterator over the batches, each yielded as its values (x, y for {x, y} samples)
function DataLoader:iter()
  if self.num_workers > 0 then return require('moontorch.utils.data_workers').iter(self) end
  if self._iterable then
    M._base_seed(self) -- drawn first for an iterable dataset too (then its __iter runs), as PyTorch does
    local fetch, bs = M._iterable_fetcher(self), self.batch_size
    if bs == false then bs = nil end
    return function()
      local b = fetch(bs)
      if b ~= nil then return values_of(b) end
    end
  end
  local idx_it = sampler_iter(self.batch_sampler or self.sampler)
  M._base_seed(self)
  local fetch = M._map_fetcher(self)
  return function()
    local idx = idx_it()
    if idx == nil then return nil end
    return values_of(fetch(idx))
  end
end
DataLoader.__call = DataLoader.iter
function DataLoader:__tostring() return '<torch.utils.data.dataloader.DataLoader object>' end

M._sampler_iter = sampler_iter

-- issue 23: DistributedSampler (lua/distributed/sampler.lua), also as data.distributed.DistributedSampler;
-- loaded on first use
class.homes['data.DistributedSampler'] = 'moontorch.distributed.sampler'
-- (the docs' walk finds `distributed` through _lazy; DistributedSampler's public name is its)
M._lazy = { distributed = function() return require('moontorch.distributed.sampler') end }
setmetatable(M, { __index = function(t, k)
  if k == 'DistributedSampler' or k == 'distributed' then
    local s = require('moontorch.distributed.sampler')
    rawset(t, 'distributed', s)
    return s[k] or s
  end
end })

return M
