"""The bench/workloads/*.lua workloads in PyTorch, printing the same `key value` lines.
Usage: python3 bench/torch_workloads.py WORKLOAD [N]   (run.lua starts it with OMP_WAIT_POLICY=PASSIVE)"""
import os, sys, time
import torch

torch.set_num_threads(int(os.environ.get('BENCH_THREADS', '2')))

def best(fn, reps, rounds=5):
    b = float('inf')
    for r in range(rounds + 1):
        t0 = time.perf_counter()
        fn(reps)
        t = (time.perf_counter() - t0) / reps
        if r > 0 and t < b:
            b = t
    return b

def peak_kb():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmHWM:'):
                return int(line.split()[1])
    return -1

def report(k, v):
    print(k, v, flush=True)

def add_small(_):
    a = torch.tensor([1., 2., 3., 4.])
    b = torch.tensor([5., 6., 7., 8.])
    def f(k):
        for _ in range(k):
            c = a + b
    report('us', best(f, 200000) * 1e6)

def matmul_small(n):
    n = n or 64
    a, b = torch.full((n, n), 0.5), torch.full((n, n), 0.25)
    out = torch.empty(n, n)
    def f(k):
        if OUT:
            for _ in range(k):
                torch.matmul(a, b, out=out)
        else:
            for _ in range(k):
                c = a @ b
    t = best(f, 4 * 10**7 // (n * n * n) + 20, 7)
    report('us', t * 1e6)
    report('gflops', 2 * n * n * n / t / 1e9)

def matmul_big(n):
    n = n or 1024
    a, b = torch.full((n, n), 0.5), torch.full((n, n), 0.25)
    def f(k):
        for _ in range(k):
            c = a @ b
    reps, rounds = (1, 2) if n >= 4096 else (4, 4)
    t = best(f, reps, rounds)
    report('gflops', 2 * n * n * n / t / 1e9)
    report('ms', t * 1e3)

def matmul_loop(n):
    n = n or 384
    a, b = torch.full((n, n), 0.5), torch.full((n, n), 0.25)
    out = torch.empty(n, n)
    def f(k):
        for _ in range(k):
            torch.matmul(a, b, out=out)
    report('us', best(f, 2 * 10**9 // (n * n * n) + 5) * 1e6)

def add_small_grad(_):
    a = torch.tensor([1., 2., 3., 4.], requires_grad=True)
    b = torch.tensor([5., 6., 7., 8.], requires_grad=True)
    def f(k):
        for _ in range(k):
            c = a + b
    report('us', best(f, 200000) * 1e6)

def train_plain(n):
    # the same loop as bench/workloads/train_plain.lua
    n = n or 10000
    torch.manual_seed(0)
    w0 = torch.randn(4, 3, requires_grad=True)
    b0 = torch.randn(3, requires_grad=True)
    w1 = torch.randn(3, 1, requires_grad=True)
    b1 = torch.randn(1, requires_grad=True)
    params = [w0, b0, w1, b1]
    bufs = [None] * 4
    lr, momentum, wd = 1e-4, 0.9, 1e-2
    def step():
        with torch.no_grad():
            for i, p in enumerate(params):
                d = p.grad + p * wd
                if bufs[i] is None:
                    bufs[i] = d.clone()
                else:
                    bufs[i].mul_(momentum).add_(d)
                p.sub_(bufs[i] * lr)
    def iteration():
        x = torch.randn(4)
        out = (x @ w0 + b0).relu() @ w1 + b1
        loss = out.abs()
        for p in params:
            if p.grad is not None:
                p.grad.zero_()
        loss.backward()
        step()
    def f(k):
        for _ in range(k):
            iteration()
    report('us', best(f, n, 3) * 1e6)

def train_modules(n):
    # the Modules note's loop with its modules (bench/workloads/train_modules.lua)
    n = n or 10000
    import torch.nn as nn
    import torch.nn.functional as F
    class MyLinear(nn.Module):
        def __init__(self, in_features, out_features):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(in_features, out_features))
            self.bias = nn.Parameter(torch.randn(out_features))
        def forward(self, input):
            return (input @ self.weight) + self.bias
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.l0 = MyLinear(4, 3)
            self.l1 = MyLinear(3, 1)
        def forward(self, x):
            return self.l1(F.relu(self.l0(x)))
    torch.manual_seed(0)
    net = Net()
    optimizer = torch.optim.SGD(net.parameters(), lr=1e-4, weight_decay=1e-2, momentum=0.9)
    def iteration():
        input = torch.randn(4)
        output = net(input)
        loss = torch.abs(output)
        net.zero_grad()
        loss.backward()
        optimizer.step()
    def f(k):
        for _ in range(k):
            iteration()
    report('us', best(f, n, 3) * 1e6)

def module_call(_):
    import torch.nn as nn
    class MyLinear(nn.Module):
        def __init__(self, in_features, out_features):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(in_features, out_features))
            self.bias = nn.Parameter(torch.randn(out_features))
        def forward(self, input):
            return (input @ self.weight) + self.bias
    m = MyLinear(4, 3)
    w, b = m.weight, m.bias
    x = torch.randn(4)
    def plain(k):
        for _ in range(k):
            y = x @ w + b
    def mod(k):
        for _ in range(k):
            y = m(x)
    p, q = best(plain, 20000), best(mod, 20000)
    report('plain_us', p * 1e6)
    report('us', q * 1e6)
    report('ratio', q / p)

def save_load(n):
    # bench/workloads/save_load.lua: a 784-512-256-10 MLP's state_dict, torch.save / torch.load
    n = n or 50
    import tempfile, os
    import torch.nn as nn
    net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    sd = net.state_dict()
    fd, path = tempfile.mkstemp()
    os.close(fd)
    def save(k):
        for _ in range(k):
            torch.save(sd, path)
    def load(k):
        for _ in range(k):
            torch.load(path)
    s, l = best(save, n, 3), best(load, n, 3)
    os.remove(path)
    report('save_us', s * 1e6)
    report('load_us', l * 1e6)

def exp_big(n):
    # bench/workloads/exp_big.lua: exp, log, tanh, sigmoid on n float32 values, into new tensors
    n = n or 1048576
    x = torch.linspace(-10, 10, n)
    pos = torch.linspace(0.001, 1000, n)
    reps = max(1, 2**24 // n)
    def time(f, a):
        def g(k):
            for _ in range(k):
                y = f(a)
        return best(g, reps)
    report('exp_us', time(torch.exp, x) * 1e6)
    report('log_us', time(torch.log, pos) * 1e6)
    report('tanh_us', time(torch.tanh, x) * 1e6)
    report('sigmoid_us', time(torch.sigmoid, x) * 1e6)

def matmul_shape(spec):
    # bench/workloads/matmul_shape.lua: a @ b for an M x K by K x N product, the result allocated
    m, k, n = (int(x) for x in (spec or '128x784x512').split('x'))
    a, b = torch.full((m, k), 0.5), torch.full((k, n), 0.25)
    flop = 2 * m * n * k
    def f(r):
        for _ in range(r):
            c = a @ b
    t = best(f, int(4e8 // flop) + 1, 15)
    report('gflops', flop / t / 1e9)
    report('us', t * 1e6)

def train_mlp(n):
    # bench/workloads/train_mlp.lua: a 784-512-256-10 MLP, batch 128, cross-entropy, SGD momentum 0.9
    import torch.nn as nn
    import torch.nn.functional as F
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(128, 784), torch.randint(0, 10, (128,))
    def f(r):
        for _ in range(r):
            loss = F.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    def g(r):
        with torch.no_grad():
            for _ in range(r):
                out = net(x)
    report('infer_ms', best(g, n or 50, 5) * 1e3)
    report('ms', best(f, n or 50, 5) * 1e3)

def pool(_):
    # bench/workloads/pool.lua (issue 12, pooling): forward + backward of LeNet-5's max pools and of an
    # adaptive avg pool 64x512x7x7 -> 1x1, float32
    import torch.nn.functional as F
    torch.manual_seed(0)
    def bench(key, shape, pool, reps):
        x = torch.randn(shape).requires_grad_()
        g = torch.randn(pool(x.detach()).shape)
        def step(k):
            for _ in range(k):
                y = pool(x)
                gx, = torch.autograd.grad(y, x, g)
        report(key, best(step, reps) * 1e6)
    bench('lenet_pool1_us', (64, 6, 24, 24), lambda x: F.max_pool2d(x, 2), 100)
    bench('lenet_pool2_us', (64, 16, 8, 8), lambda x: F.max_pool2d(x, 2), 300)
    bench('adaptive_avg_us', (64, 512, 7, 7), lambda x: F.adaptive_avg_pool2d(x, 1), 50)

# issue 12, conv part
def conv(shape):
    # bench/workloads/conv.lua: conv2d forward, and forward + backward, float32
    import torch.nn as nn
    import torch.nn.functional as F
    torch.manual_seed(0)
    shapes = {
        'lenet1': dict(n=64, cin=1, hw=28, cout=6, k=5, pad=0, xgrad=False, reps=20),
        'lenet2': dict(n=64, cin=6, hw=12, cout=16, k=5, pad=0, xgrad=True, reps=20),
        'c64': dict(n=8, cin=64, hw=56, cout=64, k=3, pad=1, xgrad=True, reps=3),
    }
    s = shapes.get(shape or 'lenet1')
    if s is None:  # rC_HW_N: a ResNet-style C->C 3x3 conv, padding 1, batch N of CxHWxHW
        c, hw, n = (int(v) for v in shape[1:].split('_'))
        s = dict(n=n, cin=c, hw=hw, cout=c, k=3, pad=1, xgrad=True, reps=max(1, 16 // n))
    x = torch.randn(s['n'], s['cin'], s['hw'], s['hw'])
    if s['xgrad']:
        x.requires_grad_()
    m = nn.Conv2d(s['cin'], s['cout'], s['k'], padding=s['pad'])
    g = torch.ones(F.conv2d(x.detach(), m.weight.detach(), None, 1, s['pad']).shape)
    def fwd(k):
        with torch.no_grad():
            for _ in range(k):
                y = m(x)
    def fb(k):
        for _ in range(k):
            m.zero_grad()
            y = m(x)
            y.backward(g)
    bwd = float('inf')
    for r in range(6):
        tot = 0.0
        for _ in range(s['reps']):
            m.zero_grad()
            x.grad = None
            y = m(x)
            t0 = time.perf_counter()
            y.backward(g)
            tot += time.perf_counter() - t0
        if r > 0 and tot / s['reps'] < bwd:
            bwd = tot / s['reps']
    report('fwd_ms', best(fwd, s['reps']) * 1e3)
    report('bwd_ms', bwd * 1e3)
    report('fwd_bwd_ms', best(fb, s['reps']) * 1e3)

# recurrent layers (issue 12, rnn part)
def lstm(n):
    # bench/workloads/lstm.lua: a 2-layer LSTM (input 128, hidden 256, batch_first), seq 32, batch 32,
    # forward + zero_grad + backward of the outputs' sum
    import torch.nn as nn
    torch.manual_seed(0)
    m = nn.LSTM(128, 256, num_layers=2, batch_first=True)
    x = torch.randn(32, 32, 128)
    def f(r):
        for _ in range(r):
            out, _ = m(x)
            m.zero_grad()
            out.sum().backward()
    report('ms', best(f, n or 20, 5) * 1e3)

def startup(_):
    pass

# attention and transformers (issue 12, the attention part)
def transformer(n):
    # bench/workloads/transformer.lua: TransformerEncoderLayer(256, 4, 1024, dropout 0, batch_first),
    # input (16, 64, 256): zero_grad (to none), forward, sum, backward
    import torch.nn as nn
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(256, 4, 1024, 0.0, batch_first=True)
    x = torch.randn(16, 64, 256)
    def f(r):
        for _ in range(r):
            layer.zero_grad(set_to_none=True)
            layer(x).sum().backward()
    steps = n if isinstance(n, int) else 20
    report('ms', best(f, steps, 5) * 1e3)
    if n == 'phases':
        def fwd(r):
            for _ in range(r):
                layer(x).sum()
        report('forward_ms', best(fwd, steps, 5) * 1e3)
        def nog(r):
            with torch.no_grad():
                for _ in range(r):
                    layer(x)
        report('no_grad_forward_ms', best(nog, steps, 5) * 1e3)

# ---- issue 12, the modules part
def norm_loss(_):
    # bench/workloads/norm_loss.lua: layer norm forward, forward + backward; cross-entropy steps
    torch.manual_seed(0)
    x = torch.randn(1024, 256)
    xg = x.clone().requires_grad_()
    w, b = torch.randn(256, requires_grad=True), torch.randn(256, requires_grad=True)
    g = torch.randn(1024, 256)
    F = torch.nn.functional
    def fwd(k):
        with torch.no_grad():
            for _ in range(k):
                y = F.layer_norm(x, (256,), w, b)
    report('ln_fwd_us', best(fwd, 200) * 1e6)
    def step(k):
        for _ in range(k):
            xg.grad = w.grad = b.grad = None
            F.layer_norm(xg, (256,), w, b).backward(g)
    report('ln_step_us', best(step, 200) * 1e6)
    def ce(c):
        logits = torch.randn(128, c, requires_grad=True)
        target = torch.randint(0, c, (128,))
        def f(k):
            for _ in range(k):
                logits.grad = None
                F.cross_entropy(logits, target).backward()
        return best(f, 500) * 1e6
    report('ce_step_us', ce(10))
    report('ce1k_step_us', ce(1000))

# issue 12: the LeNet-5 training step
def lenet(n):
    # bench/workloads/lenet.lua: LeNet-5, batch 64 of 1x28x28, cross-entropy, plain SGD
    import torch.nn as nn
    import torch.nn.functional as F
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x, y = torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))
    def f(r):
        for _ in range(r):
            loss = F.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    report('ms', best(f, n or 50, 5) * 1e3)

def program_lenet(n):
    # bench/workloads/program_lenet.lua: LeNet-5 inference, batch 1 of 1x28x28, eval, eager, no_grad
    import torch.nn as nn
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10)).eval()
    x = torch.randn(1, 1, 28, 28)
    def f(r):
        with torch.no_grad():
            for _ in range(r):
                net(x)
    report('us', best(f, int(n or 2000), 5) * 1e6)

# s6-vec: the softmax family of a training step
def softmax(_):
    # bench/workloads/softmax.lua: softmax and log_softmax forward, forward + backward; cross-entropy
    torch.manual_seed(0)
    F = torch.nn.functional
    x = torch.randn(16, 4, 64, 64)
    xg = x.clone().requires_grad_()
    g = torch.randn(16, 4, 64, 64)
    def fwd(k):
        with torch.no_grad():
            for _ in range(k):
                y = F.softmax(x, -1)
    report('sm_fwd_us', best(fwd, 100) * 1e6)
    def step(k):
        for _ in range(k):
            xg.grad = None
            F.softmax(xg, -1).backward(g)
    report('sm_step_us', best(step, 100) * 1e6)
    logits = torch.randn(128, 1000)
    def lfwd(k):
        with torch.no_grad():
            for _ in range(k):
                y = F.log_softmax(logits, 1)
    report('lsm_fwd_us', best(lfwd, 500) * 1e6)
    c = torch.randn(32, 64, 32, 32, requires_grad=True)
    gc = torch.randn(32, 64, 32, 32)
    def cstep(k):
        for _ in range(k):
            c.grad = None
            F.softmax(c, 1).backward(gc)
    report('sm_dim1_step_us', best(cstep, 50) * 1e6)
    lg = torch.randn(128, 1000, requires_grad=True)
    target = torch.randint(0, 1000, (128,))
    def ce(k):
        for _ in range(k):
            lg.grad = None
            F.cross_entropy(lg, target).backward()
    report('ce1k_step_us', best(ce, 500) * 1e6)

def linalg(_):
    # bench/workloads/linalg.lua: torch.linalg on 8 float32 256x256 matrices, one thread, ms per call
    torch.set_num_threads(1)
    torch.manual_seed(0)
    A = torch.randn(8, 256, 256)
    S = A @ A.transpose(-2, -1) / 256 + torch.eye(256)
    R = torch.randn(8, 256, 32)
    L = torch.linalg
    cases = [('cholesky_ms', lambda: L.cholesky(S), 10), ('qr_ms', lambda: L.qr(A), 3),
             ('svd_ms', lambda: L.svd(A, full_matrices=False), 1), ('eigh_ms', lambda: L.eigh(S), 1),
             ('solve_ms', lambda: L.solve(A, R), 5), ('inv_ms', lambda: L.inv(A), 3), ('det_ms', lambda: L.det(A), 5),
             ('lstsq_ms', lambda: L.lstsq(A, R), 2)]
    for key, f, reps in cases:
        def run(k, f=f):
            for _ in range(k):
                f()
        report(key, best(run, reps, 3) * 1e3)
    report('peak_kb', peak_kb())

def dataloader(workers):
    # bench/workloads/dataloader.lua: 1 ms of Python work per sample (a calibrated loop), a 3x32x32
    # image and a label, 512 samples in batches of 16, one pass with `workers` worker processes
    from torch.utils.data import Dataset, DataLoader
    torch.set_num_threads(1)
    def spin(n):
        x = 1
        for _ in range(n):
            x = (x * 1103515245 + 12345) % 2147483648
        return x
    turns = 20000
    spin(turns)
    b = float('inf')
    for _ in range(5):
        t0 = time.perf_counter()
        spin(turns)
        b = min(b, time.perf_counter() - t0)
    per_ms = int(turns / (b * 1e3))
    class Work(Dataset):
        def __len__(self): return 512
        def __getitem__(self, i):
            spin(per_ms)
            return torch.full((3, 32, 32), float(i)), i % 10
    ds = Work()
    def one(_):
        n = 0
        for x, y in DataLoader(ds, batch_size=16, num_workers=workers or 0):
            n += x.size(0)
        assert n == 512
    report('ms_per_batch', best(one, 1, 3) * 1e3 / 32)
    report('turns_per_ms', per_ms)
def sparse_linear(n):
    # issue 24: PyTorch's pruned Linear computes densely (weight_orig * weight_mask, then linear);
    # after prune.remove the weight is dense with zeros. Also its own sparse CSR product (beta in 1.13).
    import warnings
    import torch.nn.utils.prune as prune
    warnings.simplefilter('ignore')
    n = n or 4096
    torch.manual_seed(0)
    m = torch.nn.Linear(n, n)
    prune.l1_unstructured(m, 'weight', 0.9)
    prune.remove(m, 'weight')
    x = torch.randn(64, n)
    w_csr = m.weight.detach().to_sparse_csr()
    def fd(k):
        with torch.no_grad():
            for _ in range(k):
                m(x)
    def fs(k):
        with torch.no_grad():
            for _ in range(k):
                torch.nn.functional.linear(x, w_csr, m.bias)
    td = ts = float('inf')
    for _ in range(3):
        td = min(td, best(fd, 5, 3))
        ts = min(ts, best(fs, 5, 3))
    report('dense_ms', td * 1e3)
    report('sparse_ms', ts * 1e3)

def fx_fuse(_):
    # issue 24: the block and the LeNet-BN of bench/workloads/fx_fuse.lua, as written and fused by
    # torch.fx.experimental.optimization.fuse
    import torch.nn as nn
    from torch.fx.experimental.optimization import fuse
    torch.manual_seed(0)

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + x)

    def bench(name, model, x, reps):
        model.train()
        with torch.no_grad():
            for _ in range(2):
                model(x)
        model.eval()
        fused = fuse(model)
        def f1(k):
            with torch.no_grad():
                for _ in range(k):
                    model(x)
        def f2(k):
            with torch.no_grad():
                for _ in range(k):
                    fused(x)
        t1 = t2 = float('inf')
        for _ in range(3):
            t1 = min(t1, best(f1, reps, 3))
            t2 = min(t2, best(f2, reps, 3))
        report(name + '_ms', t1 * 1e3)
        report(name + '_fused_ms', t2 * 1e3)

    bench('block', Block(64), torch.randn(8, 64, 56, 56), 3)
    lenet = nn.Sequential(nn.Conv2d(1, 6, 5), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(6, 16, 5), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(256, 120), nn.BatchNorm1d(120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                          nn.Linear(84, 10))
    bench('lenet', lenet, torch.randn(64, 1, 28, 28), 20)

def lowp(_):
    # bench/workloads/lowp.lua (issue 25): the same figures in PyTorch (bfloat16 autocast, dynamic and static
    # quantization with its default engine here, a bfloat16 product)
    import torch.nn as nn
    import torch.nn.functional as F
    import torch.ao.quantization as Q
    torch.manual_seed(0)
    def mlp():
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    net = mlp()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(256, 784), torch.randint(0, 10, (256,))
    def step32(k):
        for _ in range(k):
            loss = F.cross_entropy(net(x), y); opt.zero_grad(); loss.backward(); opt.step()
    def stepamp(k):
        for _ in range(k):
            with torch.autocast('cpu', dtype=torch.bfloat16):
                loss = F.cross_entropy(net(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
    b32 = bamp = float('inf')
    for _ in range(3):
        b32 = min(b32, best(step32, 10, 3))
        bamp = min(bamp, best(stepamp, 10, 3))
    report('f32_step_ms', b32 * 1e3)
    report('amp_step_ms', bamp * 1e3)
    inf = mlp().eval()
    xi = torch.randn(128, 784)
    qinf = Q.quantize_dynamic(inf, {nn.Linear}, dtype=torch.qint8)
    def fi(k):
        with torch.no_grad():
            for _ in range(k): inf(xi)
    def qi(k):
        with torch.no_grad():
            for _ in range(k): qinf(xi)
    bf = bq = float('inf')
    for _ in range(3):
        bf = min(bf, best(fi, 20, 3))
        bq = min(bq, best(qi, 20, 3))
    report('f32_infer_ms', bf * 1e3)
    report('qdyn_infer_ms', bq * 1e3)
    lenet = nn.Sequential(Q.QuantStub(), nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                          nn.Linear(84, 10), Q.DeQuantStub()).eval()
    imgs = torch.randn(1000, 1, 28, 28)
    lenet.qconfig = Q.get_default_qconfig('x86')
    fused = Q.fuse_modules(lenet, [['1', '2'], ['4', '5'], ['8', '9'], ['10', '11']])
    prepared = Q.prepare(fused)
    for i in range(8):
        prepared(imgs[i * 64:(i + 1) * 64])
    qlenet = Q.convert(prepared)
    def lf(k):
        with torch.no_grad():
            for _ in range(k): lenet(imgs)
    def lq(k):
        with torch.no_grad():
            for _ in range(k): qlenet(imgs)
    blf = blq = float('inf')
    for _ in range(3):
        blf = min(blf, best(lf, 3, 2))
        blq = min(blq, best(lq, 3, 2))
    report('lenet_f32_ms', blf * 1e3)
    report('lenet_q_ms', blq * 1e3)
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    ab, bb = a.bfloat16(), b.bfloat16()
    def mf(k):
        for _ in range(k): a @ b
    def mb(k):
        for _ in range(k): ab @ bb
    report('f32_gflops', 2 * 1024 ** 3 / best(mf, 5, 3) / 1e9)
    report('bf16_gflops', 2 * 1024 ** 3 / best(mb, 5, 3) / 1e9)

if __name__ == '__main__':
    w = sys.argv[1]
    n = sys.argv[2] if len(sys.argv) > 2 else None
    n = int(n) if n is not None and n.isdigit() else n
    OUT = len(sys.argv) > 3 and sys.argv[3] == 'out'
    globals()[w](n)
    report('peak_kb', peak_kb())
