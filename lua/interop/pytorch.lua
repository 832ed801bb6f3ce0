-- torch.load_pytorch(path [, {map_location=}]): PyTorch's own torch.save files, read safely.
--
-- core/formats/pytorch.c reads the file (the zip archive or the legacy format) with a restricted
-- unpickler written in C (core/formats/pickle.c): it accepts what PyTorch's
-- torch.load(..., weights_only=True) accepts and runs nothing; any other Python global is refused
-- with its name. This file turns the values it read into Lua values:
--   None -> nil (a dict entry whose value is None is left out), bool -> boolean,
--   int, float -> number (an int beyond 2^53 rounds to the nearest double),
--   str, bytes -> string, list, tuple, torch.Size -> array (1-based), set -> {item = true},
--   dict -> table, collections.OrderedDict -> torch.OrderedDict (its `_metadata` attribute, as in
--   a state_dict, under d._metadata), tensor -> tensor (views of one storage share it, nn.Parameter
--   and requires_grad kept), a storage -> a 1-D tensor of its elements, a meta tensor -> a tensor
--   on the meta device, a dtype -> torch.float32 & co.
-- Shared values stay shared and cycles are kept (each value is made once).
-- A state_dict's keys are PyTorch's, which are moontorch's: model:load_state_dict(sd) takes it.
local ffi = require 'ffi'
local bit = require 'bit'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local dtype_mod = require 'moontorch.dtype'

local C = core.C
local fail, raise_last = core.fail, core.raise_last
local wrap = T.wrap
local type, tonumber, rawset, pcall, error = type, tonumber, rawset, pcall, error

local M = {}

local MAX_DEPTH = 1000

local K = {
  NONE = C.MT_PT_NONE, BOOL = C.MT_PT_BOOL, INT = C.MT_PT_INT, FLOAT = C.MT_PT_FLOAT, STRING = C.MT_PT_STRING,
  BYTES = C.MT_PT_BYTES, LIST = C.MT_PT_LIST, TUPLE = C.MT_PT_TUPLE, DICT = C.MT_PT_DICT,
  ODICT = C.MT_PT_ORDERED_DICT, SET = C.MT_PT_SET, TENSOR = C.MT_PT_TENSOR, META = C.MT_PT_META_TENSOR,
  STORAGE = C.MT_PT_STORAGE, DTYPE = C.MT_PT_DTYPE, GLOBAL = C.MT_PT_GLOBAL,
}
local PARAMETER, REQUIRES_GRAD = C.MT_PT_PARAMETER, C.MT_PT_REQUIRES_GRAD

local value = ffi.new('mt_pt_value')
local fp = ffi.new('mt_pt_file *[1]')

local convert

local function bad(s, what) fail('load_pytorch', ('%s: %s'):format(s.path, what)) end

-- a container's items (node ids) copied out of the scratch value before recursing
local function items_of(v, n)
  local out = {}
  for i = 0, n - 1 do out[i + 1] = v.items[i] end
  return out
end

local function key_of(s, id, depth)
  local k = convert(s, id, depth)
  if k == nil then bad(s, 'a dict key is None, which a Lua table cannot hold') end
  if k ~= k then bad(s, 'a dict key is NaN, which a Lua table cannot hold') end
  return k
end

