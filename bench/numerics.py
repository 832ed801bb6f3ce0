"""bench/numerics.py DIR: PyTorch's side of bench/numerics.lua. Reads DIR/ops.txt (one `name|expression`
a line: the expression in x, and y for two operands) and DIR/{f32,f64}_{x,y}.bin (little-endian arrays),
writes DIR/torch_<dtype>_<name>.bin: the expression's result on the CPU, contiguous, of x's dtype."""
import os, sys
import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(int(os.environ.get('BENCH_THREADS', '2')))
d = sys.argv[1]
for dt, np_dt in (('f32', np.float32), ('f64', np.float64)):
    x = torch.from_numpy(np.fromfile(os.path.join(d, dt + '_x.bin'), dtype=np_dt))
    y = torch.from_numpy(np.fromfile(os.path.join(d, dt + '_y.bin'), dtype=np_dt))
    with open(os.path.join(d, 'ops.txt')) as f:
        for line in f:
            name, expr = line.rstrip('\n').split('|', 1)
            r = eval(expr, {'torch': torch, 'F': F, 'x': x, 'y': y})
            r.contiguous().numpy().tofile(os.path.join(d, 'torch_%s_%s.bin' % (dt, name)))
