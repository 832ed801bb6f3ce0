-- Built-in layers against PyTorch 1.13: BatchNorm (training, eval, running statistics,
-- cumulative average, gradients), Linear options, activations. Values from /tmp/mt/gen_bn.py
-- (/usr/bin/python3): x = torch.arange(24.).reshape(2, 3, 2, 2).sin() * 3; bn = nn.BatchNorm2d(3)
-- with weight [1, 2, 0.5], bias [0, -1, 1]; bn(x); bn(x * 2); bn.eval(); bn(x). BatchNorm1d(3,
-- momentum=None) on x1 = arange(12.).reshape(4, 3).cos(), then x1 * 3. Gradients of
-- (bn(x) * arange(24.).reshape(2, 3, 2, 2)).sum() with a fresh BatchNorm2d(3).
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'

local E = {
  train_out = {{{{-0.8617786169052124, 0.8363044857978821}, {0.9731778502464294, -0.5769993662834167}}, {{-2.3290796279907227, -3.0789742469787598}, {-0.5579203367233276, 2.916236639022827}}, {{1.5888760089874268, 1.209226369857788}, {0.580375075340271, 0.28048503398895264}}}, {{{-1.9445794820785522, -0.013884139247238636}, {1.137260913848877, 0.45049822330474854}}, {{-0.5894110798835754, -3.0881502628326416}, {-2.307504415512085, 1.0348037481307983}}, {{1.5386192798614502, 1.4884437322616577}, {0.9323553442955017, 0.3816192150115967}}}} ,
  rm = {0.12811416387557983, -0.1195712462067604, 0.028199801221489906} , rv = {1.1525764465332031, 1.19889497756958, 1.4944567680358887} ,
  eval_out = {{{{-0.25963839888572693, 1.5045061111450195}, {1.6467043161392212, 0.03621977940201759}}, {{-3.5509629249572754, -4.355067253112793}, {-1.6517671346664429, 2.073535203933716}}, {{1.7479509115219116, 1.299195408821106}, {0.5558769702911377, 0.20139920711517334}}}, {{{-1.38456392288208, 0.6212421655654907}, {1.8171708583831787, 1.1036906242370605}}, {{-1.6855343580245972, -4.364906311035156}, {-3.5278279781341553, 0.05609440058469772}}, {{1.6885462999343872, 1.629237413406372}, {0.9719266295433044, 0.32094240188598633}}}} ,
  rm2 = {0.37153106927871704, -0.34675660729408264, 0.08177942037582397} , rv2 = {2.0476248264312744, 2.274585485458374, 3.7228384017944336} ,
  cma_rm = {0.02952376753091812, -0.09925524890422821, -0.13677948713302612} , cma_rv = {6.2188310623168945, 3.3028910160064697, 0.42687273025512695} ,
  gx = {{{{-5.0293803215026855, -4.387462615966797}, {-3.7172763347625732, -3.01654314994812}}, {{-4.6234636306762695, -3.99711275100708}, {-3.405651807785034, -2.824357032775879}}, {{-3.26291561126709, -2.8409388065338135}, {-2.4297850131988525, -2.0043437480926514}}}, {{{3.0622005462646484, 3.699906587600708}, {4.3517279624938965, 5.036827564239502}}, {{2.7782046794891357, 3.4232099056243896}, {4.0332350730896, 4.615935802459717}}, {{1.9964873790740967, 2.4327735900878906}, {2.8470876216888428, 3.261634111404419}}}} ,
  gw = {0.2153424322605133, 0.27600032091140747, -0.39620858430862427} , gb = {60.0, 92.0, 124.0} ,
}

local function X() return torch.arange(0, 24):reshape(2, 3, 2, 2):sin() * 3 end

