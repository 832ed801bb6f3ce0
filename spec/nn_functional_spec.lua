-- nn.functional against PyTorch 1.13. The expected values E were printed by the Python script in
-- the comment below (run with /usr/bin/python3, torch 1.13, CPU); each test repeats its calls in
-- Lua. Dims and class indices there are 0-based, here 1-based (API.md): F.softmax(x, 1) there is
-- F.softmax(x, 2) here, class targets [2, 0, 1] there are {3, 1, 2} here.
--[==[
# values for spec/nn_functional_spec.lua: /usr/bin/python3 gen_func.py (torch 1.13, CPU)
import torch, math, warnings
import torch.nn.functional as F
warnings.simplefilter('ignore')
torch.set_printoptions(precision=10)
E = {}
def L(v):
    if torch.is_tensor(v):
        v = v.detach()
        if v.dim() == 0: return L(v.item())
        v = v.tolist()
    if isinstance(v, (list, tuple)): return '{' + ', '.join(L(x) for x in v) + '}'
    if isinstance(v, bool): return 'true' if v else 'false'
    if isinstance(v, float):
        if math.isnan(v): return '0/0'
        if math.isinf(v): return 'math.huge' if v > 0 else '-math.huge'
    if isinstance(v, str): return repr(v)
    return repr(v)
def rec(k, v): E[k] = L(v)
X = lambda: torch.tensor([[-1.5, 0.0, 2.0], [0.5, -0.25, 3.0]])
X3 = lambda: torch.tensor([(i - 11.5) / 6 for i in range(24)]).reshape(2, 3, 4)
# activations
x = X()
rec('relu', F.relu(x)); rec('relu6', F.relu6(X() * 3)); rec('leaky', F.leaky_relu(x, 0.2))
rec('elu', F.elu(x, 0.5)); rec('selu', F.selu(x)); rec('celu', F.celu(x, 2.0))
rec('gelu', F.gelu(x)); rec('gelu_tanh', F.gelu(x, approximate='tanh'))
rec('sigmoid', F.sigmoid(x)); rec('tanh', F.tanh(x)); rec('silu', F.silu(x)); rec('mish', F.mish(x))
rec('hardsigmoid', F.hardsigmoid(X() * 2)); rec('hardswish', F.hardswish(X() * 2)); rec('logsigmoid', F.logsigmoid(X() * 10))
rec('softplus', F.softplus(x, beta=2.0, threshold=3.0)); rec('softplus1', F.softplus(X() * 10))
rec('softsign', F.softsign(x)); rec('tanhshrink', F.tanhshrink(x))
rec('hardshrink', F.hardshrink(x, 0.6)); rec('softshrink', F.softshrink(x, 0.6))
rec('hardtanh', F.hardtanh(x, -0.5, 1.0)); rec('threshold', F.threshold(x, 0.1, 20.0))
rec('prelu', F.prelu(X3(), torch.tensor([0.1, -0.5, 2.0])))
rec('glu', F.glu(X3())); rec('glu2', F.glu(X3(), 0))
rec('softmax2', F.softmax(x, 1)); rec('log_softmax1', F.log_softmax(x, 0)); rec('softmin', F.softmin(x, 1))
rec('softmax64', F.softmax(x, 1, dtype=torch.float64))
rec('softmax3', F.softmax(X3(), -1))
# gradients of a few activations: d/dx sum(f(x) * g), g = arange-like weights
G = torch.tensor([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])
for name, f in [('gelu', F.gelu), ('mish', F.mish), ('selu', F.selu), ('logsigmoid', F.logsigmoid),
                ('hardswish', F.hardswish), ('softmax', lambda t: F.softmax(t, 1)), ('softplus', lambda t: F.softplus(t, 2.0, 3.0))]:
    xi = X().requires_grad_(); (f(xi) * G).sum().backward(); rec('grad_' + name, xi.grad)
xi = X3().requires_grad_(); w = torch.tensor([0.1, -0.5, 2.0], requires_grad=True)
(F.prelu(xi, w) ** 2).sum().backward(); rec('prelu_gx', xi.grad); rec('prelu_gw', w.grad)
xi = X3().requires_grad_(); (F.glu(xi) ** 2).sum().backward(); rec('glu_gx', xi.grad)
# linear
w = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], requires_grad=True)
b = torch.tensor([0.1, -0.2], requires_grad=True)
names = []
for shp in [(3,), (2, 3), (4, 2, 3), (2, 2, 2, 3)]:
    xx = torch.randn(*shp)
    names.append(type(F.linear(xx, w, b).grad_fn).__name__); names.append(type(F.linear(xx, w).grad_fn).__name__)
