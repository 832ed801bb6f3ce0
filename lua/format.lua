-- placeholder while this module is being written
local T = require 'moontorch.tensor'
local M = {}
function M.install(torch)
  T.tensor_mt.__tostring = function(t) return 'tensor(' .. tostring(t:tolist()) .. ')' end
end
return M
