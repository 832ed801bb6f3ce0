-- moontorch.amp.grad_scaler: GradScaler (issue 25), PyTorch's algorithm (torch/cuda/amp/grad_scaler.py,
-- 1.13) on any device: the loss is multiplied by the scale before backward; the gradients are divided by
-- it (unscale_) and checked for inf/NaN; an optimizer step with any is skipped; update() then halves
-- the scale (backoff_factor) after a skipped step, or doubles it (growth_factor) after growth_interval
-- steps in a row without one. torch.amp.GradScaler(device, {...}) (PyTorch 2's, 'cuda' by default) and
-- torch.cuda.amp.GradScaler({...}); a CUDA scaler where CUDA is not available disables itself with
-- PyTorch's warning, and a disabled scaler's methods do nothing (step runs optimizer:step()).
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local fail = core.fail
local is_tensor = T.is_tensor
local type, pairs, ipairs, tostring = type, pairs, ipairs, tostring

local M = {}

------------------------------------------------------------------------------ the two kernels, as PyTorch's
-- torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale): each gradient times
-- inv_scale (a 1-element float32 tensor), in place; found_inf (a 1-element float32 tensor) set to 1 when
-- any gradient holds an inf or a NaN
function M.foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)
  local op = '_amp_foreach_non_finite_check_and_unscale_'
  if not (is_tensor(found_inf) and found_inf:numel() == 1 and found_inf.dtype == torch.float32) then
    fail(op, 'found_inf must be a 1-element float32 tensor.')
  end
  if not (is_tensor(inv_scale) and inv_scale:numel() == 1 and inv_scale.dtype == torch.float32) then
    fail(op, 'inv_scale must be a 1-element float32 tensor.')
  end
  local inv = inv_scale:item()
  torch.no_grad(function()
    for _, g in ipairs(grads) do
      if not g:is_floating_point() then fail(op, 'expected floating gradients, got ' .. tostring(g.dtype)) end
      if not g:isfinite():all() then found_inf:fill_(1) end
      if inv ~= 1 then g:mul_(inv_scale) end
    end
  end)
end

-- torch._amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
-- PyTorch's update in place (scale float32, growth_tracker int32, 1 element each); returns scale
function M.update_scale_(scale, tracker, found_inf, growth, backoff, interval)
  local op = '_amp_update_scale_'
  if not (is_tensor(scale) and scale:numel() == 1 and scale.dtype == torch.float32) then
    fail(op, 'current_scale must be a 1-element float32 tensor.')
  end
  if not (is_tensor(tracker) and tracker:numel() == 1 and tracker.dtype == torch.int32) then
    fail(op, 'growth_tracker must be a 1-element int32 tensor.')
  end
  if not (is_tensor(found_inf) and found_inf:numel() == 1 and found_inf.dtype == torch.float32) then
    fail(op, 'found_inf must be a 1-element float32 tensor.')
  end
  local f = require('ffi')
  torch.no_grad(function()
    if found_inf:item() ~= 0 then
      -- float32 scale times a double factor, stored as float32
      scale:fill_(scale:item() * backoff)
      tracker:fill_(0)
    else
      local successful = tracker:item() + 1
      if successful == interval then
        local new = tonumber(f.new('float', scale:item() * growth))
        if new == new and new ~= math.huge and new ~= -math.huge then scale:fill_(new) end
        tracker:fill_(0)
      else
        tracker:fill_(successful)
      end
    end
  end)
  return scale
end

------------------------------------------------------------------------------ GradScaler
local READY, UNSCALED, STEPPED = 0, 1, 2

local GradScaler = class.class('torch.amp.GradScaler')
M.GradScaler = GradScaler

local function num(name, v, default)
  if v == nil then return default end
  if type(v) ~= 'number' then fail('GradScaler', ('%s: expected a number, got %s'):format(name, type(v))) end
  return v
end

