"""Side by side: ``jitgrad.compile`` vs jitgrad eager vs PyTorch eager (and ``torch.compile``
when it works on this machine), on issue 16's two CPU workloads, plus what recording costs.

    python benchmarks/compare_compile.py [--rounds 3] [--reps 200] [--no-torch-compile]

* the 100-op scalar graph, forward + backward (``bench_overhead.scalar_step``);
* the MLP training step 784-512-512-10, batch 256, SGD (``bench_mlp.make_step``; ``floor``:
  the same step fused by hand around MKL, ``_mlp_floor.py``);
* the first two calls of each compiled function in a fresh process (the first records, the
  second is the first replay and compiles the fused kernels), with an empty kernel cache (cold)
  and with the cache the cold run filled (warm).

Each implementation runs in its own process (in one process PyTorch's and MKL's thread pools
spin on the same cores), alternating for ``--rounds`` rounds so load changes hit every one;
the table shows the best time of each over all rounds and its ratio to PyTorch eager's best.
PyTorch's processes get the environment from before jitgrad's import (which sets OpenMP
defaults a PyTorch child would inherit).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

IMPLS = ("jitgrad", "compiled", "torch", "torch.compile", "floor")


def _scalar(impl):
    """A zero-argument callable: one forward + backward of the scalar graph, or None."""
    from benchmarks.bench_overhead import scalar_step
    if impl == "floor":
        return None
    if impl.startswith("torch"):
        import torch as lib
    else:
        import jitgrad as lib
    x = lib.tensor(0.3, requires_grad=True)
    fn = {"compiled": lambda: lib.compile(scalar_step),
          "torch.compile": lambda: lib.compile(scalar_step)}.get(impl, lambda: scalar_step)()

    def run():
        x.grad = None
        return fn(x)
    return run


def _mlp(impl):
    from benchmarks.bench_mlp import make_step
    if impl == "torch.compile":
        import torch
        return torch.compile(make_step("torch"))
    return make_step(impl)


WORKLOADS = {"scalar": ("100-op scalar graph, forward + backward", _scalar, 1),
             "mlp": ("MLP step 784-512-512-10, batch 256, SGD", _mlp, 10)}


def _time_here(impl, reps):
    """{workload: best seconds} for ``impl`` in this process (None: not available)."""
    out = {}
    for key, (_, make, divide) in WORKLOADS.items():
        try:
            f = make(impl)
            if f is None:
                continue
            for _ in range(3):  # record, compile, warm up
                f()
        except Exception as e:  # torch.compile without a C++ compiler, no MKL for the floor
            print(f"({impl} {key} unavailable here: {type(e).__name__}: {str(e)[:80]})",
                  file=sys.stderr)
            continue
        best = float("inf")
        for _ in range(max(10, reps // divide)):
            t = time.perf_counter()
            f()
            best = min(best, time.perf_counter() - t)
        out[key] = best
    return out


def _table(results):
    for key, (title, _, _) in WORKLOADS.items():
        best = {impl: min((r[key] for r in runs if key in r), default=None)
                for impl, runs in results.items()}
        ref = best.get("torch")
        print(f"\n{title} (best over all rounds, ratio to torch eager)")
        for impl, v in best.items():
            if v is None:
                continue
            unit, scale = ("us", 1e6) if v < 1e-3 else ("ms", 1e3)
            ratio = f"{v / ref:.2f}x" if ref else ""
            print(f"  {impl:14s} {v * scale:9.2f} {unit}   {ratio}")


_CHILD = """
import sys, time
sys.path.insert(0, {root!r})
import jitgrad
from benchmarks.bench_overhead import scalar_step
from benchmarks.bench_mlp import make_step
x = jitgrad.tensor(0.3, requires_grad=True)
f = jitgrad.compile(scalar_step)
t0 = time.perf_counter(); f(x); t1 = time.perf_counter(); x.grad = None; f(x)
t2 = time.perf_counter()
step = make_step("compiled")
t3 = time.perf_counter(); step(); t4 = time.perf_counter(); step(); t5 = time.perf_counter()
print(t1 - t0, t2 - t1, t4 - t3, t5 - t4)
"""


def _first_calls():
    print("\nFirst calls in a fresh process (s): record / first replay (compiles fused kernels)")
    with tempfile.TemporaryDirectory(prefix="jitgrad-compile-bench-") as d:
        env = dict(os.environ, JITGRAD_CACHE_DIR=d, NUMBA_CACHE_DIR=os.path.join(d, "numba"))
        for label in ("cold cache", "warm cache"):
            out = subprocess.run([sys.executable, "-c", _CHILD.format(root=_ROOT)], env=env,
                                 capture_output=True, text=True, check=True, timeout=900)
            a, b, c, e = (float(v) for v in out.stdout.split()[-4:])
            print(f"  {label:10s} scalar graph {a:7.3f} / {b:7.3f}    MLP step {c:7.3f} / {e:7.3f}")


def main(argv=None):
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--impl", choices=IMPLS, help="time only this one, in this process")
    p.add_argument("--no-torch-compile", action="store_true")
    p.add_argument("--skip-first-calls", action="store_true")
    args = p.parse_args(argv)
    if args.impl:
        print(json.dumps(_time_here(args.impl, args.reps)))
        return
    impls = [i for i in IMPLS if not (args.no_torch_compile and i == "torch.compile")]
    results = {impl: [] for impl in impls}
    for _ in range(args.rounds):
        for impl in impls:
            run = subprocess.run([sys.executable, os.path.abspath(__file__), "--impl", impl,
                                  "--reps", str(args.reps)], capture_output=True, text=True,
                                 env=dict(os.environ), timeout=1800)
            if run.returncode:
                raise SystemExit(run.stderr)
            results[impl].append(json.loads(run.stdout.strip().splitlines()[-1]))
    _table(results)
    if not args.skip_first_calls:
        _first_calls()


if __name__ == "__main__":
    main()
