# Records PyTorch 1.13's values for spec/distributions_gamma_spec.lua (the Gamma family and the count
# distributions):
#   /usr/bin/python3 spec/support/distributions_gamma_record.py > spec/support/distributions_gamma_wants.lua
# As spec/support/distributions_record.py: each case builds a distribution from the same parameters as
# the spec (float32 and float64), draws after torch.manual_seed(7) (sample(4) and rsample(2)), and
# evaluates log_prob at fixed points, entropy, mean, mode, variance. Then rsample's gradients (the
# implicit reparameterization) after manual_seed(3), KL of pairs, enumerate_support, and the messages.
import torch
from torch import distributions as D

def L(t):
    if isinstance(t, (int, float)):
        t = torch.tensor(t)
    t = t.detach()
    if t.dim() == 0:
        return repr(t.item()).replace('inf', 'math.huge').replace('nan', '0/0')
    return '{ ' + ', '.join(L(x) for x in t) + ' }'

def out(name, val):
    print('  %s = %s,' % (name, val))

def P(vals, dt):
    return torch.tensor(vals, dtype=dt)

CASES = [
    ('gamma', lambda dt: D.Gamma(P([0.5, 2.0, 5.0], dt), P([1.0, 0.5, 3.0], dt)), [0.3, 1.0, 4.0]),
    ('chi2', lambda dt: D.Chi2(P([0.5, 3.0, 10.0], dt)), [0.3, 1.0, 4.0]),
    ('beta', lambda dt: D.Beta(P([0.5, 2.0, 3.0], dt), P([1.5, 3.0, 0.8], dt)), [0.3, 0.8, 0.999]),
    ('dirichlet', lambda dt: D.Dirichlet(P([[0.5, 2.0, 1.0], [3.0, 0.7, 0.2]], dt)), [[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]]),
    ('dirichlet_small', lambda dt: D.Dirichlet(P([0.5, 0.7, 0.2], dt)), [0.2, 0.5, 0.3]),
    ('studentt', lambda dt: D.StudentT(P([0.5, 1.5, 5.0], dt), P([0.0, 1.0, -2.0], dt), P([1.0, 2.0, 0.5], dt)), [0.3, 1.0, -4.0]),
    ('poisson', lambda dt: D.Poisson(P([0.5, 4.0, 25.0], dt)), [0.0, 3.0, 20.0]),
    ('binomial', lambda dt: D.Binomial(P([10.0, 10.0, 10.0], dt), P([0.3, 0.5, 0.95], dt)), [3.0, 0.0, 10.0]),
    ('binomial_logits', lambda dt: D.Binomial(P([5.0, 40.0, 7.0], dt), logits=P([-1.0, 0.5, 2.0], dt)), [1.0, 20.0, 7.0]),
    ('multinomial', lambda dt: D.Multinomial(6, P([[0.2, 0.3, 0.5], [0.6, 0.0, 0.4]], dt)), [[1.0, 2.0, 3.0], [2.0, 0.0, 4.0]]),
    ('negbinomial', lambda dt: D.NegativeBinomial(P([3.0, 5.0, 0.5], dt), P([0.3, 0.6, 0.1], dt)), [2.0, 0.0, 7.0]),
    ('pareto', lambda dt: D.Pareto(P([1.0, 2.0, 0.5], dt), P([0.5, 3.0, 2.5], dt)), [2.5, 3.0, 0.7]),
    ('weibull', lambda dt: D.Weibull(P([1.0, 2.0, 0.5], dt), P([0.5, 3.0, 1.5], dt)), [0.5, 2.5, 0.1]),
    ('kumaraswamy', lambda dt: D.Kumaraswamy(P([1.0, 2.0, 0.5], dt), P([0.5, 3.0, 1.5], dt)), [0.5, 0.9, 0.1]),
    ('fishersnedecor', lambda dt: D.FisherSnedecor(P([1.0, 5.0, 3.0], dt), P([3.0, 6.0, 4.5], dt)), [0.5, 2.5, 1.0]),
    ('contbernoulli', lambda dt: D.ContinuousBernoulli(P([0.2, 0.5, 0.4995], dt)), [0.5, 0.9, 0.1]),
    ('contbernoulli_logits', lambda dt: D.ContinuousBernoulli(logits=P([-1.0, 0.0, 3.0], dt)), [0.3, 0.0, 1.0]),
    ('vonmises', lambda dt: D.VonMises(P([0.0, 1.0, -2.0], dt), P([0.5, 3.0, 20.0], dt)), [0.5, 2.5, -3.0]),
    ('relaxed_bernoulli', lambda dt: D.RelaxedBernoulli(P(0.5, dt), P([0.2, 0.7, 0.5], dt)), [0.3, 0.9, 0.5]),
    ('relaxed_bernoulli_logits', lambda dt: D.RelaxedBernoulli(P(2.0, dt), logits=P([-1.0, 0.0, 3.0], dt)), [0.3, 0.9, 0.5]),
    ('relaxed_onehot', lambda dt: D.RelaxedOneHotCategorical(P(0.7, dt), P([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], dt)), [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]),
    ('mixture', lambda dt: D.MixtureSameFamily(D.Categorical(P([[0.3, 0.7], [0.5, 0.5], [0.9, 0.1]], dt)), D.Normal(P([[-1.0, 2.0], [0.0, 1.0], [3.0, -3.0]], dt), P([[0.5, 1.0], [1.0, 2.0], [0.3, 0.4]], dt))), [0.0, 1.5, -1.0]),
    ('logistic_normal', lambda dt: D.LogisticNormal(P([[0.0, 1.0], [0.5, -1.0]], dt), P([[1.0, 0.5], [2.0, 1.0]], dt)), [0.2, 0.3, 0.5]),
    ('negbinomial_logits', lambda dt: D.NegativeBinomial(P([3.0, 12.0, 1.0], dt), logits=P([-1.0, 0.5, 2.0], dt)), [4.0, 10.0, 0.0]),
]

