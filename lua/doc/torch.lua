-- The docs of torch.* (moontorch.doc: lua/doc/init.lua says how an entry is written), with the
-- Tensor methods that are the same function; torch.linalg, torch.special and torch.random too.
-- The ops of the op list (torch.add, torch.sum, ...) are in ops.lua.
local doc = ...

doc.section 'Creating tensors'
doc { 'torch.tensor(data, {dtype=, device=, requires_grad=}) -> Tensor',
  does = 'A tensor holding a copy of data: a Lua number, boolean, or nested arrays of them (all rows one length). Numbers give the default float dtype (Lua cannot tell 1 from 1.0), booleans torch.bool.',
  ex = 'print(torch.tensor({{1, 2}, {3, 4}}):size(), torch.tensor({1, 2}, {dtype = torch.int64}))  --> torch.Size([2, 2]) tensor([1, 2])' }
doc { 'torch.as_tensor(data, {dtype=, device=}) -> Tensor',
  does = 'data as a tensor: a tensor itself when it already has the dtype and device asked, else as torch.tensor.',
  ex = 'local t = torch.ones(2)\nprint(rawequal(torch.as_tensor(t), t))  --> true' }
doc { 'torch.scalar_tensor(value, {dtype=, device=, requires_grad=}) -> Tensor',
  does = 'A 0-dim tensor holding value.',
  ex = 'print(torch.scalar_tensor(3))  --> tensor(3.)' }
doc { 'torch.zeros(size..., {dtype=, device=, requires_grad=, out=}) -> Tensor',
  does = 'A tensor of the given size filled with 0; the size as numbers or as one array.',
  ex = 'print(torch.zeros(2, 3):size(), torch.zeros({2}))  --> torch.Size([2, 3]) tensor([0., 0.])' }
doc { 'torch.ones(size..., {dtype=, device=, requires_grad=, out=}) -> Tensor',
  does = 'A tensor of the given size filled with 1; the size as numbers or as one array.',
  ex = 'print(torch.ones(2, {dtype = torch.int64}))  --> tensor([1, 1])' }
doc { 'torch.zeros_like(input, {dtype=, device=, requires_grad=, memory_format=}) -> Tensor',
  does = 'A tensor of input\'s size, dtype, device and layout filled with 0 (the options change them).',
  ex = 'print(torch.zeros_like(torch.ones(2, {dtype = torch.int64})))  --> tensor([0, 0])' }
doc { 'torch.ones_like(input, {dtype=, device=, requires_grad=, memory_format=}) -> Tensor',
  does = 'A tensor of input\'s size, dtype, device and layout filled with 1.',
  ex = 'print(torch.ones_like(torch.zeros(2)))  --> tensor([1., 1.])' }
doc { 'torch.empty_like(input, {dtype=, device=, requires_grad=, memory_format=}) -> Tensor',
  does = 'A tensor of input\'s size, dtype, device and layout, its elements not set.',
  ex = 'print(torch.empty_like(torch.zeros(2, 3)):size())  --> torch.Size([2, 3])' }
doc { 'torch.full_like(input, fill_value, {dtype=, device=, requires_grad=, memory_format=}) -> Tensor',
  does = 'A tensor of input\'s size, dtype, device and layout filled with fill_value.',
  ex = 'print(torch.full_like(torch.zeros(2), 7))  --> tensor([7., 7.])' }
doc { 'torch.empty_strided(size, stride, {dtype=, device=, requires_grad=}) -> Tensor',
  does = 'A tensor with the given sizes and strides (arrays), its elements not set.',
  ex = 'print(table.concat(torch.empty_strided({2, 3}, {1, 2}):stride(), \' \'))  --> 1 2' }
doc { 'torch.Tensor(size...) -> Tensor', 'torch.Tensor',
  does = 'The tensor type: torch.isinstance(x, torch.Tensor) tests for a tensor; called, it makes an empty tensor of the default dtype (as Torch7\'s torch.Tensor(2, 3)). Its methods are the Tensor: entries (?torch.Tensor.add).',
  ex = 'print(torch.isinstance(torch.ones(1), torch.Tensor), torch.Tensor(2, 3):size())  --> true torch.Size([2, 3])' }
doc { 'torch.FloatTensor(size... or data) -> Tensor', 'torch.DoubleTensor(size... or data) -> Tensor',
  'torch.HalfTensor(size... or data) -> Tensor', 'torch.BFloat16Tensor(size... or data) -> Tensor',
  'torch.LongTensor(size... or data) -> Tensor', 'torch.IntTensor(size... or data) -> Tensor',
  'torch.ShortTensor(size... or data) -> Tensor', 'torch.CharTensor(size... or data) -> Tensor',
  'torch.ByteTensor(size... or data) -> Tensor', 'torch.BoolTensor(size... or data) -> Tensor',
  does = 'Torch7\'s typed constructors: with sizes, a zero-filled tensor of that dtype; with a Lua array, torch.tensor of it in that dtype.',
  ex = 'print(torch.LongTensor({1, 2}), torch.FloatTensor(2):size())  --> tensor([1, 2]) torch.Size([2])' }
doc { 'torch.Size(sizes) -> Size',
  does = 'A size (what t:size() returns): a Lua array of numbers that prints as torch.Size([...]) and compares equal to other sizes.',
  ex = 'print(torch.Size({2, 3}), torch.Size({2, 3}) == torch.zeros(2, 3):size())  --> torch.Size([2, 3]) true' }
doc { 'torch.tril_indices(row, col, offset, {dtype=, device=}) -> Tensor',
  does = 'The 1-based (row, column) positions of the lower triangle of a row x col matrix (from `offset`), as a 2 x N int64 tensor.',
  ex = 'print(torch.tril_indices(2, 2))  --> tensor([[1, 2, 2], [1, 1, 2]])' }
doc { 'torch.triu_indices(row, col, offset, {dtype=, device=}) -> Tensor',
  does = 'The 1-based (row, column) positions of the upper triangle of a row x col matrix, as a 2 x N int64 tensor.',
  ex = 'print(torch.triu_indices(2, 2))  --> tensor([[1, 1, 2], [1, 2, 2]])' }
doc { 'torch.vander(x, N, {increasing=}) -> Tensor',
  does = 'The Vandermonde matrix of a 1-D tensor: columns x^(N-1), ..., x^0 (the other way with increasing = true).',
  ex = 'print(torch.vander(torch.tensor({1, 2, 3}), 3))  --> tensor([[1., 1., 1.], [4., 2., 1.], [9., 3., 1.]])' }
doc { 'torch.hann_window(window_length, periodic, {dtype=}) -> Tensor',
  'torch.hamming_window(window_length, periodic, {dtype=}) -> Tensor',
  'torch.bartlett_window(window_length, periodic, {dtype=}) -> Tensor',
  'torch.blackman_window(window_length, periodic, {dtype=}) -> Tensor',
  does = 'Window functions for signal processing, periodic (as for a spectrogram) unless periodic = false; PyTorch\'s numbers.',
  ex = 'print(torch.hann_window(4))  --> tensor([0.0000, 0.5000, 1.0000, 0.5000])' }

doc.section 'Dtypes, devices, layouts'
doc { 'torch.float32', 'torch.float', 'torch.float64', 'torch.double', 'torch.float16', 'torch.half',
  'torch.bfloat16', 'torch.int8', 'torch.char', 'torch.int16', 'torch.short', 'torch.int32', 'torch.int',
  'torch.int64', 'torch.long', 'torch.uint8', 'torch.byte', 'torch.bool',
  does = 'The dtypes, with PyTorch\'s aliases (torch.float is torch.float32, torch.long is torch.int64, ...; torch.char and torch.byte are moontorch\'s, after Torch7). A dtype prints as torch.float32 and has .is_floating_point, .is_signed and .itemsize.',
  pt = 'torch.float32, torch.float, torch.float64, torch.double, torch.float16, torch.half, torch.bfloat16, torch.int8, torch.int16, torch.short, torch.int32, torch.int, torch.int64, torch.long, torch.uint8, torch.bool',
  ex = 'print(torch.float == torch.float32, torch.ones(1, {dtype = torch.long}).dtype, torch.float64.itemsize)  --> true torch.int64 8' }
doc { 'torch.strided', pt = 'torch.strided',
  does = 'The layout name of dense tensors (torch.sparse_csr is the other one).',
  ex = 'print(torch.strided)  --> torch.strided' }
doc { 'torch.get_default_dtype() -> dtype',
  does = 'The dtype of new float tensors (torch.float32 unless set).',
  ex = 'print(torch.get_default_dtype())  --> torch.float32' }
doc { 'torch.set_default_dtype(dtype)',
  does = 'Sets the dtype of new float tensors (torch.float32 or torch.float64; also float16, bfloat16).',
  ex = 'torch.set_default_dtype(torch.float64)\nprint(torch.tensor({1}).dtype)  --> torch.float64\ntorch.set_default_dtype(torch.float32)' }
doc { 'torch.promote_types(type1, type2) -> dtype',
  does = 'The dtype PyTorch\'s type promotion gives an op of the two dtypes.',
  ex = 'print(torch.promote_types(torch.int64, torch.float16))  --> torch.float16' }
doc { 'torch.result_type(tensor1, tensor2) -> dtype',
  does = 'The dtype an elementwise op of the two operands (tensors or Lua numbers) would give.',
  ex = 'print(torch.result_type(torch.tensor({1}, {dtype = torch.int64}), 1.5))  --> torch.float32' }
doc { 'torch.can_cast(from, to) -> boolean',
  does = 'Whether PyTorch\'s casting rules allow from to become to in an in-place op (no float into an integer, ...).',
  ex = 'print(torch.can_cast(torch.float64, torch.int32), torch.can_cast(torch.int32, torch.float64))  --> false true' }
doc { 'torch.finfo(dtype) -> finfo',
  does = 'The limits of a floating-point dtype: .bits, .eps, .max, .min, .tiny (.smallest_normal), .resolution.',
  ex = 'print(torch.finfo(torch.float32).eps)  --> 1.1920928955078e-07' }
doc { 'torch.iinfo(dtype) -> iinfo',
  does = 'The limits of an integer dtype: .bits, .max, .min.',
  ex = 'print(torch.iinfo(torch.int8).max, torch.iinfo(torch.int8).min)  --> 127 -128' }
doc { 'torch.device(type[, index]) -> device', 'torch.device(\'cuda:1\') -> device',
  does = 'A device: \'cpu\', \'cuda\', \'cuda:N\' or \'meta\'; .type and .index; prints as cpu or cuda:0. Asking for CUDA in a build without it is an error saying so.',
  ex = 'local d = torch.device(\'cpu\')\nprint(d, d.type, torch.zeros(1).device == d)  --> cpu cpu true' }
doc { 'torch.contiguous_format', 'torch.preserve_format', 'torch.channels_last', 'torch.channels_last_3d',
  does = 'Memory formats, for clone, to and *_like ({memory_format=}): contiguous_format gives a row-major copy, preserve_format (the default) keeps a dense input\'s strides. channels_last and channels_last_3d are accepted names, but moontorch has no channels-last layout yet: tensors asked for it come out row-major.',
  ex = 'local x = torch.ones(2, 3):t()\nprint(x:clone():is_contiguous(), x:clone({memory_format = torch.contiguous_format}):is_contiguous())  --> false true' }
doc { 'torch.is_tensor(obj) -> boolean',
  does = 'Whether obj is a tensor.',
  ex = 'print(torch.is_tensor(torch.ones(1)), torch.is_tensor({1}))  --> true false' }
doc { 'torch.is_storage(obj) -> boolean', unchecked_args = true,
  does = 'false: moontorch has no storage objects of their own.',
  ex = 'print(torch.is_storage(torch.ones(1)))  --> false' }
doc { 'torch.is_floating_point(input) -> boolean', 'Tensor:is_floating_point() -> boolean',
  does = 'Whether the tensor\'s dtype is a floating-point one.',
  ex = 'print(torch.is_floating_point(torch.ones(1)), torch.arange(2):is_floating_point())  --> true false' }
doc { 'torch.is_complex(input) -> boolean', 'Tensor:is_complex() -> boolean', unchecked_args = true,
  does = 'false: moontorch has no complex dtypes.',
  ex = 'print(torch.is_complex(torch.ones(1)))  --> false' }
doc { 'torch.is_nonzero(input) -> boolean', 'Tensor:is_nonzero() -> boolean',
  does = 'Whether a one-element tensor\'s value is nonzero (an error for more or fewer elements).',
  ex = 'print(torch.is_nonzero(torch.tensor({0})))  --> false' }
doc { 'torch.is_same_size(input, other) -> boolean', 'Tensor:is_same_size(other) -> boolean',
  does = 'Whether the two tensors have the same size.',
  ex = 'print(torch.is_same_size(torch.ones(2), torch.zeros(2)))  --> true' }
doc { 'torch.numel(input) -> number', 'Tensor:numel() -> number', 'Tensor:nelement() -> number',
  does = 'The number of elements.',
  ex = 'print(torch.numel(torch.ones(2, 3)), torch.ones(4):nelement())  --> 6 4' }

