-- Ordering and rearranging: sort, argsort, msort, topk, kthvalue, median, mode, unique,
-- searchsorted, bincount, flip, fliplr, flipud, roll, repeat (repeat_tensor), repeat_interleave, tile.
-- Dims are 1-based (negative from the end); returned indices are 1-based.
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local dtype = require 'moontorch.dtype'

local C = core.C
local raise_last, fail = core.raise_last, core.fail
local methods = T.methods
local is_tensor, take, wrap, outp, outp2, szbuf, szbuf2 = T.is_tensor, T.take, T.wrap, T.outp, T.outp2, T.szbuf,
  T.szbuf2
local cdim, parse_sizes, is_opts = T.cdim, T.parse_sizes, T.is_opts
local by_id = dtype.by_id
local type, floor, select, tostring, tonumber = type, math.floor, select, tostring, tonumber
local nan = 0 / 0

local outp3 = ffi.new('mt_tensor *[1]')
local M = {}
local torch

local function check_tensor(t, op)
  if not is_tensor(t) then fail(op, 'expected a tensor, got ' .. core.typeof(t)) end
end
local check_int = T.int_arg -- (v, op, what[, position]) -> v as a Lua number
local function opt_bool(v, op, what)
  if v == nil then return false end
  if type(v) ~= 'boolean' then fail(op, what .. ' must be a boolean, got ' .. tostring(v)) end
  return v
