-- nn.utils.prune (PyTorch 1.13's torch.nn.utils.prune): masks over a module's tensors.
--
--   prune.l1_unstructured(m, 'weight', 0.3)   -- weight_orig (the parameter), weight_mask (a
--                                             -- buffer), weight = weight_orig * weight_mask,
--                                             -- recomputed by a forward pre-hook
--   prune.remove(m, 'weight')                 -- weight a parameter again, its pruned values
--
-- As PyTorch: the pruning method object is the forward pre-hook; pruning a tensor twice puts both
-- methods in a PruningContainer, the second acting on what the first kept; the random methods
-- draw PyTorch's masks under the same seed. The hooks are saved with the module by torch.save.
-- Beyond PyTorch, whose pruning saves neither time nor memory: prune.remove(m, 'weight',
-- {sparse=true}) on a Linear whose weight is at least 90% zeros keeps the weight in CSR form
-- (torch.sparse_csr, lua/ops/sparse.lua), whose product skips the zeros.
--
-- Lua spellings: an `amount` with a fraction is a fraction of the elements (0.3), an integral one a
-- count (Python's int: 2); 0 prunes nothing either way, and pruning everything is the count
-- t:numel(). `dim` counts from 1 (PyTorch's default -1 stays -1). Class methods take the class
-- first: prune.L1Unstructured:apply(m, 'weight', 0.3). Keyword arguments go in a trailing table.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local Mod = require 'moontorch.nn.Module'

local fail = core.fail
local is_tensor, is_module = T.is_tensor, Mod.is_module
local floor, huge = math.floor, math.huge

local prune = {}

local function is_method(x) return type(x) == 'table' and class.isinstance(x, prune.BasePruningMethod) end
local function opts_last(...)
  local n = select('#', ...)
  if n == 0 then return 0, nil end
  local last = select(n, ...)
  if n > 0 and type(last) == 'table' and not is_tensor(last) and getmetatable(last) == nil and last[1] == nil then
    return n - 1, last
  end
  return n, nil
end
local function nograd(fn, ...)
  local prev = torch.is_grad_enabled()
  torch.set_grad_enabled(false)
  local res = { pcall(fn, ...) }
  torch.set_grad_enabled(prev)
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end

------------------------------------------------------------------------------ amounts
local function is_integral(a) return a % 1 == 0 end

local function validate_amount_init(amount)
  if type(amount) ~= 'number' or amount ~= amount then
    fail('nn.utils.prune', ('Invalid type for amount: %s. Must be int or float.'):format(tostring(amount)))
  end
  if (is_integral(amount) and amount < 0) or (not is_integral(amount) and (amount > 1 or amount < 0)) then
    fail('nn.utils.prune', ('amount=%s should either be a float in the range [0, 1] or a non-negative integer')
      :format(tostring(amount)))
  end
end

local function validate_amount(amount, tensor_size)
  if is_integral(amount) and amount > tensor_size then
    fail('nn.utils.prune', ('amount=%d should be smaller than the number of parameters to prune=%d')
      :format(amount, tensor_size))
  end
end

-- Python's round(): halves to even
local function py_round(x)
  local f = floor(x)
  local d = x - f
  if d > 0.5 then return f + 1 end
  if d < 0.5 then return f end
  return f % 2 == 0 and f or f + 1
end

local function nparams_toprune(amount, tensor_size)
  if is_integral(amount) then return amount end
  return py_round(amount * tensor_size)
end

local function validate_structured(t)
  if t:dim() <= 1 then
    fail('nn.utils.prune', ('Structured pruning can only be applied to multidimensional tensors. Found tensor of ' ..
      'shape %s with %d dims'):format(tostring(t:size()), t:dim()))
  end
end

-- a 1-based dim (negative from the end) as a positive one, or PyTorch's IndexError
local function pdim(t, dim)
  local n = t:dim()
  if type(dim) ~= 'number' or dim % 1 ~= 0 or dim == 0 or dim > n or dim < -n then
    fail('nn.utils.prune', ('Invalid index %s for tensor of size %s'):format(tostring(dim), tostring(t:size())))
  end
  return dim > 0 and dim or dim + n + 1
end

-- the n-norm of t over every dim but dim (1-based)
local function norm_except(t, n, dim)
  local dims = {}
  for d = 1, t:dim() do if d ~= dim then dims[#dims + 1] = d end end
  return t:norm(n == 'fro' and 2 or n, dims)
end

------------------------------------------------------------------------------ BasePruningMethod
local Base = class.class('nn.utils.prune.BasePruningMethod')
prune.BasePruningMethod = Base

function Base:__init() end

-- the forward pre-hook: module[name] = mask * orig
function Base:__call(module)
  module[self._tensor_name] = self:apply_mask(module)
end

function Base:compute_mask()
  fail('nn.utils.prune', ('%s must define compute_mask(t, default_mask)'):format(class.typename(self) or 'the method'))
end

function Base:apply_mask(module)
  if self._tensor_name == nil then fail('nn.utils.prune', ('Module %s has to be pruned'):format(tostring(module))) end
  local mask = module[self._tensor_name .. '_mask']
  local orig = module[self._tensor_name .. '_orig']
  return mask:to(orig.dtype) * orig
end

-- the pruning method to install on module[name]: a new cls(...), or the container of it and the
-- method already there (whose hook is taken off)
local function composite_method(cls, module, name, ...)
  local old, found = nil, 0
  for _, e in ipairs(Mod.hooks_of(module, 'forward_pre') or {}) do
    if is_method(e.fn) and e.fn._tensor_name == name then
      old = e.fn
      found = found + 1
    end
  end
  if found > 1 then
    fail('nn.utils.prune', ('Avoid adding multiple pruning hooks to the same tensor %s of module %s. Use a ' ..
      'PruningContainer.'):format(name, tostring(module)))
  end
  Mod.drop_hooks(module, 'forward_pre', function(fn) return is_method(fn) and fn._tensor_name == name end)
  local method = cls(...)
  method._tensor_name = name
  if old ~= nil then
    if class.isinstance(old, prune.PruningContainer) then
      old:add_pruning_method(method)
      method = old
    else
      local container = prune.PruningContainer(old)
      container:add_pruning_method(method)
      method = container
    end
  end
  return method
end

-- Cls:apply(module, name, ctor args..., {importance_scores=}) -> the method installed
function Base.apply(cls, module, name, ...)
  if type(cls) ~= 'table' or rawget(cls, '__typename') == nil then
    fail('nn.utils.prune', 'apply is called on the method class: Cls:apply(module, name, ...)')
  end
  if not is_module(module) then fail('nn.utils.prune', ('module must be an nn.Module (got %s)'):format(Mod.typename_of(module))) end
  if type(name) ~= 'string' then fail('nn.utils.prune', 'name must be a string') end
  local n, kw = opts_last(...)
  local importance_scores = kw and kw.importance_scores
  local args = { ... }
  if kw and next(kw) ~= nil then
    -- other options are the constructor's
    local rest = {}
    for k, v in pairs(kw) do if k ~= 'importance_scores' then rest[k] = v end end
    if next(rest) ~= nil then args[n + 1] = rest; n = n + 1 end
  end
  local orig = module[name]
  if not is_tensor(orig) then
    fail('nn.utils.prune', ("Module '%s' has no parameter or buffer with name '%s'"):format(tostring(module), name))
  end
  local method = composite_method(cls, module, name, unpack(args, 1, n))
  if importance_scores ~= nil then
    if not is_tensor(importance_scores) or importance_scores:size() ~= orig:size() then
      fail('nn.utils.prune', ('importance_scores should have the same shape as parameter %s of %s')
        :format(name, tostring(module)))
    end
  else
    importance_scores = orig
  end
  local is_container = class.isinstance(method, prune.PruningContainer)
  local default_mask
  if not is_container then
    local params = rawget(module, '_parameters')
    if not params[name] then
      fail('nn.utils.prune', ("'%s' is not a parameter of %s"):format(name, module:_get_name()))
    end
    module:register_parameter(name .. '_orig', orig)
    module[name] = nil
    default_mask = torch.ones_like(orig)
  else
    default_mask = module[name .. '_mask']:detach():clone({ memory_format = torch.contiguous_format })
  end
  local ok, err = pcall(function()
    local mask = nograd(function() return method:compute_mask(importance_scores, default_mask) end)
    if rawget(module, '_buffers')[name .. '_mask'] ~= nil then
      module[name .. '_mask'] = mask
    else
      module:register_buffer(name .. '_mask', mask)
    end
    module[name] = method:apply_mask(module)
    module:register_forward_pre_hook(method)
  end)
  if not ok then
    if not is_container then
      local o = module[name .. '_orig']
      module[name] = nil
      module[name .. '_orig'] = nil
      module:register_parameter(name, o)
    end
    error(err, 0)
  end
  return method
end

-- method:prune(t, default_mask=nil, importance_scores=nil) (or {default_mask=, importance_scores=}):
-- t times the mask computed for it
function Base:prune(t, default_mask, importance_scores)
  if type(default_mask) == 'table' and not is_tensor(default_mask) then
    default_mask, importance_scores = default_mask.default_mask, default_mask.importance_scores
  end
  if importance_scores ~= nil then
    if importance_scores:size() ~= t:size() then
      fail('nn.utils.prune', 'importance_scores should have the same shape as tensor t')
    end
  else
    importance_scores = t
  end
  default_mask = default_mask or torch.ones_like(t)
  return t * self:compute_mask(importance_scores, default_mask)
end

-- method:remove(module): module[name] a parameter again, holding the pruned values (in the
-- parameter weight_orig was, so optimizers keep it)
function Base:remove(module)
  local name = self._tensor_name
  if name == nil then
    fail('nn.utils.prune', ('Module %s has to be pruned before pruning can be removed'):format(tostring(module)))
  end
  local weight = nograd(function() return self:apply_mask(module) end)
  module[name] = nil
  local orig = rawget(module, '_parameters')[name .. '_orig']
  orig.data = weight:detach()
  module[name .. '_orig'] = nil
  module[name .. '_mask'] = nil
  module[name] = orig
end

------------------------------------------------------------------------------ PruningContainer
local Container = class.class('nn.utils.prune.PruningContainer', Base)
prune.PruningContainer = Container

-- PruningContainer(method, ...): the methods applied in turn to one tensor
function Container:__init(...)
  self._pruning_methods = {}
  local n = select('#', ...)
  if n == 1 then
    local m = ...
    self._tensor_name = m._tensor_name
    self:add_pruning_method(m)
  else
    for i = 1, n do self:add_pruning_method((select(i, ...))) end
  end
end

function Container:add_pruning_method(method)
  if method ~= nil and not is_method(method) then
    fail('nn.utils.prune.PruningContainer', ('%s is not a BasePruningMethod subclass'):format(Mod.typename_of(method)))
  elseif method ~= nil and self._tensor_name ~= method._tensor_name then
    fail('nn.utils.prune.PruningContainer', ("Can only add pruning methods acting on the parameter named '%s' to " ..
      "PruningContainer %s. Found '%s'"):format(tostring(self._tensor_name), tostring(self), tostring(method._tensor_name)))
  end
  local l = self._pruning_methods
  l[#l + 1] = method
  rawset(self, #l, method)
end

function Container:len() return #self._pruning_methods end

-- the last method's mask over what the earlier ones kept
function Container:compute_mask(t, default_mask)
  local method = self._pruning_methods[#self._pruning_methods]
  local mask = default_mask
  local new_mask = mask:to(t.dtype)
  local kind = method.PRUNING_TYPE
  if kind == 'unstructured' then
    local slc = mask:eq(1)
    local partial = method:compute_mask(t:masked_select(slc), mask:masked_select(slc))
    new_mask:masked_scatter_(slc, partial:to(new_mask.dtype))
  elseif kind == 'structured' then
    if method.dim == nil then
      fail('nn.utils.prune', 'Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` defined.')
    end
    local dim = pdim(t, method.dim)
    local others = {}
    for d = 1, t:dim() do if d ~= dim then others[#others + 1] = d end end
    local keep = mask:sum(others):ne(0)
    local idx = keep:nonzero():reshape(-1)
    local partial = method:compute_mask(t:index_select(dim, idx), mask:index_select(dim, idx))
    new_mask:index_copy_(dim, idx, partial:to(new_mask.dtype))
  elseif kind == 'global' then
    new_mask = method:compute_mask(t, mask):to(new_mask.dtype)
  else
    fail('nn.utils.prune', ('Unrecognized PRUNING_TYPE %s'):format(tostring(kind)))
  end
  return new_mask
end

------------------------------------------------------------------------------ the methods
local function method_class(name, kind)
  local cls = class.class('nn.utils.prune.' .. name, Base)
  cls.PRUNING_TYPE = kind
  prune[name] = cls
  return cls
end

local Identity = method_class('Identity', 'unstructured')
function Identity:compute_mask(_, default_mask) return default_mask end

local function unstructured_init(self, amount)
  if type(amount) == 'table' then amount = amount.amount end
  validate_amount_init(amount)
  self.amount = amount
end

local RandomUnstructured = method_class('RandomUnstructured', 'unstructured')
RandomUnstructured.__init = unstructured_init
function RandomUnstructured:compute_mask(t, default_mask)
  local size = t:numel()
  local k = nparams_toprune(self.amount, size)
  validate_amount(k, size)
  local mask = default_mask:clone({ memory_format = torch.contiguous_format })
  if k ~= 0 then
    local prob = torch.rand_like(t)
    local _, idx = prob:view(-1):topk(k)
    mask:view(-1):index_fill_(1, idx, 0)
  end
  return mask
end

local L1Unstructured = method_class('L1Unstructured', 'unstructured')
L1Unstructured.__init = unstructured_init
function L1Unstructured:compute_mask(t, default_mask)
  local size = t:numel()
  local k = nparams_toprune(self.amount, size)
  validate_amount(k, size)
  local mask = default_mask:clone({ memory_format = torch.contiguous_format })
  if k ~= 0 then
    local _, idx = t:abs():reshape(-1):topk(k, { largest = false })
    mask:view(-1):index_fill_(1, idx, 0)
  end
  return mask
end

local function structured_mask(t, dim, idx)
  local mask = torch.zeros_like(t)
  mask:index_fill_(dim, idx, 1)
  return mask
end

-- RandomStructured(amount, dim=-1)
local RandomStructured = method_class('RandomStructured', 'structured')
function RandomStructured:__init(amount, dim)
  if type(amount) == 'table' then amount, dim = amount.amount, amount.dim end
  validate_amount_init(amount)
  self.amount = amount
  self.dim = dim or -1
end
function RandomStructured:compute_mask(t, default_mask)
  validate_structured(t)
  local dim = pdim(t, self.dim)
  local size = t:size(dim)
  local k = nparams_toprune(self.amount, size)
  validate_amount(k, size)
  if k == 0 then return default_mask end
  local prob = torch.rand(size)
  local threshold = prob:kthvalue(k)
  local idx = prob:gt(threshold):nonzero():reshape(-1)
  local mask = structured_mask(t, dim, idx)
  mask:mul_(default_mask:to(mask.dtype))
  return mask
end

-- LnStructured(amount, n, dim=-1)
local LnStructured = method_class('LnStructured', 'structured')
function LnStructured:__init(amount, n, dim)
  if type(amount) == 'table' then amount, n, dim = amount.amount, amount.n, amount.dim end
  validate_amount_init(amount)
  self.amount = amount
  self.n = n
  self.dim = dim or -1
end
function LnStructured:compute_mask(t, default_mask)
  validate_structured(t)
  local dim = pdim(t, self.dim)
  local size = t:size(dim)
  local k = nparams_toprune(self.amount, size)
  validate_amount(k, size)
  if k == 0 then return default_mask end
  local norm = norm_except(t, self.n, dim)
  local _, idx = norm:topk(size - k, { largest = true })
  local mask = structured_mask(t, dim, idx)
  mask:mul_(default_mask:to(mask.dtype))
  return mask
end

-- CustomFromMask(mask)
local CustomFromMask = method_class('CustomFromMask', 'global')
function CustomFromMask:__init(mask)
  if type(mask) == 'table' and not is_tensor(mask) then mask = mask.mask end
  self.mask = mask
end
function CustomFromMask:compute_mask(_, default_mask)
  if default_mask:size() ~= self.mask:size() then
    fail('nn.utils.prune.custom_from_mask', ('the mask has shape %s, the tensor %s'):format(tostring(self.mask:size()),
      tostring(default_mask:size())))
  end
  return default_mask * self.mask:to(default_mask.dtype)
end

------------------------------------------------------------------------------ the functions
function prune.identity(module, name)
  Identity:apply(module, name)
  return module
end
function prune.random_unstructured(module, name, amount)
  if type(amount) == 'table' then amount = amount.amount end
  RandomUnstructured:apply(module, name, amount)
  return module
end
-- l1_unstructured(module, name, amount, {importance_scores=})
function prune.l1_unstructured(module, name, amount, opts)
  if type(amount) == 'table' then amount, opts = amount.amount, amount end
  L1Unstructured:apply(module, name, amount, { importance_scores = opts and opts.importance_scores })
  return module
end
-- random_structured(module, name, amount, dim)
function prune.random_structured(module, name, amount, dim)
  if type(amount) == 'table' then amount, dim = amount.amount, amount.dim end
  RandomStructured:apply(module, name, amount, dim)
  return module
end
-- ln_structured(module, name, amount, n, dim, {importance_scores=})
function prune.ln_structured(module, name, amount, n, dim, opts)
  if type(amount) == 'table' then amount, n, dim, opts = amount.amount, amount.n, amount.dim, amount end
  LnStructured:apply(module, name, amount, n, dim, { importance_scores = opts and opts.importance_scores })
  return module
end
function prune.custom_from_mask(module, name, mask)
  if type(mask) == 'table' and not is_tensor(mask) then mask = mask.mask end
  CustomFromMask:apply(module, name, mask)
  return module
end

-- global_unstructured(parameters, pruning_method, {amount=, importance_scores=, ...}) or
-- global_unstructured(parameters, {pruning_method=, amount=, ...}): parameters an array of
-- {module, name}; importance_scores an array of {module, name, scores} or a table
-- module -> {name -> scores}. One mask over all of them, cut into each.
function prune.global_unstructured(parameters, pruning_method, opts)
  local op = 'nn.utils.prune.global_unstructured'
  if type(pruning_method) == 'table' and rawget(pruning_method, '__typename') == nil and opts == nil then
    opts, pruning_method = pruning_method, pruning_method.pruning_method
  end
  opts = opts or {}
  if type(parameters) ~= 'table' or is_module(parameters) then fail(op, 'global_unstructured(): parameters is not an Iterable') end
  local scores = opts.importance_scores or {}
  if type(scores) ~= 'table' then fail(op, 'global_unstructured(): importance_scores must be of type dict') end
  local function score_of(m, name)
    for _, e in ipairs(scores) do
      if rawequal(e[1], m) and e[2] == name then return e[3] end
    end
    local by = rawget(scores, m)
    if type(by) == 'table' and by[name] ~= nil then return by[name] end
    return m[name]
  end
  local rel, defaults = {}, {}
  for i, pn in ipairs(parameters) do
    local m, name = pn[1], pn[2]
    if not is_module(m) or type(name) ~= 'string' then
      fail(op, ('parameters[%d] must be a {module, name} pair'):format(i))
    end
    rel[i] = score_of(m, name):reshape(-1)
    local mk = m[name .. '_mask']
    defaults[i] = (mk or torch.ones_like(m[name])):reshape(-1)
  end
  local relevant = torch.cat(rel)
  local default_mask = torch.cat(defaults)
  local container = Container()
  container._tensor_name = 'temp'
  local kwargs = {}
  for k, v in pairs(opts) do
    if k ~= 'importance_scores' and k ~= 'pruning_method' then kwargs[k] = v end
  end
  local method = pruning_method(kwargs)
  method._tensor_name = 'temp'
  if method.PRUNING_TYPE ~= 'unstructured' then
    fail(op, ('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method %s of type %s')
      :format(tostring(pruning_method), tostring(method.PRUNING_TYPE)))
  end
  container:add_pruning_method(method)
  local final = nograd(function() return container:compute_mask(relevant, default_mask) end)
  local pointer = 1
  for _, pn in ipairs(parameters) do
    local m, name = pn[1], pn[2]
    local p = m[name]
    local n = p:numel()
    prune.custom_from_mask(m, name, final:narrow(1, pointer, n):view_as(p))
    pointer = pointer + n
  end
end

-- remove(module, name, {sparse=false}): module[name] a parameter again, of its pruned values. With
-- sparse=true, a Linear's weight that is at least 90% zeros is kept as a torch.sparse_csr
-- parameter instead (see sparse_weight); otherwise sparse changes nothing.
function prune.remove(module, name, opts)
  for _, e in ipairs(Mod.hooks_of(module, 'forward_pre') or {}) do
    if is_method(e.fn) and e.fn._tensor_name == name then
      e.fn:remove(module)
      Mod.drop_hooks(module, 'forward_pre', function(fn) return rawequal(fn, e.fn) end)
      if type(opts) == 'table' and opts.sparse then prune.sparse_weight(module, name) end
      return module
    end
  end
  fail('nn.utils.prune.remove', ("Parameter '%s' of module %s has to be pruned before pruning can be removed")
    :format(tostring(name), tostring(module)))
end

-- is_pruned(module): does it or a submodule carry a pruning hook?
function prune.is_pruned(module)
  for _, sub in module:named_modules() do
    for _, e in ipairs(Mod.hooks_of(sub, 'forward_pre') or {}) do
      if is_method(e.fn) then return true end
    end
  end
  return false
end

-- The forward pre-hook of a CSR weight (sparse_weight): module[name] = the CSR matrix of the
-- registered <name>_crow_indices, <name>_col_indices (buffers) and <name>_values (the parameter),
-- so that to(), state_dict and optimizers see plain tensors. Saved with the module.
local SparseWeight = class.class('nn.utils.prune.SparseWeight')
prune._SparseWeight = SparseWeight
function SparseWeight:__init(name, rows, cols) self.name, self.rows, self.cols = name, rows, cols end
function SparseWeight:weight(module)
  local n = self.name
  return torch.sparse_csr_tensor(module[n .. '_crow_indices'], module[n .. '_col_indices'], module[n .. '_values'],
    { self.rows, self.cols })
end
function SparseWeight:__call(module) module[self.name] = self:weight(module) end

-- sparse_weight(module, name='weight', {threshold=0.9}): when at least `threshold` of module[name]
-- (a 2-D parameter) is zeros, it is kept in CSR form: the parameter <name>_values (its nonzeros,
-- trained in place of the dense parameter: the zeros stay zeros), the buffers <name>_crow_indices
-- and <name>_col_indices, and module[name] the torch.sparse_csr matrix of them (rebuilt before
-- each forward), which F.linear multiplies skipping the zeros. Returns true when it did.
function prune.sparse_weight(module, name, opts)
  name = name or 'weight'
  local threshold = (type(opts) == 'table' and opts.threshold) or 0.9
  local p = rawget(module, '_parameters')[name]
  if not p or p:dim() ~= 2 or p.is_meta or p:numel() == 0 then return false end
  local zeros = nograd(function() return p:eq(0):sum():item() end)
  -- (at least the count an amount of `threshold` prunes: 90% of 4096 x 4096 is 15099494 zeros)
  if zeros < py_round(threshold * p:numel()) then return false end
  local csr = nograd(function() return p:detach():to_sparse_csr() end)
  module[name] = nil
  module:register_parameter(name .. '_values', Mod.Parameter(csr:values(), p.requires_grad))
  module:register_buffer(name .. '_crow_indices', csr:crow_indices())
  module:register_buffer(name .. '_col_indices', csr:col_indices())
  local hook = SparseWeight(name, p:size(1), p:size(2))
  module:register_forward_pre_hook(hook)
  hook(module)
  return true
end

return prune
