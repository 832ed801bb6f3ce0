-- moontorch.fx.subgraph_rewriter (PyTorch's torch.fx.subgraph_rewriter): replace_pattern(gm,
-- pattern, replacement) finds every place of gm's graph that computes what `pattern` computes
-- and puts what `replacement` computes there instead. pattern and replacement are functions (or
-- modules) of the same parameters, traced; the pattern's parameters match any value, its other
-- nodes must match op, target and arguments, and its inner values must not be read elsewhere.
-- Returns the matches: {anchor = the node that gave the pattern's result, nodes_map = {pattern
-- node -> graph node}}. Matches do not overlap; the graph is changed in place and gm recompiled.
local torch = require 'moontorch'
local core = require 'moontorch.ffi'
local G = require 'moontorch.fx.graph'

local fail = core.fail
local is_node, is_plain = G.is_node, G.is_plain

local M = {}

local function graph_of(x)
  local Tr = require 'moontorch.fx.tracer'
  local GMm = require 'moontorch.fx.graph_module'
  if type(x) == 'table' and getmetatable(x) == G.Graph then return x end
  if torch.isinstance(x, GMm.GraphModule) then return x.graph end
  return Tr.Tracer():trace(x)
end

-- try to match pattern node pn at graph node gn, filling map; false when it does not
local function match_node(pn, gn, map, used)
  if map[pn] ~= nil then return map[pn] == gn end
  if pn.op == 'placeholder' then
    map[pn] = gn
    return true
  end
  if used[gn] or gn.op ~= pn.op or gn.multi ~= pn.multi then return false end
  if pn.op == 'get_attr' or pn.op == 'call_method' or pn.op == 'call_module' then
    if pn.target ~= gn.target then return false end
  elseif pn.target ~= gn.target then
    return false
  end
  local function match_arg(pa, ga)
    if is_node(pa) then return is_node(ga) and match_node(pa, ga, map, used) end
    if is_plain(pa) then
      if not is_plain(ga) then return false end
      for k, v in pairs(pa) do if not match_arg(v, ga[k]) then return false end end
      for k in pairs(ga) do if pa[k] == nil then return false end end
      return true
    end
    return pa == ga
  end
  map[pn] = gn
  if (pn.args.n or #pn.args) ~= (gn.args.n or #gn.args) then map[pn] = nil return false end
  if not match_arg(pn.args, gn.args) then map[pn] = nil return false end
  if (pn.kwargs == nil) ~= (gn.kwargs == nil) then map[pn] = nil return false end
  if pn.kwargs and not match_arg(pn.kwargs, gn.kwargs) then map[pn] = nil return false end
  return true
end

function M.replace_pattern(gm, pattern, replacement)
  local pg, rg = graph_of(pattern), graph_of(replacement)
  local pout
  local pplace, rplace = {}, {}
  for _, n in ipairs(pg:nodes()) do
    if n.op == 'output' then pout = n end
    if n.op == 'placeholder' then pplace[#pplace + 1] = n end
  end
  for _, n in ipairs(rg:nodes()) do
    if n.op == 'placeholder' then rplace[#rplace + 1] = n end
  end
  if not pout or (pout.args.n or #pout.args) ~= 1 or not is_node(pout.args[1]) then
    fail('fx.subgraph_rewriter.replace_pattern', 'the pattern must return one value computed from its inputs')
  end
  local anchor = pout.args[1]
  local graph = gm.graph
  local matches, used = {}, {}
  local nodes = graph:nodes()
  for i = #nodes, 1, -1 do
    local gn = nodes[i]
    if not used[gn] then
      local map = {}
      if match_node(anchor, gn, map, used) then
        -- the pattern's inner values must not be read outside the match
        local inner = {}
        for pn, x in pairs(map) do if pn.op ~= 'placeholder' then inner[x] = true end end
        local ok = true
        for x in pairs(inner) do
          if x ~= gn then
            for _, u in ipairs(x.users) do if not inner[u] then ok = false end end
          end
        end
        if ok then
          for x in pairs(inner) do used[x] = true end
          matches[#matches + 1] = { anchor = gn, nodes_map = map }
        end
      end
    end
  end
  for _, m in ipairs(matches) do
    local val_map = {}
    for i, rp in ipairs(rplace) do
      local pp = pplace[i]
      if not pp then fail('fx.subgraph_rewriter.replace_pattern', 'the replacement takes more inputs than the pattern') end
      val_map[rp] = m.nodes_map[pp]
    end
    local result = graph:inserting_before(m.anchor, function()
      local out
      for _, rn in ipairs(rg:nodes()) do
        if rn.op == 'output' then
          out = rn.args[1]
          out = is_node(out) and val_map[out] or out
        elseif rn.op ~= 'placeholder' then
          val_map[rn] = graph:node_copy(rn, function(x) return val_map[x] end)
        end
      end
      return out
    end)
    m.anchor:replace_all_uses_with(result)
    -- the matched nodes, last first
    local order = {}
    for pn, x in pairs(m.nodes_map) do if pn.op ~= 'placeholder' then order[#order + 1] = x end end
    local pos = {}
    for i, n in ipairs(graph:nodes()) do pos[n] = i end
    table.sort(order, function(a, b) return (pos[a] or 0) > (pos[b] or 0) end)
    for _, x in ipairs(order) do
      if #x.users == 0 and not x._erased then graph:erase_node(x) end
    end
  end
  gm:recompile()
  return matches
end

return M
