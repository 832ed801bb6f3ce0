# bench/gpu_torch.py: PyTorch's twin of bench/gpu.lua (the same rows, the same measuring: the median of 5
# repeats of N steps with one synchronize at the end, fp32, TF32 off), printed as `key value` lines.
# ./run gpu-check runs it beside bench/gpu.lua on one GPU in one call.
import os, time
import torch
import torch.nn as nn
import torch.nn.functional as F

scale = float(os.environ.get('BENCH_SCALE', '1'))
dev = 'cuda'
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def median(n, f):
    n = max(1, int(n / scale))
    for _ in range(min(n, 3)):
        f()
    torch.cuda.synchronize()
    t = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        torch.cuda.synchronize()
        t.append((time.perf_counter() - t0) / n)
    t.sort()
    return t[2]


def out(k, v):
    print('%s %.6g' % (k, v), flush=True)


print('device ' + torch.cuda.get_device_name().replace(' ', '_'))
a, b = torch.rand(4, device=dev), torch.rand(4, device=dev)
out('add4_us', median(20000, lambda: a + b) * 1e6)
ag, bg = a.clone().requires_grad_(), b.clone().requires_grad_()
out('add4_grad_us', median(20000, lambda: ag + bg) * 1e6)

torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)).to(dev)
opt = torch.optim.SGD(mlp.parameters(), lr=0.01, momentum=0.9)
x, y = torch.randn(128, 784, device=dev), torch.randint(0, 10, (128,), device=dev)


def mlp_step():
    opt.zero_grad()
    loss = F.cross_entropy(mlp(x), y)
    loss.backward()
    opt.step()


out('mlp_step_ms', median(300, mlp_step) * 1e3)

lenet = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84),
                      nn.ReLU(), nn.Linear(84, 10)).to(dev)
lopt = torch.optim.SGD(lenet.parameters(), lr=0.01, momentum=0.9)
lx, ly = torch.randn(64, 1, 28, 28, device=dev), torch.randint(0, 10, (64,), device=dev)


def lenet_step():
    lopt.zero_grad()
    loss = F.cross_entropy(lenet(lx), ly)
    loss.backward()
    lopt.step()


out('lenet_step_ms', median(200, lenet_step) * 1e3)

n = int(os.environ.get('BENCH_GEMM_N', '4096'))
ga, gb = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
t = median(20, lambda: ga @ gb)
out('sgemm_tflops', 2 * n ** 3 / t / 1e12)
