-- torch.save / torch.load: round trips of every kind of value, sharing and cycles, modules and
-- optimizer state; hostile files (every truncation, bit flips) are errors, never crashes; a
-- process killed in the middle of a save leaves the previous file intact.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local optim = require 'moontorch.optim'

local function tmp() return os.tmpname() end
local function roundtrip(obj, opts)
  local p = tmp()
  torch.save(obj, p)
  local r = torch.load(p, opts)
  os.remove(p)
  return r
end
local function read_all(p)
  local f = assert(io.open(p, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end
local function write_all(p, s)
  local f = assert(io.open(p, 'wb'))
  f:write(s)
  f:close()
end

describe('torch.save / torch.load round trips', function()
  it('every dtype, non-contiguous, 0-dim and empty tensors', function()
    for _, d in ipairs { torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
      torch.int16, torch.int8, torch.uint8, torch.bool } do
      local t = (torch.arange(0, 12):reshape(3, 4) % 3):to(d)
      local r = roundtrip(t)
      assert.are.equal(d, r.dtype)
      assert.is_true(torch.equal(r, t), tostring(d))
    end
    local nc = torch.randn(4, 5):t():narrow(1, 2, 3)
    local r = roundtrip(nc)
    assert.is_true(torch.equal(r, nc))
    assert.are.same(nc:stride(), r:stride())
    assert.is_true(torch.equal(roundtrip(torch.tensor(3.5)), torch.tensor(3.5)))
    assert.are.same({ 0, 3 }, roundtrip(torch.empty(0, 3)):size())
  end)
  it('views of one storage still share it', function()
    local base = torch.zeros(6)
    local r = roundtrip({ a = base:narrow(1, 1, 3), b = base:view(2, 3), c = base })
    r.c:fill_(7)
    assert.is_true(torch.equal(r.a, torch.full({ 3 }, 7)))
    assert.is_true(torch.equal(r.b, torch.full({ 2, 3 }, 7)))
  end)
  it('Lua values, nested tables, shared references and cycles', function()
    local shared = { 1, 2 }
    local obj = { n = 1.5, i = 42, big = 2 ^ 53, neg = -0.25, s = 'bytes\0\255', t = true, f = false,
      nested = { deep = { deeper = { 'x' } } }, [7] = 'seven', [true] = 'yes', a = shared, b = shared,
      inf = math.huge }
    obj.self = obj
    local r = roundtrip(obj)
    assert.are.equal(1.5, r.n); assert.are.equal(42, r.i); assert.are.equal(2 ^ 53, r.big)
    assert.are.equal('bytes\0\255', r.s); assert.is_true(r.t); assert.is_false(r.f)
    assert.are.equal('x', r.nested.deep.deeper[1]); assert.are.equal('seven', r[7]); assert.are.equal('yes', r[true])
    assert.is_true(rawequal(r.a, r.b)); assert.is_true(rawequal(r.self, r))
    assert.are.equal(math.huge, r.inf)
    assert.are.equal('hi', roundtrip('hi'))
    assert.are.equal(3, roundtrip(3))
    assert.is_nil(roundtrip(nil))
  end)
  it('OrderedDict, Parameter, a state_dict and a whole module', function()
    local net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.BatchNorm1d(4))
    local sd = roundtrip(net:state_dict())
    assert.are.same(net:state_dict():keys(), sd:keys())
    local other = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.BatchNorm1d(4))
    other:load_state_dict(sd)
    assert.is_true(torch.equal(other[1].weight, net[1].weight))
    local p = roundtrip(nn.Parameter(torch.ones(2)))
    assert.is_true(torch.isinstance(p, nn.Parameter) and p.requires_grad and p.is_leaf)
    local m = roundtrip(net)
    assert.is_true(torch.isinstance(m, nn.Sequential))
    assert.are.equal(3, #m)
    assert.are.equal(tostring(net), tostring(m))
    local x = torch.randn(5, 3)
    net:eval(); m:eval()
    assert.is_true(torch.allclose(net(x), m(x)))
    assert.is_true(m[1].weight.requires_grad)
  end)
  it('optimizer state', function()
    local w = torch.randn(3, { requires_grad = true })
    local opt = optim.SGD({ w }, { lr = 0.1, momentum = 0.9 })
    w.grad = torch.ones(3)
    opt:step()
    local sd = roundtrip(opt:state_dict())
    assert.is_true(torch.equal(sd.state[0].momentum_buffer, opt:state_dict().state[0].momentum_buffer))
    assert.are.equal(0.1, sd.param_groups[1].lr)
  end)
  it('mmap loading gives the same values, and writing to them never touches the file', function()
    local p = tmp()
    local t = torch.randn(1000)
    torch.save({ t = t }, p)
    local before = read_all(p)
    local r = torch.load(p, { mmap = true })
    assert.is_true(torch.equal(r.t, t))
    r.t:fill_(0)
    assert.are.equal(before, read_all(p))
    r = nil
    collectgarbage()
    os.remove(p)
  end)
end)

describe('torch.save / torch.load errors', function()
  it('values that cannot be saved', function()
    local p = tmp()
    H.errors_with(function() torch.save({ f = print }, p) end, 'moontorch.save: cannot save a function (at .f)')
    H.errors_with(function() torch.save({ a = { coroutine.create(print) } }, p) end, 'cannot save a thread (at .a[1])')
    H.errors_with(function() torch.save(setmetatable({}, {}), p) end, 'not a registered class')
    os.remove(p)
  end)
  it('missing files, unknown classes, map_location', function()
    H.errors_with(function() torch.load('/nonexistent/x.pt') end, 'moontorch.load: /nonexistent/x.pt: cannot open')
    local p = tmp()
    local C = torch.class('spec.SaveMe')
    torch.save(C(), p)
    local class = require 'moontorch.class'
    class.registry['spec.SaveMe'] = nil
    H.errors_with(function() torch.load(p) end, "unknown class 'spec.SaveMe'")
    H.errors_with(function() torch.load(p, { map_location = 'cuda' }) end, 'built without CUDA')
    os.remove(p)
  end)
  it('every truncation and hundreds of bit flips are errors, never crashes', function()
    local p = tmp()
    torch.save({ w = torch.randn(3, 4), b = torch.arange(0, 5), name = 'net', list = { 1, 2, { x = true } },
      od = torch.OrderedDict { { 'k', torch.ones(2) } } }, p)
    local good = read_all(p)
    local bad = tmp()
    local n = 0
    for len = 0, #good - 1 do
      write_all(bad, good:sub(1, len))
      local ok, err = pcall(torch.load, bad)
      assert(not ok, 'a file cut at ' .. len .. ' bytes loaded')
      assert(tostring(err):find('moontorch.load', 1, true), err)
      n = n + 1
    end
    local rng = 12345
    for _ = 1, 400 do
      rng = (rng * 1103515245 + 12345) % 2147483648
      local pos = rng % #good + 1
      local b = good:byte(pos)
      local flipped = string.char(bit.bxor(b, bit.lshift(1, rng % 8)))
      write_all(bad, good:sub(1, pos - 1) .. flipped .. good:sub(pos + 1))
      local ok, err = pcall(torch.load, bad)
      assert(not ok, 'a bit flip at byte ' .. pos .. ' loaded')
      assert(tostring(err):find('moontorch.load', 1, true), err)
      n = n + 1
    end
    -- appended garbage, and a hostile header claiming huge sizes
    write_all(bad, good .. 'x')
    assert.is_false(pcall(torch.load, bad))
    write_all(bad, good:sub(1, 16) .. ('\255'):rep(16) .. good:sub(33))
    assert.is_false(pcall(torch.load, bad))
    os.remove(bad)
    os.remove(p)
    assert.is_true(n > 400)
  end)
end)

describe('torch.save is atomic', function()
  it('a process killed mid-save leaves the previous checkpoint intact', function()
    local build = os.getenv('MOONTORCH_BUILD_DIR') or 'build'
    local p = tmp()
    torch.save({ version = 1, w = torch.ones(10) }, p)
    local script = tmp()
    write_all(script, ([[
package.path = '%s/lua/?.lua;%s/lua/?/init.lua;' .. package.path
package.cpath = '%s/lib/?.so;' .. package.cpath
local torch = require 'moontorch'
local big = torch.zeros(50 * 1024 * 1024) -- 200 MB
io.open('%s.ready', 'w'):close()
while true do torch.save({ version = 2, w = big }, '%s') end
]]):format(build, build, build, p, p))
    os.execute(('luajit %s >/dev/null 2>&1 & echo $! > %s.pid'):format(script, p))
    local pid = read_all(p .. '.pid'):match('%d+')
    -- wait until it is saving, then kill it in the middle of a write
    for _ = 1, 200 do
      if io.open(p .. '.ready') then break end
      os.execute('sleep 0.05')
    end
    os.execute('sleep 0.3')
    os.execute('kill -9 ' .. pid)
    os.execute('sleep 0.1')
    local r = torch.load(p)
    -- the previous content, or a complete new one: never a partial file
    assert.is_true(r.version == 1 or r.version == 2)
    if r.version == 1 then assert.is_true(torch.equal(r.w, torch.ones(10))) end
    os.execute(('rm -f %s.tmp.* %s.ready %s.pid %s'):format(p, p, p, script))
    os.remove(p)
  end)
end)
