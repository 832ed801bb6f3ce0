-- bench/run.lua: moontorch against PyTorch on this machine. Run from the repository root after
-- building into ./build (or set MOONTORCH_BUILD_DIR):
--   luajit bench/run.lua            (or `luajit bench/run.lua 14 15`: those sections alone)
-- Every workload runs in a process of its own (bench/workloads/*.lua for us,
-- bench/torch_workloads.py for PyTorch), so that each peak-memory figure is that workload's.
-- Both sides run with 2 threads; PyTorch with OMP_WAIT_POLICY=PASSIVE. PyTorch is the one that
-- /usr/bin/python3 imports (skipped when it cannot). Prints one line per figure, then a markdown
-- table for the README. Takes about two minutes.
local ffi = require 'ffi'
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } bench_run_timespec;
int clock_gettime(int clk, bench_run_timespec *ts);
]]
local tsbuf = ffi.new('bench_run_timespec')
local function now()
  ffi.C.clock_gettime(1, tsbuf)
  return tonumber(tsbuf.tv_sec) + tonumber(tsbuf.tv_nsec) * 1e-9
end

local build = os.getenv('MOONTORCH_BUILD_DIR') or 'build'
local threads = os.getenv('BENCH_THREADS') or '2'
local python = os.getenv('BENCH_PYTHON') or '/usr/bin/python3'
local luajit = os.getenv('BENCH_LUAJIT') or 'luajit'
local env = ('MOONTORCH_BUILD_DIR=%s BENCH_THREADS=%s '):format(build, threads)
local pyenv = ('OMP_WAIT_POLICY=PASSIVE BENCH_THREADS=%s '):format(threads)

local function sh(cmd)
  local p = io.popen(cmd .. ' 2>&1')
  local out = p:read('*a')
  local ok = p:close()
  return out, ok
end

-- run a command printing `key value` lines; returns the table of numbers (nil if it failed)
local function figures(cmd)
  local out, ok = sh(cmd)
  local r = {}
  local any = false
  for k, v in out:gmatch('([%w_]+) ([%d%.eE%+%-]+)\n') do
    r[k] = tonumber(v)
    any = true
  end
  if not any or not ok then
    io.stderr:write('bench: `', cmd, '` failed:\n', out, '\n')
    return nil
  end
  return r
end

local function ours(workload, n, extra_env)
  return figures((extra_env or '') .. env .. luajit .. ' bench/workloads/' .. workload .. '.lua ' .. (n or ''))
end

local have_torch = os.execute(python .. " -c 'import torch' >/dev/null 2>&1")
have_torch = have_torch == true or have_torch == 0
-- the tables name the PyTorch they ran beside (1.13 from Debian here; 2.11 on the GPU machine)
local torch_label = 'PyTorch'
if have_torch then
  local v = sh(python .. " -c 'import torch; print(torch.__version__.split(\"+\")[0])'"):match('(%d+%.%d+)')
  if v then torch_label = 'PyTorch ' .. v end
end
-- today's PyTorch beside it, from bench/.venv (bench/venv.sh installs it from the Python package index on
-- demand; `./run bench` runs that first): its figures ride along with 1.13's, in NOW[the 1.13 table]
local venv_python = os.getenv('BENCH_PYTHON_NOW') or 'bench/.venv/bin/python'
local have_now = have_torch and os.execute(venv_python .. " -c 'import torch' >/dev/null 2>&1")
have_now = have_now == true or have_now == 0
local now_label = 'PyTorch (bench/.venv)'
if have_now then
  local v = sh(venv_python .. " -c 'import torch; print(torch.__version__.split(\"+\")[0])'"):match('(%d+%.%d+[%.%d]*)')
  if v then now_label = 'PyTorch ' .. v end
end
local NOW = setmetatable({}, { __mode = 'k' })
local function theirs(workload, n)
  if not have_torch then return nil end
  local t = figures(pyenv .. python .. ' bench/torch_workloads.py ' .. workload .. ' ' .. (n or ''))
  if t and have_now then NOW[t] = figures(pyenv .. venv_python .. ' bench/torch_workloads.py ' .. workload .. ' ' .. (n or '')) end
  return t
end
-- which way a figure is better: GFLOP/s higher, everything else (times, memory) lower
local function is_better(k, a, b) if k:find('gflops') then return a > b end return a < b end
-- into dst (a table of figures) the better of each of src's, and the same for their NOW tables
local function merge_best(dst, src)
  if not src then return dst end
  for k, v in pairs(src) do
    if type(v) == 'number' and (dst[k] == nil or is_better(k, v, dst[k])) then dst[k] = v end
  end
  if NOW[src] then NOW[dst] = merge_best(NOW[dst] or {}, NOW[src]) end
  return dst
end
-- the better of two runs' tables by `key` (either may be nil), today's PyTorch's figures merged best-of
local function pick(a, b, key)
  if not b then return a end
  if not a then return b end
  local winner = is_better(key, b[key], a[key]) and b or a
  local n = merge_best(merge_best({}, NOW[a] or {}), NOW[b] or {})
  NOW[winner] = n
  return winner
end
-- today's PyTorch's figure `key` beside a 1.13 table
local function nowv(t, key) return t and NOW[t] and NOW[t][key] end

local rows = {} -- for the markdown table: {name, ours, theirs, unit, better ('lower'|'higher'), ours_mem, theirs_mem}
local function fmt(x, unit)
  if x == nil then return 'n/a' end
  if unit == 'GFLOP/s' or unit == 'ms' then return ('%.1f'):format(x) end
  return ('%.2f'):format(x)
end
local function ratio(o, t, better)
  if not o or not t then return nil end
  -- >1 means we are faster
  if better == 'lower' then return t / o end
  return o / t
end

local function line(name, o, t, unit, better, extra)
  local s = ('%-34s ours %10s %s'):format(name, fmt(o, unit), unit)
  if t then
    s = s .. ('   pytorch %10s %s   speed ratio (pytorch/ours time) %.2fx'):format(fmt(t, unit), unit, ratio(o, t, better))
  end
  if extra then s = s .. '   ' .. extra end
  print(s)
  io.stdout:flush()
end

local function mem(name, o, t)
  local s = ('%-34s ours %8.1f MB'):format('peak RSS: ' .. name, (o or -1) / 1024)
  if t then s = s .. ('   pytorch %8.1f MB'):format(t / 1024) end
  print(s)
end

-- ours and theirs alternately `rounds` times, each keeping its best (lowest `key`): a noisy
-- moment on a shared 2-core machine then does not decide a ratio
local function alternate(name, args, key, rounds)
  local o, t
  for _ = 1, rounds do
    local oi, ti = ours(name, args), theirs(name, args)
    if oi and (not o or oi[key] < o[key]) then o = oi end
    t = pick(t, ti, key)
  end
  return o, t
end

-- `luajit bench/run.lua 14 15` runs those sections alone (the numbers in the printed lines)
local only = {}
for _, a in ipairs(arg or {}) do only[tonumber(a) or a] = true end
local function want(n) return next(only) == nil or only[n] == true end

local t_start = now()
print(('moontorch bench: build=%s threads=%s pytorch=%s, today\'s pytorch=%s'):format(build, threads,
  have_torch and python or 'not available', have_now and (venv_python .. ' (' .. now_label .. ')') or 'not available'))

-- (1) a + b on 4 elements
if want(1) then
  local o, t = alternate('add_small', nil, 'us', 3)
  line('(1) a + b, 4 x float32', o and o.us, t and t.us, 'us/op', 'lower')
  mem('a + b', o and o.peak_kb, t and t.peak_kb)
  rows[#rows + 1] = { '`a + b`, 4 float32', o and o.us, t and t.us, 'µs/op', 'lower', o and o.peak_kb, t and t.peak_kb, now = nowv(t, 'us') }
end

-- (2) 64x64 matmul
if want(2) then
  local o, t = alternate('matmul_small', 64, 'us', 3)
  line('(2) 64x64 float32 matmul', o and o.us, t and t.us, 'us/op', 'lower')
  mem('64x64 matmul', o and o.peak_kb, t and t.peak_kb)
  rows[#rows + 1] = { '64×64 float32 matmul', o and o.us, t and t.us, 'µs/op', 'lower', o and o.peak_kb, t and t.peak_kb, now = nowv(t, 'us') }
end

if want(2) then
  local o, t = alternate('matmul_small', '64 out', 'us', 3)
  line('(2b) 64x64 matmul, out= reused', o and o.us, t and t.us, 'us/op', 'lower')
  rows[#rows + 1] = { '64×64 float32 matmul into out=', o and o.us, t and t.us, 'µs/op', 'lower', nil, nil, now = nowv(t, 'us') }
end

-- (3) big matmuls next to OpenBLAS's own sgemm (called directly by bench_gemm, at OpenBLAS's own
-- settings and its own choice of kernels)
-- ours and OpenBLAS's alternate a few times, each keeping its best, so that a noisy moment on a
-- shared machine does not fall on one side only
for _, n in ipairs(want(3) and { 1024, 4096 } or {}) do
  local o, blas
  for _ = 1, n >= 4096 and 2 or 3 do
    local oi = ours('matmul_big', n)
    if oi and (not o or oi.gflops > o.gflops) then o = oi end
    local out = sh(('BENCH_THREADS=%s %s/bin/bench_gemm openblas %d %d %d'):format(threads, build, n, n, n))
    local bi = tonumber(out:match('gflops ([%d%.]+)'))
    if not bi then io.stderr:write('bench: bench_gemm failed: ', out, '\n') end
    if bi and (not blas or bi > blas) then blas = bi end
  end
  local t = theirs('matmul_big', n)
  local oo = n <= 1024 and ours('matmul_big', n .. ' out') or nil
  if oo and blas then print(('(3b) %d^3 matmul, out= reused        ours %10.1f GFLOP/s (%.0f%% of openblas sgemm)'):format(n, oo.gflops, 100 * oo.gflops / blas)) end
  local extra = blas and o and ('openblas sgemm %.1f GFLOP/s (ours at %.0f%%)'):format(blas, 100 * o.gflops / blas) or nil
  line(('(3) %d^3 float32 matmul'):format(n), o and o.gflops, t and t.gflops, 'GFLOP/s', 'higher', extra)
  mem(('%d^3 matmul'):format(n), o and o.peak_kb, t and t.peak_kb)
  rows[#rows + 1] = { ('%d³ float32 matmul'):format(n), o and o.gflops, t and t.gflops, 'GFLOP/s', 'higher',
    o and o.peak_kb, t and t.peak_kb, blas, now = nowv(t, 'gflops') }
end

-- (4) start-up: median of fresh processes
local function median(xs)
  table.sort(xs)
  local n = #xs
  if n % 2 == 1 then return xs[(n + 1) / 2] end
  return (xs[n / 2] + xs[n / 2 + 1]) / 2
end
local function time_cmd(cmd, times)
  local xs = {}
  for i = 1, times do
    local t0 = now()
    local ok = os.execute(cmd .. ' >/dev/null 2>&1')
    xs[i] = (now() - t0) * 1e3
    if not (ok == true or ok == 0) then return nil end
  end
  return median(xs)
end
if want(4) then
  local o = time_cmd(env .. luajit .. ' bench/workloads/startup.lua', 11)
  local base = time_cmd(luajit .. ' -e ""', 11)
  local t = have_torch and time_cmd(pyenv .. python .. " -c 'import torch'", 7) or nil
  local tn = have_now and time_cmd(pyenv .. venv_python .. " -c 'import torch'", 7) or nil
  line("(4) start-up: require 'moontorch'", o, t, 'ms', 'lower',
    base and ('(bare luajit %.1f ms)'):format(base) or nil)
  rows[#rows + 1] = { "start-up (`require 'moontorch'` / `import torch`)", o, t, 'ms', 'lower', nil, nil, now = tn }
end

-- (7) autograd: `c = a + b` with a, b requiring grad; (8) the plain-tensor training loop of the
-- Modules note (10 000 iterations); (9) resident memory over 1 000 000 forward/backward iterations
if want(7) then
  local o, t = alternate('add_small_grad', nil, 'us', 3)
  line('(7) a + b with grad, 4 x float32', o and o.us, t and t.us, 'us/op', 'lower')
  rows[#rows + 1] = { '`c = a + b` with grad, 4 float32', o and o.us, t and t.us, 'µs/op', 'lower', o and o.peak_kb, t and t.peak_kb, now = nowv(t, 'us') }
  o, t = alternate('train_plain', 10000, 'us', 2)
  line('(8) training loop, plain tensors', o and o.us, t and t.us, 'us/iter', 'lower')
  rows[#rows + 1] = { '4-3-1 training loop on plain tensors', o and o.us, t and t.us, 'µs/iter', 'lower', o and o.peak_kb, t and t.peak_kb, now = nowv(t, 'us') }
  local m = ours('grad_memory', os.getenv('BENCH_GRAD_ITERS') or 1000000)
  if m then
    print(('(9) 1M forward/backward iterations: RSS %.1f MB after 10%%, %.1f MB at the end, %.2f us/iter, live nodes %d')
      :format(m.rss_kb_10pct / 1024, m.rss_kb_end / 1024, m.us_per_iter, m.live_nodes))
  end
end

-- (10) modules: the note's training loop with its modules and optim.SGD; (11) a module call next
-- to the same computation on plain tensors (the target is a ratio of ours to ours)
if want(10) then
  local o, t = alternate('train_modules', 10000, 'us', 2)
  line('(10) training loop, the note\'s modules', o and o.us, t and t.us, 'us/iter', 'lower')
  rows[#rows + 1] = { 'the note\'s training loop with modules + optim.SGD', o and o.us, t and t.us, 'µs/iter', 'lower',
    o and o.peak_kb, t and t.peak_kb, now = nowv(t, 'us') }
  o, t = alternate('module_call', nil, 'us', 2)
  line('(11) MyLinear module call', o and o.us, t and t.us, 'us/call', 'lower',
    o and ('ours: %.2fx the plain-tensor ops (%.2f us)'):format(o.ratio, o.plain_us) or nil)
  rows[#rows + 1] = { 'MyLinear(4, 3) call with grad', o and o.us, t and t.us, 'µs/call', 'lower', nil, nil, now = nowv(t, 'us') }
end

-- (12) torch.save / torch.load of a 784-512-256-10 MLP's state_dict (ours: fsync included; also
-- without the fsyncs, as PyTorch saves, and loaded with {mmap=true}); best of two runs each
if want(12) then
  local o, t = {}, {}
  local function keep_min(into, from)
    for k, v in pairs(from or {}) do
      if type(v) == 'number' and (into[k] == nil or v < into[k]) then into[k] = v end
    end
  end
  for _ = 1, 2 do
    keep_min(o, ours('save_load', 50))
    merge_best(t, theirs('save_load', 50))
  end
  if not o.save_us then o = nil end
  if not t.save_us then t = nil end
  line('(12) save MLP state_dict', o and o.save_us, t and t.save_us, 'us', 'lower',
    o and o.save_nosync_us and ('ours fsyncs file + directory (atomic, durable); without fsync %.0f us'):format(o.save_nosync_us))
  line('(12) load MLP state_dict', o and o.load_us, t and t.load_us, 'us', 'lower',
    o and o.load_mmap_us and ('ours with {mmap=true} %.0f us'):format(o.load_mmap_us))
  rows[#rows + 1] = { '`torch.save` of a 784-512-256-10 MLP state_dict (ours with fsync)', o and o.save_us, t and t.save_us,
    'µs', 'lower', nil, nil, now = nowv(t, 'save_us') }
  rows[#rows + 1] = { '`torch.save` of the same, ours without fsync (`{sync=false}`)', o and o.save_nosync_us,
    t and t.save_us, 'µs', 'lower', nil, nil, now = nowv(t, 'save_us') }
  rows[#rows + 1] = { '`torch.load` of the same', o and o.load_us, t and t.load_us, 'µs', 'lower', nil, nil, now = nowv(t, 'load_us') }
  rows[#rows + 1] = { '`torch.load` of the same, ours with `{mmap=true}`', o and o.load_mmap_us, t and t.load_us, 'µs',
    'lower', nil, nil, now = nowv(t, 'load_us') }
end

-- (13) exp, log, tanh, sigmoid of 2^20 float32 values (vectorised in core/tensor/vmath.c)
if want(13) then
  local o, t = {}, {}
  for _ = 1, 2 do
    for k, v in pairs(ours('exp_big') or {}) do if not o[k] or v < o[k] then o[k] = v end end
    merge_best(t, theirs('exp_big'))
  end
  for _, op in ipairs({ 'exp', 'log', 'tanh', 'sigmoid' }) do
    local key = op .. '_us'
    line(('(13) %s of 1M float32'):format(op), o[key], t[key], 'us', 'lower')
    rows[#rows + 1] = { ('`%s` of 2^20 float32'):format(op), o[key], t[key], 'µs', 'lower', nil, nil, now = nowv(t, key) }
  end
end

-- issue 12, the modules part: the fused layer norm and the cross-entropy step
-- (`luajit bench/run.lua norm_loss` runs it alone)
if want('norm_loss') then
  local o, t = {}, {}
  for _ = 1, 2 do
    for k, v in pairs(ours('norm_loss') or {}) do if not o[k] or v < o[k] then o[k] = v end end
    merge_best(t, theirs('norm_loss'))
  end
  for _, r in ipairs({ { 'ln_fwd_us', 'F.layer_norm, (1024, 256) float32, no grad' },
    { 'ln_step_us', 'F.layer_norm, (1024, 256) float32, forward + backward' },
    { 'ce_step_us', 'F.cross_entropy, (128, 10), forward + backward' },
    { 'ce1k_step_us', 'F.cross_entropy, (128, 1000), forward + backward' } }) do
    line('(norm_loss) ' .. r[2], o[r[1]], t[r[1]], 'us', 'lower')
    rows[#rows + 1] = { '`' .. r[2]:gsub(', ', '`, ', 1), o[r[1]], t[r[1]], 'µs', 'lower', nil, nil, now = nowv(t, r[1]) }
  end
  if o.ln_composite_step_us then
    print(('(norm_loss) layer norm step as tensor ops (before the fused op): %.1f us'):format(o.ln_composite_step_us))
  end
end

-- (6) OPENBLAS_THREAD_TIMEOUT (with MT_BLAS=openblas, where it matters): core/blas.c sets 4 as it loads
-- OpenBLAS unless the user set it; 28 is OpenBLAS's own default (threads spin ~2^28 cycles before sleeping)
for _, n in ipairs(want(6) and { 384, 768 } or {}) do
  local o4 = ours('matmul_loop', n, 'MT_BLAS=openblas ')
  local o28 = ours('matmul_loop', n, 'MT_BLAS=openblas OPENBLAS_THREAD_TIMEOUT=28 ')
  local t = theirs('matmul_loop', n)
  print(('(6) %dx%d matmul loop (out=), MT_BLAS=openblas: timeout=4 %8.1f us/op   timeout=28 %8.1f us/op%s'):format(n, n,
    o4 and o4.us or -1, o28 and o28.us or -1, t and ('   pytorch %8.1f us/op'):format(t.us) or ''))
end

-- (14) a user's `a:matmul(b)` (the result allocated) on the MLP's shapes and 1024^3, beside the
-- providers' own sgemm called directly (bench_gemm: OpenBLAS with each kernel set this CPU runs at
-- its top level or one below, oneDNN) and PyTorch; alternating, each keeping its best of 3
local gemm_rows = {}
if want(14) then
  local cores = {}
  local out = sh(build .. '/bin/bench_gemm cores')
  for c in out:gmatch('(%w+)\n') do cores[#cores + 1] = c end
  local cpu_top -- keep the top level's kernel sets and the next level's (AVX2 beside AVX-512)
  local levels = { Cooperlake = 4, SkylakeX = 4, Haswell = 3, Zen = 3, Sandybridge = 2 }
  local keep = {}
  for _, c in ipairs(cores) do
    local l = levels[c]
    if l then
      cpu_top = cpu_top or l
      if l >= cpu_top - 1 then keep[#keep + 1] = c end
    end
  end
  local function direct(prov, shape, core)
    local m, k, n = shape:match('(%d+)x(%d+)x(%d+)')
    return figures(('%sBENCH_THREADS=%s %s/bin/bench_gemm %s %s %s %s'):format(
      core and ('OPENBLAS_CORETYPE=' .. core .. ' ') or '', threads, build, prov, m, n, k))
  end
  local function better(old, new) if new and (not old or new.gflops > old.gflops) then return new end return old end
  local shapes = { { '128x784x512', '128×784·784×512' }, { '784x128x512', '784×128·128×512' },
    { '128x512x784', '128×512·512×784' }, { '1024x1024x1024', '1024³' } }
  for _, sh_ in ipairs(shapes) do
    local shape, label = sh_[1], sh_[2]
    local o, oob, ob, obcore, dn, t = nil, nil, nil, nil, nil, nil
    for _ = 1, 3 do
      o = better(o, ours('matmul_shape', shape))
      oob = better(oob, ours('matmul_shape', shape, 'MT_BLAS=openblas '))
      for _, c in ipairs(keep) do
        local r = direct('openblas', shape, c)
        if r and (not ob or r.gflops > ob.gflops) then ob, obcore = r, c end
      end
      dn = better(dn, direct('onednn', shape))
      if have_torch then t = better(t, theirs('matmul_shape', shape)) end
    end
    local bestp, bestname = ob, 'OpenBLAS ' .. tostring(obcore)
    if dn and (not bestp or dn.gflops > bestp.gflops) then bestp, bestname = dn, 'oneDNN' end
    local pct = o and bestp and 100 * o.gflops / bestp.gflops
    print(('(14) %-16s ours %6.1f (MT_BLAS=openblas %6.1f)  OpenBLAS/%s %6.1f  oneDNN %6s  pytorch %6s GFLOP/s  ours at %s of the best (%s)')
      :format(shape, o and o.gflops or -1, oob and oob.gflops or -1, tostring(obcore), ob and ob.gflops or -1,
        dn and ('%.1f'):format(dn.gflops) or 'n/a', t and ('%.1f'):format(t.gflops) or 'n/a',
        pct and ('%.0f%%'):format(pct) or 'n/a', bestname))
    io.stdout:flush()
    gemm_rows[#gemm_rows + 1] = { label, o, oob, ob, obcore, dn, t, pct, bestname }
  end
end

-- (15) one training step of the 784-512-256-10 MLP, batch 128 (nn.Linear, ReLU, cross-entropy,
-- SGD momentum), with 2 threads and with every CPU this machine has; ours with its default BLAS and
-- with MT_BLAS=openblas
local mlp_rows = {}
if want(15) then
  local all = sh('nproc'):match('(%d+)')
  for _, nt in ipairs(all == threads and { threads } or { threads, all }) do
    local o, oob, t
    local e = ('BENCH_THREADS=%s '):format(nt)
    for _ = 1, 3 do
      local r = figures(e .. env:gsub('BENCH_THREADS=%S+ ', '') .. luajit .. ' bench/workloads/train_mlp.lua')
      if r and (not o or r.ms < o.ms) then o = r end
      r = figures(e .. 'MT_BLAS=openblas ' .. env:gsub('BENCH_THREADS=%S+ ', '') .. luajit .. ' bench/workloads/train_mlp.lua')
      if r and (not oob or r.ms < oob.ms) then oob = r end
      if have_torch then
        r = figures(pyenv:gsub('BENCH_THREADS=%S+ ', '') .. e .. python .. ' bench/torch_workloads.py train_mlp')
        if r and have_now then
          NOW[r] = figures(pyenv:gsub('BENCH_THREADS=%S+ ', '') .. e .. venv_python .. ' bench/torch_workloads.py train_mlp')
        end
        t = pick(t, r, 'ms')
      end
    end
    local label = nt == all and ('%s threads (all CPUs)'):format(nt) or ('%s threads'):format(nt)
    line('(15) MLP train step, ' .. label, o and o.ms, t and t.ms, 'ms', 'lower',
      oob and ('ours with MT_BLAS=openblas %.2f ms'):format(oob.ms) or nil)
    mlp_rows[#mlp_rows + 1] = { label, o, oob, t }
    -- speed: the same batch's inference (no_grad forward) and the peak memory of the training process
    -- (each from that side's process with the best training step)
    line('(15) MLP inference, ' .. label, o and o.infer_ms, t and t.infer_ms, 'ms', 'lower')
    mem('MLP train step, ' .. label, o and o.peak_kb, t and t.peak_kb)
    if nt == threads then
      rows[#rows + 1] = { '784-512-256-10 MLP training step, batch 128', o and o.ms, t and t.ms, 'ms', 'lower',
        o and o.peak_kb, t and t.peak_kb, now = nowv(t, 'ms') }
      rows[#rows + 1] = { 'the same MLP\'s inference (no_grad forward)', o and o.infer_ms, t and t.infer_ms, 'ms', 'lower',
        nil, nil, now = nowv(t, 'infer_ms') }
    end
  end
end

-- (attention) forward + backward of a TransformerEncoderLayer (d_model 256, 4 heads, feed-forward
-- 1024, dropout 0, batch_first), seq 64, batch 16; alternating, each keeping its best of 3
-- (issue 12, the attention part; `luajit bench/run.lua transformer` runs it alone)
if want('transformer') then
  local o, t = alternate('transformer', nil, 'ms', 3)
  line('(transformer) encoder layer fwd+bwd', o and o.ms, t and t.ms, 'ms', 'lower')
  rows[#rows + 1] = { 'TransformerEncoderLayer(256, 4, 1024) forward + backward, seq 64, batch 16', o and o.ms,
    t and t.ms, 'ms', 'lower', o and o.peak_kb, t and t.peak_kb, now = nowv(t, 'ms') }
end

-- (pool) issue 12, pooling: forward + backward of LeNet-5's max pools (2x2 on 64x6x24x24 and on
-- 64x16x8x8) and of an adaptive avg pool 64x512x7x7 -> 1x1, float32; alternating, best of 3 runs
-- each (`luajit bench/run.lua pool` for this section alone)
if want('pool') then
  local o, t = {}, {}
  for _ = 1, 3 do
    for k, v in pairs(ours('pool') or {}) do if not o[k] or v < o[k] then o[k] = v end end
    merge_best(t, theirs('pool'))
  end
  for _, w in ipairs({ { 'lenet_pool1_us', 'max_pool2d', '2x2 of 64x6x24x24, forward + backward' },
    { 'lenet_pool2_us', 'max_pool2d', '2x2 of 64x16x8x8, forward + backward' },
    { 'adaptive_avg_us', 'adaptive_avg_pool2d', '64x512x7x7 -> 1x1, forward + backward' } }) do
    line('(pool) ' .. w[2] .. ' ' .. w[3], o[w[1]], t[w[1]], 'us', 'lower')
    rows[#rows + 1] = { ('`F.%s` %s'):format(w[2], w[3]), o[w[1]], t[w[1]], 'µs', 'lower', nil, nil, now = nowv(t, w[1]) }
  end
end

-- (16) issue 12, conv part: conv2d forward and forward + backward in float32 (bench/workloads/conv.lua):
-- the LeNet-5 convs (1->6 5x5 and 6->16 5x5, batch 64) and a 3x3 64-channel 56x56 conv (batch 8);
-- then (issue 27) the ResNet-style 3x3 convs C->C, padding 1, at C/HW 64/56, 128/28, 256/14 and batch 1,
-- 8, 32, forward and backward (input and weight gradients) timed apart; alternating, each side keeping
-- its best of 3 (2 for the batches of 32)
local conv_rows = {}
if want(16) then
  local labels = { lenet1 = 'LeNet conv1 1→6 5×5, batch 64 of 1×28×28', lenet2 = 'LeNet conv2 6→16 5×5, batch 64 of 6×12×12',
    c64 = 'conv 64→64 3×3 pad 1, batch 8 of 64×56×56' }
  local shapes = { 'lenet1', 'lenet2', 'c64' }
  for _, ch in ipairs({ { 64, 56 }, { 128, 28 }, { 256, 14 } }) do
    for _, n in ipairs({ 1, 8, 32 }) do
      local key = ('r%d_%d_%d'):format(ch[1], ch[2], n)
      shapes[#shapes + 1] = key
      labels[key] = ('ResNet conv %d→%d 3×3, batch %d of %d×%d×%d'):format(ch[1], ch[1], n, ch[1], ch[2], ch[2])
    end
  end
  for _, shape in ipairs(shapes) do
    local o, t = {}, {}
    for _ = 1, shape:match('_32$') and 2 or 3 do
      merge_best(o, ours('conv', shape))
      merge_best(t, theirs('conv', shape))
    end
    -- the LeNet convs in µs (ms prints one decimal)
    local lenet = shape:match('^lenet')
    local k, unit = lenet and 1000 or 1, lenet and 'µs' or 'ms'
    local function sc(x) return x and x * k end
    if shape:match('^r') then
      line(('(16) %s forward'):format(shape), o.fwd_ms, t.fwd_ms, 'ms', 'lower',
        nowv(t, 'fwd_ms') and ('%s %.2f ms'):format(now_label, nowv(t, 'fwd_ms')))
      line(('(16) %s backward'):format(shape), o.bwd_ms, t.bwd_ms, 'ms', 'lower',
        nowv(t, 'bwd_ms') and ('%s %.2f ms'):format(now_label, nowv(t, 'bwd_ms')))
      conv_rows[#conv_rows + 1] = { labels[shape], o, t, NOW[t] }
      rows[#rows + 1] = { labels[shape] .. ', forward', o.fwd_ms, t.fwd_ms, 'ms', 'lower', nil, nil, now = nowv(t, 'fwd_ms') }
      rows[#rows + 1] = { labels[shape] .. ', backward', o.bwd_ms, t.bwd_ms, 'ms', 'lower', nil, nil, now = nowv(t, 'bwd_ms') }
    else
      line(('(16) %s forward'):format(shape), sc(o.fwd_ms), sc(t.fwd_ms), unit, 'lower')
      line(('(16) %s forward+backward'):format(shape), sc(o.fwd_bwd_ms), sc(t.fwd_bwd_ms), unit, 'lower')
      rows[#rows + 1] = { labels[shape] .. ', forward', sc(o.fwd_ms), sc(t.fwd_ms), unit, 'lower', nil, nil, now = sc(nowv(t, 'fwd_ms')) }
      rows[#rows + 1] = { labels[shape] .. ', forward + backward', sc(o.fwd_bwd_ms), sc(t.fwd_bwd_ms), unit, 'lower', nil, nil, now = sc(nowv(t, 'fwd_bwd_ms')) }
    end
  end
end

-- (lstm) recurrent layers (issue 12, rnn part): a 2-layer LSTM (input 128, hidden 256, batch_first,
-- seq 32, batch 32), forward + backward; alternating, each keeping its best of 3
-- (`luajit bench/run.lua lstm` runs it alone)
if want('lstm') then
  local o, t
  for _ = 1, 3 do
    local r = ours('lstm')
    if r and (not o or r.ms < o.ms) then o = r end
    t = pick(t, theirs('lstm'), 'ms')
  end
  line('(lstm) 2-layer LSTM fwd+bwd', o and o.ms, t and t.ms, 'ms', 'lower')
  rows[#rows + 1] = { '2-layer LSTM 128-256, seq 32, batch 32, forward + backward', o and o.ms, t and t.ms, 'ms', 'lower',
    o and o.peak_kb, t and t.peak_kb, now = nowv(t, 'ms') }
end

-- (lenet) issue 12: a LeNet-5 training step (conv 1->6 5x5, ReLU, max-pool 2, conv 6->16 5x5, ReLU,
-- max-pool 2, flatten, 256->120->84->10), batch 64 of 1x28x28, cross-entropy, plain SGD; alternating,
-- each keeping its best of 3 (`luajit bench/run.lua lenet` runs it alone)
if want('lenet') then
  local o, t = alternate('lenet', nil, 'ms', 3)
  line('(lenet) LeNet-5 train step', o and o.ms, t and t.ms, 'ms', 'lower')
  rows[#rows + 1] = { 'LeNet-5 training step, batch 64 of 1×28×28 (SGD)', o and o.ms, t and t.ms, 'ms', 'lower',
    o and o.peak_kb, t and t.peak_kb, now = nowv(t, 'ms') }
end

-- (program) issue 26: LeNet-5 inference at batch 1 run by the C runner (torch.export + moontorch-run),
-- against PyTorch's eager module under no_grad (the target: at most 0.5 of its time); the Lua module's
-- own time printed beside (`luajit bench/run.lua program`)
if want('program') then
  local o, t = ours('program_lenet'), theirs('program_lenet')
  line('(program) LeNet-5 batch 1, C runner', o and o.runner_us, t and t.us, 'us', 'lower')
  if o then print(('%-34s ours %10.1f us (the module called from Lua)'):format('(program) LeNet-5 batch 1, Lua', o.lua_us)) end
  -- ONNX Runtime (bench/.venv's onnxruntime) on our torch.onnx.export of the same LeNet and on PyTorch
  -- 1.13's export of it: the C runner's time over ORT's (the target: at most 1.0)
  if o and o.ort_ours_us then
    print(('%-34s ORT %10.1f us on our export (%.2fx: runner / ORT; ORT output max diff %.2g)'):format(
      '(program) LeNet-5 batch 1, ORT', o.ort_ours_us, o.runner_us / o.ort_ours_us, o.ort_ours_maxdiff or -1))
    if o.ort_pytorch_us then
      print(('%-34s ORT %10.1f us on PyTorch 1.13\'s export (%.2fx: runner / ORT)'):format(
        '(program) LeNet-5 batch 1, ORT', o.ort_pytorch_us, o.runner_us / o.ort_pytorch_us))
    end
  elseif o then
    print('(program) LeNet-5 batch 1, ORT: onnxruntime is not in bench/.venv (bench/venv.sh installs it)')
  end
  rows[#rows + 1] = { 'LeNet-5 inference, batch 1 (C runner: torch.export + moontorch-run)', o and o.runner_us, t and t.us,
    'us', 'lower', now = nowv(t, 'us') }
end

-- (fashion) issue 13: an epoch of the Fashion-MNIST demo (examples/fashion_mnist.lua: LeNet-5, Adam
-- with a one-cycle schedule, batch 64, 60 000 images, then the 10 000 test images) beside its PyTorch
-- twin (bench/fashion_mnist.py), each run as a user runs it (one process, data loaded from Debian's
-- dataset-fashion-mnist); alternating, each keeping its best of 2 (`luajit bench/run.lua fashion`)
if want('fashion') then
  local root = os.getenv('BENCH_FASHION_ROOT') or '/usr/share/datasets/fashion-mnist'
  local f = io.open(root .. '/train-images-idx3-ubyte.gz', 'rb') or io.open(root .. '/train-images-idx3-ubyte', 'rb')
  if not f then
    print(('(fashion) skipped: no Fashion-MNIST in %s (apt-get install dataset-fashion-mnist)'):format(root))
  else
    f:close()
    local out_dir = os.tmpname()
    os.remove(out_dir)
    local function run_ours()
      local out = sh(('%s%s bin/moontorch examples/fashion_mnist.lua --epochs 1 --threads %s --data %s --out %s </dev/null')
        :format(env, luajit, threads, root, out_dir))
      local acc, tr, te = out:match('test accuracy ([%d.]+)%% %(train ([%d.]+) s, test ([%d.]+) s%)')
      if not tr then io.stderr:write('bench: examples/fashion_mnist.lua failed:\n', out, '\n') return nil end
      return { train_s = tonumber(tr), epoch_s = tonumber(tr) + tonumber(te), acc = tonumber(acc) }
    end
    local function run_theirs(py)
      if not have_torch then return nil end
      local out = sh(('%s%s bench/fashion_mnist.py --epochs 1 --threads %s --data %s'):format(pyenv, py or python, threads, root))
      local tr, te, acc = out:match('train_s ([%d.]+) test_s ([%d.]+) .- acc ([%d.]+)')
      if not tr then io.stderr:write('bench: bench/fashion_mnist.py failed:\n', out, '\n') return nil end
      return { train_s = tonumber(tr), epoch_s = tonumber(tr) + tonumber(te), acc = tonumber(acc) * 100 }
    end
    local o, t
    for _ = 1, 2 do
      local oi, ti = run_ours(), run_theirs()
      if ti and have_now then NOW[ti] = run_theirs(venv_python) end
      if oi and (not o or oi.epoch_s < o.epoch_s) then o = oi end
      t = pick(t, ti, 'epoch_s')
    end
    os.execute(('rm -rf %q'):format(out_dir))
    local acc = ('test accuracy after it: ours %s%%, pytorch %s%%'):format(o and ('%.2f'):format(o.acc) or 'n/a',
      t and ('%.2f'):format(t.acc) or 'n/a')
    line('(fashion) demo epoch, training', o and o.train_s * 1e3, t and t.train_s * 1e3, 'ms', 'lower')
    line('(fashion) demo epoch, train + test', o and o.epoch_s * 1e3, t and t.epoch_s * 1e3, 'ms', 'lower', acc)
    rows[#rows + 1] = { 'Fashion-MNIST demo: one epoch (60 000 images, then 10 000 tested)', o and o.epoch_s * 1e3,
      t and t.epoch_s * 1e3, 'ms', 'lower', now = nowv(t, 'epoch_s') and nowv(t, 'epoch_s') * 1e3 }
  end
end

-- (softmax) s6-vec: the softmax family of a training step (the vector kernels of core/tensor/softmax.c);
-- alternating, each side keeping its best of 3 runs (`luajit bench/run.lua softmax` runs it alone)
if want('softmax') then
  local o, t = {}, {}
  for _ = 1, 3 do
    for k, v in pairs(ours('softmax') or {}) do if not o[k] or v < o[k] then o[k] = v end end
    merge_best(t, theirs('softmax'))
  end
  for _, r in ipairs({ { 'sm_fwd_us', 'F.softmax, 16x4x64x64 float32 over the last dim, no grad' },
    { 'sm_step_us', 'F.softmax, 16x4x64x64 float32 over the last dim, forward + backward' },
    { 'lsm_fwd_us', 'F.log_softmax, 128x1000 float32, no grad' },
    { 'sm_dim1_step_us', 'F.softmax, 32x64x32x32 float32 over the channels, forward + backward' },
    { 'ce1k_step_us', 'F.cross_entropy, 128x1000, forward + backward' } }) do
    line('(softmax) ' .. r[2], o[r[1]], t[r[1]], 'us', 'lower')
    rows[#rows + 1] = { '`' .. r[2]:gsub(', ', '`, ', 1), o[r[1]], t[r[1]], 'µs', 'lower', nil, nil, now = nowv(t, r[1]) }
  end
end

-- (ddp) issue 23: data-parallel training of the 784-512-256-10 MLP, one thread per process: one
-- process at batch 128, then 2 ranks (mpirun) under nn.parallel.DistributedDataParallel at global
-- batch 256 (mpirun --bind-to none, as the launcher), beside PyTorch's DDP on gloo in the same setup
-- (bench/ddp_gloo.py: processes unbound too); the runs
-- alternate 5 times, each keeping its best (`luajit bench/run.lua ddp` runs it alone)
local ddp_rows = {}
if want('ddp') then
  local mpirun = sh('command -v mpirun'):match('(%S+)')
  local lib = io.open(build .. '/lib/moontorch/libmoontorch_mpi.so', 'rb')
  if lib then lib:close() end
  if not mpirun or not lib then
    print('(ddp) skipped: no mpirun or no libmoontorch_mpi.so in this build (Open MPI: libopenmpi-dev openmpi-bin)')
  else
    local env1 = ('MOONTORCH_BUILD_DIR=%s BENCH_THREADS=1 '):format(build)
    local root_flag = sh('id -u'):match('^0') and ' --allow-run-as-root' or ''
    local runs = {
      one = function() return figures(env1 .. luajit .. ' bench/workloads/ddp_mlp.lua 50') end,
      two = function()
        return figures(('%s%s -np 2 --bind-to none%s %s bench/workloads/ddp_mlp.lua 50'):format(env1, mpirun, root_flag, luajit))
      end,
      view = function()
        return figures(('%sBENCH_DDP_VIEW=1 %s -np 2 --bind-to none%s -x BENCH_DDP_VIEW %s bench/workloads/ddp_mlp.lua 50')
          :format(env1, mpirun, root_flag, luajit))
      end,
      t1 = function() return have_torch and figures(pyenv .. 'BENCH_THREADS=1 ' .. python .. ' bench/ddp_gloo.py 1 50') end,
      t2 = function() return have_torch and figures(pyenv .. 'BENCH_THREADS=1 ' .. python .. ' bench/ddp_gloo.py 2 50') end,
    }
    local best = {}
    for _ = 1, 5 do
      for _, k in ipairs({ 'one', 'two', 'view', 't1', 't2' }) do
        local r = runs[k]()
        if r and r.ms and (not best[k] or r.ms < best[k].ms) then best[k] = r end
      end
    end
    local one, two, view, t1, t2 = best.one, best.two, best.view, best.t1, best.t2
    line('(ddp) MLP step, 1 process, batch 128', one and one.ms, t1 and t1.ms, 'ms', 'lower')
    for _, r in ipairs({ { '', two }, { ', gradient_as_bucket_view', view } }) do
      local d = r[2]
      local extra = d and one and ('%.0f samples/s = %.2fx one process; all-reduce %.3f ms/step, not hidden %.3f ms/step')
        :format(d.samples_s, d.samples_s / one.samples_s, d.comm_ms, d.unhidden_ms) or nil
      line('(ddp) 2 ranks, global batch 256' .. r[1], d and d.ms, r[1] == '' and t2 and t2.ms or nil, 'ms', 'lower', extra)
    end
    if t2 and t1 then
      print(('(ddp) pytorch gloo: 2 ranks %.0f samples/s = %.2fx its one process'):format(t2.samples_s, t2.samples_s / t1.samples_s))
    end
    -- where a step's time goes (rank 0's best round): forward, zero_grad + backward (with DDP's
    -- all-reduce and its wait), the optimizer; and the CPU time of rank 0's process per step
    local phases = {}
    for _, r in ipairs({ { 'one process', one }, { '2 ranks', two }, { 'bucket view', view } }) do
      local d = r[2]
      if d and d.fwd_ms then
        phases[#phases + 1] = ('%s %.3f/%.3f/%.3f (cpu %.3f)'):format(r[1], d.fwd_ms, d.bwd_ms, d.opt_ms, d.cpu_ms or 0)
      end
    end
    if #phases > 0 then print('(ddp) ms per step, forward/backward/optimizer: ' .. table.concat(phases, ', ')) end
    ddp_rows = { one = one, two = two, view = view, t1 = t1, t2 = t2 }
    rows[#rows + 1] = { 'MLP 784-512-256-10 step, 1 thread, batch 128, one process', one and one.ms, t1 and t1.ms, 'ms',
      'lower', one and one.peak_kb, t1 and t1.peak_kb }
    rows[#rows + 1] = { 'the same, 2 ranks × 1 thread under DDP, global batch 256 (PyTorch: gloo)', two and two.ms,
      t2 and t2.ms, 'ms', 'lower', two and two.peak_kb, t2 and t2.peak_kb }
  end
end

-- (sparse) issue 24: a Linear(4096, 4096) at batch 64 after pruning 90% of its weight: ours keeps
-- the weight in CSR form (prune.remove{sparse=true}), PyTorch's pruned forward is dense (its own
-- CSR product beside); ours dense and sparse measured in one process, alternating
if want('sparse') then
  local o, t = {}, {}
  for _ = 1, 2 do
    for k, v in pairs(ours('sparse_linear') or {}) do if not o[k] or v < o[k] then o[k] = v end end
    for k, v in pairs(theirs('sparse_linear') or {}) do if not t[k] or v < t[k] then t[k] = v end end
  end
  line('(sparse) Linear 4096, 90% pruned, dense', o.dense_ms, t.dense_ms, 'ms', 'lower')
  line('(sparse) the same, ours CSR / theirs CSR', o.sparse_ms, t.sparse_ms, 'ms', 'lower',
    o.sparse_ms and ('ours CSR %.2fx faster than ours dense'):format(o.dense_ms / o.sparse_ms) or nil)
  rows[#rows + 1] = { 'Linear(4096, 4096) forward, batch 64, 90% pruned: ours CSR vs PyTorch\'s pruned (dense)',
    o.sparse_ms, t.dense_ms, 'ms', 'lower', nil, nil }
end

-- (fx) issue 24: inference of a ResNet block and of a LeNet-5 with batch norms, as written and after
-- conv-batchnorm fusion (ours: fx.passes.fuse; PyTorch: torch.fx.experimental.optimization.fuse)
if want('fx') then
  local o, t = {}, {}
  for _ = 1, 2 do
    for k, v in pairs(ours('fx_fuse') or {}) do if not o[k] or v < o[k] then o[k] = v end end
    for k, v in pairs(theirs('fx_fuse') or {}) do if not t[k] or v < t[k] then t[k] = v end end
  end
  for _, r in ipairs({ { 'block', 'ResNet block 64ch, batch 8 of 56x56, eval' }, { 'lenet', 'LeNet-5 with batch norms, batch 64, eval' } }) do
    local k = r[1]
    line('(fx) ' .. r[2], o[k .. '_ms'], t[k .. '_ms'], 'ms', 'lower')
    line('(fx) the same, conv-bn fused', o[k .. '_fused_ms'], t[k .. '_fused_ms'], 'ms', 'lower',
      o[k .. '_ms'] and ('ours fused %.2fx faster than ours unfused; max difference %.1e'):format(
        o[k .. '_ms'] / o[k .. '_fused_ms'], o[k .. '_maxdiff'] or -1) or nil)
    rows[#rows + 1] = { r[2] .. ', conv-bn fused by fx', o[k .. '_fused_ms'], t[k .. '_fused_ms'], 'ms', 'lower', nil, nil }
  end
end

-- (observe) issue 24: the observation point (lua/observe.lua) costs nothing while no profiler or
-- tracer observes: the small-op rows of this build beside $BENCH_BASE_BUILD, a build of the tree
-- before it (`git archive main | tar -x -C /tmp/base && cmake -S /tmp/base -B /tmp/base/build ...`),
-- alternating in one run, each keeping its best of 5; also the same rows while a profile records
if want('observe') then
  local base = os.getenv('BENCH_BASE_BUILD')
  if not base then
    print('(observe) set BENCH_BASE_BUILD to a build directory of the tree before the observation point')
  else
    local cases = { { 'add_small', nil, 'a + b, 4 x float32' }, { 'add_small_grad', nil, 'a + b with grad' },
      { 'matmul_small', 64, '64x64 matmul' }, { 'module_call', nil, 'MyLinear module call' },
      { 'train_modules', 10000, "the note's training loop" } }
    for _, c in ipairs(cases) do
      local new, old
      for _ = 1, 5 do
        local o = figures(env .. luajit .. ' bench/workloads/' .. c[1] .. '.lua ' .. (c[2] or ''))
        if o and (not new or o.us < new.us) then new = o end
        local b = figures(env:gsub('MOONTORCH_BUILD_DIR=%S+', 'MOONTORCH_BUILD_DIR=' .. base) .. luajit ..
          ' bench/workloads/' .. c[1] .. '.lua ' .. (c[2] or ''))
        if b and (not old or b.us < old.us) then old = b end
      end
      if new and old then
        print(('(observe) %-28s this tree %8.3f us   before %8.3f us   ratio %.3f'):format(c[3], new.us, old.us, new.us / old.us))
      end
    end
  end
end

-- (dataloader) issue 27 part 5: a dataset whose __getitem does 1 ms of Lua (Python) work, batches
-- of 16, loaded in the iterating process and by 2 worker processes; alternating, best of 2 runs
-- (`luajit bench/run.lua dataloader` runs it alone). The figure that matters is ours with 2 workers
-- against ours with none: the work shares the machine's cores with whatever else runs.
if want('dataloader') then
  local res = {}
  for _ = 1, 2 do
    for _, w in ipairs({ 0, 2 }) do
      local o, t = ours('dataloader', w), theirs('dataloader', w)
      for side, v in pairs({ o = o and o.ms_per_batch, t = t and t.ms_per_batch, n = nowv(t, 'ms_per_batch') }) do
        local k = side .. w
        if not res[k] or v < res[k] then res[k] = v end
      end
    end
  end
  for _, w in ipairs({ 0, 2 }) do
    local label = ('DataLoader, 1 ms of work per sample, batch 16, num_workers=%d'):format(w)
    line('(dataloader) ' .. label, res['o' .. w], res['t' .. w], 'ms', 'lower')
    rows[#rows + 1] = { label .. ' (ms per batch)', res['o' .. w], res['t' .. w], 'ms', 'lower', nil, nil, now = res['n' .. w] }
  end
  if res.o0 and res.o2 then
    print(('(dataloader) 2 workers feed batches %.2fx faster than none (ours)%s%s'):format(res.o0 / res.o2,
      res.t0 and res.t2 and ('; %s %.2fx'):format(torch_label, res.t0 / res.t2) or '',
      res.n0 and res.n2 and ('; %s %.2fx'):format(now_label, res.n0 / res.n2) or ''))
  end
end

-- (lowp) issue 25: low precision: a bfloat16 autocast training step of the 784-512-256-10 MLP (batch 256),
-- its dynamically quantized inference (batch 128), the demo's LeNet-5 statically quantized (1000 images),
-- a bfloat16 product; each process measures float32 and low precision alternately, both sides best of 2
-- runs (`luajit bench/run.lua lowp` runs it alone)
if want('lowp') then
  local o, t = {}, {}
  for _ = 1, 2 do
    for k, v in pairs(ours('lowp') or {}) do if not o[k] or v < o[k] or k:find('gflops') and v > o[k] then o[k] = v end end
    for k, v in pairs(theirs('lowp') or {}) do if not t[k] or v < t[k] or k:find('gflops') and v > t[k] then t[k] = v end end
  end
  local ROWS = {
    { 'f32_step_ms', 'MLP 784-512-256-10 training step, batch 256, float32', 'ms' },
    { 'amp_step_ms', 'the same step under bfloat16 autocast', 'ms' },
    { 'f32_infer_ms', 'the MLP\'s inference, batch 128, float32', 'ms' },
    { 'qdyn_infer_ms', 'the same after quantize_dynamic (int8 weights)', 'ms' },
    { 'lenet_f32_ms', 'LeNet-5 inference, 1000 images, float32', 'ms' },
    { 'lenet_q_ms', 'the same statically quantized (conv-relu, linear-relu fused)', 'ms' },
    { 'f32_gflops', '1024³ float32 matmul', 'GFLOP/s' },
    { 'bf16_gflops', '1024³ bfloat16 matmul', 'GFLOP/s' },
  }
  for _, r in ipairs(ROWS) do
    local better = r[3] == 'GFLOP/s' and 'higher' or 'lower'
    line('(lowp) ' .. r[2], o[r[1]], t[r[1]], r[3], better)
    rows[#rows + 1] = { r[2], o[r[1]], t[r[1]], r[3], better, nil, nil }
  end
  if o.amp_step_ms and o.f32_step_ms then
    print(('(lowp) ours: amp step / float32 step %.2f; quantized / float32 inference %.2f; LeNet quantized / float32 %.2f')
      :format(o.amp_step_ms / o.f32_step_ms, o.qdyn_infer_ms / o.f32_infer_ms, o.lenet_q_ms / o.lenet_f32_ms))
  end
  if o.amp_step_ms and t.amp_step_ms then
    print(('(lowp) ours / PyTorch: amp step %.2f; dynamic quantized inference %.2f; quantized LeNet %.2f')
      :format(o.amp_step_ms / t.amp_step_ms, o.qdyn_infer_ms / t.qdyn_infer_ms, o.lenet_q_ms / t.lenet_q_ms))
  end
end

-- (linalg) torch.linalg's decompositions on 8 float32 256x256 matrices, ONE thread on both sides (LAPACK inside;
-- OMP/OpenBLAS threads 1, PyTorch with OMP_WAIT_POLICY=PASSIVE), one run each side (`luajit bench/run.lua linalg`)
if want('linalg') then
  local one = 'OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 '
  local o = ours('linalg', nil, one)
  local t, n
  if have_torch then
    t = figures(one .. pyenv .. python .. ' bench/torch_workloads.py linalg')
    if have_now then n = figures(one .. pyenv .. venv_python .. ' bench/torch_workloads.py linalg') end
  end
  o, t, n = o or {}, t or {}, n or {}
  for _, r in ipairs({ { 'cholesky_ms', 'linalg.cholesky' }, { 'qr_ms', 'linalg.qr' }, { 'svd_ms', 'linalg.svd (reduced)' },
    { 'eigh_ms', 'linalg.eigh' }, { 'solve_ms', 'linalg.solve (B 8x256x32)' }, { 'inv_ms', 'linalg.inv' },
    { 'det_ms', 'linalg.det' }, { 'lstsq_ms', 'linalg.lstsq (B 8x256x32, gelsy)' } }) do
    local name = r[2] .. ', 8x256x256 float32, 1 thread'
    line('(linalg) ' .. name, o[r[1]], t[r[1]], 'ms', 'lower', n[r[1]] and ('today\'s pytorch %.1f ms'):format(n[r[1]]))
    rows[#rows + 1] = { '`' .. r[2]:gsub(' %(', '` (', 1):gsub('^([^`]*)$', '%1`') .. ', 8×256×256 float32, 1 thread', o[r[1]],
      t[r[1]], 'ms', 'lower', nil, nil, now = n[r[1]] }
  end
end

-- the table
print()
local function vs(o, t, better)
  local rr = ratio(o, t, better)
  return rr and ('%.2f× %s'):format(rr, rr >= 1 and 'faster' or 'slower') or 'n/a'
end
if have_now then
  print(('| workload | moontorch | %s | ours vs %s | %s | ours vs %s | peak RSS ours / %s |'):format(torch_label,
    torch_label, now_label, now_label, torch_label))
  print('| --- | --- | --- | --- | --- | --- | --- |')
else
  print(('| workload | moontorch | %s | ours vs PyTorch | peak RSS ours / PyTorch |'):format(torch_label))
  print('| --- | --- | --- | --- | --- |')
end
for _, r in ipairs(rows) do
  local name, o, t, unit, better, om, tm, blas = r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8]
  local note = blas and (' (OpenBLAS sgemm: %.1f)'):format(blas) or ''
  local memcol = om and ('%.0f MB / %s'):format(om / 1024, tm and ('%.0f MB'):format(tm / 1024) or 'n/a') or '–'
  local cur = have_now and (' %s | %s |'):format(r.now and (fmt(r.now, unit) .. ' ' .. unit) or 'n/a', vs(o, r.now, better)) or ''
  print(('| %s | %s %s%s | %s | %s |%s %s |'):format(name, fmt(o, unit), unit, note, t and (fmt(t, unit) .. ' ' .. unit) or 'n/a',
    vs(o, t, better), cur, memcol))
end
print()
if #conv_rows > 0 then
  -- issue 27's target: ours at most 0.8 of PyTorch's time on these
  print(('| 3×3 convolution, float32, %s threads | forward: ours | %s | ours / %s | %s | ours / %s | backward: ours | %s | ours / %s | %s | ours / %s |')
    :format(threads, torch_label, torch_label, now_label, now_label, torch_label, torch_label, now_label, now_label))
  print('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
  local function ms(x) return x and ('%.2f ms'):format(x) or 'n/a' end
  local function q(a, b) return a and b and ('%.2f'):format(a / b) or 'n/a' end
  for _, r in ipairs(conv_rows) do
    local o, t, n = r[2], r[3], r[4] or {}
    print(('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |'):format(r[1], ms(o.fwd_ms), ms(t.fwd_ms),
      q(o.fwd_ms, t.fwd_ms), ms(n.fwd_ms), q(o.fwd_ms, n.fwd_ms), ms(o.bwd_ms), ms(t.bwd_ms), q(o.bwd_ms, t.bwd_ms),
      ms(n.bwd_ms), q(o.bwd_ms, n.bwd_ms)))
  end
  print()
end
if not have_now then
  print(('(no %s: %s)'):format('column for today\'s PyTorch', have_torch and
    ('%s cannot import torch; bench/venv.sh installs it from the Python package index%s'):format(venv_python,
      io.open('bench/.venv-failed') and (': its last try failed: ' .. io.open('bench/.venv-failed'):read('*l')) or '')
    or 'PyTorch 1.13 is not importable either'))
end
print(('| float32 product, %s threads (GFLOP/s) | moontorch `a:matmul(b)` | moontorch, `MT_BLAS=openblas` | OpenBLAS sgemm, its best kernels | oneDNN `dnnl_sgemm` | ours / best provider | %s |'):format(threads, torch_label))
print('| --- | --- | --- | --- | --- | --- | --- |')
local function g(r) return r and ('%.1f'):format(r.gflops) or 'n/a' end
for _, r in ipairs(gemm_rows) do
  print(('| %s | %s | %s | %s (%s) | %s | %s | %s |'):format(r[1], g(r[2]), g(r[3]), g(r[4]), tostring(r[5]), g(r[6]),
    r[8] and ('%.0f%% (of %s)'):format(r[8], r[9]) or 'n/a', g(r[7])))
end
print()
print(('| MLP 784-512-256-10 train step, batch 128 | moontorch | moontorch, `MT_BLAS=openblas` | %s |'):format(torch_label))
print('| --- | --- | --- | --- |')
local function ms(r) return r and ('%.2f ms'):format(r.ms) or 'n/a' end
for _, r in ipairs(mlp_rows) do
  print(('| %s | %s | %s | %s |'):format(r[1], ms(r[2]), ms(r[3]), ms(r[4])))
end
if next(ddp_rows) then
  local d = ddp_rows
  local function sps(r) return r and ('%.0f'):format(r.samples_s) or 'n/a' end
  local function x(r, base) return r and base and ('%.2f×'):format(r.samples_s / base.samples_s) or 'n/a' end
  print()
  print(('| MLP 784-512-256-10, 1 thread per process | samples/s | vs one process | step | all-reduce per step | not hidden by backward | %s DDP (gloo) step |'):format(torch_label))
  print('| --- | --- | --- | --- | --- | --- | --- |')
  print(('| one process, batch 128 | %s | 1× | %s | – | – | %s |'):format(sps(d.one), ms(d.one), ms(d.t1)))
  for _, r in ipairs({ { '2 ranks, DDP, global batch 256', d.two, d.t2 }, { 'the same, `gradient_as_bucket_view`', d.view } }) do
    local v = r[2]
    print(('| %s | %s | %s | %s | %s | %s | %s |'):format(r[1], sps(v), x(v, d.one), ms(v),
      v and ('%.3f ms'):format(v.comm_ms) or 'n/a', v and ('%.3f ms'):format(v.unhidden_ms) or 'n/a', r[3] and ms(r[3]) or '–'))
  end
end
print(('\n(%d s; %s threads; speed ratio > 1 means moontorch is faster)'):format(math.floor(now() - t_start + 0.5), threads))
