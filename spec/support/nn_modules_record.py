# Records PyTorch 1.13's results for the specs of the modules part of issue 12
# (spec/activation_modules_spec.lua, loss_modules_spec.lua, embedding_spec.lua,
# normalization_spec.lua, nn_utils_spec.lua):
#   /usr/bin/python3 spec/support/nn_modules_record.py > spec/support/nn_modules_wants.lua
# Every input is recorded beside the results (float64 unless said), so the specs rebuild them
# exactly; indices are written as PyTorch takes them (0-based) and the specs add 1.
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
W = {}


def lua(v, ind=''):
    if isinstance(v, torch.Tensor):
        v = v.detach().tolist()
    if isinstance(v, dict):
        items = []
        for k in v:
            items.append('%s  [%s] = %s' % (ind, lua(k), lua(v[k], ind + '  ')))
        return '{\n' + ',\n'.join(items) + '\n' + ind + '}'
    if isinstance(v, (list, tuple)):
        return '{' + ', '.join(lua(x, ind) for x in v) + '}'
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, str):
        return repr(v)
    if v is None:
        return 'nil'
    if isinstance(v, float):
        if math.isnan(v):
            return '0/0'
        if math.isinf(v):
            return 'math.huge' if v > 0 else '-math.huge'
        return repr(v)
    return str(v)


def rnd(*shape, seed=0, scale=2.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(*shape, generator=g) * 2 - 1) * scale


# ------------------------------------------------------------------ activations (module, F)
def act(name, mod, x, g=None):
    x = x.clone().requires_grad_(True)
    y = mod(x)
    g = rnd(*y.shape, seed=99) if g is None else g
    (y * g).sum().backward()
    rec = {'x': x, 'g': g, 'out': y, 'dx': x.grad}
    for pn, p in mod.named_parameters():
        rec['param_' + pn] = p.detach().clone()
        rec['grad_' + pn] = p.grad
    W['act_' + name] = rec


x34 = rnd(3, 4, seed=1, scale=4.0)
# (not at x = 3 exactly: PyTorch 1.13 gives hardswish a gradient of 1.5 there in its scalar loop and 1 in
# its vector loop)
x34[0, 0], x34[0, 1], x34[0, 2] = -2.5, 2.75, 0.25
acts = {
    'ReLU6': nn.ReLU6(), 'ELU': nn.ELU(0.7), 'SELU': nn.SELU(), 'CELU': nn.CELU(1.5), 'GELU': nn.GELU(),
    'GELU_tanh': nn.GELU('tanh'), 'SiLU': nn.SiLU(), 'Mish': nn.Mish(), 'Hardtanh': nn.Hardtanh(-2.0, 1.5),
    'Hardsigmoid': nn.Hardsigmoid(), 'Hardswish': nn.Hardswish(), 'Softplus': nn.Softplus(2, 3),
    'Softsign': nn.Softsign(), 'Threshold': nn.Threshold(0.5, -1.0), 'Softmin': nn.Softmin(1),
    'GLU': nn.GLU(), 'LogSigmoid': nn.LogSigmoid(), 'Tanhshrink': nn.Tanhshrink(),
    'Hardshrink': nn.Hardshrink(0.7), 'Softshrink': nn.Softshrink(0.7), 'LeakyReLU': nn.LeakyReLU(0.2),
}
for k, m in acts.items():
    act(k, m, x34)
act('Softmax2d', nn.Softmax2d(), rnd(2, 3, 2, 2, seed=2))
p = nn.PReLU(3)
with torch.no_grad():
    p.weight.copy_(torch.tensor([0.1, -0.3, 0.6]))
act('PReLU', p, rnd(2, 3, 4, seed=3))
act('PReLU1', nn.PReLU(), rnd(2, 3, seed=4))

# ------------------------------------------------------------------ dropout masks (float32)
def drop(name, fn, shape, seed):
    torch.manual_seed(seed)
    W['drop_' + name] = {'seed': seed, 'shape': list(shape), 'out': fn(torch.ones(*shape, dtype=torch.float32))}


