-- The docs of nn's modules and their methods (moontorch.doc: lua/doc/init.lua says how an entry is
-- written). A constructor's optional arguments are shown in its options table with PyTorch's
-- defaults; they may also be given by position, in PyTorch's order, and the required ones by name.
local doc = ...

doc.section 'Nn.Module'
doc { 'nn.Module() -> Module',
  does = 'The base class of every module. Subclass it with torch.class(\'MyNet\', \'nn.Module\'), call the parent\'s __init, assign parameters (nn.Parameter), submodules and buffers as fields (assigning registers them), and define forward; m(x) calls forward (with the hooks).',
  ex = 'local Net, Parent = torch.class(\'DocNet\', \'nn.Module\')\nfunction Net:__init()\n  Parent.__init(self)\n  self.fc = nn.Linear(4, 2)\nend\nfunction Net:forward(x) return self.fc(x):relu() end\nlocal net = Net()\nprint(net(torch.ones(3, 4)):size(), #net:parameters())  --> torch.Size([3, 2]) 2' }
doc { 'nn.Module:forward(...) -> ...',
  does = 'What a module computes; call the module (m(x)), not forward, so that hooks run. Takes and returns what PyTorch\'s module does (several results as several values; keyword arguments in a trailing options table).',
  ex = 'local m = nn.Linear(2, 1)\nprint(torch.equal(m(torch.ones(1, 2)), m:forward(torch.ones(1, 2))))  --> true' }
doc { 'nn.Module:extra_repr() -> string',
  does = 'The text inside the parentheses when the module prints (override it in your modules).',
  ex = 'print(nn.Linear(2, 3):extra_repr())  --> in_features=2, out_features=3, bias=True' }
doc { 'nn.Module:parameters([recurse]) -> {Parameter, ...}',
  does = 'The parameters of the module and its submodules (recurse = false: its own), as a Lua array in registration order, without duplicates.',
  ex = 'local m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))\nprint(#m:parameters())  --> 4' }
doc { 'nn.Module:named_parameters([prefix, recurse, remove_duplicate]) -> iterator',
  does = 'An iterator of name, parameter pairs (names as in the state_dict: \'0.weight\').',
  ex = 'for name, p in nn.Linear(2, 1):named_parameters() do print(name, p:size()) end' }
doc { 'nn.Module:buffers([recurse]) -> {Tensor, ...}', 'nn.Module:named_buffers([prefix, recurse, remove_duplicate]) -> iterator',
  does = 'The buffers (running statistics and other state registered with register_buffer), as an array / an iterator of name, buffer.',
  ex = 'print(#nn.BatchNorm1d(3):buffers())  --> 3' }
doc { 'nn.Module:children() -> {Module, ...}', 'nn.Module:named_children() -> iterator',
  does = 'The direct submodules (an array) / an iterator of name, submodule.',
  ex = 'print(#nn.Sequential(nn.Linear(2, 2), nn.ReLU()):children())  --> 2' }
doc { 'nn.Module:modules() -> {Module, ...}', 'nn.Module:named_modules([memo, prefix, remove_duplicate]) -> iterator',
  does = 'The module itself and every submodule, depth first (an array) / an iterator of name (\'\' for the module itself), module.',
  ex = 'print(#nn.Sequential(nn.Linear(2, 2), nn.ReLU()):modules())  --> 3' }
doc { 'nn.Module:register_parameter(name, param)',
  does = 'Registers a parameter (an nn.Parameter, or nil) under name; assigning self.name = nn.Parameter(t) does the same.',
  ex = 'local m = nn.Module()\nm:register_parameter(\'w\', nn.Parameter(torch.ones(2)))\nprint(#m:parameters())  --> 1' }
doc { 'nn.Module:register_buffer(name, tensor, {persistent=})',
  does = 'Registers a buffer: state that moves with the module and is saved in its state_dict (unless persistent = false) but is no parameter.',
  ex = 'local m = nn.Module()\nm:register_buffer(\'steps\', torch.zeros(1))\nm:register_buffer(\'tmp\', torch.zeros(1), {persistent = false})\nprint(#m:state_dict():keys())  --> 1' }
doc { 'nn.Module:add_module(name, module)', 'nn.Module:register_module(name, module)',
  does = 'Registers a submodule under name (as self.name = module does).',
  ex = 'local m = nn.Module()\nm:add_module(\'fc\', nn.Linear(1, 1))\nprint(m.fc.in_features)  --> 1' }
doc { 'nn.Module:get_submodule(target) -> Module', 'nn.Module:get_parameter(target) -> Parameter',
  'nn.Module:get_buffer(target) -> Tensor',
  does = 'The submodule, parameter or buffer at a dotted path (\'0.weight\').',
  ex = 'local m = nn.Sequential(nn.Linear(2, 3))\nprint(m:get_parameter(\'0.bias\'):size())  --> torch.Size([3])' }
doc { 'nn.Module:apply(fn) -> self',
  does = 'Calls fn(m) on every submodule and then the module itself (weight initialization: m:apply(init_weights)).',
  ex = 'local n = 0\nnn.Sequential(nn.Linear(1, 1), nn.ReLU()):apply(function(m) n = n + 1 end)\nprint(n)  --> 3' }
doc { 'nn.Module:train([mode]) -> self', 'nn.Module:eval() -> self',
  does = 'Sets training mode (true by default) or evaluation mode on the module and its submodules (dropout and batch norm behave differently); m.training says which.',
  ex = 'local m = nn.Dropout(0.5)\nm:eval()\nprint(m.training, torch.equal(m(torch.ones(4)), torch.ones(4)))  --> false true' }
doc { 'nn.Module:requires_grad_([requires_grad]) -> self',
  does = 'Sets requires_grad on every parameter (true by default): freezing a part of a model.',
  ex = 'local m = nn.Linear(2, 2):requires_grad_(false)\nprint(m.weight.requires_grad)  --> false' }
doc { 'nn.Module:zero_grad([set_to_none])',
  does = 'Clears the parameters\' gradients: to zeros, or to nil with set_to_none = true (PyTorch 1.13\'s default is false).',
  ex = 'local m = nn.Linear(2, 1)\nm(torch.ones(1, 2)):sum():backward()\nm:zero_grad()\nprint(m.weight.grad)  --> tensor([[0., 0.]])\nm:zero_grad(true)\nprint(m.weight.grad)  --> nil' }
doc { 'nn.Module:to(device or dtype or tensor) -> self', 'nn.Module:to({device=, dtype=}) -> self',
  does = 'Moves the parameters and buffers to a device and/or converts the floating ones to a dtype, in place; returns the module.',
  ex = 'local m = nn.Linear(2, 2):to{dtype = torch.float64}\nprint(m.weight.dtype)  --> torch.float64' }
doc { 'nn.Module:float() -> self', 'nn.Module:double() -> self', 'nn.Module:half() -> self',
  'nn.Module:bfloat16() -> self', 'nn.Module:type(dst_type) -> self',
  does = 'Converts the floating parameters and buffers to float32, float64, float16, bfloat16 or the given dtype.',
  ex = 'print(nn.Linear(1, 1):double().weight.dtype)  --> torch.float64' }
doc { 'nn.Module:cpu() -> self', 'nn.Module:cuda([device]) -> self',
  does = 'Moves the parameters and buffers to the CPU / a CUDA device (an error in a build without CUDA).',
  ex = 'print(nn.Linear(1, 1):cpu().weight.device)  --> cpu' }
doc { 'nn.Module:to_empty({device=}) -> self',
  does = 'Moves the parameters and buffers to the device without copying their values (after building on \'meta\').',
  ex = 'local m = nn.Linear(2, 2, {device = \'meta\'}):to_empty({device = \'cpu\'})\nprint(m.weight.device)  --> cpu' }
