-- The Modules note's training loop written with the note's modules: MyLinear, Net (4-3-1 with
-- relu), optim.SGD(lr=1e-4, weight_decay=1e-2, momentum=0.9), 10 000 iterations of randn input,
-- abs loss, net:zero_grad(), backward, optimizer:step(). Microseconds per iteration.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
local F = nn.functional
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))

local MyLinear, Module = torch.class('MyLinear', 'nn.Module')
function MyLinear:__init(in_features, out_features)
  Module.__init(self)
  self.weight = nn.Parameter(torch.randn(in_features, out_features))
  self.bias = nn.Parameter(torch.randn(out_features))
end
function MyLinear:forward(input) return input:matmul(self.weight) + self.bias end

local Net = torch.class('Net', 'nn.Module')
function Net:__init()
  Module.__init(self)
  self.l0 = MyLinear(4, 3)
  self.l1 = MyLinear(3, 1)
end
function Net:forward(x) return self.l1(F.relu(self.l0(x))) end

torch.manual_seed(0)
local net = Net()
local optimizer = optim.SGD(net:parameters(), { lr = 1e-4, weight_decay = 1e-2, momentum = 0.9 })
local function iteration()
  local input = torch.randn(4)
  local output = net(input)
  local loss = torch.abs(output)
  net:zero_grad()
  loss:backward()
  optimizer:step()
end
local n = tonumber(arg[1]) or 10000
B.report_loop('us', 1e6, iteration, n, 3)
