-- moontorch: PyTorch's semantics in LuaJIT, over a C core (libmoontorch).
--   local torch = require 'moontorch'
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local loaded = debug.getregistry()['moontorch.modules'] -- one copy per process (see lua/ffi.lua)
if loaded.moontorch then return loaded.moontorch end
local dtype = require 'moontorch.dtype'
local T = require 'moontorch.tensor'
local class = require 'moontorch.class'

local C = core.C
local torch = {}
package.loaded['moontorch'] = torch -- submodules may require it while we load
loaded.moontorch = torch

torch._C = C
torch.ffi = core
torch.__version__ = ffi.string(C.mt_version())

-- dtypes, as torch.float32 and PyTorch's aliases
for _, name in ipairs { 'uint8', 'int8', 'int16', 'int32', 'int64', 'float16', 'float32', 'float64', 'bool',
  'bfloat16', 'qint8', 'quint8', 'qint32' } do
  torch[name] = dtype[name]
end
for alias, d in pairs(dtype.aliases) do torch[alias] = d end
torch.device = dtype.device

function torch.get_default_dtype() return dtype.by_id[C.mt_get_default_dtype()] end
function torch.set_default_dtype(d)
  local r = dtype.resolve(d)
  if not r or C.mt_set_default_dtype(r.id) ~= 0 then
    core.fail('set_default_dtype', 'only floating-point types are supported as the default type, got ' .. tostring(d))
  end
end
function torch.is_tensor(x) return T.is_tensor(x) end
function torch.is_floating_point(t)
  if not T.is_tensor(t) then core.fail('is_floating_point', 'expected a tensor, got ' .. T.describe(t)) end
  return t:is_floating_point()
end
function torch.numel(t)
  if not T.is_tensor(t) then core.fail('numel', 'expected a tensor, got ' .. T.describe(t)) end
  return t:numel()
end
function torch.set_num_threads(n)
  n = T.int_arg(n, 'set_num_threads', 'the number of threads')
  if n < 1 then core.fail('set_num_threads', 'set_num_threads expects a positive integer, got ' .. n) end
  C.mt_set_num_threads(n < 2 ^ 31 and n or 2 ^ 31 - 1) -- the pool takes at most 256
end
function torch.get_num_threads() return C.mt_get_num_threads() end

-- torch.config(): what this build runs with, as text (PyTorch's torch.__config__.show()): the
-- version, the CPU and the SIMD level of our kernels, the BLAS, its kernel set and who chose it,
-- threads, CUDA. Loads the BLAS if nothing has yet. `moontorch --version` prints it.
function torch.config()
  local s = ffi.string(C.mt_config_string())
  return (s:gsub('\n', '\n  - LuaJIT: ' .. jit.version .. '\n', 1))
end
torch.__config__ = { show = torch.config }

-- torch.help(x): the documentation of a function, class or other value, or of a name
-- ('torch.zeros'): the text the REPL's `?` prints (lua/doc/ holds every public name's entry)
function torch.help(x, name) return require('moontorch.doc').describe(x, name) end

-- classes (Torch7's)
torch.class = class.class
torch.typename = function(x)
  if T.is_tensor(x) then return x:type() end
  return class.typename(x)
end
-- isinstance(obj, cls): cls a class, a class name, or torch.Tensor
torch.Tensor = setmetatable({ __typename = 'torch.Tensor' }, {
  __call = function(_, ...) return torch.empty(...) end,
  __tostring = function() return 'torch.Tensor' end,
})
function torch.isinstance(obj, cls)
  if cls == torch.Tensor then return T.is_tensor(obj) end
  if type(cls) == 'table' and cls.__istensorclass then return cls.__istensorclass(obj) end
  if type(cls) == 'table' and rawget(cls, '__typename') == nil and cls[1] ~= nil then
    for _, c in ipairs(cls) do if torch.isinstance(obj, c) then return true end end
    return false
  end
  return class.isinstance(obj, cls)
end

-- torch.cuda: devices, streams, events, memory, answered by the C core's registry (lua/cuda.lua)
torch.cuda = require 'moontorch.cuda'
-- torch.backends.cuda (matmul.allow_tf32): the CUDA backend's settings
torch.backends = torch.backends or {}
torch.backends.cuda = torch.cuda._backends
-- torch.cuda.amp (autocast, GradScaler: issue 25), loaded on first use; the other lazy fields are
-- lua/cuda.lua's (its metatable's __index)
do
  local mt = getmetatable(torch.cuda) or {}
  local index = mt.__index
  mt.__index = function(t, k)
    if k == 'amp' then
      local amp = require('moontorch.amp')._cuda
      rawset(t, k, amp)
      return amp
    end
    if type(index) == 'function' then return index(t, k) end
    if index then return index[k] end
  end
  setmetatable(torch.cuda, mt)
