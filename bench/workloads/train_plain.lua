-- The Modules note's training loop on plain tensors: a 4-3-1 net as four leaf tensors, 10 000
-- iterations of randn input, forward with relu, abs loss, clearing the grads, backward, and an
-- SGD step with momentum 0.9 and weight decay written out under no_grad. Microseconds per
-- iteration.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
torch.manual_seed(0)
local w0 = torch.randn(4, 3, { requires_grad = true })
local b0 = torch.randn(3, { requires_grad = true })
local w1 = torch.randn(3, 1, { requires_grad = true })
local b1 = torch.randn(1, { requires_grad = true })
local params = { w0, b0, w1, b1 }
local bufs = {}
local lr, momentum, wd = 1e-4, 0.9, 1e-2
local step = torch.no_grad.wrap(function()
  for i = 1, 4 do
    local p = params[i]
    local d = p.grad + p * wd
    local buf = bufs[i]
    if buf then buf:mul_(momentum):add_(d) else buf = d:clone(); bufs[i] = buf end
    p:sub_(buf * lr)
  end
end)
local function iteration()
  local x = torch.randn(4)
  local out = (x:matmul(w0) + b0):relu():matmul(w1) + b1
  local loss = out:abs()
  for i = 1, 4 do local g = params[i].grad; if g then g:zero_() end end
  loss:backward()
  step()
end
local n = tonumber(arg[1]) or 10000
B.report_loop('us', 1e6, iteration, n, 3)
