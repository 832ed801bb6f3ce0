-- torch.layer_norm(input, normalized_shape, weight=nil, bias=nil, eps=1e-5): the fused layer norm
-- of the core (core/ops/norm.c, one kernel forward and one backward; grad_fn
-- NativeLayerNormBackward0). nn.functional.layer_norm calls it (issue 12, the modules part).
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local C = core.C
local raise_last, fail = core.raise_last, core.fail
local is_tensor, take, outp, is_opts = T.is_tensor, T.take, T.outp, T.is_opts
local type, tostring, concat = type, tostring, table.concat

local M = {}

local function sizes_str(s) return '[' .. concat(s, ', ') .. ']' end

-- the normalized shape as an array of sizes, checked against x (and weight, bias) as PyTorch does
local function check(op, x, shape, weight, bias)
  if type(shape) == 'number' then shape = { shape } end
  if type(shape) ~= 'table' or is_tensor(shape) then
    fail(op, 'normalized_shape must be a number or an array of sizes (got ' .. core.typeof(shape) .. ')')
  end
  local k, nd = #shape, x:dim()
  for _, t in ipairs({ { weight, 'weight' }, { bias, 'bias' } }) do
    local v = t[1]
    if v ~= nil then
      if not is_tensor(v) then fail(op, ('%s must be a tensor (got %s)'):format(t[2], type(v))) end
      local same = v:dim() == k
      for i = 1, k do if same and v:size(i) ~= shape[i] then same = false end end
      if not same then
        fail(op, ('Expected %s to be of same shape as normalized_shape, but got %s of shape %s and normalized_shape = %s')
          :format(t[2], t[2], sizes_str(v:size()), sizes_str(shape)))
      end
    end
  end
  local ok = k >= 1 and k <= nd
  if ok then for i = 1, k do if x:size(nd - k + i) ~= shape[i] then ok = false end end end
  if not ok then
    fail(op, ('Given normalized_shape=%s, expected input with shape [*, %s], but got input of size%s')
      :format(sizes_str(shape), concat(shape, ', '), sizes_str(x:size())))
  end
  return k
end
M.check = check

function M.layer_norm(x, normalized_shape, weight, bias, eps)
  if not is_tensor(x) then fail('layer_norm', 'expected a tensor, got ' .. core.typeof(x)) end
  if is_opts(weight) then
    local o = weight
    weight, bias, eps = o.weight, o.bias, o.eps
  end
  local k = check('layer_norm', x, normalized_shape, weight, bias)
  if eps == nil then eps = 1e-5 end
  if type(eps) ~= 'number' then fail('layer_norm', 'eps must be a number (got ' .. core.typeof(eps) .. ')') end
  if C.mt_layer_norm(x, weight, bias, k, eps, outp, nil, nil) ~= 0 then raise_last() end
  return take()
end

function M.install(torch)
  torch.layer_norm = M.layer_norm
end

return M
