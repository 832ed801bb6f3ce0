-- The cases of spec/op_table_spec.lua, one or more for every op of the core's op list: how to call
-- the op in Lua (`lua`, on the named inputs below) and in PyTorch 1.13 (`py`, the same call in
-- Python, whose results spec/support/op_record.lua records into spec/support/op_wants.lua), the
-- inputs its gradient is checked against (`grad`; an op the list marks differentiable needs
-- them), and what the op does on the meta device (`meta`: nil, the result's shape, dtype and
-- strides are the CPU's; 'no data', the op needs values and says so).
--
-- Lua counts dims and positions from 1 and PyTorch from 0: the Lua calls say dim 2 where Python
-- says dim 1, index tensors are built 1-based (`ix` below), and the Python side of an op that
-- returns positions adds 1 (`pos(...)`).
local M = {}

local nan, inf = 0 / 0, math.huge

-- the inputs: float64 unless said, each as Python writes it and as Lua data
M.inputs = {
  A = { { 0.5, -1.25, 2.0 }, { 3.5, 0.25, -0.75 } },
  B = { { 1.5, 2.0, -0.5 }, { 0.75, -2.5, 1.25 } },
  P = { { 0.5, 1.5, 2.5 }, { 0.25, 1.0, 3.0 } }, -- positive
  U = { { 0.2, 0.5, 0.9 }, { 0.1, 0.35, 0.75 } }, -- inside (0, 1)
  E = { { nan, inf, -inf }, { 1.0, -0.0, 2.5 } }, -- special values
  D = { { 0.3, -1.7, 2.4 }, { 3.6, 0.2, -0.8 } }, -- away from integers, and D / B too (rounding ops)
  V = { 1.0, -2.0, 0.5 },
  W = { 0.5, 1.5 },
  M = { { 1.0, -0.5 }, { 2.0, 0.25 }, { -1.5, 3.0 } }, -- 3 x 2
  S = { { 2.0, -1.0, 0.5 }, { 0.0, 1.5, -2.0 }, { 1.0, 0.25, 3.0 } }, -- 3 x 3
  BA = { { { 0.5, -1.0, 2.0 }, { 1.5, 0.25, -0.5 } }, { { -1.0, 2.0, 0.75 }, { 0.0, 1.0, -2.0 } } }, -- 2 x 2 x 3
  BB = { { { 1.0, -0.5 }, { 0.25, 2.0 }, { -1.5, 1.0 } }, { { 2.0, 0.5 }, { -1.0, 1.5 }, { 0.75, -0.25 } } },
  Q = { 0.5, 1.0, 2.0, 3.5 }, -- sorted
  R = { 0.1, 0.2, 0.3, 0.4 }, -- probabilities
  N = { int64 = { { 3, -1, 4 }, { 1, -5, 9 } } },
  N2 = { int64 = { { 6, 3, -2 }, { 7, 0, 5 } } },
  C = { int64 = { 2, 0, 1, 2, 2 } }, -- counts
  K = { bool = { { true, false, true }, { false, true, true } } },
  G = { index = { { 2, 0 }, { 1, 2 } } }, -- positions (0-based here, 1-based in Lua)
  X = { index = { 2, 0 } },
  L = { index = { 1, 0, 2 } },
}

local cases = {}
M.cases = cases
local function case(name, c)
  cases[name] = cases[name] or {}
  table.insert(cases[name], c)
end
M.case = case

-- PLAIN unary ops: torch.f(x), on the input their domain needs
local unary_input = {
  log = 'P', log2 = 'P', log10 = 'P', log1p = 'P', sqrt = 'P', rsqrt = 'P', lgamma = 'P', digamma = 'P',
  asin = 'U', acos = 'U', tan = 'U', logit = 'U', reciprocal = 'A',
  floor = 'D', ceil = 'D', trunc = 'D', frac = 'D',
  logical_not = 'A', isnan = 'E', isinf = 'E', isfinite = 'E', bitwise_not = 'N',
}
M.unary_input = unary_input
-- PLAIN binary ops: torch.f(a, b)
local binary_inputs = {
  pow = { 'P', 'B' }, xlogy = { 'A', 'P' }, bitwise_and = { 'N', 'N2' }, bitwise_or = { 'N', 'N2' },
  floor_divide = { 'D', 'B' }, fmod = { 'D', 'B' }, remainder = { 'D', 'B' },
  bitwise_xor = { 'N', 'N2' },
}
M.binary_inputs = binary_inputs

-- helpers for the Lua calls
local function cl(t) return t:clone() end

------------------------------------------------------------------------------ elementwise
case('logit', { lua = function(I) return torch.logit(I.U) end, py = 'torch.logit(U)', grad = { 'U' } })
case('logit', { lua = function(I) return torch.logit(I.U, 0.15) end, py = 'torch.logit(U, 0.15)', grad = { 'U' } })
case('silu', { lua = function(I) return torch.silu(I.A) end, py = 'F.silu(A)', grad = { 'A' } })
case('digamma', { lua = function(I) return torch.digamma(I.P) end, py = 'torch.digamma(P)', grad = { 'P' } })
-- polygamma(n, x): n first, as torch.polygamma; the method takes n alone (x:polygamma(n))
for _, n in ipairs({ 0, 1, 2, 3 }) do
  -- PyTorch 1.13's zeta is good to about 1e-9 (ours to about 1e-15: polygamma(1, 1) = pi^2/6 = 1.6449340668482264,
  -- PyTorch gives 1.6449340676383)
  case('polygamma', { lua = function(I) return torch.polygamma(n, I.P) end, py = ('torch.polygamma(%d, P)'):format(n),
    grad = { 'P' }, tol = n > 0 and 1e-8 or nil })
