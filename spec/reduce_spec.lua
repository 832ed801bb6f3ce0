-- Reductions (lua/ops/reduce.lua over core/tensor/reduce.c).
-- Run: MOONTORCH_BUILD_DIR=build luajit /usr/bin/busted spec/reduce_spec.lua
local H = require 'spec.support.helper'
local torch = H.torch

local nan, inf = 0 / 0, math.huge

-- Expected values: produced with PyTorch 1.13 (/usr/bin/python3) from the same inputs as below by a
-- generator that evaluates each case (Python dims 0-based; indices as PyTorch gives them, 0-based)
-- and prints { v = values, dt = dtype, shape = shape }; float16/float32 values printed through
-- float64. Keys name the op, the input and the (1-based) dims.
local E = {
  sum_A = { v = 1.0, dt = 'float32', shape = {} },
  sum_A_1 = { v = {5.5, -1.5, -3.0}, dt = 'float32', shape = {3} },
  sum_A_m1_keep = { v = {{2.5}, {-1.5}}, dt = 'float32', shape = {2, 1} },
  sum_A_2_f64 = { v = {2.5, -1.5}, dt = 'float64', shape = {2} },
  sum_X3_13 = { v = {6.0, 22.0, 38.0}, dt = 'float32', shape = {3} },
  sum_X3_m1m3_keep = { v = {{{6.0}, {22.0}, {38.0}}}, dt = 'float32', shape = {1, 3, 1} },
  sum_BT_1 = { v = {4.6, 0.9999999999999996, 1.9999999999999998}, dt = 'float64', shape = {3} },
  sum_BT = { v = 7.599999999999999, dt = 'float64', shape = {} },
  sum_E_1 = { v = {4.0, 8.0, 12.0}, dt = 'float32', shape = {3} },
  sum_E_2 = { v = {6.0, 6.0, 6.0, 6.0}, dt = 'float32', shape = {4} },
  sum_N_2 = { v = {1.0999999999999999, 6.3, -0.10000000000000009}, dt = 'float64', shape = {3} },
  sum_N = { v = 7.299999999999999, dt = 'float64', shape = {} },
  sum_I = { v = 11, dt = 'int64', shape = {} },
  sum_I32_1 = { v = {4, -6, 13}, dt = 'int64', shape = {3} },
  sum_Bo = { v = 4, dt = 'int64', shape = {} },
  sum_Bo_2 = { v = {2, 2}, dt = 'int64', shape = {2} },
  sum_H = { v = 1.0, dt = 'float16', shape = {} },
  sum_H_1 = { v = {5.5, -1.5, -3.0}, dt = 'float16', shape = {3} },
  sum_A_i64 = { v = 0, dt = 'int64', shape = {} },
  sum_Z = { v = 0.0, dt = 'float32', shape = {} },
  sum_Z_1 = { v = {0.0, 0.0, 0.0}, dt = 'float32', shape = {3} },
  sum_Z_2 = { v = {}, dt = 'float32', shape = {0} },
  mean_A = { v = 0.1666666716337204, dt = 'float32', shape = {} },
  mean_A_2 = { v = {0.8333333134651184, -0.5}, dt = 'float32', shape = {2} },
  mean_X3_23_keep = { v = {{{-0.25}}, {{5.75}}}, dt = 'float32', shape = {2, 1, 1} },
  mean_BT_2 = { v = {-1.1666666666666667, 1.7999999999999998, 0.6333333333333333, 1.2666666666666666}, dt = 'float64', shape = {4} },
  mean_E = { v = 2.0, dt = 'float32', shape = {} },
  mean_H_2 = { v = {0.83349609375, -0.5}, dt = 'float16', shape = {2} },
  mean_I_f64 = { v = 1.8333333333333333, dt = 'float64', shape = {} },
  mean_Z = { v = nan, dt = 'float32', shape = {} },
  mean_N_1 = { v = {1.7999999999999998, 0.6333333333333333}, dt = 'float64', shape = {2} },
  prod_A = { v = 108.0, dt = 'float32', shape = {} },
  prod_A_2 = { v = {-9.0, -12.0}, dt = 'float32', shape = {2} },
  prod_I = { v = 540, dt = 'int64', shape = {} },
  prod_Bo = { v = 0, dt = 'int64', shape = {} },
  prod_Z = { v = 1.0, dt = 'float32', shape = {} },
  prod_BT_1 = { v = {-0.9383999999999999, 14.111999999999998, -1.1880000000000002}, dt = 'float64', shape = {3} },
  prod_I32_2 = { v = {-12, -45}, dt = 'int64', shape = {2} },
  prod_A_i32 = { v = 0, dt = 'int32', shape = {} },
  amax_A = { v = 4.0, dt = 'float32', shape = {} },
  amax_A_1 = { v = {4.0, 0.5, 3.0}, dt = 'float32', shape = {3} },
  amin_A_m1_keep = { v = {{-2.0}, {-6.0}}, dt = 'float32', shape = {2, 1} },
  amax_X3_12 = { v = {7.0, 7.5, 8.0, 8.5}, dt = 'float32', shape = {4} },
  amax_I = { v = 9, dt = 'int64', shape = {} },
  amin_I32_2 = { v = {-1, -5}, dt = 'int32', shape = {2} },
  amax_Bo = { v = true, dt = 'bool', shape = {} },
  amax_NaNT_2 = { v = {nan, 2.0}, dt = 'float32', shape = {2} },
  amin_NaNT_1 = { v = {1.0, nan, -1.0}, dt = 'float32', shape = {3} },
  amin_BT_2 = { v = {-4.5, -1.2, -1.1, -0.8}, dt = 'float64', shape = {4} },
  amax_E_2 = { v = {3.0, 3.0, 3.0, 3.0}, dt = 'float32', shape = {4} },
  amax_H_1 = { v = {4.0, 0.5, 3.0}, dt = 'float16', shape = {3} },
  amax_Z_2 = { v = {}, dt = 'float32', shape = {0} },
  max_A = { v = 4.0, dt = 'float32', shape = {} },
  min_I = { v = -5, dt = 'int64', shape = {} },
  max_A_2 = { { v = {3.0, 4.0}, dt = 'float32', shape = {2} }, { v = {2, 0}, dt = 'int64', shape = {2} } },
  min_A_1 = { { v = {1.5, -2.0, -6.0}, dt = 'float32', shape = {3} }, { v = {0, 0, 1}, dt = 'int64', shape = {3} } },
  max_NaNT_2 = { { v = {nan, 2.0}, dt = 'float32', shape = {2} }, { v = {1, 0}, dt = 'int64', shape = {2} } },
  min_NaNT_2 = { { v = {nan, -1.0}, dt = 'float32', shape = {2} }, { v = {1, 2}, dt = 'int64', shape = {2} } },
  max_I_1 = { { v = {3, -1, 9}, dt = 'int64', shape = {3} }, { v = {0, 0, 1}, dt = 'int64', shape = {3} } },
  max_Bo_2 = { { v = {true, true}, dt = 'bool', shape = {2} }, { v = {0, 0}, dt = 'int64', shape = {2} } },
  max_T_2 = { { v = {3, 2}, dt = 'int64', shape = {2} }, { v = {1, 0}, dt = 'int64', shape = {2} } },
  min_T_2 = { { v = {1, 1}, dt = 'int64', shape = {2} }, { v = {0, 2}, dt = 'int64', shape = {2} } },
  max_BT_2_keep = { { v = {{0.9}, {5.6}, {2.3}, {3.4}}, dt = 'float64', shape = {4, 1} }, { v = {{2}, {1}, {0}, {0}}, dt = 'int64', shape = {4, 1} } },
  min_E_1 = { { v = {1.0, 2.0, 3.0}, dt = 'float32', shape = {3} }, { v = {0, 0, 0}, dt = 'int64', shape = {3} } },
  max_H_2 = { { v = {3.0, 4.0}, dt = 'float16', shape = {2} }, { v = {2, 0}, dt = 'int64', shape = {2} } },
  max_N_m1 = { { v = {2.3, 5.6, 1.0}, dt = 'float64', shape = {3} }, { v = {1, 0, 0}, dt = 'int64', shape = {3} } },
  argmax_A = { v = 3, dt = 'int64', shape = {} },
  argmax_BT = { v = 4, dt = 'int64', shape = {} },
  argmin_A_1 = { v = {0, 0, 1}, dt = 'int64', shape = {3} },
  argmax_NaNT = { v = 1, dt = 'int64', shape = {} },
  argmax_T_2_keep = { v = {{1}, {0}}, dt = 'int64', shape = {2, 1} },
  argmax_N = { v = 2, dt = 'int64', shape = {} },
  argmin_BT = { v = 1, dt = 'int64', shape = {} },
  argmax_A_keep = { v = {{3}}, dt = 'int64', shape = {1, 1} },
  all_Bo_2 = { v = {false, false}, dt = 'bool', shape = {2} },
  any_Bo_1 = { v = {true, true, true}, dt = 'bool', shape = {3} },
  all_A_2 = { v = {true, true}, dt = 'bool', shape = {2} },
  any_U8_1 = { v = 1, dt = 'uint8', shape = {} },
  all_NaNT_1 = { v = {true, false, true}, dt = 'bool', shape = {3} },
  any_Z_2 = { v = {}, dt = 'bool', shape = {0} },
  all_Z_1 = { v = {true, true, true}, dt = 'bool', shape = {3} },
  var_A = { v = 13.466666221618652, dt = 'float32', shape = {} },
  var_A_2 = { v = {6.583333492279053, 25.75}, dt = 'float32', shape = {2} },
  std_A_1_biased = { v = {1.25, 1.25, 4.5}, dt = 'float32', shape = {3} },
  var_B_2_c2 = { v = {6.504999999999999, 26.244999999999997, 1.73}, dt = 'float64', shape = {3} },
  std_BT_1 = { v = {2.08246648632497, 4.182901704160243, 1.0739335795724674}, dt = 'float64', shape = {3} },
  var_X3_13_keep = { v = {{{10.642857551574707}, {10.642857551574707}, {10.642857551574707}}}, dt = 'float32', shape = {1, 3, 1} },
  var_N = { v = 6.381666666666665, dt = 'float64', shape = {} },
  var_E_1 = { v = {0.0, 0.0, 0.0}, dt = 'float32', shape = {3} },
  var_H = { v = 13.46875, dt = 'float16', shape = {} },
  var_one = { v = nan, dt = 'float32', shape = {} },
  std_A_biased = { v = 3.349958658218384, dt = 'float32', shape = {} },
  var_A_2_c0 = { v = {4.388888835906982, 17.16666603088379}, dt = 'float32', shape = {2} },
  var_mean_A_2 = { { v = {6.583333492279053, 25.75}, dt = 'float32', shape = {2} }, { v = {0.8333333134651184, -0.5}, dt = 'float32', shape = {2} } },
  std_mean_B = { { v = 2.534967574952509, dt = 'float64', shape = {} }, { v = 0.6333333333333332, dt = 'float64', shape = {} } },
  var_mean_X3_m1_keep = { { v = {{{0.4166666567325592}, {0.4166666567325592}, {0.4166666567325592}}, {{0.4166666567325592}, {0.4166666567325592}, {0.4166666567325592}}}, dt = 'float32', shape = {2, 3, 1} }, { v = {{{-2.25}, {-0.25}, {1.75}}, {{3.75}, {5.75}, {7.75}}}, dt = 'float32', shape = {2, 3, 1} } },
  norm_A = { v = 8.215838432312012, dt = 'float32', shape = {} },
  norm_A_p1 = { v = 17.0, dt = 'float32', shape = {} },
  norm_A_inf = { v = 6.0, dt = 'float32', shape = {} },
  norm_A_minf = { v = 0.5, dt = 'float32', shape = {} },
  norm_A_p0 = { v = 6.0, dt = 'float32', shape = {} },
  norm_A_p3_2 = { v = {3.3729984760284424, 6.543106555938721}, dt = 'float32', shape = {2} },
  norm_BT_2_1_keep = { v = {{4.277849927241487, 7.262231062146123, 2.1118712081942874}}, dt = 'float64', shape = {1, 3} },
  norm_Z = { v = 0.0, dt = 'float32', shape = {} },
  norm_H = { v = 8.21875, dt = 'float16', shape = {} },
  norm_A_m1 = { v = 0.25531914830207825, dt = 'float32', shape = {} },
  norm_A_p05_1 = { v = {10.398979187011719, 4.499999523162842, 17.485280990600586}, dt = 'float32', shape = {3} },
  norm_X3_fro_13 = { v = {8.88819408416748, 11.618949890136719, 15.968719482421875}, dt = 'float32', shape = {3} },
  norm_E_inf_2 = { v = {3.0, 3.0, 3.0, 3.0}, dt = 'float32', shape = {4} },
  lse_A_2 = { v = {3.206907033920288, 4.029794692993164}, dt = 'float32', shape = {2} },
  lse_X3_13 = { v = {5.289814472198486, 7.289814472198486, 9.289813995361328}, dt = 'float32', shape = {3} },
  lse_I_2 = { v = {4.318175315856934, 9.000336647033691}, dt = 'float32', shape = {2} },
  lse_BT_1 = { v = {3.7219429725159614, 5.609107619336217, 2.17825387111679}, dt = 'float64', shape = {3} },
  lse_big = { v = 1000.6931762695312, dt = 'float32', shape = {} },
  lse_inf = { v = {inf, -inf}, dt = 'float32', shape = {2} },
  lse_Z_1 = { v = {-inf, -inf, -inf}, dt = 'float32', shape = {3} },
  nansum_NaNT = { v = 5.0, dt = 'float32', shape = {} },
  nansum_NaNT_2 = { v = {4.0, 1.0}, dt = 'float32', shape = {2} },
  sum_NaNT_2 = { v = {nan, 1.0}, dt = 'float32', shape = {2} },
  cnz_A = { v = 6, dt = 'int64', shape = {} },
  cnz_NaNT_1 = { v = {2, 1, 2}, dt = 'int64', shape = {3} },
  cnz_Bo_2 = { v = {2, 2}, dt = 'int64', shape = {2} },
  cnz_I_12 = { v = 6, dt = 'int64', shape = {} },
  cumsum_A_2 = { v = {{1.5, -0.5, 2.5}, {4.0, 4.5, -1.5}}, dt = 'float32', shape = {2, 3} },
  cumsum_BT_1 = { v = {{0.1, -4.5, 0.9}, {-1.0999999999999999, 1.0999999999999996, 1.9}, {1.2, 1.7999999999999996, 0.7999999999999998}, {4.6, 0.9999999999999996, 1.9999999999999998}}, dt = 'float64', shape = {4, 3} },
  cumsum_I32_2 = { v = {{3, 2, 6}, {1, -4, 5}}, dt = 'int64', shape = {2, 3} },
  cumsum_Bo_1 = { v = {{1, 0, 1}, {2, 1, 1}}, dt = 'int64', shape = {2, 3} },
  cumprod_A_1 = { v = {{1.5, -2.0, 3.0}, {6.0, -1.0, -18.0}}, dt = 'float32', shape = {2, 3} },
  cumprod_I_2 = { v = {{3, -3, -12}, {1, -5, -45}}, dt = 'int64', shape = {2, 3} },
  cumsum_E_2 = { v = {{1.0, 3.0, 6.0}, {1.0, 3.0, 6.0}, {1.0, 3.0, 6.0}, {1.0, 3.0, 6.0}}, dt = 'float32', shape = {4, 3} },
  cumsum_A_2_f64 = { v = {{1.5, -0.5, 2.5}, {4.0, 4.5, -1.5}}, dt = 'float64', shape = {2, 3} },
  cumsum_N_m1 = { v = {{-1.2, 1.0999999999999999}, {5.6, 6.3}, {1.0, -0.10000000000000009}}, dt = 'float64', shape = {3, 2} },
  cumsum_X3_2 = { v = {{{-3.0, -2.5, -2.0, -1.5}, {-4.0, -3.0, -2.0, -1.0}, {-3.0, -1.5, 0.0, 1.5}}, {{3.0, 3.5, 4.0, 4.5}, {8.0, 9.0, 10.0, 11.0}, {15.0, 16.5, 18.0, 19.5}}}, dt = 'float32', shape = {2, 3, 4} },
  cumsum_I_1_i32 = { v = {{3, -1, 4}, {4, -6, 13}}, dt = 'int32', shape = {2, 3} },
  softmax_A_2 = { v = {{0.18142607808113098, 0.0054785930551588535, 0.8130952715873718}, {0.9706449508666992, 0.029310937970876694, 4.406721200211905e-05}}, dt = 'float32', shape = {2, 3} },
  softmax_A_1 = { v = {{0.07585817575454712, 0.07585817575454712, 0.9998766183853149}, {0.9241418242454529, 0.9241418242454529, 0.00012339458044152707}}, dt = 'float32', shape = {2, 3} },
  lsm_A_2 = { v = {{-1.706907033920288, -5.206906795501709, -0.2069069892168045}, {-0.02979450300335884, -3.529794454574585, -10.029794692993164}}, dt = 'float32', shape = {2, 3} },
  softmax_BT_2 = { v = {{0.30906237986837115, 0.003106644277282414, 0.6878309758543465}, {0.0011014764899507999, 0.9889576833189341, 0.009940840191115284}, {0.8095397537857085, 0.16344325746758523, 0.02701698874670636}, {0.8882582372395508, 0.013319944632947792, 0.09842181812750146}}, dt = 'float64', shape = {4, 3} },
  softmax_X3_m1 = { v = {{{0.101536326110363, 0.16740509867668152, 0.2760043442249298, 0.45505422353744507}, {0.101536326110363, 0.16740509867668152, 0.2760043442249298, 0.45505422353744507}, {0.101536326110363, 0.16740509867668152, 0.2760043442249298, 0.45505422353744507}}, {{0.101536326110363, 0.16740509867668152, 0.2760043442249298, 0.45505422353744507}, {0.101536326110363, 0.16740509867668152, 0.2760043442249298, 0.45505422353744507}, {0.101536326110363, 0.16740509867668152, 0.2760043442249298, 0.45505422353744507}}}, dt = 'float32', shape = {2, 3, 4} },
  softmax_I_f64 = { v = {{0.2676231541498623, 0.004901689049672921, 0.7274751568004647}, {0.00033534985170695884, 8.312491748633648e-07, 0.9996638188991182}}, dt = 'float64', shape = {2, 3} },
  lsm_E_1 = { v = {{-1.3862943649291992, -1.3862943649291992, -1.3862943649291992}, {-1.3862943649291992, -1.3862943649291992, -1.3862943649291992}, {-1.3862943649291992, -1.3862943649291992, -1.3862943649291992}, {-1.3862943649291992, -1.3862943649291992, -1.3862943649291992}}, dt = 'float32', shape = {4, 3} },
  softmax_big = { v = {1.0, 0.0, 0.0}, dt = 'float32', shape = {3} },
  lsm_N_2 = { v = {{-3.5297504182726205, -0.029750418272620652}, {-0.007418994148686643, -4.907418994148686}, {-0.11551952317975493, -2.215519523179755}}, dt = 'float64', shape = {3, 2} },
  softmax_scalar = { v = 1.0, dt = 'float32', shape = {} },
  isclose_C = { v = {true, false, false, true, true}, dt = 'bool', shape = {5} },
  isclose_C_nan = { v = {true, false, true, true, true}, dt = 'bool', shape = {5} },
  isclose_C_atol = { v = {true, true, false, true, true}, dt = 'bool', shape = {5} },
  isclose_A_bcast = { v = {{true, true, true}, {false, false, false}}, dt = 'bool', shape = {2, 3} },
  isclose_I = { v = {{true, false, true}, {true, true, true}}, dt = 'bool', shape = {2, 3} },
}

