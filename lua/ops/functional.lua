-- torch.<name> for nn.functional's ops, as PyTorch has them (torch.conv2d, torch.batch_norm,
-- torch.dropout(x, p, train), torch.dropout_, ...): each forwards to nn.functional (which loads
-- on the first call). Installed by lua/init.lua once the op files are (only where torch lacks the name).
local K = require 'moontorch.ops.compose'

local M = {}

function M.install(torch)
  -- PyTorch's torch.<op> for nn.functional ops (torch.conv2d, torch.dropout(x, p, train), ...), loaded with nn
  for _, name in ipairs { 'conv1d', 'conv2d', 'conv3d', 'conv_transpose1d', 'conv_transpose2d', 'conv_transpose3d',
    'max_pool1d', 'max_pool2d', 'max_pool3d', 'avg_pool1d', 'adaptive_avg_pool1d', 'adaptive_max_pool1d', 'embedding',
    'cosine_similarity', 'pairwise_distance', 'pdist', 'pixel_shuffle', 'pixel_unshuffle', 'channel_shuffle',
    'batch_norm', 'instance_norm', 'group_norm', 'prelu', 'selu', 'celu', 'hardshrink', 'rrelu', 'bilinear',
    'binary_cross_entropy_with_logits', 'cosine_embedding_loss', 'ctc_loss', 'hinge_embedding_loss', 'kl_div',
    'margin_ranking_loss', 'poisson_nll_loss', 'triplet_margin_loss', 'threshold' } do
    if torch[name] == nil then
      torch[name] = function(...) return torch.nn.functional[name](...) end
    end
  end
  if torch.dropout == nil then
    torch.dropout = function(x, p, train) return torch.nn.functional.dropout(x, p, train) end
  end
  -- the in-place methods PyTorch also has as torch functions
  K.functions_of_methods(torch, { 'dropout_' })
end

return M
