#!/bin/sh
# bench/venv.sh: today's PyTorch from the Python package index in bench/.venv, for bench/run.lua's
# second PyTorch column. On demand only: nothing in the build, the tests or the library uses it.
#
# PyPI's torch wheel for Linux x86-64 is its CUDA build, and `import torch` needs the nvidia-* CUDA
# libraries it depends on even on a machine without a GPU (libtorch_cuda.so links them: installed with
# --no-deps it stops at "libcufile.so.0: cannot open shared object file"); the CPU-only wheels live on
# PyTorch's own index, which is not used here. So the plain `pip install torch` is the smallest way that
# works from PyPI alone: 5.4 GB in bench/.venv for torch 2.15.0+cu132 (1.2 GB torch, 3.0 GB nvidia-*;
# 2026-11). The benchmark runs it on the CPU with the same thread settings as Debian's PyTorch 1.13. Prints where it failed and exits 1
# when the index cannot be reached; bench/run.lua then says so and keeps the 1.13 column alone.
here=$(cd "$(dirname "$0")" && pwd)
venv="$here/.venv"
failed="$here/.venv-failed"
fail() {
  echo "bench/venv.sh: $1" >&2
  echo "$1 ($(date -u +%Y-%m-%d))" >"$failed"
  exit 1
}
py=${BENCH_VENV_PYTHON:-/usr/bin/python3}
# (and ONNX Runtime, for bench/workloads/program_lenet.lua's comparison: bench/onnx_runtime.py)
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import torch' >/dev/null 2>&1; then
  "$venv/bin/python" -c 'import onnxruntime' >/dev/null 2>&1 ||
    "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet onnxruntime ||
    echo "bench/venv.sh: pip install onnxruntime failed (no ONNX Runtime row)" >&2
  "$venv/bin/python" -c 'import torch; print("bench/.venv: torch", torch.__version__)'
  exit 0
fi
"$py" -m venv "$venv" || fail "could not create $venv with $py -m venv (Debian: apt-get install python3-venv)"
"$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet torch numpy onnxruntime ||
  fail "pip install torch from the Python package index failed here (no network, or no wheel for this Python)"
"$venv/bin/python" -c 'import torch' || fail "torch installed in $venv but does not import"
rm -f "$failed"
"$venv/bin/python" -c 'import torch; print("bench/.venv: torch", torch.__version__)'
