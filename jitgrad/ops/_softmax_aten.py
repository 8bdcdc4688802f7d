"""softmax / log_softmax CPU forwards in ATen's arithmetic (SoftMaxKernel.cpp), float32 and
float64, for PyTorch's bits in the ATen build this host runs (``backends.cpu_capability``): one
vector is 16 float32 / 8 float64 lanes on AVX-512, 8 / 4 on AVX2. Only the lane count differs
between the two (measured against PyTorch's AVX2 build: the same SLEEF u10 exp/log bits, the
same reduce_all order with 8 float32 lanes folded by the same butterfly), so it is the one
constant ``_VECTOR_BYTES`` below.

The last dim (``_vec_softmax_lastdim`` / ``_vec_log_softmax_lastdim``), per row:

* ``max = vec::reduce_all(maximum)`` (exact; NaN propagates);
* softmax: ``out = exp(x - max)`` with SLEEF's u10 exp on every element (``vec::map`` runs the
  vector lambda on the partial last vector too), ``sum = vec::reduce_all(+)`` of ``out`` in the
  row's dtype in reduce_all's order (``math._lane_reduce``), then ``out *= 1 / sum`` (a reciprocal,
  rounded, then a product);
* log_softmax: ``sum = vec::map_reduce_all(exp(x - max), +)`` (the same order), SLEEF's u10 log
  of it (``_sleef_log``), then ``out = (x - max) - log_sum``.

Other dims (input seen as ``(outer, dim, inner)``):

* softmax (``_vec_softmax``): ``parallel_for`` over ``outer * inner`` positions, split evenly
  over the threads whatever the size (measured: this build's split ignores the
  ``GRAIN_SIZE / dim`` grain of the public source; 33 positions already take 2 chunks);
  inside a thread's chunk, a group of ``lanes`` consecutive positions
  of one ``outer`` row that fits both in the row and in the chunk runs as a vector (SLEEF exp),
  the rest one by one with glibc's ``exp``: so the thread count moves which elements take which
  exp.  Sums run over ``dim`` from 0 in the dtype; ``out = e / sum`` is a true division;
* log_softmax (``_vec_logsoftmax``): ``inner`` in chunks of ``CHUNK = max(128 KiB / dim /
  itemsize, lanes)`` rounded down to whole vectors (no dependence on threads); within a chunk the
  last ``size % lanes`` positions use glibc's ``exp``, the others SLEEF's; the max skips NaN
  (``x > max ? x : max`` from -inf), the log is SLEEF's on every position; ``out = x - max -
  log_sum``.

Kernels compile without fast-math (``SLEEF_JIT``): no reassociation, no contraction.
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange, types
from numba.extending import overload

from ..backends.cpu_capability import CAPABILITY, vector_bytes
from ..codegen.kcache import njit_cached as njit
from ..math._lane_reduce import LANE_MAX, LANE_SUM, lane_reduce
from ..math._sleef import SLEEF_JIT, exp_u10_f32, exp_u10_f64
from ..math._sleef_log import log_u10_f32, log_u10_f64

__all__ = ["softmax_forward"]

_VECTOR_BYTES = vector_bytes(CAPABILITY)  # 64 (AVX-512) or 32 bytes (AVX2)
_BLOCK_BYTES = 128 * 1024   # _vec_logsoftmax's BLOCK_SIZE
# below this many elements one thread does the last-dim work (the split does not change bits)
_PARALLEL_MIN_ELEMENTS = 1 << 16

_FLAGS = dict(SLEEF_JIT, nogil=True, error_model="numpy")


def _sexp(x):
    """SLEEF's u10 exp in ``x``'s precision (chosen at typing time, so no branch unifies a
    float32 result with a float64 one)."""


def _slog(x):
    """SLEEF's u10 log in ``x``'s precision."""


@overload(_sexp, inline="always")
def _sexp_impl(x):
    if x == types.float32:
        return lambda x: exp_u10_f32(x)
    return lambda x: exp_u10_f64(x)


@overload(_slog, inline="always")
def _slog_impl(x):
    if x == types.float32:
        return lambda x: log_u10_f32(x)
    return lambda x: log_u10_f64(x)


@njit(inline="always", **_FLAGS)
def _lastdim_row(x, out, r, acc, log):
    xr = x[r]
    orow = out[r]
    m = lane_reduce(xr, xr, acc, LANE_MAX, False)
    one = x.dtype.type(1)
    if log:
        # map_reduce_all's sum in reduce_all's order: the exponentials go through ``out``
        for j in range(xr.shape[0]):
            orow[j] = _sexp(xr[j] - m)
        s = lane_reduce(orow, orow, acc, LANE_SUM, False)
        ls = _slog(s)
        for j in range(xr.shape[0]):
            orow[j] = (xr[j] - m) - ls
    else:
        for j in range(xr.shape[0]):
            orow[j] = _sexp(xr[j] - m)
        s = lane_reduce(orow, orow, acc, LANE_SUM, False)
        inv = one / s
        for j in range(xr.shape[0]):
            orow[j] = orow[j] * inv


@njit(**_FLAGS)
def _lastdim_serial(x, out, log):
    acc = np.empty(_VECTOR_BYTES // x.itemsize, x.dtype)
    for r in range(x.shape[0]):
        _lastdim_row(x, out, r, acc, log)


@njit(parallel=True, **_FLAGS)
def _lastdim_parallel(x, out, log):
    for r in prange(x.shape[0]):
        acc = np.empty(_VECTOR_BYTES // x.itemsize, x.dtype)
        _lastdim_row(x, out, r, acc, log)


@njit(inline="always", **_FLAGS)
def _softmax_vector_group(x, out, o, i, mx, sm):
    """A vector group of ``_vec_softmax``: ``lanes`` positions from ``i`` of row ``o``, walked
    dim by dim as ATen's loop walks memory; SLEEF's exp, a sum from 0, a true division. The
    max keeps the new value unless the running one is larger (``_mm512_max_ps``); a NaN makes
    its column NaN whichever max it leaves."""
    n = x.shape[1]
    w = mx.shape[0]
    for k in range(w):
        mx[k] = x[o, 0, i + k]
        sm[k] = 0
    for d in range(1, n):
        for k in range(w):
            v = x[o, d, i + k]
            m = mx[k]
            mx[k] = m if m > v else v
    for d in range(n):
        xs = x[o, d, i:i + w]
        os_ = out[o, d, i:i + w]
        for k in range(w):
            os_[k] = _sexp(xs[k] - mx[k])
        for k in range(w):
            sm[k] = sm[k] + os_[k]
    for d in range(n):
        os_ = out[o, d, i:i + w]
        for k in range(w):
            os_[k] = os_[k] / sm[k]


@njit(inline="always", **_FLAGS)
def _softmax_scalar_group(x, out, o, i, cnt, mx, sm):
    """Positions ``i .. i + cnt`` of row ``o`` in ``_vec_softmax``'s scalar tail: ``std::max``,
    glibc's exp, a sum from 0, a true division (each position on its own)."""
    n = x.shape[1]
    for k in range(cnt):
        mx[k] = x[o, 0, i + k]
        sm[k] = 0
    for d in range(1, n):
        for k in range(cnt):
            v = x[o, d, i + k]
            if mx[k] < v:
                mx[k] = v
    for d in range(n):
        for k in range(cnt):
            e = math.exp(x[o, d, i + k] - mx[k])
            out[o, d, i + k] = e
            sm[k] = sm[k] + e
    for d in range(n):
        for k in range(cnt):
            out[o, d, i + k] = out[o, d, i + k] / sm[k]


