-- pytorch/examples' dcgan/main.py, ported to moontorch (issue 27's port test): the same
-- generator and discriminator (64x64 images, smaller widths), weights_init by class name, BCELoss,
-- Adam with betas, and the training step, on a small synthetic image set made here; run by
-- spec/ported_examples_spec.lua. PyTorch habits it keeps: m.__class__.__name__ as torch.typename(m),
-- nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, {bias = false}), nn.ReLU(true), torch.full({n}, 1),
-- output:view(-1, 1):squeeze(2), netD:zero_grad(), fake:detach().
local torch = require 'moontorch'
local nn = torch.nn
local optim = torch.optim

local opt = { batchSize = 8, nz = 16, ngf = 8, ndf = 8, nc = 3, lr = 0.0002, beta1 = 0.5, niter = 2, manualSeed = 7 }
torch.manual_seed(opt.manualSeed)
local nz, ngf, ndf, nc = opt.nz, opt.ngf, opt.ndf, opt.nc

-- custom weights initialization called on netG and netD
local inits = {}
local function weights_init(m)
  local classname = torch.typename(m) -- m.__class__.__name__ ('nn.ConvTranspose2d'; m.__typename too)
  if classname:find('Conv') then
    nn.init.normal_(m.weight, 0.0, 0.02)
    inits[#inits + 1] = classname
  elseif classname:find('BatchNorm') then
    nn.init.normal_(m.weight, 1.0, 0.02)
    nn.init.zeros_(m.bias)
    inits[#inits + 1] = m.__typename
  end
end

local Generator, GP = torch.class('ported.Generator', nn.Module)
function Generator:__init()
  GP.__init(self)
  self.main = nn.Sequential(
    -- input is Z, going into a convolution
    nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, { bias = false }),
    nn.BatchNorm2d(ngf * 8),
    nn.ReLU(true),
    -- state size. (ngf*8) x 4 x 4
    nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ngf * 4),
    nn.ReLU(true),
    -- state size. (ngf*4) x 8 x 8
    nn.ConvTranspose2d({ in_channels = ngf * 4, out_channels = ngf * 2, kernel_size = 4, stride = 2, padding = 1, bias = false }),
    nn.BatchNorm2d({ num_features = ngf * 2 }),
    nn.ReLU(true),
    -- state size. (ngf*2) x 16 x 16
    nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ngf),
    nn.ReLU(true),
    -- state size. (ngf) x 32 x 32
    nn.ConvTranspose2d(ngf, nc, 4, 2, 1, { bias = false }),
    nn.Tanh()
    -- state size. (nc) x 64 x 64
  )
end
function Generator:forward(input) return self.main(input) end

local Discriminator, DP = torch.class('ported.Discriminator', nn.Module)
function Discriminator:__init()
  DP.__init(self)
  self.main = nn.Sequential(
    -- input is (nc) x 64 x 64
    nn.Conv2d(nc, ndf, 4, 2, 1, { bias = false }),
    nn.LeakyReLU(0.2, { inplace = true }),
    nn.Conv2d(ndf, ndf * 2, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ndf * 2),
    nn.LeakyReLU(0.2, { inplace = true }),
    nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ndf * 4),
    nn.LeakyReLU(0.2, { inplace = true }),
    nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, { bias = false }),
    nn.BatchNorm2d(ndf * 8),
    nn.LeakyReLU(0.2, { inplace = true }),
    nn.Conv2d({ in_channels = ndf * 8, out_channels = 1, kernel_size = 4, stride = 1, padding = 0, bias = false }),
    nn.Sigmoid()
  )
end
function Discriminator:forward(input)
  local output = self.main(input)
  return output:view(-1, 1):squeeze(2) -- PyTorch's .squeeze(1)
end

local netG = Generator()
netG:apply(weights_init)
local netD = Discriminator()
netD:apply(weights_init)

local criterion = nn.BCELoss()
local fixed_noise = torch.randn(opt.batchSize, nz, 1, 1)
local real_label, fake_label = 1, 0
local optimizerD = optim.Adam(netD:parameters(), { lr = opt.lr, betas = { opt.beta1, 0.999 } })
local optimizerG = optim.Adam(netG:parameters(), { lr = opt.lr, betas = { opt.beta1, 0.999 } })

-- the data: soft discs in [-1, 1] (what Normalize(0.5, 0.5) gives a dataset's images)
local images = torch.rand(32, nc, 64, 64) * 0.2 - 1
local loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images), { batch_size = opt.batchSize, shuffle = true })

local last = {}
for epoch = 1, opt.niter do
  local i = 0
  for real_cpu in loader() do
    i = i + 1
    -- (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
    netD:zero_grad()
    local batch_size = real_cpu:size(1)
    local label = torch.full({ batch_size }, real_label, { dtype = real_cpu.dtype })
    local output = netD(real_cpu)
    local errD_real = criterion(output, label)
    errD_real:backward()
    local D_x = output:mean():item()
    -- train with fake
    local noise = torch.randn(batch_size, nz, 1, 1)
    local fake = netG(noise)
    label:fill_(fake_label)
    output = netD(fake:detach())
    local errD_fake = criterion(output, label)
    errD_fake:backward()
    local D_G_z1 = output:mean():item()
    local errD = errD_real + errD_fake
    optimizerD:step()
    -- (2) Update G network: maximize log(D(G(z)))
    netG:zero_grad()
    label:fill_(real_label) -- fake labels are real for generator cost
    output = netD(fake)
    local errG = criterion(output, label)
    errG:backward()
    local D_G_z2 = output:mean():item()
    optimizerG:step()
    print(('[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f'):format(epoch, opt.niter, i,
      loader:__len(), errD:item(), errG:item(), D_x, D_G_z1, D_G_z2))
    last = { errD = errD:item(), errG = errG:item() }
  end
end
local fake = torch.no_grad(function() return netG(fixed_noise) end)
print(('RESULT inits=%d first=%s fake=%s errD=%.4f errG=%.4f range=%.3f'):format(#inits, inits[1],
  table.concat(fake:size(), 'x'), last.errD, last.errG, fake:abs():max():item()))
