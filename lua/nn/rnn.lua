-- Recurrent layers: nn.RNN (tanh or relu), nn.LSTM (with proj_size), nn.GRU, and the cells
-- nn.RNNCell, nn.LSTMCell, nn.GRUCell, computing what PyTorch 1.13 computes on the CPU:
-- parameters named, shaped, ordered and initialised as PyTorch's (uniform(-1/sqrt(hidden),
-- 1/sqrt(hidden)) over parameters() in order, the same numbers after the same seed), dropout
-- between layers drawing PyTorch's masks, bidirectional, batch_first, initial states, unbatched
-- input, and PackedSequence in and out (lua/nn/utils_rnn.lua).
--
-- How a layer runs, as PyTorch runs it: the input projection of every time step is one product
-- per layer and direction (its biases folded in), each step's slice of it comes from one unbind
-- (one graph node for all steps), and each step is one product for the hidden projection and one
-- fused kernel for the gates (torch.lstm_cell_pointwise / torch.gru_cell_pointwise, core/ops/rnn.c;
-- the plain RNN's step is addmm then tanh or relu). The LSTM without proj_size on a padded (not
-- packed) input runs the same steps inside one op, torch.lstm_layer, whose single graph node
-- takes the gradient of w_hh as one product over all steps (T products and T - 1 sums of a
-- [4H, H] gradient otherwise).
--
-- Calls follow PyTorch's: `local out, hc = lstm(x, {h0, c0})` (hc = {h_n, c_n}), `local out, h_n =
-- gru(x, h0)`; the cells: `local h, c = lstm_cell(x, {h, c})`, `h = gru_cell(x, h)`.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local Mod = require 'moontorch.nn.Module'

local fail = core.fail
local Module, Parameter = Mod.Module, Mod.Parameter
local check_int, declare_forward = Mod.check_int, Mod.declare_forward
local type, tostring, math, ipairs = type, tostring, math, ipairs

local M = {}
local nn -- moontorch.nn, set by install
local PackedSequence -- nn.utils.rnn.PackedSequence, set by install

local function pybool(b) return b and 'True' or 'False' end
-- Python's repr of a float (PyTorch keeps dropout as float(dropout): 1 prints as 1.0)
local function pyfloat(x) return require('moontorch.nn.layers').pyfloat(x) end

local warned = {}
local function warn(msg)
  if warned[msg] then return end
  warned[msg] = true
  io.stderr:write('UserWarning: ', msg, '\n')
end

local function factory(opts)
  if type(opts) ~= 'table' or (opts.device == nil and opts.dtype == nil) then return nil end
  return { device = opts.device, dtype = opts.dtype }
end
local function empty(sizes, fk)
  if fk then return torch.empty(sizes, fk) end
  return torch.empty(sizes)
end

-- "(1, 2, 4)": a Python tuple of sizes, as PyTorch's messages print them
local function tuple(s) return '(' .. table.concat(s, ', ') .. ')' end
local function list(t) return '[' .. table.concat(t:size(), ', ') .. ']' end

local function skipping()
  local layers = require 'moontorch.nn.layers'
  return layers.skipping > 0
end

------------------------------------------------------------------------------ the layers
local RNNBase = class.class('nn.RNNBase', Module)
M.RNNBase = RNNBase

local GATES = { RNN_TANH = 1, RNN_RELU = 1, LSTM = 4, GRU = 3 }
local ARGS = { 'num_layers', 'bias', 'batch_first', 'dropout', 'bidirectional', 'proj_size' }

-- RNNBase(name, mode, input_size, hidden_size, [num_layers, bias, batch_first, dropout,
-- bidirectional, proj_size,] [opts]): PyTorch's positional order, or options by name
function RNNBase:__init(name, mode, input_size, hidden_size, ...)
  Module.__init(self)
  if type(name) ~= 'string' then -- (the base of RNN, LSTM, GRU: those are what a user makes)
    fail('nn.RNNBase', 'expected the name of the layer (use nn.RNN, nn.LSTM or nn.GRU), got ' .. core.typeof(name))
  end
  local n = select('#', ...)
  local pos, opts = { ... }, nil
  if n > 0 and type(pos[n]) == 'table' and not torch.is_tensor(pos[n]) then opts = pos[n]; pos[n] = nil end
  opts = opts or {}
  local v = {}
  for i, k in ipairs(ARGS) do
    if pos[i] ~= nil then v[k] = pos[i] else v[k] = opts[k] end
  end
  local num_layers = v.num_layers == nil and 1 or v.num_layers
  local bias = v.bias == nil and true or v.bias
  local batch_first = v.batch_first == true
  local dropout = v.dropout == nil and 0 or v.dropout
  local bidirectional = v.bidirectional == true
  local proj_size = v.proj_size == nil and 0 or v.proj_size
  check_int(name, 'input_size', input_size, 0)
  check_int(name, 'hidden_size', hidden_size, 0)
  check_int(name, 'num_layers', num_layers, 1)
  if type(dropout) ~= 'number' or dropout < 0 or dropout > 1 then
    fail(name, 'dropout should be a number in range [0, 1] representing the probability of an element being zeroed')
  end
  if dropout > 0 and num_layers == 1 then
    warn(('dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects num_layers '
      .. 'greater than 1, but got dropout=%s and num_layers=%d'):format(tostring(dropout), num_layers))
  end
  if type(proj_size) ~= 'number' or proj_size < 0 or proj_size ~= math.floor(proj_size) then
    fail(name, 'proj_size should be a positive integer or zero to disable projections')
  end
  if proj_size >= hidden_size then fail(name, 'proj_size has to be smaller than hidden_size') end
  if proj_size > 0 and mode ~= 'LSTM' then fail(name, 'proj_size argument is only supported for LSTM, not RNN or GRU') end

  self.mode = mode
  self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
  self.bias, self.batch_first, self.dropout = bias and true or false, batch_first, dropout
  self.bidirectional, self.proj_size = bidirectional, proj_size
  local fk = factory(opts)
  local gate = GATES[mode] * hidden_size
  local dirs = bidirectional and 2 or 1
  local real_hidden = proj_size > 0 and proj_size or hidden_size
  local names = {}
  for layer = 0, num_layers - 1 do
    for dir = 0, dirs - 1 do
      local in_size = layer == 0 and input_size or real_hidden * dirs
      local sfx = ('_l%d%s'):format(layer, dir == 1 and '_reverse' or '')
      self['weight_ih' .. sfx] = Parameter(empty({ gate, in_size }, fk))
      self['weight_hh' .. sfx] = Parameter(empty({ gate, real_hidden }, fk))
      local ns = { 'weight_ih' .. sfx, 'weight_hh' .. sfx }
      if self.bias then
        self['bias_ih' .. sfx] = Parameter(empty({ gate }, fk))
        self['bias_hh' .. sfx] = Parameter(empty({ gate }, fk))
        ns[3], ns[4] = 'bias_ih' .. sfx, 'bias_hh' .. sfx
      end
      if proj_size > 0 then
        self['weight_hr' .. sfx] = Parameter(empty({ proj_size, hidden_size }, fk))
        ns[#ns + 1] = 'weight_hr' .. sfx
      end
      names[#names + 1] = ns
    end
  end
  self._name = name
  self._flat_names = names -- per layer and direction: its parameters' names, PyTorch's order
  if not skipping() then self:reset_parameters() end
end

-- PyTorch's flatten_parameters() packs the weights into one cuDNN buffer; on the CPU it does
-- nothing, and neither does this (scripts call it after .to() or in forward)
function RNNBase:flatten_parameters() return nil end

function RNNBase:reset_parameters()
  local stdv = self.hidden_size > 0 and 1 / math.sqrt(self.hidden_size) or 0
  for _, w in ipairs(self:parameters()) do nn.init.uniform_(w, -stdv, stdv) end
end

function RNNBase:extra_repr()
  local s = ('%d, %d'):format(self.input_size, self.hidden_size)
  if self.proj_size ~= 0 then s = s .. ', proj_size=' .. self.proj_size end
  if self.num_layers ~= 1 then s = s .. ', num_layers=' .. self.num_layers end
  if self.bias ~= true then s = s .. ', bias=' .. pybool(self.bias) end
  if self.batch_first ~= false then s = s .. ', batch_first=' .. pybool(self.batch_first) end
  if self.dropout ~= 0 then s = s .. ', dropout=' .. pyfloat(self.dropout) end
  if self.bidirectional ~= false then s = s .. ', bidirectional=' .. pybool(self.bidirectional) end
  if self.nonlinearity and self.nonlinearity ~= 'tanh' then s = s .. ', nonlinearity=' .. self.nonlinearity end
  return s
end

-- the weights of layer l, direction d (0-based): w_ih, w_hh, b_ih, b_hh, w_hr (nil where absent)
function RNNBase:_weights(l, d)
  local sfx = ('_l%d%s'):format(l, d == 1 and '_reverse' or '')
  return self['weight_ih' .. sfx], self['weight_hh' .. sfx], self['bias_ih' .. sfx], self['bias_hh' .. sfx],
    self['weight_hr' .. sfx]
end

-- One direction of one layer. igs[t]: the input projection of step t (biases in), [bs_t, G];
-- bs: the batch size of each step (nil: all B); h, c: the initial state [B, *]. Returns the
-- steps' outputs (outs[t], [bs_t, P]) and the final state [B, *].
local function run_direction(mode, igs, bs, h, c, w_hh, b_hh, w_hr, reverse)
  local T = #igs
  local whh_t, whr_t = w_hh:t(), w_hr and w_hr:t()
  local outs = {}
  local lstm, gru = torch.lstm_cell_pointwise, torch.gru_cell_pointwise
  local relu = mode == 'RNN_RELU'
  local function step(ig)
    if mode == 'LSTM' then
      h, c = lstm(ig, h:mm(whh_t), c, nil, nil)
      if whr_t then h = h:mm(whr_t) end
    elseif mode == 'GRU' then
      h = gru(ig, h:mm(whh_t), h, nil, b_hh)
    else
      local pre = torch.addmm(ig, h, whh_t)
      h = relu and pre:relu() or pre:tanh()
    end
    return h
  end
  if not bs then
    if reverse then
      for t = T, 1, -1 do outs[t] = step(igs[t]) end
    else
      for t = 1, T do outs[t] = step(igs[t]) end
    end
    return outs, h, c
  end
  -- packed: the batch shrinks (forward) or grows (reverse) from step to step; the rows that
  -- leave keep their final state
  local h0, c0 = h, c
  if not reverse then
    local finals_h, finals_c = {}, {}
    local last = bs[1]
    for t = 1, T do
      local b = bs[t]
      if b < last then
        finals_h[#finals_h + 1] = h:narrow(1, b + 1, last - b)
        h = h:narrow(1, 1, b)
        if c then
          finals_c[#finals_c + 1] = c:narrow(1, b + 1, last - b)
          c = c:narrow(1, 1, b)
        end
      end
      last = b
      outs[t] = step(igs[t])
    end
    finals_h[#finals_h + 1] = h
    if c then finals_c[#finals_c + 1] = c end
    local hs, cs = {}, {}
    for i = #finals_h, 1, -1 do hs[#hs + 1] = finals_h[i] end
    for i = #finals_c, 1, -1 do cs[#cs + 1] = finals_c[i] end
    return outs, #hs == 1 and hs[1] or torch.cat(hs, 1), c and (#cs == 1 and cs[1] or torch.cat(cs, 1))
  end
  local last = bs[T]
  h = h0:narrow(1, 1, last)
  c = c0 and c0:narrow(1, 1, last)
  for t = T, 1, -1 do
    local b = bs[t]
    if b > last then
      h = torch.cat({ h, h0:narrow(1, last + 1, b - last) }, 1)
      if c then c = torch.cat({ c, c0:narrow(1, last + 1, b - last) }, 1) end
    end
    last = b
    outs[t] = step(igs[t])
  end
  return outs, h, c
end

-- the input projection of every step at once: x [.., in] -> [.., G], with the biases the step
-- does not add itself (b_ih, and b_hh too but for the GRU, whose b_hh goes inside r * (.))
local function project(mode, x, w_ih, b_ih, b_hh)
  local bias = b_ih
  if b_ih and b_hh and mode ~= 'GRU' then bias = b_ih + b_hh end
  local sz = x:size()
  local x2 = x:reshape(-1, sz[#sz])
  local p = bias and torch.addmm(bias, x2, w_ih:t()) or x2:mm(w_ih:t())
  sz[#sz] = w_ih:size(1)
  return p:view(sz)
end

-- the dropout between layers, drawing PyTorch's mask: bernoulli_(1 - p) over the time-major layer
-- output (the order PyTorch's CPU kernel fills it in), divided by 1 - p
local function layer_dropout(x, p, batch_first)
  if p == 1 then return x * 0 end
  local noise
  if batch_first and x:dim() == 3 then
    noise = torch.empty({ x:size(2), x:size(1), x:size(3) }, { dtype = x.dtype, device = x.device })
    noise:bernoulli_(1 - p):div_(1 - p)
    noise = noise:transpose(1, 2)
  else
    noise = torch.empty_like(x):bernoulli_(1 - p):div_(1 - p)
  end
  return x * noise
end

-- the stack of layers over x ([T, B, in], [B, T, in] when batch_first, or packed data [N, in] with
-- batch sizes `bs` and the padded-time gather `pack`); hx, cx [L * D, B, *]
function RNNBase:_run(x, hx, cx, bs, pack)
  local mode, dirs = self.mode, self.bidirectional and 2 or 1
  local tdim = self.batch_first and 2 or 1
  local hs, cs = hx:unbind(1), cx and cx:unbind(1)
  local hn, cn = {}, {}
  local training = self.training
  for l = 0, self.num_layers - 1 do
    local outs_dir = {}
    for d = 0, dirs - 1 do
      local w_ih, w_hh, b_ih, b_hh, w_hr = self:_weights(l, d)
      local proj = project(mode, x, w_ih, b_ih, b_hh)
      local k = l * dirs + d + 1
      local T = not bs and proj:size(tdim) or 0
      if mode == 'LSTM' and not w_hr and T > 0 then
        -- the whole recurrence as one op (torch.lstm_layer): its backward gives w_hh's gradient as
        -- one product over every step instead of one per step
        local ig = tdim == 2 and proj:transpose(1, 2) or proj
        local hs_, cs_ = torch.lstm_layer(ig, hs[k], cs[k], w_hh, d == 1)
        local last = d == 1 and 1 or T
        hn[k], cn[k] = hs_:select(1, last), cs_:select(1, last)
        outs_dir[d + 1] = tdim == 2 and hs_:transpose(1, 2):contiguous() or hs_
      else
        local igs
        if bs then
          igs = pack.steps(proj)
        else
          igs = proj:unbind(tdim)
        end
        local outs, h, c = run_direction(mode, igs, bs, hs[k], cs and cs[k], w_hh, mode == 'GRU' and b_hh or nil, w_hr,
          d == 1)
        hn[k], cn[k] = h, c
        outs_dir[d + 1] = bs and torch.cat(outs, 1) or torch.stack(outs, tdim)
      end
    end
    x = dirs == 2 and torch.cat(outs_dir, -1) or outs_dir[1]
    if self.dropout > 0 and training and l < self.num_layers - 1 then
      x = layer_dropout(x, self.dropout, self.batch_first and not bs)
    end
  end
  return x, torch.stack(hn, 1), cx and torch.stack(cn, 1)
end

-- The per-step slices of a packed sequence's projection: through the padded time-major layout
-- (one gather, one unbind), each step narrowed to its batch size.
local function packed_steps(bs, B)
  local T = #bs
  -- idx[t * B + b] = the packed row of (t, b), or N + 1 (a zero row) for padding
  local idx, pos, N = {}, 0, 0
  for t = 1, T do N = N + bs[t] end
  for t = 1, T do
    for b = 1, B do
      if b <= bs[t] then pos = pos + 1; idx[#idx + 1] = pos else idx[#idx + 1] = N + 1 end
    end
  end
  local index = torch.tensor(idx, { dtype = torch.int64 })
  return {
    steps = function(proj)
      local G = proj:size(2)
      local padded = torch.cat({ proj, torch.zeros({ 1, G }, { dtype = proj.dtype, device = proj.device }) }, 1)
      local full = padded:index_select(1, index):view(T, B, G)
      local steps = full:unbind(1)
      for t = 1, T do
        if bs[t] < B then steps[t] = steps[t]:narrow(1, 1, bs[t]) end
      end
      return steps
    end,
  }
end

local function rnn_forward(self, input, hx)
  local name, mode = self._name, self.mode
  local is_lstm = mode == 'LSTM'
  local dirs = self.bidirectional and 2 or 1
  local real_hidden = self.proj_size > 0 and self.proj_size or self.hidden_size
  local packed = type(input) == 'table' and torch.isinstance(input, PackedSequence)
  local bs, pack, sorted, unsorted, x, batched, B
  if packed then
    x = input.data
    bs = input.batch_sizes:tolist()
    B = bs[1]
    sorted, unsorted = input.sorted_indices, input.unsorted_indices
    pack = packed_steps(bs, B)
    batched = true
  else
    if not torch.is_tensor(input) then fail(name, 'expected a tensor or a PackedSequence as input, got ' .. core.typeof(input)) end
    x = input
    batched = x:dim() == 3
    local bdim = self.batch_first and 1 or 2
    if not batched then x = x:unsqueeze(bdim) end
  end
  -- the initial state
  local h0, c0
  if hx ~= nil then
    if is_lstm then
      if type(hx) ~= 'table' or torch.is_tensor(hx) or not torch.is_tensor(hx[1]) or not torch.is_tensor(hx[2]) then
        fail(name, 'expected hx to be a table {h_0, c_0} of two tensors')
      end
      h0, c0 = hx[1], hx[2]
    else
      if not torch.is_tensor(hx) then fail(name, 'expected hx to be a tensor, got ' .. core.typeof(hx)) end
      h0 = hx
    end
    if not packed then
      if not batched then
        if h0:dim() ~= 2 or (c0 and c0:dim() ~= 2) then
          if is_lstm then
            fail(name, ('For unbatched 2-D input, hx and cx should also be 2-D but got (%d-D, %d-D) tensors')
              :format(h0:dim(), c0:dim()))
          end
          fail(name, ('For unbatched 2-D input, hx should also be 2-D but got %d-D tensor'):format(h0:dim()))
        end
        h0 = h0:unsqueeze(2)
        c0 = c0 and c0:unsqueeze(2)
      else
        if h0:dim() ~= 3 or (c0 and c0:dim() ~= 3) then
          if is_lstm then
            fail(name, ('For batched 3-D input, hx and cx should also be 3-D but got (%d-D, %d-D) tensors')
              :format(h0:dim(), c0:dim()))
          end
          fail(name, ('For batched 3-D input, hx should also be 3-D but got %d-D tensor'):format(h0:dim()))
        end
      end
    elseif sorted then
      h0 = h0:index_select(2, sorted)
      c0 = c0 and c0:index_select(2, sorted)
    end
  end
  -- the checks of PyTorch's check_forward_args
  local w0 = self['weight_ih_l0']
  if x.dtype ~= w0.dtype then fail(name, 'mat1 and mat2 must have the same dtype') end
  local want_dim = packed and 2 or 3
  if x:dim() ~= want_dim then fail(name, ('input must have %d dimensions, got %d'):format(want_dim, x:dim())) end
  if x:size(-1) ~= self.input_size then
    fail(name, ('input.size(-1) must be equal to input_size. Expected %d, got %d'):format(self.input_size, x:size(-1)))
  end
  if not packed then B = self.batch_first and x:size(1) or x:size(2) end
  local hsize = { self.num_layers * dirs, B, real_hidden }
  local csize = { self.num_layers * dirs, B, self.hidden_size }
  local opts = { dtype = x.dtype, device = x.device }
  if h0 == nil then
    h0 = torch.zeros(hsize, opts)
    if is_lstm then c0 = torch.zeros(csize, opts) end
  else
    local function same(t, s) return t:dim() == 3 and t:size(1) == s[1] and t:size(2) == s[2] and t:size(3) == s[3] end
    if is_lstm then
      if not same(h0, hsize) then fail(name, ('Expected hidden[0] size %s, got %s'):format(tuple(hsize), list(h0))) end
      if not same(c0, csize) then fail(name, ('Expected hidden[1] size %s, got %s'):format(tuple(csize), list(c0))) end
    elseif not same(h0, hsize) then
      fail(name, ('Expected hidden size %s, got %s'):format(tuple(hsize), list(h0)))
    end
  end
  local out, hn, cn = self:_run(x, h0, c0, bs, pack)
  if packed then
    out = PackedSequence(out, input.batch_sizes, sorted, unsorted)
    if unsorted then
      hn = hn:index_select(2, unsorted)
      cn = cn and cn:index_select(2, unsorted)
    end
  elseif not batched then
    out = out:squeeze(self.batch_first and 1 or 2)
    hn = hn:squeeze(2)
    cn = cn and cn:squeeze(2)
  end
  if is_lstm then return out, { hn, cn } end
  return out, hn
end
-- issue 25: under autocast, LSTM and GRU run as PyTorch's fused ops do there: nothing inside them is
-- cast (their result keeps the input's dtype); the plain RNN's steps are addmm, which autocast casts
local function amp_exempt(f, ...)
  local ac = core.autocast -- lua/amp/autocast.lua, once loaded (never by package.loaded: a test
  -- runner may forget that entry while torch.autocast, loaded before, still runs scopes)
  if ac then return ac.exempt(f, ...) end
  return f(...)
end
function RNNBase:forward(input, hx)
  if self.mode ~= 'LSTM' and self.mode ~= 'GRU' then return rnn_forward(self, input, hx) end
  return amp_exempt(rnn_forward, self, input, hx)
end
declare_forward(RNNBase, { 'input', 'hx' }, { nreq = 1 })

local function layer_class(cname, mode)
  local cls = class.class('nn.' .. cname, RNNBase)
  M[cname] = cls
  return cls
end

-- nn.RNN(input_size, hidden_size, [num_layers, nonlinearity, bias, batch_first, dropout,
-- bidirectional,] [opts]); nonlinearity 'tanh' (the default) or 'relu'
local RNN = layer_class('RNN')
function RNN:__init(input_size, hidden_size, ...)
  local n = select('#', ...)
  local pos, opts = { ... }, nil
  if n > 0 and type(pos[n]) == 'table' and not torch.is_tensor(pos[n]) then opts = pos[n]; pos[n] = nil end
  opts = opts or {}
  local nl = pos[2]
  if nl == nil then nl = opts.nonlinearity end
  nl = nl or 'tanh'
  local mode
  if nl == 'tanh' then mode = 'RNN_TANH' elseif nl == 'relu' then mode = 'RNN_RELU'
  else fail('nn.RNN', ("Unknown nonlinearity '%s'"):format(tostring(nl))) end
  if opts.proj_size and opts.proj_size ~= 0 then
    fail('nn.RNN', 'proj_size argument is only supported for LSTM, not RNN or GRU')
  end
  -- PyTorch's RNN takes (num_layers, nonlinearity, bias, batch_first, dropout, bidirectional)
  local o = {
    num_layers = pos[1] or opts.num_layers, bias = pos[3], batch_first = pos[4], dropout = pos[5],
    bidirectional = pos[6], device = opts.device, dtype = opts.dtype,
  }
  if o.bias == nil then o.bias = opts.bias end
  if o.batch_first == nil then o.batch_first = opts.batch_first end
  if o.dropout == nil then o.dropout = opts.dropout end
  if o.bidirectional == nil then o.bidirectional = opts.bidirectional end
  self.nonlinearity = nl
  RNNBase.__init(self, 'nn.RNN', mode, input_size, hidden_size, o)
end

local LSTM = layer_class('LSTM')
function LSTM:__init(input_size, hidden_size, ...) RNNBase.__init(self, 'nn.LSTM', 'LSTM', input_size, hidden_size, ...) end

local GRU = layer_class('GRU')
function GRU:__init(input_size, hidden_size, ...)
  local n = select('#', ...)
  local last = select(n > 0 and n or 1, ...)
  if type(last) == 'table' and not torch.is_tensor(last) and last.proj_size and last.proj_size ~= 0 then
    fail('nn.GRU', 'proj_size argument is only supported for LSTM, not RNN or GRU')
  end
  RNNBase.__init(self, 'nn.GRU', 'GRU', input_size, hidden_size, ...)
end

------------------------------------------------------------------------------ the cells
local RNNCellBase = class.class('nn.RNNCellBase', Module)
M.RNNCellBase = RNNCellBase

function RNNCellBase:__init(name, gates, input_size, hidden_size, bias, opts)
  Module.__init(self)
  if type(name) ~= 'string' then
    fail('nn.RNNCellBase', 'expected the name of the cell (use nn.RNNCell, nn.LSTMCell or nn.GRUCell), got ' .. core.typeof(name))
  end
  if type(bias) == 'table' and not torch.is_tensor(bias) then opts, bias = bias, bias.bias end
  if bias == nil then bias = true end
  check_int(name, 'input_size', input_size, 0)
  check_int(name, 'hidden_size', hidden_size, 0)
  local fk = factory(opts)
  self._name = name
  self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias and true or false
  self.weight_ih = Parameter(empty({ gates * hidden_size, input_size }, fk))
  self.weight_hh = Parameter(empty({ gates * hidden_size, hidden_size }, fk))
  if self.bias then
    self.bias_ih = Parameter(empty({ gates * hidden_size }, fk))
    self.bias_hh = Parameter(empty({ gates * hidden_size }, fk))
  else
    self:register_parameter('bias_ih', nil)
    self:register_parameter('bias_hh', nil)
  end
  if not skipping() then self:reset_parameters() end
end
RNNCellBase.reset_parameters = RNNBase.reset_parameters

function RNNCellBase:extra_repr()
  local s = ('%d, %d'):format(self.input_size, self.hidden_size)
  if self.bias ~= true then s = s .. ', bias=' .. pybool(self.bias) end
  if self.nonlinearity and self.nonlinearity ~= 'tanh' then s = s .. ', nonlinearity=' .. self.nonlinearity end
  return s
end

-- the checks of PyTorch's cells (check_rnn_cell_forward_input / _hidden); input [B, in] or [in]
function RNNCellBase:_input(input)
  local name = self._name
  if not torch.is_tensor(input) then fail(name, 'expected a tensor as input, got ' .. core.typeof(input)) end
  local nd = input:dim()
  if nd ~= 1 and nd ~= 2 then
    fail(name, ('%s: Expected input to be 1-D or 2-D but received %d-D tensor'):format(name:gsub('^nn%.', ''), nd))
  end
  if input:size(-1) ~= self.input_size then
    fail(name, ('input has inconsistent input_size: got %d expected %d'):format(input:size(-1), self.input_size))
  end
  if input.dtype ~= self.weight_ih.dtype then fail(name, 'mat1 and mat2 must have the same dtype') end
  return nd == 2 and input or input:unsqueeze(1), nd == 2
end

function RNNCellBase:_hidden(h, x, batched, k, size)
  local name = self._name
  if not torch.is_tensor(h) then fail(name, 'expected a tensor as hidden state, got ' .. core.typeof(h)) end
  if not batched then h = h:unsqueeze(1) end
  if h:dim() ~= 2 or h:size(1) ~= x:size(1) then
    fail(name, ("Input batch size %d doesn't match hidden%d batch size %d"):format(x:size(1), k, h:size(1)))
  end
  if h:size(2) ~= size then
    fail(name, ('hidden%d has inconsistent hidden_size: got %d, expected %d'):format(k, h:size(2), size))
  end
  return h
end

local function zeros_state(x, H) return torch.zeros({ x:size(1), H }, { dtype = x.dtype, device = x.device }) end

local RNNCell = class.class('nn.RNNCell', RNNCellBase)
M.RNNCell = RNNCell
-- nn.RNNCell(input_size, hidden_size, bias=true, nonlinearity='tanh', {device=, dtype=})
function RNNCell:__init(input_size, hidden_size, bias, nonlinearity, opts)
  if type(bias) == 'table' and not torch.is_tensor(bias) then opts, bias, nonlinearity = bias, bias.bias, bias.nonlinearity end
  if type(nonlinearity) == 'table' then opts, nonlinearity = nonlinearity, nonlinearity.nonlinearity end
  nonlinearity = nonlinearity or 'tanh'
  if nonlinearity ~= 'tanh' and nonlinearity ~= 'relu' then
    fail('nn.RNNCell', ('Unknown nonlinearity: %s'):format(tostring(nonlinearity)))
  end
  self.nonlinearity = nonlinearity
  RNNCellBase.__init(self, 'nn.RNNCell', 1, input_size, hidden_size, bias, opts)
end
function RNNCell:forward(input, hx)
  local x, batched = self:_input(input)
  local h = hx == nil and zeros_state(x, self.hidden_size) or self:_hidden(hx, x, batched, 0, self.hidden_size)
  local pre = self.bias_ih and torch.addmm(self.bias_ih, x, self.weight_ih:t()) or x:mm(self.weight_ih:t())
  pre = pre + (self.bias_hh and torch.addmm(self.bias_hh, h, self.weight_hh:t()) or h:mm(self.weight_hh:t()))
  local r = self.nonlinearity == 'relu' and pre:relu() or pre:tanh()
  return batched and r or r:squeeze(1)
end
declare_forward(RNNCell, { 'input', 'hx' }, { nreq = 1 })

local LSTMCell = class.class('nn.LSTMCell', RNNCellBase)
M.LSTMCell = LSTMCell
function LSTMCell:__init(input_size, hidden_size, bias, opts)
  RNNCellBase.__init(self, 'nn.LSTMCell', 4, input_size, hidden_size, bias, opts)
end
-- cell(input, {h, c}) -> h, c
local function lstmcell_forward(self, input, hx)
  local x, batched = self:_input(input)
  local h, c
  if hx == nil then
    h, c = zeros_state(x, self.hidden_size), zeros_state(x, self.hidden_size)
  else
    if type(hx) ~= 'table' or torch.is_tensor(hx) then fail(self._name, 'expected hx to be a table {h_0, c_0} of two tensors') end
    h = self:_hidden(hx[1], x, batched, 0, self.hidden_size)
    c = self:_hidden(hx[2], x, batched, 1, self.hidden_size)
  end
  local hy, cy = torch.lstm_cell_pointwise(x:mm(self.weight_ih:t()), h:mm(self.weight_hh:t()), c, self.bias_ih,
    self.bias_hh)
  if not batched then return hy:squeeze(1), cy:squeeze(1) end
  return hy, cy
end
function LSTMCell:forward(input, hx) return amp_exempt(lstmcell_forward, self, input, hx) end
declare_forward(LSTMCell, { 'input', 'hx' }, { nreq = 1 })

local GRUCell = class.class('nn.GRUCell', RNNCellBase)
M.GRUCell = GRUCell
function GRUCell:__init(input_size, hidden_size, bias, opts)
  RNNCellBase.__init(self, 'nn.GRUCell', 3, input_size, hidden_size, bias, opts)
end
local function grucell_forward(self, input, hx)
  local x, batched = self:_input(input)
  local h = hx == nil and zeros_state(x, self.hidden_size) or self:_hidden(hx, x, batched, 0, self.hidden_size)
  local hy = torch.gru_cell_pointwise(x:mm(self.weight_ih:t()), h:mm(self.weight_hh:t()), h, self.bias_ih, self.bias_hh)
  return batched and hy or hy:squeeze(1)
end
function GRUCell:forward(input, hx) return amp_exempt(grucell_forward, self, input, hx) end
declare_forward(GRUCell, { 'input', 'hx' }, { nreq = 1 })

function M.install(n)
  nn = n
  for _, k in ipairs({ 'RNNBase', 'RNN', 'LSTM', 'GRU', 'RNNCellBase', 'RNNCell', 'LSTMCell', 'GRUCell' }) do nn[k] = M[k] end
  local U = require 'moontorch.nn.utils_rnn'
  PackedSequence = U.PackedSequence
  nn.utils.rnn = U
end

return M
