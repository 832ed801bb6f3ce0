# Records PyTorch 1.13's results for spec/attention_spec.lua and spec/transformer_spec.lua:
#   /usr/bin/python3 spec/support/attention_record.py > spec/support/attention_wants.lua
# Modules are built in float64 under a seed, their parameters perturbed (so zero biases and unit
# LayerNorm weights are not special), and their state_dicts written out; each case's inputs, the
# output, the attention weights, and the gradients of every parameter and input for the loss
# sum(out * g_out) (+ sum(weights * g_w)) follow. scaled_dot_product_attention is not public in
# 1.13: its values come from the explicit formula softmax(q k^T * scale + bias) v computed here,
# with PyTorch 2.x's mask semantics (a boolean mask: true takes part; is_causal: the lower
# triangle takes part). `init` holds float32 state_dicts right after construction under
# torch.manual_seed(0), to check that construction draws PyTorch's numbers.
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
D = torch.float64


class Short:
    def __init__(self, x):
        self.x = x


def lua(v, ind=''):
    if v is None:
        return 'nil'
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v:
            return '0/0'
        if v == math.inf:
            return 'math.huge'
        if v == -math.inf:
            return '-math.huge'
        return repr(v)
    if isinstance(v, str):
        return '%r' % v
    if isinstance(v, torch.Tensor):
        vals = v.detach().reshape(-1).tolist()
        if v.dtype == torch.float32:  # 9 significant digits give a float32 back exactly
            vals = [Short(x) for x in vals]
        return lua({'shape': list(v.shape), 'dtype': str(v.dtype).replace('torch.', ''), 'values': vals}, ind)
    if isinstance(v, Short):
        return '%.9g' % v.x
    if isinstance(v, dict):
        items = []
        for k, x in v.items():
            key = k if k.isidentifier() else '[%r]' % k
            items.append('%s  %s = %s' % (ind, key, lua(x, ind + '  ')))
        return '{\n' + ',\n'.join(items) + '\n' + ind + '}'
    if isinstance(v, (list, tuple)):
        if all(isinstance(x, (int, float, bool, Short)) for x in v):
            return '{ ' + ', '.join(lua(x) for x in v) + ' }'
        return '{\n' + ',\n'.join(ind + '  ' + lua(x, ind + '  ') for x in v) + '\n' + ind + '}'
    raise TypeError(type(v))


def perturb(m, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.1)


def sd_list(m):
    return [[k, v] for k, v in m.state_dict().items()]


def grads(m):
    return [[k, p.grad] for k, p in m.named_parameters()]


def rnd(*shape):
    return torch.randn(*shape)


# ------------------------------------------------------------------ MultiheadAttention
def mha_case(name, ctor, batch_first, shapes, same, fwd, seed):
    torch.manual_seed(seed)
    m = nn.MultiheadAttention(**ctor, dtype=D)
    perturb(m, seed + 1)
    m.eval()  # dropout stays off (the cases use dropout=0 anyway)
    q = rnd(*shapes[0]).requires_grad_()
    if same == 'qkv':
        k = v = q
    elif same == 'kv':
        k = rnd(*shapes[1]).requires_grad_()
        v = k
    else:
        k = rnd(*shapes[1]).requires_grad_()
        v = rnd(*shapes[2]).requires_grad_()
    out, w = m(q, k, v, **fwd)
    g_out = rnd(*out.shape)
    loss = (out * g_out).sum()
    g_w = None
    if w is not None:
        g_w = rnd(*w.shape)
        loss = loss + (w * g_w).sum()
    loss.backward()
    fwd_rec = {}
    for key, val in fwd.items():
        fwd_rec[key] = val
    return {
        'name': name, 'ctor': ctor, 'same': same, 'state_dict': sd_list(m),
        'q': q, 'k': k if same != 'qkv' else None, 'v': v if same == 'none' else None,
        'fwd': fwd_rec, 'out': out, 'weights': w, 'g_out': g_out, 'g_w': g_w,
        'grads': grads(m), 'q_grad': q.grad, 'k_grad': k.grad if same != 'qkv' else None,
        'v_grad': v.grad if same == 'none' else None,
    }


