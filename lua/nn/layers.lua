-- Built-in layers: Identity, Linear, activations, BatchNorm1d/2d/3d.
-- Every one takes PyTorch's arguments (positionally, or in a trailing options table) plus
-- {device=, dtype=} for its parameters and buffers, and initialises them drawing exactly what
-- PyTorch's reset_parameters draws (nn.utils.skip_init leaves them uninitialised).
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local Mod = require 'moontorch.nn.Module'

local fail = core.fail
local Module, Parameter = Mod.Module, Mod.Parameter
local check_int, declare_forward = Mod.check_int, Mod.declare_forward
local type, tostring, math = type, tostring, math

local M = {}
local nn -- moontorch.nn, set by install (functional, init)

-- Python's repr of a number (1 -> '1.0' for floats, 1e-05, 0.1)
local function pyfloat(x)
  if x == math.huge then return 'inf' elseif x == -math.huge then return '-inf' elseif x ~= x then return 'nan' end
  local s = ('%.15g'):format(x) -- the shortest that reads back as x, as Python's repr
  if tonumber(s) ~= x then s = ('%.16g'):format(x) end
  if tonumber(s) ~= x then s = ('%.17g'):format(x) end
  local mant, exp = s:match('^(-?[%d.]+)e([-+]%d+)$')
  if mant then
    local e = tonumber(exp)
    if e >= -4 and e < 16 then s = ('%.' .. math.max(0, -e + 10) .. 'f'):format(x):gsub('0+$', ''):gsub('%.$', '.0')
    else s = ('%se%s%02d'):format(mant, e < 0 and '-' or '+', math.abs(e)) end
  elseif not s:find('[.]') then
    s = s .. '.0'
  end
  return s
end
M.pyfloat = pyfloat
local function pybool(b) return b and 'True' or 'False' end

-- options: the table after the positional arguments (if any)
local function factory(opts)
  if type(opts) ~= 'table' or (opts.device == nil and opts.dtype == nil) then return nil end
  return { device = opts.device, dtype = opts.dtype }
end

local function empty(sizes, fk)
  if fk then return torch.empty(sizes, fk) end
  return torch.empty(sizes)
end
local function filled(fn, sizes, fk)
  if fk then return fn(sizes, fk) end
  return fn(sizes)
end

-- nn.utils.skip_init sets this while it constructs
M.skipping = 0
local function init_parameters(self)
  if M.skipping == 0 then self:reset_parameters() end
end

------------------------------------------------------------------------------ Identity
local Identity = class.class('nn.Identity', Module)
M.Identity = Identity
function Identity:__init() Module.__init(self) end
function Identity:forward(x) return x end
declare_forward(Identity, { 'input' })

------------------------------------------------------------------------------ Linear
local Linear = class.class('nn.Linear', Module)
M.Linear = Linear

-- nn.Linear(in_features, out_features, bias=true, {device=, dtype=}); bias may be an option too
function Linear:__init(in_features, out_features, bias, opts)
  Module.__init(self)
  if type(bias) == 'table' then opts, bias = bias, bias.bias end
  if bias == nil then bias = true end
  check_int('nn.Linear', 'in_features', in_features, 0)
  check_int('nn.Linear', 'out_features', out_features, 0)
  local fk = factory(opts)
  self.in_features = in_features
  self.out_features = out_features
  self.weight = Parameter(empty({ out_features, in_features }, fk))
  if bias then
    self.bias = Parameter(empty({ out_features }, fk))
  else
    self:register_parameter('bias', nil)
  end
  init_parameters(self)
end

function Linear:reset_parameters()
  -- PyTorch's: kaiming_uniform_(weight, a=sqrt(5)), then bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in))
  nn.init.kaiming_uniform_(self.weight, { a = math.sqrt(5) })
  local b = self.bias
  if b then
    local fan_in = nn.init.calculate_fan_in_and_fan_out(self.weight)
    local bound = fan_in > 0 and 1 / math.sqrt(fan_in) or 0
    nn.init.uniform_(b, -bound, bound)
  end
end

function Linear:forward(input)
  return nn.functional.linear(input, self.weight, self.bias)
end
declare_forward(Linear, { 'input' })

function Linear:extra_repr()
  return ('in_features=%d, out_features=%d, bias=%s'):format(self.in_features, self.out_features,
    pybool(self.bias ~= nil))
