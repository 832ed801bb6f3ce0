-- softmax and log_softmax on every path of this machine (s6-vec, core/tensor/softmax.c): AVX-512
-- (core/tensor/vmath512.c), AVX2 (core/tensor/vmath.c) and the scalar kernels, each forced with
-- MOONTORCH_VMATH=avx512 / avx2 / 0 in a child process (the level is read once per process), as
-- spec/vmath_paths_spec.lua does for exp, log, tanh and sigmoid. A path the CPU lacks is reported, not run.
--
-- The child computes, forward and backward (the fused backward kernel, the backward not recorded):
--  * the cases recorded from PyTorch 1.13 below (-inf entries, a row of -inf, a NaN, huge values,
--    +inf, the first dim, the gradients, cross_entropy of 128 x 1000);
--  * random float32 inputs (x 8, some with -inf entries) over the last dim with row lengths 1, 3, 15,
--    16, 17, 1000 (every vector tail), over inner dims (1 to 130 columns: blocks of 64 and their tails),
--    and on non-contiguous inputs (transposed), each compared here with a float64 reference computed in
--    Lua from the same float32 inputs.
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'
local C = require('moontorch.ffi').C

local inf, nan = math.huge, 0 / 0
local exp, log, abs, max = math.exp, math.log, math.abs, math.max
local build = os.getenv('MOONTORCH_BUILD_DIR') or 'build'

