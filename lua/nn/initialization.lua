-- nn.init: PyTorch's torch.nn.init. Every function fills its tensor in place without recording
-- autograd (grad mode is switched off around the fill and restored, also on error) and returns
-- the tensor. Each one draws exactly what PyTorch 1.13's draws: the same uniform_ / normal_ /
-- randperm calls on the same generator, in the same order, so after torch.manual_seed(s) the same
-- initialisation gives PyTorch's values.
-- Optional arguments come positionally or in a trailing options table (PyTorch's keywords):
--   nn.init.kaiming_uniform_(w, math.sqrt(5)) is nn.init.kaiming_uniform_(w, {a = math.sqrt(5)})
--   nn.init.sparse_(w, 0.1, {std = 0.02}),  nn.init.kaiming_normal_(w, {mode = 'fan_out', nonlinearity = 'relu'})
local ffi = require 'ffi'
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local C = core.C
local fail = core.fail
local is_tensor = T.is_tensor
local type, select, tostring, pcall, error, ipairs, pairs = type, select, tostring, pcall, error, ipairs, pairs
local sqrt, log, exp, floor, ceil, min, huge = math.sqrt, math.log, math.exp, math.floor, math.ceil, math.min, math.huge

local libc = require 'moontorch.libc'
local libm_erf, libm_erfc = libc.erf, libc.erfc
local doubles = ffi.typeof('double[?]')
local double_p = ffi.typeof('double *')
local bool_p = ffi.typeof('bool *')

local init = {}

------------------------------------------------------------------------------ helpers
-- fn(a, b, c, d, e) with grad mode off; the previous mode comes back even when fn fails
local function nograd(fn, a, b, c, d, e)
  local prev = C.mt_is_grad_enabled()
  if prev == 0 then return fn(a, b, c, d, e) end
  C.mt_set_grad_enabled(0)
  local ok, r = pcall(fn, a, b, c, d, e)
  C.mt_set_grad_enabled(prev)
  if not ok then error(r, 0) end
  return r
end

local function need_tensor(fn, t)
  if not is_tensor(t) then fail('nn.init.' .. fn, ('expected a tensor, got %s'):format(core.typeof(t))) end
end

-- the optional arguments after the tensor, as an array in the order of `names`: positional
-- values first, then a trailing options table (a plain Lua table, not a tensor) by name
local function args(fn, names, ...)
  local n = select('#', ...)
  local v = { ... }
  while n > 0 and v[n] == nil do n = n - 1 end
  local opts = v[n]
  if type(opts) == 'table' and not is_tensor(opts) then
    v[n] = nil
    n = n - 1
    if n > #names then fail('nn.init.' .. fn, ('takes at most %d optional arguments, got %d'):format(#names, n)) end
    for k, val in pairs(opts) do
      local found = false
      for i, name in ipairs(names) do
        if name == k then
          if i <= n and v[i] ~= nil then fail('nn.init.' .. fn, ("got multiple values for argument '%s'"):format(k)) end
          v[i], found = val, true
        end
      end
      if not found then fail('nn.init.' .. fn, ("got an unexpected option '%s'"):format(tostring(k))) end
    end
  elseif n > #names then
    fail('nn.init.' .. fn, ('takes at most %d optional arguments, got %d'):format(#names, n))
  end
  return v
end

local function number(fn, name, v, default)
  if v == nil then return default end
  if type(v) ~= 'number' then fail('nn.init.' .. fn, ('%s must be a number, got %s'):format(name, type(v))) end
  return v
end

-- PyTorch warns (UserWarning) where the call is legal but probably not what was meant; once each
local warned = {}
local function warn(msg)
  if warned[msg] then return end
  warned[msg] = true
  io.stderr:write('UserWarning: ', msg, '\n')
end

------------------------------------------------------------------------------ gains and fans
local unit_gain = { linear = true, conv1d = true, conv2d = true, conv3d = true, conv_transpose1d = true,
  conv_transpose2d = true, conv_transpose3d = true, sigmoid = true }

-- calculate_gain(nonlinearity, param): the recommended gain for a nonlinearity
function init.calculate_gain(nonlinearity, param)
  if unit_gain[nonlinearity] then return 1 end
  if nonlinearity == 'tanh' then return 5.0 / 3 end
  if nonlinearity == 'relu' then return sqrt(2.0) end
  if nonlinearity == 'leaky_relu' then
    local slope = 0.01
    if param ~= nil then
      if type(param) ~= 'number' then
        fail('nn.init.calculate_gain', ('negative_slope %s not a valid number'):format(
          type(param) == 'boolean' and (param and 'True' or 'False') or tostring(param)))
      end
      slope = param
    end
    return sqrt(2.0 / (1 + slope * slope))
  end
  if nonlinearity == 'selu' then return 3.0 / 4 end
  fail('nn.init.calculate_gain', ('Unsupported nonlinearity %s'):format(tostring(nonlinearity)))
end

local function fans(fn, t)
  local nd = t:dim()
  if nd < 2 then
    fail('nn.init.' .. fn, 'Fan in and fan out can not be computed for tensor with fewer than 2 dimensions')
  end
  local rf = 1
  for d = 3, nd do rf = rf * t:size(d) end
  return t:size(2) * rf, t:size(1) * rf
end

-- calculate_fan_in_and_fan_out(t) -> fan_in, fan_out (PyTorch's _calculate_fan_in_and_fan_out)
function init.calculate_fan_in_and_fan_out(t)
  need_tensor('calculate_fan_in_and_fan_out', t)
  return fans('calculate_fan_in_and_fan_out', t)
end
init._calculate_fan_in_and_fan_out = init.calculate_fan_in_and_fan_out

-- the fan that `mode` names ('fan_in' or 'fan_out', any case)
local function correct_fan(fn, t, mode)
  local m = type(mode) == 'string' and mode:lower() or tostring(mode)
  if m ~= 'fan_in' and m ~= 'fan_out' then
    fail('nn.init.' .. fn, ("Mode %s not supported, please use one of ['fan_in', 'fan_out']"):format(m))
  end
  local fan_in, fan_out = fans(fn, t)
  if m == 'fan_in' then return fan_in end
  return fan_out
end
init._calculate_correct_fan = function(t, mode)
  need_tensor('_calculate_correct_fan', t)
  return correct_fan('_calculate_correct_fan', t, mode)
end

------------------------------------------------------------------------------ plain fills
local function do_uniform(t, a, b) return t:uniform_(a, b) end
local function do_normal(t, m, s) return t:normal_(m, s) end
local function do_fill(t, v) return t:fill_(v) end
local function do_zero(t) return t:zero_() end

-- uniform_(t, a=0, b=1): U(a, b)
function init.uniform_(t, ...)
  need_tensor('uniform_', t)
  local v = args('uniform_', { 'a', 'b' }, ...)
  return nograd(do_uniform, t, number('uniform_', 'a', v[1], 0), number('uniform_', 'b', v[2], 1))
end

-- normal_(t, mean=0, std=1): N(mean, std^2)
function init.normal_(t, ...)
  need_tensor('normal_', t)
  local v = args('normal_', { 'mean', 'std' }, ...)
  return nograd(do_normal, t, number('normal_', 'mean', v[1], 0), number('normal_', 'std', v[2], 1))
end

-- constant_(t, val)
function init.constant_(t, ...)
  need_tensor('constant_', t)
  local val = args('constant_', { 'val' }, ...)[1]
  if is_tensor(val) and val:numel() == 1 then val = val:item() end
  if type(val) ~= 'number' and type(val) ~= 'boolean' then
    fail('nn.init.constant_', ('val must be a number, got %s'):format(core.typeof(val)))
  end
  return nograd(do_fill, t, val)
end
function init.ones_(t) need_tensor('ones_', t) return nograd(do_fill, t, 1) end
function init.zeros_(t) need_tensor('zeros_', t) return nograd(do_zero, t) end

-- eye_(t): the identity matrix (2-D only)
local function do_eye(t)
  t:zero_()
  t:diagonal():fill_(1)
  return t
end
function init.eye_(t)
  need_tensor('eye_', t)
  if t:dim() ~= 2 then fail('nn.init.eye_', 'Only tensors with 2 dimensions are supported') end
  return nograd(do_eye, t)
end

-- dirac_(t, groups=1): convolution weights (3, 4 or 5-D) that keep the input channels, per group
local function do_dirac(t, groups)
  local sizes, nd = t:size(), t:dim()
  local out_per = sizes[1] / groups
  local min_dim = min(out_per, sizes[2])
  t:zero_()
  for g = 0, groups - 1 do
    for d = 0, min_dim - 1 do
      local v = t:select(1, g * out_per + d + 1):select(1, d + 1)
      for k = 3, nd do v = v:select(1, floor(sizes[k] / 2) + 1) end
      v:fill_(1)
    end
  end
  return t
end
function init.dirac_(t, ...)
  need_tensor('dirac_', t)
  local groups = args('dirac_', { 'groups' }, ...)[1] or 1
  if type(groups) ~= 'number' or groups < 1 or groups % 1 ~= 0 then
    fail('nn.init.dirac_', ('groups must be a positive integer, got %s'):format(tostring(groups)))
  end
  local nd = t:dim()
  if nd < 3 or nd > 5 then fail('nn.init.dirac_', 'Only tensors with 3, 4, or 5 dimensions are supported') end
  if t:size(1) % groups ~= 0 then fail('nn.init.dirac_', 'dim 0 must be divisible by groups') end
  return nograd(do_dirac, t, groups)
end

------------------------------------------------------------------------------ scaled draws
-- xavier_uniform_(t, gain=1): U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))
function init.xavier_uniform_(t, ...)
  need_tensor('xavier_uniform_', t)
  local gain = number('xavier_uniform_', 'gain', args('xavier_uniform_', { 'gain' }, ...)[1], 1)
  local fan_in, fan_out = fans('xavier_uniform_', t)
  local a = sqrt(3.0) * (gain * sqrt(2.0 / (fan_in + fan_out)))
  return nograd(do_uniform, t, -a, a)
end

-- xavier_normal_(t, gain=1): N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))
function init.xavier_normal_(t, ...)
  need_tensor('xavier_normal_', t)
  local gain = number('xavier_normal_', 'gain', args('xavier_normal_', { 'gain' }, ...)[1], 1)
  local fan_in, fan_out = fans('xavier_normal_', t)
  return nograd(do_normal, t, 0, gain * sqrt(2.0 / (fan_in + fan_out)))
