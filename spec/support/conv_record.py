"""Records PyTorch 1.13's results for spec/conv_spec.lua (issue 12, conv part):
    /usr/bin/python3 spec/support/conv_record.py > spec/support/conv_wants.lua
Inputs are made the same way on both sides, without a generator: x = sin(0.37 i + c) over
i = 0..numel-1, reshaped (c: 0.1 input, 0.7 weight, 1.3 bias; the output's gradient cos(0.23 i)).
Functional cases: output, and the gradients of (y * gy).sum() for input, weight and bias, float64.
Module cases: under torch.manual_seed(seed) PyTorch's float32 initial state_dict (what the Lua
module must draw too), its printing, then in float64 with that state_dict loaded: output and the
gradients of weight, bias and input."""
import torch, torch.nn as nn, torch.nn.functional as F

def det(shape, c):
    n = 1
    for s in shape: n *= s
    return torch.sin(torch.arange(n, dtype=torch.float64) * 0.37 + c).reshape(shape)

def lua_val(v):
    if isinstance(v, bool): return 'true' if v else 'false'
    if isinstance(v, str): return repr(v)
    if isinstance(v, (tuple, list)): return '{ ' + ', '.join(lua_val(x) for x in v) + ' }'
    if isinstance(v, float): return repr(v)
    return str(v)

def nums(t):
    return '{ ' + ', '.join(repr(float(x)) for x in t.detach().flatten().tolist()) + ' }'

def tens(t):
    return '{ shape = { %s }, values = %s }' % (', '.join(str(s) for s in t.shape), nums(t))

# fn, input shape, weight shape, bias?, keyword arguments (PyTorch's names)
FUNCTIONAL = [
    ('conv2d', (2, 3, 5, 6), (4, 3, 3, 2), True, {}),
    ('conv2d', (2, 3, 7, 6), (4, 3, 3, 2), True, dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2))),
    ('conv2d', (2, 4, 5, 5), (6, 2, 3, 3), True, dict(padding=1, groups=2)),
    ('conv2d', (2, 4, 6, 6), (8, 1, 3, 3), False, dict(stride=2, padding=1, groups=4)),
    ('conv2d', (1, 2, 5, 6), (3, 2, 4, 2), True, dict(padding='same')),
    ('conv2d', (1, 2, 6, 5), (3, 2, 3, 3), True, dict(padding='same', dilation=2)),
    ('conv2d', (1, 2, 6, 5), (3, 2, 3, 3), False, dict(padding='valid', stride=(1, 2))),
    ('conv2d', (2, 3, 4, 4), (5, 3, 1, 1), True, {}),
    ('conv2d', (3, 4, 4), (2, 3, 3, 3), True, dict(padding=1)),
    ('conv1d', (2, 3, 9), (4, 3, 3), True, dict(stride=2, padding=1, dilation=2)),
    ('conv1d', (3, 8), (2, 3, 2), False, dict(padding='same')),
    ('conv3d', (1, 2, 4, 4, 3), (2, 2, 2, 3, 2), True, dict(stride=(1, 2, 1), padding=1)),
    ('conv3d', (2, 4, 3, 3), (4, 1, 2, 2, 2), True, dict(groups=2)),
    ('conv_transpose2d', (2, 4, 3, 3), (4, 3, 3, 3), True, dict(stride=2, padding=1, output_padding=1)),
    ('conv_transpose2d', (2, 4, 3, 4), (4, 2, 3, 2), True,
     dict(stride=(2, 1), padding=(1, 0), output_padding=(1, 0), groups=2, dilation=(1, 2))),
    ('conv_transpose2d', (1, 2, 3, 3), (2, 2, 2, 2), True, dict(output_padding=1, dilation=2)),
    ('conv_transpose2d', (4, 3, 3), (4, 2, 3, 3), False, dict(stride=2)),
    ('conv_transpose1d', (2, 4, 5), (4, 3, 1), True, {}),
    ('conv_transpose1d', (2, 2, 4), (2, 3, 3), True, dict(stride=3, padding=1, output_padding=2)),
    ('conv_transpose3d', (1, 2, 2, 3, 2), (2, 2, 3, 2, 3), True, dict(stride=2, padding=1, output_padding=1)),
]
UNFOLD = [
    ('unfold', (2, 3, 5, 6), dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))),
    ('unfold', (3, 4, 4), dict(kernel_size=2)),
    ('fold', (2, 8, 12), dict(output_size=(4, 5), kernel_size=2)),
    ('fold', (12, 9), dict(output_size=(5, 5), kernel_size=(2, 2), dilation=2, padding=1, stride=2)),
]
MODULES = [
    ('Conv1d', (2, 4, 3), dict(stride=2, padding=1, padding_mode='circular'), (2, 2, 7), None),
    ('Conv1d', (2, 3, 2), dict(padding=2, padding_mode='zeros', bias=False), (2, 5), None),
    ('Conv2d', (3, 4, (3, 2)), dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), padding_mode='reflect'),
     (2, 3, 6, 7), None),
    ('Conv2d', (4, 4, 3), dict(padding='same', groups=2, padding_mode='replicate'), (4, 5, 5), None),
    ('Conv2d', (4, 8, 3), dict(groups=4, bias=False), (2, 4, 6, 6), None),
    ('Conv2d', (2, 3, 4), dict(padding='same', dilation=2), (1, 2, 7, 6), None),
    ('Conv3d', (2, 3, 2), dict(stride=(1, 2, 1), padding=1, padding_mode='reflect'), (1, 2, 4, 5, 3), None),
    ('ConvTranspose1d', (3, 2, 3), dict(stride=2, padding=1, output_padding=1), (2, 3, 5), None),
    ('ConvTranspose2d', (4, 6, (3, 2)), dict(stride=2, padding=(1, 0), output_padding=(1, 0), groups=2,
     dilation=(1, 2)), (2, 4, 3, 4), None),
    ('ConvTranspose2d', (2, 3, 3), dict(stride=2, bias=False), (1, 2, 3, 3), (8, 8)),
    ('ConvTranspose3d', (2, 2, 2), dict(stride=2), (1, 2, 2, 3, 2), None),
]

