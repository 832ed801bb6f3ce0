-- The one op list (MT_OP_LIST in core/moontorch.h), as the C core reports it through mt_op_count
-- and mt_op_info_of and the Lua bindings read it (lua/ops/list.lua): every op once, every public
-- op bound, the PLAIN ops' bindings made from the list, aliases the same functions.
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'
local C = torch._C
local list = require 'moontorch.ops.list'
local OPS = list.ops()
local methods = require('moontorch.tensor').methods

local KINDS = {
  UNARY_FLOAT = true, UNARY_KEEP = true, UNARY_TEST = true, UNARY_LOGICAL = true, UNARY_BITS = true,
  BINARY_ARITH = true, BINARY_FLOAT = true, BINARY_CMP = true, BINARY_BITS = true, REDUCE = true,
  VIEW = true, OP = true, COMPOSITE = true,
}
local BINDINGS = { PLAIN = true, CUSTOM = true, INTERNAL = true }

describe('the op list', function()
  it('names every op once, with a known kind, binding and kernel slot', function()
    assert.are.equal(C.mt_op_count(), #OPS)
    assert.is_true(#OPS > 150)
    local seen = {}
    for i, op in ipairs(OPS) do
      assert.are.equal(i - 1, op.id)
      assert.is_nil(seen[op.name], 'named twice: ' .. op.name)
      seen[op.name] = true
      assert.is_true(KINDS[op.kind] or false, op.name .. ': kind ' .. op.kind)
      assert.is_true(BINDINGS[op.binding] or false, op.name .. ': binding ' .. op.binding)
      assert.is_true(op.arity >= -1 and op.arity <= 6, op.name) -- (6: adam_step; 4: ctc_loss)
      assert.are.equal(op.name, ffi.string(C.mt_op_name(op.id)))
      assert.is_true(op.kernel ~= '', op.name)
      if op.kind == 'COMPOSITE' then assert.are.equal('none', op.kernel, op.name) end
      if op.kind:match('^UNARY') then assert.are.equal('unary', op.kernel, op.name) end
      if op.kind:match('^BINARY') then assert.are.equal('binary', op.kernel, op.name) end
    end
    assert.are.equal(ffi.NULL, C.mt_op_info_of(-1))
    assert.are.equal(ffi.NULL, C.mt_op_info_of(#OPS))
    assert.are.equal('?', ffi.string(C.mt_op_name(#OPS)))
  end)

  it('has a binding for every public op, and aliases are the same functions', function()
    for _, op in ipairs(OPS) do
      if op.binding ~= 'INTERNAL' then
        assert.is_true(torch[op.name] ~= nil or methods[op.name] ~= nil, 'no binding for ' .. op.name)
      end
      for _, alias in ipairs(op.aliases) do
        local ns, short = alias:match('^(%w+)%.(.+)$')
        if ns then
          assert.are.equal(torch[op.name], torch[ns][short], alias)
        else
          assert.are.equal(torch[op.name], torch[alias], alias)
          assert.are.equal(methods[op.name], methods[alias], alias)
          assert.are.equal(methods[op.name .. '_'], methods[alias .. '_'], alias .. '_')
        end
      end
    end
    assert.are.equal(torch.mul, torch.multiply)
    assert.are.equal(methods.asin_, methods.arcsin_)
  end)

  it('makes the PLAIN elementwise ops torch.f, t:f and t:f_ (but for the UNARY_TEST ops)', function()
    for _, op in ipairs(OPS) do
      if op.binding == 'PLAIN' then
        assert.is_function(torch[op.name], op.name)
        assert.is_function(methods[op.name], op.name)
        if op.kind == 'UNARY_TEST' then
          assert.is_nil(methods[op.name .. '_'], op.name .. '_')
        else
          assert.is_function(methods[op.name .. '_'], op.name .. '_')
        end
      end
    end
  end)

  it('records the PLAIN differentiable elementwise ops for autograd, and only those', function()
    for _, op in ipairs(OPS) do
      if op.binding == 'PLAIN' and op.kind ~= 'UNARY_BITS' and op.kind ~= 'BINARY_BITS' then
        local x = torch.tensor({ 0.25, 0.5 }, { dtype = torch.float64, requires_grad = true })
        local y
        if op.name == 'polygamma' then y = x:polygamma(1) -- its parameter n has no default
        else y = op.kind:match('^UNARY') and torch[op.name](x) or torch[op.name](x, x * 1) end
        assert.are.equal(op.differentiable, y.requires_grad, op.name)
        if op.differentiable then assert.is_not_nil(y.grad_fn, op.name) end
      end
    end
  end)

  it('refuses an op number of the wrong family at the C front doors', function()
    local x = torch.tensor({ 1.0 })
    local outp = ffi.new('mt_tensor *[1]')
    local function ids(n) return list.find(n).id end
    assert.are_not.equal(0, C.mt_unary(ids('add'), x, 0, 0, nil, outp))
    assert.matches('unary: %d+ is no unary op', ffi.string(C.mt_last_error()))
    assert.are_not.equal(0, C.mt_binary(ids('neg'), x, x, nil, outp))
    assert.matches('binary: %d+ is no binary op', ffi.string(C.mt_last_error()))
    assert.are_not.equal(0, C.mt_reduce(ids('matmul'), x, nil, 0, 0, -1, 0, nil, outp))
    assert.matches('reduce: %d+ is no reduction', ffi.string(C.mt_last_error()))
  end)
end)
