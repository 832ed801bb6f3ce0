-- moontorch.utils.progress (lua/utils/progress.lua): the bar's text, plain lines when the output is
-- not a terminal, redraws in place when it is, the wrapped loops (numbers, arrays, loaders,
-- iterator functions), fields, and its errors. A fake clock makes the rates exact.
local H = require 'spec.support.helper'
local torch = H.torch
local progress = require 'moontorch.utils.progress'

-- an output that records what is written, and a clock the test moves
local function sink()
  local s = { text = '' }
  function s:write(...)
    for i = 1, select('#', ...) do self.text = self.text .. select(i, ...) end
    return self
  end
  function s:flush() end
  return s
end
local function fake_clock()
  local c = { t = 100 }
  c.fn = function() return c.t end
  return c
end

describe('moontorch.utils.progress', function()
  it('object API, not a terminal: plain lines with count, time, ETA, rate and fields', function()
    local out, clock = sink(), fake_clock()
    local bar = progress.new { total = 4, desc = 'train', out = out, clock = clock.fn, interval = 0, tty = false }
    clock.t = 101
    bar:update { loss = 0.5 }
    clock.t = 102
    bar:update { loss = torch.tensor(0.25), acc = 0.875 }
    clock.t = 104
    bar:update(2)
    bar:close()
    assert.equal(table.concat({
      'train  25% 1/4 [00:01<00:03, 1.00 it/s, loss=0.5]',
      'train  50% 2/4 [00:02<00:02, 1.00 it/s, acc=0.875, loss=0.25]',
      'train 100% 4/4 [00:04<00:00, 1.00 it/s, acc=0.875, loss=0.25]',
      '' }, '\n'), out.text)
  end)

  it('not a terminal: a line every `interval` seconds, and one at the end', function()
    local out, clock = sink(), fake_clock()
    local bar = progress.new { total = 100, out = out, clock = clock.fn, interval = 10, tty = false }
    for _ = 1, 100 do
      clock.t = clock.t + 1
      bar:update()
    end
    bar:close()
    local lines = {}
    for l in out.text:gmatch('[^\n]+') do lines[#lines + 1] = l end
    assert.equal(11, #lines) -- at 1 s (the first), then every 10 s: 11, 21, ..., 91, and the close
    assert.equal('  1% 1/100 [00:01<01:39, 1.00 it/s]', lines[1])
    assert.equal(' 11% 11/100 [00:11<01:29, 1.00 it/s]', lines[2])
    assert.equal('100% 100/100 [01:40<00:00, 1.00 it/s]', lines[11])
  end)

  it('a terminal: redraws one line in place with a bar, then a newline', function()
    local out, clock = sink(), fake_clock()
    local bar = progress.new { total = 8, out = out, clock = clock.fn, tty = true, width = 60 }
    for _ = 1, 8 do
      clock.t = clock.t + 0.5
      bar:update { loss = 1 }
    end
    bar:close()
    assert.equal('\n', out.text:sub(-1))
    assert.is_nil(out.text:sub(1, -2):find('\n', 1, true))
    local draws = select(2, out.text:gsub('\r', ''))
    assert.equal(1 + 8 + 1, draws) -- the empty bar, each update (0.5 s apart), the close
    local last = out.text:match('\r([^\r]*)\27%[K\n$')
    -- 60 columns: 4 for the percentage, 37 on the right, 3 for the bars and a margin: 16 cells
    assert.equal('100%|' .. string.rep('█', 16) .. '| 8/8 [00:04<00:00, 2.00 it/s, loss=1]', last)
    -- half way: half the cells, a partial one at the edge
    local b2 = progress.new { total = 16, out = sink(), clock = clock.fn, tty = true, width = 60 }
    b2.n = 5
    local text = b2:text(b2.start)
    -- 30 cells (60 columns less the rest); 5/16 of them is 9 and 3/8: a three-eighths block
    assert.equal(' 31%|' .. string.rep('█', 9) .. '▍' .. string.rep(' ', 20) .. '| 5/16 [00:00<?, ? it/s]', text)
  end)

  it('redraws at most every 0.1 s on a terminal', function()
    local out, clock = sink(), fake_clock()
    local bar = progress.new { total = 1000, out = out, clock = clock.fn, tty = true, width = 80 }
    for _ = 1, 999 do
      clock.t = clock.t + 0.001
      bar:update()
    end
    local draws = select(2, out.text:gsub('\r', ''))
    assert.truthy(draws >= 9 and draws <= 11, draws)
  end)

  it('wraps a number, an array, a loader-like object and an iterator function', function()
    local clock = fake_clock()
    local seen = {}
    for i in progress(3, { out = sink(), clock = clock.fn, tty = false }) do seen[#seen + 1] = i end
    assert.same({ 1, 2, 3 }, seen)
    local out = sink()
    local got = {}
    for i, v in progress({ 'a', 'b' }, { out = out, clock = clock.fn, tty = false, interval = 0 }) do
      got[#got + 1] = i .. v
      clock.t = clock.t + 1
      progress.set { loss = i / 4 }
    end
    assert.same({ '1a', '2b' }, got)
    assert.truthy(out.text:find('100% 2/2 [', 1, true))
    assert.truthy(out.text:find('loss=0.5]', 1, true))
    -- a loader: # gives the batches, calling it gives an iterator
    local loader = setmetatable({}, {
      __len = function() return 2 end,
      __call = function()
        local k = 0
        return function() k = k + 1 if k <= 2 then return { k * 10 } end end
      end,
    })
    local out2 = sink()
    local batches = {}
    for i, b in progress(loader, { out = out2, clock = clock.fn, tty = false, interval = 0 }) do
      batches[#batches + 1] = i .. ':' .. b[1]
    end
    assert.same({ '1:10', '2:20' }, batches)
    assert.truthy(out2.text:find('2/2', 1, true))
    -- an iterator function: no total, so a count and a rate
    local out3 = sink()
    local words = {}
    for i, w in progress(('x y z'):gmatch('%a'), { out = out3, clock = clock.fn, tty = false, interval = 0 }) do
      words[#words + 1] = i .. w
      clock.t = clock.t + 2
    end
    assert.same({ '1x', '2y', '3z' }, words)
    assert.truthy(out3.text:find('3 [00:06, 0.50 it/s]', 1, true))
    -- an object's own bar around a loop
    local out4 = sink()
    local bar = progress.new { out = out4, clock = clock.fn, tty = false, interval = 0, desc = 'eval' }
    local n = 0
    for i in bar:wrap(4) do n = n + i end
    assert.equal(10, n)
    assert.truthy(out4.text:find('eval 100% 4/4', 1, true))
  end)

  it('refuses what it cannot count or iterate', function()
    assert.has_error(function() progress.new { total = -1 } end,
      'moontorch.utils.progress: total must be a non-negative number, got -1')
    assert.has_error(function() progress(true) end,
      'moontorch.utils.progress: cannot iterate a boolean (a number, a table, a loader or an iterator function)')
  end)

  it('goes to standard output by default, plain when that is not a terminal (a child process)', function()
    local p = io.popen([[luajit -e "package.path = 'build/lua/?.lua;build/lua/?/init.lua;' .. package.path
      local progress = require 'moontorch.utils.progress'
      for i in progress(3, { interval = 0 }) do end" 2>&1]])
    local text = p:read('*a')
    p:close()
    assert.is_nil(text:find('\r', 1, true))
    assert.truthy(text:find('100%% 3/3 %[00:00<00:00, [%d.]+ it/s%]\n$'), text)
  end)
end)

describe('progress beside other clock_gettime declarations', function()
  it('works after a script (or the REPL) declared clock_gettime with a struct of its own', function()
    local out, ok, err = H.run_lua([[
      local ffi = require 'ffi'
      ffi.cdef 'struct my_ts { long s, ns; }; int clock_gettime(int, struct my_ts *);'
      local progress = require 'moontorch.utils.progress'
      for _, b in progress({ 1, 2 }, { desc = 'x' }) do progress.set { loss = b } end
      require 'moontorch.repl' -- its own clock too
      print('done')
    ]])
    assert.is_true(ok, out .. err)
    assert.truthy(out:find('x 100%% 2/2 ', 1), out)
    assert.truthy(out:find('done\n', 1, true), out)
  end)
end)
