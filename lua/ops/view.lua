-- Views (no copy): view, reshape, transpose, t, permute, narrow, select, unsqueeze, squeeze,
-- expand, flatten, unfold, as_strided, diagonal; and t[i] / t[i] = v indexing.
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local C = core.C
local raise_last, fail = core.raise_last, core.fail
local methods = T.methods
local is_tensor, take, outp, szbuf, szbuf2 = T.is_tensor, T.take, T.outp, T.szbuf, T.szbuf2
local parse_sizes, cdim, int_arg = T.parse_sizes, T.cdim, T.int_arg
local type = type

local M = {}
local torch

function methods.view(t, ...)
  local a = ...
  if type(a) == 'table' and require('moontorch.dtype').is_dtype(a) then
    fail('view', 'viewing as another dtype is not supported')
  end
  local n = parse_sizes('view', ...)
  if C.mt_view(t, szbuf, n, outp) ~= 0 then raise_last() end
  return take()
end
function methods.reshape(t, ...)
  local n = parse_sizes('reshape', ...)
  if C.mt_reshape(t, szbuf, n, outp) ~= 0 then raise_last() end
  return take()
end
local function need_other(op, o)
  if not is_tensor(o) then fail(op, 'expected a tensor for other, got ' .. T.describe(o)) end
end
function methods.view_as(t, o) need_other('view_as', o) return t:view(o:size()) end
function methods.reshape_as(t, o) need_other('reshape_as', o) return t:reshape(o:size()) end

function methods.transpose(t, d0, d1)
  if C.mt_transpose(t, cdim(d0, 'transpose'), cdim(d1, 'transpose'), outp) ~= 0 then raise_last() end
  return take()
end
methods.swapaxes, methods.swapdims = methods.transpose, methods.transpose
function methods.t(t)
  local n = t._ndim
  if n > 2 then fail('t', ('t() expects a tensor with <= 2 dimensions, but self is %dD'):format(n)) end
  if n < 2 then return t end
  if C.mt_transpose(t, 0, 1, outp) ~= 0 then raise_last() end
  return T.name_grad_fn(take(), 'TBackward0')
end
function methods.permute(t, ...)
  local n = parse_sizes('permute', ...)
  for i = 0, n - 1 do
    local d = tonumber(szbuf[i])
    szbuf[i] = cdim(d, 'permute')
  end
  if C.mt_permute(t, szbuf, n, outp) ~= 0 then raise_last() end
  return take()
