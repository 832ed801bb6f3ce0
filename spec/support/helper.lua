-- Shared spec helpers. Every spec starts with:
--   local H = require 'spec.support.helper'
--   local torch = H.torch
-- It points package.path/cpath at the build tree ($MOONTORCH_BUILD_DIR, default ./build) unless
-- moontorch is already loadable (an installed rock).
local build = os.getenv('MOONTORCH_BUILD_DIR') or 'build'
package.path = build .. '/lua/?.lua;' .. build .. '/lua/?/init.lua;' .. package.path
package.cpath = build .. '/lib/?.so;' .. package.cpath

local torch = require 'moontorch'
local H = { torch = torch }

-- The luajit running these specs, as an absolute path (read from /proc: the shell that io.popen
-- starts is its child), so that a child process finds it without PATH: `env -i` clears PATH, and
-- some machines keep luajit outside /usr/bin. Busted's launcher: $MT_BUSTED, else Debian's.
local function running_luajit()
  local p = io.popen('readlink -f "/proc/$PPID/exe" 2>/dev/null')
  local exe = p and p:read('*l')
  if p then p:close() end
  if exe and exe ~= '' then return exe end
  local i = -1 -- else what this process was started as (arg[-1] for `luajit script`)
  while arg and arg[i - 1] do i = i - 1 end
  return arg and arg[i] or 'luajit'
end
H.luajit = running_luajit()
H.busted = os.getenv('MT_BUSTED') or '/usr/bin/busted'
-- a word for sh, single-quoted
function H.sh_quote(s) return "'" .. tostring(s):gsub("'", [['\'']]) .. "'" end

