-- The docs of torch.distributions (lua/distributions/; moontorch.doc: lua/doc/init.lua says how an
-- entry is written).
local doc = ...

doc.section 'Distributions'
doc { 'torch.distributions.Distribution(batch_shape, event_shape, validate_args)',
  does = 'The base class: a subclass sets its parameters, then calls Distribution.__init(self, batch_shape, event_shape, validate_args) (which checks the parameters against `_arg_constraints` when validating). Fields read as PyTorch\'s properties: d.batch_shape, d.event_shape (torch.Size), d.mean, d.mode, d.variance, d.stddev, d.support, d.arg_constraints, d.has_rsample, d.has_enumerate_support. A sample of sample_shape has the shape sample_shape .. batch_shape .. event_shape. Validation is on by default (as PyTorch\'s): parameters outside their constraint, and values outside the support given to log_prob/cdf, are errors; {validate_args = false} turns it off for one distribution.',
  ex = 'local d = torch.distributions.Normal(torch.zeros(2), torch.ones(2))\nprint(d.batch_shape, d.event_shape, d.has_rsample)  --> torch.Size([2]) torch.Size([]) true' }
doc { 'torch.distributions.Distribution:sample(sample_shape) -> Tensor', 'torch.distributions.Distribution:rsample(sample_shape) -> Tensor',
  'torch.distributions.Distribution:sample_n(n) -> Tensor',
  unchecked_args = true,
  does = 'Draws of the shape sample_shape .. batch_shape .. event_shape (sample_shape: numbers, an array or a torch.Size; nothing for one draw). sample() records no gradient; rsample() is the reparameterized draw, differentiable in the parameters (where has_rsample). After torch.manual_seed(s) the draws are PyTorch\'s for the same seed.',
  ex = 'torch.manual_seed(0)\nlocal d = torch.distributions.Normal(0, 1)\nprint(d:sample(2, 3):size(), d:sample_n(4):size())  --> torch.Size([2, 3]) torch.Size([4])' }
doc { 'torch.distributions.Distribution:log_prob(value) -> Tensor', 'torch.distributions.Distribution:cdf(value) -> Tensor',
  'torch.distributions.Distribution:icdf(value) -> Tensor', 'torch.distributions.Distribution:entropy() -> Tensor',
  'torch.distributions.Distribution:perplexity() -> Tensor',
  unchecked_args = true,
  does = 'The log of the density (or mass) at value, the cumulative distribution function, its inverse (value: a probability), the entropy and exp(entropy), each of the batch shape (value broadcasts against it).',
  ex = 'local d = torch.distributions.Normal(0, 1)\nprint(d:log_prob(torch.tensor(0.0)), d:cdf(torch.tensor(0.0)), d:icdf(torch.tensor(0.5)))  --> tensor(-0.9189) tensor(0.5000) tensor(0.)' }
doc { 'torch.distributions.Distribution:expand(batch_shape) -> Distribution', 'torch.distributions.Distribution:enumerate_support(expand) -> Tensor',
  unchecked_args = true,
  does = 'expand: the same distribution over a larger batch (parameters expanded, no copy). enumerate_support(expand=true): every value of a discrete distribution\'s support, along a new first dimension, expanded over the batch (expand=false: size 1 there).',
  ex = 'local d = torch.distributions.Bernoulli(0.5):expand({3})\nprint(d.batch_shape, d:enumerate_support():size())  --> torch.Size([3]) torch.Size([2, 3])' }
doc { 'torch.distributions.Distribution:set_default_validate_args(value)',
  unchecked_args = true,
  does = 'Turns validation on (the default) or off for distributions that do not say validate_args (called as Distribution.set_default_validate_args(false), as PyTorch\'s static method).',
  ex = 'torch.distributions.Distribution.set_default_validate_args(false)\nprint(torch.distributions.Normal(0, -1).scale)  --> tensor(-1.)\ntorch.distributions.Distribution.set_default_validate_args(true)' }

