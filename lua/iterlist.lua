-- torch.List: the arrays that parameters(), buffers(), children() and modules() return, which
-- also iterate the Python way: `for p in model:parameters() do` (PyTorch's generator) as well as
-- `for i, p in ipairs(list)`, `#list` and `list[i]` (a plain Lua array otherwise: items at 1..n,
-- nothing else in the table). Called as an iterator it gives the item after the one it gave last
-- (found by identity, so loops over one list may nest); items are distinct objects.
local class = require 'moontorch.class'

local rawget, rawequal, setmetatable = rawget, rawequal, setmetatable

local List = class.class('torch.List')
local cursor = setmetatable({}, { __mode = 'k' }) -- list -> the position it gave last

List.__call = function(list, _, prev)
  if prev == nil then
    cursor[list] = 1
    return rawget(list, 1)
  end
  local i = cursor[list]
  if i == nil or not rawequal(rawget(list, i), prev) then -- another loop over the list moved it
    i = nil
    for j = 1, #list do
      if rawequal(rawget(list, j), prev) then i = j break end
    end
    if i == nil then return nil end
  end
  cursor[list] = i + 1
  return rawget(list, i + 1)
end

function List.__tostring(list)
  local parts = {}
  for i = 1, #list do parts[i] = tostring(list[i]) end
  return '[' .. table.concat(parts, ', ') .. ']'
end

-- of(t): the array t, made a torch.List
function List.of(t) return setmetatable(t, List) end

function List.is(v) return getmetatable(v) == List end

return List
