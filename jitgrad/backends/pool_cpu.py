"""The pooling/resampling CPU kernels (Numba, cached on disk), over planes of up to 3 dims.

Every op is one of three shapes, whatever its spatial rank (1-D/2-D inputs arrive as
``(P, 1, 1, W)`` / ``(P, 1, H, W)``, with unit dims that cost nothing):

* ``window_max``: per output position, the max over a strided window (``range(lo, hi, step)``
  per dim, already clipped to the input) and its flat index in the plane: max pools (plain,
  dilated, adaptive). PyTorch's rule: a value replaces the running max when it is greater or
  NaN, starting from ``init`` (-inf, or the dtype's lowest integer) with the window's first
  position, so ties keep the first index and NaN the last NaN's (computed branch-free, below).
* ``resample``: a separable linear map, ``sum_t0 w0 * (sum_t1 w1 * (sum_t2 w2 * x))`` over each
  dim's taps, divided by the product of the per-dim divisors: average pools (weights 1, divisor
  the window count) and interpolation (weights, divisor 1). Taps are ``(O, T)`` index tables
  padded with -1 (only in-bounds taps are listed, so ``0 * inf`` never enters a window that does
  not touch the inf). The same kernel with the transposed tables is the backward.
* ``scatter_add_planes``: a max pool's backward (gradients added at the saved indices).

``max_pool2d_regular`` is ``window_max`` specialized to regular 2-D windows (the CNN case; see
its comment). The per-plane bodies are inlined into their plane loops (``inline="always"``):
a call per plane cost as much as the work of a small plane.

Parallel over planes (prange) for large inputs, serial below ``cpu.PARALLEL_THRESHOLD``; one
compiled specialization per dtype.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from ..codegen.kcache import njit_cached as njit
from .cpu import PARALLEL_THRESHOLD, empty  # empty: pooled, large outputs reuse mapped memory

__all__ = ["window_max", "max_pool2d_regular", "resample", "scatter_add_planes"]

_FLAGS = dict(nogil=True, error_model="numpy")  # cached: njit_cached


def _by_size(serial, parallel, n):
    """prange pays off only for large inputs (NUMBA_NOTES.md): below ``PARALLEL_THRESHOLD``
    elements the serial twin runs (a parallel launch costs ~100+ us with tbb here)."""
    return parallel if n >= PARALLEL_THRESHOLD else serial


# Each kernel is a per-plane body (written once) under a serial and a prange loop over planes.


# The max update is written branch-free: ``not (v <= best)`` (greater, or either is NaN) picks
# the running max, which LLVM turns into selects; PyTorch's rule (a NaN is kept, and the last
# NaN wins) is restored after the window from the last NaN seen. With random data the branchy
# ``if v > best or v != v`` mispredicts on every other element. Unit-step windows (no
# dilation, adaptive pools) get their own copy of the loop, with literal steps: a runtime
# ``range`` step costs ~2x. Measured on 2048 float32 planes of 32x32, 2x2 windows, one thread
# (2-D loops): branchy 5-17 ms, branch-free 3.3-3.7 ms; runtime step 10 ms vs 5 ms.


@njit(inline="always", **_FLAGS)
def _max_windows(x, p, init, lo0, hi0, s0, lo1, hi1, s1, lo2, hi2, s2, out, idx):
    """Every window of plane ``p``. Inlined at Numba IR level into each caller, so literal
    steps there are constants LLVM folds."""
    h, w = x.shape[2], x.shape[3]
    od, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    for a in range(od):
        for b in range(oh):
            for c in range(ow):
                best = init
                at = (lo0[a] * h + lo1[b]) * w + lo2[c]
                nan_at = -1
                nan_v = init
                for i in range(lo0[a], hi0[a], s0):
                    for j in range(lo1[b], hi1[b], s1):
                        for k in range(lo2[c], hi2[c], s2):
                            v = x[p, i, j, k]
                            off = (i * h + j) * w + k
                            take = not (v <= best)
                            best = v if take else best
                            at = off if take else at
                            nan = v != v
                            nan_at = off if nan else nan_at
                            nan_v = v if nan else nan_v
                if nan_at >= 0:
                    best, at = nan_v, nan_at
                out[p, a, b, c] = best
                idx[p, a, b, c] = at


@njit(inline="always", **_FLAGS)
def _max_plane(x, p, init, lo0, hi0, s0, lo1, hi1, s1, lo2, hi2, s2, out, idx):
    if s0 == 1 and s1 == 1 and s2 == 1:
        _max_windows(x, p, init, lo0, hi0, 1, lo1, hi1, 1, lo2, hi2, 1, out, idx)
    else:
        _max_windows(x, p, init, lo0, hi0, s0, lo1, hi1, s1, lo2, hi2, s2, out, idx)


@njit(**_FLAGS)
def _window_max_serial(x, init, lo0, hi0, s0, lo1, hi1, s1, lo2, hi2, s2, out, idx):
    for p in range(x.shape[0]):
        _max_plane(x, p, init, lo0, hi0, s0, lo1, hi1, s1, lo2, hi2, s2, out, idx)


@njit(parallel=True, **_FLAGS)
def _window_max_parallel(x, init, lo0, hi0, s0, lo1, hi1, s1, lo2, hi2, s2, out, idx):
    for p in prange(x.shape[0]):
        _max_plane(x, p, init, lo0, hi0, s0, lo1, hi1, s1, lo2, hi2, s2, out, idx)


# Regular 2-D windows (``range(o * s, o * s + k)`` per dim, all inside the plane: no padding,
# dilation or ceil-mode overhang), the CNN case, get their own kernel: no per-window bounds,
# and ``(v > best) | (v != v)`` is PyTorch's update rule as it stands (a NaN replaces the max
# and is then only replaced by a later NaN), so no NaN bookkeeping either. That rule, carried
# with the index, is associative (first max if no NaN, else the last NaN), so a 2x2 window is
# reduced as a tree of depth 2 rather than a chain of 4. 512 float32 planes of 8x8, one
# thread: generic window kernel 110 us, the chain 49 us, the tree 32 us.


@njit(inline="always", **_FLAGS)
def _pick(a, ia, b, ib):
    """PyTorch's max update of ``(a, ia)`` by a later element ``(b, ib)``."""
    take = (b > a) | (b != b)
    return (b if take else a), (ib if take else ia)