doc { 'torch.distributions.Normal(loc, scale, {validate_args=})',
  does = 'The normal distribution N(loc, scale²), parameters tensors or numbers broadcast together (positional or {loc=, scale=}). rsample is loc + scale · eps.',
  ex = 'local d = torch.distributions.Normal(torch.tensor({0.0, 1.0}), 2)\nprint(d.mean, d.variance, d:entropy())  --> tensor([0., 1.]) tensor([4., 4.]) tensor([2.1121, 2.1121])' }
doc { 'torch.distributions.Uniform(low, high, {validate_args=})',
  does = 'The uniform distribution on [low, high) (low < high when validating).',
  ex = 'local d = torch.distributions.Uniform(0, 4)\nprint(d.mean, d:log_prob(torch.tensor(1.0)), d:cdf(torch.tensor(1.0)))  --> tensor(2.) tensor(-1.3863) tensor(0.2500)' }
doc { 'torch.distributions.Exponential(rate, {validate_args=})',
  does = 'The exponential distribution of the given rate (mean 1/rate).',
  ex = 'local d = torch.distributions.Exponential(2)\nprint(d.mean, d:log_prob(torch.tensor(1.0)))  --> tensor(0.5000) tensor(-1.3069)' }
doc { 'torch.distributions.Laplace(loc, scale, {validate_args=})',
  does = 'The Laplace distribution (density exp(-|x - loc| / scale) / (2 scale)).',
  ex = 'local d = torch.distributions.Laplace(0, 1)\nprint(d.variance, d:log_prob(torch.tensor(1.0)))  --> tensor(2.) tensor(-1.6931)' }
doc { 'torch.distributions.Bernoulli(probs, logits, {validate_args=})',
  does = '1 with probability probs, else 0: give probs (positional or {probs=}) or logits ({logits=} or Bernoulli(nil, logits)), not both; the other is computed on first read. Samples are of the parameter\'s dtype.',
  ex = 'local d = torch.distributions.Bernoulli{logits = torch.tensor({0.0})}\nprint(d.probs, d:log_prob(torch.tensor({1.0})))  --> tensor([0.5000]) tensor([-0.6931])' }
doc { 'torch.distributions.Categorical(probs, logits, {validate_args=})',
  does = 'One of K categories per draw, K the last dimension of probs or logits (normalized along it; the dimensions before it are the batch). Categories count from 1, as every index in moontorch: samples, log_prob\'s values, mode and enumerate_support are 1..K (PyTorch\'s 0..K-1 plus one; the draws after a seed are PyTorch\'s plus one).',
  ex = 'local d = torch.distributions.Categorical(torch.tensor({0.25, 0.75}))\nprint(d:log_prob(torch.tensor(2)), d.mode, d:entropy())  --> tensor(-0.2877) tensor(2) tensor(0.5623)' }
doc { 'torch.distributions.OneHotCategorical(probs, logits, {validate_args=})',
  does = 'Categorical\'s draws as one-hot vectors of length K (event_shape {K}; log_prob takes such vectors).',
  ex = 'local d = torch.distributions.OneHotCategorical(torch.tensor({0.0, 1.0}))\nprint(d:sample())  --> tensor([0., 1.])' }
doc { 'torch.distributions.Independent(base_distribution, reinterpreted_batch_ndims, {validate_args=})',
  does = 'The base distribution with its rightmost reinterpreted_batch_ndims batch dimensions taken as event dimensions: log_prob and entropy sum over them (Independent(Normal(mu, sigma), 1): a diagonal Gaussian per row).',
  ex = 'local d = torch.distributions.Independent(torch.distributions.Normal(torch.zeros(2, 3), 1), 1)\nprint(d.batch_shape, d.event_shape, d:log_prob(torch.zeros(2, 3)):size())  --> torch.Size([2]) torch.Size([3]) torch.Size([2])' }

