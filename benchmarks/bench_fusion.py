"""Backward fusion benchmarks (asv): fused vs unfused jitgrad vs PyTorch eager, compile times.

Workloads (issue 3), forward + backward on 4M float32 elements:
  arith  y = x*a; y = y + x; y = y*y; y = y - a; y = relu(y); y = y*0.5; y = y + x; y.backward(g)
  chain  sin, *x, +1.5, exp(0.1*.), tanh, square, sigmoid, -x
and the per-node overhead of a 100-op graph on 0-d tensors. Compile times are measured in
fresh processes: the first backward with an empty kernel cache (cold) and with a warm one.

Run as a plain script for a quick side-by-side table (interleaved repetitions, best of N)::

    python benchmarks/bench_fusion.py [--reps 15] [--quick] [--threads 1]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np

N = 4 * 1024 * 1024
IMPLS = ["jitgrad-fused", "jitgrad-unfused", "torch"]


def _lib(impl):
    if impl == "torch":
        try:
            import torch
        except ImportError:
            raise NotImplementedError("torch is not installed") from None
        return torch
    import jitgrad
    jitgrad.autograd.set_fusion_enabled(impl == "jitgrad-fused")
    return jitgrad


def arith(lib, x, a):
    y = x * a
    y = y + x
    y = y * y
    y = y - a
    y = lib.relu(y)
    y = y * 0.5
    y = y + x
    return y


def chain(lib, x, a):
    y = lib.sin(x)
    y = y * x
    y = y + 1.5
    y = lib.exp(0.1 * y)
    y = lib.tanh(y)
    y = lib.square(y)
    y = lib.sigmoid(y)
    y = y - x
    return y


WORKLOADS = {"arith": arith, "chain": chain}


def scalar_graph(lib, x, n_ops=100):
    """A 100-op graph on a 0-d tensor: per-node overhead dominates."""
    y = x
    for _ in range(n_ops // 4):
        y = y * 1.01
        y = y + 0.5
        y = lib.sin(y)
        y = y - x
    return y


def _inputs(lib, n=N, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    x = lib.tensor(arrays[0], requires_grad=True)
    a = lib.tensor(arrays[1], requires_grad=True)
    g = lib.tensor(arrays[2])
    return x, a, g


def _step(lib, fn, x, a, g):
    x.grad = None
    a.grad = None
    y = fn(lib, x, a)
    y.backward(g)


class _Workload:
    params = [IMPLS]
    param_names = ["impl"]
    workload = None
    timeout = 300

    def setup(self, impl):
        self.lib = _lib(impl)
        if impl != "torch":
            self.lib.autograd.set_fusion_enabled(impl == "jitgrad-fused")
        self.fn = WORKLOADS[self.workload]
        self.x, self.a, self.g = _inputs(self.lib)
        _step(self.lib, self.fn, self.x, self.a, self.g)  # compile / load kernels, warm pages

    def teardown(self, impl):
        if impl != "torch":
            self.lib.autograd.set_fusion_enabled(True)

    def time_forward_backward(self, impl):
        _step(self.lib, self.fn, self.x, self.a, self.g)


class Arith(_Workload):
    workload = "arith"


class Chain(_Workload):
    workload = "chain"


class ScalarGraphOverhead:
    """100-op graph on 0-d tensors, forward + backward (per-node overhead)."""

    params = [IMPLS]
    param_names = ["impl"]

    def setup(self, impl):
        self.lib = _lib(impl)
        self.x = self.lib.tensor(0.3, requires_grad=True)
        self.time_forward_backward(impl)

    def teardown(self, impl):
        if impl != "torch":
            self.lib.autograd.set_fusion_enabled(True)

    def time_forward_backward(self, impl):
        self.x.grad = None
        scalar_graph(self.lib, self.x).backward()


# --------------------------------------------------------------------------- compile time
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    sys.path.insert(0, {bench_dir!r})
    import bench_fusion as b
    lib = b._lib({impl!r})
    x, a, g = b._inputs(lib, n={n})
    t1 = time.perf_counter()
    y = b.WORKLOADS[{workload!r}](lib, x, a)
    t2 = time.perf_counter()
    with lib.autograd.profile() as p:
        y.backward(g)
    t3 = time.perf_counter()
    print(json.dumps({{"import": t1 - t0, "forward": t2 - t1, "backward": t3 - t2,
                      "backward_compile": p.compile_seconds, "hits": p.cache_hits,
                      "misses": p.cache_misses}}))
""")


