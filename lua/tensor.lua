-- moontorch.tensor: the Tensor type. A tensor is a `mt_tensor &` cdata owning one reference, kept
-- in the handle registry below (no ffi.gc: see README's design notes); methods and properties
-- come from the metatype below.
-- Op modules (lua/ops/*.lua) add their functions to `methods` and to the torch table.
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local dtype = require 'moontorch.dtype'

local C = core.C
local raise_last, fail = core.raise_last, core.fail
local type, tonumber, select, rawget = type, tonumber, select, rawget
local floor, huge = math.floor, math.huge
local by_id = dtype.by_id

local M = {}
local methods = {}   -- t:name(...)
local props = {}     -- t.name: function(t) -> value
local setters = {}   -- t.name = v: function(t, v)
M.methods, M.props, M.setters = methods, props, setters

local tensor_ct = ffi.typeof('mt_tensor')
local outp = ffi.new('mt_tensor *[1]')
local outp2 = ffi.new('mt_tensor *[1]')
local szbuf = ffi.new('int64_t[16]')
local szbuf2 = ffi.new('int64_t[16]')
local stats = C.mt_get_stats()
M.outp, M.outp2, M.szbuf, M.szbuf2 = outp, outp2, szbuf, szbuf2

-- Handle registry. A Lua tensor handle is a plain cdata without a finalizer (LuaJIT's
-- finalizers cost ~1 us each, more than a whole small op). Handle i sits in the weak-valued
-- table `slots` and the reference it owns in the C array `ptrs`; when the GC has collected a
-- handle, a scan finds ptrs[i] set with slots[i+1] empty and releases the reference: Lua marks
-- the slots the GC kept (a walk over the live handles alone) and C releases the others
-- (mt_handles_reclaim; a Lua loop over every slot took a side exit per dead one). Scans run at
-- the end of every GC cycle (a sentinel's __gc), when the free list is empty (after finishing
-- the GC cycle under way), and when the bytes held by tensors grew by much since the last one.
local ptrs = C.mt_handles_resize(4096)
local cap = 4096
local free = ffi.new('int32_t[?]', cap)
local nfree = 0
for i = cap - 1, 0, -1 do free[nfree] = i; nfree = nfree + 1 end
-- slots[1..cap] lie in the table's array part, made whole at once (table.new): every store is then an
-- array store, on the compiled fast path (a slot in the hash part, where a weak table's rehash puts
-- keys when fewer than half the slots hold live handles, took wrap's trace off it), and no store
-- allocates. grow() makes a new table of the new size.
local new_table = require 'table.new'
local weak_values = { __mode = 'v' }
local slots = setmetatable(new_table(cap, 0), weak_values)
local live = ffi.new('uint8_t[?]', cap) -- a scan's marks, cleared by mt_handles_reclaim
-- Growth of the bytes held by tensors since the last reclaim that triggers the next one (big
-- tensors held by dead handles must not wait for the Lua GC, which sees only small handles;
-- temporaries the C core freed at once do not count). Large enough to amortise a full
-- collection, whose cost grows with the Lua heap: GC_HEAP_FACTOR times the Lua heap's size, at
-- least GC_MIN_BYTES.
local GC_MIN_BYTES = 4 * 1024 * 1024
local GC_HEAP_FACTOR = 16
-- Registry slots per KB of live Lua heap (a full registry forces a GC cycle). More slots mean
-- rarer cycles but more dead tensors and graph nodes waiting for their release, whose memory is
-- cold by then: 4 measured best on the benchmarks (4096 slots for moontorch's own heap).
local SLOTS_PER_KB = 4
local gc_limit = GC_MIN_BYTES -- stats.live_bytes above which the next wrap reclaims

-- the references of the handles collected since the last scan, released together by C (which
-- fetches ahead: they are cold); their slots go on the free list
local reclaim_slots = C.mt_handles_reclaim

local function scan()
  for i in pairs(slots) do live[i - 1] = 1 end
  local freed = tonumber(reclaim_slots(live, free + nfree))
  nfree = nfree + freed
  return freed
end

-- the sentinel: a userdata whose __gc marks that a GC cycle ended (and re-arms); the next wrap
-- scans, outside the finalizer, where the loop is compiled
local cycle_ended = false
local function arm()
  local s = newproxy(true)
  getmetatable(s).__gc = function() cycle_ended = true; arm() end
end
arm()

-- when the Lua state closes (every handle is dead), give back every reference
local closer = newproxy(true)
getmetatable(closer).__gc = function() C.mt_handles_release_all() end
M._closer = closer

local function grow(ncap)
  local np = C.mt_handles_resize(ncap)
  if np == nil then error('moontorch: out of memory growing the tensor registry', 0) end
  local nf = ffi.new('int32_t[?]', ncap)
  ffi.copy(nf, free, 4 * nfree)
  for i = ncap - 1, cap, -1 do nf[nfree] = i; nfree = nfree + 1 end
  local ns = setmetatable(new_table(ncap, 0), weak_values)
  for i = 1, cap do ns[i] = slots[i] end
  free, ptrs, cap, slots = nf, np, ncap, ns
  live = ffi.new('uint8_t[?]', ncap)
end

-- Run the GC until the cycle under way ends: every handle dead before its atomic phase is then
-- known (a full collection would throw away the marking done so far and sweep twice).
local function finish_cycle()
  while not collectgarbage('step', 1024) do end
end

-- A GC cycle and a scan; a second one when the first one's marking was already over and found
-- too little: too few free slots when the registry was full, too few bytes when the growth of
-- the bytes held by tensors asked for it (less than half of the growth since the last reclaim, on
-- the host or on a device: mt_gc_pressure). Grows the registry when little was free, so that
-- collections stay rare relative to the Lua heap's size. Devices' bytes count per device (C keeps
-- them: an allocation past a device's limit sets stats.device_pressure, mt_gc_done sets the next
-- limits), so dead tensors on a GPU are collected when its memory grows, whatever the host's does.
local live_after = 0 -- stats.live_bytes after the last reclaim
local function reclaim(for_bytes)
  local before = tonumber(stats.live_bytes)
  finish_cycle()
  cycle_ended = false
  local freed = scan()
  local again
  if for_bytes then
    again = tonumber(stats.live_bytes) > before - (before - live_after) / 2 or C.mt_gc_pressure() ~= 0
  else
    again = freed < cap / 4
  end
  if again then
    finish_cycle()
    cycle_ended = false
    scan()
  end
  live_after = tonumber(stats.live_bytes)
  stats.bytes_since_gc = 0
  C.mt_gc_done()
  local heap = collectgarbage('count') * 1024 * GC_HEAP_FACTOR
  gc_limit = tonumber(stats.live_bytes) + (heap > GC_MIN_BYTES and heap or GC_MIN_BYTES)
  local want = collectgarbage('count') * SLOTS_PER_KB
  if nfree < cap / 2 or cap < want then
    local ncap = cap * 2
    while ncap < want do ncap = ncap * 2 end
    grow(ncap)
  end
end
-- Release the references of every handle the GC can collect (for leak checks and tests).
-- Compiled traces keep the values of immutable upvalues they specialised on (a tensor captured
-- by a closure, say) as constants: they are flushed first, or such tensors would look leaked.
-- Then again while the state of dead autograd Functions (their saved tensors) was forgotten
-- (M.drain: autograd's drain, true when it forgot some), which may free more.
M.sweep = function()
  jit.flush()
  repeat
    collectgarbage(); collectgarbage()
    cycle_ended = false
    scan()
    C.mt_gc_done()
  until not (M.drain and M.drain())
end
-- Collect every dead tensor now (torch.cuda.empty_cache does, before the backend gives memory back).
M.collect = function()
  collectgarbage(); collectgarbage()
  cycle_ended = false
  scan()
  C.mt_gc_done()
end
M.scan_pending = function() if cycle_ended then cycle_ended = false; scan() end end

-- anomaly mode (function.lua): tags a new tensor's grad_fn with the traceback of its forward
local anomaly_hook
function M.set_anomaly_hook(f) anomaly_hook = f end

local function wrap(p)
  local h = p[0]
  if cycle_ended then cycle_ended = false; scan() end
  if nfree == 0 then reclaim() end
  nfree = nfree - 1
  local i = free[nfree]
  slots[i + 1] = h -- before ptrs[i]: a scan that runs while the table grows must skip slot i
  ptrs[i] = p
  if stats.live_bytes > gc_limit or stats.device_pressure ~= 0 then reclaim(true) end
  if anomaly_hook then anomaly_hook(p) end
  return h
end
M.wrap = wrap

-- Take the tensor left in outp by a successful call.
local function take() return wrap(outp[0]) end
M.take = take

local function is_tensor(x) return ffi.istype(tensor_ct, x) end
M.is_tensor = is_tensor

------------------------------------------------------------------------------ integer arguments
-- Every integer-valued argument of an op (a size, dim, index, start, length, count, ...) goes
-- through int_arg: a Lua number with an integral value in int64's range, or an int64/uint64
-- cdata (5LL), comes back as a Lua number (an int64 beyond 2^53 rounds to the nearest double:
-- no size, index or count that large can be met). Anything else (2.5, nan, inf, 2^63, '3',
-- true, nil, a table, a tensor) is `moontorch.<op>: <what> must be an integer, got ...` at the
-- caller's line: nothing is truncated, and no such value reaches an int64_t or int of the C API.
-- The usual case is one type test, one floor and two comparisons, in line in a trace.
local TWO63, TWO31 = 2 ^ 63, 2 ^ 31
local i64_ct, u64_ct = ffi.typeof('int64_t'), ffi.typeof('uint64_t')
local U63 = ffi.new(u64_ct, 2 ^ 63)

-- the failing half of the checks below (lua/argcheck.lua), loaded on the first failure
local cold_m
local function cold()
  if not cold_m then cold_m = require 'moontorch.argcheck' end
  return cold_m
end
M.cold = cold
function M.describe(v) return cold().describe(v) end

-- Lua sequences (nested data, size tables). seq_len(t): the length n of t when its keys are
-- exactly 1..n, plus at most an `n` field equal to n (as table.pack leaves), else nil. It counts
-- the keys (a compiled loop) and trusts # for the rest: a caller that reads t[1..n] must treat a
-- nil there as a hole (seq_fail names it). seq_fail(t, op, name): the error for a table that is
-- not a sequence; `name` says which table ('data[2]', 'size').
local function seq_len(t)
  local n = #t
  local c = 0
  for _ in next, t do c = c + 1 end
  if c == n or (c == n + 1 and rawget(t, 'n') == n) then return n end
  return nil
end
M.seq_len = seq_len
local function seq_fail(t, op, name) return cold().seq_fail(t, op, name) end
M.seq_fail = seq_fail

-- the slow path of int_arg: an int64/uint64 cdata in range, or an error. `pos` (optional) is a
-- 1-based position among several values of one argument (a size, a list of dims).
local function int_slow(v, op, what, pos)
  if type(v) == 'cdata' then
    if ffi.istype(i64_ct, v) then return tonumber(v) end
    if ffi.istype(u64_ct, v) and v < U63 then return tonumber(v) end
  end
  return cold().int_fail(v, op, what or M.sizes_called[op] or 'size', pos)
end

local function int_arg(v, op, what, pos)
  if type(v) == 'number' and v == floor(v) and v >= -TWO63 and v < TWO63 then return v end
  return int_slow(v, op, what, pos)
end
M.int_arg = int_arg

-- Ops that return a Lua array of tensors (split, chunk, unbind, ...) refuse, before they start,
-- a count larger than a LuaJIT table's array part can hold (2^27), which could only end in
-- "table overflow" or in memory exhaustion after minutes.
local MAX_LIST = 2 ^ 27
function M.check_list_len(n, op)
  if n > MAX_LIST then cold().list_len_fail(n, op, MAX_LIST) end
end

-- 1-based Lua dims (negative from the end) to 0-based C dims (negative kept). The C API takes
-- dims as int: a dim beyond int's range is refused here (no tensor has that many dims).
local function cdim(d, op)
  if type(d) ~= 'number' or d ~= floor(d) or d >= TWO31 or d < -TWO31 then
    d = int_arg(d, op or 'dim', 'dimension')
    if d >= TWO31 or d < -TWO31 then cold().dim_range_fail(d, op or 'dim') end
  end
  if d > 0 then return d - 1 end
  if d < 0 then return d end
  fail(op or 'dim', 'dimension 0 is out of range: dimensions are 1-based (1 is the first, -1 the last)')
end
M.cdim = cdim

-- Sizes as varargs or one table, with an optional trailing options table. Fills szbuf and
-- returns ndim, opts. Ops whose varargs are not sizes name them here, for their messages.
M.sizes_called = { permute = 'dims', ['repeat'] = 'repeats', tile = 'dims' }
local function is_opts(x) return type(x) == 'table' and x[1] == nil and next(x) ~= nil end
local function parse_sizes(op, ...)
  local n = select('#', ...)
  local first = ...
  -- one size, the usual randn(4): no loop, so that callers stay compilable in a trace
  if n == 1 and type(first) == 'number' and first == floor(first) and first >= -TWO63 and first < TWO63 then
    szbuf[0] = first
    return 1, nil
  end
  local opts
  -- trailing nils (an options variable that was nil) are not sizes
  while n > 0 and select(n, ...) == nil do n = n - 1 end
  if n > 0 then
    local last = select(n, ...)
    if type(last) == 'table' and not is_tensor(last) and (is_opts(last) or (n > 1 and type(first) == 'table' and next(last) == nil)) then
      opts = last
      n = n - 1
    end
  end
  if n == 1 and type(first) == 'table' and not is_tensor(first) then
    local t = first
    -- a hole or a key that is not a position: {2, nil, 3} must not pass as {2}
    local k = seq_len(t) or seq_fail(t, op, M.sizes_called[op] or 'size')
    if k > 16 then fail(op, 'too many dimensions (' .. k .. ')') end
    for i = 1, k do
      local v = t[i]
      if v == nil then seq_fail(t, op, M.sizes_called[op] or 'size') end
      szbuf[i - 1] = int_arg(v, op, nil, i)
    end
    return k, opts
  end
  if n > 16 then fail(op, 'too many dimensions (' .. n .. ')') end
  for i = 1, n do szbuf[i - 1] = int_arg((select(i, ...)), op, nil, i) end
  return n, opts
end
M.parse_sizes = parse_sizes
M.is_opts = is_opts
-- opts, after a check that it is an options table (or nil): a number or a boolean where the options
-- go is the op's error, not an index into a number deeper in
function M.options(opts, op)
  if opts ~= nil and (type(opts) ~= 'table' or is_tensor(opts)) then
    fail(op, ('expected an options table {...} as the last argument, got %s'):format(is_tensor(opts) and 'a tensor' or type(opts)))
  end
  return opts
end

local function resolve_dtype(d, op)
  if d == nil then return nil end
  local r = dtype.resolve(d)
  if not r then fail(op, 'unknown dtype ' .. tostring(d)) end
  return r
end
M.resolve_dtype = resolve_dtype

-- The C device (mt_device *) of a device argument, nil for the CPU. The C core's registry says
-- whether it is there (a backend for its type, a device of that index); if not, its reason is the
-- error, naming the op ("device cuda:1 is not available: moontorch was built without CUDA").
local raise_as
local function device_arg(dev, op)
  if dev == nil then return nil end
  local ok, d = pcall(dtype.device, dev)
  if not ok then fail(op, (tostring(d):gsub('^moontorch%.device: ', ''))) end
  local c = d._c
  if c ~= nil and C.mt_device_check(c) ~= 0 then raise_as(op) end
  return c
end
M.device_arg = device_arg
-- the C device of an options table's `device` (nil: the CPU)
local function check_device(opts, op) return device_arg(opts and opts.device, op) end
M.check_device = check_device

-- Lua's `requires_grad` option is applied by autograd (issue 3): a hook it replaces.
M.apply_opts = function(t, opts) return t end

-- raise the C core's last error under the name of the op the user called (a factory's sizes are
-- checked by mt_tensor_empty, whose messages say 'empty')
function raise_as(op)
  local msg = ffi.string(C.mt_last_error())
  fail(op, (msg:gsub('^[%w_]+: ', '', 1)))
end
M.raise_as = raise_as

-- empty tensor of szbuf[0..n) with opts
local function new_empty(op, n, opts, default_dt)
  local dt = (opts and resolve_dtype(opts.dtype, op)) or default_dt or by_id[C.mt_get_default_dtype()]
  if C.mt_tensor_empty(szbuf, n, dt.id, check_device(opts, op), outp) ~= 0 then raise_as(op) end
  return take(), dt
end
M.new_empty = new_empty

------------------------------------------------------------------------------ properties
props.dtype = function(t) return by_id[t._dtype] end
props.device = function(t) return t._device_type == 0 and dtype.cpu_device or dtype.device_of(t._device_type, t._device_index) end
props.ndim = function(t) return t._ndim end
props.is_cuda = function(t) return t._device_type == 1 end
props.is_meta = function(t) return t._device_type == 2 end
props.layout = function() return 'torch.strided' end
props.itemsize = function(t) return by_id[t._dtype].itemsize end
props.nbytes = function(t) return tonumber(t._numel) * by_id[t._dtype].itemsize end
props.is_leaf = function() return true end
props.requires_grad = function() return false end
props.grad_fn = function() return nil end
props.grad = function() return nil end

local Size = {}
Size.__index = Size
Size.__tostring = function(s)
  local parts = {}
  for i = 1, #s do parts[i] = ('%d'):format(s[i]) end -- exact, also beyond 1e14 (expanded views)
  return 'torch.Size([' .. table.concat(parts, ', ') .. '])'
end
Size.__eq = function(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end
function Size:numel()
  local n = 1
  for i = 1, #self do n = n * self[i] end
  return n
end
M.Size = Size

local function size_table(t)
  local r = {}
  for i = 0, t._ndim - 1 do r[i + 1] = tonumber(t._sizes[i]) end
  return setmetatable(r, Size)
end
props.shape = size_table
props.T = function(t)
  local n = t._ndim
  for i = 0, n - 1 do szbuf[i] = n - 1 - i end
  if C.mt_permute(t, szbuf, n, outp) ~= 0 then raise_last() end
  return take()
end
props.mT = function(t) return t:transpose(-2, -1) end

function methods.size(t, d)
  if d == nil then return size_table(t) end
  local n = t._ndim
  local i = cdim(d, 'size')
  if i < 0 then i = i + n end
  if i < 0 or i >= n then
    fail('size', ('dimension %d out of range (the tensor has %d dimensions)'):format(d, n))
  end
  return tonumber(t._sizes[i])
end
function methods.stride(t, d)
  if d == nil then
    local r = {}
    for i = 0, t._ndim - 1 do r[i + 1] = tonumber(t._strides[i]) end
    return r
  end
  local n = t._ndim
  local i = cdim(d, 'stride')
  if i < 0 then i = i + n end
  if i < 0 or i >= n then fail('stride', ('dimension %d out of range'):format(d)) end
  return tonumber(t._strides[i])
end
function methods.dim(t) return t._ndim end
methods.ndimension = methods.dim
function methods.numel(t) return tonumber(t._numel) end
methods.nelement = methods.numel
function methods.storage_offset(t) return tonumber(t._offset) end
function methods.is_contiguous(t) return bit.band(t._flags, 1) ~= 0 end
function methods.element_size(t) return by_id[t._dtype].itemsize end
function methods.data_ptr(t) return t._data end
function methods.is_floating_point(t) return by_id[t._dtype].is_floating_point end
function methods.is_complex() return false end
function methods.get_device(t) return t._device_type == 0 and -1 or t._device_index end

-- t:type() names t's tensor type ('torch.FloatTensor', 'torch.cuda.FloatTensor' on CUDA);
-- t:type(name) converts to a dtype or a tensor type, a 'torch.cuda.*' one onto the current CUDA
-- device (the C core says whether there is one)
function methods.type(t, ty)
  if ty == nil then
    local name = dtype.tensor_type_names[t._dtype]
    if t._device_type == 1 then return (name:gsub('^torch%.', 'torch.cuda.')) end
    return name
  end
  local d, dev
  local cpu_name = type(ty) == 'string' and ty:gsub('^torch%.cuda%.', 'torch.') or ty
  for id, name in pairs(dtype.tensor_type_names) do if name == cpu_name then d = by_id[id] end end
  if d and cpu_name ~= ty then
    device_arg('cuda', 'type')
    dev = 'cuda'
  elseif d then
    dev = 'cpu'
  else
    d = dtype.resolve(ty)
    if not d then fail('type', 'unknown type ' .. tostring(ty)) end
  end
  if dev then return t:to(dev, d) end
  return t:to(d)
end

-- the sizes in szbuf[0..n) as a Lua array (szbuf is reused by the next call)
function M.size_from_buf(n)
  local r = {}
  for i = 1, n do r[i] = tonumber(szbuf[i - 1]) end
  return r
end

-- autograd (core/grad) replaces this with the graph-aware version
function methods.detach(t)
  if C.mt_tensor_alias(t, outp) ~= 0 then raise_last() end
  return take()
end

------------------------------------------------------------------------------ metatype
local number_index, table_index, tensor_index -- defined in ops/index.lua via M.set_indexers
local newindex_handler

-- a method read through a tensor is its front (lua/dotcall.lua): x.size(1) says "call it with ':'"
local method_front = require('moontorch.dotcall').cache('c1(c2, s)', ffi.istype, tensor_ct, 'tensor', 'x',
  function(name) return name end)
local front_fns, fronts = {}, {} -- by name: the method a front was made for, the front

local tensor_mt = {}
tensor_mt.__index = function(t, k)
  local m = methods[k]
  if m ~= nil then
    if front_fns[k] == m then return fronts[k] end
    local w = method_front(m, k)
    front_fns[k], fronts[k] = m, w
    return w
  end
  local p = props[k]
  if p ~= nil then return p(t) end
  local tk = type(k)
  if tk == 'number' then return number_index(t, k) end
  if tk == 'table' then return table_index(t, k) end
  if tk == 'cdata' then
    if is_tensor(k) then return tensor_index(t, k) end
    return number_index(t, k) -- t[2LL]; any other cdata is refused there
  end
  return nil
end
-- #t: the size of the first dim, as Torch7's #t (and Python's len(t)); a 0-dim tensor has none
tensor_mt.__len = function(t)
  if t._ndim == 0 then fail('len', 'len() of a 0-d tensor: it has no dimensions (t:numel() counts its one element)') end
  return tonumber(t._sizes[0])
end

-- a < b, a <= b (and so a > b, a >= b): Lua's comparisons give a boolean, never a tensor, so they
-- are refused with the method that compares elementwise (PyTorch's outputs > 0.5)
local function compare_fail(op, less, a, b)
  local ta, tb = ffi.istype(tensor_ct, a), ffi.istype(tensor_ct, b)
  local function show(v) return ffi.istype(tensor_ct, v) and 't' or tostring(v) end
  local sym, rsym = less and '<' or '<=', less and '>' or '>='
  local m, rm = less and 'lt' or 'le', less and 'gt' or 'ge'
  local hint
  if ta and not tb then
    hint = ('t:%s(%s) for t %s %s'):format(m, show(b), sym, show(b))
  elseif tb and not ta then
    hint = ('t:%s(%s) for t %s %s'):format(rm, show(a), rsym, show(a))
  else
    hint = ('a:%s(b) for a %s b, a:%s(b) for a %s b'):format(m, sym, rm, rsym)
  end
  fail(op, ("Lua's %s, %s cannot compare tensors elementwise (they must give a boolean): use %s (a bool tensor); "
    .. 'for a one-element tensor, t:item() gives the number'):format(sym, rsym, hint))
end
tensor_mt.__lt = function(a, b) return compare_fail('lt', true, a, b) end
tensor_mt.__le = function(a, b) return compare_fail('le', false, a, b) end

tensor_mt.__newindex = function(t, k, v)
  local s = setters[k]
  if s ~= nil then return s(t, v) end
  return newindex_handler(t, k, v)
end
M.tensor_mt = tensor_mt

function M.set_indexers(num, tab, ten, newidx)
  number_index, table_index, tensor_index, newindex_handler = num, tab, ten, newidx
end

-- t's grad_fn named as PyTorch names the node of the call that made t, where one of our nodes does
-- that call's work under another op's name (x:t() records a transpose: TBackward0); t returned
function M.name_grad_fn(t, name)
  local n = C.mt_grad_fn(t)
  if n ~= nil and C.mt_node_rename(n, name) ~= 0 then raise_last() end
  return t
end

-- metamethods are installed by the op modules (arithmetic) and format.lua (__tostring);
-- ffi.metatype must be called once all of them are in tensor_mt.
function M.finalize()
  ffi.metatype('mt_tensor', tensor_mt)
end

return M
