# Records PyTorch 1.13's values for spec/distributions_spec.lua:
#   /usr/bin/python3 spec/support/distributions_record.py > spec/support/distributions_wants.lua
# Each case builds a distribution from the same parameters as the spec (float32 and float64), draws
# after torch.manual_seed(seed) (sample and rsample), and evaluates log_prob/cdf/icdf/entropy/mean/
# variance at fixed points. Categorical's values are recorded as PyTorch gives them (0-based): the spec
# adds one. kl: kl_divergence of pairs.
import torch
from torch import distributions as D

def L(t):
    t = t.detach()
    if t.dim() == 0:
        return repr(t.item()).replace('inf', 'math.huge').replace('nan', '0/0')
    return '{ ' + ', '.join(L(x) for x in t) + ' }'

def out(name, val):
    print('  %s = %s,' % (name, val))

def P(vals, dtype):
    return torch.tensor(vals, dtype=dtype)

CASES = [
    ('normal', lambda dt: D.Normal(P([0.0, 1.5, -2.0], dt), P([1.0, 0.5, 3.0], dt)), [0.3, 1.0, -4.0], [0.1, 0.5, 0.975]),
    ('uniform', lambda dt: D.Uniform(P([0.0, -1.0, 2.0], dt), P([1.0, 3.0, 2.5], dt)), [0.3, 2.9, 2.25], [0.1, 0.5, 0.975]),
    ('exponential', lambda dt: D.Exponential(P([0.5, 1.0, 4.0], dt)), [0.3, 1.0, 4.0], [0.1, 0.5, 0.975]),
    ('laplace', lambda dt: D.Laplace(P([0.0, 1.5, -2.0], dt), P([1.0, 0.5, 3.0], dt)), [0.3, 1.0, -4.0], [0.1, 0.5, 0.975]),
    ('bernoulli', lambda dt: D.Bernoulli(P([0.1, 0.5, 0.9], dt)), [0.0, 1.0, 1.0], None),
    ('bernoulli_logits', lambda dt: D.Bernoulli(logits=P([-2.0, 0.0, 3.0], dt)), [1.0, 0.0, 1.0], None),
    ('categorical', lambda dt: D.Categorical(P([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], dt)), [2, 0], None),
    ('categorical_logits', lambda dt: D.Categorical(logits=P([[1.0, -1.0, 0.5, 2.0]], dt)), [3], None),
    ('cauchy', lambda dt: D.Cauchy(P([0.0, 1.5, -2.0], dt), P([1.0, 0.5, 3.0], dt)), [0.3, 1.0, -4.0], [0.1, 0.5, 0.975]),
    ('geometric', lambda dt: D.Geometric(P([0.2, 0.5, 0.9], dt)), [0.0, 3.0, 1.0], None),
    ('lognormal', lambda dt: D.LogNormal(P([0.0, 1.5, -2.0], dt), P([1.0, 0.5, 3.0], dt)), [0.3, 1.0, 4.0], [0.1, 0.5, 0.975]),
    ('halfnormal', lambda dt: D.HalfNormal(P([1.0, 0.5, 3.0], dt)), [0.3, 1.0, 4.0], [0.1, 0.5, 0.975]),
    ('gumbel', lambda dt: D.Gumbel(P([0.0, 1.5, -2.0], dt), P([1.0, 0.5, 3.0], dt)), [0.3, 1.0, -4.0], [0.1, 0.5, 0.975]),
]

print('-- written by spec/support/distributions_record.py (PyTorch %s)' % torch.__version__)
print('return {')
for dtn, dt in (('float32', torch.float32), ('float64', torch.float64)):
    print(' %s = {' % dtn)
    for name, make, pts, probs in CASES:
        print('  %s = {' % name)
        d = make(dt)
        torch.manual_seed(7)
        out('sample', L(d.sample((4,))))
        if d.has_rsample:
            torch.manual_seed(7)
            out('rsample', L(d.rsample((2,))))
        x = torch.tensor(pts, dtype=dt if not name.startswith('categorical') else torch.int64)
        out('log_prob', L(d.log_prob(x)))
        out('entropy', L(d.entropy()))
        if not name.startswith('categorical'):
            out('mean', L(d.mean))
            out('variance', L(d.variance))
        if probs is not None:
            out('cdf', L(d.cdf(torch.tensor(pts, dtype=dt))))
            out('icdf', L(d.icdf(torch.tensor(probs, dtype=dt))))
        print('  },')
    print(' },')
