-- What the optimizers of lua/optim/ share beyond optim.Optimizer: reading a constructor's options
-- (PyTorch's defaults, unknown names refused, PyTorch's "Invalid ..." messages naming the
-- optimizer), running step's closure with gradients enabled, and the step counters of the state.
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local optim = require 'moontorch.optim'

local C, fail = core.C, core.fail
local type, pairs, ipairs, pcall, error, tostring, next = type, pairs, ipairs, pcall, error, tostring, next

local M = {}

-- PyTorch's None: a default that is absent from the groups (printed as None)
M.NONE = setmetatable({}, { __tostring = function() return 'None' end })

-- options(name, opts, more, defaults): the table of hyperparameters of optim.<name>(params, opts)
-- or optim.<name>(params, lr, opts): every name known to `defaults`, missing ones defaulted (a
-- table default is copied), M.NONE ones left out
function M.options(name, opts, more, defaults)
  local op = 'optim.' .. name
  if type(opts) == 'number' then
    local lr = opts
    opts = {}
    if more ~= nil and type(more) ~= 'table' then fail(op, 'expected a table of options, got ' .. type(more)) end
    for k, v in pairs(more or {}) do opts[k] = v end
    opts.lr = lr
  end
  opts = opts or {}
  if type(opts) ~= 'table' then fail(op, 'expected a table of options, got ' .. type(opts)) end
  for k in pairs(opts) do
    if defaults[k] == nil then fail(op, ("unexpected option '%s'"):format(tostring(k))) end
  end
  local out = {}
  for k, d in pairs(defaults) do
    local v = opts[k]
    if v == nil then
      if type(d) == 'table' and d ~= M.NONE and d ~= optim.required then
        v = { d[1], d[2] }
      elseif d ~= M.NONE then
        v = d
      end
    elseif type(v) == 'table' and not torch.is_tensor(v) then
      local copy = {}
      for i, x in ipairs(v) do copy[i] = x end
      v = copy
    end
    out[k] = v
  end
  if out.differentiable then
    fail(op, 'differentiable=true is not supported (the update records no graph)')
  end
  if out.capturable then fail(op, 'capturable=true is not supported (CUDA graphs only)') end
  if out.fused then fail(op, 'fused=true is not supported (PyTorch: CUDA only)') end
  return out
end

-- number(name, key, v): v must be a number
function M.number(name, key, v)
  if type(v) ~= 'number' then fail('optim.' .. name, key .. ' must be a number, got ' .. type(v)) end
  return v
end

-- check(name, ok, message): PyTorch's ValueError, naming the optimizer
function M.check(name, ok, message)
  if not ok then fail('optim.' .. name, message) end
end

M.pystr = optim._pystr

-- betas(name, b): a pair of numbers in [0, 1)
function M.betas(name, b, key)
  key = key or 'betas'
  if type(b) ~= 'table' or type(b[1]) ~= 'number' or type(b[2]) ~= 'number' then
    fail('optim.' .. name, key .. ' must be a pair of numbers')
  end
  M.check(name, 0 <= b[1] and b[1] < 1, 'Invalid beta parameter at index 0: ' .. M.pystr(b[1]))
  M.check(name, 0 <= b[2] and b[2] < 1, 'Invalid beta parameter at index 1: ' .. M.pystr(b[2]))
end

-- closure() runs with gradients enabled (the step itself records nothing)
function M.call_closure(closure)
  if closure == nil then return nil end
  local prev = C.mt_is_grad_enabled()
  C.mt_set_grad_enabled(1)
  local ok, loss = pcall(closure)
  C.mt_set_grad_enabled(prev)
  if not ok then error(loss, 0) end
  return loss
end

-- the parameters of a group that have a gradient (PyTorch skips the others)
function M.with_grad(g)
  local out = {}
  for _, p in ipairs(g.params) do
    if p.grad ~= nil then out[#out + 1] = p end
  end
  return out
end

-- a new step counter as PyTorch 1.13's torch.tensor(0.) (float32, on the CPU)
function M.counter(v)
  return torch.tensor(v or 0, { dtype = torch.float32 })
end

-- counter += 1; its new value as a number (PyTorch: step_t += 1; step_t.item())
function M.tick(t)
  t:add_(1)
  return t:item()
end

-- define(name, spec): optim.<name>, an optimizer whose update is written over tensor ops:
--   spec.defaults       its hyperparameters and their defaults (M.NONE: PyTorch's None)
--   spec.validate(o)    PyTorch's constructor checks, through M.check(name, ...)
--   spec.new_state(g, p, grad)   a parameter's state at its first step
--   spec.update(g, p, grad, st)  one update of p (gradients disabled, in place)
--   spec.after_init(self)  (optional) what the constructor does once the groups are made
-- step(closure) runs the closure, then update for each parameter that has a gradient.
function M.define(name, spec)
  local cls, Optimizer = torch.class('optim.' .. name, 'optim.Optimizer', optim)
  cls._none_options = { 'foreach' }
  function cls:__init(params, opts, more)
    local o = M.options(name, opts, more, spec.defaults)
    spec.validate(o)
    Optimizer.__init(self, params, o)
    if spec.after_init then spec.after_init(self) end
  end
  local sop = 'optim.' .. name .. ':step'
  function cls:step(closure)
    local loss = M.call_closure(closure)
    local state = self.state
    local prev = C.mt_is_grad_enabled()
    C.mt_set_grad_enabled(0)
    local ok, err = pcall(function()
      for _, g in ipairs(self.param_groups) do
        for _, p in ipairs(g.params) do
          local grad = p.grad
          if grad ~= nil then
            if grad.is_sparse then fail(sop, name .. ' does not support sparse gradients') end
            local st = state[p]
            if st == nil or next(st) == nil then
              st = spec.new_state(g, p, grad)
              state[p] = st
            end
            spec.update(g, p, grad, st)
          end
        end
      end
    end)
    C.mt_set_grad_enabled(prev)
    if not ok then error(err, 0) end
    return loss
  end
  return cls
end

return M
