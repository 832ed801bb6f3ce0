-- The docs of nn.utils.parametrize and nn.utils.parametrizations (issue 24; moontorch.doc:
-- lua/doc/init.lua says how an entry is written).
local doc = ...

doc.section 'Nn.utils.parametrize'
doc { 'nn.utils.parametrize.register_parametrization(module, tensor_name, parametrization, {unsafe=false}) -> module',
  does = 'module[tensor_name] becomes parametrization(original) at every read: the class turns into Parametrized<Class>, the original lives in module.parametrizations[tensor_name].original (original0, original1, ... when right_inverse returns several), assigning goes through right_inverse; a second call chains. unsafe lets the parametrization change the shape or dtype.',
  ex = 'local Double = torch.class(\'doc.Double\', nn.Module)\nfunction Double:__init() nn.Module.__init(self) end\nfunction Double:forward(X) return X * 2 end\nfunction Double:right_inverse(X) return X / 2 end\nlocal m = nn.utils.parametrize.register_parametrization(nn.Linear(2, 2), \'weight\', Double())\nm.weight = torch.ones(2, 2)\nprint(m.parametrizations.weight.original, m:state_dict():keys()[2])  --> Parameter containing: tensor([[0.5000, 0.5000], [0.5000, 0.5000]], requires_grad=True) parametrizations.weight.original' }
doc { 'nn.utils.parametrize.remove_parametrizations(module, tensor_name, {leave_parametrized=true}) -> module',
  does = 'Ends the parametrization: module[tensor_name] is again a parameter (or buffer), holding its current value (in the original\'s Parameter object), or the original itself with leave_parametrized = false.',
  ex = 'local m = nn.utils.parametrizations.weight_norm(nn.Linear(2, 2))\nnn.utils.parametrize.remove_parametrizations(m, \'weight\')\nprint(torch.typename(m), m:state_dict():keys()[2])  --> nn.Linear weight' }
doc { 'nn.utils.parametrize.is_parametrized(module, tensor_name) -> boolean',
  'nn.utils.parametrize.type_before_parametrizations(module) -> class',
  does = 'Whether the module (or its tensor_name) is parametrized; the class it had before.',
  ex = 'local m = nn.utils.parametrizations.orthogonal(nn.Linear(3, 3))\nprint(nn.utils.parametrize.is_parametrized(m, \'weight\'), nn.utils.parametrize.type_before_parametrizations(m) == nn.Linear)  --> true true' }
doc { 'nn.utils.parametrize.cached(fn, ...) -> fn\'s results',
  does = 'Runs fn(...) with the cache on (PyTorch\'s `with cached():`): each parametrized tensor is computed once, at its first read, until the outermost cached() returns.',
  ex = 'local m = nn.utils.parametrizations.orthogonal(nn.Linear(3, 3))\nprint(nn.utils.parametrize.cached(function() return rawequal(m.weight, m.weight) end))  --> true' }
doc { 'nn.utils.parametrize.transfer_parametrizations_and_params(from_module, to_module, tensor_name) -> to_module',
  does = 'Registers from_module\'s parametrizations (of tensor_name, or all) on to_module, sharing the originals.',
  ex = 'local a = nn.utils.parametrizations.orthogonal(nn.Linear(3, 3))\nlocal b = nn.utils.parametrize.transfer_parametrizations_and_params(a, nn.Linear(3, 3))\nprint(torch.equal(a.weight, b.weight))  --> true' }
doc { 'nn.utils.parametrize.ParametrizationList(modules, original, unsafe) -> ParametrizationList',
  'nn.utils.parametrize.ParametrizationList:right_inverse(value)',
  does = 'What module.parametrizations[name] is: the parametrizations in order (a ModuleList) and the original(s); right_inverse sets the originals from a value, the last parametrization first. Made by register_parametrization.',
  ex = 'local m = nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))\nlocal l = m.parametrizations.weight\nprint(l.ntensors, l.original0:size(), l.original1:size())  --> 2 torch.Size([2, 1]) torch.Size([2, 3])' }
doc { 'nn.utils.parametrize.not_implemented(msg)', pt = false,
  does = 'Raised by a right_inverse that cannot invert (Python\'s NotImplementedError): register_parametrization then takes the inverse as the identity.',
  ex = 'print(pcall(nn.utils.parametrize.not_implemented, \'no inverse\'))  --> false NotImplementedError: no inverse' }

doc.section 'Nn.utils.parametrizations'
doc { 'nn.utils.parametrizations.orthogonal(module, name=\'weight\', orthogonal_map=nil, {use_trivialization=true}) -> module',
  does = 'Keeps module[name] (a matrix or batch of them) orthogonal: \'matrix_exp\' (square default), \'cayley\' or \'householder\' (the default otherwise) of a free original; PyTorch\'s weights after registration and training.',
  ex = 'local m = nn.utils.parametrizations.orthogonal(nn.Linear(4, 4))\nprint(torch.allclose(m.weight:matmul(m.weight:t()), torch.eye(4), 1e-4, 1e-5))  --> true' }
doc { 'nn.utils.parametrizations.spectral_norm(module, name=\'weight\', n_power_iterations=1, eps=1e-12, dim=nil) -> module',
  does = 'Divides module[name] by its largest singular value, estimated by power iteration (buffers _u and _v of the parametrization) at each read in training. dim counts from 1 (2 for ConvTranspose).',
  ex = 'local m = nn.utils.parametrizations.spectral_norm(nn.Linear(3, 2))\nprint(m:state_dict():keys()[3])  --> parametrizations.weight.0._u' }
doc { 'nn.utils.parametrizations.weight_norm(module, name=\'weight\', dim=1) -> module', pt = 'torch.nn.utils.weight_norm (its parametrization: PyTorch 2.1)',
  does = 'module[name] = g * v / |v| with g (original0) and v (original1), the norm over every dim but dim (1-based; false: the whole tensor). A state_dict of nn.utils.weight_norm (name_g, name_v) loads into it.',
  ex = 'local m = nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))\nprint(m.parametrizations.weight.original0:size())  --> torch.Size([2, 1])' }