-- GradScaler([device, ]{init_scale = 2^16, growth_factor = 2, backoff_factor = 0.5, growth_interval = 2000,
-- enabled = true})
function GradScaler:__init(device, opts)
  if type(device) == 'table' and opts == nil then device, opts = nil, device end
  opts = opts or {}
  if type(opts) ~= 'table' then fail('GradScaler', 'expected an options table, got ' .. type(opts)) end
  device = device or opts.device or 'cuda'
  if type(device) ~= 'string' then device = tostring(device) end
  local dtype_ = device:match('^(%a+)')
  if dtype_ ~= 'cpu' and dtype_ ~= 'cuda' then
    fail('GradScaler', ('expected the device type \'cpu\' or \'cuda\', got %q'):format(device))
  end
  self._device = dtype_
  local enabled = opts.enabled
  if enabled == nil then enabled = true end
  self._enabled = enabled and true or false
  if self._enabled and dtype_ == 'cuda' and not torch.cuda.is_available() then
    io.stderr:write('UserWarning: torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.\n')
    self._enabled = false
  end
  if self._enabled then
    self._init_scale = num('init_scale', opts.init_scale, 2.0 ^ 16)
    self._growth_factor = num('growth_factor', opts.growth_factor, 2.0)
    self._backoff_factor = num('backoff_factor', opts.backoff_factor, 0.5)
    self._growth_interval = num('growth_interval', opts.growth_interval, 2000)
    if not (self._growth_factor > 1.0) then fail('GradScaler', 'The growth factor must be > 1.0.') end
    if not (self._backoff_factor < 1.0) then fail('GradScaler', 'The backoff factor must be < 1.0.') end
    self._init_growth_tracker = 0
    self._scale = nil
    self._growth_tracker = nil
    self._per_optimizer_states = {}
  end
end

function GradScaler:_check_scale_growth_tracker(funcname)
  local fix = 'This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration.'
  if self._scale == nil then fail('GradScaler.' .. funcname, ('Attempted %s but _scale is None.  '):format(funcname) .. fix) end
  return self._scale, self._growth_tracker
end

function GradScaler:_lazy_init_scale_growth_tracker(dev)
  self._scale = torch.full({ 1 }, self._init_scale, { dtype = torch.float32, device = dev })
  self._growth_tracker = torch.full({ 1 }, self._init_growth_tracker, { dtype = torch.int32, device = dev })
end

local function state_of(self, optimizer)
  local s = self._per_optimizer_states[optimizer]
  if not s then
    s = { stage = READY, found_inf_per_device = {} }
    self._per_optimizer_states[optimizer] = s
  end
  return s
end

-- scale(outputs): a tensor times the scale, or an array (nested) of them; unchanged when disabled
function GradScaler:scale(outputs)
  if not self._enabled then return outputs end
  local function one(t)
    if self._scale == nil then self:_lazy_init_scale_growth_tracker(t.device) end
    return t * self._scale:to(t.device)
  end
  if is_tensor(outputs) then return one(outputs) end
  local function apply(v)
    if is_tensor(v) then return one(v) end
    if type(v) == 'table' and getmetatable(v) == nil then
      local r = {}
      for i, x in ipairs(v) do r[i] = apply(x) end
      return r
    end
    fail('GradScaler.scale', 'outputs must be a Tensor or an iterable of Tensors')
  end
  return apply(outputs)
end

local function params_of(optimizer)
  if type(optimizer) ~= 'table' or type(optimizer.param_groups) ~= 'table' then
    fail('GradScaler', 'expected an optimizer (with param_groups), got ' .. type(optimizer))
  end
  return optimizer.param_groups
end