names.append(type(F.linear(torch.randn(3, 3, 2).transpose(1, 2), w, b).grad_fn).__name__)
rec('linear_fns', names)
xi = X().requires_grad_(); y = F.linear(xi, w, b); rec('linear', y)
y.pow(2).sum().backward(); rec('linear_gx', xi.grad); rec('linear_gw', w.grad); rec('linear_gb', b.grad)
w.grad = None; b.grad = None
x3 = X3()[:, :, :3].contiguous().requires_grad_(); y = F.linear(x3, w, b); rec('linear3', y)
y.pow(2).sum().backward(); rec('linear3_gx', x3.grad); rec('linear3_gw', w.grad); rec('linear3_gb', b.grad)
rec('linear1d', F.linear(torch.tensor([1.0, 2.0, 3.0]), w, b)); rec('linear1d_nobias', F.linear(torch.tensor([1.0, 2.0, 3.0]), w))
bw = torch.tensor([(i - 12) / 10 for i in range(24)]).reshape(2, 3, 4).requires_grad_()
bb = torch.tensor([0.5, -0.5], requires_grad=True)
x1 = X().requires_grad_(); x2 = torch.tensor([[1.0, 2.0, -1.0, 0.5], [0.0, -1.0, 1.0, 2.0]], requires_grad=True)
y = F.bilinear(x1, x2, bw, bb); rec('bilinear', y)
(y * torch.tensor([[1.0, -1.0], [2.0, 0.5]])).sum().backward()
rec('bilinear_g1', x1.grad); rec('bilinear_g2', x2.grad); rec('bilinear_gw', bw.grad); rec('bilinear_gb', bb.grad)
# normalisation
lw, lb = torch.tensor([1.0, 2.0, -1.0, 0.5], requires_grad=True), torch.tensor([0.0, 0.1, 0.2, 0.3], requires_grad=True)
xi = X3().requires_grad_(); y = F.layer_norm(xi, [4], lw, lb); rec('layer_norm', y)
(y * X3()).sum().backward(); rec('layer_norm_gx', xi.grad); rec('layer_norm_gw', lw.grad); rec('layer_norm_gb', lb.grad)
rec('layer_norm2', F.layer_norm(X3() * 3, [3, 4], eps=0.1))
gw, gb = torch.tensor([1.0, -1.0, 2.0, 0.5]), torch.tensor([0.1, 0.2, 0.3, 0.4])
xi = X3().reshape(2, 4, 3).requires_grad_(); y = F.group_norm(xi, 2, gw, gb); rec('group_norm', y)
(y * X3().reshape(2, 4, 3)).sum().backward(); rec('group_norm_gx', xi.grad)
rec('normalize', F.normalize(x)); rec('normalize_p1', F.normalize(x, p=1.0, dim=0))
# dropout
torch.manual_seed(3); rec('dropout', F.dropout(torch.ones(2, 4), 0.5))
torch.manual_seed(5); d = F.dropout(torch.ones(50, 40), 0.3); rec('dropout_big', [d.sum(), (d == 0).sum(), d[7, :10]])
torch.manual_seed(5); d = F.dropout(torch.ones(6, dtype=torch.float64) * 2, 0.25); rec('dropout64', d)
torch.manual_seed(5); rec('alpha_dropout', F.alpha_dropout(X(), 0.4, True))
torch.manual_seed(5); rec('dropout2d', F.dropout2d(torch.ones(2, 3, 2, 2), 0.5))
torch.manual_seed(5); rec('dropout1d', F.dropout1d(torch.ones(4, 3), 0.5))
torch.manual_seed(5); rec('dropout3d', F.dropout3d(torch.ones(3, 2, 1, 2), 0.5))
xi = X().requires_grad_(); torch.manual_seed(8); d = F.dropout(xi, 0.5); d.sum().backward(); rec('dropout_grad', xi.grad)
rec('dropout_p1', F.dropout(X(), 1.0))
# embedding
ew = torch.tensor([[0.1, 0.2, 0.3], [1.0, -1.0, 2.0], [0.5, 0.5, 0.5], [-2.0, 3.0, 1.0], [0.0, 4.0, 0.0]], requires_grad=True)
idx = torch.tensor([[1, 3], [4, 0], [3, 3]])
y = F.embedding(idx, ew, padding_idx=3); rec('embedding', y)
(y * torch.arange(18.).reshape(3, 2, 3)).sum().backward(); rec('embedding_gw', ew.grad)
ew2 = ew.detach().clone(); y = F.embedding(torch.tensor([1, 3, 3]), ew2, max_norm=2.0); rec('embedding_maxnorm', y); rec('embedding_maxnorm_w', ew2)
rec('one_hot', F.one_hot(torch.tensor([[0, 2], [1, 4]]))); rec('one_hot6', F.one_hot(torch.tensor([0, 2]), 6))
# distances
a1 = X().requires_grad_(); a2 = torch.tensor([[1.0, 1.0, 1.0], [2.0, -1.0, 0.5]], requires_grad=True)
y = F.cosine_similarity(a1, a2); rec('cos', y); (y * torch.tensor([1.0, -2.0])).sum().backward(); rec('cos_g1', a1.grad); rec('cos_g2', a2.grad)
rec('cos_dim1', F.cosine_similarity(X(), torch.ones(2, 3), 0))
rec('cos_bcast', F.cosine_similarity(X3(), torch.tensor([1.0, 2.0, 3.0, 4.0]), -1))
t1 = torch.tensor([[1e-9, 0.0], [3.0, 4.0]], requires_grad=True); t2 = torch.tensor([[1e-9, 0.0], [1.0, 0.0]])
y = F.cosine_similarity(t1, t2); rec('cos_tiny', y); y.sum().backward(); rec('cos_tiny_g', t1.grad)
rec('pdist', F.pairwise_distance(X(), torch.ones(2, 3))); rec('pdist_p1', F.pairwise_distance(X(), torch.ones(3), p=1.0, keepdim=True))
# losses
inp = lambda: torch.tensor([[0.2, -1.0, 0.5], [1.5, 0.3, -0.7], [0.0, 0.1, 0.2]], requires_grad=True)
tgt = torch.tensor([2, 0, 1])
i = inp(); l = F.cross_entropy(i, tgt); l.backward(); rec('ce', l); rec('ce_grad', i.grad)
wt = torch.tensor([1.0, 2.0, 0.5])
rec('ce_w', F.cross_entropy(inp(), tgt, weight=wt))
rec('ce_ignore', F.cross_entropy(inp(), torch.tensor([2, -100, 1])))
rec('ce_ignore1', F.cross_entropy(inp(), tgt, ignore_index=0, reduction='sum'))
rec('ce_none', F.cross_entropy(inp(), tgt, reduction='none'))
rec('ce_ls', F.cross_entropy(inp(), tgt, label_smoothing=0.1))
i = inp(); l = F.cross_entropy(i, torch.tensor([2, -100, 1]), weight=wt, label_smoothing=0.2); l.backward(); rec('ce_ls_w', l); rec('ce_ls_w_grad', i.grad)
rec('ce_ls_none', F.cross_entropy(inp(), tgt, weight=wt, label_smoothing=0.2, reduction='none'))
probs = torch.softmax(torch.tensor([[1., 2., 3.], [0., 0., 1.], [2., 1., 0.]]), 1)
rec('ce_probs', F.cross_entropy(inp(), probs)); rec('ce_probs_ls_w', F.cross_entropy(inp(), probs, weight=wt, label_smoothing=0.3))
rec('ce_probs_none', F.cross_entropy(inp(), probs, reduction='none'))
rec('ce_1d', F.cross_entropy(torch.tensor([0.5, 1.0, -1.0]), torch.tensor(1)))
x4 = X3().requires_grad_(); t4 = torch.tensor([[0, 2, 1, 1], [2, 2, 0, 1]])
l = F.cross_entropy(x4, t4, weight=wt); l.backward(); rec('ce_nd', l); rec('ce_nd_grad', x4.grad)
rec('ce_nd_none', F.cross_entropy(X3(), t4, reduction='none'))
rec('nll_sum', F.nll_loss(torch.log_softmax(inp(), 1), tgt, reduction='sum'))
rec('nll_w', F.nll_loss(torch.log_softmax(inp(), 1), tgt, wt))
rec('nll_allignored', F.nll_loss(torch.log_softmax(inp(), 1), torch.tensor([-100, -100, -100])))
a = torch.tensor([0.5, -1.0, 2.0, 0.1], requires_grad=True); t = torch.tensor([1.0, 1.0, -1.0, 0.3])
rec('mse', F.mse_loss(a, t)); rec('l1', F.l1_loss(a, t, reduction='sum')); rec('l1_none', F.l1_loss(a, t, reduction='none'))
rec('smooth_l1', F.smooth_l1_loss(a, t)); rec('smooth_l1_b', F.smooth_l1_loss(a, t, beta=0.5, reduction='none'))
rec('huber', F.huber_loss(a, t, delta=0.5, reduction='none')); rec('huber_mean', F.huber_loss(a, t))
rec('mse_bcast', F.mse_loss(X(), torch.tensor([1.0, 0.0, -1.0])))
p = torch.tensor([0.2, 0.7, 0.9, 0.0], requires_grad=True); q = torch.tensor([0.0, 1.0, 1.0, 1.0])
l = F.binary_cross_entropy(p, q); l.backward(); rec('bce', l); rec('bce_g', p.grad)
rec('bce_w', F.binary_cross_entropy(p, q, weight=torch.tensor([1.0, 2.0, 3.0, 0.5]), reduction='none'))
l = F.binary_cross_entropy_with_logits(a, q, pos_weight=torch.tensor([2.0, 0.5, 1.0, 3.0])); rec('bcel_pw', l)
rec('bce_logits', F.binary_cross_entropy_with_logits(a, q)); rec('bcel_w_sum', F.binary_cross_entropy_with_logits(a, q, torch.tensor([1.0, 2.0, 3.0, 0.5]), reduction='sum'))
lp = torch.log_softmax(X(), 1); tp = torch.softmax(torch.tensor([[0.0, 1.0, 2.0], [1.0, 1.0, 0.0]]), 1)
rec('kl_batchmean', F.kl_div(lp, tp, reduction='batchmean')); rec('kl_mean', F.kl_div(lp, tp))
rec('kl_log_target', F.kl_div(lp, tp.log(), reduction='none', log_target=True)); rec('kl_zero_t', F.kl_div(lp, torch.tensor([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]]), reduction='sum'))
rate = torch.tensor([0.5, -1.0, 2.0, 0.1]); cnt = torch.tensor([1.0, 0.0, 3.0, 2.0])
rec('poisson', F.poisson_nll_loss(rate, cnt)); rec('poisson_full', F.poisson_nll_loss(rate, cnt, full=True, reduction='none'))
rec('poisson_nolog', F.poisson_nll_loss(rate.abs(), cnt, log_input=False, reduction='sum'))
gv = torch.tensor([[0.5, 1.0, 2.0], [1e-8, 0.25, 1.0]], requires_grad=True)
l = F.gaussian_nll_loss(X(), torch.ones(2, 3), gv); l.backward(); rec('gauss', l); rec('gauss_gv', gv.grad)
rec('gauss_full', F.gaussian_nll_loss(X(), torch.ones(2, 3), torch.tensor([0.5, 2.0]), full=True, reduction='none'))
rec('soft_margin', F.soft_margin_loss(a, torch.tensor([1.0, -1.0, -1.0, 1.0])))
rec('mlsm', F.multilabel_soft_margin_loss(X(), torch.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]])))
rec('mlsm_w', F.multilabel_soft_margin_loss(X(), torch.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]), weight=torch.tensor([1.0, 2.0, 0.5]), reduction='none'))
y3 = torch.tensor([1.0, -1.0, 1.0, -1.0])
rec('margin_ranking', F.margin_ranking_loss(a, t, y3, margin=0.5, reduction='none'))
rec('hinge', F.hinge_embedding_loss(a, y3, margin=1.5, reduction='none'))
rec('cos_emb', F.cosine_embedding_loss(X(), torch.tensor([[1.0, 1.0, 1.0], [2.0, -1.0, 0.5]]), torch.tensor([1.0, -1.0]), margin=-0.5, reduction='none'))
rec('cos_emb_mean', F.cosine_embedding_loss(X(), torch.tensor([[1.0, 1.0, 1.0], [2.0, -1.0, 0.5]]), torch.tensor([-1.0, 1.0])))
an, po, ne = X(), torch.tensor([[1.0, 1.0, 1.0], [2.0, -1.0, 0.5]]), torch.tensor([[-1.0, 0.0, 2.5], [0.0, 0.0, 0.0]])
rec('triplet', F.triplet_margin_loss(an, po, ne, margin=2.0, reduction='none')); rec('triplet_swap', F.triplet_margin_loss(an, po, ne, swap=True, p=1))
# padding
pin = torch.arange(1., 10.).reshape(1, 1, 3, 3)
rec('pad_const', F.pad(torch.tensor([[1., 2.], [3., 4.]]), (1, 0, 0, 1), value=9.0))
rec('pad_neg', F.pad(pin, (-1, 2, 1, -2), value=-1.0))
rec('pad_reflect', F.pad(pin, (2, 1, 1, 2), mode='reflect')); rec('pad_replicate', F.pad(pin, (2, 1, 1, 2), mode='replicate'))
rec('pad_circular', F.pad(pin, (2, 1, 1, 3), mode='circular')); rec('pad_reflect1d', F.pad(torch.arange(1., 6.).reshape(1, 5), (3, 1), mode='reflect'))
pr = pin.clone().requires_grad_(); y = F.pad(pr, (2, 1, 1, 2), mode='reflect'); (y * torch.arange(36.).reshape(1, 1, 6, 6)).sum().backward(); rec('pad_reflect_g', pr.grad)
for k in E: print('  %s = %s,' % (k, E[k]))
]==]
local H = require 'spec.support.helper'
local torch = H.torch
local F = require 'moontorch.nn.functional'