doc { 'nn.Module:state_dict({destination=, prefix=, keep_vars=}) -> OrderedDict',
  does = 'The parameters and persistent buffers by dotted name, in registration order: a torch.OrderedDict (detached tensors unless keep_vars).',
  ex = 'print(table.concat(nn.Sequential(nn.Linear(2, 1)):state_dict():keys(), \' \'))  --> 0.weight 0.bias' }
doc { 'nn.Module:load_state_dict(state_dict, {strict=}) -> result',
  does = 'Copies the tensors of a state_dict into the parameters and buffers. With strict (the default) a missing or unexpected key is an error naming each; the result has missing_keys and unexpected_keys and prints as PyTorch\'s.',
  ex = 'local a, b = nn.Linear(2, 1), nn.Linear(2, 1)\nprint(b:load_state_dict(a:state_dict()))  --> <All keys matched successfully>' }
doc { 'nn.Module:get_extra_state() -> value', 'nn.Module:set_extra_state(state)', unchecked_args = true,
  does = 'Override both to save extra state in the state_dict (under \'_extra_state\').',
  ex = 'print((pcall(nn.Module().get_extra_state, nn.Module())))  --> false'
    .. '\n-- (the base one raises an error: a module that saves extra state overrides both)' }
doc { 'nn.Module:register_forward_pre_hook(hook, {prepend=, with_kwargs=}) -> handle',
  does = 'Calls hook(module, inputs) before forward; it may return a new input (or an array of inputs).',
  ex = 'local m = nn.Identity()\nm:register_forward_pre_hook(function(_, inputs) return inputs[1] * 2 end)\nprint(m(torch.ones(1)))  --> tensor([2.])' }
doc { 'nn.Module:register_forward_hook(hook, {prepend=, with_kwargs=}) -> handle',
  does = 'Calls hook(module, inputs, output) after forward; it may return a new output. handle:remove() takes it away.',
  ex = 'local m = nn.Identity()\nlocal h = m:register_forward_hook(function(_, _, out) return out + 1 end)\nprint(m(torch.zeros(1)))  --> tensor([1.])\nh:remove()' }
doc { 'nn.Module:register_full_backward_pre_hook(hook, {prepend=}) -> handle', pt = 'torch.nn.Module.register_full_backward_pre_hook (PyTorch 2.0)',
  does = 'Calls hook(module, grad_outputs) before the module\'s backward; it may return an array of new grad_outputs.',
  ex = 'local m = nn.Linear(1, 1)\nlocal seen\nm:register_full_backward_pre_hook(function(_, g) seen = #g end)\nm(torch.ones(1, 1, {requires_grad = true})):sum():backward()\nprint(seen)  --> 1' }
doc { 'nn.Module:register_full_backward_hook(hook, {prepend=}) -> handle',
  does = 'Calls hook(module, grad_inputs, grad_outputs) once the gradients of the module\'s inputs are computed; it may return an array of new grad_inputs.',
  ex = 'local m = nn.Linear(1, 1)\nlocal seen\nm:register_full_backward_hook(function(_, gin, gout) seen = #gout end)\nm(torch.ones(1, 1, {requires_grad = true})):sum():backward()\nprint(seen)  --> 1' }
doc { 'nn.Module:register_state_dict_pre_hook(hook) -> handle', 'nn.Module:register_state_dict_hook(hook) -> handle',
  'nn.Module:register_load_state_dict_pre_hook(hook, {with_module=}) -> handle',
  'nn.Module:register_load_state_dict_post_hook(hook) -> handle',
  does = 'Hooks around state_dict (before; after, may change the dict) and load_state_dict (before, with the dict; after, with the incompatible keys).',
  pt = 'torch.nn.Module.register_state_dict_pre_hook (PyTorch 2.0), torch.nn.Module._register_state_dict_hook, torch.nn.Module._register_load_state_dict_pre_hook, torch.nn.Module.register_load_state_dict_post_hook',
  ex = 'local m = nn.Linear(1, 1)\nm:register_state_dict_hook(function(_, sd) sd.extra = torch.zeros(1) end)\nprint(m:state_dict().extra)  --> tensor([0.])' }
doc { 'nn.register_module_forward_pre_hook(hook) -> handle', 'nn.register_module_forward_hook(hook) -> handle',
  'nn.register_module_full_backward_pre_hook(hook) -> handle', 'nn.register_module_full_backward_hook(hook) -> handle',
  does = 'Global hooks: called for every module, as the module\'s own hooks are.',
  pt = 'torch.nn.modules.module.register_module_forward_pre_hook, torch.nn.modules.module.register_module_forward_hook, torch.nn.modules.module.register_module_full_backward_pre_hook (PyTorch 2.0), torch.nn.modules.module.register_module_full_backward_hook',
  ex = 'local n = 0\nlocal h = nn.register_module_forward_hook(function() n = n + 1 end)\nnn.ReLU()(torch.ones(1))\nh:remove()\nprint(n)  --> 1' }
doc { 'nn.RemovableHandle:remove()', keys = { 'nn.RemovableHandle.remove' },
  does = 'What register_*_hook returns: handle:remove() takes the hook away.',
  pt = 'torch.utils.hooks.RemovableHandle',
  ex = 'local h = nn.Identity():register_forward_hook(function() end)\nh:remove()' }
doc { 'nn.Parameter(data[, requires_grad]) -> Parameter',
  does = 'A tensor that is a module parameter: assigned to a module field it registers, and requires grad (unless requires_grad = false).',
  ex = 'local p = nn.Parameter(torch.zeros(2))\nprint(p.requires_grad, torch.is_tensor(p))  --> true true' }

doc.section 'Containers'
doc { 'nn.Sequential(modules...) -> Sequential', 'nn.Sequential(ordered_dict) -> Sequential',
  does = 'Calls its modules in order, each on the previous one\'s output. The modules sit at seq[1], seq[2], ... (named \'0\', \'1\', ... as PyTorch\'s); #seq counts them; an OrderedDict gives names.',
  ex = 'local seq = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 1))\nprint(seq(torch.ones(2, 4)):size(), #seq, torch.typename(seq[2]))  --> torch.Size([2, 1]) 3 nn.ReLU' }
doc { 'nn.ModuleList([modules]) -> ModuleList',
  does = 'An array of modules, registered (their parameters belong to the owner); list[i], #list and ipairs work; no forward of its own.',
  ex = 'local l = nn.ModuleList({nn.Linear(2, 2), nn.Linear(2, 2)})\nlocal x = torch.ones(1, 2)\nfor _, m in ipairs(l) do x = m(x) end\nprint(#l, x:size())  --> 2 torch.Size([1, 2])' }
doc { 'nn.Sequential:append(module) -> self', 'nn.Sequential:extend(modules) -> self',
  'nn.Sequential:insert(index, module) -> self', 'nn.Sequential:pop([index]) -> Module',
  'nn.Sequential:remove(index)', 'nn.Sequential:len() -> number', 'nn.Sequential:slice(i, j) -> Sequential',
  'nn.ModuleList:append(module) -> self', 'nn.ModuleList:extend(modules) -> self',
  'nn.ModuleList:insert(index, module) -> self', 'nn.ModuleList:pop([index]) -> Module',
  'nn.ModuleList:remove(index)', 'nn.ModuleList:len() -> number', 'nn.ModuleList:slice(i, j) -> ModuleList',
  does = 'Python\'s list operations (positions 1-based, negative from the end): add at the end, add several, add before position index, take out (the last by default), the count, and a new container of positions i..j (PyTorch\'s seq[i:j]).',
  pt = 'torch.nn.Sequential.append, torch.nn.ModuleList.append, torch.nn.ModuleList.extend, torch.nn.ModuleList.insert, torch.nn.Sequential.pop (del, len() and slicing for remove, len, slice)',
  ex = 'local seq = nn.Sequential(nn.ReLU())\nseq:append(nn.Tanh()):insert(1, nn.Identity())\nprint(seq:len(), torch.typename(seq:pop()), #seq:slice(1, 1))  --> 3 nn.Tanh 1' }
