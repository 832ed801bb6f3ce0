-- moontorch.fx (lua/fx/): symbolic tracing, Graph printing, GraphModule, Interpreter, Transformer,
-- subgraph rewriting, shape propagation (on the meta device too), fusion, dead-code elimination,
-- the profiling interpreter. Printed graphs, node names and shapes recorded from PyTorch 1.13 by
-- spec/support/inspect_record.py.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local fx = require 'moontorch.fx'
local W = dofile('spec/support/inspect_wants.lua')
local F = nn.functional
local Module = nn.Module

-- the modules of the recording script
local Block = torch.class('spec_fx.Block', Module)
function Block:__init()
  Module.__init(self)
  self.conv1 = nn.Conv2d(4, 4, 3, { padding = 1, bias = false })
  self.bn1 = nn.BatchNorm2d(4)
  self.relu = nn.ReLU()
  self.conv2 = nn.Conv2d(4, 4, 3, { padding = 1, bias = false })
  self.bn2 = nn.BatchNorm2d(4)
end
function Block:forward(x)
  local identity = x
  local out = self.relu(self.bn1(self.conv1(x)))
  out = self.bn2(self.conv2(out))
  out = out + identity
  return self.relu(out)
end
function Block:_get_name() return 'Block' end

local function lenet()
  return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
end

local Names = torch.class('spec_fx.Names', Module)
function Names:__init()
  Module.__init(self)
  self.param = nn.Parameter(torch.rand(3, 4))
  self.linear = nn.Linear(4, 5)
end
function Names:forward(input)
  local x = self.linear(input + self.param):relu()
  local y = x:sum(-1):abs():max()
  return torch.relu(x):sum() + y + self.linear.weight:sum()
end

-- outputs and the gradients of inputs and parameters of module and of its trace, for one loss
local function grads_of(m, inputs)
  for _, p in ipairs(m:parameters()) do p.grad = nil end
  local xs = {}
  for i, x in ipairs(inputs) do xs[i] = x:detach():clone():requires_grad_(x:is_floating_point()) end
  local outs = { m(unpack(xs)) }
  local loss = 0
  for _, o in ipairs(outs) do
    if torch.is_tensor(o) then loss = loss + (o * o):sum() end
  end
  loss:backward()
  local g = {} -- by name: a GraphModule registers its modules in the order the graph uses them
  for name, p in m:named_parameters() do g[name] = p.grad and p.grad:clone() or false end
  local gx = {}
  for i, x in ipairs(xs) do gx[i] = x.grad end
  return outs, g, gx
