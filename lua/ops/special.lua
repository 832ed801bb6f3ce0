-- torch.special: PyTorch's names for the special functions. Most are other names of the core's ops
-- (special.expit is torch.sigmoid, special.gammaln torch.lgamma, ...); the rest are composed here from
-- those ops, so autograd and dtypes come with them: xlog1py, entr, ndtr, ndtri, log_ndtr, erfcx,
-- multigammaln (also torch.mvlgamma and t:mvlgamma). The op list's own 'special.*' aliases (xlogy,
-- sinc, logit, digamma, psi, polygamma) are installed by lua/ops/list.lua.
local core = require 'moontorch.ffi'

local fail = core.fail
local M = {}

local SQRT2, LOG_PI = math.sqrt(2), math.log(math.pi)
local LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)

function M.install(torch, methods)
  local special = torch.special
  local is_tensor = torch.is_tensor

  local function need(op, x, name)
    if not is_tensor(x) then
      fail(op, ('expected a tensor as %s, got %s'):format(name or 'input', x == nil and 'nil' or type(x)))
    end
    return x
  end
  local function floating(x)
    if not x.dtype.is_floating_point then return x:to(torch.get_default_dtype()) end
    return x
  end

  -- other names of the core's ops
  for name, target in pairs { expit = 'sigmoid', exp2 = 'exp2', expm1 = 'expm1', log1p = 'log1p', erf = 'erf',
    erfc = 'erfc', erfinv = 'erfinv', gammaln = 'lgamma', logsumexp = 'logsumexp', softmax = 'softmax',
    log_softmax = 'log_softmax', round = 'round' } do
    special[name] = torch[target]
  end

  -- x * log1p(y), 0 where x is 0 (unless y is NaN)
  function special.xlog1py(x, y)
    if type(x) == 'number' and is_tensor(y) then x = torch.full({}, x, { dtype = y.dtype }) end
    need('special.xlog1py', x, 'input')
    if type(y) == 'number' then y = torch.full({}, y, { dtype = x.dtype.is_floating_point and x.dtype or torch.get_default_dtype() }) end
    need('special.xlog1py', y, 'other')
    x, y = floating(x), floating(y)
    local v = x * torch.log1p(y)
    return torch.where(x:eq(0):logical_and(y:eq(y)), torch.zeros({}, { dtype = v.dtype }), v)
  end

  -- -x ln x: 0 at 0, -inf below 0
  function special.entr(x)
    x = floating(need('special.entr', x))
    local v = -x * x:log()
    v = torch.where(x:eq(0), torch.zeros({}, { dtype = x.dtype }), v)
    return torch.where(x:lt(0), torch.full({}, -math.huge, { dtype = x.dtype }), v)
  end

  -- the standard normal's distribution function (erfc keeps the lower tail's precision)
  function special.ndtr(x)
    x = floating(need('special.ndtr', x))
    return torch.erfc(-x / SQRT2) * 0.5
  end

  -- its inverse: erfinv's answer, then one Newton step on ndtr in float64 (erfinv(2p - 1) alone
  -- loses digits as p nears 0, where 2p - 1 rounds)
  function special.ndtri(p)
    p = floating(need('special.ndtri', p))
    local dt = p.dtype
    local pd = p:to(torch.float64)
    local x0 = torch.erfinv(pd * 2 - 1) * SQRT2
    local pdf = (-(x0 * x0) * 0.5):exp() / math.sqrt(2 * math.pi)
    local step = (torch.erfc(-x0 / SQRT2) * 0.5 - pd) / pdf
    local x1 = torch.where(step:isfinite(), x0 - step, x0)
    -- far in the lower tail (p < 1e-8, where 2p - 1 is -1 to the last bit): Abramowitz and Stegun's
    -- 26.2.23 as a start, then Newton steps on log_ndtr(x) = log p (ndtr / pdf = exp(log_ndtr - log pdf))
    local small = pd:lt(1e-8):logical_and(pd:gt(0))
    if small:any() then
      local ps = torch.where(small, pd, torch.full({}, 1e-9, { dtype = torch.float64 }))
      local logp = ps:log()
      local t = (logp * -2):sqrt()
      local x = -(t - (t * (t * 0.010328 + 0.802853) + 2.515517) / (t * (t * (t * 0.001308 + 0.189269) + 1.432788) + 1))
      for _ = 1, 4 do
        local lpdf = -(x * x) * 0.5 - 0.5 * math.log(2 * math.pi)
        local l = special.log_ndtr(x)
        x = x - (l - logp) * (l - lpdf):exp()
      end
      x1 = torch.where(small, x, x1)
    end
    return x1:to(dt)
  end

  -- log(ndtr(x)), in float64 inside; below -20 by the asymptotic series of the normal's tail,
  -- whose terms are still falling there (eight give double precision)
  function special.log_ndtr(x)
    x = floating(need('special.log_ndtr', x))
    local dt = x.dtype
    local xd = x:to(torch.float64)
    local direct = (torch.erfc(-xd:clamp({ min = -20 }) / SQRT2) * 0.5):log()
    local xs = xd:clamp({ max = -20 })
    local z2 = (xs * xs):reciprocal()
    local sum, term = torch.ones_like(xs), torch.ones_like(xs)
    for n = 1, 8 do
      term = term * z2 * (-(2 * n - 1))
      sum = sum + term
    end
    local tail = -(xs * xs) * 0.5 - (-xs):log() - LOG_SQRT_2PI + sum:log()
    return torch.where(xd:lt(-20), tail, direct):to(dt)
  end

  -- exp(x^2) erfc(x), in float64 inside; above 25 by its asymptotic series
  function special.erfcx(x)
    x = floating(need('special.erfcx', x))
    local dt = x.dtype
    local xd = x:to(torch.float64)
    local xc = xd:clamp({ max = 25 })
    local direct = (xc * xc):exp() * torch.erfc(xc)
    local xl = xd:clamp({ min = 25 })
    local z2 = (xl * xl * 2):reciprocal()
    local sum, term = torch.ones_like(xl), torch.ones_like(xl)
    for n = 1, 6 do
      term = term * z2 * (-(2 * n - 1))
      sum = sum + term
    end
    local tail = sum / (xl * math.sqrt(math.pi))
    return torch.where(xd:gt(25), tail, direct):to(dt)
  end

  -- the multivariate log-gamma of dimension p
  local function multigammaln(a, p)
    need('special.multigammaln', a)
    if type(p) ~= 'number' or p ~= math.floor(p) then
      fail('special.multigammaln', ('expected p as an integer, got %s'):format(tostring(p)))
    end
    if p < 1 then fail('special.multigammaln', 'p has to be greater than or equal to 1') end
    -- (elements at or below (p - 1) / 2 are outside its domain: PyTorch 1.13 computes the sum anyway)
    a = floating(a)
    local out = torch.zeros_like(a) + p * (p - 1) / 4 * LOG_PI
    for j = 0, p - 1 do out = out + torch.lgamma(a - j / 2) end
    return out
  end
  special.multigammaln = multigammaln
  torch.mvlgamma = function(a, p)
    if type(p) == 'table' and not is_tensor(p) then p = p.p end
    return multigammaln(a, p)
  end
  methods.mvlgamma = torch.mvlgamma
end

return M
