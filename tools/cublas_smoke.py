"""Smoke check of jitgrad's cuBLAS matmul path (backends/cuda_cublas.py) on a GPU with CuPy.

    python tools/cublas_smoke.py            # correctness cases + 4096x1024 @ 1024x4096 timing

Runs a few GEMMs through ``cuda_kernels.matmul.matmul`` (the one entry point every CUDA matmul
uses) with contiguous, transposed, sliced, broadcast-batch and copied operands, and prints the
max relative error against NumPy (float64 reference) per case, plus whether cuBLAS ran and how
many operands were copied. Then times ``4096x1024 @ 1024x4096`` float32 through cuBLAS and through
the tiled kernel (and CuPy / PyTorch when importable), several interleaved rounds. Under the
simulator (NUMBA_ENABLE_CUDASIM=1) it runs the small cases on the tiled kernel only.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout


def main() -> int:
    from jitgrad.backends import cuda as backend
    from jitgrad.backends import cuda_cublas
    from jitgrad.backends.cuda_kernels.common import View
    from jitgrad.backends.cuda_kernels.matmul import matmul

    on = cuda_cublas.usable(np.float32)
    print(f"cuBLAS usable: {on} (simulator={backend.simulator_active()})")
    if on:
        cublas, _ = cuda_cublas._lib
        import cupy
        print(f"CuPy {cupy.__version__}, cuBLAS version "
              f"{cublas.getVersion(cupy.cuda.device.get_cublas_handle())}")
    rng = np.random.default_rng(0)
    sync = backend._cuda().synchronize

    def dev_view(host_buf, shape, strides, offset=0):
        flat = backend.to_device(np.ascontiguousarray(host_buf).ravel())
        logical = np.lib.stride_tricks.as_strided(
            host_buf.ravel()[offset:], shape, [s * host_buf.itemsize for s in strides])
        return View(flat, shape, strides, offset), logical.copy()

    def case(name, dtype, a_spec, b_spec):
        a, la = dev_view(*a_spec(dtype))
        b, lb = dev_view(*b_spec(dtype))
        calls, copies = cuda_cublas.stats.calls, cuda_cublas.stats.copies
        got = backend.to_host(matmul(a, b)).astype(np.float64)
        want = la.astype(np.float64) @ lb.astype(np.float64)
        err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30) if want.size else 0.0
        print(f"  {name:28s} {np.dtype(dtype).name:8s} max rel err {err:.2e}  "
              f"cublas calls +{cuda_cublas.stats.calls - calls} copies "
              f"+{cuda_cublas.stats.copies - copies}  shape {got.shape}")
        return err

    def buf(shape, dtype):
        return rng.standard_normal(shape).astype(dtype)

    def contig(*shape):
        return lambda dt: (buf(shape, dt), shape, tuple(np.empty(shape).strides[i] // 8
                                                       for i in range(len(shape))))

    def transposed(m, k):  # (m, k) view of a contiguous (k, m) buffer
        return lambda dt: (buf((k, m), dt), (m, k), (1, m))

    def col_sliced(m, k, parent_k, start):  # (m, k) columns [start, start+k) of (m, parent_k)
        return lambda dt: (buf((m, parent_k), dt), (m, k), (parent_k, 1), start)

    def broadcast(batch, m, k):  # a (m, k) matrix broadcast over batch
        return lambda dt: (buf((m, k), dt), (batch, m, k), (0, k, 1))

    def strided(m, k):  # both strides 2: needs a copy
        return lambda dt: (buf((2 * m, 2 * k), dt), (m, k), (4 * k, 2))

    worst = {}
    print("correctness (vs NumPy float64):")
    for dt in (np.float32, np.float64, np.float16):
        tol = {np.float32: 1e-5, np.float64: 1e-12, np.float16: 5e-3}[dt]
        errs = [
            case("contiguous 37x53@53x29", dt, contig(37, 53), contig(53, 29)),
            case("1x1@1x1", dt, contig(1, 1), contig(1, 1)),
            case("A^T @ B", dt, transposed(40, 31), contig(31, 17)),
            case("A @ B^T", dt, contig(40, 31), transposed(31, 17)),
            case("sliced A @ B", dt, col_sliced(20, 12, 30, 5), contig(12, 9)),
            case("batched 3x(16x24@24x8)", dt, contig(3, 16, 24), contig(3, 24, 8)),
            case("broadcast A over batch 4", dt, broadcast(4, 16, 24), contig(4, 24, 8)),
            case("copied (stride-2) A", dt, strided(10, 7), contig(7, 5)),
        ]
        worst[np.dtype(dt).name] = (max(errs), tol)
    ok = all(e <= tol for e, tol in worst.values())
    for name, (e, tol) in worst.items():
        print(f"  worst {name}: {e:.2e} (tolerance {tol:g}) {'OK' if e <= tol else 'FAIL'}")
    if backend.simulator_active():
        return 0 if ok else 1

    print("timing 4096x1024 @ 1024x4096 float32 (ms per product, 5 rounds of 10):")
    m, k, n = 4096, 1024, 4096
    a = backend.to_device(buf((m, k), np.float32).ravel())
    b = backend.to_device(buf((k, n), np.float32).ravel())
    va, vb = View(a, (m, k)), View(b, (k, n))
    runners = {}
    if on:
        runners["jitgrad cuBLAS"] = lambda: matmul(va, vb)

    def tiled():
        saved = cuda_cublas._usable
        cuda_cublas._usable = False
        try:
            return matmul(va, vb)
        finally:
            cuda_cublas._usable = saved
    runners["jitgrad tiled"] = tiled
    try:
        import cupy
        ca, cb = cupy.asarray(a.copy_to_host().reshape(m, k)), cupy.asarray(
            b.copy_to_host().reshape(k, n))
        runners["CuPy"] = lambda: ca @ cb
    except Exception:  # noqa: BLE001 - CuPy optional here
        pass
    try:
        import torch
        if torch.cuda.is_available():
            ta = torch.from_numpy(a.copy_to_host().reshape(m, k)).cuda()
            tb = torch.from_numpy(b.copy_to_host().reshape(k, n)).cuda()
            runners["PyTorch"] = lambda: ta @ tb

            def tsync():
                torch.cuda.synchronize()
                sync()
            sync_all = tsync
        else:
            sync_all = sync
    except Exception:  # noqa: BLE001 - PyTorch optional here
        sync_all = sync
    times = {name: [] for name in runners}
    for fn in runners.values():  # warm-up (compilation, cuBLAS heuristics)
        fn()
    sync_all()
    for _ in range(5):
        for name, fn in runners.items():
            sync_all()
            t0 = time.perf_counter()
            for _ in range(10):
                fn()
            sync_all()
            times[name].append((time.perf_counter() - t0) / 10 * 1e3)
    for name, ts in times.items():
        print(f"  {name:16s} {min(ts):7.3f} .. {max(ts):7.3f} ms")
    if on:
        c1 = backend.to_host(matmul(va, vb))
        c2 = backend.to_host(tiled())
        rel = np.abs(c1 - c2).max() / np.abs(c2).max()
        print(f"  cuBLAS vs tiled on the timed product: max rel diff {rel:.2e}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
