-- Embedding and EmbeddingBag (issue 12), F.embedding and F.embedding_bag. Indices, padding_idx
-- and offsets count from 1 (API.md: positions are 1-based); sizes do not.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local Mod = require 'moontorch.nn.Module'
local A = require 'moontorch.nn.modargs'
local loss_ops = require 'moontorch.ops.loss'
local layers = require 'moontorch.nn.layers'

local fail, is_tensor = core.fail, T.is_tensor
local Module, Parameter = Mod.Module, Mod.Parameter
local check_int, declare_forward = Mod.check_int, Mod.declare_forward
local pyfloat = A.pyfloat
local type, tostring, math = type, tostring, math

local M = {}
local nn, F -- set by install

local define = Mod.definer(M)
local function torch_size(x) return 'torch.Size([' .. table.concat(x:size(), ', ') .. '])' end

------------------------------------------------------------------------------ shared pieces
-- padding_idx made positive (1-based; negative counts from the end), checked against num
local function padding_of(fn, padding_idx, num)
  if padding_idx == nil then return nil end
  check_int(fn, 'padding_idx', padding_idx)
  if padding_idx > 0 then
    if padding_idx > num then fail(fn, 'Padding_idx must be within num_embeddings') end
    return padding_idx
  elseif padding_idx < 0 then
    if padding_idx < -num then fail(fn, 'Padding_idx must be within num_embeddings') end
    return num + padding_idx + 1
  end
  fail(fn, 'Padding_idx must be within num_embeddings (positions count from 1)')
end

local function check_indices(fn, input, what)
  if input.dtype ~= torch.int64 and input.dtype ~= torch.int32 then
    fail(fn, ("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; " ..
      'but got %s instead (while checking arguments for %s)'):format(tostring(input.dtype), what))
  end
end

-- the rows used, renormalised in place to norm at most max_norm (PyTorch's embedding_renorm_:
-- scale max_norm / (norm + 1e-7) for each distinct row whose norm exceeds max_norm)
local function renorm_(weight, flat, max_norm, norm_type)
  if flat:numel() == 0 or flat.is_meta then return end
  torch.no_grad(function()
    local rows = flat:unique()
    local w = weight:index_select(1, rows)
    local norms = w:norm(norm_type, 2, true)
    local scale = torch.where(norms:gt(max_norm), max_norm / (norms + 1e-7), torch.ones_like(norms))
    weight:index_copy_(1, rows, w * scale)
  end)
end

-- the gradient of rows (one per index of flat) divided by how often its index occurs in flat
local function scale_by_freq(rows, flat)
  if not rows.requires_grad or flat.is_meta then return rows end
  local list = flat:tolist()
  local count = {}
  for i = 1, #list do count[list[i]] = (count[list[i]] or 0) + 1 end
  local s = {}
  for i = 1, #list do s[i] = 1 / count[list[i]] end
  local scale = torch.tensor(s, { dtype = rows.dtype }):unsqueeze(2)
  rows:register_hook(function(g) return g * scale end)
  return rows
end

------------------------------------------------------------------------------ F.embedding
-- embedding(input, weight, padding_idx=nil, max_norm=nil, norm_type=2, scale_grad_by_freq=false,
-- sparse=false): the rows of weight at the (1-based) indices of input; the padding_idx row gets no
-- gradient; with max_norm the rows used are first renormalised in place (as PyTorch does)
-- the rows of weight at flat (1-based), shaped, as one node named as PyTorch's: the gradient
-- adds each row's gradients into its row, none into padding_idx's
local embedding_rows = require('moontorch.ops.compose').node('EmbeddingBackward0',
  function(weight, flat, shape) return weight:index_select(1, flat):reshape(shape) end,
  function(g, weight, flat, _, padding_idx)
    local gf = g:reshape(flat:numel(), weight:size(2))
    if padding_idx ~= nil then gf = torch.where(flat:eq(padding_idx):unsqueeze(2), torch.zeros_like(gf), gf) end
    return torch.zeros_like(weight):index_add(1, flat, gf)
  end)