describe('BatchNorm', function()
  it('normalises with batch statistics in training and updates the running ones', function()
    local bn = nn.BatchNorm2d(3)
    torch.no_grad(function()
      bn.weight:copy_(torch.tensor({ 1, 2, 0.5 }))
      bn.bias:copy_(torch.tensor({ 0, -1, 1 }))
    end)
    H.near(bn(X()), E.train_out, 1e-5)
    H.near(bn.running_mean, E.rm, 1e-6)
    H.near(bn.running_var, E.rv, 1e-6)
    bn(X() * 2)
    assert.are.equal(2, bn.num_batches_tracked:item())
    bn:eval()
    H.near(bn(X()), E.eval_out, 1e-5)
    H.near(bn.running_mean, E.rm2, 1e-6)
    H.near(bn.running_var, E.rv2, 1e-6)
    assert.are.equal(2, bn.num_batches_tracked:item(), 'eval does not count batches')
  end)
  it('momentum = false is a cumulative average (PyTorch\'s momentum=None)', function()
    local bn = nn.BatchNorm1d(3, { momentum = false })
    local x1 = torch.arange(0, 12):reshape(4, 3):cos()
    bn(x1); bn(x1 * 3)
    H.near(bn.running_mean, E.cma_rm, 1e-6)
    H.near(bn.running_var, E.cma_rv, 1e-5)
  end)
  it('gradients', function()
    local x = X():requires_grad_()
    local bn = nn.BatchNorm2d(3)
    ;(bn(x) * torch.arange(0, 24):reshape(2, 3, 2, 2)):sum():backward()
    H.near(x.grad, E.gx, 1e-4)
    H.near(bn.weight.grad, E.gw, 1e-4)
    H.near(bn.bias.grad, E.gb, 1e-4)
  end)
  it('state_dict keys, dtype option, input checks', function()
    assert.are.same({ 'weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked' },
      nn.BatchNorm2d(2):state_dict():keys())
    local h = nn.BatchNorm2d(3, { dtype = torch.half })
    assert.are.equal('tensor([0., 0., 0.], dtype=torch.float16)', tostring(h.running_mean))
    assert.are.equal(torch.float16, h.weight.dtype)
    assert.are.equal(torch.int64, h.num_batches_tracked.dtype)
    H.errors_with(function() nn.BatchNorm2d(3)(torch.ones(2, 3)) end, 'expected 4D input (got 2D input)')
    H.errors_with(function() nn.BatchNorm1d(3)(torch.ones(1, 3)) end, 'Expected more than 1 value per channel when training')
    local off = nn.BatchNorm1d(2, { track_running_stats = false, affine = false })
    assert.are.equal(0, #off:parameters() + #off:buffers())
    H.near(off(torch.tensor({ { 1, 2 }, { 3, 6 } })), { { -1, -1 }, { 1, 1 } }, 1e-3)
  end)
end)

describe('Linear and activations', function()
  it('Linear options and shapes', function()
    local l = nn.Linear(3, 2, { bias = false })
    assert.is_nil(l.bias)
    assert.are.same({ 'weight' }, l:state_dict():keys())
    assert.are.equal('Linear(in_features=3, out_features=2, bias=False)', tostring(l))
    assert.are.same({ 4, 5, 2 }, l(torch.ones(4, 5, 3)):size())
    assert.are.same({ 2 }, l(torch.ones(3)):size())
    assert.are.equal(torch.float64, nn.Linear(2, 2, { dtype = torch.float64 }).weight.dtype)
    H.errors_with(function() nn.Linear(-1, 2) end, 'moontorch.nn.Linear: in_features must be a non-negative integer (got -1)')
    H.errors_with(function() l(torch.ones(4)) end, 'moontorch.')
  end)
  it('ReLU, LeakyReLU and friends', function()
    local x = torch.tensor({ -2, 0.5 })
    H.near(nn.ReLU()(x), { 0, 0.5 })
    H.near(nn.LeakyReLU(0.1)(x), { -0.2, 0.5 })
    H.near(nn.LeakyReLU({ negative_slope = 0.1 })(x), { -0.2, 0.5 })
    assert.are.equal('LeakyReLU(negative_slope=0.01)', tostring(nn.LeakyReLU()))
    assert.are.equal('LeakyReLU(negative_slope=1.0, inplace=True)', tostring(nn.LeakyReLU(1, true)))
    H.near(nn.Softmax(1)(x), x:softmax(1))
    H.near(nn.Identity()(x), x)
    local y = torch.tensor({ -1, 1 })
    nn.ReLU(true)(y)
    H.near(y, { 0, 1 })
  end)
end)

-- PyTorch 1.13 (/usr/bin/python3): nn.Linear(3.5, 2) and nn.BatchNorm1d(2.5) raise (empty()
-- takes no float sizes), nn.Linear(-1, 2) and nn.BatchNorm1d(-1) raise ("Trying to create tensor
-- with negative dimension"), nn.Linear(0, 2) and nn.BatchNorm1d(0) construct; nn.Softmax(dim=1.5)
-- fails at its call (softmax() takes an int dim) where ours fails at construction; print(nn.Softmax())
-- gives "Softmax(dim=None)".
describe('integer arguments of layers', function()
  it('Linear sizes are non-negative integers', function()
    H.errors_with(function() nn.Linear(3.5, 2) end, 'moontorch.nn.Linear: in_features must be a non-negative integer (got 3.5)')
    H.errors_with(function() nn.Linear(3, 2.5) end, 'out_features must be a non-negative integer (got 2.5)')
    H.errors_with(function() nn.Linear(3, -2) end, 'out_features must be a non-negative integer (got -2)')
    H.errors_with(function() nn.Linear('3', 2) end, "in_features must be a non-negative integer (got '3' of type string)")
    H.errors_with(function() nn.Linear(true, 2) end, 'in_features must be a non-negative integer (got true of type boolean)')
    H.errors_with(function() nn.Linear(0 / 0, 2) end, 'in_features must be a non-negative integer')
    H.errors_with(function() nn.Linear(math.huge, 2) end, 'in_features must be a non-negative integer (got inf)')
    H.errors_with(function() nn.Linear(1e300, 2) end, 'in_features must be a non-negative integer (got 1e+300)')
    assert.are.same({ 2, 0 }, nn.Linear(0, 2).weight:size())
  end)
  it('BatchNorm num_features is a non-negative integer', function()
    H.errors_with(function() nn.BatchNorm1d(2.5) end, 'moontorch.nn.BatchNorm1d: num_features must be a non-negative integer (got 2.5)')
    H.errors_with(function() nn.BatchNorm2d(-1) end, 'moontorch.nn.BatchNorm2d: num_features must be a non-negative integer (got -1)')
    H.errors_with(function() nn.BatchNorm3d(nil) end, 'num_features must be a non-negative integer (got nil of type nil)')
    assert.are.equal('BatchNorm1d(0, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)',
      tostring(nn.BatchNorm1d(0)))
  end)
  it('Softmax and LogSoftmax dims are integers or nil (printed as None)', function()
    H.errors_with(function() nn.Softmax({ dim = 1.5 }) end, 'moontorch.nn.Softmax: dim must be an integer (got 1.5)')
    H.errors_with(function() nn.LogSoftmax('a') end, "moontorch.nn.LogSoftmax: dim must be an integer (got 'a' of type string)")
    assert.are.equal('Softmax(dim=None)', tostring(nn.Softmax()))
    assert.are.equal('LogSoftmax(dim=None)', tostring(nn.LogSoftmax()))
    assert.are.equal('Softmax(dim=-1)', tostring(nn.Softmax(-1)))
    assert.are.equal('LogSoftmax(dim=2)', tostring(nn.LogSoftmax({ dim = 2 })))
  end)
end)
