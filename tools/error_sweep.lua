-- The error-naming sweep (not part of the suite): every public function (torch.*, torch.linalg/special/fft,
-- nn.functional, Tensor methods, nn module forwards) called with argument lists a user gets wrong
-- (mismatched shapes, wrong dtypes, out-of-range dims, nil, strings). Each error must be a Lua error
-- raised at this file's line (the call site), naming the op that was called: `moontorch.<op>: ...`.
-- Prints one line per offender (kind, call, message) and a count per kind.
--   luajit tools/error_sweep.lua [filter] [--all]
package.path = 'build/lua/?.lua;build/lua/?/init.lua;' .. package.path
package.cpath = 'build/lib/?.so;' .. package.cpath
local torch = require 'moontorch'
local F = torch.nn.functional
local filter = arg[1] ~= '--all' and arg[1] or nil
local show_all = false
for _, a in ipairs(arg) do if a == '--all' then show_all = true end end

local SELF = debug.getinfo(1, 'S').source:sub(2)
local skip = {
  -- side effects or processes, files, threads, global state
  manual_seed = true, seed = true, set_default_dtype = true, set_default_tensor_type = true, save = true,
  load = true, set_num_threads = true, set_num_interop_threads = true, set_printoptions = true,
  use_deterministic_algorithms = true, set_grad_enabled = true, set_rng_state = true, set_anomaly_enabled = true,
  compile = true, jit = true, set_flush_denormal = true, set_warn_always = true, hub = true,
  from_file = true, sweep = true, set_default_device = true,
}

local function tensors()
  return {
    a34 = torch.randn(3, 4), b45 = torch.randn(4, 5), c3 = torch.randn(3), d4 = torch.randn(4),
    i34 = torch.ones(3, 4, { dtype = torch.int64 }), bool3 = torch.tensor({ true, false, true }),
    s = torch.tensor(2.5), a2345 = torch.randn(2, 3, 4, 5), a234 = torch.randn(2, 3, 4),
  }
end

local T = tensors()
-- argument lists a user gets wrong
local arglists = {
  { 'a34,b45', function() return { T.a34, T.b45 } end },
  { 'c3,d4', function() return { T.c3, T.d4 } end },
  { 'a34,d4x', function() return { T.a34, T.c3 } end },
  { 'a34,i34', function() return { T.a34, T.i34 } end },
  { 'a34,a34,b45', function() return { T.a34, T.a34, T.b45 } end },
  { 'a34,99', function() return { T.a34, 99 } end },
  { 'a34,-99', function() return { T.a34, -99 } end },
  { 'a34,str', function() return { T.a34, 'str' } end },
  { 'a234,b45', function() return { T.a234, T.b45 } end },
  { 'a2345,c3', function() return { T.a2345, T.c3 } end },
  { 'c3', function() return { T.c3 } end },
  { 's', function() return { T.s } end },
  { 'bool3', function() return { T.bool3 } end },
  { 'i34', function() return { T.i34 } end },
  { 'nil', function() return {} end },
  { 'str', function() return { 'str' } end },
  { 'a34,{}', function() return { T.a34, {} } end },
  { 'a34,1,b45', function() return { T.a34, 1, T.b45 } end },
}

local bad, seen = {}, {}
local count = { calls = 0, errors = 0 }
local function where_of(msg)
  local src, rest = msg:match('^(.-):%d+: (.*)$')
  return src, rest or msg
end

local function names_op(rest, name)
  local op = rest:match('^moontorch%.([%w_%.]+)%(?%)?:')
  if not op then return false, nil end
  local last = op:match('([%w_]+)$')
  local n = name:gsub('_$', '')
  local l = last:gsub('_$', '')
  if l == n or op == name then return true, op end
  return false, op
end

