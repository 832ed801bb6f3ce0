-- moontorch.doc.reference: the API reference in docs/reference/, written from the doc entries
-- (lua/doc/*.lua) by `./run docs`; spec/docs_spec.lua fails when the checked-in pages differ from
-- what this writes now.
--   local ref = require 'moontorch.doc.reference'
--   ref.pages()          -- { ['torch.md'] = text, ..., ['README.md'] = text }
--   ref.write('docs/reference')
--   ref.stale('docs/reference')  -- the pages that differ or are missing or left over (names)
local D = require 'moontorch.doc'

local M = {}

-- GitHub's heading anchors: lower case, punctuation dropped, spaces to '-'; repeats get -1, -2, ...
local function slugger()
  local used = {}
  return function(text)
    local s = text:lower():gsub('[^%w_%- ]', ''):gsub(' ', '-')
    local n = used[s]
    used[s] = (n or 0) + 1
    if n then s = s .. '-' .. n end
    return s
  end
end

local function code(s)
  return '```lua\n' .. s:gsub('^\n+', ''):gsub('%s+$', '') .. '\n```'
end

-- the page of one place: its entries in file order, under their sections; a contents list first
-- (one line per entry, so that entries added in different places merge without conflicts)
local function page(place, entries)
  local reg = D.load()
  local slug = slugger()
  slug(D.TITLES[place] or place)
  local toc, body = {}, {}
  local anchor = {}
  for _, e in ipairs(entries) do
    if e.kind == 'doc' then anchor[e] = slug(e.keys[1])
    elseif e.kind == 'section' then anchor[e] = slug(e.title) end
  end
  for _, e in ipairs(entries) do
    if e.kind == 'section' then
      toc[#toc + 1] = ('- [%s](#%s)'):format(e.title, anchor[e])
      body[#body + 1] = '## ' .. e.title
    elseif e.kind == 'doc' then
      toc[#toc + 1] = ('  - [`%s`](#%s)'):format(e.keys[1], anchor[e])
      local parts = { '### ' .. e.keys[1], code(table.concat(e.sigs, '\n')), (e.does:gsub('%s+$', '')) }
      if e.note then parts[#parts + 1] = e.note end
      parts[#parts + 1] = 'PyTorch: ' .. D.pytorch_names(e)
      parts[#parts + 1] = code(e.ex)
      body[#body + 1] = table.concat(parts, '\n\n')
    elseif not e.generated then
      local t = reg.by_key[e.target]
      local link = t and anchor[t] and ('[`%s`](#%s)'):format(e.target, anchor[t])
        or ('`%s` (%s)'):format(e.target, t and (t.file .. '.md') or '?')
      body[#body + 1] = ('`%s`: another name of %s.'):format(e.sigs[1], link)
    end
  end
  return table.concat({ '# ' .. (D.TITLES[place] or place),
    '<!-- written by `./run docs` from lua/doc/' .. place .. '.lua: edit that file, not this page -->',
    table.concat(toc, '\n'), table.concat(body, '\n\n') }, '\n\n') .. '\n'
end

local README = [[
# The moontorch API reference

Every public name of moontorch, with its signature, what it does, PyTorch's name for it and an
example. The same text is what `?name` prints in the REPL (`moontorch` with no script) and what
`torch.help(f)` returns.

<!-- written by `./run docs` from lua/doc/*.lua: edit those files, not these pages -->

%s

## Reading a signature
- `torch.f(input, other)`: arguments by position; `[, x]`: an optional one; `...`: any number.
- `{a=, b=}`: the trailing options table (Python's keyword arguments): `torch.sum(x, 2, {keepdim = true})`.
  An optional argument may also be given by position where PyTorch takes it so; a module's required
  constructor arguments may go by name too (`nn.Conv2d(3, 64, {kernel_size = 7, stride = 2})`).
- `Tensor:f(...)`: a method (`x:f(...)`); `Tensor.p`: a property (`x.p`); `nn.Class(...)`: a
  constructor; `nn.Class:m(...)`: a method of its instances (`m:parameters()`).
- Dimensions and positions count from 1, as everywhere in moontorch (docs/API.md).

## Writing a doc
The docs live in `lua/doc/<place>.lua`, one entry per public name (or per group of names that
are one thing: `torch.add`, `Tensor:add`, `Tensor:add_`). `spec/docs_spec.lua` fails, naming the
name and the file, when a public name has no entry, when an entry names something that does not
exist, when an example fails, and when these pages are stale. After adding or changing an entry,
run `./run docs` and commit the pages with it.

```lua
doc { 'torch.zeros(size..., {dtype=, device=, requires_grad=}) -> Tensor',   -- one line per form
  'Tensor:new_zeros(size..., {dtype=, device=}) -> Tensor',                  -- each line's name is a key
  does = 'A tensor of the given size filled with 0; the size as numbers or one array.',
  ex = 'print(torch.zeros(2, 3):size())  --> torch.Size([2, 3])',  -- runs in the spec; --> is checked
  pt = 'torch.zeros, Tensor.new_zeros',  -- optional: PyTorch's names; false: no counterpart
}
doc.alias('torch.concat', 'torch.cat')   -- another name for the same function
doc.section 'Reductions'                 -- a heading on the page for the entries after it
```

Which file: `Tensor:`/`Tensor.` names in tensor.lua, `F.` in functional.lua, `nn.init.`/`nn.utils.`
in nn_utils.lua, other `nn.` names in nn.lua, `optim.` in optim.lua, `torch.utils.data.` and
`torch.datasets.` in data.lua, `torch.autograd.` in autograd.lua, `torch.cuda.` in cuda.lua,
`torch.distributed`, `nn.parallel` and `torch.utils.data.distributed` in distributed.lua, `torch.fx` in fx.lua,
`torch.sparse` in sparse.lua, `torch.profiler` in profiler.lua,
`nn.utils.parametrize`/`parametrizations` in parametrize.lua, `nn.utils.prune` in prune.lua, every
other `torch.` name in torch.lua (the table `PLACES` in lua/doc/init.lua). An op of MT_OP_LIST is
documented in ops.lua with `doc.op { 'name', does = ..., ex = ... }`: its signatures, dtype rule,
autograd and other names come from the op list. A method of a class is `nn.Linear:reset_parameters`
(one doc on a parent class, `nn.Module:parameters`, covers every subclass).
]]

-- pages(): every page's text by file name
function M.pages()
  local reg = D.load()
  local by_place = {}
  for _, e in ipairs(reg.entries) do
    if not by_place[e.file] then by_place[e.file] = {} end
    table.insert(by_place[e.file], e)
  end
  local out, index = {}, {}
  for _, place in ipairs(D.FILES) do
    local entries = by_place[place]
    if entries then
      out[place .. '.md'] = page(place, entries)
      index[#index + 1] = ('- [%s](%s.md)'):format(D.TITLES[place] or place, place)
    end
  end
  out['README.md'] = README:format(table.concat(index, '\n'))
  return out
end

local function read(path)
  local f = io.open(path, 'rb')
  if not f then return nil end
  local s = f:read('*a')
  f:close()
  return s
end

local function listdir(dir)
  local names = {}
  local p = io.popen('ls -1 ' .. ("'" .. dir:gsub("'", "'\\''") .. "'") .. ' 2>/dev/null')
  for l in p:lines() do names[#names + 1] = l end
  p:close()
  return names
end

-- write(dir): writes every page (and removes .md pages no longer made); returns the names written
function M.write(dir)
  os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'")
  local pages = M.pages()
  local written = {}
  for name, text in pairs(pages) do
    if read(dir .. '/' .. name) ~= text then
      local f = assert(io.open(dir .. '/' .. name, 'wb'))
      f:write(text)
      f:close()
      written[#written + 1] = name
    end
  end
  for _, name in ipairs(listdir(dir)) do
    if name:match('%.md$') and not pages[name] then
      os.remove(dir .. '/' .. name)
      written[#written + 1] = name .. ' (removed)'
    end
  end
  table.sort(written)
  return written
end

-- stale(dir): the pages in dir that differ from a fresh generation, are missing, or are left over
function M.stale(dir)
  local pages, out = M.pages(), {}
  for name, text in pairs(pages) do
    local have = read(dir .. '/' .. name)
    if have == nil then out[#out + 1] = name .. ' (missing)'
    elseif have ~= text then out[#out + 1] = name end
  end
  for _, name in ipairs(listdir(dir)) do
    if name:match('%.md$') and not pages[name] then out[#out + 1] = name .. ' (left over)' end
  end
  table.sort(out)
  return out
end

return M
