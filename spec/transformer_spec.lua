-- nn.TransformerEncoderLayer / DecoderLayer, nn.TransformerEncoder / Decoder, nn.Transformer.
-- Expected values: spec/support/attention_wants.lua, recorded from PyTorch 1.13 (/usr/bin/python3)
-- by spec/support/attention_record.py (float64 modules built under a seed, parameters perturbed,
-- their state_dicts, outputs and the gradients of every parameter and input; float32
-- state_dicts right after construction under torch.manual_seed(0)).
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local F = nn.functional
local W = dofile('spec/support/attention_wants.lua')

local function tensor_of(r, requires_grad)
  if r == nil then return nil end
  local t = torch.tensor(r.values, { dtype = torch[r.dtype] }):reshape(r.shape)
  if requires_grad then t:requires_grad_(true) end
  return t
end

local function state_dict_of(list)
  local sd = torch.OrderedDict()
  for _, kv in ipairs(list) do sd[kv[1]] = tensor_of(kv[2]) end
  return sd
end

local function kwargs_of(rec)
  local o = {}
  for k, v in pairs(rec) do
    if type(v) == 'table' and v.values then o[k] = tensor_of(v) else o[k] = v end
  end
  return o
end

-- the recorded cases' constructors, from PyTorch's keyword arguments
local function build(name, ctor)
  local o = { dtype = torch.float64 }
  for k, v in pairs(ctor) do o[k] = v end
  if name:find('^encoder layer') then
    local d, h = o.d_model, o.nhead
    o.d_model, o.nhead = nil, nil
    return nn.TransformerEncoderLayer(d, h, o)
  elseif name:find('^decoder layer') then
    local d, h = o.d_model, o.nhead
    o.d_model, o.nhead = nil, nil
    return nn.TransformerDecoderLayer(d, h, o)
  end
  return nn.Transformer(o)
end