end

local kaiming_names = { 'a', 'mode', 'nonlinearity' }

-- the std of kaiming_*_ (nil for a tensor with no elements: PyTorch warns and leaves it)
local function kaiming_std(fn, t, ...)
  local v = args(fn, kaiming_names, ...)
  local a = number(fn, 'a', v[1], 0)
  for d = 1, t:dim() do
    if t:size(d) == 0 then
      warn('Initializing zero-element tensors is a no-op')
      return nil
    end
  end
  local fan = correct_fan(fn, t, v[2] or 'fan_in')
  return init.calculate_gain(v[3] or 'leaky_relu', a) / sqrt(fan)
end

-- kaiming_uniform_(t, a=0, mode='fan_in', nonlinearity='leaky_relu'): U(-b, b), b = gain * sqrt(3 / fan)
function init.kaiming_uniform_(t, ...)
  need_tensor('kaiming_uniform_', t)
  local std = kaiming_std('kaiming_uniform_', t, ...)
  if not std then return t end
  local bound = sqrt(3.0) * std
  return nograd(do_uniform, t, -bound, bound)
end

-- kaiming_normal_(t, a=0, mode='fan_in', nonlinearity='leaky_relu'): N(0, (gain / sqrt(fan))^2)
function init.kaiming_normal_(t, ...)
  need_tensor('kaiming_normal_', t)
  local std = kaiming_std('kaiming_normal_', t, ...)
  if not std then return t end
  return nograd(do_normal, t, 0, std)