end
-- (float32: PyTorch's zeta and ours round differently near the poles)
case('polygamma', { lua = function(I) return I.A:polygamma(1) end, py = 'A.polygamma(1)', grad = { 'A' }, tol = 1e-5 })
case('gelu', { lua = function(I) return torch.gelu(I.A) end, py = 'F.gelu(A)', grad = { 'A' } })
case('gelu_tanh', { lua = function(I) return torch.gelu(I.A, { approximate = 'tanh' }) end,
  py = "F.gelu(A, approximate='tanh')", grad = { 'A' } })
case('round', { lua = function(I) return torch.round(I.A) end, py = 'torch.round(A)' })
case('round', { lua = function(I) return torch.round(I.D) end, py = 'torch.round(D)', grad = { 'D' } })
case('round_decimals', { lua = function(I) return torch.round(I.A * 1.37, { decimals = 1 }) end,
  py = 'torch.round(A * 1.37, decimals=1)', grad = { 'A' } })
case('softplus', { lua = function(I) return torch.nn.functional.softplus(I.A) end, py = 'F.softplus(A)', grad = { 'A' } })
case('clamp', { lua = function(I) return torch.clamp(I.A, -1, 1.5) end, py = 'torch.clamp(A, -1, 1.5)', grad = { 'A' } })
case('clamp', { lua = function(I) return I.A:clamp({ min = 0.3 }) end, py = 'A.clamp(min=0.3)', grad = { 'A' } })
case('pow_scalar', { lua = function(I) return I.A ^ 3 end, py = 'A ** 3', grad = { 'A' } })
case('pow_scalar', { lua = function(I) return I.P:pow(0.5) end, py = 'P.pow(0.5)', grad = { 'P' } })
case('rpow_scalar', { lua = function(I) return torch.pow(2, I.A) end, py = 'torch.pow(2, A)', grad = { 'A' } })
case('leaky_relu', { lua = function(I) return torch.nn.functional.leaky_relu(I.A, 0.1) end,
  py = 'F.leaky_relu(A, 0.1)', grad = { 'A' } })
case('elu', { lua = function(I) return torch.nn.functional.elu(I.A) end, py = 'F.elu(A)', grad = { 'A' } })
case('hardtanh', { lua = function(I) return torch.nn.functional.hardtanh(I.A) end, py = 'F.hardtanh(A)', grad = { 'A' } })
case('threshold', { lua = function(I) return torch.nn.functional.threshold(I.A, 0.3, -1) end,
  py = 'F.threshold(A, 0.3, -1)', grad = { 'A' } })
case('nan_to_num', { lua = function(I) return torch.nan_to_num(I.E) end, py = 'torch.nan_to_num(E)' })
case('nan_to_num', { lua = function(I) return torch.nan_to_num(I.A * 2) end, py = 'torch.nan_to_num(A * 2)', grad = { 'A' } })

case('add', { lua = function(I) return torch.add(I.A, I.B) end, py = 'torch.add(A, B)', grad = { 'A', 'B' } })
case('add', { lua = function(I) return I.A + 2.5 end, py = 'A + 2.5', grad = { 'A' } })
case('sub', { lua = function(I) return torch.sub(I.A, I.B) end, py = 'torch.sub(A, B)', grad = { 'A', 'B' } })
case('sub', { lua = function(I) return 1 - I.A end, py = '1 - A', grad = { 'A' } })
case('div', { lua = function(I) return torch.div(I.A, I.B) end, py = 'torch.div(A, B)', grad = { 'A', 'B' } })
case('div', { lua = function(I) return 2 / I.B end, py = '2 / B', grad = { 'B' } })
case('div_trunc', { lua = function(I) return torch.div(I.D, I.B, { rounding_mode = 'trunc' }) end,
  py = "torch.div(D, B, rounding_mode='trunc')", grad = { 'D', 'B' } })
case('pow', { lua = function(I) return torch.pow(I.P, I.B) end, py = 'torch.pow(P, B)', grad = { 'P', 'B' } })
case('add_scaled', { lua = function(I) return torch.add(I.A, I.B, { alpha = 2.5 }) end,
  py = 'torch.add(A, B, alpha=2.5)', grad = { 'A', 'B' } })
case('addcmul', { lua = function(I) return torch.addcmul(I.A, I.B, I.P, { value = 0.5 }) end,
  py = 'torch.addcmul(A, B, P, value=0.5)', grad = { 'A', 'B', 'P' } })
case('addcdiv', { lua = function(I) return torch.addcdiv(I.A, I.B, I.P, { value = 0.5 }) end,
  py = 'torch.addcdiv(A, B, P, value=0.5)', grad = { 'A', 'B', 'P' } })
case('lerp', { lua = function(I) return torch.lerp(I.A, I.B, I.U) end, py = 'torch.lerp(A, B, U)', grad = { 'A', 'B', 'U' } })
case('where', { lua = function(I) return torch.where(I.K, I.A, I.B) end, py = 'torch.where(K, A, B)', grad = { 'A', 'B' } })
case('isclose', { lua = function(I) return torch.isclose(I.A, I.A + 1e-9) end, py = 'torch.isclose(A, A + 1e-9)' })
case('allclose', { lua = function(I) return torch.allclose(I.A, I.B) end, py = 'torch.allclose(A, B)', meta = 'no data' })
case('equal', { lua = function(I) return torch.equal(I.A, I.A:clone()) end, py = 'torch.equal(A, A.clone())',
  meta = 'no data' })

------------------------------------------------------------------------------ reductions
case('sum', { lua = function(I) return I.A:sum(2) end, py = 'A.sum(1)', grad = { 'A' } })
case('sum', { lua = function(I) return I.A:sum() end, py = 'A.sum()', grad = { 'A' } })
case('mean', { lua = function(I) return I.A:mean(1, true) end, py = 'A.mean(0, keepdim=True)', grad = { 'A' } })
case('prod', { lua = function(I) return I.A:prod(2) end, py = 'A.prod(1)', grad = { 'A' } })
case('amax', { lua = function(I) return I.A:amax(2) end, py = 'A.amax(1)', grad = { 'A' } })
case('amin', { lua = function(I) return I.A:amin(1) end, py = 'A.amin(0)', grad = { 'A' } })
case('all', { lua = function(I) return I.K:all(2) end, py = 'K.all(1)' })
case('any', { lua = function(I) return I.K:any(1) end, py = 'K.any(0)' })
case('var', { lua = function(I) return I.A:var(2) end, py = 'A.var(1)', grad = { 'A' } })
case('std', { lua = function(I) return I.A:std() end, py = 'A.std()', grad = { 'A' } })
case('norm', { lua = function(I) return I.A:norm() end, py = 'A.norm()', grad = { 'A' } })
case('norm', { lua = function(I) return I.A:norm(1, 2) end, py = 'A.norm(1, 1)', grad = { 'A' } })
case('logsumexp', { lua = function(I) return I.A:logsumexp(2) end, py = 'A.logsumexp(1)', grad = { 'A' } })
case('nansum', { lua = function(I) return I.E:nansum() end, py = 'E.nansum()' })
case('nansum', { lua = function(I) return I.A:nansum(2) end, py = 'A.nansum(1)', grad = { 'A' } })
case('count_nonzero', { lua = function(I) return I.N:count_nonzero(2) end, py = 'N.count_nonzero(1)' })
case('max', { lua = function(I) return I.A:max(2) end, py = 'pos2(A.max(1))', grad = { 'A' } })
case('min', { lua = function(I) return I.A:min(1) end, py = 'pos2(A.min(0))', grad = { 'A' } })
case('argmax', { lua = function(I) return I.A:argmax(2) end, py = 'pos(A.argmax(1))' })
case('argmax', { lua = function(I) return I.A:argmax() end, py = 'pos(A.argmax())' })
case('argmin', { lua = function(I) return I.A:argmin(1) end, py = 'pos(A.argmin(0))' })
case('var_mean', { lua = function(I) return torch.var_mean(I.A, 2) end, py = 'torch.var_mean(A, 1)', grad = { 'A' } })
case('std_mean', { lua = function(I) return torch.std_mean(I.A, 1) end, py = 'torch.std_mean(A, 0)', grad = { 'A' } })
case('cumsum', { lua = function(I) return I.A:cumsum(2) end, py = 'A.cumsum(1)', grad = { 'A' } })
case('cumprod', { lua = function(I) return I.A:cumprod(1) end, py = 'A.cumprod(0)', grad = { 'A' } })
case('softmax', { lua = function(I) return I.A:softmax(2) end, py = 'A.softmax(1)', grad = { 'A' } })
case('log_softmax', { lua = function(I) return I.A:log_softmax(1) end, py = 'A.log_softmax(0)', grad = { 'A' } })

------------------------------------------------------------------------------ copies and views
case('copy_', { lua = function(I) return cl(I.A):copy_(I.B) end, py = 'A.clone().copy_(B)', grad = { 'A', 'B' } })
case('to', { lua = function(I) return I.A:to(torch.float32) end, py = 'A.to(torch.float32)', grad = { 'A' },
  gradcheck = { eps = 1e-3, atol = 1e-3, rtol = 1e-2 } }) -- the values pass through float32
case('to', { lua = function(I) return I.N:to(torch.float64) end, py = 'N.to(torch.float64)' })
case('clone', { lua = function(I) return I.A:clone() end, py = 'A.clone()', grad = { 'A' } })
case('contiguous', { lua = function(I) return I.A:t():contiguous() end, py = 'A.t().contiguous()', grad = { 'A' } })
case('fill_', { lua = function(I) return cl(I.A):fill_(2.5) end, py = 'A.clone().fill_(2.5)', grad = { 'A' } })
case('zero_', { lua = function(I) return cl(I.A):zero_() end, py = 'A.clone().zero_()', grad = { 'A' } })
case('view', { lua = function(I) return I.A:view(3, 2) end, py = 'A.view(3, 2)', grad = { 'A' } })
case('reshape', { lua = function(I) return I.A:t():reshape(6) end, py = 'A.t().reshape(6)', grad = { 'A' } })
case('flatten', { lua = function(I) return I.BA:flatten(2) end, py = 'BA.flatten(1)', grad = { 'BA' } })
case('as_strided', { lua = function(I) return I.A:as_strided({ 2, 2 }, { 1, 2 }, 1) end,
  py = 'A.as_strided((2, 2), (1, 2), 1)', grad = { 'A' } })
case('transpose', { lua = function(I) return I.BA:transpose(1, 3) end, py = 'BA.transpose(0, 2)', grad = { 'BA' } })
case('permute', { lua = function(I) return I.BA:permute(3, 1, 2) end, py = 'BA.permute(2, 0, 1)', grad = { 'BA' } })
case('narrow', { lua = function(I) return I.A:narrow(2, 2, 2) end, py = 'A.narrow(1, 1, 2)', grad = { 'A' } })
case('slice', { lua = function(I) return I.A[{ {}, { 2, 3 } }] end, py = 'A[:, 1:3]', grad = { 'A' } })
case('select', { lua = function(I) return I.A:select(2, 3) end, py = 'A.select(1, 2)', grad = { 'A' } })
case('unsqueeze', { lua = function(I) return I.A:unsqueeze(2) end, py = 'A.unsqueeze(1)', grad = { 'A' } })
case('squeeze', { lua = function(I) return I.A:view(2, 1, 3):squeeze(2) end, py = 'A.view(2, 1, 3).squeeze(1)', grad = { 'A' } })
case('expand', { lua = function(I) return I.V:expand(2, 3) end, py = 'V.expand(2, 3)', grad = { 'V' } })
case('unfold', { lua = function(I) return I.V:unfold(1, 2, 1) end, py = 'V.unfold(0, 2, 1)', grad = { 'V' } })
case('diagonal', { lua = function(I) return I.S:diagonal(1) end, py = 'S.diagonal(1)', grad = { 'S' } })

------------------------------------------------------------------------------ joining, indexing, rearranging
case('cat', { lua = function(I) return torch.cat({ I.A, I.B }, 2) end, py = 'torch.cat([A, B], 1)', grad = { 'A', 'B' } })
case('stack', { lua = function(I) return torch.stack({ I.A, I.B }) end, py = 'torch.stack([A, B])', grad = { 'A', 'B' } })
case('index_select', { lua = function(I) return I.A:index_select(2, I.X) end, py = 'A.index_select(1, X)', grad = { 'A' } })
case('gather', { lua = function(I) return I.A:gather(2, I.G) end, py = 'A.gather(1, G)', grad = { 'A' } })
case('scatter', { lua = function(I) return I.A:scatter(2, I.G, I.B) end, py = 'A.scatter(1, G, B)', grad = { 'A', 'B' } })
case('scatter_add', { lua = function(I) return I.A:scatter_add(2, I.G, I.B) end, py = 'A.scatter_add(1, G, B)',
  grad = { 'A', 'B' } })
case('index_add', { lua = function(I) return I.A:index_add(2, I.X, I.M[{ { 1, 2 } }]) end,
  py = 'A.index_add(1, X, M[0:2])', grad = { 'A', 'M' } })
case('index_copy', { lua = function(I) return I.A:index_copy(2, I.X, I.M[{ { 1, 2 } }]) end,
  py = 'A.index_copy(1, X, M[0:2])', grad = { 'A', 'M' } })
case('index_fill', { lua = function(I) return I.A:index_fill(2, I.X, -3) end, py = 'A.index_fill(1, X, -3)', grad = { 'A' } })
case('masked_fill', { lua = function(I) return I.A:masked_fill(I.K, 9) end, py = 'A.masked_fill(K, 9)', grad = { 'A' } })
case('masked_select', { lua = function(I) return I.A:masked_select(I.K) end, py = 'A.masked_select(K)', grad = { 'A' },
  meta = 'no data' })
case('masked_scatter', { lua = function(I) return I.A:masked_scatter(I.K, I.B) end, py = 'A.masked_scatter(K, B)',
  grad = { 'A', 'B' } })
case('index', { lua = function(I) return I.S[{ I.X }] end, py = 'S[X]', grad = { 'S' } })
case('index', { lua = function(I) return I.A[I.K] end, py = 'A[K]', grad = { 'A' }, meta = 'no data' })
case('index_put', { lua = function(I) return I.S:index_put({ I.X }, I.B) end,
  py = 'S.index_put((X,), B)', grad = { 'S', 'B' } })
case('nonzero', { lua = function(I) return I.N:nonzero() end, py = 'pos(N.nonzero())', meta = 'no data' })
case('repeat', { lua = function(I) return I.A['repeat'](I.A, 2, 1) end, py = 'A.repeat(2, 1)', grad = { 'A' } })
case('repeat_interleave', { lua = function(I) return I.V:repeat_interleave(2) end, py = 'V.repeat_interleave(2)',
  grad = { 'V' } })
case('flip', { lua = function(I) return I.A:flip(2) end, py = 'A.flip(1)', grad = { 'A' } })
case('roll', { lua = function(I) return I.A:roll(1, 2) end, py = 'A.roll(1, 1)', grad = { 'A' } })
case('triu', { lua = function(I) return I.S:triu() end, py = 'S.triu()', grad = { 'S' } })
case('tril', { lua = function(I) return I.S:tril(-1) end, py = 'S.tril(-1)', grad = { 'S' } })
case('diag', { lua = function(I) return I.V:diag(1) end, py = 'V.diag(1)', grad = { 'V' } })
case('diag', { lua = function(I) return I.S:diag() end, py = 'S.diag()', grad = { 'S' } })
case('one_hot', { lua = function(I) return torch.nn.functional.one_hot(I.L, 4) end, py = 'F.one_hot(L, 4)' })
case('sort', { lua = function(I) return I.A:sort(2) end, py = 'pos2(A.sort(1))', grad = { 'A' } })
case('topk', { lua = function(I) return I.A:topk(2, 2) end, py = 'pos2(A.topk(2, 1))', grad = { 'A' } })
case('unique', { lua = function(I) return torch.unique(I.C) end, py = 'torch.unique(C)', meta = 'no data' })
case('searchsorted', { lua = function(I) return torch.searchsorted(I.Q, I.V) end, py = 'pos(torch.searchsorted(Q, V))' })
case('bincount', { lua = function(I) return torch.bincount(I.C) end, py = 'torch.bincount(C)', meta = 'no data' })

------------------------------------------------------------------------------ factories
case('empty', { lua = function(I) return torch.empty(2, 3, { dtype = torch.float64, device = I.device }):fill_(0) end,
  py = 'torch.empty(2, 3).double().fill_(0)' })
case('full', { lua = function(I) return torch.full({ 2, 3 }, 1.5, { dtype = torch.float64, device = I.device }) end,
  py = 'torch.full((2, 3), 1.5).double()' })
case('arange', { lua = function(I) return torch.arange(1, 7, 2, { device = I.device }) end, py = 'torch.arange(1, 7, 2)' })
case('linspace', { lua = function(I) return torch.linspace(0, 1, 5, { dtype = torch.float64, device = I.device }) end,
  py = 'torch.linspace(0, 1, 5, dtype=torch.float64)' })
case('logspace', { lua = function(I) return torch.logspace(0, 2, 3, { dtype = torch.float64, device = I.device }) end,
  py = 'torch.logspace(0, 2, 3, dtype=torch.float64)' })
case('eye', { lua = function(I) return torch.eye(2, 3, { dtype = torch.float64, device = I.device }) end,
  py = 'torch.eye(2, 3, dtype=torch.float64)' })

------------------------------------------------------------------------------ linear algebra
case('mm', { lua = function(I) return I.A:mm(I.M) end, py = 'A.mm(M)', grad = { 'A', 'M' } })
case('bmm', { lua = function(I) return I.BA:bmm(I.BB) end, py = 'BA.bmm(BB)', grad = { 'BA', 'BB' } })
case('matmul', { lua = function(I) return I.BA:matmul(I.M) end, py = 'BA.matmul(M)', grad = { 'BA', 'M' } })
case('matmul', { lua = function(I) return I.V:matmul(I.S) end, py = 'V.matmul(S)', grad = { 'V', 'S' } })
case('mv', { lua = function(I) return I.A:mv(I.V) end, py = 'A.mv(V)', grad = { 'A', 'V' } })
case('dot', { lua = function(I) return I.V:dot(I.V * 2) end, py = 'V.dot(V * 2)', grad = { 'V' } })
case('outer', { lua = function(I) return torch.outer(I.V, I.W) end, py = 'torch.outer(V, W)', grad = { 'V', 'W' } })
case('addmm', { lua = function(I) return torch.addmm(I.W, I.A, I.M, { beta = 0.5, alpha = 2 }) end,
  py = 'torch.addmm(W, A, M, beta=0.5, alpha=2)', grad = { 'W', 'A', 'M' } })
case('baddbmm', { lua = function(I) return torch.baddbmm(I.W, I.BA, I.BB, { beta = 0.5, alpha = 2 }) end,
  py = 'torch.baddbmm(W, BA, BB, beta=0.5, alpha=2)', grad = { 'W', 'BA', 'BB' } })

------------------------------------------------------------------------------ random numbers (seeded: PyTorch's CPU generator's draws)
local function seeded(f) return function(I) torch.manual_seed(0); return f(I) end end
case('uniform_', { lua = seeded(function(I) return cl(I.A):uniform_(-1, 2) end),
  py = 'seeded(lambda: A.clone().uniform_(-1, 2))' })
case('normal_', { lua = seeded(function(I) return cl(I.A):normal_(1, 0.5) end),
  py = 'seeded(lambda: A.clone().normal_(1, 0.5))' })
case('random_', { lua = seeded(function(I) return cl(I.A):random_(0, 10) end),
  py = 'seeded(lambda: A.clone().random_(0, 10))' })
case('bernoulli_', { lua = seeded(function(I) return cl(I.A):bernoulli_(0.3) end),
  py = 'seeded(lambda: A.clone().bernoulli_(0.3))' })
case('bernoulli', { lua = seeded(function(I) return torch.bernoulli(I.U) end), py = 'seeded(lambda: torch.bernoulli(U))' })
case('exponential_', { lua = seeded(function(I) return cl(I.A):exponential_(2) end),
  py = 'seeded(lambda: A.clone().exponential_(2))' })
case('randperm', { lua = seeded(function(I) return torch.randperm(6, { device = I.device }) end),
  py = 'seeded(lambda: pos(torch.randperm(6)))' })
case('multinomial', { lua = seeded(function(I) return torch.multinomial(I.R, 3) end),
  py = 'seeded(lambda: pos(torch.multinomial(R, 3)))' })
-- torch.distributions' samplers (the same draws as PyTorch's after the seed). A Gamma draw's gradient is
-- the implicit (reparameterized) one, -(dF/dalpha) / f at the drawn x with F, f the Gamma(alpha, 1)
-- cdf and density, not the derivative of the sampler's arithmetic at fixed random numbers, which is
-- what gradcheck would measure: grad_check compares it with a central difference of F in alpha
-- (F by its power series); poisson's gradient is zero, which gradcheck confirms.
local gamma_implicit_grad_of = require 'spec.support.gamma_grad'
local function gamma_implicit_grad(I) return gamma_implicit_grad_of(torch, I.P) end
case('_standard_gamma', { lua = seeded(function(I) return torch._standard_gamma(I.P) end),
  py = 'seeded(lambda: torch._standard_gamma(P))', grad = { 'P' }, grad_check = gamma_implicit_grad })
