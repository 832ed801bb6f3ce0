-- The docs of torch.utils.data (also require 'moontorch.utils.data') and torch.datasets
-- (moontorch.doc: lua/doc/init.lua says how an entry is written). Indices are 1-based.
local doc = ...

doc.section 'Datasets'
doc { 'torch.utils.data.Dataset() -> Dataset',
  does = 'The base class of map-style datasets: a subclass (torch.class(\'MyData\', data.Dataset)) defines __getitem(i) (i from 1) and __len(); ds[i] calls __getitem. A sample that is a Python tuple is a Lua array.',
  ex = 'local Squares = torch.class(\'DocSquares\', \'data.Dataset\')\nfunction Squares:__getitem(i) return {torch.tensor({i}), torch.tensor({i * i})} end\nfunction Squares:__len() return 4 end\nlocal ds = Squares()\nprint(ds[3][2], ds:__len())  --> tensor([9.]) 4' }
doc { 'torch.utils.data.IterableDataset() -> IterableDataset',
  does = 'The base class of iterable datasets: a subclass defines __iter() returning an iterator function of samples.',
  ex = 'local Count = torch.class(\'DocCount\', \'data.IterableDataset\')\nfunction Count:__iter() local i = 0 return function() i = i + 1 if i <= 3 then return torch.tensor({i}) end end end\nlocal n = 0\nfor b in data.DataLoader(Count(), {batch_size = 2}):iter() do n = n + 1 end\nprint(n)  --> 2' }
doc { 'torch.utils.data.TensorDataset(tensors...) -> TensorDataset',
  does = 'Samples {x[i], y[i], ...} from tensors of one first size.',
  ex = 'local ds = data.TensorDataset(torch.arange(3), torch.arange(3) * 10)\nprint(ds[2][2], ds:__len())  --> tensor(10) 3' }
doc { 'torch.utils.data.Subset(dataset, indices) -> Subset',
  does = 'The samples of dataset at the given 1-based indices (an array or an int64 tensor).',
  ex = 'local s = data.Subset(data.TensorDataset(torch.arange(5)), {5, 1})\nprint(s[1][1], s:__len())  --> tensor(4) 2' }
doc { 'torch.utils.data.ConcatDataset(datasets) -> ConcatDataset',
  does = 'The datasets of an array one after another.',
  ex = 'local c = data.ConcatDataset({data.TensorDataset(torch.zeros(2)), data.TensorDataset(torch.ones(3))})\nprint(c:__len(), c[3][1])  --> 5 tensor(1.)' }
doc { 'torch.utils.data.ChainDataset(datasets) -> ChainDataset',
  does = 'Iterable datasets chained one after another.',
  ex = 'print(torch.isinstance(data.ChainDataset({}), data.IterableDataset))  --> true' }
doc { 'torch.utils.data.random_split(dataset, lengths, {generator=}) -> {Subset, ...}',
  does = 'Random non-overlapping Subsets of the given lengths (counts, or fractions summing to 1), PyTorch\'s split for the same generator.',
  ex = 'local parts = data.random_split(data.TensorDataset(torch.arange(10)), {0.8, 0.2}, {generator = torch.Generator():manual_seed(0)})\nprint(parts[1]:__len(), parts[2]:__len())  --> 8 2' }
doc { 'torch.utils.data.len(x) -> number',
  does = 'Python\'s len: an object\'s __len(), a tensor\'s first size, an array\'s length (#ds does not reach __len under LuaJIT).',
  pt = false,
  ex = 'print(data.len(data.TensorDataset(torch.zeros(7))), data.len({1, 2}))  --> 7 2' }

doc.section 'Samplers'
doc { 'torch.utils.data.Sampler([data_source]) -> Sampler', 'torch.utils.data.Sampler:iter() -> iterator', pt = 'torch.utils.data.Sampler (iter(sampler) for iter)',
  does = 'The base class of samplers: iter() (or calling the sampler) yields indices, counted from 1.',
  ex = 'local n = 0\nfor i in data.SequentialSampler({1, 2, 3})() do n = n + i end\nprint(n)  --> 6' }
doc { 'torch.utils.data.SequentialSampler(data_source) -> Sampler',
  does = 'Yields 1, 2, ..., #data_source.',
  ex = 'local s = {}\nfor i in data.SequentialSampler(data.TensorDataset(torch.zeros(3))):iter() do s[#s + 1] = i end\nprint(table.concat(s, \' \'))  --> 1 2 3' }
doc { 'torch.utils.data.RandomSampler(data_source, {replacement=false, num_samples=, generator=}) -> Sampler',
  'torch.utils.data.RandomSampler:num_samples() -> number',
  does = 'Yields the indices in a random order (with replacement: num_samples random indices); PyTorch\'s order for the same generator.',
  ex = 'local s = {}\nfor i in data.RandomSampler({1, 2, 3}, {generator = torch.Generator():manual_seed(0)}):iter() do s[#s + 1] = i end\nprint(#s)  --> 3' }
doc { 'torch.utils.data.SubsetRandomSampler(indices, {generator=}) -> Sampler',
  does = 'Yields the given indices in a random order.',
  ex = 'local n = 0\nfor i in data.SubsetRandomSampler({2, 4}):iter() do n = n + i end\nprint(n)  --> 6' }
doc { 'torch.utils.data.WeightedRandomSampler(weights, num_samples, {replacement=true, generator=}) -> Sampler',
  does = 'Yields num_samples indices drawn with the given weights.',
  ex = 'local s = {}\nfor i in data.WeightedRandomSampler({0, 1}, 3):iter() do s[#s + 1] = i end\nprint(table.concat(s, \' \'))  --> 2 2 2' }
