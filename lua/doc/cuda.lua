-- The docs of torch.cuda (moontorch.doc: lua/doc/init.lua says how an entry is written). Every
-- function asks the C core's registry (lua/cuda.lua); the examples run with or without a GPU.
local doc = ...

doc.section 'Devices'
doc { 'torch.cuda.is_available() -> boolean',
  does = 'Whether a CUDA device can be used (false in a build without CUDA, and on a machine without a driver or a GPU).',
  ex = 'print(type(torch.cuda.is_available()))  --> boolean' }
doc { 'torch.cuda.device_count() -> number',
  does = 'The number of CUDA devices (0 in a build without CUDA).',
  ex = 'print(torch.cuda.device_count() >= 0)  --> true' }
doc { 'torch.cuda.is_built() -> boolean',
  does = 'Whether this build has a CUDA backend (core/gpu/), whether or not this machine has a GPU.',
  pt = 'torch.backends.cuda.is_built',
  ex = 'print(type(torch.cuda.is_built()))  --> boolean' }
doc { 'torch.cuda.current_device() -> number', 'torch.cuda.set_device(device)',
  does = 'The index of the current CUDA device (where torch.device(\'cuda\') puts tensors), and setting it (an index, a device or \'cuda:N\'); an error saying why where there is no such device.',
  ex = 'print(pcall(torch.cuda.current_device) == torch.cuda.is_available())  --> true' }
doc { 'torch.cuda.device(device, fn) -> ...',
  does = 'fn() with `device` the current device, the previous one current again after (PyTorch\'s `with torch.cuda.device(d):`); fn\'s results.',
  ex = 'if torch.cuda.is_available() then print(torch.cuda.device(0, function() return torch.cuda.current_device() end)) else print(0) end  --> 0' }
doc { 'torch.cuda.synchronize([device])',
  does = 'Wait until the work queued on the device (the current one) is done.',
  ex = 'if torch.cuda.is_available() then torch.cuda.synchronize() end' }

doc.section 'Memory'
doc { 'torch.cuda.memory_allocated([device]) -> number', 'torch.cuda.max_memory_allocated([device]) -> number',
  does = 'Bytes of the live tensors on the device, and their peak since the last reset. Dead tensors are collected when a device\'s bytes grow, as the host\'s are.',
  ex = 'print(not torch.cuda.is_available() or torch.cuda.memory_allocated() >= 0)  --> true' }
doc { 'torch.cuda.memory_reserved([device]) -> number', 'torch.cuda.max_memory_reserved([device]) -> number',
  does = 'Bytes the backend holds from the device (its cache included), and their peak.',
  ex = 'print(not torch.cuda.is_available() or torch.cuda.memory_reserved() >= torch.cuda.memory_allocated())  --> true' }
doc.alias('torch.cuda.memory_cached', 'torch.cuda.memory_reserved')
doc.alias('torch.cuda.max_memory_cached', 'torch.cuda.max_memory_reserved')
doc { 'torch.cuda.reset_peak_memory_stats([device])',
  does = 'The peaks start again from the current counts.',
  ex = 'if torch.cuda.is_available() then torch.cuda.reset_peak_memory_stats() end' }
doc.alias('torch.cuda.reset_max_memory_allocated', 'torch.cuda.reset_peak_memory_stats')
doc { 'torch.cuda.mem_get_info([device]) -> free, total',
  does = 'The device\'s free and total bytes.',
  ex = 'if torch.cuda.is_available() then local f, t = torch.cuda.mem_get_info(); print(f <= t) else print(true) end  --> true' }
doc { 'torch.cuda.memory_stats([device]) -> table', 'torch.cuda.memory_summary([device]) -> string',
  does = 'The counts under PyTorch\'s keys (allocated_bytes.all.current, reserved_bytes.all.peak, allocation.all.allocated, ...), and a summary as text.',
  ex = 'if torch.cuda.is_available() then print(type(torch.cuda.memory_stats()[\'allocated_bytes.all.current\'])) else print(\'number\') end  --> number' }
doc { 'torch.cuda.empty_cache()',
  does = 'Collect dead tensors, then have the backend give its cached, unused memory back to every device (nothing to do without CUDA).',
  ex = 'torch.cuda.empty_cache()' }

doc.section 'Streams and events'
doc { 'torch.cuda.Stream([device] [, {priority=}]) -> Stream',
  does = 'A queue of work on a device (the current one); kernels run on their device\'s current stream.',
  ex = 'if torch.cuda.is_available() then print(torch.cuda.Stream():query()) else print(true) end  --> true' }