case('_sample_dirichlet', { lua = seeded(function(I) return torch._sample_dirichlet(I.P) end),
  py = 'seeded(lambda: torch._sample_dirichlet(P))' })
case('poisson', { lua = seeded(function(I) return torch.poisson(I.P * 6) end),
  py = 'seeded(lambda: torch.poisson(P * 6))', grad = { 'P' } })
case('binomial', { lua = seeded(function(I) return torch.binomial(I.P * 8, I.U) end),
  py = 'seeded(lambda: torch.binomial(P * 8, U))' })
case('_standard_gamma_grad', { lua = function(I) return torch._standard_gamma_grad(I.P, I.U * 3) end,
  py = 'torch._standard_gamma_grad(P, U * 3)' })
case('_dirichlet_grad', { lua = function(I) return torch._dirichlet_grad(I.U, I.P, I.P + 2) end,
  py = 'torch._dirichlet_grad(U, P, P + 2)' })

------------------------------------------------------------------------------ optimizers
-- one step of optim.SGD with momentum and weight decay on a parameter with a gradient
case('sgd_step', {
  lua = function(I)
    local p = torch.nn.Parameter(I.A:detach():clone())
    p.grad = I.B:detach():clone()
    local opt = torch.optim.SGD({ p }, { lr = 0.1, momentum = 0.9, weight_decay = 0.01 })
    opt:step()
    opt:step()
    return p:detach()
  end,
  py = 'sgd_twice(A, B)',
})
-- optimizers (issue 13): two steps of optim.Adam with amsgrad and weight decay
case('adam_step', {
  lua = function(I)
    local p = torch.nn.Parameter(I.A:detach():clone())
    p.grad = I.B:detach():clone()
    local opt = torch.optim.Adam({ p }, { lr = 0.1, amsgrad = true, weight_decay = 0.01 })
    opt:step()
    opt:step()
    return p:detach()
  end,
  py = '(lambda p: (setattr(p, "grad", B.clone()), (lambda o: (o.step(), o.step()))('
    .. 'torch.optim.Adam([p], lr=0.1, amsgrad=True, weight_decay=0.01)), p.detach())[2])(torch.nn.Parameter(A.clone()))',
})
-- two steps of optim.RMSprop (centered, momentum, weight decay) and of optim.Adagrad (lr_decay)
case('rmsprop_step', {
  lua = function(I)
    local p = torch.nn.Parameter(I.A:detach():clone())
    p.grad = I.B:detach():clone()
    local opt = torch.optim.RMSprop({ p }, { lr = 0.01, centered = true, momentum = 0.5, weight_decay = 0.01 })
    opt:step()
    opt:step()
    return p:detach()
  end,
  py = '(lambda p: (setattr(p, "grad", B.clone()), (lambda o: (o.step(), o.step()))('
    .. 'torch.optim.RMSprop([p], lr=0.01, centered=True, momentum=0.5, weight_decay=0.01)), p.detach())[2])(torch.nn.Parameter(A.clone()))',
})
case('adagrad_step', {
  lua = function(I)
    local p = torch.nn.Parameter(I.A:detach():clone())
    p.grad = I.B:detach():clone()
    local opt = torch.optim.Adagrad({ p }, { lr = 0.1, lr_decay = 0.5 })
    opt:step()
    opt:step()
    return p:detach()
  end,
  py = '(lambda p: (setattr(p, "grad", B.clone()), (lambda o: (o.step(), o.step()))('
    .. 'torch.optim.Adagrad([p], lr=0.1, lr_decay=0.5)), p.detach())[2])(torch.nn.Parameter(A.clone()))',
})
-- two steps of optim.Adadelta (weight decay) and of optim.Adamax (maximize)
case('adadelta_step', {
  lua = function(I)
    local p = torch.nn.Parameter(I.A:detach():clone())
    p.grad = I.B:detach():clone()
    local opt = torch.optim.Adadelta({ p }, { lr = 0.5, weight_decay = 0.1 })
    opt:step()
    opt:step()
    return p:detach()
  end,
  py = '(lambda p: (setattr(p, "grad", B.clone()), (lambda o: (o.step(), o.step()))('
    .. 'torch.optim.Adadelta([p], lr=0.5, weight_decay=0.1)), p.detach())[2])(torch.nn.Parameter(A.clone()))',
})
case('adamax_step', {
  lua = function(I)
    local p = torch.nn.Parameter(I.A:detach():clone())
    p.grad = I.B:detach():clone()
    local opt = torch.optim.Adamax({ p }, { lr = 0.1, maximize = true })
    opt:step()
    opt:step()
    return p:detach()
  end,
  py = '(lambda p: (setattr(p, "grad", B.clone()), (lambda o: (o.step(), o.step()))('
    .. 'torch.optim.Adamax([p], lr=0.1, maximize=True)), p.detach())[2])(torch.nn.Parameter(A.clone()))',
})

