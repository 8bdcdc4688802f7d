"""Numba kernels of the dense layer's backward (``dense._linear_backward``), shared with a
compiled step's lowered dense layers (``_compile/lower_kernels.py``) so both give the same bits.
"""
from __future__ import annotations

from ...codegen.kcache import njit_cached as njit


@njit(nogil=True)
def column_sums(g, out):
    """``out[j] = sum over rows of g[r, j]`` (the bias gradient), added row after row into
    ``out`` (1-D, zeros on entry): one pass over ``g`` where NumPy's ``sum(axis=0)`` makes
    a strided reduction."""
    n, c = g.shape
    for r in range(n):
        for j in range(c):
            out[j] += g[r, j]
