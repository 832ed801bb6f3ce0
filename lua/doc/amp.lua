-- The docs of automatic mixed precision (issue 25): torch.autocast and the autocast state, the op
-- lists as a Lua policy, GradScaler.
local doc = ...

doc.section 'autocast'
doc { 'torch.autocast(device_type[, {dtype=, enabled=true, cache_enabled=true, policy=}][, block]) -> Autocast or block\'s results',
  'torch.amp.autocast(device_type[, {dtype=, enabled=true, cache_enabled=true, policy=}][, block]) -> Autocast or block\'s results',
  does = 'PyTorch\'s autocast scope. With a block (a function), runs it with autocast on and returns its results (PyTorch\'s `with torch.autocast(...):`); without, returns the scope object: ac:__enter() / ac:__exit() (also :enter() / :exit()), ac:run(fn, ...), ac:wrap(fn) or ac(fn) (the decorator). Inside, the ops of the policy cast their floating tensor arguments of that device type (never float64): lower_precision_fp ops (mm, matmul, addmm, bmm, baddbmm, addbmm, F.linear, F.conv1d/2d/3d, ... on the CPU) to dtype (bfloat16 by default on the CPU, float16 on CUDA; the CPU takes float16 too), fp32 ops (losses, conv_transpose, 3-D pools, reflect/replicate padding, linalg inverses, ...) to float32, promote ops (cat, stack, index_copy) to the widest; everything else runs as it is. The lists are PyTorch 1.13\'s (torch.amp.policy); policy = {op or qualified name = kind or false or function(...)} patches them for this scope (nested scopes patch the enclosing one\'s). Float32 leaves that require grad are cast once per outermost scope (cache_enabled). nn.LSTM, nn.GRU and their cells run as PyTorch\'s fused ops: nothing inside is cast. A dtype other than bfloat16 / float16, or \'cuda\' without CUDA, warns and disables the scope, as PyTorch.',
  ex = 'local a = torch.ones(2, 2)\nprint(torch.autocast(\'cpu\', function() return a:mm(a).dtype end))  --> torch.bfloat16\nlocal ac = torch.autocast(\'cpu\', {dtype = torch.float16})\nac:__enter()\nprint(torch.matmul(a, a).dtype, torch.is_autocast_cpu_enabled())  --> torch.float16 true\nac:__exit()',
  pt = 'torch.autocast, torch.amp.autocast' }
doc { 'torch.cpu.amp.autocast([{dtype=, enabled=, cache_enabled=}][, block]) -> Autocast or block\'s results',
  'torch.cuda.amp.autocast([{dtype=, enabled=, cache_enabled=}][, block]) -> Autocast or block\'s results',
  does = 'torch.autocast(\'cpu\', ...) and torch.autocast(\'cuda\', ...).',
  ex = 'print(torch.cpu.amp.autocast(function() return torch.ones(2, 2):mm(torch.ones(2, 2)).dtype end))  --> torch.bfloat16' }
doc { 'torch.is_autocast_enabled() -> boolean', 'torch.is_autocast_cpu_enabled() -> boolean',
  'torch.set_autocast_enabled(enabled)', 'torch.set_autocast_cpu_enabled(enabled)',
  does = 'Whether CUDA / CPU autocast is on (inside an enabled scope); set_ turns it off or on again inside a scope (as PyTorch\'s, these only flip the state: a scope installs the casts).',
  ex = 'print(torch.is_autocast_cpu_enabled(), torch.autocast(\'cpu\', torch.is_autocast_cpu_enabled))  --> false true' }
doc { 'torch.get_autocast_cpu_dtype() -> dtype', 'torch.get_autocast_gpu_dtype() -> dtype',
  'torch.set_autocast_cpu_dtype(dtype)', 'torch.set_autocast_gpu_dtype(dtype)',
  does = 'The low dtype a scope without dtype= uses: bfloat16 on the CPU, float16 on CUDA by default.',
  ex = 'print(torch.get_autocast_cpu_dtype(), torch.get_autocast_gpu_dtype())  --> torch.bfloat16 torch.float16' }
doc { 'torch.is_autocast_cache_enabled() -> boolean', 'torch.set_autocast_cache_enabled(enabled)',
  'torch.clear_autocast_cache()', 'torch.autocast_increment_nesting() -> number',
  'torch.autocast_decrement_nesting() -> number',
  does = 'The cache of low-precision casts of float32 leaves that require grad (kept until the outermost scope exits, which clears it) and the nesting count of scopes.',
  ex = 'print(torch.is_autocast_cache_enabled(), torch.autocast_increment_nesting(), torch.autocast_decrement_nesting())  --> true 1 0' }

