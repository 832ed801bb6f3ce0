-- optim.LBFGS: limited-memory BFGS with an optional strong-Wolfe line search, as PyTorch 1.13's
-- torch.optim.LBFGS (heavily inspired by minFunc, as PyTorch's), over tensor ops on the flattened
-- gradient of all parameters (one parameter group only). Its scalars (t, gtd, ro, H_diag, the
-- bracket) are Lua numbers where PyTorch keeps 0-dim tensors of the parameters' dtype: equal for
-- float64 parameters, within float32 rounding of PyTorch's for float32 ones.
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local common = require 'moontorch.optim.common'
local optim = require 'moontorch.optim'

local C, fail = core.C, core.fail
local check, pystr = common.check, common.pystr
local abs, floor = math.abs, math.floor
local type, ipairs, pcall, error = type, ipairs, pcall, error

-- Python's max(a, b) and min(a, b): the first unless the second is strictly beyond it
local function pymax(a, b) if b > a then return b end return a end
local function pymin(a, b) if b < a then return b end return a end

local LBFGS, Optimizer = torch.class('optim.LBFGS', 'optim.Optimizer', optim)
LBFGS._none_options = { 'line_search_fn' }

-- LBFGS(params, {lr=1, max_iter=20, max_eval=max_iter*5//4, tolerance_grad=1e-7,
-- tolerance_change=1e-9, history_size=100, line_search_fn=nil | 'strong_wolfe'})
function LBFGS:__init(params, opts, more)
  local o = common.options('LBFGS', opts, more, { lr = 1, max_iter = 20, max_eval = common.NONE,
    tolerance_grad = 1e-7, tolerance_change = 1e-9, history_size = 100, line_search_fn = common.NONE })
  for _, k in ipairs { 'lr', 'max_iter', 'tolerance_grad', 'tolerance_change', 'history_size' } do
    common.number('LBFGS', k, o[k])
  end
  if o.max_eval == nil then o.max_eval = floor(o.max_iter * 5 / 4) end
  common.number('LBFGS', 'max_eval', o.max_eval)
  if o.line_search_fn ~= nil and o.line_search_fn ~= 'strong_wolfe' then
    fail('optim.LBFGS', "only 'strong_wolfe' is supported")
  end
  Optimizer.__init(self, params, o)
  if #self.param_groups ~= 1 then
    fail('optim.LBFGS', "LBFGS doesn't support per-parameter options (parameter groups)")
  end
  self._params = self.param_groups[1].params
end

function LBFGS:add_param_group(group)
  if self.param_groups and #self.param_groups >= 1 then
    fail('optim.LBFGS', "LBFGS doesn't support per-parameter options (parameter groups)")
  end
  Optimizer.add_param_group(self, group)
end

function LBFGS:_numel()
  local n = 0
  for _, p in ipairs(self._params) do n = n + p:numel() end
  return n
end

-- every parameter's gradient, flattened into one vector (zeros for a missing one)
function LBFGS:_gather_flat_grad()
  local views = {}
  for i, p in ipairs(self._params) do
    local g = p.grad
    if g == nil then views[i] = torch.zeros(p:numel(), { dtype = p.dtype, device = p.device })
    else views[i] = g:reshape(-1) end
  end
  return torch.cat(views, 1)
end

-- parameters += step_size * update (update: a flat vector)
function LBFGS:_add_grad(step_size, update)
  local offset = 0
  for _, p in ipairs(self._params) do
    local n = p:numel()
    p:add_(update:narrow(1, offset + 1, n):view_as(p), { alpha = step_size })
    offset = offset + n
  end
end

function LBFGS:_clone_param()
  local out = {}
  for i, p in ipairs(self._params) do out[i] = p:detach():clone() end
  return out
end

function LBFGS:_set_param(data)
  for i, p in ipairs(self._params) do p:copy_(data[i]) end
end

-- the closure's loss as a number, run with gradients enabled
local function evaluate(closure)
  local prev = C.mt_is_grad_enabled()
  C.mt_set_grad_enabled(1)
  local ok, loss = pcall(closure)
  C.mt_set_grad_enabled(prev)
  if not ok then error(loss, 0) end
  return loss
end
local function number(loss)
  if torch.is_tensor(loss) then return loss:item() end
  if type(loss) ~= 'number' then fail('optim.LBFGS:step', 'the closure must return the loss (a number or a tensor)') end
  return loss
end

function LBFGS:_directional_evaluate(closure, x, t, d)
  self:_add_grad(t, d)
  local loss = number(evaluate(closure))
  local flat_grad = self:_gather_flat_grad()
  self:_set_param(x)
  return loss, flat_grad
end

-- the minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), within bounds
local function cubic_interpolate(x1, f1, g1, x2, f2, g2, lo, hi)
  if lo == nil then
    if x1 <= x2 then lo, hi = x1, x2 else lo, hi = x2, x1 end
  end
  local d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
  local d2_square = d1 ^ 2 - g1 * g2
  if d2_square >= 0 then
    local d2 = math.sqrt(d2_square)
    local min_pos
    if x1 <= x2 then
      min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else
      min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    end
    return pymin(pymax(min_pos, lo), hi)
  end
  return (lo + hi) / 2.
