-- torch.export / torch.load_program / the C API (core/program/program.c) / moontorch-run /
-- program_check (tools/: the C test, no Lua in its process).
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local T = require 'moontorch.tensor'
local C = require('moontorch.ffi').C

local BUILD = os.getenv('MOONTORCH_BUILD_DIR') or 'build'
local dir = os.tmpname()
os.remove(dir)
os.execute("mkdir -p '" .. dir .. "'")
local function path(name) return dir .. '/' .. name end
local function sh(cmd)
  local f = io.popen(cmd .. ' 2>&1; echo "rc=$?"')
  local out = f:read('*a')
  f:close()
  local rc = tonumber(out:match('rc=(%d+)%s*$'))
  return out:gsub('rc=%d+%s*$', ''), rc
end

-- the models of the issue, in evaluation mode, with their example inputs
local Block, Module = torch.class('spec_program.ResBlock', 'nn.Module')
function Block:__init(c)
  Module.__init(self)
  self.conv1 = nn.Conv2d(c, c, 3, { padding = 1, bias = false })
  self.bn1 = nn.BatchNorm2d(c)
  self.conv2 = nn.Conv2d(c, c, 3, { padding = 1, bias = false })
  self.bn2 = nn.BatchNorm2d(c)
  self.relu = nn.ReLU()
end
function Block:forward(x)
  local out = self.relu(self.bn1(self.conv1(x)))
  out = self.bn2(self.conv2(out))
  return self.relu(out + x)
end

local function models()
  torch.manual_seed(3)
  local m = {}
  m.mlp = { nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4)), { torch.randn(5, 6) } }
  m.lenet = { nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
    nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10)),
    { torch.randn(1, 1, 28, 28) } }
  local rb = Block(4)
  -- running statistics and affine parameters other than the initial ones
  for _, bn in ipairs({ rb.bn1, rb.bn2 }) do
    bn.running_mean:uniform_(-0.5, 0.5)
    bn.running_var:uniform_(0.5, 1.5)
    torch.no_grad(function() bn.weight:uniform_(0.5, 1.5); bn.bias:uniform_(-0.2, 0.2) end)
  end
  m.resblock = { rb, { torch.randn(2, 4, 8, 8) } }
  m.encoder = { nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16 }), { torch.randn(4, 2, 8) } }
  m.encoder_bf = { nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, batch_first = true, norm_first = true,
    activation = 'gelu' }), { torch.randn(2, 5, 8) } }
  for _, e in pairs(m) do e[1]:eval() end
  return m
end

