-- The REPL's own line editor, used when Debian's lua-readline is not installed (or
-- MOONTORCH_LINE_EDITOR=builtin): the terminal in raw mode, one line edited in place.
-- Keys: Left/Right (Ctrl-B/F), Home/End (Ctrl-A/E), Backspace, Delete, Ctrl-D (delete, or EOF on
-- an empty line), Ctrl-K/U (kill to end/start), Ctrl-W (kill the word before), Ctrl-L (clear the
-- screen), Up/Down (Ctrl-P/N) through the history, Tab (complete), Ctrl-C (abandon the line).
-- History: one entry per line in the history file, appended as each line is entered.
local sys = require 'moontorch.repl.sys'

local M = {}
M.__index = M
M.name = 'builtin'

local MAX_HISTORY = 1000

-- new{ history = path, complete = fn(word) -> list of full words }
function M.new(opts)
  local self = setmetatable({ history = {}, path = opts.history, complete = opts.complete,
    fd = 0, out = 1 }, M)
  if self.path then
    local f = io.open(self.path, 'r')
    if f then
      for line in f:lines() do self.history[#self.history + 1] = line end
      f:close()
    end
    -- keep the file short: rewrite it when it grew past twice the limit
    if #self.history > 2 * MAX_HISTORY then
      local keep = {}
      for i = #self.history - MAX_HISTORY + 1, #self.history do keep[#keep + 1] = self.history[i] end
      self.history = keep
      local w = io.open(self.path, 'w')
      if w then w:write(table.concat(keep, '\n'), '\n') w:close() end
    end
  end
  return self
end

function M:add_history(line)
  if line:find('%S') == nil or line == self.history[#self.history] then return end
  self.history[#self.history + 1] = line
  if self.path then
    local f = io.open(self.path, 'a')
    if f then f:write(line, '\n') f:close() end
  end
end

function M:close() end

local function common_prefix(list)
  local p = list[1]
  for i = 2, #list do
    local s = list[i]
    local n = 0
    while n < #p and n < #s and p:byte(n + 1) == s:byte(n + 1) do n = n + 1 end
    p = p:sub(1, n)
  end
  return p
end

-- the candidates in columns under the line
local function show_list(self, list)
  local width = 0
  for _, s in ipairs(list) do width = math.max(width, #s) end
  width = width + 2
  local cols = math.max(1, math.floor(sys.columns(self.out) / width))
  local rows = math.ceil(#list / cols)
  local out = { '\r\n' }
  for r = 1, rows do
    for c = 1, cols do
      local s = list[(c - 1) * rows + r]
      if s then out[#out + 1] = s .. string.rep(' ', width - #s) end
    end
    out[#out + 1] = '\r\n'
  end
  sys.write(self.out, table.concat(out))
end

-- read(prompt): the line (without its newline), nil at end of input (Ctrl-D on an empty line),
-- false when Ctrl-C abandoned it
function M:read(prompt)
  local saved = sys.raw(self.fd)
  if not saved then -- not a terminal after all: a plain read
    io.write(prompt) io.flush()
    return io.read('*l')
  end
  local buf, pos = '', 0                -- the line, the cursor (characters before it)
  local hist, hpos = self.history, #self.history + 1
  local edits = {}                        -- lines edited while browsing history, by position
  local function redraw()
    local s = '\r' .. prompt .. buf .. '\27[K'
    if pos < #buf then s = s .. '\27[' .. (#buf - pos) .. 'D' end
    sys.write(self.out, s)
  end
  local function go(h)
    if h < 1 or h > #hist + 1 then return end
    edits[hpos] = buf
    hpos = h
    buf = edits[h] or hist[h] or ''
    pos = #buf
  end
  redraw()
  local result
  while true do
    local c = sys.read_byte(self.fd)
    if c == nil then result = nil break end
    if c == 13 or c == 10 then            -- Enter
      sys.write(self.out, '\r\n')
      result = buf
      break
    elseif c == 3 then                    -- Ctrl-C
      sys.write(self.out, '^C\r\n')
      result = false
      break
    elseif c == 4 then                    -- Ctrl-D
      if buf == '' then sys.write(self.out, '\r\n') result = nil break end
      buf = buf:sub(1, pos) .. buf:sub(pos + 2)
    elseif c == 127 or c == 8 then        -- Backspace
      if pos > 0 then buf, pos = buf:sub(1, pos - 1) .. buf:sub(pos + 1), pos - 1 end
    elseif c == 1 then pos = 0            -- Ctrl-A
    elseif c == 5 then pos = #buf         -- Ctrl-E
    elseif c == 2 then pos = math.max(0, pos - 1)      -- Ctrl-B
    elseif c == 6 then pos = math.min(#buf, pos + 1)   -- Ctrl-F
    elseif c == 11 then buf = buf:sub(1, pos)          -- Ctrl-K
    elseif c == 21 then buf, pos = buf:sub(pos + 1), 0 -- Ctrl-U
    elseif c == 23 then                   -- Ctrl-W
      local before = buf:sub(1, pos):gsub('%s*$', ''):gsub('[^%s]*$', '')
      buf, pos = before .. buf:sub(pos + 1), #before
    elseif c == 12 then sys.write(self.out, '\27[H\27[2J') -- Ctrl-L
    elseif c == 16 then go(hpos - 1)      -- Ctrl-P
    elseif c == 14 then go(hpos + 1)      -- Ctrl-N
    elseif c == 9 then                    -- Tab
      local word = buf:sub(1, pos):match('[%w_%.:%[%]\'"]*$')
      word = word:match('[%a_][%w_%.:]*$') or ''
      local list = self.complete and self.complete(word, buf:sub(1, pos)) or {}
      if #list > 0 then
        local p = common_prefix(list)
        if #p > #word then
          buf = buf:sub(1, pos - #word) .. p .. buf:sub(pos + 1)
          pos = pos - #word + #p
        elseif #list > 1 then
          show_list(self, list)
        end
      end
    elseif c == 27 then                   -- escape sequences
      local c1 = sys.read_byte(self.fd, 50)
      if c1 == 91 or c1 == 79 then        -- ESC [ or ESC O
        local seq = ''
        while true do
          local d = sys.read_byte(self.fd, 50)
          if not d then break end
          seq = seq .. string.char(d)
          if d >= 64 and d <= 126 then break end
        end
        if seq == 'A' then go(hpos - 1)
        elseif seq == 'B' then go(hpos + 1)
        elseif seq == 'C' then pos = math.min(#buf, pos + 1)
        elseif seq == 'D' then pos = math.max(0, pos - 1)
        elseif seq == 'H' or seq == '1~' or seq == '7~' then pos = 0
        elseif seq == 'F' or seq == '4~' or seq == '8~' then pos = #buf
        elseif seq == '3~' then buf = buf:sub(1, pos) .. buf:sub(pos + 2)
        end
      elseif c1 == 98 then                -- Alt-B: a word left
        pos = #(buf:sub(1, pos):gsub('[%w_]*[^%w_]*$', ''))
      elseif c1 == 102 then               -- Alt-F: a word right
        local rest = buf:sub(pos + 1):match('^[^%w_]*[%w_]*')
        pos = pos + #rest
      end
    elseif c >= 32 then                   -- text (UTF-8 bytes go in as they come)
      buf, pos = buf:sub(1, pos) .. string.char(c) .. buf:sub(pos + 1), pos + 1
    end
    redraw()
  end
  sys.restore(self.fd, saved)
  return result
end

return M
