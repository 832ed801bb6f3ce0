-- The docs of the ops of MT_OP_LIST (core/moontorch.h), each with doc.op: the PLAIN ops' signatures
-- (torch.f, Tensor:f, Tensor:f_), their dtype rule, autograd and other names come from the op list;
-- a CUSTOM op's signatures are written here (its binding is written by hand too). lua/doc/init.lua
-- says how an entry is written.
local doc = ...

doc.section 'Unary elementwise'
doc.op { 'neg', does = 'The negative of each element (also the unary minus: -x).',
  ex = 'print(torch.neg(torch.tensor({1, -2})))  --> tensor([-1., 2.])' }
doc.op { 'abs', does = 'The absolute value of each element.',
  ex = 'print(torch.tensor({-1.5, 2}):abs())  --> tensor([1.5000, 2.0000])' }
doc.op { 'sign', does = 'The sign of each element: -1, 0 or 1.', pt = 'torch.sign, Tensor.sign, Tensor.sign_',
  ex = 'print(torch.tensor({-3, 0, 2}):sign())  --> tensor([-1., 0., 1.])' }
doc.op { 'exp', does = 'e to the power of each element.',
  ex = 'print(torch.exp(torch.tensor({0, 1})))  --> tensor([1.0000, 2.7183])' }
doc.op { 'exp2', does = '2 to the power of each element.',
  ex = 'print(torch.exp2(torch.tensor({0, 3})))  --> tensor([1., 8.])' }
doc.op { 'log', does = 'The natural logarithm of each element (NaN below 0, -inf at 0).',
  ex = 'print(torch.log(torch.tensor({1, math.exp(2)})))  --> tensor([0., 2.])' }
doc.op { 'log2', does = 'The base-2 logarithm of each element.',
  ex = 'print(torch.log2(torch.tensor({1, 8})))  --> tensor([0., 3.])' }
doc.op { 'log10', does = 'The base-10 logarithm of each element.',
  ex = 'print(torch.log10(torch.tensor({1, 1000})))  --> tensor([0., 3.])' }
doc.op { 'log1p', does = 'log(1 + x) of each element, accurate for small x.',
  ex = 'print(torch.log1p(torch.tensor({0, 1e-10}, {dtype = torch.float64})))  --> tensor([0.0000e+00, 1.0000e-10], dtype=torch.float64)' }
doc.op { 'expm1', does = 'exp(x) - 1 of each element, accurate for small x.',
  ex = 'print(torch.expm1(torch.tensor({0})))  --> tensor([0.])' }
doc.op { 'sqrt', does = 'The square root of each element (NaN below 0).',
  ex = 'print(torch.sqrt(torch.tensor({4, 9})))  --> tensor([2., 3.])' }
doc.op { 'rsqrt', does = '1 / sqrt(x) of each element.',
  ex = 'print(torch.rsqrt(torch.tensor({4, 16})))  --> tensor([0.5000, 0.2500])' }
doc.op { 'sin', does = 'The sine of each element (radians).',
  ex = 'print(torch.sin(torch.tensor({0, math.pi / 2})))  --> tensor([0., 1.])' }
doc.op { 'cos', does = 'The cosine of each element (radians).',
  ex = 'print(torch.cos(torch.tensor({0})))  --> tensor([1.])' }
doc.op { 'tan', does = 'The tangent of each element (radians).',
  ex = 'print(torch.tan(torch.tensor({0})))  --> tensor([0.])' }
doc.op { 'asin', does = 'The arcsine of each element, in radians.',
  ex = 'print(torch.asin(torch.tensor({0, 1})))  --> tensor([0.0000, 1.5708])' }
doc.op { 'acos', does = 'The arccosine of each element, in radians.',
  ex = 'print(torch.acos(torch.tensor({1, 0})))  --> tensor([0.0000, 1.5708])' }
doc.op { 'atan', does = 'The arctangent of each element, in radians.',
  ex = 'print(torch.atan(torch.tensor({0, 1})))  --> tensor([0.0000, 0.7854])' }
doc.op { 'sinh', does = 'The hyperbolic sine of each element.',
  ex = 'print(torch.sinh(torch.tensor({0})))  --> tensor([0.])' }
doc.op { 'cosh', does = 'The hyperbolic cosine of each element.',
  ex = 'print(torch.cosh(torch.tensor({0})))  --> tensor([1.])' }
doc.op { 'tanh', does = 'The hyperbolic tangent of each element.',
  ex = 'print(torch.tanh(torch.tensor({0, 100})))  --> tensor([0., 1.])' }
doc.op { 'sigmoid', does = 'The logistic function 1 / (1 + exp(-x)) of each element.',
  ex = 'print(torch.sigmoid(torch.tensor({0})))  --> tensor([0.5000])' }
doc.op { 'logit', does = 'log(p / (1 - p)) of each element; with eps, p is first clamped to [eps, 1 - eps].',
  ex = 'print(torch.logit(torch.tensor({0.5, 0}), 1e-6))  --> tensor([0.0000, -13.8155])' }
doc.op { 'relu', 'torch.relu(input) -> Tensor', 'Tensor:relu() -> Tensor', 'Tensor:relu_() -> self',
  'torch.relu_(input) -> input',
  does = 'max(0, x) of each element (also F.relu and nn.ReLU).',
  ex = 'print(torch.tensor({-1, 2}):relu())  --> tensor([0., 2.])' }
doc.op { 'gelu', 'torch.gelu(input, {approximate=}) -> Tensor', 'Tensor:gelu({approximate=}) -> Tensor',
  pt = 'torch.nn.functional.gelu',
  does = 'The Gaussian error linear unit x * Phi(x); approximate = \'tanh\' uses the tanh formula (default \'none\').',
  ex = 'print(torch.gelu(torch.tensor({0, 1})))  --> tensor([0.0000, 0.8413])' }
doc.op { 'silu', pt = 'torch.nn.functional.silu', does = 'x * sigmoid(x) of each element (also called swish; F.silu, nn.SiLU).',
  ex = 'print(torch.silu(torch.tensor({0})))  --> tensor([0.])' }
doc.op { 'erf', does = 'The error function of each element.',
  ex = 'print(torch.erf(torch.tensor({0})))  --> tensor([0.])' }
doc.op { 'erfc', does = 'The complementary error function 1 - erf(x) of each element.',
  ex = 'print(torch.erfc(torch.tensor({0})))  --> tensor([1.])' }
doc.op { 'floor', does = 'The largest integer not above each element.',
  ex = 'print(torch.floor(torch.tensor({1.5, -1.5})))  --> tensor([ 1., -2.])' }
doc.op { 'ceil', does = 'The smallest integer not below each element.',
  ex = 'print(torch.ceil(torch.tensor({1.5, -1.5})))  --> tensor([ 2., -1.])' }
doc.op { 'round', 'torch.round(input, {decimals=}) -> Tensor', 'Tensor:round({decimals=}) -> Tensor',
  'Tensor:round_({decimals=}) -> self', 'torch.round_(input) -> input',
  does = 'Each element rounded to the nearest integer, halves to even (or to `decimals` decimal places).',
  ex = 'print(torch.round(torch.tensor({0.5, 1.5, 2.567}), {decimals = 0}))  --> tensor([0., 2., 3.])' }
doc.op { 'trunc', does = 'Each element rounded toward zero.',
  ex = 'print(torch.trunc(torch.tensor({1.7, -1.7})))  --> tensor([ 1., -1.])' }
doc.op { 'frac', does = 'The fractional part x - trunc(x) of each element.',
  ex = 'print(torch.frac(torch.tensor({1.25, -1.25})))  --> tensor([ 0.2500, -0.2500])' }
doc.op { 'reciprocal', does = '1 / x of each element.',
  ex = 'print(torch.reciprocal(torch.tensor({2, 4})))  --> tensor([0.5000, 0.2500])' }
doc.op { 'square', does = 'x * x of each element.',
  ex = 'print(torch.square(torch.tensor({-2, 3})))  --> tensor([4., 9.])' }
doc.op { 'sinc', does = 'The normalized sinc sin(pi x) / (pi x) of each element (1 at 0).',
  ex = 'print(torch.sinc(torch.tensor({0, 1})))  --> tensor([1.0000e+00, -2.7828e-08])' }
doc.op { 'logical_not', does = 'true where an element is zero (or false), false elsewhere.',
  ex = 'print(torch.logical_not(torch.tensor({0, 2})))  --> tensor([ True, False])' }
doc.op { 'bitwise_not', does = 'The bitwise NOT of each element (logical NOT for bool).',
  ex = 'print(torch.bitwise_not(torch.tensor({0, 5}, {dtype = torch.int32})))  --> tensor([-1, -6], dtype=torch.int32)' }
doc.op { 'isnan', does = 'true where an element is NaN.',
  ex = 'print(torch.isnan(torch.tensor({0 / 0, 1})))  --> tensor([ True, False])' }