------------------------------------------------------------------------------ issue 12, pooling
-- (more cases, values and errors: spec/pooling_spec.lua)
M.inputs.PI = { { { { 0.5, -1.25, 2.0, 1.5, -0.75 }, { 3.5, 0.25, -2.5, 1.0, 0.75 }, { -1.5, 2.5, 0.125, -0.5, 1.75 },
  { 2.25, -3.0, 1.25, 0.375, -1.0 } }, { { 1.125, 0.625, -2.25, 2.75, -0.25 }, { -1.75, 3.25, 0.875, -0.625, 1.375 },
  { 0.0625, -2.75, 1.625, 2.125, -1.125 }, { -0.375, 1.875, -1.625, 0.3125, 2.875 } } } } -- 1 x 2 x 4 x 5
M.inputs.PG = { { { { 0.5, -1.0, 2.0, 1.5 }, { 0.25, 1.25, -0.5, 0.75 }, { -1.5, 1.0, 0.125, 2.5 } },
  { { 1.75, -0.25, 0.375, -2.0 }, { 0.625, 1.5, -1.25, 0.5 }, { 2.25, -0.75, 1.0, -0.5 } } } } -- 1 x 2 x 3 x 4
M.inputs.PU = { { { { 0.5, -1.0 }, { 2.0, 1.5 } }, { { -0.25, 0.75 }, { 1.25, -2.0 } } } } -- 1 x 2 x 2 x 2
local function PF() return torch.nn.functional end
case('max_pool', { lua = function(I) return PF().max_pool2d(I.PI, 2, 1, { return_indices = true }) end,
  py = 'pos2(F.max_pool2d(PI, 2, 1, return_indices=True))', grad = { 'PI' } })
