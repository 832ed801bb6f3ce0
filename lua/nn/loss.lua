-- Loss modules (issue 12), each PyTorch's constructor (weights as buffers, the legacy
-- size_average/reduce turned into a reduction) over one nn.functional call; and the losses
-- nn.functional lacked: multilabel_margin_loss, multi_margin_loss,
-- triplet_margin_with_distance_loss, ctc_loss. Class indices count from 1 (API.md), CTC's blank
-- too (default 1, PyTorch's 0).
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local Mod = require 'moontorch.nn.Module'
local A = require 'moontorch.nn.modargs'
local loss_ops = require 'moontorch.ops.loss'

local fail, is_tensor = core.fail, T.is_tensor
local Module = Mod.Module
local declare_forward = Mod.declare_forward
local type, tostring, ipairs, pairs, math, select = type, tostring, ipairs, pairs, math, select

local M = {}
local nn, F -- set by install

local function size_str(t) return '[' .. table.concat(t:size(), ', ') .. ']' end
local function need(fn, x, what)
  if not is_tensor(x) then fail(fn, ('%s must be a tensor (got %s)'):format(what, type(x))) end
end
local function reduce(fn, loss, r)
  if r == 'mean' then return loss:mean() elseif r == 'sum' then return loss:sum() elseif r == 'none' then return loss end
  fail(fn, ('%s is not a valid value for reduction'):format(tostring(r)))
end
-- PyTorch's _Reduction.legacy_get_string
local function legacy_reduction(size_average, reduce_)
  if size_average == nil then size_average = true end
  if reduce_ == nil then reduce_ = true end
  if size_average and reduce_ then return 'mean' elseif reduce_ then return 'sum' end
  return 'none'
end
local function reduction_arg(fn, v)
  local r = v.reduction or 'mean'
  if v.size_average ~= nil or v.reduce ~= nil then r = legacy_reduction(v.size_average, v.reduce) end
  if r ~= 'mean' and r ~= 'sum' and r ~= 'none' then fail(fn, ('%s is not a valid value for reduction'):format(tostring(r))) end
  return r
end

------------------------------------------------------------------------------ functional
-- multilabel_margin_loss(input (C) or (N, C), target of the same shape, reduction='mean'): each
-- row of target lists 1-based classes, ended by the first -1; the loss of a row is
-- sum over listed j and unlisted i of max(0, 1 - (x[j] - x[i])), divided by C
function M.multilabel_margin_loss(input, target, ...)
  local fn = 'nn.functional.multilabel_margin_loss'
  need(fn, input, 'input'); need(fn, target, 'target')
  local v = A.parse(fn, { 'size_average', 'reduce', 'reduction' }, false, ...)
  local r = reduction_arg(fn, v)
  local nd = input:dim()
  if not ((nd == 1 and input:numel() > 0) or (nd == 2 and input:size(2) > 0)) then
    fail(fn, ('Expected non-empty vector or matrix with optional 0-dim batch size, but got: %s'):format(size_str(input)))
  end
  local x = nd == 1 and input:unsqueeze(1) or input
  local n, c = x:size(1), x:size(2)
  if target:is_floating_point() or target.dtype == torch.bool then
    fail(fn, ("expected an integer tensor of classes for argument #2 'target', got %s"):format(tostring(target.dtype)))
  end
  if target:dim() ~= nd or target:numel() ~= input:numel() or (nd == 2 and target:size(1) ~= n) then
    fail(fn, ("inconsistent size %s for argument #2 'target'"):format(size_str(target)))
  end
  local is_t = torch.zeros({ n, c }, { dtype = torch.bool })
  local listed = torch.zeros({ n, c }, { dtype = torch.bool })
  if not x.is_meta then
    local rows = (nd == 1 and target:unsqueeze(1) or target):tolist()
    local mark, lst = {}, {}
    for i = 1, n do
      for j = 1, c do mark[(i - 1) * c + j], lst[(i - 1) * c + j] = false, false end
      for j = 1, c do
        local k = rows[i][j]
        if k == -1 then break end
        if k < 1 or k > c or k % 1 ~= 0 then fail(fn, "argument #2 'target' is out of range") end
        mark[(i - 1) * c + k], lst[(i - 1) * c + k] = true, true
      end
    end
    is_t = torch.tensor(mark):reshape(n, c)
    listed = torch.tensor(lst):reshape(n, c)
  end
  -- (N, j, i): 1 - x[j] + x[i] for listed j, unlisted i
  local m = (1 - x:unsqueeze(3) + x:unsqueeze(2)):clamp_min(0)
  local pair = listed:unsqueeze(3):logical_and(is_t:logical_not():unsqueeze(2))
  local loss = (m * pair:to(x.dtype)):sum({ 2, 3 }) / c
  if nd == 1 then loss = loss:squeeze(1) end
  return reduce(fn, loss, r)
end

-- multi_margin_loss(input (C) or (N, C), target (N) of 1-based classes, p=1, margin=1, weight=nil,
-- reduction='mean'): sum over i ~= y of w[y] max(0, margin - x[y] + x[i])^p, divided by C
function M.multi_margin_loss(input, target, ...)
  local fn = 'nn.functional.multi_margin_loss'
  need(fn, input, 'input'); need(fn, target, 'target')
  local v = A.parse(fn, { 'p', 'margin', 'weight', 'size_average', 'reduce', 'reduction' }, false, ...)
  local r = reduction_arg(fn, v)
  local p, margin = A.number(fn, 'p', v.p, 1), A.number(fn, 'margin', v.margin, 1)
  if p ~= 1 and p ~= 2 then fail(fn, 'only p == 1 and p == 2 supported') end
  local nd = input:dim()
  if not ((nd <= 1 and input:numel() > 0) or (nd == 2 and input:size(2) > 0)) then
    fail(fn, ('Expected non-empty vector or matrix with optional 0-dim batch size, but got: %s'):format(size_str(input)))
  end
  local x = nd == 2 and input or input:reshape(1, -1)
  local n, c = x:size(1), x:size(2)
  if target:numel() ~= n or target:dim() > 1 then
    fail(fn, ('inconsistent target size, got: %s'):format(size_str(target)))
  end
  local t = target:reshape(n, 1)
  if t.dtype ~= torch.int64 then
    fail(fn, ('expected scalar type Long but found %s'):format(require('moontorch.dtype').scalar_type(t.dtype)))
  end
  if n > 0 and not t.is_meta then
    local lo = t:min():item()
    if lo < 1 or t:max():item() > c then
      fail(fn, 'target out of range' .. (lo == 0 and " (positions count from 1 here: PyTorch's class 0 is 1)" or ''))
    end
  end
  local xy = x:gather(2, t)
  local m = (x - xy + margin):clamp_min(0)
  if p == 2 then m = m * m end
  if v.weight ~= nil then
    need(fn, v.weight, 'weight')
    m = m * v.weight:to(x.dtype):index_select(1, t:reshape(-1)):unsqueeze(2)
  end
  -- leave out i == y
  local other = torch.arange(1, c + 1, { dtype = torch.int64 }):unsqueeze(1):ne(t)
  local loss = (m * other:to(x.dtype)):sum(2) / c
  if nd == 2 then loss = loss:reshape(n) else loss = loss:reshape({}) end
  return reduce(fn, loss, r)
end
-- one node named as PyTorch's; the gradient autograd's of the composite (K.node_autograd)
do
  local node = require('moontorch.ops.compose').node_autograd('MultiMarginLossBackward0', M.multi_margin_loss)
  function M.multi_margin_loss(...) return node(...) end -- (a function of this file: help finds its options here)
end

-- triplet_margin_with_distance_loss(anchor, positive, negative, {distance_function=nil, margin=1,
-- swap=false, reduction='mean'}): max(0, margin + d(a, p) - d(a, n)), d pairwise_distance by default
function M.triplet_margin_with_distance_loss(anchor, positive, negative, opts)
  local fn = 'nn.functional.triplet_margin_with_distance_loss'
  need(fn, anchor, 'anchor'); need(fn, positive, 'positive'); need(fn, negative, 'negative')
  local v = opts or {}
  for k in pairs(v) do
    if k ~= 'distance_function' and k ~= 'margin' and k ~= 'swap' and k ~= 'reduction' then
      fail(fn, ("got an unexpected option '%s'"):format(tostring(k)))
    end
  end
  local r = v.reduction or 'mean'
  if r ~= 'mean' and r ~= 'sum' and r ~= 'none' then fail(fn, ('%s is not a valid value for reduction'):format(tostring(r))) end
  local margin = A.number(fn, 'margin', v.margin, 1.0)
  if anchor:dim() ~= positive:dim() or anchor:dim() ~= negative:dim() then
    fail(fn, ('The anchor, positive, and negative tensors are expected to have the same number of dimensions, ' ..
      'but got: anchor %dD, positive %dD, and negative %dD inputs'):format(anchor:dim(), positive:dim(), negative:dim()))
  end
  local d = v.distance_function or F.pairwise_distance
  local dp, dn = d(anchor, positive), d(anchor, negative)
  if v.swap then dn = torch.minimum(dn, d(positive, negative)) end
  return reduce(fn, (dp - dn + margin):clamp_min(0), r)
end

-- a lengths argument: a tensor of integers, a Lua array, or (unbatched) a number
local function lengths_of(fn, what, x)
  if is_tensor(x) then
    if x:is_floating_point() then fail(fn, ('%s must be integers (got %s)'):format(what, tostring(x.dtype))) end
    if x.is_meta then return nil end
    local l = x:reshape(-1):tolist()
    return l
  elseif type(x) == 'number' then
    return { x }
  elseif type(x) == 'table' then
    local n = T.seq_len(x) or T.seq_fail(x, fn, what)
    local l = {}
    for i = 1, n do
      if type(x[i]) ~= 'number' or x[i] % 1 ~= 0 then fail(fn, ('%s[%d] must be an integer'):format(what, i)) end
      l[i] = x[i]
    end
    return l
  end
  fail(fn, ('%s must be a tensor or an array of integers (got %s)'):format(what, type(x)))
end

-- ctc_loss(log_probs (T, N, C) or (T, C), targets (N, S) or the N target sequences concatenated
-- (1-D), input_lengths (N), target_lengths (N), blank=1, reduction='mean', zero_infinity=false):
-- the negative log-likelihood of each target under the alignments of CTC, computed by the core's
-- ctc_loss (core/tensor/ctc.c: the forward and backward variables in log space, grad_fn
-- CtcLossBackward0; not twice differentiable, as in PyTorch). 'mean' divides each loss by its target
-- length (at least 1) and then averages over the batch. The gradient is the true derivative with
-- respect to log_probs; PyTorch's kernel returns it plus exp(log_probs), which is the same once it
-- has gone back through the log_softmax that produced log_probs. An infeasible sample (input
-- shorter than its target needs) has loss inf and gradient 0 (PyTorch's gradient there is NaN).
function M.ctc_loss(log_probs, targets, input_lengths, target_lengths, ...)
  local fn = 'nn.functional.ctc_loss'
  need(fn, log_probs, 'log_probs'); need(fn, targets, 'targets')
  local v = A.parse(fn, { 'blank', 'reduction', 'zero_infinity' }, false, ...)
  local blank = v.blank == nil and 1 or v.blank
  local r = v.reduction or 'mean'
  if r ~= 'mean' and r ~= 'sum' and r ~= 'none' then fail(fn, ('%s is not a valid value for reduction'):format(tostring(r))) end
  local zero_inf = v.zero_infinity == true
  local batched = log_probs:dim() == 3
  if not batched and log_probs:dim() ~= 2 then
    fail(fn, ('log_probs must be 3-D (T, N, C) or 2-D (T, C), got %dD'):format(log_probs:dim()))
  end
  local lp = batched and log_probs or log_probs:unsqueeze(2)
  local tmax, nb, c = lp:size(1), lp:size(2), lp:size(3)
  if type(blank) ~= 'number' or blank % 1 ~= 0 or blank < 1 or blank > c then fail(fn, 'blank must be in label range') end
  if lp.is_meta or targets.is_meta then
    local out = torch.empty(r == 'none' and (batched and { nb } or {}) or {}, { dtype = lp.dtype, device = lp.device })
    return out
  end
  local il = lengths_of(fn, 'input_lengths', input_lengths)
  local tl = lengths_of(fn, 'target_lengths', target_lengths)
  if #il ~= nb then fail(fn, 'input_lengths must be of size batch_size') end
  if #tl ~= nb then fail(fn, 'target_lengths must be of size batch_size') end
  if targets:is_floating_point() then fail(fn, ('targets must be integers (got %s)'):format(tostring(targets.dtype))) end
  -- each sample's target sequence (1-based labels)
  local seqs = {}
  local tg = batched and targets or targets:unsqueeze(1)
  local smax = 0
  for n = 1, nb do if tl[n] > smax then smax = tl[n] end end
  if tg:dim() == 2 then
    if tg:size(1) ~= nb and batched then fail(fn, 'targets must have one row per batch item') end
    if tg:size(2) < smax then
      fail(fn, ("Expected tensor to have size at least %d at dimension 2, but got size %d for argument #2 'targets'")
        :format(smax, tg:size(2)))
    end
    local rows = tg:tolist()
    for n = 1, nb do
      local s = {}
      for i = 1, tl[n] do s[i] = rows[n][i] end
      seqs[n] = s
    end
  elseif tg:dim() == 1 then
    local total = 0
    for n = 1, nb do total = total + tl[n] end
    if tg:size(1) ~= total then
      fail(fn, ("Expected tensor to have size %d at dimension 1, but got size %d for argument #2 'targets'")
        :format(total, tg:size(1)))
    end
    local all, at = tg:tolist(), 0
    for n = 1, nb do
      local s = {}
      for i = 1, tl[n] do s[i] = all[at + i] end
      at = at + tl[n]
      seqs[n] = s
    end
  else
    fail(fn, ('targets must be 1-D or 2-D, got %dD'):format(tg:dim()))
  end
  for n = 1, nb do
    if il[n] < 0 or il[n] > tmax then
      fail(fn, ('Expected input_lengths to have value at most %d, but got value %d'):format(tmax, il[n]))
    end
    if tl[n] < 0 then fail(fn, ('target_lengths must be non-negative, got %d'):format(tl[n])) end
    for _, k in ipairs(seqs[n]) do
      if k < 1 or k > c or k == blank then
        fail(fn, ('targets must hold labels in [1, %d] other than blank (%d), got %d%s'):format(c, blank, k,
          k == 0 and " (positions count from 1 here: PyTorch's 0 is 1)" or ''))
      end
    end
  end
  -- the core's kernel (core/tensor/ctc.c) on the targets padded to the longest
  local width = math.max(smax, 1)
  local padded = {}
  for n = 1, nb do
    for i = 1, width do padded[(n - 1) * width + i] = seqs[n][i] or 1 end
  end
  local i64 = { dtype = torch.int64, device = lp.device } -- the core reads them through the readback
  local fopts = { dtype = lp.dtype, device = lp.device }
  if lp.dtype ~= torch.float32 and lp.dtype ~= torch.float64 then
    fail(fn, ('expected float32 or float64 log_probs, got %s'):format(tostring(lp.dtype)))
  end
  local loss = loss_ops.ctc_raw(lp, torch.tensor(padded, i64):reshape(nb, width), torch.tensor(il, i64),
    torch.tensor(tl, i64), blank, zero_inf)
  if r == 'none' then return batched and loss or loss:squeeze(1) end
  if r == 'sum' then return loss:sum() end
  local div = {}
  for n = 1, nb do div[n] = math.max(tl[n], 1) end
  return (loss / torch.tensor(div, fopts)):mean()
end

------------------------------------------------------------------------------ modules
-- loss(name, fn, ctor, fwd, opts): a loss module whose constructor takes the arguments `ctor`
-- (PyTorch's positional order; entries in opts.buffers are registered as buffers), and whose
-- forward takes `fwd` and calls F[fn](fwd..., {options from the constructor})
local function loss_class(name, fn, ctor, fwd, opts)
  opts = opts or {}
  local cls = class.class('nn.' .. name, Module)
  M[name] = cls
  local buffers = opts.buffers or {}
  local keys = opts.keys or {}
  function cls:__init(...)
    Module.__init(self)
    local owner = 'nn.' .. name
    local v = A.parse(owner, ctor, false, ...)
    for _, b in ipairs(buffers) do
      if v[b] ~= nil then need(owner, v[b], b) end
      self:register_buffer(b, v[b])
    end
    local r = v.reduction or 'mean'
    if opts.legacy ~= false and (v.size_average ~= nil or v.reduce ~= nil) then
      r = legacy_reduction(v.size_average, v.reduce)
    end
    if r ~= 'mean' and r ~= 'sum' and r ~= 'none' and not (opts.batchmean and r == 'batchmean') then
      fail(owner, ('%s is not a valid value for reduction'):format(tostring(r)))
    end
    self.reduction = r
    for _, k in ipairs(keys) do
      local val = v[k[1]]
      if val == nil then val = k[2] end
      if k[3] == 'number' then val = A.number(owner, k[1], val)
      elseif k[3] == 'boolean' then val = A.bool(owner, k[1], val, k[2]) end
      self[k[1]] = val
    end
    if opts.init then opts.init(self, v) end
  end
  local nf = #fwd
  function cls:forward(a, b, c, d)
    local o = { reduction = self.reduction }
    for _, bname in ipairs(buffers) do o[bname] = self[bname] end
    for _, k in ipairs(keys) do o[k[1]] = self[k[1]] end
    if opts.options then opts.options(self, o) end
    if nf == 2 then return F[fn](a, b, o) elseif nf == 3 then return F[fn](a, b, c, o) end
    return F[fn](a, b, c, d, o)
  end
  declare_forward(cls, fwd)
  return cls
end

local legacy3 = { 'size_average', 'reduce', 'reduction' }
local function with(prefix, tail)
  local t = {}
  for _, x in ipairs(prefix) do t[#t + 1] = x end
  for _, x in ipairs(tail or legacy3) do t[#t + 1] = x end
  return t
end
local two = { 'input', 'target' }

loss_class('L1Loss', 'l1_loss', legacy3, two)
loss_class('MSELoss', 'mse_loss', legacy3, two)
loss_class('SoftMarginLoss', 'soft_margin_loss', legacy3, two)
loss_class('MultiLabelMarginLoss', 'multilabel_margin_loss', legacy3, two)
loss_class('BCELoss', 'binary_cross_entropy', with({ 'weight' }), two, { buffers = { 'weight' } })
loss_class('BCEWithLogitsLoss', 'binary_cross_entropy_with_logits', with({ 'weight' }, { 'size_average', 'reduce',
  'reduction', 'pos_weight' }), two, { buffers = { 'weight', 'pos_weight' } })
loss_class('MultiLabelSoftMarginLoss', 'multilabel_soft_margin_loss', with({ 'weight' }), two, { buffers = { 'weight' } })
loss_class('NLLLoss', 'nll_loss', { 'weight', 'size_average', 'ignore_index', 'reduce', 'reduction' }, two,
  { buffers = { 'weight' }, keys = { { 'ignore_index', -100, 'number' } } })
loss_class('CrossEntropyLoss', 'cross_entropy',
  { 'weight', 'size_average', 'ignore_index', 'reduce', 'reduction', 'label_smoothing' }, two,
  { buffers = { 'weight' }, keys = { { 'ignore_index', -100, 'number' }, { 'label_smoothing', 0.0, 'number' } } })
loss_class('SmoothL1Loss', 'smooth_l1_loss', with({}, { 'size_average', 'reduce', 'reduction', 'beta' }), two,
  { keys = { { 'beta', 1.0, 'number' } } })
loss_class('HuberLoss', 'huber_loss', { 'reduction', 'delta' }, two,
  { legacy = false, keys = { { 'delta', 1.0, 'number' } } })
loss_class('KLDivLoss', 'kl_div', { 'size_average', 'reduce', 'reduction', 'log_target' }, two,
  { batchmean = true, keys = { { 'log_target', false, 'boolean' } } })
loss_class('MarginRankingLoss', 'margin_ranking_loss', with({ 'margin' }), { 'input1', 'input2', 'target' },
  { keys = { { 'margin', 0.0, 'number' } } })
loss_class('HingeEmbeddingLoss', 'hinge_embedding_loss', with({ 'margin' }), two,
  { keys = { { 'margin', 1.0, 'number' } } })
loss_class('CosineEmbeddingLoss', 'cosine_embedding_loss', with({ 'margin' }), { 'input1', 'input2', 'target' },
  { keys = { { 'margin', 0.0, 'number' } } })
loss_class('TripletMarginLoss', 'triplet_margin_loss', with({ 'margin', 'p', 'eps', 'swap' }),
  { 'anchor', 'positive', 'negative' },
  { keys = { { 'margin', 1.0, 'number' }, { 'p', 2.0, 'number' }, { 'eps', 1e-6, 'number' }, { 'swap', false, 'boolean' } },
    init = function(self)
      if self.margin <= 0 then
        fail('nn.TripletMarginLoss', ('TripletMarginLoss: expected margin to be greater than 0, got %s instead')
          :format(A.pyfloat(self.margin)))
      end
    end })
loss_class('MultiMarginLoss', 'multi_margin_loss', with({ 'p', 'margin', 'weight' }), two,
  { buffers = { 'weight' }, keys = { { 'p', 1, 'number' }, { 'margin', 1.0, 'number' } }, init = function(self)
    if self.p ~= 1 and self.p ~= 2 then fail('nn.MultiMarginLoss', 'only p == 1 and p == 2 supported') end
    if self.weight ~= nil and self.weight:dim() ~= 1 then
      fail('nn.MultiMarginLoss', ('MultiMarginLoss: expected weight to be None or 1D tensor, got %dD instead')
        :format(self.weight:dim()))
    end
  end })
loss_class('PoissonNLLLoss', 'poisson_nll_loss', { 'log_input', 'full', 'size_average', 'eps', 'reduce', 'reduction' },
  two, { keys = { { 'log_input', true, 'boolean' }, { 'full', false, 'boolean' }, { 'eps', 1e-8, 'number' } } })
loss_class('GaussianNLLLoss', 'gaussian_nll_loss', { 'full', 'eps', 'reduction' }, { 'input', 'target', 'var' },
  { legacy = false, keys = { { 'full', false, 'boolean' }, { 'eps', 1e-6, 'number' } } })
loss_class('CTCLoss', 'ctc_loss', { 'blank', 'reduction', 'zero_infinity' },
  { 'log_probs', 'targets', 'input_lengths', 'target_lengths' },
  { legacy = false, keys = { { 'blank', 1, 'number' }, { 'zero_infinity', false, 'boolean' } } })

-- nn.TripletMarginWithDistanceLoss({distance_function=nil, margin=1, swap=false, reduction='mean'}):
-- the distance a function or a module (PairwiseDistance() when not given, a child as in PyTorch)
local TMWD = class.class('nn.TripletMarginWithDistanceLoss', Module)
M.TripletMarginWithDistanceLoss = TMWD
function TMWD:__init(opts)
  Module.__init(self)
  local owner = 'nn.TripletMarginWithDistanceLoss'
  if opts ~= nil and not A.is_opts(opts) then fail(owner, '__init__() takes keyword arguments only, in an options table') end
  local v = A.parse(owner, { 'distance_function', 'margin', 'swap', 'reduction' }, false, opts)
  self.margin = A.number(owner, 'margin', v.margin, 1.0)
  if self.margin <= 0 then
    fail(owner, ('TripletMarginWithDistanceLoss: expected margin to be greater than 0, got %s instead')
      :format(A.pyfloat(self.margin)))
  end
  self.swap = A.bool(owner, 'swap', v.swap, false)
  self.reduction = v.reduction or 'mean'
  if self.reduction ~= 'mean' and self.reduction ~= 'sum' and self.reduction ~= 'none' then
    fail(owner, ('%s is not a valid value for reduction'):format(tostring(self.reduction)))
  end
  self.distance_function = v.distance_function or nn.PairwiseDistance()
end
function TMWD:forward(anchor, positive, negative)
  return M.triplet_margin_with_distance_loss(anchor, positive, negative, { distance_function = self.distance_function,
    margin = self.margin, swap = self.swap, reduction = self.reduction })
end
declare_forward(TMWD, { 'anchor', 'positive', 'negative' })

-- functional(F): puts this file's nn.functional ops into F (lua/nn/functional.lua calls it)
function M.functional(F_)
  F = F_
  F.multilabel_margin_loss = M.multilabel_margin_loss
  F.multi_margin_loss = M.multi_margin_loss
  F.triplet_margin_with_distance_loss = M.triplet_margin_with_distance_loss
  F.ctc_loss = M.ctc_loss
end

function M.install(nn_)
  nn = nn_
  M.functional(nn_.functional)
  class.export(M, nn)
end

return M
