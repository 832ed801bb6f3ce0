-- moontorch.function: torch.autograd.Function (functions with a backward written in Lua) and
-- anomaly mode (torch.autograd.set_detect_anomaly / detect_anomaly).
--
-- Spelling. A Function is a class whose forward and backward are static: they take the context
-- `ctx` first, never an instance.
--
--   local Exp = torch.autograd.Function('Exp')     -- a new class (also registered as torch.class)
--   function Exp.forward(ctx, x)
--     local y = x:exp()
--     ctx:save_for_backward(y)
--     return y
--   end
--   function Exp.backward(ctx, g)
--     local y = unpack(ctx.saved_tensors)
--     return g * y
--   end
--   local y = Exp.apply(x)                          -- Exp:apply(x) is the same call
--
-- torch.class('Exp', 'torch.autograd.Function') makes one too; such a class has no `apply` of its
-- own, so call it as Exp:apply(x). torch.autograd.Function('Name', Parent) derives from another
-- Function class. A Function class is never instantiated (calling Exp(...) is an error).
--
-- forward(ctx, ...) runs under no_grad. Its arguments may be anything; it returns one value,
-- several values, or one array of them; the tensors among them become outputs of a node named
-- '<Name>Backward' when grad mode is on and a tensor argument requires grad. backward(ctx, ...)
-- gets one gradient per output (zeros where none arrived, unless ctx:set_materialize_grads(false):
-- then nil) and returns one gradient per forward argument (nil for non-tensors and for inputs that
-- need none). It runs with grad mode on under create_graph, so a backward made of differentiable
-- ops can be differentiated again.
--
-- ctx: save_for_backward(...), saved_tensors (an array; an error if one of them was modified in
-- place since), needs_input_grad (an array of booleans, one per argument), mark_dirty(...)
-- (tensors forward modified in place; they must be returned), mark_non_differentiable(...),
-- set_materialize_grads(bool), and any field of your own (ctx.k = 3). Keep outputs on ctx with
-- save_for_backward, not in fields: a field holding an output keeps the graph alive for ever.
--
-- The node keeps its ctx alive: the ctx sits in a table under the node's Lua id, cleared when the
-- node dies (autograd.lua's drain(), run by every apply and backward). A saved output is kept as a
-- detached alias (the output itself would keep its own node alive) and, in a backward that
-- records, unpacked as a fresh head whose grad_fn is the node again (C.mt_node_output_alias).
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local class = require 'moontorch.class'
local dtype = require 'moontorch.dtype'

local C = core.C
local raise_last, fail = core.raise_last, core.fail
local is_tensor, wrap = T.is_tensor, T.wrap
local type, select, tonumber, rawget, rawset = type, select, tonumber, rawget, rawset

local M = {}
local torch, autograd, AG

local tensor_ptr = ffi.typeof('mt_tensor *')
local function addr(t) return tonumber(ffi.cast('intptr_t', ffi.cast(tensor_ptr, t))) end
local function pack(...) return { n = select('#', ...), ... } end

local function shape_str(sizes)
  local p = {}
  for i = 1, #sizes do p[i] = tostring(sizes[i]) end
  return '[' .. table.concat(p, ', ') .. ']'
end

------------------------------------------------------------------------------ anomaly mode
-- When on, every tensor that reaches Lua with a grad_fn not yet tagged gets the traceback of the
-- Lua code that made it, stored under its node's Lua id (T.wrap calls tag). The engine names the
-- node whose backward returned NaN ("[anomaly:<id>]" in its message); rewrite_error puts the
-- forward traceback in place of that mark.
local traces = {}
M._traces = traces -- (for the spec)
local src_prefix = debug.getinfo(1, 'S').source:gsub('function%.lua$', '')

local function traceback()
  -- start at the first frame outside moontorch's own Lua files
  local level = 3
  while true do
    local info = debug.getinfo(level, 'S')
    if not info then level = 3 break end
    local src = info.source
    if src:sub(1, #src_prefix) ~= src_prefix and src ~= '=[C]' then break end
    level = level + 1
  end
  return (debug.traceback('', level):gsub('^\n?stack traceback:\n', ''))
end

local function tag_node(n)
  if C.mt_node_anomaly_trace(n) ~= 0 then return end
  local id = tonumber(C.mt_node_lua_id(n))
  if id == 0 then
    id = AG.new_id()
    C.mt_node_set_lua_id(n, id)
  end
  traces[id] = traceback()
  C.mt_node_set_anomaly_trace(n, id)
end

local function tag(p)
  local n = C.mt_grad_fn(p)
  if n ~= nil then tag_node(n) end
end

local function set_detect_anomaly(on)
  on = on and true or false
  C.mt_set_detect_anomaly(on and 1 or 0)
  T.set_anomaly_hook(on and tag or nil)
end
local function is_anomaly_enabled() return C.mt_is_anomaly_enabled() ~= 0 end

local function trace_text(id)
  local tr = traces[id]
  if not tr then return '\n(no forward traceback was recorded: turn anomaly mode on before the forward pass)' end
  return '\nTraceback of forward call that caused the error:\n' .. tr
end

local function rewrite_error(err)
  if type(err) ~= 'string' then return err end
  local id = err:match('%[anomaly:(%d+)%]')
  if not id then return err end
  return (err:gsub(' ?%[anomaly:%d+%]', '', 1)) .. trace_text(tonumber(id))
end

-- anomaly check of a Lua node's results (the engine checks the C nodes)
local function check_nan(name, k, g, id)
  if g:is_floating_point() and g:isnan():any() then
    error(('moontorch.backward: Function \'%s\' returned nan values in its %dth output.%s'):format(name, k,
      trace_text(id)), 0)
  end
end

------------------------------------------------------------------------------ ctx
local Ctx = {}
local ctx_methods = {}

local function saved_tensors(ctx)
  local saved = rawget(ctx, '_saved')
  if not saved then
    if rawget(ctx, '_released') then
      fail('backward', 'Trying to backward through the graph a second time (or directly access saved tensors after ' ..
        'they have already been freed). Saved intermediate values of the graph are freed when you call ' ..
        '.backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a ' ..
        'second time or if you need to access saved tensors after calling backward.')
    end
    local ts = rawget(ctx, '_to_save') -- during forward: what was given
    return ts and { unpack(ts, 1, ts.n) } or {}
  end
  local r = {}
  local grad_on = C.mt_is_grad_enabled() ~= 0
  for i = 1, saved.n do
    local s = saved[i]
    if s then
      local t = s.t
      local v = tonumber(C.mt_tensor_version(t))
      if v ~= s.version then
        fail('backward', ('one of the variables needed for gradient computation has been modified by an inplace ' ..
          'operation: [%s %s], which is %s %s, is at version %d; expected version %d instead. Hint: the ' ..
          'backtrace further above can show the operation that failed to compute its gradient.'):format(
          dtype.tensor_type_names[t._dtype], shape_str(t:size()), s.nr and ('output ' .. s.nr .. ' of') or
          'an input of', rawget(ctx, '_name'), v, s.version))
      end
      local node = rawget(ctx, '_running')
      if s.nr and grad_on and node then
        -- an output of the node, kept detached (the output itself would keep the node alive),
        -- unpacked for a backward that records: a head that has the node as its grad_fn again
        if C.mt_node_output_alias(node, t, s.nr, T.outp) ~= 0 then raise_last() end
        t = T.take()
      end
      r[i] = t
    end
  end
  return r
end

Ctx.__index = function(ctx, k)
  local m = ctx_methods[k]
  if m ~= nil then return m end
  if k == 'saved_tensors' then return saved_tensors(ctx) end
  return nil
end

function ctx_methods.save_for_backward(ctx, ...)
  local n = select('#', ...)
  for i = 1, n do
    local t = select(i, ...)
    if t ~= nil and not is_tensor(t) then
      fail('save_for_backward', ('save_for_backward can only save tensors (or nil), but argument %d is a %s')
        :format(i, type(t)))
    end
  end
  rawset(ctx, '_to_save', pack(...))
end
local function mark(ctx, field, op, ...)
  local set = rawget(ctx, field) or {}
  for i = 1, select('#', ...) do
    local t = select(i, ...)
    if not is_tensor(t) then fail(op, 'expected tensors, argument ' .. i .. ' is a ' .. type(t)) end
    set[addr(t)] = true
  end
  rawset(ctx, field, set)
end
function ctx_methods.mark_dirty(ctx, ...) mark(ctx, '_dirty', 'mark_dirty', ...) end
function ctx_methods.mark_non_differentiable(ctx, ...) mark(ctx, '_nondiff', 'mark_non_differentiable', ...) end
function ctx_methods.set_materialize_grads(ctx, on)
  if on == nil then on = true end
  rawset(ctx, '_materialize', on and true or false)
end

------------------------------------------------------------------------------ Function
local states = {} -- node Lua id -> ctx (kept while the node lives)

local Function = class.class('torch.autograd.Function')

local function is_function_class(v)
  if type(v) ~= 'table' or rawget(v, '__typename') == nil then return false end
  local c = v
  while c do
    if c == Function then return true end
    c = rawget(c, '__parent')
  end
  return false
end

function Function.forward()
  error('moontorch.autograd.Function: you must implement the forward function for custom autograd.Function.', 2)
end
function Function.backward()
  error('moontorch.autograd.Function: you must implement either the backward or vjp method for your custom ' ..
    'autograd.Function to use it with backward mode AD.', 2)
end

local nodep = ffi.new('mt_node *[1]')

-- the result of a forward: an array of outputs and how it was returned
local function outputs_of(res)
  local n = res.n - 1
  if n == 1 and type(res[2]) == 'table' and not is_tensor(res[2]) then
    local arr = res[2]
    local outs = {}
    local m = table.maxn(arr)
    for i = 1, m do outs[i] = arr[i] end
    return outs, m, true
  end
  local outs = {}
  for i = 1, n do outs[i] = res[i + 1] end
  return outs, n, false
end

local function returned(outs, n, as_array)
  if as_array then return outs end
  return unpack(outs, 1, n)
end

local function alias(t)
  if C.mt_tensor_alias(t, T.outp) ~= 0 then raise_last() end
  return T.take()
end

local function apply(cls, ...)
  AG.drain() -- forget the state of Function nodes that died since
  -- (_backward_name: a library Function that stands for a PyTorch op prints that op's node name)
  local name = rawget(cls, '_backward_name') or (rawget(cls, '__typename') or 'Function'):match('([^.]+)$') .. 'Backward'
  local nargs = select('#', ...)
  local args = { ... }
  local grad_on = C.mt_is_grad_enabled() ~= 0
  local needs = {}
  local any = false
  for i = 1, nargs do
    local a = args[i]
    local need = grad_on and is_tensor(a) and C.mt_requires_grad(a) ~= 0
    needs[i] = need
    any = any or need
  end
  local ctx = setmetatable({ needs_input_grad = needs, _materialize = true, _name = name }, Ctx)

  C.mt_set_grad_enabled(0)
  local res = pack(pcall(cls.forward, ctx, ...))
  C.mt_set_grad_enabled(grad_on and 1 or 0)
  if not res[1] then error(res[2], 0) end
  local outs, nout, as_array = outputs_of(res)

  local dirty = rawget(ctx, '_dirty')
  if not any then
    rawset(ctx, '_to_save', nil)
    return returned(outs, nout, as_array)
  end

  -- the outputs the node gets: dirty inputs as they are, other inputs (and tensors that already
  -- belong to a graph) as fresh aliases, never integer tensors or those marked non-differentiable
  local nondiff = rawget(ctx, '_nondiff') or {}
  local inputs = {}
  local inarr = ffi.new('mt_tensor *[?]', nargs)
  for i = 1, nargs do
    if is_tensor(args[i]) then
      inarr[i - 1] = args[i]
      inputs[addr(args[i])] = true
    end
  end
  local outarr = ffi.new('mt_tensor *[?]', nout > 0 and nout or 1)
  local meta = {}    -- per output: { sizes, dtype } for materialized grads
  local attached = {} -- address -> output index (0-based)
  local seen = {}
  local dirty_seen = {}
  for k = 1, nout do
    local o = outs[k]
    if is_tensor(o) then
      local a = addr(o)
      if dirty and dirty[a] and not seen[a] then
        if not inputs[a] then fail('apply', name:sub(1, -9) .. ': mark_dirty was given a tensor that is not an input') end
        if C.mt_is_leaf(o) ~= 0 and C.mt_requires_grad(o) ~= 0 then
          fail('apply', 'a leaf Variable that requires grad is being used in an in-place operation.')
        end
        dirty_seen[a] = true
      elseif inputs[a] or seen[a] or C.mt_requires_grad(o) ~= 0 then
        o = alias(o)
        outs[k] = o
      end
      seen[a] = true
      meta[k] = { o:size(), o.dtype }
      if not nondiff[a] and o:is_floating_point() then
        outarr[k - 1] = o
        attached[addr(o)] = k - 1
      end
    end
  end
  if dirty then
    for a in pairs(dirty) do
      if not dirty_seen[a] then
        fail('apply', 'Some elements marked as dirty during the forward method were not returned as output. The ' ..
          'inputs that are modified inplace must all be outputs of the Function.')
      end
    end
  end

  local id = AG.new_id()
  if C.mt_node_new_lua(name, inarr, nargs, outarr, nout, id, nodep) ~= 0 then raise_last() end
  local node = nodep[0]

  -- saved tensors: versions as they are now; outputs kept without their grad_fn
  local to_save = rawget(ctx, '_to_save')
  if to_save then
    local saved = { n = to_save.n }
    for i = 1, to_save.n do
      local t = to_save[i]
      if t == nil then
        saved[i] = false
      else
        local nr = attached[addr(t)]
        local s = { t = t, version = tonumber(C.mt_tensor_version(t)) }
        if nr then
          s.nr = nr
          s.t = alias(t)
        end
        saved[i] = s
      end
    end
    rawset(ctx, '_saved', saved)
    rawset(ctx, '_to_save', nil)
  end
  rawset(ctx, '_cls', cls)
  rawset(ctx, '_nargs', nargs)
  rawset(ctx, '_nout', nout)
  rawset(ctx, '_meta', meta)
  local in_meta, is_arg_tensor = {}, {}
  for i = 1, nargs do
    local a = args[i]
    if is_tensor(a) then
      is_arg_tensor[i] = true
      if needs[i] then in_meta[i] = { a:size(), a.dtype } end
    end
  end
  rawset(ctx, '_in_meta', in_meta)
  rawset(ctx, '_is_arg_tensor', is_arg_tensor)
  states[id] = ctx
  if C.mt_is_anomaly_enabled() ~= 0 then tag_node(node) end
  C.mt_node_release(node) -- the outputs hold it (with none, it dies here and drain forgets ctx)
  return returned(outs, nout, as_array)
end

-- the gradient g for an input of sizes/dtype `m`: summed down where it was broadcast
local function fit_grad(name, i, g, m)
  local sizes, dt = m[1], m[2]
  local gs = g:size()
  local same = #gs == #sizes
  if same then for d = 1, #gs do if gs[d] ~= sizes[d] then same = false break end end end
  if not same then
    -- expandable: sizes right-aligned against gs, each 1 or equal
    local ok = #sizes <= #gs
    local lead = #gs - #sizes
    for d = 1, #sizes do
      if ok and sizes[d] ~= 1 and sizes[d] ~= gs[d + lead] then ok = false end
    end
    if not ok then
      fail('backward', ('Function %s returned an invalid gradient at index %d - got %s but expected shape ' ..
        'compatible with %s'):format(name, i - 1, shape_str(gs), shape_str(sizes)))
    end
    local dims = {}
    for d = 1, #gs do
      if d <= lead or (sizes[d - lead] == 1 and gs[d] ~= 1) then dims[#dims + 1] = d end
    end
    if #dims > 0 then g = g:sum(dims, { keepdim = true }) end
    g = g:reshape(sizes)
  end
  if g.dtype ~= dt then g = g:to(dt) end
  return g
end

local function lua_backward(e, ev, create, retain)
  local node = ev.node
  local id = tonumber(C.mt_node_lua_id(node))
  local ctx = states[id]
  if not ctx then fail('backward', 'the state of ' .. ffi.string(C.mt_node_name(node)) .. ' was lost') end
  local name = rawget(ctx, '_name')
  local cls, nargs, meta = rawget(ctx, '_cls'), rawget(ctx, '_nargs'), rawget(ctx, '_meta')
  local nout = ev.count
  local materialize = rawget(ctx, '_materialize')
  local grads = {}
  for i = 0, nout - 1 do
    local g = ev.grads[i]
    if g ~= nil then
      grads[i + 1] = wrap(C.mt_tensor_retain(g))
    elseif materialize and meta[i + 1] then
      local m = meta[i + 1]
      grads[i + 1] = torch.zeros(m[1], { dtype = m[2] })
    end
  end

  local prev = C.mt_is_grad_enabled()
  C.mt_set_grad_enabled(create and 1 or 0)
  rawset(ctx, '_running', node)
  local res = pack(pcall(cls.backward, ctx, unpack(grads, 1, nout)))
  rawset(ctx, '_running', nil)
  C.mt_set_grad_enabled(prev)
  if not retain then
    rawset(ctx, '_saved', nil)
    rawset(ctx, '_released', true)
  end
  if not res[1] then error(res[2], 0) end

  local n = res.n - 1
  local r = res
  local base = 1
  if n == 1 and type(res[2]) == 'table' and not is_tensor(res[2]) then
    r, base, n = res[2], 0, table.maxn(res[2])
  end
  if n > nargs then -- extra nils are allowed (as in PyTorch)
    for i = nargs + 1, n do if r[i + base] ~= nil then n = -n break end end
    if n > 0 then n = nargs else n = -n end
  end
  if n ~= nargs then
    fail('backward', ('function %s returned an incorrect number of gradients (expected %d, got %d)')
      :format(name, nargs, n))
  end
  local is_arg_tensor, in_meta = rawget(ctx, '_is_arg_tensor'), rawget(ctx, '_in_meta')
  local anomaly = C.mt_is_anomaly_enabled() ~= 0
  local keep = {}
  local arr = ffi.new('mt_tensor *[?]', nargs)
  for i = 1, nargs do
    local g = r[i + base]
    if g ~= nil then
      if not is_tensor(g) then
        fail('backward', ('function %s returned a gradient that is not a tensor or nil at position %d (a %s)')
          :format(name, i, type(g)))
      end
      if not is_arg_tensor[i] then
        fail('backward', ('function %s returned a gradient different than nil at position %d, but the ' ..
          'corresponding forward input was not a Tensor'):format(name, i))
      end
      local m = in_meta[i]
      if m then
        g = fit_grad(name, i, g, m)
        if anomaly then check_nan(name, i - 1, g, tonumber(C.mt_node_anomaly_trace(node))) end
        keep[i] = g
        arr[i - 1] = g
      end
    end
  end
  if C.mt_engine_set_input_grads(e, arr, nargs) ~= 0 then raise_last() end
end

Function.__new = function(cls, name, parent)
  if cls ~= Function then
    fail('autograd.Function', ('%s is a Function: call %s.apply(...) instead of instantiating it')
      :format(tostring(cls), tostring(cls)))
  end
  if type(name) ~= 'string' then fail('autograd.Function', 'expected a class name, as in torch.autograd.Function(\'Exp\')') end
  if parent ~= nil and not is_function_class(parent) then
    fail('autograd.Function', 'the parent of a Function must be a Function class')
  end
  local cls_new = class.class(name, parent or Function)
  cls_new.apply = function(first, ...)
    if is_function_class(first) then return apply(first, ...) end
    return apply(cls_new, first, ...)
  end
  return cls_new
end

-- Cls:apply(...) for classes made with torch.class
function Function.apply(first, ...)
  if is_function_class(first) then return apply(first, ...) end
  fail('apply', 'call Cls:apply(...) on a class made with torch.class, or make it with ' ..
    'torch.autograd.Function(name) to call Cls.apply(...)')
end

function M.install(t, ag, agm)
  torch, autograd, AG = t, ag, agm
  AG.per_id(states)
  AG.per_id(traces)
  AG.set_lua_backward(lua_backward)
  AG.rewrite_error = rewrite_error
  autograd.Function = Function
  autograd.set_detect_anomaly = set_detect_anomaly
  autograd.is_anomaly_enabled = is_anomaly_enabled
  -- detect_anomaly(fn): fn wrapped to run with anomaly mode on (as no_grad wraps)
  autograd.detect_anomaly = function(fn)
    if type(fn) ~= 'function' then fail('detect_anomaly', 'expected a function to wrap') end
    return function(...)
      local prev = is_anomaly_enabled()
      set_detect_anomaly(true)
      local r = pack(pcall(fn, ...))
      set_detect_anomaly(prev)
      if not r[1] then error(r[2], 0) end
      return unpack(r, 2, r.n)
    end
  end
end

return M