case('max_pool', { lua = function(I) return PF().max_pool2d(I.PI, 3, 2, 1, 1, true) end,
  py = 'F.max_pool2d(PI, 3, 2, 1, 1, True)', grad = { 'PI' } })
case('max_pool', { lua = function(I) return PF().adaptive_max_pool2d(I.PI, { 3, 2 }, true) end,
  py = 'pos2(F.adaptive_max_pool2d(PI, (3, 2), True))', grad = { 'PI' } })
case('avg_pool', { lua = function(I) return PF().avg_pool2d(I.PI, 3, 2, 1, true, false) end,
  py = 'F.avg_pool2d(PI, 3, 2, 1, True, False)', grad = { 'PI' } })
case('avg_pool', { lua = function(I) return PF().adaptive_avg_pool2d(I.PI, { 3, 2 }) end,
  py = 'F.adaptive_avg_pool2d(PI, (3, 2))', grad = { 'PI' } })
case('interpolate', { lua = function(I) return PF().interpolate(I.PI, { scale_factor = 1.5, mode = 'bilinear' }) end,
  py = "F.interpolate(PI, scale_factor=1.5, mode='bilinear')", grad = { 'PI' } })
case('interpolate', { lua = function(I) return PF().interpolate(I.PI, { size = { 3, 7 } }) end,
  py = 'F.interpolate(PI, size=(3, 7))', grad = { 'PI' } })
