-- Every path of the float32 exp, log, tanh and sigmoid kernels on this machine: AVX-512
-- (core/tensor/vmath512.c), AVX2 (core/tensor/vmath.c) and the scalar libm kernels, each forced with
-- MOONTORCH_VMATH=avx512 / avx2 / 0 in a child process (the level is read once per process). A path
-- the CPU lacks is reported, not run (MOONTORCH_VMATH asks for a level, the CPU's best below it runs).
-- Run: MOONTORCH_BUILD_DIR=build luajit /usr/bin/busted spec/vmath_paths_spec.lua
--
-- The child reads the inputs from a file of raw float32 values and writes each op's results the same
-- way; this file compares them with float64 references (LuaJIT's math library on the float32 input):
-- ULP error over about 2^20 inputs (bit patterns spread over all of float32, both signs, the
-- denormals, consecutive floats around each overflow, underflow and branch boundary), IEEE values at
-- the edges, NaN payloads, and the vector tails (slices of every length from 1 to 40 agree with the
-- whole array bit for bit).
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'
local C = require('moontorch.ffi').C

local inf, nan = math.huge, 0 / 0
local exp, log, tanh, frexp, abs = math.exp, math.log, math.tanh, math.frexp, math.abs
local build = os.getenv('MOONTORCH_BUILD_DIR') or 'build'

local OPS = { 'exp', 'log', 'tanh', 'sigmoid' }
local REF = {
  exp = exp,
  log = log,
  tanh = tanh,
  sigmoid = function(x) return 1 / (1 + exp(-x)) end,
}
local BOUNDS = {
  exp = { 88.72283935546875, -87.336544, -103.972076, -0.3465736, 0.3465736 },
  log = { 1, 0.70710677, 1.4142135, 2 ^ -126, 3.4028235e38 },
  tanh = { 0.5493, -0.5493, 9.01, -9.01 },
  sigmoid = { -87.336544, -103.972076, 16.6, -88.72283935546875, -100 },
}

local u32f = ffi.new('union { float f; uint32_t u; }')
-- a NaN's bits are never read as a float: LuaJIT takes some NaN bit patterns for other values
local function from_bits(u)
  u = tonumber(u)
  if u % 2 ^ 31 > 0x7f800000 then return nan end
  u32f.u = u
  return u32f.f
end
local function bits(x)
  u32f.f = x
  return u32f.u
end
local FLT_INF_AT = 2 ^ 128 - 2 ^ 103

local function ulp_err(got, ref)
  if ref ~= ref then return got ~= got and 0 or inf end
  if got ~= got then return inf end
  local a = abs(ref)
  if a >= FLT_INF_AT then return got == (ref > 0 and inf or -inf) and 0 or inf end
  if got == inf then got = 2 ^ 128 elseif got == -inf then got = -2 ^ 128 end
  local ulp = 2 ^ -149
  if a >= 2 ^ -126 then
    local _, e = frexp(a)
    ulp = 2 ^ (e - 24)
  end
  return abs(got - ref) / ulp
end

-- NaNs with payloads (quiet, both signs): the vector paths hand back the input's bits
local NAN_BITS = { 0x7fc00000, 0xffc00000, 0x7fc00001, 0x7fd2345f, 0xffe00abc, 0x7fffffff, 0xffffffff }
local EDGE = { 0, -0.0, inf, -inf, 2 ^ -149, -2 ^ -149, 2 ^ -126, -2 ^ -126, 1e30, -1e30, 89, -89, 200, -200,
  1, -1, 3.4028234663852886e38, -3.4028234663852886e38 }

-- the inputs, as uint32 bit patterns: 2^19 spread over all floats, 2^13 around each boundary of
-- every op, edges, NaNs; an odd count, so every path ends on a tail
local function inputs()
  local v = {}
  for i = 0, 2 ^ 19 - 1 do v[#v + 1] = (i * 8192 + (i * 2654435761) % 8192) % 2 ^ 32 end
  for _, op in ipairs(OPS) do
    for _, b in ipairs(BOUNDS[op]) do
      local u = bits(b)
      for k = -4096, 4095 do v[#v + 1] = u + k end
    end
  end
  for k = 0, 4095 do v[#v + 1] = k; v[#v + 1] = 0x80000000 + k end -- denormals of both signs
  for _, x in ipairs(EDGE) do v[#v + 1] = bits(x) end
  for _, u in ipairs(NAN_BITS) do v[#v + 1] = u end
  v[#v + 1] = bits(0.5)
  if #v % 2 == 0 then v[#v + 1] = bits(0.25) end
  return v
end

local function write_floats(path, u)
  local n = #u
  local buf = ffi.new('uint32_t[?]', n)
  for i = 1, n do buf[i - 1] = u[i] end
  local f = assert(io.open(path, 'wb'))
  f:write(ffi.string(buf, n * 4))
  f:close()
end
local function read_u32(path, n)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  assert(#s == n * 4, path .. ': ' .. #s .. ' bytes, expected ' .. n * 4)
  local buf = ffi.new('uint32_t[?]', n)
  ffi.copy(buf, s, n * 4)
  return buf
end

-- the child: reads N floats from IN, writes OUT.<op> for each op, and the tails check (slices of
-- lengths 1..40 at two offsets, compared bit for bit with the whole array), and prints its level
local CHILD = [[
package.path = '%s/lua/?.lua;%s/lua/?/init.lua;' .. package.path
package.cpath = '%s/lib/?.so;' .. package.cpath
local ffi = require 'ffi'
local torch = require 'moontorch'
local C = require('moontorch.ffi').C
local n, inp = %d, '%s'
local f = assert(io.open(inp, 'rb'))
local s = f:read('*a')
f:close()
local x = torch.empty(n)
ffi.copy(ffi.cast('float *', x:data_ptr()), s, n * 4)
io.write('level ', ffi.string(C.mt_kernels_simd()), '\n')
for _, op in ipairs({ 'exp', 'log', 'tanh', 'sigmoid' }) do
  local y = torch[op](x)
  local o = assert(io.open(inp .. '.' .. op, 'wb'))
  o:write(ffi.string(ffi.cast('const char *', y:data_ptr()), n * 4))
  o:close()
  local py = ffi.cast('const uint32_t *', y:data_ptr())
  local bad = 0
  for _, off in ipairs({ 0, 5, n - 45 }) do
    for len = 1, 40 do
      local z = torch[op](x:narrow(1, off + 1, len))
      local pz = ffi.cast('const uint32_t *', z:data_ptr())
      for i = 0, len - 1 do if pz[i] ~= py[off + i] then bad = bad + 1 end end
    end
  end
  io.write('tails ', op, ' ', bad, '\n')
end
]]

local function run_path(level, u)
  local inp = os.tmpname()
  write_floats(inp, u)
  local script = os.tmpname()
  local sf = assert(io.open(script, 'w'))
  sf:write(CHILD:format(build, build, build, #u, inp))
  sf:close()
  local p = assert(io.popen(('MOONTORCH_VMATH=%s luajit %s 2>&1'):format(level, script)))
  local out = p:read('*a')
  p:close()
  os.remove(script)
  local res = { out = out, level = out:match('level (%w+)'), tails = {}, y = {} }
  for op, bad in out:gmatch('tails (%w+) (%d+)') do res.tails[op] = tonumber(bad) end
  for _, op in ipairs(OPS) do
    local path = inp .. '.' .. op
    if io.open(path, 'rb') then
      res.y[op] = read_u32(path, #u)
      os.remove(path)
    end
  end
  os.remove(inp)
  return res
end

local HAVE = H.cpu_levels()

describe('vmath paths', function()
  local U = inputs()
  local xs = {}
  for i = 1, #U do xs[i] = from_bits(U[i]) end

  for _, level in ipairs({ 'avx512', 'avx2', 'scalar' }) do
    local name = level == 'scalar' and '0' or level
    if not HAVE[level] then
      it(level .. ': this CPU lacks it, so MOONTORCH_VMATH=' .. name .. ' falls back to a lower level', function()
        local r = run_path(name, { bits(1) })
        assert.are_not.equal(level, r.level, r.out)
      end)
    else
      it(level .. ' (MOONTORCH_VMATH=' .. name .. '): exp, log, tanh, sigmoid against float64 over ' .. #U ..
        ' inputs, edges, NaN payloads and tails', function()
        local r = run_path(name, U)
        assert.are.equal(level, r.level, r.out)
        for _, op in ipairs(OPS) do
          local y = r.y[op]
          assert.truthy(y, r.out)
          assert.are.equal(0, r.tails[op], op .. ': a slice differs from the whole array')
          local ref = REF[op]
          local worst, wx, wg = 0, nil, nil
          for i = 1, #U do
            local x = xs[i]
            local yb = y[i - 1]
            local g = from_bits(yb)
            if x ~= x then
              -- a NaN comes back a NaN; the vector paths return the input's bits (payload and sign)
              assert.truthy(g ~= g, ('%s(nan 0x%08x) = %a'):format(op, U[i], g))
              if level ~= 'scalar' then
                assert.are.equal(U[i], tonumber(yb), ('%s(nan 0x%08x) = 0x%08x'):format(op, U[i], tonumber(yb)))
              end
            else
              local want = ref(x)
              local e = ulp_err(g, want)
              -- the scalar sigmoid is 1 / (1 + e^-x) in float32: e^-x overflows below x = -88.72, where the
              -- results are denormal, and it gives 0 there, as PyTorch does
              if level == 'scalar' and op == 'sigmoid' and abs(want) < 2 ^ -126 then
                e = (g >= 0 and g <= 2 ^ -126) and 0 or inf
              end
              if e > worst then worst, wx, wg = e, x, g end
            end
          end
          if os.getenv('VMATH_SPEC_VERBOSE') then
            io.stderr:write(('\n%-7s %-8s max %.3f ULP at x = %a'):format(level, op, worst, wx or 0))
          end
          assert(worst <= 2, ('%s %s: %.3f ULP at x = %a: got %a, reference %.17g'):format(level, op, worst, wx or 0,
            wg or 0, wx and ref(wx) or 0))
        end
        -- exact edge values, every path
        local function at(op, x)
          for i = 1, #U do if U[i] == bits(x) then return from_bits(r.y[op][i - 1]) end end
        end
        assert.are.equal(inf, at('exp', inf)); assert.are.equal(0, at('exp', -inf)); assert.are.equal(1, at('exp', 0))
        assert.are.equal(inf, at('exp', 89)); assert.are.equal(0, at('exp', -200))
        assert.are.equal(-inf, at('log', 0)); assert.are.equal(-inf, at('log', -0.0)); assert.are.equal(inf, at('log', inf))
        assert.truthy(at('log', -1) ~= at('log', -1)); assert.are.equal(0, at('log', 1))
        assert.are.equal(1, at('tanh', inf)); assert.are.equal(-1, at('tanh', -inf)); assert.are.equal(1, at('tanh', 200))
        assert.are.equal(-math.huge, 1 / at('tanh', -0.0)) -- tanh(-0) = -0
        assert.are.equal(2 ^ -149, at('tanh', 2 ^ -149))
        assert.are.equal(1, at('sigmoid', inf)); assert.are.equal(0, at('sigmoid', -inf)); assert.are.equal(0.5, at('sigmoid', 0))
        assert.are.equal(0, at('sigmoid', -200)); assert.are.equal(1, at('sigmoid', 200))
      end)
    end
  end

  it('the default is the best level the CPU runs', function()
    local want = HAVE.avx512 and 'avx512' or HAVE.avx2 and 'avx2' or 'scalar'
    local r = run_path('', { bits(1) })
    assert.are.equal(want, r.level, r.out)
  end)
end)
