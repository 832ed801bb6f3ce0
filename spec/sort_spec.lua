-- spec/sort_spec.lua: sort, argsort, msort, topk, kthvalue, median, mode, unique, searchsorted,
-- bincount, flip, fliplr, flipud, roll, repeat, tile, repeat_interleave (core/tensor/sort.c,
-- lua/ops/sort.lua).
local H = require 'spec.support.helper'
local torch = H.torch

local nan, inf = 0 / 0, math.huge

-- Expected values, produced with /usr/bin/python3 (torch 1.13.0, CPU) by evaluating the PyTorch
-- expression written as a comment beside each Lua case below and printing tensor.tolist();
-- every index was converted from 0-based to 1-based (+1). Each entry is {values, indices, ...}
-- as nested lists (tensor.tolist()). The inputs, in PyTorch:
--   A = torch.tensor([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3], [5, 8, 9, 7, 9]], dtype=torch.float32)
--   F = torch.tensor([2.5, nan, -1, 0, nan, 7, -3.5, 2.5], dtype=torch.float64)
--   B = torch.tensor([[0.5, -2, 3.25, 1], [7, 6, -1, 4], [2, -5, 8, 0.25]])
--   X = torch.arange(24).reshape(2, 3, 4)          (int64)
--   S = torch.tensor([1., 3, 5, 7, 9]); Vv = torch.tensor([[3., 6, 9], [0, 10, 1]])
local R = {
  sort_last = {{{1.0, 1.0, 3.0, 4.0, 5.0}, {2.0, 3.0, 5.0, 6.0, 9.0}, {5.0, 7.0, 8.0, 9.0, 9.0}}, {{2, 4, 1, 3, 5}, {2, 5, 4, 3, 1}, {1, 4, 2, 3, 5}}},
  sort_first_desc = {{{9.0, 8.0, 9.0, 7.0, 9.0}, {5.0, 2.0, 6.0, 5.0, 5.0}, {3.0, 1.0, 4.0, 1.0, 3.0}}, {{2, 3, 3, 3, 3}, {3, 2, 2, 2, 1}, {1, 1, 1, 1, 2}}},
  sort_t = {{{3.0, 5.0, 9.0}, {1.0, 2.0, 8.0}, {4.0, 6.0, 9.0}, {1.0, 5.0, 7.0}, {3.0, 5.0, 9.0}}, {{1, 3, 2}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {2, 1, 3}}},
  sort_expand0 = {{{3.0, 1.0, 3.0}, {3.0, 1.0, 3.0}}, {{1, 1, 1}, {2, 2, 2}}},
  sort_expand1 = {{{3.0, 3.0, 1.0}, {3.0, 3.0, 1.0}}, {{1, 3, 2}, {1, 3, 2}}},
  sort_slice = {{{4.0, 1.0, 1.0}, {6.0, 5.0, 2.0}, {9.0, 8.0, 7.0}}, {{2, 1, 3}, {2, 3, 1}, {2, 1, 3}}},
  sort_nan = {{-3.5, -1.0, 0.0, 2.5, 2.5, 7.0, nan, nan}, {7, 3, 4, 1, 8, 6, 2, 5}},
  sort_nan_desc = {{nan, nan, 7.0, 2.5, 2.5, 0.0, -1.0, -3.5}, {2, 5, 6, 1, 8, 4, 3, 7}},
  sort_int32 = {{{5, 4, 3, 1, 1}, {9, 6, 5, 3, 2}, {9, 9, 8, 7, 5}}, {{5, 3, 1, 2, 4}, {1, 3, 4, 5, 2}, {3, 5, 2, 4, 1}}},
  sort_int64_step = {{{3, 4, 5}, {5, 9, 9}}, {{1, 1, 1}, {2, 2, 2}}},
  sort_bool = {{false, false, true, true}, {2, 4, 1, 3}},
  sort_3d_mid = {{{{8, 9, 10, 11}, {4, 5, 6, 7}, {0, 1, 2, 3}}, {{20, 21, 22, 23}, {16, 17, 18, 19}, {12, 13, 14, 15}}}, {{{3, 3, 3, 3}, {2, 2, 2, 2}, {1, 1, 1, 1}}, {{3, 3, 3, 3}, {2, 2, 2, 2}, {1, 1, 1, 1}}}},
  msort = {{{3.0, 1.0, 4.0, 1.0, 3.0}, {5.0, 2.0, 6.0, 5.0, 5.0}, {9.0, 8.0, 9.0, 7.0, 9.0}}},
  argsort = {{{5, 3, 1, 2, 4}, {1, 3, 4, 5, 2}, {3, 5, 2, 4, 1}}},
  argsort_stable = {{{5, 3, 1, 2, 4}, {1, 3, 4, 5, 2}, {3, 5, 2, 4, 1}}},
  topk_last = {{{3.25, 1.0}, {7.0, 6.0}, {8.0, 2.0}}, {{3, 4}, {1, 2}, {3, 1}}},
  topk_first_small = {{{0.5, -5.0, -1.0, 0.25}, {2.0, -2.0, 3.25, 1.0}}, {{1, 3, 2, 3}, {3, 1, 1, 1}}},
  topk_t = {{{7.0, 2.0, 0.5}, {6.0, -2.0, -5.0}, {8.0, 3.25, -1.0}, {4.0, 1.0, 0.25}}, {{2, 3, 1}, {2, 1, 3}, {3, 1, 2}, {2, 1, 3}}},
  topk_slice = {{{-2.0}, {-1.0}, {-5.0}}, {{1}, {2}, {1}}},
  topk_full = {{{3.25, 1.0, 0.5, -2.0}, {7.0, 6.0, 4.0, -1.0}, {8.0, 2.0, 0.25, -5.0}}, {{3, 4, 1, 2}, {1, 2, 4, 3}, {3, 1, 4, 2}}},
  topk_nan = {{nan, 7.0}, {2, 5}},
  topk_nan_small = {{-1.0, 0.0}, {3, 4}},
  topk_int32 = {{9, 5, 1}, {3, 1, 4}},
  topk_int64 = {{-3, 1}, {2, 4}},
  topk_expand = {{{4.0}, {4.0}}, {{2}, {2}}},
  unique_int = {{1, 2, 3, 7}, {3, 1, 2, 3, 1, 4}, {2, 1, 2, 1}},
  unique_t = {{1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0}, {{3, 9, 5}, {1, 2, 8}, {4, 6, 9}, {1, 5, 7}, {5, 3, 9}}, {2, 1, 2, 1, 3, 1, 1, 1, 3}},
  unique_f64 = {{-1.0, 0.5, 2.0}, {3, 2, 1}},
  unique_bool = {{false, true}},
  unique_expand = {{2}, {{1, 1, 1}, {1, 1, 1}}},
  ss_left = {{{2, 4, 5}, {1, 6, 1}}},
  ss_right = {{{3, 4, 6}, {1, 6, 2}}},
  ss_t = {{{2, 1}, {4, 6}, {5, 1}}},
  ss_nd = {{{3, 4}, {2, 1}}},
  ss_int = {{2, 2, 4}},
  ss_intint = {{2, 4, 5}},
  ss_intint_r = {{4, 4, 5}},
  ss_scalar = {3},
  ss_slice = {{2, 3}},
  bc = {{1, 3, 0, 1}},
  bc_min = {{0, 2, 0, 1, 0, 0}},
  bc_w32 = {{0.0, 1.75, 0.0, 2.0}},
  bc_w64 = {{0.0, 1.75, 0.0, 2.0}},
  bc_wint = {{2.0, 0.0, 4.0}},
  bc_slice = {{1, 0, 0, 0, 2}},
  flip_13 = {{{{15, 14, 13, 12}, {19, 18, 17, 16}, {23, 22, 21, 20}}, {{3, 2, 1, 0}, {7, 6, 5, 4}, {11, 10, 9, 8}}}},
  flip_last = {{{{3, 2, 1, 0}, {7, 6, 5, 4}, {11, 10, 9, 8}}, {{15, 14, 13, 12}, {19, 18, 17, 16}, {23, 22, 21, 20}}}},
  flip_t = {{{5.0, 3.0, 9.0}, {1.0, 5.0, 7.0}, {4.0, 6.0, 9.0}, {1.0, 2.0, 8.0}, {3.0, 9.0, 5.0}}},
  flip_expand = {{{3, 2, 1}, {3, 2, 1}}},
  flip_bool = {{{false, false}, {false, true}}},
  fliplr = {{{5.0, 1.0, 4.0, 1.0, 3.0}, {3.0, 5.0, 6.0, 2.0, 9.0}, {9.0, 7.0, 9.0, 8.0, 5.0}}},
  flipud = {{{5.0, 8.0, 9.0, 7.0, 9.0}, {9.0, 2.0, 6.0, 5.0, 3.0}, {3.0, 1.0, 4.0, 1.0, 5.0}}},
  roll_flat = {{{{19, 20, 21, 22}, {23, 0, 1, 2}, {3, 4, 5, 6}}, {{7, 8, 9, 10}, {11, 12, 13, 14}, {15, 16, 17, 18}}}},
  roll_flat_neg = {{{4.0, 1.0, 5.0, 9.0, 2.0}, {6.0, 5.0, 3.0, 5.0, 8.0}, {9.0, 7.0, 9.0, 3.0, 1.0}}},
  roll_dims = {{{{15, 12, 13, 14}, {19, 16, 17, 18}, {23, 20, 21, 22}}, {{3, 0, 1, 2}, {7, 4, 5, 6}, {11, 8, 9, 10}}}},
  roll_same = {{{{1, 2, 3, 0}, {5, 6, 7, 4}, {9, 10, 11, 8}}, {{13, 14, 15, 12}, {17, 18, 19, 16}, {21, 22, 23, 20}}}},
  roll_t = {{{5.0, 3.0, 9.0}, {3.0, 9.0, 5.0}, {1.0, 2.0, 8.0}, {4.0, 6.0, 9.0}, {1.0, 5.0, 7.0}}},
  roll_t_flat = {{{7.0, 5.0, 3.0}, {9.0, 3.0, 9.0}, {5.0, 1.0, 2.0}, {8.0, 4.0, 6.0}, {9.0, 1.0, 5.0}}},
  roll_big = {{{4.0, 1.0, 5.0, 3.0, 1.0}, {6.0, 5.0, 3.0, 9.0, 2.0}, {9.0, 7.0, 9.0, 5.0, 8.0}}},
  roll_slice = {{{1.0, 1.0, 4.0}, {5.0, 2.0, 6.0}, {7.0, 8.0, 9.0}}},
  rep = {{{{1, 2, 1, 2, 1, 2}, {3, 4, 3, 4, 3, 4}}, {{1, 2, 1, 2, 1, 2}, {3, 4, 3, 4, 3, 4}}}},
  rep_t = {{{1, 3, 1, 3}, {2, 4, 2, 4}}},
  rep_expand = {{{1.0, 2.0}, {1.0, 2.0}, {1.0, 2.0}, {1.0, 2.0}}},
  rep_1d = {{1.0, 2.0, 3.0, 1.0, 2.0, 3.0}},
  tile = {{{1, 2, 1, 2}, {3, 4, 3, 4}}},
  ri_flat = {{1, 1, 2, 2, 3, 3, 4, 4}},
  ri_0 = {{{1, 2}, {1, 2}, {1, 2}, {3, 4}, {3, 4}, {3, 4}}},
  ri_1 = {{{1, 1, 2, 2}, {3, 3, 4, 4}}},
  ri_t = {{{1, 3}, {1, 3}, {2, 4}, {2, 4}}},
  ri_t_flat = {{1, 1, 3, 3, 2, 2, 4, 4}},
  kth = {2.0, 3},
  kth_dim = {{1.0, 6.0, 2.0}, {4, 2, 1}},
  kth_keep = {{{0.5, -5.0, -1.0, 0.25}}, {{1, 3, 2, 3}}},
  median_all = {5.0},
  median_nan = {nan},
  median_dim = {{nan, nan, 2.0}, {2, 1, 3}},
  median_0 = {{2.0, -2.0, 3.25, 1.0}, {3, 1, 1, 1}},
  median_t_keep = {{{2.0}, {-2.0}, {3.25}, {1.0}}, {{3}, {1}, {1}, {1}}},
  mode = {1, 4},
  mode_dim = {{1, 4}, {4, 5}},
}

