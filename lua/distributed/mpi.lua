-- moontorch.distributed.mpi: the 'mpi' backend of moontorch.distributed, the Lua face of
-- libmoontorch_mpi.so (core/dist/: MPI behind one communication thread; see core/dist/dist.h).
-- Loaded when a script asks for backend 'mpi'; a build without MPI has no such library, and
-- available() says so. Every function takes the C group handle and contiguous CPU tensors and
-- hands back a work handle (cdata) that the caller waits on; the caller keeps the tensors alive.
-- A backend for another device (NCCL for CUDA tensors) answers the same functions.
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'

local M = { name = 'mpi', device_type = 0 }

local dir = core.libpath:gsub('[^/]*$', '')
-- ($MOONTORCH_MPI_LIB: another copy; the specs point it nowhere to see a build without MPI)
local libpath = os.getenv('MOONTORCH_MPI_LIB') or dir .. 'libmoontorch_mpi.so'
local cdef_path = dir .. 'moontorch_dist_cdef.h'
local D, why_not
local wout = nil -- mt_dist_work *[1], made once the declarations are in
local gout = nil

local function exists(p)
  local f = io.open(p, 'rb')
  if f then f:close() return true end
  return false
end

-- load(): the library, or nil and why not
function M.load()
  if D then return D end
  if why_not then return nil, why_not end
  if not exists(libpath) then
    why_not = 'this moontorch was built without MPI (no ' .. libpath .. '): install Debian\'s libopenmpi-dev ' ..
      'and openmpi-bin, then rebuild (./run build)'
    return nil, why_not
  end
  local f = io.open(cdef_path, 'rb')
  if not f then
    why_not = 'the MPI backend\'s declarations ' .. cdef_path .. ' are missing (rebuild: ./run build)'
    return nil, why_not
  end
  local decls = f:read('*a')
  f:close()
  ffi.cdef(decls)
  -- global: OpenMPI opens its components (mca_*.so) with dlopen, and they look for MPI's own symbols
  local ok, lib = pcall(ffi.load, libpath, true)
  if not ok then
    why_not = 'cannot load ' .. libpath .. ': ' .. tostring(lib)
    return nil, why_not
  end
  D = lib
  M.D = D
  wout = ffi.new('mt_dist_work *[1]')
  gout = ffi.new('mt_dist_group *[1]')
  return D
end

function M.available()
  local d, why = M.load()
  return d ~= nil, why
end

local function raise()
  error('moontorch.' .. ffi.string(D.mt_dist_last_error()), core.user_level())
end
M.raise = raise

-- init(timeout) -> the world's handle (freed with the GC)
function M.init(timeout)
  if D.mt_dist_init(timeout, gout) ~= 0 then raise() end
  return ffi.gc(gout[0], D.mt_dist_group_release)
end

function M.new_group(parent, ranks, timeout)
  local n = #ranks
  local arr = ffi.new('int[?]', n)
  for i = 1, n do arr[i - 1] = ranks[i] end
  if D.mt_dist_new_group(parent, arr, n, timeout, gout) ~= 0 then raise() end
  return ffi.gc(gout[0], D.mt_dist_group_release)
end

function M.rank(h) return D.mt_dist_group_rank(h) end
function M.size(h) return D.mt_dist_group_size(h) end
function M.version() return ffi.string(D.mt_dist_mpi_version()) end
function M.broken()
  local s = ffi.string(D.mt_dist_broken())
  return s ~= '' and s or nil
end

local function work(status)
  if status ~= 0 then raise() end
  return wout[0]
end

-- operations: t, out, ... are contiguous CPU tensors (numel in elements, dtype by id)
function M.all_reduce(h, t, op)
  return work(D.mt_dist_all_reduce(h, t._data, t._numel, t._dtype, op, wout))
end
-- ts: an array of contiguous tensors of one dtype, reduced as one vector
local cbufs, ccounts, ccap = nil, nil, 0
function M.all_reduce_coalesced(h, ts, op)
  local n = #ts
  if n > ccap then
    ccap = math.max(n, 2 * ccap)
    cbufs, ccounts = ffi.new('void *[?]', ccap), ffi.new('int64_t[?]', ccap)
  end
  for i = 1, n do
    cbufs[i - 1] = ts[i]._data
    ccounts[i - 1] = ts[i]._numel
  end
  return work(D.mt_dist_all_reduce_coalesced(h, cbufs, ccounts, n, n > 0 and ts[1]._dtype or 0, op, wout))
end
-- the same, waited for (by the caller itself where it can): nil or the error's message, then when
-- it started and finished
local ctimes = nil
function M.all_reduce_coalesced_now(h, ts, op, timeout)
  local n = #ts
  if n > ccap then
    ccap = math.max(n, 2 * ccap)
    cbufs, ccounts = ffi.new('void *[?]', ccap), ffi.new('int64_t[?]', ccap)
  end
  for i = 1, n do
    cbufs[i - 1] = ts[i]._data
    ccounts[i - 1] = ts[i]._numel
  end
  ctimes = ctimes or ffi.new('double[2]')
  local st = D.mt_dist_all_reduce_coalesced_now(h, cbufs, ccounts, n, n > 0 and ts[1]._dtype or 0, op, timeout, ctimes)
  return st ~= 0 and ffi.string(D.mt_dist_last_error()) or nil, ctimes[0], ctimes[1]
