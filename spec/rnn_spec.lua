-- The recurrent layers (lua/nn/rnn.lua), nn.utils.rnn (lua/nn/utils_rnn.lua) and their ops
-- (core/ops/rnn.c: lstm_cell_pointwise, gru_cell_pointwise, unbind). Values come from PyTorch 1.13:
-- spec/support/rnn_wants.lua, written by spec/support/rnn_record.py (see its top for how); each
-- case loads the state_dict PyTorch's module had (same keys) and compares outputs, final states,
-- the parameters' gradients and the inputs' gradients.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local U = nn.utils.rnn
local W = dofile('spec/support/rnn_wants.lua')

local f64 = torch.float64
local function T(w, rg) -- a recorded tensor, float64
  local t = torch.tensor(w.values, { dtype = f64 }):view(w.shape)
  if rg then t:requires_grad_() end
  return t
end
local function near(got, want, tol) H.near(got:detach():reshape(-1), want.values, tol or 1e-10, tol or 1e-10) end

local function build(c)
  local opts = {}
  for k, v in pairs(c.kwargs) do opts[k] = v end
  local m = nn[c.cls](c.args[1], c.args[2], opts):double()
  local sd = torch.OrderedDict()
  for _, kv in ipairs(c.state) do sd[kv[1]] = T(kv[2]) end
  m:load_state_dict(sd)
  return m
end

