-- nn.utils.parametrize (PyTorch 1.13's torch.nn.utils.parametrize): a tensor of a module computed
-- from others on every read.
--
--   P.register_parametrization(m, 'weight', Symmetric())   -- m.weight = Symmetric()(original)
--   m.parametrizations.weight.original                     -- what the optimizer trains
--   m.weight = w                                           -- original = right_inverse(w)
--
-- As in PyTorch, the module's class is replaced by a subclass, `Parametrized<Class>`, whose field
-- lookup computes the parametrized names (PyTorch injects a property): the values stay in
-- m.parametrizations (a ModuleDict of ParametrizationList, one per name), so state_dict keys are
-- PyTorch's (`parametrizations.weight.original`, `original0`, `original1`, ... for several
-- originals). One such subclass exists per class; it is registered under its name, so torch.save /
-- torch.load and deep copies of parametrized modules work (PyTorch refuses both).
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local Mod = require 'moontorch.nn.Module'
local containers = require 'moontorch.nn.containers'

local fail = core.fail
local is_tensor, is_parameter, is_module = T.is_tensor, Mod.is_parameter, Mod.is_module
local Module, Parameter, ModuleList, ModuleDict = Mod.Module, Mod.Parameter, containers.ModuleList, containers.ModuleDict
local rawget, rawset, type, pcall, error, select = rawget, rawset, type, pcall, error, select

local P = {}

-- the name Python's type(x).__name__ gives, for messages
local function pytype(v)
  if v == nil then return 'NoneType' end
  if is_tensor(v) then return 'Tensor' end
  local tn = class.typename(v)
  if tn then return (tn:match('([^.]+)$')) end
  if type(v) == 'table' then return 'table' end
  if type(v) == 'number' then return v % 1 == 0 and 'int' or 'float' end
  if type(v) == 'string' then return 'str' end
  return type(v)
end

local function shape_str(t) return tostring(t:size()) end