doc.section 'KL divergence'
doc { 'torch.distributions.kl_divergence(p, q) -> Tensor',
  does = 'KL(p || q) of the batch shape, by the closed form registered for the pair of classes (the most specific pair: a subclass uses its parent\'s unless one of its own is registered). Pairs: Normal, Uniform, Exponential, Laplace, Bernoulli, Categorical, OneHotCategorical, Independent, Gamma, Beta, Dirichlet, Poisson, Binomial, Pareto, ContinuousBernoulli (each with its own kind), and PyTorch\'s pairs across kinds among Exponential, Gamma, Beta, Normal, Uniform, Gumbel, Laplace, Bernoulli, Poisson, Binomial, Pareto, ContinuousBernoulli. Another pair is an error naming both.',
  ex = 'local D = torch.distributions\nprint(D.kl_divergence(D.Normal(0, 1), D.Normal(1, 1)))  --> tensor(0.5000)' }
doc { 'torch.distributions.register_kl(type_p, type_q, fn) -> fn',
  does = 'Registers fn(p, q) as KL(p || q) for instances of the two classes (subclasses of Distribution); without fn, returns a function that registers its argument (PyTorch\'s decorator form).',
  ex = 'local D = torch.distributions\nlocal MyNormal = torch.class(\'MyNormal\', \'torch.distributions.Normal\')\nD.register_kl(MyNormal, D.Normal, function(p, q) return torch.tensor(42.0) end)\nprint(D.kl_divergence(MyNormal(0, 1), D.Normal(0, 1)))  --> tensor(42.)' }
doc.alias('torch.distributions.kl.kl_divergence', 'torch.distributions.kl_divergence')
doc.alias('torch.distributions.kl.register_kl', 'torch.distributions.register_kl')

doc.section 'Constraints'
doc { 'torch.distributions.constraints.Constraint(name, check, fields)', 'torch.distributions.constraints.Constraint:check(value) -> Tensor',
  pt = 'torch.distributions.constraints.Constraint, torch.distributions.constraints.Constraint.check',
  does = 'A set a parameter or a value lives in: check(value) is a bool tensor, one element per event (event_dim rightmost dimensions reduced); it prints as PyTorch\'s (`GreaterThan(lower_bound=0.0)`). Fields: is_discrete, event_dim, and the bounds.',
  ex = 'local c = torch.distributions.constraints.positive\nprint(c, c:check(torch.tensor({-1.0, 2.0})))  --> GreaterThan(lower_bound=0.0) tensor([False,  True])' }
doc { 'torch.distributions.constraints.real', 'torch.distributions.constraints.positive', 'torch.distributions.constraints.nonnegative',
  'torch.distributions.constraints.unit_interval', 'torch.distributions.constraints.boolean', 'torch.distributions.constraints.simplex',
  'torch.distributions.constraints.real_vector', 'torch.distributions.constraints.one_hot',
  'torch.distributions.constraints.nonnegative_integer', 'torch.distributions.constraints.positive_integer',
  'torch.distributions.constraints.positive_definite', 'torch.distributions.constraints.lower_cholesky',
  does = 'The fixed sets: the reals (not NaN), x > 0, x >= 0, [0, 1], {0, 1}, vectors of non-negative numbers summing to 1, real vectors, one-hot vectors, the integers from 0 and from 1, symmetric positive-definite matrices, lower-triangular matrices with a positive diagonal.',
  ex = 'local cs = torch.distributions.constraints\nprint(cs.simplex:check(torch.tensor({0.25, 0.75})), cs.boolean)  --> tensor(True) Boolean()' }
