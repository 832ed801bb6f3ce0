-- The table-driven spec of the one op list: it walks every op of MT_OP_LIST (through
-- moontorch.ops.list) and fails for an op without forward cases, for a differentiable op without a
-- gradient check, and runs every case on the meta device. Each case (spec/support/op_cases.lua)
--   * runs on the CPU and matches PyTorch 1.13's result: dtype, shape, values (recorded in
--     spec/support/op_wants.lua by spec/support/op_record.lua, which says how);
--   * passes gradcheck on the inputs it names, when the list calls the op differentiable;
--   * runs on the meta device and gives the CPU result's shape, dtype and strides without data,
--     or, for an op that needs values (`meta = 'no data'`), fails saying so;
--   * runs on the fake CUDA device (core/fake/fake.c: a CPU-run backend whose memory the host cannot
--     read outside it) and gives the CPU's results bit for bit, on that device, read back through
--     the seam; a differentiable case's gradients too. An op whose front door read a device tensor's
--     memory directly would fault there.
local H = require 'spec.support.helper'
local torch = H.torch
_G.torch = torch -- the cases' functions reach moontorch as `torch`
local list = require 'moontorch.ops.list'
local cases = require 'spec.support.op_cases'
local wants = require 'spec.support.op_wants'
local ag = torch.autograd

local ALL = cases.all(list.ops())

-- the named inputs on a device (nil: the CPU), those named in `grad` requiring grad
local function inputs(device, grad)
  local I = { device = device and torch.device(device) or nil }
  for k, v in pairs(cases.inputs) do
    local t
    if v.int64 then t = torch.tensor(v.int64, { dtype = torch.int64 })
    elseif v.bool then t = torch.tensor(v.bool, { dtype = torch.bool })
    elseif v.index then t = torch.tensor(v.index, { dtype = torch.int64 }) + 1 -- positions from 1
    else t = torch.tensor(v, { dtype = torch.float64 }) end
    if device then t = t:to(device) end
    I[k] = t
  end
  for _, k in ipairs(grad or {}) do I[k]:requires_grad_() end
  return I
end

-- a call's outputs as a list (a Lua boolean as {value = b})
local function outputs(...)
  local r = { ... }
  for i, v in ipairs(r) do
    if type(v) == 'boolean' then r[i] = { value = v } end
  end
  return r
end

