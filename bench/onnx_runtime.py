# bench/onnx_runtime.py: ONNX Runtime's side of bench/workloads/program_lenet.lua (issue 26). On demand
# only: onnxruntime lives in bench/.venv (bench/venv.sh), never a dependency of the build or the tests.
#   python bench/onnx_runtime.py run FILE.onnx THREADS REPS [INPUT.f32 OUTPUT.f32]
#     times InferenceSession.run of FILE at batch 1 (1x1x28x28 float32) with THREADS intra-op threads,
#     inter-op 1, sequential, and its thread pool not spinning (as moontorch's and PyTorch's threads,
#     OMP_WAIT_POLICY=PASSIVE); best of 5 rounds of REPS runs: "us <microseconds>". With INPUT/OUTPUT
#     (raw float32 files) it runs INPUT and prints "maxdiff <largest difference from OUTPUT>".
#   /usr/bin/python3 bench/onnx_runtime.py export FILE.onnx
#     writes PyTorch 1.13's own torch.onnx.export of the same LeNet-5 (opset 17) to FILE.
import sys
import time


def lenet():
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10)).eval()


def export(path):
    import torch
    torch.onnx.export(lenet(), torch.randn(1, 1, 28, 28), path, opset_version=17,
                      input_names=['input'], output_names=['output'])


def run(path, threads, reps, inp=None, out=None):
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.add_session_config_entry('session.intra_op.allow_spinning', '0')
    s = ort.InferenceSession(path, so, providers=['CPUExecutionProvider'])
    name = s.get_inputs()[0].name
    x = np.random.RandomState(0).randn(1, 1, 28, 28).astype(np.float32)
    if inp:
        x = np.fromfile(inp, dtype=np.float32).reshape(1, 1, 28, 28)
        y = s.run(None, {name: x})[0]
        want = np.fromfile(out, dtype=np.float32).reshape(y.shape)
        print('maxdiff', float(np.abs(y - want).max()))
    for _ in range(100):
        s.run(None, {name: x})
    best = float('inf')
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            s.run(None, {name: x})
        best = min(best, (time.perf_counter() - t0) / reps)
    print('us', best * 1e6)
    print('version', ort.__version__)


if __name__ == '__main__':
    if sys.argv[1] == 'export':
        export(sys.argv[2])
    else:
        run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), *(sys.argv[5:7]))
