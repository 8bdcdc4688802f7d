"""Convolutions beside PyTorch CPU (oneDNN): conv2d forward + backward on a ResNet-style layer
(batch 32, 64 -> 64 channels, 32x32, 3x3, padding 1, float32), and one training step of
examples/train_cnn.py's CNN (batch 32 of 1x8x8 images: forward, cross-entropy, backward,
AdamW). The issue's target: at most 1.5x PyTorch's time for both. Run as a script for an
interleaved side-by-side table (best of N, and the process CPU time, which the other
processes of a shared machine disturb less than the wall clock)::

    python benchmarks/bench_conv.py [--reps 10]
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks._common import arrays, lib_for
else:
    from ._common import arrays, lib_for

IMPLS = ["jitgrad", "torch"]
LAYER = dict(batch=32, channels=64, size=32)
CNN_BATCH = 32


def make_conv_step(impl):
    """conv2d(x, w, b, padding=1) forward, then backward of its sum into x, w and b."""
    lib = lib_for(impl)
    n, c, s = LAYER["batch"], LAYER["channels"], LAYER["size"]
    x, w, b = arrays((n, c, s, s), (c, c, 3, 3), (c,))
    xt, wt, bt = (lib.tensor(a, requires_grad=True) for a in (x, w * 0.05, b))
    conv2d = lib.nn.functional.conv2d

    def step():
        for t in (xt, wt, bt):
            t.grad = None
        conv2d(xt, wt, bt, padding=1).sum().backward()

    return step


def make_cnn_step(impl):
    """One optimizer step of train_cnn.py's model."""
    lib = lib_for(impl)
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 10))
    opt = lib.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    (x,) = arrays((CNN_BATCH, 1, 8, 8))
    y = np.random.default_rng(1).integers(0, 10, CNN_BATCH)
    xt, yt = lib.tensor(x), lib.tensor(y)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(xt), yt)
        loss.backward()
        opt.step()
        return loss

    return step


class ConvLayerForwardBackward:
    params = [IMPLS]
    param_names = ["impl"]
    timeout = 300
    repeat = (3, 10, 30.0)

    def setup(self, impl):
        self.step = make_conv_step(impl)
        self.step()  # compile / warm BLAS

    def time_conv2d_forward_backward(self, impl):
        self.step()


class CNNTrainingStep:
    params = [IMPLS]
    param_names = ["impl"]
    timeout = 300
    repeat = (5, 20, 30.0)

    def setup(self, impl):
        self.step = make_cnn_step(impl)
        for _ in range(3):
            self.step()

    def time_step(self, impl):
        self.step()


def _main(argv=None):
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=10)
    args = p.parse_args(argv)
    from jitgrad.backends import host_threads
    threads = host_threads.count()  # MKL's thread count: what jitgrad's convolutions use
    try:
        lib_for("torch").set_num_threads(threads)
    except NotImplementedError:
        pass
    print(f"threads: {threads} (jitgrad and torch)")
    for title, make in (("conv2d fwd+bwd, 32x64x32x32, 3x3", make_conv_step),
                        ("CNN training step (train_cnn.py model, batch 32)", make_cnn_step)):
        steps = {}
        for impl in IMPLS:
            try:
                steps[impl] = make(impl)
            except NotImplementedError as e:
                print(f"{title}: skipped ({e})")
                steps = {}
                break
            for _ in range(2):
                steps[impl]()
        if not steps:
            continue
        wall = {k: float("inf") for k in steps}
        cpu = {k: float("inf") for k in steps}
        for _ in range(args.reps):  # interleaved, so load changes hit every impl alike
            for k, f in steps.items():
                t, c = time.perf_counter(), time.process_time()
                f()
                wall[k] = min(wall[k], time.perf_counter() - t)
                cpu[k] = min(cpu[k], time.process_time() - c)
        print(title)
        for k in steps:
            print(f"  {k:8s} wall {wall[k] * 1e3:8.2f} ms  cpu {cpu[k] * 1e3:8.2f} ms  "
                  f"(best of {args.reps})")
        print(f"  jitgrad/torch = {wall['jitgrad'] / wall['torch']:.2f} (wall), "
              f"{cpu['jitgrad'] / cpu['torch']:.2f} (cpu)")


if __name__ == "__main__":
    _main()
