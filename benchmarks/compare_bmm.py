"""Batched matrix products on the CPU, jitgrad beside PyTorch in one process, interleaved (the
order rotates each round): ``python -m benchmarks.compare_bmm [--threads N] [--reps R]``.

Rows: bmm (64, 128, 64) x (64, 64, 128) forward and forward+backward; 4-D matmul
(8, 8, 128, 64) @ (8, 8, 64, 128); scaled_dot_product_attention forward+backward at
(8, 8, 128, 64); a 2-D matmul (512 x 512, unchanged by the batched path: a sanity row). float32.
``jitgrad-np`` is jitgrad with the batched MKL calls switched off (stacks go to ``np.matmul``,
the behaviour before ``backends.blas`` batched them), so one run shows before and after. Prints
the best of R runs (the steadier figure on a shared machine) and the median, and the ratios to
PyTorch. ``--threads 1`` sets MKL's and PyTorch's thread counts; for a clean single-thread run
also start with ``OMP_NUM_THREADS=1 MKL_NUM_THREADS=1``."""
import argparse
import contextlib
import time

import numpy as np
import torch

import jitgrad as jg
from jitgrad.backends import blas

RNG = np.random.default_rng(0)


@contextlib.contextmanager
def numpy_stacks():
    """The pre-batching behaviour: stacks of matrices through ``np.matmul``."""
    blas.backend()  # loads MKL
    saved = dict(blas._gemm_strided), dict(blas._gemm_batch), blas._matmul_stack
    blas._gemm_strided.clear()
    blas._gemm_batch.clear()
    blas._matmul_stack = lambda *args: None
    try:
        yield
    finally:
        blas._gemm_strided.update(saved[0])
        blas._gemm_batch.update(saved[1])
        blas._matmul_stack = saved[2]


def arrays(*shapes):
    return [RNG.standard_normal(s).astype(np.float32) for s in shapes]


def product(lib, a, b, backward, op="bmm"):
    x, y = lib.tensor(a, requires_grad=backward), lib.tensor(b, requires_grad=backward)
    f = lib.bmm if op == "bmm" else lib.matmul
    if not backward:
        return lambda: f(x, y)
    g = lib.ones(tuple(a.shape[:-1]) + (b.shape[-1],))

    def step():
        x.grad = y.grad = None
        f(x, y).backward(g)
    return step


def sdpa(lib, q0, k0, v0):
    q, k, v = (lib.tensor(a, requires_grad=True) for a in (q0, k0, v0))
    g = lib.ones(q0.shape)

    def step():
        q.grad = k.grad = v.grad = None
        lib.nn.functional.scaled_dot_product_attention(q, k, v).backward(g)
    return step


def cases():
    a, b = arrays((64, 128, 64), (64, 64, 128))
    a4, b4 = arrays((8, 8, 128, 64), (8, 8, 64, 128))
    q, k, v = arrays((8, 8, 128, 64), (8, 8, 128, 64), (8, 8, 128, 64))
    m1, m2 = arrays((512, 512), (512, 512))
    return {
        "bmm (64,128,64)x(64,64,128) fwd": lambda lib: product(lib, a, b, False),
        "bmm (64,128,64)x(64,64,128) fwd+bwd": lambda lib: product(lib, a, b, True),
        "matmul (8,8,128,64)@(8,8,64,128) fwd": lambda lib: product(lib, a4, b4, False, "mm"),
        "matmul (8,8,128,64)@(8,8,64,128) fwd+bwd": lambda lib: product(lib, a4, b4, True,
                                                                         "mm"),
        "sdpa (8,8,128,64) fwd+bwd": lambda lib: sdpa(lib, q, k, v),
        "matmul 2-D 512x512 fwd+bwd": lambda lib: product(lib, m1, m2, True, "mm"),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
        with contextlib.suppress(Exception):
            import ctypes
            ctypes.CDLL(blas._find_mkl()._name).MKL_Set_Num_Threads(args.threads)
    print(f"jitgrad blas backend: {blas.backend()}, threads: {args.threads or 'default'}, "
          f"torch threads: {torch.get_num_threads()}")
    for name, make in cases().items():
        steps = {"jitgrad": (make(jg), contextlib.nullcontext),
                 "jitgrad-np": (make(jg), numpy_stacks), "torch": (make(torch), None)}
        times = {k: [] for k in steps}
        order = list(steps)
        for _ in range(3 + args.reps):  # 3 warm-up rounds (kernels compiled, buffers pooled)
            order = order[1:] + order[:1]  # rotate: no implementation always runs first
            for impl in order:
                step, ctx = steps[impl]
                with ctx() if ctx else contextlib.nullcontext():
                    t0 = time.perf_counter()
                    step()
                    times[impl].append(time.perf_counter() - t0)
        best = {k: min(v[3:]) for k, v in times.items()}
        med = {k: float(np.median(v[3:])) for k, v in times.items()}
        print(f"{name}:")
        for impl in steps:
            print(f"  {impl:10s} best {best[impl] * 1e3:8.3f} ms  median {med[impl] * 1e3:8.3f} ms"
                  f"  best/torch {best[impl] / best['torch']:5.2f}")
        gain = best["jitgrad-np"] / best["jitgrad"]
        print(f"  speed-up jitgrad-np -> jitgrad (best): {gain:.2f}x")


if __name__ == "__main__":
    main()
