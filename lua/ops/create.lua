-- Creation, conversion and element access: tensor, zeros/ones/full/empty (+ _like), arange,
-- linspace, logspace, eye, copy_, to, clone, item, tolist.
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local dtype = require 'moontorch.dtype'

local C = core.C
local raise_last, fail = core.raise_last, core.fail
local methods = T.methods
local is_tensor, take, outp, szbuf = T.is_tensor, T.take, T.outp, T.szbuf
local parse_sizes, new_empty, resolve_dtype, int_arg = T.parse_sizes, T.new_empty, T.resolve_dtype, T.int_arg
local by_id = dtype.by_id
local type, floor, select = type, math.floor, select

local M = {}
local torch

local function default_dtype() return by_id[C.mt_get_default_dtype()] end

local function check_number(x, op, what)
  if type(x) ~= 'number' then fail(op, ('%s must be a number, got %s'):format(what, T.describe(x))) end
end

local function apply(t, opts)
  if opts then return T.apply_opts(t, opts) end
  return t
end

function M.empty(...)
  local n, opts = parse_sizes('empty', ...)
  return apply((new_empty('empty', n, opts)), opts)
end

local function filled(name, value)
  return function(...)
    local n, opts = parse_sizes(name, ...)
    local t = new_empty(name, n, opts)
    if C.mt_fill_(t, value) ~= 0 then raise_last() end
    return apply(t, opts)
  end
end
-- zeros(size..., {dtype=, device=, requires_grad=}): a new tensor of that size filled with 0;
-- the size as numbers or one table (torch.zeros(2, 3), torch.zeros({2, 3}))
M.zeros = filled('zeros', 0)
-- ones(size..., {dtype=, device=, requires_grad=}): a new tensor of that size filled with 1
M.ones = filled('ones', 1)

-- full(size, value, opts): size is a table; dtype from the value when not given
function M.full(size, value, opts)
  if type(size) == 'number' or type(size) == 'cdata' and not is_tensor(size) then size = { size } end
  if type(size) ~= 'table' then fail('full', 'size must be a table of integers, got ' .. T.describe(size)) end
  local n = parse_sizes('full', size)
  if type(value) ~= 'number' and type(value) ~= 'boolean' then
    fail('full', 'fill_value must be a number or a boolean, got ' .. T.describe(value))
  end
  local dt = opts and opts.dtype and resolve_dtype(opts.dtype, 'full')
  if not dt then
    if type(value) == 'boolean' then dt = torch.bool
    elseif value == floor(value) and value > -9.2e18 and value < 9.2e18 then dt = torch.int64
    else dt = default_dtype() end
  end
  if type(value) == 'boolean' then value = value and 1 or 0 end
  if C.mt_tensor_empty(szbuf, n, dt.id, T.check_device(opts, 'full'), outp) ~= 0 then T.raise_as('full') end
  local t = take()
  if C.mt_fill_(t, value) ~= 0 then raise_last() end
  return apply(t, opts)
end

local function like(name, fill)
  return function(t, a, b)
    if not is_tensor(t) then fail(name, 'expected a tensor, got ' .. core.typeof(t)) end
    local value, opts = a, b
    if fill == 'value' then
      if type(a) ~= 'number' and type(a) ~= 'boolean' then fail(name, 'fill value must be a number, got ' .. core.typeof(a)) end
    else
      value, opts = fill, a
    end
    T.options(opts, name)
    local dt = opts and opts.dtype and resolve_dtype(opts.dtype, name) or by_id[t._dtype]
    local dev = T.check_device(opts, name)
    if opts and opts.device ~= nil then -- t's sizes on another device
      for i = 0, t._ndim - 1 do szbuf[i] = t._sizes[i] end
      if C.mt_tensor_empty(szbuf, t._ndim, dt.id, dev, outp) ~= 0 then raise_last() end
    elseif C.mt_tensor_empty_like(t, dt.id, outp) ~= 0 then
      raise_last()
    end
    local r = take()
    if value ~= nil then
      if type(value) == 'boolean' then value = value and 1 or 0 end
      if C.mt_fill_(r, value) ~= 0 then raise_last() end
    end
    return apply(r, opts)
  end
