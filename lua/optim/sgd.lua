-- optim.SGD: stochastic gradient descent with momentum, dampening, Nesterov momentum, weight
-- decay and maximize, as PyTorch 1.13's torch.optim.SGD. Each parameter's update is one call to
-- the fused step mt_sgd_step (core/optim/sgd.c, its kernel core/tensor/sgd.c), which takes the
-- parameter's .grad itself; a group's settings travel in one mt_sgd_settings.
local ffi = require 'ffi'
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local optim = require 'moontorch.optim'

local C, fail, raise_last = core.C, core.fail, core.raise_last
local type, pairs, pcall, error = type, pairs, pcall, error

local SGD, Optimizer = torch.class('optim.SGD', 'optim.Optimizer', optim)
local settings = ffi.new('mt_sgd_settings') -- the group being stepped

local options = { lr = true, momentum = true, dampening = true, weight_decay = true, nesterov = true,
  maximize = true, foreach = true, differentiable = true }
SGD._none_options = { 'foreach' } -- PyTorch's default None, printed as such

-- SGD(params, {lr=, momentum=0, dampening=0, weight_decay=0, nesterov=false, maximize=false})
-- (also SGD(params, lr, {...}))
function SGD:__init(params, opts, more)
  if type(opts) == 'number' then
    local lr = opts
    opts = {}
    for k, v in pairs(more or {}) do opts[k] = v end
    opts.lr = lr
  end
  opts = opts or {}
  if type(opts) ~= 'table' then fail('optim.SGD', 'expected a table of options, got ' .. type(opts)) end
  for k in pairs(opts) do
    if not options[k] then fail('optim.SGD', ("unexpected option '%s'"):format(tostring(k))) end
  end
  local lr = opts.lr
  if lr == nil then lr = optim.required end
  local momentum, dampening, weight_decay = opts.momentum or 0, opts.dampening or 0, opts.weight_decay or 0
  for _, kv in ipairs { { 'momentum', momentum }, { 'dampening', dampening }, { 'weight_decay', weight_decay } } do
    if type(kv[2]) ~= 'number' then fail('optim.SGD', kv[1] .. ' must be a number, got ' .. type(kv[2])) end
  end
  if lr ~= optim.required then
    if type(lr) ~= 'number' then fail('optim.SGD', 'lr must be a number, got ' .. type(lr)) end
    if lr < 0 then fail('optim.SGD', 'Invalid learning rate: ' .. optim._pystr(lr)) end
  end
  if momentum < 0 then fail('optim.SGD', 'Invalid momentum value: ' .. optim._pystr(momentum)) end
  if weight_decay < 0 then fail('optim.SGD', 'Invalid weight_decay value: ' .. optim._pystr(weight_decay)) end
  local nesterov, maximize = opts.nesterov or false, opts.maximize or false
  local defaults = { lr = lr, momentum = momentum, dampening = dampening, weight_decay = weight_decay,
    nesterov = nesterov, maximize = maximize, foreach = opts.foreach, differentiable = opts.differentiable or false }
  if opts.differentiable then
    -- the fused kernel records no graph; PyTorch's differentiable=True steps through autograd
    fail('optim.SGD', 'differentiable=true is not supported (the update is a fused kernel that records no graph)')
  end
  if nesterov and (momentum <= 0 or dampening ~= 0) then
    fail('optim.SGD', 'Nesterov momentum requires a momentum and zero dampening')
  end
  Optimizer.__init(self, params, defaults)
end

-- closure() runs with gradients enabled (the step itself records nothing)
local function call_closure(closure)
  local prev = C.mt_is_grad_enabled()
  C.mt_set_grad_enabled(1)
  local ok, loss = pcall(closure)
  C.mt_set_grad_enabled(prev)
  if not ok then error(loss, 0) end
  return loss
end

local function check_group(g)
  local lr, m, d, wd = g.lr, g.momentum, g.dampening, g.weight_decay
  if type(lr) ~= 'number' or type(m) ~= 'number' or type(d) ~= 'number' or type(wd) ~= 'number' then
    fail('optim.SGD:step', 'lr, momentum, dampening and weight_decay of every parameter group must be numbers')
  end
end

-- a parameter's first update, or its first with momentum: PyTorch makes the momentum buffer from
-- this step's direction (no dampening)
local function first_step(state, p, st, mom)
  local grad = p.grad
  if grad == nil then return end -- no gradient, no step and no state
  if st == nil then
    st = {}
    state[p] = st
  end
  local buf = nil
  if mom ~= 0 then
    buf = torch.empty_like(grad)
    st.momentum_buffer = buf
  end
  if C.mt_sgd_step(p, grad, buf, settings, 1) ~= 0 then raise_last() end
end

-- step(closure): one update of every parameter that has a gradient; returns closure's loss
function SGD:step(closure)
  local loss
  if closure ~= nil then loss = call_closure(closure) end
  local groups, state = self.param_groups, self.state
  for gi = 1, #groups do
    local g = groups[gi]
    check_group(g)
    local mom = g.momentum
    settings.lr, settings.momentum, settings.dampening, settings.weight_decay = g.lr, mom, g.dampening, g.weight_decay
    settings.nesterov, settings.maximize = g.nesterov and 1 or 0, g.maximize and 1 or 0
    local ps = g.params
    for i = 1, #ps do
      local p = ps[i]
      local st = state[p]
      local buf = nil
      if st ~= nil and mom ~= 0 then buf = st.momentum_buffer end
      if st == nil or (mom ~= 0 and buf == nil) then
        first_step(state, p, st, mom)
      elseif C.mt_sgd_step(p, nil, buf, settings, 0) ~= 0 then
        raise_last()
      end
    end
  end
  return loss
end

return SGD