doc { 'torch.distributions.constraints.greater_than(lower_bound) -> Constraint', 'torch.distributions.constraints.greater_than_eq(lower_bound) -> Constraint',
  'torch.distributions.constraints.less_than(upper_bound) -> Constraint', 'torch.distributions.constraints.interval(lower_bound, upper_bound) -> Constraint',
  'torch.distributions.constraints.half_open_interval(lower_bound, upper_bound) -> Constraint',
  'torch.distributions.constraints.integer_interval(lower_bound, upper_bound) -> Constraint',
  'torch.distributions.constraints.independent(base_constraint, reinterpreted_batch_ndims) -> Constraint',
  'torch.distributions.constraints.dependent(is_discrete, event_dim) -> Constraint',
  'torch.distributions.constraints.is_dependent(constraint) -> boolean',
  pt = 'torch.distributions.constraints.greater_than, torch.distributions.constraints.greater_than_eq, torch.distributions.constraints.less_than, torch.distributions.constraints.interval, torch.distributions.constraints.half_open_interval, torch.distributions.constraints.integer_interval, torch.distributions.constraints.independent, torch.distributions.constraints.dependent, torch.distributions.constraints.is_dependent',
  does = 'Sets with bounds (numbers or tensors); independent reduces base_constraint\'s check over the rightmost dimensions; dependent marks a parameter whose set depends on the others (Uniform\'s low and high): never checked alone.',
  ex = 'local cs = torch.distributions.constraints\nprint(cs.interval(0, 1):check(torch.tensor({0.5, 2.0})), cs.is_dependent(cs.dependent()))  --> tensor([ True, False]) true' }

doc.section 'More distributions'
doc { 'torch.distributions.Cauchy(loc, scale, {validate_args=})',
  does = 'The Cauchy distribution (mean NaN, variance inf, as PyTorch\'s); rsample from t:cauchy_().',
  ex = 'local d = torch.distributions.Cauchy(0, 1)\nprint(d:cdf(torch.tensor(1.0)), d:log_prob(torch.tensor(0.0)))  --> tensor(0.7500) tensor(-1.1447)' }
doc { 'torch.distributions.Geometric(probs, logits, {validate_args=})',
  does = 'The number of failures before the first success of Bernoulli(probs) trials: 0, 1, 2, ... (counts, not positions); probs in (0, 1].',
  ex = 'local d = torch.distributions.Geometric(0.5)\nprint(d.mean, d:log_prob(torch.tensor(1.0)))  --> tensor(1.) tensor(-1.3863)' }
doc { 'torch.distributions.TransformedDistribution(base_distribution, transforms, {validate_args=})',
  does = 'Draws of base_distribution passed through transforms (one, or an array applied in order); log_prob by the change of variables, cdf and icdf through monotone transforms. Elementwise transforms only (torch.distributions.transforms).',
  ex = 'local D = torch.distributions\nlocal d = D.TransformedDistribution(D.Normal(0, 1), D.transforms.AffineTransform(1, 2))\nprint(d:log_prob(torch.tensor(1.0)), D.Normal(1, 2):log_prob(torch.tensor(1.0)))  --> tensor(-1.6121) tensor(-1.6121)' }
doc { 'torch.distributions.LogNormal(loc, scale, {validate_args=})',
  does = 'exp of Normal(loc, scale) (a TransformedDistribution; d.loc and d.scale are its base\'s).',
  ex = 'local d = torch.distributions.LogNormal(0, 1)\nprint(d.mean, d:log_prob(torch.tensor(1.0)))  --> tensor(1.6487) tensor(-0.9189)' }
doc { 'torch.distributions.HalfNormal(scale, {validate_args=})',
  does = '|Normal(0, scale)| (log_prob -inf below 0).',
  ex = 'local d = torch.distributions.HalfNormal(1)\nprint(d:cdf(torch.tensor(1.0)), d:log_prob(torch.tensor(0.0)))  --> tensor(0.6827) tensor(-0.2258)' }
