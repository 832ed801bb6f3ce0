# Records PyTorch 1.13's draws of its distribution samplers for spec/samplers_spec.lua:
#   /usr/bin/python3 spec/support/samplers_record.py > spec/support/samplers_wants.lua
# Each case seeds torch.manual_seed(seed), then calls the sampler on the given parameters (float32 and
# float64) and prints every value with repr (the shortest round-tripping double), so the spec compares
# bit for bit. Parameters cover each algorithm's branches: Gamma alpha < 1 (the boost), = 0, > 1, large;
# Poisson below and above 10 and 0; Binomial inversion, BTRS, prob > 1/2, the edge cases; Dirichlet.
# The gradients: _standard_gamma_grad on points of each of its three regimes, _dirichlet_grad on
# points of each of its four, and d(sum of rsample)/d(concentration) through StandardGammaBackward0.
import torch

def L(t):
    t = t.detach()
    if t.dim() == 0:
        return repr(t.item()).replace('inf', 'math.huge').replace('nan', '0/0')
    return '{ ' + ', '.join(L(x) for x in t) + ' }'

GAMMA = [0.0, 1e-3, 0.3, 0.5, 0.999, 1.0, 1.5, 2.0, 3.7, 10.0, 55.0, 1e3]
POISSON = [0.0, 1e-3, 0.5, 1.0, 4.2, 9.99, 10.0, 17.5, 100.0, 1e4]
COUNT = [0.0, 1.0, 5.0, 10.0, 20.0, 50.0, 100.0, 1000.0, 37.0, 7.0, 200.0, -2.0, 4.0]
PROB = [0.3, 0.5, 0.1, 0.9, 0.5, 0.3, 0.05, 0.7, 0.99, 0.01, 0.999, 0.5, 0.0]
DIRICHLET = [[0.5, 1.0, 2.0], [10.0, 0.1, 3.0], [1e-3, 1.0, 1e-2]]
GG_ALPHA = [0.5, 2.0, 3.0, 9.0, 20.0, 20.0, 20.0, 1.5, 0.2, 50.0]
GG_X = [0.3, 0.1, 2.5, 8.5, 20.5, 10.0, 35.0, 4.0, 1.2, 52.0]
DG_X = [0.1, 0.9, 0.5, 0.4, 0.3, 0.05, 0.97]
DG_ALPHA = [0.5, 3.0, 10.0, 2.0, 1.5, 0.2, 4.0]
DG_TOTAL = [2.0, 3.5, 20.0, 5.0, 4.0, 1.0, 4.2]

print('-- written by spec/support/samplers_record.py (PyTorch %s)' % torch.__version__)
print('return {')
for dtn, dt in (('float32', torch.float32), ('float64', torch.float64)):
    print(' %s = {' % dtn)
    P = lambda v: torch.tensor(v, dtype=dt)
    torch.manual_seed(11)
    print('  gamma = %s,' % L(torch._standard_gamma(P(GAMMA).repeat(3))))
    torch.manual_seed(12)
    print('  poisson = %s,' % L(torch.poisson(P(POISSON).repeat(3))))
    torch.manual_seed(13)
    print('  binomial = %s,' % L(torch.binomial(P(COUNT).repeat(3), P(PROB).repeat(3))))
    torch.manual_seed(14)
    print('  dirichlet = %s,' % L(torch._sample_dirichlet(P(DIRICHLET))))
    # expanded and non-contiguous parameters: draws in the result's row-major order
    torch.manual_seed(15)
    print('  gamma_expanded = %s,' % L(torch._standard_gamma(P([[0.5], [4.0]]).expand(2, 3))))
    torch.manual_seed(16)
    print('  gamma_t = %s,' % L(torch._standard_gamma(P([[0.5, 2.0], [4.0, 9.0], [1.0, 0.1]]).t())))
    print('  gamma_grad = %s,' % L(torch._standard_gamma_grad(P(GG_ALPHA), P(GG_X))))
    print('  dirichlet_grad = %s,' % L(torch._dirichlet_grad(P(DG_X), P(DG_ALPHA), P(DG_TOTAL))))
    a = P([0.4, 1.0, 2.5, 12.0]).requires_grad_()
    torch.manual_seed(17)
    x = torch._standard_gamma(a)
    (x * P([1.0, 2.0, 3.0, 4.0])).sum().backward()
    print('  rsample_x = %s, rsample_grad = %s,' % (L(x), L(a.grad)))
    print(' },')
# normal_ on a non-contiguous float64 tensor: normal_distribution<double> one draw at a time, r = sqrt(-2 log(1 - u2))
torch.manual_seed(21)
t = torch.empty(300, 2, dtype=torch.float64)[:, 0]
t.normal_()
print(' normal_strided = %s,' % L(t))
# the far ends: infinite and huge rates and counts (PyTorch's int64 conversion of an out-of-range count)
torch.manual_seed(22)
print(' far = { poisson = %s, gamma = %s, binomial = %s },' % (
    L(torch.poisson(torch.tensor([float('inf'), 1e30, 1e19, 5e18], dtype=torch.float64))),
    L(torch._standard_gamma(torch.tensor([float('inf'), 1e300], dtype=torch.float64))),
    L(torch.binomial(torch.tensor([float('inf'), 1e30, 10.0], dtype=torch.float64), torch.tensor([0.5, 0.5, float('nan')], dtype=torch.float64)))))
print('}')