function M.embedding(input, weight, ...)
  local fn = 'nn.functional.embedding'
  if not is_tensor(input) then fail(fn, ('input must be a tensor (got %s)'):format(type(input))) end
  if not is_tensor(weight) then fail(fn, ('weight must be a tensor (got %s)'):format(type(weight))) end
  local v = A.parse(fn, { 'padding_idx', 'max_norm', 'norm_type', 'scale_grad_by_freq', 'sparse' }, false, ...)
  if weight:dim() ~= 2 then fail(fn, "'weight' must be 2-D") end
  local num = weight:size(1)
  local padding_idx = padding_of(fn, v.padding_idx, num)
  if v.sparse then fail(fn, 'sparse gradients are not supported (sparse=true)') end
  check_indices(fn, input, 'embedding')
  local flat = input:reshape(-1)
  if flat.dtype ~= torch.int64 then flat = flat:to(torch.int64) end
  if flat:numel() > 0 and not flat.is_meta then -- (a meta tensor has no values to check)
    local lo, hi = flat:min():item(), flat:max():item()
    if lo < 1 or hi > num then
      fail(fn, 'index out of range in self' .. (lo == 0 and " (positions count from 1 here: PyTorch's 0 is 1)" or ''))
    end
  end
  if v.max_norm ~= nil then renorm_(weight, flat, A.number(fn, 'max_norm', v.max_norm), A.number(fn, 'norm_type', v.norm_type, 2)) end
  local shape = input:size()
  shape[#shape + 1] = weight:size(2)
  if not v.scale_grad_by_freq then return embedding_rows(weight, flat, shape, padding_idx) end
  local out = scale_by_freq(weight:index_select(1, flat), flat)
  if padding_idx ~= nil and out.requires_grad then
    -- the padding row's value, but no gradient flows back to it
    out = torch.where(flat:eq(padding_idx):unsqueeze(2), out:detach(), out)
  end
  return out:reshape(shape)
end

------------------------------------------------------------------------------ F.embedding_bag
-- embedding_bag(input, weight, offsets=nil, max_norm=nil, norm_type=2, scale_grad_by_freq=false,
-- mode='mean', sparse=false, per_sample_weights=nil, include_last_offset=false, padding_idx=nil):
-- the sums, means or maxima of the bags of rows. A 2-D input (B, N) is B bags of N indices; a 1-D
-- input is cut into bags at offsets (1-based starts; include_last_offset: the last one is the
-- end). Entries at padding_idx are left out of their bag; an empty bag gives zeros. The reduce is
-- the core's embedding_bag (core/tensor/bag.c, grad_fn EmbeddingBagBackward0).
local bag_names = { 'offsets', 'max_norm', 'norm_type', 'scale_grad_by_freq', 'mode', 'sparse',
  'per_sample_weights', 'include_last_offset', 'padding_idx' }
function M.embedding_bag(input, weight, ...)
  local fn = 'nn.functional.embedding_bag'
  if not is_tensor(input) then fail(fn, ('input must be a tensor (got %s)'):format(type(input))) end
  if not is_tensor(weight) then fail(fn, ('weight must be a tensor (got %s)'):format(type(weight))) end
  local v = A.parse(fn, bag_names, false, ...)
  local offsets, psw, mode = v.offsets, v.per_sample_weights, v.mode or 'mean'
  if weight:dim() ~= 2 then fail(fn, "'weight' must be 2-D") end
  local num, dim = weight:size(1), weight:size(2)
  if psw ~= nil and (not is_tensor(psw) or psw:dim() ~= input:dim() or psw:numel() ~= input:numel()) then
    fail(fn, ('If per_sample_weights (%s) is not None, then it must have the same shape as the input (%s)')
      :format(is_tensor(psw) and torch_size(psw) or type(psw), torch_size(input)))
  end
  local padding_idx = padding_of(fn, v.padding_idx, num)
  local include_last = v.include_last_offset == true
  local flat
  if input:dim() == 2 then
    if offsets ~= nil then
      fail(fn, ('if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length ' ..
        'sequences. However, found offsets of type %s'):format(is_tensor(offsets) and 'Tensor' or type(offsets)))
    end
    flat = input:reshape(-1)
    if psw ~= nil then psw = psw:reshape(-1) end
  elseif input:dim() == 1 then
    if offsets == nil then fail(fn, 'offsets has to be a 1D Tensor but got None') end
    if not is_tensor(offsets) or offsets:dim() ~= 1 then fail(fn, 'offsets has to be a 1D Tensor') end
    flat = input
  else
    fail(fn, ('input has to be 1D or 2D Tensor, but got Tensor of dimension %d'):format(input:dim()))
  end
  if mode ~= 'sum' and mode ~= 'mean' and mode ~= 'max' then fail(fn, 'mode has to be one of sum, mean or max') end
  if psw ~= nil and mode ~= 'sum' then
    fail(fn, ("per_sample_weights was not None. per_sample_weights is only supported for mode='sum' " ..
      "(got mode='%s'). Please open a feature request on GitHub."):format(tostring(mode)))
  end
  if v.scale_grad_by_freq and mode == 'max' then fail(fn, 'max mode does not support scaling the gradient by the frequency') end
  if v.sparse then fail(fn, 'sparse gradients are not supported (sparse=true)') end
  check_indices(fn, input, 'embedding_bag')
  if flat.dtype ~= torch.int64 then flat = flat:to(torch.int64) end
  local n = flat:numel()
  -- the bags: starts (1-based) and their count
  local starts, nbags = {}, 0
  if input:dim() == 2 then
    nbags = input:size(1)
    local len = input:size(2)
    for b = 1, nbags do starts[b] = (b - 1) * len + 1 end
    starts[nbags + 1] = n + 1
  else
    if offsets.dtype ~= torch.int64 and offsets.dtype ~= torch.int32 then
      fail(fn, ("Expected tensor for argument #2 'offsets' to have one of the following scalar types: Long, Int; " ..
        'but got %s instead'):format(tostring(offsets.dtype)))
    end
    local k = offsets:numel()
    nbags = include_last and math.max(k - 1, 0) or k
    if weight.is_meta or input.is_meta then
      return torch.empty({ nbags, dim }, { dtype = weight.dtype, device = weight.device })
    end
    local o = offsets:tolist()
    if k > 0 and o[1] ~= 1 then
      fail(fn, ('offsets[1] has to be 1, i.e., the first sequence in the mini-batch has to start from position 1. ' ..
        'However, got %d'):format(o[1]))
    end
    if k > 0 and o[k] > n + 1 then
      fail(fn, ("offsets[-1] can not be greater than input's length %d plus 1 but got offsets[-1] of %d"):format(n, o[k]))
    end
    for i = 2, k do
      if o[i] < o[i - 1] then fail(fn, ('offsets must be non-decreasing (offsets[%d] = %d < offsets[%d] = %d)')
        :format(i, o[i], i - 1, o[i - 1])) end
    end
    for b = 1, nbags do starts[b] = o[b] end
    starts[nbags + 1] = include_last and o[k] or n + 1
  end
  if weight.is_meta or input.is_meta then
    return torch.empty({ nbags, dim }, { dtype = weight.dtype, device = weight.device })
  end
  if v.max_norm ~= nil then
    if n > 0 then
      local lo = flat:min():item()
      if lo < 1 or flat:max():item() > num then
        fail(fn, 'index out of range in self' .. (lo == 0 and " (positions count from 1 here: PyTorch's 0 is 1)" or ''))
      end
    end
    renorm_(weight, flat, A.number(fn, 'max_norm', v.max_norm), A.number(fn, 'norm_type', v.norm_type, 2))
  end
  -- the core's segment reduce (core/tensor/bag.c) over the bags' 0-based boundaries
  local bounds = {}
  for b = 1, nbags + 1 do bounds[b] = starts[b] - 1 end
  if psw ~= nil and psw.dtype ~= weight.dtype then psw = psw:to(weight.dtype) end
  return loss_ops.bag_raw(weight, flat, bounds, psw, mode, padding_idx, v.scale_grad_by_freq == true)
end

------------------------------------------------------------------------------ Embedding
local function embedding_repr(self, bag)
  local s = ('%d, %d'):format(self.num_embeddings, self.embedding_dim)
  if not bag and self.padding_idx ~= nil then s = s .. ', padding_idx=' .. self.padding_idx end
  if self.max_norm ~= nil then s = s .. ', max_norm=' .. pyfloat(self.max_norm) end
  if self.norm_type ~= 2 then s = s .. ', norm_type=' .. pyfloat(self.norm_type) end
  if self.scale_grad_by_freq then s = s .. ', scale_grad_by_freq=True' end
  if bag then
    s = s .. ', mode=' .. self.mode
    if self.padding_idx ~= nil then s = s .. ', padding_idx=' .. self.padding_idx end
  end
  return s
end

-- the weight: _weight given (its shape checked) or a new one
local function make_weight(self, name, w, fk)
  local num, dim = self.num_embeddings, self.embedding_dim
  if w == nil then
    self.weight = Parameter(fk and torch.empty({ num, dim }, fk) or torch.empty({ num, dim }))
    if layers.skipping == 0 then self:reset_parameters() end
  else
    if not is_tensor(w) or w:dim() ~= 2 or w:size(1) ~= num or w:size(2) ~= dim then
      fail(name, 'Shape of weight does not match num_embeddings and embedding_dim')
    end
    self.weight = Parameter(w)
  end
end

-- nn.Embedding(num_embeddings, embedding_dim, padding_idx=nil, max_norm=nil, norm_type=2,
-- scale_grad_by_freq=false, sparse=false, _weight=nil, {device=, dtype=})
local Embedding = define('Embedding')
local emb_names = { 'padding_idx', 'max_norm', 'norm_type', 'scale_grad_by_freq', 'sparse', '_weight' }
function Embedding:__init(num_embeddings, embedding_dim, ...)
  Module.__init(self)
  local v, fk = A.parse('nn.Embedding', emb_names, true, ...)
  check_int('nn.Embedding', 'num_embeddings', num_embeddings, 0)
  check_int('nn.Embedding', 'embedding_dim', embedding_dim, 0)
  self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
  self.padding_idx = padding_of('nn.Embedding', v.padding_idx, num_embeddings)
  self.max_norm = A.number('nn.Embedding', 'max_norm', v.max_norm)
  self.norm_type = A.number('nn.Embedding', 'norm_type', v.norm_type, 2.0)
  self.scale_grad_by_freq = A.bool('nn.Embedding', 'scale_grad_by_freq', v.scale_grad_by_freq, false)
  if v.sparse then fail('nn.Embedding', 'sparse gradients are not supported (sparse=true)') end
  self.sparse = false
  make_weight(self, 'nn.Embedding', v._weight, fk)
end
-- PyTorch's: weight from N(0, 1), the padding row zeroed
function Embedding:reset_parameters()
  nn.init.normal_(self.weight)
  self:_fill_padding_idx_with_zero()
end
function Embedding:_fill_padding_idx_with_zero()
  if self.padding_idx ~= nil then
    torch.no_grad(function() self.weight[self.padding_idx]:fill_(0) end)
  end
end
function Embedding:forward(input)
  return M.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type, self.scale_grad_by_freq)
