-- tostring(tensor) against PyTorch 1.13's printing (torch/_tensor_str.py).
-- Every expected string was printed by PyTorch 1.13 (`repr(x)`) for the Python expression in the
-- comment above it; the printoptions cases ran `torch.set_printoptions(...)` first and
-- `torch.set_printoptions(profile='default')` after.
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'
local T = require 'moontorch.tensor'

-- R(n, opts, scale, add): the values (0..n-1) * scale + add (as torch.arange(n) * scale + add),
-- rounded as PyTorch's float32 arithmetic rounds them
local function R(n, opts, scale, add)
  local f32 = not (opts and opts.dtype) or opts.dtype == torch.float32
  local fl = ffi.new('float[1]')
  local function r32(x) if f32 then fl[0] = x; return fl[0] end return x end
  local v = {}
  for i = 1, n do
    local x = i - 1
    if scale then x = r32(x * r32(scale)) end
    if add then x = r32(x + add) end
    v[i] = x
  end
  return torch.tensor(v, opts)
end

-- torch.cat([torch.ones(500), torch.tensor([1e-6]), torch.ones(500)]) as a Lua table
local ONE_TINY_ONE = {}
for i = 1, 500 do ONE_TINY_ONE[i] = 1 end
ONE_TINY_ONE[501] = 1e-6
for i = 502, 1001 do ONE_TINY_ONE[i] = 1 end

