-- The docs of nn.functional (F), with the torch.* names PyTorch also gives some of them
-- (moontorch.doc: lua/doc/init.lua says how an entry is written). An optional argument shown in
-- the options table may also be given by position, in PyTorch's order.
local doc = ...

local RED = ' reduction = \'mean\' (default), \'sum\' or \'none\'.'

doc.section 'Linear and convolution'
doc { 'F.linear(input, weight, bias) -> Tensor',
  does = 'input @ weight^T + bias (bias may be nil).',
  ex = 'print(F.linear(torch.ones(1, 2), torch.ones(3, 2), nil))  --> tensor([[2., 2., 2.]])' }
doc { 'F.bilinear(input1, input2, weight, bias) -> Tensor', 'torch.bilinear(input1, input2, weight, bias) -> Tensor',
  does = 'x1^T A x2 + b for each output feature (weight out x in1 x in2).',
  ex = 'print(F.bilinear(torch.ones(1, 2), torch.ones(1, 3), torch.ones(4, 2, 3), nil))  --> tensor([[6., 6., 6., 6.]])' }
doc { 'F.conv1d(input, weight, {bias=, stride=1, padding=0, dilation=1, groups=1}) -> Tensor',
  'F.conv2d(input, weight, {bias=, stride=1, padding=0, dilation=1, groups=1}) -> Tensor',
  'F.conv3d(input, weight, {bias=, stride=1, padding=0, dilation=1, groups=1}) -> Tensor',
  'torch.conv1d(input, weight, bias, stride, padding, dilation, groups) -> Tensor',
  'torch.conv2d(input, weight, bias, stride, padding, dilation, groups) -> Tensor',
  'torch.conv3d(input, weight, bias, stride, padding, dilation, groups) -> Tensor',
  does = 'Convolution of (N, C_in, ...) inputs with (C_out, C_in / groups, k...) weights; sizes numbers or arrays; padding also \'same\' or \'valid\'.',
  ex = 'print(F.conv2d(torch.ones(1, 1, 3, 3), torch.ones(1, 1, 2, 2), {padding = 1}):size())  --> torch.Size([1, 1, 4, 4])' }
doc { 'F.conv_transpose1d(input, weight, {bias=, stride=1, padding=0, output_padding=0, groups=1, dilation=1}) -> Tensor',
  'F.conv_transpose2d(input, weight, {bias=, stride=1, padding=0, output_padding=0, groups=1, dilation=1}) -> Tensor',
  'F.conv_transpose3d(input, weight, {bias=, stride=1, padding=0, output_padding=0, groups=1, dilation=1}) -> Tensor',
  'torch.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation) -> Tensor',
  'torch.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation) -> Tensor',
  'torch.conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation) -> Tensor',
  does = 'Transposed convolution with (C_in, C_out / groups, k...) weights.',
  ex = 'print(F.conv_transpose2d(torch.ones(1, 1, 2, 2), torch.ones(1, 1, 2, 2), {stride = 2}):size())  --> torch.Size([1, 1, 4, 4])' }
doc { 'F.unfold(input, kernel_size, {dilation=1, padding=0, stride=1}) -> Tensor',
  does = 'The sliding blocks of a (N, C, H, W) input as columns (N, C * kh * kw, L) (im2col). (torch.unfold is Tensor:unfold, the view.)',
  ex = 'print(F.unfold(torch.ones(1, 2, 3, 3), 2):size())  --> torch.Size([1, 8, 4])' }
doc { 'F.fold(input, output_size, kernel_size, {dilation=1, padding=0, stride=1}) -> Tensor',
  does = 'Sums columns of blocks back into an image (col2im).',
  ex = 'print(F.fold(torch.ones(1, 4, 4), {3, 3}, 2))  --> tensor([[[[1., 2., 1.], [2., 4., 2.], [1., 2., 1.]]]])' }

doc.section 'Pooling and resampling'
doc { 'F.max_pool1d(input, kernel_size, {stride=kernel_size, padding=0, dilation=1, ceil_mode=false, return_indices=false}) -> Tensor',
  'F.max_pool2d(input, kernel_size, {stride=kernel_size, padding=0, dilation=1, ceil_mode=false, return_indices=false}) -> Tensor',
  'F.max_pool3d(input, kernel_size, {stride=kernel_size, padding=0, dilation=1, ceil_mode=false, return_indices=false}) -> Tensor',
  'torch.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode) -> Tensor',
  'torch.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode) -> Tensor',
  'torch.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode) -> Tensor',
  does = 'The maximum over each window (with return_indices also the 1-based flat positions).',
  ex = 'print(F.max_pool1d(torch.tensor({{{1, 5, 2, 3}}}), 2))  --> tensor([[[5., 3.]]])' }
