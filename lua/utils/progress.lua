-- moontorch.utils.progress: a progress bar for any loop.
--   local progress = require 'moontorch.utils.progress'
--   for i, batch in progress(loader, { desc = 'epoch 1' }) do ... progress.set { loss = l } end
--   local bar = progress.new { total = 100, desc = 'train' }
--   for i = 1, 100 do ...; bar:update { loss = l } end
--   bar:close()
-- On a terminal it redraws one line in place (at most every 0.1 s):
--   epoch 1  45%|█████▍      | 450/1000 [00:03<00:04, 130.21 it/s, loss=0.3412]
-- When the output is not a terminal it prints that line plainly, every `interval` seconds (5) and
-- when the loop ends. Fields (loss=, acc=, anything) print in the order first given.
local unpack = unpack or table.unpack

local M = {}
local Bar = {}
Bar.__index = Bar

local libc = require 'moontorch.libc' -- private names: nothing declared in ffi.C that a user may declare
local wall = libc.monotonic

local function isatty(out)
  if out == io.stdout then return libc.isatty(1) == 1 end
  if out == io.stderr then return libc.isatty(2) == 1 end
  return false
end

local function columns()
  local ok, sys = pcall(require, 'moontorch.repl.sys')
  if ok then return sys.columns(1) end
  return tonumber(os.getenv('COLUMNS')) or 80
end

local function clock_text(s)
  if s == nil or s ~= s or s == math.huge then return '?' end
  s = math.floor(s + 0.5)
  local h, m = math.floor(s / 3600), math.floor(s / 60) % 60
  if h > 0 then return ('%d:%02d:%02d'):format(h, m, s % 60) end
  return ('%02d:%02d'):format(m, s % 60)
end

local function value_text(v)
  if type(v) == 'number' then
    if v == math.floor(v) and math.abs(v) < 1e15 then return ('%d'):format(v) end
    return ('%.4g'):format(v)
  end
  local torch = package.loaded['moontorch']
  if type(v) == 'cdata' and torch and torch.is_tensor(v) and v:numel() == 1 then
    return ('%.4g'):format(v:item())
  end
  return tostring(v)
end

-- seconds on a monotonic clock (for timing a loop beside its bar)
M.clock = wall

local active -- the bar progress.set updates

-- new{ total =, desc =, out = (io.stdout), tty = (out is a terminal), interval = (5 s plain lines),
-- width = (terminal columns), unit = ('it'), clock = (a function giving seconds) }
function M.new(opts)
  opts = opts or {}
  if opts.total ~= nil and (type(opts.total) ~= 'number' or opts.total < 0) then
    error(('moontorch.utils.progress: total must be a non-negative number, got %s'):format(tostring(opts.total)), 2)
  end
  local out = opts.out or io.stdout
  local self = setmetatable({
    total = opts.total, desc = opts.desc, out = out, n = 0, fields = {}, order = {},
    unit = opts.unit or 'it', clock = opts.clock or wall, interval = opts.interval or 5,
    width = opts.width, closed = false,
  }, Bar)
  if opts.tty == nil then self.tty = isatty(out) else self.tty = opts.tty end
  self.start = self.clock()
  self.last_draw = -math.huge
  active = self
  if self.tty then self:draw() end
  return self
end

