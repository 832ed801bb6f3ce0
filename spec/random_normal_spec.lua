-- spec/random_normal_spec.lua: float32 normals equal PyTorch 1.13's to the bit (issue 27, part 3
-- "Numbers"), on every level of moontorch's kernels (scalar, AVX2, AVX-512: the fill has a scalar and
-- an AVX2 path, which must give the same bits).
--
-- How the expected values were made (/usr/bin/python3, Debian's python3-torch 1.13.1, CPU capability
-- AVX2, which 1.13 also runs on AVX-512 CPUs): after torch.manual_seed(s), the call in the comment;
-- `xxh3` is XXH3-64 (seed 0) of the result's bytes (float32, little-endian, row-major) computed by
-- Debian's libxxhash through ctypes (xx = ctypes.CDLL('libxxhash.so.0'); xx.XXH3_64bits(b, len(b))
-- with b = t.contiguous().numpy().tobytes()), not by moontorch; `sample` holds values at 1-based
-- flat positions, printed with '%.9g' (enough to tell float32 neighbours apart).
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local ffi = require 'ffi'
local C = torch._C

local E = {
  -- torch.manual_seed(0); torch.randn(1000000)
  randn_1e6 = { shape = { 1000000 }, xxh3 = '0xa5ec9b0d963fb101', sample = { [1] = -1.12583983, [2] = -1.1523602,
    [17] = -1.35265374, [1000] = 0.528867543, [65536] = -1.45780408, [123457] = 0.00649684621, [500001] = 0.603597999,
    [999984] = -0.391319603, [999999] = -0.0186204277, [1000000] = -0.0278385114 } },
  -- torch.manual_seed(0); t = torch.empty(64, 64, 3, 3); init.kaiming_normal_(t, mode='fan_out', nonlinearity='relu')
  kaiming_conv = { shape = { 64, 64, 3, 3 }, xxh3 = '0xf11a91355546c7e0', sample = { [1] = -0.0663407519,
    [2] = -0.067903474, [16] = -0.0145710045, [17] = -0.0797058865, [12288] = -0.0396821052, [18432] = 0.048593156,
    [36848] = -0.00676173344, [36863] = -0.0947933868, [36864] = 0.0850198418 } },
  -- torch.manual_seed(1); t = torch.empty(256, 784); init.kaiming_normal_(t)
  kaiming_linear = { shape = { 256, 784 }, xxh3 = '0x531a1b80c80d4c68', sample = { [1] = -0.0770542324,
    [2] = -0.0378924273, [16] = 0.0236191601, [17] = -0.035202425, [66901] = -0.00203418708, [100352] = 0.0475076549,
    [200688] = 0.0280768014, [200703] = 0.0278832689, [200704] = -0.0205726903 } },
  -- torch.manual_seed(2); t = torch.empty(512, 768); t.normal_(0.0, 0.02)
  normal_002 = { shape = { 512, 768 }, xxh3 = '0xdddb4401a2fcb013', sample = { [1] = -0.0208160225,
    [2] = 0.0183320828, [16] = -0.00865372084, [17] = -0.0301428773, [131072] = -0.0260372516,
    [196608] = -0.0209550895, [393200] = -0.0235059522, [393215] = -0.0112680895, [393216] = 0.000103127022 } },
  -- torch.manual_seed(3); t = torch.empty(64); t.normal_(1.0, 0.02)
  normal_bn = { shape = { 64 }, xxh3 = '0x7c10682c086d30bf', sample = { [1] = 0.998467088, [2] = 1.00719762,
    [16] = 1.00832665, [17] = 1.00523007, [21] = 1.0209204, [32] = 0.997063816, [48] = 1.01638913, [63] = 1.02708852,
    [64] = 1.02755511 } },
  -- torch.manual_seed(4); t = torch.empty(300, 100); init.xavier_normal_(t)
  xavier = { shape = { 300, 100 }, xxh3 = '0x3aac0115c7dbc84a', sample = { [1] = -0.0665682033, [2] = 0.0893250406,
    [16] = -0.149939135, [17] = 0.107416384, [10000] = -0.145166159, [15000] = 0.0360966809, [29984] = -0.0794223621,
    [29999] = 0.0068972921, [30000] = -0.000840289227 } },
  -- torch.manual_seed(5); t = torch.empty(3, 7, 11); t.normal_(-2.5, 3.0)   (231: the tail of 16 recomputed)
  normal_odd = { shape = { 3, 7, 11 }, xxh3 = '0x8a9db70ebfdd01fe', sample = { [1] = 3.02698946, [2] = -0.943338513,
    [16] = -4.84700537, [17] = 5.83958912, [77] = -8.40173054, [115] = 0.287618577, [215] = -0.794778466,
    [230] = -10.0699768, [231] = -1.41128039 } },
  -- orthogonal_: PyTorch factors the (identical) normal draw with LAPACK's float32 QR, moontorch in
  -- float64 (lua/nn/initialization.lua), so these agree to float32 rounding, not to the bit.
  -- torch.manual_seed(6); t = torch.empty(256, 256); init.orthogonal_(t)
  orth256 = { [1] = -0.0773850679, [2] = 0.0298894756, [16] = -0.0887054652, [17] = -0.0954593644,
    [21845] = 0.0565522686, [32768] = -0.0550172031, [65520] = -0.0521857888, [65535] = 0.0575435609,
    [65536] = -0.0456096865 },
  -- torch.manual_seed(7); t = torch.empty(512, 128); init.orthogonal_(t)
  orth512x128 = { [1] = -0.034257412, [2] = 0.0166393854, [16] = 0.0545835942, [17] = -0.0629692152,
    [21845] = -0.017060807, [32768] = 0.0598862432, [65520] = -0.0100331148, [65535] = 0.0307645407,
    [65536] = 0.0452862643 },
  -- torch.manual_seed(8); t = torch.empty(64, 32, 3, 3); init.orthogonal_(t, gain=2**0.5)
  orthconv = { [1] = -0.105843887, [2] = 0.124003805, [16] = -0.00935032591, [17] = 0.0392869115,
    [6144] = 0.0876766592, [9216] = 0.0235141627, [18416] = -0.045991946, [18431] = 0.0491927639,
    [18432] = -0.0755878016 },
}