doc { 'F.max_pool1d_with_indices(input, kernel_size, {...}) -> Tensor, indices',
  'F.max_pool2d_with_indices(input, kernel_size, {...}) -> Tensor, indices',
  'F.max_pool3d_with_indices(input, kernel_size, {...}) -> Tensor, indices',
  does = 'max_pool with return_indices = true.',
  ex = 'local v, i = F.max_pool1d_with_indices(torch.tensor({{{1, 5, 2, 3}}}), 2)\nprint(i)  --> tensor([[[2, 4]]])' }
doc { 'F.avg_pool1d(input, kernel_size, {stride=kernel_size, padding=0, ceil_mode=false, count_include_pad=true}) -> Tensor',
  'F.avg_pool2d(input, kernel_size, {stride=kernel_size, padding=0, ceil_mode=false, count_include_pad=true, divisor_override=}) -> Tensor',
  'F.avg_pool3d(input, kernel_size, {stride=kernel_size, padding=0, ceil_mode=false, count_include_pad=true, divisor_override=}) -> Tensor',
  'torch.avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad) -> Tensor',
  does = 'The mean over each window.',
  ex = 'print(F.avg_pool1d(torch.tensor({{{1, 3, 5, 7}}}), 2))  --> tensor([[[2., 6.]]])' }
doc { 'F.adaptive_avg_pool1d(input, output_size) -> Tensor', 'F.adaptive_avg_pool2d(input, output_size) -> Tensor',
  'F.adaptive_avg_pool3d(input, output_size) -> Tensor', 'torch.adaptive_avg_pool1d(input, output_size) -> Tensor',
  does = 'Mean pooling to a fixed output size.',
  ex = 'print(F.adaptive_avg_pool2d(torch.ones(1, 3, 7, 5), 1):size())  --> torch.Size([1, 3, 1, 1])' }
doc { 'F.adaptive_max_pool1d(input, output_size, {return_indices=false}) -> Tensor',
  'F.adaptive_max_pool2d(input, output_size, {return_indices=false}) -> Tensor',
  'F.adaptive_max_pool3d(input, output_size, {return_indices=false}) -> Tensor',
  'torch.adaptive_max_pool1d(input, output_size) -> Tensor, indices',
  does = 'Max pooling to a fixed output size (torch.adaptive_max_pool1d also returns the indices, as PyTorch\'s).',
  ex = 'print(F.adaptive_max_pool1d(torch.tensor({{{1, 5, 2, 3}}}), 2))  --> tensor([[[5., 3.]]])' }
doc { 'F.max_unpool1d(input, indices, kernel_size, {stride=kernel_size, padding=0, output_size=}) -> Tensor',
  'F.max_unpool2d(input, indices, kernel_size, {stride=kernel_size, padding=0, output_size=}) -> Tensor',
  'F.max_unpool3d(input, indices, kernel_size, {stride=kernel_size, padding=0, output_size=}) -> Tensor',
  does = 'Puts pooled maxima back at their 1-based indices, zeros elsewhere.',
  ex = 'local v, i = F.max_pool1d(torch.tensor({{{1, 5, 2, 3}}}), 2, {return_indices = true})\nprint(F.max_unpool1d(v, i, 2))  --> tensor([[[0., 5., 0., 3.]]])' }
doc { 'F.lp_pool1d(input, norm_type, kernel_size, {stride=, ceil_mode=false}) -> Tensor',
  'F.lp_pool2d(input, norm_type, kernel_size, {stride=, ceil_mode=false}) -> Tensor',
  does = 'The p-norm over each window.',
  ex = 'print(F.lp_pool1d(torch.tensor({{{3, 4}}}), 2, 2))  --> tensor([[[5.]]])' }
doc { 'F.interpolate(input, {size=, scale_factor=, mode=\'nearest\', align_corners=, recompute_scale_factor=, antialias=false}) -> Tensor',
  does = 'Resizes the spatial dims: modes \'nearest\', \'nearest-exact\', \'linear\', \'bilinear\', \'bicubic\', \'trilinear\', \'area\'.',
  ex = 'print(F.interpolate(torch.tensor({{{1, 2}}}), {scale_factor = 2, mode = \'linear\'}))  --> tensor([[[1.0000, 1.2500, 1.7500, 2.0000]]])' }