local function check_forward(name, k, c)
  local want = wants[name] and wants[name][k]
  assert(want, name .. ' case ' .. k .. ': no recorded PyTorch result (run spec/support/op_record.lua)')
  assert(not want.error, name .. ' case ' .. k .. ': PyTorch failed: ' .. tostring(want.error))
  local got = outputs(c.lua(inputs()))
  assert(#got >= #want, ('%s case %d: %d outputs, PyTorch gives %d'):format(name, k, #got, #want))
  for i, w in ipairs(want) do
    local g = got[i]
    local what = ('%s case %d output %d'):format(name, k, i)
    if w.value ~= nil then
      assert.are.equal(w.value, g.value, what)
    else
      assert(torch.is_tensor(g), what .. ': not a tensor')
      assert.are.equal(w.dtype, tostring(g.dtype), what .. ' dtype')
      assert.are.same(w.shape, H.shape(g), what .. ' shape')
      local tol = c.tol or (g.dtype == torch.float64 and 1e-12 or 1e-6)
      local wv = w.values
      if g.dtype == torch.bool then -- recorded as booleans
        wv = {}
        for j, b in ipairs(w.values) do wv[j] = b and 1 or 0 end
      end
      local ok, err = pcall(H.near, g:detach():to(torch.float64), wv, tol, tol)
      assert(ok, what .. ': ' .. tostring(err))
    end
  end
end

local function check_grad(name, k, c)
  local I = inputs(nil, c.grad)
  -- an op whose gradient is not the derivative of its forward at fixed random numbers (a
  -- reparameterized sampler) brings its own check of it
  if c.grad_check then return assert(c.grad_check(I), ('%s case %d: grad_check'):format(name, k)) end
  local args = {}
  for i, n in ipairs(c.grad) do args[i] = I[n] end
  local function f(...)
    local I2 = {}
    for key, v in pairs(I) do I2[key] = v end
    for i, n in ipairs(c.grad) do I2[n] = select(i, ...) end
    return (c.lua(I2)) -- the first output
  end
  local out = f(unpack(args))
  assert(out.requires_grad, ('%s case %d: the result does not require grad'):format(name, k))
  assert(ag.gradcheck(f, args, c.gradcheck), ('%s case %d: gradcheck'):format(name, k))
end

local function check_meta(name, k, c)
  local what = ('%s case %d on meta'):format(name, k)
  if c.meta == 'no data' then
    local ok, err = pcall(c.lua, inputs('meta'))
    assert(not ok, what .. ': ran, but it needs values')
    assert(tostring(err):find('meta', 1, true), what .. ': ' .. tostring(err))
    return
  end
  local cpu = outputs(c.lua(inputs()))
  local meta = outputs(c.lua(inputs('meta')))
  assert.are.equal(#cpu, #meta, what .. ': outputs')
  for i, t in ipairs(cpu) do
    local m = meta[i]
    if torch.is_tensor(t) then
      assert(torch.is_tensor(m) and m.is_meta, what .. ' output ' .. i .. ': not a meta tensor')
      assert.are.equal(t.dtype, m.dtype, what .. ' output ' .. i .. ' dtype')
      assert.are.same(H.shape(t), H.shape(m), what .. ' output ' .. i .. ' shape')
      assert.are.same(t:stride(), m:stride(), what .. ' output ' .. i .. ' strides')
    end
  end
end

-- two tensors' values equal bit for bit (NaNs equal), and their dtype, shape and strides
local function same_tensor(a, b, what)
  assert.are.equal(a.dtype, b.dtype, what .. ' dtype')
  assert.are.same(H.shape(a), H.shape(b), what .. ' shape')
  assert.are.same(a:stride(), b:stride(), what .. ' strides')
  local x, y = a:detach():reshape(-1):tolist(), b:detach():cpu():reshape(-1):tolist()
  for i = 1, #x do
    local u, v = x[i], y[i]
    if not (u == v or (u ~= u and v ~= v)) then
      error(('%s: element %d is %s on the fake device, %s on the CPU'):format(what, i, tostring(v), tostring(u)), 0)
    end
  end
end

local function check_fake(name, k, c)
  local what = ('%s case %d on the fake CUDA device'):format(name, k)
  local ok, cpu = pcall(function() return outputs(c.lua(inputs())) end)
  if not ok then return end -- (check_forward reports it)
  local fake = outputs(c.lua(inputs('cuda')))
  assert.are.equal(#cpu, #fake, what .. ': outputs')
  for i, t in ipairs(cpu) do
    local f = fake[i]
    if torch.is_tensor(t) then
      assert(torch.is_tensor(f) and f.is_cuda, what .. ' output ' .. i .. ': not a tensor on the device')
      same_tensor(t, f, what .. ' output ' .. i)
    else
      assert.are.same(t, f, what .. ' output ' .. i)
    end
  end
  if not c.grad then return end
  local Ic, If = inputs(nil, c.grad), inputs('cuda', c.grad)
  local oc, of = c.lua(Ic), c.lua(If)
  if not (torch.is_tensor(oc) and oc.requires_grad) then return end
  oc:sum():backward()
  of:sum():backward()
  for _, n in ipairs(c.grad) do
    local gc, gf = Ic[n].grad, If[n].grad
    assert.are.equal(gc == nil, gf == nil, what .. ': gradient of ' .. n)
    if gc then
      assert(gf.is_cuda, what .. ': the gradient of ' .. n .. ' is not on the device')
      same_tensor(gc, gf, what .. ' gradient of ' .. n)
    end
  end
end

describe('the op table', function()
  -- the fake CUDA device (2 devices), in for this spec only
  setup(function() assert.are.equal(0, torch._C.mt_fake_cuda_install(2, 0)) end)
  teardown(function()
    require('moontorch.tensor').sweep()
    assert.are.equal(0, torch._C.mt_fake_cuda_install(0, 0))
  end)

  it('has forward cases for every op, a gradient check for every differentiable one', function()
    local missing = {}
    for _, e in ipairs(ALL) do
      if #e.cases == 0 then missing[#missing + 1] = e.op.name .. ' (no case)' end
      if e.op.differentiable then
        local graded = false
        for _, c in ipairs(e.cases) do graded = graded or c.grad ~= nil end
        if not graded then missing[#missing + 1] = e.op.name .. ' (no gradient check)' end
      end
    end
    assert.are.same({}, missing)
    -- and no case for a name the list does not have
    local names = {}
    for _, e in ipairs(ALL) do names[e.op.name] = true end
    for name in pairs(cases.cases) do assert.is_true(names[name] or false, 'a case for no op: ' .. name) end
  end)

  for _, e in ipairs(ALL) do
    local name = e.op.name
    for k, c in ipairs(e.cases) do
      it(('%s case %d: PyTorch\'s result, %s'):format(name, k, c.py), function()
        check_forward(name, k, c)
      end)
      if e.op.differentiable and c.grad then
        it(('%s case %d: gradcheck'):format(name, k), function() check_grad(name, k, c) end)
      end
      it(('%s case %d: meta'):format(name, k), function() check_meta(name, k, c) end)
      it(('%s case %d: the fake CUDA device'):format(name, k), function() check_fake(name, k, c) end)
    end
  end
end)
