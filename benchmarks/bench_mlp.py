"""One training step of an MLP classifier (784-512-512-10, batch 256, float32): forward,
cross-entropy, backward, SGD update. jitgrad vs PyTorch eager vs hand-written NumPy, and
``floor``: the same step with no framework at all, fused by hand around MKL's GEMM
(``_mlp_floor.py``) -- the time no library on the same BLAS can beat.

The issue's target: jitgrad's step at most 0.9x PyTorch CPU's time in the same run. Run as a
script for an interleaved side-by-side table (best of N)::

    python benchmarks/bench_mlp.py [--reps 30]

or one library per process (what to compare: in one process the libraries' thread pools
contend), e.g. ``for i in jitgrad torch jitgrad torch; do python benchmarks/bench_mlp.py
--impl $i; done`` (prefix ``OMP_NUM_THREADS=1`` for one thread each).
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks._common import IMPLS, lib_for
    from benchmarks._mlp_floor import make_floor_step
else:
    from ._common import IMPLS, lib_for
    from ._mlp_floor import make_floor_step

SIZES = (784, 512, 512, 10)
BATCH = 256
STEP_IMPLS = IMPLS + ["floor", "compiled"]


def make_step(impl, seed=0):
    """A zero-argument callable running one training step, and the loss reader."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    if impl == "numpy":
        return _numpy_step(X, y, *_init_params(rng))
    if impl == "floor":
        return make_floor_step(X, y, *_init_params(rng))
    lib = lib_for("jitgrad" if impl == "compiled" else impl)
    lib.manual_seed(seed)
    nn = lib.nn
    model = nn.Sequential(nn.Linear(SIZES[0], SIZES[1]), nn.ReLU(),
                          nn.Linear(SIZES[1], SIZES[2]), nn.ReLU(),
                          nn.Linear(SIZES[2], SIZES[3]))
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    xt, yt = lib.tensor(X), lib.tensor(y)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(xt), yt)
        loss.backward()
        opt.step()
        return loss

    # "compiled": the same step under jitgrad.compile (issue 16's target: <= 0.95x torch)
    return lib.compile(step) if impl == "compiled" else step


def _init_params(rng):
    """nn.Linear's default init distribution (not its numbers) for the framework-free steps."""
    Ws, bs = [], []
    for i, o in zip(SIZES[:-1], SIZES[1:]):
        bound = 1 / np.sqrt(i)
        Ws.append(rng.uniform(-bound, bound, (o, i)).astype(np.float32))
        bs.append(rng.uniform(-bound, bound, o).astype(np.float32))
    return Ws, bs


def _numpy_step(X, y, Ws, bs):
    n = X.shape[0]
    rows = np.arange(n)
    lr = np.float32(0.01)

    def step():
        hs = [X]
        h = X
        for k, (W, b) in enumerate(zip(Ws, bs)):
            h = h @ W.T + b
            if k < len(Ws) - 1:
                h = np.maximum(h, 0)
            hs.append(h)
        z = hs[-1]
        z = z - z.max(1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(1, keepdims=True))
        loss = -logp[rows, y].mean()
        g = np.exp(logp)
        g[rows, y] -= 1
        g /= n
        for k in range(len(Ws) - 1, -1, -1):
            gW = g.T @ hs[k]
            gb = g.sum(0)
            if k:
                g = (g @ Ws[k]) * (hs[k] > 0)
            Ws[k] -= lr * gW
            bs[k] -= lr * gb
        return loss

    return step


class MLPTrainingStep:
    params = [STEP_IMPLS]
    param_names = ["impl"]
    timeout = 300
    repeat = (5, 20, 30.0)

    def setup(self, impl):
        self.step = make_step(impl)
        for _ in range(3):  # compile / load kernels, warm BLAS
            self.step()

    def time_step(self, impl):
        self.step()


def _main(argv=None):
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--impl", choices=STEP_IMPLS, help="time only this implementation")
    args = p.parse_args(argv)
    steps = {}
    for impl in ([args.impl] if args.impl else STEP_IMPLS):
        try:
            steps[impl] = make_step(impl)
        except NotImplementedError:
            continue
        for _ in range(3):
            steps[impl]()
    best = {k: float("inf") for k in steps}
    for _ in range(args.reps):  # interleaved, so load changes hit every impl alike
        for k, f in steps.items():
            t = time.perf_counter()
            f()
            best[k] = min(best[k], time.perf_counter() - t)
    for k, v in best.items():
        print(f"{k:8s} {v * 1e3:8.2f} ms  (best of {args.reps})")
    if "torch" in best and "jitgrad" in best:
        print(f"jitgrad/torch = {best['jitgrad'] / best['torch']:.2f}")
    if "torch" in best and "compiled" in best:
        print(f"compiled/torch = {best['compiled'] / best['torch']:.2f}")
    if "torch" in best and "floor" in best:
        print(f"floor/torch = {best['floor'] / best['torch']:.2f}")


if __name__ == "__main__":
    _main()
