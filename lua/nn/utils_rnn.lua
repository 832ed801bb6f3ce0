-- nn.utils.rnn: PackedSequence, pack_padded_sequence, pad_packed_sequence, pad_sequence,
-- pack_sequence, as PyTorch 1.13's torch.nn.utils.rnn. A PackedSequence holds the time steps of
-- a batch of sequences one after the other (step t: the first batch_sizes[t] sequences, longest
-- first); the recurrent layers (lua/nn/rnn.lua) take one and return one. sorted_indices and
-- unsorted_indices are positions, so 1-based as every index tensor in moontorch; batch_sizes are
-- counts (an int64 CPU tensor). Packing and padding are one gather each (index_select), so
-- autograd follows them at the cost of one node.
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'

local fail = core.fail
local type, ipairs, tostring = type, ipairs, tostring

local M = {}

------------------------------------------------------------------------------ PackedSequence
local PackedSequence = class.class('nn.utils.rnn.PackedSequence')
M.PackedSequence = PackedSequence

-- PackedSequence(data, batch_sizes, sorted_indices, unsorted_indices): unsorted_indices are
-- worked out from sorted_indices when not given
function PackedSequence:__init(data, batch_sizes, sorted_indices, unsorted_indices)
  if not torch.is_tensor(data) then fail('PackedSequence', 'expected a tensor as data, got ' .. core.typeof(data)) end
  if not torch.is_tensor(batch_sizes) then
    fail('PackedSequence', 'expected a tensor as batch_sizes, got ' .. core.typeof(batch_sizes))
  end
  if unsorted_indices == nil and sorted_indices ~= nil then unsorted_indices = M.invert_permutation(sorted_indices) end
  self.data, self.batch_sizes = data, batch_sizes
  self.sorted_indices, self.unsorted_indices = sorted_indices, unsorted_indices
end

function PackedSequence:__tostring()
  local function s(t) return t == nil and 'None' or tostring(t) end
  return ('PackedSequence(data=%s, batch_sizes=%s, sorted_indices=%s, unsorted_indices=%s)'):format(s(self.data),
    s(self.batch_sizes), s(self.sorted_indices), s(self.unsorted_indices))
end