@njit(inline="always", **_FLAGS)
def _max2d_planes(x, p0, p1, kh, kw, sh, sw, out, idx):
    w = x.shape[2]
    oh, ow = out.shape[1], out.shape[2]
    for p in range(p0, p1):
        for a in range(oh):
            i0 = a * sh
            for b in range(ow):
                j0 = b * sw
                best = x[p, i0, j0]
                at = i0 * w + j0
                for di in range(kh):
                    for dj in range(kw):
                        best, at = _pick(best, at, x[p, i0 + di, j0 + dj],
                                         (i0 + di) * w + j0 + dj)
                out[p, a, b] = best
                idx[p, a, b] = at


@njit(inline="always", **_FLAGS)
def _max2x2_planes(x, p0, p1, out, idx):
    w = x.shape[2]
    oh, ow = out.shape[1], out.shape[2]
    for p in range(p0, p1):
        for a in range(oh):
            i = 2 * a
            for b in range(ow):
                j = 2 * b
                o = i * w + j
                m0, k0 = _pick(x[p, i, j], o, x[p, i, j + 1], o + 1)
                m1, k1 = _pick(x[p, i + 1, j], o + w, x[p, i + 1, j + 1], o + w + 1)
                out[p, a, b], idx[p, a, b] = _pick(m0, k0, m1, k1)


@njit(inline="always", **_FLAGS)
def _max2d_chunk(x, p0, p1, kh, kw, sh, sw, out, idx):
    if kh == 2 and kw == 2 and sh == 2 and sw == 2:
        _max2x2_planes(x, p0, p1, out, idx)
    else:
        _max2d_planes(x, p0, p1, kh, kw, sh, sw, out, idx)


@njit(**_FLAGS)
def _max2d_serial(x, kh, kw, sh, sw, out, idx):
    _max2d_chunk(x, 0, x.shape[0], kh, kw, sh, sw, out, idx)


