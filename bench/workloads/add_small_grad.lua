-- `c = a + b` with a, b requiring grad (4 float32 elements each): microseconds per op, graph
-- recording included.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
local a = torch.tensor({ 1, 2, 3, 4 }, { requires_grad = true })
local b = torch.tensor({ 5, 6, 7, 8 }, { requires_grad = true })
local t = B.best(function(k) for _ = 1, k do local c = a + b end end, 200000, 5)
B.report('us', t * 1e6)
B.report('peak_kb', B.peak_kb())
