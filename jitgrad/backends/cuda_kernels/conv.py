"""im2col / col2im on the device: the data movement of a convolution (its GEMMs run on the
device matmul; ``nn/functional/_conv_device.py`` strings them together).

Geometry (``geo``, an int64 18-tuple): big-side spatial size ``z``, small-side ``y``, kernel
``k``, stride ``s``, dilation ``d``, leading padding ``lo``, three each (1-D and 2-D
convolutions have unit leading dims). Columns are laid out ``(C * K, B * L)``: row
``c * K + tap``, column ``b * L + position``, as on the CPU.

* ``im2col``: one thread per column element reads its input element (zero in the padding).
* ``col2im``: one thread per *input* element gathers, over the kernel taps, the column elements
  that read it (``(z + lo - t d)`` divisible by ``s`` and in range): no atomics, and each output
  element is written once, so the result is deterministic.
"""
from __future__ import annotations

import numpy as np

from ..cuda_env import kernel_jit
from .common import cuda, scalar_type

__all__ = ["im2col", "col2im", "make_im2col_kernel", "make_col2im_kernel", "geometry_args"]

_cache: dict = {}


def geometry_args(geo) -> tuple:
    """The kernels' geometry tuple from a ``_conv_arrays.Geometry``."""
    return tuple(np.int64(v) for part in (geo.z, geo.y, geo.k, geo.s, geo.d, geo.lo)
                 for v in part)


def make_im2col_kernel(dtype):
    """``(pyfunc, kernel)``; signature ``(x, b, c, geo, cols)`` with ``x`` the flat contiguous
    (B, C, *z) input and ``cols`` the flat (C * K, B * L) output."""
    key = ("im2col", np.dtype(dtype).str)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    ty = scalar_type(dtype)

    def im2col_kernel(x, b, c, geo, cols):
        z0, z1, z2 = geo[0], geo[1], geo[2]
        y0, y1, y2 = geo[3], geo[4], geo[5]
        k0, k1, k2 = geo[6], geo[7], geo[8]
        taps = k0 * k1 * k2
        positions = y0 * y1 * y2
        ncol = b * positions
        n = c * taps * ncol
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            col = i % ncol
            row = i // ncol
            bi = col // positions
            pos = col % positions
            o2 = pos % y2
            o1 = (pos // y2) % y1
            o0 = pos // (y1 * y2)
            ci = row // taps
            tap = row % taps
            t2 = tap % k2
            t1 = (tap // k2) % k1
            t0 = tap // (k1 * k2)
            i0 = o0 * geo[9] - geo[15] + t0 * geo[12]
            i1 = o1 * geo[10] - geo[16] + t1 * geo[13]
            i2 = o2 * geo[11] - geo[17] + t2 * geo[14]
            if 0 <= i0 < z0 and 0 <= i1 < z1 and 0 <= i2 < z2:
                cols[i] = x[(((bi * c + ci) * z0 + i0) * z1 + i1) * z2 + i2]
            else:
                cols[i] = ty(0)

    hit = _cache[key] = (im2col_kernel, kernel_jit(im2col_kernel))
    return hit


def make_col2im_kernel(dtype):
    """``(pyfunc, kernel)``; signature ``(cols, b, c, geo, x)``: the flat (C * K, B * L)
    columns summed into the flat contiguous (B, C, *z) output."""
    key = ("col2im", np.dtype(dtype).str)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    ty = scalar_type(dtype)

    def col2im_kernel(cols, b, c, geo, x):
        z0, z1, z2 = geo[0], geo[1], geo[2]
        y0, y1, y2 = geo[3], geo[4], geo[5]
        k0, k1, k2 = geo[6], geo[7], geo[8]
        s0, s1, s2 = geo[9], geo[10], geo[11]
        d0, d1, d2 = geo[12], geo[13], geo[14]
        taps = k0 * k1 * k2
        positions = y0 * y1 * y2
        ncol = b * positions
        n = b * c * z0 * z1 * z2
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            i2 = i % z2
            i1 = (i // z2) % z1
            i0 = (i // (z1 * z2)) % z0
            bc = i // (z0 * z1 * z2)
            ci = bc % c
            bi = bc // c
            acc = ty(0)
            for t0 in range(k0):
                q0 = i0 + geo[15] - t0 * d0
                if q0 < 0 or q0 % s0 != 0 or q0 // s0 >= y0:
                    continue
                for t1 in range(k1):
                    q1 = i1 + geo[16] - t1 * d1
                    if q1 < 0 or q1 % s1 != 0 or q1 // s1 >= y1:
                        continue
                    for t2 in range(k2):
                        q2 = i2 + geo[17] - t2 * d2
                        if q2 < 0 or q2 % s2 != 0 or q2 // s2 >= y2:
                            continue
                        row = ci * taps + (t0 * k1 + t1) * k2 + t2
                        pos = ((q0 // s0) * y1 + q1 // s1) * y2 + q2 // s2
                        acc += cols[row * ncol + bi * positions + pos]
            x[i] = acc

    hit = _cache[key] = (col2im_kernel, kernel_jit(col2im_kernel))
    return hit


def im2col(x, b, c, geo):
    """Columns (C * K, B * L) of ``x``, the flat contiguous device array of a (B, C, *z)
    input."""
    from .. import cuda as backend
    taps = geo.k[0] * geo.k[1] * geo.k[2]
    ncol = b * geo.y[0] * geo.y[1] * geo.y[2]
    out = backend.empty((c * taps, ncol), x.dtype)
    n = out.size
    if n:
        _, kern = make_im2col_kernel(x.dtype)
        backend.launch_flat(kern, n, (x, np.int64(b), np.int64(c),
                                      geometry_args(geo), out.reshape(n)))
    return out


def col2im(cols, geo, b, c):
    """The adjoint of ``im2col``: a contiguous (B, C, *z) device array from the contiguous
    (C * K, B * L) columns ``cols``."""
    from .. import cuda as backend
    out = backend.empty((b, c) + tuple(geo.z), cols.dtype)
    n = out.size
    if n:
        _, kern = make_col2im_kernel(cols.dtype)
        flat = cols.reshape(cols.size) if cols.size else backend.empty((1,), cols.dtype)
        backend.launch_flat(kern, n, (flat, np.int64(b), np.int64(c), geometry_args(geo),
                                      out.reshape(n)))
    return out
