-- moontorch.fx's symbolic tracing (PyTorch's torch.fx.Tracer / Proxy): a module's forward (or a
-- function) runs once on Proxy values instead of tensors, and every op done to them becomes a
-- node of a Graph:
--   * the functions of torch, torch.nn.functional, torch.linalg, torch.special and torch.sparse
--     called with a proxy among their arguments: call_function (the observation point,
--     lua/observe.lua, puts the recording wrappers in while tracing, and takes them out after);
--   * a method called on a proxy (x:relu(), x:view(...)), or a Tensor method called on a tensor with
--     a proxy argument: call_method;
--   * + - * / % ^ and unary minus on proxies: call_function of the operators (fx.operator.add, ...);
--     indexing a proxy (p[1]) or reading a field (p.shape): getitem / getattr;
--   * a call of a leaf module (a built-in nn layer, not a container): call_module, whose target is
--     the module's path from the root; other modules are traced through;
--   * a parameter, buffer or other tensor the forward reads: get_attr (a tensor that is not the
--     root's becomes a constant of the GraphModule, `_tensor_constant0`, ...).
-- Data-dependent control flow cannot be traced: comparing a proxy, using it as a Lua number (a
-- loop bound, an index of a Lua table) or asking a yes/no question of it (torch.equal, t:any())
-- is an error naming the line; fx.trace{..., concrete_args=} fixes such inputs to values.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local G = require 'moontorch.fx.graph'
local observe = require 'moontorch.observe'
local Mod = require 'moontorch.nn.Module'

local fail = core.fail
local is_tensor, is_module = T.is_tensor, Mod.is_module
-- a method read through an instance may be a checking front of the function (lua/dotcall.lua):
-- the function itself, for its parameters and its declared signature
local unwrap = core.unwrap or function(f) return f end
local operators, is_node, is_plain = G.operators, G.is_node, G.is_plain

local M = {}

------------------------------------------------------------------------------ the trace error
local TRACE_ERROR = 'symbolically traced variables cannot be used as inputs to control flow'
M.TRACE_ERROR = TRACE_ERROR
-- the user's file:line (the first frame outside moontorch's files)
local function user_where()
  for level = 3, 40 do
    local info = debug.getinfo(level, 'Sl')
    if not info then break end
    local src = info.source or ''
    if not src:find('moontorch', 1, true) and not src:find('/lua/fx/', 1, true) and src:sub(1, 1) == '@'
      and info.currentline and info.currentline > 0 then
      return src:sub(2) .. ':' .. info.currentline
    end
  end
  return nil
end
local function trace_error(what)
  local where = user_where()
  error(('moontorch.fx: %s (%s%s)'):format(TRACE_ERROR, what, where and (' at ' .. where) or ''), 0)
end

------------------------------------------------------------------------------ Proxy
local Proxy = {}
M.Proxy = Proxy
local function is_proxy(x) return type(x) == 'table' and getmetatable(x) == Proxy end
M.is_proxy = is_proxy

local function new_proxy(node, tracer) return setmetatable({ node = node, tracer = tracer }, Proxy) end

local function any_proxy(v, depth)
  if is_proxy(v) then return true end
  if type(v) == 'table' and getmetatable(v) == nil and (depth or 0) < 4 then
    for _, x in pairs(v) do if any_proxy(x, (depth or 0) + 1) then return true end end
  end
  return false
end
local function has_proxy(n, ...)
  for i = 1, n do
    if any_proxy((select(i, ...))) then return true end
  end
  return false
end

-- the tracer of the first proxy among the arguments
local function tracer_of(v, depth)
  if is_proxy(v) then return v.tracer end
  if type(v) == 'table' and getmetatable(v) == nil and (depth or 0) < 4 then
    for _, x in pairs(v) do
      local t = tracer_of(x, (depth or 0) + 1)
      if t then return t end
    end
  end
  return nil
end
local function find_tracer(n, ...)
  for i = 1, n do
    local t = tracer_of((select(i, ...)))
    if t then return t end
  end
end

