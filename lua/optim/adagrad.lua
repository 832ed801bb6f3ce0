-- optim.Adagrad (lr_decay, initial_accumulator_value, weight_decay, eps, maximize) as PyTorch 1.13's
-- torch.optim.Adagrad. As PyTorch's, the state (step, sum) is made by the constructor. Each
-- parameter's update is one call to the fused step mt_adagrad_step (core/optim/adaptive.c, its
-- kernel core/tensor/adaptive.c), which also counts the step.
local ffi = require 'ffi'
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local C, raise_last = core.C, core.raise_last
local settings = ffi.new('mt_adagrad_settings')
local common = require 'moontorch.optim.common'
local check, pystr = common.check, common.pystr

local function new_state(g, p)
  return { step = common.counter(), sum = torch.full_like(p, g.initial_accumulator_value) }
end

return common.define('Adagrad', {
  defaults = { lr = 1e-2, lr_decay = 0, weight_decay = 0, initial_accumulator_value = 0, eps = 1e-10,
    foreach = common.NONE, maximize = false },
  validate = function(o)
    for _, k in ipairs { 'lr', 'lr_decay', 'weight_decay', 'initial_accumulator_value', 'eps' } do
      common.number('Adagrad', k, o[k])
    end
    check('Adagrad', o.lr >= 0, 'Invalid learning rate: ' .. pystr(o.lr))
    check('Adagrad', o.lr_decay >= 0, 'Invalid lr_decay value: ' .. pystr(o.lr_decay))
    check('Adagrad', o.weight_decay >= 0, 'Invalid weight_decay value: ' .. pystr(o.weight_decay))
    check('Adagrad', o.initial_accumulator_value >= 0,
      'Invalid initial_accumulator_value value: ' .. pystr(o.initial_accumulator_value))
    check('Adagrad', o.eps >= 0, 'Invalid epsilon value: ' .. pystr(o.eps))
  end,
  after_init = function(self)
    for _, g in ipairs(self.param_groups) do
      for _, p in ipairs(g.params) do self.state[p] = new_state(g, p) end
    end
  end,
  new_state = new_state,
  update = function(g, p, grad, st)
    settings.lr, settings.lr_decay, settings.weight_decay, settings.eps = g.lr, g.lr_decay, g.weight_decay, g.eps
    settings.maximize = g.maximize and 1 or 0
    if C.mt_adagrad_step(p, grad, st.sum, st.step, settings) ~= 0 then raise_last() end
  end,
})
