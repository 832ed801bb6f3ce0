-- parity.lua -- PyTorch 1.13 names a user meets that the other op modules did not have (the parity
-- session): memory formats, and functions composed from the existing ops. Each is PyTorch's
-- function with moontorch's conventions (1-based dims and positions, options in a trailing table).
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local fail = core.fail
local is_tensor = T.is_tensor
local methods = T.methods

local M = {}

function M.install(torch)
  -- memory formats: clone / *_like take {memory_format = ...}; printed as PyTorch prints them
  local formats = {}
  for _, name in ipairs { 'contiguous_format', 'preserve_format', 'channels_last', 'channels_last_3d' } do
    torch[name] = name
    formats[name] = true
  end
  torch._memory_formats = formats
end

return M
