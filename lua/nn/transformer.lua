-- Transformers: nn.TransformerEncoderLayer, nn.TransformerDecoderLayer, nn.TransformerEncoder,
-- nn.TransformerDecoder, nn.Transformer (with Transformer.generate_square_subsequent_mask), as
-- PyTorch 1.13 builds them: the same children under the same names (so state_dict keys match),
-- drawing the same numbers at construction, the stacks holding deep copies of the layer given.
--
-- nn.LayerNorm and nn.Dropout are used where nn has them; until then the private _LayerNorm and
-- _Dropout below stand in (PyTorch's parameter names weight/bias, printed as PyTorch's
-- LayerNorm(...) / Dropout(...)).
--
-- activation: 'relu' or 'gelu' (kept as that name, so the layer stays savable with torch.save;
-- PyTorch keeps F.relu / F.gelu there), nn.functional.relu / gelu (taken as those names), any
-- other function (kept as it is) or a module (registered as the child `activation`, as PyTorch's
-- assignment registers it).
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local Mod = require 'moontorch.nn.Module'
local layers = require 'moontorch.nn.layers'

local fail = core.fail
local is_tensor = T.is_tensor
local Module, Parameter, is_parameter = Mod.Module, Mod.Parameter, Mod.is_parameter
local check_int, declare_forward, is_module = Mod.check_int, Mod.declare_forward, Mod.is_module
local pyfloat = layers.pyfloat
local type, select, tostring, pairs, rawget, rawset = type, select, tostring, pairs, rawget, rawset
local getmetatable, setmetatable = getmetatable, setmetatable

local M = {}
local nn -- moontorch.nn, set by install

local function is_opts(v) return type(v) == 'table' and not is_tensor(v) and not is_module(v) end

local args = require('moontorch.nn.optargs').parser { is_opts = is_opts }

local function factory(device, dtype)
  if device == nil and dtype == nil then return {} end
  return { device = device, dtype = dtype }
end

local function check_kpm(fn, m)
  if m ~= nil and m.dtype ~= torch.bool and not m:is_floating_point() then
    fail(fn, 'only bool and floating types of key_padding_mask are supported')
  end
end

------------------------------------------------------------------------------ stand-ins
local LayerNorm_ = class.class('nn._TransformerLayerNorm', Module)
M._LayerNorm = LayerNorm_
function LayerNorm_:__init(d, opts)
  Module.__init(self)
  local fk = factory(opts.device, opts.dtype)
  self.normalized_shape = { d }
  self.eps = opts.eps or 1e-5
  self.elementwise_affine = true
  self.weight = Parameter(torch.ones({ d }, fk))
  self.bias = Parameter(torch.zeros({ d }, fk))
end
function LayerNorm_:forward(x)
  return nn.functional.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
end
declare_forward(LayerNorm_, { 'input' })
function LayerNorm_:_get_name() return 'LayerNorm' end
function LayerNorm_:extra_repr()
  return ('(%d,), eps=%s, elementwise_affine=True'):format(self.normalized_shape[1], pyfloat(self.eps))
end

local Dropout_ = class.class('nn._TransformerDropout', Module)
M._Dropout = Dropout_
function Dropout_:__init(p)
  Module.__init(self)
  self.p = p
  self.inplace = false
end
function Dropout_:forward(x) return nn.functional.dropout(x, self.p, self.training) end
declare_forward(Dropout_, { 'input' })
function Dropout_:_get_name() return 'Dropout' end
function Dropout_:extra_repr() return ('p=%s, inplace=False'):format(pyfloat(self.p)) end

local function layer_norm(d, eps, fk)
  if nn.LayerNorm then return nn.LayerNorm(d, { eps = eps, device = fk.device, dtype = fk.dtype }) end
  return LayerNorm_(d, { eps = eps, device = fk.device, dtype = fk.dtype })
end
local function dropout(p)
  if nn.Dropout then return nn.Dropout(p) end
  return Dropout_(p)
end

------------------------------------------------------------------------------ deep copies
-- deep copies (torch.deepcopy): lua/nn/Module.lua
local deepcopy = Mod.deepcopy_memo
M.deepcopy = Mod.deepcopy

local function clones(module, n)
  local list = {}
  for i = 1, n do list[i] = deepcopy(module, {}) end
  return nn.ModuleList(list)
end

------------------------------------------------------------------------------ activations
local function activation_of(fn, act)
  if act == nil then return 'relu' end
  if type(act) == 'string' then
    if act ~= 'relu' and act ~= 'gelu' then fail(fn, ('activation should be relu/gelu, not %s'):format(act)) end
    return act
  end
  if act == nn.functional.relu then return 'relu' end
  if act == nn.functional.gelu then return 'gelu' end
  if type(act) == 'function' or is_module(act) then return act end
  if type(act) == 'table' and getmetatable(act) and getmetatable(act).__call then return act end
  fail(fn, ('activation must be a string, a function or a module (got %s)'):format(type(act)))
