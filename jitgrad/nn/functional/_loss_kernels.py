"""Numba kernels of the classification losses' fast path.

``log_softmax_rows_backward`` is ``cross_entropy``'s LogSoftmaxBackward0 on a host (N, C) float
matrix: one pass per row instead of NumPy's whole-matrix expression. The eager fast path
(``loss_classification._log_softmax_rows``) and a compiled step's lowered cross-entropy
(``_compile/lower.py``) both call it, so their numbers are the same bits. Their forward is ATen's
log-softmax row kernel (``ops/_softmax_aten``) and their NLL sum ``_nll_kernels``.
"""
from __future__ import annotations

import numpy as np

from ...backends.cpu_capability import CAPABILITY, vector_bytes
from ...codegen.kcache import njit_cached as njit
from ...math import sleef_exp
from ...math._intrinsics import fma
from ...math._lane_reduce import LANE_SUM, lane_reduce

# one ATen vector in the build PyTorch runs here (backends.cpu_capability): 64 bytes on AVX-512
# (16 float32 / 8 float64 lanes), 32 on AVX2 (8 / 4); reduce_all's lanes follow it
_VECTOR_BYTES = vector_bytes(CAPABILITY)


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
        s = lane_reduce(g[r], g[r], acc, LANE_SUM, False)
        for j in range(c):
            out[r, j] = fma(-sleef_exp(y[r, j]), s, g[r, j])
