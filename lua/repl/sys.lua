-- The few POSIX calls the REPL needs, through LuaJIT's FFI (Linux, x86-64 and arm64 glibc layouts):
-- the terminal's modes (termios), its width, reads with a timeout (poll), SIGINT's disposition
-- (sigaction, sigprocmask) and a file descriptor that becomes readable on SIGINT (signalfd).
local ffi = require 'ffi'
local bit = require 'bit'

local libc = require 'moontorch.libc'

local M = {}

-- our own struct types; the functions under private names (lua/libc.lua), so that nothing here
-- clashes with a user's ffi.cdef of the same functions
pcall(ffi.cdef, [[
struct mt_repl_termios {
  unsigned int c_iflag, c_oflag, c_cflag, c_lflag;
  unsigned char c_line;
  unsigned char c_cc[32];
  unsigned int c_ispeed, c_ospeed;
};
struct mt_repl_winsize { unsigned short ws_row, ws_col, ws_xpixel, ws_ypixel; };
typedef struct { unsigned long val[16]; } mt_repl_sigset;
struct mt_repl_sigaction {
  void (*handler)(int);
  mt_repl_sigset mask;
  int flags;
  void (*restorer)(void);
};
struct mt_repl_pollfd { int fd; short events; short revents; };
]])
local C = libc.declare {
  tcgetattr = 'int %s(int fd, struct mt_repl_termios *t)',
  tcsetattr = 'int %s(int fd, int when, const struct mt_repl_termios *t)',
  isatty = 'int %s(int fd)',
  ioctl = 'int %s(int fd, unsigned long req, ...)',
  read = 'long %s(int fd, void *buf, size_t n)',
  write = 'long %s(int fd, const void *buf, size_t n)',
  close = 'int %s(int fd)',
  poll = 'int %s(struct mt_repl_pollfd *fds, unsigned long n, int timeout)',
  sigaction = 'int %s(int sig, const struct mt_repl_sigaction *act, struct mt_repl_sigaction *old)',
  sigprocmask = 'int %s(int how, const mt_repl_sigset *set, mt_repl_sigset *old)',
  sigemptyset = 'int %s(mt_repl_sigset *set)',
  sigaddset = 'int %s(mt_repl_sigset *set, int sig)',
  signalfd = 'int %s(int fd, const mt_repl_sigset *mask, int flags)',
  kill = 'int %s(int pid, int sig)',
  getpid = 'int %s(void)',
}
local SIGINT = 2
local ICANON, ECHO, ISIG, IEXTEN = 0x2, 0x8, 0x1, 0x8000
local IXON, ICRNL = 0x400, 0x100
local VTIME, VMIN = 5, 6
local TIOCGWINSZ = 0x5413
local SIG_BLOCK, SIG_UNBLOCK = 0, 1
local SFD_CLOEXEC = 0x80000

function M.isatty(fd) return C.isatty(fd) == 1 end

-- raw mode on fd: returns the saved modes for restore(), or nil when fd is not a terminal
function M.raw(fd)
  local saved = ffi.new('struct mt_repl_termios')
  if C.tcgetattr(fd, saved) ~= 0 then return nil end
  local t = ffi.new('struct mt_repl_termios')
  ffi.copy(t, saved, ffi.sizeof(t))
  t.c_lflag = bit.band(t.c_lflag, bit.bnot(ICANON + ECHO + ISIG + IEXTEN))
  t.c_iflag = bit.band(t.c_iflag, bit.bnot(IXON + ICRNL))
  t.c_cc[VMIN], t.c_cc[VTIME] = 1, 0
  C.tcsetattr(fd, 1, t)
  return saved
end

function M.restore(fd, saved)
  if saved then C.tcsetattr(fd, 1, saved) end
end

function M.columns(fd)
  local ws = ffi.new('struct mt_repl_winsize')
  if C.ioctl(fd or 1, TIOCGWINSZ, ws) == 0 and ws.ws_col > 0 then return ws.ws_col end
  return tonumber(os.getenv('COLUMNS')) or 80
end

local byte = ffi.new('unsigned char[1]')
-- one byte from fd, waiting at most timeout_ms (nil: forever); nil on EOF or timeout
function M.read_byte(fd, timeout_ms)
  if timeout_ms then
    local p = ffi.new('struct mt_repl_pollfd[1]')
    p[0].fd, p[0].events = fd, 1
    if C.poll(p, 1, timeout_ms) <= 0 then return nil end
  end
  while true do
    local n = C.read(fd, byte, 1)
    if n == 1 then return byte[0] end
    if n == 0 then return nil end
    if ffi.errno() ~= 4 then return nil end -- EINTR: again
  end
end

function M.write(fd, s)
  local off = 0
  while off < #s do
    local n = C.write(fd, ffi.cast('const char *', s) + off, #s - off)
    if n <= 0 then
      if ffi.errno() ~= 4 then return end
    else
      off = off + n
    end
  end
end

-- poll fds (a list) for input; returns the set of those readable (fd -> true), or an empty set
function M.wait(fds, timeout_ms)
  local p = ffi.new('struct mt_repl_pollfd[?]', #fds)
  for i, fd in ipairs(fds) do p[i - 1].fd, p[i - 1].events = fd, 1 end
  local ready = {}
  if C.poll(p, #fds, timeout_ms or -1) > 0 then
    for i = 1, #fds do
      if p[i - 1].revents ~= 0 then ready[fds[i]] = true end
    end
  end
  return ready
end

---------------------------------------------------------------------------------------------- SIGINT
-- SIGINT while user code runs: the handler luajit's own runner installs around the script
-- (luajit.c's laction) sets a debug hook that raises "interrupted!" at the next instruction of
-- interpreted code; it resets SIGINT to the default as it fires, so it is installed again after
-- each command. Here we keep its address, found as SIGINT's handler when this module loads.
local int_set = ffi.new('mt_repl_sigset')
C.sigemptyset(int_set)
C.sigaddset(int_set, SIGINT)

local runner_handler
do
  local old = ffi.new('struct mt_repl_sigaction')
  if C.sigaction(SIGINT, nil, old) == 0 then
    local h = ffi.cast('intptr_t', old.handler)
    if h ~= 0 and h ~= 1 then -- neither SIG_DFL nor SIG_IGN
      runner_handler = ffi.new('struct mt_repl_sigaction')
      ffi.copy(runner_handler, old, ffi.sizeof(old))
    end
  end
end
M.can_interrupt = runner_handler ~= nil

local sfd -- the signalfd of sigint_fd(), made on first use (false: none)

-- user code is about to run: SIGINT interrupts it (a Ctrl-C typed before it started is dropped)
function M.sigint_interrupts()
  if sfd and M.wait({ sfd }, 0)[sfd] then M.sigint_take() end
  if runner_handler then C.sigaction(SIGINT, runner_handler, nil) end
  C.sigprocmask(SIG_UNBLOCK, int_set, nil)
end

-- at the prompt: SIGINT is held (blocked) and read from the fd sigint_fd() returns
function M.sigint_held()
  C.sigprocmask(SIG_BLOCK, int_set, nil)
end

function M.sigint_fd()
  if sfd == nil then
    sfd = C.signalfd(-1, int_set, SFD_CLOEXEC)
    if sfd < 0 then sfd = false end
  end
  return sfd or nil
end

-- consume a held SIGINT (after sigint_fd() became readable)
function M.sigint_take()
  if sfd then
    local buf = ffi.new('char[128]')
    C.read(sfd, buf, 128)
  end
end

return M
