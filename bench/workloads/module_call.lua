-- What a module call costs over the same computation on plain tensors: the note's MyLinear
-- (input @ weight + bias, 4 -> 3, parameters requiring grad) called as a module, and the same two
-- ops written out. Prints both (microseconds per call) and their ratio.
local B = dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))

local MyLinear, Module = torch.class('MyLinear', 'nn.Module')
function MyLinear:__init(in_features, out_features)
  Module.__init(self)
  self.weight = nn.Parameter(torch.randn(in_features, out_features))
  self.bias = nn.Parameter(torch.randn(out_features))
end
function MyLinear:forward(input) return input:matmul(self.weight) + self.bias end

local m = MyLinear(4, 3)
local w, b = m.weight, m.bias
local x = torch.randn(4)
local reps = 200000
local plain, mod = math.huge, math.huge
for _ = 1, 3 do -- alternate, keep each side's best
  plain = math.min(plain, B.best(function(k) for _ = 1, k do local y = x:matmul(w) + b end end, reps, 3))
  mod = math.min(mod, B.best(function(k) for _ = 1, k do local y = m(x) end end, reps, 3))
end
B.report('plain_us', plain * 1e6)
B.report('us', mod * 1e6)
B.report('ratio', mod / plain)
