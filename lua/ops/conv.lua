-- Convolution in the core (issue 12, conv part): torch.convolution (PyTorch's
-- torch.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
-- groups)), and the calls nn.functional's conv1d/2d/3d, conv_transpose1d/2d/3d, unfold and fold
-- make (lua/nn/functional_conv.lua). The work is in core/ops/conv.c and core/tensor/conv.c.
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local C = core.C
local fail = core.fail
local is_tensor, take, outp, int_arg = T.is_tensor, T.take, T.outp, T.int_arg
local type = type

local M = {}

-- six int64_t[3] buffers: stride, padding, dilation, output_padding, kernel, size
local bufs = {}
for i = 1, 6 do bufs[i] = ffi.new('int64_t[3]') end
M.bufs = bufs

-- v (a number, or a table of n numbers) into buffer b; `what` names it in messages
-- a failed core call, its message under `op` (F.conv2d's errors read nn.functional.conv2d: ...)
local function raise_as(op)
  local msg = ffi.string(C.mt_last_error()):gsub('^[%w_]+: ', '', 1)
  fail(op, msg)
end

local function fill(op, what, v, n, b)
  if type(v) == 'number' then
    v = int_arg(v, op, what)
    for i = 0, n - 1 do b[i] = v end
    return b
  end
  if type(v) ~= 'table' or is_tensor(v) then
    fail(op, ('%s must be an integer or a table of %d integers (got %s)'):format(what, n, type(v)))
  end
  if #v == 1 then
    local x = int_arg(v[1], op, what)
    for i = 0, n - 1 do b[i] = x end
    return b
  end
  if #v ~= n then fail(op, ('expected %s to be a single integer value or a list of %d values to match the convolution ' ..
    'dimensions, but got %s=[%s]'):format(what, n, what, table.concat(v, ', '))) end
  for i = 1, n do b[i - 1] = int_arg(v[i], op, what, i) end
  return b
end
M.fill = fill

-- the core call: input batched (N, C, *spatial), nsp spatial dims
function M.conv(op, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, nsp)
  local st = C.mt_convolution(input, weight, bias, fill(op, 'stride', stride, nsp, bufs[1]),
    fill(op, 'padding', padding, nsp, bufs[2]), fill(op, 'dilation', dilation, nsp, bufs[3]), transposed and 1 or 0,
    fill(op, 'output_padding', output_padding or 0, nsp, bufs[4]), int_arg(groups, op, 'groups'), nsp, outp)
  if st ~= 0 then raise_as(op) end
  return take()
end

function M.im2col(op, input, kernel, dilation, padding, stride, nsp)
  local st = C.mt_im2col(input, fill(op, 'kernel_size', kernel, nsp, bufs[5]), fill(op, 'dilation', dilation, nsp, bufs[3]),
    fill(op, 'padding', padding, nsp, bufs[2]), fill(op, 'stride', stride, nsp, bufs[1]), nsp, outp)
  if st ~= 0 then raise_as(op) end
  return take()
end

function M.col2im(op, input, size, kernel, dilation, padding, stride, nsp)
  local st = C.mt_col2im(input, fill(op, 'output_size', size, nsp, bufs[6]), fill(op, 'kernel_size', kernel, nsp, bufs[5]),
    fill(op, 'dilation', dilation, nsp, bufs[3]), fill(op, 'padding', padding, nsp, bufs[2]),
    fill(op, 'stride', stride, nsp, bufs[1]), nsp, outp)
  if st ~= 0 then raise_as(op) end
  return take()
end

-- torch.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
local function convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
  if not is_tensor(input) then fail('convolution', 'expected a tensor as input, got ' .. core.typeof(input)) end
  if not is_tensor(weight) then fail('convolution', 'expected a tensor as weight, got ' .. core.typeof(weight)) end
  if bias ~= nil and not is_tensor(bias) then fail('convolution', 'expected a tensor or nil as bias, got ' .. core.typeof(bias)) end
  local nsp = weight:dim() - 2
  if nsp < 1 or nsp > 3 then
    fail('convolution', ('expected a weight of 3 to 5 dimensions, got %dD'):format(weight:dim()))
  end
  return M.conv('convolution', input, weight, bias, stride or 1, padding or 0, dilation or 1, transposed, output_padding,
    groups or 1, nsp)
end

function M.install(torch)
  torch.convolution = convolution
end

return M
