-- torch.load_t7(path [, {trust=, format=, long_size=}]): files Torch7's torch.save wrote.
--
-- core/formats/t7.c reads the file (binary with 8- or 4-byte longs, detected, or ASCII) into a
-- graph of values; this file makes Lua values of them:
--   nil, numbers, strings, booleans, tables -> themselves (shared tables shared, cycles kept);
--   torch.<Type>Tensor / Storage of every Torch7 type (CUDA's too) -> moontorch tensors (a storage:
--   a 1-D tensor of its elements; tensors over one storage share it);
--   Torch7's nn modules -> moontorch modules with their weights (the class table CLASSES below:
--   Linear, SpatialConvolution(MM), SpatialMaxPooling, (Spatial)BatchNormalization, ReLU, Tanh,
--   Sigmoid, Identity, Threshold, Sequential, Concat, View, Reshape, Dropout, rnn's SeqLSTM);
--   any other torch class -> a plain table of its fields, its class name under `__typename`;
--   a Lua function stored in the file -> refused (an error naming where it sits) unless
--   {trust = true}: its bytecode is loaded then, which runs whatever the file's author wrote
--   when the function is called (and LuaJIT does not check bytecode: trust the file wholly).
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local dtype_mod = require 'moontorch.dtype'

local C = core.C
local fail, raise_last = core.fail, core.raise_last
local wrap = T.wrap
local type, tonumber, tostring, pcall, error, ipairs, pairs = type, tonumber, tostring, pcall, error, ipairs, pairs

local M = {}

local MAX_DEPTH = 1000
local K = {
  NIL = C.MT_T7_NIL, NUMBER = C.MT_T7_NUMBER, STRING = C.MT_T7_STRING, TABLE = C.MT_T7_TABLE,
  OBJECT = C.MT_T7_OBJECT, BOOLEAN = C.MT_T7_BOOLEAN, FUNCTION = C.MT_T7_FUNCTION, TENSOR = C.MT_T7_TENSOR,
  STORAGE = C.MT_T7_STORAGE,
}

local lazy_torch, lazy_nn
local function torch_() lazy_torch = lazy_torch or require 'moontorch'; return lazy_torch end
local function nn_() lazy_nn = lazy_nn or require 'moontorch.nn'; return lazy_nn end

------------------------------------------------------------------------------ Torch7's own modules
-- Modules of Torch7's nn with no PyTorch counterpart, as moontorch modules (torch.save and
-- torch.load keep them: registered classes). Their forward is Torch7's.
local class = require 'moontorch.class'
local Module = require('moontorch.nn').Module

local function size_str(size) return table.concat(size, ', ') end

