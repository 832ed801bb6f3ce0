-- The op list of the C core (MT_OP_LIST in core/moontorch.h), read through mt_op_count and
-- mt_op_info_of: every op once, with its id, kind, arity, differentiability, kernel slot, how it is
-- bound (PLAIN ops get their bindings made from the list by lua/ops/elementwise.lua), the names of
-- a unary op's parameters and its other public names. No other list of op names exists.
-- The list is read when the bindings are made and then dropped: a Lua heap that stays small keeps
-- every garbage collection short.
local ffi = require 'ffi'
local C = require('moontorch.ffi').C

local function words(s)
  local t = {}
  for w in s:gmatch('%S+') do t[#t + 1] = w end
  return t
end

local M = {}

-- every op, in list order: { {id = 0, name = 'neg', kind = 'UNARY_KEEP', ...}, ... }, read afresh
function M.ops()
  local ops = {}
  for i = 0, C.mt_op_count() - 1 do
    local info = C.mt_op_info_of(i)
    ops[i + 1] = {
      id = i,
      name = ffi.string(info.name),
      kind = ffi.string(info.kind),
      arity = info.arity,
      differentiable = info.differentiable ~= 0,
      kernel = ffi.string(info.kernel),
      binding = ffi.string(info.binding),
      params = words(ffi.string(info.params)),
      aliases = words(ffi.string(info.aliases)),
    }
  end
  return ops
end

-- the op of a name (nil if the list has none)
function M.find(name)
  for _, op in ipairs(M.ops()) do
    if op.name == name then return op end
  end
  return nil
end

-- ids by name of one family's ops (prefix 'UNARY', 'BINARY' or 'REDUCE'); asking for a name that
-- is not among them is an error
function M.ids(prefix)
  local t = {}
  for i = 0, C.mt_op_count() - 1 do
    local info = C.mt_op_info_of(i)
    if ffi.string(info.kind):sub(1, #prefix) == prefix then t[ffi.string(info.name)] = i end
  end
  return setmetatable(t, {
    __index = function(_, k) error('moontorch: no ' .. prefix:lower() .. ' op named ' .. tostring(k), 2) end,
  })
end

-- Give every op's other names to the tables that have its binding: torch.f, t:f and t:f_
-- (an alias 'special.f' goes to torch.special).
function M.install_aliases(torch, methods)
  for _, op in ipairs(M.ops()) do
    for _, alias in ipairs(op.aliases) do
      local ns, short = alias:match('^(%w+)%.(.+)$')
      if ns then
        torch[ns] = torch[ns] or {}
        torch[ns][short] = torch[op.name]
      else
        if torch[op.name] ~= nil and torch[alias] == nil then torch[alias] = torch[op.name] end
        if methods[op.name] ~= nil and methods[alias] == nil then methods[alias] = methods[op.name] end
        if methods[op.name .. '_'] ~= nil and methods[alias .. '_'] == nil then
          methods[alias .. '_'] = methods[op.name .. '_']
        end
      end
    end
  end
end

return M