doc.section 'Classes and help'
doc { 'torch.class(name[, parent]) -> class, parent',
  does = 'Torch7\'s classes: registers a class under name (so torch.save/load rebuild its instances) with an optional parent (a class or its name). Define __init and methods on the class; call it to construct.',
  pt = false,
  ex = 'local Point = torch.class(\'DocPoint\')\nfunction Point:__init(x) self.x = x end\nfunction Point:twice() return 2 * self.x end\nprint(Point(21):twice(), torch.typename(Point(1)))  --> 42 DocPoint' }
doc { 'torch.deepcopy(value) -> copy', pt = false,
  does = 'A deep copy, as Python\'s copy.deepcopy: tensors cloned (parameters stay parameters), tables and modules copied with their classes (parametrized, pruned and fx modules too), values shared inside shared once in the copy.',
  ex = 'local m = nn.Linear(2, 2)\nlocal c = torch.deepcopy(m)\nprint(torch.equal(c.weight, m.weight), rawequal(c.weight, m.weight))  --> true false' }
doc { 'torch.typename(obj) -> string',
  does = 'The class name of an object made by torch.class (a module: \'nn.Linear\'), or a tensor\'s type (\'torch.FloatTensor\'); nil for other values. For PyTorch\'s m.__class__.__name__, take the part after the last dot.',
  pt = false,
  ex = 'print(torch.typename(nn.Linear(1, 1)), torch.typename(torch.ones(1)))  --> nn.Linear torch.FloatTensor\nprint(torch.typename(nn.Conv2d(1, 1, 1)):match(\'[^.]+$\'))  --> Conv2d' }
doc { 'torch.isinstance(obj, class) -> boolean',
  does = 'Whether obj is an instance of class (a class, a class name, torch.Tensor, or an array of them), as Python\'s isinstance.',
  pt = false,
  ex = 'print(torch.isinstance(nn.Linear(1, 1), nn.Module), torch.isinstance(1, torch.Tensor))  --> true false' }
doc { 'torch.help(value[, name]) -> string', 'torch.help(name) -> string',
  does = 'The documentation of a function, class, module or other value (or of a name, \'torch.zeros\'): the text the REPL prints for ?name, from the same source as docs/reference/.',
  pt = false,
  ex = 'print(torch.help(torch.zeros):match(\'^[^\\n]*\'))  --> torch.zeros(size..., {dtype=, device=, requires_grad=, out=}) -> Tensor' }
doc { 'torch.config() -> string',
  does = 'What this build runs with, as text: the version, the CPU and the SIMD level of the kernels, the BLAS and its kernel set (and who chose it), threads, CUDA (PyTorch\'s torch.__config__.show()). moontorch --version prints it.',
  pt = 'torch.__config__.show',
  ex = 'print(torch.config():match(\'^moontorch\') ~= nil)  --> true' }
doc { 'torch.ffi',
  does = 'The LuaJIT FFI binding of libmoontorch (its C API, core/moontorch.h): .C the library, .libpath where it was loaded from. For extending moontorch in C; scripts need none of it.',
  pt = false,
  ex = 'print(type(torch.ffi.libpath))  --> string' }
doc { 'torch.List', 'torch.List.of(array) -> List', 'torch.List.is(value) -> boolean',
  keys = { 'torch.List:of', 'torch.List:is' },
  does = 'What parameters(), buffers(), children() and modules() return: a Lua array (list[i], #list, ipairs) that also iterates the Python way, for p in model:parameters() do. List.of makes an array one; List.is tells one.',
  pt = false,
  ex = 'local n = 0\nfor p in nn.Linear(2, 2):parameters() do n = n + p:numel() end\nprint(n, torch.List.is(nn.Linear(1, 1):parameters()), torch.List.of({1, 2}))  --> 6 true [1, 2]' }
doc { 'torch.OrderedDict() -> OrderedDict', 'torch.OrderedDict(pairs) -> OrderedDict',
  does = 'A dict that keeps insertion order (what state_dict returns): d[k] = v inserts or replaces in place, d[k] = nil deletes; keys(), values() and items() in order; from an array of {key, value} pairs.',
  pt = 'collections.OrderedDict',
  ex = 'local d = torch.OrderedDict({{\'b\', 1}, {\'a\', 2}})\nd.c = 3\nprint(table.concat(d:keys(), \' \'), d.a)  --> b a c 2' }
doc { 'torch.OrderedDict:keys() -> {key, ...}', 'torch.OrderedDict:values() -> {value, ...}',
  'torch.OrderedDict:items() -> iterator', 'torch.OrderedDict:len() -> number', 'torch.OrderedDict:copy() -> OrderedDict',
  'torch.OrderedDict:get(key[, default]) -> value', 'torch.OrderedDict:pop(key[, default]) -> value',
  'torch.OrderedDict:update(other)', 'torch.OrderedDict:clear()',
  'torch.OrderedDict:move_to_end(key[, last])', 'torch.OrderedDict:contains(key) -> boolean',
  does = 'Python\'s dict methods, in insertion order: keys and values as arrays, items as an iterator of key, value (#d is 0 under LuaJIT: count with len()).',
  pt = 'collections.OrderedDict',
  ex = 'local d = torch.OrderedDict({{\'x\', 1}, {\'y\', 2}})\nfor k, v in d:items() do print(k, v) end\nprint(d:len(), d:pop(\'x\'), d:len())  --> 2 1 1' }

doc.section 'Randomness'
doc { 'torch.manual_seed(seed) -> Generator', 'torch.random.manual_seed(seed) -> Generator',
  does = 'Seeds the default generator: afterwards rand, randn, randint, randperm, the in-place fills, dropout and every module\'s initialization draw PyTorch\'s CPU numbers for that seed.',
  ex = 'torch.manual_seed(0)\nprint(torch.randint(0, 10, {5}))  --> tensor([4, 9, 3, 0, 3])' }
doc { 'torch.seed() -> number', 'torch.random.seed() -> number',
  does = 'Seeds the default generator from a non-deterministic source and returns the seed.',
  ex = 'print(type(torch.seed()))  --> number' }
doc { 'torch.initial_seed() -> number', 'torch.random.initial_seed() -> number',
  does = 'The seed the default generator was last seeded with.',
  ex = 'torch.manual_seed(7)\nprint(torch.initial_seed())  --> 7' }
doc { 'torch.get_rng_state() -> Tensor', 'torch.random.get_rng_state() -> Tensor',
  does = 'The default generator\'s state, as a uint8 tensor (for set_rng_state).',
  ex = 'local s = torch.get_rng_state()\nlocal a = torch.rand(1)\ntorch.set_rng_state(s)\nprint(torch.equal(a, torch.rand(1)))  --> true' }
doc { 'torch.set_rng_state(state)', 'torch.random.set_rng_state(state)',
  does = 'Restores the default generator\'s state from what get_rng_state returned.',
  ex = 'local s = torch.get_rng_state()\ntorch.rand(3)\ntorch.set_rng_state(s)' }
doc { 'torch.default_generator',
  does = 'The default generator (a torch.Generator) that random functions draw from unless given {generator=}.',
  ex = 'torch.default_generator:manual_seed(0)\nprint(torch.default_generator:initial_seed())  --> 0' }
doc { 'torch.Generator([device]) -> Generator',
  does = 'A random number generator of its own (seeded with PyTorch\'s default seed), for {generator=} options: rand, randn, randperm, DataLoader, random_split, ...',
  ex = 'local g = torch.Generator():manual_seed(42)\nprint(torch.rand(1, {generator = g}):size())  --> torch.Size([1])' }
doc { 'torch.Generator:manual_seed(seed) -> self', 'torch.Generator:seed() -> number',
  'torch.Generator:initial_seed() -> number', 'torch.Generator:get_state() -> Tensor',
  'torch.Generator:set_state(state) -> self',
  does = 'A generator\'s seeding and state, as torch.manual_seed & co. for the default one.',
  ex = 'local g = torch.Generator():manual_seed(3)\nlocal s = g:get_state()\nlocal a = torch.rand(2, {generator = g})\ng:set_state(s)\nprint(torch.equal(a, torch.rand(2, {generator = g})), g:initial_seed())  --> true 3' }
doc { 'torch.rand(size..., {dtype=, device=, generator=, requires_grad=}) -> Tensor',
  does = 'Numbers drawn uniformly from [0, 1), PyTorch\'s after the same seed.',
  ex = 'torch.manual_seed(0)\nprint(torch.rand(2))  --> tensor([0.4963, 0.7682])' }
doc { 'torch.randn(size..., {dtype=, device=, generator=, requires_grad=}) -> Tensor',
  does = 'Numbers drawn from the standard normal distribution, PyTorch\'s after the same seed.',
  ex = 'torch.manual_seed(0)\nprint(torch.randn(2))  --> tensor([ 1.5410, -0.2934])' }
doc { 'torch.randint(low, high, size, {dtype=, device=, generator=, requires_grad=}) -> Tensor',
  'torch.randint(high, size, {dtype=, ...}) -> Tensor',
  does = 'Integers drawn uniformly from [low, high) (low 0 by default; values, not positions); the size is an array; int64 unless dtype says otherwise.',
  ex = 'torch.manual_seed(0)\nprint(torch.randint(3, 7, {4}))  --> tensor([3, 6, 4, 3])' }
doc { 'torch.rand_like(input, {dtype=, device=, generator=, requires_grad=}) -> Tensor',
  does = 'rand of input\'s size, dtype and device.',
  ex = 'print(torch.rand_like(torch.zeros(2, 3)):size())  --> torch.Size([2, 3])' }
doc { 'torch.randn_like(input, {dtype=, device=, generator=, requires_grad=}) -> Tensor',
  does = 'randn of input\'s size, dtype and device.',
  ex = 'print(torch.randn_like(torch.zeros(2, {dtype = torch.float64})).dtype)  --> torch.float64' }
doc { 'torch.randint_like(input, low, high, {dtype=, device=, generator=}) -> Tensor',
  'torch.randint_like(input, high, {...}) -> Tensor',
  does = 'randint of input\'s size, dtype and device.',
  ex = 'print(torch.randint_like(torch.zeros(3), 5):lt(5):all())  --> true' }
doc { 'torch.normal(mean, std[, size], {generator=, dtype=, out=}) -> Tensor',
  does = 'Normal draws with the given means and standard deviations (tensors, or numbers with a size).',
  ex = 'print(torch.normal(0, 1, {2, 3}):size(), torch.normal(torch.zeros(2), 1):size())  --> torch.Size([2, 3]) torch.Size([2])' }

doc.section 'Autograd modes'
doc { 'torch.no_grad(block) -> ...', 'torch.no_grad.wrap(fn) -> function', 'torch.autograd.no_grad(block) -> ...',
  pt = 'torch.no_grad, torch.autograd.no_grad',
  does = 'Runs block (a function of no arguments) with autograd recording nothing and returns what it returns: PyTorch\'s `with torch.no_grad():`. no_grad.wrap(fn) is the decorator @torch.no_grad(): a function that runs fn so; a function that takes arguments, given to no_grad itself, is wrapped too (m:apply(torch.no_grad(function(m) ... end))). The mode comes back after the block, also when it fails.',
  ex = 'local x = torch.ones(2, {requires_grad = true})\nlocal y = torch.no_grad(function() return x * 2 end)\nlocal f = torch.no_grad.wrap(function(a) return a * 3 end)\nprint(y.requires_grad, f(x).requires_grad)  --> false false' }
doc { 'torch.enable_grad(block) -> ...', 'torch.enable_grad.wrap(fn) -> function', 'torch.autograd.enable_grad(block) -> ...',
  pt = 'torch.enable_grad, torch.autograd.enable_grad',
  does = 'Runs block with autograd recording, inside a no_grad too; .wrap(fn) wraps a function so.',
  ex = 'local x = torch.ones(1, {requires_grad = true})\nlocal y = torch.no_grad(function() return torch.enable_grad(function() return x * 2 end) end)\nprint(y.requires_grad)  --> true' }
doc { 'torch.inference_mode(block) -> ...', 'torch.inference_mode.wrap(fn) -> function', pt = 'torch.inference_mode',
  does = 'Runs block without autograd, as no_grad (PyTorch\'s inference mode); .wrap(fn) wraps a function so.',
  ex = 'print(torch.inference_mode(function() return torch.is_inference_mode_enabled() end))  --> true' }
doc { 'torch.set_grad_enabled(mode)',
  does = 'Turns the recording of autograd graphs on or off from here on.',
  ex = 'torch.set_grad_enabled(false)\nprint(torch.is_grad_enabled())  --> false\ntorch.set_grad_enabled(true)' }
doc { 'torch.is_grad_enabled() -> boolean',
  does = 'Whether ops record autograd graphs now.',
  ex = 'print(torch.is_grad_enabled())  --> true' }
