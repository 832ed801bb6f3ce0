-- torch.linalg's decompositions on a batch of 8 float32 256x256 matrices, one thread (bench/run.lua's
-- `linalg` section; bench/torch_workloads.py's linalg() is the same in PyTorch): milliseconds per call,
-- best of 3 rounds after a warm-up. The matrices: A = randn (solve, inv, qr, svd, lstsq; B randn 8x256x32),
-- S = A A^T / 256 + I (cholesky, eigh).
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
torch.set_num_threads(1)
torch.manual_seed(0)

local A = torch.randn(8, 256, 256)
local S = A:matmul(A:transpose(-2, -1)) / 256 + torch.eye(256)
local R = torch.randn(8, 256, 32)
local L = torch.linalg
local cases = {
  { 'cholesky_ms', function() return L.cholesky(S) end, 10 },
  { 'qr_ms', function() return L.qr(A) end, 3 },
  { 'svd_ms', function() return L.svd(A, false) end, 1 },
  { 'eigh_ms', function() return L.eigh(S) end, 1 },
  { 'solve_ms', function() return L.solve(A, R) end, 5 },
  { 'inv_ms', function() return L.inv(A) end, 3 },
  { 'det_ms', function() return L.det(A) end, 5 },
  { 'lstsq_ms', function() return L.lstsq(A, R) end, 2 },
}
for _, c in ipairs(cases) do
  local f = c[2]
  B.report(c[1], B.best(function(k) for _ = 1, k do f() end end, c[3], 3) * 1e3)
end
B.report('peak_kb', B.peak_kb())