@njit(inline="always", **_FLAGS)
def _softmax_chunk(x, out, begin, end):
    inner = x.shape[2]
    w = _VECTOR_BYTES // x.itemsize
    mx = np.empty(w, x.dtype)
    sm = np.empty(w, x.dtype)
    idx = begin
    while idx < end:
        o, i = idx // inner, idx % inner
        if i + w <= inner and idx + w <= end:
            _softmax_vector_group(x, out, o, i, mx, sm)
            idx += w
        else:
            tail = end - idx if idx + w > end else inner - i
            stop = idx + tail
            while idx < stop:  # the scalar tail, row by row
                o, i = idx // inner, idx % inner
                cnt = min(stop - idx, inner - i)
                _softmax_scalar_group(x, out, o, i, cnt, mx, sm)
                idx += cnt


@njit(parallel=True, **_FLAGS)
def _softmax_dim(x, out, bounds):
    for c in prange(bounds.shape[0] - 1):
        _softmax_chunk(x, out, bounds[c], bounds[c + 1])


@njit(inline="always", **_FLAGS)
def _log_softmax_block(x, out, o, start, size, buf):
    n = x.shape[1]
    w = _VECTOR_BYTES // x.itemsize
    vec_end = size - size % w
    mx = buf[0]
    sm = buf[1]
    for k in range(size):
        mx[k] = -np.inf
        sm[k] = 0
    for d in range(n):
        for k in range(size):
            v = x[o, d, start + k]
            if v > mx[k]:
                mx[k] = v
    for d in range(n):
        for k in range(size):
            t = x[o, d, start + k] - mx[k]
            if k < vec_end:
                e = _sexp(t)
            else:
                e = math.exp(t)
            sm[k] = sm[k] + e
    for k in range(size):
        sm[k] = _slog(sm[k])
    for d in range(n):
        for k in range(size):
            out[o, d, start + k] = x[o, d, start + k] - mx[k] - sm[k]


