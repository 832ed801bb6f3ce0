-- Randomness: generators (torch.manual_seed, torch.Generator, get/set_rng_state) and the random
-- fills and factories (rand, randn, randint, randperm, bernoulli, multinomial, normal, the
-- in-place uniform_/normal_/random_/bernoulli_/exponential_/cauchy_/log_normal_/geometric_).
-- The streams are PyTorch's CPU generator's (core/tensor/random.c says how).
local ffi = require 'ffi'
local core = require 'moontorch.ffi'
local T = require 'moontorch.tensor'
local dtype = require 'moontorch.dtype'

local C = core.C
local raise_last, fail = core.raise_last, core.fail
local methods = T.methods
local is_tensor, take, outp, szbuf = T.is_tensor, T.take, T.outp, T.szbuf
local parse_sizes, new_empty, resolve_dtype = T.parse_sizes, T.new_empty, T.resolve_dtype
local by_id = dtype.by_id
local type, floor, select, tonumber = type, math.floor, select, tonumber

local M = {}
local torch

local INT64 = 4
local u8p = ffi.typeof('uint8_t *')
local i64 = ffi.typeof('int64_t')
local u64 = ffi.typeof('uint64_t')

local function apply(t, opts)
  if opts then return T.apply_opts(t, opts) end
  return t
end

------------------------------------------------------------------------------ generators
local Generator = {}
Generator.__index = Generator
Generator.__typename = 'torch.Generator'
Generator.__tostring = function() return '<torch.Generator object>' end