-- set{ name = value, ... }: the fields shown after the rate (loss=, acc=, ...), without advancing
function Bar:set(fields)
  for k, v in pairs(fields or {}) do
    if self.fields[k] == nil then self.order[#self.order + 1] = k end
    self.fields[k] = v
  end
  table.sort(self.order, function(a, b) return tostring(a) < tostring(b) end)
  return self
end

-- update(fields or n, fields): advance by n (1) steps, set the fields, redraw when it is time
function Bar:update(a, b)
  local n, fields = 1, a
  if type(a) == 'number' then n, fields = a, b end
  self.n = self.n + n
  if fields then self:set(fields) end
  local t = self.clock()
  local done = self.total and self.n >= self.total
  if self.tty then
    if t - self.last_draw >= 0.1 or done then self:draw(t) end
  elseif t - self.last_draw >= self.interval then
    self:draw(t)
  end
  return self
end

-- the line as it is now
function Bar:text(t)
  t = t or self.clock()
  local elapsed = t - self.start
  local rate = elapsed > 0 and self.n / elapsed or nil
  local parts = {}
  if self.desc then parts[#parts + 1] = self.desc .. ' ' end
  local tail = {}
  for _, k in ipairs(self.order) do tail[#tail + 1] = ('%s=%s'):format(k, value_text(self.fields[k])) end
  local rate_text = rate and ('%.2f %s/s'):format(rate, self.unit) or ('? %s/s'):format(self.unit)
  local extra = #tail > 0 and (', ' .. table.concat(tail, ', ')) or ''
  if self.total then
    local frac = self.total > 0 and math.min(1, self.n / self.total) or 1
    local eta = rate and rate > 0 and (self.total - self.n) / rate or nil
    local right = (' %d/%d [%s<%s, %s%s]'):format(self.n, self.total, clock_text(elapsed), clock_text(eta),
      rate_text, extra)
    local left = ('%3d%%'):format(math.floor(frac * 100))
    if self.tty then
      local width = self.width or columns()
      local room = width - (parts[1] and #parts[1] or 0) - #left - #right - 3
      room = math.max(5, math.min(room, 40))
      local eighths = { '', '▏', '▎', '▍', '▌', '▋', '▊', '▉' }
      local cells = frac * room
      local full = math.floor(cells)
      local bar = string.rep('█', full)
      if full < room then
        bar = bar .. eighths[math.floor((cells - full) * 8) + 1] .. string.rep(' ', room - full - 1)
      end
      parts[#parts + 1] = left .. '|' .. bar .. '|' .. right
    else
      parts[#parts + 1] = left .. right
    end
  else
    parts[#parts + 1] = ('%d [%s, %s%s]'):format(self.n, clock_text(elapsed), rate_text, extra)
  end
  return table.concat(parts)
end

function Bar:draw(t)
  t = t or self.clock()
  self.last_draw = t
  if self.tty then
    self.out:write('\r', self:text(t), '\27[K')
  else
    self.out:write(self:text(t), '\n')
  end
  self.out:flush()
end

-- close(fields): the final line (on a terminal: the bar left in place, then a newline)
function Bar:close(fields)
  if self.closed then return self end
  if fields then self:set(fields) end
  self.closed = true
  local t = self.clock()
  if self.tty then
    self:draw(t)
    self.out:write('\n')
    self.out:flush()
  elseif self.last_draw ~= t then
    self:draw(t)
  end
  if active == self then active = nil end
  return self
end

-- progress.set{ loss = ... }: set fields on the bar a wrapped loop is drawing
function M.set(fields)
  if active then active:set(fields) end
end

-- the iterator of `it`: a number n (1..n), an array (i, v), an object with __len and __call or
-- :iter() (a DataLoader), or an iterator function (total unknown unless given)
local function iterate(it)
  local t = type(it)
  if t == 'number' then
    local i = 0
    return function()
      i = i + 1
      if i <= it then return i end
    end, it
  end
  local mt = getmetatable(it)
  local total
  if t == 'table' or (t == 'userdata' or t == 'cdata') then
    -- (LuaJIT's # ignores a table's __len: called here)
    local okl, n = pcall(function() return mt and mt.__len and mt.__len(it) or #it end)
    if okl and type(n) == 'number' and (n > 0 or not (mt and (mt.__call or it.iter))) then total = n end
    local f, s, c
    if type(it.iter) == 'function' then
      f, s, c = it:iter()
    elseif mt and mt.__call then
      f, s, c = it()
    end
    if f ~= nil then
      if type(f) == 'function' then
        return function()
          local r = { f(s, c) }
          c = r[1]
          return unpack(r)
        end, total, true
      end
    end
    local i = 0
    return function()
      i = i + 1
      local v = it[i]
      if v ~= nil then return i, v end
    end, total, false
  end
  if t == 'function' then return it, nil, true end
  error('moontorch.utils.progress: cannot iterate a ' .. t
    .. ' (a number, a table, a loader or an iterator function)', 3)
end

-- progress(iterable, opts): iterates as `iterable` does, yielding (i, values...) where i counts
-- from 1 (a number n yields just i), drawing the bar as it goes
local function wrap(it, opts)
  opts = opts or {}
  local f, total, counted = iterate(it)
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  if o.total == nil then o.total = total end
  local bar = M.new(o)
  local i = 0
  local first = true
  return function()
    if not first then bar:update() end
    first = false
    if counted then
      local r = { f() }
      if r[1] == nil then bar:close() return nil end
      i = i + 1
      return i, unpack(r)
    else
      local a, b = f()
      if a == nil then bar:close() return nil end
      return a, b
    end
  end
end
M.wrap = wrap
function Bar:wrap(it)
  -- iterate `it` with this bar
  local f, total, counted = iterate(it)
  if self.total == nil then self.total = total end
  active = self
  local first, i = true, 0
  return function()
    if not first then self:update() end
    first = false
    local r = { f() }
    if r[1] == nil then self:close() return nil end
    if counted then i = i + 1 return i, unpack(r) end
    return unpack(r)
  end
end

return setmetatable(M, { __call = function(_, it, opts) return wrap(it, opts) end })