doc { 'torch.is_inference_mode_enabled() -> boolean',
  does = 'Whether inference mode is on (inside torch.inference_mode).',
  ex = 'print(torch.is_inference_mode_enabled())  --> false' }

doc.section 'Threads, printing, files'
doc { 'torch.Timer() -> Timer',
  does = 'Torch7\'s stopwatch: it counts from its creation; time() gives the seconds so far as {real = wall clock, user = CPU time in user mode, sys = CPU time in the system} (the CPU times of the whole process).',
  pt = false,
  ex = 'local timer = torch.Timer()\nlocal t = timer:time()\nprint(type(t.real), type(t.user), type(t.sys))  --> number number number' }
doc { 'torch.Timer:time() -> {real=, user=, sys=}', 'torch.Timer:stop() -> self', 'torch.Timer:resume() -> self',
  'torch.Timer:reset() -> self',
  does = 'The seconds counted so far; stop() pauses the count, resume() goes on, reset() sets it to 0 (a stopped timer stays stopped).',
  pt = false,
  ex = 'local timer = torch.Timer():stop()\nlocal a = timer:time().real\nprint(timer:time().real == a, timer:reset():time().real)  --> true 0' }
doc { 'torch.set_num_threads(n)',
  does = 'The number of threads the CPU kernels and the BLAS use.',
  ex = 'local n = torch.get_num_threads()\ntorch.set_num_threads(1)\nprint(torch.get_num_threads())  --> 1\ntorch.set_num_threads(n)' }
doc { 'torch.get_num_threads() -> number',
  does = 'The number of threads the CPU kernels use.',
  ex = 'print(torch.get_num_threads() >= 1)  --> true' }
doc { 'torch.set_printoptions({precision=, threshold=, edgeitems=, linewidth=, profile=, sci_mode=})',
  does = 'How tensors print: decimals, how many elements before summarizing with ..., how many at each edge, the line width, a profile (\'default\', \'short\', \'full\'), scientific notation on or off (automatic unless given).',
  ex = 'torch.set_printoptions({precision = 2})\nprint(torch.tensor({1 / 3}))  --> tensor([0.33])\ntorch.set_printoptions({profile = \'default\'})' }
doc { 'torch.save(obj, path_or_file, {sync=})',
  does = 'Writes obj (tensors, Lua values, tables with cycles, instances of registered classes: whole modules and optimizers) to a file, or an open Lua file handle, in moontorch\'s checksummed format, atomically (sync = false skips the fsyncs).',
  ex = 'local path = os.tmpname()\ntorch.save({w = torch.ones(2), step = 3}, path)\nprint(torch.load(path).step)  --> 3\nos.remove(path)' }
doc { 'torch.load(path_or_file, {mmap=, map_location=}) -> value',
  does = 'Reads what torch.save wrote (views keep sharing their storage; mmap = true maps the file instead of reading it). A damaged file is an error, never a crash. PyTorch\'s own .pt files (zip or legacy) are read by torch.load_pytorch.',
  ex = 'local path = os.tmpname()\ntorch.save(torch.arange(3), path)\nprint(torch.load(path))  --> tensor([0, 1, 2])\nos.remove(path)' }
doc { 'torch.load_pytorch(path_or_file, {map_location=}) -> value',
  does = 'Reads a file PyTorch\'s torch.save wrote (the zip archive or the legacy format) with a restricted unpickler in C that accepts what PyTorch\'s weights_only=True accepts and runs nothing: tensors (views share storages; Parameter and requires_grad kept), OrderedDict (a torch.OrderedDict, its _metadata kept), dicts, lists and tuples (arrays), numbers, strings, bools; None leaves an entry out. Any other Python global is an error naming it. A state_dict goes straight into model:load_state_dict. torch.load calls it for such files.',
  pt = 'torch.load',
  ex = 'local sd = torch.load_pytorch(\'spec/support/pytorch/mlp.pt\')\nprint(sd:keys()[1], sd[\'0.weight\']:size())  --> 0.weight torch.Size([16, 6])' }
doc { 'torch.load_t7(path, {trust=, format=, long_size=}) -> value',
  does = 'Reads a file Torch7\'s torch.save wrote (binary, with 8- or 4-byte longs told apart, or ASCII: format = \'binary\' or \'ascii\' and long_size = 4 or 8 force them): numbers, strings, booleans, tables (shared and cyclic ones kept), tensors and storages of every Torch7 type (CUDA\'s too) as moontorch tensors, and Torch7\'s nn modules as moontorch modules with their weights (Linear, SpatialConvolution(MM), SpatialMaxPooling, (Spatial)BatchNormalization, ReLU, Tanh, Sigmoid, Identity, Threshold, Sequential, Concat, View, Reshape, Dropout, rnn\'s SeqLSTM); other classes become plain tables with their class under __typename. A Lua function stored in the file is refused unless trust = true. A damaged file is an error, never a crash.',
  pt = false,
  ex = 'local W = dofile(\'spec/support/t7_writer.lua\')  -- (Torch7\'s layout, for the example)\nlocal path = os.tmpname()\nlocal f = io.open(path, \'wb\')\nf:write(W.serialize(W.module(\'nn.Linear\', {weight = W.tensor(\'Float\', {1, 2}, {1, 2}), bias = W.tensor(\'Float\', {1}, {0.5})})))\nf:close()\nlocal m = torch.load_t7(path)\nprint(m(torch.tensor({3, 4})))  --> tensor([11.5000], grad_fn=<AddBackward0>)\nos.remove(path)' }
doc { 'torch.export(module, example_inputs, path, {check=}) -> number of nodes',
  does = 'Traces the module (torch.fx.symbolic_trace), lowers it to a program of the op table\'s ops with the shapes of the example inputs (a tensor or a table of them), and writes the program and its weights to one file in torch.save\'s checksummed format (loading it runs nothing). The program is loaded back, run from C and compared with the module on the example inputs (check = false skips that). Exports Linear, Conv1d/2d, BatchNorm1d/2d and Dropout in eval mode, LayerNorm, the usual activations, Softmax/LogSoftmax, Max/Avg/AdaptiveAvg pooling, Flatten, Identity, self-attention MultiheadAttention and TransformerEncoderLayer without masks, arithmetic and shape methods; anything else is an error naming it. The file runs without Lua: mt_program_load / mt_program_run in libmoontorch, and the command moontorch-run.',
  pt = 'torch.jit.trace, torch.jit.save',
  ex = 'local m = nn.Sequential(nn.Linear(3, 2), nn.ReLU()):eval()\nlocal path = os.tmpname()\nprint(torch.export(m, {torch.randn(4, 3)}, path))  --> 3\nos.remove(path)' }
doc { 'torch.load_program(path) -> torch.Program',
  does = 'Loads a program torch.export wrote and gives a module that runs it through the C runner (mt_program_run): inputs of the exported dtypes and shapes, the outputs as the module gave them. A damaged or hostile file is an error naming what is wrong, never a crash.',
  pt = 'torch.jit.load',
  ex = 'local m = nn.Sequential(nn.Linear(3, 2)):eval()\nlocal x = torch.randn(4, 3)\nlocal path = os.tmpname()\ntorch.export(m, {x}, path)\nlocal p = torch.load_program(path)\nprint(torch.equal(p(x), m(x)))  --> true\nos.remove(path)' }
doc { 'torch.onnx.load(path) -> GraphModule',
  does = 'Reads an ONNX model (what PyTorch\'s torch.onnx.export and other frameworks write; decoded by protobuf-c in C, every tensor checked) and builds a torch.fx.GraphModule that runs it, in evaluation mode: each ONNX node a call_function node named onnx.<OpType>, the initializers and Constant nodes buffers of the module. Ops: Gemm, MatMul, Conv, MaxPool, AveragePool, GlobalAveragePool/GlobalMaxPool, BatchNormalization, LayerNormalization, InstanceNormalization, Relu, LeakyRelu, Elu, Sigmoid, Tanh, Gelu, Erf, Softplus, HardSigmoid, Clip, Softmax, LogSoftmax, Add, Sub, Mul, Div, Pow, Sqrt, Exp, Log, Neg, Abs, Reciprocal, Floor, Ceil, Sin, Cos, Sign, Not, Equal, Less, Greater, Where, Max, Min, Flatten, Reshape, Transpose, Concat, Unsqueeze, Squeeze, Shape, Size, Gather, Slice (step 1), Expand, Pad, Cast, Constant, ConstantOfShape, ReduceMean/Sum/Max/Min, Identity, Dropout, LSTM and GRU (default activations, no sequence_lens). Any other op, control flow (If, Loop), external data or a type moontorch has not is an error naming it and the node; a damaged file is an error, never a crash.',
  pt = false,
  ex = 'local gm = torch.onnx.load(\'spec/support/onnx/mlp.onnx\')  -- PyTorch\'s export of an MLP\nprint(gm(torch.zeros(5, 6)):size())  --> torch.Size([5, 4])' }
doc { 'torch.onnx.export(module, example_inputs, path, {opset=17, input_names=, output_names=, dynamic_axes=}) -> number of nodes',
  does = 'Writes a module as an ONNX file (a ModelProto packed by protobuf-c; ir_version 8, opsets 13 to 17, default 17): it is traced (torch.fx.symbolic_trace) and each leaf module, function and method lowered to ONNX ops, every op also computed by torch.onnx.load\'s own implementation on the example inputs (a tensor or a table of them), so the graph\'s outputs are compared with the module\'s before anything is written (an export that would not reproduce the module is an error). Weights are initializers named after the parameters. input_names/output_names default to input/output (input_1, ... for several). dynamic_axes = {name = {dim, ...}} or {name = {[dim] = \'batch\'}} (dims from 1) makes those sizes symbolic (dim_param); the graph is computed again on inputs one larger along them and every reshape written to follow them (or an error names it). Lowers: Linear (Gemm, or MatMul + Add), Conv1d/2d/3d, MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvg/MaxPool1d/2d where the output divides the input, BatchNorm1d/2d/3d and Dropout in eval mode, LayerNorm (LayerNormalization; its arithmetic before opset 17), GroupNorm, ReLU, Tanh, Sigmoid, GELU (Erf, or tanh form), SiLU, LeakyReLU, ELU, Hardtanh, ReLU6, Hardsigmoid, Softplus, Softmax, LogSoftmax, Flatten, Identity, Embedding (Gather; the graph takes moontorch\'s positions from 1), MultiheadAttention without masks (need_weights too), TransformerEncoderLayer and TransformerEncoder without masks, LSTM and GRU (ONNX LSTM/GRU, one per layer, both directions; PyTorch\'s gate order rewritten into ONNX\'s; initial states from the inputs, a table argument such as {h0, c0} giving one input each, <name>_1, <name>_2); + - * /, torch.add/sub/mul/div/matmul/cat/transpose/permute/reshape/flatten, the activations and F.linear/softmax; the methods view, reshape, flatten, permute, transpose, t, contiguous, (un)squeeze, mean, sum, size, dim, the activations and arithmetic. Anything else is an error naming it (LSTM projections, attention masks and RNN are not written). The files pass onnx.checker (full_check) in spec/onnx_export_spec.lua.',
  pt = 'torch.onnx.export',
  ex = 'local m = nn.Sequential(nn.Linear(3, 2), nn.ReLU()):eval()\nlocal path = os.tmpname()\nprint(torch.onnx.export(m, torch.randn(4, 3), path, {dynamic_axes = {input = {[1] = \'batch\'}}}))  --> 2\nprint(torch.onnx.load(path)(torch.ones(7, 3)):size())  --> torch.Size([7, 2])\nos.remove(path)' }
doc { 'torch.onnx', does = 'ONNX files: torch.onnx.load and torch.onnx.export. A moontorch built without protobuf-c (-DMT_ONNX=OFF) has both, and they raise an error saying so.', pt = 'torch.onnx',
  ex = 'print(type(torch.onnx.load), type(torch.onnx.export))  --> function function' }
doc { 'torch.save_safetensors(tensors, path, metadata, {sync=})',
  does = 'Writes a table of tensors by name to a .safetensors file (byte for byte as the reference writer); metadata an optional table of strings.',
  pt = 'safetensors.torch.save_file',
  ex = 'local path = os.tmpname()\ntorch.save_safetensors({w = torch.ones(2)}, path)\nprint(torch.load_safetensors(path).w)  --> tensor([1., 1.])\nos.remove(path)' }
doc { 'torch.load_safetensors(path, {ordered=}) -> tensors, metadata',
  does = 'Reads a .safetensors file (Python\'s safetensors, Hugging Face models): a table of tensors by name (a torch.OrderedDict in file order with ordered = true) and the metadata.',
  pt = 'safetensors.torch.load_file',
  ex = 'local path = os.tmpname()\ntorch.save_safetensors({b = torch.zeros(1)}, path)\nprint(torch.load_safetensors(path).b)  --> tensor([0.])\nos.remove(path)' }

