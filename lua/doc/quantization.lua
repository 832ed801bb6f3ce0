-- The docs of quantization (issue 25): quantized tensors, observers, fake quantization, the eager-mode
-- workflows and the quantized modules.
local doc = ...

doc.section 'Quantized tensors'
doc { 'torch.qint8', 'torch.quint8', 'torch.qint32',
  does = 'The quantized dtypes (is_quantized = true). No kernel computes in them: a quantized tensor is a Lua object holding its integer values as an int8 / uint8 / int32 tensor (dtype.storage) and its quantizer; the quantized kernels take those. A tensor op given one of these says the dtype is invalid.',
  ex = 'print(torch.qint8, torch.quint8.is_quantized, torch.qint32.storage)  --> torch.qint8 true torch.int32' }
doc { 'torch.per_tensor_affine', 'torch.per_channel_affine', 'torch.per_tensor_symmetric', 'torch.per_channel_symmetric',
  'torch.per_channel_affine_float_qparams',
  does = 'The quantization schemes (what q:qscheme() returns; observers take them as qscheme=).',
  ex = 'print(torch.per_tensor_affine)  --> torch.per_tensor_affine' }
doc { 'torch.quantize_per_tensor(input, scale, zero_point, dtype) -> quantized tensor',
  does = 'input quantized with one scale and zero point: q = clamp(zero_point + round_half_even(x * (1 / scale)), the dtype\'s range), as PyTorch\'s. The result has q:int_repr(), q:dequantize(), q:q_scale(), q:q_zero_point(), q:qscheme(), q.dtype, q.is_quantized, the shape methods and views (view, reshape, flatten, transpose, select, t[i], ...), clone; prints as PyTorch prints it; torch.save keeps it.',
  ex = 'local q = torch.quantize_per_tensor(torch.tensor({0.1, -0.25, 2.55}), 0.1, 10, torch.quint8)\nprint(q:int_repr(), q:q_scale(), q:q_zero_point())  --> tensor([11, 8, 36], dtype=torch.uint8) 0.1 10' }
doc { 'torch.quantize_per_channel(input, scales, zero_points, axis, dtype) -> quantized tensor',
  does = 'input quantized with a scale and zero point per index of dim axis (counted from 1: PyTorch\'s axis 0 is 1); scales float64, zero_points int64. q:q_per_channel_scales(), q:q_per_channel_zero_points(), q:q_per_channel_axis().',
  ex = 'local q = torch.quantize_per_channel(torch.tensor({{1, 2}, {3, 4}}), torch.tensor({0.5, 0.25}, {dtype = torch.float64}), torch.tensor({0, 1}, {dtype = torch.int64}), 1, torch.qint8)\nprint(q:int_repr(), q:q_per_channel_axis())  --> tensor([[ 2, 4], [13, 17]], dtype=torch.int8) 1' }
doc { 'torch.dequantize(q) -> Tensor',
  does = 'The float32 values of a quantized tensor ((q - zero_point) * scale); an array of them gives an array; a float tensor is itself.',
  ex = 'print(torch.dequantize(torch.quantize_per_tensor(torch.tensor({0.26}), 0.1, 0, torch.quint8)))  --> tensor([0.3000])' }
doc { 'torch.fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max) -> Tensor',
  'torch.fake_quantize_per_channel_affine(input, scales, zero_points, axis, quant_min, quant_max) -> Tensor',
  'torch.quantization.fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max) -> Tensor',
  'torch.quantization.fake_quantize_per_channel_affine(input, scales, zero_points, axis, quant_min, quant_max) -> Tensor',
  does = 'input quantized and dequantized in float (quantization-aware training); the gradient passes where the value was inside [quant_min, quant_max] and is 0 elsewhere (the straight-through estimator). axis counts from 1.',
  ex = 'local x = torch.tensor({0.12, 9.0}, {requires_grad = true})\nlocal y = torch.fake_quantize_per_tensor_affine(x, 0.1, 0, 0, 63)\ny:sum():backward()\nprint(y, x.grad)  --> tensor([0.1000, 6.3000], grad_fn=<FakeQuantizeAffineBackward>) tensor([1., 0.])',
  pt = 'torch.fake_quantize_per_tensor_affine, torch.fake_quantize_per_channel_affine' }

