-- Sparse CSR matrices (issue 24, what a pruned Linear keeps): PyTorch's layout torch.sparse_csr
-- for 2-D matrices, as a Lua object holding three tensors: crow_indices (m + 1), col_indices and
-- values (nnz). Positions count from 1 as everywhere in moontorch: col_indices are 1-based
-- columns and crow_indices 1-based positions in values (row i's entries are
-- values[crow[i] .. crow[i + 1] - 1]; crow[1] = 1, crow[m + 1] = nnz + 1); PyTorch's are 0-based.
--
--   local w = t:to_sparse_csr()                -- t a 2-D tensor; its zeros left out
--   torch.sparse.mm(w, d)                      -- w @ d, d dense (a C op: core/ops/sparse.c)
--   F.linear(x, w, b)                          -- x @ w^T + b, skipping the zeros
--   w:to_dense(), w:values(), w:crow_indices(), w:col_indices(), w:_nnz(), w:size(), w.shape
--   torch.sparse_csr_tensor(crow, col, values, size)
--
-- Gradients reach values and the dense operand (the pattern is fixed): a CSR weight trains.
local torch -- set by install()
local core = require 'moontorch.ffi'
local class = require 'moontorch.class'
local T = require 'moontorch.tensor'
local format = require 'moontorch.format'

local C = core.C
local raise_last, fail = core.raise_last, core.fail
local is_tensor, take, outp = T.is_tensor, T.take, T.outp
local methods = T.methods

local M = {}

local CSR = class.class('torch.SparseCsrTensor')
M.SparseCsrTensor = CSR
local function is_csr(x) return getmetatable(x) == CSR end
M.is_csr = is_csr

local function i64(t) return t.dtype == torch.int64 and t or t:to(torch.int64) end

-- torch.sparse_csr_tensor(crow_indices, col_indices, values, size, {dtype=, requires_grad=})
function M.sparse_csr_tensor(crow, col, values, size, opts)
  local op = 'sparse_csr_tensor'
  if type(size) == 'table' and not is_tensor(size) and size[1] == nil then size, opts = nil, size end
  if not is_tensor(crow) then crow = torch.tensor(crow, { dtype = torch.int64 }) end
  if not is_tensor(col) then col = torch.tensor(col, { dtype = torch.int64 }) end
  if not is_tensor(values) then values = torch.tensor(values, opts and opts.dtype and { dtype = opts.dtype } or nil) end
  if opts and opts.dtype then values = values:to(opts.dtype) end
  if crow:dim() ~= 1 or col:dim() ~= 1 or values:dim() ~= 1 then
    fail(op, 'crow_indices, col_indices and values must be 1-D tensors')
  end
  if col:numel() ~= values:numel() then
    fail(op, ('col_indices and values must have the same number of elements, but got %d and %d'):format(col:numel(),
      values:numel()))
  end
  crow, col = i64(crow), i64(col)
  local m = crow:numel() - 1
  if m < 0 then fail(op, 'crow_indices must have at least one element') end
  local ncols
  if size ~= nil then
    if #size ~= 2 then fail(op, ('size must have 2 elements, got %d'):format(#size)) end
    if size[1] ~= m then
      fail(op, ('crow_indices has %d elements, expected size[1] + 1 = %d'):format(crow:numel(), size[1] + 1))
    end
    ncols = size[2]
  else
    ncols = col:numel() > 0 and col:max():item() or 0
  end
  local t = setmetatable({ _crow = crow, _col = col, _values = values, _size = { m, ncols } }, CSR)
  if opts and opts.requires_grad then values:requires_grad_(true) end
  return t
end

function CSR:crow_indices() return self._crow end
function CSR:col_indices() return self._col end
function CSR:values() return self._values end
function CSR:_nnz() return self._col:numel() end
function CSR:dim() return 2 end
function CSR:size(d)
  local s = setmetatable({ self._size[1], self._size[2] }, T.Size)
  if d == nil then return s end
  if d < 0 then d = d + 3 end
  if d ~= 1 and d ~= 2 then fail('size', ('dimension %d out of range (the tensor has 2 dimensions)'):format(d)) end
  return s[d]
end
function CSR:numel() return self._size[1] * self._size[2] end
function CSR:is_sparse_csr() return true end
-- the fields a tensor has: shape, dtype, device, layout, requires_grad, grad_fn, is_sparse_csr
local props = {
  shape = function(s) return s:size() end,
  dtype = function(s) return s._values.dtype end,
  device = function(s) return s._values.device end,
  layout = function() return 'torch.sparse_csr' end,
  requires_grad = function(s) return s._values.requires_grad end,
  grad_fn = function(s) return s._values.grad_fn end,
  is_meta = function(s) return s._values.is_meta end,
  ndim = function() return 2 end,
}
CSR.__index = function(s, k)
  local p = props[k]
  if p then return p(s) end
  return CSR[k]
end

