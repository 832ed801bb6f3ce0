-- moontorch.fx's Graph and Node (PyTorch's torch.fx.Graph / Node): a doubly linked list of nodes,
-- each an op (placeholder, get_attr, call_function, call_method, call_module, output), its
-- target, its arguments (other nodes, or constants) and its users; printing as PyTorch prints a
-- graph (`tostring(graph)`, graph:print_tabular()), node names made as PyTorch makes them, and the
-- Lua source of a forward function (graph:lua_code()) that GraphModule compiles.
--
-- Arguments: node.args is an array with its length in `n` (a Lua call may pass nils), kwargs the
-- trailing options table of the call or nil. Inside them, nodes are the values of earlier nodes,
-- plain Lua tables are containers (arrays, option tables) whose items are mapped too, and every
-- other value is a constant. A node whose value is several Lua values (a module or function that
-- returns more than one) has `multi = true`: its value is their array ({n = k, ...}), read by
-- getitem nodes (`lstm[1]`).
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'

local fail = core.fail
local concat, sort, format = table.concat, table.sort, string.format

local M = {}

------------------------------------------------------------------------------ operators
-- call_function targets that are Lua operators and a few helpers: each a named function, so a
-- graph can name it, print it, save it and run it
local operators = {}
M.operators = operators
local function op(name, symbol, fn, arity)
  local o = setmetatable({ name = name, symbol = symbol, fn = fn, arity = arity }, {
    __call = function(self, ...) return self.fn(...) end,
    __tostring = function(self) return 'operator.' .. self.name end,
  })
  operators[name] = o
  return o
end
op('add', '+', function(a, b) return a + b end, 2)
op('sub', '-', function(a, b) return a - b end, 2)
op('mul', '*', function(a, b) return a * b end, 2)
op('truediv', '/', function(a, b) return a / b end, 2)
op('mod', '%', function(a, b) return a % b end, 2)
op('pow', '^', function(a, b) return a ^ b end, 2)
op('neg', '-', function(a) return -a end, 1)
op('getitem', nil, function(a, k) return a[k] end, 2)
op('getattr', nil, function(a, k) return a[k] end, 2)
local function is_operator(t) return type(t) == 'table' and operators[t.name] == t end
M.is_operator = is_operator

------------------------------------------------------------------------------ names
-- PyTorch's rule (torch.fx.graph._Namespace): a node's name is its target's, with characters
-- other than letters, digits and _ made _, a leading digit prefixed with _, and _1, _2, ... added
-- while it is taken or names a keyword or builtin. Python's keywords and builtins (as PyTorch
-- refuses them, so names match PyTorch's) and Lua's keywords and the generated code's names.
local illegal = {}
for w in ([[False None True and as assert async await break class continue def del elif else except finally for
  from global if import in is lambda nonlocal not or pass raise return try while with yield
  ArithmeticError AssertionError AttributeError BaseException BaseExceptionGroup BlockingIOError BrokenPipeError
  BufferError BytesWarning ChildProcessError ConnectionAbortedError ConnectionError ConnectionRefusedError
  ConnectionResetError DeprecationWarning EOFError Ellipsis EncodingWarning EnvironmentError Exception ExceptionGroup
  FileExistsError FileNotFoundError FloatingPointError FutureWarning GeneratorExit IOError ImportError ImportWarning
  IndentationError IndexError InterruptedError IsADirectoryError KeyError KeyboardInterrupt LookupError MemoryError
  ModuleNotFoundError NameError NotADirectoryError NotImplemented NotImplementedError OSError OverflowError
  PendingDeprecationWarning PermissionError ProcessLookupError RecursionError ReferenceError ResourceWarning
  RuntimeError RuntimeWarning StopAsyncIteration StopIteration SyntaxError SyntaxWarning SystemError SystemExit
  TabError TimeoutError TypeError UnboundLocalError UnicodeDecodeError UnicodeEncodeError UnicodeError
  UnicodeTranslateError UnicodeWarning UserWarning ValueError Warning ZeroDivisionError __build_class__ __debug__
  __doc__ __import__ __loader__ __name__ __package__ __spec__ abs aiter all anext any ascii bin bool breakpoint
  bytearray bytes callable chr classmethod compile complex copyright credits delattr dict dir divmod enumerate
  eval exec exit filter float format frozenset getattr globals hasattr hash help hex id input int isinstance
  issubclass iter len license list locals map max memoryview min next object oct open ord pow print property
  quit range repr reversed round set setattr slice sorted staticmethod str sum super tuple type vars zip
  inf nan NoneType torch
  end function local nil repeat then until elseif goto
  self F fx_const fx_pack math v]]):gmatch('%S+') do illegal[w] = true end
