-- optim.Adamax (betas, eps, weight_decay, maximize) as PyTorch 1.13's torch.optim.Adamax (state:
-- step, exp_avg, exp_inf). Each parameter's update is one call to the fused step mt_adamax_step
-- (core/optim/adaptive.c, its kernel core/tensor/adaptive.c), which also counts the step.
local ffi = require 'ffi'
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local C, raise_last = core.C, core.raise_last
local settings = ffi.new('mt_adamax_settings')
local common = require 'moontorch.optim.common'
local check, pystr = common.check, common.pystr

return common.define('Adamax', {
  defaults = { lr = 2e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, foreach = common.NONE,
    maximize = false },
  validate = function(o)
    for _, k in ipairs { 'lr', 'eps', 'weight_decay' } do common.number('Adamax', k, o[k]) end
    check('Adamax', o.lr >= 0, 'Invalid learning rate: ' .. pystr(o.lr))
    check('Adamax', o.eps >= 0, 'Invalid epsilon value: ' .. pystr(o.eps))
    common.betas('Adamax', o.betas)
    check('Adamax', o.weight_decay >= 0, 'Invalid weight_decay value: ' .. pystr(o.weight_decay))
  end,
  new_state = function(g, p)
    return { step = common.counter(), exp_avg = torch.zeros_like(p), exp_inf = torch.zeros_like(p) }
  end,
  update = function(g, p, grad, st)
    settings.lr, settings.beta1, settings.beta2 = g.lr, g.betas[1], g.betas[2]
    settings.eps, settings.weight_decay, settings.maximize = g.eps, g.weight_decay, g.maximize and 1 or 0
    if C.mt_adamax_step(p, grad, st.exp_avg, st.exp_inf, st.step, settings) ~= 0 then raise_last() end
  end,
})
