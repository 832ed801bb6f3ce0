-- moontorch.distributed, nn.parallel.DistributedDataParallel, utils.data.DistributedSampler and the
-- launcher (issue 23). The collectives and DDP run in real mpirun jobs on this machine with 2 and
-- 4 ranks (4 oversubscribed on 2 cores) and in a world of one; each rank prints a line per check
-- (spec/support/dist_*.lua), read back here. Also: a rank that raises, hangs or is killed, models
-- that differ between ranks, the launcher, and a build without MPI.
-- As root, mpirun refuses to start without --allow-run-as-root: given here when this runs as root.
local H = require 'spec.support.helper'
local torch = H.torch
local nn = require 'moontorch.nn'
local sh_quote = H.sh_quote
local libc = require('moontorch.libc').declare { geteuid = 'unsigned int %s(void)' }

local root = io.popen('pwd'):read('*l')
local build = os.getenv('MOONTORCH_BUILD_DIR') or 'build'
local clock = require('moontorch.utils.progress').clock

local function which(cmd)
  local p = io.popen('command -v ' .. cmd .. ' 2>/dev/null')
  local r = p:read('*l')
  p:close()
  return r ~= '' and r or nil
end
local mpirun = which('mpirun')
local lib = io.open(build .. '/lib/moontorch/libmoontorch_mpi.so', 'rb')
if lib then lib:close() end
local have_mpi = mpirun ~= nil and lib ~= nil
local as_root = libc.geteuid() == 0

local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  os.execute('mkdir -p ' .. sh_quote(p))
  return p
end
local work = tmpdir()

