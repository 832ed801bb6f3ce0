-- Vectorised float32 math (core/tensor/vmath.c): exp, log, tanh, sigmoid, expm1, log1p, silu,
-- gelu_tanh and softplus on contiguous float32 tensors (AVX2+FMA where the CPU has it; the scalar
-- libm kernels otherwise, and for strided inputs).
-- Run: MOONTORCH_BUILD_DIR=build luajit /usr/bin/busted spec/vmath_spec.lua
--
-- Reference: the same function in float64 (LuaJIT's math library, libm's expm1/log1p through the FFI)
-- on the float32 input, which is within a float64 ulp or so of the true value; a float32 result is
-- allowed 2 ULP from it (an ULP being the spacing of float32 numbers at the reference, 2^-149 in the
-- denormals; a result of inf counts as 2^128 so that overflowing early shows as an ULP error).
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'
pcall(ffi.cdef, 'double expm1(double); double log1p(double);')
local libm = ffi.C

local inf, nan = math.huge, 0 / 0
local exp, log, tanh, frexp, abs, floor = math.exp, math.log, math.tanh, math.frexp, math.abs, math.floor
local K = 2 * math.sqrt(2 / math.pi)

-- float64 references, written in their stable forms
local REF = {
  exp = exp,
  log = log,
  tanh = tanh,
  sigmoid = function(x) return 1 / (1 + exp(-x)) end,
  expm1 = function(x) return libm.expm1(x) end,
  log1p = function(x) return libm.log1p(x) end,
  silu = function(x) return x / (1 + exp(-x)) end,
  -- 0.5 x (1 + tanh(u)) = x sigmoid(2u): no cancellation for x < 0
  gelu_tanh = function(x) return x / (1 + exp(-K * (x + 0.044715 * x * x * x))) end,
  softplus = function(x) return x > 20 and x or libm.log1p(exp(x)) end,
}
local OPS = { 'exp', 'log', 'tanh', 'sigmoid', 'expm1', 'log1p', 'silu', 'gelu_tanh', 'softplus' }
local function apply(name, t)
  if name == 'gelu_tanh' then return torch.gelu(t, { approximate = 'tanh' }) end
  if name == 'softplus' then return torch.softplus_unit(t) end
  return torch[name](t)
end

-- float32 bits <-> numbers
local fbits = ffi.new('union { float f; uint32_t u; }')
local function from_bits(u)
  fbits.u = u
  local x = fbits.f
  return x == x and x or nan -- one canonical nan: LuaJIT keeps some nan payloads as non-numbers
end
local function to_f32(x)
  fbits.f = x
  return fbits.f
end
local FLT_INF_AT = 2 ^ 128 - 2 ^ 103 -- float64 values from here up round to inf in float32

-- ULP error of float32 `got` against float64 `ref` (0 when both are the same nan/inf)
local function ulp_err(got, ref)
  if ref ~= ref then return got ~= got and 0 or inf end
  if got ~= got then return inf end
  local a = abs(ref)
  if a >= FLT_INF_AT then return got == (ref > 0 and inf or -inf) and 0 or inf end
  if got == inf then got = 2 ^ 128 elseif got == -inf then got = -2 ^ 128 end
  local ulp = 2 ^ -149
  if a >= 2 ^ -126 then
    local _, e = frexp(a) -- a in [2^(e-1), 2^e)
    ulp = 2 ^ (e - 24)
  end
  return abs(got - ref) / ulp
end

