-- spec/generator_spec.lua: random generators belong to a device (issue 21: the generator API is
-- device-neutral, core/ops/generator.c; each backend names its engine, the CPU's is PyTorch's CPU
-- generator in core/tensor/random.c). Shown on the CPU and the meta device; a CUDA build adds its own.
-- Messages are PyTorch 1.13's (/usr/bin/python3: torch.Generator(device='meta') and a fill given a
-- generator of another device).
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'
local C = torch._C

describe('generators by device', function()
  it('torch.Generator() and Generator(\'cpu\') are CPU generators with the CPU state layout', function()
    for _, g in ipairs({ torch.Generator(), torch.Generator('cpu'), torch.Generator({ device = 'cpu' }) }) do
      assert.equal('cpu', g.device.type)
      assert.equal(5056, g:get_state():numel())
      assert.equal(67280421310721, g:initial_seed())
    end
    assert.equal('cpu', torch.default_generator.device.type)
  end)

  it('a device that draws no random numbers has no generator (meta), as in PyTorch', function()
    H.errors_with(function() torch.Generator('meta') end,
      'Device type meta is not supported for torch.Generator() api')
    -- its fills need none: a meta tensor is filled by nothing, whatever generator is given
    local t = torch.empty({ 3 }, { device = 'meta' })
    t:normal_({ generator = torch.Generator() })
    t:uniform_()
    assert.equal('meta', t.device.type)
  end)

  it('each device has a default generator, made once, that torch.manual_seed seeds', function()
    local d1 = require('moontorch.ops.random').device_generator('cpu')
    assert.equal(torch.default_generator._g, d1._g)
    torch.manual_seed(123)
    assert.equal(123, torch.initial_seed())
    assert.equal(123, d1:initial_seed())
    -- C: the default generator of the CPU device is the one mt_default_generator gives
    local out = ffi.new('mt_generator *[1]')
    local dev = ffi.new('mt_device[1]')
    assert.equal(0, C.mt_default_generator_on(dev, out))
    assert.equal(C.mt_default_generator(), out[0])
    assert.equal(0, C.mt_generator_device(out[0], dev))
    assert.equal(0, dev[0].type)
    -- meta has none; a device that is not in this build is refused by name
    dev[0].type = 2
    assert.equal(C.MT_EDEVICE, C.mt_default_generator_on(dev, out))
    assert.truthy(ffi.string(C.mt_last_error()):find('meta', 1, true))
  end)

  it('a generator draws the stream of its own state, apart from the default one', function()
    local g = torch.Generator():manual_seed(7)
    torch.manual_seed(7)
    local a = torch.rand(5, { generator = g })
    local b = torch.rand(5)
    assert.same(a:tolist(), b:tolist())
    -- get_state / set_state replay a generator's draws
    local st = g:get_state()
    local x = torch.randn(20, { generator = g })
    g:set_state(st)
    assert.same(x:tolist(), torch.randn(20, { generator = g }):tolist())
    -- the state sizes are the engine's: mt_generator_state_bytes of a CPU generator is PyTorch's 5056
    assert.equal(5056, tonumber(C.mt_generator_state_bytes(g._g)))
    assert.equal(5056, tonumber(C.mt_generator_state_size()))
  end)

  it('a generator of another device is refused by a fill (PyTorch\'s message)', function()
    -- a generator whose device reads cuda (its device field written as a CUDA build's would be: the
    -- layout of struct mt_generator in core/generator.h, after glibc's 40-byte x86-64 mutex): the CPU
    -- tensor's fill refuses it before drawing, naming both device types
    local g = torch.Generator()
    local gen = ffi.cast('struct { char lock[40]; mt_device device; } *', g._g)
    gen.device.type = 1
    H.errors_with(function() torch.empty(4):uniform_({ generator = g }) end,
      "Expected a 'cpu' device type for generator but found 'cuda'")
    H.errors_with(function() torch.randperm(4, { generator = g }) end,
      "Expected a 'cpu' device type for generator but found 'cuda'")
    gen.device.type = 0
    torch.empty(4):uniform_({ generator = g })
  end)

  it('without a CUDA device torch.cuda\'s seeding does nothing (as PyTorch) and its states are errors', function()
    torch.cuda.manual_seed(1)
    torch.cuda.manual_seed_all(1)
    torch.cuda.seed()
    torch.cuda.seed_all()
    assert.same({}, torch.cuda.get_rng_state_all())
    assert.same({}, torch.cuda.default_generators)
    H.errors_with(function() torch.cuda.get_rng_state() end, 'cuda.get_rng_state')
    H.errors_with(function() torch.Generator('cuda') end, 'Generator')
  end)

  describe('on a second device (the fake CUDA device: core/fake/fake.c, the CPU\'s engine)', function()
    local T = require 'moontorch.tensor'
    setup(function()
      T.sweep()
      assert.equal(0, C.mt_fake_cuda_install(2, 0))
    end)
    teardown(function()
      torch.cuda.set_device(0)
      T.sweep()
      assert.equal(0, C.mt_fake_cuda_install(0, 0))
    end)

    it('Generator(\'cuda:1\') belongs to that device; fills refuse another device\'s generator', function()
      local g = torch.Generator('cuda:1')
      assert.equal('cuda', g.device.type)
      assert.equal(1, g.device.index)
      local x = torch.empty({ 4 }, { device = 'cuda:1' })
      x:uniform_({ generator = g })
      H.errors_with(function() torch.empty({ 4 }, { device = 'cuda:0' }):uniform_({ generator = g }) end,
        "Expected a 'cuda:0' device type for generator but found 'cuda:1'")
      H.errors_with(function() x:uniform_({ generator = torch.Generator() }) end,
        "Expected a 'cuda' device type for generator but found 'cpu'")
    end)

    it('each device draws from its own default generator, which torch.manual_seed seeds too', function()
      torch.manual_seed(11)
      local a = torch.randn({ 20 }, { device = 'cuda:0' }):cpu()
      local b = torch.randn({ 20 }, { device = 'cuda:1' }):cpu()
      local c = torch.randn(20)
      assert.same(c:tolist(), a:tolist()) -- the same seed and engine: the same stream, apart
      assert.same(c:tolist(), b:tolist())
      -- drawing on one device leaves the others' streams alone
      torch.manual_seed(11)
      torch.randn({ 100 }, { device = 'cuda:0' })
      assert.same(c:tolist(), torch.randn(20):tolist())
    end)

    it('torch.cuda.manual_seed, seed, get_rng_state / set_rng_state and default_generators', function()
      torch.cuda.manual_seed(5)
      assert.equal(5, torch.cuda.initial_seed())
      local st = torch.cuda.get_rng_state()
      assert.equal(5056, st:numel())
      local x = torch.rand({ 8 }, { device = 'cuda' }):cpu()
      torch.cuda.set_rng_state(st)
      assert.same(x:tolist(), torch.rand({ 8 }, { device = 'cuda' }):cpu():tolist())
      torch.cuda.manual_seed_all(9)
      local gens = torch.cuda.default_generators
      assert.equal(2, #gens)
      assert.equal(9, gens[1]:initial_seed())
      assert.equal(9, gens[2]:initial_seed())
      assert.equal(2, #torch.cuda.get_rng_state_all())
      torch.cuda.set_rng_state_all(torch.cuda.get_rng_state_all())
      torch.cuda.seed_all()
      assert.equal(gens[1]:initial_seed(), gens[2]:initial_seed())
      H.errors_with(function() torch.cuda.get_rng_state(7) end, 'CUDA device 7 is not available')
    end)
  end)
end)
