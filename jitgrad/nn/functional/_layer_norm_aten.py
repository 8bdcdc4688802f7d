"""layer_norm's CPU forward in ATen's arithmetic (float32 / float64): PyTorch's bits for the
output, the saved mean and rstd (layer_norm_kernel.cpp's LayerNormKernelImplInternal over
moments_utils.h's RowwiseMoments).

Measured against ``torch.native_layer_norm`` (this PyTorch 2.13, element by element; the
variants below were each tried and only this combination gives every bit):

* the kernel runs with AVX2 widths (8 float32 / 4 float64 lanes), not AVX-512's, although
  the CPU capability reads AVX512;
* RowwiseMoments, all in the input's dtype ``T``: the first ``n = N // lanes`` whole vectors in
  chunks of 16 vectors, each a per-lane Welford pass from zero with UpdateMomentsVec's explicit
  ``fmadd``s (``m1 = fma(1/(j+1), delta, m1)``, ``m2 = fma(delta, x - m1, m2)``); each chunk
  merged into a cascade of ``CeilLog2(ceil(n / 16))`` levels (a binary counter's carries), the
  levels then folded into level 0, by AddMomentsVec's newer form: ``cd = c * delta``,
  ``m1 + cd``, ``fmadd(delta * m0, cd, m2 + m2_add)`` (no other contraction in vector code);
  the last ``N % lanes`` values by a scalar Welford pass (``m1 += delta / count``, ``m2`` one
  FMA); the lanes then merged into it one by one with the scalar AddMoments, which GCC
  contracts (``m1 = fma(c, delta, m1)``, ``m2 += fma(delta * delta * c, m0, m2_add)``);
  ``var = m2 / N``;
* ``rstd = 1 / sqrt(var + T(eps))``;
* ``y = fma((x + (-mean)) * rstd, gamma, beta)``; without gamma, ``fma(x + (-mean), rstd,
  beta)`` (GCC folds the ``* 1``), a missing beta being 0.

Rows are independent (``parallel_for`` over rows), so the thread count does not change a bit.
Kernels compile without fast-math: every FMA is an explicit ``fma``.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from ...codegen.kcache import njit_cached as njit
from ...math._intrinsics import fma

__all__ = ["layer_norm_forward"]

_FLAGS = dict(nogil=True, error_model="numpy", fastmath=False)
_VECTOR_BYTES = 32            # AVX2 widths (measured: see above)
_CHUNK = 16                   # moments_utils.h's kChunkSize
_PARALLEL_MIN_ELEMENTS = 1 << 16


def _ceil_log2(x):
    """ATen's utils::CeilLog2 (1 for x <= 2)."""
    return 1 if x <= 2 else int(x - 1).bit_length()


@njit(inline="always", **_FLAGS)
def _add_moments_vec(m0_add, m1_add, m2_add, m0, m1, m2, like):
    """One lane of AddMomentsVec (explicit products and one ``fmadd``; the vector operators are
    not contracted): the merged (m0, m1, m2). ``like``: an array of the dtype, for the casts."""
    dt = like.dtype.type
    n = m0 + m0_add
    c = dt(0) if n == 0 else dt(m0_add) / dt(n)
    delta = m1_add - m1
    cd = c * delta
    return n, m1 + cd, fma(delta * dt(m0), cd, m2 + m2_add)


@njit(inline="always", **_FLAGS)
def _add_moments(m0_add, m1_add, m2_add, m0, m1, m2, like):
    """The scalar AddMoments, as GCC contracts it: ``m1 += c * delta`` one FMA, ``m2 += m2_add
    + delta * delta * c * m0`` with the last product fused into the inner add."""
    dt = like.dtype.type
    n = m0 + m0_add
    c = dt(0) if n == 0 else dt(m0_add) / dt(n)
    delta = m1_add - m1
    return n, fma(c, delta, m1), m2 + fma(delta * delta * c, dt(m0), m2_add)


