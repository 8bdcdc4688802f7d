#!/usr/bin/env bash
# One short device lease's hardware check, every step bounded in time so that the results come
# back even when a step runs long (the lease is ~15 minutes of device time, starts included).
# tools/gpu_check.sh is the unbounded version for a GPU of one's own.
#
#   TESTS_S=220 TABLE_S=140 tools/gpu_lease.sh [pytest selection ...]
#
# In parallel: tests/cuda on the GPU (PTX-only files left out: CI runs them), tools/cuda_audit.py,
# examples/train_mlp.py --device cuda; then, on the idle GPU, benchmarks/gpu_table.py.
# Logs go to $OUT (the device machine's output folder), else ./gpu_lease_out. pytest is stopped
# with SIGINT so that it still prints its summary of what ran.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu_lease_out}"
mkdir -p "$out"
unset NUMBA_ENABLE_CUDASIM
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
tests_s="${TESTS_S:-220}"
table_s="${TABLE_S:-140}"
workers="${WORKERS:-13}"
sel=("$@")
# by default without the 138 extra gpu-marked random programs: each compiles its own kernels
# (~20 s per program on an H200), more than a lease holds; a selection given as arguments wins
[ ${#sel[@]} -eq 0 ] && sel=(tests/cuda --ignore-glob='*_ptx.py' -k "not many_random_programs")

t0=$(date +%s)
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python -c "import json; from jitgrad.utils.gpu_check import versions; print(json.dumps(versions()))"
} > "$out/env.txt" 2>&1

per_test=()
python -c "import pytest_timeout" 2>/dev/null && per_test=(--timeout=150)
python -c "import xdist" 2>/dev/null && per_test+=(-n "$workers")
timeout -s INT -k 20 "$tests_s" python -m pytest -q -p no:cacheprovider "${sel[@]}" \
    "${per_test[@]}" -rfE --tb=short --durations=30 > "$out/tests.log" 2>&1 &
tests_pid=$!
if [ -z "${SKIP_AUDIT:-}" ]; then
    timeout -s INT -k 10 "$tests_s" python tools/cuda_audit.py --verbose > "$out/audit.txt" 2>&1 &
fi
if [ -z "${SKIP_EXAMPLE:-}" ]; then
    timeout "$tests_s" python examples/train_mlp.py --device cuda --no-progress \
        --out /tmp/example_cuda > "$out/example_cuda.log" 2>&1 &
fi
wait
t1=$(date +%s)

if [ "$table_s" -gt 0 ]; then
    timeout -s INT -k 10 "$table_s" python benchmarks/gpu_table.py --reps "${REPS:-10}" \
        --no-example ${TABLE_ONLY:+--only $TABLE_ONLY} > "$out/table.txt" 2>&1
fi
t2=$(date +%s)

# a log of many long failures could pass the 16 MB a returned file may have
[ "$(stat -c %s "$out/tests.log")" -gt 12000000 ] && gzip "$out/tests.log"
{
    echo "tests+audit+example: $((t1 - t0)) s; table: $((t2 - t1)) s"
    zgrep -E '^(FAILED|ERROR)' "$out"/tests.log* | cut -c1-200 | head -60
    zcat -f "$out"/tests.log* | tail -n 3
    grep -E '^test accuracy|Error|error' "$out/example_cuda.log" | tail -n 3
    tail -n 25 "$out/table.txt" 2>/dev/null
} | tee "$out/summary.txt"
