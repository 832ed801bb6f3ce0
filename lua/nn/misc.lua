-- Dropout modules, Bilinear, Flatten, Unflatten, CosineSimilarity, PairwiseDistance (issue 12),
-- F.feature_alpha_dropout, and nn.utils' clip_grad_norm_, clip_grad_value_,
-- parameters_to_vector, vector_to_parameters.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local Mod = require 'moontorch.nn.Module'
local A = require 'moontorch.nn.modargs'

local fail, is_tensor = core.fail, T.is_tensor
local Module, Parameter = Mod.Module, Mod.Parameter
local check_int, declare_forward = Mod.check_int, Mod.declare_forward
local pyfloat, pybool = A.pyfloat, A.pybool
local type, tostring, ipairs, math = type, tostring, ipairs, math

local M = {}
local nn, F -- set by install

local define = Mod.definer(M)

------------------------------------------------------------------------------ dropout
-- F.feature_alpha_dropout(x, p=0.5, training=false, inplace=false): alpha dropout of whole
-- channels of (N, C, *): one draw per (n, c), from a tensor of shape (N, C, 1, ...) as PyTorch draws
local ALPHA = 1.7580993408473766
local function feature_alpha_dropout(x, ...)
  local fn = 'nn.functional.feature_alpha_dropout'
  if not is_tensor(x) then fail(fn, ('input must be a tensor (got %s)'):format(type(x))) end
  local v = A.parse(fn, { 'p', 'training', 'inplace' }, false, ...)
  local p = v.p == nil and 0.5 or v.p
  if type(p) ~= 'number' or p < 0 or p > 1 then
    fail(fn, ('dropout probability has to be between 0 and 1, but got %s'):format(tostring(p)))
  end
  local inplace = v.inplace == true
  if v.training ~= true or p == 0 or x:numel() == 0 then return x end
  if x:dim() < 2 then fail(fn, 'Feature dropout requires at least 2 dimensions in the input') end
  if p == 1 then
    local zero = torch.zeros({}, { dtype = x.dtype })
    if inplace then return x:mul_(zero) end
    return x * zero
  end
  local shape = { x:size(1), x:size(2) }
  for _ = 3, x:dim() do shape[#shape + 1] = 1 end
  local noise = torch.empty(shape, { dtype = x.dtype, device = x.device }):bernoulli_(1 - p)
  local a = 1 / math.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
  local b = (noise - 1) * (ALPHA * a) + ALPHA * a * p
  noise:mul_(a)
  if inplace then return x:mul_(noise):add_(b) end
  return x * noise + b
end
M.feature_alpha_dropout = feature_alpha_dropout

-- nn.Dropout(p=0.5, inplace=false) and the others: F.<fn>(x, p, self.training, inplace)
local function dropout_class(name, fn)
  local cls = define(name)
  function cls:__init(...)
    Module.__init(self)
    local v = A.parse('nn.' .. name, { 'p', 'inplace' }, false, ...)
    local p = v.p == nil and 0.5 or v.p
    if type(p) ~= 'number' or p < 0 or p > 1 then
      fail('nn.' .. name, ('dropout probability has to be between 0 and 1, but got %s'):format(tostring(p)))
    end
    self.p = p
    self.inplace = A.bool('nn.' .. name, 'inplace', v.inplace, false)
  end
  function cls:forward(input) return F[fn](input, self.p, self.training, self.inplace) end
  declare_forward(cls, { 'input' })
  function cls:extra_repr() return ('p=%s, inplace=%s'):format(pyfloat(self.p), pybool(self.inplace)) end
end
dropout_class('Dropout', 'dropout')
dropout_class('Dropout1d', 'dropout1d')
dropout_class('Dropout2d', 'dropout2d')
dropout_class('Dropout3d', 'dropout3d')
dropout_class('AlphaDropout', 'alpha_dropout')
dropout_class('FeatureAlphaDropout', 'feature_alpha_dropout')

------------------------------------------------------------------------------ Bilinear
-- nn.Bilinear(in1_features, in2_features, out_features, bias=true, {device=, dtype=})
local Bilinear = define('Bilinear')
function Bilinear:__init(in1, in2, out, ...)
  Module.__init(self)
  local v, fk = A.parse('nn.Bilinear', { 'bias' }, true, ...)
  check_int('nn.Bilinear', 'in1_features', in1, 0)
  check_int('nn.Bilinear', 'in2_features', in2, 0)
  check_int('nn.Bilinear', 'out_features', out, 0)
  self.in1_features, self.in2_features, self.out_features = in1, in2, out
  self.weight = Parameter(fk and torch.empty({ out, in1, in2 }, fk) or torch.empty({ out, in1, in2 }))
  if A.bool('nn.Bilinear', 'bias', v.bias, true) then
    self.bias = Parameter(fk and torch.empty({ out }, fk) or torch.empty({ out }))
  else
    self:register_parameter('bias', nil)
  end
  if require('moontorch.nn.layers').skipping == 0 then self:reset_parameters() end
end
-- PyTorch's: weight and bias from U(-1/sqrt(in1_features), 1/sqrt(in1_features)), weight first
function Bilinear:reset_parameters()
  local bound = 1 / math.sqrt(self.weight:size(2))
  nn.init.uniform_(self.weight, -bound, bound)
  if self.bias ~= nil then nn.init.uniform_(self.bias, -bound, bound) end
end
function Bilinear:forward(input1, input2) return F.bilinear(input1, input2, self.weight, self.bias) end
declare_forward(Bilinear, { 'input1', 'input2' })
function Bilinear:extra_repr()
  return ('in1_features=%d, in2_features=%d, out_features=%d, bias=%s'):format(self.in1_features,
    self.in2_features, self.out_features, pybool(self.bias ~= nil))
end

------------------------------------------------------------------------------ Flatten, Unflatten
-- nn.Flatten(start_dim=2, end_dim=-1): dims 1-based (PyTorch's start_dim=1 is the second dim)
local Flatten = define('Flatten')
function Flatten:__init(...)
  Module.__init(self)
  local v = A.parse('nn.Flatten', { 'start_dim', 'end_dim' }, false, ...)
  self.start_dim = v.start_dim == nil and 2 or v.start_dim
  self.end_dim = v.end_dim == nil and -1 or v.end_dim
  check_int('nn.Flatten', 'start_dim', self.start_dim)
  check_int('nn.Flatten', 'end_dim', self.end_dim)
end
function Flatten:forward(input)
  Mod.need_input('nn.Flatten', input)
  return input:flatten(self.start_dim, self.end_dim)
end
declare_forward(Flatten, { 'input' })
function Flatten:extra_repr() return ('start_dim=%d, end_dim=%d'):format(self.start_dim, self.end_dim) end

-- nn.Unflatten(dim, unflattened_size): dim 1-based, the size an array of integers
local Unflatten = define('Unflatten')
function Unflatten:__init(dim, size)
  Module.__init(self)
  if type(dim) == 'table' and A.is_opts(dim) then dim, size = dim.dim, dim.unflattened_size end
  check_int('nn.Unflatten', 'dim', dim)
  if type(size) ~= 'table' or is_tensor(size) then
    fail('nn.Unflatten', ('unflattened_size must be a tuple of ints, but found type %s'):format(type(size)))
  end
  for i, s in ipairs(size) do
    if type(s) ~= 'number' or s % 1 ~= 0 then
      fail('nn.Unflatten', ('unflattened_size must be tuple of ints, but found element of type %s at pos %d')
        :format(type(s), i))
    end
  end
  self.dim = dim
  self.unflattened_size = { unpack(size) }
end
function Unflatten:forward(input) return input:unflatten(self.dim, self.unflattened_size) end
declare_forward(Unflatten, { 'input' })
function Unflatten:extra_repr()
  local s = self.unflattened_size
  local t = #s == 1 and ('(%d,)'):format(s[1]) or '(' .. table.concat(s, ', ') .. ')'
  return ('dim=%d, unflattened_size=%s'):format(self.dim, t)
end

------------------------------------------------------------------------------ distances
-- nn.CosineSimilarity(dim=2, eps=1e-8): dim 1-based (PyTorch's default dim=1)
local CosineSimilarity = define('CosineSimilarity')
function CosineSimilarity:__init(...)
  Module.__init(self)
  local v = A.parse('nn.CosineSimilarity', { 'dim', 'eps' }, false, ...)
  self.dim = v.dim == nil and 2 or v.dim
  check_int('nn.CosineSimilarity', 'dim', self.dim)
  self.eps = A.number('nn.CosineSimilarity', 'eps', v.eps, 1e-8)
end
function CosineSimilarity:forward(x1, x2) return F.cosine_similarity(x1, x2, self.dim, self.eps) end
declare_forward(CosineSimilarity, { 'x1', 'x2' })

-- nn.PairwiseDistance(p=2, eps=1e-6, keepdim=false)
local PairwiseDistance = define('PairwiseDistance')
function PairwiseDistance:__init(...)
  Module.__init(self)
  local v = A.parse('nn.PairwiseDistance', { 'p', 'eps', 'keepdim' }, false, ...)
  self.norm = A.number('nn.PairwiseDistance', 'p', v.p, 2.0)
  self.eps = A.number('nn.PairwiseDistance', 'eps', v.eps, 1e-6)
  self.keepdim = A.bool('nn.PairwiseDistance', 'keepdim', v.keepdim, false)
end
function PairwiseDistance:forward(x1, x2) return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim) end
declare_forward(PairwiseDistance, { 'x1', 'x2' })

------------------------------------------------------------------------------ nn.utils
local utils = {}
M.utils = utils

-- the parameters argument: one tensor, or an array of them
local function param_list(fn, parameters)
  if is_tensor(parameters) then return { parameters } end
  if type(parameters) ~= 'table' then
    fail(fn, ('parameters must be a tensor or an array of tensors (got %s)'):format(type(parameters)))
  end
  local n = T.seq_len(parameters) or T.seq_fail(parameters, fn, 'parameters')
  for i = 1, n do
    if not is_tensor(parameters[i]) then
      fail(fn, ('parameters[%d] must be a tensor (got %s)'):format(i, type(parameters[i])))
    end
  end
  return parameters, n
end

local function grads_of(fn, parameters)
  local ps, n = param_list(fn, parameters)
  local grads = {}
  for i = 1, n or #ps do
    local g = ps[i].grad
    if g ~= nil then grads[#grads + 1] = g end
  end
  return grads
end

-- clip_grad_norm_(parameters, max_norm, norm_type=2, error_if_nonfinite=false): scales the
-- gradients in place so that their joint norm is at most max_norm; returns the joint norm (a 0-dim
-- tensor) as it was before clipping
function utils.clip_grad_norm_(parameters, max_norm, ...)
  local fn = 'nn.utils.clip_grad_norm_'
  local grads = grads_of(fn, parameters)
  local v = A.parse(fn, { 'norm_type', 'error_if_nonfinite', 'foreach' }, false, ...)
  max_norm = A.number(fn, 'max_norm', max_norm)
  if max_norm == nil then fail(fn, "missing required argument 'max_norm'") end
  local norm_type = v.norm_type
  if norm_type == 'inf' then norm_type = math.huge end
  norm_type = A.number(fn, 'norm_type', norm_type, 2.0)
  if #grads == 0 then return torch.tensor(0.0) end
  return torch.no_grad(function()
    local total
    if norm_type == math.huge then
      local norms = {}
      for i, g in ipairs(grads) do norms[i] = g:abs():max() end
      total = #norms == 1 and norms[1] or torch.stack(norms):max()
    else
      local norms = {}
      for i, g in ipairs(grads) do norms[i] = g:norm(norm_type) end
      total = torch.stack(norms):norm(norm_type)
    end
    if v.error_if_nonfinite == true and not total:isfinite():item() then
      fail(fn, ('The total norm of order %s for gradients from `parameters` is non-finite, so it cannot be clipped. ' ..
        'To disable this error and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`')
        :format(pyfloat(norm_type)))
    end
    local coef = (max_norm / (total + 1e-6)):clamp_max(1.0)
    for _, g in ipairs(grads) do g:mul_(coef:to(g.dtype)) end
    return total
  end)
end

-- clip_grad_value_(parameters, clip_value): clamps every gradient to [-clip_value, clip_value]
function utils.clip_grad_value_(parameters, clip_value, opts)
  local fn = 'nn.utils.clip_grad_value_'
  local grads = grads_of(fn, parameters)
  if A.is_opts(opts) and clip_value == nil then clip_value = opts.clip_value end
  clip_value = A.number(fn, 'clip_value', clip_value)
  if clip_value == nil then fail(fn, "missing required argument 'clip_value'") end
  torch.no_grad(function()
    for _, g in ipairs(grads) do g:clamp_(-clip_value, clip_value) end
  end)
end

local function check_same_device(fn, ps, n)
  local dev
  for i = 1, n do
    local d = tostring(ps[i].device)
    if dev and d ~= dev then fail(fn, 'Found two parameters on different devices, this is currently not supported.') end
    dev = d
  end
end

-- parameters_to_vector(parameters): one 1-D tensor of every parameter's values, in order
function utils.parameters_to_vector(parameters)
  local fn = 'nn.utils.parameters_to_vector'
  local ps, n = param_list(fn, parameters)
  n = n or #ps
  check_same_device(fn, ps, n)
  local flat = {}
  for i = 1, n do flat[i] = ps[i]:reshape(-1) end
  return torch.cat(flat)
end

-- vector_to_parameters(vec, parameters): copies consecutive slices of vec into the parameters
-- (PyTorch rebinds each parameter's .data to a view of vec; here the values are copied in place,
-- under no_grad, so the parameters stay the module's own tensors)
function utils.vector_to_parameters(vec, parameters)
  local fn = 'nn.utils.vector_to_parameters'
  if not is_tensor(vec) then fail(fn, ('expected torch.Tensor, but got: %s'):format(type(vec))) end
  local ps, n = param_list(fn, parameters)
  n = n or #ps
  check_same_device(fn, ps, n)
  local total = 0
  for i = 1, n do total = total + ps[i]:numel() end
  if vec:dim() ~= 1 or vec:numel() ~= total then
    fail(fn, ('vec must be a 1-D tensor of %d elements (the parameters\' total), got size [%s]')
      :format(total, table.concat(vec:size(), ', ')))
  end
  torch.no_grad(function()
    local at = 1
    for i = 1, n do
      local p = ps[i]
      local k = p:numel()
      p:copy_(vec:narrow(1, at, k):view(p:size()))
      at = at + k
    end
  end)
end

-- functional(F): puts this file's nn.functional ops into F (lua/nn/functional.lua calls it)
function M.functional(F_)
  F = F_
  F.feature_alpha_dropout = feature_alpha_dropout
end

function M.install(nn_)
  nn = nn_
  M.functional(nn_.functional)
  class.export(M, nn)
  for k, v in pairs(utils) do nn.utils[k] = v end
end

return M
