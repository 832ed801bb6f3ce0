-- moontorch.optim: optimizers (optim.Optimizer, SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam,
-- RAdam, ASGD, Rprop, LBFGS) and optim.lr_scheduler, as PyTorch 1.13's torch.optim.
local optim = {}
package.loaded['moontorch.optim'] = optim -- the files below ask for it while it loads

require 'moontorch.optim.optimizer'
require 'moontorch.optim.sgd'
-- issue 13: the other optimizers and the learning-rate schedulers
require 'moontorch.optim.adam'
for _, name in ipairs { 'rmsprop', 'adagrad', 'adadelta', 'adamax', 'nadam', 'radam', 'asgd', 'rprop' } do
  require('moontorch.optim.' .. name)
end
require 'moontorch.optim.lbfgs'
require 'moontorch.optim.lr_scheduler'

return optim