doc { 'nn.Sequential:add_module(name, module)', 'nn.Sequential:register_module(name, module)',
  'nn.ModuleList:add_module(name, module)', 'nn.ModuleList:register_module(name, module)',
  does = 'Adds a module under a name (a container keeps its positions in step).',
  ex = 'local seq = nn.Sequential()\nseq:add_module(\'fc\', nn.Linear(1, 1))\nprint(#seq)  --> 1' }
doc { 'nn.ModuleDict([modules]) -> ModuleDict',
  does = 'A dict of modules by name: d.name or d[\'name\']; a plain table\'s keys go in sorted order, an array of {name, module} pairs keeps its order.',
  ex = 'local d = nn.ModuleDict({act = nn.ReLU(), fc = nn.Linear(2, 2)})\nprint(table.concat(d:keys(), \' \'), torch.typename(d.fc))  --> act fc nn.Linear' }
doc { 'nn.ModuleDict:keys() -> {string, ...}', 'nn.ModuleDict:values() -> {Module, ...}', 'nn.ModuleDict:items() -> iterator',
  'nn.ModuleDict:len() -> number', 'nn.ModuleDict:contains(key) -> boolean', 'nn.ModuleDict:pop(key) -> Module',
  'nn.ModuleDict:update(modules)', 'nn.ModuleDict:clear()',
  does = 'Python\'s dict operations on the modules, in insertion order.',
  pt = 'torch.nn.ModuleDict.keys, torch.nn.ModuleDict.values, torch.nn.ModuleDict.items, torch.nn.ModuleDict.pop, torch.nn.ModuleDict.update, torch.nn.ModuleDict.clear (len() and in for len, contains)',
  ex = 'local d = nn.ModuleDict({{\'a\', nn.ReLU()}})\nd:update({{\'b\', nn.Tanh()}})\nprint(d:len(), d:contains(\'b\'))  --> 2 true' }
doc { 'nn.ParameterList([parameters]) -> ParameterList',
  does = 'An array of parameters, registered with the owner; list[i], #list and ipairs work.',
  ex = 'local l = nn.ParameterList({nn.Parameter(torch.ones(1)), nn.Parameter(torch.ones(2))})\nprint(#l, l[2]:size())  --> 2 torch.Size([2])' }
doc { 'nn.ParameterList:append(value) -> self', 'nn.ParameterList:extend(values) -> self',
  'nn.ParameterList:insert(index, value) -> self', 'nn.ParameterList:pop([index]) -> Parameter',
  'nn.ParameterList:remove(index)', 'nn.ParameterList:len() -> number', 'nn.ParameterList:slice(i, j) -> ParameterList',
  'nn.ParameterList:register_parameter(name, param)',
  does = 'Python\'s list operations on the parameters (positions 1-based; a tensor is made a Parameter).',
  pt = 'torch.nn.ParameterList.append, torch.nn.ParameterList.extend, torch.nn.Module.register_parameter (Python\'s list insert, pop, del, len() and slicing for the others)',
  ex = 'local l = nn.ParameterList()\nl:append(torch.ones(3))\nprint(l:len(), l[1].requires_grad)  --> 1 true' }
doc { 'nn.ParameterDict([parameters]) -> ParameterDict',
  does = 'A dict of parameters by name (keys sorted for a plain table; an array of pairs keeps its order).',
  ex = 'local d = nn.ParameterDict({w = nn.Parameter(torch.ones(1))})\nprint(d.w:size())  --> torch.Size([1])' }
doc { 'nn.ParameterDict:keys() -> {string, ...}', 'nn.ParameterDict:values() -> {Parameter, ...}',
  'nn.ParameterDict:items() -> iterator', 'nn.ParameterDict:len() -> number', 'nn.ParameterDict:contains(key) -> boolean',
  'nn.ParameterDict:get(key[, default]) -> Parameter', 'nn.ParameterDict:pop(key) -> Parameter',
  'nn.ParameterDict:popitem() -> key, Parameter', 'nn.ParameterDict:setdefault(key, default) -> Parameter',
  'nn.ParameterDict:update(parameters)', 'nn.ParameterDict:clear()',
  does = 'Python\'s dict operations on the parameters, in insertion order.',
  pt = 'torch.nn.ParameterDict.keys, torch.nn.ParameterDict.values, torch.nn.ParameterDict.items, torch.nn.ParameterDict.get, torch.nn.ParameterDict.pop, torch.nn.ParameterDict.popitem, torch.nn.ParameterDict.setdefault, torch.nn.ParameterDict.update, torch.nn.ParameterDict.clear (len() and in for len, contains)',
  ex = 'local d = nn.ParameterDict()\nd:update({{\'a\', torch.ones(1)}})\nprint(d:len(), d:get(\'z\', 5))  --> 1 5' }

doc.section 'Linear'
doc { 'nn.Linear(in_features, out_features, {bias=true, device=, dtype=}) -> Module',
  does = 'y = x @ weight^T + bias over the last dim; weight (out_features x in_features) and bias drawn as PyTorch draws them after the same seed.',
  ex = 'local m = nn.Linear(4, 2)\nprint(m(torch.ones(3, 4)):size(), m.weight:size())  --> torch.Size([3, 2]) torch.Size([2, 4])' }
doc { 'nn.Linear:reset_parameters()', 'nn.Bilinear:reset_parameters()', 'nn.Embedding:reset_parameters()',
  'nn.EmbeddingBag:reset_parameters()', 'nn.LayerNorm:reset_parameters()', 'nn.GroupNorm:reset_parameters()',
  'nn.PReLU:reset_parameters()', 'nn._ConvNd:reset_parameters()', 'nn._BatchNorm:reset_parameters()',
  'nn._InstanceNorm:reset_parameters()', 'nn.RNNBase:reset_parameters()', 'nn.RNNCellBase:reset_parameters()',
  does = 'Draws the module\'s parameters afresh, as its constructor did (PyTorch\'s numbers for the same seed); batch norm also resets its running statistics.',
  pt = 'torch.nn.Linear.reset_parameters',
  ex = 'local m = nn.Linear(2, 2)\nm.weight.data:zero_()\nm:reset_parameters()\nprint(m.weight:abs():sum():item() > 0)  --> true' }
doc { 'nn.Bilinear(in1_features, in2_features, out_features, {bias=true, device=, dtype=}) -> Module',
  does = 'y = x1^T A x2 + b for each output feature.',
  ex = 'print(nn.Bilinear(2, 3, 4)(torch.ones(5, 2), torch.ones(5, 3)):size())  --> torch.Size([5, 4])' }
doc { 'nn.Identity(...) -> Module',
  does = 'Returns its input (its arguments are ignored).',
  ex = 'print(nn.Identity()(torch.ones(2)))  --> tensor([1., 1.])' }
doc { 'nn.NonDynamicallyQuantizableLinear(in_features, out_features, {bias=true, device=, dtype=}) -> Module',
  does = 'nn.Linear under the name MultiheadAttention\'s out_proj has in PyTorch (so state_dicts and printing match).',
  pt = 'torch.nn.modules.linear.NonDynamicallyQuantizableLinear',
  ex = 'print(torch.typename(nn.MultiheadAttention(4, 2).out_proj))  --> nn.NonDynamicallyQuantizableLinear' }
