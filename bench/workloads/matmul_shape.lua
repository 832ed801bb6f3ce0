-- A user's `a:matmul(b)` on an M x K by K x N float32 product (arg[1] = 'MxKxN', default the MLP's
-- 128x784x512), allocation of the result included: GFLOP/s and microseconds, best of rounds.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local m, k, n = (arg[1] or '128x784x512'):match('^(%d+)x(%d+)x(%d+)$')
m, k, n = tonumber(m), tonumber(k), tonumber(n)
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
local a, b = B.filled(torch, m, k, 0.5), B.filled(torch, k, n, 0.25)
local flop = 2 * m * n * k
local reps = math.floor(4e8 / flop) + 1 -- about 2 ms of work per round
local t = B.best(function(r) for _ = 1, r do local c = a:matmul(b) end end, reps, 15)
B.report('gflops', flop / t / 1e9)
B.report('us', t * 1e6)
B.report('peak_kb', B.peak_kb())
