-- spec/numerics_spec.lua: the README's "Numbers" table holds (issue 27, part 3): the elementwise ops it
-- calls identical give PyTorch 1.13's bits, the others stay within the ULP it states. PyTorch's results on
-- a grid of 160 inputs per dtype (128 evenly inside [-10, 10], 32 edge values: zeros, denormals, large,
-- infinities, NaN; y = x reversed) were recorded by spec/support/numerics_record.py into
-- spec/support/numerics_wants.lua; the ops are bench/numerics_ops.lua's, which bench/numerics.lua measures
-- over 2^21 inputs each for the table itself.
local H = require 'spec.support.helper'
local torch = H.torch
local F = require('moontorch.nn').functional
local ffi = require 'ffi'
local W = require 'spec.support.numerics_wants'

-- what README.md says, per op: the largest difference in ULP over the whole range (0: identical), for
-- float32 and float64; nan: ours a number where PyTorch gives NaN (fmod/remainder: PyTorch 1.13's vector
-- path divides first, and x / y overflowing gives NaN, ours is libm's exact fmod; hardswish(-inf) is 0
-- here, NaN there; pow(-inf, 0.5) is C's pow, inf, where PyTorch takes sqrt, NaN)
local CLAIM = {
  exp = { 1, 1 }, exp2 = { 0, 0 }, expm1 = { 1, 1 }, log = { 1, 1 }, log2 = { 1, 1 }, log10 = { 2, 2 },
  log1p = { 2 ^ 30, 2 ^ 62 }, sqrt = { 0, 0 }, rsqrt = { 0, 0 }, reciprocal = { 0, 0 }, sin = { 1, 1 },
  cos = { 1, 1 }, tan = { 1, 1 }, asin = { 1, 1 }, acos = { 1, 1 }, atan = { 1, 1 }, sinh = { 2 ^ 23, 2 ^ 52 },
  cosh = { 2 ^ 23, 2 ^ 52 }, tanh = { 1, 2 }, sigmoid = { 2 ^ 21, 2 }, logit = { 1, 1 }, erf = { 1, 1 },
  erfc = { 3, 3 }, lgamma = { 194344, 3044 }, digamma = { 2 ^ 21, 2 ^ 63 }, sinc = { 0, 0 }, frac = { 0, 0 },
  relu = { 0, 0 }, silu = { 2 ^ 25, 3 }, gelu = { 2 ^ 30, 308621 }, gelu_tanh = { 2 ^ 30, 2 ^ 62 },
  softplus = { 2, 2 }, elu = { 2 ^ 30, 2 ^ 62 }, mish = { 104, 745 }, logsigmoid = { 2, 546125 },
  hardswish = { 2 ^ 24, 2 ^ 53, nan = true }, add = { 0, 0 }, sub = { 0, 0 }, mul = { 0, 0 }, div = { 0, 0 },
  pow = { 1, 1 }, pow_2 = { 0, 0 }, ['pow_0.5'] = { 1, 1, nan = true }, atan2 = { 1, 1 }, hypot = { 0, 1 },
  fmod = { 0, 0, nan = true }, remainder = { 0, 0, nan = true },
}

local EDGE = { 0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 1.1754944e-38, 1e-30, -1e-30, 1e-7, -1e-7, 0.5, -0.5, 1.0,
  -1.0, 2.0, 15.5, -15.5, 30.0, -30.0, 88.5, -88.5, 89.0, -104.0, 710.0, -745.0, 3e38, -3e38, math.huge, -math.huge,
  0 / 0, 1e300 }
local function grid(dt)
  local xs = {}
  for i = 0, 127 do xs[#xs + 1] = -10 + (i + 0.5) * 0.15625 end
  for _, v in ipairs(EDGE) do xs[#xs + 1] = v end
  local x = torch.tensor(xs, { dtype = torch.float64 }):to(dt)
  return x, x:flip(1):contiguous()
end

local B64 = {}
do
  local chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
  for i = 1, 64 do B64[chars:byte(i)] = i - 1 end
end
local function unbase64(s)
  local out, bits, nbits = {}, 0, 0
  for i = 1, #s do
    local v = B64[s:byte(i)]
    if v then
      bits, nbits = bits * 64 + v, nbits + 6
      if nbits >= 8 then
        nbits = nbits - 8
        local b = math.floor(bits / 2 ^ nbits)
        out[#out + 1] = string.char(b)
        bits = bits - b * 2 ^ nbits
      end
    end
  end
  return table.concat(out)
end

-- the largest ULP distance between ours and PyTorch's bytes (NaN = NaN whatever the payload), read as
-- integers only (a float NaN read into a Lua number may carry a payload LuaJIT takes for another type);
-- and how many are NaN on PyTorch's side only
local function ulp_max(ours, bytes, f32)
  local n = ours:numel()
  assert(#bytes == n * (f32 and 4 or 8), 'recorded size')
  local worst, nan_theirs, nan_ours = 0, 0, 0
  if f32 then
    local a, b = ffi.cast('const uint32_t *', ours:data_ptr()), ffi.cast('const uint32_t *', bytes)
    for i = 0, n - 1 do
      local u, v = a[i], b[i]
      local un, vn = bit.band(u, 0x7fffffff) > 0x7f800000, bit.band(v, 0x7fffffff) > 0x7f800000
      if un ~= vn then
        if vn then nan_theirs = nan_theirs + 1 else nan_ours = nan_ours + 1 end
      elseif not un and u ~= v then
        local ou = u >= 0x80000000 and (0x80000000 - u) or u
        local ov = v >= 0x80000000 and (0x80000000 - v) or v
        worst = math.max(worst, math.abs(ou - ov))
      end
    end
  else
    local a, b = ffi.cast('const int64_t *', ours:data_ptr()), ffi.cast('const int64_t *', bytes)
    local MIN = ffi.cast('int64_t', -9223372036854775807LL - 1)
    for i = 0, n - 1 do
      local u, v = a[i], b[i]
      local un = bit.band(u, 0x7fffffffffffffffLL) > 0x7ff0000000000000LL
      local vn = bit.band(v, 0x7fffffffffffffffLL) > 0x7ff0000000000000LL
      if un ~= vn then
        if vn then nan_theirs = nan_theirs + 1 else nan_ours = nan_ours + 1 end
      elseif not un and u ~= v then
        local ou, ov = u < 0 and (MIN - u) or u, v < 0 and (MIN - v) or v
        worst = math.max(worst, tonumber(ou > ov and ou - ov or ov - ou))
      end
    end
  end
  assert(ours:numel() == n) -- ours stays referenced while its memory is read
  return worst, nan_theirs, nan_ours
end

describe("the README's Numbers table", function()
  local ops = dofile('bench/numerics_ops.lua')(torch, F)
  it('covers every op bench/numerics.lua measures, each recorded from PyTorch', function()
    for _, op in ipairs(ops) do
      assert(CLAIM[op[1]], 'no claim for ' .. op[1])
      assert(W[op[1]], 'nothing recorded for ' .. op[1])
    end
  end)
  for _, op in ipairs(ops) do
    local name = op[1]
    it(('%s: %s'):format(name, CLAIM[name][1] == 0 and CLAIM[name][2] == 0 and 'identical to PyTorch 1.13'
      or 'within the stated ULP of PyTorch 1.13'), function()
      for k, dt in ipairs({ torch.float32, torch.float64 }) do
        local x, y = grid(dt)
        local ours = op[2](x, y):contiguous()
        local bytes = unbase64(W[name][k == 1 and 'f32' or 'f64'])
        local worst, nan_theirs, nan_ours = ulp_max(ours, bytes, k == 1)
        local claim = CLAIM[name][k]
        assert(worst <= claim, ('%s %s: %s ULP from PyTorch, the README says at most %s'):format(name,
          k == 1 and 'float32' or 'float64', tostring(worst), tostring(claim)))
        assert.equal(0, nan_ours)
        if not CLAIM[name].nan then assert.equal(0, nan_theirs) end
      end
    end)
  end
end)
