"""Records PyTorch 1.13's results for spec/matmul_ranks_spec.lua (issue 27, part 2):
    /usr/bin/python3 spec/support/matmul_record.py > spec/support/matmul_wants.lua
Every rank pair of matmul, 1-D to 4-D on each side, with and without broadcast batch dims, in
float64. Inputs are made the same way on both sides, without a generator, from small dyadic
rationals (exact in float64): a[i] = ((i * 5) % 7 - 3) / 4, b[i] = ((i * 3) % 11 - 5) / 8 over
i = 0..numel-1 in row-major order, reshaped; the output's gradient gy[i] = ((i * 7) % 5 - 2) / 2.
Recorded: y = a.matmul(b) (shape, values, grad_fn's name), and the gradients of (y * gy).sum() for
a and b (both requiring grad)."""
import torch

def det(shape, mul, mod, sub, div):
    n = 1
    for s in shape: n *= s
    i = torch.arange(n, dtype=torch.int64)
    return (((i * mul) % mod - sub).to(torch.float64) / div).reshape(shape)

def nums(t):
    return '{ ' + ', '.join(repr(float(x)) for x in t.detach().flatten().tolist()) + ' }'

def shp(s):
    return '{ ' + ', '.join(str(x) for x in s) + ' }'

# (shape of a, shape of b): 1-D to 4-D on each side; batch dims broadcast where both have them
CASES = []
A = {1: [(3,)], 2: [(2, 3), (1, 3)], 3: [(4, 2, 3), (1, 2, 3)], 4: [(2, 4, 2, 3), (2, 1, 2, 3)]}
B = {1: [(3,)], 2: [(3, 2), (3, 1)], 3: [(4, 3, 2), (1, 3, 2)], 4: [(2, 4, 3, 2), (1, 4, 3, 2)]}
for ra in range(1, 5):
    for rb in range(1, 5):
        for sa in A[ra]:
            for sb in B[rb]:
                CASES.append((sa, sb))
# batch dims of different lengths that broadcast both ways
CASES += [((3, 1, 2, 3), (4, 3, 2)), ((5, 2, 3), (3, 1, 3, 2)), ((2, 1, 1, 3), (3, 3, 1)),
          ((3,), (2, 1, 3, 2)), ((2, 3, 1, 2, 3), (3,)), ((0, 2, 3), (3, 2)), ((3,), (2, 3, 0))]

print('-- PyTorch 1.13\'s results for spec/matmul_ranks_spec.lua, written by')
print('--   /usr/bin/python3 spec/support/matmul_record.py > spec/support/matmul_wants.lua')
print('-- (how the inputs are made: see that script). Do not edit.')
print('return {')
for sa, sb in CASES:
    a = det(sa, 5, 7, 3, 4).requires_grad_(True)
    b = det(sb, 3, 11, 5, 8).requires_grad_(True)
    y = a.matmul(b)
    gy = det(tuple(y.shape), 7, 5, 2, 2)
    (y * gy).sum().backward()
    print('  { a = %s, b = %s, name = %r, y = %s, ys = %s, ga = %s, gb = %s },' % (
        shp(sa), shp(sb), y.grad_fn.name(), nums(y), shp(y.shape), nums(a.grad), nums(b.grad)))
print('}')
