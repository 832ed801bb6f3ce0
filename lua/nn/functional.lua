-- nn.functional: PyTorch's torch.nn.functional, thin over the tensor ops. Every function is
-- differentiable through the autograd engine (composites of recorded ops). Dimensions are 1-based
-- (F.softmax(x, 2) is PyTorch's F.softmax(x, 1)); class targets of nll_loss / cross_entropy, their
-- ignore_index, embedding indices and padding_idx are 1-based too (ignore_index's default -100
-- stays -100). Optional arguments come positionally in PyTorch's order or in a trailing options
-- table with PyTorch's keyword names: F.leaky_relu(x, 0.2, true) is F.leaky_relu(x, {negative_slope
-- = 0.2, inplace = true}); for the losses the third argument may also be the reduction string.
-- Errors read `moontorch.nn.functional.<fn>: ...`.
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local fail = core.fail
local is_tensor = T.is_tensor
local check_int = require('moontorch.nn.Module').check_int
local type, select, tostring, pairs = type, select, tostring, pairs
local sqrt, log, pi, max = math.sqrt, math.log, math.pi, math.max

local F = {}
-- one autograd node named as PyTorch's for a function composed of several ops (lua/ops/compose.lua)
local node = require('moontorch.ops.compose').node

------------------------------------------------------------------------------ helpers
local function bad(fn, msg) fail('nn.functional.' .. fn, msg) end

local function need_tensor(fn, x, what)
  if not is_tensor(x) then bad(fn, ('%s must be a tensor (got %s)'):format(what or 'input', type(x))) end
end

local function is_opts(v) return type(v) == 'table' and not is_tensor(v) end

local args = require('moontorch.nn.optargs').parser { prefix = 'nn.functional.', is_opts = is_opts }

local function num(fn, name, v, default)
  if v == nil then return default end
  if type(v) ~= 'number' then bad(fn, ('%s must be a number (got %s)'):format(name, type(v))) end
  return v
end

-- `inplace` given positionally (a boolean) or as {inplace=}
local function inplace_of(v)
  if v == nil or v == false then return false end
  if v == true then return true end
  if is_opts(v) then return v.inplace == true end
  return false
end

local warned = {}
local function warn(msg)
  if warned[msg] then return end
  warned[msg] = true
  io.stderr:write('UserWarning: ', msg, '\n')
end

local function size_str(t) return '[' .. table.concat(t:size(), ', ') .. ']' end
local function torch_size(t) return 'torch.Size([' .. table.concat(t:size(), ', ') .. '])' end

local function same_size(a, b)
  if a:dim() ~= b:dim() then return false end
  for d = 1, a:dim() do if a:size(d) ~= b:size(d) then return false end end
  return true
end

