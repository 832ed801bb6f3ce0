-- moontorch.ffi: loads libmoontorch and its declarations (generated from core/moontorch.h at
-- build time and installed beside the library), and raises C failures as Lua errors.
local ffi = require 'ffi'

-- One copy per process. The C library's state (the handle registry, autograd ids) belongs to one
-- set of Lua modules, so a second copy of them (after `package.loaded.moontorch = nil`, or a test
-- runner that clears package.loaded between files) must not load: a loader placed first in
-- package.loaders hands out the modules loaded the first time, kept in the Lua registry.
local registry = debug.getregistry()
local cache = registry['moontorch.modules']
if cache and cache['moontorch.ffi'] then return cache['moontorch.ffi'] end
if not cache then
  cache = {}
  registry['moontorch.modules'] = cache
  local loaders = package.loaders or package.searchers
  table.insert(loaders, 1, function(name)
    if name ~= 'moontorch' and name:sub(1, 10) ~= 'moontorch.' then return nil end
    local m = cache[name]
    if m ~= nil then return function() return m end end
    for i = 2, #loaders do
      local load = loaders[i](name)
      if type(load) == 'function' then
        return function(...)
          local r = load(...)
          if r == nil then r = package.loaded[name] end
          if r == nil then r = true end
          cache[name] = r
          return r
        end
      end
    end
    return nil
  end)
end

local M = {}
cache['moontorch.ffi'] = M

-- Find the library: $MOONTORCH_LIB, else moontorch/libmoontorch.so on package.cpath.
local function locate()
  local env = os.getenv('MOONTORCH_LIB')
  if env and env ~= '' then return env end
  local path = package.searchpath('moontorch.libmoontorch', package.cpath)
  if path then return path end
  error('moontorch: cannot find libmoontorch.so on package.cpath (' .. package.cpath ..
        '); build it with cmake or install with luarocks, or set MOONTORCH_LIB', 0)
end

local libpath = locate()
local cdef_path = libpath:gsub('[^/]*$', '') .. 'moontorch_cdef.h'
local f = io.open(cdef_path, 'r')
if not f then error('moontorch: missing FFI declarations ' .. cdef_path, 0) end
local decls = f:read('*a')
f:close()

ffi.cdef(decls)
local C = ffi.load(libpath)
C.mt_set_message_base(1) -- messages count dims and positions from 1, as Lua users do
M.C = C

-- the C library calls the file code uses (torch.save/load, safetensors), under private names
M.libc = require 'moontorch.libc'
M.libpath = libpath
M.cdef_path = cdef_path
M.decls = decls

-- A value's kind in a message ("expected a number, got tensor"): Lua's type(), a tensor as 'tensor'
-- (not 'cdata')
local tensor_ct = ffi.typeof('mt_tensor')
function M.typeof(v)
  if ffi.istype(tensor_ct, v) then return 'tensor' end
  return type(v)
end

-- The frame to blame for an error: the first one outside moontorch's own Lua files.
local src_prefix = debug.getinfo(1, 'S').source:gsub('ffi%.lua$', '')
local function user_level()
  local level = 3
  while true do
    local info = debug.getinfo(level, 'S')
    if not info then return 0 end
    local src = info.source
    if src:sub(1, #src_prefix) ~= src_prefix and src ~= '=[C]' then return level - 1 end
    level = level + 1
  end
end
M.user_level = user_level

-- A message never shows an address (`table: 0x55d0...`, from a tostring() of a value the check
-- did not expect): the value is named by its type instead.
local function scrub(msg)
  if not msg:find(': 0x', 1, true) then return msg end
  return (msg:gsub('cdata<[^>]*>: 0x%x+', 'a cdata'):gsub('(%l+): 0x%x+', function(kind)
    if kind == 'table' or kind == 'function' or kind == 'userdata' or kind == 'thread' or kind == 'builtin' then
      return 'a ' .. kind
    end
  end))
end
M.scrub = scrub

-- The op the user called. An error found inside a composite (F.l1_loss subtracting, a module's
-- forward multiplying) names that op, with the inner op's message: the frame the user called is
-- the outermost of moontorch's frames; the name it was called by, when it is a public name (found in
-- a namespace of M.namespaces, filled by init.lua), or a name it is installed under; a module's
-- forward (or m(...)) names the module's class, the innermost module when modules nest.
M.namespaces = {} -- { {prefix, table}, ... }: torch, Tensor methods, nn.functional, linalg, ...
M.module_of = nil -- set by nn.Module: module_of(v) -> 'nn.Linear' for a module, else nil

