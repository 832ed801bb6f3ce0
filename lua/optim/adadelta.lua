-- optim.Adadelta (rho, eps, weight_decay, maximize) as PyTorch 1.13's torch.optim.Adadelta (state:
-- step, square_avg, acc_delta). Each parameter's update is one call to the fused step
-- mt_adadelta_step (core/optim/adaptive.c, its kernel core/tensor/adaptive.c).
local ffi = require 'ffi'
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local C, raise_last = core.C, core.raise_last
local settings = ffi.new('mt_adadelta_settings')
local common = require 'moontorch.optim.common'
local check, pystr = common.check, common.pystr

return common.define('Adadelta', {
  defaults = { lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0, foreach = common.NONE, maximize = false },
  validate = function(o)
    for _, k in ipairs { 'lr', 'rho', 'eps', 'weight_decay' } do common.number('Adadelta', k, o[k]) end
    check('Adadelta', o.lr >= 0, 'Invalid learning rate: ' .. pystr(o.lr))
    check('Adadelta', 0 <= o.rho and o.rho <= 1, 'Invalid rho value: ' .. pystr(o.rho))
    check('Adadelta', o.eps >= 0, 'Invalid epsilon value: ' .. pystr(o.eps))
    check('Adadelta', o.weight_decay >= 0, 'Invalid weight_decay value: ' .. pystr(o.weight_decay))
  end,
  new_state = function(g, p)
    return { step = 0, square_avg = torch.zeros_like(p), acc_delta = torch.zeros_like(p) }
  end,
  update = function(g, p, grad, st)
    st.step = st.step + 1
    settings.lr, settings.rho, settings.eps, settings.weight_decay = g.lr, g.rho, g.eps, g.weight_decay
    settings.maximize = g.maximize and 1 or 0
    if C.mt_adadelta_step(p, grad, st.square_avg, st.acc_delta, settings) ~= 0 then raise_last() end
  end,
})
