-- moontorch.fx.Interpreter and Transformer (PyTorch's torch.fx.Interpreter / Transformer): run a
-- GraphModule node by node, each op through a method a subclass may replace (run_node,
-- placeholder, get_attr, call_function, call_method, call_module, output); a Transformer runs
-- them to build a new graph instead, and gives a new GraphModule.
--
--   local Double, Interpreter = torch.class('Double', fx.Interpreter)
--   function Double:call_function(target, args, kwargs)
--     local r = Interpreter.call_function(self, target, args, kwargs)
--     return r * 2
--   end
--   Double(gm):run(x)
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local G = require 'moontorch.fx.graph'
local GM = require 'moontorch.fx.graph_module'
local Mod = require 'moontorch.nn.Module'

local fail = core.fail
local map_arg, is_node = G.map_arg, G.is_node

local M = {}

local Interpreter = class.class('fx.Interpreter')
M.Interpreter = Interpreter

-- Interpreter(module, {garbage_collect_values=true}): module a GraphModule (or a module and a
-- graph: Interpreter(module, {graph=g}))
function Interpreter:__init(module, opts)
  if not Mod.is_module(module) then fail('fx.Interpreter', 'expected a module') end
  self.module = module
  self.graph = opts and opts.graph or module.graph
  if not self.graph then fail('fx.Interpreter', 'the module has no graph: pass {graph=g}') end
  self.garbage_collect_values = not (opts and opts.garbage_collect_values == false)
  self.env = {}
end

local function call(f, args, kwargs)
  local n = args.n or #args
  if kwargs then
    local a = { n = n + 1 }
    for i = 1, n do a[i] = args[i] end
    a[n + 1] = kwargs
    return f(unpack(a, 1, n + 1))
  end
  return f(unpack(args, 1, n))
end
M.call = call

local function pack(...) return { n = select('#', ...), ... } end
local NIL = setmetatable({}, { __tostring = function() return 'nil' end }) -- a node whose value is nil

-- run(...): the graph's outputs for these inputs (several values for several); an initial_env
-- table {node -> value} may be given as self.initial_env before
function Interpreter:run(...)
  self.env = {}
  if self.initial_env then for k, v in pairs(self.initial_env) do self.env[k] = v end end
  self.args_iter = { n = select('#', ...), ... }
  self.args_pos = 0
  local nodes = self.graph:nodes()
  -- the last user of each node, for dropping values no longer needed
  local last = {}
  if self.garbage_collect_values then
    for i, n in ipairs(nodes) do
      for _, x in ipairs(n:all_input_nodes()) do last[x] = i end
    end
  end
  for i, n in ipairs(nodes) do
    if self.env[n] == nil then
      local ok, r = pcall(function() return pack(self:run_node(n)) end)
      if not ok then
        if type(r) == 'string' and not r:find('While executing', 1, true) then
          r = r .. ('\nWhile executing %s'):format(n:format_node())
        end
        error(r, 0)
      end
      if n.op == 'output' then
        return unpack(r, 1, r.n)
      end
      self.env[n] = n.multi and r[1] or (r.n > 1 and r or r[1])
      if self.env[n] == nil then self.env[n] = NIL end
    end
    if self.garbage_collect_values then
      for _, x in ipairs(n:all_input_nodes()) do
        if last[x] == i then self.env[x] = nil end
      end
    end
  end
end

-- run_node(n): the node's value (what its op's method returns)
function Interpreter:run_node(n)
  local args, kwargs = self:fetch_args_kwargs_from_env(n)
  local f = self[n.op]
  if n.multi and n.op ~= 'placeholder' and n.op ~= 'get_attr' and n.op ~= 'output' then
    return pack(f(self, n.target, args, kwargs))
  end
  return f(self, n.target, args, kwargs)
end

function Interpreter:fetch_args_kwargs_from_env(n)
  local args = self:map_nodes_to_values(n.args, n)
  local kwargs = n.kwargs and self:map_nodes_to_values(n.kwargs, n) or nil
  return args, kwargs
end

function Interpreter:map_nodes_to_values(a, n)
  return map_arg(a, function(x)
    local v = self.env[x]
    if v == nil then
      fail('fx.Interpreter', ('Node %s referenced nonexistent value %s! Run Graph.lint() to diagnose such issues')
        :format(n.name, x.name))
    end
    if v == NIL then return nil end
    return v
  end)
end