print('-- written by spec/support/distributions_gamma_record.py (PyTorch %s)' % torch.__version__)
print('return {')
for dtn, dt in (('float32', torch.float32), ('float64', torch.float64)):
    print(' %s = {' % dtn)
    for name, make, pts in CASES:
        print('  %s = {' % name)
        d = make(dt)
        torch.manual_seed(7)
        out('sample', L(d.sample((4,))))
        if d.has_rsample:
            torch.manual_seed(7)
            out('rsample', L(d.rsample((2,))))
        out('log_prob', L(d.log_prob(torch.tensor(pts, dtype=dt))))
        if name == 'mixture':
            out('cdf', L(d.cdf(torch.tensor(pts, dtype=dt))))
        if name.startswith('contbernoulli'):
            out('cdf', L(d.cdf(torch.tensor(pts, dtype=dt))))
            out('icdf', L(d.icdf(torch.tensor([0.1, 0.5, 0.975], dtype=dt))))
        for prop in ('entropy',):
            try:
                out(prop, L(d.entropy()))
            except NotImplementedError:
                pass
        for prop in ('mean', 'mode', 'variance'):
            try:
                out(prop, L(getattr(d, prop)))
            except (NotImplementedError, AttributeError):
                pass
        print('  },')
    print(' },')
f = lambda v: torch.tensor(v, dtype=torch.float64)
# rsample's gradients: d(sum(w * rsample))/dparams after manual_seed(3)
def grads(name, make, params, weights):
    torch.manual_seed(3)
    x = make(*params).rsample((2,))
    (x * f(weights)).sum().backward()
    print(' %s_grad = { x = %s, %s },' % (name, L(x), ', '.join('g%d = %s' % (i + 1, L(p.grad)) for i, p in enumerate(params))))