describe('transformer layers against PyTorch 1.13', function()
  for _, c in ipairs(W.layers) do
    it(c.name, function()
      local m = build(c.name, c.ctor)
      local sd = state_dict_of(c.state_dict)
      assert.are.same(sd:keys(), m:state_dict():keys())
      assert.are.equal('<All keys matched successfully>', tostring(m:load_state_dict(sd)))
      local xs = {}
      for i, r in ipairs(c.inputs) do xs[i] = tensor_of(r, true) end
      xs[#xs + 1] = kwargs_of(c.fwd)
      local out = m(unpack(xs))
      assert.are.same(c.out.shape, H.shape(out))
      H.near(out, c.out.values, 1e-10, 1e-10)
      ;(out * tensor_of(c.g_out)):sum():backward()
      local want = {}
      for _, kv in ipairs(c.grads) do want[kv[1]] = kv[2] end
      local n = 0
      for name, p in m:named_parameters() do
        H.near(p.grad, want[name].values, 1e-9, 1e-9)
        n = n + 1
      end
      assert.are.equal(#c.grads, n)
      for i, r in ipairs(c.input_grads) do H.near(xs[i].grad, r.values, 1e-9, 1e-9) end
    end)
  end

  it('draw PyTorch\'s numbers at construction under the same seed (float32)', function()
    local builds = {
      ['TransformerEncoderLayer(8, 2, 16)'] = function() return nn.TransformerEncoderLayer(8, 2, 16) end,
      ['TransformerDecoderLayer(8, 2, 16)'] = function() return nn.TransformerDecoderLayer(8, 2, 16) end,
      ['Transformer(8, 2, 1, 1, 16)'] = function() return nn.Transformer(8, 2, 1, 1, 16) end,
    }
    local n = 0
    for _, c in ipairs(W.init) do
      local b = builds[c.name]
      if b then
        torch.manual_seed(0)
        local sd = b():state_dict()
        local keys = sd:keys()
        assert.are.equal(#c.state_dict, #keys)
        for i, kv in ipairs(c.state_dict) do
          assert.are.equal(kv[1], keys[i])
          H.near(sd[kv[1]], kv[2].values, 1e-6, 1e-5)
        end
        n = n + 1
      end
    end
    assert.are.equal(3, n)
  end)
end)

describe('transformer modules', function()
  it('print as PyTorch prints them', function()
    local l = nn.TransformerEncoderLayer(8, 2, 16, { activation = 'gelu' })
    assert.are.equal([[TransformerEncoderLayer(
  (self_attn): MultiheadAttention(
    (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)
  )
  (linear1): Linear(in_features=8, out_features=16, bias=True)
  (dropout): Dropout(p=0.1, inplace=False)
  (linear2): Linear(in_features=16, out_features=8, bias=True)
  (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True)
  (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True)
  (dropout1): Dropout(p=0.1, inplace=False)
  (dropout2): Dropout(p=0.1, inplace=False)
)]], tostring(l))
    local e = nn.TransformerEncoder(l, 2, nn.TransformerDecoderLayer(8, 2).norm1)
    local s = tostring(e)
    assert.truthy(s:find('^TransformerEncoder%(\n  %(layers%): ModuleList%(\n    %(0%): TransformerEncoderLayer%(\n'))
    assert.truthy(s:find('\n    %(1%): TransformerEncoderLayer%(\n'))
    assert.truthy(s:find('\n  %(norm%): LayerNorm%(%(8,%), eps=1e%-05, elementwise_affine=True%)\n%)$'))
  end)

  it('stack deep copies of the layer (PyTorch\'s _get_clones)', function()
    local l = nn.TransformerEncoderLayer(4, 2, 8, 0.0)
    local e = nn.TransformerEncoder(l, 3)
    assert.are.equal(3, #e.layers)
    local keys = e:state_dict():keys()
    assert.are.equal('layers.0.self_attn.in_proj_weight', keys[1])
    assert.are.equal('layers.2.norm2.bias', keys[#keys])
    for i = 1, 3 do
      local p = e.layers[i].linear1.weight
      assert.is_false(rawequal(p, l.linear1.weight))
      assert.is_true(torch.isinstance(p, nn.Parameter))
      assert.is_true(p.requires_grad)
      assert.is_true(torch.equal(p, l.linear1.weight))
    end
    torch.no_grad(function() e.layers[1].linear1.weight:fill_(0) end)
    assert.is_false(torch.equal(e.layers[2].linear1.weight, e.layers[1].linear1.weight))
    -- copies run as the original
    local x = torch.randn(5, 2, 4)
    local e1 = nn.TransformerEncoder(l, 1)
    H.near(e1(x), l(x), 1e-6)
  end)

  it('take activation as relu, gelu, a function or a module', function()
    local x = torch.randn(3, 2, 4)
    torch.manual_seed(0)
    local a = nn.TransformerEncoderLayer(4, 2, 8, 0.0, 'gelu')
    torch.manual_seed(0)
    local b = nn.TransformerEncoderLayer(4, 2, 8, 0.0, F.gelu)
    torch.manual_seed(0)
    local c = nn.TransformerEncoderLayer(4, 2, 8, 0.0, function(t) return F.gelu(t) end)
    H.near(a(x), b(x), 0)
    H.near(a(x), c(x), 0)
    assert.are.equal(2, a.activation_relu_or_gelu)
    assert.are.equal(0, c.activation_relu_or_gelu)
    local r = nn.TransformerEncoderLayer(4, 2, 8, { activation = nn.ReLU() })
    assert.truthy(tostring(r):find('\n  %(activation%): ReLU%(%)\n'))
    H.errors_with(function() nn.TransformerEncoderLayer(4, 2, 8, 0.1, 'tanh') end,
      'moontorch.nn.TransformerEncoderLayer: activation should be relu/gelu, not tanh')
  end)

  it('generate_square_subsequent_mask, from the class and from a model', function()
    local m = nn.Transformer.generate_square_subsequent_mask(3)
    assert.are.same({ { 0, -math.huge, -math.huge }, { 0, 0, -math.huge }, { 0, 0, 0 } }, m:tolist())
    local t = nn.Transformer(8, 2, 1, 1, 16, 0.0)
    assert.are.same(m:tolist(), t:generate_square_subsequent_mask(3):tolist())
    assert.are.equal(torch.float64, nn.Transformer.generate_square_subsequent_mask(2, { dtype = torch.float64 }).dtype)
  end)

  it('nn.Transformer checks src and tgt at the caller\'s line', function()
    local t = nn.Transformer(8, 2, 1, 1, 16, 0.0)
    local err = H.errors_with(function() t(torch.randn(4, 2, 8), torch.randn(3, 3, 8)) end,
      'moontorch.nn.Transformer: the batch number of src and tgt must be equal')
    assert.truthy(err:find('transformer_spec.lua:%d+:'))
    H.errors_with(function() t(torch.randn(4, 2, 8), torch.randn(3, 2, 6)) end,
      'the feature number of src and tgt must be equal to d_model')
    local out = t(torch.randn(4, 2, 8), torch.randn(3, 2, 8), { tgt_mask = t:generate_square_subsequent_mask(3) })
    assert.are.same({ 3, 2, 8 }, H.shape(out))
    H.errors_with(function()
      t.encoder(torch.randn(4, 2, 8), { src_key_padding_mask = torch.zeros(2, 4, { dtype = torch.int64 }) })
    end, 'only bool and floating types of key_padding_mask are supported')
    H.errors_with(function() nn.TransformerEncoderLayer(10, 3) end, 'embed_dim must be divisible by num_heads')
  end)

  it('dropout acts in training only', function()
    local l = nn.TransformerEncoderLayer(8, 2, 16, 0.5)
    local x = torch.randn(4, 2, 8)
    torch.manual_seed(1)
    local a = l(x)
    torch.manual_seed(2)
    local b = l(x)
    assert.is_false(torch.allclose(a, b))
    l:eval()
    H.near(l(x), l(x), 0)
  end)

  it('build on the meta device and run there', function()
    local t = nn.Transformer(8, 2, 1, 1, 16, { device = 'meta' })
    for _, p in ipairs(t:parameters()) do assert.are.equal('meta', p.device.type) end
    local out = t(torch.empty(5, 2, 8, { device = 'meta' }), torch.empty(3, 2, 8, { device = 'meta' }))
    assert.are.equal('meta', out.device.type)
    assert.are.same({ 3, 2, 8 }, H.shape(out))
    local l = nn.TransformerDecoderLayer(8, 2, 16, { device = 'meta', batch_first = true, norm_first = true })
    assert.are.same({ 2, 3, 8 }, H.shape(l(torch.empty(2, 3, 8, { device = 'meta' }),
      torch.empty(2, 5, 8, { device = 'meta' }))))
  end)

  it('gradcheck in float64 (encoder layer, norm_first, masks)', function()
    torch.manual_seed(3)
    local l = nn.TransformerEncoderLayer(4, 2, 6, 0.0, 'gelu', { norm_first = true, dtype = torch.float64 })
    local x = torch.randn(3, 2, 4, { dtype = torch.float64, requires_grad = true })
    local mask = nn.Transformer.generate_square_subsequent_mask(3, { dtype = torch.float64 })
    local kpm = torch.tensor({ { false, false, true }, { false, false, false } })
    assert.is_true(torch.autograd.gradcheck(function(a, w)
      return l(a, { src_mask = mask, src_key_padding_mask = kpm }):sum() + (w * w):sum()
    end, { x, l.linear1.weight }))
  end)

  it('saves and loads with torch.save', function()
    local l = nn.TransformerEncoderLayer(4, 2, 8, 0.0, { batch_first = true })
    local path = os.tmpname()
    torch.save(l, path)
    local back = torch.load(path)
    os.remove(path)
    local x = torch.randn(2, 3, 4)
    H.near(back(x), l(x), 0)
  end)
end)

describe('transformer module calls', function()
  it('check their arguments as Python does, at the caller\'s line', function()
    local x = torch.randn(3, 2, 4)
    local enc = nn.TransformerEncoderLayer(4, 2, 8, 0.0)
    local err = H.errors_with(function() enc() end,
      "moontorch.nn.TransformerEncoderLayer: forward() missing 1 required positional argument: 'src'")
    assert.truthy(err:find('transformer_spec.lua:%d+:'))
    H.errors_with(function() enc(x, nil, nil, x) end,
      'moontorch.nn.TransformerEncoderLayer: forward() takes from 1 to 3 positional arguments but 4 were given')
    H.errors_with(function() enc(x, { mask = x }) end, "forward() got an unexpected keyword argument 'mask'")
    local dec = nn.TransformerDecoderLayer(4, 2, 8, 0.0)
    H.errors_with(function() dec(x) end,
      "moontorch.nn.TransformerDecoderLayer: forward() missing 1 required positional argument: 'memory'")
    H.errors_with(function() nn.TransformerEncoder(enc, 1)(x, { src_mask = x }) end,
      "moontorch.nn.TransformerEncoder: forward() got an unexpected keyword argument 'src_mask'")
    H.errors_with(function() nn.TransformerDecoder(dec, 1)(x) end,
      "moontorch.nn.TransformerDecoder: forward() missing 1 required positional argument: 'memory'")
    H.errors_with(function() nn.Transformer(4, 2, 1, 1, 8)(x) end,
      "moontorch.nn.Transformer: forward() missing 1 required positional argument: 'tgt'")
    H.errors_with(function() nn.NonDynamicallyQuantizableLinear(4, 4)(x, x) end,
      'moontorch.nn.NonDynamicallyQuantizableLinear: forward() takes 1 positional argument but 2 were given')
    -- positional masks work as keywords do
    local mask = nn.Transformer.generate_square_subsequent_mask(3)
    H.near(enc(x, mask), enc(x, { src_mask = mask }), 0)
  end)
end)

describe('nn.Transformer parts', function()
  it('takes a custom encoder and decoder, and passes every mask to them', function()
    local seen = {}
    local Enc, EP = torch.class('spec.TrCustomEncoder', 'nn.Module')
    function Enc:__init() EP.__init(self) end
    function Enc:forward(src, o) seen.enc = o; return src * 2 end
    local Dec, DP = torch.class('spec.TrCustomDecoder', 'nn.Module')
    function Dec:__init() DP.__init(self) end
    function Dec:forward(tgt, memory, o) seen.dec = o; return tgt + memory:sum() end
    local t = nn.Transformer({ d_model = 4, nhead = 2, custom_encoder = Enc(), custom_decoder = Dec() })
    assert.are.same({}, t:parameters())
    local src, tgt = torch.ones(3, 2, 4), torch.zeros(5, 2, 4)
    local sm, tm, mm = torch.zeros(3, 3), torch.zeros(5, 5), torch.zeros(5, 3)
    local out = t(src, tgt, sm, tm, mm)
    H.near(out, torch.full({ 5, 2, 4 }, 48), 0)
    assert.is_true(rawequal(seen.enc.mask, sm))
    assert.is_true(rawequal(seen.dec.tgt_mask, tm))
    assert.is_true(rawequal(seen.dec.memory_mask, mm))
  end)

  it('stacks run their layers in turn, then the norm', function()
    torch.manual_seed(0)
    local l = nn.TransformerDecoderLayer(4, 2, 8, 0.0)
    local norm = nn.TransformerEncoderLayer(4, 2, 8).norm1
    local d = nn.TransformerDecoder(l, 2, norm)
    local tgt, mem = torch.randn(3, 2, 4), torch.randn(5, 2, 4)
    local mask = nn.Transformer.generate_square_subsequent_mask(3)
    local by_hand = d.layers[2](d.layers[1](tgt, mem, mask), mem, mask)
    H.near(d(tgt, mem, { tgt_mask = mask }), d.norm(by_hand), 1e-6)
  end)
end)
