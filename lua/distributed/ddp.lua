-- nn.parallel.DistributedDataParallel: PyTorch 1.13's DDP over moontorch.distributed.
--   local ddp = nn.parallel.DistributedDataParallel(model)     -- after dist.init_process_group
--   local loss = F.cross_entropy(ddp(x), y); loss:backward()   -- .grad: the ranks' average
-- The design is PyTorch's: the module's parameters and buffers are broadcast from rank 0 at
-- construction (after checking that every rank has the same parameter shapes); gradients are
-- grouped in buckets per dtype, filled from a hook on each parameter's AccumulateGrad node as soon
-- as autograd has accumulated it, and a bucket's all-reduce is started the moment its last gradient
-- arrives, in bucket order, while backward goes on; when the last bucket has started, DDP waits for
-- them all. A bucket is reduced as one vector: without gradient_as_bucket_view, its gradients
-- themselves (one all_reduce_coalesced with AVG over them, each averaged in place: no copy into a
-- flat bucket and back; a gradient that is not one dense block, or a missing one, goes through its
-- slot of the flat bucket); with it, the flat bucket that the .grad are views of (scaled by
-- 1/world_size, then summed). The first iteration runs with one bucket per dtype (parameters in
-- registration order; with find_unused_parameters, buckets of 1 MiB then bucket_cap_mb in reverse
-- registration order); the buckets are then rebuilt once in the order the gradients arrived, the
-- first 1 MiB and the others bucket_cap_mb (25 MiB), taken from rank 0 so that every rank agrees.
-- find_unused_parameters walks the autograd graph from the outputs after each forward and marks
-- the parameters it does not reach as ready (zeros) at the first hook; a parameter that no rank
-- used keeps its .grad. no_sync(fn) runs fn without synchronisation (gradients accumulate locally;
-- the first synchronised backward after it averages the sums). broadcast_buffers copies rank 0's
-- buffers into every rank before each synchronised forward. gradient_as_bucket_view makes each
-- .grad a view of its bucket (no copies; the all-reduce averages .grad in place).
-- ddp:comm_stats() reports, per synchronised step, the all-reduces' time and the part of it that
-- backward did not hide (the wait after the last bucket started).
local ffi = require 'ffi'
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local dist = require 'moontorch.distributed'
local argcheck = require 'moontorch.argcheck'

local C = core.C
local I = dist._internal
local fail, describe = core.fail, argcheck.describe
local type, pairs, ipairs, tostring, select, setmetatable = type, pairs, ipairs, tostring, select, setmetatable
local unpack = unpack or table.unpack
local OP = 'nn.parallel.DistributedDataParallel'
local FIRST_BUCKET_BYTES = 1024 * 1024 -- PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES
local BROADCAST_BUCKET_BYTES = 250 * 1024 * 1024
local OP_SUM, OP_AVG = 0, 1 -- mt_dist_op

local M = {}
local DDP = class.class('nn.parallel.DistributedDataParallel', nn.Module)
M.DistributedDataParallel = DDP

local function pack(...) return { n = select('#', ...), ... } end

-- fn(...) with grad mode `on`, the mode restored after (also on errors)
local function with_grad(on, fn, ...)
  local prev = torch.is_grad_enabled()
  torch.set_grad_enabled(on)
  local ok, err = pcall(fn, ...)
  torch.set_grad_enabled(prev)
  if not ok then error(err, 0) end
end
local function shape_str(sizes) return '[' .. table.concat(sizes, ', ') .. ']' end

