-- nn.functional against PyTorch 1.13. Expected values from /tmp/mt/gen_f.py (/usr/bin/python3,
-- torch 1.13), e.g. F.softmax(x, 1) with x = [[-1.5, 0, 2], [0.5, -0.25, 3]]; class targets there
-- are 0-based ([2, 0, 1]) and 1-based here ({3, 1, 2}), as API.md says.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local F = nn.functional

local E = {
  relu = {{0.0, 0.0, 2.0}, {0.5, 0.0, 3.0}} ,
  leaky = {{-0.30000001192092896, 0.0, 2.0}, {0.5, -0.05000000074505806, 3.0}} ,
  softmax2 = {{0.025908654555678368, 0.1161145344376564, 0.8579767942428589}, {0.07323399931192398, 0.03459329158067703, 0.8921727538108826}} ,
  log_softmax1 = {{-2.1269280910491943, -0.575939416885376, -1.31326162815094}, {-0.12692804634571075, -0.825939416885376, -0.31326165795326233}} ,
  gelu = {{-0.10021086037158966, 0.0, 1.9544999599456787}, {0.3457311987876892, -0.10032343119382858, 2.995950222015381}} ,
  gelu_tanh = {{-0.10042843222618103, 0.0, 1.9545977115631104}, {0.3457140028476715, -0.10032464563846588, 2.9963626861572266}} ,
  elu = {{-0.7768698334693909, 0.0, 2.0}, {0.5, -0.22119921445846558, 3.0}} ,
  softplus = {{0.024293676018714905, 0.3465735912322998, 2.0}, {0.65663081407547, 0.2370384931564331, 3.0}} ,
  linear = {{3.3499999046325684, -3.450000047683716}, {6.599999904632568, -1.0125000476837158}} ,
  linear_fn = 'AddmmBackward0',
  linear_gx = {{-7.0, -8.425000190734863, 16.850000381469727}, {3.562499761581421, -13.706250190734863, 27.412500381469727}} ,
  linear_gw = {{-3.4499993324279785, -3.299999952316284, 53.0}, {9.33750057220459, 0.5062500238418579, -19.875}} ,
  linear_gb = {19.899999618530273, -8.925000190734863} ,
  linear1d = {4.599999904632568, 0.30000001192092896} ,
  ce = 0.707301676273346 ,
  ce_grad = {{0.12573620676994324, 0.037871021777391434, -0.16360722482204437}, {-0.09726111590862274, 0.07110358029603958, 0.026157546788454056}, {0.10020320117473602, -0.22259168326854706, 0.12238846719264984}} ,
  ce_w = 0.8246769905090332 ,
  ce_ignore = 0.8884499073028564 ,
  ce_none = {0.6749569177627563, 0.34500524401664734, 1.1019428968429565} ,
  ce_ls = 0.7650793790817261 ,
  ce_probs = 1.3651050329208374 ,
  nll_sum = 2.1219050884246826 ,
  mse = 4.416666507720947 , l1 = 5.5 ,
  smooth_l1 = 1.375 ,
  bce = 0.22839301824569702 ,
  bce_logits = 0.8047556281089783 ,
  normalize = {{-0.6000000238418579, 0.0, 0.800000011920929}, {0.16384638845920563, -0.08192319422960281, 0.9830783009529114}} ,
  cos = {0.1154700517654419, 0.6148788928985596} ,
  pad = {{9.0, 1.0, 2.0}, {9.0, 3.0, 4.0}, {9.0, 9.0, 9.0}} ,
  dropout = {{2.0, 2.0, 0.0, 2.0}, {0.0, 0.0, 2.0, 2.0}} ,
}

local function X() return torch.tensor({ { -1.5, 0.0, 2.0 }, { 0.5, -0.25, 3.0 } }) end

describe('nn.functional activations', function()
  it('match PyTorch', function()
    H.near(F.relu(X()), E.relu)
    H.near(F.leaky_relu(X(), 0.2), E.leaky)
    H.near(F.leaky_relu(X(), { negative_slope = 0.2 }), E.leaky)
    H.near(F.softmax(X(), 2), E.softmax2)
    H.near(F.log_softmax(X(), 1), E.log_softmax1)
    H.near(F.gelu(X()), E.gelu)
    H.near(F.gelu(X(), 'tanh'), E.gelu_tanh)
    H.near(F.elu(X()), E.elu)
    H.near(F.softplus(X(), 2.0, 3.0), E.softplus)
  end)
  it('inplace variants write into their input', function()
    local x = X()
    assert.is_true(rawequal(F.relu(x, true), x))
    H.near(x, E.relu)
    x = X()
    F.leaky_relu(x, { negative_slope = 0.2, inplace = true })
    H.near(x, E.leaky)
  end)
end)

