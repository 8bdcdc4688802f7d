"""batch_norm (BatchNorm2d, training) forward + backward on (32, 64, 32, 32) float32, jitgrad
beside PyTorch (CPU) in one process, interleaved:
``python -m benchmarks.compare_batch_norm [--threads N] [--reps R]``. Prints the median and the
best of R runs each (the best is the steadier figure on a shared machine)."""
import argparse
import time

import numpy as np
import torch

import jitgrad as jg


def make(lib, x0):
    x = lib.tensor(x0, requires_grad=True)
    bn = lib.nn.BatchNorm2d(x0.shape[1])
    g = lib.ones(x0.shape)

    def step():
        x.grad = None
        bn(x).backward(g)
    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    if args.threads:
        import numba
        torch.set_num_threads(args.threads)
        numba.set_num_threads(args.threads)
    x0 = np.random.default_rng(0).standard_normal((32, 64, 32, 32)).astype(np.float32)
    steps = {"jitgrad": make(jg, x0), "torch": make(torch, x0)}
    times = {k: [] for k in steps}
    for _ in range(3):  # warm up (kernels compiled / loaded, buffers allocated)
        for s in steps.values():
            s()
    for _ in range(args.reps):
        for name, s in steps.items():
            t0 = time.perf_counter()
            s()
            times[name].append(time.perf_counter() - t0)
    for name, ts in times.items():
        print(f"{name:8s} batch_norm fwd+bwd (32, 64, 32, 32) float32, threads="
              f"{args.threads or torch.get_num_threads()}: median {np.median(ts) * 1e3:.2f} ms, "
              f"best {min(ts) * 1e3:.2f} ms")
    jt, tt = times["jitgrad"], times["torch"]
    print(f"ratio jitgrad/torch: median {np.median(jt) / np.median(tt):.2f}, "
          f"best {min(jt) / min(tt):.2f}")


if __name__ == "__main__":
    main()
