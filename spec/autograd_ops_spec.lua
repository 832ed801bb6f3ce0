-- Every backward the core can produce, checked: a table of gradcheck cases keyed by grad_fn name.
-- The spec walks the C list of names (mt_grad_op_list_name) and fails for a name without a case,
-- so a new differentiable op cannot land without one. Each case builds float64 inputs
-- (contiguous, transposed and broadcast variants where they apply), asserts that the output's
-- grad_fn has the key's name, runs gradcheck, and gradgradcheck where `gg` is set.
-- Expected names were recorded from PyTorch 1.13 (/usr/bin/python3: `y.grad_fn.name()`).
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'
local C = torch._C
local ag = torch.autograd
local f64 = torch.float64

-- inputs: r random normal, p positive (0.5 .. 1.5), s small (-0.4 .. 0.4), z with zeros
local function r(...) return torch.randn(...):to(f64):requires_grad_() end
local function p(...) return (torch.rand(...):to(f64) + 0.5):requires_grad_() end
local function s(...) return (torch.rand(...):to(f64) * 0.8 - 0.4):requires_grad_() end
local function rt(a, b) return torch.randn(b, a):to(f64):t():requires_grad_() end -- transposed
local function pt(a, b) return (torch.rand(b, a):to(f64) + 0.5):t():requires_grad_() end
local function long(t) return torch.tensor(t, { dtype = torch.int64 }) end
local function leaf(t) return torch.tensor(t, { dtype = f64, requires_grad = true }) end
local function mask(t) return torch.tensor(t, { dtype = torch.bool }) end
-- a non-leaf copy (in-place ops refuse leaves)
local function nl(t) return t * 1 end

-- cases[name] = { { f, inputs (a function making them), gg = second derivatives too }, ... }
local cases = {}
local function add(name, f, mk, opts)
  cases[name] = cases[name] or {}
  local c = { f = f, mk = mk }
  for k, v in pairs(opts or {}) do c[k] = v end
  table.insert(cases[name], c)
end
-- a one-input op on the usual variants: contiguous, transposed
local function add1(name, f, gen, opts)
  gen = gen or r
  add(name, f, function() return { gen(3, 4) } end, opts)
  add(name, f, function()
    local x = gen(4, 3)
    return { x:detach():t():requires_grad_() }
  end, opts)
end
-- a two-input op: same shapes, broadcast, transposed
local function add2(name, f, ga, gb, opts)
  ga, gb = ga or r, gb or ga or r
  add(name, f, function() return { ga(3, 4), gb(3, 4) } end, opts)
  add(name, f, function() return { ga(3, 1), gb(1, 4) } end, opts)
  add(name, f, function() return { ga(4, 3):detach():t():requires_grad_(), gb(4) } end, opts)
end

------------------------------------------------------------------------------ unary
add1('NegBackward0', function(x) return -x end, r, { gg = true })
add1('AbsBackward0', function(x) return x:abs() end, p)
add1('SignBackward0', function(x) return x:sign() end)
add1('ExpBackward0', function(x) return x:exp() end, r, { gg = true })
add1('Exp2Backward0', function(x) return torch.exp2(x) end)
add1('LogBackward0', function(x) return x:log() end, p, { gg = true })
add1('Log2Backward0', function(x) return x:log2() end, p)
add1('Log10Backward0', function(x) return x:log10() end, p)
add1('Log1PBackward0', function(x) return x:log1p() end, p)
-- u: inside (0.1, 0.9)
local function u(...) return (torch.rand(...):to(f64) * 0.8 + 0.1):requires_grad_() end
add1('LogitBackward0', function(x) return x:logit() end, u, { gg = true })
add1('LogitBackward0', function(x) return torch.logit(x, 0.25) end, u)
add1('SincBackward0', function(x) return x:sinc() end, r, { gg = true })
add('SincBackward0', function(x) return x:sinc() end, function() return { leaf({ 0, 0.5, -1.5 }) } end)
add1('Expm1Backward0', function(x) return x:expm1() end)
add1('SqrtBackward0', function(x) return x:sqrt() end, p, { gg = true })
add1('RsqrtBackward0', function(x) return x:rsqrt() end, p)
add1('SinBackward0', function(x) return x:sin() end, r, { gg = true })
add1('CosBackward0', function(x) return x:cos() end)
add1('TanBackward0', function(x) return x:tan() end, s)
add1('AsinBackward0', function(x) return x:asin() end, s)
add1('AcosBackward0', function(x) return x:acos() end, s)
add1('AtanBackward0', function(x) return x:atan() end)
add1('SinhBackward0', function(x) return x:sinh() end)
add1('CoshBackward0', function(x) return x:cosh() end)
add1('TanhBackward0', function(x) return x:tanh() end, r, { gg = true })
add1('SigmoidBackward0', function(x) return x:sigmoid() end, r, { gg = true })
add1('ReluBackward0', function(x) return x:relu() end)
add1('GeluBackward0', function(x) return torch.gelu(x) end)
add1('GeluBackward0', function(x) return torch.gelu(x, { approximate = 'tanh' }) end)
add1('SiluBackward0', function(x) return torch.silu(x) end)
add1('ErfBackward0', function(x) return x:erf() end)
add1('ErfcBackward0', function(x) return x:erfc() end)
add1('FloorBackward0', function(x) return x:floor() end)
add1('CeilBackward0', function(x) return x:ceil() end)
add1('RoundBackward0', function(x) return x:round() end)
add1('RoundBackward1', function(x) return torch.round(x, { decimals = 2 }) end)
add1('TruncBackward0', function(x) return x:trunc() end)
add1('FracBackward0', function(x) return x:frac() end)
add1('ReciprocalBackward0', function(x) return x:reciprocal() end, p)
add1('PowBackward0', function(x) return x:square() end, r, { gg = true })
add1('PowBackward0', function(x) return x ^ 2.5 end, p)
add1('SoftplusBackward0', function(x) return torch.softplus_unit(x) end)
add1('LgammaBackward0', function(x) return x:lgamma() end, p, { gg = true })
add1('DigammaBackward0', function(x) return x:digamma() end, p, { gg = true })
add1('PolygammaBackward0', function(x) return torch.polygamma(2, x) end, p, { gg = true })
add1('PolygammaBackward0', function(x) return x:polygamma(1) end, p)
add1('ClampBackward1', function(x) return x:clamp(-0.5, 0.5) end)
add1('PowBackward2', function(x) return torch.pow(2, x) end) -- torch.pow(2, x); Python's 2 ** x is PowBackward1
add1('LeakyReluBackward0', function(x) return torch.leaky_relu(x, 0.1) end)
add1('EluBackward0', function(x) return torch.elu(x, 1.5) end)
add1('HardtanhBackward0', function(x) return torch.hardtanh(x, -0.5, 0.5) end)
add1('ThresholdBackward0', function(x) return torch.threshold(x, 0.1, 20) end)
add1('NanToNumBackward0', function(x) return x:nan_to_num() end)