doc.section 'Namespaces'
doc { 'torch.nn', does = 'The neural-network library (moontorch.nn): modules, nn.functional, nn.init, nn.utils.',
  pt = 'torch.nn', ex = 'print(torch.nn == require(\'moontorch.nn\'))  --> true' }
doc { 'torch.optim', does = 'The optimizers and optim.lr_scheduler (moontorch.optim).',
  pt = 'torch.optim', ex = 'print(torch.optim.SGD ~= nil)  --> true' }
doc { 'torch.cuda', does = 'CUDA\'s functions (torch.cuda.is_available() is false in a build without CUDA).',
  pt = 'torch.cuda', ex = 'print(type(torch.cuda.is_available()))  --> boolean' }

doc.section 'Math beyond the op list'
doc { 'torch.acosh(input) -> Tensor', 'Tensor:acosh() -> Tensor', 'torch.arccosh(input) -> Tensor', 'Tensor:arccosh() -> Tensor',
  does = 'The inverse hyperbolic cosine of each element.',
  ex = 'print(torch.acosh(torch.tensor({1})))  --> tensor([0.])' }
doc { 'torch.asinh(input) -> Tensor', 'Tensor:asinh() -> Tensor', 'torch.arcsinh(input) -> Tensor', 'Tensor:arcsinh() -> Tensor',
  does = 'The inverse hyperbolic sine of each element.',
  ex = 'print(torch.asinh(torch.tensor({0})))  --> tensor([0.])' }
doc { 'torch.atanh(input) -> Tensor', 'Tensor:atanh() -> Tensor', 'torch.arctanh(input) -> Tensor', 'Tensor:arctanh() -> Tensor',
  does = 'The inverse hyperbolic tangent of each element.',
  ex = 'print(torch.atanh(torch.tensor({0})))  --> tensor([0.])' }
doc { 'torch.erfinv(input) -> Tensor', 'Tensor:erfinv() -> Tensor',
  does = 'The inverse error function of each element.',
  ex = 'print(torch.erfinv(torch.tensor({0})))  --> tensor([0.])' }
doc { 'torch.deg2rad(input) -> Tensor', 'Tensor:deg2rad() -> Tensor',
  does = 'Degrees to radians.', ex = 'print(torch.deg2rad(torch.tensor({180})))  --> tensor([3.1416])' }
doc { 'torch.rad2deg(input) -> Tensor', 'Tensor:rad2deg() -> Tensor',
  does = 'Radians to degrees.', ex = 'print(torch.rad2deg(torch.tensor({math.pi})))  --> tensor([180.])' }
doc { 'torch.logaddexp(input, other) -> Tensor', 'Tensor:logaddexp(other) -> Tensor',
  does = 'log(exp(input) + exp(other)), computed without overflow.',
  ex = 'print(torch.logaddexp(torch.tensor({0}), torch.tensor({0})))  --> tensor([0.6931])' }
doc { 'torch.logaddexp2(input, other) -> Tensor', 'Tensor:logaddexp2(other) -> Tensor',
  does = 'log2(2^input + 2^other).', ex = 'print(torch.logaddexp2(torch.tensor({1}), torch.tensor({1})))  --> tensor([2.])' }
doc { 'torch.signbit(input) -> Tensor', 'Tensor:signbit() -> Tensor',
  does = 'true where the sign bit is set (negative numbers and -0).',
  ex = 'print(torch.signbit(torch.tensor({-1, 0, 1})))  --> tensor([ True, False, False])' }
doc { 'torch.isposinf(input) -> Tensor', 'Tensor:isposinf() -> Tensor',
  does = 'true where an element is +inf.', ex = 'print(torch.isposinf(torch.tensor({math.huge, -math.huge})))  --> tensor([ True, False])' }
doc { 'torch.isneginf(input) -> Tensor', 'Tensor:isneginf() -> Tensor',
  does = 'true where an element is -inf.', ex = 'print(torch.isneginf(torch.tensor({math.huge, -math.huge})))  --> tensor([False,  True])' }
doc { 'torch.isreal(input) -> Tensor', 'Tensor:isreal() -> Tensor',
  does = 'true everywhere (moontorch has no complex dtypes).', ex = 'print(torch.isreal(torch.ones(2)))  --> tensor([True, True])' }
doc { 'torch.heaviside(input, values) -> Tensor', 'Tensor:heaviside(values) -> Tensor',
  does = 'The Heaviside step: 0 below 0, 1 above, values where input is 0.',
  ex = 'print(torch.heaviside(torch.tensor({-1, 0, 2}), torch.tensor({0.5})))  --> tensor([0.0000, 0.5000, 1.0000])' }
doc { 'torch.angle(input) -> Tensor', 'Tensor:angle() -> Tensor',
  does = 'The angle of each (real) element: pi for negative numbers, 0 otherwise.',
  ex = 'print(torch.angle(torch.tensor({-1, 1})))  --> tensor([3.1416, 0.0000])' }
doc { 'torch.sgn(input) -> Tensor', 'Tensor:sgn() -> Tensor',
  does = 'sign, for real tensors.', ex = 'print(torch.sgn(torch.tensor({-2, 3})))  --> tensor([-1., 1.])' }
doc { 'torch.positive(input) -> Tensor', 'Tensor:positive() -> Tensor',
  does = 'The input itself (unary plus).', ex = 'print(torch.positive(torch.tensor({-2})))  --> tensor([-2.])' }
doc { 'torch.gcd(input, other) -> Tensor', 'Tensor:gcd(other) -> Tensor',
  does = 'The greatest common divisor of integer elements.',
  ex = 'print(torch.gcd(torch.tensor({12}, {dtype = torch.int64}), torch.tensor({18}, {dtype = torch.int64})))  --> tensor([6])' }
doc { 'torch.lcm(input, other) -> Tensor', 'Tensor:lcm(other) -> Tensor',
  does = 'The least common multiple of integer elements.',
  ex = 'print(torch.lcm(torch.tensor({4}, {dtype = torch.int64}), torch.tensor({6}, {dtype = torch.int64})))  --> tensor([12])' }
doc { 'torch.ldexp(input, other) -> Tensor',
  does = 'input * 2^other.', ex = 'print(torch.ldexp(torch.tensor({1}), torch.tensor({3})))  --> tensor([8.])' }
doc { 'torch.float_power(input, exponent) -> Tensor', 'Tensor:float_power(exponent) -> Tensor',
  does = 'pow computed in float64 (the result is float64).',
  ex = 'print(torch.float_power(torch.tensor({2}), 2))  --> tensor([4.], dtype=torch.float64)' }
doc { 'torch.rsub(input, other, {alpha=}) -> Tensor',
  does = 'other - alpha * input (subtraction with the operands swapped).',
  ex = 'print(torch.rsub(torch.tensor({1, 2}), 10))  --> tensor([9., 8.])' }
doc { 'torch.clamp_min(input, min) -> Tensor', 'Tensor:clamp_min(min) -> Tensor', 'torch.clamp_min_(input, min) -> input',
  'Tensor:clamp_min_(min) -> self',
  does = 'clamp with only a lower bound.', ex = 'print(torch.clamp_min(torch.tensor({-1, 2}), 0))  --> tensor([0., 2.])' }
doc { 'torch.clamp_max(input, max) -> Tensor', 'Tensor:clamp_max(max) -> Tensor', 'torch.clamp_max_(input, max) -> input',
  'Tensor:clamp_max_(max) -> self',
  does = 'clamp with only an upper bound.', ex = 'print(torch.clamp_max(torch.tensor({-1, 2}), 0))  --> tensor([-1.,  0.])' }
doc { 'torch.softplus_unit(input) -> Tensor',
  does = 'log(1 + exp(x)) with beta 1 and threshold 20: the kernel behind F.softplus.',
  pt = false,
  ex = 'print(torch.softplus_unit(torch.tensor({0})))  --> tensor([0.6931])' }

doc.section 'Shapes, joining, splitting'
doc { 'torch.t(input) -> Tensor', 'Tensor:t() -> Tensor', 'Tensor:t_() -> self',
  does = 'The transpose of a tensor of at most 2 dims (a view; t_ reshapes the tensor itself).',
  ex = 'print(torch.t(torch.ones(2, 3)):size())  --> torch.Size([3, 2])' }
doc { 'torch.swapaxes(input, axis0, axis1) -> Tensor', 'Tensor:swapaxes(axis0, axis1) -> Tensor', 'Tensor:swapaxes_(axis0, axis1) -> self',
  'torch.swapdims(input, dim0, dim1) -> Tensor', 'Tensor:swapdims(dim0, dim1) -> Tensor', 'Tensor:swapdims_(dim0, dim1) -> self',
  does = 'transpose under NumPy\'s names.', ex = 'print(torch.swapaxes(torch.ones(2, 3), 1, 2):size())  --> torch.Size([3, 2])' }
doc { 'torch.movedim(input, source, destination) -> Tensor', 'Tensor:movedim(source, destination) -> Tensor',
  'torch.moveaxis(input, source, destination) -> Tensor', 'Tensor:moveaxis(source, destination) -> Tensor',
  does = 'A view with the dims source (a number or an array) moved to destination, the others keeping their order.',
  ex = 'print(torch.movedim(torch.ones(2, 3, 4), 1, 3):size())  --> torch.Size([3, 4, 2])' }
doc { 'torch.ravel(input) -> Tensor', 'Tensor:ravel() -> Tensor',
  does = 'The elements as a 1-D tensor (a view when possible).', ex = 'print(torch.ones(2, 2):ravel():size())  --> torch.Size([4])' }
doc { 'torch.unflatten(input, dim, sizes) -> Tensor', 'Tensor:unflatten(dim, sizes) -> Tensor',
  does = 'dim split into several dims of the given sizes (an array; one may be -1).',
  ex = 'print(torch.ones(2, 6):unflatten(2, {2, 3}):size())  --> torch.Size([2, 2, 3])' }
doc { 'torch.broadcast_to(input, size) -> Tensor', 'Tensor:broadcast_to(size) -> Tensor',
  does = 'input expanded to size by the broadcasting rules (a view).',
  ex = 'print(torch.tensor({1, 2}):broadcast_to({3, 2}):size())  --> torch.Size([3, 2])' }
doc { 'torch.broadcast_shapes(shapes...) -> Size',
  does = 'The shape the given shapes (arrays) broadcast to.',
  ex = 'print(torch.broadcast_shapes({2, 1}, {1, 3}))  --> torch.Size([2, 3])' }
doc { 'torch.broadcast_tensors(tensors...) -> {Tensor, ...}',
  does = 'The tensors expanded to their common broadcast shape, as one Lua array.',
  ex = 'local r = torch.broadcast_tensors(torch.ones(2, 1), torch.ones(3))\nprint(r[1]:size(), r[2]:size())  --> torch.Size([2, 3]) torch.Size([2, 3])' }
doc { 'torch.atleast_1d(input) -> Tensor', 'torch.atleast_2d(input) -> Tensor', 'torch.atleast_3d(input) -> Tensor',
  does = 'The input with leading (trailing for 3d) dims of size 1 added up to that many dims.',
  ex = 'print(torch.atleast_2d(torch.tensor(3)):size())  --> torch.Size([1, 1])' }
doc.alias('torch.concat', 'torch.cat', 'torch.concat(tensors, dim, {dim=, out=}) -> Tensor')
doc.alias('torch.concatenate', 'torch.cat', 'torch.concatenate(tensors, dim, {dim=, out=}) -> Tensor')
doc { 'torch.hstack(tensors, {out=}) -> Tensor', 'torch.vstack(tensors, {out=}) -> Tensor',
  'torch.row_stack(tensors, {out=}) -> Tensor', 'torch.dstack(tensors, {out=}) -> Tensor',
  'torch.column_stack(tensors, {out=}) -> Tensor',
  does = 'The tensors of a Lua array joined horizontally (dim 2, dim 1 for 1-D), vertically (dim 1 after atleast_2d), in depth (dim 3 after atleast_3d), or as columns.',
  ex = 'print(torch.vstack({torch.ones(2), torch.zeros(2)}):size(), torch.hstack({torch.ones(2), torch.zeros(2)}):size())  --> torch.Size([2, 2]) torch.Size([4])' }
doc { 'torch.split(input, split_size_or_sections, dim) -> {Tensor, ...}',
  'Tensor:split(split_size_or_sections, dim) -> {Tensor, ...}',
  'torch.split_with_sizes(input, split_sizes, dim) -> {Tensor, ...}', 'Tensor:split_with_sizes(split_sizes, dim) -> {Tensor, ...}',
  does = 'Views of consecutive pieces along dim (1 by default): of split_size each (the last smaller), or of the sizes in an array. A Lua array.',
  ex = 'local p = torch.arange(5):split(2)\nprint(#p, p[3])  --> 3 tensor([4])\nprint(#torch.ones(2, 4):split({1, 3}, {dim = 2}))  --> 2' }
