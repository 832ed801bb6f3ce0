-- torch.profiler (lua/profiler.lua) and the observation point it uses (lua/observe.lua): schedules
-- and tables as PyTorch 1.13 makes them (recorded by spec/support/inspect_record.py, the table from
-- the same events given by hand to PyTorch's EventList), real profiles of a small network, the
-- Chrome trace checked against the Trace Event format, the demo's --profile.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local W = dofile('spec/support/inspect_wants.lua')
local profiler = torch.profiler
local observe = require 'moontorch.observe'
local F = nn.functional

------------------------------------------------------------------------------ a JSON reader (strict)
local function json_decode(s)
  local pos = 1
  local function err(msg) error(('json: %s at byte %d'):format(msg, pos), 2) end
  local function ws() pos = s:find('[^ \t\r\n]', pos) or #s + 1 end
  local value
  local function str()
    pos = pos + 1
    local out = {}
    while true do
      local c = s:sub(pos, pos)
      if c == '' then err('unterminated string') end
      if c == '"' then pos = pos + 1 break end
      if c == '\\' then
        local e = s:sub(pos + 1, pos + 1)
        local map = { ['"'] = '"', ['\\'] = '\\', ['/'] = '/', b = '\b', f = '\f', n = '\n', r = '\r', t = '\t' }
        if map[e] then out[#out + 1] = map[e]; pos = pos + 2
        elseif e == 'u' and s:sub(pos + 2, pos + 5):match('^%x%x%x%x$') then
          out[#out + 1] = string.char(math.min(255, tonumber(s:sub(pos + 2, pos + 5), 16))); pos = pos + 6
        else err('bad escape') end
      elseif c:byte() < 32 then err('control character in a string')
      else out[#out + 1] = c; pos = pos + 1 end
    end
    return table.concat(out)
  end
  function value()
    ws()
    local c = s:sub(pos, pos)
    if c == '{' then
      pos = pos + 1
      local t = {}
      ws()
      if s:sub(pos, pos) == '}' then pos = pos + 1 return t end
      while true do
        ws()
        if s:sub(pos, pos) ~= '"' then err('expected a key') end
        local k = str()
        ws()
        if s:sub(pos, pos) ~= ':' then err('expected :') end
        pos = pos + 1
        t[k] = value()
        ws()
        local d = s:sub(pos, pos)
        pos = pos + 1
        if d == '}' then return t end
        if d ~= ',' then err('expected , or }') end
      end
    elseif c == '[' then
      pos = pos + 1
      local t = {}
      ws()
      if s:sub(pos, pos) == ']' then pos = pos + 1 return t end
      while true do
        t[#t + 1] = value()
        ws()
        local d = s:sub(pos, pos)
        pos = pos + 1
        if d == ']' then return t end
        if d ~= ',' then err('expected , or ]') end
      end
    elseif c == '"' then return str()
    elseif s:sub(pos, pos + 3) == 'true' then pos = pos + 4 return true
    elseif s:sub(pos, pos + 4) == 'false' then pos = pos + 5 return false
    elseif s:sub(pos, pos + 3) == 'null' then pos = pos + 4 return nil
    else
      local num = s:match('^-?%d+%.?%d*[eE]?[-+]?%d*', pos)
      if not num or num == '' or num == '-' then err('unexpected character ' .. c) end
      pos = pos + #num
      return tonumber(num)
    end
  end
  local v = value()
  ws()
  if pos <= #s then err('trailing data') end
  return v
end

-- Trace Event format (the "JSON Object Format"): what Perfetto's and chrome://tracing's importers read
local function check_trace(doc)
  assert.are.equal('table', type(doc.traceEvents), 'traceEvents is an array')
  local xs = {}
  for i, e in ipairs(doc.traceEvents) do
    local where = 'event ' .. i
    assert.are.equal('string', type(e.name), where .. ' has a name')
    assert.is_truthy(({ X = true, C = true, i = true, M = true })[e.ph], where .. ' has a known ph: ' .. tostring(e.ph))
    assert.are.equal('number', type(e.pid), where .. ' pid')
    if e.ph ~= 'M' then
      assert.are.equal('number', type(e.ts), where .. ' ts')
      assert.is_true(e.ts >= 0, where .. ' ts >= 0')
    end
    if e.ph == 'X' then
      assert.are.equal('number', type(e.dur), where .. ' dur')
      assert.is_true(e.dur >= 0, where .. ' dur >= 0')
      assert.are.equal('number', type(e.tid), where .. ' tid')
      xs[#xs + 1] = e
    elseif e.ph == 'C' then
      assert.are.equal('table', type(e.args), where .. ' counter args')
      for _, v in pairs(e.args) do assert.are.equal('number', type(v), where .. ' counter value') end
    elseif e.ph == 'i' then
      assert.is_truthy(({ g = true, p = true, t = true })[e.s], where .. ' instant scope')
    end
  end
  -- complete events of one thread nest (none overlaps another partly)
  table.sort(xs, function(a, b) if a.ts ~= b.ts then return a.ts < b.ts end return a.dur > b.dur end)
  local stack = {}
  for _, e in ipairs(xs) do
    while #stack > 0 and e.ts >= stack[#stack].ts + stack[#stack].dur - 1e-3 do stack[#stack] = nil end
    if #stack > 0 then
      local p = stack[#stack]
      assert.is_true(e.ts + e.dur <= p.ts + p.dur + 1e-3, ('%s overlaps %s partly'):format(e.name, p.name))
    end
    stack[#stack + 1] = e
  end
  return xs
end

local function lenet()
  return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
end

local function find(list, pred)
  for _, e in ipairs(list) do if pred(e) then return e end end
end

describe('torch.profiler as PyTorch 1.13', function()
  it('schedule gives PyTorch\'s actions', function()
    local s = profiler.schedule { wait = 1, warmup = 2, active = 3, ['repeat'] = 2, skip_first = 1 }
    local got = {}
    for i = 0, 15 do got[#got + 1] = s(i) end
    assert.are.same(W.prof_schedule, got)
    local f = profiler.schedule { wait = 0, warmup = 0, active = 2 }
    got = {}
    for i = 0, 5 do got[#got + 1] = f(i) end
    assert.are.same(W.prof_schedule_forever, got)
    H.errors_with(function() profiler.schedule { wait = 1, warmup = 0, active = 0 } end, 'Invalid profiler schedule arguments')
  end)

  it('key_averages():table prints PyTorch\'s table for the same events (times, shares, memory, shapes, FLOPs)', function()
    local w = W.prof_synth
    local l = profiler._event_list(w.events, { profile_memory = true, with_flops = true })
    assert.are.equal(w.table, l:key_averages():table { sort_by = 'self_cpu_time_total' })
    assert.are.equal(w.table_shapes, l:key_averages { group_by_input_shape = true }:table { sort_by = 'cpu_time_total', row_limit = 5 })
    assert.are.equal(w.table_plain, profiler._event_list(w.events):key_averages():table())
    local times = {}
    for i, t in ipairs({ 0.5, 12.25, 999.9994, 1000, 123456.7, 2.5e6 }) do times[i] = profiler._format_time(t) end
    assert.are.same(w.times, times)
    local mem = {}
    for i, n in ipairs({ 0, 512, -4, 1024, 55296, -152576, 3 * 1024 * 1024 + 5, 5 * 2 ^ 30 }) do mem[i] = profiler._format_memory(n) end
    assert.are.same(w.memory, mem)
    -- totals
    local avg = l:key_averages()
    assert.are.equal(10000, avg:self_cpu_time_total())
    assert.are.equal(1, avg[1].count)
    assert.are.equal('aten::relu', avg[3].key)
    assert.are.equal(3, avg[3].count)
    H.errors_with(function() avg:table { sort_by = 'nope' } end, "unknown sort_by 'nope'")
  end)
end)

describe('profiling a network', function()
  it('records the ops with shapes, memory, FLOPs, modules and stacks; self times add up', function()
    torch.manual_seed(0)
    local net = lenet()
    local x = torch.randn(4, 1, 28, 28)
    local prof = profiler.profile({ activities = { profiler.ProfilerActivity.CPU }, record_shapes = true,
      profile_memory = true, with_flops = true, with_modules = true, with_stack = true }, function()
      profiler.record_function('model_inference', function() return net(x) end)
    end)
    assert.are.equal(0, observe.active()) -- nothing stays installed
    local evs = prof:events()
    local conv = find(evs, function(e) return e.key == 'aten::conv2d' end)
    assert.is_not_nil(conv)
    assert.are.same({ { 4, 1, 28, 28 }, { 6, 1, 5, 5 }, { 6 } }, { conv.input_shapes[1], conv.input_shapes[2], conv.input_shapes[3] })
    assert.are.equal(691200, conv.flops) -- PyTorch's count for this conv
    assert.are.equal('Sequential.0', conv.module)
    assert.is_truthy(conv.stack[1]:find('profiler_spec.lua', 1, true))
    assert.is_true(conv.cpu_memory_usage >= 4 * 6 * 24 * 24 * 4)
    local pool = find(evs, function(e) return e.key == 'aten::max_pool2d' end)
    assert.are.same({ 4, 6, 24, 24 }, pool.input_shapes[1])
    local addmm = find(evs, function(e) return e.key == 'aten::addmm' end)
    assert.are.equal(2 * 4 * 256 * 120, addmm.flops)
    local top = find(evs, function(e) return e.key == 'model_inference' end)
    assert.is_nil(top.cpu_parent)
    local self_sum = 0
    for _, e in ipairs(evs) do
      assert.is_true(e.self_cpu_time_total <= e.cpu_time_total + 1e-9)
      assert.is_true(e.self_cpu_time_total >= -1e-6)
      self_sum = self_sum + e.self_cpu_time_total
    end
    H.near(self_sum, top.cpu_time_total, 1e-3, 1e-6)
    -- the tables: ops by name, by shape, by module; the conv, pool and linear ops with their shapes
    local t = prof:key_averages { group_by_input_shape = true }:table { sort_by = 'cpu_time_total', row_limit = 50 }
    for _, s in ipairs({ 'aten::conv2d', 'aten::max_pool2d', 'aten::linear', '[[4, 1, 28, 28], [6, 1, 5, 5], [6]',
      '[[4, 256], [120, 256], [120]]', 'Input Shapes', 'CPU Mem', 'Total KFLOPs', 'Self CPU time total: ' }) do
      assert.is_truthy(t:find(s, 1, true), s)
    end
    local by_module = prof:key_averages { group_by_module = true }:table()
    assert.is_truthy(by_module:find('Sequential.7', 1, true))
    local by_stack = prof:key_averages { group_by_stack_n = 1 }:table()
    assert.is_truthy(by_stack:find('Source Location', 1, true))
    assert.is_truthy(by_stack:find('profiler_spec.lua(', 1, true))
    local a = prof:key_averages()
    local calls = find(a, function(e) return e.key == 'aten::relu' end)
    assert.are.equal(4, calls.count) -- one per ReLU module (F.relu and torch.relu merged as PyTorch merges)
    assert.is_true(a:total_average().count >= #a)
  end)

  it('exports a Trace Event JSON (gzip\'d too) that nests ops in module scopes, with memory counters', function()
    local net = lenet()
    local prof = profiler.profile({ record_shapes = true, profile_memory = true, with_modules = true }, function()
      profiler.record_function('step', function() F.cross_entropy(net(torch.randn(2, 1, 28, 28)), torch.tensor({ 1, 2 }, { dtype = torch.int64 })):backward() end)
    end)
    local path = os.tmpname()
    prof:export_chrome_trace(path)
    local doc = json_decode(H.read_file(path))
    local xs = check_trace(doc)
    local names = {}
    for _, e in ipairs(xs) do names[e.name] = names[e.name] or e end -- the first of each
    assert.is_not_nil(names['aten::conv2d'])
    assert.are.equal('cpu_op', names['aten::conv2d'].cat)
    assert.are.same({ 2, 1, 28, 28 }, names['aten::conv2d'].args['Input Dims'][1])
    assert.are.equal('Sequential.0', names['aten::conv2d'].args.Module)
    assert.is_not_nil(names['nn.Module: Conv2d'])
    assert.is_not_nil(names['step'])
    local counters = 0
    for _, e in ipairs(doc.traceEvents) do if e.ph == 'C' then counters = counters + 1 end end
    assert.is_true(counters > 10)
    os.remove(path)
    local gz = path .. '.json.gz'
    prof:export_chrome_trace(gz)
    local p = io.popen('gzip -dc ' .. H.sh_quote(gz))
    local text = p:read('*a')
    p:close()
    os.remove(gz)
    check_trace(json_decode(text))
  end)

  it('a schedule records its active steps as ProfilerStep#N, calling on_trace_ready per cycle', function()
    local ready = {}
    local a, b = torch.ones(3), torch.ones(3)
    local prof = profiler.profile({ schedule = profiler.schedule { wait = 1, warmup = 1, active = 2, ['repeat'] = 2 },
      on_trace_ready = function(p)
        local steps = {}
        for _, e in ipairs(p:events()) do if e.key:match('^ProfilerStep#') then steps[#steps + 1] = e.key end end
        local adds = find(p:key_averages(), function(e) return e.key == 'aten::add' end)
        ready[#ready + 1] = { steps = steps, adds = adds and adds.count or 0 }
      end }, function(p)
      for _ = 1, 10 do
        local _ = a:add(b)
        p:step()
      end
    end)
    assert.are.same({ { steps = { 'ProfilerStep#2', 'ProfilerStep#3' }, adds = 2 },
      { steps = { 'ProfilerStep#6', 'ProfilerStep#7' }, adds = 2 } }, ready)
    assert.are.equal(10, prof.step_num)
    -- without a schedule: everything between start and stop
    local p2 = profiler.profile({})
    p2:start()
    local _ = a:mul(b)
    p2:stop()
    assert.is_not_nil(find(p2:key_averages(), function(e) return e.key == 'aten::mul' end))
  end)

  it('record_function as a block and as a handle; errors; one profiler at a time', function()
    local prof = profiler.profile({}, function()
      local r = profiler.record_function('outer')
      r:__enter()
      local v = profiler.record_function('inner', function(k) return k + 1 end, 41)
      assert.are.equal(42, v)
      r:__exit()
      H.errors_with(function() profiler.profile({}, function() end) end, 'another profiler is already running')
    end)
    local evs = prof:events()
    local inner = find(evs, function(e) return e.key == 'inner' end)
    local outer = find(evs, function(e) return e.key == 'outer' end)
    assert.is_not_nil(inner)
    assert.is_true(inner.time_range.start >= outer.time_range.start and inner.time_range['end'] <= outer.time_range['end'])
    H.errors_with(function() profiler.profile { activities = { profiler.ProfilerActivity.CUDA } } end,
      'moontorch was built without CUDA')
    assert.are.equal(7, profiler.record_function('free', function() return 7 end)) -- no profiler: just runs
    H.errors_with(function() profiler.profile({}, function() error('boom') end) end, 'boom')
    assert.is_false(profiler._is_recording())
    assert.are.equal(0, observe.active())
  end)

  it('LuaJIT trace aborts and Lua samples in the trace (with_jit, with_lua_samples)', function()
    local prof = profiler.profile({ with_jit = true, with_lua_samples = true }, function()
      local t0 = observe.now_us()
      local s = 0
      while observe.now_us() - t0 < 150000 do
        for i = 1, 2000 do s = s + (select('#', pcall(math.floor, i))) end -- pcall: a trace abort
      end
      return s
    end)
    local text = prof:chrome_trace()
    local doc = json_decode(text)
    check_trace(doc)
    local aborts, samples = 0, 0
    for _, e in ipairs(doc.traceEvents) do
      if e.name == 'LuaJIT trace abort' then aborts = aborts + 1; assert.are.equal('string', type(e.args.reason)) end
      if e.name == 'Lua sample' then samples = samples + 1 end
    end
    assert.is_true(samples > 0, 'no Lua samples')
    assert.is_true(aborts >= 0)
  end)
end)

describe('the observation point', function()
  it('holds the ops themselves when nothing observes, and wraps each op while an observer is installed', function()
    local add, relu, mm = torch.add, nn.functional.relu, require('moontorch.tensor').methods.mm
    local seen = {}
    local h = observe.install(function(name, f)
      return function(...) seen[name] = (seen[name] or 0) + 1; return f(...) end
    end)
    assert.are_not.equal(add, torch.add)
    local _ = torch.add(torch.ones(2), 1)
    local _ = torch.ones(2, 2):mm(torch.ones(2, 2))
    local _ = nn.functional.relu(torch.ones(2))
    h:remove()
    assert.are.equal(add, torch.add)
    assert.are.equal(relu, nn.functional.relu)
    assert.are.equal(mm, require('moontorch.tensor').methods.mm)
    assert.are.equal(1, seen['torch.add'])
    assert.are.equal(1, seen['Tensor.mm'])
    assert.are.equal(1, seen['torch.nn.functional.relu'])
    assert.are.equal('torch.add', observe.name_of(torch.add))
    assert.are.equal('torch.nn.functional.relu', observe.name_of(nn.functional.relu))
  end)
end)

describe('the demo\'s --profile', function()
  it('profiles the first 20 training steps: a valid trace and a table of the conv, pool and linear ops', function()
    if not io.open('/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz') then
      pending('no Fashion-MNIST at /usr/share/datasets/fashion-mnist')
      return
    end
    local dir = os.tmpname()
    os.remove(dir)
    local trace = dir .. '.trace.json'
    local out = H.run_lua(([[
      arg = { [0] = 'examples/fashion_mnist.lua', '--epochs', '1', '--subset', '1600', '--profile', %q, '--out', %q }
      dofile('examples/fashion_mnist.lua')
    ]]):format(trace, dir))
    os.execute('rm -rf ' .. H.sh_quote(dir))
    local doc = json_decode(H.read_file(trace))
    os.remove(trace)
    local xs = check_trace(doc)
    local steps, ops = 0, {}
    for _, e in ipairs(xs) do
      if e.name:match('^ProfilerStep#') then steps = steps + 1 end
      ops[e.name] = true
    end
    assert.are.equal(20, steps)
    for _, op in ipairs({ 'aten::conv2d', 'aten::max_pool2d', 'aten::linear', 'aten::addmm' }) do assert.is_true(ops[op], op) end
    for _, s in ipairs({ 'aten::conv2d', 'aten::max_pool2d', 'aten::linear', '[[64, 1, 28, 28], [6, 1, 5, 5], [6]',
      'Input Shapes' }) do
      assert.is_truthy(out:find(s, 1, true), s)
    end
  end)
end)
