-- optim.Adam and optim.AdamW: Adam with amsgrad, maximize and weight decay (L2 for Adam, decoupled
-- for AdamW), as PyTorch 1.13's torch.optim.Adam / AdamW. Each parameter's update is one call to
-- the fused step mt_adam_step (core/optim/adam.c, its kernel core/tensor/adam.c), which takes the
-- parameter's .grad and increments its state's step counter; a group's settings travel in one
-- mt_adam_settings.
local ffi = require 'ffi'
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local optim = require 'moontorch.optim'
local common = require 'moontorch.optim.common'

local C, fail, raise_last = core.C, core.fail, core.raise_last
local type = type

local settings = ffi.new('mt_adam_settings') -- the group being stepped

local function define(name, decoupled, default_wd)
  local cls, Optimizer = torch.class('optim.' .. name, 'optim.Optimizer', optim)
  cls._none_options = { 'foreach' }

  -- optim.<name>(params, {lr=1e-3, betas={0.9, 0.999}, eps=1e-8, weight_decay=<0 | 1e-2>,
  -- amsgrad=false, maximize=false}) (also (params, lr, {...}))
  function cls:__init(params, opts, more)
    local o = common.options(name, opts, more, { lr = 1e-3, betas = { 0.9, 0.999 }, eps = 1e-8,
      weight_decay = default_wd, amsgrad = false, maximize = false, foreach = common.NONE, capturable = false,
      differentiable = false, fused = false })
    common.number(name, 'lr', o.lr)
    common.number(name, 'eps', o.eps)
    common.number(name, 'weight_decay', o.weight_decay)
    common.check(name, o.lr >= 0, 'Invalid learning rate: ' .. common.pystr(o.lr))
    common.check(name, o.eps >= 0, 'Invalid epsilon value: ' .. common.pystr(o.eps))
    common.betas(name, o.betas)
    common.check(name, o.weight_decay >= 0, 'Invalid weight_decay value: ' .. common.pystr(o.weight_decay))
    if name == 'AdamW' then o.fused, o.differentiable = nil, nil end -- (PyTorch 1.13's AdamW has neither)
    Optimizer.__init(self, params, o)
  end

  -- step(closure): one update of every parameter that has a gradient; returns closure's loss
  function cls:step(closure)
    local loss = common.call_closure(closure)
    local state = self.state
    for _, g in ipairs(self.param_groups) do
      local b = g.betas
      if type(g.lr) ~= 'number' or type(g.eps) ~= 'number' or type(g.weight_decay) ~= 'number'
        or type(b) ~= 'table' then
        fail('optim.' .. name .. ':step', 'lr, betas, eps and weight_decay of every parameter group must be numbers')
      end
      settings.lr, settings.beta1, settings.beta2 = g.lr, b[1], b[2]
      settings.eps, settings.weight_decay = g.eps, g.weight_decay
      settings.amsgrad, settings.maximize, settings.decoupled = g.amsgrad and 1 or 0, g.maximize and 1 or 0, decoupled
      local ps = g.params
      for i = 1, #ps do
        local p = ps[i]
        local grad = p.grad
        if grad ~= nil then
          if grad.is_sparse then
            fail('optim.' .. name .. ':step', name .. ' does not support sparse gradients')
          end
          local st = state[p]
          if st == nil or st.exp_avg == nil then
            st = { step = common.counter(), exp_avg = torch.zeros_like(p),
              exp_avg_sq = torch.zeros_like(p) }
            if g.amsgrad then st.max_exp_avg_sq = torch.zeros_like(p) end
            state[p] = st
          end
          if g.amsgrad and st.max_exp_avg_sq == nil then
            fail('optim.' .. name .. ':step', "amsgrad is set but the state holds no 'max_exp_avg_sq'")
          end
          if C.mt_adam_step(p, grad, st.exp_avg, st.exp_avg_sq, st.max_exp_avg_sq, st.step, settings) ~= 0 then
            raise_last()
          end
        end
      end
    end
    return loss
  end
  return cls
end

define('Adam', 0, 0)
define('AdamW', 1, 1e-2)
