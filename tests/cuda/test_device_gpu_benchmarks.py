"""The GPU benchmark code (benchmarks/_gpu_workloads.py, gpu_table.py) checked without a GPU:

* every jitgrad workload of issue 12's table, built at test size on the simulator, computes what
  the same PyTorch workload computes on the CPU (same inputs and initial weights): the table's
  cross-library check compares like with like;
* the table's timing and formatting code runs over those workloads;
* without a GPU the script stops with one line and exit status 2.

Timings themselves need a GPU: ``python benchmarks/gpu_table.py``.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_gpu_benchmarks.py
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
try:
    from benchmarks import _gpu_workloads as W
    from benchmarks import gpu_table
finally:
    sys.path.remove(str(ROOT))

# The table's rows at simulator size (same builders, smaller arguments).
SMALL = {
    "one elementwise op": {"n": 40},
    "same, recording a node": {"n": 40, "record": True},
    "7-op arithmetic chain fwd+bwd, 16M": {"which": "arith", "n": 40},
    "same, 1M elements": {"which": "arith", "n": 33},
    "8-op transcendental chain": {"which": "chain", "n": 40},
    "MLP 784-512-512-10": {"sizes": (7, 5, 5, 3), "batch": 4},
    "MLP 1024-4096-4096-1024": {"sizes": (6, 8, 4), "batch": 5},
    "matmul": {"m": 6, "k": 4, "n": 5},
    "100 scalar ops": {"n_ops": 12},
}


def _row(prefix):
    (row,) = [r for r in W.ROWS if r[0].startswith(prefix)]
    return row


@pytest.fixture
def small_workloads(device, monkeypatch):
    """``build(prefix, impl)``: jitgrad on the simulator's cuda, PyTorch on the CPU."""
    torch = pytest.importorskip("torch")
    import jitgrad

    def build(prefix, impl):
        _, builder, _, _, _ = _row(prefix)
        if impl == "torch":
            monkeypatch.setattr(W, "gpu_lib", lambda impl: torch)
            monkeypatch.setattr(W, "DEVICE", "cpu")
        else:
            monkeypatch.setattr(W, "gpu_lib", lambda impl: jitgrad)
            monkeypatch.setattr(W, "DEVICE", "cuda")
        return builder(impl, **SMALL[prefix])

    return build


@pytest.mark.parametrize("prefix", list(SMALL))
def test_workloads_compute_the_same_as_pytorch(small_workloads, prefix):
    label, _, _, impls, rtol = _row(prefix)
    assert impls[:2] == ("jitgrad", "torch")
    ours, theirs = small_workloads(prefix, "jitgrad"), small_workloads(prefix, "torch")
    ours.fn()
    theirs.fn()
    assert gpu_table.rel_diff(ours.result(), theirs.result()) <= rtol, label
    ours.fn()  # a second run (gradients reset, optimizer state reused) still works
    assert ours.inner >= 1


def test_table_code_runs_over_workloads(small_workloads, monkeypatch):
    import jitgrad
    works = {"jitgrad": small_workloads("MLP 784-512-512-10", "jitgrad"),
             "torch": small_workloads("MLP 784-512-512-10", "torch")}
    monkeypatch.setattr(W, "synchronize", lambda impl: jitgrad.cuda.synchronize())
    times, allocs = gpu_table.measure_row(works, reps=3, warmup=2)
    assert set(times) == {"jitgrad", "torch"} and all(t > 0 for t in times.values())
    assert allocs == 0  # warm: every block of a step comes from the allocator's cache
    text = gpu_table.table([("MLP step", times, "ok (1e-07)"), ("skipped row", {}, "skipped")],
                           (12.5, 3.25))
    lines = text.splitlines()
    assert lines[0] == "| workload (float32) | jitgrad | PyTorch | ratio | check |"
    assert lines[2].startswith("| MLP step | ") and lines[2].endswith(" | ok (1e-07) |")
    assert f"{times['jitgrad'] / times['torch']:.1f}x" in lines[2]
    assert lines[4] == ("| `examples/train_mlp.py --device cuda` training | 12.5 s | "
                        "(CPU path: 3.2 s) | | |")
    assert gpu_table.format_time(237e-6) == "237 us"
    assert gpu_table.format_time(4.15e-3) == "4.15 ms"


def test_script_without_a_gpu_says_so_in_one_line(cuda_state):
    if cuda_state[2]:
        pytest.skip("this machine has a GPU: the script would run the whole table")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_table.py")], env=env,
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1
    assert r.stderr.startswith("gpu_table.py needs an NVIDIA GPU: ")


def test_raw_numba_launch_row_multiplies(device, monkeypatch):
    from jitgrad.backends.numba_cuda_compat import import_numba_cuda
    monkeypatch.setattr(W, "gpu_lib", lambda impl: import_numba_cuda())
    work = W.raw_numba_launch(n=40)
    work.fn()
    a, b = W._arrays(40, 40)
    assert (work.result() == a * b).all()
