-- The fast paths of the speed work: the thread pool (core/thread.c), the column sum of the bias gradient
-- (core/tensor/reduce.c), the fused relu/abs backward on large tensors, item_int64's checks, and the
-- addmm / baddbmm front doors sharing their tail (core/ops/linalg.c). Each fast path is checked against
-- what the general path computes.
-- Run: MOONTORCH_BUILD_DIR=build luajit /usr/bin/busted spec/speed_spec.lua
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'
local C = torch._C

local function live() require('moontorch.tensor').sweep(); return tonumber(C.mt_get_stats().live_tensors) end

describe('column sums (sum and mean over the rows of a matrix)', function()
  it('equal the per-column sums in float64 for every shape and dtype, 1 and 2 threads', function()
    local threads = torch.get_num_threads()
    torch.manual_seed(3)
    for _, nt in ipairs({ 1, 2 }) do
      torch.set_num_threads(nt)
      for _, sz in ipairs({ { 128, 512 }, { 3, 17 }, { 1000, 70 }, { 257, 9 }, { 300, 130 }, { 9, 65 } }) do
        for _, dt in ipairs({ torch.float32, torch.float64 }) do
          -- integers: every order of summation gives the same exact result
          local a = torch.randint(-1000, 1000, sz):to(dt)
          local s, m = a:sum(1), a:mean(1)
          local ref = a:to(torch.float64):t():contiguous():sum(2):view(-1)
          assert.are.same(ref:to(dt):tolist(), s:tolist())
          H.near(m, (ref / sz[1]):to(dt):tolist(), 0, dt == torch.float32 and 1e-6 or 1e-15)
          -- random floats: within rounding of the float64 sum
          local b = torch.randn(sz[1], sz[2]):to(dt)
          H.near(b:sum(1), b:to(torch.float64):sum(1):tolist(), 1e-5, 1e-5)
          -- keepdim, a strided output, a column slice
          assert.are.same({ 1, sz[2] }, H.shape(a:sum(1, true)))
          local out = torch.empty(sz[2] * 2, { dtype = dt }):narrow(1, 1, sz[2])
          assert.are.same(ref:to(dt):tolist(), torch.sum(a, 1, false, { out = out }):tolist())
          if sz[2] > 2 then
            local sl = a:narrow(2, 2, sz[2] - 1)
            assert.are.same(ref:narrow(1, 2, sz[2] - 1):to(dt):tolist(), sl:sum(1):tolist())
          end
        end
      end
    end
    torch.set_num_threads(threads)
  end)

  it('bias gradients of nn.Linear on a batch are the column sums of the output gradient', function()
    local nn = require 'moontorch.nn'
    torch.manual_seed(0)
    local l = nn.Linear(64, 96)
    local x = torch.randn(200, 64)
    local g = torch.randn(200, 96)
    l(x):backward(g)
    H.near(l.bias.grad, g:to(torch.float64):sum(1):tolist(), 1e-5, 1e-5)
  end)

  it('nan and inf reach the sum of their column only', function()
    local a = torch.ones(40, 20)
    a[{ 3, 5 }] = 0 / 0
    a[{ 7, 9 }] = math.huge
    local s = a:sum(1):tolist()
    assert.truthy(s[5] ~= s[5])
    assert.are.equal(math.huge, s[9])
    assert.are.equal(40, s[1])
  end)
end)

describe('the thread pool', function()
  it('gives the single-thread results for many quick jobs in a row (elementwise, reductions, relu backward)', function()
    local threads = torch.get_num_threads()
    torch.manual_seed(1)
    local x = torch.randn(300, 700) -- 210 000 elements: several chunks
    local g = torch.randn(300, 700)
    local function run()
      local r = {}
      for _ = 1, 30 do
        local y = (x * 2 + 1):relu()
        r[1] = y:sum(1)
        r[2] = torch.exp(x)
        r[3] = torch.sigmoid(x):sum()
      end
      local xr = x:clone():requires_grad_()
      xr:relu():backward(g)
      r[4] = xr.grad
      return r
    end
    torch.set_num_threads(1)
    local one = run()
    torch.set_num_threads(2)
    local two = run()
    torch.set_num_threads(threads)
    for i = 1, 4 do assert.truthy(torch.equal(one[i], two[i]), 'result ' .. i .. ' differs') end
  end)

  it('survives fork(): a child process runs parallel kernels (its pool starts afresh)', function()
    local out, ok, err = H.run_lua([[
      local ffi = require 'ffi'
      ffi.cdef('int fork(void); int waitpid(int, int *, int); void _exit(int);')
      local torch = require 'moontorch'
      torch.set_num_threads(2)
      local x = torch.ones(1000, 1000)
      local want = (x * 3):sum():item()
      local pid = ffi.C.fork()
      if pid == 0 then
        local ok = (x * 3):sum():item() == want and (x + 1):relu():sum(1):sum():item() == 2e6
        ffi.C._exit(ok and 0 or 3)
      end
      local st = ffi.new('int[1]')
      ffi.C.waitpid(pid, st, 0)
      print('child status', st[0])]])
    assert.truthy(ok, out .. err)
    assert.truthy(out:find('child status\t0', 1, true), out)
  end)
end)

