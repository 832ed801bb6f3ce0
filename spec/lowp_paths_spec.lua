-- The low-precision kernels' paths give the same bits (issue 25): the bfloat16 products
-- (core/tensor/bf16.c: vdpbf16ps where the CPU has AVX512-BF16, AVX2+FMA under flush-to-zero, scalar
-- fmaf) and the float32 <-> bfloat16 / float16 conversions (core/tensor/lowp.c: AVX-512, AVX2/F16C,
-- scalar), each forced with MOONTORCH_VMATH=avx512 / avx2 / 0 in a child process (the level is read
-- once per process). Every level's bytes must equal the scalar level's, which are dtype.c's
-- conversions and a plain loop of fmaf: so a CPU without the instructions gets the same numbers.
-- Run: luajit /usr/bin/busted spec/lowp_paths_spec.lua
local H = require 'spec.support.helper'
local torch = H.torch

-- the child: writes one file of raw bytes per case into DIR and prints its levels
local CHILD = [[
local ffi = require 'ffi'
local torch = require 'moontorch'
local C = require('moontorch.ffi').C
local dir = %q
io.write('level ', ffi.string(C.mt_kernels_simd()), ' gemm ', ffi.string(C.mt_kernels_bf16()), ' int8 ',
  ffi.string(C.mt_kernels_int8()), '\n')
local function dump(name, t)
  t = t:contiguous()
  local f = assert(io.open(dir .. '/' .. name, 'wb'))
  f:write(ffi.string(ffi.cast('const char *', t:data_ptr()), t:numel() * t:element_size()))
  f:close()
end
local function from_u16(n, fn, dtype)
  local t = torch.empty(n, { dtype = dtype })
  local p = ffi.cast('uint16_t *', t:data_ptr())
  for i = 0, n - 1 do p[i] = fn(i) end
  return t
end
local function from_u32(n, fn)
  local t = torch.empty(n)
  local p = ffi.cast('uint32_t *', t:data_ptr())
  for i = 0, n - 1 do p[i] = fn(i) end
  return t
end
-- every 16-bit pattern, as bfloat16 and float16, widened
dump('bf16_to_f32', from_u16(65536, function(i) return i end, torch.bfloat16):float())
dump('f16_to_f32', from_u16(65536, function(i) return i end, torch.float16):float())
-- float32 patterns spread over all of them (odd count: every path ends on a tail), narrowed, also strided
local x = from_u32(2 ^ 18 + 37, function(i) return (i * 16411 + (i * 2654435761) %% 16411) %% 2 ^ 32 end)
local edges = { 0x7fc00000, 0xffc00001, 0x7f800001, 0x7fbfffff, 0x7f7fffff, 0x7f7f8000, 0x7f7f7fff, 0x00000001,
  0x807fffff, 0x00800000, 0x33000000, 0x33000001, 0x387fe000, 0x387ff000, 0x477fe000, 0x477ff000, 0x3f808000,
  0x3f818000, 0x3f80ffff }
local xe = from_u32(#edges, function(i) return edges[i + 1] end)
dump('f32_to_bf16', x:bfloat16())
dump('f32_to_f16', x:half())
dump('edges_bf16', xe:bfloat16())
dump('edges_f16', xe:half())
dump('strided_bf16', x:narrow(1, 1, 2 ^ 17):view(-1, 2):t():bfloat16())
-- bfloat16 products: odd and even K, transposed operands, alpha/beta, batches, specials
torch.manual_seed(7)
local function bf(...) return torch.randn(...):bfloat16() end
local cases = {
  { bf(5, 7), bf(7, 3) }, { bf(33, 17), bf(65, 17):t() }, { bf(1, 9), bf(9, 1) }, { bf(8, 1), bf(1, 8) },
  { bf(64, 63), bf(63, 70) }, { bf(40, 30):t(), bf(40, 50) }, { bf(17, 300), bf(300, 33) }, { bf(9, 2), bf(2, 40) },
  { bf(41, 24):t(), bf(41, 50) }, { bf(20, 64), bf(64, 32) },
}
for i, c in ipairs(cases) do dump('mm' .. i, c[1]:matmul(c[2])) end
local a, b, c0 = bf(12, 20), bf(20, 36), bf(12, 36)
dump('addmm', torch.addmm(c0, a, b, { beta = 0.5, alpha = 2 }))
dump('baddbmm', torch.baddbmm(bf(3, 5, 6), bf(3, 5, 9), bf(3, 9, 6), { beta = -1, alpha = 0.25 }))
dump('bmm', torch.bmm(bf(4, 10, 11), bf(4, 11, 12)))
-- specials: inf, nan, denormals (2^-130), huge products that overflow float32, signed zeros
local s = bf(6, 10)
local sp = ffi.cast('uint16_t *', s:data_ptr())
sp[0], sp[3], sp[7], sp[11], sp[12], sp[20], sp[21], sp[30] = 0x7f80, 0xffc0, 0x0001, 0x8002, 0x7f7f, 0x7f00, 0x8000, 0x0080
local t = bf(10, 5)
local tp = ffi.cast('uint16_t *', t:data_ptr())
tp[0], tp[6], tp[9], tp[14], tp[22], tp[30] = 0x7f7f, 0x0003, 0x7f00, 0x8000, 0x00ff, 0x0042
dump('specials', s:matmul(t))
-- int8 products (core/tensor/qgemm.c): uint8 x int8, K not a multiple of 4 too, per-channel weights with zero
-- points, float32 and requantized uint8 results
for i, s in ipairs({ { 7, 37, 35 }, { 33, 64, 70 }, { 1, 5, 3 }, { 20, 200, 40 } }) do
  local M_, K_, N_ = s[1], s[2], s[3]
  local xq = torch.randint(0, 256, { M_, K_ }):to(torch.uint8)
  local w = torch.randint(-128, 128, { N_, K_ }):to(torch.int8)
  local ws = (torch.rand(N_):double() + 0.5) * 0.01
  local wz = torch.randint(-3, 4, { N_ }, { dtype = torch.int64 })
  local b = torch.randn(N_)
  local T = require('moontorch.tensor')
  local out = T.outp
  assert(C.mt_qlinear(xq, 0.02, 7, w, ws, wz, b, nil, 1.0, 0, 0, 0, out) == 0)
  dump('q' .. i .. 'f', T.take())
  assert(C.mt_qlinear(xq, 0.02, 7, w, ws:narrow(1, 1, 1), wz:narrow(1, 1, 1), nil, nil, 0.05, 100, 1, 1, out) == 0)
  dump('q' .. i .. 'u', T.take())
  -- float out with relu, and a bias holding NaN and infinities (NaN kept by relu; NaN -> the low end in uint8)
  local bn = b:clone()
  bn[1] = 0 / 0
  if N_ > 2 then bn[2], bn[3] = math.huge, -math.huge end
  assert(C.mt_qlinear(xq, 0.02, 7, w, ws, wz, bn, nil, 1.0, 0, 0, 1, out) == 0)
  dump('q' .. i .. 'r', T.take())
  assert(C.mt_qlinear(xq, 0.02, 7, w, ws, wz, bn, nil, 0.05, 100, 1, 0, out) == 0)
  dump('q' .. i .. 'n', T.take())
  -- the same with the weight packed once
  assert(C.mt_qpack(w, out) == 0)
  local packed = T.take()
  assert(C.mt_qlinear(xq, 0.02, 7, w, ws, wz, b, packed, 1.0, 0, 0, 0, out) == 0)
  dump('q' .. i .. 'p', T.take())
  -- dynamic: the input quantized with its own range
  local xf = torch.randn(M_, K_)
  assert(C.mt_qlinear_dynamic(xf, w, ws, wz, b, packed, 0, out) == 0)
  dump('q' .. i .. 'd', T.take())
  assert(C.mt_quantize(xf * 10, torch.tensor({ 0.07 }, { dtype = torch.float64 }), torch.tensor({ 3 }, { dtype = torch.int64 }), -1,
    torch.int8.id, -128, 127, out) == 0)
  dump('q' .. i .. 'z', T.take())
end
-- quantized convolutions (qgemm.c's channels-by-pixels product straight from the image): equal to the linear
-- layer's product of the image's columns (im2col by hand, the zero point outside the image), at every level;
-- shapes with padding, stride, dilation, pixels in 1 and several chunks of 256, 1 to 2 blocks of 8 channels
local T = require('moontorch.tensor')
for i, c in ipairs({
  { 2, 3, 9, 11, 5, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, true, true },
  { 3, 1, 28, 28, 6, { 5, 5 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, true, false },
  { 1, 6, 12, 12, 16, { 5, 5 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, false, false },
  { 2, 2, 17, 10, 11, { 3, 2 }, { 2, 3 }, { 2, 1 }, { 2, 1 }, false, true },
  { 1, 4, 40, 40, 3, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 1, 1 }, true, false },
}) do
  local N_, C_, H_, W_, Co, k, st, pd, dl, per_channel, relu = unpack(c)
  local xzp = 9 + i
  local xq = torch.randint(0, 256, { N_, C_, H_, W_ }):to(torch.uint8)
  local w = torch.randint(-128, 128, { Co, C_, k[1], k[2] }):to(torch.int8)
  local ws, wz
  if per_channel then
    ws, wz = (torch.rand(Co):double() + 0.5) * 0.01, torch.randint(-3, 4, { Co }, { dtype = torch.int64 })
  else
    ws, wz = torch.tensor({ 0.004 }, { dtype = torch.float64 }), torch.tensor({ 3 }, { dtype = torch.int64 })
  end
  local b = i ~= 4 and torch.randn(Co) or nil
  local a2 = function(v) return ffi.new('int64_t[2]', v) end
  assert(C.mt_qconv2d(xq, 0.03, xzp, w, ws, wz, b, a2(st), a2(pd), a2(dl), 1, 0.2, 60, relu and 1 or 0, T.outp) == 0)
  local got = T.take()
  dump('qc' .. i, got)
  -- the reference: the columns of the image padded with its zero point, through mt_qlinear
  local padded = torch.full({ N_, C_, H_ + 2 * pd[1], W_ + 2 * pd[2] }, xzp)
  padded:narrow(3, pd[1] + 1, H_):narrow(4, pd[2] + 1, W_):copy(xq:float())
  local cols = torch.nn.functional.unfold(padded, k, { dilation = dl, stride = st }) -- (N, K, L)
  local L = cols:size(3)
  local rows = cols:transpose(2, 3):reshape(N_ * L, -1):to(torch.uint8):contiguous()
  assert(C.mt_qlinear(rows, 0.03, xzp, w:reshape(Co, -1):contiguous(), ws, wz, b, nil, 0.2, 60, 1, relu and 1 or 0,
    T.outp) == 0)
  local want = T.take():view(N_, L, Co):transpose(2, 3):contiguous():view(got:size())
  assert(torch.equal(got, want), 'quantized conv2d case ' .. i .. ' differs from the im2col product')
end
-- tiny results: products in the denormal range flush to zero (vdpbf16ps's DAZ/FTZ)
local u = torch.full({ 4, 6 }, 2 ^ -70):bfloat16()
local v = torch.full({ 6, 3 }, -2 ^ -60):bfloat16()
dump('tiny', u:matmul(v))
]]

local function run_level(level)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute('mkdir -p ' .. H.sh_quote(dir)))
  local out, ok, err = H.run_lua(CHILD:format(dir), { 'MOONTORCH_VMATH=' .. level })
  assert(ok, out .. err)
  local files = {}
  local p = io.popen('ls ' .. H.sh_quote(dir))
  for name in p:lines() do
    files[name] = H.read_file(dir .. '/' .. name)
    os.remove(dir .. '/' .. name)
  end
  p:close()
  os.remove(dir)
  return { level = out:match('level (%w+)'), gemm = out:match('gemm (%S+)'), int8 = out:match('int8 (%S+)'),
    files = files, out = out }
end

local HAVE = H.cpu_levels()
local has_bf16 = bit.band(torch._C.mt_cpu_features(), torch._C.MT_CPU_AVX512_BF16) ~= 0
local has_vnni = bit.band(torch._C.mt_cpu_features(), torch._C.MT_CPU_AVX512_VNNI) ~= 0

describe('low-precision paths', function()
  local ref
  setup(function() ref = run_level('0') end)

  it('the scalar level runs the scalar kernels', function()
    assert.are.equal('scalar', ref.level, ref.out)
    assert.are.equal('scalar', ref.gemm, ref.out)
    assert.are.equal('scalar', ref.int8, ref.out)
    -- the int8 product's scalar loop against an integer reference in Lua (float64 of exact int32 sums)
    assert.truthy(ref.files.q1f and ref.files.q4u)
    assert.truthy(ref.files.mm1 and ref.files.specials and ref.files.f32_to_bf16)
  end)

  it('the scalar conversions are dtype.c\'s (every bfloat16 and float16 widened exactly; edges rounded as PyTorch)', function()
    local ffi = require 'ffi'
    local w = ffi.cast('const uint32_t *', ref.files.bf16_to_f32)
    for i = 0, 65535, 257 do assert.are.equal(i * 65536, tonumber(w[i])) end
    -- the edges' bits from PyTorch 1.13: x = torch.from_numpy(np.array(EDGES, dtype=np.uint32).view(np.int32))
    -- .view(torch.float32); x.to(torch.bfloat16).view(torch.int16), x.to(torch.float16).view(torch.int16).
    -- The first four are NaNs: PyTorch's vector conversion makes every NaN 0xffff (bfloat16) or 0x7e00 with
    -- the sign (float16); ours keep the sign and the upper payload, made quiet (dtype.c), so only NaN-ness and
    -- the sign are compared there.
    local e = ffi.cast('const uint16_t *', ref.files.edges_bf16)
    local want = { 'nan+', 'nan-', 'nan+', 'nan+', 0x7f80, 0x7f80, 0x7f7f, 0x0000, 0x8080, 0x0080, 0x3300, 0x3300,
      0x3880, 0x3880, 0x4780, 0x4780, 0x3f80, 0x3f82, 0x3f81 }
    local function check(got, w, inf_bits, what)
      if type(w) == 'string' then
        local sign = w:sub(4) == '-' and 0x8000 or 0
        assert.are.equal(sign, bit.band(got, 0x8000), what)
        assert.is_true(bit.band(got, 0x7fff) > inf_bits, what)
      else
        assert.are.equal(w, got, what)
      end
    end
    for i, v in ipairs(want) do check(tonumber(e[i - 1]), v, 0x7f80, 'bfloat16 edge ' .. i) end
    local h = ffi.cast('const uint16_t *', ref.files.edges_f16)
    local want16 = { 'nan+', 'nan-', 'nan+', 'nan+', 0x7c00, 0x7c00, 0x7c00, 0x0000, 0x8000, 0x0000, 0x0000, 0x0001,
      0x0400, 0x0400, 0x7bff, 0x7c00, 0x3c04, 0x3c0c, 0x3c08 }
    for i, v in ipairs(want16) do check(tonumber(h[i - 1]), v, 0x7c00, 'float16 edge ' .. i) end
  end)

  for _, level in ipairs({ 'avx512', 'avx2' }) do
    if not HAVE[level] then
      it(level .. ': this CPU lacks it, so MOONTORCH_VMATH=' .. level .. ' runs a lower level', function()
        local r = run_level(level)
        assert.are_not.equal(level, r.level, r.out)
      end)
    else
      local gemm = level == 'avx512' and (has_bf16 and 'avx512_bf16' or 'avx2') or 'avx2'
      local int8 = level == 'avx512' and (has_vnni and 'avx512_vnni' or 'avx2') or 'avx2'
      it(level .. ': conversions, bfloat16 products (' .. gemm .. ') and int8 products (' .. int8 ..
        ') equal the scalar level bit for bit', function()
        local r = run_level(level)
        assert.are.equal(level, r.level, r.out)
        assert.are.equal(gemm, r.gemm, r.out)
        assert.are.equal(int8, r.int8, r.out)
        local n = 0
        for name, bytes in pairs(ref.files) do
          assert.truthy(r.files[name], name)
          if r.files[name] ~= bytes then
            -- name the first element that differs
            local i = 1
            while bytes:byte(i) == r.files[name]:byte(i) do i = i + 1 end
            error(('%s differs from the scalar level at byte %d'):format(name, i))
          end
          n = n + 1
        end
        assert.is_true(n >= 50, n .. " files")
      end)
    end
  end
end)
