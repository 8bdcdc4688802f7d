"""MKL VML for the unary float ops whose PyTorch CPU kernel is VML: PyTorch's bits.

ATen's ``vml.h`` routes ``exp``, ``log``, ``sqrt``, ``tanh``, ``sin``, ... of float32/float64
tensors to MKL's ``vm{s,d}<Func>(n, in, out, VML_HA | VML_FTZDAZ_OFF | VML_ERRMODE_IGNORE)`` (in
chunks of a ``parallel_for``; VML is elementwise, so the chunking does not change a bit). With
the MKL PyTorch links (``libmkl_rt`` from the pip ``mkl`` wheel, which ``blas`` finds) the same
call gives the same bits, where our registry kernels (libm / Numba's math) differ from it in
1-40% of elements by an ulp. ``_ROUTINES`` lists the ops measured bit-identical to torch for
both dtypes on random inputs and special values (+-0, +-inf, NaN, subnormals, huge values):
ATen's vml.h also names ``cosh``, ``sinh``, ``lgamma``, ``expm1``, ``log1p``, ... but PyTorch
computes those otherwise (SLEEF/Vectorized), and VML's results differ there, so they are absent.

``routine(name, dtype)`` is the address of the VML function for an op (0: none, or no MKL);
``apply(addr, x, out)`` calls it on 1-D C-contiguous ``x``/``out`` of that dtype from compiled
code (about a microsecond; a ctypes call costs ~10 us). The elementwise launchers
(``ops/elementwise_call.py``, ``ops/elementwise_fast.py``) consult ``routine`` where they would
launch the forward kernel of a one-operand op on host arrays, and fall back to it when 0.
"""
from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ..codegen.kcache import njit_cached
from . import blas

__all__ = ["routine", "apply", "ROUTED"]

# op name -> VML function suffix (vms<suffix> / vmd<suffix>)
_ROUTINES = {
    "sqrt": "Sqrt", "exp": "Exp", "log": "Ln", "log2": "Log2", "log10": "Log10",
    "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan",
    "tanh": "Tanh", "erf": "Erf", "erfc": "Erfc", "erfinv": "ErfInv",
    "abs": "Abs", "trunc": "Trunc",
}
ROUTED = tuple(_ROUTINES)

# ATen's flags (aten/src/ATen/cpu/vml.h): VML_HA | VML_FTZDAZ_OFF | VML_ERRMODE_IGNORE
MODE = 0x2 | 0x140000 | 0x100
_CHUNK = 1 << 30  # MKL_INT is int32 (LP64): longer arrays go in pieces (elementwise: same bits)

_PREFIX = {np.dtype(np.float32): "vms", np.dtype(np.float64): "vmd"}
_addresses = None  # {(op name, np.dtype): address} once looked up; {} without MKL


def _lookup():
    global _addresses
    _addresses = {}
    if blas.backend() != "mkl":  # no libmkl_rt, or JITGRAD_BLAS=numpy
        return
    lib = blas._find_mkl()  # dlopen of a loaded library: the same handle blas uses
    if lib is None:
        return
    for name, suffix in _ROUTINES.items():
        for dt, prefix in _PREFIX.items():
            fn = getattr(lib, prefix + suffix, None)
            if fn is not None:
                _addresses[(name, dt)] = ctypes.cast(fn, ctypes.c_void_p).value


def routine(name: str, dtype) -> int:
    """The address of the VML function computing op ``name`` on ``dtype`` (a NumPy dtype) as
    PyTorch's CPU kernel does; 0 where PyTorch does not use VML there or MKL is not loaded."""
    if _addresses is None:
        _lookup()
    return _addresses.get((name, dtype), 0)


@intrinsic
def _call_vml(typingctx, addr, n, x, out, mode):
    """``vm?<Func>(n, x, out, mode)`` at ``addr``: ``n`` int32 (MKL_INT), the pointers uintp,
    ``mode`` int64 (MKL_INT64)."""
    sig = types.void(addr, n, x, out, mode)

    def codegen(context, builder, signature, args):
        vp = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(32), vp, vp, ir.IntType(64)])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        _, nn, px, po, md = args
        builder.call(fn, [nn, builder.inttoptr(px, vp), builder.inttoptr(po, vp), md])
        return context.get_dummy_value()
    return sig, codegen


@njit_cached(nogil=True)
def _apply(addr, x, out):
    n = x.size
    item = x.itemsize
    px = x.ctypes.data
    po = out.ctypes.data
    i = 0
    while i < n:
        m = min(n - i, _CHUNK)
        _call_vml(addr, np.int32(m), px + i * item, po + i * item, np.int64(MODE))
        i += m


_prepared = []


def _entry():
    """``_apply`` compiled for 1-D C-contiguous float32/float64 operands (the input read-only
    or not: a writable array converts to the read-only type), and no further."""
    if not _prepared:
        for scalar in (types.float32, types.float64):
            x = types.Array(scalar, 1, "C", readonly=True)
            _apply.compile((types.int64, x, types.Array(scalar, 1, "C")))
        _apply.disable_compile()
        _prepared.append(_apply)
    return _prepared[0]


def apply(addr: int, x: np.ndarray, out: np.ndarray) -> bool:
    """``out[:] = f(x)`` by the VML function at ``addr`` (from ``routine``), for ``x`` and
    ``out`` 1-D of the routine's dtype, ``out`` C-contiguous and writable. A strided ``x`` (a
    1-D view's ``reshape(-1)`` is not copied) is copied first: VML is elementwise, so each
    element's result is the same. False, having written nothing, for an operand no compiled
    signature takes (unaligned): the caller then launches its kernel."""
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    fn = _prepared[0] if _prepared else _entry()
    try:
        fn(addr, x, out)
    except TypeError:
        return False
    return True