drop('Dropout', nn.Dropout(0.3), (4, 5), 0)
drop('Dropout1d', nn.Dropout1d(0.5), (3, 4, 2), 1)
drop('Dropout1d_unbatched', nn.Dropout1d(0.5), (4, 3), 2)
drop('Dropout2d', nn.Dropout2d(0.4), (2, 5, 2, 2), 3)
drop('Dropout3d', nn.Dropout3d(0.5), (2, 3, 1, 2, 2), 4)
drop('AlphaDropout', nn.AlphaDropout(0.2), (3, 5), 5)
drop('FeatureAlphaDropout', nn.FeatureAlphaDropout(0.5), (2, 4, 3), 6)

# ------------------------------------------------------------------ losses
def loss(name, fn, inputs, grads, reductions=('none', 'mean', 'sum')):
    rec = {'inputs': {k: v for k, v in inputs.items()}}
    for r in reductions:
        ins = {k: (v.clone().requires_grad_(True) if k in grads else v) for k, v in inputs.items()}
        out = fn(ins, r)
        g = rnd(*out.shape, seed=98) if out.dim() > 0 else torch.tensor(1.0)
        (out * g).sum().backward()
        rec[r] = {'out': out, 'g': g}
        for k in grads:
            rec[r]['d_' + k] = ins[k].grad
    W['loss_' + name] = rec


x = rnd(4, 3, seed=10)
t = rnd(4, 3, seed=11)
loss('L1Loss', lambda i, r: nn.L1Loss(reduction=r)(i['x'], i['t']), {'x': x, 't': t}, ['x', 't'])
loss('MSELoss', lambda i, r: nn.MSELoss(reduction=r)(i['x'], i['t']), {'x': x, 't': t}, ['x', 't'])
loss('SmoothL1Loss', lambda i, r: nn.SmoothL1Loss(reduction=r, beta=0.8)(i['x'], i['t']), {'x': x, 't': t}, ['x', 't'])
loss('HuberLoss', lambda i, r: nn.HuberLoss(reduction=r, delta=0.6)(i['x'], i['t']), {'x': x, 't': t}, ['x', 't'])
loss('SoftMarginLoss', lambda i, r: nn.SoftMarginLoss(reduction=r)(i['x'], i['y']),
     {'x': x, 'y': torch.tensor([[1., -1, 1], [-1, -1, 1], [1, 1, 1], [-1, 1, -1]])}, ['x'])
prob = torch.sigmoid(rnd(4, 3, seed=12))
tprob = torch.rand(4, 3, generator=torch.Generator().manual_seed(13))
wcol = torch.tensor([0.5, 1.5, 2.0])
loss('BCELoss', lambda i, r: nn.BCELoss(weight=i['w'], reduction=r)(i['p'], i['t']), {'p': prob, 't': tprob, 'w': wcol}, ['p', 't'])
loss('BCEWithLogitsLoss', lambda i, r: nn.BCEWithLogitsLoss(weight=i['w'], pos_weight=i['pw'], reduction=r)(i['x'], i['t']),
     {'x': x, 't': tprob, 'w': wcol, 'pw': torch.tensor([1.0, 2.0, 0.5])}, ['x', 't'])
logits = rnd(5, 4, seed=14)
cls = torch.tensor([0, 3, 1, 1, 2])
cw = torch.tensor([1.0, 0.5, 2.0, 1.5])
loss('CrossEntropyLoss', lambda i, r: nn.CrossEntropyLoss(reduction=r)(i['x'], i['t']), {'x': logits, 't': cls}, ['x'])
loss('CrossEntropyLoss_full', lambda i, r: nn.CrossEntropyLoss(weight=i['w'], ignore_index=1, label_smoothing=0.1, reduction=r)(i['x'], i['t']),
     {'x': logits, 't': cls, 'w': cw}, ['x'])
