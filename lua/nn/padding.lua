-- The padding modules (issue 12, pooling): ZeroPad2d, ConstantPad1d/2d/3d, ReflectionPad1d/2d/3d,
-- ReplicationPad1d/2d/3d, each F.pad with its mode, printed as PyTorch 1.13 prints them.
-- (PyTorch 1.13 has no CircularPad modules: circular padding is F.pad(x, pad, 'circular').)
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local Mod = require 'moontorch.nn.Module'

local fail = core.fail
local Module, declare_forward = Mod.Module, Mod.declare_forward
local type, floor, huge, tostring = type, math.floor, math.huge, tostring

local M = {}
local F -- nn.functional, set by install

local function is_int(v) return type(v) == 'number' and v == floor(v) and v > -huge and v < huge end

-- padding: an int (every side) or a table of 2 * nsp ints
local function padding_of(name, padding, nsp)
  local r = {}
  if is_int(padding) then
    for i = 1, 2 * nsp do r[i] = padding end
    return r
  end
  if type(padding) ~= 'table' or #padding ~= 2 * nsp then
    fail('nn.' .. name, ('padding must be an int or a tuple of %d ints, got %s'):format(2 * nsp,
      require('moontorch.argcheck').show(padding)))
  end
  for i = 1, 2 * nsp do
    if not is_int(padding[i]) then
      fail('nn.' .. name, ('padding must be ints, got %s'):format(tostring(padding[i])))
    end
    r[i] = padding[i]
  end
  return r
end

local function tuple(t)
  local s = {}
  for i = 1, #t do s[i] = ('%d'):format(t[i]) end
  return '(' .. table.concat(s, ', ') .. ')'
end
local function number(v)
  if is_int(v) then return ('%d'):format(v) end
  return ('%.15g'):format(v)
end

local function pad_class(name, nsp, mode, with_value)
  local cls = class.class('nn.' .. name, Module)
  M[name] = cls
  function cls:__init(padding, value)
    Module.__init(self)
    if type(padding) == 'table' and padding.padding ~= nil then padding, value = padding.padding, padding.value end
    if type(value) == 'table' then value = value.value end
    if padding == nil then
      fail('nn.' .. name, "__init__() missing 1 required positional argument: 'padding'")
    end
    self.padding = padding_of(name, padding, nsp)
    if with_value then
      if value == nil then
        if name ~= 'ZeroPad2d' then fail('nn.' .. name, "__init__() missing 1 required positional argument: 'value'") end
        value = 0
      end
      if type(value) ~= 'number' then fail('nn.' .. name, 'value must be a number, got ' .. tostring(value)) end
      self.value = value
    end
  end
  function cls:forward(x)
    if with_value then return F.pad(x, self.padding, 'constant', self.value) end
    return F.pad(x, self.padding, mode)
  end
  declare_forward(cls, { 'input' })
  function cls:extra_repr()
    if with_value and name ~= 'ZeroPad2d' then
      return ('padding=%s, value=%s'):format(tuple(self.padding), number(self.value))
    end
    return tuple(self.padding)
  end
  return cls
end

for nsp = 1, 3 do
  pad_class('ConstantPad' .. nsp .. 'd', nsp, 'constant', true)
  pad_class('ReflectionPad' .. nsp .. 'd', nsp, 'reflect', false)
  pad_class('ReplicationPad' .. nsp .. 'd', nsp, 'replicate', false)
end
pad_class('ZeroPad2d', 2, 'constant', true)

function M.install(nn)
  F = nn.functional
  class.export(M, nn)
end

return M
