-- nn.functional: the stateless layer functions, thin over the tensor ops (each differentiable
-- through the autograd engine). Dimensions are 1-based; class targets (nll_loss, cross_entropy)
-- are 1-based, ignore_index too (its default -100 stays -100). Optional arguments may be given
-- positionally, as in PyTorch, or in a trailing options table.
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local fail = core.fail
local is_tensor = T.is_tensor
local type, math, tostring = type, math, tostring

local F = {}

local function need_tensor(fn, x, what)
  if not is_tensor(x) then
    fail('nn.functional.' .. fn, ('%s must be a tensor (got %s)'):format(what or 'input', type(x)))
  end
end

-- opts(a, key, default): `a` is either the positional value or an options table
local function optv(a, key, default)
  if type(a) == 'table' and not is_tensor(a) then
    local v = a[key]
    if v == nil then return default end
    return v
  end
  if a == nil then return default end
  return a
end

------------------------------------------------------------------------------ activations
function F.relu(x, inplace)
  inplace = optv(inplace, 'inplace', false)
  if inplace then return x:relu_() end
  return x:relu()
end
function F.relu_(x) return x:relu_() end

function F.leaky_relu(x, negative_slope, inplace)
  if type(negative_slope) == 'table' then
    inplace = negative_slope.inplace
    negative_slope = negative_slope.negative_slope
  end
  return torch.leaky_relu(x, negative_slope or 0.01, inplace)
end
function F.leaky_relu_(x, negative_slope) return torch.leaky_relu(x, negative_slope or 0.01, true) end

function F.elu(x, alpha, inplace)
  if type(alpha) == 'table' then inplace, alpha = alpha.inplace, alpha.alpha end
  return torch.elu(x, alpha or 1.0, inplace)
end
function F.hardtanh(x, min_val, max_val, inplace)
  if type(min_val) == 'table' then
    local o = min_val
    min_val, max_val, inplace = o.min_val, o.max_val, o.inplace
  end
  return torch.hardtanh(x, min_val or -1, max_val or 1, inplace)
end
function F.relu6(x, inplace) return F.hardtanh(x, 0, 6, optv(inplace, 'inplace', false)) end
function F.threshold(x, threshold, value, inplace) return torch.threshold(x, threshold, value, inplace) end
function F.sigmoid(x) return x:sigmoid() end
function F.tanh(x) return x:tanh() end
function F.silu(x, inplace)
  if optv(inplace, 'inplace', false) then return x:silu_() end
  return x:silu()
end
function F.gelu(x, approximate)
  return x:gelu({ approximate = optv(approximate, 'approximate', 'none') })
end
-- softplus(x, beta=1, threshold=20): log(1 + exp(beta x)) / beta, linear above threshold
function F.softplus(x, beta, threshold)
  if type(beta) == 'table' then beta, threshold = beta.beta, beta.threshold end
  beta, threshold = beta or 1, threshold or 20
  local bx = x * beta
  local soft = torch.softplus_unit(bx)
  if beta ~= 1 then soft = soft / beta end
  return torch.where(bx:gt(threshold), x, soft)
end

local function dim_arg(fn, x, dim, opts)
  if type(dim) == 'table' then opts, dim = dim, dim.dim end
  if dim == nil then
    -- PyTorch's implicit choice (deprecated there): 1 for 0-D, 1-D and 3-D inputs, else 2
    local nd = x:dim()
    dim = (nd == 0 or nd == 1 or nd == 3) and 1 or 2
  end
  return dim, opts
end

function F.softmax(x, dim, opts)
  need_tensor('softmax', x)
  local d, o = dim_arg('softmax', x, dim, opts)
  if o and o.dtype then return x:softmax(d, { dtype = o.dtype }) end
  return x:softmax(d)
end
function F.log_softmax(x, dim, opts)
  need_tensor('log_softmax', x)
  local d, o = dim_arg('log_softmax', x, dim, opts)
  if o and o.dtype then return x:log_softmax(d, { dtype = o.dtype }) end
  return x:log_softmax(d)
