-- moontorch.fx.GraphModule (PyTorch's torch.fx.GraphModule): an nn.Module made from a Graph. It
-- holds the submodules, parameters and buffers the graph's call_module and get_attr nodes name
-- (the root's own objects, at the same paths), and its forward is the Lua source the graph
-- generates (gm.code), compiled by LuaJIT (gm:recompile() after the graph changed). It is a real
-- module: state_dict, to(), train()/eval(), hooks; torch.save / torch.load keep it (the graph is
-- saved as data, the code made again), and torch.deepcopy copies it.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local Mod = require 'moontorch.nn.Module'
local G = require 'moontorch.fx.graph'

local fail = core.fail
local is_tensor, is_module, is_parameter = T.is_tensor, Mod.is_module, Mod.is_parameter
local Module = Mod.Module

local M = {}

local GraphModule = class.class('fx.GraphModule', Module)
M.GraphModule = GraphModule

local function split_path(path)
  local parts = {}
  for p in path:gmatch('[^.]+') do parts[#parts + 1] = p end
  return parts
end

-- the value at a dotted path of a module (a submodule, parameter, buffer or attribute), or nil
local function fetch(root, path)
  local cur = root
  for _, p in ipairs(split_path(path)) do
    if not is_module(cur) then return nil end
    cur = cur[p]
    if cur == nil then return nil end
  end
  return cur
end
M.fetch = fetch

-- copy the object at `path` of `from` into `to` at the same path (the same object, shared), making
-- plain modules for the levels between
local function copy_attr(from, to, path)
  local parts = split_path(path)
  local src, dst = from, to
  for i = 1, #parts - 1 do
    local p = parts[i]
    src = src and is_module(src) and src[p] or nil
    local d = rawget(dst, '_modules')[p]
    if not d then
      d = Module()
      dst:add_module(p, d)
    end
    dst = d
  end
  local last = parts[#parts]
  local v = src and is_module(src) and src[last] or nil
  if v == nil then fail('fx.GraphModule', ("the graph reads '%s', which the root has not"):format(path)) end
  if is_module(v) then
    if rawget(dst, '_modules')[last] == nil then dst:add_module(last, v) end
  elseif is_parameter(v) then
    if rawget(dst, '_parameters')[last] == nil then dst:register_parameter(last, v) end
  elseif is_tensor(v) then
    if rawget(dst, '_buffers')[last] == nil then
      local persistent = not (rawget(src, '_non_persistent') and rawget(src, '_non_persistent')[last])
      dst:register_buffer(last, v, { persistent = persistent and rawget(src, '_buffers')[last] ~= nil })
    end
  else
    dst[last] = v
  end
end

-- GraphModule(root, graph, class_name='GraphModule', tensor_constants): root a module (or a table
-- of path -> object) whose objects the graph names
function GraphModule:__init(root, graph, class_name, tensor_constants)
  Module.__init(self)
  if not torch.isinstance(graph, G.Graph) then fail('fx.GraphModule', 'expected a Graph') end
  for _, c in ipairs(tensor_constants or {}) do
    self:register_buffer(c[1], c[2], { persistent = false })
  end
  for _, n in ipairs(graph:nodes()) do
    if (n.op == 'call_module' or n.op == 'get_attr') and fetch(self, n.target) == nil then
      if is_module(root) then
        copy_attr(root, self, n.target)
      else
        local v = root[n.target]
        if v == nil then fail('fx.GraphModule', ("the graph reads '%s', which the root has not"):format(n.target)) end
        local holder = Module()
        holder[n.target] = v
        copy_attr(holder, self, n.target)
      end
    end
  end
  self._class_name = class_name or 'GraphModule'
  self.graph = graph
  if is_module(root) then self.training = root.training end
  self:recompile()
end

function GraphModule:_get_name() return self._class_name end

-- recompile(): the forward made again from the graph; returns the code
function GraphModule:recompile()
  local consts = {}
  local ctx = {
    const = function(v)
      for i, c in ipairs(consts) do if rawequal(c, v) then return ('fx_const[%d]'):format(i) end end
      consts[#consts + 1] = v
      return ('fx_const[%d]'):format(#consts)
    end,
  }
  local code = self.graph:lua_code(ctx)
  local chunk = 'local torch, F, fx_const, fx_pack = ...\nlocal forward\n' .. code .. '\nreturn forward'
  local f, err = load(chunk, '=fx.GraphModule(' .. self._class_name .. ')')
  if not f then fail('fx.GraphModule', 'the generated code does not compile: ' .. tostring(err) .. '\n' .. code) end
  local function pack(...) return { n = select('#', ...), ... } end
  rawset(self, '_fwd', f(torch, torch.nn.functional, consts, pack))
  self.code = code
  return code
end

function GraphModule:forward(...)
  local f = rawget(self, '_fwd')
  if not f then self:recompile(); f = rawget(self, '_fwd') end
  return f(self, ...)
end

-- print_readable(): the class and its code, printed and returned
function GraphModule:print_readable(print_output)
  local s = ('class %s(torch.nn.Module):\n    %s'):format(self._class_name, (self.code:gsub('\n', '\n    ')))
  if print_output ~= false then print(s) end
  return s
end

GraphModule.__tostring = function(self)
  return Module.__tostring(self) .. '\n\n\n\n' .. self.code ..
    '\n# To see more debug info, please use `graph_module:print_readable()`'
end

-- torch.save: the module's registered values, its class name and the graph as data
function GraphModule:__serialize()
  local s = Module.__serialize(self)
  local attrs = {}
  for k, v in pairs(s._attrs) do if k ~= 'graph' and k ~= 'code' then attrs[k] = v end end
  s._attrs = attrs
  s._graph = self.graph:__serialize()
  return s
end
function GraphModule.__deserialize(cls, s)
  local m = Module.__deserialize(cls, s)
  if type(s._graph) ~= 'table' then fail('load', 'a saved fx.GraphModule has no graph') end
  local g = G.Graph.__deserialize(G.Graph, s._graph)
  rawget(m, '_attrs').graph = g
  m:recompile()
  return m
end

return M