ptarget = torch.softmax(rnd(5, 4, seed=15), 1)
loss('CrossEntropyLoss_prob', lambda i, r: nn.CrossEntropyLoss(weight=i['w'], label_smoothing=0.2, reduction=r)(i['x'], i['t']),
     {'x': logits, 't': ptarget, 'w': cw}, ['x', 't'])
x4d = rnd(2, 4, 3, 2, seed=16)
t4d = torch.tensor([[[0, 1], [2, 3], [3, 1]], [[1, 1], [0, 2], [3, 0]]])
loss('CrossEntropyLoss_spatial', lambda i, r: nn.CrossEntropyLoss(weight=i['w'], ignore_index=2, reduction=r)(i['x'], i['t']),
     {'x': x4d, 't': t4d, 'w': cw}, ['x'])
loss('NLLLoss', lambda i, r: nn.NLLLoss(weight=i['w'], ignore_index=3, reduction=r)(i['x'], i['t']),
     {'x': torch.log_softmax(logits, 1), 't': cls, 'w': cw}, ['x'])
logp = torch.log_softmax(rnd(3, 4, seed=17), 1)
loss('KLDivLoss', lambda i, r: nn.KLDivLoss(reduction=r)(i['x'], i['t']),
     {'x': logp, 't': torch.softmax(rnd(3, 4, seed=18), 1)}, ['x', 't'], ('none', 'mean', 'sum', 'batchmean'))
loss('KLDivLoss_log', lambda i, r: nn.KLDivLoss(reduction=r, log_target=True)(i['x'], i['t']),
     {'x': logp, 't': torch.log_softmax(rnd(3, 4, seed=18), 1)}, ['x', 't'], ('none', 'mean', 'sum', 'batchmean'))
a1, a2 = rnd(5, seed=19), rnd(5, seed=20)
ysign = torch.tensor([1., -1, 1, -1, -1])
loss('MarginRankingLoss', lambda i, r: nn.MarginRankingLoss(margin=0.3, reduction=r)(i['a'], i['b'], i['y']),
     {'a': a1, 'b': a2, 'y': ysign}, ['a', 'b'])
loss('HingeEmbeddingLoss', lambda i, r: nn.HingeEmbeddingLoss(margin=1.2, reduction=r)(i['x'], i['y']),
     {'x': rnd(5, seed=21), 'y': ysign}, ['x'])
e1, e2 = rnd(4, 3, seed=22), rnd(4, 3, seed=23)
loss('CosineEmbeddingLoss', lambda i, r: nn.CosineEmbeddingLoss(margin=0.2, reduction=r)(i['a'], i['b'], i['y']),
     {'a': e1, 'b': e2, 'y': torch.tensor([1., -1, -1, 1])}, ['a', 'b'])
an, po, ne = rnd(4, 3, seed=24), rnd(4, 3, seed=25), rnd(4, 3, seed=26)
loss('TripletMarginLoss', lambda i, r: nn.TripletMarginLoss(margin=0.8, p=1.5, swap=True, reduction=r)(i['a'], i['p'], i['n']),
     {'a': an, 'p': po, 'n': ne}, ['a', 'p', 'n'])
loss('TripletMarginWithDistanceLoss', lambda i, r: nn.TripletMarginWithDistanceLoss(
    distance_function=lambda u, v: 1 - F.cosine_similarity(u, v), margin=0.5, swap=True, reduction=r)(i['a'], i['p'], i['n']),
     {'a': an, 'p': po, 'n': ne}, ['a', 'p', 'n'])
loss('TripletMarginWithDistanceLoss_default', lambda i, r: nn.TripletMarginWithDistanceLoss(reduction=r)(i['a'], i['p'], i['n']),
     {'a': an, 'p': po, 'n': ne}, ['a', 'p', 'n'])