doc.op { 'isinf', does = 'true where an element is +inf or -inf.',
  ex = 'print(torch.isinf(torch.tensor({math.huge, 1})))  --> tensor([ True, False])' }
doc.op { 'isfinite', does = 'true where an element is neither inf nor NaN.',
  ex = 'print(torch.isfinite(torch.tensor({math.huge, 1})))  --> tensor([False,  True])' }
doc.op { 'lgamma', does = 'The log of the absolute value of the gamma function of each element.',
  ex = 'print(torch.lgamma(torch.tensor({1, 3})))  --> tensor([0.0000, 0.6931])' }
doc.op { 'digamma', does = 'The digamma function (the derivative of lgamma) of each element.',
  ex = 'print(torch.digamma(torch.tensor({1})))  --> tensor([-0.5772])' }
doc.op { 'polygamma', 'torch.polygamma(n, input) -> Tensor', 'Tensor:polygamma(n) -> Tensor',
  'Tensor:polygamma_(n) -> self',
  does = 'The n-th derivative of the digamma function of each element (n = 0 is digamma). torch.polygamma takes n first, as PyTorch does.',
  ex = 'print(torch.polygamma(1, torch.tensor({1})))  --> tensor([1.6449])' }
doc.op { 'clamp', 'torch.clamp(input, min, max, {min=, max=, out=}) -> Tensor',
  'Tensor:clamp(min, max) -> Tensor', 'Tensor:clamp_(min, max) -> self', 'torch.clamp_(input, min, max) -> input',
  does = 'Each element limited to [min, max]; either bound may be nil (or a tensor, broadcast).',
  ex = 'print(torch.tensor({-2, 0.5, 3}):clamp(0, 1))  --> tensor([0.0000, 0.5000, 1.0000])\nprint(torch.clamp(torch.tensor({-2, 3}), {min = 0}))  --> tensor([0., 3.])' }
doc.op { 'nan_to_num', 'torch.nan_to_num(input, nan, posinf, neginf) -> Tensor', 'torch.nan_to_num(input, {nan=, posinf=, neginf=}) -> Tensor',
  'Tensor:nan_to_num(nan, posinf, neginf) -> Tensor',
  does = 'NaN replaced by `nan` (0 by default), +inf and -inf by `posinf` / `neginf` (the dtype\'s largest and smallest by default).',
  ex = 'print(torch.nan_to_num(torch.tensor({0 / 0, math.huge}), 0, 9))  --> tensor([0., 9.])' }

doc.section 'Binary elementwise'
doc.op { 'add', 'torch.add(input, other, {alpha=, out=}) -> Tensor', 'Tensor:add(other, {alpha=}) -> Tensor',
  'Tensor:add_(other, {alpha=}) -> self',
  does = 'input + alpha * other (also a + b).',
  ex = 'print(torch.add(torch.ones(2), torch.tensor({1, 2}), {alpha = 10}))  --> tensor([11., 21.])' }
doc.op { 'sub', 'torch.sub(input, other, {alpha=, out=}) -> Tensor', 'Tensor:sub(other, {alpha=}) -> Tensor',
  'Tensor:sub_(other, {alpha=}) -> self',
  does = 'input - alpha * other (also a - b).',
  ex = 'print(torch.tensor({5, 5}):sub(torch.tensor({1, 2}), {alpha = 2}))  --> tensor([3., 1.])' }
doc.op { 'mul', does = 'The elementwise product (also a * b; never a matrix product: see matmul).',
  ex = 'print(torch.mul(torch.tensor({1, 2}), 3))  --> tensor([3., 6.])' }
doc.op { 'div', 'torch.div(input, other, {rounding_mode=, out=}) -> Tensor',
  'Tensor:div(other, {rounding_mode=}) -> Tensor', 'Tensor:div_(other, {rounding_mode=}) -> self',
  does = 'input / other (also a / b): true division; rounding_mode = \'trunc\' or \'floor\' rounds the quotient (and keeps an integer dtype).',
  ex = 'print(torch.div(torch.tensor({7, -7}), 2, {rounding_mode = \'floor\'}))  --> tensor([ 3., -4.])' }
doc.op { 'floor_divide', does = 'input / other rounded down (Python\'s //).',
  ex = 'print(torch.floor_divide(torch.tensor({7, -7}), 2))  --> tensor([ 3., -4.])' }
doc.op { 'pow', 'torch.pow(input, exponent, {out=}) -> Tensor', 'Tensor:pow(exponent) -> Tensor',
  'Tensor:pow_(exponent) -> self',
  does = 'input raised to exponent, elementwise (also a ^ b); either may be a Lua number.',
  ex = 'print(torch.pow(torch.tensor({2, 3}), 2))  --> tensor([4., 9.])\nprint(torch.pow(2, torch.tensor({1, 3})))  --> tensor([2., 8.])' }
doc.op { 'maximum', pt = 'torch.maximum, Tensor.maximum', does = 'The larger of the two elements (NaN if either is NaN).',
  ex = 'print(torch.maximum(torch.tensor({1, 5}), torch.tensor({3, 2})))  --> tensor([3., 5.])' }
doc.op { 'minimum', pt = 'torch.minimum, Tensor.minimum', does = 'The smaller of the two elements (NaN if either is NaN).',
  ex = 'print(torch.minimum(torch.tensor({1, 5}), torch.tensor({3, 2})))  --> tensor([1., 2.])' }
doc.op { 'fmod', does = 'The remainder of input / other with the sign of input (C\'s fmod).',
  ex = 'print(torch.fmod(torch.tensor({-3, 3}), 2))  --> tensor([-1., 1.])' }
doc.op { 'remainder', does = 'The remainder of input / other with the sign of other (Python\'s %, also a % b).',
  ex = 'print(torch.remainder(torch.tensor({-3, 3}), 2))  --> tensor([1., 1.])' }
doc.op { 'atan2', does = 'The angle of the point (other, input): atan(input / other) in the right quadrant.',
  ex = 'print(torch.atan2(torch.tensor({1}), torch.tensor({-1})))  --> tensor([2.3562])' }
doc.op { 'eq', does = 'true where the elements are equal (Lua\'s == compares tensors as objects: use this).',
  ex = 'print(torch.tensor({1, 2}):eq(2))  --> tensor([False,  True])' }
doc.op { 'ne', does = 'true where the elements differ.',
  ex = 'print(torch.tensor({1, 2}):ne(2))  --> tensor([ True, False])' }
doc.op { 'lt', does = 'true where input < other (Lua\'s < cannot return a tensor: use this).',
  ex = 'print(torch.tensor({1, 2}):lt(2))  --> tensor([ True, False])' }
doc.op { 'le', does = 'true where input <= other.',
  ex = 'print(torch.tensor({1, 2}):le(2))  --> tensor([True, True])' }
doc.op { 'gt', does = 'true where input > other.',
  ex = 'print(torch.tensor({1, 2}):gt(1))  --> tensor([False,  True])' }
doc.op { 'ge', does = 'true where input >= other.',
  ex = 'print(torch.tensor({1, 2}):ge(2))  --> tensor([False,  True])' }
doc.op { 'logical_and', does = 'true where both elements are nonzero.',
  ex = 'print(torch.logical_and(torch.tensor({1, 0}), torch.tensor({1, 1})))  --> tensor([ True, False])' }
doc.op { 'logical_or', does = 'true where either element is nonzero.',
  ex = 'print(torch.logical_or(torch.tensor({1, 0}), torch.tensor({0, 0})))  --> tensor([ True, False])' }
doc.op { 'logical_xor', does = 'true where exactly one of the elements is nonzero.',
  ex = 'print(torch.logical_xor(torch.tensor({1, 1}), torch.tensor({1, 0})))  --> tensor([False,  True])' }
doc.op { 'bitwise_and', does = 'The bitwise AND of the elements (logical AND for bool).',
  ex = 'print(torch.bitwise_and(torch.tensor({12}, {dtype = torch.int64}), 10))  --> tensor([8])' }
doc.op { 'bitwise_or', does = 'The bitwise OR of the elements.',
  ex = 'print(torch.bitwise_or(torch.tensor({12}, {dtype = torch.int64}), 3))  --> tensor([15])' }
doc.op { 'bitwise_xor', does = 'The bitwise XOR of the elements.',
  ex = 'print(torch.bitwise_xor(torch.tensor({12}, {dtype = torch.int64}), 10))  --> tensor([6])' }
doc.op { 'hypot', does = 'sqrt(input^2 + other^2), elementwise.',
  ex = 'print(torch.hypot(torch.tensor({3}), torch.tensor({4})))  --> tensor([5.])' }
doc.op { 'fmax', pt = 'torch.fmax, Tensor.fmax', does = 'The larger of the two elements, ignoring a NaN on one side.',
  ex = 'print(torch.fmax(torch.tensor({0 / 0, 1}), torch.tensor({2, 0})))  --> tensor([2., 1.])' }
