-- moontorch.datasets (also torch.datasets): IDX files and the MNIST-format data sets.
--   local datasets = require 'moontorch.datasets'
--   local t = datasets.read_idx('train-images-idx3-ubyte.gz')    -- a tensor of the file's dtype
--   local train = datasets.FashionMNIST()                          -- Debian's dataset-fashion-mnist
--   local test = datasets.FashionMNIST(nil, { train = false,
--     transform = datasets.transforms.Normalize({ 0.2860 }, { 0.3530 }) })
--   local image, label = unpack(train[1])   -- image float32 1x28x28 in [0, 1], label 1..10
-- Labels are classes counted from 1 (the file's 0..9 plus one), as F.cross_entropy takes them in
-- moontorch; `classes[label]` names one. The files are decoded in C (core/idx.c, gzip through zlib);
-- a DataLoader with the default collate takes whole batches through __getbatch: one index_select,
-- one conversion and the normalisation, all in C.
local ffi = require 'ffi'
local torch = require 'moontorch'
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local data = require 'moontorch.utils.data'

local C, fail, raise_last = core.C, core.fail, core.raise_last
local is_tensor = torch.is_tensor
local T = require 'moontorch.tensor'
local take, outp = T.take, T.outp

local M = {}

-- read_idx(path): the IDX file (plain or gzip) as a tensor of its own dtype and sizes
function M.read_idx(path)
  if type(path) ~= 'string' then fail('datasets.read_idx', ('path must be a string, got %s'):format(type(path))) end
  if C.mt_idx_read(path, outp) ~= 0 then raise_last() end
  return take()
end

-- has_zlib(): whether this build reads gzip files
function M.has_zlib() return C.mt_idx_has_zlib(-1) == 1 end

------------------------------------------------------------------------------ transforms
local transforms = {}
M.transforms = transforms

-- Normalize(mean, std): (image - mean) / std per channel, as torchvision's on a tensor
local Normalize = class.class('datasets.transforms.Normalize', nil, transforms)
function Normalize:__init(mean, std)
  local op = 'datasets.transforms.Normalize'
  if type(mean) == 'number' then mean = { mean } end
  if type(std) == 'number' then std = { std } end
  if type(mean) ~= 'table' or type(std) ~= 'table' or #mean == 0 or #mean ~= #std then
    fail(op, 'mean and std must be numbers or arrays of the same length (one per channel)')
  end
  for _, s in ipairs(std) do
    if s == 0 then fail(op, 'std evaluated to zero after conversion to torch.float32, leading to division by zero.') end
  end
  self.mean, self.std = mean, std
  self._cache = {}
end
-- the mean and std as tensors of x's dtype shaped to broadcast over (..., C, H, W)
function Normalize:_tensors(x)
  local key = tostring(x.dtype)
  local c = self._cache[key]
  if not c then
    local n = #self.mean
    c = { torch.tensor(self.mean, { dtype = x.dtype }):view(n, 1, 1), torch.tensor(self.std, { dtype = x.dtype }):view(n, 1, 1) }
    self._cache[key] = c
  end
  return c[1], c[2]
end
function Normalize:__call(x)
  if not is_tensor(x) or x:dim() < 3 then
    fail('datasets.transforms.Normalize', 'expects a tensor image of size (..., C, H, W)')
  end
  if x:size(-3) ~= #self.mean and #self.mean ~= 1 then
    fail('datasets.transforms.Normalize', ('%d channels, but mean and std have %d values'):format(x:size(-3), #self.mean))
  end
  local m, s = self:_tensors(x)
  return x:sub(m):div(s)
end
function Normalize:__tostring()
  return ('Normalize(mean=[%s], std=[%s])'):format(table.concat(self.mean, ', '), table.concat(self.std, ', '))
end

-- Compose({t1, t2, ...}): the transforms one after another
local Compose = class.class('datasets.transforms.Compose', nil, transforms)
function Compose:__init(list)
  if type(list) ~= 'table' then fail('datasets.transforms.Compose', 'expects an array of transforms') end
  self.transforms = list
end
function Compose:__call(x)
  for _, t in ipairs(self.transforms) do x = t(x) end
  return x
end

-- a transform that works on a whole batch (N, C, H, W) as on each image
local function batchable(t)
  if t == nil then return true end
  local name = class.typename(t)
  if name == 'datasets.transforms.Normalize' then return true end
  if name == 'datasets.transforms.Compose' then
    for _, u in ipairs(t.transforms) do if not batchable(u) then return false end end
    return true
  end
  return false
end

------------------------------------------------------------------------------ MNIST-format data sets
local function exists(path)
  local f = io.open(path, 'rb')
  if f then f:close() return true end
  return false
end

-- the path of `base` (with or without .gz) in root or in root/<name>/raw (torchvision's layout)
local function find_file(op, root, name, base, hint)
  local tried = {}
  for _, dir in ipairs({ root, root .. '/' .. name .. '/raw' }) do
    for _, f in ipairs({ base .. '.gz', base }) do
      local p = dir .. '/' .. f
      if exists(p) then return p end
      tried[#tried + 1] = p
    end
  end
  fail(op, ('%s not found in %s (%s)'):format(base .. '[.gz]', root, hint))
end

local MNISTBase = class.class('datasets.MNIST', data.Dataset, M)
MNISTBase.classes = { '0 - zero', '1 - one', '2 - two', '3 - three', '4 - four', '5 - five', '6 - six', '7 - seven',
  '8 - eight', '9 - nine' }
MNISTBase.default_root = nil
MNISTBase.hint = 'pass the folder holding the MNIST files as root'

-- MNIST(root, {train=true, transform=, target_transform=})
function MNISTBase:__init(root, opts)
  local cls = getmetatable(self)
  local name = cls.__typename:match('([^.]+)$')
  local op = 'datasets.' .. name
  if type(root) == 'table' and opts == nil then root, opts = nil, root end
  opts = opts or {}
  root = root or cls.default_root
  if type(root) ~= 'string' then fail(op, 'root must be a folder (a string): ' .. cls.hint) end
  local train = opts.train
  if train == nil then train = true end
  local prefix = train and 'train' or 't10k'
  local ipath = find_file(op, root, name, prefix .. '-images-idx3-ubyte', cls.hint)
  local lpath = find_file(op, root, name, prefix .. '-labels-idx1-ubyte', cls.hint)
  local images, labels = M.read_idx(ipath), M.read_idx(lpath)
  if images:dim() ~= 3 or images.dtype ~= torch.uint8 then
    fail(op, ('%s holds %s %s, expected uint8 images (N, H, W)'):format(ipath, tostring(images.dtype), tostring(images:size())))
  end
  if labels:dim() ~= 1 or labels.dtype ~= torch.uint8 then
    fail(op, ('%s holds %s %s, expected uint8 labels (N)'):format(lpath, tostring(labels.dtype), tostring(labels:size())))
  end
  if labels:size(1) ~= images:size(1) then
    fail(op, ('%s has %d images but %s has %d labels'):format(ipath, images:size(1), lpath, labels:size(1)))
  end
  local targets = labels:to({ dtype = torch.int64 }):add(1)
  if labels:numel() > 0 and labels:max():item() >= #cls.classes then
    fail(op, ('%s has a label %d, beyond the %d classes'):format(lpath, labels:max():item(), #cls.classes))
  end
  rawset(self, 'root', root)
  rawset(self, 'train', train)
  rawset(self, 'data', images)
  rawset(self, 'targets', targets)
  rawset(self, 'transform', opts.transform)
  rawset(self, 'target_transform', opts.target_transform)
end

function MNISTBase:__len() return rawget(self, 'data'):size(1) end

function MNISTBase:__getitem(i)
  local n = self:__len()
  if type(i) ~= 'number' or i ~= math.floor(i) then fail('datasets', ('index must be an integer, got %s'):format(tostring(i))) end
  if i < 0 then i = n + 1 + i end
  if i < 1 or i > n then fail('datasets', ('index %d is out of range for a dataset of %d items'):format(i, n)) end
  local img = rawget(self, 'data')[i]:to({ dtype = torch.float32 }):div(255):unsqueeze(1)
  local tr, ttr = rawget(self, 'transform'), rawget(self, 'target_transform')
  if tr then img = tr(img) end
  local target = rawget(self, 'targets')[i]:item()
  if ttr then target = ttr(target) end
  return { img, target }
end

-- a whole batch at once (the DataLoader's default collate): {images (B, 1, H, W), targets (B)},
-- equal to stacking __getitem's samples; nil when a transform must see images one by one
function MNISTBase:__getbatch(indices)
  local tr, ttr = rawget(self, 'transform'), rawget(self, 'target_transform')
  if ttr ~= nil or not batchable(tr) then return nil end
  local n = self:__len()
  local ix = {}
  for k, i in ipairs(indices) do
    if type(i) == 'number' and i < 0 then i = n + 1 + i end
    if type(i) ~= 'number' or i < 1 or i > n or i ~= math.floor(i) then
      fail('datasets', ('index %s is out of range for a dataset of %d items'):format(tostring(indices[k]), n))
    end
    ix[k] = i
  end
  local it = torch.tensor(ix, { dtype = torch.int64 })
  local x = rawget(self, 'data'):index_select(1, it):to({ dtype = torch.float32 }):div(255):unsqueeze(2)
  if tr then x = tr(x) end
  return { x, rawget(self, 'targets'):index_select(1, it) }
end

function MNISTBase:__tostring()
  local name = getmetatable(self).__typename:match('([^.]+)$')
  local lines = { 'Dataset ' .. name, ('    Number of datapoints: %d'):format(self:__len()),
    '    Root location: ' .. rawget(self, 'root'), '    Split: ' .. (rawget(self, 'train') and 'Train' or 'Test') }
  if rawget(self, 'transform') then lines[#lines + 1] = '    StandardTransform\nTransform: ' .. tostring(rawget(self, 'transform')) end
  return table.concat(lines, '\n')
end

local FashionMNIST = class.class('datasets.FashionMNIST', MNISTBase, M)
FashionMNIST.classes = { 'T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag',
  'Ankle boot' }
FashionMNIST.default_root = '/usr/share/datasets/fashion-mnist'
FashionMNIST.hint = "install Debian's dataset-fashion-mnist package (apt-get install dataset-fashion-mnist), "
  .. 'or pass the folder holding the files as root'

local KMNIST = class.class('datasets.KMNIST', MNISTBase, M)
KMNIST.classes = { 'o', 'ki', 'su', 'tsu', 'na', 'ha', 'ma', 'ya', 're', 'wo' }

return M
