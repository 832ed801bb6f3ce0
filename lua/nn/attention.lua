-- Attention: F.scaled_dot_product_attention, F.multi_head_attention_forward,
-- nn.MultiheadAttention (and nn.NonDynamicallyQuantizableLinear, its out_proj's class).
--
-- The work is batched products through the core's bmm/baddbmm (the GEMM seam, core/blas.h):
-- scores = baddbmm(mask, q, k^T, beta=1, alpha=scale) adds the mask and the 1/sqrt(E) scale in
-- the product's own pass (the GEMM's alpha and its C operand), then one softmax kernel, then
-- bmm with v. Autograd records BaddbmmBackward0, SoftmaxBackward0 and BmmBackward0.
--
-- Semantics: multi_head_attention_forward and MultiheadAttention are PyTorch 1.13's (a boolean
-- attn_mask / key_padding_mask: true = masked out; a float one is added; the result is
-- (output, weights or nil)). scaled_dot_product_attention is public only from PyTorch 2.0 and
-- follows 2.x's semantics: a boolean attn_mask there says which positions TAKE PART (true =
-- attend), a float one is added; is_causal masks the upper triangle; `scale` defaults to
-- 1/sqrt(E); the batch dimensions of q, k, v and the mask broadcast.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local Mod = require 'moontorch.nn.Module'

local fail = core.fail
local is_tensor = T.is_tensor
local Module, Parameter = Mod.Module, Mod.Parameter
local check_int, declare_forward = Mod.check_int, Mod.declare_forward
local type, select, tostring, pairs, sqrt, huge = type, select, tostring, pairs, math.sqrt, math.huge

local M = {}
local nn -- moontorch.nn, set by install

------------------------------------------------------------------------------ helpers
local function size_str(t) return '[' .. table.concat(t:size(), ', ') .. ']' end
local function torch_size(sizes) return 'torch.Size([' .. table.concat(sizes, ', ') .. '])' end
local function tuple(a, b, c)
  if c == nil then return ('(%d, %d)'):format(a, b) end
  return ('(%d, %d, %d)'):format(a, b, c)
end
local function is_opts(v) return type(v) == 'table' and not is_tensor(v) end

local args = require('moontorch.nn.optargs').parser { is_opts = is_opts }

local function need_tensor(fn, x, what)
  if not is_tensor(x) then fail(fn, ('%s must be a tensor (got %s)'):format(what, type(x))) end
end

local function same_sizes(t, sizes)
  if t:dim() ~= #sizes then return false end
  for i = 1, #sizes do if t:size(i) ~= sizes[i] then return false end end
  return true
end

-- x @ w^T + b for the row-wise projections: a transposed view of a contiguous (A, B, E) tensor is
-- projected as the contiguous tensor (one addmm) and transposed back; the rest is F.linear
local function project(x, w, b)
  if x:dim() == 3 and not x:is_contiguous() then
    local xt = x:transpose(1, 2)
    if xt:is_contiguous() then return nn.functional.linear(xt, w, b):transpose(1, 2) end
  end
  return nn.functional.linear(x, w, b)
end

-- a float mask from a boolean one: -inf where `where_true` says, 0 elsewhere
local function additive(mask, dtype, where_true)
  local z = torch.zeros(mask:size(), { dtype = dtype, device = mask.device })
  if where_true then return z:masked_fill_(mask, -huge) end
  return z:masked_fill_(mask:logical_not(), -huge)
end

-- the broadcast of two size arrays, or nil
local function broadcast(a, b)
  local na, nb = #a, #b
  local n = na > nb and na or nb
  local s = {}
  for i = 1, n do
    local da = i <= n - na and 1 or a[i - (n - na)]
    local db = i <= n - nb and 1 or b[i - (n - nb)]
    if da ~= db and da ~= 1 and db ~= 1 then return nil end
    s[i] = da == 1 and db or da
  end
  return s
end