@njit(inline="always", **_FLAGS)
def _row_moments(xr, depth, m0s, m1s, m2s, cv, v1, v2):
    """RowwiseMoments(xr, N): (mean, var) in xr's dtype."""
    big_n = xr.shape[0]
    w = v1.shape[0]
    dt = xr.dtype.type
    zero = dt(0)
    n = big_n // w
    m = (n + _CHUNK - 1) // _CHUNK
    for d in range(depth):
        m0s[d] = 0
        for lane in range(w):
            m1s[d, lane] = zero
            m2s[d, lane] = zero
    for i in range(m):
        base = i * _CHUNK * w
        cnt = min(_CHUNK, n - i * _CHUNK)
        for lane in range(w):
            v1[lane] = zero
            v2[lane] = zero
        for j in range(cnt):
            cj = cv[j]
            for lane in range(w):
                x = xr[base + j * w + lane]
                delta = x - v1[lane]
                v1[lane] = fma(cj, delta, v1[lane])       # UpdateMomentsVec's fmadds
                v2[lane] = fma(delta, x - v1[lane], v2[lane])
        # AddMomentsVec(cnt, v, stack[0]), then the carries up the cascade
        m0_old = m0s[0]
        for lane in range(w):
            _, m1s[0, lane], m2s[0, lane] = _add_moments_vec(cnt, v1[lane], v2[lane], m0_old,
                                                         m1s[0, lane], m2s[0, lane], v1)
        m0s[0] = m0_old + cnt
        mask = i + 1
        j = 1
        while j < depth and (mask & 1) == 0:
            m0_old = m0s[j]
            for lane in range(w):
                _, m1s[j, lane], m2s[j, lane] = _add_moments_vec(
                    m0s[j - 1], m1s[j - 1, lane], m2s[j - 1, lane], m0_old, m1s[j, lane],
                    m2s[j, lane], v1)
                m1s[j - 1, lane] = zero
                m2s[j - 1, lane] = zero
            m0s[j] = m0_old + m0s[j - 1]
            m0s[j - 1] = 0
            mask >>= 1
            j += 1
    for d in range(1, depth):
        m0_old = m0s[0]
        for lane in range(w):
            _, m1s[0, lane], m2s[0, lane] = _add_moments_vec(m0s[d], m1s[d, lane], m2s[d, lane],
                                                         m0_old, m1s[0, lane], m2s[0, lane], v1)
        m0s[0] = m0_old + m0s[d]
    c0 = 0
    m1 = zero
    m2 = zero
    for i in range(n * w, big_n):
        x = xr[i]
        delta = x - m1
        c0 += 1
        m1 = m1 + delta / dt(c0)
        m2 = fma(delta, x - m1, m2)
    for lane in range(w):
        c0, m1, m2 = _add_moments(n, m1s[0, lane], m2s[0, lane], c0, m1, m2, v1)
    return m1, m2 / dt(big_n)


@njit(inline="always", **_FLAGS)
def _row(x, r, gamma, beta, eps, depth, y, stats, gamma_given=True):
    w = _VECTOR_BYTES // x.itemsize
    dt = x.dtype.type
    m0s = np.zeros(max(depth, 1), np.int64)
    m1s = np.empty((max(depth, 1), w), x.dtype)
    m2s = np.empty((max(depth, 1), w), x.dtype)
    cv = np.empty(_CHUNK, x.dtype)
    for j in range(_CHUNK):
        cv[j] = dt(1) / dt(j + 1)
    v1 = np.empty(w, x.dtype)
    v2 = np.empty(w, x.dtype)
    xr = x[r]
    mean, var = _row_moments(xr, depth, m0s, m1s, m2s, cv, v1, v2)
    rstd = dt(1) / np.sqrt(var + eps)
    bias = -mean
    for j in range(xr.shape[0]):
        if gamma_given:
            y[r, j] = fma((xr[j] + bias) * rstd, gamma[j], beta[j])
        else:  # GCC folds ``* 1`` of the missing gamma and fuses the product left
            y[r, j] = fma(xr[j] + bias, rstd, beta[j])
    stats[0, r] = mean
    stats[1, r] = rstd


@njit(**_FLAGS)
def _rows_serial(x, gamma, beta, eps, depth, y, stats, gamma_given):
    for r in range(x.shape[0]):
        _row(x, r, gamma, beta, eps[0], depth, y, stats, gamma_given)


@njit(parallel=True, **_FLAGS)
def _rows_parallel(x, gamma, beta, eps, depth, y, stats, gamma_given):
    for r in prange(x.shape[0]):
        _row(x, r, gamma, beta, eps[0], depth, y, stats, gamma_given)


def layer_norm_forward(x2, weight, bias, eps, threads=1):
    """``(y, mean, rstd)`` of a C-contiguous ``(M, N)`` float32/float64 array (M, N > 0)
    normalized over its rows; ``weight``/``bias``: arrays of N values or None. ``mean`` and
    ``rstd`` have M values, in the input's dtype (ATen's saved statistics)."""
    dt = x2.dtype
    n = x2.shape[1]
    gamma = np.ones(n, dt) if weight is None else np.ascontiguousarray(weight, dt).reshape(n)
    beta = np.zeros(n, dt) if bias is None else np.ascontiguousarray(bias, dt).reshape(n)
    w = _VECTOR_BYTES // dt.itemsize
    depth = _ceil_log2(-(-(n // w) // _CHUNK))
    y = np.empty(x2.shape, dt)
    stats = np.empty((2, x2.shape[0]), dt)
    kernel = _rows_parallel if x2.size >= _PARALLEL_MIN_ELEMENTS and threads > 1 \
        else _rows_serial
    kernel(np.ascontiguousarray(x2), gamma, beta, np.array([eps], dt), depth, y, stats,
           weight is not None)
    return y, stats[0], stats[1]