case('interpolate', { lua = function(I) return PF().interpolate(I.PI, { size = { 5, 4 }, mode = 'bicubic' }) end,
  py = "F.interpolate(PI, size=(5, 4), mode='bicubic')", grad = { 'PI' } })
-- the adjoint of avg_pool2d(x, 2, 1) applied to PG: x's gradient, a function of PG (recorded under create_graph)
case('resample_backward', {
  lua = function(I)
    local x = I.PI:detach():requires_grad_()
    return torch.autograd.grad({ PF().avg_pool2d(x, 2, 1) }, { x }, { grad_outputs = { I.PG }, create_graph = true })[1]
  end,
  py = '(lambda x: torch.autograd.grad(F.avg_pool2d(x, 2, 1), x, PG)[0])(PI.clone().requires_grad_())',
  grad = { 'PG' } })
case('max_unpool', {
  lua = function(I)
    local _, i = PF().max_pool2d(I.PI:detach(), 2, { return_indices = true })
    return PF().max_unpool2d(I.PU, i, 2, { output_size = { 4, 5 } })
  end,
  py = 'F.max_unpool2d(PU, F.max_pool2d(PI, 2, return_indices=True)[1], 2, output_size=(4, 5))', grad = { 'PU' } })
case('pad', { lua = function(I) return PF().pad(I.PI, { 1, 2, 2, 1 }, 'reflect') end,
  py = "F.pad(PI, (1, 2, 2, 1), 'reflect')", grad = { 'PI' } })
case('pad', { lua = function(I) return PF().pad(I.PI, { 2, -1, 0, 3 }, 'replicate') end,
  py = "F.pad(PI, (2, -1, 0, 3), 'replicate')", grad = { 'PI' } })

------------------------------------------------------------------------------ convolution (issue 12, conv part)
M.inputs.CX = { { { { 0.5, -1.0, 2.0, 0.25 }, { 1.5, 0.75, -0.5, 1.0 }, { -2.0, 0.5, 1.25, -0.75 } },
  { { 1.0, 0.0, -1.5, 2.5 }, { -0.25, 1.75, 0.5, -1.0 }, { 0.75, -1.25, 2.0, 0.5 } } } } -- 1 x 2 x 3 x 4
M.inputs.CW = { { { { 1.0, -0.5 }, { 0.25, 2.0 } }, { { -1.0, 0.5 }, { 1.5, -0.75 } } },
  { { { 0.5, 1.0 }, { -1.5, 0.25 } }, { { 2.0, -1.0 }, { 0.75, 0.5 } } },
  { { { -0.25, 0.75 }, { 1.0, -2.0 } }, { { 0.5, 1.5 }, { -0.5, 1.0 } } } } -- 3 x 2 x 2 x 2
M.inputs.CB = { 0.5, -1.0, 0.25 }
M.inputs.CC = { { { 0.5, -1.0, 2.0, 0.25, 1.5, -0.5 }, { 1.0, 0.75, -0.5, 1.0, -2.0, 0.5 },
  { 1.25, -0.75, 1.0, 0.0, -1.5, 2.5 }, { -0.25, 1.75, 0.5, -1.0, 0.75, -1.25 } } } -- 1 x 4 x 6
local Fc = function() return require('moontorch.nn').functional end
case('convolution', { lua = function(I) return Fc().conv2d(I.CX, I.CW, I.CB, 1, 1) end,
  py = 'F.conv2d(CX, CW, CB, 1, 1)', grad = { 'CX', 'CW', 'CB' } })
