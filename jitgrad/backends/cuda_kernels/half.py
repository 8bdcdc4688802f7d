"""float32/float64 -> float16 casts with NumPy's bits, in integer arithmetic.

The hardware's ``cvt.rn.f16.f64`` / ``cvt.rn.f16.f32`` are not what the CPU path (NumPy's
``astype``) computes on every input: a NaN becomes the canonical ``0x7FFF`` instead of keeping
its sign and leading payload bits, and a float64 may be rounded through float32 (twice), so the
issue-11 hardware run saw ``x64.half()`` differ from ``x64.cpu().half()`` in bits. These kernels
read the source's bits (a ``uint32``/``uint64`` view of the buffer) and compute the float16 bits
with NumPy's own algorithm (``npy_floatbits_to_halfbits`` / ``npy_doublebits_to_halfbits`` in
``numpy/_core/src/npymath/halffloat.cpp``): one round-to-nearest-even from the source, overflow
to signed inf, NaN payloads kept. Only integer instructions, so the simulator, every GPU and the
CPU (``tests/cuda/test_half_bits.py`` runs the same functions through ``numba.njit``) agree.
"""
from __future__ import annotations

import numpy as np

from ..cuda_env import kernel_jit
from .common import cuda, offset_of, pad

__all__ = ["float_bits_to_half_bits", "double_bits_to_half_bits", "to_half"]

U16, U32, U64 = np.uint16, np.uint32, np.uint64


def float_bits_to_half_bits(f):
    """float16 bits (uint16) of the float32 with bits ``f`` (uint32), as NumPy rounds."""
    h_sgn = (f & U32(0x80000000)) >> U32(16)
    f_exp = f & U32(0x7F800000)
    if f_exp >= U32(0x47800000):
        if f_exp == U32(0x7F800000):
            f_sig = f & U32(0x007FFFFF)
            if f_sig != U32(0):  # NaN: keep the leading payload bits, stay a NaN
                ret = U32(0x7C00) + (f_sig >> U32(13))
                if ret == U32(0x7C00):
                    ret = ret + U32(1)
                return U16(h_sgn + ret)
        return U16(h_sgn + U32(0x7C00))  # inf, or overflow to inf
    if f_exp <= U32(0x38000000):
        if f_exp < U32(0x33000000):
            return U16(h_sgn)  # underflow to signed zero
        e = f_exp >> U32(23)
        f_sig = U32(0x00800000) + (f & U32(0x007FFFFF))
        f_sig = f_sig >> (U32(113) - e)
        if (f_sig & U32(0x00003FFF)) != U32(0x00001000) or (f & U32(0x000007FF)) != U32(0):
            f_sig = f_sig + U32(0x00001000)
        return U16(h_sgn + (f_sig >> U32(13)))
    h_exp = (f_exp - U32(0x38000000)) >> U32(13)
    f_sig = f & U32(0x007FFFFF)
    if (f_sig & U32(0x00003FFF)) != U32(0x00001000):
        f_sig = f_sig + U32(0x00001000)
    return U16(h_sgn + (f_sig >> U32(13)) + h_exp)


def double_bits_to_half_bits(d):
    """float16 bits (uint16) of the float64 with bits ``d`` (uint64): one rounding, as NumPy."""
    h_sgn = (d & U64(0x8000000000000000)) >> U64(48)
    d_exp = d & U64(0x7FF0000000000000)
    if d_exp >= U64(0x40F0000000000000):
        if d_exp == U64(0x7FF0000000000000):
            d_sig = d & U64(0x000FFFFFFFFFFFFF)
            if d_sig != U64(0):
                ret = U64(0x7C00) + (d_sig >> U64(42))
                if ret == U64(0x7C00):
                    ret = ret + U64(1)
                return U16(h_sgn + ret)
        return U16(h_sgn + U64(0x7C00))
    if d_exp <= U64(0x3F00000000000000):
        if d_exp < U64(0x3E60000000000000):
            return U16(h_sgn)
        e = d_exp >> U64(52)
        d_sig = U64(0x0010000000000000) + (d & U64(0x000FFFFFFFFFFFFF))
        d_sig = d_sig << (e - U64(998))
        if (d_sig & U64(0x003FFFFFFFFFFFFF)) != U64(0x0010000000000000):
            d_sig = d_sig + U64(0x0010000000000000)
        return U16(h_sgn + (d_sig >> U64(53)))
    h_exp = (d_exp - U64(0x3F00000000000000)) >> U64(42)
    d_sig = d & U64(0x000FFFFFFFFFFFFF)
    if (d_sig & U64(0x000007FFFFFFFFFF)) != U64(0x0000020000000000):
        d_sig = d_sig + U64(0x0000020000000000)
    return U16(h_sgn + (d_sig >> U64(42)) + h_exp)


_cache: dict = {}


def _kernel(src_dtype):
    key = np.dtype(src_dtype).str
    hit = _cache.get(key)
    if hit is not None:
        return hit
    conv = double_bits_to_half_bits if np.dtype(src_dtype) == np.float64 else \
        float_bits_to_half_bits
    conv_dev = cuda.jit(device=True)(conv)

    def half_bits_copy(bits, off, shape, strides, n, out):
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            out[i] = conv_dev(bits[off + offset_of(i, shape, strides)])

    hit = _cache[key] = (half_bits_copy, kernel_jit(half_bits_copy))
    return hit


def to_half(v, out) -> None:
    """Write the float32/float64 View ``v`` into the fresh contiguous float16 device array
    ``out`` (same size), with NumPy's bits."""
    from .. import cuda as backend
    n = v.size
    if not n:
        return
    bits = v.base.view(np.uint64 if v.dtype == np.float64 else np.uint32)
    shape, strides = pad(v.shape, v.strides)
    _, kern = _kernel(v.dtype)
    backend.launch_flat(kern, n, (bits, np.int64(v.offset), shape, strides, np.int64(n),
                                  out.reshape(n).view(np.uint16)))
