-- The side of the distributed specs that runs inside each rank (started by mpirun from
-- spec/distributed_spec.lua): package paths as the helper sets them, and checks that write one
-- line each, `ok <name>` or `FAIL <name>: <why>`, prefixed with the rank ("[1] ok ..."), which the
-- spec reads back: to $DIST_SPEC_DIR/rank<r>.txt (mpirun's merged stdout can glue lines of
-- different ranks), else stdout. A check that raises fails; the worker goes on with the next one.
local build = os.getenv('MOONTORCH_BUILD_DIR') or 'build'
package.path = build .. '/lua/?.lua;' .. build .. '/lua/?/init.lua;' .. package.path
package.cpath = build .. '/lib/?.so;' .. package.cpath

local torch = require 'moontorch'
local W = { torch = torch, dist = require 'moontorch.distributed' }
W.rank = -1

local out
local function say(s)
  if not out then
    local dir = os.getenv('DIST_SPEC_DIR')
    out = dir and W.rank >= 0 and assert(io.open(('%s/rank%d.txt'):format(dir, W.rank), 'w')) or io.stdout
  end
  out:write(('[%d] %s\n'):format(W.rank, s))
  out:flush()
end
W.say = say

function W.check(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then say('ok ' .. name) else say('FAIL ' .. name .. ': ' .. tostring(err):gsub('\n', ' | ')) end
  return ok
end

-- a and b equal in dtype, shape and every value
function W.eq(a, b, what)
  if a.dtype ~= b.dtype then error(('%s: dtype %s, want %s'):format(what or '', tostring(a.dtype), tostring(b.dtype)), 2) end
  if not torch.equal(a, b) then
    error(('%s: got %s, want %s'):format(what or '', tostring(a):gsub('\n', ' '), tostring(b):gsub('\n', ' ')), 2)
  end
end

-- |a - b| <= atol + rtol |b| everywhere (float64 compare)
function W.near(a, b, atol, rtol, what)
  local d = (a:double() - b:double()):abs()
  local lim = b:double():abs() * (rtol or 0) + (atol or 0)
  if d:gt(lim):any() then
    error(('%s: worst difference %g (atol %g, rtol %g)'):format(what or '', d:max():item(), atol or 0, rtol or 0), 2)
  end
end

-- fn must raise an error whose message contains `text` (plain)
function W.raises(fn, text)
  local ok, err = pcall(fn)
  if ok then error('expected an error containing "' .. text .. '", got none', 2) end
  if not tostring(err):find(text, 1, true) then error(('expected an error containing "%s", got: %s'):format(text, tostring(err)), 2) end
  return err
end

return W
