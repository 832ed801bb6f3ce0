-- The C library functions moontorch's Lua files call (and the launcher's, and the REPL's), declared
-- under private names. LuaJIT's FFI has one global table of C declarations: had moontorch declared
-- `int clock_gettime(int, struct my_ts *)`, a user's script declaring clock_gettime with its own
-- `struct timespec` would fail with "attempt to redefine" or "cannot convert". So each function is
-- declared as `moontorch_<name>`, redirected to the real symbol with `__asm__("<name>")` (which
-- LuaJIT's C parser honours for functions and variables alike), with struct types of our own
-- (`struct moontorch_*`), and no typedef of a common name (FILE, timespec, ...) is made.
--   local libc = require 'moontorch.libc'
--   libc.isatty(1); libc.monotonic() (seconds)
--   local rl = libc.declare({ rl_free_line_state = 'void %s(void)' }, ffi.load('readline'))
local ffi = require 'ffi'

-- one copy per process (its struct types can be declared only once): kept in the Lua registry,
-- whatever clears package.loaded
local registry = debug.getregistry()
if registry['moontorch.libc'] then return registry['moontorch.libc'] end
local M = {}
registry['moontorch.libc'] = M
local PREFIX = 'moontorch_'
M.prefix = PREFIX

-- declare(protos, lib): protos maps a C name to its declaration with `%s` where the name goes
-- ('int %s(int fd)'; a variable: 'extern const char *%s'). Returns a table whose fields are the
-- functions (looked up once) and, for variables, read the variable each time they are read and
-- write it when set. lib: a library from ffi.load (default ffi.C).
local declared = {}
function M.declare(protos, lib)
  lib = lib or ffi.C
  local fns, vars = {}, {}
  for name, proto in pairs(protos) do
    local private = PREFIX .. name
    if not declared[private] then
      ffi.cdef(proto:format(private) .. ' __asm__("' .. name .. '");')
      declared[private] = proto
    elseif declared[private] ~= proto then
      error(('moontorch.libc: %s declared twice, differently'):format(name), 2)
    end
    if proto:match('^%s*extern%s') then vars[name] = private else fns[name] = lib[private] end
  end
  return setmetatable(fns, {
    __index = function(_, k)
      local private = vars[k]
      if private then return lib[private] end
      return nil
    end,
    __newindex = function(_, k, v)
      local private = vars[k]
      if not private then error('moontorch.libc: no variable ' .. tostring(k), 2) end
      lib[private] = v
    end,
  })
end

-- our own struct types (never a typedef of a name a user may use)
ffi.cdef [[
struct moontorch_FILE;
struct moontorch_timespec { long tv_sec, tv_nsec; };
struct moontorch_timeval { long tv_sec, tv_usec; };
struct moontorch_rusage { struct moontorch_timeval utime, stime; long rest[14]; };
]]

local C = M.declare {
  -- clocks
  clock_gettime = 'int %s(int clk, struct moontorch_timespec *ts)',
  getrusage = 'int %s(int who, struct moontorch_rusage *usage)',
  -- terminals, processes, files
  isatty = 'int %s(int fd)',
  getpid = 'int %s(void)',
  fileno = 'int %s(struct moontorch_FILE *f)',
  realpath = 'char *%s(const char *path, char *resolved)',
  fopen = 'struct moontorch_FILE *%s(const char *path, const char *mode)',
  fwrite = 'size_t %s(const void *p, size_t size, size_t n, struct moontorch_FILE *f)',
  fread = 'size_t %s(void *p, size_t size, size_t n, struct moontorch_FILE *f)',
  fclose = 'int %s(struct moontorch_FILE *f)',
  fseek = 'int %s(struct moontorch_FILE *f, long off, int whence)',
  ftell = 'long %s(struct moontorch_FILE *f)',
  rename = 'int %s(const char *a, const char *b)',
  remove = 'int %s(const char *p)',
  -- libm
  erf = 'double %s(double x)',
  erfc = 'double %s(double x)',
}
for k, v in pairs(C) do M[k] = v end

-- clocks, in seconds as Lua numbers
local CLOCK_MONOTONIC, RUSAGE_SELF = 1, 0
local ts = ffi.new('struct moontorch_timespec')
local ru = ffi.new('struct moontorch_rusage')
local clock_gettime, getrusage = C.clock_gettime, C.getrusage
-- wall time from an arbitrary start (CLOCK_MONOTONIC): for intervals
function M.monotonic()
  clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end
-- this process's CPU time in user and in system mode (getrusage), two numbers
function M.cpu_times()
  getrusage(RUSAGE_SELF, ru)
  return tonumber(ru.utime.tv_sec) + tonumber(ru.utime.tv_usec) * 1e-6,
    tonumber(ru.stime.tv_sec) + tonumber(ru.stime.tv_usec) * 1e-6
end

return M
