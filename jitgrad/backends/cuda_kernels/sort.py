"""Stable sort along one dim on the device (``sort``/``argsort``/``msort``/``topk``).

Rank sort: one thread per element counts the elements of its row that go before it (smaller —
larger when descending — or equal and earlier), and writes itself at that rank. Stable by
construction, NaN sorts as the largest value (last ascending, first descending; NaNs keep their
order), exactly the CPU path's (NumPy stable argsort) order. O(K²) comparisons per row of K
elements, all rows and elements in parallel with no synchronization: fine for the rows models
sort (attention scores, vocabulary logits for top-k sampling); a bitonic/radix sort is the
upgrade for very long rows.
"""
from __future__ import annotations

import numpy as np

from ..cuda_env import kernel_jit
from .common import as_view, c_strides, cuda, half_as_float32, offset_of, pad

__all__ = ["sort"]

_cache: dict = {}


def make_rank_sort_kernel(dtype, descending: bool):
    key = (np.dtype(dtype).str, descending)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    is_float = np.dtype(dtype).kind == "f"

    def rank_sort(x, off, lshape, lstr, sk, k, n, vals, idx):
        for e in range(cuda.grid(1), n, cuda.gridsize(1)):
            r = e // k
            i = e - r * k
            base = off + offset_of(r, lshape, lstr)
            xi = x[base + i * sk]
            nan_i = is_float and xi != xi
            rank = 0
            for j in range(k):
                xj = x[base + j * sk]
                nan_j = is_float and xj != xj
                if nan_i:
                    before = (nan_j and j < i) if descending else ((not nan_j) or j < i)
                elif nan_j:
                    before = descending
                elif descending:
                    before = xj > xi or (xj == xi and j < i)
                else:
                    before = xj < xi or (xj == xi and j < i)
                if before:
                    rank += 1
            vals[r * k + rank] = xi
            idx[r * k + rank] = i

    hit = _cache[key] = (rank_sort, kernel_jit(rank_sort))
    return hit


@half_as_float32
def sort(x, dim, descending=False):
    """(values, int64 indices) of View/device array ``x`` sorted along ``dim`` (stable), as
    fresh contiguous arrays of ``x``'s shape."""
    from .. import cuda as backend
    v = as_view(x)
    dim = int(dim) % v.ndim
    k = v.shape[dim]
    lead = [d for d in range(v.ndim) if d != dim]
    lead_shape = tuple(v.shape[d] for d in lead)
    rows = int(np.prod(lead_shape, dtype=np.int64))
    vals = backend.empty(lead_shape + (k,), v.dtype)
    idx = backend.empty(lead_shape + (k,), np.int64)
    n = rows * k
    if n:
        lshape, lstr = pad(lead_shape, [v.strides[d] for d in lead])
        _, kern = make_rank_sort_kernel(v.dtype, bool(descending))
        backend.launch_flat(kern, n, (v.base, np.int64(v.offset), lshape, lstr,
                                      np.int64(v.strides[dim]), np.int64(k), np.int64(n),
                                      vals.reshape(n), idx.reshape(n)))
    if dim == v.ndim - 1:
        return vals, idx
    # (lead..., k) -> the sorted dim back in its place, contiguous
    from .layout import contiguous
    perm = list(range(v.ndim - 1))
    perm.insert(dim, v.ndim - 1)
    out = []
    for a in (vals, idx):
        st = c_strides(a.shape)
        va = as_view(a)
        moved = type(va)(va.base, tuple(a.shape[p] for p in perm), tuple(st[p] for p in perm),
                         va.offset)
        out.append(contiguous(moved))
    return tuple(out)
