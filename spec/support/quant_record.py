# Records PyTorch 1.13's quantization for spec/quantization_spec.lua (issue 25): quantized tensors' integer
# representations and printing, observer ranges and qparams, fake quantization with its gradient, and the
# outputs of dynamic, static and QAT models built from the same weights (sin of a lattice, as the spec's
# grid()). Run: /usr/bin/python3 spec/support/quant_record.py > spec/support/quant_wants.lua
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.ao.quantization as Q

torch.backends.quantized.engine = 'qnnpack' if False else torch.backends.quantized.engine

def grid(shape, k, scale=1.0):
    n = 1
    for s in shape:
        n *= s
    v = [math.sin(i * 0.7 + k * 1.3) * scale * (1 + (i % 3)) for i in range(n)]
    return torch.tensor(v, dtype=torch.float64).float().reshape(shape)

def lua(v):
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, torch.Tensor):
        return lua(v.tolist())
    if isinstance(v, (list, tuple)):
        return '{' + ', '.join(lua(x) for x in v) + '}'
    if isinstance(v, dict):
        return '{' + ', '.join('[%r] = %s' % (k, lua(x)) for k, x in v.items()) + '}'
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, float):
        if math.isinf(v):
            return 'math.huge' if v > 0 else '-math.huge'
        return repr(v)
    return repr(v)

W = {}
# quantized tensors
x = torch.tensor([0.1, -0.25, 1.0, 2.55, 0.05, 0.15, -1e-9, 30.0, -30.0, 0.35, 0.45, -0.45])
for dt in ('quint8', 'qint8', 'qint32'):
    q = torch.quantize_per_tensor(x, 0.1, 10 if dt == 'quint8' else -3, getattr(torch, dt))
    W['qpt_' + dt] = q.int_repr()
    W['qpt_' + dt + '_deq'] = q.dequantize()
W['qpt_str'] = str(torch.quantize_per_tensor(x[:5], 0.1, 10, torch.quint8))
m = grid((3, 4), 1)
qc = torch.quantize_per_channel(m, torch.tensor([0.1, 0.05, 0.2], dtype=torch.float64), torch.tensor([0, 3, -2]), 0, torch.qint8)
W['qpc0'] = qc.int_repr()
W['qpc0_deq'] = qc.dequantize()
qc1 = torch.quantize_per_channel(m, torch.tensor([0.1, 0.05, 0.2, 0.3], dtype=torch.float64), torch.tensor([10, 3, 0, 200]), 1, torch.quint8)
W['qpc1'] = qc1.int_repr()
W['qpc1_deq'] = qc1.dequantize()

# observers: three batches
batches = [grid((4, 6), 0), grid((4, 6), 1, 2.0), grid((4, 6), 2, 0.5) + 0.3]
def observe(o):
    for b in batches:
        o(b)
    s, z = o.calculate_qparams()
    return {'min': o.min_val, 'max': o.max_val, 'scale': s, 'zp': z}
from torch.ao.quantization.observer import (MinMaxObserver, MovingAverageMinMaxObserver, PerChannelMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver, HistogramObserver)
obs = {
    'minmax': MinMaxObserver(),
    'minmax_sym_qint8': MinMaxObserver(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric),
    'minmax_reduce': MinMaxObserver(reduce_range=True),
    'minmax_sym_quint8': MinMaxObserver(qscheme=torch.per_tensor_symmetric),
    'minmax_custom': MinMaxObserver(quant_min=0, quant_max=15),
    'moving': MovingAverageMinMaxObserver(),
    'moving_c': MovingAverageMinMaxObserver(averaging_constant=0.5, dtype=torch.qint8),
    'perchannel': PerChannelMinMaxObserver(),
    'perchannel_sym_axis1': PerChannelMinMaxObserver(ch_axis=1, dtype=torch.qint8, qscheme=torch.per_channel_symmetric),
    'moving_perchannel': MovingAveragePerChannelMinMaxObserver(),
    'histogram': HistogramObserver(),
    'histogram_reduce': HistogramObserver(reduce_range=True),
    'histogram_sym': HistogramObserver(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric),
}
W['observers'] = {k: observe(o) for k, o in obs.items()}
hobs = HistogramObserver(bins=64)
hobs(grid((50,), 3, 1.5)); hobs(grid((40,), 4, 3.0))
W['histogram_small'] = {'min': hobs.min_val, 'max': hobs.max_val, 'hist': hobs.histogram, 'scale': hobs.calculate_qparams()[0], 'zp': hobs.calculate_qparams()[1]}

