-- The Fashion-MNIST demo's LeNet, statically quantized after training (issue 25): moontorch's eager-mode
-- post-training quantization as PyTorch spells it.
--   bin/moontorch examples/fashion_mnist.lua --epochs 2 --amp      (trains; DIR/checkpoint.mt)
--   bin/moontorch examples/quantize_demo.lua [CHECKPOINT] [--data DIR] [--calibrate N] [--threads N]
-- Loads the demo's checkpoint (fashion_mnist_run/checkpoint.mt), fuses conv-relu and linear-relu, wraps the
-- network in QuantStub / DeQuantStub (QuantWrapper), calibrates its observers on N training images (x86
-- qconfig: per-channel int8 weights, uint8 activations with reduce_range), converts, and prints the test
-- accuracy of both networks and the time each takes to classify 1000 test images (best of 5, alternating).
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local data = require 'moontorch.utils.data'
local datasets = require 'moontorch.datasets'
local Q = torch.quantization

local opts = { checkpoint = 'fashion_mnist_run/checkpoint.mt', data = '/usr/share/datasets/fashion-mnist', calibrate = 2048 }
local i = 1
while i <= #arg do
  local a = arg[i]
  if a == '--data' or a == '--calibrate' or a == '--threads' then
    local v = arg[i + 1] or error(a .. ' needs a value')
    opts[a:sub(3)] = a == '--data' and v or assert(tonumber(v), a .. ' needs a number')
    i = i + 2
  else
    opts.checkpoint = a
    i = i + 1
  end
end
if opts.threads then torch.set_num_threads(opts.threads) end

-- the demo's network and data (examples/fashion_mnist.lua)
local net = nn.Sequential(
  nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
  nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
  nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
local ckpt = torch.load(opts.checkpoint)
net:load_state_dict(ckpt.model)
net:eval()
local normalize = datasets.transforms.Normalize(0.2860, 0.3530)
local train_set = datasets.FashionMNIST(opts.data, { train = true, transform = normalize })
local test_set = datasets.FashionMNIST(opts.data, { train = false, transform = normalize })

-- static quantization: fuse, observe, convert
local fused = Q.fuse_modules(net, { { '0', '1' }, { '3', '4' }, { '7', '8' }, { '9', '10' } })
local model = Q.QuantWrapper(fused)
model.qconfig = Q.get_default_qconfig('x86')
local prepared = Q.prepare(model)
torch.no_grad(function()
  local seen = 0
  for x in data.DataLoader(train_set, { batch_size = 256 })() do
    prepared(x)
    seen = seen + x:size(1)
    if seen >= opts.calibrate then break end
  end
end)
local qnet = Q.convert(prepared)

local accuracy = torch.no_grad.wrap(function(m)
  local correct = 0
  for x, y in data.DataLoader(test_set, { batch_size = 1000 })() do
    correct = correct + m(x):argmax(2):eq(y):sum():item()
  end
  return 100 * correct / test_set:__len()
end)
local x1000 = data.DataLoader(test_set, { batch_size = 1000 })()()
local time_ms = torch.no_grad.wrap(function(m)
  local best = math.huge
  for _ = 1, 5 do
    local t = torch.Timer()
    m(x1000)
    best = math.min(best, t:time().real)
  end
  return best * 1e3
end)
local fa, qa = accuracy(net), accuracy(qnet)
-- the two alternate, so that a noisy moment of a shared machine falls on both
local ft, qt = math.huge, math.huge
for _ = 1, 3 do
  ft, qt = math.min(ft, time_ms(net)), math.min(qt, time_ms(qnet))
end
local n = x1000:size(1)
print(('float32:   test accuracy %.2f%%, %d images in %.1f ms'):format(fa, n, ft))
print(('quantized: test accuracy %.2f%%, %d images in %.1f ms (%.2fx faster, %d threads)'):format(qa, n, qt, ft / qt,
  torch.get_num_threads()))