end
function F.softmin(x, dim, opts) return F.softmax(-x, dim, opts) end

------------------------------------------------------------------------------ linear
-- linear(input, weight, bias): input @ weight^T + bias; weight is (out_features, in_features)
function F.linear(input, weight, bias)
  need_tensor('linear', input)
  need_tensor('linear', weight, 'weight')
  if input:dim() == 2 and bias ~= nil then
    return torch.addmm(bias, input, weight:t())
  end
  local out = input:matmul(weight:t())
  if bias ~= nil then out = out + bias end
  return out
end

-- bilinear(x1, x2, weight, bias): y_k = x1^T W_k x2 + b_k
function F.bilinear(x1, x2, weight, bias)
  local y = torch.einsum and torch.einsum('bi,kij,bj->bk', x1, weight, x2)
  if not y then
    local k = weight:size(1)
    local parts = {}
    for i = 1, k do parts[i] = (x1:matmul(weight[i]) * x2):sum(-1, { keepdim = true }) end
    y = torch.cat(parts, -1)
  end
  if bias ~= nil then y = y + bias end
  return y
end

------------------------------------------------------------------------------ dropout
-- dropout(x, p=0.5, training=true, inplace=false): x * bernoulli(1 - p) / (1 - p)
function F.dropout(x, p, training, inplace)
  if type(p) == 'table' then
    local o = p
    p, training, inplace = o.p, o.training, o.inplace
  end
  p = p or 0.5
  if training == nil then training = true end
  if type(p) ~= 'number' or p < 0 or p > 1 then
    fail('nn.functional.dropout', ('dropout probability has to be between 0 and 1, but got %s'):format(tostring(p)))
  end
  if not training or p == 0 then return x end
  if p == 1 then
    if inplace then return x:zero_() end
    return x * 0
  end
  local mask = torch.empty_like(x):bernoulli_(1 - p)
  mask:div_(1 - p)
  if inplace then return x:mul_(mask) end
  return x * mask
end

------------------------------------------------------------------------------ losses
local function reduce(fn, loss, reduction)
  reduction = reduction or 'mean'
  if reduction == 'mean' then return loss:mean() end
  if reduction == 'sum' then return loss:sum() end
  if reduction == 'none' then return loss end
  fail('nn.functional.' .. fn, ('%s is not a valid value for reduction'):format(tostring(reduction)))
end
local function reduction_of(r) return optv(r, 'reduction', 'mean') end

function F.mse_loss(input, target, reduction)
  need_tensor('mse_loss', input); need_tensor('mse_loss', target, 'target')
  return reduce('mse_loss', (input - target):square(), reduction_of(reduction))
end
function F.l1_loss(input, target, reduction)
  need_tensor('l1_loss', input); need_tensor('l1_loss', target, 'target')
  return reduce('l1_loss', (input - target):abs(), reduction_of(reduction))
end
function F.smooth_l1_loss(input, target, reduction, beta)
  if type(reduction) == 'table' then beta, reduction = reduction.beta, reduction.reduction end
  beta = beta or 1.0
  local d = (input - target):abs()
  local loss
  if beta == 0 then loss = d
  else loss = torch.where(d:lt(beta), d:square() * (0.5 / beta), d - 0.5 * beta) end
  return reduce('smooth_l1_loss', loss, reduction or 'mean')
end

