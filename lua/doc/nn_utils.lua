-- The docs of nn.init, nn.utils and nn.utils.rnn (moontorch.doc: lua/doc/init.lua says how an
-- entry is written). The initializers draw PyTorch's numbers for the same seed.
local doc = ...

doc.section 'Nn.init'
doc { 'nn.init.calculate_gain(nonlinearity, param) -> number',
  does = 'The recommended gain for a nonlinearity (\'linear\', \'conv2d\', \'sigmoid\', \'tanh\', \'relu\', \'leaky_relu\' with its slope, \'selu\').',
  ex = 'print(nn.init.calculate_gain(\'tanh\'))  --> 1.6666666666667' }
doc { 'nn.init.calculate_fan_in_and_fan_out(tensor) -> fan_in, fan_out', pt = 'torch.nn.init._calculate_fan_in_and_fan_out',
  does = 'The fan-in and fan-out of a weight of at least 2 dims (the receptive field counted in).',
  ex = 'print(nn.init.calculate_fan_in_and_fan_out(torch.empty(3, 2, 5)))  --> 10 15' }
doc { 'nn.init.uniform_(tensor, {a=0, b=1}) -> tensor', does = 'Fills with draws from U(a, b).',
  ex = 'print(nn.init.uniform_(torch.empty(100), -1, 1):abs():le(1):all())  --> true' }
doc { 'nn.init.normal_(tensor, {mean=0, std=1}) -> tensor', does = 'Fills with draws from N(mean, std^2).',
  ex = 'print(nn.init.normal_(torch.empty(2, 3), 0, 0.01):size())  --> torch.Size([2, 3])' }
doc { 'nn.init.trunc_normal_(tensor, {mean=0, std=1, a=-2, b=2}) -> tensor', does = 'Fills with normal draws truncated to [a, b].',
  ex = 'print(nn.init.trunc_normal_(torch.empty(100)):abs():le(2):all())  --> true' }
doc { 'nn.init.constant_(tensor, val) -> tensor', 'nn.init.ones_(tensor) -> tensor', 'nn.init.zeros_(tensor) -> tensor',
  does = 'Fills with val, 1 or 0.', ex = 'print(nn.init.constant_(torch.empty(2), 0.5))  --> tensor([0.5000, 0.5000])' }
doc { 'nn.init.eye_(tensor) -> tensor', does = 'Fills a 2-D tensor with the identity matrix.',
  ex = 'print(nn.init.eye_(torch.empty(2, 2)))  --> tensor([[1., 0.], [0., 1.]])' }
doc { 'nn.init.dirac_(tensor, {groups=1}) -> tensor', does = 'Fills a 3-5-D convolution weight with the Dirac delta (an identity convolution).',
  ex = 'print(nn.init.dirac_(torch.empty(1, 1, 3)))  --> tensor([[[0., 1., 0.]]])' }
doc { 'nn.init.xavier_uniform_(tensor, {gain=1}) -> tensor', 'nn.init.xavier_normal_(tensor, {gain=1}) -> tensor',
  does = 'Glorot initialization: uniform or normal with the variance 2 / (fan_in + fan_out) times gain^2.',
  ex = 'print(nn.init.xavier_uniform_(torch.empty(3, 5)):abs():max():item() <= math.sqrt(6 / 8))  --> true' }
doc { 'nn.init.kaiming_uniform_(tensor, {a=0, mode=\'fan_in\', nonlinearity=\'leaky_relu\'}) -> tensor',
  'nn.init.kaiming_normal_(tensor, {a=0, mode=\'fan_in\', nonlinearity=\'leaky_relu\'}) -> tensor',
  does = 'He initialization for ReLU networks (the layers\' default initialization uses kaiming_uniform_ with a = sqrt(5)).',
  ex = 'torch.manual_seed(0)\nprint(nn.init.kaiming_normal_(torch.empty(2, 2), {mode = \'fan_out\', nonlinearity = \'relu\'}):size())  --> torch.Size([2, 2])' }
doc { 'nn.init.orthogonal_(tensor, {gain=1}) -> tensor', does = 'Fills with a (semi-)orthogonal matrix (QR of a normal draw).',
  ex = 'local w = nn.init.orthogonal_(torch.empty(3, 3))\nprint(torch.allclose(w:matmul(w:t()), torch.eye(3), 1e-4, 1e-5))  --> true' }
doc { 'nn.init.sparse_(tensor, sparsity, {std=0.01}) -> tensor', does = 'A 2-D tensor with a fraction sparsity of each column zero, the rest N(0, std^2).',
  ex = 'print(nn.init.sparse_(torch.empty(10, 2), 0.5):eq(0):sum())  --> tensor(10)' }
doc { 'nn.init.uniform(...)', 'nn.init.normal(...)', 'nn.init.constant(...)', 'nn.init.xavier_uniform(...)',
  'nn.init.xavier_normal(...)', 'nn.init.kaiming_uniform(...)', 'nn.init.kaiming_normal(...)', 'nn.init.orthogonal(...)',
  'nn.init.sparse(...)',
  does = 'The old names without the trailing underscore: deprecated (a warning says so), as in PyTorch; call the _ forms.',
  ex = 'print(type(nn.init.uniform))  --> function' }

