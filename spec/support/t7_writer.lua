-- A small writer of Torch7's serialisation, for specs and fuzz seeds: the layout of torch7's
-- File.lua (File:writeObject) and of its C writers (Tensor's and Storage's write, DiskFile's binary
-- and ASCII encodings), written from their description (core/formats/t7.c's top comment), not from
-- their code. Torch7 itself is not installed here: the specs build files with this and compute
-- the outputs Torch7 would give by hand.
--
--   local W = dofile('spec/support/t7_writer.lua')
--   local bytes = W.serialize(value, {ascii = false, long_size = 8})
-- value: nil, numbers, strings, booleans, Lua tables (a table met twice is written once, then
-- referred to by its index, as File.lua does), and
--   W.object(class_name, fields[, version])        a torch object (nn modules: a table of fields)
--   W.tensor(type, sizes, values[, {strides=, offset=, storage=}])  'Float', 'Double', 'Long', ...
--   W.storage(type, values)
--   W.func(bytecode, upvalues[, tag])               a function (tag 8, or 7 / 6: older forms)
local ffi = require 'ffi'

local W = {}
local OBJECT, TENSOR, STORAGE, FUNC = {}, {}, {}, {}

function W.object(class, fields, version)
  return setmetatable({ class = class, fields = fields, version = version or 1 }, OBJECT)
end
function W.storage(ty, values) return setmetatable({ ty = ty, values = values }, STORAGE) end
function W.tensor(ty, sizes, values, opts)
  opts = opts or {}
  local strides = opts.strides
  if not strides then
    strides = {}
    local s = 1
    for i = #sizes, 1, -1 do strides[i] = s; s = s * sizes[i] end
  end
  return setmetatable({ ty = ty, sizes = sizes, strides = strides, offset = opts.offset or 1,
    storage = opts.storage or (values and W.storage(ty, values)) }, TENSOR)
end
function W.func(bytecode, upvalues, tag) return setmetatable({ bytecode = bytecode, upvalues = upvalues or {}, tag = tag or 8 }, FUNC) end

local function le(n, bytes) -- an integer as `bytes` little-endian bytes (two's complement)
  local t = {}
  if n < 0 then n = n + 2 ^ (8 * bytes) end
  for i = 1, bytes do t[i] = string.char(n % 256); n = math.floor(n / 256) end
  return table.concat(t)
end

local ELEM = { Byte = 'uint8_t', Char = 'int8_t', Short = 'int16_t', Int = 'int32_t', Float = 'float', Double = 'double',
  Half = 'uint16_t', Cuda = 'float' }

function W.serialize(value, opts)
  opts = opts or {}
  local ascii, long_size = opts.ascii, opts.long_size or 8
  local out, n = {}, 0
  local function put(s) n = n + 1; out[n] = s end
  local function int(x) if ascii then put(('%d\n'):format(x)) else put(le(x, 4)) end end
  local function longs(xs)
    if ascii then
      if #xs > 0 then put(table.concat(xs, ' ') .. '\n') end
    else
      for _, x in ipairs(xs) do put(le(x, long_size)) end
    end
  end
  local function double(x)
    if ascii then put(('%.17g\n'):format(x)) else put(ffi.string(ffi.new('double[1]', x), 8)) end
  end
  local function chars(s)
    put(s)
    if ascii and #s > 0 then put('\n') end
  end
  local function str(s) int(#s); chars(s) end
  local ids, next_id = {}, 0

  local write
  local function storage_body(st)
    longs({ #st.values })
    local v, ty = st.values, st.ty
    if #v == 0 then return end
    if ascii then
      if ty == 'Byte' or ty == 'Char' then
        local b = {}
        for i, x in ipairs(v) do b[i] = string.char(x % 256) end
        chars(table.concat(b))
      else
        local fmt = (ty == 'Double') and '%.17g' or (ty == 'Float' or ty == 'Half' or ty == 'Cuda') and '%.9g' or '%d'
        local t = {}
        for i, x in ipairs(v) do t[i] = fmt:format(x) end
        put(table.concat(t, ' ') .. '\n')
      end
    elseif ty == 'Long' then
      longs(v)
    elseif ty == 'Half' then
      local C = require('moontorch.ffi').C
      local a = ffi.new('uint16_t[?]', #v)
      for i, x in ipairs(v) do a[i - 1] = C.mt_float_to_half(x) end
      put(ffi.string(a, 2 * #v))
    else
      local ct = ELEM[ty]
      local a = ffi.new(ct .. '[?]', #v, v)
      put(ffi.string(a, ffi.sizeof(ct) * #v))
    end
  end
  local function indexed(v) -- the index of a table / object, true when written before
    if ids[v] then int(ids[v]); return true end
    next_id = next_id + 1
    ids[v] = next_id
    int(next_id)
    return false
  end
  local function torch_head(v, class)
    str('V ' .. tostring(v.version or 1))
    str(class)
  end
  write = function(v)
    local tv, mt = type(v), getmetatable(v)
    if v == nil then int(0)
    elseif tv == 'number' then int(1); double(v)
    elseif tv == 'boolean' then int(5); int(v and 1 or 0)
    elseif tv == 'string' then int(2); str(v)
    elseif mt == FUNC then
      if v.tag == 6 then int(6); str(v.bytecode); write(v.upvalues); return end
      int(v.tag)
      if indexed(v) then return end
      str(v.bytecode)
      write(v.upvalues)
    elseif mt == OBJECT then
      int(4)
      if indexed(v) then return end
      torch_head(v, v.class)
      write(v.fields)
    elseif mt == STORAGE then
      int(4)
      if indexed(v) then return end
      torch_head({}, 'torch.' .. v.ty .. 'Storage')
      storage_body(v)
    elseif mt == TENSOR then
      int(4)
      if indexed(v) then return end
      torch_head({}, 'torch.' .. v.ty .. 'Tensor')
      int(#v.sizes)
      longs(v.sizes)
      longs(v.strides)
      longs({ v.offset })
      write(v.storage)
    elseif tv == 'table' then
      int(3)
      if indexed(v) then return end
      local keys = {}
      for k in pairs(v) do keys[#keys + 1] = k end
      table.sort(keys, function(a, b)
        if type(a) == type(b) and (type(a) == 'number' or type(a) == 'string') then return a < b end
        return type(a) < type(b)
      end)
      int(#keys)
      for _, k in ipairs(keys) do write(k); write(v[k]) end
    else
      error('t7_writer: cannot write a ' .. tv)
    end
  end
  write(value)
  return table.concat(out, '', 1, n)
end

-- Torch7's nn modules as File.lua writes them: their fields (with Torch7's defaults for the ones
-- a module always has)
function W.module(class, fields, version)
  if fields.train == nil then fields.train = false end -- (a module saved after :evaluate())
  fields.output = fields.output or W.tensor('Float', {}, nil) -- (an empty tensor: no storage)
  fields.gradInput = fields.gradInput or W.tensor('Float', {}, nil)
  return W.object(class, fields, version)
end

return W