end
M.empty_like = like('empty_like', nil)
M.zeros_like = like('zeros_like', 0)
M.ones_like = like('ones_like', 1)
M.full_like = like('full_like', 'value')

-- Nested Lua tables (numbers, booleans, one-element tensors) -> tensor. Every table must be a
-- sequence (keys 1..n, and an `n` field only if it equals n, as table.pack leaves), all tables at
-- one depth of the same length, and every leaf at the same depth; any other input is an error
-- that names torch.tensor's op and the position (`data[2][1]`), never a silently smaller tensor.
-- Booleans among numbers count as 1 and 0, as in PyTorch ([True, 2] is [1, 2]); only booleans
-- make a bool tensor.
local MAX_DIMS = 16
local path = {} -- path[d]: the position, along dim d, of the table being walked (for messages)
local seen_number = false -- a number (not a boolean) was met among the leaves
local seq_len, cold = T.seq_len, T.cold

-- the shape, from the first element at each depth (fill then checks every table, these too);
-- returns its dim count
local function infer_shape(op, data, shape)
  local nd = 0
  local x = data
  while type(x) == 'table' do
    nd = nd + 1
    if nd > MAX_DIMS then fail(op, ('too many dimensions: data is nested deeper than %d'):format(MAX_DIMS)) end
    local n = #x
    shape[nd] = n
    if n == 0 then break end
    path[nd] = 1
    x = x[1]
  end
  return nd
end

-- write the leaves under x (at `depth`) into buf[pos * step ...]; returns the next pos. step 0
-- checks without keeping (every value lands on buf[0]). A one-element tensor as a leaf gives its
-- value; anything else that is not a number or a boolean is an error (lua/argcheck.lua).
local function fill(op, x, depth, nd, shape, buf, pos, step)
  local n = shape[depth]
  if type(x) ~= 'table' or seq_len(x) ~= n then cold().data_row_fail(op, x, depth, n, path) end
  if depth == nd then
    local bools = 0
    for i = 1, n do
      local v = x[i]
      if type(v) ~= 'number' then
        if type(v) == 'boolean' then
          v = v and 1 or 0
          bools = bools + 1
        elseif is_tensor(v) and v._numel == 1 then
          v = v:item()
          if type(v) == 'boolean' then
            v = v and 1 or 0
            bools = bools + 1
          end
        else
          cold().data_leaf_fail(op, v, x, i, depth, path)
        end
      end
      buf[(pos + i - 1) * step] = v
    end
    if bools < n then seen_number = true end
    return pos + n
  end
  for i = 1, n do
    path[depth] = i
    local xi = x[i]
    if xi == nil then T.seq_fail(x, op, cold().path_name(path, depth)) end
    pos = fill(op, xi, depth + 1, nd, shape, buf, pos, step)
  end
  return pos
end

