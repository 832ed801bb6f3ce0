-- Matrix products: mm, bmm, matmul (`a @ b` is a:matmul(b)), mv, dot, vdot, outer/ger, addmm,
-- addmv, baddbmm, addbmm-free. Each is a torch function and a method; `{out=t}` writes into t;
-- addmm_/baddbmm_/addmv_ work in place. The work is in core/tensor/linalg.c.
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local C = core.C
local raise_last, fail = core.raise_last, core.fail
local methods = T.methods
local is_tensor, take, outp = T.is_tensor, T.take, T.outp
local type = type

local M = {}

local function out_of(opts)
  if type(opts) == 'table' and not is_tensor(opts) then return opts.out end
  return nil
end

local function check2(op, a, b)
  if not is_tensor(a) then fail(op, 'expected a tensor as the first argument, got ' .. core.typeof(a)) end
  if not is_tensor(b) then fail(op, 'expected a tensor as the second argument, got ' .. core.typeof(b)) end
end

-- result of a C call that took `out`: the out tensor itself, or the new tensor
local function finish(st, out)
  if st ~= 0 then raise_last() end
  if out ~= nil then
    if outp[0] ~= nil then C.mt_tensor_release(outp[0]) end
    return out
  end
  return take()
end

-- the hot path (64x64 matmul): no table look-ups beyond the upvalues, no varargs
local mt_matmul, mt_mm = C.mt_matmul, C.mt_mm
function M.matmul(a, b, opts)
  if not is_tensor(a) or not is_tensor(b) then check2('matmul', a, b) end
  if opts == nil then
    if mt_matmul(a, b, nil, outp) ~= 0 then raise_last() end
    return take()
  end
  local out = out_of(opts)
  outp[0] = nil
  return finish(mt_matmul(a, b, out, outp), out)
end

function M.mm(a, b, opts)
  if not is_tensor(a) or not is_tensor(b) then check2('mm', a, b) end
  if opts == nil then
    if mt_mm(a, b, nil, outp) ~= 0 then raise_last() end
    return take()
  end
  local out = out_of(opts)
  outp[0] = nil
  return finish(mt_mm(a, b, out, outp), out)
end

function M.bmm(a, b, opts)
  check2('bmm', a, b)
  local out = out_of(opts)
  outp[0] = nil
  return finish(C.mt_bmm(a, b, out, outp), out)
end

function M.mv(a, v, opts)
  check2('mv', a, v)
  local out = out_of(opts)
  outp[0] = nil
  return finish(C.mt_mv(a, v, out, outp), out)
end

function M.dot(a, b)
  check2('dot', a, b)
  if C.mt_dot(a, b, outp) ~= 0 then raise_last() end
  return take()
end