end
declare_forward(Embedding, { 'input' })
function Embedding:extra_repr() return embedding_repr(self, false) end

-- Embedding.from_pretrained(embeddings, freeze=true, padding_idx=nil, max_norm=nil, norm_type=2,
-- scale_grad_by_freq=false, sparse=false): a module whose weight is embeddings (not copied)
function Embedding.from_pretrained(embeddings, ...)
  local fn = 'nn.Embedding.from_pretrained'
  if not is_tensor(embeddings) or embeddings:dim() ~= 2 then fail(fn, 'Embeddings parameter is expected to be 2-dimensional') end
  local v = A.parse(fn, { 'freeze', 'padding_idx', 'max_norm', 'norm_type', 'scale_grad_by_freq', 'sparse' }, false, ...)
  local m = Embedding(embeddings:size(1), embeddings:size(2), { _weight = embeddings, padding_idx = v.padding_idx,
    max_norm = v.max_norm, norm_type = v.norm_type, scale_grad_by_freq = v.scale_grad_by_freq, sparse = v.sparse })
  m.weight:requires_grad_(v.freeze == false)
  return m
end

------------------------------------------------------------------------------ EmbeddingBag
-- nn.EmbeddingBag(num_embeddings, embedding_dim, max_norm=nil, norm_type=2, scale_grad_by_freq=false,
-- mode='mean', sparse=false, _weight=nil, include_last_offset=false, padding_idx=nil, {device=, dtype=})
local EmbeddingBag = define('EmbeddingBag')
local bag_ctor = { 'max_norm', 'norm_type', 'scale_grad_by_freq', 'mode', 'sparse', '_weight', 'include_last_offset',
  'padding_idx' }