doc { 'F.upsample(input, size, scale_factor, mode, align_corners) -> Tensor',
  'F.upsample_nearest(input, size, scale_factor) -> Tensor', 'F.upsample_bilinear(input, size, scale_factor) -> Tensor',
  does = 'interpolate under its old names (upsample_bilinear with align_corners = true).',
  ex = 'print(F.upsample_nearest(torch.ones(1, 1, 1, 1), nil, 2):size())  --> torch.Size([1, 1, 2, 2])' }
doc { 'F.pixel_shuffle(input, upscale_factor) -> Tensor', 'F.pixel_unshuffle(input, downscale_factor) -> Tensor',
  'torch.pixel_shuffle(input, upscale_factor) -> Tensor', 'torch.pixel_unshuffle(input, downscale_factor) -> Tensor',
  does = '(N, C r^2, H, W) to (N, C, H r, W r), and back.',
  ex = 'print(F.pixel_shuffle(torch.ones(1, 4, 2, 2), 2):size())  --> torch.Size([1, 1, 4, 4])' }
doc { 'F.channel_shuffle(input, groups) -> Tensor', 'torch.channel_shuffle(input, groups) -> Tensor',
  does = 'Interleaves the channels of `groups` groups.',
  ex = 'print(F.channel_shuffle(torch.arange(4):view(1, 4, 1), 2):view(-1))  --> tensor([0, 2, 1, 3])' }
doc { 'F.pad(input, pad, {mode=\'constant\', value=0}) -> Tensor',
  does = 'Pads the last dims: pad = {left, right[, top, bottom[, front, back]]}; modes \'constant\', \'reflect\', \'replicate\', \'circular\'.',
  ex = 'print(F.pad(torch.tensor({1, 2}), {1, 2}, {value = 9}))  --> tensor([9., 1., 2., 9., 9.])' }
doc { 'F.affine_grid(theta, size, align_corners) -> Tensor',
  does = 'The sampling grid of an affine transform theta (N, 2, 3) for an output of size {N, C, H, W} (or 3-D), for grid_sample.',
  ex = 'print(F.affine_grid(torch.tensor({{{1, 0, 0}, {0, 1, 0}}}), {1, 1, 2, 2}, false):size())  --> torch.Size([1, 2, 2, 2])' }
doc { 'F.grid_sample(input, grid, mode, padding_mode, align_corners) -> Tensor',
  does = 'Samples input at the grid\'s coordinates in [-1, 1] (mode \'bilinear\' or \'nearest\'; padding_mode \'zeros\', \'border\', \'reflection\').',
  ex = 'local grid = F.affine_grid(torch.tensor({{{1, 0, 0}, {0, 1, 0}}}), {1, 1, 2, 2}, false)\nprint(F.grid_sample(torch.ones(1, 1, 2, 2), grid, \'bilinear\', \'zeros\', false))  --> tensor([[[[1., 1.], [1., 1.]]]])' }

doc.section 'Activations'
doc { 'F.relu(input, {inplace=false}) -> Tensor', 'F.relu_(input) -> Tensor', does = 'max(0, x).',
  ex = 'print(F.relu(torch.tensor({-1, 2})))  --> tensor([0., 2.])' }
doc { 'F.relu6(input, {inplace=false}) -> Tensor', does = 'min(max(0, x), 6).', ex = 'print(F.relu6(torch.tensor({9})))  --> tensor([6.])' }
doc { 'F.leaky_relu(input, negative_slope, {negative_slope=0.01, inplace=false}) -> Tensor', 'F.leaky_relu_(input, negative_slope) -> Tensor',
  'torch.leaky_relu(input, negative_slope) -> Tensor', pt = 'torch.nn.functional.leaky_relu, torch.nn.functional.leaky_relu_',
  does = 'x for x >= 0, negative_slope * x below.', ex = 'print(F.leaky_relu(torch.tensor({-10}), 0.1))  --> tensor([-1.])' }
