# Writes the ONNX files spec/onnx_spec.lua reads (spec/support/onnx/*.onnx), with PyTorch 1.13's own
# exporter (/usr/bin/python3; python3-onnx checks each file):
#   cd spec/support/onnx && /usr/bin/python3 ../onnx_record.py
# <model>.onnx: torch.onnx.export(model.eval(), x, opset_version=...); <model>_io.pt: {'input': x,
# 'output': model(x)} (torch.save, which moontorch reads). Models: the MLP, LeNet-5, a ResNet basic
# block (batch norms with trained-looking statistics: the exporter folds them into the convolutions),
# a TransformerEncoderLayer (opset 14: attention spelled with MatMul, Softmax, Reshape, Shape, Gather,
# Slice ...) and a small CNN with the other ops (BatchNormalization kept: training=TrainingMode.PRESERVE
# is not used; an unfolded batch norm comes from an nn.BatchNorm1d after a Linear), average pooling,
# GELU, LayerNorm at opset 17, softmax, concatenation; an LSTM (2 layers, bidirectional) and a GRU
# (batch first), opset 14.
# With names (cd spec/support/onnx && /usr/bin/python3 ../onnx_record.py lstm gru) only those models are
# written (the others' files stay as they are).
import sys
import onnx, torch
import torch.nn as nn

ONLY = set(sys.argv[1:])

class Recurrent(nn.Module):
    # an LSTM or GRU: its last step's output beside the last layer's final hidden state (PyTorch's
    # exporter writes ONNX's LSTM/GRU op, both outputs used)
    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        out, h = self.rnn(x)
        if isinstance(h, tuple):
            h = h[0]
        last = out[:, -1] if self.rnn.batch_first else out[-1]
        return torch.cat([last, h[-1]], 1)

class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU()

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + x)

class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.pool = nn.AvgPool2d(2)
        self.fc = nn.Linear(16, 8)
        self.bn = nn.BatchNorm1d(8)
        self.norm = nn.LayerNorm(8)
        self.gelu = nn.GELU()

    def forward(self, x):
        y = self.pool(torch.sigmoid(self.conv(x)))           # (N, 4, 2, 2)
        g = nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)  # GlobalAveragePool
        h = self.norm(self.gelu(self.bn(self.fc(y.flatten(1)))))
        return torch.softmax(torch.cat([h, g], 1), dim=-1)

def record(name, model, x, opset):
    if ONLY and name not in ONLY:
        return
    model.eval()
    torch.onnx.export(model, (x,), name + '.onnx', opset_version=opset, input_names=['input'],
                      output_names=['output'])
    onnx.checker.check_model(onnx.load(name + '.onnx'))
    with torch.no_grad():
        y = model(x)
    torch.save({'input': x, 'output': y}, name + '_io.pt')
    print(name, sorted({n.op_type for n in onnx.load(name + '.onnx').graph.node}))

def trained_bn(*bns):
    for bn in bns:
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 1.5)
        with torch.no_grad():
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.2, 0.2)

torch.manual_seed(0)
record('mlp', nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4)), torch.randn(5, 6), 13)
torch.manual_seed(1)
record('lenet', nn.Sequential(
    nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10)),
    torch.randn(2, 1, 28, 28), 13)
torch.manual_seed(2)
b = Block(4)
trained_bn(b.bn1, b.bn2)
record('resblock', b, torch.randn(2, 4, 8, 8), 13)
torch.manual_seed(3)
record('encoder', nn.TransformerEncoderLayer(8, 2, dim_feedforward=16), torch.randn(4, 2, 8), 14)
torch.manual_seed(4)
mx = Mixed()
trained_bn(mx.bn)
record('mixed', mx, torch.randn(2, 3, 8, 8), 17)

torch.manual_seed(5)
record('lstm', Recurrent(nn.LSTM(4, 5, num_layers=2, bidirectional=True)), torch.randn(3, 2, 4), 14)
torch.manual_seed(6)
record('gru', Recurrent(nn.GRU(4, 5, batch_first=True)), torch.randn(2, 3, 4), 14)
if ONLY:
    sys.exit(0)

# Files an ONNX reader must refuse, each with a message (made with onnx.helper; not checked)
from onnx import helper, TensorProto

def graph_model(nodes, inits=(), name='bad'):
    x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info('y', TensorProto.FLOAT, [2, 3])
    g = helper.make_graph(nodes, 'g', [x], [y], initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])
    onnx.save(m, name + '.onnx')

graph_model([helper.make_node('Einsum', ['x'], ['y'], name='the_einsum', equation='ij->ij')], name='bad_op')
graph_model([helper.make_node('FusedThing', ['x'], ['y'], name='fused', domain='com.example')], name='bad_domain')
sub = helper.make_graph([helper.make_node('Identity', ['x'], ['z'])], 'branch', [],
                        [helper.make_tensor_value_info('z', TensorProto.FLOAT, [2, 3])])
graph_model([helper.make_node('If', ['x'], ['y'], name='branchy', then_branch=sub, else_branch=sub)], name='bad_if')
ext = helper.make_tensor('w', TensorProto.FLOAT, [2, 3], [0.0] * 6)
ext.ClearField('float_data')
ext.data_location = TensorProto.EXTERNAL
e = ext.external_data.add()
e.key, e.value = 'location', 'weights.bin'
graph_model([helper.make_node('Add', ['x', 'w'], ['y'])], [ext], name='bad_external')
short = helper.make_tensor('w', TensorProto.FLOAT, [2, 3], b'\0' * 24, raw=True)
short.raw_data = b'\0' * 20
graph_model([helper.make_node('Add', ['x', 'w'], ['y'])], [short], name='bad_raw_size')
strs = helper.make_tensor('w', TensorProto.STRING, [1], [b'hello'])
graph_model([helper.make_node('Add', ['x', 'w'], ['y'])], [strs], name='bad_string')
graph_model([helper.make_node('Add', ['x', 'nowhere'], ['y'], name='dangling')], name='bad_dangling')