------------------------------------------------------------------------------ binary
add2('AddBackward0', function(a, b) return a + b end, r, r, { gg = true })
add2('AddBackward0', function(a, b) return torch.add(a, b, { alpha = 2.5 }) end)
add2('SubBackward0', function(a, b) return a - b end)
add2('MulBackward0', function(a, b) return a * b end, r, r, { gg = true })
add('MulBackward0', function(a, b) return torch.outer(a, b) end, function() return { r(3), r(4) } end, { gg = true })
add2('DivBackward0', function(a, b) return a / b end, r, p, { gg = true })
add1('DivBackward0', function(x) return torch.div(3, x) end, p) -- the core's number-first form
add1('MulBackward0', function(x) return 3 / x end, p) -- PyTorch's __rtruediv__: x.reciprocal() * 3
add2('DivBackward2', function(a, b) return torch.div(a, b, { rounding_mode = 'floor' }) end, r, p)
add2('PowBackward1', function(a, b) return a ^ b end, p, r, { gg = true })
add2('MaximumBackward0', function(a, b) return torch.maximum(a, b) end)
add2('MaximumBackward0', function(a, lo) return a:clamp(lo) end) -- clamp with tensor bounds: composed
add2('MinimumBackward0', function(a, b) return torch.minimum(a, b) end)
add2('MinimumBackward0', function(a, lo) return a:clamp(lo, lo + 1) end)
add2('FmodBackward1', function(a, b) return torch.fmod(a, b + 2) end, p, p)
add2('RemainderBackward1', function(a, b) return torch.remainder(a, b + 2) end, p, p)
add2('Atan2Backward0', function(a, b) return torch.atan2(a, b) end)
add2('HypotBackward0', function(a, b) return torch.hypot(a, b) end)
add2('FmaxBackward0', function(a, b) return torch.fmax(a, b) end)
add2('FminBackward0', function(a, b) return torch.fmin(a, b) end)
add2('XlogyBackward0', function(a, b) return torch.xlogy(a, b) end, r, p)
add2('CopysignBackward0', function(a, b) return torch.copysign(a, b) end)
add1('AddBackward0', function(x) return x + 2 end) -- PyTorch 1.13 from Python: (x + 2).grad_fn is AddBackward0
add1('SubBackward0', function(x) return x - 2 end)
add1('RsubBackward1', function(x) return 2 - x end)
add1('MulBackward0', function(x) return x * 2 end, r, { gg = true })
add1('DivBackward0', function(x) return x / 2 end)
add1('ClampMinBackward0', function(x) return torch.maximum(x, 0.1) end)
add1('ClampMaxBackward0', function(x) return torch.minimum(x, 0.1) end)
add1('ClampBackward1', function(x) return x:clamp({ min = 0.1 }) end) -- x.clamp(min=0.1); x.clamp_min(0.1) is ClampMinBackward0
add1('FmodBackward0', function(x) return torch.fmod(x, 2) end, p)
add1('RemainderBackward0', function(x) return torch.remainder(x, 2) end, p)
add1('XlogyBackward2', function(x) return torch.xlogy(x, 2.5) end)
add1('XlogyBackward1', function(x) return torch.xlogy(2.5, x) end, p)
add1('CopysignBackward1', function(x) return torch.copysign(x, -2) end)
add1('Atan2Backward0', function(x) return torch.atan2(x, 2) end)
add1('HypotBackward0', function(x) return torch.hypot(x, 2) end)
-- lerp by a tensor is composed of the ops above (addcmul/addcdiv are one node each now:
-- spec/grad_fn_names_spec.lua gradchecks them)
add('AddBackward0', function(a, b, w) return torch.lerp(a, b, w) end, function() return { r(3, 4), r(1, 4), r(3, 1) } end)

------------------------------------------------------------------------------ reductions
add1('SumBackward0', function(x) return x:sum() end, r, { gg = true })
add1('SumBackward1', function(x) return x:sum(2) end)
add1('SumBackward1', function(x) return x:sum(1, { keepdim = true }) end)
add1('MeanBackward0', function(x) return x:mean() end)
add1('MeanBackward1', function(x) return x:mean({ 1, 2 }) end)
add1('MeanBackward1', function(x) return x:mean(2) end)
add1('ProdBackward0', function(x) return x:prod() end, r, { gg = true })
add1('ProdBackward1', function(x) return x:prod(2) end, r, { gg = true })
-- zeros in the input: one zero, two zeros in a line, zeros in a multi-dim reduction
add('ProdBackward0', function(x) return x:prod() end, function() return { leaf({ { 1.5, 0, 2 }, { -1, 3, 0.5 } }) } end, { gg = true })
add('ProdBackward0', function(x) return x:prod() end, function() return { leaf({ 1.5, 0, 2, 0 }) } end, { gg = true })
add('ProdBackward1', function(x) return x:prod(2) end,
  function() return { leaf({ { 1.5, 0, 2 }, { 0, 3, 0 }, { 1, 2, 3 } }) } end, { gg = true })
add('ProdBackward1', function(x) return x:prod(1, { keepdim = true }) end,
  function() return { leaf({ { 1.5, 0, 2 }, { 0, 3, 0 }, { 1, 2, 3 } }):t() } end, { gg = true })
