-- Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict.
--
-- Sequential, ModuleList and ParameterList hold their items at raw Lua positions 1..n (so that
-- seq[1], #list and ipairs(list) work: LuaJIT ignores __len and __ipairs on tables) and register
-- them under PyTorch's 0-based names ('0', '1', ...), so state_dict keys match PyTorch's.
-- `_items` holds the names of the items in order; the registry (`_modules` or `_parameters`,
-- and `_order`) holds them by name. Everything that changes a list by name or by method
-- (append, insert, remove, add_module, `seq.fc = m`, `seq[-1] = m`, `seq[#seq + 1] = m`) updates
-- both at once. Only a write to an existing position (`seq[2] = m`, `seq[2] = nil`) cannot be
-- seen when it happens, since Lua calls no metamethod for it: the container takes it in at its
-- next use (any method or field, a call, a walk, printing), where a value it cannot hold is
-- refused (and the old item put back) and `seq[i] = nil` deletes item i (PyTorch's del seq[i]).
-- Negative positions count from the end (seq[-1]).
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
local is_int = Mod.is_int
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
  local short = name:match('[^.]+$')

  -- the value an item may hold (a module; a tensor, made a Parameter), or nil and the reason
  local function coerce(v)
    if kind == 'm' then
      if is_module(v) then return v end
      return nil, ('%s is not a Module subclass'):format(typename_of(v))
    end
    if is_tensor(v) then
      if not is_parameter(v) then v = Parameter(v) end -- a plain tensor becomes a parameter (PyTorch's too)
      return v
    end
    return nil, ("cannot assign '%s' object to parameter (nn.Parameter or tensor required)"):format(typename_of(v))
  end
  local function check(op, v)
    local c, why = coerce(v)
    if c == nil then fail(op, why) end
    return c
  end

  local function item_pos(self, key)
    local items = rawget(self, '_items')
    for i = 1, #items do if items[i] == key then return i end end
    return nil
  end

  -- make the items `values` (an array), named `names` (an array), or '0', '1', ... when names is
  -- nil (skipping names that something else in the registry holds). Entries that are not items
  -- (a ParameterList's register_parameter) keep their places in the registry's order.
  local function set_items(self, values, names)
    local order, vals = rawget(self, '_order')[kind], rawget(self, store)
    local old = rawget(self, '_items')
    local was_item = {}
    for _, k in ipairs(old) do was_item[k] = true; vals[k] = nil end
    if names == nil then
      names = {}
      local k = 0
      for i = 1, #values do
        local key = tostring(k)
        while vals[key] ~= nil do k = k + 1; key = tostring(k) end
        names[i] = key
        k = k + 1
      end
    end
    local is_new = {}
    for _, k in ipairs(names) do is_new[k] = true end
    local new_order, j = {}, 1
    for _, k in ipairs(order) do
      if was_item[k] or is_new[k] then
        if j <= #names then new_order[#new_order + 1] = names[j]; j = j + 1 end
      else
        new_order[#new_order + 1] = k
      end
    end
    for i = j, #names do new_order[#new_order + 1] = names[i] end
    for i = 1, math.max(#order, #new_order) do order[i] = new_order[i] end
    local items = {}
    for i = 1, #values do
      items[i] = names[i]
      vals[names[i]] = values[i]
      rawset(self, i, values[i])
    end
    for i = #values + 1, math.max(#old, raw_len(self)) do rawset(self, i, nil) end
    rawset(self, '_items', items)
  end

  local function values_of(self)
    local items, vals, out = rawget(self, '_items'), rawget(self, store), {}
    for i = 1, #items do out[i] = vals[items[i]] end
    return out
  end

  -- take in writes to existing positions made since the last use (see the top of this file)
  function cls._sync(self)
    local items = rawget(self, '_items')
    if not items then
      if rawget(self, '_parameters') == nil then return end -- still in __init
      items = {} -- (a subclass whose __init called Module.__init only)
      rawset(self, '_items', items)
    end
    local vals = rawget(self, store)
    local n = #items
    local clean = rawget(self, n + 1) == nil
    if clean then
      for i = 1, n do
        if rawget(self, i) ~= vals[items[i]] then clean = false break end
      end
    end
    if clean then return end
    local values, names, holes, bad = {}, {}, false, nil
    for i = 1, n do
      local v = rawget(self, i)
      if v == nil then
        holes = true
      else
        local old = vals[items[i]]
        if v ~= old then
          local c, why = coerce(v)
          if c == nil then
            bad = bad or { i = i, key = items[i], v = v, why = why }
            c = old -- refused: the item it replaced goes back
          end
          v = c
        end
        values[#values + 1] = v
        names[#names + 1] = items[i]
      end
    end
    -- `seq[i] = nil` is PyTorch's `del seq[i]`, which renumbers the names
    set_items(self, values, not holes and names or nil)
    if bad then
      local what = kind == 'm' and ("cannot assign '%s' as child module '%s' (nn.Module or nil expected)")
        or ("cannot assign '%s' as parameter '%s' (nn.Parameter, tensor or nil expected)")
      fail(name, (what .. '; it was set at position %d, which keeps its item'):format(typename_of(bad.v), bad.key,
        bad.i))
    end
  end
  local sync = cls._sync

  -- a position given by the user (an integer, negative from the end) of one of n items
  local function position(op, k, n)
    if not is_int(k) then
      fail(op, ('%s indices must be integers, not %s'):format(short, type(k) == 'number' and tostring(k) or type(k)))
    end
    local i = k < 0 and n + k + 1 or k
    if i < 1 or i > n then
      fail(op, ('index %d is out of range (the %s has %d items)'):format(k, short, n))
    end
    return i
  end

  -- items by position; fields (after taking in direct writes) as on any module
  function cls.__index(self, k)
    if type(k) == 'number' then
      if k < 0 then
        sync(self)
        return rawget(self, #rawget(self, '_items') + k + 1)
      end
      return nil
    end
    sync(self)
    return module_index(self, k)
  end

  -- the item with this name replaced (v) or deleted (nil); false when key names no item
  local function set_named_item(self, key, v)
    local i = item_pos(self, key)
    if not i then return false end
    if v == nil then
      local values, names = values_of(self), {}
      for j, k in ipairs(rawget(self, '_items')) do names[j] = k end
      table.remove(values, i)
      table.remove(names, i)
      set_items(self, values, names)
    else
      v = check(name, v)
      rawget(self, store)[key] = v
      rawset(self, i, v)
    end
    return true
  end

  function cls.__newindex(self, k, v)
    if rawget(self, '_parameters') == nil then return module_newindex(self, k, v) end
    sync(self)
    if type(k) == 'number' then
      local n = #rawget(self, '_items')
      if k == n + 1 and v ~= nil then return self:append(v) end
      local i = position(name, k, n)
      if v == nil then
        self:remove(i)
      else
        set_named_item(self, rawget(self, '_items')[i], v)
      end
      return
    end
    if set_named_item(self, k, v) then return end
    if kind == 'm' and is_module(v) then return self:add_module(k, v) end
    return module_newindex(self, k, v)
  end

  if kind == 'm' then
    -- add_module(name, m): m becomes an item under that name (in place if the name is an item's)
    function cls:add_module(key, m)
      sync(self)
      if m ~= nil and item_pos(self, key) then
        if not is_module(m) then fail('add_module', ('%s is not a Module subclass'):format(typename_of(m))) end
        set_named_item(self, key, m)
        return
      end
      Module.add_module(self, key, m)
      if m ~= nil then
        local values, names = values_of(self), {}
        for j, k in ipairs(rawget(self, '_items')) do names[j] = k end
        values[#values + 1] = m
        names[#names + 1] = key
        set_items(self, values, names)
      end
    end
    cls.register_module = cls.add_module
  else
    -- register_parameter(name, p) on a ParameterList adds a parameter that is not an item (as
    -- PyTorch's does), unless the name is an item's
    function cls:register_parameter(key, p)
      sync(self)
      if p ~= nil and item_pos(self, key) then
        set_named_item(self, key, p)
        return
      end
      return Module.register_parameter(self, key, p)
    end
  end

  function cls:append(v)
    sync(self)
    v = check(name .. '.append', v)
    local values, names = values_of(self), {}
    for j, k in ipairs(rawget(self, '_items')) do names[j] = k end
    local vals = rawget(self, store)
    local k = #values
    local key = tostring(k)
    while vals[key] ~= nil do k = k + 1; key = tostring(k) end
    values[#values + 1] = v
    names[#names + 1] = key
    set_items(self, values, names)
    return self
  end

  function cls:extend(items)
    if type(items) ~= 'table' or is_tensor(items) then
      fail(name .. '.extend', ('should be called with an array, but got %s'):format(typename_of(items)))
    end
    local n = rawget(items, 1) ~= nil and raw_len(items) or (table.maxn(items))
    for i = 1, n do self:append(items[i]) end
    return self
  end

  -- insert(index, v): v at position index (1..n+1; negative counts from the end: -1 puts it
  -- before the last item); the names are renumbered
  function cls:insert(index, v)
    sync(self)
    local values = values_of(self)
    local n = #values
    if not is_int(index) then
      fail(name .. '.insert', ('index must be an integer, not %s'):format(type(index) == 'number' and tostring(index)
        or type(index)))
    end
    local i = index < 0 and n + index + 1 or index
    if i < 1 or i > n + 1 then fail(name .. '.insert', ('Index out of range: %d'):format(index)) end
    v = check(name .. '.insert', v)
    table.insert(values, i, v)
    set_items(self, values, nil)
    return self
  end

  -- remove(index) / pop(index): take the item at index out (negative counts from the end; the
  -- last one by default) and return it; the names are renumbered (PyTorch 1.13's del)
  function cls:remove(index)
    sync(self)
    local values = values_of(self)
    if index == nil then index = #values end
    local i = position(name .. '.remove', index, #values)
    local v = table.remove(values, i)
    set_items(self, values, nil)
    return v
  end
  cls.pop = cls.remove

  function cls:len()
    sync(self)
    return #rawget(self, '_items')
  end

  -- slice(i, j): a new container of the same class with items i..j (names kept for Sequential)
  function cls:slice(i, j)
    sync(self)
    local n = #rawget(self, '_items')
    i = i or 1
    j = j or n
    if not is_int(i) or not is_int(j) then fail(name .. '.slice', 'slice bounds must be integers') end
    if i < 0 then i = n + i + 1 end
    if j < 0 then j = n + j + 1 end
    if i < 1 then i = 1 end
    if j > n then j = n end
    local items = rawget(self, '_items')
    local c = getmetatable(self)
    local new = c()
    for k = i, j do
      if cls._keep_names then new:add_module(items[k], rawget(self, k)) else new:append(rawget(self, k)) end
    end
    return new
  end

  function cls:__serialize()
    local s = Module.__serialize(self)
    s._items = rawget(self, '_items')
    return s
  end

  function cls.__deserialize(c, s)
    local m = Module.__deserialize(c, s)
    local order, vals = rawget(m, '_order')[kind], rawget(m, store)
    local items = s._items
    if items == nil then -- written before _items was saved: every registered name is an item
      items = {}
      for _, k in ipairs(order) do if vals[k] then items[#items + 1] = k end end
    end
    if type(items) ~= 'table' then fail('load', ('a saved %s has no _items table'):format(name)) end
    for i = 1, #items do
      local v = vals[items[i]]
      if not v or coerce(v) ~= v then fail('load', ('a saved %s has no item named %s'):format(name, tostring(items[i]))) end
      rawset(m, i, v)
    end
    rawset(m, '_items', items)
    return m
  end

  return cls
end

local function init_list(self)
  Module.__init(self)
  rawset(self, '_items', {})
end

------------------------------------------------------------------------------ Sequential
local Sequential = list_class('nn.Sequential', 'm')
Sequential._keep_names = true -- slicing keeps the names (PyTorch 1.13's)
M.Sequential = Sequential

-- nn.Sequential(a, b, c) or nn.Sequential(ordered_dict): an OrderedDict names the modules
function Sequential:__init(...)
  init_list(self)
  local n = select('#', ...)
  local first = ...
  if n == 1 and type(first) == 'table' and class.typename(first) == 'torch.OrderedDict' then
    for key, m in first:items() do self:add_module(key, m) end
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
  -- (reaching forward went through __index, which took in direct writes to positions)
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

-- seq1 + seq2: a new Sequential of the items of both
function Sequential.__add(a, b)
  for _, x in ipairs({ b, a }) do
    if not torch.isinstance(x, Sequential) then
      fail('nn.Sequential', ('add operator supports only objects of Sequential class, but %s is given.')
        :format(typename_of(x)))
    end
  end
  Sequential._sync(a)
  Sequential._sync(b)
  local ret = Sequential()
  for _, l in ipairs(a) do ret:append(l) end
  for _, l in ipairs(b) do ret:append(l) end
  return ret
end

-- seq * k, k * seq: a new Sequential of the items k times over (the same modules, shared)
function Sequential.__mul(a, b)
  local seq, k = a, b
  if not torch.isinstance(a, Sequential) then seq, k = b, a end
  if not is_int(k) then
    fail('nn.Sequential', ('unsupported operand type(s) for *: nn.Sequential and %s (an integer is needed)')
      :format(type(k) == 'number' and tostring(k) or typename_of(k)))
  end
  if k <= 0 then fail('nn.Sequential', ('Non-positive multiplication factor %d for nn.Sequential'):format(k)) end
  Sequential._sync(seq)
  local ret = Sequential()
  for _ = 1, k do
    for _, l in ipairs(seq) do ret:append(l) end
  end
  return ret
end

------------------------------------------------------------------------------ ModuleList
local ModuleList = list_class('nn.ModuleList', 'm')
M.ModuleList = ModuleList

function ModuleList:__init(modules)
  init_list(self)
  if modules ~= nil then self:extend(modules) end
end
function ModuleList:forward()
  fail('nn.ModuleList', 'Module [ModuleList] is missing the required "forward" function')
end

-- list + other (a ModuleList, Sequential or array of modules): a new ModuleList of both
function ModuleList.__add(a, b)
  if not torch.isinstance(a, ModuleList) then
    fail('nn.ModuleList', ('cannot add %s and nn.ModuleList'):format(typename_of(a)))
  end
  local ret = ModuleList()
  ret:extend(a)
  return ret:extend(b)
end

------------------------------------------------------------------------------ ParameterList
local ParameterList = list_class('nn.ParameterList', 'p')
M.ParameterList = ParameterList

function ParameterList:__init(values)
  init_list(self)
  if values ~= nil then self:extend(values) end
end
ParameterList.__call = function() fail('nn.ParameterList', 'ParameterList should not be called.') end

-- PyTorch 1.13 names the dtype in a ParameterList and the tensor type in a ParameterDict
local function param_str(p, by_type)
  local size = p:dim() == 0 and '' or table.concat(p:size(), 'x')
  return ('%s containing: [%s of size %s]'):format(is_parameter(p) and 'Parameter' or 'Tensor',
    by_type and p:type() or tostring(p.dtype), size)
end

function ParameterList:extra_repr()
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

  local function check_key(key)
    if type(key) == 'string' then return end
    if kind == 'm' then fail(name, ('module name should be a string. Got %s'):format(typename_of(key))) end
    fail(name, ("Index given to ParameterDict cannot be used as a key as it is not a string (type is '%s')")
      :format(typename_of(key)))
  end

  local function set(self, key, v)
    check_key(key)
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

  -- d[key] = value inserts (last) or replaces; d[key] = nil deletes. Keys are strings. Lua
  -- cannot tell d.k = v from d['k'] = v: on a ModuleDict both are the dict's, so a value other
  -- than a module is refused, unless k is already an attribute (training, a method, ...); on a
  -- ParameterDict a value other than a tensor is a plain attribute.
  function cls.__newindex(self, k, v)
    if rawget(self, '_parameters') == nil then return module_newindex(self, k, v) end
    check_key(k)
    local vals = rawget(self, store)
    if vals[k] ~= nil or (kind == 'm' and is_module(v)) or (kind == 'p' and is_tensor(v)) then
      return set(self, k, v)
    end
    if kind == 'm' and v ~= nil and rawget(self, '_attrs')[k] == nil and getmetatable(self)[k] == nil
      and rawget(self, '_parameters')[k] == nil and rawget(self, '_buffers')[k] == nil then
      fail(name, ('%s is not a Module subclass'):format(typename_of(v)))
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
  fail('nn.ModuleDict', 'Module [ModuleDict] is missing the required "forward" function')
end

local ParameterDict = dict_class('nn.ParameterDict', 'p')
M.ParameterDict = ParameterDict
ParameterDict.__call = function() fail('nn.ParameterDict', 'ParameterDict should not be called.') end

-- get(key, default): the parameter under key, or default
function ParameterDict:get(key, default)
  local v = rawget(self, '_parameters')[key]
  if v == nil then return default end
  return v
end
-- setdefault(key, default): the parameter under key; when there is none, default (a tensor,
-- made a Parameter) is put there first. A nil default puts nothing and gives nil.
function ParameterDict:setdefault(key, default)
  if rawget(self, '_parameters')[key] == nil and default ~= nil then self[key] = default end
  return self:get(key)
end
-- popitem(): takes out the last inserted entry; returns its key and parameter
function ParameterDict:popitem()
  local keys = self:keys()
  if #keys == 0 then fail('nn.ParameterDict.popitem', 'popitem(): dictionary is empty') end
  local k = keys[#keys]
  return k, self:pop(k)
end
function ParameterDict:extra_repr()
  local lines = {}
  for k, p in self:items() do lines[#lines + 1] = '  (' .. k .. '): ' .. param_str(p, true) end
  return table.concat(lines, '\n')
end

return M
