-- moontorch.fx's passes: shape propagation (PyTorch's torch.fx.passes.shape_prop.ShapeProp, on the
-- meta device too), conv/linear-batchnorm fusion for inference (torch.fx.experimental.optimization
-- .fuse), dead-code elimination, and a profiling interpreter that times every node.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local G = require 'moontorch.fx.graph'
local GM = require 'moontorch.fx.graph_module'
local I = require 'moontorch.fx.interpreter'
local Mod = require 'moontorch.nn.Module'

local fail = core.fail
local is_tensor, is_module = T.is_tensor, Mod.is_module

local M = {}

-- fn(...) with grad mode off (torch.no_grad as a block)
local function nograd(fn, ...)
  local prev = torch.is_grad_enabled()
  torch.set_grad_enabled(false)
  local res = { pcall(fn, ...) }
  torch.set_grad_enabled(prev)
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end

------------------------------------------------------------------------------ ShapeProp
-- ShapeProp(gm):propagate(...): runs the graph on these inputs and stores in each node's
-- meta.tensor_meta {shape, dtype, requires_grad, stride, memory_format, is_quantized} (for a node
-- whose value is tensors: an array of them) and meta.type. Inputs on the meta device run the
-- module's meta copy (its parameters and buffers as meta tensors): shapes without any compute.
local ShapeProp = class.class('fx.passes.ShapeProp', I.Interpreter)
M.ShapeProp = ShapeProp

local TensorMetadata = {}
TensorMetadata.__index = TensorMetadata
TensorMetadata.__tostring = function(m)
  return ('TensorMetadata(shape=%s, dtype=%s, requires_grad=%s, stride=(%s), memory_format=%s, is_quantized=false)')
    :format(tostring(m.shape), tostring(m.dtype), tostring(m.requires_grad), table.concat(m.stride, ', '),
      m.memory_format)
end
local function tensor_meta(t)
  return setmetatable({ shape = t:size(), dtype = t.dtype, requires_grad = t.requires_grad, stride = t:stride(),
    memory_format = t:is_contiguous() and 'torch.contiguous_format' or 'nil', is_quantized = false }, TensorMetadata)
end
M.tensor_meta = tensor_meta

local function describe(v)
  if is_tensor(v) then return tensor_meta(v) end
  if type(v) == 'table' and getmetatable(v) == nil then
    local r, any = {}, false
    for i = 1, v.n or #v do
      r[i] = describe(v[i])
      any = any or r[i] ~= nil
    end
    return any and r or nil
  end
  return nil
end

function ShapeProp:__init(module, opts)
  I.Interpreter.__init(self, module, opts)
end

function ShapeProp:run_node(n)
  local r = { n = 0 }
  local res = { I.Interpreter.run_node(self, n) }
  r.n = table.maxn(res)
  for i = 1, r.n do r[i] = res[i] end
  local v = r.n > 1 and r or r[1]
  local tm = describe(v)
  if tm then n.meta.tensor_meta = tm end
  n.meta.type = is_tensor(v) and 'torch.Tensor' or type(v)
  return unpack(r, 1, r.n)
end

local function any_meta(args)
  for i = 1, args.n do
    local a = args[i]
    if is_tensor(a) and a.is_meta then return true end
  end
  return false
end

function ShapeProp:propagate(...)
  local args = { n = select('#', ...), ... }
  if any_meta(args) then
    -- the module's meta copy: the same paths, every tensor on the meta device
    local copy = torch.deepcopy(self.module)
    copy:to('meta')
    local saved = self.module
    self.module = copy
    local res = { pcall(self.run, self, ...) }
    self.module = saved
    if not res[1] then error(res[2], 0) end
    return unpack(res, 2, table.maxn(res))
  end
  return self:run(...)
end

------------------------------------------------------------------------------ fusion
-- the weights of a conv followed by a batch norm in eval mode as one conv's (PyTorch's
-- fuse_conv_bn_weights): w * gamma / sqrt(var + eps) along the output channels, and the bias moved
local function fuse_conv_bn_weights(w, b, rm, rv, eps, gamma, beta, transpose)
  if b == nil then b = torch.zeros_like(rm) end
  if gamma == nil then gamma = torch.ones_like(rm) end
  if beta == nil then beta = torch.zeros_like(rm) end
  local rsq = (rv + eps):rsqrt()
  local shape = {}
  for i = 1, w:dim() do shape[i] = 1 end
  if transpose then shape[2] = -1 else shape[1] = -1 end
  local fw = w * (gamma * rsq):reshape(shape)
  local fb = (b - rm) * rsq * gamma + beta
  return fw:to(w.dtype), fb:to(w.dtype)
end
M.fuse_conv_bn_weights = fuse_conv_bn_weights

-- fuse_conv_bn_eval(conv, bn): a new conv computing bn(conv(x)) (both in eval mode)
function M.fuse_conv_bn_eval(conv, bn, transpose)
  if conv.training or bn.training then fail('fx.passes.fuse', 'Fusion only for eval!') end
  local fused = torch.deepcopy(conv)
  local fw, fb = nograd(function()
    return fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
      transpose)
  end)
  fused.weight = torch.nn.Parameter(fw, conv.weight.requires_grad)
  fused.bias = torch.nn.Parameter(fb, conv.weight.requires_grad)
  return fused
end