local function lead(t, k)
  local s = t:size()
  for _ = 1, k do s[#s] = nil end
  return s
end

local function with(sizes, ...)
  local s = {}
  for i = 1, #sizes do s[i] = sizes[i] end
  for i = 1, select('#', ...) do s[#s + 1] = select(i, ...) end
  return s
end

local function prod(sizes)
  local p = 1
  for i = 1, #sizes do p = p * sizes[i] end
  return p
end

-- scores = scale * q @ k^T (+ mask), softmax over the keys, dropout, @ v: q (B, L, E), k (B, S, E),
-- v (B, S, Ev), mask nil or float and broadcastable to (B, L, S). Returns output and weights.
local function attend(q, k, v, mask, scale, dropout_p, training)
  local kt = k:transpose(2, 3)
  local w
  if mask ~= nil then
    w = torch.baddbmm(mask, q, kt, { beta = 1, alpha = scale })
  elseif scale == 1 then
    w = torch.bmm(q, kt)
  else
    w = torch.baddbmm(torch.zeros({}, { dtype = q.dtype, device = q.device }), q, kt, { beta = 0, alpha = scale })
  end
  w = w:softmax(-1)
  if dropout_p > 0 and training ~= false then w = nn.functional.dropout(w, dropout_p, true) end
  return torch.bmm(w, v), w
end

------------------------------------------------------------------------------ scaled_dot_product_attention
local SDPA = 'nn.functional.scaled_dot_product_attention'

-- scaled_dot_product_attention(query, key, value, attn_mask=nil, dropout_p=0, is_causal=false,
-- {scale=}): softmax(q k^T * scale + mask) v over the last two dims, q (..., L, E), k (..., S, E),
-- v (..., S, Ev), the leading dims broadcast. A boolean mask: true takes part; float: added.
function M.scaled_dot_product_attention(query, key, value, ...)
  need_tensor(SDPA, query, 'query')
  need_tensor(SDPA, key, 'key')
  need_tensor(SDPA, value, 'value')
  local v = args(SDPA, { 'attn_mask', 'dropout_p', 'is_causal', 'scale' }, ...)
  local mask, dropout_p, is_causal, scale = v[1], v[2] or 0, v[3] == true, v[4]
  if mask ~= nil then need_tensor(SDPA, mask, 'attn_mask') end
  if type(dropout_p) ~= 'number' or dropout_p < 0 or dropout_p > 1 then
    fail(SDPA, ('dropout probability has to be between 0 and 1, but got %s'):format(tostring(dropout_p)))
  end
  local qd, kd, vd = query:dim(), key:dim(), value:dim()
  if qd < 2 or kd < 2 or vd < 2 then
    fail(SDPA, ('expected query, key and value to have at least 2 dimensions, got %dD, %dD and %dD'):format(qd, kd, vd))
  end
  local L, E, S = query:size(-2), query:size(-1), key:size(-2)
  if key:size(-1) ~= E then
    fail(SDPA, ('Expected query and key to have the same embedding size (last dimension), got %d and %d')
      :format(E, key:size(-1)))
  end
  if value:size(-2) ~= S then
    fail(SDPA, ('Expected key and value to have the same sequence length (dimension -2), got %d and %d')
      :format(S, value:size(-2)))
  end
  if query.dtype ~= key.dtype or query.dtype ~= value.dtype then
    fail(SDPA, ('Expected query, key, and value to have the same dtype, but got query.dtype: %s key.dtype: %s and value.dtype: %s instead.')
      :format(tostring(query.dtype), tostring(key.dtype), tostring(value.dtype)))
  end
  if not query:is_floating_point() then
    fail(SDPA, ('expected a floating point query, got %s'):format(tostring(query.dtype)))
  end
  if is_causal and mask ~= nil then
    fail(SDPA, 'Explicit attn_mask should not be set when is_causal=True')
  end
  if scale == nil then scale = 1 / sqrt(E) elseif type(scale) ~= 'number' then
    fail(SDPA, ('scale must be a number (got %s)'):format(type(scale)))
  end
  local batch = broadcast(lead(query, 2), lead(key, 2))
  batch = batch and broadcast(batch, lead(value, 2))
  if batch == nil then
    fail(SDPA, ('the batch dimensions of query %s, key %s and value %s do not broadcast')
      :format(size_str(query), size_str(key), size_str(value)))
  end
  local fmask
  if is_causal then
    fmask = torch.full({ L, S }, -huge, { dtype = query.dtype, device = query.device }):triu(1)
  elseif mask ~= nil then
    local full = broadcast(mask:size(), with(batch, L, S))
    if full == nil or #full ~= #batch + 2 then
      fail(SDPA, ('attn_mask of size %s cannot be broadcast to the attention weights of size %s')
        :format(size_str(mask), torch_size(with(batch, L, S))))
    end
    if mask.dtype == torch.bool then
      fmask = additive(mask, query.dtype, false)
    elseif mask.dtype == query.dtype then
      fmask = mask
    else
      fail(SDPA, ('Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: %s and query.dtype: %s instead.')
        :format(tostring(mask.dtype), tostring(query.dtype)))
    end
  end
  local B = prod(batch)
  local q = query:expand(with(batch, L, E)):reshape(B, L, E)
  local k = key:expand(with(batch, S, E)):reshape(B, S, E)
  local Ev = value:size(-1)
  local vv = value:expand(with(batch, S, Ev)):reshape(B, S, Ev)
  if fmask ~= nil and fmask:dim() > 2 then
    -- leading dims of size 1 go (baddbmm broadcasts a 2-D mask); others become the batch
    if prod(lead(fmask, 2)) == 1 then
      fmask = fmask:reshape(fmask:size(-2), fmask:size(-1))
    else
      fmask = fmask:expand(with(batch, L, S)):reshape(B, L, S)
    end
  end
  local out = attend(q, k, vv, fmask, scale, dropout_p, true)
  return out:view(with(batch, L, Ev))
end

------------------------------------------------------------------------------ multi_head_attention_forward
local MHA = 'nn.functional.multi_head_attention_forward'
local warned_byte = false

local function check_mask_dtype(fn, m, what)
  if m.dtype ~= torch.bool and not m:is_floating_point() then
    fail(fn, ('only bool and floating types of %s are supported'):format(what))
  end
end

-- the shape checks of PyTorch's _mha_shape_check; true when batched
local function mha_shape_check(query, key, value, kpm, mask, num_heads)
  local qd = query:dim()
  if qd == 3 then
    if key:dim() ~= 3 or value:dim() ~= 3 then
      fail(MHA, ('For batched (3-D) `query`, expected `key` and `value` to be 3-D but found %d-D and %d-D tensors respectively')
        :format(key:dim(), value:dim()))
    end
    if kpm ~= nil and kpm:dim() ~= 2 then
      fail(MHA, ('For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but found %d-D tensor instead')
        :format(kpm:dim()))
    end
    if mask ~= nil and mask:dim() ~= 2 and mask:dim() ~= 3 then
      fail(MHA, ('For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found %d-D tensor instead')
        :format(mask:dim()))
    end
    return true
  elseif qd == 2 then
    if key:dim() ~= 2 or value:dim() ~= 2 then
      fail(MHA, ('For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found %d-D and %d-D tensors respectively')
        :format(key:dim(), value:dim()))
    end
    if kpm ~= nil and kpm:dim() ~= 1 then
      fail(MHA, ('For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but found %d-D tensor instead')
        :format(kpm:dim()))
    end
    if mask ~= nil then
      if mask:dim() ~= 2 and mask:dim() ~= 3 then
        fail(MHA, ('For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found %d-D tensor instead')
          :format(mask:dim()))
      end
      if mask:dim() == 3 and not same_sizes(mask, { num_heads, query:size(1), key:size(1) }) then
        fail(MHA, ('Expected `attn_mask` shape to be %s but got %s')
          :format(tuple(num_heads, query:size(1), key:size(1)), torch_size(mask:size())))
      end
    end
    return false
  end
  fail(MHA, ('query should be unbatched 2D or batched 3D tensor but received %d-D query tensor'):format(qd))
end

-- a column of zeros (bool: false) after the last one: PyTorch's pad(mask, (0, 1))
local function pad_last(m)
  local s = m:size()
  s[#s] = 1
  return torch.cat({ m, torch.zeros(s, { dtype = m.dtype, device = m.device }) }, -1)
end

local MHA_NAMES = { 'training', 'key_padding_mask', 'need_weights', 'attn_mask', 'use_separate_proj_weight',
  'q_proj_weight', 'k_proj_weight', 'v_proj_weight', 'static_k', 'static_v', 'average_attn_weights' }

-- multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
-- in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
-- training=true, key_padding_mask=nil, need_weights=true, attn_mask=nil,
-- use_separate_proj_weight=false, q_proj_weight=nil, k_proj_weight=nil, v_proj_weight=nil,
-- static_k=nil, static_v=nil, average_attn_weights=true): PyTorch 1.13's, sequence-first
-- ((L, N, E) or unbatched (L, E)); returns the output and the weights (nil unless need_weights).
function M.multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                        in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight,
                                        out_proj_bias, ...)
  need_tensor(MHA, query, 'query')
  need_tensor(MHA, key, 'key')
  need_tensor(MHA, value, 'value')
  local o = args(MHA, MHA_NAMES, ...)
  local training = o[1] ~= false
  local kpm, need_weights, mask = o[2], o[3] ~= false, o[4]
  local separate = o[5] == true
  local qw, kw, vw, static_k, static_v = o[6], o[7], o[8], o[9], o[10]
  local average = o[11] ~= false
  check_int(MHA, 'num_heads', num_heads, 1)
  dropout_p = dropout_p or 0

  local is_batched = mha_shape_check(query, key, value, kpm, mask, num_heads)
  if not is_batched then
    query, key, value = query:unsqueeze(2), key:unsqueeze(2), value:unsqueeze(2)
    if kpm ~= nil then kpm = kpm:unsqueeze(1) end
  end
  local tgt_len, bsz, embed_dim = query:size(1), query:size(2), query:size(3)
  local src_len = key:size(1)
  if kpm ~= nil then check_mask_dtype(MHA, kpm, 'key_padding_mask') end
  if embed_dim ~= embed_dim_to_check then
    fail(MHA, ('was expecting embedding dimension of %s, but got %d'):format(tostring(embed_dim_to_check), embed_dim))
  end
  local head_dim = math.floor(embed_dim / num_heads)
  if head_dim * num_heads ~= embed_dim then
    fail(MHA, ('embed_dim %d not divisible by num_heads %d'):format(embed_dim, num_heads))
  end
  if separate then
    if key:size(1) ~= value:size(1) or key:size(2) ~= value:size(2) then
      fail(MHA, ("key's sequence and batch dims %s do not match value's %s")
        :format(torch_size({ key:size(1), key:size(2) }), torch_size({ value:size(1), value:size(2) })))
    end
  elseif not same_sizes(key, value:size()) then
    fail(MHA, ('key shape %s does not match value shape %s'):format(torch_size(key:size()), torch_size(value:size())))
  end

  -- the input projections
  local q, k, v
  if not separate then
    if in_proj_weight == nil then fail(MHA, 'use_separate_proj_weight is False but in_proj_weight is None') end
    local E = embed_dim
    if rawequal(key, value) and rawequal(query, key) then
      local qkv = project(query, in_proj_weight, in_proj_bias):chunk(3, -1)
      q, k, v = qkv[1], qkv[2], qkv[3]
    elseif rawequal(key, value) then
      local wq, wkv = in_proj_weight:narrow(1, 1, E), in_proj_weight:narrow(1, E + 1, 2 * E)
      local bq, bkv
      if in_proj_bias ~= nil then bq, bkv = in_proj_bias:narrow(1, 1, E), in_proj_bias:narrow(1, E + 1, 2 * E) end
      q = project(query, wq, bq)
      local kv = project(key, wkv, bkv):chunk(2, -1)
      k, v = kv[1], kv[2]
    else
      local w = in_proj_weight:chunk(3)
      local b = in_proj_bias ~= nil and in_proj_bias:chunk(3) or {}
      q, k, v = project(query, w[1], b[1]), project(key, w[2], b[2]), project(value, w[3], b[3])
    end
  else
    if qw == nil then fail(MHA, 'use_separate_proj_weight is True but q_proj_weight is None') end
    if kw == nil then fail(MHA, 'use_separate_proj_weight is True but k_proj_weight is None') end
    if vw == nil then fail(MHA, 'use_separate_proj_weight is True but v_proj_weight is None') end
    local b = in_proj_bias ~= nil and in_proj_bias:chunk(3) or {}
    q, k, v = project(query, qw, b[1]), project(key, kw, b[2]), project(value, vw, b[3])
  end

  -- the attention mask, as (1 or bsz * heads, L, S)
  if mask ~= nil then
    if mask.dtype == torch.uint8 then
      if not warned_byte then
        warned_byte = true
        io.stderr:write('UserWarning: Byte tensor for attn_mask in nn.MultiheadAttention is deprecated. ',
          'Use bool tensor instead.\n')
      end
      mask = mask:to(torch.bool)
    elseif not (mask:is_floating_point() or mask.dtype == torch.bool) then
      fail(MHA, ('Only float, byte, and bool types are supported for attn_mask, not %s'):format(tostring(mask.dtype)))
    end
    if mask:dim() == 2 then
      if not same_sizes(mask, { tgt_len, src_len }) then
        fail(MHA, ('The shape of the 2D attn_mask is %s, but should be %s.')
          :format(torch_size(mask:size()), tuple(tgt_len, src_len)))
      end
      mask = mask:unsqueeze(1)
    elseif mask:dim() == 3 then
      if not same_sizes(mask, { bsz * num_heads, tgt_len, src_len }) then
        fail(MHA, ('The shape of the 3D attn_mask is %s, but should be %s.')
          :format(torch_size(mask:size()), tuple(bsz * num_heads, tgt_len, src_len)))
      end
    else
      fail(MHA, ("attn_mask's dimension %d is not supported"):format(mask:dim()))
    end
  end

  if bias_k ~= nil and bias_v ~= nil then
    if static_k ~= nil then fail(MHA, 'bias cannot be added to static key.') end
    if static_v ~= nil then fail(MHA, 'bias cannot be added to static value.') end
    k = torch.cat({ k, bias_k:expand(1, bsz, embed_dim) })
    v = torch.cat({ v, bias_v:expand(1, bsz, embed_dim) })
    if mask ~= nil then mask = pad_last(mask) end
    if kpm ~= nil then kpm = pad_last(kpm) end
  elseif bias_k ~= nil or bias_v ~= nil then
    fail(MHA, 'bias_k and bias_v must be given together')
  end

  -- heads: (L, N, E) -> (N * heads, L, head_dim)
  local BH = bsz * num_heads
  q = q:contiguous():view(tgt_len, BH, head_dim):transpose(1, 2)
  if static_k == nil then
    k = k:contiguous():view(k:size(1), BH, head_dim):transpose(1, 2)
  else
    if static_k:size(1) ~= BH then
      fail(MHA, ('expecting static_k.size(0) of %d, but got %d'):format(BH, static_k:size(1)))
    end
    if static_k:size(3) ~= head_dim then
      fail(MHA, ('expecting static_k.size(2) of %d, but got %d'):format(head_dim, static_k:size(3)))
    end
    k = static_k
  end
  if static_v == nil then
    v = v:contiguous():view(v:size(1), BH, head_dim):transpose(1, 2)
  else
    if static_v:size(1) ~= BH then
      fail(MHA, ('expecting static_v.size(0) of %d, but got %d'):format(BH, static_v:size(1)))
    end
    if static_v:size(3) ~= head_dim then
      fail(MHA, ('expecting static_v.size(2) of %d, but got %d'):format(head_dim, static_v:size(3)))
    end
    v = static_v
  end

  if add_zero_attn then
    local zs = { BH, 1, head_dim }
    k = torch.cat({ k, torch.zeros(zs, { dtype = k.dtype, device = k.device }) }, 2)
    v = torch.cat({ v, torch.zeros(zs, { dtype = v.dtype, device = v.device }) }, 2)
    if mask ~= nil then mask = pad_last(mask) end
    if kpm ~= nil then kpm = pad_last(kpm) end
  end
  src_len = k:size(2)

  -- merge the key padding mask in: (N, S) -> (N * heads, 1, S)
  if kpm ~= nil then
    if not same_sizes(kpm, { bsz, src_len }) then
      fail(MHA, ('expecting key_padding_mask shape of %s, but got %s')
        :format(tuple(bsz, src_len), torch_size(kpm:size())))
    end
    kpm = kpm:view(bsz, 1, 1, src_len):expand(bsz, num_heads, 1, src_len):reshape(BH, 1, src_len)
    if mask == nil then
      mask = kpm
    elseif mask.dtype == torch.bool and kpm.dtype == torch.bool then
      mask = mask:logical_or(kpm)
    elseif kpm.dtype == torch.bool then
      mask = mask:masked_fill(kpm, -huge)
    elseif mask.dtype == torch.bool then
      mask = additive(mask, q.dtype, true) + kpm
    else
      mask = mask + kpm
    end
  end
  if mask ~= nil and mask.dtype == torch.bool then mask = additive(mask, q.dtype, true) end
  if not training then dropout_p = 0 end

  local out, w = attend(q, k, v, mask, 1 / sqrt(head_dim), dropout_p, true)
  out = out:transpose(1, 2):contiguous():view(tgt_len * bsz, embed_dim)
  out = nn.functional.linear(out, out_proj_weight, out_proj_bias)
  out = out:view(tgt_len, bsz, out:size(2))

  if need_weights then
    w = w:view(bsz, num_heads, tgt_len, src_len)
    if average then w = w:sum(2) / num_heads end
    if not is_batched then
      out, w = out:squeeze(2), w:squeeze(1)
    end
    return out, w
  end
  if not is_batched then out = out:squeeze(2) end
  return out, nil
end

------------------------------------------------------------------------------ modules
local layers = require 'moontorch.nn.layers'

-- out_proj's class in PyTorch (a Linear that dynamic quantization leaves alone)
local NDQLinear = class.class('nn.NonDynamicallyQuantizableLinear', layers.Linear)
M.NonDynamicallyQuantizableLinear = NDQLinear
function NDQLinear:__init(...) layers.Linear.__init(self, ...) end

local MultiheadAttention = class.class('nn.MultiheadAttention', Module)
M.MultiheadAttention = MultiheadAttention

local MHA_MOD = 'nn.MultiheadAttention'
local CTOR_NAMES = { 'dropout', 'bias', 'add_bias_kv', 'add_zero_attn', 'kdim', 'vdim', 'batch_first', 'device',
  'dtype' }

local function factory(device, dtype)
  if device == nil and dtype == nil then return nil end
  return { device = device, dtype = dtype }
end

-- nn.MultiheadAttention(embed_dim, num_heads, dropout=0, bias=true, add_bias_kv=false,
-- add_zero_attn=false, kdim=nil, vdim=nil, batch_first=false, {device=, dtype=}); any argument
-- after num_heads may be an option instead
function MultiheadAttention:__init(embed_dim, num_heads, ...)
  Module.__init(self)
  local o = args(MHA_MOD, CTOR_NAMES, ...)
  check_int(MHA_MOD, 'embed_dim', embed_dim, 1)
  check_int(MHA_MOD, 'num_heads', num_heads, 1)
  local dropout, bias, add_bias_kv, add_zero_attn = o[1] or 0, o[2] ~= false, o[3] == true, o[4] == true
  local kdim, vdim, batch_first = o[5] or embed_dim, o[6] or embed_dim, o[7] == true
  check_int(MHA_MOD, 'kdim', kdim, 1)
  check_int(MHA_MOD, 'vdim', vdim, 1)
  if type(dropout) ~= 'number' then fail(MHA_MOD, ('dropout must be a number (got %s)'):format(type(dropout))) end
  local fk = factory(o[8], o[9])
  self.embed_dim = embed_dim
  self.kdim = kdim
  self.vdim = vdim
  self._qkv_same_embed_dim = kdim == embed_dim and vdim == embed_dim
  self.num_heads = num_heads
  self.dropout = dropout
  self.batch_first = batch_first
  self.head_dim = math.floor(embed_dim / num_heads)
  if self.head_dim * num_heads ~= embed_dim then fail(MHA_MOD, 'embed_dim must be divisible by num_heads') end
  local function empty(sizes)
    if fk then return torch.empty(sizes, fk) end
    return torch.empty(sizes)
  end
  if not self._qkv_same_embed_dim then
    self.q_proj_weight = Parameter(empty({ embed_dim, embed_dim }))
    self.k_proj_weight = Parameter(empty({ embed_dim, kdim }))
    self.v_proj_weight = Parameter(empty({ embed_dim, vdim }))
    self:register_parameter('in_proj_weight', nil)
  else
    self.in_proj_weight = Parameter(empty({ 3 * embed_dim, embed_dim }))
    self:register_parameter('q_proj_weight', nil)
    self:register_parameter('k_proj_weight', nil)
    self:register_parameter('v_proj_weight', nil)
  end
  if bias then
    self.in_proj_bias = Parameter(empty({ 3 * embed_dim }))
  else
    self:register_parameter('in_proj_bias', nil)
  end
  local lopts = { bias = bias, device = fk and fk.device, dtype = fk and fk.dtype }
  self.out_proj = NDQLinear(embed_dim, embed_dim, lopts)
  if add_bias_kv then
    self.bias_k = Parameter(empty({ 1, 1, embed_dim }))
    self.bias_v = Parameter(empty({ 1, 1, embed_dim }))
  else
    self.bias_k = nil
    self.bias_v = nil
  end
  self.add_zero_attn = add_zero_attn
  if layers.skipping == 0 then self:_reset_parameters() end
end

-- PyTorch's: xavier_uniform_ on the projection weights, zero biases, xavier_normal_ on bias_k/v
-- (out_proj's weight keeps Linear's initialisation, drawn first, as in PyTorch)
function MultiheadAttention:_reset_parameters()
  local init = nn.init
  if self._qkv_same_embed_dim then
    init.xavier_uniform_(self.in_proj_weight)
  else
    init.xavier_uniform_(self.q_proj_weight)
    init.xavier_uniform_(self.k_proj_weight)
    init.xavier_uniform_(self.v_proj_weight)
  end
  if self.in_proj_bias ~= nil then
    init.constant_(self.in_proj_bias, 0)
    init.constant_(self.out_proj.bias, 0)
  end
  if self.bias_k ~= nil then init.xavier_normal_(self.bias_k) end
  if self.bias_v ~= nil then init.xavier_normal_(self.bias_v) end
end

local FWD_NAMES = { 'key_padding_mask', 'need_weights', 'attn_mask', 'average_attn_weights' }

-- mha(query, key, value, key_padding_mask=nil, need_weights=true, attn_mask=nil,
-- average_attn_weights=true) -> output, weights (nil unless need_weights)
function MultiheadAttention:forward(query, key, value, ...)
  local o = args(MHA_MOD, FWD_NAMES, ...)
  local kpm, need_weights, mask, average = o[1], o[2] ~= false, o[3], o[4] ~= false
  need_tensor(MHA_MOD, query, 'query')
  need_tensor(MHA_MOD, key, 'key')
  need_tensor(MHA_MOD, value, 'value')
  local is_batched = query:dim() == 3
  if kpm ~= nil then check_mask_dtype(MHA_MOD, kpm, 'key_padding_mask') end
  if self.batch_first and is_batched then
    if rawequal(key, value) then
      if rawequal(query, key) then
        query = query:transpose(1, 2)
        key, value = query, query
      else
        query, key = query:transpose(1, 2), key:transpose(1, 2)
        value = key
      end
    else
      query, key, value = query:transpose(1, 2), key:transpose(1, 2), value:transpose(1, 2)
    end
  end
  local F = M.multi_head_attention_forward
  local opts = { training = self.training, key_padding_mask = kpm, need_weights = need_weights, attn_mask = mask,
    average_attn_weights = average }
  if not self._qkv_same_embed_dim then
    opts.use_separate_proj_weight = true
    opts.q_proj_weight, opts.k_proj_weight, opts.v_proj_weight = self.q_proj_weight, self.k_proj_weight,
      self.v_proj_weight
  end
  local out_proj = self.out_proj
  local out, w = F(query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
    self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, out_proj.weight, out_proj.bias, opts)
  if self.batch_first and is_batched then return out:transpose(1, 2), w end
  return out, w
end
declare_forward(MultiheadAttention, { 'query', 'key', 'value', 'key_padding_mask', 'need_weights', 'attn_mask',
  'average_attn_weights' }, { nreq = 3, kwargs = FWD_NAMES })


function M.install(nn_)
  nn = nn_
  nn.MultiheadAttention = MultiheadAttention
  nn.NonDynamicallyQuantizableLinear = NDQLinear
  nn.functional.scaled_dot_product_attention = M.scaled_dot_product_attention
  nn.functional.multi_head_attention_forward = M.multi_head_attention_forward
end

return M
