-- exp, log, tanh and sigmoid on N float32 values (N = arg[1], default 2^20), each into a new
-- tensor: microseconds per call, best of a few after a warm-up. The inputs are evenly spaced
-- (torch.linspace) over [-10, 10], and over [0.001, 1000] for log.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local n = tonumber(arg[1]) or 1048576
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
local x = torch.linspace(-10, 10, n)
local pos = torch.linspace(0.001, 1000, n)
local reps = math.max(1, math.floor(2 ^ 24 / n))
local function time(f, a)
  return B.best(function(k) for _ = 1, k do local y = f(a) end end, reps, 5)
end
B.report('exp_us', time(torch.exp, x) * 1e6)
B.report('log_us', time(torch.log, pos) * 1e6)
B.report('tanh_us', time(torch.tanh, x) * 1e6)
B.report('sigmoid_us', time(torch.sigmoid, x) * 1e6)
B.report('peak_kb', B.peak_kb())
