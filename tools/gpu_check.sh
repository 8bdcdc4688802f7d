#!/usr/bin/env bash
# The hardware check of issue 11 in one go (docs/cuda.md, "Checking on a real GPU"): versions,
# the whole tests/cuda suite on the GPU (pytest -n auto when pytest-xdist is installed), and
# examples/train_mlp.py on cuda and cpu with the accuracies compared. Logs and summary.txt go to
# $1, else $OUT (the device machine's output folder), else ./gpu_check_out.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu_check_out}}"
shift || true
exec python -m jitgrad.utils.gpu_check --out "$out" "$@"
