# Records the LBFGS cases of spec/optimizers_spec.lua (pasted there) with PyTorch 1.13:
#   /usr/bin/python3 spec/support/lbfgs_record.py
# Rosenbrock's function of four float64 values from (-1.5, 2, 0.5, -0.3); each case runs three
# step(closure) calls and prints the losses they return, the final values, func_evals and n_iter.
import torch
CASES = [
  ('plain', dict(lr=1, max_iter=15, history_size=3)),
  ('strong_wolfe', dict(lr=1, max_iter=15, history_size=3, line_search_fn='strong_wolfe')),
  ('defaults', dict()),
  ('defaults strong_wolfe', dict(line_search_fn='strong_wolfe')),
  ('lr max_eval', dict(lr=0.5, max_iter=10, max_eval=6)),
  ('tolerance_change', dict(tolerance_change=1e-2, line_search_fn='strong_wolfe')),
  ('tolerance_grad', dict(tolerance_grad=10.0)),
]
print('{')
for name, opts in CASES:
    x = torch.tensor([-1.5, 2.0, 0.5, -0.3], dtype=torch.float64, requires_grad=True)
    o = torch.optim.LBFGS([x], **opts)
    def f():
        o.zero_grad(); a = x[0:3]; b = x[1:4]
        l = ((b - a * a) ** 2 * 100 + (-a + 1) ** 2).sum(); l.backward(); return l
    losses = [o.step(f).item() for i in range(3)]
    st = o.state[x]
    print('  { %r, opts = { %s },\n    losses = { %s },\n    x = { %s }, func_evals = %d, n_iter = %d },' % (
        name, ', '.join('%s = %r' % kv for kv in opts.items()), ', '.join(repr(v) for v in losses),
        ', '.join(repr(v) for v in x.tolist()), st['func_evals'], st['n_iter']))
print('}')
