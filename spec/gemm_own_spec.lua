-- moontorch's own float32 product kernel (core/tensor/linalg.c: sgemm_small_any) on the shapes it takes
-- by default: products of up to MT_OWN_GEMM_MACS multiply-adds with K up to 1024, B used as it is
-- (row-major) or copied panel by panel (transposed: nn.Linear's x @ W^T, other strides), split over the
-- pool by panels of columns or blocks of rows. Each result is checked against the float64 product of
-- the same float32 inputs within the float32 error bound of a K-term dot product (K * 2^-23 * (|A||B|)),
-- and must not depend on the thread count (every element is the same chain of FMAs however the work is
-- split). The AVX2 kernel (MOONTORCH_VMATH=avx2), the BLAS alone (MOONTORCH_VMATH=0: no own kernel) and
-- MT_BLAS=openblas (the provider takes every product above the small ones) run this file again in child
-- processes.
-- Run: MOONTORCH_BUILD_DIR=build luajit /usr/bin/busted spec/gemm_own_spec.lua
local H = require 'spec.support.helper'
local torch = H.torch
local build = os.getenv('MOONTORCH_BUILD_DIR') or 'build'

-- the product as the user wrote it, against the float64 product of the same values
local function check(got, a, b, what)
  local K = a:size(2)
  local ref = a:double():matmul(b:double())
  local bound = a:double():abs():matmul(b:double():abs()) * (K * 2 ^ -23) + 1e-30
  local err = (got:double() - ref):abs()
  local worst = (err / bound):max():item()
  assert.is_true(worst <= 1, ('%s: error %.3g of the bound'):format(what, worst))
end

-- (M, K, N) shapes: the MLP's (784-512-256-10, batch 128), odd sizes (tails of the 8/16/32-wide blocks
-- and of the 8-row tiles), K below 8 (the copy's element-by-element path) and K = 1
local SHAPES = {
  { 128, 784, 512 }, { 128, 512, 256 }, { 128, 256, 10 }, { 37, 100, 45 }, { 5, 7, 70 }, { 64, 13, 33 },
  { 200, 9, 17 }, { 3, 1, 40 }, { 1, 300, 97 }, { 129, 65, 1 },
}

-- whether the own kernel takes these products in this process (not under MT_BLAS=<provider> or
-- MOONTORCH_VMATH=0)
local own = torch.config():find("own kernel on its threads", 1, true) ~= nil

describe("the own float32 product kernel", function()
  torch.manual_seed(7)

  it('x @ W^T (B transposed: panels copied) for every shape', function()
    for _, s in ipairs(SHAPES) do
      local M, K, N = s[1], s[2], s[3]
      local x, w = torch.randn(M, K), torch.randn(N, K)
      check(x:matmul(w:t()), x, w:t(), ('%dx%dx%d NT'):format(M, K, N))
    end
  end)

  it('A^T @ B (the weight gradient of nn.Linear) and A @ B', function()
    for _, s in ipairs({ { 512, 128, 784 }, { 256, 128, 512 }, { 10, 128, 256 }, { 784, 128, 512 }, { 33, 65, 47 },
      table.unpack(SHAPES) }) do
      local M, K, N = s[1], s[2], s[3]
      local g, x = torch.randn(K, M), torch.randn(K, N)
      check(g:t():matmul(x), g:t(), x, ('%dx%dx%d TN'):format(M, K, N))
      local a = torch.randn(M, K)
      check(a:matmul(x), a, x, ('%dx%dx%d NN'):format(M, K, N))
    end
  end)

  it('B with a row stride wider than its columns, a column stride, or an expanded dimension', function()
    local M, K, N = 96, 200, 150
    local a = torch.randn(M, K)
    local wide = torch.randn(K, N + 11):narrow(2, 4, N) -- row-major, row stride N + 11
    check(a:matmul(wide), a, wide, 'narrowed B')
    local w = torch.randn(N, K + 5):narrow(2, 2, K) -- W^T with W's rows K + 5 apart
    check(a:matmul(w:t()), a, w:t(), 'transposed narrowed B')
    local every2 = torch.randn(K, 2 * N):as_strided({ K, N }, { 2 * N, 2 }) -- column stride 2
    check(a:matmul(every2), a, every2, 'column stride 2')
    local col = torch.randn(K, 1):expand(K, N) -- column stride 0
    check(a:matmul(col), a, col, 'expanded columns')
    local row = torch.randn(1, N):expand(K, N) -- row stride 0
    check(a:matmul(row), a, row, 'expanded rows')
    local at = torch.randn(K + 3, M):narrow(1, 2, K):t() -- A transposed and narrowed
    check(at:matmul(w:t()), at, w:t(), 'A transposed, B transposed')
  end)

  it('addmm: the bias (beta = 1, as nn.Linear) and other alpha and beta', function()
    local M, K, N = 128, 784, 512
    local x, w, bias = torch.randn(M, K), torch.randn(N, K), torch.randn(N)
    local got = torch.addmm(bias, x, w:t())
    local ref = x:double():matmul(w:double():t()) + bias:double()
    local bound = x:double():abs():matmul(w:double():abs():t()) * (K * 2 ^ -23) + bias:double():abs() * 2 ^ -23
    assert.is_true(((got:double() - ref):abs() / bound):max():item() <= 1)
    local c = torch.randn(M, N)
    local got2 = torch.addmm(c, x, w:t(), { beta = 0.5, alpha = 2 })
    local ref2 = x:double():matmul(w:double():t()) * 2 + c:double() * 0.5
    local bound2 = x:double():abs():matmul(w:double():abs():t()) * (2 * K * 2 ^ -23) + c:double():abs() * 2 ^ -23
    assert.is_true(((got2:double() - ref2):abs() / bound2):max():item() <= 1)
    -- beta = 0: what was in the result is not read (NaNs in it vanish)
    local out = torch.full({ M, N }, 0 / 0)
    torch.addmm(out, x, w:t(), { beta = 0, out = out })
    check(out, x, w:t(), 'beta = 0 over NaNs')
  end)

  it('does not depend on the thread count: the same bits by panels or by rows (own kernel), within the bound (BLAS)', function()
    local cases = {
      { 128, 784, 512, 'NT' }, -- panels, copied
      { 128, 256, 10, 'NT' }, -- rows, each thread copying the one panel
      { 512, 128, 784, 'TN' }, -- 25 panels: rows
      { 256, 128, 512, 'TN' }, { 128, 512, 256, 'NN' }, { 37, 300, 45, 'NT' },
      { 784, 128, 512, 'NN' }, -- a tie between the two splits, more rows than columns: rows
    }
    local n0 = torch.get_num_threads()
    for _, c in ipairs(cases) do
      local M, K, N, tt = c[1], c[2], c[3], c[4]
      local a = tt == 'TN' and torch.randn(K, M):t() or torch.randn(M, K)
      local b = tt == 'NT' and torch.randn(N, K):t() or torch.randn(K, N)
      torch.set_num_threads(1)
      local one = a:matmul(b)
      torch.set_num_threads(2)
      local two = a:matmul(b)
      local into = torch.empty(M, N)
      torch.mm(a, b, { out = into })
      torch.set_num_threads(n0)
      if own then
        assert.is_true(one:equal(two), ('%dx%dx%d %s'):format(M, K, N, tt))
        assert.is_true(one:equal(into), ('%dx%dx%d %s into out='):format(M, K, N, tt))
      else -- a BLAS splits its work as it likes: each within the bound
        check(one, a, b, ('%dx%dx%d %s, 1 thread'):format(M, K, N, tt))
        check(two, a, b, ('%dx%dx%d %s, 2 threads'):format(M, K, N, tt))
        check(into, a, b, ('%dx%dx%d %s into out='):format(M, K, N, tt))
      end
    end
  end)

  it("nn.Linear's forward and backward through it agree with float64", function()
    local lin = torch.nn.Linear(784, 512)
    local x = torch.randn(128, 784)
    local y = lin(x)
    check(y - lin.bias, x, lin.weight:detach():t(), 'Linear forward')
    local g = torch.randn(128, 512)
    y:backward(g)
    check(lin.weight.grad, g:t(), x, 'Linear weight gradient')
  end)
end)

if os.getenv('MT_GEMM_OWN_SPEC_CHILD') == nil then
  describe('who does the products', function()
    it('torch.config() names the own kernel and its limits, unless MT_BLAS names a provider', function()
      local out, ok, err = H.run_lua([[io.write(require('moontorch').config())]])
      assert.is_true(ok, out .. err)
      local simd = out:match("own kernels: (%w+)")
      if simd ~= 'scalar' then
        assert.truthy(out:find("except those of up to 67108864 multiply-adds (K up to 1024): moontorch's own kernel", 1, true), out)
      end
      local p = io.popen('env MT_BLAS=openblas MOONTORCH_BUILD_DIR=' .. build .. [[ luajit -e "package.path='build/lua/?.lua;build/lua/?/init.lua;'..package.path package.cpath='build/lib/?.so;'..package.cpath io.write(require('moontorch').config())" 2>&1]])
      local o2 = p:read('*a')
      p:close()
      assert.truthy(o2:find('float32 matrix products: OpenBLAS (MT_BLAS)', 1, true), o2)
      assert.falsy(o2:find("own kernel on its threads", 1, true), o2)
      local p3 = io.popen('env MOONTORCH_VMATH=0 MOONTORCH_BUILD_DIR=' .. build .. [[ luajit -e "package.path='build/lua/?.lua;build/lua/?/init.lua;'..package.path package.cpath='build/lib/?.so;'..package.cpath io.write(require('moontorch').config())" 2>&1]])
      local o3 = p3:read('*a')
      p3:close()
      assert.falsy(o3:find("own kernel on its threads", 1, true), o3)
    end)

    -- the other paths: this file again in a child process under each setting
    for _, env in ipairs({ 'MOONTORCH_VMATH=avx2', 'MOONTORCH_VMATH=0', 'MT_BLAS=openblas' }) do
      it(env .. ': the same checks pass', function()
        local p = io.popen(('env MT_GEMM_OWN_SPEC_CHILD=1 %s MOONTORCH_BUILD_DIR=%s luajit /usr/bin/busted -o TAP spec/gemm_own_spec.lua 2>&1')
          :format(env, build))
        local tap = p:read('*a')
        p:close()
        local _, failed = ('\n' .. tap):gsub('\nnot ok ', '')
        local _, passed = ('\n' .. tap):gsub('\nok ', '')
        assert.are.equal(0, failed, tap)
        assert.truthy(passed >= 6, tap)
      end)
    end
  end)
end
