-- The forward cases of spec/pooling_spec.lua (issue 12, pooling): each a Lua call and the same
-- call in PyTorch 1.13, whose results spec/support/pool_record.lua records into
-- spec/support/pool_wants.lua:
--   luajit spec/support/pool_record.lua | /usr/bin/python3 > spec/support/pool_wants.lua
-- Inputs are gen(shape): float64 values ((k * 37) % 101) / 10 - 5 for k = 0, 1, ... in row-major
-- order (the same numbers on both sides, no ties within a window). Indices come back 1-based in
-- Lua; the Python side adds 1 (`pos`, `pos2`) and subtracts it where it passes them in.
local M = {}

local function gen(...)
  local shape = { ... }
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local t = {}
  for k = 0, n - 1 do t[k + 1] = ((k * 37) % 101) / 10 - 5 end
  local x = torch.tensor(t, { dtype = torch.float64 }):reshape(shape)
  if M.device then x = x:to(M.device) end -- the meta spec sets it
  return x
end
M.gen = gen

M.cases = {}
local function case(name, lua, py) M.cases[#M.cases + 1] = { name = name, lua = lua, py = py } end

local function F() return torch.nn.functional end

------------------------------------------------------------------------------ max pools
case('max_pool2d k3 s2 p1 indices', function()
  return F().max_pool2d(gen(2, 3, 7, 9), 3, 2, 1, { return_indices = true })
end, 'pos2(F.max_pool2d(gen(2, 3, 7, 9), 3, 2, 1, return_indices=True))')
case('max_pool2d (2,3) stride (2,1) dilation (2,1) ceil_mode', function()
  return F().max_pool2d(gen(2, 3, 7, 9), { 2, 3 }, { 2, 1 }, 0, { 2, 1 }, true, true)
end, 'pos2(F.max_pool2d(gen(2, 3, 7, 9), (2, 3), (2, 1), 0, (2, 1), True, True))')
case('max_pool2d non-contiguous ceil_mode', function()
  return F().max_pool2d(gen(2, 9, 7, 3):permute(1, 4, 3, 2), 2, { ceil_mode = true, return_indices = true })
end, 'pos2(F.max_pool2d(gen(2, 9, 7, 3).permute(0, 3, 2, 1), 2, ceil_mode=True, return_indices=True))')
case('max_pool2d unbatched padding', function()
  return F().max_pool2d(gen(3, 6, 5), 2, { padding = 1, return_indices = true })
end, 'pos2(F.max_pool2d(gen(3, 6, 5), 2, padding=1, return_indices=True))')
case('max_pool1d k3 s2 p1 dilation 2', function()
  return F().max_pool1d(gen(2, 3, 11), 3, 2, 1, 2, false, true)
end, 'pos2(F.max_pool1d(gen(2, 3, 11), 3, 2, 1, 2, False, True))')
case('max_pool1d ceil_mode', function()
  return F().max_pool1d(gen(2, 3, 10), 4, 3, { ceil_mode = true })
end, 'F.max_pool1d(gen(2, 3, 10), 4, 3, ceil_mode=True)')
case('max_pool3d (2,3,2) stride (1,2,2) padding (1,1,0)', function()
  return F().max_pool3d(gen(2, 2, 5, 6, 7), { 2, 3, 2 }, { 1, 2, 2 }, { 1, 1, 0 }, { return_indices = true })
end, 'pos2(F.max_pool3d(gen(2, 2, 5, 6, 7), (2, 3, 2), (1, 2, 2), (1, 1, 0), return_indices=True))')
case('max_pool3d dilation 2 ceil_mode', function()
  return F().max_pool3d(gen(1, 2, 6, 7, 6), 2, 2, 0, 2, true, true)
end, 'pos2(F.max_pool3d(gen(1, 2, 6, 7, 6), 2, 2, 0, 2, True, True))')

------------------------------------------------------------------------------ avg pools
case('avg_pool2d k3 s2 p1', function() return F().avg_pool2d(gen(2, 3, 7, 9), 3, 2, 1) end,
  'F.avg_pool2d(gen(2, 3, 7, 9), 3, 2, 1)')
case('avg_pool2d ceil_mode count_include_pad=false', function()
  return F().avg_pool2d(gen(2, 3, 7, 9), 3, 2, 1, { ceil_mode = true, count_include_pad = false })
end, 'F.avg_pool2d(gen(2, 3, 7, 9), 3, 2, 1, ceil_mode=True, count_include_pad=False)')
case('avg_pool2d divisor_override', function()
  return F().avg_pool2d(gen(2, 3, 7, 9), { 2, 3 }, { 1, 2 }, { 1, 1 }, { divisor_override = 5 })
end, 'F.avg_pool2d(gen(2, 3, 7, 9), (2, 3), (1, 2), (1, 1), divisor_override=5)')
case('avg_pool2d non-contiguous unbatched', function()
  return F().avg_pool2d(gen(9, 7, 3):transpose(1, 3), 2, 1, 1, true)
end, 'F.avg_pool2d(gen(9, 7, 3).transpose(0, 2), 2, 1, 1, True)')
case('avg_pool1d ceil_mode count_include_pad=false', function()
  return F().avg_pool1d(gen(2, 3, 11), 4, 3, 2, true, false)
end, 'F.avg_pool1d(gen(2, 3, 11), 4, 3, 2, True, False)')
case('avg_pool3d k3 s2 p1 ceil_mode', function()
  return F().avg_pool3d(gen(2, 2, 5, 6, 7), 3, 2, 1, true)
end, 'F.avg_pool3d(gen(2, 2, 5, 6, 7), 3, 2, 1, True)')

------------------------------------------------------------------------------ adaptive pools
case('adaptive_avg_pool2d (3,4)', function() return F().adaptive_avg_pool2d(gen(2, 3, 7, 9), { 3, 4 }) end,
  'F.adaptive_avg_pool2d(gen(2, 3, 7, 9), (3, 4))')
case('adaptive_avg_pool2d (None,5)', function() return F().adaptive_avg_pool2d(gen(2, 3, 7, 9), { false, 5 }) end,
  'F.adaptive_avg_pool2d(gen(2, 3, 7, 9), (None, 5))')
case('adaptive_avg_pool1d 4', function() return F().adaptive_avg_pool1d(gen(2, 3, 10), 4) end,
  'F.adaptive_avg_pool1d(gen(2, 3, 10), 4)')
case('adaptive_avg_pool3d (2,3,4)', function() return F().adaptive_avg_pool3d(gen(1, 2, 5, 6, 7), { 2, 3, 4 }) end,
  'F.adaptive_avg_pool3d(gen(1, 2, 5, 6, 7), (2, 3, 4))')
case('adaptive_avg_pool2d larger than the input', function() return F().adaptive_avg_pool2d(gen(1, 2, 3, 4), { 5, 7 }) end,
  'F.adaptive_avg_pool2d(gen(1, 2, 3, 4), (5, 7))')
case('adaptive_max_pool2d (3,4)', function()
  return F().adaptive_max_pool2d(gen(2, 3, 7, 9), { 3, 4 }, true)
end, 'pos2(F.adaptive_max_pool2d(gen(2, 3, 7, 9), (3, 4), True))')
case('adaptive_max_pool1d 4', function()
  return F().adaptive_max_pool1d(gen(2, 3, 10), 4, { return_indices = true })
end, 'pos2(F.adaptive_max_pool1d(gen(2, 3, 10), 4, return_indices=True))')
case('adaptive_max_pool3d (2,3,4)', function()
  return F().adaptive_max_pool3d(gen(1, 2, 5, 6, 7), { 2, 3, 4 }, true)
end, 'pos2(F.adaptive_max_pool3d(gen(1, 2, 5, 6, 7), (2, 3, 4), True))')

------------------------------------------------------------------------------ max_unpool
case('max_unpool2d', function()
  local v, i = F().max_pool2d(gen(2, 3, 6, 8), 2, { return_indices = true })
  return F().max_unpool2d(v, i, 2)
end, 'F.max_unpool2d(*F.max_pool2d(gen(2, 3, 6, 8), 2, return_indices=True), 2)')
case('max_unpool2d output_size', function()
  local v, i = F().max_pool2d(gen(2, 3, 7, 9), 2, { return_indices = true })
  return F().max_unpool2d(v, i, 2, { output_size = { 7, 9 } })
end, 'F.max_unpool2d(*F.max_pool2d(gen(2, 3, 7, 9), 2, return_indices=True), 2, output_size=(7, 9))')
case('max_unpool1d stride 1', function()
  local v, i = F().max_pool1d(gen(2, 3, 10), 3, 1, { return_indices = true })
  return F().max_unpool1d(v, i, 3, 1)
end, 'F.max_unpool1d(*F.max_pool1d(gen(2, 3, 10), 3, 1, return_indices=True), 3, 1)')
case('max_unpool3d', function()
  local v, i = F().max_pool3d(gen(1, 2, 4, 6, 4), 2, { return_indices = true })
  return F().max_unpool3d(v, i, 2)
end, 'F.max_unpool3d(*F.max_pool3d(gen(1, 2, 4, 6, 4), 2, return_indices=True), 2)')

------------------------------------------------------------------------------ lp pools
case('lp_pool2d p=2 k3 s2', function() return F().lp_pool2d(gen(2, 3, 7, 9), 2, 3, 2) end,
  'F.lp_pool2d(gen(2, 3, 7, 9), 2, 3, 2)')
case('lp_pool1d p=1.5 k3', function() return F().lp_pool1d(gen(2, 3, 10):abs() + 0.1, 1.5, 3) end,
  'F.lp_pool1d(gen(2, 3, 10).abs() + 0.1, 1.5, 3)')

------------------------------------------------------------------------------ interpolate
case('nearest scale 2', function() return F().interpolate(gen(2, 3, 4, 5), { scale_factor = 2 }) end,
  'F.interpolate(gen(2, 3, 4, 5), scale_factor=2)')
case('nearest size (7,3)', function() return F().interpolate(gen(2, 3, 4, 5), { size = { 7, 3 } }) end,
  'F.interpolate(gen(2, 3, 4, 5), size=(7, 3))')
case('nearest 1d scale 1.7', function() return F().interpolate(gen(2, 3, 6), { scale_factor = 1.7 }) end,
  'F.interpolate(gen(2, 3, 6), scale_factor=1.7)')
case('nearest 3d scales (1.5,2,0.5)', function()
  return F().interpolate(gen(1, 2, 4, 4, 4), { scale_factor = { 1.5, 2, 0.5 } })
end, 'F.interpolate(gen(1, 2, 4, 4, 4), scale_factor=(1.5, 2, 0.5))')
case('linear size 10', function() return F().interpolate(gen(2, 3, 6), 10, nil, 'linear') end,
  "F.interpolate(gen(2, 3, 6), 10, None, 'linear')")
case('linear size 10 align_corners', function()
  return F().interpolate(gen(2, 3, 6), { size = 10, mode = 'linear', align_corners = true })
end, "F.interpolate(gen(2, 3, 6), size=10, mode='linear', align_corners=True)")
case('linear downsample scale 0.6', function()
  return F().interpolate(gen(2, 3, 11), { scale_factor = 0.6, mode = 'linear' })
end, "F.interpolate(gen(2, 3, 11), scale_factor=0.6, mode='linear')")
case('bilinear scale 1.5', function()
  return F().interpolate(gen(2, 3, 4, 5), { scale_factor = 1.5, mode = 'bilinear' })
end, "F.interpolate(gen(2, 3, 4, 5), scale_factor=1.5, mode='bilinear')")
case('bilinear size (3,7) align_corners', function()
  return F().interpolate(gen(2, 3, 4, 5), { size = { 3, 7 }, mode = 'bilinear', align_corners = true })
end, "F.interpolate(gen(2, 3, 4, 5), size=(3, 7), mode='bilinear', align_corners=True)")
case('bilinear scale 1.7 recompute_scale_factor', function()
  return F().interpolate(gen(2, 3, 4, 5), { scale_factor = 1.7, mode = 'bilinear', recompute_scale_factor = true })
end, "F.interpolate(gen(2, 3, 4, 5), scale_factor=1.7, mode='bilinear', recompute_scale_factor=True)")
case('bilinear scale 1.7', function()
  return F().interpolate(gen(2, 3, 4, 5), { scale_factor = 1.7, mode = 'bilinear' })
end, "F.interpolate(gen(2, 3, 4, 5), scale_factor=1.7, mode='bilinear')")
case('bicubic scale 2', function()
  return F().interpolate(gen(2, 3, 4, 5), { scale_factor = 2, mode = 'bicubic' })
end, "F.interpolate(gen(2, 3, 4, 5), scale_factor=2, mode='bicubic')")
case('bicubic size (5,9) align_corners', function()
  return F().interpolate(gen(2, 3, 4, 5), { size = { 5, 9 }, mode = 'bicubic', align_corners = true })
end, "F.interpolate(gen(2, 3, 4, 5), size=(5, 9), mode='bicubic', align_corners=True)")
case('bicubic downsample', function()
  return F().interpolate(gen(1, 2, 7, 9), { size = { 4, 5 }, mode = 'bicubic' })
end, "F.interpolate(gen(1, 2, 7, 9), size=(4, 5), mode='bicubic')")
case('trilinear scale 2', function()
  return F().interpolate(gen(1, 2, 3, 4, 5), { scale_factor = 2, mode = 'trilinear' })
end, "F.interpolate(gen(1, 2, 3, 4, 5), scale_factor=2, mode='trilinear')")
case('trilinear non-contiguous align_corners', function()
  return F().interpolate(gen(1, 5, 4, 3, 2):permute(1, 5, 4, 3, 2), { size = { 4, 2, 5 }, mode = 'trilinear',
    align_corners = true })
end, "F.interpolate(gen(1, 5, 4, 3, 2).permute(0, 4, 3, 2, 1), size=(4, 2, 5), mode='trilinear', align_corners=True)")
case('area', function() return F().interpolate(gen(2, 3, 7, 9), { size = { 3, 4 }, mode = 'area' }) end,
  "F.interpolate(gen(2, 3, 7, 9), size=(3, 4), mode='area')")
case('Upsample bilinear module', function()
  return torch.nn.UpsamplingBilinear2d({ scale_factor = 2 })(gen(1, 2, 3, 4))
end, 'torch.nn.UpsamplingBilinear2d(scale_factor=2)(gen(1, 2, 3, 4))')

------------------------------------------------------------------------------ shuffles
case('pixel_shuffle 2', function() return F().pixel_shuffle(gen(2, 8, 3, 4), 2) end,
  'F.pixel_shuffle(gen(2, 8, 3, 4), 2)')
case('pixel_unshuffle 2', function() return F().pixel_unshuffle(gen(2, 2, 6, 4), 2) end,
  'F.pixel_unshuffle(gen(2, 2, 6, 4), 2)')
case('channel_shuffle 3', function() return F().channel_shuffle(gen(2, 6, 3, 2), 3) end,
  'F.channel_shuffle(gen(2, 6, 3, 2), 3)')

------------------------------------------------------------------------------ padding
case('pad reflect 2d', function() return F().pad(gen(2, 3, 4, 5), { 1, 2, 2, 1 }, 'reflect') end,
  "F.pad(gen(2, 3, 4, 5), (1, 2, 2, 1), 'reflect')")
case('pad replicate 3d', function() return F().pad(gen(1, 2, 3, 4, 5), { 1, 1, 2, 0, 1, 2 }, 'replicate') end,
  "F.pad(gen(1, 2, 3, 4, 5), (1, 1, 2, 0, 1, 2), 'replicate')")
case('pad circular 1d', function() return F().pad(gen(2, 3, 5), { 2, 3 }, 'circular') end,
  "F.pad(gen(2, 3, 5), (2, 3), 'circular')")
case('pad reflect 1d unbatched', function() return F().pad(gen(3, 5), { 4, 1 }, 'reflect') end,
  "F.pad(gen(3, 5), (4, 1), 'reflect')")
case('pad constant negative', function() return F().pad(gen(2, 3, 4, 5), { 1, -1, 2, 0 }, { value = 1.5 }) end,
  'F.pad(gen(2, 3, 4, 5), (1, -1, 2, 0), value=1.5)')
case('pad replicate 1d negative', function() return F().pad(gen(2, 6), { 3, -2 }, 'replicate') end,
  "F.pad(gen(2, 6), (3, -2), 'replicate')")
case('pad reflect 1d negative', function() return F().pad(gen(2, 6), { -1, 2 }, 'reflect') end,
  "F.pad(gen(2, 6), (-1, 2), 'reflect')")
case('pad reflect 3d on an unbatched 4-d input', function()
  return F().pad(gen(2, 3, 4, 5), { 1, 2, 0, 3, 2, 1 }, 'reflect')
end, "F.pad(gen(2, 3, 4, 5), (1, 2, 0, 3, 2, 1), 'reflect')")
case('pad replicate 2d non-contiguous', function()
  return F().pad(gen(2, 5, 4):transpose(2, 3), { 2, 1, 1, 3 }, 'replicate')
end, "F.pad(gen(2, 5, 4).transpose(1, 2), (2, 1, 1, 3), 'replicate')")
case('ReflectionPad3d module', function() return torch.nn.ReflectionPad3d(1)(gen(1, 2, 3, 3, 4)) end,
  'torch.nn.ReflectionPad3d(1)(gen(1, 2, 3, 3, 4))')
case('ZeroPad2d module', function() return torch.nn.ZeroPad2d({ 1, 0, 2, 1 })(gen(1, 2, 3, 3)) end,
  'torch.nn.ZeroPad2d((1, 0, 2, 1))(gen(1, 2, 3, 3))')

return M
