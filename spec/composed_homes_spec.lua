-- The functions composed in Lua live in their family's file (issue 24: lua/ops/<family>.lua's
-- "composed in Lua" sections, lua/ops/types.lua, lua/ops/functional.lua, lua/nn/<family>.lua),
-- and each still passes the observation point (lua/observe.lua) exactly once per call.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local observe = require 'moontorch.observe'
local F = nn.functional

-- the file a function was written in, as 'ops/linalg.lua' (through the fronts that
-- lua/ops/byname.lua and lua/dotcall.lua put around functions, their upvalue f, and the named
-- nodes of lua/ops/compose.lua, their upvalue fn)
local fronts = { ['ops/byname.lua'] = 'f', ['moontorch/dotcall.lua'] = 'f', ['ops/compose.lua'] = 'fn' }
local function home(f)
  local file = debug.getinfo(f, 'S').source:match('([%w_]+/[%w_]+%.lua)$')
  local up = fronts[file]
  if up then
    for i = 1, 60 do
      local n, v = debug.getupvalue(f, i)
      if n == nil then break end
      if n == up and type(v) == 'function' then return home(v) end
    end
  end
  return file
end

describe('composed functions by family', function()
  it('lives in the file of its family', function()
    local want = {
      ['ops/elementwise.lua'] = { torch.logaddexp, torch.deg2rad, torch.asinh, torch.erfinv, torch.gcd, torch.rsub,
        torch.ldexp, torch.signbit, torch.empty(1).apply_ },
      ['ops/shape.lua'] = { torch.meshgrid, torch.broadcast_tensors, torch.take_along_dim, torch.block_diag,
        torch.diag_embed, torch.slice_scatter, torch.hsplit },
      ['ops/sort.lua'] = { torch.rot90, torch.unique_consecutive, torch.bucketize, torch.isin, torch.unique },
      ['ops/reduce.lua'] = { torch.diff, torch.trace, torch.cummax, torch.logcumsumexp, torch.nanmean, torch.histc,
        torch.quantile, torch.renorm, torch.trapezoid, torch.cov, torch.corrcoef },
      ['ops/linalg.lua'] = { torch.kron, torch.inner, torch.cross, torch.cdist, torch.pdist, torch.einsum,
        torch.chain_matmul, torch.matrix_power, torch.linalg.vector_norm, torch.linalg.matrix_norm, torch.linalg.norm,
        torch.matrix_exp, torch.linalg.householder_product, F.pdist },
      ['ops/decomp.lua'] = { torch.linalg.det, torch.linalg.solve, torch.linalg.inv, torch.logdet, torch.linalg.cholesky,
        torch.linalg.svd },
      ['ops/create.lua'] = { torch.tril_indices, torch.vander, torch.FloatTensor, torch.hann_window,
        torch.empty_strided },
      ['ops/view.lua'] = { torch.empty(1).t_, torch.empty(1).unsqueeze_ },
      ['ops/types.lua'] = { torch.finfo, torch.iinfo, torch.promote_types, torch.result_type, torch.can_cast,
        torch.Size, torch.is_nonzero },
      ['ops/functional.lua'] = { torch.conv2d, torch.dropout },
      ['ops/compose.lua'] = { torch.clamp_min, torch.relu_ }, -- the methods as torch functions
      ['nn/activation.lua'] = { F.rrelu, F.rrelu_, F.gumbel_softmax },
      ['nn/pooling.lua'] = { F.affine_grid, F.grid_sample, F.max_pool2d_with_indices },
      ['nn/weight_norm.lua'] = { nn.utils.weight_norm, nn.utils.remove_weight_norm, nn.utils.spectral_norm },
    }
    for file, fns in pairs(want) do
      for i, f in ipairs(fns) do
        assert.are.equal('function', type(f), file .. ' #' .. i)
        assert.are.equal(file, home(f), file .. ' #' .. i)
      end
    end
    -- RReLU is defined with the other activations; the files by session are gone
    assert.are.equal('nn/activation.lua', home(nn.RReLU.__init))
    assert.is_nil(package.searchpath('moontorch.ops.parity', package.path))
    assert.is_nil(package.searchpath('moontorch.nn.parity', package.path))
  end)

  it('passes the observation point once per call, outermost, for each moved function', function()
    torch.manual_seed(3)
    local x, a, b = torch.randn(3, 4), torch.randn(3, 3), torch.randn(3, 3)
    local i64 = { dtype = torch.int64 }
    local xc, tt = x:clamp(-0.5, 0.5), a:clone()
    local g1, g2 = torch.tensor({ 4, 6 }, i64), torch.tensor({ 6, 9 }, i64)
    local s1, s2 = torch.tensor({ 1, 2 }), torch.tensor({ 2 })
    local idx, one, two, three = torch.ones(3, 1, i64), torch.ones(1, 1, 2, 2), torch.ones(2), torch.ones(3)
    local grid, theta = torch.zeros(1, 2, 2, 2), torch.ones(1, 2, 3)
    local calls = {
      { 'torch.logaddexp', function() return torch.logaddexp(a, b) end },
      { 'torch.asinh', function() return torch.asinh(x) end },
      { 'Tensor.erfinv', function() return xc:erfinv() end },
      { 'torch.gcd', function() return torch.gcd(g1, g2) end },
      { 'torch.rsub', function() return torch.rsub(a, b) end },
      { 'torch.meshgrid', function() return torch.meshgrid(two, three) end },
      { 'torch.take_along_dim', function() return torch.take_along_dim(a, idx, 2) end },
      { 'torch.diag_embed', function() return torch.diag_embed(x) end },
      { 'torch.rot90', function() return torch.rot90(a) end },
      { 'torch.isin', function() return torch.isin(s1, s2) end },
      { 'torch.diff', function() return torch.diff(x) end },
      { 'torch.cummax', function() return torch.cummax(x, 1) end },
      { 'torch.logcumsumexp', function() return torch.logcumsumexp(x, 2) end },
      { 'torch.quantile', function() return torch.quantile(x, 0.5) end },
      { 'torch.cov', function() return torch.cov(x) end },
      { 'torch.trapezoid', function() return torch.trapezoid(x) end },
      { 'torch.einsum', function() return torch.einsum('ij,jk->ik', a, b) end },
      { 'torch.cross', function() return torch.cross(a, b) end },
      { 'torch.linalg.det', function() return torch.linalg.det(a) end },
      { 'torch.linalg.solve', function() return torch.linalg.solve(a, b) end },
      { 'torch.matrix_exp', function() return torch.matrix_exp(a) end },
      { 'torch.kron', function() return torch.kron(a, b) end },
      { 'torch.hann_window', function() return torch.hann_window(4) end },
      { 'torch.tril_indices', function() return torch.tril_indices(3, 3) end },
      { 'Tensor.t_', function() return tt:t_() end },
      { 'torch.clamp_min', function() return torch.clamp_min(x, 0) end },
      { 'torch.nn.functional.rrelu', function() return F.rrelu(x) end },
      { 'torch.nn.functional.grid_sample', function() return F.grid_sample(one, grid) end },
      { 'torch.nn.functional.affine_grid', function() return F.affine_grid(theta, { 1, 1, 2, 2 }) end },
    }
    for _, c in ipairs(calls) do
      local seen, depth, first = {}, 0, nil
      local h = observe.install(function(name, f)
        return function(...)
          if depth == 0 and first == nil then first = name end
          seen[name] = (seen[name] or 0) + 1
          depth = depth + 1
          local r = { pcall(f, ...) }
          depth = depth - 1
          if not r[1] then error(r[2], 0) end
          return unpack(r, 2, table.maxn(r))
        end
      end)
      local ok, err = pcall(c[2])
      h:remove()
      assert(ok, err)
      local name = c[1]
      -- the op itself is the outermost observed call; it (a different name than its inner ops) is seen once
      assert.are.equal(name, first, name)
      assert.are.equal(1, seen[name], name)
    end
    assert.are.equal(0, observe.active())
  end)
end)
