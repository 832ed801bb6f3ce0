# Records spec/support/lr_scheduler_wants.lua, PyTorch 1.13's learning rates for the scheduler
# cases of spec/lr_scheduler_spec.lua (which builds the same schedulers in Lua, by case name):
#   /usr/bin/python3 spec/support/lr_scheduler_record.py > spec/support/lr_scheduler_wants.lua
# The optimizer: SGD (momentum 0.9) or Adam over two parameter groups with lr 0.1 and 0.05. Each
# case records, for 30 epochs, get_last_lr() then optimizer.step() then scheduler.step() (for
# ReduceLROnPlateau, step(METRICS[epoch])), and for the cyclic ones each group's momentum (or
# beta1) at the same moments. 'epochs' cases call step(epoch) at the listed epochs instead.
import warnings
import torch
from torch.optim import lr_scheduler as L
warnings.simplefilter('ignore')

METRICS = [1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85, 0.7, 0.7, 0.7, 0.71, 0.69, 0.5,
           0.5, 0.5, 0.5, 0.5, 0.5, 0.4, 0.45, 0.45, 0.45, 0.45, 0.45, 0.45, 0.45, 0.45]
EPOCHS = [0, 5, 3, 10, 7, 7, 12, 1, 20, 4]

def make(kind):
    a, b = torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)
    groups = [{'params': [a], 'lr': 0.1}, {'params': [b], 'lr': 0.05}]
    if kind == 'adam': return torch.optim.Adam(groups)
    return torch.optim.SGD(groups, lr=0.1, momentum=0.9)

CASES = [
  ('StepLR', 'sgd', lambda o: L.StepLR(o, step_size=3, gamma=0.5)),
  ('MultiStepLR', 'sgd', lambda o: L.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3)),
  ('ConstantLR', 'sgd', lambda o: L.ConstantLR(o, factor=0.25, total_iters=4)),
  ('ConstantLR default', 'sgd', lambda o: L.ConstantLR(o)),
  ('LinearLR', 'sgd', lambda o: L.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=7)),
  ('LinearLR default', 'sgd', lambda o: L.LinearLR(o)),
  ('ExponentialLR', 'sgd', lambda o: L.ExponentialLR(o, gamma=0.9)),
  ('CosineAnnealingLR', 'sgd', lambda o: L.CosineAnnealingLR(o, T_max=7, eta_min=0.001)),
  ('CosineAnnealingLR default', 'sgd', lambda o: L.CosineAnnealingLR(o, 10)),
  ('CosineAnnealingWarmRestarts', 'sgd', lambda o: L.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2, eta_min=0.001)),
  ('CosineAnnealingWarmRestarts T_mult 1', 'sgd', lambda o: L.CosineAnnealingWarmRestarts(o, 5)),
  ('CyclicLR', 'sgd', lambda o: L.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=4, step_size_down=3)),
  ('CyclicLR triangular2', 'sgd', lambda o: L.CyclicLR(o, 0.01, 0.1, step_size_up=3, mode='triangular2')),
  ('CyclicLR exp_range', 'sgd', lambda o: L.CyclicLR(o, 0.01, 0.1, step_size_up=5, mode='exp_range', gamma=0.9,
                                                   base_momentum=0.7, max_momentum=0.95)),
  ('CyclicLR no momentum', 'adam', lambda o: L.CyclicLR(o, 0.01, 0.1, step_size_up=2, cycle_momentum=False)),
  ('OneCycleLR', 'sgd', lambda o: L.OneCycleLR(o, max_lr=0.5, total_steps=30)),
  ('OneCycleLR three_phase linear', 'sgd', lambda o: L.OneCycleLR(o, max_lr=[0.5, 0.2], epochs=6, steps_per_epoch=5,
                                                             pct_start=0.25, anneal_strategy='linear', three_phase=True)),
  ('OneCycleLR adam', 'adam', lambda o: L.OneCycleLR(o, max_lr=0.01, total_steps=40, div_factor=10.0,
                                                  final_div_factor=100.0)),
  ('PolynomialLR', 'sgd', lambda o: L.PolynomialLR(o, total_iters=8, power=2.0)),
  ('PolynomialLR default', 'sgd', lambda o: L.PolynomialLR(o)),
  ('LambdaLR', 'sgd', lambda o: L.LambdaLR(o, lambda e: 0.95 ** e)),
  ('LambdaLR per group', 'sgd', lambda o: L.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: 0.9 ** e])),
  ('MultiplicativeLR', 'sgd', lambda o: L.MultiplicativeLR(o, lambda e: 0.95)),
  ('SequentialLR', 'sgd', lambda o: L.SequentialLR(o, [L.ConstantLR(o, factor=0.1, total_iters=2),
                                                   L.ExponentialLR(o, gamma=0.9)], milestones=[2])),
  ('SequentialLR three', 'sgd', lambda o: L.SequentialLR(o, [L.LinearLR(o, start_factor=0.5, total_iters=4),
                                                         L.StepLR(o, step_size=2, gamma=0.5),
                                                         L.CosineAnnealingLR(o, T_max=6)], milestones=[5, 12])),
  ('ChainedScheduler', 'sgd', lambda o: L.ChainedScheduler([L.ConstantLR(o, factor=0.1, total_iters=2),
                                                         L.ExponentialLR(o, gamma=0.9)])),
  ('ReduceLROnPlateau', 'sgd', lambda o: L.ReduceLROnPlateau(o, patience=2, factor=0.5, cooldown=1, min_lr=[0.01, 0.0])),
  ('ReduceLROnPlateau max abs', 'sgd', lambda o: L.ReduceLROnPlateau(o, mode='max', threshold_mode='abs',
                                                                  threshold=0.01, patience=1)),
  ('StepLR epochs', 'sgd', lambda o: L.StepLR(o, step_size=3, gamma=0.5)),
  ('MultiStepLR epochs', 'sgd', lambda o: L.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3)),
  ('ExponentialLR epochs', 'sgd', lambda o: L.ExponentialLR(o, gamma=0.9)),
  ('CosineAnnealingLR epochs', 'sgd', lambda o: L.CosineAnnealingLR(o, T_max=7, eta_min=0.001)),
  ('LinearLR epochs', 'sgd', lambda o: L.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=7)),
  ('ConstantLR epochs', 'sgd', lambda o: L.ConstantLR(o, factor=0.25, total_iters=4)),
  ('PolynomialLR epochs', 'sgd', lambda o: L.PolynomialLR(o, total_iters=8, power=2.0)),
  ('CosineAnnealingWarmRestarts epochs', 'sgd', lambda o: L.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2)),
]

