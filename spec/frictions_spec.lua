-- What a PyTorch user trips over (issue 27, part 3), one block per friction; each failed before
-- its fix. Bigger ones have their own specs: nn_ctor_options_spec (constructor arguments by
-- name), dim_options_spec (dim by name), libc_spec (ffi.C declarations, torch.Timer),
-- matmul_ranks_spec (part 2), ported_examples_spec (whole scripts ported from pytorch/examples).
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'

describe('flatten_parameters', function()
  it('is a no-op on RNN, LSTM and GRU, as PyTorch\'s is on the CPU', function()
    for _, name in ipairs({ 'RNN', 'LSTM', 'GRU' }) do
      torch.manual_seed(0)
      local m = nn[name](3, 4, { num_layers = 2 })
      local before = {}
      for i, p in ipairs(m:parameters()) do before[i] = p:clone() end
      local x = torch.randn(5, 2, 3)
      local y1 = m(x)
      assert.is_nil(m:flatten_parameters())
      for i, p in ipairs(m:parameters()) do assert.is_true(torch.equal(before[i], p)) end
      assert.is_true(torch.equal(y1, (m(x))))
    end
  end)
end)

describe('a position 0 from PyTorch habits', function()
  local F = nn.functional
  local function L(t) return torch.tensor(t, { dtype = torch.int64 }) end
  it('says positions count from 1, at the user\'s line, wherever a user\'s index can be 0', function()
    local x = torch.ones(2, 3)
    local calls = {
      Embedding = function() return nn.Embedding(5, 2)(L({ 0, 1 })) end,
      ['F.embedding'] = function() return F.embedding(L({ 1, 0 }), torch.ones(5, 2)) end,
      EmbeddingBag = function() return nn.EmbeddingBag(5, 2)(L({ { 0, 1 } })) end,
      nll_loss = function() return F.nll_loss(torch.ones(2, 3), L({ 0, 1 })) end,
      cross_entropy = function() return F.cross_entropy(torch.ones(2, 3), L({ 1, 0 })) end,
      CrossEntropyLoss = function() return nn.CrossEntropyLoss()(torch.ones(2, 3), L({ 1, 0 })) end,
      NLLLoss = function() return nn.NLLLoss()(torch.ones(2, 3), L({ 0, 0 })) end,
      gather = function() return x:gather(2, L({ { 0, 1 }, { 1, 1 } })) end,
      index_select = function() return x:index_select(2, L({ 0 })) end,
      scatter = function() return x:scatter(2, L({ { 0 } }), 1) end,
      scatter_add = function() return x:scatter_add(2, L({ { 0 } }), torch.ones(1, 1)) end,
      index_add = function() return x:index_add(2, L({ 0 }), torch.ones(2, 1)) end,
      index_fill = function() return x:index_fill(2, L({ 0 }), 1) end,
      index_copy = function() return x:index_copy(2, L({ 0 }), torch.ones(2, 1)) end,
      take = function() return x:take(L({ 0 })) end,
      take_along_dim = function() return x:take_along_dim(L({ { 0 } }), 2) end,
      ['t[0]'] = function() return x[0] end,
      ['t[{0}]'] = function() return x[{ 0 }] end,
      ['t[{{0, 1}}]'] = function() return x[{ { 0, 1 } }] end,
      ['t[index tensor]'] = function() return x[L({ 0 })] end,
      ['t[0] ='] = function() x[0] = 1 end,
      ['t[index tensor] ='] = function() x[L({ 0 })] = 2 end,
      select = function() return x:select(1, 0) end,
      narrow = function() return x:narrow(1, 0, 1) end,
      one_hot = function() return F.one_hot(L({ 0, 2 }), 3) end,
      multi_margin_loss = function() return F.multi_margin_loss(torch.ones(2, 3), L({ 0, 1 })) end,
      ctc_loss = function() return F.ctc_loss(torch.randn(5, 1, 3):log_softmax(3), L({ { 0, 2 } }), L({ 5 }), L({ 2 })) end,
      max_unpool1d = function() return F.max_unpool1d(torch.ones(1, 1, 2), L({ { { 0, 1 } } }), 2) end,
      kthvalue = function() return x:kthvalue(0, 2) end,
      index_put = function() return x:index_put({ L({ 0 }) }, torch.tensor(1.0)) end,
    }
    for name, f in pairs(calls) do
      local ok, err = pcall(f)
      assert.is_false(ok, name)
      err = tostring(err)
      assert.truthy(err:find('frictions_spec.lua:', 1, true), name .. ': ' .. err)
      assert.truthy(err:find('from 1', 1, true) or err:find('1-based', 1, true), name .. ': ' .. err)
    end
  end)
  it('keeps the message of a position past the end as it was', function()
    H.errors_with(function() F.cross_entropy(torch.ones(2, 3), L({ 1, 4 })) end, 'Target 4 is out of bounds.')
    local ok, err = pcall(F.cross_entropy, torch.ones(2, 3), L({ 1, 4 }))
    assert.is_nil(tostring(err):find('count from 1', 1, true))
  end)
end)