-- the inputs (the generator's A, B, I, ... in PyTorch)
local A = torch.tensor({ { 1.5, -2, 3 }, { 4, 0.5, -6 } })
local B = torch.tensor({ { 0.1, -1.2, 2.3, 3.4 }, { -4.5, 5.6, 0.7, -0.8 }, { 0.9, 1.0, -1.1, 1.2 } }, { dtype = torch.float64 })
local I = torch.tensor({ { 3, -1, 4 }, { 1, -5, 9 } }, { dtype = torch.int64 })
local I32 = I:to(torch.int32)
local Bo = torch.tensor({ { true, false, true }, { true, true, false } })
local Hf = A:to(torch.float16)
local X3 = torch.arange(24):to(torch.float32):reshape(2, 3, 4) * 0.5 - 3
local BT = B:t()
local Ex = torch.tensor({ 1, 2, 3 }):expand(4, 3)
local N = B:narrow(2, 2, 2)
local NaNT = torch.tensor({ { 1, nan, 3 }, { 2, 0, -1 } })
local Z = torch.empty(0, 3)
local T = torch.tensor({ { 1, 3, 3 }, { 2, 2, 1 } }, { dtype = torch.int64 })
local U8 = torch.tensor({ 1, 0 }, { dtype = torch.uint8 })
local C1 = torch.tensor({ 1, 2, nan, inf, 1e-9 })
local C2 = torch.tensor({ 1 + 1e-6, 2.1, nan, inf, 0 })
local f64, i64, i32 = torch.float64, torch.int64, torch.int32

local cases = {
  sum_A = function() return A:sum() end,
  sum_A_1 = function() return A:sum(1) end,
  sum_A_m1_keep = function() return A:sum(-1, { keepdim = true }) end,
  sum_A_2_f64 = function() return A:sum(2, { dtype = f64 }) end,
  sum_X3_13 = function() return X3:sum({ 1, 3 }) end,
  sum_X3_m1m3_keep = function() return X3:sum({ -1, -3 }, true) end,
  sum_BT_1 = function() return BT:sum(1) end,
  sum_BT = function() return torch.sum(BT) end,
  sum_E_1 = function() return Ex:sum(1) end,
  sum_E_2 = function() return Ex:sum(2) end,
  sum_N_2 = function() return N:sum(2) end,
  sum_N = function() return N:sum() end,
  sum_I = function() return I:sum() end,
  sum_I32_1 = function() return I32:sum(1) end,
  sum_Bo = function() return Bo:sum() end,
  sum_Bo_2 = function() return Bo:sum(2) end,
  sum_H = function() return Hf:sum() end,
  sum_H_1 = function() return Hf:sum(1) end,
  sum_A_i64 = function() return A:sum({ dtype = i64 }) end,
  sum_Z = function() return Z:sum() end,
  sum_Z_1 = function() return Z:sum(1) end,
  sum_Z_2 = function() return Z:sum(2) end,
  mean_A = function() return A:mean() end,
  mean_A_2 = function() return torch.mean(A, 2) end,
  mean_X3_23_keep = function() return X3:mean({ 2, 3 }, { keepdim = true }) end,
  mean_BT_2 = function() return BT:mean(2) end,
  mean_E = function() return Ex:mean() end,
  mean_H_2 = function() return Hf:mean(2) end,
  mean_I_f64 = function() return I:mean({ dtype = f64 }) end,
  mean_Z = function() return Z:mean() end,
  mean_N_1 = function() return N:mean(1) end,
  prod_A = function() return A:prod() end,
  prod_A_2 = function() return A:prod(2) end,
  prod_I = function() return I:prod() end,
  prod_Bo = function() return Bo:prod() end,
  prod_Z = function() return Z:prod() end,
  prod_BT_1 = function() return BT:prod(1) end,
  prod_I32_2 = function() return I32:prod(2) end,
  prod_A_i32 = function() return A:prod({ dtype = i32 }) end,
  amax_A = function() return A:amax() end,
  amax_A_1 = function() return A:amax(1) end,
  amin_A_m1_keep = function() return A:amin(-1, true) end,
  amax_X3_12 = function() return X3:amax({ 1, 2 }) end,
  amax_I = function() return I:amax() end,
  amin_I32_2 = function() return I32:amin(2) end,
  amax_Bo = function() return Bo:amax() end,
  amax_NaNT_2 = function() return NaNT:amax(2) end,
  amin_NaNT_1 = function() return NaNT:amin(1) end,
  amin_BT_2 = function() return BT:amin(2) end,
  amax_E_2 = function() return Ex:amax(2) end,
  amax_H_1 = function() return Hf:amax(1) end,
  amax_Z_2 = function() return Z:amax(2) end,
  max_A = function() return A:max() end,
  min_I = function() return torch.min(I) end,
  max_A_2 = function() return A:max(2) end,
  min_A_1 = function() return A:min(1) end,
  max_NaNT_2 = function() return NaNT:max(2) end,
  min_NaNT_2 = function() return NaNT:min(2) end,
  max_I_1 = function() return torch.max(I, 1) end,
  max_Bo_2 = function() return Bo:max(2) end,
  max_T_2 = function() return T:max(2) end,
  min_T_2 = function() return T:min(2) end,
  max_BT_2_keep = function() return torch.max(BT, 2, { keepdim = true }) end,
  min_E_1 = function() return Ex:min(1) end,
  max_H_2 = function() return Hf:max(2) end,
  max_N_m1 = function() return N:max(-1) end,
  argmax_A = function() return A:argmax() end,
  argmax_BT = function() return BT:argmax() end,
  argmin_A_1 = function() return A:argmin(1) end,
  argmax_NaNT = function() return torch.argmax(NaNT) end,
  argmax_T_2_keep = function() return T:argmax(2, true) end,
  argmax_N = function() return N:argmax() end,
  argmin_BT = function() return BT:argmin() end,
  argmax_A_keep = function() return A:argmax({ keepdim = true }) end,
  all_Bo_2 = function() return Bo:all(2) end,
  any_Bo_1 = function() return Bo:any(1) end,
  all_A_2 = function() return A:all(2) end,
  any_U8_1 = function() return U8:any(1) end,
  all_NaNT_1 = function() return NaNT:all(1) end,
  any_Z_2 = function() return Z:any(2) end,
  all_Z_1 = function() return Z:all(1) end,
  var_A = function() return A:var() end,
  var_A_2 = function() return A:var(2) end,
  std_A_1_biased = function() return A:std(1, false) end,
  var_B_2_c2 = function() return B:var(2, { correction = 2 }) end,
  std_BT_1 = function() return BT:std(1) end,
  var_X3_13_keep = function() return X3:var({ 1, 3 }, { keepdim = true }) end,
  var_N = function() return N:var() end,
  var_E_1 = function() return Ex:var(1) end,
  var_H = function() return Hf:var() end,
  var_one = function() return torch.tensor({ 1 }):var() end,
  std_A_biased = function() return A:std({ unbiased = false }) end,
  var_A_2_c0 = function() return torch.var(A, 2, { correction = 0 }) end,
  var_mean_A_2 = function() return torch.var_mean(A, 2) end,
  std_mean_B = function() return B:std_mean() end,
  var_mean_X3_m1_keep = function() return X3:var_mean(-1, { keepdim = true }) end,
  norm_A = function() return A:norm() end,
  norm_A_p1 = function() return A:norm(1) end,
  norm_A_inf = function() return A:norm(inf) end,
  norm_A_minf = function() return A:norm(-inf) end,
  norm_A_p0 = function() return A:norm(0) end,
  norm_A_p3_2 = function() return A:norm(3, 2) end,
  norm_BT_2_1_keep = function() return BT:norm(2, 1, { keepdim = true }) end,
  norm_Z = function() return Z:norm() end,
  norm_H = function() return Hf:norm() end,
  norm_A_m1 = function() return A:norm(-1) end,
  norm_A_p05_1 = function() return torch.norm(A, 0.5, 1) end,
  norm_X3_fro_13 = function() return X3:norm('fro', { 1, 3 }) end,
  norm_E_inf_2 = function() return Ex:norm(inf, 2) end,
  lse_A_2 = function() return A:logsumexp(2) end,
  lse_X3_13 = function() return X3:logsumexp({ 1, 3 }) end,
  lse_I_2 = function() return I:logsumexp(2) end,
  lse_BT_1 = function() return torch.logsumexp(BT, 1) end,
  lse_big = function() return torch.tensor({ 1000, 1000 }):logsumexp(1) end,
  lse_inf = function() return torch.tensor({ { inf, 1 }, { -inf, -inf } }):logsumexp(2) end,
  lse_Z_1 = function() return Z:logsumexp(1) end,
  nansum_NaNT = function() return NaNT:nansum() end,
  nansum_NaNT_2 = function() return NaNT:nansum(2) end,
  sum_NaNT_2 = function() return NaNT:sum(2) end,
  cnz_A = function() return A:count_nonzero() end,
  cnz_NaNT_1 = function() return NaNT:count_nonzero(1) end,
  cnz_Bo_2 = function() return torch.count_nonzero(Bo, 2) end,
  cnz_I_12 = function() return I:count_nonzero({ 1, 2 }) end,
  cumsum_A_2 = function() return A:cumsum(2) end,
  cumsum_BT_1 = function() return BT:cumsum(1) end,
  cumsum_I32_2 = function() return I32:cumsum(2) end,
  cumsum_Bo_1 = function() return Bo:cumsum(1) end,
  cumprod_A_1 = function() return A:cumprod(1) end,
  cumprod_I_2 = function() return torch.cumprod(I, 2) end,
  cumsum_E_2 = function() return Ex:cumsum(2) end,
  cumsum_A_2_f64 = function() return A:cumsum(2, { dtype = f64 }) end,
  cumsum_N_m1 = function() return N:cumsum(-1) end,
  cumsum_X3_2 = function() return X3:cumsum(2) end,
  cumsum_I_1_i32 = function() return I:cumsum(1, { dtype = i32 }) end,
  softmax_A_2 = function() return A:softmax(2) end,
  softmax_A_1 = function() return torch.softmax(A, 1) end,
  lsm_A_2 = function() return A:log_softmax(2) end,
  softmax_BT_2 = function() return BT:softmax(2) end,
  softmax_X3_m1 = function() return X3:softmax(-1) end,
  softmax_I_f64 = function() return I:softmax(2, { dtype = f64 }) end,
  lsm_E_1 = function() return Ex:log_softmax(1) end,
  softmax_big = function() return torch.tensor({ 1000, 0, -1000 }):softmax(1) end,
  lsm_N_2 = function() return torch.log_softmax(N, 2) end,
  softmax_scalar = function() return torch.tensor(3):softmax(1) end,
  isclose_C = function() return torch.isclose(C1, C2) end,
  isclose_C_nan = function() return torch.isclose(C1, C2, { equal_nan = true }) end,
  isclose_C_atol = function() return torch.isclose(C1, C2, { atol = 0.2 }) end,
  isclose_A_bcast = function() return torch.isclose(A, A[1]) end,
  isclose_I = function() return torch.isclose(I, torch.tensor({ { 3, 0, 4 }, { 1, -5, 10 } }, { dtype = i64 }), 0.1, 0) end,
}

-- index results: PyTorch's are 0-based, ours 1-based
local function is_index_key(k) return k:match('^arg') ~= nil end
local function plus1(v)
  if type(v) == 'table' then
    local r = {}
    for i = 1, #v do r[i] = plus1(v[i]) end
    return r
  end
  return v + 1
end

local function check(key, got, exp, index)
  assert(torch.is_tensor(got), key .. ': expected a tensor, got ' .. type(got))
  assert.are.same(exp.shape, H.shape(got), key .. ': shape')
  assert.are.equal(torch[exp.dt], got.dtype, key .. ': dtype')
  local tol = exp.dt == 'float16' and 2e-3 or 1e-5
  local v = exp.v
  if type(v) == 'boolean' or (type(v) == 'table' and type(H.flat(v)[1]) == 'boolean') then
    H.near(got, v)
  else
    H.near(got, index and plus1(v) or v, tol, tol)
  end
end

describe('reductions agree with PyTorch 1.13', function()
  local keys = {}
  for k in pairs(cases) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, key in ipairs(keys) do
    it(key, function()
      local exp = E[key]
      assert(exp, 'no expected value for ' .. key)
      local r1, r2 = cases[key]()
      if exp[1] then
        check(key .. '[1]', r1, exp[1], false)
        check(key .. '[2]', r2, exp[2], not key:match('mean'))
      else
        assert.is_nil(r2)
        check(key, r1, exp, is_index_key(key))
      end
    end)
  end
  it('has a case for every expected value', function()
    for k in pairs(E) do assert(cases[k], 'no case for ' .. k) end
  end)
end)

describe('reduction results in Lua', function()
  it('all / any without a dim answer with Lua booleans', function()
    assert.is_false(Bo:all())
    assert.is_true(Bo:any())
    assert.is_true(torch.all(A))
    assert.is_true(torch.any(NaNT))           -- nan counts as true
    assert.is_true(Z:all())
    assert.is_false(Z:any())
    assert.is_false(torch.tensor({ 0, 0 }):any())
    assert.is_true(I:all())
    assert.is_false(U8:all())
    assert.is_true(U8:any())
    assert.is_true(Ex:all())
    assert.is_false(BT:narrow(1, 1, 1):eq(0):any())
  end)

  it('equal and allclose answer with Lua booleans', function()
    assert.is_true(torch.equal(A, A:clone()))
    assert.is_false(torch.equal(A, A + 1))
    assert.is_false(torch.equal(B, BT))              -- same values, other shape
    assert.is_true(torch.equal(BT, BT:contiguous()))
    assert.is_true(torch.equal(I, I:to(torch.float32)))  -- PyTorch 1.13: True across dtypes
    assert.is_false(torch.equal(torch.tensor({ nan }), torch.tensor({ nan })))
    assert.is_true(torch.equal(Z, torch.empty(0, 3)))
    assert.is_false(torch.equal(Z, torch.empty(3, 0)))
    assert.is_true(A:equal(A))
    assert.is_true(torch.allclose(A, A + 1e-6))
    assert.is_false(torch.allclose(A, A + 1e-3))
    assert.is_true(torch.allclose(A, A + 1e-3, { atol = 1e-2 }))
    assert.is_true(torch.allclose(A, A * 1.001, 1e-2))
    assert.is_false(torch.allclose(C1, C1))
    assert.is_true(torch.allclose(C1, C1, { equal_nan = true }))
    assert.is_true(A:allclose(A))
    assert.is_true(torch.allclose(Z, Z))
  end)

  it('max / min with a tensor are maximum / minimum', function()
    local b = torch.tensor({ 0, 0, 0 })
    H.near(A:max(b), { { 1.5, 0, 3 }, { 4, 0.5, 0 } })
    H.near(torch.min(A, b), { { 0, -2, 0 }, { 0, 0, -6 } })
  end)

  it('max / min with a dim return values and 1-based indices as two results', function()
    local v, i = A:max(2)
    H.near(v, { 3, 4 })
    H.near(i, { 3, 1 })
    assert.are.equal(torch.int64, i.dtype)
    local v0, i0 = torch.tensor(7):max(1)     -- a 0-dim tensor accepts dim 1 / -1
    H.near(v0, 7); H.near(i0, 1)
    assert.are.same({}, H.shape(i0))
    local ve, ie = Z:max(2)                   -- empty output: fine
    assert.are.same({ 0 }, H.shape(ve)); assert.are.same({ 0 }, H.shape(ie))
  end)

  it('aminmax returns min and max', function()
    local lo, hi = A:aminmax()
    H.near(lo, -6); H.near(hi, 4)
    lo, hi = torch.aminmax(A, { dim = 2, keepdim = true })
    H.near(lo, { { -2 }, { -6 } }); H.near(hi, { { 3 }, { 4 } })
  end)

  it('scalars reduce over dim 1 / -1 and over nothing', function()
    local s = torch.tensor(2.5)
    H.near(s:sum(), 2.5); H.near(s:sum(1), 2.5); H.near(s:mean(-1), 2.5)
    H.near(s:sum(1, true), 2.5)
    assert.are.same({}, H.shape(s:sum(1, true)))
    H.near(s:argmax(), 1); H.near(s:argmax(1), 1)
    H.near(s:cumsum(1), 2.5)
    H.near(s:norm(), 2.5)
    H.near(s:var({ correction = 0 }), 0)
    H.near(torch.tensor(5):prod(), 5)
  end)

  it('an empty dim list reduces over everything (PyTorch 1.13)', function()
    H.near(A:sum({}), 1.0)
    H.near(A:amax({}), 4)
  end)

  it('keeps dims and handles negative dims consistently', function()
    assert.are.same({ 2, 1, 4 }, H.shape(X3:sum(2, true)))
    assert.are.same({ 2, 1, 4 }, H.shape(X3:sum(-2, { keepdim = true })))
    assert.are.same({ 1, 3, 1 }, H.shape(X3:mean({ 1, -1 }, true)))
    H.near(X3:sum({ -1, 1 }), X3:sum({ 3, 1 }))
    H.near(X3:amax(-3), X3:amax(1))
    local v1, i1 = X3:min(-2, true)
    local v2, i2 = X3:min(2, { keepdim = true })
    H.near(v1, v2); H.near(i1, i2)
    assert.are.same({ 2, 1, 4 }, H.shape(i1))
  end)

  it('writes into out=', function()
    local out = torch.empty(3)
    local r = A:sum(1, { out = out })
    assert.is_true(rawequal(r, out))
    H.near(out, { 5.5, -1.5, -3 })
    local o2 = torch.empty(5)                 -- resized to the result's shape
    A:amax(2, { out = o2 })
    H.near(o2, { 3, 4 })
    local c = torch.empty(2, 3)
    A:cumsum(2, { out = c })
    H.near(c, { { 1.5, -0.5, 2.5 }, { 4, 4.5, -1.5 } })
  end)

  it('softmax takes its dtype positionally or as an option', function()
    assert.are.equal(torch.float64, A:softmax(1, torch.float64).dtype)
    assert.are.equal(torch.float64, A:log_softmax(2, { dtype = torch.float64 }).dtype)
    H.near(A:softmax(1, torch.float64), A:softmax(1), 1e-6)
  end)

  it('var / std take unbiased positionally', function()
    H.near(A:var(false), 11.222222222222221)               -- PyTorch 1.13: A.var(False)
    H.near(torch.std(A, 2, false, true), { { 2.0950 }, { 4.1433 } }, 1e-4) -- torch.std(A, 1, False, True)
  end)

  it('cumsum_ / cumprod_ work in place', function()
    local x = A:clone()
    local r = x:cumsum_(1)
    assert.is_true(rawequal(r, x))
    H.near(x, { { 1.5, -2, 3 }, { 5.5, -1.5, -3 } })
    x = A:clone()
    x:cumprod_(-1)
    H.near(x, { { 1.5, -3, -9 }, { 4, 2, -12 } })
  end)

  it('float16 and bfloat16 accumulate in float', function()
    local h = torch.ones(5000, { dtype = torch.float16 })
    H.near(h:sum(), 5000)                     -- 2048 + 1 is not a float16 sum by sum
    assert.are.equal(torch.float16, h:sum().dtype)
    local b = torch.ones(1000, { dtype = torch.bfloat16 })
    H.near(b:sum(), 1000)
    assert.are.equal(torch.bfloat16, b:sum().dtype)
    H.near(b:mean(), 1)
  end)
end)

describe('big reductions', function()
  it('sums 1e7 float32 ones to exactly 1e7', function()
    local x = torch.ones(10000000)
    assert.are.equal(10000000, x:sum():item())
    assert.are.equal(1, x:mean():item())
    assert.are.equal(10000000, x:sum({ dtype = torch.float64 }):item())
  end)

  it('is accurate on big float32 sums', function()
    torch.manual_seed(0)
    local x = torch.rand(1000003)
    local exact = x:to(torch.float64):sum():item()
    local r = x:sum():item()
    assert(math.abs(r - exact) <= 1e-7 * exact, ('sum %.9g vs %.9g'):format(r, exact))
    -- strided and transposed inputs agree with the contiguous sum
    local m = x:narrow(1, 1, 1000000):reshape(1000, 1000)
    H.near(m:t():sum(2), m:sum(1), 1e-3, 1e-6)
    H.near(m:sum(2):sum(), m:sum(), 1e-2, 1e-6)
    H.near(m:t():contiguous():sum(1), m:sum(2), 1e-3, 1e-6)
  end)

  it('gives the same results with one thread and with several', function()
    torch.manual_seed(1)
    local x = torch.randn(300, 1000)
    local n = torch.get_num_threads()
    local ops = {
      function() return x:sum() end, function() return x:sum(1) end, function() return x:sum(2) end,
      function() return x:var() end, function() return x:norm() end, function() return x:logsumexp(2) end,
      function() return x:amax() end, function() return x:prod(2) end, function() return x:t():mean(1) end,
      function() return (x:cumsum(2)) end, function() return x:softmax(1) end,
      function() local v, i = x:max(1); return i end, function() return x:argmin() end,
      function() return x:gt(0):sum() end,
    }
    local par = {}
    for k, f in ipairs(ops) do par[k] = f():tolist() end
    torch.set_num_threads(1)
    for k, f in ipairs(ops) do
      assert.are.same(par[k], f():tolist(), 'op ' .. k)
    end
    torch.set_num_threads(n)
  end)

  it('handles many small reductions and few big ones', function()
    local x = torch.ones(200000, 3)
    H.near(x:sum(2):sum(), 600000)
    H.near(x:sum(1), { 200000, 200000, 200000 })
    local v, i = torch.arange(300000):reshape(3, 100000):max(2)
    H.near(v, { 99999, 199999, 299999 }); H.near(i, { 100000, 100000, 100000 })
    H.near(torch.arange(300000):argmax(), 300000)
    local c = torch.ones(100000):cumsum(1)
    H.near(c:narrow(1, 100000, 1), { 100000 })
    local s = torch.randn(70000, 3):softmax(2):sum(2)
    assert.is_true(torch.allclose(s, torch.ones(70000), 1e-5, 1e-6))
    assert.is_true(torch.ones(100000):all())
    assert.is_false(torch.zeros(100000):any())
  end)

  it('sums a contiguous float32 tensor fast', function()
    local x = torch.ones(4000000)
    x:sum()
    local t0 = os.clock()
    for _ = 1, 10 do x:sum() end
    local per = (os.clock() - t0) / 10 -- CPU time of all threads
    assert(per < 0.03, ('a 4M float32 sum took %.4f s of CPU'):format(per))
  end)
end)

describe('reduction errors', function()
  local function still_works()
    H.near(A:sum(), 1.0)
  end
  local function err(fn, msg)
    H.errors_with(fn, msg)
    still_works()
  end

  it('names the op and the bad dim', function()
    err(function() return A:sum(5) end, 'sum: dimension 5 out of range')
    err(function() return A:mean(-3) end, 'mean: dimension -3 out of range')
    err(function() return A:sum(0) end, 'sum: dimension 0 out of range')
    err(function() return A:sum({ 1, 1 }) end, 'sum: dim 1 appears multiple times in the list of dims')
    err(function() return A:sum({ 1, -2 }) end, 'sum: dim 1 appears multiple times in the list of dims')
    err(function() return A:prod(1.5) end, 'prod: dimension must be an integer')
    err(function() return A:max(3) end, 'max: dimension 3 out of range')
    err(function() return A:argmax(3) end, 'argmax: dimension 3 out of range')
    err(function() return A:cumsum(3) end, 'cumsum: dimension 3 out of range')
    err(function() return A:softmax(-3) end, 'softmax: dimension -3 out of range')
    err(function() return A:var(4) end, 'var: dimension 4 out of range')
    err(function() return A:norm(2, 3) end, 'norm: dimension 3 out of range')
    err(function() return torch.tensor(1):sum(2) end, 'sum: dimension 2 out of range')
    err(function() return A:sum('x') end, 'sum: dim must be a number or a table')
    err(function() return A:max({ 1, 2 }) end, 'max: dim must be a single number')
    err(function() return A:sum(1, 'yes') end, 'sum: keepdim must be a boolean')
  end)

  it('rejects dtypes as PyTorch does', function()
    err(function() return I:mean() end,
      'mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long')
    err(function() return Bo:mean() end, 'Got: Bool')
    err(function() return A:mean({ dtype = torch.int64 }) end, 'Optional dtype must be either a floating point')
    err(function() return I:var() end, 'std and var only support floating point and complex dtypes')
    err(function() return I32:std(1) end, 'std and var only support floating point and complex dtypes')
    err(function() return torch.var_mean(I) end, 'var_mean only support floating point and complex dtypes')
    err(function() return I:norm() end, 'norm(): input dtype should be either floating point or complex. Got Long instead.')
    err(function() return I:softmax(1) end, 'softmax: expected a floating point tensor or dtype, got int64')
    err(function() return A:log_softmax(1, { dtype = torch.int32 }) end, 'log_softmax: expected a floating point')
    err(function() return A:sum({ dtype = 'nope' }) end, 'sum: unknown dtype')
  end)

  it('rejects empty max-like reductions', function()
    err(function() return Z:amax() end, "amax: Expected reduction dim to be specified for input.numel() == 0")
    err(function() return Z:max() end, "max: Expected reduction dim to be specified for input.numel() == 0")
    err(function() return Z:min(1) end, 'min: Expected reduction dim 1 to have non-zero size.')
    err(function() return Z:amin(-2) end, 'amin: Expected reduction dim 1 to have non-zero size.')
    err(function() return Z:argmax() end, 'argmax: Expected reduction dim to be specified for input.numel() == 0')
    err(function() return Z:argmin(1) end, 'argmin: Expected reduction dim 1 to have non-zero size.')
  end)

  it('checks the other arguments', function()
    err(function() return A:var(1, { correction = 1, unbiased = true }) end, 'var: cannot specify both unbiased and correction')
    err(function() return A:var({ correction = -1 }) end, 'var: correction must be non-negative')
    err(function() return A:std(1, 'no') end, 'std: unbiased must be a boolean')
    err(function() return A:norm('foo') end, 'norm: p must be a number')
    err(function() return A:cumsum() end, 'cumsum: dim is required')
    err(function() return A:softmax() end, 'softmax: dim is required')
    err(function() return torch.sum(3) end, 'sum: expected a tensor')
    err(function() return torch.equal(A, 3) end, 'equal: expected a tensor')
    err(function() return torch.isclose(A, I) end, 'isclose: expected both tensors to have the same dtype, got float32 and int64')
    err(function() return torch.allclose(A, A, -1) end, 'allclose: rtol must be greater than or equal to zero, but got -1')
    err(function() return torch.isclose(A, A, { atol = -1 }) end, 'isclose: atol must be greater than or equal to zero')
    err(function() return torch.isclose(A, torch.ones(3, 3)) end, 'isclose: the size of tensor a (2) must match the size of tensor b (3)')
    err(function() return torch.allclose(A, torch.ones(4)) end, 'allclose: the size of tensor a (3) must match')
  end)
end)

describe('reduction memory', function()
  it('returns the live tensor count to its baseline', function()
    local C = torch._C
    local sweep = require('moontorch.tensor').sweep
    sweep()
    local base = C.mt_get_stats().live_tensors
    for _ = 1, 20 do
      local _ = A:sum(1) + A:mean() + A:var(2, true):sum()
      local v, i = X3:max(2)
      local vm, m = X3:var_mean({ 1, 3 })
      local _ = torch.isclose(A, A), torch.allclose(A, A), torch.equal(A, A), A:all(), A:cumsum(1), A:softmax(2)
      pcall(function() return I:mean() end)
      pcall(function() return Z:amax() end)
      pcall(function() return torch.isclose(A, torch.ones(3, 3)) end)
    end
    sweep()
    assert.are.equal(base, C.mt_get_stats().live_tensors)
  end)
end)
