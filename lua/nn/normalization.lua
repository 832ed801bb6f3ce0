-- Normalisation modules (issue 12): LayerNorm, GroupNorm, InstanceNorm1d/2d/3d,
-- LocalResponseNorm, and F.instance_norm, F.local_response_norm.
-- (BatchNorm1d/2d/3d and F.batch_norm are in layers.lua.)
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local Mod = require 'moontorch.nn.Module'
local A = require 'moontorch.nn.modargs'
local layers = require 'moontorch.nn.layers'

local fail, is_tensor = core.fail, T.is_tensor
local Module, Parameter = Mod.Module, Mod.Parameter
local check_int, declare_forward = Mod.check_int, Mod.declare_forward
local pyfloat, pybool = A.pyfloat, A.pybool
local type, tostring, ipairs, math = type, tostring, ipairs, math

local M = {}
local nn, F -- set by install

local define = Mod.definer(M)
local function empty(sizes, fk) return fk and torch.empty(sizes, fk) or torch.empty(sizes) end
local function init_parameters(self) if layers.skipping == 0 then self:reset_parameters() end end

------------------------------------------------------------------------------ functional
local function torch_size(x) return 'torch.Size([' .. table.concat(x:size(), ', ') .. '])' end


-- instance_norm(input, running_mean=nil, running_var=nil, weight=nil, bias=nil,
-- use_input_stats=true, momentum=0.1, eps=1e-5): each (n, c) plane of (N, C, *) normalised by its
-- own mean and (biased) variance; the running statistics, when given, move towards the mean over
-- the batch of the planes' means and unbiased variances (as PyTorch's batch norm of the reshaped
-- input does); with use_input_stats=false the running statistics normalise
function M.instance_norm(input, ...)
  local fn = 'nn.functional.instance_norm'
  if not is_tensor(input) then fail(fn, ('input must be a tensor (got %s)'):format(type(input))) end
  local v = A.parse(fn, { 'running_mean', 'running_var', 'weight', 'bias', 'use_input_stats', 'momentum', 'eps' },
    false, ...)
  local nd = input:dim()
  if nd < 2 then fail(fn, ('expected at least 2D input (got %dD input)'):format(nd)) end
  local use_input_stats = v.use_input_stats ~= false
  local momentum = A.number(fn, 'momentum', v.momentum, 0.1)
  local eps = A.number(fn, 'eps', v.eps, 1e-5)
  local n, c = input:size(1), input:size(2)
  local rm, rv, w, b = v.running_mean, v.running_var, v.weight, v.bias
  for _, p in ipairs({ { rm, 'running_mean' }, { rv, 'running_var' }, { w, 'weight' }, { b, 'bias' } }) do
    if p[1] ~= nil and (not is_tensor(p[1]) or p[1]:numel() ~= c) then
      fail(fn, ('%s should contain %d elements not %s'):format(p[2], c,
        is_tensor(p[1]) and tostring(p[1]:numel()) or type(p[1])))
    end
  end
  if use_input_stats then
    local spatial = 1
    for d = 3, nd do spatial = spatial * input:size(d) end
    if spatial == 1 then
      fail(fn, ('Expected more than 1 spatial element when training, got input size %s'):format(torch_size(input)))
    end
  elseif rm == nil or rv == nil then
    fail(fn, 'Expected running_mean and running_var to be defined when use_input_stats is false')
  end
  -- as PyTorch: a batch norm of the input seen as one sample of n*c channels (the per-channel
  -- tensors repeated n times), viewed back (ViewBackward0 over NativeBatchNormBackward0); the
  -- running statistics are the means over the batch of the repeated ones after the update
  local shape = input:size()
  local flat = { 1, n * c }
  for d = 3, nd do flat[d] = shape[d] end
  local function rep(t) return t ~= nil and t['repeat'](t, n) or nil end
  local rm_n, rv_n = rep(rm), rep(rv)
  local out = layers.batch_norm(input:reshape(flat), rm_n, rv_n, rep(w), rep(b), use_input_stats, momentum, eps)
  if use_input_stats and (rm ~= nil or rv ~= nil) then
    torch.no_grad(function()
      if rm ~= nil then rm:copy_(rm_n:view(n, c):mean(1)) end
      if rv ~= nil then rv:copy_(rv_n:view(n, c):mean(1)) end
    end)
  end
  return out:view(shape)
end