L, S, N, E = 3, 4, 2, 8
causal = torch.triu(torch.full((L, S), -math.inf), 1)
bool_attn = torch.tensor([[False, True, False, False], [False, False, False, True], [True, False, False, False]])
kpm = torch.tensor([[False, False, False, True], [False, False, True, False]])
mha = [
    mha_case('self-attention, averaged weights', dict(embed_dim=E, num_heads=2), False, [(L, N, E)], 'qkv', {}, 1),
    mha_case('cross-attention, weights per head, float mask', dict(embed_dim=E, num_heads=2), False,
             [(L, N, E), (S, N, E)], 'kv', dict(average_attn_weights=False, attn_mask=causal), 2),
    mha_case('kdim/vdim, batch_first, boolean key_padding_mask', dict(embed_dim=E, num_heads=4, kdim=5, vdim=6,
             batch_first=True), True, [(N, L, E), (N, S, 5), (N, S, 6)], 'none', dict(key_padding_mask=kpm), 3),
    mha_case('add_bias_kv, add_zero_attn, boolean masks', dict(embed_dim=E, num_heads=2, add_bias_kv=True,
             add_zero_attn=True), False, [(L, N, E), (S, N, E), (S, N, E)], 'none',
             dict(attn_mask=bool_attn, key_padding_mask=kpm), 4),
    mha_case('no bias, 3-D boolean attn_mask, need_weights=false', dict(embed_dim=E, num_heads=2, bias=False), False,
             [(L, N, E), (S, N, E), (S, N, E)], 'none',
             dict(attn_mask=bool_attn.repeat(N * 2, 1, 1), need_weights=False), 5),
    mha_case('unbatched, float key_padding_mask', dict(embed_dim=E, num_heads=2), False, [(L, E), (S, E), (S, E)],
             'none', dict(key_padding_mask=torch.tensor([0.0, -1.5, 0.25, 0.0])), 6),
]


# ------------------------------------------------------------------ scaled_dot_product_attention
def sdpa_ref(q, k, v, attn_mask=None, is_causal=False, scale=None):
    Lq, Sk = q.size(-2), k.size(-2)
    scale = 1 / math.sqrt(q.size(-1)) if scale is None else scale
    bias = torch.zeros(Lq, Sk)
    if is_causal:
        bias = bias.masked_fill(torch.ones(Lq, Sk, dtype=torch.bool).tril().logical_not(), -math.inf)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            bias = bias.masked_fill(attn_mask.logical_not(), -math.inf)
        else:
            bias = bias + attn_mask
    w = torch.softmax(q @ k.transpose(-2, -1) * scale + bias, dim=-1)
    return w @ v


def sdpa_case(name, qs, ks, vs, mask=None, is_causal=False, scale=None, seed=0):
    torch.manual_seed(seed)
    q, k, v = rnd(*qs).requires_grad_(), rnd(*ks).requires_grad_(), rnd(*vs).requires_grad_()
    out = sdpa_ref(q, k, v, mask, is_causal, scale)
    g = rnd(*out.shape)
    (out * g).sum().backward()
    return {'name': name, 'q': q, 'k': k, 'v': v, 'mask': mask, 'is_causal': is_causal, 'scale': scale,
            'out': out, 'g_out': g, 'q_grad': q.grad, 'k_grad': k.grad, 'v_grad': v.grad}


torch.manual_seed(100)
sdpa = [
    sdpa_case('3-D, no mask', (2, 3, 4), (2, 5, 4), (2, 5, 6), seed=10),
    sdpa_case('4-D, boolean mask broadcast over batch and heads', (2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4),
              torch.tensor([[True, True, False, True, False], [False, True, True, True, True],
                            [True, False, False, False, True]]), seed=11),
    sdpa_case('4-D, float mask per head', (2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4), torch.randn(1, 2, 3, 5), seed=12),
    sdpa_case('causal, L != S', (2, 4, 4), (2, 6, 4), (2, 6, 3), is_causal=True, seed=13),
    sdpa_case('batch dims broadcast, scale given', (2, 3, 3, 4), (1, 3, 5, 4), (2, 1, 5, 4), scale=0.3, seed=14),
    sdpa_case('2-D', (3, 4), (5, 4), (5, 2), seed=15),
]


