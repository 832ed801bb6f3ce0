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

-- Raise `moontorch.<message from C>` at the caller's line.
function M.raise_last()
  local msg = ffi.string(C.mt_last_error())
  error('moontorch.' .. msg, user_level())
end

-- Raise a message of our own (Lua-side argument checks) at the caller's line.
function M.fail(op, msg)
  error(scrub('moontorch.' .. tostring(op) .. ': ' .. tostring(msg)), user_level())
end

return M
