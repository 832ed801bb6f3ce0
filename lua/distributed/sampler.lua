-- utils.data.DistributedSampler (also utils.data.distributed.DistributedSampler): PyTorch 1.13's
-- sampler that gives each rank its own share of a dataset.
--   local sampler = data.DistributedSampler(train_set)            -- {num_replicas=, rank=, shuffle=true, seed=0, drop_last=false}
--   local loader = data.DataLoader(train_set, {batch_size = 32, sampler = sampler})
--   for epoch = 1, n do sampler:set_epoch(epoch) ... end
-- With shuffle, every rank draws the same permutation (randperm from a generator seeded with
-- seed + epoch, the numbers PyTorch draws), pads it to a multiple of the ranks by repeating its
-- start (or, with drop_last, cuts the tail) and takes every num_replicas-th index from its rank.
-- Indices are 1-based, as every moontorch sampler's; ranks count from 0.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local data = require 'moontorch.utils.data'
local argcheck = require 'moontorch.argcheck'

local fail, describe = core.fail, argcheck.describe
local floor, ceil = math.floor, math.ceil

local M = {}
local OP = 'utils.data.DistributedSampler'

local DistributedSampler = class.class('data.DistributedSampler', data.Sampler, M)
M.DistributedSampler = DistributedSampler

local names = { 'num_replicas', 'rank', 'shuffle', 'seed', 'drop_last' }

local function int(v, what)
  if type(v) ~= 'number' or v ~= floor(v) then fail(OP, ('%s must be an integer, got %s'):format(what, describe(v))) end
  return v
end

-- DistributedSampler(dataset, {num_replicas=, rank=, shuffle=true, seed=0, drop_last=false}), or
-- those positionally after the dataset
function DistributedSampler:__init(dataset, ...)
  local v = { ... }
  local n = select('#', ...)
  if n >= 1 and type(v[n]) == 'table' and getmetatable(v[n]) == nil then
    local opts = v[n]
    v[n] = nil
    for k, val in pairs(opts) do
      local found = false
      for i, name in ipairs(names) do
        if name == k then v[i], found = val, true break end
      end
      if not found then fail(OP, ("__init__() got an unexpected keyword argument '%s'"):format(tostring(k))) end
    end
  end
  local num_replicas, rank, shuffle, seed, drop_last = v[1], v[2], v[3], v[4], v[5]
  if num_replicas == nil or rank == nil then
    local dist = require 'moontorch.distributed'
    if not dist.is_available() then fail(OP, 'Requires distributed package to be available') end
    if num_replicas == nil then num_replicas = dist.get_world_size() end
    if rank == nil then rank = dist.get_rank() end
  end
  num_replicas, rank = int(num_replicas, 'num_replicas'), int(rank, 'rank')
  if num_replicas < 1 then fail(OP, ('num_replicas must be positive, got %d'):format(num_replicas)) end
  if rank >= num_replicas or rank < 0 then
    fail(OP, ('Invalid rank %d, rank should be in the interval [0, %d]'):format(rank, num_replicas - 1))
  end
  if shuffle == nil then shuffle = true end
  seed = int(seed or 0, 'seed')
  drop_last = drop_last and true or false
  self.dataset, self.num_replicas, self.rank, self.epoch = dataset, num_replicas, rank, 0
  self.drop_last, self.shuffle, self.seed = drop_last, shuffle and true or false, seed
  local len = dataset.__len and dataset:__len() or #dataset
  if drop_last and len % num_replicas ~= 0 then
    self.num_samples = ceil((len - num_replicas) / num_replicas)
  else
    self.num_samples = ceil(len / num_replicas)
  end
  self.total_size = self.num_samples * num_replicas
end

-- this rank's indices for the current epoch, as an array
function DistributedSampler:indices()
  local len = self.dataset.__len and self.dataset:__len() or #self.dataset
  local idx
  if self.shuffle then
    local g = torch.Generator():manual_seed(self.seed + self.epoch)
    idx = len > 0 and torch.randperm(len, { generator = g }):tolist() or {}
  else
    idx = {}
    for i = 1, len do idx[i] = i end
  end
  local total = self.total_size
  if not self.drop_last then
    -- pad with the start of the list, repeated as often as needed
    local k, base = #idx, #idx
    while k < total and base > 0 do
      idx[k + 1] = idx[(k % base) + 1]
      k = k + 1
    end
  else
    for i = #idx, total + 1, -1 do idx[i] = nil end
  end
  local mine = {}
  for i = self.rank + 1, total, self.num_replicas do mine[#mine + 1] = idx[i] end
  return mine
end

function DistributedSampler:__iter()
  local mine, k = self:indices(), 0
  return function()
    k = k + 1
    return mine[k]
  end
end

function DistributedSampler:__len() return self.num_samples end

-- set_epoch(epoch): another shuffle for another epoch (every rank must set the same)
function DistributedSampler:set_epoch(epoch) self.epoch = int(epoch, 'epoch') end

return M