------------------------------------------------------------------------------ NotImplementedError
-- A right_inverse that cannot invert raises P.not_implemented(msg) (Python's NotImplementedError):
-- at registration the inverse is then taken as the identity, as PyTorch does.
local NotImplemented = {}
NotImplemented.__index = NotImplemented
NotImplemented.__tostring = function(e) return 'NotImplementedError: ' .. e.msg end
function P.not_implemented(msg) error(setmetatable({ msg = msg or '' }, NotImplemented), 0) end
local function is_not_implemented(e) return getmetatable(e) == NotImplemented end

------------------------------------------------------------------------------ cached()
-- cached(fn, ...): runs fn(...) with the cache on and returns its results. While it runs, each
-- parametrized tensor is computed once, at its first read, and reused (PyTorch's `with cached():`);
-- the cache is dropped when the outermost cached() returns.
local cache_enabled = 0
local cache = setmetatable({}, { __mode = 'k' }) -- module -> {name -> tensor}
local function leave(ok, ...)
  cache_enabled = cache_enabled - 1
  if cache_enabled == 0 then cache = setmetatable({}, { __mode = 'k' }) end
  if not ok then error((...), 0) end
  return ...
end
function P.cached(fn, ...)
  if type(fn) ~= 'function' then fail('nn.utils.parametrize.cached', 'expected a function to run with the cache on') end
  cache_enabled = cache_enabled + 1
  return leave(pcall(fn, ...))
end

------------------------------------------------------------------------------ ParametrizationList
local ParametrizationList = class.class('nn.ParametrizationList', ModuleList)
P.ParametrizationList = ParametrizationList

local function register_tensor(module, name, x)
  if is_parameter(x) then module:register_parameter(name, x) else module:register_buffer(name, x) end
end

-- the results of a right_inverse as one tensor or an array of them: several returned values, or
-- one array, are a sequence (Python's tuple)
local function as_inverse(...)
  if select('#', ...) > 1 then return { ... } end
  return (...)
end

local function nograd(fn, ...)
  local prev = torch.is_grad_enabled()
  torch.set_grad_enabled(false)
  local res = { pcall(fn, ...) }
  torch.set_grad_enabled(prev)
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end

-- ParametrizationList(modules, original, unsafe): built by register_parametrization
function ParametrizationList:__init(modules, original, unsafe)
  local op = 'nn.utils.parametrize.ParametrizationList'
  if type(modules) ~= 'table' or #modules == 0 then fail(op, 'ParametrizationList requires one or more modules.') end
  ModuleList.__init(self, modules)
  self.unsafe = unsafe and true or false
  local original_shape, original_dtype = original:size(), original.dtype
  local new = nograd(function()
    local v = original
    for i = #modules, 1, -1 do
      local m = modules[i]
      if m.right_inverse ~= nil then
        local ok, r = pcall(function() return as_inverse(m:right_inverse(v)) end)
        if ok then v = r
        elseif not is_not_implemented(r) then error(r, 0) end
      end
    end
    return v
  end)
  if not is_tensor(new) and not (type(new) == 'table' and not class.typename(new)) then
    fail(op, ("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). Got %s"):format(pytype(new)))
  end
  self.is_tensor = is_tensor(new)
  self.ntensors = self.is_tensor and 1 or #new
  if self.is_tensor then
    if original.dtype ~= new.dtype then
      fail(op, ('When `right_inverse` outputs one tensor, it may not change the dtype.\noriginal.dtype: %s\n' ..
        'right_inverse(original).dtype: %s'):format(tostring(original.dtype), tostring(new.dtype)))
    end
    -- original takes new's values in place (PyTorch's set_): an optimizer holding it keeps working
    if not rawequal(new, original) then nograd(function() original.data = new:detach() end) end
    register_tensor(self, 'original', original)
  else
    for i = 1, #new do
      local oi = new[i]
      if not is_tensor(oi) then
        fail(op, ("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). " ..
          'Got element %d of the sequence with type %s.'):format(i - 1, pytype(oi)))
      end
      if is_parameter(original) then oi = Parameter(oi) end
      oi:requires_grad_(original.requires_grad)
      register_tensor(self, 'original' .. (i - 1), oi)
    end
  end
  if not self.unsafe then
    local Z = self:forward()
    if not is_tensor(Z) then fail(op, ('A parametrization must return a tensor. Got %s.'):format(pytype(Z))) end
    if Z.dtype ~= original_dtype then
      fail(op, ('Registering a parametrization may not change the dtype of the tensor, unless `unsafe` flag is ' ..
        'enabled.\nunparametrized dtype: %s\nparametrized dtype: %s'):format(tostring(original_dtype), tostring(Z.dtype)))
    end
    if Z:size() ~= original_shape then
      fail(op, ('Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is ' ..
        'enabled.\nunparametrized shape: %s\nparametrized shape: %s'):format(tostring(original_shape), shape_str(Z)))
    end
  end
end

-- right_inverse(value): the originals set from value through each parametrization's
-- right_inverse, the last registered first
function ParametrizationList:right_inverse(value)
  local op = 'nn.utils.parametrize.right_inverse'
  nograd(function()
    for i = #self, 1, -1 do
      local m = self[i]
      if m.right_inverse == nil then
        fail(op, ('parametrization %s does not implement right_inverse.'):format(m:_get_name()))
      end
      value = as_inverse(m:right_inverse(value))
    end
    if self.is_tensor then
      if not is_tensor(value) then fail(op, ('`right_inverse` should return a tensor. Got %s'):format(pytype(value))) end
      local orig = self.original
      if value.dtype ~= orig.dtype then
        fail(op, ('The tensor returned by `right_inverse` has dtype %s while `original` has dtype %s')
          :format(tostring(value.dtype), tostring(orig.dtype)))
      end
      orig.data = value:detach()
    else
      if is_tensor(value) or type(value) ~= 'table' then
        fail(op, ("'right_inverse' must return a sequence of tensors. Got %s."):format(pytype(value)))
      end
      if #value ~= self.ntensors then
        fail(op, ("'right_inverse' must return a sequence of tensors of length %d. Got a sequence of lenght %d.")
          :format(self.ntensors, #value))
      end
      for i = 1, #value do
        local t, oi = value[i], self['original' .. (i - 1)]
        if not is_tensor(t) then
          fail(op, ('`right_inverse` must return a sequence of tensors. Got element %d of type %s'):format(i - 1, pytype(t)))
        end
        if oi.dtype ~= t.dtype then
          fail(op, ('Tensor %d returned by `right_inverse` has dtype %s while `original%d` has dtype %s')
            :format(i - 1, tostring(t.dtype), i - 1, tostring(oi.dtype)))
        end
        oi.data = t:detach()
      end
    end
  end)
end

function ParametrizationList:forward()
  local x
  if self.is_tensor then
    x = self[1](self.original)
  else
    local originals = {}
    for i = 1, self.ntensors do originals[i] = self['original' .. (i - 1)] end
    x = self[1](unpack(originals, 1, self.ntensors))
  end
  local i = 2
  local m = rawget(self, i)
  while m ~= nil do
    x = m(x)
    i = i + 1
    m = rawget(self, i)
  end
  return x
end

------------------------------------------------------------------------------ the Parametrized<Class> subclasses
-- the ParametrizationList of `name` on module m, or nil
local function plist(m, name)
  local mods = rawget(m, '_modules')
  local ps = mods and mods.parametrizations
  if not ps then return nil end
  local l = rawget(ps, '_modules')[name]
  return l or nil
end

local function get_parametrized(m, name, l)
  if cache_enabled > 0 then
    local c = cache[m]
    if not c then c = {}; cache[m] = c end
    local t = c[name]
    if t == nil then
      t = l()
      c[name] = t
    end
    return t
  end
  return l()
end

local pclasses = setmetatable({}, { __mode = 'k' }) -- base class -> its Parametrized subclass

local function parametrized_name(base)
  local tn = rawget(base, '__typename')
  local prefix, last = tn:match('^(.*%.)([^.]+)$')
  if not prefix then prefix, last = '', tn end
  return prefix .. 'Parametrized' .. last
end

local function parametrized_class(base)
  local c = pclasses[base]
  if c then return c end
  c = class.class(parametrized_name(base), base)
  local base_index, base_newindex = rawget(base, '__index'), base.__newindex
  rawset(c, '__parametrized_base', base)
  if type(base_index) == 'function' then
    c.__index = function(self, k)
      local l = plist(self, k)
      if l then return get_parametrized(self, k, l) end
      return base_index(self, k)
    end
  end
  c.__newindex = function(self, k, v)
    local l = plist(self, k)
    if l then
      if v == nil then fail('nn.utils.parametrize', ("cannot delete the parametrized tensor '%s': " ..
        'use remove_parametrizations'):format(tostring(k))) end
      return l:right_inverse(v)
    end
    return base_newindex(self, k, v)
  end
  pclasses[base] = c
  return c
end

-- class.find(name) of a Parametrized<Class> name in a process that has not made it yet (torch.load)
class.resolvers[#class.resolvers + 1] = function(name)
  local prefix, last = name:match('^(.-)Parametrized([^.]+)$')
  if not prefix then return nil end
  local base = class.find(prefix .. last)
  if base == nil then return nil end
  return parametrized_class(base)
end

------------------------------------------------------------------------------ the functions
-- is_parametrized(module, tensor_name=nil)
function P.is_parametrized(module, tensor_name)
  if not is_module(module) then return false end
  local ps = rawget(module, '_modules').parametrizations
  if not ps or not torch.isinstance(ps, ModuleDict) then return false end
  if tensor_name == nil then return ps:len() > 0 end
  return rawget(ps, '_modules')[tensor_name] ~= nil
end
local is_parametrized = P.is_parametrized

local function check_module(op, module)
  if not is_module(module) then fail(op, ('module must be an nn.Module (got %s)'):format(Mod.typename_of(module))) end
end

-- register_parametrization(module, tensor_name, parametrization, {unsafe=false}) -> module
function P.register_parametrization(module, tensor_name, parametrization, opts)
  local op = 'nn.utils.parametrize.register_parametrization'
  check_module(op, module)
  if type(tensor_name) ~= 'string' then fail(op, 'tensor_name must be a string') end
  if not is_module(parametrization) then
    fail(op, ('parametrization must be an nn.Module (got %s)'):format(Mod.typename_of(parametrization)))
  end
  local unsafe = false
  if type(opts) == 'table' then unsafe = opts.unsafe and true or false elseif opts ~= nil then unsafe = opts and true or false end
  parametrization:train(module.training)
  if is_parametrized(module, tensor_name) then
    if not unsafe then
      local Y = module[tensor_name]
      local X = parametrization(Y)
      if not is_tensor(X) then fail(op, ('A parametrization must return a tensor. Got %s.'):format(pytype(X))) end
      if X.dtype ~= Y.dtype then
        fail(op, ('Registering a parametrization may not change the dtype of the tensor, unless the `unsafe` flag ' ..
          'is enabled.\nmodule.%s.dtype: %s\nparametrization(module.%s).dtype: %s')
          :format(tensor_name, tostring(Y.dtype), tensor_name, tostring(X.dtype)))
      end
      if X:size() ~= Y:size() then
        fail(op, ('Registering a parametrization may not change the shape of the tensor, unless the `unsafe` flag ' ..
          'is enabled.\nmodule.%s.shape: %s\nparametrization(module.%s).shape: %s')
          :format(tensor_name, shape_str(Y), tensor_name, shape_str(X)))
      end
      if parametrization.right_inverse ~= nil then
        local ok, Z = pcall(parametrization.right_inverse, parametrization, X)
        if not ok and not is_not_implemented(Z) then error(Z, 0) end
        if ok then
          if not is_tensor(Z) then
            fail(op, ('parametrization.right_inverse must return a tensor. Got: %s'):format(pytype(Z)))
          end
          if Z.dtype ~= Y.dtype then
            fail(op, ('The tensor returned by parametrization.right_inverse must have the same dtype as module.%s, ' ..
              'unless the `unsafe` flag is enabled.\nmodule.%s.dtype: %s\nreturned dtype: %s')
              :format(tensor_name, tensor_name, tostring(Y.dtype), tostring(Z.dtype)))
          end
          if Z:size() ~= Y:size() then
            fail(op, ('The tensor returned by parametrization.right_inverse must have the same shape as module.%s, ' ..
              'unless the `unsafe` flag is enabled.\nmodule.%s.shape: %s\nreturned shape: %s')
              :format(tensor_name, tensor_name, shape_str(Y), shape_str(Z)))
          end
        end
      end
    end
    local l = plist(module, tensor_name)
    l:append(parametrization)
    l.unsafe = l.unsafe or unsafe
  elseif rawget(module, '_buffers')[tensor_name] or rawget(module, '_parameters')[tensor_name] then
    local original = module[tensor_name]
    local l = ParametrizationList({ parametrization }, original, unsafe)
    module[tensor_name] = nil
    if not is_parametrized(module) then
      setmetatable(module, parametrized_class(getmetatable(module)))
      if rawget(module, '_modules').parametrizations == nil then module.parametrizations = ModuleDict() end
    end
    module.parametrizations[tensor_name] = l
  else
    fail(op, ("Module '%s' does not have a parameter, a buffer, or a parametrized element with name '%s'")
      :format(tostring(module), tensor_name))
  end
  return module
end

-- remove_parametrizations(module, tensor_name, {leave_parametrized=true}) -> module
function P.remove_parametrizations(module, tensor_name, opts)
  local op = 'nn.utils.parametrize.remove_parametrizations'
  check_module(op, module)
  local leave = true
  if type(opts) == 'table' then
    if opts.leave_parametrized ~= nil then leave = opts.leave_parametrized and true or false end
  elseif opts ~= nil then
    leave = opts and true or false
  end
  if not is_parametrized(module, tensor_name) then
    fail(op, ('Module %s does not have a parametrization on %s'):format(tostring(module), tostring(tensor_name)))
  end
  local l = plist(module, tensor_name)
  local original
  if l.is_tensor then
    original = l.original
    if leave then
      local t = nograd(function() return module[tensor_name] end)
      -- original takes t's values (PyTorch's set_); a change of dtype would break a parameter
      nograd(function()
        if rawequal(t, original) then return end
        if t.dtype ~= original.dtype then
          fail(op, ('the parametrized tensor has dtype %s while the original has dtype %s')
            :format(tostring(t.dtype), tostring(original.dtype)))
        end
        original.data = t:detach()
      end)
    end
  else
    if not leave then
      fail(op, 'Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms ' ..
        'of a sequence of tensors.')
    end
    local t = module[tensor_name]
    original = t.requires_grad and Parameter(t) or t
  end
  module.parametrizations[tensor_name] = nil
  register_tensor(module, tensor_name, original)
  if not is_parametrized(module) then
    module.parametrizations = nil
    setmetatable(module, rawget(getmetatable(module), '__parametrized_base'))
  end
  return module
end

-- type_before_parametrizations(module): the class the module had before it was parametrized
function P.type_before_parametrizations(module)
  local mt = getmetatable(module)
  if is_parametrized(module) then return rawget(mt, '__parametrized_base') or mt end
  return mt
end

-- transfer_parametrizations_and_params(from_module, to_module, tensor_name=nil) -> to_module
function P.transfer_parametrizations_and_params(from_module, to_module, tensor_name)
  if not is_parametrized(from_module) then return to_module end
  local names = tensor_name and { tensor_name } or from_module.parametrizations:keys()
  for _, name in ipairs(names) do
    if to_module[name] == nil then to_module[name] = Parameter(from_module[name]) end
    local from = plist(from_module, name)
    for i = 1, #from do P.register_parametrization(to_module, name, from[i]) end
    local to = plist(to_module, name)
    if from.is_tensor then
      to.original = from.original
    else
      for i = 0, from.ntensors - 1 do to['original' .. i] = from['original' .. i] end
    end
  end
  return to_module
end

return P
