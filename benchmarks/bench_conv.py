"""Convolutions beside PyTorch CPU (oneDNN): conv2d forward + backward on a ResNet-style layer
(batch 32, 64 -> 64 channels, 32x32, 3x3, padding 1, float32), and one training step of
examples/train_cnn.py's CNN (batch 32 of 1x8x8 images: forward, cross-entropy, backward,
AdamW). The issue's target: at most 1.5x PyTorch's time for both. Run as a script for a
side-by-side table::

    python benchmarks/bench_conv.py [--rounds 3] [--reps 200]

Each framework runs in its own process (PyTorch's OpenMP threads and MKL's / jitgrad's pool
threads spin on the same 2 cores when they share one, which slowed each side by up to 1.6x;
and ``import jitgrad`` sets OpenMP defaults a PyTorch process must not inherit), the processes
alternating for ``--rounds`` rounds so load changes hit both; per process the best
and the median of ``--reps`` steps (fewer for the conv layer), both at the thread count MKL
uses. ``--impl X --reps N`` times one framework in this process.
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


WORKLOADS = {"conv": ("conv2d fwd+bwd, 32x64x32x32, 3x3", make_conv_step, 10),
             "cnn": ("CNN training step (train_cnn.py model, batch 32)", make_cnn_step, 1)}


def _time_here(impl, reps, threads):
    """{workload: (best, median)} seconds for ``impl`` in this process. The torch process
    never loads jitgrad's MKL (a second OpenMP runtime beside PyTorch's slowed its CNN step
    2x): the parent passes MKL's thread count."""
    if impl == "torch":
        lib_for("torch").set_num_threads(threads)
    out = {}
    for key, (_, make, divide) in WORKLOADS.items():
        step = make(impl)
        for _ in range(3):
            step()
        times = []
        for _ in range(max(5, reps // divide)):
            t = time.perf_counter()
            step()
            times.append(time.perf_counter() - t)
        times.sort()
        out[key] = (times[0], times[len(times) // 2])
    return out


def _main(argv=None):
    import argparse
    import json
    import subprocess
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--impl", choices=IMPLS, help="time only this framework, in this process")
    p.add_argument("--threads", type=int, default=0, help="(torch) threads; default MKL's")
    args = p.parse_args(argv)
    env = dict(os.environ)  # before jitgrad's import sets its OpenMP defaults: PyTorch's
    threads = args.threads  # process must not inherit them (OMP_WAIT_POLICY=PASSIVE made its
    # CNN step 2.4x slower)
    if not threads and args.impl != "torch":
        from jitgrad.backends import host_threads
        threads = host_threads.count()  # MKL's thread count: what jitgrad's convolutions use
    if args.impl:
        print(json.dumps(_time_here(args.impl, args.reps, threads)))
        return
    print(f"threads: {threads} (jitgrad and torch)")
    results = {impl: [] for impl in IMPLS}
    for _ in range(args.rounds):
        for impl in IMPLS:
            run = subprocess.run([sys.executable, os.path.abspath(__file__), "--impl", impl,
                                  "--reps", str(args.reps), "--threads", str(threads)],
                                 capture_output=True, text=True, env=env)
            if run.returncode:
                raise SystemExit(run.stderr)
            results[impl].append(json.loads(run.stdout.strip().splitlines()[-1]))
    for key, (title, _, _) in WORKLOADS.items():
        print(title)
        for impl in IMPLS:
            best = [r[key][0] * 1e3 for r in results[impl]]
            med = [r[key][1] * 1e3 for r in results[impl]]
            print(f"  {impl:8s} best {min(best):8.2f} ms   medians "
                  + " ".join(f"{m:.2f}" for m in med))
        ratio_best = min(r[key][0] for r in results["jitgrad"]) / \
            min(r[key][0] for r in results["torch"])
        ratios = [j[key][1] / t[key][1] for j, t in zip(results["jitgrad"], results["torch"])]
        print(f"  jitgrad/torch = {ratio_best:.2f} (best), "
              + " ".join(f"{r:.2f}" for r in ratios) + " (medians, per round)")


if __name__ == "__main__":
    _main()
