-- nn parts a PyTorch user meets that the other files did not have (the parity session):
-- F.rrelu / nn.RReLU (PyTorch's draws under the same seed), F.gumbel_softmax, F.pdist. The
-- functions themselves are in lua/ops/parity.lua.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local Mod = require 'moontorch.nn.Module'
local A = require 'moontorch.nn.modargs'
local P = require 'moontorch.ops.parity'

local Module, declare_forward = Mod.Module, Mod.declare_forward
local pyfloat = A.pyfloat

local M = {}

function M.install(nn)
  local F = nn.functional
  for name, f in pairs(P.functional) do
    if F[name] == nil then F[name] = f end
  end
  if F.rrelu_ == nil then
    F.rrelu_ = function(x, lower, upper, training) return F.rrelu(x, lower, upper, training, true) end
  end
  if nn.RReLU == nil then
    -- nn.RReLU(lower=1/8, upper=1/3, inplace=false)
    local RReLU = class.class('nn.RReLU', Module)
    function RReLU:__init(...)
      Module.__init(self)
      local v = A.parse('nn.RReLU', { 'lower', 'upper', 'inplace' }, false, ...)
      self.lower = A.number('nn.RReLU', 'lower', v.lower, 1 / 8)
      self.upper = A.number('nn.RReLU', 'upper', v.upper, 1 / 3)
      self.inplace = A.bool('nn.RReLU', 'inplace', v.inplace, false)
    end
    function RReLU:forward(input) return F.rrelu(input, self.lower, self.upper, self.training, self.inplace) end
    declare_forward(RReLU, { 'input' })
    function RReLU:extra_repr()
      return ('lower=%s, upper=%s%s'):format(pyfloat(self.lower), pyfloat(self.upper), self.inplace and ', inplace=True' or '')
    end
    nn.RReLU = RReLU
  end
end

return M
