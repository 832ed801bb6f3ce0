-- Pooling, resampling and padding (issue 12, pooling): the nn.functional functions (max / avg /
-- adaptive / lp pools, max_unpool, interpolate, pixel_shuffle, pixel_unshuffle, channel_shuffle)
-- and their modules (MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d,
-- AdaptiveMaxPool1d/2d/3d, MaxUnpool1d/2d/3d, LPPool1d/2d, Upsample, UpsamplingNearest2d,
-- UpsamplingBilinear2d, PixelShuffle, PixelUnshuffle, ChannelShuffle), with PyTorch 1.13's
-- arguments (positionally, or keywords in a trailing options table) and printing. The pools
-- and resamplings are the core's ops (core/ops/pool.c: max_pool, avg_pool, interpolate,
-- max_unpool); 1-d pools run the 2-d op on an unsqueezed input, as PyTorch does (their grad_fn
-- is SqueezeBackward1 there too). Indices are flat positions in each (N, C) plane, from 1.
local ffi = require 'ffi'
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local Mod = require 'moontorch.nn.Module'

local C = core.C
local fail, raise_last = core.fail, core.raise_last
local wrap, outp, outp2 = T.wrap, T.outp, T.outp2
local is_tensor = T.is_tensor
local Module, declare_forward = Mod.Module, Mod.declare_forward
local type, tostring, select, pairs, floor, huge = type, tostring, select, pairs, math.floor, math.huge

local M = {}
local params = ffi.new('mt_pool_params')
local sizes3 = ffi.new('int64_t[3]')
local scales3 = ffi.new('double[3]')

------------------------------------------------------------------------------ helpers
local function bad(fn, msg) fail('nn.functional.' .. fn, msg) end
local function is_int(v) return type(v) == 'number' and v == floor(v) and v > -huge and v < huge end
local function is_opts(v) return type(v) == 'table' and not is_tensor(v) end