add1('AmaxBackward0', function(x) return x:amax(2) end)
add1('AminBackward0', function(x) return x:amin(1) end)
add1('VarBackward0', function(x) return x:var(2) end, r, { gg = true })
add1('StdBackward0', function(x) return x:std() end)
add1('NormBackward1', function(x) return x:norm() end, r, { gg = true })
add1('NormBackward1', function(x) return x:norm(1) end)
add1('NormBackward1', function(x) return x:norm(2, 2) end)
add1('NormBackward1', function(x) return x:norm(3, 1) end)
add1('LogsumexpBackward0', function(x) return x:logsumexp(2) end, r, { gg = true })
add1('NansumBackward0', function(x) return x:nansum() end)
add1('MaxBackward0', function(x) return (x:max(2)) end)
add1('MinBackward0', function(x) return (x:min(1)) end)
add1('CumsumBackward0', function(x) return x:cumsum(2) end, r, { gg = true })
add1('CumsumBackward0', function(x) return x:cumsum(1) end)
add1('CumprodBackward0', function(x) return x:cumprod(2) end, r, { gg = true })
add1('CumprodBackward0', function(x) return x:cumprod(1) end)
add('CumprodBackward0', function(x) return x:cumprod(2) end,
  function() return { leaf({ { 1.5, 0, 2, 3 }, { 0, 3, 0, 2 }, { 1, 2, 3, 0 } }) } end, { gg = true })
add('CumprodBackward0', function(x) return x:cumprod(1) end, function() return { leaf({ 0, 0, 2, 3 }) } end, { gg = true })
add1('VarMeanBackward0', function(x) return torch.var_mean(x, 2) end, r, { gg = true })
add1('VarMeanBackward0', function(x) return torch.var_mean(x) end)
add1('StdMeanBackward0', function(x) return torch.std_mean(x, 1, { keepdim = true }) end, r, { gg = true })
add1('SoftmaxBackward0', function(x) return torch.softmax(x, 2) end, r, { gg = true })
add1('LogSoftmaxBackward0', function(x) return torch.log_softmax(x, 1) end, r, { gg = true })

------------------------------------------------------------------------------ views and shapes
local function add3(name, f, opts) -- a (2, 3, 4) input, also permuted
  add(name, f, function() return { r(2, 3, 4) } end, opts)
  add(name, f, function() return { r(4, 3, 2):detach():permute(3, 2, 1):requires_grad_() } end, opts)
end
add3('ViewBackward0', function(t) return t:contiguous():view(6, 4) end)
add3('UnsafeViewBackward0', function(t) return t:transpose(1, 2):reshape(12, 2) end)
add3('ReshapeAliasBackward0', function(t) return t:contiguous():reshape(6, 4) end)
add3('ReshapeAliasBackward0', function(t) return t:contiguous():flatten(2) end)
add3('UnsqueezeBackward0', function(t) return t:unsqueeze(2) end)
add('SqueezeBackward0', function(t) return t:squeeze() end, function() return { r(2, 1, 4) } end)
add('SqueezeBackward1', function(t) return t:squeeze(2) end, function() return { r(2, 1, 4) } end)
add3('TransposeBackward0', function(t) return t:transpose(1, 3) end)
add('TransposeBackward0', function(t) return t:transpose(1, 2) end, function() return { r(3, 4) } end)
add3('PermuteBackward0', function(t) return t:permute(3, 1, 2) end)
add('ExpandBackward0', function(t) return t:expand(5, 3, 4) end, function() return { r(3, 1) } end)
add3('SelectBackward0', function(t) return t:select(3, -1) end)
add3('SelectBackward0', function(t) return t[2] end)
add3('SliceBackward0', function(t) return t:narrow(2, 2, 2) end)
add3('CloneBackward0', function(t) return t:clone() end)
add3('CloneBackward0', function(t) return t:transpose(1, 2):contiguous() end)
add3('CatBackward0', function(t) return torch.cat({ t, t * 2 }, 2) end)
add('CatBackward0', function(a, b) return torch.cat({ a, b }, 1) end, function() return { r(2, 3), rt(3, 3) } end)
add3('StackBackward0', function(t) return torch.stack({ t, t * 2 }, 2) end, { gg = true })
add('StackBackward0', function(a, b) return torch.stack({ a, b }) end, function() return { r(2, 3), rt(2, 3) } end)
add3('FlipBackward0', function(t) return t:flip(1, 3) end, { gg = true })
add3('RollBackward0', function(t) return t:roll(1, 2) end, { gg = true })
add3('RollBackward0', function(t) return t:roll({ 2, -1 }, { 1, 3 }) end)
add3('RollBackward0', function(t) return t:roll(5) end)
add3('RepeatBackward0', function(t) return t['repeat'](t, 2, 1, 2) end, { gg = true })
add('RepeatBackward0', function(t) return t['repeat'](t, 2, 3, 1) end, function() return { rt(2, 3) } end)
add3('IndexSelectBackward0', function(t) return t:index_select(3, long({ 4, 1, 1 })) end, { gg = true })
add3('IndexSelectBackward0', function(t) return t:repeat_interleave(2, 2) end)
add3('IndexSelectBackward0', function(t) return t:repeat_interleave(2) end)
add3('GatherBackward0', function(t)
  return t:gather(3, long({ { { 1 }, { 2 }, { 3 } }, { { 4 }, { 1 }, { 2 } } }))
end, { gg = true })
add3('MaskedFillBackward0', function(t) return t:masked_fill(t:gt(0), 0) end)
add('MaskedFillBackward0', function(t) return t:masked_fill(mask({ true, false, true, false }), 2) end,
  function() return { r(3, 1) } end)
add3('WhereBackward0', function(t) return torch.where(t:gt(0), t, t * 3) end)
add2('WhereBackward0', function(a, b) return torch.where(a:gt(b), a, b) end)
add('ToCopyBackward0', function(t) return t:to(torch.float32) end, function() return { r(3) } end,
  { check = function(x)
    local y = x:to(torch.float32)
    ;(y * 2):sum():backward()
    assert.are.equal(torch.float64, x.grad.dtype)
    H.near(x.grad, { 2, 2, 2 })
  end })
