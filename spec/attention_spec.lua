-- F.scaled_dot_product_attention, F.multi_head_attention_forward, nn.MultiheadAttention.
-- Expected values: spec/support/attention_wants.lua, recorded from PyTorch 1.13 (/usr/bin/python3)
-- by spec/support/attention_record.py (float64 modules loaded from PyTorch's state_dicts, their
-- outputs, attention weights and gradients; scaled_dot_product_attention from the explicit
-- formula in 1.13 with PyTorch 2.x's mask semantics; float32 state_dicts right after
-- construction under torch.manual_seed(0)).
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

-- PyTorch's keyword arguments of a forward: recorded tensors become tensors
local function kwargs_of(rec)
  local o = {}
  for k, v in pairs(rec) do
    if type(v) == 'table' and v.values then o[k] = tensor_of(v) else o[k] = v end
  end
  return o
end

local function same_shape(t, r) assert.are.same(r.shape, H.shape(t)) end

local function check_grads(m, recorded, atol)
  local want = {}
  for _, kv in ipairs(recorded) do want[kv[1]] = kv[2] end
  local n = 0
  for name, p in m:named_parameters() do
    assert(want[name], 'no recorded gradient for ' .. name)
    H.near(p.grad, want[name].values, atol, atol)
    n = n + 1
  end
  assert.are.equal(#recorded, n)
end

local live0
local function live() return tonumber(torch._C.mt_get_stats().live_tensors) end

describe('nn.MultiheadAttention against PyTorch 1.13', function()
  for _, c in ipairs(W.mha) do
    it(c.name, function()
      local ctor = {}
      for k, v in pairs(c.ctor) do ctor[k] = v end
      local E, heads = ctor.embed_dim, ctor.num_heads
      ctor.embed_dim, ctor.num_heads = nil, nil
      ctor.dtype = torch.float64
      local m = nn.MultiheadAttention(E, heads, ctor)
      assert.are.equal('<All keys matched successfully>', tostring(m:load_state_dict(state_dict_of(c.state_dict))))
      m:eval()
      local q = tensor_of(c.q, true)
      local k, v = q, q
      if c.same == 'kv' then
        k = tensor_of(c.k, true)
        v = k
      elseif c.same == 'none' then
        k, v = tensor_of(c.k, true), tensor_of(c.v, true)
      end
      local out, w = m(q, k, v, kwargs_of(c.fwd))
      same_shape(out, c.out)
      H.near(out, c.out.values, 1e-10, 1e-10)
      local loss = (out * tensor_of(c.g_out)):sum()
      if c.weights then
        same_shape(w, c.weights)
        H.near(w, c.weights.values, 1e-10, 1e-10)
        loss = loss + (w * tensor_of(c.g_w)):sum()
      else
        assert.is_nil(w)
      end
      loss:backward()
      check_grads(m, c.grads, 1e-9)
      H.near(q.grad, c.q_grad.values, 1e-9, 1e-9)
      if c.k_grad then H.near(k.grad, c.k_grad.values, 1e-9, 1e-9) end
      if c.v_grad then H.near(v.grad, c.v_grad.values, 1e-9, 1e-9) end
    end)
  end

  it('draws PyTorch\'s numbers at construction under the same seed (float32)', function()
    local builds = {
      ['MultiheadAttention(8, 2)'] = function() return nn.MultiheadAttention(8, 2) end,
      ['MultiheadAttention(8, 2, kdim=5, vdim=6, add_bias_kv=True)'] = function()
        return nn.MultiheadAttention(8, 2, { kdim = 5, vdim = 6, add_bias_kv = true })
      end,
      ['MultiheadAttention(8, 2, bias=False)'] = function() return nn.MultiheadAttention(8, 2, 0.0, false) end,
    }
    local n = 0
    for _, c in ipairs(W.init) do
      local build = builds[c.name]
      if build then
        torch.manual_seed(0)
        local sd = build():state_dict()
        local keys = sd:keys()
        assert.are.equal(#c.state_dict, #keys)
        for i, kv in ipairs(c.state_dict) do
          assert.are.equal(kv[1], keys[i])
          assert.are.same(kv[2].shape, H.shape(sd[kv[1]]))
          H.near(sd[kv[1]], kv[2].values, 1e-6, 1e-5)
        end
        n = n + 1
      end
    end
    assert.are.equal(3, n)
  end)
end)

describe('nn.MultiheadAttention', function()
  it('names, shapes and prints its parameters as PyTorch', function()
    local m = nn.MultiheadAttention(8, 2, { kdim = 5, vdim = 6, add_bias_kv = true, bias = false })
    local names = {}
    for name, p in m:named_parameters() do names[#names + 1] = name .. ' ' .. table.concat(p:size(), 'x') end
    assert.are.same({ 'q_proj_weight 8x8', 'k_proj_weight 8x5', 'v_proj_weight 8x6', 'bias_k 1x1x8', 'bias_v 1x1x8',
      'out_proj.weight 8x8' }, names)
    assert.is_nil(m.in_proj_weight)
    assert.is_nil(m.in_proj_bias)
    assert.are.equal(4, m.head_dim)
    assert.is_false(m._qkv_same_embed_dim)
    assert.are.equal('MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, ' ..
      'bias=False)\n)', tostring(m))
    assert.is_true(torch.isinstance(m.out_proj, nn.Linear))
  end)

  it('returns the weights averaged, per head, or nil', function()
    local m = nn.MultiheadAttention(8, 2, { batch_first = true })
    local q, kv = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    local out, w = m(q, kv, kv)
    assert.are.same({ 2, 3, 8 }, H.shape(out))
    assert.are.same({ 2, 3, 5 }, H.shape(w))
    H.near(w:sum(-1), torch.ones(2, 3), 1e-6)
    local _, wh = m(q, kv, kv, { average_attn_weights = false })
    assert.are.same({ 2, 2, 3, 5 }, H.shape(wh))
    H.near(wh:mean(2), w, 1e-6)
    local o2, none = m(q, kv, kv, nil, false)
    assert.is_nil(none)
    H.near(o2, out, 1e-6)
  end)

  it('drops attention weights in training only, as F.dropout draws them', function()
    local m = nn.MultiheadAttention(8, 2, { dropout = 0.5 })
    local x = torch.randn(4, 2, 8)
    torch.manual_seed(3)
    local _, w1 = m(x, x, x, { average_attn_weights = false })
    local zeros = w1:eq(0):sum():item()
    assert.is_true(zeros > 0)
    m:eval()
    local _, w2 = m(x, x, x, { average_attn_weights = false })
    assert.are.equal(0, w2:eq(0):sum():item())
  end)

  it('builds on the meta device and runs there', function()
    local m = nn.MultiheadAttention(8, 2, { kdim = 4, vdim = 4, add_bias_kv = true, device = 'meta' })
    assert.are.equal('meta', m.q_proj_weight.device.type)
    assert.are.equal('meta', m.out_proj.weight.device.type)
    local q, k = torch.empty(3, 2, 8, { device = 'meta' }), torch.empty(5, 2, 4, { device = 'meta' })
    local out, w = m(q, k, k, { key_padding_mask = torch.zeros(2, 5, { dtype = torch.bool, device = 'meta' }) })
    assert.are.equal('meta', out.device.type)
    assert.are.same({ 3, 2, 8 }, H.shape(out))
    assert.are.same({ 2, 3, 6 }, H.shape(w))
    m:to_empty({ device = 'cpu' })
    assert.are.equal('cpu', m.k_proj_weight.device.type)
  end)

  it('raises PyTorch\'s errors at the caller\'s line', function()
    local err = H.errors_with(function() nn.MultiheadAttention(10, 3) end,
      'moontorch.nn.MultiheadAttention: embed_dim must be divisible by num_heads')
    assert.truthy(err:find('attention_spec.lua:%d+:'))
    local m = nn.MultiheadAttention(8, 2)
    local x = torch.randn(3, 2, 8)
    err = H.errors_with(function() m(x, x, x, { attn_mask = torch.zeros(3, 4) }) end,
      'The shape of the 2D attn_mask is torch.Size([3, 4]), but should be (3, 3).')
    assert.truthy(err:find('attention_spec.lua:%d+: moontorch.nn.MultiheadAttention: ')) -- the module called
    H.errors_with(function() m(x, x, x, { attn_mask = torch.zeros(3, 3, 3) }) end,
      'The shape of the 3D attn_mask is torch.Size([3, 3, 3]), but should be (4, 3, 3).')
    H.errors_with(function() m(x, x, x, { attn_mask = torch.zeros(1, 1, 3, 3) }) end,
      'For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found 4-D tensor instead')
    H.errors_with(function() m(x, x, x, { key_padding_mask = torch.zeros(2, 4, { dtype = torch.bool }) }) end,
      'expecting key_padding_mask shape of (2, 3), but got torch.Size([2, 4])')
    H.errors_with(function() m(x, x, x, { key_padding_mask = torch.zeros(2, 3, { dtype = torch.int64 }) }) end,
      'only bool and floating types of key_padding_mask are supported')
    H.errors_with(function() m(x, x, x, { attn_mask = torch.zeros(3, 3, { dtype = torch.int32 }) }) end,
      'Only float, byte, and bool types are supported for attn_mask, not torch.int32')
    H.errors_with(function() m(torch.randn(3, 2, 6), x, x) end, 'was expecting embedding dimension of 8, but got 6')
    H.errors_with(function() m(x, torch.randn(4, 2, 8), x) end,
      'key shape torch.Size([4, 2, 8]) does not match value shape torch.Size([3, 2, 8])')
    H.errors_with(function() m(torch.randn(2, 3, 2, 8), x, x) end,
      'query should be unbatched 2D or batched 3D tensor but received 4-D query tensor')
    H.errors_with(function() m(x, x) end,
      "moontorch.nn.MultiheadAttention: forward() missing 1 required positional argument: 'value'")
    H.errors_with(function() m(x, x, x, { bogus = 1 }) end, "forward() got an unexpected keyword argument 'bogus'")
  end)

  it('gradchecks in float64 through the module (masks, bias_kv, zero attention)', function()
    torch.manual_seed(1)
    local m = nn.MultiheadAttention(4, 2, { add_bias_kv = true, add_zero_attn = true, dtype = torch.float64 })
    local q = torch.randn(2, 2, 4, { dtype = torch.float64, requires_grad = true })
    local k = torch.randn(3, 2, 4, { dtype = torch.float64, requires_grad = true })
    local mask = torch.tensor({ { false, true, false }, { false, false, false } })
    local kpm = torch.tensor({ { false, false, true }, { false, false, false } })
    assert.is_true(torch.autograd.gradcheck(function(a, b, w)
      local out, wts = F.multi_head_attention_forward(a, b, b, 4, 2, w, m.in_proj_bias, m.bias_k, m.bias_v, true, 0,
        m.out_proj.weight, m.out_proj.bias, { attn_mask = mask, key_padding_mask = kpm })
      return out:sum() + (wts * wts):sum()
    end, { q, k, m.in_proj_weight }))
  end)

  it('frees what it made', function()
    local m = nn.MultiheadAttention(8, 2)
    local x = torch.randn(3, 2, 8, { requires_grad = true })
    require('moontorch.tensor').sweep()
    live0 = live()
    for _ = 1, 3 do
      local out, w = m(x, x, x, { attn_mask = torch.zeros(3, 3, { dtype = torch.bool }) })
      ;(out:sum() + w:sum()):backward()
    end
    m:zero_grad(true)
    x.grad = nil
    collectgarbage()
    require('moontorch.tensor').sweep()
    assert.are.equal(live0, live())
  end)
end)

describe('F.scaled_dot_product_attention', function()
  for _, c in ipairs(W.sdpa) do
    it(c.name .. ' (PyTorch 2.x semantics, values from 1.13)', function()
      local q, k, v = tensor_of(c.q, true), tensor_of(c.k, true), tensor_of(c.v, true)
      local out = F.scaled_dot_product_attention(q, k, v, tensor_of(c.mask), 0, c.is_causal, { scale = c.scale })
      same_shape(out, c.out)
      H.near(out, c.out.values, 1e-10, 1e-10)
      ;(out * tensor_of(c.g_out)):sum():backward()
      H.near(q.grad, c.q_grad.values, 1e-9, 1e-9)
      H.near(k.grad, c.k_grad.values, 1e-9, 1e-9)
      H.near(v.grad, c.v_grad.values, 1e-9, 1e-9)
    end)
  end

  it('gradchecks in float64 (float mask, causal, broadcast batch dims)', function()
    local o = { dtype = torch.float64, requires_grad = true }
    local q, k, v = torch.randn(2, 1, 3, 4, o), torch.randn(1, 2, 5, 4, o), torch.randn(2, 2, 5, 3, o)
    local mask = torch.randn(3, 5, o)
    assert.is_true(torch.autograd.gradcheck(function(a, b, c, m)
      return F.scaled_dot_product_attention(a, b, c, m)
    end, { q, k, v, mask }))
    assert.is_true(torch.autograd.gradcheck(function(a, b, c)
      return F.scaled_dot_product_attention(a, b, c, nil, 0, true)
    end, { q, k, v }))
  end)

  it('takes its options by position or by name, and runs on meta', function()
    local q, k, v = torch.randn(2, 3, 4), torch.randn(2, 3, 4), torch.randn(2, 3, 4)
    H.near(F.scaled_dot_product_attention(q, k, v, { is_causal = true }),
      F.scaled_dot_product_attention(q, k, v, nil, 0.0, true), 0)
    local causal = torch.ones(3, 3, { dtype = torch.bool }):tril()
    H.near(F.scaled_dot_product_attention(q, k, v, causal), F.scaled_dot_product_attention(q, k, v, nil, 0, true), 1e-6)
    local r = F.scaled_dot_product_attention(torch.empty(5, 2, 3, 4, { device = 'meta' }),
      torch.empty(2, 6, 4, { device = 'meta' }), torch.empty(1, 6, 7, { device = 'meta' }))
    assert.are.equal('meta', r.device.type)
    assert.are.same({ 5, 2, 3, 7 }, H.shape(r))
  end)

  it('applies dropout to the weights', function()
    local q = torch.randn(2, 8, 4)
    local full = F.scaled_dot_product_attention(q, q, torch.ones(2, 8, 1))
    H.near(full, torch.ones(2, 8, 1), 1e-6)
    torch.manual_seed(0)
    local d = F.scaled_dot_product_attention(q, q, torch.ones(2, 8, 1), nil, 0.5)
    assert.is_false(torch.allclose(d, full))
  end)

  it('raises errors at the caller\'s line', function()
    local q = torch.randn(2, 3, 4)
    local err = H.errors_with(function()
      F.scaled_dot_product_attention(q, q, q, torch.zeros(3, 3, { dtype = torch.bool }), 0, true)
    end, 'moontorch.nn.functional.scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True')
    assert.truthy(err:find('attention_spec.lua:%d+:'))
    H.errors_with(function() F.scaled_dot_product_attention(q, q, q, torch.zeros(4, 3)) end,
      'attn_mask of size [4, 3] cannot be broadcast to the attention weights of size torch.Size([2, 3, 3])')
    H.errors_with(function() F.scaled_dot_product_attention(q, torch.randn(2, 3, 5), q) end,
      'Expected query and key to have the same embedding size (last dimension), got 4 and 5')
    H.errors_with(function() F.scaled_dot_product_attention(q, q, torch.randn(2, 4, 4)) end,
      'Expected key and value to have the same sequence length (dimension -2), got 3 and 4')
    H.errors_with(function() F.scaled_dot_product_attention(q, torch.randn(3, 3, 4), q) end,
      'the batch dimensions of query [2, 3, 4], key [3, 3, 4] and value [2, 3, 4] do not broadcast')
    H.errors_with(function() F.scaled_dot_product_attention(q, q, q, nil, 1.5) end,
      'dropout probability has to be between 0 and 1, but got 1.5')
    H.errors_with(function() F.scaled_dot_product_attention(q, q:double(), q) end,
      'Expected query, key, and value to have the same dtype')
  end)
end)

describe('multi_head_attention_forward masks', function()
  local function setup()
    torch.manual_seed(7)
    local m = nn.MultiheadAttention(8, 2)
    m:eval()
    return m, torch.randn(3, 2, 8), torch.randn(4, 2, 8)
  end

  it('reads a byte attn_mask as a boolean one (PyTorch warns it is deprecated)', function()
    local m, q, k = setup()
    local b = torch.tensor({ { 0, 1, 0, 0 }, { 0, 0, 0, 1 }, { 1, 0, 0, 0 } }, { dtype = torch.uint8 })
    local o1, w1 = m(q, k, k, { attn_mask = b })
    local o2, w2 = m(q, k, k, { attn_mask = b:to(torch.bool) })
    H.near(o1, o2, 0)
    H.near(w1, w2, 0)
    assert.are.equal(0, w1:select(2, 1):select(2, 2):abs():sum():item())
  end)

  it('a boolean mask is the float mask of -inf where it is true; masks combine', function()
    local m, q, k = setup()
    local bm = torch.tensor({ { false, true, false, false }, { false, false, false, true }, { true, false, false, false } })
    local fm = torch.zeros(3, 4):masked_fill(bm, -math.huge)
    local o1, w1 = m(q, k, k, { attn_mask = bm })
    local o2, w2 = m(q, k, k, { attn_mask = fm })
    H.near(o1, o2, 1e-6)
    H.near(w1, w2, 1e-6)
    local kpm = torch.tensor({ { false, false, true, false }, { false, false, false, false } })
    local o3 = m(q, k, k, { attn_mask = bm, key_padding_mask = kpm })
    local o4 = m(q, k, k, { attn_mask = fm, key_padding_mask = kpm })
    local fk = torch.zeros(2, 4):masked_fill(kpm, -math.huge)
    local o5 = m(q, k, k, { attn_mask = fm, key_padding_mask = fk })
    H.near(o3, o4, 1e-6)
    H.near(o3, o5, 1e-6)
  end)

  it('static_k / static_v replace the projected keys and values', function()
    local m, q, k = setup()
    local sk, sv = torch.randn(4, 5, 4), torch.randn(4, 5, 4)
    local out, w = F.multi_head_attention_forward(q, k, k, 8, 2, m.in_proj_weight, m.in_proj_bias, nil, nil, false, 0,
      m.out_proj.weight, m.out_proj.bias, { static_k = sk, static_v = sv })
    assert.are.same({ 3, 2, 8 }, H.shape(out))
    assert.are.same({ 2, 3, 5 }, H.shape(w))
    -- by hand: q projected, per head, against sk / sv
    local qp = F.linear(q, m.in_proj_weight:narrow(1, 1, 8), m.in_proj_bias:narrow(1, 1, 8))
    local qh = qp:reshape(3, 4, 4):transpose(1, 2)
    local a = (qh:matmul(sk:transpose(2, 3)) / 2):softmax(-1)
    local o = a:matmul(sv):transpose(1, 2):reshape(6, 8)
    H.near(out, F.linear(o, m.out_proj.weight, m.out_proj.bias):reshape(3, 2, 8), 1e-5)
    H.errors_with(function()
      F.multi_head_attention_forward(q, k, k, 8, 2, m.in_proj_weight, m.in_proj_bias, nil, nil, false, 0,
        m.out_proj.weight, m.out_proj.bias, { static_k = torch.randn(3, 5, 4) })
    end, 'expecting static_k.size(0) of 4, but got 3')
  end)
end)
