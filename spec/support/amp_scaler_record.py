# Records PyTorch 1.13's GradScaler on a run with injected infs, for spec/amp_scaler_spec.lua (issue 25).
# 1.13's GradScaler is CUDA-only: here its own class (torch/cuda/amp/grad_scaler.py) runs on CPU tensors,
# with the two CUDA kernels it calls given as their CPU equivalents (the CUDA kernels' arithmetic:
# grads *= inv_scale with found_inf = 1 on any non-finite value; the scale update of
# aten/src/ATen/native/cuda/AmpKernels.cu) and its CUDA-only assertions lifted.
# Run: /usr/bin/python3 spec/support/amp_scaler_record.py   (prints the Lua table)
import math
import torch
import torch.cuda.amp.grad_scaler as gs

def unscale_(grads, found_inf, inv_scale):
    for g in grads:
        if not torch.isfinite(g).all():
            found_inf.fill_(1.0)
        if inv_scale.item() != 1.0:
            g.mul_(inv_scale)

def update_scale_(scale, tracker, found_inf, growth, backoff, interval):
    if found_inf.item():
        scale.fill_(scale.item() * backoff)
        tracker.fill_(0)
    else:
        successful = tracker.item() + 1
        if successful == interval:
            new = torch.tensor(scale.item() * growth, dtype=torch.float32).item()
            if math.isfinite(new):
                scale.fill_(new)
            tracker.fill_(0)
        else:
            tracker.fill_(successful)
    return scale

torch._amp_foreach_non_finite_check_and_unscale_ = unscale_
torch._amp_update_scale_ = update_scale_
gs.amp_definitely_not_available = lambda: False

class Replicator(object):  # _MultiDeviceReplicator without its CUDA assertion
    def __init__(self, master):
        self.master = master
        self._per_device_tensors = {}
    def get(self, device):
        r = self._per_device_tensors.get(device, None)
        if r is None:
            r = self.master.to(device=device, non_blocking=True, copy=True)
            self._per_device_tensors[device] = r
        return r
gs._MultiDeviceReplicator = Replicator

class CPUScaler(gs.GradScaler):
    def scale(self, outputs):
        if self._scale is None:
            self._lazy_init_scale_growth_tracker(outputs.device)
        return outputs * self._scale

def run(steps, infs, nan_steps, interval, clip):
    torch.manual_seed(0)
    w = torch.tensor([[0.5, -0.25, 0.125], [0.75, 0.5, -1.0]], requires_grad=True)
    b = torch.tensor([0.1, -0.2], requires_grad=True)
    opt = torch.optim.SGD([w, b], lr=0.01, momentum=0.9)
    scaler = CPUScaler(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=interval)
    x = torch.tensor([[1.0, 2.0, -1.0], [0.5, -0.5, 2.0], [-1.0, 1.0, 0.25], [2.0, 0.0, 1.0]])
    y = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, -0.5]])
    scales, skipped, trackers = [], [], []
    for step in range(1, steps + 1):
        loss = ((x @ w.t() + b - y) ** 2).mean()
        if step in infs:
            loss = loss * float('inf')
        if step in nan_steps:
            loss = loss * float('nan')
        opt.zero_grad()
        scaler.scale(loss).backward()
        before = w.detach().clone()
        if clip:
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_([w, b], 0.5)
        scaler.step(opt)
        skipped.append(bool(torch.equal(before, w.detach())))
        scaler.update()
        scales.append(scaler.get_scale())
        trackers.append(scaler._get_growth_tracker())
    return scales, skipped, trackers, w.detach().reshape(-1).tolist(), b.detach().tolist(), scaler.state_dict()

def lua(v):
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, (list, tuple)):
        return '{' + ', '.join(lua(x) for x in v) + '}'
    if isinstance(v, dict):
        return '{' + ', '.join('%s = %s' % (k, lua(x)) for k, x in sorted(v.items())) + '}'
    return repr(v)

print('-- PyTorch 1.13\'s GradScaler, recorded by spec/support/amp_scaler_record.py (do not edit: run it again)')
print('return {')
for name, args in (('short', (40, {2, 7, 8, 20}, {30}, 3, False)), ('clip', (25, {5, 6}, set(), 4, True)),
                   ('default', (2003, {2002}, set(), 2000, False))):
    s, k, t, w, b, sd = run(*args)
    # compactly: the steps where the scale changed, with the new scale; the skipped steps; the
    # trackers of the first 40 steps
    changes = [[i + 1, v] for i, v in enumerate(s) if i == 0 or v != s[i - 1]]
    skips = [i + 1 for i, v in enumerate(k) if v]
    print('  %s = { changes = %s, skipped = %s, trackers = %s, w = %s, b = %s, state = %s },' % (
        name, lua(changes), lua(skips), lua(t[:40]), lua(w), lua(b), lua(sd)))
print('}')
