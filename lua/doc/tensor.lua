-- The docs of the Tensor methods and properties that are no torch.* function (those are documented
-- with their torch.* twin in torch.lua or ops.lua). lua/doc/init.lua says how an entry is written.
local doc = ...

doc.section 'Properties'
doc { 'Tensor.shape -> Size',
  does = 'The size, as t:size() (a Lua array printed as torch.Size([...])).',
  ex = 'print(torch.zeros(2, 3).shape)  --> torch.Size([2, 3])' }
doc { 'Tensor.dtype -> dtype',
  does = 'The element type (torch.float32, torch.int64, ...).',
  ex = 'print(torch.ones(1).dtype)  --> torch.float32' }
doc { 'Tensor.device -> device',
  does = 'Where the elements live (.type \'cpu\', \'cuda\' or \'meta\'; .index).',
  ex = 'print(torch.ones(1).device)  --> cpu' }
doc { 'Tensor.ndim -> number',
  does = 'The number of dims (t:dim()).',
  ex = 'print(torch.ones(2, 3).ndim)  --> 2' }
doc { 'Tensor.T -> Tensor', 'Tensor.mT -> Tensor',
  does = 'T: the dims in reverse order (a view); mT: the last two dims swapped (a batch of matrices transposed).',
  ex = 'print(torch.ones(2, 3, 4).T:size(), torch.ones(2, 3, 4).mT:size())  --> torch.Size([4, 3, 2]) torch.Size([2, 4, 3])' }
doc { 'Tensor.is_cuda -> boolean', 'Tensor.is_meta -> boolean',
  does = 'Whether the tensor is on a CUDA device / the meta device (shapes only, no elements).',
  ex = 'print(torch.ones(1).is_cuda, torch.empty(2, {device = \'meta\'}).is_meta)  --> false true' }
doc { 'Tensor.layout -> string',
  does = '\'torch.strided\' (moontorch has no sparse layouts).',
  ex = 'print(torch.ones(1).layout)  --> torch.strided' }
doc { 'Tensor.itemsize -> number', 'Tensor.nbytes -> number', pt = 'Tensor.itemsize (PyTorch 2.1), Tensor.nbytes (PyTorch 2.1)',
  does = 'The bytes of one element / of all elements.',
  ex = 'print(torch.ones(3).itemsize, torch.ones(3).nbytes)  --> 4 12' }
doc { 'Tensor.requires_grad -> boolean',
  does = 'Whether autograd records ops on this tensor; set it on a leaf (t.requires_grad = true, or t:requires_grad_()).',
  ex = 'local w = torch.ones(2)\nw.requires_grad = true\nprint(w.requires_grad, (w * 2).requires_grad)  --> true true' }
doc { 'Tensor.grad -> Tensor',
  does = 'The gradient backward() accumulated into a leaf that requires grad (nil before); p.grad = nil clears it, p.grad = g sets it.',
  ex = 'local w = torch.tensor({1, 2}, {requires_grad = true})\nlocal loss = (w * w):sum()\nloss:backward()\nprint(w.grad)  --> tensor([2., 4.])' }
doc { 'Tensor.grad_fn -> Node',
  does = 'The autograd node that made this tensor (nil for leaves): :name() gives PyTorch\'s name, .next_functions the nodes before it; register_hook and register_prehook.',
  ex = 'local w = torch.ones(2, {requires_grad = true})\nprint((w * 2):sum().grad_fn:name())  --> SumBackward0' }
doc { 'Tensor.is_leaf -> boolean',
  does = 'Whether the tensor was made by the user rather than by an op recorded by autograd.',
  ex = 'local w = torch.ones(2, {requires_grad = true})\nprint(w.is_leaf, (w * 2).is_leaf)  --> true false' }
doc { 'Tensor.retains_grad -> boolean',
  does = 'Whether a non-leaf keeps its .grad (after retain_grad()).',
  ex = 'local w = torch.ones(2, {requires_grad = true})\nlocal y = w * 2\ny:retain_grad()\nprint(y.retains_grad)  --> true' }
doc { 'Tensor.output_nr -> number',
  does = 'Which output of its grad_fn this tensor is (0-based, as PyTorch).',
  ex = 'print(torch.ones(1, {requires_grad = true}).output_nr)  --> 0' }
doc { 'Tensor.data -> Tensor',
  does = 'The tensor\'s elements without autograd history (a detached alias); t.data = other replaces a tensor\'s contents outside autograd.',
  ex = 'local w = torch.ones(2, {requires_grad = true})\nprint(w.data.requires_grad)  --> false' }

doc.section 'Size and memory'
doc { 'Tensor:size([dim]) -> Size or number',
  does = 'The sizes as a Lua array (printed as torch.Size([...])), or one dim\'s size (1-based, negative from the end).',
  ex = 'local t = torch.zeros(2, 3)\nprint(t:size(), t:size(1), t:size(-1))  --> torch.Size([2, 3]) 2 3' }
