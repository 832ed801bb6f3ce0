-- spec/random_spec.lua: the random streams equal PyTorch 1.13's CPU generator's.
--
-- Every value in E below was recorded from PyTorch 1.13 (CPU, /usr/bin/python3) with the
-- Python line in the comment above it, printed with '%.9g' (float32), '%.17g' (float64) or '%d'.
-- Indices (randperm, multinomial) were recorded with `+ 1`: moontorch's are 1-based.
-- Values are compared to within the printed precision (rtol 2e-8, which tells float32 neighbours
-- apart); float32 normals from the 16-wide Box-Muller fill included (spec/random_normal_spec.lua
-- checks them to the bit over 10^6 values).
local H = require 'spec.support.helper'
local torch = H.torch

local E = {}
-- torch.manual_seed(0); torch.rand(5)
E.rand_f32 = {0.49625659, 0.768221796, 0.0884774327, 0.132030487, 0.307422817}
-- torch.manual_seed(0); torch.rand(5); torch.rand(3, dtype=torch.float64)
E.rand_f64 = {0.07262971157225484, 0.17155810530414428, 0.0584505300016952}
-- torch.manual_seed(123); torch.rand(2, 3)
E.rand_2d = {{0.296111941, 0.516562283, 0.251670718}, {0.68855679, 0.0739724636, 0.866521955}}
-- torch.manual_seed(0); torch.randn(5)
E.randn5 = {1.54099607, -0.293428898, -2.17878938, 0.568431258, -1.08452237}
-- torch.manual_seed(0); torch.randn(5); torch.randn(3)
E.randn5_then3 = {-1.39859545, 0.403346837, 0.838026345}
-- torch.manual_seed(0); torch.randn(16)
E.randn16 = {-1.12583983, -1.1523602, -0.250578582, -0.433878809, 0.848710358, 0.692009151, -0.31601277, -2.11521935, 0.322274923, -1.26333475, 0.349983186, 0.30813393, 0.119841509, 1.2376579, 1.11677718, -0.247278154}
-- torch.manual_seed(0); torch.randn(17)
E.randn17 = {-1.12583983, -1.6959312, 0.566650629, 0.793508351, 0.598839462, -1.55509508, -0.34136039, 1.85300612, 0.468096405, -0.585497558, -0.173396751, 0.183477938, 1.38936615, 1.58633423, 0.946298361, -0.843676746, 0.931826591}
-- torch.manual_seed(7); torch.randn(31)
E.randn31 = {-0.820134521, 0.395631164, 0.898908496, -1.38840389, -0.166996017, 0.285149962, -0.641091526, -0.893655419, 0.926542997, -0.535512209, -1.1597203, -0.460157156, 0.708539069, 1.01275539, 0.230396867, 0.503563881, -0.0835282281, -0.0234779324, 0.174375355, 2.2983427, 0.95710218, -0.661867559, -0.828452051, 1.40585291, -1.40125084, 1.29733586, 1.64093328, -1.05668414, -0.261586726, -0.25013262, 0.501121461}
-- torch.manual_seed(7); torch.randn(20, dtype=torch.float64)
E.randn_f64_20 = {0.066267539664499428, 0.046991555243924087, 1.8365386300294015, 1.3676903985367781, 1.457454937932726, 1.9322148600102931, -1.4418139927522924, 0.72776034787169763, -1.3131496578292892, -0.32800017613670029, -1.3521685881505834, 1.7951074839458658, 1.7421050311620636, -0.52396102071238604, -0.28387899021947915, 0.45257550210102954, -1.6677291342328766, -1.5870322969308357, 2.0302633286962202, 0.65965232644625016}
-- torch.manual_seed(7); torch.randn(3, dtype=torch.float64)
E.randn_f64_3 = {-0.1467950974849952, 0.78614129872353578, 0.9468216090039564}
-- torch.manual_seed(0); torch.randn(18, dtype=torch.float16)
E.randn_f16 = {-0.900878906, 0.481201172, 0.280029297, -0.0703735352, -1.39355469, 0.772460938, -0.214233398, 0.398681641, 1.66503906, -1.0234375, -0.504882812, 0.915527344, 0.854003906, 0.173461914, 0.202270508, -0.13659668, 0.61328125, 0.152099609}
-- torch.manual_seed(0); torch.randn(18, dtype=torch.bfloat16)
E.randn_bf16 = {1.4609375, 0.291015625, -0.435546875, 1.3671875, -0.671875, -0.110839844, 0.89453125, -1.3359375, -0.875, 0.32421875, -0.57421875, 0.9609375, 2.03125, 0.5625, 0.200195312, -0.69921875, 0.283203125, -0.80859375}
-- torch.manual_seed(0); torch.rand(4, dtype=torch.float16)
E.rand_f16 = {0.333984375, 0.272949219, 0.807128906, 0.59375}
-- torch.manual_seed(1); x = torch.empty(4, 5).t(); x.normal_(); x
E.normal_noncontig = {{0.661352158, -0.16613023, -0.892290533, 0.267316997}, {0.266924113, -1.5227685, -0.0582501777, -0.421195149}, {0.0616772585, 0.381683916, -0.195509583, -0.510699987}, {0.621317327, -1.02760863, -0.965635955, -1.57266521}, {-0.451905966, -0.563052773, 0.422415316, -0.123247758}}
-- torch.manual_seed(1); torch.empty(20).normal_(3, 0.5)
E.normal_mean_std = {2.23720217, 2.62488413, 2.67300963, 2.19525766, 3.43284607, 3.12220192, 2.66854429, 3.4036541, 3.21957088, 3.58560038, 3.88371372, 2.95231915, 3.03057766, 2.69112778, 2.60096502, 2.93418837, 2.60078001, 3.16786528, 3.1376667, 3.85815144}
-- torch.manual_seed(1); torch.empty(5).uniform_(-2.5, 7)
E.uniform_ab = {4.69750023, 0.15345338, 1.32915795, 4.47950268, -2.22182512}
-- torch.manual_seed(1); x = torch.empty(4, 5).t(); x.uniform_(-2, 3); x
E.uniform_noncontig = {{1.78815794, 1.99929309, 1.19340229, 0.274931669}, {-0.60344559, -0.0143132806, 0.623329461, 0.862359881}, {0.0153462887, 1.77185965, 1.41307044, 0.490012944}, {1.67342234, 0.847542465, -0.474252522, 2.6854167}, {-1.85359216, 0.193889618, 0.317728102, 1.27797532}}
-- torch.manual_seed(3); torch.randint(-5, 5, (8,))
E.randint = {1, 3, 2, 2, -5, -5, -5, 0}
-- torch.manual_seed(3); torch.randint(10, (2, 3))
E.randint_high = {{6, 8, 7}, {7, 0, 0}}
-- torch.manual_seed(3); torch.randint(0, 2**40, (3,))
E.randint_wide = {455570294424, 1073054410371, 790795084744}
-- torch.manual_seed(3); torch.randint(-5, 5, (4,), dtype=torch.float32)
E.randint_f32 = {1, 3, 2, 2}
-- torch.manual_seed(4); torch.randperm(10) + 1
E.randperm10 = {1, 5, 10, 7, 8, 4, 3, 9, 2, 6}
-- torch.manual_seed(4); torch.randperm(1000)[:12] + 1
E.randperm1000_head = {531, 707, 742, 633, 194, 632, 184, 573, 603, 499, 69, 759}
-- torch.manual_seed(5); torch.bernoulli(torch.tensor([0.1, 0.3, 0.5, 0.7, 0.9, 0.2, 0.4, 0.6, 0.8, 0.5]))
E.bernoulli_t = {0, 1, 0, 0, 0, 1, 1, 0, 1, 0}
-- torch.manual_seed(5); torch.bernoulli(torch.tensor([0.2, 0.5, 0.8, 0.9, 0.1, 0.5], dtype=torch.float64))
E.bernoulli_t64 = {0, 1, 1, 1, 0, 0}
-- torch.manual_seed(5); torch.empty(10).bernoulli_(0.3)
E.bernoulli_s = {0, 1, 0, 0, 1, 0, 0, 0, 0, 0}
-- torch.manual_seed(6); torch.multinomial(torch.tensor([0.1, 0.2, 0.3, 0.4]), 3) + 1
E.multinomial_norep = {4, 3, 1}
-- torch.manual_seed(6); torch.multinomial(torch.tensor([[1., 2, 3, 4], [4, 3, 2, 1]]), 1) + 1
E.multinomial_one = {{4}, {3}}
-- torch.manual_seed(6); torch.multinomial(torch.tensor([[1., 2, 3], [3, 0, 1]]), 2) + 1
E.multinomial_2d = {{3, 1}, {1, 3}}
-- torch.manual_seed(6); torch.multinomial(torch.tensor([[1., 2, 3], [3, 0, 1]]), 6, True) + 1
E.multinomial_rep = {{3, 3, 3, 2, 2, 3}, {1, 1, 3, 3, 1, 1}}
-- torch.manual_seed(8); torch.empty(5).exponential_(2)
E.exponential = {0.764893472, 0.423477978, 0.0585002005, 0.106873944, 0.493911177}
-- g = torch.Generator().manual_seed(7); torch.manual_seed(99); torch.rand(3, generator=g)
E.gen_vs_global = {0.53492254, 0.198803186, 0.659211695}
-- torch.manual_seed(2); torch.normal(torch.tensor([1., 2, 3]), 0.5)
E.normal_tensor_mean = {1.1961484, 1.88821805, 2.84024978}
-- torch.manual_seed(2); torch.normal(2, 3, (4,))
E.normal_num = {3.17689037, 1.32930791, 1.04149926, -1.61511135}
-- torch.manual_seed(0); torch.empty(3).cauchy_()
E.cauchy = {10.5977297, 0.764767289, -0.128299341}
-- torch.manual_seed(0); torch.empty(3).log_normal_()
E.log_normal = {59.2634163, 1.51155996, 0.0348194614}
-- torch.manual_seed(0); torch.empty(4).geometric_(0.3)
E.geometric = {1, 1, 3, 1}
-- torch.manual_seed(42); torch.randn(3); st = torch.get_rng_state()  (h: s = (s*31 + byte) % 1000000007 over the bytes)
E.state_hash = 551779601
E.state_fields = {seed = 42, left = 617, seeded = 1, next = 8, normal_valid = 1, normal_y = 0.23033302791461191}

