-- torch.onnx.load(path): an ONNX model (PyTorch's torch.onnx.export, other frameworks') as a runnable
-- torch.fx.GraphModule. The file is read in C (core/formats/onnx.c: protobuf-c, every tensor checked);
-- here each ONNX node becomes a call_function node of the GraphModule's graph whose target is the
-- moontorch spelling of the ONNX op (OPS below; fx names them onnx.<OpType>), with the node's
-- attributes as its first argument. Initializers and Constant nodes become buffers of the module
-- (named after the ONNX names, made identifiers). Axes are ONNX's (from 0) turned into moontorch's
-- (from 1); index values likewise. An op outside OPS, or an attribute form it does not take, is an
-- error naming the op and the node.
local ffi = require 'ffi'
local core = require 'moontorch.ffi'

local C = core.C
local fail, raise_last = core.fail, core.raise_last

local M = {}
local OP = 'onnx.load'

local torch_, F_
local function torch() torch_ = torch_ or require 'moontorch'; return torch_ end
local function F() F_ = F_ or require('moontorch.nn').functional; return F_ end

------------------------------------------------------------------------------ helpers for the ops
-- an error of a node's op while the GraphModule runs (or is built): onnx.<OpType>: <node>: <what>, raised
-- at the user's line like every moontorch error
local function opfail(A, msg)
  if type(A) == 'string' then fail('onnx.' .. A, msg) end
  fail('onnx.' .. (A._op or '?'), ('%s: %s'):format(A._node or '?', msg))
end

-- an ONNX axis (from 0, or negative) as a moontorch dim (from 1, or negative)
local function ax(a) return a >= 0 and a + 1 or a end

local function ints_of(t) -- an int64 tensor (shape, axes ...) as a Lua list
  if t == nil then return nil end
  local l = t:reshape({ -1 }):tolist()
  for i, v in ipairs(l) do l[i] = math.floor(v) end
  return l
end

local function spatial_opts(A, x, kernel)
  local n = #kernel
  local strides = A.strides or {}
  local dil = A.dilations or {}
  local pads = A.pads or {}
  local s, d, pb, pe = {}, {}, {}, {}
  for i = 1, n do
    s[i] = strides[i] or 1
    d[i] = dil[i] or 1
    pb[i] = pads[i] or 0
    pe[i] = pads[n + i] or 0
  end
  local auto = A.auto_pad or 'NOTSET'
  if auto == 'SAME_UPPER' or auto == 'SAME_LOWER' then
    for i = 1, n do
      local inp = x:size(x:dim() - n + i)
      local out = math.ceil(inp / s[i])
      local total = math.max(0, (out - 1) * s[i] + (kernel[i] - 1) * d[i] + 1 - inp)
      local small = math.floor(total / 2)
      if auto == 'SAME_UPPER' then pb[i], pe[i] = small, total - small else pb[i], pe[i] = total - small, small end
    end
  elseif auto == 'VALID' then
    for i = 1, n do pb[i], pe[i] = 0, 0 end
  elseif auto ~= 'NOTSET' then
    opfail(A, 'auto_pad ' .. tostring(auto))
  end
  local sym = true
  for i = 1, n do if pb[i] ~= pe[i] then sym = false end end
  return s, d, pb, pe, sym
end

-- F.pad's list (last dim first) for pads before/after of the spatial dims
local function pad_list(pb, pe)
  local l = {}
  for i = #pb, 1, -1 do l[#l + 1] = pb[i]; l[#l + 1] = pe[i] end
  return l
end

