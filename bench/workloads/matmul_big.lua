-- N x N x N float32 matmul (N = arg[1], default 1024): GFLOP/s, best of a few after a warm-up.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local n = tonumber(arg[1]) or 1024
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
local a, b = B.filled(torch, n, n, 0.5), B.filled(torch, n, n, 0.25)
local reps = n >= 4096 and 1 or 4
local rounds = n >= 4096 and 2 or 4
local t
if arg[2] == 'out' then -- into a reused result, as bench_sgemm does
  local o = { out = torch.empty(n, n) }
  t = B.best(function(k) for _ = 1, k do torch.matmul(a, b, o) end end, reps, rounds)
else
  t = B.best(function(k) for _ = 1, k do local c = a:matmul(b) end end, reps, rounds)
end
B.report('gflops', 2 * n * n * n / t / 1e9)
B.report('ms', t * 1e3)
B.report('peak_kb', B.peak_kb())