local function state_hash(st)
  local s = 0
  for _, v in ipairs(st:tolist()) do s = (s * 31 + v) % 1000000007 end
  return s
end

-- little-endian fields of the 5056-byte state
local function u64_at(st, at)
  local b = st:tolist()
  local v = 0
  for i = 7, 0, -1 do v = v * 256 + b[at + i + 1] end
  return v
end
local function i32_at(st, at)
  local b = st:tolist()
  return b[at + 1] + 256 * (b[at + 2] + 256 * (b[at + 3] + 256 * b[at + 4]))
end

describe('random: PyTorch streams', function()
  it('rand draws 24-bit floats and 53-bit doubles', function()
    torch.manual_seed(0)
    H.near(torch.rand(5), E.rand_f32, 0, 2e-8)
    local d = torch.rand(3, { dtype = torch.float64 })
    assert.are.equal(torch.float64, d.dtype)
    H.near(d, E.rand_f64, 0, 2e-8)
    torch.manual_seed(123)
    H.near(torch.rand(2, 3), E.rand_2d, 0, 2e-8)
    torch.manual_seed(123)
    H.near(torch.rand({ 2, 3 }), E.rand_2d, 0, 2e-8)
  end)

  it('randn below 16 elements takes the scalar path and keeps the second normal', function()
    torch.manual_seed(0)
    H.near(torch.randn(5), E.randn5, 1e-6, 1e-6)
    H.near(torch.randn(3), E.randn5_then3, 1e-6, 1e-6)
    torch.manual_seed(7)
    H.near(torch.randn(3, { dtype = torch.float64 }), E.randn_f64_3, 1e-14, 1e-14)
  end)

  it('randn of 16 or more uses the 16-wide fill, with the tail recomputed', function()
    torch.manual_seed(0)
    H.near(torch.randn(16), E.randn16, 0, 2e-8)
    torch.manual_seed(0)
    H.near(torch.randn(17), E.randn17, 0, 2e-8)
    torch.manual_seed(7)
    H.near(torch.randn(31), E.randn31, 0, 2e-8)
    torch.manual_seed(7)
    H.near(torch.randn(20, { dtype = torch.float64 }), E.randn_f64_20, 1e-14, 1e-14)
  end)

  it('handles float16 and bfloat16', function()
    torch.manual_seed(0)
    H.near(torch.randn(18, { dtype = torch.float16 }), E.randn_f16, 0, 2e-8)
    torch.manual_seed(0)
    H.near(torch.randn(18, { dtype = torch.bfloat16 }), E.randn_bf16, 0, 2e-8)
    torch.manual_seed(0)
    H.near(torch.rand(4, { dtype = torch.float16 }), E.rand_f16, 0, 2e-8)
  end)

  it('normal_ and uniform_ on a non-contiguous tensor follow memory order', function()
    torch.manual_seed(1)
    local x = torch.empty(4, 5):t()
    assert.is_false(x:is_contiguous())
    x:normal_()
    H.near(x, E.normal_noncontig, 1e-6, 1e-6)
    torch.manual_seed(1)
    x = torch.empty(4, 5):t()
    assert.are.equal(x, x:uniform_(-2, 3))
    H.near(x, E.uniform_noncontig, 0, 2e-8)
  end)

  it('skip size-1 dims when they order the elements (the iterator drops them first)', function()
    -- torch.manual_seed(3); x = torch.empty(4, 1, 5).permute(2, 1, 0); x.uniform_(); x.flatten().tolist()
    -- torch.manual_seed(3); y = torch.empty(2, 1, 3, 1).transpose(0, 2); y.normal_(); y.flatten().tolist()
    torch.manual_seed(3)
    local x = torch.empty(4, 1, 5):permute(3, 2, 1)
    x:uniform_()
    H.near(x:flatten(), { 0.004263520240783691, 0.06011629104614258, 0.45103132724761963, 0.45940524339675903,
      0.10556936264038086, 0.7718658447265625, 0.7994906306266785, 0.17560523748397827, 0.2858424782752991,
      0.7436993718147278, 0.14984089136123657, 0.9491828680038452, 0.026954829692840576, 0.5944212079048157,
      0.40146881341934204, 0.8473186492919922, 0.47161436080932617, 0.887856662273407, 0.054176926612854004,
      0.8748562335968018 }, 0, 2e-8)
    torch.manual_seed(3)
    local y = torch.empty(2, 1, 3, 1):transpose(1, 3)
    y:normal_()
    H.near(y:flatten(), { 0.8032760620117188, -0.6137180328369141, 0.17483338713645935, 0.04618244990706444,
      0.08897809684276581, -1.3682591915130615 }, 1e-6, 1e-6)
  end)

  it('normal_(mean, std) and uniform_(a, b)', function()
    torch.manual_seed(1)
    H.near(torch.empty(20):normal_(3, 0.5), E.normal_mean_std, 0, 2e-8)
    torch.manual_seed(1)
    H.near(torch.empty(5):uniform_(-2.5, 7), E.uniform_ab, 0, 2e-8)
  end)

  it('randint draws the values asked for', function()
    torch.manual_seed(3)
    local r = torch.randint(-5, 5, { 8 })
    assert.are.equal(torch.int64, r.dtype)
    H.near(r, E.randint, 0, 2e-8)
    torch.manual_seed(3)
    H.near(torch.randint(10, { 2, 3 }), E.randint_high, 0, 2e-8)
    torch.manual_seed(3)
    H.near(torch.randint(0, 2 ^ 40, { 3 }), E.randint_wide, 0, 2e-8)
    torch.manual_seed(3)
    local f = torch.randint(-5, 5, { 4 }, { dtype = torch.float32 })
    assert.are.equal(torch.float32, f.dtype)
    H.near(f, E.randint_f32, 0, 2e-8)
    torch.manual_seed(3)
    H.near(torch.empty(8, { dtype = torch.int64 }):random_(-5, 5), E.randint, 0, 2e-8)
  end)

  it('randperm is 1-based, int64 by default', function()
    torch.manual_seed(4)
    local p = torch.randperm(10)
    assert.are.equal(torch.int64, p.dtype)
    H.near(p, E.randperm10, 0, 2e-8)
    torch.manual_seed(4)
    local q = torch.randperm(1000)
    H.near(q:narrow(1, 1, 12), E.randperm1000_head, 0, 2e-8)
    local seen, vals = {}, q:tolist()
    for _, v in ipairs(vals) do seen[v] = true end
    for i = 1, 1000 do assert.is_true(seen[i]) end
    assert.are.equal(0, torch.randperm(0):numel())
    torch.manual_seed(4)
    H.near(torch.randperm(10, { dtype = torch.float32 }), E.randperm10, 0, 2e-8)
  end)

  it('bernoulli with a tensor p and bernoulli_ with a number', function()
    torch.manual_seed(5)
    H.near(torch.bernoulli(torch.tensor({ 0.1, 0.3, 0.5, 0.7, 0.9, 0.2, 0.4, 0.6, 0.8, 0.5 })), E.bernoulli_t, 0, 2e-8)
    torch.manual_seed(5)
    local p64 = torch.tensor({ 0.2, 0.5, 0.8, 0.9, 0.1, 0.5 }, { dtype = torch.float64 })
    H.near(torch.bernoulli(p64), E.bernoulli_t64, 0, 2e-8)
    torch.manual_seed(5)
    H.near(torch.empty(10):bernoulli_(0.3), E.bernoulli_s, 0, 2e-8)
    torch.manual_seed(5)
    local b = torch.empty(10, { dtype = torch.bool }):bernoulli_(0.3)
    local want = {}
    for i, v in ipairs(E.bernoulli_s) do want[i] = v == 1 end
    H.near(b, want)
  end)

  it('multinomial with and without replacement (1-based indices)', function()
    torch.manual_seed(6)
    local m = torch.multinomial(torch.tensor({ 0.1, 0.2, 0.3, 0.4 }), 3)
    assert.are.equal(torch.int64, m.dtype)
    H.near(m, E.multinomial_norep, 0, 2e-8)
    torch.manual_seed(6)
    H.near(torch.multinomial(torch.tensor({ { 1, 2, 3, 4 }, { 4, 3, 2, 1 } }), 1), E.multinomial_one, 0, 2e-8)
    torch.manual_seed(6)
    H.near(torch.multinomial(torch.tensor({ { 1, 2, 3 }, { 3, 0, 1 } }), 2), E.multinomial_2d, 0, 2e-8)
    torch.manual_seed(6)
    H.near(torch.multinomial(torch.tensor({ { 1, 2, 3 }, { 3, 0, 1 } }), 6, { replacement = true }),
      E.multinomial_rep, 0, 2e-8)
    torch.manual_seed(6)
    H.near(torch.multinomial(torch.tensor({ { 1, 2, 3 }, { 3, 0, 1 } }), 6, true), E.multinomial_rep, 0, 2e-8)
  end)

  it('exponential_, cauchy_, log_normal_, geometric_', function()
    torch.manual_seed(8)
    H.near(torch.empty(5):exponential_(2), E.exponential, 1e-6, 1e-6)
    torch.manual_seed(0)
    H.near(torch.empty(3):cauchy_(), E.cauchy, 1e-5, 1e-5)
    torch.manual_seed(0)
    H.near(torch.empty(3):log_normal_(), E.log_normal, 1e-5, 1e-5)
    torch.manual_seed(0)
    H.near(torch.empty(4):geometric_(0.3), E.geometric, 0, 2e-8)
  end)

  it('torch.normal forms', function()
    torch.manual_seed(2)
    H.near(torch.normal(torch.tensor({ 1, 2, 3 }), 0.5), E.normal_tensor_mean, 1e-6, 1e-6)
    torch.manual_seed(2)
    H.near(torch.normal(2, 3, { 4 }), E.normal_num, 1e-6, 1e-6)
    local t = torch.normal(torch.zeros(2, 1), torch.ones(3))
    assert.are.same({ 2, 3 }, H.shape(t))
  end)
end)