local function one(v) return (#v == 1) and v[1] or v end

------------------------------------------------------------------------------ the ops
-- OPS[op_type](A, inputs...) with A the node's attributes (A._node its name, A._opset)
local OPS = {}

OPS.Identity = function(_, x) return x end
OPS.Dropout = function(_, x) return x end -- (an inference graph: evaluation)
for onnx, name in pairs({ Relu = 'relu', Sigmoid = 'sigmoid', Tanh = 'tanh', Exp = 'exp', Log = 'log', Sqrt = 'sqrt',
  Neg = 'neg', Abs = 'abs', Erf = 'erf', Reciprocal = 'reciprocal', Floor = 'floor', Ceil = 'ceil', Sin = 'sin',
  Cos = 'cos', Not = 'logical_not', Sign = 'sign' }) do
  OPS[onnx] = function(_, x) return torch()[name](x) end
end
OPS.LeakyRelu = function(A, x) return F().leaky_relu(x, A.alpha or 0.01) end
OPS.Elu = function(A, x) return F().elu(x, A.alpha or 1) end
OPS.Softplus = function(_, x) return F().softplus(x) end
OPS.HardSigmoid = function(A, x) return (x * (A.alpha or 0.2) + (A.beta or 0.5)):clamp(0, 1) end
OPS.Gelu = function(A, x) return F().gelu(x, A.approximate == 'tanh' and 'tanh' or nil) end
OPS.Clip = function(A, x, lo, hi)
  lo = lo ~= nil and lo:item() or A.min
  hi = hi ~= nil and hi:item() or A.max
  return torch().clamp(x, lo, hi)
end

local function int_like(t) return not t.dtype.is_floating_point end
OPS.Add = function(_, a, b) return torch().add(a, b) end
OPS.Sub = function(_, a, b) return torch().sub(a, b) end
OPS.Mul = function(_, a, b) return torch().mul(a, b) end
OPS.Div = function(_, a, b)
  if int_like(a) and int_like(b) then return torch().div(a, b, { rounding_mode = 'trunc' }) end
  return torch().div(a, b)
end
OPS.Pow = function(_, a, b)
  if b:dim() == 0 and b:item() == 2 then return a * a end
  return torch().pow(a, b:to(a.dtype))
end
OPS.Equal = function(_, a, b) return torch().eq(a, b) end
OPS.Less = function(_, a, b) return torch().lt(a, b) end
OPS.Greater = function(_, a, b) return torch().gt(a, b) end
OPS.Where = function(_, c, a, b) return torch().where(c, a, b) end
OPS.Max = function(_, a, b, ...) if ... then opfail('Max', 'more than two inputs') end return b and torch().maximum(a, b) or a end
OPS.Min = function(_, a, b, ...) if ... then opfail('Min', 'more than two inputs') end return b and torch().minimum(a, b) or a end

OPS.MatMul = function(_, a, b) return torch().matmul(a, b) end
OPS.Gemm = function(A, a, b, c)
  local alpha, beta = A.alpha or 1, A.beta or 1
  if (A.transA or 0) ~= 0 then a = a:t() end
  if (A.transB or 0) ~= 0 and alpha == 1 and beta == 1 then
    return F().linear(a, b, c) -- PyTorch's nn.Linear, exported: the same computation
  end
  if (A.transB or 0) ~= 0 then b = b:t() end
  local y = torch().matmul(a, b)
  if alpha ~= 1 then y = y * alpha end
  if c ~= nil then y = y + (beta ~= 1 and c * beta or c) end
  return y
end

OPS.Conv = function(A, x, w, b)
  local n = x:dim() - 2
  local kernel = A.kernel_shape or {}
  for i = 1, n do kernel[i] = kernel[i] or w:size(i + 2) end
  local s, d, pb, pe, sym = spatial_opts(A, x, kernel)
  if not sym then x = F().pad(x, pad_list(pb, pe)); for i = 1, n do pb[i] = 0 end end
  local conv = ({ F().conv1d, F().conv2d, F().conv3d })[n]
  if not conv then opfail(A, ('a convolution of %d spatial dims'):format(n)) end
  return conv(x, w, { bias = b, stride = one(s), padding = one(pb), dilation = one(d), groups = A.group or 1 })
end

local function pool(A, x, max)
  local kernel = A.kernel_shape
  if not kernel then opfail(A, 'no kernel_shape') end
  local n = #kernel
  local s, d, pb, pe, sym = spatial_opts(A, x, kernel)
  if not sym then
    x = F().pad(x, pad_list(pb, pe), { value = max and -math.huge or 0 })
    for i = 1, n do pb[i] = 0 end
    if not max and (A.count_include_pad or 0) == 0 then
      opfail(A, 'AveragePool with uneven pads that count_include_pad = 0 leaves out')
    end
  end
  local ceil = (A.ceil_mode or 0) ~= 0
  if max then
    if (A.storage_order or 0) ~= 0 then opfail(A, 'MaxPool with storage_order 1') end
    local fn = ({ F().max_pool1d, F().max_pool2d, F().max_pool3d })[n]
    return fn(x, one(kernel), { stride = one(s), padding = one(pb), dilation = one(d), ceil_mode = ceil })
  end
  for i = 1, n do if d[i] ~= 1 then opfail(A, 'AveragePool with dilations') end end
  local fn = ({ F().avg_pool1d, F().avg_pool2d, F().avg_pool3d })[n]
  return fn(x, one(kernel), { stride = one(s), padding = one(pb), ceil_mode = ceil,
    count_include_pad = (A.count_include_pad or 0) ~= 0 })
end
OPS.MaxPool = function(A, x) return pool(A, x, true) end
OPS.AveragePool = function(A, x) return pool(A, x, false) end
local function spatial_dims(x)
  local d = {}
  for i = 3, x:dim() do d[#d + 1] = i end
  return d
end
OPS.GlobalAveragePool = function(_, x) return x:mean(spatial_dims(x), true) end
OPS.GlobalMaxPool = function(_, x) return x:amax(spatial_dims(x), true) end

OPS.BatchNormalization = function(A, x, scale, bias, mean, var)
  if (A.training_mode or 0) ~= 0 then opfail(A, 'BatchNormalization in training mode') end
  return F().batch_norm(x, mean, var, { weight = scale, bias = bias, training = false, eps = A.epsilon or 1e-5 })
end
OPS.LayerNormalization = function(A, x, scale, bias)
  local axis = A.axis or -1
  if axis < 0 then axis = x:dim() + axis end
  local shape = {}
  for i = axis + 1, x:dim() do shape[#shape + 1] = x:size(i) end
  return F().layer_norm(x, shape, { weight = scale, bias = bias, eps = A.epsilon or 1e-5 })
end
OPS.InstanceNormalization = function(A, x, scale, bias)
  return F().instance_norm(x, { weight = scale, bias = bias, eps = A.epsilon or 1e-5 })
end

local function softmax(A, x, log)
  local fn = log and 'log_softmax' or 'softmax'
  if (A._opset or 13) >= 13 then return x[fn](x, ax(A.axis or -1)) end
  -- before opset 13: over the dims from axis on, flattened
  local axis = A.axis or 1
  if axis < 0 then axis = x:dim() + axis end
  local shape = x:size()
  local lead = 1
  for i = 1, axis do lead = lead * shape[i] end
  return x:reshape({ lead, -1 })[fn](x:reshape({ lead, -1 }), 2):reshape(shape)
end
OPS.Softmax = function(A, x) return softmax(A, x, false) end
OPS.LogSoftmax = function(A, x) return softmax(A, x, true) end

OPS.Flatten = function(A, x)
  local axis = A.axis or 1
  if axis < 0 then axis = x:dim() + axis end
  local lead = 1
  for i = 1, axis do lead = lead * x:size(i) end
  return x:reshape({ lead, -1 })
end
OPS.Reshape = function(A, x, shape)
  local s = ints_of(shape)
  if (A.allowzero or 0) == 0 then
    for i, v in ipairs(s) do if v == 0 then s[i] = x:size(i) end end
  end
  return x:reshape(s)
end
OPS.Transpose = function(A, x)
  local perm = {}
  if A.perm then
    for i, p in ipairs(A.perm) do perm[i] = p + 1 end
  else
    for i = 1, x:dim() do perm[i] = x:dim() - i + 1 end
  end
  return x:permute(perm)
end
OPS.Concat = function(A, ...)
  local list = { ... }
  return torch().cat(list, ax(A.axis))
end
local function axes_of(A, t)
  local a = t ~= nil and ints_of(t) or A.axes
  return a
end
OPS.Unsqueeze = function(A, x, axes)
  local a = axes_of(A, axes)
  if not a then opfail(A, 'Unsqueeze without axes') end
  local r = x:dim() + #a
  local norm = {}
  for i, v in ipairs(a) do norm[i] = v < 0 and v + r or v end
  table.sort(norm)
  for _, v in ipairs(norm) do x = x:unsqueeze(v + 1) end
  return x
end
OPS.Squeeze = function(A, x, axes)
  local a = axes_of(A, axes)
  if not a then return x:squeeze() end
  local norm = {}
  for i, v in ipairs(a) do norm[i] = v < 0 and v + x:dim() or v end
  table.sort(norm, function(p, q) return p > q end)
  for _, v in ipairs(norm) do x = x:squeeze(v + 1) end
  return x
end
OPS.Shape = function(A, x)
  local s = {}
  for i = 1, x:dim() do s[i] = x:size(i) end
  local r = torch().tensor(s, { dtype = torch().int64 })
  if A.start or A['end'] then
    local n = x:dim()
    local a, b = A.start or 0, A['end'] or n
    if a < 0 then a = a + n end
    if b < 0 then b = b + n end
    a, b = math.max(0, math.min(n, a)), math.max(0, math.min(n, b))
    r = r:narrow(1, a + 1, math.max(0, b - a))
  end
  return r
end
OPS.Size = function(_, x) return torch().tensor(x:numel(), { dtype = torch().int64 }) end
OPS.Gather = function(A, x, idx)
  local axis = A.axis or 0
  if axis < 0 then axis = x:dim() + axis end
  local n = x:size(axis + 1)
  local i = idx:to(torch().int64)
  i = torch().where(i:lt(0), i + n, i) + 1 -- positions from 1
  if i:dim() == 0 then return x:select(axis + 1, i:item()) end
  local r = x:index_select(axis + 1, i:reshape({ -1 }))
  local shape = {}
  for d = 1, axis do shape[#shape + 1] = x:size(d) end
  for d = 1, i:dim() do shape[#shape + 1] = i:size(d) end
  for d = axis + 2, x:dim() do shape[#shape + 1] = x:size(d) end
  return r:reshape(shape)
end
OPS.Slice = function(A, x, starts, ends, axes, steps)
  local st, en = ints_of(starts) or A.starts, ints_of(ends) or A.ends
  local axs = ints_of(axes) or A.axes
  local sp = ints_of(steps)
  for k = 1, #st do
    local a = axs and axs[k] or k - 1
    if a < 0 then a = a + x:dim() end
    if sp and sp[k] ~= 1 then opfail(A, 'Slice with a step other than 1') end
    local n = x:size(a + 1)
    local s, e = st[k], en[k]
    if s < 0 then s = s + n end
    if e < 0 then e = e + n end
    s, e = math.max(0, math.min(n, s)), math.max(0, math.min(n, e))
    x = x:narrow(a + 1, s + 1, math.max(0, e - s))
  end
  return x
end
OPS.Expand = function(_, x, shape)
  local s = ints_of(shape)
  -- ONNX broadcasts the two shapes (a 1 in `shape` keeps x's size)
  local r = math.max(#s, x:dim())
  local out = {}
  for i = 1, r do
    local a = s[#s - r + i] or 1
    local b = x:dim() - r + i >= 1 and x:size(x:dim() - r + i) or 1
    out[i] = (a == 1) and b or a
  end
  return x:expand(out)
end
OPS.Pad = function(A, x, pads, value, axes)
  local p = ints_of(pads) or A.pads
  if axes ~= nil then opfail(A, 'Pad with axes') end
  local n = x:dim()
  local pb, pe = {}, {}
  for i = 1, n do pb[i], pe[i] = p[i] or 0, p[n + i] or 0 end
  -- F.pad's list runs from the last dim; dims without padding at the front are left out
  local first = 1
  while first < n and pb[first] == 0 and pe[first] == 0 do first = first + 1 end
  local l = {}
  for i = n, first, -1 do l[#l + 1] = pb[i]; l[#l + 1] = pe[i] end
  local mode = A.mode or 'constant'
  if mode == 'edge' then mode = 'replicate' end
  if mode == 'constant' then
    local v = value ~= nil and value:item() or (A.value or 0)
    return F().pad(x, l, { value = v })
  end
  return F().pad(x, l, { mode = mode })
end
local ONNX_DTYPES = { [1] = 'float32', [2] = 'uint8', [3] = 'int8', [5] = 'int16', [6] = 'int32', [7] = 'int64',
  [9] = 'bool', [10] = 'float16', [11] = 'float64', [16] = 'bfloat16' }
OPS.Cast = function(A, x)
  local name = ONNX_DTYPES[A.to or -1]
  if not name then opfail(A, ('Cast to ONNX type %s'):format(tostring(A.to))) end
  return x:to(torch()[name])
end
OPS.ConstantOfShape = function(A, shape)
  local v = A.value
  local s = ints_of(shape)
  if v == nil then return torch().zeros(s) end
  return torch().full(s, v:reshape({ -1 })[1]:item(), { dtype = v.dtype })
end
local function reduce(name)
  return function(A, x, axes)
    local a = axes_of(A, axes)
    local keep = (A.keepdims or 1) ~= 0
    if a == nil or #a == 0 then
      if (A.noop_with_empty_axes or 0) ~= 0 then return x end
      a = {}
      for i = 0, x:dim() - 1 do a[#a + 1] = i end
    end
    local dims = {}
    for i, v in ipairs(a) do dims[i] = ax(v) end
    return x[name](x, dims, keep)
  end
end
OPS.ReduceMean = reduce('mean')
OPS.ReduceSum = reduce('sum')
OPS.ReduceMax = reduce('amax')
OPS.ReduceMin = reduce('amin')



------------------------------------------------------------------------------ recurrent ops
-- LSTM and GRU with ONNX's default activations (sigmoid, tanh): every step written out with the
-- ops above. Gates: ONNX's orders (LSTM i o f c; GRU z r h). They give several outputs: a table
-- { Y, Y_h [, Y_c] }, which the reader's getitem nodes take apart (MULTI below).
local function rnn_check(A, what)
  if A.activations or A.activation_alpha or A.activation_beta then opfail(A, what .. ' with activations other than the default') end
  if A.clip then opfail(A, what .. ' with clip') end
  if (A.layout or 0) ~= 0 then opfail(A, what .. ' with layout 1') end
  if (A.input_forget or 0) ~= 0 then opfail(A, what .. ' with input_forget') end
end
local function rnn_dirs(A)
  local d = A.direction or 'forward'
  if d == 'forward' then return { false } elseif d == 'reverse' then return { true }
  elseif d == 'bidirectional' then return { false, true } end
  opfail(A, 'direction ' .. tostring(d))
end
-- run(A, X, W, R, B, seq_lens, h0, c0, gates, step): Y (seq, dirs, batch, H), Y_h, Y_c
local function rnn_run(A, X, W, R, B, seq_lens, h0, c0, ngates, step)
  if seq_lens ~= nil then opfail(A, 'sequence_lens (every sequence must be as long as the input)') end
  local t = torch()
  local H = A.hidden_size or R:size(3)
  local seq, batch = X:size(1), X:size(2)
  local ys, hs, cs = {}, {}, {}
  for d, reverse in ipairs(rnn_dirs(A)) do
    local Wd, Rd = W:select(1, d), R:select(1, d)
    local Wb, Rb
    if B ~= nil then
      Wb, Rb = B:select(1, d):narrow(1, 1, ngates * H), B:select(1, d):narrow(1, ngates * H + 1, ngates * H)
    else
      Wb = t.zeros({ ngates * H }, { dtype = X.dtype }); Rb = Wb
    end
    local h = h0 ~= nil and h0:select(1, d) or t.zeros({ batch, H }, { dtype = X.dtype })
    local c = c0 ~= nil and c0:select(1, d) or t.zeros({ batch, H }, { dtype = X.dtype })
    local xs = F().linear(X, Wd, Wb) -- (seq, batch, gates * H)
    local out = {}
    for k = 1, seq do
      local s = reverse and seq - k + 1 or k
      h, c = step(xs:select(1, s), h, c, Rd, Rb, H)
      out[s] = h
    end
    ys[d] = t.stack(out, 1)
    hs[d], cs[d] = h, c
  end
  return t.stack(ys, 2), t.stack(hs, 1), cs[1] ~= nil and t.stack(cs, 1) or nil
end
OPS.LSTM = function(A, X, W, R, B, seq_lens, h0, c0, P)
  rnn_check(A, 'LSTM')
  if P ~= nil then opfail(A, 'LSTM with peepholes (P)') end
  local Y, Yh, Yc = rnn_run(A, X, W, R, B, seq_lens, h0, c0, 4, function(x, h, c, Rd, Rb, H)
    local g = x + F().linear(h, Rd, Rb)
    local i, o = g:narrow(2, 1, H):sigmoid(), g:narrow(2, H + 1, H):sigmoid()
    local f, cc = g:narrow(2, 2 * H + 1, H):sigmoid(), g:narrow(2, 3 * H + 1, H):tanh()
    c = f * c + i * cc
    return o * c:tanh(), c
  end)
  return { Y, Yh, Yc }
end
OPS.GRU = function(A, X, W, R, B, seq_lens, h0)
  rnn_check(A, 'GRU')
  local before = (A.linear_before_reset or 0) ~= 0
  local Y, Yh = rnn_run(A, X, W, R, B, seq_lens, h0, nil, 3, function(x, h, _, Rd, Rb, H)
    local Rzr, Rh = Rd:narrow(1, 1, 2 * H), Rd:narrow(1, 2 * H + 1, H)
    local bzr, bh = Rb:narrow(1, 1, 2 * H), Rb:narrow(1, 2 * H + 1, H)
    local zr = (x:narrow(2, 1, 2 * H) + F().linear(h, Rzr, bzr)):sigmoid()
    local z, r = zr:narrow(2, 1, H), zr:narrow(2, H + 1, H)
    local n
    if before then n = (x:narrow(2, 2 * H + 1, H) + r * F().linear(h, Rh, bh)):tanh()
    else n = (x:narrow(2, 2 * H + 1, H) + F().linear(r * h, Rh, bh)):tanh() end
    return (1 - z) * n + z * h, nil
  end)
  return { Y, Yh }
end
local MULTI = { LSTM = 3, GRU = 2 } -- ops giving several outputs (as a table)

------------------------------------------------------------------------------ the reader
local function cstr(p) return p ~= nil and ffi.string(p) or '' end

local function attributes(node, opset, name)
  local A = { _node = name, _opset = opset, _op = cstr(node.op_type) }
  local T = require 'moontorch.tensor'
  for k = 0, node.nattrs - 1 do
    local a = node.attrs[k]
    local key = cstr(a.name)
    local ty = a.type
    local v
    if ty == 1 then v = tonumber(a.f)
    elseif ty == 2 then v = tonumber(a.i)
    elseif ty == 3 then v = ffi.string(a.s, a.slen)
    elseif ty == 4 then
      C.mt_tensor_retain(a.t)
      v = T.wrap(a.t)
    elseif ty == 6 then
      v = {}
      for i = 0, tonumber(a.n) - 1 do v[i + 1] = tonumber(a.floats[i]) end
    elseif ty == 7 then
      v = {}
      for i = 0, tonumber(a.n) - 1 do v[i + 1] = tonumber(a.ints[i]) end
    elseif ty == 5 then
      fail(OP, ('%s (%s): attribute %s holds a graph (If, Loop and Scan are not supported)'):format(name,
        cstr(node.op_type), key))
    else
      fail(OP, ('%s (%s): attribute %s is of a type not read (%d)'):format(name, cstr(node.op_type), key, ty))
    end
    A[key] = v
  end
  return A
end

-- an ONNX name as an attribute name of the module
local function ident(s, used)
  local base = s:gsub('[^%w_]', '_')
  if not base:match('^[%a_]') then base = 'v_' .. base end
  local n, k = base, 1
  while used[n] do k = k + 1; n = base .. '_' .. k end
  used[n] = true
  return n
end

-- torch.onnx.load(path) -> GraphModule
function M.load(path)
  if type(path) ~= 'string' then fail(OP, 'path must be a string') end
  local t = torch()
  local fx = t.fx
  local G = require 'moontorch.fx.graph'
  local T = require 'moontorch.tensor'
  local pm = ffi.new('mt_onnx_model *[1]')
  if C.mt_onnx_read(path, pm) ~= 0 then raise_last() end
  local m = ffi.gc(pm[0], C.mt_onnx_free)
  local opset = tonumber(m.opset)
  if opset == 0 then opset = 13 end
  local root = t.nn.Module()
  local graph = fx.Graph()
  local env, used = {}, {}
  local function buffer(name, tensor)
    local attr = ident(name, used)
    root:register_buffer(attr, tensor)
    env[name] = graph:get_attr(attr)
  end
  for i = 0, m.ninits - 1 do
    C.mt_tensor_retain(m.inits[i])
    buffer(cstr(m.init_names[i]), T.wrap(m.inits[i]))
  end
  for i = 0, m.ninputs - 1 do
    local v = m.inputs[i]
    local name = cstr(v.name)
    if env[name] == nil then -- (older exporters list the initializers among the inputs)
      if v.elem_type ~= 0 and v.dtype < 0 then
        fail(OP, ("%s: input '%s' is of an ONNX type moontorch has not (%d)"):format(path, name, v.elem_type))
      end
      env[name] = graph:placeholder(ident(name, used))
    end
  end
  for i = 0, m.nnodes - 1 do
    local node = m.nodes[i]
    local op_type, domain = cstr(node.op_type), cstr(node.domain)
    local nname = cstr(node.name)
    if nname == '' then nname = ('node %d'):format(i + 1) end
    if domain ~= '' and domain ~= 'ai.onnx' then
      fail(OP, ("%s: %s: the op %s of domain '%s' is not supported"):format(path, nname, op_type, domain))
    end
    local A = attributes(node, opset, nname)
    if op_type == 'Constant' then
      local v = A.value
      if v == nil then
        if A.value_float then v = t.tensor(A.value_float)
        elseif A.value_int then v = t.tensor(A.value_int, { dtype = t.int64 })
        elseif A.value_floats then v = t.tensor(A.value_floats)
        elseif A.value_ints then v = t.tensor(A.value_ints, { dtype = t.int64 })
        else fail(OP, ('%s: %s: a Constant of a kind not read'):format(path, nname)) end
      end
      buffer(cstr(node.outputs[0]), v)
    else
      local fn = OPS[op_type]
      if not fn then fail(OP, ('%s: %s: the ONNX op %s is not supported'):format(path, nname, op_type)) end
      local args = { n = node.ninputs + 1, A }
      for k = 0, node.ninputs - 1 do
        local iname = cstr(node.inputs[k])
        if iname ~= '' then
          local x = env[iname]
          if x == nil then fail(OP, ("%s: %s (%s) reads '%s', which nothing before it makes"):format(path, nname, op_type, iname)) end
          args[k + 2] = x
        end
      end
      local out = graph:call_function(fn, args)
      for k = 0, node.noutputs - 1 do
        local oname = cstr(node.outputs[k])
        if oname ~= '' then
          if MULTI[op_type] and k < MULTI[op_type] then
            env[oname] = graph:call_function(G.operators.getitem, { n = 2, out, k + 1 })
          elseif k == 0 then env[oname] = out
          else env[oname] = { unsupported = op_type, index = k + 1, node = nname } end
        end
      end
    end
  end
  local outs = {}
  for i = 0, m.noutputs - 1 do
    local name = cstr(m.outputs[i].name)
    local x = env[name]
    if x == nil then fail(OP, ("%s: the graph's output '%s' is made by no node"):format(path, name)) end
    outs[#outs + 1] = x
  end
  for _, n in ipairs(graph:nodes()) do
    for k = 1, (n.args.n or #n.args) do
      local a = n.args[k]
      if type(a) == 'table' and a.unsupported then
        fail(OP, ('%s: %s (%s): its output %d is used; only the first output of an op is'):format(path, a.node,
          a.unsupported, a.index))
      end
    end
  end
  for _, x in ipairs(outs) do
    if type(x) == 'table' and x.unsupported then
      fail(OP, ('%s: %s (%s): its output %d is used; only the first output of an op is'):format(path, x.node,
        x.unsupported, x.index))
    end
  end
  graph:output(unpack(outs))
  local gm = fx.GraphModule(root, graph, 'OnnxModule')
  gm:eval()
  return gm
end

M._OPS = OPS -- (torch.onnx.export computes what it writes with them)

-- torch.onnx.export(module, example_inputs, path, opts): lua/interop/onnx_export.lua
function M.export(...) return require('moontorch.interop.onnx_export').export(...) end

-- fx names the targets onnx.<OpType> (and finds them by that name when a GraphModule is loaded)
do
  local G = require 'moontorch.fx.graph'
  for name, fn in pairs(OPS) do G.register_wrapped(fn, 'onnx.' .. name) end
end

return M
