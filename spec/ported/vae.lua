-- pytorch/examples' vae/main.py, ported to moontorch (issue 27's port test): the same VAE
-- (784-400-20), reparameterisation, BCE + KL loss, Adam, train and test loops with the
-- reconstruction comparison and the sampling step, on a small synthetic set of 28x28 images in
-- [0, 1] made here; run by spec/ported_examples_spec.lua. PyTorch habits it keeps: x:view(-1, 784),
-- data[:n] as data[{{1, n}}], torch.cat([a, b]) as torch.cat({a, b}), with torch.no_grad(),
-- `for p in model:parameters()`, len(data) as #data.
local torch = require 'moontorch'
local nn = torch.nn
local F = nn.functional
local optim = torch.optim
local data = torch.utils.data

local args = { batch_size = 32, epochs = 4, seed = 1, log_interval = 2 }
torch.manual_seed(args.seed)

local VAE, Parent = torch.class('ported.VAE', nn.Module)
function VAE:__init()
  Parent.__init(self)
  self.fc1 = nn.Linear(784, 400)
  self.fc21 = nn.Linear(400, 20)
  self.fc22 = nn.Linear(400, 20)
  self.fc3 = nn.Linear(20, 400)
  self.fc4 = nn.Linear(400, 784)
end
function VAE:encode(x)
  local h1 = F.relu(self.fc1(x))
  return self.fc21(h1), self.fc22(h1)
end
function VAE:reparameterize(mu, logvar)
  local std = torch.exp(0.5 * logvar)
  local eps = torch.randn_like(std)
  return mu + eps * std
end
function VAE:decode(z)
  local h3 = F.relu(self.fc3(z))
  return torch.sigmoid(self.fc4(h3))
end
function VAE:forward(x)
  local mu, logvar = self:encode(x:view(-1, 784))
  local z = self:reparameterize(mu, logvar)
  return self:decode(z), mu, logvar
end

local model = VAE()
local optimizer = optim.Adam(model:parameters(), { lr = 1e-3 })

-- Reconstruction + KL divergence losses summed over all elements and batch
local function loss_function(recon_x, x, mu, logvar)
  local BCE = F.binary_cross_entropy(recon_x, x:view(-1, 784), { reduction = 'sum' })
  -- see Appendix B from VAE paper: Kingma and Welling. Auto-Encoding Variational Bayes. ICLR, 2014
  local KLD = -0.5 * torch.sum(1 + logvar - mu:pow(2) - logvar:exp())
  return BCE + KLD
end

local function train(epoch, train_loader)
  model:train()
  local train_loss = 0
  local batch_idx = 0
  for data_ in train_loader() do
    optimizer:zero_grad()
    local recon_batch, mu, logvar = model(data_)
    local loss = loss_function(recon_batch, data_, mu, logvar)
    loss:backward()
    train_loss = train_loss + loss:item()
    optimizer:step()
    if batch_idx % args.log_interval == 0 then
      print(('Train Epoch: %d [%d/%d (%.0f%%)]\tLoss: %.6f'):format(epoch, batch_idx * #data_,
        train_loader.dataset:__len(), 100 * batch_idx / train_loader:__len(), loss:item() / #data_))
    end
    batch_idx = batch_idx + 1
  end
  local avg = train_loss / train_loader.dataset:__len()
  print(('====> Epoch: %d Average loss: %.4f'):format(epoch, avg))
  return avg
end

local comparison_shape
local function test(epoch, test_loader)
  model:eval()
  local test_loss = 0
  torch.no_grad(function()
    local i = 0
    for data_ in test_loader() do
      local recon_batch, mu, logvar = model(data_)
      test_loss = test_loss + loss_function(recon_batch, data_, mu, logvar):item()
      if i == 0 then
        local n = math.min(data_:size(1), 8)
        local comparison = torch.cat({ data_[{ { 1, n } }], recon_batch:view(args.batch_size, 1, 28, 28)[{ { 1, n } }] })
        comparison_shape = comparison:size()
      end
      i = i + 1
    end
  end)
  test_loss = test_loss / test_loader.dataset:__len()
  print(('====> Test set loss: %.4f'):format(test_loss))
  return test_loss
end

-- the data: blobs of ink, as MNIST's digits are ([0, 1] values); one tensor per sample
local function make(n, g)
  local x = torch.zeros(n, 1, 28, 28)
  for i = 1, n do
    local r = torch.randint(4, 20, { 2 }, { generator = g })
    local r1, c1 = r[1]:item(), r[2]:item()
    x[{ i, 1, { r1, r1 + 6 }, { c1, c1 + 6 } }] = torch.rand(7, 7, { generator = g }) * 0.5 + 0.5
  end
  return x
end
local g = torch.Generator():manual_seed(0)
local train_loader = data.DataLoader(data.TensorDataset(make(128, g)), { batch_size = args.batch_size, shuffle = true })
local test_loader = data.DataLoader(data.TensorDataset(make(64, g)), { batch_size = args.batch_size })

local first_test = test(0, test_loader)
local train_first, train_last, test_last
for epoch = 1, args.epochs do
  local l = train(epoch, train_loader)
  train_first = train_first or l
  train_last = l
  test_last = test(epoch, test_loader)
  torch.no_grad(function()
    local sample = torch.randn(64, 20)
    sample = model:decode(sample)
    assert(sample:size(1) == 64 and sample:size(2) == 784)
    assert(sample:min():item() >= 0 and sample:max():item() <= 1)
  end)
end
local n = 0
for p in model:parameters() do n = n + p:numel() end
print(('RESULT params=%d first_test=%.3f test=%.3f train_first=%.3f train_last=%.3f comparison=%s'):format(n,
  first_test, test_last, train_first, train_last, table.concat(comparison_shape, 'x')))
