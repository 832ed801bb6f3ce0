-- The REPL's line editor over GNU readline, through Debian's lua-readline (`require 'readline'`):
-- readline's own editing, key bindings (~/.inputrc) and history file. It reads through readline's
-- callback interface, so that the wait for a key can also watch SIGINT (held at the prompt and
-- read from a signalfd): Ctrl-C abandons the line and gives a fresh prompt. Tab completes; a second
-- Tab lists every candidate.
-- new() returns nil when lua-readline is not installed.
local ffi = require 'ffi'
local sys = require 'moontorch.repl.sys'
local libc = require 'moontorch.libc'

local M = {}
M.__index = M
M.name = 'readline'

-- readline's own variables, from the library lua-readline loaded (the same copy: dlopen by soname)
-- (under private names: see lua/libc.lua)
local function libreadline()
  for _, name in ipairs { 'libreadline.so.8', 'readline', 'libreadline.so.7' } do
    local ok, lib = pcall(ffi.load, name)
    if ok then
      return libc.declare({
        rl_instream = 'extern struct moontorch_FILE *%s',
        rl_free_line_state = 'void %s(void)',
        rl_cleanup_after_signal = 'void %s(void)',
        rl_callback_sigcleanup = 'void %s(void)',
        rl_variable_bind = 'int %s(const char *variable, const char *value)',
      }, lib)
    end
  end
end

function M.new(opts)
  -- lua-readline reads ~/.rl_lua_history when it loads; point that at our file first
  local ok, RL = pcall(require, 'readline')
  if not ok or type(RL) ~= 'table' or not RL.handler_install then return nil end
  local lib = libreadline()
  if not lib then return nil end
  local self = setmetatable({ RL = RL, lib = lib, complete = opts.complete }, M)
  RL.set_options { histfile = opts.history or '', keeplines = 1000, minlength = 1, completion = true,
    auto_add = false }
  RL.set_readline_name('moontorch')
  -- Tab on a word with several completions first inserts what they share (torch.ze -> torch.zeros);
  -- the next Tab lists them all (torch.zeros torch.zeros_like). Readline's default needs a third Tab
  -- after a Tab that inserted text; show-all-if-unmodified lists at once when there is nothing more
  -- to insert. (Set before readline reads ~/.inputrc, so a user's own setting there wins.)
  pcall(function() lib.rl_variable_bind('show-all-if-unmodified', 'on') end)
  RL.set_complete_function(function(text, from, to)
    RL.set_completion_append_character('')
    -- readline's word ends at blanks and brackets, not at '.' or ':'; complete its identifier tail
    local word = text:sub(from, to)
    local ident = word:match('[%a_][%w_%.:]*$') or ''
    local head = word:sub(1, #word - #ident)
    local list = self.complete and self.complete(ident, text:sub(1, to)) or {}
    for i = 1, #list do list[i] = head .. list[i] end
    return list
  end)
  return self
end

function M:add_history(line)
  if line:find('%S') and line ~= self.last then
    self.RL.add_history(line)
    self.last = line
  end
end

function M:close()
  self.RL.save_history()
end

function M:read(prompt)
  local RL, lib = self.RL, self.lib
  local got, line = false, nil
  -- the handler removes itself: installed, readline would show the prompt again at once
  RL.handler_install(prompt, function(l)
    got, line = true, l
    RL.handler_remove()
  end)
  local fd = lib.rl_instream ~= nil and libc.fileno(lib.rl_instream) or 0
  local sfd = sys.sigint_fd()
  local fds = { fd, sfd }
  while not got do
    local ready = sys.wait(fds, -1)
    if sfd and ready[sfd] then
      -- (as CPython's readline module does on a signal; the next handler_install starts an empty line)
      sys.sigint_take()
      lib.rl_free_line_state()
      lib.rl_callback_sigcleanup()
      lib.rl_cleanup_after_signal()
      RL.handler_remove()
      io.stdout:write('^C\n')
      io.stdout:flush()
      return false
    elseif ready[fd] then
      RL.read_char()
    end
  end
  if line == nil then io.stdout:write('\n') io.stdout:flush() end
  return line
end

return M
