"""Pooling and resampling on the device: the twins of ``backends/pool_cpu.py`` (same loops, same
tie and NaN rules, same tap tables), one thread per output element (grid-stride).

* ``window_max``: max pools (plain, dilated, adaptive): values and flat plane indices.
* ``resample``: separable linear maps (average pools, interpolation, and their backward with
  the transposed tables); float16 computes in float32 (``half_as_float32``).

Inputs are C-contiguous ``(P, D, H, W)`` device arrays (flat buffers); window bounds and tap
tables are device arrays the caller uploads once per geometry (``ops/pool.py`` caches them).
A max pool's backward is the index layer's ``scatter_add`` (atomics: windows may overlap).
"""
from __future__ import annotations

import numpy as np

from ..cuda_env import kernel_jit
from .common import cuda, half_as_float32, lowest, prod

__all__ = ["window_max", "resample", "make_window_max_kernel", "make_resample_kernel"]

_max_cache: dict = {}
_resample_cache: dict = {}


def make_window_max_kernel(dtype):
    """``(pyfunc, kernel)``; signature ``(x, init, lo0, hi0, s0, lo1, hi1, s1, lo2, hi2, s2,
    h, w, od, oh, ow, n, out, idx)`` over flat arrays (``n`` output elements)."""
    key = np.dtype(dtype).str
    hit = _max_cache.get(key)
    if hit is not None:
        return hit

    def window_max_flat(x, init, lo0, hi0, s0, lo1, hi1, s1, lo2, hi2, s2, d, h, w, od, oh, ow,
                        n, out, idx):
        for e in range(cuda.grid(1), n, cuda.gridsize(1)):
            c = e % ow
            r = e // ow
            b = r % oh
            r //= oh
            a = r % od
            p = r // od
            base = p * d * h * w
            best = init
            at = (lo0[a] * h + lo1[b]) * w + lo2[c]
            for i in range(lo0[a], hi0[a], s0):
                for j in range(lo1[b], hi1[b], s1):
                    for k in range(lo2[c], hi2[c], s2):
                        off = (i * h + j) * w + k
                        v = x[base + off]
                        if v > best or v != v:
                            best = v
                            at = off
            out[e] = best
            idx[e] = at

    hit = _max_cache[key] = (window_max_flat, kernel_jit(window_max_flat))
    return hit


def make_resample_kernel(dtype):
    """``(pyfunc, kernel)``; signature ``(x, zero, i0, w0, d0, t0n, i1, w1, d1, t1n, i2, w2, d2,
    t2n, d, h, w, od, oh, ow, n, out)``: tap tables flat, ``tKn`` columns each."""
    key = np.dtype(dtype).str
    hit = _resample_cache.get(key)
    if hit is not None:
        return hit

    def resample_flat(x, zero, i0, w0, d0, t0n, i1, w1, d1, t1n, i2, w2, d2, t2n, d, h, w, od,
                      oh, ow, n, out):
        for e in range(cuda.grid(1), n, cuda.gridsize(1)):
            c = e % ow
            r = e // ow
            b = r % oh
            r //= oh
            a = r % od
            p = r // od
            base = p * d * h * w
            acc0 = zero
            for t0 in range(t0n):
                i = i0[a * t0n + t0]
                if i < 0:
                    break
                acc1 = zero
                for t1 in range(t1n):
                    j = i1[b * t1n + t1]
                    if j < 0:
                        break
                    acc2 = zero
                    for t2 in range(t2n):
                        k = i2[c * t2n + t2]
                        if k < 0:
                            break
                        acc2 += w2[c * t2n + t2] * x[base + (i * h + j) * w + k]
                    acc1 += w1[b * t1n + t1] * acc2
                acc0 += w0[a * t0n + t0] * acc1
            out[e] = acc0 / (d0[a] * d1[b] * d2[c])

    hit = _resample_cache[key] = (resample_flat, kernel_jit(resample_flat))
    return hit


def _flat(a):
    return a.reshape(prod(a.shape)) if len(a.shape) != 1 else a


def window_max(x, in_spatial, windows, out_spatial):
    """``x``: flat C-contiguous device array of (P, *in_spatial) (3 spatial dims);
    ``windows``: three ``(lo, hi, step)`` (device int64 arrays, int). Returns flat
    ``(values, indices)`` device arrays of P * prod(out_spatial) elements."""
    from .. import cuda as backend
    dtype = np.dtype(x.dtype)
    planes = x.shape[0] // max(prod(in_spatial), 1) if prod(in_spatial) else 0
    n = planes * prod(out_spatial)
    out = backend.empty((n,), dtype)
    idx = backend.empty((n,), np.int64)
    if n:
        args = []
        for lo, hi, step in windows:
            args += [lo, hi, np.int64(step)]
        init = dtype.type(lowest(dtype))
        _, kern = make_window_max_kernel(dtype)
        backend.launch_flat(kern, n, (_flat(x), init, *args,
                                      *(np.int64(s) for s in in_spatial),
                                      *(np.int64(s) for s in out_spatial), np.int64(n),
                                      out, idx))
    return out, idx


@half_as_float32
def resample(x, in_spatial, taps, out_spatial):
    """``x``: flat C-contiguous float device array of (P, *in_spatial); ``taps``: three
    ``(index, weight, divisor)`` device tables (weights/divisors in ``x``'s dtype, index
    ``(O, T)`` int64 flattened) with their column counts: ``(index, weight, divisor, T)``."""
    from .. import cuda as backend
    dtype = np.dtype(x.dtype)
    size = prod(in_spatial)
    planes = x.shape[0] // size if size else 0
    n = planes * prod(out_spatial)
    out = backend.empty((n,), dtype)
    if n:
        args = []
        for index, weight, divisor, t in taps:
            args += [index, weight, divisor, np.int64(t)]
        _, kern = make_resample_kernel(dtype)
        backend.launch_flat(kern, n, (_flat(x), dtype.type(0), *args,
                                      *(np.int64(s) for s in in_spatial),
                                      *(np.int64(s) for s in out_spatial), np.int64(n), out))
    return out
