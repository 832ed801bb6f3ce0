-- Joining, splitting and indexing ops: cat/concat, stack, hstack/vstack/dstack, split, chunk,
-- unbind, index_select, gather, scatter(_add)(_), index_add(_), index_fill(_), index_copy(_),
-- masked_fill(_), masked_select, masked_scatter(_), nonzero/argwhere, index_put(_), tril/triu(_),
-- diag, one_hot; and T.advanced_index, which t[tensor] (lua/ops/view.lua) calls.
-- Dims are 1-based (negative from the end) and index values are 1-based: C gets index_base = 1.
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local C = core.C
local raise_last, fail = core.raise_last, core.fail
local methods = T.methods
local is_tensor, take, outp, cdim, is_opts = T.is_tensor, T.take, T.outp, T.cdim, T.is_opts
local type, floor, tonumber, select = type, math.floor, tonumber, select

local M = {}
local torch

local BASE = 1
local INT64, INT32, BOOL, UINT8 = 4, 3, 11, 0
local tensor_array = ffi.typeof('mt_tensor *[?]')

local function check_tensor(x, op, what)
  if not is_tensor(x) then fail(op, ('expected a tensor for %s, got %s'):format(what, type(x))) end
  return x
end

local check_int = T.int_arg -- (x, op, what[, position]) -> x as a Lua number

-- a number or boolean (or 0-dim tensor when allowed) to a Lua number
local function scalar_value(v, op)
  if type(v) == 'boolean' then return v and 1 or 0 end
  if type(v) ~= 'number' then fail(op, 'expected a number as value, got ' .. (is_tensor(v) and 'a tensor' or type(v))) end
  return v
end

-- finish a call that may have written into `out`
local function result(st, out)
  if st ~= 0 then raise_last() end
  if out ~= nil then
    C.mt_tensor_release(outp[0])
    return out
  end
  return take()
end

-- dims as shown to a Lua user: d is 0-based, non-negative
local function ldim(d) return d + 1 end

-- a 1-based dim of a tensor with nd dims (a scalar takes 1 and -1) checked here, so that the
-- message speaks of Lua's dims; returns the 0-based dim for C
local function dim_of(dim, nd, op)
  local d = cdim(dim, op)
  local n = nd > 0 and nd or 1
  if d < -n or d >= n then
    fail(op, ('dimension %d out of range (expected to be in range of [%d, %d] without 0)'):format(dim, -n, n))
  end
  return d
end