doc.section 'Nn.utils'
doc { 'nn.utils.clip_grad_norm_(parameters, max_norm, {norm_type=2, error_if_nonfinite=false, foreach=}) -> Tensor',
  does = 'Scales the gradients in place so that their joint norm is at most max_norm; returns the norm before clipping.',
  ex = 'local p = nn.Parameter(torch.zeros(2))\np.grad = torch.tensor({3, 4})\nprint(nn.utils.clip_grad_norm_({p}, 1), p.grad)  --> tensor(5.) tensor([0.6000, 0.8000])' }
doc { 'nn.utils.clip_grad_value_(parameters, clip_value, {foreach=})',
  does = 'Clamps every gradient to [-clip_value, clip_value] in place.',
  ex = 'local p = nn.Parameter(torch.zeros(2))\np.grad = torch.tensor({-3, 0.5})\nnn.utils.clip_grad_value_({p}, 1)\nprint(p.grad)  --> tensor([-1.0000,  0.5000])' }
doc { 'nn.utils.parameters_to_vector(parameters) -> Tensor', 'nn.utils.vector_to_parameters(vec, parameters)',
  does = 'The parameters flattened into one vector, and a vector copied back into them.',
  ex = 'local m = nn.Linear(2, 1)\nlocal v = nn.utils.parameters_to_vector(m:parameters())\nnn.utils.vector_to_parameters(v * 0, m:parameters())\nprint(v:size(), m.bias:tolist()[1])  --> torch.Size([3]) 0' }
doc { 'nn.utils.skip_init(module_class, args...) -> Module',
  does = 'A module built without running its parameter initialization (the memory is left as it is, to be filled by the caller).',
  ex = 'print(nn.utils.skip_init(nn.Linear, 10, 5).weight:size())  --> torch.Size([5, 10])' }
doc { 'nn.utils.weight_norm(module, name, dim) -> module', 'nn.utils.remove_weight_norm(module, name) -> module',
  does = 'Reparametrizes module[name] (\'weight\') as g * v / |v| (norm over every dim but dim, 1-based; false for the whole tensor), and back.',
  ex = 'local m = nn.utils.weight_norm(nn.Linear(3, 2))\nprint(m.weight_g:size(), m.weight_v:size())  --> torch.Size([2, 1]) torch.Size([2, 3])' }
doc { 'nn.utils.spectral_norm(module, name, n_power_iterations, eps, dim) -> module', 'nn.utils.remove_spectral_norm(module, name) -> module',
  does = 'Divides module[name] by its spectral norm, estimated by power iteration at each forward in training; and back.',
  ex = 'local m = nn.utils.spectral_norm(nn.Linear(3, 2))\nprint(m.weight_orig:size())  --> torch.Size([2, 3])' }

doc.section 'Nn.utils.rnn'
doc { 'nn.utils.rnn.PackedSequence(data, batch_sizes, sorted_indices, unsorted_indices) -> PackedSequence',
  'nn.utils.rnn.PackedSequence:to(...) -> PackedSequence', 'nn.utils.rnn.PackedSequence:is_pinned() -> boolean',
  does = 'Sequences of different lengths packed for the recurrent layers (.data, .batch_sizes, .sorted_indices, .unsorted_indices); to() converts the data as Tensor:to.',
  ex = 'local p = nn.utils.rnn.pack_sequence({torch.ones(3, 2), torch.ones(1, 2)})\nprint(p.data:size(), p.batch_sizes)  --> torch.Size([4, 2]) tensor([2, 1, 1])' }
doc { 'nn.utils.rnn.pack_padded_sequence(input, lengths, batch_first, enforce_sorted) -> PackedSequence',
  does = 'Packs a padded batch (L x B x *, or B x L x * with batch_first) of the given lengths (decreasing unless enforce_sorted = false).',
  ex = 'local p = nn.utils.rnn.pack_padded_sequence(torch.ones(3, 2, 1), {3, 1})\nprint(p.batch_sizes)  --> tensor([2, 1, 1])' }
doc { 'nn.utils.rnn.pad_packed_sequence(sequence, batch_first, padding_value, total_length) -> padded, lengths',
  does = 'The inverse of pack_padded_sequence: the padded batch and the lengths.',
  ex = 'local p = nn.utils.rnn.pack_sequence({torch.ones(2, 1), torch.ones(1, 1)})\nlocal x, lens = nn.utils.rnn.pad_packed_sequence(p)\nprint(x:size(), lens)  --> torch.Size([2, 2, 1]) tensor([2, 1])' }
doc { 'nn.utils.rnn.pad_sequence(sequences, batch_first, padding_value) -> Tensor',
  does = 'An array of tensors of different lengths padded into one batch (L x B x *).',
  ex = 'print(nn.utils.rnn.pad_sequence({torch.ones(2), torch.ones(1)}, true))  --> tensor([[1., 1.], [1., 0.]])' }
doc { 'nn.utils.rnn.pack_sequence(sequences, enforce_sorted) -> PackedSequence',
  does = 'An array of tensors of different lengths packed (pad_sequence then pack_padded_sequence).',
  ex = 'print(nn.utils.rnn.pack_sequence({torch.ones(2), torch.ones(1)}).data:size())  --> torch.Size([3])' }
doc { 'nn.utils.rnn.invert_permutation(permutation) -> Tensor',
  does = 'The inverse of a permutation of 1..n.',
  ex = 'print(nn.utils.rnn.invert_permutation(torch.tensor({2, 3, 1}, {dtype = torch.int64})))  --> tensor([3, 1, 2])' }