doc { 'F.elu(input, {alpha=1, inplace=false}) -> Tensor', 'F.elu_(input, alpha) -> Tensor', 'torch.elu(input, alpha) -> Tensor', pt = 'torch.nn.functional.elu, torch.nn.functional.elu_',
  does = 'x above 0, alpha * (exp(x) - 1) below.', ex = 'print(F.elu(torch.tensor({1})))  --> tensor([1.])' }
doc { 'F.celu(input, {alpha=1, inplace=false}) -> Tensor', 'F.celu_(input, alpha) -> Tensor', 'torch.celu(input, alpha) -> Tensor',
  does = 'max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).', ex = 'print(F.celu(torch.tensor({2})))  --> tensor([2.])' }
doc { 'F.selu(input, {inplace=false}) -> Tensor', 'F.selu_(input) -> Tensor', 'torch.selu(input) -> Tensor',
  does = 'scale * elu(x, alpha) with the self-normalizing constants.', ex = 'print(F.selu(torch.tensor({0})))  --> tensor([0.])' }
doc { 'F.gelu(input, {approximate=\'none\'}) -> Tensor', does = 'x * Phi(x) (\'tanh\': the tanh approximation).',
  ex = 'print(F.gelu(torch.tensor({1}), {approximate = \'tanh\'}))  --> tensor([0.8412])' }
doc { 'F.silu(input, {inplace=false}) -> Tensor', does = 'x * sigmoid(x).', ex = 'print(F.silu(torch.tensor({0})))  --> tensor([0.])' }
doc { 'F.mish(input, {inplace=false}) -> Tensor', does = 'x * tanh(softplus(x)).', ex = 'print(F.mish(torch.tensor({0})))  --> tensor([0.])' }
doc { 'F.prelu(input, weight) -> Tensor', 'torch.prelu(input, weight) -> Tensor',
  does = 'x above 0, weight * x below (weight one value or one per channel).',
  ex = 'print(F.prelu(torch.tensor({-2, 2}), torch.tensor({0.5})))  --> tensor([-1.,  2.])' }
doc { 'F.rrelu(input, lower, upper, training, inplace) -> Tensor', 'F.rrelu_(input, lower, upper, training) -> Tensor',
  'torch.rrelu(input, lower, upper, training) -> Tensor',
  does = 'leaky_relu with a random slope in [lower, upper] (1/8, 1/3) when training, their mean otherwise.',
  ex = 'print(F.rrelu(torch.tensor({1})))  --> tensor([1.])' }
doc { 'F.hardtanh(input, {min_val=-1, max_val=1, inplace=false}) -> Tensor', 'F.hardtanh_(input, min_val, max_val) -> Tensor',
  'torch.hardtanh(input, min_val, max_val) -> Tensor', pt = 'torch.nn.functional.hardtanh, torch.nn.functional.hardtanh_',
  does = 'x clamped to [min_val, max_val].', ex = 'print(F.hardtanh(torch.tensor({-3, 3})))  --> tensor([-1.,  1.])' }
doc { 'F.hardsigmoid(input, {inplace=false}) -> Tensor', does = 'relu6(x + 3) / 6.', ex = 'print(F.hardsigmoid(torch.tensor({3})))  --> tensor([1.])' }
doc { 'F.hardswish(input, {inplace=false}) -> Tensor', does = 'x * relu6(x + 3) / 6.', ex = 'print(F.hardswish(torch.tensor({-3})))  --> tensor([-0.])' }
doc { 'F.hardshrink(input, lambd) -> Tensor', 'torch.hardshrink(input, lambd) -> Tensor', does = 'x where |x| > lambd (0.5), 0 elsewhere.',
  ex = 'print(F.hardshrink(torch.tensor({0.2, 2})))  --> tensor([0., 2.])' }
doc { 'F.softshrink(input, lambd) -> Tensor', does = 'x shrunk toward 0 by lambd (0.5), 0 within it.',
  ex = 'print(F.softshrink(torch.tensor({2})))  --> tensor([1.5000])' }
doc { 'F.tanhshrink(input) -> Tensor', does = 'x - tanh(x).', ex = 'print(F.tanhshrink(torch.tensor({0})))  --> tensor([0.])' }
doc { 'F.softsign(input) -> Tensor', does = 'x / (1 + |x|).', ex = 'print(F.softsign(torch.tensor({3})))  --> tensor([0.7500])' }
doc { 'F.softplus(input, {beta=1, threshold=20}) -> Tensor', does = 'log(1 + exp(beta x)) / beta (linear above threshold).',
  ex = 'print(F.softplus(torch.tensor({0})))  --> tensor([0.6931])' }