doc.op { 'fmin', pt = 'torch.fmin, Tensor.fmin', does = 'The smaller of the two elements, ignoring a NaN on one side.',
  ex = 'print(torch.fmin(torch.tensor({0 / 0, 1}), torch.tensor({2, 0})))  --> tensor([2., 0.])' }
doc.op { 'xlogy', does = 'input * log(other), 0 where input is 0.',
  ex = 'print(torch.xlogy(torch.tensor({0, 2}), torch.tensor({0, math.exp(1)})))  --> tensor([0.0000, 2.0000])' }
doc.op { 'copysign', does = 'The magnitude of input with the sign of other.',
  ex = 'print(torch.copysign(torch.tensor({1, 2}), -1))  --> tensor([-1., -2.])' }
doc.op { 'addcmul', 'torch.addcmul(input, tensor1, tensor2, {value=, out=}) -> Tensor',
  'Tensor:addcmul(tensor1, tensor2, {value=}) -> Tensor', 'Tensor:addcmul_(tensor1, tensor2, {value=}) -> self',
  does = 'input + value * tensor1 * tensor2 (value 1 by default).',
  ex = 'print(torch.addcmul(torch.ones(2), torch.tensor({1, 2}), torch.tensor({3, 4}), {value = 0.5}))  --> tensor([2.5000, 5.0000])' }
doc.op { 'addcdiv', 'torch.addcdiv(input, tensor1, tensor2, {value=, out=}) -> Tensor',
  'Tensor:addcdiv(tensor1, tensor2, {value=}) -> Tensor', 'Tensor:addcdiv_(tensor1, tensor2, {value=}) -> self',
  does = 'input + value * tensor1 / tensor2 (value 1 by default).',
  ex = 'print(torch.addcdiv(torch.zeros(2), torch.tensor({1, 2}), torch.tensor({4, 4})))  --> tensor([0.2500, 0.5000])' }
doc.op { 'lerp', 'torch.lerp(input, end_, weight) -> Tensor', 'Tensor:lerp(end_, weight) -> Tensor',
  does = 'Linear interpolation input + weight * (end_ - input); weight a number or a tensor.',
  ex = 'print(torch.lerp(torch.zeros(2), torch.tensor({10, 20}), 0.25))  --> tensor([2.5000, 5.0000])' }
doc.op { 'where', 'torch.where(condition, input, other) -> Tensor', 'torch.where(condition) -> {Tensor, ...}',
  'Tensor:where(condition, other) -> Tensor',
  does = 'input where condition is true, other elsewhere (broadcast; input and other may be Lua numbers). With the condition alone: nonzero(condition, {as_tuple=true}), 1-based.',
  ex = 'print(torch.where(torch.tensor({true, false}), 1, 2))  --> tensor([1, 2])\nprint(torch.where(torch.tensor({0, 5, 7}))[1])  --> tensor([2, 3])' }
doc.op { 'isclose', 'torch.isclose(input, other, rtol, atol, equal_nan) -> Tensor', 'torch.isclose(input, other, {rtol=, atol=, equal_nan=}) -> Tensor',
  'Tensor:isclose(other, rtol, atol, equal_nan) -> Tensor',
  does = 'true where |input - other| <= atol + rtol * |other| (rtol 1e-5, atol 1e-8 by default).',
  ex = 'print(torch.isclose(torch.tensor({1, 2}), torch.tensor({1 + 1e-9, 2.1})))  --> tensor([ True, False])' }
doc.op { 'allclose', 'torch.allclose(input, other, rtol, atol, equal_nan) -> boolean', 'torch.allclose(input, other, {rtol=, atol=, equal_nan=}) -> boolean',
  'Tensor:allclose(other, rtol, atol, equal_nan) -> boolean',
  does = 'Whether isclose holds everywhere: a Lua boolean.',
  ex = 'print(torch.allclose(torch.ones(2), torch.ones(2) + 1e-9))  --> true' }
doc.op { 'equal', 'torch.equal(input, other) -> boolean', 'Tensor:equal(other) -> boolean',
  does = 'Whether the two tensors have the same size and the same elements: a Lua boolean.',
  ex = 'print(torch.equal(torch.ones(2), torch.ones(2)), torch.equal(torch.ones(2), torch.ones(3)))  --> true false' }

doc.section 'Reductions'
local RED = ' Over every element, or along dim (a number or an array of dims, 1-based); keepdim keeps the reduced dims as size 1.'
doc.op { 'sum', 'torch.sum(input, dim, keepdim, {dim=, keepdim=, dtype=, out=}) -> Tensor',
  'Tensor:sum(dim, keepdim, {dim=, keepdim=, dtype=}) -> Tensor',
  does = 'The sum of the elements.' .. RED .. ' Integer and bool inputs sum to int64.',
  ex = 'local x = torch.tensor({{1, 2}, {3, 4}})\nprint(x:sum(), x:sum(1), x:sum(2, {keepdim = true}):size())  --> tensor(10.) tensor([4., 6.]) torch.Size([2, 1])' }
doc.op { 'mean', 'torch.mean(input, dim, keepdim, {dim=, keepdim=, dtype=, out=}) -> Tensor',
  'Tensor:mean(dim, keepdim, {dim=, keepdim=, dtype=}) -> Tensor',
  does = 'The mean of the elements.' .. RED,
  ex = 'print(torch.tensor({{1, 2}, {3, 4}}):mean(2))  --> tensor([1.5000, 3.5000])' }
doc.op { 'prod', 'torch.prod(input, dim, keepdim, {dim=, keepdim=, dtype=, out=}) -> Tensor',
  'Tensor:prod(dim, keepdim, {dim=, keepdim=, dtype=}) -> Tensor',
  does = 'The product of the elements.' .. RED,
  ex = 'print(torch.tensor({{1, 2}, {3, 4}}):prod(1))  --> tensor([3., 8.])' }
doc.op { 'amax', 'torch.amax(input, dim, keepdim, {dim=, keepdim=, out=}) -> Tensor',
  'Tensor:amax(dim, keepdim, {dim=, keepdim=}) -> Tensor',
  does = 'The largest element (no indices; its gradient spreads evenly over ties).' .. RED,
  ex = 'print(torch.tensor({{1, 5}, {3, 4}}):amax(1))  --> tensor([3., 5.])' }
doc.op { 'amin', 'torch.amin(input, dim, keepdim, {dim=, keepdim=, out=}) -> Tensor',
  'Tensor:amin(dim, keepdim, {dim=, keepdim=}) -> Tensor',
  does = 'The smallest element (no indices).' .. RED,
  ex = 'print(torch.tensor({{1, 5}, {3, 4}}):amin(2))  --> tensor([1., 3.])' }
doc.op { 'all', 'torch.all(input) -> boolean', 'torch.all(input, dim, keepdim, {dim=, keepdim=, out=}) -> Tensor',
  'Tensor:all(dim, keepdim) -> boolean or Tensor',
  does = 'Whether every element is nonzero: a Lua boolean over the whole tensor, a bool tensor along a dim.',
  ex = 'print(torch.all(torch.ones(3)), torch.tensor({{1, 0}, {1, 1}}):all(2))  --> true tensor([False,  True])' }
doc.op { 'any', 'torch.any(input) -> boolean', 'torch.any(input, dim, keepdim, {dim=, keepdim=, out=}) -> Tensor',
  'Tensor:any(dim, keepdim) -> boolean or Tensor',
  does = 'Whether some element is nonzero: a Lua boolean over the whole tensor, a bool tensor along a dim.',
  ex = 'print(torch.zeros(3):any(), torch.tensor({{1, 0}, {0, 0}}):any(2))  --> false tensor([ True, False])' }
doc.op { 'var', 'torch.var(input, dim, unbiased, keepdim, {dim=, unbiased=, correction=, keepdim=, out=}) -> Tensor',
  'Tensor:var(dim, unbiased, keepdim, {dim=, unbiased=, correction=, keepdim=}) -> Tensor',
  does = 'The variance, with Bessel\'s correction unless unbiased = false (correction = 0).' .. RED,
  ex = 'print(torch.tensor({1, 2, 3, 4}):var(), torch.tensor({1, 2, 3, 4}):var({unbiased = false}))  --> tensor(1.6667) tensor(1.2500)' }
doc.op { 'std', 'torch.std(input, dim, unbiased, keepdim, {dim=, unbiased=, correction=, keepdim=, out=}) -> Tensor',
  'Tensor:std(dim, unbiased, keepdim, {dim=, unbiased=, correction=, keepdim=}) -> Tensor',
  does = 'The standard deviation (the square root of var).' .. RED,
  ex = 'print(torch.tensor({2, 4, 4, 4, 5, 5, 7, 9}):std({correction = 0}))  --> tensor(2.)' }
