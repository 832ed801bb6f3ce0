-- torch.class: Torch7's class system. `local Cls, Parent = torch.class('Name', 'Parent')`
-- registers `Name` (so torch.save/load can find it), returns the class table and its parent.
-- Instances are Lua tables whose metatable is the class; calling the class constructs.
local M = {}

local registry = {}  -- name -> class
M.registry = registry

-- Every class moontorch defines is found by name in any process that did `require 'moontorch'`
-- (torch.load of a file saved elsewhere names them): a class registers when the module that
-- defines it loads, so a name of ours loads its module first. Names under a package prefix
-- ('nn.Linear', 'optim.SGD') load the package; the others are listed one by one.
local packages = { nn = 'moontorch.nn', optim = 'moontorch.optim' }
local homes = { ['torch.OrderedDict'] = 'moontorch.ordered_dict', ['torch.autograd.Function'] = 'moontorch.function',
  ['torch.Timer'] = 'moontorch.timer', ['torch.List'] = 'moontorch.iterlist' }
-- issue 13, data part: 'data.*' (datasets, samplers, DataLoader) and 'datasets.*' (MNIST, transforms)
packages.data = 'moontorch.utils.data'
packages.datasets = 'moontorch.datasets'
-- issue 25: quantization's classes (by prefix, below) and the amp scaler
homes['torch.QTensor'] = 'moontorch.quantization.qtensor'
homes['torch.qscheme'] = 'moontorch.quantization.qtensor'
homes['torch.amp.GradScaler'] = 'moontorch.amp.grad_scaler'
homes['torch.dtype'] = 'moontorch.dtype'
for _, n in ipairs({ 'ObserverBase', 'UniformQuantizationObserverBase', 'MinMaxObserver', 'MovingAverageMinMaxObserver',
  'PerChannelMinMaxObserver', 'MovingAveragePerChannelMinMaxObserver', 'HistogramObserver', 'PlaceholderObserver',
  'NoopObserver', 'Partial', 'QConfig', 'QuantStub', 'DeQuantStub', 'QuantWrapper', 'FakeQuantize' }) do
  homes['torch.ao.quantization.' .. n] = 'moontorch.quantization'
end
-- issue 24: 'fx.*' (GraphModule, Graph, Interpreter, ...), sparse CSR matrices, the profiler's classes
packages.fx = 'moontorch.fx'
homes['torch.SparseCsrTensor'] = 'moontorch.ops.sparse'
homes['nn.ParametrizationList'] = 'moontorch.nn.parametrize'
-- names under a prefix whose module nn loads on first use
local prefix_homes = { { 'nn.utils.prune.', 'moontorch.nn.prune' },
  { 'nn.utils.parametrizations.', 'moontorch.nn.parametrizations' },
  -- issue 25
  { 'nn.quantized.', 'moontorch.quantization' }, { 'nn.intrinsic.', 'moontorch.quantization' },
  { 'nn.qat.', 'moontorch.quantization' }, { 'torch.ao.quantization.', 'moontorch.quantization' },
  { 'torch.distributions.', 'moontorch.distributions' } }
M.prefix_homes = prefix_homes
local function home_of(name)
  for _, p in ipairs(prefix_homes) do
    if name:sub(1, #p[1]) == p[1] then return p[2] end
  end
  return homes[name] or packages[name:match('^(%w+)%.')]
end
M.home_of = home_of
homes['torch.profiler.EventList'] = 'moontorch.profiler'
homes['torch.profiler.profile'] = 'moontorch.profiler'
M.homes, M.packages = homes, packages
-- Classes made on demand: a resolver(name) returns the class of a name it knows how to build, or
-- nil. nn.utils.parametrize builds `Parametrized<Class>` (the class of a parametrized module) so.
local resolvers = {}
M.resolvers = resolvers
local function find(name)
  local c = registry[name]
  if c then return c end
  local home = M.home_of(name)
  if home and not package.loaded[home] then
    require(home)
    c = registry[name]
    if c then return c end
  end
  if name:find('Parametrized', 1, true) and not package.loaded['moontorch.nn.parametrize'] then
    require('moontorch.nn.parametrize')
  end
  for i = 1, #resolvers do
    c = resolvers[i](name)
    if c then return c end
  end
  return nil
end
M.find = find

-- metamethods copied down so that subclasses keep their parents' operators
local inherited_meta = { '__tostring', '__call', '__len', '__eq', '__lt', '__le', '__add', '__sub', '__mul',
  '__div', '__unm', '__concat', '__pairs', '__newindex' }

function M.class(name, parent, mod)
  if type(name) ~= 'string' then require('moontorch.ffi').fail('class', 'class name must be a string, got ' .. require('moontorch.ffi').typeof(name)) end
  if type(parent) == 'string' then
    local p = find(parent)
    if not p then require('moontorch.ffi').fail('class', ("unknown parent class '%s'"):format(parent)) end
    parent = p
  end
  local cls = registry[name]
  if cls then
    -- re-running a script that defines a class redefines it in place
    for k in pairs(cls) do if k ~= '__typename' then cls[k] = nil end end
  else
    cls = {}
  end
  cls.__typename = name
  cls.__parent = parent
  cls.__index = cls
  if parent then
    for _, mm in ipairs(inherited_meta) do
      if rawget(cls, mm) == nil and parent[mm] ~= nil then cls[mm] = parent[mm] end
    end
    -- a class whose instances look fields up with a function (nn.Module) passes it down
    local pindex = rawget(parent, '__index')
    if type(pindex) == 'function' then cls.__index = pindex end
    -- methods resolve through the parent: an __index chain one level per class
    setmetatable(cls, {
      __index = parent,
      __call = function(c, ...) return M.new(c, ...) end,
      __tostring = function(c) return c.__typename end,
    })
  else
    setmetatable(cls, {
      __call = function(c, ...) return M.new(c, ...) end,
      __tostring = function(c) return c.__typename end,
    })
  end
  registry[name] = cls
  if mod then
    local short = name:match('([^.]+)$')
    mod[short] = cls
  end
  return cls, parent
end

-- a subclass defining __index itself (nn.Module does) builds instances with its own __new
function M.new(cls, ...)
  local ctor = cls.__new
  if ctor then return ctor(cls, ...) end
  local obj = setmetatable({}, cls)
  local init = cls.__init
  if init then init(obj, ...) end
  return obj
end

-- is obj an instance of cls (or a subclass)? cls may be a class table or a name
function M.isinstance(obj, cls)
  if type(cls) == 'string' then cls = find(cls) end
  if cls == nil then return false end
  local mt = getmetatable(obj)
  while mt do
    if mt == cls then return true end
    mt = rawget(mt, '__parent')
  end
  return false
end

-- export(from, to, public): every class held in the table `from` (a table with a __typename: what
-- M.class made) put into `to` under the same key, leaving out keys that begin with '_' when
-- `public` (the nn family files hand their modules to nn so)
function M.export(from, to, public)
  for k, v in pairs(from) do
    if type(v) == 'table' and rawget(v, '__typename') and not (public and k:sub(1, 1) == '_') then to[k] = v end
  end
end

function M.typename(obj)
  local mt = getmetatable(obj)
  return mt and rawget(mt, '__typename') or nil
end

return M