loss('MultiLabelSoftMarginLoss', lambda i, r: nn.MultiLabelSoftMarginLoss(weight=i['w'], reduction=r)(i['x'], i['t']),
     {'x': x, 't': torch.tensor([[1., 0, 1], [0, 0, 1], [1, 1, 1], [0, 1, 0]]), 'w': wcol}, ['x'])
loss('MultiLabelMarginLoss', lambda i, r: nn.MultiLabelMarginLoss(reduction=r)(i['x'], i['t']),
     {'x': rnd(3, 4, seed=27), 't': torch.tensor([[3, 0, -1, 1], [1, 2, 3, -1], [-1, 0, 1, 2]])}, ['x'])
loss('MultiLabelMarginLoss_1d', lambda i, r: nn.MultiLabelMarginLoss(reduction=r)(i['x'], i['t']),
     {'x': rnd(4, seed=28), 't': torch.tensor([2, 0, -1, 3])}, ['x'])
loss('MultiMarginLoss', lambda i, r: nn.MultiMarginLoss(reduction=r)(i['x'], i['t']),
     {'x': logits, 't': cls}, ['x'])
loss('MultiMarginLoss_p2', lambda i, r: nn.MultiMarginLoss(p=2, margin=0.7, weight=i['w'], reduction=r)(i['x'], i['t']),
     {'x': logits, 't': cls, 'w': cw}, ['x'])
rates = torch.rand(4, 3, generator=torch.Generator().manual_seed(29)) * 3
counts = torch.tensor([[0., 1, 2], [3, 0, 5], [1, 1, 4], [2, 7, 0]])
loss('PoissonNLLLoss', lambda i, r: nn.PoissonNLLLoss(reduction=r)(i['x'], i['t']), {'x': x, 't': counts}, ['x'])
loss('PoissonNLLLoss_full', lambda i, r: nn.PoissonNLLLoss(log_input=False, full=True, eps=1e-6, reduction=r)(i['x'], i['t']),
     {'x': rates + 0.1, 't': counts}, ['x'])
var = torch.rand(4, 3, generator=torch.Generator().manual_seed(30)) + 0.1
loss('GaussianNLLLoss', lambda i, r: nn.GaussianNLLLoss(reduction=r)(i['x'], i['t'], i['v']), {'x': x, 't': t, 'v': var}, ['x', 't', 'v'])
loss('GaussianNLLLoss_full', lambda i, r: nn.GaussianNLLLoss(full=True, eps=0.3, reduction=r)(i['x'], i['t'], i['v']),
     {'x': x, 't': t, 'v': var[:, :1].clone()}, ['x', 'v'])
# CTC: the gradient recorded with respect to the logits (through log_softmax, as CTC is used)
ctc_logits = rnd(6, 3, 5, seed=31)
loss('CTCLoss', lambda i, r: nn.CTCLoss(reduction=r)(i['x'].log_softmax(2), i['t'], i['il'], i['tl']),
     {'x': ctc_logits, 't': torch.tensor([[1, 2, 2], [3, 1, 0], [4, 0, 0]]), 'il': torch.tensor([6, 5, 4]),
      'tl': torch.tensor([3, 2, 1])}, ['x'])
loss('CTCLoss_blank_concat', lambda i, r: nn.CTCLoss(blank=4, reduction=r)(i['x'].log_softmax(2), i['t'], i['il'], i['tl']),
     {'x': ctc_logits, 't': torch.tensor([0, 1, 1, 2, 3, 3]), 'il': torch.tensor([6, 6, 4]), 'tl': torch.tensor([3, 0, 3])}, ['x'])
loss('CTCLoss_zero_infinity', lambda i, r: nn.CTCLoss(reduction=r, zero_infinity=True)(i['x'].log_softmax(2), i['t'], i['il'], i['tl']),
     {'x': ctc_logits, 't': torch.tensor([[1, 1, 1], [3, 1, 0], [4, 0, 0]]), 'il': torch.tensor([4, 5, 4]),
      'tl': torch.tensor([3, 2, 1])}, ['x'])
