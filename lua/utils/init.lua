-- moontorch.utils (torch.utils): its submodules load on first use.
--   torch.utils.data      moontorch.utils.data: datasets, samplers, DataLoader
--   torch.utils.progress  moontorch.utils.progress: progress bars
--   torch.utils.plot      moontorch.utils.plot: line charts as SVG
local M = {}
local homes = { data = 'moontorch.utils.data', progress = 'moontorch.utils.progress',
  plot = 'moontorch.utils.plot' }
return setmetatable(M, {
  __index = function(t, k)
    local home = homes[k]
    if home then
      local m = require(home)
      rawset(t, k, m)
      return m
    end
  end,
})
