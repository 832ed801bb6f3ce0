"""PyTorch 1.13's results of the elementwise ops of spec/numerics_spec.lua on its input grid:
   /usr/bin/python3 spec/support/numerics_record.py > spec/support/numerics_wants.lua
The ops are bench/numerics_ops.lua's, the grid is like bench/numerics.lua's, the grid smaller: 128 values
evenly inside [-10, 10] (-10 + (i + 0.5) * 0.15625, exact in float32) then 32 edge values; y is x reversed.
Each result is base64 of its little-endian bytes."""
import base64, math, re
import numpy as np
import torch
import torch.nn.functional as F

EDGE = [0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 1.1754944e-38, 1e-30, -1e-30, 1e-7, -1e-7, 0.5, -0.5, 1.0, -1.0,
        2.0, 15.5, -15.5, 30.0, -30.0, 88.5, -88.5, 89.0, -104.0, 710.0, -745.0, 3e38, -3e38, math.inf, -math.inf,
        math.nan, 1e300]
def grid(dtype):
    xs = [-10 + (i + 0.5) * 0.15625 for i in range(128)] + EDGE
    x = torch.tensor(xs, dtype=torch.float64).to(dtype)
    return x, x.flip(0).contiguous()

src = open('bench/numerics_ops.lua').read()
ops = re.findall(r"\{ '([\w.]+)', function\(x(?:, y)?\) return .*? end, \"?'?(.*?)'?\"? \},?\n", src)
print('-- PyTorch 1.13 (/usr/bin/python3) results on the grid of spec/support/numerics_record.py; written by it.')
print('return {')
for name, expr in ops:
    expr = expr.strip("'\"")
    row = []
    for dt, key in ((torch.float32, 'f32'), (torch.float64, 'f64')):
        x, y = grid(dt)
        r = eval(expr, {'torch': torch, 'F': F, 'x': x, 'y': y}).contiguous()
        row.append("%s = '%s'" % (key, base64.b64encode(r.numpy().tobytes()).decode()))
    print("  ['%s'] = { %s }," % (name, ', '.join(row)))
print('}')