# ------------------------------------------------------------------ transformer layers
def layer_case(name, cls, ctor, batch_first, shapes, fwd, seed, train_dropout=False):
    torch.manual_seed(seed)
    m = cls(**ctor, dtype=D)
    perturb(m, seed + 1)
    xs = [rnd(*s).requires_grad_() for s in shapes]
    out = m(*xs, **fwd)
    g = rnd(*out.shape)
    (out * g).sum().backward()
    return {'name': name, 'ctor': {k: v for k, v in ctor.items()}, 'state_dict': sd_list(m), 'inputs': xs,
            'fwd': fwd, 'out': out, 'g_out': g, 'grads': grads(m), 'input_grads': [x.grad for x in xs]}


d, T, Sm = 4, 4, 5
tgt_causal = torch.triu(torch.full((T, T), -math.inf), 1)
src_kpm = torch.tensor([[False, False, False, True], [False, False, False, False]])
mem_kpm = torch.tensor([[False, False, False, False, True], [False, True, False, False, False]])
layers = [
    layer_case('encoder layer, post-norm, relu, src_mask and src_key_padding_mask', nn.TransformerEncoderLayer,
               dict(d_model=d, nhead=2, dim_feedforward=8, dropout=0.0), False, [(T, 2, d)],
               dict(src_mask=tgt_causal, src_key_padding_mask=src_kpm), 21),
    layer_case('encoder layer, norm_first, gelu, batch_first', nn.TransformerEncoderLayer,
               dict(d_model=d, nhead=4, dim_feedforward=12, dropout=0.0, activation='gelu', batch_first=True,
                    norm_first=True, layer_norm_eps=1e-6), True, [(2, T, d)], {}, 22),
    layer_case('decoder layer, post-norm, relu, tgt_mask and memory_key_padding_mask', nn.TransformerDecoderLayer,
               dict(d_model=d, nhead=2, dim_feedforward=8, dropout=0.0), False, [(T, 2, d), (Sm, 2, d)],
               dict(tgt_mask=tgt_causal, memory_key_padding_mask=mem_kpm), 23),
    layer_case('decoder layer, norm_first, gelu, batch_first', nn.TransformerDecoderLayer,
               dict(d_model=d, nhead=2, dim_feedforward=8, dropout=0.0, activation='gelu', batch_first=True,
                    norm_first=True), True, [(2, T, d), (2, Sm, d)], {}, 24),
    layer_case('Transformer, 2 + 1 layers, batch_first', nn.Transformer,
               dict(d_model=d, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=8, dropout=0.0,
                    batch_first=True), True, [(2, Sm, d), (2, T, d)],
               dict(tgt_mask=tgt_causal, src_key_padding_mask=mem_kpm), 25),
]

# ------------------------------------------------------------------ construction draws (float32)
torch.set_default_dtype(torch.float32)
init = []
for name, build in [
    ('MultiheadAttention(8, 2)', lambda: nn.MultiheadAttention(8, 2)),
    ('MultiheadAttention(8, 2, kdim=5, vdim=6, add_bias_kv=True)',
     lambda: nn.MultiheadAttention(8, 2, kdim=5, vdim=6, add_bias_kv=True)),
    ('MultiheadAttention(8, 2, bias=False)', lambda: nn.MultiheadAttention(8, 2, bias=False)),
    ('TransformerEncoderLayer(8, 2, 16)', lambda: nn.TransformerEncoderLayer(8, 2, 16)),
    ('TransformerDecoderLayer(8, 2, 16)', lambda: nn.TransformerDecoderLayer(8, 2, 16)),
    ('Transformer(8, 2, 1, 1, 16)', lambda: nn.Transformer(8, 2, 1, 1, 16)),
]:
    torch.manual_seed(0)
    init.append({'name': name, 'state_dict': sd_list(build())})

print('-- Generated by spec/support/attention_record.py with PyTorch %s (/usr/bin/python3):' % torch.__version__)
print('--   /usr/bin/python3 spec/support/attention_record.py > spec/support/attention_wants.lua')
print('-- Do not edit by hand.')
print('return ' + lua({'mha': mha, 'sdpa': sdpa, 'layers': layers, 'init': init}))