convert = function(s, id, depth)
  local done = s.memo[id]
  if done ~= nil then return done end
  if depth > MAX_DEPTH then bad(s, ('nesting deeper than %d levels'):format(MAX_DEPTH)) end
  local v = value
  if C.mt_pt_get(s.f, id, v) ~= 0 then raise_last() end
  local kind = v.kind
  if kind == K.NONE then return nil
  elseif kind == K.BOOL then return v.integer ~= 0
  elseif kind == K.INT or kind == K.FLOAT then return v.number
  elseif kind == K.STRING or kind == K.BYTES then return ffi.string(v.str, v.count)
  elseif kind == K.TENSOR or kind == K.STORAGE then
    local flags = v.flags
    local t = wrap(v.tensor)
    s.memo[id] = t
    if s.device then s.to_location(s, t) end
    if kind == K.TENSOR and bit.band(flags, REQUIRES_GRAD) ~= 0 then t:requires_grad_(true) end
    return t
  elseif kind == K.LIST or kind == K.TUPLE or kind == K.SET then
    local n = tonumber(v.count)
    local its = items_of(v, n)
    local out = {}
    s.memo[id] = out
    if kind == K.SET then
      for i = 1, n do out[key_of(s, its[i], depth + 1)] = true end
    else
      for i = 1, n do out[i] = convert(s, its[i], depth + 1) end
    end
    return out
  elseif kind == K.DICT or kind == K.ODICT then
    local n = tonumber(v.count)
    local its = items_of(v, 2 * n)
    local meta = v.metadata
    local out = kind == K.ODICT and s.OrderedDict() or {}
    s.memo[id] = out
    for i = 1, 2 * n, 2 do
      local k = key_of(s, its[i], depth + 1)
      local x = convert(s, its[i + 1], depth + 1)
      if x ~= nil then out[k] = x end
    end
    if meta ~= 0 then rawset(out, '_metadata', convert(s, meta, depth + 1)) end
    return out
  elseif kind == K.META then
    local nd = tonumber(v.count)
    local sizes, strides = {}, {}
    for i = 1, nd do sizes[i] = tonumber(v.sizes[i - 1]); strides[i] = tonumber(v.sizes[nd + i - 1]) end
    local dt = dtype_mod.by_id[tonumber(v.dtype)]
    local rg = bit.band(v.flags, REQUIRES_GRAD) ~= 0
    local torch = require 'moontorch'
    local t = torch.empty_strided(sizes, strides, { dtype = dt, device = 'meta' })
    if rg then t:requires_grad_(true) end
    s.memo[id] = t
    return t
  elseif kind == K.DTYPE then
    if v.dtype < 0 then bad(s, ('the dtype %s, which moontorch does not have'):format(ffi.string(v.str))) end
    return dtype_mod.by_id[tonumber(v.dtype)]
  end
  bad(s, ('the Python object %s is stored as a value, which Lua cannot hold'):format(ffi.string(v.str)))
end

local function open_and_convert(path, device, to_location)
  if C.mt_pt_open(path, fp) ~= 0 then raise_last() end
  local f = ffi.gc(fp[0], C.mt_pt_close)
  local s = { f = f, path = path, memo = {}, device = device, to_location = to_location, moved = {},
    OrderedDict = require 'moontorch.ordered_dict' }
  local ok, res = pcall(function()
    local root = C.mt_pt_root(f)
    if root == 0 then return nil end
    return convert(s, root, 0)
  end)
  C.mt_pt_close(ffi.gc(f, nil))
  if not ok then error(res, 0) end
  return res
end

-- torch.load_pytorch(path_or_file [, {map_location=}])
function M.load(path, opts)
  local ckpt = require 'moontorch.checkpoint'
  if type(opts) == 'string' then opts = { map_location = opts } end
  if opts ~= nil and type(opts) ~= 'table' then fail('load_pytorch', 'options must be a table') end
  opts = opts or {}
  if io.type(path) then -- an open file: its bytes from here to the end, through a temporary file
    if io.type(path) ~= 'file' then fail('load_pytorch', 'the file is closed') end
    local bytes = path:read('*a') or ''
    local tmp = os.tmpname()
    local w = io.open(tmp, 'wb')
    w:write(bytes)
    w:close()
    local ok, res = pcall(M.load, tmp, opts)
    os.remove(tmp)
    if not ok then error((tostring(res):gsub(tmp:gsub('%p', '%%%0'), 'the file')), 0) end
    return res
  end
  if type(path) ~= 'string' then
    fail('load_pytorch', 'path must be a string or an open file (io.open(path, \'rb\'))')
  end
  local device = ckpt._check_location('load_pytorch', path, opts.map_location)
  return open_and_convert(path, device, ckpt._to_location)
end

return M
