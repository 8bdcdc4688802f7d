"""Memory stability over a long training run: 10,000 steps of a small MLP classifier
(32-64-64-10, batch 32, float32, SGD with momentum: forward, cross-entropy, backward, update),
small enough that the run takes seconds, long enough that anything kept per step (graph nodes,
saved tensors, cached kernels, pooled buffers, optimizer state) shows up.

* ``track_rss_growth``: resident memory after all steps minus after the first 500 (MiB); a
  library that leaks a few KiB per step shows tens of MiB here.
* ``track_peak_rss_growth``: the same for the process's peak resident memory (MiB).
* ``peakmem_train``: asv's peak resident memory of the whole process running the steps.

Each for jitgrad and PyTorch (skipped when not installed). As a script::

    python benchmarks/bench_memory.py [--steps 10000] [--impl jitgrad]
"""
from __future__ import annotations

import os
import resource
import sys

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks._common import lib_for
else:
    from ._common import lib_for

SIZES = (32, 64, 64, 10)
BATCH = 32
STEPS = 10_000
WARMUP = 500
_MiB = 1 << 20


def rss_bytes() -> int:
    """Resident memory now (Linux: /proc/self/statm; elsewhere the peak, the best available)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return peak_rss_bytes()


def peak_rss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # macOS: bytes; Linux: KiB


def make_trainer(impl, seed=0):
    """``train(n)``: run ``n`` training steps on fixed random batches (the last loss)."""
    lib = lib_for(impl)
    rng = np.random.default_rng(seed)
    batches = [(lib.tensor(rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)),
                lib.tensor(rng.integers(0, SIZES[-1], BATCH))) for _ in range(8)]
    lib.manual_seed(seed)
    nn = lib.nn
    model = nn.Sequential(nn.Linear(SIZES[0], SIZES[1]), nn.ReLU(),
                          nn.Linear(SIZES[1], SIZES[2]), nn.ReLU(),
                          nn.Linear(SIZES[2], SIZES[3]))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def train(n):
        loss = None
        for i in range(n):
            x, y = batches[i % len(batches)]
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
        return float(loss.item())

    return train


class TrainingMemory:
    params = ["jitgrad", "torch"]
    param_names = ["impl"]
    timeout = 600
    number = 1
    repeat = 1
    warmup_time = 0

    def setup(self, impl):
        self.train = make_trainer(impl)
        self.train(WARMUP)  # kernels compiled, pools and optimizer state allocated

    def track_rss_growth(self, impl):
        before = rss_bytes()
        self.train(STEPS - WARMUP)
        return (rss_bytes() - before) / _MiB

    track_rss_growth.unit = "MiB"

    def track_peak_rss_growth(self, impl):
        before = peak_rss_bytes()
        self.train(STEPS - WARMUP)
        return (peak_rss_bytes() - before) / _MiB

    track_peak_rss_growth.unit = "MiB"

    def peakmem_train(self, impl):
        self.train(STEPS - WARMUP)


def main(argv=None):
    import argparse
    import time
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--impl", choices=["jitgrad", "torch"], action="append")
    args = ap.parse_args(argv)
    for impl in args.impl or ["jitgrad", "torch"]:
        train = make_trainer(impl)
        train(WARMUP)
        rss0, peak0, t0 = rss_bytes(), peak_rss_bytes(), time.perf_counter()
        samples = []
        for _ in range(10):
            loss = train(max(args.steps - WARMUP, 10) // 10)
            samples.append(round((rss_bytes() - rss0) / _MiB, 2))
        print(f"{impl:8s} {time.perf_counter() - t0:6.1f} s  loss {loss:.4f}  RSS growth (MiB) "
              f"per tenth: {samples}  peak growth {(peak_rss_bytes() - peak0) / _MiB:.2f} MiB  "
              f"peak {peak_rss_bytes() / _MiB:.0f} MiB")


if __name__ == "__main__":
    main()