add3('AsStridedBackward0', function(t) return t:contiguous():as_strided({ 3, 3 }, { 2, 1 }, 1) end, { gg = true })
add('AsStridedBackward0', function(t) return t:as_strided({ 2, 2 }, { 1, 3 }) end, function() return { r(3, 3) } end)
add('AsStridedBackward0', function(t) return t[2]:as_strided({ 2 }, { 2 }) end, function() return { r(3, 4) } end)
add3('UnfoldBackward0', function(t) return t:unfold(3, 2, 1) end, { gg = true })
add3('UnfoldBackward0', function(t) return t:unfold(1, 1, 2) end)
add3('DiagonalBackward0', function(t) return t:diagonal() end, { gg = true })
add3('DiagonalBackward0', function(t) return t:diagonal(1, 2, 3) end)
add('DiagonalBackward0', function(t) return t:diagonal(-1) end, function() return { rt(3, 4) } end)
add('DiagBackward0', function(v) return torch.diag(v) end, function() return { r(3) } end, { gg = true })
add('DiagBackward0', function(v) return torch.diag(v, -1) end, function() return { r(3) } end)
add1('DiagBackward0', function(m) return torch.diag(m) end, r, { gg = true })
add1('DiagBackward0', function(m) return torch.diag(m, 1) end)
add1('TrilBackward0', function(m) return m:tril() end, r, { gg = true })
add1('TrilBackward0', function(m) return nl(m):tril_(-1) end)
add3('TriuBackward0', function(m) return m:triu(1) end)
add1('TriuBackward0', function(m) return nl(m):triu_() end)

------------------------------------------------------------------------------ writes and selections
local idx2 = long({ 3, 1 })
add('IndexAddBackward0', function(x, src) return x:index_add(1, idx2, src) end, function() return { r(3, 4), r(2, 4) } end)
add('IndexAddBackward0', function(x, src) return x:index_add(1, long({ 2, 2 }), src, 0.5) end,
  function() return { r(3, 4), rt(2, 4) } end, { gg = true })
add('IndexAddBackward0', function(x, src) return nl(x):index_add_(2, long({ 4, 1, 4 }), src) end,
  function() return { r(3, 4), r(3, 3) } end)
add('IndexCopyBackward0', function(x, src) return nl(x):index_copy_(1, idx2, src) end,
  function() return { r(3, 4), r(2, 4) } end, { gg = true })
add('IndexCopyBackward0', function(x, src) return nl(x):index_copy_(2, long({ 2 }), src) end,
  function() return { rt(3, 4), r(3, 1) } end)
add('IndexFillBackward0', function(x) return nl(x):index_fill_(2, long({ 1, 3 }), 2.5) end,
  function() return { r(3, 4) } end, { gg = true })
add('IndexFillBackward0', function(x) return x:index_fill(1, long({ 2 }), -1) end, function() return { rt(3, 4) } end)
local sidx = long({ { 2, 1, 3, 1 }, { 3, 2, 1, 2 } })
add('ScatterBackward0', function(x, src) return x:scatter(1, sidx, src) end,
  function() return { r(3, 4), r(2, 4) } end, { gg = true })
add('ScatterBackward0', function(x, src) return x:scatter(1, long({ { 2, 1, 3 } }), src) end,
  function() return { rt(3, 4), r(2, 4) } end) -- src larger than the index
add('ScatterBackward0', function(x, src) return nl(x):scatter_(1, sidx, src) end,
  function() return { r(3, 4), r(2, 4) } end)
add('ScatterBackward1', function(x) return x:scatter(2, long({ { 1 }, { 4 }, { 2 } }), 1.5) end,
  function() return { r(3, 4) } end, { gg = true })
add('ScatterAddBackward0', function(x, src) return x:scatter_add(1, sidx, src) end,
  function() return { r(3, 4), r(2, 4) } end, { gg = true })
add('ScatterAddBackward0', function(x, src) return nl(x):scatter_add_(2, long({ { 1, 1 }, { 4, 2 } }), src) end,
  function() return { rt(2, 4), r(2, 3) } end)
local m34 = mask({ { true, false, true, false }, { false, false, true, true }, { true, true, true, false } })
add('MaskedFillBackward1', function(x, v) return x:masked_fill(m34, v) end, function() return { r(3, 4), r() } end,
  { gg = true })
add('MaskedFillBackward1', function(x, v) return x:masked_fill(mask({ true, false, true, false }), v) end,
  function() return { r(3, 1), r() } end)
add('MaskedFillBackward1', function(x, v) return nl(x):masked_fill_(m34, v[1]) end,
  function() return { rt(3, 4), r(2) } end)
add('MaskedSelectBackward0', function(x) return x:masked_select(m34) end, function() return { r(3, 4) } end,
  { gg = true })
add('MaskedSelectBackward0', function(x) return x:masked_select(mask({ true, false, true, false })) end,
  function() return { rt(3, 1) } end)
add('MaskedScatterBackward0', function(x, src) return nl(x):masked_scatter_(m34, src) end,
  function() return { r(3, 4), r(3, 4) } end, { gg = true })
add('MaskedScatterBackward0', function(x, src) return nl(x):masked_scatter_(mask({ true, false, true, false }), src) end,
  function() return { rt(3, 4), r(7) } end)
add('IndexBackward0', function(x) return x[long({ 3, 1, 3 })] end, function() return { r(3, 4) } end, { gg = true })
add('IndexBackward0', function(x) return x[m34] end, function() return { rt(3, 4) } end)
add('IndexBackward0', function(x) return x[{ long({ 1, 2, 2 }), long({ 4, 4, 1 }) }] end,
  function() return { r(2, 4, 3) } end)
add('IndexPutBackward0', function(x, v) return nl(x):index_put_({ long({ 3, 1 }) }, v) end,
  function() return { r(3, 4), r(2, 4) } end, { gg = true })
add('IndexPutBackward0', function(x, v) return nl(x):index_put_({ long({ 3, 1, 3 }) }, v, { accumulate = true }) end,
  function() return { rt(3, 4), r(4) } end, { gg = true })
