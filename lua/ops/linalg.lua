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
  if not is_tensor(a) then fail(op, 'expected a tensor as the first argument, got ' .. type(a)) end
  if not is_tensor(b) then fail(op, 'expected a tensor as the second argument, got ' .. type(b)) end
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
    fail(op, 'expected an options table {beta=, alpha=, out=} as the last argument, got ' .. type(opts))
  end
  if type(beta) ~= 'number' then fail(op, 'beta must be a number, got ' .. type(beta)) end
  if type(alpha) ~= 'number' then fail(op, 'alpha must be a number, got ' .. type(alpha)) end
  return beta, alpha
end

local function check3(op, c, a, b)
  if not is_tensor(c) then fail(op, 'expected a tensor as input, got ' .. type(c)) end
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

-- addmv: beta * c + alpha * (a @ v), composed (not a hot path)
function M.addmv(c, a, v, opts)
  check3('addmv', c, a, v)
  local beta, alpha = coefs('addmv', opts)
  local out = out_of(opts)
  local r = M.mv(a, v)
  if alpha ~= 1 then r = r:mul(alpha) end
  if beta ~= 0 then
    local cc = beta == 1 and c or c:mul(beta)
    r = cc:add(r)
  end
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

return M