# fake quantization and its gradient
xf = (grid((10,), 5, 2.0)).requires_grad_()
y = torch.fake_quantize_per_tensor_affine(xf, 0.05, 10, 0, 63)
y.backward(torch.arange(1.0, 11.0))
W['fq'] = y
W['fq_grad'] = xf.grad
xc = grid((2, 5), 6, 2.0).requires_grad_()
yc = torch.fake_quantize_per_channel_affine(xc, torch.tensor([0.05, 0.1]), torch.tensor([0, 5], dtype=torch.int32), 0, -8, 7)
yc.backward(torch.ones(2, 5))
W['fqc'] = yc
W['fqc_grad'] = xc.grad

# dynamic quantization of an MLP
def mlp():
    m = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))
    with torch.no_grad():
        m[0].weight.copy_(grid((16, 12), 7, 0.3)); m[0].bias.copy_(grid((16,), 8, 0.1))
        m[2].weight.copy_(grid((5, 16), 9, 0.25)); m[2].bias.copy_(grid((5,), 10, 0.1))
    return m.eval()
xin = grid((6, 12), 11, 1.5)
fm = mlp()
W['dyn_float'] = fm(xin)
dq = Q.quantize_dynamic(mlp(), {nn.Linear}, dtype=torch.qint8)
W['dyn_out'] = dq(xin)
W['dyn_w_int'] = dq[0].weight().int_repr()
W['dyn_w_scale'] = dq[0].weight().q_scale()
W['dyn_repr'] = str(dq)
dqc = Q.quantize_dynamic(mlp(), {nn.Linear: Q.per_channel_dynamic_qconfig}, dtype=torch.qint8)
W['dyn_pc_out'] = dqc(xin)
W['dyn_pc_scales'] = dqc[0].weight().q_per_channel_scales()

# static quantization of a small conv net
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = Q.QuantStub()
        self.conv = nn.Conv2d(1, 3, 3)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(3 * 3 * 3, 4)
        self.relu2 = nn.ReLU()
        self.fc2 = nn.Linear(4, 3)
        self.dequant = Q.DeQuantStub()
        with torch.no_grad():
            self.conv.weight.copy_(grid((3, 1, 3, 3), 12, 0.4)); self.conv.bias.copy_(grid((3,), 13, 0.1))
            self.fc.weight.copy_(grid((4, 27), 14, 0.3)); self.fc.bias.copy_(grid((4,), 15, 0.1))
            self.fc2.weight.copy_(grid((3, 4), 16, 0.5)); self.fc2.bias.copy_(grid((3,), 17, 0.1))
    def forward(self, x):
        x = self.pool(self.relu(self.conv(self.quant(x))))
        x = self.relu2(self.fc(torch.flatten(x, 1)))
        return self.dequant(self.fc2(x))
calib = [grid((2, 1, 8, 8), 20 + i, 1.0) for i in range(3)]
xs = grid((3, 1, 8, 8), 30, 1.0)
for name, qc in (('fbgemm', Q.get_default_qconfig('fbgemm')), ('qnnpack', Q.get_default_qconfig('qnnpack')), ('default', Q.default_qconfig)):
    net = Net().eval()
    net.qconfig = qc
    f = Q.fuse_modules(net, [['conv', 'relu'], ['fc', 'relu2']])
    p = Q.prepare(f)
    for c in calib:
        p(c)
    q = Q.convert(p)
    W['static_' + name] = {
        'float': net(xs), 'out': q(xs), 'quant_scale': float(q.quant.scale), 'quant_zp': int(q.quant.zero_point),
        'conv_scale': q.conv.scale, 'conv_zp': q.conv.zero_point, 'fc_scale': q.fc.scale, 'fc_zp': q.fc.zero_point,
        'fc2_scale': q.fc2.scale, 'fc2_zp': q.fc2.zero_point, 'conv_w_int': q.conv.weight().int_repr(),
        'repr': str(q),
    }

# QAT: three SGD steps with fake quantization, then convert
torch.manual_seed(0)
net = Net().train()
net.qconfig = Q.get_default_qat_qconfig('fbgemm', 0)
f = Q.fuse_modules_qat(net, [['conv', 'relu'], ['fc', 'relu2']])
p = Q.prepare_qat(f)
opt = torch.optim.SGD(p.parameters(), lr=0.1)
target = torch.tensor([0, 2, 1])
losses = []
for i in range(3):
    loss = F.cross_entropy(p(calib[i % 3][:1].repeat(3, 1, 1, 1) + 0.1 * i), target)
    opt.zero_grad(); loss.backward(); opt.step()
    losses.append(loss.item())
p.eval()
qn = Q.convert(p)
W['qat'] = {'losses': losses, 'conv_w': p.conv.weight.detach(), 'fc2_w': p.fc2.weight.detach(), 'out': qn(xs),
            'prepared_out': p(xs)}

print('-- PyTorch 1.13\'s quantization, recorded by spec/support/quant_record.py (do not edit: run it again)')
print('return {')
for k in sorted(W):
    print('  [%r] = %s,' % (k, lua(W[k])))
print('}')
