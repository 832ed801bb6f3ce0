-- The `moontorch` command (bin/moontorch, lua/repl.lua): the REPL driven through a real
-- pseudo-terminal (spec/support/pty_drive.py, Python's pty module) with each line editor (GNU
-- readline through lua-readline, and our own: MOONTORCH_LINE_EDITOR=builtin), then -e/-i/-l/-h,
-- the REPL fed by a pipe, and its pieces as functions (printing, completion, help).
local H = require 'spec.support.helper'
local torch = H.torch
local repl = require 'moontorch.repl'

local root = io.popen('pwd'):read('*l')
local python = io.open('/usr/bin/python3', 'r') and '/usr/bin/python3' or 'python3'

local function tmpname()
  local p = os.tmpname()
  os.remove(p)
  return p
end

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- the terminal's text without colours, cursor moves, bells and carriage returns
local function plain(s)
  return (s:gsub('\27%[[%d;?]*[%a~]', ''):gsub('\r', ''):gsub('\7', ''))
end

-- drive(steps, env, args): runs bin/moontorch in a pty through the steps ({'send', text} with
-- Python's escapes, {'expect', text}, {'sleep', s}); returns the plain transcript, whether every
-- expect was met, and the exit status
local function drive(steps, env, args)
  local f = tmpname()
  local out = io.open(f, 'w')
  for _, s in ipairs(steps) do out:write(s[1], ' ', s[2], '\n') end
  out:close()
  local envs = {}
  for k, v in pairs(env or {}) do envs[#envs + 1] = k .. '=' .. sh_quote(v) end
  local cmd = ('cd %s && env %s %s spec/support/pty_drive.py %s -- luajit bin/moontorch %s 2>&1'):format(
    sh_quote(root), table.concat(envs, ' '), python, f, args or '')
  local p = io.popen(cmd)
  local text = p:read('*a')
  p:close()
  os.remove(f)
  local status = tonumber(text:match('\nEXIT (%-?%d+)\n'))
  return plain(text), not text:find('EXPECT TIMEOUT', 1, true), status
end

local function has(text, s)
  if not text:find(s, 1, true) then
    error(('expected to find %q in the transcript:\n%s'):format(s, text), 2)
  end
end

local function lacks(text, s)
  if text:find(s, 1, true) then
    error(('did not expect %q in the transcript:\n%s'):format(s, text), 2)
  end
end

local readline_installed = pcall(require, 'readline')

for _, editor in ipairs { 'builtin', 'readline' } do
  describe('the REPL in a terminal (line editor: ' .. editor .. ')', function()
    local hist
    local env
    before_each(function()
      hist = tmpname()
      env = { MOONTORCH_LINE_EDITOR = editor, MOONTORCH_HISTORY = hist, HOME = '/tmp' }
    end)
    after_each(function() os.remove(hist) end)

    it('uses that editor (readline only where lua-readline is installed) and quits on Ctrl-D', function()
      local text, ok, status = drive({ { 'expect', '> ' }, { 'send', '\\x04' } }, env)
      assert.is_true(ok, text)
      local want = (editor == 'readline' and readline_installed) and 'readline' or 'builtin'
      has(text, '(line editing: ' .. want .. ')')
      assert.equal(0, status)
    end)

    it('completes torch.ze<Tab> to torch.zeros, a tensor\'s methods and a module\'s', function()
      local text, ok = drive({
        { 'expect', '> ' }, { 'send', 'torch.ze\\t' }, { 'expect', 'ros' }, { 'send', '(2)\\r' },
        { 'expect', 'tensor([0., 0.])' }, { 'expect', '> ' },
        { 'send', 't = torch.ones(3)\\r' }, { 'expect', '> ' },
        { 'send', 't:nume\\t' }, { 'expect', 'el' }, { 'send', '()\\r' }, { 'expect', '3' }, { 'expect', '> ' },
        { 'send', 'm = nn.Linear(2, 3)\\r' }, { 'expect', '> ' },
        { 'send', 'm:zero_g\\t' }, { 'expect', 'rad' }, { 'send', '()\\r' }, { 'expect', '> ' },
        { 'send', 'm.in_f\\t' }, { 'expect', 'eatures' }, { 'send', ' * 100\\r' }, { 'expect', '200' },
        { 'expect', '> ' },
        { 'send', '\\x04' },
      }, env)
      assert.is_true(ok, text)
      has(text, 'torch.zeros(2)')
      has(text, 'tensor([0., 0.])')
      has(text, 't:numel()')
      has(text, 'm:zero_grad()')
      has(text, 'm.in_features * 100\n200')
      lacks(text, 'stdin:')
    end)

    it('keeps the history across two sessions (Up recalls the last line)', function()
      local text, ok = drive({ { 'expect', '> ' }, { 'send', '4000 + 242\\r' }, { 'expect', '4242' },
        { 'expect', '> ' }, { 'send', '\\x04' } }, env)
      assert.is_true(ok, text)
      local text2, ok2 = drive({ { 'expect', '> ' }, { 'send', '\\x1b[A' }, { 'expect', '4000 + 242' },
        { 'send', '\\r' }, { 'expect', '4242' }, { 'expect', '> ' }, { 'send', '\\x04' } }, env)
      assert.is_true(ok2, text2)
      lacks(text2, 'incompatible bytecode')
      local f = assert(io.open(hist))
      has(f:read('*a'), '4000 + 242')
      f:close()
    end)

    it('continues an incomplete chunk with >> (a multi-line function)', function()
      local text, ok = drive({
        { 'expect', '> ' }, { 'send', 'function double(a)\\r' }, { 'expect', '>> ' },
        { 'send', '  return a * 2\\r' }, { 'expect', '>> ' }, { 'send', 'end\\r' }, { 'expect', '> ' },
        { 'send', 'double(21)\\r' }, { 'expect', '42' }, { 'expect', '> ' }, { 'send', '\\x04' } }, env)
      assert.is_true(ok, text)
    end)

    it('shows an error at stdin:1 and stays alive', function()
      local text, ok, status = drive({
        { 'expect', '> ' }, { 'send', 'nothing.here\\r' }, { 'expect', 'stdin:1:' }, { 'expect', '> ' },
        { 'send', 'torch.zeros(2):add({})\\r' }, { 'expect', 'stdin:1: moontorch.add:' }, { 'expect', '> ' },
        { 'send', '12340 + 5\\r' }, { 'expect', '12345' }, { 'expect', '> ' }, { 'send', '\\x04' } }, env)
      assert.is_true(ok, text)
      has(text, "stdin:1: attempt to index global 'nothing' (a nil value)")
      lacks(text, 'repl.lua')
      assert.equal(0, status)
    end)

    it('Ctrl-C at the prompt abandons the line, a fresh prompt', function()
      local text, ok = drive({
        { 'expect', '> ' }, { 'send', 'error("typed then abandoned")\\x03' }, { 'expect', '^C' },
        { 'expect', '> ' }, { 'send', 'function f()\\r' }, { 'expect', '>> ' }, { 'send', '\\x03' },
        { 'expect', '> ' }, { 'send', '12340 + 6\\r' }, { 'expect', '12346' }, { 'expect', '> ' },
        { 'send', '\\x03' }, { 'expect', '> ' }, { 'send', '\\x04' } }, env)
      assert.is_true(ok, text)
      lacks(text, 'typed then abandoned\n')
      lacks(text, 'stdin:')
    end)

    it('Ctrl-C stops `while true do end` and the REPL goes on', function()
      local text, ok, status = drive({
        { 'expect', '> ' }, { 'send', 'n = 0 while true do n = n + 1 end\\r' }, { 'sleep', '0.5' },
        { 'send', '\\x03' }, { 'expect', 'interrupted' }, { 'expect', '> ' },
        { 'send', 'while true do end\\r' }, { 'sleep', '0.5' },
        { 'send', '\\x03' }, { 'expect', 'interrupted' }, { 'expect', '> ' },
        { 'send', 'n > 0\\r' }, { 'expect', 'true' }, { 'expect', '> ' }, { 'send', '\\x04' } }, env)
      assert.is_true(ok, text)
      has(text, 'stdin:1: interrupted!')
      assert.equal(0, status)
    end)

    it('Tab completes what the candidates share, and a second Tab lists every candidate', function()
      local text, ok = drive({
        { 'expect', '> ' }, { 'send', 'torch.ze\\t' }, { 'expect', 'ros' }, { 'send', '\\t' }, { 'expect', 'zeros_like' },
        { 'expect', '> ' }, { 'send', '(2)\\r' }, { 'expect', 'tensor([0., 0.])' }, { 'expect', '> ' },
        -- inside an expression, after an assignment, and for a tensor's methods
        { 'send', 'y = torch.ones_l\\t' }, { 'expect', 'ike' }, { 'send', '(torch.ze\\t' }, { 'expect', 'ros' },
        { 'send', '\\t' }, { 'expect', 'torch.zeros_like' }, { 'expect', '> ' }, { 'send', '(2));\\r' }, { 'expect', '> ' },
        { 'send', 'y:arg\\t\\t' }, { 'expect', 'y:argmin' }, { 'expect', '> ' }, { 'send', 'max()\\r' }, { 'expect', 'tensor(' },
        { 'expect', '> ' }, { 'send', '\\x04' } }, env)
      assert.is_true(ok, text)
      has(text, 'torch.zeros       torch.zeros_like')
      has(text, 'torch.zeros(2)')
      has(text, 'y = torch.ones_like(torch.zeros(2));')
      has(text, 'y:argmax')
      has(text, 'y:argsort')
      lacks(text, 'stdin:')
    end)

    it('?name shows the doc of torch.matmul, torch.zeros, a tensor\'s method and a class (torch.help\'s text)', function()
      local text, ok = drive({
        -- (each doc's example has a `-->` in it: wait for its end before the prompt)
        { 'expect', '> ' }, { 'send', '?torch.matmul\\r' }, { 'expect', 'PyTorch: torch.matmul' },
        { 'expect', 'torch.Size([5, 2, 4])' }, { 'expect', '> ' },
        { 'send', 'x = torch.ones(2)\\r' }, { 'expect', '> ' },
        { 'send', '?x:sum\\r' }, { 'expect', 'Tensor:sum(dim' }, { 'expect', 'torch.Size([2, 1])' }, { 'expect', '> ' },
        { 'send', '?nn.Linear\\r' }, { 'expect', 'nn.Linear(in_features' }, { 'expect', 'torch.Size([2, 4])' },
        { 'expect', '> ' },
        { 'send', 'io.write(torch.help(torch.matmul) == torch.help("torch.matmul") and "SAME\\\\n" or "DIFF\\\\n")\\r' },
        { 'expect', 'SAME' }, { 'expect', '> ' }, { 'send', '\\x04' } }, env)
      assert.is_true(ok, text)
      has(text, torch.help(torch.matmul))
      has(text, torch.help('Tensor:sum'))
      lacks(text, 'no documentation found')
    end)

    it('?torch.zeros shows its documentation; a tensor prints as PyTorch prints it', function()
      local text, ok = drive({
        { 'expect', '> ' }, { 'send', '?torch.zeros\\r' }, { 'expect', 'filled with 0' }, { 'expect', 'tensor([0., 0.])' },
        { 'expect', '> ' },
        { 'send', 'torch.arange(6):view(2, 3)\\r' }, { 'expect', '5]])' }, { 'expect', '> ' },
        { 'send', 'torch.ones(2);\\r' }, { 'expect', '> ' },
        { 'send', ':time on\\r' }, { 'expect', 'timing on' }, { 'expect', '> ' },
        { 'send', '1 + 1\\r' }, { 'expect', ' ms)' }, { 'expect', '> ' }, { 'send', '\\x04' } }, env)
      assert.is_true(ok, text)
      has(text, 'torch.zeros(size..., {dtype=, device=, requires_grad=, out=}) -> Tensor')
      has(text, 'PyTorch: torch.zeros')
      has(text, 'tensor([[0, 1, 2],\n        [3, 4, 5]])')
      lacks(text, 'tensor([1., 1.])')
    end)

    it('-i runs the script, then stays interactive', function()
      local script = tmpname() .. '.lua'
      local f = io.open(script, 'w')
      f:write('from_script = 21\n')
      f:close()
      local text, ok = drive({ { 'expect', '> ' }, { 'send', 'from_script * 2\\r' }, { 'expect', '42' },
        { 'expect', '> ' }, { 'send', '\\x04' } }, env, '-i ' .. script)
      os.remove(script)
      assert.is_true(ok, text)
    end)
  end)
end

-- the command without a terminal
local function run(args, input)
  local f
  if input then
    f = tmpname()
    local o = io.open(f, 'w')
    o:write(input)
    o:close()
  end
  local p = io.popen(('cd %s && luajit bin/moontorch %s %s 2>&1; echo "EXIT $?"'):format(sh_quote(root), args,
    f and ('< ' .. f) or '< /dev/null'))
  local text = p:read('*a')
  p:close()
  if f then os.remove(f) end
  local status = tonumber(text:match('EXIT (%d+)\n$'))
  return text:gsub('EXIT %d+\n$', ''), status
end

describe('moontorch on the command line', function()
  it('-e runs code with torch, nn, optim and F loaded; several -e in order', function()
    local text, status = run("-e 'print(torch.ones(2):sum():item())'"
      .. " -e 'print(type(nn.Linear), type(optim.SGD), type(F.relu))'")
    assert.equal('2\ntable\ttable\tfunction\n', text)
    assert.equal(0, status)
  end)

  it('-e with an error exits 1 with the message at (command line):1', function()
    local text, status = run("-e 'error(\"bad\")'")
    assert.equal(1, status)
    has(text, 'moontorch: (command line):1: bad')
  end)

  it('-l requires a module as a global named by its last part', function()
    local text, status = run("-l moontorch.utils.progress -e 'print(type(progress.new))'")
    assert.equal('function\n', text)
    assert.equal(0, status)
    local text2, status2 = run("-l no.such.module")
    assert.equal(1, status2)
    has(text2, "module 'no.such.module' not found")
  end)

  it('-i after a script reads commands from a pipe too', function()
    local script = tmpname() .. '.lua'
    local f = io.open(script, 'w')
    f:write('from_script = 20 + (arg[1] and tonumber(arg[1]) or 0)\n')
    f:close()
    local text, status = run('-i ' .. script .. ' 1', 'from_script * 2\n')
    os.remove(script)
    assert.equal('42\n', text)
    assert.equal(0, status)
  end)

  it('-i after a script that fails: the error, then the REPL', function()
    local script = tmpname() .. '.lua'
    local f = io.open(script, 'w')
    f:write('left_behind = 7\nerror("half way")\n')
    f:close()
    local text, status = run('-i ' .. script, 'left_behind * 6\n')
    os.remove(script)
    has(text, ':2: half way')
    has(text, '42\n')
    assert.equal(0, status)
  end)

  it('-h lists the options; an unknown option is refused', function()
    local text, status = run('-h')
    assert.equal(0, status)
    for _, o in ipairs { '-e code', '-l name', '-i', '--version' } do has(text, o) end
    local text2, status2 = run('--frobnicate')
    assert.equal(1, status2)
    has(text2, 'moontorch: unknown option --frobnicate')
  end)

  it('a script still gets arg as luajit sets it and fails with its traceback', function()
    local script = tmpname() .. '.lua'
    local f = io.open(script, 'w')
    f:write('print(arg[0] == ... and "" or "", arg[1], select("#", ...))\nerror("boom")\n')
    f:close()
    local text, status = run(script .. ' a b')
    os.remove(script)
    assert.equal(1, status)
    has(text, '\ta\t2\n')
    has(text, ':2: boom')
    lacks(text, 'repl.lua')
  end)

  it('the REPL fed by a pipe: values printed, ; silent, multi-line chunks, errors at stdin:N', function()
    local text, status = run('', table.concat({
      'x = torch.tensor({1, 2})', 'x', 'x;', '{1, 2, a = {b = "c"}}', 'for i = 1, 2 do', '  print(i)', 'end',
      'nope()', '1, nil, "s"', '?torch.zeros', '' }, '\n'))
    assert.equal(0, status)
    assert.equal(table.concat({
      'tensor([1., 2.])', '{1, 2, a = {b = "c"}}', '1', '2',
      "stdin:1: attempt to call global 'nope' (a nil value)", '1\tnil\ts' }, '\n'),
      text:match('^(.-)\ntorch%.zeros'))
  end)

  it('an unfinished chunk at the end of input is an error', function()
    local text = run('', 'function f()\n')
    has(text, "'end' expected")
  end)
end)

describe('the REPL\'s pieces', function()
  it('format pretty-prints tables to a depth, with cycles', function()
    local t = { 1, 'two', x = { y = { z = { w = 1 } } } }
    assert.equal('{1, "two", x = {y = {...}}}', repl.format(t, 2))
    assert.equal('{1, "two", x = {y = {z = {w = 1}}}}', repl.format(t, 5))
    local c = {}
    c.self = c
    assert.matches('^{self = <cycle: table: 0x%x+>}$', repl.format(c))
    assert.equal('{}', repl.format({}))
    assert.equal('tensor([1., 2.])', repl.format(torch.tensor({ 1, 2 }, { dtype = torch.float32 })))
    assert.equal('{[2.5] = false, ["a b"] = true}', repl.format({ ['a b'] = true, [2.5] = false }))
    local long = {}
    for i = 1, 30 do long['key' .. i] = i end
    assert.truthy(repl.format(long):find('\n  key1 = 1,\n', 1, true))
  end)

  it('complete: globals, table fields, tensor and module methods', function()
    _G.torch, _G.nn = torch, require 'moontorch.nn'
    assert.same({ 'torch.zeros', 'torch.zeros_like' }, repl.complete('torch.ze'))
    _G.__spec_t = torch.ones(2)
    local list = repl.complete('__spec_t:nume')
    assert.same({ '__spec_t:numel' }, list)
    assert.same({ '__spec_t.shape' }, repl.complete('__spec_t.shap'))
    _G.__spec_m = nn.Linear(2, 2)
    assert.same({ '__spec_m:zero_grad' }, repl.complete('__spec_m:zero_g'))
    assert.same({ '__spec_m.in_features' }, repl.complete('__spec_m.in_f'))
    assert.truthy(#repl.complete('whi') >= 1 and repl.complete('whi')[1] == 'while')
    assert.same({}, repl.complete('no_such_global.x'))
    _G.__spec_t, _G.__spec_m = nil, nil
  end)

  it('help: a moontorch name\'s doc (torch.help), else the comment above a function\'s definition and its parameters, a table\'s fields', function()
    local h = repl.help(torch.zeros, 'torch.zeros')
    assert.truthy(h:find('filled with 0', 1, true))
    assert.equal(torch.help(torch.zeros), h)
    assert.equal(torch.help(torch.matmul), repl.help('torch.matmul'))
    local h2 = repl.help(repl.complete, 'repl.complete')
    assert.truthy(h2:find('repl.complete(word)', 1, true))
    assert.truthy(h2:find('the words that complete', 1, true))
    assert.truthy(repl.help(print, 'print'):find('built-in', 1, true))
    _G.torch = torch
    assert.equal(require('moontorch.ffi').unwrap(torch.ones(1).add), repl.lookup('torch.Tensor.add')) -- (t.add is its front)
    assert.truthy(repl.help('torch.Tensor.add'):find('Tensor:add(other', 1, true))
    assert.equal('help: torch.nothing_here is nil', repl.help('torch.nothing_here'))
    assert.truthy(repl.help({ a = 1, f = print }, 't'):find('fields: a f()', 1, true))
  end)

  it('compile: an expression (printed unless it ends in ;), a statement, an incomplete chunk', function()
    local f, show = repl.compile('1 + 1')
    assert.is_true(show)
    assert.equal(2, f())
    local _, quiet = repl.compile('1 + 1;')
    assert.is_false(quiet)
    local g, s2 = repl.compile('local a = 1')
    assert.is_function(g)
    assert.is_false(s2)
    local none, err, more = repl.compile('function f(')
    assert.is_nil(none)
    assert.is_true(more)
    assert.truthy(err:find('<eof>', 1, true))
    local _, err2, more2 = repl.compile('x = = 1')
    assert.is_false(more2)
    assert.truthy(err2:find('^stdin:1:'))
  end)
end)