-- a generator object for a C generator: its device from C (the CPU's default: the CPU)
local devbuf = ffi.new('mt_device[1]')
local function wrap_generator(p)
  local dev = dtype.cpu_device
  if C.mt_generator_device(p, devbuf) == 0 and devbuf[0].type ~= 0 then
    dev = dtype.device_of(devbuf[0].type, devbuf[0].index)
  end
  return setmetatable({ _g = p, device = dev }, Generator)
end

local function is_generator(x) return getmetatable(x) == Generator end

-- a seed as PyTorch takes it: an integer, negative values wrapping to uint64
local function to_seed(s, op)
  if type(s) == 'cdata' then
    if ffi.istype(i64, s) or ffi.istype(u64, s) then return ffi.cast(u64, s) end
    fail(op, 'seed must be an integer')
  end
  if type(s) ~= 'number' or s ~= s or s == math.huge or s == -math.huge then
    fail(op, 'seed must be an integer, got ' .. tostring(s))
  end
  s = s >= 0 and floor(s) or -floor(-s) -- Python's int(): toward zero
  if s < 0 then
    if s < -2 ^ 63 then fail(op, 'Overflow when unpacking long') end
    return ffi.cast(u64, ffi.cast(i64, s))
  end
  if s >= 2 ^ 64 then fail(op, 'Overflow when unpacking long') end
  return ffi.cast(u64, s)
end

-- a uint64 seed as a Lua number (exact below 2^53)
local function seed_number(u) return tonumber(u) end

function Generator:manual_seed(s)
  C.mt_generator_manual_seed(self._g, to_seed(s, 'manual_seed'))
  return self
end
function Generator:seed() return seed_number(C.mt_generator_seed(self._g)) end
function Generator:initial_seed() return seed_number(C.mt_generator_initial_seed(self._g)) end
function Generator:get_state()
  local n = tonumber(C.mt_generator_state_bytes(self._g))
  szbuf[0] = n
  if C.mt_tensor_empty(szbuf, 1, 0, nil, outp) ~= 0 then raise_last() end
  local t = take()
  if C.mt_generator_get_state(self._g, ffi.cast(u8p, t._data), n) ~= 0 then raise_last() end
  return t
end
function Generator:set_state(t)
  if not is_tensor(t) or t._dtype ~= 0 then fail('set_state', 'RNG state must be a torch.ByteTensor') end
  if t._device_type ~= 0 then fail('set_state', 'RNG state must be a CPU tensor') end
  if not t:is_contiguous() then fail('set_state', 'RNG state must be contiguous') end
  if C.mt_generator_set_state(self._g, ffi.cast(u8p, t._data), tonumber(t._numel)) ~= 0 then raise_last() end
  return self
end

local gen_new = ffi.new('mt_generator *[1]')
local default_seed = ffi.cast(u64, 67280421310721)
-- torch.Generator([device]): a generator of that device (C refuses one that draws nothing, as meta, or
-- is not there)
local function device_c(device, op)
  local d = dtype.device(type(device) == 'table' and not dtype.is_device(device) and device.device or device)
  return d._c or dtype.cpu_c
end
M.Generator = setmetatable({}, {
  __call = function(_, device)
    local dc = nil
    if device ~= nil then
      local ok, r = pcall(device_c, device)
      if not ok then fail('Generator', (tostring(r):gsub('^moontorch%.device: ', ''))) end
      dc = r
    end
    if C.mt_generator_new_on(dc, default_seed, gen_new) ~= 0 then raise_last() end
    return wrap_generator(ffi.gc(gen_new[0], C.mt_generator_free))
  end,
  __index = Generator,
  __tostring = function() return 'torch.Generator' end,
})
M.default_generator = wrap_generator(C.mt_default_generator())

-- the default generator of a device (nil: the CPU's), for torch.cuda.manual_seed, get_rng_state and
-- set_rng_state (lua/cuda.lua): default_generators[device] is made on first use by C
local defaults = {}
function M.device_generator(device, op)
  if device == nil then return M.default_generator end
  local ok, dc = pcall(device_c, device)
  if not ok then fail(op or 'default_generator', (tostring(dc):gsub('^moontorch%.device: ', ''))) end
  if C.mt_default_generator_on(dc, gen_new) ~= 0 then raise_last() end
  local key = tostring(gen_new[0])
  local g = defaults[key]
  if not g then
    g = wrap_generator(gen_new[0]) -- no finalizer: C keeps a device's default generator
    defaults[key] = g
  end
  return g
end

-- the C generator named by an options table (nil: the default one)
local function gen_of(opts, op)
  T.options(opts, op)
  local g = opts and opts.generator
  if g == nil then return nil end
  if not is_generator(g) then fail(op, 'generator must be a torch.Generator, got ' .. core.typeof(g)) end
  return g._g
end

-- torch.manual_seed(s) seeds the CPU's default generator and every device's (PyTorch: also CUDA's)
function M.manual_seed(s)
  C.mt_manual_seed_all(to_seed(s, 'manual_seed'))
  return M.default_generator
end
function M.seed() return M.default_generator:seed() end
function M.initial_seed() return M.default_generator:initial_seed() end
function M.get_rng_state() return M.default_generator:get_state() end
function M.set_rng_state(t)
  if not is_tensor(t) or t._dtype ~= 0 then fail('set_rng_state', 'RNG state must be a torch.ByteTensor') end
  M.default_generator:set_state(t)
end
M.random = { manual_seed = M.manual_seed, seed = M.seed, initial_seed = M.initial_seed,
  get_rng_state = M.get_rng_state, set_rng_state = M.set_rng_state }

------------------------------------------------------------------------------ in-place fills
local function check_tensor(t, op)
  if not is_tensor(t) then fail(op, 'expected a tensor, got ' .. core.typeof(t)) end
end
local function check_number(x, op, what)
  if type(x) ~= 'number' then fail(op, what .. ' must be a number, got ' .. (is_tensor(x) and 'a tensor' or type(x))) end
end
local check_integer = T.int_arg -- (x, op, what) -> x as a Lua number
-- a bound of random_/randint: checked as any integer argument, and kept exact (as int64) when
-- given as an int64 cdata, where a Lua number would round beyond 2^53
local function bound_arg(x, op, what)
  local v = check_integer(x, op, what)
  if type(x) == 'cdata' then return ffi.cast(i64, x) end
  return v
end

-- a trailing options table among optional number arguments
local function split_opts(a, b, c)
  if type(a) == 'table' and not is_tensor(a) then return nil, nil, a end
  if type(b) == 'table' and not is_tensor(b) then return a, nil, b end
  return a, b, c
end

function methods.uniform_(t, a, b, opts)
  a, b, opts = split_opts(a, b, opts)
  a = a == nil and 0 or a
  b = b == nil and 1 or b
  check_number(a, 'uniform_', 'from'); check_number(b, 'uniform_', 'to')
  if C.mt_uniform_(t, a, b, gen_of(opts, 'uniform_')) ~= 0 then raise_last() end
  return t
end

function methods.normal_(t, mean, std, opts)
  mean, std, opts = split_opts(mean, std, opts)
  mean = mean == nil and 0 or mean
  std = std == nil and 1 or std
  check_number(mean, 'normal_', 'mean'); check_number(std, 'normal_', 'std')
  if C.mt_normal_(t, mean, std, gen_of(opts, 'normal_')) ~= 0 then raise_last() end
  return t
end

-- the end of random_()'s default range for each dtype (PyTorch: 2^digits + 1 for floating types,
-- max + 1 for integers); int64's 2^63 is passed as INT64_MIN (see mt_random_)
local full_range_to = {
  [0] = 256, [1] = 128, [2] = 32768, [3] = 2147483648, [4] = ffi.new(i64, -2 ^ 63),
  [5] = 2049, [6] = 16777217, [7] = ffi.new(i64, 2 ^ 53) + 1, [11] = 2, [15] = 257,
}

-- random_() / random_(to) / random_(from, to): integers in [from, to), values as asked
function methods.random_(t, a, b, opts)
  a, b, opts = split_opts(a, b, opts)
  local from, to
  if a == nil then
    from, to = 0, full_range_to[t._dtype]
  elseif b == nil then
    from, to = 0, bound_arg(a, 'random_', 'to')
  else
    from, to = bound_arg(a, 'random_', 'from'), bound_arg(b, 'random_', 'to')
  end
  if C.mt_random_(t, from, to, gen_of(opts, 'random_')) ~= 0 then raise_last() end
  return t
end

function methods.bernoulli_(t, p, opts)
  if type(p) == 'table' and not is_tensor(p) then p, opts = nil, p end
  if p == nil then p = 0.5 end
  local g = gen_of(opts, 'bernoulli_')
  if is_tensor(p) then
    if C.mt_bernoulli_tensor_(t, p, g) ~= 0 then raise_last() end
  else
    check_number(p, 'bernoulli_', 'p')
    if C.mt_bernoulli_(t, p, g) ~= 0 then raise_last() end
  end
  return t
end

function methods.exponential_(t, lambd, opts)
  if type(lambd) == 'table' then lambd, opts = nil, lambd end
  lambd = lambd == nil and 1 or lambd
  check_number(lambd, 'exponential_', 'lambd')
  if C.mt_exponential_(t, lambd, gen_of(opts, 'exponential_')) ~= 0 then raise_last() end
  return t
end

-- cauchy_, log_normal_ and geometric_ draw one double per element (PyTorch's scalar kernels):
-- the draws are made into a float64 scratch tensor of t's shape, then transformed.
local function check_floating(t, op, kernel)
  check_tensor(t, op)
  if not by_id[t._dtype].is_floating_point then
    fail(op, ('"%s" not implemented for \'%s\''):format(kernel, methods.type(t):gsub('^torch%.', ''):gsub('Tensor$', '')))
  end
end

local function scratch_uniform(t, g)
  szbuf[0] = tonumber(t._numel)
  if C.mt_tensor_empty(szbuf, 1, 7, nil, outp) ~= 0 then raise_last() end
  local u = take()
  if C.mt_uniform_(u, 0, 1, g) ~= 0 then raise_last() end
  return u:view(t:size())
end

function methods.cauchy_(t, median, sigma, opts)
  median, sigma, opts = split_opts(median, sigma, opts)
  median, sigma = median or 0, sigma or 1
  check_number(median, 'cauchy_', 'median'); check_number(sigma, 'cauchy_', 'sigma')
  check_floating(t, 'cauchy_', 'cauchy_cpu')
  if not (sigma > 0) then fail('cauchy_', 'cauchy_ expects sigma > 0.0, but found sigma=' .. sigma) end
  local u = scratch_uniform(t, gen_of(opts, 'cauchy_'))
  -- median + sigma * tan(pi * (u - 0.5))
  return t:copy_(((u - 0.5) * math.pi):tan() * sigma + median)
end

function methods.log_normal_(t, mean, std, opts)
  mean, std, opts = split_opts(mean, std, opts)
  mean, std = mean or 1, std or 2
  check_number(mean, 'log_normal_', 'mean'); check_number(std, 'log_normal_', 'std')
  check_floating(t, 'log_normal_', 'log_normal_cpu')
  if not (std > 0) then fail('log_normal_', 'log_normal_ expects std > 0.0, but found std=' .. std) end
  -- one double normal per element (the scalar path, with its cached second normal): a
  -- non-contiguous float64 scratch takes that path
  local n = tonumber(t._numel)
  szbuf[0], szbuf[1] = n, 2
  if C.mt_tensor_empty(szbuf, 2, 7, nil, outp) ~= 0 then raise_last() end
  local z = take():select(2, 1)
  if C.mt_normal_(z, mean, std, gen_of(opts, 'log_normal_')) ~= 0 then raise_last() end
  return t:copy_(z:exp():view(t:size()))
end

function methods.geometric_(t, p, opts)
  check_tensor(t, 'geometric_')
  check_number(p, 'geometric_', 'p')
  if not (p > 0 and p < 1) then fail('geometric_', 'geometric_ expects p to be in (0, 1), but got p=' .. p) end
  local u = scratch_uniform(t, gen_of(opts, 'geometric_'))
  -- ceil(log(u) / log1p(-p))
  return t:copy_((u:log() / math.log(1 - p)):ceil())
end

------------------------------------------------------------------------------ factories
-- PyTorch's message for a negative size, naming the factory
local function check_sizes(op, n)
  if n == 1 and szbuf[0] >= 0 then return end -- (no loop on the usual path: see parse_sizes)
  for i = 0, n - 1 do
    if szbuf[i] < 0 then
      local parts = {}
      for j = 0, n - 1 do parts[j + 1] = ('%d'):format(tonumber(szbuf[j])) end
      fail(op, ('Trying to create tensor with negative dimension %d: [%s]'):format(tonumber(szbuf[i]),
        table.concat(parts, ', ')))
    end
  end
end

-- The factories' work after their sizes are parsed, in functions of fixed arity: a vararg
-- function called from interpreted code is not compiled (LuaJIT), these are.
local function rand_n(n, opts)
  check_sizes('rand', n)
  local t = new_empty('rand', n, opts)
  if C.mt_uniform_(t, 0, 1, gen_of(opts, 'rand')) ~= 0 then raise_last() end
  return apply(t, opts)
end
local function randn_n(n, opts)
  check_sizes('randn', n)
  local t = new_empty('randn', n, opts)
  if C.mt_normal_(t, 0, 1, gen_of(opts, 'randn')) ~= 0 then raise_last() end
  return apply(t, opts)
end

function M.rand(...)
  return rand_n(parse_sizes('rand', ...))
end

function M.randn(...)
  return randn_n(parse_sizes('randn', ...))
end

local function size_arg(size, op)
  if type(size) == 'number' or type(size) == 'cdata' and not is_tensor(size) then size = { size } end
  if type(size) ~= 'table' then fail(op, 'size must be a table of integers, got ' .. T.describe(size)) end
  return size
end

-- randint(high, size [, opts]) / randint(low, high, size [, opts])
function M.randint(a, b, c, d)
  local low, high, size, opts
  if type(b) == 'table' then low, high, size, opts = 0, a, b, c
  else low, high, size, opts = a, b, c, d end
  low, high = bound_arg(low, 'randint', 'low'), bound_arg(high, 'randint', 'high')
  if size == nil then fail('randint', 'a size is required, e.g. torch.randint(0, 10, {3})') end
  local n = parse_sizes('randint', size_arg(size, 'randint'))
  check_sizes('randint', n)
  local t = new_empty('randint', n, opts, by_id[INT64])
  if C.mt_random_(t, low, high, gen_of(opts, 'randint')) ~= 0 then raise_last() end
  return apply(t, opts)
end

function M.randperm(n, opts)
  n = check_integer(n, 'randperm', 'n')
  local dt = opts and opts.dtype and resolve_dtype(opts.dtype, 'randperm') or by_id[INT64]
  local dev = T.check_device(opts, 'randperm')
  if C.mt_randperm(n, dt.id, 1, gen_of(opts, 'randperm'), dev, outp) ~= 0 then raise_last() end
  return apply(take(), opts)
end

local function empty_like(t, opts, op)
  check_tensor(t, op)
  T.options(opts, op)
  local dt = opts and opts.dtype and resolve_dtype(opts.dtype, op)
  local dev = T.check_device(opts, op)
  if opts and opts.device ~= nil then -- t's sizes on another device
    for i = 0, t._ndim - 1 do szbuf[i] = t._sizes[i] end
    if C.mt_tensor_empty(szbuf, t._ndim, dt and dt.id or t._dtype, dev, outp) ~= 0 then raise_last() end
  elseif C.mt_tensor_empty_like(t, dt and dt.id or -1, outp) ~= 0 then
    raise_last()
  end
  return take()
end

function M.rand_like(t, opts)
  local r = empty_like(t, opts, 'rand_like')
  if C.mt_uniform_(r, 0, 1, gen_of(opts, 'rand_like')) ~= 0 then raise_last() end
  return apply(r, opts)
end

function M.randn_like(t, opts)
  local r = empty_like(t, opts, 'randn_like')
  if C.mt_normal_(r, 0, 1, gen_of(opts, 'randn_like')) ~= 0 then raise_last() end
  return apply(r, opts)
end

-- randint_like(t, high [, opts]) / randint_like(t, low, high [, opts])
function M.randint_like(t, a, b, c)
  local low, high, opts
  if b == nil or type(b) == 'table' then low, high, opts = 0, a, b else low, high, opts = a, b, c end
  low, high = bound_arg(low, 'randint_like', 'low'), bound_arg(high, 'randint_like', 'high')
  local r = empty_like(t, opts, 'randint_like')
  if C.mt_random_(r, low, high, gen_of(opts, 'randint_like')) ~= 0 then raise_last() end
  return apply(r, opts)
end

-- bernoulli(p_tensor [, opts]) / bernoulli(input, p_number [, opts])
function M.bernoulli(input, p, opts)
  check_tensor(input, 'bernoulli')
  if type(p) == 'table' and not is_tensor(p) then p, opts = nil, p end
  local r = empty_like(input, nil, 'bernoulli')
  local g = gen_of(opts, 'bernoulli')
  if p == nil then
    if not by_id[input._dtype].is_floating_point then
      fail('bernoulli', ('"bernoulli_tensor_cpu_p_" not implemented for \'%s\''):format(
        methods.type(input):gsub('^torch%.', ''):gsub('Tensor$', '')))
    end
    if C.mt_bernoulli_tensor_(r, input, g) ~= 0 then raise_last() end
  else
    check_number(p, 'bernoulli', 'p')
    if C.mt_bernoulli_(r, p, g) ~= 0 then raise_last() end
  end
  return r
end

-- multinomial(probs, n [, replacement] [, opts]); indices are 1-based
function M.multinomial(probs, num_samples, replacement, opts)
  check_tensor(probs, 'multinomial')
  if type(replacement) == 'table' then replacement, opts = nil, replacement end
  if replacement == nil and opts then replacement = opts.replacement end
  num_samples = check_integer(num_samples, 'multinomial', 'num_samples')
  if C.mt_multinomial(probs, num_samples, replacement and 1 or 0, 1, gen_of(opts, 'multinomial'), outp) ~= 0 then
    raise_last()
  end
  return take()
end
methods.multinomial = M.multinomial
methods.bernoulli = M.bernoulli

-- normal(mean, std [, size] [, opts]), mean and std tensors or numbers, as PyTorch's overloads
function M.normal(mean, std, size, opts)
  if type(size) == 'table' and T.is_opts(size) then size, opts = nil, size end
  if std == nil then std = 1 end
  local g = opts and opts.generator
  local gopts = g and { generator = g } or nil
  local mt, st = is_tensor(mean), is_tensor(std)
  if not mt and not st then
    check_number(mean, 'normal', 'mean'); check_number(std, 'normal', 'std')
    if size == nil then fail('normal', 'a size is required when mean and std are numbers') end
    local n = parse_sizes('normal', size_arg(size, 'normal'))
    check_sizes('normal', n)
    local t = new_empty('normal', n, opts)
    if C.mt_normal_(t, mean, std, gen_of(opts, 'normal')) ~= 0 then raise_last() end
    return apply(t, opts)
  end
  local out
  if mt and not st then
    check_number(std, 'normal', 'std')
    if not (std >= 0) then fail('normal', 'normal expects std >= 0.0, but found std ' .. std) end
    out = empty_like(mean, nil, 'normal'):contiguous()
    out:normal_(0, std, gopts)
    return out:add_(mean)
  end
  if st then
    local n = tonumber(std._numel)
    if n > 0 then
      local buf = ffi.new('double[?]', n)
      if C.mt_tensor_to_doubles(std, buf, n) ~= 0 then raise_last() end
      for i = 0, n - 1 do
        if not (buf[i] >= 0) then fail('normal', 'normal expects all elements of std >= 0.0') end
      end
    end
  end
  if not mt then
    check_number(mean, 'normal', 'mean')
    out = empty_like(std, nil, 'normal')
    out:normal_(0, 1, gopts)
    return out:mul_(std):add_(mean)
  end
  local shape = torch.broadcast_shapes and torch.broadcast_shapes(mean:size(), std:size()) or (mean + std):size()
  out = torch.empty(shape, { dtype = mean.dtype })
  out:normal_(0, 1, gopts)
  return out:mul_(std):add_(mean)
end

------------------------------------------------------------------------------ torch.distributions' samplers
-- PyTorch 1.13's draws after the same seed (core/tensor/samplers.c); float32 and float64. The generator
-- is given as {generator=g} or as g itself (PyTorch's positional generator).
local function sampler_gen(opts, op)
  if is_generator(opts) then return opts._g end
  return gen_of(opts, op)
end
-- torch._standard_gamma(alpha [, {generator=}]): Gamma(alpha, 1) draws (differentiable in alpha)
function M._standard_gamma(alpha, opts)
  check_tensor(alpha, '_standard_gamma')
  if C.mt_standard_gamma(alpha, sampler_gen(opts, '_standard_gamma'), outp) ~= 0 then raise_last() end
  return take()
end
-- torch._sample_dirichlet(alpha [, {generator=}]): Dirichlet draws along the last dimension
function M._sample_dirichlet(alpha, opts)
  check_tensor(alpha, '_sample_dirichlet')
  if C.mt_sample_dirichlet(alpha, sampler_gen(opts, '_sample_dirichlet'), outp) ~= 0 then raise_last() end
  return take()
end
-- torch.poisson(rates [, {generator=}]): Poisson counts (as floats, of rates' dtype)
function M.poisson(rates, opts)
  check_tensor(rates, 'poisson')
  if C.mt_poisson(rates, sampler_gen(opts, 'poisson'), outp) ~= 0 then raise_last() end
  return take()
end
-- torch.binomial(count, prob [, {generator=}]): Binomial counts (count and prob broadcast, one dtype)
function M.binomial(count, prob, opts)
  check_tensor(count, 'binomial')
  check_tensor(prob, 'binomial')
  if C.mt_binomial(count, prob, sampler_gen(opts, 'binomial'), outp) ~= 0 then raise_last() end
  return take()
end
-- torch._standard_gamma_grad(alpha, x): d x / d alpha for x ~ Gamma(alpha, 1)
function M._standard_gamma_grad(alpha, x)
  check_tensor(alpha, '_standard_gamma_grad')
  check_tensor(x, '_standard_gamma_grad')
  if C.mt_standard_gamma_grad(alpha, x, outp) ~= 0 then raise_last() end
  return take()
end
-- torch._dirichlet_grad(x, alpha, total): PyTorch's reparameterized Beta/Dirichlet gradient factor
function M._dirichlet_grad(x, alpha, total)
  check_tensor(x, '_dirichlet_grad')
  check_tensor(alpha, '_dirichlet_grad')
  check_tensor(total, '_dirichlet_grad')
  if C.mt_dirichlet_grad(x, alpha, total, outp) ~= 0 then raise_last() end
  return take()
end

function M.install(t)
  torch = t
  for k, v in pairs(M) do
    -- device_generator is lua/cuda.lua's (torch.cuda.manual_seed & co.), not a torch function
    if k ~= 'install' and k ~= 'random' and k ~= 'device_generator' then t[k] = v end
  end
  -- torch.random.* as in PyTorch (torch.random is also a function table here)
  t.random = M.random
end

return M
