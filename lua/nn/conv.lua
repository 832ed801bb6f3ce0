-- Convolution modules (issue 12, conv part): Conv1d/2d/3d, ConvTranspose1d/2d/3d, Unfold, Fold.
-- PyTorch's constructor arguments, positionally or in a trailing options table with PyTorch's
-- keyword names, plus {device=, dtype=}:
--   nn.Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
--             bias=true, padding_mode='zeros')
--   nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=1, padding=0,
--             output_padding=0, groups=1, bias=true, dilation=1, padding_mode='zeros')
--   nn.Unfold(kernel_size, dilation=1, padding=0, stride=1)
--   nn.Fold(output_size, kernel_size, dilation=1, padding=0, stride=1)
-- Parameters `weight` and `bias` (PyTorch's state_dict keys), initialised drawing PyTorch's numbers
-- (kaiming_uniform_ with a = sqrt(5), then the bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in))).
-- padding_mode reflect, replicate and circular pad with F.pad first; ConvTranspose's forward takes
-- an optional output_size. Modules print as PyTorch prints them.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local Mod = require 'moontorch.nn.Module'
local T = require 'moontorch.tensor'

local fail = core.fail
local Module, Parameter = Mod.Module, Mod.Parameter
local check_int, declare_forward = Mod.check_int, Mod.declare_forward
local is_tensor = T.is_tensor
local type, tostring, select, pairs, ipairs = type, tostring, select, pairs, ipairs

local M = {}
local nn -- set by install

-- PyTorch's tuple repr: (3,), (3, 3)
local function tuple(t)
  if type(t) ~= 'table' then return tostring(t) end
  if #t == 1 then return '(' .. tostring(t[1]) .. ',)' end
  local parts = {}
  for i = 1, #t do parts[i] = tostring(t[i]) end
  return '(' .. table.concat(parts, ', ') .. ')'
end

-- _single / _pair / _triple: a number repeated, a table checked
local function ntuple(name, what, v, n)
  if type(v) == 'number' then
    check_int(name, what, v)
    local t = {}
    for i = 1, n do t[i] = v end
    return t
  end
  if type(v) ~= 'table' or is_tensor(v) or #v ~= n then
    fail(name, ('%s must be an integer or a table of %d integers (got %s)'):format(what, n,
      require('moontorch.argcheck').show(v)))
  end
  local t = {}
  for i = 1, n do t[i] = check_int(name, what, v[i]) end
  return t
end

-- the arguments after the required ones: positional in `names`' order, then an options table
local function options(name, names, nreq, ...)
  local n = select('#', ...)
  local v = { ... }
  while n > 0 and v[n] == nil do n = n - 1 end
  local opts = v[n]
  local fk
  if n > nreq and type(opts) == 'table' and not is_tensor(opts) and opts[1] == nil then
    v[n] = nil
    n = n - 1
    for k, val in pairs(opts) do
      if k == 'device' or k == 'dtype' then
        fk = fk or {}
        fk[k] = val
      else
        local found = false
        for i = 1, #names do
          if names[i] == k then
            if i <= n and v[i] ~= nil then fail(name, ("got multiple values for argument '%s'"):format(k)) end
            v[i], found = val, true
            break
          end
        end
        if not found then fail(name, ("__init__() got an unexpected keyword argument '%s'"):format(tostring(k))) end
      end
    end
  end
  if n > #names then fail(name, ('__init__() takes at most %d arguments, got %d'):format(#names, n)) end
  return v, fk
end

local function empty(sizes, fk)
  if fk then return torch.empty(sizes, fk) end
  return torch.empty(sizes)
end

local MODES = { zeros = true, reflect = true, replicate = true, circular = true }

------------------------------------------------------------------------------ _ConvNd
local ConvNd = class.class('nn._ConvNd', Module)
M._ConvNd = ConvNd

