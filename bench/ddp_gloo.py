"""PyTorch's side of bench/run.lua's `ddp` section: the 784-512-256-10 MLP's training step
(cross-entropy, SGD with momentum 0.9), batch 128 per process, 1 thread per process
(OMP_WAIT_POLICY=PASSIVE), alone or as N processes under DistributedDataParallel on the gloo backend
(started with torch.multiprocessing, rendezvous over TCP on localhost).
    python3 bench/ddp_gloo.py NPROC [STEPS]
prints `ms`, `samples_s` (the best of 5 rounds) and `peak_kb` of rank 0."""
import datetime
import os
import queue
import resource
import sys
import time

# one thread means one: set_num_threads alone leaves the BLAS's own threads running (OpenBLAS
# took a second core here: 6.1 s of CPU in 5.0 s), so the libraries hear it before they load
for _v in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ[_v] = os.environ.get('BENCH_THREADS', '1')

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def run(rank, world, steps, port, out):
    torch.set_num_threads(int(os.environ.get('BENCH_THREADS', '1')))
    if world > 1:
        dist.init_process_group('gloo', init_method='tcp://127.0.0.1:%d' % port, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=120))
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    model = nn.parallel.DistributedDataParallel(net) if world > 1 else net
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    torch.manual_seed(1 + rank)
    x = torch.randn(128, 784)
    y = torch.randint(0, 10, (128,))

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    for _ in range(10):
        step()
    best = float('inf')
    for _ in range(5):
        if world > 1:
            dist.barrier()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        t = (time.perf_counter() - t0) / steps
        if world > 1:
            tt = torch.tensor([t], dtype=torch.float64)
            dist.all_reduce(tt, op=dist.ReduceOp.MAX)
            t = tt.item()
        best = min(best, t)
    if rank == 0:
        out.put((best, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def main():
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    ctx = mp.get_context('spawn')
    q = ctx.Queue()
    port = 29500 + os.getpid() % 1000
    if world == 1:
        run(0, 1, steps, port, q)
    else:
        ps = [ctx.Process(target=run, args=(r, world, steps, port, q)) for r in range(world)]
        for p in ps:
            p.start()
        # rank 0's figures, or a failure: a rank that exits with an error, or no figures within 10
        # minutes, ends the others (a gloo rank left alone spins for ever); once the figures are in,
        # a rank still running after 30 s (gloo's barrier or teardown hung: seen here) is ended too
        result, deadline = None, time.monotonic() + 600
        while result is None:
            try:
                result = q.get(timeout=0.2)
            except queue.Empty:
                if any(p.exitcode not in (None, 0) for p in ps) or time.monotonic() > deadline:
                    break
                if any(p.exitcode == 0 for p in ps):  # one finished: the figures come soon or never
                    deadline = min(deadline, time.monotonic() + 30)
        end = time.monotonic() + 30
        for p in ps:
            p.join(max(0.0, end - time.monotonic()))
        for p in ps:
            if p.is_alive():
                p.terminate()
                p.join()
        if result is None:
            sys.exit('bench/ddp_gloo.py: no figures (a rank failed or hung)')
        q.put(result)
    best, peak = q.get()
    print('ms %.6f' % (best * 1e3))
    print('samples_s %.1f' % (128 * world / best))
    print('peak_kb %d' % peak)


if __name__ == '__main__':
    main()