end

-- the op modules add methods to the Tensor type and functions to torch
local modules = { 'create', 'view', 'elementwise', 'reduce', 'shape', 'sort', 'linalg', 'random' }
for _, name in ipairs(modules) do
  require('moontorch.ops.' .. name).install(torch)
end
-- issue 12, conv part: torch.convolution
require('moontorch.ops.conv').install(torch)
-- recurrent layers (issue 12, rnn part): the fused gate ops, and unbind in C (one node for all views)
require('moontorch.ops.rnn').install(torch)
-- issue 12, the modules part: torch.layer_norm, torch.nll_loss (fused ops)
require('moontorch.ops.norm').install(torch)
require('moontorch.ops.loss').install(torch)
-- issue 24: sparse CSR matrices (torch.sparse_csr_tensor, t:to_sparse_csr(), torch.sparse.mm)
require('moontorch.ops.sparse').install(torch)
-- PyTorch functions composed from the ops above, each in its family's file (the files' "composed in
-- Lua" sections), installed where torch lacks the name: types.lua and functional.lua whole
require('moontorch.ops.types').install(torch)
require('moontorch.ops.elementwise').composed.install(torch)
require('moontorch.ops.shape').composed.install(torch)
require('moontorch.ops.sort').composed.install(torch)
require('moontorch.ops.reduce').composed.install(torch)
require('moontorch.ops.view').composed.install(torch)
require('moontorch.ops.linalg').composed.install(torch)
require('moontorch.ops.create').composed.install(torch)
require('moontorch.ops.functional').install(torch)
-- the other public names the op list gives (torch.multiply, t:arcsin(), torch.special.xlogy, ...)
require('moontorch.ops.list').install_aliases(torch, T.methods)
-- torch.polygamma(n, input) and torch.special.polygamma(n, input) take n first, as PyTorch's do
-- (the list's binding is input first: t:polygamma(n), as PyTorch's method)
do
  local by_input = torch.polygamma
  local function polygamma(n, input, ...)
    if type(n) ~= 'number' and type(input) == 'number' then n, input = input, n end
    return by_input(input, n, ...)
  end
  torch.polygamma, torch.special.polygamma = polygamma, polygamma
end
-- torch.special's other names and the functions composed from the ops (lua/ops/special.lua)
require('moontorch.ops.special').install(torch, T.methods)
require('moontorch.format').install(torch)
require('moontorch.autograd').install(torch)
-- dims (and the arguments around them) by name too: x:split(1, {dim = 2}), x:transpose{dim0 = 1, dim1 = 2}
require('moontorch.ops.byname').install(T.methods, torch)

