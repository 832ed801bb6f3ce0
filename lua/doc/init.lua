-- moontorch.doc: the one source of moontorch's documentation. Every public name has an entry in one
-- of the files beside this one (lua/doc/<place>.lua; which file: PLACES), and everything that shows
-- documentation reads those entries: `?name` in the REPL, `torch.help(fn)` (the same text), and the
-- reference in docs/reference/ (`./run docs` writes it; spec/docs_spec.lua fails when the checked-in
-- copy differs, when a public name has no entry, or when an entry names nothing that exists).
-- The files are read on the first question, never by `require 'moontorch'`.
--
-- An entry (docs/reference/README.md, "Writing a doc", says the same for the team):
--   doc { 'torch.zeros(size..., {dtype=, device=, requires_grad=}) -> Tensor',   -- signature lines:
--         'Tensor:new_zeros(size..., {dtype=, device=}) -> Tensor',             -- each names a key
--     does = 'A tensor of the given size filled with 0; the size as numbers or as one array.',
--     ex = 'print(torch.zeros(2, 3):size())  --> torch.Size([2, 3])',   -- runs in the spec; `-->` checked
--     pt = 'torch.zeros, Tensor.new_zeros',    -- optional: PyTorch's names (derived from the keys
--   }                                          -- when absent; false: moontorch's own)
--   (unchecked_args = true: the spec does not compare the signatures' arguments with the function's
--   parameters: a base method that subclasses override with more, a function that ignores them)
--   doc.alias('torch.concat', 'torch.cat')     -- another name of the same value (the spec checks it)
--   doc.section 'Reductions'                   -- a heading for the entries after it in the reference
--   doc.op { 'exp', does = 'e to the power of each element.', ex = '...' }   -- lua/doc/ops.lua only:
--     an op of MT_OP_LIST; its signatures, dtype rule, autograd and aliases come from the op list
-- Keys: torch.f, Tensor:method, Tensor.property, nn.Class, nn.Class:method, F.f (torch.nn.functional),
-- nn.init.f, nn.utils.f, optim.Class, optim.lr_scheduler.Class, torch.utils.data.Class, ...
local M = {}

