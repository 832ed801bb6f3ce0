-- nn.init against PyTorch 1.13: after torch.manual_seed the same calls draw the same numbers. The
-- expected values E were printed by the Python script in the comment below (/usr/bin/python3,
-- torch 1.13, CPU); each case repeats the call of the same name in Lua.
--[==[
# values for spec/nn_init_spec.lua: /usr/bin/python3 gen_init.py (torch 1.13, CPU). Each case:
# torch.manual_seed(7); t = torch.empty(*shape, dtype=dtype); <call>; print(t.tolist())
import torch, math, warnings
from torch.nn import init
warnings.simplefilter('ignore')
def L(v):
    if torch.is_tensor(v): v = v.detach().tolist()
    if isinstance(v, (list, tuple)): return '{' + ', '.join(L(x) for x in v) + '}'
    if isinstance(v, str): return repr(v)
    return repr(v)
cases = [
 ("uniform_", (3, 4), None, lambda t: init.uniform_(t, -0.5, 2.0)),
 ("uniform_default", (5,), None, lambda t: init.uniform_(t)),
 ("normal_", (3, 4), None, lambda t: init.normal_(t, 1.0, 0.5)),
 ("normal_default", (5,), None, lambda t: init.normal_(t)),
 ("xavier_uniform_", (3, 5), None, lambda t: init.xavier_uniform_(t, gain=2.0)),
 ("xavier_normal_", (3, 5), None, lambda t: init.xavier_normal_(t)),
 ("xavier_normal_conv", (2, 3, 2, 2), None, lambda t: init.xavier_normal_(t, init.calculate_gain('relu'))),
 ("kaiming_uniform_", (3, 5), None, lambda t: init.kaiming_uniform_(t, a=math.sqrt(5))),
 ("kaiming_normal_", (3, 5), None, lambda t: init.kaiming_normal_(t, mode='fan_out', nonlinearity='relu')),
 ("kaiming_normal_a", (4, 2), None, lambda t: init.kaiming_normal_(t, 0.2, 'FAN_OUT')),
 ("kaiming_uniform_conv", (2, 3, 2, 2), None, lambda t: init.kaiming_uniform_(t)),
 ("kaiming_uniform_tanh", (3, 4), None, lambda t: init.kaiming_uniform_(t, nonlinearity='tanh')),
 ("trunc_normal_", (3, 4), None, lambda t: init.trunc_normal_(t, mean=0.5, std=1.0, a=-1.0, b=1.5)),
 ("trunc_normal_default", (40,), None, lambda t: init.trunc_normal_(t)),
 ("trunc_normal_f64", (3, 4), torch.float64, lambda t: init.trunc_normal_(t, 1.0, 2.0, -3.0, 0.5)),
 ("orthogonal_", (3, 5), None, lambda t: init.orthogonal_(t)),
 ("orthogonal_tall", (5, 3), None, lambda t: init.orthogonal_(t, gain=2.0)),
 ("orthogonal_f64", (4, 6), torch.float64, lambda t: init.orthogonal_(t, 0.5)),
 ("orthogonal_4d", (3, 2, 2, 2), None, lambda t: init.orthogonal_(t)),
 ("orthogonal_square", (4, 4), None, lambda t: init.orthogonal_(t)),
 ("sparse_", (4, 3), None, lambda t: init.sparse_(t, 0.5, std=1.0)),
 ("sparse_default", (6, 4), None, lambda t: init.sparse_(t, 0.2)),
 ("sparse_none", (3, 2), None, lambda t: init.sparse_(t, 0.0)),
 ("xavier_uniform_f64", (2, 3), torch.float64, lambda t: init.xavier_uniform_(t)),
 ("kaiming_uniform_f64", (3, 2), torch.float64, lambda t: init.kaiming_uniform_(t, math.sqrt(5))),
 ("normal_f64", (4,), torch.float64, lambda t: init.normal_(t, -1.0, 3.0)),
]
for name, shape, dtype, f in cases:
    torch.manual_seed(7)
    t = torch.empty(*shape, dtype=dtype or torch.float32)
    f(t)
    print('  %s = %s,' % (name, L(t)))
torch.manual_seed(1)
lin = torch.nn.Linear(3, 3)
print('  linear_weight = %s,' % L(lin.weight))
print('  linear_bias = %s,' % L(lin.bias))
torch.manual_seed(1)
lin = torch.nn.Linear(5, 2, dtype=torch.float64)
print('  linear64_weight = %s,' % L(lin.weight))
print('  linear64_bias = %s,' % L(lin.bias))
t = torch.empty(3, 3, 3); init.dirac_(t); print('  dirac_ = %s,' % L(t))
t = torch.empty(4, 2, 3, 3); init.dirac_(t, 2); print('  dirac_groups = %s,' % L(t))
t = torch.empty(2, 2, 2, 2, 2); init.dirac_(t); print('  dirac_5d = %s,' % L(t))
t = torch.empty(2, 4); init.eye_(t); print('  eye_wide = %s,' % L(t))
gains = [('linear', None), ('sigmoid', None), ('tanh', None), ('relu', None), ('leaky_relu', None), ('leaky_relu', 0.2),
         ('leaky_relu', 3), ('selu', None), ('conv2d', None), ('conv_transpose3d', None)]
print('  gains = {%s},' % ', '.join(repr(init.calculate_gain(n, p)) for n, p in gains))
fans = [init._calculate_fan_in_and_fan_out(torch.empty(*s)) for s in [(4, 3), (4, 3, 5, 5), (2, 6, 3), (0, 3)]]
print('  fans = %s,' % L([list(f) for f in fans]))
]==]
local H = require 'spec.support.helper'
local torch = H.torch
local init = require 'moontorch.nn.initialization'

