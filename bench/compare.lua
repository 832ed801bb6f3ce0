-- bench/compare.lua: two builds of moontorch side by side, alternating, each keeping its best, so
-- that a noisy moment on a shared machine does not fall on one side only. For a change that must
-- not make anything slower:
--   luajit bench/compare.lua OLD_BUILD_DIR NEW_BUILD_DIR [rounds] [workload ...]
-- (build dirs as ./run build makes them; the workloads are bench/workloads/*.lua, by default the
-- small-op and training rows and the big ops). Prints one line per workload: the best time of each
-- build and new/old.
local old_dir, new_dir = arg[1], arg[2]
if not old_dir or not new_dir then
  io.stderr:write('usage: luajit bench/compare.lua OLD_BUILD_DIR NEW_BUILD_DIR [rounds] [workload ...]\n')
  os.exit(2)
end
local rounds = tonumber(arg[3]) or 5
local threads = os.getenv('BENCH_THREADS') or '2'

-- workload name, its argument, the figure to compare (lower is better unless `higher`)
local all = {
  { 'add_small', nil, 'us' },
  { 'add_small_grad', nil, 'us' },
  { 'matmul_small', '64', 'us' },
  { 'matmul_small', '64 out', 'us' },
  { 'train_plain', '4000', 'us' },
  { 'train_modules', '4000', 'us' },
  { 'module_call', nil, 'us' },
  { 'matmul_big', '1024', 'gflops', higher = true },
  { 'exp_big', nil, 'exp_us' },
  { 'exp_big', nil, 'sigmoid_us' },
}
local chosen = {}
for i = 4, #arg do chosen[arg[i]] = true end

local function run(dir, w)
  local cmd = ('MOONTORCH_BUILD_DIR=%s BENCH_THREADS=%s luajit bench/workloads/%s.lua %s 2>&1'):format(dir, threads,
    w[1], w[2] or '')
  local p = io.popen(cmd)
  local out = p:read('*a')
  p:close()
  local v = tonumber(out:match(w[3] .. ' ([%d%.eE%+%-]+)'))
  if not v then io.stderr:write('compare: ', cmd, ' failed:\n', out, '\n') end
  return v
end

print(('%-32s %12s %12s %8s'):format('workload', 'old', 'new', 'new/old'))
for _, w in ipairs(all) do
  if next(chosen) == nil or chosen[w[1]] then
    local best = {}
    for _ = 1, rounds do
      for _, side in ipairs { 'old', 'new' } do
        local v = run(side == 'old' and old_dir or new_dir, w)
        if v and (not best[side] or (w.higher and v > best[side]) or (not w.higher and v < best[side])) then
          best[side] = v
        end
      end
    end
    local o, n = best.old, best.new
    local name = w[1] .. (w[2] and (' ' .. w[2]) or '') .. ' ' .. w[3]
    print(('%-32s %12.3f %12.3f %8.3f'):format(name, o or -1, n or -1, (o and n) and (w.higher and o / n or n / o) or -1))
    io.stdout:flush()
  end
end
