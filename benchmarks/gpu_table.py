"""Issue 12's table in one run: jitgrad vs PyTorch on the same GPU, in one process, interleaved,
synchronized, medians. Needs an NVIDIA GPU (exits with one line saying so otherwise)::

    python benchmarks/gpu_table.py [--reps 20] [--only matmul] [--no-example]

Each row's workloads are built for every library with the same inputs and initial weights
(``_gpu_workloads.py``), run once and compared (the ``check`` column: max relative difference of
the result against the first library's), warmed up, then timed in rounds: in each round every
library runs one sample (``inner`` calls between two device synchronizations, host clock), the
order alternating between rounds so that drifting clocks or load hit each library alike. The
figure is the median sample divided by ``inner``. The last row times
``examples/train_mlp.py`` as a user runs it (a fresh process, wall clock, imports and kernel
loading included) with ``--device cuda`` and ``--device cpu``.

The footer gives the caching allocator's driver allocations during the timed rounds (0 once
every block size a workload needs is cached) and the versions and device.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks import _gpu_workloads as W
else:
    from . import _gpu_workloads as W

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LABEL = {"jitgrad": "jitgrad", "torch": "PyTorch", "cupy": "CuPy (cuBLAS)", "numba": "numba"}


def format_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.1f} s"


def rel_diff(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def driver_allocations() -> int:
    """jitgrad's caching allocator's calls to the driver so far."""
    import jitgrad
    return jitgrad.cuda.memory_stats().get("num_device_alloc", 0)


def measure_row(works: dict, reps: int, warmup: int = 3) -> tuple:
    """Median seconds per call of each library's workload, interleaved rounds; and jitgrad's
    driver allocations during the rounds."""
    for impl, w in works.items():
        for _ in range(warmup):
            w.fn()
        W.synchronize(impl)
    allocs = driver_allocations()
    samples = {impl: [] for impl in works}
    order = list(works)
    for r in range(reps):
        for impl in (order if r % 2 == 0 else order[::-1]):
            w = works[impl]
            W.synchronize(impl)
            t0 = time.perf_counter()
            for _ in range(w.inner):
                w.fn()
            W.synchronize(impl)
            samples[impl].append((time.perf_counter() - t0) / w.inner)
    allocs = driver_allocations() - allocs
    return {impl: statistics.median(s) for impl, s in samples.items()}, allocs


def run_rows(args, say):
    rows, allocs = [], 0
    for label, build, kwargs, impls, rtol in W.ROWS:
        if args.only and not any(o.lower() in label.lower() for o in args.only):
            continue
        works, skipped = {}, []
        for impl in impls:
            try:
                works[impl] = build(impl, **kwargs)
            except NotImplementedError as e:
                skipped.append(f"{impl}: {e}")
        if not works:
            rows.append((label, {}, "skipped: " + "; ".join(skipped)))
            continue
        for w in works.values():
            w.fn()
        check = "-"
        if rtol is not None and len(works) > 1:
            first, *others = works
            ref = works[first].result()
            worst = max(rel_diff(works[o].result(), ref) for o in others)
            check = f"ok ({worst:.0e})" if worst <= rtol else f"MISMATCH {worst:.1e} > {rtol:g}"
        times, n = measure_row(works, args.reps)
        allocs += n
        if skipped:
            check += " | " + "; ".join(skipped)
        rows.append((label, times, check))
        say(f"  {label}: " + ", ".join(f"{k} {format_time(v)}" for k, v in times.items()))
    return rows, allocs


def run_example(device: str) -> float | None:
    out = os.path.join(ROOT, "examples", "out", f"gpu_table_{device}")
    cmd = [sys.executable, os.path.join(ROOT, "examples", "train_mlp.py"), "--device", device,
           "--no-progress", "--out", out]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=3600)
    if r.returncode:
        print(f"train_mlp.py --device {device} failed:\n{r.stderr[-2000:]}", file=sys.stderr)
        return None
    return time.perf_counter() - t0


def table(rows, example) -> str:
    lines = ["| workload (float32) | jitgrad | PyTorch | ratio | check |", "|---|---|---|---|---|"]
    for label, times, check in rows:
        main = times.get("jitgrad", times.get("numba"))
        torch_t = times.get("torch")
        extra = [f"{LABEL[k]}: {format_time(v)}" for k, v in times.items()
                 if k not in ("jitgrad", "torch", "numba")]
        torch_cell = format_time(torch_t) if torch_t else ""
        if extra:
            torch_cell += f" ({', '.join(extra)})"
        ratio = f"{main / torch_t:.1f}x" if main and torch_t else ""
        lines.append(f"| {label} | {format_time(main) if main else ''} | {torch_cell} | "
                     f"{ratio} | {check} |")
    if example is not None:
        cuda_s, cpu_s = example
        lines.append("| `examples/train_mlp.py --device cuda` training | "
                     f"{format_time(cuda_s) if cuda_s else 'failed'} | "
                     f"(CPU path: {format_time(cpu_s) if cpu_s else 'failed'}) | | |")
    return "\n".join(lines)


def footer(driver_allocs) -> str:
    import numba

    import jitgrad
    from jitgrad.backends import cuda as backend
    cu = backend._cuda()
    dev = cu.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
    parts = [f"device: {name} (sm_{''.join(map(str, backend.compute_capability()))})",
             f"jitgrad {jitgrad.__version__}", f"numba {numba.__version__}"]
    try:
        import numba_cuda
        parts.append(f"numba-cuda {numba_cuda.__version__}")
    except (ImportError, AttributeError):
        pass
    try:
        import torch
        parts.append(f"torch {torch.__version__}")
    except ImportError:
        parts.append("torch not installed")
    alloc = backend.allocator()
    return (" | ".join(parts) + f"\njitgrad caching allocator: {'on' if alloc.caching else 'off'}"
            f", driver allocations during the timed rounds: {driver_allocs}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=20, help="timed rounds per row (median)")
    p.add_argument("--only", nargs="*", default=[],
                   help="rows whose label contains one of these words")
    p.add_argument("--no-example", action="store_true", help="skip the train_mlp.py row")
    args = p.parse_args(argv)
    try:
        W.gpu_lib("jitgrad")
    except NotImplementedError as e:
        print(f"gpu_table.py needs an NVIDIA GPU: {e}", file=sys.stderr)
        return 2
    say = print
    say("timing (interleaved, synchronized, medians) ...", flush=True)
    rows, driver_allocs = run_rows(args, say)
    example = None
    if not args.no_example and not args.only:
        example = (run_example("cuda"), run_example("cpu"))
    say("")
    say(table(rows, example))
    say(footer(driver_allocs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