end

local function activate(act, x)
  if act == 'relu' then return x:relu() end
  if act == 'gelu' then return nn.functional.gelu(x) end
  return act(x)
end

local LAYER_NAMES = { 'dim_feedforward', 'dropout', 'activation', 'layer_norm_eps', 'batch_first', 'norm_first',
  'device', 'dtype' }

-- the shared part of the two layers' constructors
local function layer_init(self, fn, d_model, nhead, ...)
  local o = args(fn, LAYER_NAMES, ...)
  check_int(fn, 'd_model', d_model, 1)
  check_int(fn, 'nhead', nhead, 1)
  local dim_ff, p, act = o[1] or 2048, o[2] or 0.1, activation_of(fn, o[3])
  local eps, batch_first, norm_first = o[4] or 1e-5, o[5] == true, o[6] == true
  check_int(fn, 'dim_feedforward', dim_ff, 1)
  local fk = factory(o[7], o[8])
  return dim_ff, p, act, eps, batch_first, norm_first, fk
end

------------------------------------------------------------------------------ TransformerEncoderLayer
local EncoderLayer = class.class('nn.TransformerEncoderLayer', Module)
M.TransformerEncoderLayer = EncoderLayer
local ENC_LAYER = 'nn.TransformerEncoderLayer'

-- nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1, activation='relu',
-- layer_norm_eps=1e-5, batch_first=false, norm_first=false, {device=, dtype=})
function EncoderLayer:__init(d_model, nhead, ...)
  Module.__init(self)
  local dim_ff, p, act, eps, batch_first, norm_first, fk = layer_init(self, ENC_LAYER, d_model, nhead, ...)
  self.self_attn = nn.MultiheadAttention(d_model, nhead,
    { dropout = p, batch_first = batch_first, device = fk.device, dtype = fk.dtype })
  self.linear1 = nn.Linear(d_model, dim_ff, fk)
  self.dropout = dropout(p)
  self.linear2 = nn.Linear(dim_ff, d_model, fk)
  self.norm_first = norm_first
  self.norm1 = layer_norm(d_model, eps, fk)
  self.norm2 = layer_norm(d_model, eps, fk)
  self.dropout1 = dropout(p)
  self.dropout2 = dropout(p)
  self.activation_relu_or_gelu = act == 'relu' and 1 or act == 'gelu' and 2 or 0
  self.activation = act
end

local function sa_block(self, x, mask, kpm, drop)
  local y = self.self_attn(x, x, x, { attn_mask = mask, key_padding_mask = kpm, need_weights = false })
  return drop(y)
end

local function ff_block(self, x, drop)
  return drop(self.linear2(self.dropout(activate(self.activation, self.linear1(x)))))
end

-- layer(src, src_mask=nil, src_key_padding_mask=nil)
function EncoderLayer:forward(src, ...)
  local o = args(ENC_LAYER, { 'src_mask', 'src_key_padding_mask' }, ...)
  local mask, kpm = o[1], o[2]
  check_kpm(ENC_LAYER, kpm)
  local x = src
  if self.norm_first then
    x = x + sa_block(self, self.norm1(x), mask, kpm, self.dropout1)
    x = x + ff_block(self, self.norm2(x), self.dropout2)
  else
    x = self.norm1(x + sa_block(self, x, mask, kpm, self.dropout1))
    x = self.norm2(x + ff_block(self, x, self.dropout2))
  end
  return x
end
declare_forward(EncoderLayer, { 'src', 'src_mask', 'src_key_padding_mask' },
  { nreq = 1, kwargs = { 'src_mask', 'src_key_padding_mask' } })

------------------------------------------------------------------------------ TransformerDecoderLayer
local DecoderLayer = class.class('nn.TransformerDecoderLayer', Module)
M.TransformerDecoderLayer = DecoderLayer
local DEC_LAYER = 'nn.TransformerDecoderLayer'

-- nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1, activation='relu',
-- layer_norm_eps=1e-5, batch_first=false, norm_first=false, {device=, dtype=})
function DecoderLayer:__init(d_model, nhead, ...)
  Module.__init(self)
  local dim_ff, p, act, eps, batch_first, norm_first, fk = layer_init(self, DEC_LAYER, d_model, nhead, ...)
  local mopts = { dropout = p, batch_first = batch_first, device = fk.device, dtype = fk.dtype }
  self.self_attn = nn.MultiheadAttention(d_model, nhead, mopts)
  self.multihead_attn = nn.MultiheadAttention(d_model, nhead, mopts)
  self.linear1 = nn.Linear(d_model, dim_ff, fk)
  self.dropout = dropout(p)
  self.linear2 = nn.Linear(dim_ff, d_model, fk)
  self.norm_first = norm_first
  self.norm1 = layer_norm(d_model, eps, fk)
  self.norm2 = layer_norm(d_model, eps, fk)
  self.norm3 = layer_norm(d_model, eps, fk)
  self.dropout1 = dropout(p)
  self.dropout2 = dropout(p)
  self.dropout3 = dropout(p)
  self.activation = act
