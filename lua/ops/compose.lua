-- What the functions composed in Lua share: the "composed in Lua" sections of lua/ops/<family>.lua
-- (PyTorch functions written with the other ops, so that autograd, dtypes and devices follow) and
-- lua/ops/types.lua, lua/ops/functional.lua: argument checks, 1-based dims, a trailing options
-- table, and the installation of torch functions where torch lacks the name.
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local dtype = require 'moontorch.dtype'

local C = core.C
local fail = core.fail
local is_tensor = T.is_tensor
local methods = T.methods
local by_id = dtype.by_id
local type, floor, select, pairs, ipairs, unpack = type, math.floor, select, pairs, ipairs, unpack

local M = {}

local function need(op, x, what)
  if not is_tensor(x) then fail(op, ('expected a tensor for %s, got %s'):format(what or 'input', type(x))) end
end
-- a value in a message: a tensor by its size (never its elements), others as tostring
local function shown(v) return is_tensor(v) and T.cold().show(v) or tostring(v) end
M.shown = shown
-- a 1-based dim (negative from the end) as a positive 1-based one
local function pdim(op, d, nd)
  if type(d) ~= 'number' or d ~= floor(d) then fail(op, 'expected an integer dim, got ' .. shown(d)) end
  local n = nd > 0 and nd or 1
  if d < -n or d > n or d == 0 then
    fail(op, ('dimension %d out of range (expected to be in range of [%d, -1] or [1, %d])%s'):format(d, -n, n,
      d == 0 and ': dimensions are 1-based (1 is the first, -1 the last)' or ''))
  end
  return d < 0 and d + n + 1 or d
end
-- the trailing options table of a call (a table that is no tensor and has no array part)
local function opts_of(...)
  local n = select('#', ...)
  local last = n > 0 and select(n, ...) or nil
  if type(last) == 'table' and not is_tensor(last) and last[1] == nil then return last, n - 1 end
  return nil, n
end
local function size_of(t) return t:size() end
local function is_float(t) return t:is_floating_point() end
local function as_float(t)
  if is_float(t) then return t end
  return t:to(by_id[C.mt_get_default_dtype()]) -- the default dtype
end
local function sizes(t)
  local s = {}
  for i = 1, t:dim() do s[i] = t:size(i) end
  return s
end
-- v, after a check that it is an integer (nil allowed where `optional`): the op's error otherwise
local function int(op, what, v, optional)
  if v == nil and optional then return nil end
  if type(v) ~= 'number' or v ~= floor(v) then
    fail(op, ('expected an integer %s, got %s'):format(what, type(v) == 'number' and tostring(v) or core.typeof(v)))
  end
  return v
end
M.int = int
M.need, M.pdim, M.opts_of, M.size_of, M.is_float, M.as_float, M.sizes = need, pdim, opts_of, size_of, is_float,
  as_float, sizes

-- fns: name -> function, each put in torch where torch lacks the name, and with as_methods on the
-- Tensor type too where it lacks the name
function M.install_functions(torch, fns, as_methods)
  for name, f in pairs(fns) do
    if torch[name] == nil then torch[name] = f end
    if as_methods and methods[name] == nil then methods[name] = f end
  end
end

-- torch.<name>(t, ...) for every method <name> of names PyTorch also has as a torch function
-- (torch.clamp_min(x, 0), torch.relu_(x), ...), where torch lacks the name and the method exists
-- torch.<name>(t, ...) for the method <name>: the first argument checked (a tensor), then the method
function M.function_of_method(name, m)
  return function(t, ...)
    if not is_tensor(t) then need(name, t) end
    return m(t, ...)
  end
end
function M.functions_of_methods(torch, names)
  for _, name in ipairs(names) do
    local m = methods[name]
    if torch[name] == nil and m ~= nil then torch[name] = M.function_of_method(name, m) end
  end
end