-- the row of each entry (1-based), for to_dense
-- (entry p's row is the number of rows that start at or before p)
local function entry_rows(s)
  local nnz, m = s:_nnz(), s._size[1]
  local starts = torch.zeros(nnz + 1, { dtype = torch.int64, device = s._crow.device })
  starts:index_add_(1, s._crow:narrow(1, 1, m), torch.ones(m, { dtype = torch.int64, device = s._crow.device }))
  return starts:cumsum(1):narrow(1, 1, nnz)
end

function CSR:to_dense()
  local d = torch.zeros(self._size[1], self._size[2], { dtype = self._values.dtype, device = self._values.device })
  if self:_nnz() == 0 then return d end
  return d:index_put({ entry_rows(self), self._col }, self._values)
end

function CSR:to(...)
  local v = self._values:to(...)
  if rawequal(v, self._values) then return self end
  return setmetatable({ _crow = self._crow:to(v.device), _col = self._col:to(v.device), _values = v,
    _size = { self._size[1], self._size[2] } }, CSR)
end
function CSR:detach()
  return setmetatable({ _crow = self._crow, _col = self._col, _values = self._values:detach(),
    _size = { self._size[1], self._size[2] } }, CSR)
end
function CSR:requires_grad_(b)
  self._values:requires_grad_(b)
  return self
end
-- t() / transpose: the dense transpose is what PyTorch's CSR t() gives back as CSR; here a dense
-- matrix, as few callers need it
function CSR:t() return self:to_dense():t() end

-- w:matmul(d), torch.sparse.mm(w, d): w @ d for d a dense 2-D tensor (a 1-D d: a vector)
local function sp_mm(w, d)
  if not is_csr(w) then fail('sparse.mm', 'expected a sparse CSR matrix as the first argument') end
  if not is_tensor(d) then fail('sparse.mm', 'expected a dense tensor as the second argument, got ' .. core.typeof(d)) end
  local vec = d:dim() == 1
  if vec then d = d:unsqueeze(2) end
  if C.mt_csr_mm(w._crow, w._col, w._values, d, w._size[2], 0, 1, outp) ~= 0 then raise_last() end
  local r = take()
  return vec and r:squeeze(2) or r
end
M.mm = sp_mm
CSR.mm, CSR.matmul = sp_mm, sp_mm

-- linear(x, w, b): x @ w^T (+ b) for a CSR weight w (out, in) and x (..., in)
function M.linear(x, w, b)
  if not is_tensor(x) then fail('linear', 'expected a tensor as input, got ' .. core.typeof(x)) end
  local lead = x:size()
  local k = lead[#lead]
  local x2 = x:dim() == 2 and x or x:reshape(-1, k)
  if C.mt_csr_mm(w._crow, w._col, w._values, x2, w._size[2], 1, 1, outp) ~= 0 then raise_last() end
  local y = take()
  if b ~= nil then y = y + b end
  if x:dim() ~= 2 then
    lead[#lead] = w._size[1]
    y = y:reshape(lead)
  end
  return y
end

-- t:to_sparse_csr(): a 2-D tensor's nonzeros in CSR form (values follow t for autograd)
function methods.to_sparse_csr(t)
  if not is_tensor(t) then fail('to_sparse_csr', 'expected a tensor') end
  if t:dim() ~= 2 then fail('to_sparse_csr', ('only 2-D tensors can be converted to the SparseCsr layout, got %d dims')
    :format(t:dim())) end
  local nz = t:ne(0)
  local counts = nz:sum(2):to(torch.int64)
  local crow = torch.cat({ torch.ones(1, { dtype = torch.int64 }), counts:cumsum(1) + 1 })
  local idx = nz:nonzero()
  local col = idx:numel() > 0 and idx:select(2, 2):contiguous() or torch.empty(0, { dtype = torch.int64 })
  local values = t:masked_select(nz)
  return setmetatable({ _crow = crow, _col = col, _values = values, _size = { t:size(1), t:size(2) } }, CSR)
end

-- printing, as PyTorch's (its 0-based indices are ours 1-based)
CSR.__tostring = function(s)
  local indent = #'tensor('
  local function part(prefix, t)
    local body = format.tensor_str(t, indent + #prefix)
    if t:numel() == 0 then body = body .. ', size=(' .. t:numel() .. ',)' end
    return prefix .. body .. ')'
  end
  local body = part('crow_indices=tensor(', s._crow) .. ',\n' .. (' '):rep(indent) ..
    part('col_indices=tensor(', s._col) .. ',\n' .. (' '):rep(indent) ..
    part('values=tensor(', s._values:detach())
  local suffixes = { ('size=(%d, %d)'):format(s._size[1], s._size[2]), 'nnz=' .. s:_nnz() }
  if s._values.dtype ~= torch.get_default_dtype() then suffixes[#suffixes + 1] = 'dtype=' .. tostring(s._values.dtype) end
  suffixes[#suffixes + 1] = 'layout=torch.sparse_csr'
  local g = s._values.grad_fn
  if g ~= nil then suffixes[#suffixes + 1] = 'grad_fn=<' .. format.grad_fn_name(g) .. '>'
  elseif s._values.requires_grad then suffixes[#suffixes + 1] = 'requires_grad=True' end
  return format.add_suffixes('tensor(' .. body, suffixes, indent)
end

function M.install(tt)
  torch = tt
  torch.sparse = torch.sparse or {}
  torch.sparse.mm = sp_mm
  torch.sparse.linear = M.linear
  torch.sparse.SparseCsrTensor = CSR
  torch.sparse.is_csr = is_csr
  torch.sparse_csr_tensor = M.sparse_csr_tensor
  torch.sparse_csr = 'torch.sparse_csr'
  torch.strided = torch.strided or 'torch.strided'
end

return M
