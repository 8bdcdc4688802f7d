"""Eager per-op overhead, jitgrad next to PyTorch in one process (both on one thread).

Run: ``NUMBA_NUM_THREADS=1 PYTHONPATH=. python benchmarks/side_by_side_overhead.py``.

For tiny tensors both libraries spend their time in dispatch, not arithmetic, so this measures
framework cost: for each case (op x size x requires_grad) it times ``--calls`` calls of the op in
a loop, alternating jitgrad and PyTorch round by round (``--rounds``), and prints the median
(and the minimum) time per call of each and their ratio. Also: the 100-op scalar graph forward +
backward (``bench_overhead.ScalarGraph100``'s chain) and the MLP 784-512-512-10 batch-256
training step (``bench_mlp``), eager. The VM is shared: compare ratios from one run, not
absolute times across runs. ``--filter SUBSTR`` keeps the cases whose name contains SUBSTR;
``--json PATH`` saves the figures (to diff two checkouts: run each with its own PYTHONPATH).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

_HERE = os.path.dirname(os.path.abspath(__file__))
if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(_HERE))

import numpy as np  # noqa: E402

SIZES = (1, 16, 1024)


def _shape2d(n):
    """A 2-D shape with ``n`` elements (for ``t()``)."""
    r = int(round(n ** 0.5))
    return (r, n // r)


def _op_cases(lib, n, rg):
    """name -> zero-argument callable running the op once, for library ``lib``."""
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal(n).astype(np.float32)
    b_np = rng.standard_normal(n).astype(np.float32)
    a = lib.tensor(a_np, requires_grad=rg)
    b = lib.tensor(b_np, requires_grad=rg)
    m = lib.tensor(a_np.reshape(_shape2d(n)), requires_grad=rg)
    u = lib.tensor(a_np.reshape(1, n), requires_grad=rg)
    cat = lib.cat
    return {
        "a+b": lambda: a + b,
        "a*b": lambda: a * b,
        "a+1.0": lambda: a + 1.0,
        "relu": lambda: a.relu(),
        "sum": lambda: a.sum(),
        "exp": lambda: a.exp(),
        "x[0]": lambda: a[0],
        "x[1:3]": lambda: a[1:3],
        "m[:, 0]": lambda: m[:, 0],
        "m[0, 0]": lambda: m[0, 0],
        "view": lambda: a.view(-1, 1),
        "t": lambda: m.t(),
        "unsqueeze": lambda: a.unsqueeze(0),
        "squeeze": lambda: u.squeeze(0),
        "transpose": lambda: m.transpose(0, 1),
        "permute": lambda: m.permute(1, 0),
        "expand": lambda: u.expand(3, n),
        "flatten": lambda: m.flatten(),
        "contiguous": lambda: a.contiguous(),
        "mean": lambda: a.mean(),
        "cat": lambda: cat([a, b]),
        "stack": lambda: lib.stack([a, b]),
    }


# name -> (shape of a, shape of b, op): small float32 products
_PRODUCTS = {
    "a@b 4x4": ((4, 4), (4, 4), lambda lib, a, b: a @ b),
    "mm 16x16": ((16, 16), (16, 16), lambda lib, a, b: lib.mm(a, b)),
    "bmm 4x(4x4)": ((4, 4, 4), (4, 4, 4), lambda lib, a, b: lib.bmm(a, b)),
    "mv 4x4": ((4, 4), (4,), lambda lib, a, b: lib.mv(a, b)),
}


def _matmul_case(lib, rg, name="a@b 4x4"):
    rng = np.random.default_rng(1)
    sa, sb, op = _PRODUCTS[name]
    a = lib.tensor(rng.standard_normal(sa).astype(np.float32), requires_grad=rg)
    b = lib.tensor(rng.standard_normal(sb).astype(np.float32), requires_grad=rg)
    return lambda: op(lib, a, b)


def _scalar_graph(lib):
    sys.path.insert(0, os.path.dirname(_HERE))
    from benchmarks.bench_overhead import scalar_chain
    x = lib.tensor(0.3, requires_grad=True)

    def run():
        x.grad = None
        scalar_chain(x).backward()
    return run


def _mlp_step(impl):
    sys.path.insert(0, os.path.dirname(_HERE))
    from benchmarks.bench_mlp import make_step
    return make_step(impl)


def build_cases(libs):
    """[(case name, calls per timing, {impl: fn})]"""
    cases = []
    per_size = {impl: {(n, rg): _op_cases(lib, n, rg) for n in SIZES for rg in (False, True)}
                for impl, lib in libs.items()}
    names = list(next(iter(per_size.values()))[(1, False)])
    for name in names:
        for rg in (False, True):
            for n in SIZES:
                cases.append((f"{name} n={n} rg={int(rg)}", None,
                              {impl: per_size[impl][(n, rg)][name] for impl in libs}))
    for name in _PRODUCTS:
        for rg in (False, True):
            cases.append((f"{name} rg={int(rg)}", None,
                          {impl: _matmul_case(lib, rg, name) for impl, lib in libs.items()}))
    cases.append(("scalar graph 100 fwd+bwd", 10,
                  {impl: _scalar_graph(lib) for impl, lib in libs.items()}))
    cases.append(("MLP 784-512-512-10 b256 step", 1,
                  {impl: _mlp_step(impl) for impl in libs}))
    return cases


def measure_case(fns, calls, rounds, clock=time.perf_counter):
    """(median, min) seconds per call of each fn, rounds interleaved across implementations
    (the min is the steadier figure on a loaded machine)."""
    for f in fns.values():  # warm up: compile kernels, fill caches
        for _ in range(3):
            f()
    samples = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            t0 = clock()
            for _ in range(calls):
                f()
            samples[k].append((clock() - t0) / calls)
    return {k: (statistics.median(v), min(v)) for k, v in samples.items()}


def _fmt(sec):
    us = sec * 1e6
    return f"{us / 1e3:9.2f} ms" if us >= 1e4 else f"{us:9.2f} us"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=200, help="op calls per timing (small ops)")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--filter", default="")
    p.add_argument("--json", default=None)
    p.add_argument("--clock", choices=("wall", "thread"), default="wall",
                   help="thread: this thread's CPU time (time.thread_time), which leaves out "
                        "the time other processes hold the core on a loaded machine")
    args = p.parse_args(argv)

    import torch

    import jitgrad
    torch.set_num_threads(1)
    jitgrad.set_num_threads(1)
    libs = {"jitgrad": jitgrad, "torch": torch}
    results = {}
    print(f"{'case':30s} {'jitgrad':>12s} {'torch':>12s} {'ratio':>6s}   "
          f"{'min jitgrad':>12s} {'min torch':>12s} {'ratio':>6s}")
    for name, calls, fns in build_cases(libs):
        if args.filter and args.filter not in name:
            continue
        n = calls if calls is not None else args.calls
        med = measure_case(fns, n, args.rounds,
                        time.thread_time if args.clock == "thread" else time.perf_counter)
        results[name] = med
        (jm, jl), (tm, tl) = med["jitgrad"], med["torch"]
        print(f"{name:30s} {_fmt(jm)} {_fmt(tm)} {jm / tm:6.2f}   {_fmt(jl)} {_fmt(tl)} "
              f"{jl / tl:6.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
