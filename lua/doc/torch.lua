-- The docs of torch.* (moontorch.doc: lua/doc/init.lua says how an entry is written). Ops of the
-- op list are in ops.lua; torch.linalg, torch.special and torch.random here too.
local doc = ...

doc { 'torch.zeros(size..., {dtype=, device=, requires_grad=, out=}) -> Tensor',
  does = 'A tensor of the given size filled with 0; the size as numbers or as one array.',
  ex = 'print(torch.zeros(2, 3):size())  --> torch.Size([2, 3])' }