end

local function bmax(b) return pymax(b[1], b[2]) end
local function bmin(b) return pymin(b[1], b[2]) end

-- the strong-Wolfe line search along d from x (PyTorch's _strong_wolfe)
local function strong_wolfe(obj_func, x, t, d, f, g, gtd)
  local c1, c2, tolerance_change, max_ls = 1e-4, 0.9, 1e-9, 25
  local d_norm = d:abs():max():item()
  g = g:clone()
  local f_new, g_new = obj_func(x, t, d)
  local ls_func_evals = 1
  local gtd_new = g_new:dot(d):item()
  local t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
  local done = false
  local ls_iter = 0
  local bracket, bracket_f, bracket_g, bracket_gtd
  while ls_iter < max_ls do
    if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev) then
      bracket, bracket_f = { t_prev, t }, { f_prev, f_new }
      bracket_g, bracket_gtd = { g_prev, g_new:clone() }, { gtd_prev, gtd_new }
      break
    end
    if abs(gtd_new) <= -c2 * gtd then
      bracket, bracket_f, bracket_g = { t }, { f_new }, { g_new }
      done = true
      break
    end
    if gtd_new >= 0 then
      bracket, bracket_f = { t_prev, t }, { f_prev, f_new }
      bracket_g, bracket_gtd = { g_prev, g_new:clone() }, { gtd_prev, gtd_new }
      break
    end
    local min_step = t + 0.01 * (t - t_prev)
    local max_step = t * 10
    local tmp = t
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, min_step, max_step)
    t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new:clone(), gtd_new
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = ls_func_evals + 1
    gtd_new = g_new:dot(d):item()
    ls_iter = ls_iter + 1
  end
  if ls_iter == max_ls then
    bracket, bracket_f, bracket_g = { 0, t }, { f, f_new }, { g, g_new }
  end
  -- zoom
  local insuf_progress = false
  local low_pos, high_pos = 1, 2
  if not (bracket_f[1] <= bracket_f[#bracket_f]) then low_pos, high_pos = 2, 1 end
  while not done and ls_iter < max_ls do
    if abs(bracket[2] - bracket[1]) * d_norm < tolerance_change then break end
    t = cubic_interpolate(bracket[1], bracket_f[1], bracket_gtd[1], bracket[2], bracket_f[2], bracket_gtd[2])
    local hi, lo = bmax(bracket), bmin(bracket)
    local eps = 0.1 * (hi - lo)
    if pymin(hi - t, t - lo) < eps then
      if insuf_progress or t >= hi or t <= lo then
        if abs(t - hi) < abs(t - lo) then t = hi - eps else t = lo + eps end
        insuf_progress = false
      else
        insuf_progress = true
      end
    else
      insuf_progress = false
    end
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = ls_func_evals + 1
    gtd_new = g_new:dot(d):item()
    ls_iter = ls_iter + 1
    if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos] then
      bracket[high_pos], bracket_f[high_pos] = t, f_new
      bracket_g[high_pos], bracket_gtd[high_pos] = g_new:clone(), gtd_new
      if bracket_f[1] <= bracket_f[2] then low_pos, high_pos = 1, 2 else low_pos, high_pos = 2, 1 end
    else
      if abs(gtd_new) <= -c2 * gtd then
        done = true
      elseif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0 then
        bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
        bracket_g[high_pos], bracket_gtd[high_pos] = bracket_g[low_pos], bracket_gtd[low_pos]
      end
      bracket[low_pos], bracket_f[low_pos] = t, f_new
      bracket_g[low_pos], bracket_gtd[low_pos] = g_new:clone(), gtd_new
    end
  end
  return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals
end

-- step(closure): up to max_iter L-BFGS iterations; closure() re-evaluates the loss (zeroing the
-- gradients and running backward) and returns it. Returns the first evaluation's loss.
function LBFGS:step(closure)
  if type(closure) ~= 'function' and not (type(closure) == 'table' and getmetatable(closure)) then
    fail('optim.LBFGS:step', 'LBFGS needs a closure that reevaluates the model and returns the loss')
  end
  local prev_mode = C.mt_is_grad_enabled()
  C.mt_set_grad_enabled(0)
  local ok, result = pcall(self._step, self, closure)
  C.mt_set_grad_enabled(prev_mode)
  if not ok then error(result, 0) end
  return result
end

function LBFGS:_step(closure)
  local group = self.param_groups[1]
  local lr, max_iter, max_eval = group.lr, group.max_iter, group.max_eval
  local tolerance_grad, tolerance_change = group.tolerance_grad, group.tolerance_change
  local line_search_fn, history_size = group.line_search_fn, group.history_size

  local state = self.state[self._params[1]]
  if state == nil then
    state = {}
    self.state[self._params[1]] = state
  end
  state.func_evals = state.func_evals or 0
  state.n_iter = state.n_iter or 0

  local orig_loss = evaluate(closure)
  local loss = number(orig_loss)
  local current_evals = 1
  state.func_evals = state.func_evals + 1

  local flat_grad = self:_gather_flat_grad()
  local opt_cond = flat_grad:abs():max():item() <= tolerance_grad
  if opt_cond then return orig_loss end

  local d, t = state.d, state.t
  local old_dirs, old_stps, ro = state.old_dirs, state.old_stps, state.ro
  local H_diag, prev_flat_grad, prev_loss = state.H_diag, state.prev_flat_grad, state.prev_loss

  local n_iter = 0
  while n_iter < max_iter do
    n_iter = n_iter + 1
    state.n_iter = state.n_iter + 1
    if state.n_iter == 1 then
      d = flat_grad:neg()
      old_dirs, old_stps, ro = {}, {}, {}
      H_diag = 1
    else
      local y = flat_grad:sub(prev_flat_grad)
      local s = d:mul(t)
      local ys = y:dot(s):item()
      if ys > 1e-10 then
        if #old_dirs == history_size then
          table.remove(old_dirs, 1)
          table.remove(old_stps, 1)
          table.remove(ro, 1)
        end
        old_dirs[#old_dirs + 1] = y
        old_stps[#old_stps + 1] = s
        ro[#ro + 1] = 1. / ys
        H_diag = ys / y:dot(y):item()
      end
      local num_old = #old_dirs
      if state.al == nil then state.al = {} end
      local al = state.al
      local q = flat_grad:neg()
      for i = num_old, 1, -1 do
        al[i] = old_stps[i]:dot(q):item() * ro[i]
        q:add_(old_dirs[i], { alpha = -al[i] })
      end
      local r = torch.mul(q, H_diag)
      d = r
      for i = 1, num_old do
        local be_i = old_dirs[i]:dot(r):item() * ro[i]
        r:add_(old_stps[i], { alpha = al[i] - be_i })
      end
    end
    if prev_flat_grad == nil then prev_flat_grad = flat_grad:clone() else prev_flat_grad:copy_(flat_grad) end
    prev_loss = loss

    if state.n_iter == 1 then
      t = math.min(1., 1. / flat_grad:abs():sum():item()) * lr
    else
      t = lr
    end
    local gtd = flat_grad:dot(d):item()
    if gtd > -tolerance_change then break end

    local ls_func_evals = 0
    if line_search_fn ~= nil then
      local x_init = self:_clone_param()
      local function obj_func(x, tt, dd) return self:_directional_evaluate(closure, x, tt, dd) end
      loss, flat_grad, t, ls_func_evals = strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd)
      self:_add_grad(t, d)
      opt_cond = flat_grad:abs():max():item() <= tolerance_grad
    else
      self:_add_grad(t, d)
      if n_iter ~= max_iter then
        loss = number(evaluate(closure))
        flat_grad = self:_gather_flat_grad()
        opt_cond = flat_grad:abs():max():item() <= tolerance_grad
        ls_func_evals = 1
      end
    end
    current_evals = current_evals + ls_func_evals
    state.func_evals = state.func_evals + ls_func_evals

    if n_iter == max_iter then break end
    if current_evals >= max_eval then break end
    if opt_cond then break end
    if d:mul(t):abs():max():item() <= tolerance_change then break end
    if abs(loss - prev_loss) < tolerance_change then break end
  end

  state.d, state.t = d, t
  state.old_dirs, state.old_stps, state.ro = old_dirs, old_stps, ro
  state.H_diag, state.prev_flat_grad, state.prev_loss = H_diag, prev_flat_grad, prev_loss
  return orig_loss
end

-- load_state_dict: as Optimizer's, then the parameter list again
function LBFGS:load_state_dict(sd)
  Optimizer.load_state_dict(self, sd)
  self._params = self.param_groups[1].params
end

return LBFGS
