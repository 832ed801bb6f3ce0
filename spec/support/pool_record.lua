-- Writes the Python program that records spec/support/pool_wants.lua, PyTorch 1.13's results of
-- the cases of spec/support/pool_cases.lua:
--   luajit spec/support/pool_record.lua | /usr/bin/python3 > spec/support/pool_wants.lua
local cases = dofile('spec/support/pool_cases.lua')
local out = {}
local function w(s) out[#out + 1] = s end
w([[
import math, torch
import torch.nn.functional as F
def gen(*shape):
    n = 1
    for s in shape: n *= s
    return torch.tensor([((k * 37) % 101) / 10 - 5 for k in range(n)], dtype=torch.float64).reshape(shape)
def pos2(r): return (r[0], r[1] + 1)
def lua_number(x):
    if x != x: return '0/0'
    if x == math.inf: return 'math.huge'
    if x == -math.inf: return '-math.huge'
    return repr(float(x)) if isinstance(x, float) else repr(x)
def lua(r):
    if isinstance(r, tuple): return ', '.join(lua(x) for x in r)
    vals = ', '.join(lua_number(v) for v in r.flatten().tolist())
    shape = ', '.join(str(s) for s in r.shape)
    return '{ dtype = %r, shape = { %s }, values = { %s } }' % (str(r.dtype), shape, vals)
print('-- PyTorch 1.13 results of spec/support/pool_cases.lua, written by spec/support/pool_record.lua:')
print('--   luajit spec/support/pool_record.lua | /usr/bin/python3 > spec/support/pool_wants.lua')
print('return {')]])
for _, c in ipairs(cases.cases) do
  w(('print(%q + " = { " + lua(%s) + " },")'):format(('  [%q]'):format(c.name), c.py))
end
w("print('}')")
io.write(table.concat(out, '\n'), '\n')
