"""batch_norm forward + backward on (32, 64, 32, 32) float32, jitgrad beside PyTorch (CPU), in
one process: ``python -m benchmarks.compare_batch_norm``. Prints the median of 20 runs each."""
import time

import numpy as np
import torch

import jitgrad as jg


def bench(lib, x0, reps=20):
    x = lib.tensor(x0, requires_grad=True)
    bn = (jg if lib is jg else torch).nn.BatchNorm2d(x0.shape[1])
    g = lib.ones(x0.shape)
    times = []
    for i in range(reps + 3):
        t0 = time.perf_counter()
        y = bn(x)
        y.backward(g)
        t1 = time.perf_counter()
        x.grad = None
        if i >= 3:
            times.append(t1 - t0)
    return np.median(times) * 1e3


if __name__ == "__main__":
    x0 = np.random.default_rng(0).standard_normal((32, 64, 32, 32)).astype(np.float32)
    for name, lib in (("jitgrad", jg), ("torch", torch), ("jitgrad", jg), ("torch", torch)):
        print(f"{name:8s} batch_norm fwd+bwd (32, 64, 32, 32) float32: {bench(lib, x0):.2f} ms")