end
-- shared gradient memory (core/dist/dist.h's arenas): arena_new(h, bytes, timeout) -> a handle (freed
-- with the GC), or nil where the group cannot have one
local aout = nil
function M.arena_new(h, bytes, timeout)
  aout = aout or ffi.new('mt_dist_arena *[1]')
  if D.mt_dist_arena_new(h, bytes, timeout, aout) ~= 0 then raise() end
  if aout[0] == nil then return nil end
  return ffi.gc(aout[0], D.mt_dist_arena_release)
end
-- this rank's arena: its address (a number) and its bytes
function M.arena_range(a)
  return tonumber(ffi.cast('intptr_t', D.mt_dist_arena_data(a))), tonumber(D.mt_dist_arena_bytes(a))
end
-- a tensor of dtype over this rank's arena bytes from `offset`: numel elements, or sizes and strides
-- (Lua arrays; its storage holds exactly its elements); it keeps the arena alive
local dims = ffi.new('int64_t[2][16]')
function M.arena_tensor(a, offset, numel, dtype, sizes, strides)
  local nd = 1
  if sizes then
    nd = #sizes
    for d = 1, nd do dims[0][d - 1], dims[1][d - 1] = sizes[d], strides[d] end
  else
    dims[0][0], dims[1][0] = numel, 1
  end
  local p = ffi.cast('char *', D.mt_dist_arena_data(a)) + offset
  if core.C.mt_tensor_from_blob(p, dims[0], dims[1], nd, dtype, D.mt_dist_arena_unref, D.mt_dist_arena_retain(a),
    T.outp) ~= 0 then
    core.raise_last()
  end
  return T.take()
end
-- all_reduce of elements [offset, offset + count) of every rank's arena (as all_reduce)
function M.arena_all_reduce(a, offset, count, dtype, op)
  return work(D.mt_dist_arena_all_reduce(a, offset, count, dtype, op, wout))
end
-- the same, waited for (by the caller itself where it can): nil or the error's message, then when
-- it started and finished
function M.arena_all_reduce_now(a, offset, count, dtype, op, timeout)
  ctimes = ctimes or ffi.new('double[2]')
  local st = D.mt_dist_arena_all_reduce_now(a, offset, count, dtype, op, timeout, ctimes)
  return st ~= 0 and ffi.string(D.mt_dist_last_error()) or nil, ctimes[0], ctimes[1]
end
function M.broadcast(h, t, root)
  return work(D.mt_dist_broadcast(h, t._data, t._numel, t._dtype, root, wout))
end
function M.reduce(h, t, op, root)
  return work(D.mt_dist_reduce(h, t._data, t._numel, t._dtype, op, root, wout))
end
-- out holds size * count elements
function M.all_gather(h, out, t)
  return work(D.mt_dist_all_gather(h, t._data, out._data, t._numel, t._dtype, wout))
end
-- out: root only (nil elsewhere)
function M.gather(h, out, t, root)
  return work(D.mt_dist_gather(h, t._data, out and out._data or nil, t._numel, t._dtype, root, wout))
end
-- src: root only (nil elsewhere); out receives one block
function M.scatter(h, out, src, root)
  return work(D.mt_dist_scatter(h, src and src._data or nil, out._data, out._numel, out._dtype, root, wout))
end
-- input holds size * out:numel() elements
function M.reduce_scatter(h, out, input, op)
  return work(D.mt_dist_reduce_scatter(h, input._data, out._data, out._numel, out._dtype, op, wout))
end
-- counts: Lua arrays of elements per rank, in rank order
function M.all_to_all(h, out, out_counts, input, in_counts)
  local n = #in_counts
  local sc, rc = ffi.new('int64_t[?]', n), ffi.new('int64_t[?]', n)
  for i = 1, n do
    sc[i - 1] = in_counts[i]
    rc[i - 1] = out_counts[i]
  end
  return work(D.mt_dist_all_to_all(h, input._data, sc, out._data, rc, input._dtype, wout))
end
function M.barrier(h)
  return work(D.mt_dist_barrier(h, wout))
end
function M.send(h, t, dst, tag)
  return work(D.mt_dist_send(h, t._data, t._numel, t._dtype, dst, tag, wout))
end
function M.recv(h, t, src, tag)
  return work(D.mt_dist_recv(h, t._data, t._numel, t._dtype, src, tag, wout))
end

-- works
-- wait(w, timeout) -> nil when done, else the failure's message
function M.wait(w, timeout)
  if D.mt_dist_work_wait(w, timeout) ~= 0 then return ffi.string(D.mt_dist_last_error()) end
  return nil
end
function M.state(w) return D.mt_dist_work_state(w) end -- 0 pending, 1 done, 2 failed
function M.error(w) return ffi.string(D.mt_dist_work_error(w)) end
function M.source(w) return D.mt_dist_work_source(w) end
function M.times(w) return D.mt_dist_work_started(w), D.mt_dist_work_finished(w) end
function M.release(w) D.mt_dist_work_release(w) end
function M.now() return D.mt_dist_now() end

return M