------------------------------------------------------------------------------ construction helpers
-- every parameter that requires grad, once, in PyTorch's order (module by module), with its name
local function params_for_reducer(module)
  local params, names, seen = {}, {}, {}
  for mname, m in module:named_modules() do
    for pname, p in m:named_parameters({ recurse = false }) do
      if p.requires_grad and not seen[p] then
        seen[p] = true
        params[#params + 1] = p
        names[#names + 1] = mname == '' and pname or mname .. '.' .. pname
      end
    end
  end
  return params, names
end

-- Every rank must hold the same parameters: counts, then shapes and dtypes (PyTorch's
-- _verify_param_shape_across_processes, with the messages it gives)
local function verify_params(pg, params, names)
  local rank, size = pg:rank(), pg:size()
  local counts = {}
  for i = 1, size do counts[i] = torch.zeros(1, { dtype = torch.int64 }) end
  dist.all_gather(counts, torch.tensor({ #params }, { dtype = torch.int64 }), pg)
  for i = 1, size do
    local c = counts[i]:item()
    if c ~= #params then
      fail(OP, ('DDP expects same model across all ranks, but Rank %d has %d params, while rank %d has inconsistent %d params.')
        :format(dist.get_global_rank(pg, rank), #params, dist.get_global_rank(pg, i - 1), c))
    end
  end
  -- each parameter as (dtype, ndim, sizes...) in a fixed 2 + 16 slots
  local meta = torch.zeros(#params * 18, { dtype = torch.int64 })
  local mp = ffi.cast('int64_t *', meta._data)
  for i, p in ipairs(params) do
    local o = (i - 1) * 18
    mp[o] = p._dtype
    mp[o + 1] = p:dim()
    for d = 1, p:dim() do mp[o + 1 + d] = p:size(d) end
  end
  local all = {}
  for i = 1, size do all[i] = torch.zeros(#params * 18, { dtype = torch.int64 }) end
  dist.all_gather(all, meta, pg)
  for r = 1, size do
    local q = ffi.cast('int64_t *', all[r]._data)
    for i = 1, #params do
      local o = (i - 1) * 18
      local same = true
      for k = 0, 17 do if q[o + k] ~= mp[o + k] then same = false break end end
      if not same then
        local theirs = {}
        for d = 1, tonumber(q[o + 1]) do theirs[d] = tostring(tonumber(q[o + 1 + d])) end
        local what = q[o] ~= mp[o] and ('dtype %s'):format(tostring(params[i].dtype)) or
          ('sizes %s'):format(shape_str(params[i]:size()))
        fail(OP, ('[%d]: params[%d] (%s) in this process with %s appears not to match %s of the same param in process %d.')
          :format(dist.get_global_rank(pg, rank), i, names[i], what, q[o] ~= mp[o] and 'the dtype' or
            ('sizes (%s)'):format(shape_str(theirs)), dist.get_global_rank(pg, r - 1)))
      end
    end
  end
end

-- tensors flattened per dtype into chunks of at most `cap` bytes: { {dtype=, tensors={...}}, ... }
local function coalesce(tensors, cap)
  local by, order, out = {}, {}, {}
  for _, t in ipairs(tensors) do
    local key = tostring(t.dtype)
    local cur = by[key]
    local bytes = t:numel() * t:element_size()
    if cur == nil or (cur.bytes > 0 and cur.bytes + bytes > cap) then
      cur = { tensors = {}, bytes = 0 }
      by[key] = cur
      out[#out + 1] = cur
    end
    cur.tensors[#cur.tensors + 1] = t
    cur.bytes = cur.bytes + bytes
  end
  return out
end

-- broadcast tensors from `src` (a global rank), coalesced (PyTorch's _broadcast_coalesced)
local function broadcast_coalesced(pg, tensors, src, cap)
  with_grad(false, function()
    for _, chunk in ipairs(coalesce(tensors, cap)) do
      local flat = {}
      for i, t in ipairs(chunk.tensors) do flat[i] = t:detach():reshape(t:numel()) end
      local buf = #flat == 1 and flat[1]:contiguous() or torch.cat(flat)
      dist.broadcast(buf, src, pg)
      local off = 1
      for _, t in ipairs(chunk.tensors) do
        local n = t:numel()
        if n > 0 then t:detach():copy_(buf:narrow(1, off, n):view(t:size())) end
        off = off + n
      end
    end
  end)
end
M.broadcast_coalesced = broadcast_coalesced

-- PyTorch's compute_bucket_assignment_by_size: walk `order` (parameter indices), one open bucket
-- per dtype; a parameter joins its dtype's bucket, which closes once it holds at least its limit
-- (the first limit, then the next, the last repeating). Without `ready_order`, buckets are sorted
-- by the smallest index they hold.
local function assign(params, order, limits, ready_order)
  local open, result, lim = {}, {}, {}
  for _, i in ipairs(order) do
    local p = params[i]
    local key = tostring(p.dtype)
    local b = open[key]
    if not b then
      b = { indices = {}, bytes = 0 }
      open[key] = b
    end
    b.indices[#b.indices + 1] = i
    b.bytes = b.bytes + p:numel() * p:element_size()
    local li = lim[key] or 1
    if b.bytes >= limits[li] then
      result[#result + 1] = b.indices
      open[key] = nil
      if li < #limits then lim[key] = li + 1 end
    end
  end
  local keys = {}
  for k in pairs(open) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do result[#result + 1] = open[k].indices end
  if not ready_order then
    local function lowest(ix)
      local m = math.huge
      for _, i in ipairs(ix) do if i < m then m = i end end
      return m
    end
    table.sort(result, function(a, b) return lowest(a) < lowest(b) end)
  end
  return result
end
M.assign = assign

------------------------------------------------------------------------------ the reducer
-- A gradient's slot in its bucket takes the gradient's own layout (its strides) when that layout is
-- dense (a permutation of a contiguous one): moontorch keeps a gradient in the layout autograd made
-- it (a Linear's weight gradient arrives transposed), and a copy between layouts that differ is a
-- transpose (1.7 ms for the MLP's 512x784 weight here, against 0.03 ms for a straight copy).
-- PyTorch's slots take the parameter's layout, which its gradients are made to match.
local function same_layout(a, b)
  local n = a._ndim
  if n ~= b._ndim then return false end
  for d = 0, n - 1 do
    if a._sizes[d] ~= 1 and a._strides[d] ~= b._strides[d] then return false end
  end
  return true
end
local function dense(t)
  -- the dims of size > 1 taken by increasing (stride, dim), each stride the product of the sizes
  -- before it (no tables: this runs for every gradient of every step)
  local n, sz, st = t._ndim, t._sizes, t._strides
  local expect, ps, pd = 1, -1, -1
  for _ = 1, n do
    local bd, bs = -1, 0
    for d = 0, n - 1 do
      local s = st[d]
      if sz[d] ~= 1 and (s > ps or (s == ps and d > pd)) and (bd < 0 or s < bs) then bd, bs = d, s end
    end
    if bd < 0 then return true end
    if bs ~= expect then return false end
    expect = expect * sz[bd]
    ps, pd = bs, bd
  end
  return true
end
-- t's elements are all of its storage (a view of part of a larger tensor is not moved). (A view of
-- a .grad taken before the gradient moved into the arena, in the first two steps, keeps the memory it
-- had: Lua's collector, not a count, says when the tensors of a move are gone.)
local function owns_storage(t)
  return t:storage_offset() == 0 and tonumber(t._storage._nbytes) == t._numel * t:element_size()
end
-- the slot of parameter i laid out as g (when g's layout is dense and differs)
local function relayout(R, b, pos, g)
  local v = b.views[pos]
  if same_layout(g, v) or not dense(g) then return v end
  v = b.flat:as_strided(g:size(), g:stride(), b.offsets[pos])
  b.views[pos] = v
  return v
end

-- R: params, names, pg, B (the backend), world (size), buckets, where[i] = {bucket, position},
-- and each iteration's state
local ARENA_DTYPES = { float32 = true, float64 = true } -- (those the on-node all-reduce sums)
local function build_buckets(R, assignment)
  local buckets, where = {}, {}
  if R.arena and R.buckets then
    -- a new layout: gradients kept in the arena leave it first (the new slots overlap the old)
    with_grad(false, function()
      for _, p in ipairs(R.params) do
        local g = p.grad
        if g ~= nil and R.in_arena(g) then
          if C.mt_tensor_set_data(g, g:clone()) ~= 0 then core.raise_last() end
        end
      end
    end)
  end
  local arena_at = 0 -- (bytes)
  for bi, ix in ipairs(assignment) do
    local n = 0
    for _, i in ipairs(ix) do n = n + R.params[i]:numel() end
    local p1 = R.params[ix[1]]
    -- (one element more: the bucket's tag, see launch_ready)
    local flat, arena_off
    if R.arena and ARENA_DTYPES[p1.dtype.name] then
      local isz = p1:element_size()
      flat = R.B.arena_tensor(R.arena, arena_at, n + 1, p1._dtype):zero_()
      arena_off = arena_at / isz
      arena_at = arena_at + math.ceil((n + 1) * isz / 64) * 64
    else
      flat = torch.zeros(n + 1, { dtype = p1.dtype, device = p1.device })
    end
    local views, offsets, off = {}, {}, 0
    for pos, i in ipairs(ix) do
      local p = R.params[i]
      views[pos] = flat:narrow(1, off + 1, p:numel()):view(p:size())
      offsets[pos] = off
      off = off + p:numel()
      where[i] = { bi, pos }
    end
    local slot_ptr = {} -- (arena: where each gradient's slot starts)
    if arena_off then
      for pos = 1, #ix do slot_ptr[pos] = views[pos]._data end
    end
    buckets[bi] = { index = bi, indices = ix, flat = flat, views = views, offsets = offsets, numel = n,
      pending = #ix, marked = {}, tag_slot = flat:narrow(1, n + 1, 1), bufs = {},
      inplace = {}, arena_off = arena_off, slot_ptr = slot_ptr }
  end
  R.buckets, R.where = buckets, where
  -- gradient_as_bucket_view: an existing .grad moves into its view
  if R.as_view then
    with_grad(false, function()
      for i, p in ipairs(R.params) do
        local g = p.grad
        if g ~= nil then
          local v = relayout(R, buckets[where[i][1]], where[i][2], g)
          if g._storage ~= v._storage then
            v:copy_(g)
            p.grad = v
          end
        end
      end
    end)
  end
end

local function expected_finished_msg(R)
  local missing = {}
  for bi, b in ipairs(R.buckets) do
    for pos, i in ipairs(b.indices) do
      if not b.marked[pos] then missing[#missing + 1] = i end
    end
  end
  table.sort(missing)
  local idx, nm = {}, {}
  for k, i in ipairs(missing) do
    idx[k] = tostring(i)
    nm[k] = R.names[i]
  end
  return ('Expected to have finished reduction in the prior iteration before starting a new one. This error ' ..
    'indicates that your module has parameters that were not used in producing loss. You can enable unused ' ..
    'parameter detection by passing the option `find_unused_parameters=true` to ' ..
    '`nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs participate in ' ..
    'calculating loss. Parameter indices which did not receive grad for rank %d: %s (%s)')
    :format(R.pg:rank(), table.concat(idx, ' '), table.concat(nm, ' '))
end

local function ensure_prior_reduction_finished(R)
  if R.require_finalize then fail(OP, expected_finished_msg(R)) end
end

-- the averages go back into .grad (with grad mode off); global_used: find_unused_parameters' flags
local function copy_back(R, global_used)
  for i, p in ipairs(R.params) do
    if not global_used or global_used[i - 1] ~= 0 then
      local wb = R.where[i]
      local b = R.buckets[wb[1]]
      local v = b.views[wb[2]]
      local g = p.grad
      if R.direct and b.inplace[wb[2]] then
        -- averaged in place
      elseif g == nil then
        p.grad = R.as_view and v or v:clone()
      elseif g._storage ~= v._storage then
        g:copy_(v)
      end
    end
  end
end

-- wait for every bucket, then the averages go back into .grad
local function finalize(R)
  local B = R.B
  local t0 = B.now()
  local err
  for _, b in ipairs(R.buckets) do
    local w = b.work
    if w ~= nil then
      b.work = nil
      if not err then
        err = B.wait(w, R.pg._timeout)
        if not err then
          local s, f = B.times(w)
          if s > 0 then R.comm_sum = R.comm_sum + (f - s) end
        end
      end
      B.release(w)
    end
  end
  local t1 = B.now()
  local waited = (t1 - t0) + (R.now_wait or 0)
  if R.now_err and not err then err = R.now_err end
  R.now_wait, R.now_err = nil, nil
  R.wait_sum = R.wait_sum + waited
  R.last_wait = waited
  R.expect_hooks = false
  R.require_finalize = false
  if err then
    R.broken = err
    error('moontorch.' .. err, 0)
  end
  for _, b in ipairs(R.buckets) do
    local got = b.tag_slot:item()
    local averaged = R.direct or b.arena_off -- (AVG: the tag comes back as it went)
    if got ~= (averaged and b.tag or b.tag * R.world) then
      R.broken = ('bucket %d of %d (%d elements of %s) met another bucket on another rank: its tag came back %s, ' ..
        'not %d x %d. The ranks are out of step: each must run the same synchronised forward and backward passes ' ..
        '(no_sync on every rank or on none), over the same models in the same order')
        :format(b.index, #R.buckets, b.numel, tostring(b.flat.dtype), tostring(got), averaged and 1 or R.world, b.tag)
      fail(OP, R.broken)
    end
  end
  -- find_unused_parameters: a parameter no rank used keeps its .grad as it was
  local global_used
  if R.find_unused then
    local used = R.local_used
    dist.all_reduce(used, dist.ReduceOp.MAX, R.pg)
    global_used = ffi.cast('uint8_t *', used._data)
  end
  R.steps = R.steps + 1
  with_grad(false, copy_back, R, global_used)
end

-- Each bucket's all-reduce carries a tag in its last element: a number made of this DDP's number
-- (the order the DDPs of its process group were made in, the same on every rank: making one is
-- collective over the group), the bucket and the step. Summed over the
-- ranks it must come back as world_size times this rank's own; anything else means that this
-- all-reduce met another bucket, another step or another model on some rank (ranks out of step:
-- a skipped or extra synchronised backward, models run in another order), which is an error
-- rather than gradients silently averaged with the wrong ones. The tag stays an integer the
-- bucket's dtype holds exactly, summed world_size times.
local TAG_LIMIT = { float64 = 2 ^ 50, float32 = 2 ^ 23, float16 = 2 ^ 11, bfloat16 = 2 ^ 8 }
local function tag_of(R, b)
  local limit = math.max(2, math.floor((TAG_LIMIT[b.flat.dtype.name] or 2 ^ 23) / R.world))
  return ((R.id * 7919 + b.index * 104729 + R.launches * 13) % (limit - 1)) + 1
end

-- a bucket's all-reduce waited for at once (begun at t0; the backend's err, start and finish): its
-- wait and error for finalize, its time for comm_stats
local function waited_now(R, t0, err, s, f)
  R.now_wait, R.now_err = R.B.now() - t0, err
  if not err and s > 0 then R.comm_sum = R.comm_sum + (f - s) end
end

-- launch the buckets that are ready, in order; after the last one, finish
local function launch_ready(R)
  local buckets, B = R.buckets, R.B
  while R.next_bucket <= #buckets and buckets[R.next_bucket].pending == 0 do
    local b = buckets[R.next_bucket]
    R.launches = R.launches + 1
    b.tag = tag_of(R, b)
    b.tag_slot:fill_(b.tag)
    if b.arena_off then
      -- the bucket lies in the arena: averaged there, nothing copied in or out; the last one is
      -- waited for at once (backward has nothing left to do), run by this thread itself
      if R.next_bucket == #buckets then
        local t0 = B.now()
        waited_now(R, t0, B.arena_all_reduce_now(R.arena, b.arena_off, b.numel + 1, b.flat._dtype, OP_AVG, R.pg._timeout))
      else
        b.work = B.arena_all_reduce(R.arena, b.arena_off, b.numel + 1, b.flat._dtype, OP_AVG)
      end
    elseif R.direct then
      b.bufs[#b.indices + 1] = b.tag_slot
      if R.next_bucket == #buckets and B.all_reduce_coalesced_now then
        -- the last bucket: backward has nothing left to do, so it is waited for at once (run by this
        -- thread itself where the backend can: no hand-over to its communication thread and back)
        local t0 = B.now()
        waited_now(R, t0, B.all_reduce_coalesced_now(R.pg._h, b.bufs, OP_AVG, R.pg._timeout))
      else
        b.work = B.all_reduce_coalesced(R.pg._h, b.bufs, OP_AVG)
      end
    else
      b.work = B.all_reduce(R.pg._h, b.flat, OP_SUM)
    end
    R.next_bucket = R.next_bucket + 1
  end
  if R.next_bucket > #buckets then finalize(R) end
end

local function mark_ready(R, i)
  local wb = R.where[i]
  local b, pos = R.buckets[wb[1]], wb[2]
  if b.marked[pos] then
    fail(OP, ('Expected to mark a variable ready only once. This error is caused by one of the following reasons: ' ..
      '1) Use of a module parameter outside the `forward` function, or 2) reused parameters in multiple reentrant ' ..
      'backward passes, or 3) a second backward of one forward (retain_graph). Parameter %d (%s) has been marked ' ..
      'as ready twice.'):format(i, R.names[i]))
  end
  b.marked[pos] = true
  R.require_finalize = true
  local p = R.params[i]
  local g = p.grad -- (an unused parameter's .grad too, when it has one: PyTorch's reducer does the same)
  if R.direct then
    -- the gradient itself takes part in the all-reduce (averaged in place) when its memory is one
    -- dense block; else its slot in the bucket, unscaled
    -- (a gradient moves into the arena only when it is a whole storage of its own, so that nothing
    -- else shares its memory: a view of a tensor the script holds stays where it is, copied in)
    if g ~= nil and g._dtype == b.flat._dtype and dense(g) and
      not (b.arena_off and (g.requires_grad or not owns_storage(g))) then
      if b.arena_off and g._data ~= b.slot_ptr[pos] then
        -- the gradient moves into its slot of the arena, in its own layout (once: it stays there
        -- while .grad is kept), a storage of its own as before
        local isz = g:element_size()
        local v = R.B.arena_tensor(R.arena, (b.arena_off + b.offsets[pos]) * isz, nil, g._dtype, g:size(), g:stride())
        v:copy_(g)
        if C.mt_tensor_set_data(g, v) ~= 0 then core.raise_last() end
      end
      b.bufs[pos] = g
      b.inplace[pos] = true
    else
      b.inplace[pos] = false
      local v = g ~= nil and relayout(R, b, pos, g) or b.views[pos]
      if g == nil then v:zero_() else v:copy_(g) end
      b.bufs[pos] = v
    end
    b.pending = b.pending - 1
    if b.pending == 0 and wb[1] == R.next_bucket then launch_ready(R) end
    return
  end
  local v = g ~= nil and relayout(R, b, pos, g) or b.views[pos]
  if g == nil then
    v:zero_()
  elseif R.as_view then
    -- (a bucket in the arena is averaged by its all-reduce: no scaling here)
    if g._storage ~= v._storage then
      if b.arena_off then v:copy_(g) else torch.mul(g, R.scale, { out = v }) end
      p.grad = v
    elseif R.scale ~= 1 and not b.arena_off then
      v:mul_(R.scale)
    end
  else
    torch.mul(g, R.scale, { out = v })
  end
  b.pending = b.pending - 1
  if b.pending == 0 and wb[1] == R.next_bucket then launch_ready(R) end
end

local function on_grad_ready(R, i)
  if not R.expect_hooks then return end
  if R.find_unused then
    ffi.cast('uint8_t *', R.local_used._data)[i - 1] = 1
    if not R.marked_unused then
      R.marked_unused = true
      for _, u in ipairs(R.unused) do mark_ready(R, u) end
    end
  end
  if R.record_order then
    local o = R.ready_order
    o[#o + 1] = i
  end
  mark_ready(R, i)
end

-- after a synchronised forward: reset the buckets; with find_unused_parameters, find the
-- parameters the outputs do not reach
local tensor_ptr = ffi.typeof('mt_tensor *')
local nrbuf = ffi.new('int[1]')
local function address(p) return tonumber(ffi.cast('intptr_t', p)) end
local function prepare_for_backward(R, outputs)
  ensure_prior_reduction_finished(R)
  R.expect_hooks = true
  R.next_bucket = 1
  for _, b in ipairs(R.buckets) do
    b.pending = #b.indices
    local marked = b.marked
    for k = 1, #b.indices do marked[k] = false end
  end
  if not R.find_unused then return end
  R.marked_unused = false
  ffi.fill(R.local_used._data, #R.params, 0)
  local reached, seen, stack = {}, {}, {}
  local function push(t)
    if torch.is_tensor(t) then
      local n = C.mt_grad_fn(t)
      if n ~= nil then stack[#stack + 1] = n
      elseif t.requires_grad then reached[address(ffi.cast(tensor_ptr, t))] = true end
    elseif type(t) == 'table' then
      for _, v in pairs(t) do push(v) end
    end
  end
  for i = 1, outputs.n do push(outputs[i]) end
  while #stack > 0 do
    local n = stack[#stack]
    stack[#stack] = nil
    local key = address(n)
    if not seen[key] then
      seen[key] = true
      local v = C.mt_node_variable(n)
      if v ~= nil then reached[address(v)] = true end
      for k = 0, C.mt_node_num_next(n) - 1 do
        local c = C.mt_node_next(n, k, nrbuf)
        if c ~= nil then stack[#stack + 1] = c end
      end
    end
  end
  local unused = {}
  for i, p in ipairs(R.params) do
    if not reached[address(ffi.cast(tensor_ptr, p))] then unused[#unused + 1] = i end
  end
  R.unused = unused
end

-- once, after the first synchronised iteration: buckets in the order the gradients arrived
-- (rank 0's order, broadcast to all)
local function rebuild_buckets(R)
  if not R.record_order or R.rebuilt then return false end
  ensure_prior_reduction_finished(R)
  if #R.ready_order == 0 then return false end
  R.rebuilt, R.record_order = true, false
  local np = #R.params
  if #R.ready_order ~= np then
    fail(OP, ('rebuilt parameter indices size is not same as original model parameters size. Original model ' ..
      'parameters size: %d; rebuilt parameter indices size: %d'):format(np, #R.ready_order))
  end
  local msg = torch.zeros(2 * np + 1, { dtype = torch.int64 })
  if R.pg:rank() == 0 then
    local a = assign(R.params, R.ready_order, { R.first_bucket_bytes, R.bucket_bytes_cap }, true)
    local q, k = ffi.cast('int64_t *', msg._data), 1
    q[0] = #a
    for _, ix in ipairs(a) do
      q[k] = #ix
      k = k + 1
      for _, i in ipairs(ix) do q[k] = i; k = k + 1 end
    end
  end
  dist.broadcast(msg, dist.get_global_rank(R.pg, 0), R.pg)
  local q, k, a = ffi.cast('int64_t *', msg._data), 1, {}
  for b = 1, tonumber(q[0]) do
    local ix = {}
    for j = 1, tonumber(q[k]) do ix[j] = tonumber(q[k + j]) end
    k = k + tonumber(q[k]) + 1
    a[b] = ix
  end
  build_buckets(R, a)
  return true
end

------------------------------------------------------------------------------ the module
local ddp_args = { 'device_ids', 'output_device', 'dim', 'broadcast_buffers', 'process_group', 'bucket_cap_mb',
  'find_unused_parameters', 'check_reduction', 'gradient_as_bucket_view', 'static_graph' }

-- DistributedDataParallel(module, {device_ids=, output_device=, dim=1, broadcast_buffers=true,
-- process_group=, bucket_cap_mb=25, find_unused_parameters=false, gradient_as_bucket_view=false,
-- static_graph=false})
function DDP:__init(module, ...)
  nn.Module.__init(self)
  local a = I.args('nn.parallel.DistributedDataParallel', ddp_args, ...)
  if type(module) ~= 'table' or not class.isinstance(module, nn.Module) then
    fail(OP, ('module must be an nn.Module, got %s'):format(describe(module)))
  end
  local any, devs = false, {}
  for _, p in ipairs(module:parameters()) do
    if p.requires_grad then any = true end
    devs[p.device.type] = true
  end
  if not any then
    fail(OP, "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient.")
  end
  local ndev, devname = 0, 'cpu'
  for d in pairs(devs) do ndev, devname = ndev + 1, d end
  if ndev > 1 then
    fail(OP, "DistributedDataParallel's input module must be on the same type of devices, but input module " ..
      'parameters locate in several.')
  end
  local ids = a.device_ids
  if (ids ~= nil and (type(ids) ~= 'table' or #ids > 0)) or a.output_device ~= nil then
    if type(ids) == 'table' and #ids > 1 then fail(OP, 'device_ids can only be None or contain a single element.') end
    if devname == 'cpu' then
      fail(OP, ('DistributedDataParallel device_ids and output_device arguments only work with single-device/' ..
        'multiple-device GPU modules or CPU modules, but got device_ids %s, output_device %s, and module ' ..
        'parameters {cpu}.'):format(describe(ids), describe(a.output_device)))
    end
  end
  local pg = I.member_group(OP, a.process_group)
  self.module = module
  self.process_group = pg
  self.dim = a.dim or 1
  self.broadcast_buffers = a.broadcast_buffers ~= false
  self.find_unused_parameters = a.find_unused_parameters and true or false
  self.gradient_as_bucket_view = a.gradient_as_bucket_view and true or false
  self.static_graph = a.static_graph and true or false
  self.require_backward_grad_sync = true
  self.require_forward_param_sync = true
  self.device_ids = nil
  self.output_device = nil
  local cap_mb = a.bucket_cap_mb or 25
  if type(cap_mb) ~= 'number' or not (cap_mb > 0) then
    fail(OP, ('bucket_cap_mb must be a positive number, got %s'):format(describe(cap_mb)))
  end
  self.bucket_bytes_cap = math.floor(cap_mb * 1024 * 1024)
  self.broadcast_bucket_size = BROADCAST_BUCKET_BYTES

  local params, names = params_for_reducer(module)
  verify_params(pg, params, names)
  -- every rank starts from rank 0's parameters and buffers
  local states = {}
  for _, p in ipairs(module:parameters()) do states[#states + 1] = p end
  for _, b in ipairs(module:buffers()) do states[#states + 1] = b end
  broadcast_coalesced(pg, states, dist.get_global_rank(pg, 0), BROADCAST_BUCKET_BYTES)

  local B = pg._B
  local R = { params = params, names = names, pg = pg, B = B, world = pg:size(), scale = 1 / pg:size(),
    as_view = self.gradient_as_bucket_view, find_unused = self.find_unused_parameters,
    bucket_bytes_cap = self.bucket_bytes_cap, first_bucket_bytes = dist._DEFAULT_FIRST_BUCKET_BYTES or FIRST_BUCKET_BYTES,
    expect_hooks = false, require_finalize = false, next_bucket = 1, unused = {},
    ready_order = {}, record_order = not self.find_unused_parameters or self.static_graph, rebuilt = false,
    steps = 0, comm_sum = 0, wait_sum = 0, last_wait = 0, launches = 0 }
  -- without gradient_as_bucket_view, the gradients themselves are all-reduced (one coalesced AVG per
  -- bucket: no copies into the bucket and back) where the backend can
  R.direct = not R.as_view and B.all_reduce_coalesced ~= nil
  -- where every rank runs on this node, the gradients live in memory the ranks share (an arena):
  -- each bucket's all-reduce then reads and writes the ranks' gradients where they lie
  if B.arena_new and (R.direct or R.as_view) then
    local bytes = 0
    for _, p in ipairs(params) do bytes = bytes + p:numel() * p:element_size() + 128 end
    R.arena = B.arena_new(pg._h, bytes, pg._timeout)
    if R.arena then
      local lo, size = B.arena_range(R.arena)
      R.in_arena = function(t)
        local a = tonumber(ffi.cast('intptr_t', t._data))
        return a >= lo and a < lo + size
      end
    end
  end
  pg._ddp_made = (pg._ddp_made or 0) + 1
  R.id = pg._ddp_made
  if R.find_unused then R.local_used = torch.zeros(#params, { dtype = torch.uint8 }) end
  local order = {}
  for i = 1, #params do order[i] = i end
  local limits = R.find_unused and not self.static_graph and { R.first_bucket_bytes, self.bucket_bytes_cap } or { math.huge }
  local a0 = assign(params, order, limits, false)
  local rev = {}
  for k = #a0, 1, -1 do rev[#rev + 1] = a0[k] end
  build_buckets(R, rev)
  -- the hooks: after each parameter's gradient is accumulated (its AccumulateGrad node's post hook);
  -- they hold the reducer weakly, so that a dropped DDP lets its hooks go
  local weak = setmetatable({ R }, { __mode = 'v' })
  R.accs = {}
  with_grad(true, function()
    for i, p in ipairs(params) do
      local acc = p:expand_as(p).grad_fn.next_functions[1][1]
      R.accs[i] = acc
      acc:_register_ready_hook(function()
        local r = weak[1]
        if r then on_grad_ready(r, i) end
      end)
    end
  end)
  self._has_buffers = #module:buffers() > 0
  self._reducer = R
end

function DDP:_sync_buffers()
  local bufs = {}
  for _, b in ipairs(self.module:buffers()) do bufs[#bufs + 1] = b end
  self._has_buffers = #bufs > 0
  if #bufs > 0 then
    broadcast_coalesced(self.process_group, bufs, dist.get_global_rank(self.process_group, 0), self.broadcast_bucket_size)
  end
end

-- (as PyTorch: whether the module has buffers is known from construction on)
function DDP:will_sync_module_buffers()
  return self.require_forward_param_sync and self.broadcast_buffers and self._has_buffers
end

function DDP:forward(...)
  local R = self._reducer
  if R.broken then fail(OP, 'a previous synchronisation failed: ' .. R.broken) end
  local grad = torch.is_grad_enabled()
  if grad then rebuild_buckets(R) end
  if self:will_sync_module_buffers() then self:_sync_buffers() end
  local out = pack(self.module(...))
  if grad and self.require_backward_grad_sync then
    self.require_forward_param_sync = true
    prepare_for_backward(R, out)
  else
    self.require_forward_param_sync = false
  end
  return unpack(out, 1, out.n)
end

-- no_sync(fn, ...): fn(...) with gradient synchronisation off (PyTorch's `with ddp.no_sync():`)
function DDP:no_sync(fn, ...)
  if type(fn) ~= 'function' then fail(OP .. '.no_sync', 'expected a function to run without synchronisation') end
  local old = self.require_backward_grad_sync
  self.require_backward_grad_sync = false
  local r = pack(pcall(fn, ...))
  self.require_backward_grad_sync = old
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, r.n)
end

-- the state_dict keys carry the `module.` prefix, as PyTorch's; load_state_dict also takes the
-- plain module's keys (a checkpoint saved from ddp.module or from a one-process run)
function DDP:load_state_dict(state_dict, opts)
  if type(state_dict) == 'table' then
    local keys = {}
    if class.typename(state_dict) == 'torch.OrderedDict' then
      keys = state_dict:keys()
    else
      for k in pairs(state_dict) do keys[#keys + 1] = k end
      table.sort(keys, function(x, y) return tostring(x) < tostring(y) end)
    end
    local prefixed = false
    for _, k in ipairs(keys) do
      if type(k) == 'string' and k:sub(1, 7) == 'module.' then prefixed = true break end
    end
    if not prefixed and #keys > 0 then
      local od = torch.OrderedDict()
      for _, k in ipairs(keys) do
        local v
        if class.typename(state_dict) == 'torch.OrderedDict' then v = state_dict:get(k) else v = state_dict[k] end
        od['module.' .. tostring(k)] = v
      end
      state_dict = od
    end
  end
  return nn.Module.load_state_dict(self, state_dict, opts)
end

-- {steps=, comm_ms=, unhidden_ms=, buckets=, bucket_sizes=, shared_gradients=}: per synchronised
-- step, the mean time the all-reduces took and the mean time backward waited for them after its last
-- gradient (the communication it did not hide); shared_gradients: the gradients live in memory the
-- ranks share (every rank on this node)
function DDP:comm_stats()
  local R = self._reducer
  local sizes = {}
  for i, b in ipairs(R.buckets) do sizes[i] = b.numel end
  local n = math.max(R.steps, 1)
  return { steps = R.steps, comm_ms = R.comm_sum / n * 1e3, unhidden_ms = R.wait_sum / n * 1e3,
    buckets = #R.buckets, bucket_sizes = sizes, last_unhidden_ms = R.last_wait * 1e3,
    shared_gradients = R.arena ~= nil }
end
function DDP:reset_comm_stats()
  local R = self._reducer
  R.steps, R.comm_sum, R.wait_sum = 0, 0, 0
end

-- the parameter names of each bucket, in bucket order (for a look at the layout)
function DDP:bucket_names()
  local R, out = self._reducer, {}
  for bi, b in ipairs(R.buckets) do
    local names = {}
    for k, i in ipairs(b.indices) do names[k] = R.names[i] end
    out[bi] = names
  end
  return out
end

return M