local function A(dt) return torch.tensor({ { 3, 1, 4, 1, 5 }, { 9, 2, 6, 5, 3 }, { 5, 8, 9, 7, 9 } }, { dtype = dt or torch.float32 }) end
local function F() return torch.tensor({ 2.5, nan, -1, 0, nan, 7, -3.5, 2.5 }, { dtype = torch.float64 }) end
local function B() return torch.tensor({ { 0.5, -2, 3.25, 1 }, { 7, 6, -1, 4 }, { 2, -5, 8, 0.25 } }) end
local function X() return torch.arange(24, { dtype = torch.int64 }):reshape(2, 3, 4) end
local function L(v) return torch.tensor(v, { dtype = torch.int64 }) end

-- t matches the nested list `exp` (values and shape); dtype checked when given
local function same(t, exp, dt)
  assert(torch.is_tensor(t), 'expected a tensor')
  if dt then assert.are.equal(dt, t.dtype) end
  local got = t:dim() == 0 and t:item() or t:tolist()
  if type(exp) ~= 'table' then
    assert.are.equal(0, t:dim())
    H.near({ got }, { exp }, 0, 0)
    return
  end
  -- compare shapes through the nesting of the expected list
  local shape, e = {}, exp
  while type(e) == 'table' do
    shape[#shape + 1] = #e
    e = e[1]
  end
  if #shape == 1 and shape[1] == 0 then shape = { 0 } end
  assert.are.same(shape, H.shape(t))
  H.near(got, exp, 0, 0)
end
-- values, indices = f() match R[name][1], R[name][2]; indices int64
local function same2(name, v, i)
  same(v, R[name][1])
  same(i, R[name][2], torch.int64)
end

describe('sort', function()
  it('sorts along the last dim by default, stable ties, 1-based indices', function()
    same2('sort_last', A():sort({ stable = true }))          -- A.sort(dim=-1, stable=True)
    same2('sort_last', A():sort(-1, { stable = true }))
    same2('sort_last', torch.sort(A(), 2))
  end)
  it('sorts along dim 1, descending', function()
    same2('sort_first_desc', A():sort(1, { descending = true, stable = true })) -- A.sort(dim=0, descending=True, stable=True)
    same2('sort_first_desc', A():sort(1, true))
  end)
  it('sorts transposed, expanded and sliced inputs', function()
    same2('sort_t', A():t():sort(2, { stable = true }))     -- A.t().sort(dim=1, stable=True)
    local e = torch.tensor({ { 3, 1, 3 } }):expand(2, 3)
    same2('sort_expand0', e:sort(1, { stable = true }))      -- tensor([[3., 1, 3]]).expand(2, 3).sort(dim=0, stable=True)
    same2('sort_expand1', e:sort(2, { descending = true, stable = true })) -- ...sort(dim=1, descending=True, stable=True)
    same2('sort_slice', A():narrow(2, 2, 3):sort(-1, { descending = true, stable = true })) -- A[:, 1:4].sort(-1, descending=True, stable=True)
  end)
  it('puts NaN last ascending and first descending (float64)', function()
    local v, i = F():sort({ stable = true })                  -- F.sort(stable=True)
    same2('sort_nan', v, i)
    assert.are.equal(torch.float64, v.dtype)
    same2('sort_nan_desc', F():sort({ descending = true, stable = true })) -- F.sort(descending=True, stable=True)
  end)
  it('sorts int32, int64 (strided) and bool', function()
    local v, i = A(torch.int32):sort(2, { descending = true, stable = true }) -- A.int().sort(1, descending=True, stable=True)
    same2('sort_int32', v, i)
    assert.are.equal(torch.int32, v.dtype)
    same2('sort_int64_step', A(torch.int64)[{ { 1, 3, 2 }, { 1, 5, 2 } }]:sort(1, { stable = true })) -- A.long()[::2, ::2].sort(0, stable=True)
    v, i = torch.tensor({ true, false, true, false }):sort({ stable = true }) -- tensor([T, F, T, F]).sort(stable=True)
    same2('sort_bool', v, i)
    assert.are.equal(torch.bool, v.dtype)
  end)
  it('sorts the middle dim of a 3-D tensor', function()
    same2('sort_3d_mid', X():sort(2, { descending = true, stable = true })) -- X.sort(1, descending=True, stable=True)
  end)
  it('keeps int64 values exact beyond 2^53', function()
    local big = L({ 3, 1, 2 }) + 9007199254740992 -- 2^53 + {3, 1, 2}
    local v, i = big:sort()
    same(i, { 2, 3, 1 })
    same(v - 9007199254740992, { 1, 2, 3 })
  end)
  it('handles empty and 0-dim tensors', function()
    local v, i = torch.empty(3, 0):sort(2)
    assert.are.same({ 3, 0 }, H.shape(v))
    assert.are.same({ 3, 0 }, H.shape(i))
    v, i = torch.empty(0):sort()
    assert.are.same({ 0 }, H.shape(v))
    v, i = torch.tensor(5):sort()
    same(v, 5)
    same(i, 1)
  end)
  it('argsort and msort', function()
    same(A():argsort(2, { descending = true }), R.argsort[1])  -- A.argsort(dim=1, descending=True)
    same(A():argsort(2, true), R.argsort_stable[1])
    same(torch.msort(A()), R.msort[1])                         -- A.msort()
  end)
  it('sorts a long line the same as a reference (merge sort path)', function()
    local n = 1000
    local vals = {}
    for k = 1, n do vals[k] = (k * 7919) % 1009 end -- values with ties
    local v, i = torch.tensor(vals):sort({ stable = true })
    local vl, il = v:tolist(), i:tolist()
    for k = 2, n do
      assert(vl[k - 1] <= vl[k], 'not sorted at ' .. k)
      if vl[k - 1] == vl[k] then assert(il[k - 1] < il[k], 'not stable at ' .. k) end
    end
    for k = 1, n do assert.are.equal(vals[il[k]], vl[k]) end
    -- many lines, sorted in parallel: each line of the transposed tensor is sorted
    local m = torch.tensor(vals):view(40, 25):t()
    local mv = m:sort(2)
    local rows = mv:tolist()
    for r = 1, #rows do for c = 2, #rows[r] do assert(rows[r][c - 1] <= rows[r][c]) end end
  end)
  it('sorts many lines in parallel the same as the transposed layout', function()
    local x = ((torch.arange(128000, { dtype = torch.int64 }) * 7919) % 1009):view(2000, 64)
    local v1, i1 = x:sort(2, { stable = true })
    local v2, i2 = x:t():sort(1, { stable = true })
    assert.is_true(torch.equal(v1, v2:t()))
    assert.is_true(torch.equal(i1, i2:t()))
    local first = v1:narrow(1, 1, 1):reshape(-1):tolist()
    for k = 2, 64 do assert(first[k - 1] <= first[k]) end
  end)
  it('sorts float16 and bfloat16', function()
    local v, i = torch.tensor({ 3, 1, 2 }):to(torch.float16):sort()
    assert.are.equal(torch.float16, v.dtype)
    same(v, { 1, 2, 3 }); same(i, { 2, 3, 1 })
    v, i = torch.tensor({ 3, 1, 2 }):to(torch.bfloat16):sort({ descending = true })
    same(v, { 3, 2, 1 }); same(i, { 1, 3, 2 })
  end)
  it('rejects bad dims and still works afterwards', function()
    H.errors_with(function() A():sort(3) end, 'sort: dimension')
    H.errors_with(function() A():sort(0) end, 'dimensions are 1-based')
    H.errors_with(function() A():sort(-3) end, 'out of range')
    H.errors_with(function() A():sort(1, { descending = 'yes' }) end, 'descending must be a boolean')
    same2('sort_last', A():sort({ stable = true }))
  end)
end)

describe('topk', function()
  it('largest along the last dim', function()
    same2('topk_last', B():topk(2))                           -- B.topk(2)
    same2('topk_last', torch.topk(B(), 2, -1, { largest = true, sorted = true }))
  end)
  it('smallest along dim 1, transposed, sliced, expanded', function()
    same2('topk_first_small', B():topk(2, 1, { largest = false })) -- B.topk(2, dim=0, largest=False)
    same2('topk_first_small', B():topk(2, 1, false))
    same2('topk_t', B():t():topk(3, 2))                       -- B.t().topk(3, dim=1)
    same2('topk_slice', B():narrow(2, 2, 2):topk(1, -1, { largest = false })) -- B[:, 1:3].topk(1, dim=-1, largest=False)
    same2('topk_expand', torch.tensor({ { 1, 4, 2 } }):expand(2, 3):topk(1, 2)) -- tensor([[1., 4, 2]]).expand(2, 3).topk(1, dim=1)
  end)
  it('k = size is a full sort; float64, NaN as largest', function()
    local v, i = B():double():topk(4, 2)                      -- B.double().topk(4, dim=1)
    same2('topk_full', v, i)
    assert.are.equal(torch.float64, v.dtype)
    same2('topk_nan', torch.tensor({ 2.5, nan, -1, 0, 7 }):topk(2)) -- tensor([2.5, nan, -1, 0, 7]).topk(2)
    same2('topk_nan_small', torch.tensor({ 2.5, nan, -1, 0, 7 }):topk(2, { largest = false }))
  end)
  it('int32 and int64', function()
    local v, i = torch.tensor({ 5, -3, 9, 1 }, { dtype = torch.int32 }):topk(3) -- tensor([5, -3, 9, 1], dtype=int32).topk(3)
    same2('topk_int32', v, i)
    assert.are.equal(torch.int32, v.dtype)
    same2('topk_int64', L({ 5, -3, 9, 1 }):topk(2, { largest = false })) -- tensor([5, -3, 9, 1]).topk(2, largest=False)
  end)
  it('k = 0, empty and 0-dim inputs', function()
    local v, i = B():topk(0, 2)
    assert.are.same({ 3, 0 }, H.shape(v))
    assert.are.same({ 3, 0 }, H.shape(i))
    v, i = torch.empty(3, 0):topk(0, 2)
    assert.are.same({ 3, 0 }, H.shape(v))
    v, i = torch.tensor(5):topk(1)
    same(v, 5)
    same(i, 1)
  end)
  it('checks k and dims, then still works', function()
    H.errors_with(function() B():topk(5) end, 'topk: selected index k out of range')
    H.errors_with(function() B():topk(-1) end, 'topk: selected index k out of range')
    H.errors_with(function() torch.empty(3, 0):topk(1, 2) end, 'topk: selected index k out of range')
    H.errors_with(function() torch.tensor(5):topk(2) end, 'topk: selected index k out of range')
    H.errors_with(function() B():topk(1.5) end, 'topk: k must be an integer')
    H.errors_with(function() B():topk(1, 3) end, 'topk: dimension')
    H.errors_with(function() torch.tensor({ true, false }):topk(1) end, 'topk: not implemented for bool')
    same2('topk_last', B():topk(2))
  end)
end)

describe('kthvalue, median, mode', function()
  it('kthvalue', function()
    local v, i = torch.tensor({ 4, 1, 2, 3 }):kthvalue(2)     -- tensor([4., 1, 2, 3]).kthvalue(2)
    same(v, R.kth[1]); same(i, R.kth[2])
    same2('kth_dim', B():kthvalue(3, 2))                      -- B.kthvalue(3, 1)
    same2('kth_keep', B():kthvalue(1, 1, true))               -- B.kthvalue(1, 0, keepdim=True)
    same2('kth_keep', B():kthvalue(1, 1, { keepdim = true }))
    H.errors_with(function() B():kthvalue(5, 2) end, 'kthvalue: selected number k out of range')
    H.errors_with(function() B():kthvalue(0) end, 'kthvalue: selected number k out of range')
    same2('kth_dim', B():kthvalue(3, 2))
  end)
  it('median of all elements and along a dim, NaN propagates', function()
    same(A():median(), R.median_all[1])                       -- A.median()
    same(torch.tensor({ 1, nan, 2, 3 }):median(), R.median_nan[1]) -- tensor([1., nan, 2, 3]).median()
    same2('median_dim', torch.tensor({ { 1, nan, 2, 3 }, { nan, nan, 1, 2 }, { 4, 1, 2, 3 } }):median(2))
    -- tensor([[1., nan, 2, 3], [nan, nan, 1, 2], [4, 1, 2, 3]]).median(1)
    same2('median_0', B():median(1))                          -- B.median(0)
    same2('median_t_keep', B():t():median(2, true))           -- B.t().median(1, keepdim=True)
    local e = torch.empty(0):median()
    assert(e:item() ~= e:item(), 'median of an empty tensor is nan')
  end)
  it('mode: smallest most frequent value, its last index', function()
    local v, i = L({ 1, 2, 2, 1, 3 }):mode()                  -- tensor([1, 2, 2, 1, 3]).mode()
    same(v, R.mode[1]); same(i, R.mode[2])
    same2('mode_dim', L({ { 1, 2, 2, 1, 3, 3 }, { 5, 5, 4, 4, 4, 0 } }):mode(2))
    -- tensor([[1, 2, 2, 1, 3, 3], [5, 5, 4, 4, 4, 0]]).mode(1)
  end)
end)

describe('unique', function()
  it('sorted values, inverse (input shape) and counts', function()
    local u, inv, c = L({ 3, 1, 2, 3, 1, 7 }):unique({ return_inverse = true, return_counts = true })
    -- torch.unique(tensor([3, 1, 2, 3, 1, 7]), return_inverse=True, return_counts=True)
    same(u, R.unique_int[1], torch.int64); same(inv, R.unique_int[2], torch.int64); same(c, R.unique_int[3], torch.int64)
    u, inv, c = torch.unique(A():t(), { return_inverse = true, return_counts = true }) -- torch.unique(A.t(), ...)
    same(u, R.unique_t[1], torch.float32); same(inv, R.unique_t[2]); same(c, R.unique_t[3])
  end)
  it('returns only what was asked', function()
    local u, c, extra = torch.tensor({ 0.5, -1, 0.5, 2, -1, -1 }, { dtype = torch.float64 }):unique({ return_counts = true })
    same(u, R.unique_f64[1], torch.float64); same(c, R.unique_f64[2])
    assert.is_nil(extra)
    local only, none = torch.tensor({ true, false, true }):unique()
    same(only, R.unique_bool[1], torch.bool)
    assert.is_nil(none)
    local u2, inv = torch.tensor({ { 2, 2, 2 } }, { dtype = torch.int32 }):expand(2, 3):unique({ return_inverse = true })
    same(u2, R.unique_expand[1], torch.int32); same(inv, R.unique_expand[2])
    -- sorted=false may return any order; ours is sorted
    same(L({ 3, 1, 3 }):unique({ sorted = false }), { 1, 3 })
  end)
  it('empty and 0-dim inputs', function()
    local u, inv, c = torch.empty(0, 3):unique({ return_inverse = true, return_counts = true })
    assert.are.same({ 0 }, H.shape(u)); assert.are.same({ 0, 3 }, H.shape(inv)); assert.are.same({ 0 }, H.shape(c))
    u, inv = torch.tensor(5):unique({ return_inverse = true }) -- (tensor([5.]), tensor(0))
    same(u, { 5 }); same(inv, 1)
  end)
  it('treats every NaN as its own value (PyTorch 1.13 CPU returns garbage here; this is 2.x behaviour)', function()
    local u, c = torch.tensor({ 1, nan, nan, 1 }):unique({ return_counts = true })
    same(u, { 1, nan, nan }); same(c, { 2, 1, 1 })
  end)
  it('rejects bad options', function()
    H.errors_with(function() A():unique({ dim = 9 }) end, 'unique: dimension 9 out of range') -- dim: spec/parity_spec.lua
    H.errors_with(function() A():unique({ return_counts = 1 }) end, 'unique: return_counts must be a boolean')
    same(L({ 3, 1, 3 }):unique(), { 1, 3 })
  end)
end)

describe('searchsorted', function()
  local S = function() return torch.tensor({ 1, 3, 5, 7, 9 }) end
  local Vv = function() return torch.tensor({ { 3, 6, 9 }, { 0, 10, 1 } }) end
  it('left and right, values of any shape, 1-based positions', function()
    same(torch.searchsorted(S(), Vv()), R.ss_left[1], torch.int64) -- torch.searchsorted(S, Vv)
    same(torch.searchsorted(S(), Vv(), { right = true }), R.ss_right[1]) -- right=True
    same(torch.searchsorted(S(), Vv(), { side = 'right' }), R.ss_right[1])
    same(torch.searchsorted(S(), Vv():t()), R.ss_t[1])        -- torch.searchsorted(S, Vv.t())
    same(torch.searchsorted(S():narrow(1, 1, 5)[{ { 1, 5, 2 } }], torch.tensor({ 4, 9 })), R.ss_slice[1]) -- S[::2]
    same(torch.searchsorted(S(), 4), R.ss_scalar[1])          -- torch.searchsorted(S, 4.0)
    same(S():searchsorted(Vv()), R.ss_left[1])
    same(torch.searchsorted(S(), Vv(), { out_int32 = true }), R.ss_left[1], torch.int32)
  end)
  it('N-D boundaries, mixed and integer dtypes, NaN', function()
    same(torch.searchsorted(torch.tensor({ { 1, 3, 5 }, { 2, 4, 6 } }), torch.tensor({ { 3, 6 }, { 3, 0 } }), { right = true }), R.ss_nd[1])
    -- torch.searchsorted(tensor([[1., 3, 5], [2, 4, 6]]), tensor([[3., 6], [3., 0]]), right=True)
    same(torch.searchsorted(L({ 1, 3, 5 }), torch.tensor({ 1.5, 3, nan })), R.ss_int[1]) -- NaN goes last
    same(torch.searchsorted(L({ 1, 3, 3, 5 }), L({ 3, 4, 6 })), R.ss_intint[1])
    same(torch.searchsorted(L({ 1, 3, 3, 5 }), L({ 3, 4, 6 }), { right = true }), R.ss_intint_r[1])
    local e = torch.searchsorted(torch.empty(0), torch.tensor({ 1, 2 }))
    same(e, { 1, 1 })
  end)
  it('checks shapes and options, then still works', function()
    H.errors_with(function() torch.searchsorted(torch.tensor({ { 1, 3, 5 }, { 2, 4, 6 } }), torch.tensor({ { 3 }, { 3 }, { 1 } })) end,
      'searchsorted: boundaries tensor should be 1 dimension or the first N-1 dimensions')
    H.errors_with(function() torch.searchsorted(torch.tensor(1), torch.tensor({ 3 })) end,
      'searchsorted: boundaries tensor should have positive dimension')
    H.errors_with(function() torch.searchsorted(torch.tensor({ { 1, 3 } }), 2) end,
      'searchsorted: input value can be a scalar only when boundaries tensor dimension is 1')
    H.errors_with(function() torch.searchsorted(S(), Vv(), { side = 'up' }) end, "side can only be 'left' or 'right'")
    H.errors_with(function() torch.searchsorted(S(), Vv(), { side = 'left', right = true }) end, "can't be set to opposites")
    same(torch.searchsorted(S(), Vv()), R.ss_left[1])
  end)
end)

describe('bincount', function()
  it('counts, minlength, weights (float32 stays float32, others give float64)', function()
    same(torch.bincount(L({ 1, 1, 3, 0, 1 })), R.bc[1], torch.int64) -- torch.bincount(tensor([1, 1, 3, 0, 1]))
    same(L({ 1, 1, 3 }):bincount({ minlength = 6 }), R.bc_min[1]) -- minlength=6
    same(L({ 1, 1, 3 }):bincount(nil, 6), R.bc_min[1])
    same(torch.bincount(L({ 1, 1, 3 }), { weights = torch.tensor({ 0.5, 1.25, 2.0 }) }), R.bc_w32[1], torch.float32)
    same(torch.bincount(L({ 1, 1, 3 }), { weights = torch.tensor({ 0.5, 1.25, 2.0 }, { dtype = torch.float64 }) }), R.bc_w64[1], torch.float64)
    same(torch.bincount(torch.tensor({ 2, 0, 2 }, { dtype = torch.int32 }), { weights = L({ 1, 2, 3 }) }), R.bc_wint[1], torch.float64)
    same(torch.bincount(L({ 4, 9, 4, 9, 0, 9 })[{ { 1, 6, 2 } }]), R.bc_slice[1]) -- tensor([4, 9, 4, 9, 0, 9])[::2]
    same(torch.bincount(torch.empty(0, { dtype = torch.int64 }), { minlength = 3 }), { 0, 0, 0 })
    assert.are.same({ 0 }, H.shape(torch.bincount(torch.empty(0, { dtype = torch.int64 }))))
  end)
  it('rejects what PyTorch rejects, then still works', function()
    H.errors_with(function() torch.bincount(torch.tensor({ 1, 2 })) end, 'bincount: only 1-d non-negative integral inputs')
    H.errors_with(function() torch.bincount(torch.tensor({ true, false })) end, 'bincount: only 1-d non-negative integral inputs')
    H.errors_with(function() torch.bincount(L({ -1, 2 })) end, 'bincount: only 1-d non-negative integral inputs')
    H.errors_with(function() torch.bincount(L({ { 1, 2 } })) end, 'bincount: only 1-d non-negative integral inputs')
    H.errors_with(function() torch.bincount(L({ 1, 2 }), { weights = torch.tensor({ 1 }) }) end,
      'bincount: weights should be 1-d and have the same length as input')
    H.errors_with(function() torch.bincount(L({ 1, 2 }), { minlength = -1 }) end, 'bincount: minlength should be >= 0')
    same(torch.bincount(L({ 1, 1, 3, 0, 1 })), R.bc[1])
  end)
end)

describe('flip', function()
  it('flips listed dims of contiguous, transposed, expanded inputs and bool', function()
    same(X():flip({ 1, 3 }), R.flip_13[1], torch.int64)      -- X.flip([0, 2])
    same(X():flip(1, 3), R.flip_13[1])
    same(torch.flip(X(), -1), R.flip_last[1])                 -- X.flip(-1)
    same(A():t():flip(1), R.flip_t[1])                        -- A.t().flip(0)
    same(L({ { 1, 2, 3 } }):expand(2, 3):flip(2), R.flip_expand[1]) -- tensor([[1, 2, 3]]).expand(2, 3).flip(1)
    same(torch.tensor({ { true, false }, { false, false } }):flip({ 1, 2 }), R.flip_bool[1], torch.bool)
    same(torch.fliplr(A()), R.fliplr[1])                      -- A.fliplr()
    same(A():flipud(), R.flipud[1])                           -- A.flipud()
    same(torch.tensor(1):flip(1), 1)                          -- tensor(1).flip([0])
    assert.are.same({ 0, 2 }, H.shape(torch.empty(0, 2):flip(1)))
  end)
  it('flip returns a copy', function()
    local a = L({ 1, 2, 3 })
    local f = a:flip(1)
    a:fill_(0)
    same(f, { 3, 2, 1 })
  end)
  it('rejects repeated and bad dims, then still works', function()
    H.errors_with(function() L({ 1, 2, 3 }):flip({ 1, 1 }) end, 'flip: dim 1 appears multiple times in the list of dims')
    H.errors_with(function() L({ 1, 2, 3 }):flip({ 1, -1 }) end, 'appears multiple times')
    H.errors_with(function() L({ 1, 2, 3 }):flip(2) end, 'flip: dimension')
    H.errors_with(function() L({ 1, 2, 3 }):flip() end, 'flip: dims required')
    H.errors_with(function() torch.fliplr(L({ 1, 2 })) end, 'fliplr: Input must be >= 2-d.')
    H.errors_with(function() torch.flipud(torch.tensor(1)) end, 'flipud: Input must be >= 1-d.')
    same(X():flip({ 1, 3 }), R.flip_13[1])
  end)
end)

describe('roll', function()
  it('rolls the flattened tensor when no dims are given', function()
    same(X():roll(5), R.roll_flat[1], torch.int64)           -- X.roll(5)
    same(A():roll(-2), R.roll_flat_neg[1])                    -- A.roll(-2)
    same(A():t():roll(4), R.roll_t_flat[1])                   -- A.t().roll(4)
  end)
  it('rolls along dims, shifts beyond the size, repeated dims add', function()
    same(X():roll({ 1, -1 }, { 3, 1 }), R.roll_dims[1])       -- X.roll((1, -1), (2, 0))
    same(torch.roll(X(), { 1, 2 }, { 3, 3 }), R.roll_same[1]) -- X.roll((1, 2), (2, 2))
    same(A():t():roll(1, 1), R.roll_t[1])                     -- A.t().roll(1, 0)
    same(A():roll(-7, 2), R.roll_big[1])                      -- A.roll(-7, 1)
    same(A():narrow(2, 2, 3):roll(1, -1), R.roll_slice[1])   -- A[:, 1:4].roll(1, -1)
    same(torch.tensor(5):roll(1), 5)
    assert.are.same({ 2, 0 }, H.shape(torch.empty(2, 0):roll(1, 2)))
    assert.are.same({ 2, 0 }, H.shape(torch.empty(2, 0):roll(1)))
  end)
  it('rejects misaligned shifts and bad dims, then still works', function()
    H.errors_with(function() L({ 1, 2, 3 }):roll({ 1, 2 }, 1) end, 'roll: shifts and dimensions must align. shifts: 2, dims:1')
    H.errors_with(function() X():roll({ 1, 2 }) end, 'roll: shifts and dimensions must align. shifts: 2, dims:0')
    H.errors_with(function() X():roll(1, 4) end, 'roll: dimension')
    H.errors_with(function() torch.tensor(5):roll(1, 1) end, 'roll: dimension specified as 1 but tensor has no dimensions')
    H.errors_with(function() X():roll('a') end, 'roll: shifts must be a number')
    same(X():roll(5), R.roll_flat[1])
  end)
end)

describe('repeat', function()
  it('tiles the tensor, with new leading dims', function()
    local m = L({ { 1, 2 }, { 3, 4 } })
    same(m['repeat'](m, 2, 1, 3), R.rep[1], torch.int64)      -- tensor([[1, 2], [3, 4]]).repeat(2, 1, 3)
    same(m:repeat_tensor({ 2, 1, 3 }), R.rep[1])
    same(m:t():repeat_tensor(1, 2), R.rep_t[1])               -- .t().repeat(1, 2)
    same(torch.tensor({ { 1, 2 } }):expand(2, 2):repeat_tensor(2, 1), R.rep_expand[1]) -- tensor([[1., 2]]).expand(2, 2).repeat(2, 1)
    same(torch.tensor({ 1, 2, 3 }):repeat_tensor(2), R.rep_1d[1]) -- tensor([1., 2, 3]).repeat(2)
    same(m:tile(2), R.tile[1])                                -- tensor([[1, 2], [3, 4]]).tile(2)
    same(torch.tile(m, { 2 }), R.tile[1])
    same(torch.tensor({ true, false }):repeat_tensor(2), { true, false, true, false }, torch.bool)
    assert.are.same({ 0, 4 }, H.shape(m:repeat_tensor(0, 2)))
    same(torch.tensor(5):repeat_tensor(2), { 5, 5 })
  end)
  it('rejects too few or negative repeats, then still works', function()
    local m = L({ { 1, 2 }, { 3, 4 } })
    H.errors_with(function() m:repeat_tensor(2) end,
      'repeat_tensor: number of dimensions of repeat dims (1) can not be smaller than number of dimensions of tensor (2)')
    H.errors_with(function() m:repeat_tensor(-1, 2) end, 'repeat_tensor: repeats must be non-negative, got -1')
    H.errors_with(function() m:repeat_tensor() end, 'repeat_tensor: repeats required')
    H.errors_with(function() m:repeat_tensor(1.5, 2) end, 'repeat_tensor: repeats at position 1 must be an integer, got 1.5')
    same(m['repeat'](m, 2, 1, 3), R.rep[1])
  end)
end)

describe('repeat_interleave', function()
  it('flattened, along dims, transposed', function()
    local m = L({ { 1, 2 }, { 3, 4 } })
    same(m:repeat_interleave(2), R.ri_flat[1], torch.int64)  -- .repeat_interleave(2)
    same(m:repeat_interleave(3, 1), R.ri_0[1])               -- .repeat_interleave(3, dim=0)
    same(torch.repeat_interleave(m, 2, -1), R.ri_1[1])       -- .repeat_interleave(2, dim=-1)
    same(m:t():repeat_interleave(2, 1), R.ri_t[1])           -- .t().repeat_interleave(2, dim=0)
    same(m:t():repeat_interleave(2), R.ri_t_flat[1])         -- .t().repeat_interleave(2)
    same(m:repeat_interleave(L({ 2 })), R.ri_flat[1])
    assert.are.same({ 2, 0 }, H.shape(m:repeat_interleave(0, 2)))
    assert.are.same({ 0 }, H.shape(m:repeat_interleave(0)))
    same(torch.tensor(5):repeat_interleave(2), { 5, 5 })     -- tensor(5).repeat_interleave(2)
  end)
  it('rejects negative repeats and bad dims, then still works', function()
    local m = L({ { 1, 2 }, { 3, 4 } })
    H.errors_with(function() m:repeat_interleave(-1) end, 'repeat_interleave: repeats can not be negative')
    H.errors_with(function() m:repeat_interleave(2, 3) end, 'repeat_interleave: dimension 3 out of range')
    H.errors_with(function() m:repeat_interleave(2, -3) end, 'repeat_interleave: dimension -3 out of range')
    H.errors_with(function() torch.tensor(5):repeat_interleave(2, 1) end, 'repeat_interleave: dimension specified as 1')
    H.errors_with(function() m:repeat_interleave(L({ 1, 2 }), 1) end, 'only a number')
    same(m:repeat_interleave(2), R.ri_flat[1])
  end)
end)

describe('memory', function()
  it('returns the live tensor count to its baseline, errors included', function()
    local T = require 'moontorch.tensor'
    local stats = torch._C.mt_get_stats()
    T.sweep()
    local base = tonumber(stats.live_tensors)
    for _ = 1, 3 do
      local v, i = A():t():sort(1, { descending = true })
      v, i = B():topk(2, 1)
      v, i = B():median(2)
      local u, inv, c = A():unique({ return_inverse = true, return_counts = true })
      local s = torch.searchsorted(torch.tensor({ 1, 2, 3 }), A())
      local b = torch.bincount(L({ 1, 2, 2 }), { weights = torch.tensor({ 1, 2, 3 }) })
      local f = X():flip(1):roll(1, 2):repeat_tensor(1, 2, 1):repeat_interleave(2, 3)
      pcall(function() return B():topk(9) end)
      pcall(function() return torch.bincount(L({ -1 })) end)
      pcall(function() return torch.searchsorted(torch.tensor({ { 1 } }), torch.tensor({ 1, 2 })) end)
    end
    T.sweep()
    assert.are.equal(base, tonumber(stats.live_tensors))
  end)
end)

-- unique / unique_consecutive with {dim = d}: every dtype (bool used to fail: "attempt to compare
-- two boolean values"). Values from /usr/bin/python3's torch 1.13 (/tmp script: torch.unique(x,
-- dim=d - 1, return_inverse=True, return_counts=True) and likewise unique_consecutive), inverse + 1.
describe('unique and unique_consecutive with dim', function()
  local b = { { true, false, true }, { false, false, true }, { true, false, true } }
  local function all3(f, x, opts)
    opts.return_inverse, opts.return_counts = true, true
    local v, i, c = f(x, opts)
    return v:tolist(), i:tolist(), c:tolist(), v
  end
  it('bool', function()
    local v, i, c, t = all3(torch.unique, torch.tensor(b), { dim = 2 })
    assert.are.same({ { false, true, true }, { false, false, true }, { false, true, true } }, v)
    assert.are.same({ 2, 1, 3 }, i)
    assert.are.same({ 1, 1, 1 }, c)
    assert.are.equal(torch.bool, t.dtype)
    v, i, c = all3(torch.unique, torch.tensor(b), { dim = 1 })
    assert.are.same({ { false, false, true }, { true, false, true } }, v)
    assert.are.same({ 2, 1, 2 }, i)
    assert.are.same({ 1, 2 }, c)
    -- sorted=false: with dim, sorted all the same (as PyTorch)
    assert.are.same({ { false, true, true }, { false, false, true }, { false, true, true } },
      torch.tensor(b):unique({ sorted = false, dim = -1 }):tolist())
    v, i, c = all3(torch.unique_consecutive, torch.tensor(b), { dim = 2 })
    assert.are.same(b, v)
    assert.are.same({ 1, 2, 3 }, i)
    assert.are.same({ 1, 1, 1 }, c)
    -- without dim: unique(tensor([True, True, False, True])), unique_consecutive of the same
    local tv, ti, tc = torch.unique(torch.tensor({ true, true, false, true }), { return_inverse = true, return_counts = true })
    assert.are.same({ { false, true }, { 2, 2, 1, 2 }, { 1, 3 } }, { tv:tolist(), ti:tolist(), tc:tolist() })
    tv, ti, tc = torch.unique_consecutive(torch.tensor({ true, true, false, true }), { return_inverse = true, return_counts = true })
    assert.are.same({ { true, false, true }, { 1, 1, 2, 3 }, { 2, 1, 1 } }, { tv:tolist(), ti:tolist(), tc:tolist() })
  end)
  it('integers (int64 past 2^53 kept apart, uint8), floats (-0 == 0), 3-d, a transposed view', function()
    local i64 = torch.tensor({ { 3, 1, 3, 2 }, { 1, 0, 1, 5 } }, { dtype = torch.int64 })
    local v, i, c = all3(torch.unique, i64, { dim = 2 })
    assert.are.same({ { { 1, 2, 3 }, { 0, 5, 1 } }, { 3, 1, 3, 2 }, { 1, 1, 2 } }, { v, i, c })
    v, i, c = all3(torch.unique, i64:t(), { dim = 1 }) -- a non-contiguous view
    assert.are.same({ { { 1, 0 }, { 2, 5 }, { 3, 1 } }, { 3, 1, 3, 2 }, { 1, 1, 2 } }, { v, i, c })
    local big = torch.tensor({ { 1 }, { 0 }, { 1 } }, { dtype = torch.int64 }) + torch.tensor(2 ^ 60, { dtype = torch.int64 })
    local bv, bi = torch.unique(big, { dim = 1, return_inverse = true })
    assert.are.same({ 2, 1, 2 }, bi:tolist())
    assert.is_true(torch.equal(bv, big:index_select(1, torch.tensor({ 2, 1 }, { dtype = torch.int64 }))))
    local u8v, u8c = torch.unique(torch.tensor({ { 200, 1 }, { 3, 4 }, { 200, 1 } }, { dtype = torch.uint8 }),
      { dim = 1, return_counts = true })
    assert.are.same({ { { 3, 4 }, { 200, 1 } }, { 1, 2 } }, { u8v:tolist(), u8c:tolist() })
    assert.are.equal(torch.uint8, u8v.dtype)
    v, i, c = all3(torch.unique, torch.tensor({ { 1.5, -2.0 }, { 1.5, -2.0 }, { 0.0, 1.0 }, { -0.0, 1.0 } }), { dim = 1 })
    assert.are.same({ { { 0, 1 }, { 1.5, -2 } }, { 2, 2, 1, 1 }, { 2, 2 } }, { v, i, c })
    v, i, c = all3(torch.unique, torch.tensor({ { { 1, 2 }, { 1, 2 }, { 0, 9 } }, { { 3, 3 }, { 3, 3 }, { 1, 1 } } }), { dim = 2 })
    assert.are.same({ { { { 0, 9 }, { 1, 2 } }, { { 1, 1 }, { 3, 3 } } }, { 2, 2, 1 }, { 1, 2 } }, { v, i, c })
    v, i, c = all3(torch.unique_consecutive, torch.tensor({ { 1, 1, 2, 1 }, { 0, 0, 3, 0 } }), { dim = 2 })
    assert.are.same({ { { 1, 2, 1 }, { 0, 3, 0 } }, { 1, 1, 2, 3 }, { 2, 1, 1 } }, { v, i, c })
    v, i, c = all3(torch.unique_consecutive, torch.tensor({ { { 1, 1, 2 }, { 1, 1, 2 } }, { { 0, 0, 1 }, { 0, 0, 1 } } }), { dim = 3 })
    assert.are.same({ { { { 1, 2 }, { 1, 2 } }, { { 0, 1 }, { 0, 1 } } }, { 1, 1, 2 }, { 2, 1 } }, { v, i, c })
    -- NaN slices are all distinct (PyTorch leaves their order to its sort; ours puts them last)
    local nv, nc = torch.unique(torch.tensor({ { nan }, { nan }, { 1 } }), { dim = 1, return_counts = true })
    assert.are.same({ 1, 1, 1 }, nc:tolist())
    assert.are.equal(1, nv[1]:item())
  end)
  it('empty and scalar inputs, bad dims', function()
    for _, f in ipairs({ torch.unique, torch.unique_consecutive }) do
      local v, i, c = f(torch.empty(0, 3), { dim = 1, return_inverse = true, return_counts = true })
      assert.are.same({ 0, 3 }, H.shape(v))
      assert.are.same({ 0 }, H.shape(i))
      assert.are.same({ 0 }, H.shape(c))
      H.errors_with(function() f(torch.empty(0, 3), { dim = 2 }) end,
        "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
      H.errors_with(function() f(torch.tensor(5), { dim = 1 }) end, 'tensor has no dimensions')
      H.errors_with(function() f(torch.zeros(2, 2), { dim = -3 }) end, 'dimension -3 out of range')
    end
  end)
end)