-- vdot: dot with the first argument conjugated; moontorch has no complex dtypes, so it is dot
-- (with vdot's name in messages)
function M.vdot(a, b)
  check2('vdot', a, b)
  if C.mt_dot(a, b, outp) ~= 0 then raise_last() end
  return take()
end

function M.outer(a, b)
  check2('outer', a, b)
  if C.mt_outer(a, b, outp) ~= 0 then raise_last() end
  return take()
end
M.ger = M.outer

-- beta/alpha from the options table (PyTorch's keyword arguments)
local function coefs(op, opts)
  local beta, alpha = 1, 1
  if type(opts) == 'table' and not is_tensor(opts) then
    if opts.beta ~= nil then beta = opts.beta end
    if opts.alpha ~= nil then alpha = opts.alpha end
  elseif opts ~= nil then
    fail(op, 'expected an options table {beta=, alpha=, out=} as the last argument, got ' .. core.typeof(opts))
  end
  if type(beta) ~= 'number' then fail(op, 'beta must be a number, got ' .. core.typeof(beta)) end
  if type(alpha) ~= 'number' then fail(op, 'alpha must be a number, got ' .. core.typeof(alpha)) end
  return beta, alpha
end

local function check3(op, c, a, b)
  if not is_tensor(c) then fail(op, 'expected a tensor as input, got ' .. core.typeof(c)) end
  check2(op, a, b)
end

function M.addmm(c, a, b, opts)
  check3('addmm', c, a, b)
  local beta, alpha = coefs('addmm', opts)
  local out = out_of(opts)
  outp[0] = nil
  return finish(C.mt_addmm(c, a, b, beta, alpha, out, outp), out)
end

function M.baddbmm(c, a, b, opts)
  check3('baddbmm', c, a, b)
  local beta, alpha = coefs('baddbmm', opts)
  local out = out_of(opts)
  outp[0] = nil
  return finish(C.mt_baddbmm(c, a, b, beta, alpha, out, outp), out)
end

-- addmv: beta * c + alpha * (a @ v), composed (not a hot path), recorded as one node named as
-- PyTorch's (AddmvBackward0); with beta 0, c is not read (nor its NaNs), as PyTorch
local function addmv_raw(c, a, v, beta, alpha)
  local r = M.mv(a, v)
  if alpha ~= 1 then r = r:mul(alpha) end
  if beta ~= 0 then
    local cc = beta == 1 and c or c:mul(beta)
    r = cc:add(r)
  end
  return r
end
local addmv_node = require('moontorch.ops.compose').node('AddmvBackward0', addmv_raw, function(g, c, a, v, beta, alpha)
  local ga = alpha == 1 and g or g * alpha
  return beta == 0 and g * 0 or (beta == 1 and g or g * beta), ga:unsqueeze(2) * v:unsqueeze(1), a:t():mv(ga)
end)
function M.addmv(c, a, v, opts)
  check3('addmv', c, a, v)
  local beta, alpha = coefs('addmv', opts)
  local out = out_of(opts)
  local r = addmv_node(c, a, v, beta, alpha)
  if out ~= nil then
    if out:dim() ~= 1 or out:size(1) ~= r:size(1) then
      fail('addmv', ('out has shape %s, expected [%d]'):format(tostring(out:size()), r:size(1)))
    end
    return out:copy_(r)
  end
  return r
end

-- methods: t:matmul(b), t:mm(b), ...; in-place forms write into self
for _, name in ipairs { 'matmul', 'mm', 'bmm', 'mv', 'dot', 'vdot', 'outer', 'ger', 'addmm', 'baddbmm', 'addmv' } do
  methods[name] = M[name]
end

function methods.addmm_(c, a, b, opts)
  check3('addmm_', c, a, b)
  local beta, alpha = coefs('addmm_', opts)
  if C.mt_addmm(c, a, b, beta, alpha, c, nil) ~= 0 then raise_last() end
  return c
end
function methods.baddbmm_(c, a, b, opts)
  check3('baddbmm_', c, a, b)
  local beta, alpha = coefs('baddbmm_', opts)
  if C.mt_baddbmm(c, a, b, beta, alpha, c, nil) ~= 0 then raise_last() end
  return c
end
function methods.addmv_(c, a, v, opts)
  local r = M.addmv(c, a, v, opts)
  return c:copy_(r)
end

function M.install(torch)
  for k, v in pairs(M) do
    if type(v) == 'function' and k ~= 'install' then torch[k] = v end
  end
end

------------------------------------------------------------------------------ composed in Lua
-- kron, inner, cross, cdist/pdist, addr, addbmm, dist, matrix_power, einsum,
-- chain_matmul; torch.linalg: vector/matrix norms, matrix_exp, householder_product; torch.matrix_exp (solve, inv,
-- det, slogdet and the decompositions are LAPACK's: lua/ops/decomp.lua).
-- Written with the ops above, so that autograd, dtypes and devices follow; 1-based dims and
-- positions, options in a trailing table. composed.install(torch) puts them in torch and on the
-- Tensor type where those lack the name (lua/init.lua calls it once every op file is installed).
M.composed = {}
do
  local K = require 'moontorch.ops.compose'
  local composed = M.composed
  local need, pdim, sizes, is_float = K.need, K.pdim, K.sizes, K.is_float
  local type, floor, huge = type, math.floor, math.huge
  local ipairs, pairs, next = ipairs, pairs, next
  local broadcast_tensors = require('moontorch.ops.shape').composed.broadcast_tensors
  local torch -- set by composed.install

  local function kron(a, b)
    need('kron', a) need('kron', b, 'other')
    local nd = math.max(a:dim(), b:dim())
    local as, bs = sizes(a), sizes(b)
    while #as < nd do table.insert(as, 1, 1) end
    while #bs < nd do table.insert(bs, 1, 1) end
    local va, vb, out = {}, {}, {}
    for i = 1, nd do
      va[2 * i - 1], va[2 * i] = as[i], 1
      vb[2 * i - 1], vb[2 * i] = 1, bs[i]
      out[i] = as[i] * bs[i]
    end
    -- (PyTorch's _unsafe_view of the fresh product: UnsafeViewBackward0, a reshape's gradient)
    return T.name_grad_fn((a:reshape(va) * b:reshape(vb)):reshape(out), 'UnsafeViewBackward0')
  end
  local function inner(a, b)
    need('inner', a) need('inner', b, 'other')
    if a:dim() == 0 or b:dim() == 0 then return a * b end
    local K = a:size(-1)
    if b:size(-1) ~= K then
      fail('inner', ('inner() the last dimension must match on both input tensors but got shapes [%s] and [%s]')
        :format(table.concat(sizes(a), ', '), table.concat(sizes(b), ', ')))
    end
    local out = {}
    for i = 1, a:dim() - 1 do out[#out + 1] = a:size(i) end
    for i = 1, b:dim() - 1 do out[#out + 1] = b:size(i) end
    local r = a:reshape(-1, K):matmul(b:reshape(-1, K):t())
    return r:reshape(out)
  end
  -- a x b along dim d of two tensors of one shape
  local function cross3(a, b, d)
    local function c(t, i) return t:narrow(d, i, 1) end
    return torch.cat({ c(a, 2) * c(b, 3) - c(a, 3) * c(b, 2), c(a, 3) * c(b, 1) - c(a, 1) * c(b, 3),
      c(a, 1) * c(b, 2) - c(a, 2) * c(b, 1) }, d)
  end
  -- one node named as PyTorch's; the gradients come back to the operands' own shapes (sa, sb)
  local cross_node = K.node('LinalgCrossBackward0', function(a, b, d)
    local bt = broadcast_tensors(a, b)
    return cross3(bt[1], bt[2], d)
  end, function(g, a, b, d)
    local bt = broadcast_tensors(a, b)
    local ga, gb = cross3(bt[2], g, d), cross3(g, bt[1], d)
    if ga:size() ~= a:size() then ga = ga:sum_to_size(a:size()) end
    if gb:size() ~= b:size() then gb = gb:sum_to_size(b:size()) end
    return ga, gb
  end)
  local function cross(a, b, dim)
    need('cross', a) need('cross', b, 'other')
    if dim ~= nil and a:dim() > 0 and b:dim() > 0 then
      -- the length of each input's dim, before broadcasting (PyTorch's check, its words)
      local da, db = pdim('cross', dim, a:dim()), pdim('cross', dim, b:dim())
      if a:size(da) ~= 3 or b:size(db) ~= 3 then
        fail('cross', ('inputs dimension %d must have length 3. Got %d and %d'):format(dim, a:size(da), b:size(db)))
      end
    end
    local a0, b0 = a, b
    local bt = broadcast_tensors(a, b)
    a, b = bt[1], bt[2]
    local nd = a:dim()
    local d
    if dim == nil then
      for i = 1, nd do if a:size(i) == 3 then d = i break end end
      if not d then fail('cross', 'no dimension of size 3 in input') end
    else
      d = pdim('cross', dim, nd)
      if a:size(d) ~= 3 then
        fail('cross', ('inputs dimension %d must have length 3. Got %d and %d'):format(dim, a:size(d), b:size(d)))
      end
    end
    return cross_node(a0, b0, d)
  end
  local function cdist(x1, x2, p)
    need('cdist', x1) need('cdist', x2, 'x2')
    if type(p) == 'table' then p = p.p end
    p = p or 2
    if x1:dim() < 2 or x2:dim() < 2 then
      fail('cdist', ('cdist only supports at least 2D tensors, X1 got: %dD'):format(x1:dim()))
    end
    if x1:size(-1) ~= x2:size(-1) then
      fail('cdist', ('X1 and X2 must have the same number of columns. X1: %d X2: %d'):format(x1:size(-1), x2:size(-1)))
    end
    local diffs = x1:unsqueeze(-2) - x2:unsqueeze(-3)
    if p == 0 then return diffs:ne(0):sum(-1):to(x1.dtype) end
    return diffs:norm(p, -1)
  end
  local function pdist(x, p)
    need('pdist', x)
    p = p or 2
    if x:dim() ~= 2 then fail('pdist', 'pdist only supports 2D tensors, got: ' .. x:dim() .. 'D') end
    local n = x:size(1)
    if n < 2 then return torch.empty(0, { dtype = x.dtype }) end
    local ii, jj = {}, {}
    for i = 1, n - 1 do for j = i + 1, n do ii[#ii + 1], jj[#jj + 1] = i, j end end
    local I, J = torch.tensor(ii, { dtype = torch.int64 }), torch.tensor(jj, { dtype = torch.int64 })
    return (x:index_select(1, I) - x:index_select(1, J)):norm(p, 2)
  end
  -- g reduced to the shape of t (t broadcast in the op)
  local function to_size(g, t)
    if g:size() ~= t:size() then return g:sum_to_size(t:size()) end
    return g
  end
  -- addr and addbmm, one node each named as PyTorch's
  local addr_node = K.node('AddrBackward0', function(m, v1, v2, beta, alpha)
    local o = torch.outer(v1, v2)
    if alpha ~= 1 then o = o * alpha end
    if beta == 0 then return o + m * 0 end
    return (beta ~= 1 and m * beta or m) + o
  end, function(g, m, v1, v2, beta, alpha)
    return to_size(g * beta, m), g:mv(v2) * alpha, g:t():mv(v1) * alpha
  end)
  local function addr(m, v1, v2, opts)
    opts = opts or {}
    return addr_node(m, v1, v2, opts.beta or 1, opts.alpha or 1)
  end
  local addbmm_node = K.node('AddbmmBackward0', function(m, b1, b2, beta, alpha)
    local s = torch.bmm(b1, b2):sum(1)
    if alpha ~= 1 then s = s * alpha end
    return (beta ~= 1 and m * beta or m) + s
  end, function(g, m, b1, b2, beta, alpha)
    local ge = g:unsqueeze(1):expand(b1:size(1), g:size(1), g:size(2))
    return to_size(g * beta, m), ge:bmm(b2:transpose(2, 3)) * alpha, b1:transpose(2, 3):bmm(ge) * alpha
  end)
  local function addbmm(m, b1, b2, opts)
    opts = opts or {}
    return addbmm_node(m, b1, b2, opts.beta or 1, opts.alpha or 1)
  end
  -- dist(a, b, p=2): the p-norm of a - b, one node named as PyTorch's for a finite p
  local dist_node = K.node('DistBackward0', function(a, b, p) return (a - b):norm(p) end, function(g, a, b, p)
    local diff = a - b
    local gd
    if p == 0 then gd = torch.zeros_like(diff)
    elseif p == 1 then gd = diff:sign() * g
    else
      local d = diff:norm(p)
      local safe = torch.where(d:eq(0), 1, d)
      gd = p == 2 and diff / safe * g or diff:sign() * diff:abs():pow(p - 1) / safe:pow(p - 1) * g
      gd = torch.where(d:eq(0), torch.zeros_like(gd), gd)
    end
    return to_size(gd, a), to_size(-gd, b)
  end)
  local function dist(a, b, p)
    need('dist', a); need('dist', b, 'other')
    p = p or 2
    if type(p) ~= 'number' then fail('dist', 'expected a number for p, got ' .. T.describe(p)) end
    if p == huge or p == -huge or p < 0 then return (a - b):norm(p) end
    return dist_node(a, b, p)
  end
  local matrix_power
  function matrix_power(x, n)
    need('matrix_power', x)
    if x:dim() < 2 or x:size(-1) ~= x:size(-2) then
      fail('matrix_power', 'matrix_power: expected a tensor of square matrices')
    end
    if type(n) ~= 'number' or n ~= floor(n) or n ~= n or math.abs(n) == huge then
      fail('matrix_power', ("expected an integer exponent n, got %s"):format(tostring(n)))
    end
    if n < 0 then return matrix_power(torch.linalg.inv(x), -n) end
    if n == 0 then
      local e = torch.eye(x:size(-1), { dtype = x.dtype })
      return e:expand(sizes(x)):clone()
    end
    local r, base = nil, x
    while n > 0 do
      if n % 2 == 1 then r = r and r:matmul(base) or base end
      n = floor(n / 2)
      if n > 0 then base = base:matmul(base) end
    end
    return r
  end

  -- einsum(equation, operands...): operands brought to one order of letters, multiplied pairwise
  -- left to right, each letter summed away once no later operand and not the output has it
  local function einsum(eq, ...)
    local ops = { ... }
    if #ops == 1 and type(ops[1]) == 'table' and not is_tensor(ops[1]) then ops = ops[1] end
    if type(eq) ~= 'string' then fail('einsum', 'einsum(): expected an equation string') end
    eq = eq:gsub('%s', '')
    local lhs, rhs = eq:match('^(.-)%->(.*)$')
    if not lhs then lhs = eq end
    local terms = {}
    for term in (lhs .. ','):gmatch('([^,]*),') do terms[#terms + 1] = term end
    if #terms ~= #ops then
      fail('einsum', ('einsum(): more operands were provided than specified in the equation'):gsub('more', #terms < #ops and 'more' or 'fewer'))
    end
    local has_ell = lhs:find('...', 1, true) ~= nil
    -- expand '...' into fresh letters (uppercase Greek-free placeholders: digits)
    local ell_dims = 0
    for i, term in ipairs(terms) do
      need('einsum', ops[i], 'operand ' .. i)
      if term:find('...', 1, true) then
        local nl = #term:gsub('%.%.%.', '')
        ell_dims = math.max(ell_dims, ops[i]:dim() - nl)
      end
    end
    local ell = {}
    for k = 1, ell_dims do ell[k] = string.char(48 + k) end -- '1', '2', ...
    local function expand_term(term, nd)
      if not term:find('...', 1, true) then return term end
      local nl = #term:gsub('%.%.%.', '')
      local e = table.concat(ell, '', ell_dims - (nd - nl) + 1, ell_dims)
      return (term:gsub('%.%.%.', e, 1))
    end
    for i, term in ipairs(terms) do
      terms[i] = expand_term(term, ops[i]:dim())
      if #terms[i] ~= ops[i]:dim() then
        fail('einsum', ('einsum(): the number of subscripts in the equation (%d) does not match the number of dimensions '
          .. '(%d) for operand %d%s'):format(#terms[i], ops[i]:dim(), i - 1, has_ell and '' or ' and no ellipsis was given'))
      end
    end
    -- the output's letters
    local out
    if rhs then
      out = rhs:gsub('%.%.%.', table.concat(ell))
    else
      local count = {}
      for _, term in ipairs(terms) do for ch in term:gmatch('.') do count[ch] = (count[ch] or 0) + 1 end end
      local letters = {}
      for ch, c in pairs(count) do if c == 1 and not ch:match('%d') then letters[#letters + 1] = ch end end
      table.sort(letters)
      out = table.concat(ell) .. table.concat(letters)
    end
    -- every letter's size
    local size = {}
    for i, term in ipairs(terms) do
      for k = 1, #term do
        local ch, s = term:sub(k, k), ops[i]:size(k)
        if size[ch] == nil or size[ch] == 1 then size[ch] = s
        elseif s ~= 1 and s ~= size[ch] then
          fail('einsum', ('einsum(): operands do not broadcast with remapped shapes (original->remapped)'))
        end
      end
    end
    for k = 1, #out do
      if size[out:sub(k, k)] == nil then
        fail('einsum', ("einsum(): output subscript %s does not appear in the equation for any input operand"):format(out:sub(k, k)))
      end
    end
    -- all letters in one order: the output's first, then the rest as met
    local order, pos = {}, {}
    local function add_letter(ch) if not pos[ch] then order[#order + 1] = ch pos[ch] = #order end end
    for k = 1, #out do add_letter(out:sub(k, k)) end
    for _, term in ipairs(terms) do for k = 1, #term do add_letter(term:sub(k, k)) end end
    -- an operand over all letters: its repeated letters' diagonal taken, then unsqueezed and permuted
    local function aligned(t, term)
      local seen = {}
      local k = 1
      while k <= #term do
        local ch = term:sub(k, k)
        if seen[ch] then
          t = t:diagonal(0, seen[ch], k):movedim(-1, seen[ch])
          term = term:sub(1, k - 1) .. term:sub(k + 1)
        else
          seen[ch] = k
          k = k + 1
        end
      end
      local perm, view = {}, {}
      local present = {}
      for i = 1, #term do present[term:sub(i, i)] = i end
      local letters = {}
      for _, ch in ipairs(order) do if present[ch] then letters[#letters + 1] = ch end end
      for i, ch in ipairs(letters) do perm[i] = present[ch] end
      if #perm > 0 then t = t:permute(perm) end
      local j = 0
      for i, ch in ipairs(order) do
        if present[ch] then j = j + 1 view[i] = t:size(j) else view[i] = 1 end
      end
      return t:reshape(view)
    end
    local cur = aligned(ops[1], terms[1])
    local function needed_after(i)
      local need_set = {}
      for k = 1, #out do need_set[out:sub(k, k)] = true end
      for j = i + 1, #terms do for k = 1, #terms[j] do need_set[terms[j]:sub(k, k)] = true end end
      return need_set
    end
    local function sum_unneeded(t, i)
      local keep = needed_after(i)
      local dims = {}
      for k, ch in ipairs(order) do if not keep[ch] and t:size(k) > 1 then dims[#dims + 1] = k end end
      if #dims > 0 then t = t:sum(dims, { keepdim = true }) end
      return t
    end
    cur = sum_unneeded(cur, 1)
    for i = 2, #ops do
      cur = sum_unneeded(cur * aligned(ops[i], terms[i]), i)
    end
    -- drop the summed letters (now size 1) and broadcast the output's to their sizes
    local shape = {}
    for k = 1, #out do shape[k] = size[out:sub(k, k)] end
    local r = cur:reshape(#order > 0 and (function()
      local v = {}
      for k = 1, #out do v[k] = cur:size(k) end
      return v
    end)() or {})
    if #out > 0 then r = r:expand(shape) end
    if r:dim() == 0 and #out == 0 then return r end
    return r
  end

  ------------------------------------------------------------------------------ torch.linalg (norms)
  local function vector_norm(x, ord, dim, keepdim, opts)
    need('linalg.vector_norm', x)
    if type(ord) == 'table' and not is_tensor(ord) and ord[1] == nil then ord, dim, keepdim, opts = nil, nil, nil, ord end
    if type(dim) == 'table' and dim[1] == nil and next(dim) ~= nil then dim, keepdim, opts = nil, nil, dim end
    if type(keepdim) == 'table' then keepdim, opts = nil, keepdim end
    opts = opts or {}
    ord = ord or opts.ord or 2
    if type(ord) ~= 'number' then
      fail('linalg.vector_norm', "argument 'ord' must be a number (math.huge for inf), got " .. K.shown(ord))
    end
    if dim == nil then dim = opts.dim end
    if keepdim == nil then keepdim = opts.keepdim or false end
    local y = x
    if opts.dtype then y = y:to(opts.dtype) end
    if not y:is_floating_point() then
      fail('linalg.vector_norm', 'Expected a floating point or complex tensor as input. Got ' .. tostring(y.dtype):gsub('^torch%.', ''))
    end
    if dim == nil then
      if y:dim() == 0 then return T.name_grad_fn(y:norm(ord), 'LinalgVectorNormBackward0') end
      dim = {}
      for i = 1, y:dim() do dim[i] = i end
    end
    -- one node, named as PyTorch's (its gradient is the norm's)
    return T.name_grad_fn(y:norm(ord, dim, { keepdim = keepdim }), 'LinalgVectorNormBackward0')
  end
  -- matrix_norm(A, ord='fro', dim={-2, -1}, keepdim=false, {dtype=}): 'fro', 'nuc', 1, -1, 2, -2, inf, -inf as
  -- PyTorch's: 'fro' the vector 2-norm of the two dims, 'nuc' / 2 / -2 the sum / largest / smallest singular value
  -- (linalg.svdvals: its gradient is LinalgSvdBackward0's, then SumBackward1 / AmaxBackward0 / AminBackward0 as
  -- PyTorch's), 1 / -1 (inf / -inf) the largest / smallest column (row) sum of |A|
  local matrix_ords = { fro = true, nuc = true, [1] = true, [-1] = true, [2] = true, [-2] = true, [huge] = true,
    [-huge] = true }
  local function matrix_norm(x, ord, dim, keepdim, opts)
    local op = 'linalg.matrix_norm'
    need(op, x)
    if type(ord) == 'table' and not is_tensor(ord) and ord[1] == nil then ord, dim, keepdim, opts = nil, nil, nil, ord end
    if type(dim) == 'table' and dim[1] == nil and next(dim) ~= nil then dim, keepdim, opts = nil, nil, dim end
    if type(keepdim) == 'table' then keepdim, opts = nil, keepdim end
    opts = opts or {}
    if ord == nil then ord = opts.ord or 'fro' end
    if dim == nil then dim = opts.dim or { -2, -1 } end
    if keepdim == nil then keepdim = opts.keepdim or false end
    if type(keepdim) ~= 'boolean' then fail(op, 'keepdim must be a boolean, got ' .. K.shown(keepdim)) end
    if not matrix_ords[ord] then fail(op, ('Order %s not supported.'):format(K.shown(ord))) end
    if x:dim() < 2 then fail(op, 'The input tensor A must have at least 2 dimensions.') end
    if opts.dtype then x = x:to(opts.dtype) end
    if not is_float(x) then
      fail(op, 'Expected a floating point or complex tensor as input. Got ' .. require('moontorch.dtype').scalar_type(x.dtype))
    end
    if type(dim) ~= 'table' or #dim ~= 2 then
      fail(op, 'dim must be a 2-tuple. Got ' .. (type(dim) == 'table' and table.concat(dim, ' ') or K.shown(dim)))
    end
    local d1, d2 = pdim(op, dim[1], x:dim()), pdim(op, dim[2], x:dim())
    if d1 == d2 then fail(op, ('dims must be different. Got (%s, %s)'):format(K.shown(dim[1]), K.shown(dim[2]))) end
    if ord == 'fro' then -- PyTorch's: the vector norm of the two dims
      return T.name_grad_fn(x:norm(2, { d1, d2 }, { keepdim = keepdim }), 'LinalgVectorNormBackward0')
    end
    local lo, hi = math.min(d1, d2), math.max(d1, d2)
    if ord == 'nuc' or ord == 2 or ord == -2 then
      -- the two dims moved last (in dim's order), the singular values reduced
      local y = x
      if not (d1 == x:dim() - 1 and d2 == x:dim()) then
        local perm = {}
        for i = 1, x:dim() do if i ~= d1 and i ~= d2 then perm[#perm + 1] = i end end
        perm[#perm + 1], perm[#perm + 2] = d1, d2
        y = x:permute(perm)
      end
      local S = torch.linalg.svdvals(y)
      local r
      if ord == 'nuc' then r = S:sum(-1)
      elseif ord == 2 then r = S:amax(-1)
      else r = S:amin(-1) end
      if keepdim then r = r:unsqueeze(lo):unsqueeze(hi) end
      return r
    end
    local sum_d, red_d = d1, d2
    if ord == huge or ord == -huge then sum_d, red_d = d2, d1 end
    -- (PyTorch's order: the sum, then amax / amin, whose node is the result's)
    local s = x:abs():sum(sum_d, { keepdim = keepdim })
    if not keepdim and sum_d < red_d then red_d = red_d - 1 end
    return (ord > 0) and s:amax(red_d, { keepdim = keepdim }) or s:amin(red_d, { keepdim = keepdim })
  end
  composed.matrix_norm = matrix_norm
  -- linalg.norm(A, ord=nil, dim=nil, keepdim=false, {dtype=}): PyTorch's rules: a dim of two entries (or a string
  -- ord) a matrix norm, one dim a vector norm; an ord without dim wants A 1-D (vector) or 2-D (matrix); neither:
  -- the 2-norm of all the elements
  local function linalg_norm(x, ord, dim, keepdim, opts)
    local op = 'linalg.norm'
    need(op, x)
    if type(ord) == 'table' and not is_tensor(ord) and ord[1] == nil then ord, dim, keepdim, opts = nil, nil, nil, ord end
    if type(dim) == 'table' and dim[1] == nil and next(dim) ~= nil then dim, keepdim, opts = nil, nil, dim end
    if type(keepdim) == 'table' then keepdim, opts = nil, keepdim end
    opts = opts or {}
    if ord == nil then ord = opts.ord end
    if dim == nil then dim = opts.dim end
    if keepdim == nil then keepdim = opts.keepdim end
    if dim ~= nil then
      local nd = type(dim) == 'table' and #dim or 1
      if nd ~= 1 and nd ~= 2 then fail(op, 'If dim is specified, it must be of length 1 or 2. Got ' .. K.shown(dim)) end
      if nd == 2 or type(ord) == 'string' then
        local r = matrix_norm(x, ord or 'fro', dim, keepdim, opts)
        return r
      end
    elseif ord ~= nil then
      if x:dim() ~= 1 and x:dim() ~= 2 then
        fail(op, ('If dim is not specified but ord is, the input must be 1D or 2D. Got %dD.'):format(x:dim()))
      end
      if x:dim() == 2 or type(ord) == 'string' then
        local r = matrix_norm(x, ord, nil, keepdim, opts)
        return r
      end
    end
    if type(ord) == 'string' then fail(op, ('Order %s not supported.'):format(ord)) end
    local r = vector_norm(x, ord or 2, dim, keepdim, opts)
    return r
  end
  composed.linalg_norm = linalg_norm

  ------------------------------------------------------------------------------ torch.linalg: matrix_exp, householder_product
  -- matrix_exp(A): e^A of each square matrix of (..., n, n), by scaling and squaring around a Taylor
  -- polynomial of degree 18 (whose remainder is below float64's eps for a norm up to 1/2), written
  -- with matmuls, so autograd follows.
  local function mexp_raw(A)
    need('matrix_exp', A, 'A')
    if A:dim() < 2 or A:size(-1) ~= A:size(-2) then
      fail('matrix_exp', ('Expected a square matrix or batch of square matrices, but got a tensor of shape %s')
        :format(tostring(A:size())))
    end
    if not is_float(A) then
      fail('matrix_exp', ('Expected a floating point tensor as input. Got %s'):format((tostring(A.dtype):gsub('^torch%.', ''))))
    end
    local n = A:size(-1)
    if A:numel() == 0 then return A:clone() end
    local I = torch.eye(n, { dtype = A.dtype, device = A.device })
    if A.device.type == 'meta' then return A + I end
    -- the 1-norm (largest column sum of |A|) of the largest matrix
    local norm1 = A:detach():abs():sum(-2):max():item()
    local s = 0
    if norm1 > 0.5 then s = math.max(0, math.ceil(math.log(norm1 / 0.5) / math.log(2))) end
    local X = s > 0 and A / (2 ^ s) or A
    local P = I + X / 18
    for k = 17, 1, -1 do P = I + X:matmul(P) / k end
    for _ = 1, s do P = P:matmul(P) end
    return P
  end

  -- one node named as PyTorch's: the gradient is the top right block of e^[[A^T, g], [0, A^T]]
  local matrix_exp = K.node('LinalgMatrixExpBackward0', mexp_raw, function(g, A)
    local n, At = A:size(-1), A:transpose(-2, -1)
    local M = torch.cat({ torch.cat({ At, g }, -1), torch.cat({ torch.zeros_like(At), At }, -1) }, -2)
    return mexp_raw(M):narrow(-2, 1, n):narrow(-1, n + 1, n)
  end)

  -- householder_product(A, tau): the first n columns of H_1 H_2 ... H_k for A (..., m, n) and tau
  -- (..., k), H_i = I - tau_i v_i v_i^T with v_i = (0, ..., 0, 1, A[i+1:, i]) (LAPACK's orgqr), as
  -- tensor ops (autograd follows)
  local function householder_product(A, tau)
    local op = 'linalg.householder_product'
    need(op, A, 'input')
    need(op, tau, 'tau')
    if A:dim() < 2 then fail(op, 'input must have at least 2 dimensions.') end
    local m, n = A:size(-2), A:size(-1)
    if m < n then fail(op, 'input.shape[-2] must be greater than or equal to input.shape[-1]') end
    if tau:dim() ~= A:dim() - 1 then fail(op, 'input.dim() - tau.dim() must be equal to 1') end
    local k = tau:size(-1)
    if k > n then fail(op, 'input.shape[-1] must be greater than or equal to tau.shape[-1]') end
    if tau.dtype ~= A.dtype then
      fail(op, ('tau dtype %s does not match input dtype %s'):format(tostring(tau.dtype), tostring(A.dtype)))
    end
    local shape = sizes(A)
    local Q = torch.eye(m, n, { dtype = A.dtype, device = A.device }):expand(shape)
    local rows = torch.arange(1, m + 1, { device = A.device }):to(A.dtype):unsqueeze(-1) -- (m, 1)
    for i = k, 1, -1 do
      local col = A:narrow(-1, i, 1) -- (..., m, 1)
      local v = torch.where(rows:lt(i), 0, torch.where(rows:eq(i), 1, col))
      local t = tau:narrow(-1, i, 1):unsqueeze(-1) -- (..., 1, 1)
      Q = Q - (v * t):matmul(v:transpose(-2, -1):matmul(Q))
    end
    return Q
  end
  ------------------------------------------------------------------------------ torch.linalg: multi_dot, vander, ...
  -- multi_dot({A1, ..., An}): the product in the cheapest order (the matrix-chain dynamic programme over the
  -- shapes), the first may be 1-D (a row), the last 1-D (a column); the result viewed to its shape (PyTorch's
  -- last node, ViewBackward0)
  local function multi_dot(ts)
    local op = 'linalg.multi_dot'
    if type(ts) ~= 'table' or is_tensor(ts) then fail(op, 'expected a table of tensors, got ' .. K.shown(ts)) end
    local n = #ts
    if n < 2 then fail(op, ('multi_dot(): expected at least 2 tensors but got %d'):format(n)) end
    for i = 1, n do need(op, ts[i], ('tensor %d'):format(i)) end
    local ms, first1, last1 = {}, ts[1]:dim() == 1, ts[n]:dim() == 1
    for i = 1, n do
      local t, d = ts[i], ts[i]:dim()
      if i == 1 and d ~= 1 and d ~= 2 then fail(op, ('multi_dot(): the first tensor must be 1D or 2D but got %dD'):format(d)) end
      if i == n and d ~= 1 and d ~= 2 then fail(op, ('multi_dot(): the last tensor must be 1D or 2D but got %dD'):format(d)) end
      if i > 1 and i < n and d ~= 2 then fail(op, ('multi_dot(): tensor %d must be 2D but got %dD'):format(i, d)) end
      if t.dtype ~= ts[1].dtype then
        fail(op, ('multi_dot(): all tensors must have be the same dtype but tensor 1 is %s and tensor %d %s'):format(
          tostring(ts[1].dtype):gsub('^torch%.', ''), i, (tostring(t.dtype):gsub('^torch%.', ''))))
      end
      if i == 1 and d == 1 then t = t:unsqueeze(1) elseif i == n and d == 1 then t = t:unsqueeze(2) end
      ms[i] = t
    end
    for i = 1, n - 1 do
      if ms[i]:size(2) ~= ms[i + 1]:size(1) then
        fail(op, ('multi_dot(): tensors %d and %d with shapes [%s] and [%s] cannot be multiplied'):format(i, i + 1,
          table.concat(sizes(ts[i]), ', '), table.concat(sizes(ts[i + 1]), ', ')))
      end
    end
    -- p[i], p[i + 1]: matrix i's shape; cost[i][j] the fewest products for i..j, split[i][j] where
    local p = { ms[1]:size(1) }
    for i = 1, n do p[i + 1] = ms[i]:size(2) end
    local cost, split = {}, {}
    for i = 1, n do cost[i], split[i] = { [i] = 0 }, {} end
    for len = 2, n do
      for i = 1, n - len + 1 do
        local j = i + len - 1
        cost[i][j] = huge
        for k = i, j - 1 do
          local c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
          if c < cost[i][j] then cost[i][j], split[i][j] = c, k end
        end
      end
    end
    local function product(i, j)
      if i == j then return ms[i] end
      local k = split[i][j]
      return product(i, k):mm(product(k + 1, j))
    end
    local r = product(1, n)
    local shape = {}
    if not first1 then shape[#shape + 1] = r:size(1) end
    if not last1 then shape[#shape + 1] = r:size(2) end
    return r:view(shape)
  end
  -- vander(x, {N=}): (..., n, N) of the powers x^0, x^1, ..., x^(N-1) (increasing, unlike torch.vander), as
  -- PyTorch's: ones then the cumulative product (CatBackward0)
  local function linalg_vander(x, N)
    local op = 'linalg.vander'
    need(op, x, 'x')
    if type(N) == 'table' then N = N.N end
    if N == nil then N = x:dim() > 0 and x:size(-1) or 0 end
    if type(N) ~= 'number' or N ~= floor(N) then fail(op, 'expected an integer N, got ' .. K.shown(N)) end
    if N <= 1 or x:dim() == 0 then fail(op, 'N must be greater than 1.') end
    local col = x:unsqueeze(-1)
    local shape = sizes(col)
    shape[#shape] = N - 1
    return torch.cat({ torch.ones_like(col), col:expand(shape):cumprod(-1) }, -1)
  end
  -- diagonal(A, {offset=0, dim1=-2, dim2=-1}): torch.diagonal with linalg's defaults (the last two dims)
  local function linalg_diagonal(A, opts)
    need('linalg.diagonal', A, 'A')
    if opts ~= nil and (type(opts) ~= 'table' or is_tensor(opts)) then
      fail('linalg.diagonal', 'expected an options table {offset=, dim1=, dim2=}, got ' .. K.shown(opts))
    end
    opts = opts or {}
    local r = A:diagonal(opts.offset or 0, opts.dim1 or -2, opts.dim2 or -1)
    return r
  end
  -- tensorinv(A, ind=2): the inverse of A viewed as a (prod(shape[1..ind]), prod(shape[ind+1..])) square
  -- matrix, shaped shape[ind+1..] .. shape[1..ind]
  local function prod_of(s, i, j)
    local p = 1
    for k = i, j do p = p * s[k] end
    return p
  end
  local function tensorinv(A, ind)
    local op = 'linalg.tensorinv'
    need(op, A)
    if type(ind) == 'table' then ind = ind.ind end
    ind = ind == nil and 2 or ind
    if type(ind) ~= 'number' or ind ~= floor(ind) or ind <= 0 then
      fail(op, ("Expected a strictly positive integer for 'ind', but got %s"):format(K.shown(ind)))
    end
    local s = sizes(A)
    local lo, hi = prod_of(s, 1, math.min(ind, #s)), prod_of(s, ind + 1, #s)
    if lo ~= hi then
      fail(op, ('Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), but got %d != %d')
        :format(hi, lo))
    end
    local out = {}
    for k = ind + 1, #s do out[#out + 1] = s[k] end
    for k = 1, math.min(ind, #s) do out[#out + 1] = s[k] end
    local r = torch.linalg.inv(A:reshape(lo, hi)):reshape(out)
    return r
  end
  -- tensorsolve(A, B, dims=nil): X with tensordot(A, X, X:dim()) = B: A's dims (1-based) in dims moved last, A viewed
  -- as (prod(B's shape), the rest) and solved
  local function tensorsolve(A, B, dims)
    local op = 'linalg.tensorsolve'
    need(op, A)
    need(op, B, 'other')
    if type(dims) == 'table' and dims.dims ~= nil then dims = dims.dims end
    if type(dims) == 'number' then dims = { dims } end
    if dims ~= nil and next(dims) ~= nil then
      local moved = {}
      for i, d in ipairs(dims) do moved[pdim(op, d, A:dim())] = i end
      local perm = {}
      for i = 1, A:dim() do if not moved[i] then perm[#perm + 1] = i end end
      for _, d in ipairs(dims) do perm[#perm + 1] = pdim(op, d, A:dim()) end
      A = A:permute(perm)
    end
    local s, nb = sizes(A), B:dim()
    local hi = prod_of(s, nb + 1, #s)
    if hi ~= B:numel() or A:numel() ~= hi * hi then
      fail(op, ('Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), '
        .. 'but got %d != %d'):format(hi, B:numel()))
    end
    local out = {}
    for k = nb + 1, #s do out[#out + 1] = s[k] end
    local r = torch.linalg.solve(A:reshape(hi, hi), B:reshape(hi)):reshape(out)
    return r
  end

  -- one node each, named as PyTorch's; the gradient autograd's of the composite (K.node_autograd)
  cdist = K.node_autograd('CdistBackward0', cdist)
  pdist = K.node_autograd('PdistBackward0', pdist)
  householder_product = K.node_autograd('LinalgHouseholderProductBackward0', householder_product)
  composed.pdist = pdist -- (F.pdist too: lua/nn/functional.lua)

  local fns = { -- torch functions and methods
    kron = kron, inner = inner, cross = cross, addr = addr, addbmm = addbmm, dist = dist, matrix_power = matrix_power,
  }
  local only = { -- torch functions only
    einsum = einsum, cdist = cdist, pdist = pdist,
  }
  function composed.install(tt)
    torch = tt
    K.install_functions(torch, fns, true)
    K.install_functions(torch, only, false)
    -- the methods PyTorch also has as torch functions
    -- torch.linalg: the norms and cross (the rest of linalg is not in moontorch yet)
    if torch.linalg == nil then
      torch.linalg = {
        vector_norm = vector_norm, matrix_norm = matrix_norm,
        norm = linalg_norm,
        cross = function(a, b, dim)
          local r = cross(a, b, dim or -1) -- not a tail call: an error inside names linalg.cross
          return r
        end,
        matrix_power = matrix_power,
        vecdot = function(a, b, dim)
          need('linalg.vecdot', a, 'x'); need('linalg.vecdot', b, 'y')
          return (a * b):sum(dim or -1)
        end,
        matrix_exp = matrix_exp, householder_product = householder_product, multi_dot = multi_dot,
        vander = linalg_vander, diagonal = linalg_diagonal, tensorinv = tensorinv, tensorsolve = tensorsolve,
      }
      if torch.matrix_exp == nil then torch.matrix_exp = matrix_exp end
      if methods.matrix_exp == nil then methods.matrix_exp = matrix_exp end
    end
    -- the decompositions by LAPACK (cholesky, qr, eigh, svd, lstsq, lu, pinv, ...): lua/ops/decomp.lua
    require('moontorch.ops.decomp').install(torch, torch.linalg)
    if torch.chain_matmul == nil then
      torch.chain_matmul = function(...)
        local ms = { ... }
        if #ms == 1 and type(ms[1]) == 'table' then ms = ms[1] end
        if #ms == 0 then fail('chain_matmul', 'chain_matmul(): Expected one or more matrices') end
        for i = 1, #ms do
          if not is_tensor(ms[i]) then fail('chain_matmul', ('expected a tensor for matrix %d, got %s'):format(i, T.describe(ms[i]))) end
          if ms[i]:dim() ~= 2 then
            fail('chain_matmul', ('Tensor dimension is %d, expected 2 instead.'):format(ms[i]:dim()))
          end
        end
        if #ms == 1 then return ms[1]:clone() end
        local r = ms[1]
        for i = 2, #ms do r = r:mm(ms[i]) end
        -- PyTorch (linalg.multi_dot) views the product as the result's shape: its last node (ViewBackward0)
        return r:view(r:size())
      end
    end
  end
end

return M