doc.op { 'norm', 'torch.norm(input, p, dim, keepdim, {p=, dim=, keepdim=, dtype=, out=}) -> Tensor',
  'Tensor:norm(p, dim, keepdim, {p=, dim=, keepdim=, dtype=}) -> Tensor',
  does = 'The p-norm (2 by default; math.huge for the max norm, \'fro\' for Frobenius; \'nuc\' the nuclear norm of a 2-D input or over two dims, linalg.matrix_norm\'s).' .. RED,
  ex = 'print(torch.tensor({3, 4}):norm(), torch.tensor({3, -4}):norm(1))  --> tensor(5.) tensor(7.)' }
doc.op { 'logsumexp', 'torch.logsumexp(input, dim, keepdim, {dim=, keepdim=, out=}) -> Tensor',
  'Tensor:logsumexp(dim, keepdim) -> Tensor',
  does = 'log(sum(exp(x))) along dim, computed without overflow.',
  ex = 'print(torch.tensor({0, 0}):logsumexp(1))  --> tensor(0.6931)' }
doc.op { 'nansum', 'torch.nansum(input, dim, keepdim, {dim=, keepdim=, dtype=, out=}) -> Tensor',
  'Tensor:nansum(dim, keepdim) -> Tensor',
  does = 'The sum of the elements, NaNs counted as 0.' .. RED,
  ex = 'print(torch.tensor({1, 0 / 0, 2}):nansum())  --> tensor(3.)' }
doc.op { 'count_nonzero', 'torch.count_nonzero(input, dim) -> Tensor', 'Tensor:count_nonzero(dim) -> Tensor',
  does = 'How many elements are nonzero (an int64 tensor), over everything or along dim.',
  ex = 'print(torch.tensor({{0, 1}, {2, 3}}):count_nonzero(2))  --> tensor([1, 2])' }
doc.op { 'max', 'torch.max(input) -> Tensor', 'torch.max(input, dim, keepdim, {keepdim=, out=}) -> values, indices',
  'torch.max(input, other) -> Tensor', 'Tensor:max(dim, keepdim) -> values, indices',
  does = 'The largest element (a 0-dim tensor); along dim, two values: the maxima and their 1-based indices; with a tensor, maximum.',
  ex = 'local x = torch.tensor({{3, 1, 2}, {0, 5, 4}})\nlocal v, i = x:max(2)\nprint(x:max(), v, i)  --> tensor(5.) tensor([3., 5.]) tensor([1, 2])' }
doc.op { 'min', 'torch.min(input) -> Tensor', 'torch.min(input, dim, keepdim, {keepdim=, out=}) -> values, indices',
  'torch.min(input, other) -> Tensor', 'Tensor:min(dim, keepdim) -> values, indices',
  does = 'The smallest element; along dim, the minima and their 1-based indices; with a tensor, minimum.',
  ex = 'local v, i = torch.tensor({{3, 1, 2}, {0, 5, 4}}):min(2)\nprint(v, i)  --> tensor([1., 0.]) tensor([2, 1])' }
doc.op { 'argmax', 'torch.argmax(input, dim, keepdim, {dim=, keepdim=}) -> Tensor',
  'Tensor:argmax(dim, keepdim, {dim=, keepdim=}) -> Tensor',
  does = 'The 1-based index of the largest element: in the flattened tensor, or along dim.',
  ex = 'print(torch.tensor({3, 9, 2}):argmax(), torch.tensor({{1, 2}, {4, 3}}):argmax({dim = 2}))  --> tensor(2) tensor([2, 1])' }
doc.op { 'argmin', 'torch.argmin(input, dim, keepdim, {dim=, keepdim=}) -> Tensor',
  'Tensor:argmin(dim, keepdim, {dim=, keepdim=}) -> Tensor',
  does = 'The 1-based index of the smallest element: in the flattened tensor, or along dim.',
  ex = 'print(torch.tensor({3, 9, 2}):argmin())  --> tensor(3)' }
doc.op { 'var_mean', 'torch.var_mean(input, dim, unbiased, keepdim, {dim=, unbiased=, correction=, keepdim=}) -> var, mean',
  'Tensor:var_mean(dim, unbiased, keepdim) -> var, mean', pt = 'torch.var_mean',
  does = 'var and mean in one call (two values).',
  ex = 'local v, m = torch.var_mean(torch.tensor({1, 2, 3}))\nprint(v, m)  --> tensor(1.) tensor(2.)' }
doc.op { 'std_mean', 'torch.std_mean(input, dim, unbiased, keepdim, {dim=, unbiased=, correction=, keepdim=}) -> std, mean',
  'Tensor:std_mean(dim, unbiased, keepdim) -> std, mean', pt = 'torch.std_mean',
  does = 'std and mean in one call (two values).',
  ex = 'local s, m = torch.std_mean(torch.tensor({1, 2, 3}))\nprint(s, m)  --> tensor(1.) tensor(2.)' }
doc.op { 'cumsum', 'torch.cumsum(input, dim, {dtype=, out=}) -> Tensor', 'Tensor:cumsum(dim, {dtype=}) -> Tensor',
  'Tensor:cumsum_(dim) -> self',
  does = 'The running sums along dim.',
  ex = 'print(torch.tensor({1, 2, 3}):cumsum(1))  --> tensor([1., 3., 6.])' }
doc.op { 'cumprod', 'torch.cumprod(input, dim, {dtype=, out=}) -> Tensor', 'Tensor:cumprod(dim, {dtype=}) -> Tensor',
  'Tensor:cumprod_(dim) -> self',
  does = 'The running products along dim.',
  ex = 'print(torch.tensor({1, 2, 3}):cumprod(1))  --> tensor([1., 2., 6.])' }
doc.op { 'softmax', 'torch.softmax(input, dim, {dtype=}) -> Tensor', 'Tensor:softmax(dim, {dtype=}) -> Tensor',
  does = 'exp(x) / sum(exp(x)) along dim (1-based): the entries along dim become positive and sum to 1.',
  ex = 'print(torch.softmax(torch.tensor({{1, 1}, {0, math.log(3)}}), 2))  --> tensor([[0.5000, 0.5000], [0.2500, 0.7500]])' }
doc.op { 'log_softmax', 'torch.log_softmax(input, dim, {dtype=}) -> Tensor', 'Tensor:log_softmax(dim, {dtype=}) -> Tensor',
  does = 'log(softmax(x)) along dim, computed stably.',
  ex = 'print(torch.log_softmax(torch.tensor({0, 0}), 1))  --> tensor([-0.6931, -0.6931])' }

doc.section 'Copies and fills'
doc.op { 'copy_', 'Tensor:copy_(src) -> self',
  does = 'Copies src\'s elements into the tensor (broadcast, converted to its dtype); recorded by autograd.',
  ex = 'local t = torch.zeros(2, 2)\nt:copy_(torch.tensor({1, 2}))\nprint(t)  --> tensor([[1., 2.], [1., 2.]])' }
doc.op { 'to', 'Tensor:to(dtype) -> Tensor', 'Tensor:to(device[, dtype]) -> Tensor', 'Tensor:to(other) -> Tensor',
  'Tensor:to({dtype=, device=, copy=, memory_format=}) -> Tensor',
  does = 'The tensor in another dtype and/or on another device (another tensor\'s, given it); the tensor itself when nothing changes unless copy = true.',
  ex = 'print(torch.tensor({1.7}):to(torch.int64), torch.ones(1):to{dtype = torch.float64}.dtype)  --> tensor([1]) torch.float64' }
doc.op { 'clone', 'torch.clone(input, {memory_format=}) -> Tensor', 'Tensor:clone({memory_format=}) -> Tensor',
  does = 'A copy with its own storage, keeping the layout (memory_format = torch.contiguous_format: a contiguous copy); gradients flow back to the original.',
  ex = 'local a = torch.ones(2)\nlocal b = a:clone()\nb[1] = 5\nprint(a)  --> tensor([1., 1.])' }
doc.op { 'contiguous', 'Tensor:contiguous() -> Tensor',
  does = 'The tensor itself if its elements lie in row-major order, else a contiguous copy.',
  ex = 'local t = torch.ones(2, 3):t()\nprint(t:is_contiguous(), t:contiguous():is_contiguous())  --> false true' }
doc.op { 'fill_', 'Tensor:fill_(value) -> self', 'torch.fill_(input, value) -> input',
  does = 'Sets every element to value (a number or a 0-dim tensor).',
  ex = 'print(torch.empty(3):fill_(7))  --> tensor([7., 7., 7.])' }
doc.op { 'zero_', 'Tensor:zero_() -> self',
  does = 'Sets every element to 0.',
  ex = 'print(torch.ones(2):zero_())  --> tensor([0., 0.])' }