doc { 'torch.chunk(input, chunks, dim) -> {Tensor, ...}', 'Tensor:chunk(chunks, dim) -> {Tensor, ...}',
  does = 'input split into `chunks` pieces along dim (1 by default), as equal as possible (views; a Lua array).',
  ex = 'local p = torch.ones(5, 2):chunk(2)\nprint(#p, p[1]:size(1), p[2]:size(1))  --> 2 3 2' }
doc { 'torch.tensor_split(input, indices_or_sections, dim) -> {Tensor, ...}',
  'Tensor:tensor_split(indices_or_sections, dim) -> {Tensor, ...}',
  does = 'input split into n nearly equal pieces, or at the given 1-based split points (an array: a new piece starts at each).',
  ex = 'local p = torch.arange(6):tensor_split({3, 5})\nprint(p[1], p[2], p[3])  --> tensor([0, 1]) tensor([2, 3]) tensor([4, 5])' }
doc { 'torch.hsplit(input, sections) -> {Tensor, ...}', 'Tensor:hsplit(sections) -> {Tensor, ...}',
  'torch.vsplit(input, sections) -> {Tensor, ...}', 'Tensor:vsplit(sections) -> {Tensor, ...}',
  'torch.dsplit(input, sections) -> {Tensor, ...}', 'Tensor:dsplit(sections) -> {Tensor, ...}',
  does = 'tensor_split along dim 2 (dim 1 for 1-D), 1 and 3.',
  ex = 'print(#torch.ones(2, 4):hsplit(2))  --> 2' }
doc { 'torch.argwhere(input) -> Tensor', 'Tensor:argwhere() -> Tensor',
  does = 'The 1-based positions of the nonzero elements, one row each (as nonzero).',
  ex = 'print(torch.argwhere(torch.tensor({0, 1})))  --> tensor([[2]])' }
doc { 'torch.advanced_index(input, indices) -> Tensor',
  does = 'input indexed by a Lua array of index tensors (1-based positions or bool masks), one per leading dim: what t[index_tensor] does.',
  pt = false,
  ex = 'print(torch.advanced_index(torch.tensor({10, 20, 30}), {torch.tensor({3, 1}, {dtype = torch.int64})}))  --> tensor([30., 10.])' }
doc { 'torch.take(input, index) -> Tensor', 'Tensor:take(index) -> Tensor',
  does = 'The elements at 1-based positions of the flattened input.',
  ex = 'print(torch.take(torch.tensor({{1, 2}, {3, 4}}), torch.tensor({1, 4}, {dtype = torch.int64})))  --> tensor([1., 4.])' }
doc { 'torch.take_along_dim(input, indices, dim) -> Tensor', 'Tensor:take_along_dim(indices, dim) -> Tensor',
  does = 'gather with broadcasting: the entries along dim at the 1-based indices (the flattened input without dim), as argmax/argsort give them.',
  ex = 'local x = torch.tensor({{3, 1}, {2, 5}})\nprint(x:take_along_dim(x:argmax(2, true), 2))  --> tensor([[3.], [5.]])' }
doc { 'torch.tile(input, dims) -> Tensor', 'Tensor:tile(dims...) -> Tensor',
  does = 'repeat, with too few dims padded by leading 1s.', ex = 'print(torch.tensor({1, 2}):tile(2))  --> tensor([1., 2., 1., 2.])' }
doc { 'torch.fliplr(input) -> Tensor', 'Tensor:fliplr() -> Tensor', 'torch.flipud(input) -> Tensor', 'Tensor:flipud() -> Tensor',
  does = 'flip along dim 2 (left-right) or dim 1 (up-down).', ex = 'print(torch.tensor({{1, 2}}):fliplr())  --> tensor([[2., 1.]])' }
doc { 'torch.rot90(input, k, dims) -> Tensor', 'Tensor:rot90(k, dims) -> Tensor',
  does = 'Rotated by 90 degrees k times (1) in the plane of dims (an array, {1, 2} by default).',
  ex = 'print(torch.tensor({{1, 2}, {3, 4}}):rot90())  --> tensor([[2., 4.], [1., 3.]])' }
doc { 'torch.kron(input, other) -> Tensor', 'Tensor:kron(other) -> Tensor',
  does = 'The Kronecker product.', ex = 'print(torch.kron(torch.eye(2), torch.ones(1, 2)))  --> tensor([[1., 1., 0., 0.], [0., 0., 1., 1.]])' }
doc { 'torch.block_diag(tensors...) -> Tensor',
  does = 'A block-diagonal matrix of the given matrices.', ex = 'print(torch.block_diag(torch.ones(1, 1), torch.ones(1, 2)))  --> tensor([[1., 0., 0.], [0., 1., 1.]])' }
doc { 'torch.cartesian_prod(tensors...) -> Tensor',
  does = 'Every combination of one element of each 1-D tensor, one row each.',
  ex = 'print(torch.cartesian_prod(torch.tensor({1, 2}), torch.tensor({3})))  --> tensor([[1., 3.], [2., 3.]])' }
doc { 'torch.combinations(input, r, {with_replacement=}) -> Tensor',
  does = 'The r-element combinations (2) of a 1-D tensor\'s elements, one row each.',
  ex = 'print(torch.combinations(torch.tensor({1, 2, 3})))  --> tensor([[1., 2.], [1., 3.], [2., 3.]])' }
doc { 'torch.meshgrid(tensors..., {indexing=}) -> {Tensor, ...}',
  does = 'Coordinate grids from 1-D tensors (indexing \'ij\' or \'xy\'), as one Lua array.',
  ex = 'local g = torch.meshgrid(torch.tensor({1, 2}), torch.tensor({3, 4, 5}), {indexing = \'ij\'})\nprint(g[1]:size())  --> torch.Size([2, 3])' }
doc { 'torch.diag_embed(input, offset, dim1, dim2) -> Tensor', 'Tensor:diag_embed(offset, dim1, dim2) -> Tensor',
  does = 'Matrices (in dims dim1, dim2: the last two by default) with input\'s last dim on their diagonal.',
  ex = 'print(torch.diag_embed(torch.tensor({1, 2})))  --> tensor([[1., 0.], [0., 2.]])' }
doc { 'torch.diagflat(input, offset) -> Tensor', 'Tensor:diagflat(offset) -> Tensor',
  does = 'A matrix with the flattened input on its diagonal (offset above it).',
  ex = 'print(torch.diagflat(torch.tensor({{1, 2}})):size())  --> torch.Size([2, 2])' }
doc { 'torch.select_scatter(input, src, dim, index) -> Tensor', 'Tensor:select_scatter(src, dim, index) -> Tensor',
  does = 'A copy of input with src written into the slice select(dim, index) (1-based).',
  ex = 'print(torch.zeros(2, 2):select_scatter(torch.ones(2), 1, 2))  --> tensor([[0., 0.], [1., 1.]])' }
doc { 'torch.slice_scatter(input, src, dim, start, end_, step) -> Tensor', 'Tensor:slice_scatter(src, dim, start, end_, step) -> Tensor',
  does = 'A copy of input with src written into the slice from start (1-based) before end_ by step along dim (1).',
  ex = 'print(torch.zeros(4):slice_scatter(torch.ones(2), 1, 1, nil, 2))  --> tensor([1., 0., 1., 0.])' }
doc { 'torch.diagonal_scatter(input, src, offset, dim1, dim2) -> Tensor', 'Tensor:diagonal_scatter(src, offset, dim1, dim2) -> Tensor',
  does = 'A copy of input with src written on the diagonal.',
  ex = 'print(torch.zeros(2, 2):diagonal_scatter(torch.ones(2)))  --> tensor([[1., 0.], [0., 1.]])' }
doc { 'torch.sum_to_size(input, size...) -> Tensor', 'Tensor:sum_to_size(size...) -> Tensor',
  does = 'The tensor summed down to a size it broadcasts from (the reverse of expand).',
  pt = 'Tensor.sum_to_size',
  ex = 'print(torch.ones(2, 3):sum_to_size(1, 3))  --> tensor([[2., 2., 2.]])' }

doc.section 'Reductions, scans, statistics'
doc { 'torch.aminmax(input, {dim=, keepdim=}) -> min, max', 'Tensor:aminmax({dim=, keepdim=}) -> min, max',
  does = 'amin and amax in one call (two values).',
  ex = 'local lo, hi = torch.aminmax(torch.tensor({3, 1, 2}))\nprint(lo, hi)  --> tensor(1.) tensor(3.)' }
doc { 'torch.argsort(input, dim, {dim=, descending=, stable=}) -> Tensor', 'Tensor:argsort(dim, {dim=, descending=, stable=}) -> Tensor',
  does = 'The 1-based positions that sort input along dim (the last).',
  ex = 'print(torch.tensor({3, 1, 2}):argsort())  --> tensor([2, 3, 1])' }
doc { 'torch.msort(input) -> Tensor', 'Tensor:msort() -> Tensor',
  does = 'The values sorted along dim 1.', ex = 'print(torch.msort(torch.tensor({3, 1, 2})))  --> tensor([1., 2., 3.])' }
doc { 'torch.kthvalue(input, k, dim, keepdim, {keepdim=}) -> values, indices', 'Tensor:kthvalue(k, dim, keepdim) -> values, indices',
  does = 'The k-th smallest entry along dim (the last; k counts from 1) and its 1-based position.',
  ex = 'local v, i = torch.tensor({3, 1, 2}):kthvalue(2)\nprint(v, i)  --> tensor(2.) tensor(3)' }
doc { 'torch.median(input) -> Tensor', 'torch.median(input, dim, keepdim, {keepdim=}) -> values, indices',
  'Tensor:median(dim, keepdim) -> values, indices',
  does = 'The lower median of all elements; along dim, the medians and their 1-based positions.',
  ex = 'print(torch.median(torch.tensor({1, 4, 2, 3})))  --> tensor(2.)' }
doc { 'torch.mode(input, dim, keepdim) -> values, indices', 'Tensor:mode(dim, keepdim) -> values, indices',
  does = 'The most frequent value along dim (the last; the smallest of ties) and the 1-based position of its last occurrence.',
  ex = 'local v, i = torch.tensor({1, 2, 2, 3}):mode()\nprint(v, i)  --> tensor(2.) tensor(3)' }
doc { 'torch.nanmean(input, dim, {keepdim=, dtype=}) -> Tensor', 'Tensor:nanmean(dim, {keepdim=}) -> Tensor',
  does = 'The mean of the elements that are not NaN.', ex = 'print(torch.tensor({1, 0 / 0, 3}):nanmean())  --> tensor(2.)' }
doc { 'torch.quantile(input, q, dim, keepdim, {interpolation=}) -> Tensor', 'Tensor:quantile(q, dim, keepdim, {interpolation=}) -> Tensor',
  'torch.nanquantile(input, q, dim, keepdim, {interpolation=}) -> Tensor', 'Tensor:nanquantile(q, dim, keepdim, {interpolation=}) -> Tensor',
  does = 'The q-th quantiles (q a number or a tensor in [0, 1]) over everything or along dim; interpolation \'linear\', \'lower\', \'higher\', \'midpoint\' or \'nearest\'; nanquantile ignores NaNs.',
  ex = 'print(torch.quantile(torch.tensor({1, 2, 3, 4}), 0.5))  --> tensor(2.5000)' }
doc { 'torch.cummax(input, dim) -> values, indices', 'Tensor:cummax(dim) -> values, indices',
  'torch.cummin(input, dim) -> values, indices', 'Tensor:cummin(dim) -> values, indices',
  does = 'The running maximum (minimum) along dim and the 1-based position where it was found.',
  ex = 'local v, i = torch.tensor({1, 3, 2}):cummax(1)\nprint(v, i)  --> tensor([1., 3., 3.]) tensor([1, 2, 2])' }
doc { 'torch.logcumsumexp(input, dim) -> Tensor', 'Tensor:logcumsumexp(dim) -> Tensor',
  does = 'The running logsumexp along dim.', ex = 'print(torch.tensor({0, 0}):logcumsumexp(1))  --> tensor([0.0000, 0.6931])' }
doc { 'torch.diff(input, n, dim, prepend, append) -> Tensor', 'Tensor:diff(n, dim, prepend, append) -> Tensor',
  does = 'The n-th (1) forward differences along dim (the last), after joining prepend and append.',
  ex = 'print(torch.tensor({1, 4, 9}):diff())  --> tensor([3., 5.])' }
doc { 'torch.trace(input) -> Tensor', 'Tensor:trace() -> Tensor',
  does = 'The sum of a matrix\'s diagonal.', ex = 'print(torch.trace(torch.tensor({{1, 2}, {3, 4}})))  --> tensor(5.)' }
doc { 'torch.histc(input, bins, min, max) -> Tensor', 'Tensor:histc(bins, min, max) -> Tensor',
  does = 'A histogram of `bins` equal bins (100) over [min, max] (the data\'s range when both are 0).',
  ex = 'print(torch.histc(torch.tensor({1, 2, 1}), 2, 0, 2))  --> tensor([0., 3.])' }
