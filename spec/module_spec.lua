-- nn.Module against PyTorch 1.13. Strings and orders recorded with /tmp/mt/gen_m.py
-- (/usr/bin/python3, torch 1.13), whose modules are rebuilt here:
--   class Inner(nn.Module): lin = nn.Linear(2, 3); buffer stat = zeros(3); buffer tmp (persistent=False)
--   class Outer(nn.Module): a = Inner(); act = nn.ReLU(inplace=True);
--     seq = nn.Sequential(nn.Linear(3, 3), nn.LeakyReLU(0.2), nn.BatchNorm1d(3)); shared = a.lin;
--     scale = nn.Parameter(torch.ones(1))
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'

local Inner, Parent = torch.class('spec.Inner', 'nn.Module')
function Inner:__init()
  Parent.__init(self)
  self.lin = nn.Linear(2, 3)
  self:register_buffer('stat', torch.zeros(3))
  self:register_buffer('tmp', torch.zeros(1), { persistent = false })
end
function Inner:forward(x) return self.lin(x) end

local Outer = torch.class('spec.Outer', 'nn.Module')
function Outer:__init()
  Parent.__init(self)
  self.a = Inner()
  self.act = nn.ReLU(true)
  self.seq = nn.Sequential(nn.Linear(3, 3), nn.LeakyReLU(0.2), nn.BatchNorm1d(3))
  self.shared = self.a.lin
  self.scale = nn.Parameter(torch.ones(1))
end
function Outer:forward(x) return self.seq(self.act(self.a(x))) * self.scale end

