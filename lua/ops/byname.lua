-- Arguments by name for the functions that take a dim (issue 27's frictions): PyTorch's
-- x.split(1, dim=1), x.transpose(dim0=0, dim1=1), torch.gather(x, dim=1, index=i) are
-- x:split(1, {dim = 2}), x:transpose{dim0 = 1, dim1 = 2}, torch.gather(x, {dim = 2, index = i}).
-- Each function listed here gets a front that, when its last argument is an options table naming
-- one of its positional arguments, moves those to their positions (what is left of the table
-- follows them, for the function's own options) and calls it as if they had been written so.
-- Functions that parse a {dim =, keepdim =} table themselves (sum, max, argmax, topk, sort, cat,
-- cumsum, softmax, ...) are not listed; dim_options_spec checks both kinds.
local core = require 'moontorch.ffi'

local fail = core.fail
local type, select, rawget, getmetatable, pairs, next, unpack = type, select, rawget, getmetatable, pairs, next, unpack

local M = {}

-- name -> its positional arguments after the tensor, in PyTorch's order; an entry that is a list
-- gives a name and its aliases ({'src', 'value'}); opts = true: the function takes an options
-- table of its own after them (keys not listed pass through to it), else an unknown key is an error
local NAMES = {
  mode = { 'dim', 'keepdim', opts = true },
  median = { 'dim', 'keepdim', opts = true },
  kthvalue = { 'k', 'dim', 'keepdim', opts = true },
  nanmean = { 'dim', 'keepdim', opts = true },
  quantile = { 'q', 'dim', 'keepdim', opts = true },
  nanquantile = { 'q', 'dim', 'keepdim', opts = true },
  cummax = { 'dim' }, cummin = { 'dim' }, logcumsumexp = { 'dim' },
  cumsum_ = { 'dim' }, cumprod_ = { 'dim' },
  flatten = { 'start_dim', 'end_dim' },
  squeeze = { 'dim' }, unsqueeze = { 'dim' }, squeeze_ = { 'dim' }, unsqueeze_ = { 'dim' },
  split = { 'split_size_or_sections', 'dim' }, split_with_sizes = { 'split_sizes', 'dim' },
  chunk = { 'chunks', 'dim' }, tensor_split = { 'indices_or_sections', 'dim' }, unbind = { 'dim' },
  narrow = { 'dim', 'start', 'length' }, select = { 'dim', 'index' },
  transpose = { 'dim0', 'dim1' }, transpose_ = { 'dim0', 'dim1' }, swapdims = { 'dim0', 'dim1' },
  swapdims_ = { 'dim0', 'dim1' }, swapaxes = { 'axis0', 'axis1' }, swapaxes_ = { 'axis0', 'axis1' },
  movedim = { 'source', 'destination' }, moveaxis = { 'source', 'destination' },
  unflatten = { 'dim', 'sizes' }, unfold = { 'dimension', 'size', 'step' },
  diagonal = { 'offset', 'dim1', 'dim2' }, diag_embed = { 'offset', 'dim1', 'dim2' },
  diagonal_scatter = { 'src', 'offset', 'dim1', 'dim2' },
  flip = { 'dims' }, roll = { 'shifts', 'dims' }, rot90 = { 'k', 'dims' },
  size = { 'dim' }, stride = { 'dim' },
  gather = { 'dim', 'index', opts = true }, index_select = { 'dim', 'index', opts = true },
  take_along_dim = { 'indices', 'dim' },
  scatter = { 'dim', 'index', { 'src', 'value' }, opts = true },
  scatter_ = { 'dim', 'index', { 'src', 'value' }, opts = true },
  scatter_add = { 'dim', 'index', 'src' }, scatter_add_ = { 'dim', 'index', 'src' },
  index_add = { 'dim', 'index', 'source', 'alpha', opts = true },
  index_add_ = { 'dim', 'index', 'source', 'alpha', opts = true },
  index_fill = { 'dim', 'index', 'value' }, index_fill_ = { 'dim', 'index', 'value' },
  index_copy = { 'dim', 'index', 'source' }, index_copy_ = { 'dim', 'index', 'source' },
  cross = { 'other', 'dim' }, renorm = { 'p', 'dim', 'maxnorm' },
  select_scatter = { 'src', 'dim', 'index' }, slice_scatter = { 'src', 'dim', 'start', 'end', 'step' },
  diff = { 'n', 'dim', 'prepend', 'append' },
  repeat_interleave = { 'repeats', 'dim', opts = true },
}
M.NAMES = NAMES

local function name_of(entry) return type(entry) == 'table' and entry[1] or entry end

-- does the options table o name one of the positional arguments?
local function names_one(o, names)
  for i = 1, #names do
    local e = names[i]
    if type(e) == 'table' then
      for j = 1, #e do if o[e[j]] ~= nil then return true end end
    elseif o[e] ~= nil then
      return true
    end
  end
  return false
end

-- the arguments with the named ones from the options table (the n-th) moved to their positions
local function by_position(op, names, takes_opts, n, ...)
  local v = { ... }
  local o = v[n]
  v[n] = nil
  local npos, last = n - 1, n - 1
  local rest = {}
  for k, x in pairs(o) do rest[k] = x end
  for i = 1, #names do
    local e = names[i]
    local aliases = type(e) == 'table' and e or { e }
    for j = 1, #aliases do
      local k = aliases[j]
      local x = o[k]
      if x ~= nil then
        if v[i] ~= nil then fail(op, ("got multiple values for argument '%s'"):format(name_of(e))) end
        v[i], rest[k] = x, nil
        if i > last then last = i end
      end
    end
  end
  local extra = next(rest)
  if extra ~= nil then
    if not takes_opts then fail(op, ("got an unexpected keyword argument '%s'"):format(tostring(extra))) end
    v[last + 1] = rest
    return unpack(v, 1, last + 1)
  end
  return unpack(v, 1, last)
end

-- f with the front; op: its name in messages. The front of a function of a fixed number of
-- arguments takes as many (a vararg function that returns through a trace aborts it: "NYI: return
-- to lower frame"), made once per arity; a vararg one (flip(t, ...)) gets a vararg front.
-- (compiled for each function, never shared, calling without a tail call: see lua/dotcall.lua)
local SRC = debug.getinfo(1, 'S').source
local dotcall = require 'moontorch.dotcall'
local function fixed_front(k)
  local args, last = {}, {}
  for i = 1, k do
    args[i] = 'a' .. i
    last[i] = ('  if a%d ~= nil then o = a%d end'):format(i, i)
  end
  local a = table.concat(args, ', ')
  local src = ([[
local f, slow, names, names_one, type, getmetatable, rawget, count, too_many = ...
return function(t, ARGS)
  local o = nil
LAST
  if type(o) == 'table' and getmetatable(o) == nil and rawget(o, 1) == nil and names_one(o, names) then
    return slow(t, ARGS)
  end
RETURN
end]]):gsub('RETURN', (dotcall.RETURN('f(t, ARGS)'):gsub('%%', '%%%%'))):gsub('ARGS', a):gsub('LAST', table.concat(last, '\n'))
  return assert(loadstring(src, SRC))
end

local function arity(f)
  local info = debug.getinfo(f, 'u')
  if info.isvararg then return nil end
  return info.nparams - 1
end

local function front(f, op, names, k)
  local takes_opts = names.opts == true
  local function slow(t, ...)
    local n = select('#', ...)
    while n > 0 and select(n, ...) == nil do n = n - 1 end
    return f(t, by_position(op, names, takes_opts, n, ...))
  end
  if k then
    if k < #names + 1 then k = #names + 1 end
    return fixed_front(k)(f, slow, names, names_one, type, getmetatable, rawget, dotcall.count, dotcall.too_many)
  end
  return function(t, ...)
    local n = select('#', ...)
    local last = n > 0 and select(n, ...) or nil
    while last == nil and n > 0 do -- (trailing nils: an in-place view passes its arguments on)
      n = n - 1
      last = n > 0 and select(n, ...) or nil
    end
    if type(last) == 'table' and getmetatable(last) == nil and rawget(last, 1) == nil and names_one(last, names) then
      return f(t, by_position(op, names, takes_opts, n, ...))
    end
    return f(t, ...)
  end
end
M.front = front

-- install(methods, torch): the fronts on the tensor methods and the torch.<name> functions listed
-- (torch.<name>(t, ...) that passes its arguments on to the method takes the method's arity)
function M.install(methods, torch)
  for name, names in pairs(NAMES) do
    local m = methods[name]
    local k = m and arity(m)
    if m then methods[name] = front(m, name, names, k) end
    local f = torch[name]
    if type(f) == 'function' then torch[name] = front(f, name, names, arity(f) or k) end
  end
end

return M
