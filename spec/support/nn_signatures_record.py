"""Records PyTorch 1.13's constructor signatures of the nn modules for spec/nn_ctor_options_spec.lua:
    /usr/bin/python3 spec/support/nn_signatures_record.py > spec/support/nn_signatures.lua
For every class of torch.nn that is a Module: its __init__ parameters in order, whether each is
required, and its default where Lua can spell it (numbers, booleans, strings, tuples of numbers);
None and other defaults are left out (nil). Names beginning with '_' are PyTorch's internals.
RNN, LSTM and GRU take *args and **kwargs: theirs are RNNBase's without `mode` (RNN also takes
nonlinearity, after num_layers; proj_size is LSTM's only), as their documentation lists them."""
import inspect, math
import torch.nn as nn

def lua(v):
    if isinstance(v, bool): return 'true' if v else 'false'
    if isinstance(v, int): return str(v)
    if isinstance(v, float):
        if math.isinf(v): return 'math.huge' if v > 0 else '-math.huge'
        return repr(v)
    if isinstance(v, str): return repr(v)
    if isinstance(v, tuple) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        return '{ ' + ', '.join(lua(x) for x in v) + ' }'
    return None

print("-- PyTorch 1.13's nn module constructor signatures, written by")
print('--   /usr/bin/python3 spec/support/nn_signatures_record.py > spec/support/nn_signatures.lua')
print('-- Do not edit.')
print('return {')
for name in sorted(dir(nn)):
    c = getattr(nn, name)
    if not (inspect.isclass(c) and issubclass(c, nn.Module)): continue
    sig = inspect.signature(c.__init__)
    params = []
    plist = list(sig.parameters.values())[1:]
    if name in ('RNN', 'LSTM', 'GRU'):
        base = [p for p in list(inspect.signature(nn.RNNBase.__init__).parameters.values())[1:] if p.name != 'mode']
        if name == 'RNN':
            base.insert(3, inspect.Parameter('nonlinearity', inspect.Parameter.POSITIONAL_OR_KEYWORD, default='tanh'))
        if name != 'LSTM': base = [p for p in base if p.name != 'proj_size']
        plist = base
    for p in plist:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name.startswith('_'): continue
        if p.default is p.empty:
            params.append("{ %r, required = true }" % p.name)
        else:
            d = lua(p.default)
            params.append("{ %r%s }" % (p.name, '' if d is None else ', default = ' + d))
    print('  %s = { %s },' % (name, ', '.join(params)))
print('}')