doc { 'Tensor:stride([dim]) -> {number, ...} or number',
  does = 'The strides (in elements), as a Lua array, or one dim\'s.',
  ex = 'print(torch.zeros(2, 3):stride(1))  --> 3' }
doc { 'Tensor:dim() -> number', 'Tensor:ndimension() -> number',
  does = 'The number of dims.',
  ex = 'print(torch.zeros(2, 3):dim())  --> 2' }
doc { 'Tensor:storage_offset() -> number',
  does = 'Where the tensor\'s first element is in its storage (0-based, in elements).',
  ex = 'print(torch.arange(4):narrow(1, 3, 2):storage_offset())  --> 2' }
doc { 'Tensor:is_contiguous() -> boolean',
  does = 'Whether the elements lie in row-major order without gaps.',
  ex = 'print(torch.ones(2, 3):is_contiguous(), torch.ones(2, 3):t():is_contiguous())  --> true false' }
doc { 'Tensor:element_size() -> number',
  does = 'The bytes of one element.',
  ex = 'print(torch.ones(1, {dtype = torch.float64}):element_size())  --> 8' }
doc { 'Tensor:data_ptr() -> cdata',
  does = 'The address of the first element (a char* cdata), for the FFI.',
  ex = 'local t = torch.ones(2)\nprint(t:data_ptr() == t[1]:data_ptr())  --> true' }
doc { 'Tensor:get_device() -> number',
  does = 'The CUDA device index, or -1 on the CPU.',
  ex = 'print(torch.ones(1):get_device())  --> -1' }

doc.section 'Values out'
doc { 'Tensor:item() -> number or boolean',
  does = 'The value of a one-element tensor as a plain Lua number (a boolean for bool).',
  ex = 'print(torch.tensor({2.5}):item(), torch.tensor({true}):item())  --> 2.5 true' }
doc { 'Tensor:tolist() -> table',
  does = 'The elements as nested Lua arrays of numbers (booleans for bool); a 0-dim tensor gives a number.',
  ex = 'print(torch.tensor({{1, 2}, {3, 4}}):tolist()[2][1])  --> 3' }
doc { 'Tensor:to_sparse_csr() -> SparseCsrTensor',
  does = 'A 2-D tensor\'s nonzeros as a CSR matrix (torch.sparse_csr_tensor; positions counted from 1); its values follow the tensor for autograd.',
  ex = 'print(torch.eye(2):to_sparse_csr():_nnz())  --> 2' }

doc.section 'Dtype and device'
doc { 'Tensor:type([type]) -> string or Tensor',
  does = 'Without an argument, the type name (\'torch.FloatTensor\', ...); with one (a dtype or a type name), the tensor converted to it.',
  ex = 'local t = torch.ones(1)\nprint(t:type(), t:type(\'torch.DoubleTensor\').dtype)  --> torch.FloatTensor torch.float64' }
doc { 'Tensor:type_as(other) -> Tensor',
  does = 'The tensor converted to other\'s dtype.',
  ex = 'print(torch.ones(1):type_as(torch.zeros(1, {dtype = torch.int64})))  --> tensor([1])' }
doc { 'Tensor:float() -> Tensor', 'Tensor:double() -> Tensor', 'Tensor:half() -> Tensor', 'Tensor:bfloat16() -> Tensor',
  'Tensor:long() -> Tensor', 'Tensor:int() -> Tensor', 'Tensor:short() -> Tensor', 'Tensor:char() -> Tensor',
  'Tensor:byte() -> Tensor', 'Tensor:bool() -> Tensor',
  does = 'The tensor converted to float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8 or bool (itself when it already is).',
  ex = 'print(torch.tensor({1.7, -1.7}):long(), torch.tensor({0, 2}):bool())  --> tensor([ 1, -1]) tensor([False,  True])' }
doc { 'Tensor:pin_memory() -> Tensor', 'Tensor:is_pinned() -> boolean',
  does = 'A copy in page-locked host memory (what a non_blocking copy to a GPU needs; an error saying so in a build without CUDA), and whether a tensor is in such memory.',
  ex = 'print(torch.ones(2):is_pinned())  --> false' }
doc { 'Tensor:record_stream(stream)',
  does = 'Marks the tensor\'s memory as used by the work queued on a torch.cuda.Stream, so that the allocator does not reuse it before that work is done.',
  ex = 'if torch.cuda.is_available() then torch.ones(1, {device = \'cuda\'}):record_stream(torch.cuda.current_stream()) end' }