-- { name, tensor builder, printoptions or nil, PyTorch's string }
local cases = {
  -- torch.tensor([1., 2., 3.])
  { [==[floats as integers]==], function() return torch.tensor({1, 2, 3}) end, nil,
    [==[tensor([1., 2., 3.])]==] },
  -- torch.tensor([1.5, -2.25, 3.])
  { [==[fixed 4 decimals]==], function() return torch.tensor({1.5, -2.25, 3}) end, nil,
    [==[tensor([ 1.5000, -2.2500,  3.0000])]==] },
  -- torch.tensor([0.1, 0.25, 100.])
  { [==[common width]==], function() return torch.tensor({0.1, 0.25, 100}) end, nil,
    [==[tensor([  0.1000,   0.2500, 100.0000])]==] },
  -- torch.tensor([1.23455, 2.00005, 0.99995])
  { [==[rounding at the 4th decimal]==], function() return torch.tensor({1.23455, 2.00005, 0.99995}) end, nil,
    [==[tensor([1.2345, 2.0001, 0.9999])]==] },
  -- torch.tensor([1e-5, 1.])
  { [==[sci: small value]==], function() return torch.tensor({1e-5, 1}) end, nil,
    [==[tensor([1.0000e-05, 1.0000e+00])]==] },
  -- torch.tensor([0.5, 1e-4])
  { [==[sci: 1e-4 in float32 is below 1e-4]==], function() return torch.tensor({0.5, 1e-4}) end, nil,
    [==[tensor([5.0000e-01, 1.0000e-04])]==] },
  -- torch.tensor([123456.789, 0.5])
  { [==[sci: ratio over 1000]==], function() return torch.tensor({123456.789, 0.5}) end, nil,
    [==[tensor([1.2346e+05, 5.0000e-01])]==] },
  -- torch.tensor([-1e-7, 2.5, -300.])
  { [==[sci: negative values]==], function() return torch.tensor({-1e-7, 2.5, -300}) end, nil,
    [==[tensor([-1.0000e-07,  2.5000e+00, -3.0000e+02])]==] },
  -- torch.tensor([1., 1000.])
  { [==[int mode: ratio exactly 1000 stays fixed]==], function() return torch.tensor({1, 1000}) end, nil,
    [==[tensor([   1., 1000.])]==] },
  -- torch.tensor([1., 2000.])
  { [==[int mode: ratio over 1000 is sci]==], function() return torch.tensor({1, 2000}) end, nil,
    [==[tensor([1.0000e+00, 2.0000e+03])]==] },
  -- torch.tensor([2., 1e9])
  { [==[int mode: over 1e8 is sci]==], function() return torch.tensor({2, 1e9}) end, nil,
    [==[tensor([2.0000e+00, 1.0000e+09])]==] },
  -- torch.tensor([12345678., 99999999.])
  { [==[int mode: large integers in a float tensor]==], function() return torch.tensor({12345678, 99999999}) end, nil,
    [==[tensor([ 12345678., 100000000.])]==] },
  -- torch.tensor([nan, inf, -inf, 1.5])
  { [==[nan and inf]==], function() return torch.tensor({0/0, math.huge, -math.huge, 1.5}) end, nil,
    [==[tensor([   nan,    inf,   -inf, 1.5000])]==] },
  -- torch.tensor([nan, 1., -inf, 20.])
  { [==[nan in int mode]==], function() return torch.tensor({0/0, 1, -math.huge, 20}) end, nil,
    [==[tensor([nan,  1., -inf, 20.])]==] },
  -- torch.tensor([1e-5, nan])
  { [==[nan in sci mode]==], function() return torch.tensor({1e-5, 0/0}) end, nil,
    [==[tensor([1.0000e-05,        nan])]==] },
  -- torch.tensor([nan, inf])
  { [==[only nan/inf]==], function() return torch.tensor({0/0, math.huge}) end, nil,
    [==[tensor([nan, inf])]==] },
  -- torch.zeros(3)
  { [==[zeros]==], function() return torch.zeros(3) end, nil,
    [==[tensor([0., 0., 0.])]==] },
  -- torch.tensor([-0., 1.5])
  { [==[negative zero, fixed]==], function() return torch.tensor({-0.0, 1.5}) end, nil,
    [==[tensor([-0.0000, 1.5000])]==] },
  -- torch.tensor([-0., 0., 2.])
  { [==[negative zero, int mode]==], function() return torch.tensor({-0.0, 0, 2}) end, nil,
    [==[tensor([-0., 0., 2.])]==] },
  -- torch.tensor([1.5, 2.], dtype=torch.float64)
  { [==[float64 suffix]==], function() return torch.tensor({1.5, 2}, {dtype = torch.float64}) end, nil,
    [==[tensor([1.5000, 2.0000], dtype=torch.float64)]==] },
  -- torch.tensor([0.1, 1/3], dtype=torch.float64)
  { [==[float64 keeps double precision]==], function() return torch.tensor({0.1, 1/3}, {dtype = torch.float64}) end, nil,
    [==[tensor([0.1000, 0.3333], dtype=torch.float64)]==] },
  -- torch.tensor([1.5, 2.25, 0.1], dtype=torch.float16)
  { [==[float16 suffix]==], function() return torch.tensor({1.5, 2.25, 0.1}, {dtype = torch.float16}) end, nil,
    [==[tensor([1.5000, 2.2500, 0.1000], dtype=torch.float16)]==] },
  -- torch.tensor([1.5, 3.], dtype=torch.bfloat16)
  { [==[bfloat16 suffix]==], function() return torch.tensor({1.5, 3}, {dtype = torch.bfloat16}) end, nil,
    [==[tensor([1.5000, 3.0000], dtype=torch.bfloat16)]==] },
  -- torch.tensor([-1, 10, 100])
  { [==[int64: no suffix, common width]==], function() return torch.tensor({-1, 10, 100}, {dtype = torch.int64}) end, nil,
    [==[tensor([ -1,  10, 100])]==] },
  -- torch.tensor([1, 2, 3], dtype=torch.int32)
  { [==[int32 suffix]==], function() return torch.tensor({1, 2, 3}, {dtype = torch.int32}) end, nil,
    [==[tensor([1, 2, 3], dtype=torch.int32)]==] },
  -- torch.tensor([0, 7, 255], dtype=torch.uint8)
  { [==[uint8 suffix]==], function() return torch.tensor({0, 7, 255}, {dtype = torch.uint8}) end, nil,
    [==[tensor([  0,   7, 255], dtype=torch.uint8)]==] },
  -- torch.tensor([2**60, -3])
  { [==[int64 beyond 2^53]==], function() return torch.tensor({2^60, -3}, {dtype = torch.int64}) end, nil,
    [==[tensor([1152921504606846976,                  -3])]==] },
  -- torch.tensor([True, False])
  { [==[bool]==], function() return torch.tensor({true, false}) end, nil,
    [==[tensor([ True, False])]==] },
  -- torch.tensor([True, True])
  { [==[bool, all true]==], function() return torch.tensor({true, true}) end, nil,
    [==[tensor([True, True])]==] },
  -- torch.tensor([[True], [False]])
  { [==[bool 2-D]==], function() return torch.tensor({{true}, {false}}) end, nil,
    [==[tensor([[ True],
        [False]])]==] },
  -- torch.tensor([])
  { [==[empty]==], function() return torch.tensor({}) end, nil,
    [==[tensor([])]==] },
  -- torch.zeros(0, 3)
  { [==[empty 2-D]==], function() return torch.zeros(0, 3) end, nil,
    [==[tensor([], size=(0, 3))]==] },
  -- torch.zeros(0, dtype=torch.int64)
  { [==[empty int64]==], function() return torch.zeros(0, {dtype = torch.int64}) end, nil,
    [==[tensor([], dtype=torch.int64)]==] },
  -- torch.zeros(2, 0, 1, dtype=torch.float64)
  { [==[empty 3-D float64]==], function() return torch.zeros(2, 0, 1, {dtype = torch.float64}) end, nil,
    [==[tensor([], size=(2, 0, 1), dtype=torch.float64)]==] },
  -- torch.tensor(3.5)
  { [==[0-dim float]==], function() return torch.tensor(3.5) end, nil,
    [==[tensor(3.5000)]==] },
  -- torch.tensor(3.)
  { [==[0-dim integral float]==], function() return torch.tensor(3) end, nil,
    [==[tensor(3.)]==] },
  -- torch.tensor(1e-5)
  { [==[0-dim small float]==], function() return torch.tensor(1e-5) end, nil,
    [==[tensor(1.0000e-05)]==] },
  -- torch.tensor(nan)
  { [==[0-dim nan]==], function() return torch.tensor(0/0) end, nil,
    [==[tensor(nan)]==] },
  -- torch.tensor(-7)
  { [==[0-dim int64]==], function() return torch.tensor(-7, {dtype = torch.int64}) end, nil,
    [==[tensor(-7)]==] },
  -- torch.tensor(True)
  { [==[0-dim bool]==], function() return torch.tensor(true) end, nil,
    [==[tensor(True)]==] },
  -- torch.tensor(2.5, dtype=torch.float64)
  { [==[0-dim float64]==], function() return torch.tensor(2.5, {dtype = torch.float64}) end, nil,
    [==[tensor(2.5000, dtype=torch.float64)]==] },
  -- torch.tensor([[1., 2.], [3., 4.]])
  { [==[2-D]==], function() return torch.tensor({{1, 2}, {3, 4}}) end, nil,
    [==[tensor([[1., 2.],
        [3., 4.]])]==] },
  -- torch.tensor([[1.5, -20.], [300.25, 4.]])
  { [==[2-D mixed widths]==], function() return torch.tensor({{1.5, -20}, {300.25, 4}}) end, nil,
    [==[tensor([[  1.5000, -20.0000],
        [300.2500,   4.0000]])]==] },
  -- torch.tensor([[1, 2, 3], [4, 5, 6]]).t()
  { [==[2-D transposed view]==], function() return torch.tensor({{1, 2, 3}, {4, 5, 6}}, {dtype = torch.int64}):t() end, nil,
    [==[tensor([[1, 4],
        [2, 5],
        [3, 6]])]==] },
  -- torch.tensor([[1.5, 2., 3.], [4., 5., 6.]])[:, 1:3]
  { [==[narrowed view]==], function() return torch.tensor({{1.5, 2, 3}, {4, 5, 6}}):narrow(2, 2, 2) end, nil,
    [==[tensor([[2., 3.],
        [5., 6.]])]==] },
  -- torch.arange(8.).reshape(2, 2, 2)
  { [==[3-D: blank lines between blocks]==], function() return R(8):view(2, 2, 2) end, nil,
    [==[tensor([[[0., 1.],
         [2., 3.]],

        [[4., 5.],
         [6., 7.]]])]==] },
  -- torch.arange(8).reshape(2, 1, 2, 2)
  { [==[4-D: two blank lines]==], function() return R(8, {dtype = torch.int64}):view(2, 1, 2, 2) end, nil,
    [==[tensor([[[[0, 1],
          [2, 3]]],


        [[[4, 5],
          [6, 7]]]])]==] },
  -- torch.arange(2000.)
  { [==[summarised 1-D float]==], function() return R(2000) end, nil,
    [==[tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,
        1.9990e+03])]==] },
  -- torch.arange(2000.) / 4
  { [==[summarised 1-D fractional]==], function() return R(2000, nil, 0.25) end, nil,
    [==[tensor([0.0000e+00, 2.5000e-01, 5.0000e-01,  ..., 4.9925e+02, 4.9950e+02,
        4.9975e+02])]==] },
  -- torch.arange(1001)
  { [==[summarised 1-D int]==], function() return R(1001, {dtype = torch.int64}) end, nil,
    [==[tensor([   0,    1,    2,  ...,  998,  999, 1000])]==] },
  -- torch.arange(2000).reshape(40, 50)
  { [==[summarised 2-D]==], function() return R(2000, {dtype = torch.int64}):view(40, 50) end, nil,
    [==[tensor([[   0,    1,    2,  ...,   47,   48,   49],
        [  50,   51,   52,  ...,   97,   98,   99],
        [ 100,  101,  102,  ...,  147,  148,  149],
        ...,
        [1850, 1851, 1852,  ..., 1897, 1898, 1899],
        [1900, 1901, 1902,  ..., 1947, 1948, 1949],
        [1950, 1951, 1952,  ..., 1997, 1998, 1999]])]==] },
  -- torch.arange(2002.).reshape(1001, 2)
  { [==[summarised 2-D, only rows cut]==], function() return R(2002):view(1001, 2) end, nil,
    [==[tensor([[0.0000e+00, 1.0000e+00],
        [2.0000e+00, 3.0000e+00],
        [4.0000e+00, 5.0000e+00],
        ...,
        [1.9960e+03, 1.9970e+03],
        [1.9980e+03, 1.9990e+03],
        [2.0000e+03, 2.0010e+03]])]==] },
  -- torch.arange(2002.).reshape(2, 1001)
  { [==[summarised 2-D, only columns cut]==], function() return R(2002):view(2, 1001) end, nil,
    [==[tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.9800e+02, 9.9900e+02,
         1.0000e+03],
        [1.0010e+03, 1.0020e+03, 1.0030e+03,  ..., 1.9990e+03, 2.0000e+03,
         2.0010e+03]])]==] },
  -- torch.arange(3000).reshape(10, 10, 30)
  { [==[summarised 3-D]==], function() return R(3000, {dtype = torch.int64}):view(10, 10, 30) end, nil,
    [==[tensor([[[   0,    1,    2,  ...,   27,   28,   29],
         [  30,   31,   32,  ...,   57,   58,   59],
         [  60,   61,   62,  ...,   87,   88,   89],
         ...,
         [ 210,  211,  212,  ...,  237,  238,  239],
         [ 240,  241,  242,  ...,  267,  268,  269],
         [ 270,  271,  272,  ...,  297,  298,  299]],

        [[ 300,  301,  302,  ...,  327,  328,  329],
         [ 330,  331,  332,  ...,  357,  358,  359],
         [ 360,  361,  362,  ...,  387,  388,  389],
         ...,
         [ 510,  511,  512,  ...,  537,  538,  539],
         [ 540,  541,  542,  ...,  567,  568,  569],
         [ 570,  571,  572,  ...,  597,  598,  599]],

        [[ 600,  601,  602,  ...,  627,  628,  629],
         [ 630,  631,  632,  ...,  657,  658,  659],
         [ 660,  661,  662,  ...,  687,  688,  689],
         ...,
         [ 810,  811,  812,  ...,  837,  838,  839],
         [ 840,  841,  842,  ...,  867,  868,  869],
         [ 870,  871,  872,  ...,  897,  898,  899]],

        ...,

        [[2100, 2101, 2102,  ..., 2127, 2128, 2129],
         [2130, 2131, 2132,  ..., 2157, 2158, 2159],
         [2160, 2161, 2162,  ..., 2187, 2188, 2189],
         ...,
         [2310, 2311, 2312,  ..., 2337, 2338, 2339],
         [2340, 2341, 2342,  ..., 2367, 2368, 2369],
         [2370, 2371, 2372,  ..., 2397, 2398, 2399]],

        [[2400, 2401, 2402,  ..., 2427, 2428, 2429],
         [2430, 2431, 2432,  ..., 2457, 2458, 2459],
         [2460, 2461, 2462,  ..., 2487, 2488, 2489],
         ...,
         [2610, 2611, 2612,  ..., 2637, 2638, 2639],
         [2640, 2641, 2642,  ..., 2667, 2668, 2669],
         [2670, 2671, 2672,  ..., 2697, 2698, 2699]],

        [[2700, 2701, 2702,  ..., 2727, 2728, 2729],
         [2730, 2731, 2732,  ..., 2757, 2758, 2759],
         [2760, 2761, 2762,  ..., 2787, 2788, 2789],
         ...,
         [2910, 2911, 2912,  ..., 2937, 2938, 2939],
         [2940, 2941, 2942,  ..., 2967, 2968, 2969],
         [2970, 2971, 2972,  ..., 2997, 2998, 2999]]])]==] },
  -- torch.cat([torch.ones(500), torch.tensor([1e-6]), torch.ones(500)])
  { [==[summarised: formatter sees only shown values]==], function() return torch.tensor(ONE_TINY_ONE) end, nil,
    [==[tensor([1., 1., 1.,  ..., 1., 1., 1.])]==] },
  -- torch.arange(2000.).reshape(40, 50).t()
  { [==[summarised transposed]==], function() return R(2000):view(40, 50):t() end, nil,
    [==[tensor([[0.0000e+00, 5.0000e+01, 1.0000e+02,  ..., 1.8500e+03, 1.9000e+03,
         1.9500e+03],
        [1.0000e+00, 5.1000e+01, 1.0100e+02,  ..., 1.8510e+03, 1.9010e+03,
         1.9510e+03],
        [2.0000e+00, 5.2000e+01, 1.0200e+02,  ..., 1.8520e+03, 1.9020e+03,
         1.9520e+03],
        ...,
        [4.7000e+01, 9.7000e+01, 1.4700e+02,  ..., 1.8970e+03, 1.9470e+03,
         1.9970e+03],
        [4.8000e+01, 9.8000e+01, 1.4800e+02,  ..., 1.8980e+03, 1.9480e+03,
         1.9980e+03],
        [4.9000e+01, 9.9000e+01, 1.4900e+02,  ..., 1.8990e+03, 1.9490e+03,
         1.9990e+03]])]==] },
  -- torch.arange(30.) / 3
  { [==[wide row wraps at 80]==], function() return R(30, nil, 1/3) end, nil,
    [==[tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,
        3.0000, 3.3333, 3.6667, 4.0000, 4.3333, 4.6667, 5.0000, 5.3333, 5.6667,
        6.0000, 6.3333, 6.6667, 7.0000, 7.3333, 7.6667, 8.0000, 8.3333, 8.6667,
        9.0000, 9.3333, 9.6667])]==] },
  -- torch.arange(50)
  { [==[wide int row]==], function() return R(50, {dtype = torch.int64}) end, nil,
    [==[tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,
        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,
        36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49])]==] },
  -- torch.arange(40.).reshape(2, 20) * 1.5
  { [==[wide 2-D rows wrap with indent]==], function() return R(40, nil, 1.5):view(2, 20) end, nil,
    [==[tensor([[ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,
         12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, 21.0000, 22.5000,
         24.0000, 25.5000, 27.0000, 28.5000],
        [30.0000, 31.5000, 33.0000, 34.5000, 36.0000, 37.5000, 39.0000, 40.5000,
         42.0000, 43.5000, 45.0000, 46.5000, 48.0000, 49.5000, 51.0000, 52.5000,
         54.0000, 55.5000, 57.0000, 58.5000]])]==] },
  -- torch.arange(60).reshape(2, 1, 30) * 1000
  { [==[wide 3-D rows]==], function() return R(60, {dtype = torch.int64}, 1000):view(2, 1, 30) end, nil,
    [==[tensor([[[    0,  1000,  2000,  3000,  4000,  5000,  6000,  7000,  8000,  9000,
          10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, 19000,
          20000, 21000, 22000, 23000, 24000, 25000, 26000, 27000, 28000, 29000]],

        [[30000, 31000, 32000, 33000, 34000, 35000, 36000, 37000, 38000, 39000,
          40000, 41000, 42000, 43000, 44000, 45000, 46000, 47000, 48000, 49000,
          50000, 51000, 52000, 53000, 54000, 55000, 56000, 57000, 58000, 59000]]])]==] },
  -- torch.arange(2000.) * 1e-6
  { [==[summarised and wrapped (sci widths)]==], function() return R(2000, nil, 1e-6) end, nil,
    [==[tensor([0.0000e+00, 1.0000e-06, 2.0000e-06,  ..., 1.9970e-03, 1.9980e-03,
        1.9990e-03])]==] },
  -- torch.arange(6., dtype=torch.float64) * 1.5 + 100
  { [==[dtype suffix moves to the next line]==], function() return R(6, {dtype = torch.float64}, 1.5, 100) end, nil,
    [==[tensor([100.0000, 101.5000, 103.0000, 104.5000, 106.0000, 107.5000],
       dtype=torch.float64)]==] },
  -- torch.arange(12., dtype=torch.float64) * 1.5
  { [==[dtype suffix after a wrapped row]==], function() return R(12, {dtype = torch.float64}, 1.5) end, nil,
    [==[tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,
        12.0000, 13.5000, 15.0000, 16.5000], dtype=torch.float64)]==] },
  -- torch.set_printoptions(precision=2); torch.tensor([1.12345, 2.5])
  { [==[printoptions precision=2]==], function() return torch.tensor({1.12345, 2.5}) end, {precision = 2},
    [==[tensor([1.12, 2.50])]==] },
  -- torch.set_printoptions(precision=0); torch.tensor([1.5, 2.25])
  { [==[printoptions precision=0]==], function() return torch.tensor({1.5, 2.25}) end, {precision = 0},
    [==[tensor([2, 2])]==] },
  -- torch.set_printoptions(threshold=5); torch.arange(10)
  { [==[printoptions threshold=5]==], function() return R(10, {dtype = torch.int64}) end, {threshold = 5},
    [==[tensor([0, 1, 2,  ..., 7, 8, 9])]==] },
  -- torch.set_printoptions(edgeitems=1); torch.arange(2000).reshape(20, 100)
  { [==[printoptions edgeitems=1]==], function() return R(2000, {dtype = torch.int64}):view(20, 100) end, {edgeitems = 1},
    [==[tensor([[   0,  ...,   99],
        ...,
        [1900,  ..., 1999]])]==] },
  -- torch.set_printoptions(linewidth=40); torch.arange(20.) / 2
  { [==[printoptions linewidth=40]==], function() return R(20, nil, 0.5) end, {linewidth = 40},
    [==[tensor([0.0000, 0.5000, 1.0000, 1.5000,
        2.0000, 2.5000, 3.0000, 3.5000,
        4.0000, 4.5000, 5.0000, 5.5000,
        6.0000, 6.5000, 7.0000, 7.5000,
        8.0000, 8.5000, 9.0000, 9.5000])]==] },
  -- torch.set_printoptions(sci_mode=True); torch.tensor([1.5, 20.])
  { [==[printoptions sci_mode=True]==], function() return torch.tensor({1.5, 20}) end, {sci_mode = true},
    [==[tensor([1.5000e+00, 2.0000e+01])]==] },
  -- torch.set_printoptions(sci_mode=True); torch.tensor([1., 20.])
  { [==[printoptions sci_mode=True, int mode]==], function() return torch.tensor({1, 20}) end, {sci_mode = true},
    [==[tensor([1.0000e+00, 2.0000e+01])]==] },
  -- torch.set_printoptions(sci_mode=True); torch.zeros(2)
  { [==[printoptions sci_mode=True, zeros only]==], function() return torch.zeros(2) end, {sci_mode = true},
    [==[tensor([0., 0.])]==] },
  -- torch.set_printoptions(sci_mode=False); torch.tensor([1e-5, 1.])
  { [==[printoptions sci_mode=False]==], function() return torch.tensor({1e-5, 1}) end, {sci_mode = false},
    [==[tensor([    0.0000,     1.0000])]==] },
  -- torch.set_printoptions(profile='short'); torch.tensor([1.12345, 2.5])
  { [==[printoptions profile='short']==], function() return torch.tensor({1.12345, 2.5}) end, {profile = 'short'},
    [==[tensor([1.12, 2.50])]==] },
  -- torch.set_printoptions(profile='short'); torch.arange(2000.) / 3
  { [==[printoptions profile='short', summarised]==], function() return R(2000, nil, 1/3) end, {profile = 'short'},
    [==[tensor([0.00e+00, 3.33e-01,  ..., 6.66e+02, 6.66e+02])]==] },
  -- torch.set_printoptions(profile='full'); torch.arange(12).reshape(3, 4)
  { [==[printoptions profile='full', small]==], function() return R(12, {dtype = torch.int64}):view(3, 4) end, {profile = 'full'},
    [==[tensor([[ 0,  1,  2,  3],
        [ 4,  5,  6,  7],
        [ 8,  9, 10, 11]])]==] },
  -- torch.set_printoptions(profile='short', precision=3); torch.arange(2000.) / 3
  { [==[printoptions profile='short' then precision=3]==], function() return R(2000, nil, 1/3) end, {profile = 'short', precision = 3},
    [==[tensor([0.000e+00, 3.333e-01,  ..., 6.660e+02, 6.663e+02])]==] },
}

