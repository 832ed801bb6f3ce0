-- moontorch.utils.plot: line charts written as SVG, with no library and no image tools.
--   local plot = require 'moontorch.utils.plot'
--   plot.save('curves.svg', {
--     title = 'Fashion-MNIST',
--     panels = {
--       { title = 'loss', xlabel = 'epoch', series = {
--           { name = 'train', x = { 1, 2, 3 }, y = { 0.6, 0.4, 0.35 } },
--           { name = 'test', x = { 1, 2, 3 }, y = { 0.45, 0.38, 0.33 } } } },
--       { title = 'test accuracy (%)', xlabel = 'epoch', series = { { name = 'test', x = { 1, 2, 3 }, y = { 84, 87, 88 } } } },
--     } })
-- plot.svg(figure) gives the text. Panels sit side by side; each scales its axes to its data with
-- round tick steps (1, 2 or 5 times a power of ten). Points that are not finite numbers break a
-- line rather than bend it. The file is written atomically (a temporary beside it, then renamed).
local M = {}

local PALETTE = { '#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f' }

local function fail(msg, level) error('moontorch.utils.plot: ' .. msg, level or 3) end

local function finite(v) return type(v) == 'number' and v == v and v ~= math.huge and v ~= -math.huge end

local function escape(s)
  return (tostring(s):gsub('[&<>"\']', { ['&'] = '&amp;', ['<'] = '&lt;', ['>'] = '&gt;', ['"'] = '&quot;',
    ["'"] = '&#39;' }))
end

-- a number as an SVG coordinate: two decimals, no exponent
local function num(v) return ('%.2f'):format(v) end

