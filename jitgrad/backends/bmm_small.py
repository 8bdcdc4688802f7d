"""ATen's loop for stacks of tiny matrices (``baddbmm_cpu_kernel`` in
aten/src/ATen/native/LinearAlgebra.cpp): PyTorch's CPU ``bmm`` (and every stacked ``matmul``,
which becomes a ``bmm``) does not call BLAS when a matrix takes fewer than ``SMALL_WORK``
multiply-adds, but sums each element's products in index order, one rounding per product and
per addition (the file is compiled for baseline x86-64: no FMA). The same loop here gives
PyTorch's bits; BLAS's kernels sum in other orders."""
from __future__ import annotations

import numpy as np

from ..codegen.kcache import njit_cached

__all__ = ["SMALL_WORK", "bmm_small"]

SMALL_WORK = 400  # ``contraction_size * res_rows * res_cols < 400`` in bmm_out_or_baddbmm_


@njit_cached(nogil=True)
def _loop(a, b, out, accumulate, alpha, beta):
    zero = out.dtype.type(0)
    for s in range(out.shape[0]):
        for i in range(out.shape[1]):
            for j in range(out.shape[2]):
                acc = zero
                for k in range(a.shape[2]):
                    acc += a[s, i, k] * b[s, k, j]
                if not accumulate:  # bmm
                    out[s, i, j] = acc
                elif beta == 0:  # baddbmm ignores r (NaN too) when beta is 0
                    out[s, i, j] = alpha * acc
                else:
                    out[s, i, j] = out[s, i, j] * beta + alpha * acc


def bmm_small(x: np.ndarray, y: np.ndarray, out: np.ndarray, accumulate: bool,
              alpha=1.0, beta=1.0) -> np.ndarray:
    """``out = x @ y`` (with ``accumulate``: ``out = out * beta + alpha * x @ y``, baddbmm's
    kernel) for float32/float64 stacks (batch dims broadcast as ``np.matmul``; ``out``
    C-contiguous, of the broadcast shape) in ATen's order. Threads don't change the result
    (ATen splits the batch, never a sum), so this runs serially."""
    m, k = x.shape[-2:]
    n = y.shape[-1]
    batch = out.shape[:-2]
    # bmm's 3-D stacks of one batch go in as they are (np.broadcast_to costs more than a small
    # stack's product); broadcast or N-D batches as a 3-D view (a copy where reshape needs one)
    a = x if x.shape[:-2] == batch and x.ndim == 3 else \
        np.broadcast_to(x, batch + (m, k)).reshape(-1, m, k)
    b = y if y.shape[:-2] == batch and y.ndim == 3 else \
        np.broadcast_to(y, batch + (k, n)).reshape(-1, k, n)
    dt = out.dtype.type
    _loop(a, b, out if out.ndim == 3 else out.reshape(-1, m, n), accumulate, dt(alpha), dt(beta))
    return out
