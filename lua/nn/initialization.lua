-- nn.init: PyTorch's torch.nn.init. Every function fills its tensor in place without recording
-- autograd and returns it, and draws exactly the random numbers PyTorch's draws (same calls of
-- uniform_ / normal_ / randperm on the same generator), so that after torch.manual_seed(s) the
-- same initialisation gives the same values.
-- Optional arguments come positionally or in a trailing options table:
--   nn.init.kaiming_uniform_(w, math.sqrt(5)) == nn.init.kaiming_uniform_(w, {a = math.sqrt(5)})
local ffi = require 'ffi'
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local C = core.C
local fail = core.fail
local is_tensor = T.is_tensor
local type, math, tostring, pcall, error = type, math, tostring, pcall, error

pcall(ffi.cdef, 'double erf(double x);')

local init = {}

-- run fn(...) with grad mode off, restoring the mode even when fn fails
local function nograd(fn, ...)
  local prev = C.mt_is_grad_enabled()
  C.mt_set_grad_enabled(0)
  local ok, r = pcall(fn, ...)
  C.mt_set_grad_enabled(prev)
  if not ok then error(r, 0) end
  return r
end

local function need_tensor(fn, t)
  if not is_tensor(t) then fail('nn.init.' .. fn, ('expected a tensor, got %s'):format(type(t))) end
end

-- the options table (if the argument at `i` is one) or the positional values
local function args(opts, names, ...)
  local out = { ... }
  if type(opts) == 'table' and not is_tensor(opts) then
    for i, k in ipairs(names) do
      if opts[k] ~= nil then out[i] = opts[k] end
    end
  end
  return out
end

------------------------------------------------------------------------------ gains and fans
local linear_fns = { linear = true, conv1d = true, conv2d = true, conv3d = true, conv_transpose1d = true,
  conv_transpose2d = true, conv_transpose3d = true }

-- calculate_gain(nonlinearity, param)
function init.calculate_gain(nonlinearity, param)
  if linear_fns[nonlinearity] or nonlinearity == 'sigmoid' then return 1 end
  if nonlinearity == 'tanh' then return 5.0 / 3 end
  if nonlinearity == 'relu' then return math.sqrt(2.0) end
  if nonlinearity == 'leaky_relu' then
    local slope
    if param == nil then
      slope = 0.01
    elseif type(param) == 'number' then
      slope = param
    else
      fail('nn.init.calculate_gain', ('negative_slope %s not a valid number'):format(tostring(param)))
    end
    return math.sqrt(2.0 / (1 + slope * slope))
  end
  if nonlinearity == 'selu' then return 3.0 / 4 end
  fail('nn.init.calculate_gain', ('Unsupported nonlinearity %s'):format(tostring(nonlinearity)))
end

-- calculate_fan_in_and_fan_out(t) -> fan_in, fan_out
function init.calculate_fan_in_and_fan_out(t)
  need_tensor('calculate_fan_in_and_fan_out', t)
  local nd = t:dim()
  if nd < 2 then
    fail('nn.init', 'Fan in and fan out can not be computed for tensor with fewer than 2 dimensions')
  end
  local rf = 1
  for d = 3, nd do rf = rf * t:size(d) end
  return t:size(2) * rf, t:size(1) * rf
end
init._calculate_fan_in_and_fan_out = init.calculate_fan_in_and_fan_out

local function correct_fan(t, mode)
  mode = tostring(mode):lower()
  if mode ~= 'fan_in' and mode ~= 'fan_out' then
    fail('nn.init', ('Mode %s not supported, please use one of fan_in, fan_out'):format(mode))
  end
  local fan_in, fan_out = init.calculate_fan_in_and_fan_out(t)
  return mode == 'fan_in' and fan_in or fan_out
end

------------------------------------------------------------------------------ plain fills
function init.uniform_(t, a, b)
  need_tensor('uniform_', t)
  local v = args(a, { 'a', 'b' }, a, b)
  local lo, hi = v[1], v[2]
  if type(lo) ~= 'number' then lo = 0 end
  if hi == nil then hi = 1 end
  return nograd(function() return t:uniform_(lo, hi) end)
end

function init.normal_(t, mean, std)
  need_tensor('normal_', t)
  local v = args(mean, { 'mean', 'std' }, mean, std)
  local m, s = v[1], v[2]
  if type(m) ~= 'number' then m = 0 end
  if s == nil then s = 1 end
  return nograd(function() return t:normal_(m, s) end)
end

function init.constant_(t, val)
  need_tensor('constant_', t)
  if type(val) == 'table' and not is_tensor(val) then val = val.val end
  if type(val) ~= 'number' and type(val) ~= 'boolean' then fail('nn.init.constant_', 'val must be a number') end
  return nograd(function() return t:fill_(val) end)
end
function init.ones_(t) need_tensor('ones_', t) return nograd(function() return t:fill_(1) end) end
function init.zeros_(t) need_tensor('zeros_', t) return nograd(function() return t:zero_() end) end

