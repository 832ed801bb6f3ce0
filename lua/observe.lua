-- moontorch.observe: the one observation point of the ops a user can call (issue 24). Every op,
-- whether its work is a C front door or composed in Lua, is reached through one of a few tables:
-- the functions of `torch`, `torch.nn.functional`, `torch.linalg`, `torch.special`,
-- `torch.sparse`, and the Tensor methods. An observer (the profiler, the FX tracer) installs a
-- wrapper factory; every op function of those tables is then replaced by wrap(name, fn, kind)
-- until the observer is removed, when the original functions go back. With no observer nothing
-- is replaced: the tables hold the ops themselves, so observing costs nothing when it is off
-- (bench/run.lua's small-op rows are the check). Calls made from inside an op through locals
-- (an upvalue bound when a file loaded) are part of that op, as PyTorch's profiler counts an
-- op's inner work in its own time unless the inner op is dispatched again.
--
--   local h = observe.install(function(name, fn, kind) return function(...) ... fn(...) end end)
--   ... h:remove()
--
-- kind is 'function' (torch.f, F.f, ...), 'method' (t:f) or 'operator' (a + b: __add, ...). Observers nest: the newest wraps the
-- functions as the older ones left them, and they are removed in the reverse order.
local M = {}

local torch -- set on first use (moontorch loads this module lazily)

-- names that are no ops: classes, modes, settings, files, printing, randomness state
local not_ops = {
  class = true, typename = true, isinstance = true, is_tensor = true, is_storage = true, is_complex = true,
  is_floating_point = true, numel = true, config = true, device = true, finfo = true, iinfo = true, Size = true,
  get_default_dtype = true, set_default_dtype = true, set_num_threads = true, get_num_threads = true,
  manual_seed = true, seed = true, initial_seed = true, get_rng_state = true, set_rng_state = true,
  no_grad = true, enable_grad = true, set_grad_enabled = true, is_grad_enabled = true, inference_mode = true,
  is_inference_mode_enabled = true, set_printoptions = true, can_cast = true, promote_types = true,
  result_type = true, save = true, load = true, save_safetensors = true, load_safetensors = true,
  deepcopy = true, is_csr = true, broadcast_shapes = true,
  FloatTensor = true, DoubleTensor = true, HalfTensor = true, BFloat16Tensor = true, ByteTensor = true,
  CharTensor = true, ShortTensor = true, IntTensor = true, LongTensor = true, BoolTensor = true,
}
-- Tensor methods that read a tensor's head (no op in PyTorch's dispatcher either)
local not_methods = {
  size = true, dim = true, ndimension = true, numel = true, nelement = true, stride = true,
  storage_offset = true, is_contiguous = true, data_ptr = true, element_size = true, is_floating_point = true,
  is_complex = true, get_device = true, type = true, tolist = true, item = true, __tostring = true,
  requires_grad_ = true, retain_grad = true, register_hook = true, backward = true, is_leaf = true,
  is_set_to = true, is_same_size = true, untyped_storage = true,
}
M.not_ops, M.not_methods = not_ops, not_methods

