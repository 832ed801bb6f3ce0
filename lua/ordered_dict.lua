-- torch.OrderedDict: a dict that remembers insertion order (what state_dict returns).
--
--   local d = torch.OrderedDict()                 -- or torch.OrderedDict{{'a', 1}, {'b', 2}}
--   d.a = 1; d['b.c'] = t                         -- inserts at the end, or replaces in place
--   d.a = nil                                     -- deletes
--   d:keys(), d:values()                          -- arrays
--   for k, v in d:items() do ... end
--   d:len(), d:contains(k), d:get(k, default), d:pop(k, default), d:copy(), d:update(other), d:clear()
--
-- Entries never live in the instance's own table (its state sits under two private keys), so
-- every read and write of an entry reaches __index / __newindex. A key spelled like a method
-- (`keys`, `items`, ...) reads as the method with `d.keys`; reach such an entry with d:get(k).
local class = require 'moontorch.class'

local rawget, rawset, type, tostring, setmetatable = rawget, rawset, type, tostring, setmetatable

local KEYS, VALS = setmetatable({}, { __tostring = function() return '<keys>' end }),
  setmetatable({}, { __tostring = function() return '<values>' end })

local OrderedDict = class.class('torch.OrderedDict')
local methods = {}

local function keys_of(d) return rawget(d, KEYS) end
local function vals_of(d) return rawget(d, VALS) end

local function fail(op, msg)
  local core = require 'moontorch.ffi'
  core.fail('OrderedDict.' .. op, msg)
end