local E = {
  uniform_ = {{0.8373063802719116, -0.0029920339584350586, 1.1480292081832886, 1.142225742340088}, {0.08190390467643738, 0.5626535415649414, 0.01771506667137146, 1.0743409395217896}, {0.4132903814315796, 1.6281708478927612, 1.6373579502105713, 0.8773380517959595}},
  uniform_default = {0.5349225401878357, 0.19880318641662598, 0.6592116951942444, 0.6568902730941772, 0.23276156187057495},
  normal_ = {{0.9266024231910706, 1.3930706977844238, 1.4734108448028564, 0.4428279995918274}, {1.8453950881958008, 0.5525860786437988, 0.8221874833106995, 1.6161928176879883}, {1.0690863132476807, 0.15890075266361237, 1.1588391065597534, 1.0664035081863403}},
  normal_default = {-0.1467950940132141, 0.7861412763595581, 0.9468216300010681, -1.1143440008163452, 1.6907901763916016},
  xavier_uniform_ = {{0.12097522616386414, -1.0433763265609741, 0.5515254735946655, 0.5434838533401489, -0.9257410764694214}, {-0.2595949172973633, -1.014683723449707, 0.44941994547843933, -0.4665585160255432, 1.2168292999267578}, {1.2295591831207275, 0.17644473910331726, -0.7384113073348999, -1.0173394680023193, -0.19021321833133698}},
  xavier_normal_ = {{-0.07339754700660706, 0.39307063817977905, 0.47341081500053406, -0.5571720004081726, 0.8453950881958008}, {-0.44741395115852356, -0.17781251668930054, 0.6161928772926331, 0.06908632814884186, -0.8410992622375488}, {0.158839151263237, 0.06640348583459854, 0.06866204738616943, 0.12027306109666824, 0.6977254152297974}},
  xavier_normal_conv = {{{{-0.3667753040790558, 0.17693163454532623}, {0.40200409293174744, -0.6209130883216858}}, {{-0.07468289136886597, 0.12752294540405273}, {-0.2867048382759094, -0.3996548354625702}}, {{-0.3796434700489044, -0.5442273616790771}, {-0.03623395413160324, 0.6088746786117554}}}, {{{-0.5828162431716919, 0.03912151977419853}, {-0.6193735599517822, 0.2252006083726883}}, {{-0.38760074973106384, -0.2522314488887787}, {-0.9196779727935791, -0.15953116118907928}}, {{0.4899584650993347, 0.21571533381938934}, {0.6256152987480164, 0.6287165284156799}}}},
  kaiming_uniform_ = {{0.031235668808221817, -0.26939862966537476, 0.1424032747745514, 0.14032691717147827, -0.2390253245830536}, {-0.06702711433172226, -0.2619902193546295, 0.11603973060846329, -0.12046489119529724, 0.31418395042419434}, {0.31747081875801086, 0.04555783420801163, -0.19065698981285095, -0.2626759111881256, -0.04911284148693085}},
  kaiming_normal_ = {{-0.11985769867897034, 0.6418817043304443, 0.773076593875885, -0.9098581075668335, 1.3805243968963623}, {-0.7306239008903503, -0.29036661982536316, 1.0062386989593506, 0.11281751096248627, -1.3735092878341675}, {0.25938326120376587, 0.10843643546104431, 0.11212465167045593, 0.1964050978422165, 1.1393808126449585}},
  kaiming_normal_a = {{-0.10178408771753311, 0.545090913772583}, {0.6565026640892029, -0.7726585865020752}, {1.1723520755767822, -0.6204515099525452}, {-0.24658158421516418, 0.8545057773590088}},
  kaiming_uniform_conv = {{{{0.04938792809844017, -0.4259566068649292}, {0.22515933215618134, 0.2218763530254364}}, {{-0.37793222069740295, -0.10597917437553406}, {-0.4142428934574127, 0.18347492814064026}}, {{-0.19047172367572784, 0.49676844477653503}, {0.5019654035568237, 0.07203326374292374}}}, {{{-0.30145516991615295, -0.4153271019458771}, {-0.07765422016382217, -0.19899971783161163}}, {{0.31166496872901917, -0.6037957668304443}, {0.664566695690155, -0.5546736121177673}}, {{0.5414706468582153, -0.1227923110127449}, {0.3637278974056244, 0.2755559980869293}}}},
  kaiming_uniform_tanh = {{0.10081269592046738, -0.869480311870575, 0.4596045911312103, 0.45290321111679077}, {-0.771450936794281, -0.21632909774780273, -0.8455698490142822, 0.37451663613319397}, {-0.3887987732887268, 1.0140243768692017, 1.0246326923370361, 0.14703728258609772}},
  trunc_normal_ = {{0.45266926288604736, -0.26953554153442383, 0.6952245831489563, 0.6906329393386841}, {-0.18367630243301392, 0.23637187480926514, -0.24808937311172485, 0.6371949911117554}, {0.11402693390846252, 1.1011996269226074, 1.1097697019577026, 0.48377445340156555}},
  trunc_normal_default = {0.08365228772163391, -0.7977502346038818, 0.3906378448009491, 0.38465026021003723, -0.6905601620674133, -0.18026788532733917, -0.7707968354225159, 0.3155641257762909, -0.3280304968357086, 0.975264847278595, 0.9895099401473999, 0.12216958403587341, -0.5343841314315796, -0.7732678055763245, -0.13175614178180695, -0.3432944715023041, 0.5544164180755615, -1.3256478309631348, 1.6308419704437256, -1.1472828388214111, 1.1051676273345947, -0.2092580944299698, 0.6603707671165466, 0.48449280858039856, 0.05009768158197403, 0.22494545578956604, 1.091290831565857, 0.3126803934574127, 0.6846058368682861, -1.1225272417068481, 0.9934202432632446, 0.4241030812263489, 0.3078136444091797, 0.16602110862731934, 0.6208257079124451, 1.540839672088623, -0.269417405128479, -0.7253432869911194, -0.30567535758018494, -0.8094645738601685},
  trunc_normal_f64 = {{-1.2669464493649545, -1.2875824025921347, 0.22444233344061326, -0.21755903031156532}, {0.34670716970291726, 0.17810007294873598, -1.2124784252030985, -0.44490817480884837}, {0.017332960058205504, 0.009432424711713017, -2.3573772882952406, -2.400594346330355}},
  orthogonal_ = {{-0.06183063983917236, 0.33112582564353943, 0.39880502223968506, -0.4693661034107208, 0.7121675610542297}, {-0.4412720203399658, -0.03708244860172272, 0.7296752333641052, -0.11805479228496552, -0.5074847936630249}, {0.04120931401848793, -0.27399927377700806, 0.4156366288661957, 0.7666064500808716, 0.4034687578678131}},
  orthogonal_tall = {{-0.14260625839233398, 0.7753440141677856, 0.9653555154800415}, {-1.0825469493865967, 1.0401177406311035, -0.8377307057380676}, {-0.34547749161720276, 1.116856336593628, 0.10962526500225067}, {-1.6341980695724487, -0.9617215394973755, 0.5640112161636353}, {0.1334056407213211, 0.3804224729537964, 1.4269438982009888}},
  orthogonal_f64 = {{0.010495593897130062, 0.007442622480505305, 0.29087489492999, 0.21661771468687954, 0.17760317055201102, 0.2945507169784745}, {0.10952093412312497, 0.1338060545140666, -0.20467944931571838, -0.03528535857023864, -0.22417517619718855, 0.35596047763694244}, {0.02832160571754423, 0.40060210717933215, 0.17727062638758714, 0.08705251863009604, -0.1634328385518158, -0.1516658487473832}, {0.4189511304505475, -0.16861167732701668, 0.05341662268362296, 0.1412025142469603, -0.11880233477132449, -0.09562725661375449}},
  orthogonal_4d = {{{{-0.3711181879043579, 0.17902664840221405}, {0.4067641496658325, -0.6282651424407959}}, {{-0.07556719332933426, 0.1290329098701477}, {-0.2900996506214142, -0.40438705682754517}}}, {{{-0.37041085958480835, -0.4072161018848419}, {0.041622377932071686, 0.38108712434768677}}, {{-0.48261940479278564, 0.053974758833646774}, {-0.5494123697280884, 0.11100610345602036}}}, {{{-0.5822255611419678, -0.22136273980140686}, {-0.5081700086593628, -0.3231676518917084}}, {{0.21285417675971985, 0.2449752539396286}, {0.19661976397037506, 0.324590265750885}}}},
  orthogonal_square = {{-0.571273684501648, 0.27055397629737854, 0.08971850574016571, -0.7696737051010132}, {-0.11632290482521057, 0.21999424695968628, -0.9672012329101562, 0.05092635750770569}, {0.6453936696052551, -0.37702953815460205, -0.19678542017936707, -0.6345007419586182}, {0.4935406744480133, 0.8580513000488281, 0.13322149217128754, -0.049170419573783875}},
  sparse_ = {{0.0, 0.7861412763595581, 0.9468216300010681}, {-1.1143440008163452, 0.0, -0.8948279023170471}, {-0.3556250333786011, 1.2323857545852661, 0.0}, {0.0, 0.0, 0.0}},
  sparse_default = {{-0.00820134487003088, 0.003956311382353306, 0.008989084511995316, -0.013884038664400578}, {0.0, 0.0, -0.0064109149388968945, 0.0}, {0.0, -0.01216929405927658, -0.0008102158317342401, 0.013614851050078869}, {-0.013032166287302971, 0.0008747837273404002, 0.0, 0.0}, {-0.008667015470564365, -0.00564006669446826, -0.020564625039696693, -0.0035672252997756004}, {0.010955804027616978, 0.0, 0.0, 0.01405852846801281}},
  sparse_none = {{-0.0014679509913548827, 0.007861413061618805}, {0.009468216449022293, -0.011143440380692482}, {0.01690790057182312, -0.008948278613388538}},
  xavier_uniform_f64 = {{-0.48335326066941864, -0.49581223175260547, 0.793305931529125}, {0.34328715173296137, 0.9257154630495609, 0.7439066464065082}},
  kaiming_uniform_f64 = {{-0.3120031881512851, -0.32004541940396214}, {0.5120767768766437, 0.22159090360478964}, {0.5975467619529393, 0.48018967544423585}},
  normal_f64 = {-1.4403852924549856, 1.3584238961706072, 1.840464827011869, -4.343032063783092},
  linear_weight = {{0.2974873483181, -0.2548298239707947, -0.11192598193883896}, {0.2709902822971344, -0.5435388088226318, 0.3462469279766083}, {-0.11877556145191193, 0.2937234044075012, 0.08026149123907089}},
  linear_bias = {-0.07069316506385803, 0.16013438999652863, 0.02848171815276146},
  linear64_weight = {{-0.39260588649113876, -0.2463659389642822, -0.2376917774676066, -0.28881123096560674, 0.050148793966170765}, {-0.3493240369029246, -0.03496057450424736, 0.18636757467836176, 0.0713540528680099, -0.002980846930309351}},
  linear64_bias = {0.009279836188375667, -0.15246616822798548},
  dirac_ = {{{0.0, 1.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}, {{0.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 0.0}}, {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 1.0, 0.0}}},
  dirac_groups = {{{{0.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 0.0}}, {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}}, {{{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}, {{0.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 0.0}}}, {{{0.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 0.0}}, {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}}, {{{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}, {{0.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 0.0}}}},
  dirac_5d = {{{{{0.0, 0.0}, {0.0, 0.0}}, {{0.0, 0.0}, {0.0, 1.0}}}, {{{0.0, 0.0}, {0.0, 0.0}}, {{0.0, 0.0}, {0.0, 0.0}}}}, {{{{0.0, 0.0}, {0.0, 0.0}}, {{0.0, 0.0}, {0.0, 0.0}}}, {{{0.0, 0.0}, {0.0, 0.0}}, {{0.0, 0.0}, {0.0, 1.0}}}}},
  eye_wide = {{1.0, 0.0, 0.0, 0.0}, {0.0, 1.0, 0.0, 0.0}},
  gains = {1, 1, 1.6666666666666667, 1.4142135623730951, 1.4141428569978354, 1.3867504905630728, 0.4472135954999579, 0.75, 1, 1},
  fans = {{3, 4}, {75, 100}, {18, 6}, {3, 0}},
}

local function drawn(shape, fn, dtype)
  torch.manual_seed(7)
  local t = torch.empty(shape, dtype and { dtype = dtype } or nil)
  local r = fn(t)
  assert(rawequal(r, t), 'returns its tensor')
  return t
end

describe('nn.init draws what PyTorch draws after manual_seed', function()
  local f64 = torch.float64
  -- { name in E, shape, call, dtype }; the Python call is the one of the same name in the script above
  local cases = {
    { 'uniform_', { 3, 4 }, function(t) return init.uniform_(t, -0.5, 2.0) end },
    { 'uniform_default', { 5 }, function(t) return init.uniform_(t) end },
    { 'normal_', { 3, 4 }, function(t) return init.normal_(t, { mean = 1.0, std = 0.5 }) end },
    { 'normal_default', { 5 }, function(t) return init.normal_(t) end },
    { 'xavier_uniform_', { 3, 5 }, function(t) return init.xavier_uniform_(t, { gain = 2.0 }) end },
    { 'xavier_normal_', { 3, 5 }, function(t) return init.xavier_normal_(t) end },
    { 'xavier_normal_conv', { 2, 3, 2, 2 }, function(t) return init.xavier_normal_(t, init.calculate_gain('relu')) end },
    { 'kaiming_uniform_', { 3, 5 }, function(t) return init.kaiming_uniform_(t, { a = math.sqrt(5) }) end },
    { 'kaiming_normal_', { 3, 5 }, function(t) return init.kaiming_normal_(t, { mode = 'fan_out', nonlinearity = 'relu' }) end },
    { 'kaiming_normal_a', { 4, 2 }, function(t) return init.kaiming_normal_(t, 0.2, 'FAN_OUT') end },
    { 'kaiming_uniform_conv', { 2, 3, 2, 2 }, function(t) return init.kaiming_uniform_(t) end },
    { 'kaiming_uniform_tanh', { 3, 4 }, function(t) return init.kaiming_uniform_(t, { nonlinearity = 'tanh' }) end },
    { 'trunc_normal_', { 3, 4 }, function(t) return init.trunc_normal_(t, { mean = 0.5, std = 1.0, a = -1.0, b = 1.5 }) end },
    { 'trunc_normal_default', { 40 }, function(t) return init.trunc_normal_(t) end },
    { 'trunc_normal_f64', { 3, 4 }, function(t) return init.trunc_normal_(t, 1.0, 2.0, -3.0, 0.5) end, f64 },
    { 'orthogonal_', { 3, 5 }, function(t) return init.orthogonal_(t) end },
    { 'orthogonal_tall', { 5, 3 }, function(t) return init.orthogonal_(t, { gain = 2.0 }) end },
    { 'orthogonal_f64', { 4, 6 }, function(t) return init.orthogonal_(t, 0.5) end, f64 },
    { 'orthogonal_4d', { 3, 2, 2, 2 }, function(t) return init.orthogonal_(t) end },
    { 'orthogonal_square', { 4, 4 }, function(t) return init.orthogonal_(t) end },
    { 'sparse_', { 4, 3 }, function(t) return init.sparse_(t, 0.5, { std = 1.0 }) end },
    { 'sparse_default', { 6, 4 }, function(t) return init.sparse_(t, 0.2) end },
    { 'sparse_none', { 3, 2 }, function(t) return init.sparse_(t, { sparsity = 0.0 }) end },
    { 'xavier_uniform_f64', { 2, 3 }, function(t) return init.xavier_uniform_(t) end, f64 },
    { 'kaiming_uniform_f64', { 3, 2 }, function(t) return init.kaiming_uniform_(t, math.sqrt(5)) end, f64 },
    { 'normal_f64', { 4 }, function(t) return init.normal_(t, -1.0, 3.0) end, f64 },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local t = drawn(c[2], c[3], c[4])
      if c[4] == f64 then
        assert.are.equal(f64, t.dtype)
        H.near(t, E[c[1]], 1e-12, 1e-12)
      else
        H.near(t, E[c[1]], 1e-6, 1e-5)
      end
    end)
  end

  it("reproduces nn.Linear's default initialisation (kaiming_uniform_ a=sqrt(5), then the bias)", function()
    -- the calls PyTorch's Linear.reset_parameters makes, in its order
    local function reset(w, b)
      init.kaiming_uniform_(w, { a = math.sqrt(5) })
      local fan_in = init._calculate_fan_in_and_fan_out(w)
      local bound = fan_in > 0 and 1 / math.sqrt(fan_in) or 0
      init.uniform_(b, -bound, bound)
    end
    torch.manual_seed(1)
    local w, b = torch.empty(3, 3), torch.empty(3)
    reset(w, b)
    H.near(w, E.linear_weight, 1e-7, 1e-6)
    H.near(b, E.linear_bias, 1e-7, 1e-6)
    torch.manual_seed(1)
    w, b = torch.empty(2, 5, { dtype = torch.float64 }), torch.empty(2, { dtype = torch.float64 })
    reset(w, b)
    H.near(w, E.linear64_weight, 1e-14, 1e-12)
    H.near(b, E.linear64_bias, 1e-14, 1e-12)
    -- and moontorch.nn's Linear makes those calls
    local nn = require 'moontorch.nn'
    torch.manual_seed(1)
    local l = nn.Linear(3, 3)
    H.near(l.weight, E.linear_weight, 1e-7, 1e-6)
    H.near(l.bias, E.linear_bias, 1e-7, 1e-6)
  end)

  it('orthogonal_ gives orthonormal rows or columns, scaled by gain', function()
    local w = init.orthogonal_(torch.empty(4, 6))
    H.near(w:matmul(w:t()), torch.eye(4), 1e-5)
    w = init.orthogonal_(torch.empty(7, 3, { dtype = torch.float64 }), 3.0)
    H.near(w:t():matmul(w), torch.eye(3, { dtype = torch.float64 }) * 9, 1e-12)
    w = init.orthogonal_(torch.empty(40, 30))
    H.near(w:t():matmul(w), torch.eye(30), 1e-5)
    assert.are.equal(0, init.orthogonal_(torch.empty(0, 3)):numel())
  end)

  it('trunc_normal_ stays in [a, b]; erfinv is accurate to double precision', function()
    torch.manual_seed(0)
    local t = init.trunc_normal_(torch.empty(20000), 0.0, 1.0, -0.5, 1.0)
    assert.is_true(t:min():item() >= -0.5 and t:max():item() <= 1.0)
    -- erfinv of these doubles, from mpmath (mp.dps = 40): mpmath.erfinv(mpmath.mpf(y)); also in the tails
    local erfinv = init._erfinv
    local ys = { 0, 0.5, -0.9, 0.3, 0.75, 0.999, 0.999999, 0.9999999999, -0.99999999, 1 - 1e-16, 1e-10 }
    local want = { 0, 0.47693627620446987338, -1.1630871536766741628, 0.27246271472675434502, 0.81341984759761854169,
      2.3267537655135244939, 3.4589107372754987775, 4.5728249585449249378, -4.0522372432687633554,
      5.8635847487551679272, 8.86226925452758013651e-11 }
    local got = {}
    for i, y in ipairs(ys) do got[i] = erfinv(y) end
    H.near(got, want, 1e-300, 4e-16)
    assert.are.equal(math.huge, erfinv(1))
    assert.are.equal(-math.huge, erfinv(-1))
    assert.is_true(erfinv(1.5) ~= erfinv(1.5))
  end)
end)

describe('nn.init fills', function()
  it('constant_, ones_, zeros_, eye_, dirac_', function()
    H.near(init.constant_(torch.empty(2, 2), 3.5), { { 3.5, 3.5 }, { 3.5, 3.5 } })
    H.near(init.constant_(torch.empty(2), { val = -1 }), { -1, -1 })
    H.near(init.constant_(torch.empty(2, { dtype = torch.int64 }), 7), { 7, 7 })
    H.near(init.ones_(torch.empty(3)), { 1, 1, 1 })
    H.near(init.zeros_(torch.empty(3)), { 0, 0, 0 })
    H.near(init.eye_(torch.empty(2, 4)), E.eye_wide)
    H.near(init.eye_(torch.empty(3, 2)), { { 1, 0 }, { 0, 1 }, { 0, 0 } })
    H.near(init.dirac_(torch.empty(3, 3, 3)), E.dirac_)
    H.near(init.dirac_(torch.empty(4, 2, 3, 3), 2), E.dirac_groups)
    H.near(init.dirac_(torch.empty(4, 2, 3, 3), { groups = 2 }), E.dirac_groups)
    H.near(init.dirac_(torch.empty(2, 2, 2, 2, 2)), E.dirac_5d)
  end)

  it('optional arguments positionally or by name give the same draws', function()
    local function same(a, b)
      local function ret(f) return function(t) f(t) return t end end
      H.near(drawn({ 4, 3 }, ret(a)), drawn({ 4, 3 }, ret(b)), 0, 0)
    end
    same(function(t) init.kaiming_uniform_(t, math.sqrt(5)) end, function(t) init.kaiming_uniform_(t, { a = math.sqrt(5) }) end)
    same(function(t) init.kaiming_normal_(t, 0, 'fan_out', 'relu') end,
      function(t) init.kaiming_normal_(t, { mode = 'fan_out', nonlinearity = 'relu' }) end)
    same(function(t) init.kaiming_normal_(t, 0.1, 'fan_out') end, function(t) init.kaiming_normal_(t, 0.1, { mode = 'fan_out' }) end)
    same(function(t) init.trunc_normal_(t, 0, 2, -1, 1) end, function(t) init.trunc_normal_(t, { std = 2, a = -1, b = 1 }) end)
    same(function(t) init.uniform_(t, -1, 1) end, function(t) init.uniform_(t, { b = 1, a = -1 }) end)
    same(function(t) init.sparse_(t, 0.5, 0.1) end, function(t) init.sparse_(t, { sparsity = 0.5, std = 0.1 }) end)
    same(function(t) init.orthogonal_(t, 2) end, function(t) init.orthogonal_(t, { gain = 2 }) end)
  end)

  it('records no autograd, keeps the tensor a leaf and restores grad mode', function()
    local fns = {
      function(w) return init.uniform_(w) end, function(w) return init.normal_(w) end,
      function(w) return init.constant_(w, 2) end, function(w) return init.ones_(w) end, function(w) return init.zeros_(w) end,
      function(w) return init.eye_(w) end, function(w) return init.xavier_uniform_(w) end,
      function(w) return init.xavier_normal_(w) end, function(w) return init.kaiming_uniform_(w) end,
      function(w) return init.kaiming_normal_(w) end, function(w) return init.trunc_normal_(w) end,
      function(w) return init.orthogonal_(w) end, function(w) return init.sparse_(w, 0.5) end,
    }
    for i, f in ipairs(fns) do
      local w = torch.empty(3, 4, { requires_grad = true })
      assert.is_true(rawequal(f(w), w), 'case ' .. i)
      assert.is_nil(w.grad_fn, 'case ' .. i)
      assert.is_true(w.is_leaf and w.requires_grad, 'case ' .. i)
      assert.is_true(torch.is_grad_enabled(), 'case ' .. i)
    end
    local w = torch.empty(3, 3, 3, { requires_grad = true })
    init.dirac_(w)
    assert.is_nil(w.grad_fn)
    -- inside no_grad it stays off
    torch.no_grad(function()
      init.kaiming_uniform_(torch.empty(2, 2, { requires_grad = true }))
      assert.is_false(torch.is_grad_enabled())
    end)
    assert.is_true(torch.is_grad_enabled())
  end)

  it('kaiming on a tensor with no elements draws nothing', function()
    torch.manual_seed(3)
    local want = torch.rand(3)
    torch.manual_seed(3)
    local t = torch.empty(0, 3)
    assert.is_true(rawequal(init.kaiming_uniform_(t), t))
    init.kaiming_normal_(torch.empty(2, 0))
    H.near(torch.rand(3), want, 0, 0)
  end)

  it('gains and fans', function()
    local got = {}
    for i, a in ipairs { { 'linear' }, { 'sigmoid' }, { 'tanh' }, { 'relu' }, { 'leaky_relu' }, { 'leaky_relu', 0.2 },
      { 'leaky_relu', 3 }, { 'selu' }, { 'conv2d' }, { 'conv_transpose3d' } } do
      got[i] = init.calculate_gain(a[1], a[2])
    end
    H.near(got, E.gains, 1e-15, 1e-15)
    for i, s in ipairs { { 4, 3 }, { 4, 3, 5, 5 }, { 2, 6, 3 }, { 0, 3 } } do
      local fi, fo = init.calculate_fan_in_and_fan_out(torch.empty(s))
      assert.are.same(E.fans[i], { fi, fo })
      local fi2, fo2 = init._calculate_fan_in_and_fan_out(torch.empty(s))
      assert.are.same(E.fans[i], { fi2, fo2 })
    end
  end)

  it('the deprecated names without the underscore still work', function()
    H.near(drawn({ 2, 2 }, function(t) init.uniform(t, -1, 1) return t end),
      drawn({ 2, 2 }, function(t) return init.uniform_(t, -1, 1) end), 0, 0)
    assert.is_function(init.kaiming_normal)
    assert.is_function(init.xavier_uniform)
  end)

  it("errors name the function and say what PyTorch says", function()
    local cases = {
      { function() init.calculate_gain('cube') end, 'moontorch.nn.init.calculate_gain: Unsupported nonlinearity cube' },
      { function() init.calculate_gain('leaky_relu', 'x') end, 'negative_slope x not a valid number' },
      { function() init.calculate_gain('leaky_relu', true) end, 'negative_slope True not a valid number' },
      { function() init.xavier_uniform_(torch.empty(3)) end,
        'nn.init.xavier_uniform_: Fan in and fan out can not be computed for tensor with fewer than 2 dimensions' },
      { function() init.calculate_fan_in_and_fan_out(torch.empty(3)) end,
        'Fan in and fan out can not be computed for tensor with fewer than 2 dimensions' },
      { function() init.kaiming_uniform_(torch.empty(3, 3), { mode = 'fan_avg' }) end,
        "nn.init.kaiming_uniform_: Mode fan_avg not supported, please use one of ['fan_in', 'fan_out']" },
      { function() init.kaiming_normal_(torch.empty(3, 3), 0, 'FAN') end, "Mode fan not supported" },
      { function() init.kaiming_normal_(torch.empty(3, 3), 0, 'fan_in', 'swish') end, 'Unsupported nonlinearity swish' },
      { function() init.eye_(torch.empty(3)) end, 'nn.init.eye_: Only tensors with 2 dimensions are supported' },
      { function() init.dirac_(torch.empty(3, 3)) end, 'Only tensors with 3, 4, or 5 dimensions are supported' },
      { function() init.dirac_(torch.empty(3, 3, 3), 2) end, 'dim 0 must be divisible by groups' },
      { function() init.orthogonal_(torch.empty(3)) end, 'Only tensors with 2 or more dimensions are supported' },
      { function() init.sparse_(torch.empty(3), 0.1) end, 'nn.init.sparse_: Only tensors with 2 dimensions are supported' },
      { function() init.uniform_(3) end, 'moontorch.nn.init.uniform_: expected a tensor' },
      { function() init.uniform_(torch.empty(2), 'a') end, 'nn.init.uniform_: a must be a number' },
      { function() init.normal_(torch.empty(2), { sd = 1 }) end, "nn.init.normal_: got an unexpected option 'sd'" },
      { function() init.normal_(torch.empty(2), 0, 1, { std = 2 }) end, "got multiple values for argument 'std'" },
      { function() init.xavier_normal_(torch.empty(2, 2), 1, 2) end, 'takes at most 1 optional arguments, got 2' },
    }
    for _, c in ipairs(cases) do
      local err = H.errors_with(c[1], c[2])
      assert.is_truthy(tostring(err):find('nn_init_spec.lua:', 1, true), 'raised at the caller: ' .. tostring(err))
    end
    local ok = pcall(init.orthogonal_, torch.empty(4, 3, 2):transpose(1, 3))
    assert.is_true(torch.is_grad_enabled(), 'a failing init leaves grad mode as it was (' .. tostring(ok) .. ')')
  end)
end)
