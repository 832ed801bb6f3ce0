-- optim.lr_scheduler against PyTorch 1.13: every scheduler's learning rates (and momenta, for the
-- cyclic ones) over 30 epochs, the step(epoch) closed forms, state_dicts that continue identically
-- (also through torch.save), and PyTorch's errors. The expected values are
-- spec/support/lr_scheduler_wants.lua, recorded by spec/support/lr_scheduler_record.py with
-- /usr/bin/python3 (torch 1.13) from the same schedulers, built here under the same names.
local H = require 'spec.support.helper'
local torch = H.torch
local optim = require 'moontorch.optim'
local L = optim.lr_scheduler
local wants = require 'spec.support.lr_scheduler_wants'

local function make(kind)
  local a, b = torch.zeros(2):requires_grad_(), torch.zeros(3):requires_grad_()
  local groups = { { params = { a }, lr = 0.1 }, { params = { b }, lr = 0.05 } }
  if kind == 'adam' then return optim.Adam(groups) end
  return optim.SGD(groups, { lr = 0.1, momentum = 0.9 })
end

-- the Lua spelling of each case of lr_scheduler_record.py
local build = {
  ['StepLR'] = function(o) return L.StepLR(o, { step_size = 3, gamma = 0.5 }) end,
  ['MultiStepLR'] = function(o) return L.MultiStepLR(o, { 2, 5, 5, 9 }, 0.3) end,
  ['ConstantLR'] = function(o) return L.ConstantLR(o, { factor = 0.25, total_iters = 4 }) end,
  ['ConstantLR default'] = function(o) return L.ConstantLR(o) end,
  ['LinearLR'] = function(o) return L.LinearLR(o, { start_factor = 0.2, end_factor = 0.9, total_iters = 7 }) end,
  ['LinearLR default'] = function(o) return L.LinearLR(o) end,
  ['ExponentialLR'] = function(o) return L.ExponentialLR(o, 0.9) end,
  ['CosineAnnealingLR'] = function(o) return L.CosineAnnealingLR(o, { T_max = 7, eta_min = 0.001 }) end,
  ['CosineAnnealingLR default'] = function(o) return L.CosineAnnealingLR(o, 10) end,
  ['CosineAnnealingWarmRestarts'] = function(o)
    return L.CosineAnnealingWarmRestarts(o, { T_0 = 4, T_mult = 2, eta_min = 0.001 })
  end,
  ['CosineAnnealingWarmRestarts T_mult 1'] = function(o) return L.CosineAnnealingWarmRestarts(o, 5) end,
  ['CyclicLR'] = function(o)
    return L.CyclicLR(o, { base_lr = 0.01, max_lr = { 0.1, 0.2 }, step_size_up = 4, step_size_down = 3 })
  end,
  ['CyclicLR triangular2'] = function(o) return L.CyclicLR(o, 0.01, 0.1, { step_size_up = 3, mode = 'triangular2' }) end,
  ['CyclicLR exp_range'] = function(o)
    return L.CyclicLR(o, 0.01, 0.1, { step_size_up = 5, mode = 'exp_range', gamma = 0.9, base_momentum = 0.7,
      max_momentum = 0.95 })
  end,
  ['CyclicLR no momentum'] = function(o) return L.CyclicLR(o, 0.01, 0.1, { step_size_up = 2, cycle_momentum = false }) end,
  ['OneCycleLR'] = function(o) return L.OneCycleLR(o, { max_lr = 0.5, total_steps = 30 }) end,
  ['OneCycleLR three_phase linear'] = function(o)
    return L.OneCycleLR(o, { max_lr = { 0.5, 0.2 }, epochs = 6, steps_per_epoch = 5, pct_start = 0.25,
      anneal_strategy = 'linear', three_phase = true })
  end,
  ['OneCycleLR adam'] = function(o)
    return L.OneCycleLR(o, { max_lr = 0.01, total_steps = 40, div_factor = 10.0, final_div_factor = 100.0 })
  end,
  ['PolynomialLR'] = function(o) return L.PolynomialLR(o, { total_iters = 8, power = 2.0 }) end,
  ['PolynomialLR default'] = function(o) return L.PolynomialLR(o) end,
  ['LambdaLR'] = function(o) return L.LambdaLR(o, function(e) return 0.95 ^ e end) end,
  ['LambdaLR per group'] = function(o)
    return L.LambdaLR(o, { function(e) return 1 / (e + 1) end, function(e) return 0.9 ^ e end })
  end,
  ['MultiplicativeLR'] = function(o) return L.MultiplicativeLR(o, function() return 0.95 end) end,
  ['SequentialLR'] = function(o)
    return L.SequentialLR(o, { L.ConstantLR(o, { factor = 0.1, total_iters = 2 }), L.ExponentialLR(o, 0.9) }, { 2 })
  end,
  ['SequentialLR three'] = function(o)
    return L.SequentialLR(o, { schedulers = { L.LinearLR(o, { start_factor = 0.5, total_iters = 4 }),
      L.StepLR(o, { step_size = 2, gamma = 0.5 }), L.CosineAnnealingLR(o, { T_max = 6 }) }, milestones = { 5, 12 } })
  end,
  ['ChainedScheduler'] = function(o)
    return L.ChainedScheduler { L.ConstantLR(o, { factor = 0.1, total_iters = 2 }), L.ExponentialLR(o, 0.9) }
  end,
  ['ReduceLROnPlateau'] = function(o)
    return L.ReduceLROnPlateau(o, { patience = 2, factor = 0.5, cooldown = 1, min_lr = { 0.01, 0.0 } })
  end,
  ['ReduceLROnPlateau max abs'] = function(o)
    return L.ReduceLROnPlateau(o, { mode = 'max', threshold_mode = 'abs', threshold = 0.01, patience = 1 })
  end,
}
build['StepLR epochs'] = build['StepLR']
build['MultiStepLR epochs'] = build['MultiStepLR']
build['ExponentialLR epochs'] = build['ExponentialLR']
build['CosineAnnealingLR epochs'] = build['CosineAnnealingLR']
build['LinearLR epochs'] = build['LinearLR']
build['ConstantLR epochs'] = build['ConstantLR']
build['PolynomialLR epochs'] = build['PolynomialLR']
build['CosineAnnealingWarmRestarts epochs'] = function(o) return L.CosineAnnealingWarmRestarts(o, { T_0 = 4, T_mult = 2 }) end

