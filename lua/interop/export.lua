-- torch.export(module, example_inputs, path) and torch.load_program(path): a module as a program
-- of the op table's ops that runs without Lua (core/program/program.c: mt_program_load / _run;
-- the command moontorch-run).
--
-- Export traces the module (moontorch.fx's symbolic_trace: leaf modules, functions, methods and
-- operators become graph nodes), then lowers each node to program ops while running it on the
-- example inputs: every program value is built beside the tensor it holds for those inputs (a
-- "dual"), so each value's dtype and shape is known and written down (the runner plans its memory
-- from them), and values that do not depend on an input (a weight's transpose, x:size()) are
-- folded. The lowerings call the same front doors, with the same arguments, as moontorch's own
-- modules do (F.linear's addmm on a transposed weight, batch norm's (x - mean) * (var + eps):rsqrt()
-- * w + b, multi-head attention's in-projection, heads, baddbmm, softmax, bmm, out-projection), so
-- the program computes what the module computes. The program is then written with torch.save
-- (versioned, checksummed, loading runs nothing), loaded back through the C API and run on the
-- example inputs, and its outputs compared with the module's: an export that would not reproduce
-- the module is an error.
--
-- What lowers: nn.Linear, nn.Conv1d/2d (zeros padding), nn.BatchNorm1d/2d (eval), nn.LayerNorm,
-- nn.ReLU, GELU, Tanh, Sigmoid, SiLU, LeakyReLU, ELU, Hardtanh, ReLU6, Softmax, LogSoftmax,
-- nn.MaxPool1d/2d, nn.AvgPool1d/2d, nn.AdaptiveAvgPool1d/2d, nn.Flatten, nn.Dropout* and nn.Identity
-- (evaluation: the input), nn.MultiheadAttention (self-attention without masks),
-- nn.TransformerEncoderLayer (without masks); + - * / and unary minus, torch.add/sub/mul/div,
-- relu, tanh, sigmoid, gelu, flatten, cat, matmul, softmax and the same F functions; the methods
-- view, reshape, flatten, permute, transpose, contiguous, unsqueeze, relu, tanh, sigmoid, add, mul,
-- size, dim. Anything else is an error naming it. Shapes are fixed to the example inputs'.
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local class = require 'moontorch.class'

local C = core.C
local fail, raise_last = core.fail, core.raise_last
local is_tensor = T.is_tensor
local unwrap = core.unwrap or function(f) return f end

local M = {}

local torch_, nn_, F_
local function torch() torch_ = torch_ or require 'moontorch'; return torch_ end
local function nn() nn_ = nn_ or require 'moontorch.nn'; return nn_ end
local function F() F_ = F_ or require('moontorch.nn').functional; return F_ end

local OP = 'export'
local function bad(msg) fail(OP, msg) end

------------------------------------------------------------------------------ the program being built
-- a dual: a program value id and the tensor it holds for the example inputs
local Dual = {}
Dual.__index = Dual
local function dual(v, t) return setmetatable({ v = v, t = t }, Dual) end
local function is_dual(x) return getmetatable(x) == Dual end

local B -- the builder of the export running now

local function shape_of(t)
  local s = {}
  for i = 1, t:dim() do s[i] = t:size(i) end
  return s
end

local function new_value(t)
  local id = #B.values + 1
  B.values[id] = { dtype = t.dtype.name, shape = shape_of(t) }
  return id
end

-- a constant: a tensor that depends on no input (weights, and what is computed from them alone)
local function const(t)
  local key = t
  local d = B.consts[key]
  if d then return d end
  local c = t:detach()
  if c._device_type ~= 0 then bad('the module\'s tensors must be on the CPU') end
  local id = new_value(c)
  B.constants[#B.constants + 1] = { value = id, tensor = c }
  d = dual(id, c)
  B.consts[key] = d
  return d
end

local function as_dual(x)
  if is_dual(x) then return x end
  if is_tensor(x) then return const(x) end
  bad(('expected a tensor, got %s'):format(type(x)))
end

-- node(op, inputs, attrs, result): result is the tensor the op gives for the example inputs
local function node(op, ins, attrs, result)
  if not is_tensor(result) then bad(op .. ' gave no tensor') end
  local iv = {}
  for i, d in ipairs(ins) do iv[i] = as_dual(d).v end
  local id = new_value(result)
  B.nodes[#B.nodes + 1] = { op = op, inputs = iv, outputs = { id }, attrs = attrs or {} }
  return dual(id, result)
end

-- a C dim from a Lua one (1-based; negative ones count from the end in both)
local function cdim(d) return d > 0 and d - 1 or d end

------------------------------------------------------------------------------ ops on duals
-- each mirrors the moontorch call that gives the same result (the real tensor is computed by it)
local O = {}

function O.unary(name, x, p1, p2)
  local t = x.t
  local real
  local tch = torch()
  if name == 'gelu' then real = F().gelu(t)
  elseif name == 'gelu_tanh' then real = F().gelu(t, 'tanh')
  elseif name == 'leaky_relu' then real = F().leaky_relu(t, p1)
  elseif name == 'elu' then real = F().elu(t, p1)
  elseif name == 'hardtanh' then real = F().hardtanh(t, p1, p2)
  else real = tch[name](t) end
  return node(name, { x }, { p1 = p1, p2 = p2 }, real)
end

local binary_real = { add = function(a, b) return a + b end, sub = function(a, b) return a - b end,
  mul = function(a, b) return a * b end, div = function(a, b) return a / b end }
function O.binary(name, a, b)
  if type(a) == 'number' and type(b) == 'number' then return binary_real[name](a, b) end
  if type(b) == 'number' or type(a) == 'number' then
    local rev = type(a) == 'number'
    local x, s = rev and b or a, rev and a or b
    x = as_dual(x)
    local kind = s % 1 == 0 and 1 or 2
    local real = rev and binary_real[name](s, x.t) or binary_real[name](x.t, s)
    return node(name, { x }, { scalar = s, scalar_kind = kind, reverse = rev and 1 or 0 }, real)
  end
  a, b = as_dual(a), as_dual(b)
  return node(name, { a, b }, {}, binary_real[name](a.t, b.t))
end

function O.transpose(x, d0, d1) return node('transpose', { x }, { dim0 = cdim(d0), dim1 = cdim(d1) }, x.t:transpose(d0, d1)) end
function O.view(x, sizes) return node('view', { x }, { sizes = sizes }, x.t:view(sizes)) end
function O.reshape(x, sizes) return node('reshape', { x }, { sizes = sizes }, x.t:reshape(sizes)) end
function O.contiguous(x)
  if x.t:is_contiguous() then return x end -- (mt_contiguous gives the tensor itself)
  return node('contiguous', { x }, {}, x.t:contiguous())
end
function O.narrow(x, dim, start, length)
  return node('narrow', { x }, { dim = cdim(dim), start = start - 1, length = length }, x.t:narrow(dim, start, length))
end
function O.flatten(x, s, e)
  s, e = s or 1, e or -1
  return node('flatten', { x }, { start = cdim(s), ['end'] = cdim(e) }, x.t:flatten(s, e))
end
function O.permute(x, dims)
  local c = {}
  for i, d in ipairs(dims) do c[i] = cdim(d) end
  return node('permute', { x }, { dims = c }, x.t:permute(dims))
end
function O.unsqueeze(x, d) return node('unsqueeze', { x }, { dim = cdim(d) }, x.t:unsqueeze(d)) end
function O.addmm(c, a, b, beta, alpha)
  beta, alpha = beta or 1, alpha or 1
  return node('addmm', { c, a, b }, { beta = beta, alpha = alpha },
    torch().addmm(c.t, a.t, b.t, { beta = beta, alpha = alpha }))
end
function O.matmul(a, b) return node('matmul', { a, b }, {}, a.t:matmul(b.t)) end
function O.bmm(a, b) return node('bmm', { a, b }, {}, torch().bmm(a.t, b.t)) end
function O.baddbmm(c, a, b, beta, alpha)
  return node('baddbmm', { c, a, b }, { beta = beta, alpha = alpha },
    torch().baddbmm(c.t, a.t, b.t, { beta = beta, alpha = alpha }))
end
function O.softmax(x, dim, log)
  local real = log and x.t:log_softmax(dim) or x.t:softmax(dim)
  return node(log and 'log_softmax' or 'softmax', { x }, { dim = cdim(dim) }, real)
end
function O.cat(list, dim)
  local ts = {}
  for i, d in ipairs(list) do list[i] = as_dual(d); ts[i] = list[i].t end
  return node('cat', list, { dim = cdim(dim) }, torch().cat(ts, dim))
end

-- F.linear, as moontorch computes it (lua/nn/functional.lua)
function O.linear(x, w, b)
  local wt = O.transpose(as_dual(w), 1, 2)
  if b ~= nil then
    local nd = x.t:dim()
    if nd == 2 then return O.addmm(as_dual(b), x, wt) end
    if nd == 3 and x.t:is_contiguous() then
      local s1, s2 = x.t:size(1), x.t:size(2)
      local y = O.addmm(as_dual(b), O.view(x, { s1 * s2, x.t:size(3) }), wt)
      return O.view(y, { s1, s2, w:size(1) })
    end
    return O.binary('add', O.matmul(x, wt), as_dual(b))
  end
  return O.matmul(x, wt)
end

function O.layer_norm(x, normalized_shape, w, b, eps)
  local dt = x.t.dtype
  if not (dt == torch().float32 or dt == torch().float64) then bad('layer_norm of ' .. tostring(dt) .. ' tensors') end
  local ins = { x }
  if w ~= nil or b ~= nil then
    if w == nil or b == nil then bad('a layer norm with a weight but no bias (or the other way round)') end
    ins = { x, as_dual(w), as_dual(b) }
  end
  local real = F().layer_norm(x.t, normalized_shape, w, b, eps)
  return node('layer_norm', ins, { nnorm = #normalized_shape, eps = eps }, real)
end

------------------------------------------------------------------------------ leaf modules
local function list_of(v, n)
  if type(v) == 'table' then
    local r = {}
    for i = 1, n do r[i] = v[i] end
    return r
  end
  local r = {}
  for i = 1, n do r[i] = v end
  return r
end

local function conv(m, x, n)
  if m.padding_mode ~= 'zeros' then bad(('%s with padding_mode %s'):format(torch().typename(m), m.padding_mode)) end
  if x.t:dim() ~= n + 2 then bad(torch().typename(m) .. ' on an unbatched input') end
  local padding = m.padding
  if type(padding) == 'string' then
    if padding == 'valid' then padding = 0
    else
      local pads = {}
      for i = 1, n do
        local total = list_of(m.dilation, n)[i] * (m.weight:size(i + 2) - 1)
        if total % 2 == 1 then bad(torch().typename(m) .. " with padding='same' and an even kernel") end
        pads[i] = total / 2
      end
      padding = pads
    end
  end
  local attrs = { stride = list_of(m.stride, n), padding = list_of(padding, n), dilation = list_of(m.dilation, n),
    groups = m.groups }
  local ins = { x, const(m.weight) }
  if m.bias ~= nil then ins[3] = const(m.bias) end
  return node('convolution', ins, attrs, m(x.t))
end

local function pool(m, x, n, max)
  local attrs = { kernel = list_of(m.kernel_size, n), stride = list_of(m.stride or m.kernel_size, n),
    padding = list_of(m.padding or 0, n), ceil_mode = m.ceil_mode and 1 or 0 }
  if max then
    if m.return_indices then bad('MaxPool with return_indices') end
    attrs.dilation = list_of(m.dilation or 1, n)
  else
    attrs.count_include_pad = m.count_include_pad == false and 0 or 1
    attrs.divisor_override = m.divisor_override or 0
  end
  local real = m(x.t)
  if n == 1 then -- moontorch pools 1-d as 2-d over an unsqueezed input (lua/nn/pooling.lua)
    local u = O.unsqueeze(x, -2)
    attrs.kernel, attrs.stride, attrs.padding = { 1, attrs.kernel[1] }, { 1, attrs.stride[1] }, { 0, attrs.padding[1] }
    if max then attrs.dilation = { 1, attrs.dilation[1] } end
    local y = node(max and 'max_pool' or 'avg_pool', { u }, attrs, max and F().max_pool2d(u.t, attrs.kernel,
      { stride = attrs.stride, padding = attrs.padding, dilation = attrs.dilation, ceil_mode = m.ceil_mode })
      or F().avg_pool2d(u.t, attrs.kernel, { stride = attrs.stride, padding = attrs.padding, ceil_mode = m.ceil_mode,
      count_include_pad = m.count_include_pad ~= false, divisor_override = m.divisor_override }))
    local r = node('reshape', { y }, { sizes = shape_of(real) }, y.t:reshape(shape_of(real)))
    return r
  end
  return node(max and 'max_pool' or 'avg_pool', { x }, attrs, real)
end

local function batch_norm(m, x)
  if m.training or m.running_mean == nil then bad(torch().typename(m) .. ' in training mode (call module:eval())') end
  -- layers.batch_norm, not training: (x - mean) * (var + eps):rsqrt() [* w] [+ b], each a (1, C, 1...) view
  local nd = x.t:dim()
  local c = x.t:size(2)
  local shape = { 1, c }
  for _ = 3, nd do shape[#shape + 1] = 1 end
  local mean = const(m.running_mean:reshape(shape))
  local inv = const((m.running_var:reshape(shape) + m.eps):rsqrt())
  local y = O.binary('mul', O.binary('sub', x, mean), inv)
  if m.weight ~= nil then y = O.binary('mul', y, const(m.weight:reshape(shape))) end
  if m.bias ~= nil then y = O.binary('add', y, const(m.bias:reshape(shape))) end
  return y
end

-- multi_head_attention_forward's path for self-attention without masks, in evaluation
local function self_attention(m, x)
  local t = torch()
  if not m._qkv_same_embed_dim or m.bias_k ~= nil or m.add_zero_attn then
    bad('MultiheadAttention with separate projections, bias_k/bias_v or add_zero_attn')
  end
  local batch_first = m.batch_first and x.t:dim() == 3
  if x.t:dim() ~= 3 then bad('MultiheadAttention on an unbatched input') end
  if batch_first then x = O.transpose(x, 1, 2) end
  local L, N, E = x.t:size(1), x.t:size(2), x.t:size(3)
  local H = m.num_heads
  local hd = E / H
  -- project(): a transposed (non-contiguous) input whose transpose is contiguous is projected as such
  local qkv
  if x.t:dim() == 3 and not x.t:is_contiguous() and x.t:transpose(1, 2):is_contiguous() then
    qkv = O.transpose(O.linear(O.transpose(x, 1, 2), m.in_proj_weight, m.in_proj_bias), 1, 2)
  else
    qkv = O.linear(x, m.in_proj_weight, m.in_proj_bias)
  end
  -- chunk(3, -1)
  local q, k, v = O.narrow(qkv, -1, 1, E), O.narrow(qkv, -1, E + 1, E), O.narrow(qkv, -1, 2 * E + 1, E)
  local BH = N * H
  q = O.transpose(O.view(O.contiguous(q), { L, BH, hd }), 1, 2)
  k = O.transpose(O.view(O.contiguous(k), { k.t:size(1), BH, hd }), 1, 2)
  v = O.transpose(O.view(O.contiguous(v), { v.t:size(1), BH, hd }), 1, 2)
  -- attend(q, k, v, nil, 1 / sqrt(hd)): baddbmm of a 0-dim zero with beta 0, softmax, bmm
  local kt = O.transpose(k, 2, 3)
  local scale = 1 / math.sqrt(hd)
  local w
  if scale == 1 then
    w = O.bmm(q, kt)
  else
    w = O.baddbmm(const(t.zeros({}, { dtype = q.t.dtype })), q, kt, 0, scale)
  end
  w = O.softmax(w, -1)
  local out = O.bmm(w, v)
  out = O.view(O.contiguous(O.transpose(out, 1, 2)), { L * N, E })
  out = O.linear(out, m.out_proj.weight, m.out_proj.bias)
  out = O.view(out, { L, N, out.t:size(2) })
  if batch_first then out = O.transpose(out, 1, 2) end
  return out
end

local function mha(m, args)
  local q, k, v, opts = args[1], args[2], args[3], args[4]
  if not (rawequal(q, k) and rawequal(k, v)) then bad('MultiheadAttention other than self-attention (query, key and value the same)') end
  if type(opts) == 'table' and not is_dual(opts) and (opts.attn_mask ~= nil or opts.key_padding_mask ~= nil) then
    bad('MultiheadAttention with a mask')
  end
  if m.training and m.dropout > 0 then bad('MultiheadAttention in training mode (call module:eval())') end
  local out = self_attention(m, q)
  local need_weights = not (type(opts) == 'table' and not is_dual(opts) and opts.need_weights == false)
  if need_weights then bad('MultiheadAttention with need_weights (pass {need_weights = false})') end
  return { n = 2, out, nil }
end

local function activate(act, x)
  if act == 'relu' then return O.unary('relu', x) end
  if act == 'gelu' then return O.unary('gelu', x) end
  bad('a TransformerEncoderLayer with a custom activation')
end

local function encoder_layer(m, args)
  if args[2] ~= nil or args[3] ~= nil or (type(args[2]) == 'table') then bad('TransformerEncoderLayer with a mask') end
  if m.training and m.dropout1.p > 0 then bad('TransformerEncoderLayer in training mode (call module:eval())') end
  local x = args[1]
  local function ln(norm, y) return O.layer_norm(y, norm.normalized_shape, norm.weight, norm.bias, norm.eps) end
  local function sa(y) return self_attention(m.self_attn, y) end
  local function ff(y) return O.linear(activate(m.activation, O.linear(y, m.linear1.weight, m.linear1.bias)),
    m.linear2.weight, m.linear2.bias) end
  if m.norm_first then
    x = O.binary('add', x, sa(ln(m.norm1, x)))
    x = O.binary('add', x, ff(ln(m.norm2, x)))
  else
    x = ln(m.norm1, O.binary('add', x, sa(x)))
    x = ln(m.norm2, O.binary('add', x, ff(x)))
  end
  return x
end

local ident = function(_, a) return a[1] end
local function unary_mod(name, p1, p2) return function(m, a) return O.unary(name, a[1], p1 and m[p1], p2 and m[p2]) end end
local MODULES = {
  ['nn.Linear'] = function(m, a) return O.linear(a[1], m.weight, m.bias) end,
  ['nn.Conv1d'] = function(m, a) return conv(m, a[1], 1) end,
  ['nn.Conv2d'] = function(m, a) return conv(m, a[1], 2) end,
  ['nn.BatchNorm1d'] = function(m, a) return batch_norm(m, a[1]) end,
  ['nn.BatchNorm2d'] = function(m, a) return batch_norm(m, a[1]) end,
  ['nn.LayerNorm'] = function(m, a) return O.layer_norm(a[1], m.normalized_shape, m.weight, m.bias, m.eps) end,
  ['nn.ReLU'] = unary_mod('relu'), ['nn.Tanh'] = unary_mod('tanh'), ['nn.Sigmoid'] = unary_mod('sigmoid'),
  ['nn.SiLU'] = unary_mod('silu'),
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
  ['nn.AdaptiveAvgPool2d'] = function(m, a)
    local real = m(a[1].t)
    return node('adaptive_avg_pool', { a[1] }, { sizes = { real:size(-2), real:size(-1) } }, real)
  end,
  ['nn.AdaptiveAvgPool1d'] = function(m, a)
    local real = m(a[1].t)
    return node('adaptive_avg_pool', { a[1] }, { sizes = { real:size(-1) } }, real)
  end,
  ['nn.Flatten'] = function(m, a) return O.flatten(a[1], m.start_dim, m.end_dim) end,
  ['nn.Identity'] = ident,
  ['nn.MultiheadAttention'] = mha,
  ['nn.TransformerEncoderLayer'] = encoder_layer,
}
for _, k in ipairs({ 'Dropout', 'Dropout1d', 'Dropout2d', 'Dropout3d', 'AlphaDropout', 'FeatureAlphaDropout' }) do
  MODULES['nn.' .. k] = function(m, a)
    if m.training and (m.p or 0) > 0 then bad('nn.' .. k .. ' in training mode (call module:eval())') end
    return a[1]
  end
end
M.MODULES = MODULES

------------------------------------------------------------------------------ functions and methods
local FUNCTIONS -- target function -> lowering(args, kwargs)
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
    add(t[name], function(a) return O.binary(name, a[1], a[2]) end)
  end
  add(ops.truediv, function(a) return O.binary('div', a[1], a[2]) end)
  add(t.div, function(a) return O.binary('div', a[1], a[2]) end)
  add(ops.neg, function(a) return O.unary('neg', as_dual(a[1])) end)
  for _, name in ipairs({ 'relu', 'tanh', 'sigmoid' }) do
    add(t[name], function(a) return O.unary(name, as_dual(a[1])) end)
    add(f[name], function(a) return O.unary(name, as_dual(a[1])) end)
  end
  add(f.gelu, function(a) return O.unary(a[2] == 'tanh' and 'gelu_tanh' or 'gelu', as_dual(a[1])) end)
  add(f.silu, function(a) return O.unary('silu', as_dual(a[1])) end)
  add(t.flatten, function(a) return O.flatten(as_dual(a[1]), a[2], a[3]) end)
  add(t.cat, function(a) return O.cat(a[1], a[2] or 1) end)
  add(t.matmul, function(a) return O.matmul(as_dual(a[1]), as_dual(a[2])) end)
  add(f.linear, function(a) return O.linear(as_dual(a[1]), a[2].t or a[2], a[3] and (a[3].t or a[3])) end)
  add(f.softmax, function(a) return O.softmax(as_dual(a[1]), a[2], false) end)
  add(f.log_softmax, function(a) return O.softmax(as_dual(a[1]), a[2], true) end)
  add(ops.getitem, function(a)
    if is_dual(a[1]) then bad('indexing a tensor (x[i]) in an exported module') end
    return a[1][a[2]]
  end)
  return FUNCTIONS
end

local METHODS = {
  view = function(x, ...) local s = { ... }; if type(s[1]) == 'table' then s = s[1] end; return O.view(x, s) end,
  reshape = function(x, ...) local s = { ... }; if type(s[1]) == 'table' then s = s[1] end; return O.reshape(x, s) end,
  flatten = function(x, s, e) return O.flatten(x, s, e) end,
  permute = function(x, ...) local d = { ... }; if type(d[1]) == 'table' then d = d[1] end; return O.permute(x, d) end,
  transpose = function(x, a, b) return O.transpose(x, a, b) end,
  contiguous = function(x) return O.contiguous(x) end,
  unsqueeze = function(x, d) return O.unsqueeze(x, d) end,
  relu = function(x) return O.unary('relu', x) end,
  tanh = function(x) return O.unary('tanh', x) end,
  sigmoid = function(x) return O.unary('sigmoid', x) end,
  add = function(x, y) return O.binary('add', x, y) end,
  mul = function(x, y) return O.binary('mul', x, y) end,
  softmax = function(x, d) return O.softmax(x, d, false) end,
  size = function(x, d) if d then return x.t:size(d) end return x.t:size() end,
  dim = function(x) return x.t:dim() end,
}
M.METHODS = METHODS

------------------------------------------------------------------------------ the graph, lowered
-- walk(gm, b): gm's graph lowered node by node through a backend b, this file's (the program) or
-- onnx_export.lua's: b.op (the name in its errors), b.what ('exported', 'exported to ONNX'),
-- b.placeholder(n, i) (the value of the i-th input: nil for an optional one not given), b.const(t),
-- b.is_value(x), b.modules (by typename), b.functions (by function), b.methods (by name);
-- b.module_consts: tensors passed to a module become constants; b.module_empty_kwargs: a module
-- gets the kwargs table even when empty; b.all_outputs: several outputs give all of them (else the first)
function M.walk(gm, b)
  local G = require 'moontorch.fx.graph'
  local GM = require 'moontorch.fx.graph_module'
  local function fail_b(msg) fail(b.op, msg) end
  local env = {}
  local n_in = 0
  local result
  local function val(a)
    return G.map_arg(a, function(x)
      local v = env[x]
      if v == nil then fail_b('a node read before its value: ' .. tostring(x)) end
      if v == false then return nil end
      return v
    end)
  end
  for _, n in ipairs(gm.graph:nodes()) do
    local args = val(n.args)
    local kwargs = n.kwargs and val(n.kwargs) or nil
    local nargs = args.n or #args
    local r
    if n.op == 'placeholder' then
      n_in = n_in + 1
      r = b.placeholder(n, n_in)
    elseif n.op == 'get_attr' then
      r = GM.fetch(gm, n.target)
      if is_tensor(r) then r = b.const(r) end
    elseif n.op == 'call_module' then
      local m = GM.fetch(gm, n.target)
      local name = torch().typename(m)
      local low = b.modules[name]
      if not low then fail_b(('%s (at %s) cannot be %s'):format(tostring(name), n.target, b.what)) end
      local a = {}
      for i = 1, nargs do a[i] = (b.module_consts and is_tensor(args[i])) and b.const(args[i]) or args[i] end
      if kwargs and (b.module_empty_kwargs or next(kwargs)) then a[nargs + 1] = kwargs end
      r = low(m, a)
    elseif n.op == 'call_function' then
      local low = b.functions[n.target] or b.functions[unwrap(n.target)]
      if not low then
        local fname = G.wrapped_name(n.target) or tostring(n.target)
        fail_b(('the function %s (node %s) cannot be %s'):format(fname, n.name, b.what))
      end
      r = low(args, kwargs)
    elseif n.op == 'call_method' then
      local low = b.methods[n.target]
      if not low then fail_b(('the method %s (node %s) cannot be %s'):format(tostring(n.target), n.name, b.what)) end
      local self_ = args[1]
      if is_tensor(self_) then self_ = b.const(self_) end
      if not b.is_value(self_) then fail_b(('the method %s called on a %s'):format(n.target, type(self_))) end
      r = low(self_, unpack(args, 2, nargs))
    elseif n.op == 'output' then
      result = (b.all_outputs and nargs > 1) and args or args[1]
      break
    else
      fail_b('a graph node of op ' .. tostring(n.op))
    end
    if r == nil then r = false end
    env[n] = r
  end
  return result
end

local function lower(gm, inputs)
  return M.walk(gm, {
    op = OP, what = 'exported', const = const, is_value = is_dual,
    modules = MODULES, functions = functions(), methods = METHODS,
    module_consts = true, module_empty_kwargs = true,
    placeholder = function(n, i)
      local t = inputs[i]
      if t == nil and i > #inputs then return nil end -- an optional argument not given (a mask): nil in the program too
      if not is_tensor(t) then bad(('example input %d (%s) is not a tensor'):format(i, tostring(n.target))) end
      local id = new_value(t)
      B.inputs[#B.inputs + 1] = { name = tostring(n.target), value = id }
      return dual(id, t)
    end,
  })
end

------------------------------------------------------------------------------ export
-- torch.export(module, example_inputs, path) -> the program's outputs for the example inputs
function M.export(module, example_inputs, path, opts)
  local t = torch()
  local Mod = require 'moontorch.nn.Module'
  if not Mod.is_module(module) then bad('expected a module first') end
  if is_tensor(example_inputs) then example_inputs = { example_inputs } end
  if type(example_inputs) ~= 'table' or #example_inputs == 0 then
    bad('example_inputs must be a tensor or a table of tensors')
  end
  if type(path) ~= 'string' then bad('path must be a string') end
  if opts ~= nil and type(opts) ~= 'table' then bad('options must be a table') end
  opts = opts or {}
  local gm = t.fx.symbolic_trace(module)
  B = { values = {}, inputs = {}, constants = {}, nodes = {}, consts = {} }
  local ok, res = pcall(function()
    return t.no_grad(function() return lower(gm, example_inputs) end)
  end)
  local built = B
  B = nil
  if not ok then error(res, 0) end
  -- the outputs: one tensor or a table of them (returned as that many values)
  local outs, list = {}, res
  if is_dual(res) or is_tensor(res) then list = { res } end
  if type(list) ~= 'table' then bad('the module returns no tensor') end
  B = built
  for i = 1, (list.n or #list) do
    local d = list[i]
    if is_tensor(d) then d = const(d) end
    if not is_dual(d) then B = nil; bad(('output %d is not a tensor'):format(i)) end
    outs[i] = d.v
  end
  B = nil
  local program = { format = 'moontorch.program', version = 1, values = built.values, inputs = built.inputs,
    constants = built.constants, nodes = built.nodes, outputs = outs }
  t.save(program, path)
  -- the program, run from C on the example inputs, must give the module's outputs
  if opts.check ~= false then
    local p = M.load_program(path)
    local got = { p(unpack(example_inputs)) }
    local want = { t.no_grad(function() return module(unpack(example_inputs)) end) }
    for i = 1, #outs do
      local w = want[i]
      if is_tensor(w) and not t.allclose(got[i], w, { rtol = 1e-5, atol = 1e-6 }) then
        bad(('the exported program\'s output %d differs from the module\'s (largest difference %g)')
          :format(i, (got[i] - w):abs():max():item()))
      end
    end
  end
  return #built.nodes
end

------------------------------------------------------------------------------ load_program
local Program = class.class('torch.Program', 'nn.Module')
M.Program = Program
local pp = ffi.new('mt_program *[1]')
local io = ffi.new('mt_program_io')

function Program:__init(path)
  require('moontorch.nn').Module.__init(self)
  if C.mt_program_load(path, pp) ~= 0 then raise_last() end
  rawset(self, '_program', ffi.gc(pp[0], C.mt_program_free))
  self.path = path
end
function Program:forward(...)
  local p = rawget(self, '_program')
  local n, m = C.mt_program_num_inputs(p), C.mt_program_num_outputs(p)
  local args = { ... }
  if select('#', ...) ~= n then fail('Program', ('%s takes %d inputs, got %d'):format(self.path, n, select('#', ...))) end
  local ins = ffi.new('mt_tensor *[?]', n + 1)
  for i = 1, n do
    if not is_tensor(args[i]) then fail('Program', ('input %d is not a tensor'):format(i)) end
    ins[i - 1] = args[i]
  end
  local outs = ffi.new('mt_tensor *[?]', m)
  if C.mt_program_run(p, ins, n, outs, m) ~= 0 then raise_last() end
  local r = {}
  for i = 1, m do r[i] = T.wrap(outs[i - 1]) end
  return unpack(r, 1, m)
end
function Program:extra_repr() return ("'%s', %d inputs, %d outputs"):format(self.path,
  C.mt_program_num_inputs(rawget(self, '_program')), C.mt_program_num_outputs(rawget(self, '_program'))) end

-- torch.load_program(path) -> a module that runs the program
function M.load_program(path)
  if type(path) ~= 'string' then fail('load_program', 'path must be a string') end
  return Program(path)
end

return M