local function with_options(o, fn)
  if o then torch.set_printoptions(o) end
  local ok, r = pcall(fn)
  torch.set_printoptions({ profile = 'default' })
  if not ok then error(r, 0) end
  return r
end

-- replace props[name] of the tensor type for the duration of fn (autograd fills them later)
local function with_prop(name, f, fn)
  local old = T.props[name]
  T.props[name] = f
  local ok, r = pcall(fn)
  T.props[name] = old
  if not ok then error(r, 0) end
  return r
end

describe('tostring(tensor) as PyTorch prints it', function()
  for _, c in ipairs(cases) do
    it(c[1], function()
      local s = with_options(c[3], function() return tostring(c[2]()) end)
      assert.are.equal(c[4], s)
    end)
  end
end)

describe('suffixes', function()
  it('requires_grad=True', function()
    -- torch.tensor([1., 2.], requires_grad=True)
    local t = torch.tensor({ 1, 2 })
    local s = with_prop('requires_grad', function() return true end, function() return tostring(t) end)
    assert.are.equal('tensor([1., 2.], requires_grad=True)', s)
  end)

  it('requires_grad=True on a wrapped row', function()
    -- (torch.arange(12.) * 1.5).requires_grad_()
    local t = R(12, nil, 1.5)
    local s = with_prop('requires_grad', function() return true end, function() return tostring(t) end)
    assert.are.equal('tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n' ..
      '        12.0000, 13.5000, 15.0000, 16.5000], requires_grad=True)', s)
  end)

  it('grad_fn=<AddBackward0> (an object with name())', function()
    -- x = torch.tensor([1., 2.], requires_grad=True); x + 1
    local t = torch.tensor({ 2, 3 })
    local gf = { name = function() return 'AddBackward0' end }
    local s = with_prop('requires_grad', function() return true end, function()
      return with_prop('grad_fn', function() return gf end, function() return tostring(t) end)
    end)
    assert.are.equal('tensor([2., 3.], grad_fn=<AddBackward0>)', s)
  end)

  it('grad_fn (an object with __tostring) after dtype, on its own line', function()
    -- torch.arange(12., dtype=torch.float64, requires_grad=True) * 1.5
    local t = R(12, { dtype = torch.float64 }, 1.5)
    local gf = setmetatable({}, { __tostring = function() return 'torch::autograd::MulBackward0' end })
    local s = with_prop('grad_fn', function() return gf end, function() return tostring(t) end)
    assert.are.equal('tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n' ..
      '        12.0000, 13.5000, 15.0000, 16.5000], dtype=torch.float64,\n' ..
      '       grad_fn=<MulBackward0>)', s)
  end)

  it('nn.Parameter', function()
    -- torch.nn.Parameter(torch.tensor([1., 2.]))
    local t = torch.tensor({ 1, 2 })
    t._flags = bit.bor(t._flags, 2) -- MT_TENSOR_PARAMETER
    local s = with_prop('requires_grad', function() return true end, function() return tostring(t) end)
    assert.are.equal('Parameter containing:\ntensor([1., 2.], requires_grad=True)', s)
  end)

  it('nn.Parameter, 2-D float64', function()
    -- torch.nn.Parameter(torch.tensor([[1.5, 2.], [3., 4.]], dtype=torch.float64))
    local t = torch.tensor({ { 1.5, 2 }, { 3, 4 } }, { dtype = torch.float64 })
    t._flags = bit.bor(t._flags, 2)
    local s = with_prop('requires_grad', function() return true end, function() return tostring(t) end)
    assert.are.equal('Parameter containing:\ntensor([[1.5000, 2.0000],\n        [3.0000, 4.0000]], ' ..
      'dtype=torch.float64, requires_grad=True)', s)
  end)

  it("device='cuda:0' (values read through cpu())", function()
    -- torch.tensor([1.5, 2.], device='cuda')  ->  tensor([1.5000, 2.0000], device='cuda:0')
    local host = torch.tensor({ 1.5, 2 })
    local fake = torch.tensor({ 0, 0 })
    local old_cpu = T.methods.cpu
    T.methods.cpu = function(t) if rawequal(t, fake) then return host end return old_cpu(t) end
    fake._device_type = 1
    local ok, s = pcall(tostring, fake)
    fake._device_type = 0
    T.methods.cpu = old_cpu
    assert(ok, s)
    assert.are.equal("tensor([1.5000, 2.0000], device='cuda:0')", s)
  end)
end)

