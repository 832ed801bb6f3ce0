-- GradScaler (issue 25): PyTorch's algorithm on the CPU (torch.amp.GradScaler('cpu')): the scale sequence,
-- skipped steps, growth trackers and final parameters of runs with injected infs and NaNs equal PyTorch
-- 1.13's (spec/support/amp_scaler_wants.lua, recorded by spec/support/amp_scaler_record.py: 1.13's own
-- GradScaler class on CPU tensors); unscale_ before clipping, state_dict, errors, disabled scalers.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = torch.nn
local WANT = require 'spec.support.amp_scaler_wants'

local function run(steps, infs, nans, interval, clip)
  local w = torch.tensor({ { 0.5, -0.25, 0.125 }, { 0.75, 0.5, -1.0 } }, { requires_grad = true })
  local b = torch.tensor({ 0.1, -0.2 }, { requires_grad = true })
  local opt = torch.optim.SGD({ w, b }, { lr = 0.01, momentum = 0.9 })
  local scaler = torch.amp.GradScaler('cpu', { init_scale = 2 ^ 16, growth_factor = 2, backoff_factor = 0.5,
    growth_interval = interval })
  local x = torch.tensor({ { 1, 2, -1 }, { 0.5, -0.5, 2 }, { -1, 1, 0.25 }, { 2, 0, 1 } })
  local y = torch.tensor({ { 1, 0 }, { 0, 1 }, { 1, 1 }, { 0.5, -0.5 } })
  local changes, skipped, trackers, last = {}, {}, {}, nil
  for step = 1, steps do
    local loss = ((x:matmul(w:t()) + b - y) ^ 2):mean()
    if infs[step] then loss = loss * math.huge end
    if nans[step] then loss = loss * (0 / 0) end
    opt:zero_grad()
    scaler:scale(loss):backward()
    local before = w:detach():clone()
    if clip then
      scaler:unscale_(opt)
      nn.utils.clip_grad_norm_({ w, b }, 0.5)
    end
    scaler:step(opt)
    if torch.equal(before, w:detach()) then skipped[#skipped + 1] = step end
    scaler:update()
    local s = scaler:get_scale()
    if s ~= last then changes[#changes + 1] = { step, s } end
    last = s
    if step <= 40 then trackers[step] = scaler:_get_growth_tracker() end
  end
  return { changes = changes, skipped = skipped, trackers = trackers, w = w:detach():reshape(-1):tolist(),
    b = b:detach():tolist(), state = scaler:state_dict() }
end

local function set(t)
  local r = {}
  for _, v in ipairs(t) do r[v] = true end
  return r
end

describe('GradScaler', function()
  for name, args in pairs({ short = { 40, { 2, 7, 8, 20 }, { 30 }, 3, false }, clip = { 25, { 5, 6 }, {}, 4, true },
    default = { 2003, { 2002 }, {}, 2000, false } }) do
    it(name .. ': scales, skipped steps, growth trackers, parameters and state_dict equal PyTorch 1.13\'s', function()
      local got = run(args[1], set(args[2]), set(args[3]), args[4], args[5])
      local want = WANT[name]
      assert.are.same(want.changes, got.changes)
      assert.are.same(want.skipped, got.skipped)
      assert.are.same(want.trackers, got.trackers)
      assert.are.same(want.state, got.state)
      H.near(torch.tensor(got.w), torch.tensor(want.w), 1e-6, 1e-5)
      H.near(torch.tensor(got.b), torch.tensor(want.b), 1e-6, 1e-5)
    end)
  end

  it('scale multiplies by the scale (float32, a 1-element tensor), also arrays; unscale_ divides gradients', function()
    local s = torch.amp.GradScaler('cpu')
    assert.are.equal(65536, s:get_scale())
    local l = torch.tensor(2.0)
    assert.are.equal(131072, s:scale(l):item())
    local r = s:scale({ torch.tensor({ 1.0 }), { torch.tensor({ 0.5 }) } })
    assert.are.equal(65536, r[1]:item())
    assert.are.equal(32768, r[2][1]:item())
    -- a bfloat16 output times the float32 scale tensor is float32 (type promotion, as PyTorch)
    assert.are.equal(torch.float32, s:scale(torch.ones(2):bfloat16()).dtype)
    local p = torch.ones(3, { requires_grad = true })
    local opt = torch.optim.SGD({ p }, { lr = 1 })
    s:scale((p * 3):sum()):backward()
    assert.are.same({ 196608, 196608, 196608 }, p.grad:tolist())
    s:unscale_(opt)
    assert.are.same({ 3, 3, 3 }, p.grad:tolist())
    H.errors_with(function() s:unscale_(opt) end, 'unscale_() has already been called on this optimizer since the last update().')
    s:step(opt)
    assert.are.same({ -2, -2, -2 }, p:detach():tolist())
    H.errors_with(function() s:step(opt) end, 'step() has already been called since the last update().')
    H.errors_with(function() s:unscale_(opt) end, 'unscale_() is being called after step().')
    s:update()
    -- update(new_scale): a number or a 1-element float32 tensor
    s:update(1024.0)
    assert.are.equal(1024, s:get_scale())
    s:update(torch.tensor({ 512.0 }))
    assert.are.equal(512, s:get_scale())
    H.errors_with(function() s:update(torch.tensor({ 1, 2 })) end, 'new_scale should be a float')
  end)

  it('errors as PyTorch\'s: steps before scale, closures, FP16 gradients, factors, empty state dicts', function()
    local p = torch.ones(2, { requires_grad = true })
    local opt = torch.optim.SGD({ p }, { lr = 0.1 })
    local s = torch.amp.GradScaler('cpu')
    H.errors_with(function() s:step(opt) end, 'Attempted step but _scale is None.')
    H.errors_with(function() s:update() end, 'Attempted update but _scale is None.')
    s:scale(p:sum())
    H.errors_with(function() s:update() end, 'No inf checks were recorded prior to update.')
    H.errors_with(function() s:step(opt, { closure = function() end }) end, 'Closure use is not currently supported')
    local h = torch.ones(2, { dtype = torch.float16, requires_grad = true })
    h.grad = torch.ones(2, { dtype = torch.float16 })
    H.errors_with(function() s:unscale_(torch.optim.SGD({ h }, { lr = 0.1 })) end, 'Attempting to unscale FP16 gradients.')
    H.errors_with(function() torch.amp.GradScaler('cpu', { growth_factor = 1 }) end, 'The growth factor must be > 1.0.')
    H.errors_with(function() torch.amp.GradScaler('cpu', { backoff_factor = 1 }) end, 'The backoff factor must be < 1.0.')
    H.errors_with(function() torch.amp.GradScaler('cpu'):load_state_dict({}) end, 'The source state dict is empty')
    H.errors_with(function() torch.amp.GradScaler('tpu') end, "expected the device type 'cpu' or 'cuda'")
  end)

  it('state_dict / load_state_dict, and the whole scaler through torch.save', function()
    local s = torch.amp.GradScaler('cpu', { init_scale = 1024, growth_interval = 7 })
    assert.are.same({ scale = 1024, growth_factor = 2, backoff_factor = 0.5, growth_interval = 7, _growth_tracker = 0 },
      s:state_dict())
    local t = torch.amp.GradScaler('cpu')
    t:load_state_dict({ scale = 8, growth_factor = 4, backoff_factor = 0.25, growth_interval = 3, _growth_tracker = 2 })
    assert.are.equal(8, t:get_scale())
    assert.are.equal(4, t:get_growth_factor())
    assert.are.equal(0.25, t:get_backoff_factor())
    assert.are.equal(3, t:get_growth_interval())
    assert.are.equal(2, t:_get_growth_tracker())
    t:set_growth_factor(3)
    t:set_backoff_factor(0.75)
    t:set_growth_interval(9)
    assert.are.same({ 3, 0.75, 9 }, { t:get_growth_factor(), t:get_backoff_factor(), t:get_growth_interval() })
    local path = os.tmpname()
    local p = torch.ones(2, { requires_grad = true })
    local opt = torch.optim.SGD({ p }, { lr = 0.1 })
    t:scale(p:sum()):backward()
    t:step(opt)
    t:update()
    torch.save({ scaler = t, sd = t:state_dict() }, path)
    local back = torch.load(path)
    os.remove(path)
    assert.are.same(t:state_dict(), back.sd)
    assert.are.same(t:state_dict(), back.scaler:state_dict())
    assert.are.equal('torch.amp.GradScaler', torch.typename(back.scaler))
  end)

  it('a disabled scaler changes nothing; a CUDA scaler without CUDA disables itself with PyTorch\'s warning', function()
    local s = torch.amp.GradScaler('cpu', { enabled = false })
    local l = torch.tensor(3.0)
    assert.are.equal(l, s:scale(l))
    assert.is_false(s:is_enabled())
    assert.are.equal(1.0, s:get_scale())
    assert.are.same({}, s:state_dict())
    local p = torch.ones(2, { requires_grad = true })
    p.grad = torch.ones(2)
    local opt = torch.optim.SGD({ p }, { lr = 0.5 })
    s:unscale_(opt)
    s:step(opt)
    s:update()
    assert.are.same({ 0.5, 0.5 }, p:detach():tolist())
    local out, ok, err = H.run_lua([[
      local torch = require 'moontorch'
      local s = torch.cuda.amp.GradScaler()
      local t = torch.amp.GradScaler()
      io.write(tostring(s:is_enabled()), ' ', tostring(t:is_enabled()), ' ', tostring(torch.cuda.amp.GradScaler == torch.amp.GradScaler))
    ]])
    assert.is_true(ok, err)
    assert.are.equal('false false true', out)
    assert.truthy(err:find('torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.', 1, true), err)
  end)

  it('with autocast: a bfloat16 training step scaled, unscaled, clipped and stepped', function()
    torch.manual_seed(2)
    local net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    local opt = torch.optim.Adam(net:parameters(), { lr = 0.01 })
    local scaler = torch.amp.GradScaler('cpu', { growth_interval = 5 })
    local x, y = torch.randn(64, 8), torch.randint(1, 4, { 64 })
    local first, last
    for step = 1, 40 do
      local loss = torch.autocast('cpu', function() return nn.functional.cross_entropy(net(x), y) end)
      opt:zero_grad()
      scaler:scale(loss):backward()
      scaler:unscale_(opt)
      nn.utils.clip_grad_norm_(net:parameters(), 1.0)
      scaler:step(opt)
      scaler:update()
      if step == 1 then first = loss:item() end
      last = loss:item()
    end
    assert.is_true(last < first, ('%g -> %g'):format(first, last))
    assert.are.equal(2 ^ 16 * 2 ^ 8, scaler:get_scale()) -- grown every 5 clean steps
  end)

  it('torch._amp_update_scale_ and torch._amp_foreach_non_finite_check_and_unscale_', function()
    local scale, tracker = torch.tensor({ 4.0 }), torch.tensor({ 1 }, { dtype = torch.int32 })
    local found = torch.tensor({ 0.0 })
    torch._amp_update_scale_(scale, tracker, found, 2.0, 0.5, 2)
    assert.are.same({ { 8 }, { 0 } }, { scale:tolist(), tracker:tolist() })
    found:fill_(1)
    torch._amp_update_scale_(scale, tracker, found, 2.0, 0.5, 2)
    assert.are.same({ { 4 }, { 0 } }, { scale:tolist(), tracker:tolist() })
    -- growth past float32's range keeps the scale
    local big = torch.tensor({ 3e38 })
    torch._amp_update_scale_(big, torch.tensor({ 0 }, { dtype = torch.int32 }), torch.tensor({ 0.0 }), 2.0, 0.5, 1)
    assert.are.equal(torch.tensor({ 3e38 }):item(), big:item())
    local g1, g2 = torch.tensor({ 2.0, 4.0 }), torch.tensor({ 1.0, math.huge })
    local fi = torch.tensor({ 0.0 })
    torch._amp_foreach_non_finite_check_and_unscale_({ g1, g2 }, fi, torch.tensor({ 0.5 }))
    assert.are.same({ 1, 2 }, g1:tolist())
    assert.are.equal(1, fi:item())
    H.errors_with(function() torch._amp_update_scale_(scale, torch.tensor({ 1 }), found, 2.0, 0.5, 2) end,
      'growth_tracker must be a 1-element int32 tensor.')
  end)
end)
