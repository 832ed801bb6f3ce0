-- moontorch.profiler (torch.profiler, PyTorch 1.13's API): times every op a program calls, through
-- the one observation point (lua/observe.lua), whose wrappers are in place only while a profile
-- records (nothing is replaced when none does).
--
--   local profiler = torch.profiler
--   local prof = profiler.profile({ activities = { profiler.ProfilerActivity.CPU }, record_shapes = true,
--     profile_memory = true, with_stack = true, with_modules = true, with_flops = true,
--     schedule = profiler.schedule { wait = 1, warmup = 1, active = 3, ['repeat'] = 1 },
--     on_trace_ready = function(p) p:export_chrome_trace('trace.json') end }, function(prof)
--       for step = 1, 10 do train_step(); prof:step() end
--     end)
--   print(prof:key_averages():table { sort_by = 'cpu_time_total', row_limit = 10 })
--   profiler.record_function('my_block', function() ... end)
--
-- Ops are named as PyTorch's profiler names them, `aten::<name>` (the same op called as torch.f,
-- F.f or t:f is one op); a record_function range by its name; each step of a schedule is a
-- `ProfilerStep#N` range. Self time is an event's time less that of the events it called. Memory is
-- the bytes tensors hold, after an op less before (allocated less freed); FLOPs are counted for
-- products and convolutions (and add, mul), as PyTorch counts them. Beyond PyTorch: the module
-- path of every op in eager mode (with_modules; key_averages{group_by_module=true}), LuaJIT's trace
-- aborts (with_jit = true) and the sampling profiler's Lua stacks (with_lua_samples = true) in the
-- same trace, and a trace written gzip'd when its path ends in .gz.
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local observe = require 'moontorch.observe'

local fail = core.fail
local is_tensor = T.is_tensor
local now_us = observe.now_us
local format, concat = string.format, table.concat
local stats = core.C.mt_get_stats()

local P = {}

P.ProfilerActivity = { CPU = 'CPU', CUDA = 'CUDA' }
P.ProfilerAction = { NONE = 'NONE', WARMUP = 'WARMUP', RECORD = 'RECORD', RECORD_AND_SAVE = 'RECORD_AND_SAVE' }
local A = P.ProfilerAction

-- schedule{wait=, warmup=, active=, repeat=0, skip_first=0} -> fn(step) -> ProfilerAction
function P.schedule(o)
  if type(o) ~= 'table' then fail('profiler.schedule', 'expected {wait=, warmup=, active=, repeat=, skip_first=}') end
  local wait, warmup, active = o.wait or 0, o.warmup or 0, o.active or 0
  local rep, skip = o['repeat'] or 0, o.skip_first or 0
  if wait < 0 or warmup < 0 or active <= 0 or rep < 0 or skip < 0 then
    fail('profiler.schedule', 'Invalid profiler schedule arguments')
  end
  return function(step)
    if step < skip then return A.NONE end
    step = step - skip
    local n = wait + warmup + active
    if rep > 0 and step / n >= rep then return A.NONE end
    local m = step % n
    if m < wait then return A.NONE end
    if m < wait + warmup then return A.WARMUP end
    return m < n - 1 and A.RECORD or A.RECORD_AND_SAVE
  end
end

------------------------------------------------------------------------------ recording
local rec -- the recording in progress: { events, cur, t0, opts, modules }
local T0 = 0

local function shape_of(v)
  if is_tensor(v) then
    local s = {}
    for i = 0, v._ndim - 1 do s[i + 1] = tonumber(v._sizes[i]) end
    return s
  end
  return {}
end