describe('relu and abs backward on large tensors (one fused pass)', function()
  it('g * (x > 0) and g * sign(x), bit for bit, with nan and inf in g and x', function()
    torch.manual_seed(2)
    for _, dt in ipairs({ torch.float32, torch.float64 }) do
      local n = 100003
      local x = torch.randn(n):to(dt)
      x[1], x[2], x[3] = 0, -0.0, 0 / 0
      local g = torch.randn(n):to(dt)
      g[4], g[5] = math.huge, 0 / 0
      local xr = x:clone():requires_grad_()
      xr:relu():backward(g)
      local want = g * x:gt(0):to(dt)
      assert.truthy(torch.equal(want:nan_to_num(7), xr.grad:nan_to_num(7)))
      local xa = x:clone():requires_grad_()
      xa:abs():backward(g)
      local wa = g * x:sign()
      assert.truthy(torch.equal(wa:nan_to_num(7), xa.grad:nan_to_num(7)))
    end
  end)

  it('a recorded backward (create_graph) still composes the formula', function()
    local x = torch.randn(70000, { dtype = torch.float64 }):requires_grad_()
    local y = x:relu():pow(2):sum()
    local gx = torch.autograd.grad(y, x, { create_graph = true })[1]
    H.near(gx, (x:detach():relu() * 2):tolist(), 0, 1e-12)
    assert.truthy(gx.grad_fn ~= nil)
  end)
end)

describe('item_int64', function()
  local buf = ffi.new('int64_t[1]')
  local function item_int64(t)
    if C.mt_tensor_item_int64(t, buf) ~= 0 then return nil, ffi.string(C.mt_last_error()) end
    return buf[0]
  end

  it('reads integers exactly and truncates floats toward zero', function()
    local big = torch.zeros(1, { dtype = torch.int64 })
    ffi.cast('int64_t *', big:data_ptr())[0] = 9007199254740993LL
    assert.are.equal(9007199254740993LL, item_int64(big))
    assert.are.equal(-3LL, item_int64(torch.tensor(-3.9)))
    assert.are.equal(2LL, item_int64(torch.tensor(2.9, { dtype = torch.float64 })))
    assert.are.equal(255LL, item_int64(torch.tensor(255, { dtype = torch.uint8 })))
    assert.are.equal(1LL, item_int64(torch.tensor(true)))
  end)

  it('refuses NaN, the infinities and values beyond int64, naming the op', function()
    local _, e = item_int64(torch.tensor(0 / 0))
    assert.are.equal('item: cannot convert float NaN to integer', e)
    _, e = item_int64(torch.tensor(-math.huge, { dtype = torch.float64 }))
    assert.are.equal('item: cannot convert float infinity to integer', e)
    _, e = item_int64(torch.tensor(1e19, { dtype = torch.float64 }))
    assert.are.equal('item: value cannot be converted to type int64_t without overflow', e)
    assert.are.equal(-9223372036854775807LL - 1, item_int64(torch.tensor(-2 ^ 63, { dtype = torch.float64 })))
    _, e = item_int64(torch.ones(2))
    assert.are.equal('item: a Tensor with 2 elements cannot be converted to Scalar', e)
    _, e = item_int64(torch.empty(1, { device = 'meta' }))
    assert.truthy(e:find('^item: '), e)
  end)

  it('leaks nothing on either path', function()
    local base = live()
    for _ = 1, 100 do
      item_int64(torch.tensor(0 / 0))
      item_int64(torch.tensor(3))
    end
    assert.are.equal(base, live())
  end)
end)

