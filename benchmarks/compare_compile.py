"""Side by side: ``jitgrad.compile`` vs jitgrad eager vs PyTorch eager (and ``torch.compile``
when it works on this machine), on issue 16's two CPU workloads, plus what recording costs.

    python benchmarks/compare_compile.py [--reps 200] [--no-torch-compile]

* the 100-op scalar graph, forward + backward (``bench_overhead.scalar_step``);
* the MLP training step 784-512-512-10, batch 256, SGD (``bench_mlp.make_step``);
* the first two calls of each compiled function in a fresh process (the first records, the
  second is the first replay and compiles the fused kernels), with an empty kernel cache (cold)
  and with the cache the cold run filled (warm).

Medians of interleaved runs (load changes hit every implementation alike); ratios are against
PyTorch eager in the same run.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from benchmarks.bench_mlp import make_step  # noqa: E402
from benchmarks.bench_overhead import scalar_step  # noqa: E402


def _scalar_impls(torch_compile):
    import torch

    import jitgrad
    impls = {}
    for name, lib in (("jitgrad", jitgrad), ("torch", torch)):
        x = lib.tensor(0.3, requires_grad=True)
        impls[name] = _resetting(scalar_step, x)
    impls["compiled"] = _resetting(jitgrad.compile(scalar_step), jitgrad.tensor(0.3,
                                                                              requires_grad=True))
    if torch_compile:
        try:
            fn = _resetting(torch.compile(scalar_step), torch.tensor(0.3, requires_grad=True))
            fn()
            impls["torch.compile"] = fn
        except Exception as e:  # no C++ compiler, ...: say so and go on
            print(f"(torch.compile unavailable here: {type(e).__name__}: {str(e)[:80]})")
    return impls


def _resetting(fn, x):
    def run():
        x.grad = None
        return fn(x)
    return run


def _mlp_impls(torch_compile):
    impls = {k: make_step(k) for k in ("jitgrad", "torch", "compiled")}
    if torch_compile:
        try:
            import torch
            step = make_step("torch")
            impls["torch.compile"] = torch.compile(step)
            impls["torch.compile"]()
        except Exception as e:
            print(f"(torch.compile unavailable here: {type(e).__name__}: {str(e)[:80]})")
    return impls


def _table(title, impls, reps):
    for f in impls.values():  # record, compile, warm up
        for _ in range(3):
            f()
    times = {k: [] for k in impls}
    for _ in range(reps):
        for k, f in impls.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    print(f"\n{title} (median of {reps}, ratio to torch eager)")
    for k, v in med.items():
        unit, scale = ("us", 1e6) if v < 1e-3 else ("ms", 1e3)
        print(f"  {k:14s} {v * scale:9.2f} {unit}   {v / med['torch']:.2f}x")


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
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--no-torch-compile", action="store_true")
    p.add_argument("--skip-first-calls", action="store_true")
    args = p.parse_args(argv)
    tc = not args.no_torch_compile
    _table("100-op scalar graph, forward + backward", _scalar_impls(tc), args.reps)
    _table("MLP step 784-512-512-10, batch 256, SGD", _mlp_impls(tc), max(args.reps // 10, 10))
    if not args.skip_first_calls:
        _first_calls()


if __name__ == "__main__":
    main()