end

------------------------------------------------------------------------------ activations
local function inplace_arg(inplace)
  if type(inplace) == 'table' then inplace = inplace.inplace end
  return inplace and true or false
end

local ReLU = class.class('nn.ReLU', Module)
M.ReLU = ReLU
function ReLU:__init(inplace)
  Module.__init(self)
  self.inplace = inplace_arg(inplace)
end
function ReLU:forward(x) return nn.functional.relu(x, self.inplace) end
declare_forward(ReLU, { 'input' })
function ReLU:extra_repr() return self.inplace and 'inplace=True' or '' end

local LeakyReLU = class.class('nn.LeakyReLU', Module)
M.LeakyReLU = LeakyReLU
-- nn.LeakyReLU(negative_slope=0.01, inplace=false) or nn.LeakyReLU{negative_slope=, inplace=}
function LeakyReLU:__init(negative_slope, inplace)
  Module.__init(self)
  if type(negative_slope) == 'table' then
    inplace = negative_slope.inplace
    negative_slope = negative_slope.negative_slope
  end
  self.negative_slope = negative_slope or 0.01
  self.inplace = inplace_arg(inplace)
end
function LeakyReLU:forward(x) return nn.functional.leaky_relu(x, self.negative_slope, self.inplace) end
declare_forward(LeakyReLU, { 'input' })
function LeakyReLU:extra_repr()
  return 'negative_slope=' .. pyfloat(self.negative_slope) .. (self.inplace and ', inplace=True' or '')
end

-- parameterless elementwise activations
local function simple(name, fn)
  local cls = class.class('nn.' .. name, Module)
  M[name] = cls
  function cls:__init() Module.__init(self) end
  local op = 'nn.' .. name
  function cls:forward(x) Mod.need_input(op, x) return fn(x) end
  declare_forward(cls, { 'input' })
  return cls
end
simple('Sigmoid', function(x) return x:sigmoid() end)
simple('Tanh', function(x) return x:tanh() end)

-- nn.Softmax(dim) / nn.LogSoftmax(dim), or {dim=}: dim an integer (1-based, negative from the
-- end) or nil for PyTorch's deprecated implicit choice
local function softmax_class(name, fn)
  local cls = class.class('nn.' .. name, Module)
  M[name] = cls
  function cls:__init(dim)
    Module.__init(self)
    if type(dim) == 'table' then dim = dim.dim end
    if dim ~= nil then check_int('nn.' .. name, 'dim', dim) end
    self.dim = dim
  end
  function cls:forward(x) return nn.functional[fn](x, self.dim) end
  declare_forward(cls, { 'input' })
  function cls:extra_repr() return 'dim=' .. (self.dim == nil and 'None' or tostring(self.dim)) end
  return cls
end
softmax_class('Softmax', 'softmax')
softmax_class('LogSoftmax', 'log_softmax')

------------------------------------------------------------------------------ batch norm
local BatchNorm = class.class('nn._BatchNorm', Module)
M._BatchNorm = BatchNorm