@njit(parallel=True, **_FLAGS)
def _log_softmax_dim(x, out, chunk):
    outer, _, inner = x.shape
    chunks = (inner + chunk - 1) // chunk
    for t in prange(outer * chunks):
        buf = np.empty((2, chunk), x.dtype)
        o, k = t // chunks, t % chunks
        start = k * chunk
        _log_softmax_block(x, out, o, start, min(chunk, inner - start), buf)


def _chunks(n, grain, threads):
    """The ranges ``at::parallel_for(0, n, grain)`` gives ``threads`` OpenMP threads."""
    if n <= grain or n <= 1 or threads <= 1:
        return np.array([0, n], np.int64)
    t = min(threads, -(-n // max(grain, 1)))
    size = -(-n // t)
    return np.array(sorted({min(n, k * size) for k in range(t + 1)}), np.int64)


def softmax_forward(x, dim, log, threads):
    """softmax (``log=False``) or log_softmax of a non-empty float32/float64 host array along
    ``dim``, PyTorch's bits with ``threads`` intra-op threads."""
    x = np.ascontiguousarray(x)
    if x.ndim == 0:
        x = x.reshape(1)
    out = np.empty(x.shape, x.dtype)
    n = x.shape[dim]
    if dim == x.ndim - 1:
        x2, o2 = x.reshape(-1, n), out.reshape(-1, n)
        kernel = _lastdim_parallel if x.size >= _PARALLEL_MIN_ELEMENTS and threads > 1 \
            else _lastdim_serial
        kernel(x2, o2, log)
        return out
    outer = int(np.prod(x.shape[:dim], dtype=np.int64))
    inner = x.size // (outer * n)
    x3, o3 = x.reshape(outer, n, inner), out.reshape(outer, n, inner)
    if log:
        w = _VECTOR_BYTES // x.itemsize
        chunk = max(_BLOCK_BYTES // n // x.itemsize, w) // w * w
        _log_softmax_dim(x3, o3, chunk)
    else:
        _softmax_dim(x3, o3, _chunks(outer * inner, 1, threads))
    return out
