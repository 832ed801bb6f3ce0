-- torch.onnx.load: ONNX files (core/formats/onnx.c, lua/interop/onnx.lua). The files are PyTorch
-- 1.13's own torch.onnx.export of each model, and the outputs PyTorch's, recorded by
-- spec/support/onnx_record.py (/usr/bin/python3, python3-onnx checking each file); the bad_*.onnx
-- files are made there with onnx.helper.
local H = require 'spec.support.helper'
local torch = H.torch

local DIR = 'spec/support/onnx/'

local function io_of(name) return torch.load(DIR .. name .. '_io.pt') end

describe('ONNX files (torch.onnx.load)', function()
  if require('moontorch.ffi').C.mt_onnx_built() == 0 then
    it('this build has no ONNX: torch.onnx.load says so', function()
      H.errors_with(function() torch.onnx.load(DIR .. 'mlp.onnx') end,
        'onnx.load: this moontorch was built without ONNX')
      pending('built without ONNX (-DMT_ONNX=OFF or protobuf-c missing): only the error is checked')
    end)
    return
  end
  describe("PyTorch 1.13's torch.onnx.export of each model runs and gives PyTorch's outputs", function()
    local cases = {
      { 'mlp', 'an MLP (Gemm, Relu)' },
      { 'lenet', 'LeNet-5 (Conv, MaxPool, Flatten, Gemm)' },
      { 'resblock', 'a ResNet block (batch norms folded into the convolutions, Add)' },
      { 'encoder', 'a TransformerEncoderLayer (MatMul, Softmax, Reshape, Shape, Gather, Slice, ReduceMean ...)' },
      { 'mixed', 'a CNN with BatchNormalization, AveragePool, Pad, GELU (Erf), LayerNormalization, Concat' },
      { 'lstm', 'an LSTM, 2 layers, bidirectional (LSTM with initial states, its Y and Y_h used)' },
      { 'gru', 'a GRU, batch first (GRU, linear_before_reset)' },
    }
    for _, c in ipairs(cases) do
      it(c[2], function()
        local gm = torch.onnx.load(DIR .. c[1] .. '.onnx')
        assert.is_true(torch.isinstance(gm, torch.fx.GraphModule))
        assert.is_false(gm.training)
        local io = io_of(c[1])
        local got = gm(io.input)
        assert.are.same(io.output:size(), got:size())
        H.near(got, io.output, 1e-5, 1e-5)
        -- and again: the module is reusable, on other inputs too
        H.near(gm(io.input), got, 0, 0)
      end)
    end
  end)

  it('the GraphModule: ops named onnx.<OpType>, the weights as buffers (ONNX names made identifiers), state_dict, saved and loaded', function()
    local gm = torch.onnx.load(DIR .. 'mlp.onnx')
    local ops = {}
    for _, n in ipairs(gm.graph:nodes()) do
      if n.op == 'call_function' then ops[#ops + 1] = require('moontorch.fx.graph').wrapped_name(n.target) end
    end
    assert.are.same({ 'onnx.Gemm', 'onnx.Relu', 'onnx.Gemm' }, ops)
    local sd = gm:state_dict()
    assert.are.same({ 16, 6 }, sd['v_0_weight']:size())
    assert.are.same({ 4 }, sd['v_2_bias']:size())
    -- the first layer's weight is PyTorch's (the Linear's, as exported)
    local io = io_of('mlp')
    local path = os.tmpname()
    torch.save(gm, path)
    local back = torch.load(path)
    os.remove(path)
    H.near(back(io.input), io.output, 1e-5, 1e-5)
  end)

  it('an input of another shape runs where the ops allow (the batch here)', function()
    local gm = torch.onnx.load(DIR .. 'lenet.onnx')
    local y = gm(torch.randn(3, 1, 28, 28))
    assert.are.same({ 3, 10 }, y:size())
  end)

  describe('what it does not take is an error naming it', function()
    local function err(name, want)
      H.errors_with(function() torch.onnx.load(DIR .. name .. '.onnx') end, want)
    end
    it('an op outside the set, an op of another domain, control flow', function()
      err('bad_op', 'the_einsum: the ONNX op Einsum is not supported')
      err('bad_domain', "fused: the op FusedThing of domain 'com.example' is not supported")
      err('bad_if', 'branchy (If): attribute else_branch holds a graph (If, Loop and Scan are not supported)')
    end)
    it('external data, a tensor whose data does not match its dims, a type moontorch has not', function()
      err('bad_external', "the initializer 'w' keeps its data in another file (external data is not read)")
      err('bad_raw_size', "the initializer 'w' holds 5 elements in raw_data; its dims say 6")
      err('bad_string', "the initializer 'w' is of ONNX type string (8), which moontorch has not")
      err('bad_dangling', "dangling (Add) reads 'nowhere', which nothing before it makes")
    end)
    it('a file that is not there, or not ONNX', function()
      H.errors_with(function() torch.onnx.load(DIR .. 'none.onnx') end, 'onnx.load: ' .. DIR .. 'none.onnx: cannot open the file')
      H.errors_with(function() torch.onnx.load(DIR .. 'mlp_io.pt') end, 'not an ONNX model')
      H.errors_with(function() torch.onnx.load(42) end, 'path must be a string')
    end)
  end)

  describe('damaged and hostile files are errors, never crashes', function()
    local function try(bytes)
      local path = os.tmpname()
      H.write_file(path, bytes)
      local ok, gm = pcall(torch.onnx.load, path)
      os.remove(path)
      if ok then
        -- a damaged file that still reads: running it is a result or a moontorch error
        pcall(gm, torch.randn(5, 6))
        return true
      end
      assert.truthy(tostring(gm):find('onnx', 1, true), tostring(gm))
      return false
    end

    it('every truncation', function()
      local bytes = H.read_file(DIR .. 'mlp.onnx')
      local loaded = 0
      for n = 0, #bytes - 1 do
        if try(bytes:sub(1, n)) then loaded = loaded + 1 end
      end
      assert.is_true(loaded < #bytes / 2)
    end)

    it('random byte damage', function()
      local bytes = H.read_file(DIR .. 'mlp.onnx')
      local rng = torch.Generator()
      rng:manual_seed(7)
      for _ = 1, 400 do
        local b = { bytes:byte(1, -1) }
        for _ = 1, 1 + torch.randint(0, 4, { 1 }, { generator = rng })[1]:item() do
          local at = torch.randint(1, #b + 1, { 1 }, { generator = rng })[1]:item()
          b[at] = torch.randint(0, 256, { 1 }, { generator = rng })[1]:item()
        end
        try(string.char(unpack(b)))
      end
    end)

    -- protobuf by hand: a field (number, wire type 2) holding bytes
    local function varint(v)
      local s = {}
      repeat
        local b = v % 128
        v = math.floor(v / 128)
        s[#s + 1] = string.char(v > 0 and b + 128 or b)
      until v == 0
      return table.concat(s)
    end
    local function field(num, bytes) return varint(num * 8 + 2) .. varint(#bytes) .. bytes end

    it('messages nested deeper than 100 (a graph in an attribute in a node in a graph ...) are refused', function()
      -- ModelProto.graph (7) > GraphProto.node (1) > NodeProto.attribute (5) > AttributeProto.g (6) > ...
      local function nested(depth)
        local g = field(1, field(4, 'Relu'))
        for _ = 1, depth do
          local attr = field(1, 'then_branch') .. varint(20 * 8) .. varint(5) .. field(6, g) -- type 20 = GRAPH
          g = field(1, field(4, 'If') .. field(5, attr))
        end
        return field(7, g)
      end
      for _, depth in ipairs({ 10, 3000 }) do
        local path = os.tmpname()
        H.write_file(path, nested(depth))
        local ok, e = pcall(torch.onnx.load, path)
        os.remove(path)
        assert.is_false(ok)
        if depth == 10 then
          assert.truthy(tostring(e):find('holds a graph', 1, true), tostring(e)) -- (read, then refused)
        else
          assert.truthy(tostring(e):find('its messages nest more than 100 deep', 1, true), tostring(e))
        end
      end
    end)

    it('huge sizes: a tensor whose dims multiply past any memory', function()
      -- TensorProto: dims (1, varint) x3 = 2^40 each, data_type (2) = 1, name (8) = 'w'
      local t = varint(8) .. varint(2 ^ 40) .. varint(8) .. varint(2 ^ 40) .. varint(16) .. varint(1) .. field(8, 'w')
      local path = os.tmpname()
      H.write_file(path, field(7, field(5, t)))
      H.errors_with(function() torch.onnx.load(path) end, "the initializer 'w' has a size out of range")
      -- a plausible size without the data
      t = varint(8) .. varint(1000) .. varint(16) .. varint(1) .. field(8, 'w')
      H.write_file(path, field(7, field(5, t)))
      H.errors_with(function() torch.onnx.load(path) end, "the initializer 'w' holds 0 elements in float_data; its dims say 1000")
      os.remove(path)
    end)
  end)
end)
