-- 1 000 000 forward/backward iterations of a small graph: resident memory after 100 000 and
-- after 1 000 000 iterations (kB). Flat means no leak.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local w = torch.randn(4, 3, { requires_grad = true })
local function rss_kb()
  local f = io.open('/proc/self/status', 'r')
  for line in f:lines() do
    local v = line:match('^VmRSS:%s+(%d+)')
    if v then f:close(); return tonumber(v) end
  end
  f:close()
end
local n = tonumber(arg[1]) or 1000000
local at_10pct
local t0 = B.now()
for i = 1, n do
  local x = torch.randn(4)
  local loss = x:matmul(w):tanh():sum()
  loss:backward()
  w.grad = nil
  if i == math.floor(n / 10) then at_10pct = rss_kb() end
end
B.report('rss_kb_10pct', at_10pct)
B.report('rss_kb_end', rss_kb())
B.report('us_per_iter', (B.now() - t0) / n * 1e6)
B.report('live_nodes', tonumber(torch._C.mt_live_nodes()))
