-- Methods called with '.' instead of ':' (x.size(1), model.parameters(), loss.item(), the Python
-- habit). A method read through an instance (a tensor's metatable, nn.Module's __index) is handed
-- out as a front that checks its first argument is such an instance, and otherwise raises
-- "moontorch.size: call it with ':' (x:size(...)), not '.'" at the user's line; then it calls the
-- method (a tail call: no frame of its own). One front per method function, made on first use; a
-- front takes as many arguments as its method (a vararg front only for a vararg method: traces
-- that return through vararg frames abort). core.unwrap(front) gives the method back (help, `?`).
local core = require 'moontorch.ffi'

local type, select, error, setmetatable, loadstring = type, select, error, setmetatable, loadstring

local M = {}

local SRC = debug.getinfo(1, 'S').source -- fronts count as this file's (user_level skips them)

local originals = core.wrapped or setmetatable({}, { __mode = 'k' }) -- front -> method
core.wrapped = originals
function core.unwrap(f) return originals[f] or f end

-- "the first argument is 0, not a tensor": what the dot call passed first
local function first_arg(x)
  if x == nil then return 'nothing' end
  return require('moontorch.argcheck').show(x)
end

-- raise the message (what: 'tensor' or 'module'; example: how the call looks with ':')
local function dot_fail(op, name, what, example, x)
  core.fail(op, ("call it with ':' (%s:%s(...)), not '.': the first argument is %s, not the %s")
    :format(example, name, first_arg(x), what))
end

-- A front calls its method without a tail call: LuaJIT counts the tail calls a trace records and
-- aborts it past 15 ("loop unroll limit reached"), and moontorch's own code spends that budget
-- already. RETURN(call) is Lua that makes the call and returns all of its results (up to 8; the
-- number of results of a method varies with its arguments: max() and max(dim)).
local function count(...) return select('#', ...), ... end
local function too_many(n) error(('moontorch: a method returned %d results (at most 8 pass a front)'):format(n), 2) end
M.count, M.too_many = count, too_many
function M.RETURN(call)
  return ([[
  local n, r1, r2, r3, r4, r5, r6, r7, r8 = count(%s)
  if n == 1 then return r1 elseif n == 2 then return r1, r2 elseif n == 0 then return
  elseif n == 3 then return r1, r2, r3 elseif n == 4 then return r1, r2, r3, r4
  elseif n <= 8 then return r1, r2, r3, r4, r5, r6, r7, r8 end
  return too_many(n)]]):format(call)
end

-- The front's code is compiled for each method (loadstring), never shared (a shared prototype
-- met again in one trace looks like recursion to the recorder). is_self: the test of the first
-- argument `s`, as Lua code over the upvalues c1, c2 (inline, for the same reason).
local function make(k, f, is_self, c1, c2, op, name, what, example) -- k: arguments after self, -1: vararg
  local args = {}
  for i = 1, k do args[i] = 'a' .. i end
  local a = k < 0 and '...' or table.concat(args, ', ')
  local sep = a ~= '' and ', ' or ''
  local src = ([[
local f, c1, c2, dot_fail, op, name, what, example, type, rawget, count, too_many = ...
return function(s%s%s)
  if not (%s) then return dot_fail(op, name, what, example, s) end
%s
end]]):format(sep, a, is_self, M.RETURN(('f(s%s%s)'):format(sep, a)))
  return assert(loadstring(src, SRC))(f, c1, c2, dot_fail, op, name, what, example, type, rawget, count, too_many)
end

-- front(f, name, is_self, c1, c2, op, what, example): f's front (op: the name in the message)
function M.front(f, name, is_self, c1, c2, op, what, example)
  if type(f) ~= 'function' then return f end
  local info = debug.getinfo(f, 'u')
  local k = info.isvararg and -1 or (info.nparams > 0 and info.nparams - 1 or 0)
  local w = make(k, f, is_self, c1, c2, op, name, what, example)
  originals[w] = f
  return w
end

-- a cache of fronts, by method function and then by name (an alias gets its own front, named as
-- called; one name read from instances of different classes, as forward is, finds each class's):
-- cache(f, name) -> front; the table f -> {name -> front} comes second, for a lookup inline
function M.cache(is_self, c1, c2, what, example, op_of)
  local fronts = setmetatable({}, { __mode = 'k' }) -- f -> {name -> front}
  return function(f, name)
    local by_name = fronts[f]
    if by_name == nil then
      by_name = {}
      fronts[f] = by_name
    else
      local w = by_name[name]
      if w ~= nil then return w end
    end
    local w = M.front(f, name, is_self, c1, c2, op_of(name), what, example)
    by_name[name] = w
    return w
  end, fronts
end

return M