doc { 'torch.bucketize(input, boundaries, {right=, out_int32=}) -> Tensor',
  does = 'The 1-based bucket of each value among sorted boundaries (searchsorted with the arguments swapped).',
  ex = 'print(torch.bucketize(torch.tensor({0, 2, 6}), torch.tensor({1, 3, 5})))  --> tensor([1, 2, 4])' }
doc { 'torch.isin(elements, test_elements, {invert=}) -> Tensor',
  does = 'true where an element occurs among test_elements (a tensor or number).',
  ex = 'print(torch.isin(torch.tensor({1, 2, 3}), torch.tensor({2, 5})))  --> tensor([False,  True, False])' }
doc { 'torch.cov(input, {correction=, fweights=, aweights=}) -> Tensor',
  does = 'The covariance matrix of the variables in input\'s rows (observations in columns).',
  ex = 'print(torch.cov(torch.tensor({{1, 2, 3}, {2, 4, 6}})))  --> tensor([[1., 2.], [2., 4.]])' }
doc { 'torch.corrcoef(input) -> Tensor',
  does = 'The Pearson correlation coefficients of the variables in input\'s rows.',
  ex = 'print(torch.corrcoef(torch.tensor({{1, 2, 3}, {3, 2, 1}})))  --> tensor([[ 1., -1.], [-1.,  1.]])' }
doc { 'torch.unique_consecutive(input, {return_inverse=, return_counts=, dim=}) -> values[, inverse][, counts]',
  'Tensor:unique_consecutive({return_inverse=, return_counts=, dim=}) -> values[, inverse][, counts]',
  does = 'Each run of equal consecutive elements squeezed to one (inverse 1-based).',
  ex = 'print(torch.tensor({1, 1, 2, 1}):unique_consecutive())  --> tensor([1., 2., 1.])' }
doc { 'torch.renorm(input, p, dim, maxnorm) -> Tensor', 'Tensor:renorm(p, dim, maxnorm) -> Tensor',
  does = 'Each slice along dim scaled down so that its p-norm is at most maxnorm.',
  ex = 'print(torch.tensor({{3, 4}, {0, 1}}):renorm(2, 1, 1))  --> tensor([[0.6000, 0.8000], [0.0000, 1.0000]])' }
doc { 'torch.trapezoid(y, x, {dx=, dim=}) -> Tensor', 'torch.trapz(y, x, {dx=, dim=}) -> Tensor',
  does = 'The trapezoidal rule\'s integral of y along dim (the last), at points x or spacing dx (1).',
  ex = 'print(torch.trapezoid(torch.tensor({1, 2, 3})))  --> tensor(4.)' }

doc.section 'Products and distances'
doc { 'torch.addmv(input, mat, vec, {beta=, alpha=, out=}) -> Tensor', 'Tensor:addmv(mat, vec, {beta=, alpha=}) -> Tensor',
  'Tensor:addmv_(mat, vec, {beta=, alpha=}) -> self',
  does = 'beta * input + alpha * (mat @ vec).',
  ex = 'print(torch.addmv(torch.ones(2), torch.ones(2, 3), torch.ones(3)))  --> tensor([4., 4.])' }
doc { 'torch.addr(input, vec1, vec2, {beta=, alpha=}) -> Tensor', 'Tensor:addr(vec1, vec2, {beta=, alpha=}) -> Tensor',
  does = 'beta * input + alpha * outer(vec1, vec2).',
  ex = 'print(torch.addr(torch.zeros(2, 2), torch.tensor({1, 2}), torch.tensor({1, 1})))  --> tensor([[1., 1.], [2., 2.]])' }
doc { 'torch.addbmm(input, batch1, batch2, {beta=, alpha=}) -> Tensor', 'Tensor:addbmm(batch1, batch2, {beta=, alpha=}) -> Tensor',
  does = 'beta * input + alpha * (the sum over the batch of batch1[i] @ batch2[i]).',
  ex = 'print(torch.addbmm(torch.zeros(2, 2), torch.ones(3, 2, 1), torch.ones(3, 1, 2)))  --> tensor([[3., 3.], [3., 3.]])' }
doc { 'torch.vdot(input, other) -> Tensor', 'Tensor:vdot(other) -> Tensor',
  does = 'The dot product (no complex dtypes: as dot).', ex = 'print(torch.vdot(torch.tensor({1, 2}), torch.tensor({3, 4})))  --> tensor(11.)' }
doc { 'torch.ger(input, vec2) -> Tensor', 'Tensor:ger(vec2) -> Tensor',
  does = 'outer under its old name.', ex = 'print(torch.ger(torch.tensor({1, 2}), torch.tensor({1}))) --> tensor([[1.], [2.]])' }
doc { 'torch.inner(input, other) -> Tensor', 'Tensor:inner(other) -> Tensor',
  does = 'The inner product over the last dims.', ex = 'print(torch.inner(torch.tensor({1, 2}), torch.tensor({3, 4})))  --> tensor(11.)' }
doc { 'torch.chain_matmul(matrices...) -> Tensor',
  does = 'The product of several matrices (as matmul of them in turn).',
  ex = 'print(torch.chain_matmul(torch.ones(2, 3), torch.ones(3, 4), torch.ones(4, 1)))  --> tensor([[12.], [12.]])' }
doc { 'torch.einsum(equation, operands...) -> Tensor',
  does = 'Einstein summation: \'ij,jk->ik\' and the like (... for broadcast dims); operands as arguments or one array.',
  ex = 'print(torch.einsum(\'ij,j->i\', torch.ones(2, 3), torch.tensor({1, 2, 3})))  --> tensor([6., 6.])' }
doc { 'torch.cross(input, other, dim) -> Tensor', 'Tensor:cross(other, dim) -> Tensor',
  does = 'The cross product of 3-element vectors along dim (the first of size 3 when not given).',
  ex = 'print(torch.cross(torch.tensor({1, 0, 0}), torch.tensor({0, 1, 0})))  --> tensor([0., 0., 1.])' }
doc { 'torch.dist(input, other, p) -> Tensor', 'Tensor:dist(other, p) -> Tensor',
  does = 'The p-norm (2) of input - other.', ex = 'print(torch.dist(torch.tensor({0, 0}), torch.tensor({3, 4})))  --> tensor(5.)' }
doc { 'torch.cdist(x1, x2, p) -> Tensor',
  does = 'The p-norm (2) distance between each row of x1 and each row of x2 (batched).',
  ex = 'print(torch.cdist(torch.tensor({{0, 0}}), torch.tensor({{3, 4}, {0, 1}})))  --> tensor([[5., 1.]])' }
doc { 'torch.matrix_power(input, n) -> Tensor', 'Tensor:matrix_power(n) -> Tensor', 'torch.linalg.matrix_power(A, n) -> Tensor',
  does = 'A square matrix to the integer power n (the inverse\'s power for negative n).',
  ex = 'print(torch.matrix_power(torch.tensor({{1, 1}, {0, 1}}), 3))  --> tensor([[1., 3.], [0., 1.]])' }
doc { 'torch.det(input) -> Tensor', 'Tensor:det() -> Tensor', 'torch.linalg.det(A) -> Tensor',
  does = 'The determinant of square matrices (batched; float32 / float64), from LAPACK\'s LU (getrf). Gradient LinalgDetBackward0: det A^-T, or for a singular matrix the cofactors (by the SVD; PyTorch 1.13 gives zeros there unless create_graph).', ex = 'print(torch.det(torch.tensor({{2, 1}, {0, 3}})))  --> tensor(6.)' }
doc { 'torch.logdet(input) -> Tensor', 'Tensor:logdet() -> Tensor',
  does = 'The log of the determinant (NaN when it is negative, -inf when it is zero).', ex = 'print(torch.logdet(torch.eye(2) * 2))  --> tensor(1.3863)' }
doc { 'torch.slogdet(input) -> sign, logabsdet', 'Tensor:slogdet() -> sign, logabsdet', 'torch.linalg.slogdet(A) -> sign, logabsdet',
  does = 'The sign (0 for a singular matrix) and the log of the absolute value of the determinant (-inf), from LAPACK\'s LU; one node LinalgSlogdetBackward0.',
  ex = 'local s, l = torch.slogdet(torch.tensor({{0, 1}, {1, 0}}))\nprint(s, l)  --> tensor(-1.) tensor(0.)' }
doc { 'torch.inverse(input) -> Tensor', 'Tensor:inverse() -> Tensor', 'torch.linalg.inv(A) -> Tensor',
  does = 'The inverse of square matrices (batched; float32 / float64), by LAPACK (getrf, then getrs with the identity, as PyTorch). A singular matrix is PyTorch\'s error naming U\'s zero diagonal element ((Batch element i): first, 1-based). Gradient LinalgInvExBackward0. {out=t} writes into t.', ex = 'print(torch.inverse(torch.tensor({{2, 0}, {0, 4}})))  --> tensor([[0.5000, 0.0000], [0.0000, 0.2500]])' }
doc { 'torch.matrix_exp(A) -> Tensor', 'Tensor:matrix_exp() -> Tensor', 'torch.linalg.matrix_exp(A) -> Tensor',
  does = 'e^A of each square matrix of A (..., n, n): scaling and squaring of a Taylor polynomial, written with matrix products (autograd follows).',
  ex = 'print(torch.matrix_exp(torch.zeros(2, 2)))  --> tensor([[1., 0.], [0., 1.]])' }
doc { 'torch.linalg.householder_product(A, tau) -> Tensor',
  does = 'The first n columns of the product of the Householder reflections I - tau_i v_i v_i^T given by A (m, n) and tau (LAPACK\'s orgqr; autograd follows).',
  ex = 'print(torch.linalg.householder_product(torch.eye(2), torch.zeros(2)))  --> tensor([[1., 0.], [0., 1.]])' }
doc { 'torch.linalg.inv_ex(A, {check_errors=false}) -> inverse, info',
  does = 'linalg.inv without the error: info (int32, A\'s batch shape) is getrf\'s (0, or the 1-based index of U\'s zero diagonal element; that matrix\'s inverse is inf/nan); check_errors=true raises it.',
  ex = 'local _, info = torch.linalg.inv_ex(torch.zeros(2, 2))\nprint(info)  --> tensor(1, dtype=torch.int32)' }
doc { 'torch.linalg.solve(A, B, {left=true, out=}) -> Tensor',
  does = 'X with A @ X = B (left=false: X @ A = B), A (..., n, n), B (..., n, k) or a vector (..., n) (PyTorch\'s rule: B 1-D, or A\'s shape without the last dim), the batch dims broadcast; by LAPACK\'s getrf + getrs. A and B of one dtype; a singular A is PyTorch\'s error. Gradient LinalgSolveExBackward0.', ex = 'print(torch.linalg.solve(torch.tensor({{2, 0}, {0, 4}}), torch.tensor({2, 4})))  --> tensor([1., 1.])' }
doc { 'torch.linalg.solve_ex(A, B, {left=true, check_errors=false}) -> result, info',
  does = 'linalg.solve without the error: info (int32, A\'s batch shape) is getrf\'s (0, or the index of U\'s zero diagonal element); check_errors=true raises it.',
  ex = 'local X, info = torch.linalg.solve_ex(torch.eye(2), torch.ones(2))\nprint(X, info)  --> tensor([1., 1.]) tensor(0, dtype=torch.int32)' }
doc { 'torch.linalg.norm(A, ord, dim, keepdim, {ord=, dim=, keepdim=, dtype=}) -> Tensor',
  does = 'PyTorch\'s rules: two dims (or a string ord) a matrix norm, one dim a vector norm; an ord without dim wants a 1-D (vector) or 2-D (matrix) input; neither: the 2-norm of all the elements.',
  ex = 'print(torch.linalg.norm(torch.tensor({3, 4})))  --> tensor(5.)' }
doc { 'torch.linalg.vector_norm(x, ord, dim, keepdim, {ord=, dim=, keepdim=, dtype=}) -> Tensor',
  does = 'The ord-norm (2; math.huge, -math.huge, 0 too) of the flattened x or along dim.',
  ex = 'print(torch.linalg.vector_norm(torch.tensor({3, -4}), 1))  --> tensor(7.)' }
doc { 'torch.linalg.matrix_norm(A, ord, dim, keepdim, {ord=, dim=, keepdim=, dtype=}) -> Tensor',
  does = 'A matrix norm over dims {-2, -1} (or dim, two dims): \'fro\' (default), \'nuc\' (the sum of the singular values), 2 / -2 (the largest / smallest singular value; by linalg.svdvals, gradients as PyTorch\'s: SumBackward1 / AmaxBackward0 / AminBackward0 over LinalgSvdBackward0), 1 / -1 (the largest / smallest column sum of |A|), math.huge / -math.huge (row sums).',
  ex = 'print(torch.linalg.matrix_norm(torch.ones(2, 2)))  --> tensor(2.)' }
doc { 'torch.linalg.multi_dot(tensors) -> Tensor',
  does = 'The product of a table of matrices in the cheapest order (by their shapes); the first may be 1-D (a row vector), the last 1-D (a column); PyTorch\'s checks and grad_fn (ViewBackward0).',
  ex = 'print(torch.linalg.multi_dot({torch.ones(2), torch.ones(2, 3), torch.ones(3)}))  --> tensor(6.)' }
