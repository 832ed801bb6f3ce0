-- What a PyTorch user trips over (issue 27, part 3), one block per friction; each failed before
-- its fix. Bigger ones have their own specs: nn_ctor_options_spec (constructor arguments by
-- name), dim_options_spec (dim by name), libc_spec (ffi.C declarations, torch.Timer),
-- matmul_ranks_spec (part 2), ported_examples_spec (whole scripts ported from pytorch/examples).
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'

describe('flatten_parameters', function()
  it('is a no-op on RNN, LSTM and GRU, as PyTorch\'s is on the CPU', function()
    for _, name in ipairs({ 'RNN', 'LSTM', 'GRU' }) do
      torch.manual_seed(0)
      local m = nn[name](3, 4, { num_layers = 2 })
      local before = {}
      for i, p in ipairs(m:parameters()) do before[i] = p:clone() end
      local x = torch.randn(5, 2, 3)
      local y1 = m(x)
      assert.is_nil(m:flatten_parameters())
      for i, p in ipairs(m:parameters()) do assert.is_true(torch.equal(before[i], p)) end
      assert.is_true(torch.equal(y1, (m(x))))
    end
  end)
end)