T.finalize()
-- where an error looks up the name of the op the user called (lua/ffi.lua called_op; nn.functional
-- adds itself when it loads)
core.namespaces[#core.namespaces + 1] = { '', torch }
core.namespaces[#core.namespaces + 1] = { '', T.methods }
for _, ns in ipairs({ 'linalg', 'special', 'fft' }) do
  local t = rawget(torch, ns)
  if type(t) == 'table' then core.namespaces[#core.namespaces + 1] = { ns .. '.', t } end
end

-- parts that load on first use (require 'moontorch.nn' works too): field -> loader
local lazy = {
  nn = function() return require 'moontorch.nn' end,
  optim = function() return require 'moontorch.optim' end,
  OrderedDict = function() return require 'moontorch.ordered_dict' end,
  save = function() return require('moontorch.checkpoint').save end,
  load = function() return require('moontorch.checkpoint').load end,
  save_safetensors = function() return require('moontorch.safetensors_io').save end,
  load_safetensors = function() return require('moontorch.safetensors_io').load end,
  load_pytorch = function() return require('moontorch.interop.pytorch').load end, -- PyTorch's .pt files
  load_t7 = function() return require('moontorch.interop.t7').load end, -- Torch7's .t7 files
  export = function() return require('moontorch.interop.export').export end, -- programs run from C
  load_program = function() return require('moontorch.interop.export').load_program end,
  onnx = function() return require 'moontorch.interop.onnx' end, -- torch.onnx.load
  -- utils.data and datasets (issue 13, data part)
  utils = function() return require 'moontorch.utils' end,
  datasets = function() return require 'moontorch.datasets' end,
  -- issue 24: copy.deepcopy, torch.fx
  deepcopy = function() return require('moontorch.nn.Module').deepcopy end,
  fx = function() return require 'moontorch.fx' end,
  profiler = function() return require 'moontorch.profiler' end,
  Timer = function() return require 'moontorch.timer' end, -- Torch7's timer
  List = function() return require 'moontorch.iterlist' end, -- what parameters() returns
  -- issue 23: torch.distributed (lua/distributed/)
  distributed = function() return require 'moontorch.distributed' end,
  -- issue 25: automatic mixed precision (torch.autocast, torch.amp, torch.cpu.amp)
  amp = function() return require 'moontorch.amp' end,
  cpu = function() return { amp = require('moontorch.amp')._cpu } end,
  -- torch.distributions (lua/distributions/)
  distributions = function() return require 'moontorch.distributions' end,
}
for _, n in ipairs({ 'autocast', 'is_autocast_enabled', 'is_autocast_cpu_enabled', 'set_autocast_enabled',
  'set_autocast_cpu_enabled', 'get_autocast_cpu_dtype', 'get_autocast_gpu_dtype', 'set_autocast_cpu_dtype',
  'set_autocast_gpu_dtype', 'is_autocast_cache_enabled', 'set_autocast_cache_enabled', 'clear_autocast_cache',
  'autocast_increment_nesting', 'autocast_decrement_nesting' }) do
  lazy[n] = function() return require('moontorch.amp.autocast')[n] end
end
lazy._amp_foreach_non_finite_check_and_unscale_ = function()
  return require('moontorch.amp.grad_scaler').foreach_non_finite_check_and_unscale_
end
lazy._amp_update_scale_ = function() return require('moontorch.amp.grad_scaler').update_scale_ end
-- issue 25: quantization (torch.quantization = torch.ao.quantization), quantized tensors and fake quantization
lazy.quantization = function() return require 'moontorch.quantization' end
lazy.ao = function()
  local q = require 'moontorch.quantization'
  return { quantization = q, nn = q.nn }
end
for _, n in ipairs({ 'quantize_per_tensor', 'quantize_per_channel', 'dequantize', '_make_per_tensor_quantized_tensor',
  '_make_per_channel_quantized_tensor', 'per_tensor_affine', 'per_channel_affine', 'per_tensor_symmetric',
  'per_channel_symmetric', 'per_channel_affine_float_qparams' }) do
  lazy[n] = function(t)
    require('moontorch.quantization.qtensor').install(t)
    return rawget(t, n)
  end
end
lazy.fake_quantize_per_tensor_affine = function() return require('moontorch.quantization.functional').fake_quantize_per_tensor_affine end
lazy.fake_quantize_per_channel_affine = function() return require('moontorch.quantization.functional').fake_quantize_per_channel_affine end
torch._lazy = lazy
setmetatable(torch, {
  __index = function(t, k)
    local load = lazy[k]
    if load then
      local ok, m = pcall(load, t)
      if ok then rawset(t, k, m); return m end
      error(m, 2)
    end
    return nil
  end,
})

return torch