# rsample's gradients: d(sum(rsample))/dparams with the seed
torch.manual_seed(3)
loc = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
scale = torch.tensor([2.0, 0.5], dtype=torch.float64, requires_grad=True)
(D.Normal(loc, scale).rsample((3,)) ** 2).sum().backward()
print(' normal_grad = { loc = %s, scale = %s },' % (L(loc.grad), L(scale.grad)))
torch.manual_seed(3)
lp = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64, requires_grad=True)
D.Categorical(lp).log_prob(torch.tensor([0, 2, 2])).sum().backward()
print(' categorical_grad = %s,' % L(lp.grad))
# KL of pairs (float64)
f = lambda v: torch.tensor(v, dtype=torch.float64)
KL = [
    ('normal', D.Normal(f([0.0, 1.0]), f([1.0, 2.0])), D.Normal(f([1.0, 1.0]), f([0.5, 2.0]))),
    ('uniform', D.Uniform(f([0.0, 0.0]), f([1.0, 2.0])), D.Uniform(f([-1.0, 0.5]), f([2.0, 3.0]))),
    ('exponential', D.Exponential(f([1.0, 3.0])), D.Exponential(f([2.0, 0.5]))),
    ('laplace', D.Laplace(f([0.0, 1.0]), f([1.0, 2.0])), D.Laplace(f([1.0, 1.0]), f([0.5, 2.0]))),
    ('bernoulli', D.Bernoulli(f([0.2, 0.0, 1.0, 0.5])), D.Bernoulli(f([0.5, 0.3, 0.7, 0.0]))),
    ('categorical', D.Categorical(f([[0.2, 0.8, 0.0], [0.5, 0.5, 0.0]])), D.Categorical(f([[0.5, 0.25, 0.25], [0.0, 0.5, 0.5]]))),
    ('gumbel', D.Gumbel(f([0.0, 1.0]), f([1.0, 2.0])), D.Gumbel(f([1.0, 1.0]), f([0.5, 2.0]))),
    ('geometric', D.Geometric(f([0.3, 0.9])), D.Geometric(f([0.5, 0.2]))),
    ('lognormal', D.LogNormal(f([0.0, 1.0]), f([1.0, 2.0])), D.LogNormal(f([1.0, 1.0]), f([0.5, 2.0]))),
    ('halfnormal', D.HalfNormal(f([1.0, 2.0])), D.HalfNormal(f([0.5, 2.0]))),
    ('mvn', D.MultivariateNormal(f([[0.0, 1.0]]), f([[2.0, 0.5], [0.5, 1.0]])), D.MultivariateNormal(f([1.0, 0.0]), scale_tril=f([[1.0, 0.0], [0.5, 2.0]]))),
    ('independent', D.Independent(D.Normal(f([[0.0, 1.0]]), f([[1.0, 2.0]])), 1), D.Independent(D.Normal(f([[1.0, 1.0]]), f([[0.5, 2.0]])), 1)),
]
T = D.transforms
td = D.TransformedDistribution(D.Normal(f([0.0, 1.0]), f([1.0, 0.5])), [T.AffineTransform(1.0, -2.0), T.SigmoidTransform()])
x = f([0.3, 0.8])
print(' transformed = { log_prob = %s, cdf = %s, icdf = %s },' % (L(td.log_prob(x)), L(td.cdf(x)), L(td.icdf(x))))
cov = f([[2.0, 0.5], [0.5, 1.0]])
for dtn, dt in (('float32', torch.float32), ('float64', torch.float64)):
    m = D.MultivariateNormal(torch.tensor([1.0, -1.0], dtype=dt), cov.to(dt))
    torch.manual_seed(5)
    s1 = m.sample((3,))
    torch.manual_seed(5)
    s2 = m.rsample((3,))
    mp = D.MultivariateNormal(torch.zeros(3, 2, dtype=dt), precision_matrix=cov.to(dt))
    ml = D.MultivariateNormal(torch.tensor([[0.0, 1.0]], dtype=dt), scale_tril=torch.tensor([[1.0, 0.0], [0.5, 2.0]], dtype=dt))
    print(' mvn_%s = { sample = %s, rsample = %s, log_prob = %s, entropy = %s, variance = %s, precision = %s, scale_tril = %s, prec_log_prob = %s, prec_cov = %s, tril_log_prob = %s, tril_cov = %s },' % (
        dtn, L(s1), L(s2), L(m.log_prob(torch.tensor([[0.5, 0.5], [1.0, -1.0]], dtype=dt))), L(m.entropy()), L(m.variance), L(m.precision_matrix), L(m.scale_tril),
        L(mp.log_prob(torch.ones(3, 2, dtype=dt))), L(mp.covariance_matrix[0]), L(ml.log_prob(torch.tensor([[1.0, 2.0], [0.0, 0.0]], dtype=dt))), L(ml.covariance_matrix[0])))
loc = f([0.5, -1.0]).requires_grad_()
L0 = f([[1.0, 0.0], [0.3, 2.0]]).requires_grad_()
D.MultivariateNormal(loc, scale_tril=L0).log_prob(f([[1.0, 2.0], [0.0, -1.0]])).sum().backward()
print(' mvn_grad = { loc = %s, scale_tril = %s },' % (L(loc.grad), L(L0.grad)))
print(' kl = {')
for name, p, q in KL:
    print('  %s = %s,' % (name, L(D.kl_divergence(p, q))))
print(' },')
print('}')