-- node(name, fn, grad): fn(...) as one autograd node named as PyTorch's (name, e.g.
-- 'PreluBackward0') instead of the nodes of the ops it is composed of. fn takes its tensors and
-- plain values by position (no tensors inside tables) and returns one tensor; when grad mode is on
-- and a tensor argument requires grad, fn runs without recording and grad(g, ...) gets the
-- output's gradient and fn's arguments and returns one gradient per argument (nil for plain
-- values), written with ops so that second derivatives work. Otherwise fn runs as it is.
local function wants_grad(n, ...)
  for i = 1, n do
    local a = select(i, ...)
    if is_tensor(a) and a.requires_grad then return true end
  end
  return false
end
-- (multi: fn returns several tensors; grad(gs, ...) gets their gradients as a table, nil where none
-- arrived: the decompositions' nodes, M.node_multi)
local function make_node(name, fn, grad, multi)
  local Fn, torch -- made at the first call that records (torch.autograd loads after the op files)
  return function(...)
    torch = torch or require 'moontorch'
    local n = select('#', ...)
    if not (wants_grad(n, ...) and torch.is_grad_enabled()) then return fn(...) end
    if not Fn then
      Fn = torch.autograd.Function('moontorch.' .. name)
      Fn._backward_name = name
      function Fn.forward(ctx, ...)
        if multi then ctx:set_materialize_grads(false) end
        local k = select('#', ...)
        local tensors, plain = {}, { n = k }
        for i = 1, k do
          local a = select(i, ...)
          if is_tensor(a) then tensors[#tensors + 1] = a plain[i] = #tensors else plain[i] = false end
        end
        ctx:save_for_backward(unpack(tensors))
        ctx.args = { ... } -- the plain values (the tensors come back from saved_tensors)
        for i = 1, k do if plain[i] then ctx.args[i] = nil end end
        ctx.slots = plain
        return fn(...)
      end
      function Fn.backward(ctx, ...)
        local saved, slots, args = ctx.saved_tensors, ctx.slots, ctx.args
        for i = 1, slots.n do if slots[i] then args[i] = saved[slots[i]] end end
        local r
        if multi then r = { grad({ ... }, unpack(args, 1, slots.n)) } else r = { grad((...), unpack(args, 1, slots.n)) } end
        for i = 1, slots.n do
          if not ctx.needs_input_grad[i] then r[i] = nil end
        end
        return unpack(r, 1, slots.n)
      end
    end
    return Fn.apply(...)
  end
end
function M.node(name, fn, grad) return make_node(name, fn, grad, false) end
function M.node_multi(name, fn, grad) return make_node(name, fn, grad, true) end

-- node_autograd(name, fn): as node, where the derivative is the one autograd takes of fn itself
-- (a composite whose own graph is long, or whose formula is long to write): the backward runs fn
-- again with grad enabled and asks autograd.grad for the inputs' gradients (a backward inside a
-- backward: the engine is re-entrant). When the backward records (create_graph) fn runs on the
-- saved inputs themselves, so that the gradient's graph reaches them; else on detached copies.
-- fn returns one tensor.
function M.node_autograd(name, fn)
  local torch
  local function grad(g, ...)
    torch = torch or require 'moontorch'
    local create = torch.is_grad_enabled()
    local n = select('#', ...)
    local args, ins, pos = { ... }, {}, {}
    for i = 1, n do
      local a = args[i]
      if is_tensor(a) and (a:is_floating_point() or a:is_complex()) then
        if not create then
          a = a:detach():requires_grad_()
          args[i] = a
        end
        if a.requires_grad then
          ins[#ins + 1] = a
          pos[#pos + 1] = i
        end
      end
    end
    local r = {}
    if #ins == 0 then return unpack(r, 1, n) end
    local y = torch.enable_grad(function() return fn(unpack(args, 1, n)) end)
    if not y.requires_grad then return unpack(r, 1, n) end
    local gs = torch.autograd.grad(y, ins, { grad_outputs = g, create_graph = create, allow_unused = true })
    for k, i in ipairs(pos) do r[i] = gs[k] end
    return unpack(r, 1, n)
  end
  return M.node(name, fn, grad)
end

return M
