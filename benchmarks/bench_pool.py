"""Pooling and resampling, forward and forward+backward (float32), jitgrad vs PyTorch eager:
a 2x2 max pool and a 2x2 average pool on a ResNet-sized activation (32, 64, 32, 32), and a
bilinear x2 upsampling of (8, 64, 32, 32)."""
from __future__ import annotations

from ._common import arrays, lib_for

CASES = {
    "max_pool2d": ((32, 64, 32, 32), lambda F, x: F.max_pool2d(x, 2)),
    "avg_pool2d": ((32, 64, 32, 32), lambda F, x: F.avg_pool2d(x, 2)),
    "bilinear_x2": ((8, 64, 32, 32),
                    lambda F, x: F.interpolate(x, scale_factor=2, mode="bilinear")),
}


class Pool:
    params = [["jitgrad", "torch"], list(CASES)]
    param_names = ["impl", "op"]
    timeout = 120

    def setup(self, impl, op):
        lib = lib_for(impl)
        self.F = lib.nn.functional
        shape, self.fn = CASES[op]
        (x,) = arrays(shape)
        self.x = lib.tensor(x, requires_grad=True)
        self.g = lib.ones_like(self.fn(self.F, self.x))
        for _ in range(2):  # compile / load kernels outside the timed region
            self.time_forward_backward(impl, op)

    def time_forward(self, impl, op):
        self.fn(self.F, self.x.detach())

    def time_forward_backward(self, impl, op):
        self.x.grad = None
        self.fn(self.F, self.x).backward(self.g)


def _side_by_side(rounds=3, reps=15):
    """``python -m benchmarks.bench_pool [threads] [jitgrad|torch]``: the cases above, both
    libraries interleaved in one process (or one library, for separate-process runs: in one
    process their thread pools contend, see README); per case the best round's median, in ms."""
    import sys
    import time

    import numpy as np
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else None
    impls = sys.argv[2:] or ["jitgrad", "torch"]
    if threads:
        import numba
        import torch
        numba.set_num_threads(threads)
        torch.set_num_threads(threads)
    for op in CASES:
        runs = {}
        for impl in impls:
            runs[impl] = Pool()
            runs[impl].setup(impl, op)
        best = {(impl, kind): [] for impl in runs for kind in ("forward", "forward_backward")}
        for _ in range(rounds):
            for impl, bench in runs.items():
                for kind in ("forward", "forward_backward"):
                    fn = getattr(bench, f"time_{kind}")
                    times = []
                    for _ in range(reps):
                        t0 = time.perf_counter()
                        fn(impl, op)
                        times.append(time.perf_counter() - t0)
                    best[impl, kind].append(np.median(times) * 1e3)
        print(op, "  ".join(f"{impl} {kind.replace('_', '+')} {min(v):.2f} ms"
                            for (impl, kind), v in best.items()))


if __name__ == "__main__":
    _side_by_side()