local function flat(x, out)
  out = out or {}
  if type(x) == 'table' then
    for i = 1, #x do flat(x[i], out) end
  else
    out[#out + 1] = x
  end
  return out
end
H.flat = flat

-- near(actual, expected, atol, rtol): actual a tensor or nested table/number, expected likewise.
-- Fails naming the worst index.
function H.near(actual, expected, atol, rtol)
  atol = atol or 1e-5
  rtol = rtol or 1e-5
  if torch.is_tensor(actual) then actual = actual:tolist() end
  if torch.is_tensor(expected) then expected = expected:tolist() end
  local a, e = flat(actual), flat(expected)
  if #a ~= #e then error(('near: %d values, expected %d'):format(#a, #e), 2) end
  local worst, wi = -1, nil
  for i = 1, #a do
    local x, y = a[i], e[i]
    if type(x) == 'boolean' or type(y) == 'boolean' then
      if x ~= y then error(('near: value %d is %s, expected %s'):format(i, tostring(x), tostring(y)), 2) end
    elseif y ~= y then
      if x == x then error(('near: value %d is %s, expected nan'):format(i, tostring(x)), 2) end
    elseif y == math.huge or y == -math.huge then
      if x ~= y then error(('near: value %d is %s, expected %s'):format(i, tostring(x), tostring(y)), 2) end
    else
      local err = math.abs(x - y) - (atol + rtol * math.abs(y))
      if err > worst then worst, wi = err, i end
    end
  end
  if worst > 0 then
    error(('near: value %d is %.9g, expected %.9g'):format(wi, a[wi], e[wi]), 2)
  end
  return true
end

-- same_values(got, want, tol, where): nested arrays (a tensor's :tolist()) equal in shape and, value
-- by value, within tol relative to max(1, |want|) (tol 0: bit for bit); inf and NaN must match exactly;
-- `where` names the place in the message
local function same_values(got, want, tol, where)
  if type(want) == 'table' then
    assert(type(got) == 'table', where .. ': expected an array, got ' .. tostring(got))
    assert(#got == #want, ('%s: %d values, want %d'):format(where, #got, #want))
    for i = 1, #want do same_values(got[i], want[i], tol, where .. '[' .. i .. ']') end
    return
  end
  if want ~= want then
    assert(got ~= got, ('%s: got %s, want nan'):format(where, tostring(got)))
  elseif want == math.huge or want == -math.huge then
    assert(got == want, ('%s: got %s, want %s'):format(where, tostring(got), tostring(want)))
  else
    assert(math.abs(got - want) <= tol * math.max(1, math.abs(want)),
      ('%s: got %.17g, want %.17g (tol %g)'):format(where, got, want, tol))
  end
end
H.same_values = same_values

-- errors_with(fn, pattern): fn must raise an error whose message contains `pattern` (plain text)
function H.errors_with(fn, pattern)
  local ok, err = pcall(fn)
  if ok then error('expected an error containing "' .. pattern .. '", got none', 2) end
  if not tostring(err):find(pattern, 1, true) then
    error('expected an error containing "' .. pattern .. '", got: ' .. tostring(err), 2)
  end
  return err
end

-- shape as a plain array
function H.shape(t)
  local s = t:size()
  local r = {}
  for i = 1, #s do r[i] = s[i] end
  return r
end

-- a file's bytes, and writing bytes to a file (for specs that build or damage files)
function H.read_file(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end
function H.write_file(path, s)
  local f = assert(io.open(path, 'wb'))
  f:write(s)
  f:close()
end

-- cpu_levels(): which levels of moontorch's own kernels this CPU runs (what MOONTORCH_VMATH names:
-- avx512 needs AVX2, FMA and AVX-512 F/DQ/BW/VL; avx2 needs AVX2 and FMA; scalar always)
function H.cpu_levels()
  local C = torch._C
  local f = C.mt_cpu_features()
  local function has(m) return bit.band(f, m) == m end
  return {
    avx512 = has(C.MT_CPU_AVX2) and has(C.MT_CPU_FMA) and has(C.MT_CPU_AVX512F) and has(C.MT_CPU_AVX512DQ) and
      has(C.MT_CPU_AVX512BW) and has(C.MT_CPU_AVX512VL),
    avx2 = has(C.MT_CPU_AVX2) and has(C.MT_CPU_FMA),
    scalar = true,
  }
end

-- idx(code, sizes, body): the bytes of an IDX file (moontorch.datasets): two zero bytes, the data
-- type's code (0x08 for uint8), the count of dims, each size as a big-endian uint32, then the data
function H.idx(code, sizes, body)
  local h = { string.char(0, 0, code, #sizes) }
  for _, n in ipairs(sizes) do
    h[#h + 1] = string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256)
  end
  return table.concat(h) .. body
end

-- fashion_split(dir, split, n, seed): a Fashion-MNIST-shaped IDX pair in `dir` for `split` ('train'
-- or 't10k'): n 28x28 images whose class (0..9) is where a bright 6x6 square sits, on a noisy
-- background: easy to learn, not trivial (the demo's specs train on it)
function H.fashion_split(dir, split, n, seed)
  local x = seed
  local function rand() -- a small LCG: the same files in every run
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

-- ckpt_rechecksum(bytes): a torch.save file's bytes with the checksum recomputed (core/checkpoint.c
-- describes it), so that a spec can change values inside a file and still get them past the check
function H.ckpt_rechecksum(s)
  local ffi = require 'ffi'
  local C = torch._C
  local function u64_at(pos) -- pos 0-based
    return tonumber(ffi.cast('const uint64_t *', ffi.cast('const char *', s) + pos)[0])
  end
  local n, table_at = u64_at(16), u64_at(24)
  local digests = {}
  local function digest(piece) digests[#digests + 1] = ffi.string(ffi.new('uint64_t[1]', C.mt_xxh3_64(piece, #piece)), 8) end
  for i = 0, n - 1 do
    local off, nbytes = u64_at(table_at + 16 * i), u64_at(table_at + 16 * i + 8)
    for p = 0, nbytes - 1, 131072 do digest(s:sub(off + p + 1, off + math.min(p + 131072, nbytes))) end
  end
  digest(s:sub(table_at + 1))
  local d = table.concat(digests)
  local head = s:sub(1, 56) .. ffi.string(ffi.new('uint64_t[1]', C.mt_xxh3_64(d, #d)), 8)
  return s:sub(1, 56) .. ffi.string(ffi.new('uint64_t[1]', C.mt_xxh3_64(head, 64)), 8) .. s:sub(65)
end

-- watch_jit(fn, nyi_in, traces_in): runs fn with LuaJIT's trace events watched (after a flush);
-- returns the NYI aborts of traces that started in a source whose name contains `nyi_in`
-- ('src:line message' each) and the count of traces completed in a source containing `traces_in`,
-- then fn's first result. A spec asserts that its hot loop compiles with these.
function H.watch_jit(fn, nyi_in, traces_in)
  local jutil, vmdef = require 'jit.util', require 'jit.vmdef'
  local nyi, traces = {}, 0
  local function on_trace(what, tr, func, pc, otr, oex)
    local info = jutil.funcinfo(func, pc)
    local src = info.source or '?'
    if what == 'abort' then
      local msg = type(otr) == 'number' and vmdef.traceerr[otr] or tostring(otr)
      if type(oex) ~= 'function' then msg = msg:format(oex) end
      if msg:find('NYI', 1, true) and src:find(nyi_in, 1, true) then
        nyi[#nyi + 1] = ('%s:%s %s'):format(src, tostring(info.currentline), msg)
      end
    elseif what == 'stop' and src:find(traces_in, 1, true) then
      traces = traces + 1
    end
  end
  jit.flush()
  jit.attach(on_trace, 'trace')
  local ok, r = pcall(fn)
  jit.attach(on_trace)
  if not ok then error(r, 0) end
  return nyi, traces, r
end

-- run_lua(code[, env]): runs `code` in a fresh luajit process that finds moontorch where this one does
-- (the build tree, or the installed rock), with the variables of `env` ({'NAME=value', ...}) set for
-- it; returns its stdout, whether it exited with 0, and its stderr (apart: a library prints nothing
-- there unless something is wrong, and a platform's settings must not change what stdout says)
function H.run_lua(code, env)
  local path = os.tmpname()
  H.write_file(path, ('package.path = %q .. package.path\npackage.cpath = %q .. package.cpath\n'):format(
    build .. '/lua/?.lua;' .. build .. '/lua/?/init.lua;', build .. '/lib/?.so;') .. code)
  local vars = {}
  for i, e in ipairs(env or {}) do vars[i] = H.sh_quote(e) end
  local p = io.popen(('env %s timeout 120 %s %s 2>%s'):format(table.concat(vars, ' '), H.sh_quote(H.luajit), path,
    H.sh_quote(path .. '.err')))
  local out = p:read('*a')
  local ok = p:close()
  local err = H.read_file(path .. '.err')
  os.remove(path)
  os.remove(path .. '.err')
  return out, ok == true or ok == 0, err
end

return H
