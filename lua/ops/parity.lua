-- parity.lua -- PyTorch 1.13 functions a user meets that the other op modules did not have (the
-- parity session), composed from the existing ops so that autograd, dtypes and devices follow:
-- memory formats; torch.<name> for every method PyTorch also has as a function; elementwise
-- (deg2rad, logaddexp, signbit, asinh, erfinv, ...), shape and indexing (broadcast_tensors,
-- meshgrid, take_along_dim, rot90, kron, block_diag, diag_embed, *_scatter, ...), reductions and
-- scans (diff, trace, cummax, logcumsumexp, nanmean, histc, quantile, ...), products (einsum,
-- inner, cdist, addr, ...), torch.linalg's norms, and the Torch7 constructors (torch.FloatTensor).
-- Each one follows PyTorch's function with moontorch's conventions: 1-based dims and positions
-- (cummax's indices, tril_indices, unique_consecutive's inverse), a variable number of results as
-- one Lua array (broadcast_tensors, meshgrid), options in a trailing table.
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local fail = core.fail
local is_tensor = T.is_tensor
local methods = T.methods
local type, floor, huge, pi = type, math.floor, math.huge, math.pi
local unpack, select, ipairs = unpack, select, ipairs

local M = {}
local torch -- set by install()

local function need(op, x, what)
  if not is_tensor(x) then fail(op, ('expected a tensor for %s, got %s'):format(what or 'input', type(x))) end
end
-- a 1-based dim (negative from the end) as a positive 1-based one
local function pdim(op, d, nd)
  if type(d) ~= 'number' or d ~= floor(d) then fail(op, 'expected an integer dim, got ' .. tostring(d)) end
  local n = nd > 0 and nd or 1
  if d < -n or d > n or d == 0 then
    fail(op, ('dimension %d out of range (expected to be in range of [%d, -1] or [1, %d])%s'):format(d, -n, n,
      d == 0 and ': dimensions are 1-based (1 is the first, -1 the last)' or ''))
  end
  return d < 0 and d + n + 1 or d
end
-- the trailing options table of a call (a table that is no tensor and has no array part)
local function opts_of(...)
  local n = select('#', ...)
  local last = n > 0 and select(n, ...) or nil
  if type(last) == 'table' and not is_tensor(last) and last[1] == nil then return last, n - 1 end
  return nil, n
end
local function size_of(t) return t:size() end
local function is_float(t) return t:is_floating_point() end
local function as_float(t)
  if is_float(t) then return t end
  return t:to(torch.get_default_dtype())
end
local function sizes(t)
  local s = {}
  for i = 1, t:dim() do s[i] = t:size(i) end
  return s
end





------------------------------------------------------------------------------ nn.functional extras
local function rrelu(x, lower, upper, training, inplace)
  if type(lower) == 'table' then
    local o = lower
    lower, upper, training, inplace = o.lower, o.upper, o.training, o.inplace
  end
  lower, upper = lower or 1 / 8, upper or 1 / 3
  if training then
    -- PyTorch draws one uniform double per non-positive element, in order
    local neg = x:le(0)
    local k = neg:sum():item()
    local slope = torch.ones_like(x)
    if k > 0 then
      local u = torch.empty(k, { dtype = torch.float64 }):uniform_(lower, upper):to(x.dtype)
      slope = slope:masked_scatter(neg, u)
    end
    local r = x * slope:detach()
    if inplace then x:copy_(r) return x end
    return r
  end
  local r = torch.nn.functional.leaky_relu(x, (lower + upper) / 2)
  if inplace then x:copy_(r) return x end
  return r
end
local function gumbel_softmax(logits, tau, hard, eps, dim)
  if type(tau) == 'table' then
    local o = tau
    tau, hard, dim = o.tau, o.hard, o.dim
  end
  tau, dim = tau or 1, dim or -1
  local g = -torch.empty_like(logits):exponential_():log()
  local y = ((logits + g) / tau):softmax(dim)
  if hard then
    local _, idx = y:max(dim, { keepdim = true })
    local y_hard = torch.zeros_like(logits):scatter(dim, idx, 1.0)
    return y_hard - y:detach() + y
  end
  return y
end