local E = {
  relu = {{0.0, 0.0, 2.0}, {0.5, 0.0, 3.0}},
  relu6 = {{0.0, 0.0, 6.0}, {1.5, 0.0, 6.0}},
  leaky = {{-0.30000001192092896, 0.0, 2.0}, {0.5, -0.05000000074505806, 3.0}},
  elu = {{-0.38843491673469543, 0.0, 2.0}, {0.5, -0.11059960722923279, 3.0}},
  selu = {{-1.3658143281936646, 0.0, 2.1014020442962646}, {0.5253505110740662, -0.38889017701148987, 3.1521029472351074}},
  celu = {{-1.0552668571472168, 0.0, 2.0}, {0.5, -0.2350062131881714, 3.0}},
  gelu = {{-0.10021086037158966, 0.0, 1.9544999599456787}, {0.3457311987876892, -0.10032343119382858, 2.995950222015381}},
  gelu_tanh = {{-0.10042843222618103, 0.0, 1.9545977115631104}, {0.3457140028476715, -0.10032464563846588, 2.9963626861572266}},
  sigmoid = {{0.18242552876472473, 0.5, 0.8807970285415649}, {0.622459352016449, 0.43782350420951843, 0.9525741338729858}},
  tanh = {{-0.9051482677459717, 0.0, 0.9640275835990906}, {0.46211716532707214, -0.24491865932941437, 0.9950547814369202}},
  silu = {{-0.2736382782459259, 0.0, 1.7615940570831299}, {0.3112296760082245, -0.10945587605237961, 2.857722520828247}},
  mish = {{-0.2980997562408447, 0.0, 1.9439589977264404}, {0.37524524331092834, -0.12992696464061737, 2.98653507232666}},
  hardsigmoid = {{0.0, 0.5, 1.0}, {0.6666666865348816, 0.4166666567325592, 1.0}},
  hardswish = {{-0.0, 0.0, 4.0}, {0.6666666865348816, -0.2083333283662796, 6.0}},
  logsigmoid = {{-15.0, -0.6931471824645996, -2.06115369216775e-09}, {-0.006715348456054926, -2.578889846801758, -9.357622912219837e-14}},
  softplus = {{0.024293676018714905, 0.3465735912322998, 2.0}, {0.65663081407547, 0.2370384931564331, 3.0}},
  softplus1 = {{3.059022617435403e-07, 0.6931471824645996, 20.0}, {5.006715297698975, 0.07888973504304886, 30.0}},
  softsign = {{-0.6000000238418579, 0.0, 0.6666666865348816}, {0.3333333432674408, -0.20000000298023224, 0.75}},
  tanhshrink = {{-0.5948517322540283, 0.0, 1.0359723567962646}, {0.037882834672927856, -0.005081340670585632, 2.0049452781677246}},
  hardshrink = {{-1.5, 0.0, 2.0}, {0.0, 0.0, 3.0}},
  softshrink = {{-0.8999999761581421, 0.0, 1.399999976158142}, {0.0, 0.0, 2.4000000953674316}},
  hardtanh = {{-0.5, 0.0, 1.0}, {0.5, -0.25, 1.0}},
  threshold = {{20.0, 20.0, 2.0}, {0.5, 20.0, 3.0}},
  prelu = {{{-0.19166666269302368, -0.17499999701976776, -0.15833334624767303, -0.14166666567325592}, {0.625, 0.5416666865348816, 0.4583333432674408, 0.375}, {-1.1666666269302368, -0.8333333134651184, -0.5, -0.1666666716337204}}, {{0.0833333358168602, 0.25, 0.4166666567325592, 0.5833333134651184}, {0.75, 0.9166666865348816, 1.0833333730697632, 1.25}, {1.4166666269302368, 1.5833333730697632, 1.75, 1.9166666269302368}}},
  glu = {{{-0.32645416259765625, -0.34157317876815796}, {-0.3570469617843628, -0.3475564122200012}, {-0.2553970217704773, -0.19965779781341553}}, {{0.05022377893328667, 0.160458505153656}, {0.5603432059288025, 0.7125248908996582}, {1.2069330215454102, 1.3802965879440308}}},
  glu2 = {{{-0.9982407689094543, -0.9838089346885681, -0.9542518258094788, -0.909264862537384}, {-0.8489733934402466, -0.7738927006721497, -0.6848639249801636, -0.582974910736084}, {-0.4694755971431732, -0.34569835662841797, -0.21298818290233612, -0.07264718413352966}}},
  softmax2 = {{0.025908654555678368, 0.1161145344376564, 0.8579767942428589}, {0.07323399931192398, 0.03459329158067703, 0.8921727538108826}},
  log_softmax1 = {{-2.1269280910491943, -0.575939416885376, -1.31326162815094}, {-0.12692804634571075, -0.825939416885376, -0.31326165795326233}},
  softmin = {{0.7978760004043579, 0.17803020775318146, 0.024093767628073692}, {0.3125893473625183, 0.6617516875267029, 0.025658896192908287}},
  softmax64 = {{0.02590865471740153, 0.11611453467414118, 0.8579768106084573}, {0.07323399598373095, 0.0345932902262843, 0.8921727137899846}},
  softmax3 = {{{0.1913621425628662, 0.2260676473379135, 0.2670673727989197, 0.3155028223991394}, {0.1913621425628662, 0.2260676473379135, 0.2670673727989197, 0.3155028223991394}, {0.1913621425628662, 0.2260676622390747, 0.2670673727989197, 0.3155028223991394}}, {{0.1913621425628662, 0.2260676622390747, 0.2670673727989197, 0.3155028223991394}, {0.1913621425628662, 0.2260676622390747, 0.2670673727989197, 0.3155028223991394}, {0.1913621425628662, 0.2260676771402359, 0.2670673727989197, 0.3155028223991394}}},
  grad_gelu = {{-0.12746915221214294, -1.0, 0.5426159501075745}, {2.602485179901123, 0.07615667581558228, -1.0119456052780151}},
  grad_mish = {{-0.0640978142619133, -1.2000000476837158, 0.5346589684486389}, {2.659273147583008, 0.10995390266180038, -1.0211069583892822}},
  grad_selu = {{0.39228498935699463, -3.5161986351013184, 0.5253505110740662}, {3.1521029472351074, 0.3423022925853729, -1.0507010221481323}},
  grad_logsigmoid = {{0.8175745010375977, -1.0, 0.05960145965218544}, {1.1326220035552979, 0.1405441164970398, -0.04742587357759476}},
  grad_hardswish = {{0.0, -1.0, 0.5833333730697632}, {2.0, 0.1041666641831398, -1.5}},
  grad_softmax = {{0.020139627158641815, -0.2580840587615967, 0.23794442415237427}, {0.2683163583278656, 0.03161212429404259, -0.2999284863471985}},
  grad_softplus = {{0.04742587357759476, -1.0, 0.5}, {2.193175792694092, 0.09438516944646835, -1.0}},
  prelu_gx = {{{-0.038333334028720856, -0.03500000014901161, -0.03166666999459267, -0.028333334252238274}, {-0.625, -0.5416666865348816, -0.4583333432674408, -0.375}, {-4.666666507720947, -3.3333332538604736, -2.0, -0.6666666865348816}}, {{0.1666666716337204, 0.5, 0.8333333134651184, 1.1666666269302368}, {1.5, 1.8333333730697632, 2.1666667461395264, 2.5}, {2.8333332538604736, 3.1666667461395264, 3.5, 3.8333332538604736}}},
  prelu_gw = {2.25, -4.138888835906982, 2.3333330154418945},
  glu_gx = {{{-0.11120589822530746, -0.13333970308303833, 0.17684100568294525, 0.18779920041561127}, {-0.20397204160690308, -0.2230069935321808, 0.18213744461536407, 0.16408340632915497}, {-0.2236376404762268, -0.1913435459136963, 0.07333888858556747, 0.041523244231939316}}, {{0.06053826957941055, 0.2059754580259323, 0.0020043952390551567, 0.01844334974884987}, {0.8372920155525208, 1.1076910495758057, 0.15879812836647034, 0.22612601518630981}, {2.056499719619751, 2.4065918922424316, 0.43131715059280396, 0.4886268079280853}}},
  linear_fns = {'AddBackward0', 'SqueezeBackward3', 'AddmmBackward0', 'MmBackward0', 'ViewBackward0', 'UnsafeViewBackward0', 'AddBackward0', 'UnsafeViewBackward0', 'AddBackward0'},
  linear = {{3.3499999046325684, -3.450000047683716}, {6.599999904632568, -1.0125000476837158}},
  linear_gx = {{-7.0, -8.425000190734863, 16.850000381469727}, {3.562499761581421, -13.706250190734863, 27.412500381469727}},
  linear_gw = {{-3.4499993324279785, -3.299999952316284, 53.0}, {9.33750057220459, 0.5062500238418579, -19.875}},
  linear_gb = {19.899999618530273, -8.925000190734863},
  linear3 = {{{-2.2750000953674316, -2.7208333015441895}, {-1.274999976158142, -1.8874999284744263}, {-0.2750000059604645, -1.0541666746139526}}, {{0.7250000238418579, -0.22083333134651184}, {1.725000023841858, 0.6124999523162842}, {2.7249999046325684, 1.4458332061767578}}},
  linear3_gx = {{{-10.4375, 3.1895835399627686, -6.379167079925537}, {-6.9375, 1.6062500476837158, -3.2125000953674316}, {-3.4375, 0.022916674613952637, -0.04583334922790527}}, {{0.06250002980232239, -1.5604166984558105, 3.120833396911621}, {3.5625, -3.1437501907348633, 6.287500381469727}, {7.062499523162842, -4.727083206176758, 9.454166412353516}}},
  linear3_gw = {{22.65833282470703, 23.108333587646484, 23.558334350585938}, {21.356943130493164, 20.08194351196289, 18.80694580078125}},
  linear3_gb = {2.6999995708465576, -7.65000057220459},
  linear1d = {4.599999904632568, 0.30000001192092896},
  linear1d_nobias = {4.5, 0.5},
  bilinear = {{3.0749998092651367, 3.5749998092651367}, {-0.4249999523162842, 6.375000476837158}},
  bilinear_g1 = {{-3.000000238418579, -3.0, -3.0}, {-3.049999713897705, -1.0500000715255737, 0.9500001072883606}},
  bilinear_g2 = {{-0.6000000238418579, -0.5999999046325684, -0.6000000238418579, -0.6000001430511475}, {-2.0500001907348633, -1.2375003099441528, -0.42500007152557373, 0.3875000476837158}},
  bilinear_gw = {{{-1.5, -4.0, 2.5, 1.25}, {0.0, 0.5, -0.5, -1.0}, {2.0, -2.0, 4.0, 13.0}}, {{1.5, 2.75, -1.25, 1.25}, {0.0, 0.125, -0.125, -0.25}, {-2.0, -5.5, 3.5, 2.0}}},
  bilinear_gb = {3.0, -0.5},
  layer_norm = {{{-1.3414475917816162, -0.794298529624939, -0.24714906513690948, 0.9707240462303162}, {-1.3414475917816162, -0.7942987680435181, -0.24714909493923187, 0.9707238078117371}, {-1.3414477109909058, -0.794298529624939, -0.24714915454387665, 0.9707238078117371}}, {{-1.3414475917816162, -0.7942982912063599, -0.2471492737531662, 0.9707238674163818}, {-1.3414475917816162, -0.7942981719970703, -0.24714939296245575, 0.9707238078117371}, {-1.3414483070373535, -0.794298529624939, -0.24714915454387665, 0.9707238078117371}}},
  layer_norm_gx = {{{2.8150253295898438, -10.352174758911133, 12.252567291259766, -4.7154083251953125}, {1.7425603866577148, -6.238170623779297, 7.244257926940918, -2.7486467361450195}, {0.6700968742370605, -2.1241679191589355, 2.235955238342285, -0.7818840146064758}}, {{-0.4023665189743042, 1.9898366928100586, -2.7723476886749268, 1.184877634048462}, {-1.4748306274414062, 6.103839874267578, -7.7806501388549805, 3.1516380310058594}, {-2.5472984313964844, 10.217845916748047, -12.788957595825195, 5.118400573730469}}},
  layer_norm_gw = {2.0121703147888184, 0.2235749214887619, 0.22357502579689026, 2.0121710300445557},
  layer_norm_gb = {-1.4999998807907104, -0.5000001192092896, 0.5000001192092896, 1.5000001192092896},
  layer_norm2 = {{{-1.5671699047088623, -1.2822299003601074, -0.9972899556159973, -0.7123500108718872}, {-0.4274100065231323, -0.14247004687786102, 0.14246992766857147, 0.4274098873138428}, {0.7123498916625977, 0.9972898364067078, 1.2822297811508179, 1.5671697854995728}}, {{-1.5671697854995728, -1.2822297811508179, -0.9972898364067078, -0.7123498916625977}, {-0.4274098873138428, -0.14246992766857147, 0.14247004687786102, 0.4274100065231323}, {0.7123500108718872, 0.9972899556159973, 1.2822299003601074, 1.5671699047088623}}},
  group_norm = {{{-1.3637601137161255, -0.7782562375068665, -0.19275236129760742}, {-0.09275221824645996, -0.678256094455719, -1.263759970664978}, {-2.627519369125366, -1.4565114974975586, -0.28550371527671814}, {0.5463759303092957, 0.8391278386116028, 1.1318796873092651}}, {{-1.3637597560882568, -0.778255820274353, -0.1927519589662552}, {-0.09275183081626892, -0.6782557964324951, -1.263759732246399}, {-2.627519369125366, -1.4565116167068481, -0.2855038642883301}, {0.5463762283325195, 0.8391281366348267, 1.1318800449371338}}},
  group_norm_gx = {{{0.9192447662353516, -1.204965591430664, -3.329174041748047}, {4.50018310546875, 1.204965591430664, -2.090250015258789}, {-0.06316888332366943, -0.3013780117034912, -0.539587140083313}, {1.4178428649902344, 0.3013777732849121, -0.8150871396064758}}, {{-1.087085485458374, 0.4016556739807129, 1.8903968334197998}, {-0.7193890810012817, -0.4016556739807129, -0.08392226696014404}, {-1.5679149627685547, 0.9035873413085938, 3.375091552734375}, {-2.4968366622924805, -0.9035892486572266, 0.6896591186523438}}},
  normalize = {{-0.6000000238418579, 0.0, 0.800000011920929}, {0.16384638845920563, -0.08192319422960281, 0.9830783009529114}},
  normalize_p1 = {{-0.75, 0.0, 0.4000000059604645}, {0.25, -1.0, 0.6000000238418579}},
  dropout = {{2.0, 2.0, 0.0, 2.0}, {0.0, 0.0, 2.0, 2.0}},
  dropout_big = {2017.14306640625, 588, {0.0, 1.4285714626312256, 0.0, 1.4285714626312256, 1.4285714626312256, 1.4285714626312256, 1.4285714626312256, 0.0, 1.4285714626312256, 1.4285714626312256}},
  dropout64 = {2.6666666666666665, 2.6666666666666665, 2.6666666666666665, 2.6666666666666665, 2.6666666666666665, 0.0},
  alpha_dropout = {{-0.9106420278549194, 0.6070946455001831, 2.3336598873138428}, {1.0387359857559204, 0.39127397537231445, -0.9106420278549194}},
  dropout2d = {{{{0.0, 0.0}, {0.0, 0.0}}, {{2.0, 2.0}, {2.0, 2.0}}, {{2.0, 2.0}, {2.0, 2.0}}}, {{{2.0, 2.0}, {2.0, 2.0}}, {{2.0, 2.0}, {2.0, 2.0}}, {{0.0, 0.0}, {0.0, 0.0}}}},
  dropout1d = {{0.0, 0.0, 0.0}, {2.0, 2.0, 2.0}, {2.0, 2.0, 2.0}, {2.0, 2.0, 2.0}},
  dropout3d = {{{{0.0, 0.0}}, {{0.0, 0.0}}}, {{{2.0, 2.0}}, {{2.0, 2.0}}}, {{{2.0, 2.0}}, {{2.0, 2.0}}}},
  dropout_grad = {{0.0, 0.0, 2.0}, {2.0, 0.0, 2.0}},
  dropout_p1 = {{-0.0, 0.0, 0.0}, {0.0, -0.0, 0.0}},
  embedding = {{{1.0, -1.0, 2.0}, {-2.0, 3.0, 1.0}}, {{0.0, 4.0, 0.0}, {0.10000000149011612, 0.20000000298023224, 0.30000001192092896}}, {{-2.0, 3.0, 1.0}, {-2.0, 3.0, 1.0}}},
  embedding_gw = {{9.0, 10.0, 11.0}, {0.0, 1.0, 2.0}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {6.0, 7.0, 8.0}},
  embedding_maxnorm = {{0.8164964914321899, -0.8164964914321899, 1.6329929828643799}, {-1.0690449476242065, 1.603567361831665, 0.5345224738121033}, {-1.0690449476242065, 1.603567361831665, 0.5345224738121033}},
  embedding_maxnorm_w = {{0.10000000149011612, 0.20000000298023224, 0.30000001192092896}, {0.8164964914321899, -0.8164964914321899, 1.6329929828643799}, {0.5, 0.5, 0.5}, {-1.0690449476242065, 1.603567361831665, 0.5345224738121033}, {0.0, 4.0, 0.0}},
  one_hot = {{{1, 0, 0, 0, 0}, {0, 0, 1, 0, 0}}, {{0, 1, 0, 0, 0}, {0, 0, 0, 0, 1}}},
  one_hot6 = {{1, 0, 0, 0, 0, 0}, {0, 0, 1, 0, 0, 0}},
  cos = {0.1154700517654419, 0.3932963013648987},
  cos_g1 = {{0.258652925491333, 0.2309401035308838, 0.19398969411849976}, {-0.5298342108726501, 0.2649171054363251, 0.11038213968276978}},
  cos_g2 = {{-0.38490021228790283, -0.038490016013383865, 0.4233902096748352}, {0.15663748979568481, -0.07831874489784241, -0.7831875085830688}},
  cos_dim1 = {-0.4472135603427887, -0.7071067690849304, 0.9805806875228882},
  cos_bcast = {{-0.861857533454895, -0.8226382732391357, -0.5976143479347229}, {0.9960238337516785, 0.9722088575363159, 0.9525793790817261}},
  cos_tiny = {0.010000000707805157, 0.6000000238418579},
  cos_tiny_g = {{9900000.0, 0.0}, {0.12800000607967377, -0.09600000083446503}},
  pdist = {2.8722805976867676, 2.4109127521514893},
  pdist_p1 = {{4.499999046325684}, {3.7499990463256836}},
  ce = 0.707301676273346,
  ce_grad = {{0.12573620676994324, 0.037871021777391434, -0.16360722482204437}, {-0.09726111590862274, 0.07110358029603958, 0.026157546788454056}, {0.10020320117473602, -0.22259168326854706, 0.12238846719264984}},
  ce_w = 0.8246769905090332,
  ce_ignore = 0.8884499073028564,
  ce_ignore1 = 1.776899814605713,
  ce_none = {0.6749569177627563, 0.34500524401664734, 1.1019428968429565},
  ce_ls = 0.7650793790817261,
  ce_ls_w = 1.0684138536453247,
  ce_ls_w_grad = {{0.06889284402132034, -0.024551359936594963, -0.04434148594737053}, {0.0, 0.0, 0.0}, {0.1937803477048874, -0.4497016966342926, 0.25592127442359924}},
  ce_ls_none = {0.6474727392196655, 0.5898387432098389, 2.023561954498291},
  ce_probs = 1.3651050329208374,
  ce_probs_ls_w = 1.4610220193862915,
  ce_probs_none = {1.0690587759017944, 1.8667923212051392, 1.159463882446289},
  ce_1d = 0.5549569725990295,
  ce_nd = 1.276689052581787,
  ce_nd_grad = {{{-0.08964872360229492, 0.007807214744389057, 0.03122885897755623, 0.031228868290781975}, {0.030412759631872177, 0.015206379815936089, -0.1497008055448532, -0.1497008055448532}, {0.05923596769571304, -0.02301359549164772, 0.11847193539142609, 0.11847193539142609}}, {{0.007807217072695494, 0.007807214744389057, -0.08964873105287552, 0.031228868290781975}, {0.015206379815936089, 0.015206379815936089, 0.030412759631872177, -0.1497008055448532}, {-0.02301359549164772, -0.02301359549164772, 0.05923596769571304, 0.11847193539142609}}},
  ce_nd_none = {{1.9082677364349365, 0.5749345421791077, 1.2416012287139893, 1.2416012287139893}, {0.5749345421791077, 0.5749345421791077, 1.9082679748535156, 1.2416012287139893}},
  nll_sum = 2.1219050884246826,
  nll_w = 0.8246769905090332,
  nll_allignored = 0/0,
  mse = 3.322499990463257,
  l1 = 5.699999809265137,
  l1_none = {0.5, 2.0, 3.0, 0.20000001788139343},
  smooth_l1 = 1.0362499952316284,
  smooth_l1_b = {0.25, 1.75, 2.75, 0.040000006556510925},
  huber = {0.125, 0.875, 1.375, 0.020000003278255463},
  huber_mean = 1.0362499952316284,
  mse_bcast = 5.260416507720947,
  bce = 25.171295166015625,
  bce_g = {0.3124999701976776, -0.3571428656578064, -0.2777777910232544, -249999998976.0},
  bce_w = {0.2231435328722, 0.7133499383926392, 0.3160816431045532, 50.0},
  bcel_pw = 0.9227064847946167,
  bce_logits = 0.7646658420562744,
  bcel_w_sum = 4.303582668304443,
  kl_batchmean = 0.8252091407775879,
  kl_mean = 0.2750697135925293,
  kl_log_target = {{0.11213959753513336, 0.18246279656887054, -0.16925574839115143}, {0.739945113658905, 1.0566842555999756, -0.27155783772468567}},
  kl_zero_t = 3.0741264820098877,
  poisson = 0.9527069330215454,
  poisson_full = {1.1487212181091309, 0.3678794503211975, 3.153137683868408, 1.5569775104522705},
  poisson_nolog = 6.818875312805176,
  gauss = 20834.087890625,
  gauss_gv = {{-1.916666865348816, 0.0, 0.02083333395421505}, {-20833249280.0, -1.7500001192092896, -0.25}},
  gauss_full = {{6.822364807128906, 1.5723649263381958, 1.5723649263381958}, {1.3280121088027954, 1.6561371088027954, 2.265511989593506}},
  soft_margin = 0.8896658420562744,
  mlsm = 0.8533487319946289,
  mlsm_w = {0.5503905415534973, 1.0500831604003906},
  margin_ranking = {1.0, 0.0, 0.0, 0.29999998211860657},
  hinge = {0.5, 2.5, 2.0, 1.399999976158142},
  cos_emb = {0.8845299482345581, 0.8932963609695435},
  cos_emb_mean = 0.3610868453979492,
  triplet = {4.165175437927246, 1.9587593078613281},
  triplet_swap = 3.375,
  pad_const = {{9.0, 1.0, 2.0}, {9.0, 3.0, 4.0}, {9.0, 9.0, 9.0}},
  pad_neg = {{{{-1.0, -1.0, -1.0, -1.0}, {2.0, 3.0, -1.0, -1.0}}}},
  pad_reflect = {{{{6.0, 5.0, 4.0, 5.0, 6.0, 5.0}, {3.0, 2.0, 1.0, 2.0, 3.0, 2.0}, {6.0, 5.0, 4.0, 5.0, 6.0, 5.0}, {9.0, 8.0, 7.0, 8.0, 9.0, 8.0}, {6.0, 5.0, 4.0, 5.0, 6.0, 5.0}, {3.0, 2.0, 1.0, 2.0, 3.0, 2.0}}}},
  pad_replicate = {{{{1.0, 1.0, 1.0, 2.0, 3.0, 3.0}, {1.0, 1.0, 1.0, 2.0, 3.0, 3.0}, {4.0, 4.0, 4.0, 5.0, 6.0, 6.0}, {7.0, 7.0, 7.0, 8.0, 9.0, 9.0}, {7.0, 7.0, 7.0, 8.0, 9.0, 9.0}, {7.0, 7.0, 7.0, 8.0, 9.0, 9.0}}}},
  pad_circular = {{{{8.0, 9.0, 7.0, 8.0, 9.0, 7.0}, {2.0, 3.0, 1.0, 2.0, 3.0, 1.0}, {5.0, 6.0, 4.0, 5.0, 6.0, 4.0}, {8.0, 9.0, 7.0, 8.0, 9.0, 7.0}, {2.0, 3.0, 1.0, 2.0, 3.0, 1.0}, {5.0, 6.0, 4.0, 5.0, 6.0, 4.0}, {8.0, 9.0, 7.0, 8.0, 9.0, 7.0}}}},
  pad_reflect1d = {{4.0, 3.0, 2.0, 1.0, 2.0, 3.0, 4.0, 5.0, 4.0}},
  pad_reflect_g = {{{{40.0, 126.0, 80.0}, {42.0, 135.0, 84.0}, {20.0, 63.0, 40.0}}}},
}

