-- Writes the Python program that records spec/support/op_wants.lua, the PyTorch 1.13 results of
-- every case of spec/support/op_cases.lua:
--   luajit spec/support/op_record.lua | /usr/bin/python3 > spec/support/op_wants.lua
-- (from the checkout, with a build in ./build)
package.path = 'build/lua/?.lua;build/lua/?/init.lua;./?.lua;' .. package.path
package.cpath = 'build/lib/?.so;' .. package.cpath
_G.torch = require 'moontorch'
local list = require 'moontorch.ops.list'
local cases = require 'spec.support.op_cases'

local function py_value(v)
  if type(v) == 'table' then
    local parts = {}
    for i = 1, #v do parts[i] = py_value(v[i]) end
    return '[' .. table.concat(parts, ', ') .. ']'
  end
  if type(v) == 'boolean' then return v and 'True' or 'False' end
  if v ~= v then return 'nan' end
  if v == math.huge then return 'inf' end
  if v == -math.huge then return '-inf' end
  if v == 0 and 1 / v < 0 then return '-0.0' end
  return ('%.17g'):format(v)
end

local out = {}
local function w(s) out[#out + 1] = s end
w([[
import math, torch
import torch.nn.functional as F
nan, inf = float('nan'), float('inf')
def pos(t): return t + 1
def pos2(r): return (r[0], r[1] + 1)
def seeded(f):
    torch.manual_seed(0)
    return f()
def sgd_twice(a, b):
    p = torch.nn.Parameter(a.clone())
    p.grad = b.clone()
    opt = torch.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01)
    opt.step()
    opt.step()
    return p.detach()
def lua_number(x):
    if x != x: return '0/0'
    if x == math.inf: return 'math.huge'
    if x == -math.inf: return '-math.huge'
    if isinstance(x, bool): return 'true' if x else 'false'
    return repr(float(x)) if isinstance(x, float) else repr(x)
def lua(r):
    if isinstance(r, bool): return '{ value = %s }' % ('true' if r else 'false')
    if isinstance(r, tuple): return '{ ' + ', '.join(lua(x) for x in r) + ' }'
    vals = ', '.join(lua_number(v) for v in r.flatten().tolist())
    shape = ', '.join(str(s) for s in r.shape)
    return '{ dtype = %r, shape = { %s }, values = { %s } }' % (str(r.dtype), shape, vals)
def one(f):
    try:
        r = f()
    except Exception as e:
        return '{ error = %r }' % str(e).split(chr(10))[0]
    return lua(r) if isinstance(r, tuple) else '{ ' + lua(r) + ' }'
]])
local names = {}
for k in pairs(cases.inputs) do names[#names + 1] = k end
table.sort(names)
for _, k in ipairs(names) do
  local v = cases.inputs[k]
  if type(v) == 'table' and v.int64 then w(('%s = torch.tensor(%s, dtype=torch.int64)'):format(k, py_value(v.int64)))
  elseif type(v) == 'table' and v.bool then w(('%s = torch.tensor(%s, dtype=torch.bool)'):format(k, py_value(v.bool)))
  elseif type(v) == 'table' and v.index then w(('%s = torch.tensor(%s, dtype=torch.int64)'):format(k, py_value(v.index)))
  else w(('%s = torch.tensor(%s, dtype=torch.float64)'):format(k, py_value(v))) end
end
w("print('-- PyTorch 1.13\\'s results for the cases of spec/support/op_cases.lua, written by')")
w("print('--   luajit spec/support/op_record.lua | /usr/bin/python3 > spec/support/op_wants.lua')")
w("print('-- wants[op][k]: the outputs of case k, each {dtype, shape, values} ({value} for a boolean).')")
w("print('return {')")
for _, e in ipairs(cases.all(list.ops())) do
  if #e.cases > 0 then
    local items = {}
    for _, c in ipairs(e.cases) do items[#items + 1] = ('one(lambda: %s)'):format(c.py) end
    w(("print('  [%q] = { ' + ', '.join([%s]) + ' },')"):format(e.op.name, table.concat(items, ', ')))
  end
end
w("print('}')")
io.write(table.concat(out, '\n'), '\n')
