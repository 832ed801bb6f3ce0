-- Arguments that must be integers (sizes, dims, indices, starts, lengths, counts) and nested data
-- for torch.tensor: a value that is not what the op takes is an error naming the op and the
-- argument, raised at the caller's line; nothing is truncated (narrow(1, 2.9, 1) is not
-- narrow(1, 2, 1)), nothing crashes, and nothing starts an absurd allocation or loop.
-- Lua cannot tell 2 from 2.0, so an integral float is an integer here (PyTorch refuses 2.0 for a
-- size; Lua has no other way to write one); int64 cdata (5LL) is taken wherever an integer is.
--
-- PyTorch's answers, where a row follows one, from PyTorch 1.13.1 (Debian's python3-torch):
--   torch.tensor([1, None, 3])            RuntimeError: Could not infer dtype of NoneType
--   torch.tensor([[1, 2, 3], [4, 5]])     ValueError: expected sequence of length 3 at dim 1 (got 2)
--   torch.tensor([object()])              RuntimeError: Could not infer dtype of object
--   torch.tensor(['a'])                   ValueError: too many dimensions 'str'
--   torch.tensor([torch.ones(2)] * 2)     ValueError: only one element tensors can be converted to Python scalars
--   torch.tensor([True, 2, False])        tensor([1, 2, 0])            (booleans among numbers count as 1 and 0)
--   torch.tensor([True, 2.5])             tensor([1.0000, 2.5000])
--   torch.tensor([[], [1]])               tensor([], size=(2, 0))      (the 1 is dropped silently: moontorch refuses)
--   x.narrow(0, 2.9, 1)                   TypeError: narrow() received an invalid combination of arguments - got (int, float, int)
--   torch.zeros(10**30)                   TypeError: zeros(): argument 'size' must be tuple of SymInts, but found element of type int at pos 1
--   torch.randint(0, 10**30, (2,))        RuntimeError: Overflow when unpacking long
--   x.topk(1.5)                           TypeError: topk(): argument 'k' (position 1) must be int, not float
--   x.transpose(0, 2**32 + 1)             IndexError: Dimension out of range (expected to be in range of [-2, 1], but got 4294967297)
--   x.as_strided((2,), (2**62,))          RuntimeError: Storage size calculation overflowed with sizes=[2] and strides=[4611686018427387904]
--   torch.ones(3).diag(-2**63)            RuntimeError: numel: integer multiplication overflow
--   x.diagonal(-2**63)                    tensor([])
--   torch.set_num_threads(1.5)            RuntimeError: set_num_threads expects an int, but got float
--   torch.tensor([1, 2], torch.float64)   TypeError: tensor() takes 1 positional argument but 2 were given
--   torch.full((2,), 'a')                 TypeError: full(): argument 'fill_value' (position 2) must be Number, not str
--   torch.manual_seed(2.5)                accepted: manual_seed takes int(seed), so moontorch does too
local ffi = require 'ffi'
local H = require 'spec.support.helper'
local torch = H.torch