doc { 'nn.Flatten({start_dim=2, end_dim=-1}) -> Module',
  does = 'Flattens dims start_dim..end_dim (by default all but the batch dim: PyTorch\'s start_dim=1 counted from 1).',
  ex = 'print(nn.Flatten()(torch.ones(2, 3, 4)):size())  --> torch.Size([2, 12])' }
doc { 'nn.Unflatten(dim, unflattened_size) -> Module',
  does = 'Splits dim into the given sizes (an array).',
  ex = 'print(nn.Unflatten(2, {2, 3})(torch.ones(4, 6)):size())  --> torch.Size([4, 2, 3])' }

doc.section 'Convolution'
local CONV_OPTS = '{stride=1, padding=0, dilation=1, groups=1, bias=true, padding_mode=\'zeros\', device=, dtype=}'
doc { 'nn.Conv1d(in_channels, out_channels, kernel_size, ' .. CONV_OPTS .. ') -> Module',
  'nn.Conv2d(in_channels, out_channels, kernel_size, ' .. CONV_OPTS .. ') -> Module',
  'nn.Conv3d(in_channels, out_channels, kernel_size, ' .. CONV_OPTS .. ') -> Module',
  does = 'Convolutions over (N, C, L), (N, C, H, W) or (N, C, D, H, W) inputs (or without N). Sizes are numbers or arrays; padding also \'same\' or \'valid\'; padding_mode \'zeros\', \'reflect\', \'replicate\' or \'circular\'.',
  ex = 'local conv = nn.Conv2d(3, 8, 3, {padding = 1})\nprint(conv(torch.ones(1, 3, 5, 5)):size(), conv.weight:size())  --> torch.Size([1, 8, 5, 5]) torch.Size([8, 3, 3, 3])' }
doc { 'nn.ConvTranspose1d(in_channels, out_channels, kernel_size, {stride=1, padding=0, output_padding=0, groups=1, bias=true, dilation=1, padding_mode=\'zeros\', device=, dtype=}) -> Module',
  'nn.ConvTranspose2d(in_channels, out_channels, kernel_size, {stride=1, padding=0, output_padding=0, groups=1, bias=true, dilation=1, padding_mode=\'zeros\', device=, dtype=}) -> Module',
  'nn.ConvTranspose3d(in_channels, out_channels, kernel_size, {stride=1, padding=0, output_padding=0, groups=1, bias=true, dilation=1, padding_mode=\'zeros\', device=, dtype=}) -> Module',
  does = 'Transposed convolutions (the gradient of a convolution with respect to its input): upsampling layers. A call may take output_size.',
  ex = 'print(nn.ConvTranspose2d(4, 2, 2, {stride = 2})(torch.ones(1, 4, 3, 3)):size())  --> torch.Size([1, 2, 6, 6])' }
doc { 'nn.Unfold(kernel_size, {dilation=1, padding=0, stride=1}) -> Module',
  does = 'Extracts the sliding blocks of a (N, C, H, W) input as columns: (N, C * kh * kw, L).',
  ex = 'print(nn.Unfold(2)(torch.ones(1, 3, 4, 4)):size())  --> torch.Size([1, 12, 9])' }
doc { 'nn.Fold(output_size, kernel_size, {dilation=1, padding=0, stride=1}) -> Module',
  does = 'The reverse of Unfold: sums columns of blocks back into a (N, C, H, W) image.',
  ex = 'print(nn.Fold({4, 4}, 2)(torch.ones(1, 12, 9)):size())  --> torch.Size([1, 3, 4, 4])' }

doc.section 'Pooling and resampling'
doc { 'nn.MaxPool1d(kernel_size, {stride=kernel_size, padding=0, dilation=1, return_indices=false, ceil_mode=false}) -> Module',
  'nn.MaxPool2d(kernel_size, {stride=kernel_size, padding=0, dilation=1, return_indices=false, ceil_mode=false}) -> Module',
  'nn.MaxPool3d(kernel_size, {stride=kernel_size, padding=0, dilation=1, return_indices=false, ceil_mode=false}) -> Module',
  does = 'The maximum over each window; with return_indices, also the 1-based flat positions of the maxima (for MaxUnpool).',
  ex = 'print(nn.MaxPool2d(2)(torch.arange(16):float():view(1, 1, 4, 4)))  --> tensor([[[[ 5.,  7.], [13., 15.]]]])' }
doc { 'nn.AvgPool1d(kernel_size, {stride=kernel_size, padding=0, ceil_mode=false, count_include_pad=true}) -> Module',
  'nn.AvgPool2d(kernel_size, {stride=kernel_size, padding=0, ceil_mode=false, count_include_pad=true, divisor_override=}) -> Module',
  'nn.AvgPool3d(kernel_size, {stride=kernel_size, padding=0, ceil_mode=false, count_include_pad=true, divisor_override=}) -> Module',
  does = 'The mean over each window.',
  ex = 'print(nn.AvgPool1d(2)(torch.tensor({{{1, 3, 5, 7}}})))  --> tensor([[[2., 6.]]])' }
doc { 'nn.AdaptiveAvgPool1d(output_size) -> Module', 'nn.AdaptiveAvgPool2d(output_size) -> Module',
  'nn.AdaptiveAvgPool3d(output_size) -> Module',
  does = 'Mean pooling to a fixed output size, whatever the input\'s (nil in an array keeps that size).',
  ex = 'print(nn.AdaptiveAvgPool2d(1)(torch.ones(2, 8, 5, 7)):size())  --> torch.Size([2, 8, 1, 1])' }
doc { 'nn.AdaptiveMaxPool1d(output_size, {return_indices=false}) -> Module',
  'nn.AdaptiveMaxPool2d(output_size, {return_indices=false}) -> Module',
  'nn.AdaptiveMaxPool3d(output_size, {return_indices=false}) -> Module',
  does = 'Max pooling to a fixed output size.',
  ex = 'print(nn.AdaptiveMaxPool1d(2)(torch.tensor({{{1, 5, 2, 3}}})))  --> tensor([[[5., 3.]]])' }
doc { 'nn.MaxUnpool1d(kernel_size, {stride=kernel_size, padding=0}) -> Module',
  'nn.MaxUnpool2d(kernel_size, {stride=kernel_size, padding=0}) -> Module',
  'nn.MaxUnpool3d(kernel_size, {stride=kernel_size, padding=0}) -> Module',
  does = 'Puts pooled maxima back at the positions MaxPool\'s indices give, zeros elsewhere: m(x, indices[, output_size]).',
  ex = 'local pool = nn.MaxPool1d(2, {return_indices = true})\nlocal y, i = pool(torch.tensor({{{1, 5, 2, 3}}}))\nprint(nn.MaxUnpool1d(2)(y, i))  --> tensor([[[0., 5., 0., 3.]]])' }
doc { 'nn.LPPool1d(norm_type, kernel_size, {stride=kernel_size, ceil_mode=false}) -> Module',
  'nn.LPPool2d(norm_type, kernel_size, {stride=kernel_size, ceil_mode=false}) -> Module',
  does = 'The p-norm over each window.',
  ex = 'print(nn.LPPool1d(2, 2)(torch.tensor({{{3, 4}}})))  --> tensor([[[5.]]])' }
doc { 'nn.Upsample({size=, scale_factor=, mode=\'nearest\', align_corners=, recompute_scale_factor=}) -> Module',
  'nn.UpsamplingNearest2d({size=, scale_factor=}) -> Module', 'nn.UpsamplingBilinear2d({size=, scale_factor=}) -> Module',
  does = 'Resizes by F.interpolate (modes \'nearest\', \'linear\', \'bilinear\', \'bicubic\', \'trilinear\'); UpsamplingBilinear2d uses align_corners = true.',
  ex = 'print(nn.Upsample({scale_factor = 2})(torch.ones(1, 1, 2, 2)):size())  --> torch.Size([1, 1, 4, 4])' }