local function X() return torch.tensor({ { -1.5, 0.0, 2.0 }, { 0.5, -0.25, 3.0 } }) end
local function X3()
  local v = {}
  for i = 0, 23 do v[#v + 1] = (i - 11.5) / 6 end
  return torch.tensor(v):reshape(2, 3, 4)
end
local G = function() return torch.tensor({ { 1.0, -2.0, 0.5 }, { 3.0, 0.25, -1.0 } }) end
local function long(t) return torch.tensor(t, { dtype = torch.int64 }) end
local function ar(n) return torch.arange(0, n, { dtype = torch.float32 }) end

describe('nn.functional activations', function()
  it('match PyTorch', function()
    local x = X()
    H.near(F.relu(x), E.relu)
    H.near(F.relu6(X() * 3), E.relu6)
    H.near(F.leaky_relu(x, 0.2), E.leaky)
    H.near(F.leaky_relu(x, { negative_slope = 0.2 }), E.leaky)
    H.near(F.elu(x, 0.5), E.elu)
    H.near(F.elu(x, { alpha = 0.5 }), E.elu)
    H.near(F.selu(x), E.selu)
    H.near(F.celu(x, 2.0), E.celu)
    H.near(F.gelu(x), E.gelu)
    H.near(F.gelu(x, 'tanh'), E.gelu_tanh)
    H.near(F.gelu(x, { approximate = 'tanh' }), E.gelu_tanh)
    H.near(F.sigmoid(x), E.sigmoid)
    H.near(F.tanh(x), E.tanh)
    H.near(F.silu(x), E.silu)
    H.near(F.mish(x), E.mish)
    H.near(F.hardsigmoid(X() * 2), E.hardsigmoid)
    H.near(F.hardswish(X() * 2), E.hardswish)
    H.near(F.logsigmoid(X() * 10), E.logsigmoid)
    H.near(F.softplus(x, 2.0, 3.0), E.softplus)
    H.near(F.softplus(x, { beta = 2.0, threshold = 3.0 }), E.softplus)
    H.near(F.softplus(X() * 10), E.softplus1)
    H.near(F.softsign(x), E.softsign)
    H.near(F.tanhshrink(x), E.tanhshrink)
    H.near(F.hardshrink(x, 0.6), E.hardshrink)
    H.near(F.softshrink(x, 0.6), E.softshrink)
    H.near(F.hardtanh(x, -0.5, 1.0), E.hardtanh)
    H.near(F.hardtanh(x, { min_val = -0.5, max_val = 1.0 }), E.hardtanh)
    H.near(F.threshold(x, 0.1, 20.0), E.threshold)
    H.near(F.prelu(X3(), torch.tensor({ 0.1, -0.5, 2.0 })), E.prelu)
    H.near(F.glu(X3()), E.glu)
    H.near(F.glu(X3(), 1), E.glu2)
    H.near(F.softmax(x, 2), E.softmax2)
    H.near(F.softmax(x, { dim = 2 }), E.softmax2)
    H.near(F.log_softmax(x, 1), E.log_softmax1)
    H.near(F.softmin(x, 2), E.softmin)
    local s64 = F.softmax(x, 2, { dtype = torch.float64 })
    assert.are.equal(torch.float64, s64.dtype)
    H.near(s64, E.softmax64, 1e-12, 1e-7)
    H.near(F.softmax(X3(), -1), E.softmax3)
  end)
  it('gradients match PyTorch', function()
    local cases = {
      gelu = F.gelu, mish = F.mish, selu = F.selu, logsigmoid = F.logsigmoid, hardswish = F.hardswish,
      softmax = function(t) return F.softmax(t, 2) end, softplus = function(t) return F.softplus(t, 2.0, 3.0) end,
    }
    for name, f in pairs(cases) do
      local xi = X():requires_grad_()
      local loss = (f(xi) * G()):sum()
      loss:backward()
      H.near(xi.grad, E['grad_' .. name], 1e-5, 1e-4)
    end
    local xi, w = X3():requires_grad_(), torch.tensor({ 0.1, -0.5, 2.0 }, { requires_grad = true })
    local loss = (F.prelu(xi, w) ^ 2):sum()
    loss:backward()
    H.near(xi.grad, E.prelu_gx)
    H.near(w.grad, E.prelu_gw, 1e-4, 1e-5)
    xi = X3():requires_grad_()
    local loss = (F.glu(xi) ^ 2):sum()
    loss:backward()
    H.near(xi.grad, E.glu_gx)
  end)
  it('inplace variants write into their input and return it', function()
    local x = X()
    assert.is_true(rawequal(F.relu(x, true), x))
    H.near(x, E.relu)
    x = X()
    assert.is_true(rawequal(F.relu_(x), x))
    x = X()
    F.leaky_relu(x, { negative_slope = 0.2, inplace = true })
    H.near(x, E.leaky)
    x = X()
    assert.is_true(rawequal(F.leaky_relu(x, 0.2, true), x))
    H.near(x, E.leaky)
    for _, c in ipairs { { F.selu, E.selu }, { F.silu, E.silu }, { F.mish, E.mish } } do
      x = X()
      assert.is_true(rawequal(c[1](x, true), x))
      H.near(x, c[2])
    end
    x = X()
    F.elu_(x, 0.5)
    H.near(x, E.elu)
    x = X()
    F.hardtanh(x, -0.5, 1.0, true)
    H.near(x, E.hardtanh)
    x = X()
    F.threshold_(x, 0.1, 20.0)
    H.near(x, E.threshold)
    x = X()
    assert.is_false(rawequal(F.relu(x, { inplace = false }), x))
    H.near(x, X())
  end)
end)

describe('nn.functional.linear and bilinear', function()
  it("values, gradients and PyTorch's grad_fn for every input rank", function()
    local w = torch.tensor({ { 0.5, -1.0, 2.0 }, { 1.5, 0.25, -0.5 } }, { requires_grad = true })
    local b = torch.tensor({ 0.1, -0.2 }, { requires_grad = true })
    local x = X():requires_grad_()
    local y = F.linear(x, w, b)
    H.near(y, E.linear)
    y:pow(2):sum():backward()
    H.near(x.grad, E.linear_gx, 1e-4)
    H.near(w.grad, E.linear_gw, 1e-4)
    H.near(b.grad, E.linear_gb, 1e-4)
    w.grad, b.grad = nil, nil
    local x3 = X3():narrow(3, 1, 3):contiguous():requires_grad_()
    y = F.linear(x3, w, b)
    H.near(y, E.linear3)
    y:pow(2):sum():backward()
    H.near(x3.grad, E.linear3_gx, 1e-4)
    H.near(w.grad, E.linear3_gw, 1e-4)
    H.near(b.grad, E.linear3_gb, 1e-4)
    H.near(F.linear(torch.tensor({ 1, 2, 3 }), w, b), E.linear1d)
    H.near(F.linear(torch.tensor({ 1, 2, 3 }), w), E.linear1d_nobias)
    H.near(F.linear(torch.tensor({ 1, 2, 3 }), w, nil), E.linear1d_nobias)
    -- grad_fn names: 1-D, 2-D, 3-D, 4-D input, each with and without bias, then a non-contiguous 3-D input
    local got = {}
    for _, shp in ipairs { { 3 }, { 2, 3 }, { 4, 2, 3 }, { 2, 2, 2, 3 } } do
      local xx = torch.randn(shp)
      got[#got + 1] = F.linear(xx, w, b).grad_fn:name()
      got[#got + 1] = F.linear(xx, w).grad_fn:name()
    end
    got[#got + 1] = F.linear(torch.randn(3, 3, 2):transpose(2, 3), w, b).grad_fn:name()
    local want = {}
    for i, n in ipairs(E.linear_fns) do want[i] = n end
    -- 1-D input without a bias: PyTorch squeezes in place (SqueezeBackward3); moontorch's matmul squeezes out of place
    want[2] = got[2]:match('^SqueezeBackward%d$') and got[2] or want[2]
    assert.are.same(want, got)
  end)
  it('bilinear', function()
    local v = {}
    for i = 0, 23 do v[#v + 1] = (i - 12) / 10 end
    local bw = torch.tensor(v):reshape(2, 3, 4):requires_grad_()
    local bb = torch.tensor({ 0.5, -0.5 }, { requires_grad = true })
    local x1 = X():requires_grad_()
    local x2 = torch.tensor({ { 1.0, 2.0, -1.0, 0.5 }, { 0.0, -1.0, 1.0, 2.0 } }, { requires_grad = true })
    local y = F.bilinear(x1, x2, bw, bb)
    H.near(y, E.bilinear)
    local loss = (y * torch.tensor({ { 1.0, -1.0 }, { 2.0, 0.5 } })):sum()
    loss:backward()
    H.near(x1.grad, E.bilinear_g1)
    H.near(x2.grad, E.bilinear_g2)
    H.near(bw.grad, E.bilinear_gw)
    H.near(bb.grad, E.bilinear_gb)
  end)
end)

describe('nn.functional normalisation', function()
  it('layer_norm, group_norm, normalize with gradients', function()
    local lw = torch.tensor({ 1.0, 2.0, -1.0, 0.5 }, { requires_grad = true })
    local lb = torch.tensor({ 0.0, 0.1, 0.2, 0.3 }, { requires_grad = true })
    local xi = X3():requires_grad_()
    local y = F.layer_norm(xi, { 4 }, lw, lb)
    H.near(y, E.layer_norm, 1e-5, 1e-4)
    local loss = (y * X3()):sum()
    loss:backward()
    H.near(xi.grad, E.layer_norm_gx, 1e-4, 1e-4)
    H.near(lw.grad, E.layer_norm_gw, 1e-4, 1e-4)
    H.near(lb.grad, E.layer_norm_gb, 1e-4, 1e-4)
    H.near(F.layer_norm(X3() * 3, { 3, 4 }, { eps = 0.1 }), E.layer_norm2, 1e-5, 1e-4)
    local gw, gb = torch.tensor({ 1.0, -1.0, 2.0, 0.5 }), torch.tensor({ 0.1, 0.2, 0.3, 0.4 })
    xi = X3():reshape(2, 4, 3):requires_grad_()
    y = F.group_norm(xi, 2, gw, gb)
    H.near(y, E.group_norm, 1e-5, 1e-4)
    local loss = (y * X3():reshape(2, 4, 3)):sum()
    loss:backward()
    H.near(xi.grad, E.group_norm_gx, 1e-4, 1e-4)
    H.near(F.normalize(X()), E.normalize)
    H.near(F.normalize(X(), 1.0, 1), E.normalize_p1)
    H.near(F.normalize(X(), { p = 1.0, dim = 1 }), E.normalize_p1)
  end)
end)

describe('nn.functional dropout draws what PyTorch draws', function()
  it('dropout, alpha_dropout, dropout1d/2d/3d after manual_seed', function()
    torch.manual_seed(3)
    H.near(F.dropout(torch.ones(2, 4), 0.5), E.dropout)
    torch.manual_seed(5)
    local d = F.dropout(torch.ones(50, 40), 0.3)
    H.near(d:sum(), E.dropout_big[1], 1e-2)
    assert.are.equal(E.dropout_big[2], d:eq(0):sum():item())
    H.near(d[8]:narrow(1, 1, 10), E.dropout_big[3])
    torch.manual_seed(5)
    H.near(F.dropout(torch.ones(6, { dtype = torch.float64 }) * 2, 0.25), E.dropout64, 1e-12)
    torch.manual_seed(5)
    H.near(F.alpha_dropout(X(), 0.4, true), E.alpha_dropout)
    torch.manual_seed(5)
    H.near(F.dropout2d(torch.ones(2, 3, 2, 2), 0.5), E.dropout2d)
    torch.manual_seed(5)
    H.near(F.dropout1d(torch.ones(4, 3), 0.5), E.dropout1d)
    torch.manual_seed(5)
    H.near(F.dropout3d(torch.ones(3, 2, 1, 2), 0.5), E.dropout3d)
    local xi = X():requires_grad_()
    torch.manual_seed(8)
    F.dropout(xi, 0.5):sum():backward()
    H.near(xi.grad, E.dropout_grad)
    H.near(F.dropout(X(), 1.0), E.dropout_p1)
  end)
  it('is the identity outside training and for p = 0; inplace writes into the input', function()
    local x = torch.ones(3)
    assert.is_true(rawequal(F.dropout(x, 0.5, false), x))
    assert.is_true(rawequal(F.dropout(x, { p = 0.5, training = false }), x))
    assert.is_true(rawequal(F.dropout(x, 0), x))
    assert.is_true(rawequal(F.alpha_dropout(x, 0.5), x), 'alpha_dropout defaults to training=false')
    torch.manual_seed(3)
    local y = torch.ones(2, 4)
    assert.is_true(rawequal(F.dropout(y, 0.5, true, true), y))
    H.near(y, E.dropout)
  end)
end)

describe('nn.functional embedding and one_hot', function()
  it('takes 1-based indices; padding_idx gets no gradient; max_norm renormalises', function()
    local ew = torch.tensor({ { 0.1, 0.2, 0.3 }, { 1.0, -1.0, 2.0 }, { 0.5, 0.5, 0.5 }, { -2.0, 3.0, 1.0 }, { 0.0, 4.0, 0.0 } },
      { requires_grad = true })
    local idx = long({ { 2, 4 }, { 5, 1 }, { 4, 4 } })
    local y = F.embedding(idx, ew, 4)
    H.near(y, E.embedding)
    local loss = (y * ar(18):reshape(3, 2, 3)):sum()
    loss:backward()
    H.near(ew.grad, E.embedding_gw)
    local ew2 = ew:detach():clone()
    H.near(F.embedding(long({ 2, 4, 4 }), ew2, { max_norm = 2.0 }), E.embedding_maxnorm)
    H.near(ew2, E.embedding_maxnorm_w)
    H.near(F.one_hot(long({ { 1, 3 }, { 2, 5 } })), E.one_hot)
    H.near(F.one_hot(long({ 1, 3 }), 6), E.one_hot6)
  end)
end)

describe('nn.functional distances', function()
  it('cosine_similarity (default dim 2) and pairwise_distance', function()
    local a1 = X():requires_grad_()
    local a2 = torch.tensor({ { 1.0, 1.0, 1.0 }, { 2.0, -1.0, 0.5 } }, { requires_grad = true })
    local y = F.cosine_similarity(a1, a2)
    H.near(y, E.cos)
    local loss = (y * torch.tensor({ 1.0, -2.0 })):sum()
    loss:backward()
    H.near(a1.grad, E.cos_g1)
    H.near(a2.grad, E.cos_g2)
    H.near(F.cosine_similarity(X(), torch.ones(2, 3), 1), E.cos_dim1)
    H.near(F.cosine_similarity(X3(), torch.tensor({ 1.0, 2.0, 3.0, 4.0 }), -1), E.cos_bcast)
    -- below eps the norms are clamped, a clamp autograd does not see (PyTorch 1.13)
    local t1 = torch.tensor({ { 1e-9, 0.0 }, { 3.0, 4.0 } }, { requires_grad = true })
    y = F.cosine_similarity(t1, torch.tensor({ { 1e-9, 0.0 }, { 1.0, 0.0 } }))
    H.near(y, E.cos_tiny)
    y:sum():backward()
    H.near(t1.grad, E.cos_tiny_g, 1e-5, 1e-5)
    H.near(F.pairwise_distance(X(), torch.ones(2, 3)), E.pdist)
    H.near(F.pairwise_distance(X(), torch.ones(3), { p = 1.0, keepdim = true }), E.pdist_p1)
  end)
end)

describe('nn.functional losses', function()
  local function inp()
    return torch.tensor({ { 0.2, -1.0, 0.5 }, { 1.5, 0.3, -0.7 }, { 0.0, 0.1, 0.2 } }, { requires_grad = true })
  end
  local function tgt() return long({ 3, 1, 2 }) end
  local wt = torch.tensor({ 1.0, 2.0, 0.5 })
  it('cross_entropy with 1-based class targets, and its gradient', function()
    local i = inp()
    local l = F.cross_entropy(i, tgt())
    H.near(l, E.ce)
    l:backward()
    H.near(i.grad, E.ce_grad)
    H.near(F.cross_entropy(inp(), tgt(), { weight = wt }), E.ce_w)
    H.near(F.cross_entropy(inp(), tgt(), wt), E.ce_w)
    H.near(F.cross_entropy(inp(), long({ 3, -100, 2 })), E.ce_ignore)
    H.near(F.cross_entropy(inp(), tgt(), { ignore_index = 1, reduction = 'sum' }), E.ce_ignore1)
    H.near(F.cross_entropy(inp(), tgt(), { reduction = 'none' }), E.ce_none)
    H.near(F.cross_entropy(inp(), tgt(), 'none'), E.ce_none)
    H.near(F.cross_entropy(inp(), tgt(), { label_smoothing = 0.1 }), E.ce_ls)
    i = inp()
    l = F.cross_entropy(i, long({ 3, -100, 2 }), { weight = wt, label_smoothing = 0.2 })
    H.near(l, E.ce_ls_w)
    l:backward()
    H.near(i.grad, E.ce_ls_w_grad)
    H.near(F.cross_entropy(inp(), tgt(), { weight = wt, label_smoothing = 0.2, reduction = 'none' }), E.ce_ls_none)
    local probs = torch.tensor({ { 1, 2, 3 }, { 0, 0, 1 }, { 2, 1, 0 } }):softmax(2)
    H.near(F.cross_entropy(inp(), probs), E.ce_probs)
    H.near(F.cross_entropy(inp(), probs, { weight = wt, label_smoothing = 0.3 }), E.ce_probs_ls_w)
    H.near(F.cross_entropy(inp(), probs, { reduction = 'none' }), E.ce_probs_none)
    H.near(F.cross_entropy(torch.tensor({ 0.5, 1.0, -1.0 }), long(2)), E.ce_1d)
    local x4 = X3():requires_grad_()
    local t4 = long({ { 1, 3, 2, 2 }, { 3, 3, 1, 2 } })
    l = F.cross_entropy(x4, t4, { weight = wt })
    H.near(l, E.ce_nd)
    l:backward()
    H.near(x4.grad, E.ce_nd_grad)
    H.near(F.cross_entropy(X3(), t4, { reduction = 'none' }), E.ce_nd_none)
  end)
  it('nll_loss', function()
    H.near(F.nll_loss(inp():log_softmax(2), tgt(), { reduction = 'sum' }), E.nll_sum)
    H.near(F.nll_loss(inp():log_softmax(2), tgt(), 'sum'), E.nll_sum)
    H.near(F.nll_loss(inp():log_softmax(2), tgt(), wt), E.nll_w)
    H.near(F.nll_loss(inp():log_softmax(2), long({ -100, -100, -100 })), E.nll_allignored)
  end)
  it('regression losses', function()
    local a = torch.tensor({ 0.5, -1.0, 2.0, 0.1 })
    local t = torch.tensor({ 1.0, 1.0, -1.0, 0.3 })
    H.near(F.mse_loss(a, t), E.mse)
    H.near(F.l1_loss(a, t, 'sum'), E.l1)
    H.near(F.l1_loss(a, t, { reduction = 'sum' }), E.l1)
    H.near(F.l1_loss(a, t, { reduction = 'none' }), E.l1_none)
    H.near(F.smooth_l1_loss(a, t), E.smooth_l1)
    H.near(F.smooth_l1_loss(a, t, { beta = 0.5, reduction = 'none' }), E.smooth_l1_b)
    H.near(F.huber_loss(a, t, 'none', 0.5), E.huber)
    H.near(F.huber_loss(a, t, { delta = 0.5, reduction = 'none' }), E.huber)
    H.near(F.huber_loss(a, t), E.huber_mean)
    H.near(F.mse_loss(X(), torch.tensor({ 1.0, 0.0, -1.0 })), E.mse_bcast)
    H.near(F.mse_loss(a, t, { size_average = false }), E.mse * 4, 1e-5, 1e-5)
  end)
  it('binary, divergence and likelihood losses', function()
    local a = torch.tensor({ 0.5, -1.0, 2.0, 0.1 })
    local p = torch.tensor({ 0.2, 0.7, 0.9, 0.0 }, { requires_grad = true })
    local q = torch.tensor({ 0.0, 1.0, 1.0, 1.0 })
    local l = F.binary_cross_entropy(p, q)
    H.near(l, E.bce)
    l:backward()
    local g = p.grad:tolist()
    H.near({ g[1], g[2], g[3] }, { E.bce_g[1], E.bce_g[2], E.bce_g[3] }) -- g[4] is at a clamped log (PyTorch: its own eps)
    H.near(F.binary_cross_entropy(p, q, torch.tensor({ 1.0, 2.0, 3.0, 0.5 }), 'none'), E.bce_w)
    H.near(F.binary_cross_entropy_with_logits(a, q, { pos_weight = torch.tensor({ 2.0, 0.5, 1.0, 3.0 }) }), E.bcel_pw)
    H.near(F.binary_cross_entropy_with_logits(a, q), E.bce_logits)
    H.near(F.binary_cross_entropy_with_logits(a, q, torch.tensor({ 1.0, 2.0, 3.0, 0.5 }), { reduction = 'sum' }), E.bcel_w_sum)
    local lp = X():log_softmax(2)
    local tp = torch.tensor({ { 0.0, 1.0, 2.0 }, { 1.0, 1.0, 0.0 } }):softmax(2)
    H.near(F.kl_div(lp, tp, { reduction = 'batchmean' }), E.kl_batchmean)
    H.near(F.kl_div(lp, tp), E.kl_mean)
    H.near(F.kl_div(lp, tp:log(), { reduction = 'none', log_target = true }), E.kl_log_target)
    H.near(F.kl_div(lp, torch.tensor({ { 0.0, 0.5, 0.5 }, { 1.0, 0.0, 0.0 } }), 'sum'), E.kl_zero_t)
    local rate, cnt = torch.tensor({ 0.5, -1.0, 2.0, 0.1 }), torch.tensor({ 1.0, 0.0, 3.0, 2.0 })
    H.near(F.poisson_nll_loss(rate, cnt), E.poisson)
    H.near(F.poisson_nll_loss(rate, cnt, { full = true, reduction = 'none' }), E.poisson_full)
    H.near(F.poisson_nll_loss(rate:abs(), cnt, false, { reduction = 'sum' }), E.poisson_nolog)
    local gv = torch.tensor({ { 0.5, 1.0, 2.0 }, { 1e-8, 0.25, 1.0 } }, { requires_grad = true })
    l = F.gaussian_nll_loss(X(), torch.ones(2, 3), gv)
    H.near(l, E.gauss)
    l:backward()
    H.near(gv.grad, E.gauss_gv, 1e-4, 1e-5)
    H.near(F.gaussian_nll_loss(X(), torch.ones(2, 3), torch.tensor({ 0.5, 2.0 }), { full = true, reduction = 'none' }),
      E.gauss_full)
  end)
  it('margin and embedding losses', function()
    local a = torch.tensor({ 0.5, -1.0, 2.0, 0.1 })
    local t = torch.tensor({ 1.0, 1.0, -1.0, 0.3 })
    local y3 = torch.tensor({ 1.0, -1.0, 1.0, -1.0 })
    H.near(F.soft_margin_loss(a, torch.tensor({ 1.0, -1.0, -1.0, 1.0 })), E.soft_margin)
    local mt = torch.tensor({ { 0.0, 1.0, 1.0 }, { 1.0, 0.0, 0.0 } })
    H.near(F.multilabel_soft_margin_loss(X(), mt), E.mlsm)
    H.near(F.multilabel_soft_margin_loss(X(), mt, torch.tensor({ 1.0, 2.0, 0.5 }), 'none'), E.mlsm_w)
    H.near(F.margin_ranking_loss(a, t, y3, 0.5, 'none'), E.margin_ranking)
    H.near(F.margin_ranking_loss(a, t, y3, { margin = 0.5, reduction = 'none' }), E.margin_ranking)
    H.near(F.hinge_embedding_loss(a, y3, { margin = 1.5, reduction = 'none' }), E.hinge)
    local o = torch.tensor({ { 1.0, 1.0, 1.0 }, { 2.0, -1.0, 0.5 } })
    H.near(F.cosine_embedding_loss(X(), o, torch.tensor({ 1.0, -1.0 }), { margin = -0.5, reduction = 'none' }), E.cos_emb)
    H.near(F.cosine_embedding_loss(X(), o, torch.tensor({ -1.0, 1.0 })), E.cos_emb_mean)
    local ne = torch.tensor({ { -1.0, 0.0, 2.5 }, { 0.0, 0.0, 0.0 } })
    H.near(F.triplet_margin_loss(X(), o, ne, { margin = 2.0, reduction = 'none' }), E.triplet)
    H.near(F.triplet_margin_loss(X(), o, ne, { swap = true, p = 1 }), E.triplet_swap)
  end)
end)

describe('nn.functional.pad', function()
  it('constant (also negative), reflect, replicate, circular, and gradients', function()
    local pin = torch.arange(1, 10, { dtype = torch.float32 }):reshape(1, 1, 3, 3)
    H.near(F.pad(torch.tensor({ { 1, 2 }, { 3, 4 } }), { 1, 0, 0, 1 }, { value = 9.0 }), E.pad_const)
    H.near(F.pad(torch.tensor({ { 1, 2 }, { 3, 4 } }), { 1, 0, 0, 1 }, 'constant', 9.0), E.pad_const)
    H.near(F.pad(pin, { -1, 2, 1, -2 }, { value = -1.0 }), E.pad_neg)
    H.near(F.pad(pin, { 2, 1, 1, 2 }, 'reflect'), E.pad_reflect)
    H.near(F.pad(pin, { 2, 1, 1, 2 }, { mode = 'replicate' }), E.pad_replicate)
    H.near(F.pad(pin, { 2, 1, 1, 3 }, 'circular'), E.pad_circular)
    H.near(F.pad(torch.arange(1, 6, { dtype = torch.float32 }):reshape(1, 5), { 3, 1 }, 'reflect'), E.pad_reflect1d)
    local pr = pin:clone():requires_grad_()
    local y = F.pad(pr, { 2, 1, 1, 2 }, 'reflect')
    local loss = (y * ar(36):reshape(1, 1, 6, 6)):sum()
    loss:backward()
    H.near(pr.grad, E.pad_reflect_g)
  end)
end)

describe('nn.functional errors', function()
  local function inp() return torch.tensor({ { 0.2, -1.0, 0.5 }, { 1.5, 0.3, -0.7 }, { 0.0, 0.1, 0.2 } }) end
  it("name the function and say what PyTorch says", function()
    local cases = {
      { function() F.cross_entropy(inp(), long({ 4, 1, 2 })) end, 'nn.functional.cross_entropy: Target 4 is out of bounds.' },
      { function() F.cross_entropy(inp(), long({ 0, 1, 2 })) end, 'Target 0 is out of bounds.' },
      { function() F.nll_loss(inp(), long({ 1, 2 })) end, 'nn.functional.nll_loss: Expected input batch_size (3) to match target batch_size (2).' },
      { function() F.nll_loss(inp(), torch.tensor({ 1, 2, 3 }, { dtype = torch.int32 })) end, 'nn.functional.nll_loss: expected scalar type Long but found Int' },
      -- (PyTorch 1.13: F.nll_loss / F.cross_entropy(torch.randn(3, 3), torch.tensor([1., 2., 3.])) say
      -- "expected scalar type Long but found Float"; in Lua torch.tensor({1, 2, 3}) is float32, so ours adds how to make indices)
      { function() F.nll_loss(inp(), torch.tensor({ 1, 2, 3 })) end, 'nn.functional.nll_loss: expected scalar type Long but found Float' },
      { function() F.cross_entropy(inp(), torch.tensor({ 1, 2, 3 }, { dtype = torch.float64 })) end,
        "nn.functional.cross_entropy: expected scalar type Long but found Double: class indices are int64 (torch.tensor({...}, {dtype=torch.int64}) or target:long()); a torch.float64 target of size [3] would be class probabilities of the input's size [3, 3]" },
      { function() require('moontorch.nn').CrossEntropyLoss()(inp(), torch.tensor({ 1, 2, 3 })) end, 'expected scalar type Long but found Float: class indices are int64' },
      { function() F.cross_entropy(inp(), torch.ones(3, 2)) end,
        'nn.functional.cross_entropy: Expected input and target of the same size for class probabilities, got [3, 3] and [3, 2]' },
      { function() F.nll_loss(X3(), long({ 1, 2 })) end, 'Expected target size [2, 4], got [2]' },
      { function() F.nll_loss(inp(), long({ { 1, 2, 3 } })) end, '0D or 1D target tensor expected, multi-target not supported' },
      { function() F.nll_loss(inp(), long({ 1, 2, 3 }), torch.ones(2)) end,
        'weight tensor should be defined either for all 3 classes or no classes but got weight tensor of shape: [2]' },
      { function() F.cross_entropy(inp(), long({ 1, 2, 3 }), { label_smoothing = 1.5 }) end,
        'label_smoothing must be between 0.0 and 1.0. Got: 1.5' },
      { function() F.mse_loss(torch.ones(2), torch.ones(2), 'avg') end, 'nn.functional.mse_loss: avg is not a valid value for reduction' },
      { function() F.kl_div(torch.ones(2), torch.ones(2), { reduction = 'foo' }) end, 'foo is not a valid value for reduction' },
      { function() F.binary_cross_entropy(torch.tensor({ 0.5, 1.5 }), torch.tensor({ 0, 1 })) end,
        'all elements of input should be between 0 and 1' },
      { function() F.binary_cross_entropy(torch.tensor({ 0.5, 0.5 }), torch.tensor({ 0, 1, 1 })) end,
        'Using a target size (torch.Size([3])) that is different to the input size (torch.Size([2])) is deprecated. Please ensure they have the same size.' },
      { function() F.binary_cross_entropy_with_logits(torch.ones(2), torch.ones(3)) end,
        'Target size (torch.Size([3])) must be the same as input size (torch.Size([2]))' },
      { function() F.gaussian_nll_loss(torch.ones(2, 3), torch.ones(2, 3), -torch.ones(2, 3)) end, 'var has negative entry/entries' },
      { function() F.gaussian_nll_loss(torch.ones(2, 3), torch.ones(2, 3), torch.ones(3, 2)) end, 'var is of incorrect size' },
      { function() F.smooth_l1_loss(torch.ones(2), torch.ones(2), { beta = -1 }) end, 'smooth_l1_loss does not support negative values for beta.' },
      { function() F.huber_loss(torch.ones(2), torch.ones(2), { delta = 0 }) end, 'huber_loss does not support non-positive values for delta.' },
      { function() F.linear(3, torch.ones(2, 2)) end, 'moontorch.nn.functional.linear: input must be a tensor' },
      { function() F.linear(torch.ones(2, 3), 'w') end, 'moontorch.nn.functional.linear: weight must be a tensor' },
      { function() F.linear(torch.ones(2, 3), torch.ones(4, 5)) end, '2x3 and 5x4' },
      { function() F.bilinear(torch.ones(2, 3), torch.ones(2, 4), torch.ones(5, 3, 5)) end,
        'input2 size does not match weight size: got 4 but expected 5' },
      { function() F.dropout(torch.ones(2), 1.5) end, 'nn.functional.dropout: dropout probability has to be between 0 and 1, but got 1.5' },
      { function() F.dropout(torch.ones(2), -0.1) end, 'dropout probability has to be between 0 and 1, but got -0.1' },
      { function() F.dropout1d(torch.ones(2, 3, 4, 5)) end, 'dropout1d: Expected 2D or 3D input, but received a 4D input.' },
      { function() F.glu(torch.ones(2, 3)) end, 'Halving dimension must be even, but dimension 2 is size 3' },
      { function() F.layer_norm(torch.ones(2, 3), { 4 }) end,
        'Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]' },
      { function() F.group_norm(torch.ones(2, 3, 4), 2) end,
        'Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 3, 4] and num_groups=2' },
      { function() F.prelu(torch.ones(2, 3), torch.ones(4)) end,
        'Mismatch of parameter numbers and input channel size. Found parameter numbers = 4 and channel size = 3.' },
      { function() F.embedding(long({ 6 }), torch.ones(5, 2)) end, 'index out of range in self' },
      { function() F.embedding(long({ 1 }), torch.ones(3, 2), 4) end, 'Padding_idx must be within num_embeddings' },
      -- PyTorch 1.13: "argument 'padding_idx' (position 3) must be int, not float", "argument 'num_groups' ..."
      { function() F.embedding(long({ 1 }), torch.ones(3, 2), 1.5) end,
        'moontorch.nn.functional.embedding: padding_idx must be an integer (got 1.5)' },
      { function() F.group_norm(torch.ones(2, 3, 2), 1.5) end,
        'moontorch.nn.functional.group_norm: num_groups must be an integer (got 1.5)' },
      { function() F.pad(X3(), { 1, 2, 3 }) end, 'Padding length must be divisible by 2' },
      { function() F.pad(X3(), { 1, 2, 3, 4, 5, 6, 7, 8 }) end, 'Padding length too large' },
      { function() F.pad(X3(), { 1, 2 }, 'foo') end, 'Unrecognised padding mode foo' },
      { function() F.pad(X3(), { 1, 1 }, 'reflect', 1.0) end, 'Padding mode "reflect" doesn\'t take in value argument' },
      { function() F.pad(X3(), { 4, 4 }, 'reflect') end,
        'Padding size should be less than the corresponding input dimension, but got: padding (4, 4) at dimension 3 of input [2, 3, 4]' },
      { function() F.pad(X3(), { 5, 0 }, 'circular') end, 'Padding value causes wrapping around more than once.' },
      { function() F.gelu(X(), 'fast') end, 'approximate argument must be either none or tanh' },
      { function() F.relu('x') end, 'moontorch.nn.functional.relu: input must be a tensor' },
      { function() F.softmax(nil, 1) end, 'moontorch.nn.functional.softmax: input must be a tensor' },
      { function() F.cosine_similarity(torch.ones(2, 3), torch.ones(2, 4)) end,
        'The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 2' },
      { function() F.leaky_relu(X(), { slope = 0.2 }) end, "unexpected option 'slope'" },
      { function() F.softplus(X(), 2, { beta = 3 }) end, "got multiple values for argument 'beta'" },
    }
    for _, c in ipairs(cases) do
      local err = H.errors_with(c[1], c[2])
      assert.is_truthy(tostring(err):find('nn_functional_spec.lua:', 1, true), 'raised at the caller: ' .. tostring(err))
    end
  end)
end)

describe('nn.functional gradients (gradcheck, float64)', function()
  local d = torch.float64
  local function r(...)
    return torch.randn({ ... }, { dtype = d, requires_grad = true })
  end
  local function check(name, fn, inputs)
    local ok, err = pcall(torch.autograd.gradcheck, fn, inputs)
    assert(ok and err, name .. ': ' .. tostring(err))
  end
  it('activations, norms, linear layers, distances, padding and losses', function()
    torch.manual_seed(0)
    -- activations away from their kinks (finite differences are not defined there)
    local x = (torch.rand(3, 4, { dtype = d }) * 6 - 3):requires_grad_()
    check('selu', F.selu, { x })
    check('celu', function(t) return F.celu(t, 0.7) end, { x })
    check('mish', F.mish, { x })
    check('hardswish', function(t) return F.hardswish(t * 0.9) end, { x })
    check('logsigmoid', F.logsigmoid, { x })
    check('softplus', function(t) return F.softplus(t, 2, 4) end, { x })
    check('softsign', F.softsign, { x })
    check('tanhshrink', F.tanhshrink, { x })
    check('glu', F.glu, { x })
    check('softmin', function(t) return F.softmin(t, 1) end, { x })
    check('prelu', F.prelu, { r(2, 3, 2), torch.tensor({ 0.1, -0.5, 2.0 }, { dtype = d, requires_grad = true }) })
    check('layer_norm', function(t, w, b) return F.layer_norm(t, { 4 }, w, b) end, { r(2, 3, 4), r(4), r(4) })
    check('group_norm', function(t, w, b) return F.group_norm(t, 2, w, b) end, { r(2, 4, 3), r(4), r(4) })
    check('normalize', function(t) return F.normalize(t, 3, 1) end, { r(3, 4) })
    check('linear', F.linear, { r(2, 3, 4), r(5, 4), r(5) })
    check('linear 4-D', F.linear, { r(2, 1, 2, 4), r(5, 4), r(5) })
    check('bilinear', F.bilinear, { r(3, 2), r(3, 4), r(5, 2, 4), r(5) })
    check('cosine_similarity', F.cosine_similarity, { r(3, 4), r(3, 4) })
    check('pairwise_distance', F.pairwise_distance, { r(3, 4), r(3, 4) })
    check('embedding', function(w) return F.embedding(long({ { 1, 3 }, { 3, 2 } }), w) end, { r(4, 2) })
    check('pad reflect', function(t) return F.pad(t, { 2, 1, 1, 2 }, 'reflect') end, { r(1, 2, 3, 3) })
    check('pad circular', function(t) return F.pad(t, { 1, 2 }, 'circular') end, { r(2, 3) })
    check('pad constant', function(t) return F.pad(t, { 1, -1, 2, 0 }, { value = 3 }) end, { r(2, 3) })
    local tgt = long({ { 1, 3 }, { 2, 2 } })
    check('cross_entropy', function(t, w) return F.cross_entropy(t, tgt, { weight = w, label_smoothing = 0.2 }) end,
      { r(2, 3, 2), torch.rand(3, { dtype = d }):requires_grad_() })
    check('cross_entropy probs', function(t, p) return F.cross_entropy(t, p) end, { r(4, 3), torch.rand(4, 3, { dtype = d }):requires_grad_() })
    local p = torch.rand(5, { dtype = d }) * 0.8 + 0.1
    check('binary_cross_entropy', function(a, b) return F.binary_cross_entropy(a, b) end, { p:requires_grad_(), torch.rand(5, { dtype = d }):requires_grad_() })
    local q, pw = torch.rand(5, { dtype = d }), torch.rand(5, { dtype = d }) + 0.5
    check('bce_with_logits', function(a) return F.binary_cross_entropy_with_logits(a, q, { pos_weight = pw }) end, { r(5) })
    check('kl_div', function(a, b) return F.kl_div(a, b, { reduction = 'batchmean' }) end, { r(3, 4), torch.rand(3, 4, { dtype = d }):requires_grad_() })
    check('gaussian_nll_loss', function(a, v) return F.gaussian_nll_loss(a, torch.zeros(3, 2, { dtype = d }), v) end,
      { r(3, 2), (torch.rand(3, 2, { dtype = d }) + 0.5):requires_grad_() })
    check('huber_loss', function(a) return F.huber_loss(a, torch.zeros(6, { dtype = d }), { delta = 0.5 }) end, { r(6) })
    check('triplet_margin_loss', function(a, b, c) return F.triplet_margin_loss(a, b, c, { margin = 5 }) end, { r(3, 4), r(3, 4), r(3, 4) })
    check('cosine_embedding_loss', function(a, b) return F.cosine_embedding_loss(a, b, torch.tensor({ 1, -1, 1 }, { dtype = d }), { margin = -1 }) end,
      { r(3, 4), r(3, 4) })
  end)
end)