local function try(label, name, fn, args)
  count.calls = count.calls + 1
  local ok, err = pcall(fn, unpack(args, 1, math.max(table.maxn(args), 1)))
  if ok then return end
  count.errors = count.errors + 1
  err = tostring(err)
  local src, rest = where_of(err)
  local kind
  if src ~= SELF then
    if rest:match('^moontorch') or err:match('^moontorch') then kind = 'position' else kind = 'vm' end
  end
  local named, op = names_op(rest, name)
  if not kind and not named then kind = op and 'inner' or 'unnamed' end
  if kind or show_all then
    local key = label .. '|' .. (kind or 'ok')
    local rec = bad[key]
    if not rec then
      rec = { label = label, kind = kind or 'ok', n = 0, msg = err, args = {} }
      bad[key] = rec
    end
    rec.n = rec.n + 1
    rec.args[#rec.args + 1] = args.label
  end
end

-- the call as a user writes it (torch.absolute(x), x:abs(), F.l1_loss(a, b)), compiled as this file's line
local function caller(ns, k, method)
  local kw = { ['repeat'] = true, ['and'] = true, ['or'] = true, ['not'] = true, ['end'] = true, ['function'] = true,
    ['in'] = true, ['for'] = true, ['if'] = true, ['then'] = true, ['else'] = true, ['return'] = true, ['local'] = true }
  local call = method and ('s:%s(...)'):format(k) or ('ns.%s(...)'):format(k)
  if kw[k] then call = method and ('s[%q](s, ...)'):format(k) or ('ns[%q](...)'):format(k) end
  local src = ('local ns = ...; return function(s, ...) local r = %s; return r end'):format(call)
  return assert(loadstring(src, '@' .. SELF))(ns)
end

local function sweep(prefix, tbl, method)
  if type(tbl) ~= "table" then return end
  local names = {}
  for k, v in pairs(tbl) do
    if type(k) == 'string' and type(v) == 'function' and not skip[k] and k:sub(1, 1) ~= '_' and k:match('^[%a_][%w_]*$') then
      names[#names + 1] = k
    end
  end
  table.sort(names)
  for _, k in ipairs(names) do
    local label = prefix .. k
    if not filter or label:find(filter, 1, true) then
      local call = caller(tbl, k, method)
      for _, al in ipairs(arglists) do
        T = tensors()
        local args = al[2]()
        args.label = al[1]
        if method then
          if args[1] ~= nil and torch.is_tensor(args[1]) then try(label, k, call, args) end
        else
          try(label, k, call, { nil, unpack(args, 1, table.maxn(args)), label = al[1] })
        end
      end
    end
  end
end

sweep('torch.', torch)
sweep('torch.linalg.', torch.linalg)
sweep('torch.special.', torch.special)
sweep('torch.fft.', torch.fft)
sweep('F.', F)
-- Tensor methods (but those that change global state or hooks)
local methods = {}
for k, v in pairs(require('moontorch.tensor').methods) do
  if not k:match('hook') and k ~= 'share_memory_' then methods[k] = v end
end
sweep('Tensor:', methods, true)

-- nn modules: each class built with the first constructor arguments it takes, then called as m(...)
-- (the op named: the module, or the nn.functional op it runs)
local nn = torch.nn
local ctor_args = { {}, { 4 }, { 4, 5 }, { 4, 5, 3 }, { 3, 4, 3 } }
local function module_ok(op, cls)
  if not op then return false end
  local flat = function(s) return (s:lower():gsub('_', '')) end
  local last = op:match('([%w_]+)$')
  return op == 'nn.' .. cls or flat(cls):find(flat(last), 1, true) ~= nil
end
local mnames = {}
for k, v in pairs(nn) do
  if type(k) == 'string' and k:match('^%u') and type(v) == 'table' and k ~= 'Module' and k ~= 'Parameter' then mnames[#mnames + 1] = k end
end
table.sort(mnames)
for _, k in ipairs(mnames) do
  local label = 'nn.' .. k
  if not filter or label:find(filter, 1, true) then
    local m
    for _, ca in ipairs(ctor_args) do
      local ok, r = pcall(nn[k], unpack(ca))
      if ok and type(r) == 'table' and r.forward then m = r break end
    end
    if m then
      local call = assert(loadstring('local m = ...; return function(_, ...) local r = m(...); return r end', '@' .. SELF))(m)
      for _, al in ipairs(arglists) do
        T = tensors()
        local args = al[2]()
        count.calls = count.calls + 1
        local ok, err = pcall(call, nil, unpack(args, 1, math.max(table.maxn(args), 1)))
        if not ok then
          count.errors = count.errors + 1
          err = tostring(err)
          local src, rest = where_of(err)
          local op = rest:match('^moontorch%.([%w_%.]+)%(?%)?:')
          local kind
          if src ~= SELF then kind = rest:match('^moontorch') and 'position' or 'vm'
          elseif not module_ok(op, k) then kind = op and 'inner' or 'unnamed' end
          if kind or show_all then
            local key = label .. '|' .. (kind or 'ok')
            local rec = bad[key] or { label = label, kind = kind or 'ok', n = 0, msg = err, args = {} }
            bad[key] = rec
            rec.n = rec.n + 1
            rec.args[#rec.args + 1] = al[1]
          end
        end
      end
    end
  end
end

local keys = {}
for k in pairs(bad) do keys[#keys + 1] = k end
table.sort(keys)
local per = {}
for _, k in ipairs(keys) do
  local r = bad[k]
  per[r.kind] = (per[r.kind] or 0) + 1
  print(string.format('%-8s %-40s [%s] %s', r.kind, r.label, table.concat(r.args, ' '), (r.msg:gsub('\n.*', ''))))
end
io.stderr:write(string.format('calls %d, errors %d; offending public calls: ', count.calls, count.errors))
for k, v in pairs(per) do io.stderr:write(k, ' ', v, '  ') end
io.stderr:write('\n')