-- The file that holds a key's doc: the first prefix that matches (more specific ones first). A place
-- whose file does not exist yet is simply empty. Ops of MT_OP_LIST are documented in ops.lua.
M.PLACES = {
  { 'Tensor', 'tensor' },
  { 'F.', 'functional' },
  { 'nn.utils.parametrize', 'parametrize' },
  { 'nn.utils.parametrizations', 'parametrize' },
  { 'nn.utils.prune', 'prune' },
  { 'nn.parallel', 'distributed' },
  { 'torch.utils.data.distributed', 'distributed' },
  { 'nn.quantized', 'quantization' },
  { 'nn.intrinsic', 'quantization' },
  { 'nn.qat', 'quantization' },
  { 'nn.init.', 'nn_utils' },
  { 'nn.utils.', 'nn_utils' },
  { 'nn.', 'nn' },
  { 'optim.', 'optim' },
  { 'torch.utils.data.', 'data' },
  { 'torch.datasets.', 'data' },
  { 'torch.autograd.profiler', 'profiler' },
  { 'torch.profiler', 'profiler' },
  { 'torch.autograd.', 'autograd' },
  { 'torch.amp', 'amp' },
  { 'torch.cpu.amp', 'amp' },
  { 'torch.cuda.amp', 'amp' },
  { 'torch.autocast', 'amp' },
  { 'torch.is_autocast', 'amp' },
  { 'torch.set_autocast', 'amp' },
  { 'torch.get_autocast', 'amp' },
  { 'torch.clear_autocast', 'amp' },
  { 'torch.quantization', 'quantization' },
  { 'torch.quantize_', 'quantization' },
  { 'torch.dequantize', 'quantization' },
  { 'torch.fake_quantize_', 'quantization' },
  { 'torch.qint', 'quantization' },
  { 'torch.quint', 'quantization' },
  { 'torch.per_tensor_', 'quantization' },
  { 'torch.per_channel_', 'quantization' },
  { 'torch.ao.', 'quantization' },
  { 'torch.cuda.', 'cuda' },
  { 'torch.distributed', 'distributed' },
  { 'torch.fx', 'fx' },
  { 'torch.sparse', 'sparse' },
  { 'torch.distributions', 'distributions' },
  { 'torch.', 'torch' },
}
-- the order the files are read in (and the reference's pages)
M.FILES = { 'torch', 'ops', 'tensor', 'nn', 'functional', 'nn_utils', 'optim', 'data', 'autograd', 'cuda',
  'distributed', 'parametrize', 'prune', 'fx', 'profiler', 'sparse', 'amp', 'quantization', 'distributions' }
M.TITLES = {
  torch = 'torch: creating tensors, dtypes, randomness, files, modes',
  ops = 'torch and Tensor: the ops of the C core (MT_OP_LIST)',
  tensor = 'Tensor: methods and properties',
  nn = 'nn: modules',
  functional = 'nn.functional (F)',
  nn_utils = 'nn.init and nn.utils',
  optim = 'optim and optim.lr_scheduler',
  data = 'torch.utils.data and torch.datasets',
  autograd = 'torch.autograd',
  cuda = 'torch.cuda',
  distributed = 'torch.distributed',
  parametrize = 'nn.utils.parametrize and parametrizations',
  prune = 'nn.utils.prune',
  fx = 'torch.fx',
  profiler = 'torch.profiler',
  sparse = 'torch.sparse',
  amp = 'torch.amp: autocast and GradScaler',
  quantization = 'torch.quantization (torch.ao.quantization)',
  distributions = 'torch.distributions',
}

function M.place(key)
  for _, p in ipairs(M.PLACES) do
    if key:sub(1, #p[1]) == p[1] then return p[2] end
  end
  return 'torch'
end

------------------------------------------------------------------------------------- reading the files
-- the key a signature line names: its text up to '(' or ' ' ('torch.zeros(...)' -> 'torch.zeros')
local function key_of(sig)
  return sig:match('^([%w_%.:]+)')
end
M.key_of = key_of

local function where()
  local info = debug.getinfo(3, 'Sl')
  local src = info and info.source:match('^@(.*)$') or '?'
  local file = src:match('/doc/([%w_]+%.lua)$')
  return (file and 'lua/doc/' .. file or src) .. ':' .. (info and info.currentline or 0)
end

-- The functions whose positional arguments also go by name in a trailing options table through
-- the by-name fronts (lua/ops/byname.lua's NAMES: x:split(1, {dim = 2})): the note that says so,
-- for an entry with such a key, made from that table
local function byname_note(keys)
  local ok, byname = pcall(require, 'moontorch.ops.byname')
  local names = ok and type(byname) == 'table' and byname.NAMES
  if not names then return nil end
  for _, k in ipairs(keys) do
    local short = k:match('^torch%.([%w_]+)$') or k:match('^Tensor:([%w_]+)$')
    local args = short and names[short]
    if args then
      local parts = {}
      for _, a in ipairs(args) do parts[#parts + 1] = (type(a) == 'table' and a[1] or a) .. '=' end
      return ('Its arguments after the tensor also go by name in the trailing options table: {%s}.')
        :format(table.concat(parts, ', '))
    end
  end
  return nil
end

local function definer(reg, file)
  local function add(e, at)
    e.file, e.at = file, at
    local keys, seen = {}, {}
    for _, k in ipairs(e.keys) do
      if not seen[k] then seen[k] = true; keys[#keys + 1] = k end
    end
    e.keys = keys
    if e.kind == 'doc' then
      local note = byname_note(keys)
      if note then e.note = e.note and (note .. ' ' .. e.note) or note end
    end
    for _, k in ipairs(e.keys) do
      local old = reg.by_key[k]
      if old then error(('moontorch.doc: %s is documented twice (%s and %s)'):format(k, old.at, at), 0) end
      reg.by_key[k] = e
    end
    reg.entries[#reg.entries + 1] = e
    return e
  end
  local doc = {}
  local function check_text(e, at)
    if type(e.does) ~= 'string' or not e.does:match('%S') then
      error(('moontorch.doc: the entry at %s needs does = "what it does"'):format(at), 0)
    end
    if type(e.ex) ~= 'string' or not e.ex:match('%S') then
      error(('moontorch.doc: the entry at %s needs ex = "an example"'):format(at), 0)
    end
  end
  setmetatable(doc, {
    __call = function(_, e)
      local at = where()
      if type(e) ~= 'table' or type(e[1]) ~= 'string' then
        error(('moontorch.doc: the entry at %s needs a signature line first'):format(at), 0)
      end
      check_text(e, at)
      local sigs, keys = {}, {}
      for i = 1, #e do
        local k = key_of(e[i])
        if not k then error(('moontorch.doc: %s: signature %q does not begin with a name'):format(at, e[i]), 0) end
        sigs[i] = e[i]
        keys[#keys + 1] = k
      end
      for _, k in ipairs(e.keys or {}) do keys[#keys + 1] = k end
      return add({ kind = 'doc', sigs = sigs, keys = keys, does = e.does, ex = e.ex, pt = e.pt, note = e.note,
        unchecked_args = e.unchecked_args }, at)
    end,
  })
  -- doc.section(title): a heading in the reference page before the entries that follow
  function doc.section(title)
    reg.entries[#reg.entries + 1] = { kind = 'section', title = title, file = file, keys = {}, at = where() }
  end
  -- doc.alias(name, target): name is the same value as target, under another name
  function doc.alias(name, target, sig)
    local at = where()
    return add({ kind = 'alias', keys = { name }, target = target, sigs = { sig or name } }, at)
  end
  -- doc.op{name, [signature lines...,] does=, ex=}: an op of the op list (lua/doc/ops.lua)
  function doc.op(e)
    local at = where()
    if type(e) ~= 'table' or type(e[1]) ~= 'string' then
      error(('moontorch.doc: doc.op at %s needs the op\'s name first'):format(at), 0)
    end
    check_text(e, at)
    local op = reg.ops_by_name()[e[1]]
    if not op then error(('moontorch.doc: %s: MT_OP_LIST has no op named %q'):format(at, e[1]), 0) end
    local sigs = {}
    for i = 2, #e do sigs[#sigs + 1] = e[i] end
    if #sigs == 0 then sigs = M.op_signatures(op) end
    local keys = {}
    for _, s in ipairs(sigs) do keys[#keys + 1] = key_of(s) end
    for _, k in ipairs(e.keys or {}) do keys[#keys + 1] = k end
    local entry = add({ kind = 'doc', op = op, sigs = sigs, keys = keys, does = e.does, ex = e.ex, pt = e.pt,
      note = M.op_note(op, e.note) }, at)
    -- the op list's other names of it
    for _, alias in ipairs(op.aliases) do
      local ns, short = alias:match('^(%w+)%.(.+)$')
      local targets = ns and { { 'torch.' .. ns .. '.' .. short, 'torch.' .. op.name } }
        or { { 'torch.' .. alias, 'torch.' .. op.name }, { 'Tensor:' .. alias, 'Tensor:' .. op.name },
          { 'Tensor:' .. alias .. '_', 'Tensor:' .. op.name .. '_' } }
      for _, t in ipairs(targets) do
        if reg.by_key[t[2]] == entry and not reg.by_key[t[1]] then
          add({ kind = 'alias', keys = { t[1] }, target = t[2], sigs = { t[1] }, generated = true }, at)
        end
      end
    end
    return entry
  end
  return doc
end

-- the op list, by name
local function ops_by_name()
  local list = require 'moontorch.ops.list'
  local t = {}
  for _, op in ipairs(list.ops()) do t[op.name] = op end
  return t
end

-- the signature lines the op list implies for a PLAIN op (see lua/ops/elementwise.lua)
function M.op_signatures(op)
  local n = op.name
  if op.kind:sub(1, 6) == 'BINARY' then
    return { ('torch.%s(input, other, {out=}) -> Tensor'):format(n), ('Tensor:%s(other) -> Tensor'):format(n),
      ('Tensor:%s_(other) -> self'):format(n) }
  end
  local ps, opts = '', { 'out=' }
  if #op.params > 0 then
    ps = ', ' .. table.concat(op.params, ', ')
    for i, p in ipairs(op.params) do table.insert(opts, i, p .. '=') end
  end
  local sigs = { ('torch.%s(input%s, {%s}) -> Tensor'):format(n, ps, table.concat(opts, ', ')),
    ('Tensor:%s(%s) -> Tensor'):format(n, ps:sub(3)) }
  if op.kind ~= 'UNARY_TEST' then sigs[3] = ('Tensor:%s_(%s) -> self'):format(n, ps:sub(3)) end
  if rawget(require('moontorch'), n .. '_') then sigs[#sigs + 1] = ('torch.%s_(input%s) -> input'):format(n, ps) end
  return sigs
end

local KIND_NOTES = {
  UNARY_FLOAT = 'Elementwise; integer inputs give the default float dtype.',
  UNARY_KEEP = 'Elementwise; the result keeps the input\'s dtype.',
  UNARY_TEST = 'Elementwise; a bool result.',
  UNARY_LOGICAL = 'Elementwise; a bool result.',
  UNARY_BITS = 'Elementwise, on integer and bool tensors.',
  BINARY_ARITH = 'Elementwise with broadcasting; either side may be a Lua number; PyTorch\'s type promotion.',
  BINARY_FLOAT = 'Elementwise with broadcasting; either side may be a Lua number; a float result.',
  BINARY_CMP = 'Elementwise with broadcasting; either side may be a Lua number; a bool result.',
  BINARY_BITS = 'Elementwise with broadcasting, on integer and bool tensors.',
  REDUCE = 'A reduction.',
  VIEW = 'A view: shares the input\'s storage where it can.',
}
function M.op_note(op, extra)
  local parts = {}
  if extra then parts[#parts + 1] = extra end
  if KIND_NOTES[op.kind] then parts[#parts + 1] = KIND_NOTES[op.kind] end
  if op.differentiable then parts[#parts + 1] = 'Differentiable.' end
  local aliases = {}
  for _, a in ipairs(op.aliases) do aliases[#aliases + 1] = a:find('.', 1, true) and 'torch.' .. a or 'torch.' .. a end
  if #aliases > 0 then parts[#parts + 1] = 'Also called ' .. table.concat(aliases, ', ') .. '.' end
  parts[#parts + 1] = ('(Op %s of MT_OP_LIST.)'):format(op.name)
  return table.concat(parts, ' ')
end

-- the source file of a place (lua/doc/<place>.lua), or nil when it does not exist
local function place_path(place)
  return package.searchpath('moontorch.doc.' .. place, package.path)
end
M.place_path = place_path

M._definer = definer

local registry
-- load(): every entry of every file, read once: { entries = {in file order}, by_key = {key -> entry} }
function M.load()
  if registry then return registry end
  local reg = { entries = {}, by_key = {} }
  local ops
  reg.ops_by_name = function() ops = ops or ops_by_name(); return ops end
  for _, place in ipairs(M.FILES) do
    local path = place_path(place)
    if path then
      local chunk, err = loadfile(path)
      if not chunk then error('moontorch.doc: ' .. err, 0) end
      chunk(definer(reg, place))
    end
  end
  registry = reg
  return reg
end
-- forget what was read (the spec reads the files afresh)
function M.reset() registry = nil; M._index = nil end

------------------------------------------------------------------------------------- the public names
-- The namespaces whose names must each have a doc, with the key prefix of their names. `lazy`: the
-- namespace's own fields that load on first use (torch._lazy).
local function namespaces()
  local torch = require 'moontorch'
  local nn = require 'moontorch.nn'
  local optim = require 'moontorch.optim'
  local list = {
    { 'torch.', torch, lazy = torch._lazy },
    { 'nn.', nn }, { 'F.', nn.functional }, { 'nn.init.', nn.init }, { 'nn.utils.', nn.utils },
    { 'nn.utils.rnn.', nn.utils.rnn },
    { 'optim.', optim }, { 'optim.lr_scheduler.', optim.lr_scheduler },
    { 'torch.utils.', torch.utils }, { 'torch.utils.data.', torch.utils.data },
    { 'torch.datasets.', torch.datasets }, { 'torch.datasets.transforms.', torch.datasets.transforms },
    { 'torch.autograd.', torch.autograd },
    { 'torch.linalg.', torch.linalg }, { 'torch.special.', torch.special }, { 'torch.random.', torch.random },
    { 'torch.cuda.', torch.cuda },
  }
  -- the namespaces other parts add (torch.distributed, torch.fx, torch.profiler, nn.utils.prune, ...):
  -- every table field of a namespace above that is no class and not listed is walked too
  return list
end

-- tables that are values, not namespaces to walk
local NOT_NAMESPACES = { ['torch.ffi'] = true }

-- a namespace table: no class, no object that prints or is called (a dtype, a device); one that
-- loads its fields on first use (a metatable with __index alone) is one too, and lists them in a
-- _lazy table (torch._lazy) for this walk to see them
local function is_namespace(v)
  if type(v) ~= 'table' or rawget(v, '__typename') ~= nil then return false end
  local mt = getmetatable(v)
  if mt == nil then return true end
  return type(mt) == 'table' and mt.__call == nil and mt.__tostring == nil and mt.__typename == nil
    and type(mt.__index) == 'function'
end

local function is_class(v)
  if type(v) ~= 'table' then return false end
  local name = rawget(v, '__typename')
  return type(name) == 'string' and require('moontorch.class').registry[name] == v
end
M.is_class = is_class

-- the class chain of a class: itself, then its parents
local function chain(cls)
  local out, seen = {}, {}
  while type(cls) == 'table' and not seen[cls] do
    out[#out + 1] = cls
    seen[cls] = true
    cls = rawget(cls, '__parent')
  end
  return out
end

-- names(): every public name, in a fixed order: an array of { key = 'torch.zeros', value = v, owner =
-- the file a missing doc goes to, class = the class (methods), method = name }; plus the map of
-- class -> its public key
function M.names()
  local torch = require 'moontorch'
  local T = require 'moontorch.tensor'
  local out, class_key, seen_ns = {}, {}, {}
  local nss = namespaces()
  for _, ns in ipairs(nss) do seen_ns[ns[2]] = ns[1] end
  local function sorted_keys(t, extra)
    local ks = {}
    for k in pairs(t) do if type(k) == 'string' then ks[#ks + 1] = k end end
    for k in pairs(extra or {}) do if rawget(t, k) == nil then ks[#ks + 1] = k end end
    table.sort(ks)
    return ks
  end
  local i = 1
  while i <= #nss do
    local prefix, t, lazy = nss[i][1], nss[i][2], nss[i].lazy or rawget(nss[i][2], '_lazy')
    for _, k in ipairs(sorted_keys(t, lazy)) do
      -- (a field that fails to load is skipped here: its entries then name nothing that exists)
      local ok, v = pcall(function() return t[k] end)
      if k:sub(1, 1) ~= '_' and ok then
        local key = prefix .. k
        if is_namespace(v) and not is_class(v) and not seen_ns[v] and not NOT_NAMESPACES[key] then
          -- a namespace added by another part (torch.fx, nn.utils.prune, ...): walked below
          seen_ns[v] = key .. '.'
          nss[#nss + 1] = { key .. '.', v }
        elseif not (type(v) == 'table' and seen_ns[v]) then
          out[#out + 1] = { key = key, value = v }
          if is_class(v) and not class_key[v] then class_key[v] = key end
        end
      end
    end
    i = i + 1
  end
  -- tensor methods and properties
  for _, k in ipairs(sorted_keys(T.methods)) do
    if k:sub(1, 1) ~= '_' then out[#out + 1] = { key = 'Tensor:' .. k, value = T.methods[k] } end
  end
  for _, k in ipairs(sorted_keys(T.props)) do
    if k:sub(1, 1) ~= '_' then out[#out + 1] = { key = 'Tensor.' .. k, value = T.props[k], prop = true } end
  end
  -- the methods of every public class (found from the class itself or a parent's doc: a method
  -- nn.Module documents needs no doc in each module)
  local classes = {}
  for cls, key in pairs(class_key) do classes[#classes + 1] = { cls, key } end
  table.sort(classes, function(a, b) return a[2] < b[2] end)
  for _, c in ipairs(classes) do
    local cls, key = c[1], c[2]
    local ms, mv = {}, {}
    for _, x in ipairs(chain(cls)) do
      -- (a class whose instances find their methods in a table of its own: OrderedDict.methods)
      for _, t in ipairs { x, type(rawget(x, 'methods')) == 'table' and rawget(x, 'methods') or {} } do
        for k, v in pairs(t) do
          if type(k) == 'string' and type(v) == 'function' and k:sub(1, 1) ~= '_' and ms[k] == nil then
            ms[k], mv[k] = x, v
          end
        end
      end
    end
    for _, k in ipairs(sorted_keys(ms)) do
      out[#out + 1] = { key = key .. ':' .. k, value = mv[k], class = cls, method = k, owner_class = ms[k] }
    end
  end
  -- torch.Generator's methods (a metatable, not a registered class)
  local g = torch.Generator()
  local gmt = getmetatable(g)
  for _, k in ipairs(sorted_keys(gmt)) do
    if k:sub(1, 1) ~= '_' and type(gmt[k]) == 'function' then
      out[#out + 1] = { key = 'torch.Generator:' .. k, value = gmt[k] }
    end
  end
  return out, class_key
end

-- the doc entry of a public name (a method: the first class up its chain with a doc of it)
local function entry_of(reg, n, class_key)
  local e = reg.by_key[n.key]
  if e or not n.class then return e, n.key end
  for _, x in ipairs(chain(n.class)) do
    for _, base in pairs { class_key[x] or false, rawget(x, '__typename') or false } do
      local k = base and base .. ':' .. n.method
      if k and reg.by_key[k] then return reg.by_key[k], k end
    end
  end
  return nil
end

-- check(): what is wrong with the docs, as an array of messages (empty when all is well): public
-- names without a doc (naming the file to write it in), docs of names that do not exist, aliases
-- that are not the same value as their target, entries in the wrong file
function M.check()
  local reg = M.load()
  local names, class_key = M.names()
  local problems, exists = {}, {}
  local ops = reg.ops_by_name()
  local reported = {}
  for _, n in ipairs(names) do
    exists[n.key] = true
    local e = entry_of(reg, n, class_key)
    if not e then
      -- a method is asked of the class that defines it (once, not of each class inheriting it)
      local k = n.key
      if n.class and n.owner_class then
        k = (class_key[n.owner_class] or rawget(n.owner_class, '__typename')) .. ':' .. n.method
      end
      if not reported[k] then
        reported[k] = true
        local place
        local base = k:match('^torch%.([%w_]+)$') or k:match('^Tensor:([%w_]+)$')
        base = base and (ops[base] and base or (ops[(base:gsub('_$', ''))] and (base:gsub('_$', ''))))
        if base and ops[base].binding ~= 'INTERNAL' then
          place = ('lua/doc/ops.lua (it is op %s of MT_OP_LIST: doc.op{\'%s\', does = ..., ex = ...})'):format(base, base)
        else
          place = ('lua/doc/%s.lua (doc{\'%s(...)\', does = ..., ex = ...})'):format(M.place(k), k)
        end
        problems[#problems + 1] = ('no doc for %s: write it in %s'):format(k, place)
      end
    end
  end
  local resolve = M.lookup
  for _, e in ipairs(reg.entries) do
    for _, k in ipairs(e.keys) do
      if not exists[k] then
        local v = resolve(k)
        if v == nil then
          problems[#problems + 1] = ('%s: the doc of %s names nothing that exists'):format(e.at, k)
        end
      end
      local want = e.op and 'ops' or M.place(e.keys[1])
      if e.file ~= want and e.kind == 'doc' then
        problems[#problems + 1] = ('%s: %s belongs in lua/doc/%s.lua'):format(e.at, k, want)
        break
      end
    end
    if e.kind == 'alias' then
      local a, b = resolve(e.keys[1]), resolve(e.target)
      if not reg.by_key[e.target] then
        problems[#problems + 1] = ('%s: %s is an alias of %s, which has no doc'):format(e.at, e.keys[1], e.target)
      elseif a == nil or not rawequal(a, b) then
        problems[#problems + 1] = ('%s: %s is not the same value as %s'):format(e.at, e.keys[1], e.target)
      end
    end
  end
  return problems
end

------------------------------------------------------------------------------------- finding a doc
-- the value a key names ('torch.zeros', 'Tensor:add', 'nn.Linear:reset_parameters', 'F.relu'), or nil
function M.lookup(key)
  local torch = require 'moontorch'
  local T = require 'moontorch.tensor'
  local method = key:match('^Tensor:([%w_]+)$')
  if method then return T.methods[method] end
  local prop = key:match('^Tensor%.([%w_]+)$')
  if prop then return T.props[prop] end
  local path, m = key:match('^(.-):([%w_]+)$')
  path = path or key
  local roots = { torch = torch, nn = torch.nn, F = torch.nn.functional, optim = torch.optim }
  -- a class by its registered name (nn._BatchNorm, the parent of the public BatchNorm1d ...)
  local v = require('moontorch.class').registry[path]
  if v and m then
    local ok, r = pcall(function() return v[m] end)
    return ok and r or nil
  end
  v = nil
  for part in path:gmatch('[^%.]+') do
    if v == nil then
      v = roots[part]
    else
      local ok, r = pcall(function() return v[part] end)
      v = ok and r or nil
    end
    if v == nil then return nil end
  end
  if m then
    if path == 'torch.Generator' then return getmetatable(torch.Generator())[m] end
    local ok, r = pcall(function() return v[m] end)
    if ok and r == nil and type(v) == 'table' and type(rawget(v, 'methods')) == 'table' then r = v.methods[m] end
    return ok and r or nil
  end
  return v
end

-- the index from values to keys (functions, classes), built on the first question
local function index()
  if M._index then return M._index end
  local reg = M.load()
  local names, class_key = M.names()
  local idx = { by_value = {}, class_key = class_key }
  for _, n in ipairs(names) do
    local e, k = entry_of(reg, n, class_key)
    local v = n.value
    if e and (type(v) == 'function' or type(v) == 'table') and not n.prop then
      -- the first key a value is met under wins, except that a doc beats an alias
      local old = idx.by_value[v]
      if not old or (reg.by_key[old].kind == 'alias' and e.kind ~= 'alias') then idx.by_value[v] = k end
    end
  end
  M._index = idx
  return idx
end

local function canonical(name)
  name = name:gsub('^torch%.nn%.functional%.', 'F.'):gsub('^nn%.functional%.', 'F.')
    :gsub('^torch%.nn%.', 'nn.'):gsub('^torch%.optim%.', 'optim.')
    :gsub('^torch%.Tensor[%.:]', 'Tensor:')
  return name
end

-- find(x, name): the entry and key documenting value x (named `name` where the user typed a name)
function M.find(x, name)
  local reg = M.load()
  -- a method read through a tensor or a module may be a front that checks the ':' call: its doc
  -- is the method's (core.unwrap gives the method back, where fronts exist)
  local core = require 'moontorch.ffi'
  if type(x) == 'function' and type(core.unwrap) == 'function' then x = core.unwrap(x) end
  if name then
    local k = canonical(name)
    if reg.by_key[k] and (x == nil or rawequal(M.lookup(k), x) or type(x) ~= 'function') then return reg.by_key[k], k end
  end
  if x == nil then return nil end
  local idx = index()
  local k = idx.by_value[x]
  if k then return reg.by_key[k], k end
  -- a module or other instance: its class's doc
  if type(x) == 'table' then
    local cls = getmetatable(x)
    if is_class(cls) then
      for _, c in ipairs(chain(cls)) do
        local ck = idx.class_key[c]
        if ck and reg.by_key[ck] then return reg.by_key[ck], ck end
      end
    end
  end
  return nil
end

-- the PyTorch names an entry's keys stand for
local function pytorch_names(e)
  if e.pt == false then return 'none: moontorch\'s own' end
  if type(e.pt) == 'string' then return e.pt end
  local out, seen = {}, {}
  for _, k in ipairs(e.keys) do
    local p = k:gsub('^Tensor:', 'Tensor.'):gsub('^F%.', 'torch.nn.functional.'):gsub('^nn%.', 'torch.nn.')
      :gsub('^optim%.', 'torch.optim.'):gsub(':', '.')
    if not seen[p] then seen[p] = true; out[#out + 1] = p end
  end
  return table.concat(out, ', ')
end
M.pytorch_names = pytorch_names

local function indent(s, pre)
  return pre .. (s:gsub('\n', '\n' .. pre))
end

-- text(entry[, key]): what `?key` prints and torch.help returns
function M.text(e, key)
  local reg = M.load()
  if e.kind == 'alias' then
    local target = reg.by_key[e.target]
    local head = ('%s: another name of %s'):format(e.keys[1], e.target)
    if not target then return head end
    return head .. '\n' .. M.text(target, e.target)
  end
  local lines = {}
  for _, s in ipairs(e.sigs) do lines[#lines + 1] = s end
  local does = e.does:gsub('%s+$', '')
  lines[#lines + 1] = indent(does, '  ')
  if e.note then lines[#lines + 1] = indent(e.note, '  ') end
  lines[#lines + 1] = '  PyTorch: ' .. pytorch_names(e)
  lines[#lines + 1] = '  Example:'
  lines[#lines + 1] = indent((e.ex:gsub('^\n+', ''):gsub('%s+$', '')), '    ')
  return table.concat(lines, '\n')
end

-- help(x[, name]): the documentation of a value (or of the name a string gives), or nil
function M.help(x, name)
  local e, k = M.find(x, name)
  if not e then return nil end
  return M.text(e, k)
end

------------------------------------------------------------------------------------- what `?` prints
-- Values that are not moontorch's (a user's own functions and tables) are described as Lua sees
-- them: a Lua function by its parameters and the comment right above its definition.

-- the comment lines right above line i of a file (without their `--`), or nil
local function comment_above(path, i)
  local f = io.open(path, 'r')
  if not f then return nil end
  local lines = {}
  for l in f:lines() do
    lines[#lines + 1] = l
    if #lines >= i then break end
  end
  f:close()
  local doc = {}
  local j = i - 1
  while j >= 1 and lines[j]:match('^%s*%-%-') and not lines[j]:match('^%s*%-%-%-%-%-%-%-%-') do
    table.insert(doc, 1, (lines[j]:gsub('^%s*%-%-+ ?', '')))
    j = j - 1
  end
  if #doc == 0 then return nil end
  return table.concat(doc, '\n')
end

local function lua_signature(f, name)
  local info = debug.getinfo(f, 'u')
  local params = {}
  for i = 1, (info and info.nparams or 0) do params[#params + 1] = debug.getlocal(f, i) or ('arg' .. i) end
  if info and info.isvararg then params[#params + 1] = '...' end
  return (name or '?') .. '(' .. table.concat(params, ', ') .. ')'
end

-- the public names of a table (its fields and its class's methods), sorted, functions as name()
local function fields_of(x)
  local out, seen = {}, {}
  local t, depth = x, 0
  while type(t) == 'table' and depth < 20 do
    for k, v in pairs(t) do
      if type(k) == 'string' and k:match('^[%a][%w_]*$') and not seen[k] then
        seen[k] = true
        out[#out + 1] = type(v) == 'function' and k .. '()' or k
      end
    end
    local mt = getmetatable(t)
    t = type(mt) == 'table' and (type(rawget(mt, '__index')) == 'table' and rawget(mt, '__index') or rawget(mt, '__parent')) or nil
    if t == x then break end
    depth = depth + 1
  end
  table.sort(out)
  return out
end

-- describe(x[, name]): the text `?name` prints in the REPL and torch.help returns. x a value, or a
-- name as a string ('torch.zeros', 'torch.nn.functional.relu', 'x:add').
function M.describe(x, name)
  if type(x) == 'string' and name == nil then
    name = x
    x = M.resolve_name(name)
    if x == nil then return ('help: %s is nil'):format(name) end
  end
  local mt = type(x) == 'table' and getmetatable(x)
  local instance = mt and not is_class(x) and is_class(mt)
  local label = name or (instance and 'this value') or tostring(x)
  local text = M.help(x, name)
  if text then
    if instance then
      -- an instance (a module, an optimizer): its class's doc
      return ('%s: an instance of %s\n%s'):format(label, rawget(mt, '__typename'), text)
    end
    return text
  end
  local torch = require 'moontorch'
  if type(x) == 'function' then
    local info = debug.getinfo(x, 'S')
    if info.what == 'C' then return label .. ' (a built-in function)' end
    local path = info.source:match('^@(.*)$')
    local doc = path and comment_above(path, info.linedefined)
    return lua_signature(x, label) .. ' -- ' .. info.short_src .. ':' .. info.linedefined .. '\n'
      .. (doc or 'no documentation found')
  elseif torch.is_tensor(x) then
    return ('%s: a tensor of size %s, %s; a method\'s help: ?%s:<method> (Tab after %s: lists them)'):format(
      label, tostring(x:size()), tostring(x.dtype), label, label)
  elseif type(x) == 'table' then
    local head = type(rawget(x, '__typename')) == 'string' and x.__typename or (label .. ': a table')
    if getmetatable(x) and rawget(getmetatable(x), '__typename') then
      head = label .. ': an instance of ' .. getmetatable(x).__typename
    end
    return head .. '\nfields: ' .. table.concat(fields_of(x), ' ')
  end
  return ('%s: a %s value'):format(label, type(x))
end

-- the value a name names, from the globals or moontorch's namespaces ('torch.nn.Linear', 'x:add',
-- 'torch.Tensor.add', 'F.relu'), or nil
function M.resolve_name(path)
  local torch = require 'moontorch'
  local T = require 'moontorch.tensor'
  local v
  local first = true
  for part in path:gmatch('[^%.:]+') do
    if first then
      v = rawget(_G, part)
      if v == nil then
        local roots = { torch = torch, nn = torch.nn, F = torch.nn.functional, optim = torch.optim, Tensor = torch.Tensor }
        v = roots[part]
      end
      first = false
    else
      local tv = type(v)
      if tv ~= 'table' and tv ~= 'cdata' and tv ~= 'string' then return nil end
      local ok, r = pcall(function() return v[part] end)
      if not ok then return nil end
      if r == nil and v == torch.Tensor then r = T.methods[part] end
      v = r
    end
    if v == nil then return nil end
  end
  return v
end

return M
