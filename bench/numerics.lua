-- bench/numerics.lua: which ops give PyTorch's numbers to the bit, and the others within how many ULP
-- (issue 27, part 3 "Numbers"; the table in README.md, "Numbers"). Run from the repository root after a
-- build:  luajit bench/numerics.lua   (BENCH_PYTHON: the PyTorch to compare with, /usr/bin/python3)
--
-- Inputs, the same bytes on both sides: x is 2^20 float32 (float64) values spread over every bit pattern
-- (every 4093rd 32-bit pattern: all signs and exponents, denormals, infinities and NaNs; float64: the
-- same patterns as the high halves), then 2^20 values evenly spaced in [-10, 10]; y is x reversed (the
-- second operand of the binary ops). Each op runs once over the whole array, contiguous, so both sides
-- take their vectorised paths where they have them (PyTorch's on this CPU: AVX2, Sleef's vector math).
-- A result counts as identical when its bits are, NaN matching NaN whatever the payload; otherwise its
-- distance in ULP is the count of representable values between the two (a NaN against a number: "NaN").
-- Prints one line per op and dtype, then the markdown table.
local build = os.getenv('MOONTORCH_BUILD_DIR') or 'build'
package.path = build .. '/lua/?.lua;' .. build .. '/lua/?/init.lua;' .. package.path
package.cpath = build .. '/lib/?.so;' .. package.cpath
local ffi = require 'ffi'
local torch = require 'moontorch'
local F = require('moontorch.nn').functional
torch.set_num_threads(tonumber(os.getenv('BENCH_THREADS') or 2))
local python = os.getenv('BENCH_PYTHON') or '/usr/bin/python3'
local dir = os.getenv('BENCH_NUMERICS_DIR') or 'bench/out/numerics'
os.execute('mkdir -p ' .. dir)

-- the ops: name, ours (x, y), PyTorch's expression (bench/numerics_ops.lua, shared with spec/numerics_spec.lua)
local ops = dofile('bench/numerics_ops.lua')(torch, F)

-- the inputs
local N = 2 ^ 20
local function inputs(dt)
  local x = torch.empty(2 * N, { dtype = dt })
  local xp = ffi.cast(dt == torch.float32 and 'uint32_t *' or 'uint64_t *', x:data_ptr())
  for i = 0, N - 1 do
    local bits = (i * 4093) % 4294967296
    if dt == torch.float32 then xp[i] = bits else xp[i] = ffi.cast('uint64_t', bits) * 4294967296ULL + (i * 7919) % 4294967296 end
  end
  x:narrow(1, N + 1, N):copy_(torch.linspace(-10, 10, N, { dtype = torch.float64 }))
  return x, x:flip(1):contiguous()
end

local function write(path, t)
  local f = assert(io.open(path, 'wb'))
  f:write(ffi.string(t:data_ptr(), t:numel() * t:element_size()))
  f:close()
