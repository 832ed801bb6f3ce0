-- The docs of torch.profiler (issue 24; moontorch.doc: lua/doc/init.lua says how an entry is written).
local doc = ...

doc.section 'Torch.profiler'
doc { 'torch.profiler.profile({activities=, schedule=, on_trace_ready=, record_shapes=, profile_memory=, with_stack=, with_modules=, with_flops=, with_jit=, with_lua_samples=}, fn) -> profile',
  does = 'Times every op (named aten::<name>) between start and stop: with fn, runs fn(prof) between them (PyTorch\'s `with profile(...) as prof:`); without, prof:start() ... prof:stop(). with_jit and with_lua_samples (beyond PyTorch) put LuaJIT\'s trace aborts and Lua stacks in the trace.',
  ex = 'local a = torch.ones(3)\nlocal prof = torch.profiler.profile({}, function() local _ = a + a end)\nprint(prof:key_averages()[1].key)  --> aten::add' }
doc { 'torch.profiler.Profile(...)', 'torch.profiler.profile:start() -> self', 'torch.profiler.profile:stop() -> self', 'torch.profiler.profile:step()',
  'torch.profiler.profile:events() -> EventList', 'torch.profiler.profile:key_averages{group_by_input_shape=, group_by_stack_n=, group_by_module=} -> EventList',
  'torch.profiler.profile:export_chrome_trace(path) -> path', 'torch.profiler.profile:chrome_trace() -> string',
  'torch.profiler.profile:self_cpu_time_total() -> number',
  pt = 'torch.profiler.profile.start, torch.profiler.profile.stop, torch.profiler.profile.step, torch.profiler.profile.events, torch.profiler.profile.key_averages, torch.profiler.profile.export_chrome_trace',
  unchecked_args = true,
  does = 'step() ends a training step (the schedule decides what the next records); events and key_averages as PyTorch\'s (group_by_module: beyond PyTorch); export_chrome_trace writes Trace Event JSON (gzip\'d for a .gz path) for Perfetto or chrome://tracing.',
  ex = 'local prof = torch.profiler.profile({})\nprof:start()\nlocal _ = torch.ones(2):mul(2)\nprof:stop()\nprint(prof:chrome_trace():match(\'^{"traceEvents"\') ~= nil)  --> true' }
doc { 'torch.profiler.schedule{wait=, warmup=, active=, repeat=0, skip_first=0} -> function',
  does = 'fn(step) -> the action of that step: NONE, WARMUP, RECORD or RECORD_AND_SAVE (on_trace_ready runs after each active span); each recorded step is a ProfilerStep#N range.',
  ex = 'local s = torch.profiler.schedule{wait = 1, warmup = 1, active = 2}\nprint(s(0), s(1), s(2), s(3))  --> NONE WARMUP RECORD RECORD_AND_SAVE' }
doc { 'torch.profiler.record_function(name, fn, ...) -> fn\'s results',
  does = 'Runs fn(...) as a named range of the profile (its own row in the tables); without fn, a handle with :__enter() and :__exit().',
  ex = 'print(torch.profiler.record_function(\'block\', function(x) return x + 1 end, 1))  --> 2' }
doc { 'torch.profiler.ProfilerActivity.CPU', 'torch.profiler.ProfilerActivity.CUDA', 'torch.profiler.ProfilerAction.NONE',
  'torch.profiler.ProfilerAction.WARMUP', 'torch.profiler.ProfilerAction.RECORD', 'torch.profiler.ProfilerAction.RECORD_AND_SAVE',
  does = 'The activities a profile may ask for (CUDA: refused in a build without CUDA) and the actions a schedule returns.',
  ex = 'print(torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerAction.RECORD)  --> CPU RECORD' }
doc { 'torch.profiler.EventList(...)', 'torch.profiler.EventList:key_averages{group_by_input_shape=, group_by_stack_n=, group_by_module=} -> EventList',
  'torch.profiler.EventList:table{sort_by=, row_limit=100, header=, top_level_events_only=, max_name_column_width=, max_shapes_column_width=} -> string',
  'torch.profiler.EventList:total_average() -> event', 'torch.profiler.EventList:self_cpu_time_total() -> number',
  'torch.profiler.EventList:filter(pred) -> EventList',
  pt = 'torch.autograd.profiler_util.EventList.key_averages, torch.autograd.profiler_util.EventList.table, torch.autograd.profiler_util.EventList.total_average, torch.autograd.profiler_util.EventList.self_cpu_time_total',
  unchecked_args = true,
  does = 'Events (ops and ranges: key, count, cpu_time_total, self_cpu_time_total, cpu_memory_usage, input_shapes, flops, module, stack); table() prints PyTorch\'s table (sort_by: cpu_time_total, self_cpu_time_total, cpu_time, count, cpu_memory_usage, ...). filter is moontorch\'s own.',
  ex = 'local prof = torch.profiler.profile({}, function() local _ = torch.ones(2):relu() end)\nprint(prof:key_averages():table():match(\'Self CPU time total\') ~= nil)  --> true' }