-- the tables of ops: { name prefix, table, kind, names to leave out }
function M.namespaces()
  torch = torch or require 'moontorch'
  local T = require 'moontorch.tensor'
  local list = {
    { 'torch', torch, 'function', not_ops },
    { 'torch.linalg', torch.linalg, 'function', not_ops },
    { 'torch.special', torch.special, 'function', not_ops },
    { 'torch.sparse', torch.sparse, 'function', not_ops },
    { 'Tensor', T.methods, 'method', not_methods },
    -- + - * / % ^ and unary minus (the metamethods call these)
    { 'Tensor', require('moontorch.ops.elementwise').operators, 'operator', {} },
  }
  local nn = rawget(torch, 'nn') or package.loaded['moontorch.nn']
  if nn then list[#list + 1] = { 'torch.nn.functional', nn.functional, 'function', not_ops } end
  return list
end

-- the qualified name of an op function as the tables hold it (without observers), or nil. Of
-- several names of one function (torch.mul, torch.multiply) the first in sorted order is its name.
local names -- fn -> name, made from the tables while no observer is installed
local stack = {} -- installed observers, oldest first: { wrap = , saved = { {tbl, key, fn}, ... } }
local function build_names()
  names = {}
  for _, ns in ipairs(M.namespaces()) do
    if ns[3] == 'function' then
      local keys = {}
      for k, v in pairs(ns[2]) do if type(v) == 'function' and type(k) == 'string' then keys[#keys + 1] = k end end
      table.sort(keys)
      for _, k in ipairs(keys) do
        local v = ns[2][k]
        if not names[v] then names[v] = ns[1] .. '.' .. k end
      end
    end
  end
end
function M.name_of(fn)
  if names == nil or (names[fn] == nil and #stack == 0) then build_names() end
  return names[fn]
end

local Handle = {}
Handle.__index = Handle
function Handle:remove()
  if self.removed then return end
  if stack[#stack] ~= self then
    error('moontorch.observe: observers must be removed in the reverse order of their installation', 2)
  end
  for i = #self.saved, 1, -1 do
    local s = self.saved[i]
    rawset(s[1], s[2], s[3])
  end
  stack[#stack] = nil
  self.removed = true
  if #stack == 0 then require('moontorch.ops.elementwise').observation.set(false) end
end

-- what an `only` set names, resolved against the tables: { {tbl, key, qualified name, kind, fn}, ... } for
-- the names that are op functions there; kept per set and made again when a table's function changed or
-- a namespace appeared (a module loaded since)
local targets_of = setmetatable({}, { __mode = 'k' })
local function targets(only, nss)
  local t = targets_of[only]
  if t and t.nns == #nss then
    local fresh = true
    for i = 1, #t do
      local e = t[i]
      if rawget(e[1], e[2]) ~= e[5] then fresh = false; break end
    end
    if fresh then return t end
  end
  t = { nns = #nss }
  local by = {}
  for q in pairs(only) do
    local prefix, key = q:match('^(.*)%.([^.]+)$')
    if prefix then
      by[prefix] = by[prefix] or {}
      by[prefix][#by[prefix] + 1] = key
    end
  end
  for _, ns in ipairs(nss) do
    local prefix, tbl, kind, skip = ns[1], ns[2], ns[3], ns[4]
    for _, k in ipairs(by[prefix] or {}) do
      local f = rawget(tbl, k)
      if type(f) == 'function' and not skip[k] then t[#t + 1] = { tbl, k, prefix .. '.' .. k, kind, f } end
    end
  end
  targets_of[only] = t
  return t
end

-- install(wrap[, only]) -> handle: every op function f of the tables becomes wrap(name, f, kind) (wrap may
-- return f itself to leave one alone). `only` (lowprec, issue 25: a set {qualified name = true}) visits
-- those names alone: autocast, which installs its few ops at every scope's entry, takes ~20 us, not ~450.
function M.install(wrap, only)
  if only ~= nil and type(only) ~= 'table' then
    error('moontorch.observe.install: only must be a set of qualified names {[\'torch.mm\'] = true, ...}', 2)
  end
  if #stack == 0 and not only then build_names() end
  local h = setmetatable({ saved = {} }, Handle)
  local operators = not only
  local ok, err = pcall(function()
    local nss = M.namespaces()
    if only then
      local t = targets(only, nss)
      for i = 1, #t do
        local e = t[i]
        local tbl, k = e[1], e[2]
        local f = rawget(tbl, k)
        local w = wrap(e[3], f, e[4], k)
        if w ~= f then
          h.saved[#h.saved + 1] = { tbl, k, f }
          rawset(tbl, k, w)
          if e[4] == 'operator' then operators = true end
        end
      end
      return
    end
    for _, ns in ipairs(nss) do
      local prefix, tbl, kind, skip = ns[1], ns[2], ns[3], ns[4]
      local keys = {}
      for k, v in pairs(tbl) do
        if type(k) == 'string' and type(v) == 'function' and not skip[k] and (kind == 'operator' or k:sub(1, 1) ~= '_') then
          keys[#keys + 1] = k
        end
      end
      for _, k in ipairs(keys) do
        local f = rawget(tbl, k)
        local w = wrap(prefix .. '.' .. k, f, kind, k)
        if w ~= f then
          h.saved[#h.saved + 1] = { tbl, k, f }
          rawset(tbl, k, w)
        end
      end
    end
  end)
  stack[#stack + 1] = h
  -- the tensor operators' metamethods (fixed by ffi.metatype) then go through their table (an `only`
  -- set without operators leaves them alone)
  if operators then require('moontorch.ops.elementwise').observation.set(true) end
  if not ok then
    h:remove()
    error(err, 0)
  end
  return h
end

-- how many observers are installed now
function M.active() return #stack end

-- a monotonic clock in microseconds, for observers (clock_gettime under a private FFI name, so
-- that moontorch declares no libc name of its own in ffi.C)
local ffi = require 'ffi'
pcall(ffi.cdef, [[
typedef struct { long tv_sec; long tv_nsec; } mt_observe_timespec;
int mt_observe_clock_gettime(int clk, mt_observe_timespec *ts) __asm__("clock_gettime");
]])
local tsbuf = ffi.new('mt_observe_timespec')
local clock_gettime = ffi.C.mt_observe_clock_gettime
function M.now_us()
  clock_gettime(1, tsbuf) -- CLOCK_MONOTONIC
  return tonumber(tsbuf.tv_sec) * 1e6 + tonumber(tsbuf.tv_nsec) * 1e-3
end

return M
