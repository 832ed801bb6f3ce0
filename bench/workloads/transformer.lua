-- Forward + backward of a TransformerEncoderLayer (d_model 256, 4 heads, feed-forward 1024,
-- dropout 0, batch_first), input of seq 64, batch 16: zero_grad (to none), forward, sum,
-- backward. Milliseconds per step, best of rounds. Threads: $BENCH_THREADS. `phases` as the
-- argument prints the forward and backward times apart.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
torch.manual_seed(0)
local layer = nn.TransformerEncoderLayer(256, 4, 1024, 0.0, { batch_first = true })
local x = torch.randn(16, 64, 256)
local function step()
  layer:zero_grad(true)
  layer(x):sum():backward()
end
local steps = tonumber(arg[1]) or 20
local t = B.best(function(r) for _ = 1, r do step() end end, steps, 5)
B.report('ms', t * 1e3)
if arg[1] == 'phases' or arg[2] == 'phases' then
  local y
  B.report('forward_ms', 1e3 * B.best(function(r) for _ = 1, r do y = layer(x):sum() end end, steps, 5))
  B.report('no_grad_forward_ms', 1e3 * B.best(function(r)
    torch.no_grad(function() for _ = 1, r do layer(x) end end)
  end, steps, 5))
end
B.report('peak_kb', B.peak_kb())
