-- torch.nll_loss(input, target, weight=nil, ignore_index=-100, reduction='mean'): the core's
-- negative log-likelihood (core/ops/loss.c: one kernel each way, grad_fn NllLossBackward0) over
-- an input (C) or (N, C) of log-probabilities and int64 targets of 1-based classes.
-- nn.functional.nll_loss and cross_entropy run it (issue 12, the modules part).
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local C = core.C
local raise_last, fail = core.raise_last, core.fail
local is_tensor, take, outp, is_opts = T.is_tensor, T.take, T.outp, T.is_opts
local type = type

local M = {}
local REDUCTION = { none = 0, mean = 1, sum = 2 }

function M.nll_loss(input, target, weight, ignore_index, reduction)
  if is_opts(weight) then
    local o = weight
    weight, ignore_index, reduction = o.weight, o.ignore_index, o.reduction
  end
  if not is_tensor(input) then fail('nll_loss', 'input must be a tensor (got ' .. core.typeof(input) .. ')') end
  if not is_tensor(target) then fail('nll_loss', 'target must be a tensor (got ' .. core.typeof(target) .. ')') end
  local r = REDUCTION[reduction or 'mean']
  if not r then fail('nll_loss', tostring(reduction) .. ' is not a valid value for reduction') end
  ignore_index = ignore_index or -100
  if type(ignore_index) ~= 'number' or ignore_index % 1 ~= 0 then fail('nll_loss', 'ignore_index must be an integer') end
  if C.mt_nll_loss(input, target, weight, ignore_index, r, 1, outp, nil) ~= 0 then raise_last() end
  return take()
end

-- for nn.functional: the same call, a failure named after `op` (nn.functional.cross_entropy, ...)
local ffi = require 'ffi'
function M.nll_for(op, input, target, weight, ignore_index, reduction)
  if C.mt_nll_loss(input, target, weight, ignore_index, REDUCTION[reduction], 1, outp, nil) ~= 0 then
    local msg = ffi.string(C.mt_last_error()):gsub('^nll_loss: ', '')
    fail(op, msg)
  end
  return take()
end

-- the core's ctc_loss (reduction 'none'): log_probs (T, N, C), targets (N, S) int64 1-based
-- classes, lengths (N) int64, blank 1-based; nn.functional.ctc_loss does the checks first and the
-- reductions after
function M.ctc_raw(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity)
  if C.mt_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity and 1 or 0, 1, outp) ~= 0 then
    local msg = ffi.string(C.mt_last_error()):gsub('^ctc_loss: ', '')
    fail('nn.functional.ctc_loss', msg)
  end
  return take()
end

-- the core's embedding_bag: starts a Lua array of the B + 1 bag boundaries (0-based entry positions)
local MODES = { sum = 0, mean = 1, max = 2 }
local i64
function M.bag_raw(weight, indices, starts, psw, mode, padding_idx, scale_grad_by_freq)
  i64 = i64 or require('moontorch').int64
  local st = require('moontorch').tensor(starts, { dtype = i64, device = weight.device }) -- on the weight's device
  if C.mt_embedding_bag(weight, indices, st, psw, MODES[mode], padding_idx and 1 or 0, padding_idx or 0,
    scale_grad_by_freq and 1 or 0, 1, outp) ~= 0 then
    local msg = ffi.string(C.mt_last_error()):gsub('^embedding_bag: ', '')
    fail('nn.functional.embedding_bag', msg)
  end
  return take()
end

function M.install(torch)
  torch.nll_loss = M.nll_loss
  -- torch.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=1, reduction='mean',
  -- zero_infinity=false): nn.functional.ctc_loss
  torch.ctc_loss = function(...) return require('moontorch.nn').functional.ctc_loss(...) end
  -- torch.embedding_bag(input, weight, offsets, ...): nn.functional.embedding_bag (the bags' result only)
  torch.embedding_bag = function(input, weight, ...) return require('moontorch.nn').functional.embedding_bag(input, weight, ...) end
end

return M
