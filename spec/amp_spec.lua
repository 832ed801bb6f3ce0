-- torch.autocast (issue 25): PyTorch 1.13's CPU op lists, scopes (block, enter/exit, decorator),
-- nesting and disabled scopes, the weight-cast cache, the policy as a Lua table, the state functions.
-- What PyTorch does to each op is recorded in spec/support/amp_wants.lua by
-- spec/support/amp_record.py (PyTorch 1.13, /usr/bin/python3); CASES below make the same calls.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = torch.nn
local F = nn.functional
local WANT = require 'spec.support.amp_wants'

local n = 8
local function R(...)
  local s = { ... }
  local d = torch.float32
  if type(s[#s]) ~= 'number' then d = table.remove(s) end
  return torch.randn(s):to(d)
end
local function P(k, d) return (torch.rand(k) * 0.8 + 0.1):to(d) end
local function L(...) return torch.tensor({ ... }, { dtype = torch.int64 }) end
local function eye(k, d) return torch.eye(k):to(d) end

-- the calls of amp_record.py, in moontorch's spelling (class indices count from 1)
local CASES = {
  mm = function(d) return torch.mm(R(n, n, d), R(n, n, d)) end,
  ['Tensor.mm'] = function(d) return R(n, n, d):mm(R(n, n, d)) end,
  matmul = function(d) return torch.matmul(R(n, n, d), R(n, n, d)) end,
  ['Tensor.matmul'] = function(d) return R(2, n, n, d):matmul(R(n, d)) end,
  bmm = function(d) return torch.bmm(R(2, n, n, d), R(2, n, n, d)) end,
  addmm = function(d) return torch.addmm(R(n, n, d), R(n, n, d), R(n, n, d)) end,
  baddbmm = function(d) return torch.baddbmm(R(2, n, n, d), R(2, n, n, d), R(2, n, n, d)) end,
  addbmm = function(d) return torch.addbmm(R(n, n, d), R(2, n, n, d), R(2, n, n, d)) end,
  linear = function(d) return F.linear(R(n, n, d), R(n, n, d), R(n, d)) end,
  conv1d = function(d) return F.conv1d(R(2, 3, 8, d), R(4, 3, 3, d)) end,
  conv2d = function(d) return F.conv2d(R(2, 3, 8, 8, d), R(4, 3, 3, 3, d), R(4, d)) end,
  conv3d = function(d) return F.conv3d(R(2, 3, 4, 4, 4, d), R(4, 3, 3, 3, 3, d)) end,
  einsum = function(d) return torch.einsum('ij,jk->ik', R(n, n, d), R(n, n, d)) end,
  chain_matmul = function(d) return torch.chain_matmul(R(n, n, d), R(n, n, d), R(n, n, d)) end,
  conv_transpose1d = function(d) return F.conv_transpose1d(R(2, 3, 8, d), R(3, 4, 3, d)) end,
  conv_transpose2d = function(d) return F.conv_transpose2d(R(2, 3, 8, 8, d), R(3, 4, 3, 3, d)) end,
  conv_transpose3d = function(d) return F.conv_transpose3d(R(2, 3, 4, 4, 4, d), R(3, 4, 3, 3, 3, d)) end,
  avg_pool3d = function(d) return F.avg_pool3d(R(1, 2, 4, 4, 4, d), 2) end,
  max_pool3d = function(d) return F.max_pool3d(R(1, 2, 4, 4, 4, d), 2) end,
  adaptive_avg_pool3d = function(d) return F.adaptive_avg_pool3d(R(1, 2, 4, 4, 4, d), 2) end,
  adaptive_max_pool3d = function(d) return F.adaptive_max_pool3d(R(1, 2, 4, 4, 4, d), 2) end,
  max_unpool2d = function(d)
    local v, i = F.max_pool2d(R(1, 2, 4, 4, d), 2, { return_indices = true })
    return F.max_unpool2d(v, i, 2)
  end,
  binary_cross_entropy = function(d) return F.binary_cross_entropy(P(n, d), P(n, d)) end,
  binary_cross_entropy_with_logits = function(d) return F.binary_cross_entropy_with_logits(R(n, d), P(n, d)) end,
  grid_sample = function(d) return F.grid_sample(R(1, 1, 4, 4, d), R(1, 3, 3, 2, d):tanh(), { align_corners = false }) end,
  prod = function(d) return torch.prod(R(n, d)) end,
  prod_dim = function(d) return torch.prod(R(3, n, d), 2) end,
  quantile = function(d) return torch.quantile(R(n, d), 0.3) end,
  nanquantile = function(d) return torch.nanquantile(R(n, d), 0.3) end,
  cdist = function(d) return torch.cdist(R(3, n, d), R(2, n, d)) end,
  trace = function(d) return torch.trace(R(n, n, d)) end,
  inverse = function(d) return torch.inverse(R(n, n, d) + eye(n, d) * 4) end,
  linalg_inv = function(d) return torch.linalg.inv(R(n, n, d) + eye(n, d) * 4) end,
  linalg_solve = function(d) return torch.linalg.solve(R(n, n, d) + eye(n, d) * 4, R(n, d)) end,
  pad_reflect1d = function(d) return F.pad(R(1, 2, 5, d), { 2, 2 }, 'reflect') end,
  pad_reflect2d = function(d) return F.pad(R(1, 2, 5, 5, d), { 2, 2, 2, 2 }, { mode = 'reflect' }) end,
  pad_replicate3d = function(d) return F.pad(R(1, 2, 5, 5, 5, d), { 1, 1, 1, 1, 1, 1 }, 'replicate') end,
  pad_constant = function(d) return F.pad(R(1, 2, 5, d), { 2, 2 }) end,
  mse_loss = function(d) return F.mse_loss(R(n, d), R(n, d)) end,
  l1_loss = function(d) return F.l1_loss(R(n, d), R(n, d)) end,
  smooth_l1_loss = function(d) return F.smooth_l1_loss(R(n, d), R(n, d)) end,
  huber_loss = function(d) return F.huber_loss(R(n, d), R(n, d)) end,
  kl_div = function(d) return F.kl_div(R(n, d), P(n, d), { reduction = 'batchmean' }) end,
  nll_loss = function(d) return F.nll_loss(R(4, 3, d), L(1, 2, 3, 1)) end,
  nll_loss2d = function(d) return F.nll_loss(R(2, 3, 4, 4, d), torch.ones(2, 4, 4, { dtype = torch.int64 })) end,
  cross_entropy = function(d) return F.cross_entropy(R(4, 3, d), L(1, 2, 3, 1)) end,
  poisson_nll_loss = function(d) return F.poisson_nll_loss(R(n, d), P(n, d)) end,
  cosine_embedding_loss = function(d) return F.cosine_embedding_loss(R(2, 3, d), R(2, 3, d), L(1, -1)) end,
  hinge_embedding_loss = function(d) return F.hinge_embedding_loss(R(n, d), torch.ones(n)) end,
  margin_ranking_loss = function(d) return F.margin_ranking_loss(R(n, d), R(n, d), torch.ones(n)) end,
  soft_margin_loss = function(d) return F.soft_margin_loss(R(n, d), torch.ones(n)) end,
  triplet_margin_loss = function(d) return F.triplet_margin_loss(R(2, n, d), R(2, n, d), R(2, n, d)) end,
  multi_margin_loss = function(d) return F.multi_margin_loss(R(2, 4, d), L(2, 4)) end,
  multilabel_margin_loss = function(d)
    return F.multilabel_margin_loss(R(2, 4, d), torch.tensor({ { 4, 1, -1, 2 }, { 2, 3, -1, 1 } }, { dtype = torch.int64 }))
  end,
  ctc_loss = function(d)
    return F.ctc_loss(R(6, 2, 4, d):log_softmax(3), torch.tensor({ { 2, 3 }, { 2, 2 } }, { dtype = torch.int64 }), L(6, 6), L(2, 2))
  end,
  add = function(d) return R(n, d) + R(n, d) end,
  relu = function(d) return F.relu(R(n, d)) end,
  exp = function(d) return torch.exp(R(n, d)) end,
  softmax = function(d) return F.softmax(R(3, n, d), 2) end,
  log_softmax = function(d) return F.log_softmax(R(3, n, d), 2) end,
  layer_norm = function(d) return F.layer_norm(R(2, n, d), { n }) end,
  sum = function(d) return torch.sum(R(n, d)) end,
  mv = function(d) return torch.mv(R(n, n, d), R(n, d)) end,
  dot = function(d) return torch.dot(R(n, d), R(n, d)) end,
  max_pool2d = function(d) return F.max_pool2d(R(1, 2, 4, 4, d), 2) end,
  avg_pool2d = function(d) return F.avg_pool2d(R(1, 2, 4, 4, d), 2) end,
  pow = function(d) return torch.pow(P(n, d), 2.5) end,
  interpolate = function(d) return F.interpolate(R(1, 2, 4, 4, d), { scale_factor = 2, mode = 'bilinear' }) end,
  prelu = function(d) return F.prelu(R(2, 3, d), R(3, d)) end,
  lstm_cell = function(d) return (nn.LSTMCell(3, 4):to(d)(R(2, 3, d))) end,
  ['nn.Linear'] = function(d) return nn.Linear(3, 4):to(d)(R(2, 3, d)) end,
  ['nn.Conv2d'] = function(d) return nn.Conv2d(2, 3, 3):to(d)(R(1, 2, 5, 5, d)) end,
  ['nn.Conv2d_reflect'] = function(d)
    return nn.Conv2d(2, 3, 3, { padding = 1, padding_mode = 'reflect' }):to(d)(R(1, 2, 5, 5, d))
  end,
  ['nn.ConvTranspose2d'] = function(d) return nn.ConvTranspose2d(2, 3, 3):to(d)(R(1, 2, 5, 5, d)) end,
  ['nn.ReflectionPad2d'] = function(d) return nn.ReflectionPad2d(1)(R(1, 2, 5, 5, d)) end,
  ['nn.CrossEntropyLoss'] = function(d) return nn.CrossEntropyLoss()(R(4, 3, d), L(1, 2, 3, 1)) end,
  ['nn.MSELoss'] = function(d) return nn.MSELoss()(R(4, 3, d), R(4, 3, d)) end,
  ['nn.MaxPool3d'] = function(d) return nn.MaxPool3d(2)(R(1, 2, 4, 4, 4, d)) end,
  ['nn.MultiheadAttention'] = function(d)
    return (nn.MultiheadAttention(8, 2):to(d)(R(3, 2, 8, d), R(3, 2, 8, d), R(3, 2, 8, d)))
  end,
  ['nn.RNN'] = function(d) return (nn.RNN(3, 4):to(d)(R(5, 2, 3, d))) end,
  ['nn.LSTM'] = function(d) return (nn.LSTM(3, 4):to(d)(R(5, 2, 3, d))) end,
  ['nn.LayerNorm'] = function(d) return nn.LayerNorm(4):to(d)(R(3, 4, d)) end,
  ['nn.BatchNorm1d'] = function(d) return nn.BatchNorm1d(4):to(d)(R(3, 4, d)) end,
}
local MIXED = {
  cat = function() return torch.cat({ R(n, torch.bfloat16), R(n) }) end,
  stack = function() return torch.stack({ R(n, torch.bfloat16), R(n) }) end,
  index_copy = function() return torch.zeros(4):bfloat16():index_copy(1, L(1, 2), R(2)) end,
  add = function() return R(n) + R(n, torch.bfloat16) end,
  mul = function() return R(n) * R(n, torch.bfloat16) end,
  eq = function() return R(n):eq(R(n, torch.bfloat16)) end,
  mm = function() return torch.mm(R(2, 2), R(2, 2, torch.bfloat16)) end,
  mm_float64 = function() return torch.mm(R(2, 2, torch.float64), R(2, 2, torch.float64)) end,
  linear_float16 = function() return F.linear(R(2, 2, torch.float16), R(2, 2, torch.float16)) end,
  addcmul = function() return torch.addcmul(R(n), R(n, torch.bfloat16), R(n)) end,
}

local function dtname(t) return tostring(t.dtype):gsub('^torch%.', '') end

describe('autocast', function()
  local base
  before_each(function()
    torch.manual_seed(0)
    require('moontorch.tensor').sweep()
    base = torch._C.mt_get_stats().live_tensors
  end)
  after_each(function()
    assert.is_false(torch.is_autocast_cpu_enabled())
    require('moontorch.tensor').sweep()
    assert.are.equal(base, torch._C.mt_get_stats().live_tensors)
  end)

  it('gives each op of PyTorch 1.13\'s CPU lists the dtype PyTorch gives it (float32 and bfloat16 inputs)', function()
    local count = 0
    for name, want in pairs(WANT.unary) do
      local f = CASES[name]
      assert.truthy(f, 'no case for ' .. name)
      for i, d in ipairs({ torch.float32, torch.bfloat16 }) do
        local r = torch.autocast('cpu', { dtype = torch.bfloat16 }, function() return f(d) end)
        assert.are.equal(want[i], dtname(r), ('%s with %s inputs'):format(name, tostring(d)))
        count = count + 1
      end
    end
    assert.is_true(count >= 150)
  end)

  it('promotes mixed inputs as PyTorch 1.13 (cat, stack, index_copy; built-in promotion elsewhere)', function()
    for name, want in pairs(WANT.mixed) do
      local r = torch.autocast('cpu', function() return MIXED[name]() end)
      assert.are.equal(want, dtname(r), name)
    end
    -- outside autocast, index_copy of mixed dtypes is PyTorch's error
    assert.has_error(function() MIXED.index_copy() end)
  end)

  it('casts where the op is entered: the result is the low-precision op\'s, and gradients flow to float32', function()
    local a = torch.randn(5, 7, { requires_grad = true })
    local b = torch.randn(7, 3)
    local y = torch.autocast('cpu', function() return a:mm(b) end)
    assert.is_true(torch.equal(y, a:detach():bfloat16():mm(b:bfloat16())))
    assert.are.equal('MmBackward0', y.grad_fn:name())
    assert.are.equal('ToCopyBackward0', y.grad_fn.next_functions[1][1]:name())
    y:float():sum():backward()
    assert.are.equal(torch.float32, a.grad.dtype)
    -- d/da sum(a @ b) = ones @ b^T, computed in bfloat16 and widened
    H.near(a.grad, torch.ones(5, 3):bfloat16():mm(b:bfloat16():t()):float(), 0, 0)
  end)

  it('casts a float32 leaf that requires grad once per outermost scope (cache_enabled)', function()
    local w = torch.randn(4, 4, { requires_grad = true })
    local x = torch.randn(4, 4)
    torch.autocast('cpu', function()
      local y = torch.mm(w, w)
      local f = y.grad_fn.next_functions
      assert.are.equal(f[1][1], f[2][1]) -- one ToCopyBackward0 for both uses, as PyTorch
      local z = torch.autocast('cpu', function() return torch.mm(x, w) end)
      assert.are.equal(f[1][1], z.grad_fn.next_functions[2][1]) -- the cache lives until the outermost exit
    end)
    torch.autocast('cpu', { cache_enabled = false }, function()
      local f = torch.mm(w, w).grad_fn.next_functions
      assert.are_not.equal(f[1][1], f[2][1])
    end)
    -- a new outermost scope casts afresh
    local g1 = torch.autocast('cpu', function() return torch.mm(w, x).grad_fn.next_functions[1][1] end)
    local g2 = torch.autocast('cpu', function() return torch.mm(w, x).grad_fn.next_functions[1][1] end)
    assert.are_not.equal(g1, g2)
  end)

  it('nests: an inner scope may disable autocast or change its dtype; the outer one comes back', function()
    local a, b = torch.randn(3, 3), torch.randn(3, 3)
    torch.autocast('cpu', function()
      assert.is_true(torch.is_autocast_cpu_enabled())
      assert.are.equal(torch.bfloat16, a:mm(b).dtype)
      torch.autocast('cpu', { enabled = false }, function()
        assert.is_false(torch.is_autocast_cpu_enabled())
        assert.are.equal(torch.float32, a:mm(b).dtype)
      end)
      torch.autocast('cpu', { dtype = torch.float16 }, function()
        assert.are.equal(torch.float16, torch.get_autocast_cpu_dtype())
        assert.are.equal(torch.float16, a:mm(b).dtype)
        assert.are.equal(torch.float32, F.mse_loss(a:half(), b:half()).dtype)
      end)
      assert.are.equal(torch.bfloat16, torch.get_autocast_cpu_dtype())
      assert.are.equal(torch.bfloat16, a:mm(b).dtype)
    end)
    assert.are.equal(torch.float32, a:mm(b).dtype)
    -- enabled = false at the top: nothing is cast
    assert.are.equal(torch.float32, torch.autocast('cpu', { enabled = false }, function() return a:mm(b) end).dtype)
  end)

  it('as an object: __enter/__exit (and enter/exit), a decorator, torch.cpu.amp.autocast, torch.amp.autocast', function()
    local a, b = torch.randn(3, 3), torch.randn(3, 3)
    local ac = torch.autocast('cpu', { dtype = torch.bfloat16 })
    assert.are.equal('cpu', ac.device)
    ac:__enter()
    assert.are.equal(torch.bfloat16, torch.matmul(a, b).dtype)
    ac:__exit()
    assert.are.equal(torch.float32, torch.matmul(a, b).dtype)
    ac:enter()
    assert.are.equal(torch.bfloat16, a:matmul(b).dtype)
    ac:exit()
    H.errors_with(function() ac:__exit() end, 'not entered')
    local f = torch.autocast('cpu'):wrap(function(x, y) return x:mm(y), torch.is_autocast_cpu_enabled() end)
    local r, on = f(a, b)
    assert.are.equal(torch.bfloat16, r.dtype)
    assert.is_true(on)
    assert.is_false(torch.is_autocast_cpu_enabled())
    local g = torch.autocast('cpu')(function(x) return x:mm(x) end) -- PyTorch's @torch.autocast('cpu')
    assert.are.equal(torch.bfloat16, g(a).dtype)
    assert.are.equal(torch.bfloat16, torch.cpu.amp.autocast(function() return a:mm(b) end).dtype)
    assert.are.equal(torch.float32, torch.cpu.amp.autocast({ enabled = false }, function() return a:mm(b) end).dtype)
    assert.are.equal(torch.bfloat16, torch.amp.autocast('cpu', function() return a:mm(b) end).dtype)
    -- the block's results come back, all of them
    local x, y, z = torch.autocast('cpu', function() return 1, nil, 3 end)
    assert.are.same({ 1, nil, 3 }, { x, y, z })
  end)

  it('an error in the block leaves the scope; the error is the block\'s, at the user\'s line', function()
    local a = torch.randn(3, 3)
    local ok, err = pcall(torch.autocast, 'cpu', function() return a:mm(torch.randn(4, 4)) end)
    assert.is_false(ok)
    assert.truthy(err:find('amp_spec.lua:%d+: moontorch.mm:'), err)
    assert.is_false(torch.is_autocast_cpu_enabled())
    assert.are.equal(torch.float32, a:mm(a).dtype)
    -- an error inside a cast op caught inside the scope leaves autocast working
    torch.autocast('cpu', function()
      assert.is_false(pcall(F.linear, a, torch.randn(5, 4)))
      assert.are.equal(torch.bfloat16, a:mm(a).dtype)
    end)
  end)

  it('the policy is a Lua table: read the defaults, patch a scope, patch the lists', function()
    local p = torch.amp.policy('cpu')
    assert.are.equal('lower_precision_fp', p.mm)
    assert.are.equal('fp32', p.mse_loss)
    assert.are.equal('promote', p.cat)
    assert.is_nil(p.relu)
    local a, b = torch.randn(3, 3), torch.randn(3, 3)
    torch.autocast('cpu', { policy = { mm = 'fp32', ['torch.nn.functional.gelu'] = 'lower_precision_fp', mse_loss = false } },
      function()
        assert.are.equal(torch.float32, a:bfloat16():mm(b).dtype) -- fp32 now
        assert.are.equal(torch.bfloat16, F.gelu(a).dtype)
        assert.are.equal(torch.bfloat16, F.mse_loss(a:bfloat16(), b:bfloat16()).dtype) -- no longer cast
        assert.are.equal(torch.bfloat16, torch.matmul(a, b).dtype) -- untouched entries stay
        assert.are.equal('fp32', torch.amp.current_policy('cpu').mm)
        -- an inner scope patches the enclosing scope's policy
        torch.autocast('cpu', { policy = { mm = 'lower_precision_fp' } }, function()
          assert.are.equal(torch.bfloat16, a:mm(b).dtype)
          assert.are.equal(torch.bfloat16, F.gelu(a).dtype)
        end)
      end)
    assert.are.equal('lower_precision_fp', torch.amp.current_policy('cpu').mm)
    -- a function deciding per call
    torch.autocast('cpu', { policy = { exp = function(x) return x:dim() > 1 and 'lower_precision_fp' or false end } },
      function()
        assert.are.equal(torch.bfloat16, a:exp().dtype)
        assert.are.equal(torch.float32, torch.randn(3):exp().dtype)
      end)
    H.errors_with(function() torch.autocast('cpu', { policy = { mm = 'fast' } }) end, "policy[\"mm\"]")
  end)

  it('touches only tensors of its device type and never float64; cuda autocast leaves CPU tensors alone', function()
    local a = torch.randn(3, 3, { dtype = torch.float64 })
    assert.are.equal(torch.float64, torch.autocast('cpu', function() return a:mm(a) end).dtype)
    local b = torch.randn(3, 3)
    local _, _, err = H.run_lua([[
      local torch = require 'moontorch'
      local b = torch.randn(3, 3)
      io.write(tostring(torch.autocast('cuda', function() return b:mm(b).dtype end)), ' ',
        tostring(torch.cuda.amp.autocast(function() return torch.is_autocast_enabled() end)))
    ]])
    assert.truthy(err:find("User provided device_type of 'cuda', but CUDA is not available", 1, true), err)
    assert.are.equal(torch.float32, torch.autocast('cpu', { dtype = torch.bfloat16 }, function()
      return torch.is_autocast_enabled() and b or b:mm(b):float()
    end).dtype)
  end)

  it('wraps only its policy\'s functions through the observation point, and nests with other observers', function()
    local observe = require 'moontorch.observe'
    local add, mm, relu = torch.add, torch.mm, F.relu
    local inside
    torch.autocast('cpu', function()
      inside = { add = torch.add, mm = torch.mm, relu = F.relu, n = observe.active() }
    end)
    assert.are.equal(add, inside.add)    -- not in the lists: the op itself
    assert.are.equal(relu, inside.relu)
    assert.are_not.equal(mm, inside.mm)  -- lower_precision_fp: wrapped while the scope is entered
    assert.are.equal(1, inside.n)
    assert.are.equal(mm, torch.mm)
    assert.are.equal(0, observe.active())
    -- an observer of every op installed outside the scope sees the user's call (float32), then the cast op
    local seen = {}
    local h = observe.install(function(name, f)
      return function(...) seen[#seen + 1] = name; return f(...) end
    end)
    local b = torch.randn(3, 3)
    local y = torch.autocast('cpu', function() return torch.mm(b, b) end)
    h:remove()
    assert.are.equal(torch.bfloat16, y.dtype)
    assert.truthy(table.concat(seen, ' '):find('torch.mm', 1, true))
    assert.are.equal(mm, torch.mm)
    assert.are.equal(add, torch.add)
    -- `only` must be a set
    assert.has_error(function() observe.install(function(_, f) return f end, 'torch.mm') end,
      'moontorch.observe.install: only must be a set of qualified names {[\'torch.mm\'] = true, ...}')
    assert.are.equal(0, observe.active())
  end)

  it('cuda: PyTorch 1.13\'s CUDA lists on CUDA tensors (the fake CUDA device), CPU tensors untouched', function()
    local out, ok, err = H.run_lua([[
      local torch = require 'moontorch'
      local F = torch.nn.functional
      local a = torch.randn(3, 3):cuda()
      local r = torch.autocast('cuda', function()
        return { a:mm(a).dtype, a:half():exp().dtype, F.softmax(a:half(), 2).dtype, torch.addcmul(a, a:half(), a).dtype,
          torch.randn(3, 3):mm(torch.randn(3, 3)).dtype, torch.is_autocast_enabled(), torch.is_autocast_cpu_enabled(),
          select(2, pcall(F.binary_cross_entropy, torch.rand(3):cuda(), torch.rand(3):cuda())) }
      end)
      for _, v in ipairs(r) do io.write(tostring(v):gsub('\n.*', ''), ';') end
    ]], { 'MOONTORCH_FAKE_CUDA=1' })
    assert.is_true(ok, err)
    local got = {}
    for v in out:gmatch('([^;]*);') do got[#got + 1] = v end
    -- products in float16, exp and softmax in float32 (fp32, fp32_set_opt_dtype), addcmul promoted, a CPU
    -- product untouched, binary_cross_entropy banned with PyTorch's message
    assert.are.same({ 'torch.float16', 'torch.float32', 'torch.float32', 'torch.float32', 'torch.float32', 'true',
      'false' }, { unpack(got, 1, 7) })
    assert.truthy(got[8]:find('unsafe to autocast', 1, true), got[8])
  end)

  it('arguments: device type, dtype and options are checked as PyTorch checks them', function()
    H.errors_with(function() torch.autocast('tpu') end, "device_type must be 'cuda' or 'cpu'")
    H.errors_with(function() torch.autocast(1) end, 'device type as a string')
    local out, ok, err = H.run_lua([[
      local torch = require 'moontorch'
      io.write(tostring(torch.autocast('cpu', { dtype = torch.float64 }, function()
        return torch.is_autocast_cpu_enabled() end)))
    ]])
    assert.is_true(ok, err)
    assert.are.equal('false', out)
    assert.truthy(err:find('Disabling autocast', 1, true), err)
  end)

  it('the state functions: is_autocast_(cpu_)enabled, get/set dtypes, nesting and the cache', function()
    assert.is_false(torch.is_autocast_enabled())
    assert.is_false(torch.is_autocast_cpu_enabled())
    assert.are.equal(torch.bfloat16, torch.get_autocast_cpu_dtype())
    assert.are.equal(torch.float16, torch.get_autocast_gpu_dtype())
    assert.is_true(torch.is_autocast_cache_enabled())
    torch.autocast('cpu', { cache_enabled = false }, function()
      assert.is_false(torch.is_autocast_cache_enabled())
    end)
    assert.is_true(torch.is_autocast_cache_enabled())
    assert.are.equal(1, torch.autocast_increment_nesting())
    assert.are.equal(0, torch.autocast_decrement_nesting())
    torch.set_autocast_cpu_dtype(torch.float16)
    assert.are.equal(torch.float16, torch.autocast('cpu', function() return torch.get_autocast_cpu_dtype() end))
    torch.set_autocast_cpu_dtype(torch.bfloat16)
    torch.clear_autocast_cache()
  end)

  it('an MLP training step under autocast: bfloat16 products, float32 loss and gradients', function()
    torch.manual_seed(1)
    local net = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 4))
    local opt = torch.optim.SGD(net:parameters(), { lr = 0.1 })
    local x, y = torch.randn(32, 20), torch.randint(1, 5, { 32 })
    local first, last
    for step = 1, 30 do
      local loss = torch.autocast('cpu', function()
        local out = net(x)
        assert.are.equal(torch.bfloat16, out.dtype)
        return F.cross_entropy(out, y)
      end)
      assert.are.equal(torch.float32, loss.dtype)
      opt:zero_grad()
      loss:backward()
      for _, p in ipairs(net:parameters()) do assert.are.equal(torch.float32, p.grad.dtype) end
      opt:step()
      if step == 1 then first = loss:item() end
      last = loss:item()
    end
    assert.is_true(last < first * 0.9, ('loss %g -> %g'):format(first, last))
  end)
end)

-- A test runner that forgets the modules a file loaded (busted's insulation) while torch.autocast,
-- loaded before, keeps running scopes: the cells' exemption and a second require of the autocast
-- file still find the one autocast state (lstm_cell gave bfloat16 when amp_scaler_spec ran first)
describe('autocast loaded once', function()
  it('nn.LSTMCell stays exempt and require gives the same module after package.loaded forgets it', function()
    local out, ok, err = H.run_lua([[
      local torch = require 'moontorch'
      local nn = torch.nn
      local first = require 'moontorch.amp.autocast'
      torch.autocast('cpu', function() return 1 end)
      for k in pairs(package.loaded) do if k:find('^moontorch%.amp') or k == 'moontorch.observe' then package.loaded[k] = nil end end
      local r = torch.autocast('cpu', { dtype = torch.bfloat16 }, function() return (nn.LSTMCell(3, 4)(torch.randn(2, 3))) end)
      local m = torch.autocast('cpu', function() return torch.mm(torch.randn(2, 2), torch.randn(2, 2)) end)
      io.write(tostring(r.dtype), ' ', tostring(m.dtype), ' ', tostring(require('moontorch.amp.autocast') == first))
    ]])
    assert.is_true(ok, err)
    -- PyTorch 1.13: lstm_cell is in no CPU list (float32 in, float32 out); mm is lower precision
    assert.are.equal('torch.float32 torch.bfloat16 true', out)
  end)
end)