local function names(iter)
  local out = {}
  for n in iter do out[#out + 1] = n end
  return out
end

describe('nn.Module walks', function()
  local m = Outer()
  it('prints as PyTorch', function()
    assert.are.equal('Outer(\n  (a): Inner(\n    (lin): Linear(in_features=2, out_features=3, bias=True)\n  )\n' ..
      '  (act): ReLU(inplace=True)\n  (seq): Sequential(\n    (0): Linear(in_features=3, out_features=3, bias=True)\n' ..
      '    (1): LeakyReLU(negative_slope=0.2)\n    (2): BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, ' ..
      'track_running_stats=True)\n  )\n  (shared): Linear(in_features=2, out_features=3, bias=True)\n)', tostring(m))
  end)
  it('lists modules, parameters, buffers and children in PyTorch\'s order, shared ones once', function()
    assert.are.same({ '', 'a', 'a.lin', 'act', 'seq', 'seq.0', 'seq.1', 'seq.2' }, names(m:named_modules()))
    assert.are.same({ '', 'a', 'a.lin', 'act', 'seq', 'seq.0', 'seq.1', 'seq.2', 'shared' },
      names(m:named_modules({ remove_duplicate = false })))
    assert.are.same({ 'scale', 'a.lin.weight', 'a.lin.bias', 'seq.0.weight', 'seq.0.bias', 'seq.2.weight', 'seq.2.bias' },
      names(m:named_parameters()))
    assert.are.same({ 'root.scale' }, names(m:named_parameters({ prefix = 'root', recurse = false })))
    assert.are.same({ 'a.stat', 'a.tmp', 'seq.2.running_mean', 'seq.2.running_var', 'seq.2.num_batches_tracked' },
      names(m:named_buffers()))
    assert.are.same({ 'a', 'act', 'seq', 'shared' }, names(m:named_children()))
    assert.are.equal(7, #m:parameters())
    assert.are.equal(8, #m:modules())
    assert.are.equal(4, #m:children(), 'shared is a child of its own (a.lin is a grandchild)')
    assert.is_true(rawequal(m:parameters()[1], m.scale))
  end)
  it('state_dict: keys in order, detached unless keep_vars, prefix', function()
    local sd = m:state_dict()
    assert.are.same({ 'scale', 'a.stat', 'a.lin.weight', 'a.lin.bias', 'seq.0.weight', 'seq.0.bias', 'seq.2.weight',
      'seq.2.bias', 'seq.2.running_mean', 'seq.2.running_var', 'seq.2.num_batches_tracked', 'shared.weight',
      'shared.bias' }, sd:keys())
    assert.is_false(sd.scale.requires_grad)
    assert.is_false(torch.isinstance(sd.scale, nn.Parameter))
    assert.is_true(rawequal(m:state_dict({ keep_vars = true })['a.lin.weight'], m.a.lin.weight))
    assert.are.equal('p.scale', m:state_dict({ prefix = 'p.' }):keys()[1])
  end)
  it('get_submodule / get_parameter / get_buffer', function()
    assert.is_true(rawequal(m:get_submodule('seq.0'), m.seq[1]))
    assert.is_true(rawequal(m:get_parameter('a.lin.bias'), m.a.lin.bias))
    assert.is_true(rawequal(m:get_buffer('a.stat'), m.a.stat))
    H.errors_with(function() m:get_submodule('a.nope') end, 'Inner has no attribute `nope`')
    H.errors_with(function() m:get_parameter('a.stat') end, '`stat` is not an nn.Parameter')
  end)
end)

describe('nn.Module load_state_dict', function()
  it('non-strict reports missing and unexpected keys, printed as PyTorch', function()
    local m = Outer()
    local sd = m:state_dict()
    sd.extra = torch.zeros(1)
    sd.scale = nil
    local r = m:load_state_dict(sd, { strict = false })
    assert.are.equal("_IncompatibleKeys(missing_keys=['scale'], unexpected_keys=['extra'])", tostring(r))
    assert.are.equal('<All keys matched successfully>', tostring(m:load_state_dict(m:state_dict())))
  end)
  it('strict errors name every key; size mismatches name both shapes', function()
    local m = Outer()
    local sd = m:state_dict()
    sd.extra = torch.zeros(1)
    sd.scale = nil
    H.errors_with(function() m:load_state_dict(sd) end, 'Error(s) in loading state_dict for Outer:\n\tMissing key(s) in ' ..
      'state_dict: "scale". \n\tUnexpected key(s) in state_dict: "extra". ')
    sd = m:state_dict()
    sd['a.lin.weight'] = torch.zeros(2, 2)
    H.errors_with(function() m:load_state_dict(sd) end, 'Error(s) in loading state_dict for Outer:\n\tsize mismatch for ' ..
      'a.lin.weight: copying a param with shape torch.Size([2, 2]) from checkpoint, the shape in current model is ' ..
      'torch.Size([3, 2]).')
    H.errors_with(function() m:load_state_dict(3) end, 'Expected state_dict to be dict-like, got number.')
  end)
  it('loads in place: parameters keep their identity and take the values', function()
    local a, b = Outer(), Outer()
    local w = b.a.lin.weight
    b:load_state_dict(a:state_dict())
    assert.is_true(rawequal(w, b.a.lin.weight))
    assert.is_true(torch.equal(w, a.a.lin.weight))
    assert.is_true(w.requires_grad and w.is_leaf)
    -- a plain table works as a state dict too
    local c = nn.Linear(2, 2)
    c:load_state_dict({ weight = torch.ones(2, 2), bias = torch.zeros(2) })
    assert.is_true(torch.equal(c.weight, torch.ones(2, 2)))
  end)
  it('non-persistent buffers are neither saved nor expected', function()
    local m = Inner()
    assert.are.same({ 'stat', 'lin.weight', 'lin.bias' }, m:state_dict():keys())
  end)
  it('extra state, state-dict hooks and the post hook', function()
    local S, P = torch.class('spec.WithExtra', 'nn.Module')
    function S:__init() P.__init(self); self.k = 3 end
    function S:get_extra_state() return { k = self.k } end
    function S:set_extra_state(s) self.k = s.k end
    local a, b = S(), S()
    a.k = 9
    local sd = a:state_dict()
    assert.are.same({ '_extra_state' }, sd:keys())
    b:load_state_dict(sd)
    assert.are.equal(9, b.k)
    local m = nn.Linear(1, 1)
    local h = m:register_state_dict_hook(function(_, dest, prefix) dest[prefix .. 'hooked'] = 1 end)
    assert.are.same({ 'weight', 'bias', 'hooked' }, m:state_dict():keys())
    h:remove()
    h:remove()
    assert.are.same({ 'weight', 'bias' }, m:state_dict():keys())
    local seen
    m:register_load_state_dict_post_hook(function(_, r) seen = #r.missing_keys end)
    m:load_state_dict({ weight = torch.ones(1, 1) }, { strict = false })
    assert.are.equal(1, seen)
  end)
end)

describe('nn.Module registration', function()
  it('errors with PyTorch\'s messages', function()
    local m = Outer()
    H.errors_with(function() m:register_buffer('scale', torch.ones(1)) end, "attribute 'scale' already exists")
    H.errors_with(function() m:register_parameter('a.b', nil) end, 'parameter name can\'t contain "."')
    H.errors_with(function() m:register_parameter('', nil) end, 'parameter name can\'t be empty string ""')
    H.errors_with(function() m:add_module('x', 3) end, 'number is not a Module subclass')
    H.errors_with(function() m.a = torch.ones(1) end,
      "cannot assign 'torch.FloatTensor' as child module 'a' (nn.Module or nil expected)")
    H.errors_with(function() m:register_buffer('forward', torch.ones(1)) end, "attribute 'forward' already exists")
    m:register_buffer('stat2', nil)
    m.stat2 = torch.ones(1)
    assert.are.same({ 'stat2', 'a.stat' }, { names(m:named_buffers())[1], names(m:named_buffers())[2] })
    H.errors_with(function() m.stat2 = 3 end, "cannot assign 'number' as buffer 'stat2' (torch.Tensor or nil expected)")
    H.errors_with(function() m:register_parameter('p', torch.ones(1)) end,
      "cannot assign 'torch.FloatTensor' object to parameter 'p' (nn.Parameter or nil required)")
    local nonleaf = nn.Parameter(torch.ones(1)) * 2
    H.errors_with(function() m:register_parameter('q', nn.Parameter(torch.ones(1)):detach()) end, 'nn.Parameter or nil')
    assert.is_not_nil(nonleaf.grad_fn)
  end)
  it('assignment registers at any time, re-assigns and deletes', function()
    local m = nn.Module()
    m.w = nn.Parameter(torch.ones(2))
    m.child = nn.ReLU()
    m:register_buffer('buf', torch.zeros(2))
    m.buf = m.buf + 1 -- re-assigning a buffer keeps it a buffer
    m.plain = 5
    assert.are.same({ 'w' }, names(m:named_parameters()))
    assert.are.same({ 'buf' }, names(m:named_buffers()))
    assert.are.same({ 'child' }, names(m:named_children()))
    assert.are.equal(5, m.plain)
    assert.is_true(torch.equal(m.buf, torch.ones(2)))
    m.w = nil
    m.child = nil
    m.buf = nil
    assert.are.equal(0, #m:parameters() + #m:buffers() + #m:children())
    m.plain = nn.Parameter(torch.ones(1)) -- a plain attribute becomes a parameter
    assert.are.same({ 'plain' }, names(m:named_parameters()))
  end)
  it('a reserved parameter slot takes only a Parameter or nil', function()
    local m = nn.Module()
    m:register_parameter('p', nil)
    assert.is_nil(m.p)
    assert.are.equal(0, #m:parameters())
    H.errors_with(function() m.p = torch.ones(1) end, "cannot assign 'torch.FloatTensor' as parameter 'p'")
    m.p = nn.Parameter(torch.ones(1))
    assert.are.equal(1, #m:parameters())
  end)
  it('Parameter', function()
    local p = nn.Parameter(torch.tensor({ 1, 2 }))
    assert.is_true(torch.isinstance(p, nn.Parameter) and torch.isinstance(p, torch.Tensor))
    assert.is_true(p.requires_grad and p.is_leaf)
    assert.are.equal('Parameter containing:\ntensor([1., 2.], requires_grad=True)', tostring(p))
    assert.is_false(nn.Parameter(torch.ones(1), false).requires_grad)
    assert.is_false(torch.isinstance(torch.ones(1), nn.Parameter))
    H.errors_with(function() nn.Parameter(3) end, 'data must be a tensor')
  end)
  it('calling a module without forward says so', function()
    local m = nn.Module()
    H.errors_with(function() m(1) end, 'Module [Module] is missing the required "forward" function')
  end)
end)

describe('nn.Module modes and conversion', function()
  it('train/eval reach every submodule', function()
    local m = Outer()
    m:eval()
    for _, sub in ipairs(m:modules()) do assert.is_false(sub.training) end
    m:train()
    assert.is_true(m.seq[3].training)
    H.errors_with(function() m:train('yes') end, 'training mode is expected to be boolean')
  end)
  it('to(dtype) converts parameters in place, grads, floating buffers only', function()
    local m = Outer()
    local w = m.a.lin.weight
    m(torch.randn(4, 2)):sum():backward()
    m:to(torch.float64)
    assert.is_true(rawequal(w, m.a.lin.weight))
    assert.are.equal(torch.float64, w.dtype)
    assert.are.equal(torch.float64, w.grad.dtype)
    assert.are.equal(torch.float64, m.seq[3].running_mean.dtype)
    assert.are.equal(torch.int64, m.seq[3].num_batches_tracked.dtype)
    m:to({ dtype = torch.float32 })
    assert.are.equal(torch.float32, w.dtype)
    m:half()
    assert.are.equal(torch.float16, w.dtype)
    m:float()
    H.errors_with(function() m:to(torch.int64) end, 'nn.Module.to only accepts floating point or complex dtypes')
    if not torch.cuda.is_available() then -- no backend ("built without CUDA"), or one without a device
      H.errors_with(function() m:to('cuda') end,
        torch.cuda.is_built() and 'no CUDA device is available (0 devices' or 'moontorch was built without CUDA')
    end
    assert.is_true(rawequal(m:cpu(), m))
  end)
  it('zero_grad zeroes (1.13 default) or drops grads; requires_grad_', function()
    local m = nn.Linear(2, 2)
    m(torch.ones(2)):sum():backward()
    m:zero_grad()
    assert.is_true(torch.equal(m.weight.grad, torch.zeros(2, 2)))
    m:zero_grad({ set_to_none = true })
    assert.is_nil(m.weight.grad)
    m:requires_grad_(false)
    assert.is_false(m.weight.requires_grad)
  end)
  it('apply visits children first, then the module', function()
    local seen = {}
    Outer():apply(function(mod) seen[#seen + 1] = mod:_get_name() end)
    assert.are.same({ 'Linear', 'Inner', 'ReLU', 'Linear', 'LeakyReLU', 'BatchNorm1d', 'Sequential', 'Linear', 'Outer' }, seen) -- (PyTorch visits a shared child under each name)
  end)
  it('skip_init builds without initialising', function()
    local m = nn.utils.skip_init(nn.Linear, 3, 2)
    assert.are.same({ 2, 3 }, m.weight:size())
    H.errors_with(function() nn.utils.skip_init({}, 1) end, 'Expected a Module class')
  end)
end)

-- PyTorch 1.13 (/usr/bin/python3): m = nn.Module() with register_parameter('p', None),
-- add_module('c', None), register_buffer('b', None), lin = nn.Linear(1, 1):
--   get_submodule('p' | 'c' | 'c.x' | 'forward' | 'lin.forward' | 'lin.weight') -> "`<name>` is not an nn.Module",
--   get_submodule('nope') -> "Module has no attribute `nope`"; get_parameter('p' | 'forward' | 'c') ->
--   "`<name>` is not an nn.Parameter"; get_buffer('b') -> None; get_buffer('forward' | 'lin.weight') ->
--   "`<name>` is not a buffer". Linear.type('torch.DoubleTensor') -> float64 Parameters;
--   Linear.type(torch.int64) -> "data set to a tensor that requires gradients must be floating point
--   or complex dtype", weight still float32; with requires_grad_(False) it casts to int64;
--   BatchNorm1d.type(torch.double) casts num_batches_tracked too; type('torch.Foo') -> "invalid type:
--   'torch.Foo'". register_buffer('a.b') -> 'buffer name can\'t contain "."' (no suffix, as
--   register_parameter), add_module('a.b') -> 'module name can\'t contain ".", got: a.b'.
describe('nn.Module lookups, type and names', function()
  local function reserved()
    local m = nn.Module()
    m:register_parameter('p', nil)
    m:add_module('c', nil)
    m:register_buffer('b', nil)
    m.lin = nn.Linear(1, 1)
    return m
  end
  it('get_submodule / get_parameter / get_buffer tell a missing name from one that holds something else', function()
    local m = reserved()
    for _, c in ipairs({ { 'p', 'p' }, { 'c', 'c' }, { 'c.x', 'c' }, { 'forward', 'forward' },
      { 'lin.forward', 'forward' }, { 'lin.weight', 'weight' } }) do
      H.errors_with(function() m:get_submodule(c[1]) end, 'moontorch.get_submodule: `' .. c[2] .. '` is not an nn.Module')
    end
    H.errors_with(function() m:get_submodule('nope') end, 'Module has no attribute `nope`')
    H.errors_with(function() m:get_submodule('lin.nope') end, 'Linear has no attribute `nope`')
    for _, t in ipairs({ 'p', 'forward', 'c' }) do
      H.errors_with(function() m:get_parameter(t) end, '`' .. t .. '` is not an nn.Parameter')
    end
    assert.is_true(rawequal(m:get_parameter('lin.bias'), m.lin.bias))
    assert.is_nil(m:get_buffer('b'))
    H.errors_with(function() m:get_buffer('forward') end, '`forward` is not a buffer')
    H.errors_with(function() m:get_buffer('lin.weight') end, '`weight` is not a buffer')
    H.errors_with(function() m:get_buffer('nope') end, 'Module has no attribute `nope`')
  end)
  it('type(dst_type) takes dtypes and tensor type names, and refuses a non-float type for trainable parameters', function()
    local l = nn.Linear(2, 2)
    local w = l.weight
    assert.is_true(rawequal(l:type('torch.DoubleTensor'), l))
    assert.are.equal(torch.float64, l.weight.dtype)
    assert.is_true(rawequal(w, l.weight) and torch.isinstance(w, nn.Parameter))
    l:type(torch.float32)
    H.errors_with(function() l:type(torch.int64) end,
      'moontorch.nn.Module.type: data set to a tensor that requires gradients must be floating point or complex dtype')
    H.errors_with(function() l:type('torch.LongTensor') end, 'must be floating point or complex dtype')
    assert.are.equal(torch.float32, l.weight.dtype)
    l:requires_grad_(false)
    l:type(torch.int64)
    assert.are.equal(torch.int64, l.weight.dtype)
    local bn = nn.BatchNorm1d(2)
    bn:type(torch.double)
    assert.are.equal(torch.float64, bn.num_batches_tracked.dtype)
    assert.are.equal(torch.float64, bn.running_mean.dtype)
    H.errors_with(function() nn.ReLU():type('torch.Foo') end, "invalid type: 'torch.Foo'")
    assert.are.equal('nn.ReLU', nn.ReLU():type())
  end)
  it('name checks word their messages as 1.13 does', function()
    local m = nn.Module()
    local err = H.errors_with(function() m:register_buffer('a.b', nil) end, 'buffer name can\'t contain "."')
    assert.is_nil(err:find('got:', 1, true))
    err = H.errors_with(function() m:register_parameter('a.b', nil) end, 'parameter name can\'t contain "."')
    assert.is_nil(err:find('got:', 1, true))
    H.errors_with(function() m:add_module('a.b', nil) end, 'module name can\'t contain ".", got: a.b')
    H.errors_with(function() m:register_buffer(1, nil) end, 'buffer name should be a string. Got number')
  end)
end)