end

local function mha_block(self, x, mem, mask, kpm)
  local y = self.multihead_attn(x, mem, mem, { attn_mask = mask, key_padding_mask = kpm, need_weights = false })
  return self.dropout2(y)
end

local DEC_KW = { 'tgt_mask', 'memory_mask', 'tgt_key_padding_mask', 'memory_key_padding_mask' }

-- layer(tgt, memory, tgt_mask=nil, memory_mask=nil, tgt_key_padding_mask=nil, memory_key_padding_mask=nil)
function DecoderLayer:forward(tgt, memory, ...)
  local o = args(DEC_LAYER, DEC_KW, ...)
  local tmask, mmask, tkpm, mkpm = o[1], o[2], o[3], o[4]
  local x = tgt
  if self.norm_first then
    x = x + sa_block(self, self.norm1(x), tmask, tkpm, self.dropout1)
    x = x + mha_block(self, self.norm2(x), memory, mmask, mkpm)
    x = x + ff_block(self, self.norm3(x), self.dropout3)
  else
    x = self.norm1(x + sa_block(self, x, tmask, tkpm, self.dropout1))
    x = self.norm2(x + mha_block(self, x, memory, mmask, mkpm))
    x = self.norm3(x + ff_block(self, x, self.dropout3))
  end
  return x
end
declare_forward(DecoderLayer, { 'tgt', 'memory', 'tgt_mask', 'memory_mask', 'tgt_key_padding_mask',
  'memory_key_padding_mask' }, { nreq = 2, kwargs = DEC_KW })

------------------------------------------------------------------------------ stacks
local Encoder = class.class('nn.TransformerEncoder', Module)
M.TransformerEncoder = Encoder
local ENC = 'nn.TransformerEncoder'

-- nn.TransformerEncoder(encoder_layer, num_layers, norm=nil, enable_nested_tensor=true, mask_check=true):
-- num_layers deep copies of encoder_layer, then norm
function Encoder:__init(encoder_layer, num_layers, ...)
  Module.__init(self)
  local o = args(ENC, { 'norm', 'enable_nested_tensor', 'mask_check' }, ...)
  if not is_module(encoder_layer) then fail(ENC, 'encoder_layer must be a module') end
  check_int(ENC, 'num_layers', num_layers, 0)
  self.layers = clones(encoder_layer, num_layers)
  self.num_layers = num_layers
  self.norm = o[1]
  self.enable_nested_tensor = o[2] ~= false
  self.mask_check = o[3] ~= false
end

-- encoder(src, mask=nil, src_key_padding_mask=nil)
function Encoder:forward(src, ...)
  local o = args(ENC, { 'mask', 'src_key_padding_mask' }, ...)
  local mask, kpm = o[1], o[2]
  check_kpm(ENC, kpm)
  local out = src
  local list = self.layers
  for i = 1, #list do out = list[i](out, { src_mask = mask, src_key_padding_mask = kpm }) end
  if self.norm ~= nil then out = self.norm(out) end
  return out
end
declare_forward(Encoder, { 'src', 'mask', 'src_key_padding_mask' }, { nreq = 1, kwargs = { 'mask',
  'src_key_padding_mask' } })

local Decoder = class.class('nn.TransformerDecoder', Module)
M.TransformerDecoder = Decoder
local DEC = 'nn.TransformerDecoder'

-- nn.TransformerDecoder(decoder_layer, num_layers, norm=nil)
function Decoder:__init(decoder_layer, num_layers, ...)
  Module.__init(self)
  local o = args(DEC, { 'norm' }, ...)
  if not is_module(decoder_layer) then fail(DEC, 'decoder_layer must be a module') end
  check_int(DEC, 'num_layers', num_layers, 0)
  self.layers = clones(decoder_layer, num_layers)
  self.num_layers = num_layers
  self.norm = o[1]
end

-- decoder(tgt, memory, tgt_mask=nil, memory_mask=nil, tgt_key_padding_mask=nil, memory_key_padding_mask=nil)
function Decoder:forward(tgt, memory, ...)
  local o = args(DEC, DEC_KW, ...)
  local kw = { tgt_mask = o[1], memory_mask = o[2], tgt_key_padding_mask = o[3], memory_key_padding_mask = o[4] }
  local out = tgt
  local list = self.layers
  for i = 1, #list do out = list[i](out, memory, kw) end
  if self.norm ~= nil then out = self.norm(out) end
  return out
