-- The docs of nn.utils.prune (issue 24; moontorch.doc: lua/doc/init.lua says how an entry is written).
local doc = ...

doc.section 'Nn.utils.prune'
doc { 'nn.utils.prune.l1_unstructured(module, name, amount, {importance_scores=}) -> module',
  does = 'Prunes the amount (a fraction, or an integral count) of module[name]\'s entries of least magnitude (or importance): name_orig becomes the parameter, name_mask a buffer, and a forward pre-hook sets name = name_orig * name_mask.',
  ex = 'local m = nn.utils.prune.l1_unstructured(nn.Linear(4, 3), \'weight\', 0.5)\nprint(m.weight_mask:sum(), m:state_dict():keys()[2])  --> tensor(6.) weight_orig' }
doc { 'nn.utils.prune.random_unstructured(module, name, amount) -> module',
  does = 'Prunes the amount of entries at random (PyTorch\'s mask for the same seed).',
  ex = 'local m = nn.utils.prune.random_unstructured(nn.Linear(5, 2), \'weight\', 3)\nprint(m.weight_mask:eq(0):sum())  --> tensor(3)' }
doc { 'nn.utils.prune.ln_structured(module, name, amount, n, dim, {importance_scores=}) -> module',
  'nn.utils.prune.random_structured(module, name, amount, dim) -> module',
  does = 'Prunes whole slices along dim (1-based): those of least n-norm, or at random.',
  ex = 'local c = nn.utils.prune.ln_structured(nn.Conv2d(2, 4, 3), \'weight\', 0.5, 2, 1)\nprint(c.weight_mask:sum({2, 3, 4}):ne(0):sum())  --> tensor(2)' }
doc { 'nn.utils.prune.global_unstructured(parameters, pruning_method, {amount=, importance_scores=, ...})',
  does = 'One unstructured pruning over several tensors together: parameters an array of {module, name}; importance_scores an array of {module, name, scores} (or module -> {name -> scores}); the options go to the method.',
  ex = 'local a, b = nn.Linear(4, 3), nn.Linear(3, 2)\nnn.utils.prune.global_unstructured({{a, \'weight\'}, {b, \'weight\'}}, nn.utils.prune.L1Unstructured, {amount = 9})\nprint(a.weight_mask:eq(0):sum() + b.weight_mask:eq(0):sum())  --> tensor(9)' }
doc { 'nn.utils.prune.custom_from_mask(module, name, mask) -> module', 'nn.utils.prune.identity(module, name) -> module',
  does = 'Prunes with a mask given (multiplied into any earlier one), or with none (all ones): the pruning machinery without pruning.',
  ex = 'local m = nn.utils.prune.custom_from_mask(nn.Linear(2, 2), \'bias\', torch.tensor({0, 1}))\nprint(m.bias_mask)  --> tensor([0., 1.])' }
doc { 'nn.utils.prune.remove(module, name, {sparse=false}) -> module',
  does = 'Makes the pruning permanent: name a parameter again (the pruned values, in the weight_orig Parameter object), the mask and hook gone. sparse = true (beyond PyTorch): a 2-D weight of at least 90% zeros is kept in CSR form (see sparse_weight), which F.linear multiplies faster.',
  ex = 'local m = nn.utils.prune.l1_unstructured(nn.Linear(100, 50), \'weight\', 0.95)\nnn.utils.prune.remove(m, \'weight\', {sparse = true})\nprint(m.weight.layout, m.weight:_nnz())  --> torch.sparse_csr 250' }
doc { 'nn.utils.prune.sparse_weight(module, name=\'weight\', {threshold=0.9}) -> boolean', pt = false,
  does = 'When at least threshold of module[name] is zeros: the parameter name_values (its nonzeros, still trained), the buffers name_crow_indices and name_col_indices, and module[name] the torch.sparse_csr matrix of them (made before each forward). Returns whether it did.',
  ex = 'local m = nn.Linear(3, 2)\nm.weight.data = torch.tensor({{0, 0, 1}, {0, 0, 0}})\nprint(nn.utils.prune.sparse_weight(m, \'weight\', {threshold = 0.8}), m:state_dict():keys()[2])  --> true weight_values' }
