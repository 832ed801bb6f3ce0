-- Convolution forward, and forward + backward, in float32 (issue 12, conv part). arg[1] picks the
-- shape: lenet1 (conv 1->6 5x5, batch 64 of 1x28x28, the first layer: no input gradient), lenet2
-- (conv 6->16 5x5, batch 64 of 6x12x12, input gradient too), c64 (conv 64->64 3x3 padding 1,
-- batch 8 of 64x56x56, input gradient too), rC_HW_N (a ResNet-style conv C->C 3x3 padding 1, batch N of
-- CxHWxHW, input gradient too: issue 27's r64_56_N, r128_28_N, r256_14_N). Milliseconds per call, best
-- of a few after a warm-up; the backward takes the output's gradient as given (ones), as loss:backward()
-- would hand it, and is also timed alone (bwd_ms: y:backward(g) after an untimed forward).
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
local rc, rhw, rn = (arg[1] or ''):match('^r(%d+)_(%d+)_(%d+)$')
if rc then
  rc, rhw, rn = tonumber(rc), tonumber(rhw), tonumber(rn)
  s = { n = rn, cin = rc, hw = rhw, cout = rc, k = 3, pad = 1, xgrad = true, reps = math.max(1, math.floor(16 / rn)) }
end
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
local bwd = math.huge
for r = 0, 5 do
  local tot = 0
  for _ = 1, s.reps do
    conv:zero_grad()
    if s.xgrad then x.grad = nil end
    local y = conv(x)
    local t0 = B.now()
    y:backward(g)
    tot = tot + B.now() - t0
  end
  if r > 0 and tot / s.reps < bwd then bwd = tot / s.reps end
end
B.report('fwd_ms', fwd * 1e3)
B.report('bwd_ms', bwd * 1e3)
B.report('fwd_bwd_ms', fb * 1e3)
B.report('peak_kb', B.peak_kb())