doc.section 'Observers and QConfigs'
doc { 'torch.quantization.MinMaxObserver({dtype=, qscheme=, reduce_range=, quant_min=, quant_max=, eps=}) -> Module',
  'torch.quantization.MovingAverageMinMaxObserver({averaging_constant=0.01, dtype=, qscheme=, reduce_range=, quant_min=, quant_max=, eps=}) -> Module',
  'torch.quantization.PerChannelMinMaxObserver({ch_axis=1, dtype=, qscheme=, reduce_range=, quant_min=, quant_max=, eps=}) -> Module',
  'torch.quantization.MovingAveragePerChannelMinMaxObserver({averaging_constant=, ch_axis=, dtype=, qscheme=, reduce_range=, quant_min=, quant_max=}) -> Module',
  'torch.quantization.HistogramObserver({bins=2048, upsample_rate=128, dtype=, qscheme=, reduce_range=, quant_min=, quant_max=}) -> Module',
  'torch.quantization.PlaceholderObserver({dtype=, compute_dtype=}) -> Module', 'torch.quantization.NoopObserver({dtype=}) -> Module',
  'torch.quantization.ObserverBase', 'torch.quantization.UniformQuantizationObserverBase',
  does = 'PyTorch 1.13\'s observers: modules that pass their input through and record its range (min/max, a moving average of them, per channel, or a histogram searched for the range of least L2 error); obs:calculate_qparams() gives the scales (float32) and zero points as PyTorch computes them. ch_axis counts from 1.',
  ex = 'local o = torch.quantization.MinMaxObserver()\no(torch.tensor({-1, 3}))\nlocal s, z = o:calculate_qparams()\nprint(o, z)  --> MinMaxObserver(min_val=-1.0, max_val=3.0) tensor([64], dtype=torch.int32)',
  pt = 'torch.quantization.MinMaxObserver, torch.quantization.MovingAverageMinMaxObserver, torch.quantization.PerChannelMinMaxObserver, torch.quantization.MovingAveragePerChannelMinMaxObserver, torch.quantization.HistogramObserver, torch.quantization.PlaceholderObserver, torch.quantization.NoopObserver, torch.quantization.ObserverBase, torch.ao.quantization.observer.UniformQuantizationObserverBase' }
doc { unchecked_args = true, 'torch.quantization.MinMaxObserver:calculate_qparams() -> scales, zero_points',
  'torch.quantization.MinMaxObserver:reset_min_max_vals()', 'torch.quantization.MinMaxObserver:with_args({...}) -> factory',
  'torch.quantization.HistogramObserver:calculate_qparams() -> scales, zero_points', 'torch.quantization.HistogramObserver:with_args({...}) -> factory',
  'torch.quantization.PerChannelMinMaxObserver:calculate_qparams() -> scales, zero_points',
  'torch.quantization.PerChannelMinMaxObserver:reset_min_max_vals()', 'torch.quantization.PerChannelMinMaxObserver:with_args({...}) -> factory',
  'torch.quantization.MovingAverageMinMaxObserver:with_args({...}) -> factory',
  'torch.quantization.MovingAveragePerChannelMinMaxObserver:with_args({...}) -> factory',
  'torch.quantization.PlaceholderObserver:calculate_qparams()', 'torch.quantization.PlaceholderObserver:with_args({...}) -> factory',
  'torch.quantization.NoopObserver:calculate_qparams()', 'torch.quantization.NoopObserver:with_args({...}) -> factory',
  'torch.quantization.ObserverBase:with_args({...}) -> factory',
  does = 'with_args: a factory (PyTorch\'s functools.partial) that makes the observer with these options when called (calling it with a table adds more); what QConfigs hold. Placeholder and Noop observers have no qparams (an error).',
  ex = 'local f = torch.quantization.MinMaxObserver.with_args({quant_min = 0, quant_max = 127})\nprint(f().quant_max)  --> 127',
  pt = 'torch.quantization.MinMaxObserver.calculate_qparams, torch.quantization.MinMaxObserver.reset_min_max_vals, torch.quantization.MinMaxObserver.with_args, torch.quantization.HistogramObserver.calculate_qparams, torch.quantization.PerChannelMinMaxObserver.calculate_qparams' }
