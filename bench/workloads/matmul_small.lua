-- 64x64 float32 matmul (or N given as arg[1]): microseconds per op, `a:matmul(b)` from Lua;
-- with arg[2] == 'out', `torch.matmul(a, b, {out=c})` into a reused c.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local n = tonumber(arg[1]) or 64
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
local a, b = B.filled(torch, n, n, 0.5), B.filled(torch, n, n, 0.25)
local reps = math.floor(4e7 / (n * n * n)) + 20
local t
if arg[2] == 'out' then -- into a reused result: the kernel without the result's allocation and lifetime
  local o = { out = torch.empty(n, n) }
  t = B.best(function(k) for _ = 1, k do torch.matmul(a, b, o) end end, reps, 7)
else
  t = B.best(function(k) for _ = 1, k do local c = a:matmul(b) end end, reps, 7)
end
B.report('us', t * 1e6)
B.report('gflops', 2 * n * n * n / t / 1e9)
B.report('peak_kb', B.peak_kb())
