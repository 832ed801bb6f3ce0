-- lua/libc.lua and torch.Timer (issue 27, part 3). moontorch, its launcher and its REPL declared
-- C library functions in LuaJIT's one global ffi.C namespace with types of their own, so a user's
-- script declaring clock_gettime the usual way failed under bin/moontorch only ("cannot convert
-- 'struct 1601' to 'struct mt_repl_timespec *'"), and one declaring fopen with its own FILE could
-- not require moontorch at all afterwards ("attempt to redefine 'fopen'"). Now every such function
-- is declared under a private name (moontorch_<name>, __asm__-redirected to the real symbol).
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'

local root = (function()
  local p = io.popen('pwd')
  local d = p:read('*l')
  p:close()
  return d
end)()

-- the C library names moontorch calls, and others a user commonly declares
local NAMES = { 'clock_gettime', 'getrusage', 'gettimeofday', 'isatty', 'fileno', 'fopen', 'fwrite', 'fread',
  'fclose', 'fseek', 'ftell', 'rename', 'remove', 'getpid', 'erf', 'erfc', 'realpath', 'read', 'write', 'close',
  'poll', 'ioctl', 'sigaction', 'sigprocmask', 'sigemptyset', 'sigaddset', 'signalfd', 'kill', 'tcgetattr',
  'tcsetattr', 'rl_instream', 'rl_free_line_state', 'rl_readline_name', 'usleep', 'nanosleep' }

-- what a user's script declares: the usual spellings, with the usual struct and typedef names
local USER_DECLS = [[
local ffi = require 'ffi'
ffi.cdef [=[
typedef struct timespec { long tv_sec; long tv_nsec; } timespec_t;
typedef struct timeval { long tv_sec; long tv_usec; } timeval_t;
int clock_gettime(int clk_id, struct timespec *tp);
int gettimeofday(struct timeval *tv, void *tz);
typedef struct FILE FILE;
FILE *fopen(const char *path, const char *mode);
int fclose(FILE *f);
int fileno(FILE *f);
size_t fread(void *ptr, size_t size, size_t n, FILE *f);
int isatty(int fd);
int getpid(void);
double erf(double x);
char *realpath(const char *path, char *resolved);
typedef long ssize_t_;
ssize_t_ write(int fd, const char *buf, size_t n);
]=]
local function user_calls()
  local ts = ffi.new('struct timespec')
  assert(ffi.C.clock_gettime(1, ts) == 0 and ts.tv_sec >= 0)
  local f = ffi.C.fopen('/dev/null', 'r')
  assert(f ~= nil and ffi.C.fileno(f) >= 0)
  ffi.C.fclose(f)
  assert(ffi.C.getpid() > 0)
  assert(math.abs(ffi.C.erf(1) - 0.8427007929497149) < 1e-15)
end
]]

-- then everything of moontorch that calls the C library: progress (clocks, isatty), the REPL's
-- modules (terminal, signals, readline), files (fopen...), nn.init (erf), torch.Timer
local MOONTORCH_USE = [[
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local progress = require 'moontorch.utils.progress'
for _ in progress({ 1, 2 }, { desc = 'p', interval = 0 }) do end
require 'moontorch.repl'
require 'moontorch.repl.sys'
require 'moontorch.repl.readline'
local path = os.tmpname()
torch.save({ w = torch.ones(2) }, path)
assert(torch.load(path).w:sum():item() == 2)
torch.save_safetensors({ w = torch.ones(3) }, path)
assert(torch.load_safetensors(path).w:sum():item() == 3)
os.remove(path)
local w = torch.empty(1000)
nn.init.trunc_normal_(w)
assert(w:abs():max():item() <= 2)
local timer = torch.Timer()
assert(timer:time().real >= 0)
]]

local function run_launcher(code)
  local path = os.tmpname()
  H.write_file(path, code)
  local p = io.popen(('cd %s && %s bin/moontorch %s 2>&1; echo "EXIT $?"'):format(H.sh_quote(root),
    H.sh_quote(H.luajit), H.sh_quote(path)))
  local out = p:read('*a')
  p:close()
  os.remove(path)
  return out
end

describe('moontorch declares nothing in ffi.C that a user may declare', function()
  it('leaves every C library name undeclared after loading all that calls the C library', function()
    local out, ok, err = H.run_lua(MOONTORCH_USE .. [[
      local ffi = require 'ffi'
      local declared = {}
      for _, name in ipairs({ ]] .. "'" .. table.concat(NAMES, "', '") .. "'" .. [[ }) do
        if pcall(function() return ffi.C[name] end) then declared[#declared + 1] = name end
      end
      for _, ty in ipairs({ 'FILE', 'struct timespec', 'struct timeval' }) do
        local ok, ct = pcall(ffi.typeof, ty)
        if ok and ffi.sizeof(ct) then declared[#declared + 1] = ty end
      end
      print('declared: ' .. table.concat(declared, ' '))
    ]])
    assert.is_true(ok, out .. err)
    assert.are.equal('declared: \n', out:match('declared: [^\n]*\n'))
  end)

  it('runs a script declaring them the usual way under the launcher, before and after loading moontorch', function()
    local out = run_launcher(USER_DECLS .. 'user_calls()\n' .. MOONTORCH_USE .. 'user_calls()\nprint("ok")\n')
    assert.truthy(out:find('ok\nEXIT 0\n', 1, true), out)
    -- and in plain luajit, with the user's declarations first
    local out2, ok2, err2 = H.run_lua(USER_DECLS .. 'user_calls()\n' .. MOONTORCH_USE .. 'user_calls()\nprint("ok")\n')
    assert.is_true(ok2, out2 .. err2)
    assert.are.equal('ok\n', out2:sub(-3))
  end)

  it('runs a script declaring them after moontorch loaded', function()
    local out, ok, err = H.run_lua(MOONTORCH_USE .. USER_DECLS .. 'user_calls()\nprint("ok")\n')
    assert.is_true(ok, out .. err)
    assert.are.equal('ok\n', out:sub(-3))
    -- the launcher with a REPL's -e chunk that declares clock_gettime, as the issue's report did
    local out2 = run_launcher(USER_DECLS .. 'user_calls()\nprint("ok")\n')
    assert.truthy(out2:find('ok\nEXIT 0\n', 1, true), out2)
  end)

  it('libc.declare gives private names and refuses the same name declared differently', function()
    local libc = require 'moontorch.libc'
    local c = libc.declare { getpid = 'int %s(void)' }
    assert.are.equal(libc.getpid(), c.getpid())
    assert.is_true(c.getpid() > 0)
    local ok, err = pcall(libc.declare, { getpid = 'long %s(void)' })
    assert.is_false(ok)
    assert.truthy(tostring(err):find('getpid declared twice', 1, true))
    local t0 = libc.monotonic()
    assert.is_true(libc.monotonic() >= t0)
    local u, s = libc.cpu_times()
    assert.is_true(u >= 0 and s >= 0)
  end)
end)

describe('torch.Timer (Torch7)', function()
  local function spin(seconds) -- CPU work of about `seconds`
    local t0, x = os.clock(), 0
    while os.clock() - t0 < seconds do x = x + math.sin(x) end
    return x
  end

  it('counts real, user and system time from its creation', function()
    local timer = torch.Timer()
    assert.are.equal('torch.Timer', torch.typename(timer))
    spin(0.05)
    local t = timer:time()
    assert.are.equal('number', type(t.real))
    assert.is_true(t.real >= 0.04, tostring(t.real))
    assert.is_true(t.user + t.sys >= 0.03, ('user %g sys %g'):format(t.user, t.sys))
    assert.is_true(t.sys >= 0)
    assert.is_true(timer:time().real >= t.real)
  end)

  it('stops, resumes and resets, each returning the timer', function()
    local timer = torch.Timer()
    spin(0.02)
    assert.are.equal(timer, timer:stop())
    local stopped = timer:time()
    spin(0.03)
    local still = timer:time()
    assert.are.equal(stopped.real, still.real)
    assert.are.equal(stopped.user, still.user)
    assert.are.equal(timer, timer:stop()) -- stopping again changes nothing
    assert.are.equal(stopped.real, timer:time().real)
    assert.are.equal(timer, timer:resume())
    spin(0.02)
    local resumed = timer:time().real
    assert.is_true(resumed >= stopped.real + 0.015 and resumed < stopped.real + 0.03 + 0.5, tostring(resumed))
    assert.are.equal(timer, timer:reset())
    assert.is_true(timer:time().real < 0.01)
    -- a reset of a stopped timer keeps it stopped, at 0
    timer:stop()
    timer:reset()
    spin(0.01)
    assert.are.same({ real = 0, user = 0, sys = 0 }, timer:time())
    timer:resume()
    spin(0.01)
    assert.is_true(timer:time().real > 0)
    assert.truthy(tostring(timer):find('^torch.Timer%(real='))
  end)
end)
