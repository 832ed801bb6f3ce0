-- moontorch.amp.autocast: PyTorch's torch.autocast (issue 25). A scope in which the ops of a
-- policy (lua/amp/policy.lua: PyTorch 1.13's lists by default) cast their floating tensor
-- arguments of the scope's device type: to the low dtype (bfloat16 on the CPU, float16 on CUDA), to
-- float32, or to the widest of them (promote); every other op runs as it is.
--
--   torch.autocast('cpu', {dtype = torch.bfloat16}, function() ... end)  -- runs the block, returns its results
--   local ac = torch.autocast('cpu'); ac:__enter(); ...; ac:__exit()     -- or :enter() / :exit()
--   local f = torch.autocast('cpu'):wrap(fn)                              -- PyTorch's decorator
--   torch.autocast('cpu', {policy = {mm = 'fp32', ['torch.nn.functional.gelu'] = 'lower_precision_fp'}}, fn)
--
-- The casts are made where the user's call enters the op: through the observation point
-- (lua/observe.lua), the one hook every op function of torch, Tensor, nn.functional, linalg and
-- special goes through. A scope installs an observer that wraps only the functions of its policy,
-- and removes it when it exits, so nothing is wrapped (and nothing costs) outside autocast. Inside a
-- cast op, the ops it calls run as they are (PyTorch excludes its autocast key there too). As in
-- PyTorch, the low-precision casts of float32 leaves that require grad (a model's weights) are made
-- once per outermost scope and kept until it exits (cache_enabled), and float64 tensors are never cast.
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local policy = require 'moontorch.amp.policy'

-- one autocast state per process: a second load of this file (a test runner that forgets the modules
-- a file loaded, as busted's insulation does, while torch.autocast keeps the first) gives the first
if core.autocast then return core.autocast end

local fail = core.fail
local is_tensor = T.is_tensor
local type, select, pcall, error, pairs, ipairs, getmetatable = type, select, pcall, error, pairs, ipairs, getmetatable
local unpack = unpack

local M = {}

-- per device type: enabled, the low dtype, the op-name policy and the resolved {qualified name = kind}
local state = {
  cpu = { enabled = false, dtype = torch.bfloat16 },
  cuda = { enabled = false, dtype = torch.float16 },
}
M.state = state
local nesting = 0
local cache_enabled = true
local cache = {} -- float32 leaf -> its low-precision copy, until the outermost scope exits
local excluded = 0 -- > 0 inside a cast op: what it calls is not cast again

local default -- the default policy of a device type (below)

local function dev_of_tensor(t)
  local d = t._device_type
  return d == 0 and 'cpu' or d == 1 and 'cuda' or nil
end

------------------------------------------------------------------------------ the policy
local function copy(t)
  local r = {}
  for k, v in pairs(t) do r[k] = v end
  return r
end
-- {op or qualified name = kind} -> {qualified name = kind}; qualified names given explicitly win
local function resolve(p)
  local q = {}
  for name, kind in pairs(p) do
    if not name:find('.', 1, true) then
      for _, fn in ipairs(policy.functions_of(name)) do q[fn] = kind end
    end
  end
  for name, kind in pairs(p) do
    if name:find('.', 1, true) then q[name] = kind end
  end
  return q
end
local function check_policy(p, where)
  for name, kind in pairs(p) do
    if type(name) ~= 'string' then fail(where, 'a policy\'s keys are op names or qualified function names, got ' .. type(name)) end
    if not (kind == false or type(kind) == 'function' or policy.KINDS[kind]) then
      fail(where, ('policy[%q]: expected \'lower_precision_fp\', \'fp32\', \'promote\', \'banned\', false or a function, got %s')
        :format(name, tostring(kind)))
    end
  end
end

-- the default lists' policy per device type, resolved once: made again when torch.amp.lists changed
-- (its size or last names: after an edit in place that keeps both, call torch.amp.policy_changed())
local defaults = {}
local function fingerprint(dev)
  local l, fp = policy[dev], ''
  for _, kind in ipairs({ 'lower_precision_fp', 'fp32', 'promote', 'banned' }) do
    local names = l[kind]
    if names then fp = fp .. #names .. tostring(names[#names]) end
  end
  return fp
end
default = function(dev)
  local d = defaults[dev]
  local fp = fingerprint(dev)
  if d and d.fp == fp then return d end
  d = { fp = fp, policy = policy.policy(dev) }
  d.qpolicy = resolve(d.policy)
  d.only = {}
  for q, kind in pairs(d.qpolicy) do if kind then d.only[q] = true end end
  defaults[dev] = d
  return d
end
function M.policy_changed() defaults = {} end

------------------------------------------------------------------------------ casting
local float32, float64 = torch.float32, torch.float64

local function eligible(t, dev)
  return is_tensor(t) and t:is_floating_point() and t.dtype ~= float64 and dev_of_tensor(t) == dev
end

local function cast(t, to, dev, st)
  if not eligible(t, dev) or t.dtype == to then return t end
  if to == st.dtype and cache_enabled and t.dtype == float32 and t.requires_grad and t.is_leaf and
    torch.is_grad_enabled() then
    local c = cache[t]
    if c == nil then
      c = t:to(to)
      cache[t] = c
    end
    return c
  end
  return t:to(to)
end

-- a plain table argument: a list of tensors (cat's) or the options table; class instances are left alone
local function plain(x) return type(x) == 'table' and getmetatable(x) == nil end

local function cast_value(v, to, dev, st)
  if is_tensor(v) then return cast(v, to, dev, st) end
  if plain(v) then
    local r
    for k, x in pairs(v) do
      if is_tensor(x) then
        local c = cast(x, to, dev, st)
        if c ~= x then
          r = r or copy(v)
          r[k] = c
        end
      end
    end
    return r or v
  end
  return v
end

-- the device type of an op's call: that of its first tensor argument (or first tensor of a list)
local function device_of(n, args)
  for i = 1, n do
    local a = args[i]
    if is_tensor(a) then return dev_of_tensor(a) end
    if plain(a) then
      local x = a[1]
      if is_tensor(x) then return dev_of_tensor(x) end
    end
  end
  return nil
end

-- promote: the widest floating dtype among the eligible arguments
local function widest(n, args, dev)
  local w
  local function see(t)
    if eligible(t, dev) then w = w and torch.promote_types(w, t.dtype) or t.dtype end
  end
  for i = 1, n do
    local a = args[i]
    if is_tensor(a) then see(a)
    elseif plain(a) then for _, x in pairs(a) do if is_tensor(x) then see(x) end end end
  end
  return w
end

local function finish(ok, ...)
  excluded = excluded - 1
  if not ok then error((...), 0) end
  return ...
end

local BANNED = 'torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n' ..
  'Many models use a sigmoid layer right before the binary cross entropy layer.\n' ..
  'In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n' ..
  'or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n' ..
  'safe to autocast.'

-- a call of the function `qname` (fn) under autocast
local function dispatch(qname, fn, ...)
  if excluded > 0 then return fn(...) end
  local n = select('#', ...)
  local args = { ... }
  local dev = device_of(n, args)
  local st = dev and state[dev]
  if not (st and st.enabled) then return fn(...) end
  local kind = st.qpolicy[qname]
  if type(kind) == 'function' then kind = kind(...) end
  if not kind then return fn(...) end
  if kind == 'banned' then fail(qname:match('[^.]+$'), BANNED) end
  local to
  if kind == 'lower_precision_fp' then to = st.dtype
  elseif kind == 'fp32' then to = float32
  else to = widest(n, args, dev) end
  if to then
    for i = 1, n do args[i] = cast_value(args[i], to, dev, st) end
  end
  excluded = excluded + 1
  return finish(pcall(fn, unpack(args, 1, n)))
end

-- fn(...) with nothing inside cast (an op PyTorch runs as one fused op, outside its lists: nn.LSTM, nn.GRU
-- and their cells); a plain call outside autocast
function M.exempt(fn, ...)
  if nesting == 0 or excluded > 0 then return fn(...) end
  excluded = excluded + 1
  return finish(pcall(fn, ...))
end

-- the observer of a scope: wraps the functions its policy names, leaves the rest. A wrapper reads the
-- policy in effect when it is called, so one wrapper per function serves every scope (kept while the
-- function lives)
local wrappers = setmetatable({}, { __mode = 'k' })
local function observer(qpolicy)
  return function(qname, fn)
    if not qpolicy[qname] then return fn end
    local byname = wrappers[fn]
    if not byname then
      byname = {}
      wrappers[fn] = byname
    end
    local w = byname[qname]
    if not w then
      w = function(...) return dispatch(qname, fn, ...) end
      byname[qname] = w
    end
    return w
  end
end

------------------------------------------------------------------------------ the scope
local Autocast = {}
Autocast.__index = Autocast
Autocast.__typename = 'torch.autocast'
M.Autocast = Autocast

local function cuda_available()
  local ok, cuda = pcall(function() return torch.cuda end)
  return ok and cuda and cuda.is_available()
end

local low = { [torch.bfloat16] = true, [torch.float16] = true }

-- torch.autocast(device_type, {dtype=, enabled=true, cache_enabled=true, policy=}) -> Autocast
function M.new(device_type, opts)
  if type(device_type) ~= 'string' then
    fail('autocast', 'expected the device type as a string (\'cpu\' or \'cuda\'), got ' .. type(device_type))
  end
  if device_type ~= 'cpu' and device_type ~= 'cuda' then
    fail('autocast', ('User specified autocast device_type must be \'cuda\' or \'cpu\', but got %q'):format(device_type))
  end
  opts = opts or {}
  if type(opts) ~= 'table' then fail('autocast', 'expected an options table {dtype=, enabled=, cache_enabled=}, got ' .. type(opts)) end
  local self = setmetatable({ device = device_type, fast_dtype = state[device_type].dtype }, Autocast)
  if opts.dtype ~= nil then self.fast_dtype = opts.dtype end
  local enabled = opts.enabled
  if enabled == nil then enabled = true end
  self._enabled = enabled and true or false
  if opts.cache_enabled ~= nil then self._cache_enabled = opts.cache_enabled and true or false end
  if opts.policy ~= nil then
    if type(opts.policy) ~= 'table' then fail('autocast', 'policy: expected a table {op = kind}, got ' .. type(opts.policy)) end
    check_policy(opts.policy, 'autocast')
    self.policy = opts.policy
  end
  -- PyTorch warns and turns the scope off for a dtype it does not support (moontorch computes float16
  -- on the CPU too, as PyTorch 2 does)
  if self._enabled and not low[self.fast_dtype] then
    io.stderr:write(('UserWarning: In %s autocast, but the target dtype is not supported. Disabling autocast.\n' ..
      '%s Autocast only supports dtypes of torch.bfloat16 and torch.float16 currently.\n')
      :format(device_type == 'cpu' and 'CPU' or 'CUDA', device_type == 'cpu' and 'CPU' or 'CUDA'))
    self._enabled = false
  end
  if self._enabled and device_type == 'cuda' and not cuda_available() then
    io.stderr:write('UserWarning: User provided device_type of \'cuda\', but CUDA is not available. Disabling\n')
    self._enabled = false
  end
  return self
end

function Autocast:__enter()
  if self._saved then fail('autocast', 'this autocast scope is already entered') end
  local st = state[self.device]
  self._saved = { enabled = st.enabled, dtype = st.dtype, policy = st.policy, qpolicy = st.qpolicy, only = st.only,
    cache = cache_enabled, excluded = excluded }
  st.enabled = self._enabled
  if self._enabled then
    st.dtype = self.fast_dtype
    -- this scope's policy: the enclosing one's (or the default lists), patched with opts.policy
    if self.policy then
      local p = st.policy and copy(st.policy) or policy.policy(self.device)
      for k, v in pairs(self.policy) do p[k] = v end
      st.policy, st.qpolicy, st.only = p, resolve(p), nil
    elseif not st.policy then
      local d = default(self.device)
      st.policy, st.qpolicy, st.only = d.policy, d.qpolicy, d.only
    end
  end
  if self._cache_enabled ~= nil then cache_enabled = self._cache_enabled end
  excluded = 0
  nesting = nesting + 1
  if self._enabled then
    local only = st.only
    if not only then
      only = {}
      for q, kind in pairs(st.qpolicy) do if kind then only[q] = true end end
      st.only = only
    end
    local ok, h = pcall(require('moontorch.observe').install, observer(st.qpolicy), only)
    if not ok then
      self:_restore()
      error(h, 0)
    end
    self._handle = h
  end
  return self
end

function Autocast:_restore()
  local s, st = self._saved, state[self.device]
  st.enabled, st.dtype, st.policy, st.qpolicy, st.only = s.enabled, s.dtype, s.policy, s.qpolicy, s.only
  cache_enabled, excluded = s.cache, s.excluded
  self._saved = nil
  nesting = nesting - 1
  if nesting == 0 then cache = {} end
end

function Autocast:__exit()
  if not self._saved then fail('autocast', 'this autocast scope was not entered') end
  if self._handle then
    self._handle:remove()
    self._handle = nil
  end
  self:_restore()
  return false
end
Autocast.enter, Autocast.exit = Autocast.__enter, Autocast.__exit

local function finish_scope(self, ok, ...)
  self:__exit()
  if not ok then error((...), 0) end
  return ...
end
-- run fn(...) inside the scope, returning its results (the scope exits also when fn fails)
function Autocast:run(fn, ...)
  self:__enter()
  return finish_scope(self, pcall(fn, ...))
end
-- PyTorch's decorator: a function that runs fn inside a scope of these settings
function Autocast:wrap(fn)
  if type(fn) ~= 'function' then fail('autocast', 'wrap: expected a function, got ' .. type(fn)) end
  local device, opts = self.device, { dtype = self.fast_dtype, enabled = self._enabled,
    cache_enabled = self._cache_enabled, policy = self.policy }
  return function(...)
    local ac = M.new(device, opts)
    return ac:run(fn, ...)
  end
end
Autocast.__call = function(self, fn) return self:wrap(fn) end
Autocast.__tostring = function(self)
  return ('torch.autocast(device_type=%s, dtype=%s, enabled=%s)'):format(self.device, tostring(self.fast_dtype),
    tostring(self._enabled))
end

-- torch.autocast(device_type[, opts][, fn]): with fn, runs the block and returns its results
function M.autocast(device_type, opts, fn, ...)
  if type(opts) == 'function' then return M.new(device_type):run(opts, fn, ...) end
  local ac = M.new(device_type, opts)
  if fn == nil then return ac end
  if type(fn) ~= 'function' then fail('autocast', 'expected the block to run as a function, got ' .. type(fn)) end
  return ac:run(fn, ...)
end

------------------------------------------------------------------------------ the state, as PyTorch's functions
function M.is_autocast_enabled() return state.cuda.enabled end
function M.is_autocast_cpu_enabled() return state.cpu.enabled end
function M.set_autocast_enabled(b) state.cuda.enabled = b and true or false end
function M.set_autocast_cpu_enabled(b) state.cpu.enabled = b and true or false end
function M.get_autocast_cpu_dtype() return state.cpu.dtype end
function M.get_autocast_gpu_dtype() return state.cuda.dtype end
function M.set_autocast_cpu_dtype(d) state.cpu.dtype = d end
function M.set_autocast_gpu_dtype(d) state.cuda.dtype = d end
function M.is_autocast_cache_enabled() return cache_enabled end
function M.set_autocast_cache_enabled(b) cache_enabled = b and true or false end
function M.clear_autocast_cache() cache = {} end
function M.autocast_increment_nesting() nesting = nesting + 1; return nesting end
function M.autocast_decrement_nesting() nesting = nesting - 1; return nesting end

-- the policy in effect for a device type: a copy of the innermost enabled scope's, else the default lists
function M.current_policy(device_type)
  local st = state[device_type]
  if not st then fail('amp.current_policy', ('no autocast for device type %q'):format(tostring(device_type))) end
  return st.policy and copy(st.policy) or policy.policy(device_type)
end

core.autocast = M -- found by the ops that must know the state (nn.LSTM and the cells: exempt)
return M