doc { 'torch.distributions.Gumbel(loc, scale, {validate_args=})',
  does = 'The Gumbel distribution: loc - scale log(-log U) for U uniform on (0, 1).',
  ex = 'local d = torch.distributions.Gumbel(0, 1)\nprint(d.mean, d:log_prob(torch.tensor(0.0)))  --> tensor(0.5772) tensor(-1.)' }
doc { 'torch.distributions.MultivariateNormal(loc, covariance_matrix, precision_matrix, scale_tril, {validate_args=})',
  unchecked_args = true,
  does = 'The normal distribution of vectors (event_shape {n}): give exactly one of covariance_matrix, precision_matrix, scale_tril (positional, or as options: MultivariateNormal(mu, {scale_tril = L})), broadcast with loc\'s batch dimensions; the others are computed on first read from the lower Cholesky factor. rsample is loc + L eps; log_prob solves with L (torch.linalg.solve_triangular).',
  ex = 'local d = torch.distributions.MultivariateNormal(torch.zeros(2), torch.eye(2))\nprint(d:log_prob(torch.zeros(2)), d.event_shape)  --> tensor(-1.8379) torch.Size([2])' }

doc.section 'The Gamma family and counts'
doc { 'torch.distributions.Gamma(concentration, rate, {validate_args=})',
  does = 'The Gamma distribution (density rate^a x^(a-1) e^(-rate x) / Γ(a), a the concentration). rsample is torch._standard_gamma(concentration) / rate: PyTorch\'s draws after the same seed, differentiable in both parameters (the implicit reparameterization gradient).',
  ex = 'local d = torch.distributions.Gamma(2, 0.5)\nprint(d.mean, d.variance, d:log_prob(torch.tensor(1.0)))  --> tensor(4.) tensor(8.) tensor(-1.8863)' }
doc { 'torch.distributions.Chi2(df, {validate_args=})',
  does = 'The chi-squared distribution of df degrees of freedom: Gamma(df / 2, 1 / 2), with d.df.',
  ex = 'local d = torch.distributions.Chi2(3)\nprint(d.df, d.mean, d:entropy())  --> tensor(3.) tensor(3.) tensor(2.0541)' }
doc { 'torch.distributions.Beta(concentration1, concentration0, {validate_args=})',
  does = 'The Beta distribution on [0, 1] (a Dirichlet of (x, 1 - x), as PyTorch\'s: its draws, its messages); rsample differentiable in both concentrations.',
  ex = 'local d = torch.distributions.Beta(2, 3)\nprint(d.mean, d:log_prob(torch.tensor(0.5)))  --> tensor(0.4000) tensor(0.4055)' }
doc { 'torch.distributions.Dirichlet(concentration, {validate_args=})',
  does = 'Vectors on the simplex, K the last dimension of concentration (event_shape {K}). rsample is torch._sample_dirichlet (PyTorch\'s draws after the same seed) with PyTorch\'s reparameterized gradient (grad_fn _DirichletBackward, torch._dirichlet_grad).',
  ex = 'local d = torch.distributions.Dirichlet(torch.tensor({1.0, 2.0, 1.0}))\nprint(d.mean, d:log_prob(torch.tensor({0.25, 0.5, 0.25})))  --> tensor([0.2500, 0.5000, 0.2500]) tensor(1.0986)' }
doc { 'torch.distributions.StudentT(df, loc, scale, {validate_args=})',
  does = 'Student\'s t of df degrees of freedom, loc 0 and scale 1 unless given; rsample draws normals then a Chi2 as PyTorch\'s (mean NaN for df <= 1, variance inf for 1 < df <= 2).',
  ex = 'local d = torch.distributions.StudentT(3)\nprint(d.variance, d:log_prob(torch.tensor(0.0)))  --> tensor(3.) tensor(-1.0009)' }
doc { 'torch.distributions.Poisson(rate, {validate_args=})',
  does = 'Poisson counts of the given rate (as floats of rate\'s dtype); sample is torch.poisson, PyTorch\'s draws after the same seed.',
  ex = 'local d = torch.distributions.Poisson(4)\nprint(d:log_prob(torch.tensor(2.0)), d.mode)  --> tensor(-1.9206) tensor(4.)' }
