-- torch.Timer: Torch7's timer. It counts from its creation; time() returns the seconds counted so
-- far as {real = wall, user = CPU in user mode, sys = CPU in system mode} (the CPU times are the
-- whole process's, all threads, from getrusage); stop() pauses it, resume() goes on, reset()
-- sets it to 0 (a stopped timer stays stopped). Each method returns the timer.
--   local timer = torch.Timer()
--   train()
--   print(('%.3f s'):format(timer:time().real))
local class = require 'moontorch.class'
local libc = require 'moontorch.libc'

local monotonic, cpu_times = libc.monotonic, libc.cpu_times

local Timer = class.class('torch.Timer')

local function now()
  local user, sys = cpu_times()
  return monotonic(), user, sys
end

function Timer:__init()
  self._running = true
  self._real, self._user, self._sys = 0, 0, 0
  self._start_real, self._start_user, self._start_sys = now()
end

function Timer:reset()
  self._real, self._user, self._sys = 0, 0, 0
  self._start_real, self._start_user, self._start_sys = now()
  return self
end

function Timer:stop()
  if self._running then
    local r, u, s = now()
    self._real = self._real + (r - self._start_real)
    self._user = self._user + (u - self._start_user)
    self._sys = self._sys + (s - self._start_sys)
    self._running = false
  end
  return self
end

function Timer:resume()
  if not self._running then
    self._start_real, self._start_user, self._start_sys = now()
    self._running = true
  end
  return self
end

function Timer:time()
  if not self._running then return { real = self._real, user = self._user, sys = self._sys } end
  local r, u, s = now()
  return { real = self._real + (r - self._start_real), user = self._user + (u - self._start_user),
    sys = self._sys + (s - self._start_sys) }
end

function Timer:__tostring()
  local t = self:time()
  return ('torch.Timer(real=%.6f, user=%.6f, sys=%.6f%s)'):format(t.real, t.user, t.sys,
    self._running and '' or ', stopped')
end

return Timer