doc { 'nn.PixelShuffle(upscale_factor) -> Module', 'nn.PixelUnshuffle(downscale_factor) -> Module',
  does = 'Rearranges (N, C r^2, H, W) into (N, C, H r, W r) (sub-pixel convolution), and back.',
  ex = 'print(nn.PixelShuffle(2)(torch.ones(1, 8, 3, 3)):size())  --> torch.Size([1, 2, 6, 6])' }
doc { 'nn.ChannelShuffle(groups) -> Module',
  does = 'Interleaves the channels of `groups` groups (ShuffleNet).',
  ex = 'print(nn.ChannelShuffle(2)(torch.arange(4):view(1, 4, 1, 1)):view(-1))  --> tensor([0, 2, 1, 3])' }
doc { 'nn.ZeroPad2d(padding) -> Module', 'nn.ConstantPad1d(padding, value) -> Module',
  'nn.ConstantPad2d(padding, value) -> Module', 'nn.ConstantPad3d(padding, value) -> Module',
  'nn.ReflectionPad1d(padding) -> Module', 'nn.ReflectionPad2d(padding) -> Module', 'nn.ReflectionPad3d(padding) -> Module',
  'nn.ReplicationPad1d(padding) -> Module', 'nn.ReplicationPad2d(padding) -> Module', 'nn.ReplicationPad3d(padding) -> Module',
  does = 'Padding of the last 1, 2 or 3 dims: with zeros, a constant, the mirror image, or the edge value. padding a number or an array (left, right, top, bottom, ...).',
  ex = 'print(nn.ReflectionPad1d(1)(torch.tensor({{{1, 2, 3}}})))  --> tensor([[[2., 1., 2., 3., 2.]]])' }

doc.section 'Normalization'
doc { 'nn.BatchNorm1d(num_features, {eps=1e-5, momentum=0.1, affine=true, track_running_stats=true, device=, dtype=}) -> Module',
  'nn.BatchNorm2d(num_features, {eps=1e-5, momentum=0.1, affine=true, track_running_stats=true, device=, dtype=}) -> Module',
  'nn.BatchNorm3d(num_features, {eps=1e-5, momentum=0.1, affine=true, track_running_stats=true, device=, dtype=}) -> Module',
  does = 'Normalizes each channel over the batch (and spatial dims) in training, updating running_mean and running_var; in eval mode uses those.',
  ex = 'local bn = nn.BatchNorm1d(2)\nlocal y = bn(torch.tensor({{1, 2}, {3, 6}}))\nprint(y:detach(), bn.running_mean)  --> tensor([[-1.0000, -1.0000], [ 1.0000,  1.0000]]) tensor([0.2000, 0.4000])' }
doc { 'nn._BatchNorm:reset_running_stats()', 'nn._InstanceNorm:reset_running_stats()',
  does = 'Resets running_mean to 0, running_var to 1 and num_batches_tracked to 0.',
  pt = 'torch.nn.BatchNorm2d.reset_running_stats',
  ex = 'local bn = nn.BatchNorm1d(2)\nbn(torch.randn(4, 2))\nbn:reset_running_stats()\nprint(bn.running_mean)  --> tensor([0., 0.])' }
doc { 'nn.LayerNorm(normalized_shape, {eps=1e-5, elementwise_affine=true, device=, dtype=}) -> Module',
  does = 'Normalizes over the last dims (normalized_shape: a number or an array) to mean 0 and variance 1, then scales and shifts (weight, bias).',
  ex = 'print(nn.LayerNorm(2)(torch.tensor({{1, 3}})):detach())  --> tensor([[-1.0000,  1.0000]])' }
doc { 'nn.GroupNorm(num_groups, num_channels, {eps=1e-5, affine=true, device=, dtype=}) -> Module',
  does = 'Normalizes over groups of channels (and spatial dims) per sample.',
  ex = 'print(nn.GroupNorm(2, 4)(torch.randn(3, 4, 5)):size())  --> torch.Size([3, 4, 5])' }
doc { 'nn.InstanceNorm1d(num_features, {eps=1e-5, momentum=0.1, affine=false, track_running_stats=false, device=, dtype=}) -> Module',
  'nn.InstanceNorm2d(num_features, {eps=1e-5, momentum=0.1, affine=false, track_running_stats=false, device=, dtype=}) -> Module',
  'nn.InstanceNorm3d(num_features, {eps=1e-5, momentum=0.1, affine=false, track_running_stats=false, device=, dtype=}) -> Module',
  does = 'Normalizes each channel of each sample over its spatial dims.',
  ex = 'print(nn.InstanceNorm1d(2)(torch.tensor({{{1, 3}, {2, 2}}})))  --> tensor([[[-1.0000,  1.0000], [ 0.0000,  0.0000]]])' }
doc { 'nn.LocalResponseNorm(size, {alpha=1e-4, beta=0.75, k=1}) -> Module',
  does = 'Normalizes each channel by its neighbours\' squares (AlexNet).',
  ex = 'print(nn.LocalResponseNorm(2)(torch.ones(1, 3, 2, 2)):size())  --> torch.Size([1, 3, 2, 2])' }

doc.section 'Activations'
doc { 'nn.ReLU({inplace=false}) -> Module', does = 'max(0, x).', ex = 'print(nn.ReLU()(torch.tensor({-1, 2})))  --> tensor([0., 2.])' }
doc { 'nn.ReLU6({inplace=false}) -> Module', does = 'min(max(0, x), 6).', ex = 'print(nn.ReLU6()(torch.tensor({-1, 8})))  --> tensor([0., 6.])' }
doc { 'nn.LeakyReLU(negative_slope, {negative_slope=0.01, inplace=false}) -> Module',
  does = 'x for x >= 0, negative_slope * x below.', ex = 'print(nn.LeakyReLU(0.1)(torch.tensor({-10, 2})))  --> tensor([-1.,  2.])' }
doc { 'nn.ELU({alpha=1, inplace=false}) -> Module', does = 'x above 0, alpha * (exp(x) - 1) below.',
  ex = 'print(nn.ELU()(torch.tensor({0, 1})))  --> tensor([0., 1.])' }
doc { 'nn.CELU({alpha=1, inplace=false}) -> Module', does = 'max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).',
  ex = 'print(nn.CELU()(torch.tensor({1})))  --> tensor([1.])' }
doc { 'nn.SELU({inplace=false}) -> Module', does = 'scale * ELU(x, alpha) with the self-normalizing constants.',
  ex = 'print(nn.SELU()(torch.tensor({0})))  --> tensor([0.])' }
doc { 'nn.GELU({approximate=\'none\'}) -> Module', does = 'x * Phi(x) (\'tanh\': the tanh approximation).',
  ex = 'print(nn.GELU()(torch.tensor({0})))  --> tensor([0.])' }
doc { 'nn.SiLU({inplace=false}) -> Module', does = 'x * sigmoid(x).', ex = 'print(nn.SiLU()(torch.tensor({0})))  --> tensor([0.])' }
doc { 'nn.Mish({inplace=false}) -> Module', does = 'x * tanh(softplus(x)).', ex = 'print(nn.Mish()(torch.tensor({0})))  --> tensor([0.])' }
doc { 'nn.PReLU({num_parameters=1, init=0.25, device=, dtype=}) -> Module',
  does = 'LeakyReLU with a learned slope (one, or one per channel).',
  ex = 'print(nn.PReLU()(torch.tensor({-4, 1})):detach())  --> tensor([-1.,  1.])' }
