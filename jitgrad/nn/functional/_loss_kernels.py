"""Numba kernels of the classification losses' fast path.

``log_softmax_rows`` is ``cross_entropy``'s log-softmax of a host (N, C) float matrix: one pass
per row instead of six NumPy operations over the whole matrix (max, subtract, exp, sum, log,
subtract: ~90 us on a 256x10 batch, most of it per-call cost). The eager fast path
(``loss_classification._log_softmax_rows``) and a compiled step's lowered cross-entropy
(``_compile/lower.py``) both call it, so their numbers are the same bits.
"""
from __future__ import annotations

import numpy as np

from ...codegen.kcache import njit_cached as njit


@njit(nogil=True, error_model="numpy")
def log_softmax_rows(x, out):
    """``out = (x - max) - log(sum(exp(x - max)))`` per row of C-contiguous ``x``. The sum
    accumulates in float64 (NumPy sums float32 pairwise in float32); NaN and inf behave as in
    NumPy's expression: a NaN in a row makes the row NaN, +inf makes it NaN (inf - inf)."""
    n, c = x.shape
    for r in range(n):
        m = x[r, 0]
        for j in range(1, c):
            v = x[r, j]
            if v > m or v != v:
                m = v
                if v != v:
                    break
        s = 0.0
        for j in range(c):
            s += np.exp(x[r, j] - m)
        lse = x.dtype.type(np.log(s))
        for j in range(c):
            out[r, j] = (x[r, j] - m) - lse


@njit(nogil=True, error_model="numpy")
def nll_rows_total(x, t):
    """``-sum(x[r, t[r]])`` over the rows, accumulated in float64 row after row (targets
    already checked to be in range)."""
    total = 0.0
    for r in range(x.shape[0]):
        total -= x[r, t[r]]
    return total


@njit(nogil=True, error_model="numpy")
def log_softmax_rows_backward(y, g, out):
    """``out = g - exp(y) * sum(g, 1)`` per row (the VJP of ``log_softmax_rows``; ``out`` may
    be ``g``: each row's sum is taken before the row is written)."""
    n, c = y.shape
    for r in range(n):
        s = g[r, 0] * 0
        for j in range(c):
            s += g[r, j]
        for j in range(c):
            out[r, j] = g[r, j] - np.exp(y[r, j]) * s