-- local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1): input / (k + alpha * mean of
-- squares over `size` neighbouring channels, zero-padded)^beta, over dim 2 of (N, C, *)
function M.local_response_norm(input, size, ...)
  local fn = 'nn.functional.local_response_norm'
  if not is_tensor(input) then fail(fn, ('input must be a tensor (got %s)'):format(type(input))) end
  local v = A.parse(fn, { 'alpha', 'beta', 'k' }, false, ...)
  check_int(fn, 'size', size, 1)
  local alpha, beta, k = A.number(fn, 'alpha', v.alpha, 1e-4), A.number(fn, 'beta', v.beta, 0.75),
    A.number(fn, 'k', v.k, 1.0)
  local nd = input:dim()
  if nd < 3 then fail(fn, ('Expected 3D or higher dimensionality input (got %d dimensions)'):format(nd)) end
  if input:numel() == 0 then return input end
  local sq = input * input
  local before, after = math.floor(size / 2), math.floor((size - 1) / 2)
  local parts = {}
  local shape = input:size()
  if before > 0 then
    shape[2] = before
    parts[#parts + 1] = torch.zeros(shape, { dtype = input.dtype, device = input.device })
  end
  parts[#parts + 1] = sq
  if after > 0 then
    shape[2] = after
    parts[#parts + 1] = torch.zeros(shape, { dtype = input.dtype, device = input.device })
  end
  local padded = #parts > 1 and torch.cat(parts, 2) or sq
  -- windows of `size` channels: (N, C, *, size), summed and divided by size (count_include_pad)
  local div = padded:unfold(2, size, 1):sum(-1) / size
  return input / (div * alpha + k):pow(beta)
end

------------------------------------------------------------------------------ LayerNorm
-- nn.LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=true, {device=, dtype=})
local LayerNorm = define('LayerNorm')
function LayerNorm:__init(normalized_shape, ...)
  Module.__init(self)
  local v, fk = A.parse('nn.LayerNorm', { 'eps', 'elementwise_affine' }, true, ...)
  local shape = normalized_shape
  if type(shape) == 'number' then shape = { shape } end
  if type(shape) ~= 'table' or is_tensor(shape) then
    fail('nn.LayerNorm', ('normalized_shape must be an integer or an array of integers (got %s)'):format(type(shape)))
  end
  local copy = {}
  for i, s in ipairs(shape) do copy[i] = check_int('nn.LayerNorm', 'normalized_shape', s, 0) end
  self.normalized_shape = copy
  self.eps = A.number('nn.LayerNorm', 'eps', v.eps, 1e-5)
  self.elementwise_affine = A.bool('nn.LayerNorm', 'elementwise_affine', v.elementwise_affine, true)
  if self.elementwise_affine then
    self.weight = Parameter(empty(copy, fk))
    self.bias = Parameter(empty(copy, fk))
  else
    self:register_parameter('weight', nil)
    self:register_parameter('bias', nil)
  end
  init_parameters(self)
end
function LayerNorm:reset_parameters()
  if self.elementwise_affine then
    nn.init.ones_(self.weight)
    nn.init.zeros_(self.bias)
  end
end
function LayerNorm:forward(input)
  return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)
end
declare_forward(LayerNorm, { 'input' })
function LayerNorm:extra_repr()
  local s = self.normalized_shape
  local t = #s == 1 and ('(%d,)'):format(s[1]) or '(' .. table.concat(s, ', ') .. ')'
  return ('%s, eps=%s, elementwise_affine=%s'):format(t, pyfloat(self.eps), pybool(self.elementwise_affine))
end

------------------------------------------------------------------------------ GroupNorm
-- nn.GroupNorm(num_groups, num_channels, eps=1e-5, affine=true, {device=, dtype=})
local GroupNorm = define('GroupNorm')
function GroupNorm:__init(num_groups, num_channels, ...)
  Module.__init(self)
  local v, fk = A.parse('nn.GroupNorm', { 'eps', 'affine' }, true, ...)
  check_int('nn.GroupNorm', 'num_groups', num_groups, 1)
  check_int('nn.GroupNorm', 'num_channels', num_channels, 0)
  if num_channels % num_groups ~= 0 then fail('nn.GroupNorm', 'num_channels must be divisible by num_groups') end
  self.num_groups, self.num_channels = num_groups, num_channels
  self.eps = A.number('nn.GroupNorm', 'eps', v.eps, 1e-5)
  self.affine = A.bool('nn.GroupNorm', 'affine', v.affine, true)
  if self.affine then
    self.weight = Parameter(empty({ num_channels }, fk))
    self.bias = Parameter(empty({ num_channels }, fk))
  else
    self:register_parameter('weight', nil)
    self:register_parameter('bias', nil)
  end
  init_parameters(self)
end
function GroupNorm:reset_parameters()
  if self.affine then
    nn.init.ones_(self.weight)
    nn.init.zeros_(self.bias)
  end
end
function GroupNorm:forward(input) return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps) end
declare_forward(GroupNorm, { 'input' })
function GroupNorm:extra_repr()
  return ('%d, %d, eps=%s, affine=%s'):format(self.num_groups, self.num_channels, pyfloat(self.eps), pybool(self.affine))
