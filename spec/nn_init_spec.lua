-- nn.init: values after torch.manual_seed match PyTorch 1.13's. Expected values were produced by
-- /tmp/mt/gen_init.py, i.e. /usr/bin/python3 with torch 1.13:
--   torch.manual_seed(7); t = torch.empty(*shape); <call>; print(t.tolist())
-- (calls listed next to each case), torch.manual_seed(1); nn.Linear(3, 3) for the Linear case.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local init = nn.init

local E = {
  uniform_ = {{0.8373063802719116, -0.0029920339584350586, 1.1480292081832886, 1.142225742340088}, {0.08190390467643738, 0.5626535415649414, 0.01771506667137146, 1.0743409395217896}, {0.4132903814315796, 1.6281708478927612, 1.6373579502105713, 0.8773380517959595}},
  normal_ = {{0.9266024231910706, 1.3930706977844238, 1.4734108448028564, 0.4428279995918274}, {1.8453950881958008, 0.5525860786437988, 0.8221874833106995, 1.6161928176879883}, {1.0690863132476807, 0.15890075266361237, 1.1588391065597534, 1.0664035081863403}},
  xavier_uniform_ = {{0.12097522616386414, -1.0433763265609741, 0.5515254735946655, 0.5434838533401489, -0.9257410764694214}, {-0.2595949172973633, -1.014683723449707, 0.44941994547843933, -0.4665585160255432, 1.2168292999267578}, {1.2295591831207275, 0.17644473910331726, -0.7384113073348999, -1.0173394680023193, -0.19021321833133698}},
  xavier_normal_ = {{-0.07339754700660706, 0.39307063817977905, 0.47341081500053406, -0.5571720004081726, 0.8453950881958008}, {-0.44741395115852356, -0.17781251668930054, 0.6161928772926331, 0.06908632814884186, -0.8410992622375488}, {0.158839151263237, 0.06640348583459854, 0.06866204738616943, 0.12027306109666824, 0.6977254152297974}},
  kaiming_uniform_ = {{0.031235668808221817, -0.26939862966537476, 0.1424032747745514, 0.14032691717147827, -0.2390253245830536}, {-0.06702711433172226, -0.2619902193546295, 0.11603973060846329, -0.12046489119529724, 0.31418395042419434}, {0.31747081875801086, 0.04555783420801163, -0.19065698981285095, -0.2626759111881256, -0.04911284148693085}},
  kaiming_normal_ = {{-0.11985769867897034, 0.6418817043304443, 0.773076593875885, -0.9098581075668335, 1.3805243968963623}, {-0.7306239008903503, -0.29036661982536316, 1.0062386989593506, 0.11281751096248627, -1.3735092878341675}, {0.25938326120376587, 0.10843643546104431, 0.11212465167045593, 0.1964050978422165, 1.1393808126449585}},
  trunc_normal_ = {{0.45266926288604736, -0.26953554153442383, 0.6952245831489563, 0.6906329393386841}, {-0.18367630243301392, 0.23637187480926514, -0.24808937311172485, 0.6371949911117554}, {0.11402693390846252, 1.1011996269226074, 1.1097697019577026, 0.48377445340156555}},
  orthogonal_ = {{-0.06183063983917236, 0.33112582564353943, 0.39880502223968506, -0.4693661034107208, 0.7121675610542297}, {-0.4412720203399658, -0.03708244860172272, 0.7296752333641052, -0.11805479228496552, -0.5074847936630249}, {0.04120931401848793, -0.27399927377700806, 0.4156366288661957, 0.7666064500808716, 0.4034687578678131}},
  orthogonal_tall = {{-0.14260625839233398, 0.7753440141677856, 0.9653555154800415}, {-1.0825469493865967, 1.0401177406311035, -0.8377307057380676}, {-0.34547749161720276, 1.116856336593628, 0.10962526500225067}, {-1.6341980695724487, -0.9617215394973755, 0.5640112161636353}, {0.1334056407213211, 0.3804224729537964, 1.4269438982009888}},
  sparse_ = {{0.0, 0.7861412763595581, 0.9468216300010681}, {-1.1143440008163452, 0.0, -0.8948279023170471}, {-0.3556250333786011, 1.2323857545852661, 0.0}, {0.0, 0.0, 0.0}},
  kaiming_uniform_conv = {{{{0.04938792809844017, -0.4259566068649292}, {0.22515933215618134, 0.2218763530254364}}, {{-0.37793222069740295, -0.10597917437553406}, {-0.4142428934574127, 0.18347492814064026}}, {{-0.19047172367572784, 0.49676844477653503}, {0.5019654035568237, 0.07203326374292374}}}, {{{-0.30145516991615295, -0.4153271019458771}, {-0.07765422016382217, -0.19899971783161163}}, {{0.31166496872901917, -0.6037957668304443}, {0.664566695690155, -0.5546736121177673}}, {{0.5414706468582153, -0.1227923110127449}, {0.3637278974056244, 0.2755559980869293}}}},
  linear_weight = {{0.2974873483181, -0.2548298239707947, -0.11192598193883896}, {0.2709902822971344, -0.5435388088226318, 0.3462469279766083}, {-0.11877556145191193, 0.2937234044075012, 0.08026149123907089}} ,
  linear_bias = {-0.07069316506385803, 0.16013438999652863, 0.02848171815276146} ,
  xavier_uniform_f64 = {{-0.48335326066941864, -0.49581223175260547, 0.793305931529125}, {0.34328715173296137, 0.9257154630495609, 0.7439066464065082}} ,
  dirac_ = {{{0.0, 1.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}, {{0.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 0.0}}, {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 1.0, 0.0}}} ,
  gains = { 1, 1, 1.6666666666666667, 1.4142135623730951, 1.4141428569978354, 1.3867504905630728, 0.75, 1 },
}

