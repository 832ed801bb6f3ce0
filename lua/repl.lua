-- The `moontorch` command: scripts, -e/-l/-i, and the REPL (what Torch7's `th` was).
-- The REPL: torch, nn, optim and F loaded; each line an expression (its values printed: tensors and
-- modules as they print, tables pretty-printed to a depth) or a statement; a trailing `;` keeps
-- the values unprinted; an incomplete chunk continues on the next line (`>>`); `?name` shows a
-- name's documentation (torch.help: lua/doc/ for moontorch's names); `:time on` times
-- each command; Tab completes globals, fields and methods (tensors' and modules' too); Ctrl-C
-- interrupts running code (or abandons the line at the prompt); Ctrl-D quits.
-- Line editing: GNU readline through Debian's lua-readline when installed, else our own
-- (lua/repl/lineedit.lua; MOONTORCH_LINE_EDITOR=builtin forces it). History in
-- $MOONTORCH_HISTORY, else ~/.moontorch_history.

local M = {}
local unpack = unpack or table.unpack

local VERSION_HELP = [==[
usage: moontorch [options] [script [args...]]
  -e code     run code (may be given several times)
  -l name     require module name, as the global named by its last part (moontorch.nn -> nn)
  -i          stay interactive after the script or -e (the REPL)
  -m name     run module name as the script (moontorch.name, else name; the rest are its arguments),
              e.g. moontorch -m distributed.run --nproc 2 train.lua
  -v, --version  the version and what this build runs with (torch.config())
  -h, --help  this help
  -           read the script from standard input
With no script and no -e, the REPL starts (with -e, add -i to stay).
REPL: ?name shows a function's help, :help lists the REPL's commands.
]==]

