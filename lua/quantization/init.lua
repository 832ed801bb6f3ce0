-- moontorch.quantization (torch.quantization, torch.ao.quantization): PyTorch 1.13's eager-mode
-- quantization (issue 25).
--   dynamic:  quantize_dynamic(model, {nn.Linear, nn.LSTM}, torch.qint8)      -- int8 weights, float in and out
--   static:   model.qconfig = get_default_qconfig('x86'); prepare(model); calibrate; convert(model)
--   QAT:      model.qconfig = get_default_qat_qconfig('x86'); prepare_qat(model); train; convert(model)
--   fusion:   fuse_modules(model, {{'conv', 'bn', 'relu'}, {'fc', 'relu'}})
-- Observers: lua/quantization/observer.lua; modules: modules.lua; quantized ops: functional.lua; quantized
-- tensors: qtensor.lua. Options as PyTorch's keyword arguments in a trailing table.
local torch = require 'moontorch'
local nn = require 'moontorch.nn'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local qt = require 'moontorch.quantization.qtensor'
local obs = require 'moontorch.quantization.observer'
local mods = require 'moontorch.quantization.modules'
local qF = require 'moontorch.quantization.functional'

local fail = core.fail
local M = {}

-- observers, fake quants, stubs
for k, v in pairs(obs) do
  if type(v) == 'table' and (rawget(v, '__typename') or obs.is_factory(v)) and k ~= 'Partial' then M[k] = v end
end
M.calculate_qmin_qmax = nil
for _, k in ipairs({ 'QuantStub', 'DeQuantStub', 'QuantWrapper', 'FakeQuantize', 'default_fake_quant',
  'default_weight_fake_quant', 'default_per_channel_weight_fake_quant', 'default_dynamic_fake_quant' }) do
  M[k] = mods[k]
end

------------------------------------------------------------------------------ QConfig
local QConfig = class.class('torch.ao.quantization.QConfig')
QConfig.__tostring = function(q)
  return ('QConfig(activation=%s, weight=%s)'):format(tostring(q.activation), tostring(q.weight))
end
-- QConfig{activation = factory, weight = factory}: the factories make observers or fake quants
function M.QConfig(o)
  if type(o) ~= 'table' or o.activation == nil or o.weight == nil then
    fail('QConfig', 'expected {activation = factory, weight = factory}')
  end
  for _, k in ipairs({ 'activation', 'weight' }) do
    if class.isinstance(o[k], nn.Module) then
      fail('QConfig', 'QConfig received observer instance, please pass observer class instead. Use MyObserver.with_args(x=1) to override arguments to constructor if needed')
    end
  end
  return setmetatable({ activation = o.activation, weight = o.weight }, QConfig)
end
local function is_qconfig(q) return getmetatable(q) == QConfig end

local identity_factory = setmetatable({}, { __call = function() return nn.Identity() end,
  __tostring = function() return "<class 'torch.nn.modules.linear.Identity'>" end })

M.default_qconfig = M.QConfig { activation = obs.default_observer, weight = obs.default_weight_observer }
M.default_per_channel_qconfig = M.QConfig { activation = obs.default_observer, weight = obs.default_per_channel_weight_observer }
M.default_dynamic_qconfig = M.QConfig { activation = obs.default_dynamic_quant_observer, weight = obs.default_weight_observer }
M.per_channel_dynamic_qconfig = M.QConfig { activation = obs.default_dynamic_quant_observer,
  weight = obs.default_per_channel_weight_observer }
M.default_qat_qconfig = M.QConfig { activation = mods.default_fake_quant, weight = mods.default_weight_fake_quant }
M.default_dynamic_qat_qconfig = M.QConfig { activation = mods.default_dynamic_fake_quant, weight = mods.default_weight_fake_quant }
M.default_weight_only_qconfig = M.QConfig { activation = identity_factory, weight = mods.default_weight_fake_quant }
M.default_activation_only_qconfig = M.QConfig { activation = mods.default_fake_quant, weight = identity_factory }

