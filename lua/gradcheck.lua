-- torch.autograd.gradcheck / gradgradcheck: analytic gradients (the engine's vector-Jacobian
-- products, one per output element) against central finite differences, with PyTorch's default
-- tolerances (eps 1e-6, atol 1e-5, rtol 1e-3). Inputs should be float64.
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local C = core.C
local M = {}
local torch, autograd

local idx = ffi.new('int64_t[16]')
local dbl = ffi.new('double[1]')

local function unravel(t, k)
  for d = t:dim() - 1, 0, -1 do
    local s = t:size(d + 1)
    idx[d] = k % s
    k = math.floor(k / s)
  end
end
local function get(t, k)
  unravel(t, k)
  C.mt_tensor_get(t, idx, dbl)
  return dbl[0]
end
local function set(t, k, v)
  unravel(t, k)
  C.mt_tensor_set(t, idx, v)
end

local function outputs_of(fn, inputs)
  local r = { fn(unpack(inputs, 1, table.maxn(inputs))) }
  if #r == 1 and type(r[1]) == 'table' and not T.is_tensor(r[1]) then r = r[1] end
  local outs = {}
  for i = 1, table.maxn(r) do
    if T.is_tensor(r[i]) then outs[#outs + 1] = r[i] end
  end
  return outs
end

local function flat_values(outs)
  local v = {}
  for _, o in ipairs(outs) do
    local n = o:numel()
    for k = 0, n - 1 do v[#v + 1] = get(o, k) end
  end
  return v
end

local function fail_or_false(opts, msg)
  if opts.raise_exception == false then return false end
  error('moontorch.gradcheck: ' .. msg, 3)
end

function M.gradcheck(fn, inputs, opts)
  opts = opts or {}
  if T.is_tensor(inputs) then inputs = { inputs } end
  local eps, atol, rtol = opts.eps or 1e-6, opts.atol or 1e-5, opts.rtol or 1e-3
  local diff = {}
  for i = 1, table.maxn(inputs) do
    local x = inputs[i]
    if T.is_tensor(x) and x.requires_grad then diff[#diff + 1] = i end
  end
  if #diff == 0 then return fail_or_false(opts, 'gradcheck expects at least one input tensor to require gradient') end
  -- numerical Jacobian: num[i][k][j] = d out_j / d input_i[k]
  -- (grad mode stays on: a function that differentiates inside, as gradgradcheck's does, needs it)
  local num = {}
  do
    for _, i in ipairs(diff) do
      local x = inputs[i]
      num[i] = {}
      for k = 0, x:numel() - 1 do
        local orig = get(x, k)
        set(x, k, orig + eps)
        local plus = flat_values(outputs_of(fn, inputs))
        set(x, k, orig - eps)
        local minus = flat_values(outputs_of(fn, inputs))
        set(x, k, orig)
        local col = {}
        for j = 1, #plus do col[j] = (plus[j] - minus[j]) / (2 * eps) end
        num[i][k] = col
      end
    end
  end
  -- analytic: one backward per output element, through a graph made after the perturbations
  -- (they write into the inputs, which would fail the saved-tensor version checks)
  local outs = outputs_of(fn, inputs)
  local wrt = {}
  for n, i in ipairs(diff) do wrt[n] = inputs[i] end
  local j = 0
  for _, o in ipairs(outs) do
    if o.requires_grad then
      for e = 0, o:numel() - 1 do
        j = j + 1
        local go = torch.zeros_like(o)
        set(go, e, 1)
        local grads = autograd.grad({ o }, wrt, { grad_outputs = { go }, retain_graph = true, allow_unused = true })
        for n, i in ipairs(diff) do
          local g = grads[n]
          local x = inputs[i]
          for k = 0, x:numel() - 1 do
            local a = g and get(g, k) or 0
            local nm = num[i][k][j]
            if not (math.abs(a - nm) <= atol + rtol * math.abs(nm)) then
              return fail_or_false(opts, ('Jacobian mismatch for output %d with respect to input %d, element %d: '
                .. 'numerical %.8g, analytical %.8g'):format(j, i, k + 1, nm, a))
            end
          end
        end
      end
    else
      j = j + o:numel()
      for n, i in ipairs(diff) do
        for k = 0, inputs[i]:numel() - 1 do
          for jj = j - o:numel() + 1, j do
            if math.abs(num[i][k][jj]) > atol then
              return fail_or_false(opts, 'an output does not require grad but depends on input ' .. i)
            end
          end
        end
      end
    end
  end
  return true
end

-- second derivatives: gradcheck of (inputs, grad_outputs) -> d(fn)/d(inputs) . grad_outputs
function M.gradgradcheck(fn, inputs, grad_outputs, opts)
  if T.is_tensor(inputs) then inputs = { inputs } end
  if type(grad_outputs) == 'table' and not T.is_tensor(grad_outputs) and grad_outputs[1] == nil then
    opts, grad_outputs = grad_outputs, nil
  end
  opts = opts or {}
  local outs = outputs_of(fn, inputs)
  local gos = {}
  for i, o in ipairs(outs) do
    gos[i] = grad_outputs and grad_outputs[i] or torch.randn(o:size(), { dtype = o.dtype, requires_grad = true })
  end
  local n = table.maxn(inputs)
  local diff = {}
  for i = 1, n do if T.is_tensor(inputs[i]) and inputs[i].requires_grad then diff[#diff + 1] = i end end
  local function first(...)
    local args = { ... }
    local ins, wrt = {}, {}
    for i = 1, n do ins[i] = args[i] end
    for k, i in ipairs(diff) do wrt[k] = ins[i] end
    local o = outputs_of(fn, ins)
    local g = {}
    for i = 1, #o do g[i] = args[n + i] end
    local r = autograd.grad(o, wrt, { grad_outputs = g, create_graph = true, allow_unused = true })
    local res = {}
    for k = 1, #wrt do res[k] = r[k] end
    return res
  end
  local all = {}
  for i = 1, n do all[i] = inputs[i] end
  for i, g in ipairs(gos) do all[n + i] = g end
  return M.gradcheck(first, all, opts)
end

function M.install(t, ag)
  torch, autograd = t, ag
  ag.gradcheck = M.gradcheck
  ag.gradgradcheck = M.gradgradcheck
end

return M