-- float32 tensor from a Lua array of numbers, and its values back
local function f32_tensor(vals)
  local t = torch.empty(#vals)
  local p = ffi.cast('float *', t:data_ptr())
  for i = 1, #vals do p[i - 1] = vals[i] end
  return t
end
local function values(t)
  assert(t:is_contiguous() and t.dtype == torch.float32)
  local p, r = ffi.cast('float *', t:data_ptr()), {}
  for i = 1, t:numel() do r[i] = p[i - 1] end
  return r
end

-- The sweep: 2^19 bit patterns spread evenly over all of float32 (both signs, denormals, inf, nan),
-- then 2^14 consecutive floats on each side of each boundary the op has, then evenly spaced values
-- over its interesting range, 2^20 in all.
local BOUNDS = {
  exp = { 88.72283935546875, -87.336544, -103.972076, -0.3465736, 0.3465736, 0 },
  log = { 1, 0.70710677, 1.4142135, 2 ^ -126, 3.4028235e38 },
  tanh = { 0.5493, -0.5493, 9.01, -9.01, 0 },
  sigmoid = { -87.336544, -103.972076, 0, 16.6, -88.72283935546875 },
  expm1 = { 88.72283935546875, -17.33, -0.3465736, 0.3465736, 1.0397208, -1.0397208, 2 ^ -25, -2 ^ -25 },
  log1p = { -1, 0, 1, -0.29289323, 0.41421357, 2 ^ 24 },
  silu = { -87.336544, -103.972076, -110, 0, 20 },
  gelu_tanh = { -10.9, -9.8, -11, 0, 3, -3 },
  softplus = { 20, -87.336544, -103.972076, 0, 88.72283935546875 },
}
local RANGE = {
  exp = { -110, 90 }, log = { 0, 100 }, tanh = { -10, 10 }, sigmoid = { -110, 20 }, expm1 = { -20, 90 },
  log1p = { -1, 10 }, silu = { -120, 30 }, gelu_tanh = { -12, 12 }, softplus = { -110, 25 },
}
local N = 2 ^ 20
local function sweep_inputs(name)
  local v = {}
  for i = 0, 2 ^ 19 - 1 do -- every 8192nd bit pattern, with the low bits stirred
    v[#v + 1] = from_bits(i * 8192 + (i * 2654435761) % 8192)
  end
  local per = 2 ^ 14
  for _, b in ipairs(BOUNDS[name]) do
    fbits.f = b
    local u = fbits.u
    if b == 0 then -- around zero: the smallest numbers of both signs
      for k = 0, per - 1 do v[#v + 1] = from_bits(k); v[#v + 1] = from_bits(0x80000000 + k) end
    else
      for k = -per / 2, per / 2 - 1 do v[#v + 1] = from_bits(u + k) end
      if b > 0 then for k = 0, per / 2 - 1 do v[#v + 1] = -from_bits(u + k) end end
    end
  end
  local lo, hi = RANGE[name][1], RANGE[name][2]
  local rest = N - #v
  for k = 0, rest - 1 do v[#v + 1] = to_f32(lo + (hi - lo) * k / rest) end
  return v
end

local function check_sweep(name, xs, got)
  local ref = REF[name]
  local worst, wi = 0, 1
  for i = 1, #xs do
    local e = ulp_err(got[i], ref(xs[i]))
    if e > worst then worst, wi = e, i end
  end
  return worst, xs[wi], got[wi], ref(xs[wi])
end

describe('vmath float32 kernels', function()
  for _, name in ipairs(OPS) do
    it(name .. ': within 2 ULP of float64 libm over a 2^20-value sweep of float32', function()
      local xs = sweep_inputs(name)
      assert.are.equal(N, #xs)
      local y = apply(name, f32_tensor(xs))
      assert.are.equal(torch.float32, y.dtype)
      local worst, x, g, r = check_sweep(name, xs, values(y))
      if os.getenv('VMATH_SPEC_VERBOSE') then
        io.stderr:write(('\n%-9s max %.3f ULP at x = %a: got %a, reference %a\n'):format(name, worst, x, g, r))
      end
      if worst > 2 then
        error(('%s: %.3f ULP at x = %.9g (%a): got %.9g, reference %.17g'):format(name, worst, x, x, g, r))
      end
    end)
  end
end)

-- exact values at the edges: {input, expected}; expected may be nan, +-inf, +-0 (the sign is checked)
local function same(a, b)
  if b ~= b then return a ~= a end
  if b == 0 then return a == 0 and 1 / a == 1 / b end
  return a == b
end
local DENORM = 2 ^ -149
local EDGES = {
  exp = { { -inf, 0 }, { inf, inf }, { nan, nan }, { 89, inf }, { 1e30, inf }, { -200, 0 }, { -1e30, 0 },
    { 0, 1 }, { -0.0, 1 }, { -104, 0 } },
  log = { { 0, -inf }, { -0.0, -inf }, { -1, nan }, { -DENORM, nan }, { -inf, nan }, { inf, inf }, { nan, nan },
    { 1, 0 } },
  tanh = { { 10, 1 }, { -10, -1 }, { 1e30, 1 }, { -1e30, -1 }, { inf, 1 }, { -inf, -1 }, { -0.0, -0.0 }, { 0, 0 },
    { nan, nan }, { DENORM, DENORM }, { -DENORM, -DENORM } },
  sigmoid = { { -inf, 0 }, { inf, 1 }, { -1e30, 0 }, { -200, 0 }, { 1e30, 1 }, { 0, 0.5 }, { -0.0, 0.5 },
    { nan, nan } },
  expm1 = { { -inf, -1 }, { inf, inf }, { 100, inf }, { -100, -1 }, { -0.0, -0.0 }, { 0, 0 }, { nan, nan },
    { -DENORM, -DENORM } },
  log1p = { { -1, -inf }, { -2, nan }, { -inf, nan }, { inf, inf }, { -0.0, -0.0 }, { 0, 0 }, { nan, nan },
    { DENORM, DENORM } },
  silu = { { inf, inf }, { -inf, nan }, { -0.0, -0.0 }, { 0, 0 }, { nan, nan }, { -1e30, -0.0 }, { -200, -0.0 },
    { 1e30, to_f32(1e30) } },
  gelu_tanh = { { inf, inf }, { -inf, nan }, { -0.0, -0.0 }, { 0, 0 }, { nan, nan }, { -1e30, -0.0 }, { -20, -0.0 },
    { 1e30, to_f32(1e30) } },
  softplus = { { inf, inf }, { -inf, 0 }, { nan, nan }, { 25, 25 }, { -200, 0 } },
}
describe('vmath edges', function()
  for _, name in ipairs(OPS) do
    it(name .. ': IEEE values at the edges, also with the vector tail (1, 7, 8, 9 and 17 elements)', function()
      local cases = EDGES[name]
      for _, n in ipairs({ 1, 7, 8, 9, 17 }) do
        -- each case at every position of an n-element tensor (filled with the other cases)
        for c = 1, #cases do
          local xs = {}
          for i = 1, n do xs[i] = cases[(c + i - 2) % #cases + 1][1] end
          local got = values(apply(name, f32_tensor(xs)))
          for i = 1, n do
            local case = cases[(c + i - 2) % #cases + 1]
            if not same(got[i], case[2]) then
              error(('%s(%s) = %s, expected %s (n = %d)'):format(name, tostring(case[1]), tostring(got[i]),
                tostring(case[2]), n))
            end
          end
        end
      end
    end)
  end

  it('sigmoid and silu reach the denormals instead of flushing (sigmoid(-100) = e^-100)', function()
    local got = values(torch.sigmoid(f32_tensor({ -100, -95 })))
    assert.is_true(ulp_err(got[1], REF.sigmoid(-100)) <= 2 and got[1] > 0)
    assert.is_true(ulp_err(got[2], REF.sigmoid(-95)) <= 2 and got[2] > 0)
  end)
end)

describe('vmath layouts', function()
  for _, name in ipairs(OPS) do
    it(name .. ': small, strided and transposed inputs agree with the contiguous result', function()
      local lo, hi = -6, 6
      if name == 'log' then lo = 0.01 elseif name == 'log1p' then lo = -0.99 end
      if name == 'gelu_tanh' then lo = -2 end -- the scalar kernel's 1 + tanh cancels below
      local n = 4096
      local base = torch.linspace(lo, hi, n)
      local want = apply(name, base):tolist()
      -- the contiguous result itself is within 2 ULP
      local xs = values(base)
      local ref = REF[name]
      for i = 1, n do assert(ulp_err(want[i], ref(xs[i])) <= 2, name .. ' at ' .. xs[i]) end
      -- small (the fast path) and odd lengths: the same bits as the big tensor
      for _, len in ipairs({ 1, 3, 8, 13 }) do
        local got = apply(name, base:narrow(1, 101, len)):tolist()
        for i = 1, len do assert.are.equal(want[100 + i], got[i]) end
      end
      -- strided (the scalar kernel): within float rounding of the same values
      local strided = base:view(n / 2, 2):select(2, 1)
      assert.is_false(strided:is_contiguous())
      local ws = {}
      for i = 1, n / 2 do ws[i] = want[2 * i - 1] end
      H.near(apply(name, strided), ws, 1e-6, 1e-5)
      -- transposed 2-D
      local m = base:view(64, 64)
      local got = apply(name, m:t()):t():contiguous():view(n)
      H.near(got, want, 1e-6, 1e-5)
      -- in place
      if name ~= 'gelu_tanh' and name ~= 'softplus' then
        local c = base:clone()
        local r = c[name .. '_'](c)
        assert.are.same(want, r:tolist())
      end
    end)
  end

  it('float64 keeps the libm kernels, float16 goes through float32', function()
    local d = torch.tensor({ -2.5, 0.5, 3 }, { dtype = torch.float64 })
    H.near(torch.exp(d), { exp(-2.5), exp(0.5), exp(3) }, 0, 1e-15)
    local h = torch.tensor({ -2.5, 0.5, 3 }, { dtype = torch.float16 })
    local e = torch.exp(h)
    assert.are.equal(torch.float16, e.dtype)
    H.near(e, { exp(-2.5), exp(0.5), exp(3) }, 0, 1e-3)
  end)

  it('gradients through the vectorised forward ops', function()
    local x = torch.linspace(-3, 3, 40000):requires_grad_()
    local y = (torch.sigmoid(x) + torch.tanh(x) + torch.exp(x) + torch.silu(x)):sum()
    y:backward()
    local xs, g = x:detach():tolist(), x.grad:tolist()
    for i = 1, #xs, 997 do
      local v = xs[i]
      local s = 1 / (1 + exp(-v))
      local want = s * (1 - s) + (1 - tanh(v) ^ 2) + exp(v) + s * (1 + v * (1 - s))
      assert(abs(g[i] - want) <= 1e-5 * (1 + abs(want)), ('grad at %g: %g, expected %g'):format(v, g[i], want))
    end
  end)

  it('without AVX2 (MOONTORCH_VMATH=0) the scalar kernels give the same values within 2 ULP', function()
    local build = os.getenv('MOONTORCH_BUILD_DIR') or 'build'
    local script = ([[
      package.path = '%s/lua/?.lua;%s/lua/?/init.lua;' .. package.path
      package.cpath = '%s/lib/?.so;' .. package.cpath
      local torch = require 'moontorch'
      local x = torch.linspace(-20, 20, 100001)
      for _, y in ipairs({ torch.exp(x), torch.log(x:abs()), torch.tanh(x), torch.sigmoid(x) }) do
        for _, v in ipairs(y:narrow(1, 1, 100001):tolist()) do io.write(string.format('%%a\n', v)) end
      end]]):format(build, build, build)
    local path = os.tmpname()
    local sf = assert(io.open(path, 'w'))
    sf:write(script)
    sf:close()
    local p = assert(io.popen('MOONTORCH_VMATH=0 luajit ' .. path))
    local lines = {}
    local special = { inf = inf, ['-inf'] = -inf, nan = nan, ['-nan'] = nan }
    for line in p:lines() do lines[#lines + 1] = special[line] or tonumber(line) end
    p:close()
    os.remove(path)
    assert.are.equal(4 * 100001, #lines)
    local x = torch.linspace(-20, 20, 100001)
    local ours = { torch.exp(x):tolist(), torch.log(x:abs()):tolist(), torch.tanh(x):tolist(),
      torch.sigmoid(x):tolist() }
    local xs = x:tolist()
    local refs = { exp, function(v) return log(abs(v)) end, tanh, REF.sigmoid }
    for k = 1, 4 do
      for i = 1, #xs, 7 do
        local s, v, r = lines[(k - 1) * 100001 + i], ours[k][i], refs[k](xs[i])
        assert(ulp_err(s, r) <= 2 and ulp_err(v, r) <= 2, ('op %d at %g: scalar %a, vector %a'):format(k, xs[i], s, v))
      end
    end
  end)
end)