-- get_default_qconfig(backend): PyTorch 1.13's PTQ defaults ('fbgemm', 'x86', 'qnnpack', 'onednn')
function M.get_default_qconfig(backend, version)
  backend = backend or 'fbgemm'
  if version ~= nil and version ~= 0 then fail('get_default_qconfig', 'Version number: ' .. tostring(version) .. ' in get_default_qconfig is not supported. Version number must be 0') end
  if backend == 'fbgemm' or backend == 'x86' then
    return M.QConfig { activation = obs.HistogramObserver.with_args({ reduce_range = true }),
      weight = obs.default_per_channel_weight_observer }
  elseif backend == 'qnnpack' then
    return M.QConfig { activation = obs.HistogramObserver.with_args({ reduce_range = false }), weight = obs.default_weight_observer }
  elseif backend == 'onednn' then
    return M.QConfig { activation = obs.HistogramObserver.with_args({ reduce_range = false }),
      weight = obs.default_per_channel_weight_observer }
  end
  return M.default_qconfig
end
-- get_default_qat_qconfig(backend): PyTorch 1.13's QAT defaults (the unfused FakeQuantize of version 0;
-- version 1's fused observer-fake-quant computes the same numbers)
function M.get_default_qat_qconfig(backend, version)
  backend = backend or 'fbgemm'
  local FQ = mods.FakeQuantize
  local rr = backend == 'fbgemm' or backend == 'x86'
  if backend == 'fbgemm' or backend == 'x86' or backend == 'onednn' then
    return M.QConfig { activation = FQ.with_args({ observer = obs.MovingAverageMinMaxObserver, quant_min = 0, quant_max = 255,
      reduce_range = rr }), weight = mods.default_per_channel_weight_fake_quant }
  elseif backend == 'qnnpack' then
    return M.QConfig { activation = FQ.with_args({ observer = obs.MovingAverageMinMaxObserver, quant_min = 0, quant_max = 255,
      reduce_range = false }), weight = mods.default_weight_fake_quant }
  end
  return M.default_qat_qconfig
end

------------------------------------------------------------------------------ the module mappings
local nnq, nnqd, nni, nniq, nnqat, nniqat = mods.quantized, mods.dynamic, mods.intrinsic, mods.intrinsic_quantized,
  mods.qat, mods.intrinsic_qat
local function static_mappings()
  return {
    [mods.QuantStub] = nnq.Quantize, [mods.DeQuantStub] = nnq.DeQuantize, [nn.Linear] = nnq.Linear,
    [nn.Conv2d] = nnq.Conv2d, [nni.ConvReLU2d] = nniq.ConvReLU2d, [nni.LinearReLU] = nniq.LinearReLU,
    [nnq.FloatFunctional] = nnq.QFunctional, [nnqat.Linear] = nnq.Linear, [nnqat.Conv2d] = nnq.Conv2d,
    [nniqat.LinearReLU] = nniq.LinearReLU, [nniqat.ConvReLU2d] = nniq.ConvReLU2d,
  }
end
local function qat_mappings()
  return { [nn.Linear] = nnqat.Linear, [nn.Conv2d] = nnqat.Conv2d, [nni.LinearReLU] = nniqat.LinearReLU,
    [nni.ConvReLU2d] = nniqat.ConvReLU2d }
end
local function dynamic_mappings() return { [nn.Linear] = nnqd.Linear, [nn.LSTM] = nnqd.LSTM } end
M.get_default_static_quant_module_mappings = static_mappings
M.get_default_qat_module_mappings = qat_mappings
M.get_default_dynamic_quant_module_mappings = dynamic_mappings
local function propagation_list()
  local s = {}
  for _, m in ipairs({ static_mappings(), qat_mappings(), dynamic_mappings() }) do for k in pairs(m) do s[k] = true end end
  s[nn.Sequential] = true
  return s
