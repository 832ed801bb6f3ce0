-- Shared by the bench workloads: package paths for a build tree, a wall clock, a best-of timer,
-- filled tensors, and the peak-memory figure. Each workload prints `key value` lines that
-- bench/run.lua reads.
local build = os.getenv('MOONTORCH_BUILD_DIR') or 'build'
package.path = build .. '/lua/?.lua;' .. build .. '/lua/?/init.lua;' .. package.path
package.cpath = build .. '/lib/?.so;' .. package.cpath

local ffi = require 'ffi'
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clk, bench_timespec *ts);
]]
local ts = ffi.new('bench_timespec')
local B = {}

function B.now()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

-- best seconds per call of fn over `rounds` rounds of `reps` calls (after one warm-up round)
function B.best(fn, reps, rounds)
  rounds = rounds or 5
  local best = math.huge
  for r = 0, rounds do
    local t0 = B.now()
    fn(reps)
    local t = (B.now() - t0) / reps
    if r > 0 and t < best then best = t end
  end
  return best
end

-- a float32 tensor of the given sizes filled with `v`, written in slices of at most 32768
-- elements (each fill then stays on the calling thread: see bench/README note on the pool)
function B.filled(torch, rows, cols, v)
  local t = torch.empty(rows, cols)
  local step = math.max(1, math.floor(32768 / cols))
  for r = 1, rows, step do
    t:narrow(1, r, math.min(step, rows - r + 1)):fill_(v)
  end
  return t
end

-- peak resident memory of this process, kB (VmHWM)
function B.peak_kb()
  local f = io.open('/proc/self/status', 'r')
  if not f then return -1 end
  for line in f:lines() do
    local v = line:match('^VmHWM:%s+(%d+)')
    if v then f:close(); return tonumber(v) end
  end
  f:close()
  return -1
end

function B.report(key, value) io.write(key, ' ', tostring(value), '\n') end

-- the tail of the training-loop workloads: the best time per call of `step` over `rounds` rounds of
-- `reps` calls, reported as `key` in `unit` seconds (1e3: ms, 1e6: us), then the process's peak memory
function B.report_loop(key, unit, step, reps, rounds)
  local t = B.best(function(k) for _ = 1, k do step() end end, reps, rounds)
  B.report(key, t * unit)
  B.report('peak_kb', B.peak_kb())
end

return B