describe('default dtype float64', function()
  it('prints float32 with its dtype and float64 without', function()
    -- torch.set_default_dtype(torch.float64); then each of:
    --   torch.tensor([1.5, 2.])                       -> tensor([1.5000, 2.0000])
    --   torch.tensor([1.5, 2.], dtype=torch.float32)  -> tensor([1.5000, 2.0000], dtype=torch.float32)
    --   torch.zeros(0)                                -> tensor([])
    --   torch.zeros(0, dtype=torch.float32)           -> tensor([], dtype=torch.float32)
    torch.set_default_dtype(torch.float64)
    local ok, r = pcall(function()
      return {
        tostring(torch.tensor({ 1.5, 2 })),
        tostring(torch.tensor({ 1.5, 2 }, { dtype = torch.float32 })),
        tostring(torch.zeros(0)),
        tostring(torch.zeros(0, { dtype = torch.float32 })),
      }
    end)
    torch.set_default_dtype(torch.float32)
    assert(ok, r)
    assert.are.same({ 'tensor([1.5000, 2.0000])', 'tensor([1.5000, 2.0000], dtype=torch.float32)',
      'tensor([])', 'tensor([], dtype=torch.float32)' }, r)
  end)
end)

describe('set_printoptions', function()
  it("profile='full' prints everything", function()
    -- torch.set_printoptions(profile='full'); s = repr(torch.arange(1001))
    -- -> len(s) == 6678, s.count('\n') == 83, '...' not in s
    local s = with_options({ profile = 'full' }, function()
      return tostring(R(1001, { dtype = torch.int64 }))
    end)
    assert.are.equal(6678, #s)
    local _, nl = s:gsub('\n', '')
    assert.are.equal(83, nl)
    assert.is_nil(s:find('...', 1, true))
    assert.is_truthy(s:find('1000])', 1, true))
  end)

  it('a call without sci_mode resets it to automatic', function()
    -- torch.set_printoptions(sci_mode=False); torch.set_printoptions(precision=4)
    -- torch.tensor([1e-5, 1.])  ->  tensor([1.0000e-05, 1.0000e+00])
    torch.set_printoptions({ sci_mode = false })
    torch.set_printoptions({ precision = 4 })
    local s = tostring(torch.tensor({ 1e-5, 1 }))
    torch.set_printoptions({ profile = 'default' })
    assert.are.equal('tensor([1.0000e-05, 1.0000e+00])', s)
  end)

  it('rejects an unknown profile', function()
    H.errors_with(function() torch.set_printoptions({ profile = 'long' }) end, 'profile')
    torch.set_printoptions({ profile = 'default' })
  end)

  it('print uses tostring', function()
    assert.are.equal('tensor([1., 2.])', tostring(torch.tensor({ 1, 2 })))
  end)
end)

describe('summarised printing', function()
  it('converts only the shown elements of a big tensor', function()
    -- torch.zeros(1000, 1000) -> 'tensor([[0., 0., 0.,  ..., 0., 0., 0.],' ... (6 rows shown)
    local t = torch.zeros(1000, 1000)
    local s = tostring(t)
    assert.are.equal('tensor([[0., 0., 0.,  ..., 0., 0., 0.],\n' ..
      '        [0., 0., 0.,  ..., 0., 0., 0.],\n' ..
      '        [0., 0., 0.,  ..., 0., 0., 0.],\n' ..
      '        ...,\n' ..
      '        [0., 0., 0.,  ..., 0., 0., 0.],\n' ..
      '        [0., 0., 0.,  ..., 0., 0., 0.],\n' ..
      '        [0., 0., 0.,  ..., 0., 0., 0.]])', s)
  end)
end)
