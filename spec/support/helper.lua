-- Shared spec helpers. Every spec starts with:
--   local H = require 'spec.support.helper'
--   local torch = H.torch
-- It points package.path/cpath at the build tree ($MOONTORCH_BUILD_DIR, default ./build) unless
-- moontorch is already loadable (an installed rock).
local build = os.getenv('MOONTORCH_BUILD_DIR') or 'build'
package.path = build .. '/lua/?.lua;' .. build .. '/lua/?/init.lua;' .. package.path
package.cpath = build .. '/lib/?.so;' .. package.cpath

local torch = require 'moontorch'
local H = { torch = torch }

local function flat(x, out)
  out = out or {}
  if type(x) == 'table' then
    for i = 1, #x do flat(x[i], out) end
  else
    out[#out + 1] = x
  end
  return out
end
H.flat = flat

-- near(actual, expected, atol, rtol): actual a tensor or nested table/number, expected likewise.
-- Fails naming the worst index.
function H.near(actual, expected, atol, rtol)
  atol = atol or 1e-5
  rtol = rtol or 1e-5
  if torch.is_tensor(actual) then actual = actual:tolist() end
  if torch.is_tensor(expected) then expected = expected:tolist() end
  local a, e = flat(actual), flat(expected)
  if #a ~= #e then error(('near: %d values, expected %d'):format(#a, #e), 2) end
  local worst, wi = -1, nil
  for i = 1, #a do
    local x, y = a[i], e[i]
    if type(x) == 'boolean' or type(y) == 'boolean' then
      if x ~= y then error(('near: value %d is %s, expected %s'):format(i, tostring(x), tostring(y)), 2) end
    elseif y ~= y then
      if x == x then error(('near: value %d is %s, expected nan'):format(i, tostring(x)), 2) end
    elseif y == math.huge or y == -math.huge then
      if x ~= y then error(('near: value %d is %s, expected %s'):format(i, tostring(x), tostring(y)), 2) end
    else
      local err = math.abs(x - y) - (atol + rtol * math.abs(y))
      if err > worst then worst, wi = err, i end
    end
  end
  if worst > 0 then
    error(('near: value %d is %.9g, expected %.9g'):format(wi, a[wi], e[wi]), 2)
  end
  return true
end

-- errors_with(fn, pattern): fn must raise an error whose message contains `pattern` (plain text)
function H.errors_with(fn, pattern)
  local ok, err = pcall(fn)
  if ok then error('expected an error containing "' .. pattern .. '", got none', 2) end
  if not tostring(err):find(pattern, 1, true) then
    error('expected an error containing "' .. pattern .. '", got: ' .. tostring(err), 2)
  end
  return err
end

-- shape as a plain array
function H.shape(t)
  local s = t:size()
  local r = {}
  for i = 1, #s do r[i] = s[i] end
  return r
end

-- a file's bytes, and writing bytes to a file (for specs that build or damage files)
function H.read_file(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end
function H.write_file(path, s)
  local f = assert(io.open(path, 'wb'))
  f:write(s)
  f:close()
end

return H