end

------------------------------------------------------------------------------ trunc_normal_
-- erfinv(y) in double precision: Giles' single-precision approximation ("Approximating the
-- erfinv function", GPU Computing Gems, 2010) polished by two Newton steps, each of which roughly
-- doubles the correct digits (1e-7 -> 1e-14 -> full double precision). For |y| > 1/2 the steps
-- solve erfc(x) = 1 - |y| instead of erf(x) = y (1 - |y| is exact there, and erfc keeps its
-- relative precision where erf(x) is within rounding of 1), so the tails are accurate too; there
-- the steps go on until they stop changing x.
local two_over_sqrt_pi = 2 / sqrt(math.pi)
local function erfinv(y)
  if not (y > -1 and y < 1) then
    if y == 1 then return huge elseif y == -1 then return -huge end
    return 0 / 0
  end
  local w = -log((1 - y) * (1 + y))
  local p
  if w < 5 then
    w = w - 2.5
    p = 2.81022636e-08
    p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w
    p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w
    p = 0.246640727 + p * w; p = 1.50140941 + p * w
  else
    w = sqrt(w) - 3
    p = -0.000200214257
    p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w
    p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w
    p = 1.00167406 + p * w; p = 2.83297682 + p * w
  end
  local x = p * y
  if y >= -0.5 and y <= 0.5 then
    x = x - (libm_erf(x) - y) / (two_over_sqrt_pi * exp(-x * x))
    x = x - (libm_erf(x) - y) / (two_over_sqrt_pi * exp(-x * x))
    return x
  end
  local c = y > 0 and 1 - y or 1 + y
  if x < 0 then x = -x end
  x = x + (libm_erfc(x) - c) / (two_over_sqrt_pi * exp(-x * x))
  x = x + (libm_erfc(x) - c) / (two_over_sqrt_pi * exp(-x * x))
  if c >= 6e-8 then
    if y < 0 then return -x end
    return x
  end
  -- beyond float32's range (|y| > 1 - 6e-8) the first guess is rougher: step until converged
  for _ = 1, 50 do
    local dx = (libm_erfc(x) - c) / (two_over_sqrt_pi * exp(-x * x))
    x = x + dx
    if dx <= 1e-16 * x and dx >= -1e-16 * x then break end
  end
  if y < 0 then return -x end
  return x
