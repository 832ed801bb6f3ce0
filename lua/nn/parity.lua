-- nn parts a PyTorch user meets that the other files did not have (the parity session):
-- F.rrelu / nn.RReLU (PyTorch's draws under the same seed), F.gumbel_softmax, F.pdist. The
-- functions themselves are in lua/ops/parity.lua.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local Mod = require 'moontorch.nn.Module'
local A = require 'moontorch.nn.modargs'
local P = require 'moontorch.ops.parity'
local core = require 'moontorch.ffi'

local Module, declare_forward = Mod.Module, Mod.declare_forward
local pyfloat = A.pyfloat

local M = {}

------------------------------------------------------------------------------ spectral_norm
-- nn.utils.spectral_norm(module, name='weight', n_power_iterations=1, eps=1e-12, dim=nil): PyTorch
-- 1.13's: name_orig (the parameter), name_u and name_v (buffers drawn with normal_ at the call, as
-- PyTorch draws them), and before each forward name = name_orig / sigma, sigma estimated by power
-- iteration in training mode. dim counts from 1 (default 1; 2 for ConvTranspose).
local function sn_matrix(w, dim)
  if dim ~= 1 then
    local perm = { dim }
    for i = 1, w:dim() do if i ~= dim then perm[#perm + 1] = i end end
    w = w:permute(perm)
  end
  return w:reshape(w:size(1), -1)
end
local function spectral_norm(module, name, n_power_iterations, eps, dim)
  if type(name) == 'table' then
    local o = name
    name, n_power_iterations, eps, dim = o.name, o.n_power_iterations, o.eps, o.dim
  end
  name, n_power_iterations, eps = name or 'weight', n_power_iterations or 1, eps or 1e-12
  if n_power_iterations <= 0 then
    core.fail('nn.utils.spectral_norm', 'Expected n_power_iterations to be positive, but got n_power_iterations='
      .. tostring(n_power_iterations))
  end
  local tn = tostring(module:_get_name())
  if dim == nil then dim = tn:match('^ConvTranspose') and 2 or 1 end
  local w = module._parameters[name]
  if not w then core.fail('nn.utils.spectral_norm', ("'%s' is not a parameter of %s"):format(name, tn)) end
  local F = torch.nn.functional
  local u, v = torch.no_grad(function()
    local m = sn_matrix(w, dim)
    local h, wd = m:size(1), m:size(2)
    local u0 = F.normalize(w:new_empty({ h }):normal_(0, 1), 2, 1, eps)
    local v0 = F.normalize(w:new_empty({ wd }):normal_(0, 1), 2, 1, eps)
    return u0, v0
  end)
  module[name] = nil
  module[name .. '_orig'] = w
  module[name] = w:detach()
  module:register_buffer(name .. '_u', u)
  module:register_buffer(name .. '_v', v)
  local function compute(m, power)
    local weight = m[name .. '_orig']
    local wm = sn_matrix(weight, dim)
    local uu, vv = m[name .. '_u'], m[name .. '_v']
    if power then
      torch.no_grad(function()
        for _ = 1, n_power_iterations do
          vv:copy_(F.normalize(torch.mv(wm:t(), uu), 2, 1, eps))
          uu:copy_(F.normalize(torch.mv(wm, vv), 2, 1, eps))
        end
      end)
      uu, vv = uu:clone(), vv:clone()
    end
    local sigma = torch.dot(uu, torch.mv(wm, vv))
    return weight / sigma
  end
  local handle = module:register_forward_pre_hook(function(m) m[name] = compute(m, m.training) end)
  local hooks = rawget(module, '_attrs')._spectral_norm or {}
  hooks[name] = { handle = handle, dim = dim, compute = compute }
  module._spectral_norm = hooks
  return module
end
local function remove_spectral_norm(module, name)
  name = name or 'weight'
  local hooks = rawget(module, '_attrs')._spectral_norm
  local h = hooks and hooks[name]
  if not h then
    core.fail('nn.utils.remove_spectral_norm', ("spectral_norm of '%s' not found in %s"):format(name, tostring(module:_get_name())))
  end
  local w = torch.no_grad(function() return h.compute(module, false) end)
  h.handle:remove()
  hooks[name] = nil
  module[name] = nil
  module[name .. '_orig'] = nil
  module[name .. '_u'] = nil
  module[name .. '_v'] = nil
  module[name] = Mod.Parameter(w:detach())
  return module
end

------------------------------------------------------------------------------ weight_norm
-- PyTorch's norm_except_dim(v, 2, dim): the 2-norm over every dim but `dim` (1-based; false: over all)
local function norm_except_dim(v, dim)
  if not dim then return v:norm(2) end
  local others = {}
  for i = 1, v:dim() do if i ~= dim then others[#others + 1] = i end end
  if #others == 0 then return v:abs() end
  return v:norm(2, others, { keepdim = true })
end
M.norm_except_dim = norm_except_dim
local function compute_weight(m, name, dim)
  local g, v = m[name .. '_g'], m[name .. '_v']
  return v * (g / norm_except_dim(v, dim))
end
-- nn.utils.weight_norm(module, name='weight', dim=1): `name` becomes name_g (its norm, kept dims of
-- size 1) and name_v (its direction), and is recomputed from them before each forward. dim counts
-- from 1 (PyTorch's 0); false is PyTorch's None (one norm over the whole tensor).
local function weight_norm(module, name, dim)
  if type(name) == 'table' then name, dim = name.name, name.dim end
  name = name or 'weight'
  if dim == nil then dim = 1 end
  local w = module._parameters[name]
  if not w then core.fail('nn.utils.weight_norm', ("'%s' is not a parameter of %s"):format(name, module:_get_name())) end
  local hooks = rawget(module, '_attrs')._weight_norm or {}
  if hooks[name] then
    core.fail('nn.utils.weight_norm', 'Cannot register two weight_norm hooks on the same parameter ' .. name)
  end
  if dim and dim < 0 then dim = dim + w:dim() + 1 end
  module[name] = nil
  module[name .. '_g'] = Mod.Parameter(norm_except_dim(w, dim):detach())
  module[name .. '_v'] = Mod.Parameter(w:detach())
  module[name] = compute_weight(module, name, dim)
  local handle = module:register_forward_pre_hook(function(m) m[name] = compute_weight(m, name, dim) end)
  hooks[name] = { handle = handle, dim = dim }
  module._weight_norm = hooks
  return module
end
-- nn.utils.remove_weight_norm(module, name='weight'): `name` a parameter again, of the current value
local function remove_weight_norm(module, name)
  name = name or 'weight'
  local hooks = rawget(module, '_attrs')._weight_norm
  local h = hooks and hooks[name]
  if not h then
    core.fail('nn.utils.remove_weight_norm', ("weight_norm of '%s' not found in %s"):format(name, tostring(module:_get_name())))
  end
  local w = compute_weight(module, name, h.dim)
  h.handle:remove()
  hooks[name] = nil
  module[name] = nil
  module[name .. '_g'] = nil
  module[name .. '_v'] = nil
  module[name] = Mod.Parameter(w:detach())
  return module
end

function M.install(nn)
  local F = nn.functional
  for name, f in pairs(P.functional) do
    if F[name] == nil then F[name] = f end
  end
  if nn.utils.weight_norm == nil then
    nn.utils.weight_norm = weight_norm
    nn.utils.remove_weight_norm = remove_weight_norm
  end
  if nn.utils.spectral_norm == nil then
    nn.utils.spectral_norm = spectral_norm
    nn.utils.remove_spectral_norm = remove_spectral_norm
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
