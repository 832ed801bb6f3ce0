-- moontorch.utils.plot: SVG line charts (the demo's curves).
local H = require 'spec.support.helper'
local torch = H.torch
local plot = require 'moontorch.utils.plot'

local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

describe('moontorch.utils.plot', function()
  it('is torch.utils.plot', function()
    assert.equal(plot, torch.utils.plot)
  end)

  it('ticks: round steps of 1, 2 or 5 times a power of ten that cover the range', function()
    assert.same({ 0, 0.5, 1, 1.5, 2, 2.5 }, plot.ticks(0.05, 2.3, 5))
    local t, step = plot.ticks(84.1, 88.2, 5)
    assert.equal(1, step)
    assert.same({ 84, 85, 86, 87, 88, 89 }, t)
    t, step = plot.ticks(-3, 7, 5)
    assert.equal(2, step)
    assert.same({ -4, -2, 0, 2, 4, 6, 8 }, t)
    t = plot.ticks(1e-4, 3e-4, 4) -- a step of 5e-5
    assert.equal(5, #t)
    assert.near(1e-4, t[1], 1e-12)
    -- one value: a range around it; reversed bounds are swapped
    t = plot.ticks(5, 5)
    assert.truthy(t[1] < 5 and t[#t] > 5)
    assert.same(plot.ticks(1, 3), plot.ticks(3, 1))
    -- never a "-0" tick
    for _, v in ipairs(plot.ticks(-1, 1, 4)) do assert.falsy(tostring(v) == '-0') end
    assert.has_error(function() plot.ticks(0, 0 / 0) end, 'moontorch.utils.plot: ticks need finite bounds')
    -- the whole range of doubles (a diverged loss), without overflowing to inf
    t = plot.ticks(-1.7e308, 1.7e308, 4)
    assert.truthy(#t >= 3 and #t <= 6 and t[1] <= -1.7e308 + 1e300 and t[#t] >= 1.7e308 - 1e300, #t)
    for _, v in ipairs(t) do assert.truthy(v == v and v > -math.huge and v < math.huge) end
    assert.truthy(plot.svg({ series = { { y = { 1.7e308, -1.7e308, 3 } } } }):find('<polyline', 1, true))
  end)

  it('svg: a document with a panel per entry, a polyline per series and its legend', function()
    local svg = plot.svg({ title = 'run <1> & "2"', panels = {
      { title = 'loss', xlabel = 'epoch', ylabel = 'nats', series = {
        { name = 'train', x = { 0.5, 1, 1.5, 2 }, y = { 1.2, 0.8, 0.6, 0.5 } },
        { name = 'test', x = { 1, 2 }, y = { 0.9, 0.55 } } } },
      { title = 'accuracy', series = { { name = 'test', y = { 80, 85, 87 } } } },
    } })
    assert.truthy(svg:find('^<%?xml version="1.0" encoding="UTF%-8"%?>\n<svg '))
    assert.truthy(svg:find('width="720" height="328"', 1, true))
    assert.truthy(svg:find('>run &lt;1&gt; &amp; &quot;2&quot;</text>', 1, true)) -- escaped
    assert.equal(3, count(svg, '<polyline '))
    assert.truthy(svg:find('>nats</text>', 1, true) and svg:find('>epoch</text>', 1, true))
    for _, name in ipairs({ '>train<', '>test<', '>loss<', '>accuracy<' }) do assert.truthy(svg:find(name, 1, true), name) end
    assert.truthy(svg:find('</svg>\n$'))
    -- every element closes: as many opening tags as closing ones and self-closed ones
    local opens = count(svg, '<[%a]')
    assert.equal(opens, count(svg, '/>') + count(svg, '</[%a]+>'))
  end)

  it('svg: the points land where the axes say', function()
    -- one panel 360x300 with margins 56/12/28/40: the plot area is x 56..348, y 28..260 (no title)
    local svg = plot.svg({ series = { { x = { 0, 10 }, y = { 0, 10 } } } })
    local pts = svg:match('<polyline [^>]- points="([^"]+)"')
    assert.equal('56.00,260.00 348.00,28.00', pts)
  end)

  it('svg: the legend takes the corner with the fewest points under it', function()
    local function legend_y(ys)
      local svg = plot.svg({ series = { { name = 'only', y = ys } } })
      return tonumber(svg:match('<text x="[%d.]+" y="([%d.]+)" font%-size="11">only</text>'))
    end
    -- the plot area spans y 28..260: a curve high on the right sends the legend down, a low one keeps it up
    assert.truthy(legend_y({ 0, 50, 80, 90, 95, 97, 98, 99, 100, 100 }) > 200)
    assert.truthy(legend_y({ 100, 50, 20, 10, 5, 3, 2, 1, 0, 0 }) < 60)
  end)

  it('svg: a NaN or an infinity breaks a line rather than bending it; all-NaN data gives empty axes', function()
    local svg = plot.svg({ series = { { y = { 1, 2, 0 / 0, 4, 5, math.huge, 7 } } } })
    assert.equal(2, count(svg, '<polyline ')) -- {1,2} and {4,5}; the lone 7 is a dot
    assert.equal(5, count(svg, '<circle '))
    svg = plot.svg({ series = { { y = { 0 / 0, 0 / 0 } } } })
    assert.equal(0, count(svg, '<polyline '))
    assert.truthy(svg:find('</svg>', 1, true))
  end)

  it('refuses figures it cannot draw, naming what is wrong', function()
    local cases = {
      { 'x', 'moontorch.utils.plot: a figure is a table {title=, panels={...}}' },
      { {}, 'moontorch.utils.plot: a figure needs a non-empty array of panels' },
      { { panels = { { series = {} } } }, 'moontorch.utils.plot: panels[1].series must be a non-empty array' },
      { { panels = { { series = { { y = { 1, 'a' } } } } } }, 'moontorch.utils.plot: panels[1].series[1].y[2] is a string, not a number' },
      { { panels = { { series = { { x = { 1 }, y = { 1, 2 } } } } } }, 'moontorch.utils.plot: panels[1].series[1] has 1 x values but 2 y values' },
      { { panels = { { series = { 7 } } } }, 'moontorch.utils.plot: panels[1].series[1] must be a table {name=, x=, y=}, got number' },
      { { width = 50, series = { { y = { 1 } } } }, 'moontorch.utils.plot: width and height must leave 100 pixels a panel' },
    }
    for _, c in ipairs(cases) do
      assert.has_error(function() plot.svg(c[1]) end, c[2])
    end
  end)

  it('save writes the file whole (through a temporary) and reports a path it cannot write', function()
    local path = os.tmpname()
    assert.equal(path, plot.save(path, { series = { { y = { 1, 2, 3 } } } }))
    local f = io.open(path, 'rb')
    local text = f:read('*a')
    f:close()
    assert.equal(plot.svg({ series = { { y = { 1, 2, 3 } } } }), text)
    assert.falsy(io.open(path .. '.tmp', 'rb'))
    os.remove(path)
    local ok, err = pcall(plot.save, '/nonexistent-dir/x.svg', { series = { { y = { 1 } } } })
    assert.falsy(ok)
    assert.truthy(tostring(err):find('moontorch.utils.plot: cannot write /nonexistent-dir/x.svg', 1, true), err)
    assert.has_error(function() plot.save(nil, {}) end, 'moontorch.utils.plot: save needs a file path')
  end)
end)