end

------------------------------------------------------------------------------ InstanceNorm
-- nn.InstanceNorm2d(num_features, eps=1e-5, momentum=0.1, affine=false, track_running_stats=false,
-- {device=, dtype=}): the parameters and buffers of BatchNorm (PyTorch's _NormBase), other defaults
local InstanceNorm = define('_InstanceNorm')
function InstanceNorm:__init(num_features, ...)
  local name = 'nn.' .. self:_get_name()
  local v, fk = A.parse(name, { 'eps', 'momentum', 'affine', 'track_running_stats' }, true, ...)
  local opts = { eps = v.eps, momentum = v.momentum, affine = v.affine == true,
    track_running_stats = v.track_running_stats == true }
  if fk then opts.device, opts.dtype = fk.device, fk.dtype end
  layers._BatchNorm.__init(self, num_features, opts)
end
InstanceNorm.reset_running_stats = layers._BatchNorm.reset_running_stats
InstanceNorm.reset_parameters = layers._BatchNorm.reset_parameters
InstanceNorm.extra_repr = layers._BatchNorm.extra_repr

function InstanceNorm:forward(input)
  Mod.need_input(class.typename(self) or 'nn.InstanceNorm', input)
  local name, nobatch = self:_get_name(), self._nobatch
  local nd = input:dim()
  if nd ~= nobatch and nd ~= nobatch + 1 then
    fail(name, ('expected %dD or %dD input (got %dD input)'):format(nobatch, nobatch + 1, nd))
  end
  local fdim = nd - nobatch + 1 -- 1-based
  if input:size(fdim) ~= self.num_features then
    if self.affine then
      fail(name, ("expected input's size at dim=%d to match num_features (%d), but got: %d.")
        :format(fdim, self.num_features, input:size(fdim)))
    end
  end
  local batched = nd == nobatch + 1
  local x = batched and input or input:unsqueeze(1)
  local momentum = self.momentum
  if momentum == false then momentum = 0.1 end
  local out = M.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
    self.training or not self.track_running_stats, momentum, self.eps)
  if batched then return out end
  return out:squeeze(1)
end
declare_forward(InstanceNorm, { 'input' })

for d = 1, 3 do
  local cls = define(('InstanceNorm%dd'):format(d), InstanceNorm)
  cls._nobatch = d + 1
end

------------------------------------------------------------------------------ LocalResponseNorm
-- nn.LocalResponseNorm(size, alpha=1e-4, beta=0.75, k=1)
local LocalResponseNorm = define('LocalResponseNorm')
function LocalResponseNorm:__init(size, ...)
  Module.__init(self)
  local v = A.parse('nn.LocalResponseNorm', { 'alpha', 'beta', 'k' }, false, ...)
  check_int('nn.LocalResponseNorm', 'size', size, 1)
  self.size = size
  self.alpha = A.number('nn.LocalResponseNorm', 'alpha', v.alpha, 1e-4)
  self.beta = A.number('nn.LocalResponseNorm', 'beta', v.beta, 0.75)
  self.k = A.number('nn.LocalResponseNorm', 'k', v.k, 1.0)
end
function LocalResponseNorm:forward(input)
  return M.local_response_norm(input, self.size, self.alpha, self.beta, self.k)
end
declare_forward(LocalResponseNorm, { 'input' })
function LocalResponseNorm:extra_repr()
  return ('%d, alpha=%s, beta=%s, k=%s'):format(self.size, pyfloat(self.alpha), pyfloat(self.beta), pyfloat(self.k))
end

-- functional(F): puts this file's nn.functional ops into F (lua/nn/functional.lua calls it)
function M.functional(F_)
  F = F_
  F.instance_norm = M.instance_norm
  F.local_response_norm = M.local_response_norm
end

function M.install(nn_)
  nn = nn_
  M.functional(nn_.functional)
  class.export(M, nn)
end

return M
