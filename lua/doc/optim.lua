-- The docs of optim and optim.lr_scheduler (moontorch.doc: lua/doc/init.lua says how an entry is
-- written). Options show PyTorch 1.13's defaults; lr may also come by position after the parameters.
local doc = ...

doc.section 'Optimizers'
doc { 'optim.Optimizer(params, defaults) -> Optimizer',
  does = 'The base class of the optimizers. params: an array of tensors, or of parameter groups ({params = {...}, lr = ...}: each group\'s options override the defaults); opt.param_groups[i].lr reads or changes a group\'s rate, opt.state the per-parameter state.',
  ex = 'local w = nn.Parameter(torch.ones(2))\nlocal opt = optim.SGD({{params = {w}, lr = 0.5}}, {lr = 0.1})\nprint(opt.param_groups[1].lr, torch.isinstance(opt, optim.Optimizer))  --> 0.5 true' }
doc { 'optim.Optimizer:step([closure]) -> loss', unchecked_args = true,
  does = 'One update of every parameter that has a gradient; closure (required by LBFGS) re-evaluates the model and returns the loss.',
  ex = 'local w = nn.Parameter(torch.tensor({1}))\nlocal opt = optim.SGD({w}, {lr = 0.1})\nlocal loss = (w * 2):sum()\nloss:backward()\nopt:step()\nprint(w.data)  --> tensor([0.8000])' }
doc { 'optim.Optimizer:zero_grad([set_to_none])',
  does = 'Clears the gradients of the parameters: to zeros, or to nil with set_to_none = true (PyTorch 1.13\'s default is false).',
  ex = 'local w = nn.Parameter(torch.ones(1))\nlocal opt = optim.Adam({w})\nw:sum():backward()\nopt:zero_grad(true)\nprint(w.grad)  --> nil' }