end
local function same_as_module(m, gm, inputs, tol)
  tol = tol or 1e-6
  local o1, g1, x1 = grads_of(m, inputs)
  local o2, g2, x2 = grads_of(gm, inputs)
  assert.are.equal(#o1, #o2)
  for i = 1, #o1 do if torch.is_tensor(o1[i]) then H.near(o2[i], o1[i], tol) end end
  local n1, n2 = 0, 0
  for name, g in pairs(g1) do
    n1 = n1 + 1
    if g then H.near(g2[name], g, tol) else assert.is_false(g2[name]) end
  end
  for _ in pairs(g2) do n2 = n2 + 1 end
  assert.are.equal(n1, n2)
  for i = 1, #x1 do if x1[i] then H.near(x2[i], x1[i], tol) end end
end

describe('fx.symbolic_trace and GraphModule', function()
  it('a ResNet block: the graph, the table and the module print as PyTorch\'s; outputs and gradients', function()
    local w = W.fx_block
    torch.manual_seed(0)
    local b = Block()
    local gm = fx.symbolic_trace(b)
    assert.are.equal(w.graph, tostring(gm.graph))
    assert.are.equal(w.tabular, gm.graph:tabular())
    assert.are.equal(w.repr_head, tostring(gm):match('^(.-)\n\n\n'))
    assert.is_true(torch.isinstance(gm, nn.Module))
    assert.is_true(torch.isinstance(gm, fx.GraphModule))
    assert.are.same(b:state_dict():keys(), gm:state_dict():keys())
    assert.is_true(rawequal(gm.conv1, b.conv1)) -- the root's objects, shared
    local x = torch.randn(2, 4, 5, 5)
    same_as_module(b, gm, { x })
    b:eval()
    gm:eval()
    H.near(gm(x), b(x), 1e-6)
    -- the code is Lua, compiled by LuaJIT
    assert.is_truthy(gm.code:find('local add = bn2 + x;', 1, true))
    assert.is_truthy(gm.code:find('^function forward%(self, x%)'))
    assert.is_truthy(load(gm.code)) -- it parses
  end)

  it('an MLP (Sequential) and LeNet: graphs and tables as PyTorch\'s, the same outputs and gradients', function()
    torch.manual_seed(0)
    local mlp = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    local gm = fx.symbolic_trace(mlp)
    assert.are.equal(W.fx_mlp.graph, tostring(gm.graph))
    assert.are.equal(W.fx_mlp.tabular, gm.graph:tabular())
    assert.are.same(W.fx_mlp.keys, gm:state_dict():keys())
    same_as_module(mlp, gm, { torch.randn(3, 4) })
    local le = lenet()
    local gl = fx.symbolic_trace(le)
    assert.are.equal(W.fx_lenet.graph, tostring(gl.graph))
    same_as_module(le, gl, { torch.randn(2, 1, 28, 28) }, 1e-5)
  end)

  it('names nodes as PyTorch does (Python builtins avoided, repeats numbered, attribute paths)', function()
    local w = W.fx_names
    local gm = fx.symbolic_trace(Names())
    local names, ops, targets, users = {}, {}, {}, {}
    for i, n in ipairs(gm.graph:nodes()) do
      names[i], ops[i], users[i] = n.name, n.op, #n.users
      targets[i] = type(n.target) == 'string' and n.target or fx.Graph.target_name(n.target)
    end
    assert.are.same(w.names, names)
    assert.are.same(w.ops, ops)
    assert.are.same(w.users, users)
    assert.are.same(w.targets, targets)
    local m = Names()
    same_as_module(m, fx.symbolic_trace(m), { torch.randn(3, 4) })
  end)

  it('captures an LSTM (two results), and transformer layers as leaves and traced through', function()
    local L = torch.class('spec_fx.L', Module)
    function L:__init() Module.__init(self); self.lstm = nn.LSTM(3, 4, 2) end
    function L:forward(input)
      local out, hc = self.lstm(input)
      return out, hc[1]
    end
    local l = L()
    local gl = fx.symbolic_trace(l)
    assert.is_truthy(tostring(gl.graph):find('call_module[target=lstm]', 1, true))
    same_as_module(l, gl, { torch.randn(5, 2, 3) }, 1e-5)
    -- a TransformerEncoderLayer in a module: one call_module node
    local E = torch.class('spec_fx.E', Module)
    function E:__init() Module.__init(self); self.layer = nn.TransformerEncoderLayer(8, 2, 16, 0.0); self.out = nn.Linear(8, 3) end
    function E:forward(x) return self.out(self.layer(x)) end
    local e = E()
    local ge = fx.symbolic_trace(e)
    same_as_module(e, ge, { torch.randn(5, 2, 8) }, 1e-5)
    -- the layer itself traced: its attention, linears, norms and dropouts as nodes
    for _, norm_first in ipairs({ false, true }) do
      local layer = nn.TransformerEncoderLayer(8, 2, 16, 0.0, 'gelu', 1e-5, false, norm_first)
      local g = fx.symbolic_trace(layer)
      local targets = {}
      for _, n in ipairs(g.graph:nodes()) do if n.op == 'call_module' then targets[#targets + 1] = n.target end end
      assert.are.same(norm_first and { 'norm1', 'self_attn', 'dropout1', 'norm2', 'linear1', 'dropout', 'linear2', 'dropout2' }
        or { 'self_attn', 'dropout1', 'norm1', 'linear1', 'dropout', 'linear2', 'dropout2', 'norm2' }, targets)
      same_as_module(layer, g, { torch.randn(5, 2, 8) }, 1e-5)
      -- traced without masks: a mask given is refused rather than ignored
      H.errors_with(function() g(torch.randn(5, 2, 8), torch.zeros(5, 5)) end,
        'src_mask has been specialized to have value nil but got another value')
    end
    local dec = nn.TransformerDecoderLayer(8, 2, 16, 0.0)
    local gd = fx.symbolic_trace(dec)
    same_as_module(dec, gd, { torch.randn(4, 2, 8), torch.randn(5, 2, 8) }, 1e-5)
  end)

  it('get_attr for parameters read in forward, constants for other tensors, fx.wrap for a leaf function', function()
    local C = torch.class('spec_fx.C', Module)
    local bias = torch.tensor({ 1, 2, 3 })
    local scale_and_shift = fx.wrap(function(t, k) return t * k + 1 end, 'spec_fx.scale_and_shift')
    function C:__init() Module.__init(self); self.w = nn.Parameter(torch.randn(3, 3)); self:register_buffer('b', torch.ones(3)) end
    function C:forward(x) return scale_and_shift(x:matmul(self.w) + self.b + bias, 2) end
    local c = C()
    local gm = fx.symbolic_trace(c)
    local ops = {}
    for _, n in ipairs(gm.graph:nodes()) do ops[#ops + 1] = n.op .. ':' .. tostring(n.name) end
    assert.are.same({ 'placeholder:x', 'get_attr:w', 'call_method:matmul', 'get_attr:b', 'call_function:add',
      'get_attr:_tensor_constant0', 'call_function:add_1', 'call_function:scale_and_shift', 'output:output' }, ops)
    assert.is_true(rawequal(gm._tensor_constant0, bias))
    local x = torch.randn(2, 3)
    H.near(gm(x), c(x), 1e-6)
    -- without fx.wrap the function is traced through
    local function plain(t) return t * 3 end
    local P = torch.class('spec_fx.P', Module)
    function P:__init() Module.__init(self) end
    function P:forward(x) return plain(x) end
    assert.is_truthy(tostring(fx.symbolic_trace(P()).graph):find('operator.mul', 1, true))
  end)

  it('data-dependent control flow is an error naming the line; concrete_args specialises it', function()
    local CF = torch.class('spec_fx.CF', Module)
    function CF:__init() Module.__init(self) end
    function CF:forward(x)
      if x:sum() > 0 then return x * 2 end -- the line named
      return x
    end
    local err = H.errors_with(function() fx.symbolic_trace(CF()) end,
      'moontorch.fx: symbolically traced variables cannot be used as inputs to control flow')
    assert.is_truthy(tostring(err):find('fx_spec.lua:' .. (debug.getinfo(1, 'l').currentline - 5), 1, true))
    local Q = torch.class('spec_fx.Q', Module)
    function Q:__init() Module.__init(self) end
    function Q:forward(x) if torch.equal(x, x) then return x end return -x end
    H.errors_with(function() fx.symbolic_trace(Q()) end, 'control flow (equal() of a traced value')
    local Lp = torch.class('spec_fx.Lp', Module)
    function Lp:__init() Module.__init(self) end
    function Lp:forward(x) for _ = 1, x:size(1) do x = x + 1 end return x end
    H.errors_with(function() fx.symbolic_trace(Lp()) end, "'for' limit must be a number")
    -- a flag fixed to a value: the branch it takes
    local CF2 = torch.class('spec_fx.CF2', Module)
    function CF2:__init() Module.__init(self) end
    function CF2:forward(x, flag)
      if flag then return x * 2 end
      return x - 1
    end
    local g = fx.trace { CF2(), concrete_args = { flag = true } }
    assert.is_truthy(tostring(g.graph):find('%flag : [#users=0] = placeholder[target=flag](default=true)', 1, true))
    H.near(g(torch.ones(2)), { 2, 2 })
    H.near(g(torch.ones(2), true), { 2, 2 })
    H.errors_with(function() g(torch.ones(2), false) end, 'flag has been specialized to have value true but got another value')
    H.errors_with(function() fx.trace { CF2(), concrete_args = { nope = 1 } } end, "concrete_args names 'nope'")
  end)

  it('GraphModule: to(), train/eval, torch.save / torch.load, torch.deepcopy, the meta device', function()
    torch.manual_seed(0)
    local le = lenet()
    local gm = fx.symbolic_trace(le)
    local x = torch.randn(2, 1, 28, 28)
    local path = os.tmpname()
    torch.save(gm, path)
    local g2 = torch.load(path)
    os.remove(path)
    assert.are.equal(gm.code, g2.code)
    assert.are.equal(tostring(gm.graph), tostring(g2.graph))
    H.near(g2(x), le(x), 1e-6)
    local c = torch.deepcopy(gm)
    H.near(c(x), le(x), 1e-6)
    assert.is_false(rawequal(c['0'].weight, le['0'].weight))
    c:double()
    assert.are.equal(torch.float64, c(x:double()).dtype)
    -- a module made on the meta device traces and runs there
    local meta = nn.Sequential(nn.Linear(4, 8, { device = 'meta' }), nn.ReLU(), nn.Linear(8, 2, { device = 'meta' }))
    local gmeta = fx.symbolic_trace(meta)
    local y = gmeta(torch.empty(5, 4, { device = 'meta' }))
    assert.is_true(y.is_meta)
    assert.are.same({ 5, 2 }, H.shape(y))
  end)
end)

describe('fx.Interpreter and fx.Transformer', function()
  it('run node by node, a subclass changing calls; a Transformer rewriting the graph', function()
    torch.manual_seed(0)
    local mlp = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    local gm = fx.symbolic_trace(fx.symbolic_trace(Names()))
    local x = torch.randn(3, 4)
    H.near(fx.Interpreter(gm):run(x), gm(x), 0)
    local Neg, Interp = torch.class('spec_fx.Neg', fx.Interpreter)
    function Neg:call_method(target, args, kwargs)
      if target == 'relu' then return -Interp.call_method(self, target, args, kwargs) end
      return Interp.call_method(self, target, args, kwargs)
    end
    local m = Names()
    local g = fx.symbolic_trace(m)
    local h = m.linear(x + m.param)
    local y = (-h:relu()):sum(-1):abs():max()
    H.near(Neg(g):run(x), torch.relu(-h:relu()):sum() + y + m.linear.weight:sum(), 1e-5)
    -- PyTorch's tutorial: relu becomes sigmoid, negated
    local Swap, Tr = torch.class('spec_fx.Swap', fx.Transformer)
    function Swap:call_module(target, args, kwargs)
      if target == '1' then
        return -self.tracer:create_proxy('call_function', torch.sigmoid, args, kwargs)
      end
      return Tr.call_module(self, target, args, kwargs)
    end
    local gmlp = fx.symbolic_trace(mlp)
    local t = Swap(gmlp):transform()
    assert.is_true(torch.isinstance(t, fx.GraphModule))
    H.near(t(x), mlp[3](-torch.sigmoid(mlp[1](x))), 1e-6)
    assert.is_truthy(tostring(t.graph):find('call_function[target=torch.sigmoid]', 1, true))
    -- an identity Transformer gives the same graph
    local same = fx.Transformer(gm):transform()
    assert.are.equal(tostring(gm.graph), tostring(same.graph))
    H.near(same(x), gm(x), 0)
    H.near(fx.Interpreter(gmlp):run(x), mlp(x), 0)
  end)
end)

describe('fx.subgraph_rewriter.replace_pattern', function()
  it('replaces every match (PyTorch\'s example: cat then sum becomes stack)', function()
    local Mm = torch.class('spec_fx.Rw', Module)
    function Mm:__init() Module.__init(self) end
    function Mm:forward(x, w1, w2)
      local m1 = torch.cat({ w1, w2 }):sum()
      local m2 = torch.cat({ w1, w2 }):sum()
      return x + torch.max(m1) + torch.max(m2)
    end
    local gm = fx.symbolic_trace(Mm())
    local function pattern(w1, w2) return torch.cat({ w1, w2 }):sum() end
    local function replacement(w1, w2) return torch.stack({ w1, w2 }) end
    local matches = fx.subgraph_rewriter.replace_pattern(gm, pattern, replacement)
    assert.are.equal(2, #matches)
    local text = tostring(gm.graph)
    assert.is_falsy(text:find('torch.cat', 1, true))
    assert.is_truthy(text:find('torch.stack', 1, true))
    local x, w1, w2 = torch.randn(2), torch.randn(3), torch.randn(3)
    H.near(gm(x, w1, w2), x + torch.max(torch.stack({ w1, w2 })) * 2, 1e-6)
    gm.graph:lint()
    -- a pattern whose inner value is read elsewhere does not match
    local R2 = torch.class('spec_fx.Rw2', Module)
    function R2:__init() Module.__init(self) end
    function R2:forward(a) local s = a:sigmoid() return s:relu() + s end
    local g2 = fx.symbolic_trace(R2())
    local n = #fx.subgraph_rewriter.replace_pattern(g2, function(a) return a:sigmoid():relu() end, function(a) return a:tanh() end)
    assert.are.equal(0, n)
  end)
end)

describe('fx passes', function()
  it('ShapeProp: shapes and strides as PyTorch\'s ShapeProp, on real and on meta inputs', function()
    local w = W.fx_lenet
    for _, dev in ipairs({ 'cpu', 'meta' }) do
      local gm = fx.symbolic_trace(lenet())
      local x = dev == 'meta' and torch.empty(3, 1, 28, 28, { device = 'meta' }) or torch.randn(3, 1, 28, 28)
      fx.passes.ShapeProp(gm):propagate(x)
      local shapes, strides = {}, {}
      for _, n in ipairs(gm.graph:nodes()) do
        if n.op ~= 'output' then
          local sh = {}
          for i = 1, #n.meta.tensor_meta.shape do sh[i] = n.meta.tensor_meta.shape[i] end
          shapes[#shapes + 1] = sh
          strides[#strides + 1] = n.meta.tensor_meta.stride
          assert.are.equal(torch.float32, n.meta.tensor_meta.dtype)
        end
      end
      assert.are.same(w.shapes, shapes)
      assert.are.same(w.strides, strides)
      -- the module itself was not moved
      assert.is_false(gm['0'].weight.is_meta)
    end
  end)

  it('fuse: conv-bn and linear-bn in eval give the same outputs (1e-6) with fewer modules', function()
    torch.manual_seed(0)
    local b = Block()
    -- running statistics that are not 0 and 1
    b:train()
    for _ = 1, 3 do b(torch.randn(4, 4, 6, 6)) end
    b:eval()
    local fused = fx.passes.fuse(b)
    local kinds = {}
    for _, n in ipairs(fused.graph:nodes()) do if n.op == 'call_module' then kinds[#kinds + 1] = n.target end end
    assert.are.same({ 'conv1', 'relu', 'conv2', 'relu' }, kinds)
    assert.is_not_nil(fused.conv1.bias)
    local x = torch.randn(2, 4, 7, 7)
    H.near(fused(x), b(x), 1e-6)
    assert.is_nil(b.conv1.bias) -- the model itself is untouched
    -- linear-bn, and conv-bn in 1-d; a conv whose output is read twice is not fused
    local LB = nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Conv1d(1, 2, 3))
    local LBm = torch.class('spec_fx.LB', Module)
    function LBm:__init()
      Module.__init(self)
      self.lin, self.bn = nn.Linear(5, 6), nn.BatchNorm1d(6)
      self.conv, self.bn2 = nn.Conv1d(2, 3, 3), nn.BatchNorm1d(3)
    end
    function LBm:forward(x, y)
      local c = self.conv(y)
      return self.bn(self.lin(x)), self.bn2(c) + c
    end
    local m = LBm()
    m:train()
    for _ = 1, 2 do m(torch.randn(8, 5), torch.randn(4, 2, 9)) end
    m:eval()
    local fm = fx.passes.fuse(m)
    local mods = {}
    for _, n in ipairs(fm.graph:nodes()) do if n.op == 'call_module' then mods[#mods + 1] = n.target end end
    assert.are.same({ 'conv', 'lin', 'bn2' }, mods)
    local x, y = torch.randn(3, 5), torch.randn(2, 2, 9)
    local a1, b1 = m(x, y)
    local a2, b2 = fm(x, y)
    H.near(a2, a1, 1e-6)
    H.near(b2, b1, 1e-6)
    local _ = LB
    b:train()
    H.errors_with(function() fx.passes.fuse(b) end, 'Fusion only for eval!')
  end)

  it('dead-code elimination removes values nothing reads, keeps in-place methods', function()
    local D = torch.class('spec_fx.D', Module)
    function D:__init() Module.__init(self) end
    function D:forward(x)
      local unused = x * 3
      local _ = unused:relu()
      x:add_(0)
      return x + 1
    end
    local gm = fx.symbolic_trace(D())
    assert.are.equal(6, gm.graph:len())
    assert.is_true(fx.passes.eliminate_dead_code(gm))
    local ops = {}
    for _, n in ipairs(gm.graph:nodes()) do ops[#ops + 1] = n.name end
    assert.are.same({ 'x', 'add_', 'add', 'output' }, ops)
    assert.is_false(fx.passes.eliminate_dead_code(gm))
    H.near(gm(torch.ones(2)), { 2, 2 })
  end)

  it('ProfilingInterpreter times every node and prints the tutorial\'s table', function()
    local gm = fx.symbolic_trace(lenet())
    local p = fx.passes.ProfilingInterpreter(gm)
    local x = torch.randn(4, 1, 28, 28)
    for _ = 1, 3 do H.near(p:run(x), gm(x), 0) end
    local s = p:summary()
    local lines = {}
    for l in s:gmatch('[^\n]+') do lines[#lines + 1] = l end
    assert.is_truthy(lines[1]:find('^Op type%s+Op%s+Average runtime %(s%)%s+Pct total runtime$'))
    assert.are.equal(2 + 14, #lines) -- a placeholder, 12 modules, the output
    for i = 3, #lines do
      local op, name, t, pct = lines[i]:match('^(%S+)%s+(%S+)%s+([%d.]+)%s+([%d.]+)$')
      assert.is_not_nil(op, lines[i])
      assert.is_true(tonumber(t) >= 0 and tonumber(pct) <= 100)
      local _ = name
    end
    assert.are.equal(3, #p.total_runtime_sec)
  end)
end)

describe('fx.Graph by hand', function()
  it('builds, edits, lints and prints a graph', function()
    local g = fx.Graph()
    local x = g:placeholder('x')
    local r = g:call_function(torch.relu, { x })
    local s = g:call_method('sum', { r }, { dim = 1 })
    g:output(s)
    assert.are.equal([[graph():
    %x : [#users=1] = placeholder[target=x]
    %relu : [#users=1] = call_function[target=torch.relu](args = (%x,), kwargs = {})
    %sum_1 : [#users=1] = call_method[target=sum](args = (%relu,), kwargs = {dim: 1})
    return sum_1]], tostring(g))
    g:inserting_after(r, function()
      local n = g:call_function(fx.operator.mul, { r, 2 })
      r:replace_all_uses_with(n)
      n:update_arg(1, r)
    end)
    g:lint()
    local gm = fx.GraphModule(nn.Module(), g)
    H.near(gm(torch.tensor({ { -1, 2 }, { 3, -4 } })), { 6, 4 }) -- dim 1: over the rows
    H.errors_with(function() g:erase_node(r) end, 'Tried to erase Node relu but it still had 1 users in the graph')
    assert.is_true(gm.graph:eliminate_dead_code() == false)
  end)
end)
