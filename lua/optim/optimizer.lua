-- optim.Optimizer: what every optimizer shares, as PyTorch 1.13's torch.optim.Optimizer:
-- parameter groups (each a table holding `params` and every hyperparameter), per-parameter
-- `state` keyed by the parameter tensor itself, zero_grad, state_dict/load_state_dict in
-- PyTorch's layout (0-based parameter ids) and PyTorch's printing.
local List = require 'moontorch.iterlist'
local ffi = require 'ffi'
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local optim = require 'moontorch.optim'

local C, fail, raise_last = core.C, core.fail, core.raise_last
local is_tensor = torch.is_tensor
local type, pairs, ipairs, tostring, next = type, pairs, ipairs, tostring, next
local math, table = math, table

-- the default of a hyperparameter that every group must set (SGD's lr)
local required = setmetatable({}, { __tostring = function() return '<required parameter>' end })
optim.required = required

local Optimizer = torch.class('optim.Optimizer', nil, optim)

------------------------------------------------------------------------------ helpers
-- Python's str() of a hyperparameter: 0.1, 1e-05, 0, True, None
local pystr
function pystr(v)
  local tv = type(v)
  if tv == 'nil' then return 'None' end
  if tv == 'boolean' then return v and 'True' or 'False' end
  if tv == 'table' and getmetatable(v) == nil then -- a tuple: betas, etas, step_sizes
    local parts = {}
    for i = 1, #v do parts[i] = pystr(v[i]) end
    return '(' .. table.concat(parts, ', ') .. (#v == 1 and ',)' or ')')
  end
  if tv == 'number' then
    if v ~= v then return 'nan' elseif v == math.huge then return 'inf' elseif v == -math.huge then return '-inf' end
    if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return ('%d'):format(v) end
    for p = 1, 17 do -- the shortest form that reads back, as Python's repr
      local s = ('%.' .. p .. 'g'):format(v)
      if tonumber(s) == v then return s end
    end
    return ('%.17g'):format(v)
  end
  return tostring(v)
end
optim._pystr = pystr

-- the name PyTorch's messages give a value's type
local function type_name(v)
  if is_tensor(v) then return v:type() end
  return class.typename(v) or type(v)
end

------------------------------------------------------------------------------ construction
-- Optimizer(params, defaults): params an array of tensors or of parameter groups
-- ({params = {...}, lr = ...}); defaults the hyperparameters groups fall back on.
function Optimizer:__init(params, defaults)
  self.defaults = defaults or {}
  if is_tensor(params) or type(params) ~= 'table' then
    fail(self.__typename, 'params argument given to the optimizer should be an iterable of Tensors or dicts, but got ' ..
      type_name(params))
  end
  self.state = {}
  self.param_groups = {}
  if params[1] == nil then fail(self.__typename, 'optimizer got an empty parameter list') end
  local groups = params
  if is_tensor(params[1]) or type(params[1]) ~= 'table' then groups = { { params = params } } end
  for i = 1, #groups do self:add_param_group(groups[i]) end
end

-- add_param_group(group): group a table with `params` (a tensor or an array of tensors) and
-- any hyperparameters; the rest come from the defaults. The table itself joins param_groups.
function Optimizer:add_param_group(group)
  local op = 'optim.add_param_group'
  if type(group) ~= 'table' or is_tensor(group) then fail(op, 'param group must be a dict') end
  local ps = group.params
  if is_tensor(ps) then
    ps = { ps }
  elseif type(ps) == 'table' and (getmetatable(ps) == nil or List.is(ps)) then -- (model:parameters() is a torch.List)
    local copy = {}
    for i = 1, #ps do copy[i] = ps[i] end
    ps = copy
  else
    fail(op, "param group must hold its parameters in 'params' (a tensor or an array of tensors), got " ..
      type_name(ps))
  end
  group.params = ps
  local differentiable = self.defaults.differentiable
  for i = 1, #ps do
    local p = ps[i]
    if not is_tensor(p) then
      fail(op, 'optimizer can only optimize Tensors, but one of the params is ' .. type_name(p))
    end
    if not differentiable and not (p.is_leaf or p.retains_grad) then fail(op, "can't optimize a non-leaf Tensor") end
  end
  -- defaults, in a fixed order so that the first missing required one is named
  local names = {}
  for name in pairs(self.defaults) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    local default = self.defaults[name]
    if group[name] == nil then
      if default == required then
        fail(op, "parameter group didn't specify a value of required optimization parameter " .. name)
      end
      group[name] = default
    end
  end
  local seen = {}
  for i = 1, #ps do
    if seen[ps[i]] then
      io.stderr:write('UserWarning: optimizer contains a parameter group with duplicate parameters; ' ..
        'in future, this will cause an error; see github.com/pytorch/pytorch/issues/40967 for more information\n')
      break
    end
    seen[ps[i]] = true
  end
  for _, g in ipairs(self.param_groups) do
    for _, p in ipairs(g.params) do
      if seen[p] then fail(op, 'some parameters appear in more than one parameter group') end
    end
  end
  self.param_groups[#self.param_groups + 1] = group
end

------------------------------------------------------------------------------ gradients
function Optimizer:step()
  fail(self.__typename .. ':step', 'not implemented by this optimizer')
end

-- zero_grad(set_to_none) or zero_grad{set_to_none=}: PyTorch 1.13's default (false) zeroes the
-- gradients in place (a gradient with a grad_fn is detached first); true drops them.
local zero_grad_of = require('moontorch.autograd').zero_grad_of
function Optimizer:zero_grad(set_to_none)
  if type(set_to_none) == 'table' then set_to_none = set_to_none.set_to_none end
  local groups = self.param_groups
  for gi = 1, #groups do
    local ps = groups[gi].params
    for i = 1, #ps do zero_grad_of(ps[i], set_to_none) end
  end
end

------------------------------------------------------------------------------ state_dict
-- {state = {[id] = per-parameter state}, param_groups = {{<hyperparameters>, params = {ids}}}}
-- with 0-based ids numbering the parameters group after group, as PyTorch's (the state tables
-- and tensors are the optimizer's own, not copies, as in PyTorch).
function Optimizer:state_dict()
  local ids, next_id = {}, 0
  local groups = {}
  for gi, g in ipairs(self.param_groups) do
    local packed = {}
    for k, v in pairs(g) do
      if k ~= 'params' then packed[k] = v end
    end
    local pids = {}
    for i, p in ipairs(g.params) do
      if ids[p] == nil then ids[p] = next_id + i - 1 end
      pids[i] = ids[p]
    end
    next_id = next_id + #g.params
    packed.params = pids
    groups[gi] = packed
  end
  local state = {}
  for k, v in pairs(self.state) do
    local id = is_tensor(k) and ids[k]
    if id then state[id] = v else state[k] = v end
  end
  return { state = state, param_groups = groups }
end

-- a deep copy of a loaded value; tensors become copies with the parameter's dtype (a floating
-- parameter's), except a 'step' counter
local function cast(param, value, key)
  if is_tensor(value) then
    if key ~= 'step' and param:is_floating_point() and value.dtype ~= param.dtype then
      return value:to(param.dtype)
    end
    return value:detach():clone()
  elseif type(value) == 'table' and getmetatable(value) == nil then
    local out = {}
    for k, v in pairs(value) do out[k] = cast(param, v, k) end
    return out
  end
  return value
end

local function deepcopy(value)
  if is_tensor(value) then return value:detach():clone() end
  if type(value) ~= 'table' or getmetatable(value) ~= nil then return value end
  local out = {}
  for k, v in pairs(value) do out[k] = deepcopy(v) end
  return out
end

-- load_state_dict(sd): the hyperparameters and state of sd (copied) onto this optimizer's own
-- parameters, matched by position
function Optimizer:load_state_dict(sd)
  local op = 'optim.load_state_dict'
  if type(sd) ~= 'table' or type(sd.param_groups) ~= 'table' or type(sd.state) ~= 'table' then
    fail(op, "expected a state dict with 'state' and 'param_groups' tables")
  end
  local groups, saved = self.param_groups, sd.param_groups
  if #groups ~= #saved then fail(op, 'loaded state dict has a different number of parameter groups') end
  for i = 1, #groups do
    if type(saved[i]) ~= 'table' or type(saved[i].params) ~= 'table' or #groups[i].params ~= #saved[i].params then
      fail(op, "loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
    end
  end
  local id_map = {}
  for i = 1, #groups do
    local ps, ids = groups[i].params, saved[i].params
    for j = 1, #ps do id_map[ids[j]] = ps[j] end
  end
  local state = {}
  for k, v in pairs(sd.state) do
    local p = id_map[k]
    if p ~= nil then state[p] = cast(p, v) else state[k] = deepcopy(v) end
  end
  local new_groups = {}
  for i = 1, #groups do
    local ng = {}
    for k, v in pairs(saved[i]) do
      if k ~= 'params' then ng[k] = deepcopy(v) end
    end
    ng.params = groups[i].params
    new_groups[i] = ng
  end
  self.state = state
  self.param_groups = new_groups
  if self.defaults.differentiable == nil then self.defaults.differentiable = false end
end

------------------------------------------------------------------------------ printing
-- PyTorch's repr: the class name, then each group's hyperparameters sorted by name. A class
-- lists in `_none_options` the hyperparameters whose default is None (absent in Lua tables).
function Optimizer:__tostring()
  local name = self.__typename:match('([^.]+)$')
  local parts = { name, ' (' }
  for gi, g in ipairs(self.param_groups) do
    parts[#parts + 1] = ('\nParameter Group %d\n'):format(gi - 1)
    local keys, have = {}, {}
    for k in pairs(g) do
      if k ~= 'params' and type(k) == 'string' then keys[#keys + 1] = k; have[k] = true end
    end
    for _, k in ipairs(self._none_options or {}) do
      if not have[k] then keys[#keys + 1] = k end
    end
    table.sort(keys)
    for _, k in ipairs(keys) do parts[#parts + 1] = ('    %s: %s\n'):format(k, pystr(g[k])) end
  end
  parts[#parts + 1] = ')'
  return table.concat(parts)
end

return Optimizer