describe("a method called with '.'", function()
  local T = require 'moontorch.tensor'
  it("says call it with ':' at the user's line, for every tensor method", function()
    local x = torch.ones(2, 3)
    local n = 0
    for name in pairs(T.methods) do
      for _, first in ipairs({ 0, 'a', { dim = 1 } }) do
        local ok, err = pcall(function() return x[name](first) end)
        assert.is_false(ok, name)
        err = tostring(err)
        local want = ("frictions_spec.lua:%d: moontorch.%s: call it with ':' (x:%s(...)), not '.'"):format(84, name, name)
        assert.truthy(err:find(want, 1, true), err .. ' / ' .. want)
      end
      local ok, err = pcall(function() return x[name]() end)
      assert.is_false(ok, name)
      assert.truthy(tostring(err):find('the first argument is nothing, not the tensor', 1, true), err)
      n = n + 1
    end
    assert.is_true(n > 300, n)
    -- the issue's cases
    H.errors_with(function() return x.size(0) end, "moontorch.size: call it with ':' (x:size(...)), not '.': the first argument is 0, not the tensor")
    H.errors_with(function() return torch.ones(1):sum().item() end, "moontorch.item: call it with ':'")
  end)

  it("says so for every method of every module class", function()
    local mods = { nn.Linear(2, 3), nn.Sequential(nn.ReLU()), nn.LSTM(2, 3), nn.Conv2d(1, 1, 1), nn.ModuleList({ nn.ReLU() }),
      nn.ModuleDict({ a = nn.ReLU() }), nn.TransformerEncoderLayer(4, 2), nn.BatchNorm1d(2) }
    for _, m in ipairs(mods) do
      local names = {}
      local cls = getmetatable(m)
      while type(cls) == 'table' do
        for k, v in pairs(cls) do if type(v) == 'function' and k:sub(1, 2) ~= '__' then names[k] = true end end
        cls = rawget(cls, '__parent')
      end
      local n = 0
      for name in pairs(names) do
        local ok, err = pcall(function() return m[name](torch.ones(2)) end)
        assert.is_false(ok, name)
        local want = ("frictions_spec.lua:%d: moontorch.nn.Module.%s: call it with ':' (model:%s(...)), not '.'")
          :format(113, name, name)
        assert.truthy(tostring(err):find(want, 1, true), tostring(err) .. ' / ' .. want)
        n = n + 1
      end
      assert.is_true(n > 40, n)
    end
    H.errors_with(function() return nn.Linear(2, 2).parameters() end,
      "moontorch.nn.Module.parameters: call it with ':' (model:parameters(...)), not '.': the first argument is nothing, not the module")
  end)

  it('makes each front once (one name read from modules of different classes keeps its fronts)', function()
    local a, b = nn.Linear(2, 2), nn.ReLU()
    local fa, fb = a.forward, b.forward
    for _ = 1, 3 do
      assert.is_true(rawequal(fa, a.forward))
      assert.is_true(rawequal(fb, b.forward))
    end
    assert.is_false(rawequal(fa, fb))
    local unwrap = require('moontorch.ffi').unwrap
    assert.is_true(rawequal(unwrap(fa), nn.Linear.forward))
    local x = torch.ones(2)
    assert.is_true(rawequal(x.sum, torch.ones(3).sum))
    assert.is_true(rawequal(unwrap(x.sum), require('moontorch.tensor').methods.sum))
  end)

  it("leaves calls with ':' and explicit self alone", function()
    local x = torch.ones(2, 3)
    assert.are.equal(3, x.size(x, 2))
    local m = nn.Linear(2, 3)
    assert.are.equal(2, #m.parameters(m))
    local v, i = x:max(2)
    assert.are.same({ 2 }, i:size())
    assert.are.equal(2, select('#', x:max(2)))
    assert.are.equal(1, select('#', x:sum()))
    local w = torch.ones(2, { requires_grad = true })
    assert.are.equal(0, select('#', w:sum():backward()))
  end)
end)

describe('#tensor and comparisons', function()
  it('#t is the size of dim 1, as Torch7\'s #t and Python\'s len(t)', function()
    assert.are.equal(3, #torch.ones(3, 2))
    assert.are.equal(0, #torch.ones(0, 4))
    assert.are.equal(5, #torch.arange(5))
    assert.are.equal(2, #torch.ones(4, 2):t())
    H.errors_with(function() return #torch.tensor(1.5) end, 'moontorch.len: len() of a 0-d tensor')
  end)

  it('Lua\'s <, >, <=, >= on a tensor say which method compares', function()
    local outputs = torch.tensor({ 0.2, 0.7 })
    H.errors_with(function() return outputs > 0.5 end, 'use t:gt(0.5) for t > 0.5')
    H.errors_with(function() return outputs < 0.5 end, 'use t:lt(0.5) for t < 0.5')
    H.errors_with(function() return outputs >= 0.5 end, 'use t:ge(0.5) for t >= 0.5')
    H.errors_with(function() return 0.5 >= outputs end, 'use t:le(0.5) for t <= 0.5')
    H.errors_with(function() return outputs < outputs end, 'a:lt(b) for a < b, a:gt(b) for a > b')
    local ok, err = pcall(function() return outputs > 0.5 end)
    assert.truthy(tostring(err):find('frictions_spec.lua:%d+: moontorch.lt:'), err)
    assert.is_true(torch.equal(outputs:gt(0.5), torch.tensor({ false, true })))
  end)
end)

describe('model:parameters() and the other lists', function()
  it('iterate the Python way, and stay arrays (#, ipairs, [i])', function()
    local m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    local n, seen = 0, {}
    for p in m:parameters() do n = n + p:numel(); seen[#seen + 1] = p end
    assert.are.equal(13, n)
    local ps = m:parameters()
    assert.are.equal(4, #ps)
    for i, p in ipairs(ps) do assert.is_true(rawequal(p, seen[i])) end
    assert.is_true(rawequal(ps[1], m[1].weight))
    local kinds = {}
    for c in m:children() do kinds[#kinds + 1] = torch.typename(c) end
    assert.are.same({ 'nn.Linear', 'nn.ReLU', 'nn.Linear' }, kinds)
    local count = 0
    for _ in m:modules() do count = count + 1 end
    assert.are.equal(4, count)
    local bn = nn.BatchNorm1d(3)
    local nb = 0
    for b in bn:buffers() do nb = nb + 1 end
    assert.are.equal(3, nb)
    -- loops over one list nest, and a loop broken early does not disturb the next
    local pairs_n = 0
    for _ in ps do for _ in ps do pairs_n = pairs_n + 1 end end
    assert.are.equal(16, pairs_n)
    for _ in ps do break end
    local again = 0
    for _ in ps do again = again + 1 end
    assert.are.equal(4, again)
    -- an empty list ends at once
    for _ in nn.ReLU():parameters() do error('not reached') end
  end)

  it('go to optimizers, clip_grad_norm_ and torch.save as before', function()
    local m = nn.Linear(2, 2)
    local opt = torch.optim.SGD(m:parameters(), { lr = 0.1 })
    assert.are.equal(2, #opt.param_groups[1].params)
    m(torch.ones(2)):sum():backward()
    nn.utils.clip_grad_norm_(m:parameters(), 1.0)
    opt:step()
    local path = os.tmpname()
    torch.save(m:parameters(), path)
    local back = torch.load(path)
    os.remove(path)
    assert.are.equal(2, #back)
    assert.is_true(torch.equal(back[1], m.weight))
    local k = 0
    for _ in back do k = k + 1 end
    assert.are.equal(2, k)
  end)
end)

describe('torch.save / torch.load', function()
  it('reads a PyTorch .pt file (torch.load_pytorch), and a damaged one is an error at the caller\'s line', function()
    -- the first bytes of PyTorch 1.13's torch.save files (checked with xxd on files /usr/bin/python3
    -- wrote: torch.save({'w': torch.ones(2)}, f) gives 'PK\3\4' (a zip archive), with
    -- _use_new_zipfile_serialization=False '\x80\x02\x8a\x0a' (a pickle, protocol 2)); whole files
    -- are read in spec/pytorch_files_spec.lua
    for _, head in ipairs({ 'PK\3\4\0\0\8\8\0\0\0\0\0\0\0\0' .. ('\0'):rep(64), '\128\2\138\10l\252\156F\249 j\168P\25.\128' }) do
      local p = os.tmpname()
      H.write_file(p, head)
      local ok, err = pcall(torch.load, p)
      os.remove(p)
      assert.is_false(ok)
      err = tostring(err)
      assert.truthy(err:find('frictions_spec.lua:%d+: moontorch.load_pytorch: '), err)
    end
    local sd = torch.load('spec/support/pytorch/mlp_legacy.pt')
    assert.are.same({ 4, 16 }, sd['2.weight']:size())
    local p = os.tmpname()
    torch.save_safetensors({ w = torch.ones(2) }, p)
    H.errors_with(function() torch.load(p) end, 'is a safetensors file: read it with torch.load_safetensors(path)')
    os.remove(p)
  end)

  it('take open Lua files, at their position, leaving them open after what they wrote or read', function()
    local p = os.tmpname()
    local f = io.open(p, 'wb')
    f:write('head')
    torch.save({ a = torch.ones(3), b = 'x' }, f)
    torch.save(torch.arange(4), f)
    f:write('tail')
    f:close()
    f = io.open(p, 'rb')
    assert.are.equal('head', f:read(4))
    local obj = torch.load(f)
    assert.is_true(torch.equal(obj.a, torch.ones(3)))
    assert.are.equal('x', obj.b)
    assert.is_true(torch.equal(torch.load(f, { map_location = 'cpu' }), torch.arange(4)))
    assert.are.equal('tail', f:read('*a'))
    f:close()
    -- a model's state_dict through a file handle
    local m = nn.Linear(3, 2)
    f = io.open(p, 'wb')
    torch.save(m:state_dict(), f)
    f:close()
    local m2 = nn.Linear(3, 2)
    f = io.open(p, 'rb')
    m2:load_state_dict(torch.load(f))
    f:close()
    assert.is_true(torch.equal(m.weight, m2.weight))
    os.remove(p)
    local closed = io.open(p, 'wb')
    closed:close()
    H.errors_with(function() torch.save({}, closed) end, 'moontorch.save: the file is closed')
    os.remove(p)
  end)
end)

describe('torch.no_grad, enable_grad, inference_mode', function()
  it('run a block now and return its results (PyTorch\'s `with torch.no_grad():`)', function()
    local w = torch.ones(2, { requires_grad = true })
    local ran = false
    local y, extra = torch.no_grad(function()
      ran = true
      assert.is_false(torch.is_grad_enabled())
      return w * 2, 'x'
    end)
    assert.is_true(ran)
    assert.are.equal('x', extra)
    assert.is_false(y.requires_grad)
    assert.is_true(torch.is_grad_enabled())
    -- forgetting the trailing () of the old form is no longer silent: the block ran, its result is not a function
    local ok, err = pcall(function() torch.no_grad(function() end)() end)
    assert.is_false(ok)
    local e = torch.no_grad(function() return torch.enable_grad(function() return w * 3 end) end)
    assert.truthy(e.grad_fn)
    local i, flag = torch.inference_mode(function() return w * 2, torch.is_inference_mode_enabled() end)
    assert.is_true(flag)
    assert.is_false(i.requires_grad)
    assert.is_false(torch.is_inference_mode_enabled())
    assert.is_true(torch.is_grad_enabled())
  end)

  it('restore the mode when the block fails, and re-raise', function()
    local ok, err = pcall(torch.no_grad, function() error('boom') end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find('boom', 1, true))
    assert.is_true(torch.is_grad_enabled())
    torch.set_grad_enabled(false)
    pcall(torch.enable_grad, function() assert(torch.is_grad_enabled()); error('x') end)
    assert.is_false(torch.is_grad_enabled())
    torch.set_grad_enabled(true)
  end)

  it('wrap a function with .wrap (PyTorch\'s decorator), and one that takes arguments when given directly', function()
    local w = torch.ones(2, { requires_grad = true })
    local calls = 0
    local f = torch.no_grad.wrap(function() calls = calls + 1 return w * 2 end)
    assert.are.equal(0, calls)
    assert.is_false(f().requires_grad)
    assert.are.equal(1, calls)
    local g = torch.no_grad(function(t) return t * 2 end) -- (takes an argument: wrapped, as module:apply wants)
    assert.are.equal('function', type(g))
    assert.is_false(g(w).requires_grad)
    local m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    m:apply(torch.no_grad(function(mod)
      if torch.isinstance(mod, nn.Linear) then mod.bias:fill_(0) end
    end))
    assert.are.equal(0, m[1].bias:abs():sum():item())
    assert.is_nil(m[1].bias.grad_fn)
    local h = torch.inference_mode.wrap(function() return w * 2 end)
    assert.is_false(h().requires_grad)
  end)

  it('say what they take when misused', function()
    H.errors_with(function() torch.no_grad() end, 'moontorch.no_grad: takes the block to run: torch.no_grad(function() ... end)')
    H.errors_with(function() torch.no_grad(3) end, 'moontorch.no_grad: expected a function (the block to run), got number')
    H.errors_with(function() torch.no_grad.wrap(3) end, 'moontorch.no_grad.wrap: expected a function to wrap, got number')
    H.errors_with(function() torch.enable_grad() end, 'torch.enable_grad(function() ... end)')
  end)
end)

-- issue 27, part 6: most of it was fixed before this session (spec/conversions_spec.lua,
-- spec/elementwise_spec.lua's polygamma, spec/speed_spec.lua's item_int64); checked here again
-- against PyTorch 1.13 (/usr/bin/python3: a.digamma().sum().backward(); a.grad.tolist() for
-- a = [0.5, 1.5, 3] float64, and the same for torch.polygamma(1, a); int(torch.tensor(nan));
-- print(torch.empty(0, 3).expand(2**51, 0, 3)))
describe('part 6 of issue 27', function()
  local f64 = torch.float64
  it('new_tensor keeps options other than dtype; type() takes legacy names', function()
    local x = torch.ones(2, { dtype = f64 })
    local y = x:new_tensor({ 1, 2 }, { requires_grad = true })
    assert.are.equal(f64, y.dtype)
    assert.is_true(y.requires_grad)
    assert.are.equal(torch.float64, torch.ones(2):type('torch.DoubleTensor').dtype)
    assert.are.equal('torch.LongTensor', torch.ones(2):type('torch.LongTensor'):type())
  end)
  it('p.data = an int64 tensor is refused on a parameter that requires grad', function()
    local p = nn.Parameter(torch.ones(2))
    H.errors_with(function() p.data = torch.ones(2, { dtype = torch.int64 }) end,
      'data set to a tensor that requires gradients must be floating point or complex dtype')
  end)
  it('digamma and polygamma differentiate (PyTorch\'s values)', function()
    local a = torch.tensor({ 0.5, 1.5, 3 }, { dtype = f64, requires_grad = true })
    a:digamma():sum():backward()
    -- (PyTorch's trigamma series is off by up to 3e-10 here: pi^2/2 = 4.934802200544679 is psi'(0.5))
    H.near(a.grad, { 4.934802202073678, 0.9348022009716718, 0.39493406693194577 }, 1e-9, 1e-9)
    H.near(a.grad:narrow(1, 1, 1), { math.pi ^ 2 / 2 }, 1e-15, 1e-15)
    a.grad = nil
    torch.polygamma(1, a):sum():backward()
    H.near(a.grad, { -16.828796644234316, -0.8287966442343201, -0.15411380631918856 }, 1e-12, 1e-12)
  end)
  it('an integer item of NaN or inf is an error (Python\'s int() says the same), never C\'s undefined cast', function()
    local ffi = require 'ffi'
    local C = torch._C
    local buf = ffi.new('int64_t[1]')
    assert.are_not.equal(0, C.mt_tensor_item_int64(torch.tensor(0 / 0), buf))
    assert.are.equal('item: cannot convert float NaN to integer', ffi.string(C.mt_last_error()))
    assert.are_not.equal(0, C.mt_tensor_item_int64(torch.tensor(math.huge), buf))
    assert.are.equal('item: cannot convert float infinity to integer', ffi.string(C.mt_last_error()))
    assert.are_not.equal(0, C.mt_tensor_item_int64(torch.tensor(2 ^ 63, { dtype = f64 }), buf))
    assert.are.equal(0, C.mt_tensor_item_int64(torch.tensor(-2 ^ 63, { dtype = f64 }), buf))
    assert.are.equal(-9223372036854775807LL - 1, buf[0])
  end)
  it('tolist of a 2^51 x 0 x 3 tensor is a moontorch error; it prints its sizes exactly', function()
    local t = torch.empty(0, 3):expand(2 ^ 51, 0, 3)
    H.errors_with(function() t:tolist() end, 'moontorch.tolist: a tensor of sizes [2251799813685248, 0, 3]')
    assert.are.equal('tensor([], size=(2251799813685248, 0, 3))', tostring(t))
  end)
end)

describe('range and stepped slicing (the spellings docs/API.md and the README show)', function()
  it('pe[:, 0::2] is pe[{{}, {1, -1, 2}}], correct[:k] is correct[{{1, k}}]', function()
    local pe = torch.arange(12):reshape(2, 6)
    assert.are.same({ { 0, 2, 4 }, { 6, 8, 10 } }, pe[{ {}, { 1, -1, 2 } }]:tolist())
    assert.are.same({ { 1, 3, 5 }, { 7, 9, 11 } }, pe[{ {}, { 2, -1, 2 } }]:tolist())
    local correct = torch.arange(10)
    assert.are.same({ 0, 1, 2 }, correct[{ { 1, 3 } }]:tolist())
    assert.are.same({ 7, 8, 9 }, correct[{ { -3, -1 } }]:tolist())
    assert.are.same({ { 2, 3 }, { 8, 9 } }, pe[{ ':', { 3, 4 } }]:tolist())
    -- and written to, as PyTorch's pe[:, 0::2] = torch.sin(...)
    pe[{ {}, { 1, -1, 2 } }] = torch.zeros(2, 3, { dtype = torch.int64 })
    assert.are.same({ { 0, 1, 0, 3, 0, 5 }, { 0, 7, 0, 9, 0, 11 } }, pe:tolist())
  end)
  it('an open end written as nil says how to write it', function()
    local pe = torch.arange(12):reshape(2, 6)
    H.errors_with(function() return pe[{ {}, { 1, nil, 2 } }] end,
      'moontorch.index: {first, nil, step} cannot work in Lua (a table ends at its first nil): write {first, -1, step}')
  end)
end)

describe('options tables of functions', function()
  it('F.batch_norm takes weight, bias, training, momentum, eps by name after running_var', function()
    local F = nn.functional
    torch.manual_seed(0)
    local x = torch.randn(4, 3)
    local r1, v1, r2, v2 = torch.zeros(3), torch.ones(3), torch.zeros(3), torch.ones(3)
    local a = F.batch_norm(x, r1, v1, { weight = torch.full({ 3 }, 2), bias = torch.ones(3), training = true,
      momentum = 0.2, eps = 1e-3 })
    local b = F.batch_norm(x, r2, v2, torch.full({ 3 }, 2), torch.ones(3), true, 0.2, 1e-3)
    assert.is_true(torch.equal(a, b))
    assert.is_true(torch.equal(r1, r2) and torch.equal(v1, v2))
    assert.is_true(torch.equal(F.batch_norm(x, r1, v1, { training = true }), F.batch_norm(x, r2, v2, nil, nil, true)))
    H.errors_with(function() F.batch_norm(x, r1, v1, { trainig = true }) end, "got an unexpected option 'trainig'")
  end)
  it('x:split(sections, {dim = 2}) as PyTorch\'s x.split([1, 3], dim=1)', function()
    local parts = torch.ones(2, 4):split({ 1, 3 }, { dim = 2 })
    assert.are.equal(2, #parts)
    assert.are.same({ 2, 3 }, parts[2]:size())
  end)
end)
