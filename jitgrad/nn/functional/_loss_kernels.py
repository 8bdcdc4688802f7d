"""Numba kernels of the classification losses' fast path.

``log_softmax_rows_backward`` is ``cross_entropy``'s LogSoftmaxBackward0 on a host (N, C) float
matrix: one pass per row instead of NumPy's whole-matrix expression. The eager fast path
(``loss_classification._log_softmax_rows``) and a compiled step's lowered cross-entropy
(``_compile/lower.py``) both call it, so their numbers are the same bits. Their forward is ATen's
log-softmax row kernel (``ops/_softmax_aten``) and their NLL sum ``_nll_kernels``.
"""
from __future__ import annotations

import numpy as np

from ...codegen.kcache import njit_cached as njit
from ...math import sleef_exp
from ...math._intrinsics import fma

# ATen's softmax kernels are built for AVX-512 (this PyTorch's capability here): one vector is
# 64 bytes, 16 float32 or 8 float64 lanes
_VECTOR_BYTES = 64


@njit(inline="always", nogil=True, error_model="numpy")
def _row_sum_aten(g, r, acc):
    """``vec::reduce_all(+)`` of row ``r`` in its dtype, in ATen's order: a row shorter than a
    vector adds left to right; a longer one adds whole vectors lane by lane, the last partial
    vector into its first lanes, then folds the lanes (float32: the AVX-512 butterfly, lane
    ``l`` plus lane ``l + h`` for h = 8, 4, 2, 1; float64 has no SIMD fold, left to right)."""
    c = g.shape[1]
    w = acc.shape[0]
    if c < w:
        s = g[r, 0]
        for j in range(1, c):
            s += g[r, j]
        return s
    for lane in range(w):
        acc[lane] = g[r, lane]
    d = w
    while d + w <= c:
        for lane in range(w):
            acc[lane] += g[r, d + lane]
        d += w
    for lane in range(c - d):
        acc[lane] += g[r, d + lane]
    if g.itemsize == 4:
        h = w // 2
        while h >= 1:
            for lane in range(h):
                acc[lane] = acc[lane] + acc[lane + h]
            h //= 2
        return acc[0]
    s = acc[0]
    for lane in range(1, w):
        s += acc[lane]
    return s


@njit(nogil=True, error_model="numpy")
def log_softmax_rows_backward(y, g, out):
    """``out = g - exp(y) * sum(g, 1)`` per row (the VJP of ``log_softmax_rows``; ``out`` may
    be ``g``: each row's sum is taken before the row is written), PyTorch's bits: ATen's
    ``_vec_log_softmax_backward`` lambda ``x - y.exp() * Vec(sum)`` with SLEEF's u10 exp, one
    fused multiply-subtract as GCC contracts it (checked element by element against
    ``torch.log_softmax``'s backward), the sum in the row's dtype in ``vec::reduce_all``'s
    order."""
    n, c = y.shape
    acc = np.empty(_VECTOR_BYTES // g.itemsize, g.dtype)
    for r in range(n):
        s = _row_sum_aten(g, r, acc)
        for j in range(c):
            out[r, j] = fma(-sleef_exp(y[r, j]), s, g[r, j])