doc { 'torch.utils.data.BatchSampler(sampler, batch_size, drop_last) -> Sampler',
  does = 'Yields arrays of batch_size indices from another sampler (the last one shorter unless drop_last).',
  ex = 'local b = {}\nfor batch in data.BatchSampler(data.SequentialSampler({1, 2, 3}), 2, false):iter() do b[#b + 1] = #batch end\nprint(table.concat(b, \' \'))  --> 2 1' }

doc.section 'The loader'
doc { 'torch.utils.data.DataLoader(dataset, {batch_size=1, shuffle=false, sampler=, batch_sampler=, num_workers=0, collate_fn=, pin_memory=false, drop_last=false, timeout=0, worker_init_fn=, multiprocessing_context=, generator=, prefetch_factor=2, persistent_workers=false, pin_memory_device=}) -> DataLoader',
  does = 'Batches of samples: for x, y in loader:iter() do (or loader()) yields each batch\'s members as several values; loader:__len() counts the batches. shuffle draws PyTorch\'s order for the same generator; batch_size = false turns batching off (PyTorch\'s None). num_workers > 0 loads the batches in that many forked worker processes (Linux), handed back through shared memory in the sampler\'s order, each worker seeded with base_seed + its id as in PyTorch; worker_init_fn(id), prefetch_factor (batches in flight per worker), persistent_workers (the same processes every pass) and timeout (seconds) as PyTorch\'s; pin_memory does nothing without CUDA; multiprocessing_context can only be \'fork\'. An error in a worker is raised at the loop with the worker\'s id and traceback.',
  ex = 'local loader = data.DataLoader(data.TensorDataset(torch.arange(5), torch.arange(5) * 2), {batch_size = 2})\nfor x, y in loader:iter() do print(x, y) end\nprint(loader:__len())  --> 3' }
doc { 'torch.utils.data.DataLoader:iter() -> iterator', pt = 'torch.utils.data.DataLoader (iter(loader))',
  does = 'An iterator over the batches (a new pass, reshuffled when shuffle is on); calling the loader does the same.',
  ex = 'local n = 0\nfor x in data.DataLoader(data.TensorDataset(torch.zeros(4)), {batch_size = 3}):iter() do n = n + 1 end\nprint(n)  --> 2' }
doc { 'torch.utils.data.DataLoader.collate_fn(batch) -> batch', 'torch.utils.data.default_collate(batch) -> batch',
  keys = { 'torch.utils.data.DataLoader:collate_fn' }, pt = 'torch.utils.data.default_collate',
  does = 'Merges an array of samples into a batch: tensors stacked, numbers into a tensor (int64 for integral ones, else float64), arrays and tables member by member.',
  ex = 'local b = data.default_collate({{torch.ones(2), 1}, {torch.zeros(2), 2}})\nprint(b[1]:size(), b[2])  --> torch.Size([2, 2]) tensor([1, 2])' }
doc { 'torch.utils.data.default_convert(data) -> data',
  does = 'What a loader does to each sample with batching off: numbers and arrays of them to tensors, tensors as they are.',
  ex = 'print(torch.is_tensor(data.default_convert(torch.ones(1))))  --> true' }
doc { 'torch.utils.data.get_worker_info() -> info or nil',
  does = 'Inside a loader\'s worker process: its id (0 to num_workers - 1, as PyTorch counts), num_workers, seed (base_seed + id, an int64 cdata) and dataset (the worker\'s copy); nil in the process that iterates. An IterableDataset shards its stream with it.',
  ex = 'print(data.get_worker_info())  --> nil' }

doc.section 'Datasets on disk'
doc { 'torch.datasets.MNIST(root, {train=true, transform=, target_transform=}) -> Dataset',
  'torch.datasets.FashionMNIST(root, {train=true, transform=, target_transform=}) -> Dataset',
  'torch.datasets.KMNIST(root, {train=true, transform=, target_transform=}) -> Dataset',
  does = 'The IDX image datasets from a folder (gzip\'d files too where zlib is built in): samples {image, label}, a float32 1x28x28 image in [0, 1] and the class counted from 1 (ds.classes[label]). FashionMNIST defaults to Debian\'s dataset-fashion-mnist folder.',
  pt = 'torchvision.datasets.MNIST, torchvision.datasets.FashionMNIST, torchvision.datasets.KMNIST',
  ex = 'print(torch.datasets.MNIST.classes[1])  --> 0 - zero' }
doc { 'torch.datasets.read_idx(path) -> Tensor',
  does = 'An IDX file (plain or gzip) as a tensor of its own dtype and sizes.',
  pt = false,
  ex = 'print(type(torch.datasets.read_idx))  --> function' }
doc { 'torch.datasets.has_zlib() -> boolean',
  does = 'Whether this build reads gzip\'d IDX files.',
  pt = false,
  ex = 'print(type(torch.datasets.has_zlib()))  --> boolean' }
doc { 'torch.datasets.transforms.Normalize(mean, std) -> transform',
  does = '(image - mean) / std per channel (arrays or numbers), as torchvision\'s on a tensor.',
  pt = 'torchvision.transforms.Normalize',
  ex = 'print(torch.datasets.transforms.Normalize({0.5}, {0.5})(torch.ones(1, 1, 1)))  --> tensor([[[1.]]])' }
doc { 'torch.datasets.transforms.Compose(transforms) -> transform',
  does = 'The transforms of an array applied in turn.',
  pt = 'torchvision.transforms.Compose',
  ex = 'local t = torch.datasets.transforms.Compose({function(x) return x * 2 end, function(x) return x + 1 end})\nprint(t(torch.ones(1)))  --> tensor([3.])' }