local scratch = ffi.new('double[1]')
-- the buffer of small data (reused), and its size; larger data is written into a float64 tensor
local SMALL = 1024
local small = ffi.new('double[?]', SMALL)
local FLOAT64 = 7
local dbl_ptr = ffi.typeof('double *')
-- a flat array larger than this is checked before its buffer is allocated (ragged data must not
-- first allocate the product of its first rows' lengths)
local CHECK_FIRST = 2 ^ 24

local function check_opts(opts, op)
  if opts ~= nil and (type(opts) ~= 'table' or dtype.is_dtype(opts) or dtype.is_device(opts)) then
    fail(op, 'expected an options table {dtype=, device=, requires_grad=} as the last argument, got ' ..
      (type(opts) == 'table' and tostring(opts) or T.describe(opts)))
  end
end

local function from_data(op, data, opts)
  check_opts(opts, op)
  if is_tensor(data) then
    local r = data:detach():clone()
    if opts and opts.dtype then r = r:to(resolve_dtype(opts.dtype, op)) end
    if opts and opts.device ~= nil then r = r:to(dtype.device(opts.device)) end
    return apply(r, opts)
  end
  local tdata = type(data)
  if tdata ~= 'table' and tdata ~= 'number' and tdata ~= 'boolean' then
    fail(op, 'could not infer dtype of ' .. T.describe(data) .. ' (expected a number, a boolean or a table of them)')
  end
  local shape = {}
  local nd = infer_shape(op, data, shape)
  local n = 1
  for i = 1, nd do n = n * shape[i] end
  seen_number = false
  local buf, t64
  if nd == 0 then
    buf = scratch
    if tdata == 'boolean' then buf[0] = data and 1 or 0 else buf[0] = data; seen_number = true end
  elseif n > 0 then
    if n > CHECK_FIRST then fill(op, data, 1, nd, shape, scratch, 0, 0) end
    if n <= SMALL then
      buf = small
    else
      -- a float64 tensor as the buffer: no zeroing, and it is the result when float64 is asked
      szbuf[0] = n
      if C.mt_tensor_empty(szbuf, 1, FLOAT64, nil, outp) ~= 0 then raise_last() end
      t64 = take()
      buf = ffi.cast(dbl_ptr, t64._data)
    end
    fill(op, data, 1, nd, shape, buf, 0, 1)
  else
    -- no leaves: every table down to the first empty one must still be a sequence of the shape
    fill(op, data, 1, nd, shape, scratch, 0, 0)
  end
  local dt = opts and opts.dtype and resolve_dtype(opts.dtype, op)
  if not dt then dt = (n > 0 and not seen_number) and torch.bool or default_dtype() end
  local dev = T.check_device(opts, op)
  for i = 1, nd do szbuf[i - 1] = shape[i] end
  local t
  if t64 and dt.id == FLOAT64 then
    if C.mt_view(t64, szbuf, nd, outp) ~= 0 then raise_last() end
    t = take()
  else
    if C.mt_tensor_empty(szbuf, nd, dt.id, nil, outp) ~= 0 then raise_last() end
    t = take()
    if n > 0 and C.mt_tensor_from_doubles(t, buf, n) ~= 0 then raise_last() end
  end
  if dev ~= nil then -- the values made on the CPU, then carried to the device
    if C.mt_to(t, -1, dev, 0, outp) ~= 0 then raise_last() end
    t = take()
  end
  return apply(t, opts)
end

function M.tensor(data, opts) return from_data('tensor', data, opts) end
M.as_tensor = function(data, opts)
  if is_tensor(data) then
    check_opts(opts, 'as_tensor')
    if opts and opts.dtype then return data:to(resolve_dtype(opts.dtype, 'as_tensor')) end
    return data
  end
  return from_data('as_tensor', data, opts)
end
M.scalar_tensor = function(v, opts)
  if type(v) ~= 'number' and type(v) ~= 'boolean' then
    fail('scalar_tensor', 'expected a number or a boolean, got ' .. T.describe(v))
  end
  return from_data('scalar_tensor', v, opts)
end

-- arange(end) / arange(start, end[, step]) [, opts]
function M.arange(a, b, c, d)
  local opts
  if type(b) == 'table' then opts, b = b, nil
  elseif type(c) == 'table' then opts, c = c, nil
  elseif type(d) == 'table' then opts = d end
  local start, stop, step
  if b == nil then start, stop, step = 0, a, 1 else start, stop, step = a, b, c or 1 end
  if type(start) ~= 'number' or type(stop) ~= 'number' or type(step) ~= 'number' then
    fail('arange', ('start, end and step must be numbers, got %s, %s and %s')
      :format(T.describe(start), T.describe(stop), T.describe(step)))
  end
  local dt = opts and opts.dtype and resolve_dtype(opts.dtype, 'arange')
  if not dt then
    local integral = start == floor(start) and stop == floor(stop) and step == floor(step)
    dt = integral and torch.int64 or default_dtype()
  end
  if C.mt_arange(start, stop, step, dt.id, T.check_device(opts, 'arange'), outp) ~= 0 then raise_last() end
  return apply(take(), opts)
end

function M.linspace(start, stop, steps, opts)
  local dt = opts and opts.dtype and resolve_dtype(opts.dtype, 'linspace') or default_dtype()
  check_number(start, 'linspace', 'start'); check_number(stop, 'linspace', 'end')
  steps = int_arg(steps, 'linspace', 'steps')
  if C.mt_linspace(start, stop, steps, dt.id, T.check_device(opts, 'linspace'), outp) ~= 0 then raise_last() end
  return apply(take(), opts)
end

function M.logspace(start, stop, steps, base, opts)
  if type(base) == 'table' then opts, base = base, nil end
  local dt = opts and opts.dtype and resolve_dtype(opts.dtype, 'logspace') or default_dtype()
  check_number(start, 'logspace', 'start'); check_number(stop, 'logspace', 'end')
  steps = int_arg(steps, 'logspace', 'steps')
  if base ~= nil then check_number(base, 'logspace', 'base') end
  local dev = T.check_device(opts, 'logspace')
  if C.mt_logspace(start, stop, steps, base or 10, dt.id, dev, outp) ~= 0 then raise_last() end
  return apply(take(), opts)
end

function M.eye(n, m, opts)
  if type(m) == 'table' then opts, m = m, nil end
  T.options(opts, 'eye')
  local dt = opts and opts.dtype and resolve_dtype(opts.dtype, 'eye') or default_dtype()
  n = int_arg(n, 'eye', 'n')
  m = m == nil and n or int_arg(m, 'eye', 'm')
  if C.mt_eye(n, m, dt.id, T.check_device(opts, 'eye'), outp) ~= 0 then raise_last() end
  return apply(take(), opts)
end

------------------------------------------------------------------------------ copy and conversion
function methods.copy_(t, src)
  if type(src) == 'number' or type(src) == 'boolean' then return t:fill_(src) end
  if not is_tensor(src) then fail('copy_', 'expected a tensor as source, got ' .. core.typeof(src)) end
  if C.mt_copy_(t, src) ~= 0 then raise_last() end
  return t
end

function methods.fill_(t, v)
  if is_tensor(v) then
    if v:numel() ~= 1 or v:dim() ~= 0 then
      fail('fill_', ('fill_ only supports 0-dimension value tensor but got tensor with %d dimensions'):format(v:dim()))
    end
    v = v:item()
  end
  if type(v) == 'boolean' then v = v and 1 or 0 end
  if type(v) ~= 'number' then fail('fill_', 'expected a number, got ' .. core.typeof(v)) end
  if C.mt_fill_(t, v) ~= 0 then raise_last() end
  return t
end
function methods.zero_(t)
  if C.mt_fill_(t, 0) ~= 0 then raise_last() end
  return t
end

-- PyTorch's clone keeps a non-contiguous tensor's layout (preserve_format): that is to() with a
-- copy, recorded as a clone too (CloneBackward0); {memory_format = torch.contiguous_format} asks for
-- a contiguous copy.
function methods.clone(t, opts)
  if t._flags % 2 == 1 or (opts and opts.memory_format == 'contiguous_format') then
    if C.mt_clone(t, outp) ~= 0 then raise_last() end
  elseif C.mt_to(t, -1, nil, 1, outp) ~= 0 then
    raise_last()
  end
  return take()
end
M.clone = function(t, opts)
  if not is_tensor(t) then fail('clone', 'expected a tensor for input, got ' .. T.describe(t)) end
  return methods.clone(t, opts)
end

function methods.contiguous(t)
  if bit.band(t._flags, 1) ~= 0 then return t end
  if C.mt_contiguous(t, outp) ~= 0 then raise_last() end
  return take()
end

-- to(dtype) / to(device) / to(device, dtype) / to{dtype=, device=, copy=} / to(other_tensor)
function methods.to(t, a, b, c)
  local dt, dev, copy, non_blocking
  local function take_arg(x)
    if x == nil then return end
    if is_tensor(x) then dt = x.dtype; dev = x.device; return end
    if type(x) == 'table' and dtype.is_dtype(x) then dt = x; return end
    if type(x) == 'table' and dtype.is_device(x) then dev = x; return end
    if type(x) == 'string' then
      local d = dtype.resolve(x)
      if d then dt = d else dev = dtype.device(x) end
      return
    end
    if type(x) == 'table' then
      if x.dtype ~= nil then dt = resolve_dtype(x.dtype, 'to') end
      if x.device ~= nil then dev = dtype.device(x.device) end
      if x.copy then copy = true end
      if x.non_blocking then non_blocking = true end
      return
    end
    fail('to', 'unexpected argument ' .. tostring(x))
  end
  take_arg(a); take_arg(b); take_arg(c)
  local cdev = dev and T.device_arg(dev, 'to')
  local here = dev == nil or (dtype.device_type_ids[dev.type] == t._device_type and
    (dev.index or C.mt_device_current(t._device_type)) == t._device_index)
  if (dt == nil or dt.id == t._dtype) and here then
    if copy then return t:clone() end
    return t
  end
  if dev and dev.type == 'cpu' then cdev = dtype.cpu_c end
  if C.mt_to(t, dt and dt.id or -1, cdev, non_blocking and 2 or 0, outp) ~= 0 then raise_last() end
  return take()
end

local function caster(name, d)
  methods[name] = function(t) return t:to(d) end
end
function M.install_casters()
  caster('float', torch.float32); caster('double', torch.float64); caster('half', torch.float16)
  caster('bfloat16', torch.bfloat16); caster('long', torch.int64); caster('int', torch.int32)
  caster('short', torch.int16); caster('char', torch.int8); caster('byte', torch.uint8); caster('bool', torch.bool)
end
function methods.cpu(t)
  if t._device_type == 0 then return t end
  return t:to(dtype.cpu_device)
end
-- t:cuda([device] [, {non_blocking=}]): t on a CUDA device (the current one, an index or a device);
-- the C core says whether there is one
function methods.cuda(t, device, opts)
  if type(device) == 'table' and not dtype.is_device(device) then device, opts = nil, device end
  if type(device) == 'number' then device = dtype.device('cuda', device)
  elseif device == nil then device = dtype.device('cuda')
  else
    device = dtype.device(device)
    if device.type ~= 'cuda' then fail('cuda', ('Invalid device, must be cuda device, got %s'):format(tostring(device))) end
  end
  T.device_arg(device, 'cuda')
  return t:to(device, { non_blocking = opts and opts.non_blocking })
end
-- t:pin_memory(): a copy in page-locked host memory (what a non_blocking copy to a GPU needs);
-- t:is_pinned()
function methods.pin_memory(t)
  if C.mt_tensor_pin_memory(t, nil, outp) ~= 0 then raise_last() end
  return take()
end
function methods.is_pinned(t) return C.mt_tensor_is_pinned(t) ~= 0 end
-- t:record_stream(s): t's memory is used by work on the torch.cuda.Stream s (not reused before it is done)
function methods.record_stream(t, s)
  if type(s) ~= 'table' or s._s == nil then fail('record_stream', 'expected a torch.cuda.Stream') end
  if C.mt_tensor_record_stream(t, s._s) ~= 0 then raise_last() end
end
function methods.type_as(t, o)
  if not is_tensor(o) then fail('type_as', 'expected a tensor for other, got ' .. T.describe(o)) end
  return t:to(o.dtype)
end
-- new_*: t's dtype and device unless the options say otherwise (PyTorch's Tensor.new_*)
-- t:new_*(..., opts): the options given, with t's dtype and device where they are not
local function new_opts(t, opts)
  local r = {}
  if opts then for k, v in pairs(opts) do r[k] = v end end
  if r.dtype == nil then r.dtype = t.dtype end
  if r.device == nil then r.device = t.device end
  return r
