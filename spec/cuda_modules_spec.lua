-- Modules, optimizers and files on CUDA (core/gpu/): a model moved with m:to('cuda') or built with
-- {device='cuda'} computes what it computes on the CPU (forward, gradients, optimizer steps), trains, and
-- goes through torch.save / torch.load (map_location) with its values; the Modules note's device lines run
-- when a CUDA device is there. On a GPU, or on the CPU emulator (MOONTORCH_CUDA_EMULATE=1, as ./run test
-- runs spec/cuda_*).
local H = require 'spec.support.helper'
local torch = H.torch
local nn, F = torch.nn, torch.nn.functional

-- a module's parameters' gradients and its output on `dev`, from one seed
local function run(make, input, dev)
  torch.manual_seed(7)
  local m = make()
  m:to(dev)
  local x = input():to(dev)
  if x.dtype == torch.float32 then x:requires_grad_() end
  local y = m(x)
  local out = type(y) == 'table' and y[1] or y
  local g = torch.arange(1, out:numel() + 1, { dtype = out.dtype }):mul(0.01):sin():reshape(out:size()):to(dev)
  out:backward(g)
  local list = {}
  for _, p in ipairs(m:parameters()) do list[#list + 1] = p.grad and p.grad:cpu() or false end
  list[#list + 1] = x.grad and x.grad:cpu() or false
  return out:detach():cpu(), list
end

describe('modules on CUDA', function()
  if not torch.cuda.is_available() then
    it('needs a GPU or the emulator', function()
      pending('no CUDA device: run with MOONTORCH_CUDA_EMULATE=1 (./run test does)')
    end)
    return
  end

  local cases = {
    { 'Linear', function() return nn.Linear(5, 3) end, function() return torch.randn(4, 5) end },
    { 'MLP', function() return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4), nn.Softmax(2)) end,
      function() return torch.randn(3, 6) end },
    { 'Conv2d', function() return nn.Conv2d(2, 3, 3, { padding = 1, stride = 2 }) end,
      function() return torch.randn(2, 2, 7, 6) end },
    { 'Conv1d groups', function() return nn.Conv1d(4, 6, 3, { groups = 2, dilation = 2 }) end,
      function() return torch.randn(2, 4, 9) end },
    { 'ConvTranspose2d', function() return nn.ConvTranspose2d(3, 2, 3, { stride = 2, output_padding = 1 }) end,
      function() return torch.randn(1, 3, 4, 4) end },
    { 'BatchNorm2d (training)', function() return nn.BatchNorm2d(3) end, function() return torch.randn(4, 3, 5, 5) end },
    { 'LayerNorm', function() return nn.LayerNorm(6) end, function() return torch.randn(3, 4, 6) end },
    { 'GroupNorm', function() return nn.GroupNorm(2, 4) end, function() return torch.randn(2, 4, 3, 3) end },
    { 'MaxPool2d + AvgPool2d', function() return nn.Sequential(nn.MaxPool2d(2), nn.AvgPool2d(2, { padding = 1 })) end,
      function() return torch.randn(2, 3, 8, 8) end },
    { 'AdaptiveAvgPool2d', function() return nn.AdaptiveAvgPool2d({ 3, 2 }) end, function() return torch.randn(2, 3, 7, 5) end },
    { 'Upsample bilinear', function() return nn.Upsample({ scale_factor = 2, mode = 'bilinear' }) end,
      function() return torch.randn(1, 2, 3, 4) end },
    { 'Embedding', function() return nn.Embedding(10, 4, { padding_idx = 2 }) end,
      function() return torch.tensor({ { 1, 2, 5 }, { 10, 3, 2 } }, { dtype = torch.int64 }) end },
    { 'LSTM', function() return nn.LSTM(4, 5, { num_layers = 2, batch_first = true }) end,
      function() return torch.randn(2, 3, 4) end },
    { 'GRU bidirectional', function() return nn.GRU(3, 4, { bidirectional = true }) end,
      function() return torch.randn(5, 2, 3) end },
    { 'TransformerEncoderLayer', function()
      return nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, dropout = 0, batch_first = true })
    end, function() return torch.randn(2, 5, 8) end },
    { 'PReLU, GELU, SiLU', function() return nn.Sequential(nn.PReLU(), nn.GELU(), nn.SiLU()) end,
      function() return torch.randn(3, 4) end },
  }
  for _, c in ipairs(cases) do
    it(c[1] .. ': forward and gradients equal the CPU\'s', function()
      local yc, gc = run(c[2], c[3], 'cpu')
      local yd, gd = run(c[2], c[3], 'cuda')
      H.near(yd, yc, 1e-5, 1e-5)
      assert.are.equal(#gc, #gd)
      for i = 1, #gc do
        if gc[i] then H.near(gd[i], gc[i], 1e-4, 1e-4) end
      end
    end)
  end

  it('builds on the device ({device = "cuda"}) and moves back and forth', function()
    local m = nn.Linear(5, 3, { device = 'cuda' })
    assert.are.equal('cuda', m.weight.device.type)
    assert.are.equal('cuda', m.bias.device.type)
    m:to('cpu')
    assert.are.equal('cpu', m.weight.device.type)
    m:cuda()
    assert.are.equal('cuda', m.weight.device.type)
    local bn = nn.BatchNorm1d(3):cuda()
    assert.are.equal('cuda', bn.running_mean.device.type) -- buffers follow
    H.errors_with(function() return m(torch.randn(2, 5)) end, 'same device')
  end)

  for _, o in ipairs({
    { 'SGD', function(p) return torch.optim.SGD(p, { lr = 0.1, momentum = 0.9, nesterov = true, weight_decay = 0.01 }) end },
    { 'Adam', function(p) return torch.optim.Adam(p, { lr = 0.01, amsgrad = true }) end },
    { 'AdamW', function(p) return torch.optim.AdamW(p, { lr = 0.01 }) end },
    { 'RMSprop', function(p) return torch.optim.RMSprop(p, { lr = 0.01, centered = true, momentum = 0.5 }) end },
    { 'Adagrad', function(p) return torch.optim.Adagrad(p, { lr = 0.1, lr_decay = 0.01 }) end },
    { 'Adadelta', function(p) return torch.optim.Adadelta(p, { weight_decay = 0.1 }) end },
    { 'Adamax', function(p) return torch.optim.Adamax(p, { lr = 0.01 }) end },
    { 'NAdam', function(p) return torch.optim.NAdam(p, { lr = 0.01 }) end },
  }) do
    it(o[1] .. ': three steps equal the CPU\'s', function()
      local function steps(dev)
        torch.manual_seed(3)
        local m = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2)):to(dev)
        local opt = o[2](m:parameters())
        local x, y = torch.randn(8, 4):to(dev), torch.randn(8, 2):to(dev)
        for _ = 1, 3 do
          opt:zero_grad()
          F.mse_loss(m(x), y):backward()
          opt:step()
        end
        local ps = {}
        for i, p in ipairs(m:parameters()) do ps[i] = p:detach():cpu() end
        return ps
      end
      local pc, pd = steps('cpu'), steps('cuda')
      for i = 1, #pc do H.near(pd[i], pc[i], 1e-5, 1e-5) end
    end)
  end

  it('trains: a small classifier\'s loss falls', function()
    torch.manual_seed(0)
    local m = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2)):cuda()
    local opt = torch.optim.Adam(m:parameters(), { lr = 0.05 })
    local x = torch.randn(64, 2):cuda()
    local y = (x:select(2, 1) * x:select(2, 2)):gt(0):long():add(1)
    local first, last
    for i = 1, 60 do
      opt:zero_grad()
      local loss = F.cross_entropy(m(x), y)
      loss:backward()
      opt:step()
      if i == 1 then first = loss:item() end
      last = loss:item()
    end
    assert.is_true(last < first * 0.6, ('loss %g -> %g'):format(first, last))
  end)

  it('saves and loads device tensors and modules, map_location onto the device and between devices', function()
    local path = os.tmpname()
    local t = torch.arange(6, { dtype = torch.float32 }):reshape(2, 3):cuda()
    local m = nn.Linear(3, 2):cuda()
    torch.save({ t = t, sd = m:state_dict() }, path)
    local back = torch.load(path, { map_location = 'cuda' })
    assert.are.equal('cuda', back.t.device.type)
    H.near(back.t:cpu(), t:cpu(), 0, 0)
    local cpu = torch.load(path) -- device tensors load on the CPU without map_location (README, "Devices")
    assert.are.equal('cpu', cpu.t.device.type)
    H.near(cpu.t, t:cpu(), 0, 0)
    local m2 = nn.Linear(3, 2)
    m2:load_state_dict(cpu.sd)
    H.near(m2.weight, m.weight:cpu(), 0, 0)
    if torch.cuda.device_count() >= 2 then
      local other = torch.load(path, { map_location = 'cuda:1' })
      assert.are.equal(1, other.t.device.index)
      H.near(other.t:cpu(), t:cpu(), 0, 0)
    end
    os.remove(path)
  end)

  it('runs the Modules note\'s device lines (../shared/acceptance/modules_note.lua) on the device', function()
    -- (./run gpu-check points MOONTORCH_MODULES_NOTE at the copy carried to the GPU machine in .device/)
    local note = os.getenv('MOONTORCH_MODULES_NOTE') or '../shared/acceptance/modules_note.lua'
    local f = io.open(note, 'rb') -- (H.read_file raises on a missing file: a clone with nothing beside it has none)
    if not f then pending('no ' .. note .. ' (the team\'s acceptance script beside this checkout)'); return end
    f:close()
    local env = torch.cuda.runtime() == 'emulator' and { 'MOONTORCH_CUDA_EMULATE=1' } or {}
    local out, ok, err = H.run_lua(H.read_file(note), env)
    assert.is_true(ok, err)
    assert.are.equal('', err)
    assert.is_true(#out >= 0)
  end)
end)