------------------------------------------------------------------------------ affine_grid, grid_sample
-- affine_grid(theta, size, align_corners=false): theta (N, 2, 3) and size (N, C, H, W), or (N, 3, 4)
-- and (N, C, D, H, W); the grid (N, H, W, 2) / (N, D, H, W, 3) of theta applied to the pixels' centres
local function base_coords(n, align, dtype)
  if align then return n > 1 and torch.linspace(-1, 1, n, { dtype = dtype }) or torch.zeros(1, { dtype = dtype }) end
  return (torch.arange(n):to(dtype) * 2 + 1) / n - 1
end
local function affine_grid(theta, size, align_corners)
  need('affine_grid', theta, 'theta')
  if type(align_corners) == 'table' then align_corners = align_corners.align_corners end
  local align = align_corners or false
  if not is_float(theta) then
    fail('affine_grid', 'Expected theta to have floating point type, but got ' .. tostring(theta.dtype))
  end
  local ns = #size
  local dt = theta.dtype
  if ns == 4 then
    if theta:dim() ~= 3 or theta:size(2) ~= 2 or theta:size(3) ~= 3 then
      fail('affine_grid', ('Expected a batch of 2D affine matrices of shape Nx2x3 for size [%s]. Got [%s].')
        :format(table.concat(size, ', '), table.concat(sizes(theta), ', ')))
    end
    local N, H, W = size[1], size[3], size[4]
    local xs = base_coords(W, align, dt):view(1, W):expand(H, W)
    local ys = base_coords(H, align, dt):view(H, 1):expand(H, W)
    local base = torch.stack({ xs, ys, torch.ones(H, W, { dtype = dt }) }, 3):view(1, H * W, 3)
    return base:expand(N, H * W, 3):bmm(theta:transpose(2, 3)):view(N, H, W, 2)
  elseif ns == 5 then
    if theta:dim() ~= 3 or theta:size(2) ~= 3 or theta:size(3) ~= 4 then
      fail('affine_grid', ('Expected a batch of 3D affine matrices of shape Nx3x4 for size [%s]. Got [%s].')
        :format(table.concat(size, ', '), table.concat(sizes(theta), ', ')))
    end
    local N, D, H, W = size[1], size[3], size[4], size[5]
    local xs = base_coords(W, align, dt):view(1, 1, W):expand(D, H, W)
    local ys = base_coords(H, align, dt):view(1, H, 1):expand(D, H, W)
    local zs = base_coords(D, align, dt):view(D, 1, 1):expand(D, H, W)
    local base = torch.stack({ xs, ys, zs, torch.ones(D, H, W, { dtype = dt }) }, 4):view(1, D * H * W, 4)
    return base:expand(N, D * H * W, 4):bmm(theta:transpose(2, 3)):view(N, D, H, W, 3)
  end
  fail('affine_grid', 'affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. Got size '
    .. '[' .. table.concat(size, ', ') .. '].')
end

-- a coordinate in [-1, 1] to pixels, then padding_mode's treatment (PyTorch's grid_sampler_compute_source_index)
local function reflect(x, lo2, hi2) -- reflect x into [lo2 / 2, hi2 / 2] (twice the bounds, as PyTorch)
  if lo2 == hi2 then return torch.zeros_like(x) end
  local mn, span = lo2 / 2, (hi2 - lo2) / 2
  local d = (x - mn):abs()
  local extra = d:fmod(span)
  local flips = (d / span):floor()
  return torch.where(flips:remainder(2):eq(0), extra + mn, span - extra + mn)
end
local function source_index(c, n, padding, align)
  local x = align and (c + 1) / 2 * (n - 1) or ((c + 1) * n - 1) / 2
  if padding == 'border' then
    x = x:clamp(0, n - 1)
  elseif padding == 'reflection' then
    if align then x = reflect(x, 0, 2 * (n - 1)) else x = reflect(x, -1, 2 * n - 1) end
    x = x:clamp(0, n - 1)
  end
  return x
