-- issue 24: a Linear(4096, 4096) forward at batch 64 (no grad), dense, then after pruning 90% of
-- its weight (L1) and prune.remove{sparse=true}, which keeps the weight in CSR form. Milliseconds
-- per forward, best of rounds, dense and sparse alternating. Threads: $BENCH_THREADS.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
torch.manual_seed(0)
local n = tonumber(arg[1]) or 4096
local dense = nn.Linear(n, n)
local sparse = nn.Linear(n, n)
sparse.weight.data = dense.weight:detach():clone()
sparse.bias.data = dense.bias:detach():clone()
nn.utils.prune.l1_unstructured(sparse, 'weight', 0.9)
nn.utils.prune.remove(sparse, 'weight', { sparse = true })
assert(torch.sparse.is_csr(sparse.weight), 'the pruned weight is not CSR')
local x = torch.randn(64, n)
local fd = torch.no_grad(function(r) for _ = 1, r do dense(x) end end)
local fs = torch.no_grad(function(r) for _ = 1, r do sparse(x) end end)
local td, ts = math.huge, math.huge
for _ = 1, 3 do
  td = math.min(td, B.best(fd, 5, 3))
  ts = math.min(ts, B.best(fs, 5, 3))
end
B.report('dense_ms', td * 1e3)
B.report('sparse_ms', ts * 1e3)
B.report('nnz', sparse.weight:_nnz())