doc { 'F.threshold(input, threshold, value, {inplace=false}) -> Tensor', 'F.threshold_(input, threshold, value) -> Tensor',
  'torch.threshold(input, threshold, value) -> Tensor',
  does = 'x where x > threshold, value elsewhere.', ex = 'print(F.threshold(torch.tensor({0, 2}), 1, -1))  --> tensor([-1.,  2.])' }
doc { 'F.sigmoid(input) -> Tensor', does = '1 / (1 + exp(-x)).', ex = 'print(F.sigmoid(torch.tensor({0})))  --> tensor([0.5000])' }
doc { 'F.tanh(input) -> Tensor', does = 'tanh(x).', ex = 'print(F.tanh(torch.tensor({0})))  --> tensor([0.])' }
doc { 'F.logsigmoid(input) -> Tensor', does = 'log(sigmoid(x)), computed stably.', ex = 'print(F.logsigmoid(torch.tensor({0})))  --> tensor([-0.6931])' }
doc { 'F.softmax(input, dim, {dtype=}) -> Tensor', does = 'softmax along dim (1-based: PyTorch\'s dim=1 is 2 here).',
  ex = 'print(F.softmax(torch.tensor({{1, 1}}), 2))  --> tensor([[0.5000, 0.5000]])' }
doc { 'F.log_softmax(input, dim, {dtype=}) -> Tensor', does = 'log_softmax along dim.',
  ex = 'print(F.log_softmax(torch.tensor({{0, 0}}), 2))  --> tensor([[-0.6931, -0.6931]])' }
doc { 'F.softmin(input, dim, {dtype=}) -> Tensor', does = 'softmax(-x) along dim.',
  ex = 'print(F.softmin(torch.tensor({0, math.log(3)}), 1))  --> tensor([0.7500, 0.2500])' }
doc { 'F.gumbel_softmax(logits, tau, hard, eps, dim) -> Tensor',
  does = 'Samples from the Gumbel-softmax distribution (temperature tau 1; hard = true: one-hot with the soft gradient) along dim (-1).',
  ex = 'print(F.gumbel_softmax(torch.zeros(1, 3), 1, true):sum())  --> tensor(1.)' }
doc { 'F.glu(input, dim) -> Tensor', does = 'a * sigmoid(b), a and b the halves of input along dim (-1).',
  ex = 'print(F.glu(torch.tensor({2, 0})))  --> tensor([1.])' }

doc.section 'Normalization'
doc { 'F.batch_norm(input, running_mean, running_var, {weight=, bias=, training=false, momentum=0.1, eps=1e-5}) -> Tensor',
  'torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled) -> Tensor',
  does = 'Batch normalization (training: batch statistics, updating the running ones; else the running ones).',
  ex = 'print(F.batch_norm(torch.tensor({{1}, {3}}), nil, nil, {training = true}))  --> tensor([[-1.0000], [ 1.0000]])' }
doc { 'F.layer_norm(input, normalized_shape, {weight=, bias=, eps=1e-5}) -> Tensor',
  does = 'Normalizes over the last dims (normalized_shape, an array) to mean 0 and variance 1, then scales and shifts.',
  ex = 'print(F.layer_norm(torch.tensor({{1, 3}}), {2}))  --> tensor([[-1.0000,  1.0000]])' }
doc { 'F.group_norm(input, num_groups, {weight=, bias=, eps=1e-5}) -> Tensor',
  'torch.group_norm(input, num_groups, weight, bias, eps) -> Tensor',
  does = 'Normalizes over groups of channels.',
  ex = 'print(F.group_norm(torch.tensor({{1, 3}}), 1))  --> tensor([[-1.0000,  1.0000]])' }
doc { 'F.instance_norm(input, {running_mean=, running_var=, weight=, bias=, use_input_stats=true, momentum=0.1, eps=1e-5}) -> Tensor',
  'torch.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled) -> Tensor',
  does = 'Normalizes each channel of each sample over its spatial dims.',
  ex = 'print(F.instance_norm(torch.tensor({{{1, 3}}})))  --> tensor([[[-1.0000,  1.0000]]])' }
doc { 'F.local_response_norm(input, size, {alpha=1e-4, beta=0.75, k=1}) -> Tensor',
  does = 'Normalizes each channel by its neighbours\' squares.',
  ex = 'print(F.local_response_norm(torch.ones(1, 2, 1), 2):size())  --> torch.Size([1, 2, 1])' }