-- nn.View(sizes...) with numInputDims: x viewed as sizes, with a leading batch dimension when the
-- input has more elements than the sizes hold (Torch7's View:updateOutput)
local View = class.class('t7.View', 'nn.Module')
M.View = View
function View:__init(size, num_input_dims)
  Module.__init(self)
  self.size = size
  self.num_input_dims = num_input_dims
  local n = 1
  for _, s in ipairs(size) do if s >= 0 then n = n * s end end
  self.num_elements = n
end
function View:forward(x)
  local size, nid = self.size, self.num_input_dims
  local ind, isz = x:dim(), x:size()
  local maxdim = nid or ind
  local ine = 1
  for i = ind, ind - maxdim + 1, -1 do ine = ine * isz[i] end
  if ine % self.num_elements ~= 0 then
    fail('t7.View', ('input view (%s) and desired view (%s) do not match'):format(size_str(isz), size_str(size)))
  end
  local bsz = ine / self.num_elements
  for _, s in ipairs(size) do if s == -1 then bsz = 1 break end end
  for i = ind - maxdim, 1, -1 do bsz = bsz * isz[i] end
  if bsz == 1 and (not nid or ind <= nid) then return x:view(size) end
  local s = { bsz }
  for i, v in ipairs(size) do s[i + 1] = v end
  return x:view(s)
end
function View:extra_repr() return size_str(self.size) end

-- nn.Reshape(sizes..., batchMode): as View, the batch decided by batchMode or, when nil, by whether
-- the input holds exactly the sizes' elements with a first size other than 1
local Reshape = class.class('t7.Reshape', 'nn.Module')
M.Reshape = Reshape
function Reshape:__init(size, batch_mode)
  Module.__init(self)
  self.size = size
  self.batch_mode = batch_mode
  local n = 1
  for _, s in ipairs(size) do n = n * s end
  self.nelement = n
end
function Reshape:forward(x)
  x = x:contiguous()
  local bm = self.batch_mode
  if bm == false or (bm == nil and x:numel() == self.nelement and x:size(1) ~= 1) then return x:view(self.size) end
  local s = { x:size(1) }
  for i, v in ipairs(self.size) do s[i + 1] = v end
  return x:view(s)
end
function Reshape:extra_repr() return table.concat(self.size, 'x') end

-- nn.Concat(dimension): every child on the same input, the outputs concatenated along dimension
local Concat = class.class('t7.Concat', 'nn.Module')
M.Concat = Concat
function Concat:__init(dimension, children)
  Module.__init(self)
  self.dimension = dimension
  for i, m in ipairs(children or {}) do self:add_module(tostring(i - 1), m) end
end
function Concat:forward(x)
  local outs = {}
  for _, m in ipairs(self:children()) do outs[#outs + 1] = m(x) end
  return torch_().cat(outs, self.dimension)
end
function Concat:extra_repr() return 'dimension=' .. tostring(self.dimension) end

-- nn.Dropout with v1 semantics (v2 = false, Torch7 before 2015): no scaling in training, the output
-- scaled by 1 - p in evaluation
local Dropout1 = class.class('t7.Dropout', 'nn.Module')
M.Dropout = Dropout1
function Dropout1:__init(p)
  Module.__init(self)
  self.p = p
end
function Dropout1:forward(x)
  if self.training then
    return require('moontorch.nn.functional').dropout(x, self.p, true) * (1 - self.p)
  end
  return x * (1 - self.p)
end
function Dropout1:extra_repr() return ('p=%s, v1'):format(tostring(self.p)) end

-- rnn's nn.SeqLSTM (Element-Research/rnn, after jcjohnson/torch-rnn): a moontorch LSTM of one layer
-- whose forward returns the output sequence only, as SeqLSTM's
local SeqLSTM = class.class('t7.SeqLSTM', 'nn.Module')
M.SeqLSTM = SeqLSTM
function SeqLSTM:__init(lstm)
  Module.__init(self)
  self.lstm = lstm
end
function SeqLSTM:forward(x)
  local out = self.lstm(x)
  return out
end

------------------------------------------------------------------------------ the class table
local function dtype_of(t, what)
  if not T.is_tensor(t) then return nil end
  if not t.dtype.is_floating_point then fail('load_t7', ('%s holds %s weights'):format(what, tostring(t.dtype))) end
  return t.dtype
end
local function need(f, key, cls)
  local v = f[key]
  if v == nil then fail('load_t7', ('a %s without its field %s'):format(cls, key)) end
  return v
end
local function set(param, value, what)
  if not T.is_tensor(value) then fail('load_t7', what .. ' is not a tensor') end
  if value:numel() ~= param:numel() then
    fail('load_t7', ('%s holds %d numbers, %d expected'):format(what, value:numel(), param:numel()))
  end
  torch_().no_grad(function() param:copy_(value:reshape(param:size())) end)
end
local function training(m, f)
  if f.train == false then m:eval() end
  return m
end

local function conv(f, cls)
  local nn = nn_()
  local nin, nout = need(f, 'nInputPlane', cls), need(f, 'nOutputPlane', cls)
  local kw, kh = need(f, 'kW', cls), need(f, 'kH', cls)
  local padw = f.padW or f.padding or 0
  local padh = f.padH or f.padding or padw
  local w = need(f, 'weight', cls)
  local m = nn.Conv2d(nin, nout, { kh, kw }, { stride = { f.dH or 1, f.dW or 1 }, padding = { padh, padw },
    bias = f.bias ~= nil, dtype = dtype_of(w, cls) })
  set(m.weight, w, cls .. '.weight') -- (SpatialConvolutionMM's 2-D nOutputPlane x (nInputPlane*kH*kW) too)
  if f.bias ~= nil then set(m.bias, f.bias, cls .. '.bias') end
  return training(m, f)
end

local function batchnorm(f, cls, version, dim2)
  local nn = nn_()
  local mean = need(f, 'running_mean', cls)
  local eps = f.eps or 1e-5
  local var = f.running_var
  if version < 2 and f.running_std ~= nil then
    -- before version 2, BatchNormalization kept 1/sqrt(var + eps) (nn's BatchNormalization:read)
    var = f.running_std:pow(-2):add(-eps)
  end
  if var == nil then fail('load_t7', ('a %s without running_var (or running_std)'):format(cls)) end
  local affine = f.affine ~= false and f.weight ~= nil
  local ctor = dim2 and nn.BatchNorm2d or nn.BatchNorm1d
  local m = ctor(mean:numel(), { eps = eps, momentum = f.momentum or 0.1, affine = affine, dtype = dtype_of(mean, cls) })
  set(m.running_mean, mean, cls .. '.running_mean')
  set(m.running_var, var, cls .. '.running_var')
  if affine then
    set(m.weight, f.weight, cls .. '.weight')
    set(m.bias, need(f, 'bias', cls), cls .. '.bias')
  end
  return training(m, f)
end

local function children_of(f, cls)
  local mods = f.modules or {}
  local out = {}
  for i = 1, #mods do
    local m = mods[i]
    if not torch_().isinstance(m, Module) then
      return nil
    end
    out[i] = m
  end
  return out
end

local function sizes_of(s)
  if T.is_tensor(s) then return s:tolist() end
  return s
end

-- class name -> function(fields, version) returning a module (or nil: keep the plain table)
local CLASSES = {
  ['nn.Linear'] = function(f)
    local w = need(f, 'weight', 'nn.Linear')
    local m = nn_().Linear(w:size(2), w:size(1), { bias = f.bias ~= nil, dtype = dtype_of(w, 'nn.Linear') })
    set(m.weight, w, 'nn.Linear.weight')
    if f.bias ~= nil then set(m.bias, f.bias, 'nn.Linear.bias') end
    return training(m, f)
  end,
  ['nn.SpatialConvolution'] = function(f) return conv(f, 'nn.SpatialConvolution') end,
  ['nn.SpatialConvolutionMM'] = function(f) return conv(f, 'nn.SpatialConvolutionMM') end,
  ['nn.SpatialMaxPooling'] = function(f)
    local kw, kh = need(f, 'kW', 'nn.SpatialMaxPooling'), need(f, 'kH', 'nn.SpatialMaxPooling')
    return training(nn_().MaxPool2d({ kh, kw }, { stride = { f.dH or kh, f.dW or kw },
      padding = { f.padH or 0, f.padW or 0 }, ceil_mode = f.ceil_mode == true }), f)
  end,
  ['nn.SpatialBatchNormalization'] = function(f, v) return batchnorm(f, 'nn.SpatialBatchNormalization', v, true) end,
  ['nn.BatchNormalization'] = function(f, v) return batchnorm(f, 'nn.BatchNormalization', v, false) end,
  ['nn.ReLU'] = function(f) return training(nn_().ReLU(), f) end,
  ['nn.Tanh'] = function(f) return training(nn_().Tanh(), f) end,
  ['nn.Sigmoid'] = function(f) return training(nn_().Sigmoid(), f) end,
  ['nn.Identity'] = function(f) return training(nn_().Identity(), f) end,
  ['nn.Threshold'] = function(f)
    return training(nn_().Threshold(f.threshold or 1e-6, f.val or 0), f)
  end,
  ['nn.Sequential'] = function(f)
    local ch = children_of(f, 'nn.Sequential')
    if not ch then return nil end
    return training(nn_().Sequential(unpack(ch)), f)
  end,
  ['nn.Concat'] = function(f)
    local ch = children_of(f, 'nn.Concat')
    if not ch then return nil end
    return training(Concat(need(f, 'dimension', 'nn.Concat'), ch), f)
  end,
  ['nn.View'] = function(f) return training(View(sizes_of(need(f, 'size', 'nn.View')), f.numInputDims), f) end,
  ['nn.Reshape'] = function(f) return training(Reshape(sizes_of(need(f, 'size', 'nn.Reshape')), f.batchMode), f) end,
  ['nn.Dropout'] = function(f)
    local p = f.p or 0.5
    if f.v2 == false then return training(Dropout1(p), f) end
    return training(nn_().Dropout(p), f)
  end,
  ['nn.SeqLSTM'] = function(f)
    -- weight (D+H) x 4H with the gates in the order input, forget, output, cell; PyTorch's LSTM has
    -- weight_ih 4H x D, weight_hh 4H x H, the gates in the order input, forget, cell, output
    local D, H = f.inputsize, f.outputsize or f.hiddensize
    if not D or not H or (f.hiddensize and f.hiddensize ~= H) or f.maskzero then return nil end
    local w, b = need(f, 'weight', 'nn.SeqLSTM'), need(f, 'bias', 'nn.SeqLSTM')
    local torch = torch_()
    local function gates(t) -- columns [i f o g] -> [i f g o]
      return torch.cat({ t:narrow(-1, 1, 2 * H), t:narrow(-1, 3 * H + 1, H), t:narrow(-1, 2 * H + 1, H) }, -1)
    end
    local lstm = nn_().LSTM(D, H, { batch_first = f.batchfirst == true, dtype = dtype_of(w, 'nn.SeqLSTM') })
    set(lstm.weight_ih_l0, gates(w:narrow(1, 1, D)):t(), 'nn.SeqLSTM.weight')
    set(lstm.weight_hh_l0, gates(w:narrow(1, D + 1, H)):t(), 'nn.SeqLSTM.weight')
    set(lstm.bias_ih_l0, gates(b), 'nn.SeqLSTM.bias')
    torch.no_grad(function() lstm.bias_hh_l0:zero_() end)
    return training(SeqLSTM(lstm), f)
  end,
}
M.CLASSES = CLASSES

------------------------------------------------------------------------------ reading
local value = ffi.new('mt_t7_value')
local fp = ffi.new('mt_t7_file *[1]')

local function where(s)
  if #s.keys == 0 then return 'the object itself' end
  local parts = {}
  for i, k in ipairs(s.keys) do
    parts[i] = type(k) == 'string' and k:find('^[%a_][%w_]*$') and '.' .. k or '[' .. tostring(k) .. ']'
  end
  return table.concat(parts)
end
local function bad(s, what) fail('load_t7', ('%s: %s'):format(s.path, what)) end

local convert

local function load_function(s, bytecode, tag, upvalues_id, depth)
  if not s.trust then
    bad(s, ('a Lua function is stored at %s: refused (loading it would run code from the file); '
      .. 'torch.load_t7(path, {trust = true}) loads it if you trust the file'):format(where(s)))
  end
  local fn, err = loadstring(bytecode, '=t7')
  if not fn then bad(s, ('the function at %s does not load: %s'):format(where(s), tostring(err))) end
  local ups = convert(s, upvalues_id, depth + 1)
  if type(ups) == 'table' then
    for i, u in ipairs(ups) do
      if tag == 8 and type(u) == 'table' then
        if u.name ~= '_ENV' then debug.setupvalue(fn, i, u.value) end
        if u.id ~= nil then
          local other = s.upvalue_ids[u.id]
          if other then debug.upvaluejoin(fn, i, other[1], other[2]) else s.upvalue_ids[u.id] = { fn, i } end
        end
      else
        debug.setupvalue(fn, i, u)
      end
    end
  end
  return fn
end

convert = function(s, id, depth)
  local done = s.memo[id]
  if done ~= nil then return done end
  if depth > MAX_DEPTH then bad(s, ('nesting deeper than %d levels'):format(MAX_DEPTH)) end
  local v = value
  if C.mt_t7_get(s.f, id, v) ~= 0 then raise_last() end
  local kind = v.kind
  if kind == K.NIL then return nil
  elseif kind == K.NUMBER then return v.number
  elseif kind == K.BOOLEAN then return v.number ~= 0
  elseif kind == K.STRING then return ffi.string(v.str, v.count)
  elseif kind == K.TENSOR or kind == K.STORAGE then
    local t = wrap(v.tensor)
    s.memo[id] = t
    return t
  elseif kind == K.TABLE then
    local n = tonumber(v.count)
    local items = {}
    for i = 0, 2 * n - 1 do items[i + 1] = v.items[i] end
    local out = {}
    s.memo[id] = out
    local keys = s.keys
    for i = 1, 2 * n, 2 do
      local k = convert(s, items[i], depth + 1)
      if k == nil then bad(s, ('a table key is nil (in %s)'):format(where(s))) end
      if k ~= k then bad(s, ('a table key is NaN (in %s)'):format(where(s))) end
      keys[#keys + 1] = k
      local x = convert(s, items[i + 1], depth + 1)
      keys[#keys] = nil
      out[k] = x
    end
    return out
  elseif kind == K.FUNCTION then
    local bytecode, tag, up = ffi.string(v.str, v.count), tonumber(v.version), v.child
    local fn = load_function(s, bytecode, tag, up, depth)
    s.memo[id] = fn
    return fn
  elseif kind == K.OBJECT then
    local name, version, child = ffi.string(v.str, v.count), tonumber(v.version), v.child
    local keys = s.keys
    keys[#keys + 1] = '<' .. name .. '>'
    local fields = convert(s, child, depth + 1)
    keys[#keys] = nil
    if type(fields) ~= 'table' then bad(s, ('the fields of a %s are not a table'):format(name)) end
    local make = CLASSES[name]
    local obj
    if make then
      keys[#keys + 1] = '<' .. name .. '>'
      local ok, m = pcall(make, fields, version)
      keys[#keys] = nil
      if not ok then bad(s, ('cannot make a %s at %s: %s'):format(name, where(s), (tostring(m):gsub('^.-moontorch%.[%w_.]+: ', '')))) end
      obj = m
    end
    if obj == nil then
      obj = fields
      obj.__typename = name
    end
    s.memo[id] = obj
    return obj
  end
  bad(s, 'an unknown value')
end

-- torch.load_t7(path [, {trust = false, format = 'binary'|'ascii', long_size = 4|8}])
function M.load(path, opts)
  if type(path) ~= 'string' then fail('load_t7', 'path must be a string') end
  if opts ~= nil and type(opts) ~= 'table' then fail('load_t7', 'options must be a table') end
  opts = opts or {}
  local format = C.MT_T7_AUTO
  if opts.format == 'binary' then format = C.MT_T7_BINARY
  elseif opts.format == 'ascii' then format = C.MT_T7_ASCII
  elseif opts.format ~= nil then fail('load_t7', "format must be 'binary' or 'ascii'") end
  local long_size = opts.long_size or 0
  if long_size ~= 0 and long_size ~= 4 and long_size ~= 8 then fail('load_t7', 'long_size must be 4 or 8') end
  if C.mt_t7_open(path, format, long_size, fp) ~= 0 then raise_last() end
  local f = ffi.gc(fp[0], C.mt_t7_close)
  local s = { f = f, path = path, memo = {}, keys = {}, trust = opts.trust == true, upvalue_ids = {} }
  local ok, res = pcall(function()
    local root = C.mt_t7_root(f)
    if root == 0 then return nil end
    return convert(s, root, 0)
  end)
  C.mt_t7_close(ffi.gc(f, nil))
  if not ok then error(res, 0) end
  return res
end

return M
