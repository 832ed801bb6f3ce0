-- torch.distributions: probability distributions to sample from and score (PyTorch's
-- torch.distributions): Normal, Uniform, Exponential, Laplace, Cauchy, Bernoulli, Categorical,
-- OneHotCategorical, Geometric, Independent, TransformedDistribution (LogNormal, HalfNormal, Gumbel),
-- MultivariateNormal, Gamma, Chi2, Beta, Dirichlet, StudentT (lua/distributions/gamma.lua), Poisson,
-- Binomial, Multinomial, NegativeBinomial (lua/distributions/counts.lua); Pareto, Weibull, Kumaraswamy,
-- FisherSnedecor, ContinuousBernoulli, VonMises, RelaxedBernoulli, RelaxedOneHotCategorical,
-- MixtureSameFamily (lua/distributions/more.lua); LowRankMultivariateNormal (lowrank.lua);
-- kl_divergence and register_kl; constraints and (elementwise) transforms. Draws after
-- torch.manual_seed are PyTorch's (the same generator calls in the same order); categories count
-- from 1 (lua/distributions/discrete.lua). Loaded on first use of torch.distributions.
local D = require 'moontorch.distributions.distribution'
local C = require 'moontorch.distributions.continuous'
local Dd = require 'moontorch.distributions.discrete'
local I = require 'moontorch.distributions.independent'
local Tr = require 'moontorch.distributions.transformed'
local Mv = require 'moontorch.distributions.multivariate'
local G = require 'moontorch.distributions.gamma'
local Cn = require 'moontorch.distributions.counts'
local Mo = require 'moontorch.distributions.more'
local LRm = require 'moontorch.distributions.lowrank'
local kl = require 'moontorch.distributions.kl'

local M = {
  Distribution = D.Distribution,
  Normal = C.Normal, Uniform = C.Uniform, Exponential = C.Exponential, Laplace = C.Laplace,
  Bernoulli = Dd.Bernoulli, Categorical = Dd.Categorical, OneHotCategorical = Dd.OneHotCategorical,
  Independent = I.Independent, Cauchy = C.Cauchy, Geometric = Dd.Geometric,
  TransformedDistribution = Tr.TransformedDistribution, LogNormal = Tr.LogNormal, HalfNormal = Tr.HalfNormal, Gumbel = Tr.Gumbel, LogisticNormal = Tr.LogisticNormal,
  transforms = require 'moontorch.distributions.transforms',
  MultivariateNormal = Mv.MultivariateNormal,
  Gamma = G.Gamma, Chi2 = G.Chi2, Beta = G.Beta, Dirichlet = G.Dirichlet, StudentT = G.StudentT,
  Pareto = Mo.Pareto, Weibull = Mo.Weibull, Kumaraswamy = Mo.Kumaraswamy, FisherSnedecor = Mo.FisherSnedecor,
  ContinuousBernoulli = Mo.ContinuousBernoulli, VonMises = Mo.VonMises,
  LogitRelaxedBernoulli = Mo.LogitRelaxedBernoulli, RelaxedBernoulli = Mo.RelaxedBernoulli,
  ExpRelaxedCategorical = Mo.ExpRelaxedCategorical, RelaxedOneHotCategorical = Mo.RelaxedOneHotCategorical,
  MixtureSameFamily = Mo.MixtureSameFamily, LowRankMultivariateNormal = LRm.LowRankMultivariateNormal,
  Poisson = Cn.Poisson, Binomial = Cn.Binomial, Multinomial = Cn.Multinomial, NegativeBinomial = Cn.NegativeBinomial,
  kl_divergence = kl.kl_divergence, register_kl = kl.register_kl,
  constraints = require 'moontorch.distributions.constraints',
}
M.kl = { kl_divergence = kl.kl_divergence, register_kl = kl.register_kl }

return M
