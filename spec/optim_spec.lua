-- optim.Optimizer and optim.SGD against PyTorch 1.13.
local H = require 'spec.support.helper'
local torch = H.torch
local optim = require 'moontorch.optim'
local ffi = require 'ffi'
local C = require('moontorch.ffi').C

-- Parameters and gradients from formulas exact in float32, written the same way in the Python
-- that recorded the expected numbers (/usr/bin/python3, torch 1.13):
--   def pvals(j, n): return [((i*5 + j*3) % 7 - 3) / 8 for i in range(n)]
--   def gvals(k, j, n): return [((i*7 + k*3 + j*2) % 11 - 5) / 4 for i in range(n)]
--   def make(j, shape, dtype, transposed=False):
--       t = torch.tensor(pvals(j, numel(shape)), dtype=dtype).reshape(shape)
--       if transposed: t = t.t().contiguous().t()
--       return t.requires_grad_()
--   def run(name, groups_spec, opts, dtype=torch.float32, transposed=False, gtrans=False, steps=5):
--       ps = [make(j, [(2, 3), (3,)][j], dtype, transposed and j == 0) for j in range(2)]
--       params = ps if groups_spec is None else [dict(params=[ps[j]], **extra) for j, extra in groups_spec]
--       opt = torch.optim.SGD(params, **opts)
--       for k in range(1, steps + 1):
--           for j, p in enumerate(ps):
--               g = torch.tensor(gvals(k, j, p.numel()), dtype=dtype).reshape(p.shape)
--               if gtrans and j == 0: g = g.t().contiguous().t()
--               p.grad = g
--           opt.step()
--       # printed: p.detach().reshape(-1).tolist() and opt.state[p]['momentum_buffer'] ('%.17g')
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
local function make(j, dtype, transposed)
  local s = shapes[j + 1]
  local n = s[2] and s[1] * s[2] or s[1]
  local t = torch.tensor(pvals(j, n), { dtype = dtype }):reshape(s)
  if transposed then t = t:t():contiguous():t() end
  return t:requires_grad_()
end
local function set_grads(ps, k, dtype, gtrans)
  for j, p in ipairs(ps) do
    local g = torch.tensor(gvals(k, j - 1, p:numel()), { dtype = dtype }):reshape(p:size())
    if gtrans and j == 1 then g = g:t():contiguous():t() end
    p.grad = g
  end
end
local function flat(t) return t:detach():reshape(-1):tolist() end