end
function methods.new_zeros(t, ...) local n, opts = parse_sizes('new_zeros', ...)
  return M.zeros(T.size_from_buf(n), new_opts(t, opts)) end
function methods.new_ones(t, ...) local n, opts = parse_sizes('new_ones', ...)
  return M.ones(T.size_from_buf(n), new_opts(t, opts)) end
function methods.new_empty(t, ...) local n, opts = parse_sizes('new_empty', ...)
  return M.empty(T.size_from_buf(n), new_opts(t, opts)) end
function methods.new_full(t, size, v, opts) return M.full(size, v, new_opts(t, opts)) end
function methods.new_tensor(t, data, opts)
  check_opts(opts, 'new_tensor')
  return from_data('new_tensor', data, new_opts(t, opts))
end

------------------------------------------------------------------------------ values out
local dbl = ffi.new('double[1]')
function methods.item(t)
  if C.mt_tensor_item(t, dbl) ~= 0 then raise_last() end
  if t._dtype == 11 then return dbl[0] ~= 0 end
  return dbl[0]
end

local function nest(buf, t, dim, nd, pos, isbool)
  local n = tonumber(t._sizes[dim])
  local r = {}
  if dim == nd - 1 then
    for i = 1, n do
      local v = buf[pos + i - 1]
      if isbool then v = v ~= 0 end
      r[i] = v
    end
    return r, pos + n
  end
  for i = 1, n do r[i], pos = nest(buf, t, dim + 1, nd, pos, isbool) end
  return r, pos