doc { 'nn.RReLU({lower=1/8, upper=1/3, inplace=false}) -> Module',
  does = 'LeakyReLU with a random slope in [lower, upper] in training (their mean in eval mode).',
  ex = 'print(nn.RReLU():eval()(torch.tensor({0, 1})))  --> tensor([0., 1.])' }
doc { 'nn.Hardtanh({min_val=-1, max_val=1, inplace=false}) -> Module', does = 'x clamped to [min_val, max_val].',
  ex = 'print(nn.Hardtanh()(torch.tensor({-3, 0.5, 3})))  --> tensor([-1.0000,  0.5000,  1.0000])' }
doc { 'nn.Hardsigmoid({inplace=false}) -> Module', does = 'relu6(x + 3) / 6.', ex = 'print(nn.Hardsigmoid()(torch.tensor({0})))  --> tensor([0.5000])' }
doc { 'nn.Hardswish({inplace=false}) -> Module', does = 'x * relu6(x + 3) / 6.', ex = 'print(nn.Hardswish()(torch.tensor({3})))  --> tensor([3.])' }
doc { 'nn.Hardshrink({lambd=0.5}) -> Module', does = 'x where |x| > lambd, 0 elsewhere.',
  ex = 'print(nn.Hardshrink()(torch.tensor({0.3, 1})))  --> tensor([0., 1.])' }
doc { 'nn.Softshrink({lambd=0.5}) -> Module', does = 'x - lambd above lambd, x + lambd below -lambd, 0 between.',
  ex = 'print(nn.Softshrink()(torch.tensor({0.3, 1})))  --> tensor([0.0000, 0.5000])' }
doc { 'nn.Tanhshrink() -> Module', does = 'x - tanh(x).', ex = 'print(nn.Tanhshrink()(torch.tensor({0})))  --> tensor([0.])' }
doc { 'nn.Softplus({beta=1, threshold=20}) -> Module', does = 'log(1 + exp(beta x)) / beta (linear above threshold).',
  ex = 'print(nn.Softplus()(torch.tensor({0})))  --> tensor([0.6931])' }
doc { 'nn.Softsign() -> Module', does = 'x / (1 + |x|).', ex = 'print(nn.Softsign()(torch.tensor({1})))  --> tensor([0.5000])' }
doc { 'nn.Threshold(threshold, value, {inplace=false}) -> Module', does = 'x where x > threshold, value elsewhere.',
  ex = 'print(nn.Threshold(1, -5)(torch.tensor({0, 2})))  --> tensor([-5.,  2.])' }
doc { 'nn.Sigmoid() -> Module', does = '1 / (1 + exp(-x)).', ex = 'print(nn.Sigmoid()(torch.tensor({0})))  --> tensor([0.5000])' }
doc { 'nn.Tanh() -> Module', does = 'tanh(x).', ex = 'print(nn.Tanh()(torch.tensor({0})))  --> tensor([0.])' }
doc { 'nn.LogSigmoid() -> Module', does = 'log(sigmoid(x)).', ex = 'print(nn.LogSigmoid()(torch.tensor({0})))  --> tensor([-0.6931])' }
doc { 'nn.Softmax({dim=}) -> Module', 'nn.LogSoftmax({dim=}) -> Module', 'nn.Softmin({dim=}) -> Module',
  does = 'softmax, log_softmax or softmax(-x) along dim (1-based: PyTorch\'s dim=1 is 2).',
  ex = 'print(nn.Softmax(2)(torch.tensor({{0, 0}})))  --> tensor([[0.5000, 0.5000]])' }
doc { 'nn.Softmax2d() -> Module', does = 'softmax over the channels (dim -3) of each spatial position.',
  ex = 'print(nn.Softmax2d()(torch.zeros(1, 2, 1, 1)):view(-1))  --> tensor([0.5000, 0.5000])' }
doc { 'nn.GLU({dim=-1}) -> Module', does = 'The gated linear unit: a * sigmoid(b), a and b the two halves along dim.',
  ex = 'print(nn.GLU()(torch.tensor({2, 0})))  --> tensor([1.])' }

doc.section 'Dropout'
doc { 'nn.Dropout({p=0.5, inplace=false}) -> Module',
  does = 'In training, zeros each element with probability p and scales the rest by 1 / (1 - p) (PyTorch\'s mask for the same seed); the identity in eval mode.',
  ex = 'local d = nn.Dropout(0.5)\nprint(d(torch.ones(1000)):mean():item() > 0.8, d:eval()(torch.ones(2)))  --> true tensor([1., 1.])' }
doc { 'nn.Dropout1d({p=0.5, inplace=false}) -> Module', 'nn.Dropout2d({p=0.5, inplace=false}) -> Module',
  'nn.Dropout3d({p=0.5, inplace=false}) -> Module',
  does = 'Dropout of whole channels (of (N, C, L), (N, C, H, W) or (N, C, D, H, W) inputs).',
  ex = 'print(nn.Dropout2d():eval()(torch.ones(1, 2, 2, 2)):sum())  --> tensor(8.)' }
doc { 'nn.AlphaDropout({p=0.5, inplace=false}) -> Module', 'nn.FeatureAlphaDropout({p=0.5, inplace=false}) -> Module',
  does = 'Dropout that keeps the mean and variance of SELU networks (FeatureAlphaDropout: whole channels).',
  ex = 'print(nn.AlphaDropout(0.2):eval()(torch.ones(2)))  --> tensor([1., 1.])' }

doc.section 'Embeddings'
doc { 'nn.Embedding(num_embeddings, embedding_dim, {padding_idx=, max_norm=, norm_type=2, scale_grad_by_freq=false, sparse=false, _weight=, device=, dtype=}) -> Module',
  does = 'A lookup table: an int64 tensor of ids counted from 1 gives their rows of weight (an id of 0 is an error: ids count from 1). padding_idx (1-based) gets a zero row and no gradient.',
  ex = 'local emb = nn.Embedding(10, 3)\nprint(emb(torch.tensor({{1, 2}, {10, 4}}, {dtype = torch.int64})):size())  --> torch.Size([2, 2, 3])' }
doc { 'nn.Embedding.from_pretrained(embeddings, {freeze=true, padding_idx=, max_norm=, norm_type=2, scale_grad_by_freq=false, sparse=false}) -> Embedding',
  'nn.Embedding:from_pretrained(embeddings, {...}) -> Embedding',
  does = 'An Embedding with the given weight (frozen unless freeze = false).',
  pt = 'torch.nn.Embedding.from_pretrained',
  ex = 'local emb = nn.Embedding.from_pretrained(torch.eye(3))\nprint(emb(torch.tensor({2}, {dtype = torch.int64})))  --> tensor([[0., 1., 0.]])' }
doc { 'nn.EmbeddingBag(num_embeddings, embedding_dim, {max_norm=, norm_type=2, scale_grad_by_freq=false, mode=\'mean\', sparse=false, include_last_offset=false, padding_idx=, device=, dtype=}) -> Module',
  'nn.EmbeddingBag.from_pretrained(embeddings, {freeze=true, ...}) -> EmbeddingBag', 'nn.EmbeddingBag:from_pretrained(embeddings, {...}) -> EmbeddingBag',
  does = 'Sums, means or maxima of bags of embeddings: m(input, offsets[, per_sample_weights]) with 1-based ids and offsets (or a 2-D input, one bag per row).',
  ex = 'local bag = nn.EmbeddingBag.from_pretrained(torch.eye(3), {mode = \'sum\'})\nprint(bag(torch.tensor({1, 2, 3}, {dtype = torch.int64}), torch.tensor({1, 3}, {dtype = torch.int64})))  --> tensor([[1., 1., 0.], [0., 0., 1.]])' }