doc { 'torch.quantization.default_observer', 'torch.quantization.default_weight_observer',
  'torch.quantization.default_per_channel_weight_observer', 'torch.quantization.default_histogram_observer',
  'torch.quantization.default_placeholder_observer', 'torch.quantization.default_dynamic_quant_observer',
  'torch.quantization.default_float_qparams_observer', 'torch.quantization.weight_observer_range_neg_127_to_127',
  'torch.quantization.per_channel_weight_observer_range_neg_127_to_127',
  does = 'PyTorch 1.13\'s default observer factories (activations: uint8 in [0, 127]; weights: int8 symmetric, per tensor or per channel).',
  ex = 'print(torch.quantization.default_weight_observer().dtype)  --> torch.qint8',
  pt = 'torch.quantization.default_observer, torch.quantization.default_weight_observer, torch.quantization.default_per_channel_weight_observer, torch.quantization.default_histogram_observer, torch.quantization.default_placeholder_observer, torch.quantization.default_dynamic_quant_observer, torch.quantization.default_float_qparams_observer, torch.ao.quantization.observer.weight_observer_range_neg_127_to_127, torch.ao.quantization.observer.per_channel_weight_observer_range_neg_127_to_127' }
doc { 'torch.quantization.QConfig({activation=, weight=}) -> QConfig',
  does = 'What to observe a module\'s output and weight with: two factories (an observer class\'s with_args, or a fake quant\'s). Set as module.qconfig (its children inherit it) or given to quantize_dynamic.',
  ex = 'local q = torch.quantization.QConfig({activation = torch.quantization.default_observer, weight = torch.quantization.default_weight_observer})\nprint(q.weight().qscheme)  --> torch.per_tensor_symmetric' }
doc { 'torch.quantization.default_qconfig', 'torch.quantization.default_per_channel_qconfig',
  'torch.quantization.default_dynamic_qconfig', 'torch.quantization.per_channel_dynamic_qconfig',
  'torch.quantization.default_qat_qconfig', 'torch.quantization.default_dynamic_qat_qconfig',
  'torch.quantization.default_weight_only_qconfig', 'torch.quantization.default_activation_only_qconfig',
  'torch.quantization.get_default_qconfig([backend=\'fbgemm\'][, version]) -> QConfig',
  'torch.quantization.get_default_qat_qconfig([backend=\'fbgemm\'][, version]) -> QConfig',
  does = 'PyTorch 1.13\'s QConfigs; get_default_qconfig(\'fbgemm\' | \'x86\' | \'qnnpack\' | \'onednn\') the post-training ones (HistogramObserver activations, per-channel weights but on qnnpack), get_default_qat_qconfig the QAT ones (FakeQuantize with moving-average observers).',
  ex = 'print(torch.quantization.get_default_qconfig(\'x86\').weight().qscheme)  --> torch.per_channel_symmetric',
  pt = 'torch.quantization.default_qconfig, torch.quantization.default_per_channel_qconfig, torch.quantization.default_dynamic_qconfig, torch.quantization.per_channel_dynamic_qconfig, torch.quantization.default_qat_qconfig, torch.ao.quantization.qconfig.default_dynamic_qat_qconfig, torch.quantization.default_weight_only_qconfig, torch.quantization.default_activation_only_qconfig, torch.quantization.get_default_qconfig, torch.quantization.get_default_qat_qconfig' }