local function holds(tbl, f)
  for _, v in pairs(tbl) do
    if v == f or (M.wrapped and M.wrapped[v] == f) then return true end
  end
  return false
end
local function public(name, f)
  local found, candidates = nil, {}
  for _, ns in ipairs(M.namespaces) do
    local v = rawget(ns[2], name)
    if v ~= nil and type(v) == 'function' then
      local u = M.wrapped and M.wrapped[v] or v
      if u == f or v == f then return ns[1] .. name end
      found = found or ns[1] .. name
      candidates[#candidates + 1] = ns
    end
  end
  -- f was tail-called by the function the user called (linalg.norm -> linalg.matrix_norm): the
  -- namespace that holds f too
  if #candidates > 1 then
    for _, ns in ipairs(candidates) do
      if holds(ns[2], f) then return ns[1] .. name end
    end
  end
  return found
end

local function installed_as(f)
  local best
  for _, ns in ipairs(M.namespaces) do
    for k, v in pairs(ns[2]) do
      if type(k) == 'string' and (v == f or (M.wrapped and M.wrapped[v] == f)) and k:sub(1, 1) ~= '_' then
        if not best or ns[1] .. k < best then best = ns[1] .. k end
      end
    end
    if best then return best end
  end
end

-- the module whose forward runs at `level` (seen from module_at's caller), by its class name
local function module_at(level)
  if not M.module_of then return nil end
  local _, self = debug.getlocal(level + 1, 1)
  if type(self) ~= 'table' then return nil end
  return M.module_of(self, debug.getinfo(level + 1, 'f').func)
end

-- short(op) == short(called): the same op ('nn.functional.glu' and 'glu', 'mean()' and 'mean', add_ and add)
local function short(op) return (op:gsub('%(%)$', ''):match('([%w_]+)$') or op):gsub('_$', '') end

-- the name of the op called at the outermost moontorch frame (level: as error()'s, seen from the caller
-- of called_op's caller), when it differs from `op`
local function called_op(level, op)
  local lv = level + 1 -- called_op's own frame
  if lv <= 2 then return nil end
  local outer, info = lv - 1, nil
  while outer > 2 do -- below the user's frame, past C frames (pcall): moontorch's outermost frame
    info = debug.getinfo(outer, 'nSf')
    if not info or info.what ~= 'C' then break end
    outer = outer - 1
  end
  if not info or outer <= 2 then return nil end
  local f = M.wrapped and M.wrapped[info.func] or info.func
  local name
  -- a module's forward: the innermost module among moontorch's frames
  if module_at(outer) then
    for l = 3, outer do
      local m = module_at(l)
      if m then name = m; break end
    end
  else
    if info.name and (info.namewhat == 'field' or info.namewhat == 'method' or info.namewhat == 'global') then
      name = public(info.name, f)
    end
    if not name then
      -- called by pcall, through a local, or tail-called: a name it is installed under
      name = installed_as(f)
      if name and op then
        -- keep the op's own name when it is one of this function's names (an alias)
        for _, ns in ipairs(M.namespaces) do
          local v = rawget(ns[2], short(op)) or rawget(ns[2], op:match('([%w_]+)$') or op)
          if v ~= nil and (v == f or (M.wrapped and M.wrapped[v] == f)) then return nil end
        end
      end
    end
  end
  if not name then return nil end
  if op and short(op) == short(name) then
    -- the same op, but a linalg/special/fft function shares its name with a torch one of its own
    -- defaults (linalg.cross, cross): the namespace the user called says which
    local ns = name:match('^(%a+)%.')
    if not ns or ns == 'nn' or op:find(ns .. '.', 1, true) == 1 then return nil end
  end
  return name
end
M.called_op = called_op

-- Raise `moontorch.<message from C>` at the caller's line.
function M.raise_last()
  local msg = ffi.string(C.mt_last_error())
  local level = user_level()
  local op, rest = msg:match('^([%w_%.]+%(?%)?): (.*)$')
  -- a device's deferred error (a kernel's finding reported at the next synchronisation, "... (on
  -- device cuda:1)") names the op that launched that kernel, not the call that synchronised
  if op and not rest:find('%(on device [%w_]+:?%d*%)$') then
    local called = called_op(level, op)
    if called then msg = called .. ': ' .. rest end
  end
  error('moontorch.' .. msg, level)
end

-- Raise a message of our own (Lua-side argument checks) at the caller's line.
function M.fail(op, msg)
  local level = user_level()
  op = tostring(op)
  local called = called_op(level, op)
  if called then op = called end
  error(scrub('moontorch.' .. op .. ': ' .. tostring(msg)), level)
end

return M