doc.section 'Recurrent'
doc { 'nn.RNN(input_size, hidden_size, {num_layers=1, nonlinearity=\'tanh\', bias=true, batch_first=false, dropout=0, bidirectional=false, device=, dtype=}) -> Module',
  does = 'An Elman RNN: local out, h_n = rnn(x[, h0]); x is (L, N, H_in) ((N, L, H_in) with batch_first, or unbatched (L, H_in), or a PackedSequence).',
  ex = 'local rnn = nn.RNN(4, 8)\nlocal out, h = rnn(torch.randn(5, 2, 4))\nprint(out:size(), h:size())  --> torch.Size([5, 2, 8]) torch.Size([1, 2, 8])' }
doc { 'nn.LSTM(input_size, hidden_size, {num_layers=1, bias=true, batch_first=false, dropout=0, bidirectional=false, proj_size=0, device=, dtype=}) -> Module',
  does = 'A long short-term memory layer (stack): local out, hc = lstm(x[, {h0, c0}]); hc is {h_n, c_n} (a Lua array for Python\'s tuple).',
  ex = 'local lstm = nn.LSTM(4, 8, {num_layers = 2})\nlocal out, hc = lstm(torch.randn(5, 2, 4))\nprint(out:size(), hc[1]:size(), hc[2]:size())  --> torch.Size([5, 2, 8]) torch.Size([2, 2, 8]) torch.Size([2, 2, 8])' }
doc { 'nn.GRU(input_size, hidden_size, {num_layers=1, bias=true, batch_first=false, dropout=0, bidirectional=false, device=, dtype=}) -> Module',
  does = 'A gated recurrent unit layer (stack): local out, h_n = gru(x[, h0]).',
  ex = 'local out, h = nn.GRU(4, 8, {batch_first = true})(torch.randn(2, 5, 4))\nprint(out:size(), h:size())  --> torch.Size([2, 5, 8]) torch.Size([1, 2, 8])' }
doc { 'nn.RNNBase:flatten_parameters()',
  does = 'Nothing, as PyTorch\'s on the CPU (there it packs the weights into one cuDNN buffer); scripts call it after .to() or in forward.',
  pt = 'torch.nn.RNNBase.flatten_parameters',
  ex = 'local lstm = nn.LSTM(2, 3)\nlstm:flatten_parameters()\nprint(lstm(torch.zeros(1, 1, 2)):size())  --> torch.Size([1, 1, 3])' }
doc { 'nn.RNNBase(mode, input_size, hidden_size, {...}) -> Module',
  does = 'The base class of RNN, LSTM and GRU (mode \'RNN_TANH\', \'RNN_RELU\', \'LSTM\' or \'GRU\').',
  ex = 'print(torch.isinstance(nn.LSTM(1, 1), nn.RNNBase))  --> true' }
doc { 'nn.RNNCell(input_size, hidden_size, {bias=true, nonlinearity=\'tanh\', device=, dtype=}) -> Module',
  'nn.LSTMCell(input_size, hidden_size, {bias=true, device=, dtype=}) -> Module',
  'nn.GRUCell(input_size, hidden_size, {bias=true, device=, dtype=}) -> Module',
  does = 'One time step: h = cell(x[, h]); an LSTMCell takes and returns h, c as two values: local h, c = cell(x, {h, c}).',
  ex = 'local cell = nn.LSTMCell(3, 5)\nlocal h, c = cell(torch.randn(2, 3))\nprint(h:size(), c:size())  --> torch.Size([2, 5]) torch.Size([2, 5])' }
doc { 'nn.RNNCellBase(input_size, hidden_size, bias, num_chunks) -> Module',
  does = 'The base class of the cells.',
  ex = 'print(torch.isinstance(nn.GRUCell(1, 1), nn.RNNCellBase))  --> true' }

doc.section 'Attention and transformers'
doc { 'nn.MultiheadAttention(embed_dim, num_heads, {dropout=0, bias=true, add_bias_kv=false, add_zero_attn=false, kdim=, vdim=, batch_first=false, device=, dtype=}) -> Module',
  does = 'Multi-head attention: local out, weights = mha(query, key, value, {key_padding_mask=, need_weights=true, attn_mask=, average_attn_weights=true}).',
  ex = 'local mha = nn.MultiheadAttention(8, 2)\nlocal q = torch.randn(3, 1, 8)\nlocal out, w = mha(q, q, q)\nprint(out:size(), w:size())  --> torch.Size([3, 1, 8]) torch.Size([1, 3, 3])' }
doc { 'nn.TransformerEncoderLayer(d_model, nhead, {dim_feedforward=2048, dropout=0.1, activation=\'relu\', layer_norm_eps=1e-5, batch_first=false, norm_first=false, device=, dtype=}) -> Module',
  does = 'Self-attention then a feed-forward block, each with a residual and layer norm: layer(src, {src_mask=, src_key_padding_mask=}).',
  ex = 'local layer = nn.TransformerEncoderLayer(8, 2, {dim_feedforward = 16})\nprint(layer(torch.randn(4, 1, 8)):size())  --> torch.Size([4, 1, 8])' }
doc { 'nn.TransformerDecoderLayer(d_model, nhead, {dim_feedforward=2048, dropout=0.1, activation=\'relu\', layer_norm_eps=1e-5, batch_first=false, norm_first=false, device=, dtype=}) -> Module',
  does = 'Self-attention, attention over the encoder\'s output, then a feed-forward block: layer(tgt, memory, {tgt_mask=, memory_mask=, ...}).',
  ex = 'local layer = nn.TransformerDecoderLayer(8, 2, {dim_feedforward = 16})\nprint(layer(torch.randn(3, 1, 8), torch.randn(4, 1, 8)):size())  --> torch.Size([3, 1, 8])' }
doc { 'nn.TransformerEncoder(encoder_layer, num_layers, {norm=, enable_nested_tensor=}) -> Module',
  'nn.TransformerDecoder(decoder_layer, num_layers, {norm=}) -> Module',
  does = 'A stack of num_layers copies of the layer (and an optional final norm).',
  ex = 'local enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, {dim_feedforward = 16}), 2)\nprint(#enc.layers, enc(torch.randn(4, 1, 8)):size())  --> 2 torch.Size([4, 1, 8])' }
doc { 'nn.Transformer({d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048, dropout=0.1, activation=\'relu\', custom_encoder=, custom_decoder=, layer_norm_eps=1e-5, batch_first=false, norm_first=false, device=, dtype=}) -> Module',
  does = 'The encoder-decoder transformer: model(src, tgt, {src_mask=, tgt_mask=, memory_mask=, ...}).',
  ex = 'local t = nn.Transformer({d_model = 8, nhead = 2, num_encoder_layers = 1, num_decoder_layers = 1, dim_feedforward = 16})\nprint(t(torch.randn(4, 1, 8), torch.randn(3, 1, 8)):size())  --> torch.Size([3, 1, 8])' }
doc { 'nn.Transformer.generate_square_subsequent_mask(sz) -> Tensor', 'nn.Transformer:generate_square_subsequent_mask(sz) -> Tensor',
  does = 'The causal mask: -inf above the diagonal, 0 elsewhere (sz x sz).',
  pt = 'torch.nn.Transformer.generate_square_subsequent_mask',
  ex = 'print(nn.Transformer.generate_square_subsequent_mask(2))  --> tensor([[0., -inf], [0., 0.]])' }

