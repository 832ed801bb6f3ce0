-- examples/fashion_mnist.lua, the main demo, run as a user runs it (bin/moontorch in a fresh
-- process) on a small Fashion-MNIST-shaped data set of our own (IDX files written here, so the
-- spec needs neither the Debian package nor minutes): its options and their errors, training
-- and testing, the progress lines, checkpoints every epoch, --resume giving the same numbers as
-- an uninterrupted run, and the SVG curves.
local H = require 'spec.support.helper'
local root = io.popen('pwd'):read('*l')
local sh_quote = H.sh_quote

local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  os.execute('mkdir -p ' .. sh_quote(p))
  return p
end

-- run the demo with `args`; returns its output (stdout and stderr) and exit status
local function demo(args)
  local p = io.popen(('cd %s && %s bin/moontorch examples/fashion_mnist.lua %s </dev/null 2>&1; echo "EXIT $?"')
    :format(sh_quote(root), sh_quote(H.luajit), args))
  local out = p:read('*a')
  p:close()
  local code = tonumber(out:match('EXIT (%d+)%s*$'))
  return out:gsub('EXIT %d+%s*$', ''), code
end

-- a file's bytes, nil when it is not there
local function read(path)
  local ok, s = pcall(H.read_file, path)
  return ok and s or nil
end

