-- Containers (Sequential, ModuleList, ParameterList, ModuleDict, ParameterDict) against PyTorch
-- 1.13. Names, orders and messages recorded with /usr/bin/python3 (torch 1.13.1), e.g.
--   s = nn.Sequential(nn.ReLU()); s.add_module('fc', nn.Linear(1, 1))   -> len 2, names ['0', 'fc']
--   pl = nn.ParameterList([p]); pl.register_parameter('w', q)           -> len 1, names ['0', 'w']
--   s = nn.Sequential(OrderedDict(fc=, act=, out=)); del s[1]           -> names ['0', '1']
--   s = nn.Sequential(a, b); s.insert(5, m)        -> IndexError: Index out of range: 5
--   nn.Sequential(a) + nn.Sequential(b, c)          -> Sequential (0): a (1): b (2): c
--   nn.Sequential(b, c) * 2                         -> b c b c (the same modules); * 0, * 1.5 raise
--   md[1] = m -> "module name should be a string. Got int"; md['k'] = 5 -> "int is not a Module subclass"
--   pd.get / setdefault / popitem on ParameterDict({'a': ones(1), 'b': ones(2)})
-- Lua positions are 1-based, names 0-based (see API.md).
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'

local function names(iter)
  local out = {}
  for n in iter do out[#out + 1] = n end
  return out
end

local function kinds(seq)
  local out = {}
  for i, m in ipairs(seq) do out[i] = m:_get_name() end
  return out
end

describe('containers', function()
  it('print as PyTorch', function()
    assert.are.equal('ModuleList(\n  (0): ReLU()\n  (1): Linear(in_features=1, out_features=2, bias=False)\n)',
      tostring(nn.ModuleList({ nn.ReLU(), nn.Linear(1, 2, false) })))
    assert.are.equal('ParameterDict(\n    (a): Parameter containing: [torch.DoubleTensor of size 1]\n    (b): Parameter ' ..
      'containing: [torch.FloatTensor of size 2x3]\n)', tostring(nn.ParameterDict({ b = nn.Parameter(torch.ones(2, 3)),
        a = nn.Parameter(torch.ones(1, { dtype = torch.float64 })) })))
    assert.are.equal('ParameterList(\n    (0): Parameter containing: [torch.float32 of size 2]\n    (1): Parameter ' ..
      'containing: [torch.float64 of size 2x3]\n)', tostring(nn.ParameterList({ nn.Parameter(torch.ones(2)),
        nn.Parameter(torch.ones(2, 3, { dtype = torch.float64 })) })))
    assert.are.equal('BatchNorm2d(3, eps=1e-05, momentum=None, affine=False, track_running_stats=True)',
      tostring(nn.BatchNorm2d(3, { momentum = false, affine = false })))
  end)
  it('Sequential: positions, names, replacing, slicing, append/insert/remove', function()
    local s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert.are.equal(3, #s)
    assert.is_true(torch.isinstance(s[-1], nn.Linear))
    local n = 0
    for _, mod in ipairs(s) do n = n + 1; assert.is_true(torch.isinstance(mod, nn.Module)) end
    assert.are.equal(3, n)
    assert.are.same({ '0.weight', '0.bias', '2.weight', '2.bias' }, s:state_dict():keys())
    s[3] = nn.Linear(3, 4) -- replacing an item: the registry follows
    assert.are.same({ 4, 3 }, s:state_dict()['2.weight']:size())
    assert.are.same({ 2, 4 }, s(torch.ones(2, 2)):size())
    s:append(nn.Sigmoid())
    assert.are.same({ '0', '1', '2', '3' }, names(s:named_children()))
    s:remove(2)
    assert.are.same({ '0', '1', '2' }, names(s:named_children()), 'removing renumbers (1.13\'s del)')
    local t = s:slice(2, 3)
    assert.are.equal(2, #t)
    assert.are.same({ '1', '2' }, names(t:named_children()), 'slicing keeps the names')
    s:insert(1, nn.Identity())
    assert.is_true(torch.isinstance(s[1], nn.Identity))
    local od = torch.OrderedDict { { 'fc', nn.Linear(1, 1) }, { 'act', nn.ReLU() } }
    assert.are.same({ 'fc.weight', 'fc.bias' }, nn.Sequential(od):state_dict():keys())
  end)
  it('ModuleList and ParameterList', function()
    local l = nn.ModuleList({ nn.Linear(1, 1), nn.Linear(1, 1) })
    l:append(nn.Linear(1, 1))
    assert.are.same({ '0.weight', '0.bias', '1.weight', '1.bias', '2.weight', '2.bias' }, l:state_dict():keys())
    l:remove(1)
    assert.are.same({ '0', '1' }, names(l:named_children()), 'ModuleList renumbers')
    H.errors_with(function() l:append(3) end, 'number is not a Module subclass')
    local p = nn.ParameterList({ torch.ones(1), nn.Parameter(torch.ones(2)) })
    assert.is_true(torch.isinstance(p[1], nn.Parameter), 'plain tensors become parameters')
    assert.are.same({ '0', '1' }, names(p:named_parameters()))
  end)
  it('ModuleDict and ParameterDict', function()
    local d = nn.ModuleDict({ relu = nn.ReLU(), act = nn.Tanh() })
    assert.are.same({ 'act', 'relu' }, d:keys(), 'a plain table: sorted keys')
    d.zz = nn.Sigmoid()
    d.aa = nn.Sigmoid()
    assert.are.same({ 'act', 'relu', 'zz', 'aa' }, d:keys(), 'later insertions go last')
    d.relu = nn.ReLU(true)
    assert.are.same({ 'act', 'relu', 'zz', 'aa' }, d:keys(), 'replacing keeps the position')
    local o = nn.ModuleDict({ { 'b', nn.ReLU() }, { 'a', nn.ReLU() } })
    assert.are.same({ 'b', 'a' }, o:keys(), 'pairs keep their order')
    assert.is_true(torch.isinstance(o:pop('b'), nn.ReLU))
    assert.are.same({ 'a' }, o:keys())
    assert.is_true(o:contains('a'))
    local n = 0
    for k, v in d:items() do n = n + 1; assert.is_true(torch.isinstance(v, nn.Module)) end
    assert.are.equal(4, n)
    local pd = nn.ParameterDict({ w = torch.ones(2) })
    assert.is_true(torch.isinstance(pd.w, nn.Parameter))
    assert.are.same({ 'w' }, pd:state_dict():keys())
  end)
end)

describe('list containers by name', function()
  it('add_module on a Sequential or ModuleList adds an item under that name', function()
    local s = nn.Sequential(nn.ReLU())
    local fc = nn.Linear(1, 1)
    s:add_module('fc', fc)
    assert.are.equal(2, #s)
    assert.is_true(rawequal(s[2], fc))
    assert.are.same({ '0', 'fc' }, names(s:named_children()))
    assert.are.same({ 'fc.weight', 'fc.bias' }, s:state_dict():keys())
    H.near(s(torch.ones(1)), fc(torch.ones(1)))
    local e = nn.Sequential()
    e:add_module('fc', nn.Linear(1, 1))
    e:register_module('act', nn.ReLU())
    assert.are.same({ 'Linear', 'ReLU' }, kinds(e))
    e:append(nn.Tanh())
    assert.are.same({ 'fc', 'act', '2' }, names(e:named_children()))
    local l = nn.ModuleList({ nn.ReLU() })
    l:add_module('fc', nn.Linear(1, 1))
    assert.are.equal(2, #l)
    assert.are.same({ '0', 'fc' }, names(l:named_children()))
    -- replacing by name keeps the position
    s:add_module('0', nn.Tanh())
    assert.are.same({ 'Tanh', 'Linear' }, kinds(s))
  end)
  it('assigning a module by name adds an item, nil deletes it', function()
    local s = nn.Sequential(nn.ReLU(), nn.Tanh())
    s.fc = nn.Linear(1, 1)
    assert.are.equal(3, #s)
    assert.are.same({ '0', '1', 'fc' }, names(s:named_children()))
    s.fc = nil
    assert.are.equal(2, #s)
    assert.are.same({ '0', '1' }, names(s:named_children()))
  end)
  it('register_parameter on a ParameterList adds a parameter that is not an item', function()
    local pl = nn.ParameterList({ torch.ones(1) })
    pl:register_parameter('w', nn.Parameter(torch.ones(2)))
    assert.are.equal(1, #pl)
    assert.are.same({ '0', 'w' }, names(pl:named_parameters()))
    pl:append(torch.zeros(3))
    assert.are.equal(2, #pl)
    assert.are.same({ '0', 'w', '1' }, names(pl:named_parameters()))
    pl:remove(1)
    assert.are.same({ '0', 'w' }, names(pl:named_parameters()))
    assert.are.same({ 3 }, pl[1]:size())
    pl:add_module('fc', nn.Linear(1, 1))
    assert.are.equal(1, #pl)
    assert.are.same({ 'fc' }, names(pl:named_children()))
  end)
end)

describe('list containers by position', function()
  it('seq[i] = nil deletes item i only, and renumbers (PyTorch\'s del)', function()
    local s = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid())
    s[2] = nil
    assert.are.equal(2, s:len())
    assert.are.same({ 'ReLU', 'Sigmoid' }, kinds(s))
    assert.are.same({ '0', '1' }, names(s:named_children()))
    local od = torch.OrderedDict { { 'fc', nn.Linear(1, 1) }, { 'act', nn.ReLU() }, { 'out', nn.Tanh() } }
    local c = nn.Sequential(od)
    c[2] = nil
    assert.are.same({ '0', '1' }, names(c:named_children()))
    assert.are.same({ 'Linear', 'Tanh' }, kinds(c))
    -- a negative position reaches __newindex, so it takes effect at once
    c[-1] = nil
    assert.are.equal(1, #c)
    local l = nn.ModuleList({ nn.ReLU(), nn.Tanh(), nn.Sigmoid() })
    l[1] = nil
    assert.are.same({ '0', '1' }, names(l:named_children()))
    assert.are.same({ 'Tanh', 'Sigmoid' }, kinds(l))
  end)
  it('a value a list cannot hold is refused at its next use, and the old item kept', function()
    local s = nn.Sequential(nn.ReLU(), nn.Tanh())
    s[1] = 3
    local err = H.errors_with(function() s(torch.ones(1)) end,
      "moontorch.nn.Sequential: cannot assign 'number' as child module '0' (nn.Module or nil expected)")
    assert.is_truthy(err:find('containers_spec.lua', 1, true), 'raised at the caller\'s line: ' .. err)
    assert.are.same({ 'ReLU', 'Tanh' }, kinds(s))
    H.near(s(torch.tensor({ -1 })), { 0 })
    local l = nn.ModuleList({ nn.ReLU() })
    l[1] = 'x'
    H.errors_with(function() return l.training end, "cannot assign 'string' as child module '0'")
    local pl = nn.ParameterList({ torch.ones(1) })
    pl[1] = 3
    H.errors_with(function() return #pl:parameters() end, "cannot assign 'number' as parameter '0'")
    -- negative positions and the next free one are checked at once
    H.errors_with(function() s[-1] = 3 end, 'number is not a Module subclass')
    H.errors_with(function() s[#s + 1] = 3 end, 'number is not a Module subclass')
    H.errors_with(function() s[1.5] = nn.ReLU() end, 'Sequential indices must be integers, not 1.5')
    H.errors_with(function() s[5] = nn.ReLU() end, 'index 5 is out of range')
  end)
  it('a tensor put in a ParameterList becomes a Parameter', function()
    local pl = nn.ParameterList({ torch.ones(1) })
    local t = torch.zeros(2)
    pl[1] = t
    assert.are.equal(1, pl:len()) -- (any use takes the write in)
    assert.is_true(torch.isinstance(pl[1], nn.Parameter))
    assert.is_true(pl[1].requires_grad)
    assert.are.same({ '0' }, names(pl:named_parameters()))
    pl[-1] = torch.ones(3)
    assert.is_true(torch.isinstance(pl[1], nn.Parameter))
    pl[2] = torch.ones(4)
    assert.is_true(torch.isinstance(pl[2], nn.Parameter))
  end)
  it('pop and remove renumber the names; insert checks its index', function()
    local s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1), nn.Sigmoid())
    assert.are.equal('ReLU', s:pop(2):_get_name())
    assert.are.same({ '0', '1', '2' }, names(s:named_children()))
    assert.are.same({ '0.weight', '0.bias', '1.weight', '1.bias' }, s:state_dict():keys())
    local t = nn.Sequential(nn.ReLU(), nn.Tanh())
    H.errors_with(function() t:insert(4, nn.ReLU()) end, 'moontorch.nn.Sequential.insert: Index out of range: 4')
    H.errors_with(function() t:insert(-3, nn.ReLU()) end, 'Index out of range: -3')
    H.errors_with(function() t:insert(0, nn.ReLU()) end, 'Index out of range: 0')
    H.errors_with(function() t:insert(1.5, nn.ReLU()) end, 'index must be an integer, not 1.5')
    H.errors_with(function() nn.ModuleList():insert(2, nn.ReLU()) end, 'Index out of range: 2')
    t:insert(-1, nn.Identity()) -- PyTorch's insert(-1, m): before the last item
    assert.are.same({ 'ReLU', 'Identity', 'Tanh' }, kinds(t))
    t:insert(4, nn.Sigmoid()) -- n + 1: at the end
    assert.are.same({ 'ReLU', 'Identity', 'Tanh', 'Sigmoid' }, kinds(t))
    assert.are.same({ '0', '1', '2', '3' }, names(t:named_children()))
    H.errors_with(function() t:remove(5) end, 'index 5 is out of range')
    H.errors_with(function() t:remove(2.5) end, 'Sequential indices must be integers, not 2.5')
  end)
  it('Sequential + and *', function()
    local a, b = nn.Sequential(nn.ReLU()), nn.Sequential(nn.Tanh(), nn.Sigmoid())
    local c = a + b
    assert.are.same({ 'ReLU', 'Tanh', 'Sigmoid' }, kinds(c))
    assert.are.same({ '0', '1', '2' }, names(c:named_children()))
    assert.are.equal(1, #a, 'operands unchanged')
    local d = b * 2
    assert.are.same({ 'Tanh', 'Sigmoid', 'Tanh', 'Sigmoid' }, kinds(d))
    assert.is_true(rawequal(d[1], d[3]), 'the same modules, shared')
    assert.are.same({ 'ReLU', 'ReLU' }, kinds(2 * a))
    H.errors_with(function() return a + 3 end,
      'moontorch.nn.Sequential: add operator supports only objects of Sequential class, but number is given.')
    H.errors_with(function() return a + nn.ModuleList() end, 'but nn.ModuleList is given')
    H.errors_with(function() return b * 0 end, 'Non-positive multiplication factor 0 for nn.Sequential')
    H.errors_with(function() return b * 1.5 end, 'unsupported operand type(s) for *')
    local l = nn.ModuleList({ nn.ReLU() }) + { nn.Tanh() }
    assert.is_true(torch.isinstance(l, nn.ModuleList))
    assert.are.same({ 'ReLU', 'Tanh' }, kinds(l))
  end)
  it('calls: a Sequential takes one input; a ParameterList or ParameterDict is not callable', function()
    H.errors_with(function() nn.Sequential(nn.ReLU())(torch.ones(1), torch.ones(1)) end,
      'moontorch.nn.Sequential: forward() takes 1 positional argument but 2 were given')
    H.errors_with(function() nn.ParameterList()(torch.ones(1)) end,
      'moontorch.nn.ParameterList: ParameterList should not be called.')
    H.errors_with(function() nn.ParameterDict()(torch.ones(1)) end, 'ParameterDict should not be called.')
    H.errors_with(function() nn.ModuleList()(torch.ones(1)) end, 'Module [ModuleList] is missing the required "forward" function')
  end)
  it('torch.save keeps items and other entries apart', function()
    local pl = nn.ParameterList({ torch.ones(1), torch.ones(2) })
    pl:register_parameter('w', nn.Parameter(torch.ones(3)))
    local s = nn.Sequential(nn.ReLU(), nn.Linear(1, 1))
    s:add_module('fc', nn.Linear(1, 2))
    local f = os.tmpname()
    torch.save({ pl, s }, f)
    local back = torch.load(f)
    os.remove(f)
    assert.are.equal(2, #back[1])
    assert.are.same({ '0', '1', 'w' }, names(back[1]:named_parameters()))
    assert.are.equal(3, #back[2])
    assert.are.same({ 'ReLU', 'Linear', 'Linear' }, kinds(back[2]))
    assert.are.same({ '0', '1', 'fc' }, names(back[2]:named_children()))
  end)
end)

describe('dict containers', function()
  it('ModuleDict keys are strings; a value other than a module is refused', function()
    local md = nn.ModuleDict()
    H.errors_with(function() md[1] = nn.ReLU() end, 'moontorch.nn.ModuleDict: module name should be a string. Got number')
    H.errors_with(function() md.k = 5 end, 'moontorch.nn.ModuleDict: number is not a Module subclass')
    H.errors_with(function() md:update({ k = 5 }) end, 'number is not a Module subclass')
    H.errors_with(function() nn.ModuleDict({ [2] = nn.ReLU() }) end, 'module name should be a string. Got number')
    assert.are.equal(0, md:len())
    md.training = false -- an existing attribute is still an attribute
    assert.is_false(md.training)
    H.errors_with(function() nn.ParameterDict()[1] = torch.ones(1) end,
      'Index given to ParameterDict cannot be used as a key as it is not a string')
  end)
  it('ParameterDict get, setdefault and popitem', function()
    local pd = nn.ParameterDict({ a = torch.ones(1), b = torch.ones(2) })
    assert.is_true(rawequal(pd:get('a'), pd.a))
    assert.is_nil(pd:get('zz'))
    assert.are.equal(5, pd:get('zz', 5))
    local c = pd:setdefault('c', torch.zeros(3))
    assert.is_true(torch.isinstance(c, nn.Parameter))
    assert.is_true(rawequal(c, pd.c))
    assert.are.same({ 'a', 'b', 'c' }, pd:keys())
    assert.are.same({ 1 }, pd:setdefault('a', torch.zeros(9)):size(), 'an existing entry is kept')
    local k, v = pd:popitem()
    assert.are.equal('c', k)
    assert.is_true(rawequal(v, c))
    assert.are.same({ 'a', 'b' }, pd:keys())
    H.errors_with(function() nn.ParameterDict():popitem() end, 'popitem(): dictionary is empty')
  end)
end)