local function set(d, k, v)
  if k == nil then fail('__newindex', 'a key cannot be nil') end
  if k ~= k then fail('__newindex', 'a key cannot be nan') end
  local vals = vals_of(d)
  if v == nil then
    if vals[k] == nil then return end
    vals[k] = nil
    local keys = keys_of(d)
    for i = 1, #keys do
      if keys[i] == k then table.remove(keys, i) break end
    end
    return
  end
  if vals[k] == nil then
    local keys = keys_of(d)
    keys[#keys + 1] = k
  end
  vals[k] = v
end

OrderedDict.__index = function(d, k)
  local m = methods[k]
  if m ~= nil then return m end
  local vals = rawget(d, VALS)
  if vals then return vals[k] end
  return nil
end
OrderedDict.__newindex = set
OrderedDict.__len = function(d) return #keys_of(d) end

-- OrderedDict(), OrderedDict{{k, v}, ...}, or OrderedDict(other_ordered_dict)
OrderedDict.__new = function(cls, init)
  local d = setmetatable({}, cls)
  rawset(d, KEYS, {})
  rawset(d, VALS, {})
  if init ~= nil then methods.update(d, init) end
  return d
end

function methods.keys(d)
  local out, keys = {}, keys_of(d)
  for i = 1, #keys do out[i] = keys[i] end
  return out
end
function methods.values(d)
  local out, keys, vals = {}, keys_of(d), vals_of(d)
  for i = 1, #keys do out[i] = vals[keys[i]] end
  return out
end
-- for k, v in d:items(): a snapshot of the keys, so the loop may change d
function methods.items(d)
  local keys, vals, i = methods.keys(d), vals_of(d), 0
  return function()
    while true do
      i = i + 1
      local k = keys[i]
      if k == nil then return nil end
      local v = vals[k]
      if v ~= nil then return k, v end
    end
  end
end
function methods.len(d) return #keys_of(d) end
function methods.contains(d, k) return vals_of(d)[k] ~= nil end
function methods.get(d, k, default)
  local v = vals_of(d)[k]
  if v == nil then return default end
  return v
end
function methods.pop(d, k, default)
  local v = vals_of(d)[k]
  if v == nil then
    if default ~= nil then return default end
    fail('pop', ("key '%s' is not in the dict"):format(tostring(k)))
  end
  set(d, k, nil)
  return v
end
function methods.copy(d)
  local c = OrderedDict()
  for k, v in methods.items(d) do set(c, k, v) end
  return c
end
function methods.clear(d)
  rawset(d, KEYS, {})
  rawset(d, VALS, {})
end
-- update(other): an OrderedDict, an array of {k, v} pairs, or a plain table (keys sorted)
function methods.update(d, other)
  if type(other) ~= 'table' then fail('update', 'expected a table, got ' .. type(other)) end
  if class.typename(other) == 'torch.OrderedDict' then
    for k, v in methods.items(other) do set(d, k, v) end
  elseif other[1] ~= nil then
    for i = 1, #other do
      local kv = other[i]
      if type(kv) ~= 'table' or kv[1] == nil then fail('update', ('element %d is not a {key, value} pair'):format(i)) end
      set(d, kv[1], kv[2])
    end
  else
    local keys = {}
    for k in pairs(other) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    for _, k in ipairs(keys) do set(d, k, other[k]) end
  end
  return d
end
-- d:move_to_end(k, last=true)
function methods.move_to_end(d, k, last)
  local v = vals_of(d)[k]
  if v == nil then fail('move_to_end', ("key '%s' is not in the dict"):format(tostring(k))) end
  set(d, k, nil)
  if last == false then
    table.insert(keys_of(d), 1, k)
    vals_of(d)[k] = v
  else
    set(d, k, v)
  end
end

------------------------------------------------------------------------------ printing
-- Python's repr of a value inside a container
local function pyrepr(v, seen)
  local tv = type(v)
  if tv == 'string' then
    local q = v:find("'", 1, true) and not v:find('"', 1, true) and '"' or "'"
    local s = v:gsub('\\', '\\\\'):gsub('\n', '\\n'):gsub('\t', '\\t'):gsub('\r', '\\r')
    if q == "'" then s = s:gsub("'", "\\'") end
    return q .. s .. q
  elseif tv == 'boolean' then
    return v and 'True' or 'False'
  elseif tv == 'nil' then
    return 'None'
  elseif tv == 'number' then
    if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return ('%d'):format(v) end
    if v == math.huge then return 'inf' elseif v == -math.huge then return '-inf' elseif v ~= v then return 'nan' end
    local s = ('%.17g'):format(v)
    for p = 1, 17 do
      local c = ('%.' .. p .. 'g'):format(v)
      if tonumber(c) == v then s = c break end
    end
    return s
  elseif tv == 'table' and getmetatable(v) == nil then
    if seen[v] then return '[...]' end
    seen[v] = true
    local parts = {}
    if v[1] ~= nil or next(v) == nil then
      for i = 1, #v do parts[i] = pyrepr(v[i], seen) end
      seen[v] = nil
      return '[' .. table.concat(parts, ', ') .. ']'
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    for i, k in ipairs(keys) do parts[i] = pyrepr(k, seen) .. ': ' .. pyrepr(v[k], seen) end
    seen[v] = nil
    return '{' .. table.concat(parts, ', ') .. '}'
  end
  return tostring(v)
end

OrderedDict.__tostring = function(d)
  local keys, vals = keys_of(d), vals_of(d)
  if #keys == 0 then return 'OrderedDict()' end
  local parts = {}
  local seen = {}
  for i = 1, #keys do
    local k = keys[i]
    parts[i] = '(' .. pyrepr(k, seen) .. ', ' .. pyrepr(vals[k], seen) .. ')'
  end
  return 'OrderedDict([' .. table.concat(parts, ', ') .. '])'
end

------------------------------------------------------------------------------ serialization
-- torch.save keeps the entries in order as an array of {key, value}
function OrderedDict.__serialize(d)
  local out, keys, vals = {}, keys_of(d), vals_of(d)
  for i = 1, #keys do out[i] = { keys[i], vals[keys[i]] } end
  return out
end
function OrderedDict.__deserialize(cls, pairs_)
  local d = cls()
  if type(pairs_) ~= 'table' then fail('load', 'a saved OrderedDict is not an array of pairs') end
  for i = 1, #pairs_ do
    local kv = pairs_[i]
    if type(kv) ~= 'table' or kv[1] == nil then fail('load', 'a saved OrderedDict entry is not a {key, value} pair') end
    set(d, kv[1], kv[2])
  end
  return d
end

OrderedDict.methods = methods
return OrderedDict
