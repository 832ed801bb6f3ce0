-- optim.NAdam (betas, eps, weight_decay, momentum_decay) as PyTorch 1.13's torch.optim.NAdam, over
-- tensor ops in PyTorch's order (state: step, mu_product -- a float32 scalar tensor, as PyTorch's --,
-- exp_avg, exp_avg_sq).
local torch = require 'moontorch'
local common = require 'moontorch.optim.common'
local check, pystr = common.check, common.pystr

return common.define('NAdam', {
  defaults = { lr = 2e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, momentum_decay = 4e-3,
    foreach = common.NONE },
  validate = function(o)
    for _, k in ipairs { 'lr', 'eps', 'weight_decay', 'momentum_decay' } do common.number('NAdam', k, o[k]) end
    check('NAdam', o.lr >= 0, 'Invalid learning rate: ' .. pystr(o.lr))
    check('NAdam', o.eps >= 0, 'Invalid epsilon value: ' .. pystr(o.eps))
    common.betas('NAdam', o.betas)
    check('NAdam', o.weight_decay >= 0, 'Invalid weight_decay value: ' .. pystr(o.weight_decay))
    check('NAdam', o.momentum_decay >= 0, 'Invalid momentum_decay value: ' .. pystr(o.momentum_decay))
  end,
  new_state = function(g, p)
    return { step = common.counter(), mu_product = common.counter(1), exp_avg = torch.zeros_like(p),
      exp_avg_sq = torch.zeros_like(p) }
  end,
  update = function(g, p, grad, st)
    local step = common.tick(st.step)
    local b1, b2 = g.betas[1], g.betas[2]
    local bias_correction2 = 1 - b2 ^ step
    if g.weight_decay ~= 0 then grad = grad:add(p, { alpha = g.weight_decay }) end
    local mu = b1 * (1 - 0.5 * 0.96 ^ (step * g.momentum_decay))
    local mu_next = b1 * (1 - 0.5 * 0.96 ^ ((step + 1) * g.momentum_decay))
    st.mu_product:mul_(mu)
    local mu_product_next = st.mu_product:mul(mu):mul(mu_next)
    st.exp_avg:mul_(b1):add_(grad, { alpha = 1 - b1 })
    st.exp_avg_sq:mul_(b2):addcmul_(grad, grad, { value = 1 - b2 })
    local denom = st.exp_avg_sq:div(bias_correction2):sqrt():add_(g.eps)
    p:addcdiv_(grad, denom, { value = -g.lr * (1 - mu) / (1 - st.mu_product:item()) })
    p:addcdiv_(st.exp_avg, denom, { value = -g.lr * mu_next / (1 - mu_product_next:item()) })
  end,
})
