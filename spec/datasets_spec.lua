-- moontorch.datasets (lua/datasets.lua, core/idx.c): IDX files of every data type, plain and
-- gzipped, hostile files refused with clear errors, the MNIST family over small files written here,
-- the DataLoader's whole-batch path, Normalize, and Debian's Fashion-MNIST files when installed.
-- The Fashion-MNIST values were read with /usr/bin/python3's gzip and struct:
--   b = gzip.open('/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz').read(); list(b[8:18])
--   im = gzip.open('.../train-images-idx3-ubyte.gz').read()[16:]; sum(im[:784])
--   x = torch.tensor(list(t10k_im[:784]), dtype=torch.uint8).view(1, 28, 28).float().div(255)
--   ((x - 0.2860) / 0.3530).mean().item()   (torch 1.13)
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'
local datasets = require 'moontorch.datasets'
local data = require 'moontorch.utils.data'

local dir = os.tmpname()
os.remove(dir)
assert(os.execute('mkdir -p ' .. dir) == 0)

local function bytes(t) return string.char(unpack(t)) end
local function u32(n) return bytes({ math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256 }) end
local idx = H.idx
local function write(name, s)
  local p = dir .. '/' .. name
  H.write_file(p, s)
  return p
end
local function gz(path)
  assert(os.execute(('gzip -kf %q'):format(path)) == 0)
  return path .. '.gz'
end