local cases = {
  { name = 'plain', opts = { lr = 0.1 },
    p0 = {-0.32499998807907104, 0.25, -0.049999997019767761, -0.075000002980232239, 0.22499999403953552, 0.19999998807907104},
    p1 = {0.074999995529651642, -0.22500000894069672, 0.35000002384185791} },
  { name = 'momentum', opts = { lr = 0.1, momentum = 0.9 },
    p0 = {-0.3122200071811676, -0.02146250382065773, -0.177777498960495, 0.14138250052928925, 0.15714000165462494, 0.27582499384880066},
    b0 = {-0.48579996824264526, -0.30162501335144043, 0.3580249547958374, -1.5095750093460083, 1.4246000051498413, -0.66575002670288086},
    p1 = {0.15082500874996185, -0.052515018731355667, 0.48574253916740417},
    b1 = {-0.66575002670288086, -0.058349967002868652, 0.40082496404647827} },
  { name = 'dampening', opts = { lr = 0.1, momentum = 0.9, dampening = 0.5 },
    p0 = {-0.2412324994802475, -0.14167499542236328, -0.14007751643657684, 0.099257491528987885, 0.06131502240896225, 0.20041249692440033},
    b0 = {-0.40692499279975891, 0.25924992561340332, 0.26102501153945923, -1.0008249282836914, 1.0403499603271484, -0.33287501335144043},
    p1 = {0.075412504374980927, 0.053497478365898132, 0.27680501341819763},
    b1 = {-0.33287501335144043, -0.35722494125366211, 0.44644996523857117} },
  { name = 'nesterov', opts = { lr = 0.1, momentum = 0.9, nesterov = true },
    p0 = {-0.2684980034828186, 0.0056837582960724831, -0.20999975502490997, 0.27724424004554749, 0.028925981372594833, 0.33574250340461731},
    b0 = {-0.48579996824264526, -0.30162501335144043, 0.3580249547958374, -1.5095750093460083, 1.4246000051498413, -0.66575002670288086},
    p1 = {0.2107425183057785, -0.047263503074645996, 0.44966822862625122},
    b1 = {-0.66575002670288086, -0.058349967002868652, 0.40082496404647827} },
  { name = 'weight_decay', opts = { lr = 0.1, momentum = 0.9, weight_decay = 0.01 },
    p0 = {-0.30765488743782043, -0.023197999224066734, -0.1768510490655899, 0.14353388547897339, 0.15299086272716522, 0.27433779835700989},
    b0 = {-0.50013124942779541, -0.29842710494995117, 0.35381552577018738, -1.5145193338394165, 1.4371845722198486, -0.66057276725769043},
    p1 = {0.15097692608833313, -0.050863068550825119, 0.48081889748573303},
    b1 = {-0.66567015647888184, -0.06175529956817627, 0.41769886016845703} },
  { name = 'weight_decay without momentum', opts = { lr = 0.1, weight_decay = 0.01 },
    p0 = {-0.32315358519554138, 0.24910195171833038, -0.04982534795999527, -0.074027121067047119, 0.22322846949100494, 0.19930115342140198},
    p1 = {0.074924901127815247, -0.22400188446044922, 0.34797874093055725} },
  { name = 'maximize', opts = { lr = 0.1, momentum = 0.9, weight_decay = 0.01, maximize = true },
    p0 = {-0.43251025676727295, 0.51664137840270996, 0.1768510490655899, -0.63697737455368042, 0.58717429637908936, -0.027616074308753014},
    b0 = {0.46954670548439026, 0.31881684064865112, -0.35381552577018738, 1.4941297769546509, -1.4066001176834106, 0.67076754570007324},
    p1 = {-0.15097692608833313, -0.44258031249046326, 0.25934630632400513},
    b1 = {0.66567015647888184, 0.041365504264831543, -0.38711440563201904} },
  -- run('groups', [(0, {}), (1, dict(lr=0.01, momentum=0.5))], dict(lr=0.1, momentum=0.9))
  { name = 'two groups', groups = { {}, { lr = 0.01, momentum = 0.5 } }, opts = { lr = 0.1, momentum = 0.9 },
    p0 = {-0.3122200071811676, -0.02146250382065773, -0.177777498960495, 0.14138250052928925, 0.15714000165462494, 0.27582499384880066},
    b0 = {-0.48579996824264526, -0.30162501335144043, 0.3580249547958374, -1.5095750093460083, 1.4246000051498413, -0.66575002670288086},
    p1 = {0.012812499888241291, -0.24593749642372131, 0.37890625},
    b1 = {-0.21875, -0.09375, 0.890625} },
  { name = 'float64', dtype = 'float64', opts = { lr = 0.1, momentum = 0.9, weight_decay = 0.01, nesterov = true },
    p0 = {-0.262740916673532, 0.0045006727517720585, -0.20822777451212002, 0.27919602697266038, 0.023937616397964486, 0.33370916913407234},
    b0 = {-0.50006324820718473, -0.30074308794438065, 0.352828472413658, -1.5126355251160533, 1.4366846351467508, -0.65974380449521042},
    p1 = {0.21080432965490753, -0.046029118860312135, 0.44296972056499212},
    b1 = {-0.66483210739425003, -0.060521104923961122, 0.41902405533884246} },
  -- run('transposed', None, dict(lr=0.1, momentum=0.9, weight_decay=0.01), transposed=True, gtrans=True)
  { name = 'transposed parameter and grad', transposed = true, gtrans = true,
    opts = { lr = 0.1, momentum = 0.9, weight_decay = 0.01 },
    p0 = {-0.30765488743782043, -0.023197999224066734, -0.1768510490655899, 0.14353388547897339, 0.15299086272716522, 0.27433779835700989},
    b0 = {-0.50013124942779541, -0.29842710494995117, 0.35381552577018738, -1.5145193338394165, 1.4371845722198486, -0.66057276725769043},
    p1 = {0.15097692608833313, -0.050863068550825119, 0.48081889748573303},
    b1 = {-0.66567015647888184, -0.06175529956817627, 0.41769886016845703} },
  -- the same numbers with a transposed parameter and a contiguous grad (strides differ)
  { name = 'transposed parameter, contiguous grad', transposed = true,
    opts = { lr = 0.1, momentum = 0.9, weight_decay = 0.01 },
    p0 = {-0.30765488743782043, -0.023197999224066734, -0.1768510490655899, 0.14353388547897339, 0.15299086272716522, 0.27433779835700989},
    b0 = {-0.50013124942779541, -0.29842710494995117, 0.35381552577018738, -1.5145193338394165, 1.4371845722198486, -0.66057276725769043},
    p1 = {0.15097692608833313, -0.050863068550825119, 0.48081889748573303},
    b1 = {-0.66567015647888184, -0.06175529956817627, 0.41769886016845703} },
}