def momenta(o):
    return [g['betas'][0] if 'betas' in g else g['momentum'] for g in o.param_groups]

def lua_list(v): return '{ ' + ', '.join(repr(float(x)) for x in v) + ' }'

print("-- PyTorch 1.13's learning rates for the scheduler cases of spec/lr_scheduler_spec.lua, written by")
print('--   /usr/bin/python3 spec/support/lr_scheduler_record.py > spec/support/lr_scheduler_wants.lua')
print('-- { name, optimizer, lrs = {{group 1, group 2} per epoch}, momenta = (likewise) }')
print('return {')
print('  metrics = %s,' % lua_list(METRICS))
print('  epochs = { %s },' % ', '.join(str(e) for e in EPOCHS))
for name, kind, build in CASES:
    o = make(kind)
    s = build(o)
    lrs, moms = [], []
    if name.endswith(' epochs'):
        for e in EPOCHS:
            o.step()
            s.step(e)
            lrs.append(s.get_last_lr()); moms.append(momenta(o))
    else:
        for e in range(30):
            lrs.append(s.get_last_lr() if hasattr(s, 'get_last_lr') else [g['lr'] for g in o.param_groups])
            moms.append(momenta(o))
            o.step()
            if isinstance(s, L.ReduceLROnPlateau): s.step(METRICS[e])
            else: s.step()
    print('  { %r, %r,' % (name, kind))
    print('    lrs = { %s },' % ', '.join(lua_list(l) for l in lrs))
    print('    momenta = { %s } },' % ', '.join(lua_list(m) for m in moms))
print('}')
