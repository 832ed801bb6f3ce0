# Records spec/support/optim_wants.lua, PyTorch 1.13's results for the optimizer cases of
# spec/optimizers_spec.lua:
#   /usr/bin/python3 spec/support/optim_record.py > spec/support/optim_wants.lua
# Each case: the optimizer with its options on two parameters (shapes (2, 3) and (3,), values
# pvals), ten steps on the fixed gradients gvals(k) (the formulas of spec/optim_spec.lua), in
# float32 and float64; recorded: both parameters after the ten steps and the first one's state.
import torch

def pvals(j, n): return [((i*5 + j*3) % 7 - 3) / 8 for i in range(n)]
def gvals(k, j, n): return [((i*7 + k*3 + j*2) % 11 - 5) / 4 for i in range(n)]
SHAPES = [(2, 3), (3,)]

CASES = [
  ('Adam', 'default', {}),
  ('Adam', 'lr', {'lr': 0.05}),
  ('Adam', 'amsgrad', {'lr': 0.05, 'amsgrad': True}),
  ('Adam', 'maximize', {'lr': 0.05, 'maximize': True}),
  ('Adam', 'weight_decay', {'lr': 0.05, 'weight_decay': 0.1}),
  ('Adam', 'betas eps', {'lr': 0.05, 'betas': (0.8, 0.9), 'eps': 1e-3}),
  ('Adam', 'everything', {'lr': 0.05, 'betas': (0.8, 0.9), 'eps': 1e-3, 'weight_decay': 0.1, 'amsgrad': True, 'maximize': True}),
  ('AdamW', 'default', {}),
  ('AdamW', 'amsgrad', {'lr': 0.05, 'amsgrad': True}),
  ('AdamW', 'maximize', {'lr': 0.05, 'maximize': True}),
  ('AdamW', 'weight_decay', {'lr': 0.05, 'weight_decay': 0.5}),
  ('AdamW', 'no weight_decay', {'lr': 0.05, 'weight_decay': 0}),
  ('AdamW', 'betas eps', {'lr': 0.05, 'betas': (0.5, 0.75), 'eps': 1e-2, 'amsgrad': True}),
  ('RMSprop', 'default', {}),
  ('RMSprop', 'alpha', {'lr': 0.02, 'alpha': 0.9}),
  ('RMSprop', 'centered', {'lr': 0.02, 'centered': True}),
  ('RMSprop', 'momentum', {'lr': 0.02, 'momentum': 0.9}),
  ('RMSprop', 'centered momentum', {'lr': 0.02, 'centered': True, 'momentum': 0.5}),
  ('RMSprop', 'weight_decay', {'lr': 0.02, 'weight_decay': 0.1}),
  ('RMSprop', 'maximize', {'lr': 0.02, 'maximize': True, 'eps': 1e-2}),
  ('Adagrad', 'default', {}),
  ('Adagrad', 'lr_decay', {'lr': 0.1, 'lr_decay': 0.1}),
  ('Adagrad', 'initial_accumulator_value', {'lr': 0.1, 'initial_accumulator_value': 0.5}),
  ('Adagrad', 'weight_decay', {'lr': 0.1, 'weight_decay': 0.1, 'eps': 1e-3}),
  ('Adagrad', 'maximize', {'lr': 0.1, 'maximize': True}),
  ('Adadelta', 'default', {}),
  ('Adadelta', 'rho', {'lr': 0.5, 'rho': 0.5}),
  ('Adadelta', 'weight_decay', {'weight_decay': 0.1, 'eps': 1e-3}),
  ('Adadelta', 'maximize', {'maximize': True}),
  ('Adamax', 'default', {}),
  ('Adamax', 'betas', {'lr': 0.05, 'betas': (0.5, 0.8)}),
  ('Adamax', 'weight_decay', {'lr': 0.05, 'weight_decay': 0.1, 'eps': 1e-2}),
  ('Adamax', 'maximize', {'lr': 0.05, 'maximize': True}),
  ('NAdam', 'default', {}),
  ('NAdam', 'momentum_decay', {'lr': 0.05, 'momentum_decay': 0.1}),
  ('NAdam', 'weight_decay', {'lr': 0.05, 'weight_decay': 0.1, 'betas': (0.8, 0.9), 'eps': 1e-3}),
  ('RAdam', 'default', {}),
  ('RAdam', 'weight_decay', {'lr': 0.05, 'weight_decay': 0.1, 'eps': 1e-3}),
  ('RAdam', 'betas', {'lr': 0.05, 'betas': (0.5, 0.8)}),
  ('ASGD', 'default', {}),
  ('ASGD', 't0', {'lr': 0.05, 't0': 3}),
  ('ASGD', 'lambd alpha', {'lr': 0.05, 'lambd': 0.1, 'alpha': 0.5, 't0': 0}),
  ('ASGD', 'weight_decay', {'lr': 0.05, 'weight_decay': 0.1, 't0': 5}),
  ('ASGD', 'maximize', {'lr': 0.05, 'maximize': True, 't0': 2}),
  ('Rprop', 'default', {}),
  ('Rprop', 'etas', {'lr': 0.05, 'etas': (0.3, 1.5)}),
  ('Rprop', 'step_sizes', {'lr': 0.05, 'step_sizes': (0.01, 0.08)}),
  ('Rprop', 'maximize', {'lr': 0.05, 'maximize': True}),
]

def lua_value(v):
    if isinstance(v, bool): return 'true' if v else 'false'
    if isinstance(v, (tuple, list)): return '{ ' + ', '.join(lua_value(x) for x in v) + ' }'
    if isinstance(v, torch.Tensor): return '{ ' + ', '.join(repr(float(x)) for x in v.reshape(-1).tolist()) + ' }'
    if isinstance(v, float): return repr(v)
    return repr(v)

def run(cls, opts, dtype, groups):
    ps = [torch.tensor(pvals(j, torch.Size(s).numel()), dtype=dtype).reshape(s).requires_grad_() for j, s in enumerate(SHAPES)]
    params = ps if not groups else [{'params': [ps[0]], 'lr': 0.03}, {'params': [ps[1]]}]
    opt = getattr(torch.optim, cls)(params, **opts)
    for k in range(1, 11):
        for j, p in enumerate(ps):
            p.grad = torch.tensor(gvals(k, j, p.numel()), dtype=dtype).reshape(p.shape)
        opt.step()
    return ps, opt.state[ps[0]]

print('-- PyTorch 1.13\'s results for the optimizer cases of spec/optimizers_spec.lua, written by')
print('--   /usr/bin/python3 spec/support/optim_record.py > spec/support/optim_wants.lua')
print('-- { optimizer, name, opts, groups, float32 = {p0, p1, state}, float64 = {...} }')
print('return {')
for cls, name, opts in CASES:
    for groups in ([False, True] if name == 'default' else [False]):
        print('  { %r, %r, opts = { %s }, groups = %s,' % (cls, name + (' groups' if groups else ''),
              ', '.join('%s = %s' % (k, lua_value(v)) for k, v in opts.items()), lua_value(groups)))
        for dtype in (torch.float32, torch.float64):
            ps, st = run(cls, opts, dtype, groups)
            state = ', '.join('%s = %s' % (k, lua_value(v.item() if isinstance(v, torch.Tensor) and k in ('step', 'eta', 'mu', 'mu_product') else v)) for k, v in sorted(st.items()))
            print('    %s = { p0 = %s,\n      p1 = %s,\n      state = { %s } },' % (str(dtype).split('.')[1], lua_value(ps[0].detach()), lua_value(ps[1].detach()), state))
        print('  },')
print('}')
