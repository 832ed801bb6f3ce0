-- optim.RAdam (betas, eps, weight_decay) as PyTorch 1.13's torch.optim.RAdam, over tensor ops in
-- PyTorch's order (state: step, exp_avg, exp_avg_sq): the rectified step once rho_t > 5, plain
-- momentum SGD before.
local torch = require 'moontorch'
local common = require 'moontorch.optim.common'
local check, pystr = common.check, common.pystr

return common.define('RAdam', {
  defaults = { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8, weight_decay = 0, foreach = common.NONE },
  validate = function(o)
    for _, k in ipairs { 'lr', 'eps', 'weight_decay' } do common.number('RAdam', k, o[k]) end
    check('RAdam', o.lr >= 0, 'Invalid learning rate: ' .. pystr(o.lr))
    check('RAdam', o.eps >= 0, 'Invalid epsilon value: ' .. pystr(o.eps))
    common.betas('RAdam', o.betas)
    check('RAdam', o.weight_decay >= 0, 'Invalid weight_decay value: ' .. pystr(o.weight_decay))
  end,
  new_state = function(g, p)
    return { step = common.counter(), exp_avg = torch.zeros_like(p), exp_avg_sq = torch.zeros_like(p) }
  end,
  update = function(g, p, grad, st)
    local step = common.tick(st.step)
    local b1, b2 = g.betas[1], g.betas[2]
    local bc1, bc2 = 1 - b1 ^ step, 1 - b2 ^ step
    if g.weight_decay ~= 0 then grad = grad:add(p, { alpha = g.weight_decay }) end
    st.exp_avg:mul_(b1):add_(grad, { alpha = 1 - b1 })
    st.exp_avg_sq:mul_(b2):addcmul_(grad, grad, { value = 1 - b2 })
    local corrected = st.exp_avg:div(bc1)
    local rho_inf = 2 / (1 - b2) - 1
    local rho_t = rho_inf - 2 * step * (b2 ^ step) / bc2
    if rho_t > 5 then
      local rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
      -- Python's scalar / tensor is tensor.reciprocal() * scalar
      local adaptive_lr = st.exp_avg_sq:sqrt():add_(g.eps):reciprocal():mul(math.sqrt(bc2))
      p:add_(corrected:mul(g.lr):mul(adaptive_lr):mul(rect), { alpha = -1 })
    else
      p:add_(corrected:mul(g.lr), { alpha = -1 })
    end
  end,
})