doc { 'torch.linalg.vander(x, {N=}) -> Tensor',
  does = 'The Vandermonde matrix (..., n, N) of x (..., n): columns x^0, x^1, ..., x^(N-1) (increasing powers, unlike torch.vander); N (> 1) defaults to n.',
  ex = 'print(torch.linalg.vander(torch.tensor({1, 2, 3})))  --> tensor([[1., 1., 1.], [1., 2., 4.], [1., 3., 9.]])' }
doc { 'torch.linalg.diagonal(A, {offset=0, dim1=-2, dim2=-1}) -> Tensor',
  does = 'torch.diagonal with the last two dims by default (a view).',
  ex = 'print(torch.linalg.diagonal(torch.eye(2):expand(3, 2, 2)))  --> tensor([[1., 1.], [1., 1.], [1., 1.]])' }
doc { 'torch.linalg.tensorinv(A, ind=2) -> Tensor',
  does = 'The inverse of A seen as a square matrix of the products of its first ind and of its other dims; shaped A.shape[ind+1..] .. A.shape[1..ind] (by linalg.inv).',
  ex = 'print(torch.linalg.tensorinv(torch.eye(4):reshape(4, 2, 2), 1):size())  --> torch.Size([2, 2, 4])' }
doc { 'torch.linalg.tensorsolve(A, B, dims) -> Tensor',
  does = 'X with tensordot(A, X, X:dim()) = B (A\'s dims listed in dims, 1-based, moved last first), by linalg.solve; X has A.shape[B:dim()+1..].',
  ex = 'print(torch.linalg.tensorsolve(torch.eye(4):reshape(2, 2, 4), torch.ones(2, 2)))  --> tensor([1., 1., 1., 1.])' }
doc { 'torch.linalg.ldl_factor(A, {hermitian=false}) -> LD, pivots',
  does = 'A = L D L^T of symmetric matrices (A\'s lower triangle read; batched; float32 / float64) by LAPACK\'s sytrf (Bunch-Kaufman): LD holds L below the diagonal (unit diagonal not stored) and D\'s 1x1 / 2x2 blocks, pivots (int32) are LAPACK\'s (negative twice: a 2x2 block), as PyTorch. A singular D is an error (linalg.ldl_factor_ex gives info). Not differentiable (PyTorch\'s error on backward).',
  ex = 'local LD, piv = torch.linalg.ldl_factor(torch.tensor({{4, 2}, {2, 5}}))\nprint(LD, piv)  --> tensor([[4.0000, 0.0000], [0.5000, 4.0000]]) tensor([1, 2], dtype=torch.int32)' }
doc { 'torch.linalg.ldl_factor_ex(A, {hermitian=false, check_errors=false}) -> LD, pivots, info',
  does = 'linalg.ldl_factor without the error: info (int32, A\'s batch shape) is sytrf\'s (0, or the 1-based index of D\'s zero diagonal element).',
  ex = 'local _, _, info = torch.linalg.ldl_factor_ex(torch.zeros(2, 2))\nprint(info)  --> tensor(1, dtype=torch.int32)' }
doc { 'torch.linalg.ldl_solve(LD, pivots, B, {hermitian=false}) -> Tensor',
  does = 'X with A X = B from linalg.ldl_factor\'s LD and pivots (LAPACK\'s sytrs; batch dims broadcast); pivots that are not a factorization\'s are an error. Not recorded by autograd.',
  ex = 'local LD, piv = torch.linalg.ldl_factor(torch.tensor({{4, 2}, {2, 5}}))\nprint(torch.linalg.ldl_solve(LD, piv, torch.tensor({{6}, {7}})))  --> tensor([[1.], [1.]])' }
doc { 'torch.linalg.cross(input, other, dim) -> Tensor',
  does = 'The cross product along dim (the last).', ex = 'print(torch.linalg.cross(torch.tensor({0, 1, 0}), torch.tensor({0, 0, 1})))  --> tensor([1., 0., 0.])' }
doc { 'torch.linalg.vecdot(x, y, dim) -> Tensor',
  does = 'The dot product along dim (the last).', ex = 'print(torch.linalg.vecdot(torch.ones(2, 3), torch.ones(2, 3)))  --> tensor([3., 3.])' }
doc.section 'torch.linalg: decompositions (LAPACK)'
doc { 'torch.linalg.cholesky(A, {upper=}) -> Tensor',
  does = 'L (lower) with A = L L^T for symmetric positive-definite matrices (batched; float32 / float64; only A\'s lower triangle read); upper=true gives U with A = U^T U. A matrix that is not positive-definite is PyTorch\'s error naming the leading minor. Gradient LinalgCholeskyExBackward0.',
  ex = 'print(torch.linalg.cholesky(torch.tensor({{4, 2}, {2, 5}})))  --> tensor([[2., 0.], [1., 2.]])' }
doc { 'torch.linalg.cholesky_ex(A, {upper=, check_errors=}) -> L, info',
  does = 'cholesky, with LAPACK\'s info (int32, per matrix: 0, or the order of the first leading minor that is not positive-definite) instead of an error (unless check_errors).',
  ex = 'local L, info = torch.linalg.cholesky_ex(torch.tensor({{1, 2}, {2, 1}}))\nprint(info)  --> tensor(2, dtype=torch.int32)' }
doc { 'torch.cholesky(input, upper) -> Tensor', 'Tensor:cholesky(upper) -> Tensor',
  does = 'PyTorch 1.13\'s older spelling of linalg.cholesky (upper by position; gradient CholeskyBackward0).',
  ex = 'print(torch.cholesky(torch.tensor({{4, 2}, {2, 5}}), true))  --> tensor([[2., 1.], [0., 2.]])' }
doc { 'torch.linalg.solve_triangular(A, B, {upper=, left=, unitriangular=, out=}) -> Tensor',
  does = 'X with A X = B (left, the default) or X A = B for triangular A (upper is required; the other triangle is not read; unitriangular: a diagonal of ones). Batch dims broadcast. Gradient LinalgSolveTriangularBackward0.',
  ex = 'print(torch.linalg.solve_triangular(torch.tensor({{2, 0}, {1, 1}}), torch.tensor({{2}, {3}}), {upper = false}))  --> tensor([[1.], [2.]])' }
doc { 'torch.triangular_solve(b, A, upper, transpose, unitriangular) -> solution, A', 'Tensor:triangular_solve(A, upper, transpose, unitriangular) -> solution, A',
  does = 'PyTorch 1.13\'s older triangular solve: A X = b (upper by default; transpose: A^T X = b); returns a copy of A too.',
  ex = 'print((torch.triangular_solve(torch.tensor({{2}, {4}}), torch.tensor({{2, 0}, {0, 4}}))))  --> tensor([[1.], [1.]])' }
doc { 'torch.linalg.qr(A, mode, {mode=}) -> Q, R',
  does = 'A = Q R (batched) with orthonormal columns in Q and R upper triangular, as LAPACK\'s geqrf / orgqr (PyTorch\'s signs). mode \'reduced\' (Q (m, k), R (k, n), k = min(m, n)), \'complete\' (Q (m, m)), \'r\' (R alone; Q empty). Gradient LinalgQrBackward0 (reduced; complete when m <= n).',
  ex = 'local Q, R = torch.linalg.qr(torch.tensor({{3, 1}, {4, 2}}))\nprint(R)  --> tensor([[-5.0000, -2.2000], [0.0000, 0.4000]])' }
doc { 'torch.qr(input, some) -> Q, R', 'Tensor:qr(some) -> Q, R',
  does = 'PyTorch 1.13\'s older spelling: linalg.qr with mode \'reduced\' (some, the default) or \'complete\'.',
  ex = 'local Q = torch.qr(torch.eye(2))\nprint(Q:abs())  --> tensor([[1., 0.], [0., 1.]])' }
doc { 'torch.geqrf(input) -> a, tau', 'Tensor:geqrf() -> a, tau',
  does = 'LAPACK\'s geqrf as it leaves its results: R on and above the diagonal, the Householder vectors below, and their scales tau (not differentiable: with grad, GeqrfBackward0 whose backward is PyTorch\'s error).',
  ex = 'local _, tau = torch.geqrf(torch.tensor({{3}, {4}}))\nprint(tau)  --> tensor([1.6000])' }
doc { 'torch.orgqr(input, tau) -> Tensor', 'Tensor:orgqr(tau) -> Tensor',
  does = 'Q from geqrf\'s results: linalg.householder_product.',
  ex = 'print(torch.orgqr(torch.geqrf(torch.tensor({{3}, {4}}))))  --> tensor([[-0.6000], [-0.8000]])' }
doc { 'torch.ormqr(input, tau, other, left, transpose) -> Tensor', 'Tensor:ormqr(tau, other, left, transpose) -> Tensor',
  does = 'other multiplied by the full Q (m, m) of geqrf\'s results: Q @ other (left, the default) or other @ Q; transpose: Q^T.',
  ex = 'local a, tau = torch.geqrf(torch.tensor({{3}, {4}}))\nprint(torch.ormqr(a, tau, torch.tensor({{3}, {4}}), true, true))  --> tensor([[-5.], [ 0.]])' }
doc { 'torch.linalg.eigh(A, UPLO) -> eigenvalues, eigenvectors',
  does = 'The eigenvalues (ascending) and orthonormal eigenvectors (columns) of symmetric matrices, from the lower triangle (UPLO \'L\') or the upper (\'U\'), by LAPACK\'s syevd. Gradient LinalgEighBackward0 (symmetric, as PyTorch\'s).',
  ex = 'local w = torch.linalg.eigh(torch.tensor({{2, 1}, {1, 2}}))\nprint(w)  --> tensor([1., 3.])' }
doc { 'torch.linalg.eigvalsh(A, UPLO) -> Tensor',
  does = 'The eigenvalues (ascending) of symmetric matrices (eigh without the vectors).',
  ex = 'print(torch.linalg.eigvalsh(torch.tensor({{2, 0}, {0, 1}})))  --> tensor([1., 2.])' }
doc { 'torch.symeig(input, eigenvectors, upper) -> eigenvalues, eigenvectors', 'Tensor:symeig(eigenvectors, upper) -> eigenvalues, eigenvectors',
  does = 'PyTorch 1.13\'s older eigh: the upper triangle by default (upper = true); the eigenvectors only with eigenvectors = true (else an empty tensor). Gradient SymeigBackward0.',
  ex = 'print((torch.symeig(torch.tensor({{2, 1}, {1, 2}}))))  --> tensor([1., 3.])' }
doc { 'torch.linalg.svd(A, full_matrices, {full_matrices=}) -> U, S, Vh',
  does = 'A = U diag(S) Vh (batched), S descending, by LAPACK\'s gesdd; full_matrices (true) gives square U (m, m) and Vh (n, n), false the reduced ones. A non-finite input is PyTorch\'s error. Gradient LinalgSvdBackward0 (through S alone, or U and Vh too).',
  ex = 'local U, S, Vh = torch.linalg.svd(torch.tensor({{3, 0}, {0, -4}}))\nprint(S)  --> tensor([4., 3.])' }
doc { 'torch.linalg.svdvals(A) -> Tensor',
  does = 'The singular values (descending) of A (batched).',
  ex = 'print(torch.linalg.svdvals(torch.tensor({{3, 0}, {0, -4}})))  --> tensor([4., 3.])' }
doc { 'torch.svd(input, some, compute_uv) -> U, S, V', 'Tensor:svd(some, compute_uv) -> U, S, V',
  does = 'PyTorch 1.13\'s older svd: returns V (not Vh); some (true) the reduced U and V; compute_uv false: U and V zero-filled.',
  ex = 'local _, S = torch.svd(torch.tensor({{3, 0}, {0, -4}}))\nprint(S)  --> tensor([4., 3.])' }
doc { 'torch.linalg.lstsq(A, B, rcond, {rcond=, driver=}) -> solution, residuals, rank, singular_values',
  does = 'The least-squares solution of A X = B (B (..., m, k) or a vector; batch dims broadcast; the minimum-norm one for a wide or rank-deficient A) by LAPACK\'s gelsd, singular values below rcond * S_max (eps * max(m, n) by default) taken as zero. As PyTorch\'s drivers say: residuals (the squared residuals, when m > n and A has full rank, not for gelsy), rank (not for gels), singular_values (gelsd, gelss). Gradient LinalgLstsqBackward0 (through pinv).',
  ex = 'print((torch.linalg.lstsq(torch.tensor({{1, 0}, {0, 2}, {0, 0}}), torch.tensor({{1}, {4}, {5}}))))  --> tensor([[1.], [2.]])' }
