-- nn.functional's convolutions (issue 12, conv part), merged into F by moontorch.nn:
-- conv1d/2d/3d(input, weight, bias=nil, stride=1, padding=0, dilation=1, groups=1),
-- conv_transpose1d/2d/3d(input, weight, bias=nil, stride=1, padding=0, output_padding=0, groups=1,
-- dilation=1), unfold(input, kernel_size, dilation=1, padding=0, stride=1) and
-- fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1); optional arguments
-- positionally or in a trailing options table, as the rest of F. Sizes are numbers or tables;
-- padding may be 'same' or 'valid'. Unbatched input (no batch dim) works. One op in the core each
-- (torch.convolution, im2col, col2im: core/ops/conv.c), differentiable twice.
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local K = require 'moontorch.ops.conv'

local fail = core.fail
local is_tensor = T.is_tensor
local type, select, pairs, tostring = type, select, pairs, tostring

local M = {}

local function bad(fn, msg) fail('nn.functional.' .. fn, msg) end
local function is_opts(v) return type(v) == 'table' and not is_tensor(v) end

-- a trailing table is the options unless it is a size (a sequence of numbers)
local args = require('moontorch.nn.optargs').parser { prefix = 'nn.functional.',
  is_opts = function(v) return is_opts(v) and (next(v) == nil or v[1] == nil) end }
M.args = args

local function size_str(t) return '[' .. table.concat(t:size(), ', ') .. ']' end
local function as_list(v, n)
  if type(v) == 'number' then
    local t = {}
    for i = 1, n do t[i] = v end
    return t
  end
  if type(v) == 'table' and #v == 1 then
    local t = {}
    for i = 1, n do t[i] = v[1] end
    return t
  end
  return v
end

-- conv{n}d: 'same' pads as PyTorch does (dilation (k - 1) in all, the odd one at the end)
local function convnd(n, fn)
  return function(input, weight, ...)
    local v = args(fn, { 'bias', 'stride', 'padding', 'dilation', 'groups' }, ...)
    if not is_tensor(input) then bad(fn, 'input must be a tensor (got ' .. core.typeof(input) .. ')') end
    if not is_tensor(weight) then bad(fn, 'weight must be a tensor (got ' .. core.typeof(weight) .. ')') end
    local bias, stride, padding, dilation, groups = v[1], v[2] or 1, v[3] or 0, v[4] or 1, v[5] or 1
    local nd = input:dim()
    if nd ~= n + 1 and nd ~= n + 2 then
      bad(fn, ('Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s'):format(n + 1, n + 2, fn,
        size_str(input)))
    end
    local x = nd == n + 1 and input:unsqueeze(1) or input
    if type(padding) == 'string' then
      if padding == 'valid' then
        padding = 0
      elseif padding == 'same' then
        for _, s in ipairs(as_list(stride, n)) do
          if s ~= 1 then bad(fn, "padding='same' is not supported for strided convolutions") end
        end
        local dil = as_list(dilation, n)
        local pads, extra, odd = {}, {}, false
        for i = 1, n do
          local total = dil[i] * (weight:size(i + 2) - 1)
          pads[i] = math.floor(total / 2)
          local r = total - pads[i]
          -- F.pad lists the last dim first
          extra[2 * (n - i) + 1], extra[2 * (n - i) + 2] = 0, r - pads[i]
          if r ~= pads[i] then odd = true end
        end
        if odd then x = torch.nn.functional.pad(x, extra) end
        padding = pads
      else
        bad(fn, ("Invalid padding string: '%s'"):format(padding))
      end
    end
    local out = K.conv('nn.functional.' .. fn, x, weight, bias, stride, padding, dilation, false, 0, groups, n)
    if nd == n + 1 then out = out:squeeze(1) end
    return out
  end
end

local function conv_transposend(n, fn)
  return function(input, weight, ...)
    local v = args(fn, { 'bias', 'stride', 'padding', 'output_padding', 'groups', 'dilation' }, ...)
    if not is_tensor(input) then bad(fn, 'input must be a tensor (got ' .. core.typeof(input) .. ')') end
    if not is_tensor(weight) then bad(fn, 'weight must be a tensor (got ' .. core.typeof(weight) .. ')') end
    local nd = input:dim()
    if nd ~= n + 1 and nd ~= n + 2 then
      bad(fn, ('Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s'):format(n + 1, n + 2, fn,
        size_str(input)))
    end
    if type(v[3]) == 'string' then bad(fn, 'padding must be an integer or a table of integers (got string)') end
    local x = nd == n + 1 and input:unsqueeze(1) or input
    local out = K.conv('nn.functional.' .. fn, x, weight, v[1], v[2] or 1, v[3] or 0, v[6] or 1, true, v[4] or 0, v[5] or 1, n)
    if nd == n + 1 then out = out:squeeze(1) end
    return out
  end
end

local function unfold(input, kernel_size, ...)
  local v = args('unfold', { 'dilation', 'padding', 'stride' }, ...)
  if not is_tensor(input) then bad('unfold', 'input must be a tensor (got ' .. core.typeof(input) .. ')') end
  local nd = input:dim()
  if nd ~= 3 and nd ~= 4 then
    bad('unfold', ('Input Error: Only 3D or 4D input Tensors are supported (got %dD)'):format(nd))
  end
  local x = nd == 3 and input:unsqueeze(1) or input
  local out = K.im2col('nn.functional.unfold', x, kernel_size, v[1] or 1, v[2] or 0, v[3] or 1, 2)
  if nd == 3 then out = out:squeeze(1) end
  return out
end

local function fold(input, output_size, kernel_size, ...)
  local v = args('fold', { 'dilation', 'padding', 'stride' }, ...)
  if not is_tensor(input) then bad('fold', 'input must be a tensor (got ' .. core.typeof(input) .. ')') end
  local nd = input:dim()
  if nd ~= 2 and nd ~= 3 then
    bad('fold', ('Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported (got %dD)'):format(nd))
  end
  local x = nd == 2 and input:unsqueeze(1) or input
  local out = K.col2im('nn.functional.fold', x, output_size, kernel_size, v[1] or 1, v[2] or 0, v[3] or 1, 2)
  if nd == 2 then out = out:squeeze(1) end
  return out
end

function M.install(F)
  F.conv1d, F.conv2d, F.conv3d = convnd(1, 'conv1d'), convnd(2, 'conv2d'), convnd(3, 'conv3d')
  F.conv_transpose1d = conv_transposend(1, 'conv_transpose1d')
  F.conv_transpose2d = conv_transposend(2, 'conv_transpose2d')
  F.conv_transpose3d = conv_transposend(3, 'conv_transpose3d')
  F.unfold, F.fold = unfold, fold
end

return M
