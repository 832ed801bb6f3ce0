-- nn.Module: the base class of every layer, and nn.Parameter.
--
-- Storage. A module's registered values never live in its own (raw) table, so that every
-- assignment `m.name = v` reaches __newindex and registers, replaces or refuses v whenever it
-- happens (PyTorch's __setattr__), and every read `m.name` goes through __index:
--   _parameters   name -> Parameter, or false for a name reserved by register_parameter(name, nil)
--   _buffers      name -> tensor, or false (reserved)
--   _modules      name -> module, or false (reserved)
--   _attrs        every other attribute (plain Lua values, `training`)
--   _order        the names of each kind in registration order: _order.p, _order.b, _order.m
--   _non_persistent  set of buffer names left out of state_dict
--   _hooks        nil, or lists of hook entries by kind (see register_* below)
-- Reads check parameters, buffers, modules, attributes, then the class: an attribute set on an
-- instance shadows a method, as in Python. `m.name = nil` deletes whatever `name` holds.
local ffi = require 'ffi'
local bit = require 'bit'
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local C = core.C
local fail = core.fail
local unwrap -- core.unwrap, once lua/dotcall.lua has loaded (below)
local is_tensor = T.is_tensor
local rawget, rawset, type, select, pairs, ipairs, tostring = rawget, rawset, type, select, pairs, ipairs, tostring
local getmetatable, setmetatable, unpack, pcall, error = getmetatable, setmetatable, unpack, pcall, error
local band, bor = bit.band, bit.bor

local M = {}

------------------------------------------------------------------------------ Parameter
local PARAMETER = 2 -- MT_TENSOR_PARAMETER
local tensor_ct = ffi.typeof('mt_tensor &')
local function is_parameter(x) return ffi.istype(tensor_ct, x) and band(x._flags, PARAMETER) ~= 0 end
M.is_parameter = is_parameter

-- nn.Parameter(data, requires_grad): a leaf sharing data's memory, marked as a parameter.
-- torch.isinstance(p, nn.Parameter) tells one.
local Parameter = setmetatable({ __typename = 'nn.Parameter', __istensorclass = is_parameter }, {
  __call = function(_, data, requires_grad)
    if data == nil then data = torch.empty(0) end
    if not is_tensor(data) then
      fail('nn.Parameter', ('data must be a tensor (got %s)'):format(type(data)))
    end
    local p = data:detach()
    p._flags = bor(p._flags, PARAMETER)
    if requires_grad ~= false then p:requires_grad_(true) end
    return p
  end,
  __tostring = function() return 'nn.Parameter' end,
})
M.Parameter = Parameter

------------------------------------------------------------------------------ argument checks
-- Integer-valued arguments of modules and containers (sizes, counts, dims, positions): a Lua
-- number with no fraction within int64's range (not a boolean, string, nan or inf), at least
-- `min` when given. (The tensor ops' check is lua/tensor.lua's int_arg, which also takes int64
-- cdata; modules take Lua numbers, with messages that name the module's argument.)
local function is_int(v) return type(v) == 'number' and v % 1 == 0 and v >= -2 ^ 63 and v < 2 ^ 63 end
M.is_int = is_int
-- a module's tensor input (PyTorch: "argument 'input' (position 1) must be Tensor, not str"); a
-- table passes (a quantized tensor, a tensor-like object of the user's)
function M.need_input(op, x, name)
  local tx = type(x)
  if tx ~= 'table' and not is_tensor(x) then
    fail(op, ('expected a tensor for %s, got %s'):format(name or 'input', require('moontorch.argcheck').show(x)))
  end
  return x
end
function M.check_int(op, name, v, min)
  if is_int(v) and (min == nil or v >= min) then return v end
  local want = min == 0 and 'a non-negative integer' or min == 1 and 'a positive integer'
    or min and ('an integer >= %d'):format(min) or 'an integer'
  if type(v) == 'table' or type(v) == 'cdata' or type(v) == 'function' then
    fail(op, ('%s must be %s (got %s)'):format(name, want, require('moontorch.argcheck').show(v)))
  end
  fail(op, ('%s must be %s (got %s%s)'):format(name, want, type(v) == 'string' and ("'" .. v .. "'") or tostring(v),
    type(v) == 'number' and '' or ' of type ' .. type(v)))
end

------------------------------------------------------------------------------ hook handles
-- A list of hooks is never changed in place: registering or removing one puts a new list in
-- its owner (owner[kind] = list), so a call that is running hooks goes on over the list it
-- started with (a hook that removes itself does not make the next one be skipped, one that
-- registers another does not run it in the same call), and the full backward hooks a forward
-- saw are the ones its backward runs, as PyTorch fixes them at forward.
local next_hook_id = 0
local Handle = {}
Handle.__index = Handle
function Handle:remove()
  local owner, kind = self._owner, self._kind
  if not owner then return end -- removing twice is harmless
  local list, new = owner[kind], {}
  if list then
    for i = 1, #list do
      if list[i].id ~= self.id then new[#new + 1] = list[i] end
    end
  end
  owner[kind] = new
  self._owner = nil
  if self._on_remove then self._on_remove() end
end
M.RemovableHandle = Handle

local function is_callable(fn)
  if type(fn) == 'function' then return true end
  local mt = (type(fn) == 'table' or type(fn) == 'userdata') and getmetatable(fn)
  return mt and mt.__call ~= nil or false
end

-- add a hook entry {id, fn, with_kwargs, always_call, with_module} to owner[kind];
-- opts.prepend puts it first
local function add_hook(owner, kind, fn, opts, what, with_module)
  if not is_callable(fn) then fail(what, ('hook must be a function (got %s)'):format(type(fn))) end
  if opts ~= nil and type(opts) ~= 'table' then fail(what, 'options must be a table') end
  next_hook_id = next_hook_id + 1
  local e = { id = next_hook_id, fn = fn, with_module = with_module or nil }
  if opts then
    e.with_kwargs = opts.with_kwargs and true or nil
    e.always_call = opts.always_call and true or nil
  end
  local list, new = owner[kind] or {}, {}
  if opts and opts.prepend then new[1] = e end
  for i = 1, #list do new[#new + 1] = list[i] end
  if not (opts and opts.prepend) then new[#new + 1] = e end
  owner[kind] = new
  return setmetatable({ id = e.id, _owner = owner, _kind = kind }, Handle)
end

-- module hooks registered on nn (nn.register_module_forward_hook, ...): they run for every module
local global = { forward_pre = {}, forward = {}, backward_pre = {}, backward = {} }
local nglobal = 0 -- how many global hooks exist (the call fast path checks this one number)
M.global_hooks = global
local function count_global()
  nglobal = #global.forward_pre + #global.forward + #global.backward_pre + #global.backward
end
function M.register_global(kind, fn, opts, what)
  local h = add_hook(global, kind, fn, opts, what)
  h._on_remove = count_global
  count_global()
  return h
end

------------------------------------------------------------------------------ the class
local Module = class.class('nn.Module')
M.Module = Module


local function typename_of(v)
  if is_tensor(v) then return v:type() end
  local tn = class.typename(v)
  if tn then return tn end
  return type(v)
end

M.typename_of = typename_of

local function is_module(v) return type(v) == 'table' and class.isinstance(v, Module) end
M.is_module = is_module

local function short_name(self)
  local tn = class.typename(self) or 'Module'
  return (tn:match('([^.]+)$'))
end

-- registered values and attributes, then the class
-- A method read through a module is its front (lua/dotcall.lua): model.parameters() says "call it
-- with ':'" at the user's line instead of failing inside the method.
-- (is a module: its metatable is a class below nn.Module; by metatable, cached)
local module_classes = setmetatable({}, { __mode = 'k', __index = function(c, mt)
  if mt == nil then return false end
  local cls, is = mt, false
  while type(cls) == 'table' do
    if cls == Module then is = true break end
    cls = rawget(cls, '__parent')
  end
  rawset(c, mt, is)
  return is
end })
local method_front, method_fronts = require('moontorch.dotcall').cache("type(s) == 'table' and c1[c2(s)]",
  module_classes, getmetatable, 'module', 'model', function(name) return 'nn.Module.' .. name end)

unwrap = core.unwrap

function Module.__index(self, k)
  local params = rawget(self, '_parameters')
  if params then
    local v = params[k]
    if v ~= nil then return v or nil end
    v = rawget(self, '_buffers')[k]
    if v ~= nil then return v or nil end
    v = rawget(self, '_modules')[k]
    if v ~= nil then return v or nil end
    v = rawget(self, '_attrs')[k]
    if v ~= nil then return v end
  end
  local v = getmetatable(self)[k]
  if type(v) == 'function' and k ~= '__init' then
    local by_name = method_fronts[v]
    local w = by_name and by_name[k]
    if w ~= nil then return w end
    return method_front(v, k)
  end
  return v
end

local function remove_name(order, name)
  for i = 1, #order do
    if order[i] == name then table.remove(order, i) return end
  end
end

-- take `name` out of every kind but `keep`
local function forget(self, name, keep)
  if keep ~= 'p' and rawget(self, '_parameters')[name] ~= nil then
    rawget(self, '_parameters')[name] = nil
    remove_name(rawget(self, '_order').p, name)
  end
  if keep ~= 'b' and rawget(self, '_buffers')[name] ~= nil then
    rawget(self, '_buffers')[name] = nil
    remove_name(rawget(self, '_order').b, name)
    rawget(self, '_non_persistent')[name] = nil
  end
  if keep ~= 'm' and rawget(self, '_modules')[name] ~= nil then
    rawget(self, '_modules')[name] = nil
    remove_name(rawget(self, '_order').m, name)
  end
  if keep ~= 'a' then rawget(self, '_attrs')[name] = nil end
end

local function put(self, kind, store, name, v)
  local t = rawget(self, store)
  if t[name] == nil then
    local order = rawget(self, '_order')[kind]
    order[#order + 1] = name
  end
  t[name] = v
end

local function not_ready(what)
  fail(what, 'cannot assign ' .. what .. ' before Module.__init(self) call')
end

function Module.__newindex(self, k, v)
  local params = rawget(self, '_parameters')
  if params == nil then
    if is_parameter(v) then not_ready('parameters') end
    if is_module(v) then not_ready('module') end
    rawset(self, k, v) -- Module.__init moves it among the attributes
    return
  end
  if is_parameter(v) then
    forget(self, k, 'p')
    self:register_parameter(k, v)
  elseif params[k] ~= nil then
    if v ~= nil then
      fail('nn.Module', ("cannot assign '%s' as parameter '%s' (nn.Parameter or nil expected)")
        :format(typename_of(v), tostring(k)))
    end
    forget(self, k)
  elseif is_module(v) then
    forget(self, k, 'm')
    put(self, 'm', '_modules', k, v)
  elseif rawget(self, '_modules')[k] ~= nil then
    if v ~= nil then
      fail('nn.Module', ("cannot assign '%s' as child module '%s' (nn.Module or nil expected)")
        :format(typename_of(v), tostring(k)))
    end
    forget(self, k)
  elseif rawget(self, '_buffers')[k] ~= nil then
    if v == nil then
      forget(self, k)
    elseif is_tensor(v) then
      rawget(self, '_buffers')[k] = v
    else
      fail('nn.Module', ("cannot assign '%s' as buffer '%s' (torch.Tensor or nil expected)")
        :format(typename_of(v), tostring(k)))
    end
  else
    rawget(self, '_attrs')[k] = v
  end
end

------------------------------------------------------------------------------ construction
-- PyTorch's required constructor arguments, by class: nn.Conv2d(3, 64, {kernel_size = 7,
-- stride = 2}) and nn.Linear{in_features = 4, out_features = 2} hand them to the class's __init
-- by position, as if written so; what is left of the options table follows them (wrap_required).
local REQUIRED = {}
do
  local function req(names, ...)
    for _, cls in ipairs({ ... }) do REQUIRED['nn.' .. cls] = names end
  end
  req({ 'output_size' }, 'AdaptiveAvgPool1d', 'AdaptiveAvgPool2d', 'AdaptiveAvgPool3d', 'AdaptiveMaxPool1d',
    'AdaptiveMaxPool2d', 'AdaptiveMaxPool3d')
  req({ 'kernel_size' }, 'AvgPool1d', 'AvgPool2d', 'AvgPool3d', 'MaxPool1d', 'MaxPool2d', 'MaxPool3d', 'MaxUnpool1d',
    'MaxUnpool2d', 'MaxUnpool3d', 'Unfold')
  req({ 'num_features' }, 'BatchNorm1d', 'BatchNorm2d', 'BatchNorm3d', 'InstanceNorm1d', 'InstanceNorm2d',
    'InstanceNorm3d')
  req({ 'in1_features', 'in2_features', 'out_features' }, 'Bilinear')
  req({ 'groups' }, 'ChannelShuffle')
  req({ 'padding', 'value' }, 'ConstantPad1d', 'ConstantPad2d', 'ConstantPad3d')
  req({ 'padding' }, 'ReflectionPad1d', 'ReflectionPad2d', 'ReflectionPad3d', 'ReplicationPad1d', 'ReplicationPad2d',
    'ReplicationPad3d', 'ZeroPad2d')
  req({ 'in_channels', 'out_channels', 'kernel_size' }, 'Conv1d', 'Conv2d', 'Conv3d', 'ConvTranspose1d',
    'ConvTranspose2d', 'ConvTranspose3d')
  req({ 'num_embeddings', 'embedding_dim' }, 'Embedding', 'EmbeddingBag')
  req({ 'output_size', 'kernel_size' }, 'Fold')
  req({ 'input_size', 'hidden_size' }, 'RNN', 'LSTM', 'GRU', 'RNNCell', 'LSTMCell', 'GRUCell')
  req({ 'num_groups', 'num_channels' }, 'GroupNorm')
  req({ 'norm_type', 'kernel_size' }, 'LPPool1d', 'LPPool2d')
  req({ 'normalized_shape' }, 'LayerNorm')
  req({ 'in_features', 'out_features' }, 'Linear', 'NonDynamicallyQuantizableLinear')
  req({ 'size' }, 'LocalResponseNorm')
  req({ 'embed_dim', 'num_heads' }, 'MultiheadAttention')
  req({ 'upscale_factor' }, 'PixelShuffle')
  req({ 'downscale_factor' }, 'PixelUnshuffle')
  req({ 'threshold', 'value' }, 'Threshold')
  req({ 'decoder_layer', 'num_layers' }, 'TransformerDecoder')
  req({ 'encoder_layer', 'num_layers' }, 'TransformerEncoder')
  req({ 'd_model', 'nhead' }, 'TransformerEncoderLayer', 'TransformerDecoderLayer')
  req({ 'dim', 'unflattened_size' }, 'Unflatten')
end
M.REQUIRED = REQUIRED

-- an options table: a plain table (no class, no tensor) without array items
local function is_opts(v)
  return type(v) == 'table' and getmetatable(v) == nil and rawget(v, 1) == nil
end

-- the arguments of a built-in class's constructor with the required ones from a trailing options
-- table moved to their positions
local function required_by_position(name, req, n, ...)
  local v = { ... }
  while n > 0 and v[n] == nil do n = n - 1 end
  local opts = v[n]
  if n == 0 or not is_opts(opts) then return unpack(v, 1, n) end
  local found = false
  for i = 1, #req do
    if opts[req[i]] ~= nil then found = true break end
  end
  if not found then return unpack(v, 1, n) end
  v[n] = nil
  local npos, rest = n - 1, {}
  for k, x in pairs(opts) do rest[k] = x end
  local last = npos
  for i = 1, #req do
    local k = req[i]
    local x = opts[k]
    if x ~= nil then
      if i <= npos and v[i] ~= nil then fail(name, ("__init__() got multiple values for argument '%s'"):format(k)) end
      v[i], rest[k] = x, nil
      if i > last then last = i end
    end
  end
  for i = 1, last do
    if v[i] == nil and i <= #req then
      fail(name, ("__init__() missing required argument '%s' (by position, or by name in the options table)")
        :format(req[i]))
    end
  end
  if next(rest) ~= nil then
    v[last + 1] = rest
    return unpack(v, 1, last + 1)
  end
  return unpack(v, 1, last)
end

-- wrap_required(nn): each built-in class of REQUIRED (in nn) gets an __init that moves the
-- required arguments given by name to their positions, then runs the class's own (or inherited)
-- __init; subclasses inherit it, and so does a subclass's explicit `nn.Conv2d.__init(self, ...)`.
function M.wrap_required(nn)
  for typename, req in pairs(REQUIRED) do
    local cls = nn[typename:sub(4)]
    if cls and rawget(cls, '__typename') == typename and not rawget(cls, '__required') then
      local init = cls.__init
      rawset(cls, '__required', req)
      rawset(cls, '__init', function(self, ...)
        return init(self, required_by_position(typename, req, select('#', ...), ...))
      end)
    end
  end
end

-- Module.__init(self): every subclass's __init calls it first
function Module:__init()
  local early = {}
  for k, v in pairs(self) do early[k] = v end
  for k in pairs(early) do rawset(self, k, nil) end
  rawset(self, '_parameters', {})
  rawset(self, '_buffers', {})
  rawset(self, '_modules', {})
  rawset(self, '_attrs', { training = true })
  rawset(self, '_order', { p = {}, b = {}, m = {} })
  rawset(self, '_non_persistent', {})
  for k, v in pairs(early) do self[k] = v end -- values assigned before __init ran
end

function Module:forward()
  fail('nn.Module', ('Module [%s] is missing the required "forward" function'):format(short_name(self)))
end

-- does the module (or its class) have anything called `name` other than a `kind` entry?
local function has_attr(self, name, kind)
  if kind ~= 'p' and rawget(self, '_parameters')[name] ~= nil then return true end
  if kind ~= 'b' and rawget(self, '_buffers')[name] ~= nil then return true end
  if kind ~= 'm' and rawget(self, '_modules')[name] ~= nil then return true end
  if rawget(self, '_attrs')[name] ~= nil then return true end
  return getmetatable(self)[name] ~= nil
end

local function check_name(self, what, op, name, kind)
  if rawget(self, '_parameters') == nil then not_ready(what == 'module' and 'module' or what .. 's') end
  if type(name) ~= 'string' then
    fail(op, ('%s name should be a string. Got %s'):format(what, typename_of(name)))
  end
  -- PyTorch 1.13's order and words: add_module checks for an existing attribute first and
  -- names the module in its "." message; register_parameter and register_buffer do neither
  if what == 'module' and has_attr(self, name, kind) then fail(op, ("attribute '%s' already exists"):format(name)) end
  if name:find('.', 1, true) then
    fail(op, ('%s name can\'t contain "."%s'):format(what, what == 'module' and ', got: ' .. name or ''))
  end
  if name == '' then fail(op, ('%s name can\'t be empty string ""'):format(what)) end
  if has_attr(self, name, kind) then fail(op, ("attribute '%s' already exists"):format(name)) end
end

function Module:register_parameter(name, param)
  check_name(self, 'parameter', 'register_parameter', name, 'p')
  if param == nil then
    put(self, 'p', '_parameters', name, false)
    return
  end
  if not is_parameter(param) then
    fail('register_parameter', ("cannot assign '%s' object to parameter '%s' (nn.Parameter or nil required)")
      :format(typename_of(param), name))
  end
  if param.grad_fn ~= nil then
    fail('register_parameter', ("Cannot assign non-leaf Tensor to parameter '%s'. Model parameters must be created " ..
      "explicitly. To express '%s' as a function of another Tensor, compute the value in the forward() method.")
      :format(name, name))
  end
  put(self, 'p', '_parameters', name, param)
end

function Module:register_buffer(name, tensor, opts)
  local persistent = true
  if type(opts) == 'table' then
    if opts.persistent ~= nil then persistent = opts.persistent and true or false end
  elseif opts ~= nil then
    persistent = opts and true or false
  end
  check_name(self, 'buffer', 'register_buffer', name, 'b')
  if tensor ~= nil and not is_tensor(tensor) then
    fail('register_buffer', ("cannot assign '%s' object to buffer '%s' (torch Tensor or nil required)")
      :format(typename_of(tensor), name))
  end
  if tensor == nil then tensor = false end
  put(self, 'b', '_buffers', name, tensor)
  rawget(self, '_non_persistent')[name] = (not persistent) or nil
end

function Module:add_module(name, module)
  if module ~= nil and not is_module(module) then
    fail('add_module', ('%s is not a Module subclass'):format(typename_of(module)))
  end
  check_name(self, 'module', 'add_module', name, 'm')
  if module == nil then module = false end
  put(self, 'm', '_modules', name, module)
end
Module.register_module = Module.add_module

------------------------------------------------------------------------------ walking
-- containers keep their items at raw Lua positions too (seq[1], #list, ipairs): `seq[2] = m`
-- changes a raw slot without telling anyone, so every walk first brings the registry in line
local function sync(m)
  local s = getmetatable(m)._sync
  if s then s(m) end
end
M.sync = sync

local function opt(opts, pos, key, default)
  -- an option given in a trailing table or positionally
  if type(opts) == 'table' and not is_tensor(opts) then
    local v = opts[key]
    if v == nil then return default end
    return v
  end
  if pos == nil then return default end
  return pos
end

local function iter(list)
  local i = 0
  return function()
    i = i + 1
    local e = list[i]
    if e then return e[1], e[2] end
  end
end

-- [(prefix, module)] in PyTorch's order: self, then each child's subtree
local function collect_modules(self, memo, prefix, remove_duplicate, out)
  if memo[self] then return out end
  if remove_duplicate then memo[self] = true end
  sync(self)
  out[#out + 1] = { prefix, self }
  local order, mods = rawget(self, '_order').m, rawget(self, '_modules')
  for i = 1, #order do
    local name = order[i]
    local child = mods[name]
    if child then
      collect_modules(child, memo, prefix == '' and name or prefix .. '.' .. name, remove_duplicate, out)
    end
  end
  return out
end

-- named_modules({memo=, prefix=, remove_duplicate=}) or named_modules(memo, prefix, remove_duplicate)
function Module:named_modules(memo, prefix, remove_duplicate)
  local opts = memo
  if type(opts) == 'table' and (opts.prefix ~= nil or opts.memo ~= nil or opts.remove_duplicate ~= nil) then
    memo, prefix, remove_duplicate = opts.memo, opts.prefix, opts.remove_duplicate
  end
  if remove_duplicate == nil then remove_duplicate = true end
  return iter(collect_modules(self, memo or {}, prefix or '', remove_duplicate, {}))
end

-- parameters(), buffers(), children() and modules() return a torch.List: an array that also
-- iterates as `for p in m:parameters() do` (lua/iterlist.lua)
local as_list = require('moontorch.iterlist').of

function Module:modules()
  local list = collect_modules(self, {}, '', true, {})
  local out = {}
  for i = 1, #list do out[i] = list[i][2] end
  return as_list(out)
end

local function named_children_list(self)
  sync(self)
  local out, memo = {}, {}
  local order, mods = rawget(self, '_order').m, rawget(self, '_modules')
  for i = 1, #order do
    local child = mods[order[i]]
    if child and not memo[child] then
      memo[child] = true
      out[#out + 1] = { order[i], child }
    end
  end
  return out
end
function Module:named_children() return iter(named_children_list(self)) end
function Module:children()
  local list, out = named_children_list(self), {}
  for i = 1, #list do out[i] = list[i][2] end
  return as_list(out)
end

-- [(name, value)] of parameters ('_parameters', 'p') or buffers ('_buffers', 'b'), each object once
local function named_members(self, store, kind, prefix, recurse, remove_duplicate)
  local mods
  if recurse then mods = collect_modules(self, {}, prefix, remove_duplicate, {})
  else sync(self); mods = { { prefix, self } } end
  local out, memo = {}, {}
  for i = 1, #mods do
    local mp, m = mods[i][1], mods[i][2]
    local order, vals = rawget(m, '_order')[kind], rawget(m, store)
    for j = 1, #order do
      local v = vals[order[j]]
      if v and not memo[v] then
        if remove_duplicate then memo[v] = true end
        out[#out + 1] = { mp == '' and order[j] or mp .. '.' .. order[j], v }
      end
    end
  end
  return out
end

local function member_opts(a, b, c)
  -- (prefix, recurse, remove_duplicate) or ({prefix=, recurse=, remove_duplicate=})
  local prefix, recurse, dup = a, b, c
  if type(a) == 'table' then prefix, recurse, dup = a.prefix, a.recurse, a.remove_duplicate end
  if recurse == nil then recurse = true end
  if dup == nil then dup = true end
  return prefix or '', recurse, dup
end

function Module:named_parameters(a, b, c)
  local prefix, recurse, dup = member_opts(a, b, c)
  return iter(named_members(self, '_parameters', 'p', prefix, recurse, dup))
end
function Module:named_buffers(a, b, c)
  local prefix, recurse, dup = member_opts(a, b, c)
  return iter(named_members(self, '_buffers', 'b', prefix, recurse, dup))
end

-- every parameter once, in PyTorch's order (no names: zero_grad and requires_grad_ use it)
local function param_list(self)
  local named = named_members(self, '_parameters', 'p', '', true, true)
  local list = {}
  for i = 1, #named do list[i] = named[i][2] end
  return list
end
M.param_list = param_list

function Module:parameters(recurse)
  if type(recurse) == 'table' then recurse = recurse.recurse end
  if recurse == false then
    local named, out = named_members(self, '_parameters', 'p', '', false, true), {}
    for i = 1, #named do out[i] = named[i][2] end
    return as_list(out)
  end
  local list, out = param_list(self), {}
  for i = 1, #list do out[i] = list[i] end
  return as_list(out)
end
function Module:buffers(recurse)
  if type(recurse) == 'table' then recurse = recurse.recurse end
  local named, out = named_members(self, '_buffers', 'b', '', recurse ~= false, true), {}
  for i = 1, #named do out[i] = named[i][2] end
  return as_list(out)
end

-- PyTorch's get_submodule / get_parameter / get_buffer: "X has no attribute" when nothing has
-- the name, "is not an nn.Module" (nn.Parameter, a buffer) when something else has it: another
-- kind of value, a method, or a name reserved as nil
function Module:get_submodule(target)
  if target == nil or target == '' then return self end
  local mod = self
  for item in tostring(target):gmatch('[^.]+') do
    if not has_attr(mod, item) then
      fail('get_submodule', ('%s has no attribute `%s`'):format(mod:_get_name(), item))
    end
    local child = rawget(mod, '_modules')[item]
    if not child then fail('get_submodule', ('`%s` is not an nn.Module'):format(item)) end
    mod = child
  end
  return mod
end

local function split_last(target)
  local mod_path, name = tostring(target):match('^(.*)%.([^.]*)$')
  if not mod_path then return '', tostring(target) end
  return mod_path, name
end

function Module:get_parameter(target)
  local path, name = split_last(target)
  local mod = self:get_submodule(path)
  if not has_attr(mod, name) then fail('get_parameter', ('%s has no attribute `%s`'):format(mod:_get_name(), name)) end
  local p = rawget(mod, '_parameters')[name]
  if not p then fail('get_parameter', ('`%s` is not an nn.Parameter'):format(name)) end
  return p
end

function Module:get_buffer(target)
  local path, name = split_last(target)
  local mod = self:get_submodule(path)
  if not has_attr(mod, name) then fail('get_buffer', ('%s has no attribute `%s`'):format(mod:_get_name(), name)) end
  local b = rawget(mod, '_buffers')[name]
  if b == nil then fail('get_buffer', ('`%s` is not a buffer'):format(name)) end
  return b or nil -- a name reserved as nil gives nil
end

------------------------------------------------------------------------------ modes, grads
function Module:apply(fn)
  for _, child in ipairs(self:children()) do child:apply(fn) end
  fn(self)
  return self
end

function Module:train(mode)
  if mode == nil then mode = true end
  if type(mode) ~= 'boolean' then fail('train', 'training mode is expected to be boolean') end
  rawget(self, '_attrs').training = mode
  for _, child in ipairs(self:children()) do child:train(mode) end
  return self
end
function Module:eval() return self:train(false) end

function Module:requires_grad_(requires_grad)
  if requires_grad == nil then requires_grad = true end
  for _, p in ipairs(param_list(self)) do p:requires_grad_(requires_grad) end
  return self
end

-- zero_grad(set_to_none) or zero_grad{set_to_none=}: PyTorch 1.13's default keeps zeroed grads
local zero_grad_of = require('moontorch.autograd').zero_grad_of
function Module:zero_grad(set_to_none)
  if type(set_to_none) == 'table' then set_to_none = set_to_none.set_to_none end
  local list = param_list(self)
  for i = 1, #list do zero_grad_of(list[i], set_to_none) end
end

------------------------------------------------------------------------------ conversion
-- _apply(fn): fn over every parameter (in place: a parameter stays the same object), its
-- gradient, and every buffer (replaced), children first
function Module:_apply(fn)
  for _, child in ipairs(self:children()) do child:_apply(fn) end
  local prev = C.mt_is_grad_enabled()
  C.mt_set_grad_enabled(0)
  local ok, err = pcall(function()
    local params, order = rawget(self, '_parameters'), rawget(self, '_order').p
    for i = 1, #order do
      local p = params[order[i]]
      if p then
        local applied = fn(p)
        if not rawequal(applied, p) then p.data = applied end
        local g = p.grad
        if g then
          local ga = fn(g)
          if not rawequal(ga, g) then
            if ga.dtype == p.dtype then g.data = ga else p.grad = ga end
          end
        end
      end
    end
    local bufs, border = rawget(self, '_buffers'), rawget(self, '_order').b
    for i = 1, #border do
      local b = bufs[border[i]]
      if b then bufs[border[i]] = fn(b) end
    end
  end)
  C.mt_set_grad_enabled(prev)
  if not ok then error(err, 0) end
  return self
end

local dtype_mod = require 'moontorch.dtype'

-- to(device) / to(dtype) / to(tensor) / to(device, dtype) / to{device=, dtype=, non_blocking=}
function Module:to(a, b)
  local dev, dt
  local function take(x)
    if x == nil then return end
    if is_tensor(x) then dev, dt = x.device, x.dtype return end
    if type(x) == 'table' and dtype_mod.is_dtype(x) then dt = x return end
    if type(x) == 'table' and dtype_mod.is_device(x) then dev = x return end
    if type(x) == 'string' then
      local d = dtype_mod.resolve(x)
      if d then dt = d else dev = dtype_mod.device(x) end
      return
    end
    if type(x) == 'table' then
      if x.dtype ~= nil then dt = dtype_mod.resolve(x.dtype) or x.dtype end
      if x.device ~= nil then dev = dtype_mod.device(x.device) end
      if x.tensor ~= nil then take(x.tensor) end
      return
    end
    fail('nn.Module.to', 'unexpected argument ' .. tostring(x))
  end
  take(a); take(b)
  if dt ~= nil then
    if not dtype_mod.is_dtype(dt) then fail('nn.Module.to', 'unknown dtype ' .. tostring(dt)) end
    if not dt.is_floating_point then
      fail('nn.Module.to', ('nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=%s')
        :format(tostring(dt)))
    end
  end
  if dev then T.device_arg(dev, 'nn.Module.to') end -- the C core says whether the device is there
  return self:_apply(function(t)
    if dt and t:is_floating_point() then return t:to(dev or t.device, dt) end
    if dev then return t:to(dev) end
    return t
  end)
end

-- to_empty{device=}: every parameter and buffer replaced by an uninitialised tensor of its shape
-- and dtype on the device, its values not copied (PyTorch's Module.to_empty: how a module made on
-- the meta device gets memory; initialise it afterwards, e.g. with reset_parameters)
function Module:to_empty(opts)
  local dev = opts
  if type(opts) == 'table' and not dtype_mod.is_device(opts) then dev = opts.device end
  if dev == nil then fail('nn.Module.to_empty', 'a device is required: to_empty{device=...}') end
  local ok, d = pcall(dtype_mod.device, dev)
  if not ok then fail('nn.Module.to_empty', (tostring(d):gsub('^moontorch%.device: ', ''))) end
  return self:_apply(function(t) return torch.empty_like(t, { device = d }) end)
end

local function float_caster(d)
  return function(self)
    return self:_apply(function(t) if t:is_floating_point() then return t:to(d) end return t end)
  end
end
function Module:float() return float_caster(torch.float32)(self) end
function Module:double() return float_caster(torch.float64)(self) end
function Module:half() return float_caster(torch.float16)(self) end
function Module:bfloat16() return float_caster(torch.bfloat16)(self) end
function Module:cpu() return self:to('cpu') end
-- cuda([device]): every parameter and buffer on a CUDA device (the current one, or an index)
function Module:cuda(device)
  if type(device) == 'number' then device = dtype_mod.device('cuda', device)
  elseif device == nil then device = dtype_mod.device('cuda')
  else device = dtype_mod.device(device) end
  T.device_arg(device, 'nn.Module.cuda')
  return self:to(device)
end
-- type(dst_type): every parameter and buffer cast to dst_type: a dtype, its name or a tensor
-- type name ('torch.DoubleTensor'); type() gives the module's class name (Torch7's)
local function dtype_of_type(x)
  local d = dtype_mod.resolve(x)
  if d then return d end
  for id, name in pairs(dtype_mod.tensor_type_names) do
    if name == x then return dtype_mod.by_id[id] end
  end
  return nil
end
function Module:type(dst_type)
  if dst_type == nil then return class.typename(self) end
  local d = dtype_of_type(dst_type)
  if not d then fail('nn.Module.type', ("invalid type: '%s'"):format(tostring(dst_type))) end
  if not d.is_floating_point then
    -- checked before anything is cast, so that a refused cast leaves the module as it was
    for _, p in ipairs(param_list(self)) do
      if p.requires_grad then
        fail('nn.Module.type', 'data set to a tensor that requires gradients must be floating point or complex dtype')
      end
    end
  end
  return self:_apply(function(t) return t:to(d) end)
end

------------------------------------------------------------------------------ printing
function Module:extra_repr() return '' end
function Module:_get_name() return short_name(self) end

-- indent every line but the first (a child's repr inside its parent's)
local function addindent(s, n)
  return (s:gsub('\n', '\n' .. (' '):rep(n)))
end

function Module:__tostring()
  local lines = {}
  local extra = self:extra_repr()
  local nextra = 0
  sync(self)
  if extra and extra ~= '' then
    for line in (extra .. '\n'):gmatch('(.-)\n') do lines[#lines + 1] = line; nextra = nextra + 1 end
  end
  local order, mods = rawget(self, '_order').m, rawget(self, '_modules')
  for i = 1, #order do
    local child = mods[order[i]]
    local s = child and tostring(child) or 'None'
    lines[#lines + 1] = '(' .. order[i] .. '): ' .. addindent(s, 2)
  end
  local main = self:_get_name() .. '('
  if #lines > 0 then
    if nextra == 1 and #lines == 1 then
      main = main .. lines[1]
    else
      main = main .. '\n  ' .. table.concat(lines, '\n  ') .. '\n'
    end
  end
  return main .. ')'
end

------------------------------------------------------------------------------ state_dict
local OrderedDict -- torch.OrderedDict, on first use
local function odict()
  OrderedDict = OrderedDict or torch.OrderedDict
  return OrderedDict()
end
local function od_methods()
  OrderedDict = OrderedDict or torch.OrderedDict
  return OrderedDict.methods
end

-- the table of a module's hook lists by kind (see add_hook)
local function hook_owner(self)
  local hooks = rawget(self, '_hooks')
  if not hooks then
    hooks = {}
    rawset(self, '_hooks', hooks)
  end
  return hooks
end
local function hooks_of(self, kind)
  local hooks = rawget(self, '_hooks')
  local list = hooks and hooks[kind]
  if list and #list > 0 then return list end
  return nil
end

function Module:_save_to_state_dict(destination, prefix, keep_vars)
  local params, order = rawget(self, '_parameters'), rawget(self, '_order')
  for i = 1, #order.p do
    local p = params[order.p[i]]
    if p then destination[prefix .. order.p[i]] = keep_vars and p or p:detach() end
  end
  local bufs, np = rawget(self, '_buffers'), rawget(self, '_non_persistent')
  for i = 1, #order.b do
    local name = order.b[i]
    local b = bufs[name]
    if b and not np[name] then destination[prefix .. name] = keep_vars and b or b:detach() end
  end
  if unwrap(self.get_extra_state) ~= Module.get_extra_state then
    destination[prefix .. '_extra_state'] = self:get_extra_state()
  end
end

function Module:get_extra_state()
  fail('get_extra_state', 'Reached a code path in Module.get_extra_state() that should never be called.')
end
function Module:set_extra_state()
  fail('set_extra_state', 'Reached a code path in Module.set_extra_state() that should never be called.')
end

local function state_dict_into(self, dest, prefix, keep_vars)
  local pre = hooks_of(self, 'state_dict_pre')
  if pre then for _, h in ipairs(pre) do h.fn(self, prefix, keep_vars) end end
  sync(self)
  self:_save_to_state_dict(dest, prefix, keep_vars)
  local order, mods = rawget(self, '_order').m, rawget(self, '_modules')
  for i = 1, #order do
    local child = mods[order[i]]
    if child then state_dict_into(child, dest, prefix .. order[i] .. '.', keep_vars) end
  end
  local post = hooks_of(self, 'state_dict')
  if post then
    for _, h in ipairs(post) do
      local r = h.fn(self, dest, prefix, {})
      if r ~= nil then dest = r end
    end
  end
  return dest
end

-- state_dict({destination=, prefix=, keep_vars=}): a torch.OrderedDict of parameters and
-- persistent buffers (detached unless keep_vars)
function Module:state_dict(opts, prefix, keep_vars)
  local dest
  if type(opts) == 'table' and not (getmetatable(opts) and class.typename(opts) == 'torch.OrderedDict') then
    dest, prefix, keep_vars = opts.destination, opts.prefix, opts.keep_vars
  else
    dest = opts
  end
  return state_dict_into(self, dest or odict(), prefix or '', keep_vars and true or false)
end

local function shape_repr(t)
  return 'torch.Size([' .. table.concat(t:size(), ', ') .. '])'
end

-- a torch.OrderedDict copy of a state dict, whatever kind of dict it is (a plain table's keys sorted)
local function sd_copy(sd)
  local d = odict()
  if class.typename(sd) == 'torch.OrderedDict' then
    for k, v in od_methods().items(sd) do d[k] = v end
    return d
  end
  local keys = {}
  for k in pairs(sd) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do d[k] = rawget(sd, k) end
  return d
end

local function starts_with(s, p) return type(s) == 'string' and s:sub(1, #p) == p end

function Module:_load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)
  if class.typename(state_dict) ~= 'torch.OrderedDict' then state_dict = sd_copy(state_dict) end
  local pre = hooks_of(self, 'load_pre')
  if pre then
    for _, h in ipairs(pre) do
      if h.with_module then
        h.fn(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
      else
        h.fn(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
      end
    end
  end
  local odm = od_methods()
  local function get(k) return odm.get(state_dict, k) end
  local local_state = {}
  local order = rawget(self, '_order')
  local params, bufs, np = rawget(self, '_parameters'), rawget(self, '_buffers'), rawget(self, '_non_persistent')
  local names = {}
  for i = 1, #order.p do
    local n = order.p[i]
    if params[n] then names[#names + 1] = n; local_state[n] = params[n] end
  end
  for i = 1, #order.b do
    local n = order.b[i]
    if bufs[n] and not np[n] then names[#names + 1] = n; local_state[n] = bufs[n] end
  end
  local prev = C.mt_is_grad_enabled()
  for _, name in ipairs(names) do
    local param = local_state[name]
    local key = prefix .. name
    local input = get(key)
    if input ~= nil then
      if not is_tensor(input) then
        error_msgs[#error_msgs + 1] = ('While copying the parameter named "%s", expected torch.Tensor or ' ..
          'Tensor-like object from checkpoint but received %s'):format(key, typename_of(input))
      else
        if param:dim() == 0 and input:dim() == 1 then input = input[1] end
        local same = param:dim() == input:dim()
        if same then
          for d = 1, param:dim() do if param:size(d) ~= input:size(d) then same = false break end end
        end
        if not same then
          error_msgs[#error_msgs + 1] = ('size mismatch for %s: copying a param with shape %s from checkpoint, ' ..
            'the shape in current model is %s.'):format(key, shape_repr(input), shape_repr(param))
        else
          C.mt_set_grad_enabled(0)
          local ok, err = pcall(param.copy_, param, input)
          C.mt_set_grad_enabled(prev)
          if not ok then
            error_msgs[#error_msgs + 1] = ('While copying the parameter named "%s", whose dimensions in the model ' ..
              'are %s and whose dimensions in the checkpoint are %s, an exception occurred : %s.')
              :format(key, shape_repr(param), shape_repr(input), tostring(err))
          end
        end
      end
    elseif strict then
      missing_keys[#missing_keys + 1] = key
    end
  end
  local extra_key = prefix .. '_extra_state'
  if unwrap(self.set_extra_state) ~= Module.set_extra_state then
    local v = get(extra_key)
    if v ~= nil then self:set_extra_state(v)
    elseif strict then missing_keys[#missing_keys + 1] = extra_key end
  elseif strict and get(extra_key) ~= nil then
    unexpected_keys[#unexpected_keys + 1] = extra_key
  end
  if strict then
    local mods = rawget(self, '_modules')
    for _, key in ipairs(odm.keys(state_dict)) do
      if starts_with(key, prefix) and key ~= extra_key then
        local input_name = key:sub(#prefix + 1):match('^[^.]*')
        if mods[input_name] == nil and local_state[input_name] == nil then
          unexpected_keys[#unexpected_keys + 1] = key
        end
      end
    end
  end
end

local function quote_list(list)
  local q = {}
  for i, k in ipairs(list) do q[i] = '"' .. tostring(k) .. '"' end
  return table.concat(q, ', ')
end
local function py_list(list)
  local q = {}
  for i, k in ipairs(list) do q[i] = "'" .. tostring(k) .. "'" end
  return '[' .. table.concat(q, ', ') .. ']'
end

local IncompatibleKeys = {}
IncompatibleKeys.__index = IncompatibleKeys
IncompatibleKeys.__tostring = function(r)
  if #r.missing_keys == 0 and #r.unexpected_keys == 0 then return '<All keys matched successfully>' end
  return ('_IncompatibleKeys(missing_keys=%s, unexpected_keys=%s)'):format(py_list(r.missing_keys),
    py_list(r.unexpected_keys))
end
M.IncompatibleKeys = IncompatibleKeys

-- load_state_dict(sd, {strict=true}) or load_state_dict(sd, strict). As PyTorch's: each module
-- gets a torch.OrderedDict of the entries under its prefix, made after its parent loaded (so a
-- parent's load pre hook may rename its children's keys), and each module's load post hooks run
-- once its children have loaded (children first).
function Module:load_state_dict(state_dict, opts)
  local strict = true
  if type(opts) == 'table' then
    if opts.strict ~= nil then strict = opts.strict and true or false end
  elseif opts ~= nil then
    strict = opts and true or false
  end
  if type(state_dict) ~= 'table' or is_module(state_dict) then
    fail('load_state_dict', ('Expected state_dict to be dict-like, got %s.'):format(typename_of(state_dict)))
  end
  local missing, unexpected, error_msgs = {}, {}, {}
  local result = setmetatable({ missing_keys = missing, unexpected_keys = unexpected }, IncompatibleKeys)
  local function load(module, local_sd, prefix)
    sync(module)
    module:_load_from_state_dict(local_sd, prefix, {}, true, missing, unexpected, error_msgs)
    local order, mods = rawget(module, '_order').m, rawget(module, '_modules')
    for i = 1, #order do
      local child = mods[order[i]]
      if child then
        local cp = prefix .. order[i] .. '.'
        local child_sd = odict()
        for k, v in od_methods().items(local_sd) do if starts_with(k, cp) then child_sd[k] = v end end
        load(child, child_sd, cp)
      end
    end
    -- post hooks, which may edit missing/unexpected in place
    local post = hooks_of(module, 'load_post')
    if post then
      for _, h in ipairs(post) do
        if h.fn(module, result) ~= nil then
          fail('load_state_dict', 'Hooks registered with register_load_state_dict_post_hook are not expected to ' ..
            'return new values, if incompatible_keys need to be modified, it should be done inplace.')
        end
      end
    end
  end
  load(self, sd_copy(state_dict), '')
  if strict then
    if #unexpected > 0 then
      table.insert(error_msgs, 1, ('Unexpected key(s) in state_dict: %s. '):format(quote_list(unexpected)))
    end
    if #missing > 0 then
      table.insert(error_msgs, 1, ('Missing key(s) in state_dict: %s. '):format(quote_list(missing)))
    end
  end
  if #error_msgs > 0 then
    fail('load_state_dict', ('Error(s) in loading state_dict for %s:\n\t%s'):format(short_name(self),
      table.concat(error_msgs, '\n\t')))
  end
  return result
end

function Module:register_state_dict_pre_hook(fn)
  return add_hook(hook_owner(self), 'state_dict_pre', fn, nil, 'register_state_dict_pre_hook')
end
function Module:register_state_dict_hook(fn)
  return add_hook(hook_owner(self), 'state_dict', fn, nil, 'register_state_dict_hook')
end
Module._register_state_dict_hook = Module.register_state_dict_hook
-- hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs);
-- {with_module=true} (or true) passes the module first. state_dict is a torch.OrderedDict of the
-- entries under this module, which the hook may change (rename, add or drop keys) before they load.
function Module:register_load_state_dict_pre_hook(fn, opts)
  local with_module = opts == true or type(opts) == 'table' and opts.with_module and true or false
  return add_hook(hook_owner(self), 'load_pre', fn, nil, 'register_load_state_dict_pre_hook', with_module)
end
Module._register_load_state_dict_pre_hook = Module.register_load_state_dict_pre_hook
function Module:register_load_state_dict_post_hook(fn)
  return add_hook(hook_owner(self), 'load_post', fn, nil, 'register_load_state_dict_post_hook')
end

------------------------------------------------------------------------------ calls and hooks
local function hooked(self, kind, fn, opts, what)
  local h = add_hook(hook_owner(self), kind, fn, opts, what)
  rawset(self, '_hooked', true)
  return h
end

function Module:register_forward_pre_hook(fn, opts)
  return hooked(self, 'forward_pre', fn, opts, 'register_forward_pre_hook')
end
function Module:register_forward_hook(fn, opts)
  return hooked(self, 'forward', fn, opts, 'register_forward_hook')
end
function Module:register_full_backward_pre_hook(fn, opts)
  return hooked(self, 'backward_pre', fn, opts, 'register_full_backward_pre_hook')
end
function Module:register_full_backward_hook(fn, opts)
  return hooked(self, 'backward', fn, opts, 'register_full_backward_hook')
end

local BackwardHook = require 'moontorch.nn.backward_hook'

local function pack(...) return { n = select('#', ...), ... } end

-- the hooks of one kind that apply to this call: global ones first. The lists are never changed
-- in place (add_hook), so the call runs the hooks registered when it began.
local function call_hooks(self, kind)
  local g, l = global[kind], hooks_of(self, kind)
  if #g == 0 then return l end
  if not l then return g end
  local all = {}
  for i = 1, #g do all[#all + 1] = g[i] end
  for i = 1, #l do all[#all + 1] = l[i] end
  return all
end

-- a plain Lua array (not a tensor, module or other class instance)
local function is_array(v) return type(v) == 'table' and getmetatable(v) == nil end

-- a trailing options table (keyword arguments): a plain table with keys, none at [1]
local function is_kwargs(v)
  return type(v) == 'table' and getmetatable(v) == nil and v[1] == nil and next(v) ~= nil
end

-- args (packed) -> positional args (packed), kwargs table or nil
local function split_kwargs(args)
  if args.n > 0 and is_kwargs(args[args.n]) then
    local pos = { n = args.n - 1 }
    for i = 1, args.n - 1 do pos[i] = args[i] end
    return pos, args[args.n]
  end
  return args, nil
end

------------------------------------------------------------------------------ forward arity
-- A built-in module declares its forward's positional arguments (declare_forward below); a call
-- of such a module with too many or too few arguments, a nil where one is required, or an
-- option its forward does not take is an error naming the module, as Python's TypeError is.
-- The declaration is keyed by the forward function itself: a subclass (or instance) with a
-- forward of its own is not checked, one that inherits the built-in forward is. A forward of
-- exactly one required argument (most layers) is stored as the number 1, which the call path
-- checks inline; anything else as a table {names, nreq, kwargs} that check_args reads.
local signatures = setmetatable({}, { __mode = 'k' })

-- declare_forward(cls, {'input'}) or declare_forward(cls, {'input', 'target'}, {nreq=1, kwargs={'reduction'}}):
-- cls.forward takes these positional arguments, the first nreq (default all) required, and
-- the options in kwargs (default none)
-- definer(into) -> define(name[, parent]): makes class nn.<name> (a Module unless parent says) and
-- puts it in `into` (a family file's table of classes, exported to nn by its install)
function M.definer(into)
  return function(name, parent)
    local cls = class.class('nn.' .. name, parent or Module)
    into[name] = cls
    return cls
  end
end

function M.declare_forward(cls, names, opts)
  local forward = rawget(cls, 'forward')
  if type(forward) ~= 'function' then error('declare_forward: the class has no forward of its own', 2) end
  local nreq = opts and opts.nreq or #names
  if nreq == 1 and #names == 1 and not (opts and opts.kwargs) then
    signatures[forward] = 1
    return
  end
  local kw
  if opts and opts.kwargs then
    kw = {}
    for _, k in ipairs(opts.kwargs) do kw[k] = true end
  end
  signatures[forward] = { names = names, nreq = nreq, kwargs = kw }
end

-- the declared positional parameter names of a forward and how many are required (nil when not declared)
function M.forward_names(forward)
  local sig = signatures[forward]
  if sig == nil then return nil end
  if sig == 1 then return { 'input' }, 1 end
  return sig.names, sig.nreq
end

local function plural(n, word) return n == 1 and ('1 ' .. word) or (n .. ' ' .. word .. 's') end

-- "'a'", "'a' and 'b'", "'a', 'b', and 'c'" (Python's wording)
local function quote_names(list)
  local q = {}
  for i, n in ipairs(list) do q[i] = "'" .. n .. "'" end
  if #q <= 2 then return table.concat(q, ' and ') end
  return table.concat(q, ', ', 1, #q - 1) .. ', and ' .. q[#q]
end

-- raise unless args (packed) suit the signature sig of self's forward
local function check_args(self, sig, args)
  local what = class.typename(self) or 'nn.Module'
  local names, nreq, allowed
  if sig == 1 then names, nreq = { 'input' }, 1 else names, nreq, allowed = sig.names, sig.nreq, sig.kwargs end
  local pos, kw = split_kwargs(args)
  if kw then
    local keys = {}
    for k in pairs(kw) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    for _, k in ipairs(keys) do
      if not (allowed and allowed[k]) then
        fail(what, ("forward() got an unexpected keyword argument '%s'"):format(k))
      end
    end
  end
  local n, nmax = pos.n, #names
  if n > nmax then
    local takes = nreq == nmax and plural(nmax, 'positional argument')
      or ('from %d to %d positional arguments'):format(nreq, nmax)
    fail(what, ('forward() takes %s but %d %s given'):format(takes, n, n == 1 and 'was' or 'were'))
  end
  local missing, given_nil = {}, false
  for i = 1, nreq do
    if pos[i] == nil then
      missing[#missing + 1] = names[i]
      if i <= n then given_nil = true end
    end
  end
  if #missing > 0 then
    fail(what, ('forward() missing %s: %s%s'):format(plural(#missing, 'required positional argument'),
      quote_names(missing), given_nil and ' (nil given)' or ''))
  end
end
M.check_args = check_args

-- M.call_interceptor(m, ...): while set (by moontorch.fx's tracer), every module call goes to it
-- instead (the tracer registers a global hook so that calls take this path)
M.call_interceptor = nil

local function call_hooked(self, ...)
  if M.call_interceptor then return M.call_interceptor(self, ...) end
  local args, kw = split_kwargs(pack(...))
  local pre = call_hooks(self, 'forward_pre')
  if pre then
    for _, h in ipairs(pre) do
      if h.with_kwargs then
        local r = h.fn(self, args, kw or {})
        if r ~= nil then
          if not (is_array(r) and type(r[1]) == 'table') then
            fail('nn.Module', 'forward pre-hook must return nil or an array of (new_args, new_kwargs)')
          end
          local na, nk = r[1], r[2]
          args = { n = na.n or table.maxn(na) }
          for i = 1, args.n do args[i] = na[i] end
          kw = (type(nk) == 'table' and next(nk) ~= nil) and nk or nil
        end
      else
        local r = h.fn(self, args)
        if r ~= nil then
          if is_array(r) then
            local n = r.n or table.maxn(r)
            args = { n = n }
            for i = 1, n do args[i] = r[i] end
          else
            args = { n = 1, r }
          end
        end
      end
    end
  end
  local forward = unwrap(self.forward)
  local sig = signatures[forward]
  if sig ~= nil then
    local all = args
    if kw then
      all = { n = args.n + 1 }
      for i = 1, args.n do all[i] = args[i] end
      all[all.n] = kw
    end
    check_args(self, sig, all)
  end
  local bw_hooks, bw_pre = call_hooks(self, 'backward'), call_hooks(self, 'backward_pre')
  local bw
  if (bw_hooks or bw_pre) and C.mt_is_grad_enabled() ~= 0 then
    bw = BackwardHook.new(self, bw_hooks or {}, bw_pre or {})
    args = bw:setup_input(args)
  end
  local call_args = args
  if kw then
    call_args = { n = args.n + 1 }
    for i = 1, args.n do call_args[i] = args[i] end
    call_args[call_args.n] = kw
  end
  local post = call_hooks(self, 'forward')
  local res
  local always = false
  if post then for _, h in ipairs(post) do if h.always_call then always = true end end end
  if always then
    res = pack(pcall(forward, self, unpack(call_args, 1, call_args.n)))
    if not res[1] then
      local err = res[2]
      for _, h in ipairs(post) do
        if h.always_call then
          if h.with_kwargs then pcall(h.fn, self, args, kw or {}, nil) else pcall(h.fn, self, args, nil) end
        end
      end
      error(err, 0)
    end
    table.remove(res, 1)
    res.n = res.n - 1
  else
    res = pack(forward(self, unpack(call_args, 1, call_args.n)))
  end
  local multi = res.n > 1
  local out
  if multi then out = res else out = res[1] end
  if post then
    for _, h in ipairs(post) do
      local r
      if h.with_kwargs then
        r = h.fn(self, args, kw or {}, out)
      else
        r = h.fn(self, args, out)
      end
      if r ~= nil then out = r end
    end
  end
  if bw then out = bw:setup_output(out, multi) end
  if multi and is_array(out) then return unpack(out, 1, out.n or table.maxn(out)) end
  return out
end

local function bad_call(self, forward, ...)
  check_args(self, signatures[forward], pack(...))
end

local count, too_many = require('moontorch.dotcall').count, require('moontorch.dotcall').too_many

-- m(...): hooks (when any are registered), then forward; a built-in forward's arity is checked
-- (for a one-argument forward: one comparison and a count, nothing for forwards not declared)
function Module.__call(self, ...)
  if rawget(self, '_hooked') or nglobal > 0 then return call_hooked(self, ...) end
  local forward = unwrap(self.forward)
  local sig = signatures[forward]
  if sig ~= nil and (sig ~= 1 or (...) == nil or select('#', ...) ~= 1) then bad_call(self, forward, ...) end
  -- not a tail call: an error inside names the module (core.module_of); the results returned by
  -- count, as lua/dotcall.lua's fronts do (a trace returns through no vararg frame)
  local n, r1, r2, r3, r4, r5, r6, r7, r8 = count(forward(self, ...))
  if n == 1 then return r1 elseif n == 2 then return r1, r2 elseif n == 0 then return
  elseif n == 3 then return r1, r2, r3 elseif n == 4 then return r1, r2, r3, r4
  elseif n <= 8 then return r1, r2, r3, r4, r5, r6, r7, r8 end
  return too_many(n)
end

-- an error inside a module's forward names the module (lua/ffi.lua called_op): the class of `self`
-- when f is its forward or the call that runs it
core.module_of = function(self, f)
  if f ~= Module.__call and f ~= call_hooked and not (is_module(self) and f == unwrap(self.forward)) then return nil end
  if not is_module(self) then return nil end
  return class.typename(self)
end

------------------------------------------------------------------------------ serialization
-- torch.save keeps a module's registered values, attributes and training mode; hooks are code
-- and are not saved (a loaded module has none).
-- Forward (pre) hooks that are instances of registered classes (a pruning method, as PyTorch
-- pickles its hooks) are data: they are saved, in order, and registered again at load.
local saved_fields = { '_parameters', '_buffers', '_modules', '_attrs', '_order', '_non_persistent' }
local function is_saved_hook(fn)
  local tn = type(fn) == 'table' and class.typename(fn)
  return tn and class.find(tn) == getmetatable(fn) or false
end
function Module:__serialize()
  sync(self)
  local s = {}
  for _, f in ipairs(saved_fields) do s[f] = rawget(self, f) end
  local hooks = rawget(self, '_hooks')
  for _, kind in ipairs({ 'forward_pre', 'forward' }) do
    local list = hooks and hooks[kind]
    if list then
      for _, e in ipairs(list) do
        if is_saved_hook(e.fn) then
          s._saved_hooks = s._saved_hooks or {}
          local l = s._saved_hooks[kind] or {}
          s._saved_hooks[kind] = l
          l[#l + 1] = e.fn
        end
      end
    end
  end
  return s
end
function Module.__deserialize(cls, s)
  local m = setmetatable({}, cls)
  for _, f in ipairs(saved_fields) do
    local v = s[f]
    if type(v) ~= 'table' then fail('load', ('a saved %s has no %s table'):format(tostring(cls), f)) end
    rawset(m, f, v)
  end
  local saved = s._saved_hooks
  if type(saved) == 'table' then
    for _, kind in ipairs({ 'forward_pre', 'forward' }) do
      for _, fn in ipairs(type(saved[kind]) == 'table' and saved[kind] or {}) do
        if is_saved_hook(fn) then hooked(m, kind, fn, nil, 'load') end
      end
    end
  end
  return m
end

-- the hook entries of one kind ({fn=, id=, ...}, in call order; nil: none), and dropping those
-- whose fn pred(fn) accepts (nn.utils.prune finds and removes its methods so)
function M.hooks_of(m, kind) return hooks_of(m, kind) end
function M.drop_hooks(m, kind, pred)
  local hooks = rawget(m, '_hooks')
  local list = hooks and hooks[kind]
  if not list then return 0 end
  local new, n = {}, 0
  for _, e in ipairs(list) do
    if pred(e.fn) then n = n + 1 else new[#new + 1] = e end
  end
  hooks[kind] = new
  return n
end

------------------------------------------------------------------------------ deep copies
-- torch.deepcopy(v): a deep copy, as Python's copy.deepcopy makes one: tensors cloned (parameters
-- stay parameters with their requires_grad), tables copied with their metatables (a module keeps
-- its class, a parametrized one included), values shared in v shared once in the copy; classes,
-- functions and other values kept as they are
local function deepcopy(v, memo)
  if is_tensor(v) then
    local c = memo[v]
    if c then return c end
    if is_parameter(v) then
      c = Parameter(v:detach():clone(), v.requires_grad)
    else
      c = v:detach():clone()
      if v.requires_grad then c:requires_grad_(true) end
    end
    memo[v] = c
    return c
  end
  if type(v) ~= 'table' or rawget(v, '__typename') ~= nil then return v end
  local c = memo[v]
  if c then return c end
  c = {}
  memo[v] = c
  for k, x in pairs(v) do rawset(c, deepcopy(k, memo), deepcopy(x, memo)) end
  local mt = getmetatable(v)
  if mt then setmetatable(c, mt) end
  return c
end
M.deepcopy_memo = deepcopy
M.deepcopy = function(v) return deepcopy(v, {}) end

return M