function Interpreter:placeholder(target, args)
  self.args_pos = self.args_pos + 1
  local i = self.args_pos
  if i <= self.args_iter.n and self.args_iter[i] ~= nil then return self.args_iter[i] end
  if args.n and args.n > 0 then return args[1] end -- the default (concrete_args)
  if i > self.args_iter.n then
    fail('fx.Interpreter', ('Expected positional argument for parameter %s, but one was not passed in!'):format(target))
  end
  return nil
end

function Interpreter:fetch_attr(target)
  local v = GM.fetch(self.module, target)
  if v == nil then fail('fx.Interpreter', ("Node referenced nonexistent target %s"):format(target)) end
  return v
end
function Interpreter:get_attr(target) return self:fetch_attr(target) end
function Interpreter:call_function(target, args, kwargs) return call(target, args, kwargs) end
function Interpreter:call_method(target, args, kwargs)
  local obj = args[1]
  local a = { n = (args.n or #args) - 1 }
  for i = 2, args.n or #args do a[i - 1] = args[i] end
  local f = obj[target]
  if f == nil then fail('fx.Interpreter', ("the value has no method '%s'"):format(tostring(target))) end
  local b = { n = a.n + 1, obj }
  for i = 1, a.n do b[i + 1] = a[i] end
  return call(f, b, kwargs)
end
function Interpreter:call_module(target, args, kwargs)
  local m = self:fetch_attr(target)
  return call(m, args, kwargs)
end
function Interpreter:output(_, args) return unpack(args, 1, args.n or #args) end

------------------------------------------------------------------------------ Transformer
local Transformer = class.class('fx.Transformer', Interpreter)
M.Transformer = Transformer

-- Transformer(module): its methods make nodes of a new graph (through proxies) instead of running
function Transformer:__init(module)
  Interpreter.__init(self, module)
  self.new_graph = G.Graph()
  local Tr = require 'moontorch.fx.tracer'
  local tracer = Tr.Tracer()
  tracer.graph = self.new_graph
  tracer.module_paths, tracer.tensor_paths, tracer.tensor_nodes = {}, {}, {}
  tracer.tensor_constants, tracer.constant_names = {}, {}
  for name, p in module:named_parameters() do tracer.tensor_paths[p] = name end
  for name, b in module:named_buffers() do tracer.tensor_paths[b] = name end
  self.tracer = tracer
end

local function proxy(self, node) return require('moontorch.fx.tracer').new_proxy(node, self.tracer) end

function Transformer:placeholder(target, args)
  self.args_pos = self.args_pos + 1
  local default = args.n and args.n > 0 and args[1] or nil
  return proxy(self, self.new_graph:placeholder(target, default))
end
function Transformer:get_attr(target) return proxy(self, self.new_graph:get_attr(target)) end
function Transformer:call_function(target, args, kwargs)
  return self.tracer:create_proxy('call_function', target, args, kwargs)
end
function Transformer:call_method(target, args, kwargs)
  return self.tracer:create_proxy('call_method', target, args, kwargs)
end
function Transformer:call_module(target, args, kwargs)
  return self.tracer:create_proxy('call_module', target, args, kwargs)
end
function Transformer:run_node(n)
  local r = pack(Interpreter.run_node(self, n))
  -- keep the multi flag of nodes copied as they were
  if n.multi and r[1] and r.n == 1 and type(r[1]) == 'table' and r[1].node then r[1].node.multi = true end
  if n.multi and r.n == 1 and type(r[1]) == 'table' and r[1].n then
    local p = r[1][1]
    if p and p.node then p.node.multi = true end
  end
  return unpack(r, 1, r.n)
end

-- transform() -> GraphModule: the new graph, over the old module's objects
function Transformer:transform()
  local nodes = self.graph:nodes()
  self.env = {}
  self.args_pos = 0
  local outs
  for _, n in ipairs(nodes) do
    local args, kwargs = self:fetch_args_kwargs_from_env(n)
    if n.op == 'output' then
      outs = args
    else
      local v
      if n.op == 'placeholder' then v = self:placeholder(n.target, args, kwargs)
      elseif n.op == 'get_attr' then v = self:get_attr(n.target, args, kwargs)
      else
        v = self[n.op](self, n.target, args, kwargs)
        if n.multi and type(v) == 'table' and v.node then v.node.multi = true end
      end
      self.env[n] = v
    end
  end
  local out = { n = outs.n or #outs }
  for i = 1, out.n do out[i] = self.tracer:create_arg(outs[i]) end
  self.new_graph:output(unpack(out, 1, out.n))
  return GM.GraphModule(self.module, self.new_graph, self.module:_get_name(), self.tracer.tensor_constants)
end

return M
