-- nn.utils.parametrize and nn.utils.parametrizations (lua/nn/parametrize.lua,
-- lua/nn/parametrizations.lua): values, printing and state_dict keys recorded from PyTorch 1.13
-- by spec/support/inspect_record.py (modules made after torch.manual_seed(0)).
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local W = dofile('spec/support/inspect_wants.lua')
local P = nn.utils.parametrize
local PZ = nn.utils.parametrizations
local Module = nn.Module

-- the parametrizations of the recording script
local Sym = torch.class('spec_param.Sym', Module)
function Sym:__init() Module.__init(self) end
function Sym:forward(X) return X:triu() + X:triu(1):transpose(-1, -2) end
function Sym:_get_name() return 'Sym' end
local SymR = torch.class('spec_param.SymR', Sym)
function SymR:right_inverse(X) return X end
function SymR:_get_name() return 'SymR' end
local Double = torch.class('spec_param.Double', Module)
function Double:__init() Module.__init(self) end
function Double:forward(X) return X * 2 end
function Double:right_inverse(X) return X / 2 end
function Double:_get_name() return 'Double' end
local SumOf = torch.class('spec_param.SumOf', Module)
function SumOf:__init() Module.__init(self) end
function SumOf:forward(A, B) return A + B end
function SumOf:right_inverse(X) return X, torch.zeros_like(X) end

local function keys(m) return m:state_dict():keys() end