doc.section 'Fake quantization'
doc { unchecked_args = true, 'torch.quantization.FakeQuantize({observer=MovingAverageMinMaxObserver, quant_min=, quant_max=, ...observer options}) -> Module',
  'torch.quantization.FakeQuantize:calculate_qparams() -> scales, zero_points',
  'torch.quantization.FakeQuantize:enable_fake_quant([enabled])', 'torch.quantization.FakeQuantize:disable_fake_quant()',
  'torch.quantization.FakeQuantize:enable_observer([enabled])', 'torch.quantization.FakeQuantize:disable_observer()',
  'torch.quantization.FakeQuantize:with_args({...}) -> factory',
  does = 'PyTorch\'s FakeQuantize: observes its input (while the observer is on), then fake-quantizes it with the observer\'s qparams (while fake quant is on); the gradient is the straight-through estimator\'s.',
  ex = 'local fq = torch.quantization.FakeQuantize()\nprint(fq(torch.tensor({0.0, 1.0})))  --> tensor([0., 1.])',
  pt = 'torch.quantization.FakeQuantize, torch.quantization.FakeQuantize.calculate_qparams, torch.quantization.FakeQuantize.enable_fake_quant, torch.quantization.FakeQuantize.disable_fake_quant, torch.quantization.FakeQuantize.enable_observer, torch.quantization.FakeQuantize.disable_observer' }
doc { 'torch.quantization.default_fake_quant', 'torch.quantization.default_weight_fake_quant',
  'torch.quantization.default_per_channel_weight_fake_quant', 'torch.quantization.default_dynamic_fake_quant',
  does = 'PyTorch 1.13\'s default FakeQuantize factories.',
  pt = 'torch.quantization.default_fake_quant, torch.quantization.default_weight_fake_quant, torch.quantization.default_per_channel_weight_fake_quant, torch.ao.quantization.fake_quantize.default_dynamic_fake_quant',
  ex = 'print(torch.quantization.default_weight_fake_quant().quant_min)  --> -128' }
doc { 'torch.quantization.enable_fake_quant(module)', 'torch.quantization.disable_fake_quant(module)',
  'torch.quantization.enable_observer(module)', 'torch.quantization.disable_observer(module)',
  does = 'For model:apply(...): turn a FakeQuantize\'s fake quantization or observer on or off (other modules untouched).',
  ex = 'local fq = torch.quantization.FakeQuantize()\nnn.Sequential(fq):apply(torch.quantization.disable_observer)\nprint(fq.observer_enabled[1]:item())  --> 0' }

doc.section 'Workflows'
doc { 'torch.quantization.quantize_dynamic(model[, qconfig_spec][, dtype=torch.qint8][, {mapping=, inplace=false}]) -> Module',
  does = 'Dynamic quantization, as PyTorch\'s: the nn.Linear and nn.LSTM layers named by qconfig_spec (an array of classes, or a table {class or name = qconfig}; nil: both) get int8 weights; their inputs are quantized to uint8 on the fly and the product is the int8 one (vpdpbusd where the CPU has AVX512-VNNI). Float in, float out. A copy unless inplace.',
  ex = 'local m = nn.Sequential(nn.Linear(4, 2))\nprint(torch.quantization.quantize_dynamic(m, {nn.Linear}, torch.qint8)[1])  --> DynamicQuantizedLinear(in_features=4, out_features=2, dtype=torch.qint8, qscheme=torch.per_tensor_affine)' }
doc { 'torch.quantization.prepare(model[, {inplace=false, qconfig_dict=, allow_list=, observer_non_leaf_module_list=}]) -> Module',
  'torch.quantization.convert(model[, {mapping=, inplace=false, remove_qconfig=true}]) -> Module',
  'torch.quantization.quantize(model, run_fn, run_args[, {mapping=, inplace=}]) -> Module',
  'torch.quantization.propagate_qconfig_(model[, qconfig_dict])',
  does = 'Static post-training quantization, as PyTorch\'s eager mode: prepare attaches observers after the modules that have a qconfig (their children inherit it); run the model on calibration data; convert swaps each observed module for its quantized one (QuantStub -> Quantize, Linear -> QuantizedLinear, Conv2d -> QuantizedConv2d, the fused LinearReLU / ConvReLU2d, FloatFunctional -> QFunctional, DeQuantStub -> DeQuantize). The model runs on quantized tensors between the stubs; ReLU, max and average pools, Flatten and Dropout take them as they are.',
  ex = 'local Q = torch.quantization\nlocal m = nn.Sequential(Q.QuantStub(), nn.Linear(2, 2), Q.DeQuantStub()):eval()\nm.qconfig = Q.default_qconfig\nlocal p = Q.prepare(m)\np(torch.randn(4, 2))\nprint(Q.convert(p)[2]:_get_name())  --> QuantizedLinear' }
