-- moontorch.amp.policy: which ops autocast runs in lower precision, which in float32, which it
-- promotes (issue 25). The lists are PyTorch 1.13's (aten/src/ATen/autocast_mode.cpp at v1.13, the
-- CPU list checked op by op against the installed PyTorch 1.13: spec/support/amp_record.py), in
-- PyTorch's op names; `functions` says which moontorch functions run each op. A scope's policy is a
-- table {name = kind}: a name is an op's (`mm`) or a function's qualified name
-- (`torch.nn.functional.gelu`), a kind 'lower_precision_fp', 'fp32', 'promote' or 'banned' (CUDA's
-- binary_cross_entropy), false for none, or a function(...) of the op's arguments returning one
-- (F.pad: its reflect and replicate modes are PyTorch's reflection_pad / replication_pad ops).
local M = {}

-- PyTorch 1.13, AutocastCPU
M.cpu = {
  lower_precision_fp = { 'conv1d', 'conv2d', 'conv3d', 'bmm', 'mm', 'baddbmm', 'addmm', 'addbmm', 'linear',
    '_convolution', 'matmul', 'conv_tbc' },
  fp32 = { 'conv_transpose1d', 'conv_transpose2d', 'conv_transpose3d', 'avg_pool3d', 'binary_cross_entropy',
    'grid_sampler', 'polar', 'prod', 'quantile', 'nanquantile', 'stft', 'cdist', 'trace', 'view_as_complex',
    'cholesky', 'cholesky_inverse', 'cholesky_solve', 'inverse', 'lu_solve', 'orgqr', 'ormqr', 'pinverse',
    'max_pool3d', 'max_unpool2d', 'max_unpool3d', 'adaptive_avg_pool3d', 'reflection_pad1d', 'reflection_pad2d',
    'replication_pad1d', 'replication_pad2d', 'replication_pad3d', 'mse_loss', 'ctc_loss', 'kl_div',
    'multilabel_margin_loss', 'fft_fft', 'fft_ifft', 'fft_fft2', 'fft_ifft2', 'fft_fftn', 'fft_ifftn', 'fft_rfft',
    'fft_irfft', 'fft_rfft2', 'fft_irfft2', 'fft_rfftn', 'fft_irfftn', 'fft_hfft', 'fft_ihfft', 'linalg_cond',
    'linalg_matrix_rank', 'linalg_solve', 'linalg_cholesky', 'linalg_svdvals', 'linalg_eigvals', 'linalg_eigvalsh',
    'linalg_inv', 'linalg_householder_product', 'linalg_tensorinv', 'linalg_tensorsolve',
    'fake_quantize_per_tensor_affine', 'geqrf', '_lu_with_info', 'qr', 'svd', 'symeig', 'triangular_solve',
    'fractional_max_pool2d', 'fractional_max_pool3d', 'adaptive_max_pool3d', 'multilabel_margin_loss_forward',
    'linalg_qr', 'linalg_cholesky_ex', 'linalg_svd', 'linalg_eig', 'linalg_eigh', 'linalg_lstsq', 'linalg_inv_ex',
    'cosine_embedding_loss', 'nll_loss', 'nll_loss2d', 'hinge_embedding_loss', 'poisson_nll_loss',
    'cross_entropy_loss', 'smooth_l1_loss', 'huber_loss', 'l1_loss', 'margin_ranking_loss', 'soft_margin_loss',
    'triplet_margin_loss', 'multi_margin_loss', 'binary_cross_entropy_with_logits' },
  promote = { 'stack', 'cat', 'index_copy' },
}

-- PyTorch 1.13, AutocastCUDA (applied to CUDA tensors once the CUDA backend exists)
M.cuda = {
  lower_precision_fp = { '_convolution', 'conv1d', 'conv2d', 'conv3d', 'conv_tbc', 'conv_transpose1d',
    'conv_transpose2d', 'conv_transpose3d', 'convolution', 'cudnn_convolution', 'cudnn_convolution_transpose',
    'prelu', 'addmm', 'addmv', 'addr', 'matmul', 'einsum', 'mm', 'mv', 'linear', 'addbmm', 'baddbmm', 'bmm',
    'chain_matmul', 'linalg_multi_dot', '_thnn_fused_lstm_cell', '_thnn_fused_gru_cell', 'lstm_cell', 'gru_cell',
    'rnn_tanh_cell', 'rnn_relu_cell' },
  fp32 = { 'acos', 'asin', 'cosh', 'erfinv', 'exp', 'expm1', 'log', 'log10', 'log2', 'log1p', 'reciprocal', 'rsqrt',
    'sinh', 'tan', 'pow', 'softplus', 'layer_norm', 'native_layer_norm', 'group_norm', 'frobenius_norm',
    'nuclear_norm', 'cosine_similarity', 'poisson_nll_loss', 'cosine_embedding_loss', 'nll_loss', 'nll_loss2d',
    'hinge_embedding_loss', 'kl_div', 'l1_loss', 'smooth_l1_loss', 'huber_loss', 'mse_loss', 'margin_ranking_loss',
    'multilabel_margin_loss', 'soft_margin_loss', 'triplet_margin_loss', 'multi_margin_loss',
    'binary_cross_entropy_with_logits', 'dist', 'pdist', 'cdist', 'renorm', 'logsumexp',
    -- fp32_set_opt_dtype and fp32_append_dtype: run in float32 unless a dtype is given
    'prod', 'softmax', 'log_softmax', 'cumprod', 'cumsum', 'linalg_vector_norm', 'linalg_matrix_norm', 'sum',
    'norm' },
  promote = { 'addcdiv', 'addcmul', 'atan2', 'bilinear', 'cross', 'dot', 'grid_sampler', 'index_put', 'scatter_add',
    'tensordot' },
  banned = { 'binary_cross_entropy' },
}

local F = 'torch.nn.functional.'
local function pad_kind(dev)
  -- F.pad(x, pad, mode): reflect and replicate are ops of their own in PyTorch, in float32 on the CPU
  -- (reflection_pad1d/2d, replication_pad1d/2d/3d)
  return function(x, pad, mode)
    if type(mode) == 'table' then mode = mode.mode end
    if dev ~= 'cpu' or type(x) ~= 'cdata' then return false end
    local nd = x:dim()
    if mode == 'reflect' and nd <= 4 then return 'fp32' end
    if mode == 'replicate' and nd <= 5 then return 'fp32' end
    return false
  end
end

-- torch.einsum: PyTorch's contracts operand pairs with bmm (cast by autocast) when a letter is summed
-- away, and multiplies them (not cast) when none is; moontorch's multiplies and sums, so its result
-- is given the dtype PyTorch's has
local function einsum_kind(eq, ...)
  if type(eq) ~= 'string' then return false end
  local nops = select('#', ...)
  local first = ...
  if nops == 1 and type(first) == 'table' and type(first[1]) == 'cdata' then nops = #first end
  if nops < 2 then return false end
  eq = eq:gsub('%s', '')
  local lhs, rhs = eq:match('^(.-)%->(.*)$')
  local count = {}
  for ch in (lhs or eq):gmatch('%a') do count[ch] = (count[ch] or 0) + 1 end
  for ch, c in pairs(count) do
    if rhs then
      if not rhs:find(ch, 1, true) then return 'lower_precision_fp' end
    elseif c > 1 then
      return 'lower_precision_fp'
    end
  end
  return false
end

-- op name -> the moontorch functions that run it (qualified names, as lua/observe.lua names them).
-- An op not here runs as torch.<op>, Tensor.<op> or torch.nn.functional.<op>, whichever exist.
M.functions = {
  linear = { F .. 'linear' },
  conv1d = { F .. 'conv1d', 'torch.conv1d' }, conv2d = { F .. 'conv2d', 'torch.conv2d' },
  conv3d = { F .. 'conv3d', 'torch.conv3d' },
  conv_transpose1d = { F .. 'conv_transpose1d', 'torch.conv_transpose1d' },
  conv_transpose2d = { F .. 'conv_transpose2d', 'torch.conv_transpose2d' },
  conv_transpose3d = { F .. 'conv_transpose3d', 'torch.conv_transpose3d' },
  _convolution = {}, convolution = { 'torch.convolution' },
  grid_sampler = { F .. 'grid_sample', 'torch.grid_sampler' },
  cross_entropy_loss = { F .. 'cross_entropy' },
  nll_loss = { F .. 'nll_loss', 'torch.nll_loss' }, nll_loss2d = {},
  binary_cross_entropy = { F .. 'binary_cross_entropy' },
  binary_cross_entropy_with_logits = { F .. 'binary_cross_entropy_with_logits',
    'torch.binary_cross_entropy_with_logits' },
  reflection_pad1d = {}, reflection_pad2d = {}, replication_pad1d = {}, replication_pad2d = {},
  replication_pad3d = {},
  linalg_multi_dot = { 'torch.linalg.multi_dot' }, chain_matmul = { 'torch.chain_matmul' },
  lstm_cell = {}, gru_cell = {}, rnn_tanh_cell = {}, rnn_relu_cell = {},
  layer_norm = { F .. 'layer_norm', 'torch.layer_norm' }, native_layer_norm = {},
  group_norm = { F .. 'group_norm', 'torch.group_norm' },
  frobenius_norm = {}, nuclear_norm = {},
  pow = { 'torch.pow', 'Tensor.pow', 'Tensor.__pow' },
  norm = { 'torch.norm', 'Tensor.norm' },
  linalg_vector_norm = { 'torch.linalg.vector_norm' }, linalg_matrix_norm = { 'torch.linalg.matrix_norm' },
  linalg_inv = { 'torch.linalg.inv' }, linalg_solve = { 'torch.linalg.solve' },
  linalg_cholesky = { 'torch.linalg.cholesky' }, linalg_householder_product = { 'torch.linalg.householder_product' },
  linalg_cond = { 'torch.linalg.cond' }, linalg_matrix_rank = { 'torch.linalg.matrix_rank' },
  linalg_svdvals = { 'torch.linalg.svdvals' }, linalg_eigvals = { 'torch.linalg.eigvals' },
  linalg_eigvalsh = { 'torch.linalg.eigvalsh' }, linalg_tensorinv = { 'torch.linalg.tensorinv' },
  linalg_tensorsolve = { 'torch.linalg.tensorsolve' }, linalg_qr = { 'torch.linalg.qr' },
  linalg_svd = { 'torch.linalg.svd' }, linalg_eig = { 'torch.linalg.eig' }, linalg_eigh = { 'torch.linalg.eigh' },
  linalg_lstsq = { 'torch.linalg.lstsq' },
  multilabel_margin_loss_forward = {},
}
-- ops that are one mode of a moontorch function: function -> kind chooser, per device type
M.conditional = {
  cpu = { [F .. 'pad'] = pad_kind('cpu'), ['torch.einsum'] = einsum_kind },
  cuda = {},
}

M.KINDS = { lower_precision_fp = true, fp32 = true, promote = true, banned = true }

-- the qualified names of the functions that may run op `name` (those that exist are the caller's
-- to find)
function M.functions_of(name)
  if name:find('.', 1, true) then return { name } end
  local f = M.functions[name]
  if f then return f end
  return { 'torch.' .. name, 'Tensor.' .. name, F .. name }
end

-- policy(device_type) -> a new table {op name = kind} of the default lists, with the conditional
-- functions ({qualified name = chooser})
function M.policy(device_type)
  local lists = M[device_type]
  if not lists then error(('moontorch.amp.policy: no autocast lists for device type %q'):format(tostring(device_type)), 2) end
  local p = {}
  for kind, names in pairs(lists) do
    for _, n in ipairs(names) do p[n] = kind end
  end
  for qn, chooser in pairs(M.conditional[device_type] or {}) do p[qn] = chooser end
  return p
end

return M
