-- moontorch in a minute: tensors, broadcasting, a matmul, a reduction, PyTorch-style printing.
-- A tour of the basics: bin/moontorch examples/demo.lua in a built checkout (`./run demo` trains
-- examples/fashion_mnist.lua, the main demo).
local torch = require 'moontorch'

print('moontorch ' .. torch.__version__)

-- tensors from Lua tables (the default dtype is float32, as in PyTorch)
local a = torch.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
local b = torch.tensor({ 10, 20, 30 })
print('a =') print(a)

-- broadcasting: a 2x3 and a 3 make a 2x3; Lua numbers work on either side
print('a + b =') print(a + b)
print('(a - 1) * 2 / b =') print((a - 1) * 2 / b)

-- zeros, ones and normal random numbers
print('zeros(2, 2) + ones(2) =') print(torch.zeros(2, 2) + torch.ones(2))
print('randn(2, 3) =') print(torch.randn(2, 3))

-- a matrix product with a transposed view (no copy): 2x3 @ 3x2 -> 2x2
local m = a:matmul(a:t())
print('a @ a:t() =') print(m)

-- reductions: everything, or along a dimension (1-based, as in Torch7)
print('a:sum() = ' .. tostring(a:sum()))
print('a:sum(1) =') print(a:sum(1))
print('a:sum(2) = ' .. tostring(a:sum(2)))

-- autograd: gradients of a scalar with respect to leaves
local x = torch.tensor({ 1, 2, 3 }, { requires_grad = true })
local y = (x * x):sum()
y:backward()
print('d/dx sum(x^2) = ' .. tostring(x.grad))

-- nn and optim: a 2-8-1 network learns XOR
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'
torch.manual_seed(0)
local net = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1), nn.Sigmoid())
print(net)
local inputs = torch.tensor({ { 0, 0 }, { 0, 1 }, { 1, 0 }, { 1, 1 } })
local targets = torch.tensor({ { 0 }, { 1 }, { 1 }, { 0 } })
local opt = optim.SGD(net:parameters(), { lr = 1.0, momentum = 0.9 })
local loss
for _ = 1, 500 do
  opt:zero_grad()
  loss = nn.functional.binary_cross_entropy(net(inputs), targets)
  loss:backward()
  opt:step()
end
print(('XOR after 500 steps: loss %.4f'):format(loss:item()))
print(net(inputs):round())

-- save and load: the trained weights survive a round trip through a file (written atomically)
local path = os.tmpname()
torch.save(net:state_dict(), path)
local copy = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1), nn.Sigmoid())
print(copy:load_state_dict(torch.load(path)))
os.remove(path)
print('the loaded copy agrees: ' .. tostring(torch.equal(copy(inputs), net(inputs))))