function GradScaler:_unscale_grads_(optimizer, inv_scale, found_inf, allow_fp16)
  local per_device = {} -- device string -> { dtype -> grads }
  for _, group in ipairs(params_of(optimizer)) do
    for _, p in ipairs(group.params) do
      local g = p.grad
      if g ~= nil then
        if not allow_fp16 and g.dtype == torch.float16 then fail('GradScaler.unscale_', 'Attempting to unscale FP16 gradients.') end
        local dev = tostring(g.device)
        per_device[dev] = per_device[dev] or {}
        local byd = per_device[dev]
        byd[g.dtype] = byd[g.dtype] or {}
        local list = byd[g.dtype]
        list[#list + 1] = g
      end
    end
  end
  local found = {}
  for dev, bydtype in pairs(per_device) do
    local fi = found_inf:to(dev)
    local inv = inv_scale:to(dev)
    for _, grads in pairs(bydtype) do M.foreach_non_finite_check_and_unscale_(grads, fi, inv) end
    found[dev] = fi
  end
  return found
end

-- unscale_(optimizer): the optimizer's gradients divided by the scale (once per step), inf/NaN recorded
function GradScaler:unscale_(optimizer)
  if not self._enabled then return end
  self:_check_scale_growth_tracker('unscale_')
  local st = state_of(self, optimizer)
  if st.stage == UNSCALED then
    fail('GradScaler.unscale_', 'unscale_() has already been called on this optimizer since the last update().')
  elseif st.stage == STEPPED then
    fail('GradScaler.unscale_', 'unscale_() is being called after step().')
  end
  -- the reciprocal in float64, rounded to float32, as PyTorch's
  local inv_scale = self._scale:double():reciprocal():float()
  local found_inf = torch.full({ 1 }, 0.0, { dtype = torch.float32, device = self._scale.device })
  st.found_inf_per_device = self:_unscale_grads_(optimizer, inv_scale, found_inf, false)
  st.stage = UNSCALED
end

-- step(optimizer, ...): unscale_ (unless done), then optimizer:step(...) unless a gradient held inf/NaN;
-- returns what optimizer:step returned (nil when skipped)
function GradScaler:step(optimizer, ...)
  if not self._enabled then return optimizer:step(...) end
  local a = ...
  if type(a) == 'table' and getmetatable(a) == nil and a.closure ~= nil then
    fail('GradScaler.step', 'Closure use is not currently supported if GradScaler is enabled.')
  end
  self:_check_scale_growth_tracker('step')
  local st = state_of(self, optimizer)
  if st.stage == STEPPED then fail('GradScaler.step', 'step() has already been called since the last update().') end
  if st.stage == READY then self:unscale_(optimizer) end
  local any, inf = false, 0
  for _, f in pairs(st.found_inf_per_device) do
    any = true
    inf = inf + f:item()
  end
  if not any then fail('GradScaler.step', 'No inf checks were recorded for this optimizer.') end
  local r
  if inf == 0 then r = optimizer:step(...) end
  st.stage = STEPPED
  return r
end

-- update([new_scale]): the scale for the next iteration (PyTorch's rule, or new_scale: a number or a
-- 1-element float32 tensor)
function GradScaler:update(new_scale)
  if not self._enabled then return end
  local scale, tracker = self:_check_scale_growth_tracker('update')
  if new_scale ~= nil then
    local reason = 'new_scale should be a float or a 1-element torch.FloatTensor with requires_grad=False.'
    if type(new_scale) == 'number' then
      scale:fill_(new_scale)
    else
      if not (is_tensor(new_scale) and new_scale.dtype == torch.float32 and new_scale:numel() == 1 and
        not new_scale.requires_grad) then
        fail('GradScaler.update', reason)
      end
      scale:copy_(new_scale:reshape(1))
    end
  else
    local combined
    for _, st in pairs(self._per_optimizer_states) do
      for _, f in pairs(st.found_inf_per_device) do
        local fi = f:to(scale.device)
        combined = combined and combined + fi or fi:clone()
      end
    end
    if not combined then fail('GradScaler.update', 'No inf checks were recorded prior to update.') end
    M.update_scale_(scale, tracker, combined, self._growth_factor, self._backoff_factor, self._growth_interval)
  end
  self._per_optimizer_states = {}
end

function GradScaler:_get_scale_async() return self._scale end
function GradScaler:get_scale()
  if not self._enabled then return 1.0 end
  if self._scale == nil then return self._init_scale end
  return self._scale:item()
end
function GradScaler:get_growth_factor() return self._growth_factor end
function GradScaler:set_growth_factor(v) self._growth_factor = v end
function GradScaler:get_backoff_factor() return self._backoff_factor end
function GradScaler:set_backoff_factor(v) self._backoff_factor = v end
function GradScaler:get_growth_interval() return self._growth_interval end
function GradScaler:set_growth_interval(v) self._growth_interval = v end
function GradScaler:_get_growth_tracker()
  if not self._enabled then return 0 end
  if self._growth_tracker == nil then return self._init_growth_tracker end
  return self._growth_tracker:item()
end
function GradScaler:is_enabled() return self._enabled end

-- state_dict(): {scale, growth_factor, backoff_factor, growth_interval, _growth_tracker} (empty when disabled)
function GradScaler:state_dict()
  if not self._enabled then return {} end
  return { scale = self:get_scale(), growth_factor = self._growth_factor, backoff_factor = self._backoff_factor,
    growth_interval = self._growth_interval, _growth_tracker = self:_get_growth_tracker() }
end
function GradScaler:load_state_dict(sd)
  if not self._enabled then return end
  if type(sd) ~= 'table' or next(sd) == nil then
    fail('GradScaler.load_state_dict',
      'The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.')
  end
  self._init_scale = sd.scale
  if self._scale ~= nil then self._scale:fill_(sd.scale) end
  self._growth_factor = sd.growth_factor
  self._backoff_factor = sd.backoff_factor
  self._growth_interval = sd.growth_interval
  self._init_growth_tracker = sd._growth_tracker
  if self._growth_tracker ~= nil then self._growth_tracker:fill_(sd._growth_tracker) end
end

function GradScaler:__tostring()
  return ('GradScaler(device=%s, scale=%s, enabled=%s)'):format(self._device, tostring(self:get_scale()),
    tostring(self._enabled))
end

return M