local function build(c)
  local dtype = c.dtype and torch[c.dtype] or torch.float32
  local ps = { make(0, dtype, c.transposed), make(1, dtype) }
  local params = ps
  if c.groups then
    params = {}
    for j, extra in ipairs(c.groups) do
      local g = { params = { ps[j] } }
      for k, v in pairs(extra) do g[k] = v end
      params[j] = g
    end
  end
  return ps, optim.SGD(params, c.opts), dtype
end

describe('optim.SGD matches PyTorch step for step', function()
  for _, c in ipairs(cases) do
    it(c.name, function()
      local ps, opt, dtype = build(c)
      local tol = dtype == torch.float64 and 1e-14 or 1e-6
      for k = 1, 5 do
        set_grads(ps, k, dtype, c.gtrans)
        opt:step()
      end
      assert.equal(dtype, ps[1].dtype)
      if c.transposed then assert.is_false(ps[1]:is_contiguous()) end
      H.near(flat(ps[1]), c.p0, tol, tol)
      H.near(flat(ps[2]), c.p1, tol, tol)
      for j, p in ipairs(ps) do
        local b = opt.state[p].momentum_buffer
        local want = c['b' .. (j - 1)]
        if want then
          assert.equal(dtype, b.dtype)
          H.near(flat(b), want, tol, tol)
        else
          assert.is_nil(b)
        end
        -- the step records nothing: still a leaf that requires grad, no grad_fn
        assert.is_true(p.is_leaf)
        assert.is_true(p.requires_grad)
        assert.is_nil(p.grad_fn)
      end
    end)
  end

  it('skips parameters without a gradient (no state for them)', function()
    local a, b = make(0, torch.float32), make(1, torch.float32)
    local opt = optim.SGD({ a, b }, { lr = 0.1, momentum = 0.9 })
    a.grad = torch.ones(2, 3)
    opt:step()
    H.near(flat(b), pvals(1, 3), 0, 0)
    assert.is_nil(opt.state[b])
    assert.is_not_nil(opt.state[a].momentum_buffer)
    -- a later step without a's gradient leaves it (and its buffer) alone
    local before, buf = flat(a), flat(opt.state[a].momentum_buffer)
    a.grad = nil
    b.grad = torch.ones(3)
    opt:step()
    H.near(flat(a), before, 0, 0)
    H.near(flat(opt.state[a].momentum_buffer), buf, 0, 0)
    H.near(flat(opt.state[b].momentum_buffer), { 1, 1, 1 }, 0, 0)
  end)

  it('updates a non-dense view in place from an expanded gradient', function()
    local base = torch.arange(24, { dtype = torch.float64 }):reshape(4, 6)
    local p = base:narrow(2, 2, 3):requires_grad_() -- columns 2..4, strides (6, 1)
    local ref = p:detach():clone()
    local opt = optim.SGD({ p }, { lr = 0.5, momentum = 0.5, dampening = 0.25, weight_decay = 0.1 })
    local g = torch.tensor({ 1, 2, 3 }, { dtype = torch.float64 }):expand(4, 3)
    local buf
    for _ = 1, 3 do
      p.grad = g
      opt:step()
      local d = g + ref * 0.1
      if buf == nil then buf = d:clone() else buf = buf * 0.5 + d * 0.75 end
      ref = ref - buf * 0.5
    end
    assert.is_true(torch.allclose(p:detach(), ref, 1e-12, 1e-12))
    assert.is_true(torch.allclose(base:narrow(2, 2, 3), ref, 1e-12, 1e-12)) -- in base's storage
    H.near(base:narrow(2, 1, 1):reshape(-1):tolist(), { 0, 6, 12, 18 }, 0, 0) -- the rest untouched
    H.near(base:narrow(2, 5, 2):reshape(-1):tolist(), { 4, 5, 10, 11, 16, 17, 22, 23 }, 0, 0)
    assert.is_true(opt.state[p].momentum_buffer:is_contiguous())
  end)

  it('bumps the version counter of the parameter once per step', function()
    local p = make(1, torch.float32)
    local opt = optim.SGD({ p }, { lr = 0.1, momentum = 0.9 })
    p.grad = torch.ones(3)
    local v0 = p._version
    opt:step()
    assert.equal(v0 + 1, p._version)
    opt:step()
    assert.equal(v0 + 2, p._version)
  end)

  it('counts as an in-place change for a graph that saved the parameter', function()
    local p = torch.ones(3):requires_grad_()
    local opt = optim.SGD({ p }, { lr = 0.1 })
    local y = (p * p):sum()
    p.grad = torch.ones(3)
    opt:step()
    H.errors_with(function() y:backward() end, 'modified by an inplace operation')
  end)

  it('matches the formula on large tensors (threaded contiguous and strided loops)', function()
    torch.manual_seed(3)
    for _, transposed in ipairs { false, true } do
      local p0 = torch.randn(400, 300, { dtype = torch.float64 })
      if transposed then p0 = p0:t():contiguous():t() end
      local p = p0:clone():requires_grad_()
      if transposed then p = p0:t():contiguous():t():requires_grad_() end
      local opt = optim.SGD({ p }, { lr = 0.05, momentum = 0.9, weight_decay = 0.01, nesterov = true })
      local ref, buf = p0:clone(), nil
      for _ = 1, 3 do
        local g = torch.randn(400, 300, { dtype = torch.float64 })
        p.grad = g
        opt:step()
        local d = g + ref * 0.01
        if buf == nil then buf = d:clone() else buf = buf * 0.9 + d end
        d = d + buf * 0.9
        ref = ref - d * 0.05
      end
      assert.equal(transposed, not p:is_contiguous())
      assert.is_true(torch.allclose(p:detach(), ref, 1e-12, 1e-12))
      assert.is_true(torch.allclose(opt.state[p].momentum_buffer, buf, 1e-12, 1e-12))
    end
  end)
end)

