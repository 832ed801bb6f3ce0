-- pytorch/examples' mnist/main.py, ported line by line to moontorch (issue 27's port test): the
-- same network, training loop, test loop, Adadelta and StepLR, on a small synthetic MNIST-shaped
-- set made here (class c: a bright bar at rows 2c+3..2c+4, plus noise), run by
-- spec/ported_examples_spec.lua under bin/moontorch. It uses the PyTorch habits that used to trip:
-- a user ffi.cdef of clock_gettime, torch.flatten(x, 2), log_softmax{dim = 2},
-- argmax{dim = 2, keepdim = true}, `for p in model:parameters()`, torch.no_grad(function() ... end),
-- #data (len(data)), constructor options by name.
local ffi = require 'ffi'
ffi.cdef [[
typedef struct timespec { long tv_sec; long tv_nsec; } timespec;
int clock_gettime(int clk_id, struct timespec *tp);
]]
local torch = require 'moontorch'
local nn = torch.nn
local F = nn.functional
local optim = torch.optim
local StepLR = optim.lr_scheduler.StepLR
local data = torch.utils.data

local function now()
  local ts = ffi.new('struct timespec')
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local Net, Parent = torch.class('ported.MnistNet', nn.Module)
function Net:__init()
  Parent.__init(self)
  self.conv1 = nn.Conv2d(1, 32, 3, 1)
  self.conv2 = nn.Conv2d(32, 64, { kernel_size = 3, stride = 1 })
  self.dropout1 = nn.Dropout(0.25)
  self.dropout2 = nn.Dropout(0.5)
  self.fc1 = nn.Linear(9216, 128)
  self.fc2 = nn.Linear({ in_features = 128, out_features = 10 })
end
function Net:forward(x)
  x = self.conv1(x)
  x = F.relu(x)
  x = self.conv2(x)
  x = F.relu(x)
  x = F.max_pool2d(x, 2)
  x = self.dropout1(x)
  x = torch.flatten(x, 2) -- PyTorch's torch.flatten(x, 1): dims count from 1 here
  x = self.fc1(x)
  x = F.relu(x)
  x = self.dropout2(x)
  x = self.fc2(x)
  local output = F.log_softmax(x, { dim = 2 })
  return output
end

local args = { batch_size = 16, test_batch_size = 32, epochs = 3, lr = 1.0, gamma = 0.7, seed = 1, log_interval = 2 }

local function train(model, train_loader, optimizer, epoch)
  model:train()
  local batch_idx = 0
  local last
  for data_, target in train_loader() do
    optimizer:zero_grad()
    local output = model(data_)
    local loss = F.nll_loss(output, target)
    loss:backward()
    optimizer:step()
    if batch_idx % args.log_interval == 0 then
      print(('Train Epoch: %d [%d/%d (%.0f%%)]\tLoss: %.6f'):format(epoch, batch_idx * #data_,
        train_loader.dataset:__len(), 100 * batch_idx / train_loader:__len(), loss:item()))
    end
    last = loss:item()
    batch_idx = batch_idx + 1
  end
  return last
end

local function test(model, test_loader)
  model:eval()
  local test_loss, correct = 0, 0
  torch.no_grad(function()
    for data_, target in test_loader() do
      local output = model(data_)
      test_loss = test_loss + F.nll_loss(output, target, { reduction = 'sum' }):item()
      local pred = output:argmax { dim = 2, keepdim = true }
      correct = correct + pred:eq(target:view_as(pred)):sum():item()
    end
  end)
  local n = test_loader.dataset:__len()
  test_loss = test_loss / n
  print(('\nTest set: Average loss: %.4f, Accuracy: %d/%d (%.0f%%)\n'):format(test_loss, correct, n, 100 * correct / n))
  return test_loss, correct / n
end

-- the data: 10 classes, labels counted from 1
local function make(n, g)
  local x = torch.rand(n, 1, 28, 28, { generator = g }) * 0.3
  local y = torch.randint(1, 11, { n }, { generator = g })
  for i = 1, n do
    local c = y[i]:item()
    x[{ i, 1, { 2 * c + 2, 2 * c + 3 }, {} }] = 1
  end
  return x, y
end

torch.manual_seed(args.seed)
local g = torch.Generator():manual_seed(0)
local train_x, train_y = make(96, g)
local test_x, test_y = make(64, g)
local train_loader = data.DataLoader(data.TensorDataset(train_x, train_y), { batch_size = args.batch_size, shuffle = true })
local test_loader = data.DataLoader(data.TensorDataset(test_x, test_y), { batch_size = args.test_batch_size })

local model = Net()
local nparams = 0
for p in model:parameters() do nparams = nparams + p:numel() end
local optimizer = optim.Adadelta(model:parameters(), { lr = args.lr })
local scheduler = StepLR(optimizer, { step_size = 1, gamma = args.gamma })
local t0, timer = now(), torch.Timer()
local first_loss = test(model, test_loader)
local last_train, loss, acc
for epoch = 1, args.epochs do
  last_train = train(model, train_loader, optimizer, epoch)
  loss, acc = test(model, test_loader)
  scheduler:step()
end
print(('RESULT params=%d first_loss=%.4f loss=%.4f acc=%.4f lr=%.4f seconds=%.3f timer=%.3f'):format(nparams,
  first_loss, loss, acc, scheduler:get_last_lr()[1], now() - t0, timer:time().real))
