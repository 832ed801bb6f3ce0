# Records PyTorch 1.13's results for the specs of issue 24 ("See inside and reshape models"):
# spec/parametrize_spec.lua, spec/prune_spec.lua, spec/fx_spec.lua, spec/profiler_spec.lua:
#   /usr/bin/python3 spec/support/inspect_record.py > spec/support/inspect_wants.lua
# Modules are made after torch.manual_seed(0) (moontorch draws the same initial numbers), their
# inputs written out in full; dims and indices are PyTorch's (0-based) unless said.
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as P
from torch.nn.utils import parametrizations as PZ

W = {}


def lua(v, ind=''):
    if isinstance(v, torch.Tensor):
        v = v.detach().tolist()
    if isinstance(v, torch.Size):
        v = list(v)
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
        return '[==[' + v + ']==]' if '\n' in v or "'" in v else repr(v)
    if v is None:
        return 'nil'
    if isinstance(v, float):
        if math.isnan(v):
            return '0/0'
        if math.isinf(v):
            return 'math.huge' if v > 0 else '-math.huge'
        return repr(v)
    return str(v)


def snap(d):
    # tensors copied now (they may change in place after)
    return {k: (v.detach().clone() if isinstance(v, torch.Tensor) else v) for k, v in d.items()}


# ------------------------------------------------------------------ parametrizations
class Sym(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


class SymR(Sym):
    def right_inverse(self, X):
        return X


class Double(nn.Module):
    def forward(self, X):
        return X * 2

    def right_inverse(self, X):
        return X / 2


class SumOf(nn.Module):
    def forward(self, A, B):
        return A + B

    def right_inverse(self, X):
        return X, torch.zeros_like(X)


torch.manual_seed(0)
m = nn.Linear(3, 3)
P.register_parametrization(m, 'weight', Sym())
rec = {'weight': m.weight, 'repr': repr(m), 'keys': list(m.state_dict().keys())}
m(torch.ones(2, 3)).sum().backward()
rec['grad'] = m.parametrizations.weight.original.grad
W['p_sym'] = rec

torch.manual_seed(0)
m = nn.Linear(3, 3)
P.register_parametrization(m, 'weight', Double())
P.register_parametrization(m, 'weight', SymR())
rec = snap({'weight': m.weight, 'original': m.parametrizations.weight.original, 'repr': repr(m)})
m.weight = torch.tensor([[1., 2, 3], [2, 5, 6], [3, 6, 9]])
rec['set_weight'] = m.weight
rec['set_original'] = m.parametrizations.weight.original
W['p_chain'] = rec

torch.manual_seed(0)
m = nn.Linear(2, 2)
P.register_parametrization(m, 'weight', SumOf())
rec = snap({'keys': list(m.state_dict().keys()), 'original0': m.parametrizations.weight.original0,
            'original1': m.parametrizations.weight.original1})
m.weight = torch.tensor([[1., 2], [3, 4]])
rec['set_original0'] = m.parametrizations.weight.original0
rec['set_original1'] = m.parametrizations.weight.original1
W['p_several'] = rec

torch.manual_seed(0)
m = nn.Linear(3, 3)
P.register_parametrization(m, 'weight', Double())
o = m.parametrizations.weight.original
P.remove_parametrizations(m, 'weight')
rec = {'leave': m.weight, 'same': m.weight is o, 'repr': repr(m)}
torch.manual_seed(0)
m = nn.Linear(3, 3)
P.register_parametrization(m, 'weight', Double())
P.remove_parametrizations(m, 'weight', leave_parametrized=False)
rec['original'] = m.weight
W['p_remove'] = rec

# orthogonal: the weight after registration, then after one SGD step (lr 0.1) on (m(x)^2).sum(),
# x = torch.randn(2, in) drawn after the registration
orth = []
for shape, mp, triv in [((3, 5), None, True), ((4, 4), None, True), ((4, 4), 'cayley', True),
                        ((3, 5), 'matrix_exp', True), ((5, 3), 'householder', True), ((4, 4), 'householder', True),
                        ((5, 3), None, False), ((3, 5), 'householder', False)]:
    torch.manual_seed(0)
    m = nn.Linear(*shape)
    PZ.orthogonal(m, orthogonal_map=mp, use_trivialization=triv)
    w0 = m.weight.detach().clone()
    orig = m.parametrizations.weight.original.detach().clone()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    x = torch.randn(2, shape[0])
    m(x).pow(2).sum().backward()
    opt.step()
    orth.append({'shape': shape, 'map': mp or 'nil', 'triv': triv, 'chosen': m.parametrizations.weight[0].orthogonal_map.name,
                 'w0': w0, 'original': orig, 'w1': m.weight, 'keys': list(m.state_dict().keys())})
W['p_orth'] = orth
torch.manual_seed(0)
m = nn.Linear(3, 3)
PZ.orthogonal(m)
W['p_orth_repr'] = repr(m)

torch.manual_seed(0)
m = nn.Linear(3, 2)
PZ.spectral_norm(m)
rec = {'keys': list(m.state_dict().keys()), 'u': m.parametrizations.weight[0]._u.clone(),
       'v': m.parametrizations.weight[0]._v.clone(), 'repr': repr(m)}
x = torch.tensor([[1., 2, 3]])
y = m(x)
y.sum().backward()
rec['y'] = y
rec['grad'] = m.parametrizations.weight.original.grad
rec['u1'] = m.parametrizations.weight[0]._u
m.eval()
rec['y_eval'] = m(x)
torch.manual_seed(0)
c = nn.ConvTranspose2d(2, 3, 2)
PZ.spectral_norm(c)
rec['convt_weight'] = c.weight
W['p_spectral'] = rec

# weight_norm (PyTorch 2.1's parametrization; 1.13 has its function torch._weight_norm)
torch.manual_seed(0)
m = nn.Linear(3, 2)
w = m.weight.detach().clone()
g = torch.norm_except_dim(w, 2, 0)
v = w.clone().requires_grad_()
gg = g.clone().requires_grad_()
y = F.linear(torch.tensor([[1., 2, 3]]), torch._weight_norm(v, gg, 0), m.bias)
y.sum().backward()
W['p_weight_norm'] = {'g': g, 'y': y, 'g_grad': gg.grad, 'v_grad': v.grad, 'g_all': torch.norm_except_dim(w, 2, -1)}

# ------------------------------------------------------------------ pruning
import torch.nn.utils.prune as prune


def masks(m, names=('weight',)):
    return {n: getattr(m, n + '_mask') for n in names}


torch.manual_seed(0)
m = nn.Linear(4, 3)
prune.l1_unstructured(m, 'weight', 0.5)
rec = snap({'mask': m.weight_mask, 'weight': m.weight, 'keys': list(m.state_dict().keys()),
            'y': m(torch.ones(2, 4)), 'hooks': len(m._forward_pre_hooks)})
prune.l1_unstructured(m, 'weight', 2)  # a count: 2 more of the 6 kept
rec['mask2'] = m.weight_mask.clone()
hook = list(m._forward_pre_hooks.values())[0]
rec['container'] = type(hook).__name__
rec['container_len'] = len(hook)
prune.remove(m, 'weight')
rec['removed'] = m.weight.detach().clone()
rec['removed_keys'] = list(m.state_dict().keys())
W['prune_l1'] = rec

torch.manual_seed(0)
m = nn.Linear(4, 3)
torch.manual_seed(1)
prune.random_unstructured(m, 'weight', 0.3)
rec = snap({'mask': m.weight_mask})
prune.random_unstructured(m, 'weight', 0.5)  # of the 8 kept: round(4.0)
rec['mask2'] = m.weight_mask
W['prune_random'] = rec

torch.manual_seed(0)
c = nn.Conv2d(2, 4, 3)
prune.ln_structured(c, 'weight', 0.5, n=2, dim=0)
rec = snap({'channels': c.weight_mask.sum(dim=(1, 2, 3))})
prune.ln_structured(c, 'weight', 1, n=1, dim=1)
rec['in_channels'] = c.weight_mask.sum(dim=(0, 2, 3))
rec['channels2'] = c.weight_mask.sum(dim=(1, 2, 3))
torch.manual_seed(0)
lin = nn.Linear(5, 4)
prune.ln_structured(lin, 'weight', 0.4, n=float('inf'), dim=-1)
rec['inf_cols'] = lin.weight_mask.sum(dim=0)
W['prune_ln'] = rec

torch.manual_seed(0)
m = nn.Linear(5, 4)
torch.manual_seed(3)
prune.random_structured(m, 'weight', 2, dim=1)
rec = snap({'mask': m.weight_mask})
torch.manual_seed(4)
prune.random_structured(m, 'weight', 0.5, dim=0)
rec['mask2'] = m.weight_mask
W['prune_random_structured'] = rec

torch.manual_seed(0)
a, b = nn.Linear(4, 3), nn.Linear(3, 2)
scores = torch.arange(12.).view(3, 4)
prune.global_unstructured([(a, 'weight'), (b, 'weight'), (a, 'bias')], pruning_method=prune.L1Unstructured,
                          amount=0.4, importance_scores={(a, 'weight'): scores})
W['prune_global'] = snap({'a_weight': a.weight_mask, 'b_weight': b.weight_mask, 'a_bias': a.bias_mask})
torch.manual_seed(0)
a, b = nn.Linear(4, 3), nn.Linear(3, 2)
torch.manual_seed(5)
prune.global_unstructured([(a, 'weight'), (b, 'weight')], pruning_method=prune.RandomUnstructured, amount=7)
W['prune_global_random'] = snap({'a_weight': a.weight_mask, 'b_weight': b.weight_mask})

torch.manual_seed(0)
m = nn.Linear(3, 2)
prune.custom_from_mask(m, 'bias', torch.tensor([0., 1]))
prune.l1_unstructured(m, 'bias', 1)
W['prune_custom'] = snap({'mask': m.bias_mask, 'bias': m.bias, 'keys': list(m.state_dict().keys())})

# ------------------------------------------------------------------ fx
import io
import contextlib
import torch.fx as fx
from torch.fx.passes.shape_prop import ShapeProp


def tabular(g):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        g.print_tabular()
    return buf.getvalue().rstrip('\n')


class Block(nn.Module):  # a ResNet basic block (modules only)
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(4)

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out = out + identity
        return self.relu(out)


torch.manual_seed(0)
gm = fx.symbolic_trace(Block())
W['fx_block'] = {'graph': str(gm.graph), 'tabular': tabular(gm.graph), 'repr_head': repr(gm).split('\n\n\n')[0]}
torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
gm = fx.symbolic_trace(mlp)
W['fx_mlp'] = {'graph': str(gm.graph), 'tabular': tabular(gm.graph), 'keys': list(gm.state_dict().keys())}
torch.manual_seed(0)
lenet = nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
gm = fx.symbolic_trace(lenet)
ShapeProp(gm).propagate(torch.randn(3, 1, 28, 28))
W['fx_lenet'] = {'graph': str(gm.graph),
                 'shapes': [list(n.meta['tensor_meta'].shape) for n in gm.graph.nodes if n.op != 'output'],
                 'strides': [list(n.meta['tensor_meta'].stride) for n in gm.graph.nodes if n.op != 'output']}


class Names(nn.Module):  # node names as PyTorch makes them: builtins, repeats, attributes
    def __init__(self):
        super().__init__()
        self.param = nn.Parameter(torch.rand(3, 4))
        self.linear = nn.Linear(4, 5)

    def forward(self, input):
        x = self.linear(input + self.param).relu()
        y = x.sum(-1).abs().max()
        return torch.relu(x).sum() + y + self.linear.weight.sum()


gm = fx.symbolic_trace(Names())
W['fx_names'] = {'names': [n.name for n in gm.graph.nodes], 'ops': [n.op for n in gm.graph.nodes],
                 'targets': [n.target if isinstance(n.target, str) else n.target.__name__ for n in gm.graph.nodes],
                 'users': [len(n.users) for n in gm.graph.nodes]}

# ------------------------------------------------------------------ profiler
from torch.autograd.profiler_util import EventList, FunctionEvent, _format_time, _format_memory
from torch.profiler import schedule, ProfilerAction
import warnings
warnings.simplefilter('ignore')

sched = schedule(wait=1, warmup=2, active=3, repeat=2, skip_first=1)
W['prof_schedule'] = [sched(i).name for i in range(16)]
sched = schedule(wait=0, warmup=0, active=2)
W['prof_schedule_forever'] = [sched(i).name for i in range(6)]

# a table from events given by hand: (name, start_us, end_us, input_shapes, cpu_memory_usage, flops)
SYNTH = [
    ('model_inference', 0, 10000, [], 4096, 0),
    ('aten::conv2d', 100, 6100, [[4, 1, 28, 28], [6, 1, 5, 5], [6]], 55296, 691200),
    ('aten::relu', 6200, 6500, [[4, 6, 24, 24]], 55296, 0),
    ('aten::relu', 6210, 6490, [[4, 6, 24, 24]], 55296, 0),  # the same op inside it: merged, as PyTorch
    ('aten::max_pool2d', 6600, 7400, [[4, 6, 24, 24], [], []], 13824, 0),
    ('aten::linear', 7500, 9500, [[4, 864], [10, 864], [10]], 160, 0),
    ('aten::t', 7510, 7530, [[10, 864]], 0, 0),
    ('aten::addmm', 7540, 9400, [[10], [4, 864], [864, 10]], 160, 69120),
    ('aten::relu', 9600, 9700, [[4, 10]], 160, 0),
    ('aten::relu', 9700, 9712, [[4, 3]], 48, 0),
]
evts = []
for i, (name, a, b, shapes, mem, fl) in enumerate(SYNTH):
    evts.append(FunctionEvent(id=i, name=name, thread=1, start_us=a, end_us=b, input_shapes=shapes, stack=[],
                              cpu_memory_usage=mem, flops=fl))
el = EventList(evts, profile_memory=True, with_flops=True)
el._build_tree()
plain = EventList([FunctionEvent(id=i, name=n, thread=1, start_us=a, end_us=b, stack=[]) for i, (n, a, b, *_) in enumerate(SYNTH)])
plain._build_tree()
W['prof_synth'] = {
    'events': [[n, a, b, sh, m, f] for (n, a, b, sh, m, f) in SYNTH],
    'table': el.key_averages().table(sort_by='self_cpu_time_total'),
    'table_shapes': el.key_averages(group_by_input_shapes=True).table(sort_by='cpu_time_total', row_limit=5),
    'table_plain': plain.key_averages().table(),
    'times': [_format_time(t) for t in (0.5, 12.25, 999.9994, 1000, 123456.7, 2.5e6)],
    'memory': [_format_memory(n) for n in (0, 512, -4, 1024, 55296, -152576, 3 * 1024 * 1024 + 5, 5 * 2 ** 30)],
}
print('-- written by spec/support/inspect_record.py (PyTorch %s): do not edit' % torch.__version__)
print('return ' + lua(W))