doc { 'torch.cuda.Stream:synchronize()', 'torch.cuda.Stream:query() -> boolean',
  'torch.cuda.Stream:wait_event(event)', 'torch.cuda.Stream:wait_stream(stream)',
  'torch.cuda.Stream:record_event([event]) -> Event',
  does = 'Wait for its work / whether it is done / have its later work wait for an event or for another stream\'s work so far / record an event on it.',
  ex = 'if torch.cuda.is_available() then local s = torch.cuda.Stream(); s:synchronize(); print(s:query()) else print(true) end  --> true' }
doc { 'torch.cuda.current_stream([device]) -> Stream', 'torch.cuda.default_stream([device]) -> Stream',
  'torch.cuda.set_stream(stream)',
  does = 'The device\'s current stream, its default stream, and making a stream its device\'s current one.',
  ex = 'if torch.cuda.is_available() then print(torch.cuda.current_stream() == torch.cuda.default_stream()) else print(true) end  --> true' }
doc { 'torch.cuda.stream(stream, fn) -> ...',
  does = 'fn() with `stream` its device\'s current stream, the previous one after (PyTorch\'s `with torch.cuda.stream(s):`); fn\'s results.',
  ex = 'if torch.cuda.is_available() then local s = torch.cuda.Stream(); print(torch.cuda.stream(s, function() return torch.cuda.current_stream() == s end)) else print(true) end  --> true' }
doc { 'torch.cuda.Event([{enable_timing=}]) -> Event',
  does = 'A point in a stream\'s work on the current device, to wait for or to time.',
  ex = 'if torch.cuda.is_available() then print(torch.cuda.Event():query()) else print(true) end  --> true' }
doc { 'torch.cuda.Event:record([stream])', 'torch.cuda.Event:wait([stream])', 'torch.cuda.Event:synchronize()',
  'torch.cuda.Event:query() -> boolean', 'torch.cuda.Event:elapsed_time(end) -> number',
  does = 'Record it on a stream (the current one) / have a stream wait for it / wait for it / whether it is done / the milliseconds from it to `end` (both made with enable_timing).',
  ex = 'if torch.cuda.is_available() then local a, b = torch.cuda.Event({enable_timing = true}), torch.cuda.Event({enable_timing = true}); a:record(); b:record(); b:synchronize(); print(a:elapsed_time(b) >= 0) else print(true) end  --> true' }

doc.section 'The device (core/gpu/)'
doc { 'torch.cuda.get_device_properties([device]) -> table', 'torch.cuda.get_device_name([device]) -> string',
  'torch.cuda.get_device_capability([device]) -> {major, minor}',
  does = 'The device\'s name, compute capability, multiprocessors and memory ({name=, major=, minor=, multi_processor_count=, total_memory=}); "moontorch CPU emulator" under MOONTORCH_CUDA_EMULATE=1. An error saying why where there is no such device.',
  ex = 'print(not torch.cuda.is_available() or #torch.cuda.get_device_name() > 0)  --> true' }
doc { 'torch.cuda.runtime() -> string|nil', pt = false,
  does = 'What runs the CUDA backend: \'cuda\' (NVIDIA\'s runtime on a GPU), \'emulator\' (the CPU emulator of a CUDA device that CI runs the CUDA suite on: MOONTORCH_CUDA_EMULATE=1), nil without a device. moontorch\'s own.',
  ex = 'print(torch.cuda.runtime() == nil or type(torch.cuda.runtime()) == "string")  --> true' }

doc.section 'Random numbers'
doc { 'torch.cuda.manual_seed(seed)', 'torch.cuda.manual_seed_all(seed)',
  does = 'Seed the current CUDA device\'s default generator (every device\'s). Nothing where there is no CUDA device, as PyTorch (which queues it until CUDA starts); torch.manual_seed seeds every device\'s already.',
  ex = 'torch.cuda.manual_seed(0)' }
doc { 'torch.cuda.seed()', 'torch.cuda.seed_all()', 'torch.cuda.initial_seed() -> number',
  does = 'Seed the current device\'s (every device\'s) default generator from a fresh random number; the seed the current device\'s generator started from.',
  ex = 'if torch.cuda.is_available() then torch.cuda.seed() end' }
doc { 'torch.cuda.get_rng_state([device]) -> tensor', 'torch.cuda.set_rng_state(state[, device])',
  'torch.cuda.get_rng_state_all() -> {tensor}', 'torch.cuda.set_rng_state_all(states)',
  does = 'The state of a CUDA device\'s default generator as a uint8 CPU tensor (its engine\'s layout), and setting it back; an error saying why where there is no such device.',
  ex = 'if torch.cuda.is_available() then torch.cuda.set_rng_state(torch.cuda.get_rng_state()) end' }
doc { 'torch.cuda.default_generators -> {torch.Generator}',
  does = 'The default generator of each CUDA device, in device order (1-based); {} without one.',
  ex = 'print(#torch.cuda.default_generators == torch.cuda.device_count())  --> true' }