doc { 'torch.linalg.pinv(A, rcond, hermitian, {atol=, rtol=, hermitian=}) -> Tensor',
  does = 'The pseudo-inverse, by svd (eigh when hermitian): singular values at or below max(atol, rtol * S_max) dropped (rtol eps * max(m, n) when neither is given; rcond is rtol). Gradient LinalgPinvBackward0.',
  ex = 'print(torch.linalg.pinv(torch.tensor({{2, 0}, {0, 0}})))  --> tensor([[0.5000, 0.0000], [0.0000, 0.0000]])' }
doc { 'torch.pinverse(input, rcond) -> Tensor', 'Tensor:pinverse(rcond) -> Tensor',
  does = 'PyTorch 1.13\'s older pinv: rcond (1e-15) relative to the largest singular value.',
  ex = 'print(torch.pinverse(torch.tensor({{4}})))  --> tensor([[0.2500]])' }
doc { 'torch.linalg.matrix_rank(A, tol, hermitian, {atol=, rtol=, hermitian=, tol=}) -> Tensor',
  does = 'The number of singular values (eigenvalues\' absolute values when hermitian) above max(atol, rtol * S_max), as pinv\'s tolerance; int64, A\'s batch shape.',
  ex = 'print(torch.linalg.matrix_rank(torch.tensor({{1, 2}, {2, 4}})))  --> tensor(1)' }
doc { 'torch.linalg.lu_factor(A, {pivot=}) -> LU, pivots',
  does = 'The LU factorization with partial pivoting (LAPACK\'s getrf; batched, any m x n): L below the diagonal (its unit diagonal not stored), U on and above; pivots int32, 1-based (row i was swapped with row pivots[i]). An exactly singular U is PyTorch\'s error (lu_factor_ex gives info). Gradient LinalgLuFactorExBackward0 (square, wide and tall, as PyTorch).',
  ex = 'local LU, piv = torch.linalg.lu_factor(torch.tensor({{1, 2}, {3, 4}}))\nprint(piv)  --> tensor([2, 2], dtype=torch.int32)' }
doc { 'torch.linalg.lu_factor_ex(A, {pivot=, check_errors=}) -> LU, pivots, info',
  does = 'lu_factor with LAPACK\'s info (int32 per matrix: 0, or i where U[i, i] is zero) instead of an error.',
  ex = 'local _, _, info = torch.linalg.lu_factor_ex(torch.zeros(2, 2))\nprint(info)  --> tensor(1, dtype=torch.int32)' }
doc { 'torch.linalg.lu(A, {pivot=}) -> P, L, U',
  does = 'A = P L U: the permutation matrix P (A\'s dtype), L unit lower triangular (m, k), U upper (k, n). Gradient LinalgLuBackward0 (square, wide and tall, as PyTorch).',
  ex = 'local P, L, U = torch.linalg.lu(torch.tensor({{1, 2}, {3, 4}}))\nprint(U)  --> tensor([[3.0000, 4.0000], [0.0000, 0.6667]])' }
doc { 'torch.lu(A, pivot, get_infos) -> LU, pivots[, infos]', 'Tensor:lu(pivot, get_infos) -> LU, pivots[, infos]',
  does = 'PyTorch 1.13\'s older spelling of lu_factor (get_infos: lu_factor_ex\'s info too).',
  ex = 'local LU = torch.lu(torch.tensor({{1, 2}, {3, 4}}))\nprint(LU)  --> tensor([[3.0000, 4.0000], [0.3333, 0.6667]])' }
doc { 'torch.lu_unpack(LU, pivots, unpack_data, unpack_pivots) -> P, L, U',
  does = 'P, L, U from lu_factor\'s results.',
  ex = 'local P = torch.lu_unpack(torch.linalg.lu_factor(torch.tensor({{1, 2}, {3, 4}})))\nprint(P)  --> tensor([[0., 1.], [1., 0.]])' }
doc { 'torch.lu_solve(b, LU, pivots) -> Tensor', 'Tensor:lu_solve(LU, pivots) -> Tensor',
  does = 'X with A X = b from A\'s lu_factor results.',
  ex = 'local LU, piv = torch.linalg.lu_factor(torch.tensor({{2, 0}, {0, 4}}))\nprint(torch.lu_solve(torch.tensor({{2}, {4}}), LU, piv))  --> tensor([[1.], [1.]])' }
doc { 'torch.linalg.lu_solve(LU, pivots, B, {left=, adjoint=}) -> Tensor',
  does = 'X with A X = B (left) or X A = B from A\'s lu_factor results; adjoint: A^T in A\'s place. Gradient LinalgLuSolveBackward0.',
  ex = 'local LU, piv = torch.linalg.lu_factor(torch.tensor({{2, 0}, {0, 4}}))\nprint(torch.linalg.lu_solve(LU, piv, torch.tensor({{2}, {4}})))  --> tensor([[1.], [1.]])' }
doc { 'torch.linalg.cond(A, p) -> Tensor',
  does = 'The condition number: S_max / S_min (p nil or 2; -2: S_min / S_max), else norm(A, p) * norm(A^-1, p) for square A (p \'fro\', \'nuc\', 1, -1, math.huge, -math.huge); inf for a singular A.',
  ex = 'print(torch.linalg.cond(torch.tensor({{2, 0}, {0, 1}})))  --> tensor(2.)' }
doc { 'torch.cholesky_solve(B, L, upper) -> Tensor', 'Tensor:cholesky_solve(L, upper) -> Tensor',
  does = 'X with A X = B given A\'s Cholesky factor L (lower; upper: U). Gradient CholeskySolveBackward0.',
  ex = 'print(torch.cholesky_solve(torch.tensor({{4}, {8}}), torch.tensor({{2, 0}, {0, 2}})))  --> tensor([[1.], [2.]])' }
doc { 'torch.cholesky_inverse(L, upper) -> Tensor', 'Tensor:cholesky_inverse(upper) -> Tensor',
  does = 'A^-1 given A\'s Cholesky factor L (lower; upper: U). Gradient CholeskyInverseBackward0.',
  ex = 'print(torch.cholesky_inverse(torch.tensor({{2, 0}, {0, 2}})))  --> tensor([[0.2500, 0.0000], [0.0000, 0.2500]])' }
doc.alias('torch.special.xlogy', 'torch.xlogy', 'torch.special.xlogy(input, other) -> Tensor')
doc.alias('torch.special.polygamma', 'torch.polygamma', 'torch.special.polygamma(n, input) -> Tensor')
for _, a in ipairs { { 'expit', 'sigmoid', '(input)' }, { 'exp2', 'exp2', '(input)' }, { 'expm1', 'expm1', '(input)' },
  { 'log1p', 'log1p', '(input)' }, { 'erf', 'erf', '(input)' }, { 'erfc', 'erfc', '(input)' }, { 'erfinv', 'erfinv', '(input)' },
  { 'gammaln', 'lgamma', '(input)' }, { 'logsumexp', 'logsumexp', '(input, dim, keepdim)' },
  { 'softmax', 'softmax', '(input, dim, {dtype=})' }, { 'log_softmax', 'log_softmax', '(input, dim, {dtype=})' },
  { 'round', 'round', '(input, {decimals=})' } } do
  doc.alias('torch.special.' .. a[1], 'torch.' .. a[2], 'torch.special.' .. a[1] .. a[3] .. ' -> Tensor')
end
doc { 'torch.special.xlog1py(input, other) -> Tensor',
  does = 'input * log1p(other), 0 where input is 0 (unless other is NaN); numbers on either side.',
  ex = 'print(torch.special.xlog1py(torch.tensor({0.0, 2.0}), torch.tensor({-1.0, 0.0})))  --> tensor([0., 0.])' }
doc { 'torch.special.entr(input) -> Tensor',
  does = 'Elementwise entropy -x ln x: 0 at 0, -inf below 0.',
  ex = 'print(torch.special.entr(torch.tensor({0.0, 1.0, -1.0})))  --> tensor([0., -0., -inf])' }
doc { 'torch.special.ndtr(input) -> Tensor', 'torch.special.ndtri(input) -> Tensor', 'torch.special.log_ndtr(input) -> Tensor',
  does = 'The standard normal\'s distribution function, its inverse, and the log of the first (accurate far into the lower tail: an asymptotic series below -20).',
  ex = 'print(torch.special.ndtr(torch.tensor(0.0)), torch.special.ndtri(torch.tensor(0.5)), torch.special.log_ndtr(torch.tensor(0.0)))  --> tensor(0.5000) tensor(0.) tensor(-0.6931)' }
doc { 'torch.special.erfcx(input) -> Tensor',
  does = 'The scaled complementary error function exp(x²) erfc(x) (finite for large x: an asymptotic series above 25).',
  ex = 'print(torch.special.erfcx(torch.tensor({0.0, 30.0})))  --> tensor([1.0000, 0.0188])' }
doc { 'torch.special.multigammaln(input, p) -> Tensor', 'torch.mvlgamma(input, p) -> Tensor', 'Tensor:mvlgamma(p) -> Tensor',
  does = 'The multivariate log-gamma function of dimension p (its domain: elements above (p - 1) / 2).',
  ex = 'print(torch.special.multigammaln(torch.tensor({2.5}), 2))  --> tensor([0.8570])' }

doc.section 'The CUDA backend\'s settings'
doc { 'torch.backends.cuda.matmul.allow_tf32',
  does = 'Whether float32 products on a GPU may use TF32 tensor cores (false by default, as PyTorch\'s); a setting: `torch.backends.cuda.matmul.allow_tf32 = true`.',
  ex = 'print(torch.backends.cuda.matmul.allow_tf32)  --> false' }
doc { 'torch.backends.cuda.is_built() -> boolean',
  does = 'Whether this build has a CUDA backend (torch.cuda.is_built).',
  ex = 'print(torch.backends.cuda.is_built() == torch.cuda.is_built())  --> true' }


doc.section 'Progress bars and plots (torch.utils.progress, torch.utils.plot)'
doc { 'torch.utils.progress(iterable[, {desc=, total=, out=, tty=, interval=, width=, unit=, clock=}]) -> iterator',
  'torch.utils.progress.wrap(iterable[, opts]) -> iterator',
  pt = false,
  does = 'A progress bar around a loop (tqdm\'s, for Lua): iterable is a number n (1..n), an array, a DataLoader or an iterator function. On a terminal it redraws one line in place; otherwise it prints that line every `interval` seconds (5) and when the loop ends. The loop variables are the iterable\'s own.',
  ex = 'local out = io.tmpfile()\nlocal sum = 0\nfor i in torch.utils.progress(3, { desc = "demo", out = out, tty = false }) do sum = sum + i end\nprint(sum)  --> 6' }
doc { 'torch.utils.progress.new({total=, desc=, out=, tty=, interval=, width=, unit=, clock=}) -> Bar',
  pt = false,
  does = 'A bar driven by hand: `bar:update([n,] [fields])` counts n steps (1) and sets fields (loss=, acc=, ... printed in the order first given), `bar:set(fields)`, `bar:close([fields])` draws the last line. total may be left out (an unknown length).',
  ex = 'local bar = torch.utils.progress.new({ total = 2, out = io.tmpfile(), tty = false })\nbar:update({ loss = 0.5 }); bar:update()\nprint(bar.n)  --> 2\nbar:close()' }
doc { 'torch.utils.progress.set(fields)',
  pt = false,
  does = 'Sets fields (loss=, acc=, ...) on the bar most recently made or wrapped around a loop, for code inside the loop that does not hold the bar.',
  ex = 'for _ in torch.utils.progress(1, { out = io.tmpfile(), tty = false }) do torch.utils.progress.set({ loss = 0.1 }) end' }
doc { 'torch.utils.progress.clock() -> seconds',
  pt = false,
  does = 'The wall clock bars use by default (monotonic seconds); a bar takes another as `clock=`.',
  ex = 'print(type(torch.utils.progress.clock()))  --> number' }
doc { 'torch.utils.plot.svg({title=, panels={{title=, xlabel=, ylabel=, series={{name=, x=, y=}, ...}}, ...}, width=, height=}) -> string',
  pt = false,
  does = 'Line charts as SVG text, with no library: panels side by side, each scaled to its data with round ticks; points that are not finite numbers break a line. The demo draws its training curves with it.',
  ex = 'local s = torch.utils.plot.svg({ panels = { { title = "loss", series = { { name = "train", x = { 1, 2 }, y = { 0.6, 0.4 } } } } } })\nprint(s:sub(1, 5))  --> <?xml' }
doc { 'torch.utils.plot.save(path, figure) -> path',
  pt = false,
  does = 'Writes torch.utils.plot.svg(figure) to path (through a temporary file, renamed: a reader never sees half a chart).',
  ex = 'local p = os.tmpname()\ntorch.utils.plot.save(p, { panels = { { series = { { x = { 1, 2 }, y = { 1, 2 } } } } } })\nos.remove(p)' }
doc { 'torch.utils.plot.ticks(lo, hi[, want]) -> array',
  pt = false,
  does = 'About `want` (5) round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten.',
  ex = 'print(table.concat(torch.utils.plot.ticks(0, 1), ","))  --> 0,0.2,0.4,0.6,0.8,1' }
