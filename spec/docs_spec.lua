-- The docs (issue 27 part 4): every public name of torch, nn, F, optim, lr_scheduler, utils.data,
-- autograd, the tensor methods and the classes' methods has an entry in lua/doc/ (and no entry names
-- something that does not exist); every example runs and prints what its `-->` comments say; the
-- signatures take no more arguments than the functions do; each PyTorch name exists in PyTorch 1.13;
-- every op of MT_OP_LIST with a public binding has its doc.op line; docs/reference/ is what
-- `./run docs` writes now; torch.help gives what `?` prints.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local D = require 'moontorch.doc'

local function show(list, max)
  max = max or 60
  local out = {}
  for i = 1, math.min(#list, max) do out[i] = '  ' .. list[i] end
  if #list > max then out[#out + 1] = ('  ... and %d more'):format(#list - max) end
  return table.concat(out, '\n')
end

describe('the docs (lua/doc/)', function()
  D.reset()
  local reg = D.load()

  it('document every public name, and only names that exist (in the file the name belongs to)', function()
    -- torch.utils' submodules load on first use: loaded here so that the walk sees their names whatever
    -- ran before in this process
    local _ = torch.utils.data, torch.utils.progress, torch.utils.plot
    local problems = D.check()
    assert(#problems == 0, ('%d problem(s) with the docs (docs/reference/README.md, "Writing a doc", says how to write one; then ./run docs):\n%s')
      :format(#problems, show(problems)))
  end)

  it('cover the names the issue names: torch.matmul, nn.Linear, F.relu, optim.SGD, a scheduler, DataLoader, autograd.grad, methods', function()
    for _, k in ipairs { 'torch.matmul', 'torch.zeros', 'torch.zeros_like', 'Tensor:matmul', 'Tensor:add_', 'nn.Linear',
      'nn.LSTM', 'nn.Module:parameters', 'F.relu', 'F.cross_entropy', 'optim.SGD', 'optim.Optimizer:step',
      'optim.lr_scheduler.StepLR', 'torch.utils.data.DataLoader', 'torch.autograd.grad', 'nn.init.kaiming_normal_' } do
      local e = reg.by_key[k]
      assert(e, 'no doc for ' .. k)
      local text = D.text(e, k)
      assert(text:find('PyTorch: ', 1, true) and text:find('Example:', 1, true), text)
    end
  end)

  it('are what torch.help returns, for a value or a name, and the REPL\'s ?name prints the same', function()
    local repl = require 'moontorch.repl'
    local h = torch.help(torch.matmul)
    assert.truthy(h:find('torch.matmul(input, other', 1, true), h)
    assert.falsy(h:find('no documentation found', 1, true))
    assert.equal(h, torch.help('torch.matmul'))
    assert.equal(h, repl.help('torch.matmul'))
    -- other spellings of one name
    assert.equal(torch.help(nn.functional.relu), torch.help('torch.nn.functional.relu'))
    assert.equal(torch.help('F.relu'), torch.help('torch.nn.functional.relu'))
    assert.truthy(torch.help('torch.Tensor.add'):find('Tensor:add(other', 1, true))
    -- a method through a tensor, a module's method through an instance, a class, an instance
    local x = torch.ones(2)
    assert.equal(torch.help('Tensor:sum'), torch.help(x.sum))
    local m = nn.Linear(2, 3)
    assert.equal(torch.help('nn.Module:parameters'), torch.help(m.parameters))
    assert.truthy(torch.help(nn.Linear):find('nn.Linear(in_features, out_features', 1, true))
    assert.truthy(torch.help(m):find('an instance of nn.Linear', 1, true))
    -- an alias shows its target's doc
    assert.truthy(torch.help('torch.multiply'):find('another name of torch.mul', 1, true))
    assert.truthy(torch.help(torch.multiply):find('torch.mul(input, other', 1, true))
    -- a user's function: its parameters and the comment above it; a built-in; nothing
    assert.truthy(torch.help(print):find('built-in', 1, true))
    assert.equal('help: torch.nothing_here is nil', torch.help('torch.nothing_here'))
  end)

  it('have examples that run and print what their --> comments say', function()
    local failures = {}
    local threads = torch.get_num_threads()
    local env_base = { torch = torch, nn = nn, F = nn.functional, optim = require 'moontorch.optim',
      data = torch.utils.data }
    -- (whitespace collapsed, and none kept inside brackets' edges: a comment may put a printed
    -- matrix on one line)
    local function norm(s)
      return (s:gsub('%s+', ' '):gsub('^ ', ''):gsub(' $', ''):gsub('([%[%(]) ', '%1'):gsub(' ([%]%)])', '%1'))
    end
    -- (a build without ONNX, -DMT_ONNX=OFF, runs no example of torch.onnx.load/export: they read and
    -- write ONNX files; spec/onnx_spec.lua checks their error there)
    local no_onnx = require('moontorch.ffi').C.mt_onnx_built() == 0
    for _, e in ipairs(reg.entries) do
      if e.kind == 'doc' and not (no_onnx and e.keys[1]:match('^torch%.onnx%.')) then
        local printed = {} -- by line of the example
        local env = setmetatable({}, { __index = function(_, k)
          if env_base[k] ~= nil then return env_base[k] end
          return _G[k]
        end })
        env.print = function(...)
          local info = debug.getinfo(2, 'Sl')
          local line = info.source == '=example' and info.currentline or 0
          local parts = {}
          for i = 1, select('#', ...) do parts[i] = tostring((select(i, ...))) end
          printed[line] = (printed[line] and printed[line] .. ' ' or '') .. table.concat(parts, ' ')
        end
        local chunk, err = load(e.ex, '=example')
        local ok = chunk ~= nil
        if chunk then
          setfenv(chunk, env)
          ok, err = pcall(chunk)
        end
        torch.set_default_dtype(torch.float32)
        torch.set_grad_enabled(true)
        torch.set_num_threads(threads)
        if not ok then
          failures[#failures + 1] = ('%s (%s): the example fails: %s'):format(e.keys[1], e.at, tostring(err))
        else
          local n = 0
          for line in (e.ex .. '\n'):gmatch('([^\n]*)\n') do
            n = n + 1
            local want = line:match('%-%->%s*(.-)%s*$')
            if want and line:match('^%s*%-%-') == nil then
              local got = printed[n]
              if got == nil or norm(got) ~= norm(want) then
                failures[#failures + 1] = ('%s (%s): line %d of the example printed %s, its comment says %s')
                  :format(e.keys[1], e.at, n, got and ('%q'):format(norm(got)) or 'nothing', ('%q'):format(norm(want)))
              end
            end
          end
        end
      end
    end
    collectgarbage()
    assert(#failures == 0, ('%d example(s) wrong:\n%s'):format(#failures, show(failures)))
  end)

  -- the positional arguments a signature line shows (an options table counts as one; `...` as many)
  local function arity(sig)
    local args = sig:match('^[%w_%.:]+(%b())')
    if not args then return nil end
    args = args:sub(2, -2):gsub('%b{}', 'OPTS'):gsub('%[', ''):gsub('%]', '')
    if args:find('...', 1, true) then return nil end
    local n = 0
    for a in args:gmatch('[^,]+') do if a:match('%S') then n = n + 1 end end
    if sig:match('^[%w_%.]+:') then n = n + 1 end -- self
    return n
  end

  it('show no more arguments than a function with fixed parameters takes', function()
    local wrong = {}
    for _, e in ipairs(reg.entries) do
      if e.kind == 'doc' and not e.unchecked_args then
        for _, sig in ipairs(e.sigs) do
          local k = D.key_of(sig)
          local f = D.lookup(k)
          if D.is_class(f) then f = rawget(f, '__init') end
          local n = arity(sig)
          if type(f) == 'function' and n then
            local info = debug.getinfo(f, 'u')
            local takes = info.nparams - (D.is_class(D.lookup(k)) and 1 or 0)
            if not info.isvararg and n > takes then
              wrong[#wrong + 1] = ('%s (%s): the signature shows %d arguments, the function takes %d'):format(k, e.at, n, takes)
            end
          end
        end
      end
    end
    assert(#wrong == 0, show(wrong))
  end)

  -- (a heuristic: an option a signature names must at least be a word in the Lua files beside the
  -- function's own, or in tensor.lua, which reads dtype/device/requires_grad for every factory)
  it('name no option the code never reads', function()
    local texts = {}
    local function text_of(dir)
      if texts[dir] == nil then
        local p = io.popen(('cat %s/*.lua lua/tensor.lua 2>/dev/null'):format(H.sh_quote(dir)))
        texts[dir] = p:read('*a')
        p:close()
      end
      return texts[dir]
    end
    local wrong = {}
    for _, e in ipairs(reg.entries) do
      if e.kind == 'doc' then
        for _, sig in ipairs(e.sigs) do
          local k = D.key_of(sig)
          local f = D.lookup(k)
          if D.is_class(f) then f = rawget(f, '__init') end
          local args = sig:match('^[%w_%.:]+(%b())')
          local opts = args and args:match('%b{}')
          local path = type(f) == 'function' and debug.getinfo(f, 'S').source:match('^@(.*)/[^/]*$')
          if opts and path then
            local text = text_of(path)
            for name in opts:gmatch('([%a_][%w_]*)%s*=') do
              if not text:find('%f[%w_]' .. name .. '%f[^%w_]') then
                wrong[#wrong + 1] = ('%s (%s): option %s appears nowhere in %s/*.lua'):format(k, e.at, name, path)
              end
            end
          end
        end
      end
    end
    assert(#wrong == 0, show(wrong))
  end)

  it('document every op of MT_OP_LIST that has a binding with doc.op in ops.lua', function()
    local missing = {}
    local documented = {}
    for _, e in ipairs(reg.entries) do if e.op then documented[e.op.name] = true end end
    for _, op in ipairs(require('moontorch.ops.list').ops()) do
      if op.binding ~= 'INTERNAL' and not documented[op.name] then
        missing[#missing + 1] = ("%s: write doc.op{'%s', does = ..., ex = ...} in lua/doc/ops.lua"):format(op.name, op.name)
      end
    end
    assert(#missing == 0, show(missing))
  end)

  it('give PyTorch names that exist in PyTorch 1.13 (checked with /usr/bin/python3\'s torch)', function()
    local names, seen = {}, {}
    for _, e in ipairs(reg.entries) do
      if e.kind == 'doc' and e.pt ~= false then
        -- each comma-separated item's first word; an item saying "(PyTorch 2..." names a newer one
        for item in D.pytorch_names(e):gmatch('[^,%s][^,]*') do
          local name = item:gsub('%s.*$', '')
          if not item:find('(PyTorch 2', 1, true) and (name:match('^torch%.[%w_%.]*$') or name:match('^Tensor%.[%w_%.]*$')) then
            if not seen[name] then seen[name] = true; names[#names + 1] = name end
          end
        end
      end
    end
    local f = os.tmpname()
    H.write_file(f, table.concat(names, '\n'))
    local p = io.popen(([[/usr/bin/python3 -c '
import sys, importlib
import torch, torch.nn, torch.nn.functional, torch.optim, torch.utils.data, torch.autograd
for name in open(sys.argv[1]).read().split():
    path = name.replace("Tensor.", "torch.Tensor.", 1) if name.startswith("Tensor.") else name
    obj, parts = None, path.split(".")
    try:
        obj = importlib.import_module(parts[0])
        for i, part in enumerate(parts[1:]):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                obj = importlib.import_module(".".join(parts[:i + 2]))
    except Exception:
        print(name)
' %s 2>&1]]):format(f))
    local out = p:read('*a')
    p:close()
    os.remove(f)
    if out:find('No module named', 1, true) then
      pending('PyTorch is not installed for /usr/bin/python3')
      return
    end
    local bad = {}
    for l in out:gmatch('[^\n]+') do bad[#bad + 1] = l .. ' (write pt = "..." in its entry, or pt = false)' end
    assert(#bad == 0, 'names PyTorch 1.13 does not have:\n' .. show(bad))
  end)

  it('are read from every file in lua/doc/ (each one listed in moontorch.doc.FILES)', function()
    local listed = {}
    for _, f in ipairs(D.FILES) do listed[f] = true end
    local p = io.popen('ls lua/doc')
    local unlisted = {}
    for f in p:lines() do
      local name = f:match('^([%w_]+)%.lua$')
      if name and name ~= 'init' and name ~= 'reference' and not listed[name] then unlisted[#unlisted + 1] = f end
    end
    p:close()
    assert(#unlisted == 0, 'lua/doc/ files that are never read (add them to FILES and PLACES in lua/doc/init.lua): '
      .. table.concat(unlisted, ', '))
  end)

  it('are in docs/reference/ as ./run docs writes them now', function()
    local stale = require('moontorch.doc.reference').stale('docs/reference')
    assert(#stale == 0, 'docs/reference/ is stale (run ./run docs and commit it): ' .. table.concat(stale, ', '))
  end)

  it('raise an error naming the file and line of a broken entry', function()
    local ok, err = pcall(function()
      local r = { entries = {}, by_key = {} }
      local chunk = assert(load("local doc = ...\ndoc { 'torch.zeros(size...)', ex = 'x' }", '@lua/doc/broken.lua'))
      -- the definer is internal: reach it through a fresh load of a temporary place
      chunk(D._definer(r, 'broken'))
    end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('lua/doc/broken.lua:2', 1, true), err)
    assert.truthy(tostring(err):find('does', 1, true), err)
  end)
end)

describe('docs/API.md', function()
  local text = H.read_file('docs/API.md')
  -- What API.md may still mark *(coming)*: each with the check that it is indeed missing. Making one
  -- real means dropping its mark there and its line here.
  local COMING = {
    { 'CUDA', function() return torch.config():find('CUDA: not built', 1, true) ~= nil end },
  }

  it('marks nothing *(coming)* that exists', function()
    local bad = {}
    local n = 0
    -- each mark with the text before it in its sentence (a sentence may span lines)
    local marks = text:gsub('%*%(coming%)%* marks a convention', '') -- (the legend)
    for before in marks:gmatch('([^.]*)%*%(coming%)%*') do
      local line = before:gsub('%s+', ' ') .. '*(coming)*'
      do
        n = n + 1
        local known
        for _, c in ipairs(COMING) do
          if line:find(c[1], 1, true) then
            known = true
            if not c[2]() then bad[#bad + 1] = ('%s is marked coming but exists: %s'):format(c[1], line) end
          end
        end
        if not known then
          bad[#bad + 1] = 'marked coming, with no check in spec/docs_spec.lua\'s COMING that it is missing: ' .. line
        end
      end
    end
    assert(#bad == 0, table.concat(bad, '\n'))
    assert.is_true(n <= #COMING)
  end)

  -- the code API.md shows: ```lua blocks and `inline` spans
  local function code_of(s)
    local blocks, spans = {}, {}
    local rest = s:gsub('```lua\n(.-)```', function(b) blocks[#blocks + 1] = b return '' end)
    for span in rest:gmatch('`([^`\n]+)`') do spans[#spans + 1] = span end
    return blocks, spans
  end
  local blocks, spans = code_of(text)

  it('shows only names that exist (torch.x, nn.X, F.x, optim.X, data.X, :method)', function()
    local D = require 'moontorch.doc'
    local roots = { torch = torch, nn = nn, F = nn.functional, optim = require 'moontorch.optim',
      data = torch.utils.data, datasets = torch.datasets }
    local registry = require('moontorch.class').registry
    local function resolve(path)
      if registry[path] then return registry[path] end -- a class by its name ('torch.List')
      local v
      for part in path:gmatch('[^%.]+') do
        if v == nil then v = roots[part] else
          local ok, r = pcall(function() return v[part] end)
          v = ok and r or nil
        end
        if v == nil then return nil end
      end
      return v
    end
    -- every method name something public answers to
    local methods = {}
    for k in pairs(require('moontorch.tensor').methods) do methods[k] = true end
    for _, n in ipairs(D.names()) do
      local m = n.key:match(':([%w_]+)$')
      if m then methods[m] = true end
    end
    for _, m in ipairs { 'name', 'register_hook', 'register_prehook', 'remove' } do methods[m] = true end -- grad_fn, handles
    for k in pairs(string) do methods[k] = true end
    -- every method of a registered class, its '_' ones too (m:_get_name())
    for _, cls in pairs(registry) do
      local c = cls
      while type(c) == 'table' do
        for k, v in pairs(c) do if type(k) == 'string' and type(v) == 'function' then methods[k] = true end end
        c = rawget(c, '__parent')
      end
    end
    -- the methods a class of the user's defines (MyLinear:__init, MyData:__getitem, __len)
    for _, m in ipairs { '__init', '__getitem', '__len', '__iter', 'forward' } do methods[m] = true end
    local missing, seen = {}, {}
    local all = {}
    for _, b in ipairs(blocks) do all[#all + 1] = b end
    for _, sp in ipairs(spans) do all[#all + 1] = sp end
    for _, code in ipairs(all) do
      -- (strings' contents too: torch.class('MyLinear', 'nn.Module') names nn.Module)
      for path in code:gmatch('%f[%w_.]([%a_][%w_]*%.[%a_][%w_%.]*)') do
        path = path:gsub('%.$', '')
        local root = path:match('^([%w_]+)')
        if roots[root] and not seen[path] then
          seen[path] = true
          if resolve(path) == nil then missing[#missing + 1] = path end
        end
      end
      for m in code:gmatch(':([%a_][%w_]*)%s*[%({]') do
        if not methods[m] and not seen[':' .. m] then
          seen[':' .. m] = true
          missing[#missing + 1] = ':' .. m
        end
      end
    end
    assert(#missing == 0, 'docs/API.md shows names that do not exist: ' .. table.concat(missing, ', '))
  end)

  it('has examples that run and print what their --> comments say', function()
    local failures = {}
    for bi, b in ipairs(blocks) do
      local printed = {}
      local env = setmetatable({ torch = torch, nn = nn, F = nn.functional, optim = require 'moontorch.optim' },
        { __index = _G })
      env.print = function(...)
        local info = debug.getinfo(2, 'Sl')
        local line = info.source == '=script.lua' and info.currentline or 0
        local parts = {}
        for i = 1, select('#', ...) do parts[i] = tostring((select(i, ...))) end
        printed[line] = (printed[line] and printed[line] .. ' ' or '') .. table.concat(parts, ' ')
      end
      local chunk, err = load(b, '=script.lua')
      if not chunk then
        -- a sketch with `...` standing for the user's code is shown, not run
        if not b:find('%.%.%. end') and not b:find('do %.%.%.') then
          failures[#failures + 1] = ('block %d does not compile: %s'):format(bi, err)
        end
      else
        setfenv(chunk, env)
        local ok, e = pcall(chunk)
        torch.set_default_dtype(torch.float32)
        if not ok then
          failures[#failures + 1] = ('block %d fails: %s'):format(bi, tostring(e))
        else
          local n = 0
          for line in (b .. '\n'):gmatch('([^\n]*)\n') do
            n = n + 1
            local want = line:match('%-%->%s*(.-)%s*$')
            if want and not line:match('^%s*%-%-') then
              local function norm(s)
                return (s:gsub('%s+', ' '):gsub('^ ', ''):gsub(' $', ''):gsub('([%[%(]) ', '%1'):gsub(' ([%]%)])', '%1'))
              end
              if printed[n] == nil or norm(printed[n]) ~= norm(want) then
                failures[#failures + 1] = ('block %d, line %d printed %q; API.md says %q'):format(bi, n,
                  printed[n] and norm(printed[n]) or 'nothing', norm(want))
              end
            end
          end
        end
      end
    end
    assert(#failures == 0, table.concat(failures, '\n'))
  end)
end)