function init.eye_(t)
  need_tensor('eye_', t)
  if t:dim() ~= 2 then fail('nn.init.eye_', 'Only tensors with 2 dimensions are supported') end
  return nograd(function()
    t:copy_(torch.eye(t:size(1), t:size(2), { dtype = t.dtype }))
    return t
  end)
end

-- dirac_(t, groups=1): identity-preserving convolution weights
function init.dirac_(t, groups)
  need_tensor('dirac_', t)
  groups = (type(groups) == 'table' and groups.groups) or (type(groups) == 'number' and groups) or 1
  local nd = t:dim()
  if nd < 3 or nd > 5 then fail('nn.init.dirac_', 'Only tensors with 3, 4, or 5 dimensions are supported') end
  local sizes = t:size()
  if sizes[1] % groups ~= 0 then fail('nn.init.dirac_', 'dim 0 must be divisible by groups') end
  local out_per = sizes[1] / groups
  local min_dim = math.min(out_per, sizes[2])
  return nograd(function()
    t:zero_()
    for g = 0, groups - 1 do
      for d = 0, min_dim - 1 do
        local v = t:select(1, g * out_per + d + 1):select(1, d + 1)
        for k = 3, nd do v = v:select(1, math.floor(sizes[k] / 2) + 1) end
        v:fill_(1)
      end
    end
    return t
  end)
end

------------------------------------------------------------------------------ scaled draws
function init.xavier_uniform_(t, gain)
  need_tensor('xavier_uniform_', t)
  gain = args(gain, { 'gain' }, gain)[1] or 1
  local fan_in, fan_out = init.calculate_fan_in_and_fan_out(t)
  local std = gain * math.sqrt(2.0 / (fan_in + fan_out))
  local a = math.sqrt(3.0) * std
  return nograd(function() return t:uniform_(-a, a) end)
end

function init.xavier_normal_(t, gain)
  need_tensor('xavier_normal_', t)
  gain = args(gain, { 'gain' }, gain)[1] or 1
  local fan_in, fan_out = init.calculate_fan_in_and_fan_out(t)
  local std = gain * math.sqrt(2.0 / (fan_in + fan_out))
  return nograd(function() return t:normal_(0, std) end)
end

local function kaiming_std(fn, t, a, mode, nonlinearity)
  local v = args(a, { 'a', 'mode', 'nonlinearity' }, a, mode, nonlinearity)
  a, mode, nonlinearity = v[1], v[2], v[3]
  if type(a) ~= 'number' then a = 0 end
  mode = mode or 'fan_in'
  nonlinearity = nonlinearity or 'leaky_relu'
  local fan = correct_fan(t, mode)
  local gain = init.calculate_gain(nonlinearity, a)
  return gain / math.sqrt(fan)
end

local function has_zero_size(t)
  for d = 1, t:dim() do if t:size(d) == 0 then return true end end
  return false
end

function init.kaiming_uniform_(t, a, mode, nonlinearity)
  need_tensor('kaiming_uniform_', t)
  if has_zero_size(t) then return t end -- PyTorch warns and leaves it
  local std = kaiming_std('kaiming_uniform_', t, a, mode, nonlinearity)
  local bound = math.sqrt(3.0) * std
  return nograd(function() return t:uniform_(-bound, bound) end)
end

function init.kaiming_normal_(t, a, mode, nonlinearity)
  need_tensor('kaiming_normal_', t)
  if has_zero_size(t) then return t end
  local std = kaiming_std('kaiming_normal_', t, a, mode, nonlinearity)
  return nograd(function() return t:normal_(0, std) end)
end

-- erfinv in double precision: Giles' single-precision approximation refined by Newton steps
local function erfinv(y)
  if y <= -1 then return y == -1 and -math.huge or 0 / 0 end
  if y >= 1 then return y == 1 and math.huge or 0 / 0 end
  local w = -math.log((1 - y) * (1 + y))
  local x
  if w < 5 then
    w = w - 2.5
    local p = 2.81022636e-08
    p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w
    p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w
    p = 0.246640727 + p * w; p = 1.50140941 + p * w
    x = p * y
  else
    w = math.sqrt(w) - 3
    local p = -0.000200214257
    p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w
    p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w
    p = 1.00167406 + p * w; p = 2.83297682 + p * w
    x = p * y
  end
  local k = 2 / math.sqrt(math.pi)
  for _ = 1, 3 do
    local e = ffi.C.erf(x) - y
    x = x - e / (k * math.exp(-x * x))
  end
  return x
end
init._erfinv = erfinv