doc { 'F.normalize(input, {p=2, dim=2, eps=1e-12}) -> Tensor',
  does = 'input divided by its p-norm along dim (2: PyTorch\'s 1), at least eps.',
  ex = 'print(F.normalize(torch.tensor({{3, 4}})))  --> tensor([[0.6000, 0.8000]])' }

doc.section 'Dropout'
doc { 'F.dropout(input, {p=0.5, training=true, inplace=false}) -> Tensor', 'torch.dropout(input, p, train) -> Tensor',
  does = 'Zeros elements with probability p and scales the rest by 1 / (1 - p) when training (PyTorch\'s mask for the same seed). training is true by default, as PyTorch\'s: pass the module\'s self.training.',
  ex = 'print(F.dropout(torch.ones(2), {training = false}))  --> tensor([1., 1.])' }
doc { 'F.dropout1d(input, {p=0.5, training=true, inplace=false}) -> Tensor',
  'F.dropout2d(input, {p=0.5, training=true, inplace=false}) -> Tensor',
  'F.dropout3d(input, {p=0.5, training=true, inplace=false}) -> Tensor',
  does = 'Dropout of whole channels.', ex = 'print(F.dropout2d(torch.ones(1, 2, 1, 1), {p = 0}):sum())  --> tensor(2.)' }
doc { 'F.alpha_dropout(input, {p=0.5, training=false, inplace=false}) -> Tensor',
  'F.feature_alpha_dropout(input, {p=0.5, training=false, inplace=false}) -> Tensor',
  does = 'Dropout that keeps SELU\'s mean and variance (feature_: whole channels).',
  ex = 'print(F.alpha_dropout(torch.ones(2)))  --> tensor([1., 1.])' }

doc.section 'Embeddings and one-hot'
doc { 'F.embedding(input, weight, {padding_idx=, max_norm=, norm_type=2, scale_grad_by_freq=false, sparse=false}) -> Tensor',
  'torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse) -> Tensor',
  does = 'The rows of weight at the 1-based ids in input (int64).',
  ex = 'print(F.embedding(torch.tensor({2}, {dtype = torch.int64}), torch.eye(3)))  --> tensor([[0., 1., 0.]])' }
doc { 'F.embedding_bag(input, weight, offsets, {max_norm=, norm_type=2, scale_grad_by_freq=false, mode=\'mean\', sparse=false, per_sample_weights=, include_last_offset=false, padding_idx=}) -> Tensor',
  does = 'Sums, means or maxima of bags of embedding rows; ids and offsets counted from 1.',
  ex = 'print(F.embedding_bag(torch.tensor({1, 3}, {dtype = torch.int64}), torch.eye(3), torch.tensor({1}, {dtype = torch.int64}), {mode = \'sum\'}))  --> tensor([[1., 0., 1.]])' }
doc { 'F.one_hot(tensor, num_classes) -> Tensor',
  does = 'One-hot rows for class ids counted from 1 (num_classes -1: the largest id).',
  ex = 'print(F.one_hot(torch.tensor({2}, {dtype = torch.int64}), 3))  --> tensor([[0, 1, 0]])' }

doc.section 'Attention'
doc { 'F.scaled_dot_product_attention(query, key, value, {attn_mask=, dropout_p=0, is_causal=false}) -> Tensor',
  does = 'softmax(q k^T / sqrt(d) + mask) v over the last two dims (PyTorch 2\'s semantics; a bool mask keeps where true).',
  pt = 'torch.nn.functional.scaled_dot_product_attention (PyTorch 2.0)',
  ex = 'local q = torch.ones(1, 2, 4)\nprint(F.scaled_dot_product_attention(q, q, q):size())  --> torch.Size([1, 2, 4])' }
doc { 'F.multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, {training=, key_padding_mask=, need_weights=, attn_mask=, ...}) -> Tensor, weights',
  does = 'The computation of nn.MultiheadAttention with its weights passed in.',
  ex = 'local m = nn.MultiheadAttention(4, 1)\nlocal q = torch.ones(2, 1, 4)\nlocal out = F.multi_head_attention_forward(q, q, q, 4, 1, m.in_proj_weight, m.in_proj_bias, nil, nil, false, 0, m.out_proj.weight, m.out_proj.bias)\nprint(out:size())  --> torch.Size([2, 1, 4])' }