-- Recorded with /usr/bin/python3 (PyTorch 1.13.1, CPU), the inputs built as the child builds them:
--   X = [[((i*37 + j*11) % 29 - 14) * 0.75 for j in range(17)] for i in range(4)] (float32), then
--   X[1,2] = X[1,4] = -inf, X[2,:] = -inf, X[3,6] = nan
--   sm_last / lsm_last = torch.softmax / log_softmax(X, -1)
--   X0 = X[[0, 1, 3]] with X0[2,6] = 2.0; sm_first / lsm_first = torch.softmax / log_softmax(X0, 0)
--   Hg = [[3e38, -3e38, 1e30, 0, 88, -88], [inf, 1, 2, 3, 4, 5], [-1e30] * 6]; sm_huge / lsm_huge over -1
--   G = [[((i*5 + j*3) % 7 - 3) * 0.25 for j in range(17)] for i in range(2)]; sm_grad / lsm_grad =
--   the gradient of X[[0, 1]] for softmax / log_softmax(X[[0, 1]], -1).backward(G)
--   L = [[((i*131 + j*71) % 97 - 48) * 0.0625 for j in range(1000)] for i in range(128)] (requires grad),
--   T = [(i*37) % 1000 for i in range(128)]; loss = F.cross_entropy(L, T); loss.backward();
--   ce_grad_target = [L.grad[i, T[i]] for i in range(0, 128, 9)], ce_grad_first = [L.grad[i, 0] ...],
--   ce_grad_sum = L.grad.double().abs().sum()
local WANT = {
  sm_last = {{1.033095831104447e-09, 3.954304247599794e-06, 0.015135598368942738, 2.0750285045778583e-08, 7.942432421259582e-05, 0.3040066063404083, 4.167806366695004e-07, 0.0015952803660184145, 2.187064085390489e-09, 8.371262083528563e-06, 0.03204206004738808, 4.3928356063815954e-08, 0.00016814131231512874, 0.6435819864273071, 8.823245707390015e-07, 0.0033772082533687353, 4.630014149853423e-09}, {2.0043270865244267e-07, 0.0007671813946217299, 0.0, 4.025798716611462e-06, 0.0, 2.1125451610259915e-08, 8.086032175924629e-05, 0.30950304865837097, 4.2431605606907397e-07, 0.0016241230769082904, 2.2266062327247482e-09, 8.522615644324105e-06, 0.03262138366699219, 4.47225829702802e-08, 0.0001711813238216564, 0.6552180051803589, 8.982771078080987e-07}, {nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan}, {nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan}},
  lsm_last = {{-20.690706253051758, -12.440706253051758, -4.1907057762146, -17.690706253051758, -9.440706253051758, -1.1907057762145996, -14.690706253051758, -6.4407057762146, -19.940706253051758, -11.690706253051758, -3.4407057762145996, -16.940706253051758, -8.690706253051758, -0.4407058358192444, -13.940706253051758, -5.6907057762146, -19.190706253051758}, {-15.4227876663208, -7.172787189483643, -inf, -12.4227876663208, -inf, -17.672786712646484, -9.4227876663208, -1.1727873086929321, -14.6727876663208, -6.422787189483643, -19.922786712646484, -11.6727876663208, -3.4227871894836426, -16.922786712646484, -8.6727876663208, -0.42278727889060974, -13.9227876663208}, {nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan}, {nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan}},
  sm_first = {{1.522988490876287e-08, 0.002472479594871402, 0.977022647857666, 1.522988490876287e-08, 0.977022647857666, 0.9770225286483765, 0.0009349547326564789, 0.002472479594871402, 1.522988490876287e-08, 0.002472479594871402, 0.9770225286483765, 0.002472479594871402, 0.002472479594871402, 0.9770225286483765, 0.002472479594871402, 0.002472479594871402, 1.522988490876287e-08}, {6.144174221844878e-06, 0.997469425201416, 0.0, 6.144174221844878e-06, 0.0, 1.411778214333026e-07, 0.37718766927719116, 0.997469425201416, 6.144174221844878e-06, 0.997469425201416, 1.411778214333026e-07, 0.997469425201416, 0.997469425201416, 1.411778214333026e-07, 0.997469425201416, 0.997469425201416, 6.144174221844878e-06}, {0.9999938011169434, 5.8147143136011437e-05, 0.022977370768785477, 0.9999938011169434, 0.022977370768785477, 0.022977368906140327, 0.6218773722648621, 5.8147143136011437e-05, 0.9999938011169434, 5.8147143136011437e-05, 0.022977368906140327, 5.8147143136011437e-05, 5.8147143136011437e-05, 0.022977368906140327, 5.8147143136011437e-05, 5.8147143136011437e-05, 0.9999938011169434}},
  lsm_first = {{-18.0000057220459, -6.002533912658691, -0.023245446383953094, -18.0000057220459, -0.023245446383953094, -0.023245563730597496, -6.975012302398682, -6.002533912658691, -18.0000057220459, -6.002533912658691, -0.023245563730597496, -6.002533912658691, -6.002533912658691, -0.023245563730597496, -6.002533912658691, -6.002533912658691, -18.0000057220459}, {-12.000005722045898, -0.002533799270167947, -inf, -12.000005722045898, -inf, -15.773245811462402, -0.9750124216079712, -0.002533799270167947, -12.000005722045898, -0.002533799270167947, -15.773245811462402, -0.002533799270167947, -0.002533799270167947, -15.773245811462402, -0.002533799270167947, -0.002533799270167947, -12.000005722045898}, {-6.198863957251888e-06, -9.752533912658691, -3.773245334625244, -6.198863957251888e-06, -3.773245334625244, -3.7732455730438232, -0.4750123918056488, -9.752533912658691, -6.198863957251888e-06, -9.752533912658691, -3.7732455730438232, -9.752533912658691, -9.752533912658691, -3.7732455730438232, -9.752533912658691, -9.752533912658691, -6.198863957251888e-06}},
  sm_huge = {{1.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {nan, nan, nan, nan, nan, nan}, {0.1666666716337204, 0.1666666716337204, 0.1666666716337204, 0.1666666716337204, 0.1666666716337204, 0.1666666716337204}},
  lsm_huge = {{0.0, -inf, -3.0000000054977558e+38, -3.0000000054977558e+38, -3.0000000054977558e+38, -3.0000000054977558e+38}, {nan, nan, nan, nan, nan, nan}, {-1.7917594909667969, -1.7917594909667969, -1.7917594909667969, -1.7917594909667969, -1.7917594909667969, -1.7917594909667969}},
  sm_grad = {{-7.861841733181052e-10, -4.349061910602359e-08, 0.011185232549905777, -5.415789150475803e-09, 3.8838628825033084e-05, -0.1553468555212021, 9.961128455415746e-08, -0.0012140056351199746, -2.4053982763949655e-11, 6.186377049743896e-06, -0.008362923748791218, 2.1481040946014218e-08, -8.591992809670046e-05, 0.15381719172000885, -6.714474807267834e-07, -3.7143545341677964e-05, 3.4215883459864926e-09}, {1.2994183862247155e-07, -0.00026981267728842795, 0.0, -2.422296802251367e-06, 0.0, 1.897713097775977e-08, -8.222966243920382e-06, 0.2006528526544571, -1.492291801241663e-07, 0.0006468988722190261, -1.3397344345023043e-09, 1.2639595752261812e-06, 0.029304003342986107, -4.547994425507795e-09, 0.00011097796959802508, -0.23043587803840637, 3.577896450224216e-07}},
  lsm_grad = {{-0.75, 0.0, 0.75, -0.25, 0.5, -0.5, 0.25, -0.75, 0.0, 0.75, -0.25, 0.5, -0.5, 0.25, -0.75, 0.0, 0.75}, {0.4999999403953552, -0.5001918077468872, 0.25, -0.7500010132789612, 0.0, 0.75, -0.25002020597457886, 0.42262423038482666, -0.5000001192092896, 0.24959397315979004, -0.75, -2.1306530015863245e-06, 0.741844654083252, -0.25, 0.49995720386505127, -0.6638045310974121, 0.2499997764825821}},
  ce_loss = 8.048446655273438,
  ce_grad_target = {-0.00781238591298461, -0.007786308880895376, -0.007798447739332914, -0.0078050061129033566, -0.007807339075952768, -0.007809733040630817, -0.007811024319380522, -0.007811483461409807, -0.007811954710632563, -0.007812208961695433, -0.007812299765646458, -0.007766350172460079, -0.007787900511175394, -0.007795565761625767, -0.007803410291671753},
  ce_grad_first = {-0.00781238591298461, 2.9095616582708317e-07, 7.44742692404543e-07, 1.894694150905707e-06, 4.848273420066107e-06, 1.2401392268657219e-05, 3.155153535772115e-05, 1.8801888757025154e-07, 4.810561904378119e-07, 1.2246955520822667e-06, 3.1322215363616124e-06, 8.019653250812553e-06, 2.0393857994349673e-05, 1.2146232108989352e-07, 3.11040224687531e-07},
  ce_grad_sum = 1.997814916327549,
}

local function flat(t, acc)
  acc = acc or {}
  if type(t) ~= 'table' then acc[#acc + 1] = t; return acc end
  for _, v in ipairs(t) do flat(v, acc) end
  return acc
end

-- the child: computes every case and writes `return { name = {values...}, ... }` to OUT
local CHILD = [=[
package.path = '%s/lua/?.lua;%s/lua/?/init.lua;' .. package.path
package.cpath = '%s/lib/?.so;' .. package.cpath
local ffi = require 'ffi'
local torch = require 'moontorch'
local F = require('moontorch.nn').functional
local C = require('moontorch.ffi').C
local outpath = '%s'
local inf, nan = math.huge, 0 / 0
local res, cases = {}, {}
local function sizes(t)
  local r = {}
  for i = 1, t:dim() do r[i] = t:size(i) end
  return r
end
local function put(name, t)
  if type(t) == 'number' then res[name] = { t } else res[name] = t:double():reshape(-1):tolist() end
end
local function X()
  local r = {}
  for i = 0, 3 do
    r[i + 1] = {}
    for j = 0, 16 do r[i + 1][j + 1] = ((i * 37 + j * 11) %% 29 - 14) * 0.75 end
  end
  r[2][3], r[2][5] = -inf, -inf
  for j = 1, 17 do r[3][j] = -inf end
  r[4][7] = nan
  return r
end
local x = torch.tensor(X())
put('sm_last', x:softmax(2)); put('lsm_last', x:log_softmax(2))
local r = X()
local x0 = torch.tensor({ r[1], r[2], r[4] })
x0[3][7] = 2.0
put('sm_first', x0:softmax(1)); put('lsm_first', x0:log_softmax(1))
local hg = torch.tensor({ { 3e38, -3e38, 1e30, 0, 88, -88 }, { inf, 1, 2, 3, 4, 5 }, { -1e30, -1e30, -1e30, -1e30, -1e30, -1e30 } })
put('sm_huge', hg:softmax(2)); put('lsm_huge', hg:log_softmax(2))
local g = {}
for i = 0, 1 do
  g[i + 1] = {}
  for j = 0, 16 do g[i + 1][j + 1] = ((i * 5 + j * 3) %% 7 - 3) * 0.25 end
end
g = torch.tensor(g)
for _, lg in ipairs({ false, true }) do
  local xg = torch.tensor({ r[1], r[2] }):requires_grad_()
  local y = lg and xg:log_softmax(2) or xg:softmax(2)
  y:backward(g)
  put(lg and 'lsm_grad' or 'sm_grad', xg.grad)
end
local L = {}
for i = 0, 127 do
  L[i + 1] = {}
  for j = 0, 999 do L[i + 1][j + 1] = ((i * 131 + j * 71) %% 97 - 48) * 0.0625 end
end
local lg = torch.tensor(L):requires_grad_()
local T = {}
for i = 0, 127 do T[i + 1] = (i * 37) %% 1000 + 1 end
local loss = F.cross_entropy(lg, torch.tensor(T, { dtype = torch.int64 }))
loss:backward()
put('ce_loss', loss:item())
local gt, gf = {}, {}
for i = 0, 127, 9 do
  gt[#gt + 1] = lg.grad[i + 1][T[i + 1]]:item()
  gf[#gf + 1] = lg.grad[i + 1][1]:item()
end
res.ce_grad_target, res.ce_grad_first = gt, gf
put('ce_grad_sum', lg.grad:double():abs():sum():item())

-- random cases: {sizes, dim, transposed}
torch.manual_seed(7)
local shapes = {}
for _, n in ipairs({ 1, 3, 15, 16, 17, 1000 }) do shapes[#shapes + 1] = { { 5, n }, 2 } end
for _, s in ipairs({ { { 3, 7, 1 }, 2 }, { { 3, 7, 5 }, 2 }, { { 2, 9, 16 }, 2 }, { { 2, 7, 70 }, 2 }, { { 2, 5, 130 }, 2 },
  { { 17, 3 }, 1 }, { { 1000, 2 }, 1 }, { { 4, 6, 3 }, 1 } }) do shapes[#shapes + 1] = s end
for _, n in ipairs({ 3, 17, 40 }) do shapes[#shapes + 1] = { { n, 5 }, 2, true } end -- (5, n) transposed views
local k = 0
for ci, s in ipairs(shapes) do
  for _, lgm in ipairs({ false, true }) do
    k = k + 1
    local base = torch.randn(unpack(s[1])) * 8
    if ci %% 2 == 0 then base:masked_fill_(torch.rand(unpack(s[1])):lt(0.15), -inf) end
    local xin = s[3] and base:t() or base
    local xg = xin:detach():requires_grad_()
    if s[3] then xg = base:clone():requires_grad_() end
    local xs = s[3] and xg:t() or xg
    local y = lgm and xs:log_softmax(s[2]) or xs:softmax(s[2])
    local gg = torch.randn(unpack(sizes(y)))
    y:backward(gg)
    local gx = s[3] and xg.grad:t() or xg.grad
    cases[k] = { sizes = sizes(y), dim = s[2], log = lgm, contiguous = xs:is_contiguous() }
    put('x' .. k, xs); put('y' .. k, y); put('g' .. k, gg); put('gx' .. k, gx)
  end
end
local function ser(v)
  if v ~= v then return '0/0' elseif v == inf then return '1/0' elseif v == -inf then return '-1/0' end
  return ('%%.17g'):format(v)
end
local o = assert(io.open(outpath, 'w'))
o:write('return { level = "', ffi.string(C.mt_kernels_simd()), '", ncases = ', k, ', cases = {')
for i = 1, k do
  local c = cases[i]
  o:write('{ sizes = {', table.concat(c.sizes, ','), '}, dim = ', c.dim, ', log = ', tostring(c.log),
    ', contiguous = ', tostring(c.contiguous), ' },')
end
o:write('},\n')
for name, v in pairs(res) do
  o:write('  ', name, ' = {')
  for i = 1, #v do o:write(ser(v[i]), ',') end
  o:write('},\n')
end
o:write('}\n')
o:close()
]=]

local function run_path(level)
  local outp = os.tmpname()
  local script = os.tmpname()
  H.write_file(script, CHILD:format(build, build, build, outp))
  local p = assert(io.popen(('MOONTORCH_VMATH=%s luajit %s 2>&1'):format(level, script)))
  local msg = p:read('*a')
  p:close()
  os.remove(script)
  local chunk = loadfile(outp)
  os.remove(outp)
  assert(chunk, 'the child failed: ' .. msg)
  return chunk()
end

-- the float64 reference of one case from its float32 input: forward, and the input gradient of g
local function reference(c, x, g)
  local sizes, d = c.sizes, c.dim
  local outer, inner = 1, 1
  for i = 1, d - 1 do outer = outer * sizes[i] end
  for i = d + 1, #sizes do inner = inner * sizes[i] end
  local n = sizes[d]
  local y, gx, dx = {}, {}, {}
  for o = 0, outer - 1 do
    for k = 0, inner - 1 do
      local at = function(j) return o * n * inner + j * inner + k + 1 end
      local m = -inf
      for j = 0, n - 1 do m = max(m, x[at(j)]) end
      local s = 0
      for j = 0, n - 1 do s = s + exp(x[at(j)] - m) end
      local sg, sgp = 0, 0
      for j = 0, n - 1 do
        local p = exp(x[at(j)] - m) / s
        sg, sgp = sg + g[at(j)], sgp + g[at(j)] * p
      end
      for j = 0, n - 1 do
        local i = at(j)
        local p = exp(x[i] - m) / s
        if m == -inf then p = nan end
        y[i] = c.log and (x[i] - m) - log(s) or p
        dx[i] = abs(x[i] - m)
        gx[i] = c.log and g[i] - p * sg or p * (g[i] - sgp)
      end
    end
  end
  return y, gx, dx
end

local function ulp32(v)
  v = abs(v)
  if v < 2 ^ -126 then return 2 ^ -149 end
  local _, e = math.frexp(v)
  return 2 ^ (e - 24)
end

-- got within `tol` of want; NaN where want is NaN, the same infinity where want is infinite
local function close(got, want, tol)
  if want ~= want then return got ~= got end
  if want == inf or want == -inf then return got == want end
  return got == got and abs(got - want) <= tol
end

local HAVE = H.cpu_levels()

describe('softmax paths', function()
  for _, level in ipairs({ 'avx512', 'avx2', 'scalar' }) do
    local name = level == 'scalar' and '0' or level
    if not HAVE[level] then
      it(level .. ': this CPU lacks it, so MOONTORCH_VMATH=' .. name .. ' falls back to a lower level', function()
        local r = run_path(name)
        assert.are_not.equal(level, r.level)
      end)
    else
      describe(level .. ' (MOONTORCH_VMATH=' .. name .. ')', function()
        local r
        before_each(function() r = r or run_path(name) end)

        it('gives PyTorch 1.13\'s values: -inf entries, a row of -inf (NaN), NaN, huge values, +inf, dim 1',
          function()
            assert.are.equal(level, r.level)
            for _, key in ipairs({ 'sm_last', 'lsm_last', 'sm_first', 'lsm_first', 'sm_huge', 'lsm_huge' }) do
              local want, got = flat(WANT[key]), r[key]
              assert.are.equal(#want, #got, key)
              for i = 1, #want do
                -- softmax: 8 ulp of the value; log_softmax: 4 ulp of the value or of 1
                local tol = key:sub(1, 1) == 's' and 8 * ulp32(want[i]) or 4 * ulp32(max(1, abs(want[i])))
                assert(close(got[i], want[i], tol), ('%s[%d]: got %.9g, PyTorch %.9g'):format(key, i, got[i], want[i]))
              end
            end
          end)

        it('gives PyTorch 1.13\'s gradients, and cross_entropy over 1000 classes forward and backward', function()
          for _, key in ipairs({ 'sm_grad', 'lsm_grad', 'ce_grad_target', 'ce_grad_first' }) do
            local want, got = flat(WANT[key]), r[key]
            assert.are.equal(#want, #got, key)
            for i = 1, #want do
              assert(close(got[i], want[i], 1e-6 * abs(want[i]) + 1e-9),
                ('%s[%d]: got %.9g, PyTorch %.9g'):format(key, i, got[i], want[i]))
            end
          end
          assert(close(r.ce_loss[1], WANT.ce_loss, 1e-6 * WANT.ce_loss), r.ce_loss[1])
          assert(close(r.ce_grad_sum[1], WANT.ce_grad_sum, 1e-6 * WANT.ce_grad_sum), r.ce_grad_sum[1])
        end)

        it('matches a float64 reference over row lengths 1-1000, inner dims, -inf entries and transposed inputs',
          function()
            local worst_f, worst_b = 0, 0
            local ncontig = 0
            for k = 1, r.ncases do
              local c = r.cases[k]
              if not c.contiguous then ncontig = ncontig + 1 end
              local x, y, g, gx = r['x' .. k], r['y' .. k], r['g' .. k], r['gx' .. k]
              local ry, rgx, dx = reference(c, x, g)
              local gmax = 0
              for i = 1, #g do gmax = max(gmax, abs(g[i])) end
              local n = c.sizes[c.dim]
              for i = 1, #x do
                -- forward: softmax within 8 ulp of its value (and 2^-126: denormal results) and the effect of
                -- x - max rounded to float32 (as PyTorch rounds it: half an ulp of x - max, relative to the
                -- value); log_softmax within 4 ulp of its magnitude or of 1
                local tol = c.log and 4 * ulp32(max(1, abs(ry[i]))) or
                  8 * ulp32(ry[i]) + abs(ry[i]) * ulp32(dx[i] or 0) / 2 + 2 ^ -126
                assert(close(y[i], ry[i], tol), ('case %d (%s over dim %d%s) element %d: got %.9g, float64 %.17g')
                  :format(k, table.concat(c.sizes, 'x'), c.dim, c.log and ', log' or '', i, y[i], ry[i]))
                if ry[i] == ry[i] and abs(ry[i]) < inf then worst_f = max(worst_f, abs(y[i] - ry[i]) / tol) end
                -- backward: within float32 rounding of the line's gradient sums (the sum of n terms)
                local btol = 2 ^ -21 * gmax * (1 + n / 16) + 2 ^ -126
                assert(close(gx[i], rgx[i], btol), ('case %d (%s over dim %d%s) gradient %d: got %.9g, float64 %.17g')
                  :format(k, table.concat(c.sizes, 'x'), c.dim, c.log and ', log' or '', i, gx[i], rgx[i]))
                if rgx[i] == rgx[i] then worst_b = max(worst_b, abs(gx[i] - rgx[i]) / btol) end
              end
            end
            assert.is_true(ncontig >= 6, 'the transposed cases are not contiguous')
            if os.getenv('SOFTMAX_SPEC_VERBOSE') then
              io.stderr:write(('\n%s: worst forward %.3f of its bound, backward %.3f'):format(level, worst_f, worst_b))
            end
          end)
      end)
    end
  end
end)