end
-- a dim of t, 1-based and non-negative (as PyTorch's maybe_wrap_dim, with 1-based messages)
local function wrap_dim(t, dim, op)
  local n = t._ndim > 0 and t._ndim or 1
  local d = cdim(dim, op)
  if d < -n or d >= n then
    fail(op, ('dimension %d out of range (expected to be in range of [%d, %d] without 0)')
      :format(d < 0 and d or d + 1, -n, n))
  end
  return (d < 0 and d + n or d) + 1
end
function methods.movedim(t, src, dst)
  if type(src) == 'table' or type(dst) == 'table' then
    fail('movedim', 'source and destination must each be one dimension (a number)')
  end
  local n = t._ndim
  local s, d = wrap_dim(t, src, 'movedim'), wrap_dim(t, dst, 'movedim')
  if n == 0 then return t end
  local order = {}
  for i = 1, n do if i ~= s then order[#order + 1] = i end end
  table.insert(order, d, s)
  return t:permute(order)
end
methods.moveaxis = methods.movedim

-- narrow(dim, start, length): start is 1-based
function methods.narrow(t, dim, start, length)
  start, length = int_arg(start, 'narrow', 'start'), int_arg(length, 'narrow', 'length')
  local s = start > 0 and start - 1 or start
  if start == 0 then fail('narrow', 'start 0 is out of range: positions are 1-based') end
  if C.mt_narrow(t, cdim(dim, 'narrow'), s, length, outp) ~= 0 then raise_last() end
  return take()
end
-- select(dim, index): index is 1-based, negative from the end
function methods.select(t, dim, index)
  index = int_arg(index, 'select', 'index')
  if index == 0 then fail('select', 'index 0 is out of range: indices are 1-based') end
  if C.mt_select(t, cdim(dim, 'select'), index > 0 and index - 1 or index, outp) ~= 0 then raise_last() end
  return take()
end
function methods.unsqueeze(t, dim)
  -- dims of the result: 1..ndim+1
  if C.mt_unsqueeze(t, cdim(dim, 'unsqueeze'), outp) ~= 0 then raise_last() end
  return take()
end
function methods.squeeze(t, dim)
  local st
  if dim == nil then st = C.mt_squeeze(t, 0, 1, outp)
  else st = C.mt_squeeze(t, cdim(dim, 'squeeze'), 0, outp) end
  if st ~= 0 then raise_last() end
  return take()
end
function methods.expand(t, ...)
  local n = parse_sizes('expand', ...)
  if C.mt_expand(t, szbuf, n, outp) ~= 0 then raise_last() end
  return take()
end
function methods.expand_as(t, o) need_other('expand_as', o) return t:expand(o:size()) end
function methods.flatten(t, s, e)
  if C.mt_flatten(t, s and cdim(s, 'flatten') or 0, e and cdim(e, 'flatten') or -1, outp) ~= 0 then raise_last() end
  return take()
end
function methods.ravel(t) return t:reshape(-1) end
function methods.unflatten(t, dim, sizes)
  local d = wrap_dim(t, dim, 'unflatten') - 1
  if type(sizes) ~= 'table' then
    fail('unflatten', 'sizes must be a table of integers, got ' .. T.describe(sizes))
  end
  local k = T.seq_len(sizes) or T.seq_fail(sizes, 'unflatten', 'sizes')
  local shape = t:size()
  local new = {}
  for i = 1, d do new[#new + 1] = shape[i] end
  for i = 1, k do new[#new + 1] = int_arg(sizes[i], 'unflatten', 'sizes', i) end
  for i = d + 2, #shape do new[#new + 1] = shape[i] end
  return t:view(new)
end
function methods.unfold(t, dim, size, step)
  size, step = int_arg(size, 'unfold', 'size'), int_arg(step, 'unfold', 'step')
  if C.mt_unfold(t, cdim(dim, 'unfold'), size, step, outp) ~= 0 then raise_last() end
  return take()
end
function methods.as_strided(t, size, stride, offset)
  if type(size) ~= 'table' then fail('as_strided', 'size must be a table of integers, got ' .. T.describe(size)) end
  if type(stride) ~= 'table' then
    fail('as_strided', 'stride must be a table of integers, got ' .. T.describe(stride))
  end
  local n = T.seq_len(size) or T.seq_fail(size, 'as_strided', 'size')
  local ns = T.seq_len(stride) or T.seq_fail(stride, 'as_strided', 'stride')
  if ns ~= n then fail('as_strided', ('mismatch in length of strides and shape (%d and %d)'):format(ns, n)) end
  if n > 16 then fail('as_strided', 'too many dimensions (' .. n .. ')') end
  for i = 1, n do
    szbuf[i - 1] = int_arg(size[i], 'as_strided', 'size', i)
    szbuf2[i - 1] = int_arg(stride[i], 'as_strided', 'stride', i)
  end
  if offset ~= nil then
    offset = int_arg(offset, 'as_strided', 'storage_offset')
    if offset < 0 then fail('as_strided', ('Tensor: invalid storage offset %d'):format(offset)) end
  end
  if C.mt_as_strided(t, szbuf, szbuf2, n, offset or -1, outp) ~= 0 then raise_last() end
  return take()
end
function methods.diagonal(t, offset, d0, d1)
  if type(offset) == 'table' then offset, d0, d1 = offset.offset, offset.dim1, offset.dim2 end
  offset = offset == nil and 0 or int_arg(offset, 'diagonal', 'offset')
  if C.mt_diagonal(t, offset, d0 and cdim(d0, 'diagonal') or 0, d1 and cdim(d1, 'diagonal') or 1, outp) ~= 0 then
    raise_last()
  end
  return take()
end
function methods.broadcast_to(t, ...) return t:expand(...) end

------------------------------------------------------------------------------ indexing
-- t[i] (1-based, negative from the end): select along the first dim
local function number_index(t, i)
  i = int_arg(i, 'index', 'index')
  if i == 0 then fail('index', 'index 0 is out of range: indices are 1-based') end
  if C.mt_select(t, 0, i > 0 and i - 1 or i, outp) ~= 0 then raise_last() end
  return take()
end

-- t[{i, {a, b}, ':', mask...}] : Torch7-style multi-dim indexing. Each entry is a number (select),
-- a {first, last} range (inclusive, 1-based, negatives from the end), {} or ':' (everything).
local function table_index(t, idx)
  local r = t
  local d = 0 -- current dim (0-based) in r
  for k = 1, T.seq_len(idx) or T.seq_fail(idx, 'index', 'the index table') do
    local e = idx[k]
    if type(e) == 'number' then
      e = int_arg(e, 'index', 'index', k)
      if e == 0 then fail('index', 'index 0 is out of range: indices are 1-based') end
      if C.mt_select(r, d, e > 0 and e - 1 or e, outp) ~= 0 then raise_last() end
      r = take()
    elseif e == ':' or (type(e) == 'table' and not is_tensor(e) and next(e) == nil) then
      d = d + 1
    elseif type(e) == 'table' and not is_tensor(e) then
      local ne = T.seq_len(e)
      if ne == nil or ne > 3 then
        if ne == nil and e[2] == nil and e[3] ~= nil then -- Python's x[a::s]: a nil cannot stand in a Lua table
          fail('index', ('{first, nil, step} cannot work in Lua (a table ends at its first nil): write {first, -1, step}'
            .. ' for a range to the end (PyTorch\'s first::step), at position %d'):format(k))
        end
        fail('index', ('a range is {first}, {first, last} or {first, last, step}, got %s at position %d')
          :format(ne and ('a table of %d entries'):format(ne) or 'a table that is not a sequence', k))
      end
      local n = tonumber(r._sizes[d])
      local first = int_arg(e[1], 'index', 'range start', k)
      local last = e[2] == nil and first or int_arg(e[2], 'index', 'range end', k)
      local step = e[3] == nil and 1 or int_arg(e[3], 'index', 'range step', k)
      if first == 0 or last == 0 then
        fail('index', ('range {%d, %d} at position %d is out of range: positions are 1-based'):format(first, last, k))
      end
      if first < 0 then first = first + n + 1 end
      if last < 0 then last = last + n + 1 end
      if C.mt_slice(r, d, first - 1, last, step, outp) ~= 0 then raise_last() end
      r = take()
      d = d + 1
    elseif is_tensor(e) then
      -- t[{i1, i2, ...}] with index tensors only: advanced indexing over the leading dims
      if k ~= 1 then fail('index', 'tensor indices must all come first and be the only indices') end
      for j = 2, #idx do
        if not is_tensor(idx[j]) then fail('index', 'tensor indices must all come first and be the only indices') end
      end
      return T.advanced_index(r, idx)
    elseif e == nil then
      T.seq_fail(idx, 'index', 'the index table')
    else
      fail('index', 'unsupported index ' .. T.describe(e) .. ' at position ' .. k)
    end
  end
  return r
end

-- t[mask] / t[long_index]: advanced indexing (lua/ops/shape.lua). Positions are 1-based,
-- negative from the end; a mask selects over as many leading dims as it has.
local function tensor_index(t, idx)
  return T.advanced_index(t, { idx })
end
function M.index_shape(t, idx)
  local s = idx:size()
  for i = 2, t:dim() do s[#s + 1] = t:size(i) end
  return s
end
T.tensor_index = tensor_index

local function assign(view, v)
  if type(v) == 'number' or type(v) == 'boolean' then view:fill_(v)
  elseif is_tensor(v) then view:copy_(v)
  else fail('index', 'can only assign a number or a tensor, got ' .. core.typeof(v)) end
end

local function newindex(t, k, v)
  local tk = type(k)
  if tk == 'number' or tk == 'cdata' and not is_tensor(k) then return assign(number_index(t, k), v) end
  if tk == 'table' then
    if is_tensor(k[1]) then
      -- t[{i1, i2, ...}] = v with index tensors: index_put_
      if type(v) == 'boolean' then v = v and 1 or 0 end
      if is_tensor(v) and v._dtype ~= t._dtype then v = v:to(t.dtype) end
      return t:index_put_(k, v)
    end
    return assign(table_index(t, k), v)
  end
  if tk == 'cdata' and is_tensor(k) then
    -- t[mask] = v, t[idx] = v: index_put_ (values broadcast to the indexed shape)
    if type(v) == 'boolean' then v = v and 1 or 0 end
    if type(v) == 'number' and k._dtype == 11 and k._ndim == t._ndim then
      local same = true
      for i = 0, t._ndim - 1 do if k._sizes[i] ~= t._sizes[i] then same = false end end
      if same then return t:masked_fill_(k, v) end
    end
    if not is_tensor(v) and type(v) ~= 'number' then
      fail('index', 'can only assign a number or a tensor, got ' .. core.typeof(v))
    end
    if is_tensor(v) and v._dtype ~= t._dtype then v = v:to(t.dtype) end
    return t:index_put_({ k }, v)
  end
  fail('index', ("cannot set field '%s' of a tensor"):format(tostring(k)))
end

function M.install(tt)
  torch = tt
  T.set_indexers(number_index, table_index, tensor_index, newindex)
  for _, name in ipairs { 'view', 'reshape', 'transpose', 'permute', 'narrow', 'select', 'unsqueeze', 'squeeze',
    'expand', 'flatten', 'unfold', 'as_strided', 'diagonal', 't', 'movedim', 'swapaxes', 'ravel', 'unflatten',
    'broadcast_to' } do
    tt[name] = require('moontorch.ops.compose').function_of_method(name, methods[name])
  end
end

------------------------------------------------------------------------------ composed in Lua
-- swapdims/moveaxis and the other view methods as torch functions; the in-place view ops
-- (t_, transpose_, unsqueeze_, squeeze_, as_strided_: the tensor itself takes the view's shape).
-- Written with the ops above, so that autograd, dtypes and devices follow; 1-based dims and
-- positions, options in a trailing table. composed.install(torch) puts them in torch and on the
-- Tensor type where those lack the name (lua/init.lua calls it once every op file is installed).
M.composed = {}
do
  local K = require 'moontorch.ops.compose'
  local composed = M.composed
  local need = K.need

  function composed.install(tt)
    torch = tt
    -- the methods PyTorch also has as torch functions
    K.functions_of_methods(torch, { 'swapdims', 'swapaxes', 'moveaxis', 'movedim', 'narrow_copy', 'ravel', 'adjoint' })
    if methods.moveaxis == nil and methods.movedim then methods.moveaxis = methods.movedim torch.moveaxis = torch.movedim end
    if methods.swapdims == nil and methods.transpose then
      methods.swapdims = methods.transpose
      torch.swapdims = torch.transpose
    end
    -- the in-place view ops: the tensor itself takes the view's shape (core: mt_set_view_)
    local C, raise_last = core.C, core.raise_last
    local function inplace_view(name, f)
      if methods[name] ~= nil then return end
      methods[name] = function(t, ...)
        need(name, t)
        local v = f(t, ...)
        if C.mt_set_view_(t, v, name) ~= 0 then raise_last() end
        return t
      end
    end
    inplace_view('t_', function(t) return t:t() end)
    inplace_view('transpose_', function(t, a, b) return t:transpose(a, b) end)
    inplace_view('swapdims_', function(t, a, b) return t:transpose(a, b) end)
    inplace_view('swapaxes_', function(t, a, b) return t:transpose(a, b) end)
    inplace_view('unsqueeze_', function(t, d) return t:unsqueeze(d) end)
    inplace_view('squeeze_', function(t, d) if d == nil then return t:squeeze() end return t:squeeze(d) end)
    inplace_view('as_strided_', function(t, size, stride, offset) return t:as_strided(size, stride, offset) end)
  end
end

return M
