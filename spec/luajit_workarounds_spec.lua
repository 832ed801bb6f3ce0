-- Workarounds for bugs of the LuaJIT our users run (Debian 12: 2.1.0-beta3, git 2022-03-20), each
-- checked in fresh processes with LuaJIT's default options, as a user's script runs.
local H = require 'spec.support.helper'

describe('LuaJIT workarounds', function()
  it('a loop of tolist() over small and empty tensors does not crash (allocation sinking)', function()
    -- found by fuzz/lua_load_use.lua: with tolist's table builder compiled, about one run in five
    -- segfaulted; 25 clean runs in a row happen by chance with probability under 1%
    local code = [[
local torch = require 'moontorch'
local ts = { torch.ones(4, 3), torch.empty(0, 4), torch.empty({2, 0, 3}, {dtype = torch.int16}) }
local function total(l) if type(l) == 'number' then return l end local s = 0 for i = 1, #l do s = s + total(l[i]) end return s end
local sum = 0
for i = 1, 20000 do for _, t in ipairs(ts) do sum = sum + total(t:tolist()) end end
print(sum)
]]
    for run = 1, 25 do
      local out, ok, err = H.run_lua(code)
      assert(ok, ('run %d died: %s'):format(run, out .. err))
      assert.are.equal('240000\n', out)
    end
  end)
end)