end
init._erfinv = erfinv

-- t <- erfinv(t), computed in double precision over a contiguous float64 copy
local function erfinv_(t)
  local d = torch.empty(t:size(), { dtype = torch.float64 })
  d:copy_(t)
  local p = ffi.cast(double_p, d:data_ptr())
  for i = 0, d:numel() - 1 do p[i] = erfinv(p[i]) end
  return t:copy_(d)
end

local function normal_cdf(x) return (1 + libm_erf(x / sqrt(2))) / 2 end

local function do_trunc_normal(t, mean, std, a, b)
  local l, u = normal_cdf((a - mean) / std), normal_cdf((b - mean) / std)
  -- PyTorch's inverse-CDF draw: U(2l-1, 2u-1), erfinv, scale, shift, clamp, each in t's dtype
  t:uniform_(2 * l - 1, 2 * u - 1)
  erfinv_(t)
  t:mul_(std * sqrt(2.0))
  t:add_(mean)
  t:clamp_(a, b)
  return t
end

-- trunc_normal_(t, mean=0, std=1, a=-2, b=2): N(mean, std^2) truncated to [a, b]
function init.trunc_normal_(t, ...)
  need_tensor('trunc_normal_', t)
  local v = args('trunc_normal_', { 'mean', 'std', 'a', 'b' }, ...)
  local mean, std = number('trunc_normal_', 'mean', v[1], 0), number('trunc_normal_', 'std', v[2], 1)
  local a, b = number('trunc_normal_', 'a', v[3], -2), number('trunc_normal_', 'b', v[4], 2)
  if mean < a - 2 * std or mean > b + 2 * std then
    warn('mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may be incorrect.')
  end
  return nograd(do_trunc_normal, t, mean, std, a, b)
end

------------------------------------------------------------------------------ orthogonal_
-- PyTorch's orthogonal_ takes Q of the QR factorisation of a normal draw, with each column j of Q
-- multiplied by sign(R[j][j]); that makes the factorisation unique, so any correct QR gives
-- PyTorch's numbers. Ours is a blocked Householder QR in float64 (LAPACK's scheme): each panel of
-- NB columns is factored by plain loops over FFI arrays, its reflectors H_j = I - tau_j v_j v_j^T
-- gathered into I - V T V^T (compact WY form), and the rest of the matrix updated with matmuls.
local NB = 32

