-- moontorch.cuda (torch.cuda): CUDA's devices, streams, events and memory, each answered by the C
-- core's registry of backends (core/ops/device.c, core/ops/stream.c), never decided here: false and
-- 0 where this build has no CUDA backend or the machine no GPU, never a crash; a call that needs a
-- device is an error saying why there is none ("moontorch was built without CUDA", "CUDA device 1
-- is not available (1 device)"). The CUDA backend itself is core/gpu/; specs run all of this on a
-- fake device (MOONTORCH_FAKE_CUDA, core/fake/fake.c).
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local dtype = require 'moontorch.dtype'

local C = core.C
local fail = core.fail
local type, tonumber, tostring, setmetatable = type, tonumber, tostring, setmetatable

local CUDA = dtype.device_type_ids.cuda
local M = {}

-- Is there a CUDA device to use? How many?
function M.is_available() return C.mt_device_count(CUDA) > 0 end
function M.device_count() return C.mt_device_count(CUDA) end
-- was this build made with a CUDA backend (whether or not this machine has a GPU)?
function M.is_built() return C.mt_device_backend(CUDA) ~= nil end

-- a device argument (an index, a device, 'cuda:1'; nil: the current device) as a checked device
-- object: the C core says whether it is there
local function device_of(d, op)
  if d == nil then d = dtype.device('cuda')
  elseif type(d) == 'number' then
    local ok, r = pcall(dtype.device, 'cuda', d)
    if not ok then fail(op, (tostring(r):gsub('^moontorch%.device: ', ''))) end
    d = r
  else
    local ok, r = pcall(dtype.device, d)
    if not ok then fail(op, (tostring(r):gsub('^moontorch%.device: ', ''))) end
    d = r
  end
  if d.type ~= 'cuda' then fail(op, ('expected a CUDA device, got %s'):format(tostring(d))) end
  T.device_arg(d, op)
  return d
end
M._device_of = device_of

function M.current_device()
  device_of(nil, 'cuda.current_device')
  return C.mt_device_current(CUDA)
end
function M.set_device(d)
  if type(d) == 'number' and d < 0 then return end -- PyTorch: a negative index changes nothing
  local dev = device_of(d, 'cuda.set_device')
  if C.mt_device_set_current(dev._c) ~= 0 then T.raise_as('cuda.set_device') end
end
-- torch.cuda.device(d, fn): fn() with d the current device, the previous one current again after
-- (PyTorch's `with torch.cuda.device(d):`); returns fn's results
function M.device(d, fn)
  local dev = device_of(d, 'cuda.device')
  if type(fn) ~= 'function' then fail('cuda.device', 'expected a function to run on the device') end
  local prev = C.mt_device_current(CUDA)
  M.set_device(dev.index or prev)
  local r = table.pack(pcall(fn))
  M.set_device(prev)
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, r.n)
end
-- wait until the work queued on the device (nil: the current one) is done
function M.synchronize(d)
  local dev = device_of(d, 'cuda.synchronize')
  if C.mt_synchronize(dev._c) ~= 0 then T.raise_as('cuda.synchronize') end
end

------------------------------------------------------------------------------ memory
local mstats = ffi.new('mt_memory_stats')
local function stats_of(d, op)
  local dev = device_of(d, op)
  if C.mt_memory_stats_of(dev._c, mstats) ~= 0 then T.raise_as(op) end
  return mstats, dev
end
-- bytes of live tensors on the device, and their peak since the last reset
function M.memory_allocated(d) return tonumber(stats_of(d, 'cuda.memory_allocated').allocated) end
function M.max_memory_allocated(d) return tonumber(stats_of(d, 'cuda.max_memory_allocated').peak_allocated) end
-- bytes the backend holds from the device (its cache included), and their peak
local function reserved(s) return tonumber(s.reserved >= 0 and s.reserved or s.allocated) end
function M.memory_reserved(d) return reserved(stats_of(d, 'cuda.memory_reserved')) end
function M.max_memory_reserved(d)
  local s = stats_of(d, 'cuda.max_memory_reserved')
  return tonumber(s.peak_reserved >= 0 and s.peak_reserved or s.peak_allocated)
end
M.memory_cached, M.max_memory_cached = M.memory_reserved, M.max_memory_reserved
function M.reset_peak_memory_stats(d)
  local dev = device_of(d, 'cuda.reset_peak_memory_stats')
  if C.mt_memory_reset_peak(dev._c) ~= 0 then T.raise_as('cuda.reset_peak_memory_stats') end
end
M.reset_max_memory_allocated = M.reset_peak_memory_stats
-- the device's free and total bytes
function M.mem_get_info(d)
  local s = stats_of(d, 'cuda.mem_get_info')
  return tonumber(s.free_bytes), tonumber(s.total_bytes)
end
-- give the backend's cached, unused memory back to every device (dead tensors are collected first)
function M.empty_cache()
  if not M.is_available() then return end
  T.collect()
  for i = 0, M.device_count() - 1 do
    if C.mt_memory_empty_cache(dtype.device('cuda', i)._c) ~= 0 then T.raise_as('cuda.empty_cache') end
  end
end
-- PyTorch's keys for what moontorch counts
function M.memory_stats(d)
  local s = stats_of(d, 'cuda.memory_stats')
  return {
    ['allocated_bytes.all.current'] = tonumber(s.allocated),
    ['allocated_bytes.all.peak'] = tonumber(s.peak_allocated),
    ['allocation.all.allocated'] = tonumber(s.allocations),
    ['allocation.all.freed'] = tonumber(s.frees),
    ['allocation.all.current'] = tonumber(s.allocations - s.frees),
    ['reserved_bytes.all.current'] = reserved(s),
    ['reserved_bytes.all.peak'] = tonumber(s.peak_reserved >= 0 and s.peak_reserved or s.peak_allocated),
  }
end
local function mib(n) return ('%10.1f MiB'):format(n / 2 ^ 20) end
function M.memory_summary(d)
  local s, dev = stats_of(d, 'cuda.memory_summary')
  local lines = {
    ('moontorch CUDA memory summary, device %d (%s backend)'):format(dev.index or C.mt_device_current(CUDA),
      ffi.string(C.mt_device_backend(CUDA))),
    ('  allocated (live tensors): %s   peak %s'):format(mib(tonumber(s.allocated)), mib(tonumber(s.peak_allocated))),
    ('  reserved (with the cache): %s   peak %s'):format(mib(reserved(s)),
      mib(tonumber(s.peak_reserved >= 0 and s.peak_reserved or s.peak_allocated))),
    ('  tensors allocated: %d, freed: %d, live: %d'):format(tonumber(s.allocations), tonumber(s.frees),
      tonumber(s.allocations - s.frees)),
    ('  next collection of dead tensors at: %s'):format(mib(tonumber(s.gc_limit))),
  }
  if s.total_bytes >= 0 then
    lines[#lines + 1] = ('  device: %s free of %s'):format(mib(tonumber(s.free_bytes)), mib(tonumber(s.total_bytes)))
  end
  return table.concat(lines, '\n')
end

------------------------------------------------------------------------------ streams
-- torch.cuda.Stream([device] [, {priority=}]): a queue of work on a device
local Stream, StreamMT = {}, nil
local function wrap_stream(p, dev)
  return setmetatable({ _s = ffi.gc(p, C.mt_stream_free), device = dev }, StreamMT)
end
local sp = ffi.new('mt_stream *[1]')
StreamMT = {
  __index = Stream,
  __eq = function(a, b)
    return a._s._device_index == b._s._device_index and a._s._handle == b._s._handle
  end,
  __tostring = function(s)
    return ('<torch.cuda.Stream device=%s cuda_stream=%s>'):format(tostring(s.device),
      tostring(tonumber(ffi.cast('uintptr_t', s._s._handle))))
  end,
}
M.Stream = setmetatable({}, {
  __call = function(_, d, opts)
    if type(d) == 'table' and not dtype.is_device(d) then d, opts = nil, d end
    local dev = device_of(d, 'cuda.Stream')
    if C.mt_stream_new(dev._c, opts and opts.priority or 0, sp) ~= 0 then T.raise_as('cuda.Stream') end
    return wrap_stream(sp[0], dtype.device('cuda', sp[0]._device_index))
  end,
  __index = Stream,
  __tostring = function() return 'torch.cuda.Stream' end,
})
function Stream:synchronize()
  if C.mt_stream_synchronize(self._s) ~= 0 then T.raise_as('cuda.Stream.synchronize') end
end
function Stream:query() return C.mt_stream_query(self._s) ~= 0 end
function Stream:wait_event(e) e:wait(self) end
function Stream:wait_stream(other) self:wait_event(other:record_event()) end
function Stream:record_event(e)
  e = e or M.Event()
  e:record(self)
  return e
end
function M.current_stream(d)
  local dev = device_of(d, 'cuda.current_stream')
  if C.mt_stream_current(dev._c, sp) ~= 0 then T.raise_as('cuda.current_stream') end
  return wrap_stream(sp[0], dtype.device('cuda', sp[0]._device_index))
end
function M.default_stream(d)
  local dev = device_of(d, 'cuda.default_stream')
  if C.mt_stream_default(dev._c, sp) ~= 0 then T.raise_as('cuda.default_stream') end
  return wrap_stream(sp[0], dtype.device('cuda', sp[0]._device_index))
end
function M.set_stream(s)
  if getmetatable(s) ~= StreamMT then fail('cuda.set_stream', 'expected a torch.cuda.Stream') end
  if C.mt_stream_set_current(s._s) ~= 0 then T.raise_as('cuda.set_stream') end
end
-- torch.cuda.stream(s, fn): fn() with s its device's current stream, the previous one after
-- (PyTorch's `with torch.cuda.stream(s):`); returns fn's results
function M.stream(s, fn)
  if type(fn) ~= 'function' then fail('cuda.stream', 'expected a function to run on the stream') end
  if s == nil then return fn() end
  local prev = M.current_stream(s.device)
  M.set_stream(s)
  local r = table.pack(pcall(fn))
  M.set_stream(prev)
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, r.n)
end

------------------------------------------------------------------------------ events
-- torch.cuda.Event({enable_timing=}): a point in a stream's work, on the current device
local Event = {}
local EventMT = { __index = Event, __tostring = function() return '<torch.cuda.Event>' end }
local ep = ffi.new('mt_event *[1]')
local msp = ffi.new('double[1]')
M.Event = setmetatable({}, {
  __call = function(_, opts)
    local dev = device_of(nil, 'cuda.Event')
    if C.mt_event_new(dev._c, (opts and opts.enable_timing) and C.MT_EVENT_TIMING or 0, ep) ~= 0 then
      T.raise_as('cuda.Event')
    end
    return setmetatable({ _e = ffi.gc(ep[0], C.mt_event_free), device = dtype.device('cuda', ep[0]._device_index) },
      EventMT)
  end,
  __index = Event,
  __tostring = function() return 'torch.cuda.Event' end,
})
function Event:record(s)
  if C.mt_event_record(self._e, s and s._s or nil) ~= 0 then T.raise_as('cuda.Event.record') end
end
function Event:wait(s)
  if C.mt_event_wait(self._e, s and s._s or nil) ~= 0 then T.raise_as('cuda.Event.wait') end
end
function Event:synchronize()
  if C.mt_event_synchronize(self._e) ~= 0 then T.raise_as('cuda.Event.synchronize') end
end
function Event:query() return C.mt_event_query(self._e) ~= 0 end
-- milliseconds from this event to `e` (both recorded, with enable_timing)
function Event:elapsed_time(e)
  if C.mt_event_elapsed_ms(self._e, e._e, msp) ~= 0 then T.raise_as('cuda.Event.elapsed_time') end
  return msp[0]
end

------------------------------------------------------------------------------ the devices' properties (core/gpu/)
local props = ffi.new('mt_cuda_properties')
-- torch.cuda.get_device_properties(d): { name=, major=, minor=, multi_processor_count=, total_memory= }
function M.get_device_properties(d)
  local dev = device_of(d, 'cuda.get_device_properties')
  if C.mt_cuda_device_properties(dev.index or C.mt_device_current(CUDA), props) ~= 0 then
    T.raise_as('cuda.get_device_properties')
  end
  return { name = ffi.string(props.name), major = props.major, minor = props.minor,
    multi_processor_count = props.multi_processor_count, total_memory = tonumber(props.total_memory) }
end
function M.get_device_name(d) return M.get_device_properties(d).name end
function M.get_device_capability(d)
  local p = M.get_device_properties(d)
  return { p.major, p.minor }
end
-- the runtime behind the devices: 'cuda' (a GPU), 'emulator' (MOONTORCH_CUDA_EMULATE=1: the CPU emulator
-- of a CUDA device that runs the same kernels), nil when there is no device
function M.runtime()
  local r = ffi.string(C.mt_cuda_runtime())
  return r ~= '' and r or nil
end

-- Random numbers (s7-numconv): each CUDA device has its own default generator (core/ops/generator.c;
-- its engine is the backend's: PyTorch's Philox on a real GPU). torch.manual_seed seeds them all already.
-- As in PyTorch, the seeding calls do nothing where there is no CUDA device (PyTorch queues them until
-- CUDA starts); reading or setting a state needs the device.
local function rng() return require 'moontorch.ops.random' end
local function seed_arg(s, op)
  if type(s) ~= 'number' and type(s) ~= 'cdata' then fail(op, 'seed must be an integer, got ' .. type(s)) end
  return s
end
function M.manual_seed(s)
  seed_arg(s, 'cuda.manual_seed')
  if M.is_available() then rng().device_generator(device_of(nil, 'cuda.manual_seed'), 'cuda.manual_seed'):manual_seed(s) end
end
function M.manual_seed_all(s)
  seed_arg(s, 'cuda.manual_seed_all')
  for i = 0, M.device_count() - 1 do
    rng().device_generator(device_of(i, 'cuda.manual_seed_all'), 'cuda.manual_seed_all'):manual_seed(s)
  end
end
-- a fresh seed for the current device (all devices): returns nothing, as PyTorch's
function M.seed()
  if M.is_available() then rng().device_generator(device_of(nil, 'cuda.seed'), 'cuda.seed'):seed() end
end
function M.seed_all()
  if M.device_count() == 0 then return end
  local s = rng().device_generator(device_of(0, 'cuda.seed_all'), 'cuda.seed_all'):seed()
  for i = 1, M.device_count() - 1 do
    rng().device_generator(device_of(i, 'cuda.seed_all'), 'cuda.seed_all'):manual_seed(s)
  end
end
function M.initial_seed()
  return rng().device_generator(device_of(nil, 'cuda.initial_seed'), 'cuda.initial_seed'):initial_seed()
end
-- get_rng_state([device]) -> a uint8 CPU tensor; set_rng_state(t [, device])
function M.get_rng_state(d)
  return rng().device_generator(device_of(d, 'cuda.get_rng_state'), 'cuda.get_rng_state'):get_state()
end
function M.set_rng_state(t, d)
  rng().device_generator(device_of(d, 'cuda.set_rng_state'), 'cuda.set_rng_state'):set_state(t)
end
function M.get_rng_state_all()
  local r = {}
  for i = 0, M.device_count() - 1 do r[i + 1] = M.get_rng_state(i) end
  return r
end
function M.set_rng_state_all(states)
  for i, t in ipairs(states) do M.set_rng_state(t, i - 1) end
end
-- torch.cuda.default_generators: the devices' default generators, 1-based as Lua lists are
setmetatable(M, { __index = function(_, k)
  if k == 'default_generators' then
    local r = {}
    for i = 0, M.device_count() - 1 do r[i + 1] = rng().device_generator(device_of(i, 'cuda.default_generators')) end
    return r
  end
end })

-- torch.backends.cuda.matmul.allow_tf32 (false by default, as PyTorch's): float32 products may use TF32
M._backends = {
  matmul = setmetatable({ _lazy = { allow_tf32 = true } }, {
    __index = function(_, k) if k == 'allow_tf32' then return C.mt_cuda_allow_tf32(-1) ~= 0 end end,
    __newindex = function(_, k, v)
      if k ~= 'allow_tf32' then fail('backends.cuda.matmul', 'no setting ' .. tostring(k)) end
      C.mt_cuda_allow_tf32(v and 1 or 0)
    end,
  }),
  is_built = M.is_built,
}

return M