end
-- Never compiled: Debian 12's LuaJIT (2.1.0-beta3, git 2022-03-20) miscompiles this function's
-- traces with allocation sinking on, and a loop of tolist() then crashes the process about once
-- in five runs (spec/luajit_workarounds_spec.lua; found by fuzz/lua_load_use.lua). tolist is no
-- hot path: the interpreter builds the tables at about the same speed.
jit.off(nest)

function methods.tolist(t)
  local n = tonumber(t._numel)
  local nd = t._ndim
  local isbool = t._dtype == 11
  if nd == 0 then return t:item() end
  -- an empty tensor of huge outer sizes (2^51 x 0 x 3) would build 2^51 empty tables: refuse
  -- what Lua cannot hold rather than run out of memory (PyTorch raises MemoryError there)
  local tables, outer = 0, 1
  for d = 0, nd - 2 do
    outer = outer * tonumber(t._sizes[d])
    tables = tables + outer
    if tables > 2 ^ 27 then
      local sizes = {}
      for k = 0, nd - 1 do sizes[k + 1] = tostring(t._sizes[k]):gsub('LL$', '') end
      fail('tolist', ('a tensor of sizes [%s] would need more than 2^27 Lua tables')
        :format(table.concat(sizes, ', ')))
    end
  end
  local buf = ffi.new('double[?]', n > 0 and n or 1)
  if n > 0 and C.mt_tensor_to_doubles(t, buf, n) ~= 0 then raise_last() end
  return (nest(buf, t, 0, nd, 0, isbool))