-- the shared constructor: n spatial dims; transposed or not; v the arguments by name
local function conv_init(self, name, n, transposed, v, fk)
  Module.__init(self)
  local in_channels, out_channels = v.in_channels, v.out_channels
  check_int(name, 'in_channels', in_channels, 0)
  check_int(name, 'out_channels', out_channels, 0)
  if v.kernel_size == nil then fail(name, "__init__() missing 1 required positional argument: 'kernel_size'") end
  local groups = v.groups == nil and 1 or v.groups
  check_int(name, 'groups', groups)
  if groups <= 0 then fail(name, 'groups must be a positive integer') end
  if in_channels % groups ~= 0 then fail(name, 'in_channels must be divisible by groups') end
  if out_channels % groups ~= 0 then fail(name, 'out_channels must be divisible by groups') end
  local kernel_size = ntuple(name, 'kernel_size', v.kernel_size, n)
  local stride = ntuple(name, 'stride', v.stride == nil and 1 or v.stride, n)
  local dilation = ntuple(name, 'dilation', v.dilation == nil and 1 or v.dilation, n)
  local padding = v.padding == nil and 0 or v.padding
  if type(padding) == 'string' then
    if padding ~= 'same' and padding ~= 'valid' then
      fail(name, ("Invalid padding string '%s', should be one of {'valid', 'same'}"):format(padding))
    end
    if padding == 'same' then
      for i = 1, n do
        if stride[i] ~= 1 then fail(name, "padding='same' is not supported for strided convolutions") end
      end
    end
  else
    padding = ntuple(name, 'padding', padding, n)
  end
  local padding_mode = v.padding_mode == nil and 'zeros' or v.padding_mode
  if not MODES[padding_mode] then
    fail(name, ("padding_mode must be one of {'replicate', 'circular', 'reflect', 'zeros'}, but got padding_mode='%s'")
      :format(tostring(padding_mode)))
  end
  if transposed and padding_mode ~= 'zeros' then
    fail(name, ('Only "zeros" padding mode is supported for %s'):format(name:gsub('^nn%.', '')))
  end
  local bias = v.bias
  if bias == nil then bias = true end
  self.in_channels, self.out_channels = in_channels, out_channels
  self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
  self.transposed = transposed
  self.output_padding = ntuple(name, 'output_padding', v.output_padding == nil and 0 or v.output_padding, n)
  self.groups, self.padding_mode = groups, padding_mode
  -- what F.pad takes for the padding modes: the last dim first, each side
  local rev = {}
  for i = 1, n do
    local d = n - i + 1
    local left, right
    if padding == 'valid' then left, right = 0, 0
    elseif padding == 'same' then
      local total = dilation[d] * (kernel_size[d] - 1)
      left = math.floor(total / 2)
      right = total - left
    else left, right = padding[d], padding[d] end
    rev[2 * i - 1], rev[2 * i] = left, right
  end
  self._reversed_padding_repeated_twice = rev
  local wsize
  if transposed then wsize = { in_channels, out_channels / groups }
  else wsize = { out_channels, in_channels / groups } end
  for i = 1, n do wsize[#wsize + 1] = kernel_size[i] end
  self.weight = Parameter(empty(wsize, fk))
  if bias then
    self.bias = Parameter(empty({ out_channels }, fk))
  else
    self:register_parameter('bias', nil)
  end
  if M.layers.skipping == 0 then self:reset_parameters() end
end

function ConvNd:reset_parameters()
  nn.init.kaiming_uniform_(self.weight, { a = math.sqrt(5) })
  local b = self.bias
  if b then
    local fan_in = nn.init.calculate_fan_in_and_fan_out(self.weight)
    if fan_in ~= 0 then
      local bound = 1 / math.sqrt(fan_in)
      nn.init.uniform_(b, -bound, bound)
    end
  end
end

local function all_equal(t, x)
  for i = 1, #t do if t[i] ~= x then return false end end
  return true
end

function ConvNd:extra_repr()
  local s = ('%d, %d, kernel_size=%s, stride=%s'):format(self.in_channels, self.out_channels, tuple(self.kernel_size),
    tuple(self.stride))
  local p = self.padding
  if type(p) == 'string' then s = s .. ', padding=' .. p
  elseif not all_equal(p, 0) then s = s .. ', padding=' .. tuple(p) end
  if not all_equal(self.dilation, 1) then s = s .. ', dilation=' .. tuple(self.dilation) end
  if not all_equal(self.output_padding, 0) then s = s .. ', output_padding=' .. tuple(self.output_padding) end
  if self.groups ~= 1 then s = s .. ', groups=' .. self.groups end
  if self.bias == nil then s = s .. ', bias=False' end
  if self.padding_mode ~= 'zeros' then s = s .. ', padding_mode=' .. self.padding_mode end
  return s
end

-- the input's dims checked here, so the message names the module
local LETTERS = { 'L', 'H, W', 'D, H, W' }
local function check_dims(self, n, input)
  if not is_tensor(input) then fail(self:_get_name(), 'expected a tensor as input, got ' .. core.typeof(input)) end
  local nd = input:dim()
  if nd ~= n + 1 and nd ~= n + 2 then
    local fn = (self.transposed and 'conv_transpose' or 'conv') .. n .. 'd'
    fail(self:_get_name(), ('Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: [%s]')
      :format(n + 1, n + 2, fn, table.concat(input:size(), ', ')))
  end
end
M.LETTERS = LETTERS

local CONV_NAMES = { 'in_channels', 'out_channels', 'kernel_size', 'stride', 'padding', 'dilation', 'groups', 'bias',
  'padding_mode' }
local CONVT_NAMES = { 'in_channels', 'out_channels', 'kernel_size', 'stride', 'padding', 'output_padding', 'groups',
  'bias', 'dilation', 'padding_mode' }

local function by_name(names, v)
  local r = {}
  for i = 1, #names do r[names[i]] = v[i] end
  return r
end

for n = 1, 3 do
  local cname = 'Conv' .. n .. 'd'
  local Conv = class.class('nn.' .. cname, ConvNd)
  M[cname] = Conv
  function Conv:__init(...)
    local v, fk = options('nn.' .. cname, CONV_NAMES, 3, ...)
    conv_init(self, 'nn.' .. cname, n, false, by_name(CONV_NAMES, v), fk)
  end
  local fconv = 'conv' .. n .. 'd'
  function Conv:forward(input)
    check_dims(self, n, input)
    local F = nn.functional
    if self.padding_mode ~= 'zeros' then
      local mode = self.padding_mode == 'zeros' and 'constant' or self.padding_mode
      return F[fconv](F.pad(input, self._reversed_padding_repeated_twice, mode), self.weight, self.bias, self.stride, 0,
        self.dilation, self.groups)
    end
    return F[fconv](input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
  end
  declare_forward(Conv, { 'input' })

  local tname = 'ConvTranspose' .. n .. 'd'
  local ConvT = class.class('nn.' .. tname, ConvNd)
  M[tname] = ConvT
  function ConvT:__init(...)
    local v, fk = options('nn.' .. tname, CONVT_NAMES, 3, ...)
    if type(v[5]) == 'string' then fail('nn.' .. tname, ('padding must be an integer or a table of %d integers (got %s)')
      :format(n, v[5])) end
    conv_init(self, 'nn.' .. tname, n, true, by_name(CONVT_NAMES, v), fk)
  end
  local ftconv = 'conv_transpose' .. n .. 'd'
  -- output_padding for a requested output_size (PyTorch's _output_padding)
  local function output_padding(self, input, output_size)
    if output_size == nil then return self.output_padding end
    if type(output_size) ~= 'table' or is_tensor(output_size) then
      fail(self:_get_name(), 'output_size must be a table of integers')
    end
    local k = #output_size
    if k == n + 2 or (k == n + 1 and input:dim() == n + 1) then
      local t = {}
      for i = k - n + 1, k do t[#t + 1] = output_size[i] end
      output_size = t
    end
    if #output_size ~= n then
      fail(self:_get_name(), ('ConvTranspose%dD: for %dD input, output_size must have %d or %d elements (got %d)')
        :format(n, input:dim(), n, n + 2, #output_size))
    end
    local res, mins, maxs = {}, {}, {}
    local sp0 = input:dim() - n
    for d = 1, n do
      local dim_size = (input:size(sp0 + d) - 1) * self.stride[d] - 2 * self.padding[d] +
        self.dilation[d] * (self.kernel_size[d] - 1) + 1
      mins[d] = dim_size
      maxs[d] = dim_size + self.stride[d] - 1
    end
    for d = 1, n do
      local size = output_size[d]
      if size < mins[d] or size > maxs[d] then
        fail(self:_get_name(), ('requested an output size of [%s], but valid sizes range from [%s] to [%s] (for an ' ..
          'input of [%s])'):format(table.concat(output_size, ', '), table.concat(mins, ', '), table.concat(maxs, ', '),
          table.concat(input:size(), ', ', sp0 + 1)))
      end
      res[d] = size - mins[d]
    end
    return res
  end
  function ConvT:forward(input, output_size)
    check_dims(self, n, input)
    if type(output_size) == 'table' and not is_tensor(output_size) and output_size[1] == nil then
      output_size = output_size.output_size -- as a keyword
    end
    local op = output_padding(self, input, output_size)
    return nn.functional[ftconv](input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
      self.dilation)
  end
  declare_forward(ConvT, { 'input', 'output_size' }, { nreq = 1, kwargs = { 'output_size' } })
end

------------------------------------------------------------------------------ Unfold, Fold
local function plain(v)
  if type(v) == 'table' then return tuple(v) end
  return tostring(v)
end

local Unfold = class.class('nn.Unfold', Module)
M.Unfold = Unfold
function Unfold:__init(...)
  Module.__init(self)
  local v = options('nn.Unfold', { 'kernel_size', 'dilation', 'padding', 'stride' }, 1, ...)
  if v[1] == nil then fail('nn.Unfold', "__init__() missing 1 required positional argument: 'kernel_size'") end
  self.kernel_size, self.dilation, self.padding, self.stride = v[1], v[2] or 1, v[3] or 0, v[4] or 1
end
function Unfold:forward(input)
  return nn.functional.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)
end
declare_forward(Unfold, { 'input' })
function Unfold:extra_repr()
  return ('kernel_size=%s, dilation=%s, padding=%s, stride=%s'):format(plain(self.kernel_size), plain(self.dilation),
    plain(self.padding), plain(self.stride))
end

local Fold = class.class('nn.Fold', Module)
M.Fold = Fold
function Fold:__init(...)
  Module.__init(self)
  local v = options('nn.Fold', { 'output_size', 'kernel_size', 'dilation', 'padding', 'stride' }, 2, ...)
  if v[1] == nil or v[2] == nil then
    fail('nn.Fold', "__init__() missing required positional arguments: 'output_size' and 'kernel_size'")
  end
  self.output_size, self.kernel_size = v[1], v[2]
  self.dilation, self.padding, self.stride = v[3] or 1, v[4] or 0, v[5] or 1
end
function Fold:forward(input)
  return nn.functional.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)
end
declare_forward(Fold, { 'input' })
function Fold:extra_repr()
  return ('output_size=%s, kernel_size=%s, dilation=%s, padding=%s, stride=%s'):format(plain(self.output_size),
    plain(self.kernel_size), plain(self.dilation), plain(self.padding), plain(self.stride))
end

function M.install(nn_)
  nn = nn_
  M.layers = require 'moontorch.nn.layers'
  class.export(M, nn, true)
end

return M
