-- The docs of torch.cuda (moontorch.doc: lua/doc/init.lua says how an entry is written).
local doc = ...

doc { 'torch.cuda.is_available() -> boolean',
  does = 'Whether a CUDA device can be used (false in a build without CUDA).',
  ex = 'print(type(torch.cuda.is_available()))  --> boolean' }
doc { 'torch.cuda.device_count() -> number',
  does = 'The number of CUDA devices (0 in a build without CUDA).',
  ex = 'print(torch.cuda.device_count() >= 0)  --> true' }