-- mpi(np, script, args, opts): runs `mpirun -np np moontorch script args` from the checkout;
-- returns stdout, stderr, exit status, seconds. opts: mpi = extra mpirun words, env = {'A=b'}
-- (given to the ranks), wrap = a command that runs mpirun. LD_PRELOAD (AddressSanitizer's runtime,
-- ./run asan) goes to the ranks, not to mpirun.
local function mpi(np, script, args, opts)
  opts = opts or {}
  local words = { 'env -u LD_PRELOAD', opts.wrap or '', sh_quote(mpirun), '-np', tostring(np), '--oversubscribe' }
  if as_root then words[#words + 1] = '--allow-run-as-root' end
  for _, w in ipairs(opts.mpi or {}) do words[#words + 1] = w end
  local env = { 'DIST_SPEC_DIR=' .. work }
  for _, e in ipairs(opts.env or {}) do env[#env + 1] = e end
  if os.getenv('LD_PRELOAD') then env[#env + 1] = 'LD_PRELOAD=' .. os.getenv('LD_PRELOAD') end
  for _, e in ipairs(env) do
    words[#words + 1] = '-x'
    words[#words + 1] = sh_quote(e)
  end
  words[#words + 1] = sh_quote(H.luajit)
  words[#words + 1] = 'bin/moontorch'
  words[#words + 1] = script
  words[#words + 1] = args or ''
  local out, err = work .. '/out', work .. '/err'
  os.execute('rm -f ' .. sh_quote(work) .. '/rank*.txt')
  local t0 = clock()
  local ok, _, code = os.execute(('cd %s && timeout 300 %s >%s 2>%s </dev/null'):format(sh_quote(root),
    table.concat(words, ' '), sh_quote(out), sh_quote(err)))
  local secs = clock() - t0
  if type(ok) == 'number' then code = ok / 256 end -- Lua 5.1's os.execute
  return H.read_file(out), H.read_file(err), code, secs
end

-- one process alone (no mpirun): a world of one
local function alone(script, args, env)
  local vars = { 'DIST_SPEC_DIR=' .. work }
  for _, e in ipairs(env or {}) do vars[#vars + 1] = e end
  for i, v in ipairs(vars) do vars[i] = sh_quote(v) end
  local out, err = work .. '/out', work .. '/err'
  os.execute('rm -f ' .. sh_quote(work) .. '/rank*.txt')
  local ok, _, code = os.execute(('cd %s && env %s timeout 300 %s bin/moontorch %s %s >%s 2>%s </dev/null'):format(
    sh_quote(root), table.concat(vars, ' '), sh_quote(H.luajit), script, args or '', sh_quote(out), sh_quote(err)))
  if type(ok) == 'number' then code = ok / 256 end
  return H.read_file(out), H.read_file(err), code
end

-- the lines the ranks wrote (spec/support/dist_harness.lua), then stdout
local function rank_lines(np, stdout)
  local all = {}
  for r = 0, np - 1 do
    local ok, s = pcall(H.read_file, ('%s/rank%d.txt'):format(work, r))
    all[#all + 1] = ok and s or ''
  end
  all[#all + 1] = stdout
  return table.concat(all)
end

-- every rank wrote `done`, no FAIL line, the same number of ok lines (at least `min`), and the
-- job ended with 0
local function all_passed(stdout, err, np, min, code)
  local out = rank_lines(np, stdout)
  local fails = {}
  for line in out:gmatch('[^\n]+') do
    if line:match('^%[%d+%] FAIL') then fails[#fails + 1] = line:sub(1, 600) end
  end
  assert(#fails == 0, table.concat(fails, '\n') .. '\n' .. err:sub(1, 2000))
  local oks = {}
  for r = 0, np - 1 do
    local n = 0
    for _ in out:gmatch('%[' .. r .. '%] ok ') do n = n + 1 end
    oks[r] = n
    assert(out:find('[' .. r .. '] done', 1, true), ('rank %d did not finish:\n%s\n%s'):format(r, out:sub(-2000), err:sub(1, 2000)))
  end
  for r = 1, np - 1 do assert(oks[r] == oks[0], ('rank %d passed %d checks, rank 0 %d'):format(r, oks[r], oks[0])) end
  assert(oks[0] >= min, ('only %d checks ran'):format(oks[0]))
  assert(code == 0, ('the job ended with %s:\n%s'):format(tostring(code), err:sub(1, 3000)))
  return oks[0]
end

local it_mpi = have_mpi and it or function(name) pending(name .. ' (no MPI here: libmoontorch_mpi.so or mpirun missing)') end

describe('distributed collectives against values computed in one process', function()
  it_mpi('mpirun -np 2: every collective, every dtype (in pieces of 7 elements), async, p2p, groups, objects', function()
    local out, err, code = mpi(2, 'spec/support/dist_collectives.lua', '', { env = { 'MOONTORCH_DIST_CHUNK=7' } })
    all_passed(out, err, 2, 200, code)
  end)
  it_mpi('mpirun -np 4, oversubscribed on this machine\'s cores', function()
    local out, err, code = mpi(4, 'spec/support/dist_collectives.lua')
    all_passed(out, err, 4, 200, code)
  end)
  it_mpi('mpirun -np 2 with MOONTORCH_DIST_SHM=0: all_reduce through MPI_Allreduce rather than shared memory', function()
    local out, err, code = mpi(2, 'spec/support/dist_collectives.lua', '', { env = { 'MOONTORCH_DIST_SHM=0' } })
    all_passed(out, err, 2, 200, code)
  end)
  it_mpi('mpirun -np 3 (odd), the on-node all_reduce in rounds of 4 KiB', function()
    local out, err, code = mpi(3, 'spec/support/dist_collectives.lua', '', { env = { 'MOONTORCH_DIST_SHM_BYTES=4096' } })
    all_passed(out, err, 3, 200, code)
  end)
  it_mpi('a world of one: a script started alone', function()
    local out, err, code = alone('spec/support/dist_collectives.lua')
    all_passed(out, err, 1, 200, code)
  end)
end)

describe('DistributedDataParallel', function()
  it_mpi('mpirun -np 2: MLP and LeNet = one process on the whole batch; buckets, unused parameters, no_sync, buffers, checkpoints', function()
    local out, err, code = mpi(2, 'spec/support/dist_ddp.lua')
    all_passed(out, err, 2, 17, code)
    assert(err == '', err)
  end)
  it_mpi('mpirun -np 4', function()
    local out, err, code = mpi(4, 'spec/support/dist_ddp.lua')
    all_passed(out, err, 4, 17, code)
  end)
  it_mpi('mpirun -np 2 with MOONTORCH_DIST_SHM=0 (the gradients\' all-reduce through MPI)', function()
    local out, err, code = mpi(2, 'spec/support/dist_ddp.lua', '', { env = { 'MOONTORCH_DIST_SHM=0' } })
    all_passed(out, err, 2, 17, code)
  end)
  it_mpi('a world of one', function()
    local out, err, code = alone('spec/support/dist_ddp.lua')
    all_passed(out, err, 1, 17, code)
  end)
  it_mpi('models that differ between ranks: a clear error on every rank, and the group still works', function()
    local out, err, code = mpi(2, 'spec/support/dist_fail.lua', 'mismatch')
    all_passed(out, err, 2, 4, code)
  end)
end)

describe('in a container whose seccomp filter refuses process_vm_readv (Docker\'s default profile)', function()
  it_mpi('large messages still travel, and nothing is printed on stderr', function()
    -- spec/support/dist_seccomp.c runs mpirun under such a filter; without moontorch's check Open MPI's
    -- shared-memory transport printed "Read -1, expected 4000000, errno = 1" for each large message
    local exe = work .. '/seccomp_run'
    local cc = io.popen(('env -u LD_PRELOAD cc -O -o %s spec/support/dist_seccomp.c 2>&1'):format(sh_quote(exe)))
    local cout = cc:read('*a')
    cc:close()
    assert(cout == '', cout)
    local script = work .. '/large.lua'
    H.write_file(script, [[
local torch = require 'moontorch'
local dist = torch.distributed
dist.init_process_group { backend = 'mpi', timeout = 60 }
local t = torch.ones(1000000) * (dist.get_rank() + 1)
dist.all_reduce(t)
local b = dist.get_rank() == 0 and torch.arange(1, 500001):double() or torch.zeros(500000, { dtype = torch.float64 })
dist.broadcast(b, 0)
print(('rank %d: %.0f %.0f'):format(dist.get_rank(), t:sum():item(), b:sum():item()))
]])
    local out, err, code = mpi(2, script, '', { wrap = sh_quote(exe) })
    assert(code == 0, out .. err)
    for r = 0, 1 do assert(out:find(('rank %d: 3000000 125000250000'):format(r), 1, true), out .. err) end
    assert(not err:find('Read -1', 1, true), err)
  end)
end)

describe('a rank that fails', function()
  it_mpi('raises: its error is shown and mpirun ends the job (no waiting for the timeout)', function()
    local out, err, code, secs = mpi(2, 'spec/support/dist_fail.lua', 'raise', { env = { 'DIST_TIMEOUT=120' } })
    out = rank_lines(2, out)
    assert(code ~= 0, 'the job failed')
    assert(err:find('rank 1 gives up at step 3', 1, true), err)
    assert(secs < 60, ('the job took %.1f s'):format(secs))
    assert(not out:find('FAIL', 1, true), out)
  end)
  it_mpi('hangs: the others raise once the timeout has passed, naming it, and every later operation fails at once', function()
    local out, err, code, secs = mpi(3, 'spec/support/dist_fail.lua', 'hang', { env = { 'DIST_TIMEOUT=3' } })
    out = rank_lines(3, out)
    for _, r in ipairs({ 0, 2 }) do
      local el, msg = out:match('%[' .. r .. '%] elapsed ([%d.]+) ([^\n]*)')
      assert(el, out .. err)
      assert(tonumber(el) >= 2.9 and tonumber(el) < 3 + 10, 'raised after ' .. el .. ' s')
      assert(msg:find(('moontorch.distributed.all_reduce: all_reduce timed out after 3 s on rank %d of 3: rank 1 never ' ..
        'reached it (died, hung or never called it); this process can no longer communicate'):format(r), 1, true), msg)
      local after, ok2, msg2 = out:match('%[' .. r .. '%] after ([%d.]+) (%a+) ([^\n]*)')
      assert(ok2 == 'false' and tonumber(after) < 1 and msg2:find('barrier: all_reduce timed out', 1, true), out)
    end
    assert(code ~= 0 and secs < 60, 'the job ended')
  end)
  it_mpi('is killed: with mpirun --enable-recovery the others raise after the timeout', function()
    local out, err = mpi(2, 'spec/support/dist_fail.lua', 'kill', { env = { 'DIST_TIMEOUT=3' }, mpi = { '--enable-recovery' } })
    out = rank_lines(2, out)
    local el, msg = out:match('%[0%] elapsed ([%d.]+) ([^\n]*)')
    assert(el, out .. err)
    assert(tonumber(el) >= 2.9 and tonumber(el) < 3 + 10, 'raised after ' .. el .. ' s')
    assert(msg:find('timed out after 3 s on rank 0 of 2: rank 1 never reached it', 1, true), msg)
  end)
  it_mpi('is killed inside the on-node all_reduce (after reaching it): the others raise after the timeout, naming it', function()
    -- MOONTORCH_DIST_TEST_DIE=1:3: world rank 1 kills itself in the third round of the shared-memory
    -- all_reduce, after posting its data (core/dist/mpi.c): step 3's bucket
    local out, err = mpi(2, 'spec/support/dist_fail.lua', 'kill_inside',
      { env = { 'DIST_TIMEOUT=3', 'MOONTORCH_DIST_TEST_DIE=1:3' }, mpi = { '--enable-recovery' } })
    out = rank_lines(2, out)
    local el, msg = out:match('%[0%] elapsed ([%d.]+) ([^\n]*)')
    assert(el, out .. err)
    assert(tonumber(el) >= 2.9 and tonumber(el) < 3 + 10, 'raised after ' .. el .. ' s')
    assert(msg:find('moontorch.distributed.all_reduce: all_reduce timed out after 3 s on rank 0 of 2: rank 1 reached it ' ..
      'but never finished its part (died or hung inside it); this process can no longer communicate', 1, true), msg)
    local after, ok2, msg2 = out:match('%[0%] after ([%d.]+) (%a+) ([^\n]*)')
    assert(ok2 == 'false' and tonumber(after) < 1 and msg2:find('barrier: all_reduce timed out', 1, true), out)
  end)
  it_mpi('is killed: under plain mpirun the job ends', function()
    local out, err, code, secs = mpi(2, 'spec/support/dist_fail.lua', 'kill', { env = { 'DIST_TIMEOUT=120' } })
    assert(code ~= 0, 'the job failed')
    assert(secs < 60, ('the job took %.1f s'):format(secs))
    assert(err:find('process rank 1 with PID %d+ on node %S+ exited on signal 9'), err)
  end)
end)

describe('the launcher', function()
  local script = work .. '/env.lua'
  H.write_file(script, [[
local torch = require 'moontorch'
local dist = torch.distributed
print(('env %s %s %s %s %s'):format(os.getenv('RANK'), os.getenv('WORLD_SIZE'), os.getenv('LOCAL_RANK'),
  os.getenv('LOCAL_WORLD_SIZE'), table.concat({ ... }, ',')))
print(('torchrun %s %s %s %s %s %s %s %s %s %s'):format(os.getenv('RANK'), os.getenv('MASTER_ADDR'), os.getenv('MASTER_PORT'),
  os.getenv('GROUP_RANK'), os.getenv('GROUP_WORLD_SIZE'), os.getenv('ROLE_RANK'), os.getenv('ROLE_WORLD_SIZE'),
  os.getenv('ROLE_NAME'), os.getenv('TORCHELASTIC_RESTART_COUNT'), tostring(torch.distributed.is_torchelastic_launched())))
dist.init_process_group('mpi')
local t = torch.ones(1)
dist.all_reduce(t)
print(('rank %d of %d: %g'):format(dist.get_rank(), dist.get_world_size(), t:item()))
if arg[1] == 'fail' and dist.get_rank() == 1 then os.exit(5) end
]])
  local function run(args, env)
    local p = io.popen(('cd %s && %s %s bin/moontorch -m distributed.run %s 2>&1; echo "EXIT $?"')
      :format(sh_quote(root), env or '', sh_quote(H.luajit), args))
    local out = p:read('*a')
    p:close()
    return out, tonumber(out:match('EXIT (%d+)%s*$'))
  end
  it_mpi('moontorch -m distributed.run --nproc 3: the ranks, their environment, the arguments', function()
    local out, code = run('--nproc 3 ' .. sh_quote(script) .. ' a b')
    assert(code == 0, out)
    for r = 0, 2 do
      assert(out:find(('env %d 3 %d 3 a,b'):format(r, r), 1, true), out)
      -- torchrun's defaults (PyTorch 1.13: --master_addr 127.0.0.1 --master_port 29500, one node)
      assert(out:find(('torchrun %d 127.0.0.1 29500 0 1 %d 3 default 0 true'):format(r, r), 1, true), out)
      assert(out:find(('rank %d of 3: 3'):format(r), 1, true), out)
    end
  end)
  it_mpi('a failing rank fails the launch', function()
    local out, code = run('--nproc=2 ' .. sh_quote(script) .. ' fail')
    assert(code ~= 0, out)
  end)
  it('--dry-run shows the mpirun command; options and their errors', function()
    -- (without Open MPI installed: an executable named mpirun stands in for it, which a dry run never starts)
    local stand_in = ''
    if not mpirun then
      os.execute('mkdir -p ' .. sh_quote(work .. '/bin'))
      H.write_file(work .. '/bin/mpirun', '#!/bin/sh\nexit 1\n')
      os.execute('chmod +x ' .. sh_quote(work .. '/bin/mpirun'))
      stand_in = '--mpirun ' .. sh_quote(work .. '/bin/mpirun') .. ' '
    end
    local out, code = run(stand_in .. '--nproc 5 --dry-run --mpi-arg --tag-output x.lua y')
    assert(code == 0, out)
    assert(out:find('mpirun -np 5', 1, true) and out:find('--oversubscribe', 1, true) and
      out:find('--tag-output', 1, true) and out:find('bin/moontorch x.lua y', 1, true), out)
    if as_root then assert(out:find('--allow-run-as-root', 1, true), out) end
    assert(out:find('RANK=$OMPI_COMM_WORLD_RANK', 1, true), out)
    out, code = run(stand_in .. '--standalone --nproc 2 --master_addr=node7 --master-port 1234 --dry-run x.lua')
    assert(code == 0 and out:find("MASTER_ADDR='\\''node7'\\''; MASTER_PORT='\\''1234'\\''", 1, true), out)
    out, code = run(stand_in .. '--master-port 70000 x.lua')
    assert(code == 2 and out:find('--master-port needs a port number, got "70000"', 1, true), out)
    out, code = run('--nproc 0 x.lua')
    assert(code == 2 and out:find('--nproc needs a positive whole number, got "0"', 1, true), out)
    out, code = run('--nnodes 2 x.lua')
    assert(code == 2 and out:find('more than one machine', 1, true), out)
    out, code = run('--frob x.lua')
    assert(code == 2 and out:find('unknown option --frob', 1, true), out)
    out, code = run('--help')
    assert(code == 0 and out:find('usage: moontorch -m distributed.run', 1, true), out)
    out, code = run('--mpirun /nonexistent/mpirun x.lua')
    assert(code == 2 and out:find("/nonexistent/mpirun was not found: install Debian's openmpi-bin", 1, true), out)
    out, code = run(stand_in .. '--nproc 2')
    assert(code == 2 and out:find('which script?', 1, true), out)
  end)
end)

describe('the Fashion-MNIST demo', function()
  it_mpi('--ranks 2 trains data-parallel to what one process gives with the same global batch (--ranks 1)', function()
    local data = work .. '/fashion'
    os.execute('mkdir -p ' .. sh_quote(data))
    H.fashion_split(data, 'train', 384, 3)
    H.fashion_split(data, 't10k', 120, 5)
    local function demo(ranks)
      local p = io.popen(('cd %s && %s bin/moontorch examples/fashion_mnist.lua --ranks %d ' ..
        '--epochs 2 --batch-size 32 --threads 1 --data %s --out %s </dev/null 2>&1; echo "EXIT $?"'):format(sh_quote(root),
        sh_quote(H.luajit), ranks, sh_quote(data), sh_quote(work .. '/run' .. ranks)))
      local out = p:read('*a')
      p:close()
      assert(out:match('EXIT 0%s*$'), out)
      return out
    end
    local one, two = demo(1), demo(2)
    assert(two:find('2 ranks (batch 16 each)', 1, true), two)
    local function numbers(out)
      local r = {}
      for l, tl, acc in out:gmatch('train loss ([%d.]+), test loss ([%d.]+), test accuracy ([%d.]+)%%') do
        r[#r + 1] = { tonumber(l), tonumber(tl), tonumber(acc) }
      end
      return r
    end
    local a, b = numbers(one), numbers(two)
    assert(#a == 2 and #b == 2, one .. two)
    for e = 1, 2 do
      assert(math.abs(a[e][1] - b[e][1]) <= 2e-3 and math.abs(a[e][2] - b[e][2]) <= 2e-3, ('epoch %d losses: %s / %s')
        :format(e, table.concat(a[e], ' '), table.concat(b[e], ' ')))
      assert(math.abs(a[e][3] - b[e][3]) <= 1, ('epoch %d accuracy %g%% / %g%%'):format(e, a[e][3], b[e][3]))
    end
    assert(b[2][3] > 50, 'it learned: ' .. b[2][3] .. '%')
    -- rank 0 alone prints and writes; its checkpoint is the plain network's, and resumes in one process
    local _, lines = two:gsub('final test accuracy', '')
    assert(lines == 1, two)
    local ck = torch.load(work .. '/run2/checkpoint.mt')
    assert(ck.model['0.weight'] ~= nil and ck.epoch == 2, 'plain keys')
  end)
end)

describe('init_process_group', function()
  it_mpi('WORLD_SIZE=2 in the environment but started alone: says how to start the processes', function()
    local out, ok, err = H.run_lua([[
local torch = require 'moontorch'
local ok, e = pcall(torch.distributed.init_process_group, 'mpi')
print(ok, e)]], { 'WORLD_SIZE=2', 'RANK=0' })
    assert(ok, err)
    assert(out:find('WORLD_SIZE=2 in the environment, but MPI started this process alone', 1, true) and
      out:find('moontorch -m distributed.run --nproc 2 script.lua', 1, true), out)
    out, ok, err = H.run_lua([[
local torch = require 'moontorch'
print(pcall(torch.distributed.init_process_group, 'mpi'))]], { 'SLURM_STEP_ID=0', 'SLURM_NTASKS=4' })
    assert(ok, err)
    assert(out:find('srun started 4 tasks, but MPI sees this one alone', 1, true) and out:find('srun --mpi=pmix', 1, true), out)
  end)
  it_mpi('rank= and world_size= must agree with MPI; a timeout is seconds', function()
    local out, ok, err = H.run_lua([[
local torch = require 'moontorch'
local dist = torch.distributed
print(pcall(dist.init_process_group, {backend = 'mpi', world_size = 3}))
print(pcall(dist.init_process_group, {backend = 'mpi', rank = 1}))
print(pcall(dist.init_process_group, {backend = 'mpi', timeout = -1}))
print(pcall(dist.get_rank))
dist.init_process_group {backend = 'mpi', rank = 0, world_size = 1, timeout = {minutes = 1}}
print(dist.get_rank(), dist.get_world_size(), dist.group.WORLD._timeout, dist.get_backend())]])
    assert(ok, err)
    assert(out:find('world_size=3, but MPI started 1 process', 1, true), out)
    assert(out:find('rank=1, but MPI gave this process rank 0', 1, true), out)
    assert(out:find('timeout must be a positive number of seconds', 1, true), out)
    assert(out:find('Default process group has not been initialized, please make sure to call init_process_group.', 1, true), out)
    assert(out:find('0\t1\t60\tmpi', 1, true), out)
    assert(err == '', err)
  end)
  it('without the MPI library: says the build has no MPI', function()
    local out, ok, err = H.run_lua([[
local torch = require 'moontorch'
local dist = torch.distributed
print(dist.is_available(), dist.is_mpi_available(), dist.is_nccl_available())
print(pcall(dist.init_process_group, 'mpi'))
local nn = require 'moontorch.nn'
print(pcall(nn.parallel.DistributedDataParallel, nn.Linear(2, 2)))]], { 'MOONTORCH_MPI_LIB=/nonexistent/libmoontorch_mpi.so' })
    assert(ok, err)
    assert(out:find('false\tfalse\tfalse', 1, true), out)
    assert(out:find('moontorch.distributed.init_process_group: this moontorch was built without MPI', 1, true), out)
    assert(out:find('install Debian\'s libopenmpi-dev', 1, true), out)
    assert(out:find('Default process group has not been initialized', 1, true), out)
  end)
  it('CMake without MPI configures without the MPI library and says so', function()
    local dir = tmpdir()
    local p = io.popen(('env -u LD_PRELOAD cmake -S %s -B %s -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON -DMT_BUILD_TESTS=OFF 2>&1'):format(
      sh_quote(root), sh_quote(dir)))
    local out = p:read('*a')
    local ok = p:close()
    assert(ok == true or ok == 0, out)
    assert(out:find('MPI for moontorch.distributed: not found', 1, true), out)
    local mk = H.read_file(dir .. '/Makefile')
    assert(mk:find('moontorch', 1, true) and not mk:find('moontorch_mpi', 1, true), 'no moontorch_mpi target')
    os.execute('rm -rf ' .. sh_quote(dir))
  end)
end)

describe('torch.distributed before init_process_group', function()
  local dist = torch.distributed
  it('names its ops and backends, and says what is missing', function()
    assert.equal('ReduceOp.SUM', tostring(dist.ReduceOp.SUM))
    assert.equal(dist.ReduceOp, dist.reduce_op)
    assert.equal('mpi', dist.Backend.MPI)
    H.errors_with(function() return dist.ReduceOp.MEAN end, "distributed.ReduceOp: has no operation 'MEAN'")
    H.errors_with(function() return dist.Backend.UCX end, "distributed.Backend: has no backend 'UCX'")
    assert.is_false(dist.is_nccl_available())
    assert.is_false(dist.is_gloo_available())
    assert.is_false(dist.is_initialized())
    assert.is_nil(dist.group.WORLD)
    for _, f in ipairs({ 'get_rank', 'get_world_size', 'barrier', 'new_group' }) do
      H.errors_with(function() dist[f]() end, 'Default process group has not been initialized, please make sure to call init_process_group.')
    end
    H.errors_with(function() dist.all_reduce(torch.ones(1)) end, 'Default process group has not been initialized')
    H.errors_with(function() dist.destroy_process_group() end, 'Default process group has not been initialized')
    H.errors_with(function() nn.parallel.DistributedDataParallel(nn.Linear(2, 2)) end,
      'Default process group has not been initialized')
    local op = dist.P2POp(dist.isend, torch.ones(1), 0)
    assert.truthy(torch.isinstance(op, dist.P2POp))
    H.errors_with(function() dist.P2POp(print, torch.ones(1), 0) end, 'Invalid ``op``')
  end)
end)

describe('utils.data.DistributedSampler', function()
  local data = torch.utils.data
  local ds = data.TensorDataset(torch.arange(11))
  -- PyTorch 1.13 (/usr/bin/python3): list(DistributedSampler(list(range(11)), num_replicas=n,
  -- rank=r, shuffle=sh, drop_last=dl, seed=seed)) after set_epoch(epoch), and its len; plus one
  it('gives PyTorch 1.13\'s indices (shuffled with seed + epoch, padded, drop_last), 1-based', function()
    local cases = {
      { 3, 0, true, false, 0, 0, { 10, 3, 2, 7 } },
      { 3, 2, true, false, 0, 0, { 4, 8, 9, 10 } },
      { 3, 1, true, false, 7, 3, { 6, 1, 7, 4 } },
      { 4, 3, true, true, 0, 1, { 3, 8 } },
      { 4, 1, false, false, 0, 0, { 1, 5, 9 } },
      { 4, 2, false, true, 0, 0, { 2, 6 } },
      { 2, 1, true, false, 0, 5, { 5, 8, 2, 6, 1, 9 } },
      { 5, 4, false, false, 0, 0, { 4, 9, 3 } },
    }
    for _, c in ipairs(cases) do
      local s = data.DistributedSampler(ds, { num_replicas = c[1], rank = c[2], shuffle = c[3], drop_last = c[4], seed = c[5] })
      s:set_epoch(c[6])
      local got = {}
      for i in s() do got[#got + 1] = i - 1 end
      assert.same(c[7], got)
      assert.equal(#c[7], s:__len())
    end
    -- more ranks than samples: the list repeats (PyTorch: len 1, [1] for 2 samples, 5 ranks, rank 3)
    local s = data.DistributedSampler(data.TensorDataset(torch.arange(2)), 5, 3, false)
    local got = {}
    for i in s:iter() do got[#got + 1] = i end
    assert.same({ 2 }, got)
    -- the same order in every rank: the ranks' shares together are the whole (padded) permutation
    local seen = {}
    for r = 0, 2 do for i in data.DistributedSampler(ds, 3, r)() do seen[i] = (seen[i] or 0) + 1 end end
    for i = 1, 11 do assert.truthy(seen[i]) end
  end)
  it('works with a DataLoader, also as data.distributed.DistributedSampler', function()
    local s = data.distributed.DistributedSampler(ds, { num_replicas = 2, rank = 1, shuffle = false })
    local loader = data.DataLoader(ds, { batch_size = 4, sampler = s })
    local rows = {}
    for x in loader() do rows[#rows + 1] = table.concat(x:tolist(), ',') end
    assert.same({ '1,3,5,7', '9,0' }, rows) -- indices 2,4,6,8 | 10,1 (padded with the first)
    assert.equal(2, loader:__len())
  end)
  it('checks its arguments as PyTorch does', function()
    H.errors_with(function() data.DistributedSampler(ds, { num_replicas = 2, rank = 2 }) end,
      'utils.data.DistributedSampler: Invalid rank 2, rank should be in the interval [0, 1]')
    H.errors_with(function() data.DistributedSampler(ds, { num_replicas = 2, rank = -1 }) end, 'Invalid rank -1')
    H.errors_with(function() data.DistributedSampler(ds, { num_replicas = 2, rank = 0, seeed = 1 }) end,
      "unexpected keyword argument 'seeed'")
    -- without a process group, num_replicas and rank must be given
    H.errors_with(function() data.DistributedSampler(ds) end, 'Default process group has not been initialized')
  end)
end)