describe('addmm and baddbmm (one shared tail)', function()
  it('compute beta c + alpha a b with c broadcast, into out= and in place', function()
    local a = torch.arange(6):view(2, 3):float()
    local b = torch.arange(12):view(3, 4):float()
    local c = torch.tensor({ 1, 2, 3, 4 })
    -- PyTorch 1.13 (/usr/bin/python3): torch.addmm(c, a, b, beta=2, alpha=0.5).tolist() with
    -- a = arange(6).view(2,3).float(), b = arange(12).view(3,4).float(), c = tensor([1.,2.,3.,4.])
    local want = { { 12, 15.5, 19, 22.5 }, { 30, 38, 46, 54 } }
    H.near(torch.addmm(c, a, b, { beta = 2, alpha = 0.5 }), want, 0, 0)
    local out = torch.empty(2, 4)
    torch.addmm(c, a, b, { beta = 2, alpha = 0.5, out = out })
    H.near(out, want, 0, 0)
    local ci = c:expand(2, 4):clone()
    ci:addmm_(a, b, { beta = 2, alpha = 0.5 })
    H.near(ci, want, 0, 0)
    local cb = c:view(1, 1, 4)
    local r = torch.baddbmm(cb, a:view(1, 2, 3):expand(2, 2, 3), b:view(1, 3, 4):expand(2, 3, 4), { beta = 2, alpha = 0.5 })
    H.near(r[1], want, 0, 0)
    H.near(r[2], want, 0, 0)
  end)

  it('keep their own messages', function()
    -- PyTorch 1.13's messages for the same calls (its dimensions 0-based, as here: they index the target sizes)
    H.errors_with(function() torch.addmm(torch.ones(3), torch.ones(2, 3), torch.ones(3, 4)) end,
      'moontorch.addmm: The expanded size of the tensor (4) must match the existing size (3) at non-singleton ' ..
      'dimension 1.  Target sizes: [2, 4].  Tensor sizes: [3]')
    H.errors_with(function() torch.baddbmm(torch.ones(3), torch.ones(2, 2, 3), torch.ones(2, 3, 4)) end,
      'moontorch.baddbmm: The expanded size of the tensor (4) must match the existing size (3) at non-singleton ' ..
      'dimension 2.  Target sizes: [2, 2, 4].  Tensor sizes: [3]')
    H.errors_with(function() torch.ones(4):addmm_(torch.ones(2, 3), torch.ones(3, 4)) end,
      'does not have the product\'s shape')
    H.errors_with(function() torch.ones(2, 4):baddbmm_(torch.ones(2, 2, 3), torch.ones(2, 3, 4)) end,
      'does not have the product\'s shape')
  end)
end)

describe('the small float32 product kernels (AVX-512, AVX2; one thread or split by columns)', function()
  -- shapes around the kernels' tiles (AVX2 6 x 16, AVX-512 8 x 32), the split threshold and the tails;
  -- transposed and sliced operands, beta (addmm) and out=
  local SHAPES = { { 64, 64, 64 }, { 1, 1, 1 }, { 7, 5, 3 }, { 13, 33, 17 }, { 96, 40, 100 }, { 128, 10, 256 },
    { 10, 256, 128 }, { 50, 97, 31 }, { 9, 129, 64 }, { 64, 48, 64 } }
  local CODE = [[
    local torch = require 'moontorch'
    torch.set_num_threads(%d)
    torch.manual_seed(5)
    local ffi = require 'ffi'
    local out = {}
    for _, s in ipairs(%s) do
      local m, n, k = s[1], s[2], s[3]
      local a, b = torch.randn(m, k), torch.randn(k, n)
      local c = torch.randn(n)
      for _, r in ipairs({ a:matmul(b), a:t():contiguous():t():matmul(b), torch.addmm(c, a, b, { beta = 0.5, alpha = 2 }),
        torch.randn(k, m):t():matmul(b), a:matmul(torch.randn(k, n + 3):narrow(2, 2, n)) }) do
        local p = ffi.cast('const uint32_t *', r:contiguous():data_ptr())
        local h = 0
        for i = 0, r:numel() - 1 do h = (h * 31 + p[i]) %% 4294967296 end
        out[#out + 1] = ('%%08x'):format(h)
      end
    end
    print(table.concat(out, ' '))]]
  local shapes = 'return ' .. (function()
    local t = {}
    for _, s in ipairs(SHAPES) do t[#t + 1] = ('{%d,%d,%d}'):format(s[1], s[2], s[3]) end
    return '{' .. table.concat(t, ',') .. '}'
  end)()
  local function run(env, threads)
    local code = CODE:format(threads, 'loadstring(' .. ('%q'):format(shapes) .. ')()')
    local s, ok, err = H.run_lua(code, env ~= '' and { env } or nil)
    assert(ok and err == '', s .. err)
    return s
  end

  it('give the same bits on every kernel and thread count', function()
    local base = run('MOONTORCH_VMATH=avx2', 1)
    assert.truthy(base:match('^%x+ '), base)
    assert.are.equal(base, run('MOONTORCH_VMATH=avx2', 2))
    assert.are.equal(base, run('', 1))
    assert.are.equal(base, run('', 2))
    -- MOONTORCH_VMATH=avx512 names the default level (where the CPU lacks AVX-512: the best below it)
    assert.are.equal(base, run('MOONTORCH_VMATH=avx512', 1))
    assert.are.equal(base, run('MOONTORCH_VMATH=avx512', 2))
  end)

  it('agree with float64 products within float32 rounding', function()
    torch.manual_seed(6)
    for _, s in ipairs(SHAPES) do
      local a, b = torch.randn(s[1], s[3]), torch.randn(s[3], s[2])
      local want = a:double():matmul(b:double())
      H.near(a:matmul(b), want:tolist(), 1e-4, 1e-4)
      local c = torch.randn(s[2])
      H.near(torch.addmm(c, a, b, { beta = 0.5, alpha = 2 }), (c:double() * 0.5 + want * 2):tolist(), 2e-4, 1e-4)
    end
  end)
end)