end
M.get_default_qconfig_propagation_list = propagation_list

------------------------------------------------------------------------------ walking modules
-- a deep copy of a model, as Python's copy.deepcopy (tensors cloned, parameters kept parameters), keeping
-- dtypes, qschemes, qconfigs, observer factories and classes as they are (PyTorch's are immutable)
local dtype_mod = require 'moontorch.dtype'
local T = require 'moontorch.tensor'
local function atom(v)
  return dtype_mod.is_dtype(v) or qt.is_scheme(v) or getmetatable(v) == QConfig or obs.is_factory(v) or
    rawget(v, '__typename') ~= nil
end
local function copy(v, memo)
  if T.is_tensor(v) then
    local c = memo[v]
    if c then return c end
    if bit.band(v._flags, 2) ~= 0 then c = nn.Parameter(v:detach():clone(), v.requires_grad)
    else
      c = v:detach():clone()
      if v.requires_grad then c:requires_grad_(true) end
    end
    memo[v] = c
    return c
  end
  if type(v) ~= 'table' or atom(v) then return v end
  local c = memo[v]
  if c then return c end
  c = {}
  memo[v] = c
  for k, x in pairs(v) do rawset(c, copy(k, memo), copy(x, memo)) end
  local mt = getmetatable(v)
  if mt then setmetatable(c, mt) end
  return c
end
local function deepcopy(m) return copy(m, {}) end
M._deepcopy = deepcopy
local function children(m)
  local r = {}
  for name, c in m:named_children() do r[#r + 1] = { name, c } end
  return r
end
local function class_of(m) return getmetatable(m) end
-- replace the child `name` of parent
local function set_child(parent, name, new)
  local i = tonumber(name)
  if i and rawget(parent, i + 1) ~= nil then
    parent[i + 1] = new
  else
    parent:add_module(name, new)
  end
end
local function get_attr(m, k) local ok, v = pcall(function() return m[k] end) return ok and v or nil end
local function qconfig_of(m) return get_attr(m, 'qconfig') end

-- propagate_qconfig_(module[, qconfig_dict]): every module gets its parent's qconfig unless it has its own
-- or the dict names its class or its name ('' is the whole model)
function M.propagate_qconfig_(module, qconfig_dict)
  qconfig_dict = qconfig_dict or {}
  local function helper(m, parent_q, prefix)
    local q = qconfig_dict[class_of(m)]
    if q == nil then q = parent_q end
    if qconfig_dict[prefix] ~= nil then q = qconfig_dict[prefix] end
    local own = qconfig_of(m)
    if own ~= nil then q = own end
    if q ~= nil and not is_qconfig(q) then fail('propagate_qconfig_', 'expected a QConfig, got ' .. tostring(q)) end
    if q ~= nil then m.qconfig = q end
    for _, c in ipairs(children(m)) do helper(c[2], q, prefix == '' and c[1] or prefix .. '.' .. c[1]) end
  end
  helper(module, nil, '')
end

local function needs_observation(m) return qconfig_of(m) ~= nil end

local observer_hooks = setmetatable({}, { __mode = 'k' }) -- module -> its observer hook's handle
local function observer_hook(m, _, out) return m.activation_post_process(out) end
local function insert_activation_post_process(m)
  if needs_observation(m) and not class.isinstance(m, mods.DeQuantStub) then
    m.activation_post_process = m.qconfig.activation()
    observer_hooks[m] = m:register_forward_hook(observer_hook)
  end
end

local function add_observer_(m, plist, non_leaf)
  for _, c in ipairs(children(m)) do
    local child = c[2]
    if class.isinstance(child, nn.Dropout) then -- as PyTorch: no observer after dropout
    elseif class.isinstance(child, nnq.FloatFunctional) or class.isinstance(child, nnq.QFunctional) then
      if needs_observation(child) then child.activation_post_process = child.qconfig.activation() end
    elseif mods.is_fused(child) then
      insert_activation_post_process(child)
    elseif non_leaf and non_leaf[class_of(child)] then
      insert_activation_post_process(child)
    else
      add_observer_(child, plist, non_leaf)
    end
  end
  if #children(m) == 0 and not class.isinstance(m, nn.Sequential) and plist[class_of(m)] then
    insert_activation_post_process(m)
  end
end

local function has_any_qconfig(m)
  if needs_observation(m) then return true end
  for _, c in ipairs(children(m)) do if has_any_qconfig(c[2]) then return true end end
  return false
end

-- prepare(model, {inplace=false}): observers attached after each module the qconfig covers
function M.prepare(model, opts)
  opts = opts or {}
  if not opts.inplace then model = deepcopy(model) end
  M.propagate_qconfig_(model, opts.qconfig_dict)
  if not has_any_qconfig(model) then
    io.stderr:write('UserWarning: None of the submodule got qconfig applied. Make sure you passed correct configuration through `qconfig_dict` or by assigning the `.qconfig` attribute directly on submodules\n')
  end
  add_observer_(model, opts.allow_list or propagation_list(), opts.observer_non_leaf_module_list)
  return model
end

local function swap_module(m, mapping)
  if needs_observation(m) then
    local q = mapping[class_of(m)]
    if q then return q.from_float(m) end
  end
  return m
end

local function remove_qconfig(m)
  for _, c in ipairs(children(m)) do remove_qconfig(c[2]) end
  if rawget(m, '_attrs') and m._attrs.qconfig ~= nil then m.qconfig = nil end
  local h = observer_hooks[m]
  if h then h:remove(); observer_hooks[m] = nil end
  if get_attr(m, 'activation_post_process') ~= nil and not class.isinstance(m, nnq.FloatFunctional) and
    not class.isinstance(m, nnq.QFunctional) then
    m.activation_post_process = nil
  end
end

local function convert_(m, mapping)
  for _, c in ipairs(children(m)) do
    local name, child = c[1], c[2]
    if not mods.is_fused(child) then convert_(child, mapping) end
    local new = swap_module(child, mapping)
    if new ~= child then set_child(m, name, new) end
  end
end

-- convert(model, {mapping=, inplace=false, remove_qconfig=true}): observed modules swapped for their quantized
-- counterparts (their from_float)
function M.convert(model, opts)
  opts = opts or {}
  if not opts.inplace then model = deepcopy(model) end
  convert_(model, opts.mapping or static_mappings())
  if opts.remove_qconfig ~= false then remove_qconfig(model) end
  return model
end

-- prepare_qat(model, {mapping=, inplace=false}): modules swapped for their QAT twins (fake-quantized
-- weights), then fake quants attached to the activations
function M.prepare_qat(model, opts)
  opts = opts or {}
  if not model.training then fail('prepare_qat', 'prepare_qat only works on models in training mode') end
  if not opts.inplace then model = deepcopy(model) end
  M.propagate_qconfig_(model, opts.qconfig_dict)
  local mapping = opts.mapping or qat_mappings()
  convert_(model, mapping)
  local non_leaf = {}
  for _, v in pairs(mapping) do non_leaf[v] = true end
  M.prepare(model, { inplace = true, observer_non_leaf_module_list = non_leaf })
  return model
end

-- quantize(model, run_fn, run_args[, {mapping=, inplace=}]): prepare, run_fn(model, run_args), convert
function M.quantize(model, run_fn, run_args, opts)
  opts = opts or {}
  if not opts.inplace then model = deepcopy(model) end
  model:eval()
  M.prepare(model, { inplace = true })
  run_fn(model, run_args)
  M.convert(model, { mapping = opts.mapping, inplace = true })
  return model
end

-- quantize_dynamic(model[, qconfig_spec][, dtype][, {mapping=, inplace=}]): qconfig_spec an array of classes
-- (the default dynamic qconfig for each), or a table {class or name = qconfig}; nil: Linear, LSTM (and the
-- cells PyTorch lists, where moontorch has them)
function M.quantize_dynamic(model, qconfig_spec, dtype, opts)
  if type(dtype) == 'table' and opts == nil and not require('moontorch.dtype').is_dtype(dtype) then opts, dtype = dtype, nil end
  opts = opts or {}
  dtype = dtype or torch.qint8
  if dtype ~= torch.qint8 then
    fail('quantize_dynamic', 'Don\'t know how to quantize with default settings for ' .. tostring(dtype) .. '. Provide full qconfig please')
  end
  local spec = {}
  if qconfig_spec == nil then
    spec[nn.Linear], spec[nn.LSTM] = M.default_dynamic_qconfig, M.default_dynamic_qconfig
  elseif type(qconfig_spec) == 'table' and qconfig_spec[1] ~= nil then
    for _, cls in ipairs(qconfig_spec) do spec[cls] = M.default_dynamic_qconfig end
  else
    for k, v in pairs(qconfig_spec) do
      if type(k) == 'table' and rawget(k, '__typename') == nil and v == true then k = nil end
      if k ~= nil then spec[k] = v == true and M.default_dynamic_qconfig or v end
    end
  end
  if not opts.inplace then model = deepcopy(model) end
  model:eval()
  M.propagate_qconfig_(model, spec)
  M.convert(model, { mapping = opts.mapping or dynamic_mappings(), inplace = true })
  return model
end

------------------------------------------------------------------------------ fusion
local function fuse_conv_bn_weights(w, b, rm, rv, eps, bw, bb)
  if b == nil then b = torch.zeros_like(rm) end
  if bw == nil then bw = torch.ones_like(rm) end
  if bb == nil then bb = torch.zeros_like(rm) end
  local rsq = torch.rsqrt(rv + eps)
  local shape = { -1 }
  for _ = 2, w:dim() do shape[#shape + 1] = 1 end
  local fw = w * (bw * rsq):reshape(shape)
  local fb = (b - rm) * rsq * bw + bb
  return nn.Parameter(fw:detach(), w.requires_grad), nn.Parameter(fb:detach(), true)
end
M._fuse_conv_bn_weights = fuse_conv_bn_weights
local function fuse_conv_bn_eval(conv, bn)
  if conv.training or bn.training then fail('fuse_modules', 'Fusion only for eval!') end
  local c = deepcopy(conv)
  c.weight, c.bias = fuse_conv_bn_weights(conv.weight, conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
  return c
end
M._fuse_conv_bn_eval = fuse_conv_bn_eval
local function fuse_linear_bn_eval(lin, bn)
  if lin.training or bn.training then fail('fuse_modules', 'Fusion only for eval!') end
  local l = deepcopy(lin)
  local rsq = torch.rsqrt(bn.running_var + bn.eps)
  local scale = bn.weight * rsq
  l.weight = nn.Parameter((lin.weight * scale:unsqueeze(-1)):detach())
  local b = lin.bias or torch.zeros_like(bn.running_mean)
  l.bias = nn.Parameter(((b - bn.running_mean) * scale + bn.bias):detach())
  return l
end

local function name_of(m) return m.__typename end
-- the fuser of a run of module classes (names as torch.class registers them)
local FUSERS = {
  ['nn.Conv2d nn.BatchNorm2d'] = function(qat, conv, bn)
    if conv.training ~= bn.training then fail('fuse_modules', 'Conv and BN both must be in the same mode (train or eval).') end
    if qat then return nni.ConvBn2d(conv, bn) end
    return fuse_conv_bn_eval(conv, bn)
  end,
  ['nn.Conv2d nn.BatchNorm2d nn.ReLU'] = function(qat, conv, bn, relu)
    if conv.training ~= bn.training then fail('fuse_modules', 'Conv and BN both must be in the same mode (train or eval).') end
    if qat then return nni.ConvBnReLU2d(conv, bn, relu) end
    return nni.ConvReLU2d(fuse_conv_bn_eval(conv, bn), relu)
  end,
  ['nn.Conv2d nn.ReLU'] = function(_, conv, relu) return nni.ConvReLU2d(conv, relu) end,
  ['nn.Linear nn.ReLU'] = function(_, lin, relu) return nni.LinearReLU(lin, relu) end,
  ['nn.BatchNorm2d nn.ReLU'] = function(_, bn, relu) return nni.BNReLU2d(bn, relu) end,
  ['nn.Linear nn.BatchNorm1d'] = function(qat, lin, bn)
    if qat then return nni.LinearBn1d(lin, bn) end
    return fuse_linear_bn_eval(lin, bn)
  end,
}

local function get_module(model, path)
  local m = model
  for part in path:gmatch('[^.]+') do
    local found
    for _, c in ipairs(children(m)) do if c[1] == part then found = c[2] end end
    if not found then fail('fuse_modules', ('%s has no submodule %s'):format(m:_get_name(), part)) end
    m = found
  end
  return m
end
local function set_module(model, path, new)
  local parent, last = model, nil
  local parts = {}
  for part in path:gmatch('[^.]+') do parts[#parts + 1] = part end
  for i = 1, #parts - 1 do parent = get_module(parent, parts[i]) end
  last = parts[#parts]
  set_child(parent, last, new)
end

local function fuse_helper(model, names, qat)
  local ms, keys = {}, {}
  for i, n in ipairs(names) do
    ms[i] = get_module(model, n)
    keys[i] = name_of(ms[i])
  end
  local fuser = FUSERS[table.concat(keys, ' ')]
  if not fuser then
    local t = {}
    for i, k in ipairs(keys) do t[i] = "<class '" .. k .. "'>" end
    fail('fuse_modules', ('Cannot fuse modules: (%s)'):format(table.concat(t, ', ')))
  end
  local fused = fuser(qat, unpack(ms))
  fused.training = ms[1].training
  set_module(model, names[1], fused)
  for i = 2, #names do
    local id = nn.Identity()
    id.training = ms[1].training
    set_module(model, names[i], id)
  end
end
local function fuse(model, list, qat, opts)
  opts = opts or {}
  if not opts.inplace then model = deepcopy(model) end
  if type(list) ~= 'table' then fail('fuse_modules', 'expected an array of module names or of such arrays') end
  if type(list[1]) == 'string' then fuse_helper(model, list, qat)
  else for _, l in ipairs(list) do fuse_helper(model, l, qat) end end
  return model
end
-- fuse_modules(model, {{'conv', 'bn', 'relu'}, ...}[, {inplace=false}]): eval-mode fusion (BN folded)
function M.fuse_modules(model, list, opts)
  if type(opts) == 'boolean' then opts = { inplace = opts } end
  return fuse(model, list, false, opts)
end
-- fuse_modules_qat: training-mode fusion (ConvBn2d, ConvBnReLU2d kept as modules for QAT)
function M.fuse_modules_qat(model, list, opts)
  if type(opts) == 'boolean' then opts = { inplace = opts } end
  return fuse(model, list, true, opts)
end

------------------------------------------------------------------------------ fake quant switches
local function switch(method)
  return function(mod)
    if class.isinstance(mod, mods.FakeQuantize) then mod[method](mod) end
  end
end
M.enable_fake_quant = switch('enable_fake_quant')
M.disable_fake_quant = switch('disable_fake_quant')
M.enable_observer = switch('enable_observer')
M.disable_observer = switch('disable_observer')

M.fake_quantize_per_tensor_affine = qF.fake_quantize_per_tensor_affine
M.fake_quantize_per_channel_affine = qF.fake_quantize_per_channel_affine

-- nn.quantized & co. (the module namespaces)
M.nn = { quantized = nnq, intrinsic = nni, qat = nnqat }
nnq.dynamic = nnqd
nni.quantized = nniq
nni.qat = nniqat

return M