end
declare_forward(Decoder, { 'tgt', 'memory', 'tgt_mask', 'memory_mask', 'tgt_key_padding_mask',
  'memory_key_padding_mask' }, { nreq = 2, kwargs = DEC_KW })

------------------------------------------------------------------------------ Transformer
local Transformer = class.class('nn.Transformer', Module)
M.Transformer = Transformer
local TR = 'nn.Transformer'
local TR_NAMES = { 'd_model', 'nhead', 'num_encoder_layers', 'num_decoder_layers', 'dim_feedforward', 'dropout',
  'activation', 'custom_encoder', 'custom_decoder', 'layer_norm_eps', 'batch_first', 'norm_first', 'device', 'dtype' }

-- nn.Transformer(d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
-- dim_feedforward=2048, dropout=0.1, activation='relu', custom_encoder=nil, custom_decoder=nil,
-- layer_norm_eps=1e-5, batch_first=false, norm_first=false, {device=, dtype=})
function Transformer:__init(...)
  Module.__init(self)
  local o = args(TR, TR_NAMES, ...)
  local d_model, nhead = o[1] or 512, o[2] or 8
  local nenc, ndec, dim_ff, p = o[3] or 6, o[4] or 6, o[5] or 2048, o[6] or 0.1
  local act, eps, batch_first, norm_first = o[7], o[10] or 1e-5, o[11] == true, o[12] == true
  check_int(TR, 'd_model', d_model, 1)
  check_int(TR, 'nhead', nhead, 1)
  local fk = factory(o[13], o[14])
  local lopts = { dim_feedforward = dim_ff, dropout = p, activation = act, layer_norm_eps = eps,
    batch_first = batch_first, norm_first = norm_first, device = fk.device, dtype = fk.dtype }
  if o[8] ~= nil then
    self.encoder = o[8]
  else
    local layer = EncoderLayer(d_model, nhead, lopts)
    self.encoder = Encoder(layer, nenc, { norm = layer_norm(d_model, eps, fk) })
  end
  if o[9] ~= nil then
    self.decoder = o[9]
  else
    local layer = DecoderLayer(d_model, nhead, lopts)
    self.decoder = Decoder(layer, ndec, { norm = layer_norm(d_model, eps, fk) })
  end
  if layers.skipping == 0 then self:_reset_parameters() end
  self.d_model = d_model
  self.nhead = nhead
  self.batch_first = batch_first
end

function Transformer:_reset_parameters()
  for _, p in ipairs(self:parameters()) do
    if p:dim() > 1 then nn.init.xavier_uniform_(p) end
  end
end

local TR_KW = { 'src_mask', 'tgt_mask', 'memory_mask', 'src_key_padding_mask', 'tgt_key_padding_mask',
  'memory_key_padding_mask' }

-- transformer(src, tgt, src_mask=nil, tgt_mask=nil, memory_mask=nil, src_key_padding_mask=nil,
-- tgt_key_padding_mask=nil, memory_key_padding_mask=nil)
function Transformer:forward(src, tgt, ...)
  local o = args(TR, TR_KW, ...)
  local is_batched = src:dim() == 3
  if is_batched then
    local bd = self.batch_first and 1 or 2
    if src:size(bd) ~= tgt:size(bd) then fail(TR, 'the batch number of src and tgt must be equal') end
  end
  if src:size(-1) ~= self.d_model or tgt:size(-1) ~= self.d_model then
    fail(TR, 'the feature number of src and tgt must be equal to d_model')
  end
  local memory = self.encoder(src, { mask = o[1], src_key_padding_mask = o[4] })
  return self.decoder(tgt, memory, { tgt_mask = o[2], memory_mask = o[3], tgt_key_padding_mask = o[5],
    memory_key_padding_mask = o[6] })
end
declare_forward(Transformer, { 'src', 'tgt', 'src_mask', 'tgt_mask', 'memory_mask', 'src_key_padding_mask',
  'tgt_key_padding_mask', 'memory_key_padding_mask' }, { nreq = 2, kwargs = TR_KW })

-- nn.Transformer.generate_square_subsequent_mask(sz, {device=, dtype=}) (also as a method:
-- model:generate_square_subsequent_mask(sz)): an sz x sz float mask, -inf above the diagonal, 0 elsewhere
function Transformer.generate_square_subsequent_mask(sz, ...)
  if type(sz) == 'table' and is_module(sz) then return Transformer.generate_square_subsequent_mask(...) end
  local o = args('nn.Transformer.generate_square_subsequent_mask', { 'device', 'dtype' }, ...)
  check_int('nn.Transformer.generate_square_subsequent_mask', 'sz', sz, 0)
  local fk = { device = o[1] or 'cpu', dtype = o[2] }
  return torch.full({ sz, sz }, -math.huge, fk):triu(1)
end

function M.install(nn_)
  nn = nn_
  class.export(M, nn, true)
end

return M