-- fuse_linear_bn_eval(linear, bn): a new Linear computing bn(linear(x)) (PyTorch's fuse_linear_bn_weights)
function M.fuse_linear_bn_eval(linear, bn)
  if linear.training or bn.training then fail('fx.passes.fuse', 'Fusion only for eval!') end
  local fused = torch.deepcopy(linear)
  local fw, fb = nograd(function()
    local gamma = bn.weight or torch.ones_like(bn.running_mean)
    local beta = bn.bias or torch.zeros_like(bn.running_mean)
    local b = fused.bias or torch.zeros_like(bn.running_mean)
    local scale = gamma * (bn.running_var + bn.eps):rsqrt()
    return fused.weight * scale:unsqueeze(-1), (b - bn.running_mean) * scale + beta
  end)
  fused.weight = torch.nn.Parameter(fw, linear.weight.requires_grad)
  fused.bias = torch.nn.Parameter(fb, linear.weight.requires_grad)
  return fused
end

local function set_module(gm, path, m)
  local parent, last = path:match('^(.*)%.([^.]+)$')
  local holder = parent and GM.fetch(gm, parent) or gm
  last = last or path
  rawget(holder, '_modules')[last] = m
end

-- fuse(model, {inplace=false}) -> GraphModule: in eval mode, each Conv1d/2d/3d (or
-- ConvTranspose) followed by the BatchNorm of its dims, and each Linear followed by a
-- BatchNorm1d, become one module of the fused weights when the batch norm alone reads the conv
function M.fuse(model, opts)
  local inplace = opts and opts.inplace
  local gm
  if torch.isinstance(model, GM.GraphModule) then
    gm = model
    if not inplace then gm = torch.deepcopy(model) end
  else
    if not inplace then model = torch.deepcopy(model) end
    gm = require('moontorch.fx.tracer').symbolic_trace(model)
  end
  local nn = torch.nn
  local patterns = {
    { nn.Conv1d, nn.BatchNorm1d, 'conv' }, { nn.Conv2d, nn.BatchNorm2d, 'conv' }, { nn.Conv3d, nn.BatchNorm3d, 'conv' },
    { nn.ConvTranspose1d, nn.BatchNorm1d, 'convt' }, { nn.ConvTranspose2d, nn.BatchNorm2d, 'convt' },
    { nn.ConvTranspose3d, nn.BatchNorm3d, 'convt' }, { nn.Linear, nn.BatchNorm1d, 'linear' },
  }
  local changed = false
  for _, n in ipairs(gm.graph:nodes()) do
    if n.op == 'call_module' and G.is_node(n.args[1]) and n.args[1].op == 'call_module' then
      local prev = n.args[1]
      local first, bn = GM.fetch(gm, prev.target), GM.fetch(gm, n.target)
      for _, p in ipairs(patterns) do
        if getmetatable(first) == p[1] and getmetatable(bn) == p[2] and #prev.users == 1
          and bn.track_running_stats ~= false and bn.running_mean ~= nil then
          local fused
          if p[3] == 'linear' then
            if first.weight:dim() == 2 then fused = M.fuse_linear_bn_eval(first, bn) end
          else
            fused = M.fuse_conv_bn_eval(first, bn, p[3] == 'convt')
          end
          if fused then
            set_module(gm, prev.target, fused)
            n:replace_all_uses_with(prev)
            gm.graph:erase_node(n)
            changed = true
          end
          break
        end
      end
    end
  end
  if changed then gm:recompile() end
  return gm
end

-- eliminate_dead_code(gm): the graph's dead nodes removed, the module recompiled; true when any was
function M.eliminate_dead_code(gm)
  local changed = gm.graph:eliminate_dead_code()
  if changed then gm:recompile() end
  return changed
end

------------------------------------------------------------------------------ ProfilingInterpreter
-- ProfilingInterpreter(gm): run(...) as the module's forward, timing every node; summary() the
-- nodes by the time they took (average over the runs), PyTorch's FX profiling tutorial's table
local ProfilingInterpreter = class.class('fx.passes.ProfilingInterpreter', I.Interpreter)
M.ProfilingInterpreter = ProfilingInterpreter

local now_us = require('moontorch.observe').now_us
local function now() return now_us() * 1e-6 end
M.now = now

function ProfilingInterpreter:__init(module, opts)
  I.Interpreter.__init(self, module, opts)
  self.total_runtime_sec = {}
  self.runtimes_sec = {} -- node -> array of seconds
end

function ProfilingInterpreter:run(...)
  local t0 = now()
  local res = { I.Interpreter.run(self, ...) }
  self.total_runtime_sec[#self.total_runtime_sec + 1] = now() - t0
  return unpack(res, 1, table.maxn(res))
end

function ProfilingInterpreter:run_node(n)
  local t0 = now()
  local res = { I.Interpreter.run_node(self, n) }
  local dt = now() - t0
  local l = self.runtimes_sec[n]
  if not l then l = {}; self.runtimes_sec[n] = l end
  l[#l + 1] = dt
  return unpack(res, 1, table.maxn(res))
end

local function mean(l)
  local s = 0
  for _, x in ipairs(l) do s = s + x end
  return #l > 0 and s / #l or 0
end

-- summary({should_sort=true}): the table as text
function ProfilingInterpreter:summary(opts)
  local should_sort = not (opts and opts.should_sort == false)
  local total = mean(self.total_runtime_sec)
  local rows = {}
  for _, n in ipairs(self.graph:nodes()) do
    local l = self.runtimes_sec[n]
    if l then
      local avg = mean(l)
      rows[#rows + 1] = { n.op, n.name, avg, total > 0 and avg / total * 100 or 0 }
    end
  end
  if should_sort then table.sort(rows, function(a, b) return a[3] > b[3] end) end
  local text = {}
  for i, r in ipairs(rows) do
    text[i] = { r[1], r[2], ('%.6f'):format(r[3]), ('%.4f'):format(r[4]) }
  end
  return G.tabulate(text, { 'Op type', 'Op', 'Average runtime (s)', 'Pct total runtime' })
end

return M
