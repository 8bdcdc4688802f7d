"""The Numba loops of ``lower.py``'s lowered ops: the registry's relu and its VJP
(``ops/elementwise.py``'s ``relu``), written as flat loops over contiguous arrays so that the
lowered step computes what the eager kernels compute, bit for bit."""
from __future__ import annotations

import numba


@numba.njit(cache=True, nogil=True)
def relu(x, out):
    """``out = select(x < 0, 0, x)`` (NaN passes through, as in PyTorch); ``out`` may be ``x``."""
    for i in range(x.size):
        v = x[i]
        out[i] = 0 if v < 0 else v


@numba.njit(cache=True, nogil=True)
def relu_vjp(g, out):
    """``g = select(out > 0, g, g * 0)`` in place (``g * 0`` keeps NaN and the sign of zero)."""
    for i in range(g.size):
        if not out[i] > 0:
            g[i] = g[i] * 0