-- (a trailing sequence is a size, unless it comes after all the optional arguments)
local args = require('moontorch.nn.optargs').parser { prefix = 'nn.functional.', unexpected = 'keyword argument',
  is_opts = function(v, n, names) return is_opts(v) and (v[1] == nil or n > #names) end }

-- an int or a table of n ints, as an array of n (nil stays nil when allowed)
local function ints(fn, name, v, n, min)
  local r = {}
  if type(v) == 'table' and not is_tensor(v) then
    local len = #v
    if len == 1 and n > 1 then
      for i = 1, n do r[i] = v[1] end
    elseif len ~= n then
      bad(fn, ('%s must be an int or a tuple of %d ints, got %d values'):format(name, n, len))
    else
      for i = 1, n do r[i] = v[i] end
    end
  else
    for i = 1, n do r[i] = v end
  end
  for i = 1, n do
    if not is_int(r[i]) or (min and r[i] < min) then
      bad(fn, ('%s must be %s, got %s'):format(name, min == 1 and 'a positive int or a tuple of them'
        or min == 0 and 'a non-negative int or a tuple of them' or 'an int or a tuple of ints', tostring(r[i])))
    end
  end
  return r
end

local function bool(fn, name, v)
  if v == nil then return false end
  if type(v) ~= 'boolean' then bad(fn, ('%s must be a boolean, got %s'):format(name, tostring(v))) end
  return v
end

local function need_tensor(fn, x)
  if not is_tensor(x) then bad(fn, ('input must be a tensor (got %s)'):format(type(x))) end
end

-- fill the shared mt_pool_params (kernel, stride, padding, dilation: arrays of nsp)
local function fill(nsp, k, s, p, d, ceil_mode, cip, div)
  params.nsp, params.ceil_mode = nsp, ceil_mode and 1 or 0
  params.count_include_pad, params.divisor_override = cip and 1 or 0, div or 0
  for i = 1, nsp do
    params.kernel[i - 1], params.stride[i - 1] = k[i], s[i]
    params.padding[i - 1], params.dilation[i - 1] = p[i], d and d[i] or 1
  end
  return params
end

------------------------------------------------------------------------------ max pools
local function max_pool_nd(x, nsp, k, s, p, d, ceil_mode, want)
  if C.mt_max_pool(x, fill(nsp, k, s, p, d, ceil_mode), 1, outp, want and outp2 or nil) ~= 0 then raise_last() end
  local v = wrap(outp[0])
  if want then return v, wrap(outp2[0]) end
  return v
end

local max_names = { 'stride', 'padding', 'dilation', 'ceil_mode', 'return_indices' }
local function max_pool_args(fn, nsp, x, kernel_size, ...)
  need_tensor(fn, x)
  local v = args(fn, max_names, ...)
  local k = ints(fn, 'kernel_size', kernel_size, nsp)
  local s = (v[1] == nil or (type(v[1]) == 'table' and #v[1] == 0)) and k or ints(fn, 'stride', v[1], nsp)
  local p = ints(fn, 'padding', v[2] or 0, nsp)
  local d = ints(fn, 'dilation', v[3] or 1, nsp)
  return k, s, p, d, bool(fn, 'ceil_mode', v[4]), bool(fn, 'return_indices', v[5])
end

-- max_pool1d(x, kernel_size, stride=kernel_size, padding=0, dilation=1, ceil_mode=false,
-- return_indices=false): x (N, C, L) or (C, L); with return_indices, the values and the indices
function M.max_pool1d(x, kernel_size, ...)
  if type(x) == 'table' and x.is_quantized then -- issue 25: the integers pooled, the quantizer kept
    return require('moontorch.quantization.functional').max_pool('max_pool1d', x, kernel_size, ...)
  end
  local k, s, p, d, cm, ri = max_pool_args('max_pool1d', 1, x, kernel_size, ...)
  if x:dim() ~= 2 and x:dim() ~= 3 then
    bad('max_pool1d', ('max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, '
      .. 'but got:[%s]'):format(table.concat(x:size(), ', ')))
  end
  local v, i = max_pool_nd(x:unsqueeze(-2), 2, { 1, k[1] }, { 1, s[1] }, { 0, p[1] }, { 1, d[1] }, cm, ri)
  if ri then return v:squeeze(-2), i:squeeze(-2) end
  return v:squeeze(-2)
end
function M.max_pool2d(x, kernel_size, ...)
  if type(x) == 'table' and x.is_quantized then -- issue 25: the integers pooled, the quantizer kept
    return require('moontorch.quantization.functional').max_pool('max_pool2d', x, kernel_size, ...)
  end
  local k, s, p, d, cm, ri = max_pool_args('max_pool2d', 2, x, kernel_size, ...)
  return max_pool_nd(x, 2, k, s, p, d, cm, ri)
end
-- issue 25: the max pool of a quantized tensor's integers `int` without indices (C: mt_qmax_pool), or nil when
-- the indices are asked (lua/quantization/functional.lua pools the values widened then); not an F function
function M.quantized_max_pool2d(int, kernel_size, ...)
  local k, s, p, d, cm, ri = max_pool_args('max_pool2d', 2, int, kernel_size, ...)
  if ri then return nil end
  if C.mt_qmax_pool(int, fill(2, k, s, p, d, cm), outp) ~= 0 then raise_last() end
  return wrap(outp[0])
end
function M.max_pool3d(x, kernel_size, ...)
  local k, s, p, d, cm, ri = max_pool_args('max_pool3d', 3, x, kernel_size, ...)
  return max_pool_nd(x, 3, k, s, p, d, cm, ri)
end
M.max_pool1d_with_indices = function(x, k, ...) return M.max_pool1d(x, k, { return_indices = true }, ...) end

------------------------------------------------------------------------------ avg pools
local avg_names = { 'stride', 'padding', 'ceil_mode', 'count_include_pad', 'divisor_override' }
local function avg_pool_nd(fn, nsp, x, kernel_size, ...)
  need_tensor(fn, x)
  local v = args(fn, nsp == 1 and { 'stride', 'padding', 'ceil_mode', 'count_include_pad' } or avg_names, ...)
  local k = ints(fn, 'kernel_size', kernel_size, nsp)
  local s = (v[1] == nil or (type(v[1]) == 'table' and #v[1] == 0)) and k or ints(fn, 'stride', v[1], nsp)
  local p = ints(fn, 'padding', v[2] or 0, nsp)
  local cip = v[4]
  if cip == nil then cip = true end
  local div = v[5]
  if div ~= nil then
    if not is_int(div) then bad(fn, 'divisor_override must be an int, got ' .. tostring(div)) end
    if div == 0 then bad(fn, 'divisor must be not zero') end
  end
  if nsp == 1 then
    if x:dim() ~= 2 and x:dim() ~= 3 then
      bad(fn, ("Expected 2 to 3 dimensions, but got %d-dimensional tensor for argument #1 'self' (while checking "
        .. 'arguments for avg_pool1d)'):format(x:dim()))
    end
    if C.mt_avg_pool(x:unsqueeze(-2), fill(2, { 1, k[1] }, { 1, s[1] }, { 0, p[1] }, nil, bool(fn, 'ceil_mode', v[3]),
      bool(fn, 'count_include_pad', cip), 0), outp) ~= 0 then raise_last() end
    return wrap(outp[0]):squeeze(-2)
  end
  if C.mt_avg_pool(x, fill(nsp, k, s, p, nil, bool(fn, 'ceil_mode', v[3]), bool(fn, 'count_include_pad', cip), div),
    outp) ~= 0 then raise_last() end
  return wrap(outp[0])
end
-- avg_pool1d(x, kernel_size, stride=kernel_size, padding=0, ceil_mode=false, count_include_pad=true)
function M.avg_pool1d(x, kernel_size, ...) return avg_pool_nd('avg_pool1d', 1, x, kernel_size, ...) end
-- avg_pool2d / 3d(x, kernel_size, stride=kernel_size, padding=0, ceil_mode=false,
-- count_include_pad=true, divisor_override=nil)
function M.avg_pool2d(x, kernel_size, ...)
  if type(x) == 'table' and x.is_quantized then -- issue 25
    return require('moontorch.quantization.functional').avg_pool('avg_pool2d', x, kernel_size, ...)
  end
  return avg_pool_nd('avg_pool2d', 2, x, kernel_size, ...)
end
function M.avg_pool3d(x, kernel_size, ...) return avg_pool_nd('avg_pool3d', 3, x, kernel_size, ...) end

------------------------------------------------------------------------------ adaptive pools
-- output_size: an int or a table of nsp ints, where false (PyTorch's None) keeps the input's size
local function out_sizes(fn, x, nsp, output_size)
  local r = {}
  if type(output_size) == 'table' and not is_tensor(output_size) then
    local n = output_size.n or #output_size
    if n ~= nsp then bad(fn, ('%s: output_size must be %d'):format(fn, nsp)) end
    for i = 1, nsp do r[i] = output_size[i] end
  else
    for i = 1, nsp do r[i] = output_size end
  end
  for i = 1, nsp do
    if r[i] == nil or r[i] == false then
      r[i] = x:size(x:dim() - nsp + i)
    elseif not is_int(r[i]) or r[i] < 0 then
      bad(fn, ('output_size must be non-negative ints, got %s'):format(tostring(r[i])))
    end
    sizes3[i - 1] = r[i]
  end
  return r
end

local function adaptive_avg(fn, nsp, x, output_size)
  need_tensor(fn, x)
  if nsp == 1 then
    if x:dim() ~= 2 and x:dim() ~= 3 then
      bad(fn, ('adaptive_avg_pool1d(): Expected 2D or 3D tensor, but got [%s]'):format(table.concat(x:size(), ', ')))
    end
    local r = out_sizes(fn, x, 1, output_size)
    sizes3[0], sizes3[1] = 1, r[1]
    if C.mt_adaptive_avg_pool(x:unsqueeze(-2), 2, sizes3, outp) ~= 0 then raise_last() end
    return wrap(outp[0]):squeeze(-2)
  end
  if x:dim() < nsp then
    bad(fn, ('adaptive_avg_pool%dd(): Expected %dD or %dD tensor, but got [%s]'):format(nsp, nsp + 1, nsp + 2,
      table.concat(x:size(), ', ')))
  end
  out_sizes(fn, x, nsp, output_size)
  -- PyTorch's adaptive_avg_pool2d to 1 x 1 is the mean over the last two dims (MeanBackward1)
  if nsp == 2 and sizes3[0] == 1 and sizes3[1] == 1 and x:numel() > 0 then
    return x:mean({ -2, -1 }, { keepdim = true })
  end
  if C.mt_adaptive_avg_pool(x, nsp, sizes3, outp) ~= 0 then raise_last() end
  return wrap(outp[0])
end
-- adaptive_avg_pool1d / 2d / 3d(x, output_size)
function M.adaptive_avg_pool1d(x, output_size) return adaptive_avg('adaptive_avg_pool1d', 1, x, output_size) end
function M.adaptive_avg_pool2d(x, output_size)
  if type(x) == 'table' and x.is_quantized then -- issue 25
    return require('moontorch.quantization.functional').avg_pool('adaptive_avg_pool2d', x, output_size)
  end
  return adaptive_avg('adaptive_avg_pool2d', 2, x, output_size)
end
function M.adaptive_avg_pool3d(x, output_size) return adaptive_avg('adaptive_avg_pool3d', 3, x, output_size) end

local function adaptive_max(fn, nsp, x, output_size, ...)
  need_tensor(fn, x)
  local v = args(fn, { 'return_indices' }, ...)
  local ri = bool(fn, 'return_indices', v[1])
  local unsq = nsp == 1
  if unsq then
    if x:dim() ~= 2 and x:dim() ~= 3 then
      bad(fn, ('adaptive_max_pool1d(): Expected 2D or 3D tensor, but got [%s]'):format(table.concat(x:size(), ', ')))
    end
    local r = out_sizes(fn, x, 1, output_size)
    sizes3[0], sizes3[1] = 1, r[1]
    x, nsp = x:unsqueeze(-2), 2
  else
    if x:dim() < nsp then
      bad(fn, ('adaptive_max_pool%dd(): Expected %dD or %dD tensor, but got: [%s]'):format(nsp, nsp + 1, nsp + 2,
        table.concat(x:size(), ', ')))
    end
    out_sizes(fn, x, nsp, output_size)
  end
  if C.mt_adaptive_max_pool(x, nsp, sizes3, 1, outp, ri and outp2 or nil) ~= 0 then raise_last() end
  local val = wrap(outp[0])
  local idx = ri and wrap(outp2[0]) or nil
  if unsq then
    val = val:squeeze(-2)
    if idx then idx = idx:squeeze(-2) end
  end
  if ri then return val, idx end
  return val
end
-- adaptive_max_pool1d / 2d / 3d(x, output_size, return_indices=false)
function M.adaptive_max_pool1d(x, o, ...) return adaptive_max('adaptive_max_pool1d', 1, x, o, ...) end
function M.adaptive_max_pool2d(x, o, ...) return adaptive_max('adaptive_max_pool2d', 2, x, o, ...) end
function M.adaptive_max_pool3d(x, o, ...) return adaptive_max('adaptive_max_pool3d', 3, x, o, ...) end

------------------------------------------------------------------------------ max_unpool
local function unpool(fn, nsp, x, indices, kernel_size, ...)
  need_tensor(fn, x)
  if not is_tensor(indices) then bad(fn, 'indices must be a tensor, got ' .. core.typeof(indices)) end
  local v = args(fn, { 'stride', 'padding', 'output_size' }, ...)
  local k = ints(fn, 'kernel_size', kernel_size, nsp)
  local s = (v[1] == nil or (type(v[1]) == 'table' and #v[1] == 0)) and k or ints(fn, 'stride', v[1], nsp)
  local p = ints(fn, 'padding', v[2] or 0, nsp)
  local nd = x:dim()
  if nd ~= nsp + 1 and nd ~= nsp + 2 then
    bad(fn, ('Input to max_unpooling%dd should be a %dd or %dd Tensor, but got a tensor with %d dimensions.')
      :format(nsp, nsp + 1, nsp + 2, nd))
  end
  local default = {}
  for i = 1, nsp do default[i] = (x:size(nd - nsp + i) - 1) * s[i] + k[i] - 2 * p[i] end
  local out = default
  local os = v[3]
  if os ~= nil then
    if type(os) ~= 'table' then bad(fn, 'output_size must be a table of ints, got ' .. core.typeof(os)) end
    local n = #os
    local o = {}
    if n == nsp + 2 or (n == nsp + 1 and nd == nsp + 1) then
      for i = 1, nsp do o[i] = os[n - nsp + i] end
    elseif n == nsp then
      for i = 1, nsp do o[i] = os[i] end
    else
      bad(fn, ('output_size should be a sequence containing %d or %d elements, but it has a length of \'%d\'')
        :format(nsp, nsp + 2, n))
    end
    for i = 1, nsp do
      local lo, hi = default[i] - s[i], default[i] + s[i]
      if not is_int(o[i]) or o[i] <= lo or o[i] >= hi then
        local parts = {}
        for j = 1, n do parts[j] = tostring(os[j]) end
        bad(fn, ('invalid output_size "(%s)" (dim %d must be between %d and %d)'):format(table.concat(parts, ', '),
          i - 1, lo, hi))
      end
    end
    out = o
  end
  if nsp == 1 then
    sizes3[0], sizes3[1] = 1, out[1]
    if C.mt_max_unpool(x:unsqueeze(-2), indices:unsqueeze(-2), 2, sizes3, 1, outp) ~= 0 then raise_last() end
    return wrap(outp[0]):squeeze(-2)
  end
  for i = 1, nsp do sizes3[i - 1] = out[i] end
  if C.mt_max_unpool(x, indices, nsp, sizes3, 1, outp) ~= 0 then raise_last() end
  return wrap(outp[0])
end
-- max_unpool1d / 2d / 3d(x, indices, kernel_size, stride=kernel_size, padding=0, output_size=nil):
-- the values of x put at their (1-based) indices in zeros of the unpooled size
function M.max_unpool1d(x, i, k, ...) return unpool('max_unpool1d', 1, x, i, k, ...) end
function M.max_unpool2d(x, i, k, ...) return unpool('max_unpool2d', 2, x, i, k, ...) end
function M.max_unpool3d(x, i, k, ...) return unpool('max_unpool3d', 3, x, i, k, ...) end

------------------------------------------------------------------------------ lp pools
local function lp_pool(fn, nsp, x, norm_type, kernel_size, ...)
  need_tensor(fn, x)
  local v = args(fn, { 'stride', 'ceil_mode' }, ...)
  if type(norm_type) ~= 'number' then bad(fn, 'norm_type must be a number, got ' .. tostring(norm_type)) end
  local k = ints(fn, 'kernel_size', kernel_size, nsp)
  local pool = nsp == 1 and M.avg_pool1d or M.avg_pool2d
  local out = pool(x:pow(norm_type), kernel_size, v[1], 0, v[2] or false)
  local n = 1
  for i = 1, nsp do n = n * k[i] end
  return (torch.sign(out) * out:abs():relu()):mul(n):pow(1.0 / norm_type)
end
-- lp_pool1d / 2d(x, norm_type, kernel_size, stride=kernel_size, ceil_mode=false)
function M.lp_pool1d(x, p, k, ...) return lp_pool('lp_pool1d', 1, x, p, k, ...) end
function M.lp_pool2d(x, p, k, ...) return lp_pool('lp_pool2d', 2, x, p, k, ...) end

------------------------------------------------------------------------------ interpolate
local MODES = { nearest = true, linear = true, bilinear = true, bicubic = true, trilinear = true, area = true,
  ['nearest-exact'] = true }
local function shape_list(t, from)
  local r = {}
  for d = from, t:dim() do r[#r + 1] = tostring(t:size(d)) end
  return '[' .. table.concat(r, ', ') .. ']'
end
local function tuple_str(v)
  if type(v) ~= 'table' then return tostring(v) end
  local r = {}
  for i = 1, #v do r[i] = tostring(v[i]) end
  return '(' .. table.concat(r, ', ') .. (#v == 1 and ',)' or ')')
end

-- interpolate(x, size=nil, scale_factor=nil, mode='nearest', align_corners=nil,
-- recompute_scale_factor=nil, antialias=false): x (N, C, d1[, d2[, d3]])
function M.interpolate(x, ...)
  local fn = 'interpolate'
  need_tensor(fn, x)
  local v = args(fn, { 'size', 'scale_factor', 'mode', 'align_corners', 'recompute_scale_factor', 'antialias' }, ...)
  local size, scale_factor, mode, align_corners, recompute = v[1], v[2], v[3] or 'nearest', v[4], v[5]
  if type(mode) ~= 'string' or not MODES[mode] then
    bad(fn, ('Input Error: Only 3D, 4D and 5D input Tensors supported (got %dD) for the modes: nearest | linear | '
      .. 'bilinear | bicubic | trilinear | area | nearest-exact (got %s)'):format(x:dim(), tostring(mode)))
  end
  local dim = x:dim() - 2
  local out, scales
  if size ~= nil and scale_factor ~= nil then bad(fn, 'only one of size or scale_factor should be defined') end
  if size ~= nil then
    if type(size) == 'table' then
      if #size ~= dim then
        bad(fn, ('Input and output must have the same number of spatial dimensions, but got input with spatial '
          .. 'dimensions of %s and output size of %s. Please provide input tensor in (N, C, d1, d2, ...,dK) format '
          .. 'and output size in (o1, o2, ...,oK) format.'):format(shape_list(x, 3), tuple_str(size)))
      end
      out = {}
      for i = 1, dim do out[i] = size[i] end
    else
      out = {}
      for i = 1, dim do out[i] = size end
    end
    for i = 1, dim do
      if not is_int(out[i]) then bad(fn, 'size must be ints, got ' .. tostring(out[i])) end
    end
  elseif scale_factor ~= nil then
    scales = {}
    if type(scale_factor) == 'table' then
      if #scale_factor ~= dim then
        bad(fn, ('Input and scale_factor must have the same number of spatial dimensions, but got input with '
          .. 'spatial dimensions of %s and scale_factor of shape %s. Please provide input tensor in (N, C, d1, d2, '
          .. '...,dK) format and scale_factor in (s1, s2, ...,sK) format.'):format(shape_list(x, 3),
          tuple_str(scale_factor)))
      end
      for i = 1, dim do scales[i] = scale_factor[i] end
    else
      for i = 1, dim do scales[i] = scale_factor end
    end
    for i = 1, dim do
      if type(scales[i]) ~= 'number' then bad(fn, 'scale_factor must be numbers, got ' .. tostring(scales[i])) end
    end
  else
    bad(fn, 'either size or scale_factor should be defined')
  end
  if recompute and size ~= nil then bad(fn, 'recompute_scale_factor is not meaningful with an explicit size.') end
  if mode == 'area' and out == nil then recompute = true end
  if scales then
    out = {}
    for i = 1, dim do out[i] = floor(x:size(i + 2) * scales[i]) end
    if recompute then scales = nil end
  end
  if mode == 'nearest' or mode == 'area' or mode == 'nearest-exact' then
    if align_corners ~= nil then
      bad(fn, 'align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | '
        .. 'trilinear')
    end
  elseif align_corners == nil then
    align_corners = false
  end
  local nd = x:dim()
  local antialias = v[6]
  if antialias and not ((mode == 'bilinear' or mode == 'bicubic') and nd == 4) then
    bad(fn, 'Anti-alias option is only supported for bilinear and bicubic modes')
  end
  local want = ({ linear = 3, bilinear = 4, bicubic = 4, trilinear = 5 })[mode]
  if want and nd ~= want then bad(fn, ('Got %dD input, but %s mode needs %dD input'):format(nd, mode, want)) end
  if nd < 3 or nd > 5 then
    bad(fn, ('Input Error: Only 3D, 4D and 5D input Tensors supported (got %dD) for the modes: nearest | linear | '
      .. 'bilinear | bicubic | trilinear | area | nearest-exact (got %s)'):format(nd, mode))
  end
  if mode == 'area' then
    local f = ({ M.adaptive_avg_pool1d, M.adaptive_avg_pool2d, M.adaptive_avg_pool3d })[dim]
    return f(x, out)
  end
  local kind = mode == 'nearest' and C.MT_RS_NEAREST or mode == 'nearest-exact' and C.MT_RS_NEAREST_EXACT
    or mode == 'bicubic' and (antialias and C.MT_RS_CUBIC_AA or C.MT_RS_CUBIC)
    or (antialias and C.MT_RS_LINEAR_AA or C.MT_RS_LINEAR)
  for i = 1, dim do
    sizes3[i - 1] = out[i]
    scales3[i - 1] = scales and scales[i] or 0
  end
  if C.mt_interpolate(x, dim, kind, sizes3, scales3, align_corners and 1 or 0, outp) ~= 0 then raise_last() end
  return wrap(outp[0])
end
function M.upsample(x, size, scale_factor, mode, align_corners)
  return M.interpolate(x, size, scale_factor, mode or 'nearest', align_corners)
end
function M.upsample_nearest(x, size, scale_factor) return M.interpolate(x, size, scale_factor, 'nearest') end
function M.upsample_bilinear(x, size, scale_factor)
  return M.interpolate(x, size, scale_factor, 'bilinear', true)
end

------------------------------------------------------------------------------ pixel and channel shuffles
local function sizes_of(x) return x:size() end

-- a new tensor, never a view of x (as PyTorch's: pixel_shuffle with a factor of 1 copies too)
local function shuffled(y, x)
  if y:numel() > 0 and y:data_ptr() == x:data_ptr() then return y:clone() end
  return y
end

-- pixel_shuffle(x, upscale_factor): (*, C r^2, H, W) -> (*, C, H r, W r)
function M.pixel_shuffle(x, r)
  local fn = 'pixel_shuffle'
  need_tensor(fn, x)
  if not is_int(r) or r <= 0 then bad(fn, 'pixel_shuffle expects a positive upscale_factor, but got ' .. tostring(r)) end
  local nd = x:dim()
  if nd < 3 then
    bad(fn, ('pixel_shuffle expects input to have at least 3 dimensions, but got input with %d dimension(s)'):format(nd))
  end
  local s = sizes_of(x)
  local c, h, w = s[nd - 2], s[nd - 1], s[nd]
  if c % (r * r) ~= 0 then
    bad(fn, ("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, "
      .. 'but input.size(-3)=%d is not divisible by %d'):format(c, r * r))
  end
  local lead = {}
  for d = 1, nd - 3 do lead[d] = s[d] end
  local L = #lead
  local v = {}
  for d = 1, L do v[d] = lead[d] end
  v[L + 1], v[L + 2], v[L + 3], v[L + 4], v[L + 5] = c / (r * r), r, r, h, w
  local perm = {}
  for d = 1, L do perm[d] = d end
  perm[L + 1], perm[L + 2], perm[L + 3], perm[L + 4], perm[L + 5] = L + 1, L + 4, L + 2, L + 5, L + 3
  local o = {}
  for d = 1, L do o[d] = lead[d] end
  o[L + 1], o[L + 2], o[L + 3] = c / (r * r), h * r, w * r
  return shuffled(x:reshape(v):permute(perm):reshape(o), x)
end

-- pixel_unshuffle(x, downscale_factor): (*, C, H r, W r) -> (*, C r^2, H, W)
function M.pixel_unshuffle(x, r)
  local fn = 'pixel_unshuffle'
  need_tensor(fn, x)
  if not is_int(r) or r <= 0 then
    bad(fn, 'pixel_unshuffle expects a positive downscale_factor, but got ' .. tostring(r))
  end
  local nd = x:dim()
  if nd < 3 then
    bad(fn, ('pixel_unshuffle expects input to have at least 3 dimensions, but got input with %d dimension(s)')
      :format(nd))
  end
  local s = sizes_of(x)
  local c, h, w = s[nd - 2], s[nd - 1], s[nd]
  if h % r ~= 0 then
    bad(fn, ('pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=%d is not '
      .. 'divisible by %d'):format(h, r))
  end
  if w % r ~= 0 then
    bad(fn, ('pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=%d is not '
      .. 'divisible by %d'):format(w, r))
  end
  local L = nd - 3
  local v, perm, o = {}, {}, {}
  for d = 1, L do v[d], perm[d], o[d] = s[d], d, s[d] end
  v[L + 1], v[L + 2], v[L + 3], v[L + 4], v[L + 5] = c, h / r, r, w / r, r
  perm[L + 1], perm[L + 2], perm[L + 3], perm[L + 4], perm[L + 5] = L + 1, L + 3, L + 5, L + 2, L + 4
  o[L + 1], o[L + 2], o[L + 3] = c * r * r, h / r, w / r
  return shuffled(x:reshape(v):permute(perm):reshape(o), x)
end

-- parity: with autograd, pixel_shuffle and pixel_unshuffle are one node each, named as PyTorch's
-- (PixelShuffleBackward0, PixelUnshuffleBackward0); each one's backward is the other
do
  local shuffle, unshuffle = M.pixel_shuffle, M.pixel_unshuffle
  local PS = torch.autograd.Function('PixelShuffle')
  PS._backward_name = 'PixelShuffleBackward0'
  function PS.forward(ctx, x, r) ctx.r = r return shuffle(x, r) end
  function PS.backward(ctx, g) return M.pixel_unshuffle(g, ctx.r), nil end
  local PU = torch.autograd.Function('PixelUnshuffle')
  PU._backward_name = 'PixelUnshuffleBackward0'
  function PU.forward(ctx, x, r) ctx.r = r return unshuffle(x, r) end
  function PU.backward(ctx, g) return M.pixel_shuffle(g, ctx.r), nil end
  local function records(x) return is_tensor(x) and x.requires_grad and torch.is_grad_enabled() end
  function M.pixel_shuffle(x, r)
    if records(x) then return PS.apply(x, r) end
    return shuffle(x, r)
  end
  function M.pixel_unshuffle(x, r)
    if records(x) then return PU.apply(x, r) end
    return unshuffle(x, r)
  end
end

-- channel_shuffle(x, groups): (N, C, *) with the channels of each of `groups` groups interleaved
function M.channel_shuffle(x, groups)
  local fn = 'channel_shuffle'
  need_tensor(fn, x)
  if not is_int(groups) or groups <= 0 then
    bad(fn, ('Number of groups to divide channels in must be positive. Value of groups:%s'):format(tostring(groups)))
  end
  local nd = x:dim()
  if nd < 3 then
    bad(fn, ('channel_shuffle expects input to have at least 3 dimensions, but got input with %d dimension(s)')
      :format(nd))
  end
  local s = sizes_of(x)
  if s[2] % groups ~= 0 then
    bad(fn, ('Number of channels must be divisible by groups. Got %d channels and %d groups.'):format(s[2], groups))
  end
  local v = { s[1], groups, s[2] / groups }
  for d = 3, nd do v[#v + 1] = s[d] end
  return x:reshape(v):transpose(2, 3):reshape(s)
end

------------------------------------------------------------------------------ modules
-- Python's repr of an argument as the module keeps it
local function pyrepr(v)
  if v == nil then return 'None' end
  if type(v) == 'boolean' then return v and 'True' or 'False' end
  if type(v) == 'table' then
    local r = {}
    for i = 1, #v do r[i] = pyrepr(v[i]) end
    return '(' .. table.concat(r, ', ') .. (#v == 1 and ',)' or ')')
  end
  if type(v) == 'number' and v == floor(v) and v > -huge and v < huge then return ('%d'):format(v) end
  return tostring(v)
end
M.pyrepr = pyrepr
local function pyfloat(x)
  if x == floor(x) and x > -huge and x < huge then return ('%.1f'):format(x) end
  return require('moontorch.nn.layers').pyfloat(x) -- Python's shortest repr (1/3: 0.3333333333333333)
end
local function tuple_of(v, n)
  if type(v) == 'table' then return v end
  local r = {}
  for i = 1, n do r[i] = v end
  return r
end

-- the constructor's arguments: positional, then a trailing options table by name
local function ctor_args(name, names, ...)
  local n = select('#', ...)
  local v = { ... }
  while n > 0 and v[n] == nil do n = n - 1 end
  local opts = v[n]
  if is_opts(opts) and not (opts[1] ~= nil and n <= #names) then
    v[n] = nil
    n = n - 1
    for k, val in pairs(opts) do
      local found = false
      for i = 1, #names do
        if names[i] == k then v[i], found = val, true end
      end
      if not found and k ~= 'device' and k ~= 'dtype' then
        fail('nn.' .. name, ("__init__() got an unexpected keyword argument '%s'"):format(tostring(k)))
      end
    end
  end
  if n > #names then fail('nn.' .. name, ('takes at most %d arguments, got %d'):format(#names, n)) end
  return v
end
-- kernel_size given positionally or as {kernel_size=}
local function with_first(name, names, ...)
  return ctor_args(name, names, ...)
end

local function module(name, names, init, forward, repr)
  local cls = class.class('nn.' .. name, Module)
  M[name] = cls
  function cls:__init(...)
    Module.__init(self)
    init(self, with_first(name, names, ...))
  end
  cls.forward = forward
  declare_forward(cls, { 'input' })
  cls.extra_repr = repr
  return cls
end

local function need(name, v, what)
  if v == nil then fail('nn.' .. name, ("__init__() missing 1 required positional argument: '%s'"):format(what)) end
  return v
end

-- the pools' modules call their function through nn.functional (set by install), where the
-- profiler and the fx tracer observe ops (lua/observe.lua)
local Fn = M

-- MaxPool1d/2d/3d(kernel_size, stride=kernel_size, padding=0, dilation=1, return_indices=false, ceil_mode=false)
for nsp = 1, 3 do
  local name = 'MaxPool' .. nsp .. 'd'
  local fname = 'max_pool' .. nsp .. 'd'
  module(name, { 'kernel_size', 'stride', 'padding', 'dilation', 'return_indices', 'ceil_mode' }, function(self, v)
    self.kernel_size = need(name, v[1], 'kernel_size')
    self.stride = v[2] == nil and v[1] or v[2]
    self.padding = v[3] or 0
    self.dilation = v[4] or 1
    self.return_indices = v[5] == true
    self.ceil_mode = v[6] == true
    ints('nn.' .. name, 'kernel_size', self.kernel_size, nsp, 1)
  end, function(self, x)
    return Fn[fname](x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices)
  end, function(self)
    return ('kernel_size=%s, stride=%s, padding=%s, dilation=%s, ceil_mode=%s'):format(pyrepr(self.kernel_size),
      pyrepr(self.stride), pyrepr(self.padding), pyrepr(self.dilation), pyrepr(self.ceil_mode))
  end)
end

-- AvgPool1d(kernel_size, stride=kernel_size, padding=0, ceil_mode=false, count_include_pad=true);
-- AvgPool2d/3d(..., divisor_override=nil)
for nsp = 1, 3 do
  local name = 'AvgPool' .. nsp .. 'd'
  local fname = 'avg_pool' .. nsp .. 'd'
  local names = { 'kernel_size', 'stride', 'padding', 'ceil_mode', 'count_include_pad', 'divisor_override' }
  if nsp == 1 then names[6] = nil end
  module(name, names, function(self, v)
    need(name, v[1], 'kernel_size')
    ints('nn.' .. name, 'kernel_size', v[1], nsp, 1)
    if nsp == 1 then -- PyTorch keeps AvgPool1d's arguments as 1-tuples
      self.kernel_size = tuple_of(v[1], 1)
      self.stride = tuple_of(v[2] == nil and v[1] or v[2], 1)
      self.padding = tuple_of(v[3] or 0, 1)
    else
      self.kernel_size = v[1]
      self.stride = v[2] == nil and v[1] or v[2]
      self.padding = v[3] or 0
      self.divisor_override = v[6]
    end
    self.ceil_mode = v[4] == true
    self.count_include_pad = v[5] ~= false
  end, function(self, x)
    local f = Fn[fname]
    if nsp == 1 then return f(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad) end
    return f(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
      self.divisor_override)
  end, function(self)
    return ('kernel_size=%s, stride=%s, padding=%s'):format(pyrepr(self.kernel_size), pyrepr(self.stride),
      pyrepr(self.padding))
  end)
end

-- AdaptiveAvgPool1d/2d/3d(output_size), AdaptiveMaxPool1d/2d/3d(output_size, return_indices=false);
-- in output_size, false stands for PyTorch's None (keep the input's size)
local function os_repr(v)
  if type(v) == 'table' then
    local r = {}
    for i = 1, #v do r[i] = v[i] == false and 'None' or pyrepr(v[i]) end
    return '(' .. table.concat(r, ', ') .. (#v == 1 and ',)' or ')')
  end
  return pyrepr(v)
end
for nsp = 1, 3 do
  local name = 'AdaptiveAvgPool' .. nsp .. 'd'
  local fname = 'adaptive_avg_pool' .. nsp .. 'd'
  module(name, { 'output_size' }, function(self, v) self.output_size = need(name, v[1], 'output_size') end,
    function(self, x) return Fn[fname](x, self.output_size) end,
    function(self) return 'output_size=' .. os_repr(self.output_size) end)
  name = 'AdaptiveMaxPool' .. nsp .. 'd'
  local gname = 'adaptive_max_pool' .. nsp .. 'd'
  local mname = name
  module(name, { 'output_size', 'return_indices' }, function(self, v)
    self.output_size = need(mname, v[1], 'output_size')
    self.return_indices = v[2] == true
  end, function(self, x) return Fn[gname](x, self.output_size, self.return_indices) end,
    function(self) return 'output_size=' .. os_repr(self.output_size) end)
end

-- MaxUnpool1d/2d/3d(kernel_size, stride=kernel_size, padding=0); forward(input, indices, output_size=nil)
for nsp = 1, 3 do
  local name = 'MaxUnpool' .. nsp .. 'd'
  local f = M['max_unpool' .. nsp .. 'd']
  local cls = class.class('nn.' .. name, Module)
  M[name] = cls
  function cls:__init(...)
    Module.__init(self)
    local v = ctor_args(name, { 'kernel_size', 'stride', 'padding' }, ...)
    need(name, v[1], 'kernel_size')
    self.kernel_size = tuple_of(v[1], nsp)
    self.stride = tuple_of(v[2] == nil and v[1] or v[2], nsp)
    self.padding = tuple_of(v[3] or 0, nsp)
  end
  function cls:forward(x, indices, output_size)
    if type(output_size) == 'table' and output_size.output_size ~= nil then output_size = output_size.output_size end
    return f(x, indices, self.kernel_size, self.stride, self.padding, output_size)
  end
  declare_forward(cls, { 'input', 'indices', 'output_size' }, { nreq = 2, kwargs = { 'output_size' } })
  function cls:extra_repr()
    return ('kernel_size=%s, stride=%s, padding=%s'):format(pyrepr(self.kernel_size), pyrepr(self.stride),
      pyrepr(self.padding))
  end
end

-- LPPool1d/2d(norm_type, kernel_size, stride=nil, ceil_mode=false)
for nsp = 1, 2 do
  local name = 'LPPool' .. nsp .. 'd'
  local f = M['lp_pool' .. nsp .. 'd']
  module(name, { 'norm_type', 'kernel_size', 'stride', 'ceil_mode' }, function(self, v)
    self.norm_type = need(name, v[1], 'norm_type')
    self.kernel_size = need(name, v[2], 'kernel_size')
    self.stride = v[3]
    self.ceil_mode = v[4] == true
  end, function(self, x) return f(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode) end,
    function(self)
      local nt = self.norm_type
      return ('norm_type=%s, kernel_size=%s, stride=%s, ceil_mode=%s'):format(
        nt == floor(nt) and ('%d'):format(nt) or tostring(nt), pyrepr(self.kernel_size), pyrepr(self.stride),
        pyrepr(self.ceil_mode))
    end)
end

-- Upsample(size=nil, scale_factor=nil, mode='nearest', align_corners=nil, recompute_scale_factor=nil)
local function up_repr(self)
  local info
  if self.scale_factor ~= nil then
    local s = self.scale_factor
    if type(s) == 'table' then
      local r = {}
      for i = 1, #s do r[i] = pyfloat(s[i]) end
      info = 'scale_factor=(' .. table.concat(r, ', ') .. ')'
    else
      info = 'scale_factor=' .. pyfloat(s)
    end
  else
    info = 'size=' .. pyrepr(self.size)
  end
  return info .. ', mode=' .. self.mode
end
local function up_forward(self, x)
  return M.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners, self.recompute_scale_factor)
end
module('Upsample', { 'size', 'scale_factor', 'mode', 'align_corners', 'recompute_scale_factor' }, function(self, v)
  self.size = v[1]
  self.scale_factor = v[2] or nil
  self.mode = v[3] or 'nearest'
  self.align_corners = v[4]
  self.recompute_scale_factor = v[5]
end, up_forward, up_repr)
module('UpsamplingNearest2d', { 'size', 'scale_factor' }, function(self, v)
  self.size, self.scale_factor, self.mode = v[1], v[2] or nil, 'nearest'
end, up_forward, up_repr)
module('UpsamplingBilinear2d', { 'size', 'scale_factor' }, function(self, v)
  self.size, self.scale_factor, self.mode, self.align_corners = v[1], v[2] or nil, 'bilinear', true
end, up_forward, up_repr)

module('PixelShuffle', { 'upscale_factor' }, function(self, v)
  self.upscale_factor = need('PixelShuffle', v[1], 'upscale_factor')
end, function(self, x) return M.pixel_shuffle(x, self.upscale_factor) end,
  function(self) return 'upscale_factor=' .. pyrepr(self.upscale_factor) end)
module('PixelUnshuffle', { 'downscale_factor' }, function(self, v)
  self.downscale_factor = need('PixelUnshuffle', v[1], 'downscale_factor')
end, function(self, x) return M.pixel_unshuffle(x, self.downscale_factor) end,
  function(self) return 'downscale_factor=' .. pyrepr(self.downscale_factor) end)
module('ChannelShuffle', { 'groups' }, function(self, v)
  self.groups = need('ChannelShuffle', v[1], 'groups')
end, function(self, x) return M.channel_shuffle(x, self.groups) end,
  function(self) return 'groups=' .. pyrepr(self.groups) end)

------------------------------------------------------------------------------ affine_grid, grid_sample
-- composed from the tensor ops (gathers), so that both the input and the grid get gradients; and
-- F.max_pool2d_with_indices / max_pool3d_with_indices
local composed = {} -- name -> function, put in nn.functional by install
do
  local K = require 'moontorch.ops.compose'
  local need, is_float, sizes = K.need, K.is_float, K.sizes
  local unpack = unpack

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
    if type(size) ~= 'table' then
      fail('affine_grid', 'expected the size of the output (a table of integers) for size, got ' .. T.describe(size))
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
  -- one node each, named as PyTorch's; the gradient autograd's of the composite (K.node_autograd)
  local affine_grid_node = K.node_autograd('AffineGridGeneratorBackward0', affine_grid)
  local grid_sample_node = K.node_autograd('GridSampler2DBackward0', grid_sample)
  -- (functions of this file: help finds their options here)
  composed.affine_grid = function(...) return affine_grid_node(...) end
  composed.grid_sample = function(...) return grid_sample_node(...) end
  composed.max_pool2d_with_indices = with_indices('max_pool2d')
  composed.max_pool3d_with_indices = with_indices('max_pool3d')
end

-- installs the functions into nn.functional and the modules into nn
function M.install(nn)
  local F = nn.functional
  Fn = F
  for _, k in ipairs({ 'max_pool1d', 'max_pool2d', 'max_pool3d', 'max_pool1d_with_indices', 'avg_pool1d', 'avg_pool2d',
    'avg_pool3d', 'adaptive_avg_pool1d', 'adaptive_avg_pool2d', 'adaptive_avg_pool3d', 'adaptive_max_pool1d',
    'adaptive_max_pool2d', 'adaptive_max_pool3d', 'max_unpool1d', 'max_unpool2d', 'max_unpool3d', 'lp_pool1d',
    'lp_pool2d', 'interpolate', 'upsample', 'upsample_nearest', 'upsample_bilinear', 'pixel_shuffle',
    'pixel_unshuffle', 'channel_shuffle' }) do
    F[k] = M[k]
  end
  for name, f in pairs(composed) do
    if F[name] == nil then F[name] = f end
  end
  class.export(M, nn)
  torch.pixel_shuffle, torch.pixel_unshuffle, torch.channel_shuffle = M.pixel_shuffle, M.pixel_unshuffle,
    M.channel_shuffle
end

return M