-- XXH3-64 of t's bytes as '0x' and 16 hex digits (printed by halves: %x takes no uint64)
local function xxh3(t)
  local c = t:contiguous()
  local h = C.mt_xxh3_64(c:data_ptr(), c:numel() * 4)
  return '0x' .. bit.tohex(tonumber(h / 4294967296ULL), 8) .. bit.tohex(tonumber(h % 4294967296ULL), 8)
end

-- the bits of each sampled position equal the recorded value's (rounded to float32)
local function check_sample(t, sample)
  local flat = t:contiguous():view(-1)
  local f32 = ffi.new('float[1]')
  for i, want in pairs(sample) do
    f32[0] = want
    local got = flat[i]:item()
    assert(got == f32[0], ('position %d: got %.9g, PyTorch %.9g'):format(i, got, f32[0]))
  end
end

local function check(t, e)
  assert.same(e.shape, H.shape(t))
  check_sample(t, e.sample)
  assert.equal(e.xxh3, xxh3(t))
end

describe('float32 normals equal PyTorch 1.13 to the bit', function()
  it('randn of 10^6 values after manual_seed(0)', function()
    torch.manual_seed(0)
    check(torch.randn(1000000), E.randn_1e6)
  end)

  it('normal_(mean, std), with the recomputed tail of a size that is no multiple of 16', function()
    torch.manual_seed(2)
    check(torch.empty(512, 768):normal_(0.0, 0.02), E.normal_002)
    torch.manual_seed(3)
    check(torch.empty(64):normal_(1.0, 0.02), E.normal_bn)
    torch.manual_seed(5)
    check(torch.empty(3, 7, 11):normal_(-2.5, 3.0), E.normal_odd)
  end)

  it('kaiming_normal_ and xavier_normal_ on the shapes of a ResNet conv and an MLP layer', function()
    torch.manual_seed(0)
    local w = torch.empty(64, 64, 3, 3)
    nn.init.kaiming_normal_(w, { mode = 'fan_out', nonlinearity = 'relu' })
    check(w, E.kaiming_conv)
    torch.manual_seed(1)
    w = torch.empty(256, 784)
    nn.init.kaiming_normal_(w)
    check(w, E.kaiming_linear)
    torch.manual_seed(4)
    w = torch.empty(300, 100)
    nn.init.xavier_normal_(w)
    check(w, E.xavier)
  end)

  it('orthogonal_ factors the same draw (equal to float32 rounding)', function()
    local function near(t, sample)
      local flat = t:contiguous():view(-1)
      for i, want in pairs(sample) do
        local got = flat[i]:item()
        assert(math.abs(got - want) <= 2e-6, ('position %d: got %.9g, PyTorch %.9g'):format(i, got, want))
      end
    end
    torch.manual_seed(6)
    local w = torch.empty(256, 256)
    nn.init.orthogonal_(w)
    near(w, E.orth256)
    H.near(w:matmul(w:t()), torch.eye(256), 2e-5, 0)
    torch.manual_seed(7)
    w = torch.empty(512, 128)
    nn.init.orthogonal_(w)
    near(w, E.orth512x128)
    torch.manual_seed(8)
    w = torch.empty(64, 32, 3, 3)
    nn.init.orthogonal_(w, 2 ^ 0.5)
    near(w, E.orthconv)
  end)

  it('the scalar and vector paths give the same bits (each kernel level in a child process)', function()
    local code = [[
      local torch = require 'moontorch'
      torch.manual_seed(0)
      local x = torch.randn(100003)
      local y = torch.empty(4099):normal_(0.5, 3)
      local C = torch._C
      local h = C.mt_xxh3_64(x:data_ptr(), x:numel() * 4) + C.mt_xxh3_64(y:data_ptr(), y:numel() * 4)
      io.write(tostring(h))
    ]]
    local seen
    for level, have in pairs(H.cpu_levels()) do
      if have then
        local out, ok, err = H.run_lua(code, { 'MOONTORCH_VMATH=' .. (level == 'scalar' and '0' or level) })
        assert(ok, err)
        assert.equal('', err)
        if seen then assert.equal(seen, out) end
        seen = out
      end
    end
  end)
end)
