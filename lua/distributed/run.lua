-- moontorch.distributed.run: the launcher (PyTorch's torchrun / python -m torch.distributed.run).
--   moontorch -m distributed.run --nproc 4 train.lua [args...]
-- starts the script in N processes on this machine through Open MPI's mpirun (which then owns them:
-- Ctrl-C, a rank that fails or dies ends them all, its exit status is the job's), each with RANK,
-- WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and torchrun's other variables
-- set as torchrun sets them. The script calls
-- dist.init_process_group('mpi'). For several machines use mpirun or srun directly (see README).
-- As root, mpirun needs --allow-run-as-root, which this adds; with more processes than CPUs it adds
-- --oversubscribe; it binds no process to a core (--bind-to none). Unless MT_NUM_THREADS or
-- OMP_NUM_THREADS is set, each process gets CPUs / N threads (at least 1).
-- From a script: require('moontorch.distributed.run').launch{nproc=, script=, args=} (never returns).
local ffi = require 'ffi'

local M = {}

local USAGE = [[
usage: moontorch -m distributed.run [options] script.lua [args...]
  --nproc N          processes to start (also --nproc-per-node, --nproc_per_node) (1)
  --nnodes 1         machines (1: for more, run mpirun or srun yourself)
  --mpirun PATH      the mpirun to use (mpirun on PATH; $MOONTORCH_MPIRUN)
  --mpi-arg ARG      pass ARG to mpirun (repeatable), e.g. --mpi-arg --bind-to --mpi-arg none
  --master-addr A    MASTER_ADDR for the ranks (also --master_addr) (127.0.0.1)
  --master-port P    MASTER_PORT for the ranks (also --master_port) (29500)
  --standalone       accepted, as torchrun's (this machine alone is what the launcher does)
  --dry-run          print the command instead of running it
  -h, --help         this text
Each process runs `moontorch script.lua args...` with torchrun's variables set (RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME,
MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID); the script calls
dist.init_process_group('mpi'), which takes its rank and world size from MPI.]]

local libc = require('moontorch.libc').declare {
  execvp = 'int %s(const char *file, char *const argv[])',
  geteuid = 'unsigned int %s(void)',
  sysconf = 'long %s(int name)',
}

local function sh_quote(s) return "'" .. tostring(s):gsub("'", [['\'']]) .. "'" end

local function die(msg, code)
  io.stderr:write('distributed.run: ', msg, '\n')
  os.exit(code or 2)
end

local function which(cmd)
  if cmd:find('/') then
    local f = io.open(cmd, 'rb')
    if f then f:close() return cmd end
    return nil
  end
  for dir in (os.getenv('PATH') or '/usr/bin:/bin'):gmatch('[^:]+') do
    local p = dir .. '/' .. cmd
    local f = io.open(p, 'rb')
    if f then f:close() return p end
  end
  return nil
end

-- the CPUs this machine has online
local function cpus()
  local n = tonumber(libc.sysconf(84)) -- _SC_NPROCESSORS_ONLN
  return (n and n > 0) and n or 1
end

-- how to run moontorch again: {interpreter, bin/moontorch} from the arg table bin/moontorch set up
-- (arg[-2] the luajit, arg[-1] bin/moontorch), else the `moontorch` command on PATH
local function moontorch_command(a)
  a = a or arg or {}
  local prog = a[-1]
  if type(prog) == 'string' and prog:match('moontorch$') then
    local interp = a[-2]
    if type(interp) == 'string' and interp ~= '' then return { interp, prog } end
    return { prog }
  end
  local m = which('moontorch')
  if m then return { m } end
  die('cannot find the moontorch command (run through bin/moontorch, or put moontorch on PATH)')
end

