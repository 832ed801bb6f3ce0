-- torch.distributions.Independent(base, reinterpreted_batch_ndims): the base distribution with its
-- rightmost reinterpreted_batch_ndims batch dimensions taken as event dimensions (log_prob and
-- entropy summed over them): Independent(Normal(mu, sigma), 1) is a diagonal Gaussian of one vector
-- per draw (PyTorch's).
local class = require 'moontorch.class'
local core = require 'moontorch.ffi'
local D = require 'moontorch.distributions.distribution'
local constraints = require 'moontorch.distributions.constraints'

local fail = core.fail
local Distribution = D.Distribution

local M = {}

local Independent = class.class('torch.distributions.Independent', Distribution)
M.Independent = Independent

-- sum over the rightmost n dimensions
local function sum_rightmost(t, n)
  if n == 0 then return t end
  local dims = {}
  for i = 1, n do dims[i] = -i end
  return t:sum(dims)
end
M.sum_rightmost = sum_rightmost

-- Independent(base_distribution, reinterpreted_batch_ndims, {validate_args=})
function Independent:__init(base, n, opts)
  if type(base) == 'table' and not class.isinstance(base, Distribution) and base.base_distribution ~= nil then
    base, n, opts = base.base_distribution, base.reinterpreted_batch_ndims, { validate_args = base.validate_args }
  end
  if not class.isinstance(base, Distribution) then
    fail('distributions.Independent', ('expected a distribution as base_distribution, got %s'):format(type(base)))
  end
  if type(n) ~= 'number' or n ~= math.floor(n) or n < 0 then
    fail('distributions.Independent', ('expected reinterpreted_batch_ndims as a non-negative integer, got %s'):format(tostring(n)))
  end
  local bs, es = base._batch_shape, base._event_shape
  if n > #bs then
    fail('distributions.Independent', ('Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual %d vs %d')
      :format(n, #bs))
  end
  local shape = D.concat(bs, es)
  local event_dim = n + #es
  local batch, event = {}, {}
  for i = 1, #shape - event_dim do batch[i] = shape[i] end
  for i = #shape - event_dim + 1, #shape do event[#event + 1] = shape[i] end
  self.base_dist = base
  self.reinterpreted_batch_ndims = n
  Distribution.__init(self, batch, event, D.validate_opt('distributions.Independent', opts))
end

function Independent:expand(...)
  local shape = D.shape_arg('distributions.Independent.expand', ...)
  local new = self:_new_instance()
  local ev = {}
  for i = 1, self.reinterpreted_batch_ndims do ev[i] = self._event_shape[i] end
  new.base_dist = self.base_dist:expand(D.concat(shape, ev))
  new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
  new._batch_shape, new._event_shape = shape, self._event_shape
  return new
end

function Independent:sample(...) return self.base_dist:sample(...) end
function Independent:rsample(...) return self.base_dist:rsample(...) end
function Independent:log_prob(value)
  return sum_rightmost(self.base_dist:log_prob(value), self.reinterpreted_batch_ndims)
end
function Independent:entropy()
  return sum_rightmost(self.base_dist:entropy(), self.reinterpreted_batch_ndims)
end
function Independent:enumerate_support(expand)
  if self.reinterpreted_batch_ndims > 0 then
    fail('distributions.Independent.enumerate_support', 'Enumeration over cartesian product is not implemented')
  end
  return self.base_dist:enumerate_support(expand)
end
Independent._props = {
  has_rsample = function(self) return self.base_dist.has_rsample end,
  has_enumerate_support = function(self)
    if self.reinterpreted_batch_ndims > 0 then return false end
    return self.base_dist.has_enumerate_support
  end,
  support = function(self)
    local s = self.base_dist.support
    if self.reinterpreted_batch_ndims > 0 then s = constraints.independent(s, self.reinterpreted_batch_ndims) end
    return s
  end,
  mean = function(self) return self.base_dist.mean end,
  mode = function(self) return self.base_dist.mode end,
  variance = function(self) return self.base_dist.variance end,
}

function Independent:__tostring()
  return ('Independent(%s, %d)'):format(tostring(self.base_dist), self.reinterpreted_batch_ndims)
end

return M
