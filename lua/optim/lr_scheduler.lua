-- optim.lr_scheduler: the learning-rate schedulers of PyTorch 1.13's torch.optim.lr_scheduler, with
-- its recursive formulas (each step works from the groups' current lr, so the sequence of rates is
-- PyTorch's to the last bit) and the closed forms PyTorch uses for step(epoch). A scheduler's
-- state_dict is every field but the optimizer, as PyTorch's __dict__ (LambdaLR and
-- MultiplicativeLR keep no functions: a callable table's fields are kept, a function's place is
-- false, PyTorch's None). Arguments: PyTorch's positional ones, or a trailing options table
-- (StepLR(opt, 30, 0.1) or StepLR(opt, {step_size=30, gamma=0.1})).
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local class = require 'moontorch.class'
local optim = require 'moontorch.optim'

local fail = core.fail
local type, pairs, ipairs, select, math, tostring = type, pairs, ipairs, select, math, tostring
local pi, cos, floor = math.pi, math.cos, math.floor

local lr_scheduler = {}
optim.lr_scheduler = lr_scheduler

------------------------------------------------------------------------------ helpers
local function is_options(v)
  if type(v) ~= 'table' or getmetatable(v) ~= nil then return false end
  for k in pairs(v) do
    if type(k) == 'string' then return true end
  end
  return false
end

-- args(op, names, defaults, ...): positional values, then an optional options table, by name
local function args(op, names, defaults, ...)
  local n = select('#', ...)
  local opts = n > 0 and is_options((select(n, ...))) and (select(n, ...)) or nil
  if opts then n = n - 1 end
  if n > #names then fail(op, ('expected at most %d arguments, got %d'):format(#names, n)) end
  local out, known = {}, {}
  for i, name in ipairs(names) do
    known[name] = true
    local v = (select(i, ...))
    if i > n then v = nil end
    out[name] = v
  end
  for k, v in pairs(opts or {}) do
    if not known[k] then fail(op, ("unexpected argument '%s'"):format(tostring(k))) end
    if out[k] ~= nil then fail(op, ("got multiple values for argument '%s'"):format(k)) end
    out[k] = v
  end
  for k, d in pairs(defaults) do
    if out[k] == nil then out[k] = d end
  end
  return out
end

local function need_optimizer(op, o)
  if not class.isinstance(o, 'optim.Optimizer') then
    fail(op, ('%s is not an Optimizer'):format(class.typename(o) or type(o)))
  end
end

local function group_lrs(self)
  local out = {}
  for i, g in ipairs(self.optimizer.param_groups) do out[i] = g.lr end
  return out
end

-- a value per group: a list of them, or one for all
local function per_group(op, name, optimizer, v)
  local n = #optimizer.param_groups
  if type(v) == 'table' then
    if #v ~= n then fail(op, ('expected %d values for %s, got %d'):format(n, name, #v)) end
    local out = {}
    for i = 1, n do out[i] = v[i] end
    return out
  end
  local out = {}
  for i = 1, n do out[i] = v end
  return out
end

local function copy(v)
  if type(v) ~= 'table' or getmetatable(v) ~= nil then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = copy(x) end
  return out
end

local function python_number(v) -- Python's '%.5d' / '%.2f' of an epoch in verbose messages
  if v == floor(v) then return ('%05d'):format(v) end
  return ('%.2f'):format(v)
end

------------------------------------------------------------------------------ LRScheduler
-- PyTorch's _LRScheduler: base_lrs from each group's initial_lr (set from lr on a fresh start),
-- last_epoch, and a first step at construction.
local LRScheduler = torch.class('optim.lr_scheduler.LRScheduler', nil, lr_scheduler)
lr_scheduler._LRScheduler = LRScheduler

function LRScheduler:_setup(op, optimizer, last_epoch, verbose)
  need_optimizer(op, optimizer)
  self.optimizer = optimizer
  last_epoch = last_epoch or -1
  if type(last_epoch) ~= 'number' then fail(op, 'last_epoch must be a number') end
  if last_epoch == -1 then
    for _, g in ipairs(optimizer.param_groups) do
      if g.initial_lr == nil then g.initial_lr = g.lr end
    end
  else
    for i, g in ipairs(optimizer.param_groups) do
      if g.initial_lr == nil then
        fail(op, ("param 'initial_lr' is not specified in param_groups[%d] when resuming an optimizer"):format(i - 1))
      end
    end
  end
  local base = {}
  for i, g in ipairs(optimizer.param_groups) do base[i] = g.initial_lr end
  self.base_lrs = base
  self.last_epoch = last_epoch
  self.verbose = verbose or false
  self:_initial_step()
end

function LRScheduler:_initial_step()
  self.optimizer._step_count = 0
  self._step_count = 0
  self:step()
end

function LRScheduler:get_last_lr() return self._last_lr end

function LRScheduler:get_lr()
  fail(self.__typename .. ':get_lr', 'not implemented by this scheduler')
end

function LRScheduler:print_lr(is_verbose, group, lr, epoch)
  if not is_verbose then return end
  if epoch == nil then
    print(('Adjusting learning rate of group %d to %.4e.'):format(group, lr))
  else
    print(('Epoch %s: adjusting learning rate of group %d to %.4e.'):format(python_number(epoch), group, lr))
  end
end

-- step() or step(epoch) (PyTorch's deprecated form: the closed form where there is one)
function LRScheduler:step(epoch)
  self._step_count = self._step_count + 1
  local values
  if epoch == nil then
    self.last_epoch = self.last_epoch + 1
    values = self:get_lr()
  else
    if type(epoch) ~= 'number' then fail(self.__typename .. ':step', 'epoch must be a number') end
    self.last_epoch = epoch
    if self._get_closed_form_lr then values = self:_get_closed_form_lr() else values = self:get_lr() end
  end
  for i, g in ipairs(self.optimizer.param_groups) do
    g.lr = values[i]
    self:print_lr(self.verbose, i - 1, values[i], epoch)
  end
  self._last_lr = group_lrs(self)
end

-- every field but the optimizer (and what a subclass leaves out)
function LRScheduler:state_dict()
  local sd = {}
  for k, v in pairs(self) do
    if k ~= 'optimizer' then sd[k] = copy(v) end
  end
  return sd
end

function LRScheduler:load_state_dict(sd)
  if type(sd) ~= 'table' then fail(self.__typename .. ':load_state_dict', 'expected a state dict (a table)') end
  for k, v in pairs(sd) do
    if k ~= 'optimizer' then self[k] = copy(v) end
  end
end

function LRScheduler:__tostring()
  return self.__typename:match('([^.]+)$')
end

local function define(name)
  local cls = torch.class('optim.lr_scheduler.' .. name, 'optim.lr_scheduler.LRScheduler', lr_scheduler)
  return cls, 'optim.lr_scheduler.' .. name
end

------------------------------------------------------------------------------ LambdaLR, MultiplicativeLR
local function lambdas(op, optimizer, f)
  local n = #optimizer.param_groups
  local list = {}
  if type(f) == 'table' and getmetatable(f) == nil then
    if #f ~= n then fail(op, ('Expected %d lr_lambdas, but got %d'):format(n, #f)) end
    for i = 1, n do list[i] = f[i] end
  else
    for i = 1, n do list[i] = f end
  end
  for i = 1, n do
    local fi = list[i]
    local mt = type(fi) == 'table' and getmetatable(fi)
    if type(fi) ~= 'function' and not (mt and mt.__call) then fail(op, 'lr_lambda must be a function') end
  end
  return list
end

-- the functions are not saved: a callable table's fields are, a function's place holds false
local function lambda_state_dict(self)
  local sd = {}
  for k, v in pairs(self) do
    if k ~= 'optimizer' and k ~= 'lr_lambdas' then sd[k] = copy(v) end
  end
  local saved = {}
  for i, f in ipairs(self.lr_lambdas) do
    if type(f) == 'table' then
      local fields = {}
      for k, v in pairs(f) do fields[k] = copy(v) end
      saved[i] = fields
    else
      saved[i] = false
    end
  end
  sd.lr_lambdas = saved
  return sd
end

local function lambda_load_state_dict(self, sd)
  for k, v in pairs(sd) do
    if k ~= 'optimizer' and k ~= 'lr_lambdas' then self[k] = copy(v) end
  end
  for i, fields in ipairs(sd.lr_lambdas or {}) do
    if fields and type(self.lr_lambdas[i]) == 'table' then
      for k, v in pairs(fields) do self.lr_lambdas[i][k] = copy(v) end
    end
  end
end

do
  local LambdaLR, op = define('LambdaLR')
  -- LambdaLR(optimizer, lr_lambda, last_epoch=-1, verbose=false): lr = base_lr * lr_lambda(epoch)
  function LambdaLR:__init(optimizer, ...)
    local a = args(op, { 'lr_lambda', 'last_epoch', 'verbose' }, {}, ...)
    need_optimizer(op, optimizer)
    self.lr_lambdas = lambdas(op, optimizer, a.lr_lambda)
    self:_setup(op, optimizer, a.last_epoch, a.verbose)
  end
  function LambdaLR:get_lr()
    local out = {}
    for i, base in ipairs(self.base_lrs) do out[i] = base * self.lr_lambdas[i](self.last_epoch) end
    return out
  end
  LambdaLR.state_dict, LambdaLR.load_state_dict = lambda_state_dict, lambda_load_state_dict

  local MultiplicativeLR, mop = define('MultiplicativeLR')
  -- MultiplicativeLR(optimizer, lr_lambda): lr = lr * lr_lambda(epoch) from the second epoch
  function MultiplicativeLR:__init(optimizer, ...)
    local a = args(mop, { 'lr_lambda', 'last_epoch', 'verbose' }, {}, ...)
    need_optimizer(mop, optimizer)
    self.lr_lambdas = lambdas(mop, optimizer, a.lr_lambda)
    self:_setup(mop, optimizer, a.last_epoch, a.verbose)
  end
  function MultiplicativeLR:get_lr()
    local out = {}
    for i, g in ipairs(self.optimizer.param_groups) do
      out[i] = self.last_epoch > 0 and g.lr * self.lr_lambdas[i](self.last_epoch) or g.lr
    end
    return out
  end
  MultiplicativeLR.state_dict, MultiplicativeLR.load_state_dict = lambda_state_dict, lambda_load_state_dict
end

------------------------------------------------------------------------------ StepLR, MultiStepLR
do
  local StepLR, op = define('StepLR')
  -- StepLR(optimizer, step_size, gamma=0.1): times gamma every step_size epochs
  function StepLR:__init(optimizer, ...)
    local a = args(op, { 'step_size', 'gamma', 'last_epoch', 'verbose' }, { gamma = 0.1 }, ...)
    if type(a.step_size) ~= 'number' then fail(op, 'step_size must be a number') end
    self.step_size, self.gamma = a.step_size, a.gamma
    self:_setup(op, optimizer, a.last_epoch, a.verbose)
  end
  function StepLR:get_lr()
    local e = self.last_epoch
    local out = {}
    for i, g in ipairs(self.optimizer.param_groups) do
      out[i] = (e == 0 or e % self.step_size ~= 0) and g.lr or g.lr * self.gamma
    end
    return out
  end
  function StepLR:_get_closed_form_lr()
    local out = {}
    for i, base in ipairs(self.base_lrs) do out[i] = base * self.gamma ^ floor(self.last_epoch / self.step_size) end
    return out
  end

  local MultiStepLR, mop = define('MultiStepLR')
  -- MultiStepLR(optimizer, milestones, gamma=0.1): times gamma at each milestone (a repeated
  -- milestone counts as many times). milestones: {[epoch] = count}, as PyTorch's Counter.
  function MultiStepLR:__init(optimizer, ...)
    local a = args(mop, { 'milestones', 'gamma', 'last_epoch', 'verbose' }, { gamma = 0.1 }, ...)
    if type(a.milestones) ~= 'table' then fail(mop, 'milestones must be a list of epochs') end
    local counter = {}
    for _, m in ipairs(a.milestones) do counter[m] = (counter[m] or 0) + 1 end
    self.milestones, self.gamma = counter, a.gamma
    self:_setup(mop, optimizer, a.last_epoch, a.verbose)
  end
  function MultiStepLR:get_lr()
    local n = self.milestones[self.last_epoch]
    local out = {}
    for i, g in ipairs(self.optimizer.param_groups) do out[i] = n and g.lr * self.gamma ^ n or g.lr end
    return out
  end
  function MultiStepLR:_get_closed_form_lr()
    local passed = 0 -- bisect_right over the sorted milestones
    for m, n in pairs(self.milestones) do
      if m <= self.last_epoch then passed = passed + n end
    end
    local out = {}
    for i, base in ipairs(self.base_lrs) do out[i] = base * self.gamma ^ passed end
    return out
  end
end

------------------------------------------------------------------------------ ConstantLR, LinearLR
do
  local ConstantLR, op = define('ConstantLR')
  -- ConstantLR(optimizer, factor=1/3, total_iters=5): times factor until total_iters
  function ConstantLR:__init(optimizer, ...)
    local a = args(op, { 'factor', 'total_iters', 'last_epoch', 'verbose' }, { factor = 1.0 / 3, total_iters = 5 }, ...)
    if a.factor > 1.0 or a.factor < 0 then
      fail(op, 'Constant multiplicative factor expected to be between 0 and 1.')
    end
    self.factor, self.total_iters = a.factor, a.total_iters
    self:_setup(op, optimizer, a.last_epoch, a.verbose)
  end
  function ConstantLR:get_lr()
    local e, out = self.last_epoch, {}
    for i, g in ipairs(self.optimizer.param_groups) do
      if e == 0 then out[i] = g.lr * self.factor
      elseif e ~= self.total_iters then out[i] = g.lr
      else out[i] = g.lr * (1.0 / self.factor) end
    end
    return out
  end
  function ConstantLR:_get_closed_form_lr()
    local out = {}
    local past = self.last_epoch >= self.total_iters and 1 or 0
    for i, base in ipairs(self.base_lrs) do out[i] = base * (self.factor + past * (1 - self.factor)) end
    return out
  end

  local LinearLR, lop = define('LinearLR')
  -- LinearLR(optimizer, start_factor=1/3, end_factor=1, total_iters=5): the factor moves linearly
  function LinearLR:__init(optimizer, ...)
    local a = args(lop, { 'start_factor', 'end_factor', 'total_iters', 'last_epoch', 'verbose' },
      { start_factor = 1.0 / 3, end_factor = 1.0, total_iters = 5 }, ...)
    if a.start_factor > 1.0 or a.start_factor < 0 then
      fail(lop, 'Starting multiplicative factor expected to be between 0 and 1.')
    end
    if a.end_factor > 1.0 or a.end_factor < 0 then
      fail(lop, 'Ending multiplicative factor expected to be between 0 and 1.')
    end
    self.start_factor, self.end_factor, self.total_iters = a.start_factor, a.end_factor, a.total_iters
    self:_setup(lop, optimizer, a.last_epoch, a.verbose)
  end
  function LinearLR:get_lr()
    local e, out = self.last_epoch, {}
    local s, f, T = self.start_factor, self.end_factor, self.total_iters
    for i, g in ipairs(self.optimizer.param_groups) do
      if e == 0 then out[i] = g.lr * s
      elseif e > T then out[i] = g.lr
      else out[i] = g.lr * (1. + (f - s) / (T * s + (e - 1) * (f - s))) end
    end
    return out
  end
  function LinearLR:_get_closed_form_lr()
    local out = {}
    local s, f, T = self.start_factor, self.end_factor, self.total_iters
    for i, base in ipairs(self.base_lrs) do out[i] = base * (s + (f - s) * math.min(T, self.last_epoch) / T) end
    return out
  end
end

------------------------------------------------------------------------------ ExponentialLR, PolynomialLR
do
  local ExponentialLR, op = define('ExponentialLR')
  -- ExponentialLR(optimizer, gamma): times gamma every epoch
  function ExponentialLR:__init(optimizer, ...)
    local a = args(op, { 'gamma', 'last_epoch', 'verbose' }, {}, ...)
    if type(a.gamma) ~= 'number' then fail(op, 'gamma must be a number') end
    self.gamma = a.gamma
    self:_setup(op, optimizer, a.last_epoch, a.verbose)
  end
  function ExponentialLR:get_lr()
    local out = {}
    for i, g in ipairs(self.optimizer.param_groups) do out[i] = self.last_epoch == 0 and g.lr or g.lr * self.gamma end
    return out
  end
  function ExponentialLR:_get_closed_form_lr()
    local out = {}
    for i, base in ipairs(self.base_lrs) do out[i] = base * self.gamma ^ self.last_epoch end
    return out
  end

  local PolynomialLR, pop = define('PolynomialLR')
  -- PolynomialLR(optimizer, total_iters=5, power=1): base_lr * (1 - epoch / total_iters)^power
  function PolynomialLR:__init(optimizer, ...)
    local a = args(pop, { 'total_iters', 'power', 'last_epoch', 'verbose' }, { total_iters = 5, power = 1.0 }, ...)
    self.total_iters, self.power = a.total_iters, a.power
    self:_setup(pop, optimizer, a.last_epoch, a.verbose)
  end
  function PolynomialLR:get_lr()
    local e, T, out = self.last_epoch, self.total_iters, {}
    if e == 0 or e > T then return group_lrs(self) end
    local decay = ((1.0 - e / T) / (1.0 - (e - 1) / T)) ^ self.power
    for i, g in ipairs(self.optimizer.param_groups) do out[i] = g.lr * decay end
    return out
  end
  function PolynomialLR:_get_closed_form_lr()
    local out = {}
    local T = self.total_iters
    for i, base in ipairs(self.base_lrs) do out[i] = base * (1.0 - math.min(T, self.last_epoch) / T) ^ self.power end
    return out
  end
end

------------------------------------------------------------------------------ cosine annealing
do
  local CosineAnnealingLR, op = define('CosineAnnealingLR')
  -- CosineAnnealingLR(optimizer, T_max, eta_min=0)
  function CosineAnnealingLR:__init(optimizer, ...)
    local a = args(op, { 'T_max', 'eta_min', 'last_epoch', 'verbose' }, { eta_min = 0 }, ...)
    if type(a.T_max) ~= 'number' then fail(op, 'T_max must be a number') end
    self.T_max, self.eta_min = a.T_max, a.eta_min
    self:_setup(op, optimizer, a.last_epoch, a.verbose)
  end
  function CosineAnnealingLR:get_lr()
    local e, T, m = self.last_epoch, self.T_max, self.eta_min
    local groups, out = self.optimizer.param_groups, {}
    if e == 0 then return group_lrs(self) end
    for i, g in ipairs(groups) do
      local base = self.base_lrs[i]
      if self._step_count == 1 and e > 0 then
        out[i] = m + (base - m) * (1 + cos(e * pi / T)) / 2
      elseif (e - 1 - T) % (2 * T) == 0 then
        out[i] = g.lr + (base - m) * (1 - cos(pi / T)) / 2
      else
        out[i] = (1 + cos(pi * e / T)) / (1 + cos(pi * (e - 1) / T)) * (g.lr - m) + m
      end
    end
    return out
  end
  function CosineAnnealingLR:_get_closed_form_lr()
    local out = {}
    for i, base in ipairs(self.base_lrs) do
      out[i] = self.eta_min + (base - self.eta_min) * (1 + cos(pi * self.last_epoch / self.T_max)) / 2
    end
    return out
  end

  local WR, wop = define('CosineAnnealingWarmRestarts')
  -- CosineAnnealingWarmRestarts(optimizer, T_0, T_mult=1, eta_min=0): restarts after T_0,
  -- T_0 * T_mult, ... epochs; step(epoch) takes fractional epochs
  function WR:__init(optimizer, ...)
    local a = args(wop, { 'T_0', 'T_mult', 'eta_min', 'last_epoch', 'verbose' }, { T_mult = 1, eta_min = 0 }, ...)
    local T_0, T_mult = a.T_0, a.T_mult
    if type(T_0) ~= 'number' or T_0 <= 0 or T_0 ~= floor(T_0) then
      fail(wop, 'Expected positive integer T_0, but got ' .. tostring(T_0))
    end
    if type(T_mult) ~= 'number' or T_mult < 1 or T_mult ~= floor(T_mult) then
      fail(wop, 'Expected integer T_mult >= 1, but got ' .. tostring(T_mult))
    end
    self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, a.eta_min
    self.T_cur = a.last_epoch or -1
    self:_setup(wop, optimizer, a.last_epoch, a.verbose)
  end
  function WR:get_lr()
    local out = {}
    for i, base in ipairs(self.base_lrs) do
      out[i] = self.eta_min + (base - self.eta_min) * (1 + cos(pi * self.T_cur / self.T_i)) / 2
    end
    return out
  end
  function WR:step(epoch)
    if epoch == nil and self.last_epoch < 0 then epoch = 0 end
    if epoch == nil then
      epoch = self.last_epoch + 1
      self.T_cur = self.T_cur + 1
      if self.T_cur >= self.T_i then
        self.T_cur = self.T_cur - self.T_i
        self.T_i = self.T_i * self.T_mult
      end
    else
      if type(epoch) ~= 'number' then fail(wop .. ':step', 'epoch must be a number') end
      if epoch < 0 then fail(wop .. ':step', 'Expected non-negative epoch, but got ' .. optim._pystr(epoch)) end
      if epoch >= self.T_0 then
        if self.T_mult == 1 then
          self.T_cur = epoch % self.T_0
        else
          local n = floor(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1) / math.log(self.T_mult))
          self.T_cur = epoch - self.T_0 * (self.T_mult ^ n - 1) / (self.T_mult - 1)
          self.T_i = self.T_0 * self.T_mult ^ n
        end
      else
        self.T_i = self.T_0
        self.T_cur = epoch
      end
    end
    self.last_epoch = floor(epoch)
    self._step_count = (self._step_count or 0) + 1
    local values = self:get_lr()
    for i, g in ipairs(self.optimizer.param_groups) do
      g.lr = values[i]
      self:print_lr(self.verbose, i - 1, values[i], epoch)
    end
    self._last_lr = group_lrs(self)
  end
end

------------------------------------------------------------------------------ CyclicLR, OneCycleLR
do
  local CyclicLR, op = define('CyclicLR')
  -- CyclicLR(optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=step_size_up,
  -- mode='triangular' | 'triangular2' | 'exp_range', gamma=1, scale_fn=nil, scale_mode='cycle',
  -- cycle_momentum=true, base_momentum=0.8, max_momentum=0.9)
  function CyclicLR:__init(optimizer, ...)
    local a = args(op, { 'base_lr', 'max_lr', 'step_size_up', 'step_size_down', 'mode', 'gamma', 'scale_fn',
      'scale_mode', 'cycle_momentum', 'base_momentum', 'max_momentum', 'last_epoch', 'verbose' },
      { step_size_up = 2000, mode = 'triangular', gamma = 1.0, scale_mode = 'cycle', cycle_momentum = true,
        base_momentum = 0.8, max_momentum = 0.9, last_epoch = -1 }, ...)
    need_optimizer(op, optimizer)
    local base_lrs = per_group(op, 'base_lr', optimizer, a.base_lr)
    if a.last_epoch == -1 then
      for i, g in ipairs(optimizer.param_groups) do g.lr = base_lrs[i] end
    end
    self.max_lrs = per_group(op, 'max_lr', optimizer, a.max_lr)
    local up = a.step_size_up
    local down = a.step_size_down or up
    self.total_size = up + down
    self.step_ratio = up / self.total_size
    local mode = a.mode
    if mode ~= 'triangular' and mode ~= 'triangular2' and mode ~= 'exp_range' and a.scale_fn == nil then
      fail(op, 'mode is invalid and scale_fn is None')
    end
    self.mode, self.gamma = mode, a.gamma
    if a.scale_fn == nil then
      self.scale_mode = mode == 'exp_range' and 'iterations' or 'cycle'
    else
      self._scale_fn_custom = a.scale_fn
      self.scale_mode = a.scale_mode
    end
    self.cycle_momentum = a.cycle_momentum
    if a.cycle_momentum then
      if optimizer.defaults.momentum == nil then
        fail(op, 'optimizer must support momentum with `cycle_momentum` option enabled')
      end
      local bm = per_group(op, 'base_momentum', optimizer, a.base_momentum)
      if a.last_epoch == -1 then
        for i, g in ipairs(optimizer.param_groups) do g.momentum = bm[i] end
      end
      self.base_momentums = {}
      for i, g in ipairs(optimizer.param_groups) do self.base_momentums[i] = g.momentum end
      self.max_momentums = per_group(op, 'max_momentum', optimizer, a.max_momentum)
    end
    self:_setup(op, optimizer, a.last_epoch, a.verbose)
    self.base_lrs = base_lrs
  end
  function CyclicLR:scale_fn(x)
    if self._scale_fn_custom then return self._scale_fn_custom(x) end
    if self.mode == 'triangular' then return 1. end
    if self.mode == 'triangular2' then return 1 / (2. ^ (x - 1)) end
    return self.gamma ^ x
  end
  function CyclicLR:get_lr()
    local e = self.last_epoch
    local cycle = floor(1 + e / self.total_size)
    local x = 1. + e / self.total_size - cycle
    local scale_factor
    if x <= self.step_ratio then scale_factor = x / self.step_ratio
    else scale_factor = (x - 1) / (self.step_ratio - 1) end
    local arg = self.scale_mode == 'cycle' and cycle or e
    local lrs = {}
    for i, base in ipairs(self.base_lrs) do
      local height = (self.max_lrs[i] - base) * scale_factor
      lrs[i] = base + height * self:scale_fn(arg)
    end
    if self.cycle_momentum then
      for i, g in ipairs(self.optimizer.param_groups) do
        local height = (self.max_momentums[i] - self.base_momentums[i]) * scale_factor
        g.momentum = self.max_momentums[i] - height * self:scale_fn(arg)
      end
    end
    return lrs
  end
  -- a scale_fn is a function: not saved (as PyTorch 1.13's pickling of it fails, it is left out)
  function CyclicLR:state_dict()
    local sd = LRScheduler.state_dict(self)
    sd._scale_fn_custom = nil
    return sd
  end

  local OneCycleLR, oop = define('OneCycleLR')
  -- OneCycleLR(optimizer, max_lr, total_steps=nil, epochs=nil, steps_per_epoch=nil, pct_start=0.3,
  -- anneal_strategy='cos' | 'linear', cycle_momentum=true, base_momentum=0.85, max_momentum=0.95,
  -- div_factor=25, final_div_factor=1e4, three_phase=false)
  function OneCycleLR:__init(optimizer, ...)
    local a = args(oop, { 'max_lr', 'total_steps', 'epochs', 'steps_per_epoch', 'pct_start', 'anneal_strategy',
      'cycle_momentum', 'base_momentum', 'max_momentum', 'div_factor', 'final_div_factor', 'three_phase',
      'last_epoch', 'verbose' }, { pct_start = 0.3, anneal_strategy = 'cos', cycle_momentum = true,
      base_momentum = 0.85, max_momentum = 0.95, div_factor = 25., final_div_factor = 1e4, three_phase = false,
      last_epoch = -1 }, ...)
    need_optimizer(oop, optimizer)
    local function positive_int(v) return type(v) == 'number' and v > 0 and v == floor(v) end
    if a.total_steps == nil and a.epochs == nil and a.steps_per_epoch == nil then
      fail(oop, 'You must define either total_steps OR (epochs AND steps_per_epoch)')
    elseif a.total_steps ~= nil then
      if not positive_int(a.total_steps) then
        fail(oop, 'Expected positive integer total_steps, but got ' .. tostring(a.total_steps))
      end
      self.total_steps = a.total_steps
    else
      if not positive_int(a.epochs) then
        fail(oop, 'Expected positive integer epochs, but got ' .. tostring(a.epochs))
      end
      if not positive_int(a.steps_per_epoch) then
        fail(oop, 'Expected positive integer steps_per_epoch, but got ' .. tostring(a.steps_per_epoch))
      end
      self.total_steps = a.epochs * a.steps_per_epoch
    end
    local pct, T = a.pct_start, self.total_steps
    if type(pct) ~= 'number' or pct < 0 or pct > 1 then
      fail(oop, 'Expected float between 0 and 1 pct_start, but got ' .. tostring(pct))
    end
    if a.three_phase then
      self._schedule_phases = {
        { end_step = pct * T - 1, start_lr = 'initial_lr', end_lr = 'max_lr', start_momentum = 'max_momentum',
          end_momentum = 'base_momentum' },
        { end_step = 2 * pct * T - 2, start_lr = 'max_lr', end_lr = 'initial_lr', start_momentum = 'base_momentum',
          end_momentum = 'max_momentum' },
        { end_step = T - 1, start_lr = 'initial_lr', end_lr = 'min_lr', start_momentum = 'max_momentum',
          end_momentum = 'max_momentum' },
      }
    else
      self._schedule_phases = {
        { end_step = pct * T - 1, start_lr = 'initial_lr', end_lr = 'max_lr', start_momentum = 'max_momentum',
          end_momentum = 'base_momentum' },
        { end_step = T - 1, start_lr = 'max_lr', end_lr = 'min_lr', start_momentum = 'base_momentum',
          end_momentum = 'max_momentum' },
      }
    end
    if a.anneal_strategy ~= 'cos' and a.anneal_strategy ~= 'linear' then
      fail(oop, "anneal_strategy must by one of 'cos' or 'linear', instead got " .. tostring(a.anneal_strategy))
    end
    self.anneal_strategy = a.anneal_strategy
    local max_lrs = per_group(oop, 'max_lr', optimizer, a.max_lr)
    if a.last_epoch == -1 then
      for i, g in ipairs(optimizer.param_groups) do
        g.initial_lr = max_lrs[i] / a.div_factor
        g.max_lr = max_lrs[i]
        g.min_lr = g.initial_lr / a.final_div_factor
      end
    end
    self.cycle_momentum = a.cycle_momentum
    if a.cycle_momentum then
      local d = optimizer.defaults
      if d.momentum == nil and d.betas == nil then
        fail(oop, 'optimizer must support momentum with `cycle_momentum` option enabled')
      end
      self.use_beta1 = d.betas ~= nil
      local maxm = per_group(oop, 'max_momentum', optimizer, a.max_momentum)
      local basem = per_group(oop, 'base_momentum', optimizer, a.base_momentum)
      if a.last_epoch == -1 then
        for i, g in ipairs(optimizer.param_groups) do
          if self.use_beta1 then g.betas = { maxm[i], g.betas[2] } else g.momentum = maxm[i] end
          g.max_momentum, g.base_momentum = maxm[i], basem[i]
        end
      end
    end
    self:_setup(oop, optimizer, a.last_epoch, a.verbose)
  end
  function OneCycleLR:anneal_func(start, stop, pct)
    if self.anneal_strategy == 'cos' then
      return stop + (start - stop) / 2.0 * (cos(pi * pct) + 1)
    end
    return (stop - start) * pct + start
  end
  function OneCycleLR:get_lr()
    local step_num = self.last_epoch
    if step_num > self.total_steps then
      fail(self.__typename .. ':step', ('Tried to step %d times. The specified number of total steps is %d')
        :format(step_num + 1, self.total_steps))
    end
    local lrs, phases = {}, self._schedule_phases
    for gi, g in ipairs(self.optimizer.param_groups) do
      local start_step, lr, momentum = 0, nil, nil
      for i, ph in ipairs(phases) do
        local end_step = ph.end_step
        if step_num <= end_step or i == #phases then
          local pct = (step_num - start_step) / (end_step - start_step)
          lr = self:anneal_func(g[ph.start_lr], g[ph.end_lr], pct)
          if self.cycle_momentum then momentum = self:anneal_func(g[ph.start_momentum], g[ph.end_momentum], pct) end
          break
        end
        start_step = ph.end_step
      end
      lrs[gi] = lr
      if self.cycle_momentum then
        if self.use_beta1 then g.betas = { momentum, g.betas[2] } else g.momentum = momentum end
      end
    end
    return lrs
  end
end

------------------------------------------------------------------------------ SequentialLR, ChainedScheduler
local function nested_state_dict(self)
  local sd = {}
  for k, v in pairs(self) do
    if k ~= 'optimizer' and k ~= '_schedulers' then sd[k] = copy(v) end
  end
  sd._schedulers = {}
  for i, s in ipairs(self._schedulers) do sd._schedulers[i] = s:state_dict() end
  return sd
end
local function nested_load_state_dict(self, sd)
  for k, v in pairs(sd) do
    if k ~= 'optimizer' and k ~= '_schedulers' then self[k] = copy(v) end
  end
  for i, s in ipairs(sd._schedulers or {}) do self._schedulers[i]:load_state_dict(s) end
end

do
  local SequentialLR, op = define('SequentialLR')
  -- SequentialLR(optimizer, schedulers, milestones): schedulers[i + 1] takes over at milestones[i]
  function SequentialLR:__init(optimizer, ...)
    local a = args(op, { 'schedulers', 'milestones', 'last_epoch', 'verbose' }, { last_epoch = -1 }, ...)
    need_optimizer(op, optimizer)
    local ss, ms = a.schedulers, a.milestones
    if type(ss) ~= 'table' or #ss == 0 then fail(op, 'expected a list of schedulers') end
    for i, s in ipairs(ss) do
      if s.optimizer ~= optimizer then
        fail(op, ('got schedulers at index %d to be different than the optimizer passed in.'):format(i - 1))
      end
    end
    if type(ms) ~= 'table' or #ms ~= #ss - 1 then
      fail(op, ('Sequential Schedulers expects number of schedulers provided to be one more than the number of ' ..
        'milestone points, but got number of schedulers %d and the number of milestones to be equal to %d')
        :format(#ss, type(ms) == 'table' and #ms or 0))
    end
    self._schedulers, self._milestones = {}, {}
    for i, s in ipairs(ss) do self._schedulers[i] = s end
    for i, m in ipairs(ms) do self._milestones[i] = m end
    self.last_epoch = a.last_epoch + 1
    self.optimizer = optimizer
    for _, g in ipairs(optimizer.param_groups) do g.lr = g.initial_lr end
    for _, s in ipairs(self._schedulers) do s.last_epoch = s.last_epoch - 1 end
    self._schedulers[1]:_initial_step()
    self._last_lr = self._schedulers[1]:get_last_lr()
  end
  function SequentialLR:step()
    self.last_epoch = self.last_epoch + 1
    local idx = 0 -- bisect_right
    for _, m in ipairs(self._milestones) do
      if m <= self.last_epoch then idx = idx + 1 end
    end
    local s = self._schedulers[idx + 1]
    if idx > 0 and self._milestones[idx] == self.last_epoch then s:step(0) else s:step() end
    self._last_lr = s:get_last_lr()
  end
  SequentialLR.state_dict, SequentialLR.load_state_dict = nested_state_dict, nested_load_state_dict

  local Chained, cop = define('ChainedScheduler')
  -- ChainedScheduler(schedulers): each step steps every scheduler, in order
  function Chained:__init(schedulers)
    if type(schedulers) ~= 'table' or #schedulers == 0 then fail(cop, 'expected a list of schedulers') end
    for i = 2, #schedulers do
      if schedulers[i].optimizer ~= schedulers[1].optimizer then
        fail(cop, ('ChainedScheduler expects all schedulers to belong to the same optimizer, but got schedulers at ' ..
          'index %d and %d to be different'):format(0, i - 1))
      end
    end
    self._schedulers = {}
    for i, s in ipairs(schedulers) do self._schedulers[i] = s end
    self.optimizer = schedulers[1].optimizer
    self._last_lr = group_lrs(self._schedulers[#self._schedulers])
  end
  function Chained:step()
    for _, s in ipairs(self._schedulers) do s:step() end
    self._last_lr = group_lrs(self._schedulers[#self._schedulers])
  end
  Chained.state_dict, Chained.load_state_dict = nested_state_dict, nested_load_state_dict
end

------------------------------------------------------------------------------ ReduceLROnPlateau
do
  local R = torch.class('optim.lr_scheduler.ReduceLROnPlateau', nil, lr_scheduler)
  local op = 'optim.lr_scheduler.ReduceLROnPlateau'
  -- ReduceLROnPlateau(optimizer, mode='min', factor=0.1, patience=10, threshold=1e-4,
  -- threshold_mode='rel', cooldown=0, min_lr=0, eps=1e-8): step(metric) after each evaluation
  function R:__init(optimizer, ...)
    local a = args(op, { 'mode', 'factor', 'patience', 'threshold', 'threshold_mode', 'cooldown', 'min_lr', 'eps',
      'verbose' }, { mode = 'min', factor = 0.1, patience = 10, threshold = 1e-4, threshold_mode = 'rel',
      cooldown = 0, min_lr = 0, eps = 1e-8, verbose = false }, ...)
    if a.factor >= 1.0 then fail(op, 'Factor should be < 1.0.') end
    self.factor = a.factor
    need_optimizer(op, optimizer)
    self.optimizer = optimizer
    local n = #optimizer.param_groups
    if type(a.min_lr) == 'table' then
      if #a.min_lr ~= n then fail(op, ('expected %d min_lrs, got %d'):format(n, #a.min_lr)) end
      self.min_lrs = copy(a.min_lr)
    else
      self.min_lrs = per_group(op, 'min_lr', optimizer, a.min_lr)
    end
    self.patience, self.verbose, self.cooldown, self.cooldown_counter = a.patience, a.verbose, a.cooldown, 0
    self.eps, self.last_epoch = a.eps, 0
    self:_init_is_better(a.mode, a.threshold, a.threshold_mode)
    self:_reset()
  end
  function R:_init_is_better(mode, threshold, threshold_mode)
    if mode ~= 'min' and mode ~= 'max' then fail(op, 'mode ' .. tostring(mode) .. ' is unknown!') end
    if threshold_mode ~= 'rel' and threshold_mode ~= 'abs' then
      fail(op, 'threshold mode ' .. tostring(threshold_mode) .. ' is unknown!')
    end
    self.mode_worse = mode == 'min' and math.huge or -math.huge
    self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
  end
  function R:_reset()
    self.best = self.mode_worse
    self.cooldown_counter = 0
    self.num_bad_epochs = 0
  end
  function R:is_better(a, best)
    if self.mode == 'min' and self.threshold_mode == 'rel' then return a < best * (1. - self.threshold) end
    if self.mode == 'min' then return a < best - self.threshold end
    if self.threshold_mode == 'rel' then return a > best * (self.threshold + 1.) end
    return a > best + self.threshold
  end
  function R:in_cooldown() return self.cooldown_counter > 0 end
  -- step(metrics, epoch): metrics a number or a one-element tensor
  function R:step(metrics, epoch)
    local current = metrics
    if torch.is_tensor(current) then current = current:item() end
    if type(current) ~= 'number' then fail(op .. ':step', 'metrics must be a number or a one-element tensor') end
    if epoch == nil then epoch = self.last_epoch + 1 end
    self.last_epoch = epoch
    if self:is_better(current, self.best) then
      self.best = current
      self.num_bad_epochs = 0
    else
      self.num_bad_epochs = self.num_bad_epochs + 1
    end
    if self:in_cooldown() then
      self.cooldown_counter = self.cooldown_counter - 1
      self.num_bad_epochs = 0
    end
    if self.num_bad_epochs > self.patience then
      self:_reduce_lr(epoch)
      self.cooldown_counter = self.cooldown
      self.num_bad_epochs = 0
    end
    self._last_lr = group_lrs(self)
  end
  function R:_reduce_lr(epoch)
    for i, g in ipairs(self.optimizer.param_groups) do
      local old = g.lr
      local new = math.max(old * self.factor, self.min_lrs[i])
      if old - new > self.eps then
        g.lr = new
        if self.verbose then
          print(('Epoch %s: reducing learning rate of group %d to %.4e.'):format(python_number(epoch), i - 1, new))
        end
      end
    end
  end
  -- (PyTorch 1.13's has none; the groups' rates before the first step)
  function R:get_last_lr() return self._last_lr or group_lrs(self) end
  R.state_dict = LRScheduler.state_dict
  function R:load_state_dict(sd)
    LRScheduler.load_state_dict(self, sd)
    self:_init_is_better(self.mode, self.threshold, self.threshold_mode)
  end
  function R:__tostring() return 'ReduceLROnPlateau' end
end

return lr_scheduler