doc.section 'Distances'
doc { 'F.cosine_similarity(x1, x2, {dim=2, eps=1e-8}) -> Tensor', 'torch.cosine_similarity(x1, x2, dim, eps) -> Tensor',
  does = 'The cosine of the angle between x1 and x2 along dim (2: PyTorch\'s 1).',
  ex = 'print(F.cosine_similarity(torch.tensor({{1, 0}}), torch.tensor({{0, 1}})))  --> tensor([0.])' }
doc { 'F.pairwise_distance(x1, x2, {p=2, eps=1e-6, keepdim=false}) -> Tensor', 'torch.pairwise_distance(x1, x2, p, eps, keepdim) -> Tensor',
  does = 'The p-norm of x1 - x2 + eps along the last dim.',
  ex = 'print(F.pairwise_distance(torch.tensor({{0, 0}}), torch.tensor({{6, 8}})))  --> tensor([10.0000])' }
doc { 'F.pdist(input, p) -> Tensor', 'torch.pdist(input, p) -> Tensor',
  does = 'The p-norm (2) distances between each pair of rows (the upper triangle, as a 1-D tensor).',
  ex = 'print(F.pdist(torch.tensor({{0, 0}, {3, 4}})))  --> tensor([5.])' }

doc.section 'Losses'
doc { 'F.cross_entropy(input, target, {weight=, ignore_index=-100, reduction=\'mean\', label_smoothing=0}) -> Tensor',
  does = 'log_softmax then nll_loss: class targets counted from 1 (int64), or class probabilities.' .. RED,
  ex = 'print(F.cross_entropy(torch.tensor({{0, 0}}), torch.tensor({2}, {dtype = torch.int64})))  --> tensor(0.6931)' }
doc { 'F.nll_loss(input, target, {weight=, ignore_index=-100, reduction=\'mean\'}) -> Tensor',
  does = 'The negative log likelihood of log-probabilities and 1-based class targets.' .. RED,
  ex = 'print(F.nll_loss(torch.tensor({{-1, -2}}), torch.tensor({1}, {dtype = torch.int64})))  --> tensor(1.)' }
doc { 'F.binary_cross_entropy(input, target, {weight=, reduction=\'mean\'}) -> Tensor',
  does = 'Binary cross entropy of probabilities.' .. RED,
  ex = 'print(F.binary_cross_entropy(torch.tensor({0.5}), torch.tensor({0})))  --> tensor(0.6931)' }
doc { 'F.binary_cross_entropy_with_logits(input, target, {weight=, reduction=\'mean\', pos_weight=}) -> Tensor',
  'torch.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction) -> Tensor',
  does = 'sigmoid then binary cross entropy, computed stably.' .. RED,
  ex = 'print(F.binary_cross_entropy_with_logits(torch.tensor({0}), torch.tensor({0})))  --> tensor(0.6931)' }
doc { 'F.mse_loss(input, target, {reduction=\'mean\'}) -> Tensor', does = 'The squared error.' .. RED,
  ex = 'print(F.mse_loss(torch.tensor({0}), torch.tensor({2})))  --> tensor(4.)' }
doc { 'F.l1_loss(input, target, {reduction=\'mean\'}) -> Tensor', does = 'The absolute error.' .. RED,
  ex = 'print(F.l1_loss(torch.tensor({0}), torch.tensor({2})))  --> tensor(2.)' }
doc { 'F.smooth_l1_loss(input, target, {reduction=\'mean\', beta=1}) -> Tensor', does = 'Squared error below beta, absolute error above.' .. RED,
  ex = 'print(F.smooth_l1_loss(torch.tensor({0}), torch.tensor({0.5})))  --> tensor(0.1250)' }
doc { 'F.huber_loss(input, target, {reduction=\'mean\', delta=1}) -> Tensor', does = 'The Huber loss.' .. RED,
  ex = 'print(F.huber_loss(torch.tensor({0}), torch.tensor({2})))  --> tensor(1.5000)' }
doc { 'F.kl_div(input, target, {reduction=\'mean\', log_target=false}) -> Tensor', 'torch.kl_div(input, target, reduction, log_target) -> Tensor',
  does = 'The Kullback-Leibler divergence (input as log-probabilities).' .. RED .. ' Also \'batchmean\'.',
  ex = 'print(F.kl_div(torch.tensor({0.5}):log(), torch.tensor({0.5}), {reduction = \'sum\'}))  --> tensor(0.)' }