doc { 'torch.quantization.prepare_qat(model[, {mapping=, inplace=false}]) -> Module',
  does = 'Quantization-aware training: Linear / Conv2d and the fused modules swapped for their QAT twins (fake-quantized weights) and fake quants after them; train, then model:eval() and convert.',
  ex = 'local Q = torch.quantization\nlocal m = nn.Sequential(nn.Linear(2, 2))\nm.qconfig = Q.get_default_qat_qconfig(\'x86\')\nprint(torch.typename(Q.prepare_qat(m)[1]))  --> nn.qat.Linear' }
doc { 'torch.quantization.fuse_modules(model, names[, {inplace=false}]) -> Module',
  'torch.quantization.fuse_modules_qat(model, names[, {inplace=false}]) -> Module',
  does = 'Fuses runs of modules given by name ({\'conv\', \'bn\', \'relu\'}, or an array of such runs): conv-bn(-relu) with the batch norm folded into the convolution (eval; fuse_modules_qat keeps ConvBn2d / ConvBnReLU2d for training), conv-relu, linear-relu, linear-bn, bn-relu; the first becomes the fused module, the others nn.Identity.',
  ex = 'local m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())\nprint(torch.quantization.fuse_modules(m, {\'0\', \'1\'})[1]:_get_name())  --> LinearReLU',
  pt = 'torch.quantization.fuse_modules, torch.ao.quantization.fuse_modules_qat' }
doc { 'torch.quantization.get_default_static_quant_module_mappings() -> table',
  'torch.quantization.get_default_qat_module_mappings() -> table',
  'torch.quantization.get_default_dynamic_quant_module_mappings() -> table',
  'torch.quantization.get_default_qconfig_propagation_list() -> table',
  does = 'The class-to-class tables convert and prepare_qat use ({[nn.Linear] = nn.quantized.Linear, ...}), and the set of classes prepare observes.',
  ex = 'print(torch.quantization.get_default_dynamic_quant_module_mappings()[nn.Linear] == nn.quantized.dynamic.Linear)  --> true' }
doc { 'torch.quantization.QuantStub([qconfig]) -> Module', 'torch.quantization.DeQuantStub([qconfig]) -> Module',
  'torch.quantization.QuantWrapper(module) -> Module',
  does = 'Where quantized computation starts and ends in a model (identity before convert; Quantize / DeQuantize after). QuantWrapper puts a module between the two.',
  ex = 'print(torch.quantization.QuantWrapper(nn.Identity()))  --> QuantWrapper( (quant): QuantStub() (dequant): DeQuantStub() (module): Identity() )' }

doc.section 'Quantized modules'
doc { unchecked_args = true, 'nn.quantized.Quantize(scale, zero_point, dtype) -> Module', 'nn.quantized.DeQuantize() -> Module',
  'nn.quantized.Quantize:from_float(mod) -> Module', 'nn.quantized.DeQuantize:from_float(mod) -> Module',
  does = 'Quantize a float tensor to a quantized one (and back).',
  ex = 'print(nn.quantized.Quantize(0.5, 0, torch.quint8)(torch.tensor({1.0})):int_repr())  --> tensor([2], dtype=torch.uint8)',
  pt = 'torch.nn.quantized.Quantize, torch.nn.quantized.DeQuantize' }