function EmbeddingBag:__init(num_embeddings, embedding_dim, ...)
  Module.__init(self)
  local v, fk = A.parse('nn.EmbeddingBag', bag_ctor, true, ...)
  check_int('nn.EmbeddingBag', 'num_embeddings', num_embeddings, 0)
  check_int('nn.EmbeddingBag', 'embedding_dim', embedding_dim, 0)
  self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
  self.max_norm = A.number('nn.EmbeddingBag', 'max_norm', v.max_norm)
  self.norm_type = A.number('nn.EmbeddingBag', 'norm_type', v.norm_type, 2.0)
  self.scale_grad_by_freq = A.bool('nn.EmbeddingBag', 'scale_grad_by_freq', v.scale_grad_by_freq, false)
  self.mode = v.mode or 'mean'
  if self.mode ~= 'sum' and self.mode ~= 'mean' and self.mode ~= 'max' then
    fail('nn.EmbeddingBag', 'mode has to be one of sum, mean or max')
  end
  if v.sparse then fail('nn.EmbeddingBag', 'sparse gradients are not supported (sparse=true)') end
  self.sparse = false
  self.include_last_offset = A.bool('nn.EmbeddingBag', 'include_last_offset', v.include_last_offset, false)
  self.padding_idx = padding_of('nn.EmbeddingBag', v.padding_idx, num_embeddings)
  make_weight(self, 'nn.EmbeddingBag', v._weight, fk)
