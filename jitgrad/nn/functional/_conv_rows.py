"""Stride-1 convolutions on the CPU as implicit GEMMs over channels-last rows (no im2col).

The input goes once into a zero-padded channels-last buffer ``zp``: one row of ``Cz`` values per
position of the padded grid (the geometry's ``span`` per spatial dim), samples one after the
other, and a zero tail. Seen that way, with stride 1, kernel tap ``t`` of every output position
reads the row ``r + off[t]`` where ``r`` is the row of the output position's own grid point and
``off[t]`` the tap's offset in the flattened grid, so ONE strided matrix ``zp[off[t] : off[t] + M]``
holds what tap ``t`` reads for the whole batch, and

* forward: ``Y = sum_t zp[off[t] : off[t] + M] @ W_t``  (``W_t`` = ``w[:, :, t]^T``, Cz x Cy),
* weight gradient: ``dW_t = Y^T @ zp[off[t] : off[t] + M]`` (``Y`` zero off the output grid).

``Y`` has a row for every grid point; the rows of points past the output size (the right and
bottom margin, ``1 - prod(y) / prod(span)`` of them: 11% for a padded 32x32 image, 3x3 kernel)
are computed and dropped. That beats im2col + GEMM here because nothing nine times the input
is written and read back, and because MKL runs the ``(M, Cz) x (Cz, Cy)`` shape much faster than
the ``(Cy, Cz K) x (Cz K, B L)`` of the channels-first im2col (measured on the ResNet layer,
2 cores, AMD EPYC: 142-187 vs 82-121 GFLOP/s; see docs/nn.md). The rows go through the GEMM
in chunks of ``_CHUNK_BYTES``, so the output rows being accumulated stay in cache across taps.

The layout changes (NC* <-> rows, bias added on the way out) are Numba kernels, one pass each.
Used for groups == 1, float32/float64, stride 1 and enough channels (``applies``); everything
else takes ``_conv_arrays``'s general im2col path.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ...backends import blas, cpu

__all__ = ["applies", "forward", "input_grad", "weight_grad", "grads"]

_CHUNK_BYTES = 2 << 20  # output rows (and the input rows they read) per GEMM chunk
_MIN_CHANNELS = 16  # below, the GEMMs' inner dim (Cz) is too short: im2col's Cz K wins
_MIN_USEFUL = 0.5  # least share of computed rows that are real output positions

_FLAGS = dict(cache=True, nogil=True, error_model="numpy", parallel=False)


def applies(geo, cz, cy, dtype) -> bool:
    """Whether the row path takes this convolution (faster, measured; else im2col)."""
    if geo.s != (1, 1, 1) or geo.groups != 1 or dtype not in (np.float32, np.float64):
        return False
    if min(cz, cy) < _MIN_CHANNELS:
        return False
    span = geo.span
    grid = span[0] * span[1] * span[2]
    return grid > 0 and geo.positions >= _MIN_USEFUL * grid


@njit(**_FLAGS)
def _to_rows(src, dst, g0, g1, g2, lo0, lo1, lo2):
    """``src`` (N, C, z0, z1, z2) into ``dst`` (rows, C): row ``((n g0 + p0) g1 + p1) g2 + p2``
    holds ``src[n, :, p - lo]`` (zero where that is outside ``src``), rows past the grid are
    zero. Returns the sum of ``0 * x`` over ``src`` (NaN when it holds a NaN or an infinity)."""
    n, c, z0, z1, z2 = src.shape
    lines = n * g0 * g1
    finite = 0.0
    for line in prange(lines):
        b = line // (g0 * g1)
        i0 = (line // g1) % g0 - lo0
        i1 = line % g1 - lo1
        base = line * g2
        inside = 0 <= i0 < z0 and 0 <= i1 < z1
        for p2 in range(g2):
            i2 = p2 - lo2
            if not inside or i2 < 0 or i2 >= z2:
                for ch in range(c):
                    dst[base + p2, ch] = 0
        if inside:
            first = max(lo2, 0)
            last = min(z2 + lo2, g2)
            for ch in range(c):
                for p2 in range(first, last):
                    v = src[b, ch, i0, i1, p2 - lo2]
                    dst[base + p2, ch] = v
                    finite += v * 0
    for r in range(lines * g2, dst.shape[0]):
        for ch in range(c):
            dst[r, ch] = 0
    return finite


@njit(**_FLAGS)
def _from_rows(src, dst, g0, g1, g2, lo0, lo1, lo2, bias, with_bias):
    """``dst`` (N, C, y0, y1, y2) from the rows of ``src`` (rows, C) on the grid:
    ``dst[n, :, i] = src[row of (n, i + lo)]``, zero where ``i + lo`` is past the grid, plus
    ``bias[c]`` when ``with_bias`` (not adding a zero keeps a -0.0)."""
    n, c, y0, y1, y2 = dst.shape
    for line in range(n * y0 * y1):
        b = line // (y0 * y1)
        p0 = (line // y1) % y0 + lo0
        p1 = line % y1 + lo1
        base = ((b * g0 + p0) * g1 + p1) * g2 + lo2
        last = min(y2, g2 - lo2) if p0 < g0 and p1 < g1 else 0
        i0, i1 = p0 - lo0, p1 - lo1
        for ch in range(c):
            if with_bias:
                add = bias[ch]
                for i2 in range(last):
                    dst[b, ch, i0, i1, i2] = src[base + i2, ch] + add
            else:
                for i2 in range(last):
                    dst[b, ch, i0, i1, i2] = src[base + i2, ch]
            for i2 in range(max(last, 0), y2):
                dst[b, ch, i0, i1, i2] = 0


def _offsets(geo, grid):
    """Each tap's row offset in the flattened grid (C order over the kernel dims)."""
    k, d = geo.k, geo.d
    return [((t0 * d[0]) * grid[1] + t1 * d[1]) * grid[2] + t2 * d[2]
            for t0 in range(k[0]) for t1 in range(k[1]) for t2 in range(k[2])]


