-- optim.Adadelta (rho, eps, weight_decay, maximize) as PyTorch 1.13's torch.optim.Adadelta, over
-- tensor ops in PyTorch's order (state: step, square_avg, acc_delta).
local torch = require 'moontorch'
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
    if g.maximize then grad = -grad end
    if g.weight_decay ~= 0 then grad = grad:add(p, { alpha = g.weight_decay }) end
    local rho, eps = g.rho, g.eps
    st.square_avg:mul_(rho):addcmul_(grad, grad, { value = 1 - rho })
    local std = st.square_avg:add(eps):sqrt_()
    local delta = st.acc_delta:add(eps):sqrt_():div_(std):mul_(grad)
    st.acc_delta:mul_(rho):addcmul_(delta, delta, { value = 1 - rho })
    p:add_(delta, { alpha = -g.lr })
  end,
})