local function drawn(shape, fn, dtype)
  torch.manual_seed(7)
  local t = torch.empty(shape, dtype and { dtype = dtype } or nil)
  fn(t)
  return t
end

describe('nn.init draws what PyTorch draws', function()
  local cases = {
    { 'uniform_', { 3, 4 }, function(t) init.uniform_(t, -0.5, 2.0) end },          -- init.uniform_(t, -0.5, 2.0)
    { 'normal_', { 3, 4 }, function(t) init.normal_(t, { mean = 1.0, std = 0.5 }) end }, -- init.normal_(t, 1.0, 0.5)
    { 'xavier_uniform_', { 3, 5 }, function(t) init.xavier_uniform_(t, 2.0) end },   -- gain=2.0
    { 'xavier_normal_', { 3, 5 }, function(t) init.xavier_normal_(t) end },
    { 'kaiming_uniform_', { 3, 5 }, function(t) init.kaiming_uniform_(t, { a = math.sqrt(5) }) end },
    { 'kaiming_normal_', { 3, 5 }, function(t) init.kaiming_normal_(t, 0, 'fan_out', 'relu') end },
    { 'trunc_normal_', { 3, 4 }, function(t) init.trunc_normal_(t, { mean = 0.5, std = 1.0, a = -1.0, b = 1.5 }) end },
    { 'orthogonal_', { 3, 5 }, function(t) init.orthogonal_(t) end },
    { 'orthogonal_tall', { 5, 3 }, function(t) init.orthogonal_(t, 2.0) end },          -- gain=2.0
    { 'sparse_', { 4, 3 }, function(t) init.sparse_(t, 0.5, { std = 1.0 }) end },
    { 'kaiming_uniform_conv', { 2, 3, 2, 2 }, function(t) init.kaiming_uniform_(t) end },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      H.near(drawn(c[2], c[3]), E[c[1]], 1e-5, 1e-5)
    end)
  end
  it('float64 draws', function()
    H.near(drawn({ 2, 3 }, function(t) init.xavier_uniform_(t) end, torch.float64), E.xavier_uniform_f64, 1e-12, 1e-12)
  end)
  it("nn.Linear(3, 3)'s default initialisation after manual_seed(1)", function()
    torch.manual_seed(1)
    local l = nn.Linear(3, 3)
    H.near(l.weight, E.linear_weight, 1e-6)
    H.near(l.bias, E.linear_bias, 1e-6)
  end)
  it('an orthogonal matrix is orthogonal', function()
    local w = init.orthogonal_(torch.empty(4, 6))
    H.near(w:matmul(w:t()), torch.eye(4), 1e-5)
  end)
end)

describe('nn.init fills', function()
  it('constant_, ones_, zeros_, eye_, dirac_', function()
    H.near(init.constant_(torch.empty(2, 2), 3.5), { { 3.5, 3.5 }, { 3.5, 3.5 } })
    H.near(init.ones_(torch.empty(3)), { 1, 1, 1 })
    H.near(init.zeros_(torch.empty(3)), { 0, 0, 0 })
    H.near(init.eye_(torch.empty(2, 3)), { { 1, 0, 0 }, { 0, 1, 0 } })
    H.near(init.dirac_(torch.empty(3, 3, 3)), E.dirac_)
  end)
  it('returns the same tensor and records no autograd', function()
    local w = torch.empty(3, 4, { requires_grad = true })
    for _, f in ipairs { init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_normal_, init.orthogonal_,
      init.zeros_, init.trunc_normal_ } do
      local r = f(w)
      assert.is_true(rawequal(r, w))
      assert.is_nil(w.grad_fn)
      assert.is_true(w.is_leaf and w.requires_grad)
    end
    assert.is_true(torch.is_grad_enabled())
  end)
  it('gains and fans', function()
    local got = {}
    for i, a in ipairs { { 'linear' }, { 'sigmoid' }, { 'tanh' }, { 'relu' }, { 'leaky_relu' }, { 'leaky_relu', 0.2 },
      { 'selu' }, { 'conv2d' } } do
      got[i] = init.calculate_gain(a[1], a[2])
    end
    H.near(got, E.gains, 1e-12)
    local fi, fo = init.calculate_fan_in_and_fan_out(torch.empty(4, 3, 5, 5))
    assert.are.equal(75, fi)
    assert.are.equal(100, fo)
  end)
  it('errors name the function and the problem', function()
    H.errors_with(function() init.calculate_gain('cube') end, 'Unsupported nonlinearity cube')
    H.errors_with(function() init.calculate_gain('leaky_relu', 'x') end, 'negative_slope x not a valid number')
    H.errors_with(function() init.xavier_uniform_(torch.empty(3)) end,
      'Fan in and fan out can not be computed for tensor with fewer than 2 dimensions')
    H.errors_with(function() init.kaiming_uniform_(torch.empty(3, 3), { mode = 'fan_avg' }) end,
      'Mode fan_avg not supported, please use one of fan_in, fan_out')
    H.errors_with(function() init.eye_(torch.empty(3)) end, 'Only tensors with 2 dimensions are supported')
    H.errors_with(function() init.dirac_(torch.empty(3, 3)) end, 'Only tensors with 3, 4, or 5 dimensions are supported')
    H.errors_with(function() init.orthogonal_(torch.empty(3)) end, 'Only tensors with 2 or more dimensions are supported')
    H.errors_with(function() init.uniform_(3) end, 'moontorch.nn.init.uniform_: expected a tensor')
    local ok = pcall(init.uniform_, 3)
    assert.is_false(ok)
    assert.is_true(torch.is_grad_enabled(), 'a failing init leaves grad mode as it was')
  end)
end)