case('convolution', { lua = function(I)
    return Fc().conv2d(I.CX, I.CW:narrow(1, 1, 2):narrow(2, 1, 1):contiguous(), nil, { 2, 1 }, 0, 1, 2)
  end, py = 'F.conv2d(CX, CW[:2, :1].contiguous(), None, (2, 1), 0, 1, 2)', grad = { 'CX' } })
case('convolution', { lua = function(I) return Fc().conv_transpose2d(I.CX, I.CW:transpose(1, 2):contiguous(), I.CB, 2, 1, 1) end,
  py = 'F.conv_transpose2d(CX, CW.transpose(0, 1).contiguous(), CB, 2, 1, 1)', grad = { 'CX', 'CW', 'CB' } })
case('convolution', { lua = function(I) return torch.convolution(I.CX, I.CW, nil, { 1, 1 }, { 0, 1 }, { 1, 2 }, false, { 0, 0 }, 1) end,
  py = 'torch.convolution(CX, CW, None, (1, 1), (0, 1), (1, 2), False, (0, 0), 1)', grad = { 'CX', 'CW' } })
case('im2col', { lua = function(I) return Fc().unfold(I.CX, { 2, 3 }, 1, 1, { 1, 2 }) end,
  py = 'F.unfold(CX, (2, 3), 1, 1, (1, 2))', grad = { 'CX' } })
case('col2im', { lua = function(I) return Fc().fold(I.CC, { 3, 4 }, 2) end, py = 'F.fold(CC, (3, 4), 2)', grad = { 'CC' } })

