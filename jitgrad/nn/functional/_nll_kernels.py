"""``nll_loss``'s reduced forward in ATen's arithmetic (``nll_loss_out_frame`` /
``nll_loss2d_forward_out_frame`` in LossNLL.cpp / LossNLL2d.cpp), so a printed
``loss.item()`` has PyTorch's bits.

ATen does not sum in double: it accumulates ``-x[i, t[i]] (* w[t[i]])`` and the weights in the
input's dtype over an 8-level cascade. Level 0 takes each kept element; after element ``i``
(ignored ones skipped, but counted in ``i``), level ``j`` is flushed into level ``j + 1``
while the bits ``4j .. 4j+3`` of ``i`` are all zero (``level_power`` is 4 below 2**40
elements). The result is the levels added left to right from 0, and ``mean`` divides by the
total weight in the dtype (without weights: the kept count). A float64 sum rounded once
differed from PyTorch's float32 loss in about half of all batches.

LossNLL.cpp is compiled without FMA (not a per-CPU-capability file), so ``d * w`` is rounded
before it is subtracted; Numba does not contract either.
"""
from __future__ import annotations

import numpy as np

from ...codegen.kcache import njit_cached as njit

_LEVELS = 8
_POWER = 4  # max(4, CeilLog2(n) / 8)
_MASK = (1 << _POWER) - 1


@njit(nogil=True, error_model="numpy")
def nll_cascade(picked, wv, keep, weighted):
    """``(loss_sum, weight_sum)`` in ``picked``'s dtype over the flattened elements in ATen's
    loop order: ``picked[i]`` is the input at element ``i``'s target, ``wv[i]`` its class
    weight (read when ``weighted``), ``keep[i]`` False for an ignored target."""
    loss = np.zeros(_LEVELS, picked.dtype)
    wsum = np.zeros(_LEVELS, picked.dtype)
    for i in range(picked.shape[0]):
        if not keep[i]:
            continue
        if weighted:
            loss[0] -= picked[i] * wv[i]
            wsum[0] += wv[i]
        else:
            loss[0] -= picked[i]
        for j in range(_LEVELS - 1):
            if (i & (_MASK << (j * _POWER))) != 0:
                break
            wsum[j + 1] += wsum[j]
            loss[j + 1] += loss[j]
            wsum[j] = 0
            loss[j] = 0
    out = np.zeros(2, picked.dtype)  # std::accumulate from 0, left to right
    for j in range(_LEVELS):
        out[0] += loss[j]
        out[1] += wsum[j]
    return out[0], out[1]


@njit(nogil=True, error_model="numpy")
def nll_rows_total(x, t):
    """``nll_cascade``'s loss sum of ``x[r, t[r]]`` (no weights, no ignored targets: the
    cross-entropy fast path's and a compiled step's), as a float64 holding the dtype's value."""
    loss = np.zeros(_LEVELS, x.dtype)
    for r in range(x.shape[0]):
        loss[0] -= x[r, t[r]]
        for j in range(_LEVELS - 1):
            if (r & (_MASK << (j * _POWER))) != 0:
                break
            loss[j + 1] += loss[j]
            loss[j] = 0
    out = np.zeros(1, x.dtype)
    for j in range(_LEVELS):
        out[0] += loss[j]
    return np.float64(out[0])