doc { 'optim.Optimizer:add_param_group(param_group)',
  does = 'Adds a parameter group (a table with params and its options; the rest from the defaults).',
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 0.1})\nopt:add_param_group({params = {nn.Parameter(torch.ones(1))}, lr = 0.01})\nprint(#opt.param_groups)  --> 2' }
doc { 'optim.Optimizer:state_dict() -> table', 'optim.Optimizer:load_state_dict(state_dict)',
  does = 'The optimizer\'s state (per-parameter state by index, and the groups\' options) in PyTorch\'s layout, and loading it back into an optimizer of the same parameters.',
  ex = 'local w = nn.Parameter(torch.ones(1))\nlocal a = optim.Adam({w}, {lr = 0.01})\nlocal b = optim.Adam({w})\nb:load_state_dict(a:state_dict())\nprint(b.param_groups[1].lr)  --> 0.01' }
doc { 'optim.SGD(params, {lr=0.001, momentum=0, dampening=0, weight_decay=0, nesterov=false, maximize=false, foreach=, differentiable=false}) -> Optimizer',
  does = 'Stochastic gradient descent, with momentum (Nesterov\'s too) and weight decay; one fused C call per parameter.',
  ex = 'local opt = optim.SGD(nn.Linear(2, 1):parameters(), {lr = 0.1, momentum = 0.9})\nprint(opt.param_groups[1].momentum)  --> 0.9' }
doc { 'optim.Adam(params, {lr=0.001, betas={0.9, 0.999}, eps=1e-8, weight_decay=0, amsgrad=false, maximize=false, foreach=, capturable=false, differentiable=false, fused=false}) -> Optimizer',
  'optim.AdamW(params, {lr=0.001, betas={0.9, 0.999}, eps=1e-8, weight_decay=0.01, amsgrad=false, maximize=false, ...}) -> Optimizer',
  does = 'Adam, and AdamW with decoupled weight decay (PyTorch\'s numbers; a fused C step).',
  ex = 'local opt = optim.AdamW(nn.Linear(2, 1):parameters(), {lr = 1e-3})\nprint(opt.param_groups[1].weight_decay)  --> 0.01' }
doc { 'optim.RMSprop(params, {lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=false, maximize=false, ...}) -> Optimizer',
  does = 'RMSprop (centered and with momentum too).',
  ex = 'print(optim.RMSprop({nn.Parameter(torch.ones(1))}).param_groups[1].alpha)  --> 0.99' }
doc { 'optim.Adagrad(params, {lr=0.01, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10, maximize=false, ...}) -> Optimizer',
  does = 'Adagrad.', ex = 'print(optim.Adagrad({nn.Parameter(torch.ones(1))}).param_groups[1].lr)  --> 0.01' }
doc { 'optim.Adadelta(params, {lr=1, rho=0.9, eps=1e-6, weight_decay=0, maximize=false, ...}) -> Optimizer',
  does = 'Adadelta.', ex = 'print(optim.Adadelta({nn.Parameter(torch.ones(1))}).param_groups[1].rho)  --> 0.9' }
doc { 'optim.Adamax(params, {lr=0.002, betas={0.9, 0.999}, eps=1e-8, weight_decay=0, maximize=false, ...}) -> Optimizer',
  does = 'Adamax (Adam with the infinity norm).', ex = 'print(optim.Adamax({nn.Parameter(torch.ones(1))}).param_groups[1].lr)  --> 0.002' }
doc { 'optim.NAdam(params, {lr=0.002, betas={0.9, 0.999}, eps=1e-8, weight_decay=0, momentum_decay=0.004, ...}) -> Optimizer',
  does = 'Adam with Nesterov momentum.', ex = 'print(optim.NAdam({nn.Parameter(torch.ones(1))}).param_groups[1].momentum_decay)  --> 0.004' }
doc { 'optim.RAdam(params, {lr=0.001, betas={0.9, 0.999}, eps=1e-8, weight_decay=0, ...}) -> Optimizer',
  does = 'Rectified Adam.', ex = 'print(optim.RAdam({nn.Parameter(torch.ones(1))}).param_groups[1].lr)  --> 0.001' }
doc { 'optim.ASGD(params, {lr=0.01, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, maximize=false, ...}) -> Optimizer',
  does = 'Averaged stochastic gradient descent.', ex = 'print(optim.ASGD({nn.Parameter(torch.ones(1))}).param_groups[1].t0)  --> 1000000' }
doc { 'optim.Rprop(params, {lr=0.01, etas={0.5, 1.2}, step_sizes={1e-6, 50}, maximize=false, ...}) -> Optimizer',
  does = 'Resilient backpropagation (the sign of the gradient only).', ex = 'print(optim.Rprop({nn.Parameter(torch.ones(1))}).param_groups[1].etas[2])  --> 1.2' }
doc { 'optim.LBFGS(params, {lr=1, max_iter=20, max_eval=, tolerance_grad=1e-7, tolerance_change=1e-9, history_size=100, line_search_fn=}) -> Optimizer',
  does = 'L-BFGS (one parameter group); step(closure) runs up to max_iter iterations; line_search_fn = \'strong_wolfe\' for PyTorch\'s line search.',
  ex = 'local x = nn.Parameter(torch.tensor({3}))\nlocal opt = optim.LBFGS({x}, {line_search_fn = \'strong_wolfe\'})\nopt:step(function() opt:zero_grad() local l = ((x - 1) ^ 2):sum() l:backward() return l end)\nprint(math.abs(x:item() - 1) < 1e-4)  --> true' }
doc { 'optim.required',
  does = 'The marker of a required option in an optimizer\'s defaults (PyTorch\'s torch.optim.optimizer.required).',
  pt = 'torch.optim.optimizer.required',
  ex = 'print(optim.required ~= nil)  --> true' }

doc.section 'Learning-rate schedulers'
local S = ' Its rates equal PyTorch 1.13\'s to the last bit; arguments by position or in the options table.'
doc { 'optim.lr_scheduler.LRScheduler(optimizer, {last_epoch=-1, verbose=false}) -> LRScheduler', pt = 'torch.optim.lr_scheduler._LRScheduler',
  does = 'The base class of the schedulers: call step() once per epoch (after optimizer:step()); get_last_lr() gives the rates it set.',
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1})\nlocal s = optim.lr_scheduler.StepLR(opt, 1, {gamma = 0.5})\nprint(torch.isinstance(s, optim.lr_scheduler.LRScheduler))  --> true' }
doc { 'optim.lr_scheduler.LRScheduler:step([epoch])', pt = 'torch.optim.lr_scheduler._LRScheduler.step',
  does = 'Moves the schedule one epoch on and sets each group\'s lr.',
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1})\nlocal s = optim.lr_scheduler.ExponentialLR(opt, 0.5)\nopt:step() s:step()\nprint(opt.param_groups[1].lr)  --> 0.5' }
doc { 'optim.lr_scheduler.LRScheduler:get_last_lr() -> {number, ...}', 'optim.lr_scheduler.LRScheduler:get_lr() -> {number, ...}',
  'optim.lr_scheduler.LRScheduler:print_lr(is_verbose, group, lr[, epoch])',
  pt = 'torch.optim.lr_scheduler._LRScheduler.get_last_lr, torch.optim.lr_scheduler._LRScheduler.get_lr, torch.optim.lr_scheduler._LRScheduler.print_lr',
  does = 'The rates the last step set, one per group (an array); get_lr computes the next ones (a scheduler\'s own formula).',
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 0.1})\nprint(optim.lr_scheduler.StepLR(opt, 2):get_last_lr()[1])  --> 0.1' }
doc { 'optim.lr_scheduler.LRScheduler:state_dict() -> table', 'optim.lr_scheduler.LRScheduler:load_state_dict(state_dict)',
  pt = 'torch.optim.lr_scheduler._LRScheduler.state_dict, torch.optim.lr_scheduler._LRScheduler.load_state_dict',
  does = 'The scheduler\'s state (every field but the optimizer, as PyTorch\'s), and loading it back.',
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1})\nlocal s = optim.lr_scheduler.StepLR(opt, 3)\nprint(s:state_dict().step_size)  --> 3' }
doc { 'optim.lr_scheduler.StepLR(optimizer, step_size, {gamma=0.1, last_epoch=-1, verbose=false}) -> LRScheduler',
  does = 'Multiplies the rate by gamma every step_size epochs.' .. S,
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1})\nlocal s = optim.lr_scheduler.StepLR(opt, 2, {gamma = 0.5})\nfor _ = 1, 2 do opt:step() s:step() end\nprint(s:get_last_lr()[1])  --> 0.5' }
doc { 'optim.lr_scheduler.MultiStepLR(optimizer, milestones, {gamma=0.1, last_epoch=-1, verbose=false}) -> LRScheduler',
  does = 'Multiplies the rate by gamma at each epoch in milestones (an array).' .. S,
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1})\nlocal s = optim.lr_scheduler.MultiStepLR(opt, {1}, {gamma = 0.1})\nopt:step() s:step()\nprint(s:get_last_lr()[1])  --> 0.1' }
doc { 'optim.lr_scheduler.ConstantLR(optimizer, {factor=1/3, total_iters=5, last_epoch=-1, verbose=false}) -> LRScheduler',
  does = 'The rate times factor until total_iters epochs, then the rate.' .. S,
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 0.9})\nprint(optim.lr_scheduler.ConstantLR(opt, {factor = 0.5}):get_last_lr()[1])  --> 0.45' }
doc { 'optim.lr_scheduler.LinearLR(optimizer, {start_factor=1/3, end_factor=1, total_iters=5, last_epoch=-1, verbose=false}) -> LRScheduler',
  does = 'The rate\'s factor going linearly from start_factor to end_factor over total_iters epochs (warm-up).' .. S,
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1})\nprint(optim.lr_scheduler.LinearLR(opt, {start_factor = 0.25}):get_last_lr()[1])  --> 0.25' }
doc { 'optim.lr_scheduler.ExponentialLR(optimizer, gamma, {last_epoch=-1, verbose=false}) -> LRScheduler',
  does = 'Multiplies the rate by gamma every epoch.' .. S,
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1})\nlocal s = optim.lr_scheduler.ExponentialLR(opt, 0.9)\nopt:step() s:step()\nprint(s:get_last_lr()[1])  --> 0.9' }
doc { 'optim.lr_scheduler.PolynomialLR(optimizer, {total_iters=5, power=1, last_epoch=-1, verbose=false}) -> LRScheduler',
  does = 'Decays the rate polynomially to 0 over total_iters epochs.' .. S,
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1})\nlocal s = optim.lr_scheduler.PolynomialLR(opt, {total_iters = 2})\nopt:step() s:step()\nprint(s:get_last_lr()[1])  --> 0.5' }
doc { 'optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max, {eta_min=0, last_epoch=-1, verbose=false}) -> LRScheduler',
  does = 'Anneals the rate along a cosine from its initial value to eta_min over T_max epochs.' .. S,
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1})\nlocal s = optim.lr_scheduler.CosineAnnealingLR(opt, 2)\nopt:step() s:step()\nprint(s:get_last_lr()[1])  --> 0.5' }
doc { 'optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0, {T_mult=1, eta_min=0, last_epoch=-1, verbose=false}) -> LRScheduler',
  does = 'Cosine annealing restarted every T_0 epochs (periods growing by T_mult); step(epoch) takes fractional epochs.' .. S,
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1})\nlocal s = optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, 2)\nopt:step() s:step()\nprint(s:get_last_lr()[1])  --> 0.5' }
doc { 'optim.lr_scheduler.CyclicLR(optimizer, base_lr, max_lr, {step_size_up=2000, step_size_down=, mode=\'triangular\', gamma=1, scale_fn=, scale_mode=\'cycle\', cycle_momentum=true, base_momentum=0.8, max_momentum=0.9, last_epoch=-1, verbose=false}) -> LRScheduler',
  'optim.lr_scheduler.CyclicLR:scale_fn(x) -> number',
  does = 'Cycles the rate between base_lr and max_lr (and the momentum the other way), stepped once per batch; modes \'triangular\', \'triangular2\', \'exp_range\' or a scale_fn of your own.' .. S,
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1, momentum = 0.9})\nlocal s = optim.lr_scheduler.CyclicLR(opt, 0.1, 1, {step_size_up = 2})\nopt:step() s:step()\nprint(s:get_last_lr()[1])  --> 0.55' }
doc { 'optim.lr_scheduler.OneCycleLR(optimizer, max_lr, {total_steps=, epochs=, steps_per_epoch=, pct_start=0.3, anneal_strategy=\'cos\', cycle_momentum=true, base_momentum=0.85, max_momentum=0.95, div_factor=25, final_div_factor=1e4, three_phase=false, last_epoch=-1, verbose=false}) -> LRScheduler',
  'optim.lr_scheduler.OneCycleLR:anneal_func(start, end_, pct) -> number', pt = 'torch.optim.lr_scheduler.OneCycleLR',
  does = 'The one-cycle policy: the rate warms up to max_lr and anneals far below the start, stepped once per batch.' .. S,
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1, momentum = 0.9})\nlocal s = optim.lr_scheduler.OneCycleLR(opt, 1, {total_steps = 10})\nprint(s:get_last_lr()[1])  --> 0.04' }
doc { 'optim.lr_scheduler.LambdaLR(optimizer, lr_lambda, {last_epoch=-1, verbose=false}) -> LRScheduler',
  does = 'The initial rate times lr_lambda(epoch) (a function, or an array of them, one per group).' .. S,
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1})\nlocal s = optim.lr_scheduler.LambdaLR(opt, function(e) return 1 / (e + 1) end)\nopt:step() s:step()\nprint(s:get_last_lr()[1])  --> 0.5' }
doc { 'optim.lr_scheduler.MultiplicativeLR(optimizer, lr_lambda, {last_epoch=-1, verbose=false}) -> LRScheduler',
  does = 'The rate multiplied by lr_lambda(epoch) at every step.' .. S,
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1})\nlocal s = optim.lr_scheduler.MultiplicativeLR(opt, function() return 0.5 end)\nopt:step() s:step()\nprint(s:get_last_lr()[1])  --> 0.5' }
doc { 'optim.lr_scheduler.SequentialLR(optimizer, schedulers, milestones, {last_epoch=-1, verbose=false}) -> LRScheduler',
  does = 'Runs the schedulers one after another, switching at the milestones (epochs).' .. S,
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1})\nlocal a = optim.lr_scheduler.ConstantLR(opt, {factor = 0.1, total_iters = 2})\nlocal b = optim.lr_scheduler.ExponentialLR(opt, 0.9)\nlocal s = optim.lr_scheduler.SequentialLR(opt, {a, b}, {2})\nprint(s:get_last_lr()[1])  --> 0.1' }
doc { 'optim.lr_scheduler.ChainedScheduler(schedulers) -> ChainedScheduler',
  does = 'Steps several schedulers together, each multiplying in its change.' .. S,
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1})\nlocal s = optim.lr_scheduler.ChainedScheduler({optim.lr_scheduler.ExponentialLR(opt, 0.5), optim.lr_scheduler.ExponentialLR(opt, 0.5)})\nopt:step() s:step()\nprint(s:get_last_lr()[1])  --> 0.25' }
doc { 'optim.lr_scheduler.ReduceLROnPlateau(optimizer, {mode=\'min\', factor=0.1, patience=10, threshold=1e-4, threshold_mode=\'rel\', cooldown=0, min_lr=0, eps=1e-8, verbose=false}) -> ReduceLROnPlateau',
  'optim.lr_scheduler.ReduceLROnPlateau:step(metrics[, epoch])',
  'optim.lr_scheduler.ReduceLROnPlateau:in_cooldown() -> boolean', 'optim.lr_scheduler.ReduceLROnPlateau:is_better(a, best) -> boolean',
  'optim.lr_scheduler.ReduceLROnPlateau:get_last_lr() -> {number, ...}',
  pt = 'torch.optim.lr_scheduler.ReduceLROnPlateau, torch.optim.lr_scheduler.ReduceLROnPlateau.step, torch.optim.lr_scheduler.ReduceLROnPlateau.in_cooldown, torch.optim.lr_scheduler.ReduceLROnPlateau.is_better, torch.optim.lr_scheduler.ReduceLROnPlateau.state_dict, torch.optim.lr_scheduler.ReduceLROnPlateau.load_state_dict',
  'optim.lr_scheduler.ReduceLROnPlateau:state_dict() -> table', 'optim.lr_scheduler.ReduceLROnPlateau:load_state_dict(state_dict)',
  does = 'Reduces the rate by factor when the metric given to step(metric) has not improved for patience epochs.',
  ex = 'local opt = optim.SGD({nn.Parameter(torch.ones(1))}, {lr = 1})\nlocal s = optim.lr_scheduler.ReduceLROnPlateau(opt, {patience = 0})\ns:step(1) s:step(1)\nprint(opt.param_groups[1].lr)  --> 0.1' }
