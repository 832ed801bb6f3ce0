-- The docs of torch.fx (issue 24; moontorch.doc: lua/doc/init.lua says how an entry is written).
local doc = ...

doc.section 'Torch.fx'
doc { 'torch.fx.symbolic_trace(root, concrete_args) -> GraphModule',
  does = 'Runs root\'s forward (or a function) on proxies and records every op as a node: built-in layers as call_module, functions of torch/F/linalg as call_function, methods as call_method, parameters read as get_attr. Data-dependent control flow is an error naming the line.',
  ex = 'local gm = torch.fx.symbolic_trace(nn.Sequential(nn.Linear(4, 2), nn.ReLU()))\nprint(gm(torch.ones(3, 4)):size(), gm.graph:len())  --> torch.Size([3, 2]) 4' }
doc { 'torch.fx.trace{root, concrete_args={name=value}, tracer=} -> GraphModule', pt = false,
  does = 'symbolic_trace with some forward parameters fixed to values: control flow on them traces the branch they take, and the code refuses other values.',
  ex = 'local M = torch.class(\'doc.Flag\', nn.Module)\nfunction M:__init() nn.Module.__init(self) end\nfunction M:forward(x, flag) if flag then return x * 2 end return x end\nprint(torch.fx.trace{M(), concrete_args = {flag = true}}(torch.ones(2)))  --> tensor([2., 2.])' }
doc { 'torch.fx.wrap(fn, name) -> function',
  does = 'A function to call instead of fn: the same outside tracing; while tracing, one call_function node of fn (not traced inside), printed and saved under name.',
  ex = 'local f = torch.fx.wrap(function(t) return t * 3 end, \'doc.triple\')\nprint(f(torch.ones(1)))  --> tensor([3.])' }
doc { 'torch.fx.map_arg(a, fn) -> value',
  does = 'a with every node inside it (nested in tables) replaced by fn(node).',
  ex = 'local g = torch.fx.Graph()\nlocal x = g:placeholder(\'x\')\nprint(torch.fx.map_arg({x, 2}, function(n) return n.name end)[1])  --> x' }
doc { 'torch.fx.Tracer{leaf_modules=} -> Tracer', 'torch.fx.Tracer:trace(root, concrete_args) -> Graph',
  'torch.fx.Tracer:is_leaf_module(m, qualified_name) -> boolean', 'torch.fx.Tracer:call_module(m, forward, args...)',
  'torch.fx.Tracer:create_proxy(op, target, args, kwargs) -> Proxy', 'torch.fx.Tracer:create_node(op, target, args, kwargs) -> Node',
  'torch.fx.Tracer:create_arg(v) -> value', 'torch.fx.Tracer:path_of_module(m) -> string',
  unchecked_args = true,
  does = 'What symbolic_trace runs; subclass it to decide the leaves (is_leaf_module) or how calls are recorded. leaf_modules: more classes kept as leaves.',
  ex = 'local T = torch.class(\'doc.AllLeaves\', torch.fx.Tracer)\nfunction T:is_leaf_module() return true end\nlocal g = T():trace(nn.Sequential(nn.Linear(2, 2)))\nprint(g:len())  --> 3' }
doc { 'torch.fx.Graph() -> Graph', 'torch.fx.Graph:placeholder(name, default) -> Node', 'torch.fx.Graph:get_attr(qualified_name) -> Node',
  'torch.fx.Graph:call_function(fn, args, kwargs) -> Node', 'torch.fx.Graph:call_method(name, args, kwargs) -> Node',
  'torch.fx.Graph:call_module(name, args, kwargs) -> Node', 'torch.fx.Graph:output(values...) -> Node',
  'torch.fx.Graph:create_node(op, target, args, kwargs, name) -> Node', 'torch.fx.Graph:nodes() -> array', 'torch.fx.Graph:len() -> number',
  'torch.fx.Graph:erase_node(node)', 'torch.fx.Graph:inserting_before(node, fn)', 'torch.fx.Graph:inserting_after(node, fn)',
  'torch.fx.Graph:node_copy(node, arg_transform) -> Node', 'torch.fx.Graph:graph_copy(g, val_map) -> values', 'torch.fx.Graph:copy() -> Graph, map',
  'torch.fx.Graph:find_nodes{op=, target=} -> array', 'torch.fx.Graph:lint() -> true', 'torch.fx.Graph:eliminate_dead_code() -> boolean',
  'torch.fx.Graph:print_tabular()', 'torch.fx.Graph:tabular() -> string', 'torch.fx.Graph:lua_code(ctx) -> string', 'torch.fx.Graph:target_name() -> string',
  pt = 'torch.fx.Graph, torch.fx.Graph.placeholder, torch.fx.Graph.get_attr, torch.fx.Graph.call_function, torch.fx.Graph.call_method, torch.fx.Graph.call_module, torch.fx.Graph.output, torch.fx.Graph.create_node, torch.fx.Graph.nodes, torch.fx.Graph.erase_node, torch.fx.Graph.inserting_before, torch.fx.Graph.inserting_after, torch.fx.Graph.node_copy, torch.fx.Graph.graph_copy, torch.fx.Graph.lint, torch.fx.Graph.eliminate_dead_code, torch.fx.Graph.print_tabular, torch.fx.Graph.python_code',
  unchecked_args = true,
  does = 'The nodes of a captured program, in order; printed as PyTorch prints a graph (tostring, print_tabular). New nodes go at the insertion point (the end, or inside inserting_before/after\'s fn). lua_code is the forward GraphModule compiles (PyTorch\'s python_code).',
  ex = 'local g = torch.fx.Graph()\nlocal x = g:placeholder(\'x\')\ng:output(g:call_function(torch.relu, {x}))\nprint(g)  --> graph(): %x : [#users=1] = placeholder[target=x] %relu : [#users=1] = call_function[target=torch.relu](args = (%x,), kwargs = {}) return relu' }
