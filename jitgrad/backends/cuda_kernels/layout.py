"""Layout kernels: materialize any strided/broadcast View as a contiguous array (with a dtype
cast), and fill. These are what ``_flat`` (broadcast + cast + contiguous) becomes on the device.
"""
from __future__ import annotations

import numpy as np

from ..cuda_env import kernel_jit
from .common import View, as_view, cuda, offset_of, pad, scalar_type

__all__ = ["contiguous", "fill", "make_copy_kernel", "make_fill_kernel"]

_F16 = np.dtype(np.float16)
_copy_cache: dict = {}
_fill_cache: dict = {}


def make_copy_kernel(out_dtype):
    """``(pyfunc, kernel)``: ``out[i] = out_dtype(x[off + offset_of(i, shape, strides)])``."""
    key = np.dtype(out_dtype).str
    hit = _copy_cache.get(key)
    if hit is not None:
        return hit
    ty = scalar_type(out_dtype)
    is_bool = np.dtype(out_dtype).kind == "b"

    def strided_copy(x, off, shape, strides, n, out):
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            v = x[off + offset_of(i, shape, strides)]
            if is_bool:
                out[i] = v != 0
            else:
                out[i] = ty(v)

    hit = _copy_cache[key] = (strided_copy, kernel_jit(strided_copy))
    return hit


def make_fill_kernel(dtype):
    key = np.dtype(dtype).str
    hit = _fill_cache.get(key)
    if hit is not None:
        return hit

    def fill_value(n, value, out):
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            out[i] = value

    hit = _fill_cache[key] = (fill_value, kernel_jit(fill_value))
    return hit


def contiguous(x, dtype=None):
    """A fresh C-contiguous device array holding ``x`` (a View or device array), cast to
    ``dtype``; the identity (no copy) when ``x`` is already a contiguous array of that dtype."""
    from .. import cuda as backend
    v = as_view(x)
    dtype = np.dtype(dtype or v.dtype)
    if (not isinstance(x, View)) and dtype == v.dtype:
        return x
    if v.dtype == _F16 and dtype.kind in "iu":
        # numba-cuda converts float16 to integers with cvt.rni (round to nearest), not the
        # truncation C, NumPy and PyTorch use: go through float32 (exact), whose cvt.rzi truncates
        v = as_view(contiguous(v, np.float32))
    out = backend.empty(v.shape, dtype)
    if dtype == _F16 and v.dtype.kind == "f" and v.dtype != _F16:
        from .half import to_half  # NumPy's bits (NaN payloads, one rounding from float64)
        to_half(v, out)
        return out
    n = v.size
    if n:
        shape, strides = pad(v.shape, v.strides)
        _, kern = make_copy_kernel(dtype)
        backend.launch_flat(kern, n, (v.base, np.int64(v.offset), shape, strides, np.int64(n),
                                      out.reshape(n)))
    return out


def fill(out, value):
    """Set every element of the contiguous device array ``out`` to ``value`` (in place)."""
    from .. import cuda as backend
    n = out.size
    if n:
        dt = np.dtype(out.dtype)
        _, kern = make_fill_kernel(dt)
        backend.launch_flat(kern, n, (np.int64(n), dt.type(value), out.reshape(n)))
    return out


_copy_into_cache: dict = {}


def make_copy_into_kernel(dtype):
    """``(pyfunc, kernel)``: ``dst[doff + offset_of(i, shape, dst)] = src[soff + offset_of(i,
    shape, sst)]`` (a strided destination: the backward of basic indexing, cat, stack)."""
    key = np.dtype(dtype).str
    hit = _copy_into_cache.get(key)
    if hit is not None:
        return hit
    ty = scalar_type(dtype)
    is_bool = np.dtype(dtype).kind == "b"

    def strided_copy_into(src, soff, sst, dst, doff, dst_strides, shape, n):
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            v = src[soff + offset_of(i, shape, sst)]
            if is_bool:
                dst[doff + offset_of(i, shape, dst_strides)] = v != 0
            else:
                dst[doff + offset_of(i, shape, dst_strides)] = ty(v)

    hit = _copy_into_cache[key] = (strided_copy_into, kernel_jit(strided_copy_into))
    return hit


def copy_into(dst: View, src) -> None:
    """Write ``src`` (a View/array broadcastable to ``dst.shape``, cast to ``dst``'s dtype) into
    the strided destination ``dst`` in place. ``dst`` must not overlap itself (no stride-0 dims
    of size > 1)."""
    from .. import cuda as backend
    vs = as_view(src).expand(dst.shape)
    if vs.dtype == _F16 and dst.dtype.kind in "iu":  # float16 -> int via float32 (contiguous)
        vs = as_view(contiguous(vs, np.float32))
    elif dst.dtype == _F16 and vs.dtype.kind == "f" and vs.dtype != _F16:
        vs = as_view(contiguous(vs, _F16))  # the bit-exact cast, then a plain move
    n = dst.size
    if n:
        shape, dstrides = pad(dst.shape, dst.strides)
        _, sstrides = pad(vs.shape, vs.strides)
        _, kern = make_copy_into_kernel(dst.dtype)
        backend.launch_flat(kern, n, (vs.base, np.int64(vs.offset), sstrides, dst.base,
                                      np.int64(dst.offset), dstrides, shape, np.int64(n)))
