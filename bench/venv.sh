#!/bin/sh
# bench/venv.sh: today's PyTorch from the Python package index in bench/.venv, for bench/run.lua's
# second PyTorch column. On demand only: nothing in the build, the tests or the library uses it.
#
# PyPI's torch wheel for Linux x86-64 is its CUDA build: the wheel (~900 MB) and the nvidia-* CUDA
# libraries it depends on (~3 GB more) are all needed for `import torch` to succeed, even on a machine
# without a GPU (libtorch_cuda.so links them; the CPU-only wheels live on PyTorch's own index, which is
# not used here). That is the smallest way that works from PyPI alone; the benchmark runs it on the
# CPU with the same thread settings as Debian's PyTorch 1.13. Prints where it failed and exits 1
# when the index cannot be reached; bench/run.lua then says so and keeps the 1.13 column alone.
set -e
here=$(cd "$(dirname "$0")" && pwd)
venv="$here/.venv"
py=${BENCH_VENV_PYTHON:-/usr/bin/python3}
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import torch' >/dev/null 2>&1; then
  "$venv/bin/python" -c 'import torch; print("bench/.venv: torch", torch.__version__)'
  exit 0
fi
if ! "$py" -m venv "$venv"; then
  echo "bench/venv.sh: could not create $venv with $py -m venv (Debian: apt-get install python3-venv)" >&2
  exit 1
fi
if ! "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet torch numpy; then
  echo "bench/venv.sh: pip install torch from the Python package index failed (no network, or no wheel for this Python)" >&2
  exit 1
fi
"$venv/bin/python" -c 'import torch; print("bench/.venv: torch", torch.__version__)'