local x = torch.arange(12):float():view(3, 4) -- [[0..3], [4..7], [8..11]]
local L = torch.tensor({ 1, 2 }, { dtype = torch.int64 })
local nan, inf = 0 / 0, math.huge
-- a Lua array with a hole at 2 whose length (#) is 1: a constructor with nil in it may get 1 or
-- 3 from #, this one always 1, so an op that trusted # would quietly take just {a}
local function holey(a, b)
  local t = { a }
  t[3] = b
  return t
end
-- int32 cdata is not an index (only int64/uint64 are, as LuaJIT writes 5LL/5ULL)
local int32_one = ffi.new('int32_t', 1)

-- { op named in the message, a call made as a statement (so that the error's line is the row's
-- own line), text the message must contain }. Every row fails against the parent commit of these
-- checks (run with a build of it): there it passed silently, hung (split, chunk, tensor_split and
-- unbind of 2^40 pieces), raised a raw Lua error, or gave a wrong, misattributed or position-less
-- message (`-9223372036854775808` for 1e300, `moontorch.empty:` for zeros).
local refused = {
  -- the cases from issue 10
  { 'tensor', function() torch.tensor({ 1, nil, 3, n = 3 }) end, 'data[2] is nil: a sequence cannot have holes (its length is 3)' },
  { 'narrow', function() x:narrow(1, 2.9, 1) end, 'start must be an integer, got 2.9' },
  { 'narrow', function() x:narrow(1, 2, 1.5) end, 'length must be an integer, got 1.5' },

  -- nested data: torch.tensor, as_tensor, new_tensor, scalar_tensor
  { 'tensor', function() torch.tensor({ 1, 2, foo = 3 }) end, 'data has the key "foo", which is not a position 1..n of a sequence' },
  { 'tensor', function() torch.tensor({ [0] = 1, 2 }) end, 'data has the key 0, which is not a position' },
  { 'tensor', function() torch.tensor({ 1, 2, [2.5] = 3 }) end, 'data has the key 2.5, which is not a position' },
  { 'tensor', function() torch.tensor({ 1, 2, 3, n = 2 }) end, 'data.n is 2 but data has 3 elements' },
  { 'tensor', function() torch.tensor({ 1, 2, n = 'two' }) end, 'data.n must be the sequence\'s length, got a string ("two")' },
  { 'tensor', function() torch.tensor({ 1, 2, n = 3 }) end, 'data[3] is nil: a sequence cannot have holes (its length is 3)' },
  { 'tensor', function() torch.tensor({ 1, [2 ^ 40] = 2 }) end, 'data[2] is nil' },
  { 'tensor', function() torch.tensor({ { 1, 2 }, nil, { 5, 6 }, n = 3 }) end, 'data[2] is nil' },
  { 'tensor', function() torch.tensor({ { 1, 2 }, { 3, nil, 4 } }) end, 'data[2][2] is nil' },
  { 'tensor', function() torch.tensor({ { 1, 2 }, { 3, 4, x = 1 } }) end, 'data[2] has the key "x"' },
  { 'tensor', function() torch.tensor({ { 1, 2, 3 }, { 4, 5 } }) end, 'expected sequence of length 3 at dim 2 (got 2) at data[2]' },
  { 'tensor', function() torch.tensor({ { { 1 }, { 2 } }, { { 3 }, { 4, 5 } } }) end, 'expected sequence of length 1 at dim 3 (got 2) at data[2][2]' },
  { 'tensor', function() torch.tensor({ { 1, 2 }, 3 }) end, 'expected sequence of length 2 at dim 2 (got number) at data[2]' },
  { 'tensor', function() torch.tensor({ { 1, 2 }, { 3, { 4 } } }) end, 'too many dimensions: data[2][2] is a table where a number was expected' },
  { 'tensor', function() torch.tensor({ { 1, 2 }, { 3, 'a' } }) end, 'could not infer dtype of a string ("a") at data[2][2]' },
  { 'tensor', function() torch.tensor({ print }) end, 'could not infer dtype of a function at data[1]' },
  { 'tensor', function() torch.tensor({ torch.ones(2), torch.ones(2) }) end, 'only one element tensors can be converted to Lua numbers: data[1] is a tensor of 2 elements' },
  { 'tensor', function() torch.tensor({ {}, { 1 } }) end, 'expected sequence of length 0 at dim 2 (got 1) at data[2]' },
  { 'tensor', function() torch.tensor({ {}, {}, x = 1 }) end, 'data has the key "x"' },
  { 'tensor', function() torch.tensor('1') end, 'could not infer dtype of a string ("1")' },
  { 'tensor', function() torch.tensor({ 1, 2 }, torch.float64) end, 'expected an options table {dtype=, device=, requires_grad=} as the last argument, got torch.float64' },
  { 'as_tensor', function() torch.as_tensor({ 1, nil, 3, n = 3 }) end, 'data[2] is nil' },
  { 'as_tensor', function() torch.as_tensor({ { 1 }, { 2, 3 } }) end, 'expected sequence of length 1 at dim 2 (got 2) at data[2]' },
  { 'new_tensor', function() x:new_tensor({ 1, nil, 3, n = 3 }) end, 'data[2] is nil' },
  { 'new_tensor', function() x:new_tensor({ 1, 2, k = 3 }) end, 'data has the key "k"' },
  { 'scalar_tensor', function() torch.scalar_tensor({ 1 }) end, 'expected a number or a boolean, got a table' },

  -- sizes of factories and of views (varargs and tables)
  { 'zeros', function() torch.zeros(math.huge) end, 'size at position 1 must be an integer, got inf' },
  { 'zeros', function() torch.zeros(1e300) end, 'size at position 1 is out of the range of int64, got 1e+300' },
  { 'zeros', function() torch.zeros(2, 2 ^ 63) end, 'size at position 2 is out of the range of int64' },
  { 'zeros', function() torch.zeros(2 ^ 63 + 0ULL) end, 'size at position 1 is out of the range of int64, got 9223372036854775808' },
  { 'zeros', function() torch.zeros(2, '3') end, 'size at position 2 must be an integer, got a string ("3")' },
  { 'zeros', function() torch.zeros(true) end, 'size at position 1 must be an integer, got a boolean (true)' },
  { 'zeros', function() torch.zeros({ 2, 3.5 }) end, 'size at position 2 must be an integer, got 3.5' },
  { 'zeros', function() torch.zeros({ 2, nil, 3, n = 3 }) end, 'size[2] is nil' },
  { 'zeros', function() torch.zeros({ 2, 3, foo = 1 }) end, 'size has the key "foo"' },
  { 'zeros', function() torch.zeros(2 ^ 62, 2 ^ 62) end, 'has too many elements' },
  { 'ones', function() torch.ones(nan) end, 'size at position 1 must be an integer, got nan' },
  { 'empty', function() torch.empty(2, inf) end, 'size at position 2 must be an integer, got inf' },
  { 'full', function() torch.full({ inf }, 1) end, 'size at position 1 must be an integer, got inf' },
  { 'full', function() torch.full({ 2 }, 'a') end, 'fill_value must be a number or a boolean, got a string ("a")' },
  { 'full', function() torch.full({ 2 ^ 62 }, 1) end, 'is too large to allocate' },
  { 'rand', function() torch.rand(1e300) end, 'size at position 1 is out of the range of int64' },
  { 'randn', function() torch.randn(2, inf) end, 'size at position 2 must be an integer, got inf' },
  { 'randint', function() torch.randint(0, 10, { inf }) end, 'size at position 1 must be an integer, got inf' },
  { 'randint', function() torch.randint(0, 1e300, { 2 }) end, 'high is out of the range of int64, got 1e+300 (Overflow when unpacking long)' },
  { 'randint', function() torch.randint(-inf, 10, { 2 }) end, 'low must be an integer, got -inf' },
  { 'normal', function() torch.normal(0, 1, { inf }) end, 'size at position 1 must be an integer, got inf' },
  { 'new_zeros', function() x:new_zeros(inf) end, 'size at position 1 must be an integer, got inf' },
  { 'new_ones', function() x:new_ones({ 2, 1e300 }) end, 'size at position 2 is out of the range of int64' },
  { 'new_empty', function() x:new_empty(2, inf) end, 'size at position 2 must be an integer, got inf' },
  { 'new_full', function() x:new_full({ inf }, 1) end, 'size at position 1 must be an integer, got inf' },
  { 'view', function() x:view(inf, -1) end, 'size at position 1 must be an integer, got inf' },
  { 'reshape', function() x:reshape({ 1e300, -1 }) end, 'size at position 1 is out of the range of int64' },
  { 'expand', function() x:expand(3, inf) end, 'size at position 2 must be an integer, got inf' },
  { 'repeat_tensor', function() x:repeat_tensor(1, inf) end, 'repeats at position 2 must be an integer, got inf' },
  { 'tile', function() x:tile(inf) end, 'dims at position 1 must be an integer, got inf' },
  { 'permute', function() x:permute(2, inf) end, 'dims at position 2 must be an integer, got inf' },
  { 'unflatten', function() x:unflatten(2, { 2, 2.5 }) end, 'sizes at position 2 must be an integer, got 2.5' },
  { 'as_strided', function() x:as_strided({ 1.5 }, { 1 }) end, 'size at position 1 must be an integer, got 1.5' },
  { 'as_strided', function() x:as_strided({ 2 }, { 0.5 }) end, 'stride at position 1 must be an integer, got 0.5' },
  { 'as_strided', function() x:as_strided({ 1 }, { 1 }, 1.5) end, 'storage_offset must be an integer, got 1.5' },
  { 'as_strided', function() x:as_strided({ 1 }, { 1 }, -1) end, 'invalid storage offset -1' },
  { 'as_strided', function() x:as_strided({ 2 }, { 2 ^ 62 }) end, 'reach past the storage' },
  { 'as_strided', function() x:as_strided({ 1 }, { 1 }, 2 ^ 62) end, 'reach past the storage' },
  { 'as_strided', function() x:as_strided({ 2, 2 }, { 1 }) end, 'mismatch in length of strides and shape (1 and 2)' },

  -- counts and steps
  { 'linspace', function() torch.linspace(0, 1, 2.5) end, 'steps must be an integer, got 2.5' },
  { 'linspace', function() torch.linspace(0, 1, 1e300) end, 'steps is out of the range of int64' },
  { 'linspace', function() torch.linspace(0, '1', 3) end, 'end must be a number, got a string ("1")' },
  { 'logspace', function() torch.logspace(0, 1, 2.5) end, 'steps must be an integer, got 2.5' },
  { 'eye', function() torch.eye(2.5) end, 'n must be an integer, got 2.5' },
  { 'eye', function() torch.eye(2, 1.5) end, 'm must be an integer, got 1.5' },
  { 'eye', function() torch.eye(nan) end, 'n must be an integer, got nan' },
  { 'randperm', function() torch.randperm(1e300) end, 'n is out of the range of int64' },
  { 'randperm', function() torch.randperm(inf) end, 'n must be an integer, got inf' },
  { 'multinomial', function() torch.multinomial(torch.ones(3), inf) end, 'num_samples must be an integer, got inf' },
  { 'random_', function() x:clone():random_(1e300) end, 'to is out of the range of int64' },
  { 'random_', function() x:clone():random_(inf, 10) end, 'from must be an integer, got inf' },
  { 'randint_like', function() torch.randint_like(x, inf) end, 'high must be an integer, got inf' },
  { 'split', function() x:split(inf) end, 'split_size must be an integer, got inf' },
  { 'split', function() x:split({ 1, 1.5, 0.5 }) end, 'split_size at position 2 must be an integer, got 1.5' },
  { 'split', function() x:split({ 1, nil, 2, n = 3 }) end, 'split_size[2] is nil' },
  { 'split', function() torch.zeros(1):expand(2 ^ 40):split(1) end, 'would return 1099511627776 tensors, more than a Lua array can hold' },
  { 'chunk', function() x:chunk(inf) end, 'chunks must be an integer, got inf' },
  { 'chunk', function() torch.zeros(0):chunk(2 ^ 40) end, 'would return 1099511627776 tensors' },
  { 'tensor_split', function() x:tensor_split({ 1.5 }) end, 'indices at position 1 must be an integer, got 1.5' },
  { 'tensor_split', function() x:tensor_split(inf) end, 'sections must be an integer, got inf' },
  { 'tensor_split', function() x:tensor_split(2 ^ 40) end, 'would return 1099511627776 tensors' },
  { 'unbind', function() torch.zeros(1):expand(2 ^ 40):unbind() end, 'would return 1099511627776 tensors' },
  { 'unfold', function() x:unfold(1, 1.5, 1) end, 'size must be an integer, got 1.5' },
  { 'unfold', function() x:unfold(1, 1, 0.5) end, 'step must be an integer, got 0.5' },
  { 'topk', function() x:topk(inf) end, 'k must be an integer, got inf' },
  { 'kthvalue', function() x:kthvalue(1e300) end, 'k is out of the range of int64' },
  { 'repeat_interleave', function() x:repeat_interleave(1e300) end, 'repeats is out of the range of int64' },
  { 'bincount', function() L:bincount(nil, 1e300) end, 'minlength is out of the range of int64' },
  { 'one_hot', function() torch.one_hot(L, 1e300) end, 'num_classes is out of the range of int64' },
  { 'roll', function() x:roll(1e300) end, 'shifts is out of the range of int64' },
  { 'roll', function() x:roll({ 1, inf }, { 1, 2 }) end, 'shifts at position 2 must be an integer, got inf' },
  { 'tril', function() x:tril(1e300) end, 'diagonal is out of the range of int64' },
  { 'triu', function() x:triu(inf) end, 'diagonal must be an integer, got inf' },
  { 'diag', function() x:diag(inf) end, 'diagonal must be an integer, got inf' },
  { 'diag', function() torch.ones(3):diag(-2 ^ 63) end, 'diagonal -9223372036854775808 makes a result too large to allocate' },
  { 'diagonal', function() x:diagonal(1.5) end, 'offset must be an integer, got 1.5' },
  { 'round', function() x:round({ decimals = 1.5 }) end, 'decimals must be an integer, got 1.5' },
  { 'round_', function() x:clone():round_(0.5) end, 'decimals must be an integer, got 0.5' },
  { 'set_num_threads', function() torch.set_num_threads(1.5) end, 'the number of threads must be an integer, got 1.5' },
  { 'set_num_threads', function() torch.set_num_threads(inf) end, 'the number of threads must be an integer, got inf' },
  { 'set_num_threads', function() torch.set_num_threads(nan) end, 'the number of threads must be an integer, got nan' },
  { 'set_printoptions', function() torch.set_printoptions({ precision = 100 }) end, 'precision must be at most 99, got 100' },
  { 'set_printoptions', function() torch.set_printoptions({ linewidth = 1e300 }) end, 'linewidth is out of the range of int64' },

  -- dims
  { 'transpose', function() x:transpose(2 ^ 32 + 1, 2) end, 'dimension 4294967297 is out of range' },
  { 'transpose', function() x:transpose(inf, 2) end, 'dimension must be an integer, got inf' },
  { 'sum', function() x:sum(inf) end, 'dimension must be an integer, got inf' },
  { 'mean', function() x:mean({ 1, nil, 2, n = 3 }) end, 'dim[2] is nil' },
  { 'max', function() x:max(inf) end, 'dimension must be an integer, got inf' },
  { 'softmax', function() x:softmax(1e300) end, 'dimension is out of the range of int64' },
  { 'cumsum', function() x:cumsum(inf) end, 'dimension must be an integer, got inf' },
  { 'cat', function() torch.cat({ x, x }, inf) end, 'dimension must be an integer, got inf' },
  { 'cat', function() torch.cat(holey(x, x)) end, 'tensors[2] is nil' },
  { 'stack', function() torch.stack(holey(x, x)) end, 'tensors[2] is nil' },
  { 'index_put_', function() x:clone():index_put_(holey(L, L), torch.tensor(1.)) end, 'indices[2] is nil' },
  { 'stack', function() torch.stack({ x, x }, 2 ^ 40) end, 'dimension 1099511627776 is out of range' },
  { 'squeeze', function() x:squeeze(inf) end, 'dimension must be an integer, got inf' },
  { 'unsqueeze', function() x:unsqueeze(-inf) end, 'dimension must be an integer, got -inf' },
  { 'flatten', function() x:flatten(1, inf) end, 'dimension must be an integer, got inf' },
  { 'movedim', function() x:movedim(1.5, 2) end, 'dimension must be an integer, got 1.5' },
  { 'movedim', function() x:movedim(1, 3) end, 'dimension 3 out of range' },
  { 'flip', function() x:flip({ 1, nil, 2, n = 3 }) end, 'dims[2] is nil' },
  { 'gather', function() x:gather(inf, L:view(2, 1)) end, 'dimension must be an integer, got inf' },
  { 'size', function() x:size(inf) end, 'dimension must be an integer, got inf' },

  -- indices, starts and lengths
  { 'narrow', function() x:narrow(1, nan, 1) end, 'start must be an integer, got nan' },
  { 'narrow', function() x:narrow(1, '2', 1) end, 'start must be an integer, got a string ("2")' },
  { 'select', function() x:select(1, 1.5) end, 'index must be an integer, got 1.5' },
  { 'select', function() x:select(1, 1e300) end, 'index is out of the range of int64' },
  { 'index', function() x[inf] = 1 end, 'index must be an integer, got inf' },
  { 'index', function() x[{ 1.5 }] = 1 end, 'index at position 1 must be an integer, got 1.5' },
  { 'index', function() x[{ 1, { 1.5, 2 } }] = 1 end, 'range start at position 2 must be an integer, got 1.5' },
  { 'index', function() x[{ { 1, 2, 0.5 } }] = 1 end, 'range step at position 1 must be an integer, got 0.5' },
  { 'index', function() x[{ { 0, 2 } }] = 1 end, 'range {0, 2} at position 1 is out of range: positions are 1-based' },
  { 'index', function() x[{ { 1, 2, 1, 1 } }] = 1 end, 'a range is {first}, {first, last} or {first, last, step}' },
  { 'index', function() x[{ 1, nil, 2, n = 3 }] = 1 end, 'the index table[2] is nil' },
  { 'index', function() x[int32_one] = 1 end, 'index must be an integer, got a cdata of type <int>' },
}

describe('integer arguments and nested data', function()
  it('every row is refused at the caller\'s line with moontorch.<op>: and the expected words', function()
    local before = x:clone()
    for _, row in ipairs(refused) do
      local op, fn, words = row[1], row[2], row[3]
      local ok, err = pcall(fn)
      local line = debug.getinfo(fn, 'S').linedefined
      if ok then error(('row at line %d (%s) raised no error'):format(line, op)) end
      err = tostring(err)
      local prefix = ('arguments_spec.lua:%d: moontorch.%s: '):format(line, op)
      if not err:find(prefix, 1, true) or not err:find(words, 1, true) then
        error(('row at line %d: expected "%s...%s", got: %s'):format(line, prefix, words, err))
      end
    end
    -- nothing was written, and everything still works
    assert.are.same(before:tolist(), x:tolist())
    H.near(torch.ones(3) + 1, { 2, 2, 2 })
    torch.set_printoptions({ profile = 'default' })
  end)

  it('takes integral floats (Lua cannot tell 2 from 2.0)', function()
    H.near(x:narrow(1, 2.0, 1.0), { { 4, 5, 6, 7 } })
    H.near(x:select(1, 3.0), { 8, 9, 10, 11 })
    H.near(x[2.0], { 4, 5, 6, 7 })
    H.near(x[{ 2.0, { 2.0, 3.0 } }], { 5, 6 })
    H.near(x:sum(2.0), { 6, 22, 38 })
    assert.are.same({ 2, 3 }, H.shape(torch.zeros(2.0, 3.0)))
    assert.are.same({ 4, 3 }, H.shape(x:view(4.0, -1.0)))
    H.near(x:topk(1.0), { { 3 }, { 7 }, { 11 } })
    assert.are.same({ 3 }, H.shape(torch.linspace(0, 1, 3.0)))
    assert.are.same({ 2, 2 }, H.shape(torch.eye(2.0)))
    torch.set_num_threads(2.0)
    assert.are.equal(2, torch.get_num_threads())
  end)

  it('takes int64 cdata (5LL) wherever an integer goes', function()
    assert.are.same({ 5, 2 }, H.shape(torch.zeros(5LL, 2ULL)))
    assert.are.same({ 5, 2 }, H.shape(torch.zeros({ 5LL, 2 })))
    assert.are.same({ 3 }, H.shape(torch.full(3LL, 1)))
    assert.are.same({ 3 }, H.shape(torch.randint(0, 10, 3LL)))
    H.near(x:narrow(1, 2LL, 1LL), { { 4, 5, 6, 7 } })
    H.near(x:select(1, 3LL), { 8, 9, 10, 11 })
    H.near(x[2LL], { 4, 5, 6, 7 })
    H.near(x:sum(2LL), { 6, 22, 38 })
    H.near(x:transpose(1LL, 2LL), x:t())
    assert.are.same({ 4, 3 }, H.shape(x:view(4LL, -1LL)))
    assert.are.equal(2, #x:split(2LL, 2))
    assert.are.same({ 5 }, H.shape(torch.randperm(5LL)))
    assert.are.same({ 4 }, H.shape(torch.linspace(0, 1, 4LL)))
    local y = x:clone()
    y[1LL] = 0
    H.near(y:sum(), 66 - 6)
    -- random_ and randint keep an int64 bound exact beyond 2^53
    local big = torch.empty(4, { dtype = torch.int64 }):random_(2 ^ 53 + 1LL, 2 ^ 53 + 2LL)
    local v = ffi.cast('int64_t *', big._data)
    for i = 0, 3 do assert.is_true(v[i] == 2 ^ 53 + 1LL) end
  end)

  it('keeps the checked ops compilable: a hot loop of each becomes a trace, no NYI in moontorch code', function()
    -- each loop-free op with checked integers, in a loop of its own
    local loops = {
      narrow = function() local s = 0 for i = 1, 20000 do s = s + x:narrow(1, i % 3 + 1, 1)._numel end return s end,
      select = function() local s = 0 for i = 1, 20000 do s = s + x:select(2, i % 4 + 1)._numel end return s end,
      index = function() local s = 0 for i = 1, 20000 do s = s + x[i % 3 + 1]._numel end return s end,
      transpose = function() local s = 0 for _ = 1, 20000 do s = s + x:transpose(1, 2)._numel end return s end,
      unsqueeze = function() local s = 0 for _ = 1, 20000 do s = s + x:unsqueeze(2)._numel end return s end,
      sum = function() local s = 0 for _ = 1, 20000 do s = s + x:sum(2.0)._numel end return s end,
      view = function() local s = 0 for _ = 1, 20000 do s = s + x:view(12)._numel end return s end,
      randn = function() local s = 0 for _ = 1, 20000 do s = s + torch.randn(4)._numel end return s end,
    }
    for name, loop in pairs(loops) do
      local nyi, loop_traces, s = H.watch_jit(loop, 'moontorch', 'arguments_spec')
      assert.are.same({}, nyi, name)
      assert.is_true(loop_traces > 0, name .. ': the loop was not compiled')
      assert.is_true(s > 0)
    end
  end)

  it('reads nested data as PyTorch does', function()
    -- a table.pack'ed sequence: its n equals its length
    H.near(torch.tensor({ 1, 2, 3, n = 3 }), { 1, 2, 3 })
    -- booleans among numbers count as 1 and 0; numbers make the default dtype (a Lua number is
    -- PyTorch's float), booleans alone make bool
    local m = torch.tensor({ true, 2, false })
    assert.are.equal(torch.float32, m.dtype)
    H.near(m, { 1, 2, 0 })
    assert.are.equal(torch.bool, torch.tensor({ { true }, { false } }).dtype)
    H.near(torch.tensor({ torch.tensor(true), 2.5 }), { 1, 2.5 })
    assert.are.same({ 2, 0 }, H.shape(torch.tensor({ {}, {} })))
    -- large data (written through a float64 buffer) round-trips in both dtypes
    local big = {}
    for i = 1, 3000 do big[i] = { i, -i } end
    local t32, t64 = torch.tensor(big), torch.tensor(big, { dtype = torch.float64 })
    assert.are.same({ 3000, 2 }, H.shape(t64))
    assert.are.equal(torch.float64, t64.dtype)
    H.near(t32:sum(1), { 4501500, -4501500 })
    H.near(t64[{ 3000, 2 }], -3000)
  end)
end)