describe('nn.functional.linear', function()
  it('values, grad_fn and gradients', function()
    local w = torch.tensor({ { 0.5, -1.0, 2.0 }, { 1.5, 0.25, -0.5 } }, { requires_grad = true })
    local b = torch.tensor({ 0.1, -0.2 }, { requires_grad = true })
    local x = X():requires_grad_()
    local y = F.linear(x, w, b)
    H.near(y, E.linear)
    assert.are.equal(E.linear_fn, y.grad_fn:name())
    y:pow(2):sum():backward()
    H.near(x.grad, E.linear_gx, 1e-4)
    H.near(w.grad, E.linear_gw, 1e-4)
    H.near(b.grad, E.linear_gb, 1e-4)
    H.near(F.linear(torch.tensor({ 1, 2, 3 }), w, b), E.linear1d)
    H.near(F.linear(torch.tensor({ 1, 2, 3 }), w), { 4.5, 0.5 })
  end)
end)

describe('nn.functional losses', function()
  local function inp()
    return torch.tensor({ { 0.2, -1.0, 0.5 }, { 1.5, 0.3, -0.7 }, { 0.0, 0.1, 0.2 } }, { requires_grad = true })
  end
  local tgt = function() return torch.tensor({ 3, 1, 2 }, { dtype = torch.int64 }) end
  it('cross_entropy with 1-based class targets, and its gradient', function()
    local i = inp()
    local l = F.cross_entropy(i, tgt())
    H.near(l, E.ce)
    l:backward()
    H.near(i.grad, E.ce_grad)
    H.near(F.cross_entropy(inp(), tgt(), { weight = torch.tensor({ 1.0, 2.0, 0.5 }) }), E.ce_w)
    H.near(F.cross_entropy(inp(), torch.tensor({ 3, -100, 2 }, { dtype = torch.int64 })), E.ce_ignore)
    H.near(F.cross_entropy(inp(), tgt(), { reduction = 'none' }), E.ce_none)
    H.near(F.cross_entropy(inp(), tgt(), { label_smoothing = 0.1 }), E.ce_ls)
    local probs = torch.tensor({ { 1, 2, 3 }, { 0, 0, 1 }, { 2, 1, 0 } }):softmax(2)
    H.near(F.cross_entropy(inp(), probs), E.ce_probs)
    H.near(F.nll_loss(inp():log_softmax(2), tgt(), { reduction = 'sum' }), E.nll_sum)
  end)
  it('regression and binary losses', function()
    local a, t = torch.tensor({ 0.5, -1.0, 2.0 }), torch.tensor({ 1.0, 1.0, -1.0 })
    H.near(F.mse_loss(a, t), E.mse)
    H.near(F.l1_loss(a, t, 'sum'), E.l1)
    H.near(F.smooth_l1_loss(a, t), E.smooth_l1)
    local p, q = torch.tensor({ 0.2, 0.7, 0.9 }), torch.tensor({ 0.0, 1.0, 1.0 })
    H.near(F.binary_cross_entropy(p, q), E.bce)
    H.near(F.binary_cross_entropy_with_logits(a, q), E.bce_logits)
  end)
  it('errors', function()
    H.errors_with(function() F.cross_entropy(inp(), torch.tensor({ 4, 1, 2 }, { dtype = torch.int64 })) end,
      'Target 4 is out of bounds')
    H.errors_with(function() F.cross_entropy(inp(), torch.tensor({ 0, 1, 2 }, { dtype = torch.int64 })) end,
      'Target 0 is out of bounds')
    H.errors_with(function() F.nll_loss(inp(), torch.tensor({ 1, 2 }, { dtype = torch.int64 })) end,
      'Expected input batch_size (3) to match target batch_size (2).')
    H.errors_with(function() F.mse_loss(torch.ones(2), torch.ones(2), 'avg') end, 'avg is not a valid value for reduction')
    H.errors_with(function() F.linear(3, torch.ones(2, 2)) end, 'moontorch.nn.functional.linear: input must be a tensor')
    H.errors_with(function() F.dropout(torch.ones(2), 1.5) end, 'dropout probability has to be between 0 and 1')
  end)
end)

describe('nn.functional, other', function()
  it('normalize, cosine_similarity (default dim 2), pad, dropout', function()
    H.near(F.normalize(X()), E.normalize)
    H.near(F.cosine_similarity(X(), torch.ones(2, 3)), E.cos)
    H.near(F.pad(torch.tensor({ { 1, 2 }, { 3, 4 } }), { 1, 0, 0, 1 }, { value = 9.0 }), E.pad)
    torch.manual_seed(3)
    H.near(F.dropout(torch.ones(2, 4), 0.5), E.dropout)
    local x = torch.ones(3)
    assert.is_true(rawequal(F.dropout(x, 0.5, false), x), 'no dropout outside training')
  end)
end)