-- the tracer running now (nil when none): a root's parameter used in an op is traced too
local active

-- a root parameter or buffer among the arguments (PyTorch reads them through proxies)
local function has_root_tensor(n, ...)
  if not active then return false end
  local paths = active.tensor_paths
  for i = 1, n do
    local v = select(i, ...)
    if is_tensor(v) and paths[v] then return true end
    if type(v) == 'table' and getmetatable(v) == nil then
      for _, x in pairs(v) do if is_tensor(x) and paths[x] then return true end end
    end
  end
  return false
end

-- a call's arguments as { n = , ... } and, apart, its trailing options table (PyTorch's keyword
-- arguments: a plain table with no array part), looked for after the first `min` arguments
local function call_args(min, ...)
  local a = { n = select('#', ...), ... }
  local last = a[a.n]
  if a.n > min and is_plain(last) and last[1] == nil and next(last) ~= nil then
    a[a.n], a.n = nil, a.n - 1
    return a, last
  end
  return a, nil
end

-- the ops whose results are several Lua values, and how many (given the call's arguments): their
-- node's value is the array of them, read back by getitem nodes
local function dim_given(args) return args.n >= 2 and type(args[2]) ~= 'table' or (type(args[2]) == 'table' and args[2].dim ~= nil) end
local multi_methods = {
  max = function(a) return dim_given(a) and 2 or 1 end, min = function(a) return dim_given(a) and 2 or 1 end,
  sort = 2, topk = 2, kthvalue = 2, mode = 2, cummax = 2, cummin = 2, var_mean = 2, std_mean = 2, aminmax = 2,
  median = function(a) return dim_given(a) and 2 or 1 end, slogdet = 2, lstm_layer = 2, frexp = 2,
}
local function result_count(name, args)
  local r = multi_methods[name]
  if type(r) == 'function' then return r(args) end
  return r or 1
end
M.result_count = result_count

-- modules whose call returns two values
local function module_results(m)
  local nn = torch.nn
  for _, c in ipairs({ nn.LSTM, nn.GRU, nn.RNN, nn.MultiheadAttention }) do
    if c and getmetatable(m) == c then return 2 end
  end
  if rawget(m, '_attrs') and rawget(m, '_attrs').return_indices then return 2 end
  return 1
end

-- the value of a new node: a proxy, or k proxies of its results
local function proxy_results(tracer, node, k)
  if k <= 1 then return new_proxy(node, tracer) end
  node.multi = true
  local res = {}
  for i = 1, k do
    res[i] = new_proxy(tracer.graph:call_function(operators.getitem, { n = 2, node, i }), tracer)
  end
  return unpack(res, 1, k)
end

-- the questions whose answer is a Lua value that control flow reads
local control_methods = { any = true, all = true, equal = true, allclose = true, is_nonzero = true,
  tolist = true, is_same_size = true, is_contiguous = true }

Proxy.__index = function(p, k)
  if type(k) == 'number' or is_proxy(k) or is_tensor(k) or type(k) == 'table' then
    local t = p.tracer
    return new_proxy(t:create_node('call_function', operators.getitem, { n = 2, p, k }), t)
  end
  if control_methods[k] then
    return function() trace_error(('%s() of a traced value'):format(k)) end
  end
  -- fields a tensor has: a getattr node
  if k == 'shape' or k == 'dtype' or k == 'device' or k == 'T' or k == 'mT' or k == 'ndim' or k == 'is_meta'
    or k == 'requires_grad' or k == 'is_leaf' or k == 'grad' or k == 'data' or k == 'layout' then
    local t = p.tracer
    return new_proxy(t:create_node('call_function', operators.getattr, { n = 2, p, k }), t)
  end
  -- a method: x:name(...)
  return function(self, ...)
    local t = p.tracer
    local args, kw = call_args(1, self, ...)
    local node = t:create_node('call_method', k, args, kw)
    return proxy_results(t, node, result_count(k, args))
  end
end
Proxy.__newindex = function() trace_error('assignment into a traced value') end

local function binop(name)
  return function(a, b)
    local t = (is_proxy(a) and a or b).tracer
    return new_proxy(t:create_node('call_function', operators[name], { n = 2, a, b }), t)
  end
end
Proxy.__add, Proxy.__sub, Proxy.__mul = binop('add'), binop('sub'), binop('mul')
Proxy.__div, Proxy.__mod, Proxy.__pow = binop('truediv'), binop('mod'), binop('pow')
Proxy.__unm = function(a) return new_proxy(a.tracer:create_node('call_function', operators.neg, { n = 1, a }), a.tracer) end
Proxy.__lt = function() trace_error('a comparison of a traced value') end
Proxy.__le = Proxy.__lt
Proxy.__eq = function(a, b) return rawequal(a, b) end
Proxy.__concat = function() trace_error('a traced value in a string') end
Proxy.__call = function() trace_error('a call of a traced value') end
Proxy.__tostring = function(p) return 'Proxy(' .. p.node.name .. ')' end
-- a tensor op with a proxy on its other side (tensor + proxy): the tensor's metamethod asks the
-- proxy's metatable (lua/ops/elementwise.lua's binary)
local binary_names = { add = 'add', sub = 'sub', mul = 'mul', div = 'truediv', remainder = 'mod', pow = 'pow' }
Proxy.__moontorch_binary = function(name, a, b)
  local o = binary_names[name]
  if not o then return nil end
  return binop(o)(a, b)