doc { 'F.poisson_nll_loss(input, target, {log_input=true, full=false, eps=1e-8, reduction=\'mean\'}) -> Tensor',
  'torch.poisson_nll_loss(input, target, log_input, full, eps, reduction) -> Tensor',
  does = 'The negative log likelihood of a Poisson distribution.' .. RED,
  ex = 'print(F.poisson_nll_loss(torch.tensor({0}), torch.tensor({0})))  --> tensor(1.)' }
doc { 'F.gaussian_nll_loss(input, target, var, {full=false, eps=1e-6, reduction=\'mean\'}) -> Tensor',
  does = 'The negative log likelihood of a Gaussian.' .. RED,
  ex = 'print(F.gaussian_nll_loss(torch.tensor({1}), torch.tensor({1}), torch.tensor({1})))  --> tensor(0.)' }
doc { 'F.ctc_loss(log_probs, targets, input_lengths, target_lengths, {blank=1, reduction=\'mean\', zero_infinity=false}) -> Tensor',
  does = 'The connectionist temporal classification loss (blank counts from 1).' .. RED,
  ex = 'local lp = torch.zeros(2, 1, 3):log_softmax(3)\nprint(F.ctc_loss(lp, torch.tensor({{2}}, {dtype = torch.int64}), {2}, {1}):size())  --> torch.Size([])' }
doc { 'F.margin_ranking_loss(input1, input2, target, {margin=0, reduction=\'mean\'}) -> Tensor',
  'torch.margin_ranking_loss(input1, input2, target, margin, reduction) -> Tensor',
  does = 'max(0, -y (x1 - x2) + margin).' .. RED,
  ex = 'print(F.margin_ranking_loss(torch.tensor({2}), torch.tensor({1}), torch.tensor({1})))  --> tensor(0.)' }
doc { 'F.hinge_embedding_loss(input, target, {margin=1, reduction=\'mean\'}) -> Tensor',
  'torch.hinge_embedding_loss(input, target, margin, reduction) -> Tensor',
  does = 'x where y = 1, max(0, margin - x) where y = -1.' .. RED,
  ex = 'print(F.hinge_embedding_loss(torch.tensor({2}), torch.tensor({1})))  --> tensor(2.)' }
doc { 'F.soft_margin_loss(input, target, {reduction=\'mean\'}) -> Tensor', does = 'log(1 + exp(-y x)).' .. RED,
  ex = 'print(F.soft_margin_loss(torch.tensor({0}), torch.tensor({-1})))  --> tensor(0.6931)' }
doc { 'F.multilabel_margin_loss(input, target, {reduction=\'mean\'}) -> Tensor',
  'F.multilabel_soft_margin_loss(input, target, {weight=, reduction=\'mean\'}) -> Tensor',
  'F.multi_margin_loss(input, target, {p=1, margin=1, weight=, reduction=\'mean\'}) -> Tensor',
  does = 'Margin losses for multi-label and multi-class classification (class ids from 1).' .. RED,
  ex = 'print(F.multi_margin_loss(torch.tensor({{1, 0}}), torch.tensor({1}, {dtype = torch.int64})))  --> tensor(0.)' }
doc { 'F.cosine_embedding_loss(input1, input2, target, {margin=0, reduction=\'mean\'}) -> Tensor',
  'torch.cosine_embedding_loss(input1, input2, target, margin, reduction) -> Tensor',
  does = '1 - cos where y = 1, max(0, cos - margin) where y = -1.' .. RED,
  ex = 'print(F.cosine_embedding_loss(torch.tensor({{1, 0}}), torch.tensor({{0, 1}}), torch.tensor({1})))  --> tensor(1.)' }
doc { 'F.triplet_margin_loss(anchor, positive, negative, {margin=1, p=2, eps=1e-6, swap=false, reduction=\'mean\'}) -> Tensor',
  'F.triplet_margin_with_distance_loss(anchor, positive, negative, {distance_function=, margin=1, swap=false, reduction=\'mean\'}) -> Tensor',
  'torch.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction) -> Tensor',
  does = 'max(0, d(a, p) - d(a, n) + margin).' .. RED,
  ex = 'local a = torch.tensor({{0, 0}})\nprint(F.triplet_margin_loss(a, a, torch.tensor({{0, 3}})))  --> tensor(0.)' }