-- Householder QR of the m x nb panel `a` (column-major double[m*nb]), destroying it: reflector j
-- in column j of v (zero above row j), tau[j], and sg[j] = sign(R[j][j]) (LAPACK's choice of the
-- reflection makes R[j][j] = -sign(a[j][j]) * norm; 0 where the column is already zero).
local function panel_qr(a, m, nb, v, tau, sg, off)
  for k = 0, nb - 1 do
    local ck = k * m
    local norm = 0
    for i = k, m - 1 do norm = norm + a[ck + i] * a[ck + i] end
    norm = sqrt(norm)
    local akk = a[ck + k]
    local alpha = akk >= 0 and -norm or norm
    for i = 0, k - 1 do v[ck + i] = 0 end
    for i = k, m - 1 do v[ck + i] = a[ck + i] end
    v[ck + k] = akk - alpha
    local s = 0
    for i = k, m - 1 do s = s + v[ck + i] * v[ck + i] end
    if s > 0 then
      tau[k] = 2 / s
      sg[off + k] = alpha > 0 and 1 or (alpha < 0 and -1 or 0)
      for j = k + 1, nb - 1 do
        local cj = j * m
        local dot = 0
        for i = k, m - 1 do dot = dot + v[ck + i] * a[cj + i] end
        dot = dot * tau[k]
        for i = k, m - 1 do a[cj + i] = a[cj + i] - dot * v[ck + i] end
      end
    else -- the column is zero from row k down: nothing to reflect, R[k][k] = 0
      tau[k] = 0
      sg[off + k] = 0
    end
  end
end

-- the upper triangular T (double[nb*nb], row-major) with H_0 H_1 ... H_{nb-1} = I - V T V^T
local function wy_t(v, tau, m, nb, T)
  local z = doubles(nb)
  for j = 0, nb - 1 do
    local cj = j * m
    -- T[0:j, j] = -tau_j T[0:j, 0:j] z, z = V[:, 0:j]^T v_j (v_j is zero above row j)
    for l = 0, j - 1 do
      local cl, acc = l * m, 0
      for r = j, m - 1 do acc = acc + v[cl + r] * v[cj + r] end
      z[l] = acc
    end
    for i = 0, j - 1 do
      local acc = 0
      for l = i, j - 1 do acc = acc + T[i * nb + l] * z[l] end
      T[i * nb + j] = -tau[j] * acc
    end
    T[j * nb + j] = tau[j]
    for i = j + 1, nb - 1 do T[i * nb + j] = 0 end
  end
end

