"""CPU matrix products: Intel MKL's GEMM when the ``mkl`` wheel is installed, NumPy otherwise.

NumPy's wheels use OpenBLAS. On the machines we measure on, OpenBLAS is 10-25% slower than MKL
(the BLAS PyTorch ships) for the shapes of a small MLP, and its threads collapse when the cores
are busy (a 256x784x512 product went from 1.4 ms to 32 ms under load; MKL stayed at 1.4 ms).
So when ``libmkl_rt`` is present (``pip install "jitgrad[mkl]"``) 2-D float32/float64 products
call ``cblas_?gemm`` directly through ctypes, passing transposed operands as flags instead of
copying them. ``JITGRAD_BLAS=numpy`` forces NumPy.
"""
from __future__ import annotations

import ctypes
import glob
import os
import sys

import numpy as np

from . import cpu

__all__ = ["matmul", "backend"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_gemm = None  # {np.dtype: ctypes function} once loaded, {} when MKL is unavailable


def _find_mkl():
    names = []
    for root in {sys.prefix, sys.base_prefix, os.path.dirname(sys.executable) + "/.."}:
        names += sorted(glob.glob(os.path.join(root, "lib", "libmkl_rt.so*")))
        names += sorted(glob.glob(os.path.join(root, "Library", "bin", "mkl_rt*.dll")))
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def _load():
    global _gemm
    _gemm = {}
    if os.environ.get("JITGRAD_BLAS", "").lower() == "numpy":
        return
    lib = _find_mkl()
    if lib is None:
        return
    vp, i = ctypes.c_void_p, ctypes.c_int
    for dt, name, scalar in ((np.float32, "cblas_sgemm", ctypes.c_float),
                             (np.float64, "cblas_dgemm", ctypes.c_double)):
        fn = getattr(lib, name)
        fn.restype = None
        fn.argtypes = [i, i, i, i, i, i, scalar, vp, i, vp, i, scalar, vp, i]
        _gemm[np.dtype(dt)] = fn


def backend() -> str:
    if _gemm is None:
        _load()
    return "mkl" if _gemm else "numpy"


def _address(a) -> int:
    # half the cost of ``a.ctypes.data`` (which builds a ctypes helper object per call)
    return a.__array_interface__["data"][0]


def _operand(a):
    """(transpose flag, leading dimension) for a 2-D operand, or None if it needs a copy."""
    s0, s1 = a.strides
    item = a.itemsize
    if a.flags.c_contiguous and s1 == item:
        return _NO_TRANS, max(a.shape[1], 1)
    if a.flags.f_contiguous and s0 == item:
        return _TRANS, max(a.shape[0], 1)
    return None


def matmul(x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None,
           accumulate: bool = False) -> np.ndarray:
    """``x @ y`` for NumPy arrays (any ranks NumPy accepts); with ``accumulate``,
    ``out += x @ y`` (GEMM's beta = 1: ``linear`` pre-fills ``out`` with the bias, which saves
    the separate read-modify-write pass of adding it afterwards)."""
    if accumulate and out is None:
        raise ValueError("blas.matmul: accumulate=True needs out=")
    if _gemm is None:
        _load()
    fn = _gemm.get(x.dtype) if _gemm else None
    if fn is None or x.ndim != 2 or y.ndim != 2 or y.dtype != x.dtype or (
            out is not None and not out.flags.c_contiguous):
        if accumulate:
            out += np.matmul(x, y)
            return out
        return np.matmul(x, y, out=out) if out is not None else np.matmul(x, y)
    m, k = x.shape
    n = y.shape[1]
    if k != y.shape[0]:
        return np.matmul(x, y)  # NumPy raises its shape error
    ta, tb = _operand(x), _operand(y)
    if ta is None:
        x = np.ascontiguousarray(x)
        ta = (_NO_TRANS, max(k, 1))
    if tb is None:
        y = np.ascontiguousarray(y)
        tb = (_NO_TRANS, max(n, 1))
    if out is None:
        out = cpu.empty((m, n), x.dtype)  # pooled: no page faults per step
    if m and n:
        if k == 0:
            if not accumulate:
                out[...] = 0
        else:
            fn(_ROW_MAJOR, ta[0], tb[0], m, n, k, 1.0, _address(x), ta[1], _address(y), tb[1],
               1.0 if accumulate else 0.0, _address(out), max(n, 1))
    return out
