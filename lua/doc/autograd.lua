-- The docs of torch.autograd (moontorch.doc: lua/doc/init.lua says how an entry is written).
local doc = ...

doc { 'torch.autograd.grad(outputs, inputs, {grad_outputs=, retain_graph=, create_graph=false, allow_unused=false}) -> {Tensor, ...}',
  does = 'The gradients of outputs (a tensor or an array) with respect to inputs (a tensor or an array), as an array; create_graph records them for higher derivatives.',
  ex = 'local x = torch.tensor({3}, {requires_grad = true})\nlocal g = torch.autograd.grad(x ^ 2, x, {create_graph = true})[1]\nprint(g, torch.autograd.grad(g, x)[1])  --> tensor([6.], grad_fn=<MulBackward0>) tensor([2.])' }
doc { 'torch.autograd.backward(tensors, grad_tensors, {retain_graph=, create_graph=false, inputs=})',
  does = 'backward() of several tensors at once (arrays), accumulating into the leaves\' .grad.',
  ex = 'local x = torch.ones(2, {requires_grad = true})\ntorch.autograd.backward({(x * 3):sum()})\nprint(x.grad)  --> tensor([3., 3.])' }
doc { 'torch.autograd.Function(name) -> class', 'torch.autograd.Function',
  does = 'Custom autograd ops in Lua: make a class (torch.autograd.Function(\'Name\') or torch.class(\'Name\', \'torch.autograd.Function\')), define forward(ctx, ...) and backward(ctx, grad...) as class functions, call Cls:apply(...). ctx:save_for_backward(...), ctx.saved_tensors, ctx:mark_dirty, ctx:mark_non_differentiable, ctx.needs_input_grad.',
  ex = 'local Twice = torch.autograd.Function(\'DocTwice\')\nfunction Twice.forward(ctx, x) return x * 2 end\nfunction Twice.backward(ctx, g) return g * 2 end\nlocal x = torch.ones(2, {requires_grad = true})\nTwice:apply(x):sum():backward()\nprint(x.grad)  --> tensor([2., 2.])' }
doc { 'torch.autograd.Function:apply(...) -> ...', 'torch.autograd.Function:forward(ctx, ...) -> ...', unchecked_args = true,
  'torch.autograd.Function:backward(ctx, grad_outputs...) -> grad_inputs...',
  does = 'apply runs a Function class on its inputs and records it for autograd; forward and backward are what a subclass defines (the base ones raise an error saying so).',
  ex = 'local Sq = torch.autograd.Function(\'DocSq\')\nfunction Sq.forward(ctx, x) ctx:save_for_backward(x) return x * x end\nfunction Sq.backward(ctx, g) local x = ctx.saved_tensors[1] return g * 2 * x end\nprint(torch.autograd.gradcheck(function(x) return Sq:apply(x) end, {torch.rand(3, {dtype = torch.float64, requires_grad = true})}))  --> true' }
doc { 'torch.autograd.gradcheck(fn, inputs, {eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=true, ...}) -> boolean',
  does = 'Checks fn\'s analytic gradients against finite differences (float64 inputs that require grad).',
  ex = 'print(torch.autograd.gradcheck(torch.sin, {torch.rand(3, {dtype = torch.float64, requires_grad = true})}))  --> true' }
doc { 'torch.autograd.gradgradcheck(fn, inputs, grad_outputs, {...}) -> boolean',
  does = 'Checks second derivatives against finite differences of the first.',
  ex = 'print(torch.autograd.gradgradcheck(torch.sin, {torch.rand(2, {dtype = torch.float64, requires_grad = true})}))  --> true' }
doc { 'torch.autograd.detect_anomaly(fn) -> function',
  does = 'fn wrapped to run with anomaly detection: a NaN produced in backward is an error naming the forward op that made it.',
  ex = 'print(torch.autograd.detect_anomaly(function() return torch.autograd.is_anomaly_enabled() end)())  --> true' }
doc { 'torch.autograd.set_detect_anomaly(mode)', 'torch.autograd.is_anomaly_enabled() -> boolean',
  pt = 'torch.autograd.set_detect_anomaly, torch.is_anomaly_enabled',
  does = 'Turns anomaly detection on or off / says whether it is on.',
  ex = 'torch.autograd.set_detect_anomaly(true)\nprint(torch.autograd.is_anomaly_enabled())  --> true\ntorch.autograd.set_detect_anomaly(false)' }