-- the same sequence with its data converted (t:to's arguments); the indices stay
function PackedSequence:to(...)
  local d = self.data:to(...)
  if rawequal(d, self.data) then return self end
  return PackedSequence(d, self.batch_sizes, self.sorted_indices, self.unsorted_indices)
end
function PackedSequence:is_pinned() return false end

-- the inverse of a permutation of 1..n (nil for nil)
function M.invert_permutation(p)
  if p == nil then return nil end
  local out = torch.empty_like(p)
  out:scatter_(1, p, torch.arange(1, p:numel() + 1, { dtype = p.dtype }))
  return out
end

-- lengths as a Lua array of numbers (a tensor or a Lua array)
local function lengths_list(lengths, op)
  if torch.is_tensor(lengths) then
    if lengths:dim() ~= 1 then fail(op, 'expected lengths to be a 1-D tensor, got ' .. lengths:dim() .. '-D') end
    return lengths:to(torch.int64):tolist()
  end
  if type(lengths) ~= 'table' then fail(op, 'expected lengths to be a tensor or a list of numbers, got ' .. core.typeof(lengths)) end
  local r = {}
  for i, v in ipairs(lengths) do
    if type(v) ~= 'number' then fail(op, ('expected lengths[%d] to be a number, got %s'):format(i, type(v))) end
    r[i] = v
  end
  return r
end

------------------------------------------------------------------------------ packing
-- pack_padded_sequence(input, lengths, batch_first=false, enforce_sorted=true) (positionally or
-- as options): input [T, B, *] ([B, T, *] when batch_first)
function M.pack_padded_sequence(input, lengths, batch_first, enforce_sorted)
  local op = 'nn.utils.rnn.pack_padded_sequence'
  if type(batch_first) == 'table' then batch_first, enforce_sorted = batch_first.batch_first, batch_first.enforce_sorted end
  if type(enforce_sorted) == 'table' then enforce_sorted = enforce_sorted.enforce_sorted end
  batch_first = batch_first == true
  if enforce_sorted == nil then enforce_sorted = true end
  if not torch.is_tensor(input) then fail(op, 'expected a tensor as input, got ' .. core.typeof(input)) end
  if input:dim() < 2 then fail(op, 'expected input of at least 2 dimensions, got ' .. input:dim()) end
  local lens = lengths_list(lengths, op)
  local sorted_indices
  if enforce_sorted then
    for i = 2, #lens do
      if lens[i] > lens[i - 1] then
        fail(op, '`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass '
          .. '`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if '
          .. 'you do not need ONNX exportability.')
      end
    end
  else
    local lt = torch.tensor(lens, { dtype = torch.int64 })
    local sorted_lens
    sorted_lens, sorted_indices = torch.sort(lt, { descending = true })
    lens = sorted_lens:tolist()
    input = input:index_select(batch_first and 1 or 2, sorted_indices)
  end
  if batch_first then input = input:transpose(1, 2) end
  local T, B = input:size(1), input:size(2)
  if #lens ~= B then fail(op, ('Expected `len(lengths)` to be equal to batch_size, but got %d (batch_size=%d)'):format(#lens, B)) end
  for _, l in ipairs(lens) do
    if l <= 0 then
      fail(op, "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0")
    end
    if l > T then fail(op, ('Expected every length to be at most the sequence length %d, got %d'):format(T, l)) end
  end
  -- batch_sizes[t]: how many sequences are longer than t; the rows (t, b) in time-major order
  local bs, idx = {}, {}
  for t = 1, T do
    local n = 0
    for b = 1, B do
      if lens[b] >= t then n = n + 1; idx[#idx + 1] = (t - 1) * B + b end
    end
    if n == 0 then break end
    bs[t] = n
  end
  local rest = input:size()
  table.remove(rest, 1)
  rest[1] = T * B
  local data = input:reshape(rest):index_select(1, torch.tensor(idx, { dtype = torch.int64 }))
  return PackedSequence(data, torch.tensor(bs, { dtype = torch.int64 }), sorted_indices, nil)
end

-- pad_packed_sequence(sequence, batch_first=false, padding_value=0, total_length=nil) -> padded,
-- lengths (int64, in the original order of the batch)
function M.pad_packed_sequence(sequence, batch_first, padding_value, total_length)
  local op = 'nn.utils.rnn.pad_packed_sequence'
  if type(batch_first) == 'table' then
    batch_first, padding_value, total_length = batch_first.batch_first, batch_first.padding_value,
      batch_first.total_length
  end
  if type(sequence) ~= 'table' or not torch.isinstance(sequence, PackedSequence) then
    fail(op, 'expected a PackedSequence, got ' .. (class.typename(sequence) or type(sequence)))
  end
  batch_first = batch_first == true
  padding_value = padding_value or 0
  local bs = sequence.batch_sizes:tolist()
  local T, B = #bs, bs[1] or 0
  if total_length ~= nil then
    if total_length < T then
      fail(op, ('Expected total_length to be at least the length of the longest sequence in input, but got '
        .. 'total_length=%d and max sequence length being %d'):format(total_length, T))
    end
  else
    total_length = T
  end
  local data = sequence.data
  local N = data:size(1)
  -- idx[(t, b)] = the packed row of (t, b), or N + 1 (the padding row)
  local idx, lens, pos = {}, {}, 0
  for b = 1, B do lens[b] = 0 end
  local rows = batch_first and B or total_length
  local cols = batch_first and total_length or B
  for i = 1, rows * cols do idx[i] = N + 1 end
  for t = 1, T do
    for b = 1, bs[t] do
      pos = pos + 1
      lens[b] = t
      if batch_first then idx[(b - 1) * total_length + t] = pos else idx[(t - 1) * B + b] = pos end
    end
  end
  local rest = data:size()
  rest[1] = 1
  local pad = torch.full(rest, padding_value, { dtype = data.dtype, device = data.device })
  local out = torch.cat({ data, pad }, 1):index_select(1, torch.tensor(idx, { dtype = torch.int64 }))
  local shape = data:size()
  table.remove(shape, 1)
  table.insert(shape, 1, cols)
  table.insert(shape, 1, rows)
  out = out:view(shape)
  local lengths = torch.tensor(lens, { dtype = torch.int64 })
  if sequence.unsorted_indices ~= nil then
    out = out:index_select(batch_first and 1 or 2, sequence.unsorted_indices)
    lengths = lengths:index_select(1, sequence.unsorted_indices)
  end
  return out, lengths
end

-- pad_sequence(sequences, batch_first=false, padding_value=0): a list of [L_i, *] tensors to
-- [max L, B, *] ([B, max L, *] when batch_first)
function M.pad_sequence(sequences, batch_first, padding_value)
  local op = 'nn.utils.rnn.pad_sequence'
  if type(batch_first) == 'table' then batch_first, padding_value = batch_first.batch_first, batch_first.padding_value end
  batch_first = batch_first == true
  padding_value = padding_value or 0
  if torch.is_tensor(sequences) then sequences = sequences:unbind(1) end
  if type(sequences) ~= 'table' or #sequences == 0 then fail(op, 'received an empty list of sequences') end
  local maxlen = 0
  for i, s in ipairs(sequences) do
    if not torch.is_tensor(s) then fail(op, ('expected a tensor at position %d, got %s'):format(i, type(s))) end
    if s:dim() == 0 then fail(op, 'expected every sequence to have at least one dimension') end
    if s:size(1) > maxlen then maxlen = s:size(1) end
  end
  local parts = {}
  for i, s in ipairs(sequences) do
    local L = s:size(1)
    if L < maxlen then
      local sz = s:size()
      sz[1] = maxlen - L
      s = torch.cat({ s, torch.full(sz, padding_value, { dtype = s.dtype, device = s.device }) }, 1)
    end
    parts[i] = s
  end
  return torch.stack(parts, batch_first and 1 or 2)
end

-- pack_sequence(sequences, enforce_sorted=true)
function M.pack_sequence(sequences, enforce_sorted)
  if type(enforce_sorted) == 'table' then enforce_sorted = enforce_sorted.enforce_sorted end
  if enforce_sorted == nil then enforce_sorted = true end
  if type(sequences) ~= 'table' then
    fail('nn.utils.rnn.pack_sequence', 'expected a list of tensors, got ' .. core.typeof(sequences))
  end
  local lens = {}
  for i, s in ipairs(sequences) do
    if not torch.is_tensor(s) then
      fail('nn.utils.rnn.pack_sequence', ('expected a tensor at position %d, got %s'):format(i, type(s)))
    end
    lens[i] = s:size(1)
  end
  return M.pack_padded_sequence(M.pad_sequence(sequences), lens, false, enforce_sorted)
end

return M