-- the shape two tensors broadcast to (an error naming fn when they don't)
local function broadcast_shape(fn, a, b)
  local na, nb = a:dim(), b:dim()
  local n = max(na, nb)
  local s = {}
  for i = 1, n do
    local da = i <= n - na and 1 or a:size(i - (n - na))
    local db = i <= n - nb and 1 or b:size(i - (n - nb))
    if da ~= db and da ~= 1 and db ~= 1 then
      bad(fn, ('The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton dimension %d')
        :format(da, db, i))
    end
    s[i] = da == 1 and db or da
  end
  return s
end

-- inplace composite activations: the result written back into x
local function into(x, r, inplace)
  if inplace then return x:copy_(r) end
  return r
end

------------------------------------------------------------------------------ activations
-- relu(x, inplace=false)
function F.relu(x, inplace)
  if not is_tensor(x) then
    -- issue 25: a quantized tensor's relu keeps its quantizer
    if type(x) == 'table' and x.is_quantized then return require('moontorch.quantization.functional').relu(x) end
    need_tensor('relu', x)
  end
  if inplace ~= nil and inplace_of(inplace) then return x:relu_() end
  return x:relu()
end
function F.relu_(x) need_tensor('relu_', x) return x:relu_() end

-- leaky_relu(x, negative_slope=0.01, inplace=false)
local leaky_names = { 'negative_slope', 'inplace' }
function F.leaky_relu(x, negative_slope, inplace)
  if not is_tensor(x) then need_tensor('leaky_relu', x) end
  if is_opts(negative_slope) or is_opts(inplace) then
    local v = args('leaky_relu', leaky_names, negative_slope, inplace)
    negative_slope, inplace = v[1], v[2]
  end
  return torch.leaky_relu(x, num('leaky_relu', 'negative_slope', negative_slope, 0.01), inplace == true)
end
function F.leaky_relu_(x, negative_slope)
  need_tensor('leaky_relu_', x)
  if is_opts(negative_slope) then negative_slope = negative_slope.negative_slope end
  return torch.leaky_relu(x, num('leaky_relu_', 'negative_slope', negative_slope, 0.01), true)
end

-- threshold(x, threshold, value, inplace=false): x where x > threshold, else value
function F.threshold(x, ...)
  need_tensor('threshold', x)
  local v = args('threshold', { 'threshold', 'value', 'inplace' }, ...)
  local th, value = v[1], v[2]
  if type(th) ~= 'number' or type(value) ~= 'number' then bad('threshold', 'threshold and value must be numbers') end
  return torch.threshold(x, th, value, v[3] == true)
end
function F.threshold_(x, th, value) return F.threshold(x, th, value, true) end

-- hardtanh(x, min_val=-1, max_val=1, inplace=false)
function F.hardtanh(x, ...)
  need_tensor('hardtanh', x)
  local v = args('hardtanh', { 'min_val', 'max_val', 'inplace' }, ...)
  local lo, hi = num('hardtanh', 'min_val', v[1], -1), num('hardtanh', 'max_val', v[2], 1)
  if lo > hi then bad('hardtanh', 'min_val cannot be greater than max_val') end
  return torch.hardtanh(x, lo, hi, v[3] == true)
end
function F.hardtanh_(x, lo, hi) return F.hardtanh(x, lo, hi, true) end

function F.relu6(x, inplace)
  need_tensor('relu6', x)
  return torch.hardtanh(x, 0, 6, inplace_of(inplace))
end

-- elu(x, alpha=1, inplace=false)
function F.elu(x, ...)
  need_tensor('elu', x)
  local v = args('elu', { 'alpha', 'inplace' }, ...)
  return torch.elu(x, num('elu', 'alpha', v[1], 1.0), v[2] == true)
end
function F.elu_(x, alpha) return F.elu(x, alpha, true) end

local SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
-- selu(x, inplace=false): scale * elu(x, alpha) with PyTorch's constants
local selu = node('EluBackward0', function(x) return torch.elu(x, SELU_ALPHA) * SELU_SCALE end,
  function(g, x) return torch.where(x:gt(0), g * SELU_SCALE, g * (x:exp() * (SELU_SCALE * SELU_ALPHA))) end)
function F.selu(x, inplace)
  need_tensor('selu', x)
  return into(x, selu(x), inplace_of(inplace))
end
function F.selu_(x) return F.selu(x, true) end

-- celu(x, alpha=1, inplace=false): max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
local celu = node('CeluBackward0', function(x, alpha)
  return alpha == 1 and torch.elu(x, 1) or torch.elu(x / alpha, 1) * alpha
end, function(g, x, alpha) return torch.where(x:gt(0), g, g * (x / alpha):exp()) end)
function F.celu(x, ...)
  need_tensor('celu', x)
  local v = args('celu', { 'alpha', 'inplace' }, ...)
  local alpha = num('celu', 'alpha', v[1], 1.0)
  if alpha == 0 then bad('celu', 'ZeroDivisionError: alpha cannot be 0 for CELU') end
  return into(x, celu(x, alpha), v[2] == true)
end
function F.celu_(x, alpha) return F.celu(x, alpha, true) end

-- prelu(x, weight): x where x >= 0, else weight * x; weight has 1 element or one per channel (dim 2)
local function prelu_weight(x, weight) -- weight shaped to broadcast over x
  if weight:numel() == 1 then return weight:reshape({}) end
  if x:dim() < 2 then return weight end
  local shape = { 1, weight:numel() }
  for _ = 3, x:dim() do shape[#shape + 1] = 1 end
  return weight:reshape(shape)
end
local prelu = node('PreluBackward0', function(x, weight)
  return torch.where(x:gt(0), x, x * prelu_weight(x, weight))
end, function(g, x, weight)
  local pos = x:gt(0)
  local gx = torch.where(pos, g, g * prelu_weight(x, weight))
  local gw = torch.where(pos, torch.zeros_like(x), g * x)
  if weight:numel() == 1 or x:dim() < 2 then
    gw = weight:numel() == 1 and gw:sum():reshape(weight:size()) or gw
  else
    local dims = { 1 }
    for d = 3, x:dim() do dims[#dims + 1] = d end
    gw = gw:sum(dims):reshape(weight:size())
  end
  return gx, gw
end)
function F.prelu(x, weight)
  need_tensor('prelu', x)
  need_tensor('prelu', weight, 'weight')
  local nw = weight:numel()
  if nw ~= 1 then
    local c = x:dim() >= 2 and x:size(2) or 1
    if nw ~= c then
      bad('prelu', ('Mismatch of parameter numbers and input channel size. Found parameter numbers = %d and channel size = %d.')
        :format(nw, c))
    end
  end
  return prelu(x, weight)
end

-- glu(x, dim=-1): a * sigmoid(b) for the two halves a, b of x along dim
local glu = node('GluBackward0', function(x, d)
  local h = x:size(d) / 2
  return x:narrow(d, 1, h) * x:narrow(d, h + 1, h):sigmoid()
end, function(g, x, d)
  local h = x:size(d) / 2
  local a, s = x:narrow(d, 1, h), x:narrow(d, h + 1, h):sigmoid()
  return torch.cat({ g * s, g * a * s * (1 - s) }, d)
end)
function F.glu(x, dim)
  need_tensor('glu', x)
  if is_opts(dim) then dim = dim.dim end
  dim = dim or -1
  if type(dim) ~= 'number' or dim % 1 ~= 0 then bad('glu', 'expected an integer dim, got ' .. tostring(dim)) end
  if x:dim() == 0 then bad('glu', 'glu does not support scalars because halving size must be even') end
  local d = dim < 0 and x:dim() + dim + 1 or dim
  local n = x:size(d)
  if n % 2 ~= 0 then bad('glu', ('Halving dimension must be even, but dimension %d is size %d'):format(d, n)) end
  return glu(x, d)
end

-- gelu(x, approximate='none'|'tanh')
function F.gelu(x, approximate)
  need_tensor('gelu', x)
  if is_opts(approximate) then approximate = approximate.approximate end
  approximate = approximate or 'none'
  if approximate ~= 'none' and approximate ~= 'tanh' then
    bad('gelu', ("approximate argument must be either none or tanh (got %s)"):format(tostring(approximate)))
  end
  if approximate == 'tanh' then return x:gelu({ approximate = 'tanh' }) end
  return x:gelu()
end

function F.sigmoid(x) need_tensor('sigmoid', x) return x:sigmoid() end
function F.tanh(x) need_tensor('tanh', x) return x:tanh() end

-- logsigmoid(x) = -softplus(-x)
local logsigmoid = node('LogSigmoidBackward0', function(x) return -torch.softplus_unit(-x) end,
  function(g, x) return g * (-x):sigmoid() end)
function F.logsigmoid(x)
  need_tensor('logsigmoid', x)
  return logsigmoid(x)
end

-- hardsigmoid(x, inplace=false) = relu6(x + 3) / 6
local hardsigmoid = node('HardsigmoidBackward0', function(x) return torch.hardtanh(x + 3, 0, 6) / 6 end,
  function(g, x) return torch.where(x:gt(-3):logical_and(x:lt(3)), g / 6, torch.zeros_like(g)) end)
function F.hardsigmoid(x, inplace)
  need_tensor('hardsigmoid', x)
  return into(x, hardsigmoid(x), inplace_of(inplace))
end

-- hardswish(x, inplace=false) = x * relu6(x + 3) / 6; written piecewise so that the gradient at
-- x = -3 and x = 3 is PyTorch's (the middle piece's, x / 3 + 1 / 2)
local hardswish = node('HardswishBackward0', function(x)
  return torch.where(x:lt(-3), torch.zeros_like(x), torch.where(x:gt(3), x, x * (x + 3) / 6))
end, function(g, x)
  return torch.where(x:lt(-3), torch.zeros_like(g), torch.where(x:le(3), g * (x / 3 + 0.5), g))
end)
function F.hardswish(x, inplace)
  need_tensor('hardswish', x)
  return into(x, hardswish(x), inplace_of(inplace))
end

function F.silu(x, inplace)
  need_tensor('silu', x)
  if inplace_of(inplace) then return x:silu_() end
  return x:silu()
end

-- mish(x, inplace=false) = x * tanh(softplus(x))
local mish = node('MishBackward0', function(x) return x * torch.softplus_unit(x):tanh() end,
  function(g, x)
    local t = torch.softplus_unit(x):tanh()
    return g * (t + x * x:sigmoid() * (1 - t * t))
  end)
function F.mish(x, inplace)
  need_tensor('mish', x)
  return into(x, mish(x), inplace_of(inplace))
end

-- softplus(x, beta=1, threshold=20): log(1 + exp(beta x)) / beta, x itself where beta x > threshold
local softplus = node('SoftplusBackward0', function(x, beta, threshold)
  local bx = beta == 1 and x or x * beta
  local soft = torch.softplus_unit(bx)
  if beta ~= 1 then soft = soft / beta end
  return torch.where(bx:gt(threshold), x, soft)
end, function(g, x, beta, threshold)
  local bx = beta == 1 and x or x * beta
  return torch.where(bx:gt(threshold), g, g * bx:sigmoid())
end)
function F.softplus(x, ...)
  need_tensor('softplus', x)
  local v = args('softplus', { 'beta', 'threshold' }, ...)
  local beta, threshold = num('softplus', 'beta', v[1], 1), num('softplus', 'threshold', v[2], 20)
  return softplus(x, beta, threshold)
end

function F.softsign(x) need_tensor('softsign', x) return x / (x:abs() + 1) end
function F.tanhshrink(x) need_tensor('tanhshrink', x) return x - x:tanh() end

-- the gradient of hardshrink and softshrink: g where |x| > lambd, else 0
local function shrink_grad(g, x, lambd) return torch.where(x:abs():gt(lambd), g, torch.zeros_like(g)) end
-- hardshrink(x, lambd=0.5): x where |x| > lambd, else 0
local hardshrink = node('HardshrinkBackward0', function(x, lambd)
  return torch.where(x:abs():gt(lambd), x, torch.zeros_like(x))
end, shrink_grad)
function F.hardshrink(x, lambd)
  need_tensor('hardshrink', x)
  if is_opts(lambd) then lambd = lambd.lambd end
  lambd = num('hardshrink', 'lambd', lambd, 0.5)
  return hardshrink(x, lambd)
end

-- softshrink(x, lambd=0.5): x - lambd above lambd, x + lambd below -lambd, else 0
local softshrink = node('SoftshrinkBackward0', function(x, lambd)
  return torch.where(x:gt(lambd), x - lambd, torch.where(x:lt(-lambd), x + lambd, torch.zeros_like(x)))
end, shrink_grad)
function F.softshrink(x, lambd)
  need_tensor('softshrink', x)
  if is_opts(lambd) then lambd = lambd.lambd end
  lambd = num('softshrink', 'lambd', lambd, 0.5)
  if lambd < 0 then bad('softshrink', ('lambda must be greater or equal to 0, but found to be %s.'):format(lambd)) end
  return softshrink(x, lambd)
end

-- the dim softmax-like functions take: given, or PyTorch's old implicit choice (deprecated there)
local function softmax_dim(fn, x, dim, opts)
  T.options(opts, fn)
  if is_opts(dim) then opts, dim = dim, dim.dim end
  if dim == nil then
    warn(('Implicit dimension choice for %s has been deprecated. Change the call to include dim=X as an argument.')
      :format(fn))
    local nd = x:dim()
    dim = (nd == 0 or nd == 1 or nd == 3) and 1 or 2
  end
  return dim, opts and opts.dtype
end

-- softmax(x, dim, {dtype=}), log_softmax, softmin: along the 1-based dim
function F.softmax(x, dim, opts)
  if not is_tensor(x) then need_tensor('softmax', x) end
  local d, dtype = softmax_dim('softmax', x, dim, opts)
  if dtype then return x:softmax(d, { dtype = dtype }) end
  return x:softmax(d)
end
function F.log_softmax(x, dim, opts)
  if not is_tensor(x) then need_tensor('log_softmax', x) end
  local d, dtype = softmax_dim('log_softmax', x, dim, opts)
  if dtype then return x:log_softmax(d, { dtype = dtype }) end
  return x:log_softmax(d)
end
function F.softmin(x, dim, opts)
  need_tensor('softmin', x)
  local d, dtype = softmax_dim('softmin', x, dim, opts)
  if dtype then return (-x):softmax(d, { dtype = dtype }) end
  return (-x):softmax(d)
end

------------------------------------------------------------------------------ normalisation
-- layer_norm(x, normalized_shape, weight=nil, bias=nil, eps=1e-5): over the last dims. float32
-- and float64 run the fused op (torch.layer_norm: one kernel each way), other dtypes a composite.
local norm_ops = require 'moontorch.ops.norm'
function F.layer_norm(x, normalized_shape, ...)
  need_tensor('layer_norm', x)
  local v = args('layer_norm', { 'weight', 'bias', 'eps' }, ...)
  local w, b = v[1], v[2]
  local eps = num('layer_norm', 'eps', v[3], 1e-5)
  local k = norm_ops.check('nn.functional.layer_norm', x, normalized_shape, w, b)
  local dt = x.dtype
  if (dt == torch.float32 or dt == torch.float64) and (w == nil or w.dtype == dt) and (b == nil or b.dtype == dt) then
    return torch.layer_norm(x, normalized_shape, w, b, eps)
  end
  local nd = x:dim()
  local dims = {}
  for i = 1, k do dims[i] = nd - k + i end
  local mean = x:mean(dims, { keepdim = true })
  local var = x:var(dims, { correction = 0, keepdim = true })
  local y = (x - mean) * (var + eps):rsqrt()
  if w ~= nil then y = y * w end
  if b ~= nil then y = y + b end
  return y
end

-- group_norm(x, num_groups, weight=nil, bias=nil, eps=1e-5): x (N, C, *), C split in groups
-- x normalised by group (its (N, groups, -1) view's statistics) and xhat, the groups' invstd
local function group_stats(x, groups, eps)
  local gx = x:reshape(x:size(1), groups, -1)
  local var, mean = gx:var_mean(3, { correction = 0, keepdim = true })
  local invstd = (var + eps):rsqrt()
  return (gx - mean) * invstd, invstd
end
local function channel_shape(x)
  local shape = { 1, x:size(2) }
  for _ = 3, x:dim() do shape[#shape + 1] = 1 end
  return shape
end
local group_norm = node('NativeGroupNormBackward0', function(x, weight, bias, groups, eps)
  local y = group_stats(x, groups, eps):reshape(x:size())
  local shape = channel_shape(x)
  if weight ~= nil then y = y * weight:reshape(shape) end
  if bias ~= nil then y = y + bias:reshape(shape) end
  return y
end, function(g, x, weight, bias, groups, eps)
  local xhat, invstd = group_stats(x, groups, eps)
  local shape, n = channel_shape(x), x:size(1)
  local dims = { 1 }
  for d = 3, x:dim() do dims[#dims + 1] = d end
  local gxhat = (weight ~= nil and g * weight:reshape(shape) or g):reshape(n, groups, -1)
  local gx = (gxhat - gxhat:mean(3, { keepdim = true }) - xhat * (gxhat * xhat):mean(3, { keepdim = true })) * invstd
  local gw = weight ~= nil and (g * xhat:reshape(x:size())):sum(dims):reshape(weight:size()) or nil
  local gb = bias ~= nil and g:sum(dims):reshape(bias:size()) or nil
  return gx:reshape(x:size()), gw, gb
end)
function F.group_norm(x, num_groups, ...)
  need_tensor('group_norm', x)
  local v = args('group_norm', { 'weight', 'bias', 'eps' }, ...)
  for _, k in ipairs({ 'weight', 'bias' }) do
    if v[k] ~= nil and not torch.is_tensor(v[k]) then bad('group_norm', ('%s must be a tensor or nil, got %s'):format(k, type(v[k]))) end
  end
  if x:dim() < 2 then
    bad('group_norm', ('Expected at least 2 dimensions for input tensor but received %d'):format(x:dim()))
  end
  local n, c = x:size(1), x:size(2)
  check_int('nn.functional.group_norm', 'num_groups', num_groups)
  if num_groups < 1 or c % num_groups ~= 0 then
    bad('group_norm', ('Expected number of channels in input to be divisible by num_groups, but got input of shape %s and num_groups=%s')
      :format(size_str(x), tostring(num_groups)))
  end
  local eps = num('group_norm', 'eps', v[3], 1e-5)
  return group_norm(x, v[1], v[2], num_groups, eps)
end

-- normalize(x, p=2, dim=2, eps=1e-12): x / max(||x||_p, eps) along dim (PyTorch's dim 1)
function F.normalize(x, ...)
  need_tensor('normalize', x)
  local v = args('normalize', { 'p', 'dim', 'eps' }, ...)
  local p, dim, eps = v[1] or 2, v[2] or 2, num('normalize', 'eps', v[3], 1e-12)
  local n = x:norm(p, dim, true):clamp_min(eps)
  return x / n:expand_as(x)
end

------------------------------------------------------------------------------ linear
-- linear(x, weight, bias=nil): x @ weight^T + bias; weight is (out_features, in_features). The
-- same ops as PyTorch's: addmm for 2-D input with a bias (AddmmBackward0), addmm on the flattened
-- input for contiguous 3-D input with a bias (ViewBackward0), else matmul (+ bias).
function F.linear(x, weight, bias)
  if not is_tensor(x) then need_tensor('linear', x) end
  if not is_tensor(weight) then
    -- a torch.sparse_csr weight (a pruned Linear's, issue 24): the CSR product
    if torch.sparse.is_csr(weight) then return torch.sparse.linear(x, weight, bias) end
    need_tensor('linear', weight, 'weight')
  end
  if bias ~= nil then
    local nd = x:dim()
    if nd == 2 then return torch.addmm(bias, x, weight:t()) end
    if nd == 3 and x:is_contiguous() then
      local s1, s2 = x:size(1), x:size(2)
      return torch.addmm(bias, x:view(s1 * s2, x:size(3)), weight:t()):view(s1, s2, weight:size(1))
    end
    return x:matmul(weight:t()) + bias
  end
  return x:matmul(weight:t())
end

-- bilinear(x1, x2, weight, bias=nil): y[..., k] = x1 W[k] x2^T + b[k]; weight (out, in1, in2)
function F.bilinear(x1, x2, weight, bias)
  need_tensor('bilinear', x1, 'input1')
  need_tensor('bilinear', x2, 'input2')
  need_tensor('bilinear', weight, 'weight')
  if weight:dim() ~= 3 then bad('bilinear', ('expected 3D weight tensor, got %dD'):format(weight:dim())) end
  local out, i1, i2 = weight:size(1), weight:size(2), weight:size(3)
  if x1:dim() ~= x2:dim() then
    bad('bilinear', ('input dimensions do not match: got %d and %d'):format(x1:dim(), x2:dim()))
  end
  if x1:size(-1) ~= i1 then
    bad('bilinear', ('input1 size does not match weight size: got %d but expected %d'):format(x1:size(-1), i1))
  end
  if x2:size(-1) ~= i2 then
    bad('bilinear', ('input2 size does not match weight size: got %d but expected %d'):format(x2:size(-1), i2))
  end
  -- (N, in1) @ (in1, out*in2) -> (N, out, in2), times x2 (N, 1, in2), summed over in2
  local lead = x1:size()
  lead[#lead] = nil
  local a = x1:reshape(-1, i1):matmul(weight:permute(2, 1, 3):reshape(i1, out * i2)):reshape(-1, out, i2)
  local y = (a * x2:reshape(-1, 1, i2)):sum(3)
  lead[#lead + 1] = out
  y = y:reshape(lead)
  if bias ~= nil then y = y + bias end
  return y
end

------------------------------------------------------------------------------ dropout
local function check_p(fn, p)
  if type(p) ~= 'number' or p < 0 or p > 1 then
    bad(fn, ('dropout probability has to be between 0 and 1, but got %s'):format(tostring(p)))
  end
end

-- x * noise, in place or not
local function apply_noise(x, noise, inplace)
  if inplace then return x:mul_(noise) end
  return x * noise
end

-- dropout(x, p=0.5, training=true, inplace=false): x * bernoulli(1 - p) / (1 - p), drawing what
-- PyTorch's CPU dropout draws (bernoulli_(1 - p) on a tensor like x)
function F.dropout(x, ...)
  if type(x) == 'table' and x.is_quantized then return x end -- issue 25: quantized models run in eval
  need_tensor('dropout', x)
  local v = args('dropout', { 'p', 'training', 'inplace' }, ...)
  local p, training, inplace = v[1] or 0.5, v[2], v[3] == true
  check_p('dropout', p)
  if training == false or p == 0 or x:numel() == 0 then return x end
  if p == 1 then return apply_noise(x, torch.zeros({}, { dtype = x.dtype }), inplace) end
  local noise = torch.empty_like(x):bernoulli_(1 - p)
  noise:div_(1 - p)
  return apply_noise(x, noise, inplace)
end

-- alpha_dropout(x, p=0.5, training=false, inplace=false): keeps SELU's mean and variance
local ALPHA_DROPOUT = 1.7580993408473766
local function alpha_noise(x, noise, p, inplace)
  local a = 1 / sqrt((ALPHA_DROPOUT * ALPHA_DROPOUT * p + 1) * (1 - p))
  local b = (noise - 1) * (ALPHA_DROPOUT * a) + ALPHA_DROPOUT * a * p
  noise:mul_(a)
  if inplace then return x:mul_(noise):add_(b) end
  return x * noise + b
end
function F.alpha_dropout(x, ...)
  need_tensor('alpha_dropout', x)
  local v = args('alpha_dropout', { 'p', 'training', 'inplace' }, ...)
  local p, training, inplace = v[1] or 0.5, v[2] == true, v[3] == true
  check_p('alpha_dropout', p)
  if not training or p == 0 or x:numel() == 0 then return x end
  if p == 1 then return apply_noise(x, torch.zeros({}, { dtype = x.dtype }), inplace) end
  return alpha_noise(x, torch.empty_like(x):bernoulli_(1 - p), p, inplace)
end

-- channel-wise dropout of a batched input (N, C, *): one draw per (n, c)
local function feature_dropout(fn, x, p, training, inplace)
  if not training or p == 0 or x:numel() == 0 then return x end
  if x:dim() < 2 then bad(fn, 'Feature dropout requires at least 2 dimensions in the input') end
  if p == 1 then return apply_noise(x, torch.zeros({}, { dtype = x.dtype }), inplace) end
  local shape = { x:size(1), x:size(2) }
  for _ = 3, x:dim() do shape[#shape + 1] = 1 end
  local noise = torch.empty(shape, { dtype = x.dtype, device = x.device }):bernoulli_(1 - p)
  noise:div_(1 - p)
  return apply_noise(x, noise, inplace)
end

-- dropout1d / dropout2d / dropout3d(x, p=0.5, training=true, inplace=false): zero whole channels;
-- an unbatched input (one dim fewer) counts as one sample
local function feature_fn(fn, spatial)
  return function(x, ...)
    need_tensor(fn, x)
    local v = args(fn, { 'p', 'training', 'inplace' }, ...)
    local p, training, inplace = v[1] or 0.5, v[2] ~= false, v[3] == true
    check_p(fn, p)
    local nd = x:dim()
    local batched = nd == spatial + 2
    if spatial == 1 then
      if nd ~= 2 and nd ~= 3 then
        bad(fn, ('Expected 2D or 3D input, but received a %dD input. Note that dropout1d exists to provide ' ..
          'channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional batch ' ..
          'dimension (i.e. 2D or 3D inputs).'):format(nd))
      end
    elseif spatial == 2 then
      batched = true -- PyTorch 1.13 reads a 3-D input as (N, C, L)
      if nd ~= 3 and nd ~= 4 then
        warn(('dropout2d: Received a %d-D input to dropout2d, which is deprecated and will result in an error ' ..
          'in a future release.'):format(nd))
      end
    elseif nd ~= 4 and nd ~= 5 then
      warn(('dropout3d: Received a %d-D input to dropout3d, which is deprecated and will result in an error ' ..
        'in a future release.'):format(nd))
      batched = true
    end
    if batched then return feature_dropout(fn, x, p, training, inplace) end
    local r = feature_dropout(fn, x:unsqueeze(1), p, training, inplace)
    if inplace then return x end
    return r:squeeze(1)
  end
end
F.dropout1d = feature_fn('dropout1d', 1)
F.dropout2d = feature_fn('dropout2d', 2)
F.dropout3d = feature_fn('dropout3d', 3)

------------------------------------------------------------------------------ sparse
-- (F.embedding and F.embedding_bag are in lua/nn/sparse.lua)

-- one_hot(t, num_classes=-1): 1-based class indices -> rows of 0/1 (int64)
function F.one_hot(t, num_classes)
  need_tensor('one_hot', t)
  if is_opts(num_classes) then num_classes = num_classes.num_classes end
  return torch.one_hot(t, num_classes or -1)
end

------------------------------------------------------------------------------ distances
-- pairwise_distance(x1, x2, p=2, eps=1e-6, keepdim=false): ||x1 - x2 + eps||_p over the last dim
function F.pairwise_distance(x1, x2, ...)
  need_tensor('pairwise_distance', x1, 'x1')
  need_tensor('pairwise_distance', x2, 'x2')
  local v = args('pairwise_distance', { 'p', 'eps', 'keepdim' }, ...)
  local p, eps = num('pairwise_distance', 'p', v[1], 2), num('pairwise_distance', 'eps', v[2], 1e-6)
  local nd = max(x1:dim(), x2:dim())
  if nd == 0 then return (x1 - x2 + eps):abs() end
  return (x1 - x2 + eps):norm(p, nd, v[3] == true)
end

-- cosine_similarity(x1, x2, dim=2, eps=1e-8): <x1, x2> / (max(||x1||, eps) max(||x2||, eps)) along
-- dim (PyTorch's dim 1). As in PyTorch 1.13 the squared norms are clamped at eps^2 by a clamp
-- that autograd does not see (the gradient is that of the unclamped formula, at the clamped value).
-- the 2-norm along dim (kept) as the root of the sum of squares, that sum at least eps^2 by a clamp
-- autograd does not see (PyTorch 1.13 clamps it in place without recording)
local function clamped_norm(x, dim, eps)
  local s = (x * x):sum(dim, { keepdim = true })
  return (s + (s:clamp_min(eps * eps) - s):detach()):sqrt()
end
-- pdist(x, p=2): torch.pdist (lua/ops/linalg.lua)
F.pdist = require('moontorch.ops.linalg').composed.pdist
function F.cosine_similarity(x1, x2, ...)
  need_tensor('cosine_similarity', x1, 'x1')
  need_tensor('cosine_similarity', x2, 'x2')
  local v = args('cosine_similarity', { 'dim', 'eps' }, ...)
  local dim, eps = v[1] or 2, num('cosine_similarity', 'eps', v[2], 1e-8)
  if not (x1:is_floating_point() or x2:is_floating_point()) then
    bad('cosine_similarity', 'expected common dtype to be floating point, yet common dtype is ' .. tostring(x1.dtype))
  end
  local shape = broadcast_shape('cosine_similarity', x1, x2)
  if not x1:is_floating_point() then x1 = x1:to(x2.dtype) end
  if not x2:is_floating_point() then x2 = x2:to(x1.dtype) end
  x1, x2 = x1:expand(shape), x2:expand(shape)
  -- as PyTorch 1.13: each divided by its norm first, then the sum (SumBackward1)
  return ((x1 / clamped_norm(x1, dim, eps)) * (x2 / clamped_norm(x2, dim, eps))):sum(dim)
end

------------------------------------------------------------------------------ losses
local function reduce(fn, loss, reduction)
  if reduction == 'mean' or reduction == nil then return loss:mean() end
  if reduction == 'sum' then return loss:sum() end
  if reduction == 'none' then return loss end
  bad(fn, ('%s is not a valid value for reduction'):format(tostring(reduction)))
end

local function check_reduction(fn, r)
  if r ~= 'mean' and r ~= 'sum' and r ~= 'none' then
    bad(fn, ('%s is not a valid value for reduction'):format(tostring(r)))
  end
  return r
end

-- the options of a loss: a reduction string, a weight tensor (where the loss takes one) and/or a
-- trailing options table, in PyTorch's positional order `names`
local function loss_args(fn, names, ...)
  local a = ...
  if type(a) == 'string' then -- loss(x, t, 'sum' [, opts])
    local o = select(2, ...)
    local v = args(fn, names, nil, o)
    if v.reduction ~= nil then bad(fn, "got multiple values for argument 'reduction'") end
    v.reduction = a
    return v
  end
  return args(fn, names, ...)
end
-- the reduction: given, or from PyTorch's deprecated size_average / reduce flags (a reduction
-- string in their positional slots counts as the reduction)
local function reduction_of(fn, v)
  local r, sa, rd = v.reduction, v.size_average, v.reduce
  if type(sa) == 'string' then r, sa = sa, nil end
  if type(rd) == 'string' then r, rd = rd, nil end
  if r == nil and (sa ~= nil or rd ~= nil) then
    if rd == false then r = 'none' elseif sa == false then r = 'sum' else r = 'mean' end
  end
  return check_reduction(fn, r or 'mean')
end

local function warn_target_size(fn, input, target)
  if not same_size(input, target) then
    warn(('Using a target size (%s) that is different to the input size (%s). This will likely lead to ' ..
      'incorrect results due to broadcasting. Please ensure they have the same size.')
      :format(torch_size(target), torch_size(input)))
  end
end

local pointwise_names = { 'size_average', 'reduce', 'reduction' }

-- a loss made of one per-element loss, as one node named as PyTorch's: elem(input, target, a) the
-- loss of each element (a: the loss's parameter), grad(input, target, a) its derivatives in input
-- and target (same shape as the loss; target's may be nil); w: weights of the elements or nil.
-- Where a weight needs a gradient itself, the loss is left to its ops (PyTorch has no derivative
-- for a loss's weight either).
local function loss_node(name, elem, grad)
  local fn = node(name, function(input, target, r, a, w)
    local loss = elem(input, target, a)
    if w ~= nil then loss = loss * w end
    return reduce(name, loss, r)
  end, function(g, input, target, r, a, w)
    local di, dt = grad(input, target, a)
    local gl = g
    if r ~= 'none' then
      gl = g:expand(di:size())
      if r == 'mean' then gl = gl / di:numel() end
    end
    if w ~= nil then gl = gl * w end
    local gi, gt = gl * di, dt ~= nil and gl * dt or nil
    if not same_size(gi, input) then gi = gi:sum_to_size(input:size()) end
    if gt ~= nil and not same_size(gt, target) then gt = gt:sum_to_size(target:size()) end
    return gi, gt
  end)
  return function(input, target, r, a, w)
    if is_tensor(w) and w.requires_grad or is_tensor(a) and a.requires_grad then
      local loss = elem(input, target, a)
      if w ~= nil then loss = loss * w end
      return reduce(name, loss, r)
    end
    return fn(input, target, r, a, w)
  end
end
local mse_loss = loss_node('MseLossBackward0', function(i, t) return (i - t):square() end,
  function(i, t) local d = (i - t) * 2 return d, -d end)
local smooth_l1_loss = loss_node('SmoothL1LossBackward0', function(i, t, beta)
  local d = (i - t):abs()
  return beta == 0 and d or torch.where(d:lt(beta), d:square() * (0.5 / beta), d - 0.5 * beta)
end, function(i, t, beta)
  local d = i - t
  local gd = beta == 0 and d:sign() or torch.where(d:abs():lt(beta), d / beta, d:sign())
  return gd, -gd
end)
local huber_loss = loss_node('HuberLossBackward0', function(i, t, delta)
  local d = (i - t):abs()
  return torch.where(d:lt(delta), d:square() * 0.5, (d - 0.5 * delta) * delta)
end, function(i, t, delta)
  local d = i - t
  local gd = torch.where(d:abs():lt(delta), d, d:sign() * delta)
  return gd, -gd
end)
-- PyTorch clamps the logs at -100 and the derivative's denominator at 1e-12
local bce_loss = loss_node('BinaryCrossEntropyBackward0', function(i, t)
  return -(t * i:log():clamp_min(-100) + (1 - t) * (1 - i):log():clamp_min(-100))
end, function(i, t)
  return (i - t) / ((1 - i) * i):clamp_min(1e-12), (1 - i):log():clamp_min(-100) - i:log():clamp_min(-100)
end)
-- (1 - t) x + lw (log(1 + exp(-|x|)) + max(-x, 0)), lw = 1 + (pos_weight - 1) t
local bce_logits_loss = loss_node('BinaryCrossEntropyWithLogitsBackward0', function(x, t, pw)
  local tail = torch.softplus_unit(-x:abs()) + (-x):clamp_min(0)
  if pw ~= nil then tail = tail * ((pw - 1) * t + 1) end
  return (1 - t) * x + tail
end, function(x, t, pw)
  if pw == nil then return x:sigmoid() - t, -x end
  local lw = (pw - 1) * t + 1
  return (1 - t) + lw * (x:sigmoid() - 1), -x + (pw - 1) * (torch.softplus_unit(-x:abs()) + (-x):clamp_min(0))
end)
local soft_margin = loss_node('SoftMarginLossBackward0', function(i, t) return torch.softplus_unit(-t * i) end,
  function(i, t)
    local s = (-t * i):sigmoid()
    return -t * s, -i * s
  end)

-- l1_loss(input, target, reduction='mean'), mse_loss
function F.l1_loss(input, target, ...)
  need_tensor('l1_loss', input); need_tensor('l1_loss', target, 'target')
  local r = reduction_of('l1_loss', loss_args('l1_loss', pointwise_names, ...))
  warn_target_size('l1_loss', input, target)
  return reduce('l1_loss', (input - target):abs(), r)
end
function F.mse_loss(input, target, ...)
  need_tensor('mse_loss', input); need_tensor('mse_loss', target, 'target')
  local r = reduction_of('mse_loss', loss_args('mse_loss', pointwise_names, ...))
  warn_target_size('mse_loss', input, target)
  return mse_loss(input, target, r)
end

-- smooth_l1_loss(input, target, reduction='mean', beta=1)
function F.smooth_l1_loss(input, target, ...)
  need_tensor('smooth_l1_loss', input); need_tensor('smooth_l1_loss', target, 'target')
  local v = loss_args('smooth_l1_loss', { 'size_average', 'reduce', 'reduction', 'beta' }, ...)
  local r, beta = reduction_of('smooth_l1_loss', v), num('smooth_l1_loss', 'beta', v[4], 1.0)
  if beta < 0 then bad('smooth_l1_loss', 'smooth_l1_loss does not support negative values for beta.') end
  warn_target_size('smooth_l1_loss', input, target)
  return smooth_l1_loss(input, target, r, beta)
end

-- huber_loss(input, target, reduction='mean', delta=1)
function F.huber_loss(input, target, ...)
  need_tensor('huber_loss', input); need_tensor('huber_loss', target, 'target')
  local v = loss_args('huber_loss', { 'reduction', 'delta' }, ...)
  local r, delta = reduction_of('huber_loss', v), num('huber_loss', 'delta', v[2], 1.0)
  if delta <= 0 then bad('huber_loss', 'huber_loss does not support non-positive values for delta.') end
  warn_target_size('huber_loss', input, target)
  return huber_loss(input, target, r, delta)
end

-- the class weights shaped to broadcast against an input whose classes are along cdim
local function class_weight(weight, input, cdim)
  if cdim == 1 then return weight end
  local shape = { 1, weight:numel() }
  for _ = 3, input:dim() do shape[#shape + 1] = 1 end
  return weight:reshape(shape)
end

-- nll_loss(input, target, weight=nil, {ignore_index=-100, reduction='mean'}): input (C), (N, C) or
-- (N, C, d1, ...) of log-probabilities, target of 1-based classes: (), (N) or (N, d1, ...)
local loss_ops = require 'moontorch.ops.loss'
local nll_names = { 'weight', 'size_average', 'ignore_index', 'reduce', 'reduction' }
local function nll(fn, input, target, weight, ignore, reduction)
  local nd = input:dim()
  if nd < 1 then bad(fn, 'input tensor should be 1D or more') end
  if target.dtype ~= torch.int64 then
    bad(fn, ('expected scalar type Long but found %s'):format(require('moontorch.dtype').scalar_type(target.dtype)))
  end
  local c = nd == 1 and input:size(1) or input:size(2)
  if nd <= 2 then
    if target:dim() > 1 then bad(fn, '0D or 1D target tensor expected, multi-target not supported') end
    local n = nd == 1 and 1 or input:size(1)
    local tn = target:dim() == 0 and 1 or target:size(1)
    if nd == 2 and tn ~= n then
      bad(fn, ('Expected input batch_size (%d) to match target batch_size (%d).'):format(n, tn))
    end
    if nd == 1 and target:dim() ~= 0 and tn ~= 1 then
      bad(fn, ('Expected input batch_size (1) to match target batch_size (%d).'):format(tn))
    end
  else
    local ok = target:dim() == nd - 1 and target:size(1) == input:size(1)
    if ok then for d = 3, nd do if target:size(d - 1) ~= input:size(d) then ok = false end end end
    if not ok then
      local want = { input:size(1) }
      for d = 3, nd do want[#want + 1] = input:size(d) end
      bad(fn, ('Expected target size [%s], got %s'):format(table.concat(want, ', '), size_str(target)))
    end
  end
  if weight ~= nil then
    need_tensor(fn, weight, 'weight')
    if weight:numel() ~= c then
      bad(fn, ('weight tensor should be defined either for all %d classes or no classes but got weight tensor of shape: %s')
        :format(c, size_str(weight)))
    end
  end
  -- (C) and (N, C) in float32 or float64: the core's nll_loss (one kernel each way)
  local dt = input.dtype
  if nd <= 2 and (dt == torch.float32 or dt == torch.float64) and (weight == nil or weight.dtype == dt) then
    return loss_ops.nll_for('nn.functional.' .. fn, input, target, weight, ignore, reduction)
  end
  -- classes last, flattened: x (M, C), t (M)
  local x, t = input, target:reshape(-1)
  if nd == 1 then
    x = input:unsqueeze(1)
  elseif nd > 2 then
    local perm = { 1 }
    for d = 3, nd do perm[#perm + 1] = d end
    perm[#perm + 1] = 2
    x = input:permute(perm):reshape(-1, c)
  end
  local valid = t:ne(ignore)
  local safe = torch.where(valid, t, torch.ones_like(t))
  if safe:numel() > 0 and not safe.is_meta then -- (a meta tensor has no values to check)
    local lo, hi = safe:min():item(), safe:max():item()
    if lo < 1 or hi > c then
      bad(fn, ('Target %d is out of bounds.%s'):format(lo < 1 and lo or hi,
        lo == 0 and " (positions count from 1 here: PyTorch's 0 is 1)" or ''))
    end
  end
  local loss = -x:gather(2, safe:unsqueeze(2)):squeeze(2)
  local w = valid:to(x.dtype)
  if weight ~= nil then w = w * weight:to(x.dtype):index_select(1, safe) end
  loss = loss * w
  if reduction == 'none' then return loss:reshape(target:size()) end
  if reduction == 'sum' then return loss:sum() end
  return loss:sum() / w:sum()
end
function F.nll_loss(input, target, ...)
  need_tensor('nll_loss', input); need_tensor('nll_loss', target, 'target')
  local v = loss_args('nll_loss', nll_names, ...)
  local ignore = v[3] == nil and -100 or v[3]
  return nll('nll_loss', input, target, v[1], ignore, reduction_of('nll_loss', v))
end

-- cross_entropy(input, target, weight=nil, {ignore_index=-100, reduction='mean', label_smoothing=0}):
-- target of 1-based class indices (int64), or of class probabilities (input's shape)
local ce_names = { 'weight', 'size_average', 'ignore_index', 'reduce', 'reduction', 'label_smoothing' }
function F.cross_entropy(input, target, ...)
  need_tensor('cross_entropy', input); need_tensor('cross_entropy', target, 'target')
  local v = loss_args('cross_entropy', ce_names, ...)
  local weight, reduction = v[1], reduction_of('cross_entropy', v)
  local ignore = v[3] == nil and -100 or v[3]
  local ls = num('cross_entropy', 'label_smoothing', v[6], 0.0)
  if ls < 0 or ls > 1 then bad('cross_entropy', ('label_smoothing must be between 0.0 and 1.0. Got: %s'):format(ls)) end
  if input:dim() == 0 then bad('cross_entropy', 'input tensor should be 1D or more') end
  local cdim = input:dim() == 1 and 1 or 2
  local c = input:size(cdim)
  local logp = input:log_softmax(cdim)
  if weight ~= nil then need_tensor('cross_entropy', weight, 'weight') end
  if target:is_floating_point() then
    -- class probabilities
    if not same_size(input, target) then
      if target:dim() == input:dim() - 1 then
        -- the shape of class indices, in a float tensor: in Lua torch.tensor({1, 4}) is float32
        -- (PyTorch's torch.tensor([1, 4]) is int64), so say how to make indices
        bad('cross_entropy', ('expected scalar type Long but found %s: class indices are int64 '
          .. "(torch.tensor({...}, {dtype=torch.int64}) or target:long()); a %s target of size %s would be "
          .. 'class probabilities of the input\'s size %s'):format(
            require('moontorch.dtype').scalar_type(target.dtype), tostring(target.dtype),
            size_str(target), size_str(input)))
      end
      bad('cross_entropy', ('Expected input and target of the same size for class probabilities, got %s and %s')
        :format(size_str(input), size_str(target)))
    end
    local tgt = ls > 0 and target * (1 - ls) + ls / c or target
    local per = logp * tgt
    if weight ~= nil then per = per * class_weight(weight, input, cdim) end
    if reduction == 'none' then return -per:sum(cdim) end
    if reduction == 'sum' then return -per:sum() end
    return -per:sum() / (input:numel() / c)
  end
  local loss = nll('cross_entropy', logp, target, weight, ignore, reduction)
  if ls == 0 then return loss end
  -- label smoothing with class indices: mix in the (weighted) mean over classes of -log p
  local per_class = weight ~= nil and logp * class_weight(weight, input, cdim) or logp
  local valid = target:ne(ignore)
  local smooth = -per_class:sum(cdim) * valid:to(logp.dtype)
  local s
  if reduction == 'none' then
    s = smooth
  elseif reduction == 'sum' then
    s = smooth:sum()
  elseif weight ~= nil then
    local safe = torch.where(valid, target, torch.ones_like(target)):reshape(-1)
    s = smooth:sum() / (weight:index_select(1, safe) * valid:reshape(-1):to(weight.dtype)):sum()
  else
    s = smooth:sum() / valid:sum()
  end
  return loss * (1 - ls) + s * (ls / c)
end

-- binary_cross_entropy(input, target, weight=nil, {reduction=}): input probabilities in [0, 1]
function F.binary_cross_entropy(input, target, ...)
  need_tensor('binary_cross_entropy', input); need_tensor('binary_cross_entropy', target, 'target')
  local v = loss_args('binary_cross_entropy', { 'weight', 'size_average', 'reduce', 'reduction' }, ...)
  local r = reduction_of('binary_cross_entropy', v)
  if not same_size(input, target) then
    bad('binary_cross_entropy', ('Using a target size (%s) that is different to the input size (%s) is deprecated. ' ..
      'Please ensure they have the same size.'):format(torch_size(target), torch_size(input)))
  end
  if input:numel() > 0 and (input:lt(0):any() or input:gt(1):any()) then
    bad('binary_cross_entropy', 'all elements of input should be between 0 and 1')
  end
  return bce_loss(input, target, r, nil, v[1])
end

-- binary_cross_entropy_with_logits(input, target, weight=nil, {reduction=, pos_weight=})
function F.binary_cross_entropy_with_logits(input, target, ...)
  local fn = 'binary_cross_entropy_with_logits'
  need_tensor(fn, input); need_tensor(fn, target, 'target')
  local v = loss_args(fn, { 'weight', 'size_average', 'reduce', 'reduction', 'pos_weight' }, ...)
  local r = reduction_of(fn, v)
  if not same_size(input, target) then
    bad(fn, ('Target size (%s) must be the same as input size (%s)'):format(torch_size(target), torch_size(input)))
  end
  return bce_logits_loss(input, target, r, v[5], v[1])
end

-- kl_div(input, target, reduction='mean', log_target=false): input holds log-probabilities;
-- reduction 'batchmean' divides the sum by the batch size (the mathematically right mean)
function F.kl_div(input, target, ...)
  need_tensor('kl_div', input); need_tensor('kl_div', target, 'target')
  local v = loss_args('kl_div', { 'size_average', 'reduce', 'reduction', 'log_target' }, ...)
  local r = v.reduction
  if type(v.size_average) == 'string' or type(v.reduce) == 'string' or (r == nil and (v.size_average ~= nil or v.reduce ~= nil)) then
    r = reduction_of('kl_div', v)
  end
  r = r or 'mean'
  if r ~= 'batchmean' then check_reduction('kl_div', r) end
  if r == 'mean' then
    warn("reduction: 'mean' divides the total loss by both the batch size and the support size." ..
      "'batchmean' divides only by the batch size, and aligns with the KL div math definition." ..
      "'mean' will be changed to behave the same as 'batchmean' in the next major release.")
  end
  local loss
  if v[4] then loss = target:exp() * (target - input)
  else loss = torch.xlogy(target, target) - target * input end
  if r == 'batchmean' then
    if input:dim() == 0 then return loss:sum() end
    return loss:sum() / input:size(1)
  end
  return reduce('kl_div', loss, r)
end

-- poisson_nll_loss(input, target, log_input=true, full=false, {eps=1e-8, reduction=})
function F.poisson_nll_loss(input, target, ...)
  local fn = 'poisson_nll_loss'
  need_tensor(fn, input); need_tensor(fn, target, 'target')
  local v = args(fn, { 'log_input', 'full', 'size_average', 'eps', 'reduce', 'reduction' }, ...)
  local r = reduction_of(fn, v)
  local eps = num(fn, 'eps', v[4], 1e-8)
  local loss
  if v[1] == false then loss = input - target * (input + eps):log()
  else loss = input:exp() - target * input end
  if v[2] then
    -- Stirling's approximation of log(target!), for targets above 1
    local stirling = target * target:log() - target + (target * (2 * pi)):log() * 0.5
    loss = loss + torch.where(target:gt(1), stirling, torch.zeros_like(stirling))
  end
  return reduce(fn, loss, r)
end

-- gaussian_nll_loss(input, target, var, full=false, eps=1e-6, reduction='mean')
function F.gaussian_nll_loss(input, target, var, ...)
  local fn = 'gaussian_nll_loss'
  need_tensor(fn, input); need_tensor(fn, target, 'target'); need_tensor(fn, var, 'var')
  local v = args(fn, { 'full', 'eps', 'reduction' }, ...)
  local eps = num(fn, 'eps', v[2], 1e-6)
  if not same_size(var, input) then
    local nd = input:dim()
    local lead_same = var:dim() == nd - 1
    if lead_same then for d = 1, nd - 1 do if var:size(d) ~= input:size(d) then lead_same = false end end end
    local last_one = var:dim() == nd and nd > 0 and var:size(nd) == 1
    if last_one then for d = 1, nd - 1 do if var:size(d) ~= input:size(d) then last_one = false end end end
    if lead_same then var = var:unsqueeze(-1)
    elseif not last_one then bad(fn, 'var is of incorrect size') end
  end
  local r = v[3] or 'mean'
  if r ~= 'none' and r ~= 'mean' and r ~= 'sum' then bad(fn, tostring(r) .. ' is not valid') end
  if var:lt(0):any() then bad(fn, 'var has negative entry/entries') end
  -- clamped at eps, the clamp invisible to autograd (PyTorch clamps a clone under no_grad)
  var = var + (var:clamp_min(eps) - var):detach()
  local loss = (var:log() + (input - target):square() / var) * 0.5
  if v[1] then loss = loss + 0.5 * log(2 * pi) end
  return reduce(fn, loss, r)
end

-- soft_margin_loss(input, target, reduction='mean'): log(1 + exp(-target * input))
function F.soft_margin_loss(input, target, ...)
  need_tensor('soft_margin_loss', input); need_tensor('soft_margin_loss', target, 'target')
  local r = reduction_of('soft_margin_loss', loss_args('soft_margin_loss', { 'size_average', 'reduce', 'reduction' }, ...))
  return soft_margin(input, target, r)
end

-- multilabel_soft_margin_loss(input (N, C), target (N, C) of 0/1, weight=nil, reduction='mean')
function F.multilabel_soft_margin_loss(input, target, ...)
  local fn = 'multilabel_soft_margin_loss'
  need_tensor(fn, input); need_tensor(fn, target, 'target')
  local v = loss_args(fn, { 'weight', 'size_average', 'reduce', 'reduction' }, ...)
  local r = reduction_of(fn, v)
  local loss = -(target * F.logsigmoid(input) + (1 - target) * F.logsigmoid(-input))
  if v[1] ~= nil then loss = loss * v[1] end
  loss = loss:sum(input:dim()) / input:size(input:dim())
  return reduce(fn, loss, r)
end

-- margin_ranking_loss(x1, x2, target, margin=0, reduction='mean'): max(0, -target (x1 - x2) + margin)
function F.margin_ranking_loss(x1, x2, target, ...)
  local fn = 'margin_ranking_loss'
  need_tensor(fn, x1, 'input1'); need_tensor(fn, x2, 'input2'); need_tensor(fn, target, 'target')
  local v = loss_args(fn, { 'margin', 'size_average', 'reduce', 'reduction' }, ...)
  local r, margin = reduction_of(fn, v), num(fn, 'margin', v[1], 0)
  if x1:dim() ~= x2:dim() or x1:dim() ~= target:dim() then
    bad(fn, ('All input tensors should have same dimension but got sizes: input1: %s, input2: %s, target: %s ')
      :format(torch_size(x1), torch_size(x2), torch_size(target)))
  end
  return reduce(fn, (-target * (x1 - x2) + margin):clamp_min(0), r)
end

-- hinge_embedding_loss(input, target of 1/-1, margin=1, reduction='mean')
function F.hinge_embedding_loss(input, target, ...)
  local fn = 'hinge_embedding_loss'
  need_tensor(fn, input); need_tensor(fn, target, 'target')
  local v = loss_args(fn, { 'margin', 'size_average', 'reduce', 'reduction' }, ...)
  local r, margin = reduction_of(fn, v), num(fn, 'margin', v[1], 1.0)
  local zero = torch.zeros_like(input)
  local out_margin = torch.where(target:ne(1), (margin - input):clamp_min(0), zero)
  local out_self = torch.where(target:ne(-1), input, zero)
  return reduce(fn, out_margin + out_self, r)
end

-- cosine_embedding_loss(x1, x2, target of 1/-1, margin=0, reduction='mean')
function F.cosine_embedding_loss(x1, x2, target, ...)
  local fn = 'cosine_embedding_loss'
  need_tensor(fn, x1, 'input1'); need_tensor(fn, x2, 'input2'); need_tensor(fn, target, 'target')
  local v = loss_args(fn, { 'margin', 'size_average', 'reduce', 'reduction' }, ...)
  local r, margin = reduction_of(fn, v), num(fn, 'margin', v[1], 0)
  local d = x1:dim()
  if d ~= 1 and d ~= 2 then bad(fn, ('1D target tensor expects 2D input tensors, but found inputs with sizes %s and %s.')
    :format(size_str(x1), size_str(x2))) end
  local EPS = 1e-12
  local prod = (x1 * x2):sum(d)
  local m1 = (x1 * x1):sum(d) + EPS
  local m2 = (x2 * x2):sum(d) + EPS
  local cos = prod / (m1 * m2):sqrt()
  local zero = torch.zeros_like(cos)
  local pos = torch.where(target:eq(1), 1 - cos, zero)
  local neg = torch.where(target:eq(-1), (cos - margin):clamp_min(0), zero)
  return reduce(fn, pos + neg, r)
end

-- triplet_margin_loss(anchor, positive, negative, margin=1, p=2, eps=1e-6, swap=false, reduction='mean')
function F.triplet_margin_loss(anchor, positive, negative, ...)
  local fn = 'triplet_margin_loss'
  need_tensor(fn, anchor, 'anchor'); need_tensor(fn, positive, 'positive'); need_tensor(fn, negative, 'negative')
  local v = loss_args(fn, { 'margin', 'p', 'eps', 'swap', 'size_average', 'reduce', 'reduction' }, ...)
  local r = reduction_of(fn, v)
  local margin, p, eps = num(fn, 'margin', v[1], 1.0), num(fn, 'p', v[2], 2), num(fn, 'eps', v[3], 1e-6)
  if anchor:dim() ~= positive:dim() or anchor:dim() ~= negative:dim() then
    bad(fn, ('The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: anchor %dD, positive %dD, and negative %dD inputs')
      :format(anchor:dim(), positive:dim(), negative:dim()))
  end
  local d_pos = F.pairwise_distance(anchor, positive, p, eps)
  local d_neg = F.pairwise_distance(anchor, negative, p, eps)
  if v[4] then d_neg = torch.minimum(d_neg, F.pairwise_distance(positive, negative, p, eps)) end
  return reduce(fn, (d_pos - d_neg + margin):clamp_min(0), r)
end

------------------------------------------------------------------------------ padding
-- the source position (0-based) of output position j (0-based from the padded start) per mode
local function src_reflect(j, n)
  if j < 0 then return -j end
  if j >= n then return 2 * (n - 1) - j end
  return j
end
local function src_replicate(j, n)
  if j < 0 then return 0 end
  if j >= n then return n - 1 end
  return j
end
local function src_circular(j, n) return j % n end
local pad_src = { reflect = src_reflect, replicate = src_replicate, circular = src_circular }

-- issue 12, pooling: reflect / replicate padding through the core's op (core/ops/pool.c)
local ffi = require 'ffi'
local pad_before, pad_after = ffi.new('int64_t[3]'), ffi.new('int64_t[3]')
local function pad_op(x, pad, npad, mode)
  for k = 1, npad do -- natural dim order: the pair of dim nd - npad + k is pad's pair npad - k + 1
    local i = npad - k + 1
    pad_before[k - 1], pad_after[k - 1] = pad[2 * i - 1], pad[2 * i]
  end
  local C = core.C
  if C.mt_pad(x, npad, mode == 'reflect' and C.MT_RS_REFLECT or C.MT_RS_REPLICATE, pad_before, pad_after,
    T.outp) ~= 0 then core.raise_last() end
  return T.wrap(T.outp[0])
end

-- pad(x, {left, right [, top, bottom [, front, back]]}, mode='constant', value=0): pads the last
-- dims, the last dim first; negative amounts crop. Modes: constant, reflect, replicate, circular.
-- constant padding (negative amounts crop), one node named as PyTorch's: its gradient is the
-- gradient padded by the negated amounts
local function pad_constant(x, pad, value)
  local npad, nd = #pad / 2, x:dim()
  local out = x
  for i = 1, npad do
    local d = nd - i + 1
    local before, after = pad[2 * i - 1], pad[2 * i]
    local n = out:size(d)
    if before < 0 or after < 0 then
      local lo, hi = before < 0 and -before or 0, after < 0 and -after or 0
      if n - lo - hi < 0 then
        bad('pad', ('The input size %d, plus negative padding %d and %d resulted in a negative output size, ' ..
          'which is invalid. Check dimension %d of your input.'):format(n, before, after, d))
      end
      out = out:narrow(d, lo + 1, n - lo - hi)
      before, after = before > 0 and before or 0, after > 0 and after or 0
    end
    if before > 0 or after > 0 then
      local parts = {}
      local s = out:size()
      if before > 0 then
        s[d] = before
        parts[#parts + 1] = torch.full(s, value, { dtype = out.dtype, device = out.device })
      end
      parts[#parts + 1] = out
      if after > 0 then
        s[d] = after
        parts[#parts + 1] = torch.full(s, value, { dtype = out.dtype, device = out.device })
      end
      out = torch.cat(parts, d)
    end
  end
  return out
end
local constant_pad
constant_pad = node('ConstantPadNdBackward0', pad_constant, function(g, _, pad)
  local neg = {}
  for i = 1, #pad do neg[i] = -pad[i] end
  return constant_pad(g, neg, 0)
end)
function F.pad(x, pad, ...)
  need_tensor('pad', x)
  local v = args('pad', { 'mode', 'value' }, ...)
  local mode, value = v[1] or 'constant', v[2]
  if type(pad) ~= 'table' or #pad % 2 ~= 0 then bad('pad', 'Padding length must be divisible by 2') end
  for i = 1, #pad do
    if type(pad[i]) ~= 'number' or pad[i] % 1 ~= 0 then bad('pad', 'padding amounts must be integers') end
  end
  local npad, nd = #pad / 2, x:dim()
  if npad > nd then bad('pad', 'Padding length too large') end
  local out = x
  if mode == 'constant' then
    return constant_pad(x, pad, num('pad', 'value', value, 0))
  end
  local src = pad_src[mode]
  if not src then bad('pad', ('Unrecognised padding mode %s'):format(tostring(mode))) end
  if value ~= nil and value ~= 0 then bad('pad', ('Padding mode "%s" doesn\'t take in value argument'):format(mode)) end
  if npad > 3 or (nd ~= npad + 1 and nd ~= npad + 2) then -- PyTorch 1.13's rule and message
    bad('pad', 'Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now')
  end
  -- reflect and replicate of float tensors: the core's op (ReflectionPad2DBackward0, ... as in PyTorch)
  if (mode == 'reflect' or mode == 'replicate') and (x.dtype == torch.float32 or x.dtype == torch.float64) then
    local ok = true
    for i = 1, npad do
      local n, before, after = x:size(nd - i + 1), pad[2 * i - 1], pad[2 * i]
      if mode == 'reflect' and (before >= n or after >= n) then ok = false end
      if n + before + after < 1 or n == 0 then ok = false end
    end
    if ok and npad <= 3 then return pad_op(x, pad, npad, mode) end
  end
  for i = 1, npad do
    local d = nd - i + 1
    local before, after = pad[2 * i - 1], pad[2 * i]
    local n = out:size(d)
    if mode == 'reflect' and (before >= n or after >= n) then
      bad('pad', ('Argument #4: Padding size should be less than the corresponding input dimension, but got: ' ..
        'padding (%d, %d) at dimension %d of input %s'):format(before, after, d, size_str(x)))
    end
    if mode == 'circular' and (before > n or after > n) then
      bad('pad', 'Padding value causes wrapping around more than once.')
    end
    local m = n + before + after
    if m < 0 or (m == 0 and n > 0 and mode ~= 'constant') then
      bad('pad', ('input size %d with padding (%d, %d) at dimension %d gives an output size %d'):format(n, before, after, d, m))
    end
    local idx = {}
    for j = 0, m - 1 do idx[j + 1] = src(j - before, n) + 1 end
    out = out:index_select(d, torch.tensor(idx, { dtype = torch.int64 }):to(out.device))
  end
  return out
end

------------------------------------------------------------------------------ batch_norm
-- F.batch_norm is defined with the BatchNorm layers (lua/nn/layers.lua) and set by moontorch.nn

------------------------------------------------------------------------------ issue 12, the modules part
-- instance_norm, local_response_norm, embedding, embedding_bag, feature_alpha_dropout,
-- multilabel_margin_loss, multi_margin_loss, triplet_margin_with_distance_loss and ctc_loss are
-- written beside their modules
for _, name in ipairs({ 'normalization', 'sparse', 'loss', 'misc' }) do require('moontorch.nn.' .. name).functional(F) end

return F