---------------------------------------------------------------------------------------- errors
-- an error's message and the traceback of the user's code (not this runner's frames)
local function traceback(err)
  if type(err) ~= 'string' then
    local mt = getmetatable(err)
    err = (mt and mt.__tostring) and tostring(err) or ('(error object is a ' .. type(err) .. ' value)')
  end
  -- (not a tail call: the frame that raised must stay at level 2)
  local tb = debug.traceback(err, 2)
  tb = tb:gsub('\n\t%[C%]: in function \'xpcall\'.*$', '')
  tb = tb:gsub('\n\t[^\n]*repl%.lua:%d+: in [^\n]*$', '')
  tb = tb:gsub('\n\t[^\n]*repl%.lua:%d+: in [^\n]*$', '')
  return tb
end
M.traceback = traceback

local function stderr(s)
  io.stdout:flush()
  io.stderr:write(s)
  io.stderr:flush()
end

---------------------------------------------------------------------------------------- colours
local colour_on = false
local function paint(code, s)
  if not colour_on then return s end
  return '\27[' .. code .. 'm' .. s .. '\27[0m'
end
local COLOURS = { number = '36', string = '32', boolean = '33', ['nil'] = '31', ['function'] = '35',
  cdata = '35', userdata = '35', thread = '35', key = '1', dim = '2', err = '31' }

---------------------------------------------------------------------------------------- printing
local function is_tensor(v)
  local torch = package.loaded['moontorch']
  return type(v) == 'cdata' and torch and torch.is_tensor(v)
end

local function has_tostring(v)
  local mt = getmetatable(v)
  return type(mt) == 'table' and rawget(mt, '__tostring') ~= nil or type(v) == 'table' and mt and mt.__tostring
end

local function is_identifier(k)
  return type(k) == 'string' and k:match('^[%a_][%w_]*$') ~= nil
end

local function scalar(v, top)
  local t = type(v)
  if t == 'string' then
    if top then return v end
    return paint(COLOURS.string, ('%q'):format(v):gsub('\\\n', '\\n'))
  elseif t == 'number' or t == 'boolean' or t == 'nil' then
    return paint(COLOURS[t], tostring(v))
  end
  return nil
end

-- format(v, depth): the text the REPL prints for a value. Tables: their fields sorted (the array
-- part first), nested tables to `depth` levels (deeper ones as {...}), a table met again inside
-- itself as <cycle>; tensors, modules and other objects with __tostring as they print.
local function format(v, depth, indent, seen, top)
  indent = indent or ''
  local s = scalar(v, top)
  if s then return s end
  if is_tensor(v) or (type(v) ~= 'table' and has_tostring(v)) then
    return (tostring(v):gsub('\n', '\n' .. indent))
  end
  if type(v) ~= 'table' then return paint(COLOURS[type(v)] or '0', tostring(v)) end
  if has_tostring(v) then
    local ok, str = pcall(tostring, v)
    return ok and (str:gsub('\n', '\n' .. indent)) or paint(COLOURS.err, '<__tostring failed: ' .. tostring(str) .. '>')
  end
  seen = seen or {}
  if seen[v] then return paint(COLOURS.dim, '<cycle: ' .. tostring(v) .. '>') end
  if next(v) == nil then return '{}' end
  if depth <= 0 then return paint(COLOURS.dim, '{...}') end
  seen[v] = true
  local n = #v
  local keys = {}
  for k in pairs(v) do
    if not (type(k) == 'number' and k >= 1 and k <= n and k == math.floor(k)) then keys[#keys + 1] = k end
  end
  table.sort(keys, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end
    if ta == 'number' or ta == 'string' then return a < b end
    return tostring(a) < tostring(b)
  end)
  local inner = indent .. '  '
  local items, flat, width = {}, true, 0
  for i = 1, n do
    local s2 = format(v[i], depth - 1, inner, seen)
    items[#items + 1] = s2
    width = width + #s2 + 2
    if s2:find('\n') then flat = false end
  end
  for _, k in ipairs(keys) do
    local ks = is_identifier(k) and paint(COLOURS.key, k) or ('[' .. format(k, 0, inner, seen) .. ']')
    local s2 = ks .. ' = ' .. format(v[k], depth - 1, inner, seen)
    items[#items + 1] = s2
    width = width + #s2 + 2
    if s2:find('\n') then flat = false end
  end
  seen[v] = nil
  if flat and width <= 72 then return '{' .. table.concat(items, ', ') .. '}' end
  return '{\n' .. inner .. table.concat(items, ',\n' .. inner) .. '\n' .. indent .. '}'
end
M.format = function(v, depth) return format(v, depth or 2, '', nil, true) end

M.depth = 2
local function print_values(n, values)
  if n == 0 then return end
  local parts, multi = {}, false
  for i = 1, n do
    parts[i] = format(values[i], M.depth, '', nil, true)
    if parts[i]:find('\n') then multi = true end
  end
  io.stdout:write(table.concat(parts, multi and '\n' or '\t'), '\n')
  io.stdout:flush()
end

---------------------------------------------------------------------------------------- lookup
-- the value a dotted name names from the globals ('torch.nn.Linear', 't:add'), or nil
local function lookup(path)
  local v = _G
  for part in path:gmatch('[^%.:]+') do
    local tv = type(v)
    if tv ~= 'table' and tv ~= 'cdata' and tv ~= 'string' then return nil end
    local ok, r = pcall(function() return v[part] end)
    if not ok then return nil end
    -- torch.Tensor.add: the method tensors have
    local torch = package.loaded['moontorch']
    if r == nil and torch and v == torch.Tensor then r = require('moontorch.tensor').methods[part] end
    v = r
  end
  return v
end
M.lookup = lookup

---------------------------------------------------------------------------------------- completion
local KEYWORDS = { 'and', 'break', 'do', 'else', 'elseif', 'end', 'false', 'for', 'function', 'goto', 'if',
  'in', 'local', 'nil', 'not', 'or', 'repeat', 'return', 'then', 'true', 'until', 'while' }

-- the names v answers to: its fields, and its class's (metatables' __index tables, up the chain);
-- a tensor: the Tensor methods and properties
local function names_of(v, out)
  out = out or {}
  if is_tensor(v) then
    local T = require 'moontorch.tensor'
    for k in pairs(T.methods) do out[k] = 'function' end
    for k in pairs(T.props) do out[k] = out[k] or 'value' end
    return out
  end
  -- an nn.Module keeps its attributes, parameters, buffers and children in tables of its own
  if type(v) == 'table' and type(rawget(v, '_parameters')) == 'table' then
    for _, part in ipairs { '_attrs', '_parameters', '_buffers', '_modules' } do
      local t = rawget(v, part)
      if type(t) == 'table' then
        for k, x in pairs(t) do
          if type(k) == 'string' then out[k] = type(x) == 'function' and 'function' or 'value' end
        end
      end
    end
  end
  local depth, t = 0, v
  while t ~= nil and depth < 20 do
    if type(t) == 'table' then
      for k, x in next, t do
        if type(k) == 'string' and out[k] == nil then out[k] = type(x) == 'function' and 'function' or 'value' end
      end
    end
    local mt = getmetatable(t)
    if type(mt) ~= 'table' then break end
    local idx = rawget(mt, '__index')
    if type(idx) == 'table' and idx ~= t then
      t = idx
    elseif type(idx) == 'function' then
      -- a class whose instances look fields up with a function (nn.Module): the class's methods
      -- are in the metatable itself and its parents
      t = mt ~= t and mt or nil
    else
      break
    end
    depth = depth + 1
  end
  return out
end

-- complete(word): the words that complete `word` (a name, or a dotted path with '.'/':')
function M.complete(word)
  local base, sep, prefix = word:match('^(.*)([%.:])([%w_]*)$')
  local names
  if base then
    local v = lookup(base)
    if v == nil then return {} end
    names = names_of(v)
  else
    prefix, base, sep = word, '', ''
    names = names_of(_G)
    for _, k in ipairs(KEYWORDS) do names[k] = 'keyword' end
  end
  local list = {}
  for k, kind in pairs(names) do
    if k:sub(1, #prefix) == prefix and is_identifier(k) and not (sep == ':' and kind ~= 'function')
      and not (k:sub(1, 1) == '_' and prefix:sub(1, 1) ~= '_') then
      list[#list + 1] = base .. sep .. k
    end
  end
  table.sort(list)
  return list
end

---------------------------------------------------------------------------------------- help
-- help(name or value): what the REPL's ?name prints: torch.help's text (lua/doc/: moontorch's
-- names from their doc entries; other functions by their parameters and the comment above them)
function M.help(x, name)
  return require('moontorch.doc').describe(x, name)
end

---------------------------------------------------------------------------------------- the loop
local now = require('moontorch.libc').monotonic

local function pack(...) return select('#', ...), { ... } end
local function pass(...) return ... end

-- compile the text of a command: an expression (its values are printed), else a statement.
-- Returns chunk, print?, or nil, message, incomplete?
function M.compile(src)
  local body = src:gsub('^%s*=', '')
  local quiet = body:match(';%s*$') ~= nil
  -- the expression is an argument of a pass-through (`return f(x)` would be a tail call: an error
  -- in f would lose the line it was called from)
  local expr = body:gsub(';%s*$', '')
  local close = expr:find('--', 1, true) and '\n)' or ')' -- (a comment would swallow the `)`)
  local chunk, eerr = load('local __repl_pass = ...; return __repl_pass(' .. expr .. close, '=stdin')
  if chunk and expr:match('%S') then
    local f = chunk
    return function() return f(pass) end, not quiet
  end
  eerr = eerr or ''
  if not chunk then
    local _, e2 = load('return ' .. body, '=stdin') -- the message as the user's text gives it
    eerr = e2 or eerr
  end
  local err
  chunk, err = load(body, '=stdin')
  if chunk then return chunk, false end
  -- incomplete: the parser ran out of text (as lua.c decides: the message ends with '<eof>')
  local function at_eof(e) return e:sub(-7) == "'<eof>'" end
  return nil, err, at_eof(err) or at_eof(eerr)
end

local commands = {}
local function command(line, state)
  local name, rest = line:match('^:(%a+)%s*(.-)%s*$')
  local c = name and commands[name]
  if not c then
    stderr(paint(COLOURS.err, ('unknown command %s (:help lists them)'):format(line)) .. '\n')
    return
  end
  c(rest, state)
end
commands.time = function(rest, state)
  if rest == 'on' or rest == '' and not state.time then state.time = true
  elseif rest == 'off' or rest == '' then state.time = false end
  print('timing ' .. (state.time and 'on' or 'off'))
end
commands.depth = function(rest)
  local n = tonumber(rest)
  if n then M.depth = n end
  print('tables print to depth ' .. M.depth)
end
commands.quit = function(_, state) state.quit = true end
commands.jit = function(rest, state)
  if rest == 'on' then state.nojit = false elseif rest == 'off' then state.nojit = true end
  print(state.nojit and 'commands run interpreted (Ctrl-C can stop their loops)'
    or 'commands are compiled by the JIT (Ctrl-C cannot stop a compiled loop that calls nothing)')
end
commands.help = function()
  print([[
  expr          print its values (a trailing ; prints nothing)
  ?name         a name's documentation (?torch.matmul, ?nn.Linear, ?x:sum), a table's fields
  :time on|off  print each command's time
  :depth n      how deep tables print (now ]] .. M.depth .. [[)
  :jit on|off   let the JIT compile the commands typed here (off: Ctrl-C stops any loop)
  :quit         leave (or Ctrl-D)
  Tab completes names, fields and methods; Up/Down walk the history; Ctrl-C interrupts.]])
end

-- run one complete command's text; prints its values or its error
function M.run_source(src, state)
  state = state or {}
  local chunk, show = M.compile(src)
  if not chunk then
    stderr(paint(COLOURS.err, tostring(show)) .. '\n')
    return false
  end
  return M.run_chunk(chunk, show, state)
end

function M.run_chunk(chunk, show, state)
  local sys = state.sys
  -- our chunks stay interpreted (jit.off), so that a loop typed here sees the Ctrl-C hook;
  -- the library's functions it calls are compiled as usual
  if state.nojit and jit then jit.off(chunk, true) end
  local t0 = now()
  local n, res
  if sys then
    -- SIGINT is let through only while the chunk runs, inside the xpcall
    n, res = pack(xpcall(function()
      sys.sigint_interrupts()
      local m, r = pack(chunk())  -- (named `chunk` in tracebacks: shown as the main chunk)
      sys.sigint_held()
      return unpack(r, 1, m)
    end, traceback))
    sys.sigint_held()
    debug.sethook()
  else
    n, res = pack(xpcall(chunk, traceback))
  end
  local dt = now() - t0
  if res[1] then
    if show then print_values(n - 1, { unpack(res, 2, n) }) end
  else
    -- the traceback's frames of this REPL removed; none at all when the error is in the line itself
    local msg = tostring(res[2]):gsub("\n\t[^\n]*repl%.lua:%d+: in function <[^\n]*>", '')
      :gsub("(\n\tstdin:%d+: in )function 'chunk'", '%1main chunk'):gsub("\n\t%[C%]: in function 'error'", '')
      :gsub('\nstack traceback:\n\tstdin:%d+: in main chunk$', '')
    stderr(paint(COLOURS.err, msg) .. '\n')
  end
  if state.time then
    io.stdout:write(paint(COLOURS.dim, dt < 1 and ('(%.3f ms)'):format(dt * 1e3) or ('(%.3f s)'):format(dt)), '\n')
  end
  io.stdout:flush()
  return res[1]
end

local function load_globals()
  local ok, torch = pcall(require, 'moontorch')
  if not ok then
    stderr('moontorch: could not load torch: ' .. tostring(torch) .. '\n')
    return
  end
  rawset(_G, 'torch', torch)
  for _, p in ipairs { { 'nn', 'moontorch.nn' }, { 'optim', 'moontorch.optim' } } do
    local okm, m = pcall(require, p[2])
    if okm then rawset(_G, p[1], m) else stderr('moontorch: could not load ' .. p[2] .. ': ' .. tostring(m) .. '\n') end
  end
  if rawget(_G, 'nn') then rawset(_G, 'F', _G.nn.functional) end
  rawset(_G, 'help', function(x)
    print(M.help(x))
  end)
end
M.load_globals = load_globals

local function history_path()
  local p = os.getenv('MOONTORCH_HISTORY')
  if p and p ~= '' then return p end
  local home = os.getenv('HOME')
  if home and home ~= '' then return home .. '/.moontorch_history' end
  return nil
end

-- the line editor: readline (lua-readline) unless MOONTORCH_LINE_EDITOR=builtin, else ours
local function line_editor()
  local want = os.getenv('MOONTORCH_LINE_EDITOR')
  local opts = { history = history_path(), complete = M.complete }
  if want ~= 'builtin' then
    local ed = require('moontorch.repl.readline').new(opts)
    if ed then return ed end
  end
  return require('moontorch.repl.lineedit').new(opts)
end

-- the REPL: reads commands until end of input (or :quit)
function M.repl()
  local sys = require 'moontorch.repl.sys'
  local tty = sys.isatty(0)
  colour_on = sys.isatty(1) and os.getenv('NO_COLOR') == nil and os.getenv('TERM') ~= 'dumb'
  if not rawget(_G, 'torch') then load_globals() end
  local state = { sys = tty and sys or nil, nojit = tty }
  local editor
  if tty then
    editor = line_editor()
    sys.sigint_held()
    local torch = rawget(_G, 'torch')
    io.write(('moontorch %s on %s (line editing: %s) -- ?name for help, :help, Ctrl-D to quit\n'):format(
      torch and torch.__version__ or '?', jit and jit.version or _VERSION, editor.name))
  end
  -- os.exit from a command keeps the history
  local real_exit = os.exit
  os.exit = function(...)
    if editor then editor:close() end
    if state.sys then state.sys.sigint_interrupts() end
    return real_exit(...)
  end
  local buffer
  local step -- one line read and run
  local function loop()
    while not state.quit do step() end
  end
  step = function()
    local line
    if editor then
      line = editor:read(buffer and '>> ' or '> ')
      if line == false then
        buffer = nil -- Ctrl-C: the line (and any chunk being continued) abandoned
      elseif line then
        editor:add_history(line)
      end
    else
      line = io.read('*l')
    end
    if line == nil then
      if buffer then
        local _, err = load(buffer, '=stdin')
        stderr(paint(COLOURS.err, tostring(err)) .. '\n')
      end
      state.quit = true
      return
    end
    if line then
      local src = buffer and (buffer .. '\n' .. line) or line
      if not buffer and src:match('^%s*%?') then
        local name = src:match('^%s*%?%s*(.-)%s*$')
        if name == '' then commands.help() else print(M.help(name)) end
      elseif not buffer and src:match('^%s*:%a') then
        command(src:match('^%s*(.-)%s*$'), state)
      elseif src:match('%S') then
        local chunk, show, more = M.compile(src)
        if not chunk and more then
          buffer = src
        else
          buffer = nil
          if chunk then M.run_chunk(chunk, show, state)
          else stderr(paint(COLOURS.err, tostring(show)) .. '\n') end
        end
      end
    end
  end
  -- a Ctrl-C landing between two commands (outside their xpcall) must not end the REPL
  while not state.quit do
    local ok, err = pcall(loop)
    if not ok then
      if state.sys then state.sys.sigint_held() end
      debug.sethook()
      stderr(paint(COLOURS.err, tostring(err)) .. '\n')
    end
  end
  if editor then editor:close() end
  if state.sys then state.sys.sigint_interrupts() end
  os.exit = real_exit
end

---------------------------------------------------------------------------------------- the command
local function die(msg)
  stderr('moontorch: ' .. msg .. '\n')
  os.exit(1)
end

-- main(arg): the `moontorch` command line (arg as luajit gives it to bin/moontorch)
function M.main(argv)
  local todo, interactive, script, i = {}, false, nil, 1
  while argv[i] do
    local a = argv[i]
    if a == '-h' or a == '--help' then
      io.write(VERSION_HELP)
      os.exit(0)
    elseif a == '-v' or a == '--version' then
      local ok, torch = pcall(require, 'moontorch')
      if not ok then die(tostring(torch)) end
      io.write(torch.config())
      os.exit(0, true)
    elseif a == '-e' or a == '-l' then
      local v = argv[i + 1] or die(a .. ' needs an argument')
      todo[#todo + 1] = { a, v }
      i = i + 2
    elseif a:match('^%-e.') or a:match('^%-l.') then
      todo[#todo + 1] = { a:sub(1, 2), a:sub(3) }
      i = i + 1
    elseif a == '-i' then
      interactive = true
      i = i + 1
    elseif a == '-m' or a:match('^%-m.') then
      -- python -m: a module found on package.path runs as the script (arg[0] is its file)
      local name = a == '-m' and (argv[i + 1] or die('-m needs a module name')) or a:sub(3)
      if a == '-m' then i = i + 1 end
      script = package.searchpath('moontorch.' .. name, package.path) or package.searchpath(name, package.path)
        or die(('no module named %s (looked for moontorch.%s and %s on package.path)'):format(name, name, name))
      break
    elseif a == '--' then
      script = argv[i + 1]
      i = i + 1
      break
    elseif a:match('^%-.') then
      die(('unknown option %s (moontorch -h lists them)'):format(a))
    else
      script = a
      break
    end
  end
  local script_args = {}
  if script then
    for j = i + 1, #argv do script_args[#script_args + 1] = argv[j] end
    -- arg as luajit sets it: arg[0] the script, arg[1..] its arguments, the interpreter below 0
    local new = { [-2] = argv[-1], [-1] = argv[0], [0] = script }
    for j, v in ipairs(script_args) do new[j] = v end
    _G.arg = new
  end
  local need_repl = interactive or (not script and #todo == 0)
  if need_repl or #todo > 0 then load_globals() end
  for _, t in ipairs(todo) do
    if t[1] == '-l' then
      local ok, m = xpcall(require, traceback, t[2])
      if not ok then die(m) end
      rawset(_G, t[2]:match('([%w_]+)$'), m)
    else
      local chunk, err = load(t[2], '=(command line)')
      if not chunk then die(err) end
      local ok, msg = xpcall(chunk, traceback)
      io.stdout:flush()
      if not ok then die(msg) end
    end
  end
  if script then
    local chunk, err
    if script == '-' then
      chunk, err = load(io.read('*a'), '=stdin')
    else
      chunk, err = loadfile(script)
    end
    if not chunk then die(tostring(err)) end
    local ok, msg = xpcall(function() return chunk(unpack(script_args)) end, traceback)
    io.stdout:flush()
    if not ok then
      if not interactive then die(msg) end
      stderr('moontorch: ' .. msg .. '\n') -- -i: the REPL, to look at what the script left
    end
  end
  if need_repl then M.repl() end
  io.stdout:flush()
  os.exit(0, true)
end

return M