def first_run(workload, cache_dir, impl="jitgrad-fused", n=N):
    """Seconds of the first forward and first backward of ``workload`` in a fresh process."""
    code = _CHILD.format(bench_dir=os.path.dirname(os.path.abspath(__file__)), impl=impl,
                         n=n, workload=workload)
    env = dict(os.environ, JITGRAD_CACHE_DIR=cache_dir)
    env["PYTHONPATH"] = _REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("JITGRAD_DISABLE_DISK_CACHE", None)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=600)
    if r.returncode:
        raise RuntimeError(r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


SIZES = {"256K": 1 << 18, "4M": N}  # 256K: above the prange threshold, little memory traffic


class CompileFirstBackward:
    """First backward of a workload in a new process: empty kernel cache (cold) vs a warm one.

    At 256K elements the figure is mostly compiling/loading the fused kernel; at 4M it also
    includes the first touch of fresh memory in a new process (page faults)."""

    params = [["arith", "chain"], list(SIZES)]
    param_names = ["workload", "size"]
    unit = "seconds"
    timeout = 600

    def track_cold(self, workload, size):
        with tempfile.TemporaryDirectory() as d:
            return first_run(workload, d, n=SIZES[size])["backward"]

    def track_warm(self, workload, size):
        with tempfile.TemporaryDirectory() as d:
            first_run(workload, d, n=SIZES[size])
            return first_run(workload, d, n=SIZES[size])["backward"]


# --------------------------------------------------------------------------- plain script
def _measure(reps, quick):
    import time
    rows = {}
    try:
        import torch
        torch_ok = True
        del torch
    except ImportError:
        torch_ok = False
    impls = IMPLS if torch_ok else IMPLS[:2]
    for name in ("arith", "chain"):
        states = {}
        for impl in impls:
            lib = _lib(impl)
            states[impl] = (lib, *_inputs(lib))
        times = {impl: [] for impl in impls}
        for r in range(reps + 1):
            for impl in impls:  # interleaved: machine noise hits every impl alike
                lib, x, a, g = states[impl]
                if impl != "torch":
                    lib.autograd.set_fusion_enabled(impl == "jitgrad-fused")
                t0 = time.perf_counter()
                _step(lib, WORKLOADS[name], x, a, g)
                if r:
                    times[impl].append(time.perf_counter() - t0)
        rows[name] = times
        del states
    over = {impl: [] for impl in impls}
    xs = {impl: _lib(impl).tensor(0.3, requires_grad=True) for impl in impls}
    for r in range(reps * 20 + 1):
        for impl in impls:
            lib = _lib(impl)
            t0 = time.perf_counter()
            xs[impl].grad = None
            scalar_graph(lib, xs[impl]).backward()
            if r:
                over[impl].append(time.perf_counter() - t0)
    rows["overhead100"] = over
    _lib("jitgrad-fused")

    print(f"{'workload':12s} " + " ".join(f"{i:>26s}" for i in impls)
          + ("   fused/torch unfused/torch" if torch_ok else ""))
    for name, times in rows.items():
        best = {i: min(v) for i, v in times.items()}
        med = {i: float(np.median(v)) for i, v in times.items()}
        cells = " ".join(f"{best[i]*1e3:9.2f} ms (med {med[i]*1e3:7.2f})" for i in impls)
        ratio = (f"   {best['jitgrad-fused']/best['torch']:10.2f} "
                 f"{best['jitgrad-unfused']/best['torch']:14.2f}") if torch_ok else ""
        print(f"{name:12s} {cells}{ratio}")
    if not quick:
        for name in ("arith", "chain"):
            for size, n in SIZES.items():
                with tempfile.TemporaryDirectory() as d:
                    cold = first_run(name, d, n=n)
                    warm = min((first_run(name, d, n=n) for _ in range(3)),
                               key=lambda r: r["backward"])
                print(f"first run {name:5s} {size:>4s}: cold forward {cold['forward']:.2f} s, "
                      f"backward {cold['backward']:.2f} s (compiling {cold['backward_compile']:.2f}"
                      f" s); warm forward {warm['forward']:.3f} s, backward "
                      f"{warm['backward']:.3f} s (loading {warm['backward_compile']:.3f} s, "
                      f"{warm['hits']} hit(s), {warm['misses']} miss(es))")


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="skip the compile-time subprocesses")
    ap.add_argument("--threads", type=int, default=0,
                    help="threads for Numba's prange and PyTorch (default: their defaults)")
    args = ap.parse_args()
    sys.path.insert(0, _REPO)
    if args.threads:
        os.environ["NUMBA_NUM_THREADS"] = str(args.threads)  # before Numba is imported
        try:
            import torch
            torch.set_num_threads(args.threads)
        except ImportError:
            pass
    _measure(args.reps, args.quick)