loss('CTCLoss_unbatched', lambda i, r: nn.CTCLoss(reduction=r)(i['x'].log_softmax(1), i['t'], i['il'], i['tl']),
     {'x': ctc_logits[:, 0], 't': torch.tensor([2, 1]), 'il': torch.tensor(6), 'tl': torch.tensor(2)}, ['x'])

# ------------------------------------------------------------------ normalisation modules
def module_case(name, m, inputs, train=True, g_seed=97):
    m.train(train)
    m.zero_grad()
    sd = {k: v.clone() for k, v in m.state_dict().items()}
    ins = [v.clone().requires_grad_(True) for v in inputs]
    out = m(*ins)
    g = rnd(*out.shape, seed=g_seed)
    (out * g).sum().backward()
    rec = {'state': sd, 'inputs': inputs, 'out': out, 'g': g,
           'dinputs': [i.grad if i.grad is not None else torch.zeros(()) for i in ins],
           'grads': {k: p.grad.clone() for k, p in m.named_parameters() if p.grad is not None},
           'after': {k: v.clone() for k, v in m.state_dict().items()}}
    W['mod_' + name] = rec


def randomise(m, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.rand(p.shape, generator=g) * 2 - 1)
    return m


module_case('LayerNorm', randomise(nn.LayerNorm([3, 4]), 40), [rnd(2, 3, 4, seed=41)])
module_case('LayerNorm_noaffine', nn.LayerNorm(4, eps=1e-3, elementwise_affine=False), [rnd(5, 4, seed=42)])
module_case('GroupNorm', randomise(nn.GroupNorm(2, 4), 43), [rnd(3, 4, 5, seed=44)])
inorm = randomise(nn.InstanceNorm1d(3, affine=True, track_running_stats=True, momentum=0.2), 45)
with torch.no_grad():
    inorm.running_mean.copy_(torch.tensor([0.1, -0.2, 0.3]))
    inorm.running_var.copy_(torch.tensor([1.5, 0.5, 2.0]))
module_case('InstanceNorm1d_train', inorm, [rnd(2, 3, 5, seed=46)])
module_case('InstanceNorm1d_eval', inorm, [rnd(2, 3, 5, seed=47)], train=False)
module_case('InstanceNorm2d', nn.InstanceNorm2d(2), [rnd(2, 2, 3, 3, seed=48)])
module_case('InstanceNorm2d_unbatched', nn.InstanceNorm2d(2), [rnd(2, 3, 3, seed=49)])
module_case('InstanceNorm3d', randomise(nn.InstanceNorm3d(2, affine=True), 50), [rnd(1, 2, 2, 2, 3, seed=51)])
module_case('LocalResponseNorm3d', nn.LocalResponseNorm(3, alpha=0.5, beta=0.8, k=1.5), [rnd(2, 5, 3, seed=52)])
module_case('LocalResponseNorm4d', nn.LocalResponseNorm(2), [rnd(2, 4, 2, 3, seed=53, scale=20.0)])
module_case('Bilinear', randomise(nn.Bilinear(3, 2, 4), 54), [rnd(5, 3, seed=55), rnd(5, 2, seed=56)])
module_case('Bilinear_nobias', randomise(nn.Bilinear(2, 2, 3, bias=False), 57), [rnd(2, 4, 2, seed=58), rnd(2, 4, 2, seed=59)])
module_case('CosineSimilarity', nn.CosineSimilarity(dim=0, eps=1e-6), [rnd(3, 4, seed=60), rnd(3, 4, seed=61)])
module_case('PairwiseDistance', nn.PairwiseDistance(p=3, keepdim=True), [rnd(3, 4, seed=62), rnd(3, 4, seed=63)])
module_case('Flatten', nn.Flatten(0, 1), [rnd(2, 3, 2, seed=64)])
module_case('Unflatten', nn.Unflatten(1, (2, 2)), [rnd(3, 4, seed=65)])

