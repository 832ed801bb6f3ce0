# Writes the PyTorch files spec/pytorch_files_spec.lua reads (spec/support/pytorch/*.pt), with
# PyTorch 1.13 (/usr/bin/python3):
#   cd spec/support/pytorch && /usr/bin/python3 ../pytorch_record.py
# <model>.pt: the model's state_dict as users save it (torch.save(model.state_dict(), path), the zip
# format); <model>_legacy.pt: the same in the legacy format (_use_new_zipfile_serialization=False);
# (LeNet's state_dict, 180 KB, only in the zip format.)
# <model>_io.pt: {'input': x, 'output': y, ...}, the model's outputs in eval mode. Models: an MLP,
# the demo's LeNet-5, a 2-layer LSTM, a TransformerEncoderLayer. values.pt / values_legacy.pt hold
# every kind of value the reader turns into Lua (and the Lua side checks each). evil*.pt are
# hostile: a pickle whose object asks for os.system, as an attacker would write one (it would
# create /tmp/moontorch_pt_evil_marker if it ever ran); module.pt is a whole nn.Linear (classes of
# torch.nn), script.pt a TorchScript archive (code).
import collections, os, sys, torch
import torch.nn as nn

def save_both(obj, name, legacy=True):
    torch.save(obj, name + '.pt')
    if legacy:
        torch.save(obj, name + '_legacy.pt', _use_new_zipfile_serialization=False)

def model(name, m, inputs, run, legacy=True):
    m.eval()
    save_both(m.state_dict(), name, legacy)
    with torch.no_grad():
        out = run(m, *inputs)
    io = {'input': inputs[0]}
    if len(inputs) > 1:
        io['extra'] = list(inputs[1:])
    io['output'] = out
    torch.save(io, name + '_io.pt')

torch.manual_seed(0)
model('mlp', nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4)), [torch.randn(5, 6)],
      lambda m, x: m(x))
torch.manual_seed(1)
lenet = nn.Sequential(
    nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
model('lenet', lenet, [torch.randn(2, 1, 28, 28)], lambda m, x: m(x), legacy=False)  # (180 KB: once)
torch.manual_seed(2)
def run_lstm(m, x, h0, c0):
    out, (h, c) = m(x, (h0, c0))
    return [out, h, c]
model('lstm', nn.LSTM(4, 5, num_layers=2), [torch.randn(3, 2, 4), torch.randn(2, 2, 5), torch.randn(2, 2, 5)],
      run_lstm)
torch.manual_seed(3)
model('transformer', nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.1),
      [torch.randn(4, 2, 8)], lambda m, x: m(x))

# every kind of value
base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
values = {
    'f32': torch.tensor([1.5, -2.0]), 'f64': torch.tensor([1.5, -2.0], dtype=torch.float64),
    'f16': torch.tensor([1.5, -2.0], dtype=torch.float16), 'bf16': torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
    'i8': torch.tensor([-3, 7], dtype=torch.int8), 'i16': torch.tensor([-300, 7], dtype=torch.int16),
    'i32': torch.tensor([-70000, 7], dtype=torch.int32), 'i64': torch.tensor([-2**40, 7], dtype=torch.int64),
    'u8': torch.tensor([200, 7], dtype=torch.uint8), 'bool': torch.tensor([True, False]),
    'scalar': torch.tensor(3.25), 'empty': torch.zeros(0, 3),
    'base': base, 'col': base[:, 1], 'tr': base.t(), 'row': base[2],
    'param': nn.Parameter(torch.tensor([1.0, 2.0])), 'frozen': nn.Parameter(torch.tensor([3.0]), requires_grad=False),
    'grad': torch.tensor([4.0]).requires_grad_(),
    'int': 42, 'neg': -7, 'big': 2**40, 'huge': 2**70, 'float': 0.1, 'true': True, 'false': False, 'none': None,
    'str': 'héllo', 'bytes': b'\x00\xffab', 'list': [1, 'two', 3.0, [4]], 'tuple': (1, 2), 'size': torch.Size([2, 3]),
    'set': {5, 6}, 'nested': {'a': {'b': {'c': 1}}}, 'intkeys': {0: 'zero', 1: 'one'},
    'od': collections.OrderedDict([('z', 1), ('a', 2), ('m', 3)]), 'dtype': torch.float16,
    'meta': torch.empty(2, 3, device='meta'),
}
shared = [1, 2]
values['shared1'] = shared
values['shared2'] = shared
save_both(values, 'values')

class Evil:
    def __reduce__(self):
        return (os.system, ('touch /tmp/moontorch_pt_evil_marker',))
save_both({'weights': torch.ones(2), 'payload': Evil()}, 'evil')
torch.save(nn.Linear(2, 2), 'module.pt')  # a whole module: classes of torch.nn
torch.jit.save(torch.jit.script(nn.Linear(2, 2)), 'script.pt')  # TorchScript: code
print('wrote', sorted(f for f in os.listdir('.') if f.endswith('.pt')))
