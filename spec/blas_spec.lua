-- The BLAS is chosen, not inherited (core/cpu.c, core/blas.c, core/config.c): the kernel-set decision
-- as a table, the loaded BLAS checked against this machine's CPU in a clean child process, the
-- providers (MT_BLAS=openblas|onednn) each running the linalg spec, threads that fit the process,
-- the cgroup quota reader, and torch.config().
local H = require 'spec.support.helper'
local torch = H.torch
local ffi = require 'ffi'
local C = torch._C

local build = os.getenv('MOONTORCH_BUILD_DIR') or 'build'
local root = io.popen('pwd'):read('*l')
local abs_build = build:sub(1, 1) == '/' and build or (root .. '/' .. build)

local function tmpname()
  local p = os.tmpname()
  os.remove(p)
  return p
end

-- Run `body` (Lua, with torch loaded from this build) in a child luajit. `env` is a list of
-- VAR=value strings; `clean` starts it from an empty environment (env -i) plus PATH and what an
-- AddressSanitizer run needs. Returns stdout+stderr and the exit status.
local function child(body, env, opts)
  opts = opts or {}
  local file = tmpname() .. '.lua'
  local f = assert(io.open(file, 'w'))
  f:write(('package.path = %q .. package.path\npackage.cpath = %q .. package.cpath\n'):format(
    abs_build .. '/lua/?.lua;' .. abs_build .. '/lua/?/init.lua;', abs_build .. '/lib/?.so;'))
  f:write('local ffi = require "ffi"\n', body, '\n')
  f:close()
  local pre = {}
  if opts.clean then
    pre[#pre + 1] = 'env -i PATH=/usr/local/bin:/usr/bin:/bin'
    -- kept: what the process needs to start and find its libraries (not a setting of the BLAS's)
    for _, v in ipairs { 'LD_PRELOAD', 'LD_LIBRARY_PATH', 'ASAN_OPTIONS', 'LSAN_OPTIONS' } do
      local val = os.getenv(v)
      if val then pre[#pre + 1] = ('%s=%q'):format(v, val) end
    end
  else
    pre[#pre + 1] = 'env -u MT_BLAS -u MT_BLAS_CORETYPE -u OPENBLAS_CORETYPE -u MT_NUM_THREADS -u OMP_NUM_THREADS'
  end
  for _, e in ipairs(env or {}) do pre[#pre + 1] = e end
  local cmd = table.concat(pre, ' ') .. ' ' .. (opts.prefix or '') .. H.sh_quote(H.luajit) .. ' ' .. file .. ' 2>&1'
  local p = io.popen(cmd)
  local out = p:read('*a')
  local ok, _, code = p:close()
  os.remove(file)
  return out, ok == true or ok == 0, code
end

local function count(s, needle)
  local n, at = 0, 1
  while true do
    local i = s:find(needle, at, true)
    if not i then return n end
    n, at = n + 1, i + #needle
  end
end

local function features(...)
  local f = 0
  for _, name in ipairs { ... } do
    local v = C['MT_CPU_' .. name:upper()]
    assert(v and v ~= 0, 'no feature ' .. name)
    f = bit.bor(f, v)
  end
  return f
end
local SSE = { 'sse3', 'ssse3', 'sse4_1', 'sse4_2' }
local AVX2 = { 'sse3', 'ssse3', 'sse4_1', 'sse4_2', 'avx', 'fma', 'avx2', 'f16c' }
local AVX512 = { 'sse3', 'ssse3', 'sse4_1', 'sse4_2', 'avx', 'fma', 'avx2', 'f16c', 'avx512f', 'avx512dq', 'avx512cd',
  'avx512bw', 'avx512vl' }
local function with(list, ...)
  local r = {}
  for _, v in ipairs(list) do r[#r + 1] = v end
  for _, v in ipairs { ... } do r[#r + 1] = v end
  return r
end

local function plan(feats, vendor, family, setting, env, reported)
  local p = ffi.new('mt_blas_plan')
  C.mt_blas_plan_core(feats, vendor, family, setting, env, reported, p)
  return { core = ffi.string(p.core), how = ffi.string(p.how), note = ffi.string(p.note),
    warning = ffi.string(p.warning) }
end

describe('blas: the kernel-set decision (mt_blas_plan_core)', function()
  -- vendor and CPUID family: Intel's 6; AMD's 17h (Zen 1/2), 19h (Zen 3/4), 1Ah (Zen 5)
  local intel, amd, zen4, zen5 = { 'GenuineIntel', 6 }, { 'AuthenticAMD', 0x17 }, { 'AuthenticAMD', 0x19 },
    { 'AuthenticAMD', 0x1A }
  -- { what, features, {vendor, family}, MT_BLAS_CORETYPE, OPENBLAS_CORETYPE, reported, core asked for,
  --   `how` has, warning has (nil: no warning), note has (nil: no note) }
  -- A choice (MT_BLAS_CORETYPE, OPENBLAS_CORETYPE) is never warned about: torch.config() says it (the note).
  local cases = {
    { 'AVX-512 with BF16 (the Xeon that hides its model)', with(AVX512, 'avx512_bf16', 'amx_tile', 'amx_bf16'), intel,
      nil, nil, nil, 'Cooperlake', 'from the CPU', nil },
    { 'AVX-512 on AMD family 19h (Zen 4, two 256-bit halves): the AVX2 kernels', with(AVX512, 'avx512_bf16'), zen4, nil,
      nil, nil, 'Haswell', 'two 256-bit halves', nil },
    { 'AVX-512 on AMD family 1Ah (Zen 5)', with(AVX512, 'avx512_bf16'), zen5, nil, nil, nil, 'Cooperlake', 'from the CPU',
      nil },
    { 'AVX-512 without BF16', AVX512, intel, nil, nil, nil, 'SkylakeX', 'from the CPU', nil },
    { 'AVX-512F alone is not AVX-512 for the kernels', with(AVX2, 'avx512f'), intel, nil, nil, nil, 'Haswell',
      'from the CPU', nil },
    { 'AVX2 + FMA, Intel', AVX2, intel, nil, nil, nil, 'Haswell', 'from the CPU', nil },
    { 'AVX2 + FMA, AMD', AVX2, amd, nil, nil, nil, 'Zen', 'from the CPU', nil },
    { 'AVX2 + FMA, AMD family 19h (Zen 3)', AVX2, zen4, nil, nil, nil, 'Zen', 'from the CPU', nil },
    { 'AVX2 + FMA, Hygon', AVX2, { 'HygonGenuine', 0x18 }, nil, nil, nil, 'Zen', 'from the CPU', nil },
    { 'AVX', with(SSE, 'avx'), intel, nil, nil, nil, 'Sandybridge', 'from the CPU', nil },
    { 'SSE4.2', SSE, intel, nil, nil, nil, 'Nehalem', 'from the CPU', nil },
    { 'SSE3 only', { 'sse3' }, intel, nil, nil, nil, 'Prescott', 'from the CPU', nil },
    { 'no features known (not x86): OpenBLAS chooses', {}, { '', 0 }, nil, nil, nil, '', 'OpenBLAS itself', nil },
    -- the user's choice wins
    { "the user's OPENBLAS_CORETYPE wins", AVX512, intel, nil, 'Haswell', nil, 'Haswell', 'OPENBLAS_CORETYPE=Haswell', nil },
    { 'MT_BLAS_CORETYPE wins over OPENBLAS_CORETYPE', AVX512, intel, 'SkylakeX', 'Prescott', nil, 'SkylakeX',
      'MT_BLAS_CORETYPE=SkylakeX', nil },
    { 'a name moontorch does not know is passed on', AVX512, intel, nil, 'Bogus', nil, 'Bogus', 'OPENBLAS_CORETYPE=Bogus', nil },
    -- except where the CPU cannot run it: replaced, silently (the note says so)
    { 'a core the CPU cannot run is replaced', AVX2, intel, nil, 'SkylakeX', nil, 'Haswell', 'lacks', nil,
      'OPENBLAS_CORETYPE=SkylakeX asks for OpenBLAS kernels that need AVX-512, which this CPU lacks: moontorch runs Haswell' },
    { 'the same through MT_BLAS_CORETYPE', with(SSE, 'avx'), amd, 'Zen', nil, nil, 'Sandybridge', 'lacks', nil,
      'MT_BLAS_CORETYPE=Zen asks for OpenBLAS kernels that need AVX2' },
    -- after loading: the reported core against the CPU
    { 'reported as asked: no warning', with(AVX512, 'avx512_bf16'), intel, nil, nil, 'Cooperlake', 'Cooperlake',
      'from the CPU', nil },
    { 'reported case differs, same core: no warning', AVX512, intel, nil, nil, 'skylakex', 'SkylakeX', 'from the CPU', nil },
    { 'SkylakeX on a BF16 CPU: the same AVX-512 float kernels, no warning', with(AVX512, 'avx512_bf16'), intel, nil, nil,
      'SkylakeX', 'Cooperlake', 'from the CPU', nil },
    { 'nobody chose, and Prescott runs on AVX-512: the core asked for was not taken (the one warning)',
      with(AVX512, 'avx512_bf16'), intel, nil, nil, 'Prescott', 'Cooperlake', 'from the CPU',
      "the BLAS runs OpenBLAS's Prescott kernels (SSE), below the Cooperlake kernels (AVX-512) this CPU runs best: " ..
      'OpenBLAS did not take' },
    { 'a user (or platform) chose Prescott: no warning; the note names the setting for the best', with(AVX512, 'avx512_bf16'),
      intel, nil, 'Prescott', 'Prescott', 'Prescott', 'OPENBLAS_CORETYPE=Prescott', nil,
      "OpenBLAS's Prescott kernels (SSE) run, below the Cooperlake kernels (AVX-512) this CPU runs best: " ..
      'OPENBLAS_CORETYPE=Prescott asked for them; set MT_BLAS_CORETYPE=Cooperlake, or unset OPENBLAS_CORETYPE' },
    { 'Haswell chosen on Zen 5 (the image of our AMD machines): no warning', with(AVX512, 'avx512_bf16'), zen5, nil,
      'Haswell', 'Haswell', 'Haswell', 'OPENBLAS_CORETYPE=Haswell', nil, 'below the Cooperlake kernels (AVX-512)' },
    { 'MT_BLAS_CORETYPE below the CPU', AVX2, amd, 'Sandybridge', nil, 'Sandybridge', 'Sandybridge',
      'MT_BLAS_CORETYPE=Sandybridge', nil, 'MT_BLAS_CORETYPE=Sandybridge asked for them; set MT_BLAS_CORETYPE=Zen' },
    { 'Haswell on an AVX2 AMD CPU is not below', AVX2, amd, nil, nil, 'Haswell', 'Zen', 'from the CPU', nil },
    { "OpenBLAS's own Cooperlake on Zen 4 is not below", with(AVX512, 'avx512_bf16'), zen4, nil, nil, 'Cooperlake',
      'Haswell', 'two 256-bit halves', nil },
    { 'Sandybridge chosen on Zen 4 is below its best, Haswell: said in the note', with(AVX512, 'avx512_bf16'), zen4, nil,
      'Sandybridge', 'Sandybridge', 'Sandybridge', 'OPENBLAS_CORETYPE=Sandybridge', nil,
      'below the Haswell kernels (AVX2) this CPU runs best: OPENBLAS_CORETYPE=Sandybridge asked for them; set ' ..
      'MT_BLAS_CORETYPE=Haswell' },
    { 'a replaced core that OpenBLAS did not take either is warned about', AVX2, intel, nil, 'SkylakeX', 'Prescott',
      'Haswell', 'lacks', "the BLAS runs OpenBLAS's Prescott kernels (SSE), below the Haswell kernels", 'lacks' },
    { 'an unknown reported core is not judged', AVX512, intel, nil, nil, 'Future', 'SkylakeX', 'from the CPU', nil },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local p = plan(features(unpack(c[2])), c[3][1], c[3][2], c[4], c[5], c[6])
      assert.are.equal(c[7], p.core)
      assert.truthy(p.how:find(c[8], 1, true), p.how)
      if c[9] then
        assert.truthy(p.warning:find(c[9], 1, true), p.warning)
        assert.truthy(p.warning:find('^moontorch: warning: '), p.warning)
      else
        assert.are.equal('', p.warning)
      end
      if c[10] then
        assert.truthy(p.note:find(c[10], 1, true), p.note)
      else
        assert.are.equal('', p.note)
      end
    end)
  end

  it('empty strings count as unset', function()
    assert.are.same(plan(features(unpack(AVX2)), 'GenuineIntel', 6, nil, nil, nil),
      plan(features(unpack(AVX2)), 'GenuineIntel', 6, '', '', nil))
  end)

  it('grades every core OpenBLAS names, whatever the case', function()
    local levels = { Prescott = 1, Nehalem = 1, Core2 = 1, Opteron_SSE3 = 1, Sandybridge = 2, Bulldozer = 2,
      Haswell = 3, Zen = 3, Excavator = 3, SkylakeX = 4, Cooperlake = 4, SapphireRapids = 4, sKyLaKeX = 4, Bogus = 0 }
    for name, l in pairs(levels) do assert.are.equal(l, C.mt_blas_core_level(name), name) end
    assert.are.equal(0, C.mt_blas_core_level(nil))
  end)

  it('grades CPU features as the kernels need them', function()
    assert.are.equal(C.MT_CPU_LEVEL_AVX512, C.mt_cpu_level(features(unpack(AVX512))))
    assert.are.equal(C.MT_CPU_LEVEL_AVX2, C.mt_cpu_level(features(unpack(with(AVX2, 'avx512f', 'avx512bw')))))
    assert.are.equal(C.MT_CPU_LEVEL_AVX, C.mt_cpu_level(features('avx', 'avx2'))) -- AVX2 without FMA
    assert.are.equal('avx512', ffi.string(C.mt_cpu_level_name(4)))
    assert.are.equal('avx2', ffi.string(C.mt_cpu_feature_name(C.MT_CPU_AVX2)))
    assert.is_true(C.mt_cpu_feature_name(3) == nil) -- not one feature
  end)
end)

describe('blas: the child processes of this spec', function()
  it('start the luajit running it, by its absolute path, with no PATH to find it by', function()
    assert.truthy(H.luajit:sub(1, 1) == '/', H.luajit)
    local out, ok = child([[
      ffi.cdef 'long readlink(const char *path, char *buf, size_t size);'
      local buf = ffi.new('char[4096]')
      local n = ffi.C.readlink('/proc/self/exe', buf, 4096)
      print('exe=' .. ffi.string(buf, n))
    ]], { 'PATH=/nonexistent' }, { clean = true })
    assert.is_true(ok, out)
    assert.are.equal(H.luajit, out:match('exe=(%S+)'), out)
  end)

  it('quote their words for sh', function()
    local p = io.popen('printf %s ' .. H.sh_quote([[it's a "path" $HOME \x]]))
    assert.are.equal([[it's a "path" $HOME \x]], p:read('*a'))
    p:close()
  end)
end)

describe('blas: the BLAS loaded here', function()
  local feats, vendor = C.mt_cpu_features(), ffi.string(C.mt_cpu_vendor())
  local level = C.mt_cpu_level(feats)
  local best = plan(feats, vendor, C.mt_cpu_family(), nil, nil, nil).core

  it('a clean process (env -i) runs the kernels this CPU supports, and says nothing', function()
    local out, ok = child([[
      local torch = require 'moontorch'
      local C = torch._C
      local a = torch.ones(300, 300)
      assert(a:matmul(a)[1][1]:item() == 300)
      print('core=' .. ffi.string(C.mt_blas_core()))
      print('env=' .. tostring(os.getenv('OPENBLAS_CORETYPE')))
    ]], {}, { clean = true })
    assert.is_true(ok, out)
    local core = out:match('core=(%S*)')
    if level == C.MT_CPU_LEVEL_NONE then
      assert.are.equal('', best) -- not x86: OpenBLAS chooses, nothing to check it against
    else
      assert.are.equal(best, core, out)
      assert.truthy(C.mt_blas_core_level(core) >= math.min(level, C.MT_CPU_LEVEL_AVX2), core)
    end
    assert.falsy(out:find('warning', 1, true), out)
    -- the environment is as it was: a child of this one decides for itself
    assert.truthy(out:find('env=nil', 1, true), out)
  end)

  if level >= C.MT_CPU_LEVEL_AVX then
    it('a user (or platform) who chooses slower kernels is honoured silently; torch.config() names the setting for the best', function()
      local out, ok = child([[
        local torch = require 'moontorch'
        local a = torch.ones(300, 300)
        for _ = 1, 3 do a:matmul(a) end
        io.write(torch.config())
      ]], { 'OPENBLAS_CORETYPE=Prescott' })
      assert.is_true(ok, out)
      assert.falsy(out:find('warning', 1, true), out) -- nothing on stderr (the child's stderr is in `out`)
      assert.falsy(out:find('^moontorch:'), out)
      assert.truthy(out:find('BLAS kernels: Prescott, chosen by OPENBLAS_CORETYPE=Prescott', 1, true), out)
      assert.truthy(out:find("note: OpenBLAS's Prescott kernels (SSE) run, below the " .. best, 1, true), out)
      assert.truthy(out:find('set MT_BLAS_CORETYPE=' .. best, 1, true), out)
      -- ... and the setting it names gives the best
      out, ok = child([[
        local torch = require 'moontorch'
        print('core=' .. ffi.string(torch._C.mt_blas_core()))
        io.write(torch.config())
      ]], { 'OPENBLAS_CORETYPE=Prescott', 'MT_BLAS_CORETYPE=' .. best })
      assert.is_true(ok, out)
      assert.are.equal(best, out:match('core=(%S*)'), out)
      assert.falsy(out:find('warning', 1, true), out)
      assert.falsy(out:find('note:', 1, true), out)
    end)
  end

  it('a choice the CPU cannot run is replaced by its best, silently, and said in torch.config()', function()
    if level < C.MT_CPU_LEVEL_SSE or level >= C.MT_CPU_LEVEL_AVX512 then return end -- needs a core above this CPU
    local out, ok = child([[
      local torch = require 'moontorch'
      print('core=' .. ffi.string(torch._C.mt_blas_core()))
      io.write(torch.config())
    ]], { 'OPENBLAS_CORETYPE=SkylakeX' })
    assert.is_true(ok, out)
    assert.are.equal(best, out:match('core=(%S*)'), out)
    assert.falsy(out:find('warning', 1, true), out)
    assert.truthy(out:find('note: OPENBLAS_CORETYPE=SkylakeX asks for OpenBLAS kernels that need AVX-512', 1, true), out)
  end)

  for _, core in ipairs { 'Prescott', 'Haswell', 'SkylakeX', 'Cooperlake' } do
    it('under OPENBLAS_CORETYPE=' .. core .. ': products right, nothing on stderr, config says who chose', function()
      local out, ok, err = H.run_lua([[
        local torch = require 'moontorch'
        torch.manual_seed(0)
        for _, n in ipairs { 7, 300, 513 } do
          local a, b = torch.randn(n, n + 3, { dtype = torch.float64 }), torch.randn(n + 3, n - 2, { dtype = torch.float64 })
          local got32 = a:float():matmul(b:float()) -- MT_BLAS=openblas: OpenBLAS's own kernels, not moontorch's
          assert(torch.allclose(got32:double(), a:matmul(b), 1e-4, 1e-3), 'float32 ' .. n)
        end
        io.write(torch.config())
      ]], { 'MT_BLAS_CORETYPE=', 'MT_BLAS=openblas', 'OPENBLAS_CORETYPE=' .. core })
      assert.is_true(ok, out .. err)
      assert.are.equal('', err)
      local want = plan(feats, vendor, C.mt_cpu_family(), nil, core, nil).core
      assert.truthy(out:find('BLAS kernels: ' .. want .. ', chosen by', 1, true), out)
    end)
  end

  it('works the same from C alone (no Lua between the C program and the choice)', function()
    -- core/tests/test_core.c checks the same through the C API; here the public header's view of it, in
    -- this process's environment (where OPENBLAS_CORETYPE may be set: CI's machines set it)
    assert.are.equal(C.MT_OK, C.mt_blas_load())
    local here = plan(feats, vendor, C.mt_cpu_family(), os.getenv('MT_BLAS_CORETYPE'), os.getenv('OPENBLAS_CORETYPE'), nil)
    if level > 0 then assert.are.equal(here.core:lower(), ffi.string(C.mt_blas_core()):lower()) end
  end)
end)

describe('blas: providers (MT_BLAS)', function()
  local providers = { 'openblas' }
  if C.mt_blas_available('onednn') ~= 0 then providers[#providers + 1] = 'onednn' end

  it('oneDNN is found where it is installed', function()
    local installed = io.open('/usr/lib/x86_64-linux-gnu/libdnnl.so.2', 'r')
    if installed then
      installed:close()
      assert.are.equal(2, #providers)
    end
  end)

  for _, prov in ipairs(providers) do
    it(('MT_BLAS=%s does the float32 products and passes the linalg spec'):format(prov), function()
      local out, ok = child([[
        local torch = require 'moontorch'
        print('provider=' .. ffi.string(torch._C.mt_blas_provider()))
        io.write(torch.config())
      ]], { 'MT_BLAS=' .. prov })
      assert.is_true(ok, out)
      assert.are.equal(prov, out:match('provider=(%S+)'), out)
      local p = io.popen(('env MT_BLAS=%s MOONTORCH_BUILD_DIR=%s %s %s -o TAP spec/linalg_spec.lua 2>&1')
        :format(prov, build, H.sh_quote(H.luajit), H.sh_quote(H.busted)))
      local tap = p:read('*a')
      p:close()
      local passed, failed = count(tap, '\nok '), count(tap, '\nnot ok ')
      assert.are.equal(0, failed, tap)
      assert.truthy(passed >= 250, tap)
    end)
  end

  for _, prov in ipairs(providers) do
    it(('MT_BLAS=%s: a forked child still multiplies (GNU OpenMP\'s threads do not survive a fork)'):format(prov),
      function()
        local out, ok = child([[
          ffi.cdef [[ int fork(void); int waitpid(int pid, int *status, int options); void _exit(int); ]] .. ']]' .. [[
          local torch = require 'moontorch'
          local a = torch.ones(512, 512)
          assert(a:matmul(a)[1][1]:item() == 512 and a:matmul(a:t())[1][1]:item() == 512)
          io.stdout:flush()
          local pid = ffi.C.fork()
          if pid == 0 then
            local b = torch.ones(512, 512)
            local ok = b:matmul(b)[1][1]:item() == 512 and b:matmul(b:t())[1][1]:item() == 512
            ffi.C._exit(ok and 0 or 3)
          end
          local st = ffi.new('int[1]')
          ffi.C.waitpid(pid, st, 0)
          print('child status=' .. st[0])
          print('parent=' .. a:matmul(a)[1][1]:item())
        ]], { 'MT_BLAS=' .. prov }, { prefix = 'timeout 60 ' })
        assert.is_true(ok, out)
        assert.truthy(out:find('child status=0', 1, true), out)
        assert.truthy(out:find('parent=512', 1, true), out)
      end)
  end

  it('MT_OPENBLAS_LIB loads that OpenBLAS; one that cannot be loaded is an error at the product, not a crash', function()
    local out, ok = child([[
      local torch = require 'moontorch'
      local ok, err = pcall(function() return torch.ones(300, 300):matmul(torch.ones(300, 300)) end)
      print('ok=' .. tostring(ok))
      print(err)
      io.write(torch.config())
    ]], { 'MT_OPENBLAS_LIB=/nonexistent/libopenblas.so.0' })
    assert.is_true(ok, out)
    assert.truthy(out:find('ok=false', 1, true), out)
    -- raised at the user's line (the child's 5th: three lines of set-up, then the pcall)
    assert.truthy(out:find('.lua:5: moontorch.matmul: cannot load OpenBLAS (MT_OPENBLAS_LIB): /nonexistent/libopenblas.so.0', 1,
      true), out)
    assert.truthy(out:find('  - BLAS: none (cannot load OpenBLAS (MT_OPENBLAS_LIB)', 1, true), out)
    local path = ffi.string(C.mt_blas_library())
    out, ok = child([[
      local torch = require 'moontorch'
      print('sum=' .. torch.ones(300, 300):matmul(torch.ones(300, 300)):sum():item())
      print('lib=' .. ffi.string(torch._C.mt_blas_library()))
    ]], { 'MT_OPENBLAS_LIB=' .. path })
    assert.is_true(ok, out)
    assert.truthy(out:find('sum=27000000', 1, true), out)
    assert.truthy(out:find('lib=' .. path, 1, true), out)
  end)

  it('an unknown MT_BLAS falls back to OpenBLAS with a warning', function()
    local out, ok = child([[
      local torch = require 'moontorch'
      local a = torch.ones(300, 300)
      assert(a:matmul(a)[1][1]:item() == 300)
      print('provider=' .. ffi.string(torch._C.mt_blas_provider()))
    ]], { 'MT_BLAS=mkl' })
    assert.is_true(ok, out)
    assert.are.equal('openblas', out:match('provider=(%S+)'), out)
    assert.truthy(out:find('MT_BLAS=mkl is not a BLAS moontorch knows (openblas, onednn)', 1, true), out)
  end)
end)

describe('blas: threads', function()
  local allowed = C.mt_cpu_count_allowed()

  it('by default, as many as the CPUs this process may use', function()
    local out, ok = child([[
      local torch = require 'moontorch'
      print('threads=' .. torch.get_num_threads())
    ]])
    assert.is_true(ok, out)
    assert.are.equal(allowed, tonumber(out:match('threads=(%d+)')), out)
    -- nproc reads the affinity mask too (and OMP_NUM_THREADS / OMP_THREAD_LIMIT, which are not a CPU count)
    local nproc = tonumber(io.popen('env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc'):read('*l'))
    assert.are.equal(nproc, allowed)
  end)

  it('honours the affinity mask: taskset -c 0 gives one thread, to our pool and the BLAS', function()
    local out, ok = child([[
      local torch = require 'moontorch'
      print('threads=' .. torch.get_num_threads())
      print(torch.config())
    ]], {}, { prefix = 'taskset -c 0 ' })
    assert.is_true(ok, out)
    assert.are.equal(1, tonumber(out:match('threads=(%d+)')), out)
    assert.truthy(out:find('threads: 1 (from the CPUs this process may use; this process may use 1 CPUs', 1, true), out)
    assert.truthy(out:find('the BLAS (which reports 1)', 1, true), out)
  end)

  it('MT_NUM_THREADS, then OMP_NUM_THREADS, set the default', function()
    local out = child([[ print('threads=' .. require('moontorch').get_num_threads()) ]],
      { 'OMP_NUM_THREADS=3', 'MT_NUM_THREADS=5' })
    assert.are.equal(5, tonumber(out:match('threads=(%d+)')), out)
    out = child([[ print('threads=' .. require('moontorch').get_num_threads()) ]], { 'OMP_NUM_THREADS=3' })
    assert.are.equal(3, tonumber(out:match('threads=(%d+)')), out)
  end)

  it('set_num_threads governs the BLAS too, before and after it is loaded', function()
    local out, ok = child([[
      local torch = require 'moontorch'
      torch.set_num_threads(1)
      local a = torch.ones(300, 300)
      a:matmul(a)
      print('blas=' .. torch._C.mt_blas_threads())
      torch.set_num_threads(2)
      print('blas=' .. torch._C.mt_blas_threads())
    ]])
    assert.is_true(ok, out)
    local first, second = out:match('blas=(%d+).-blas=(%d+)')
    assert.are.equal('1', first, out)
    assert.are.equal('2', second, out)
  end)
end)

describe('blas: the cgroup CPU quota (mt_cgroup_cpu_limit)', function()
  -- a fake file system: root/proc/self/cgroup and root/sys/fs/cgroup/...
  local function tree(files)
    local dir = tmpname()
    for path, text in pairs(files) do
      os.execute(('mkdir -p %q'):format((dir .. '/' .. path):gsub('/[^/]*$', '')))
      H.write_file(dir .. '/' .. path, text)
    end
    return dir
  end
  local cases = {
    { 'v2: a quota of 1.5 CPUs rounds up to 2', { ['proc/self/cgroup'] = '0::/box\n',
      ['sys/fs/cgroup/box/cpu.max'] = '150000 100000\n' }, 2 },
    { 'v2: the smallest quota on the way up wins', { ['proc/self/cgroup'] = '0::/a/b\n',
      ['sys/fs/cgroup/a/b/cpu.max'] = '400000 100000\n', ['sys/fs/cgroup/a/cpu.max'] = '100000 100000\n' }, 1 },
    { 'v2: "max" is no quota', { ['proc/self/cgroup'] = '0::/box\n',
      ['sys/fs/cgroup/box/cpu.max'] = 'max 100000\n' }, 0 },
    { 'v2: at the root', { ['proc/self/cgroup'] = '0::/\n', ['sys/fs/cgroup/cpu.max'] = '300000 100000\n' }, 3 },
    { 'v1: cfs quota and period', { ['proc/self/cgroup'] = '5:memory:/x\n4:cpu,cpuacct:/docker/abc\n',
      ['sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us'] = '250000\n',
      ['sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us'] = '100000\n' }, 3 },
    { 'v1: -1 is no quota', { ['proc/self/cgroup'] = '4:cpu,cpuacct:/\n',
      ['sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us'] = '-1\n',
      ['sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us'] = '100000\n' }, 0 },
    { "v1 inside a container: the group's path is not there, the mount's root is",
      { ['proc/self/cgroup'] = '4:cpu,cpuacct:/docker/abc\n',
        ['sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us'] = '200000\n',
        ['sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us'] = '100000\n' }, 2 },
    { 'no cgroup file at all', {}, 0 },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local dir = tree(c[2])
      local got = C.mt_cgroup_cpu_limit(dir)
      os.execute(('rm -rf %q'):format(dir))
      assert.are.equal(c[3], got)
    end)
  end

  it('the real one narrows the affinity count, never widens it', function()
    local q = C.mt_cgroup_cpu_limit('')
    local allowed = C.mt_cpu_count_allowed()
    assert.truthy(allowed >= 1)
    if q > 0 then assert.truthy(allowed <= q) end
  end)
end)

describe('torch.config()', function()
  local text = torch.config()

  it("says the version, the CPU, our kernels' SIMD level, the BLAS and its kernels, threads and CUDA", function()
    assert.truthy(text:find('^moontorch ' .. torch.__version__:gsub('%.', '%%.') .. ' built with:\n'), text)
    assert.truthy(text:find('  - LuaJIT: ' .. jit.version, 1, true), text)
    assert.truthy(text:find("CPU capability of moontorch's own kernels: " .. ffi.string(C.mt_kernels_simd()), 1, true), text)
    assert.truthy(text:find('  - BLAS: OpenBLAS', 1, true), text)
    assert.truthy(text:find('  - BLAS kernels: ' .. ffi.string(C.mt_blas_core()) .. ', chosen by ', 1, true), text)
    assert.truthy(text:find('  - float32 matrix products: ', 1, true), text)
    assert.truthy(text:find('  - threads: ' .. torch.get_num_threads() .. ' ', 1, true), text)
    -- CUDA: what its backend says, or why this build has none (the registry answers: device_spec)
    assert.truthy(text:find(C.mt_device_backend(1) == nil and '\n  - CUDA: not built (' or '\n  - CUDA: ', 1, true), text)
    assert.are.equal(text, torch.__config__.show())
  end)

  it('the SIMD level follows the CPU', function()
    local levels = H.cpu_levels()
    local want = levels.avx512 and 'avx512' or levels.avx2 and 'avx2' or 'scalar' -- speed: vmath512.c
    local env = os.getenv('MOONTORCH_VMATH')
    if env == '0' or env == 'scalar' then want = 'scalar' elseif env == 'avx2' and want == 'avx512' then want = 'avx2' end
    assert.are.equal(want, ffi.string(C.mt_kernels_simd()))
  end)

  it('`moontorch --version` prints it', function()
    local p = io.popen('env -u MT_BLAS -u OPENBLAS_CORETYPE bin/moontorch --version 2>&1')
    local out = p:read('*a')
    p:close()
    assert.truthy(out:find('^moontorch ' .. torch.__version__:gsub('%.', '%%.') .. ' built with:'), out)
    assert.truthy(out:find('BLAS kernels: ', 1, true), out)
    -- CUDA: not built, or core/gpu's backend (built for the GPUs, or the CPU emulator alone)
    assert.truthy(out:find('CUDA: not built', 1, true) or out:find('CUDA: built for', 1, true) or
      out:find('CUDA: the CPU emulator', 1, true), out)
  end)
end)