end

------------------------------------------------------------------------------ Tracer
local Tracer = class.class('fx.Tracer')
M.Tracer = Tracer

-- Tracer{autowrap_functions=, leaf_modules=} (leaf_modules: extra classes to keep as leaves)
function Tracer:__init(opts)
  self.leaf_classes = {}
  for _, c in ipairs(opts and opts.leaf_modules or {}) do self.leaf_classes[c] = true end
  self.autowrap = {}
  for _, f in ipairs(opts and opts.autowrap_functions or {}) do self.autowrap[f] = true end
end

local containers
local function is_container(m)
  local nn = torch.nn
  containers = containers or { [nn.Sequential] = true, [nn.ModuleList] = true, [nn.ModuleDict] = true }
  return containers[getmetatable(m)] == true
end

-- the classes of moontorch.nn (a built-in layer is a leaf; a subclass of one is not)
local builtin
local function is_builtin(m)
  if not builtin then
    builtin = {}
    for _, v in pairs(torch.nn) do
      if type(v) == 'table' and rawget(v, '__typename') then builtin[v] = true end
    end
  end
  return builtin[getmetatable(m)] == true
end

-- is_leaf_module(m, qualified_name): PyTorch's rule: the layers of nn (not the containers) are leaves
function Tracer:is_leaf_module(m, _)
  if self.leaf_classes[getmetatable(m)] then return true end
  return is_builtin(m) and not is_container(m)
end

function Tracer:path_of_module(m)
  local p = self.module_paths[m]
  if p == nil then
    fail('fx.symbolic_trace', ('module is not installed as a submodule: %s'):format(m:_get_name()))
  end
  return p
end