describe('moontorch.datasets', function()
  teardown(function() os.execute(('rm -rf %q'):format(dir)) end)

  it('is torch.datasets', function() assert.are.equal(datasets, torch.datasets) end)

  describe('read_idx', function()
    it('reads every IDX data type, big-endian, into a tensor of that dtype and sizes', function()
      local cases = {
        { 0x08, torch.uint8, bytes({ 0, 7, 255, 128 }), { 0, 7, 255, 128 } },
        { 0x09, torch.int8, bytes({ 0, 127, 255, 128 }), { 0, 127, -1, -128 } },
        { 0x0B, torch.int16, bytes({ 0, 1, 255, 254, 127, 255, 128, 0 }), { 1, -2, 32767, -32768 } },
        { 0x0C, torch.int32, bytes({ 0, 1, 134, 160, 255, 255, 255, 255, 0, 0, 0, 0, 128, 0, 0, 0 }),
          { 100000, -1, 0, -2147483648 } },
        { 0x0D, torch.float32, bytes({ 63, 192, 0, 0, 192, 32, 0, 0, 0, 0, 0, 0, 127, 128, 0, 0 }), { 1.5, -2.5, 0, math.huge } },
        { 0x0E, torch.float64, bytes({ 192, 2, 0, 0, 0, 0, 0, 0, 63, 240, 0, 0, 0, 0, 0, 0 }) .. string.rep('\0', 16),
          { -2.25, 1, 0, 0 } },
      }
      for _, c in ipairs(cases) do
        local p = write(('t%02x'):format(c[1]), idx(c[1], { 2, 2 }, c[3]))
        for _, path in ipairs({ p, gz(p) }) do
          local t = datasets.read_idx(path)
          assert.are.equal(c[2], t.dtype)
          assert.are.same({ 2, 2 }, H.shape(t))
          assert.are.same({ { c[4][1], c[4][2] }, { c[4][3], c[4][4] } }, t:tolist())
        end
      end
      assert.is_true(datasets.has_zlib())
      local empty = datasets.read_idx(write('empty', idx(0x08, { 0, 5 }, '')))
      assert.are.same({ 0, 5 }, H.shape(empty))
    end)

    it('refuses hostile files with clear errors, at the caller\'s line', function()
      local body = string.rep('\1', 6)
      local function refuse(name, content, msg)
        local p = write(name, content)
        local err = H.errors_with(function() datasets.read_idx(p) end, 'moontorch.datasets.read_idx: ' .. p .. msg)
        assert.truthy(err:find('datasets_spec.lua', 1, true))
        if #content > 0 then H.errors_with(function() datasets.read_idx(gz(p)) end, msg) end
      end
      refuse('magic', bytes({ 1, 0, 8, 1 }) .. u32(6) .. body, ' is not an IDX file (its magic starts 01 00, expected 00 00)')
      refuse('type', bytes({ 0, 0, 0x0A, 1 }) .. u32(6) .. body, ': unknown IDX data type 0x0a')
      refuse('ndim0', bytes({ 0, 0, 8, 0 }) .. body, ': an IDX file of 0 dimensions')
      refuse('short', bytes({ 0, 0 }), ' is truncated: it ends inside the 4-byte IDX magic')
      refuse('header', bytes({ 0, 0, 8, 3 }) .. u32(2) .. bytes({ 0, 0 }), ' is truncated: its header announces 3 sizes')
      refuse('data', idx(8, { 2, 3 }, '\1\2\3\4\5'), ' is truncated: its header announces 6 bytes of data, it has 5')
      refuse('extra', idx(8, { 2, 3 }, body .. '\0'), ' has more data than its header says (6 bytes of data announced)')
      refuse('overflow', idx(0x0E, { 4294967295, 4294967295, 4294967295 }, body), ': the sizes in its header overflow')
      -- no data at all (a size of 0) but the others' strides beyond int64 (found by fuzz/fuzz_idx.c)
      refuse('zerodim', idx(8, { 0, 3419130827, 3419130827, 3419130827, 3419130827 }, ''), ': the sizes in its header overflow')
      H.errors_with(function() datasets.read_idx(dir .. '/absent') end, 'moontorch.datasets.read_idx: cannot open ' .. dir .. '/absent')
      H.errors_with(function() datasets.read_idx(dir) end, 'moontorch.datasets.read_idx: ' .. dir)
      H.errors_with(function() datasets.read_idx(3) end, 'path must be a string, got number')
      -- a gzip stream cut short
      local p = gz(write('cut', idx(8, { 3000 }, string.rep('abcdefg', 500):sub(1, 3000))))
      local s = H.read_file(p)
      H.write_file(p, s:sub(1, math.floor(#s / 2)))
      H.errors_with(function() datasets.read_idx(p) end, 'moontorch.datasets.read_idx: ' .. p)
      H.write_file(p, s:sub(1, 12))
      H.errors_with(function() datasets.read_idx(p) end, 'moontorch.datasets.read_idx: ' .. p)
      -- only the trailer (CRC and length) missing; then a corrupted body
      H.write_file(p, s:sub(1, #s - 4))
      H.errors_with(function() datasets.read_idx(p) end, p .. ' is truncated: its gzip stream ends early')
      H.write_file(p, s:sub(1, 20) .. string.rep('x', 10) .. s:sub(31))
      local err = H.errors_with(function() datasets.read_idx(p) end, 'moontorch.datasets.read_idx: ' .. p)
      assert.truthy(err:find('gzip', 1, true) or err:find('truncated', 1, true) or err:find('more data', 1, true))
    end)

    it('survives mutated files: a tensor or a read_idx error, never a crash', function()
      -- a seeded mutation loop (bytes changed, cut, grown), plain and gzip, over a valid int32 file
      local good = idx(0x0C, { 3, 4 }, string.rep('\0\1\2\3', 12))
      local p = dir .. '/mutant'
      local rng = torch.Generator():manual_seed(13)
      local outcomes = { ok = 0, err = 0 }
      for round = 1, 300 do
        local b = { good:byte(1, -1) }
        local r = torch.randint(0, 1000000, { 8 }, { generator = rng }):tolist()
        local kind = r[1] % 3
        if kind == 0 then
          for k = 0, r[2] % 4 do b[r[3 + k] % #b + 1] = r[7] % 256 end
        elseif kind == 1 then
          for k = #b, r[2] % #b + 1, -1 do b[k] = nil end
        else
          for k = 1, r[2] % 9 do b[#b + 1] = (r[3] + k) % 256 end
        end
        H.write_file(p, bytes(b))
        local path = round % 2 == 0 and gz(p) or p
        local ok, res = pcall(datasets.read_idx, path)
        if ok then
          assert.is_true(torch.is_tensor(res))
          outcomes.ok = outcomes.ok + 1
        else
          assert.truthy(tostring(res):find('moontorch.datasets.read_idx: ', 1, true), tostring(res))
          outcomes.err = outcomes.err + 1
        end
      end
      assert.is_true(outcomes.ok > 0 and outcomes.err > 0)
    end)

    it('a build without zlib asks to gunzip the file first', function()
      local p = gz(write('nozlib', idx(8, { 2 }, '\1\2')))
      local C = require('moontorch.ffi').C
      C.mt_idx_has_zlib(0)
      local ok, err = pcall(datasets.read_idx, p)
      C.mt_idx_has_zlib(1)
      assert.is_false(ok)
      assert.truthy(err:find('moontorch.datasets.read_idx: ' .. p .. ' is gzip-compressed and this build has no zlib: gunzip the file first', 1, true))
      assert.are.same({ 1, 2 }, datasets.read_idx(p):tolist())
    end)
  end)

  describe('MNIST and FashionMNIST', function()
    -- three 2x3 images and their labels 0, 5, 9, in root (plain) and in root/FashionMNIST/raw (gzip)
    local images = { 0, 51, 102, 153, 204, 255, 1, 2, 3, 4, 5, 6, 255, 255, 255, 0, 0, 0 }
    local mroot = dir .. '/mnist'
    local froot = dir .. '/fashion'
    setup(function()
      assert(os.execute(('mkdir -p %q %q'):format(mroot, froot .. '/FashionMNIST/raw')) == 0)
      for _, d in ipairs({ mroot, froot .. '/FashionMNIST/raw' }) do
        for _, split in ipairs({ 'train', 't10k' }) do
          local pi, pl = d .. '/' .. split .. '-images-idx3-ubyte', d .. '/' .. split .. '-labels-idx1-ubyte'
          H.write_file(pi, idx(8, { 3, 2, 3 }, bytes(images)))
          H.write_file(pl, idx(8, { 3 }, bytes(split == 'train' and { 0, 5, 9 } or { 1, 1, 2 })))
          if d ~= mroot then
            assert(os.execute(('gzip -f %q %q'):format(pi, pl)) == 0)
          end
        end
      end
    end)

    it('samples are {image float32 1xHxW in [0, 1], class counted from 1}', function()
      local ds = datasets.MNIST(mroot)
      assert.are.equal(3, ds:__len())
      local img, label = unpack(ds[1])
      assert.are.equal(torch.float32, img.dtype)
      assert.are.same({ 1, 2, 3 }, H.shape(img))
      H.near(img, { { { 0, 0.2, 0.4 }, { 0.6, 0.8, 1 } } }, 1e-7)
      assert.are.same({ 1, 6, 10 }, { ds[1][2], ds[2][2], ds[-1][2] })
      assert.are.same({ 1, 6, 10 }, ds.targets:tolist())
      assert.are.equal(torch.uint8, ds.data.dtype)
      assert.are.equal('9 - nine', ds.classes[ds[3][2]])
      local test = datasets.MNIST(mroot, { train = false })
      assert.are.same({ 2, 2, 3 }, test.targets:tolist())
      H.errors_with(function() return ds[4] end, 'index 4 is out of range for a dataset of 3 items')
    end)

    it('FashionMNIST finds gzip files in root/FashionMNIST/raw; transforms apply', function()
      local ds = datasets.FashionMNIST(froot, { transform = datasets.transforms.Normalize({ 0.5 }, { 0.25 }),
        target_transform = function(y) return y * 100 end })
      H.near(ds[1][1], { { { -2, -1.2, -0.4 }, { 0.4, 1.2, 2 } } }, 1e-6)
      assert.are.equal(600, ds[2][2])
      assert.are.equal('Ankle boot', ds.classes[10])
      assert.truthy(tostring(ds):find('Number of datapoints: 3', 1, true))
    end)

    it('a DataLoader takes whole batches through __getbatch, equal to stacking the samples', function()
      for _, tr in ipairs({ false, true }) do
        local opts = tr and { transform = datasets.transforms.Normalize(0.1307, 0.3081) } or nil
        local ds = datasets.MNIST(mroot, opts)
        local fast = data.DataLoader(ds, { batch_size = 2, shuffle = true, generator = torch.Generator():manual_seed(5) })
        local slow = data.DataLoader(ds, { batch_size = 2, shuffle = true, generator = torch.Generator():manual_seed(5),
          collate_fn = data.default_collate })
        local f, s = fast:iter(), slow:iter()
        for _ = 1, 2 do
          local fx, fy = f()
          local sx, sy = s()
          assert.are.same({ sx:size(1), 1, 2, 3 }, H.shape(fx))
          assert.is_true(torch.equal(fx, sx))
          assert.is_true(torch.equal(fy, sy))
          assert.are.equal(torch.int64, fy.dtype)
        end
        assert.is_nil(f())
      end
      -- a Subset passes whole batches down too
      local sub = data.Subset(datasets.MNIST(mroot), { 3, 1 })
      local x, y = data.DataLoader(sub, { batch_size = 2 }):iter()()
      assert.are.same({ 10, 1 }, y:tolist())
      assert.are.same({ 2, 1, 2, 3 }, H.shape(x))
    end)

    it('a missing file is a clear error naming the package to install', function()
      H.errors_with(function() datasets.FashionMNIST(dir .. '/nowhere') end,
        "moontorch.datasets.FashionMNIST: train-images-idx3-ubyte[.gz] not found in " .. dir
        .. "/nowhere (install Debian's dataset-fashion-mnist package (apt-get install dataset-fashion-mnist)")
      H.errors_with(function() datasets.MNIST() end, 'moontorch.datasets.MNIST: root must be a folder')
      H.errors_with(function() datasets.transforms.Normalize({ 0.5 }, { 0 }) end, 'leading to division by zero')
      H.write_file(mroot .. '/bad-labels', '')
      local bad = dir .. '/bad'
      assert(os.execute(('mkdir -p %q'):format(bad)) == 0)
      H.write_file(bad .. '/train-images-idx3-ubyte', idx(8, { 3, 2, 3 }, bytes(images)))
      H.write_file(bad .. '/train-labels-idx1-ubyte', idx(8, { 2 }, bytes({ 0, 1 })))
      H.errors_with(function() datasets.MNIST(bad) end, 'has 3 images but')
      H.write_file(bad .. '/train-labels-idx1-ubyte', idx(8, { 3 }, bytes({ 0, 1, 10 })))
      H.errors_with(function() datasets.MNIST(bad) end, 'has a label 10, beyond the 10 classes')
    end)
  end)

  describe("Debian's Fashion-MNIST (/usr/share/datasets/fashion-mnist)", function()
    local present = io.open('/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz', 'rb')
    if present then present:close() end
    it(present and 'reads 60000 training and 10000 test images as torchvision would'
      or 'is not installed here: FashionMNIST() says which package to install', function()
      if not present then
        H.errors_with(function() datasets.FashionMNIST() end, "install Debian's dataset-fashion-mnist package")
        return
      end
      local train = datasets.FashionMNIST()
      assert.are.equal(60000, train:__len())
      assert.are.same({ 60000, 28, 28 }, H.shape(train.data))
      -- labels 9, 0, 0, 3, 0, 2, 7, 2, 5, 5 in the file, counted from 1 here
      assert.are.same({ 10, 1, 1, 4, 1, 3, 8, 3, 6, 6 }, train.targets:narrow(1, 1, 10):tolist())
      assert.are.equal(76247, train.data[1]:to({ dtype = torch.int64 }):sum():item())
      assert.are.equal('Ankle boot', train.classes[train[1][2]])
      local test = datasets.FashionMNIST(nil, { train = false, transform = datasets.transforms.Normalize(0.2860, 0.3530) })
      assert.are.equal(10000, test:__len())
      assert.are.same({ 10, 3, 2, 2, 7, 2, 5, 7, 6, 8 }, test.targets:narrow(1, 1, 10):tolist())
      H.near(test[1][1]:mean():item(), -0.33612769842147827, 1e-6)
    end)
  end)
end)