local function size_str(t)
  local p = {}
  for i = 0, t._ndim - 1 do p[#p + 1] = tostring(tonumber(t._sizes[i])) end
  return '[' .. table.concat(p, ', ') .. ']'
end

------------------------------------------------------------------------------ cat, stack
-- the tensors of a Lua array as a C array (the Lua array keeps them alive)
local function tensor_list(ts, op)
  if type(ts) ~= 'table' or is_tensor(ts) then
    fail(op, 'expected an array of tensors, got ' .. (is_tensor(ts) and 'a tensor' or type(ts)))
  end
  local n = T.seq_len(ts) or T.seq_fail(ts, op, 'tensors')
  if n == 0 then
    if op == 'stack' then fail(op, 'stack expects a non-empty TensorList') end
    fail(op, 'expected a non-empty list of Tensors')
  end
  local arr = tensor_array(n)
  for i = 1, n do
    local t = ts[i]
    if not is_tensor(t) then fail(op, ('expected a tensor at position %d, got %s'):format(i, type(t))) end
    arr[i - 1] = t
  end
  return arr, n
end

-- (tensors, dim, opts) or (tensors, {dim=, out=})
local function dim_opts(dim, opts, op)
  if type(dim) == 'table' then dim, opts = dim.dim, dim end
  T.options(opts, op)
  local out = opts and opts.out
  if out ~= nil then check_tensor(out, op, 'out') end
  return dim or 1, out
end

function M.cat(ts, dim, opts)
  local out
  dim, out = dim_opts(dim, opts, 'cat')
  local arr, n = tensor_list(ts, 'cat')
  -- shapes checked here first, for messages with 1-based dims
  local ref
  for i = 1, n do
    local t = ts[i]
    if t._ndim == 0 then
      fail('cat', ('zero-dimensional tensor (at position %d) cannot be concatenated'):format(i))
    end
    if not ref and not (t._ndim == 1 and t._sizes[0] == 0) then ref = t end
  end
  local d = cdim(dim, 'cat')
  if ref then
    local nd = ref._ndim
    if d < -nd or d >= nd then
      fail('cat', ('dimension %d out of range (expected to be in range of [%d, %d] without 0)'):format(dim, -nd, nd))
    end
    if d < 0 then d = d + nd end
    for i = 1, n do
      local t = ts[i]
      if not (t._ndim == 1 and t._sizes[0] == 0) then
        if t._ndim ~= nd then
          fail('cat', ('Tensors must have same number of dimensions: got %d and %d'):format(nd, t._ndim))
        end
        for k = 0, nd - 1 do
          if k ~= d and t._sizes[k] ~= ref._sizes[k] then
            fail('cat', ('Sizes of tensors must match except in dimension %d. Expected size %d but got size %d for tensor number %d in the list.')
              :format(ldim(d), tonumber(ref._sizes[k]), tonumber(t._sizes[k]), i))
          end
        end
      end
    end
  end
  return result(C.mt_cat(arr, n, d, out, outp), out)
end
M.concat, M.concatenate = M.cat, M.cat

function M.stack(ts, dim, opts)
  local out
  dim, out = dim_opts(dim, opts, 'stack')
  local arr, n = tensor_list(ts, 'stack')
  for i = 2, n do
    local a, b = ts[1], ts[i]
    local same = a._ndim == b._ndim
    for k = 0, a._ndim - 1 do if not same or a._sizes[k] ~= b._sizes[k] then same = false end end
    if not same then
      fail('stack', ('stack expects each tensor to be equal size, but got %s at entry 1 and %s at entry %d')
        :format(size_str(a), size_str(b), i))
    end
  end
  return result(C.mt_stack(arr, n, dim_of(dim, ts[1]._ndim + 1, 'stack'), out, outp), out)
end

local function atleast(t, n)
  if not is_tensor(t) then
    fail('atleast_' .. n .. 'd', 'expected a tensor or an array of tensors, got ' .. T.describe(t))
  end
  local nd = t._ndim
  if nd >= n then return t end
  if n == 1 then return t:reshape(1) end
  if n == 2 then return nd == 0 and t:reshape(1, 1) or t:unsqueeze(1) end
  if nd == 0 then return t:reshape(1, 1, 1) end
  if nd == 1 then return t:unsqueeze(1):unsqueeze(3) end
  return t:unsqueeze(3)
end
function M.atleast_1d(t) return atleast(t, 1) end
function M.atleast_2d(t) return atleast(t, 2) end
function M.atleast_3d(t) return atleast(t, 3) end

local function mapped(ts, n, op)
  tensor_list(ts, op)
  local r = {}
  for i = 1, #ts do r[i] = atleast(ts[i], n) end
  return r
end
function M.hstack(ts, opts)
  local r = mapped(ts, 1, 'hstack')
  return M.cat(r, r[1]._ndim == 1 and 1 or 2, opts)
end
function M.vstack(ts, opts) return M.cat(mapped(ts, 2, 'vstack'), 1, opts) end
M.row_stack = M.vstack
function M.dstack(ts, opts) return M.cat(mapped(ts, 3, 'dstack'), 3, opts) end
function M.column_stack(ts, opts)
  tensor_list(ts, 'column_stack')
  local r = {}
  for i = 1, #ts do
    local t = ts[i]
    if t._ndim <= 1 then t = t:reshape(-1, 1) end
    r[i] = t
  end
  return M.cat(r, 2, opts)
end

------------------------------------------------------------------------------ split, chunk, unbind
-- the 0-based, non-negative dim and its size
local function dim_and_size(t, dim, op)
  local nd = t._ndim
  if nd == 0 then fail(op, 'cannot be applied to a 0-dim tensor') end
  local d = cdim(dim, op)
  if d < -nd or d >= nd then
    fail(op, ('dimension %d out of range (expected to be in range of [%d, %d] without 0)'):format(dim, -nd, nd))
  end
  if d < 0 then d = d + nd end
  return d, tonumber(t._sizes[d])
end

local function narrow0(t, d, start, len)
  if C.mt_narrow(t, d, start, len, outp) ~= 0 then raise_last() end
  return take()
end

function methods.split(t, size, dim)
  dim = dim or 1
  local d, n = dim_and_size(t, dim, 'split')
  local r = {}
  if type(size) == 'table' and not is_tensor(size) then
    local ns = T.seq_len(size) or T.seq_fail(size, 'split', 'split_size')
    local sum, parts = 0, {}
    local sizes = {}
    for i = 1, ns do
      local s = check_int(size[i], 'split', 'split_size', i)
      sizes[i] = s
      parts[i] = tostring(s)
      if s < 0 then
        fail('split', ('split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=[%s]')
          :format(table.concat(parts, ', ')))
      end
      sum = sum + s
    end
    if sum ~= n then
      fail('split', ("split_with_sizes expects split_sizes to sum exactly to %d (input tensor's size at dimension %d), but got split_sizes=[%s]")
        :format(n, ldim(d), table.concat(parts, ', ')))
    end
    local pos = 0
    for i = 1, ns do
      r[i] = T.name_grad_fn(narrow0(t, d, pos, sizes[i]), 'SplitWithSizesBackward0')
      pos = pos + sizes[i]
    end
    return r
  end
  size = check_int(size, 'split', 'split_size')
  if size < 0 then
    fail('split', ('split expects split_size be non-negative, but got split_size=%d'):format(size))
  end
  if size == 0 and n ~= 0 then
    fail('split', ('split_size can only be 0 if dimension size is 0, but got dimension size of %d'):format(n))
  end
  local count = size > 0 and math.max(math.ceil(n / size), 1) or 1
  T.check_list_len(count, 'split')
  for i = 1, count do
    local start = (i - 1) * size
    r[i] = T.name_grad_fn(narrow0(t, d, start, math.min(size, n - start)), 'SplitBackward0')
  end
  return r
end
methods.split_with_sizes = methods.split

function methods.chunk(t, chunks, dim)
  chunks = check_int(chunks, 'chunk', 'chunks')
  if chunks <= 0 then fail('chunk', ('chunk expects `chunks` to be greater than 0, got: %d'):format(chunks)) end
  local d, n = dim_and_size(t, dim or 1, 'chunk')
  local size = math.ceil(n / chunks)
  if size == 0 then
    T.check_list_len(chunks, 'chunk')
    local r = {}
    for i = 1, chunks do r[i] = narrow0(t, d, 0, 0) end
    return r
  end
  return t:split(size, dim or 1)
end

function methods.tensor_split(t, sections, dim)
  local d, n = dim_and_size(t, dim or 1, 'tensor_split')
  local r = {}
  if type(sections) == 'table' and not is_tensor(sections) then
    -- split before each given 1-based position
    local ns = T.seq_len(sections) or T.seq_fail(sections, 'tensor_split', 'indices')
    local prev = 0
    for i = 1, ns + 1 do
      local stop = i <= ns and check_int(sections[i], 'tensor_split', 'indices', i) - 1 or n
      if stop < 0 then stop = stop + n + 1 end
      stop = math.max(math.min(stop, n), prev)
      r[i] = narrow0(t, d, prev, stop - prev)
      prev = stop
    end
    return r
  end
  sections = check_int(sections, 'tensor_split', 'sections')
  if sections <= 0 then fail('tensor_split', 'number of sections must be larger than 0, got ' .. sections) end
  T.check_list_len(sections, 'tensor_split')
  local base, extra = floor(n / sections), n % sections
  local pos = 0
  for i = 1, sections do
    local len = base + (i <= extra and 1 or 0)
    r[i] = narrow0(t, d, pos, len)
    pos = pos + len
  end
  return r
end

function methods.unbind(t, dim)
  local d, n = dim_and_size(t, dim or 1, 'unbind')
  T.check_list_len(n, 'unbind')
  local r = {}
  for i = 1, n do
    if C.mt_select(t, d, i - 1, outp) ~= 0 then raise_last() end
    r[i] = take()
  end
  return r
end

------------------------------------------------------------------------------ index_select, gather, scatter
local function out_of(opts, op)
  local out = type(opts) == 'table' and opts.out or nil
  if out ~= nil then check_tensor(out, op, 'out') end
  return out
end

function methods.index_select(t, dim, index, opts)
  check_tensor(index, 'index_select', 'index')
  local out = out_of(opts, 'index_select')
  return result(C.mt_index_select(t, dim_of(dim, t._ndim, 'index_select'), index, BASE, out, outp), out)
end

function methods.gather(t, dim, index, opts)
  check_tensor(index, 'gather', 'index')
  local out = out_of(opts, 'gather')
  return result(C.mt_gather(t, dim_of(dim, t._ndim, 'gather'), index, BASE, out, outp), out)
end

local reduce_codes = { add = 1, multiply = 2, sum = 1, prod = 2 }
local function reduce_of(opts, op)
  local r = type(opts) == 'table' and opts.reduce or nil
  if r == nil then return 0 end
  local c = reduce_codes[r]
  if not c then fail(op, 'reduce argument must be either add or multiply, got ' .. tostring(r)) end
  return c
end

-- scatter(dim, index, src_or_value, {reduce=}); inplace: write into t
local function scatter(t, dim, index, src, opts, inplace, op, reduce)
  check_tensor(index, op, 'index')
  reduce = reduce or reduce_of(opts, op)
  local out = inplace and t or out_of(opts, op)
  local st
  if is_tensor(src) then
    st = C.mt_scatter(t, dim_of(dim, t._ndim, op), index, src, 0, reduce, BASE, out, outp)
  else
    st = C.mt_scatter(t, dim_of(dim, t._ndim, op), index, nil, scalar_value(src, op), reduce, BASE, out, outp)
  end
  return result(st, out)
end
function methods.scatter(t, dim, index, src, opts) return scatter(t, dim, index, src, opts, false, 'scatter') end
function methods.scatter_(t, dim, index, src, opts) return scatter(t, dim, index, src, opts, true, 'scatter_') end
function methods.scatter_add(t, dim, index, src)
  check_tensor(src, 'scatter_add', 'src')
  return scatter(t, dim, index, src, nil, false, 'scatter_add', 1)
end
function methods.scatter_add_(t, dim, index, src)
  check_tensor(src, 'scatter_add_', 'src')
  return scatter(t, dim, index, src, nil, true, 'scatter_add_', 1)
end

------------------------------------------------------------------------------ index_add, index_fill, index_copy
-- index_add(dim, index, source[, alpha] [, {alpha=}])
local function index_add(t, dim, index, src, alpha, opts, inplace)
  local op = inplace and 'index_add_' or 'index_add'
  if type(alpha) == 'table' then opts, alpha = alpha, nil end
  if alpha == nil and opts then alpha = opts.alpha end
  alpha = alpha == nil and 1 or scalar_value(alpha, op)
  check_tensor(index, op, 'index')
  check_tensor(src, op, 'source')
  local out = inplace and t or out_of(opts, op)
  return result(C.mt_index_add(t, dim_of(dim, t._ndim, op), index, src, alpha, BASE, out, outp), out)
end
function methods.index_add(t, dim, index, src, alpha, opts) return index_add(t, dim, index, src, alpha, opts, false) end
function methods.index_add_(t, dim, index, src, alpha, opts) return index_add(t, dim, index, src, alpha, opts, true) end

function methods.index_fill_(t, dim, index, value)
  check_tensor(index, 'index_fill_', 'index')
  if is_tensor(value) then
    if value._ndim ~= 0 then
      fail('index_fill_', ('only supports a 0-dimensional value tensor, but got tensor with %d dimension(s)')
        :format(value._ndim))
    end
    value = value:item()
  end
  if C.mt_index_fill_(t, dim_of(dim, t._ndim, 'index_fill_'), index, scalar_value(value, 'index_fill_'), BASE) ~= 0 then
    raise_last()
  end
  return t
end
function methods.index_fill(t, dim, index, value) return t:clone():index_fill_(dim, index, value) end

function methods.index_copy_(t, dim, index, src)
  check_tensor(index, 'index_copy_', 'index')
  check_tensor(src, 'index_copy_', 'source')
  if C.mt_index_copy_(t, dim_of(dim, t._ndim, 'index_copy_'), index, src, BASE) ~= 0 then raise_last() end
  return t
end
function methods.index_copy(t, dim, index, src) return t:clone():index_copy_(dim, index, src) end

------------------------------------------------------------------------------ masks
local function masked_fill(t, mask, value, inplace)
  local op = inplace and 'masked_fill_' or 'masked_fill'
  check_tensor(mask, op, 'mask')
  local out = inplace and t or nil
  local st
  if is_tensor(value) then
    st = C.mt_masked_fill_tensor(t, mask, value, out, outp)
  else
    st = C.mt_masked_fill(t, mask, scalar_value(value, op), out, outp)
  end
  return result(st, out)
end
function methods.masked_fill(t, mask, value) return masked_fill(t, mask, value, false) end
function methods.masked_fill_(t, mask, value) return masked_fill(t, mask, value, true) end

function methods.masked_select(t, mask)
  check_tensor(mask, 'masked_select', 'mask')
  if C.mt_masked_select(t, mask, outp) ~= 0 then raise_last() end
  return take()
end

function methods.masked_scatter_(t, mask, src)
  check_tensor(mask, 'masked_scatter_', 'mask')
  check_tensor(src, 'masked_scatter_', 'source')
  if C.mt_masked_scatter_(t, mask, src) ~= 0 then raise_last() end
  return t
end
-- the broadcast shape of two tensors, as a Lua array
local function broadcast_shape(a, b, op)
  local na, nb = a._ndim, b._ndim
  local n = math.max(na, nb)
  local r = {}
  for i = 1, n do
    local ia, ib = na - n + i, nb - n + i
    local sa = ia >= 1 and tonumber(a._sizes[ia - 1]) or 1
    local sb = ib >= 1 and tonumber(b._sizes[ib - 1]) or 1
    if sa ~= sb and sa ~= 1 and sb ~= 1 then
      fail(op, ('the size of tensor a (%d) must match the size of tensor b (%d) at non-singleton dimension %d')
        :format(sa, sb, i))
    end
    r[i] = sa == 1 and sb or sa
  end
  return r
end

function methods.masked_scatter(t, mask, src)
  -- out of place: self and mask broadcast together
  check_tensor(mask, 'masked_scatter', 'mask')
  return t:expand(broadcast_shape(t, mask, 'masked_scatter')):clone():masked_scatter_(mask, src)
end

------------------------------------------------------------------------------ nonzero
function methods.nonzero(t, opts)
  if C.mt_nonzero(t, BASE, outp) ~= 0 then raise_last() end
  local nz = take()
  if type(opts) == 'table' and opts.as_tuple then
    local nd = t._ndim
    local r = {}
    if nd == 0 then
      -- a scalar acts as a 1-D tensor of one element
      if tonumber(nz._sizes[0]) > 0 then r[1] = torch.tensor({ 1 }, { dtype = torch.int64 })
      else r[1] = torch.empty(0, { dtype = torch.int64 }) end
      return r
    end
    for d = 1, nd do r[d] = nz:select(2, d) end
    return r
  end
  return nz
end
function methods.argwhere(t) return t:nonzero() end

------------------------------------------------------------------------------ advanced indexing
-- indices: a Lua array of index tensors (long/int positions, bool/uint8 masks), one per leading dim
local function index_args(indices, op)
  if is_tensor(indices) then indices = { indices } end
  if type(indices) ~= 'table' then fail(op, 'expected an array of index tensors, got ' .. core.typeof(indices)) end
  local n = T.seq_len(indices) or T.seq_fail(indices, op, 'indices')
  local arr = tensor_array(n > 0 and n or 1)
  for i = 1, n do
    local x = indices[i]
    if not is_tensor(x) then
      fail(op, ('expected a tensor at position %d of the indices, got %s'):format(i, type(x)))
    end
    arr[i - 1] = x
  end
  return arr, n
end

function T.advanced_index(t, indices)
  local arr, n = index_args(indices, 'index')
  if C.mt_index(t, arr, n, BASE, outp) ~= 0 then raise_last() end
  return take()
end
M.advanced_index = T.advanced_index

function methods.index_put_(t, indices, values, opts)
  local arr, n = index_args(indices, 'index_put_')
  local acc = type(opts) == 'table' and opts.accumulate and 1 or 0
  if type(opts) == 'boolean' then acc = opts and 1 or 0 end
  if not is_tensor(values) then
    values = torch.tensor(scalar_value(values, 'index_put_'), { dtype = t.dtype })
  end
  if C.mt_index_put_(t, arr, n, values, acc, BASE) ~= 0 then raise_last() end
  return t
end
function methods.index_put(t, indices, values, opts) return t:clone():index_put_(indices, values, opts) end

------------------------------------------------------------------------------ tril, triu, diag
local function triangle(t, diagonal, upper, inplace)
  local op = (upper == 1 and 'triu' or 'tril') .. (inplace and '_' or '')
  if type(diagonal) == 'table' then diagonal = diagonal.diagonal end
  diagonal = diagonal == nil and 0 or check_int(diagonal, op, 'diagonal')
  local out = inplace and t or nil
  return result(C.mt_triangle(t, diagonal, upper, out, outp), out)
end
function methods.tril(t, k) return triangle(t, k, 0, false) end
function methods.triu(t, k) return triangle(t, k, 1, false) end
function methods.tril_(t, k) return triangle(t, k, 0, true) end
function methods.triu_(t, k) return triangle(t, k, 1, true) end

function methods.diag(t, diagonal)
  diagonal = diagonal == nil and 0 or check_int(diagonal, 'diag', 'diagonal')
  if C.mt_diag(t, diagonal, outp) ~= 0 then raise_last() end
  return take()
end

------------------------------------------------------------------------------ one_hot
function M.one_hot(t, num_classes)
  check_tensor(t, 'one_hot', 'input')
  if type(num_classes) == 'table' then num_classes = num_classes.num_classes end
  num_classes = num_classes == nil and -1 or check_int(num_classes, 'one_hot', 'num_classes')
  if C.mt_one_hot(t, num_classes, BASE, outp) ~= 0 then raise_last() end
  return take()
end

------------------------------------------------------------------------------ install
local method_functions = { 'split', 'split_with_sizes', 'chunk', 'tensor_split', 'unbind', 'index_select', 'gather',
  'scatter', 'scatter_add', 'index_add', 'index_fill', 'index_copy', 'masked_fill', 'masked_select',
  'masked_scatter', 'nonzero', 'argwhere', 'index_put', 'index_put_', 'tril', 'triu', 'diag' }

function M.install(tt)
  torch = tt
  for k, v in pairs(M) do
    if type(v) == 'function' and k ~= 'install' then tt[k] = v end
  end
  for _, name in ipairs(method_functions) do
    local m = methods[name]
    tt[name] = function(t, ...)
      check_tensor(t, name, 'input')
      return m(t, ...)
    end
  end
end

------------------------------------------------------------------------------ composed in Lua
-- broadcast_shapes/broadcast_tensors, meshgrid, cartesian_prod, combinations, take,
-- take_along_dim, block_diag, diag_embed, diagflat, select/slice/diagonal_scatter, h/v/dsplit.
-- Written with the ops above, so that autograd, dtypes and devices follow; 1-based dims and
-- positions, options in a trailing table. composed.install(torch) puts them in torch and on the
-- Tensor type where those lack the name (lua/init.lua calls it once every op file is installed).
M.composed = {}
do
  local K = require 'moontorch.ops.compose'
  local composed = M.composed
  local need, pdim, opts_of, sizes = K.need, K.pdim, K.opts_of, K.sizes
  local type, select, ipairs, unpack = type, select, ipairs, unpack

  local function broadcast_shapes(...)
    local n = select('#', ...)
    local out = {}
    local nd = 0
    local shapes = {}
    for i = 1, n do
      local s = select(i, ...)
      if is_tensor(s) then s = sizes(s) elseif type(s) == 'number' then s = { s } end
      if type(s) ~= 'table' then fail('broadcast_shapes', ('expected shapes (tables, numbers or tensors), got %s at %d'):format(type(s), i)) end
      shapes[i] = s
      if #s > nd then nd = #s end
    end
    local from = {} -- the argument that set each dim (arguments count from 1)
    for d = 1, nd do out[d] = 1 end
    for i = 1, n do
      local s = shapes[i]
      for k = 1, #s do
        local d = nd - #s + k
        local v = s[k]
        if v ~= 1 then
          if out[d] ~= 1 and out[d] ~= v then
            fail('broadcast_shapes', ('Shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is '
              .. 'between arg %d and arg %d: size %d and size %d at dimension %d (counted from the last, -1)')
              :format(from[d], i, out[d], v, d - nd - 1))
          end
          out[d], from[d] = v, i
        end
      end
    end
    return setmetatable(out, getmetatable(torch.empty(0):size()))
  end
  local function broadcast_tensors(...)
    local ts = ...
    if select('#', ...) ~= 1 or type(ts) ~= 'table' then ts = { ... } end
    for i, t in ipairs(ts) do need('broadcast_tensors', t, 'tensor ' .. i) end
    local shape = broadcast_shapes(unpack(ts))
    local r = {}
    for i, t in ipairs(ts) do r[i] = t:expand(shape) end
    return r
  end

  local function meshgrid(...)
    local opts, n = opts_of(...)
    local ts = ...
    if n ~= 1 or type(ts) ~= 'table' then ts = { ... } ts[n + 1] = nil end
    local indexing = opts and opts.indexing or 'ij'
    if indexing ~= 'ij' and indexing ~= 'xy' then
      fail('meshgrid', 'torch.meshgrid: indexing must be one of "xy" or "ij", but received: ' .. tostring(indexing))
    end
    local k = #ts
    if k == 0 then fail('meshgrid', 'meshgrid expects a non-empty TensorList') end
    for i, t in ipairs(ts) do
      need('meshgrid', t, 'tensor ' .. i)
      if t:dim() > 1 then
        fail('meshgrid', ('torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: %dD'):format(t:dim()))
      end
    end
    local order = {}
    for i = 1, k do order[i] = i end
    if indexing == 'xy' and k >= 2 then order[1], order[2] = 2, 1 end
    local shape = {}
    for i = 1, k do shape[i] = ts[order[i]]:numel() end
    local r = {}
    for i = 1, k do
      local view = {}
      for j = 1, k do view[j] = 1 end
      local pos
      for j = 1, k do if order[j] == i then pos = j end end
      view[pos] = ts[i]:numel()
      r[i] = ts[i]:reshape(view):expand(shape)
    end
    return r
  end
  local function cartesian_prod(...)
    local ts = ...
    if select('#', ...) ~= 1 or type(ts) ~= 'table' then ts = { ... } end
    for i, t in ipairs(ts) do need('cartesian_prod', t, 'tensor ' .. i) end
    if #ts == 1 then return ts[1] end
    local g = meshgrid(ts)
    local cols = {}
    for i = 1, #g do cols[i] = g[i]:reshape(-1) end
    return torch.stack(cols, 2)
  end
  local function combinations(x, r, opts)
    need('combinations', x)
    if type(r) == 'table' then r, opts = nil, r end
    T.options(opts, 'combinations')
    K.int('combinations', 'r', r, true)
    r = r or (opts and opts.r) or 2
    local rep = opts and opts.with_replacement or false
    if x:dim() ~= 1 then fail('combinations', ('Expect a 1D vector, but got shape [%s]'):format(table.concat(sizes(x), ', '))) end
    local n = x:size(1)
    local rows = {}
    local cur = {}
    local function rec(start, depth)
      if depth > r then
        local c = {}
        for i = 1, r do c[i] = cur[i] end
        rows[#rows + 1] = c
        return
      end
      for i = start, n do
        cur[depth] = i
        rec(rep and i or i + 1, depth + 1)
      end
    end
    if r > 0 then rec(1, 1) end
    if #rows == 0 then return torch.empty(0, r, { dtype = x.dtype }) end
    local cols = {}
    for j = 1, r do
      local idx = {}
      for i = 1, #rows do idx[i] = rows[i][j] end
      cols[j] = x:index_select(1, torch.tensor(idx, { dtype = torch.int64 }))
    end
    return torch.stack(cols, 2)
  end

  -- take: one node named as PyTorch's, whose gradient adds into the places taken
  local take_node = K.node('TakeBackward0', function(x, index)
    return x:reshape(-1):gather(1, index:reshape(-1)):reshape(sizes(index))
  end, function(g, x, index)
    return torch.zeros_like(x):reshape(-1):index_add(1, index:reshape(-1), g:reshape(-1)):reshape(sizes(x))
  end)
  local function take(x, index)
    need('take', x) need('take', index, 'index')
    return take_node(x, index)
  end
  local function take_along_dim(x, index, dim)
    need('take_along_dim', x) need('take_along_dim', index, 'indices')
    if dim == nil then return x:reshape(-1):gather(1, index:reshape(-1)) end
    local nd = x:dim()
    local d = pdim('take_along_dim', dim, nd)
    if index:dim() ~= nd then
      fail('take_along_dim', ('torch.take_along_dim(): input and indices should have the same number of dimensions, '
        .. 'but got %d dimensions for input, and %d dimensions for indices'):format(nd, index:dim()))
    end
    local xs, is = sizes(x), sizes(index)
    local bx, bi = {}, {}
    for i = 1, nd do
      if i == d then
        bx[i], bi[i] = xs[i], is[i]
      else
        local s = broadcast_shapes({ xs[i] }, { is[i] })[1]
        bx[i], bi[i] = s, s
      end
    end
    return x:expand(bx):gather(d, index:expand(bi))
  end
  local function block_diag(...)
    local ts = { ... }
    if #ts == 0 then return torch.empty(1, 0) end
    local mats, rows, cols = {}, 0, 0
    local dt = ts[1].dtype
    for i, t in ipairs(ts) do
      need('block_diag', t, 'tensor ' .. i)
      if t:dim() > 2 then
        fail('block_diag', ('torch.block_diag: Input tensors must have 2 or fewer dimensions. Input %d has %d dimensions')
          :format(i - 1, t:dim()))
      end
      local m = t:dim() == 0 and t:reshape(1, 1) or t:dim() == 1 and t:reshape(1, -1) or t
      mats[i] = m
      rows, cols = rows + m:size(1), cols + m:size(2)
      dt = torch.promote_types(dt, t.dtype)
    end
    local parts, left = {}, 0
    for i, m in ipairs(mats) do
      local h, w = m:size(1), m:size(2)
      local row = {}
      if left > 0 then row[#row + 1] = torch.zeros(h, left, { dtype = dt }) end
      row[#row + 1] = m:to(dt)
      if cols - left - w > 0 then row[#row + 1] = torch.zeros(h, cols - left - w, { dtype = dt }) end
      parts[i] = #row == 1 and row[1] or torch.cat(row, 2)
      left = left + w
    end
    return torch.cat(parts, 1)
  end
  -- diag_embed(x, offset=0, dim1=-2, dim2=-1)
  local diag_embed_raw
  -- one node named as PyTorch's: the gradient is the diagonal
  local diag_embed_node = K.node('DiagEmbedBackward0', function(...) return diag_embed_raw(...) end,
    function(g, _, offset, dim1, dim2) return g:diagonal(offset, dim1, dim2) end)
  local function diag_embed(x, offset, dim1, dim2)
    need('diag_embed', x)
    K.int('diag_embed', 'offset', offset, true)
    return diag_embed_node(x, offset or 0, dim1 or -2, dim2 or -1)
  end
  function diag_embed_raw(x, offset, dim1, dim2)
    offset = offset or 0
    local n = x:size(-1)
    local m = n + math.abs(offset)
    -- P[i, r, c] = 1 where (r, c) is the i-th place of the diagonal
    local P = torch.zeros(n, m, m, { dtype = x.dtype, device = x.device })
    for i = 1, n do
      local r, c = offset >= 0 and i or i - offset, offset >= 0 and i + offset or i
      P[i][r][c] = 1
    end
    local r = (x:unsqueeze(-1):unsqueeze(-1) * P):sum(-3)
    local nd = r:dim()
    local a, b = pdim('diag_embed', dim1 or -2, nd), pdim('diag_embed', dim2 or -1, nd)
    if a == b then fail('diag_embed', ('diagonal dimensions cannot be identical %d, %d'):format(dim1, dim2)) end
    if a ~= nd - 1 or b ~= nd then -- the diagonal's two dims (r's last two) go to a and b, the others keep their order
      local perm, k = {}, 1
      for i = 1, nd do
        if i == a then perm[i] = nd - 1
        elseif i == b then perm[i] = nd
        else perm[i] = k; k = k + 1 end
      end
      r = r:permute(perm)
    end
    return r
  end
  local function diagflat(x, offset)
    need('diagflat', x)
    K.int('diagflat', 'offset', offset, true)
    return diag_embed(x:reshape(-1), offset or 0)
  end
  local select_scatter_raw
  -- one node named as PyTorch's: x's gradient is g without the slice, src's the slice
  local select_scatter_node = K.node('SelectScatterBackward0', function(...) return select_scatter_raw(...) end,
    function(g, _, _, d, i) return select_scatter_raw(g, torch.zeros_like(g:select(d, i)), d, i), g:select(d, i) end)
  local function select_scatter(x, src, dim, index)
    need('select_scatter', x)
    need('select_scatter', src, 'src')
    K.int('select_scatter', 'index', index)
    local d = pdim('select_scatter', dim, x:dim())
    local n = x:size(d)
    return select_scatter_node(x, src, d, index < 0 and index + n + 1 or index)
  end
  function select_scatter_raw(x, src, d, i)
    local n = x:size(d)
    local parts = {}
    if i > 1 then parts[#parts + 1] = x:narrow(d, 1, i - 1) end
    parts[#parts + 1] = src:unsqueeze(d):to(x.dtype)
    if i < n then parts[#parts + 1] = x:narrow(d, i + 1, n - i) end
    return torch.cat(parts, d)
  end
  -- slice_scatter(x, src, dim=1, start=nil, end=nil, step=1): start 1-based, end inclusive-exclusive as Lua's narrow
  local function slice_scatter(x, src, dim, start, stop, step)
    need('slice_scatter', x)
    need('slice_scatter', src, 'src')
    if type(dim) == 'table' then
      local o = dim
      dim, start, stop, step = o.dim, o.start, o['end'], o.step
    end
    local d = pdim('slice_scatter', dim or 1, x:dim())
    local n = x:size(d)
    start = start or 1
    if start < 0 then start = start + n + 1 end
    stop = stop or n + 1
    if stop < 0 then stop = stop + n + 1 end
    step = step or 1
    if step == 1 then
      local parts = {}
      if start > 1 then parts[#parts + 1] = x:narrow(d, 1, start - 1) end
      parts[#parts + 1] = src:to(x.dtype)
      if stop <= n then parts[#parts + 1] = x:narrow(d, stop, n - stop + 1) end
      return torch.cat(parts, d)
    end
    local pos = {}
    for p = start, stop - 1, step do pos[#pos + 1] = p end
    local idx = torch.tensor(pos, { dtype = torch.int64 })
    local shape = sizes(src)
    local view = {}
    for i = 1, #shape do view[i] = i == d and #pos or 1 end
    return x:scatter(d, idx:reshape(view):expand(shape), src:to(x.dtype))
  end
  local function diagonal_scatter(x, src, offset, dim1, dim2)
    need('diagonal_scatter', x)
    local mask = diag_embed(torch.ones_like(src), offset or 0, dim1, dim2)
    local placed = diag_embed(src, offset or 0, dim1, dim2)
    -- diag_embed is square; x may not be: take x's own extent
    local nd = x:dim()
    for d = 1, nd do
      if placed:size(d) ~= x:size(d) then
        placed, mask = placed:narrow(d, 1, x:size(d)), mask:narrow(d, 1, x:size(d))
      end
    end
    return torch.where(mask:ne(0), placed, x)
  end
  local function hsplit(x, s)
    need('hsplit', x)
    if x:dim() < 1 then fail('hsplit', 'torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 dimensions!') end
    return x:tensor_split(s, x:dim() == 1 and 1 or 2)
  end
  local function vsplit(x, s)
    need('vsplit', x)
    if x:dim() < 2 then fail('vsplit', ('torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with %d dimensions!'):format(x:dim())) end
    return x:tensor_split(s, 1)
  end
  local function dsplit(x, s)
    need('dsplit', x)
    if x:dim() < 3 then fail('dsplit', ('torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with %d dimensions!'):format(x:dim())) end
    return x:tensor_split(s, 3)
  end
  composed.broadcast_tensors = broadcast_tensors -- (cross's: lua/ops/linalg.lua)

  -- one node each, named as PyTorch's; the gradient autograd's of the composite (K.node_autograd)
  diagonal_scatter = K.node_autograd('DiagonalScatterBackward0', diagonal_scatter)
  block_diag = K.node_autograd('BlockDiagBackward0', block_diag)

  local fns = { -- torch functions and methods
    take = take, take_along_dim = take_along_dim, diag_embed = diag_embed, diagflat = diagflat,
    select_scatter = select_scatter, slice_scatter = slice_scatter, diagonal_scatter = diagonal_scatter,
    hsplit = hsplit, vsplit = vsplit, dsplit = dsplit,
  }
  local only = { -- torch functions only
    broadcast_shapes = broadcast_shapes, broadcast_tensors = broadcast_tensors, meshgrid = meshgrid,
    cartesian_prod = cartesian_prod, combinations = combinations, block_diag = block_diag,
  }
  function composed.install(tt)
    torch = tt
    K.install_functions(torch, fns, true)
    K.install_functions(torch, only, false)
    -- the in-place methods PyTorch also has as torch functions
    K.functions_of_methods(torch, { 'index_put_' })
  end
end

return M
