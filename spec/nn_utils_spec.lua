-- nn.utils (lua/nn/misc.lua): clip_grad_norm_ (every norm type, the total norm it returns, the
-- gradients after) recorded from PyTorch 1.13 (spec/support/nn_modules_record.py), clip_grad_value_,
-- parameters_to_vector, vector_to_parameters, and their errors.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local W = dofile('spec/support/nn_modules_wants.lua')

local d64 = { dtype = torch.float64 }
local function t64(v) return torch.tensor(v, d64) end

local function params(w)
  -- three parameters, the last without a gradient (PyTorch's case too)
  local ps = { nn.Parameter(torch.zeros({ 3, 2 }, d64)), nn.Parameter(torch.zeros({ 4 }, d64)), nn.Parameter(torch.zeros({ 2 }, d64)) }
  ps[1].grad = t64(w.grads[1])
  ps[2].grad = t64(w.grads[2])
  return ps
end

describe('nn.utils.clip_grad_norm_ against PyTorch 1.13', function()
  for _, name in ipairs({ 'l2', 'inf', 'l1', 'l3' }) do
    it(name, function()
      local w = W['clip_' .. name]
      local ps = params(w)
      local total = nn.utils.clip_grad_norm_(ps, w.max_norm, w.norm_type)
      assert.is_true(torch.is_tensor(total))
      assert.are.same({}, total:size())
      H.near(total, w.total, 1e-12, 1e-12)
      H.near(ps[1].grad, w.after[1], 1e-12, 1e-12)
      H.near(ps[2].grad, w.after[2], 1e-12, 1e-12)
      assert.is_nil(ps[3].grad)
    end)
  end

  it('takes one tensor, an options table, \'inf\'; no gradients gives 0', function()
    local w = W.clip_inf
    local ps = params(w)
    local total = nn.utils.clip_grad_norm_(ps, w.max_norm, { norm_type = 'inf' })
    H.near(total, w.total, 1e-12)
    local p = nn.Parameter(torch.ones(3))
    p.grad = torch.tensor({ 3, 4, 0 })
    H.near(nn.utils.clip_grad_norm_(p, 1), 5)
    H.near(p.grad, { 3 / (5 + 1e-6), 4 / (5 + 1e-6), 0 }, 1e-6)
    assert.are.equal(0, nn.utils.clip_grad_norm_({ nn.Parameter(torch.ones(2)) }, 1):item())
    -- a module's parameters after a backward
    local m = nn.Linear(3, 2)
    m(torch.ones(4, 3)):sum():backward()
    local before = nn.utils.clip_grad_norm_(m:parameters(), 0.5)
    assert.is_true(before:item() > 0.5)
    H.near(nn.utils.clip_grad_norm_(m:parameters(), 1e9), 0.5, 1e-5)
  end)

  it('error_if_nonfinite', function()
    local p = nn.Parameter(torch.ones(2))
    p.grad = torch.tensor({ 1, 0 / 0 })
    local err = H.errors_with(function() nn.utils.clip_grad_norm_({ p }, 1, 2, true) end,
      'moontorch.nn.utils.clip_grad_norm_: The total norm of order 2.0 for gradients from `parameters` is non-finite, so it cannot be clipped.')
    assert.is_truthy(tostring(err):find('nn_utils_spec.lua:', 1, true))
    local total = nn.utils.clip_grad_norm_({ p }, 1)
    assert.is_true(total:item() ~= total:item())
  end)
end)

describe('nn.utils: clip_grad_value_, parameters_to_vector, vector_to_parameters', function()
  it('clip_grad_value_ clamps every gradient in place', function()
    local a, b = nn.Parameter(torch.zeros(3)), nn.Parameter(torch.zeros(2))
    a.grad = torch.tensor({ -3, 0.5, 2 })
    local g = a.grad
    assert.is_nil(nn.utils.clip_grad_value_({ a, b }, 1))
    H.near(a.grad, { -1, 0.5, 1 })
    assert.is_true(rawequal(g, a.grad) or g:data_ptr() == a.grad:data_ptr())
    nn.utils.clip_grad_value_(a, 0.25)
    H.near(a.grad, { -0.25, 0.25, 0.25 })
  end)

  it('parameters_to_vector and back', function()
    local m = nn.Sequential(nn.Linear(3, 2), nn.LayerNorm(2))
    local v = nn.utils.parameters_to_vector(m:parameters())
    assert.are.same({ 3 * 2 + 2 + 2 + 2 }, v:size())
    H.near(v:narrow(1, 1, 6), m[1].weight:reshape(-1))
    assert.is_true(v.requires_grad) -- differentiable, as PyTorch's cat of views
    local w = torch.arange(1, 13):to(torch.float32)
    nn.utils.vector_to_parameters(w, m:parameters())
    H.near(m[1].weight, { { 1, 2, 3 }, { 4, 5, 6 } })
    H.near(m[2].bias, { 11, 12 })
    assert.is_true(m[1].weight.requires_grad)
    H.near(nn.utils.parameters_to_vector(m:parameters()), w)
  end)

  it('errors', function()
    local ps = { nn.Parameter(torch.ones(2)) }
    local cases = {
      { function() nn.utils.vector_to_parameters({ 1, 2 }, ps) end, 'moontorch.nn.utils.vector_to_parameters: expected torch.Tensor, but got: table' },
      { function() nn.utils.vector_to_parameters(torch.ones(3), ps) end, "vec must be a 1-D tensor of 2 elements (the parameters' total), got size [3]" },
      { function() nn.utils.clip_grad_norm_(ps) end, "missing required argument 'max_norm'" },
      { function() nn.utils.clip_grad_value_(ps) end, "missing required argument 'clip_value'" },
      { function() nn.utils.parameters_to_vector({ 1 }) end, 'parameters[1] must be a tensor (got number)' },
      { function() nn.utils.parameters_to_vector({ torch.ones(2), torch.ones(2, { device = 'meta' }) }) end,
        'Found two parameters on different devices, this is currently not supported.' },
    }
    for _, c in ipairs(cases) do
      local err = H.errors_with(c[1], c[2])
      assert.is_truthy(tostring(err):find('nn_utils_spec.lua:', 1, true), 'raised at the caller: ' .. tostring(err))
    end
  end)
end)
