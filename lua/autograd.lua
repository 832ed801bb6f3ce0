-- moontorch.autograd: the Lua face of the C autograd engine (core/grad): tensor properties
-- (requires_grad, grad, grad_fn, is_leaf), backward, torch.autograd.grad, grad modes, hooks and
-- gradcheck. The engine runs in C and stops only when Lua must act (hooks); this file answers.
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local C = core.C
local raise_last, fail = core.raise_last, core.fail
local methods, props, setters = T.methods, T.props, T.setters
local is_tensor, wrap, outp = T.is_tensor, T.wrap, T.outp
local type, select, ipairs = type, select, ipairs

local M = {}
local torch

------------------------------------------------------------------------------ Lua-side state
-- Hooks live in Lua, keyed by an id the C side carries (on a node or a tensor's metadata); when
-- the owner dies C queues its id and drain() forgets the state.
local next_id = 0
local entries = {}
local id_tables = { entries } -- every table keyed by these ids (M.per_id adds more)
local function new_id()
  next_id = next_id + 1
  return next_id
end
local function drain_from(id)
  while id ~= 0 do
    for i = 1, #id_tables do id_tables[i][id] = nil end
    id = tonumber(C.mt_grad_pop_dead_id())
  end
end
-- no loop unless there is something to forget: hot callers (backward) stay compilable
local function drain()
  local id = tonumber(C.mt_grad_pop_dead_id())
  if id ~= 0 then drain_from(id) return true end
  return false
end
M.new_id, M.drain = new_id, drain
T.drain = drain -- (tensor.sweep's)
-- A table of per-id state (Function contexts, anomaly tracebacks) that drain() clears when the
-- owner of an id dies.
function M.per_id(t)
  id_tables[#id_tables + 1] = t
  return t
end

local Handle = {}
Handle.__index = Handle
function Handle:remove()
  local list, fn = self._list, self._fn
  if not list then return end -- removing twice is harmless
  for i = #list, 1, -1 do
    if list[i] == fn then table.remove(list, i) break end
  end
  self._list = nil
end
local function handle(list, fn)
  list[#list + 1] = fn
  return setmetatable({ _list = list, _fn = fn }, Handle)
end
M.Handle = Handle

------------------------------------------------------------------------------ nodes (grad_fn)
local Node = {}
local node_cache = setmetatable({}, { __mode = 'v' })
local nrbuf = ffi.new('int[1]')

local function node_obj(p)
  if p == nil then return nil end
  local key = tonumber(ffi.cast('intptr_t', p))
  local o = node_cache[key]
  if o then return o end
  C.mt_node_retain(p)
  o = setmetatable({ _p = ffi.gc(p, C.mt_node_release) }, Node)
  node_cache[key] = o
  return o
end
M.node_obj = node_obj

local function node_entry(p)
  local id = tonumber(C.mt_node_lua_id(p))
  if id == 0 then
    id = new_id()
    C.mt_node_set_lua_id(p, id)
  end
  local e = entries[id]
  if not e then
    e = { pre = {}, post = {}, ready = {}, out = {}, retain = {} }
    entries[id] = e
  end
  return e, id
end

local function update_node_flags(p, e)
  local pre = #e.pre > 0 or next(e.out) ~= nil or next(e.retain) ~= nil
  C.mt_node_set_hook_flags(p, pre and 1 or 0, (#e.post > 0 or #e.ready > 0) and 1 or 0)
end

local node_props = {}
function node_props.next_functions(self)
  local p = self._p
  local r = {}
  for i = 0, C.mt_node_num_next(p) - 1 do
    local c = C.mt_node_next(p, i, nrbuf)
    r[i + 1] = { node_obj(c), nrbuf[0] }
  end
  return r
end
function node_props.variable(self)
  local v = C.mt_node_variable(self._p)
  if v == nil then return nil end
  return wrap(C.mt_tensor_retain(v))
end
Node.__index = function(self, k)
  local m = rawget(Node, k)
  if m ~= nil then return m end
  local p = node_props[k]
  if p then return p(self) end
  return nil
end
Node.__tostring = function(self)
  return ('<%s object at %s>'):format(self:name(), tostring(ffi.cast('void *', self._p)):match('0x%x+') or '?')
end
function Node:name() return ffi.string(C.mt_node_name(self._p)) end
-- post hook: fn(grad_inputs, grad_outputs) -> nil | array of new grad_inputs
function Node:register_hook(fn)
  local e = node_entry(self._p)
  local h = handle(e.post, fn)
  update_node_flags(self._p, e)
  return h
end
-- (internal) a post hook that is told only that the node ran: fn(), before the node's other post
-- hooks, with no gradient arrays made for it (DistributedDataParallel's gradient-ready hooks, run
-- once per parameter per backward)
function Node:_register_ready_hook(fn)
  local e = node_entry(self._p)
  local h = handle(e.ready, fn)
  update_node_flags(self._p, e)
  return h
end
-- pre hook: fn(grad_outputs) -> nil | array of new grad_outputs
function Node:register_prehook(fn)
  local e = node_entry(self._p)
  local h = handle(e.pre, fn)
  update_node_flags(self._p, e)
  return h
end
M.Node = Node

------------------------------------------------------------------------------ tensor properties
props.requires_grad = function(t) return C.mt_requires_grad(t) ~= 0 end
props.is_leaf = function(t) return C.mt_is_leaf(t) ~= 0 end
props.grad_fn = function(t) return node_obj(C.mt_grad_fn(t)) end
-- t.grad: the same handle while one for that gradient tensor lives (PyTorch's p.grad is one
-- object too), so that reading .grad in a loop makes no handles for the GC to find
local grad_handles = setmetatable({}, { __mode = 'v' }) -- C address -> handle
local intptr_ct = ffi.typeof('intptr_t')
props.grad = function(t)
  local p = C.mt_get_grad(t)
  if p == nil then return nil end
  local key = tonumber(ffi.cast(intptr_ct, p))
  local h = grad_handles[key]
  if h ~= nil then
    C.mt_tensor_release(p) -- the handle owns a reference already
    return h
  end
  h = wrap(p)
  grad_handles[key] = h
  return h
end
props.retains_grad = function(t) return C.mt_retains_grad(t) ~= 0 end
props.output_nr = function(t) return C.mt_output_nr(t) end
props._version = function(t) return tonumber(C.mt_tensor_version(t)) end
props.data = function(t) return t:detach() end

setters.requires_grad = function(t, v)
  if C.mt_set_requires_grad(t, v and 1 or 0) ~= 0 then raise_last() end
end
setters.grad = function(t, g)
  if g ~= nil and not is_tensor(g) then fail('grad', 'assigned grad expected to be a Tensor or None') end
  if C.mt_set_grad(t, g) ~= 0 then raise_last() end
end
setters.data = function(t, v)
  -- t.data = v: t takes v's storage, shape and dtype, keeping its identity and autograd state
  if not is_tensor(v) then fail('data', 'assigned data expected to be a Tensor') end
  if C.mt_tensor_set_data(t, v) ~= 0 then raise_last() end
end

function methods.requires_grad_(t, on)
  if on == nil then on = true end
  if C.mt_set_requires_grad(t, on and 1 or 0) ~= 0 then raise_last() end
  return t
end
function methods.detach(t)
  if C.mt_detach(t, outp) ~= 0 then raise_last() end
  return T.take()
end
function methods.detach_(t)
  if C.mt_detach_(t) ~= 0 then raise_last() end
  return t
end

-- retain_grad: a non-leaf's gradient is kept in .grad (a pre hook on its grad_fn stores it)
function methods.retain_grad(t)
  if C.mt_retain_grad(t) ~= 0 then raise_last() end
  local p = C.mt_grad_fn(t)
  if p == nil then return end
  local e = node_entry(p)
  local nr = C.mt_output_nr(t)
  local w = e.retain[nr] or setmetatable({}, { __mode = 'v' })
  w[1] = t
  e.retain[nr] = w
  update_node_flags(p, e)
end

-- register_hook(fn): fn(grad) -> nil | new grad; runs when t's gradient is computed
function methods.register_hook(t, fn)
  if type(fn) ~= 'function' then fail('register_hook', 'expected a function') end
  if not t.requires_grad then
    fail('register_hook', "cannot register a hook on a tensor that doesn't require gradient")
  end
  local p = C.mt_grad_fn(t)
  if p == nil then -- a leaf: the engine asks before accumulating
    local id = tonumber(C.mt_tensor_hooks_id(t))
    if id == 0 then
      id = new_id()
      if C.mt_tensor_set_hooks_id(t, id) ~= 0 then raise_last() end
    end
    local e = entries[id]
    if not e then
      e = { tensor = {} }
      entries[id] = e
    end
    return handle(e.tensor, fn)
  end
  local e = node_entry(p)
  local nr = C.mt_output_nr(t)
  e.out[nr] = e.out[nr] or {}
  local h = handle(e.out[nr], fn)
  update_node_flags(p, e)
  return h
end

------------------------------------------------------------------------------ the engine loop
-- one event struct per running engine: a backward may run inside another's hook or Function
-- backward (re-entrant, as PyTorch's engine), and the outer one's event must outlive the inner run
local events, depth = {}, 0
local EV_DONE, EV_PRE, EV_LUA, EV_POST, EV_TENSOR = 0, 1, 2, 3, 4

local function grads_array(arr, n)
  local r = {}
  for i = 0, n - 1 do
    local g = arr[i]
    if g ~= nil then r[i + 1] = wrap(C.mt_tensor_retain(g)) else r[i + 1] = false end
  end
  return r
end
local function nil_for_false(list)
  local r = {}
  for i = 1, #list do r[i] = list[i] or nil end
  return r
end

local function set_grad(e, i, g)
  if g ~= nil and not is_tensor(g) then fail('backward', 'a hook returned a non-tensor gradient') end
  if C.mt_engine_set_grad(e, i, g) ~= 0 then raise_last() end
end

local function call_tensor_hooks(e, list, slot, arr)
  if not list then return end
  for _, fn in ipairs(list) do
    local g = arr[slot]
    if g == nil then return end
    local r = fn(wrap(C.mt_tensor_retain(g)))
    if r ~= nil then set_grad(e, slot, r) end
  end
end

local function on_pre(e, ev)
  local node = ev.node
  local entry = entries[tonumber(C.mt_node_lua_id(node))]
  if not entry then return end
  for nr, list in pairs(entry.out) do call_tensor_hooks(e, list, nr, ev.grads) end
  for nr, w in pairs(entry.retain) do
    local t = w[1]
    local g = ev.grads[nr]
    if t and g ~= nil then
      -- retained grads accumulate like a leaf's
      local old = t.grad
      local ng = wrap(C.mt_tensor_retain(g))
      if old then ng = old + ng else ng = ng:clone() end
      if C.mt_set_grad(t, ng) ~= 0 then raise_last() end
    end
  end
  for _, fn in ipairs(entry.pre) do
    local r = fn(nil_for_false(grads_array(ev.grads, ev.count)))
    if r ~= nil then
      for i = 1, ev.count do set_grad(e, i - 1, r[i]) end
    end
  end
end

local function on_post(e, ev)
  local entry = entries[tonumber(C.mt_node_lua_id(ev.node))]
  if not entry then return end
  local ready = entry.ready
  for i = 1, #ready do ready[i]() end
  for _, fn in ipairs(entry.post) do
    local gin = nil_for_false(grads_array(ev.grads, ev.count))
    local gout = nil_for_false(grads_array(ev.grads_in, ev.count_in))
    local r = fn(gin, gout)
    if r ~= nil then
      for i = 1, ev.count do set_grad(e, i - 1, r[i]) end
    end
  end
end

local function on_tensor(e, ev)
  local v = C.mt_node_variable(ev.node)
  if v == nil then return end
  local entry = entries[tonumber(C.mt_tensor_hooks_id(v))]
  if entry then call_tensor_hooks(e, entry.tensor, 0, ev.grads) end
end

local lua_backward -- set by the Function module: lua_backward(e, ev, create_graph, retain_graph)

local function loop_events(e, ev, create, retain)
  while true do
    local k = ev.kind
    if k == EV_DONE then return end
    if k == EV_PRE then on_pre(e, ev)
    elseif k == EV_POST then on_post(e, ev)
    elseif k == EV_TENSOR then on_tensor(e, ev)
    elseif k == EV_LUA then
      if not lua_backward then fail('backward', 'a Lua function node was met but Functions are not loaded') end
      lua_backward(e, ev, create, retain)
    end
    if C.mt_engine_run(e, ev) ~= 0 then raise_last() end
  end
end
-- without Lua hooks and functions the first run finishes: no loop on that path
local function loop(e, ev, create, retain)
  if C.mt_engine_run(e, ev) ~= 0 then raise_last() end
  if ev.kind ~= EV_DONE then loop_events(e, ev, create, retain) end
end

local engp = ffi.new('mt_engine *[1]')
local function run_engine(op, rarr, garr, n, retain, create, iarr, inputs, ni, allow_unused)
  if C.mt_engine_new(rarr, garr, n, retain and 1 or 0, create and 1 or 0, iarr, ni, allow_unused and 1 or 0, engp) ~= 0 then
    raise_last()
  end
  local e = engp[0]
  depth = depth + 1
  local ev = events[depth]
  if not ev then
    ev = ffi.new('mt_engine_event')
    events[depth] = ev
  end
  local ok, err = pcall(loop, e, ev, create, retain)
  depth = depth - 1
  if not ok and M.rewrite_error then err = M.rewrite_error(err) end
  local captured
  if ok and ni > 0 then
    captured = {}
    for i = 1, ni do
      local p = C.mt_engine_captured(e, i - 1)
      if p ~= nil then captured[i] = wrap(p)
      elseif not allow_unused then
        C.mt_engine_free(e)
        fail(op, 'One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.')
      end
    end
  end
  C.mt_engine_free(e)
  drain()
  if not ok then error(err, 0) end
  return captured
end

-- run a backward: roots, grads (arrays, grads may hold nils), options; inputs for autograd.grad
local function run_backward(op, roots, grads, retain, create, inputs, allow_unused)
  drain()
  local n = #roots
  local rarr = ffi.new('mt_tensor *[?]', n)
  local garr = ffi.new('mt_tensor *[?]', n)
  for i = 1, n do
    local r = roots[i]
    if not is_tensor(r) then fail(op, 'expected tensors to differentiate, got ' .. type(r)) end
    rarr[i - 1] = r
    local g = grads and grads[i]
    if g ~= nil and not is_tensor(g) then
      if type(g) == 'number' then g = torch.full(r:size(), g, { dtype = r.dtype }) else
        fail(op, 'gradient must be a tensor') end
      grads[i] = g
    end
    garr[i - 1] = g
  end
  local ni = inputs and #inputs or 0
  local iarr = ni > 0 and ffi.new('mt_tensor *[?]', ni) or nil
  for i = 1, ni do
    if not is_tensor(inputs[i]) then fail(op, 'inputs must be tensors') end
    iarr[i - 1] = inputs[i]
  end
  return run_engine(op, rarr, garr, n, retain, create, iarr, inputs, ni, allow_unused)
end
M.run_backward = run_backward
function M.set_lua_backward(f) lua_backward = f end

-- t:backward(gradient, {retain_graph=, create_graph=, inputs=})
local root1 = ffi.new('mt_tensor *[1]')
local grad1 = ffi.new('mt_tensor *[1]')
function methods.backward(t, gradient, opts)
  if type(gradient) == 'table' and not is_tensor(gradient) and opts == nil then gradient, opts = nil, gradient end
  T.options(opts, 'backward')
  local create = opts and opts.create_graph or false
  local retain = opts and opts.retain_graph
  if retain == nil then retain = create end
  if gradient ~= nil and not is_tensor(gradient) then
    return run_backward('backward', { t }, { gradient }, retain, create)
  end
  -- one root: no tables, no loops (the usual loss:backward() compiles)
  if not is_tensor(t) then fail('backward', 'expected tensors to differentiate, got ' .. type(t)) end
  drain()
  root1[0] = t
  grad1[0] = gradient -- (mt_engine_new takes what it needs from both before it returns)
  run_engine('backward', root1, grad1, 1, retain, create, nil, nil, 0, false)
end

------------------------------------------------------------------------------ torch.autograd
local autograd = {}
M.autograd = autograd

local function as_list(x)
  if x == nil then return {} end
  if is_tensor(x) then return { x } end
  return x
end

-- torch.autograd.grad(outputs, inputs, {grad_outputs=, retain_graph=, create_graph=, allow_unused=})
function autograd.grad(outputs, inputs, opts)
  opts = opts or {}
  local outs, ins = as_list(outputs), as_list(inputs)
  local gos = opts.grad_outputs ~= nil and as_list(opts.grad_outputs) or {}
  local create = opts.create_graph or false
  local retain = opts.retain_graph
  if retain == nil then retain = create end
  local r = run_backward('grad', outs, gos, retain, create, ins, opts.allow_unused)
  local res = {}
  for i = 1, #ins do res[i] = r[i] end
  return res
end

function autograd.backward(tensors, grad_tensors, opts)
  opts = opts or {}
  local ts = as_list(tensors)
  local create = opts.create_graph or false
  local retain = opts.retain_graph
  if retain == nil then retain = create end
  run_backward('backward', ts, as_list(grad_tensors), retain, create)
end

------------------------------------------------------------------------------ grad modes
-- torch.no_grad, torch.enable_grad, torch.inference_mode: PyTorch's `with torch.no_grad():` is
--   torch.no_grad(function() ... end)        -- runs the block now, returns what it returns
-- (a block takes no arguments, so forgetting a trailing () cannot leave it unrun); PyTorch's
-- decorator @torch.no_grad() is
--   local f = torch.no_grad.wrap(function(x) ... end)   -- f(x) runs in the mode
-- and a function that takes arguments, given to torch.no_grad itself, is wrapped so too (what
-- module:apply(torch.no_grad(function(m) ... end)) needs). The mode comes back after the block,
-- also when it fails. enter() sets the mode and returns what exit(prev) restores.
local function callable(fn)
  if type(fn) == 'function' then return true end
  local mt = type(fn) == 'table' and getmetatable(fn)
  return mt and mt.__call ~= nil or false
end
local function takes_arguments(fn)
  if type(fn) ~= 'function' then return true end -- a callable object: wrapped
  local info = debug.getinfo(fn, 'u')
  return info.nparams > 0 or info.isvararg
end
local function with_mode(name, enter, exit)
  -- restore the mode, then re-raise or return fn's results (no table: the wrapper compiles)
  local function finish(prev, ok, ...)
    exit(prev)
    if not ok then error((...), 0) end
    return ...
  end
  local function wrap(fn)
    if not callable(fn) then
      fail(name .. '.wrap', ('expected a function to wrap, got %s'):format(type(fn)))
    end
    return function(...)
      local prev = enter()
      return finish(prev, pcall(fn, ...))
    end
  end
  local mode = { wrap = wrap }
  return setmetatable(mode, {
    __call = function(_, fn, ...)
      if fn == nil then
        fail(name, ('takes the block to run: torch.%s(function() ... end) runs it (PyTorch\'s `with torch.%s():`); '
          .. 'torch.%s.wrap(f) wraps a function'):format(name, name, name))
      end
      if not callable(fn) then fail(name, ('expected a function (the block to run), got %s'):format(type(fn))) end
      if select('#', ...) > 0 then
        fail(name, ('takes one function, the block to run, got %d more arguments'):format(select('#', ...)))
      end
      if takes_arguments(fn) then return wrap(fn) end
      local prev = enter()
      return finish(prev, pcall(fn))
    end,
    __tostring = function() return 'torch.' .. name end,
  })
end
local function set_grad_mode(b) C.mt_set_grad_enabled(b and 1 or 0) end
local function get_grad() return C.mt_is_grad_enabled() ~= 0 end
local function set_inf(b)
  C.mt_set_inference_mode(b and 1 or 0)
end
local function get_inf() return C.mt_is_inference_mode() ~= 0 end

local function grad_mode(value)
  return function()
    local prev = get_grad()
    set_grad_mode(value)
    return prev
  end
end
-- inference mode: grad mode off too; prev packs both (1: grad on, 2: inference on)
local function enter_inference()
  local prev = (get_grad() and 1 or 0) + (get_inf() and 2 or 0)
  set_inf(true)
  set_grad_mode(false)
  return prev
end
local function exit_inference(prev)
  set_inf(prev >= 2)
  set_grad_mode(prev % 2 == 1)
end

function M.install(t)
  torch = t
  t.no_grad = with_mode('no_grad', grad_mode(false), set_grad_mode)
  t.enable_grad = with_mode('enable_grad', grad_mode(true), set_grad_mode)
  t.set_grad_enabled = function(b) set_grad_mode(b) end
  t.is_grad_enabled = get_grad
  t.inference_mode = with_mode('inference_mode', enter_inference, exit_inference)
  t.is_inference_mode_enabled = get_inf
  autograd.no_grad, autograd.enable_grad = t.no_grad, t.enable_grad
  t.autograd = autograd
  -- factories' {requires_grad=true}
  T.apply_opts = function(x, opts)
    if opts.requires_grad then x:requires_grad_(true) end
    return x
  end
  require('moontorch.gradcheck').install(t, autograd)
  require('moontorch.function').install(t, autograd, M) -- torch.autograd.Function, anomaly mode
end

-- zero_grad of one parameter, as Module.zero_grad and Optimizer.zero_grad do it (PyTorch 1.13):
-- set_to_none drops the gradient; otherwise it is zeroed in place (detached first if it has a
-- grad_fn, and no longer requiring grad)
local grad_ref = ffi.new('mt_tensor *[1]')
function M.zero_grad_of(p, set_to_none)
  local g = C.mt_get_grad(p)
  if g == nil then return end
  if set_to_none then
    C.mt_tensor_release(g)
    p.grad = nil
    return
  end
  grad_ref[0] = g
  local gt = grad_ref[0][0]
  if C.mt_grad_fn(gt) ~= nil then
    C.mt_detach_(gt)
  else
    C.mt_set_requires_grad(gt, 0)
  end
  local s = C.mt_zero_(gt)
  C.mt_tensor_release(g)
  if s ~= 0 then raise_last() end
end

return M