describe('nn.utils.parametrize.register_parametrization', function()
  it('computes the tensor from original on every read, prints and names state_dict keys as PyTorch', function()
    local w = W.p_sym
    torch.manual_seed(0)
    local m = nn.Linear(3, 3)
    assert.are.equal(m, P.register_parametrization(m, 'weight', Sym()))
    H.near(m.weight, w.weight, 1e-7)
    assert.are.equal(w.repr, tostring(m))
    assert.are.same(w.keys, keys(m))
    assert.are.equal('nn.ParametrizedLinear', torch.typename(m))
    assert.is_true(torch.isinstance(m, nn.Linear))
    assert.are.equal(nn.Linear, P.type_before_parametrizations(m))
    assert.is_true(torch.isinstance(m.parametrizations, nn.ModuleDict))
    assert.is_true(torch.isinstance(m.parametrizations.weight, P.ParametrizationList))
    assert.is_nil(rawget(m, '_parameters').weight)
    -- the gradient reaches original
    m(torch.ones(2, 3)):sum():backward()
    H.near(m.parametrizations.weight.original.grad, w.grad)
    -- original is what the module's parameters list
    local found = false
    for name, p in m:named_parameters() do
      if name == 'parametrizations.weight.original' then found = rawequal(p, m.parametrizations.weight.original) end
    end
    assert.is_true(found)
    -- a new value of original is seen at the next read
    m.parametrizations.weight.original.data = torch.eye(3) * 2
    H.near(m.weight, { { 2, 0, 0 }, { 0, 2, 0 }, { 0, 0, 2 } })
  end)

  it('chains parametrizations, and assignment goes through right_inverse in reverse', function()
    local w = W.p_chain
    torch.manual_seed(0)
    local m = nn.Linear(3, 3)
    P.register_parametrization(m, 'weight', Double())
    P.register_parametrization(m, 'weight', SymR())
    H.near(m.weight, w.weight, 1e-7)
    H.near(m.parametrizations.weight.original, w.original, 1e-7)
    assert.are.equal(w.repr, tostring(m))
    local orig = m.parametrizations.weight.original
    m.weight = torch.tensor({ { 1, 2, 3 }, { 2, 5, 6 }, { 3, 6, 9 } })
    H.near(m.weight, w.set_weight)
    H.near(m.parametrizations.weight.original, w.set_original)
    assert.is_true(rawequal(orig, m.parametrizations.weight.original)) -- the same Parameter (set_)
    -- a parametrization without right_inverse cannot be assigned through
    local m2 = nn.Linear(3, 3)
    P.register_parametrization(m2, 'weight', Sym())
    H.errors_with(function() m2.weight = torch.eye(3) end, 'parametrization Sym does not implement right_inverse.')
  end)

  it('right_inverse returning several tensors makes original0, original1, ...', function()
    local w = W.p_several
    torch.manual_seed(0)
    local m = nn.Linear(2, 2)
    local before = m.weight:clone()
    P.register_parametrization(m, 'weight', SumOf())
    assert.are.same(w.keys, keys(m))
    local l = m.parametrizations.weight
    H.near(l.original0, before, 0)
    H.near(l.original1, w.original1)
    assert.is_true(nn.Parameter == nn.Parameter and torch.isinstance(l.original0, nn.Parameter))
    assert.is_true(l.original1.requires_grad)
    assert.is_false(l.is_tensor)
    assert.are.equal(2, l.ntensors)
    H.near(m.weight, before)
    m.weight = torch.tensor({ { 1, 2 }, { 3, 4 } })
    H.near(l.original0, w.set_original0)
    H.near(l.original1, w.set_original1)
    -- both originals get gradients
    m(torch.ones(1, 2)):sum():backward()
    H.near(l.original0.grad, { { 1, 1 }, { 1, 1 } })
    H.near(l.original1.grad, { { 1, 1 }, { 1, 1 } })
    H.errors_with(function() P.remove_parametrizations(m, 'weight', { leave_parametrized = false }) end,
      'Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms of a sequence of tensors.')
    P.remove_parametrizations(m, 'weight')
    H.near(m.weight, { { 1, 2 }, { 3, 4 } })
    assert.is_true(torch.isinstance(m.weight, nn.Parameter))
  end)

  it('parametrizes buffers too (original a buffer)', function()
    local m = nn.BatchNorm1d(3)
    P.register_parametrization(m, 'running_var', Double())
    assert.are.same({ 'weight', 'bias', 'running_mean', 'num_batches_tracked', 'parametrizations.running_var.original' },
      keys(m))
    H.near(m.running_var, { 1, 1, 1 })
    H.near(m.parametrizations.running_var.original, { 0.5, 0.5, 0.5 })
    assert.is_false(torch.isinstance(m.parametrizations.running_var.original, nn.Parameter))
  end)

  it('is_parametrized, checks and errors as PyTorch', function()
    local m = nn.Linear(3, 3)
    assert.is_false(P.is_parametrized(m))
    assert.is_false(P.is_parametrized(m, 'weight'))
    P.register_parametrization(m, 'weight', Sym())
    assert.is_true(P.is_parametrized(m))
    assert.is_true(P.is_parametrized(m, 'weight'))
    assert.is_false(P.is_parametrized(m, 'bias'))
    H.errors_with(function() P.register_parametrization(nn.Linear(2, 2), 'nope', Sym()) end,
      "does not have a parameter, a buffer, or a parametrized element with name 'nope'")
    local Flat = torch.class('spec_param.Flat', Module)
    function Flat:__init() Module.__init(self) end
    function Flat:forward(X) return X:flatten() end
    local err = H.errors_with(function() P.register_parametrization(nn.Linear(3, 2), 'weight', Flat()) end,
      'Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is enabled.\n' ..
      'unparametrized shape: torch.Size([2, 3])\nparametrized shape: torch.Size([6])')
    assert.is_truthy(tostring(err):find('parametrize_spec.lua:', 1, true))
    local ToDouble = torch.class('spec_param.ToDouble', Module)
    function ToDouble:__init() Module.__init(self) end
    function ToDouble:forward(X) return X:double() end
    H.errors_with(function() P.register_parametrization(nn.Linear(3, 2), 'weight', ToDouble()) end,
      'may not change the dtype of the tensor, unless `unsafe` flag is enabled.\nunparametrized dtype: torch.float32\n' ..
      'parametrized dtype: torch.float64')
    -- unsafe lets it through
    local u = P.register_parametrization(nn.Linear(3, 2), 'weight', Flat(), { unsafe = true })
    assert.are.same({ 6 }, H.shape(u.weight))
    -- a second parametrization is checked against the current value
    H.errors_with(function() P.register_parametrization(m, 'weight', Flat()) end,
      'Registering a parametrization may not change the shape of the tensor, unless the `unsafe` flag is enabled.\n' ..
      'module.weight.shape: torch.Size([3, 3])\nparametrization(module.weight).shape: torch.Size([9])')
    H.errors_with(function() P.remove_parametrizations(nn.Linear(2, 2), 'weight') end,
      'does not have a parametrization on weight')
  end)

  it('cached() computes each parametrized tensor once while it runs', function()
    local calls = 0
    local Count = torch.class('spec_param.Count', Module)
    function Count:__init() Module.__init(self) end
    function Count:forward(X) calls = calls + 1 return X * 1 end
    local m = nn.Linear(2, 2)
    P.register_parametrization(m, 'weight', Count())
    calls = 0
    local a, b = m.weight, m.weight
    assert.are.equal(2, calls)
    assert.is_false(rawequal(a, b))
    calls = 0
    local r1, r2 = P.cached(function(x)
      local w1, w2 = m.weight, m.weight
      assert.is_true(rawequal(w1, w2))
      return m(x), 7
    end, torch.ones(1, 2))
    assert.are.equal(1, calls)
    assert.are.equal(7, r2)
    assert.are.same({ 1, 2 }, H.shape(r1))
    local _ = m.weight
    assert.are.equal(2, calls) -- the cache is gone after cached() returned
    -- nested: dropped by the outermost only; an error leaves the cache off
    calls = 0
    P.cached(function()
      local _ = m.weight
      P.cached(function() local _ = m.weight end)
      local _ = m.weight
    end)
    assert.are.equal(1, calls)
    H.errors_with(function() P.cached(function() error('boom') end) end, 'boom')
    calls = 0
    local _, _ = m.weight, m.weight
    assert.are.equal(2, calls)
  end)

  it('remove_parametrizations leaves the current value (in the same Parameter) or the original', function()
    local w = W.p_remove
    torch.manual_seed(0)
    local m = nn.Linear(3, 3)
    P.register_parametrization(m, 'weight', Double())
    local o = m.parametrizations.weight.original
    P.remove_parametrizations(m, 'weight')
    H.near(m.weight, w.leave, 1e-7)
    assert.are.equal(w.same, rawequal(m.weight, o))
    assert.are.equal(w.repr, tostring(m))
    assert.are.equal('nn.Linear', torch.typename(m))
    assert.is_nil(rawget(m, '_modules').parametrizations)
    assert.are.same({ 'bias', 'weight' }, keys(m)) -- weight registered again, last (PyTorch's order too)
    torch.manual_seed(0)
    m = nn.Linear(3, 3)
    P.register_parametrization(m, 'weight', Double())
    P.remove_parametrizations(m, 'weight', { leave_parametrized = false })
    H.near(m.weight, w.original, 1e-7)
    -- one of two parametrized names removed: the class stays parametrized
    m = nn.Linear(2, 2)
    P.register_parametrization(m, 'weight', Double())
    P.register_parametrization(m, 'bias', Double())
    P.remove_parametrizations(m, 'weight')
    assert.are.equal('nn.ParametrizedLinear', torch.typename(m))
    assert.are.same({ 'weight', 'parametrizations.bias.original' }, keys(m))
  end)

  it('torch.save / torch.load and deep copies keep the parametrization (PyTorch refuses both)', function()
    torch.manual_seed(0)
    local m = nn.Linear(3, 3)
    P.register_parametrization(m, 'weight', Double())
    P.register_parametrization(m, 'weight', SymR())
    local path = os.tmpname()
    torch.save(m, path)
    local m2 = torch.load(path)
    os.remove(path)
    assert.are.equal('nn.ParametrizedLinear', torch.typename(m2))
    H.near(m2.weight, m.weight, 0)
    m2.weight = torch.eye(3)
    H.near(m2.parametrizations.weight.original, torch.eye(3) / 2)
    H.near(m.weight, W.p_chain.weight, 1e-7) -- the saved one is untouched
    local c = torch.deepcopy(m)
    assert.are.equal(tostring(m), tostring(c))
    H.near(c.weight, m.weight, 0)
    assert.is_false(rawequal(c.parametrizations.weight.original, m.parametrizations.weight.original))
    c.weight = torch.eye(3)
    H.near(m.weight, W.p_chain.weight, 1e-7)
    -- a state_dict loads into another parametrized module
    local m3 = nn.Linear(3, 3)
    P.register_parametrization(m3, 'weight', Double())
    P.register_parametrization(m3, 'weight', SymR())
    assert.are.equal('<All keys matched successfully>', tostring(m3:load_state_dict(m:state_dict())))
    H.near(m3.weight, m.weight, 0)
  end)

  it('a fresh process loads a saved parametrized module (its class is rebuilt by name)', function()
    local path = os.tmpname()
    local m = nn.Linear(2, 2)
    PZ.spectral_norm(m)
    torch.save(m, path)
    local out = H.run_lua(([[
      local torch = require 'moontorch'
      local m = torch.load(%q)
      print(torch.typename(m), m.parametrizations.weight[1]:_get_name(), m.weight:size(1))
    ]]):format(path))
    os.remove(path)
    assert.are.equal('nn.ParametrizedLinear\t_SpectralNorm\t2', (out:gsub('%s+$', '')))
  end)

  it('to(), meta-device modules and transfer_parametrizations_and_params', function()
    local m = nn.Linear(3, 3)
    P.register_parametrization(m, 'weight', Sym())
    m:double()
    assert.are.equal(torch.float64, m.weight.dtype)
    local meta = nn.Linear(4, 3, { device = 'meta' })
    P.register_parametrization(meta, 'weight', Double())
    assert.is_true(meta.weight.is_meta)
    assert.are.same({ 3, 4 }, H.shape(meta.weight))
    assert.are.same({ 5, 3 }, H.shape(meta(torch.empty(5, 4, { device = 'meta' }))))
    local a, b = nn.Linear(3, 3), nn.Linear(3, 3)
    P.register_parametrization(a, 'weight', Sym())
    P.transfer_parametrizations_and_params(a, b)
    assert.is_true(P.is_parametrized(b, 'weight'))
    assert.is_true(rawequal(a.parametrizations.weight.original, b.parametrizations.weight.original))
    H.near(b.weight, a.weight, 0)
  end)
end)

describe('nn.utils.parametrizations.orthogonal', function()
  for i, w in ipairs(W.p_orth) do
    local map = w.map ~= 'nil' and w.map or nil
    it(('Linear(%d, %d), %s, use_trivialization=%s'):format(w.shape[1], w.shape[2], tostring(map), tostring(w.triv)), function()
      torch.manual_seed(0)
      local m = nn.Linear(w.shape[1], w.shape[2])
      PZ.orthogonal(m, 'weight', map, { use_trivialization = w.triv })
      assert.are.equal(w.chosen, m.parametrizations.weight[1].orthogonal_map)
      H.near(m.weight, w.w0, 2e-6)
      H.near(m.parametrizations.weight.original, w.original, 2e-6)
      assert.are.same(w.keys, keys(m))
      -- orthogonal columns (or rows)
      local q = m.weight
      local gram = q:size(1) >= q:size(2) and q:t():matmul(q) or q:matmul(q:t())
      H.near(gram, torch.eye(gram:size(1)), 1e-5)
      local opt = torch.optim.SGD(m:parameters(), { lr = 0.1 })
      local x = torch.randn(2, w.shape[1])
      m(x):pow(2):sum():backward()
      opt:step()
      H.near(m.weight, w.w1, 1e-5)
      local _ = i
    end)
  end

  it('prints as PyTorch; refuses vectors and unknown maps', function()
    torch.manual_seed(0)
    local m = PZ.orthogonal(nn.Linear(3, 3))
    assert.are.equal(W.p_orth_repr, tostring(m))
    H.errors_with(function() PZ.orthogonal(nn.Linear(3, 3), 'bias') end,
      'Expected a matrix or batch of matrices. Got a tensor of 1 dimensions.')
    H.errors_with(function() PZ.orthogonal(nn.Linear(3, 3), 'weight', 'qr') end,
      'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: qr')
    H.errors_with(function() PZ.orthogonal(nn.Linear(3, 3), 'nope') end, "has no parameter or buffer with name 'nope'")
    H.errors_with(function() m.weight = torch.ones(2, 2) end,
      'Expected a matrix or batch of matrices of shape torch.Size([3, 3]). Got a tensor of shape torch.Size([2, 2]).')
  end)

  it('assigning an orthogonal matrix sets the weight to it; batches of matrices', function()
    local m = PZ.orthogonal(nn.Linear(4, 4))
    local q = torch.tensor({ { 0, 1, 0, 0 }, { 1, 0, 0, 0 }, { 0, 0, 0, -1 }, { 0, 0, 1, 0 } })
    m.weight = q
    H.near(m.weight, q, 1e-6)
    local b = nn.Module()
    b.w = nn.Parameter(torch.randn(2, 5, 3))
    PZ.orthogonal(b, 'w')
    for k = 1, 2 do H.near(b.w[k]:t():matmul(b.w[k]), torch.eye(3), 1e-5) end
  end)
end)

describe('nn.utils.parametrizations.spectral_norm', function()
  it('matches PyTorch: buffers, power iteration, training and eval, printing', function()
    local w = W.p_spectral
    torch.manual_seed(0)
    local m = nn.Linear(3, 2)
    PZ.spectral_norm(m)
    assert.are.same(w.keys, keys(m))
    H.near(m.parametrizations.weight[1]._u, w.u, 1e-6)
    H.near(m.parametrizations.weight[1]._v, w.v, 1e-6)
    assert.are.equal(w.repr, tostring(m))
    local x = torch.tensor({ { 1, 2, 3 } })
    local y = m(x)
    y:sum():backward()
    H.near(y, w.y, 1e-6)
    H.near(m.parametrizations.weight.original.grad, w.grad, 1e-5)
    H.near(m.parametrizations.weight[1]._u, w.u1, 1e-6)
    m:eval()
    H.near(m(x), w.y_eval, 1e-6)
    torch.manual_seed(0)
    local c = PZ.spectral_norm(nn.ConvTranspose2d(2, 3, 2))
    assert.are.equal(2, c.parametrizations.weight[1].dim) -- PyTorch's dim 1
    H.near(c.weight, w.convt_weight, 1e-6)
    H.errors_with(function() PZ.spectral_norm(nn.Linear(2, 2), 'weight', 0) end,
      'Expected n_power_iterations to be positive, but got n_power_iterations=0')
    H.errors_with(function() PZ.spectral_norm(nn.Linear(2, 2), { dim = 3 }) end, 'Dimension out of range')
  end)
end)

describe('nn.utils.parametrizations.weight_norm', function()
  it('g and v as original0 and original1, values and gradients of torch._weight_norm', function()
    local w = W.p_weight_norm
    torch.manual_seed(0)
    local m = nn.Linear(3, 2)
    local before = m.weight:clone()
    PZ.weight_norm(m)
    assert.are.same({ 'bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1' }, keys(m))
    local l = m.parametrizations.weight
    H.near(l.original0, w.g, 1e-7)
    H.near(l.original1, before, 0)
    H.near(m.weight, before, 1e-6)
    local y = m(torch.tensor({ { 1, 2, 3 } }))
    y:sum():backward()
    H.near(y, w.y, 1e-6)
    H.near(l.original0.grad, w.g_grad, 1e-5)
    H.near(l.original1.grad, w.v_grad, 1e-5)
    local all = PZ.weight_norm(nn.Linear(3, 2), 'weight', false)
    assert.are.same({}, H.shape(all.parametrizations.weight.original0))
    -- a state_dict of the old nn.utils.weight_norm loads into it
    torch.manual_seed(0)
    local old = nn.utils.weight_norm(nn.Linear(3, 2))
    torch.manual_seed(1)
    local new = PZ.weight_norm(nn.Linear(3, 2))
    assert.are.equal('<All keys matched successfully>', tostring(new:load_state_dict(old:state_dict())))
    H.near(new.weight, before, 1e-6)
  end)
end)

describe('torch.matrix_exp and torch.linalg.householder_product', function()
  -- /usr/bin/python3: torch.matrix_exp(A) for the A below (float64), and of (A * 3).float();
  -- torch.linalg.householder_product(Hm, tau) for the Hm, tau below
  local A = torch.tensor({ { 0.1, 2.0, -1.0 }, { 0.3, -0.5, 0.7 }, { 1.5, 0.2, 0.4 } }, { dtype = torch.float64 })
  it('values', function()
    H.near(torch.matrix_exp(A), { { 0.8289913214085959, 1.4178793226069462, -0.5146308702575056 },
      { 0.7373156342151519, 1.1711472492580828, 0.48654232336013326 },
      { 1.8212137770344783, 1.6379656233146378, 0.9639497033812522 } }, 1e-12, 1e-12)
    H.near(torch.linalg.matrix_exp(A:float() * 3), { { 1.7048, 3.0805, 0.3359 }, { 5.5277, 8.1914, 0.9844 },
      { 9.6273, 14.7543, 1.4164 } }, 1e-3)
    local Hm = torch.tensor({ { 1, 0, 0 }, { 0.5, 1, 0 }, { -0.3, 0.2, 1 }, { 0.1, 0.4, -0.6 } })
    H.near(torch.linalg.householder_product(Hm, torch.tensor({ 1.2, 0.8, 1.5 })), { { -0.2000, -0.1392, -0.1682 },
      { -0.6000, 0.1304, -0.2921 }, { 0.3600, -0.1182, -0.4911 }, { -0.1200, -0.3339, 0.8000 } }, 1e-4)
    H.near(torch.matrix_exp(torch.zeros(2, 2, 2)), torch.eye(2):expand(2, 2, 2))
  end)
  it('gradients (gradcheck)', function()
    local a = (A * 0.5):clone():requires_grad_(true)
    assert.is_true(torch.autograd.gradcheck(torch.matrix_exp, { a }))
    local hm = torch.tensor({ { 1, 0 }, { 0.5, 1 }, { -0.3, 0.2 } }, { dtype = torch.float64, requires_grad = true })
    local tau = torch.tensor({ 1.2, 0.8 }, { dtype = torch.float64, requires_grad = true })
    assert.is_true(torch.autograd.gradcheck(torch.linalg.householder_product, { hm, tau }))
  end)
  it('errors', function()
    H.errors_with(function() torch.matrix_exp(torch.ones(2, 3)) end, 'moontorch.matrix_exp: Expected a square matrix')
    H.errors_with(function() torch.linalg.householder_product(torch.ones(2, 3), torch.ones(2)) end,
      'input.shape[-2] must be greater than or equal to input.shape[-1]')
  end)
end)