end
-- grid_sample(input, grid, mode='bilinear', padding_mode='zeros', align_corners=false): 4-D input
-- (bilinear and nearest); composed of gathers, so both input and grid get gradients
local function grid_sample(input, grid, mode, padding_mode, align_corners)
  need('grid_sample', input) need('grid_sample', grid, 'grid')
  if type(mode) == 'table' then
    local o = mode
    mode, padding_mode, align_corners = o.mode, o.padding_mode, o.align_corners
  end
  mode, padding_mode = mode or 'bilinear', padding_mode or 'zeros'
  local align = align_corners or false
  if mode ~= 'bilinear' and mode ~= 'nearest' and mode ~= 'bicubic' then
    fail('grid_sample', ("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '%s'"):format(tostring(mode)))
  end
  if padding_mode ~= 'zeros' and padding_mode ~= 'border' and padding_mode ~= 'reflection' then
    fail('grid_sample', ("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '%s'"):format(tostring(padding_mode)))
  end
  if input:dim() ~= 4 then
    fail('grid_sample', 'grid_sample of a ' .. input:dim() .. '-D input is not supported by moontorch yet (4-D only)')
  end
  if mode == 'bicubic' then fail('grid_sample', "grid_sample mode 'bicubic' is not supported by moontorch yet") end
  if grid:dim() ~= 4 or grid:size(4) ~= 2 or grid:size(1) ~= input:size(1) then
    fail('grid_sample', ('grid_sampler(): expected grid to have size 2 in last dimension and the same batch size as input, '
      .. 'but got input with sizes [%s] and grid with sizes [%s]'):format(table.concat(sizes(input), ', '),
      table.concat(sizes(grid), ', ')))
  end
  local N, Cc, H, W = input:size(1), input:size(2), input:size(3), input:size(4)
  local Ho, Wo = grid:size(2), grid:size(3)
  local x = source_index(grid:select(4, 1), W, padding_mode, align)
  local y = source_index(grid:select(4, 2), H, padding_mode, align)
  local flat = input:reshape(N, Cc, H * W)
  local function tap(ix, iy, w)
    -- value at integer (ix, iy) times w, zero outside the image
    local inside = ix:ge(0):logical_and(ix:le(W - 1)):logical_and(iy:ge(0)):logical_and(iy:le(H - 1))
    local pos = (iy:clamp(0, H - 1) * W + ix:clamp(0, W - 1) + 1):to(torch.int64):reshape(N, 1, Ho * Wo) -- 1-based
    local v = flat:gather(3, pos:expand(N, Cc, Ho * Wo)):view(N, Cc, Ho, Wo)
    return v * (w * inside:to(w.dtype)):unsqueeze(2)
  end
  if mode == 'nearest' then
    local ix, iy = x:detach():round(), y:detach():round()
    return tap(ix, iy, torch.ones_like(x))
  end
  local x0, y0 = x:detach():floor(), y:detach():floor()
  local x1, y1 = x0 + 1, y0 + 1
  local wx1, wy1 = x - x0, y - y0
  local wx0, wy0 = 1 - wx1, 1 - wy1
  return tap(x0, y0, wx0 * wy0) + tap(x1, y0, wx1 * wy0) + tap(x0, y1, wx0 * wy1) + tap(x1, y1, wx1 * wy1)
end


M.fns = {

}
-- torch-only functions
M.only = {

}
function M.install(tt)
  torch = tt

  for name, f in pairs(M.fns) do
    if torch[name] == nil then torch[name] = f end
    if methods[name] == nil then methods[name] = f end
  end
  for name, f in pairs(M.only) do if torch[name] == nil then torch[name] = f end end
  -- smaller torch.* names

  -- nn.functional extras (loaded with nn: installed when nn loads, see lua/nn/init.lua's parity block)
  local function with_indices(name)
    return function(x, k, ...)
      local args = { ... }
      local n = select('#', ...)
      local last = args[n]
      if type(last) == 'table' and not is_tensor(last) and last[1] == nil then
        local o = {}
        for key, v in pairs(last) do o[key] = v end
        o.return_indices = true
        args[n] = o
      else
        n = n + 1
        args[n] = { return_indices = true }
      end
      return torch.nn.functional[name](x, k, unpack(args, 1, n))
    end
  end
  M.functional = { rrelu = rrelu, gumbel_softmax = gumbel_softmax, pdist = require('moontorch.ops.linalg').composed.pdist,
    affine_grid = affine_grid,
    grid_sample = grid_sample, max_pool2d_with_indices = with_indices('max_pool2d'),
    max_pool3d_with_indices = with_indices('max_pool3d') }
end

return M
