-- torch.save / torch.load of a 784-512-256-10 MLP's state_dict (torch.OrderedDict of 6 float32
-- tensors, 2.1 MB) to a file under /tmp ($TMPDIR if set). Microseconds per call:
--   save_us         torch.save as it is: fsync of the file and of its directory included (the
--                   atomic, durable replace; PyTorch's torch.save does not fsync)
--   save_nosync_us  torch.save(sd, path, {sync = false}): the same bytes, temp file and rename,
--                   without the fsyncs (what PyTorch's torch.save does about durability)
--   load_us         torch.load (copies into fresh tensors; checksum verified)
--   load_mmap_us    torch.load(path, {mmap = true}) (views of a private mapping; checksum verified)
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
local net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
local sd = net:state_dict()
-- under $TMPDIR when set (as Python's tempfile does for the PyTorch side), else /tmp
local path = os.getenv('TMPDIR') and (os.getenv('TMPDIR') .. '/moontorch_save_load_bench.pt') or os.tmpname()
local n = tonumber(arg[1]) or 50
local nosync = { sync = false }
local mm = { mmap = true }
local save = B.best(function(k) for _ = 1, k do torch.save(sd, path) end end, n, 3)
local save_nosync = B.best(function(k) for _ = 1, k do torch.save(sd, path, nosync) end end, n, 3)
local load = B.best(function(k) for _ = 1, k do torch.load(path) end end, n, 3)
local load_mmap = B.best(function(k) for _ = 1, k do torch.load(path, mm) end end, n, 3)
os.remove(path)
B.report('save_us', save * 1e6)
B.report('save_nosync_us', save_nosync * 1e6)
B.report('load_us', load * 1e6)
B.report('load_mmap_us', load_mmap * 1e6)
B.report('peak_kb', B.peak_kb())
