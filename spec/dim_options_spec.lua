-- Every dim-taking function takes its dim (and the arguments PyTorch takes by position around
-- it) both by position and by name in a trailing options table (issue 27, part 3):
-- x:split(1, {dim = 2}) was "moontorch.split: dimension must be an integer, got a table", while
-- torch.cat(t, {dim = 2}) and x:argmax{dim = 2} worked. Each case computes the same thing both ways,
-- as a method and, where it exists, as torch.<name>(x, ...) (or F.<name>).
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local F = nn.functional
local i64 = torch.int64

local function X() return torch.arange(60, { dtype = torch.float64 }):reshape(3, 4, 5):sin() end
local function IDX() return torch.tensor({ { { 1, 2 }, { 3, 1 } }, { { 2, 2 }, { 4, 3 } } }, { dtype = i64 }) end

-- case(name, positional, by_name[, input[, where]]): where is 'method' (default: the method and
-- torch.<name>), 'torch' or 'F'
local CASES = {}
local function case(name, pos, named, input, where)
  CASES[#CASES + 1] = { name = name, pos = pos, named = named, input = input or X, where = where }
end

-- reductions
for _, r in ipairs({ 'sum', 'mean', 'prod', 'nansum', 'logsumexp', 'amax', 'amin', 'max', 'min', 'argmax',
  'argmin', 'median', 'mode', 'count_nonzero', 'nanmean' }) do
  case(r, { 2 }, { { dim = 2 } })
  if r ~= 'count_nonzero' then case(r, { 2, true }, { { dim = 2, keepdim = true } }) end
end
-- std(dim, unbiased, keepdim), as PyTorch's
for _, r in ipairs({ 'std', 'var', 'std_mean', 'var_mean' }) do
  case(r, { 2 }, { { dim = 2 } })
  case(r, { 2, false, true }, { { dim = 2, unbiased = false, keepdim = true } })
end
case('sum', { { 1, 3 } }, { { dim = { 1, 3 } } })
case('sum', { 2, true, { dtype = torch.float32 } }, { { dim = 2, keepdim = true, dtype = torch.float32 } })
case('all', { 2 }, { { dim = 2 } }, function() return X():gt(0) end)
case('any', { 2, true }, { { dim = 2, keepdim = true } }, function() return X():gt(0) end)
case('aminmax', { { dim = 2 } }, { { dim = 2 } })
case('norm', { 2, 2 }, { { p = 2, dim = 2 } })
case('norm', { 1, 3, true }, { 1, { dim = 3, keepdim = true } })
case('kthvalue', { 2, 2 }, { 2, { dim = 2 } })
case('topk', { 2, 2 }, { 2, { dim = 2 } })
case('topk', { 2, 1, false }, { 2, { dim = 1, largest = false } })
case('sort', { 2 }, { { dim = 2 } })
case('sort', { 2, true }, { { dim = 2, descending = true } })
case('argsort', { 2 }, { { dim = 2 } })
case('argsort', { 1, true }, { { dim = 1, descending = true } })
case('quantile', { 0.25, 2 }, { 0.25, { dim = 2 } })
case('nanquantile', { 0.25, 2, true }, { 0.25, { dim = 2, keepdim = true } })
-- scans
for _, r in ipairs({ 'cumsum', 'cumprod', 'cummax', 'cummin', 'logcumsumexp' }) do case(r, { 2 }, { { dim = 2 } }) end
case('softmax', { 2 }, { { dim = 2 } })
case('log_softmax', { 3 }, { { dim = 3 } })
case('softmax', { 2 }, { { dim = 2 } }, nil, 'F')
case('log_softmax', { 2 }, { { dim = 2 } }, nil, 'F')
case('softmin', { 2 }, { { dim = 2 } }, nil, 'F')
case('glu', { 2 }, { { dim = 2 } }, nil, 'F')
case('normalize', { 2, 2 }, { { p = 2, dim = 2 } }, nil, 'F')
case('normalize', { 2, 3 }, { 2, { dim = 3 } }, nil, 'F')
-- shapes and views
case('flatten', { 2 }, { { start_dim = 2 } })
case('flatten', { 1, 2 }, { { start_dim = 1, end_dim = 2 } })
case('squeeze', { 2 }, { { dim = 2 } }, function() return torch.ones(3, 1, 2) end)
case('unsqueeze', { 2 }, { { dim = 2 } })
case('split', { 2, 2 }, { 2, { dim = 2 } })
case('split', { { 1, 3 }, 2 }, { { split_size_or_sections = { 1, 3 }, dim = 2 } })
case('chunk', { 2, 2 }, { 2, { dim = 2 } })
case('tensor_split', { 2, 3 }, { 2, { dim = 3 } })
case('unbind', { 2 }, { { dim = 2 } })
case('narrow', { 2, 2, 2 }, { { dim = 2, start = 2, length = 2 } })
case('narrow', { 2, 2, 2 }, { 2, { start = 2, length = 2 } })
case('select', { 2, 3 }, { { dim = 2, index = 3 } })
case('select', { 2, 3 }, { 2, { index = 3 } })
case('transpose', { 1, 3 }, { { dim0 = 1, dim1 = 3 } })
case('swapaxes', { 1, 3 }, { { axis0 = 1, axis1 = 3 } })
case('swapdims', { 1, 3 }, { { dim0 = 1, dim1 = 3 } })
case('movedim', { 1, 3 }, { { source = 1, destination = 3 } })
case('moveaxis', { 1, 3 }, { { source = 1, destination = 3 } })
case('unflatten', { 2, { 2, 2 } }, { { dim = 2, sizes = { 2, 2 } } })
case('unfold', { 2, 2, 1 }, { { dimension = 2, size = 2, step = 1 } })
case('diagonal', { 0, 1, 3 }, { { offset = 0, dim1 = 1, dim2 = 3 } })
case('diagonal', { 1, 2, 3 }, { 1, { dim1 = 2, dim2 = 3 } })
case('flip', { { 2 } }, { { dims = { 2 } } })
case('roll', { 1, 2 }, { 1, { dims = 2 } })
case('roll', { { 1, 2 }, { 2, 3 } }, { { shifts = { 1, 2 }, dims = { 2, 3 } } })
case('rot90', { 1, { 2, 3 } }, { 1, { dims = { 2, 3 } } })
case('diff', { 1, 2 }, { { n = 1, dim = 2 } })
case('repeat_interleave', { 2, 2 }, { 2, { dim = 2 } })
case('size', { 2 }, { { dim = 2 } })
case('stride', { 2 }, { { dim = 2 } })
-- indexing
case('gather', { 3, IDX() }, { { dim = 3, index = IDX() } }, function() return X():narrow(1, 1, 2) end)
case('gather', { 3, IDX() }, { 3, { index = IDX() } }, function() return X():narrow(1, 1, 2) end)
case('index_select', { 2, torch.tensor({ 3, 1 }, { dtype = i64 }) }, { { dim = 2, index = torch.tensor({ 3, 1 }, { dtype = i64 }) } })
case('take_along_dim', { IDX(), 3 }, { IDX(), { dim = 3 } }, function() return X():narrow(1, 1, 2):narrow(2, 1, 2) end)
case('scatter', { 3, IDX(), torch.ones(2, 2, 2, { dtype = torch.float64 }) },
  { { dim = 3, index = IDX(), src = torch.ones(2, 2, 2, { dtype = torch.float64 }) } })
case('scatter', { 3, IDX(), 7 }, { { dim = 3, index = IDX(), value = 7 } })
case('scatter_add', { 3, IDX(), torch.ones(2, 2, 2, { dtype = torch.float64 }) },
  { 3, { index = IDX(), src = torch.ones(2, 2, 2, { dtype = torch.float64 }) } })
case('index_add', { 2, torch.tensor({ 3, 1 }, { dtype = i64 }), torch.ones(3, 2, 5, { dtype = torch.float64 }) },
  { { dim = 2, index = torch.tensor({ 3, 1 }, { dtype = i64 }), source = torch.ones(3, 2, 5, { dtype = torch.float64 }) } })
case('index_fill', { 2, torch.tensor({ 3, 1 }, { dtype = i64 }), 5 },
  { { dim = 2, index = torch.tensor({ 3, 1 }, { dtype = i64 }), value = 5 } })
case('index_copy', { 2, torch.tensor({ 3, 1 }, { dtype = i64 }), torch.ones(3, 2, 5, { dtype = torch.float64 }) },
  { 2, { index = torch.tensor({ 3, 1 }, { dtype = i64 }), source = torch.ones(3, 2, 5, { dtype = torch.float64 }) } })
case('cross', { torch.ones(3, 3, { dtype = torch.float64 }), 2 }, { torch.ones(3, 3, { dtype = torch.float64 }), { dim = 2 } },
  function() return X():narrow(2, 1, 3):select(3, 1) end)
case('renorm', { 2, 1, 5 }, { 2, { dim = 1, maxnorm = 5 } })
case('select_scatter', { torch.zeros(3, 5, { dtype = torch.float64 }), 2, 1 },
  { torch.zeros(3, 5, { dtype = torch.float64 }), { dim = 2, index = 1 } })
case('cosine_similarity', { torch.ones(3, 4, 5, { dtype = torch.float64 }), 3 },
  { torch.ones(3, 4, 5, { dtype = torch.float64 }), { dim = 3 } }, nil, 'F')
case('cumsum_', { 2 }, { { dim = 2 } })
case('cumprod_', { 3 }, { { dim = 3 } })
case('diag_embed', { 0, 1, 3 }, { { offset = 0, dim1 = 1, dim2 = 3 } })
case('diagonal_scatter', { torch.ones(3, { dtype = torch.float64 }), 0, 1, 2 },
  { torch.ones(3, { dtype = torch.float64 }), { offset = 0, dim1 = 1, dim2 = 2 } }, function() return torch.zeros(3, 3, { dtype = torch.float64 }) end)
case('slice_scatter', { torch.zeros(3, 2, 5, { dtype = torch.float64 }), 2, 1, 3 },
  { torch.zeros(3, 2, 5, { dtype = torch.float64 }), { dim = 2, start = 1, ['end'] = 3 } })
-- joins (a list first)
case('cat', { 2 }, { { dim = 2 } }, function() return { X(), X() } end, 'torch')
case('concat', { 2 }, { { dim = 2 } }, function() return { X(), X() } end, 'torch')
case('stack', { 2 }, { { dim = 2 } }, function() return { X(), X() } end, 'torch')

local function show(v)
  if torch.is_tensor(v) then return 'T' end
  if type(v) ~= 'table' then return tostring(v) end
  local parts, keys = {}, {}
  for i = 1, #v do parts[#parts + 1] = show(v[i]) end
  for k in pairs(v) do if type(k) == 'string' then keys[#keys + 1] = k end end
  table.sort(keys)
  for _, k in ipairs(keys) do parts[#parts + 1] = k .. '=' .. show(v[k]) end
  return '{' .. table.concat(parts, ', ') .. '}'
end

local function same(a, b, what)
  if torch.is_tensor(a) then
    assert.is_true(torch.is_tensor(b), what)
    assert.are.same(a:size(), b:size(), what)
    assert.is_true(torch.equal(a, b), what)
  elseif type(a) == 'table' then
    assert.are.equal(#a, #b, what)
    for i = 1, #a do same(a[i], b[i], what .. '[' .. i .. ']') end
  else
    assert.are.equal(a, b, what)
  end
end

local function call(where, name, input, args)
  if where == 'F' then return { F[name](input, unpack(args)) } end
  if where == 'torch' then return { torch[name](input, unpack(args)) } end
  return { input[name](input, unpack(args)) }
end

describe('dims by position or by name', function()
  for _, c in ipairs(CASES) do
    local forms = c.where and { c.where } or { 'method' }
    if not c.where and torch[c.name] then forms[2] = 'torch' end
    for _, where in ipairs(forms) do
      local label = (where == 'method' and 'x:' or where .. '.') .. c.name .. ' ' .. show(c.named):sub(2, -2)
      it(label, function()
        local want = call(where, c.name, c.input(), c.pos)
        local got = call(where, c.name, c.input(), c.named)
        assert.are.equal(#want, #got)
        for i = 1, #want do same(want[i], got[i], label .. ' result ' .. i) end
      end)
    end
  end

  it('diag_embed puts the diagonal at dims other than the last two (values from PyTorch 1.13)', function()
    -- /usr/bin/python3: x = torch.arange(60., dtype=torch.float64).reshape(3, 4, 5).sin(); y = x.diag_embed(*a);
    -- w = torch.arange(y.numel(), dtype=torch.float64).reshape(y.shape).cos(); (y * w).sum()
    local x = X()
    for _, c in ipairs({ { { 0, 1, 3 }, { 5, 3, 5, 4 }, -4.643684328329994 }, { { 1, 3, 1 }, { 6, 3, 6, 4 }, 3.4785289752228614 },
      { { -1, 2, 1 }, { 6, 6, 3, 4 }, -3.0144313653756853 } }) do
      local y = x:diag_embed(unpack(c[1]))
      assert.are.same(c[2], y:size())
      local w = torch.arange(y:numel(), { dtype = torch.float64 }):reshape(y:size()):cos()
      H.near((y * w):sum(), { c[3] }, 1e-12, 1e-12)
    end
  end)

  it('covers every method whose parameters name a dim', function()
    local T = require 'moontorch.tensor'
    local byname = require 'moontorch.ops.byname'
    local covered = {}
    for _, c in ipairs(CASES) do covered[c.name] = true end
    local missing = {}
    for name, f in pairs(T.methods) do
      f = require('moontorch.ffi').unwrap(f)
      local info = debug.getinfo(f, 'u')
      local names = {}
      for i = 1, info.nparams do names[#names + 1] = debug.getlocal(f, i) end
      local joined = table.concat(names, ',')
      if (joined:find('dim') or joined:find('dims')) and not covered[name] and not covered[name:gsub('_$', '')]
        and not byname.NAMES[name] then
        missing[#missing + 1] = name
      end
    end
    table.sort(missing)
    assert.are.same({}, missing)
  end)

  it('refuses a dim given both ways, and an unknown name', function()
    local x = X()
    H.errors_with(function() x:sum(2, { dim = 2 }) end, "moontorch.sum: got multiple values for argument 'dim'")
    H.errors_with(function() x:split(2, 2, { dim = 2 }) end, "moontorch.split: got multiple values for argument 'dim'")
    H.errors_with(function() x:transpose({ dim0 = 1, dimm = 2 }) end, "moontorch.transpose: got an unexpected keyword argument 'dimm'")
  end)

  it('keeps the positional calls compiled (no NYI in the fronts)', function()
    local x = torch.ones(2, 3)
    local nyi, traces, n = H.watch_jit(function()
      local n = 0
      for _ = 1, 20000 do n = n + x:transpose(1, 2):select(1, 2):unsqueeze(1):size(2) + x:size(1) end
      return n
    end, 'moontorch', 'dim_options_spec')
    assert.are.same({}, nyi)
    assert.is_true(traces > 0, 'the loop was not compiled')
    assert.are.equal(20000 * 4, n)
  end)

  it('a dim 0 (PyTorch\'s first) says that dims count from 1, in every dim-taking function', function()
    local x = torch.ones(2, 3)
    local i = torch.ones(2, 3, { dtype = i64 })
    local calls = {
      function() return x:size(0) end, function() return x:sum(0) end, function() return x:squeeze(0) end,
      function() return x:unsqueeze(0) end, function() return torch.cat({ x, x }, 0) end,
      function() return torch.stack({ x, x }, 0) end, function() return x:flatten(0) end,
      function() return x:topk(1, 0) end, function() return x:transpose(0, 1) end, function() return x:softmax(0) end,
      function() return F.softmax(x, 0) end, function() return x:narrow(0, 1, 1) end,
      function() return x:select(0, 1) end, function() return x:split(1, 0) end, function() return x:gather(0, i) end,
      function() return x:max(0) end, function() return x:argmax(0) end, function() return x:mean(0) end,
      function() return x:cumsum(0) end, function() return x:sort(0) end, function() return x:chunk(2, 0) end,
      function() return x:index_select(0, torch.tensor({ 1 }, { dtype = i64 })) end,
      function() return x:permute(0, 1) end, function() return x:movedim(0, 1) end, function() return x:flip(0) end,
      function() return x:unbind(0) end, function() return x:std(0) end, function() return F.log_softmax(x, 0) end,
      function() return x:logsumexp(0) end, function() return x:prod(0) end, function() return x:norm(2, 0) end,
      function() return x:all(0) end, function() return x:median(0) end, function() return x:kthvalue(1, 0) end,
      function() return x:roll(1, 0) end, function() return x:diagonal(0, 0, 1) end,
      function() return x:unflatten(0, { 1, 2 }) end, function() return x:repeat_interleave(2, 0) end,
      function() return F.normalize(x, { dim = 0 }) end, function() return F.cosine_similarity(x, x, 0) end,
      function() return nn.Softmax(0)(x) end, function() return nn.Flatten(0)(x) end, function() return x:stride(0) end,
      function() return x:cummax(0) end, function() return x:tensor_split(2, 0) end, function() return x:unfold(0, 1, 1) end,
      function() return x:sum({ 0, 1 }) end, function() return x:split(1, { dim = 0 }) end,
    }
    for k, f in ipairs(calls) do
      local ok, err = pcall(f)
      assert.is_false(ok, 'call ' .. k)
      assert.truthy(tostring(err):find('dimensions are 1-based', 1, true), 'call ' .. k .. ': ' .. tostring(err))
      assert.truthy(tostring(err):find('dim_options_spec.lua', 1, true), 'call ' .. k .. ' not at the user\'s line: ' .. tostring(err))
    end
  end)

  it('the issue\'s case: x:split(1, {dim = 2})', function()
    local parts = torch.ones(2, 3):split(1, { dim = 2 })
    assert.are.equal(3, #parts)
    assert.are.same({ 2, 1 }, parts[1]:size())
  end)
end)