doc { 'torch.fx.Node(...)', 'torch.fx.Node:replace_all_uses_with(new, delete_user_cb) -> array', 'torch.fx.Node:replace_input_with(old, new)',
  'torch.fx.Node:all_input_nodes() -> array', 'torch.fx.Node:update_arg(i, value)', 'torch.fx.Node:update_kwarg(key, value)',
  'torch.fx.Node:prepend(x)', 'torch.fx.Node:append(x)', 'torch.fx.Node:next() -> Node', 'torch.fx.Node:prev() -> Node',
  'torch.fx.Node:format_node() -> string',
  unchecked_args = true,
  does = 'A node: .op, .name, .target, .args (an array with n), .kwargs (the options table), .users, .meta. all_input_nodes, next and prev are methods here (properties in PyTorch); update_arg counts from 1.',
  ex = 'local gm = torch.fx.symbolic_trace(nn.Sequential(nn.ReLU()))\nlocal n = gm.graph:nodes()[2]\nprint(n.op, n.target, n:all_input_nodes()[1].name)  --> call_module 0 input_1' }
doc { 'torch.fx.GraphModule(root, graph, class_name) -> GraphModule', 'torch.fx.GraphModule:recompile() -> string',
  'torch.fx.GraphModule:print_readable(print_output) -> string',
  does = 'An nn.Module made from a graph: the root\'s submodules and parameters at the graph\'s paths, forward compiled from the graph\'s Lua (.code; recompile() after editing .graph). state_dict, to, torch.save/load and torch.deepcopy work.',
  ex = 'local gm = torch.fx.symbolic_trace(nn.Sequential(nn.Linear(2, 2)))\nprint(gm.code:match(\'^function forward%(self, input_1%)\') ~= nil, gm:state_dict():keys()[1])  --> true 0.weight' }
doc { 'torch.fx.Interpreter(module, {garbage_collect_values=true, graph=}) -> Interpreter', 'torch.fx.Interpreter:run(args...) -> values',
  'torch.fx.Interpreter:run_node(node) -> value', 'torch.fx.Interpreter:placeholder(target, args, kwargs)', 'torch.fx.Interpreter:get_attr(target, args, kwargs)',
  'torch.fx.Interpreter:call_function(target, args, kwargs)', 'torch.fx.Interpreter:call_method(target, args, kwargs)',
  'torch.fx.Interpreter:call_module(target, args, kwargs)', 'torch.fx.Interpreter:output(target, args, kwargs)',
  'torch.fx.Interpreter:fetch_attr(target)', 'torch.fx.Interpreter:fetch_args_kwargs_from_env(node) -> args, kwargs',
  'torch.fx.Interpreter:map_nodes_to_values(args, node) -> values',
  unchecked_args = true,
  does = 'Runs a GraphModule node by node; a subclass overrides the method of an op to change what it does.',
  ex = 'local gm = torch.fx.symbolic_trace(nn.Sequential(nn.ReLU()))\nprint(torch.fx.Interpreter(gm):run(torch.tensor({-1, 2})))  --> tensor([0., 2.])' }
doc { 'torch.fx.Transformer(module) -> Transformer', 'torch.fx.Transformer:transform() -> GraphModule',
  'torch.fx.Transformer:placeholder(target, args, kwargs)', 'torch.fx.Transformer:get_attr(target, args, kwargs)',
  'torch.fx.Transformer:call_function(target, args, kwargs)', 'torch.fx.Transformer:call_method(target, args, kwargs)',
  'torch.fx.Transformer:call_module(target, args, kwargs)', 'torch.fx.Transformer:run_node(node)',
  unchecked_args = true,
  does = 'An Interpreter that builds a new graph: each method returns proxies of new nodes (self.tracer:create_proxy makes others); transform() gives the new GraphModule.',
  ex = 'local gm = torch.fx.symbolic_trace(nn.Sequential(nn.ReLU()))\nprint(torch.fx.Transformer(gm):transform().graph:len())  --> 3' }
