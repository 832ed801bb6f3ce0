-- moontorch.argcheck: the failing half of the argument checks (tensor.lua's int_arg, seq_len,
-- check_list_len; torch.tensor's walk of nested data): it finds what is wrong and raises
-- `moontorch.<op>: <message>` at the caller's line. It runs only when something is wrong, so it
-- is loaded on the first failure (tensor.lua's `cold()`), not by every program: code that every
-- program loads is paid for by every program (memory, and the work of the GC cycles that the
-- tensor registry forces, which traverse it).
local ffi = require 'ffi'
local core = require 'moontorch.ffi'

local fail = core.fail
local type, tostring, rawget, next, getmetatable = type, tostring, rawget, next, getmetatable
local floor, huge = math.floor, math.huge
local tensor_ct = ffi.typeof('mt_tensor')
local i64_ct, u64_ct = ffi.typeof('int64_t'), ffi.typeof('uint64_t')

local M = {}

-- a value as the messages show it
local function describe(v)
  local tv = type(v)
  if tv == 'number' then
    if v ~= v then return 'nan' end
    if v == huge then return 'inf' end
    if v == -huge then return '-inf' end
    local s = tostring(v)
    if v ~= floor(v) and not s:find('[.e]') then s = ('%.17g'):format(v) end -- 2.0000000000000004
    return s
  end
  if tv == 'string' then return ('a string (%q)'):format(#v > 40 and v:sub(1, 40) .. '...' or v) end
  if tv == 'boolean' then return 'a boolean (' .. tostring(v) .. ')' end
  if tv == 'nil' then return 'nil' end
  if ffi.istype(tensor_ct, v) then return 'a tensor' end
  if tv == 'cdata' then return 'a cdata of type ' .. tostring(ffi.typeof(v)):gsub('^ctype', '') end
  return 'a ' .. tv
end
M.describe = describe

-- a value as a message shows it, tables by their contents (never an address): {7, 7}, an
-- options table {kernel_size = 7, stride = 2}, an nn.Linear, a tensor of size [2, 3]
local function show(v, depth)
  depth = depth or 0
  if ffi.istype(tensor_ct, v) then
    local sizes = {}
    for i = 0, v._ndim - 1 do sizes[#sizes + 1] = tostring(tonumber(v._sizes[i])) end
    return 'a tensor of size [' .. table.concat(sizes, ', ') .. ']'
  end
  if type(v) == 'string' then return ("'%s'"):format(#v > 40 and v:sub(1, 40) .. '...' or v) end
  if type(v) == 'function' then return 'a function' end
  if type(v) ~= 'table' then return describe(v) end
  local mt = getmetatable(v)
  local tn = mt and rawget(mt, '__typename')
  if tn then return ((tn:match('^[aeiouAEIOU]') or tn:match('^nn%.')) and 'an ' or 'a ') .. tn end
  if mt then return 'a table with a metatable' end
  if depth > 1 then return '{...}' end
  local n, keys = #v, {}
  for k in next, v do
    if not (type(k) == 'number' and k >= 1 and k <= n and k == floor(k)) then keys[#keys + 1] = k end
  end
  local parts = {}
  for i = 1, n < 8 and n or 8 do parts[#parts + 1] = show(v[i], depth + 1) end
  if n > 8 then parts[#parts + 1] = ('... (%d items)'):format(n) end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for i = 1, #keys < 6 and #keys or 6 do
    local k = keys[i]
    local ks = (type(k) == 'string' and k:match('^[%a_][%w_]*$')) and k or '[' .. show(k, 2) .. ']'
    parts[#parts + 1] = ks .. ' = ' .. show(v[k], depth + 1)
  end
  if #keys > 6 then parts[#parts + 1] = '...' end
  local body = '{' .. table.concat(parts, ', ') .. '}'
  if n == 0 and #keys > 0 and depth == 0 then return 'an options table ' .. body end
  return body
end
M.show = show

-- v is not an integer of int64's range (int_arg's fast path refused it, and it is not an
-- int64/uint64 cdata in range). `pos`: a 1-based position among several values of one argument.
function M.int_fail(v, op, what, pos)
  local subject = pos and ('%s at position %d'):format(what, pos) or what
  if (type(v) == 'number' and v == floor(v) and v ~= huge and v ~= -huge) or ffi.istype(u64_ct, v) then
    fail(op, ('%s is out of the range of int64, got %s (Overflow when unpacking long)'):format(subject,
      type(v) == 'number' and describe(v) or (tostring(v):gsub('U?LL$', ''))))
  end
  fail(op, ('%s must be an integer, got %s'):format(subject, describe(v)))
end

-- a dim beyond the C API's int (no tensor has that many dims)
function M.dim_range_fail(d, op)
  fail(op, ('dimension %s is out of range (a tensor has at most 16 dimensions)'):format(describe(d)))
end

function M.list_len_fail(n, op, max)
  fail(op, ('would return %s tensors, more than a Lua array can hold (%d)'):format(describe(n), max))
end

local function key_str(k)
  if type(k) == 'string' then return ('%q'):format(#k > 40 and k:sub(1, 40) .. '...' or k) end
  return describe(k)
end

-- t is not a sequence (seq_len refused it, or a reader met a nil in 1..#t): say why. `name`
-- says which table ('data[2]', 'size').
function M.seq_fail(t, op, name)
  local maxk, nint, other = 0, 0, nil
  for k in next, t do
    if type(k) == 'number' and k >= 1 and k == floor(k) and k < huge then
      nint = nint + 1
      if k > maxk then maxk = k end
    elseif k ~= 'n' and other == nil then
      other = k
    end
  end
  if other ~= nil then
    fail(op, ('%s has the key %s, which is not a position 1..n of a sequence'):format(name, key_str(other)))
  end
  local nf = rawget(t, 'n')
  if nf ~= nil and (type(nf) ~= 'number' or nf ~= floor(nf) or nf < 0 or nf == huge) then
    fail(op, ("%s.n must be the sequence's length, got %s"):format(name, describe(nf)))
  end
  local len = (nf ~= nil and nf > maxk) and nf or maxk
  -- nint keys in 1..len: the first hole, if any, is at nint + 1 at the latest
  for i = 1, (len < nint + 1) and len or nint + 1 do
    if rawget(t, i) == nil then
      fail(op, ('%s[%d] is nil: a sequence cannot have holes (its length is %s)'):format(name, i, describe(len)))
    end
  end
  if nf ~= nil and nf ~= len then
    fail(op, ('%s.n is %s but %s has %d elements'):format(name, describe(nf), name, len))
  end
  fail(op, name .. ' is not a sequence') -- not reached: one of the above holds
end

------------------------------------------------------------------------------ torch.tensor's data
-- 'data[i1]...[i_{depth-1}]': the table at `depth` of nested data (data itself is at depth 1);
-- path[d] is the position along dim d of the table being walked
local function path_name(path, depth)
  local s = 'data'
  for d = 1, depth - 1 do s = s .. '[' .. path[d] .. ']' end
  return s
end
M.path_name = path_name

M.seq_len = require('moontorch.tensor').seq_len

-- the table at `depth` (x) is not a sequence of the length n that dim `depth` has
function M.data_row_fail(op, x, depth, n, path)
  local name = path_name(path, depth)
  if type(x) ~= 'table' then
    fail(op, ('expected sequence of length %d at dim %d (got %s) at %s'):format(n, depth,
      ffi.istype(tensor_ct, x) and 'a tensor' or type(x), name))
  end
  local m = M.seq_len(x)
  if m == nil then M.seq_fail(x, op, name) end
  fail(op, ('expected sequence of length %d at dim %d (got %d) at %s'):format(n, depth, m, name))
end

-- row[i] (at `depth`) is a leaf that is neither a number, a boolean nor a one-element tensor
function M.data_leaf_fail(op, v, row, i, depth, path)
  if v == nil then M.seq_fail(row, op, path_name(path, depth)) end
  local where = path_name(path, depth) .. '[' .. i .. ']'
  if ffi.istype(tensor_ct, v) then
    fail(op, ('only one element tensors can be converted to Lua numbers: %s is a tensor of %d elements')
      :format(where, tonumber(v._numel)))
  end
  if type(v) == 'table' then
    fail(op, ('too many dimensions: %s is a table where a number was expected (the data is nested to different depths)')
      :format(where))
  end
  fail(op, ('could not infer dtype of %s at %s (expected a number or a boolean)'):format(describe(v), where))
end

return M