describe('random: generators and state', function()
  it('manual_seed returns the default generator; initial_seed and seed', function()
    local g = torch.manual_seed(1234)
    assert.are.equal(torch.default_generator, g)
    assert.are.equal(1234, torch.initial_seed())
    local s = torch.seed()
    assert.are.equal(s, torch.initial_seed())
    local a = torch.rand(4)
    torch.manual_seed(s)
    H.near(torch.rand(4), a, 0, 2e-8)
    torch.manual_seed(-1)
    assert.are.equal(2 ^ 64 - 1, torch.initial_seed()) -- PyTorch: 18446744073709551615
  end)

  it('get_rng_state has PyTorch\'s layout and bytes', function()
    torch.manual_seed(42)
    torch.randn(3)
    local st = torch.get_rng_state()
    assert.are.equal(torch.uint8, st.dtype)
    assert.are.same({ 5056 }, H.shape(st))
    assert.are.equal(E.state_hash, state_hash(st))
    assert.are.equal(E.state_fields.seed, u64_at(st, 0))
    assert.are.equal(E.state_fields.left, i32_at(st, 8))
    assert.are.equal(E.state_fields.seeded, i32_at(st, 12))
    assert.are.equal(E.state_fields.next, u64_at(st, 16))
    assert.are.equal(E.state_fields.normal_valid, i32_at(st, 5040))
  end)

  it('set_rng_state round-trips, including the cached normal', function()
    torch.manual_seed(9)
    torch.randn(3) -- leaves a cached normal
    local st = torch.get_rng_state()
    local a, b = torch.randn(2), torch.rand(3)
    torch.set_rng_state(st)
    H.near(torch.randn(2), a, 0, 2e-8)
    H.near(torch.rand(3), b, 0, 2e-8)
    -- the state tensor is a copy
    st:zero_()
    torch.manual_seed(9)
    torch.randn(3)
    H.near(torch.randn(2), a, 0, 2e-8)
  end)

  it('Generator objects are independent of the global stream', function()
    local g = torch.Generator():manual_seed(7)
    assert.are.equal(7, g:initial_seed())
    torch.manual_seed(99)
    H.near(torch.rand(3, { generator = g }), E.gen_vs_global, 0, 2e-8)
    local global_next = torch.rand(2)
    torch.manual_seed(99)
    H.near(torch.rand(2), global_next, 0, 2e-8) -- g's draws did not touch the default stream
    -- state of a Generator object
    local st = g:get_state()
    local x = torch.randn(5, { generator = g })
    g:set_state(st)
    H.near(torch.randn(5, { generator = g }), x, 0, 2e-8)
    -- the generator option reaches every function
    local g2 = torch.Generator():manual_seed(3)
    H.near(torch.randint(-5, 5, { 8 }, { generator = g2 }), E.randint, 0, 2e-8)
    g2:manual_seed(4)
    H.near(torch.randperm(10, { generator = g2 }), E.randperm10, 0, 2e-8)
    g2:manual_seed(5)
    H.near(torch.empty(10):bernoulli_(0.3, { generator = g2 }), E.bernoulli_s, 0, 2e-8)
    g2:manual_seed(6)
    H.near(torch.multinomial(torch.tensor({ 0.1, 0.2, 0.3, 0.4 }), 3, { generator = g2 }), E.multinomial_norep, 0, 2e-8)
    g2:manual_seed(1)
    H.near(torch.empty(5):uniform_(-2.5, 7, { generator = g2 }), E.uniform_ab, 0, 2e-8)
    g2:manual_seed(1)
    H.near(torch.empty(20):normal_(3, 0.5, { generator = g2 }), E.normal_mean_std, 0, 2e-8)
    -- a fresh Generator starts from PyTorch's default seed
    assert.are.equal(67280421310721, torch.Generator():initial_seed())
  end)

  it('_like factories keep shape and dtype', function()
    local t = torch.zeros(2, 3, { dtype = torch.float64 })
    local r = torch.rand_like(t)
    assert.are.equal(torch.float64, r.dtype)
    assert.are.same({ 2, 3 }, H.shape(r))
    assert.are.same({ 2, 3 }, H.shape(torch.randn_like(t)))
    local i = torch.randint_like(t, 3, 7)
    for _, v in ipairs(H.flat(i:tolist())) do assert.is_true(v >= 3 and v < 7 and v == math.floor(v)) end
    local j = torch.randint_like(t, 4)
    for _, v in ipairs(H.flat(j:tolist())) do assert.is_true(v >= 0 and v < 4) end
  end)

  it('random_ without arguments stays in the dtype\'s range', function()
    local b = torch.empty(20, { dtype = torch.uint8 }):random_()
    for _, v in ipairs(b:tolist()) do assert.is_true(v >= 0 and v <= 255) end
    local l = torch.empty(20, { dtype = torch.int64 }):random_()
    for _, v in ipairs(l:tolist()) do assert.is_true(v >= 0) end
    local f = torch.empty(20):random_(5)
    for _, v in ipairs(f:tolist()) do assert.is_true(v >= 0 and v < 5 and v == math.floor(v)) end
  end)
end)