doc { unchecked_args = true, 'nn.quantized.Linear(in_features, out_features[, bias=true][, dtype]) -> Module',
  'nn.quantized.Linear:weight() -> quantized tensor', 'nn.quantized.Linear:bias() -> Tensor',
  'nn.quantized.Linear:set_weight_bias(weight, bias)', 'nn.quantized.Linear:from_float(mod) -> Module',
  'nn.intrinsic.quantized.LinearReLU(in_features, out_features) -> Module', 'nn.intrinsic.quantized.LinearReLU:from_float(mod) -> Module',
  does = 'The quantized linear layer (QuantizedLinear, QuantizedLinearReLU): quint8 in, quint8 out (scale, zero_point), int8 weight, float bias; the product on vpdpbusd where the CPU has AVX512-VNNI. Its state_dict has PyTorch\'s keys (scale, zero_point, _packed_params.dtype, _packed_params._packed_params = {weight, bias}).',
  ex = 'local l = nn.quantized.Linear(2, 1)\nprint(l)  --> QuantizedLinear(in_features=2, out_features=1, scale=1.0, zero_point=0, qscheme=torch.per_tensor_affine)',
  pt = 'torch.nn.quantized.Linear, torch.nn.intrinsic.quantized.LinearReLU' }
doc { unchecked_args = true, 'nn.quantized.Conv2d(in_channels, out_channels, kernel_size[, {stride=, padding=, dilation=, groups=1, bias=, padding_mode=}]) -> Module',
  'nn.quantized.Conv2d:weight() -> quantized tensor', 'nn.quantized.Conv2d:bias() -> Tensor',
  'nn.quantized.Conv2d:set_weight_bias(weight, bias)', 'nn.quantized.Conv2d:from_float(mod) -> Module',
  'nn.intrinsic.quantized.ConvReLU2d(in_channels, out_channels, kernel_size[, {...}]) -> Module',
  'nn.intrinsic.quantized.ConvReLU2d:from_float(mod) -> Module',
  does = 'The quantized 2-D convolution (QuantizedConv2d, QuantizedConvReLU2d): uint8 im2col with the zero point as padding, then the int8 product; groups 1.',
  ex = 'print(nn.quantized.Conv2d(1, 2, 3))  --> QuantizedConv2d(1, 2, kernel_size=(3, 3), stride=(1, 1), scale=1.0, zero_point=0)',
  pt = 'torch.nn.quantized.Conv2d, torch.nn.intrinsic.quantized.ConvReLU2d' }
doc { unchecked_args = true, 'nn.quantized.FloatFunctional() -> Module', 'nn.quantized.FloatFunctional:add(x, y)',
  'nn.quantized.FloatFunctional:add_scalar(x, s)', 'nn.quantized.FloatFunctional:mul(x, y)',
  'nn.quantized.FloatFunctional:mul_scalar(x, s)', 'nn.quantized.FloatFunctional:cat(xs[, dim])',
  'nn.quantized.FloatFunctional:add_relu(x, y)', 'nn.quantized.QFunctional() -> Module',
  'nn.quantized.QFunctional:add(x, y)', 'nn.quantized.QFunctional:add_scalar(x, s)', 'nn.quantized.QFunctional:mul(x, y)',
  'nn.quantized.QFunctional:mul_scalar(x, s)', 'nn.quantized.QFunctional:cat(xs[, dim])',
  'nn.quantized.QFunctional:add_relu(x, y)', 'nn.quantized.QFunctional:from_float(mod) -> Module',
  does = 'Adds, multiplies and concatenations a model can observe (FloatFunctional, float) and run quantized after convert (QFunctional: requantized with its scale and zero point).',
  ex = 'local f = nn.quantized.FloatFunctional()\nprint(f:add(torch.ones(1), torch.ones(1)))  --> tensor([2.])',
  pt = 'torch.nn.quantized.FloatFunctional, torch.nn.quantized.QFunctional' }