-- the epoch lines without their timings
local function epochs_of(out)
  local t = {}
  for line in out:gmatch('[^\n]+') do
    local e = line:match('^epoch %d+: .-%%')
    if e then t[#t + 1] = e end
  end
  return t
end

describe('examples/fashion_mnist.lua', function()
  local data = tmpdir()
  H.fashion_split(data, 'train', 640, 3)
  H.fashion_split(data, 't10k', 200, 5)
  local common = ('--data %s --batch-size 32 --threads 1'):format(sh_quote(data))

  it('--help prints the options and exits 0', function()
    local out, code = demo('--help')
    assert.equal(0, code)
    for _, o in ipairs({ '--epochs', '--batch-size', '--lr', '--optimizer', '--threads', '--seed', '--resume', '--data' }) do
      assert.truthy(out:find(o, 1, true), o)
    end
  end)

  it('refuses bad options with a message and the usage, exit status 2', function()
    local cases = {
      { '--epochs 0', '--epochs needs a positive whole number, got "0"' },
      { '--epochs 1.5', '--epochs needs a positive whole number, got "1.5"' },
      { '--batch-size', '--batch-size needs a value' },
      { '--lr -1', '--lr needs a positive number, got "-1"' },
      { '--lr nan', '--lr needs a positive number, got "nan"' },
      { '--optimizer lbfgs', '--optimizer must be adam, adamw, sgd or rmsprop, got "lbfgs"' },
      { '--bogus', 'unknown option "--bogus"' },
      { '--seed -3', '--seed needs a whole number from 0, got "-3"' },
    }
    for _, c in ipairs(cases) do
      local out, code = demo(c[1])
      assert.equal(2, code, c[1])
      assert.truthy(out:find('fashion_mnist: ' .. c[2], 1, true), c[1] .. ': ' .. out)
      assert.truthy(out:find('usage:', 1, true), c[1])
    end
  end)

  it('names the missing files and the Debian package when the data is not there', function()
    local out, code = demo('--data /nonexistent/fm --epochs 1')
    assert.equal(1, code)
    assert.truthy(out:find('train-images-idx3-ubyte[.gz] not found in /nonexistent/fm', 1, true), out)
    assert.truthy(out:find('dataset-fashion-mnist', 1, true), out)
  end)

  it('trains, tests every epoch, checkpoints and draws its curves; resuming gives the same numbers', function()
    local out_a = tmpdir()
    local out, code = demo(('%s --epochs 2 --out %s'):format(common, sh_quote(out_a)))
    assert.equal(0, code, out)
    assert.truthy(out:find('Fashion-MNIST: 640 training and 200 test images; adam, lr 0.003, batch 32, 2 epochs, 1 thread, seed 1',
      1, true), out)
    assert.truthy(out:find('Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))', 1, true))
    -- not a terminal: the progress bar prints plain lines, never a carriage return
    assert.falsy(out:find('\r', 1, true))
    assert.truthy(out:find('epoch 1/2 100%% 20/20 %[.-batch/s, loss=[%d.]+%]'), out)
    local lines = epochs_of(out)
    assert.equal(2, #lines, out)
    local l1, a1 = lines[1]:match('train loss ([%d.]+), test loss [%d.]+, test accuracy ([%d.]+)%%')
    local l2, a2 = lines[2]:match('train loss ([%d.]+), test loss [%d.]+, test accuracy ([%d.]+)%%')
    assert.truthy(tonumber(l2) < tonumber(l1), out)
    assert.truthy(tonumber(a2) >= 90, out) -- the squares are easy: a working network finds them
    assert.truthy(out:find('final test accuracy: ' .. a2 .. '%', 1, true))
    for _, f in ipairs({ 'epoch1.mt', 'epoch2.mt', 'checkpoint.mt', 'curves.svg' }) do
      assert.truthy(read(out_a .. '/' .. f), f)
    end
    -- the checkpoint holds what a resume needs
    local torch = H.torch
    local c = torch.load(out_a .. '/epoch1.mt')
    assert.equal(1, c.epoch)
    assert.equal(2, c.plan.epochs)
    assert.equal('adam', c.plan.optimizer)
    assert.truthy(c.model['0.weight'] ~= nil)
    assert.truthy(c.optimizer.state ~= nil and c.optimizer.param_groups ~= nil)
    assert.truthy(c.scheduler.total_steps == 40)
    assert.equal(1, #c.history.test_acc)
    -- the picture: an SVG with both panels
    local svg = read(out_a .. '/curves.svg')
    assert.truthy(svg:find('^<%?xml'))
    assert.truthy(svg:find('<svg xmlns="http://www.w3.org/2000/svg"', 1, true))
    assert.truthy(svg:find('>loss</text>', 1, true) and svg:find('>accuracy (%)</text>', 1, true))
    assert.truthy(svg:find('</svg>%s*$'))

    -- resuming from the epoch-1 checkpoint, in a fresh process, gives epoch 2 exactly
    local out_b = tmpdir()
    local rout, rcode = demo(('%s --resume %s --out %s'):format(common, sh_quote(out_a .. '/epoch1.mt'), sh_quote(out_b)))
    assert.equal(0, rcode, rout)
    assert.truthy(rout:find('resumed from ' .. out_a .. '/epoch1.mt after epoch 1 of 2', 1, true), rout)
    local rlines = epochs_of(rout)
    assert.same({ lines[2] }, rlines)
    -- its curves hold both epochs (the history came with the checkpoint)
    assert.equal(2, #torch.load(out_b .. '/checkpoint.mt').history.test_acc)

    -- a bare --resume takes the latest checkpoint of --out; a finished run has nothing left to do
    local dout, dcode = demo(('%s --out %s --resume'):format(common, sh_quote(out_a)))
    assert.equal(0, dcode, dout)
    assert.truthy(dout:find('the checkpoint has finished all 2 epochs', 1, true), dout)
    assert.truthy(dout:find('final test accuracy: ' .. a2 .. '%', 1, true), dout)

    -- a resume that contradicts the checkpoint's plan is refused
    local xout, xcode = demo(('%s --resume %s --epochs 3 --out %s'):format(common, sh_quote(out_a .. '/epoch1.mt'), sh_quote(out_b)))
    assert.equal(2, xcode)
    assert.truthy(xout:find('was made with --epochs 2; resume it without --epochs', 1, true), xout)
    os.execute('rm -rf ' .. sh_quote(out_a) .. ' ' .. sh_quote(out_b))
  end)

  it('Ctrl-C stops a run with a word on the checkpoint to resume from (exit status 130)', function()
    local out_dir = tmpdir()
    -- one SIGINT to the demo's process alone, as a terminal's Ctrl-C sends one (timeout(1) signals
    -- its process group as well, and a second SIGINT ends any LuaJIT at once)
    local p = io.popen(('cd %s && { %s bin/moontorch examples/fashion_mnist.lua %s --epochs 500 --out %s </dev/null 2>&1 & '
      .. 'pid=$!; sleep 3; kill -INT $pid; wait $pid; echo "EXIT $?"; }'):format(sh_quote(root), sh_quote(H.luajit), common,
      sh_quote(out_dir)))
    local out = p:read('*a')
    p:close()
    assert.truthy(out:find('EXIT 130%s*$'), out)
    assert.falsy(out:find('stack traceback', 1, true), out)
    local n = out:match('fashion_mnist: interrupted; [^\n]*/checkpoint%.mt holds epoch (%d+): %-%-resume continues from it')
    if n then
      -- what it says is on disk is there
      assert.equal(tonumber(n), H.torch.load(out_dir .. '/checkpoint.mt').epoch)
    else
      assert.truthy(out:find('fashion_mnist: interrupted before the first epoch ended; nothing was saved', 1, true), out)
    end
    os.execute('rm -rf ' .. sh_quote(out_dir))
  end)

  it('the optimizer option trains with each optimizer, and a damaged checkpoint is a clear error', function()
    local out_dir = tmpdir()
    for _, o in ipairs({ 'sgd', 'adamw', 'rmsprop' }) do
      local out, code = demo(('%s --epochs 1 --subset 96 --optimizer %s --out %s'):format(common, o, sh_quote(out_dir)))
      assert.equal(0, code, out)
      assert.truthy(out:find('96 training and 200 test images; ' .. o, 1, true), out)
      assert.equal(1, #epochs_of(out))
    end
    local f = assert(io.open(out_dir .. '/checkpoint.mt', 'r+b'))
    f:write('garbage')
    f:close()
    local out, code = demo(('%s --out %s --resume'):format(common, sh_quote(out_dir)))
    assert.equal(1, code)
    assert.truthy(out:find('fashion_mnist: cannot resume from ' .. out_dir .. '/checkpoint.mt: ', 1, true), out)
    H.torch.save({ 1, 2, 3 }, out_dir .. '/other.mt')
    out, code = demo(('%s --out %s --resume %s'):format(common, sh_quote(out_dir), sh_quote(out_dir .. '/other.mt')))
    assert.equal(1, code)
    assert.truthy(out:find('is not a checkpoint of this demo', 1, true), out)
    os.execute('rm -rf ' .. sh_quote(out_dir))
  end)

  it('--amp trains under bfloat16 autocast; examples/quantize_demo.lua quantizes the result (issue 25)', function()
    local out_dir = tmpdir()
    local out, code = demo(('%s --epochs 2 --amp --out %s'):format(common, sh_quote(out_dir)))
    assert.equal(0, code, out)
    local lines = epochs_of(out)
    assert.equal(2, #lines, out)
    local acc = tonumber(lines[2]:match('test accuracy ([%d.]+)%%'))
    assert.truthy(acc >= 90, out)
    -- static quantization after training: the float32 accuracy of the trained network, the quantized one
    -- within a point of it (2 of the 200 images), and both timed
    local p = io.popen(('cd %s && %s bin/moontorch examples/quantize_demo.lua %s --data %s --calibrate 256 --threads 1 2>&1; echo "EXIT $?"')
      :format(sh_quote(root), sh_quote(H.luajit), sh_quote(out_dir .. '/checkpoint.mt'), sh_quote(data)))
    local q = p:read('*a')
    p:close()
    assert.truthy(q:find('EXIT 0%s*$'), q)
    local fa = tonumber(q:match('float32:%s+test accuracy ([%d.]+)%%, 200 images in [%d.]+ ms'))
    local qa = tonumber(q:match('quantized: test accuracy ([%d.]+)%%, 200 images in [%d.]+ ms %([%d.]+x faster, 1 threads%)'))
    assert.are.equal(acc, fa, q)
    assert.truthy(qa and math.abs(qa - fa) <= 1.0, q)
    os.execute('rm -rf ' .. sh_quote(out_dir))
  end)

  teardown(function() os.execute('rm -rf ' .. sh_quote(data)) end)
end)

describe('examples/demo.lua', function()
  it('the tour runs to its end', function()
    local p = io.popen(sh_quote(H.luajit) .. ' bin/moontorch examples/demo.lua 2>&1; echo "EXIT $?"')
    local out = p:read('*a')
    p:close()
    assert.truthy(out:find('EXIT 0%s*$'), out)
    assert.truthy(out:find('the loaded copy agrees: true', 1, true), out)
  end)
end)