end
-- 0-based, non-negative C dim for t (Lua-side range check, as PyTorch's message)
local function wrapped_dim(t, d, op)
  local c = cdim(d, op)
  local n = t._ndim > 0 and t._ndim or 1
  if c < -n or c >= n then
    fail(op, ('dimension %d out of range (expected to be in range of [%d, %d])'):format(d, -n, n))
  end
  return c < 0 and c + n or c
end

------------------------------------------------------------------------------ sort family
-- sort(dim, {descending=, stable=}), sort({...}), sort(dim, descending)
function methods.sort(t, dim, opts)
  check_tensor(t, 'sort')
  if type(dim) == 'table' then dim, opts = nil, dim end
  local desc, stable = false, false
  if type(opts) == 'boolean' then desc = opts
  elseif opts ~= nil then
    if type(opts) ~= 'table' then fail('sort', 'expected an options table, got ' .. core.typeof(opts)) end
    desc = opt_bool(opts.descending, 'sort', 'descending')
    stable = opt_bool(opts.stable, 'sort', 'stable')
    if dim == nil then dim = opts.dim end
  end
  local d = dim == nil and -1 or cdim(dim, 'sort')
  if C.mt_sort(t, d, desc and 1 or 0, stable and 1 or 0, 1, outp, outp2) ~= 0 then raise_last() end
  local v, i = outp[0], outp2[0]
  return wrap(v), wrap(i)
end

function methods.argsort(t, dim, opts)
  local _, i = methods.sort(t, dim, opts)
  return i
end

function methods.msort(t)
  local v = methods.sort(t, 1)
  return v
end

-- topk(k, dim, {largest=, sorted=}) or topk(k, dim, largest, sorted)
function methods.topk(t, k, dim, opts, sorted)
  check_tensor(t, 'topk')
  k = check_int(k, 'topk', 'k')
  if type(dim) == 'table' then dim, opts = nil, dim end
  local largest, srt = true, true
  if type(opts) == 'boolean' then
    largest = opts
    if sorted ~= nil then srt = opt_bool(sorted, 'topk', 'sorted') end
  elseif opts ~= nil then
    if type(opts) ~= 'table' then fail('topk', 'expected an options table, got ' .. core.typeof(opts)) end
    if opts.largest ~= nil then largest = opt_bool(opts.largest, 'topk', 'largest') end
    if opts.sorted ~= nil then srt = opt_bool(opts.sorted, 'topk', 'sorted') end
    if dim == nil then dim = opts.dim end
  end
  local d = dim == nil and -1 or cdim(dim, 'topk')
  if C.mt_topk(t, k, d, largest and 1 or 0, srt and 1 or 0, 1, outp, outp2) ~= 0 then raise_last() end
  local v, i = outp[0], outp2[0]
  return wrap(v), wrap(i)
end

-- Per line of a tensor sorted along `d` (0-based), pick the element at 0-based position pos[L]
-- (lines in row-major order of the other dims). Returns values, indices of the reduced shape. The
-- picking is a gather on the tensors' own device (the positions go there as an index tensor), so
-- nothing here reads a device's memory; the values follow autograd through the gather.
local function pick_lines(vs, is, d, pos, keepdim, scalar)
  local shape = vs:size()
  local out = {}
  for i = 1, #shape do
    if i - 1 ~= d then out[#out + 1] = shape[i] elseif keepdim then out[#out + 1] = 1 end
  end
  if scalar then out = {} end
  local n = shape[d + 1]
  local lines = #pos
  local idx = torch.empty({ lines, 1 }, { dtype = torch.int64 })
  if lines > 0 then
    local buf = ffi.new('double[?]', lines)
    for L = 1, lines do buf[L - 1] = pos[L] + 1 end -- gather's positions count from 1
    if C.mt_tensor_from_doubles(idx, buf, lines) ~= 0 then raise_last() end
  end
  idx = idx:to(vs.device)
  local rv = vs:movedim(d + 1, -1):reshape(lines, n):gather(2, idx):reshape(out)
  local ri = is:movedim(d + 1, -1):reshape(lines, n):gather(2, idx):reshape(out)
  return rv, ri
end

-- values of a tensor (already contiguous, sorted along its last dim) as a flat ffi array
-- (on a device without data, meta, zeros: the positions picked from them only need to be valid)
local function flat_values(t)
  local n = t:numel()
  local fl = by_id[t._dtype].is_floating_point
  local buf = ffi.new(fl and 'double[?]' or 'int64_t[?]', n > 0 and n or 1)
  if t._device_type == 2 then return buf, fl end
  local st = fl and C.mt_tensor_to_doubles(t, buf, n) or C.mt_tensor_to_int64s(t, buf, n)
  if st ~= 0 then raise_last() end
  return buf, fl
end

-- sort along a dim for the reductions below; a scalar counts as one element along dim 1
local function sorted_lines(t, dim, op)
  check_tensor(t, op)
  local scalar = t._ndim == 0
  local d = dim == nil and (scalar and 0 or t._ndim - 1) or wrapped_dim(t, dim, op)
  local x = scalar and t:reshape(1) or t
  if scalar then d = 0 end
  local vs, is = methods.sort(x, d + 1)
  return vs, is, d, scalar, x:size()
end

local function keepdim_of(keepdim, opts)
  if type(keepdim) == 'table' then return keepdim.keepdim == true end
  if keepdim ~= nil then return keepdim == true end
  return opts ~= nil and opts.keepdim == true
end

-- kthvalue(k, dim, keepdim): the k-th smallest (1-based k) and its index
function methods.kthvalue(t, k, dim, keepdim, opts)
  if type(dim) == 'table' then dim, keepdim = nil, dim end
  k = check_int(k, 'kthvalue', 'k')
  local vs, is, d, scalar, shape = sorted_lines(t, dim, 'kthvalue')
  local n = shape[d + 1]
  if k < 1 or k > n then
    fail('kthvalue', ('selected number k out of range for dimension %d (k = %d, size %d)%s'):format(d + 1, k, n,
      k == 0 and ' (k counts from 1 here, as in PyTorch)' or ''))
  end
  local lines = n > 0 and vs:numel() / n or 0
  local pos = {}
  for L = 1, lines do pos[L] = k - 1 end
  return pick_lines(vs, is, d, pos, keepdim_of(keepdim, opts), scalar)
end

-- the reductions that pick one element of each line along a dim (median(dim), kthvalue, mode):
-- values and indices from one node named as PyTorch's, whose gradient goes to the picked element
-- (PyTorch's value_selecting_reduction_backward). dim_pos: where the dim is among the arguments
-- after the tensor (a table there holds keepdim, and median's also dim, as the functions read them)
local nils = {}
local function picked_node(name, raw, dim_pos)
  local Fn
  return function(t, ...)
    if not (is_tensor(t) and t.requires_grad and C.mt_is_grad_enabled() ~= 0) then return raw(t, ...) end
    if not Fn then
      Fn = torch.autograd.Function('moontorch.' .. name)
      Fn._backward_name = name
      function Fn.forward(ctx, x, ...)
        local v, i = raw(x, ...)
        ctx:mark_non_differentiable(i)
        ctx:save_for_backward(i)
        local dim, keepdim, opts = select(dim_pos, ...)
        if type(dim) == 'table' then dim, keepdim = nil, dim end
        if dim == nil and type(keepdim) == 'table' then dim = keepdim.dim end
        local nd = x:dim()
        ctx.d = dim == nil and math.max(nd, 1) or (dim < 0 and dim + nd + 1 or dim)
        ctx.keep, ctx.shape, ctx.nrest = keepdim_of(keepdim, opts), x:size(), select('#', ...)
        return v, i
      end
      function Fn.backward(ctx, g)
        local i = unpack(ctx.saved_tensors)
        local shape, d = ctx.shape, ctx.d
        local gx
        if #shape == 0 then
          gx = g:reshape({})
        else
          if not ctx.keep then g, i = g:unsqueeze(d), i:unsqueeze(d) end
          gx = torch.zeros(shape, { dtype = g.dtype, device = g.device }):scatter(d, i, g)
        end
        return gx, unpack(nils, 1, ctx.nrest)
      end
    end
    return Fn.apply(t, ...)
  end
end

-- median of all elements: one node named as PyTorch's, whose gradient is shared evenly by the
-- elements equal to the median (NaNs, when it is NaN), as PyTorch's evenly_distribute_backward
local median_all_raw, median_dim
local median_dim_node = picked_node('MedianBackward1', function(...) return median_dim(...) end, 1)
local median_all = require('moontorch.ops.compose').node('MedianBackward0', function(t) return median_all_raw(t) end,
  function(g, t)
    local v = median_all_raw(t:detach())
    local mask = v:item() ~= v:item() and t:detach():isnan() or t:detach():eq(v)
    return g * mask:to(g.dtype) / mask:sum():item()
  end)

-- median(): the lower median of all elements (NaN if any); median(dim, keepdim): values, indices
function methods.median(t, dim, keepdim, opts)
  if type(dim) == 'table' then dim, keepdim = nil, dim end
  if dim == nil and not (type(keepdim) == 'table' and keepdim.dim) then
    check_tensor(t, 'median')
    return median_all(t)
  end
  return median_dim_node(t, dim, keepdim, opts)
end
function median_all_raw(t)
  do
    local n = t:numel()
    if n == 0 then
      if not t:is_floating_point() then fail('median', 'median of an empty integer tensor is undefined') end
      return torch.full({}, nan, { dtype = t.dtype })
    end
    local vs, is, d, scalar = sorted_lines(t:reshape(-1), 1, 'median')
    local buf, fl = flat_values(vs)
    local p = floor((n - 1) / 2)
    if fl and buf[n - 1] ~= buf[n - 1] then -- a NaN sorts last: the median is NaN
      p = n - 1
    end
    local v = pick_lines(vs, is, 0, { p }, false, true)
    return v
  end
end
function median_dim(t, dim, keepdim, opts)
  if dim == nil then dim = keepdim.dim end
  local vs, is, d, scalar, shape = sorted_lines(t, dim, 'median')
  local n = shape[d + 1]
  if n == 0 then fail('median', ('cannot compute the median of an empty dimension %d'):format(d + 1)) end
  local vm = vs:movedim(d + 1, -1):contiguous()
  local buf, fl = flat_values(vm)
  local lines = vm:numel() / n
  local pos = {}
  local mid = floor((n - 1) / 2)
  for L = 0, lines - 1 do
    local p = mid
    if fl then
      -- NaNs sort last, in their original order: the first NaN of the line is the median
      local base = L * n
      if buf[base + n - 1] ~= buf[base + n - 1] then
        local lo, hi = 0, n - 1
        while lo < hi do
          local m = floor((lo + hi) / 2)
          if buf[base + m] ~= buf[base + m] then hi = m else lo = m + 1 end
        end
        p = lo
      end
    end
    pos[L + 1] = p
  end
  return pick_lines(vs, is, d, pos, keepdim_of(keepdim, opts), scalar)
end

-- mode(dim, keepdim): the most frequent value (the smallest among equally frequent ones) and
-- the index of its last occurrence
function methods.mode(t, dim, keepdim, opts)
  if type(dim) == 'table' then dim, keepdim = nil, dim end
  local vs, is, d, scalar, shape = sorted_lines(t, dim, 'mode')
  local n = shape[d + 1]
  if n == 0 then fail('mode', ('cannot compute the mode of an empty dimension %d'):format(d + 1)) end
  local vm = vs:movedim(d + 1, -1):contiguous()
  local buf = flat_values(vm)
  local lines = vm:numel() / n
  local pos = {}
  for L = 0, lines - 1 do
    local base = L * n
    local best, bestlen = 0, 0
    local i = 0
    while i < n do
      local j = i
      while j + 1 < n and buf[base + j + 1] == buf[base + i] do j = j + 1 end
      if j - i + 1 > bestlen then best, bestlen = j, j - i + 1 end
      i = j + 1
    end
    pos[L + 1] = best
  end
  return pick_lines(vs, is, d, pos, keepdim_of(keepdim, opts), scalar)
end
methods.kthvalue = picked_node('KthvalueBackward0', methods.kthvalue, 2)
methods.mode = picked_node('ModeBackward0', methods.mode, 1)

------------------------------------------------------------------------------ unique, searchsorted, bincount
-- unique({sorted=, return_inverse=, return_counts=}) -> values[, inverse][, counts]
function methods.unique(t, opts, ...)
  check_tensor(t, 'unique')
  local sorted, ri, rc = true, false, false
  if type(opts) == 'boolean' then -- unique(sorted, return_inverse, return_counts)
    sorted = opts
    ri = opt_bool((...), 'unique', 'return_inverse')
    rc = opt_bool(select(2, ...), 'unique', 'return_counts')
  elseif opts ~= nil then
    if type(opts) ~= 'table' then fail('unique', 'expected an options table, got ' .. core.typeof(opts)) end
    if opts.sorted ~= nil then sorted = opt_bool(opts.sorted, 'unique', 'sorted') end
    ri = opt_bool(opts.return_inverse, 'unique', 'return_inverse')
    rc = opt_bool(opts.return_counts, 'unique', 'return_counts')
    if opts.dim ~= nil then fail('unique', 'the dim option is not supported') end
  end
  outp2[0], outp3[0] = nil, nil
  if C.mt_unique(t, sorted and 1 or 0, ri and 1 or 0, rc and 1 or 0, 1, outp, outp2, outp3) ~= 0 then
    raise_last()
  end
  local v, i, c = outp[0], outp2[0], outp3[0]
  v = wrap(v)
  if ri then i = wrap(i) end
  if rc then c = wrap(c) end
  if ri and rc then return v, i, c end
  if ri then return v, i end
  if rc then return v, c end
  return v
end

-- searchsorted(sorted_sequence, values, {right=, side=, out_int32=}); values may be a number
function M.searchsorted(seq, values, opts)
  check_tensor(seq, 'searchsorted')
  if type(values) == 'number' then
    if seq._ndim ~= 1 then
      fail('searchsorted', 'input value can be a scalar only when boundaries tensor dimension is 1, but we got '
        .. 'boundaries tensor dim(' .. seq._ndim .. ')')
    end
    values = torch.tensor(values, { dtype = seq.dtype })
  end
  check_tensor(values, 'searchsorted')
  local right, int32 = false, false
  if opts ~= nil then
    if type(opts) ~= 'table' then fail('searchsorted', 'expected an options table, got ' .. core.typeof(opts)) end
    right = opt_bool(opts.right, 'searchsorted', 'right')
    if opts.side ~= nil then
      if opts.side ~= 'left' and opts.side ~= 'right' then
        fail('searchsorted', "side can only be 'left' or 'right', got " .. tostring(opts.side))
      end
      if right and opts.side == 'left' then
        fail('searchsorted', "side and right can't be set to opposites, got side of left while right was true")
      end
      right = opts.side == 'right'
    end
    int32 = opt_bool(opts.out_int32, 'searchsorted', 'out_int32')
  end
  if C.mt_searchsorted(seq, values, right and 1 or 0, 1, outp) ~= 0 then raise_last() end
  local r = take()
  if int32 then r = r:to(torch.int32) end
  return r
end
function methods.searchsorted(seq, values, opts) return M.searchsorted(seq, values, opts) end

-- bincount({weights=, minlength=}) or bincount(weights, minlength)
function methods.bincount(t, weights, minlength)
  check_tensor(t, 'bincount')
  if type(weights) == 'table' and not is_tensor(weights) then
    weights, minlength = weights.weights, weights.minlength
  end
  if weights ~= nil then check_tensor(weights, 'bincount') end
  minlength = check_int(minlength or 0, 'bincount', 'minlength')
  if C.mt_bincount(t, weights, minlength, outp) ~= 0 then raise_last() end
  return take()
end

------------------------------------------------------------------------------ flip, roll, repeat
-- dims as a number, an array, or varargs; into szbuf (0-based C dims), returns the count
local function dims_list(op, buf, ...)
  local n = select('#', ...)
  local first = ...
  if n == 1 and type(first) == 'table' then
    local k = T.seq_len(first) or T.seq_fail(first, op, 'dims')
    if k > 16 then fail(op, 'too many dimensions') end
    for i = 1, k do buf[i - 1] = cdim(first[i], op) end
    return k
  end
  if n > 16 then fail(op, 'too many dimensions') end
  for i = 1, n do buf[i - 1] = cdim((select(i, ...)), op) end
  return n
end

function methods.flip(t, ...)
  check_tensor(t, 'flip')
  if select('#', ...) == 0 then fail('flip', 'dims required') end
  local n = dims_list('flip', szbuf, ...)
  if C.mt_flip(t, szbuf, n, outp) ~= 0 then raise_last() end
  return take()
end
function M.fliplr(t)
  check_tensor(t, 'fliplr')
  if t._ndim < 2 then fail('fliplr', 'Input must be >= 2-d.') end
  return methods.flip(t, 2)
end
function M.flipud(t)
  check_tensor(t, 'flipud')
  if t._ndim < 1 then fail('flipud', 'Input must be >= 1-d.') end
  return methods.flip(t, 1)
end
methods.fliplr, methods.flipud = M.fliplr, M.flipud

-- roll(shifts, dims): shifts a number or array; dims nil (flattened), a number or an array
function methods.roll(t, shifts, dims)
  check_tensor(t, 'roll')
  local ns
  if type(shifts) == 'number' or type(shifts) == 'cdata' and not is_tensor(shifts) then
    szbuf2[0] = check_int(shifts, 'roll', 'shifts')
    ns = 1
  elseif type(shifts) == 'table' then
    ns = T.seq_len(shifts) or T.seq_fail(shifts, 'roll', 'shifts')
    if ns > 16 then fail('roll', 'too many shifts') end
    for i = 1, ns do szbuf2[i - 1] = check_int(shifts[i], 'roll', 'shifts', i) end
  else
    fail('roll', 'shifts must be a number or an array of numbers, got ' .. core.typeof(shifts))
  end
  if dims == nil then
    if C.mt_roll(t, szbuf2, nil, ns, outp) ~= 0 then raise_last() end
    return take()
  end
  local nd = dims_list('roll', szbuf, dims)
  if nd ~= ns then fail('roll', ('shifts and dimensions must align. shifts: %d, dims:%d'):format(ns, nd)) end
  if C.mt_roll(t, szbuf2, szbuf, ns, outp) ~= 0 then raise_last() end
  return take()
end

methods['repeat'] = function(t, ...)
  check_tensor(t, 'repeat')
  if select('#', ...) == 0 then fail('repeat', 'repeats required') end
  local n = parse_sizes('repeat', ...)
  if C.mt_repeat(t, szbuf, n, outp) ~= 0 then raise_last() end
  return take()
end
methods.repeat_tensor = methods['repeat']

-- tile(...): as repeat, with too few dims padded by leading 1s
function methods.tile(t, ...)
  check_tensor(t, 'tile')
  if select('#', ...) == 0 then fail('tile', 'dims required') end
  local n = parse_sizes('tile', ...)
  local nd = t._ndim
  if n < nd then
    local pad = nd - n
    for i = n - 1, 0, -1 do szbuf[i + pad] = szbuf[i] end
    for i = 0, pad - 1 do szbuf[i] = 1 end
    n = nd
  end
  if C.mt_repeat(t, szbuf, n, outp) ~= 0 then raise_last() end
  return take()
end

-- repeat_interleave(repeats, dim): repeats a number (or a one-element tensor); dim nil flattens
function methods.repeat_interleave(t, repeats, dim, opts)
  check_tensor(t, 'repeat_interleave')
  if type(dim) == 'table' then dim, opts = dim.dim, dim end
  if is_tensor(repeats) then
    if repeats:numel() ~= 1 then
      fail('repeat_interleave', 'only a number (or a one-element tensor) of repeats is supported')
    end
    repeats = repeats:item()
  end
  repeats = check_int(repeats, 'repeat_interleave', 'repeats')
  local d
  if dim == nil then d = -2147483648
  else d = wrapped_dim(t, dim, 'repeat_interleave') end
  if C.mt_repeat_interleave(t, repeats, d, outp) ~= 0 then raise_last() end
  return take()
end

function M.install(tt)
  torch = tt
  for _, name in ipairs { 'sort', 'argsort', 'msort', 'topk', 'kthvalue', 'median', 'mode', 'unique', 'bincount',
    'flip', 'roll', 'tile', 'repeat_interleave' } do
    tt[name] = methods[name]
  end
  tt.searchsorted, tt.fliplr, tt.flipud = M.searchsorted, M.fliplr, M.flipud
end

------------------------------------------------------------------------------ composed in Lua
-- rot90, unique_consecutive, bucketize, isin, unique with {dim =}.
-- Written with the ops above, so that autograd, dtypes and devices follow; 1-based dims and
-- positions, options in a trailing table. composed.install(torch) puts them in torch and on the
-- Tensor type where those lack the name (lua/init.lua calls it once every op file is installed).
M.composed = {}
do
  local K = require 'moontorch.ops.compose'
  local composed = M.composed
  local need, pdim, sizes = K.need, K.pdim, K.sizes
  local type, unpack, ipairs = type, unpack, ipairs

  local rot90_raw
  -- one node named as PyTorch's: the gradient turns back
  local rot90_node = K.node('Rot90Backward0', function(x, k, dims) return rot90_raw(x, k, dims) end,
    function(g, _, k, dims) return rot90_raw(g, -k, dims) end)
  local function rot90(x, k, dims)
    need('rot90', x)
    if type(k) == 'table' then k, dims = nil, k end
    K.int('rot90', 'k', k, true)
    return rot90_node(x, k or 1, dims or { 1, 2 })
  end
  function rot90_raw(x, k, dims)
    if #dims ~= 2 then fail('rot90', 'expected total rotation dims == 2, but got dims = ' .. #dims) end
    local nd = x:dim()
    if nd < 2 then fail('rot90', 'expected total dims >= 2, but got total dims = ' .. nd) end
    local d0, d1 = pdim('rot90', dims[1], nd), pdim('rot90', dims[2], nd)
    if d0 == d1 then fail('rot90', ('expected rotation dims to be different, but got dim0 = %d and dim1 = %d'):format(dims[1], dims[2])) end
    k = k % 4
    if k == 1 then return x:flip(d1):transpose(d0, d1) end
    if k == 2 then return x:flip({ d0, d1 }) end
    if k == 3 then return x:flip(d0):transpose(d0, d1) end
    return x:clone()
  end
  -- unique and unique_consecutive with {dim = d}: the slices along d, each as a list of Lua numbers
  -- that compare as the slices' values do (bools as 0/1, an int64 as its high and low 32 bits, so
  -- that values past 2^53 stay apart); NaN sorts last and equals nothing, not even itself
  local function slices(op, t, dim)
    if t:dim() == 0 then fail(op, 'Dimension specified as ' .. tostring(dim) .. ' but tensor has no dimensions') end
    local d = pdim(op, dim, t:dim())
    local moved = t:movedim(d, 1)
    local n = moved:size(1)
    local shape = sizes(moved)
    local m = 1
    for k = 2, #shape do m = m * shape[k] end
    if m == 0 and n > 0 then
      fail(op, "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
    end
    local list = {}
    if n > 0 then
      local rows = moved:reshape(n, m)
      local dt = t.dtype
      if dt == torch.bool then rows = rows:to(torch.uint8)
      elseif dt == torch.int64 then
        local hi = rows:div(4294967296, { rounding_mode = 'floor' })
        rows = torch.stack({ hi, rows - hi * 4294967296 }, 3):reshape(n, 2 * m)
      elseif t:is_complex() then
        fail(op, 'unique with dim is not supported for complex tensors')
      end
      list = rows:tolist()
    end
    return d, moved, n, list
  end
  -- the one-dimensional results of dim = d: values (slices `keep` of moved), inverse, counts
  local function slice_results(d, moved, keep, inverse, counts, opts)
    local r = { moved:index_select(1, torch.tensor(keep, { dtype = torch.int64 })):movedim(1, d) }
    if opts.return_inverse then r[#r + 1] = torch.tensor(inverse, { dtype = torch.int64 }) end
    if opts.return_counts then r[#r + 1] = torch.tensor(counts, { dtype = torch.int64 }) end
    return unpack(r)
  end
  local function same_row(a, b)
    for k = 1, #a do if a[k] ~= b[k] then return false end end
    return true
  end
  local function unique_consecutive_dim(x, opts)
    local d, moved, n, list = slices('unique_consecutive', x, opts.dim)
    local keep, inverse, counts = {}, {}, {}
    for i = 1, n do
      if i == 1 or not same_row(list[i - 1], list[i]) then
        keep[#keep + 1] = i
        counts[#keep] = 0
      end
      counts[#keep] = counts[#keep] + 1
      inverse[i] = #keep
    end
    return slice_results(d, moved, keep, inverse, counts, opts)
  end
  local function unique_consecutive(x, opts)
    need('unique_consecutive', x)
    opts = opts or {}
    if type(opts) ~= 'table' then fail('unique_consecutive', 'expected an options table, got ' .. core.typeof(opts)) end
    if opts.dim ~= nil then return unique_consecutive_dim(x, opts) end
    local flat = x:reshape(-1)
    local n = flat:numel()
    if n == 0 then
      local r = { flat:clone() }
      if opts.return_inverse then r[#r + 1] = torch.empty(sizes(x), { dtype = torch.int64 }) end
      if opts.return_counts then r[#r + 1] = torch.empty(0, { dtype = torch.int64 }) end
      return unpack(r)
    end
    local starts = torch.ones(n, { dtype = torch.bool })
    if n > 1 then starts = torch.cat({ torch.ones(1, { dtype = torch.bool }), flat:narrow(1, 2, n - 1):ne(flat:narrow(1, 1, n - 1)) }) end
    local values = flat:masked_select(starts)
    local r = { values }
    if opts.return_inverse then r[#r + 1] = starts:to(torch.int64):cumsum(1):reshape(sizes(x)) end
    if opts.return_counts then
      local pos = starts:nonzero():reshape(-1)
      local ends = torch.cat({ pos:narrow(1, 2, pos:numel() - 1), torch.tensor({ n + 1 }, { dtype = torch.int64 }) })
      r[#r + 1] = ends - pos
    end
    return unpack(r)
  end

  local fns = { -- torch functions and methods
    rot90 = rot90, unique_consecutive = unique_consecutive,
  }
  function composed.install(tt)
    torch = tt
    K.install_functions(torch, fns, true)
    -- the methods PyTorch also has as torch functions
    K.functions_of_methods(torch, { 'msort' })
    if torch.bucketize == nil then
      -- bucketize(input, boundaries, {right=, out_int32=}): searchsorted with the roles swapped (1-based)
      torch.bucketize = function(input, boundaries, opts)
        if type(input) == 'number' then input = torch.tensor(input) end
        return torch.searchsorted(boundaries, input, opts)
      end
    end
    if torch.isin == nil then
      torch.isin = function(elements, test, opts)
        T.options(opts, 'isin')
        local inv = opts and opts.invert or false
        local e = is_tensor(elements) and elements or torch.tensor(elements)
        local t = is_tensor(test) and test or torch.tensor({ test })
        local r = e:unsqueeze(-1):eq(t:reshape(-1)):any(-1)
        if e:dim() == 0 then r = e:reshape(1):unsqueeze(-1):eq(t:reshape(-1)):any(-1):reshape({}) end
        return inv and r:logical_not() or r
      end
    end
    -- unique({dim = d}): the distinct slices along d, in sorted (lexicographic) order
    do
      local base = methods.unique
      local function unique_dim(t, opts)
        local d, moved, n, list = slices('unique', t, opts.dim)
        local order = {}
        for i = 1, n do order[i] = i end
        -- lexicographic, NaN after every number, ties (equal slices, NaN against NaN) by position
        local function less(a, b)
          local ra, rb = list[a], list[b]
          for k = 1, #ra do
            local x, y = ra[k], rb[k]
            if x ~= y then
              if x ~= x then
                if y == y then return false end
              elseif y ~= y then return true
              else return x < y end
            end
          end
          return a < b
        end
        table.sort(order, less)
        local keep, inverse, counts = {}, {}, {}
        for j, i in ipairs(order) do
          if j == 1 or not same_row(list[order[j - 1]], list[i]) then
            keep[#keep + 1] = i
            counts[#keep] = 0
          end
          counts[#keep] = counts[#keep] + 1
          inverse[i] = #keep
        end
        return slice_results(d, moved, keep, inverse, counts, opts)
      end
      local function unique(t, opts, ...)
        if type(opts) == 'table' and not is_tensor(opts) and opts.dim ~= nil and is_tensor(t) then
          return unique_dim(t, opts)
        end
        return base(t, opts, ...)
      end
      methods.unique = unique
      torch.unique = unique
    end
  end
end

return M
