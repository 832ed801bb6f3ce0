-- torch.onnx.export(module, example_inputs, path, {opset=17, input_names=, output_names=, dynamic_axes=}):
-- a module as an ONNX file (core/formats/onnx.c's mt_onnx_write: protobuf-c packs the ModelProto).
--
-- The module is traced (moontorch.fx's symbolic_trace: leaf modules, functions, methods and operators
-- become graph nodes); each node is lowered to ONNX nodes while running on the example inputs. Every
-- ONNX node emitted is also computed, right then, by torch.onnx.load's own implementation of that
-- ONNX op (lua/interop/onnx.lua's OPS), so each value's dtype and shape is known (the graph's
-- outputs are declared with them) and, at the end, the graph's outputs are compared with the
-- module's: an export that would not reproduce the module is an error, never a wrong file.
-- dynamic_axes: the marked input dims are symbolic (dim_param); the graph is computed a second time
-- on inputs one larger along those dims, and every reshape is written so that it holds for both (a
-- size that was copied from a dynamic dim becomes ONNX's 0, "keep this dim") or the export is an
-- error saying which reshape cannot follow the dynamic size.
-- What lowers: see M.MODULES, FUNCTIONS and METHODS below (docs/API.md lists them).
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local C = core.C
local fail, raise_last = core.fail, core.raise_last
local is_tensor = T.is_tensor
local unwrap = core.unwrap or function(f) return f end

local M = {}
local OP = 'onnx.export'
local function bad(msg) fail(OP, msg) end

local torch_, F_
local function torch() torch_ = torch_ or require 'moontorch'; return torch_ end
local function F() F_ = F_ or require('moontorch.nn').functional; return F_ end

-- attributes written as floats (every other number is an int; strings and lists as they are)
local FLOAT_ATTRS = { alpha = true, beta = true, epsilon = true, gamma = true }

------------------------------------------------------------------------------ the graph being built
-- a value: { t = tensor for the example inputs, t2 = for the grown ones (dynamic axes), name = }
local Value = {}
Value.__index = Value
local function is_value(x) return getmetatable(x) == Value end

local S -- the export running now

local function new_name(base)
  local n, k = base, 1
  while S.used[n] do k = k + 1; n = base .. '_' .. k end
  S.used[n] = true
  return n
end

local function value(t, t2, name)
  return setmetatable({ t = t, t2 = t2, name = name }, Value)
end

-- an initializer (a weight, or a constant of the graph such as a Reshape's shape)
local function const(t, hint)
  local key = t
  local v = S.consts[key]
  if v then return v end
  if t._device_type ~= 0 then bad("the module's tensors must be on the CPU") end
  local c = t:detach():contiguous()
  if c:data_ptr() == t:data_ptr() and c:is_contiguous() then c = c:clone() end
  local name = new_name(hint or S.param_names[t] or 'const')
  v = value(c, c, name)
  S.inits[#S.inits + 1] = v
  S.consts[key] = v
  return v
end
local function ints(l) return const(torch().tensor(l, { dtype = torch().int64 }), 'shape') end

local function as_value(x, like)
  if is_value(x) then return x end
  if is_tensor(x) then return const(x) end
  if type(x) == 'number' and like then
    return const(torch().tensor(x, { dtype = like.t.dtype }), 'scalar')
  end
  bad(('expected a tensor, got %s'):format(type(x)))
end

-- emit(op_type, inputs, attrs[, nout]) -> the node's output value (nout > 1: that many values, of an op
-- that gives a table of outputs: LSTM, GRU), computed by torch.onnx.load's op
local function emit(op_type, ins, attrs, nout)
  local OPS = require('moontorch.interop.onnx')._OPS
  local fn = OPS[op_type]
  S.n = S.n + 1
  local A = { _node = op_type .. '_' .. S.n, _opset = S.opset, _op = op_type }
  for k, v in pairs(attrs or {}) do A[k] = v end
  local a1, a2 = {}, {}
  local nin = 0
  for i = 1, ins.n or #ins do
    local x = ins[i]
    if x ~= nil then x = as_value(x); a1[i], a2[i] = x.t, x.t2 end
    ins[i] = x
    nin = i
  end
  local function why(e) return (tostring(e):gsub('^[^\n]-:%d+: ', ''):gsub('^moontorch%.', '')) end
  local ok, t = pcall(fn, A, unpack(a1, 1, nin))
  if not ok then bad(('%s: %s'):format(op_type, why(t))) end
  local t2 = t
  if S.dynamic then
    ok, t2 = pcall(fn, A, unpack(a2, 1, nin))
    if not ok then bad(('%s does not follow the dynamic axes: %s'):format(op_type, why(t2))) end
  end
  local nd = { op = op_type, name = A._node, inputs = ins, nin = nin, attrs = attrs or {} }
  S.nodes[#S.nodes + 1] = nd
  if nout then
    nd.outs = {}
    for k = 1, nout do nd.outs[k] = value(t[k], t2[k]); nd.outs[k].node = nd end
    return unpack(nd.outs, 1, nout)
  end
  nd.out = value(t, t2)
  nd.outs = { nd.out }
  nd.out.node = nd
  return nd.out
end

local function dynamic_dims(x) -- the dims of x (from 1) whose size follows a dynamic axis
  local d = {}
  if not S.dynamic then return d end
  for i = 1, x.t:dim() do if x.t:size(i) ~= x.t2:size(i) then d[i] = true end end
  return d
end

local function onnx_axis(d, nd) -- a moontorch dim (from 1, or negative) as ONNX's axis (from 0)
  if d < 0 then d = d + nd + 1 end
  return d - 1
end

------------------------------------------------------------------------------ lowerings of calls
local O = {}
M.O = O

function O.reshape(x, sizes)
  x = as_value(x)
  local dyn = dynamic_dims(x)
  local target = {}
  for i, s in ipairs(sizes) do
    -- a size copied from a dynamic dim at the same place: ONNX's 0 keeps it
    target[i] = (dyn[i] and s == x.t:size(i)) and 0 or s
  end
  -- an inferred size (-1) absorbs what a dynamic dim left; 0 for a size kept where the shapes agree
  local r = emit('Reshape', { x, ints(target) })
  if S.dynamic then
    local want = x.t:reshape(sizes)
    for i = 1, want:dim() do
      if r.t:size(i) ~= want:size(i) then bad('Reshape: the sizes differ') end
    end
  end
  return r
end
function O.transpose(x, d0, d1)
  x = as_value(x)
  local nd = x.t:dim()
  local perm = {}
  for i = 1, nd do perm[i] = i - 1 end
  local a, b = onnx_axis(d0, nd), onnx_axis(d1, nd)
  perm[a + 1], perm[b + 1] = perm[b + 1], perm[a + 1]
  return emit('Transpose', { x }, { perm = perm })
end
function O.permute(x, dims)
  x = as_value(x)
  local perm = {}
  for i, d in ipairs(dims) do perm[i] = onnx_axis(d, x.t:dim()) end
  return emit('Transpose', { x }, { perm = perm })
end
function O.flatten(x, s, e)
  x = as_value(x)
  local nd = x.t:dim()
  s, e = s or 1, e or -1
  if s < 0 then s = s + nd + 1 end
  if e < 0 then e = e + nd + 1 end
  if e == nd and s >= 1 and s <= 2 and nd >= 1 then
    if s == 1 then return O.reshape(x, { -1 }) end
    return emit('Flatten', { x }, { axis = 1 })
  end
  if s >= e then return x end
  local sizes = {}
  for i = 1, s - 1 do sizes[#sizes + 1] = x.t:size(i) end
  sizes[#sizes + 1] = -1
  for i = e + 1, nd do sizes[#sizes + 1] = x.t:size(i) end
  return O.reshape(x, sizes)
end
function O.unsqueeze(x, d)
  x = as_value(x)
  return emit('Unsqueeze', { x, ints({ onnx_axis(d, x.t:dim() + 1) }) })
end
function O.squeeze(x, d)
  x = as_value(x)
  if d == nil then return emit('Squeeze', { x }) end
  if x.t:size(d) ~= 1 then return x end
  return emit('Squeeze', { x, ints({ onnx_axis(d, x.t:dim()) }) })
end

local BINARY = { add = 'Add', sub = 'Sub', mul = 'Mul', div = 'Div' }
function O.binary(name, a, b, alpha)
  if type(a) == 'number' and type(b) == 'number' then
    return ({ add = a + b, sub = a - b, mul = a * b, div = a / b })[name]
  end
  local like = is_value(a) and a or is_value(b) and b or nil
  if like == nil then like = as_value(is_tensor(a) and a or b) end
  if alpha ~= nil and alpha ~= 1 then b = O.binary('mul', b, alpha) end
  a, b = as_value(a, like), as_value(b, like)
  return emit(BINARY[name], { a, b })
end

local function scalar(x, s) return const(torch().tensor(s, { dtype = x.t.dtype }), 'scalar') end

function O.unary(name, x, p1, p2)
  x = as_value(x)
  if name == 'relu' then return emit('Relu', { x }) end
  if name == 'tanh' then return emit('Tanh', { x }) end
  if name == 'sigmoid' then return emit('Sigmoid', { x }) end
  if name == 'exp' then return emit('Exp', { x }) end
  if name == 'log' then return emit('Log', { x }) end
  if name == 'sqrt' then return emit('Sqrt', { x }) end
  if name == 'abs' then return emit('Abs', { x }) end
  if name == 'neg' then return emit('Neg', { x }) end
  if name == 'silu' then return emit('Mul', { x, emit('Sigmoid', { x }) }) end
  if name == 'leaky_relu' then return emit('LeakyRelu', { x }, { alpha = p1 or 0.01 }) end
  if name == 'elu' then return emit('Elu', { x }, { alpha = p1 or 1 }) end
  if name == 'hardtanh' then return emit('Clip', { x, scalar(x, p1 or -1), scalar(x, p2 or 1) }) end
  if name == 'hardsigmoid' then return emit('HardSigmoid', { x }, { alpha = 1 / 6, beta = 0.5 }) end
  if name == 'softplus' then
    if (p1 or 1) ~= 1 then bad('softplus with beta other than 1') end
    return emit('Softplus', { x })
  end
  if name == 'gelu' then -- (Gelu is an op of opset 20) x * 0.5 * (1 + erf(x / sqrt 2))
    local e = emit('Erf', { emit('Div', { x, scalar(x, math.sqrt(2)) }) })
    return emit('Mul', { emit('Mul', { x, emit('Add', { e, scalar(x, 1) }) }), scalar(x, 0.5) })
  end
  if name == 'gelu_tanh' then -- 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    local x3 = emit('Mul', { emit('Mul', { x, x }), x })
    local inner = emit('Mul', { emit('Add', { x, emit('Mul', { x3, scalar(x, 0.044715) }) }),
      scalar(x, math.sqrt(2 / math.pi)) })
    local th = emit('Add', { emit('Tanh', { inner }), scalar(x, 1) })
    return emit('Mul', { emit('Mul', { x, th }), scalar(x, 0.5) })
  end
  bad(('the function %s cannot be exported'):format(name))
end

function O.softmax(x, dim, log)
  x = as_value(x)
  return emit(log and 'LogSoftmax' or 'Softmax', { x }, { axis = onnx_axis(dim or -1, x.t:dim()) })
end
function O.matmul(a, b) return emit('MatMul', { as_value(a), as_value(b) }) end
function O.cat(list, dim)
  local vs = {}
  for i, x in ipairs(list) do vs[i] = as_value(x) end
  return emit('Concat', vs, { axis = onnx_axis(dim or 1, vs[1].t:dim()) })
end
function O.reduce(op, x, dims, keep)
  x = as_value(x)
  local axes = {}
  if type(dims) == 'number' then dims = { dims } end
  if dims == nil then for i = 1, x.t:dim() do axes[i] = i - 1 end
  else for i, d in ipairs(dims) do axes[i] = onnx_axis(d, x.t:dim()) end end
  if op == 'ReduceSum' then -- axes an input from opset 13
    return emit(op, { x, ints(axes) }, { keepdims = keep and 1 or 0 })
  end
  return emit(op, { x }, { axes = axes, keepdims = keep and 1 or 0 }) -- (an input from opset 18)
end

function O.linear(x, w, b)
  x = as_value(x)
  if x.t:dim() == 2 then
    local ins = { x, const(w) }
    if b ~= nil then ins[3] = const(b) end
    return emit('Gemm', ins, { transB = 1 })
  end
  local wt = S.transposed[w]
  if not wt then
    wt = const(w:t():contiguous(), (S.param_names[w] or 'weight') .. '_t')
    S.transposed[w] = wt
  end
  local y = emit('MatMul', { x, wt })
  if b ~= nil then y = emit('Add', { y, const(b) }) end
  return y
end

-- layer norm over the last n dims: LayerNormalization (opset 17), else its arithmetic
function O.layer_norm(x, n, w, b, eps)
  x = as_value(x)
  local dt = x.t.dtype
  local d = x.t:size(x.t:dim())
  local shape = {}
  for i = x.t:dim() - n + 1, x.t:dim() do shape[#shape + 1] = x.t:size(i) end
  w = w ~= nil and const(w) or const(torch().ones(shape, { dtype = dt }), 'ln_ones')
  b = b ~= nil and const(b) or const(torch().zeros(shape, { dtype = dt }), 'ln_zeros')
  if S.opset >= 17 then
    return emit('LayerNormalization', { x, w, b }, { axis = -n, epsilon = eps })
  end
  local axes = {}
  for i = 1, n do axes[i] = -i end
  local mean = emit('ReduceMean', { x }, { axes = axes, keepdims = 1 })
  local c = emit('Sub', { x, mean })
  local var = emit('ReduceMean', { emit('Mul', { c, c }) }, { axes = axes, keepdims = 1 })
  local y = emit('Div', { c, emit('Sqrt', { emit('Add', { var, scalar(x, eps) }) }) })
  local _ = d
  return emit('Add', { emit('Mul', { y, w }), b })
end

------------------------------------------------------------------------------ leaf modules
local function list_of(v, n)
  local r = {}
  for i = 1, n do r[i] = type(v) == 'table' and v[i] or v end
  return r
end
local function typename(m) return torch().typename(m) end

local function conv(m, x, n)
  if m.padding_mode ~= 'zeros' then bad(('%s with padding_mode %s'):format(typename(m), m.padding_mode)) end
  if x.t:dim() ~= n + 2 then bad(typename(m) .. ' on an unbatched input') end
  local dil = list_of(m.dilation, n)
  local pb, pe = {}, {}
  local padding = m.padding
  for i = 1, n do
    if padding == 'valid' then pb[i], pe[i] = 0, 0
    elseif padding == 'same' then
      local total = dil[i] * (m.weight:size(i + 2) - 1)
      pb[i] = math.floor(total / 2); pe[i] = total - pb[i]
    else pb[i] = list_of(padding, n)[i]; pe[i] = pb[i] end
  end
  local pads = {}
  for i = 1, n do pads[i], pads[n + i] = pb[i], pe[i] end
  local kernel = {}
  for i = 1, n do kernel[i] = m.weight:size(i + 2) end
  local ins = { x, const(m.weight) }
  if m.bias ~= nil then ins[3] = const(m.bias) end
  return emit('Conv', ins, { kernel_shape = kernel, strides = list_of(m.stride, n), pads = pads, dilations = dil,
    group = m.groups })
end

local function pool(m, x, n, max)
  local k = list_of(m.kernel_size, n)
  local attrs = { kernel_shape = k, strides = list_of(m.stride or m.kernel_size, n),
    ceil_mode = m.ceil_mode and 1 or 0 }
  local p = list_of(m.padding or 0, n)
  attrs.pads = {}
  for i = 1, n do attrs.pads[i], attrs.pads[n + i] = p[i], p[i] end
  if max then
    if m.return_indices then bad(typename(m) .. ' with return_indices') end
    attrs.dilations = list_of(m.dilation or 1, n)
    return emit('MaxPool', { x }, attrs)
  end
  if m.divisor_override then bad(typename(m) .. ' with divisor_override') end
  attrs.count_include_pad = m.count_include_pad == false and 0 or 1
  return emit('AveragePool', { x }, attrs)
end

local function adaptive(m, x, n, max)
  local real = m(x.t)
  if max and m.return_indices then bad(typename(m) .. ' with return_indices') end
  local all_one, k = true, {}
  for i = 1, n do
    local out, inp = real:size(real:dim() - n + i), x.t:size(x.t:dim() - n + i)
    if out ~= 1 then all_one = false end
    if inp % out ~= 0 then
      bad(('%s from size %d to %d (ONNX pools only when the output size divides the input size)'):format(
        typename(m), inp, out))
    end
    k[i] = inp / out
  end
  if all_one then return emit(max and 'GlobalMaxPool' or 'GlobalAveragePool', { x }) end
  local pads = {}
  for i = 1, 2 * n do pads[i] = 0 end
  local attrs = { kernel_shape = k, strides = k, pads = pads }
  return emit(max and 'MaxPool' or 'AveragePool', { x }, attrs)
end

local function batch_norm(m, x)
  if m.training or m.running_mean == nil then bad(typename(m) .. ' in training mode (call module:eval())') end
  local c = x.t:size(2)
  local dt = x.t.dtype
  local w = m.weight ~= nil and const(m.weight) or const(torch().ones({ c }, { dtype = dt }), 'bn_ones')
  local b = m.bias ~= nil and const(m.bias) or const(torch().zeros({ c }, { dtype = dt }), 'bn_zeros')
  return emit('BatchNormalization', { x, w, b, const(m.running_mean), const(m.running_var) }, { epsilon = m.eps })
end

-- group norm: (N, G, rest) normalised over its last dim, the input's shape back, then the affine
local function group_norm(m, x)
  local G = m.num_groups
  local y = O.reshape(x, { x.t:size(1), G, -1 })
  local mean = emit('ReduceMean', { y }, { axes = { 2 }, keepdims = 1 })
  local c = emit('Sub', { y, mean })
  local var = emit('ReduceMean', { emit('Mul', { c, c }) }, { axes = { 2 }, keepdims = 1 })
  y = emit('Div', { c, emit('Sqrt', { emit('Add', { var, scalar(x, m.eps) }) }) })
  y = emit('Reshape', { y, emit('Shape', { x }) })
  if m.affine then
    local shape = { x.t:size(2) }
    for _ = 3, x.t:dim() do shape[#shape + 1] = 1 end
    y = emit('Add', { emit('Mul', { y, const(m.weight:reshape(shape), (S.param_names[m.weight] or 'gn') .. '_c') }),
      const(m.bias:reshape(shape), (S.param_names[m.bias] or 'gn') .. '_c') })
  end
  return y
end

local function embedding(m, idx)
  if m.max_norm ~= nil then bad('nn.Embedding with max_norm') end
  -- moontorch's positions count from 1, ONNX's from 0: the graph takes the module's inputs
  local i = as_value(idx)
  return emit('Gather', { const(m.weight), emit('Sub', { i, scalar(i, 1) }) }, { axis = 0 })
end

-- multi-head attention (evaluation, without masks) in four-dim heads: (N, H, L, hd)
local function attention(m, q, k, v, need_weights, average)
  if m.bias_k ~= nil or m.add_zero_attn then bad('nn.MultiheadAttention with bias_k/bias_v or add_zero_attn') end
  if m.training and m.dropout > 0 then bad('nn.MultiheadAttention in training mode (call module:eval())') end
  if q.t:dim() ~= 3 then bad('nn.MultiheadAttention on an unbatched input') end
  local E, H = m.embed_dim, m.num_heads
  local hd = E / H
  local wq, wk, wv
  local bq, bk, bv
  local function part(t, i, name)
    if t == nil then return nil end
    local key = S.parts[t]
    if not key then key = {}; S.parts[t] = key end
    if not key[i] then
      key[i] = t:narrow(1, (i - 1) * E + 1, E):contiguous()
      S.param_names[key[i]] = (S.param_names[t] or 'attn') .. '_' .. name
    end
    return key[i]
  end
  if m._qkv_same_embed_dim then
    wq, wk, wv = part(m.in_proj_weight, 1, 'q'), part(m.in_proj_weight, 2, 'k'), part(m.in_proj_weight, 3, 'v')
  else
    wq, wk, wv = m.q_proj_weight, m.k_proj_weight, m.v_proj_weight
  end
  bq, bk, bv = part(m.in_proj_bias, 1, 'q'), part(m.in_proj_bias, 2, 'k'), part(m.in_proj_bias, 3, 'v')
  local bf = m.batch_first
  -- (L, N, E) or, batch first, (N, L, E) -> (N, H, L, hd)
  local function heads(x, w, b, kt)
    local y = O.linear(x, w, b)
    y = O.reshape(y, { y.t:size(1), y.t:size(2), H, hd })
    local perm
    if bf then perm = kt and { 0, 2, 3, 1 } or { 0, 2, 1, 3 } else perm = kt and { 1, 2, 3, 0 } or { 1, 2, 0, 3 } end
    return emit('Transpose', { y }, { perm = perm })
  end
  local qh = heads(q, wq, bq, false)
  local kh = heads(k, wk, bk, true)
  local vh = heads(v, wv, bv, false)
  local scores = emit('Mul', { emit('MatMul', { qh, kh }), scalar(qh, 1 / math.sqrt(hd)) })
  local w = emit('Softmax', { scores }, { axis = -1 })
  local o = emit('MatMul', { w, vh }) -- (N, H, L, hd)
  o = emit('Transpose', { o }, { perm = bf and { 0, 2, 1, 3 } or { 2, 0, 1, 3 } })
  o = O.reshape(o, { o.t:size(1), o.t:size(2), E })
  o = O.linear(o, m.out_proj.weight, m.out_proj.bias)
  local weights = nil
  if need_weights then
    weights = average and emit('ReduceMean', { w }, { axes = { 1 }, keepdims = 0 }) or w
  end
  return o, weights
end

local function mha(m, a)
  local q, k, v = a[1], a[2], a[3]
  local opts = a[4]
  local need_weights, average = true, true
  if type(opts) == 'table' and not is_value(opts) and not is_tensor(opts) then
    if opts.attn_mask ~= nil or opts.key_padding_mask ~= nil then bad('nn.MultiheadAttention with a mask') end
    need_weights, average = opts.need_weights ~= false, opts.average_attn_weights ~= false
  else
    if a[4] ~= nil or a[6] ~= nil then bad('nn.MultiheadAttention with a mask') end
    if a[5] == false then need_weights = false end
    if a[7] == false then average = false end
  end
  local out, w = attention(m, as_value(q), as_value(k), as_value(v), need_weights, average)
  return { n = 2, out, w }
end

local function activate(act, x)
  if act == 'relu' then return O.unary('relu', x) end
  if act == 'gelu' then return O.unary('gelu', x) end
  bad('a transformer layer with an activation other than relu or gelu')
end

local function encoder_layer(m, a)
  local opts = a[2]
  if a[2] ~= nil or a[3] ~= nil then
    if not (type(opts) == 'table' and not is_value(opts) and opts.src_mask == nil and opts.src_key_padding_mask == nil
      and a[3] == nil) then
      bad('nn.TransformerEncoderLayer with a mask')
    end
  end
  if m.training and m.dropout1.p > 0 then bad('nn.TransformerEncoderLayer in training mode (call module:eval())') end
  local x = as_value(a[1])
  local function ln(norm, y) return O.layer_norm(y, #norm.normalized_shape, norm.weight, norm.bias, norm.eps) end
  local function sa(y) return (attention(m.self_attn, y, y, y, false)) end
  local function ff(y)
    return O.linear(activate(m.activation, O.linear(y, m.linear1.weight, m.linear1.bias)), m.linear2.weight,
      m.linear2.bias)
  end
  if m.norm_first then
    x = emit('Add', { x, sa(ln(m.norm1, x)) })
    x = emit('Add', { x, ff(ln(m.norm2, x)) })
  else
    x = ln(m.norm1, emit('Add', { x, sa(x) }))
    x = ln(m.norm2, emit('Add', { x, ff(x) }))
  end
  return x
end

local function encoder(m, a)
  if a[2] ~= nil or a[3] ~= nil then bad('nn.TransformerEncoder with a mask') end
  local x = as_value(a[1])
  for _, layer in ipairs(m.layers._modules and m.layers:children() or m.layers) do
    x = encoder_layer(layer, { x })
  end
  if m.norm ~= nil then x = O.layer_norm(x, #m.norm.normalized_shape, m.norm.weight, m.norm.bias, m.norm.eps) end
  return x
end

-- nn.LSTM and nn.GRU (evaluation; no projections): one ONNX LSTM/GRU per layer, both directions in it.
-- PyTorch's gate order (LSTM i f g o; GRU r z n) is rewritten into ONNX's (LSTM i o f c; GRU z r h);
-- GRU with linear_before_reset = 1, as PyTorch computes it.
local function recurrent(m, a)
  local lstm = m.mode == 'LSTM'
  if m.mode ~= 'LSTM' and m.mode ~= 'GRU' then bad(typename(m) .. ' (only LSTM and GRU are written)') end
  if (m.proj_size or 0) > 0 then bad('nn.LSTM with proj_size') end
  local x = as_value(a[1])
  if x.t:dim() ~= 3 then bad(typename(m) .. ' on an unbatched input') end
  local hx = a[2]
  local h0, c0
  if hx ~= nil then
    if lstm then
      if type(hx) ~= 'table' or is_value(hx) then bad('nn.LSTM: hx must be {h0, c0}') end
      h0, c0 = as_value(hx[1]), as_value(hx[2])
    else
      h0 = as_value(hx)
    end
  end
  local H, dirs = m.hidden_size, m.bidirectional and 2 or 1
  local order = lstm and { 1, 4, 2, 3 } or { 2, 1, 3 } -- ONNX's k-th gate is PyTorch's order[k]
  local ng = #order
  local t = torch()
  local function reorder(w)
    local parts = {}
    for k, g in ipairs(order) do parts[k] = w:narrow(1, (g - 1) * H + 1, H) end
    return t.cat(parts, 1)
  end
  if m.batch_first then x = emit('Transpose', { x }, { perm = { 1, 0, 2 } }) end
  local hs, cs = {}, {}
  for l = 0, m.num_layers - 1 do
    local W, R, B = {}, {}, {}
    for d = 0, dirs - 1 do
      local sfx = ('_l%d%s'):format(l, d == 1 and '_reverse' or '')
      W[d + 1] = reorder(m['weight_ih' .. sfx]:detach())
      R[d + 1] = reorder(m['weight_hh' .. sfx]:detach())
      if m.bias then B[d + 1] = t.cat({ reorder(m['bias_ih' .. sfx]:detach()), reorder(m['bias_hh' .. sfx]:detach()) }, 1) end
    end
    local name = S.param_names[m['weight_ih_l' .. l]] or ('rnn_l' .. l)
    name = name:gsub('weight_ih_l%d+$', '') .. 'l' .. l
    local ins = { x, const(t.stack(W, 1), name .. '_W'), const(t.stack(R, 1), name .. '_R'),
      m.bias and const(t.stack(B, 1), name .. '_B') or nil, nil, nil, nil, n = 4 }
    if h0 then
      ins[5] = nil
      ins[6] = emit('Slice', { h0, ints({ l * dirs }), ints({ (l + 1) * dirs }), ints({ 0 }) })
      ins.n = 6
      if c0 then
        ins[7] = emit('Slice', { c0, ints({ l * dirs }), ints({ (l + 1) * dirs }), ints({ 0 }) })
        ins.n = 7
      end
    end
    local attrs = { hidden_size = H, direction = dirs == 2 and 'bidirectional' or 'forward' }
    if not lstm then attrs.linear_before_reset = 1 end
    local Y, Yh, Yc = emit(lstm and 'LSTM' or 'GRU', ins, attrs, lstm and 3 or 2)
    -- (seq, dirs, batch, H) -> (seq, batch, dirs * H)
    x = O.reshape(emit('Transpose', { Y }, { perm = { 0, 2, 1, 3 } }), { Y.t:size(1), Y.t:size(3), dirs * H })
    hs[#hs + 1], cs[#cs + 1] = Yh, Yc
  end
  if m.batch_first then x = emit('Transpose', { x }, { perm = { 1, 0, 2 } }) end
  local hn = #hs == 1 and hs[1] or emit('Concat', hs, { axis = 0 })
  if not lstm then return { n = 2, x, hn } end
  local cn = #cs == 1 and cs[1] or emit('Concat', cs, { axis = 0 })
  return { n = 2, x, { n = 2, hn, cn } }
end

local ident = function(_, a) return as_value(a[1]) end
local function unary_mod(name, p1, p2) return function(m, a) return O.unary(name, a[1], p1 and m[p1], p2 and m[p2]) end end
local MODULES = {
  ['nn.Linear'] = function(m, a) return O.linear(a[1], m.weight, m.bias) end,
  ['nn.Conv1d'] = function(m, a) return conv(m, a[1], 1) end,
  ['nn.Conv2d'] = function(m, a) return conv(m, a[1], 2) end,
  ['nn.Conv3d'] = function(m, a) return conv(m, a[1], 3) end,
  ['nn.BatchNorm1d'] = function(m, a) return batch_norm(m, a[1]) end,
  ['nn.BatchNorm2d'] = function(m, a) return batch_norm(m, a[1]) end,
  ['nn.BatchNorm3d'] = function(m, a) return batch_norm(m, a[1]) end,
  ['nn.LayerNorm'] = function(m, a) return O.layer_norm(a[1], #m.normalized_shape, m.weight, m.bias, m.eps) end,
  ['nn.GroupNorm'] = function(m, a) return group_norm(m, a[1]) end,
  ['nn.ReLU'] = unary_mod('relu'), ['nn.Tanh'] = unary_mod('tanh'), ['nn.Sigmoid'] = unary_mod('sigmoid'),
  ['nn.SiLU'] = unary_mod('silu'), ['nn.Hardsigmoid'] = unary_mod('hardsigmoid'),
  ['nn.Softplus'] = unary_mod('softplus', 'beta'),
  ['nn.GELU'] = function(m, a) return O.unary(m.approximate == 'tanh' and 'gelu_tanh' or 'gelu', a[1]) end,
  ['nn.LeakyReLU'] = unary_mod('leaky_relu', 'negative_slope'),
  ['nn.ELU'] = unary_mod('elu', 'alpha'),
  ['nn.Hardtanh'] = unary_mod('hardtanh', 'min_val', 'max_val'),
  ['nn.ReLU6'] = function(_, a) return O.unary('hardtanh', a[1], 0, 6) end,
  ['nn.Softmax'] = function(m, a) return O.softmax(a[1], m.dim, false) end,
  ['nn.LogSoftmax'] = function(m, a) return O.softmax(a[1], m.dim, true) end,
  ['nn.MaxPool1d'] = function(m, a) return pool(m, a[1], 1, true) end,
  ['nn.MaxPool2d'] = function(m, a) return pool(m, a[1], 2, true) end,
  ['nn.AvgPool1d'] = function(m, a) return pool(m, a[1], 1, false) end,
  ['nn.AvgPool2d'] = function(m, a) return pool(m, a[1], 2, false) end,
  ['nn.AdaptiveAvgPool1d'] = function(m, a) return adaptive(m, a[1], 1, false) end,
  ['nn.AdaptiveAvgPool2d'] = function(m, a) return adaptive(m, a[1], 2, false) end,
  ['nn.AdaptiveMaxPool1d'] = function(m, a) return adaptive(m, a[1], 1, true) end,
  ['nn.AdaptiveMaxPool2d'] = function(m, a) return adaptive(m, a[1], 2, true) end,
  ['nn.Flatten'] = function(m, a) return O.flatten(a[1], m.start_dim, m.end_dim) end,
  ['nn.Embedding'] = function(m, a) return embedding(m, a[1]) end,
  ['nn.Identity'] = ident,
  ['nn.MultiheadAttention'] = mha,
  ['nn.TransformerEncoderLayer'] = encoder_layer,
  ['nn.TransformerEncoder'] = encoder,
  ['nn.LSTM'] = recurrent,
  ['nn.GRU'] = recurrent,
}
for _, k in ipairs({ 'Dropout', 'Dropout1d', 'Dropout2d', 'Dropout3d', 'AlphaDropout', 'FeatureAlphaDropout' }) do
  MODULES['nn.' .. k] = function(m, a)
    if m.training and (m.p or 0) > 0 then bad('nn.' .. k .. ' in training mode (call module:eval())') end
    return as_value(a[1])
  end
end
M.MODULES = MODULES

------------------------------------------------------------------------------ functions and methods
local FUNCTIONS
local function functions()
  if FUNCTIONS then return FUNCTIONS end
  local t, f = torch(), F()
  local ops = require('moontorch.fx.graph').operators
  FUNCTIONS = {}
  local function add(fn, low)
    if fn then FUNCTIONS[fn] = low; FUNCTIONS[unwrap(fn)] = low end
  end
  for _, name in ipairs({ 'add', 'sub', 'mul' }) do
    add(ops[name], function(a) return O.binary(name, a[1], a[2]) end)
    add(t[name], function(a, kw) return O.binary(name, a[1], a[2], type(a[3]) == 'table' and a[3].alpha or kw and kw.alpha) end)
  end
  add(ops.truediv, function(a) return O.binary('div', a[1], a[2]) end)
  add(t.div, function(a) return O.binary('div', a[1], a[2]) end)
  add(ops.neg, function(a) return O.unary('neg', a[1]) end)
  for _, name in ipairs({ 'relu', 'tanh', 'sigmoid', 'exp', 'log', 'sqrt', 'abs' }) do
    add(t[name], function(a) return O.unary(name, a[1]) end)
    add(f[name], function(a) return O.unary(name, a[1]) end)
  end
  add(f.gelu, function(a) return O.unary(a[2] == 'tanh' and 'gelu_tanh' or 'gelu', a[1]) end)
  add(f.silu, function(a) return O.unary('silu', a[1]) end)
  add(f.leaky_relu, function(a) return O.unary('leaky_relu', a[1], a[2]) end)
  add(t.flatten, function(a) return O.flatten(a[1], a[2], a[3]) end)
  add(t.cat, function(a) return O.cat(a[1], a[2] or 1) end)
  add(t.matmul, function(a) return O.matmul(a[1], a[2]) end)
  add(t.transpose, function(a) return O.transpose(a[1], a[2], a[3]) end)
  add(t.permute, function(a) return O.permute(a[1], a[2]) end)
  add(t.reshape, function(a) return O.reshape(a[1], a[2]) end)
  add(f.linear, function(a) return O.linear(a[1], a[2] and (a[2].t or a[2]), a[3] and (a[3].t or a[3])) end)
  add(f.softmax, function(a) return O.softmax(a[1], a[2], false) end)
  add(f.log_softmax, function(a) return O.softmax(a[1], a[2], true) end)
  add(t.softmax, function(a) return O.softmax(a[1], a[2], false) end)
  add(ops.getitem, function(a)
    if is_value(a[1]) then bad('indexing a tensor (x[i]) in an exported module') end
    return a[1][a[2]]
  end)
  return FUNCTIONS
end

local function sizes_of(...)
  local s = { ... }
  if type(s[1]) == 'table' then s = s[1] end
  return s
end
local METHODS = {
  view = function(x, ...) return O.reshape(x, sizes_of(...)) end,
  reshape = function(x, ...) return O.reshape(x, sizes_of(...)) end,
  flatten = function(x, s, e) return O.flatten(x, s, e) end,
  permute = function(x, ...) return O.permute(x, sizes_of(...)) end,
  transpose = function(x, a, b) return O.transpose(x, a, b) end,
  t = function(x) return O.transpose(x, 1, 2) end,
  contiguous = function(x) return x end,
  unsqueeze = function(x, d) return O.unsqueeze(x, d) end,
  squeeze = function(x, d) return O.squeeze(x, d) end,
  relu = function(x) return O.unary('relu', x) end,
  tanh = function(x) return O.unary('tanh', x) end,
  sigmoid = function(x) return O.unary('sigmoid', x) end,
  exp = function(x) return O.unary('exp', x) end,
  add = function(x, y) return O.binary('add', x, y) end,
  sub = function(x, y) return O.binary('sub', x, y) end,
  mul = function(x, y) return O.binary('mul', x, y) end,
  div = function(x, y) return O.binary('div', x, y) end,
  matmul = function(x, y) return O.matmul(x, y) end,
  softmax = function(x, d) return O.softmax(x, d, false) end,
  log_softmax = function(x, d) return O.softmax(x, d, true) end,
  mean = function(x, d, keep) return O.reduce('ReduceMean', x, d, keep) end,
  sum = function(x, d, keep) return O.reduce('ReduceSum', x, d, keep) end,
  size = function(x, d) if d then return x.t:size(d) end return x.t:size() end,
  dim = function(x) return x.t:dim() end,
}
M.METHODS = METHODS

------------------------------------------------------------------------------ the graph, lowered
local function lower(gm, inputs)
  return require('moontorch.interop.export').walk(gm, {
    op = OP, what = 'exported to ONNX', const = const, is_value = is_value,
    modules = MODULES, functions = functions(), methods = METHODS, all_outputs = true,
    placeholder = function(_, i) return inputs[i] end, -- (nil: an optional argument not given)
  })
end

------------------------------------------------------------------------------ written with mt_onnx_write
local function cstring(anchor, s)
  local b = ffi.new('char[?]', #s + 1, s)
  anchor[#anchor + 1] = b
  return b
end

local ONNX_TYPE = { float32 = 1, uint8 = 2, int8 = 3, int16 = 5, int32 = 6, int64 = 7, bool = 9, float16 = 10,
  float64 = 11, bfloat16 = 16 }

local function write(path, opset, inputs, outputs)
  local keep = {}
  local model = ffi.new('mt_onnx_model')
  keep[#keep + 1] = model
  model.ir_version = 8
  model.opset = opset
  model.producer = cstring(keep, 'moontorch')
  -- nodes
  local nn_ = #S.nodes
  local nodes = ffi.new('mt_onnx_node[?]', math.max(nn_, 1))
  keep[#keep + 1] = nodes
  for i, nd in ipairs(S.nodes) do
    local c = nodes[i - 1]
    c.op_type = cstring(keep, nd.op)
    c.name = cstring(keep, nd.name)
    c.domain = cstring(keep, '')
    local ins = ffi.new('const char *[?]', math.max(nd.nin, 1))
    keep[#keep + 1] = ins
    for k = 1, nd.nin do ins[k - 1] = cstring(keep, nd.inputs[k] and nd.inputs[k].name or '') end
    c.ninputs, c.inputs = nd.nin, ins
    local outs = ffi.new('const char *[?]', #nd.outs)
    keep[#keep + 1] = outs
    for k, o in ipairs(nd.outs) do outs[k - 1] = cstring(keep, o.name) end
    c.noutputs, c.outputs = #nd.outs, outs
    local names = {}
    for k in pairs(nd.attrs) do names[#names + 1] = k end
    table.sort(names)
    local attrs = ffi.new('mt_onnx_attr[?]', math.max(#names, 1))
    keep[#keep + 1] = attrs
    for k, key in ipairs(names) do
      local v, a = nd.attrs[key], attrs[k - 1]
      a.name = cstring(keep, key)
      if type(v) == 'string' then
        a.type, a.s, a.slen = 3, cstring(keep, v), #v
      elseif type(v) == 'table' then
        if FLOAT_ATTRS[key] then
          local arr = ffi.new('float[?]', math.max(#v, 1), v)
          keep[#keep + 1] = arr
          a.type, a.n, a.floats = 6, #v, arr
        else
          local arr = ffi.new('int64_t[?]', math.max(#v, 1))
          for j, x in ipairs(v) do arr[j - 1] = x end
          keep[#keep + 1] = arr
          a.type, a.n, a.ints = 7, #v, arr
        end
      elseif FLOAT_ATTRS[key] then
        a.type, a.f = 1, v
      else
        a.type, a.i = 2, v
      end
    end
    c.nattrs, c.attrs = #names, attrs
  end
  model.nnodes, model.nodes = nn_, nodes
  -- initializers
  local ni = #S.inits
  local inames = ffi.new('const char *[?]', math.max(ni, 1))
  local its = ffi.new('mt_tensor *[?]', math.max(ni, 1))
  keep[#keep + 1] = inames; keep[#keep + 1] = its
  for i, v in ipairs(S.inits) do
    inames[i - 1] = cstring(keep, v.name)
    its[i - 1] = v.t
    keep[#keep + 1] = v.t
  end
  model.ninits, model.init_names, model.inits = ni, inames, its
  -- inputs and outputs
  local function values(list)
    local arr = ffi.new('mt_onnx_value[?]', math.max(#list, 1))
    keep[#keep + 1] = arr
    for i, d in ipairs(list) do
      local c = arr[i - 1]
      c.name = cstring(keep, d.name)
      c.elem_type = ONNX_TYPE[d.t.dtype.name] or 0
      if c.elem_type == 0 then bad(("'%s' is of dtype %s, which ONNX has not"):format(d.name, d.t.dtype.name)) end
      c.dtype = -1
      local nd = d.t:dim()
      c.ndim = nd
      local dims = ffi.new('int64_t[?]', math.max(nd, 1))
      local params = ffi.new('const char *[?]', math.max(nd, 1))
      keep[#keep + 1] = dims; keep[#keep + 1] = params
      for k = 1, nd do
        dims[k - 1] = d.t:size(k)
        if d.params and d.params[k] then params[k - 1] = cstring(keep, d.params[k]) end
      end
      c.dims, c.dim_params = dims, params
    end
    return arr
  end
  model.ninputs, model.inputs = #inputs, values(inputs)
  model.noutputs, model.outputs = #outputs, values(outputs)
  if C.mt_onnx_write(model, path) ~= 0 then raise_last() end
end

------------------------------------------------------------------------------ export
-- the names of dynamic_axes' entry for one input or output: { [dim from 1] = name }
local function axes_of(entry, vname)
  if entry == nil then return nil end
  if type(entry) ~= 'table' then bad(("dynamic_axes['%s'] must be a table of dims"):format(vname)) end
  local r = {}
  for k, v in pairs(entry) do
    if type(v) == 'number' and v % 1 == 0 then -- { dim, ... }: names made up
      r[v] = ('%s_dim_%d'):format(vname, v)
    elseif type(k) == 'number' and k % 1 == 0 and type(v) == 'string' then -- { [dim] = name }
      r[k] = v
    else
      bad(("dynamic_axes['%s']: a list of dims or {[dim] = name}, dims from 1"):format(vname))
    end
  end
  return r
end

local function names_opt(opts, key, n, default)
  local l = opts[key]
  if l ~= nil and type(l) ~= 'table' then bad(key .. ' must be a table of strings') end
  local r = {}
  for i = 1, n do
    local s = l and l[i]
    if s ~= nil and type(s) ~= 'string' then bad(('%s[%d] must be a string'):format(key, i)) end
    r[i] = s or (n == 1 and default or ('%s_%d'):format(default, i))
  end
  return r
end

-- torch.onnx.export(module, example_inputs, path, opts) -> the number of ONNX nodes written
function M.export(module, example_inputs, path, opts)
  local t = torch()
  local Mod = require 'moontorch.nn.Module'
  if not Mod.is_module(module) then bad('expected a module first') end
  if is_tensor(example_inputs) then example_inputs = { example_inputs } end
  if type(example_inputs) ~= 'table' or #example_inputs == 0 then
    bad('example_inputs must be a tensor or a table of tensors')
  end
  for i, x in ipairs(example_inputs) do
    local ok = is_tensor(x)
    if type(x) == 'table' and not ok and #x > 0 then -- (a table of tensors: an LSTM's {h0, c0})
      ok = true
      for _, y in ipairs(x) do ok = ok and is_tensor(y) end
    end
    if not ok then bad(('example input %d is not a tensor (or a list of tensors)'):format(i)) end
  end
  if type(path) ~= 'string' then bad('path must be a string') end
  if opts ~= nil and type(opts) ~= 'table' then bad('options must be a table') end
  opts = opts or {}
  if C.mt_onnx_built() == 0 then
    bad('this moontorch was built without ONNX (it needs libprotobuf-c-dev, protobuf-c-compiler and '
      .. "python3-onnx's onnx.proto when it is built)")
  end
  local opset = opts.opset or 17
  if type(opset) ~= 'number' or opset % 1 ~= 0 or opset < 13 or opset > 17 then
    bad(('opset %s: opsets 13 to 17 are written'):format(tostring(opset)))
  end
  local nin = #example_inputs
  local in_names = names_opt(opts, 'input_names', nin, 'input')
  local dyn = opts.dynamic_axes
  if dyn ~= nil and type(dyn) ~= 'table' then bad('dynamic_axes must be a table {name = {dims}}') end
  dyn = dyn or {}
  local param_names = {}
  for name, p in module:named_parameters() do param_names[p] = name end
  for name, b in module:named_buffers() do param_names[b] = name end
  local gm = t.fx.symbolic_trace(module)
  S = { used = {}, consts = {}, inits = {}, nodes = {}, n = 0, opset = opset, param_names = param_names,
    transposed = {}, parts = {}, dynamic = false }
  local ins, args = {}, {} -- the graph's inputs (a table argument gives one each); forward's arguments
  local function input(x, name)
    local axes = axes_of(dyn[name], name)
    local x2 = x
    if axes then
      for d in pairs(axes) do
        if d < 1 or d > x:dim() then bad(("dynamic_axes['%s']: dim %d of a %d-dim input"):format(name, d, x:dim())) end
        if x:size(d) == 0 then bad(("dynamic_axes['%s']: dim %d is empty in the example"):format(name, d)) end
        x2 = t.cat({ x2, x2:narrow(d, 1, 1) }, d)
      end
      S.dynamic = true
    end
    if S.used[name] then bad(("input name '%s' is used twice"):format(name)) end
    S.used[name] = true
    local v = value(x, x2, name)
    v.params = axes
    ins[#ins + 1] = v
    return v
  end
  for i, x in ipairs(example_inputs) do
    if is_tensor(x) then args[i] = input(x, in_names[i])
    else
      args[i] = { n = #x }
      for j, y in ipairs(x) do args[i][j] = input(y, ('%s_%d'):format(in_names[i], j)) end
    end
  end
  local ok, res = pcall(function()
    return t.no_grad(function() return lower(gm, args) end)
  end)
  local built = S
  S = nil
  if not ok then error(res, 0) end
  S = built
  local ok2, err = pcall(function()
    local list = res
    if is_value(res) or is_tensor(res) then list = { res } end
    if type(list) ~= 'table' then bad('the module returns no tensor') end
    local nout = list.n or #list
    local out_names = names_opt(opts, 'output_names', nout, 'output')
    local outs = {}
    for i = 1, nout do
      local v = list[i]
      if v == nil then bad(('output %d is nil'):format(i)) end
      v = as_value(v)
      if v.name ~= nil or outs[v] then -- an input, a weight or an output twice: an Identity names it
        v = emit('Identity', { v })
      end
      outs[v] = true
      if S.used[out_names[i]] then bad(("output name '%s' is used already"):format(out_names[i])) end
      S.used[out_names[i]] = true
      v.name = out_names[i]
      -- symbolic sizes: those of dynamic_axes, and any other that follows the inputs'
      local axes = axes_of(dyn[out_names[i]], out_names[i]) or {}
      if S.dynamic then
        for d = 1, v.t:dim() do
          if v.t:size(d) ~= v.t2:size(d) and not axes[d] then
            -- named after the input dim it equals, where one does
            for _, x in ipairs(ins) do
              for xd, pname in pairs(x.params or {}) do
                if x.t:size(xd) == v.t:size(d) and x.t2:size(xd) == v.t2:size(d) then axes[d] = axes[d] or pname end
              end
            end
            axes[d] = axes[d] or ('%s_dim_%d'):format(out_names[i], d)
          end
        end
      end
      v.params = axes
      outs[i] = v
    end
    for name in pairs(dyn) do
      local known = false
      for _, v in ipairs(ins) do if v.name == name then known = true end end
      for _, n in ipairs(out_names) do if n == name then known = true end end
      if not known then bad(("dynamic_axes names '%s', which is no input or output"):format(tostring(name))) end
    end
    -- names for the values between
    for _, nd in ipairs(S.nodes) do
      for k, o in ipairs(nd.outs) do
        if o.name == nil then o.name = new_name(k == 1 and nd.name or (nd.name .. '_out' .. k)) end
      end
    end
    -- the graph must give the module's outputs
    local want = { t.no_grad(function() return module(unpack(example_inputs)) end) }
    for i = 1, nout do
      local w = want[i]
      if is_tensor(w) and not (w:size() and #w:size() == outs[i].t:dim()
        and t.allclose(outs[i].t, w, { rtol = 1e-4, atol = 1e-5 })) then
        bad(("the exported graph's output %d differs from the module's"):format(i))
      end
    end
    write(path, opset, ins, { unpack(outs, 1, nout) })
    return #S.nodes
  end)
  S = nil
  if not ok2 then error(err, 0) end
  return err
end

return M
