# Records what PyTorch 1.13's CPU autocast does to each op of its lists that moontorch has (and to a few
# it leaves alone), for spec/amp_spec.lua (issue 25): the dtype of the result under
# torch.autocast('cpu', dtype=torch.bfloat16) with float32 inputs and with bfloat16 inputs, and for
# mixed inputs (promote). Run: /usr/bin/python3 spec/support/amp_record.py  (prints the Lua table).
# The spec's CASES build the same calls in Lua (same names).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
n = 8
def R(*s, d=torch.float32): return torch.randn(*s).to(d)
def P(*s, d=torch.float32): return (torch.rand(*s) * 0.8 + 0.1).to(d)
L = lambda *v: torch.tensor(v, dtype=torch.long)

cases = {
    # lower_precision_fp
    'mm': lambda d: torch.mm(R(n, n, d=d), R(n, n, d=d)),
    'Tensor.mm': lambda d: R(n, n, d=d).mm(R(n, n, d=d)),
    'matmul': lambda d: torch.matmul(R(n, n, d=d), R(n, n, d=d)),
    'Tensor.matmul': lambda d: R(2, n, n, d=d).matmul(R(n, d=d)),
    'bmm': lambda d: torch.bmm(R(2, n, n, d=d), R(2, n, n, d=d)),
    'addmm': lambda d: torch.addmm(R(n, n, d=d), R(n, n, d=d), R(n, n, d=d)),
    'baddbmm': lambda d: torch.baddbmm(R(2, n, n, d=d), R(2, n, n, d=d), R(2, n, n, d=d)),
    'addbmm': lambda d: torch.addbmm(R(n, n, d=d), R(2, n, n, d=d), R(2, n, n, d=d)),
    'linear': lambda d: F.linear(R(n, n, d=d), R(n, n, d=d), R(n, d=d)),
    'conv1d': lambda d: F.conv1d(R(2, 3, 8, d=d), R(4, 3, 3, d=d)),
    'conv2d': lambda d: F.conv2d(R(2, 3, 8, 8, d=d), R(4, 3, 3, 3, d=d), R(4, d=d)),
    'conv3d': lambda d: F.conv3d(R(2, 3, 4, 4, 4, d=d), R(4, 3, 3, 3, 3, d=d)),
    # composites of those
    'einsum': lambda d: torch.einsum('ij,jk->ik', R(n, n, d=d), R(n, n, d=d)),
    'chain_matmul': lambda d: torch.chain_matmul(R(n, n, d=d), R(n, n, d=d), R(n, n, d=d)),
    # fp32
    'conv_transpose1d': lambda d: F.conv_transpose1d(R(2, 3, 8, d=d), R(3, 4, 3, d=d)),
    'conv_transpose2d': lambda d: F.conv_transpose2d(R(2, 3, 8, 8, d=d), R(3, 4, 3, 3, d=d)),
    'conv_transpose3d': lambda d: F.conv_transpose3d(R(2, 3, 4, 4, 4, d=d), R(3, 4, 3, 3, 3, d=d)),
    'avg_pool3d': lambda d: F.avg_pool3d(R(1, 2, 4, 4, 4, d=d), 2),
    'max_pool3d': lambda d: F.max_pool3d(R(1, 2, 4, 4, 4, d=d), 2),
    'adaptive_avg_pool3d': lambda d: F.adaptive_avg_pool3d(R(1, 2, 4, 4, 4, d=d), 2),
    'adaptive_max_pool3d': lambda d: F.adaptive_max_pool3d(R(1, 2, 4, 4, 4, d=d), 2),
    'max_unpool2d': lambda d: F.max_unpool2d(*F.max_pool2d(R(1, 2, 4, 4, d=d), 2, return_indices=True), 2),
    'binary_cross_entropy': lambda d: F.binary_cross_entropy(P(n, d=d), P(n, d=d)),
    'binary_cross_entropy_with_logits': lambda d: F.binary_cross_entropy_with_logits(R(n, d=d), P(n, d=d)),
    'grid_sample': lambda d: F.grid_sample(R(1, 1, 4, 4, d=d), R(1, 3, 3, 2, d=d).tanh(), align_corners=False),
    'prod': lambda d: torch.prod(R(n, d=d)),
    'prod_dim': lambda d: torch.prod(R(3, n, d=d), 1),
    'quantile': lambda d: torch.quantile(R(n, d=d), 0.3),
    'nanquantile': lambda d: torch.nanquantile(R(n, d=d), 0.3),
    'cdist': lambda d: torch.cdist(R(3, n, d=d), R(2, n, d=d)),
    'trace': lambda d: torch.trace(R(n, n, d=d)),
    'inverse': lambda d: torch.inverse(R(n, n, d=d) + 4 * torch.eye(n).to(d)),
    'linalg_inv': lambda d: torch.linalg.inv(R(n, n, d=d) + 4 * torch.eye(n).to(d)),
    'linalg_solve': lambda d: torch.linalg.solve(R(n, n, d=d) + 4 * torch.eye(n).to(d), R(n, d=d)),
    'pad_reflect1d': lambda d: F.pad(R(1, 2, 5, d=d), (2, 2), mode='reflect'),
    'pad_reflect2d': lambda d: F.pad(R(1, 2, 5, 5, d=d), (2, 2, 2, 2), mode='reflect'),
    'pad_replicate3d': lambda d: F.pad(R(1, 2, 5, 5, 5, d=d), (1, 1, 1, 1, 1, 1), mode='replicate'),
    'pad_constant': lambda d: F.pad(R(1, 2, 5, d=d), (2, 2)),
    'mse_loss': lambda d: F.mse_loss(R(n, d=d), R(n, d=d)),
    'l1_loss': lambda d: F.l1_loss(R(n, d=d), R(n, d=d)),
    'smooth_l1_loss': lambda d: F.smooth_l1_loss(R(n, d=d), R(n, d=d)),
    'huber_loss': lambda d: F.huber_loss(R(n, d=d), R(n, d=d)),
    'kl_div': lambda d: F.kl_div(R(n, d=d), P(n, d=d), reduction='batchmean'),
    'nll_loss': lambda d: F.nll_loss(R(4, 3, d=d), L(0, 1, 2, 0)),
    'nll_loss2d': lambda d: F.nll_loss(R(2, 3, 4, 4, d=d), torch.zeros(2, 4, 4, dtype=torch.long)),
    'cross_entropy': lambda d: F.cross_entropy(R(4, 3, d=d), L(0, 1, 2, 0)),
    'poisson_nll_loss': lambda d: F.poisson_nll_loss(R(n, d=d), P(n, d=d)),
    'cosine_embedding_loss': lambda d: F.cosine_embedding_loss(R(2, 3, d=d), R(2, 3, d=d), L(1, -1)),
    'hinge_embedding_loss': lambda d: F.hinge_embedding_loss(R(n, d=d), torch.ones(n)),
    'margin_ranking_loss': lambda d: F.margin_ranking_loss(R(n, d=d), R(n, d=d), torch.ones(n)),
    'soft_margin_loss': lambda d: F.soft_margin_loss(R(n, d=d), torch.ones(n)),
    'triplet_margin_loss': lambda d: F.triplet_margin_loss(R(2, n, d=d), R(2, n, d=d), R(2, n, d=d)),
    'multi_margin_loss': lambda d: F.multi_margin_loss(R(2, 4, d=d), L(1, 3)),
    'multilabel_margin_loss': lambda d: F.multilabel_margin_loss(R(2, 4, d=d), torch.tensor([[3, 0, -1, 1], [1, 2, -1, 0]])),
    'ctc_loss': lambda d: F.ctc_loss(R(6, 2, 4, d=d).log_softmax(2), torch.tensor([[1, 2], [1, 1]]), L(6, 6), L(2, 2)),
    # none: the result keeps the input's dtype
    'add': lambda d: R(n, d=d) + R(n, d=d),
    'relu': lambda d: F.relu(R(n, d=d)),
    'exp': lambda d: torch.exp(R(n, d=d)),
    'softmax': lambda d: F.softmax(R(3, n, d=d), 1),
    'log_softmax': lambda d: F.log_softmax(R(3, n, d=d), 1),
    'layer_norm': lambda d: F.layer_norm(R(2, n, d=d), (n,)),
    'sum': lambda d: torch.sum(R(n, d=d)),
    'mv': lambda d: torch.mv(R(n, n, d=d), R(n, d=d)),
    'dot': lambda d: torch.dot(R(n, d=d), R(n, d=d)),
    'max_pool2d': lambda d: F.max_pool2d(R(1, 2, 4, 4, d=d), 2),
    'avg_pool2d': lambda d: F.avg_pool2d(R(1, 2, 4, 4, d=d), 2),
    'pow': lambda d: torch.pow(P(n, d=d), 2.5),
    'interpolate': lambda d: F.interpolate(R(1, 2, 4, 4, d=d), scale_factor=2, mode='bilinear'),
    'prelu': lambda d: F.prelu(R(2, 3, d=d), R(3, d=d)),
    'lstm_cell': lambda d: nn.LSTMCell(3, 4).to(d)(R(2, 3, d=d))[0],
    # modules
    'nn.Linear': lambda d: nn.Linear(3, 4).to(d)(R(2, 3, d=d)),
    'nn.Conv2d': lambda d: nn.Conv2d(2, 3, 3).to(d)(R(1, 2, 5, 5, d=d)),
    'nn.Conv2d_reflect': lambda d: nn.Conv2d(2, 3, 3, padding=1, padding_mode='reflect').to(d)(R(1, 2, 5, 5, d=d)),
    'nn.ConvTranspose2d': lambda d: nn.ConvTranspose2d(2, 3, 3).to(d)(R(1, 2, 5, 5, d=d)),
    'nn.ReflectionPad2d': lambda d: nn.ReflectionPad2d(1)(R(1, 2, 5, 5, d=d)),
    'nn.CrossEntropyLoss': lambda d: nn.CrossEntropyLoss()(R(4, 3, d=d), L(0, 1, 2, 0)),
    'nn.MSELoss': lambda d: nn.MSELoss()(R(4, 3, d=d), R(4, 3, d=d)),
    'nn.MaxPool3d': lambda d: nn.MaxPool3d(2)(R(1, 2, 4, 4, 4, d=d)),
    'nn.MultiheadAttention': lambda d: nn.MultiheadAttention(8, 2).to(d)(R(3, 2, 8, d=d), R(3, 2, 8, d=d), R(3, 2, 8, d=d))[0],
    'nn.RNN': lambda d: nn.RNN(3, 4).to(d)(R(5, 2, 3, d=d))[0],
    'nn.LSTM': lambda d: nn.LSTM(3, 4).to(d)(R(5, 2, 3, d=d))[0],
    'nn.LayerNorm': lambda d: nn.LayerNorm(4).to(d)(R(3, 4, d=d)),
    'nn.BatchNorm1d': lambda d: nn.BatchNorm1d(4).to(d)(R(3, 4, d=d)),
}
mixed = {
    # promote and built-in promotion: a bfloat16 and a float32 operand
    'cat': lambda: torch.cat([R(n, d=torch.bfloat16), R(n)]),
    'stack': lambda: torch.stack([R(n, d=torch.bfloat16), R(n)]),
    'index_copy': lambda: torch.zeros(4).bfloat16().index_copy(0, L(0, 1), R(2)),
    'add': lambda: R(n) + R(n, d=torch.bfloat16),
    'mul': lambda: R(n) * R(n, d=torch.bfloat16),
    'eq': lambda: R(n).eq(R(n, d=torch.bfloat16)),
    'mm': lambda: torch.mm(R(2, 2), R(2, 2, d=torch.bfloat16)),
    'mm_float64': lambda: torch.mm(R(2, 2, d=torch.float64), R(2, 2, d=torch.float64)),
    'linear_float16': lambda: F.linear(R(2, 2, d=torch.float16), R(2, 2, d=torch.float16)),
    'addcmul': lambda: torch.addcmul(R(n), R(n, d=torch.bfloat16), R(n)),
}

def name(dt): return str(dt).replace('torch.', '')
print('return {')
print('  unary = {')
for k, f in cases.items():
    out = []
    for d in (torch.float32, torch.bfloat16):
        with torch.autocast('cpu', dtype=torch.bfloat16):
            out.append(name(f(d).dtype))
    print("    [%r] = { %r, %r }," % (k, out[0], out[1]))
print('  },')
print('  mixed = {')
for k, f in mixed.items():
    with torch.autocast('cpu', dtype=torch.bfloat16):
        r = f()
    print("    [%r] = %r," % (k, name(r.dtype)))
print('  },')
print('}')