-- Q (m x n float64 tensor, m >= n) of A = QR with columns multiplied by sign(diag R); A is an
-- m x n float64 tensor that is overwritten
local function signed_q(A, m, n)
  local f64 = torch.float64
  local sg = doubles(n)
  local panels = {}
  for k = 0, n - 1, NB do
    local nb, rows = min(NB, n - k), m - k
    local pt = A:narrow(1, k + 1, rows):narrow(2, k + 1, nb):contiguous()
    local pp = ffi.cast(double_p, pt:data_ptr())
    local a, v, tau = doubles(rows * nb), doubles(rows * nb), doubles(nb)
    for i = 0, rows - 1 do
      for j = 0, nb - 1 do a[j * rows + i] = pp[i * nb + j] end
    end
    panel_qr(a, rows, nb, v, tau, sg, k)
    local V = torch.empty(rows, nb, { dtype = f64 })
    local vp = ffi.cast(double_p, V:data_ptr())
    for i = 0, rows - 1 do
      for j = 0, nb - 1 do vp[i * nb + j] = v[j * rows + i] end
    end
    local Tt = torch.empty(nb, nb, { dtype = f64 })
    wy_t(v, tau, rows, nb, ffi.cast(double_p, Tt:data_ptr()))
    panels[#panels + 1] = { k, V, Tt }
    if k + nb < n then
      -- A2 <- (I - V T V^T)^T A2 = A2 - V (T^T (V^T A2))
      local A2 = A:narrow(1, k + 1, rows):narrow(2, k + nb + 1, n - k - nb)
      A2:addmm_(V, Tt:t():matmul(V:t():matmul(A2)), { alpha = -1 })
    end
  end
  -- Q = H_0 H_1 ... H_{n-1} I[:, 1:n], applied panel by panel from the last; columns left of a
  -- panel are still unit vectors with zeros in the panel's rows, so only columns k.. change
  local Q = torch.zeros(m, n, { dtype = f64 })
  Q:diagonal():fill_(1)
  for i = #panels, 1, -1 do
    local k, V, Tt = panels[i][1], panels[i][2], panels[i][3]
    local Qk = Q:narrow(1, k + 1, m - k):narrow(2, k + 1, n - k)
    Qk:addmm_(V, Tt:matmul(V:t():matmul(Qk)), { alpha = -1 })
  end
  local s = torch.empty(n, { dtype = f64 })
  ffi.copy(ffi.cast(double_p, s:data_ptr()), sg, 8 * n)
  return Q:mul_(s)
end

-- for nn.utils.parametrizations.orthogonal (its _make_orthogonal is this Q)
init._signed_q = signed_q

local function do_orthogonal(t, gain)
  local rows = t:size(1)
  local cols = t:numel() / rows
  -- PyTorch draws a (rows, cols) normal matrix in t's dtype and factors it (transposed when wide)
  local flat = torch.empty(rows, cols, { dtype = t.dtype }):normal_(0, 1)
  local A = torch.empty(rows, cols, { dtype = torch.float64 }):copy_(flat)
  local q
  if rows < cols then
    q = signed_q(A:t():contiguous(), cols, rows):t()
  else
    q = signed_q(A, rows, cols)
  end
  t:view_as(q):copy_(q)
  t:mul_(gain)
  return t
end

-- orthogonal_(t, gain=1): a (semi-)orthogonal matrix (t seen as rows x (numel / rows)) times gain
function init.orthogonal_(t, ...)
  need_tensor('orthogonal_', t)
  local gain = number('orthogonal_', 'gain', args('orthogonal_', { 'gain' }, ...)[1], 1)
  if t:dim() < 2 then fail('nn.init.orthogonal_', 'Only tensors with 2 or more dimensions are supported') end
  if t:numel() == 0 then return t end
  return nograd(do_orthogonal, t, gain)
end

------------------------------------------------------------------------------ sparse_
local function do_sparse(t, sparsity, std)
  local rows, cols = t:size(1), t:size(2)
  local num_zeros = ceil(sparsity * rows)
  t:normal_(0, std)
  -- per column, the first num_zeros rows of a randperm(rows) become 0 (PyTorch's draw order);
  -- the mask is built on the host and goes to t's device whole
  local mask = torch.zeros(rows, cols, { dtype = torch.bool })
  local mp = ffi.cast(bool_p, mask:data_ptr())
  for c = 0, cols - 1 do
    local perm = torch.randperm(rows)
    if num_zeros > 0 then
      local rp = perm:tolist()
      for k = 1, min(num_zeros, rows) do mp[(rp[k] - 1) * cols + c] = true end
    end
  end
  return t:masked_fill_(mask:to(t.device), 0)
end

-- sparse_(t, sparsity, std=0.01): N(0, std^2) with ceil(sparsity * rows) zeros in each column (2-D)
function init.sparse_(t, ...)
  need_tensor('sparse_', t)
  local v = args('sparse_', { 'sparsity', 'std' }, ...)
  if t:dim() ~= 2 then fail('nn.init.sparse_', 'Only tensors with 2 dimensions are supported') end
  if type(v[1]) ~= 'number' then fail('nn.init.sparse_', 'sparsity must be a number, got ' .. core.typeof(v[1])) end
  return nograd(do_sparse, t, v[1], number('sparse_', 'std', v[2], 0.01))
end

-- the old names without the trailing underscore (deprecated in PyTorch, which warns)
for _, name in ipairs { 'uniform', 'normal', 'constant', 'xavier_uniform', 'xavier_normal', 'kaiming_uniform',
  'kaiming_normal', 'orthogonal', 'sparse' } do
  local f = init[name .. '_']
  init[name] = function(...)
    warn(('nn.init.%s is now deprecated in favor of nn.init.%s_.'):format(name, name))
    return f(...)
  end
end

return init
