-- torch.distributed.optim: ZeroRedundancyOptimizer, as PyTorch 1.13's (ZeRO stage 1): each rank keeps
-- the optimizer state of its share of the parameters only, steps that share, then every parameter is
-- broadcast from the rank that owns it.
--   local zero = dist.optim.ZeroRedundancyOptimizer(ddp:parameters(), {optimizer_class = optim.Adam, lr = 1e-3})
--   (also ZeroRedundancyOptimizer(params, optim.Adam, {lr = 1e-3}))
-- The parameters are shared out as PyTorch does it: group after group, largest first, each to the
-- rank holding the fewest elements so far (ties: the lowest rank). zero_grad, param_groups and the
-- hyperparameters (a learning-rate scheduler's writes) are the whole model's; step() hands them to
-- the local optimizer and back. state_dict() needs consolidate_state_dict(to) on every rank first
-- and answers on rank `to` with the whole optimizer's state in PyTorch's layout (the one a plain
-- optimizer over the same parameters gives); load_state_dict takes such a dict on every rank, each
-- keeping its share. parameters_as_bucket_view = true broadcasts each rank's share as one flat
-- buffer (the parameters are not made views of it); overlap_with_ddp is not supported.
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local optim = require 'moontorch.optim'
local argcheck = require 'moontorch.argcheck'
local dist = require 'moontorch.distributed'
require 'moontorch.optim.optimizer'

local fail, describe = core.fail, argcheck.describe
local is_tensor = torch.is_tensor
local type, pairs, ipairs = type, pairs, ipairs

local M = {}
local OP = 'distributed.optim.ZeroRedundancyOptimizer'
local Zero, Optimizer = torch.class('distributed.optim.ZeroRedundancyOptimizer', 'optim.Optimizer', M)
M.ZeroRedundancyOptimizer = Zero

local own_options = { optimizer_class = true, process_group = true, parameters_as_bucket_view = true,
  overlap_with_ddp = true }

-- the hyperparameters (everything but params) of each group in src onto the matching group in dst
local function sync_groups(src, dst)
  for i, g in ipairs(src) do
    for k, v in pairs(g) do
      if k ~= 'params' then dst[i][k] = v end
    end
  end
end

-- ZeroRedundancyOptimizer(params, {optimizer_class=, process_group=, parameters_as_bucket_view=false,
-- overlap_with_ddp=false, <the optimizer's options>}) or (params, optimizer_class, {options})
function Zero:__init(params, a, b)
  local opts = {}
  if type(a) == 'table' and getmetatable(a) ~= nil then -- (params, optimizer_class, {options})
    if b ~= nil and type(b) ~= 'table' then fail(OP, ('expected a table of options, got %s'):format(describe(b))) end
    for k, v in pairs(b or {}) do opts[k] = v end
    opts.optimizer_class = a
  elseif a ~= nil then
    if type(a) ~= 'table' then fail(OP, ('expected a table of options, got %s'):format(describe(a))) end
    for k, v in pairs(a) do opts[k] = v end
  end
  local cls = opts.optimizer_class
  if cls == nil then fail(OP, 'optimizer_class is required (the class of the local optimizer, e.g. optim.Adam)') end
  if type(cls) ~= 'table' or type(getmetatable(cls)) ~= 'table' or not getmetatable(cls).__call then
    fail(OP, ('optimizer_class must be an optimizer class (optim.SGD, optim.Adam, ...), got %s'):format(describe(cls)))
  end
  if opts.overlap_with_ddp then
    fail(OP, 'overlap_with_ddp = true is not supported by moontorch (DDP communication hooks are not there yet)')
  end
  local pg = dist._internal.member_group(OP, opts.process_group)
  local defaults = {}
  for k, v in pairs(opts) do
    if not own_options[k] then defaults[k] = v end
  end
  Optimizer.__init(self, params, defaults)
  self._optimizer_class = cls
  self.process_group = pg
  self.world_size = dist.get_world_size(pg)
  self.rank = dist.get_rank(pg)
  self.global_rank = dist.get_rank()
  self.parameters_as_bucket_view = opts.parameters_as_bucket_view and true or false
  self._all_state_dicts = nil
  -- every rank must see the same parameters in the same order (as PyTorch checks)
  local shapes = {}
  for _, g in ipairs(self.param_groups) do
    for _, p in ipairs(g.params) do shapes[#shapes + 1] = table.concat(p:size(), 'x') .. ':' .. tostring(p.dtype) end
  end
  local all = {}
  dist.all_gather_object(all, table.concat(shapes, ','), pg)
  for r = 1, #all do
    if all[r] ~= all[self.rank + 1] then
      fail(OP, ('the ranks hold different parameters: rank %d and rank %d differ (same parameters, in the same ' ..
        'order, on every rank)'):format(dist.get_global_rank(pg, self.rank), dist.get_global_rank(pg, r - 1)))
    end
  end
  self:_partition()
  self.optim = cls(self._partition_cache[self.rank + 1], defaults)
  sync_groups(self.optim.param_groups, self.param_groups)
end

-- per rank, its param groups (one per global group, each with that rank's parameters); and each
-- parameter's owner (0-based rank) and global index (0-based, group after group)
function Zero:_partition()
  local ws = self.world_size
  local per_rank, owner, index = {}, {}, {}
  for r = 1, ws do per_rank[r] = {} end
  local sizes = {}
  for r = 1, ws do sizes[r] = 0 end
  local at = 0
  for _, g in ipairs(self.param_groups) do
    local order = {}
    for i, p in ipairs(g.params) do
      order[i] = i
      if index[p] == nil then index[p] = at + i - 1 end
    end
    at = at + #g.params
    -- largest first; equal sizes keep their order (Python's sorted is stable)
    table.sort(order, function(x, y)
      local nx, ny = g.params[x]:numel(), g.params[y]:numel()
      if nx ~= ny then return nx > ny end
      return x < y
    end)
    local mine = {}
    for r = 1, ws do mine[r] = {} end
    for _, i in ipairs(order) do
      local best = 1
      for r = 2, ws do
        if sizes[r] < sizes[best] then best = r end
      end
      local p = g.params[i]
      mine[best][#mine[best] + 1] = p
      sizes[best] = sizes[best] + p:numel()
      owner[p] = best - 1
    end
    for r = 1, ws do
      local rg = {}
      for k, v in pairs(g) do
        if k ~= 'params' then rg[k] = v end
      end
      rg.params = mine[r]
      per_rank[r][#per_rank[r] + 1] = rg
    end
  end
  self._partition_cache, self._owner, self._index = per_rank, owner, index
end

function Zero:add_param_group(group)
  Optimizer.add_param_group(self, group)
  if self.optim then
    self:_partition()
    local mine = self._partition_cache[self.rank + 1]
    if #mine == #self.optim.param_groups + 1 then self.optim:add_param_group(mine[#mine]) end
  end
end

-- step(closure): the local optimizer steps this rank's share; then each rank's share is broadcast
-- from it to all
function Zero:step(closure)
  sync_groups(self.param_groups, self.optim.param_groups)
  local loss = self.optim:step(closure)
  sync_groups(self.optim.param_groups, self.param_groups)
  self:_sync_params()
  return loss
end

function Zero:_sync_params()
  local pg, works = self.process_group, {}
  do
    for r = 1, self.world_size do
      local src = dist.get_global_rank(pg, r - 1)
      local ps = {}
      for _, g in ipairs(self._partition_cache[r]) do
        for _, p in ipairs(g.params) do ps[#ps + 1] = p end
      end
      if self.parameters_as_bucket_view and #ps > 0 then
        local flat = {}
        for i, p in ipairs(ps) do flat[i] = p:detach():reshape(p:numel()) end
        local buf = torch.cat(flat)
        dist.broadcast(buf, src, pg)
        local off = 1
        for _, p in ipairs(ps) do
          local n = p:numel()
          if n > 0 and r - 1 ~= self.rank then p:detach():copy_(buf:narrow(1, off, n):view(p:size())) end
          off = off + n
        end
      else
        for _, p in ipairs(ps) do
          local d = p:detach()
          if d:is_contiguous() then
            works[#works + 1] = dist.broadcast(d, src, pg, true)
          else
            dist.broadcast(d, src, pg)
          end
        end
      end
    end
  end
  for _, w in ipairs(works) do w:wait() end
end

-- consolidate_state_dict(to=0): every rank sends its local optimizer's state_dict to rank `to`
-- (a group rank), which keeps them for state_dict()
function Zero:consolidate_state_dict(to)
  to = to or 0
  if type(to) ~= 'number' or to < 0 or to >= self.world_size or to % 1 ~= 0 then
    fail(OP .. '.consolidate_state_dict', ('to must be a rank of the group (0..%d), got %s'):format(self.world_size - 1,
      describe(to)))
  end
  sync_groups(self.param_groups, self.optim.param_groups)
  local pg = self.process_group
  local gathered = self.rank == to and {} or nil
  dist.gather_object(self.optim:state_dict(), gathered, dist.get_global_rank(pg, to), pg)
  self._all_state_dicts = gathered
end

-- the whole optimizer's state_dict (on the rank consolidate_state_dict sent it to)
function Zero:state_dict()
  if not self._all_state_dicts then
    fail(OP .. '.state_dict', ('Optimizer state has not been consolidated on this rank. Please call ' ..
      '`consolidate_state_dict(to=%d)` on all ranks beforehand if you meant to save the global state.'):format(self.rank))
  end
  local sd = Optimizer.state_dict(self)
  for r, local_sd in ipairs(self._all_state_dicts) do
    local groups = self._partition_cache[r]
    for gi, lg in ipairs(local_sd.param_groups) do
      local global = groups[gi].params
      for j, lid in ipairs(lg.params) do
        local v = local_sd.state[lid]
        if v ~= nil then sd.state[self._index[global[j]]] = v end
      end
    end
  end
  return sd
end

-- load_state_dict(sd): a whole optimizer's state_dict (ZeroRedundancyOptimizer's or a plain
-- optimizer's over the same parameters); each rank keeps its share of the state
function Zero:load_state_dict(sd)
  local op = OP .. '.load_state_dict'
  if type(sd) ~= 'table' or type(sd.param_groups) ~= 'table' or type(sd.state) ~= 'table' then
    fail(op, "expected a state dict with 'state' and 'param_groups' tables")
  end
  -- this rank's share, as the local optimizer's own state_dict numbers it
  local by_index = {}
  for p, i in pairs(self._index) do by_index[i] = p end
  local local_sd = self.optim:state_dict()
  local local_id = {}
  for gi, lg in ipairs(self.optim.param_groups) do
    for j, p in ipairs(lg.params) do local_id[p] = local_sd.param_groups[gi].params[j] end
  end
  local mine = {}
  for idx, v in pairs(sd.state) do
    local p = by_index[idx]
    if p == nil then fail(op, ('the state dict has state for parameter %s, which this optimizer does not have'):format(tostring(idx))) end
    if self._owner[p] == self.rank then mine[local_id[p]] = v end
  end
  local groups = {}
  for gi, g in ipairs(sd.param_groups) do
    local lg = {}
    for k, v in pairs(g) do
      if k ~= 'params' then lg[k] = v end
    end
    lg.params = local_sd.param_groups[gi] and local_sd.param_groups[gi].params or {}
    groups[gi] = lg
  end
  if #groups ~= #self.optim.param_groups then fail(op, 'loaded state dict has a different number of parameter groups') end
  self.optim:load_state_dict({ state = mine, param_groups = groups })
  sync_groups(self.optim.param_groups, self.param_groups)
end

return M