-- The command line for mpirun: opts {nproc=, script=, args=, mpirun=, mpi_args=, command=, master_addr=,
-- master_port=}
function M.command(opts)
  local n = opts.nproc or 1
  local mpirun = opts.mpirun or os.getenv('MOONTORCH_MPIRUN') or 'mpirun'
  local path = which(mpirun)
  if not path then
    die(("%s was not found: install Debian's openmpi-bin (and libopenmpi-dev to build the MPI backend)"):format(mpirun))
  end
  local argv = { path, '-np', tostring(n) }
  -- LD_PRELOAD (a profiler, AddressSanitizer's runtime) is for the ranks, not for mpirun itself
  local preload = os.getenv('LD_PRELOAD')
  if preload and preload ~= '' then argv = { '/usr/bin/env', '-u', 'LD_PRELOAD', path, '-np', tostring(n), '-x', 'LD_PRELOAD=' .. preload } end
  if libc.geteuid() == 0 then argv[#argv + 1] = '--allow-run-as-root' end
  local ncpu = cpus()
  if n > ncpu then argv[#argv + 1] = '--oversubscribe' end
  local per = math.max(1, math.floor(ncpu / n))
  -- no binding (mpirun binds each of 1 or 2 processes to a core of its own): the threads of a rank
  -- need room, and on a machine that other work shares a rank pinned to a busy core waits for it
  -- while the other core idles (the ranks go in lock step)
  argv[#argv + 1] = '--bind-to'
  argv[#argv + 1] = 'none'
  for _, x in ipairs(opts.mpi_args or {}) do argv[#argv + 1] = x end
  -- each rank: torchrun's variables from Open MPI's, then moontorch
  local threads = ''
  if not os.getenv('MT_NUM_THREADS') and not os.getenv('OMP_NUM_THREADS') then threads = 'MT_NUM_THREADS=' .. per .. '; export MT_NUM_THREADS; ' end
  argv[#argv + 1] = '/bin/sh'
  argv[#argv + 1] = '-c'
  argv[#argv + 1] = 'RANK=$OMPI_COMM_WORLD_RANK; WORLD_SIZE=$OMPI_COMM_WORLD_SIZE; ' ..
    'LOCAL_RANK=$OMPI_COMM_WORLD_LOCAL_RANK; LOCAL_WORLD_SIZE=$OMPI_COMM_WORLD_LOCAL_SIZE; ' ..
    'GROUP_RANK=0; GROUP_WORLD_SIZE=1; ROLE_RANK=$RANK; ROLE_WORLD_SIZE=$WORLD_SIZE; ROLE_NAME=default; ' ..
    ('MASTER_ADDR=%s; MASTER_PORT=%s; '):format(sh_quote(opts.master_addr or '127.0.0.1'), sh_quote(opts.master_port or '29500')) ..
    'TORCHELASTIC_RESTART_COUNT=0; TORCHELASTIC_MAX_RESTARTS=0; TORCHELASTIC_RUN_ID=none; ' ..
    'export RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK GROUP_WORLD_SIZE ROLE_RANK ROLE_WORLD_SIZE ' ..
    'ROLE_NAME MASTER_ADDR MASTER_PORT TORCHELASTIC_RESTART_COUNT TORCHELASTIC_MAX_RESTARTS TORCHELASTIC_RUN_ID; ' ..
    threads .. 'exec "$@"'
  argv[#argv + 1] = 'moontorch'
  for _, x in ipairs(opts.command or moontorch_command()) do argv[#argv + 1] = x end
  argv[#argv + 1] = opts.script
  for _, x in ipairs(opts.args or {}) do argv[#argv + 1] = x end
  return argv
end

-- launch{nproc=, script=, args=, ...}: replaces this process with mpirun running the script
function M.launch(opts)
  local argv = M.command(opts)
  if opts.dry_run then
    local words = {}
    for i, w in ipairs(argv) do words[i] = w:find('[^%w%-%./_=:]') and sh_quote(w) or w end
    print(table.concat(words, ' '))
    os.exit(0)
  end
  io.stdout:flush()
  io.stderr:flush()
  local c = ffi.new('char *[?]', #argv + 1)
  local keep = {}
  for i, w in ipairs(argv) do
    keep[i] = ffi.new('char[?]', #w + 1, w)
    c[i - 1] = keep[i]
  end
  c[#argv] = nil
  libc.execvp(argv[1], c)
  die(('cannot run %s (errno %d)'):format(argv[1], ffi.errno()), 1)
end

-- main(argv): the command line
function M.main(argv)
  local o, i = { nproc = 1, mpi_args = {} }, 1
  local function value(name)
    local v = argv[i + 1]
    if v == nil then die(name .. ' needs a value\n' .. USAGE) end
    i = i + 1
    return v
  end
  while argv[i] do
    local a = argv[i]
    local name, inline = a:match('^(%-%-[%w_-]+)=(.*)$')
    if name then a = name; table.insert(argv, i + 1, inline) end
    if a == '-h' or a == '--help' then
      print(USAGE)
      os.exit(0)
    elseif a == '--nproc' or a == '--nproc-per-node' or a == '--nproc_per_node' then
      local v = value(a)
      o.nproc = tonumber(v)
      if not o.nproc or o.nproc < 1 or o.nproc ~= math.floor(o.nproc) then
        die(('%s needs a positive whole number, got %q'):format(a, v))
      end
    elseif a == '--nnodes' then
      local v = value(a)
      if v ~= '1' and v ~= '1:1' then
        die('more than one machine: start the job with mpirun (a hostfile) or srun, each rank running ' ..
          '`moontorch script.lua`')
      end
    elseif a == '--mpirun' then o.mpirun = value(a)
    elseif a == '--master-addr' or a == '--master_addr' then o.master_addr = value(a)
    elseif a == '--master-port' or a == '--master_port' then
      local v = value(a)
      local n = tonumber(v)
      if not n or n < 0 or n > 65535 or n ~= math.floor(n) then die(('%s needs a port number, got %q'):format(a, v)) end
      o.master_port = v
    elseif a == '--standalone' then o.standalone = true
    elseif a == '--mpi-arg' then o.mpi_args[#o.mpi_args + 1] = value(a)
    elseif a == '--dry-run' then o.dry_run = true
    elseif a == '--' then
      i = i + 1
      break
    elseif a:match('^%-') then
      die(('unknown option %s\n'):format(a) .. USAGE)
    else
      break
    end
    i = i + 1
  end
  o.script = argv[i]
  if not o.script then die('which script? \n' .. USAGE) end
  o.args = {}
  for j = i + 1, #argv do o.args[#o.args + 1] = argv[j] end
  M.launch(o)
end

-- run as `moontorch -m distributed.run ...` (a chunk with arguments), not when required
if ... ~= 'moontorch.distributed.run' and arg and arg[0] and arg[0]:match('distributed[/.]run%.lua$') then
  M.main({ ... })
end

return M