------------------------------------------------------------------------------ recurrent layers (issue 12, rnn part)
-- one time step's gates after the two products: hidden size 3, batch 2; PyTorch has no CPU op for
-- them, so its side is the formula its LSTMCell / GRUCell compute (torch/nn/_VF's CPU cells)
local function lstm_in(I)
  return torch.cat({ I.A, I.B, I.D, I.P }, 2), torch.cat({ I.B, I.D, I.P, I.A }, 2), I.U, torch.cat({ I.Q, I.R, I.Q }),
    torch.cat({ I.R, I.Q, I.R })
end
local LSTM_PY = '(lambda G, C: (lambda i, f, g, o: (lambda c: (torch.sigmoid(o) * torch.tanh(c), c))'
  .. '(torch.sigmoid(f) * C + torch.sigmoid(i) * torch.tanh(g)))(*G.chunk(4, 1)))'
  .. '(torch.cat([A, B, D, P], 1) + torch.cat([B, D, P, A], 1) + torch.cat([Q, R, Q]) + torch.cat([R, Q, R]), U)'
case('lstm_cell_pointwise', { lua = function(I) return torch.lstm_cell_pointwise(lstm_in(I)) end, py = LSTM_PY,
  grad = { 'A', 'B', 'U', 'Q', 'R' } })
case('lstm_cell_pointwise', { lua = function(I)
    local h, c = torch.lstm_cell_pointwise(lstm_in(I))
    return c, h
  end, py = '(lambda r: (r[1], r[0]))(' .. LSTM_PY .. ')', grad = { 'A', 'B', 'U', 'Q', 'R' } })
case('lstm_cell_pointwise', { lua = function(I)
    local g, h, c = lstm_in(I)
    return torch.lstm_cell_pointwise(g, h, c)
  end, py = LSTM_PY:gsub(' %+ torch%.cat%(%[Q, R, Q%]%) %+ torch%.cat%(%[R, Q, R%]%)', ''), grad = { 'A', 'U' } })
local GRU_PY = '(lambda gi, gh, h: (lambda r, z, nh: (lambda n: (h - n) * z + n)(torch.tanh(gi.chunk(3, 1)[2] + r * nh)))'
  .. '(torch.sigmoid(gi.chunk(3, 1)[0] + gh.chunk(3, 1)[0]), torch.sigmoid(gi.chunk(3, 1)[1] + gh.chunk(3, 1)[1]),'
  .. ' gh.chunk(3, 1)[2]))(torch.cat([A, B, D], 1) + torch.cat([V, W, Q]), torch.cat([B, D, P], 1) + torch.cat([Q, W, V]), U)'
case('gru_cell_pointwise', { lua = function(I)
    return torch.gru_cell_pointwise(torch.cat({ I.A, I.B, I.D }, 2), torch.cat({ I.B, I.D, I.P }, 2), I.U,
      torch.cat({ I.V, I.W, I.Q }), torch.cat({ I.Q, I.W, I.V }))
  end, py = GRU_PY, grad = { 'A', 'P', 'U', 'V', 'W', 'Q' } })
case('unbind', { lua = function(I) return unpack(I.A:unbind(2)) end, py = 'A.unbind(1)', grad = { 'A' } })
case('unbind', { lua = function(I) return unpack(torch.unbind(I.BA, -1)) end, py = 'torch.unbind(BA, -1)', grad = { 'BA' } })

------------------------------------------------------------------------------ issue 12, the modules part
-- the fused layer norm: over the last dim with weight and bias, over the last two without
case('layer_norm', { lua = function(I) return torch.layer_norm(I.BA, { 3 }, I.V, I.V * 0.5) end,
  py = 'torch.layer_norm(BA, [3], V, V * 0.5)', grad = { 'BA', 'V' } })
case('layer_norm', { lua = function(I) return torch.layer_norm(I.BA, { 2, 3 }, nil, nil, 1e-3) end,
  py = 'torch.layer_norm(BA, [2, 3], None, None, 1e-3)', grad = { 'BA' } })
-- nll_loss: targets 1-based here, 0-based in Python (X); mean, weighted sum, none with ignore_index
case('nll_loss', { lua = function(I) return torch.nll_loss(I.A, I.X) end,
  py = 'torch.nn.functional.nll_loss(A, X)', grad = { 'A' } })
case('nll_loss', { lua = function(I) return torch.nll_loss(I.A, I.X, I.V, nil, 'sum') end,
  py = "torch.nn.functional.nll_loss(A, X, weight=V, reduction='sum')", grad = { 'A' } })
case('nll_loss', { lua = function(I) return torch.nll_loss(I.A, I.X, { weight = I.V, ignore_index = 1, reduction = 'none' }) end,
  py = "torch.nn.functional.nll_loss(A, X, weight=V, ignore_index=0, reduction='none')", grad = { 'A' } })
-- ctc_loss on BA as (T=2, N=2, C=3) log-probabilities: targets 1-based here (blank 1), 0-based in Python
case('ctc_loss', { lua = function(I)
    return torch.ctc_loss(I.BA, torch.tensor({ { 2, 3 }, { 3, 1 } }, { dtype = torch.int64, device = I.device }), { 2, 2 }, { 2, 1 },
      { blank = 1, reduction = 'none' })
  end,
  py = "torch.nn.functional.ctc_loss(BA, torch.tensor([[1, 2], [2, 0]]), [2, 2], [2, 1], reduction='none')", grad = { 'BA' } })
case('ctc_loss', { lua = function(I)
    return torch.ctc_loss(I.BA, torch.tensor({ 3, 2, 3 }, { dtype = torch.int64, device = I.device }), { 2, 2 }, { 1, 2 }, { blank = 1 })
  end,
  py = "torch.nn.functional.ctc_loss(BA, torch.tensor([2, 1, 2]), [2, 2], [1, 2], zero_infinity=False)", grad = { 'BA' } })
-- embedding_bag over the rows of S (3 x 3): indices L (1-based here), bags {1, 2} and {3}; sum with
-- per-sample weights, max; offsets 1-based here, 0-based in Python
case('embedding_bag', { lua = function(I)
    return torch.embedding_bag(I.L, I.S, torch.tensor({ 1, 3 }, { dtype = torch.int64, device = I.device }),
      { mode = 'sum', per_sample_weights = I.V })
  end,
  py = "torch.nn.functional.embedding_bag(L, S, torch.tensor([0, 2]), mode='sum', per_sample_weights=V)", grad = { 'S', 'V' } })
case('embedding_bag', { lua = function(I)
    return torch.embedding_bag(I.L, I.S, torch.tensor({ 1, 2 }, { dtype = torch.int64, device = I.device }), { mode = 'max' })
  end,
  py = "torch.nn.functional.embedding_bag(L, S, torch.tensor([0, 1]), mode='max')", grad = { 'S' } })

------------------------------------------------------------------------------ issue 12, the LSTM's speed
-- the whole recurrence: 2 steps, batch 2, hidden 3; PyTorch's side is its two LSTM cells in turn
-- (the same formula as lstm_cell_pointwise's above, with hgates = h @ w_hh^T)
local function lstm_layer_in(I)
  return torch.stack({ torch.cat({ I.A, I.B, I.D, I.P }, 2), torch.cat({ I.B, I.D, I.P, I.A }, 2) }), I.U, I.D * 0.5,
    torch.cat({ I.A, I.B, I.D, I.P, I.U, I.B }) * 0.5
end
local LSTM_CELL_PY = '(lambda G, C: (lambda i, f, g, o: (lambda c: (torch.sigmoid(o) * torch.tanh(c), c))'
  .. '(torch.sigmoid(f) * C + torch.sigmoid(i) * torch.tanh(g)))(*G.chunk(4, 1)))'
local function lstm_layer_py(first, second)
  return ('(lambda cell, IG, h0, c0, W: (lambda s1: (lambda s2: (torch.stack([%s]), torch.stack([%s])))'
    .. '(cell(IG[%d] + s1[0] @ W.t(), s1[1])))(cell(IG[%d] + h0 @ W.t(), c0)))'):format(
      first == 0 and 's1[0], s2[0]' or 's2[0], s1[0]', first == 0 and 's1[1], s2[1]' or 's2[1], s1[1]', second, first)
    .. '(' .. LSTM_CELL_PY .. ', torch.stack([torch.cat([A, B, D, P], 1), torch.cat([B, D, P, A], 1)]), U, D * 0.5,'
    .. ' torch.cat([A, B, D, P, U, B]) * 0.5)'
end
case('lstm_layer', { lua = function(I) return torch.lstm_layer(lstm_layer_in(I)) end, py = lstm_layer_py(0, 1),
  grad = { 'A', 'U', 'D' } })
case('lstm_layer', { lua = function(I)
    local ig, h0, c0, w = lstm_layer_in(I)
    return torch.lstm_layer(ig, h0, c0, w, true)
  end, py = lstm_layer_py(1, 0), grad = { 'A', 'U', 'D' } })

------------------------------------------------------------------------------ issue 24: the CSR product
-- W (3 x 3) in CSR form with entries (1, 2), (2, 1), (3, 3) of values V (crow/col 1-based here,
-- 0-based in Python): W @ M (torch.sparse.mm), and A @ W^T (a Linear's forward: F.linear)
local function csr_of(I, values)
  local i64 = { dtype = torch.int64, device = I.device }
  return torch.sparse_csr_tensor(torch.tensor({ 1, 2, 3, 4 }, i64), torch.tensor({ 2, 1, 3 }, i64), values, { 3, 3 })
end
local py_csr = 'torch.sparse_csr_tensor(torch.tensor([0, 1, 2, 3]), torch.tensor([1, 0, 2]), V, (3, 3))'
case('csr_mm', { lua = function(I) return torch.sparse.mm(csr_of(I, I.V), I.M) end,
  py = 'torch.sparse.mm(' .. py_csr .. ', M)', grad = { 'V', 'M' } })
case('csr_mm', { lua = function(I) return torch.nn.functional.linear(I.A, csr_of(I, I.V), I.V) end,
  py = 'F.linear(A, ' .. py_csr .. '.to_dense(), V)', grad = { 'V', 'A' } })

-- Every case, with one made for each PLAIN elementwise op of the list that has none of its own:
-- torch.f(x) on its domain's input, torch.f(a, b); its gradient checked when differentiable.
-- `ops`: the op list (moontorch.ops.list's ops()). In a fixed order: op list order, then each
-- op's cases in the order above.
function M.all(ops)
  local out = {}
  for _, op in ipairs(ops) do
    local cs = cases[op.name]
    if not cs and op.binding == 'PLAIN' and op.kind:match('^UNARY') then
      local x = unary_input[op.name] or 'A'
      local name = op.name
      cs = { { lua = function(I) return torch[name](I[x]) end, py = ('torch.%s(%s)'):format(name, x),
        grad = op.differentiable and { x } or nil } }
    elseif not cs and op.binding == 'PLAIN' and op.kind:match('^BINARY') then
      local ab = binary_inputs[op.name] or { 'A', 'B' }
      local name = op.name
      cs = { { lua = function(I) return torch[name](I[ab[1]], I[ab[2]]) end,
        py = ('torch.%s(%s, %s)'):format(name, ab[1], ab[2]), grad = op.differentiable and ab or nil } }
    end
    out[#out + 1] = { op = op, cases = cs or {} }
  end
  return out
end

return M
