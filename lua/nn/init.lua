-- moontorch.nn: modules (nn.Module and the built-in layers), nn.Parameter, containers,
-- nn.functional, nn.init, nn.utils and the global module hooks.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'

local nn = {}
package.loaded['moontorch.nn'] = nn -- the files below may ask for it while it loads

local Mod = require 'moontorch.nn.Module'
nn.Module = Mod.Module
nn.Parameter = Mod.Parameter
nn.RemovableHandle = Mod.RemovableHandle

local containers = require 'moontorch.nn.containers'
for k, v in pairs(containers) do nn[k] = v end

nn.functional = require 'moontorch.nn.functional'
core.namespaces[#core.namespaces + 1] = { 'nn.functional.', nn.functional } -- errors name F's ops (lua/ffi.lua)
nn.init = require 'moontorch.nn.initialization'

local layers = require 'moontorch.nn.layers'
layers.install(nn)
if nn.functional.batch_norm == nil then nn.functional.batch_norm = layers.batch_norm end
-- issue 12, pooling: pools, resampling, shuffles, padding modules
require('moontorch.nn.pooling').install(nn)
require('moontorch.nn.padding').install(nn)
-- issue 12, conv part: F.conv1d/2d/3d, F.conv_transpose1d/2d/3d, F.unfold, F.fold and their modules
require('moontorch.nn.functional_conv').install(nn.functional)
require('moontorch.nn.conv').install(nn)

------------------------------------------------------------------------------ global hooks
-- they run for every module's call, before the module's own hooks of the same kind
function nn.register_module_forward_pre_hook(fn, opts)
  return Mod.register_global('forward_pre', fn, opts, 'register_module_forward_pre_hook')
end
function nn.register_module_forward_hook(fn, opts)
  return Mod.register_global('forward', fn, opts, 'register_module_forward_hook')
end
function nn.register_module_full_backward_pre_hook(fn, opts)
  return Mod.register_global('backward_pre', fn, opts, 'register_module_full_backward_pre_hook')
end
function nn.register_module_full_backward_hook(fn, opts)
  return Mod.register_global('backward', fn, opts, 'register_module_full_backward_hook')
end

------------------------------------------------------------------------------ utils
local utils = {}
nn.utils = utils

local function is_module_class(cls)
  while type(cls) == 'table' do
    if cls == nn.Module then return true end
    cls = rawget(cls, '__parent')
  end
  return false
end

-- skip_init(Class, ...): a module built without running its parameter initialisation (the
-- parameters hold uninitialised memory, to be filled by the caller)
function utils.skip_init(cls, ...)
  if not is_module_class(cls) then
    core.fail('nn.utils.skip_init', 'Expected a Module class, got ' .. (class.typename(cls) or type(cls)))
  end
  layers.skipping = layers.skipping + 1
  local res = { pcall(cls, ...) }
  layers.skipping = layers.skipping - 1
  if not res[1] then error(res[2], 0) end
  return res[2]
end

-- attention and transformers (issue 12, the attention part): lua/nn/attention.lua, lua/nn/transformer.lua
require('moontorch.nn.attention').install(nn)
require('moontorch.nn.transformer').install(nn)

-- recurrent layers (issue 12, rnn part): nn.RNN, LSTM, GRU, the cells, nn.utils.rnn
require('moontorch.nn.rnn').install(nn)
------------------------------------------------------------------------------ issue 12, the modules part
-- activation, loss, normalisation, sparse (Embedding, EmbeddingBag) and other modules, the
-- functional ops they add, and nn.utils' gradient clipping and parameter vectors
for _, name in ipairs({ 'activation', 'loss', 'normalization', 'sparse', 'misc' }) do
  require('moontorch.nn.' .. name).install(nn)
end

-- nn.utils.weight_norm / spectral_norm, the hook-based ones (lua/nn/weight_norm.lua)
require('moontorch.nn.weight_norm').install(nn)

-- issue 24: nn.utils.parametrize, nn.utils.parametrizations (orthogonal, spectral_norm, weight_norm)
-- and nn.utils.prune, loaded on first use (a smaller heap for programs that use none)
local utils_lazy = { parametrize = 'moontorch.nn.parametrize', parametrizations = 'moontorch.nn.parametrizations',
  prune = 'moontorch.nn.prune' }
utils._lazy = utils_lazy -- (the names, for walks over namespaces: moontorch.doc's)
setmetatable(utils, { __index = function(t, k)
  local home = utils_lazy[k]
  if not home then return nil end
  local m = require(home)
  rawset(t, k, m)
  return m
end })
-- PyTorch's required constructor arguments accepted by name too (nn.Conv2d(3, 64, {kernel_size = 3}))
Mod.wrap_required(nn)

-- issue 23: nn.parallel.DistributedDataParallel (lua/distributed/ddp.lua), loaded on first use
class.homes['nn.parallel.DistributedDataParallel'] = 'moontorch.distributed.ddp'
local parallel_lazy = {
  DistributedDataParallel = function() return require('moontorch.distributed.ddp').DistributedDataParallel end,
}
nn.parallel = setmetatable({ _lazy = parallel_lazy }, { __index = function(t, k)
  local load = parallel_lazy[k]
  if load then
    local v = load()
    rawset(t, k, v)
    return v
  end
end })
-- issue 25: nn.quantized (.dynamic), nn.intrinsic (.quantized, .qat), nn.qat, loaded on first use
do
  local qnames = { quantized = true, intrinsic = true, qat = true }
  local mt = getmetatable(nn) or {}
  local prev = mt.__index
  mt.__index = function(t, k)
    if qnames[k] then
      local v = require('moontorch.quantization').nn[k]
      rawset(t, k, v)
      return v
    end
    if type(prev) == 'function' then return prev(t, k) end
    if type(prev) == 'table' then return prev[k] end
    return nil
  end
  setmetatable(nn, mt)
end

return nn
