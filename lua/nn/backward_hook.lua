-- Full backward hooks of modules (register_full_backward_hook / _pre_hook).
--
-- A call of a module with such hooks passes its tensor inputs, and then its tensor outputs,
-- through an identity autograd Function (its node prints as BackwardHookFunctionBackward, as in
-- PyTorch). In backward, the outputs' node runs first: it sees the gradients with respect to
-- the module's outputs, runs the backward pre hooks (which may replace them) and keeps them.
-- The inputs' node runs when the gradients with respect to the module's inputs are known: it
-- calls the backward hooks with (module, grad_inputs, grad_outputs) and hands on what they
-- return. When no input requires grad, the hooks run from the outputs' node with grad_inputs
-- all nil.
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local fail = core.fail
local is_tensor = T.is_tensor
local select, unpack, type, getmetatable = select, unpack, type, getmetatable

local Fn = torch.autograd.Function('BackwardHookFunction')

-- forward(ctx, state, side, ...): the tensors, unchanged
function Fn.forward(ctx, state, side, ...)
  ctx.state, ctx.side = state, side
  ctx:set_materialize_grads(false)
  local n = select('#', ...)
  for i = 1, n do
    local t = select(i, ...)
    if not t.requires_grad then ctx:mark_non_differentiable(t) end
  end
  return ...
end

function Fn.backward(ctx, ...)
  local state = ctx.state
  local grads = { n = select('#', ...), ... }
  if ctx.side == 'out' then
    grads = state:on_grad_outputs(grads)
  else
    grads = state:on_grad_inputs(grads)
  end
  return nil, nil, unpack(grads, 1, grads.n)
end

local BackwardHook = {}
BackwardHook.__index = BackwardHook

local M = {}

function M.new(module, hooks, pre_hooks)
  return setmetatable({ module = module, hooks = hooks, pre_hooks = pre_hooks }, BackwardHook)
end

-- positions of the tensors among n values
local function tensor_positions(vals, n)
  local pos = {}
  for i = 1, n do if is_tensor(vals[i]) then pos[#pos + 1] = i end end
  return pos
end

-- values (array of n) -> array of n with the positions `pos` filled from `grads`
local function pack_with_nil(pos, grads, n)
  local out = { n = n }
  for k = 1, #pos do out[pos[k]] = grads[k] end
  return out
end

local function any_requires_grad(vals, pos)
  for k = 1, #pos do if vals[pos[k]].requires_grad then return true end end
  return false
end

-- pass the tensors at `pos` in `vals` through the Function; returns a new array of values
local function wrap_values(self, side, vals, n, pos)
  local ts = {}
  for k = 1, #pos do ts[k] = vals[pos[k]] end
  local outs = { Fn.apply(self, side, unpack(ts, 1, #ts)) }
  local new = { n = n }
  for i = 1, n do new[i] = vals[i] end
  for k = 1, #pos do new[pos[k]] = outs[k] end
  return new
end

function BackwardHook:setup_input(args)
  self.n_inputs = args.n
  local pos = tensor_positions(args, args.n)
  if #pos == 0 or not any_requires_grad(args, pos) then return args end
  self.input_pos = pos
  return wrap_values(self, 'in', args, args.n, pos)
end

-- out: the forward result (one value, or an array of several when multi)
function BackwardHook:setup_output(out, multi)
  local vals, n
  if multi or (type(out) == 'table' and getmetatable(out) == nil) then
    vals, n = out, out.n or table.maxn(out)
  else
    vals, n = { out }, 1
  end
  self.n_outputs = n
  local pos = tensor_positions(vals, n)
  if #pos == 0 or not any_requires_grad(vals, pos) then return out end
  self.output_pos = pos
  local new = wrap_values(self, 'out', vals, n, pos)
  if vals == out then return new end
  return new[1]
end

-- a hook's array of gradients: one per input (output), nil where there is none. Lua cannot
-- tell {g, nil} from {g}, so an array without `n` may stop early (the rest are nil); one with
-- `n`, or with more entries than there are inputs, must match.
local function check_count(what, got, want)
  local n = got.n or table.maxn(got)
  if n ~= want and (got.n ~= nil or n > want) then
    fail('backward', ('Backward %s returned an invalid number of %s, got %d, but expected %d')
      :format(what == 'grad_output' and 'pre hook' or 'hook', what, n, want))
  end
end

-- grads: with respect to the wrapped outputs, in order
function BackwardHook:on_grad_outputs(grads)
  local go = pack_with_nil(self.output_pos, grads, self.n_outputs)
  for _, h in ipairs(self.pre_hooks) do
    local r = h.fn(self.module, go)
    if r ~= nil then
      if type(r) ~= 'table' or getmetatable(r) ~= nil then
        fail('backward', 'a backward pre hook must return nil or an array of gradients')
      end
      check_count('grad_output', r, self.n_outputs)
      go = r
      go.n = self.n_outputs
    end
  end
  if not self.input_pos then
    local gi = { n = self.n_inputs }
    for _, h in ipairs(self.hooks) do
      local r = h.fn(self.module, gi, go)
      if r ~= nil then
        for i = 1, table.maxn(r) do
          if r[i] ~= nil then
            fail('backward', 'Backward hook for Modules where no input requires gradient should always return ' ..
              'None or None for all gradients.')
          end
        end
      end
    end
  else
    self.grad_outputs = go
  end
  local out = { n = #self.output_pos }
  for k, p in ipairs(self.output_pos) do out[k] = go[p] end
  return out
end

-- grads: with respect to the wrapped inputs, in order
function BackwardHook:on_grad_inputs(grads)
  local gi = pack_with_nil(self.input_pos, grads, self.n_inputs)
  local go = self.grad_outputs
  for _, h in ipairs(self.hooks) do
    local r = h.fn(self.module, gi, go)
    if r ~= nil then
      if type(r) ~= 'table' or getmetatable(r) ~= nil then
        fail('backward', 'a backward hook must return nil or an array of gradients')
      end
      check_count('grad_input', r, self.n_inputs)
      gi = r
    end
  end
  self.grad_outputs = nil
  local out = { n = #self.input_pos }
  for k, p in ipairs(self.input_pos) do out[k] = gi[p] end
  return out
end

return M
