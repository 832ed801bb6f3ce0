-- The op table's CUDA column: every case of spec/support/op_cases.lua (the cases of
-- spec/op_table_spec.lua, one or more for every op of the core's op list) runs on the CPU and on
-- 'cuda', and the CUDA results equal the CPU's: the forward outputs (dtype, shape, values) and, for a
-- case with inputs to differentiate, the gradients of the first output (under one upstream gradient,
-- the same on both devices). An op without a CUDA kernel yet must fail with a clear error naming the op
-- and the device, and be in the list of ops that remain (so neither a new gap nor a closed one goes
-- unnoticed). The random ops draw from the CUDA generator (Philox, spec/cuda_random_spec.lua): here
-- their results have the CPU's dtype and shape.
--
-- Runs on a real GPU, or on the CPU emulator of a CUDA device (MOONTORCH_CUDA_EMULATE=1: ./run test
-- sets it for spec/cuda_*); without either it is pending, saying why.
local H = require 'spec.support.helper'
local torch = H.torch
_G.torch = torch
local list = require 'moontorch.ops.list'
local cases = require 'spec.support.op_cases'

local ALL = cases.all(list.ops())
local DEV = 'cuda'

-- the ops whose CUDA kernels are still to come (core/gpu/): each fails with "not supported on device cuda"
local REMAINING = {}
for name in ([[
_standard_gamma _sample_dirichlet poisson binomial _standard_gamma_grad _dirichlet_grad
]]):gmatch('%S+') do REMAINING[name] = true end

local RANDOM = { uniform_ = true, normal_ = true, random_ = true, bernoulli_ = true, bernoulli = true,
  exponential_ = true, randperm = true, multinomial = true }

local function inputs(device, grad)
  local I = { device = device and torch.device(device) or nil }
  for k, v in pairs(cases.inputs) do
    local t
    if v.int64 then t = torch.tensor(v.int64, { dtype = torch.int64 })
    elseif v.bool then t = torch.tensor(v.bool, { dtype = torch.bool })
    elseif v.index then t = torch.tensor(v.index, { dtype = torch.int64 }) + 1
    else t = torch.tensor(v, { dtype = torch.float64 }) end
    if device then t = t:to(device) end
    I[k] = t
  end
  for _, k in ipairs(grad or {}) do I[k]:requires_grad_() end
  return I
end

local function outputs(...)
  local r = { ... }
  for i, v in ipairs(r) do
    if type(v) == 'boolean' then r[i] = { value = v } end
  end
  return r
end

-- an upstream gradient for t: the same values on every device
local function upstream(t)
  local n = t:numel()
  local g = torch.arange(1, n + 1, { dtype = torch.float64 }):mul(0.37):sin():add(0.5)
  return g:reshape(t:size()):to(t.dtype):to(t.device)
end

local function same(what, cpu, dev, tol)
  if not torch.is_tensor(cpu) then
    assert.are.same(cpu, dev, what)
    return
  end
  assert(torch.is_tensor(dev), what .. ': not a tensor')
  assert.are.equal(DEV, dev.device.type, what .. ': not on ' .. DEV)
  assert.are.equal(tostring(cpu.dtype), tostring(dev.dtype), what .. ' dtype')
  assert.are.same(H.shape(cpu), H.shape(dev), what .. ' shape')
  local c, d = cpu:detach():to(torch.float64), dev:detach():cpu():to(torch.float64)
  local ok, err = pcall(H.near, d, c, tol, tol)
  assert(ok, what .. ': ' .. tostring(err))
end

local function check(name, k, c)
  local what = ('%s case %d'):format(name, k)
  local ok, dev = pcall(function() return outputs(c.lua(inputs(DEV))) end)
  if REMAINING[name] then
    assert(not ok, what .. ': runs on ' .. DEV .. ', take it out of REMAINING')
    local msg = tostring(dev)
    assert(msg:find('not supported on device cuda', 1, true) or msg:find('on device cuda', 1, true),
      what .. ': not a clear error: ' .. msg)
    return
  end
  assert(ok, what .. ': ' .. tostring(dev))
  local cpu = outputs(c.lua(inputs()))
  assert.are.equal(#cpu, #dev, what .. ': outputs')
  local tol = c.tol or 1e-9
  for i, t in ipairs(cpu) do
    if RANDOM[name] then
      assert.are.equal(tostring(t.dtype), tostring(dev[i].dtype), what .. ' dtype')
      assert.are.same(H.shape(t), H.shape(dev[i]), what .. ' shape')
    else
      same(what .. ' output ' .. i, t, dev[i], tol)
    end
  end
  if not c.grad then return end
  -- the gradients of the first output, under one upstream gradient
  local function grads(device)
    local I = inputs(device, c.grad)
    local out = (c.lua(I))
    if not (torch.is_tensor(out) and out.requires_grad) then return nil end
    local xs = {}
    for j, n in ipairs(c.grad) do xs[j] = I[n] end
    return torch.autograd.grad({ out }, xs, { grad_outputs = { upstream(out) }, allow_unused = true })
  end
  local gc, gd = grads(nil), grads(DEV)
  if not gc then return end
  assert(gd, what .. ': no gradient on ' .. DEV)
  for j = 1, #c.grad do
    if gc[j] ~= nil then same(what .. ' gradient of ' .. c.grad[j], gc[j], gd[j], tol) end
  end
end

describe('the op table on CUDA', function()
  if not torch.cuda.is_available() then
    it('needs a GPU or the emulator', function()
      pending('no CUDA device: ' .. (torch.config and '' or '') .. 'run with MOONTORCH_CUDA_EMULATE=1 (./run test does)')
    end)
    return
  end

  it('lists as remaining only ops of the op list', function()
    local names = {}
    for _, e in ipairs(ALL) do names[e.op.name] = true end
    for name in pairs(REMAINING) do assert.is_true(names[name] or false, 'REMAINING names no op: ' .. name) end
  end)

  for _, e in ipairs(ALL) do
    local name = e.op.name
    for k, c in ipairs(e.cases) do
      it(('%s case %d on %s: %s'):format(name, k, DEV, REMAINING[name] and 'a clear error (remaining)' or
        'the CPU\'s result'), function() check(name, k, c) end)
    end
  end
end)