doc { unchecked_args = true, 'nn.quantized.dynamic.Linear(in_features, out_features[, bias][, dtype]) -> Module',
  'nn.quantized.dynamic.Linear:from_float(mod) -> Module', 'nn.quantized.dynamic.LSTM(mod) -> Module',
  'nn.quantized.dynamic.LSTM:from_float(mod) -> Module',
  does = 'The dynamically quantized layers (DynamicQuantizedLinear, DynamicQuantizedLSTM: each layer\'s projections through the int8 product, the gates as the float LSTM\'s); float in, float out.',
  ex = 'print(nn.quantized.dynamic.Linear(3, 2))  --> DynamicQuantizedLinear(in_features=3, out_features=2, dtype=torch.qint8, qscheme=torch.per_tensor_affine)',
  pt = 'torch.nn.quantized.dynamic.Linear, torch.nn.quantized.dynamic.LSTM' }
doc { 'nn.intrinsic.LinearReLU(linear, relu) -> Module', 'nn.intrinsic.ConvReLU2d(conv, relu) -> Module',
  'nn.intrinsic.ConvBn2d(conv, bn) -> Module', 'nn.intrinsic.ConvBnReLU2d(conv, bn, relu) -> Module',
  'nn.intrinsic.BNReLU2d(bn, relu) -> Module', 'nn.intrinsic.LinearBn1d(linear, bn) -> Module',
  does = 'The fused float modules fuse_modules makes (Sequentials of their parts).',
  ex = 'print(nn.intrinsic.LinearReLU(nn.Linear(1, 1), nn.ReLU())[2])  --> ReLU()',
  pt = 'torch.nn.intrinsic.LinearReLU, torch.nn.intrinsic.ConvReLU2d, torch.nn.intrinsic.ConvBn2d, torch.nn.intrinsic.ConvBnReLU2d, torch.nn.intrinsic.BNReLU2d, torch.nn.intrinsic.LinearBn1d' }
doc { unchecked_args = true, 'nn.qat.Linear(in_features, out_features, bias, qconfig) -> Module', 'nn.qat.Linear:from_float(mod) -> Module',
  'nn.qat.Linear:to_float() -> Module', 'nn.qat.Conv2d(in_channels, out_channels, kernel_size, options, qconfig) -> Module',
  'nn.qat.Conv2d:from_float(mod) -> Module', 'nn.intrinsic.qat.LinearReLU(in_features, out_features, bias, qconfig) -> Module',
  'nn.intrinsic.qat.LinearReLU:from_float(mod) -> Module',
  'nn.intrinsic.qat.ConvReLU2d(in_channels, out_channels, kernel_size, options, qconfig) -> Module',
  'nn.intrinsic.qat.ConvReLU2d:from_float(mod) -> Module',
  does = 'The QAT layers: their weight goes through weight_fake_quant (the qconfig\'s weight factory) in forward.',
  ex = 'local l = nn.qat.Linear(2, 2, true, torch.quantization.default_qat_qconfig)\nprint(torch.typename(l.weight_fake_quant))  --> torch.ao.quantization.FakeQuantize',
  pt = 'torch.nn.qat.Linear, torch.nn.qat.Conv2d, torch.nn.intrinsic.qat.LinearReLU, torch.nn.intrinsic.qat.ConvReLU2d' }

-- torch.ao.nn.* are the same classes (PyTorch 1.13 has both spellings)
for _, n in ipairs({ 'quantized.Quantize', 'quantized.DeQuantize', 'quantized.Linear', 'quantized.Conv2d',
  'quantized.FloatFunctional', 'quantized.QFunctional', 'quantized.dynamic.Linear', 'quantized.dynamic.LSTM',
  'intrinsic.LinearReLU', 'intrinsic.ConvReLU2d', 'intrinsic.ConvBn2d', 'intrinsic.ConvBnReLU2d', 'intrinsic.BNReLU2d',
  'intrinsic.LinearBn1d', 'intrinsic.quantized.LinearReLU', 'intrinsic.quantized.ConvReLU2d', 'qat.Linear', 'qat.Conv2d',
  'intrinsic.qat.LinearReLU', 'intrinsic.qat.ConvReLU2d' }) do
  doc.alias('torch.ao.nn.' .. n, 'nn.' .. n)
end
