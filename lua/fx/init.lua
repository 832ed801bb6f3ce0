-- moontorch.fx: graph capture (PyTorch's torch.fx), issue 24.
--   local fx = require 'moontorch.fx'          (also torch.fx)
--   local gm = fx.symbolic_trace(model)         -- a GraphModule: gm.graph, gm.code, gm(x)
--   print(gm.graph); gm.graph:print_tabular(); print(gm.code)
--   fx.Interpreter(gm):run(x), fx.Transformer(gm):transform()
--   fx.subgraph_rewriter.replace_pattern(gm, pattern, replacement)
--   fx.passes.ShapeProp(gm):propagate(x), fx.passes.fuse(model), fx.passes.eliminate_dead_code(gm),
--   fx.passes.ProfilingInterpreter(gm)
--   fx.trace{model, concrete_args = {flag = true}}
-- The parts: graph.lua (Graph, Node, printing, the generated Lua), tracer.lua (Proxy, Tracer),
-- graph_module.lua, interpreter.lua, subgraph_rewriter.lua, passes.lua.
local G = require 'moontorch.fx.graph'
local Tr = require 'moontorch.fx.tracer'
local GM = require 'moontorch.fx.graph_module'
local I = require 'moontorch.fx.interpreter'
local P = require 'moontorch.fx.passes'

local fx = {
  Graph = G.Graph,
  Node = G.Node,
  Proxy = Tr.Proxy,
  Tracer = Tr.Tracer,
  GraphModule = GM.GraphModule,
  Interpreter = I.Interpreter,
  Transformer = I.Transformer,
  symbolic_trace = Tr.symbolic_trace,
  wrap = Tr.wrap,
  operator = G.operators,
  map_arg = G.map_arg,
  subgraph_rewriter = require 'moontorch.fx.subgraph_rewriter',
  passes = {
    ShapeProp = P.ShapeProp,
    shape_prop = { ShapeProp = P.ShapeProp, TensorMetadata = P.tensor_meta },
    fuse = P.fuse,
    fuse_conv_bn_eval = P.fuse_conv_bn_eval,
    fuse_linear_bn_eval = P.fuse_linear_bn_eval,
    eliminate_dead_code = P.eliminate_dead_code,
    ProfilingInterpreter = P.ProfilingInterpreter,
  },
}

-- fx.trace{root, concrete_args = {name = value}, tracer = fx.Tracer{...}}: symbolic_trace with
-- some forward parameters fixed to values (data-dependent control flow on them then traces: the
-- graph holds the branch they take)
function fx.trace(opts)
  if type(opts) ~= 'table' or opts[1] == nil then
    require('moontorch.ffi').fail('fx.trace', 'expected {module_or_function, concrete_args = {...}}')
  end
  return Tr.symbolic_trace(opts[1], opts.concrete_args, opts.tracer)
end

return fx