doc.section 'The policy'
doc { 'torch.amp.policy(device_type) -> table', 'torch.amp.current_policy(device_type) -> table',
  does = 'A new table {op name = kind} of PyTorch 1.13\'s lists for \'cpu\' or \'cuda\' (kinds: \'lower_precision_fp\', \'fp32\', \'promote\', \'banned\'; a function of the arguments for the ops that are one mode of a moontorch function, F.pad\'s reflect/replicate and torch.einsum), and the one in effect now (the innermost enabled scope\'s, with its patches). torch.amp.lists holds the lists themselves: patch them to change later scopes (an edit that keeps each list\'s length and last name: call torch.amp.policy_changed()).',
  ex = 'local p = torch.amp.policy(\'cpu\')\nprint(p.mm, p.mse_loss, p.cat, p.relu)  --> lower_precision_fp fp32 promote nil',
  pt = false }
doc { 'torch.amp.policy_changed()',
  does = 'Forget the resolved default policies, after an in-place edit of torch.amp.lists.',
  ex = 'torch.amp.policy_changed()\nprint(torch.autocast(\'cpu\', function() return torch.ones(1, 1):mm(torch.ones(1, 1)).dtype end))  --> torch.bfloat16',
  pt = false }

doc.section 'GradScaler'
doc { 'torch.amp.GradScaler([device, ]{init_scale=65536, growth_factor=2, backoff_factor=0.5, growth_interval=2000, enabled=true}) -> GradScaler',
  'torch.cuda.amp.GradScaler({init_scale=, growth_factor=, backoff_factor=, growth_interval=, enabled=}) -> GradScaler',
  does = 'PyTorch\'s loss scaler, on the CPU too (device \'cpu\'; \'cuda\' by default, which without CUDA disables itself with PyTorch\'s warning). A disabled scaler changes nothing and its step calls optimizer:step().',
  ex = 'local s = torch.amp.GradScaler(\'cpu\')\nprint(s:get_scale(), s:is_enabled())  --> 65536 true',
  pt = 'torch.cuda.amp.GradScaler, torch.amp.GradScaler (PyTorch 2.3)' }
doc { 'torch.amp.GradScaler:scale(outputs) -> outputs', 'torch.amp.GradScaler:unscale_(optimizer)',
  'torch.amp.GradScaler:step(optimizer, ...) -> step\'s result', 'torch.amp.GradScaler:update([new_scale])',
  does = 'scale: outputs (a tensor or nested arrays) times the scale; unscale_: the optimizer\'s gradients divided by it, inf/NaN recorded (once per step, before clipping); step: unscale_ if not done, then optimizer:step(...) unless a gradient held inf/NaN; update: the scale times backoff_factor after a skipped step, times growth_factor after growth_interval clean steps in a row (or new_scale, a number or a 1-element float32 tensor).',
  ex = 'local p = torch.ones(2, {requires_grad = true})\nlocal opt = torch.optim.SGD({p}, {lr = 0.1})\nlocal s = torch.amp.GradScaler(\'cpu\')\ns:scale((p * 2):sum()):backward()\ns:unscale_(opt)\nprint(p.grad)  --> tensor([2., 2.])\ns:step(opt)\ns:update()\nprint(p)  --> tensor([0.8000, 0.8000], requires_grad=True)',
  pt = 'torch.cuda.amp.GradScaler.scale, torch.cuda.amp.GradScaler.unscale_, torch.cuda.amp.GradScaler.step, torch.cuda.amp.GradScaler.update' }
doc { 'torch.amp.GradScaler:get_scale() -> number', 'torch.amp.GradScaler:get_growth_factor() -> number',
  'torch.amp.GradScaler:set_growth_factor(v)', 'torch.amp.GradScaler:get_backoff_factor() -> number',
  'torch.amp.GradScaler:set_backoff_factor(v)', 'torch.amp.GradScaler:get_growth_interval() -> number',
  'torch.amp.GradScaler:set_growth_interval(v)', 'torch.amp.GradScaler:is_enabled() -> boolean',
  'torch.amp.GradScaler:state_dict() -> table', 'torch.amp.GradScaler:load_state_dict(state_dict)',
  does = 'The settings; state_dict() is {scale, growth_factor, backoff_factor, growth_interval, _growth_tracker} (empty when disabled), as PyTorch\'s.',
  ex = 'local s = torch.amp.GradScaler(\'cpu\', {growth_interval = 10})\nprint(s:get_growth_interval(), s:state_dict().scale)  --> 10 65536',
  pt = 'torch.cuda.amp.GradScaler.get_scale, torch.cuda.amp.GradScaler.state_dict, torch.cuda.amp.GradScaler.load_state_dict' }
