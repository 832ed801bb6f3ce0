-- The optimizers of issue 13 (Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD,
-- Rprop) against PyTorch 1.13: every option over ten steps on fixed gradients (the values of
-- spec/support/optim_wants.lua, recorded by spec/support/optim_record.py with /usr/bin/python3),
-- state_dicts that continue identically (in this process and through torch.save in a fresh one),
-- parameter groups, closures, the meta device and PyTorch's constructor errors.
local H = require 'spec.support.helper'
local torch = H.torch
local optim = require 'moontorch.optim'
local wants = require 'spec.support.optim_wants'

-- the parameters and gradients of optim_record.py (and of spec/optim_spec.lua)
local function pvals(j, n)
  local v = {}
  for i = 0, n - 1 do v[i + 1] = ((i * 5 + j * 3) % 7 - 3) / 8 end
  return v
end
local function gvals(k, j, n)
  local v = {}
  for i = 0, n - 1 do v[i + 1] = ((i * 7 + k * 3 + j * 2) % 11 - 5) / 4 end
  return v
end
local shapes = { { 2, 3 }, { 3 } }
local function make(dtype)
  return { torch.tensor(pvals(0, 6), { dtype = dtype }):reshape(shapes[1]):requires_grad_(),
    torch.tensor(pvals(1, 3), { dtype = dtype }):reshape(shapes[2]):requires_grad_() }
end
local function set_grads(ps, k)
  for j, p in ipairs(ps) do p.grad = torch.tensor(gvals(k, j - 1, p:numel()), { dtype = p.dtype }):reshape(p:size()) end
end
local function copy(t)
  local o = {}
  for k, v in pairs(t) do o[k] = type(v) == 'table' and copy(v) or v end
  return o
end
local function build(c, ps)
  local params = ps
  if c.groups then params = { { params = { ps[1] }, lr = 0.03 }, { params = { ps[2] } } } end
  return optim[c[1]](params, copy(c.opts))
end
local function run(c, dtype, from, to, ps, opt)
  ps = ps or make(dtype)
  opt = opt or build(c, ps)
  for k = from or 1, to or 10 do
    set_grads(ps, k)
    opt:step()
  end
  return ps, opt
end
local function flat(t) return t:detach():reshape(-1):tolist() end
local function value(v)
  if torch.is_tensor(v) then
    return v:numel() == 1 and v.dtype == torch.float32 and v:dim() == 0 and v:item() or flat(v)
  end
  return v
end

-- (LBFGS's problem: Rosenbrock's function of four values)
local function rosenbrock(opt, x)
  return function()
    opt:zero_grad()
    local a, b = x:narrow(1, 1, 3), x:narrow(1, 2, 3)
    local l = ((b - a * a) ^ 2 * 100 + (-a + 1) ^ 2):sum()
    l:backward()
    return l
  end
end
local function start(dtype) return torch.tensor({ -1.5, 2.0, 0.5, -0.3 }, { dtype = dtype or torch.float64 }):requires_grad_() end

describe('optimizers match PyTorch 1.13 over ten steps', function()
  for _, c in ipairs(wants) do
    for _, dt in ipairs { 'float32', 'float64' } do
      it(('%s %s (%s)'):format(c[1], c[2], dt), function()
        local want = c[dt]
        local tol = dt == 'float64' and 1e-13 or 2e-6
        local ps, opt = run(c, torch[dt])
        H.near(flat(ps[1]), want.p0, tol, tol)
        H.near(flat(ps[2]), want.p1, tol, tol)
        local st = opt.state[ps[1]]
        for k, v in pairs(want.state) do
          assert(st[k] ~= nil, 'no state ' .. k)
          H.near(value(st[k]), v, tol, tol)
        end
        for k in pairs(st) do assert(want.state[k] ~= nil, 'state ' .. k .. " is not PyTorch's") end
        -- every state tensor of the parameter's shape has its dtype
        for _, v in pairs(st) do
          if torch.is_tensor(v) and v:dim() > 0 then assert.equal(torch[dt], v.dtype) end
        end
      end)
    end
  end
end)