-- nll_loss: mean with weights and an ignored target, sum, none, a 1-D input; second derivatives too
local tgt = long({ 2, 4, 1 })
local nll_w = torch.tensor({ 0.5, 1.5, 2.0, 1.0 }, { dtype = f64 })
add('NllLossBackward0', function(x) return torch.nll_loss(x, tgt, nll_w, 1) end,
  function() return { r(3, 4) } end, { gg = true })
add('NllLossBackward0', function(x) return torch.nll_loss(torch.log_softmax(x, 2), tgt, nil, nil, 'sum') end,
  function() return { r(3, 4) } end, { gg = true })
add('NllLossBackward0', function(x) return torch.nll_loss(x, tgt, { reduction = 'none' }) end,
  function() return { rt(3, 4) } end, { gg = true })
add('NllLossBackward0', function(x) return torch.nll_loss(x, long(3)) end, function() return { r(4) } end, { gg = true })
-- embedding_bag: mean with padding, sum with per-sample weights, max (first derivatives only)
local bag_idx, bag_starts = long({ 1, 3, 4, 4, 2 }), long({ 1, 3, 3 })
add('EmbeddingBagBackward0', function(w)
  return torch.embedding_bag(bag_idx, w, bag_starts, { padding_idx = 4 })
end, function() return { r(4, 3) } end)
add('EmbeddingBagBackward0', function(w, ps)
  return torch.embedding_bag(bag_idx, w, bag_starts, { mode = 'sum', per_sample_weights = ps })
end, function() return { r(4, 3), r(5) } end)
add('EmbeddingBagBackward0', function(w)
  return torch.embedding_bag(bag_idx, w, bag_starts, { mode = 'max' })
end, function() return { r(4, 3) } end)
-- issue 24: the CSR product in both forms (torch.sparse.mm, a Linear's forward), with an empty
-- row and columns out of order in a row (first derivatives only)
local csr_crow, csr_col = long({ 1, 3, 3, 5 }), long({ 3, 1, 2, 4 })
local function csr(v) return torch.sparse_csr_tensor(csr_crow, csr_col, v, { 3, 4 }) end
add('SparseAddmmBackward0', function(v, d) return torch.sparse.mm(csr(v), d) end,
  function() return { r(4), r(4, 2) } end)
add('SparseAddmmBackward0', function(v, d) return torch.sparse.mm(csr(v), d) end,
  function() return { r(4), rt(4, 70) } end)
add('SparseAddmmBackward0', function(v, x) return torch.nn.functional.linear(x, csr(v)) end,
  function() return { r(4), r(5, 4) } end)
add('SparseAddmmBackward0', function(v, x) return torch.nn.functional.linear(x, csr(v)) end,
  function() return { r(4), rt(66, 4) } end)
-- ctc_loss (first derivatives only: PyTorch has no double backward for it either)
add('CtcLossBackward0', function(x)
  return torch.ctc_loss(x, long({ { 2, 3, 3 }, { 4, 1, 1 } }), { 5, 4 }, { 3, 1 }, { reduction = 'none' })
end, function() return { r(5, 2, 4) } end)
add('CtcLossBackward0', function(x)
  return torch.ctc_loss(x:log_softmax(3), long({ 2, 3, 2 }), { 4, 3 }, { 2, 1 }, { blank = 4, reduction = 'none' })
end, function() return { r(4, 2, 4) } end)
add('IndexPutBackward0', function(x, v) return nl(x):index_put_({ m34 }, v) end, function() return { r(3, 4), r() } end)
add('IndexPutBackward0', function(x, v)
  local y = nl(x)
  y[m34] = v
  return y
end, function() return { r(3, 4), r(1) } end)
add('SortBackward0', function(x) return (x:sort(2)) end, function() return { r(3, 4) } end, { gg = true })
add('SortBackward0', function(x) return (x:sort(1, true)) end, function() return { rt(3, 4) } end)
add('TopkBackward0', function(x) return (x:topk(2, 2)) end, function() return { r(3, 4) } end, { gg = true })
add('TopkBackward0', function(x) return (x:topk(2, 1, false)) end, function() return { rt(3, 4) } end)
add('CopyBackwards', function(x, src) return nl(x):copy_(src) end, function() return { r(3, 4), r(3, 4) } end,
  { gg = true })
add('CopyBackwards', function(x, src) return nl(x):copy_(src) end, function() return { r(3, 4), rt(1, 4) } end)
add('CopyBackwards', function(src)
  local buf = torch.zeros(3, 4, { dtype = f64 })
  return buf:copy_(src)
end, function() return { r(4) } end)
add('FillBackward2', function(x) return nl(x):fill_(2) end, function() return { r(3, 4) } end)
add('FillBackward2', function(x) return nl(x):zero_() end, function() return { rt(3, 4) } end)

------------------------------------------------------------------------------ linear algebra
add('DotBackward0', function(a, b) return torch.dot(a, b) end, function() return { r(4), r(4) } end, { gg = true })
add('MvBackward0', function(a, b) return torch.mv(a, b) end, function() return { r(3, 4), r(4) } end)
add('MvBackward0', function(a, b) return a:matmul(b) end, function() return { rt(3, 4), r(4) } end)
add('SqueezeBackward3', function(a, b) return a:matmul(b) end, function() return { r(4), r(4, 2) } end)
add('MmBackward0', function(a, b) return a:matmul(b) end, function() return { r(3, 4), r(4, 2) } end, { gg = true })
add('MmBackward0', function(a, b) return a:t():matmul(b:t()) end, function() return { r(4, 3), r(2, 4) } end)
add('BmmBackward0', function(a, b) return torch.bmm(a, b) end, function() return { r(2, 3, 4), r(2, 4, 2) } end)
add('UnsafeViewBackward0', function(a, b) return a:matmul(b) end, function() return { r(2, 3, 4), r(4, 2) } end)
add('UnsafeViewBackward0', function(a, b) return a:matmul(b) end, function() return { r(2, 1, 3, 4), r(3, 4, 2) } end)
add('AddmmBackward0', function(c, a, b) return torch.addmm(c, a, b, { beta = 0.5, alpha = 2 }) end,
  function() return { r(3), r(2, 4), r(4, 3) } end, { gg = true })
add('BaddbmmBackward0', function(c, a, b) return torch.baddbmm(c, a, b, { beta = 0.5, alpha = 2 }) end,
  function() return { r(2, 3, 2), r(2, 3, 4), r(2, 4, 2) } end, { gg = true })
add('BaddbmmBackward0', function(c, a, b) return torch.baddbmm(c, a, b) end,
  function() return { r(3, 1), r(2, 3, 4), r(2, 2, 4):detach():transpose(2, 3):requires_grad_() } end)

------------------------------------------------------------------------------ issue 12, pooling
-- (names recorded from PyTorch 1.13; 1-d pools are SqueezeBackward1 there and here)
do
  local PF = torch.nn.functional
  local function pool_case(name, f, shape, opts) add(name, f, function() return { r(unpack(shape)) } end, opts) end
  -- the backward of f at a fixed x, as a function of the incoming gradient g (recorded: create_graph)
  local function backward_case(name, f, shape)
    local x = r(unpack(shape))
    local gshape = f(x):size()
    add(name, function(g) return ag.grad({ f(x) }, { x }, { grad_outputs = { g }, create_graph = true })[1] end,
      function() return { r(unpack(gshape)) } end)
  end
  local pools = {
    { 'MaxPool2DWithIndices', function(x) return PF.max_pool2d(x, 2, 1, 1) end, { 1, 2, 3, 4 } },
    { 'MaxPool3DWithIndices', function(x) return PF.max_pool3d(x, 2, 1) end, { 1, 1, 2, 3, 3 } },
    { 'AdaptiveMaxPool2D', function(x) return PF.adaptive_max_pool2d(x, { 2, 3 }) end, { 1, 2, 3, 5 } },
    { 'AdaptiveMaxPool3D', function(x) return PF.adaptive_max_pool3d(x, 2) end, { 1, 1, 3, 3, 4 } },
    { 'AvgPool2D', function(x) return PF.avg_pool2d(x, 3, 2, 1, true, false) end, { 1, 2, 4, 5 } },
    { 'AvgPool3D', function(x) return PF.avg_pool3d(x, 2, 1, 1) end, { 1, 1, 2, 3, 2 } },
    { 'AdaptiveAvgPool2D', function(x) return PF.adaptive_avg_pool2d(x, { 2, 3 }) end, { 1, 2, 3, 5 } },
    { 'AdaptiveAvgPool3D', function(x) return PF.adaptive_avg_pool3d(x, 2) end, { 1, 1, 3, 3, 4 } },
  }
  for _, p in ipairs(pools) do pool_case(p[1] .. 'Backward0', p[2], p[3]) end
  local ups = {
    { 'UpsampleNearest1D', function(x) return PF.interpolate(x, { size = 5 }) end, { 1, 2, 3 } },
    { 'UpsampleNearest2D', function(x) return PF.interpolate(x, { scale_factor = 1.5 }) end, { 1, 2, 3, 2 } },
    { 'UpsampleNearest3D', function(x) return PF.interpolate(x, { scale_factor = 2 }) end, { 1, 1, 2, 2, 3 } },
    { 'UpsampleLinear1D', function(x) return PF.interpolate(x, { size = 5, mode = 'linear' }) end, { 1, 2, 3 } },
    { 'UpsampleBilinear2D', function(x)
      return PF.interpolate(x, { scale_factor = 1.5, mode = 'bilinear', align_corners = true })
    end, { 1, 2, 3, 2 } },
    { 'UpsampleBicubic2D', function(x) return PF.interpolate(x, { size = { 4, 3 }, mode = 'bicubic' }) end, { 1, 1, 3, 2 } },
    { 'UpsampleTrilinear3D', function(x) return PF.interpolate(x, { scale_factor = 2, mode = 'trilinear' }) end,
      { 1, 1, 2, 2, 3 } },
    -- parity: nearest-exact, antialiased bilinear / bicubic (down and up)
    { 'UpsampleNearestExact1D', function(x) return PF.interpolate(x, { size = 5, mode = 'nearest-exact' }) end, { 1, 2, 3 } },
    { 'UpsampleNearestExact2D', function(x) return PF.interpolate(x, { scale_factor = 0.6, mode = 'nearest-exact' }) end,
      { 1, 2, 5, 4 } },
    { 'UpsampleNearestExact3D', function(x) return PF.interpolate(x, { scale_factor = 1.5, mode = 'nearest-exact' }) end,
      { 1, 1, 2, 2, 3 } },
    { 'UpsampleBilinear2DAa', function(x)
      return PF.interpolate(x, { size = { 2, 5 }, mode = 'bilinear', antialias = true })
    end, { 1, 2, 5, 3 } },
    { 'UpsampleBicubic2DAa', function(x)
      return PF.interpolate(x, { scale_factor = 0.5, mode = 'bicubic', antialias = true })
    end, { 1, 1, 6, 5 } },
  }
  for _, u in ipairs(ups) do
    pool_case(u[1] .. 'Backward1', u[2], u[3], { gg = true })
    backward_case(u[1] .. 'BackwardBackward1', u[2], u[3])
  end
  for i = 5, 8 do backward_case(pools[i][1] .. 'BackwardBackward0', pools[i][2], pools[i][3]) end
  local function unpool_case(name, nsp, shape)
    local pool, unpool = PF['max_pool' .. nsp .. 'd'], PF['max_unpool' .. nsp .. 'd']
    local _, i = pool(torch.randn(shape, { dtype = f64 }), 2, { return_indices = true })
    add(name, function(v) return unpool(v, i, 2) end, function() return { r(i:size()) } end, { gg = true })
  end
  for _, mode in ipairs({ { 'reflect', 'ReflectionPad' }, { 'replicate', 'ReplicationPad' } }) do
    local pads = { { 2, 1 }, { 1, 2, 2, 0 }, { 1, 1, 0, 2, 1, 1 } }
    local shapes = { { 2, 3, 4 }, { 1, 2, 3, 4 }, { 1, 1, 2, 3, 3 } }
    for nsp = 1, 3 do
      local f = function(x) return PF.pad(x, pads[nsp], mode[1]) end
      pool_case(mode[2] .. nsp .. 'DBackward0', f, shapes[nsp], nsp == 2 and { gg = true } or nil)
      backward_case(mode[2] .. nsp .. 'DBackwardBackward0', f, shapes[nsp])
    end
  end
  unpool_case('MaxUnpool2DBackward0', 2, { 1, 2, 4, 4 })
  unpool_case('MaxUnpool3DBackward0', 3, { 1, 1, 2, 4, 4 })
end

------------------------------------------------------------------------------ convolution (issue 12, conv part)
local F_ = require('moontorch.nn').functional
add('ConvolutionBackward0', function(x, w, b) return F_.conv2d(x, w, b, 2, 1, 1, 2) end,
  function() return { r(2, 4, 5, 5), r(6, 2, 3, 3), r(6) } end, { gg = true })
add('ConvolutionBackward0', function(x, w, b) return F_.conv_transpose1d(x, w, b, 2, 1, 1) end,
  function() return { r(2, 3, 4), r(3, 2, 3), r(2) } end, { gg = true })
add('Im2ColBackward0', function(x) return F_.unfold(x, 2, 1, 1, 2) end, function() return { r(2, 3, 4, 5) } end,
  { gg = true })
add('Col2ImBackward0', function(x) return F_.fold(x, { 3, 4 }, 2) end, function() return { r(2, 8, 6) } end,
  { gg = true })

------------------------------------------------------------------------------ recurrent layers (issue 12, rnn part)
-- one time step's fused gates (hidden 3, batch 2), each output; the rows of a transposed or
-- sliced operand are strided
add('LstmCellPointwiseBackward0', function(ig, hg, cx, bi, bh) return (torch.lstm_cell_pointwise(ig, hg, cx, bi, bh)) end,
  function() return { r(2, 12), rt(2, 12), r(2, 3), r(12), r(12) } end, { gg = true })
add('LstmCellPointwiseBackward0', function(ig, hg, cx)
  local _, c = torch.lstm_cell_pointwise(ig, hg, cx)
  return c
end, function() return { r(2, 12), r(2, 12), rt(2, 3) } end, { gg = true })
add('GruCellPointwiseBackward0', function(ig, hg, hx, bi, bh) return torch.gru_cell_pointwise(ig, hg, hx, bi, bh) end,
  function() return { r(2, 9), r(2, 9), r(2, 3), r(9), r(9) } end, { gg = true })
add('GruCellPointwiseBackward0', function(ig, hg, hx) return torch.gru_cell_pointwise(ig, hg, hx) end,
  function() return { rt(2, 9), r(2, 9), r(2, 3) } end)
add('UnbindBackward0', function(a) return a:unbind(2)[2] end, function() return { r(3, 4) } end, { gg = true })
add('UnbindBackward0', function(a) return a:unbind(1)[1] end, function() return { rt(3, 4) } end)

------------------------------------------------------------------------------ issue 12, the modules part
-- the fused layer norm: with weight and bias, without, over two dims, a transposed input; second
-- derivatives through the recorded formula
add('NativeLayerNormBackward0', function(x, w, b) return torch.layer_norm(x, { 4 }, w, b) end,
  function() return { r(3, 4), r(4), r(4) } end, { gg = true })
add('NativeLayerNormBackward0', function(x) return torch.layer_norm(x, { 2, 3 }) end,
  function() return { r(2, 2, 3) } end, { gg = true })
add('NativeLayerNormBackward0', function(x, w) return torch.layer_norm(x, { 4 }, w, nil, 0.1) end,
  function() return { rt(3, 4), r(4) } end, { gg = true })

------------------------------------------------------------------------------ issue 12, the LSTM's speed
-- the whole recurrence (3 steps, batch 2, hidden 2): both outputs; in reverse with igates laid out
-- as a batch_first projection's transpose and a transposed c0 (rows with stride 2); the cell
-- states alone (no gradient for the hidden ones). Second derivatives too: the recorded backward.
add('LstmLayerBackward0', function(ig, h0, c0, w) return torch.lstm_layer(ig, h0, c0, w) end,
  function() return { r(3, 2, 8), r(2, 2), r(2, 2), r(8, 2) } end, { gg = true })
add('LstmLayerBackward0', function(ig, h0, c0, w) return torch.lstm_layer(ig, h0, c0, w, true) end,
  function() return { torch.randn(2, 3, 8):to(f64):transpose(1, 2):requires_grad_(), r(2, 2), rt(2, 2), r(8, 2) } end,
  { gg = true })
add('LstmLayerBackward0', function(ig, h0, c0, w)
  local _, cs = torch.lstm_layer(ig, h0, c0, w)
  return cs
end, function() return { r(3, 2, 8), r(2, 2), r(2, 2), r(8, 2) } end, { gg = true })

-- torch.distributions' samplers: a Gamma draw's gradient is the implicit (reparameterized) one, not the
-- derivative of the sampler's arithmetic at fixed random numbers, so it is checked against a central
-- difference of the Gamma cdf (spec/support/op_cases.lua); a Poisson count's gradient is zero
add('StandardGammaBackward0', nil, function() return { p(3, 4) } end,
  { check = function(alpha) return require('spec.support.gamma_grad')(torch, alpha) end })
add('PoissonBackward0', function(x)
  torch.manual_seed(0)
  return torch.poisson(x * 4)
end, function() return { p(3, 4) } end)

------------------------------------------------------------------------------ the walk
local EXEMPT = { AccumulateGrad = true, LuaFunctionBackward = true }

local function first_tensor(...)
  local out = ...
  if type(out) == 'table' and not torch.is_tensor(out) then out = out[1] end
  return out
end

describe('autograd op table', function()
  local names = {}
  for i = 0, C.mt_grad_op_count() - 1 do names[#names + 1] = ffi.string(C.mt_grad_op_list_name(i)) end

  it('lists every backward name once, and has a case for each', function()
    assert.is_true(#names > 100)
    local seen, missing = {}, {}
    for _, n in ipairs(names) do
      assert.is_nil(seen[n], 'listed twice: ' .. n)
      seen[n] = true
      if not EXEMPT[n] and not cases[n] then missing[#missing + 1] = n end
    end
    assert.are.same({}, missing)
    for n in pairs(cases) do assert.is_true(seen[n] or false, 'a case for a name the core never gives: ' .. n) end
  end)

  for _, name in ipairs(names) do
    if not EXEMPT[name] then
      it(name, function()
        assert.is_not_nil(cases[name], 'no gradcheck case for ' .. name)
        torch.manual_seed(0)
        for k, c in ipairs(cases[name]) do
          local inputs = c.mk()
          if c.check then
            c.check(unpack(inputs))
          else
            local out = first_tensor(c.f(unpack(inputs)))
            assert.is_not_nil(out.grad_fn, name .. ' case ' .. k .. ': no grad_fn')
            assert.are.equal(name, out.grad_fn:name(), 'case ' .. k)
            assert.is_true(ag.gradcheck(c.f, inputs), name .. ' case ' .. k)
            if c.gg then assert.is_true(ag.gradgradcheck(c.f, inputs), name .. ' case ' .. k .. ' (second order)') end
          end
        end
      end)
    end
  end
end)

describe('autograd of writes', function()
  it('refuses in-place writes into views of graph tensors, and into leaves', function()
    local x = r(3, 4)
    local y = x * 1
    H.errors_with(function() y[1]:copy_(torch.ones(4, { dtype = f64 })) end, 'view')
    H.errors_with(function() y:narrow(2, 1, 2):fill_(0) end, 'view')
    local buf = torch.zeros(3, 4, { dtype = f64 })
    H.errors_with(function() buf[2] = x[1] end, 'view')
    H.errors_with(function() x:copy_(y) end, 'leaf')
    H.errors_with(function() x:index_put_({ long({ 1 }) }, y[1]) end, 'leaf')
  end)

  it('copy_ into a plain tensor makes it part of the graph', function()
    local x = r(4)
    local buf = torch.zeros(3, 4, { dtype = f64 })
    buf:copy_(x)
    assert.is_true(buf.requires_grad)
    assert.are.equal('CopyBackwards', buf.grad_fn:name())
    buf:sum():backward()
    H.near(x.grad, { 3, 3, 3, 3 })
  end)

  it('gives the overwritten value a zero gradient', function()
    local x, s2 = r(3), r(3)
    local y = x * 2
    y:copy_(s2)
    ;(y * y):sum():backward()
    H.near(x.grad, { 0, 0, 0 })
    H.near(s2.grad, (s2 * 2):detach())
  end)

  it('scatter with reduce=multiply is refused as in PyTorch', function()
    local x = r(3)
    H.errors_with(function() return x:scatter(1, long({ 1 }), x, { reduce = 'multiply' }) end, 'not differentiable')
  end)

  it('prod and cumprod are exact with zeros', function()
    local x = leaf({ 2, 0, 3, 0 })
    x:prod():backward()
    H.near(x.grad, { 0, 0, 0, 0 })
    local z = leaf({ 2, 0, 3, 4 })
    z:prod():backward()
    H.near(z.grad, { 0, 24, 0, 0 })
    local c = leaf({ 2, 0, 3 })
    c:cumprod(1):sum():backward()
    H.near(c.grad, { 1, 2 + 6, 0 }) -- d/dx2 of (x1 + x1 x2 + x1 x2 x3) = x1 + x1 x3
  end)

  it('frees every node of these graphs', function()
    local T = require 'moontorch.tensor'
    if T.sweep then T.sweep() end
    collectgarbage()
    collectgarbage()
    local before = tonumber(C.mt_live_nodes())
    ;(function()
      local x = r(3, 4)
      local y = nl(x):index_put_({ long({ 1 }) }, x[2])
      y = torch.stack({ y:cumprod(2), y:flip(1) }):sort(3)
      local v, m = torch.var_mean(y, 2)
      ;(v:sum() + m:sum()):backward()
    end)()
    if T.sweep then T.sweep() end
    collectgarbage()
    collectgarbage()
    assert.are.equal(before, tonumber(C.mt_live_nodes()))
  end)
end)

describe('autograd: matrix-product gradients in their operand\'s layout', function()
  -- As PyTorch's mm_mat1_backward / mm_mat2_backward: the gradient of an operand that is a transposed
  -- view (a weight used as W:t()) comes out column-major, so that W.grad accumulates in order. PyTorch
  -- 1.13: torch.autograd.grad((x @ W.t()).sum(), Wt)[0].stride() == (1, 4) for W 3x4; (1, 5) for
  -- the mat1 A.t() of A 4x5; (4, 1) for a row-major mat1 of 5x4.
  it('mm, addmm and matmul: column-major operands get column-major gradients, with the right values', function()
    torch.manual_seed(0)
    local W = torch.randn(3, 4, { requires_grad = true })
    local Wt = W:t()
    local x = torch.randn(5, 4)
    local g = torch.autograd.grad(x:matmul(Wt):sum(), Wt)[1]
    assert.are.same({ 1, 4 }, g:stride())
    H.near(g, x:t():matmul(torch.ones(5, 3)), 1e-5, 1e-5)
    g = torch.autograd.grad(torch.addmm(torch.randn(3), x, Wt):sum(), Wt)[1]
    assert.are.same({ 1, 4 }, g:stride())
    H.near(g, x:t():matmul(torch.ones(5, 3)), 1e-5, 1e-5)
    local A = torch.randn(4, 5, { requires_grad = true })
    local At = A:t()
    local B = torch.randn(4, 3)
    g = torch.autograd.grad(At:mm(B):sum(), At)[1]
    assert.are.same({ 1, 5 }, g:stride())
    H.near(g, torch.ones(5, 3):matmul(B:t()), 1e-5, 1e-5)
    local xg = torch.randn(5, 4, { requires_grad = true })
    g = torch.autograd.grad(xg:matmul(torch.randn(3, 4):t()):sum(), xg)[1]
    assert.are.same({ 4, 1 }, g:stride())
    -- through to the leaf: W.grad has W's layout and the sum over the batch
    x:matmul(Wt):sum():backward()
    assert.are.same({ 4, 1 }, W.grad:stride())
    H.near(W.grad, torch.ones(3, 5):matmul(x), 1e-5, 1e-5)
  end)
end)
