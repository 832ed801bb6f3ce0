-- Convolution forward, and forward + backward, in float32 (issue 12, conv part). arg[1] picks the
-- shape: lenet1 (conv 1->6 5x5, batch 64 of 1x28x28, the first layer: no input gradient), lenet2
-- (conv 6->16 5x5, batch 64 of 6x12x12, input gradient too), c64 (conv 64->64 3x3 padding 1,
-- batch 8 of 64x56x56, input gradient too). Milliseconds per call, best of a few after a warm-up;
-- the backward takes the output's gradient as given (ones), as loss:backward() would hand it.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local F = nn.functional
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
torch.manual_seed(0)
local shapes = {
  lenet1 = { n = 64, cin = 1, hw = 28, cout = 6, k = 5, pad = 0, xgrad = false, reps = 20 },
  lenet2 = { n = 64, cin = 6, hw = 12, cout = 16, k = 5, pad = 0, xgrad = true, reps = 20 },
  c64 = { n = 8, cin = 64, hw = 56, cout = 64, k = 3, pad = 1, xgrad = true, reps = 3 },
}
local s = shapes[arg[1] or 'lenet1']
local x = torch.randn(s.n, s.cin, s.hw, s.hw)
if s.xgrad then x:requires_grad_() end
local conv = nn.Conv2d(s.cin, s.cout, s.k, { padding = s.pad })
local g = torch.ones(F.conv2d(x:detach(), conv.weight:detach(), nil, 1, s.pad):size())
local fwd = B.best(torch.no_grad(function(k) for _ = 1, k do local y = conv(x) end end), s.reps, 5)
local fb = B.best(function(k)
  for _ = 1, k do
    conv:zero_grad()
    local y = conv(x)
    y:backward(g)
  end
end, s.reps, 5)
B.report('fwd_ms', fwd * 1e3)
B.report('fwd_bwd_ms', fb * 1e3)
B.report('peak_kb', B.peak_kb())
