-- torch.save / torch.load of a 784-512-256-10 MLP's state_dict (6 float32 tensors, 2.1 MB) to a
-- file under /tmp. Microseconds per save (fsync included: our saves are atomic and durable) and
-- per load.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
local net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
local sd = net:state_dict()
local path = os.tmpname()
local n = tonumber(arg[1]) or 50
local save = B.best(function(k) for _ = 1, k do torch.save(sd, path) end end, n, 3)
local load = B.best(function(k) for _ = 1, k do torch.load(path) end end, n, 3)
os.remove(path)
B.report('save_us', save * 1e6)
B.report('load_us', load * 1e6)
B.report('peak_kb', B.peak_kb())