-- nll_loss(input (N, C) or (C,), target (N,) of 1-based classes, {weight=, ignore_index=-100, reduction=})
function F.nll_loss(input, target, opts)
  need_tensor('nll_loss', input); need_tensor('nll_loss', target, 'target')
  opts = type(opts) == 'table' and opts or {}
  local weight, ignore, reduction = opts.weight, opts.ignore_index or -100, opts.reduction or 'mean'
  local x, t = input, target
  if x:dim() == 1 then x = x:unsqueeze(1); t = t:reshape(1) end
  if x:dim() ~= 2 then
    -- (N, C, d1, ...): move classes last and flatten
    local c = x:size(2)
    local perm = { 1 }
    for d = 3, x:dim() do perm[#perm + 1] = d end
    perm[#perm + 1] = 2
    x = x:permute(perm):reshape(-1, c)
    t = t:reshape(-1)
  end
  if t.dtype ~= torch.int64 then
    fail('nll_loss', ('expected target of dtype int64 (class indices), got %s'):format(tostring(t.dtype)))
  end
  local n, c = x:size(1), x:size(2)
  if t:numel() ~= n then
    fail('nll_loss', ('Expected input batch_size (%d) to match target batch_size (%d).'):format(n, t:numel()))
  end
  local valid = t:ne(ignore)
  local safe = torch.where(valid, t, torch.ones_like(t))
  if safe:numel() > 0 and (safe:min():item() < 1 or safe:max():item() > c) then
    fail('nll_loss', ('Target %d is out of bounds.'):format(
      safe:lt(1):any() and safe:min():item() or safe:max():item()))
  end
  local picked = -x:gather(2, safe:unsqueeze(2)):squeeze(2)
  local w = valid:to(x.dtype)
  if weight ~= nil then w = w * weight:index_select(1, safe) end
  local loss = picked * w
  if reduction == 'none' then
    if input:dim() == 1 then return loss:reshape({}) end
    if input:dim() > 2 then
      local shape = target:size()
      return loss:reshape(shape)
    end
    return loss
  end
  if reduction == 'sum' then return loss:sum() end
  if reduction == 'mean' then return loss:sum() / w:sum() end
  fail('nn.functional.nll_loss', ('%s is not a valid value for reduction'):format(tostring(reduction)))
end

-- cross_entropy(input, target, {weight=, ignore_index=, reduction=, label_smoothing=}); target
-- of 1-based class indices, or of class probabilities (same shape as input)
function F.cross_entropy(input, target, opts)
  need_tensor('cross_entropy', input); need_tensor('cross_entropy', target, 'target')
  opts = type(opts) == 'table' and opts or {}
  local cdim = input:dim() == 1 and 1 or 2
  local logp = input:log_softmax(cdim)
  local ls = opts.label_smoothing or 0
  if target:is_floating_point() then
    local c = input:size(cdim)
    local tgt = target
    if ls > 0 then tgt = tgt * (1 - ls) + ls / c end
    local per = -(logp * tgt)
    if opts.weight ~= nil then
      local shape = { c }
      if cdim == 2 then
        shape = { 1, c }
        for _ = 3, input:dim() do shape[#shape + 1] = 1 end
      end
      per = per * opts.weight:reshape(shape)
    end
    local loss = per:sum(cdim)
    local red = opts.reduction or 'mean'
    if red == 'mean' then return loss:sum() / (input:dim() == 1 and 1 or input:size(1) * (loss:numel() / input:size(1))) end
    return reduce('cross_entropy', loss, red)
  end
  local nll = F.nll_loss(logp, target, opts)
  if ls == 0 then return nll end
  -- label smoothing with class indices: mix in the mean over classes of -log p
  local c = input:size(cdim)
  local smooth_opts = { reduction = 'none', ignore_index = opts.ignore_index, weight = opts.weight }
  local valid = target:ne(opts.ignore_index or -100):to(input.dtype)
  local per_class = -logp
  if opts.weight ~= nil then
    local shape = { c }
    if cdim == 2 then shape = { 1, c } for _ = 3, input:dim() do shape[#shape + 1] = 1 end end
    per_class = per_class * opts.weight:reshape(shape)
  end
  local smooth = per_class:sum(cdim) * valid
  local red = opts.reduction or 'mean'
  local _ = smooth_opts
  if red == 'none' then return nll * (1 - ls) + smooth * (ls / c) end
  if red == 'sum' then return nll * (1 - ls) + smooth:sum() * (ls / c) end
  local denom
  if opts.weight ~= nil then
    local safe = torch.where(target:ne(opts.ignore_index or -100), target, torch.ones_like(target))
    denom = (opts.weight:index_select(1, safe:reshape(-1)) * valid:reshape(-1)):sum()
  else
    denom = valid:sum()
  end
  return nll * (1 - ls) + smooth:sum() / denom * (ls / c)
end

function F.binary_cross_entropy(input, target, opts)
  need_tensor('binary_cross_entropy', input); need_tensor('binary_cross_entropy', target, 'target')
  opts = type(opts) == 'table' and opts or {}
  -- PyTorch clamps the logs at -100
  local loss = -(target * input:log():clamp_min(-100) + (1 - target) * (1 - input):log():clamp_min(-100))
  if opts.weight ~= nil then loss = loss * opts.weight end
  return reduce('binary_cross_entropy', loss, opts.reduction)
end

function F.binary_cross_entropy_with_logits(input, target, opts)
  opts = type(opts) == 'table' and opts or {}
  -- (1 - t) x + log(1 + exp(-x)), stably: max(x, 0) - x t + log(1 + exp(-|x|))
  local log_weight = 1
  if opts.pos_weight ~= nil then log_weight = (opts.pos_weight - 1) * target + 1 end
  local loss = (1 - target) * input + log_weight * (torch.softplus_unit(-input:abs()) + (-input):clamp_min(0))
  if opts.weight ~= nil then loss = loss * opts.weight end
  return reduce('binary_cross_entropy_with_logits', loss, opts.reduction)
end

------------------------------------------------------------------------------ other
-- normalize(x, p=2, dim=2, eps=1e-12): x / max(||x||_p, eps) along dim
function F.normalize(x, p, dim, eps)
  if type(p) == 'table' then
    local o = p
    p, dim, eps = o.p, o.dim, o.eps
  end
  p, dim, eps = p or 2, dim or 2, eps or 1e-12
  local n = x:norm(p, dim, true):clamp_min(eps)
  return x / n:expand_as(x)
end

-- cosine_similarity(x1, x2, dim=2, eps=1e-8)
function F.cosine_similarity(x1, x2, dim, eps)
  if type(dim) == 'table' then dim, eps = dim.dim, dim.eps end
  dim, eps = dim or 2, eps or 1e-8
  local w12 = (x1 * x2):sum(dim)
  local n1 = (x1 * x1):sum(dim)
  local n2 = (x2 * x2):sum(dim)
  return w12 / ((n1 * n2):clamp_min(eps * eps)):sqrt()
end

-- pad(x, {left, right, top, bottom, ...}, mode='constant', value=0): pads the last dims
function F.pad(x, pad, mode, value)
  if type(mode) == 'table' then value, mode = mode.value, mode.mode end
  mode = mode or 'constant'
  value = value or 0
  if mode ~= 'constant' then fail('nn.functional.pad', ('mode %s is not supported yet (only constant)'):format(mode)) end
  if type(pad) ~= 'table' or #pad % 2 ~= 0 then fail('nn.functional.pad', 'Padding length must be divisible by 2') end
  if #pad / 2 > x:dim() then fail('nn.functional.pad', 'Padding length too large') end
  local out = x
  for i = 1, #pad / 2 do
    local d = x:dim() - i + 1
    local before, after = pad[2 * i - 1], pad[2 * i]
    if before < 0 then out = out:narrow(d, 1 - before, out:size(d) + before); before = 0 end
    if after < 0 then out = out:narrow(d, 1, out:size(d) + after); after = 0 end
    local parts = {}
    local function block(n)
      local s = out:size()
      s[d] = n
      return torch.full(s, value, { dtype = out.dtype })
    end
    if before > 0 then parts[#parts + 1] = block(before) end
    parts[#parts + 1] = out
    if after > 0 then parts[#parts + 1] = block(after) end
    if #parts > 1 then out = torch.cat(parts, d) end
  end
  return out
end

function F.one_hot(t, num_classes) return torch.one_hot(t, num_classes) end

-- batch_norm comes from lua/nn/layers.lua (set by moontorch.nn)

return F
