"""im2col and col2im on the CPU: one compiled pass each, straight from the unpadded input.

``im2col`` writes the columns ``(C * K, B * L)`` of ``_conv_arrays`` (row ``c * K + tap``,
column ``b * L + position``), reading the input where a tap lands inside it and writing 0 where
it lands in the padding, so no padded copy of the input is made. It only moves bits, so it runs
on an unsigned-integer view of the same item size: one kernel serves every dtype of 1, 2, 4 or
8 bytes (float16, bool and complex64 included), and inputs of any strides are read in place.
``col2im`` is its adjoint (overlapping taps summed, in the order the columns are stored) for the
dtypes Numba adds.

Where they run (``_conv_arrays._host_im2col/_host_col2im``): col2im always (it beat NumPy's
per-tap adds at every size measured, 1.3-2x on large ones), im2col for small problems and strided
ones; a large stride-1 im2col stays one NumPy copy per kernel tap of whole rows (faster there).
For the small ones they replaced a padded copy plus one ``np.take`` / ``np.bincount`` through a
cached index array: the 16 -> 32 channel 3x3 convolution of a 4x4 image, batch 32
(train_cnn.py's second layer), spent ~95 us of a ~195 us forward in the copy and the gather;
the kernel writes the same 74 K columns in ~40 us.
"""
from __future__ import annotations

import numpy as np

from ...codegen.kcache import njit_cached as njit

__all__ = ["im2col", "col2im", "im2col_applies", "col2im_applies"]

_FLAGS = dict(nogil=True, error_model="numpy")  # cached: njit_cached
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_ADDS = {np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128,  # _col2im
                               np.int8, np.int16, np.int32, np.int64, np.uint8)}


@njit(**_FLAGS)
def _im2col(z4, cols, zero, table, k0, s0, d0, lo0, y0):
    """``z4``: the input as (B, C, z0, z1 * z2); ``table[t12, p12]``: where tap ``t12`` of the
    last two kernel dims reads for output position ``p12`` of the last two dims, as an index
    into ``z1 * z2``, or -1 in the padding. ``zero``: 0 of the arrays' type (a literal 0 would
    unify with uint64 to float64, which does not hold every 64-bit pattern)."""
    nb, nc, z0, _ = z4.shape
    k12, y12 = table.shape
    taps = k0 * k12
    count = y0 * y12
    for c in range(nc):
        for t0 in range(k0):
            for t12 in range(k12):
                row = c * taps + t0 * k12 + t12
                for b in range(nb):
                    for o0 in range(y0):
                        i0 = o0 * s0 + t0 * d0 - lo0
                        base = b * count + o0 * y12
                        if i0 < 0 or i0 >= z0:
                            for p in range(y12):
                                cols[row, base + p] = zero
                            continue
                        src = z4[b, c, i0]
                        dst = cols[row, base:base + y12]
                        taps_of = table[t12]
                        for p in range(y12):
                            j = taps_of[p]
                            dst[p] = src[j] if j >= 0 else zero


@njit(**_FLAGS)
def _col2im(cols, z4, table, k0, s0, d0, lo0, y0):
    """``z4`` (zeroed by the caller) += the columns' values at the places ``_im2col`` read."""
    nb, nc, z0, _ = z4.shape
    k12, y12 = table.shape
    taps = k0 * k12
    count = y0 * y12
    for c in range(nc):
        for t0 in range(k0):
            for t12 in range(k12):
                row = c * taps + t0 * k12 + t12
                for b in range(nb):
                    for o0 in range(y0):
                        i0 = o0 * s0 + t0 * d0 - lo0
                        if i0 < 0 or i0 >= z0:
                            continue
                        base = b * count + o0 * y12
                        dst = z4[b, c, i0]
                        src = cols[row, base:base + y12]
                        taps_of = table[t12]
                        for p in range(y12):
                            j = taps_of[p]
                            if j >= 0:
                                dst[j] += src[p]


_TABLE_CACHE_ENTRIES = 1 << 19  # tables up to 4 MiB are kept (a training loop reuses a few)
_tables: dict = {}


def _table(geo):
    """The index table of the last two spatial dims (see ``_im2col``)."""
    hit = _tables.get(geo)
    if hit is not None:
        return hit
    k, s, d, lo, y, z = geo.k, geo.s, geo.d, geo.lo, geo.y, geo.z
    t1, t2, o1, o2 = np.meshgrid(np.arange(k[1]), np.arange(k[2]), np.arange(y[1]),
                                 np.arange(y[2]), indexing="ij")
    i1 = t1 * d[1] + o1 * s[1] - lo[1]
    i2 = t2 * d[2] + o2 * s[2] - lo[2]
    inside = (i1 >= 0) & (i1 < z[1]) & (i2 >= 0) & (i2 < z[2])
    table = np.where(inside, i1 * z[2] + i2, -1).astype(np.intp).reshape(
        k[1] * k[2], y[1] * y[2])
    if table.size <= _TABLE_CACHE_ENTRIES:
        if len(_tables) >= 64:
            _tables.pop(next(iter(_tables)))  # the oldest
        _tables[geo] = table
    return table


def _args(geo):
    return (_table(geo), geo.k[0], geo.s[0], geo.d[0], geo.lo[0], geo.y[0])


def _planes(a):
    """(B, C, z0, z1, z2) as (B, C, z0, z1 * z2): NumPy's reshape, a view whenever the strides
    allow one (contiguous planes, broadcasts), else a copy."""
    return a.reshape(a.shape[:3] + (a.shape[3] * a.shape[4],))


def im2col_applies(dtype) -> bool:
    return np.dtype(dtype).itemsize in _BITS


def col2im_applies(dtype) -> bool:
    return np.dtype(dtype) in _ADDS


def im2col(z, geo, out):
    """Columns of ``z`` (B, C, *z: 5-D, any strides) into ``out`` (C * K, B * L), C-contiguous
    and of ``z``'s dtype (``im2col_applies``)."""
    bits = _BITS[z.dtype.itemsize]
    if out.size:
        _im2col(_planes(z).view(bits), out.view(bits), bits(0), *_args(geo))
    return out


def col2im(cols, geo, out):
    """The adjoint: ``out`` (B, C, *z), zeroed here, += the columns (``col2im_applies``)."""
    out.fill(0)
    if cols.size:
        _col2im(cols, out.reshape(out.shape[:3] + (-1,)), *_args(geo))
    return out