grads('gamma', lambda a, b: D.Gamma(a, b), [f([0.5, 2.0, 9.0]).requires_grad_(), f([1.0, 0.5, 3.0]).requires_grad_()], [1.0, 2.0, 3.0])
grads('chi2', lambda a: D.Chi2(a), [f([0.5, 3.0, 10.0]).requires_grad_()], [1.0, 2.0, 3.0])
grads('beta', lambda a, b: D.Beta(a, b), [f([0.5, 2.0, 8.0]).requires_grad_(), f([1.5, 3.0, 7.0]).requires_grad_()], [1.0, 2.0, 3.0])
grads('dirichlet', lambda a: D.Dirichlet(a), [f([[0.5, 2.0, 1.0], [3.0, 0.7, 0.2]]).requires_grad_()], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
grads('studentt', lambda a, b, c: D.StudentT(a, b, c), [f([1.5, 3.0, 10.0]).requires_grad_(), f([0.0, 1.0, -2.0]).requires_grad_(), f([1.0, 2.0, 0.5]).requires_grad_()], [1.0, 2.0, 3.0])
grads('kumaraswamy', lambda a, b: D.Kumaraswamy(a, b), [f([0.5, 2.0, 3.0]).requires_grad_(), f([1.5, 3.0, 0.7]).requires_grad_()], [1.0, 2.0, 3.0])
grads('fishersnedecor', lambda a, b: D.FisherSnedecor(a, b), [f([1.0, 5.0, 3.0]).requires_grad_(), f([3.0, 6.0, 4.5]).requires_grad_()], [1.0, 2.0, 3.0])
grads('weibull', lambda a, b: D.Weibull(a, b), [f([1.0, 2.0, 0.5]).requires_grad_(), f([0.5, 3.0, 1.5]).requires_grad_()], [1.0, 2.0, 3.0])
grads('pareto', lambda a, b: D.Pareto(a, b), [f([1.0, 2.0, 0.5]).requires_grad_(), f([0.5, 3.0, 2.5]).requires_grad_()], [1.0, 2.0, 3.0])
grads('contbernoulli', lambda a: D.ContinuousBernoulli(a), [f([0.2, 0.7, 0.4]).requires_grad_()], [1.0, 2.0, 3.0])
grads('relaxed_bernoulli', lambda t, l: D.RelaxedBernoulli(t, logits=l), [f(0.5).requires_grad_(), f([-1.0, 0.0, 3.0]).requires_grad_()], [1.0, 2.0, 3.0])
grads('relaxed_onehot', lambda t, l: D.RelaxedOneHotCategorical(t, logits=l), [f(0.7).requires_grad_(), f([-1.0, 0.0, 3.0]).requires_grad_()], [1.0, 2.0, 3.0])
grads('lowrank', lambda a, b, c: D.LowRankMultivariateNormal(a, b, c), [f([1.0, -1.0, 0.5]).requires_grad_(), f([[1.0, 0.5], [0.2, -0.3], [0.7, 1.1]]).requires_grad_(), f([0.5, 1.5, 0.8]).requires_grad_()], [1.0, 2.0, 3.0])
grads('logistic_normal', lambda a, b: D.LogisticNormal(a, b), [f([0.0, 1.0]).requires_grad_(), f([1.0, 0.5]).requires_grad_()], [1.0, 2.0, 3.0])
# log_prob's gradients
a, b = f([0.5, 2.0]).requires_grad_(), f([1.5, 3.0]).requires_grad_()
D.Beta(a, b).log_prob(f([0.3, 0.8])).sum().backward()
print(' beta_log_prob_grad = { %s, %s },' % (L(a.grad), L(b.grad)))
# log_prob's gradients in every parameter (sum over the points)
def lp_grads(name, make, params, x):
    make(*params).log_prob(f(x)).sum().backward()
    print(' %s_lp_grad = { %s },' % (name, ', '.join(L(p.grad) for p in params if p.requires_grad)))
R = lambda v: f(v).requires_grad_()
lp_grads('gamma', D.Gamma, [R([0.5, 2.0, 5.0]), R([1.0, 0.5, 3.0])], [0.3, 1.0, 4.0])
lp_grads('chi2', D.Chi2, [R([0.5, 3.0, 10.0])], [0.3, 1.0, 4.0])
lp_grads('dirichlet', D.Dirichlet, [R([[0.5, 2.0, 1.0], [3.0, 0.7, 0.2]])], [[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
lp_grads('studentt', D.StudentT, [R([0.5, 1.5, 5.0]), R([0.0, 1.0, -2.0]), R([1.0, 2.0, 0.5])], [0.3, 1.0, -4.0])
lp_grads('poisson', D.Poisson, [R([0.5, 4.0, 25.0])], [0.0, 3.0, 20.0])
lp_grads('binomial', lambda n, p: D.Binomial(n, p), [f([10.0, 10.0, 10.0]), R([0.3, 0.5, 0.95])], [3.0, 0.0, 10.0])
lp_grads('binomial_logits', lambda n, l: D.Binomial(n, logits=l), [f([5.0, 40.0, 7.0]), R([-1.0, 0.5, 2.0])], [1.0, 20.0, 7.0])
lp_grads('negbinomial', lambda n, p: D.NegativeBinomial(n, p), [R([3.0, 5.0, 0.5]), R([0.3, 0.6, 0.1])], [2.0, 0.0, 7.0])
lp_grads('multinomial', lambda p: D.Multinomial(6, p), [R([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])], [[1.0, 2.0, 3.0], [2.0, 0.0, 4.0]])
lp_grads('vonmises', D.VonMises, [R([0.0, 1.0, -2.0]), R([0.5, 3.0, 20.0])], [0.5, 2.5, -3.0])
lp_grads('kumaraswamy', D.Kumaraswamy, [R([1.0, 2.0, 0.5]), R([0.5, 3.0, 1.5])], [0.5, 0.9, 0.1])
lp_grads('contbernoulli', D.ContinuousBernoulli, [R([0.2, 0.5, 0.7])], [0.5, 0.9, 0.1])
KL = [
    ('gamma', D.Gamma(f([0.5, 2.0]), f([1.0, 3.0])), D.Gamma(f([1.5, 2.0]), f([0.5, 1.0]))),
    ('chi2_gamma', D.Chi2(f([3.0, 1.0])), D.Gamma(f([1.5, 2.0]), f([0.5, 1.0]))),
    ('beta', D.Beta(f([0.5, 2.0]), f([1.5, 3.0])), D.Beta(f([1.0, 4.0]), f([2.0, 0.5]))),
    ('dirichlet', D.Dirichlet(f([[0.5, 2.0, 1.0], [3.0, 0.7, 0.2]])), D.Dirichlet(f([1.0, 1.0, 2.0]))),
    ('poisson', D.Poisson(f([0.5, 4.0])), D.Poisson(f([1.0, 3.0]))),
    ('binomial', D.Binomial(f([10.0, 12.0]), f([0.3, 0.6])), D.Binomial(f([10.0, 10.0]), f([0.5, 0.2]))),
    ('exponential_gamma', D.Exponential(f([1.0, 3.0])), D.Gamma(f([1.5, 2.0]), f([0.5, 1.0]))),
    ('gamma_exponential', D.Gamma(f([1.5, 2.0]), f([0.5, 1.0])), D.Exponential(f([1.0, 3.0]))),
    ('gamma_normal', D.Gamma(f([1.5, 2.0]), f([0.5, 1.0])), D.Normal(f([0.0, 1.0]), f([1.0, 2.0]))),
    ('gamma_gumbel', D.Gamma(f([1.5, 2.0]), f([0.5, 1.0])), D.Gumbel(f([0.0, 1.0]), f([1.0, 2.0]))),
    ('beta_exponential', D.Beta(f([0.5, 2.0]), f([1.5, 3.0])), D.Exponential(f([1.0, 3.0]))),
    ('beta_gamma', D.Beta(f([0.5, 2.0]), f([1.5, 3.0])), D.Gamma(f([1.5, 2.0]), f([0.5, 1.0]))),
    ('beta_normal', D.Beta(f([0.5, 2.0]), f([1.5, 3.0])), D.Normal(f([0.0, 1.0]), f([1.0, 2.0]))),
    ('beta_uniform', D.Beta(f([0.5, 2.0]), f([1.5, 3.0])), D.Uniform(f([0.0, 0.1]), f([1.0, 2.0]))),
    ('uniform_beta', D.Uniform(f([0.1, 0.2]), f([0.5, 1.5])), D.Beta(f([0.5, 2.0]), f([1.5, 3.0]))),
    ('uniform_gamma', D.Uniform(f([0.1, -0.2]), f([0.5, 1.5])), D.Gamma(f([1.5, 2.0]), f([0.5, 1.0]))),
    ('bernoulli_poisson', D.Bernoulli(f([0.3, 0.9])), D.Poisson(f([1.0, 3.0]))),
    ('gamma_beta', D.Gamma(f([1.5, 2.0]), f([0.5, 1.0])), D.Beta(f([0.5, 2.0]), f([1.5, 3.0]))),
    ('normal_gamma', D.Normal(f([0.0, 1.0]), f([1.0, 2.0])), D.Gamma(f([1.5, 2.0]), f([0.5, 1.0]))),
    ('pareto', D.Pareto(f([1.0, 2.0]), f([0.5, 3.0])), D.Pareto(f([0.5, 3.0]), f([1.5, 2.0]))),
    ('contbernoulli', D.ContinuousBernoulli(f([0.2, 0.7])), D.ContinuousBernoulli(f([0.5, 0.1]))),
    ('beta_contbernoulli', D.Beta(f([0.5, 2.0]), f([1.5, 3.0])), D.ContinuousBernoulli(f([0.2, 0.7]))),
    ('contbernoulli_exponential', D.ContinuousBernoulli(f([0.2, 0.7])), D.Exponential(f([1.0, 3.0]))),
    ('contbernoulli_normal', D.ContinuousBernoulli(f([0.2, 0.7])), D.Normal(f([0.0, 1.0]), f([1.0, 2.0]))),
    ('contbernoulli_uniform', D.ContinuousBernoulli(f([0.2, 0.7])), D.Uniform(f([-1.0, 0.5]), f([2.0, 3.0]))),
    ('uniform_contbernoulli', D.Uniform(f([0.1, 0.2]), f([0.5, 1.5])), D.ContinuousBernoulli(f([0.2, 0.7]))),
    ('pareto_exponential', D.Pareto(f([1.0, 2.0]), f([0.5, 3.0])), D.Exponential(f([1.0, 3.0]))),
    ('pareto_gamma', D.Pareto(f([1.0, 2.0]), f([1.5, 3.0])), D.Gamma(f([1.5, 2.0]), f([0.5, 1.0]))),
    ('pareto_normal', D.Pareto(f([1.0, 2.0]), f([1.5, 3.0])), D.Normal(f([0.0, 1.0]), f([1.0, 2.0]))),
    ('uniform_pareto', D.Uniform(f([1.5, 0.2]), f([2.5, 1.5])), D.Pareto(f([1.0, 0.5]), f([1.5, 2.0]))),
    ('normal_pareto', D.Normal(f([0.0, 1.0]), f([1.0, 2.0])), D.Pareto(f([1.0, 0.5]), f([1.5, 2.0]))),
    ('poisson_binomial', D.Poisson(f([1.0, 3.0])), D.Binomial(f([10.0, 10.0]), f([0.5, 0.2]))),
]
print(' kl = {')
for name, p, q in KL:
    print('  %s = %s,' % (name, L(D.kl_divergence(p, q))))
print(' },')
print(' binomial_support = %s,' % L(D.Binomial(f([3.0, 3.0]), f([0.2, 0.5])).enumerate_support()))
# LowRankMultivariateNormal (float64 and float32): draws, log_prob, entropy, the derived matrices, KL with MVN
for dtn, dt in (('float32', torch.float32), ('float64', torch.float64)):
    loc = torch.tensor([[1.0, -1.0, 0.5], [0.0, 2.0, -0.5]], dtype=dt)
    W = torch.tensor([[1.0, 0.5], [0.2, -0.3], [0.7, 1.1]], dtype=dt)
    Dg = torch.tensor([0.5, 1.5, 0.8], dtype=dt)
    d = D.LowRankMultivariateNormal(loc, W, Dg)
    torch.manual_seed(5)
    s1 = d.sample((2,))
    torch.manual_seed(5)
    s2 = d.rsample((2,))
    x = torch.tensor([[0.5, 0.5, 0.0], [1.0, -1.0, 2.0]], dtype=dt)
    print(' lowrank_%s = { sample = %s, rsample = %s, log_prob = %s, entropy = %s, variance = %s, covariance = %s, precision = %s, scale_tril = %s }' % (
        dtn, L(s1), L(s2), L(d.log_prob(x)), L(d.entropy()), L(d.variance), L(d.covariance_matrix[0]), L(d.precision_matrix[0]), L(d.scale_tril[0])) + ',')
f64 = lambda v: torch.tensor(v, dtype=torch.float64)
p = D.LowRankMultivariateNormal(f64([[1.0, -1.0, 0.5]]), f64([[1.0, 0.5], [0.2, -0.3], [0.7, 1.1]]), f64([0.5, 1.5, 0.8]))
q = D.LowRankMultivariateNormal(f64([0.0, 2.0, -0.5]), f64([[0.3], [1.0], [-0.4]]), f64([1.0, 0.7, 2.0]))
mv = D.MultivariateNormal(f64([0.5, 0.0, 1.0]), f64([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 1.5]]))
print(' lowrank_kl = { lr_lr = %s, mvn_lr = %s, lr_mvn = %s }' % (L(D.kl_divergence(p, q)), L(D.kl_divergence(mv, q)), L(D.kl_divergence(p, mv))) + ',')
print('}')
