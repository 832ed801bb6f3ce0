-- optim.Adamax (betas, eps, weight_decay, maximize) as PyTorch 1.13's torch.optim.Adamax, over
-- tensor ops in PyTorch's order (state: step, exp_avg, exp_inf).
local torch = require 'moontorch'
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
    local step = common.tick(st.step)
    if g.maximize then grad = -grad end
    if g.weight_decay ~= 0 then grad = grad:add(p, { alpha = g.weight_decay }) end
    local b1, b2 = g.betas[1], g.betas[2]
    st.exp_avg:mul_(b1):add_(grad, { alpha = 1 - b1 })
    st.exp_inf:mul_(b2)
    st.exp_inf:copy_(torch.maximum(st.exp_inf, grad:abs():add_(g.eps)))
    local clr = g.lr / (1 - b1 ^ step)
    p:addcdiv_(st.exp_avg, st.exp_inf, { value = -clr })
  end,
})
