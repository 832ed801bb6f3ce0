-- optim.ASGD (lambd, alpha, t0, weight_decay, maximize) as PyTorch 1.13's torch.optim.ASGD, over
-- tensor ops in PyTorch's order (state: step, eta and mu -- float32 scalar tensors, as PyTorch's --,
-- ax: the averaged parameter).
local torch = require 'moontorch'
local common = require 'moontorch.optim.common'
local check, pystr = common.check, common.pystr

return common.define('ASGD', {
  defaults = { lr = 1e-2, lambd = 1e-4, alpha = 0.75, t0 = 1e6, weight_decay = 0, foreach = common.NONE,
    maximize = false },
  validate = function(o)
    for _, k in ipairs { 'lr', 'lambd', 'alpha', 't0', 'weight_decay' } do common.number('ASGD', k, o[k]) end
    check('ASGD', o.lr >= 0, 'Invalid learning rate: ' .. pystr(o.lr))
    check('ASGD', o.weight_decay >= 0, 'Invalid weight_decay value: ' .. pystr(o.weight_decay))
  end,
  new_state = function(g, p)
    return { step = common.counter(), eta = common.counter(g.lr), mu = common.counter(1), ax = torch.zeros_like(p) }
  end,
  update = function(g, p, grad, st)
    if g.maximize then grad = -grad end
    local step = common.tick(st.step)
    if g.weight_decay ~= 0 then grad = grad:add(p, { alpha = g.weight_decay }) end
    local eta = st.eta:item()
    p:mul_(1 - g.lambd * eta)
    p:add_(grad, { alpha = -eta })
    local mu = st.mu:item()
    if mu ~= 1 then
      st.ax:add_(p:sub(st.ax):mul(mu))
    else
      st.ax:copy_(p)
    end
    st.eta:fill_(g.lr / (1 + g.lambd * g.lr * step) ^ g.alpha)
    st.mu:fill_(1 / math.max(1, step - g.t0))
  end,
})