-- the default cases, one per optimizer
local defaults = {}
for _, c in ipairs(wants) do
  if c[2] == 'default' then defaults[#defaults + 1] = c end
end
-- and one with every stateful option (amsgrad, centered momentum)
for _, c in ipairs(wants) do
  if (c[1] == 'Adam' and c[2] == 'everything') or (c[1] == 'RMSprop' and c[2] == 'centered momentum') then
    defaults[#defaults + 1] = c
  end
end

describe('optimizer state_dicts', function()
  for _, c in ipairs(defaults) do
    it(c[1] .. ' ' .. c[2] .. ': PyTorch layout, and a round trip mid-training continues identically', function()
      -- (float32: as PyTorch's, load_state_dict casts every state tensor but 'step' to the
      -- parameter's dtype, so NAdam's mu_product and ASGD's eta and mu, float32 scalars, would
      -- turn float64 with float64 parameters and continue with other roundings)
      local whole = run(c, torch.float32)
      local ps, opt = run(c, torch.float32, 1, 4)
      local sd = opt:state_dict()
      -- PyTorch's layout: state by 0-based index, groups with index lists
      assert.are.same({ 0, 1 }, sd.param_groups[1].params)
      assert.is_table(sd.state[0])
      assert.is_table(sd.state[1])
      assert.equal(opt.defaults.lr, sd.param_groups[1].lr)
      -- through the bytes of torch.save, into a new optimizer over other tensors
      local path = os.tmpname()
      torch.save(sd, path)
      local loaded = torch.load(path)
      os.remove(path)
      local ps2 = {}
      for i, p in ipairs(ps) do ps2[i] = p:detach():clone():requires_grad_() end
      local opt2 = optim[c[1]](c.groups and { { params = { ps2[1] } }, { params = { ps2[2] } } } or ps2, copy(c.opts))
      opt2:load_state_dict(loaded)
      -- the loaded state is a copy: stepping the original leaves it alone
      run(c, torch.float32, 5, 10, ps, opt)
      run(c, torch.float32, 5, 10, ps2, opt2)
      for i = 1, 2 do
        assert.are.same(flat(whole[i]), flat(ps[i]))
        assert.are.same(flat(whole[i]), flat(ps2[i]))
      end
    end)
  end

  it('a whole optimizer saves and continues in a fresh process', function()
    local path = os.tmpname()
    local ps, opt = run(wants[1], torch.float64, 1, 5)
    opt = optim.Adam(ps, { lr = 0.05, amsgrad = true })
    run(wants[1], torch.float64, 1, 5, ps, opt)
    torch.save({ opt = opt, ps = ps }, path)
    local whole_ps, whole = run(wants[1], torch.float64, 1, 5, make(torch.float64), nil)
    whole = optim.Adam(whole_ps, { lr = 0.05, amsgrad = true })
    run(wants[1], torch.float64, 1, 10, whole_ps, whole)
    local out, ok, err = H.run_lua(([==[
local torch = require 'moontorch'
local c = torch.load(%q)
assert(torch.typename(c.opt) == 'optim.Adam', torch.typename(c.opt))
local ps = c.opt.param_groups[1].params
assert(ps[1] == c.ps[1] and ps[2] == c.ps[2], 'the parameters are shared')
for k = 6, 10 do
  for j, p in ipairs(ps) do
    local v = {}
    for i = 0, p:numel() - 1 do v[i + 1] = ((i * 7 + k * 3 + (j - 1) * 2) %% 11 - 5) / 4 end
    p.grad = torch.tensor(v, { dtype = p.dtype }):reshape(p:size())
  end
  c.opt:step()
end
for _, p in ipairs(ps) do
  for _, x in ipairs(p:detach():reshape(-1):tolist()) do io.write(('%%.17g '):format(x)) end
end
print(c.opt.state[ps[1]].step:item())
]==]):format(path))
    os.remove(path)
    assert(ok, out .. err)
    local expect = {}
    for _, p in ipairs(whole_ps) do
      for _, x in ipairs(flat(p)) do expect[#expect + 1] = ('%.17g'):format(x) end
    end
    assert.equal(table.concat(expect, ' ') .. ' 10\n', out)
  end)
end)

describe('optimizers', function()
  local names = { 'Adam', 'AdamW', 'RMSprop', 'Adagrad', 'Adadelta', 'Adamax', 'NAdam', 'RAdam', 'ASGD', 'Rprop' }

  it('take step(closure), skip parameters without a gradient, and leave them leaves', function()
    for _, name in ipairs(names) do
      local a = torch.tensor({ 1.0, 2.0 }):requires_grad_()
      local b = torch.tensor({ 3.0 }):requires_grad_()
      local opt = optim[name]({ a, b }, { lr = 0.1 })
      local loss = opt:step(function()
        opt:zero_grad()
        local l = (a * a):sum()
        l:backward()
        return l
      end)
      assert.equal(5, loss:item())
      assert.is_nil(b.grad)
      assert.are.same({ 3 }, b:detach():tolist())
      local av = a:detach():tolist()
      assert.is_true(av[1] < 1 and av[2] < 2, name)
      assert.is_true(a.is_leaf and a.requires_grad and a.grad_fn == nil)
      if name ~= 'Adagrad' then assert.is_nil(opt.state[b], name) end -- Adagrad makes its state up front
      opt:zero_grad(true)
      assert.is_nil(a.grad)
    end
  end)

  it('add_param_group takes the defaults, and print as PyTorch', function()
    local a, b = torch.zeros(2):requires_grad_(), torch.zeros(2):requires_grad_()
    local opt = optim.Adam({ a }, { lr = 0.01 })
    opt:add_param_group { params = { b }, betas = { 0.5, 0.6 } }
    assert.equal(0.01, opt.param_groups[2].lr)
    assert.are.same({ 0.5, 0.6 }, opt.param_groups[2].betas)
    assert.are.same({ 0.9, 0.999 }, opt.param_groups[1].betas)
    -- print(opt) of the same in PyTorch 1.13
    local want = [[
Adam (
Parameter Group 0
    amsgrad: False
    betas: (0.9, 0.999)
    capturable: False
    differentiable: False
    eps: 1e-08
    foreach: None
    fused: False
    lr: 0.01
    maximize: False
    weight_decay: 0

Parameter Group 1
    amsgrad: False
    betas: (0.5, 0.6)
    capturable: False
    differentiable: False
    eps: 1e-08
    foreach: None
    fused: False
    lr: 0.01
    maximize: False
    weight_decay: 0
)]]
    assert.equal(want, tostring(opt))
    -- PyTorch 1.13's AdamW has no fused and differentiable options
    assert.is_nil(tostring(optim.AdamW({ a })):find('differentiable', 1, true))
    assert.is_nil(tostring(optim.AdamW({ a })):find('fused', 1, true))
    local r = optim.Rprop({ a })
    assert.truthy(tostring(r):find('etas: (0.5, 1.2)', 1, true))
    assert.truthy(tostring(r):find('step_sizes: (1e-06, 50)', 1, true))
  end)

  it('run on the meta device (shapes only)', function()
    for _, name in ipairs(names) do
      local p = torch.zeros(3, 2, { device = 'meta' }):requires_grad_()
      p.grad = torch.zeros(3, 2, { device = 'meta' })
      local opt = optim[name]({ p })
      opt:step()
      opt:step()
      assert.equal('meta', p.device.type)
      for _, v in pairs(opt.state[p]) do
        if torch.is_tensor(v) and v:dim() > 0 then assert.equal('meta', v.device.type) end
      end
    end
  end)

  it('Adam steps a non-contiguous parameter as a contiguous one', function()
    local base = torch.tensor(pvals(0, 6), { dtype = torch.float64 }):reshape(3, 2)
    local t = base:clone():t():requires_grad_()
    local c = base:t():contiguous():requires_grad_()
    assert.is_false(t:is_contiguous())
    local o1 = optim.Adam({ t }, { lr = 0.1, amsgrad = true })
    local o2 = optim.AdamW({ c }, { lr = 0.1, amsgrad = true, weight_decay = 0 })
    for k = 1, 3 do
      local g = torch.tensor(gvals(k, 0, 6), { dtype = torch.float64 }):reshape(2, 3)
      t.grad, c.grad = g:t():contiguous():t(), g:clone()
      o1:step()
      o2:step()
    end
    assert.are.same(c:detach():tolist(), t:detach():tolist())
  end)

  it('RMSprop, Adagrad, Adadelta and Adamax step non-contiguous parameters as contiguous ones', function()
    for _, mk in ipairs {
      function(ps) return optim.RMSprop(ps, { lr = 0.01, centered = true, momentum = 0.5, weight_decay = 0.1 }) end,
      function(ps) return optim.RMSprop(ps, { lr = 0.01, maximize = true }) end,
      function(ps) return optim.Adagrad(ps, { lr = 0.1, lr_decay = 0.1, weight_decay = 0.1 }) end,
      function(ps) return optim.Adadelta(ps, { weight_decay = 0.1, maximize = true }) end,
      function(ps) return optim.Adamax(ps, { lr = 0.1, weight_decay = 0.1 }) end,
    } do
      local base = torch.tensor(pvals(0, 6), { dtype = torch.float64 }):reshape(3, 2)
      local t = base:clone():t():requires_grad_()
      local c = base:t():contiguous():requires_grad_()
      local o1, o2 = mk({ t }), mk({ c })
      for k = 1, 3 do
        local g = torch.tensor(gvals(k, 0, 6), { dtype = torch.float64 }):reshape(2, 3)
        t.grad, c.grad = g:t():contiguous():t(), g:clone()
        o1:step()
        o2:step()
      end
      assert.are.same(c:detach():tolist(), t:detach():tolist())
    end
  end)

  it('free every tensor they made once dropped (state, step counters, LBFGS history)', function()
    local T = require 'moontorch.tensor'
    local stats = torch._C.mt_get_stats()
    T.sweep()
    local base = tonumber(stats.live_tensors)
    do
      for _, name in ipairs(names) do
        local ps = make(torch.float32)
        local opt = optim[name](ps, { lr = 0.01 })
        run({ name, opts = {} }, torch.float32, 1, 3, ps, opt)
        local sd = opt:state_dict()
        local opt2 = optim[name](ps, { lr = 0.01 })
        opt2:load_state_dict(sd)
        opt2:step()
      end
      local x = start()
      local lb = optim.LBFGS({ x }, { line_search_fn = 'strong_wolfe', history_size = 3 })
      lb:step(rosenbrock(lb, x))
    end
    T.sweep()
    assert.are.equal(base, tonumber(stats.live_tensors))
  end)

  it('refuse bad hyperparameters with PyTorch\'s messages, naming the optimizer', function()
    local p = torch.zeros(2):requires_grad_()
    for _, name in ipairs(names) do
      local prefix = 'moontorch.optim.' .. name .. ': '
      H.errors_with(function() optim[name]({ p }, { lr = -1 }) end, prefix .. 'Invalid learning rate: -1')
      H.errors_with(function() optim[name]({ p }, { bogus = 1 }) end, prefix .. "unexpected option 'bogus'")
      H.errors_with(function() optim[name]({}) end, 'optimizer got an empty parameter list')
    end
    for _, name in ipairs { 'Adam', 'AdamW', 'Adamax', 'NAdam', 'RAdam' } do
      H.errors_with(function() optim[name]({ p }, { betas = { 1.0, 0.9 } }) end,
        'moontorch.optim.' .. name .. ': Invalid beta parameter at index 0: 1')
      H.errors_with(function() optim[name]({ p }, { betas = { 0.9, -0.5 } }) end,
        'moontorch.optim.' .. name .. ': Invalid beta parameter at index 1: -0.5')
      H.errors_with(function() optim[name]({ p }, { eps = -1e-8 }) end, 'Invalid epsilon value: -1e-08')
      H.errors_with(function() optim[name]({ p }, { weight_decay = -0.1 }) end, 'Invalid weight_decay value: -0.1')
    end
    H.errors_with(function() optim.RMSprop({ p }, { momentum = -1 }) end, 'moontorch.optim.RMSprop: Invalid momentum value: -1')
    H.errors_with(function() optim.RMSprop({ p }, { alpha = -1 }) end, 'moontorch.optim.RMSprop: Invalid alpha value: -1')
    H.errors_with(function() optim.Adagrad({ p }, { lr_decay = -1 }) end, 'moontorch.optim.Adagrad: Invalid lr_decay value: -1')
    H.errors_with(function() optim.Adagrad({ p }, { initial_accumulator_value = -1 }) end,
      'Invalid initial_accumulator_value value: -1')
    H.errors_with(function() optim.Adadelta({ p }, { rho = 1.5 }) end, 'moontorch.optim.Adadelta: Invalid rho value: 1.5')
    H.errors_with(function() optim.NAdam({ p }, { momentum_decay = -1 }) end, 'Invalid momentum_decay value: -1')
    H.errors_with(function() optim.Rprop({ p }, { etas = { 1.5, 1.2 } }) end, 'moontorch.optim.Rprop: Invalid eta values: 1.5, 1.2')
    H.errors_with(function() optim.Adam({ p }, { lr = 'x' }) end, 'moontorch.optim.Adam: lr must be a number, got string')
    H.errors_with(function() optim.Adam({ p }, { fused = true }) end, 'fused=true is not supported')
    -- the error is raised at the user's line
    local ok, err = pcall(function() optim.Adam({ p }, { lr = -1 }) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('optimizers_spec.lua', 1, true))
  end)

  it('refuse a gradient that does not match (the fused step checks its operands)', function()
    local core = require 'moontorch.ffi'
    local s = require('ffi').new('mt_adam_settings', { lr = 0.1, beta1 = 0.9, beta2 = 0.999 })
    local p, m, v, n = torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros({})
    local function step(g, m2)
      if core.C.mt_adam_step(p, g, m2 or m, v, nil, n, s) ~= 0 then core.raise_last() end
    end
    H.errors_with(function() step(torch.zeros(2, 3, { dtype = torch.float64 })) end,
      'adam_step: grad has dtype Double but the parameter has dtype Float')
    H.errors_with(function() step(torch.zeros(3, 2)) end, "adam_step: grad of shape [3, 2] does not match the parameter's shape [2, 3]")
    H.errors_with(function() step(torch.zeros(2, 3), v) end, 'adam_step: exp_avg shares memory with exp_avg_sq')
    H.errors_with(function() step(torch.zeros(2, 3), p) end, 'adam_step: exp_avg shares memory with the parameter')
    n = torch.zeros(2)
    H.errors_with(function() step(torch.zeros(2, 3)) end, 'adam_step: step must be a CPU Float or Double tensor of one element')
    assert.are.same({ 0, 0 }, n:tolist()) -- nothing counted
    local rs = require('ffi').new('mt_rmsprop_settings', { lr = 0.1, alpha = 0.9, momentum = 0.5 })
    local function rstep(sq, buf)
      if core.C.mt_rmsprop_step(p, torch.zeros(2, 3), sq, nil, buf, rs) ~= 0 then core.raise_last() end
    end
    H.errors_with(function() rstep(torch.zeros(2, 3), nil) end, 'rmsprop_step: momentum 0.5 needs a momentum_buffer')
    H.errors_with(function() rstep(torch.zeros(2, 2), torch.zeros(2, 3)) end,
      "rmsprop_step: square_avg of shape [2, 2] does not match the parameter's shape [2, 3]")
    H.errors_with(function() rstep(m, m) end, 'rmsprop_step: square_avg shares memory with momentum_buffer')
    local as = require('ffi').new('mt_adagrad_settings', { lr = 0.1 })
    H.errors_with(function()
      if core.C.mt_adagrad_step(p, torch.zeros(2, 3), torch.zeros(2, 3, { dtype = torch.float64 }), n, as) ~= 0 then
        core.raise_last()
      end
    end, 'adagrad_step: sum has dtype Double but the parameter has dtype Float')
    local q = torch.zeros(3, { dtype = torch.int64 })
    q.grad = torch.zeros(3, { dtype = torch.int64 })
    H.errors_with(function() optim.AdamW({ q }):step() end, 'not supported (Float and Double only)')
  end)
end)

-- LBFGS on Rosenbrock's function of four float64 values, three step(closure) calls per case:
-- PyTorch 1.13's losses, values and counters, printed by spec/support/lbfgs_record.py
-- (/usr/bin/python3 spec/support/lbfgs_record.py).
local lbfgs_cases = {
  { 'plain', opts = { lr = 1, max_iter = 15, history_size = 3 },
    losses = { 1269.0, 3.7030525568755315, 3.7014286115897335 },
    x = { -0.775660838994548, 0.6130958563689795, 0.38206591593031436, 0.1459743090304701 }, func_evals = 31, n_iter = 30 },
  { 'strong_wolfe', opts = { lr = 1, max_iter = 15, history_size = 3, line_search_fn = 'strong_wolfe' },
    losses = { 1269.0, 3.7025909775179975, 3.701428610466101 },
    x = { -0.7756602340184523, 0.6130948908366323, 0.38206523864515796, 0.14597362670816522 }, func_evals = 32, n_iter = 26 },
  { 'defaults', opts = {  },
    losses = { 1269.0, 3.701456695931432, 3.70142861043347 },
    x = { -0.7756599279064583, 0.6130945457890865, 0.38206415939612326, 0.14597304128458685 }, func_evals = 26, n_iter = 25 },
  { 'defaults strong_wolfe', opts = { line_search_fn = 'strong_wolfe' },
    losses = { 1269.0, 3.701456695931432, 3.70142861043347 },
    x = { -0.7756599279064583, 0.6130945457890865, 0.38206415939612326, 0.14597304128458685 }, func_evals = 27, n_iter = 25 },
  { 'lr max_eval', opts = { lr = 0.5, max_iter = 10, max_eval = 6 },
    losses = { 1269.0, 46.66655074470294, 3.9528028108189024 },
    x = { -0.8590300762529156, 0.7483148570873158, 0.5639165329603016, 0.3176076469138551 }, func_evals = 18, n_iter = 15 },
  { 'tolerance_change', opts = { tolerance_change = 0.01, line_search_fn = 'strong_wolfe' },
    losses = { 1269.0, 3.70901159748187, 3.70901159748187 },
    x = { -0.8301300113714019, 0.700208006420429, 0.496647630369458, 0.24593146029239868 }, func_evals = 10, n_iter = 9 },
  { 'tolerance_grad', opts = { tolerance_grad = 10.0 },
    losses = { 1269.0, 3.943230974321541, 3.943230974321541 },
    x = { -0.8556647449230592, 0.720096861824378, 0.4972172451496601, 0.21427318808827084 }, func_evals = 8, n_iter = 5 },
}

describe('optim.LBFGS', function()
  for _, c in ipairs(lbfgs_cases) do
    it('matches PyTorch 1.13: ' .. c[1], function()
      local x = start()
      local opt = optim.LBFGS({ x }, copy(c.opts))
      local f = rosenbrock(opt, x)
      local losses = {}
      for i = 1, 3 do losses[i] = opt:step(f):item() end
      H.near(losses, c.losses, 1e-12, 1e-12)
      H.near(flat(x), c.x, 1e-12, 1e-12)
      assert.equal(c.func_evals, opt.state[x].func_evals)
      assert.equal(c.n_iter, opt.state[x].n_iter)
      assert.is_true(x.is_leaf and x.grad_fn == nil)
    end)
  end

  it('float32 parameters follow PyTorch within float32 rounding', function()
    local x = start(torch.float32)
    local opt = optim.LBFGS({ x }, { line_search_fn = 'strong_wolfe' })
    local f = rosenbrock(opt, x)
    for _ = 1, 3 do opt:step(f) end
    assert.equal(torch.float32, x.dtype)
    H.near(flat(x), lbfgs_cases[4].x, 1e-4, 1e-4)
  end)

  it('continues identically after a state_dict round trip through torch.save', function()
    local c = lbfgs_cases[2]
    local x = start()
    local opt = optim.LBFGS({ x }, copy(c.opts))
    local f = rosenbrock(opt, x)
    opt:step(f)
    local path = os.tmpname()
    torch.save(opt:state_dict(), path)
    local x2 = x:detach():clone():requires_grad_()
    local opt2 = optim.LBFGS({ x2 }, copy(c.opts))
    opt2:load_state_dict(torch.load(path))
    os.remove(path)
    local f2 = rosenbrock(opt2, x2)
    for _ = 2, 3 do
      opt:step(f)
      opt2:step(f2)
    end
    assert.are.same(flat(x), flat(x2))
    H.near(flat(x2), c.x, 1e-12, 1e-12)
    assert.equal(c.func_evals, opt2.state[x2].func_evals)
  end)

  it('refuses parameter groups, other line searches and a missing closure', function()
    local a, b = torch.zeros(2):requires_grad_(), torch.zeros(2):requires_grad_()
    H.errors_with(function() optim.LBFGS({ { params = { a } }, { params = { b } } }) end,
      "moontorch.optim.LBFGS: LBFGS doesn't support per-parameter options (parameter groups)")
    H.errors_with(function() optim.LBFGS({ a }):add_param_group { params = { b } } end,
      "LBFGS doesn't support per-parameter options (parameter groups)")
    H.errors_with(function() optim.LBFGS({ a }, { line_search_fn = 'armijo' }) end, "only 'strong_wolfe' is supported")
    H.errors_with(function() optim.LBFGS({ a }):step() end, 'LBFGS needs a closure')
    assert.equal(25, optim.LBFGS({ a }, { max_iter = 20 }).param_groups[1].max_eval)
    assert.truthy(tostring(optim.LBFGS({ a })):find('line_search_fn: None', 1, true))
  end)
end)