doc { 'torch.fx.subgraph_rewriter.replace_pattern(gm, pattern, replacement) -> matches',
  does = 'Replaces every non-overlapping place of gm\'s graph that computes what the function pattern computes with what replacement computes (same parameters); returns the matches {anchor=, nodes_map=}.',
  ex = 'local M = torch.class(\'doc.Rw\', nn.Module)\nfunction M:__init() nn.Module.__init(self) end\nfunction M:forward(x) return x:sigmoid():relu() end\nlocal gm = torch.fx.symbolic_trace(M())\nlocal n = #torch.fx.subgraph_rewriter.replace_pattern(gm, function(a) return a:sigmoid():relu() end, function(a) return a:tanh() end)\nprint(n, gm(torch.zeros(1)))  --> 1 tensor([0.])' }
doc { 'torch.fx.operator.add', 'torch.fx.operator.sub', 'torch.fx.operator.mul', 'torch.fx.operator.truediv', 'torch.fx.operator.mod',
  'torch.fx.operator.pow', 'torch.fx.operator.neg', 'torch.fx.operator.getitem', 'torch.fx.operator.getattr', pt = false,
  does = 'The call_function targets of Lua\'s operators and of indexing (Python\'s operator module): callable, printed as operator.<name>.',
  ex = 'print(torch.fx.operator.add(1, 2), tostring(torch.fx.operator.getitem))  --> 3 operator.getitem' }

doc.section 'Torch.fx passes'
doc { 'torch.fx.passes.ShapeProp(gm) -> ShapeProp', 'torch.fx.passes.ShapeProp:propagate(args...) -> values',
  'torch.fx.passes.ShapeProp:run_node(node) -> value', 'torch.fx.passes.shape_prop.ShapeProp(gm) -> ShapeProp',
  'torch.fx.passes.shape_prop.TensorMetadata(t) -> table', pt = 'torch.fx.passes.shape_prop.ShapeProp, torch.fx.passes.shape_prop.TensorMetadata',
  unchecked_args = true,
  does = 'Runs the graph and stores each node\'s meta.tensor_meta {shape, dtype, requires_grad, stride, memory_format}; meta-device inputs run a meta copy of the module (shapes without compute).',
  ex = 'local gm = torch.fx.symbolic_trace(nn.Sequential(nn.Linear(4, 2)))\ntorch.fx.passes.ShapeProp(gm):propagate(torch.empty(3, 4, {device = \'meta\'}))\nprint(gm.graph:nodes()[2].meta.tensor_meta.shape)  --> torch.Size([3, 2])' }
doc { 'torch.fx.passes.fuse(model, {inplace=false}) -> GraphModule', 'torch.fx.passes.fuse_conv_bn_eval(conv, bn, transpose) -> module',
  'torch.fx.passes.fuse_linear_bn_eval(linear, bn) -> module', pt = 'torch.fx.experimental.optimization.fuse, torch.nn.utils.fusion.fuse_conv_bn_eval, torch.nn.utils.fusion.fuse_linear_bn_eval',
  does = 'For inference (eval mode): each conv (1/2/3-d, also transposed) or Linear followed by its BatchNorm, the batch norm reading only it, becomes one module of the folded weights.',
  ex = 'local m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)):eval()\nlocal f = torch.fx.passes.fuse(m)\nlocal x = torch.randn(1, 1, 5, 5)\nprint(f.graph:len(), torch.allclose(f(x), m(x), 1e-5, 1e-6))  --> 3 true' }
doc { 'torch.fx.passes.eliminate_dead_code(gm) -> boolean', pt = false,
  does = 'gm.graph:eliminate_dead_code() (nodes nothing reads removed; placeholders, the output and in-place methods stay) and recompile.',
  ex = 'local M = torch.class(\'doc.Dead\', nn.Module)\nfunction M:__init() nn.Module.__init(self) end\nfunction M:forward(x) local _ = x * 2 return x end\nprint(torch.fx.passes.eliminate_dead_code(torch.fx.symbolic_trace(M())))  --> true' }
doc { 'torch.fx.passes.ProfilingInterpreter(gm) -> ProfilingInterpreter', 'torch.fx.passes.ProfilingInterpreter:run(args...) -> values',
  'torch.fx.passes.ProfilingInterpreter:run_node(node) -> value', 'torch.fx.passes.ProfilingInterpreter:summary{should_sort=true} -> string',
  pt = false, unchecked_args = true,
  does = 'An Interpreter that times every node (PyTorch\'s FX profiling tutorial): summary() is the table of each node\'s average time and share.',
  ex = 'local p = torch.fx.passes.ProfilingInterpreter(torch.fx.symbolic_trace(nn.Sequential(nn.ReLU())))\np:run(torch.ones(2))\nprint(p:summary():match(\'^Op type%s+Op\') ~= nil)  --> true' }
