-- The check of a Gamma draw's gradient (torch._standard_gamma, StandardGammaBackward0), shared by
-- spec/op_table_spec.lua (through spec/support/op_cases.lua) and spec/autograd_ops_spec.lua: the gradient is the
-- implicit (reparameterized) one, -(dF/dalpha) / f at the drawn x with F, f the Gamma(alpha, 1) cdf and
-- density, compared with a central difference of F in alpha (F by its power series).
-- gamma_implicit_grad_of(torch, alpha): alpha a float64 tensor that requires grad; true, or an error.
local function gamma_cdf(torch, a, x) -- the regularized lower incomplete gamma P(a, x), x small enough for the series
  local term, sum = 1 / a, 1 / a
  for n = 1, 400 do
    term = term * x / (a + n)
    sum = sum + term
    if term < sum * 1e-17 then break end
  end
  local lg = torch.lgamma(torch.tensor(a, { dtype = torch.float64 })):item()
  return math.exp(a * math.log(x) - x - lg) * sum
end
-- alpha: a float64 tensor that requires grad; checks the gradient of a draw against the Gamma cdf's
local function gamma_implicit_grad_of(torch, alpha)
  torch.manual_seed(0)
  local x = torch._standard_gamma(alpha)
  assert(x.grad_fn and x.grad_fn:name() == 'StandardGammaBackward0', '_standard_gamma: not recorded')
  x:sum():backward()
  local a, xs, g = alpha:detach():reshape(-1):tolist(), x:detach():reshape(-1):tolist(), alpha.grad:reshape(-1):tolist()
  for i = 1, #a do
    local h = 1e-5
    local dF = (gamma_cdf(torch, a[i] + h, xs[i]) - gamma_cdf(torch, a[i] - h, xs[i])) / (2 * h)
    local lg = torch.lgamma(torch.tensor(a[i], { dtype = torch.float64 })):item()
    local f = math.exp((a[i] - 1) * math.log(xs[i]) - xs[i] - lg)
    local want = -dF / f
    assert(math.abs(g[i] - want) <= 1e-4 * math.max(1, math.abs(want)),
      ('_standard_gamma: d x / d alpha at alpha %g, x %g is %.10g, the implicit derivative %.10g'):format(a[i], xs[i], g[i], want))
  end
  return true
end

return gamma_implicit_grad_of