end

function M.install(t)
  torch = t
  for k, v in pairs(M) do
    if type(v) == 'function' and k ~= 'install' and k ~= 'install_casters' then t[k] = v end
  end
  M.install_casters()
end

------------------------------------------------------------------------------ composed in Lua
-- tril_indices/triu_indices, vander, the Torch7 constructors (torch.FloatTensor, ...),
-- the windows (hann, hamming, blackman, bartlett), empty_strided.
-- Written with the ops above, so that autograd, dtypes and devices follow; 1-based dims and
-- positions, options in a trailing table. composed.install(torch) puts them in torch and on the
-- Tensor type where those lack the name (lua/init.lua calls it once every op file is installed).
M.composed = {}
do
  local K = require 'moontorch.ops.compose'
  local composed = M.composed
  local need = K.need
  local type, floor, pi, select = type, math.floor, math.pi, select

  local function tri_indices(op, lower)
    return function(row, col, offset, opts)
      if type(offset) == 'table' then offset, opts = nil, offset end
      K.int(op, 'row', row)
      K.int(op, 'col', col)
      K.int(op, 'offset', offset, true)
      T.options(opts, op)
      offset = offset or 0
      local rs, cs = {}, {}
      for i = 0, row - 1 do
        for j = 0, col - 1 do
          if (lower and j - i <= offset) or (not lower and j - i >= offset) then
            rs[#rs + 1], cs[#cs + 1] = i + 1, j + 1
          end
        end
      end
      local dt = opts and opts.dtype or torch.int64
      if #rs == 0 then return torch.empty(2, 0, { dtype = dt }) end
      return torch.tensor({ rs, cs }, { dtype = dt })
    end
  end
  local function vander(x, N, opts)
    need('vander', x)
    if type(N) == 'table' then N, opts = nil, N end
    T.options(opts, 'vander')
    N = N or (opts and opts.N) or x:size(1)
    local inc = opts and opts.increasing or false
    if x:dim() ~= 1 then fail('vander', 'x must be a one-dimensional tensor.') end
    if type(N) ~= 'number' or N ~= floor(N) or N ~= N or N == math.huge then
      fail('vander', ("argument 'N' must be an integer, got %s"):format(tostring(N)))
    end
    if N < 0 then fail('vander', 'N must be non-negative.') end
    local dt = x.dtype == torch.bool and torch.int64 or x.dtype
    local n = x:size(1)
    if N == 0 then return torch.empty(n, 0, { dtype = dt }) end
    -- the powers 0 .. N-1 by running products (one allocation, so that a huge N fails at once)
    local xx = x:to(dt)
    local r = torch.ones(n, 1, { dtype = dt })
    if N > 1 then r = torch.cat({ r, xx:unsqueeze(2):expand(n, N - 1):cumprod(2) }, 2) end
    return inc and r or r:flip(2)
  end
  local function constructor(name)
    return function(...)
      local dt = torch[name]
      local a = ...
      if type(a) == 'table' and not is_tensor(a) and a[1] ~= nil and getmetatable(a) == nil then
        return torch.tensor(a, { dtype = dt })
      end
      if is_tensor(a) then return a:to(dt) end
      if select('#', ...) == 0 then return torch.empty(0, { dtype = dt }) end
      local s = type(a) == 'table' and a or { ... }
      return torch.empty(s, { dtype = dt })
    end
  end

  local only = { -- torch functions only
    tril_indices = tri_indices('tril_indices', true), triu_indices = tri_indices('triu_indices', false),
    vander = vander, FloatTensor = constructor('float32'), DoubleTensor = constructor('float64'),
    HalfTensor = constructor('float16'), BFloat16Tensor = constructor('bfloat16'), LongTensor = constructor('int64'),
    IntTensor = constructor('int32'), ShortTensor = constructor('int16'), CharTensor = constructor('int8'),
    ByteTensor = constructor('uint8'), BoolTensor = constructor('bool'),
  }
  function composed.install(tt)
    torch = tt
    K.install_functions(torch, only, false)
    -- windows: hann, hamming, bartlett, blackman (periodic=true by default), computed in the result's
    -- dtype in PyTorch's order of operations (the same roundings)
    local function window(name, f)
      if torch[name] ~= nil then return end
      torch[name] = function(n, periodic, opts)
        if type(periodic) == 'table' then periodic, opts = nil, periodic end
        if type(n) ~= 'number' or n ~= floor(n) or n < 0 then
          fail(name, 'window_length must be a non-negative integer, got ' .. T.describe(n))
        end
        T.options(opts, name)
        if periodic == nil then periodic = true end
        local dt = opts and opts.dtype or torch.get_default_dtype()
        if n == 0 then return torch.empty(0, { dtype = dt }) end
        if n == 1 then return torch.ones(1, { dtype = dt }) end
        local L = periodic and n + 1 or n
        return f(torch.arange(L):to(dt), L):narrow(1, 1, n)
      end
    end
    local function hamming(alpha, beta)
      return function(k, L) return (k * (2 * pi / (L - 1))):cos() * -beta + alpha end
    end
    window('hann_window', hamming(0.5, 0.5))
    window('hamming_window', hamming(0.54, 0.46))
    window('blackman_window', function(k, L)
      local w = k * (pi / (L - 1))
      return (w * 4):cos() * 0.08 - (w * 2):cos() * 0.5 + 0.42
    end)
    window('bartlett_window', function(k, L)
      local w = k * (2 / (L - 1))
      local half = floor((L - 1) / 2) + 1
      if half >= L then return w end
      return torch.cat({ w:narrow(1, 1, half), 2 - w:narrow(1, half + 1, L - half) })
    end)
    if torch.empty_strided == nil then
      torch.empty_strided = function(size, stride, opts)
        if type(size) ~= 'table' or type(stride) ~= 'table' then
          fail('empty_strided', ('expected tables of integers for size and stride, got %s and %s')
            :format(T.describe(size), T.describe(stride)))
        end
        if #size ~= #stride then
          fail('empty_strided', ('mismatch in length of strides and shape (%d and %d)'):format(#stride, #size))
        end
        local n = 1
        for i = 1, #size do if size[i] == 0 then n = 0 break end n = n + (size[i] - 1) * stride[i] end
        return torch.empty(n, opts):as_strided(size, stride)
      end
    end
    -- the in-place methods PyTorch also has as torch functions
    K.functions_of_methods(torch, { 'fill_' })
  end
end

return M
