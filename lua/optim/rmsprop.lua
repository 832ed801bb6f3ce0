-- optim.RMSprop (centered, momentum, weight_decay, maximize) as PyTorch 1.13's torch.optim.RMSprop,
-- over tensor ops in PyTorch's order (state: step, square_avg, momentum_buffer, grad_avg).
local torch = require 'moontorch'
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
    if g.maximize then grad = -grad end
    if g.weight_decay ~= 0 then grad = grad:add(p, { alpha = g.weight_decay }) end
    local alpha = g.alpha
    st.square_avg:mul_(alpha):addcmul_(grad, grad, { value = 1 - alpha })
    local avg
    if g.centered then
      st.grad_avg:mul_(alpha):add_(grad, { alpha = 1 - alpha })
      avg = st.square_avg:addcmul(st.grad_avg, st.grad_avg, { value = -1 }):sqrt_()
    else
      avg = st.square_avg:sqrt()
    end
    avg:add_(g.eps)
    if g.momentum > 0 then
      local buf = st.momentum_buffer
      buf:mul_(g.momentum):addcdiv_(grad, avg)
      p:add_(buf, { alpha = -g.lr })
    else
      p:addcdiv_(grad, avg, { value = -g.lr })
    end
  end,
})