def _rows(a, grid, lo, head, tail):
    """``a`` (N, C, *) as rows on ``grid`` (zero where off ``a``), after ``head`` and before
    ``tail`` zero rows (what taps read before the first / past the last sample); and whether
    ``a`` is finite."""
    n, c = a.shape[:2]
    count = n * grid[0] * grid[1] * grid[2]
    out = cpu.empty((head + count + tail, c), a.dtype)
    out[:head] = 0
    finite = _to_rows(np.ascontiguousarray(a), out[head:], *grid, *lo)
    return out, finite == 0


def _chunks(count, width, itemsize):
    step = max(1, _CHUNK_BYTES // max(width * itemsize, 1))
    return [(i, min(count, i + step)) for i in range(0, count, step)]


def _count(n, grid):
    return n * grid[0] * grid[1] * grid[2]


def forward(z, w, geo, bias=None):
    """``y`` (N, Cy, *y) of ``z`` (N, Cz, *z) and ``w`` (Cy, Cz, *k), as ``_conv_arrays``'s."""
    n, cz = z.shape[:2]
    cy = w.shape[0]
    grid = geo.span
    offs = _offsets(geo, grid)
    zp, _ = _rows(z, grid, geo.lo, 0, offs[-1])
    count = _count(n, grid)
    wt = np.ascontiguousarray(w.reshape(cy, cz, geo.taps).transpose(2, 1, 0))  # (K, Cz, Cy)
    yr = cpu.empty((count, cy), z.dtype)
    for r0, r1 in _chunks(count, cz + cy, z.itemsize):
        for t, off in enumerate(offs):
            blas.matmul(zp[r0 + off:r1 + off], wt[t], out=yr[r0:r1], accumulate=t > 0)
    out = cpu.empty((n, cy) + geo.y, z.dtype)
    with_bias = bias is not None
    _from_rows(yr, out, *grid, 0, 0, 0, np.ascontiguousarray(bias) if with_bias else
               np.zeros(cy, z.dtype), with_bias)
    return out


def _y_rows(y, geo, grid, offs):
    """A small-side array as rows on the big side's grid (zero off the output positions),
    after ``offs[-1]`` zero rows: the taps of the input gradient read back that far."""
    return _rows(y, grid, (0, 0, 0), offs[-1], 0)[0]


def _input_grad(yb, w, geo, grid, offs, n, cz):
    """The adjoint of ``forward`` in ``z``: ``Z[r] = sum_t Y[r - off[t]] @ w[:, :, t]``, the
    rows of ``z``'s padded grid, cropped to ``z`` (``yb``: ``_y_rows``)."""
    cy = w.shape[0]
    head = offs[-1]
    count = _count(n, grid)
    wt = np.ascontiguousarray(w.reshape(cy, cz, geo.taps).transpose(2, 0, 1))  # (K, Cy, Cz)
    zr = cpu.empty((count, cz), w.dtype)
    for r0, r1 in _chunks(count, cz + cy, w.itemsize):
        for t, off in enumerate(offs):
            blas.matmul(yb[head + r0 - off:head + r1 - off], wt[t], out=zr[r0:r1],
                        accumulate=t > 0)
    out = cpu.empty((n, cz) + geo.z, w.dtype)
    _from_rows(zr, out, *grid, *geo.lo, np.zeros(cz, w.dtype), False)
    return out


def _weight_grad(zp, yb, geo, offs, count, w_shape):
    cy, cz = w_shape[:2]
    head = offs[-1]
    acc = cpu.empty((geo.taps, cy, cz), zp.dtype)
    if count == 0:
        acc.fill(0)
    for r0, r1 in _chunks(count, cz + cy, zp.itemsize):
        for t, off in enumerate(offs):
            blas.matmul(yb[head + r0:head + r1].T, zp[r0 + off:r1 + off], out=acc[t],
                        accumulate=r0 > 0)
    return np.ascontiguousarray(acc.transpose(1, 2, 0)).reshape(w_shape)


def input_grad(y, w, geo, cz):
    """``z`` (N, Cz, *z) from ``y`` (N, Cy, *y), as ``_conv_arrays``'s."""
    grid = geo.span
    offs = _offsets(geo, grid)
    return _input_grad(_y_rows(y, geo, grid, offs), w, geo, grid, offs, y.shape[0], cz)


def grads(z, y, w, geo, need_z, need_w):
    """``(input_grad(y, w), weight_grad(z, y))`` (None where not needed) sharing the rows of
    ``y``. The weight gradient is None also when ``z`` holds a NaN or an infinity: the rows off
    the output grid (zero in ``Y``) meet input values there too, and 0 * inf is NaN where
    im2col never multiplies them, so the caller takes im2col then."""
    n, cz = z.shape[:2]
    grid = geo.span
    offs = _offsets(geo, grid)
    yb = _y_rows(y, geo, grid, offs)
    gz = _input_grad(yb, w, geo, grid, offs, n, cz) if need_z else None
    gw = None
    if need_w:
        zp, finite = _rows(z, grid, geo.lo, 0, offs[-1])
        if finite:
            gw = _weight_grad(zp, yb, geo, offs, _count(n, grid), tuple(w.shape))
    return gz, gw


def weight_grad(z, y, geo, w_shape):
    """``w`` (Cy, Cz, *k) from ``z`` and ``y``, or None (see ``grads``)."""
    grid = geo.span
    offs = _offsets(geo, grid)
    zp, finite = _rows(z, grid, geo.lo, 0, offs[-1])
    if not finite:
        return None
    yb = _y_rows(y, geo, grid, offs)
    return _weight_grad(zp, yb, geo, offs, _count(y.shape[0], grid), w_shape)