doc { 'torch.distributions.Binomial(total_count, probs, logits, {validate_args=})',
  does = 'The number of successes in total_count trials (1 unless given; tensor or number) of probability probs, or logits ({total_count=, logits=}), not both; sample is torch.binomial (PyTorch\'s draws); enumerate_support and entropy need one total_count for the whole batch.',
  ex = 'local d = torch.distributions.Binomial(10, 0.25)\nprint(d.mean, d:log_prob(torch.tensor(3.0)))  --> tensor(2.5000) tensor(-1.3852)' }
doc { 'torch.distributions.Multinomial(total_count, probs, logits, {validate_args=})',
  does = 'Vectors of K counts summing to total_count (a whole number), K the last dimension of probs or logits: Categorical draws counted (PyTorch\'s after the same seed).',
  ex = 'local d = torch.distributions.Multinomial(4, torch.tensor({0.5, 0.5}))\nprint(d:log_prob(torch.tensor({2.0, 2.0})), d.mean)  --> tensor(-0.9808) tensor([2., 2.])' }
doc { 'torch.distributions.NegativeBinomial(total_count, probs, logits, {validate_args=})',
  does = 'The number of successes before total_count failures of trials of probability probs (or logits); sample draws a Gamma rate then a Poisson count, as PyTorch\'s.',
  ex = 'local d = torch.distributions.NegativeBinomial(3, 0.5)\nprint(d.mean, d:log_prob(torch.tensor(2.0)))  --> tensor(3.) tensor(-1.6740)' }
doc { 'torch.distributions.Pareto(scale, alpha, {validate_args=})',
  does = 'The Pareto distribution: scale · exp(X), X ~ Exponential(alpha) (a TransformedDistribution); support x >= scale.',
  ex = 'local d = torch.distributions.Pareto(1, 3)\nprint(d.mean, d:log_prob(torch.tensor(2.0)))  --> tensor(1.5000) tensor(-1.6740)' }
doc { 'torch.distributions.Weibull(scale, concentration, {validate_args=})',
  does = 'The Weibull distribution: scale · X^(1/concentration), X ~ Exponential(1).',
  ex = 'local d = torch.distributions.Weibull(1, 2)\nprint(d.mean, d:log_prob(torch.tensor(1.0)))  --> tensor(0.8862) tensor(-0.3069)' }
doc { 'torch.distributions.Kumaraswamy(concentration1, concentration0, {validate_args=})',
  does = 'The Kumaraswamy distribution on [0, 1]: (1 - U^(1/concentration0))^(1/concentration1), U uniform; rsample differentiable.',
  ex = 'local d = torch.distributions.Kumaraswamy(2, 3)\nprint(d.mean, d:log_prob(torch.tensor(0.5)))  --> tensor(0.4571) tensor(0.5232)' }
doc { 'torch.distributions.FisherSnedecor(df1, df2, {validate_args=})',
  does = 'The F distribution: (X1 / df1) / (X2 / df2) of Chi2 draws (two Gamma rsamples, differentiable).',
  ex = 'local d = torch.distributions.FisherSnedecor(4, 6)\nprint(d.mean, d:log_prob(torch.tensor(1.0)))  --> tensor(1.5000) tensor(-0.8802)' }
doc { 'torch.distributions.ContinuousBernoulli(probs, logits, lims, {validate_args=})',
  does = 'The continuous Bernoulli distribution on [0, 1] (density proportional to p^x (1 - p)^(1 - x)); probs or logits, not both; lims (default {0.499, 0.501}) where Taylor expansions stand in near 1/2. rsample is icdf of a uniform draw; cdf, icdf.',
  ex = 'local d = torch.distributions.ContinuousBernoulli(0.3)\nprint(d.mean, d:log_prob(torch.tensor(0.5)))  --> tensor(0.4302) tensor(-0.0297)' }
