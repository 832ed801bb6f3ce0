#!/usr/bin/env python3
# The PyTorch twin of examples/fashion_mnist.lua, for bench/run.lua's `fashion` section: the same
# LeNet-style network, data (Debian's dataset-fashion-mnist, normalised with the same mean and std),
# batch size, optimizer, learning-rate schedule and evaluation, written as a PyTorch user would
# without torchvision (a TensorDataset of the normalised images: the fastest plain DataLoader path).
# Prints one line per epoch: "epoch E train_s S test_s S loss L test_loss T acc A".
#   /usr/bin/python3 bench/fashion_mnist.py [--epochs 1] [--batch-size 64] [--lr LR]
#       [--optimizer adam|adamw|sgd|rmsprop] [--threads 2] [--seed 1] [--data DIR] [--subset N]
import argparse, gzip, os, struct, time
import torch
import torch.nn as nn
import torch.nn.functional as F

MEAN, STD = 0.2860, 0.3530  # the training images' mean and standard deviation
DEFAULT_LR = {'adam': 3e-3, 'adamw': 3e-3, 'sgd': 0.1, 'rmsprop': 1e-3}


def read_idx(path):
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rb') as f:
        raw = f.read()
    dims = raw[3]
    sizes = struct.unpack('>' + 'I' * dims, raw[4:4 + 4 * dims])
    return torch.frombuffer(bytearray(raw[4 + 4 * dims:]), dtype=torch.uint8).reshape(sizes)


def load(root, split):
    def find(base):
        for name in (base + '.gz', base):
            if os.path.exists(os.path.join(root, name)):
                return os.path.join(root, name)
        raise SystemExit(f'{base}[.gz] not found in {root}')
    x = read_idx(find(f'{split}-images-idx3-ubyte')).float().div_(255).sub_(MEAN).div_(STD).unsqueeze(1)
    y = read_idx(find(f'{split}-labels-idx1-ubyte')).long()
    return x, y


def lenet():
    return nn.Sequential(
        nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--epochs', type=int, default=1)
    p.add_argument('--batch-size', type=int, default=64)
    p.add_argument('--lr', type=float, default=None)
    p.add_argument('--optimizer', default='adam', choices=sorted(DEFAULT_LR))
    p.add_argument('--threads', type=int, default=2)
    p.add_argument('--seed', type=int, default=1)
    p.add_argument('--data', default='/usr/share/datasets/fashion-mnist')
    p.add_argument('--subset', type=int, default=0)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    xtr, ytr = load(a.data, 'train')
    xte, yte = load(a.data, 't10k')
    if a.subset:
        xtr, ytr = xtr[:a.subset], ytr[:a.subset]
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xtr, ytr), batch_size=a.batch_size,
                                         shuffle=True)
    net = lenet()
    lr = a.lr or DEFAULT_LR[a.optimizer]
    if a.optimizer == 'sgd':
        opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    else:
        opt = {'adam': torch.optim.Adam, 'adamw': torch.optim.AdamW, 'rmsprop': torch.optim.RMSprop}[a.optimizer](
            net.parameters(), lr=lr)
    # the learning rate rises then anneals over the whole run, stepped after every batch
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=a.epochs * len(loader))
    for epoch in range(1, a.epochs + 1):
        net.train()
        t0 = time.perf_counter()
        total, n = 0.0, 0
        for x, y in loader:
            loss = F.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * x.shape[0]
            n += x.shape[0]
        train_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        net.eval()
        with torch.no_grad():
            correct, tl = 0, 0.0
            for i in range(0, xte.shape[0], 1000):
                out = net(xte[i:i + 1000])
                tl += F.cross_entropy(out, yte[i:i + 1000], reduction='sum').item()
                correct += (out.argmax(1) == yte[i:i + 1000]).sum().item()
        test_s = time.perf_counter() - t1
        print(f'epoch {epoch} train_s {train_s:.3f} test_s {test_s:.3f} loss {total / n:.4f} '
              f'test_loss {tl / xte.shape[0]:.4f} acc {correct / xte.shape[0]:.4f}', flush=True)


if __name__ == '__main__':
    main()