-- round ticks covering [lo, hi]: about `want` of them, a step of 1, 2 or 5 times a power of ten
function M.ticks(lo, hi, want)
  want = want or 5
  if not (finite(lo) and finite(hi)) then fail('ticks need finite bounds', 2) end
  if hi < lo then lo, hi = hi, lo end
  if hi == lo then
    local pad = lo == 0 and 1 or math.abs(lo) * 0.1
    lo, hi = math.max(lo - pad, -1.7976931348623157e308), math.min(hi + pad, 1.7976931348623157e308)
  end
  want = math.max(1, want)
  local raw = hi / want - lo / want -- (hi - lo could overflow to inf near the largest doubles)
  local mag = 10 ^ math.floor(math.log10(raw))
  local step = mag
  for _, m in ipairs({ 1, 2, 5, 10 }) do
    if m * mag >= raw then step = m * mag break end
  end
  local k0 = math.floor(lo / step + 1e-9)
  local k1 = math.ceil(hi / step - 1e-9)
  local out = {}
  for k = k0, math.min(k1, k0 + 100) do
    local v = k * step
    if v ~= v or v == math.huge or v == -math.huge then v = k < 0 and lo or hi end -- beyond the doubles
    if math.abs(v) < step * 1e-9 then v = 0 end
    out[#out + 1] = v
  end
  return out, step
end

local function tick_text(v, step)
  local decimals = math.max(0, 0 - math.floor(math.log10(step) + 1e-9)) -- (0 - 0 is +0; -0 would print as -0)
  return ('%.' .. decimals .. 'f'):format(v)
end

local function check_series(p, s, where)
  if type(s) ~= 'table' then fail(('%s must be a table {name=, x=, y=}, got %s'):format(where, type(s))) end
  if type(s.y) ~= 'table' then fail(where .. '.y must be an array of numbers') end
  local n = #s.y
  if s.x ~= nil then
    if type(s.x) ~= 'table' then fail(where .. '.x must be an array of numbers') end
    if #s.x ~= n then fail(('%s has %d x values but %d y values'):format(where, #s.x, n)) end
  end
  for i = 1, n do
    local x = s.x and s.x[i] or i
    if type(x) ~= 'number' then fail(('%s.x[%d] is a %s, not a number'):format(where, i, type(x))) end
    if type(s.y[i]) ~= 'number' then fail(('%s.y[%d] is a %s, not a number'):format(where, i, type(s.y[i]))) end
  end
  return p
end

-- one panel: axes, ticks, grid, lines with markers, legend
local function panel(out, p, x0, y0, w, h, pi)
  local where = ('panels[%d]'):format(pi)
  if type(p) ~= 'table' then fail(where .. ' must be a table {title=, series={...}}') end
  if type(p.series) ~= 'table' or #p.series == 0 then fail(where .. '.series must be a non-empty array') end
  local xmin, xmax, ymin, ymax = math.huge, -math.huge, math.huge, -math.huge
  for si, s in ipairs(p.series) do
    check_series(p, s, ('%s.series[%d]'):format(where, si))
    for i = 1, #s.y do
      local x, y = s.x and s.x[i] or i, s.y[i]
      if finite(x) and finite(y) then
        xmin, xmax = math.min(xmin, x), math.max(xmax, x)
        ymin, ymax = math.min(ymin, y), math.max(ymax, y)
      end
    end
  end
  if xmin > xmax then xmin, xmax, ymin, ymax = 0, 1, 0, 1 end -- nothing finite to draw: empty axes
  local xt, xstep = M.ticks(xmin, xmax, 6)
  local yt, ystep = M.ticks(ymin, ymax, 5)
  local xa, xb, ya, yb = xt[1], xt[#xt], yt[1], yt[#yt]
  local L, R, T, B = 56, 12, 28, 40 -- margins inside the panel
  local px, py, pw, ph = x0 + L, y0 + T, w - L - R, h - T - B
  local function sx(v) return px + (v - xa) / (xb - xa) * pw end
  local function sy(v) return py + ph - (v - ya) / (yb - ya) * ph end
  if p.title then
    out[#out + 1] = ('<text x="%s" y="%s" text-anchor="middle" font-size="14" font-weight="bold">%s</text>')
      :format(num(px + pw / 2), num(y0 + 18), escape(p.title))
  end
  out[#out + 1] = ('<rect x="%s" y="%s" width="%s" height="%s" fill="#ffffff" stroke="#444444"/>')
    :format(num(px), num(py), num(pw), num(ph))
  for _, v in ipairs(yt) do
    local y = sy(v)
    out[#out + 1] = ('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#dddddd"/>'):format(num(px), num(y), num(px + pw), num(y))
    out[#out + 1] = ('<text x="%s" y="%s" text-anchor="end" font-size="11">%s</text>')
      :format(num(px - 5), num(y + 4), tick_text(v, ystep))
  end
  for _, v in ipairs(xt) do
    local x = sx(v)
    out[#out + 1] = ('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#dddddd"/>'):format(num(x), num(py), num(x), num(py + ph))
    out[#out + 1] = ('<text x="%s" y="%s" text-anchor="middle" font-size="11">%s</text>')
      :format(num(x), num(py + ph + 15), tick_text(v, xstep))
  end
  if p.xlabel then
    out[#out + 1] = ('<text x="%s" y="%s" text-anchor="middle" font-size="12">%s</text>')
      :format(num(px + pw / 2), num(py + ph + 32), escape(p.xlabel))
  end
  if p.ylabel then
    out[#out + 1] = ('<text x="%s" y="%s" text-anchor="middle" font-size="12" transform="rotate(-90 %s %s)">%s</text>')
      :format(num(x0 + 14), num(py + ph / 2), num(x0 + 14), num(py + ph / 2), escape(p.ylabel))
  end
  -- the legend goes to the corner its box covers the fewest points in (top right on a tie)
  local named = 0
  for _, s in ipairs(p.series) do if s.name then named = named + 1 end end
  local lw, lh = 100, 16 * named + 6
  local corners = { { px + pw - lw, py }, { px + pw - lw, py + ph - lh }, { px + 4, py }, { px + 4, py + ph - lh } }
  local best, best_n = corners[1], math.huge
  for _, c in ipairs(corners) do
    local n = 0
    for _, s in ipairs(p.series) do
      for i = 1, #s.y do
        local x, y = s.x and s.x[i] or i, s.y[i]
        if finite(x) and finite(y) then
          local X, Y = sx(x), sy(y)
          if X >= c[1] - 6 and X <= c[1] + lw + 6 and Y >= c[2] - 6 and Y <= c[2] + lh + 6 then n = n + 1 end
        end
      end
    end
    if n < best_n then best, best_n = c, n end
  end
  local legend_row = 0
  for si, s in ipairs(p.series) do
    local color = s.color or PALETTE[(si - 1) % #PALETTE + 1]
    local runs, run = {}, {}
    for i = 1, #s.y do
      local x, y = s.x and s.x[i] or i, s.y[i]
      if finite(x) and finite(y) then
        run[#run + 1] = num(sx(x)) .. ',' .. num(sy(y))
      elseif #run > 0 then
        runs[#runs + 1], run = run, {}
      end
    end
    if #run > 0 then runs[#runs + 1] = run end
    for _, r in ipairs(runs) do
      if #r > 1 then
        out[#out + 1] = ('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>')
          :format(escape(color), table.concat(r, ' '))
      end
      if #r <= 40 then
        for _, pt in ipairs(r) do
          local cx, cy = pt:match('([^,]+),(.+)')
          out[#out + 1] = ('<circle cx="%s" cy="%s" r="3" fill="%s"/>'):format(cx, cy, escape(color))
        end
      end
    end
    if s.name then
      legend_row = legend_row + 1
      local lx, ly = best[1] + 8, best[2] + 4 + legend_row * 16
      out[#out + 1] = ('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/>')
        :format(num(lx), num(ly - 4), num(lx + 18), num(ly - 4), escape(color))
      out[#out + 1] = ('<text x="%s" y="%s" font-size="11">%s</text>'):format(num(lx + 22), num(ly), escape(s.name))
    end
  end
end

-- the figure as SVG text: {title=, panels={...}, width= (360 per panel), height= (300)}
function M.svg(fig)
  if type(fig) ~= 'table' then fail('a figure is a table {title=, panels={...}}', 2) end
  local panels = fig.panels
  if panels == nil and fig.series then panels = { fig } end
  if type(panels) ~= 'table' or #panels == 0 then fail('a figure needs a non-empty array of panels', 2) end
  local top = fig.title and 28 or 0
  local pw = fig.width and fig.width / #panels or 360
  local ph = fig.height and fig.height - top or 300
  if not (finite(pw) and pw >= 100 and finite(ph) and ph >= 100) then fail('width and height must leave 100 pixels a panel', 2) end
  local W, H = pw * #panels, ph + top
  local out = {
    '<?xml version="1.0" encoding="UTF-8"?>',
    ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">')
      :format(W, H, W, H),
    ('<rect width="%d" height="%d" fill="#ffffff"/>'):format(W, H),
  }
  if fig.title then
    out[#out + 1] = ('<text x="%s" y="20" text-anchor="middle" font-size="16" font-weight="bold">%s</text>')
      :format(num(W / 2), escape(fig.title))
  end
  for i, p in ipairs(panels) do panel(out, p, (i - 1) * pw, top, pw, ph, i) end
  out[#out + 1] = '</svg>'
  return table.concat(out, '\n') .. '\n'
end

-- write the figure to `path` (atomically); returns path
function M.save(path, fig)
  if type(path) ~= 'string' or path == '' then fail('save needs a file path', 2) end
  local text = M.svg(fig)
  local tmp = path .. '.tmp'
  local f, err = io.open(tmp, 'wb')
  if not f then fail(('cannot write %s: %s'):format(path, tostring(err)), 2) end
  local ok, werr = f:write(text)
  local cok = f:close()
  if not ok or not cok then
    os.remove(tmp)
    fail(('cannot write %s: %s'):format(path, tostring(werr or 'close failed')), 2)
  end
  local rok, rerr = os.rename(tmp, path)
  if not rok then
    os.remove(tmp)
    fail(('cannot write %s: %s'):format(path, tostring(rerr)), 2)
  end
  return path
end

return M
