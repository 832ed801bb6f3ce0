-- Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict.
--
-- Sequential, ModuleList and ParameterList hold their items at raw Lua positions 1..n (so that
-- seq[1], #list and ipairs(list) work: LuaJIT ignores __len and __ipairs on tables) and register
-- them under PyTorch's 0-based names ('0', '1', ...), so state_dict keys match PyTorch's. The raw
-- array is the truth: `seq[2] = m` replaces an item, and the registry follows (Module's walks
-- call _sync first). Negative positions count from the end (seq[-1]).
-- ModuleDict and ParameterDict take one table: a plain table (its keys in sorted order) or an
-- array of {key, value} pairs (in that order); later insertions go last.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local Mod = require 'moontorch.nn.Module'

local fail = core.fail
local is_tensor = T.is_tensor
local Module, Parameter, is_module, is_parameter = Mod.Module, Mod.Parameter, Mod.is_module, Mod.is_parameter
local rawget, rawset, type, ipairs, pairs, tostring, getmetatable = rawget, rawset, type, ipairs, pairs, tostring,
  getmetatable
local module_index, module_newindex = Module.__index, Module.__newindex

local M = {}

local typename_of = Mod.typename_of

local function raw_len(self)
  local n = 0
  while rawget(self, n + 1) ~= nil do n = n + 1 end
  return n
end

------------------------------------------------------------------------------ list-like base
-- kind 'm' (modules, in _modules) or 'p' (parameters, in _parameters)
local function list_class(name, kind)
  local cls = class.class(name, Module)
  local store = kind == 'm' and '_modules' or '_parameters'
  local what = kind == 'm' and 'module' or 'parameter'

  local function check(op, v)
    if kind == 'm' then
      if not is_module(v) then fail(op, ('%s is not a Module subclass'):format(typename_of(v))) end
      return v
    end
    if not is_tensor(v) then
      fail(op, ("cannot assign '%s' object to parameter (nn.Parameter or tensor required)"):format(typename_of(v)))
    end
    if not is_parameter(v) then v = Parameter(v) end -- a plain tensor becomes a parameter (PyTorch's too)
    return v
  end

  -- bring _order/store in line with the raw slots
  function cls._sync(self)
    local order, vals = rawget(self, '_order')[kind], rawget(self, store)
    local n = raw_len(self)
    local changed = n ~= #order
    if not changed then
      for i = 1, n do
        if vals[order[i]] ~= rawget(self, i) then changed = true break end
      end
    end
    if not changed then return end
    local taken = {}
    for i = 1, math.min(n, #order) do taken[order[i]] = true end
    for i = n + 1, #order do vals[order[i]] = nil; order[i] = nil end
    for i = 1, n do
      local v = check(name, rawget(self, i))
      if v ~= rawget(self, i) then rawset(self, i, v) end
      local key = order[i]
      if key == nil then
        key = tostring(i - 1)
        local k = i - 1
        while taken[key] do k = k + 1; key = tostring(k) end
        taken[key] = true
        order[i] = key
      end
      vals[key] = v
    end
  end

  -- renumber the names '0'..'n-1' (ModuleList and ParameterList after a removal)
  local function renumber(self)
    local order, vals = rawget(self, '_order')[kind], rawget(self, store)
    for i = 1, #order do vals[order[i]] = nil; order[i] = nil end
    for i = 1, raw_len(self) do
      order[i] = tostring(i - 1)
      vals[order[i]] = rawget(self, i)
    end
  end
  cls._renumber = renumber

  function cls.__index(self, k)
    if type(k) == 'number' then
      if k < 0 then return rawget(self, raw_len(self) + k + 1) end
      return nil
    end
    return module_index(self, k)
  end

  function cls.__newindex(self, k, v)
    if type(k) == 'number' then
      local n = raw_len(self)
      if k < 0 then k = n + k + 1 end
      if k == n + 1 and v ~= nil then return self:append(v) end
      if k >= 1 and k <= n then -- a negative position of an existing item
        if v == nil then return self:remove(k) end
        rawset(self, k, check(name .. '[]', v))
        cls._sync(self)
        return
      end
      fail(name, ('index %s is out of range (the %s has %d items)'):format(tostring(k), name:match('[^.]+$'), n))
    end
    return module_newindex(self, k, v)
  end

  function cls:append(v)
    cls._sync(self)
    local n = raw_len(self)
    v = check(name .. '.append', v)
    rawset(self, n + 1, v)
    local order, vals = rawget(self, '_order')[kind], rawget(self, store)
    local key, k = tostring(n), n
    while vals[key] ~= nil do k = k + 1; key = tostring(k) end
    order[n + 1] = key
    vals[key] = v
    return self
  end

  function cls:extend(items)
    if type(items) ~= 'table' then
      fail(name .. '.extend', ('should be called with an array, but got %s'):format(typename_of(items)))
    end
    local n = rawget(items, 1) ~= nil and raw_len(items) or (table.maxn(items))
    for i = 1, n do self:append(items[i]) end
    return self
  end

  -- insert(index, v): before position index (1-based; negative counts from the end)
  function cls:insert(index, v)
    cls._sync(self)
    local n = raw_len(self)
    if type(index) ~= 'number' then fail(name .. '.insert', 'index must be a number') end
    if index < 0 then index = n + index + 1 end
    if index < 1 then index = 1 end
    if index > n + 1 then index = n + 1 end
    v = check(name .. '.insert', v)
    for i = n, index, -1 do rawset(self, i + 1, rawget(self, i)) end
    rawset(self, index, v)
    renumber(self)
    return self
  end

  -- remove(index): take an item out (negative counts from the end); returns it
  function cls:remove(index)
    cls._sync(self)
    local n = raw_len(self)
    if index == nil then index = n end
    if index < 0 then index = n + index + 1 end
    if index < 1 or index > n then
      fail(name .. '.remove', ('index %s is out of range (%d items)'):format(tostring(index), n))
    end
    local v = rawget(self, index)
    for i = index, n - 1 do rawset(self, i, rawget(self, i + 1)) end
    rawset(self, n, nil)
    if cls._keep_names then
      local order, vals = rawget(self, '_order')[kind], rawget(self, store)
      vals[order[index]] = nil
      table.remove(order, index)
    else
      renumber(self)
    end
    return v
  end
  cls.pop = cls.remove

  function cls:len() return raw_len(self) end

  -- slice(i, j): a new container of the same class with items i..j (names kept for Sequential)
  function cls:slice(i, j)
    cls._sync(self)
    local n = raw_len(self)
    i = i or 1
    j = j or n
    if i < 0 then i = n + i + 1 end
    if j < 0 then j = n + j + 1 end
    if i < 1 then i = 1 end
    if j > n then j = n end
    local order = rawget(self, '_order')[kind]
    local c = getmetatable(self)
    local new = c()
    for k = i, j do
      if c._keep_names then
        new:add_module(order[k], rawget(self, k))
        rawset(new, raw_len(new) + 1, rawget(self, k))
      else
        new:append(rawget(self, k))
      end
    end
    return new
  end

  function cls.__deserialize(c, s)
    local m = Module.__deserialize(c, s)
    local order, vals = rawget(m, '_order')[kind], rawget(m, store)
    for i = 1, #order do rawset(m, i, vals[order[i]]) end
    return m
  end

  return cls
end

------------------------------------------------------------------------------ Sequential
local Sequential = list_class('nn.Sequential', 'm')
Sequential._keep_names = true -- names survive removal and slicing (PyTorch 1.13's)
M.Sequential = Sequential

-- nn.Sequential(a, b, c) or nn.Sequential(ordered_dict): an OrderedDict names the modules
function Sequential:__init(...)
  Module.__init(self)
  local n = select('#', ...)
  local first = ...
  if n == 1 and type(first) == 'table' and class.typename(first) == 'torch.OrderedDict' then
    for key, m in first:items() do
      self:add_module(key, m)
      rawset(self, raw_len(self) + 1, m)
    end
    return
  end
  for i = 1, n do
    local m = select(i, ...)
    if not is_module(m) then
      fail('nn.Sequential', ('argument %d is not a Module (got %s)'):format(i, typename_of(m)))
    end
    self:append(m)
  end
end

function Sequential:forward(input)
  Sequential._sync(self)
  local i = 1
  local m = rawget(self, 1)
  while m ~= nil do
    input = m(input)
    i = i + 1
    m = rawget(self, i)
  end
  return input
end
Mod.declare_forward(Sequential, { 'input' })

------------------------------------------------------------------------------ ModuleList
local ModuleList = list_class('nn.ModuleList', 'm')
M.ModuleList = ModuleList

function ModuleList:__init(modules)
  Module.__init(self)
  if modules ~= nil then self:extend(modules) end
end
function ModuleList:forward()
  fail('nn.ModuleList', 'a ModuleList has no forward: iterate over it in your own forward')
end

------------------------------------------------------------------------------ ParameterList
local ParameterList = list_class('nn.ParameterList', 'p')
M.ParameterList = ParameterList

function ParameterList:__init(values)
  Module.__init(self)
  if values ~= nil then self:extend(values) end
end

-- PyTorch 1.13 names the dtype in a ParameterList and the tensor type in a ParameterDict
local function param_str(p, by_type)
  local size = p:dim() == 0 and '' or table.concat(p:size(), 'x')
  return ('%s containing: [%s of size %s]'):format(is_parameter(p) and 'Parameter' or 'Tensor',
    by_type and p:type() or tostring(p.dtype), size)
end

function ParameterList:extra_repr()
  ParameterList._sync(self)
  local lines = {}
  for i = 1, raw_len(self) do
    lines[i] = '  (' .. (i - 1) .. '): ' .. param_str(rawget(self, i))
  end
  return table.concat(lines, '\n')
end

------------------------------------------------------------------------------ dict-like base
-- pairs from the constructor's table: an array of {key, value}, or a plain table (keys sorted)
local function dict_pairs(op, t)
  if t == nil then return {} end
  if type(t) ~= 'table' then fail(op, ('expected a table, got %s'):format(typename_of(t))) end
  if class.typename(t) == 'torch.OrderedDict' then
    local out = {}
    for k, v in t:items() do out[#out + 1] = { k, v } end
    return out
  end
  if is_module(t) then
    local out = {}
    for k, v in t:items() do out[#out + 1] = { k, v } end
    return out
  end
  if t[1] ~= nil then
    local out = {}
    for i, kv in ipairs(t) do
      if type(kv) ~= 'table' or kv[1] == nil then
        fail(op, ('element #%d should be a {key, value} pair'):format(i))
      end
      out[i] = { kv[1], kv[2] }
    end
    return out
  end
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local out = {}
  for i, k in ipairs(keys) do out[i] = { k, t[k] } end
  return out
end

local function dict_class(name, kind)
  local cls = class.class(name, Module)
  local store = kind == 'm' and '_modules' or '_parameters'

  local function set(self, key, v)
    if type(key) ~= 'string' then
      fail(name, ('keys must be strings, got %s'):format(typename_of(key)))
    end
    if v == nil then
      if rawget(self, store)[key] ~= nil then module_newindex(self, key, nil) end
      return
    end
    if kind == 'm' then
      if rawget(self, store)[key] ~= nil then
        if not is_module(v) then fail(name, ('%s is not a Module subclass'):format(typename_of(v))) end
        rawget(self, store)[key] = v -- replaced in place: keeps its position
      else
        self:add_module(key, v)
      end
    else
      if not is_tensor(v) then
        fail(name, ("cannot assign '%s' object to parameter '%s' (nn.Parameter or tensor required)")
          :format(typename_of(v), key))
      end
      if not is_parameter(v) then v = Parameter(v) end
      if rawget(self, store)[key] ~= nil then
        rawget(self, store)[key] = v -- replaced in place: keeps its position
      else
        self:register_parameter(key, v)
      end
    end
  end

  function cls:__init(t)
    Module.__init(self)
    for _, kv in ipairs(dict_pairs(name, t)) do set(self, kv[1], kv[2]) end
  end

  -- d[key] = value inserts (last) or replaces; d[key] = nil deletes
  -- (other values are plain attributes, as on any module)
  function cls.__newindex(self, k, v)
    if rawget(self, '_parameters') == nil or type(k) ~= 'string' then return module_newindex(self, k, v) end
    local vals = rawget(self, store)
    if vals[k] ~= nil or (kind == 'm' and is_module(v)) or (kind == 'p' and is_tensor(v)) then
      return set(self, k, v)
    end
    return module_newindex(self, k, v)
  end

  function cls:keys()
    local out = {}
    for i, k in ipairs(rawget(self, '_order')[kind]) do out[i] = k end
    return out
  end
  function cls:values()
    local out, vals = {}, rawget(self, store)
    for i, k in ipairs(rawget(self, '_order')[kind]) do out[i] = vals[k] end
    return out
  end
  function cls:items()
    local keys, vals, i = self:keys(), rawget(self, store), 0
    return function()
      i = i + 1
      local k = keys[i]
      if k ~= nil then return k, vals[k] end
    end
  end
  function cls:len() return #rawget(self, '_order')[kind] end
  function cls:contains(key) return rawget(self, store)[key] ~= nil end
  function cls:pop(key)
    local v = rawget(self, store)[key]
    if v == nil then fail(name .. '.pop', ("key '%s' is not in the %s"):format(tostring(key), name:match('[^.]+$'))) end
    set(self, key, nil)
    return v
  end
  function cls:clear()
    for _, k in ipairs(self:keys()) do set(self, k, nil) end
  end
  function cls:update(t)
    for _, kv in ipairs(dict_pairs(name .. '.update', t)) do set(self, kv[1], kv[2]) end
    return self
  end
  return cls
end

local ModuleDict = dict_class('nn.ModuleDict', 'm')
M.ModuleDict = ModuleDict
function ModuleDict:forward()
  fail('nn.ModuleDict', 'a ModuleDict has no forward: index it in your own forward')
end

local ParameterDict = dict_class('nn.ParameterDict', 'p')
M.ParameterDict = ParameterDict
function ParameterDict:extra_repr()
  local lines = {}
  for k, p in self:items() do lines[#lines + 1] = '  (' .. k .. '): ' .. param_str(p, true) end
  return table.concat(lines, '\n')
end

return M