-- nn.BatchNorm2d(num_features, eps=1e-5, momentum=0.1, affine=true, track_running_stats=true,
-- {device=, dtype=}); every argument after num_features may be given as an option instead
function BatchNorm:__init(num_features, eps, momentum, affine, track_running_stats, opts)
  Module.__init(self)
  local args = { eps, momentum, affine, track_running_stats, opts }
  for i = 1, 5 do
    if type(args[i]) == 'table' then
      opts = args[i]
      for j = i, 4 do args[j] = nil end
      break
    end
  end
  eps, momentum, affine, track_running_stats = args[1], args[2], args[3], args[4]
  if type(opts) == 'table' then
    if opts.eps ~= nil then eps = opts.eps end
    if opts.momentum ~= nil then momentum = opts.momentum end
    if opts.affine ~= nil then affine = opts.affine end
    if opts.track_running_stats ~= nil then track_running_stats = opts.track_running_stats end
  end
  check_int(class.typename(self), 'num_features', num_features, 0)
  local fk = factory(opts)
  self.num_features = num_features
  self.eps = eps or 1e-5
  -- momentum: a number, or false for a cumulative moving average (PyTorch's None)
  if momentum == nil then momentum = 0.1 end
  self.momentum = momentum
  if affine == nil then affine = true end
  if track_running_stats == nil then track_running_stats = true end
  self.affine = affine and true or false
  self.track_running_stats = track_running_stats and true or false
  if self.affine then
    self.weight = Parameter(empty({ num_features }, fk))
    self.bias = Parameter(empty({ num_features }, fk))
  else
    self:register_parameter('weight', nil)
    self:register_parameter('bias', nil)
  end
  if self.track_running_stats then
    self:register_buffer('running_mean', filled(torch.zeros, { num_features }, fk))
    self:register_buffer('running_var', filled(torch.ones, { num_features }, fk))
    self:register_buffer('num_batches_tracked', torch.tensor(0, { dtype = torch.int64 }))
  else
    self:register_buffer('running_mean', nil)
    self:register_buffer('running_var', nil)
    self:register_buffer('num_batches_tracked', nil)
  end
  init_parameters(self)
end

function BatchNorm:reset_running_stats()
  if self.track_running_stats then
    torch.no_grad(function()
      self.running_mean:zero_()
      self.running_var:fill_(1)
      self.num_batches_tracked:zero_()
    end)
  end
end

function BatchNorm:reset_parameters()
  self:reset_running_stats()
  if self.affine then
    nn.init.ones_(self.weight)
    nn.init.zeros_(self.bias)
  end
end

function BatchNorm:_check_input_dim(x)
  Mod.need_input(class.typename(self) or 'nn.BatchNorm', x)
  local want = self._dims
  if want then
    local ok = false
    for _, d in ipairs(want) do if x:dim() == d then ok = true end end
    if not ok then
      local words = {}
      for i, d in ipairs(want) do words[i] = d .. 'D' end
      fail(self:_get_name(), ('expected %s input (got %dD input)'):format(table.concat(words, ' or '), x:dim()))
    end
  end
end

function BatchNorm:forward(input)
  self:_check_input_dim(input)
  local eaf = 0.0
  if self.training and self.track_running_stats then
    local nbt = self.num_batches_tracked
    if nbt ~= nil then
      torch.no_grad(function() nbt:add_(1) end)
      if self.momentum == false then eaf = 1.0 / nbt:item() else eaf = self.momentum end
    end
  elseif self.momentum ~= false then
    eaf = self.momentum
  end
  local bn_training = self.training or (self.running_mean == nil and self.running_var == nil)
  local use_stats = not self.training or self.track_running_stats
  return nn.functional.batch_norm(input, use_stats and self.running_mean or nil, use_stats and self.running_var or nil,
    self.weight, self.bias, bn_training, eaf, self.eps)
end
declare_forward(BatchNorm, { 'input' })

function BatchNorm:extra_repr()
  local mom = self.momentum == false and 'None' or pyfloat(self.momentum)
  return ('%d, eps=%s, momentum=%s, affine=%s, track_running_stats=%s'):format(self.num_features, pyfloat(self.eps),
    mom, pybool(self.affine), pybool(self.track_running_stats))
end

local function batchnorm(name, dims)
  local cls = class.class('nn.' .. name, BatchNorm)
  cls._dims = dims
  M[name] = cls
  return cls
end
batchnorm('BatchNorm1d', { 2, 3 })
batchnorm('BatchNorm2d', { 4 })
batchnorm('BatchNorm3d', { 5 })

-- the batch-norm computation, one node named as PyTorch's (NativeBatchNormBackward0): stats holds
-- the running mean and variance (updated here in training mode, read in eval mode)
local function bn_dims(x)
  local nd, c = x:dim(), x:size(2)
  local shape, dims = { 1, c }, { 1 }
  for d = 3, nd do shape[#shape + 1] = 1 dims[#dims + 1] = d end
  return shape, dims, c
end
local batch_norm = require('moontorch.ops.compose').node('NativeBatchNormBackward0',
  function(input, weight, bias, stats, training, momentum, eps)
    local running_mean, running_var = stats[1], stats[2]
    local shape, dims, c = bn_dims(input)
    local mean, var
    if training then
      local n = input:numel() / c
      var, mean = input:var_mean(dims, { correction = 0, keepdim = true })
      if running_mean ~= nil or running_var ~= nil then
        torch.no_grad(function()
          if running_mean ~= nil then
            running_mean:mul_(1 - momentum):add_(mean:detach():reshape(c):to(running_mean.dtype) * momentum)
          end
          if running_var ~= nil then
            running_var:mul_(1 - momentum):add_(var:detach():reshape(c):to(running_var.dtype) * (momentum * n / (n - 1)))
          end
        end)
      end
    else
      mean, var = running_mean:reshape(shape), running_var:reshape(shape)
    end
    local out = (input - mean) * (var + eps):rsqrt()
    if weight ~= nil then out = out * weight:reshape(shape) end
    if bias ~= nil then out = out + bias:reshape(shape) end
    return out
  end,
  -- training: the gradient through the batch's mean and variance too; eval: the running ones are constants
  function(g, input, weight, bias, stats, training, momentum, eps)
    local shape, dims, c = bn_dims(input)
    local mean, var
    if training then
      var, mean = input:var_mean(dims, { correction = 0, keepdim = true })
    else
      mean, var = stats[1]:reshape(shape), stats[2]:reshape(shape)
    end
    local invstd = (var + eps):rsqrt()
    local xhat = (input - mean) * invstd
    local gxhat = weight ~= nil and g * weight:reshape(shape) or g
    local gx
    if training then
      gx = (gxhat - gxhat:mean(dims, { keepdim = true }) - xhat * (gxhat * xhat):mean(dims, { keepdim = true })) * invstd
    else
      gx = gxhat * invstd
    end
    local gw = weight ~= nil and (g * xhat):sum(dims):reshape(weight:size()) or nil
    local gb = bias ~= nil and g:sum(dims):reshape(bias:size()) or nil
    return gx, gw, gb
  end)

-- F.batch_norm(input, running_mean, running_var, weight, bias, training=false, momentum=0.1, eps=1e-5)
-- over dim 2 (channels) of an (N, C, ...) input; in training the batch statistics normalise and
-- update the running ones (unbiased variance), otherwise the running ones normalise
-- (weight and what follows by position or by name in a trailing options table, in any place after
-- running_var: F.batch_norm(x, rm, rv, {training = true}))
local bn_args
function M.batch_norm(input, running_mean, running_var, ...)
  bn_args = bn_args or require('moontorch.nn.optargs').parser { prefix = 'nn.functional.',
    is_opts = function(v) return type(v) == 'table' and not torch.is_tensor(v) and getmetatable(v) == nil end }
  local v = bn_args('batch_norm', { 'weight', 'bias', 'training', 'momentum', 'eps' }, ...)
  local weight, bias, training, momentum, eps = v.weight, v.bias, v.training, v.momentum, v.eps
  for _, p in ipairs({ { running_mean, 'running_mean' }, { running_var, 'running_var' }, { weight, 'weight' }, { bias, 'bias' } }) do
    if p[1] ~= nil and not torch.is_tensor(p[1]) then
      fail('nn.functional.batch_norm', ('%s must be a tensor or nil, got %s'):format(p[2], type(p[1])))
    end
  end
  if not torch.is_tensor(input) then
    fail('nn.functional.batch_norm', ('input must be a tensor (got %s)'):format(type(input)))
  end
  momentum = momentum or 0.1
  eps = eps or 1e-5
  local nd = input:dim()
  if nd < 2 then fail('nn.functional.batch_norm', ('expected at least 2D input (got %dD input)'):format(nd)) end
  -- one value per channel in each (PyTorch's check and words)
  local c = input:size(2)
  for _, p in ipairs({ { running_mean, 'running_mean' }, { running_var, 'running_var' }, { weight, 'weight' }, { bias, 'bias' } }) do
    if p[1] ~= nil and p[1]:numel() ~= c then
      fail('nn.functional.batch_norm', ('%s should contain %d elements not %d'):format(p[2], c, p[1]:numel()))
    end
  end
  if training then
    if input:numel() / input:size(2) <= 1 then
      fail('nn.functional.batch_norm', ('Expected more than 1 value per channel when training, got input size ' ..
        'torch.Size([%s])'):format(table.concat(input:size(), ', ')))
    end
  elseif running_mean == nil or running_var == nil then
    fail('nn.functional.batch_norm', 'running_mean and running_var are needed when not training')
  end
  return batch_norm(input, weight, bias, { running_mean, running_var }, training and true or false, momentum, eps)
end

function M.install(nn_)
  nn = nn_
  class.export(M, nn)
end

return M