doc { 'nn.utils.prune.is_pruned(module) -> boolean',
  does = 'Whether the module or one of its submodules carries a pruning hook.',
  ex = 'print(nn.utils.prune.is_pruned(nn.utils.prune.identity(nn.Linear(2, 2), \'weight\')))  --> true' }
doc { 'nn.utils.prune.BasePruningMethod() -> BasePruningMethod',
  'nn.utils.prune.BasePruningMethod:apply(module, name, args..., {importance_scores=}) -> method',
  'nn.utils.prune.BasePruningMethod:compute_mask(t, default_mask) -> Tensor',
  'nn.utils.prune.BasePruningMethod:apply_mask(module) -> Tensor',
  'nn.utils.prune.BasePruningMethod:prune(t, default_mask, importance_scores) -> Tensor',
  'nn.utils.prune.BasePruningMethod:remove(module)',
  unchecked_args = true,
  does = 'The base of pruning methods: a subclass sets PRUNING_TYPE (\'unstructured\', \'structured\' with a dim, \'global\') and compute_mask; Cls:apply(module, name, ...) installs it (the class first: Lua\'s classmethod). The method object is the forward pre-hook.',
  ex = 'local Every2 = torch.class(\'doc.Every2\', nn.utils.prune.BasePruningMethod)\nEvery2.PRUNING_TYPE = \'unstructured\'\nfunction Every2:compute_mask(t, mask)\n  mask = mask:clone()\n  mask:view(-1):narrow(1, 1, 1):fill_(0)\n  return mask\nend\nlocal m = nn.Linear(2, 1)\nEvery2:apply(m, \'weight\')\nprint(m.weight_mask)  --> tensor([[0., 1.]])' }
doc { 'nn.utils.prune.PruningContainer(methods...) -> PruningContainer',
  'nn.utils.prune.PruningContainer:add_pruning_method(method)', 'nn.utils.prune.PruningContainer:len() -> number',
  'nn.utils.prune.PruningContainer:compute_mask(t, default_mask) -> Tensor',
  pt = 'torch.nn.utils.prune.PruningContainer, torch.nn.utils.prune.PruningContainer.add_pruning_method, torch.nn.utils.prune.PruningContainer.compute_mask',
  does = 'The methods applied to one tensor in turn (what pruning it twice installs): each new one computes its mask over what the earlier ones kept. container[i] is the i-th method.',
  ex = 'local m = nn.utils.prune.l1_unstructured(nn.Linear(4, 3), \'weight\', 0.5)\nnn.utils.prune.l1_unstructured(m, \'weight\', 2)\nprint(m.weight_mask:sum())  --> tensor(4.)' }
doc { 'nn.utils.prune.Identity() -> Identity', 'nn.utils.prune.Identity:compute_mask(t, default_mask) -> Tensor',
  'nn.utils.prune.RandomUnstructured(amount) -> RandomUnstructured', 'nn.utils.prune.RandomUnstructured:compute_mask(t, default_mask) -> Tensor',
  'nn.utils.prune.L1Unstructured(amount) -> L1Unstructured', 'nn.utils.prune.L1Unstructured:compute_mask(t, default_mask) -> Tensor',
  'nn.utils.prune.RandomStructured(amount, dim=-1) -> RandomStructured', 'nn.utils.prune.RandomStructured:compute_mask(t, default_mask) -> Tensor',
  'nn.utils.prune.LnStructured(amount, n, dim=-1) -> LnStructured', 'nn.utils.prune.LnStructured:compute_mask(t, default_mask) -> Tensor',
  'nn.utils.prune.CustomFromMask(mask) -> CustomFromMask', 'nn.utils.prune.CustomFromMask:compute_mask(t, default_mask) -> Tensor',
  does = 'The pruning methods behind the functions of the same names (Cls:apply(module, name, ...) as they do); method:prune(t) prunes a tensor alone.',
  ex = 'print(nn.utils.prune.L1Unstructured(0.5):prune(torch.tensor({1, -2, 3, -4})))  --> tensor([ 0., -0., 3., -4.])' }