doc { 'torch.distributions.VonMises(loc, concentration, {validate_args=})',
  does = 'The von Mises (circular normal) distribution on [-pi, pi): sample is PyTorch\'s rejection sampler, the same draws after a seed; no rsample.',
  ex = 'local d = torch.distributions.VonMises(0, 2)\nprint(d.mean, d:log_prob(torch.tensor(0.0)))  --> tensor(0.) tensor(-0.6619)' }
doc { 'torch.distributions.LogitRelaxedBernoulli(temperature, probs, logits, {validate_args=})',
  pt = 'torch.distributions.relaxed_bernoulli.LogitRelaxedBernoulli',
  does = 'The logit of a RelaxedBernoulli draw (temperature a tensor; a number is made one).',
  ex = 'local d = torch.distributions.LogitRelaxedBernoulli(torch.tensor(0.5), 0.3)\nprint(d:log_prob(torch.tensor(0.5)))  --> tensor(-2.3665)' }
doc { 'torch.distributions.RelaxedBernoulli(temperature, probs, logits, {validate_args=})',
  does = 'The relaxed (concrete) Bernoulli on (0, 1): sigmoid of a LogitRelaxedBernoulli; rsample differentiable.',
  ex = 'local d = torch.distributions.RelaxedBernoulli(torch.tensor(0.5), 0.3)\nprint(d:log_prob(torch.tensor(0.5)))  --> tensor(-0.8675)' }
doc { 'torch.distributions.ExpRelaxedCategorical(temperature, probs, logits, {validate_args=})',
  pt = 'torch.distributions.relaxed_categorical.ExpRelaxedCategorical',
  does = 'The log of a RelaxedOneHotCategorical draw (event_shape {K}).',
  ex = 'local d = torch.distributions.ExpRelaxedCategorical(torch.tensor(1.0), torch.tensor({0.5, 0.5}))\nprint(d:log_prob(torch.tensor({-0.5, -1.0})))  --> tensor(-1.4482)' }
doc { 'torch.distributions.RelaxedOneHotCategorical(temperature, probs, logits, {validate_args=})',
  does = 'The Gumbel-softmax distribution on the simplex (event_shape {K}): exp of an ExpRelaxedCategorical; rsample differentiable.',
  ex = 'local d = torch.distributions.RelaxedOneHotCategorical(torch.tensor(1.0), torch.tensor({0.5, 0.5}))\nprint(d:log_prob(torch.tensor({0.5, 0.5})))  --> tensor(0.)' }
doc { 'torch.distributions.MixtureSameFamily(mixture_distribution, component_distribution, {validate_args=})',
  does = 'A mixture: a Categorical over the components, which are the component distribution\'s rightmost batch dimension; log_prob, cdf, mean, variance and sample (PyTorch\'s draws) as PyTorch\'s.',
  ex = 'local D = torch.distributions\nlocal d = D.MixtureSameFamily(D.Categorical(torch.tensor({0.5, 0.5})), D.Normal(torch.tensor({-1.0, 1.0}), 1.0))\nprint(d.mean, d.variance)  --> tensor(0.) tensor(2.)' }
doc { 'torch.distributions.LowRankMultivariateNormal(loc, cov_factor, cov_diag, {validate_args=})',
  does = 'The normal distribution of vectors with covariance W W^T + diag(D), W = cov_factor (n x m), D = cov_diag (PyTorch\'s capacitance matrix, Woodbury identity and determinant lemma); rsample draws m then n normals as PyTorch\'s; covariance_matrix, precision_matrix, scale_tril on first read; KL with itself and MultivariateNormal.',
  ex = 'local d = torch.distributions.LowRankMultivariateNormal(torch.zeros(2), torch.tensor({{1.0}, {1.0}}), torch.ones(2))\nprint(d.variance, d:log_prob(torch.zeros(2)))  --> tensor([2., 2.]) tensor(-2.3872)' }