@njit(parallel=True, **_FLAGS)
def _max2d_parallel(x, kh, kw, sh, sw, out, idx):
    planes = x.shape[0]
    chunk = 16
    for c in prange((planes + chunk - 1) // chunk):
        _max2d_chunk(x, c * chunk, min(planes, (c + 1) * chunk), kh, kw, sh, sw, out, idx)


@njit(inline="always", **_FLAGS)
def _resample_plane(x, p, zero, i0, w0, d0, i1, w1, d1, i2, w2, d2, out):
    od, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    t0n, t1n, t2n = i0.shape[1], i1.shape[1], i2.shape[1]
    for a in range(od):
        for b in range(oh):
            for c in range(ow):
                acc0 = zero
                for t0 in range(t0n):
                    i = i0[a, t0]
                    if i < 0:
                        break
                    acc1 = zero
                    for t1 in range(t1n):
                        j = i1[b, t1]
                        if j < 0:
                            break
                        acc2 = zero
                        for t2 in range(t2n):
                            k = i2[c, t2]
                            if k < 0:
                                break
                            acc2 += w2[c, t2] * x[p, i, j, k]
                        acc1 += w1[b, t1] * acc2
                    acc0 += w0[a, t0] * acc1
                out[p, a, b, c] = acc0 / (d0[a] * d1[b] * d2[c])


@njit(**_FLAGS)
def _resample_serial(x, zero, i0, w0, d0, i1, w1, d1, i2, w2, d2, out):
    for p in range(x.shape[0]):
        _resample_plane(x, p, zero, i0, w0, d0, i1, w1, d1, i2, w2, d2, out)


@njit(parallel=True, **_FLAGS)
def _resample_parallel(x, zero, i0, w0, d0, i1, w1, d1, i2, w2, d2, out):
    for p in prange(x.shape[0]):
        _resample_plane(x, p, zero, i0, w0, d0, i1, w1, d1, i2, w2, d2, out)


@njit(inline="always", **_FLAGS)
def _scatter_plane(g, idx, p, out):
    for r in range(out.shape[1]):
        out[p, r] = 0
    for j in range(g.shape[1]):
        out[p, idx[p, j]] += g[p, j]


@njit(**_FLAGS)
def _scatter_add_serial(g, idx, out):
    for p in range(g.shape[0]):
        _scatter_plane(g, idx, p, out)


@njit(parallel=True, **_FLAGS)
def _scatter_add_parallel(g, idx, out):
    for p in prange(g.shape[0]):
        _scatter_plane(g, idx, p, out)


def window_max(x, windows, out_spatial):
    """``x``: (P, D, H, W) C-contiguous; ``windows``: three ``(lo, hi, step)`` (int64 arrays
    of the output dim's length, and an int). Returns ``(values, flat indices)``."""
    shape = (x.shape[0],) + tuple(out_spatial)
    out = empty(shape, x.dtype)
    idx = empty(shape, np.int64)
    init = x.dtype.type(-np.inf) if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    args = []
    for lo, hi, step in windows:
        args += [lo, hi, np.int64(step)]
    _by_size(_window_max_serial, _window_max_parallel, x.size)(x, x.dtype.type(init), *args,
                                                             out, idx)
    return out, idx


def max_pool2d_regular(x, kernel, stride, out_hw):
    """``window_max`` for regular 2-D windows: ``x`` (P, H, W) C-contiguous, window ``(a, b)``
    covering rows ``a*sh .. a*sh+kh-1`` and columns ``b*sw .. b*sw+kw-1``, all inside ``x``.
    Returns ``(values, flat indices)`` of shape (P, OH, OW)."""
    shape = (x.shape[0],) + tuple(out_hw)
    out = empty(shape, x.dtype)
    idx = empty(shape, np.int64)
    (kh, kw), (sh, sw) = kernel, stride
    _by_size(_max2d_serial, _max2d_parallel, x.size)(x, np.int64(kh), np.int64(kw),
                                                     np.int64(sh), np.int64(sw), out, idx)
    return out, idx


def resample(x, taps, out_spatial):
    """``x``: (P, D, H, W) C-contiguous float; ``taps``: three ``(index, weight, divisor)``
    tables in ``x``'s dtype (index int64). Returns the (P, OD, OH, OW) result."""
    out = empty((x.shape[0],) + tuple(out_spatial), x.dtype)
    args = []
    for index, weight, divisor in taps:
        args += [index, weight, divisor]
    _by_size(_resample_serial, _resample_parallel, max(x.size, out.size))(
        x, x.dtype.type(0), *args, out)
    return out


def scatter_add_planes(g, idx, plane_size):
    """``g``, ``idx``: (P, Q); returns (P, plane_size) with ``g`` added at ``idx`` per plane."""
    out = empty((g.shape[0], plane_size), g.dtype)
    _by_size(_scatter_add_serial, _scatter_add_parallel, out.size)(g, idx, out)
    return out