doc.section 'Views'
doc.op { 'view', 'torch.view(input, size...) -> Tensor', pt = 'Tensor.view', 'Tensor:view(size...) -> Tensor', 'Tensor:view(dtype) -> Tensor',
  does = 'The same elements under another shape, sharing the storage (one size may be -1: inferred). Fails when the strides do not allow it: see reshape. With a dtype: the same bytes read as that dtype.',
  ex = 'print(torch.arange(6):view(2, -1):size())  --> torch.Size([2, 3])' }
doc.op { 'reshape', 'torch.reshape(input, size...) -> Tensor', 'Tensor:reshape(size...) -> Tensor',
  does = 'The same elements under another shape: a view when the strides allow it, else a copy (one size may be -1).',
  ex = 'print(torch.arange(6):reshape({3, 2}))  --> tensor([[0, 1], [2, 3], [4, 5]])' }
doc.op { 'flatten', 'torch.flatten(input, start_dim, end_dim) -> Tensor', 'Tensor:flatten(start_dim, end_dim) -> Tensor',
  does = 'The dims start_dim..end_dim (1 and -1 by default: all) merged into one. Mind the 1-based dims: PyTorch\'s flatten(x, 1) is flatten(x, 2).',
  ex = 'print(torch.ones(2, 3, 4):flatten(2):size())  --> torch.Size([2, 12])' }
doc.op { 'as_strided', 'torch.as_strided(input, size, stride, storage_offset) -> Tensor',
  'Tensor:as_strided(size, stride, storage_offset) -> Tensor', 'Tensor:as_strided_(size, stride, storage_offset) -> self',
  does = 'A view of the storage with the given sizes and strides (arrays) from storage_offset (0-based, in elements; the tensor\'s own by default).',
  ex = 'print(torch.arange(4):as_strided({2, 2}, {1, 1}))  --> tensor([[0, 1], [1, 2]])' }
doc.op { 'transpose', 'torch.transpose(input, dim0, dim1) -> Tensor', 'Tensor:transpose(dim0, dim1) -> Tensor',
  'Tensor:transpose_(dim0, dim1) -> self',
  does = 'A view with the two dims swapped (transpose_: the tensor itself takes that shape).',
  ex = 'print(torch.ones(2, 3):transpose(1, 2):size())  --> torch.Size([3, 2])' }
doc.op { 'permute', 'torch.permute(input, dims...) -> Tensor', 'Tensor:permute(dims...) -> Tensor',
  does = 'A view with the dims reordered (1-based, as numbers or one array).',
  ex = 'print(torch.ones(2, 3, 4):permute(3, 1, 2):size())  --> torch.Size([4, 2, 3])' }
doc.op { 'narrow', 'torch.narrow(input, dim, start, length) -> Tensor', 'Tensor:narrow(dim, start, length) -> Tensor',
  does = 'A view of `length` entries along dim from `start` (1-based).',
  ex = 'print(torch.arange(1, 6):narrow(1, 2, 3))  --> tensor([2, 3, 4])' }
doc.op { 'select', 'torch.select(input, dim, index) -> Tensor', 'Tensor:select(dim, index) -> Tensor',
  does = 'A view of the entry `index` (1-based, negative from the end) along dim, without that dim.',
  ex = 'print(torch.tensor({{1, 2}, {3, 4}}):select(2, -1))  --> tensor([2., 4.])' }
doc.op { 'unsqueeze', 'torch.unsqueeze(input, dim) -> Tensor', 'Tensor:unsqueeze(dim) -> Tensor',
  'Tensor:unsqueeze_(dim) -> self',
  does = 'A view with a new dim of size 1 at position dim (1-based; -1: last).',
  ex = 'print(torch.ones(3):unsqueeze(1):size(), torch.ones(3):unsqueeze(-1):size())  --> torch.Size([1, 3]) torch.Size([3, 1])' }
doc.op { 'squeeze', 'torch.squeeze(input[, dim]) -> Tensor', 'Tensor:squeeze([dim]) -> Tensor',
  'Tensor:squeeze_([dim]) -> self',
  does = 'A view without the dims of size 1 (or without dim, if its size is 1).',
  ex = 'print(torch.ones(1, 3, 1):squeeze():size(), torch.ones(1, 3, 1):squeeze(1):size())  --> torch.Size([3]) torch.Size([3, 1])' }
doc.op { 'expand', 'Tensor:expand(size...) -> Tensor', 'torch.expand(input, size...) -> Tensor', pt = 'Tensor.expand',
  does = 'A view repeating dims of size 1 to the given sizes without copying (-1 keeps a size).',
  ex = 'print(torch.tensor({{1}, {2}}):expand(2, 3))  --> tensor([[1., 1., 1.], [2., 2., 2.]])' }
doc.op { 'unfold', 'Tensor:unfold(dimension, size, step) -> Tensor', 'torch.unfold(input, dimension, size, step) -> Tensor',
  pt = 'Tensor.unfold',
  does = 'A view of every window of `size` entries along dim, `step` apart, as a new last dim.',
  ex = 'print(torch.arange(1, 6):unfold(1, 2, 2))  --> tensor([[1, 2], [3, 4]])' }
doc.op { 'diagonal', 'torch.diagonal(input, offset, dim1, dim2) -> Tensor', 'Tensor:diagonal(offset, dim1, dim2) -> Tensor',
  does = 'A view of the diagonal of dims dim1 and dim2 (1 and 2 by default), `offset` above it (below when negative).',
  ex = 'print(torch.tensor({{1, 2}, {3, 4}}):diagonal(), torch.tensor({{1, 2}, {3, 4}}):diagonal(1))  --> tensor([1., 4.]) tensor([2.])' }
doc.op { 'unbind', 'torch.unbind(input, dim) -> {Tensor, ...}', 'Tensor:unbind(dim) -> {Tensor, ...}',
  does = 'The slices along dim (1 by default) as a Lua array of views.',
  ex = 'local rows = torch.tensor({{1, 2}, {3, 4}}):unbind()\nprint(#rows, rows[2])  --> 2 tensor([3., 4.])' }

doc.section 'Joining, indexing, rearranging'
doc.op { 'cat', 'torch.cat(tensors, dim, {dim=, out=}) -> Tensor',
  does = 'The tensors of a Lua array joined along dim (1 by default: PyTorch\'s 0).',
  ex = 'print(torch.cat({torch.ones(1, 2), torch.zeros(1, 2)}, 1):size(), torch.cat({torch.ones(1, 2), torch.zeros(1, 2)}, {dim = 2}):size())  --> torch.Size([2, 2]) torch.Size([1, 4])' }
doc.op { 'stack', 'torch.stack(tensors, dim, {dim=, out=}) -> Tensor',
  does = 'The tensors of a Lua array (one size) stacked along a new dim (1 by default).',
  ex = 'print(torch.stack({torch.ones(3), torch.zeros(3)}):size())  --> torch.Size([2, 3])' }
doc.op { 'index_select', 'torch.index_select(input, dim, index) -> Tensor', 'Tensor:index_select(dim, index) -> Tensor',
  does = 'The entries along dim at the 1-based positions in index (an int64 tensor).',
  ex = 'print(torch.tensor({10, 20, 30}):index_select(1, torch.tensor({3, 1}, {dtype = torch.int64})))  --> tensor([30., 10.])' }
doc.op { 'gather', 'torch.gather(input, dim, index) -> Tensor', 'Tensor:gather(dim, index) -> Tensor',
  does = 'out[i][j] = input[i][index[i][j]] for dim 2 (likewise for other dims); index holds 1-based positions.',
  ex = 'local t = torch.tensor({{1, 2}, {3, 4}})\nprint(t:gather(2, torch.tensor({{2}, {1}}, {dtype = torch.int64})))  --> tensor([[2.], [3.]])' }
doc.op { 'scatter', 'torch.scatter(input, dim, index, src, {reduce=}) -> Tensor',
  'Tensor:scatter(dim, index, src, {reduce=}) -> Tensor', 'Tensor:scatter_(dim, index, src, {reduce=}) -> self',
  does = 'A copy of input with src\'s values (or a number) written at the 1-based positions index gives along dim (gather\'s reverse); reduce = \'add\' or \'multiply\' combines instead.',
  ex = 'print(torch.zeros(3):scatter(1, torch.tensor({3, 1}, {dtype = torch.int64}), torch.tensor({5, 6})))  --> tensor([6., 0., 5.])' }
doc.op { 'scatter_add', 'torch.scatter_add(input, dim, index, src) -> Tensor',
  'Tensor:scatter_add(dim, index, src) -> Tensor', 'Tensor:scatter_add_(dim, index, src) -> self',
  does = 'As scatter, adding src\'s values into the positions (repeats add up).',
  ex = 'print(torch.zeros(2):scatter_add(1, torch.tensor({1, 1, 2}, {dtype = torch.int64}), torch.tensor({1, 2, 3})))  --> tensor([3., 3.])' }