doc { 'Tensor:cpu() -> Tensor', 'Tensor:cuda() -> Tensor',
  does = 'The tensor on the CPU (itself when it is there) / on a CUDA device (an error in a build without CUDA).',
  ex = 'local t = torch.ones(1)\nprint(rawequal(t:cpu(), t))  --> true' }

doc.section 'New tensors like this one'
doc { 'Tensor:new_zeros(size..., {dtype=, device=, requires_grad=}) -> Tensor',
  'Tensor:new_ones(size..., {dtype=, device=, requires_grad=}) -> Tensor',
  'Tensor:new_empty(size..., {dtype=, device=, requires_grad=}) -> Tensor',
  'Tensor:new_full(size, fill_value, {dtype=, device=, requires_grad=}) -> Tensor',
  'Tensor:new_tensor(data, {dtype=, device=, requires_grad=}) -> Tensor',
  does = 'New tensors with this tensor\'s dtype and device unless the options say otherwise.',
  ex = 'local t = torch.ones(1, {dtype = torch.float64})\nprint(t:new_zeros(2), t:new_tensor({1, 2}, {requires_grad = true}).requires_grad)  --> tensor([0., 0.], dtype=torch.float64) true' }
doc { 'Tensor:expand_as(other) -> Tensor', 'Tensor:view_as(other) -> Tensor', 'Tensor:reshape_as(other) -> Tensor',
  does = 'expand, view or reshape to other\'s size.',
  ex = 'print(torch.ones(1):expand_as(torch.zeros(3)))  --> tensor([1., 1., 1.])' }

doc.section 'Autograd'
doc { 'Tensor:backward([gradient], {retain_graph=, create_graph=, inputs=})',
  does = 'Computes the gradients of this tensor (a scalar, else give gradient) with respect to the leaves that require grad, accumulating into their .grad. Options go after the (nil) gradient: y:backward(nil, {retain_graph = true}).',
  ex = 'local w = torch.tensor({1, 2, 3}, {requires_grad = true})\nlocal y = (w * w):sum()\ny:backward(nil, {retain_graph = true})\nprint(w.grad)  --> tensor([2., 4., 6.])' }
doc { 'Tensor:detach() -> Tensor', 'Tensor:detach_() -> self',
  does = 'A view of the same elements outside the autograd graph (detach_: the tensor itself leaves it).',
  ex = 'local w = torch.ones(2, {requires_grad = true})\nprint((w * 2):detach().requires_grad)  --> false' }
doc { 'Tensor:requires_grad_([requires_grad]) -> self',
  does = 'Sets requires_grad (true by default) on a leaf.',
  ex = 'print(torch.ones(2):requires_grad_().requires_grad)  --> true' }
doc { 'Tensor:retain_grad()',
  does = 'Makes a non-leaf tensor keep its .grad after backward.',
  ex = 'local w = torch.ones(2, {requires_grad = true})\nlocal y = w * 3\ny:retain_grad()\ny:sum():backward()\nprint(y.grad)  --> tensor([1., 1.])' }
doc { 'Tensor:register_hook(hook) -> handle',
  does = 'Calls hook(grad) when this tensor\'s gradient is computed; a tensor it returns replaces the gradient. handle:remove() takes the hook away.',
  ex = 'local w = torch.ones(2, {requires_grad = true})\nlocal h = w:register_hook(function(g) return g * 10 end)\nw:sum():backward()\nh:remove()\nprint(w.grad)  --> tensor([10., 10.])' }

doc.section 'In place with Lua functions, more random fills'
doc { 'Tensor:apply_(fn) -> self',
  does = 'Replaces each element x (in order) with fn(x), a Lua function (slow: one call per element).',
  ex = 'print(torch.tensor({1, 2}):apply_(function(x) return x * 10 end))  --> tensor([10., 20.])' }
doc { 'Tensor:map_(other, fn) -> self',
  does = 'Replaces each element x with fn(x, y), y the matching element of other.',
  ex = 'print(torch.tensor({1, 2}):map_(torch.tensor({3, 4}), function(x, y) return x + y end))  --> tensor([4., 6.])' }
doc { 'Tensor:cauchy_(median, sigma, {generator=}) -> self',
  does = 'Fills the tensor with draws from the Cauchy distribution (median 0, sigma 1).',
  ex = 'print(torch.empty(3):cauchy_():size())  --> torch.Size([3])' }
doc { 'Tensor:log_normal_(mean, std, {generator=}) -> self',
  does = 'Fills the tensor with exp of normal draws (mean 1, std 2 of the underlying normal).',
  ex = 'print(torch.empty(3):log_normal_():gt(0):all())  --> true' }
doc { 'Tensor:geometric_(p, {generator=}) -> self',
  does = 'Fills the tensor with draws from the geometric distribution (trials until the first success of probability p).',
  ex = 'print(torch.empty(3):geometric_(0.5):ge(1):all())  --> true' }