-- trunc_normal_(t, mean=0, std=1, a=-2, b=2): a normal truncated to [a, b] (inverse-CDF draw)
function init.trunc_normal_(t, mean, std, a, b)
  need_tensor('trunc_normal_', t)
  local v = args(mean, { 'mean', 'std', 'a', 'b' }, mean, std, a, b)
  mean, std, a, b = v[1], v[2], v[3], v[4]
  if type(mean) ~= 'number' then mean = 0 end
  std, a, b = std or 1, a or -2, b or 2
  local function cdf(x) return (1 + ffi.C.erf(x / math.sqrt(2))) / 2 end
  local l, u = cdf((a - mean) / std), cdf((b - mean) / std)
  return nograd(function()
    t:uniform_(2 * l - 1, 2 * u - 1)
    -- erfinv in double over the drawn values, then scale, shift and clamp as PyTorch does
    local d = t:to(torch.float64):contiguous()
    local n = d:numel()
    local p = ffi.cast('double *', d:data_ptr())
    for i = 0, n - 1 do p[i] = erfinv(p[i]) end
    t:copy_(d)
    t:mul_(std * math.sqrt(2.0))
    t:add_(mean)
    t:clamp_(a, b)
    return t
  end)
end

-- Householder QR of an m x n matrix (m >= n, row-major Lua arrays of doubles): Q (m x n), diag(R)
local function qr(A, m, n)
  local R = {}
  for i = 1, m do
    R[i] = {}
    for j = 1, n do R[i][j] = A[i][j] end
  end
  local vs = {}
  for k = 1, n do
    local norm = 0
    for i = k, m do norm = norm + R[i][k] * R[i][k] end
    norm = math.sqrt(norm)
    local v = {}
    for i = k, m do v[i] = R[i][k] end
    local alpha = R[k][k] >= 0 and -norm or norm
    v[k] = v[k] - alpha
    local vn = 0
    for i = k, m do vn = vn + v[i] * v[i] end
    if vn > 0 then
      for j = k, n do
        local s = 0
        for i = k, m do s = s + v[i] * R[i][j] end
        s = 2 * s / vn
        for i = k, m do R[i][j] = R[i][j] - s * v[i] end
      end
    end
    vs[k] = { v, vn }
  end
  -- Q = H1 H2 ... Hn applied to the first n columns of the identity
  local Q = {}
  for i = 1, m do
    Q[i] = {}
    for j = 1, n do Q[i][j] = i == j and 1 or 0 end
  end
  for k = n, 1, -1 do
    local v, vn = vs[k][1], vs[k][2]
    if vn > 0 then
      for j = 1, n do
        local s = 0
        for i = k, m do s = s + v[i] * Q[i][j] end
        s = 2 * s / vn
        for i = k, m do Q[i][j] = Q[i][j] - s * v[i] end
      end
    end
  end
  local d = {}
  for k = 1, n do d[k] = R[k][k] end
  return Q, d
end

-- orthogonal_(t, gain=1): a (semi-)orthogonal matrix from the QR of a normal draw
function init.orthogonal_(t, gain)
  need_tensor('orthogonal_', t)
  gain = args(gain, { 'gain' }, gain)[1] or 1
  if t:dim() < 2 then fail('nn.init.orthogonal_', 'Only tensors with 2 or more dimensions are supported') end
  if t:numel() == 0 then return t end
  local rows = t:size(1)
  local cols = t:numel() / rows
  return nograd(function()
    local flat = torch.empty(rows, cols, { dtype = t.dtype }):normal_(0, 1)
    local A = flat:to(torch.float64)
    local m, n = rows, cols
    if rows < cols then A, m, n = A:t(), cols, rows end
    local Q, d = qr(A:tolist(), m, n)
    for i = 1, m do
      for j = 1, n do
        if d[j] < 0 then Q[i][j] = -Q[i][j] elseif d[j] == 0 then Q[i][j] = 0 end
      end
    end
    local q = torch.tensor(Q, { dtype = torch.float64 })
    if rows < cols then q = q:t() end
    t:copy_(q:reshape(t:size()))
    t:mul_(gain)
    return t
  end)
end

-- sparse_(t, sparsity, std=0.01): N(0, std) with a fraction `sparsity` of each column zeroed
function init.sparse_(t, sparsity, std)
  need_tensor('sparse_', t)
  local v = args(sparsity, { 'sparsity', 'std' }, sparsity, std)
  sparsity, std = v[1], v[2] or 0.01
  if t:dim() ~= 2 then fail('nn.init.sparse_', 'Only tensors with 2 dimensions are supported') end
  if type(sparsity) ~= 'number' then fail('nn.init.sparse_', 'sparsity must be a number') end
  local rows, cols = t:size(1), t:size(2)
  local num_zeros = math.ceil(sparsity * rows)
  return nograd(function()
    t:normal_(0, std)
    for c = 1, cols do
      local perm = torch.randperm(rows):tolist()
      for k = 1, num_zeros do t:select(1, perm[k]):select(1, c):fill_(0) end
    end
    return t
  end)
end

-- old names without the trailing underscore (deprecated in PyTorch too)
for _, name in ipairs { 'uniform', 'normal', 'constant', 'eye', 'dirac', 'xavier_uniform', 'xavier_normal',
  'kaiming_uniform', 'kaiming_normal', 'orthogonal', 'sparse' } do
  init[name] = init[name .. '_']
end

return init
