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
code (``cblas_calls.vml_apply``: about a microsecond; a ctypes call costs ~10 us). The
elementwise launchers (``ops/elementwise_call.py``, ``ops/elementwise_fast.py``) consult
``routine`` where they would launch the forward kernel of a one-operand op on host arrays, and
launch that kernel when it gives 0. This module imports no Numba (``import jitgrad`` stays
cheap): ``cblas_calls`` is imported at the first call.

``sigmoid`` joins the route though its kernel is not VML: ATen computes it with a vector and a
scalar formula by position in each contiguous run (``host_routines.py``), so its routine, with
VML's signature, is ours and needs no MKL; for a non-contiguous input ``apply`` takes the
original array (``src``) to follow ATen's rows, and the thread count is set at each lookup.
"""
from __future__ import annotations

import ctypes

import numpy as np

from .._settings import get_num_threads
from . import blas, cpu

__all__ = ["routine", "apply", "ROUTED"]

# op name -> VML function suffix (vms<suffix> / vmd<suffix>)
_ROUTINES = {
    "sqrt": "Sqrt", "exp": "Exp", "log": "Ln", "log2": "Log2", "log10": "Log10",
    "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan",
    "tanh": "Tanh", "erf": "Erf", "erfc": "Erfc", "erfinv": "ErfInv",
    "abs": "Abs", "trunc": "Trunc",
}
_HOST = ("sigmoid",)  # host_routines.py: not VML, the same calling convention
ROUTED = tuple(_ROUTINES) + _HOST


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
    if name in _HOST:
        return _host_routine(dtype)
    if _addresses is None:
        _lookup()
    return _addresses.get((name, dtype), 0)


_host_addresses = {}  # np.dtype -> sigmoid routine's address (host_routines imports Numba)
_host_values = set()
_synced = [0]  # the thread count host_routines' routines were last told


def _host_routine(dtype) -> int:
    dt = np.dtype(dtype)
    if dt not in _PREFIX:
        return 0
    _sync_threads()
    addr = _host_addresses.get(dt)
    if addr is None:
        from . import host_routines
        addr = _host_addresses[dt] = host_routines.sigmoid_routine(dt)
        _host_values.add(addr)
    return addr


def _sync_threads():
    """Tell the host routines jitgrad's thread count (ATen's chunks depend on it)."""
    n = get_num_threads()
    if n != _synced[0]:
        from . import host_routines
        host_routines.set_threads(n)
        _synced[0] = n


_prepared = []  # cblas_calls.vml_entry() once imported (it imports Numba)


def apply(addr: int, x: np.ndarray, out: np.ndarray, src: np.ndarray | None = None) -> bool:
    """``out[:] = f(x)`` by the VML function at ``addr`` (from ``routine``), for ``x`` and
    ``out`` 1-D of the routine's dtype, ``out`` C-contiguous and writable. A strided ``x`` (a
    1-D view's ``reshape(-1)`` is not copied) is copied first: VML is elementwise, so each
    element's result is the same. False, having written nothing, for an operand no compiled
    signature takes (unaligned): the caller then launches its kernel. ``src``: the operand
    before flattening, where the caller has it (a host routine's rows follow its strides)."""
    if addr in _host_values:
        _sync_threads()
        if src is not None and src.size == x.size and not src.flags.c_contiguous:
            return _apply_strided(x, out, src)
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    if not _prepared:
        from . import cblas_calls  # Numba: imported at the first call, not with jitgrad
        _prepared.append(cblas_calls.vml_entry())
    fn = _prepared[0]
    try:
        fn(addr, x, out)
    except TypeError:
        return False
    cpu.stats.launches += 1  # one pass over the operands, in place of the kernel's launch
    return True



def _apply_strided(x, out, src):
    """``apply`` for a host routine (sigmoid) on a non-contiguous operand: ATen's rows follow
    ``src``'s strides; ``x`` is its C-order flattening."""
    from . import host_routines
    flat = x if x.flags.c_contiguous else None
    host_routines.sigmoid_strided(src, out, _synced[0], flat)
    cpu.stats.launches += 1
    return True