describe('random: errors', function()
  it('randint needs low < high', function()
    H.errors_with(function() torch.randint(5, 5, { 3 }) end,
      "random_ expects 'from' to be less than 'to', but got from=5 >= to=5")
    H.errors_with(function() torch.randint(5, 2, { 3 }) end, "but got from=5 >= to=2")
    H.errors_with(function() torch.randint(0, 1000, { 3 }, { dtype = torch.int8 }) end, 'to - 1 is out of bounds')
    H.errors_with(function() torch.randint(0, 1.5, { 3 }) end, 'high must be an integer')
  end)

  it('multinomial rejects bad probabilities', function()
    H.errors_with(function() torch.multinomial(torch.tensor({ 0.5, -1 }), 1) end,
      'probability tensor contains either `inf`, `nan` or element < 0')
    H.errors_with(function() torch.multinomial(torch.tensor({ 0.5, -1 }), 2, true) end,
      'invalid multinomial distribution (encountering probability entry < 0)')
    H.errors_with(function() torch.multinomial(torch.tensor({ 0, 0 }), 1) end,
      'invalid multinomial distribution (sum of probabilities <= 0)')
    H.errors_with(function() torch.multinomial(torch.tensor({ 0, 0 }), 2, true) end,
      'invalid multinomial distribution (sum of probabilities <= 0)')
    H.errors_with(function() torch.multinomial(torch.tensor({ 0.5, 0.5 }), 3) end,
      'cannot sample n_sample > prob_dist.size(-1) samples without replacement')
    H.errors_with(function() torch.multinomial(torch.tensor({ 0.5, 0.5 }), 0) end, 'cannot sample n_sample <= 0 samples')
    H.errors_with(function() torch.multinomial(torch.ones(2, 2, 2), 1) end, 'prob_dist must be 1 or 2 dim')
    H.errors_with(function() torch.multinomial(torch.tensor({ 1, 2 }, { dtype = torch.int64 }), 1) end,
      'multinomial only supports floating-point dtypes for input, got: Long')
  end)

  it('negative sizes', function()
    H.errors_with(function() torch.rand(-1) end, 'rand: Trying to create tensor with negative dimension -1: [-1]')
    H.errors_with(function() torch.randn(2, -3) end, 'randn: Trying to create tensor with negative dimension -3: [2, -3]')
    H.errors_with(function() torch.randint(0, 3, { -2 }) end, 'negative dimension -2')
    H.errors_with(function() torch.randperm(-1) end, 'Trying to create tensor with negative dimension -1')
  end)

  it('parameter checks', function()
    H.errors_with(function() torch.empty(3):normal_(0, -1) end, 'normal expects std >= 0.0, but found std -1')
    H.errors_with(function() torch.empty(3):uniform_(1, 0) end,
      'uniform_ expects to return a [from, to) range, but found from=1 > to=0')
    H.errors_with(function() torch.empty(3, { dtype = torch.int64 }):uniform_(0, 1) end,
      "\"check_uniform_bounds\" not implemented for 'Long'")
    H.errors_with(function() torch.empty(3, { dtype = torch.int64 }):normal_() end,
      "\"normal_kernel_cpu\" not implemented for 'Long'")
    H.errors_with(function() torch.empty(3):bernoulli_(1.5) end, 'bernoulli_ expects p to be in [0, 1], but got p=1.5')
    H.errors_with(function() torch.bernoulli(torch.tensor({ 1.5 })) end, 'Expected p_in >= 0 && p_in <= 1')
    H.errors_with(function() torch.empty(3):exponential_(-1) end, 'exponential_ expects lambda >= 0.0, but found lambda=-1')
    H.errors_with(function() torch.empty(3):geometric_(0) end, 'geometric_ expects p to be in (0, 1), but got p=0')
    H.errors_with(function() torch.randperm(300, { dtype = torch.uint8 }) end, 'without overflow')
    H.errors_with(function() torch.rand(2, { generator = 5 }) end, 'generator must be a torch.Generator')
  end)

  it('set_rng_state checks its argument', function()
    H.errors_with(function() torch.set_rng_state(torch.zeros(10, { dtype = torch.uint8 })) end,
      'Expected either a CPUGeneratorImplStateLegacy of size 5048 or a CPUGeneratorImplState of size 5056 but found the input RNG state size to be 10')
    H.errors_with(function() torch.set_rng_state(torch.zeros(5056, { dtype = torch.uint8 })) end, 'Invalid mt19937 state')
    H.errors_with(function() torch.set_rng_state(torch.zeros(5056)) end, 'RNG state must be a torch.ByteTensor')
  end)
end)