doc.op { 'index_add', 'torch.index_add(input, dim, index, source, alpha, {alpha=}) -> Tensor',
  'Tensor:index_add(dim, index, source, alpha) -> Tensor', 'Tensor:index_add_(dim, index, source, alpha) -> self',
  does = 'Adds alpha * source\'s slices into the entries along dim at the 1-based positions in index.',
  ex = 'print(torch.zeros(3):index_add(1, torch.tensor({1, 3}, {dtype = torch.int64}), torch.tensor({5, 7})))  --> tensor([5., 0., 7.])' }
doc.op { 'index_copy', 'torch.index_copy(input, dim, index, source) -> Tensor',
  'Tensor:index_copy(dim, index, source) -> Tensor', 'Tensor:index_copy_(dim, index, source) -> self',
  does = 'Copies source\'s slices into the entries along dim at the 1-based positions in index.',
  ex = 'print(torch.zeros(3):index_copy(1, torch.tensor({2}, {dtype = torch.int64}), torch.tensor({9})))  --> tensor([0., 9., 0.])' }
doc.op { 'index_fill', 'torch.index_fill(input, dim, index, value) -> Tensor',
  'Tensor:index_fill(dim, index, value) -> Tensor', 'Tensor:index_fill_(dim, index, value) -> self',
  does = 'Sets the entries along dim at the 1-based positions in index to value.',
  ex = 'print(torch.zeros(3):index_fill(1, torch.tensor({1, 3}, {dtype = torch.int64}), 4))  --> tensor([4., 0., 4.])' }
doc.op { 'masked_fill', 'torch.masked_fill(input, mask, value) -> Tensor', 'Tensor:masked_fill(mask, value) -> Tensor',
  'Tensor:masked_fill_(mask, value) -> self',
  does = 'value where the bool mask (broadcast) is true, input elsewhere.',
  ex = 'print(torch.ones(3):masked_fill(torch.tensor({true, false, true}), 0))  --> tensor([0., 1., 0.])' }
doc.op { 'masked_select', 'torch.masked_select(input, mask) -> Tensor', 'Tensor:masked_select(mask) -> Tensor',
  does = 'The elements where the bool mask (broadcast) is true, as a 1-D tensor (also t[mask]).',
  ex = 'local t = torch.tensor({1, 2, 3})\nprint(t:masked_select(t:gt(1)))  --> tensor([2., 3.])' }
doc.op { 'masked_scatter', 'torch.masked_scatter(input, mask, source) -> Tensor',
  'Tensor:masked_scatter(mask, source) -> Tensor', 'Tensor:masked_scatter_(mask, source) -> self',
  does = 'source\'s elements, in order, written where the mask is true.',
  ex = 'print(torch.zeros(3):masked_scatter(torch.tensor({true, false, true}), torch.tensor({7, 8})))  --> tensor([7., 0., 8.])' }
doc.op { 'index_put', 'torch.index_put(input, indices, values, accumulate) -> Tensor',
  'Tensor:index_put(indices, values, accumulate) -> Tensor', 'Tensor:index_put_(indices, values, accumulate) -> self',
  'torch.index_put_(input, indices, values, accumulate) -> input',
  does = 'Writes values at the positions an array of index tensors gives (1-based; bool masks too), as t[indices] = values; accumulate = true adds.',
  ex = 'local t = torch.zeros(3)\nt:index_put_({torch.tensor({1, 1}, {dtype = torch.int64})}, torch.tensor({2, 3}), true)\nprint(t)  --> tensor([5., 0., 0.])' }
doc.op { 'nonzero', 'torch.nonzero(input, {as_tuple=}) -> Tensor', 'Tensor:nonzero({as_tuple=}) -> Tensor',
  does = 'The 1-based positions of the nonzero elements, one row each (as_tuple = true: a Lua array of one index tensor per dim).',
  ex = 'print(torch.tensor({0, 3, 0, 4}):nonzero())  --> tensor([[2], [4]])' }
doc.op { 'repeat', 'Tensor:repeat(sizes...) -> Tensor', 'Tensor:repeat_tensor(sizes...) -> Tensor',
  does = 'The tensor tiled sizes[i] times along each dim (a copy). `repeat` is a Lua keyword: call t[\'repeat\'](t, 2, 3) or t:repeat_tensor(2, 3).',
  pt = 'Tensor.repeat',
  ex = 'local t = torch.tensor({1, 2})\nprint(t:repeat_tensor(2), t[\'repeat\'](t, 2, 1):size())  --> tensor([1., 2., 1., 2.]) torch.Size([2, 2])' }
doc.op { 'repeat_interleave', 'torch.repeat_interleave(input, repeats, dim) -> Tensor',
  'Tensor:repeat_interleave(repeats, dim) -> Tensor',
  does = 'Each element (or slice along dim) repeated `repeats` times in place (repeats a number or a tensor); without dim, over the flattened tensor.',
  ex = 'print(torch.tensor({1, 2}):repeat_interleave(2))  --> tensor([1., 1., 2., 2.])' }
doc.op { 'flip', 'torch.flip(input, dims) -> Tensor', 'Tensor:flip(dims...) -> Tensor',
  does = 'A copy with the order of the entries reversed along the given dims.',
  ex = 'print(torch.tensor({1, 2, 3}):flip(1))  --> tensor([3., 2., 1.])' }
doc.op { 'roll', 'torch.roll(input, shifts, dims) -> Tensor', 'Tensor:roll(shifts, dims) -> Tensor',
  does = 'The entries shifted cyclically by `shifts` along dims (a number or arrays); without dims, over the flattened tensor.',
  ex = 'print(torch.tensor({1, 2, 3}):roll(1))  --> tensor([3., 1., 2.])' }
doc.op { 'triu', 'torch.triu(input, diagonal) -> Tensor', 'Tensor:triu(diagonal) -> Tensor', 'Tensor:triu_(diagonal) -> self',
  does = 'The upper triangle of the last two dims (from `diagonal`, 0 by default), zeros below.',
  ex = 'print(torch.ones(2, 2):triu())  --> tensor([[1., 1.], [0., 1.]])' }
doc.op { 'tril', 'torch.tril(input, diagonal) -> Tensor', 'Tensor:tril(diagonal) -> Tensor', 'Tensor:tril_(diagonal) -> self',
  does = 'The lower triangle of the last two dims (up to `diagonal`, 0 by default), zeros above.',
  ex = 'print(torch.ones(2, 2):tril())  --> tensor([[1., 0.], [1., 1.]])' }
doc.op { 'diag', 'torch.diag(input, diagonal) -> Tensor', 'Tensor:diag(diagonal) -> Tensor',
  does = 'From a 1-D tensor, a square matrix with it on the diagonal; from a 2-D one, its diagonal (`diagonal` above the main one, below when negative).',
  ex = 'print(torch.diag(torch.tensor({1, 2})), torch.diag(torch.tensor({{1, 2}, {3, 4}})))  --> tensor([[1., 0.], [0., 2.]]) tensor([1., 4.])' }
doc.op { 'one_hot', 'torch.one_hot(input, num_classes) -> Tensor',
  does = 'For class ids counted from 1 (an int64 tensor), rows of num_classes with a 1 at the id (an int64 tensor; also F.one_hot).',
  pt = 'torch.nn.functional.one_hot',
  ex = 'print(torch.one_hot(torch.tensor({1, 3}, {dtype = torch.int64}), 3))  --> tensor([[1, 0, 0], [0, 0, 1]])' }
doc.op { 'sort', 'torch.sort(input, dim, {descending=, stable=}) -> values, indices',
  'torch.sort(input, {dim=, descending=, stable=}) -> values, indices', 'torch.sort(input, dim, descending) -> values, indices',
  'Tensor:sort(dim, {descending=, stable=}) -> values, indices',
  does = 'The entries sorted along dim (the last by default), and their 1-based positions before.',
  ex = 'local v, i = torch.tensor({3, 1, 2}):sort({descending = true})\nprint(v, i)  --> tensor([3., 2., 1.]) tensor([1, 3, 2])' }
doc.op { 'topk', 'torch.topk(input, k, dim, largest, sorted) -> values, indices',
  'torch.topk(input, k, {dim=, largest=, sorted=}) -> values, indices', 'Tensor:topk(k, dim, largest, sorted) -> values, indices',
  does = 'The k largest entries along dim (the last by default; the smallest with largest = false) and their 1-based positions.',
  ex = 'local v, i = torch.tensor({3, 1, 2}):topk(2)\nprint(v, i)  --> tensor([3., 2.]) tensor([1, 3])' }
