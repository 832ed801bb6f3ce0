# bench/gpu_torch.py: PyTorch's twin of bench/gpu.lua (the same rows, the same measuring: the median of 5
# repeats of N steps with one synchronize at the end, N cut to about BENCH_ROW_S seconds a repeat, fp32,
# TF32 off), printed as `key value` lines; a row that fails prints `error <key> <message>`.
# ./run gpu-check runs it beside bench/gpu.lua on one GPU in one call. BENCH_SCALE, BENCH_TINY, BENCH_ROWS
# and BENCH_GEMM_N as there; BENCH_DEVICE=cpu runs it on the CPU (a smoke test where there is no GPU).
import os, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

scale = float(os.environ.get('BENCH_SCALE', '1'))
row_s = float(os.environ.get('BENCH_ROW_S', '0.4'))
tiny = os.environ.get('BENCH_TINY') == '1'
only = set(k for k in os.environ.get('BENCH_ROWS', '').replace(' ', ',').split(',') if k) or None
dev = os.environ.get('BENCH_DEVICE', 'cuda')  # BENCH_DEVICE=cpu: a smoke test of this script without a GPU
if dev.startswith('cuda') and not torch.cuda.is_available():
    sys.stderr.write('bench/gpu_torch.py: no CUDA device\n')
    sys.exit(2)
sync = torch.cuda.synchronize if dev.startswith('cuda') else (lambda: None)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def median(n, f):
    n = max(1, int(n / scale))
    f()
    sync()
    t0 = time.perf_counter()
    for _ in range(min(n, 3)):
        f()
    sync()
    one = (time.perf_counter() - t0) / min(n, 3)
    n = max(1, min(n, int(row_s / max(one, 1e-9))))
    t = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        sync()
        t.append((time.perf_counter() - t0) / n)
    t.sort()
    return t[2]


def out(k, v):
    print('%s %.6g' % (k, v), flush=True)


def row(keys, f):
    keys = [keys] if isinstance(keys, str) else keys
    if only is not None and not any(k in only for k in keys):
        return
    try:
        r = f()
    except Exception as e:  # noqa: BLE001 -- the row's failure is reported, the next row runs
        print('error %s %s' % (keys[0], ' '.join(str(e).split())), flush=True)
        return
    r = r if isinstance(r, tuple) else (r,)
    for k, v in zip(keys, r):
        out(k, v)


def sz(big, small):
    return small if tiny else big


print('device ' + (torch.cuda.get_device_name().replace(' ', '_') if dev.startswith('cuda') else dev))
print('runtime torch-' + torch.__version__.replace(' ', '_'))


def add4():
    a, b = torch.rand(4, device=dev), torch.rand(4, device=dev)
    plain = median(20000, lambda: a + b) * 1e6
    ag, bg = a.clone().requires_grad_(), b.clone().requires_grad_()
    return plain, median(20000, lambda: ag + bg) * 1e6


row(['add4_us', 'add4_grad_us'], add4)


def matmul64():
    a, b = torch.randn(64, 64, device=dev), torch.randn(64, 64, device=dev)
    return median(10000, lambda: a @ b) * 1e6


row('matmul64_us', matmul64)


class MyLinear(nn.Module):  # the Modules note's
    def __init__(self, i, o):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(i, o))
        self.bias = nn.Parameter(torch.randn(o))

    def forward(self, x):
        return x @ self.weight + self.bias


def modules_loop():
    torch.manual_seed(0)
    net = nn.Sequential(MyLinear(4, 3), nn.ReLU(), MyLinear(3, 1)).to(dev)
    optimizer = torch.optim.SGD(net.parameters(), lr=1e-4, weight_decay=1e-2, momentum=0.9)

    def it():
        input = torch.randn(4, device=dev)
        loss = torch.abs(net(input))
        net.zero_grad()
        loss.backward()
        optimizer.step()
    return median(5000, it) * 1e6


row('modules_loop_us', modules_loop)


def mlp():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(128, 784, device=dev), torch.randint(0, 10, (128,), device=dev)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
    s = median(300, step) * 1e3
    with torch.no_grad():
        i = median(1000, lambda: m(x)) * 1e3
    return s, i


row(['mlp_step_ms', 'mlp_infer_ms'], mlp)


def lenet():
    net = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84),
                        nn.ReLU(), nn.Linear(84, 10)).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    n = sz(64, 2)
    x, y = torch.randn(n, 1, 28, 28, device=dev), torch.randint(0, 10, (n,), device=dev)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
    return median(200, step) * 1e3


row('lenet_step_ms', lenet)


def resnet_block():
    c, hw, n = sz(64, 4), sz(56, 8), sz(32, 2)
    conv1, bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False).to(dev), nn.BatchNorm2d(c).to(dev)
    conv2, bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False).to(dev), nn.BatchNorm2d(c).to(dev)
    x = torch.randn(n, c, hw, hw, device=dev, requires_grad=True)

    def step():
        h = F.relu(bn1(conv1(x)))
        o = F.relu(bn2(conv2(h)) + x)
        o.sum().backward()
    return median(50, step) * 1e3


row('resnet_block_ms', resnet_block)


def lstm2():
    h, seq, n = sz(256, 8), sz(32, 3), sz(32, 2)
    lstm = nn.LSTM(h, h, num_layers=2).to(dev)
    x = torch.randn(seq, n, h, device=dev, requires_grad=True)

    def step():
        o, _ = lstm(x)
        o.sum().backward()
    return median(50, step) * 1e3


row('lstm2_ms', lstm2)


def transformer():
    d, heads, ff, seq, n = sz(256, 8), sz(4, 2), sz(1024, 16), sz(64, 4), sz(16, 2)
    layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=ff).to(dev)
    x = torch.randn(seq, n, d, device=dev, requires_grad=True)
    return median(50, lambda: layer(x).sum().backward()) * 1e3


row('transformer_ms', transformer)


def sgemm():
    n = int(os.environ.get('BENCH_GEMM_N', sz(4096, 64)))
    ga, gb = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
    t = median(20, lambda: ga @ gb)
    return 2 * n ** 3 / t / 1e12


row('sgemm_tflops', sgemm)