doc.section 'Losses'
local RED = ' reduction = \'mean\' (default), \'sum\' or \'none\'.'
doc { 'nn.CrossEntropyLoss({weight=, ignore_index=-100, reduction=\'mean\', label_smoothing=0}) -> Module',
  does = 'log_softmax then nll_loss: loss(logits, target) with class targets counted from 1 (an int64 tensor; a class of 0 is an error naming the 1-based count), or class probabilities of the logits\' shape.' .. RED,
  ex = 'local loss = nn.CrossEntropyLoss()\nprint(loss(torch.tensor({{0, 0}}), torch.tensor({1}, {dtype = torch.int64})))  --> tensor(0.6931)' }
doc { 'nn.NLLLoss({weight=, ignore_index=-100, reduction=\'mean\'}) -> Module',
  does = 'The negative log likelihood of log-probabilities and 1-based class targets.' .. RED,
  ex = 'print(nn.NLLLoss()(torch.tensor({{-1, -2}}), torch.tensor({2}, {dtype = torch.int64})))  --> tensor(2.)' }
doc { 'nn.BCELoss({weight=, reduction=\'mean\'}) -> Module',
  does = 'Binary cross entropy of probabilities and 0/1 targets.' .. RED,
  ex = 'print(nn.BCELoss()(torch.tensor({0.5}), torch.tensor({1})))  --> tensor(0.6931)' }
doc { 'nn.BCEWithLogitsLoss({weight=, reduction=\'mean\', pos_weight=}) -> Module',
  does = 'sigmoid then BCELoss, computed stably from logits.' .. RED,
  ex = 'print(nn.BCEWithLogitsLoss()(torch.tensor({0}), torch.tensor({1})))  --> tensor(0.6931)' }
doc { 'nn.MSELoss({reduction=\'mean\'}) -> Module', does = 'The squared error.' .. RED,
  ex = 'print(nn.MSELoss()(torch.tensor({1, 2}), torch.tensor({1, 4})))  --> tensor(2.)' }
doc { 'nn.L1Loss({reduction=\'mean\'}) -> Module', does = 'The absolute error.' .. RED,
  ex = 'print(nn.L1Loss()(torch.tensor({1, 2}), torch.tensor({1, 4})))  --> tensor(1.)' }
doc { 'nn.SmoothL1Loss({reduction=\'mean\', beta=1}) -> Module', does = 'Squared error below beta, absolute error (less beta / 2) above.' .. RED,
  ex = 'print(nn.SmoothL1Loss()(torch.tensor({0, 0}), torch.tensor({0.5, 3})))  --> tensor(1.3125)' }
doc { 'nn.HuberLoss({reduction=\'mean\', delta=1}) -> Module', does = 'The Huber loss (SmoothL1Loss times delta).' .. RED,
  ex = 'print(nn.HuberLoss()(torch.tensor({0}), torch.tensor({3})))  --> tensor(2.5000)' }
doc { 'nn.KLDivLoss({reduction=\'mean\', log_target=false}) -> Module',
  does = 'The Kullback-Leibler divergence of target from input (input as log-probabilities).' .. RED .. ' Also \'batchmean\'.',
  ex = 'print(nn.KLDivLoss({reduction = \'sum\'})(torch.tensor({0.5, 0.5}):log(), torch.tensor({0.5, 0.5})))  --> tensor(0.)' }
doc { 'nn.PoissonNLLLoss({log_input=true, full=false, eps=1e-8, reduction=\'mean\'}) -> Module',
  does = 'The negative log likelihood of a Poisson distribution.' .. RED,
  ex = 'print(nn.PoissonNLLLoss()(torch.tensor({0}), torch.tensor({1})))  --> tensor(1.)' }
doc { 'nn.GaussianNLLLoss({full=false, eps=1e-6, reduction=\'mean\'}) -> Module',
  does = 'The negative log likelihood of a Gaussian: loss(input, target, var).' .. RED,
  ex = 'print(nn.GaussianNLLLoss()(torch.tensor({0}), torch.tensor({0}), torch.tensor({1})))  --> tensor(0.)' }
doc { 'nn.CTCLoss({blank=1, reduction=\'mean\', zero_infinity=false}) -> Module',
  does = 'The connectionist temporal classification loss: loss(log_probs, targets, input_lengths, target_lengths); the blank class counts from 1.' .. RED,
  ex = 'local lp = torch.zeros(2, 1, 3):log_softmax(3)\nprint(nn.CTCLoss()(lp, torch.tensor({{2}}, {dtype = torch.int64}), {2}, {1}):size())  --> torch.Size([])' }
doc { 'nn.MarginRankingLoss({margin=0, reduction=\'mean\'}) -> Module', does = 'max(0, -y (x1 - x2) + margin).' .. RED,
  ex = 'print(nn.MarginRankingLoss()(torch.tensor({1}), torch.tensor({2}), torch.tensor({1})))  --> tensor(1.)' }
doc { 'nn.HingeEmbeddingLoss({margin=1, reduction=\'mean\'}) -> Module', does = 'x where y = 1, max(0, margin - x) where y = -1.' .. RED,
  ex = 'print(nn.HingeEmbeddingLoss()(torch.tensor({0.3}), torch.tensor({-1})))  --> tensor(0.7000)' }
doc { 'nn.SoftMarginLoss({reduction=\'mean\'}) -> Module', does = 'log(1 + exp(-y x)).' .. RED,
  ex = 'print(nn.SoftMarginLoss()(torch.tensor({0}), torch.tensor({1})))  --> tensor(0.6931)' }
doc { 'nn.MultiLabelMarginLoss({reduction=\'mean\'}) -> Module', 'nn.MultiLabelSoftMarginLoss({weight=, reduction=\'mean\'}) -> Module',
  'nn.MultiMarginLoss({p=1, margin=1, weight=, reduction=\'mean\'}) -> Module',
  does = 'Margin losses for multi-label and multi-class classification (class ids counted from 1).' .. RED,
  ex = 'print(nn.MultiMarginLoss()(torch.tensor({{0, 1}}), torch.tensor({2}, {dtype = torch.int64})))  --> tensor(0.)' }
doc { 'nn.CosineEmbeddingLoss({margin=0, reduction=\'mean\'}) -> Module', does = '1 - cos(x1, x2) where y = 1, max(0, cos - margin) where y = -1.' .. RED,
  ex = 'print(nn.CosineEmbeddingLoss()(torch.tensor({{1, 0}}), torch.tensor({{1, 0}}), torch.tensor({1})))  --> tensor(0.)' }
doc { 'nn.TripletMarginLoss({margin=1, p=2, eps=1e-6, swap=false, reduction=\'mean\'}) -> Module',
  'nn.TripletMarginWithDistanceLoss({distance_function=, margin=1, swap=false, reduction=\'mean\'}) -> Module',
  does = 'max(0, d(anchor, positive) - d(anchor, negative) + margin): loss(anchor, positive, negative).' .. RED,
  ex = 'local a = torch.tensor({{0, 0}})\nprint(nn.TripletMarginLoss()(a, a, torch.tensor({{3, 4}})))  --> tensor(0.)' }

doc.section 'Distances'
doc { 'nn.CosineSimilarity({dim=2, eps=1e-8}) -> Module', does = 'The cosine of the angle between x1 and x2 along dim (2: PyTorch\'s 1).',
  ex = 'print(nn.CosineSimilarity()(torch.tensor({{1, 0}}), torch.tensor({{1, 1}})))  --> tensor([0.7071])' }
doc { 'nn.PairwiseDistance({p=2, eps=1e-6, keepdim=false}) -> Module', does = 'The p-norm of x1 - x2 + eps along the last dim.',
  ex = 'print(nn.PairwiseDistance()(torch.tensor({{0, 0}}), torch.tensor({{3, 4}})))  --> tensor([5.0000])' }