doc.op { 'unique', 'torch.unique(input, {sorted=, return_inverse=, return_counts=, dim=}) -> values[, inverse][, counts]',
  'Tensor:unique({sorted=, return_inverse=, return_counts=, dim=}) -> values[, inverse][, counts]',
  does = 'The distinct elements, sorted; with return_inverse, each element\'s 1-based position among them; with return_counts, how often each occurs.',
  ex = 'local v, inv, c = torch.tensor({2, 1, 2}):unique({return_inverse = true, return_counts = true})\nprint(v, inv, c)  --> tensor([1., 2.]) tensor([2, 1, 2]) tensor([1, 2])' }
doc.op { 'searchsorted', 'torch.searchsorted(sorted_sequence, values, {right=, side=, out_int32=}) -> Tensor',
  'Tensor:searchsorted(values, {right=, side=, out_int32=}) -> Tensor', pt = 'torch.searchsorted',
  does = 'For each value, the 1-based position where it would go in the sorted sequence to keep it sorted (the first such, or the last with right = true).',
  ex = 'print(torch.searchsorted(torch.tensor({1, 3, 5}), torch.tensor({3, 6})))  --> tensor([2, 4])' }
doc.op { 'bincount', 'torch.bincount(input, weights, minlength) -> Tensor', 'torch.bincount(input, {weights=, minlength=}) -> Tensor',
  'Tensor:bincount(weights, minlength) -> Tensor',
  does = 'How often each value 0, 1, 2, ... occurs in a 1-D int64 tensor (summed weights if given).',
  ex = 'print(torch.bincount(torch.tensor({0, 2, 2}, {dtype = torch.int64})))  --> tensor([1, 0, 2])' }

doc.section 'Factories'
doc.op { 'empty', 'torch.empty(size..., {dtype=, device=, requires_grad=, memory_format=}) -> Tensor',
  does = 'A tensor of the given size whose elements are not set (whatever the memory held).',
  ex = 'print(torch.empty(2, 3):size())  --> torch.Size([2, 3])' }
doc.op { 'full', 'torch.full(size, fill_value, {dtype=, device=, requires_grad=}) -> Tensor',
  does = 'A tensor of the given size (an array) filled with fill_value; the dtype follows the value (int64 for an integer, bool for a boolean) unless given.',
  ex = 'print(torch.full({2}, 7), torch.full({2}, 0.5))  --> tensor([7, 7]) tensor([0.5000, 0.5000])' }
doc.op { 'arange', 'torch.arange(end_, {dtype=, device=, requires_grad=}) -> Tensor',
  'torch.arange(start, end_, step, {dtype=, device=, requires_grad=}) -> Tensor',
  does = 'The values start, start + step, ... below end_ (start 0, step 1 by default; as PyTorch, it counts from 0: these are values, not positions); int64 when every argument is an integer.',
  ex = 'print(torch.arange(4), torch.arange(1, 2, 0.5))  --> tensor([0, 1, 2, 3]) tensor([1.0000, 1.5000])' }
doc.op { 'linspace', 'torch.linspace(start, end_, steps, {dtype=, device=, requires_grad=}) -> Tensor',
  does = '`steps` values evenly spaced from start to end_, both included.',
  ex = 'print(torch.linspace(0, 1, 5))  --> tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])' }
doc.op { 'logspace', 'torch.logspace(start, end_, steps, base, {base=, dtype=, device=, requires_grad=}) -> Tensor',
  does = 'base^v for `steps` values v evenly spaced from start to end_ (base 10).',
  ex = 'print(torch.logspace(0, 2, 3))  --> tensor([  1.,  10., 100.])' }
doc.op { 'eye', 'torch.eye(n, m, {dtype=, device=, requires_grad=}) -> Tensor',
  does = 'An n x m (n x n) matrix with ones on the diagonal.',
  ex = 'print(torch.eye(2))  --> tensor([[1., 0.], [0., 1.]])' }

doc.section 'Matrix products'
doc.op { 'mm', 'torch.mm(input, mat2, {out=}) -> Tensor', 'Tensor:mm(mat2) -> Tensor',
  does = 'The matrix product of two 2-D tensors (no broadcasting: see matmul).',
  ex = 'print(torch.mm(torch.ones(2, 3), torch.ones(3, 4)):size())  --> torch.Size([2, 4])' }
doc.op { 'bmm', 'torch.bmm(input, mat2, {out=}) -> Tensor', 'Tensor:bmm(mat2) -> Tensor',
  does = 'Matrix products of two batches of matrices (b x n x m and b x m x p).',
  ex = 'print(torch.bmm(torch.ones(5, 2, 3), torch.ones(5, 3, 4)):size())  --> torch.Size([5, 2, 4])' }
doc.op { 'matmul', 'torch.matmul(input, other, {out=}) -> Tensor', 'Tensor:matmul(other) -> Tensor',
  does = 'The matrix product of two tensors (Python\'s a @ b), by their ranks: 1-D and 1-D a dot product, 2-D and 2-D mm, 2-D and 1-D mv, and for higher ranks a batched product that broadcasts the batch dims (a 1-D side is taken as a row or a column and its dim dropped after).',
  ex = 'local a, b = torch.ones(2, 3), torch.ones(3, 4)\nprint(torch.matmul(a, b):size(), a:matmul(torch.ones(3)):size(), torch.ones(5, 2, 3):matmul(b):size())  --> torch.Size([2, 4]) torch.Size([2]) torch.Size([5, 2, 4])' }
doc.op { 'mv', 'torch.mv(input, vec, {out=}) -> Tensor', 'Tensor:mv(vec) -> Tensor',
  does = 'The product of a matrix and a vector.',
  ex = 'print(torch.mv(torch.ones(2, 3), torch.tensor({1, 2, 3})))  --> tensor([6., 6.])' }
doc.op { 'dot', 'torch.dot(input, other) -> Tensor', 'Tensor:dot(other) -> Tensor',
  does = 'The dot product of two 1-D tensors (a 0-dim tensor).',
  ex = 'print(torch.dot(torch.tensor({1, 2}), torch.tensor({3, 4})))  --> tensor(11.)' }
doc.op { 'outer', 'torch.outer(input, vec2) -> Tensor', 'Tensor:outer(vec2) -> Tensor',
  does = 'The outer product of two 1-D tensors: out[i][j] = input[i] * vec2[j].',
  ex = 'print(torch.outer(torch.tensor({1, 2}), torch.tensor({3, 4})))  --> tensor([[3., 4.], [6., 8.]])' }
doc.op { 'addmm', 'torch.addmm(input, mat1, mat2, {beta=, alpha=, out=}) -> Tensor',
  'Tensor:addmm(mat1, mat2, {beta=, alpha=}) -> Tensor', 'Tensor:addmm_(mat1, mat2, {beta=, alpha=}) -> self',
  does = 'beta * input + alpha * (mat1 @ mat2) (beta and alpha 1 by default; input broadcast).',
  ex = 'print(torch.addmm(torch.ones(2), torch.ones(2, 3), torch.ones(3, 2), {beta = 0.5}))  --> tensor([[3.5000, 3.5000], [3.5000, 3.5000]])' }
doc.op { 'baddbmm', 'torch.baddbmm(input, batch1, batch2, {beta=, alpha=, out=}) -> Tensor',
  'Tensor:baddbmm(batch1, batch2, {beta=, alpha=}) -> Tensor', 'Tensor:baddbmm_(batch1, batch2, {beta=, alpha=}) -> self',
  does = 'beta * input + alpha * bmm(batch1, batch2).',
  ex = 'print(torch.baddbmm(torch.zeros(1, 2, 2), torch.ones(1, 2, 3), torch.ones(1, 3, 2)):sum())  --> tensor(12.)' }

doc.section 'Random numbers'
local GEN = ' The stream is PyTorch\'s CPU generator\'s after the same seed; {generator=} draws from another generator.'
doc.op { 'uniform_', 'Tensor:uniform_(from, to, {generator=}) -> self',
  does = 'Fills the tensor with numbers drawn uniformly from [from, to) (0 and 1 by default).' .. GEN,
  ex = 'torch.manual_seed(0)\nprint(torch.empty(2):uniform_(-1, 1))  --> tensor([-0.0075,  0.5364])' }
doc.op { 'normal_', 'Tensor:normal_(mean, std, {generator=}) -> self',
  does = 'Fills the tensor with numbers drawn from a normal distribution (mean 0, std 1 by default).' .. GEN,
  ex = 'torch.manual_seed(0)\nprint(torch.empty(2):normal_(10, 0.1))  --> tensor([10.1541,  9.9707])' }
doc.op { 'random_', 'Tensor:random_(from, to, {generator=}) -> self',
  does = 'Fills the tensor with integers drawn uniformly from [from, to) (random_(to): [0, to); random_(): the dtype\'s range).' .. GEN,
  ex = 'torch.manual_seed(0)\nprint(torch.empty(3, {dtype = torch.int64}):random_(1, 7):size())  --> torch.Size([3])' }