print('-- PyTorch 1.13\'s results for spec/conv_spec.lua, written by')
print('--   /usr/bin/python3 spec/support/conv_record.py > spec/support/conv_wants.lua')
print('-- (how the inputs are made: see that script). Do not edit.')
print('local M = {}')
print('M.functional = {')
for fn, xs, ws, has_b, kw in FUNCTIONAL:
    x = det(xs, 0.1).requires_grad_()
    w = det(ws, 0.7).requires_grad_()
    cout = ws[1] * kw.get('groups', 1) if fn.startswith('conv_transpose') else ws[0]
    b = det((cout,), 1.3).requires_grad_() if has_b else None
    y = getattr(F, fn)(x, w, b, **kw)
    gy = torch.cos(torch.arange(y.numel(), dtype=torch.float64) * 0.23).reshape(y.shape)
    (y * gy).sum().backward()
    print('  { fn = %r, x = { %s }, w = { %s }, bias = %s, kw = { %s },' % (
        fn, ', '.join(map(str, xs)), ', '.join(map(str, ws)), lua_val(has_b),
        ', '.join('%s = %s' % (k, lua_val(v)) for k, v in kw.items())))
    print('    y = %s,' % tens(y))
    print('    gx = %s, gw = %s%s },' % (nums(x.grad), nums(w.grad), ', gb = %s' % nums(b.grad) if has_b else ''))
for fn, xs, kw in UNFOLD:
    x = det(xs, 0.1).requires_grad_()
    y = getattr(F, fn)(x, **kw)
    gy = torch.cos(torch.arange(y.numel(), dtype=torch.float64) * 0.23).reshape(y.shape)
    (y * gy).sum().backward()
    print('  { fn = %r, x = { %s }, kw = { %s },' % (fn, ', '.join(map(str, xs)),
        ', '.join('%s = %s' % (k, lua_val(v)) for k, v in kw.items())))
    print('    y = %s, gx = %s },' % (tens(y), nums(x.grad)))
print('}')
print('M.modules = {')
for i, (cls, pos, kw, xs, out_size) in enumerate(MODULES):
    seed = 10 + i
    torch.manual_seed(seed)
    m = getattr(nn, cls)(*pos, **kw)
    sd = m.state_dict()
    print('  { cls = %r, seed = %d, args = %s, kw = { %s }, x = { %s }, output_size = %s,' % (
        cls, seed, lua_val(pos), ', '.join('%s = %s' % (k, lua_val(v)) for k, v in kw.items()),
        ', '.join(map(str, xs)), lua_val(out_size) if out_size else 'nil'))
    print('    repr = %r,' % str(m))
    print('    state = { %s },' % ', '.join('{ %r, %s }' % (k, tens(v)) for k, v in sd.items()))
    m = m.double()
    x = det(xs, 0.1).requires_grad_()
    y = m(x, out_size) if out_size else m(x)
    gy = torch.cos(torch.arange(y.numel(), dtype=torch.float64) * 0.23).reshape(y.shape)
    (y * gy).sum().backward()
    print('    y = %s, gx = %s,' % (tens(y), nums(x.grad)))
    print('    grads = { %s } },' % ', '.join('{ %r, %s }' % (k, nums(p.grad)) for k, p in m.named_parameters()))
print('}')
print('return M')
