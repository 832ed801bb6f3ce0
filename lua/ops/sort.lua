-- placeholder while this module is being written
local M = {}
function M.install(torch) end
return M
