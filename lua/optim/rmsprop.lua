-- optim.RMSprop (centered, momentum, weight_decay, maximize) as PyTorch 1.13's torch.optim.RMSprop
-- (state: step, square_avg, momentum_buffer, grad_avg). Each parameter's update is one call to the
-- fused step mt_rmsprop_step (core/optim/adaptive.c, its kernel core/tensor/adaptive.c).
local ffi = require 'ffi'
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local C, raise_last = core.C, core.raise_last
local settings = ffi.new('mt_rmsprop_settings')
local common = require 'moontorch.optim.common'
local check, pystr = common.check, common.pystr

return common.define('RMSprop', {
  defaults = { lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0, centered = false,
    foreach = common.NONE, maximize = false, differentiable = false },
  validate = function(o)
    for _, k in ipairs { 'lr', 'alpha', 'eps', 'weight_decay', 'momentum' } do common.number('RMSprop', k, o[k]) end
    check('RMSprop', o.lr >= 0, 'Invalid learning rate: ' .. pystr(o.lr))
    check('RMSprop', o.eps >= 0, 'Invalid epsilon value: ' .. pystr(o.eps))
    check('RMSprop', o.momentum >= 0, 'Invalid momentum value: ' .. pystr(o.momentum))
    check('RMSprop', o.weight_decay >= 0, 'Invalid weight_decay value: ' .. pystr(o.weight_decay))
    check('RMSprop', o.alpha >= 0, 'Invalid alpha value: ' .. pystr(o.alpha))
  end,
  new_state = function(g, p)
    local st = { step = 0, square_avg = torch.zeros_like(p) }
    if g.momentum > 0 then st.momentum_buffer = torch.zeros_like(p) end
    if g.centered then st.grad_avg = torch.zeros_like(p) end
    return st
  end,
  update = function(g, p, grad, st)
    st.step = st.step + 1
    settings.lr, settings.alpha, settings.eps = g.lr, g.alpha, g.eps
    settings.weight_decay, settings.momentum = g.weight_decay, g.momentum
    settings.centered, settings.maximize = g.centered and 1 or 0, g.maximize and 1 or 0
    if C.mt_rmsprop_step(p, grad, st.square_avg, st.grad_avg, st.momentum_buffer, settings) ~= 0 then raise_last() end
  end,
})