M.illegal_names = illegal

local Namespace = {}
Namespace.__index = Namespace
local function namespace() return setmetatable({ used = {} }, Namespace) end
function Namespace:create_name(candidate)
  candidate = candidate:gsub('[^0-9a-zA-Z_]+', '_')
  if candidate == '' then candidate = '_' end
  if candidate:match('^%d') then candidate = '_' .. candidate end
  local base, num = candidate:match('^(.*)_(%d+)$')
  if base then num = tonumber(num) else base, num = candidate, nil end
  candidate = num and (base .. '_' .. num) or base
  num = num or 0
  while self.used[candidate] or illegal[candidate] do
    num = num + 1
    candidate = base .. '_' .. num
  end
  self.used[candidate] = true
  return candidate
end

-- PyTorch's _snake_case: camelCase -> camel_case
local function snake(s)
  local out, prev_lower = {}, false
  for c in s:gmatch('.') do
    if prev_lower and c:match('%u') then out[#out + 1] = '_' end
    out[#out + 1] = c:lower()
    prev_lower = c:match('%l') ~= nil
  end
  return concat(out)
end

------------------------------------------------------------------------------ Node
local Node = class.class('fx.Node')
M.Node = Node
local function is_node(x) return getmetatable(x) == Node end
M.is_node = is_node

Node.__tostring = function(n) return n.name end

-- a plain Lua table (a container of arguments), not a node nor any other object
local function is_plain(v) return type(v) == 'table' and getmetatable(v) == nil end
M.is_plain = is_plain

-- map_arg(a, fn): a with every node x replaced by fn(x), containers copied
local function map_arg(a, fn)
  if is_node(a) then return fn(a) end
  if is_plain(a) then
    local r = {}
    for k, v in pairs(a) do r[k] = map_arg(v, fn) end
    return r
  end
  return a
end
M.map_arg = map_arg

-- the keys of plain table t beyond its array part 1..n, sorted as strings (a stable order)
local function named_keys(t, n)
  local keys = {}
  for k in pairs(t) do
    if not (type(k) == 'number' and k >= 1 and k <= n and k % 1 == 0) and k ~= 'n' then keys[#keys + 1] = k end
  end
  sort(keys, function(x, y) return tostring(x) < tostring(y) end)
  return keys
end

local function each_node(a, fn)
  if is_node(a) then fn(a)
  elseif is_plain(a) then
    -- in a stable order: array part first, then the other keys sorted
    local n = a.n or #a
    for i = 1, n do each_node(a[i], fn) end
    local keys = named_keys(a, n)
    for _, k in ipairs(keys) do each_node(a[k], fn) end
  end
end
M.each_node = each_node

-- the nodes this node reads, each once, in order of appearance
function Node:all_input_nodes()
  local seen, out = {}, {}
  local function add(x) if not seen[x] then seen[x] = true; out[#out + 1] = x end end
  each_node(self.args, add)
  if self.kwargs then each_node(self.kwargs, add) end
  return out
end

local function add_user(n, user)
  if not n.users_set[user] then
    n.users_set[user] = true
    n.users[#n.users + 1] = user
  end
end
local function remove_user(n, user)
  if n.users_set[user] then
    n.users_set[user] = nil
    for i, u in ipairs(n.users) do
      if u == user then table.remove(n.users, i) break end
    end
  end
end

-- set args/kwargs, keeping the users of inputs right
function Node:_set_args(args, kwargs)
  for _, x in ipairs(self:all_input_nodes()) do remove_user(x, self) end
  self.args, self.kwargs = args, kwargs
  for _, x in ipairs(self:all_input_nodes()) do add_user(x, self) end
end
function Node:update_arg(i, v)
  local a = {}
  for k, x in pairs(self.args) do a[k] = x end
  a[i] = v
  if i > (a.n or 0) then a.n = i end
  self:_set_args(a, self.kwargs)
end
function Node:update_kwarg(k, v)
  local kw = {}
  for key, x in pairs(self.kwargs or {}) do kw[key] = x end
  kw[k] = v
  self:_set_args(self.args, next(kw) and kw or nil)
end

-- replace_input_with(old, new): every use of old in this node's arguments becomes new
function Node:replace_input_with(old, new)
  local f = function(x) if x == old then return new end return x end
  self:_set_args(map_arg(self.args, f), self.kwargs and map_arg(self.kwargs, f) or nil)
end

-- replace_all_uses_with(new, delete_user_cb=nil): every user of this node reads `new` instead;
-- returns the users changed
function Node:replace_all_uses_with(new, delete_user_cb)
  local changed = {}
  for _, u in ipairs({ unpack(self.users) }) do
    if not delete_user_cb or delete_user_cb(u) then
      u:replace_input_with(self, new)
      changed[#changed + 1] = u
    end
  end
  return changed
end

function Node:next() return self._next ~= self.graph._root and self._next or nil end
function Node:prev() return self._prev ~= self.graph._root and self._prev or nil end

-- move this node to just before / after x
local function unlink(n)
  n._prev._next, n._next._prev = n._next, n._prev
end
local function link_before(n, x)
  n._prev, n._next = x._prev, x
  x._prev._next = n
  x._prev = n
end
function Node:prepend(x) -- x goes before self
  unlink(x)
  link_before(x, self)
end
function Node:append(x) -- x goes after self
  unlink(x)
  link_before(x, self._next)
end

------------------------------------------------------------------------------ formatting values
-- a constant as Python's str() would show it in a graph (Lua spellings: true/false/nil)
local function const_str(v)
  if v == nil then return 'nil' end
  local tv = type(v)
  if tv == 'number' then
    if v ~= v then return 'nan' end
    if v == math.huge then return 'inf' end
    if v == -math.huge then return '-inf' end
    if v % 1 == 0 and math.abs(v) < 2 ^ 53 then return format('%d', v) end
    return format('%.17g', v):gsub('(%.%d-)0+e', '%1e')
  end
  if tv == 'string' or tv == 'boolean' then return tostring(v) end
  local ok, s = pcall(tostring, v)
  return ok and s or tv
end
M.const_str = const_str

local function target_str(t)
  if type(t) == 'string' then return t end
  if is_operator(t) then return 'operator.' .. t.name end
  if type(t) == 'function' then
    local name = require('moontorch.observe').name_of(t) or M.wrapped_name(t)
    if name then return name end
  end
  return const_str(t)
end
M.target_str = target_str

-- PyTorch's _format_arg: nodes as %name, arrays as (a, b), option tables as {k: v}
local function format_arg(a, pct)
  if is_node(a) then return (pct and '%' or '') .. a.name end
  if is_plain(a) then
    local n = a.n or #a
    local parts = {}
    for i = 1, n do parts[#parts + 1] = format_arg(a[i], pct) end
    local keys = named_keys(a, n)
    if #keys > 0 and n == 0 then
      local kv = {}
      for _, k in ipairs(keys) do kv[#kv + 1] = tostring(k) .. ': ' .. format_arg(a[k], pct) end
      return '{' .. concat(kv, ', ') .. '}'
    end
    for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. ' = ' .. format_arg(a[k], pct) end
    return '(' .. concat(parts, ', ') .. (#parts == 1 and ',' or '') .. ')'
  end
  return const_str(a)
end
M.format_arg = format_arg

local function kwargs_str(kw, pct)
  if not kw then return '{}' end
  return format_arg(kw, pct)
end

function Node:format_node()
  local users = ('[#users=%d]'):format(#self.users)
  if self.op == 'placeholder' then
    local default = self.args.n and self.args.n > 0 and ('(default=' .. const_str(self.args[1]) .. ')') or ''
    return ('%%%s : %s = placeholder[target=%s]%s'):format(self.name, users, self.target, default)
  elseif self.op == 'get_attr' then
    return ('%%%s : %s = get_attr[target=%s]'):format(self.name, users, self.target)
  elseif self.op == 'output' then
    local parts = {}
    for i = 1, self.args.n or #self.args do parts[i] = format_arg(self.args[i]) end
    return 'return ' .. concat(parts, ', ')
  end
  return ('%%%s : %s = %s[target=%s](args = %s, kwargs = %s)'):format(self.name, users, self.op, target_str(self.target),
    format_arg(self.args, true), kwargs_str(self.kwargs, true))
end

------------------------------------------------------------------------------ Graph
local Graph = class.class('fx.Graph')
M.Graph = Graph

function Graph:__init()
  local root = { op = 'root' }
  root._prev, root._next = root, root
  rawset(self, '_root', root)
  rawset(self, '_ns', namespace())
  rawset(self, '_insert', nil) -- the node new nodes go before (nil: the end)
  rawset(self, '_len', 0)
end

-- nodes(): an array of the nodes in order
function Graph:nodes()
  local out, n = {}, self._root._next
  while n ~= self._root do
    out[#out + 1] = n
    n = n._next
  end
  return out
end
function Graph:len() return self._len end
-- the short name of a call_function target (PyTorch's target.__name__): 'add', 'relu'
function Graph.target_name(t)
  if is_operator(t) then return t.name end
  local q = target_str(t)
  return q:match('([^.]+)$') or q
end

-- create_node(op, target, args, kwargs, name): a new node at the insertion point
local valid_ops = { placeholder = true, get_attr = true, call_function = true, call_method = true,
  call_module = true, output = true }
function Graph:create_node(op_, target, args, kwargs, name)
  if not valid_ops[op_] then fail('fx.Graph.create_node', ('unknown op %s'):format(tostring(op_))) end
  args = args or { n = 0 }
  if args.n == nil then args.n = #args end
  if kwargs and next(kwargs) == nil then kwargs = nil end
  local candidate = name
  if candidate == nil then
    if type(target) == 'string' then
      candidate = target
      local magic = candidate:match('^__(.*)__$')
      if magic then candidate = magic end
    elseif is_operator(target) then
      candidate = target.name
    else
      local q = target_str(target)
      candidate = q:match('([^.]+)$') or q
    end
    candidate = snake(candidate)
  end
  local n = setmetatable({ graph = self, op = op_, target = target, users = {}, users_set = {}, meta = {},
    args = { n = 0 } }, Node)
  n.name = self._ns:create_name(candidate)
  n:_set_args(args, kwargs)
  link_before(n, self._insert or self._root)
  rawset(self, '_len', self._len + 1)
  return n
end

function Graph:placeholder(name, default)
  local args = { n = 0 }
  if default ~= nil then args = { n = 1, default } end
  return self:create_node('placeholder', name, args, nil)
end
function Graph:get_attr(qualified_name) return self:create_node('get_attr', qualified_name, { n = 0 }, nil) end
function Graph:call_function(fn, args, kwargs) return self:create_node('call_function', fn, args, kwargs) end
function Graph:call_method(name, args, kwargs) return self:create_node('call_method', name, args, kwargs) end
function Graph:call_module(name, args, kwargs) return self:create_node('call_module', name, args, kwargs) end
-- output(result, ...): the values forward returns (several for several)
function Graph:output(...)
  local args = { n = select('#', ...), ... }
  return self:create_node('output', 'output', args, nil)
end

-- inserting_before(node, fn) / inserting_after(node, fn): nodes made while fn runs go there
local function with_insert(self, at, fn)
  local prev = self._insert
  rawset(self, '_insert', at)
  local res = { pcall(fn) }
  rawset(self, '_insert', prev)
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end
function Graph:inserting_before(node, fn) return with_insert(self, node or self._root._next, fn) end
function Graph:inserting_after(node, fn) return with_insert(self, node and node._next or self._root._next, fn) end

-- erase_node(node): a node nobody uses leaves the graph
function Graph:erase_node(n)
  if #n.users > 0 then
    fail('fx.Graph.erase_node', ('Tried to erase Node %s but it still had %d users in the graph: %s!')
      :format(n.name, #n.users, concat((function() local t = {} for i, u in ipairs(n.users) do t[i] = u.name end return t end)(), ', ')))
  end
  n:_set_args({ n = 0 }, nil)
  unlink(n)
  n._erased = true
  rawset(self, '_len', self._len - 1)
end

-- node_copy(node, arg_transform): a copy of a node of another graph, its arguments mapped by
-- arg_transform (old node -> new node)
function Graph:node_copy(node, arg_transform)
  local args = map_arg(node.args, arg_transform)
  local kwargs = node.kwargs and map_arg(node.kwargs, arg_transform) or nil
  local n = self:create_node(node.op, node.target, args, kwargs, node.name)
  for k, v in pairs(node.meta) do n.meta[k] = v end
  n.multi = node.multi
  return n
end

-- graph_copy(g, val_map): every node of g but its output copied in; returns the values the
-- output returned (mapped), as several values
function Graph:graph_copy(g, val_map)
  local out
  for _, node in ipairs(g:nodes()) do
    if node.op == 'output' then
      out = map_arg(node.args, function(x) return val_map[x] end)
    else
      val_map[node] = self:node_copy(node, function(x) return val_map[x] end)
    end
  end
  if out then return unpack(out, 1, out.n) end
end

-- a deep copy of the graph
function Graph:copy()
  local g = Graph()
  local val_map = {}
  for _, node in ipairs(self:nodes()) do
    val_map[node] = g:node_copy(node, function(x) return val_map[x] end)
  end
  return g, val_map
end

function Graph:find_nodes(opts)
  local out = {}
  for _, n in ipairs(self:nodes()) do
    if (not opts.op or n.op == opts.op) and (opts.target == nil or n.target == opts.target) then out[#out + 1] = n end
  end
  return out
end

-- lint(): every node in order, its inputs earlier in the graph, its users right, one output last
function Graph:lint()
  local seen, names = {}, {}
  local nodes = self:nodes()
  for i, n in ipairs(nodes) do
    if n.graph ~= self then fail('fx.Graph.lint', ('Node %s does not belong to this Graph!'):format(n.name)) end
    if names[n.name] then fail('fx.Graph.lint', ('Node redefined name %s!'):format(n.name)) end
    names[n.name] = true
    for _, x in ipairs(n:all_input_nodes()) do
      if x._erased then fail('fx.Graph.lint', ('Argument %s of Node %s was used after being erased'):format(x.name, n.name)) end
      if not seen[x] then
        fail('fx.Graph.lint', ('Argument %s of Node %s was used before it has been defined!'):format(x.name, n.name))
      end
      if not x.users_set[n] then fail('fx.Graph.lint', ('Node %s is not among the users of %s'):format(n.name, x.name)) end
    end
    if n.op == 'output' and i ~= #nodes then fail('fx.Graph.lint', 'the output node must be the last node') end
    seen[n] = true
  end
  return true
end

-- the side-effect-free test of dead-code elimination: placeholders and the output stay, and (beyond
-- PyTorch 1.13) in-place methods (names ending in _) and nodes marked meta.impure
local function is_impure(n)
  if n.op == 'placeholder' or n.op == 'output' then return true end
  if n.meta.impure then return true end
  if n.op == 'call_method' and type(n.target) == 'string' and n.target:match('_$') then return true end
  return false
end
M.is_impure = is_impure

-- eliminate_dead_code(): nodes nobody uses removed, from the end; true when something was
function Graph:eliminate_dead_code()
  self:lint()
  local changed = false
  local nodes = self:nodes()
  for i = #nodes, 1, -1 do
    local n = nodes[i]
    if not is_impure(n) and #n.users == 0 then
      self:erase_node(n)
      changed = true
    end
  end
  return changed
end

Graph.__tostring = function(self)
  local lines = { 'graph():' }
  for _, n in ipairs(self:nodes()) do lines[#lines + 1] = '    ' .. n:format_node() end
  return concat(lines, '\n')
end

------------------------------------------------------------------------------ print_tabular
-- tabulate's "simple" table, as print_tabular prints it: headers, dashes, columns two spaces apart
-- (tabulate 0.8: a column is at least its header plus 2 wide; lines end without spaces)
function M.tabulate(rows, headers)
  local w = {}
  for j, h in ipairs(headers) do w[j] = #h + 2 end
  for _, r in ipairs(rows) do
    for j = 1, #headers do
      local c = r[j] or ''
      if #c > w[j] then w[j] = #c end
    end
  end
  local function line(cells)
    local parts = {}
    for j = 1, #headers do parts[j] = cells[j] .. (' '):rep(w[j] - #cells[j]) end
    return (concat(parts, '  '):gsub('%s+$', ''))
  end
  local out = { line(headers) }
  local dashes = {}
  for j = 1, #headers do dashes[j] = ('-'):rep(w[j]) end
  out[2] = concat(dashes, '  ')
  for _, r in ipairs(rows) do
    local cells = {}
    for j = 1, #headers do cells[j] = r[j] or '' end
    out[#out + 1] = line(cells)
  end
  return concat(out, '\n')
end

-- the arguments as Python's repr of the tuple / dict: (x, 2), {'dim': -1}
local function repr_arg(a)
  if is_node(a) then return a.name end
  if is_plain(a) then
    local n = a.n or #a
    local parts = {}
    for i = 1, n do parts[#parts + 1] = repr_arg(a[i]) end
    local keys = named_keys(a, n)
    if #keys > 0 and n == 0 then
      local kv = {}
      for _, k in ipairs(keys) do kv[#kv + 1] = ("'%s': %s"):format(tostring(k), repr_arg(a[k])) end
      return '{' .. concat(kv, ', ') .. '}'
    end
    for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. ' = ' .. repr_arg(a[k]) end
    return '(' .. concat(parts, ', ') .. (#parts == 1 and ',' or '') .. ')'
  end
  if type(a) == 'string' then return "'" .. a .. "'" end
  return const_str(a)
end

function Graph:tabular()
  local rows = {}
  for _, n in ipairs(self:nodes()) do
    -- (an operator as Python's str() shows it: <built-in function add>)
    local target = n.op == 'output' and 'output' or is_operator(n.target) and ('<built-in function %s>'):format(n.target.name)
      or target_str(n.target)
    rows[#rows + 1] = { n.op, n.name, target, repr_arg(n.args),
      n.kwargs and repr_arg(n.kwargs) or '{}' }
  end
  return M.tabulate(rows, { 'opcode', 'name', 'target', 'args', 'kwargs' })
end
function Graph:print_tabular() print(self:tabular()) end

------------------------------------------------------------------------------ Lua source
local lua_keywords = {}
for w in ('and break do else elseif end false for function goto if in local nil not or repeat return then true until while')
  :gmatch('%S+') do lua_keywords[w] = true end
local function is_ident(s) return type(s) == 'string' and s:match('^[%a_][%w_]*$') ~= nil and not lua_keywords[s] end

-- self.a.b['0'].c for the path 'a.b.0.c'
local function path_expr(base, path)
  local e = base
  for part in path:gmatch('[^.]+') do
    if is_ident(part) then e = e .. '.' .. part else e = e .. ('[%q]'):format(part) end
  end
  return e
end
M.path_expr = path_expr

-- the Lua source of the forward function of this graph. ctx.const(v) names a constant the source
-- cannot spell (it returns `fx_const[i]`). Several values of a node: fx_pack(...).
function Graph:lua_code(ctx)
  local dtype_mod = require 'moontorch.dtype'
  local nodes = self:nodes()
  local nvals = 0
  for _, n in ipairs(nodes) do if n.op ~= 'output' then nvals = nvals + 1 end end
  -- LuaJIT allows 200 locals per function: large graphs keep their values in a table
  local in_table = nvals > 180
  local function ref(n) return in_table and ('v.' .. n.name) or n.name end
  local function lit(v)
    if is_node(v) then return ref(v) end
    local tv = type(v)
    if v == nil then return 'nil' end
    if tv == 'number' then
      if v ~= v then return '(0/0)' end
      if v == math.huge then return 'math.huge' end
      if v == -math.huge then return '-math.huge' end
      if v % 1 == 0 and math.abs(v) < 2 ^ 53 then return format('%d', v) end
      return format('%.17g', v)
    end
    if tv == 'boolean' then return tostring(v) end
    if tv == 'string' then return format('%q', v) end
    if is_plain(v) then
      local n = v.n or #v
      local parts = {}
      for i = 1, n do parts[#parts + 1] = lit(v[i]) end
      local keys = named_keys(v, n)
      for _, k in ipairs(keys) do
        local key = is_ident(k) and k or ('[' .. lit(k) .. ']')
        parts[#parts + 1] = key .. ' = ' .. lit(v[k])
      end
      return '{' .. concat(parts, ', ') .. '}'
    end
    if dtype_mod.is_dtype(v) then return 'torch.' .. v.name end
    if dtype_mod.is_device(v) then return ('torch.device(%q)'):format(tostring(v)) end
    return ctx.const(v)
  end
  local function call_args(n)
    local parts = {}
    for i = 1, n.args.n or #n.args do parts[#parts + 1] = lit(n.args[i]) end
    if n.kwargs then parts[#parts + 1] = lit(n.kwargs) end
    return parts
  end
  -- the last user of each node, for freeing
  local last_use = {}
  for i, n in ipairs(nodes) do
    for _, x in ipairs(n:all_input_nodes()) do last_use[x] = i end
  end
  local params, body = { 'self' }, {}
  if in_table then body[#body + 1] = 'local v = {}' end
  for i, n in ipairs(nodes) do
    local rhs
    if n.op == 'placeholder' then
      params[#params + 1] = n.name
      if n.meta.concrete then
        -- traced with a fixed value: any other is refused
        local d = n.args[1]
        local td = type(d)
        if d == nil or td == 'boolean' or td == 'number' or td == 'string' then
          local cond = d == nil and (n.name .. ' ~= nil') or (('%s ~= nil and %s ~= %s'):format(n.name, n.name, lit(d)))
          body[#body + 1] = ("if %s then error(%q, 2) end"):format(cond,
            ('moontorch.fx: %s has been specialized to have value %s but got another value'):format(n.target, const_str(d)))
        end
      end
      if in_table then body[#body + 1] = ('v.%s = %s'):format(n.name, n.name) end
    elseif n.op == 'get_attr' then
      rhs = path_expr('self', n.target)
    elseif n.op == 'call_module' then
      rhs = path_expr('self', n.target) .. '(' .. concat(call_args(n), ', ') .. ')'
    elseif n.op == 'call_method' then
      local a = call_args(n)
      local obj = table.remove(a, 1)
      if is_ident(n.target) then rhs = obj .. ':' .. n.target .. '(' .. concat(a, ', ') .. ')'
      else
        table.insert(a, 1, obj)
        rhs = obj .. '[' .. lit(n.target) .. '](' .. concat(a, ', ') .. ')'
      end
    elseif n.op == 'call_function' then
      local t = n.target
      if is_operator(t) then
        local a = n.args
        if t.name == 'getitem' then rhs = lit(a[1]) .. '[' .. lit(a[2]) .. ']'
        elseif t.name == 'getattr' then
          rhs = is_ident(a[2]) and (lit(a[1]) .. '.' .. a[2]) or (lit(a[1]) .. '[' .. lit(a[2]) .. ']')
        elseif t.arity == 1 then rhs = t.symbol .. lit(a[1])
        else rhs = lit(a[1]) .. ' ' .. t.symbol .. ' ' .. lit(a[2]) end
      else
        local name = type(t) == 'function' and require('moontorch.observe').name_of(t)
        local fexpr
        if name and name:match('^torch%.nn%.functional%.') then fexpr = 'F.' .. name:sub(#'torch.nn.functional.' + 1)
        elseif name then fexpr = name
        else fexpr = ctx.const(t) end
        rhs = fexpr .. '(' .. concat(call_args(n), ', ') .. ')'
      end
    elseif n.op == 'output' then
      local a = {}
      for j = 1, n.args.n or #n.args do a[j] = lit(n.args[j]) end
      body[#body + 1] = 'return ' .. concat(a, ', ')
    end
    if rhs then
      if n.multi then rhs = 'fx_pack(' .. rhs .. ')' end
      local stmt = in_table and ('v.%s = %s'):format(n.name, rhs) or ('local %s = %s'):format(n.name, rhs)
      local frees = {}
      if n.op ~= 'output' then
        for _, x in ipairs(n:all_input_nodes()) do
          if last_use[x] == i then frees[#frees + 1] = ref(x) .. ' = nil' end
        end
      end
      if #frees > 0 then stmt = stmt .. ';  ' .. concat(frees, '; ') end
      body[#body + 1] = stmt
    end
  end
  local lines = { 'function forward(' .. concat(params, ', ') .. ')' }
  for _, s in ipairs(body) do lines[#lines + 1] = '    ' .. s end
  lines[#lines + 1] = 'end'
  return concat(lines, '\n')
end

------------------------------------------------------------------------------ saving
-- A graph as plain data (torch.save): nodes by name; a call_function target by its name (a
-- function of torch's tables, an operator, or a name given to fx.wrap); constants as they are
-- (numbers, strings, booleans, dtypes by name, devices by name)
function Graph:__serialize()
  local dtype_mod = require 'moontorch.dtype'
  local function enc(v)
    if is_node(v) then return { __node = v.name } end
    if is_plain(v) then
      local r = {}
      for k, x in pairs(v) do r[k] = enc(x) end
      if next(r) == nil then return { __empty = true } end
      return r
    end
    if dtype_mod.is_dtype(v) then return { __dtype = v.name } end
    if dtype_mod.is_device(v) then return { __device = tostring(v) } end
    local tv = type(v)
    if tv == 'number' or tv == 'string' or tv == 'boolean' then return v end
    fail('fx.Graph', ('cannot save a graph holding the constant %s'):format(const_str(v)))
  end
  local nodes = {}
  for i, n in ipairs(self:nodes()) do
    local target = n.target
    if n.op == 'call_function' then
      if is_operator(target) then target = 'operator.' .. target.name
      else
        target = target_str(target)
        if not M.resolve_target(target) then
          fail('fx.Graph', ('cannot save a graph calling %s: only functions of torch\'s tables, operators and functions ' ..
            'given a name by fx.wrap are saved'):format(target))
        end
      end
    end
    nodes[i] = { op = n.op, name = n.name, target = target, args = enc(n.args), kwargs = n.kwargs and enc(n.kwargs) or false,
      multi = n.multi or false }
  end
  return { nodes = nodes }
end

-- the function a saved call_function target names
function M.resolve_target(name)
  if type(name) ~= 'string' then return nil end
  local opname = name:match('^operator%.(.+)$')
  if opname then return operators[opname] end
  local w = M.wrapped[name]
  if w then return w end
  local torch = require 'moontorch'
  local cur = { torch = torch }
  for part in name:gmatch('[^.]+') do
    if type(cur) ~= 'table' then return nil end
    cur = cur[part]
  end
  return type(cur) == 'function' and cur or nil
end

function Graph.__deserialize(cls, s)
  local dtype_mod = require 'moontorch.dtype'
  local g = setmetatable({}, cls)
  Graph.__init(g)
  local by_name = {}
  local function dec(v)
    if type(v) == 'table' then
      if v.__node then
        local n = by_name[v.__node]
        if not n then error('a node reads ' .. tostring(v.__node) .. ' before it is made') end
        return n
      end
      if v.__empty then return {} end
      if v.__dtype then return dtype_mod.resolve(v.__dtype) end
      if v.__device then return dtype_mod.device(v.__device) end
      local r = {}
      for k, x in pairs(v) do r[k] = dec(x) end
      return r
    end
    return v
  end
  for _, d in ipairs(s.nodes) do
    local target = d.target
    if d.op == 'call_function' then
      target = M.resolve_target(d.target)
      if not target then error('unknown function ' .. tostring(d.target)) end
    end
    local args = dec(d.args)
    local n = g:create_node(d.op, target, args, d.kwargs and dec(d.kwargs) or nil, d.name)
    if n.name ~= d.name then error('the node name ' .. d.name .. ' is taken twice') end
    n.multi = d.multi or nil
    by_name[d.name] = n
  end
  return g
end

-- the functions fx.wrap made leaves: name -> function, and back
M.wrapped = {}
local wrapped_names = setmetatable({}, { __mode = 'k' })
function M.wrapped_name(fn) return wrapped_names[fn] end
function M.register_wrapped(fn, name)
  M.wrapped[name] = fn
  wrapped_names[fn] = name
end

return M