describe('programs (torch.export, the C API, moontorch-run)', function()
  teardown(function() os.execute("rm -rf '" .. dir .. "'") end)
  local M = models()
  local order = { 'mlp', 'lenet', 'resblock', 'encoder', 'encoder_bf' }

  it('export -> torch.load_program gives the module\'s outputs (MLP, LeNet, ResNet block, transformer layers)', function()
    for _, name in ipairs(order) do
      local m, xs = M[name][1], M[name][2]
      local n = torch.export(m, xs, path(name .. '.mtp'))
      assert.is_true(n > 0, name)
      local p = torch.load_program(path(name .. '.mtp'))
      assert.are.equal('torch.Program', torch.typename(p))
      local got = p(unpack(xs))
      local want = torch.no_grad(function() return m(unpack(xs)) end)
      assert.are.same(want:size(), got:size())
      H.near(got, want, 1e-6, 1e-5)
      if name ~= 'encoder' and name ~= 'encoder_bf' then
        assert.is_true(torch.equal(got, want), name .. ': the same front doors, the same numbers')
      end
      -- and again (the planned buffers reused), on other inputs of the same shapes
      local x2 = {}
      for i, x in ipairs(xs) do x2[i] = torch.randn(x:size()) end
      H.near(p(unpack(x2)), torch.no_grad(function() return m(unpack(x2)) end), 1e-6, 1e-5)
      -- the inputs' values are written into the safetensors file the C test reads, with the outputs
      local tensors = { output1 = want:detach() }
      tensors[torch.load(path(name .. '.mtp')).inputs[1].name] = xs[1]
      torch.save_safetensors(tensors, path(name .. '.safetensors'))
    end
  end)

  it('the C test (tools/program_check.c, no Lua in its process) gives the module\'s outputs', function()
    local bin = BUILD .. '/bin/program_check'
    if not io.open(bin, 'rb') then
      local _, rc = sh('cmake --build ' .. BUILD .. ' --target program_check')
      assert.are.equal(0, rc)
    end
    local out, rc = sh(bin .. " '" .. dir .. "' " .. table.concat(order, ' '))
    assert.are.equal(0, rc, out)
    for _, name in ipairs(order) do
      assert.truthy(out:find(name .. ': ok %(1 inputs, 1 outputs, %d+ planned buffers'), out)
    end
    -- the process is the C program alone: its shared libraries hold no Lua
    local ldd = sh('ldd ' .. bin)
    assert.is_nil(ldd:find('luajit', 1, true), ldd)
    assert.truthy(ldd:find('libmoontorch', 1, true), ldd)
  end)

  it('moontorch-run runs a program on a safetensors file, and writes the outputs', function()
    local out, rc = sh(BUILD .. "/bin/moontorch-run '" .. path('lenet.mtp') .. "' '" .. path('lenet.safetensors')
      .. "' -o '" .. path('out.safetensors') .. "' --repeat 3")
    assert.are.equal(0, rc, out)
    assert.truthy(out:find('output1: float32 %[1, 10%] = '), out)
    assert.truthy(out:find('3 runs: [%d.]+ us a run'), out)
    local written = torch.load_safetensors(path('out.safetensors'))
    local want = torch.load_safetensors(path('lenet.safetensors')).output1
    assert.is_true(torch.equal(written.output1, want))
    local err, rc2 = sh(BUILD .. "/bin/moontorch-run '" .. path('lenet.mtp') .. "' '" .. path('mlp.safetensors') .. "'")
    assert.are.equal(1, rc2)
    assert.truthy(err:find("program_run: input 1 ('input') is float32 [5, 6]; the program takes float32 [1, 1, 28, 28]",
      1, true), err)
    local _, rc3 = sh(BUILD .. '/bin/moontorch-run')
    assert.are.equal(2, rc3)
  end)

  it('the README\'s C example (examples/program_example.c) runs an exported program', function()
    local bin = BUILD .. '/bin/program_example'
    if not io.open(bin, 'rb') then
      local _, rc = sh('cmake --build ' .. BUILD .. ' --target program_example')
      assert.are.equal(0, rc)
    end
    -- its input: 0.01 * i in the program's input shape
    local m, x = M.mlp[1], torch.arange(0, 30):mul(0.01):view(5, 6)
    local want = torch.no_grad(function() return m(x) end)
    local out, rc = sh(bin .. " '" .. path('mlp.mtp') .. "'")
    assert.are.equal(0, rc, out)
    local vals = {}
    for v in out:match('output 1: 20 values:([^\n]*)'):gmatch('%S+') do vals[#vals + 1] = tonumber(v) end
    assert.are.equal(4, #vals, out)
    for i = 1, 4 do assert.is_true(math.abs(vals[i] - want:view(-1)[i]:item()) <= 1e-6, out) end
    local err, rc2 = sh(bin .. " '" .. path('nothing.mtp') .. "'")
    assert.are.equal(1, rc2)
    assert.truthy(err:find('program_example: program_load: ', 1, true), err)
  end)

  it('memory is planned once: results written into a few reused buffers', function()
    local p = torch.load_program(path('encoder.mtp'))
    local pr = rawget(p, '_program')
    local nb = C.mt_program_num_buffers(pr)
    assert.is_true(nb >= 1)
    -- fewer buffers than the values that take one: lifetimes do not overlap
    local s = torch.load(path('encoder.mtp'))
    local planned = 0
    for _, n in ipairs(s.nodes) do
      if ({ add = 1, relu = 1, gelu = 1, addmm = 1, baddbmm = 1, bmm = 1, matmul = 1, mul = 1, sub = 1 })[n.op] then
        planned = planned + 1
      end
    end
    assert.is_true(nb < planned, ('%d buffers for %d results'):format(nb, planned))
    -- runs leave no tensor behind (the buffers stay with the program)
    local x = M.encoder[2][1]
    p(x)
    T.sweep()
    local before = tonumber(C.mt_get_stats().live_tensors)
    for _ = 1, 5 do local y = p(x); y = nil end
    T.sweep()
    assert.are.equal(before, tonumber(C.mt_get_stats().live_tensors))
  end)

  it('the file: torch.save\'s format holding plain values and the weights', function()
    local s = torch.load(path('mlp.mtp'))
    assert.are.equal('moontorch.program', s.format)
    assert.are.equal(1, s.version)
    assert.are.same({ { name = 'input', value = 1 } }, s.inputs)
    local ops = {}
    for i, n in ipairs(s.nodes) do ops[i] = n.op end
    -- F.linear on a 2-D input: addmm(bias, x, weight:t()); relu
    assert.are.same({ 'transpose', 'addmm', 'relu', 'transpose', 'addmm' }, ops)
    assert.are.same({ dtype = 'float32', shape = { 5, 6 } }, s.values[1])
  end)

  it('what cannot be exported is an error naming it', function()
    local bn = nn.Sequential(nn.BatchNorm1d(3))
    H.errors_with(function() torch.export(bn, torch.randn(4, 3), path('x.mtp')) end,
      'nn.BatchNorm1d in training mode (call module:eval())')
    local m = nn.Sequential(nn.Linear(2, 2), nn.Bilinear(2, 2, 2)):eval()
    H.errors_with(function() torch.export(m, torch.randn(1, 2), path('x.mtp')) end, 'nn.Bilinear (at 1) cannot be exported')
    local E, EM = torch.class('spec_program.Indexing', 'nn.Module')
    function E:forward(x) return x:sum() end
    H.errors_with(function() torch.export(E(), torch.randn(2), path('x.mtp')) end, 'the method sum (node sum_1) cannot be exported')
    H.errors_with(function() torch.export(nn.Linear(2, 2), 'x', path('x.mtp')) end, 'example_inputs must be a tensor')
    H.errors_with(function() torch.load_program(path('nothing.mtp')) end, 'load_program: ')
  end)

  it('damaged and hostile program files are errors, never crashes', function()
    local good = torch.load(path('mlp.mtp'))
    local function try(mutate, want)
      local s = torch.load(path('mlp.mtp'))
      mutate(s)
      torch.save(s, path('bad.mtp'))
      local ok, err = pcall(torch.load_program, path('bad.mtp'))
      if want == 'run' then
        assert.is_true(ok, tostring(err))
        return err
      end
      assert.is_false(ok, want)
      assert.truthy(tostring(err):find(want, 1, true), tostring(err))
    end
    try(function(s) s.format = 'something' end, 'not a moontorch program')
    try(function(s) s.version = 2 end, 'program version 2, this build reads version 1')
    try(function(s) s.nodes[2].op = 'system' end, "the op 'system' is not one a program can hold")
    try(function(s) s.nodes[2].inputs[1] = 99 end, 'input 1 is not a value')
    try(function(s) s.nodes[2].inputs[1] = s.nodes[3].outputs[1] end, 'reads value')
    try(function(s) s.nodes[3].outputs[1] = 1 end, 'value 1 is defined twice')
    try(function(s) s.values[1].dtype = 'complex64' end, 'value 1 has no dtype moontorch knows')
    try(function(s) s.values[1].shape = { 2 ^ 50 } end, 'value 1 has a size out of range')
    try(function(s) s.nodes[1].attrs = { dim0 = 99, dim1 = 0 } end, 'its attribute dim0 is out of range')
    try(function(s) s.outputs = {} end, 'outputs')
    try(function(s) s.constants[1].tensor = torch.ones(3) end, "differs from value")
    try(function(s) s.nodes[5] = nil; s.outputs = { 42 } end, 'output 1 is not a defined value')
    try(function(s) s.inputs[1].value = 0 end, 'input 1 is not {name =, value =}')
    -- a value declared with a shape the op does not give: caught when it runs
    local p = try(function(s) s.values[#s.values].shape = { 5, 3 } end, 'run')
    H.errors_with(function() p(torch.randn(5, 6)) end, 'gave float32 [5, 4] where the program declares float32 [5, 3]')
    -- inputs checked against the declared types
    local q = torch.load_program(path('mlp.mtp'))
    H.errors_with(function() q(torch.randn(5, 7)) end, "input 1 ('input') is float32 [5, 7]; the program takes float32 [5, 6]")
    H.errors_with(function() q(torch.randn(5, 6, { dtype = torch.float64 })) end, 'is float64 [5, 6]')
    H.errors_with(function() q() end, 'takes 1 inputs, got 0')
    -- damaged bytes: the checksum of torch.save's format
    local bytes = H.read_file(path('mlp.mtp'))
    H.write_file(path('bad.mtp'), bytes:sub(1, 200) .. string.char((bytes:byte(201) + 1) % 256) .. bytes:sub(202))
    H.errors_with(function() torch.load_program(path('bad.mtp')) end, 'load_program: ')
    H.write_file(path('bad.mtp'), bytes:sub(1, 100))
    H.errors_with(function() torch.load_program(path('bad.mtp')) end, 'load_program: ')
    assert.is_table(good)
  end)
end)