doc.op { 'bernoulli_', 'Tensor:bernoulli_(p, {generator=}) -> self',
  does = 'Fills the tensor with 1 with probability p (a number or a tensor), else 0.' .. GEN,
  ex = 'print(torch.empty(3):bernoulli_(1))  --> tensor([1., 1., 1.])' }
doc.op { 'bernoulli', 'torch.bernoulli(input, p, {generator=}) -> Tensor', 'Tensor:bernoulli(p, {generator=}) -> Tensor',
  does = '1 with probability input (each element a probability) or p, else 0.' .. GEN,
  ex = 'print(torch.bernoulli(torch.tensor({0, 1})))  --> tensor([0., 1.])' }
doc.op { 'exponential_', 'Tensor:exponential_(lambd, {generator=}) -> self',
  does = 'Fills the tensor with numbers drawn from the exponential distribution of rate lambd (1).' .. GEN,
  ex = 'print(torch.empty(4):exponential_():ge(0):all())  --> true' }
doc.op { 'randperm', 'torch.randperm(n, {dtype=, device=, generator=, requires_grad=}) -> Tensor',
  does = 'A random permutation of 1..n (int64): positions, so counted from 1.' .. GEN,
  ex = 'print((torch.randperm(4):sort()))  --> tensor([1, 2, 3, 4])' }
doc.op { 'multinomial', 'torch.multinomial(input, num_samples, replacement, {replacement=, generator=}) -> Tensor',
  'Tensor:multinomial(num_samples, replacement) -> Tensor',
  does = 'num_samples 1-based category indices per row, drawn with the row\'s (unnormalized) weights, without replacement unless asked.' .. GEN,
  ex = 'print(torch.multinomial(torch.tensor({0, 0, 1}), 2, true))  --> tensor([3, 3])' }
doc.op { '_standard_gamma', 'torch._standard_gamma(alpha, {generator=}) -> Tensor',
  does = 'Gamma(alpha, 1) draws, one per element of alpha (float32 or float64), by Marsaglia and Tsang\'s method as PyTorch\'s CPU sampler: the same numbers after the same seed. Differentiable in alpha with the reparameterized gradient (StandardGammaBackward0: torch._standard_gamma_grad). What distributions.Gamma samples with.' .. GEN,
  ex = 'print(torch._standard_gamma(torch.full({1000}, 2.0, {dtype=torch.float64})):mean():item() > 1.8)  --> true' }
doc.op { '_sample_dirichlet', 'torch._sample_dirichlet(alpha, {generator=}) -> Tensor',
  does = 'Dirichlet draws along the last dimension of alpha: Gamma draws in float64 divided by their sum, as PyTorch\'s CPU sampler (the same numbers after the same seed); not differentiable (distributions.Dirichlet\'s rsample adds the gradient).' .. GEN,
  ex = 'print(torch._sample_dirichlet(torch.ones(3)):sum():item() > 0.999)  --> true' }
doc.op { 'poisson', 'torch.poisson(rates, {generator=}) -> Tensor',
  does = 'Poisson counts (in rates\' float dtype), one per rate, as PyTorch\'s CPU sampler (products of uniforms below rate 10, Hormann\'s transformed rejection above): the same numbers after the same seed. A negative rate is an error; the gradient is zero (PoissonBackward0).' .. GEN,
  ex = 'print(torch.poisson(torch.zeros(2)))  --> tensor([0., 0.])' }
doc.op { 'binomial', 'torch.binomial(count, prob, {generator=}) -> Tensor',
  does = 'Binomial counts for count trials of probability prob (broadcast, one float dtype), as PyTorch\'s CPU sampler (BTRS when count * prob >= 10, else inversion): the same numbers after the same seed. Not differentiable.' .. GEN,
  ex = 'print(torch.binomial(torch.tensor({3.0, 5.0}), torch.tensor({1.0, 0.0})))  --> tensor([3., 0.])' }
doc.op { '_standard_gamma_grad', 'torch._standard_gamma_grad(alpha, x) -> Tensor',
  does = 'd x / d alpha for x drawn from Gamma(alpha, 1) (the implicit reparameterization gradient, PyTorch\'s approximations: a series for small x, a saddle point for large alpha, a rational fit between).',
  ex = 'print(torch._standard_gamma_grad(torch.tensor({1.0}), torch.tensor({1.0})):item() > 0)  --> true' }
doc.op { '_dirichlet_grad', 'torch._dirichlet_grad(x, alpha, total) -> Tensor',
  does = 'PyTorch\'s reparameterized Dirichlet gradient factor: -(d/dalpha of the Beta(alpha, total - alpha) cdf at x) / density / (1 - x), what distributions.Dirichlet\'s and Beta\'s rsample backward use.',
  ex = 'print(torch._dirichlet_grad(torch.tensor({0.5}), torch.tensor({1.0}), torch.tensor({2.0})):item() > 0)  --> true' }

doc.section 'Fused nn ops'
doc.op { 'convolution', 'torch.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups) -> Tensor',
  does = 'The convolution behind F.conv1d/2d/3d and the transposed ones: every argument by position, sizes as arrays.',
  ex = 'print(torch.convolution(torch.ones(1, 1, 3, 3), torch.ones(1, 1, 2, 2), nil, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1))  --> tensor([[[[4., 4.], [4., 4.]]]])' }
doc.op { 'lstm_cell_pointwise', 'torch.lstm_cell_pointwise(igates, hgates, cx, b_ih, b_hh) -> hy, cy',
  does = 'One LSTM time step after its two matrix products: the gates (input, forget, cell, output) from igates + hgates (+ biases), the new hidden and cell states. nn.LSTM and nn.LSTMCell call it.',
  pt = false,
  ex = 'local h, c = torch.lstm_cell_pointwise(torch.zeros(1, 8), torch.zeros(1, 8), torch.ones(1, 2))\nprint(c)  --> tensor([[0.5000, 0.5000]])' }
doc.op { 'gru_cell_pointwise', 'torch.gru_cell_pointwise(igates, hgates, hx, b_ih, b_hh) -> hy',
  does = 'One GRU time step after its two matrix products (reset, update and new gates): the new hidden state. nn.GRU and nn.GRUCell call it.',
  pt = false,
  ex = 'print(torch.gru_cell_pointwise(torch.zeros(1, 6), torch.zeros(1, 6), torch.ones(1, 2)))  --> tensor([[0.5000, 0.5000]])' }
doc.op { 'layer_norm', 'torch.layer_norm(input, normalized_shape, weight, bias, eps) -> Tensor',
  does = 'Normalizes over the last dims (normalized_shape, an array) to mean 0 and variance 1, then scales by weight and shifts by bias (F.layer_norm, nn.LayerNorm).',
  ex = 'print(torch.layer_norm(torch.tensor({{1, 3}}), {2}))  --> tensor([[-1.0000,  1.0000]])' }
doc.op { 'nll_loss', 'torch.nll_loss(input, target, weight, reduction, ignore_index) -> Tensor',
  does = 'The negative log likelihood loss of log-probabilities and 1-based class targets (F.nll_loss takes the options; reduction here as PyTorch\'s enum: 0 none, 1 mean, 2 sum).',
  pt = 'torch.nn.functional.nll_loss',
  ex = 'print(torch.nll_loss(torch.tensor({{-1, -2}}), torch.tensor({2}, {dtype = torch.int64})))  --> tensor(2.)' }
doc.op { 'ctc_loss', 'torch.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity) -> Tensor',
  does = 'The connectionist temporal classification loss (F.ctc_loss with its options; blank counts from 1).',
  ex = 'local lp = torch.zeros(2, 1, 3):log_softmax(3)\nprint(torch.ctc_loss(lp, torch.tensor({{2}}, {dtype = torch.int64}), {2}, {1}):size())  --> torch.Size([])' }
doc.op { 'embedding_bag', 'torch.embedding_bag(weight, input, offsets, ...) -> Tensor',
  does = 'The sums, means or maxima of bags of embedding rows (F.embedding_bag has the options).',
  pt = 'torch.nn.functional.embedding_bag',
  ex = 'local w = torch.eye(3)\nprint(F.embedding_bag(torch.tensor({1, 3}, {dtype = torch.int64}), w, torch.tensor({1}, {dtype = torch.int64})))  --> tensor([[0.5000, 0.0000, 0.5000]])' }
doc.op { 'lstm_layer', 'torch.lstm_layer(igates, h0, c0, w_hh, reverse) -> hs, cs',
  does = 'The recurrence of one LSTM layer and direction over a whole sequence in one op: igates (seq x batch x 4h, the input products with biases) and the initial states; returns every step\'s hidden and cell states.',
  pt = false,
  ex = 'local hs, cs = torch.lstm_layer(torch.zeros(3, 1, 8), torch.zeros(1, 2), torch.zeros(1, 2), torch.zeros(8, 2))\nprint(hs:size())  --> torch.Size([3, 1, 2])' }