describe('optim.SGD options', function()
  it('reads lr changes through param_groups at the next step', function()
    local p = torch.zeros(3, { dtype = torch.float64 }):requires_grad_()
    local opt = optim.SGD({ p }, { lr = 0.1 })
    p.grad = torch.ones(3, { dtype = torch.float64 })
    opt:step()
    H.near(flat(p), { -0.1, -0.1, -0.1 }, 1e-15, 0)
    opt.param_groups[1].lr = 0.25
    opt:step()
    H.near(flat(p), { -0.35, -0.35, -0.35 }, 1e-15, 0)
    -- momentum switched on later: the buffer starts from that step's gradient
    opt.param_groups[1].momentum = 0.5
    opt:step()
    H.near(flat(p), { -0.6, -0.6, -0.6 }, 1e-15, 0)
    H.near(flat(opt.state[p].momentum_buffer), { 1, 1, 1 }, 0, 0)
    opt:step()
    H.near(flat(p), { -0.975, -0.975, -0.975 }, 1e-15, 0)
  end)

  it('takes lr positionally too', function()
    local p = torch.zeros(2):requires_grad_()
    local opt = optim.SGD({ p }, 0.5, { momentum = 0.9 })
    assert.equal(0.5, opt.param_groups[1].lr)
    assert.equal(0.9, opt.param_groups[1].momentum)
  end)

  it('keeps the group tables with their defaults filled in', function()
    local a, b = torch.zeros(2):requires_grad_(), torch.zeros(3):requires_grad_()
    local g2 = { params = b, lr = 0.01 }
    local opt = optim.SGD({ { params = { a } }, g2 }, { lr = 0.1, momentum = 0.9 })
    assert.equal(g2, opt.param_groups[2])
    assert.equal(b, opt.param_groups[2].params[1]) -- a lone tensor becomes an array
    assert.equal(0.01, g2.lr)
    assert.equal(0.9, g2.momentum)
    assert.equal(0.1, opt.param_groups[1].lr)
    assert.equal(false, opt.param_groups[1].nesterov)
    assert.equal(0, opt.param_groups[1].weight_decay)
    -- add_param_group later
    local c = torch.zeros(1):requires_grad_()
    opt:add_param_group { params = { c }, momentum = 0 }
    assert.equal(3, #opt.param_groups)
    assert.equal(0.1, opt.param_groups[3].lr)
    assert.equal(0, opt.param_groups[3].momentum)
  end)

  it('is an optim.Optimizer', function()
    local opt = optim.SGD({ torch.zeros(1):requires_grad_() }, { lr = 1 })
    assert.is_true(torch.isinstance(opt, optim.Optimizer))
    assert.is_true(torch.isinstance(opt, 'optim.SGD'))
    assert.equal('optim.SGD', torch.typename(opt))
  end)
end)

describe('optim.SGD step(closure)', function()
  it('evaluates the closure with gradients enabled and returns its loss', function()
    local w = torch.tensor({ 1.0, -2.0 }):requires_grad_()
    local opt = optim.SGD({ w }, { lr = 0.1 })
    local calls = 0
    local closure = function()
      calls = calls + 1
      assert.is_true(torch.is_grad_enabled())
      opt:zero_grad()
      local loss = (w * w):sum()
      loss:backward()
      return loss
    end
    local loss = torch.no_grad(function()
      local l = opt:step(closure)
      assert.is_false(torch.is_grad_enabled()) -- the caller's mode is back after the closure
      return l
    end)
    assert.equal(1, calls)
    H.near(loss:item(), 5, 1e-6, 0)
    -- w - 0.1 * 2w
    H.near(flat(w), { 0.8, -1.6 }, 1e-6, 1e-6)
    assert.is_true(torch.is_grad_enabled())
    -- an error in the closure propagates and restores the grad mode
    local ok = pcall(torch.no_grad, function() opt:step(function() error('boom') end) end)
    assert.is_false(ok)
    assert.is_true(torch.is_grad_enabled())
    assert.is_nil(opt:step())
  end)
end)

describe('optim.Optimizer:zero_grad', function()
  it('zeroes gradients in place by default (PyTorch 1.13)', function()
    local p = torch.ones(3):requires_grad_()
    local opt = optim.SGD({ p }, { lr = 0.1 })
    p.grad = torch.tensor({ 1, 2, 3 })
    local g = p.grad
    opt:zero_grad()
    assert.equal(g, p.grad)
    H.near(flat(p.grad), { 0, 0, 0 }, 0, 0)
    p.grad = torch.tensor({ 1, 2, 3 })
    opt:zero_grad(false)
    H.near(flat(p.grad), { 0, 0, 0 }, 0, 0)
  end)

  it('drops them with set_to_none', function()
    local p, q = torch.ones(3):requires_grad_(), torch.ones(2):requires_grad_()
    local opt = optim.SGD({ p, q }, { lr = 0.1 })
    p.grad = torch.ones(3)
    opt:zero_grad(true)
    assert.is_nil(p.grad)
    assert.is_nil(q.grad)
    p.grad = torch.ones(3)
    opt:zero_grad { set_to_none = true }
    assert.is_nil(p.grad)
  end)

  it('detaches a gradient that has a grad_fn before zeroing it', function()
    local p = torch.ones(3):requires_grad_()
    local opt = optim.SGD({ p }, { lr = 0.1 })
    local x = torch.ones(3):requires_grad_()
    p.grad = x * 2
    assert.is_not_nil(p.grad.grad_fn)
    opt:zero_grad()
    assert.is_nil(p.grad.grad_fn)
    assert.is_false(p.grad.requires_grad)
    H.near(flat(p.grad), { 0, 0, 0 }, 0, 0)
  end)
end)

describe('optim.Optimizer state_dict', function()
  it("has PyTorch's layout with 0-based parameter ids", function()
    -- o = SGD([{'params': [p]}, {'params': [q], 'lr': 0.01, 'momentum': 0.5}], lr=1e-4, momentum=0.9,
    --         weight_decay=1e-5, nesterov=True); before any step o.state_dict() is
    -- {'state': {}, 'param_groups': [{'lr': 0.0001, 'momentum': 0.9, 'dampening': 0, 'weight_decay': 1e-05,
    --  'nesterov': True, 'maximize': False, 'foreach': None, 'differentiable': False, 'params': [0]},
    --  {'lr': 0.01, 'momentum': 0.5, ..., 'params': [1]}]}
    local p, q = torch.ones(3):requires_grad_(), torch.zeros(2):requires_grad_()
    local opt = optim.SGD({ { params = { p } }, { params = { q }, lr = 0.01, momentum = 0.5 } },
      { lr = 1e-4, momentum = 0.9, weight_decay = 1e-5, nesterov = true })
    local sd = opt:state_dict()
    assert.same({}, sd.state)
    assert.same({ lr = 1e-4, momentum = 0.9, dampening = 0, weight_decay = 1e-5, nesterov = true, maximize = false,
      differentiable = false, params = { 0 } }, sd.param_groups[1])
    assert.same({ lr = 0.01, momentum = 0.5, dampening = 0, weight_decay = 1e-5, nesterov = true, maximize = false,
      differentiable = false, params = { 1 } }, sd.param_groups[2])
    p.grad = torch.ones(3)
    opt:step()
    sd = opt:state_dict()
    assert.equal(opt.state[p].momentum_buffer, sd.state[0].momentum_buffer) -- the optimizer's own tensor
    assert.is_nil(sd.state[1])
  end)

  it('keeps an entry without buffer for parameters stepped without momentum', function()
    -- SGD([p], lr=0.1); p.grad = ones; step(); state_dict()['state'] == {0: {'momentum_buffer': None}}
    local p = torch.ones(3):requires_grad_()
    local opt = optim.SGD({ p }, { lr = 0.1 })
    p.grad = torch.ones(3)
    opt:step()
    assert.same({ [0] = {} }, opt:state_dict().state)
  end)

  it('round-trips: a fresh optimizer loaded from another continues identically', function()
    local c = cases[5] -- momentum 0.9, weight decay 0.01
    local ps, opt = build(c)
    for k = 1, 3 do
      set_grads(ps, k, torch.float32)
      opt:step()
    end
    local qs = { ps[1]:detach():clone():requires_grad_(), ps[2]:detach():clone():requires_grad_() }
    local fresh = optim.SGD(qs, { lr = 0.5, momentum = 0.1 })
    local sd = opt:state_dict()
    fresh:load_state_dict(sd)
    assert.equal(0.1, fresh.param_groups[1].lr)
    assert.equal(0.9, fresh.param_groups[1].momentum)
    assert.equal(qs[1], fresh.param_groups[1].params[1]) -- its own parameters
    assert.equal(qs[2], fresh.param_groups[1].params[2])
    local b = fresh.state[qs[1]].momentum_buffer
    assert.is_not_nil(b)
    assert.are_not.equal(opt.state[ps[1]].momentum_buffer, b) -- a copy
    assert.is_nil(fresh.state[ps[1]])
    for k = 4, 5 do
      set_grads(ps, k, torch.float32)
      set_grads(qs, k, torch.float32)
      opt:step()
      fresh:step()
    end
    H.near(flat(qs[1]), flat(ps[1]), 0, 0)
    H.near(flat(qs[2]), flat(ps[2]), 0, 0)
    -- and both equal PyTorch's five steps
    H.near(flat(qs[1]), c.p0, 1e-6, 1e-6)
    H.near(flat(fresh.state[qs[2]].momentum_buffer), c.b1, 1e-6, 1e-6)
    -- changing the loaded dict afterwards does not reach the optimizer
    sd.param_groups[1].lr = 7
    assert.equal(0.1, fresh.param_groups[1].lr)
  end)

  it("casts loaded state tensors to the parameter's dtype", function()
    local p = torch.zeros(3, { dtype = torch.float64 }):requires_grad_()
    local opt = optim.SGD({ p }, { lr = 0.1, momentum = 0.9 })
    p.grad = torch.ones(3, { dtype = torch.float64 })
    opt:step()
    local q = torch.zeros(3):requires_grad_()
    local o2 = optim.SGD({ q }, { lr = 0.1, momentum = 0.9 })
    o2:load_state_dict(opt:state_dict())
    assert.equal(torch.float32, o2.state[q].momentum_buffer.dtype)
    q.grad = torch.ones(3)
    o2:step()
    H.near(flat(o2.state[q].momentum_buffer), { 1.9, 1.9, 1.9 }, 1e-6, 1e-6)
  end)

  it("rejects a state dict that does not fit, with PyTorch's messages", function()
    local p = torch.ones(3):requires_grad_()
    local opt = optim.SGD({ p }, { lr = 0.1 })
    H.errors_with(function() opt:load_state_dict { state = {}, param_groups = {} } end,
      'moontorch.optim.load_state_dict: loaded state dict has a different number of parameter groups')
    H.errors_with(function() opt:load_state_dict { state = {}, param_groups = { { params = { 0, 1 }, lr = 0.1 } } } end,
      "moontorch.optim.load_state_dict: loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
    H.errors_with(function() opt:load_state_dict(5) end, "moontorch.optim.load_state_dict: expected a state dict")
  end)
end)

describe('optim.SGD errors', function()
  -- /usr/bin/python3, torch 1.13: the messages of SGD([p], ...) for each argument below
  local p = torch.ones(3):requires_grad_()
  local function sgd(params, opts) return function() local o = optim.SGD(params, opts); return o end end
  local errs = {
    { sgd({ p }, {}), "moontorch.optim.add_param_group: parameter group didn't specify a value of required optimization parameter lr" },
    { sgd({ p }, { lr = -1 }), 'moontorch.optim.SGD: Invalid learning rate: -1' },
    { sgd({ p }, { lr = -0.5 }), 'moontorch.optim.SGD: Invalid learning rate: -0.5' },
    { sgd({ p }, { lr = 0.1, momentum = -0.5 }), 'moontorch.optim.SGD: Invalid momentum value: -0.5' },
    { sgd({ p }, { lr = 0.1, weight_decay = -1e-5 }), 'moontorch.optim.SGD: Invalid weight_decay value: -1e-05' },
    { sgd({ p }, { lr = 0.1, nesterov = true }), 'moontorch.optim.SGD: Nesterov momentum requires a momentum and zero dampening' },
    { sgd({ p }, { lr = 0.1, momentum = 0.9, dampening = 0.1, nesterov = true }),
      'moontorch.optim.SGD: Nesterov momentum requires a momentum and zero dampening' },
    { sgd({}, { lr = 0.1 }), 'moontorch.optim.SGD: optimizer got an empty parameter list' },
    { sgd({ p * 2 }, { lr = 0.1 }), "moontorch.optim.add_param_group: can't optimize a non-leaf Tensor" },
    { sgd({ p, 3 }, { lr = 0.1 }), 'moontorch.optim.add_param_group: optimizer can only optimize Tensors, but one of the params is number' },
    { sgd({ { params = { p } }, { params = { p } } }, { lr = 0.1 }),
      'moontorch.optim.add_param_group: some parameters appear in more than one parameter group' },
    { sgd(p, { lr = 0.1 }), 'moontorch.optim.SGD: params argument given to the optimizer should be an iterable of Tensors or dicts, but got torch.FloatTensor' },
    { sgd({ p }, { lr = 0.1, lrr = 1 }), "moontorch.optim.SGD: unexpected option 'lrr'" },
    { sgd({ p }, { lr = '0.1' }), 'moontorch.optim.SGD: lr must be a number, got string' },
    { sgd({ p }, { lr = 0.1, differentiable = true }), 'moontorch.optim.SGD: differentiable=true is not supported' },
  }
  for i, e in ipairs(errs) do
    it(e[2], function()
      local err = H.errors_with(e[1], e[2])
      assert.truthy(err:find('optim_spec.lua', 1, true), 'raised at the caller: ' .. err)
    end)
  end

  it('add_param_group checks its argument', function()
    local opt = optim.SGD({ p }, { lr = 0.1 })
    H.errors_with(function() opt:add_param_group(p) end, 'moontorch.optim.add_param_group: param group must be a dict')
    H.errors_with(function() opt:add_param_group { params = { p } } end,
      'moontorch.optim.add_param_group: some parameters appear in more than one parameter group')
    H.errors_with(function() opt:add_param_group { lr = 1 } end, "moontorch.optim.add_param_group: param group must hold its parameters in 'params'")
    -- a failed add leaves the groups as they were
    assert.equal(1, #opt.param_groups)
  end)

  it('refuses parameters of dtypes other than float32 and float64 at step', function()
    local h = torch.ones(3, { dtype = torch.float16 }):requires_grad_()
    local opt = optim.SGD({ h }, { lr = 0.1 })
    h.grad = torch.ones(3, { dtype = torch.float16 })
    H.errors_with(function() opt:step() end, 'moontorch.sgd_step: parameters of dtype Half are not supported (Float and Double only)')
  end)

  it('rejects non-number hyperparameters set through param_groups', function()
    local opt = optim.SGD({ p }, { lr = 0.1 })
    opt.param_groups[1].lr = 'fast'
    H.errors_with(function() opt:step() end, 'moontorch.optim.SGD:step: lr, momentum, dampening and weight_decay')
  end)
end)

describe('mt_sgd_step (the C front door)', function()
  local function last() return ffi.string(C.mt_last_error()) end
  -- the settings struct: lr, momentum, dampening, weight_decay, nesterov, maximize
  local function S(lr, momentum) return ffi.new('mt_sgd_settings', { lr, momentum or 0, 0, 0, 0, 0 }) end
  it('checks shapes, dtypes, the buffer and overlap, naming both shapes', function()
    local p, g = torch.zeros(2, 3), torch.zeros(3, 2)
    assert.equal(C.MT_ESHAPE, C.mt_sgd_step(p, g, nil, S(0.1), 0))
    assert.equal('sgd_step: grad of shape [3, 2] does not match the parameter\'s shape [2, 3]', last())
    assert.equal(C.MT_ESHAPE, C.mt_sgd_step(p, torch.zeros(2, 3), torch.zeros(6), S(0.1, 0.9), 0))
    assert.equal('sgd_step: momentum_buffer of shape [6] does not match the parameter\'s shape [2, 3]', last())
    assert.equal(C.MT_EDTYPE, C.mt_sgd_step(p, torch.zeros(2, 3, { dtype = torch.float64 }), nil, S(0.1), 0))
    assert.equal('sgd_step: grad has dtype Double but the parameter has dtype Float', last())
    assert.equal(C.MT_EDTYPE, C.mt_sgd_step(torch.zeros(3, { dtype = torch.int64 }), torch.zeros(3, { dtype = torch.int64 }),
      nil, S(0.1), 0))
    assert.equal('sgd_step: parameters of dtype Long are not supported (Float and Double only)', last())
    assert.equal(C.MT_EINVAL, C.mt_sgd_step(p, torch.zeros(2, 3), nil, S(0.1, 0.9), 0))
    assert.equal('sgd_step: momentum 0.9 needs a momentum buffer', last())
    assert.equal(C.MT_EINVAL, C.mt_sgd_step(p, p, nil, S(0.1), 0))
    assert.equal('sgd_step: grad shares memory with the parameter', last())
    assert.equal(C.MT_EINVAL, C.mt_sgd_step(p, g, nil, nil, 0))
    assert.equal('sgd_step: no settings given', last())
    -- NULL grad and a parameter without .grad: nothing to do
    assert.equal(C.MT_OK, C.mt_sgd_step(p, nil, nil, S(0.1), 0))
  end)

  it('handles scalars and empty tensors', function()
    local s = torch.tensor(2.0)
    assert.equal(C.MT_OK, C.mt_sgd_step(s, torch.tensor(1.0), nil, S(0.5), 0))
    assert.equal(1.5, s:item())
    local e = torch.zeros(0, 3)
    assert.equal(C.MT_OK, C.mt_sgd_step(e, torch.zeros(0, 3), torch.zeros(0, 3), S(0.5, 0.9), 1))
  end)
end)

describe('optim.Optimizer printing', function()
  it("prints as PyTorch's repr", function()
    -- repr(SGD([{'params': [p]}, {'params': [q], 'lr': 0.01, 'momentum': 0.5}], lr=1e-4, momentum=0.9,
    --          weight_decay=1e-5, nesterov=True))
    local p, q = torch.ones(3):requires_grad_(), torch.zeros(2):requires_grad_()
    local opt = optim.SGD({ { params = { p } }, { params = { q }, lr = 0.01, momentum = 0.5 } },
      { lr = 1e-4, momentum = 0.9, weight_decay = 1e-5, nesterov = true })
    assert.equal('SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n    foreach: None\n    lr: 0.0001\n    maximize: False\n    momentum: 0.9\n    nesterov: True\n    weight_decay: 1e-05\n\nParameter Group 1\n    dampening: 0\n    differentiable: False\n    foreach: None\n    lr: 0.01\n    maximize: False\n    momentum: 0.5\n    nesterov: True\n    weight_decay: 1e-05\n)',
      tostring(opt))
  end)
end)
