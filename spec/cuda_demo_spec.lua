-- The Fashion-MNIST demo (examples/fashion_mnist.lua) with --device cuda, run as a user runs it (bin/moontorch
-- in a fresh process), on small IDX files of easy images (a bright square whose place is the class): it
-- trains on the device, tests, and learns. On a GPU, or on the CPU emulator (MOONTORCH_CUDA_EMULATE=1, which
-- ./run test sets for spec/cuda_* and the child inherits); pending without either.
local H = require 'spec.support.helper'
local torch = H.torch
local sh_quote = H.sh_quote

local root = H.root or '.'

local function write_split(dir, split, n, seed)
  local x = seed
  local function rand()
    x = (x * 1103515245 + 12345) % 2147483648
    return x / 2147483648
  end
  local imgs, labels = {}, {}
  for i = 1, n do
    local c = (i * 7 + seed) % 10
    local r0, c0 = 2 + math.floor(c / 5) * 12, 2 + (c % 5) * 5
    local px = {}
    for r = 0, 27 do
      for q = 0, 27 do
        local v = math.floor(rand() * 60)
        if r >= r0 and r < r0 + 6 and q >= c0 and q < c0 + 6 then v = 200 + math.floor(rand() * 55) end
        px[#px + 1] = string.char(v)
      end
    end
    imgs[#imgs + 1] = table.concat(px)
    labels[#labels + 1] = string.char(c)
  end
  H.write_file(dir .. '/' .. split .. '-images-idx3-ubyte', H.idx(8, { n, 28, 28 }, table.concat(imgs)))
  H.write_file(dir .. '/' .. split .. '-labels-idx1-ubyte', H.idx(8, { n }, table.concat(labels)))
end

describe('examples/fashion_mnist.lua --device cuda', function()
  if not torch.cuda.is_available() then
    it('needs a GPU or the emulator', function()
      pending('no CUDA device: run with MOONTORCH_CUDA_EMULATE=1 (./run test does)')
    end)
    return
  end
  it('trains on the device and learns', function()
    local dir = os.tmpname()
    os.remove(dir)
    os.execute('mkdir -p ' .. sh_quote(dir))
    write_split(dir, 'train', 320, 3)
    write_split(dir, 't10k', 100, 5)
    local env = torch.cuda.runtime() == 'emulator' and 'MOONTORCH_CUDA_EMULATE=1 ' or ''
    local p = io.popen(('%s%s bin/moontorch examples/fashion_mnist.lua --data %s --out %s --batch-size 32 --epochs 2 ' ..
      '--threads 1 --device cuda </dev/null 2>&1; echo "EXIT $?"'):format(env, sh_quote(H.luajit), sh_quote(dir),
      sh_quote(dir .. '/run')))
    local out = p:read('*a')
    p:close()
    assert.truthy(out:find('EXIT 0', 1, true), out)
    assert.truthy(out:find(', on cuda', 1, true), out)
    local l1 = tonumber(out:match('epoch 1: train loss ([%d.]+)'))
    local l2 = tonumber(out:match('epoch 2: train loss ([%d.]+)'))
    local acc = tonumber(out:match('final test accuracy: ([%d.]+)%%'))
    assert.truthy(l1 and l2 and l2 < l1, out) -- it learns (the CPU reaches 90% on twice the images)
    assert.truthy(acc and acc >= 50, out)
    os.execute('rm -rf ' .. sh_quote(dir))
  end)
  it('refuses a device that is not there, with the usage', function()
    local p = io.popen(('MOONTORCH_CUDA_EMULATE=0 %s bin/moontorch examples/fashion_mnist.lua --device cuda ' ..
      '</dev/null 2>&1; echo "EXIT $?"'):format(sh_quote(H.luajit)))
    local out = p:read('*a')
    p:close()
    assert.truthy(out:find('EXIT 2', 1, true), out)
    assert.truthy(out:find('--device cuda: no CUDA device here', 1, true), out)
  end)
end)