end
local function read_into(path, t)
  local f = io.open(path, 'rb')
  if not f then return false end
  local s = f:read('*a')
  f:close()
  if #s ~= t:numel() * t:element_size() then return false end
  ffi.copy(t:data_ptr(), s, #s)
  return true
end

local lines = {}
for _, op in ipairs(ops) do lines[#lines + 1] = op[1] .. '|' .. op[3] end
local f = assert(io.open(dir .. '/ops.txt', 'w'))
f:write(table.concat(lines, '\n'), '\n')
f:close()
local X = {}
for _, d in ipairs({ { 'f32', torch.float32 }, { 'f64', torch.float64 } }) do
  local x, y = inputs(d[2])
  write(('%s/%s_x.bin'):format(dir, d[1]), x)
  write(('%s/%s_y.bin'):format(dir, d[1]), y)
  X[d[1]] = { x, y, d[2] }
end
local ok = os.execute(('OMP_WAIT_POLICY=PASSIVE %s bench/numerics.py %s'):format(python, dir))
if not (ok == true or ok == 0) then error('bench/numerics.py failed') end
local version = io.popen(python .. " -c 'import torch; print(torch.__version__)'"):read('*l')

-- ULP distance of two values given as ordered integers (NaN handled by the caller)
local function compare(a, b, dt)
  local n = a:numel()
  local ident, maxulp, nanmis, ndiff = 0, 0, 0, 0
  if dt == torch.float32 then
    -- bits only: a float NaN read into a Lua number can carry a payload LuaJIT takes for another type
    local pa, pb = ffi.cast('const uint32_t *', a:data_ptr()), ffi.cast('const uint32_t *', b:data_ptr())
    for i = 0, n - 1 do
      local u, v = pa[i], pb[i]
      if u == v then ident = ident + 1
      else
        local an, bn = bit.band(u, 0x7fffffff) > 0x7f800000, bit.band(v, 0x7fffffff) > 0x7f800000
        if an and bn then ident = ident + 1
        elseif an or bn then nanmis = nanmis + 1
        else
          ndiff = ndiff + 1
          local ou = u >= 0x80000000 and (0x80000000 - u) or u
          local ov = v >= 0x80000000 and (0x80000000 - v) or v
          local d = math.abs(ou - ov)
          if d > maxulp then maxulp = d end
        end
      end
    end
  else
    local pa, pb = ffi.cast('const int64_t *', a:data_ptr()), ffi.cast('const int64_t *', b:data_ptr())
    local MIN = ffi.cast('int64_t', -9223372036854775807LL - 1)
    local ABS, INF = 0x7fffffffffffffffLL, 0x7ff0000000000000LL
    for i = 0, n - 1 do
      local u, v = pa[i], pb[i]
      if u == v then ident = ident + 1
      else
        local an, bn = bit.band(u, ABS) > INF, bit.band(v, ABS) > INF
        if an and bn then ident = ident + 1
        elseif an or bn then nanmis = nanmis + 1
        else
          ndiff = ndiff + 1
          local ou = u < 0 and (MIN - u) or u
          local ov = v < 0 and (MIN - v) or v
          local d = tonumber(ou > ov and ou - ov or ov - ou)
          if d > maxulp then maxulp = d end
        end
      end
    end
  end
  -- a and b stay referenced until here: the pointers above read their memory
  assert(a:numel() == n and b:numel() == n)
  return ident, ndiff, maxulp, nanmis
end

-- the two halves apart: every bit pattern (the whole range: extremes, denormals, infinities, NaNs), and
-- [-10, 10] (where a network's values live)
local halves = { { 0, 'whole range' }, { N, '[-10, 10]' } }
local results = {}
for _, op in ipairs(ops) do
  local row = { op[1] }
  for _, dn in ipairs({ 'f32', 'f64' }) do
    local x, y, dt = X[dn][1], X[dn][2], X[dn][3]
    local ours = op[2](x, y):contiguous():view(-1)
    local theirs = torch.empty(ours:numel(), { dtype = dt })
    local have = ours.dtype == dt and read_into(('%s/torch_%s_%s.bin'):format(dir, dn, op[1]), theirs)
    for h, half in ipairs(halves) do
      local cell = { err = 'n/a' }
      if have then
        local ident, ndiff, maxulp, nanmis = compare(ours:narrow(1, half[1] + 1, N), theirs:narrow(1, half[1] + 1, N), dt)
        cell = { ident = ident, n = N, ndiff = ndiff, maxulp = maxulp, nanmis = nanmis }
      end
      row[#row + 1] = cell
      local c = cell
      print(('%-11s %s %-11s identical %7d of %7d (%6.2f%%)  differing %7d  max %s ULP  NaN vs number %d'):format(op[1], dn,
        half[2], c.ident or 0, c.n or 0, c.n and 100 * c.ident / c.n or 0, c.ndiff or 0, tostring(c.maxulp), c.nanmis or 0))
    end
    io.stdout:flush()
  end
  results[#results + 1] = row
end

local function ulps(u)
  if u < 1e6 then return ('%d'):format(u) end
  return ('2^%.0f'):format(math.log(u) / math.log(2))
end
local function show(c)
  if c.err then return c.err end
  if c.ident == c.n then return 'identical' end
  local s = ('%.2g%% differ, ≤ %s ULP'):format(100 * (c.n - c.ident) / c.n, ulps(c.maxulp))
  if c.ndiff == 0 then s = ('%.2g%% differ'):format(100 * (c.n - c.ident) / c.n) end
  if c.nanmis > 0 then s = s .. (', %d NaN vs number'):format(c.nanmis) end
  return s
end
print()
print(('| op, against PyTorch %s | float32, [-10, 10] | float32, whole range | float64, [-10, 10] | float64, whole range |'):format(version))
print('| --- | --- | --- | --- | --- |')
for _, r in ipairs(results) do
  print(('| `%s` | %s | %s | %s | %s |'):format(r[1], show(r[3]), show(r[2]), show(r[5]), show(r[4])))
end