local function check_case(name)
  local c = W[name]
  local m = build(c)
  local is_lstm = c.cls:match('^LSTM') ~= nil
  local leaves = {}
  local x
  if c.seqs then
    local seqs = {}
    for i, s in ipairs(c.seqs) do seqs[i] = T(s, true); leaves[i] = seqs[i] end
    x = U.pack_sequence(seqs, false)
  else
    x = T(c.x, true)
    leaves[1] = x
  end
  local hx
  if c.states then
    local hs = {}
    for i, s in ipairs(c.states) do hs[i] = T(s, true); leaves[#leaves + 1] = hs[i] end
    hx = is_lstm and hs or hs[1]
  end
  local loss
  if c.cls:match('Cell$') then
    local o, cc = m(x, hx)
    near(o, c.out)
    if is_lstm then
      near(cc, c.cn)
      loss = (o * o):sum() + (cc * 0.25):sum()
    else
      loss = (o * o):sum()
    end
  else
    local o, h = m(x, hx)
    local cn
    if is_lstm then h, cn = h[1], h[2] end
    local data = c.seqs and o.data or o
    near(data, c.out)
    assert.are.same(c.hn.shape, H.shape(h))
    near(h, c.hn)
    loss = (data * data):sum() + (h * 0.5):sum()
    if is_lstm then
      near(cn, c.cn)
      loss = loss + (cn * 0.25):sum()
    end
    if c.seqs then
      assert.is_true(torch.isinstance(o, U.PackedSequence))
      assert.are.same(c.batch_sizes, o.batch_sizes:tolist())
      assert.are.same(c.sorted_indices, o.sorted_indices:tolist())
      local padded, lengths = U.pad_packed_sequence(o, { batch_first = true, padding_value = -1 })
      near(padded, c.padded)
      assert.are.same(c.lengths, lengths:tolist())
    end
  end
  loss:backward()
  local seen = 0
  for k, p in m:named_parameters() do
    assert(c.grads[k], 'PyTorch has no parameter ' .. k)
    local ok, err = pcall(near, p.grad, c.grads[k])
    assert(ok, k .. ': ' .. tostring(err))
    seen = seen + 1
  end
  local n = 0
  for _ in pairs(c.grads) do n = n + 1 end
  assert.are.equal(n, seen)
  for i, l in ipairs(leaves) do
    local ok, err = pcall(near, l.grad, c.leaf_grads[i])
    assert(ok, 'input ' .. i .. ': ' .. tostring(err))
  end
end

describe('nn.RNN, nn.LSTM, nn.GRU and the cells against PyTorch 1.13', function()
  local names = {}
  for k, v in pairs(W) do if v.cls then names[#names + 1] = k end end
  table.sort(names)
  for _, name in ipairs(names) do
    it(name .. ': outputs, states, parameter and input gradients', function() check_case(name) end)
  end

  it('draws the dropout masks between layers PyTorch draws (batch_first LSTM, bidirectional GRU)', function()
    torch.manual_seed(20)
    local m = nn.LSTM(3, 4, { num_layers = 3, dropout = 0.5, batch_first = true })
    local x = torch.randn(2, 5, 3)
    local o, hc = m(x)
    near(o, W.dropout.out, 1e-5)
    near(hc[1], W.dropout.hn, 1e-5)
    torch.manual_seed(21)
    local g = nn.GRU(3, 4, 2, true, false, 0.3, true)
    local o2, h2 = g(torch.randn(5, 2, 3))
    near(o2, W.dropout_gru.out, 1e-5)
    near(h2, W.dropout_gru.hn, 1e-5)
    -- eval: no dropout, the same result twice
    g:eval()
    local a = g(torch.ones(5, 2, 3))
    local b = g(torch.ones(5, 2, 3))
    assert.is_true(torch.equal(a, b))
  end)
end)

describe('recurrent modules', function()
  it('initialise drawing PyTorch\'s numbers, in PyTorch\'s parameter order and names', function()
    -- PyTorch 1.13: torch.manual_seed(0); m = nn.LSTM(10, 20, 2, batch_first=True);
    -- [(k, tuple(p.shape), p.sum().item()) for k, p in m.named_parameters()]
    torch.manual_seed(0)
    local m = nn.LSTM(10, 20, 2, { batch_first = true })
    local want = {
      { 'weight_ih_l0', { 80, 10 }, -1.1309294700622559 }, { 'weight_hh_l0', { 80, 20 }, -0.03009176254272461 },
      { 'bias_ih_l0', { 80 }, -0.640726625919342 }, { 'bias_hh_l0', { 80 }, -1.9067821502685547 },
      { 'weight_ih_l1', { 80, 20 }, -4.756105422973633 }, { 'weight_hh_l1', { 80, 20 }, -1.8882226943969727 },
      { 'bias_ih_l1', { 80 }, 0.10775525867938995 }, { 'bias_hh_l1', { 80 }, -0.059389203786849976 },
    }
    local i = 0
    for k, p in m:named_parameters() do
      i = i + 1
      assert.are.equal(want[i][1], k)
      assert.are.same(want[i][2], H.shape(p))
      H.near(p:sum():item(), want[i][3], 1e-4, 1e-5)
    end
    assert.are.equal(#want, i)
    -- names with a projection and reverse directions
    local keys = nn.LSTM(3, 4, { proj_size = 2, bidirectional = true, bias = false }):state_dict():keys()
    assert.are.same({ 'weight_ih_l0', 'weight_hh_l0', 'weight_hr_l0', 'weight_ih_l0_reverse', 'weight_hh_l0_reverse',
      'weight_hr_l0_reverse' }, keys)
    local g = nn.GRU(3, 4, { num_layers = 2, bidirectional = true })
    assert.are.same({ 12, 8 }, H.shape(g.weight_ih_l1_reverse))
    assert.are.same({ 12, 4 }, H.shape(g.weight_hh_l1))
    assert.are.same({ 4, 3 }, H.shape(nn.RNNCell(3, 4).weight_ih))
    assert.are.same({ 16, 4 }, H.shape(nn.LSTMCell(3, 4).weight_hh))
  end)

  it('print as PyTorch prints them', function()
    assert.are.equal('LSTM(10, 20, num_layers=2, batch_first=True)', tostring(nn.LSTM(10, 20, 2, { batch_first = true })))
    assert.are.equal('RNN(10, 20, num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True, nonlinearity=relu)',
      tostring(nn.RNN(10, 20, { nonlinearity = 'relu', num_layers = 2, bias = false, batch_first = true, dropout = 0.5,
        bidirectional = true })))
    assert.are.equal('LSTM(10, 20, proj_size=5)', tostring(nn.LSTM(10, 20, { proj_size = 5 })))
    assert.are.equal('GRU(3, 4, num_layers=2, dropout=0.25)', tostring(nn.GRU(3, 4, { num_layers = 2, dropout = 0.25 })))
    assert.are.equal('LSTM(3, 4, num_layers=2, dropout=1.0)', tostring(nn.LSTM(3, 4, 2, true, false, 1)))
    assert.are.equal('RNNCell(3, 4, bias=False, nonlinearity=relu)', tostring(nn.RNNCell(3, 4, false, 'relu')))
    assert.are.equal('GRUCell(3, 4)', tostring(nn.GRUCell(3, 4)))
    assert.are.equal('LSTMCell(3, 4)', tostring(nn.LSTMCell(3, 4)))
  end)

  it('are built on the meta device and given memory by to_empty', function()
    local m = nn.LSTM(3, 4, { num_layers = 2, bidirectional = true, device = 'meta' })
    assert.is_true(m.weight_ih_l1_reverse.is_meta)
    local o, hc = m(torch.empty(5, 2, 3, { device = 'meta' }))
    assert.is_true(o.is_meta and hc[1].is_meta and hc[2].is_meta)
    assert.are.same({ 5, 2, 8 }, H.shape(o))
    assert.are.same({ 4, 2, 4 }, H.shape(hc[2]))
    local g = nn.GRU(3, 4, { batch_first = true, device = 'meta' })
    local go, gh = g(torch.empty(2, 6, 3, { device = 'meta' }))
    assert.are.same({ 2, 6, 4 }, H.shape(go))
    assert.are.same({ 1, 2, 4 }, H.shape(gh))
    local cell = nn.LSTMCell(3, 4, { device = 'meta' })
    local ch, cc = cell(torch.empty(2, 3, { device = 'meta' }))
    assert.is_true(ch.is_meta and cc.is_meta)
    m:to_empty({ device = 'cpu' })
    assert.is_false(m.weight_ih_l0.is_meta)
    local x = torch.randn(5, 2, 3)
    assert.are.same({ 5, 2, 8 }, H.shape((m(x))))
  end)

  it('raise PyTorch\'s messages for wrong sizes at the caller\'s line', function()
    local m = nn.LSTM(10, 20)
    local line = debug.getinfo(1, 'l').currentline + 1
    local err = H.errors_with(function() local o = m(torch.randn(5, 3, 5)); return o end,
      'moontorch.nn.LSTM: input.size(-1) must be equal to input_size. Expected 10, got 5')
    assert.truthy(err:find('rnn_spec.lua:' .. line .. ':', 1, true), err)
    H.errors_with(function() return m(torch.randn(5, 3, 10), { torch.zeros(1, 2, 20), torch.zeros(1, 3, 20) }) end,
      'moontorch.nn.LSTM: Expected hidden[0] size (1, 3, 20), got [1, 2, 20]')
    H.errors_with(function() return m(torch.randn(5, 3, 10), { torch.zeros(1, 3, 20), torch.zeros(1, 3, 7) }) end,
      'Expected hidden[1] size (1, 3, 20), got [1, 3, 7]')
    H.errors_with(function() return m(torch.randn(5, 10), { torch.zeros(1, 1, 20), torch.zeros(1, 1, 20) }) end,
      'For unbatched 2-D input, hx and cx should also be 2-D but got (3-D, 3-D) tensors')
    local g = nn.GRU(3, 4, { num_layers = 2 })
    H.errors_with(function() return g(torch.randn(5, 2, 3), torch.zeros(1, 2, 4)) end,
      'moontorch.nn.GRU: Expected hidden size (2, 2, 4), got [1, 2, 4]')
    H.errors_with(function() return g(torch.randn(5, 3), torch.zeros(2, 2, 4)) end,
      'For unbatched 2-D input, hx should also be 2-D but got 3-D tensor')
    H.errors_with(function() return g(torch.randn(5, 2, 3, 1)) end, 'input must have 3 dimensions, got 5')
    H.errors_with(function() return g(torch.randn(5, 2, 3, { dtype = f64 })) end, 'mat1 and mat2 must have the same dtype')
    H.errors_with(function() return nn.LSTMCell(3, 4)(torch.randn(2, 5)) end,
      'moontorch.nn.LSTMCell: input has inconsistent input_size: got 5 expected 3')
    H.errors_with(function() return nn.LSTMCell(3, 4)(torch.randn(2, 3), { torch.randn(2, 5), torch.randn(2, 4) }) end,
      'hidden0 has inconsistent hidden_size: got 5, expected 4')
    H.errors_with(function() return nn.GRUCell(3, 4)(torch.randn(2, 3), torch.randn(3, 4)) end,
      "Input batch size 2 doesn't match hidden0 batch size 3")
    H.errors_with(function() return nn.GRUCell(3, 4)(torch.randn(2, 3, 3)) end,
      'GRUCell: Expected input to be 1-D or 2-D but received 3-D tensor')
    -- the constructors
    H.errors_with(function() return nn.RNN(3, 4, { nonlinearity = 'x' }) end, "moontorch.nn.RNN: Unknown nonlinearity 'x'")
    H.errors_with(function() return nn.GRU(3, 4, { proj_size = 2 }) end,
      'proj_size argument is only supported for LSTM, not RNN or GRU')
    H.errors_with(function() return nn.LSTM(3, 4, { proj_size = 4 }) end, 'proj_size has to be smaller than hidden_size')
    H.errors_with(function() return nn.LSTM(3, 4, { proj_size = -1 }) end,
      'proj_size should be a positive integer or zero to disable projections')
    H.errors_with(function() return nn.LSTM(3, 4, { dropout = 2 }) end,
      'dropout should be a number in range [0, 1] representing the probability of an element being zeroed')
  end)

  it('check the arguments of their calls as Python does', function()
    -- PyTorch 1.13: nn.LSTM(3, 4)(x, None, x) -> "LSTM.forward() takes from 2 to 3 positional arguments but 4
    -- were given" (self counted; Lua counts what the caller wrote); m() -> "missing 1 required positional
    -- argument: 'input'"; m(x, foo=1) -> "got an unexpected keyword argument 'foo'"
    local x = torch.ones(2, 3)
    for _, name in ipairs({ 'RNN', 'LSTM', 'GRU', 'RNNCell', 'LSTMCell', 'GRUCell' }) do
      local m = nn[name](3, 4)
      local op = 'moontorch.nn.' .. name .. ': forward() '
      H.errors_with(function() m(x, nil, x) end, op .. 'takes from 1 to 2 positional arguments but 3 were given')
      H.errors_with(function() m() end, op .. "missing 1 required positional argument: 'input'")
      H.errors_with(function() m(x, { foo = 1 }) end, op .. "got an unexpected keyword argument 'foo'")
    end
  end)

  it('take states as PyTorch does and return h_n, c_n with the batch where it was', function()
    local m = nn.LSTM(3, 4, { batch_first = true, num_layers = 2 })
    local x = torch.randn(2, 5, 3)
    local o, hc = m(x)
    assert.are.same({ 2, 5, 4 }, H.shape(o))
    assert.are.same({ 2, 2, 4 }, H.shape(hc[1]))
    -- the last step's output is h_n of the last layer
    H.near(o:select(2, 5), hc[1][2], 1e-6, 1e-6)
    -- going on from the final state equals running the whole sequence at once
    local o1, s1 = m(x:narrow(2, 1, 3))
    local o2 = m(x:narrow(2, 4, 2), s1)
    H.near(torch.cat({ o1, o2 }, 2), o, 1e-6, 1e-6)
    -- unbatched is the batch of one
    local u, uh = m(x[1])
    H.near(u, o[1], 1e-6, 1e-6)
    assert.are.same({ 2, 4 }, H.shape(uh[1]))
  end)
end)

describe('the fused ops', function()
  it('lstm_cell_pointwise and gru_cell_pointwise pass gradcheck and gradgradcheck in float64', function()
    torch.manual_seed(0)
    local function r(a, b)
      local t = b and torch.randn(a, b, { dtype = f64 }) or torch.randn(a, { dtype = f64 })
      return t:requires_grad_()
    end
    local ig, hg, cx, bi, bh = r(3, 16), r(3, 16), r(3, 4), r(16), r(16)
    local function lstm(a, b, c, d, e)
      local h, cc = torch.lstm_cell_pointwise(a, b, c, d, e)
      return h * 2 + cc * cc
    end
    assert.is_true(torch.autograd.gradcheck(lstm, { ig, hg, cx, bi, bh }))
    assert.is_true(torch.autograd.gradgradcheck(lstm, { ig, hg, cx, bi, bh }))
    -- only c_n used: the gradient of h is absent
    assert.is_true(torch.autograd.gradcheck(function(a, b, c)
      local _, cc = torch.lstm_cell_pointwise(a, b, c); return cc end, { ig, hg, cx }))
    local gi, gh, hx, b3, b4 = r(3, 12), r(3, 12), r(3, 4), r(12), r(12)
    local function gru(...) return torch.gru_cell_pointwise(...) end
    assert.is_true(torch.autograd.gradcheck(gru, { gi, gh, hx, b3, b4 }))
    assert.is_true(torch.autograd.gradgradcheck(gru, { gi, gh, hx, b3, b4 }))
    -- strided rows (a batch_first projection's time step) and float32 agree with float64
    local big = torch.randn(3, 2, 16, { dtype = f64 })
    local h64 = torch.lstm_cell_pointwise(big:select(2, 2), hg:detach(), cx:detach(), bi:detach(), bh:detach())
    local h32 = torch.lstm_cell_pointwise(big:select(2, 2):float(), hg:detach():float(), cx:detach():float(),
      bi:detach():float(), bh:detach():float())
    H.near(h32:double(), h64, 1e-6, 1e-6)
    assert.are.equal('LstmCellPointwiseBackward0', torch.lstm_cell_pointwise(ig, hg, cx).grad_fn:name())
    assert.are.equal('GruCellPointwiseBackward0', torch.gru_cell_pointwise(gi, gh, hx).grad_fn:name())
  end)

  it('check their arguments', function()
    local a = torch.zeros(2, 8)
    H.errors_with(function() return torch.lstm_cell_pointwise(a, a, torch.zeros(2, 3)) end,
      'moontorch.lstm_cell_pointwise: expected cx of size [2, 2], but got [2, 3]')
    H.errors_with(function() return torch.lstm_cell_pointwise(a, torch.zeros(2, 4), torch.zeros(2, 2)) end,
      'expected hgates of size [2, 8]')
    H.errors_with(function() return torch.gru_cell_pointwise(a, a, torch.zeros(2, 2)) end,
      'expected igates of size [batch, 3 * hidden_size], but got [2, 8]')
    H.errors_with(function() return torch.lstm_cell_pointwise(a:long(), a:long(), torch.zeros(2, 2):long()) end,
      'expected igates of dtype float32 or float64')
    H.errors_with(function() return torch.lstm_cell_pointwise(a, a:double(), torch.zeros(2, 2)) end,
      'expected hgates to have dtype')
    H.errors_with(function() return torch.lstm_cell_pointwise(a, a, torch.zeros(2, 2), torch.zeros(7)) end,
      'expected b_ih of size [8], but got [7]')
  end)

  it('unbind gives views with one UnbindBackward0 node', function()
    local x = torch.randn(4, 3, { dtype = f64, requires_grad = true })
    local u = x:unbind(2)
    assert.are.equal(3, #u)
    assert.are.equal('UnbindBackward0', u[1].grad_fn:name())
    assert.is_true(rawequal(u[1].grad_fn, u[3].grad_fn) or u[1].grad_fn:name() == u[3].grad_fn:name())
    assert.is_true(torch.autograd.gradcheck(function(t) local v = t:unbind(1); return v[1] * v[4] + v[2] end, { x }))
    assert.is_true(torch.autograd.gradgradcheck(function(t) local v = t:unbind(2); return v[1] * v[3] end, { x }))
    local d = x:detach()
    d:unbind(1)[2]:fill_(7)
    assert.are.equal(7, d[2][3]:item())
    H.errors_with(function() return torch.tensor(1):unbind() end, 'unbind: cannot be applied to a 0-dim tensor')
  end)
end)

describe('nn.utils.rnn', function()
  it('packs and pads as PyTorch does', function()
    -- PyTorch 1.13: pack_padded_sequence(torch.arange(6.).view(3, 2, 1), [3, 1])
    local p = U.pack_padded_sequence(torch.arange(6):double():view(3, 2, 1), { 3, 1 })
    assert.are.same({ { 0 }, { 1 }, { 2 }, { 4 } }, p.data:tolist())
    assert.are.same({ 2, 1, 1 }, p.batch_sizes:tolist())
    assert.is_nil(p.sorted_indices)
    -- batch_first, unsorted: PyTorch 1.13: x = torch.arange(12.).view(3, 4); pack_padded_sequence(x, [2, 4, 3],
    -- batch_first=True, enforce_sorted=False) -> data [4, 8, 0, 5, 9, 1, 6, 10, 7], batch_sizes [3, 3, 2, 1],
    -- sorted_indices [1, 2, 0], unsorted_indices [2, 0, 1] (0-based); pad_packed_sequence(q, batch_first=True,
    -- padding_value=-1, total_length=5) -> the rows below, lengths [2, 4, 3]
    local x = torch.arange(12):double():view(3, 4)
    local q = U.pack_padded_sequence(x, torch.tensor({ 2, 4, 3 }), { batch_first = true, enforce_sorted = false })
    assert.are.same({ 4, 8, 0, 5, 9, 1, 6, 10, 7 }, q.data:tolist())
    assert.are.same({ 3, 3, 2, 1 }, q.batch_sizes:tolist())
    assert.are.same({ 2, 3, 1 }, q.sorted_indices:tolist())
    assert.are.same({ 3, 1, 2 }, q.unsorted_indices:tolist())
    local back, lens = U.pad_packed_sequence(q, { batch_first = true, padding_value = -1, total_length = 5 })
    assert.are.same({ { 0, 1, -1, -1, -1 }, { 4, 5, 6, 7, -1 }, { 8, 9, 10, -1, -1 } }, back:tolist())
    assert.are.same({ 2, 4, 3 }, lens:tolist())
    local tm = U.pad_packed_sequence(q)
    assert.are.same({ 4, 3 }, H.shape(tm))
    -- pad_sequence, pack_sequence
    local s = U.pad_sequence({ torch.ones(2), torch.ones(3) * 2, torch.ones(1) * 3 }, { batch_first = true })
    assert.are.same({ { 1, 1, 0 }, { 2, 2, 2 }, { 3, 0, 0 } }, s:tolist())
    assert.are.same({ 3, 2 }, H.shape(U.pad_sequence({ torch.ones(2), torch.ones(3) })))
    local ps = U.pack_sequence({ torch.tensor({ 1, 2, 3 }), torch.tensor({ 4, 5 }), torch.tensor({ 6 }) })
    assert.are.same({ 1, 4, 6, 2, 5, 3 }, ps.data:tolist())
    -- gradients go back through packing and padding
    local g = torch.randn(3, 2, 2, { dtype = f64, requires_grad = true })
    assert.is_true(torch.autograd.gradcheck(function(t)
      local pk = U.pack_padded_sequence(t, { 3, 2 })
      return (U.pad_packed_sequence(pk))
    end, { g }))
  end)

  it('says what is wrong, as PyTorch does', function()
    local x = torch.zeros(3, 2, 1)
    H.errors_with(function() return U.pack_padded_sequence(x, { 1, 3 }) end,
      '`lengths` array must be sorted in decreasing order when `enforce_sorted` is True.')
    H.errors_with(function() return U.pack_padded_sequence(x, { 3, 0 }) end,
      "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0")
    H.errors_with(function() return U.pack_padded_sequence(x, { 3, 1, 1 }) end,
      'Expected `len(lengths)` to be equal to batch_size, but got 3 (batch_size=2)')
    H.errors_with(function() return U.pad_packed_sequence(U.pack_padded_sequence(x, { 3, 1 }), { total_length = 2 }) end,
      'Expected total_length to be at least the length of the longest sequence in input, but got total_length=2 and max sequence length being 3')
  end)

  it('frees everything it made', function()
    local sweep = require('moontorch.tensor').sweep
    local C = require('moontorch.ffi').C
    sweep()
    local before = C.mt_get_stats().live_tensors
    do
      local m = nn.LSTM(3, 4, { num_layers = 2, bidirectional = true })
      local o, hc = m(U.pack_sequence({ torch.randn(3, 3), torch.randn(2, 3) }))
      ;(o.data:sum() + hc[1]:sum()):backward()
      local g = nn.GRU(3, 4, { batch_first = true })
      local o2 = g(torch.randn(2, 4, 3))
      o2:sum():backward()
    end
    sweep()
    assert.are.equal(before, C.mt_get_stats().live_tensors)
  end)
end)

-- nn.LSTM (no proj_size, not packed) runs each layer and direction's recurrence as one op,
-- torch.lstm_layer (core/ops/rnn.c), whose one node gives w_hh's gradient as one product over all
-- steps. Its results are held against PyTorch above (the lstm* cases); here against the same
-- steps made of lstm_cell_pointwise and mm (the per-step graph), and through autograd's paths.
describe('torch.lstm_layer and the LSTM built on it', function()
  local ag = torch.autograd
  -- the per-step graph of the same recurrence: hs, cs [T, B, H]
  local function steps(ig, h0, c0, w, reverse)
    local T_ = ig:size(1)
    local h, c, hs, cs = h0, c0, {}, {}
    for k = 1, T_ do
      local t = reverse and T_ + 1 - k or k
      h, c = torch.lstm_cell_pointwise(ig[t], h:mm(w:t()), c)
      hs[t], cs[t] = h, c
    end
    return torch.stack(hs), torch.stack(cs)
  end
  local function inputs(seed)
    torch.manual_seed(seed)
    return torch.randn(4, 2, 3, 12):to(f64):select(3, 2):requires_grad_(), -- igates [4, 2, 12], rows apart
      torch.randn(2, 3):to(f64):requires_grad_(), torch.randn(3, 2):to(f64):t():requires_grad_(),
      torch.randn(12, 3):to(f64):mul(0.5):requires_grad_()
  end

  it('computes what the per-step graph computes, forward and backward, either way in time', function()
    for _, case in ipairs({ { false, false }, { true, false }, { false, true }, { true, true } }) do
      local reverse, batch_major = case[1], case[2]
      local ig, h0, c0, w = inputs(1)
      if batch_major then -- laid out as a batch_first projection's transpose
        ig = ig:detach():transpose(1, 2):contiguous():transpose(1, 2):requires_grad_()
      end
      local hs, cs = torch.lstm_layer(ig, h0, c0, w, reverse)
      local rh, rc = steps(ig, h0, c0, w, reverse)
      H.near(hs, rh, 1e-14, 1e-14)
      H.near(cs, rc, 1e-14, 1e-14)
      assert.are.equal('LstmLayerBackward0', hs.grad_fn:name())
      local gh, gc = torch.randn(4, 2, 3):to(f64), torch.randn(4, 2, 3):to(f64)
      local a = ag.grad({ (hs * gh):sum() + (cs * gc):sum() }, { ig, h0, c0, w })
      local b = ag.grad({ (rh * gh):sum() + (rc * gc):sum() }, { ig, h0, c0, w })
      for i = 1, 4 do H.near(a[i], b[i], 1e-13, 1e-13) end
      -- a gradient for some steps only (the later ones get none): the same as the steps' graph
      hs = torch.lstm_layer(ig, h0, c0, w, reverse)
      rh = steps(ig, h0, c0, w, reverse)
      a = ag.grad({ hs[2]:sum() }, { ig, w, c0 })
      b = ag.grad({ rh[2]:sum() }, { ig, w, c0 })
      for i = 1, 3 do H.near(a[i], b[i], 1e-13, 1e-13) end
    end
  end)

  it('accumulates over retained backwards, shows hooks the whole gradient, and differentiates twice', function()
    local ig, h0, c0, w = inputs(2)
    local seen
    w:register_hook(function(g) seen = g:clone() end)
    local hs, cs = torch.lstm_layer(ig, h0, c0, w)
    local loss = (hs * hs):sum() + cs:sum()
    loss:backward({ retain_graph = true })
    local once = w.grad:clone()
    H.near(seen, once, 0, 0)
    loss:backward()
    H.near(w.grad, once * 2, 1e-14, 1e-14)
    H.errors_with(function() loss:backward() end, 'backward through the graph a second time')
    -- create_graph: the recorded backward, whose second derivatives match the steps' graph
    local function second(f)
      local x, y = f(ig, h0, c0, w)
      local g = ag.grad({ (x * x):sum() + y:sum() }, { w, h0 }, { create_graph = true })
      return ag.grad({ (g[1] * g[1]):sum() + g[2]:sum() }, { ig, w, c0 })
    end
    local a, b = second(torch.lstm_layer), second(steps)
    for i = 1, 3 do H.near(a[i], b[i], 1e-12, 1e-12) end
    assert.is_true(ag.gradgradcheck(function(x, y, z) return torch.lstm_layer(x, y, z, w, true) end, { ig, h0, c0 }))
  end)

  it('nn.LSTM: a 2-layer batch_first LSTM differentiates twice; its output is contiguous', function()
    torch.manual_seed(3)
    local m = nn.LSTM(3, 4, { num_layers = 2, batch_first = true }):double()
    local x = torch.randn(2, 5, 3):to(f64):requires_grad_()
    local o = m(x)
    assert.is_true(o:is_contiguous())
    assert.are.same({ 2, 5, 4 }, H.shape(o:view(2, 5, 4)))
    assert.is_true(ag.gradgradcheck(function(v) return (m(v)) end, { x }))
  end)

  it('checks its arguments', function()
    local ig, h0, c0, w = torch.randn(3, 2, 8), torch.randn(2, 2), torch.randn(2, 2), torch.randn(8, 2)
    H.errors_with(function() torch.lstm_layer(ig, h0, c0) end, 'moontorch.lstm_layer: expected a tensor for w_hh, got nil')
    H.errors_with(function() torch.lstm_layer(torch.randn(3, 8), h0, c0, w) end,
      'lstm_layer: expected igates of size [seq_len, batch, 4 * hidden_size], but got [3, 8]')
    H.errors_with(function() torch.lstm_layer(ig, h0, c0, torch.randn(8, 3)) end,
      'lstm_layer: expected w_hh of size [8, 2], but got [8, 3]')
    H.errors_with(function() torch.lstm_layer(ig, torch.randn(3, 2), c0, w) end,
      'lstm_layer: expected h0 of size [2, 2], but got [3, 2]')
    H.errors_with(function() torch.lstm_layer(ig, h0, c0:double(), w) end, 'lstm_layer: expected c0 to have dtype')
    H.errors_with(function() torch.lstm_layer(ig:long(), h0, c0, w) end, 'expected igates of dtype float32 or float64')
  end)
end)
