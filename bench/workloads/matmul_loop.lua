-- A loop of N x N float32 matmuls into a reused out= tensor (mid sizes go to OpenBLAS's
-- threads): microseconds per op. Run with and without OPENBLAS_THREAD_TIMEOUT set by the user to
-- see what lua/ffi.lua's default of 4 does.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local n = tonumber(arg[1]) or 384
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
local a, b = B.filled(torch, n, n, 0.5), B.filled(torch, n, n, 0.25)
local out = torch.empty(n, n)
local o = { out = out }
local reps = math.floor(2e9 / (n * n * n)) + 5
local t = B.best(function(k) for _ = 1, k do torch.matmul(a, b, o) end end, reps, 5)
B.report('us', t * 1e6)
B.report('peak_kb', B.peak_kb())
