-- moontorch.format: tostring(tensor) as PyTorch 1.13 prints tensors (torch/_tensor_str.py), and
-- torch.set_printoptions.
--
-- The rules, as PyTorch has them:
--   * numel > threshold: summarise; every dimension longer than 2*edgeitems shows its first and
--     last edgeitems entries around `...` (the cut depends only on that dimension's size).
--   * One formatter for the whole (summarised) tensor, so all elements share one width.
--     Floating point, over the nonzero finite values: all integral -> "int mode" ("3."), unless
--     max/min > 1000 or max > 1e8 (then scientific); otherwise scientific when max/min > 1000,
--     max > 1e8 or min < 1e-4, else fixed with `precision` decimals. sci_mode, when set,
--     overrides the choice (except when no nonzero finite value exists).
--   * Rows wrap at linewidth: floor((linewidth - indent) / (width + 2)) elements per line.
--   * Dimensions >= 2 join their slices with "," and dim-1 newlines, indented one column per level.
--   * Suffixes: device (not cpu), size (empty, not 1-D), dtype (not the default float, int64 or
--     bool; for an empty tensor: not the default float), grad_fn or requires_grad; a suffix goes on
--     its own line when the current line would pass linewidth.
-- Values come out of C as doubles (int64 exactly through int64); a summarised tensor only
-- converts the rows it shows.
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local dtype = require 'moontorch.dtype'
local T = require 'moontorch.tensor'

local C = core.C
local raise_last = core.raise_last
local by_id = dtype.by_id
local floor, ceil, abs, max, huge = math.floor, math.ceil, math.abs, math.max, math.huge
local sformat, srep, concat = string.format, string.rep, table.concat
local tonumber, tostring, type, pcall = tonumber, tostring, type, pcall

local M = {}

local DTYPE_BOOL, DTYPE_INT64 = 11, 4
local FLAG_PARAMETER = 2

------------------------------------------------------------------------------ print options
local DEFAULTS = { precision = 4, threshold = 1000, edgeitems = 3, linewidth = 80 }
local opts = { precision = 4, threshold = 1000, edgeitems = 3, linewidth = 80, sci_mode = nil }
M.options = opts

local PROFILES = {
  default = { precision = 4, threshold = 1000, edgeitems = 3, linewidth = 80 },
  short = { precision = 2, threshold = 1000, edgeitems = 2, linewidth = 80 },
  full = { precision = 4, threshold = huge, edgeitems = 3, linewidth = 80 },
}

-- a non-negative integer option (all but precision may also be math.huge, as PyTorch takes
-- float('inf')); precision at most 99, the most that Lua's string.format takes
local function check_int(name, v)
  if not (name ~= 'precision' and v == huge) then
    v = T.int_arg(v, 'set_printoptions', name)
    if v < 0 then core.fail('set_printoptions', name .. ' must be a non-negative integer, got ' .. v) end
    if name == 'precision' and v > 99 then
      core.fail('set_printoptions', 'precision must be at most 99, got ' .. v)
    end
  end
  return v
end

-- torch.set_printoptions{precision=, threshold=, edgeitems=, linewidth=, profile=, sci_mode=}
-- As in PyTorch, sci_mode is reset to automatic (nil) by every call that does not give it.
function M.set_printoptions(o)
  if type(o) == 'number' then o = { precision = o } end
  o = o or {}
  if type(o) ~= 'table' then core.fail('set_printoptions', 'expected an options table') end
  if o.profile ~= nil then
    local p = PROFILES[o.profile]
    if not p then
      core.fail('set_printoptions', "profile must be one of 'default', 'short', 'full', got " .. tostring(o.profile))
    end
    for k, v in pairs(p) do opts[k] = v end
  end
  for k in pairs(DEFAULTS) do
    if o[k] ~= nil then opts[k] = check_int(k, o[k]) end
  end
  if o.sci_mode ~= nil and type(o.sci_mode) ~= 'boolean' then
    core.fail('set_printoptions', 'sci_mode must be a boolean or nil')
  end
  opts.sci_mode = o.sci_mode
end

------------------------------------------------------------------------------ values out
local dbuf, dbuf_n = ffi.new('double[1024]'), 1024
local ibuf, ibuf_n = ffi.new('int64_t[1024]'), 1024
local LIM = 2 ^ 53

-- append the elements of `v` (row-major) to `out`: numbers (floats), booleans, or strings (ints)
local function fetch(v, kind, out, n0)
  local n = tonumber(v._numel)
  if n == 0 then return n0 end
  if kind == 'int' then
    if n > ibuf_n then ibuf_n = n; ibuf = ffi.new('int64_t[?]', n) end
    if C.mt_tensor_to_int64s(v, ibuf, n) ~= 0 then raise_last() end
    for i = 0, n - 1 do
      local x = ibuf[i]
      local d = tonumber(x)
      if d > -LIM and d < LIM then out[n0 + i + 1] = sformat('%d', d)
      else out[n0 + i + 1] = (tostring(x):gsub('LL$', '')) end
    end
  else
    if n > dbuf_n then dbuf_n = n; dbuf = ffi.new('double[?]', n) end
    if C.mt_tensor_to_doubles(v, dbuf, n) ~= 0 then raise_last() end
    if kind == 'bool' then
      for i = 0, n - 1 do out[n0 + i + 1] = dbuf[i] ~= 0 end
    else
      for i = 0, n - 1 do out[n0 + i + 1] = dbuf[i] end
    end
  end
  return n0 + n
end

-- the shown elements, row-major: all of them, or (summarised) the first and last `e` entries of
-- each dimension in `cut`
local function gather_cut(v, d, nd, cut, e, kind, out, n0)
  local size = tonumber(v._sizes[0])
  if d == nd then -- v is 1-D: the last dimension
    if cut[d] then
      n0 = fetch(v:narrow(1, 1, e), kind, out, n0)
      return fetch(v:narrow(1, size - e + 1, e), kind, out, n0)
    end
    return fetch(v, kind, out, n0)
  end
  if cut[d] then
    for i = 1, e do n0 = gather_cut(v:select(1, i), d + 1, nd, cut, e, kind, out, n0) end
    for i = size - e + 1, size do n0 = gather_cut(v:select(1, i), d + 1, nd, cut, e, kind, out, n0) end
  else
    for i = 1, size do n0 = gather_cut(v:select(1, i), d + 1, nd, cut, e, kind, out, n0) end
  end
  return n0
end

------------------------------------------------------------------------------ formatter
local function fixed(p, x)
  if x ~= x then return 'nan' end
  return sformat('%.' .. p .. 'f', x)
end
local function sci(p, x, w)
  if x ~= x then return sformat('%' .. (w or 0) .. 's', 'nan') end
  return sformat('%' .. (w or '') .. '.' .. p .. 'e', x)
end

-- the formatter for values `vals` (all that will be shown): { kind, int_mode, sci, width }
local function make_formatter(vals, n, kind)
  local f = { kind = kind, int_mode = true, sci = false, width = 1 }
  local p = opts.precision
  if kind == 'bool' then
    for i = 1, n do f.width = max(f.width, vals[i] and 4 or 5) end
  elseif kind == 'int' then
    for i = 1, n do f.width = max(f.width, #vals[i]) end
  else
    local mn, mx, any = huge, 0, false
    for i = 1, n do
      local x = vals[i]
      if x == x and x ~= huge and x ~= -huge and x ~= 0 then
        any = true
        local a = abs(x)
        if a < mn then mn = a end
        if a > mx then mx = a end
        if f.int_mode and x ~= ceil(x) then f.int_mode = false end
      end
    end
    if not any then return f end -- no nonzero finite value: "0.", "nan", "inf"; sci_mode ignored
    local w = 1
    if f.int_mode then
      if mx / mn > 1000 or mx > 1e8 then
        f.sci = true
        for i = 1, n do
          local x = vals[i]
          if x == x and x ~= huge and x ~= -huge and x ~= 0 then w = max(w, #sci(p, x)) end
        end
      else
        for i = 1, n do
          local x = vals[i]
          if x == x and x ~= huge and x ~= -huge and x ~= 0 then w = max(w, #sformat('%.0f', x) + 1) end
        end
      end
    else
      if mx / mn > 1000 or mx > 1e8 or mn < 1e-4 then
        f.sci = true
        for i = 1, n do
          local x = vals[i]
          if x == x and x ~= huge and x ~= -huge and x ~= 0 then w = max(w, #sci(p, x)) end
        end
      else
        for i = 1, n do
          local x = vals[i]
          if x == x and x ~= huge and x ~= -huge and x ~= 0 then w = max(w, #fixed(p, x)) end
        end
      end
    end
    f.width = w
  end
  if opts.sci_mode ~= nil then f.sci = opts.sci_mode end
  return f
end

local function format_value(f, x)
  local s
  local kind = f.kind
  if kind == 'float' then
    if f.sci then
      s = sci(opts.precision, x, f.width)
    elseif f.int_mode then
      if x ~= x then s = 'nan'
      else
        s = sformat('%.0f', x)
        if x ~= huge and x ~= -huge then s = s .. '.' end
      end
    else
      s = fixed(opts.precision, x)
    end
  elseif kind == 'bool' then
    s = x and 'True' or 'False'
  else
    s = x
  end
  local pad = f.width - #s
  if pad > 0 then s = srep(' ', pad) .. s end
  return s
end

------------------------------------------------------------------------------ layout
-- ksize[d]: shown entries of dim d; kstride[d]: their stride in vals; cut[d]: `...` after e
local function vector_str(f, vals, base, n, cut, e, indent)
  local per = max(1, floor((opts.linewidth - indent) / (f.width + 2)))
  local items = {}
  if cut then
    for i = 1, e do items[#items + 1] = format_value(f, vals[base + i]) end
    items[#items + 1] = ' ...'
    for i = e + 1, 2 * e do items[#items + 1] = format_value(f, vals[base + i]) end
  else
    for i = 1, n do items[i] = format_value(f, vals[base + i]) end
  end
  local lines = {}
  for i = 1, #items, per do
    lines[#lines + 1] = concat(items, ', ', i, math.min(i + per - 1, #items))
  end
  return '[' .. concat(lines, ',\n' .. srep(' ', indent + 1)) .. ']'
end

local function tensor_str_rec(f, vals, base, d, nd, ksize, kstride, cut, e, indent)
  if d == nd then return vector_str(f, vals, base, ksize[d], cut[d], e, indent) end
  local slices = {}
  local n, st = ksize[d], kstride[d]
  if cut[d] and e == 0 then slices[1] = '...' end -- (PyTorch raises here)
  for i = 1, n do
    slices[#slices + 1] = tensor_str_rec(f, vals, base + (i - 1) * st, d + 1, nd, ksize, kstride, cut, e, indent + 1)
    if cut[d] and i == e then slices[#slices + 1] = '...' end
  end
  return '[' .. concat(slices, ',' .. srep('\n', nd - d) .. srep(' ', indent + 1)) .. ']'
end

local function value_kind(t)
  local id = t._dtype
  if id == DTYPE_BOOL then return 'bool' end
  if by_id[id].is_floating_point then return 'float' end
  return 'int'
end

-- the body of the tensor's text: "[...]" or a scalar, for a tensor printed at column `indent`
local function tensor_str(t, indent)
  local numel = tonumber(t._numel)
  if numel == 0 then return '[]' end
  local nd = t._ndim
  local kind = value_kind(t)
  local vals = {}
  if nd == 0 then
    if kind == 'int' then
      if C.mt_tensor_item_int64(t, ibuf) ~= 0 then raise_last() end
      local d = tonumber(ibuf[0])
      vals[1] = (d > -LIM and d < LIM) and sformat('%d', d) or (tostring(ibuf[0]):gsub('LL$', ''))
    else
      if C.mt_tensor_item(t, dbuf) ~= 0 then raise_last() end
      vals[1] = dbuf[0]
      if kind == 'bool' then vals[1] = dbuf[0] ~= 0 end
    end
    return format_value(make_formatter(vals, 1, kind), vals[1])
  end
  local summarize = numel > opts.threshold
  local e = opts.edgeitems
  local cut, ksize, kstride = {}, {}, {}
  local any_cut = false
  for d = 1, nd do
    local s = tonumber(t._sizes[d - 1])
    cut[d] = summarize and s > 2 * e
    any_cut = any_cut or cut[d]
    ksize[d] = cut[d] and 2 * e or s
  end
  local st = 1
  for d = nd, 1, -1 do kstride[d] = st; st = st * ksize[d] end
  local n
  if any_cut then n = gather_cut(t, 1, nd, cut, e, kind, vals, 0)
  else n = fetch(t, kind, vals, 0) end
  local f = make_formatter(vals, n, kind)
  return tensor_str_rec(f, vals, 0, 1, nd, ksize, kstride, cut, e, indent)
end
M.tensor_str = tensor_str

local function add_suffixes(s, suffixes, indent)
  local parts = { s }
  local pos = 0
  while true do
    local q = s:find('\n', pos + 1, true)
    if not q then break end
    pos = q
  end
  -- PyTorch: len(s) - s.rfind('\n') + 1 with 0-based rfind (-1 when absent)
  local last_line_len = #s - (pos - 1) + 1
  for _, suffix in ipairs(suffixes) do
    if last_line_len + #suffix + 2 > opts.linewidth then
      parts[#parts + 1] = ',\n' .. srep(' ', indent) .. suffix
      last_line_len = indent + #suffix
    else
      parts[#parts + 1] = ', ' .. suffix
      last_line_len = last_line_len + #suffix + 2
    end
  end
  parts[#parts + 1] = ')'
  return concat(parts)
end

M.add_suffixes = add_suffixes

local function grad_fn_name(g)
  local name
  if type(g) == 'table' or type(g) == 'userdata' or type(g) == 'cdata' then
    local ok, r = pcall(function() return g:name() end)
    if ok and type(r) == 'string' then name = r end
  end
  name = name or tostring(g)
  return (name:gsub('^.*::', ''))
end

M.grad_fn_name = grad_fn_name

local DEVICE_META = 2
local function shape_tuple(t)
  local parts = {}
  for i = 0, t._ndim - 1 do parts[#parts + 1] = tostring(t._sizes[i]):gsub('LL$', '') end -- (exact: an int64, 2^51 too)
  if #parts == 1 then return '(' .. parts[1] .. ',)' end
  return '(' .. concat(parts, ', ') .. ')'
end

-- tostring(tensor)
local function str(t)
  local prefix = 'tensor('
  local indent = #prefix
  local suffixes = {}
  if t._device_type ~= 0 then
    suffixes[#suffixes + 1] = "device='" .. tostring(t.device) .. "'"
  end
  local dt = by_id[t._dtype]
  local default = by_id[C.mt_get_default_dtype()]
  local body
  if t._device_type == DEVICE_META then
    -- no values: PyTorch's tensor(..., device='meta', size=(2, 3)), every dtype but the default named
    suffixes[#suffixes + 1] = 'size=' .. shape_tuple(t)
    if dt ~= default then suffixes[#suffixes + 1] = 'dtype=' .. tostring(dt) end
    body = '...'
  elseif tonumber(t._numel) == 0 then
    if t._ndim ~= 1 then suffixes[#suffixes + 1] = 'size=' .. shape_tuple(t) end
    if dt ~= default then suffixes[#suffixes + 1] = 'dtype=' .. tostring(dt) end
    body = '[]'
  else
    if dt ~= default and t._dtype ~= DTYPE_INT64 and t._dtype ~= DTYPE_BOOL then
      suffixes[#suffixes + 1] = 'dtype=' .. tostring(dt)
    end
    -- values of a tensor on another device are read from a CPU copy
    body = tensor_str(t._device_type ~= 0 and t:cpu() or t, indent)
  end
  local g = t.grad_fn
  if g ~= nil then
    suffixes[#suffixes + 1] = 'grad_fn=<' .. grad_fn_name(g) .. '>'
  elseif t.requires_grad then
    suffixes[#suffixes + 1] = 'requires_grad=True'
  end
  local s = add_suffixes(prefix .. body, suffixes, indent)
  if bit.band(t._flags, FLAG_PARAMETER) ~= 0 then s = 'Parameter containing:\n' .. s end
  return s
end
M.str = str

function M.install(torch)
  T.tensor_mt.__tostring = str
  torch.set_printoptions = M.set_printoptions
end

return M