-- the user's frames (outside moontorch's files): "file(line): function"
local function user_stack(limit)
  local out = {}
  for level = 4, 60 do
    local info = debug.getinfo(level, 'Sln')
    if not info then break end
    local src = info.source or ''
    if src:sub(1, 1) == '@' and not src:find('/moontorch/', 1, true) and not src:find('/lua/', 1, true)
      and info.currentline and info.currentline > 0 then
      out[#out + 1] = format('%s(%d): %s', src:sub(2), info.currentline, info.name or '<chunk>')
      if #out >= limit then break end
    end
  end
  return out
end

-- FLOPs of the ops PyTorch counts: products, convolutions, add and mul (from shapes and the result)
local function numel_of(s)
  local n = 1
  for i = 1, #s do n = n * s[i] end
  return n
end
local flop_rules = {
  mm = function(a) return 2 * a[1][1] * a[1][2] * (a[2][2] or 1) end,
  addmm = function(a) return 2 * a[2][1] * a[2][2] * (a[3][2] or 1) end,
  bmm = function(a) return 2 * a[1][1] * a[1][2] * a[1][3] * (a[2][3] or 1) end,
  baddbmm = function(a) return 2 * a[2][1] * a[2][2] * a[2][3] * (a[3][3] or 1) end,
  mv = function(a) return 2 * a[1][1] * (a[1][2] or 1) end,
  dot = function(a) return 2 * (a[1][1] or 0) end,
  matmul = function(a, out) return 2 * numel_of(out) * (a[1][#a[1]] or 1) end,
  conv1d = 'conv', conv2d = 'conv', conv3d = 'conv',
  add = function(_, out) return numel_of(out) end,
  mul = function(_, out) return numel_of(out) end,
}
local function flops_of(short, shapes, out)
  local r = flop_rules[short]
  if not r then return 0 end
  local ok, v = pcall(function()
    if r == 'conv' then
      local w = shapes[2]
      local k = 1
      for i = 3, #w do k = k * w[i] end
      return 2 * numel_of(out) * w[2] * k
    end
    return r(shapes, out)
  end)
  return ok and v or 0
end

local function finish(ev, parent, ok, ...)
  local t1 = now_us()
  ev.dur = t1 - ev.ts
  rec.cur = parent
  local events = rec.events
  events[#events + 1] = ev
  local o = rec.opts
  if o.profile_memory then
    ev.mem = tonumber(stats.live_bytes) - ev.mem0
    -- bytes allocated meanwhile (tensor heads included), from the count the garbage collector's
    -- pacing keeps (unknown when a collection reset it during the op), and so the bytes freed
    local d = tonumber(stats.bytes_since_gc) - ev.alloc0
    if d >= 0 then ev.allocated, ev.freed = d, d - ev.mem end
    local c = rec.counters
    c[#c + 1] = { t1, tonumber(stats.live_bytes) }
  end
  if ok and o.with_flops and ev.shapes then ev.flops = flops_of(ev.short, ev.shapes, shape_of((...))) end
  if not ok then error((...), 0) end
  return ...
end

local function begin(name, kind, short, n, ...)
  local r = rec
  local ev = { name = name, kind = kind, short = short, parent = r.cur, ts = now_us(), module = r.module }
  local o = r.opts
  if o.profile_memory then ev.mem0, ev.alloc0 = tonumber(stats.live_bytes), tonumber(stats.bytes_since_gc) end
  if o.record_shapes or o.with_flops then
    local s = {}
    for i = 1, n do s[i] = shape_of((select(i, ...))) end
    ev.shapes = s
  end
  if o.with_stack then ev.stack = user_stack(5) end
  r.cur = ev
  return ev
end

-- the operators' ops as PyTorch names them
local operator_ops = { __add = 'add', __sub = 'sub', __mul = 'mul', __div = 'div', __mod = 'remainder', __pow = 'pow',
  __unm = 'neg' }

local function op_wrapper(_, f, _, short)
  short = operator_ops[short] or short
  local name = 'aten::' .. short
  return function(...)
    local r = rec
    if not r then return f(...) end
    local parent = r.cur
    local ev = begin(name, 'op', short, select('#', ...), ...)
    return finish(ev, parent, pcall(f, ...))
  end
end

-- module scopes (with_modules): global forward hooks keep the path of the module running
local function module_path(m, parent)
  local r = rec
  local cache = r.paths
  local key = parent and parent.m
  local by = cache[m]
  if by and by[key or false] then return by[key or false] end
  local path
  if parent then
    local name
    for k, c in pairs(rawget(parent.m, '_modules') or {}) do if c == m then name = k break end end
    path = parent.path .. '.' .. (name or m:_get_name())
  else
    path = m:_get_name()
  end
  by = by or {}
  by[key or false] = path
  cache[m] = by
  return path
end

local function start_recording(prof)
  local o = prof.opts
  rec = { events = {}, cur = nil, t0 = now_us(), opts = o, paths = setmetatable({}, { __mode = 'k' }), counters = {},
    instants = {}, mstack = {} }
  prof._rec = rec
  prof._observer = observe.install(op_wrapper)
  if o.with_modules then
    local nn = torch.nn
    local mstack = rec.mstack
    prof._hooks = {
      nn.register_module_forward_pre_hook(function(m)
        local r = rec
        if not r then return end
        local parent = mstack[#mstack]
        local path = module_path(m, parent)
        local ev = { name = 'nn.Module: ' .. m:_get_name(), kind = 'module', ts = now_us(), module = path, m = m,
          path = path, saved_module = r.module }
        mstack[#mstack + 1] = ev
        r.module = path
      end),
      nn.register_module_forward_hook(function(m)
        local r = rec
        if not r then return end
        local ev = mstack[#mstack]
        if not ev or ev.m ~= m then return end
        mstack[#mstack] = nil
        ev.dur = now_us() - ev.ts
        r.module = ev.saved_module
        ev.m = nil
        r.events[#r.events + 1] = ev
      end, { always_call = true }),
    }
  end
  if o.with_jit then
    prof._jit_cb = function(what, tr, func, pc, otr, oex)
      if what ~= 'abort' or not rec then return end
      local info = require('jit.util').funcinfo(func, pc)
      local reason = tostring(otr)
      local ok, vmdef = pcall(require, 'jit.vmdef')
      if ok and type(otr) == 'number' and vmdef.traceerr[otr] then
        reason = vmdef.traceerr[otr]
        if oex ~= nil and reason:find('%%') then reason = reason:format(tostring(oex)) end
      end
      local inst = rec.instants
      inst[#inst + 1] = { name = 'LuaJIT trace abort', ts = now_us(),
        args = { trace = tr, reason = reason, location = info and info.loc or '?' } }
    end
    jit.attach(prof._jit_cb, 'trace')
  end
  if o.with_lua_samples then
    local ok, profile = pcall(require, 'jit.profile')
    if ok then
      profile.start('i' .. tostring(o.lua_sample_interval_ms or 1), function(thread)
        if not rec then return end
        local inst = rec.instants
        inst[#inst + 1] = { name = 'Lua sample', ts = now_us(), args = { stack = profile.dumpstack(thread, 'pl;', -12) } }
      end)
      prof._sampling = profile
    end
  end
end

local function stop_recording(prof)
  if not prof._rec then return end
  if prof._sampling then prof._sampling.stop(); prof._sampling = nil end
  if prof._jit_cb then jit.attach(prof._jit_cb); prof._jit_cb = nil end
  for _, h in ipairs(prof._hooks or {}) do h:remove() end
  prof._hooks = nil
  if prof._observer then prof._observer:remove(); prof._observer = nil end
  local r = prof._rec
  -- ranges still open (a step) end now
  local t = now_us()
  while r.cur do
    local ev = r.cur
    ev.dur = t - ev.ts
    r.events[#r.events + 1] = ev
    r.cur = ev.parent
  end
  rec = nil
  prof._rec = nil
  prof.recorded = r
end

------------------------------------------------------------------------------ record_function
-- record_function(name, fn, ...): runs fn(...) as a range of the profile (its results returned);
-- record_function(name) without fn: a handle, :__enter() and :__exit() (or :close())
local Range = {}
Range.__index = Range
function Range:__enter()
  if rec then
    self.parent = rec.cur
    self.ev = begin(self.name, 'range', nil, 0)
  end
  return self
end
function Range:__exit()
  if self.ev and rec then
    finish(self.ev, self.parent, true)
  end
  self.ev = nil
end
Range.close = Range.__exit

function P.record_function(name, fn, ...)
  if type(name) ~= 'string' then fail('profiler.record_function', 'expected a name (a string)') end
  if fn == nil then return setmetatable({ name = name }, Range) end
  if type(fn) ~= 'function' then fail('profiler.record_function', 'expected a function to run') end
  if not rec then return fn(...) end
  local parent = rec.cur
  local ev = begin(name, 'range', nil, 0)
  return finish(ev, parent, pcall(fn, ...))
end

------------------------------------------------------------------------------ events and averages
local Event = {}
Event.__index = Event
local function time_str(us)
  if us >= 1e6 then return format('%.3fs', us / 1e6) end
  if us >= 1e3 then return format('%.3fms', us / 1e3) end
  return format('%.3fus', us)
end
P._format_time = time_str
local function mem_str(n)
  local KB, MB, GB = 1024, 1024 * 1024, 1024 * 1024 * 1024
  if math.abs(n) >= GB then return format('%.2f Gb', n / GB) end
  if math.abs(n) >= MB then return format('%.2f Mb', n / MB) end
  if math.abs(n) >= KB then return format('%.2f Kb', n / KB) end
  return format('%d b', n)
end
P._format_memory = mem_str

local function shapes_str(s)
  if s == nil or s == '' then return '' end
  local parts = {}
  for i, sh in ipairs(s) do parts[i] = '[' .. concat(sh, ', ') .. ']' end
  return '[' .. concat(parts, ', ') .. ']'
end

local EventList = require('moontorch.class').class('torch.profiler.EventList')
P.EventList = EventList

-- The events (ops and ranges) as PyTorch builds them (EventList._build_tree): in order of their
-- start; an event's parent is the innermost one whose time holds it; an event alone inside a
-- parent of its name is merged into it (t:relu() calling torch.relu is one aten::relu); self time
-- and self memory are an event's less its children's. raw: {name, ts, dur, shapes, mem, flops,
-- module, stack, kind} each; t0 the start of the recording.
local function build(raw, t0)
  local evs = {}
  for _, ev in ipairs(raw) do
    if ev.kind ~= 'module' then
      evs[#evs + 1] = { name = ev.name, ts = ev.ts, te = ev.ts + ev.dur, dur = ev.dur, shapes = ev.shapes,
        mem = ev.mem or 0, flops = ev.flops or 0, module = ev.module, stack = ev.stack or {}, kind = ev.kind,
        children = {}, raw = ev }
    end
  end
  for i, e in ipairs(evs) do e.i = i end
  table.sort(evs, function(a, b)
    if a.ts ~= b.ts then return a.ts < b.ts end
    if a.te ~= b.te then return a.te > b.te end
    return a.i < b.i
  end)
  local stack = {}
  for _, e in ipairs(evs) do
    while #stack > 0 do
      local p = stack[#stack]
      if e.ts >= p.te or e.te > p.te then stack[#stack] = nil else break end
    end
    local p = stack[#stack]
    if p then
      e.parent = p
      p.children[#p.children + 1] = e
    end
    stack[#stack + 1] = e
  end
  -- merge an event into its parent of the same name when it is the parent's only child
  local removed = {}
  repeat
    local changed = false
    for _, e in ipairs(evs) do
      local p = e.parent
      if not removed[e] and p and p.name == e.name and #p.children == 1 then
        p.children = e.children
        for _, c in ipairs(e.children) do c.parent = p end
        removed[e] = true
        changed = true
      end
    end
  until not changed
  local out = {}
  for _, e in ipairs(evs) do
    if not removed[e] then
      local ct, cm = 0, 0
      for _, c in ipairs(e.children) do ct, cm = ct + c.dur, cm + c.mem end
      local ev = setmetatable({
        name = e.name, key = e.name, count = 1,
        cpu_time_total = e.dur, self_cpu_time_total = e.dur - ct,
        cpu_memory_usage = e.mem, self_cpu_memory_usage = e.mem - cm,
        input_shapes = e.shapes, flops = e.flops, module = e.module, stack = e.stack,
        time_range = { start = e.ts - t0, ['end'] = e.te - t0 }, kind = e.kind, _e = e,
      }, Event)
      ev.cpu_time, ev.self_cpu_time = ev.cpu_time_total, ev.self_cpu_time_total
      ev.cpu_parent = e.parent and true or nil
      out[#out + 1] = ev
    end
  end
  return setmetatable(out, EventList)
end

-- _event_list(events, {profile_memory=, with_flops=}): an EventList of events given by hand:
-- {name, start_us, end_us, input_shapes, cpu_memory_usage, flops} each (PyTorch's FunctionEvent)
function P._event_list(list, opts)
  local raw = {}
  for i, e in ipairs(list) do
    raw[i] = { name = e[1], ts = e[2], dur = e[3] - e[2], shapes = e[4], mem = e[5], flops = e[6], kind = 'op' }
  end
  local l = build(raw, 0)
  l._profile_memory = opts and opts.profile_memory or false
  l._with_flops = opts and opts.with_flops or false
  return l
end

-- key_averages{group_by_input_shape=false, group_by_stack_n=0, group_by_module=false}: the events
-- summed by name (and input shapes, first stack entries, module path)
function EventList:key_averages(opts)
  opts = opts or {}
  local by_shape = opts.group_by_input_shape or opts.group_by_input_shapes
  local stack_n = opts.group_by_stack_n or 0
  local by_module = opts.group_by_module
  local groups, order = {}, {}
  for _, ev in ipairs(self) do
    local key = ev.key
    if by_shape then key = key .. '\0' .. shapes_str(ev.input_shapes) end
    if stack_n > 0 then key = key .. '\0' .. concat({ unpack(ev.stack, 1, stack_n) }, '\0') end
    if by_module then key = key .. '\0' .. tostring(ev.module) end
    local g = groups[key]
    if not g then
      g = setmetatable({ key = ev.key, name = ev.key, count = 0, cpu_time_total = 0, self_cpu_time_total = 0,
        cpu_memory_usage = 0, self_cpu_memory_usage = 0, flops = 0,
        input_shapes = by_shape and ev.input_shapes or '', module = by_module and ev.module or nil,
        stack = stack_n > 0 and { unpack(ev.stack, 1, stack_n) } or {} }, Event)
      groups[key] = g
      order[#order + 1] = g
    end
    g.count = g.count + 1
    g.cpu_time_total = g.cpu_time_total + ev.cpu_time_total
    g.self_cpu_time_total = g.self_cpu_time_total + ev.self_cpu_time_total
    g.cpu_memory_usage = g.cpu_memory_usage + ev.cpu_memory_usage
    g.self_cpu_memory_usage = g.self_cpu_memory_usage + ev.self_cpu_memory_usage
    g.flops = g.flops + ev.flops
  end
  for _, g in ipairs(order) do
    g.cpu_time = g.cpu_time_total / g.count
    g.self_cpu_time = g.self_cpu_time_total / g.count
  end
  local l = setmetatable(order, EventList)
  l._profile_memory, l._with_flops = self._profile_memory, self._with_flops
  return l
end

-- filter(pred): the events pred(ev) keeps, as an EventList (beyond PyTorch)
function EventList:filter(pred)
  local out = {}
  for _, ev in ipairs(self) do if pred(ev) then out[#out + 1] = ev end end
  local l = setmetatable(out, EventList)
  l._profile_memory, l._with_flops = self._profile_memory, self._with_flops
  return l
end

function EventList:self_cpu_time_total()
  local s = 0
  for _, ev in ipairs(self) do s = s + ev.self_cpu_time_total end
  return s
end

-- total_average(): one event summing them all
function EventList:total_average()
  local t = setmetatable({ key = 'Total', name = 'Total', count = 0, cpu_time_total = 0, self_cpu_time_total = 0,
    cpu_memory_usage = 0, self_cpu_memory_usage = 0, flops = 0 }, Event)
  for _, ev in ipairs(self) do
    t.count = t.count + ev.count
    t.cpu_time_total = t.cpu_time_total + ev.cpu_time_total
    t.self_cpu_time_total = t.self_cpu_time_total + ev.self_cpu_time_total
    t.cpu_memory_usage = t.cpu_memory_usage + ev.cpu_memory_usage
    t.self_cpu_memory_usage = t.self_cpu_memory_usage + ev.self_cpu_memory_usage
    t.flops = t.flops + ev.flops
  end
  return t
end

local sort_keys = { cpu_time_total = true, self_cpu_time_total = true, cpu_time = true, self_cpu_time = true,
  count = true, cpu_memory_usage = true, self_cpu_memory_usage = true, flops = true }

-- table{sort_by=, row_limit=100, max_name_column_width=55, max_shapes_column_width=80, header=,
-- top_level_events_only=false}: PyTorch's table, columns right-aligned two spaces apart
function EventList:table(opts)
  opts = opts or {}
  local events = {}
  for i, ev in ipairs(self) do events[i] = ev end
  if #events == 0 then return '' end
  local sort_by = opts.sort_by
  if sort_by ~= nil then
    if not sort_keys[sort_by] then fail('profiler.table', ("unknown sort_by '%s'"):format(tostring(sort_by))) end
    local idx = {}
    for i, ev in ipairs(events) do idx[ev] = i end
    table.sort(events, function(a, b)
      if a[sort_by] ~= b[sort_by] then return a[sort_by] > b[sort_by] end
      return idx[a] < idx[b]
    end)
  end
  local row_limit = opts.row_limit or 100
  local max_name = opts.max_name_column_width or 55
  local max_shapes = opts.max_shapes_column_width or 80
  local profile_memory = self._profile_memory
  local with_flops = self._with_flops
  local name_w = 0
  local has_shapes, has_stack, has_module = false, false, false
  for _, ev in ipairs(events) do
    if #ev.key > name_w then name_w = #ev.key end
    if ev.input_shapes ~= nil and ev.input_shapes ~= '' and #ev.input_shapes > 0 then has_shapes = true end
    if ev.stack and #ev.stack > 0 then has_stack = true end
    if ev.module then has_module = true end
  end
  name_w = math.min(name_w + 4, max_name)
  local shapes_w = 0
  for _, ev in ipairs(events) do
    local s = shapes_str(ev.input_shapes)
    if has_shapes and s == '' then s = '[]' end
    if #s > shapes_w then shapes_w = #s end
  end
  shapes_w = math.min(shapes_w + 4, max_shapes)
  local W = 12
  local headers = { 'Name', 'Self CPU %', 'Self CPU', 'CPU total %', 'CPU total', 'CPU time avg' }
  local widths = { name_w, W, W, W, W, W }
  local aligns = { '>', '>', '>', '>', '>', '>' }
  local function col(h, w, a)
    headers[#headers + 1] = h
    widths[#widths + 1] = w
    aligns[#aligns + 1] = a or '>'
  end
  if profile_memory then col('CPU Mem', W); col('Self CPU Mem', W) end
  col('# of Calls', W)
  local module_w = 0
  if has_module then
    for _, ev in ipairs(events) do if ev.module and #ev.module > module_w then module_w = #ev.module end end
    col('Module', math.min(module_w + 4, max_name))
  end
  if has_shapes then col('Input Shapes', shapes_w) end
  local src_w = 0
  if has_stack then
    for _, ev in ipairs(events) do
      for _, e in ipairs(ev.stack or {}) do if #e > src_w then src_w = #e end end
    end
    src_w = math.min(src_w + 4, opts.max_src_column_width or 75)
    col('Source Location', src_w, '<')
  end
  local flops_scale, flops_header
  if with_flops then
    local minf
    for _, ev in ipairs(events) do if ev.flops > 0 and (not minf or ev.flops < minf) then minf = ev.flops end end
    if minf then
      local names = { 'FLOPs', 'KFLOPs', 'MFLOPs', 'GFLOPs', 'TFLOPs', 'PFLOPs' }
      local lf = math.max(0, math.min(math.log10(minf) / 3, #names - 1))
      flops_scale, flops_header = 10 ^ (math.floor(lf) * -3), names[math.floor(lf) + 1]
      col('Total ' .. flops_header, W)
    else
      with_flops = false
    end
  end
  local function row(cells)
    local parts = {}
    for j, c in ipairs(cells) do
      c = tostring(c)
      local pad = (' '):rep(math.max(0, widths[j] - #c))
      parts[j] = (aligns[j] == '<' and (c .. pad) or (pad .. c)) .. '  '
    end
    return concat(parts)
  end
  local sep = {}
  for j, w in ipairs(widths) do sep[j] = ('-'):rep(w) .. '  ' end
  sep = concat(sep)
  local total = 0
  for _, ev in ipairs(events) do total = total + ev.self_cpu_time_total end
  local function share(t)
    if total == 0 then return 'NaN' end
    return format('%.2f%%', t * 100 / total)
  end
  local out = {}
  local line_len = #sep - 2
  if opts.header then out[#out + 1] = ('='):rep(line_len); out[#out + 1] = opts.header end
  out[#out + 1] = sep
  out[#out + 1] = row(headers)
  out[#out + 1] = sep
  local n = 0
  for _, ev in ipairs(events) do
    if n == row_limit then break end
    if not (opts.top_level_events_only and ev.cpu_parent) then
      n = n + 1
      local name = ev.key
      if #name >= max_name - 3 then name = name:sub(1, max_name - 3) .. '...' end
      local cells = { name, share(ev.self_cpu_time_total), time_str(ev.self_cpu_time_total), share(ev.cpu_time_total),
        time_str(ev.cpu_time_total), time_str(ev.cpu_time_total / ev.count) }
      if profile_memory then
        cells[#cells + 1] = mem_str(ev.cpu_memory_usage)
        cells[#cells + 1] = mem_str(ev.self_cpu_memory_usage)
      end
      cells[#cells + 1] = ev.count
      if has_module then cells[#cells + 1] = (ev.module or ''):sub(1, math.min(module_w + 4, max_name)) end
      if has_shapes then
        local s = shapes_str(ev.input_shapes)
        if s == '' then s = '[]' end
        cells[#cells + 1] = s:sub(1, shapes_w)
      end
      if has_stack then cells[#cells + 1] = (ev.stack and ev.stack[1] or ''):sub(-src_w) end
      if with_flops then
        cells[#cells + 1] = ev.flops > 0 and format('%8.3f', ev.flops * flops_scale) or '--'
      end
      out[#out + 1] = row(cells)
      if has_stack then
        for k = 2, math.min(#(ev.stack or {}), 5) do
          local blank = {}
          for j = 1, #headers - (with_flops and 2 or 1) do blank[j] = '' end
          blank[#blank + 1] = ev.stack[k]:sub(-src_w)
          if with_flops then blank[#blank + 1] = '' end
          out[#out + 1] = row(blank)
        end
      end
    end
  end
  out[#out + 1] = sep
  out[#out + 1] = 'Self CPU time total: ' .. time_str(total)
  return concat(out, '\n') .. '\n'
end
EventList.__tostring = function(l) return l:table() end

------------------------------------------------------------------------------ the profile
local Profile = require('moontorch.class').class('torch.profiler.profile')
P.Profile = Profile

-- profile(opts [, fn]): opts {activities=, schedule=, on_trace_ready=, record_shapes=,
-- profile_memory=, with_stack=, with_modules=, with_flops=, with_jit=, with_lua_samples=}; with fn:
-- starts, runs fn(prof), stops (also when fn raises), returns prof
function P.profile(opts, fn)
  opts = opts or {}
  if type(opts) ~= 'table' then fail('profiler.profile', 'expected an options table') end
  for _, a in ipairs(opts.activities or { 'CPU' }) do
    if a == 'CUDA' then
      fail('profiler.profile', 'ProfilerActivity.CUDA: moontorch was built without CUDA')
    elseif a ~= 'CPU' then
      fail('profiler.profile', ('unknown activity %s'):format(tostring(a)))
    end
  end
  local prof = setmetatable({ opts = opts, schedule = opts.schedule, on_trace_ready = opts.on_trace_ready,
    step_num = 0, recorded = nil }, Profile)
  if fn == nil then return prof end
  prof:start()
  local res = { pcall(fn, prof) }
  prof:stop()
  if not res[1] then error(res[2], 0) end
  return prof
end

local function action_of(prof)
  if not prof.schedule then return A.RECORD end
  return prof.schedule(prof.step_num)
end

local function enter_step(prof)
  if rec and prof.schedule then
    prof._step_parent = rec.cur
    prof._step_ev = begin('ProfilerStep#' .. prof.step_num, 'range', nil, 0)
  end
end
local function leave_step(prof)
  if prof._step_ev and rec then finish(prof._step_ev, prof._step_parent, true) end
  prof._step_ev = nil
end

local function trace_ready(prof)
  if prof.on_trace_ready then prof.on_trace_ready(prof) end
end

function Profile:start()
  if self.started then fail('profiler.profile', 'the profiler is already running') end
  if rec then fail('profiler.profile', 'another profiler is already running') end
  self.started = true
  self.current_action = action_of(self)
  if self.current_action == A.RECORD or self.current_action == A.RECORD_AND_SAVE then
    start_recording(self)
    enter_step(self)
  end
  return self
end
Profile.__enter = Profile.start

function Profile:stop()
  if not self.started then return self end
  leave_step(self)
  local was = self.current_action
  stop_recording(self)
  self.started = false
  if was == A.RECORD or was == A.RECORD_AND_SAVE then trace_ready(self) end
  return self
end
Profile.__exit = Profile.stop

-- step(): the end of a training step: the schedule decides what the next one records
function Profile:step()
  if not self.started then return end
  local prev = self.current_action
  leave_step(self)
  self.step_num = self.step_num + 1
  local cur = action_of(self)
  self.current_action = cur
  local recording = prev == A.RECORD or prev == A.RECORD_AND_SAVE
  local will = cur == A.RECORD or cur == A.RECORD_AND_SAVE
  if prev == A.RECORD_AND_SAVE then
    stop_recording(self)
    trace_ready(self)
    recording = false
  end
  if recording and not will then
    stop_recording(self)
    trace_ready(self)
  elseif not recording and will then
    start_recording(self)
  end
  if will then enter_step(self) end
end

-- events(): the recorded events (ops, ranges), each with its times, memory, shapes, module, stack
function Profile:events()
  if not self.recorded then fail('profiler.profile', 'nothing was recorded (the profile has not stopped recording)') end
  local l = build(self.recorded.events, self.recorded.t0)
  l._profile_memory = self.opts.profile_memory and true or false
  l._with_flops = self.opts.with_flops and true or false
  return l
end

function Profile:key_averages(opts) return self:events():key_averages(opts) end

------------------------------------------------------------------------------ Chrome trace
local function json_str(s)
  return '"' .. tostring(s):gsub('[%c"\\]', function(c)
    if c == '"' then return '\\"' end
    if c == '\\' then return '\\\\' end
    if c == '\n' then return '\\n' end
    if c == '\t' then return '\\t' end
    return format('\\u%04x', c:byte())
  end) .. '"'
end
local function json(v)
  local tv = type(v)
  if tv == 'string' then return json_str(v) end
  if tv == 'number' then
    if v ~= v or v == math.huge or v == -math.huge then return 'null' end
    if v % 1 == 0 and math.abs(v) < 2 ^ 53 then return format('%d', v) end
    return format('%.3f', v)
  end
  if tv == 'boolean' then return tostring(v) end
  if tv == 'table' then
    if #v > 0 or next(v) == nil then
      local parts = {}
      for i = 1, #v do parts[i] = json(v[i]) end
      return '[' .. concat(parts, ', ') .. ']'
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    local parts = {}
    for i, k in ipairs(keys) do parts[i] = json_str(k) .. ': ' .. json(v[k]) end
    return '{' .. concat(parts, ', ') .. '}'
  end
  return 'null'
end
P._json = json

local function getpid()
  local f = io.open('/proc/self/stat', 'r')
  if not f then return 0 end
  local pid = tonumber((f:read('*l') or ''):match('^(%d+)'))
  f:close()
  return pid or 0
end

-- the trace as Trace Event JSON text: complete events (ph "X") for ops, ranges and module scopes
-- (nested by time), counters (ph "C") of the bytes tensors hold, instant events (ph "i") for
-- LuaJIT trace aborts and Lua samples
function Profile:chrome_trace()
  local r = self.recorded
  if not r then fail('profiler.export_chrome_trace', 'nothing was recorded') end
  local pid = getpid()
  local out = {}
  out[#out + 1] = json({ name = 'process_name', ph = 'M', pid = pid, tid = 1, args = { name = 'moontorch' } })
  out[#out + 1] = json({ name = 'thread_name', ph = 'M', pid = pid, tid = 1, args = { name = 'main thread' } })
  local evs = {}
  for _, ev in ipairs(r.events) do evs[#evs + 1] = ev end
  table.sort(evs, function(a, b) if a.ts ~= b.ts then return a.ts < b.ts end return a.dur > b.dur end)
  for _, ev in ipairs(evs) do
    local args = {}
    if ev.shapes then args['Input Dims'] = ev.shapes end
    if ev.module then args.Module = ev.module end
    if ev.stack and #ev.stack > 0 then args['Call stack'] = concat(ev.stack, ';') end
    if ev.mem then args['Memory (bytes)'] = ev.mem end
    if ev.allocated then args['Allocated (bytes)'], args['Freed (bytes)'] = ev.allocated, ev.freed end
    if ev.flops and ev.flops > 0 then args.FLOPs = ev.flops end
    local cat = ev.kind == 'op' and 'cpu_op' or ev.kind == 'module' and 'python_function' or 'user_annotation'
    out[#out + 1] = json({ name = ev.name, cat = cat, ph = 'X', ts = ev.ts - r.t0, dur = ev.dur, pid = pid, tid = 1,
      args = args })
  end
  for _, c in ipairs(r.counters) do
    out[#out + 1] = json({ name = 'CPU Memory', ph = 'C', ts = c[1] - r.t0, pid = pid, tid = 1,
      args = { Allocated = c[2] } })
  end
  for _, i in ipairs(r.instants) do
    out[#out + 1] = json({ name = i.name, ph = 'i', s = 't', ts = i.ts - r.t0, pid = pid, tid = 1, args = i.args })
  end
  return '{"traceEvents": [\n' .. concat(out, ',\n') .. '\n], "displayTimeUnit": "ms", "traceName": "moontorch"}\n'
end

-- export_chrome_trace(path): the trace written to path (gzip'd when path ends in .gz)
function Profile:export_chrome_trace(path)
  if type(path) ~= 'string' then fail('profiler.export_chrome_trace', 'path must be a string') end
  local text = self:chrome_trace()
  if path:match('%.gz$') then
    local q = "'" .. path:gsub("'", [['\'']]) .. "'"
    local p = io.popen('gzip -c > ' .. q, 'w')
    if not p then fail('profiler.export_chrome_trace', 'cannot run gzip') end
    p:write(text)
    local ok = p:close()
    if not ok then fail('profiler.export_chrome_trace', ('gzip could not write %s'):format(path)) end
    return path
  end
  local f, err = io.open(path, 'w')
  if not f then fail('profiler.export_chrome_trace', ('cannot open %s: %s'):format(path, tostring(err))) end
  f:write(text)
  f:close()
  return path
end

function Profile:self_cpu_time_total() return self:events():self_cpu_time_total() end

-- is a profile recording now
function P._is_recording() return rec ~= nil end

return P