end
EmbeddingBag.reset_parameters = Embedding.reset_parameters
EmbeddingBag._fill_padding_idx_with_zero = Embedding._fill_padding_idx_with_zero
-- forward(input, offsets=nil, per_sample_weights=nil)
function EmbeddingBag:forward(input, offsets, per_sample_weights)
  return M.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
    self.mode, false, per_sample_weights, self.include_last_offset, self.padding_idx)
end
declare_forward(EmbeddingBag, { 'input', 'offsets', 'per_sample_weights' }, { nreq = 1 })
function EmbeddingBag:extra_repr() return embedding_repr(self, true) end

-- EmbeddingBag.from_pretrained(embeddings, freeze=true, max_norm=nil, norm_type=2,
-- scale_grad_by_freq=false, mode='mean', sparse=false, include_last_offset=false, padding_idx=nil)
function EmbeddingBag.from_pretrained(embeddings, ...)
  local fn = 'nn.EmbeddingBag.from_pretrained'
  if not is_tensor(embeddings) or embeddings:dim() ~= 2 then fail(fn, 'Embeddings parameter is expected to be 2-dimensional') end
  local v = A.parse(fn, { 'freeze', 'max_norm', 'norm_type', 'scale_grad_by_freq', 'mode', 'sparse',
    'include_last_offset', 'padding_idx' }, false, ...)
  local m = EmbeddingBag(embeddings:size(1), embeddings:size(2), { _weight = embeddings, max_norm = v.max_norm,
    norm_type = v.norm_type, scale_grad_by_freq = v.scale_grad_by_freq, mode = v.mode, sparse = v.sparse,
    include_last_offset = v.include_last_offset, padding_idx = v.padding_idx })
  m.weight:requires_grad_(v.freeze == false)
  return m
end

-- functional(F): puts this file's nn.functional ops into F (lua/nn/functional.lua calls it)
function M.functional(F_)
  F = F_
  F.embedding = M.embedding
  F.embedding_bag = M.embedding_bag
end

function M.install(nn_)
  nn = nn_
  M.functional(nn_.functional)
  class.export(M, nn)
end

return M