# ------------------------------------------------------------------ embeddings
emb_w = rnd(6, 3, seed=70)
def emb_case(name, m, inputs, g_seed=96):
    with torch.no_grad():
        m.weight.copy_(emb_w)
    sd = {k: v.clone() for k, v in m.state_dict().items()}
    out = m(*inputs)
    g = rnd(*out.shape, seed=g_seed)
    (out * g).sum().backward()
    W['emb_' + name] = {'state': sd, 'inputs': inputs, 'out': out, 'g': g, 'dweight': m.weight.grad,
                        'after': m.weight.detach().clone()}


idx = torch.tensor([[0, 2, 5], [2, 1, 2]])
emb_case('Embedding', nn.Embedding(6, 3), [idx])
emb_case('Embedding_padding', nn.Embedding(6, 3, padding_idx=2), [idx])
emb_case('Embedding_max_norm', nn.Embedding(6, 3, max_norm=0.9, norm_type=1.5), [idx])
emb_case('Embedding_freq', nn.Embedding(6, 3, scale_grad_by_freq=True, padding_idx=-1), [torch.tensor([5, 2, 2, 1, 2, 5])])
flat = torch.tensor([1, 2, 4, 5, 4, 3, 2, 0])
offs = torch.tensor([0, 2, 2, 5])
emb_case('EmbeddingBag_mean', nn.EmbeddingBag(6, 3), [flat, offs])
emb_case('EmbeddingBag_sum_psw', nn.EmbeddingBag(6, 3, mode='sum'), [flat, offs, rnd(8, seed=71)])
emb_case('EmbeddingBag_max', nn.EmbeddingBag(6, 3, mode='max'), [flat, offs])
# (include_last_offset with a last offset short of the input's end corrupts PyTorch 1.13's heap: not recorded)
emb_case('EmbeddingBag_mean_pad_last', nn.EmbeddingBag(6, 3, include_last_offset=True, padding_idx=2),
         [flat, torch.tensor([0, 2, 2, 5, 8])])
emb_case('EmbeddingBag_max_pad', nn.EmbeddingBag(6, 3, mode='max', padding_idx=4, max_norm=1.0), [flat, offs])
emb_case('EmbeddingBag_2d_sum', nn.EmbeddingBag(6, 3, mode='sum', padding_idx=0), [idx])
# (not EmbeddingBag with scale_grad_by_freq: PyTorch 1.13's CPU backward divides the wrong rows -- for
# indices [1, 2, 4, 5, 4, 3, 2, 0] in mode sum the gradient of row 4, used twice, is 2 and that of row 3,
# used once, 0.5; spec/embedding_spec.lua checks the documented division by each row's count instead)

# ------------------------------------------------------------------ nn.utils
def clip_case(name, norm_type, max_norm):
    ps = [torch.nn.Parameter(rnd(3, 2, seed=80)), torch.nn.Parameter(rnd(4, seed=81)), torch.nn.Parameter(rnd(2, seed=82))]
    ps[0].grad = rnd(3, 2, seed=83, scale=3.0)
    ps[1].grad = rnd(4, seed=84, scale=3.0)
    grads = [ps[0].grad.clone(), ps[1].grad.clone()]
    total = torch.nn.utils.clip_grad_norm_(ps, max_norm, norm_type)
    W['clip_' + name] = {'grads': grads, 'norm_type': norm_type, 'max_norm': max_norm, 'total': total,
                         'after': [ps[0].grad, ps[1].grad]}


clip_case('l2', 2.0, 1.0)
clip_case('inf', math.inf, 1.5)
clip_case('l1', 1.0, 100.0)
clip_case('l3', 3.0, 0.5)

print('-- PyTorch %s results for the modules part of issue 12; written by' % torch.__version__)
print('--   /usr/bin/python3 spec/support/nn_modules_record.py > spec/support/nn_modules_wants.lua')
print('-- (do not edit: regenerate)')
print('return ' + lua(W))
