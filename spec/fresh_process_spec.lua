-- What one process saves, another loads: a state_dict, a whole module and an optimizer saved here
-- load in a fresh luajit process that did only `require 'moontorch'`, and every class moontorch
-- defines is found there by name.
local H = require 'spec.support.helper'
local torch = H.torch
local nn, optim = require 'moontorch.nn', require 'moontorch.optim'

local function fresh(code)
  local out, ok, err = H.run_lua(code)
  assert(ok, 'the fresh process failed:\n' .. out .. err)
  assert(err == '', 'the fresh process wrote on stderr:\n' .. err)
  return out
end

describe('files load in a fresh process', function()
  local dir
  before_each(function() dir = os.tmpname(); os.remove(dir); os.execute('mkdir -p ' .. dir) end)
  after_each(function() os.execute('rm -rf ' .. dir) end)

  it('a state_dict (torch.OrderedDict) loads after only require "moontorch"', function()
    torch.manual_seed(1)
    local m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
    torch.save(m:state_dict(), dir .. '/sd.pt')
    torch.save(m(torch.ones(5, 3)):detach(), dir .. '/y.pt')
    local out = fresh(([[
local torch = require 'moontorch'
local sd = torch.load(%q)
assert(torch.typename(sd) == 'torch.OrderedDict', torch.typename(sd))
print(table.concat(sd:keys(), ','))
-- and it loads into a module built in this process
local nn = require 'moontorch.nn'
local m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
m:load_state_dict(sd)
assert(torch.equal(m(torch.ones(5, 3)), torch.load(%q)))
print('ok')
]]):format(dir .. '/sd.pt', dir .. '/y.pt'))
    assert.are.equal(
      '0.weight,0.bias,1.weight,1.bias,1.running_mean,1.running_var,1.num_batches_tracked,3.weight,3.bias\nok\n', out)
  end)

  it('a whole module loads and computes the same', function()
    torch.manual_seed(2)
    local m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    m:eval()
    local x = torch.randn(2, 3)
    torch.save({ model = m, x = x, y = m(x):detach() }, dir .. '/m.pt')
    local out = fresh(([[
local torch = require 'moontorch'
local c = torch.load(%q)
assert(torch.typename(c.model) == 'nn.Sequential', torch.typename(c.model))
assert(torch.equal(c.model(c.x), c.y))
assert(c.model.training == false)
print(c.model)
]]):format(dir .. '/m.pt'))
    assert.are.equal(tostring(m) .. '\n', out)
  end)

  it('an optimizer loads and keeps stepping with the same numbers', function()
    torch.manual_seed(3)
    local m = nn.Linear(3, 2)
    local opt = optim.SGD(m:parameters(), { lr = 0.1, momentum = 0.9 })
    local x = torch.randn(4, 3)
    local function step(model, o)
      o:zero_grad()
      model(x):pow(2):sum():backward()
      o:step()
    end
    step(m, opt)
    torch.save({ model = m, opt = opt, x = x }, dir .. '/ck.pt')
    torch.save(opt:state_dict(), dir .. '/opt_sd.pt')
    step(m, opt)
    torch.save(m.weight:detach(), dir .. '/w2.pt')
    local out = fresh(([[
local torch = require 'moontorch'
local c = torch.load(%q)
assert(torch.typename(c.opt) == 'optim.SGD', torch.typename(c.opt))
c.opt:zero_grad()
c.model(c.x):pow(2):sum():backward()
c.opt:step()
assert(torch.equal(c.model.weight, torch.load(%q)), 'the second step differs')
local sd = torch.load(%q)
assert(sd.param_groups[1].lr == 0.1 and sd.param_groups[1].momentum == 0.9)
print('ok')
]]):format(dir .. '/ck.pt', dir .. '/w2.pt', dir .. '/opt_sd.pt'))
    assert.are.equal('ok\n', out)
  end)

  it('every class moontorch defines resolves by name after only require "moontorch"', function()
    local class = require 'moontorch.class'
    require 'moontorch.ordered_dict'
    local names = {}
    for name in pairs(class.registry) do
      local home = class.homes[name] or class.packages[name:match('^(%w+)%.') or '']
      -- classes that specs or users define (no home) are theirs to load
      if home then names[#names + 1] = name end
    end
    table.sort(names)
    assert.is_true(#names > 20)
    local list = {}
    for i, n in ipairs(names) do list[i] = ('%q'):format(n) end
    local out = fresh(([[
require 'moontorch'
local class = require 'moontorch.class'
local missing = {}
for _, name in ipairs { %s } do
  if not class.find(name) then missing[#missing + 1] = name end
end
print(#missing == 0 and 'all found' or 'missing: ' .. table.concat(missing, ' '))
]]):format(table.concat(list, ', ')))
    assert.are.equal('all found\n', out)
    -- a class of ours with no home would not resolve: every torch.* class has one
    for name in pairs(class.registry) do
      if name:match('^torch%.') and not name:match('^torch%.autograd%.') then
        assert.is_truthy(class.homes[name], name .. ' has no home in lua/class.lua')
      end
    end
  end)
end)