doc { 'torch.distributions.LogisticNormal(loc, scale, {validate_args=})',
  does = 'Points of the K-simplex: the stick breaking (StickBreakingTransform) of a Normal(loc, scale) of K - 1 numbers (its last batch dimension becomes the event, one longer).',
  ex = 'local d = torch.distributions.LogisticNormal(torch.zeros(2), 1.0)\nprint(d.event_shape, d:log_prob(torch.tensor({0.25, 0.25, 0.5})))  --> torch.Size([3]) tensor(1.3054)' }
doc { 'torch.distributions.constraints.multinomial(upper_bound) -> Constraint',
  does = 'Vectors of non-negative counts summing to at most upper_bound (Multinomial\'s support; prints Multinomial()).',
  ex = 'print(torch.distributions.constraints.multinomial(3):check(torch.tensor({1.0, 2.0})))  --> tensor(True)' }

doc.section 'Transforms'
doc { 'torch.distributions.transforms.StickBreakingTransform()',
  does = 'Maps vectors of K - 1 reals onto the K-simplex by stick breaking (event dimension 1, one longer); inverse and log_abs_det_jacobian as PyTorch\'s.',
  ex = 'print(torch.distributions.transforms.StickBreakingTransform()(torch.zeros(2)))  --> tensor([0.3333, 0.3333, 0.3333])' }
doc { 'torch.distributions.transforms.Transform()', 'torch.distributions.transforms.Transform:log_abs_det_jacobian(x, y) -> Tensor',
  'torch.distributions.transforms.Transform:equals(other) -> boolean',
  'torch.distributions.transforms.Transform:forward_shape(shape) -> shape', 'torch.distributions.transforms.Transform:inverse_shape(shape) -> shape',
  pt = 'torch.distributions.transforms.Transform, torch.distributions.transforms.Transform.log_abs_det_jacobian, torch.distributions.transforms.Transform.forward_shape, torch.distributions.transforms.Transform.inverse_shape',
  unchecked_args = true,
  does = 'An elementwise map: t(x) applies it, t.inv is its inverse (a transform too, for a bijective one), log_abs_det_jacobian(x, y) the log of |dy/dx|; fields bijective, sign (a number, or a tensor of signs), domain, codomain. equals is PyTorch\'s ==: the same kind of map with the same parameters. A subclass defines _call, _inverse and log_abs_det_jacobian.',
  ex = 'local t = torch.distributions.transforms.ExpTransform()\nprint(t(torch.tensor(0.0)), t.inv(torch.tensor(1.0)), t:log_abs_det_jacobian(torch.tensor(2.0)))  --> tensor(1.) tensor(0.) tensor(2.)' }
doc { 'torch.distributions.transforms.ExpTransform()', 'torch.distributions.transforms.SigmoidTransform()',
  'torch.distributions.transforms.TanhTransform()', 'torch.distributions.transforms.AbsTransform()',
  'torch.distributions.transforms.AffineTransform(loc, scale, event_dim)', 'torch.distributions.transforms.PowerTransform(exponent)',
  'torch.distributions.transforms.ComposeTransform(parts)', 'torch.distributions.transforms.identity_transform',
  unchecked_args = true,
  does = 'y = exp(x), sigmoid(x), tanh(x), |x| (not bijective), loc + scale x (event_dim 0 only), x ^ exponent; ComposeTransform applies parts in order; identity_transform is the empty composition.',
  ex = 'local T = torch.distributions.transforms\nlocal t = T.ComposeTransform({T.AffineTransform(1, 2), T.ExpTransform()})\nprint(t(torch.tensor(0.0)), t.inv(t(torch.tensor(0.5))))  --> tensor(2.7183) tensor(0.5000)' }
