-- nn.utils.parametrizations: orthogonal, spectral_norm (PyTorch 1.13's) and weight_norm (PyTorch
-- 2.1's, with 1.13's numbers: torch._weight_norm), each a parametrization registered with
-- nn.utils.parametrize. Dimensions count from 1 (`dim=1` is PyTorch's `dim=0`; `false` is None).
-- The older hook-based nn.utils.weight_norm / spectral_norm stay in lua/nn/parity.lua.
local ffi = require 'ffi'
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local Mod = require 'moontorch.nn.Module'
local P = require 'moontorch.nn.parametrize'
local init = require 'moontorch.nn.initialization'
local nn_parity = require 'moontorch.nn.parity'

local fail = core.fail
local is_tensor = T.is_tensor
local Module = Mod.Module
local sqrt, abs, max = math.sqrt, math.abs, math.max

local M = {}

local function F() return torch.nn.functional end

local function nograd(fn, ...)
  local prev = torch.is_grad_enabled()
  torch.set_grad_enabled(false)
  local res = { pcall(fn, ...) }
  torch.set_grad_enabled(prev)
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end

-- the tensor `name` of module (parameter, buffer or parametrized), or an error naming both
local function weight_of(op, module, name)
  local w = module[name]
  if not is_tensor(w) then
    fail(op, ("Module '%s' has no parameter or buffer with name '%s'"):format(tostring(module), tostring(name)))
  end
  return w
end

-- the batch dims of t (all but the last two), as an array
local function batch_of(t)
  local s = t:size()
  local b = {}
  for i = 1, #s - 2 do b[i] = s[i] end
  return b
end
local function cat_sizes(a, ...)
  local r = {}
  for i = 1, #a do r[i] = a[i] end
  for i = 1, select('#', ...) do r[#r + 1] = select(i, ...) end
  return r
end

------------------------------------------------------------------------------ orthogonal
-- Q of the QR factorisation of each square matrix of A with the columns signed so that R's
-- diagonal is positive (PyTorch's _make_orthogonal), in A's dtype
local function make_orthogonal(A)
  local n = A:size(-1)
  local flat = A:reshape(-1, A:size(-2), n)
  local out = torch.empty(flat:size(), { dtype = A.dtype })
  for b = 1, flat:size(1) do
    local m = flat[b]:to(torch.float64):contiguous():clone()
    out[b]:copy_(init._signed_q(m, m:size(1), n))
  end
  return out:view(A:size())
end

local function is_orthogonal(Q)
  local n, k = Q:size(-2), Q:size(-1)
  local Id = torch.eye(k, { dtype = Q.dtype, device = Q.device })
  local eps = 10 * n * torch.finfo(Q.dtype).eps
  return torch.allclose(Q:transpose(-2, -1):matmul(Q), Id, { atol = eps })
end

-- LAPACK's geqrf of each matrix of A (..., m, n): R on and above the diagonal, the Householder
-- vectors (their leading 1 implied) below it, and tau; computed in float64 (dgeqr2, dlarfg)
local function geqrf(A)
  local m, n = A:size(-2), A:size(-1)
  local flat = A:reshape(-1, m, n):to(torch.float64):contiguous():clone()
  local nb, k = flat:size(1), math.min(m, n)
  local tau = torch.zeros(nb, k, { dtype = torch.float64 })
  local a = ffi.cast('double *', flat:data_ptr())
  local tp = ffi.cast('double *', tau:data_ptr())
  for b = 0, nb - 1 do
    local base = b * m * n
    local function at(i, j) return base + i * n + j end
    for j = 0, k - 1 do
      local alpha = a[at(j, j)]
      local xnorm = 0
      for i = j + 1, m - 1 do xnorm = xnorm + a[at(i, j)] ^ 2 end
      xnorm = sqrt(xnorm)
      local t = 0
      if xnorm ~= 0 then
        local beta = sqrt(alpha * alpha + xnorm * xnorm)
        if alpha >= 0 then beta = -beta end
        t = (beta - alpha) / beta
        local scale = 1 / (alpha - beta)
        for i = j + 1, m - 1 do a[at(i, j)] = a[at(i, j)] * scale end
        a[at(j, j)] = beta
        -- apply H = I - t v v^T (v = (1, a[j+1:, j])) to the columns right of j
        for c = j + 1, n - 1 do
          local d = a[at(j, c)]
          for i = j + 1, m - 1 do d = d + a[at(i, j)] * a[at(i, c)] end
          d = d * t
          a[at(j, c)] = a[at(j, c)] - d
          for i = j + 1, m - 1 do a[at(i, c)] = a[at(i, c)] - d * a[at(i, j)] end
        end
      end
      tp[b * k + j] = t
    end
  end
  local bs = batch_of(A)
  return flat:view(A:size()):to(A.dtype), tau:view(cat_sizes(bs, k)):to(A.dtype)
end

local maps = { matrix_exp = true, cayley = true, householder = true }

local Orthogonal = class.class('nn.utils.parametrizations._Orthogonal', Module)
M._Orthogonal = Orthogonal

function Orthogonal:__init(weight, orthogonal_map, opts)
  Module.__init(self)
  local use_trivialization = true
  if type(opts) == 'table' and opts.use_trivialization ~= nil then use_trivialization = opts.use_trivialization and true or false end
  self.shape = weight:size()
  self.orthogonal_map = orthogonal_map
  if use_trivialization then self:register_buffer('base', nil) end
end

local function has_base(self) return rawget(self, '_buffers').base ~= nil end

function Orthogonal:forward(X)
  local n, k = X:size(-2), X:size(-1)
  local transposed = n < k
  if transposed then
    X = X:transpose(-2, -1)
    n, k = k, n
  end
  local Q
  local map = self.orthogonal_map
  if map == 'matrix_exp' or map == 'cayley' then
    X = X:tril()
    if n ~= k then
      local z = X:new_zeros({ n, n - k }):expand(cat_sizes(batch_of(X), -1, -1))
      X = torch.cat({ X, z }, -1)
    end
    local A = X - X:transpose(-2, -1)
    if map == 'matrix_exp' then
      Q = torch.matrix_exp(A)
    else
      local Id = torch.eye(n, { dtype = A.dtype, device = A.device })
      Q = torch.linalg.solve(torch.add(Id, A, { alpha = -0.5 }), torch.add(Id, A, { alpha = 0.5 }))
    end
    if n ~= k then Q = Q:narrow(-1, 1, k) end
  else
    local A = X:tril(-1)
    local tau = 2 / ((A * A):sum(-2) + 1)
    Q = torch.linalg.householder_product(A, tau)
    Q = Q * X:diagonal(0, -2, -1):int():unsqueeze(-2)
  end
  if has_base(self) then Q = self.base:matmul(Q) end
  if transposed then Q = Q:transpose(-2, -1) end
  return Q
end
Mod.declare_forward(Orthogonal, { 'X' })

function Orthogonal:right_inverse(Q)
  return nograd(function()
    if Q:size() ~= self.shape then
      fail('nn.utils.parametrizations.orthogonal', ('Expected a matrix or batch of matrices of shape %s. Got a tensor of shape %s.')
        :format(tostring(self.shape), tostring(Q:size())))
    end
    local Q_init = Q
    local n, k = Q:size(-2), Q:size(-1)
    local transpose = n < k
    if transpose then
      Q = Q:transpose(-2, -1)
      n, k = k, n
    end
    if not has_base(self) then
      if self.orthogonal_map == 'cayley' or self.orthogonal_map == 'matrix_exp' then
        P.not_implemented('It is not possible to assign to the matrix exponential or the Cayley parametrizations ' ..
          'when use_trivialization=False.')
      end
      local A, tau = geqrf(Q)
      local d = A:diagonal(0, -2, -1)
      d:copy_(torch.where(tau:eq(0), -d:sign(), d:sign()))
      if transpose then return A:transpose(-2, -1) end
      return A
    end
    if n == k then
      if not is_orthogonal(Q) then Q = make_orthogonal(Q) else Q = Q:clone() end
    else
      local N = torch.randn(cat_sizes(batch_of(Q), n, n - k), { dtype = Q.dtype, device = Q.device })
      Q = make_orthogonal(torch.cat({ Q, N }, -1))
    end
    self.base = Q
    local neg_Id = torch.zeros_like(Q_init)
    neg_Id:diagonal(0, -2, -1):fill_(-1)
    return neg_Id
  end)
end

-- orthogonal(module, name='weight', orthogonal_map=nil, {use_trivialization=true}) -> module;
-- orthogonal(module, {name=, orthogonal_map=, use_trivialization=}) too
function M.orthogonal(module, name, orthogonal_map, opts)
  local op = 'nn.utils.parametrizations.orthogonal'
  if type(name) == 'table' then name, orthogonal_map, opts = name.name, name.orthogonal_map, name end
  if type(orthogonal_map) == 'table' then orthogonal_map, opts = opts and opts.orthogonal_map, orthogonal_map end
  name = name or 'weight'
  local weight = weight_of(op, module, name)
  if weight:dim() < 2 then
    fail(op, ('Expected a matrix or batch of matrices. Got a tensor of %d dimensions.'):format(weight:dim()))
  end
  if orthogonal_map == nil then
    orthogonal_map = weight:size(-2) == weight:size(-1) and 'matrix_exp' or 'householder'
  end
  if not maps[orthogonal_map] then
    fail(op, ('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: %s'):format(tostring(orthogonal_map)))
  end
  local orth = Orthogonal(weight, orthogonal_map, opts)
  P.register_parametrization(module, name, orth, { unsafe = true })
  return module
end

------------------------------------------------------------------------------ spectral_norm
local SpectralNorm = class.class('nn.utils.parametrizations._SpectralNorm', Module)
M._SpectralNorm = SpectralNorm

-- _SpectralNorm(weight, n_power_iterations=1, dim=1, eps=1e-12): dim counts from 1
function SpectralNorm:__init(weight, n_power_iterations, dim, eps)
  Module.__init(self)
  local op = 'nn.utils.parametrizations.spectral_norm'
  n_power_iterations, dim, eps = n_power_iterations or 1, dim or 1, eps or 1e-12
  local ndim = weight:dim()
  if dim == 0 or dim > ndim or dim < -ndim then
    fail(op, ('Dimension out of range (expected to be in range of [%d, -1] or [1, %d] but got %s)')
      :format(-ndim, ndim, tostring(dim)))
  end
  if n_power_iterations <= 0 then
    fail(op, ('Expected n_power_iterations to be positive, but got n_power_iterations=%s'):format(tostring(n_power_iterations)))
  end
  self.dim = dim > 0 and dim or dim + ndim + 1
  self.eps = eps
  if ndim > 1 then
    self.n_power_iterations = n_power_iterations
    local wm = self:_reshape_weight_to_matrix(weight)
    local h, w = wm:size(1), wm:size(2)
    local u, v = nograd(function()
      local u0 = wm:new_empty({ h }):normal_(0, 1)
      local v0 = wm:new_empty({ w }):normal_(0, 1)
      return F().normalize(u0, 2, 1, eps), F().normalize(v0, 2, 1, eps)
    end)
    self:register_buffer('_u', u)
    self:register_buffer('_v', v)
    self:_power_method(wm, 15)
  end
end

function SpectralNorm:_reshape_weight_to_matrix(weight)
  if self.dim ~= 1 then
    local perm = { self.dim }
    for d = 1, weight:dim() do if d ~= self.dim then perm[#perm + 1] = d end end
    weight = weight:permute(perm)
  end
  return weight:flatten(2)
end

function SpectralNorm:_power_method(weight_mat, n)
  nograd(function()
    local u, v, eps = self._u, self._v, self.eps
    for _ = 1, n do
      u:copy_(F().normalize(torch.mv(weight_mat, v), 2, 1, eps))
      v:copy_(F().normalize(torch.mv(weight_mat:t(), u), 2, 1, eps))
    end
  end)
end

function SpectralNorm:forward(weight)
  if weight:dim() == 1 then return F().normalize(weight, 2, 1, self.eps) end
  local wm = self:_reshape_weight_to_matrix(weight)
  if self.training then self:_power_method(wm, self.n_power_iterations) end
  local u = self._u:clone({ memory_format = torch.contiguous_format })
  local v = self._v:clone({ memory_format = torch.contiguous_format })
  local sigma = torch.dot(u, torch.mv(wm, v))
  return weight / sigma
end
Mod.declare_forward(SpectralNorm, { 'weight' })

function SpectralNorm:right_inverse(value) return value end

-- spectral_norm(module, name='weight', n_power_iterations=1, eps=1e-12, dim=nil) -> module (or
-- one options table after module). dim counts from 1; nil: 2 for ConvTranspose, else 1.
function M.spectral_norm(module, name, n_power_iterations, eps, dim)
  local op = 'nn.utils.parametrizations.spectral_norm'
  if type(name) == 'table' then
    local o = name
    name, n_power_iterations, eps, dim = o.name, o.n_power_iterations, o.eps, o.dim
  end
  name = name or 'weight'
  local weight = weight_of(op, module, name)
  if dim == nil then
    local nn = torch.nn
    dim = (torch.isinstance(module, nn.ConvTranspose1d) or torch.isinstance(module, nn.ConvTranspose2d)
      or torch.isinstance(module, nn.ConvTranspose3d)) and 2 or 1
  end
  P.register_parametrization(module, name, SpectralNorm(weight, n_power_iterations or 1, dim, eps or 1e-12))
  return module
end

------------------------------------------------------------------------------ weight_norm
local norm_except_dim = nn_parity.norm_except_dim

local WeightNorm = class.class('nn.utils.parametrizations._WeightNorm', Module)
M._WeightNorm = WeightNorm

-- _WeightNorm(dim=1): dim counts from 1, false for a norm over the whole tensor
function WeightNorm:__init(dim)
  Module.__init(self)
  if dim == nil then dim = 1 end
  self.dim = dim
end
local function wn_dim(self, t)
  local d = self.dim
  if d and d < 0 then d = d + t:dim() + 1 end
  return d
end
-- torch._weight_norm(v, g, dim): v * (g / ||v||), the norm over every dim but dim
function WeightNorm:forward(weight_g, weight_v)
  return weight_v * (weight_g / norm_except_dim(weight_v, wn_dim(self, weight_v)))
end
Mod.declare_forward(WeightNorm, { 'weight_g', 'weight_v' })
function WeightNorm:right_inverse(weight)
  return norm_except_dim(weight, wn_dim(self, weight)), weight
end

-- weight_norm(module, name='weight', dim=1) -> module: `name` = g * v / ||v||, with g and v in
-- parametrizations.<name>.original0 and original1. A state_dict of the old nn.utils.weight_norm
-- (<name>_g, <name>_v) loads into it.
function M.weight_norm(module, name, dim)
  if type(name) == 'table' then name, dim = name.name, name.dim end
  name = name or 'weight'
  if dim == nil then dim = 1 end
  weight_of('nn.utils.parametrizations.weight_norm', module, name)
  P.register_parametrization(module, name, WeightNorm(dim), { unsafe = true })
  module:_register_load_state_dict_pre_hook(function(state_dict, prefix)
    local g_key, v_key = prefix .. name .. '_g', prefix .. name .. '_v'
    local g, v = state_dict[g_key], state_dict[v_key]
    if g ~= nil and v ~= nil then
      state_dict[g_key] = nil
      state_dict[v_key] = nil
      state_dict[prefix .. 'parametrizations.' .. name .. '.original0'] = g
      state_dict[prefix .. 'parametrizations.' .. name .. '.original1'] = v
    end
  end)
  return module
end

M._geqrf, M._make_orthogonal = geqrf, make_orthogonal

return M