-- create_arg(v): a node argument of a Lua value (proxies to their nodes, tensors to get_attr nodes)
function Tracer:create_arg(v)
  if is_proxy(v) then return v.node end
  if is_tensor(v) then
    local name = self.tensor_paths[v]
    if not name then
      local nodes = self.tensor_nodes
      if nodes[v] then return nodes[v] end
      local i = 0
      repeat
        name = '_tensor_constant' .. i
        i = i + 1
      until self.constant_names[name] == nil
      self.constant_names[name] = v
      self.tensor_constants[#self.tensor_constants + 1] = { name, v }
    end
    local cached = self.tensor_nodes[v]
    if cached then return cached end
    local n = self.graph:get_attr(name)
    self.tensor_nodes[v] = n
    return n
  end
  if type(v) == 'table' and getmetatable(v) == nil then
    local r = {}
    for k, x in pairs(v) do r[k] = self:create_arg(x) end
    return r
  end
  if is_module(v) then
    fail('fx.symbolic_trace', 'a module passed as an argument cannot be traced')
  end
  return v
end

function Tracer:create_node(op, target, args, kwargs)
  local a = { n = args.n or #args }
  for i = 1, a.n do a[i] = self:create_arg(args[i]) end
  local kw = kwargs and self:create_arg(kwargs) or nil
  return self.graph:create_node(op, target, a, kw)
end

-- create_proxy(op, target, args, kwargs): a node and its proxy
function Tracer:create_proxy(op, target, args, kwargs)
  return new_proxy(self:create_node(op, target, args, kwargs), self)
end

-- call_module(m, forward, args): a leaf's node, or the forward traced through
function Tracer:call_module(m, forward, ...)
  local path = self:path_of_module(m)
  if not self:is_leaf_module(m, path) then return forward(m, ...) end
  local args, kw = call_args(0, ...)
  local node = self:create_node('call_module', path, args, kw)
  return proxy_results(self, node, module_results(m))
end

-- the parameter names of fn after `skip` of them (self): from its definition
local function param_names(fn, skip)
  local info = debug.getinfo(fn, 'u')
  local names = {}
  for i = skip + 1, info.nparams do names[#names + 1] = debug.getlocal(fn, i) end
  return names, info.isvararg
end

-- errors the Lua VM raises where a proxy met control flow, said as the trace error
local vm_errors = { "attempt to compare", "'for' initial value must be a number", "'for' limit must be a number",
  "'for' step must be a number", "attempt to perform arithmetic", "attempt to concatenate", "attempt to index",
  "table index is NaN", "number expected, got table", "attempt to call a table value" }
local function translate(err)
  if type(err) ~= 'string' or err:find(TRACE_ERROR, 1, true) then return err end
  for _, pat in ipairs(vm_errors) do
    if err:find(pat, 1, true) and err:find('table', 1, true) then
      local where, what = err:match('^([^:]+:%d+): (.*)$')
      return ('moontorch.fx: %s (%s%s)'):format(TRACE_ERROR, what or err, where and (' at ' .. where) or '')
    end
  end
  return err
end
M.translate = translate

-- trace(root, concrete_args) -> Graph: root a module or a function; concrete_args a table of
-- parameter name -> value used instead of a placeholder's proxy (a placeholder with that default
-- stays, unused)
function Tracer:trace(root, concrete_args)
  local graph = G.Graph()
  self.graph = graph
  self.root = root
  self.module_paths, self.tensor_paths, self.tensor_nodes = {}, {}, {}
  self.tensor_constants, self.constant_names = {}, {}
  local fn, skip
  if is_module(root) then
    for name, m in root:named_modules() do self.module_paths[m] = name end
    for name, p in root:named_parameters() do self.tensor_paths[p] = name end
    for name, b in root:named_buffers() do self.tensor_paths[b] = name end
    fn, skip = unwrap(root.forward), 1
  elseif type(root) == 'function' then
    fn, skip = root, 0
  else
    fail('fx.symbolic_trace', ('expected a module or a function to trace, got %s'):format(Mod.typename_of(root)))
  end
  local names, vararg = param_names(fn, skip)
  local optional = {}
  if skip == 1 and rawget(root, '_fwd') ~= nil and root.graph then
    -- a GraphModule: the placeholders of its graph
    names, vararg = {}, false
    for _, n in ipairs(root.graph:nodes()) do if n.op == 'placeholder' then names[#names + 1] = n.target end end
  end
  if vararg and skip == 1 and Mod.forward_names(fn) then
    -- a built-in forward: its declared parameters; the optional ones traced as absent (nil), and
    -- the code made checks that they are
    local nreq
    names, nreq = Mod.forward_names(fn)
    vararg = false
    for i = nreq + 1, #names do optional[names[i]] = true end
  end
  if vararg then
    fail('fx.symbolic_trace', "a forward taking varargs (...) cannot be traced: name its parameters")
  end
  concrete_args = concrete_args or {}
  for k in pairs(concrete_args) do
    local found = false
    for _, n in ipairs(names) do if n == k then found = true end end
    if not found then fail('fx.symbolic_trace', ("concrete_args names '%s', which is not a parameter of forward"):format(tostring(k))) end
  end
  local args = { n = #names }
  for i, name in ipairs(names) do
    local cv = concrete_args[name]
    if cv ~= nil or (optional[name] and not concrete_args[name]) then
      local p = graph:placeholder(name, cv)
      p.meta.concrete = true
      args[i] = cv
    else
      args[i] = new_proxy(graph:placeholder(name), self)
    end
  end
  -- while tracing: op functions record calls with proxies, module calls go through call_module
  local tracer = self
  -- a call of op function or method f (named short) that records a node when traced values are among
  -- its arguments
  local function recording(op, f, short)
    local target = op == 'call_method' and short or f
    return function(...)
      local n = select('#', ...)
      if n == 0 or not (has_proxy(n, ...) or has_root_tensor(n, ...)) then return f(...) end
      if control_methods[short] then trace_error(('%s() of a traced value'):format(short)) end
      local t = find_tracer(n, ...) or tracer
      local a, kw = call_args(1, ...)
      return proxy_results(t, t:create_node(op, target, a, kw), result_count(short, a))
    end
  end
  local handle = observe.install(function(_, f, kind, short)
    if kind == 'operator' then return f end -- (a proxy operand answers operators itself)
    return recording(kind == 'method' and 'call_method' or 'call_function', f, short)
  end)
  local prev_interceptor = Mod.call_interceptor
  Mod.call_interceptor = function(m, ...)
    if not self.module_paths[m] then
      -- a module made inside forward: run it (it must not see proxies)
      if has_proxy(select('#', ...), ...) then self:path_of_module(m) end
      return unwrap(m.forward)(m, ...)
    end
    return self:call_module(m, unwrap(m.forward), ...)
  end
  local global = Mod.register_global('forward_pre', function() end, nil, 'fx.symbolic_trace')
  local prev_active = active
  active = self
  local res = { n = 0 }
  local ok, err = xpcall(function()
    local r = skip == 1 and { fn(root, unpack(args, 1, args.n)) } or { fn(unpack(args, 1, args.n)) }
    res = { n = table.maxn(r) }
    for i = 1, res.n do res[i] = r[i] end
  end, function(e) return translate(e) end)
  global:remove()
  active = prev_active
  Mod.call_interceptor = prev_interceptor
  handle:remove()
  if not ok then error(err, 0) end
  local out = { n = res.n }
  for i = 1, res.n do out[i] = self:create_arg(res[i]) end
  graph:output(unpack(out, 1, out.n))
  return graph
end

-- fx.symbolic_trace(root, concrete_args) -> GraphModule
function M.symbolic_trace(root, concrete_args, tracer)
  tracer = tracer or Tracer()
  local graph = tracer:trace(root, concrete_args)
  local GM = require('moontorch.fx.graph_module')
  local name = is_module(root) and root:_get_name() or 'GraphModule'
  local gm = GM.GraphModule(is_module(root) and root or torch.nn.Module(), graph, name, tracer.tensor_constants)
  return gm
end

-- fx.wrap(fn, name) -> a function to call instead of fn: outside tracing it is fn; while tracing,
-- a call with traced values becomes one call_function node of fn (a leaf: its inside is not
-- traced). name (letters, digits, _ and .) is how graphs print and save it.
function M.wrap(fn, name)
  if type(fn) ~= 'function' then fail('fx.wrap', 'expected a function') end
  if type(name) ~= 'string' or not name:match('^[%a_][%w_.]*$') then
    fail('fx.wrap', 'expected a name for the function (letters, digits, _ and .)')
  end
  G.register_wrapped(fn, name)
  return function(...)
    local n = select('#', ...)
    if n == 0 or not active or not (has_proxy(n, ...) or has_root_tensor(n, ...)) then return fn(...) end
    local t = find_tracer(n, ...) or active
    local a, kw = call_args(1, ...)
    return new_proxy(t:create_node('call_function', fn, a, kw), t)
  end
end

M.new_proxy = new_proxy
return M
