-- optim.Rprop (etas, step_sizes, maximize) as PyTorch 1.13's torch.optim.Rprop, over tensor ops in
-- PyTorch's order (state: step, prev, step_size).
local torch = require 'moontorch'
local common = require 'moontorch.optim.common'
local check, pystr = common.check, common.pystr

return common.define('Rprop', {
  defaults = { lr = 1e-2, etas = { 0.5, 1.2 }, step_sizes = { 1e-6, 50 }, foreach = common.NONE, maximize = false },
  validate = function(o)
    common.number('Rprop', 'lr', o.lr)
    for _, k in ipairs { 'etas', 'step_sizes' } do
      local v = o[k]
      if type(v) ~= 'table' or type(v[1]) ~= 'number' or type(v[2]) ~= 'number' then
        common.check('Rprop', false, k .. ' must be a pair of numbers')
      end
    end
    check('Rprop', o.lr >= 0, 'Invalid learning rate: ' .. pystr(o.lr))
    local e = o.etas
    check('Rprop', 0 < e[1] and e[1] < 1 and 1 < e[2], ('Invalid eta values: %s, %s'):format(pystr(e[1]), pystr(e[2])))
  end,
  new_state = function(g, p, grad)
    return { step = 0, prev = torch.zeros_like(p), step_size = torch.full_like(grad, g.lr) }
  end,
  update = function(g, p, grad, st)
    st.step = st.step + 1
    if g.maximize then grad = -grad end
    local etaminus, etaplus = g.etas[1], g.etas[2]
    local s = grad:mul(st.prev):sign()
    local factor = s:clone()
    factor:masked_fill_(s:gt(0), etaplus)
    factor:masked_fill_(s:lt(0), etaminus)
    factor:masked_fill_(s:eq(0), 1)
    st.step_size:mul_(factor):clamp_(g.step_sizes[1], g.step_sizes[2])
    grad = grad:clone()
    grad:masked_fill_(factor:eq(etaminus), 0)
    p:addcmul_(grad:sign(), st.step_size, { value = -1 })
    st.prev:copy_(grad)
  end,
})
