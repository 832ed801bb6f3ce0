-- The recurrent layers' ops (core/ops/rnn.c): one time step's gate arithmetic after its two
-- products, torch.lstm_cell_pointwise(igates, hgates, cx[, b_ih, b_hh]) -> hy, cy and
-- torch.gru_cell_pointwise(igates, hgates, hx[, b_ih, b_hh]) -> hy (lua/nn/rnn.lua builds LSTM,
-- GRU and their cells on them); and unbind in C, whose one node (UnbindBackward0, as PyTorch's)
-- takes the gradients of all the views, so that a layer's per-step slices of its input projection
-- cost one stack in the backward rather than a tensor of zeros per step.
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local C = core.C
local raise_last, fail = core.raise_last, core.fail
local methods = T.methods
local is_tensor, take, wrap, outp, outp2, cdim = T.is_tensor, T.take, T.wrap, T.outp, T.outp2, T.cdim
local type, tonumber = type, tonumber
local tensor_array = ffi.typeof('mt_tensor *[?]')

local M = {}

local function check_tensor(x, op, what, optional)
  if x == nil and optional then return nil end
  if not is_tensor(x) then fail(op, ('expected a tensor for %s, got %s'):format(what, type(x))) end
  return x
end

local mt_lstm, mt_gru = C.mt_lstm_cell_pointwise, C.mt_gru_cell_pointwise

-- hy, cy of one LSTM step: gates = igates + hgates (+ b_ih) (+ b_hh), PyTorch's order (i, f, g, o)
function M.lstm_cell_pointwise(igates, hgates, cx, b_ih, b_hh)
  if not is_tensor(igates) or not is_tensor(hgates) or not is_tensor(cx) then
    check_tensor(igates, 'lstm_cell_pointwise', 'igates')
    check_tensor(hgates, 'lstm_cell_pointwise', 'hgates')
    check_tensor(cx, 'lstm_cell_pointwise', 'cx')
  end
  check_tensor(b_ih, 'lstm_cell_pointwise', 'b_ih', true)
  check_tensor(b_hh, 'lstm_cell_pointwise', 'b_hh', true)
  if mt_lstm(igates, hgates, cx, b_ih, b_hh, outp, outp2) ~= 0 then raise_last() end
  local c = outp2[0]
  return take(), wrap(c)
end

-- hy of one GRU step (gates in PyTorch's order: reset, update, new)
function M.gru_cell_pointwise(igates, hgates, hx, b_ih, b_hh)
  if not is_tensor(igates) or not is_tensor(hgates) or not is_tensor(hx) then
    check_tensor(igates, 'gru_cell_pointwise', 'igates')
    check_tensor(hgates, 'gru_cell_pointwise', 'hgates')
    check_tensor(hx, 'gru_cell_pointwise', 'hx')
  end
  check_tensor(b_ih, 'gru_cell_pointwise', 'b_ih', true)
  check_tensor(b_hh, 'gru_cell_pointwise', 'b_hh', true)
  if mt_gru(igates, hgates, hx, b_ih, b_hh, outp) ~= 0 then raise_last() end
  return take()
end

-- t:unbind(dim): the views t:select(dim, i) for every i, as a Lua array
local function unbind(t, dim)
  check_tensor(t, 'unbind', 'input')
  local nd = t._ndim
  if nd == 0 then fail('unbind', 'cannot be applied to a 0-dim tensor') end
  dim = dim or 1
  local d = cdim(dim, 'unbind')
  if d < -nd or d >= nd then
    fail('unbind', ('dimension %d out of range (expected to be in range of [%d, %d] without 0)'):format(dim, -nd, nd))
  end
  if d < 0 then d = d + nd end
  local n = tonumber(t._sizes[d])
  T.check_list_len(n, 'unbind')
  local arr = tensor_array(n > 0 and n or 1)
  if C.mt_unbind(t, d, arr) ~= 0 then raise_last() end
  local r = {}
  for i = 1, n do r[i] = wrap(arr[i - 1]) end
  return r
end

-- hs, cs = torch.lstm_layer(igates, h0, c0, w_hh[, reverse]): the LSTM's hidden recurrence over a
-- whole sequence (issue 12, the LSTM's speed): igates [T, B, 4H] (every step's input projection with
-- its biases), h0, c0 [B, H], w_hh [4H, H]; each step hgates = h @ w_hh^T and lstm_cell_pointwise,
-- from the last step when reverse. hs, cs [T, B, H]: every step's states, in time order.
local mt_layer = C.mt_lstm_layer
function M.lstm_layer(igates, h0, c0, w_hh, reverse)
  if not is_tensor(igates) or not is_tensor(h0) or not is_tensor(c0) or not is_tensor(w_hh) then
    check_tensor(igates, 'lstm_layer', 'igates')
    check_tensor(h0, 'lstm_layer', 'h0')
    check_tensor(c0, 'lstm_layer', 'c0')
    check_tensor(w_hh, 'lstm_layer', 'w_hh')
  end
  if mt_layer(igates, h0, c0, w_hh, reverse and 1 or 0, outp, outp2) ~= 0 then raise_last() end
  local c = outp2[0]
  return take(), wrap(c)
end

function M.install(torch)
  torch.lstm_layer = M.lstm_layer
  torch.lstm_cell_pointwise = M.lstm_cell_pointwise
  torch.gru_cell_pointwise = M.gru_cell_pointwise
  methods.unbind = unbind
  torch.unbind = unbind
end

return M
