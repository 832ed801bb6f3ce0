-- Whole scripts ported from pytorch/examples (issue 27, part 3's port test): mnist, vae, dcgan and
-- word_language_model (spec/ported/*.lua), each written as the Python one reads, with the PyTorch
-- habits that used to trip (see each file's head), on small data the script makes. Each runs under
-- the launcher (bin/moontorch) in a fresh process, must exit 0 with nothing on stderr, and must
-- learn: its RESULT line is checked.
local H = require 'spec.support.helper'

local root = (function()
  local p = io.popen('pwd')
  local d = p:read('*l')
  p:close()
  return d
end)()

local function run(script)
  local err = os.tmpname()
  local p = io.popen(('cd %s && %s bin/moontorch spec/ported/%s 2>%s; echo "EXIT $?"'):format(H.sh_quote(root),
    H.sh_quote(H.luajit), script, H.sh_quote(err)))
  local out = p:read('*a')
  p:close()
  local stderr = H.read_file(err) or ''
  os.remove(err)
  local result = {}
  for k, v in (out:match('RESULT ([^\n]*)') or ''):gmatch('([%w_]+)=(%S+)') do result[k] = tonumber(v) or v end
  return out, stderr, result
end

describe('scripts ported from pytorch/examples run with none of the frictions', function()
  it('mnist: Net, Adadelta, StepLR, nll_loss, the test loop under torch.no_grad', function()
    local out, err, r = run('mnist.lua')
    assert.truthy(out:find('EXIT 0\n', 1, true), out .. err)
    assert.are.equal('', err)
    assert.are.equal(1199882, r.params) -- PyTorch's Net: 320 + 18496 + 1179776 + 1290
    assert.is_true(r.first_loss > 2.0, out)
    assert.is_true(r.loss < 0.5 * r.first_loss, out)
    assert.is_true(r.acc >= 0.9, out)
    H.near(r.lr, 1.0 * 0.7 ^ 3, 1e-4, 0) -- StepLR(step_size=1, gamma=0.7) after 3 epochs
    assert.is_true(math.abs(r.seconds - r.timer) < 0.5, out) -- the user's clock_gettime and torch.Timer agree
    assert.truthy(out:find('Train Epoch: 1 [0/96 (0%)]', 1, true), out)
  end)

  it('vae: encode, reparameterize, decode, BCE + KLD, Adam, sampling', function()
    local out, err, r = run('vae.lua')
    assert.truthy(out:find('EXIT 0\n', 1, true), out .. err)
    assert.are.equal('', err)
    assert.are.equal(652824, r.params) -- 784*400+400 + 2*(400*20+20) + 20*400+400 + 400*784+784
    assert.are.equal('16x1x28x28', r.comparison)
    assert.is_true(r.test < 0.5 * r.first_test, out)
    assert.is_true(r.train_last < r.train_first, out)
  end)

  it('dcgan: weights_init by class name, ConvTranspose2d / Conv2d with options, BCELoss, two Adams', function()
    local out, err, r = run('dcgan.lua')
    assert.truthy(out:find('EXIT 0\n', 1, true), out .. err)
    assert.are.equal('', err)
    assert.are.equal(17, r.inits) -- 10 convolutions and 7 batch norms found by their names
    assert.are.equal('nn.ConvTranspose2d', r.first)
    assert.are.equal('8x3x64x64', r.fake)
    assert.is_true(r.range <= 1 and r.range > 0, out) -- tanh
    assert.is_true(r.errD > 0 and r.errG > 0, out)
  end)

  it('word_language_model: an LSTM with flatten_parameters, hand-written SGD over model:parameters()', function()
    local out, err, r = run('word_language_model.lua')
    assert.truthy(out:find('EXIT 0\n', 1, true), out .. err)
    assert.are.equal('', err)
    assert.is_true(r.first_val > 2.3, out) -- about log(12) before training
    assert.is_true(r.val < 0.5, out)
  end)
end)
