"""CPU matrix-vector products and dot products as ATen makes them (aten/src/ATen/native/Blas.cpp,
BlasKernel.cpp): ``addmv``/``mv`` call BLAS's Fortran ``?gemv`` with ATen's choice of
``'n'``/``'t'``, leading dimension and beta (the result pre-filled with the bias), ``dot``/
``vdot`` call ``?dot``. With the MKL PyTorch links (backends/blas.py) these give PyTorch's bits;
MKL's gemv/dot kernels sum in other orders than GEMM's or NumPy's, so a product routed through
``matmul`` differs in the last bits.

Where ATen leaves BLAS (a vector or result stride <= 0, sizes past ``int``), it runs its own
loops: ``_gemv_loop`` below (BlasKernel.cpp's ``gemv`` fallback: ``'t'`` sums each row in
index order; ``'n'`` adds column by column, one rounding per product and per addition: the file
is built without FMA contraction). Without MKL gemv takes those loops too (ATen's order, as a
PyTorch built without BLAS) and dot NumPy's."""
from __future__ import annotations

import ctypes

import numpy as np

from ..codegen.kcache import njit_cached
from . import blas, cblas_calls

__all__ = ["addmv", "dot"]

_INT_MAX = 2 ** 31 - 1
_fns = None  # {(kind, np.dtype): the CBLAS routine's address}, {} without MKL


def _load():
    global _fns
    _fns = {}
    if blas.backend() != "mkl":
        return
    lib = blas._find_mkl()
    for dt, p in ((np.float32, "s"), (np.float64, "d")):
        # CBLAS's column-major gemv and dot are MKL's Fortran ?gemv_/?dot_ (ATen's calls) behind
        # a wrapper that takes its integers by value; backends/cblas_calls calls them from
        # compiled code by address (a ctypes call cost 10-15 us per small product)
        gemv = getattr(lib, f"cblas_{p}gemv", None)
        dotf = getattr(lib, f"cblas_{p}dot", None)
        if gemv is None or dotf is None:
            continue
        _fns[("gemv", np.dtype(dt))] = ctypes.cast(gemv, ctypes.c_void_p).value
        _fns[("dot", np.dtype(dt))] = ctypes.cast(dotf, ctypes.c_void_p).value


def _fn(kind, dtype):
    if _fns is None:
        _load()
    return _fns.get((kind, dtype))


@njit_cached(nogil=True)
def _gemv_loop(trans, m, n, alpha, a, lda, x, incx, beta, y, incy):
    """BlasKernel.cpp's ``gemv`` loops over flat buffers (offsets in elements); ``a`` is read
    column-major: element (i, j) at ``i + j * lda``."""
    zero = y.dtype.type(0)
    if trans:
        for i in range(n):
            s = zero
            for j in range(m):
                s += x[j * incx] * a[lda * i + j]
            if beta == 0:
                y[i * incy] = alpha * s
            else:
                y[i * incy] = beta * y[i * incy] + alpha * s
        return
    if beta != 1 and beta != 0:  # scal: BLAS's ?scal multiplies in place
        for i in range(m):
            y[i * incy] *= beta
    for j in range(n):
        z = alpha * x[j * incx]
        for i in range(m):
            if j == 0 and beta == 0:
                y[i * incy] = zero
            y[i * incy] += z * a[lda * j + i]


def _gemv(trans, m, n, alpha, a, lda, x, incx, beta, y, incy):
    """ATen's ``gemv`` template: BLAS where its fast path allows, else the loops. ``a``, ``x``,
    ``y`` are NumPy arrays whose first element is the operand's first element."""
    if n == 1:
        lda = m
    fn = _fn("gemv", y.dtype)
    if fn is not None and max(m, n, lda, incx, incy) <= _INT_MAX and incx > 0 and incy > 0:
        cblas_calls.gemv(fn, trans, m, n, float(alpha), a, lda, x, incx, float(beta), y, incy)
        return
    x_len, y_len = (m, n) if trans else (n, m)
    _gemv_loop(trans, m, n, y.dtype.type(alpha), _span(a, (n - 1) * lda + m), lda,
               _span(x, (x_len - 1) * incx + 1), incx, y.dtype.type(beta),
               _span(y, (y_len - 1) * incy + 1), incy)


def _span(arr, count):
    """A 1-D unit-stride view of ``count`` elements of ``arr``'s buffer from its first element
    (the loops walk the strides themselves; strides here are >= 0)."""
    return np.lib.stride_tricks.as_strided(arr, shape=(max(count, 1),), strides=(arr.itemsize,))


def addmv(mat: np.ndarray, vec: np.ndarray, out: np.ndarray, alpha=1.0, beta=0.0) -> np.ndarray:
    """``out = beta * out + alpha * mat @ vec`` (float32/float64, ``out`` 1-D of ``mat``'s rows,
    holding the bias when ``beta != 0``) as ``addmv_out_cpu`` calls gemv: a column-major
    ``mat`` is ``'n'``, a row-major one ``'t'``, any other layout a contiguous copy then
    ``'t'``. ``beta == 0`` does not read ``out``."""
    if mat.size == 0 or out.size == 0:
        if mat.size == 0 and out.size:
            if beta == 0:
                out[...] = 0
            else:
                out *= out.dtype.type(beta)
        return out
    fn = _fn("gemv", out.dtype)
    if fn is not None and cblas_calls.addmv(fn, mat, vec, out, float(alpha), float(beta)):
        return out  # the common case in one compiled call; below: ATen's other routes
    item = mat.itemsize
    r0, r1 = mat.shape
    s0, s1 = (st // item for st in mat.strides) if all(
        st % item == 0 for st in mat.strides) else (None, None)

    def lda_ok(m, n, lda):
        return n == 1 or lda >= max(1, m)

    vinc = vec.strides[0] // item if vec.shape[0] > 1 else 1
    yinc = out.strides[0] // item if out.shape[0] > 1 else 1
    if s0 == 1 and lda_ok(r0, r1, s1):
        _gemv(False, r0, r1, alpha, mat, s1, vec, vinc, beta, out, yinc)
    elif s1 == 1 and lda_ok(r1, r0, s0):
        _gemv(True, r1, r0, alpha, mat, s0, vec, vinc, beta, out, yinc)
    else:
        c = np.ascontiguousarray(mat)
        _gemv(True, r1, r0, alpha, c, r1, vec, vinc, beta, out, yinc)
    return out


def dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """ATen's ``dot_impl`` for float32/float64: BLAS ``?dot`` with the operands' strides (unit
    for one element), a 0-d array of the result."""
    n = x.shape[0]
    item = x.itemsize
    incx = x.strides[0] // item if n > 1 else 1
    incy = y.strides[0] // item if n > 1 else 1
    fn = _fn("dot", x.dtype)
    if fn is None or not n or min(incx, incy) < 0 or max(n, incx, incy) > _INT_MAX:
        return np.asarray(np.dot(x, y), x.dtype)  # NumPy's BLAS: its own order
    return np.asarray(cblas_calls.dot(fn, n, x, incx, y, incy), x.dtype)