local function momenta(o)
  local out = {}
  for i, g in ipairs(o.param_groups) do out[i] = g.betas and g.betas[1] or g.momentum end
  return out
end

-- epoch e (0-based) of a plain case: the scheduler's step after the optimizer's
local function advance(s, o, e)
  o:step()
  if torch.typename(s) == 'optim.lr_scheduler.ReduceLROnPlateau' then s:step(wants.metrics[e + 1]) else s:step() end
end

-- the sequence from epoch `from` to 29, given a scheduler that has made `from` steps
local function sequence(s, o, from, out, moms)
  out, moms = out or {}, moms or {}
  for e = from, 29 do
    out[#out + 1] = s:get_last_lr()
    moms[#moms + 1] = momenta(o)
    advance(s, o, e)
  end
  return out, moms
end

describe('lr_scheduler matches PyTorch 1.13', function()
  local seen = {}
  for _, c in ipairs(wants) do
    local name, kind = c[1], c[2]
    seen[name] = true
    it(name, function()
      local o = make(kind)
      local s = build[name](o)
      local got, moms = {}, {}
      if name:match(' epochs$') then
        for _, e in ipairs(wants.epochs) do
          o:step()
          s:step(e)
          got[#got + 1] = s:get_last_lr()
          moms[#moms + 1] = momenta(o)
        end
      else
        got, moms = sequence(s, o, 0)
      end
      assert.equal(#c.lrs, #got)
      for e = 1, #got do
        H.near(got[e], c.lrs[e], 0, 0) -- PyTorch's formulas in its order: equal to the last bit
        H.near(moms[e], c.momenta[e], 0, 0)
      end
    end)
  end
  it('every case has a builder', function()
    for name in pairs(build) do assert(seen[name], name .. ' was not recorded') end
  end)
end)

describe('lr_scheduler state_dicts', function()
  for _, c in ipairs(wants) do
    local name, kind = c[1], c[2]
    if not name:match(' epochs$') then
      it(name .. ' continues identically after a round trip through torch.save at epoch 12', function()
        local o1 = make(kind)
        local s1 = build[name](o1)
        local got, moms = {}, {}
        for e = 0, 11 do
          got[#got + 1] = s1:get_last_lr()
          moms[#moms + 1] = momenta(o1)
          advance(s1, o1, e)
        end
        local path = os.tmpname()
        torch.save({ optimizer = o1:state_dict(), scheduler = s1:state_dict() }, path)
        local saved = torch.load(path)
        os.remove(path)
        -- a fresh optimizer and scheduler (built as at the start), then loaded
        local o2 = make(kind)
        local s2 = build[name](o2)
        o2:load_state_dict(saved.optimizer)
        s2:load_state_dict(saved.scheduler)
        sequence(s2, o2, 12, got, moms)
        for e = 1, 30 do
          H.near(got[e], c.lrs[e], 0, 0)
          H.near(moms[e], c.momenta[e], 0, 0)
        end
        -- the state_dict holds no optimizer, and LambdaLR keeps no functions
        local sd = s1:state_dict()
        assert.is_nil(sd.optimizer)
        if sd.lr_lambdas then
          for _, f in ipairs(sd.lr_lambdas) do assert.is_false(f) end
        end
        if name ~= 'ChainedScheduler' then assert.is_number(sd.last_epoch) end
      end)
    end
  end

  it('a whole scheduler and its optimizer save together and continue in a fresh process', function()
    local path = os.tmpname()
    local o = make('sgd')
    local s = L.OneCycleLR(o, { max_lr = 0.5, total_steps = 30 })
    for e = 0, 9 do advance(s, o, e) end
    torch.save({ s = s, o = o }, path)
    local out, ok, err = H.run_lua(([==[
local torch = require 'moontorch'
local c = torch.load(%q)
assert(torch.typename(c.s) == 'optim.lr_scheduler.OneCycleLR', torch.typename(c.s))
assert(c.s.optimizer == c.o, 'the optimizer is shared')
for e = 10, 19 do c.o:step(); c.s:step() end
io.write(('%%.17g %%.17g %%.17g'):format(c.s:get_last_lr()[1], c.s:get_last_lr()[2], c.o.param_groups[1].momentum))
]==]):format(path))
    os.remove(path)
    assert(ok, out .. err)
    local want
    for _, c in ipairs(wants) do if c[1] == 'OneCycleLR' then want = c end end
    assert.equal(('%.17g %.17g %.17g'):format(want.lrs[21][1], want.lrs[21][2], want.momenta[21][1]), out)
  end)

  it('LambdaLR keeps the fields of a callable table, as PyTorch keeps a callable object\'s __dict__', function()
    local function lam(rate)
      return setmetatable({ rate = rate }, { __call = function(self, e) return self.rate ^ e end })
    end
    local o = make('sgd')
    local f = lam(0.5)
    local s = L.LambdaLR(o, { f, function() return 1 end })
    s:step()
    f.rate = 0.8
    local sd = s:state_dict()
    assert.are.same({ { rate = 0.8 }, false }, sd.lr_lambdas)
    local g = lam(0.1)
    local s2 = L.LambdaLR(make('sgd'), { g, function() return 1 end })
    s2:load_state_dict(sd)
    assert.equal(0.8, g.rate)
    assert.equal(1, s2.last_epoch)
  end)
end)

describe('lr_scheduler errors', function()
  it('are PyTorch\'s, naming the scheduler', function()
    local o = make('sgd')
    H.errors_with(function() L.StepLR({}, 3) end, 'moontorch.optim.lr_scheduler.StepLR: table is not an Optimizer')
    H.errors_with(function() L.ConstantLR(o, { factor = 2 }) end,
      'moontorch.optim.lr_scheduler.ConstantLR: Constant multiplicative factor expected to be between 0 and 1.')
    H.errors_with(function() L.LinearLR(o, { start_factor = -1 }) end,
      'Starting multiplicative factor expected to be between 0 and 1.')
    H.errors_with(function() L.LinearLR(o, { end_factor = 2 }) end,
      'Ending multiplicative factor expected to be between 0 and 1.')
    H.errors_with(function() L.CosineAnnealingWarmRestarts(o, 0) end, 'Expected positive integer T_0, but got 0')
    H.errors_with(function() L.CosineAnnealingWarmRestarts(o, 2, 1.5) end, 'Expected integer T_mult >= 1, but got 1.5')
    H.errors_with(function() L.CyclicLR(make('adam'), 0.01, 0.1) end,
      'moontorch.optim.lr_scheduler.CyclicLR: optimizer must support momentum with `cycle_momentum` option enabled')
    H.errors_with(function() L.CyclicLR(o, 0.01, 0.1, { mode = 'bogus' }) end, 'mode is invalid and scale_fn is None')
    H.errors_with(function() L.CyclicLR(o, { 0.01 }, 0.1) end, 'expected 2 values for base_lr, got 1')
    H.errors_with(function() L.OneCycleLR(o, 0.1) end, 'You must define either total_steps OR (epochs AND steps_per_epoch)')
    H.errors_with(function() L.OneCycleLR(o, 0.1, { total_steps = 0 }) end, 'Expected positive integer total_steps, but got 0')
    H.errors_with(function() L.OneCycleLR(o, 0.1, { total_steps = 10, anneal_strategy = 'x' }) end,
      "anneal_strategy must by one of 'cos' or 'linear', instead got x")
    local s = L.OneCycleLR(make('sgd'), 0.1, { total_steps = 2 })
    s:step()
    s:step()
    H.errors_with(function() s:step() end, 'Tried to step 4 times. The specified number of total steps is 2')
    H.errors_with(function() L.LambdaLR(o, { function() return 1 end }) end, 'Expected 2 lr_lambdas, but got 1')
    H.errors_with(function() L.ReduceLROnPlateau(o, { factor = 1 }) end, 'Factor should be < 1.0.')
    H.errors_with(function() L.ReduceLROnPlateau(o, { mode = 'up' }) end, 'mode up is unknown!')
    H.errors_with(function() L.ReduceLROnPlateau(o, { threshold_mode = 'x' }) end, 'threshold mode x is unknown!')
    H.errors_with(function() L.ReduceLROnPlateau(o, { min_lr = { 1 } }) end, 'expected 2 min_lrs, got 1')
    H.errors_with(function() L.StepLR(o, 3, { bogus = 1 }) end, "moontorch.optim.lr_scheduler.StepLR: unexpected argument 'bogus'")
    H.errors_with(function() L.SequentialLR(o, { L.StepLR(o, 2) }, { 3 }) end,
      'Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone points')
    H.errors_with(function() L.SequentialLR(o, { L.StepLR(make('sgd'), 2) }, {}) end,
      'got schedulers at index 0 to be different than the optimizer passed in.')
    local fresh = make('sgd')
    H.errors_with(function() L.StepLR(fresh, 3, { last_epoch = 4 }) end,
      "param 'initial_lr' is not specified in param_groups[0] when resuming an optimizer")
  end)

  it('sets initial_lr and base_lrs as PyTorch, and resumes from last_epoch', function()
    local o = make('sgd')
    local s = L.ExponentialLR(o, 0.5)
    assert.equal(0.1, o.param_groups[1].initial_lr)
    assert.are.same({ 0.1, 0.05 }, s.base_lrs)
    assert.are.same({ 0.1, 0.05 }, s:get_last_lr())
    s:step()
    local s2 = L.ExponentialLR(o, 0.5, { last_epoch = 1 })
    assert.equal(2, s2.last_epoch)
    assert.are.same({ 0.025, 0.0125 }, s2:get_last_lr())
  end)
end)
