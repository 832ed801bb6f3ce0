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
nn.init = require 'moontorch.nn.initialization'

local layers = require 'moontorch.nn.layers'
layers.install(nn)
if nn.functional.batch_norm == nil then nn.functional.batch_norm = layers.batch_norm end

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

------------------------------------------------------------------------------ issue 12, the modules part
-- activation, loss, normalisation, sparse (Embedding, EmbeddingBag) and other modules, the
-- functional ops they add, and nn.utils' gradient clipping and parameter vectors
for _, name in ipairs({ 'activation', 'loss', 'normalization', 'sparse', 'misc' }) do
  require('moontorch.nn.' .. name).install(nn)
end

return nn
