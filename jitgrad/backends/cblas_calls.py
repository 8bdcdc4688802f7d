"""Compiled calls of MKL's ``cblas_?gemv`` and ``cblas_?dot`` for ``blas_vector``: one Numba
function per routine reads the operands' addresses and makes the call, so a small product costs a
Numba dispatch (about a microsecond) instead of a ctypes call with its argument conversions and a
Python-level address read per operand (10-15 us for a 3x5 ``mv``).

The routine's address is an argument (an integer), not a global: a kernel that bakes an
address in cannot be cached on disk (the library loads elsewhere in the next process), and a
ctypes function object as an argument is typed by Numba in Python on every call. ``_call_gemv``/
``_call_dot`` turn the integer into a C function pointer of the CBLAS prototype (LP64: ``int``
sizes and strides, ``float``/``double`` scalars passed by value) and call it. The arguments are
the ones the ctypes call passed (alpha and beta rounded to the dtype the same way), so the
results are the same bits."""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ..codegen.kcache import njit_cached

_COL_MAJOR, _NO_TRANS, _TRANS = 102, 111, 112
_INT_MAX = 2 ** 31 - 1


def _llvm_scalar(ty):
    return ir.FloatType() if ty == types.float32 else ir.DoubleType()


@intrinsic
def _call_gemv(typingctx, addr, trans, m, n, alpha, a, lda, x, incx, beta, y, incy):
    """``cblas_?gemv(CblasColMajor, trans, m, n, alpha, a, lda, x, incx, beta, y, incy)`` at
    ``addr``; the integers are int32, the pointers uintp, alpha/beta the dtype's scalar."""
    sig = types.void(addr, trans, m, n, alpha, a, lda, x, incx, beta, y, incy)

    def codegen(context, builder, signature, args):
        i32, vp = ir.IntType(32), ir.IntType(8).as_pointer()
        flt = _llvm_scalar(signature.args[4])
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i32, flt, vp, i32, vp, i32, flt,
                                               vp, i32])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        (_, tr, mm, nn, al, pa, ld, px, ix, be, py, iy) = args
        builder.call(fn, [ir.Constant(i32, _COL_MAJOR), tr, mm, nn, al,
                          builder.inttoptr(pa, vp), ld, builder.inttoptr(px, vp), ix, be,
                          builder.inttoptr(py, vp), iy])
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _call_dot(typingctx, addr, n, x, incx, y, incy, like):
    """``cblas_?dot(n, x, incx, y, incy)`` at ``addr``, returning ``like``'s float type."""
    sig = like(addr, n, x, incx, y, incy, like)

    def codegen(context, builder, signature, args):
        i32, vp = ir.IntType(32), ir.IntType(8).as_pointer()
        flt = _llvm_scalar(signature.return_type)
        fnty = ir.FunctionType(flt, [i32, vp, i32, vp, i32])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        (_, nn, px, ix, py, iy, _) = args
        return builder.call(fn, [nn, builder.inttoptr(px, vp), ix, builder.inttoptr(py, vp), iy])
    return sig, codegen


@njit_cached(nogil=True)
def gemv(addr, trans, m, n, alpha, a, lda, x, incx, beta, y, incy):
    """``y = beta * y + alpha * op(a) @ x`` by the ``cblas_?gemv`` at ``addr``; ``a``, ``x``,
    ``y`` are arrays (any layout) whose first element is the operand's first element, the other
    arguments already checked to fit ``int``; alpha and beta Python floats, rounded to y's
    dtype here as ctypes rounds them for a ``c_float``/``c_double`` parameter."""
    scalar = y.dtype.type
    _call_gemv(addr, np.int32(_TRANS if trans else _NO_TRANS), np.int32(m), np.int32(n),
               scalar(alpha), a.ctypes.data, np.int32(lda), x.ctypes.data, np.int32(incx),
               scalar(beta), y.ctypes.data, np.int32(incy))


@njit_cached(nogil=True)
def dot(addr, n, x, incx, y, incy):
    """``cblas_?dot`` at ``addr`` over ``x`` and ``y`` (their first elements, the strides in
    elements), in their dtype."""
    return _call_dot(addr, np.int32(n), x.ctypes.data, np.int32(incx), y.ctypes.data,
                     np.int32(incy), x[0])


@njit_cached(nogil=True)
def addmv(addr, mat, vec, out, alpha, beta):
    """``blas_vector.addmv``'s choice of gemv call for a non-empty ``mat`` (``'n'`` for a
    column-major ``mat``, ``'t'`` for a row-major one, else ``'t'`` on a contiguous copy) made
    here; False, having written nothing, where ATen leaves BLAS (a stride <= 0, a size past
    ``int``): the caller then runs the loops."""
    item = mat.itemsize
    r0, r1 = mat.shape
    b0, b1 = mat.strides
    s0 = b0 // item if b0 % item == 0 and b1 % item == 0 else -1
    s1 = b1 // item if b0 % item == 0 and b1 % item == 0 else -1
    vinc = vec.strides[0] // item if vec.shape[0] > 1 else 1
    yinc = out.strides[0] // item if out.shape[0] > 1 else 1
    if vinc <= 0 or yinc <= 0:
        return False
    if s0 == 1 and (r1 == 1 or s1 >= max(1, r0)):
        return _gemv_checked(addr, False, r0, r1, alpha, mat, s1, vec, vinc, beta, out, yinc)
    if s1 == 1 and (r0 == 1 or s0 >= max(1, r1)):
        return _gemv_checked(addr, True, r1, r0, alpha, mat, s0, vec, vinc, beta, out, yinc)
    if max(r0, r1) > _INT_MAX:
        return False
    return _gemv_checked(addr, True, r1, r0, alpha, np.ascontiguousarray(mat), r1, vec, vinc,
                         beta, out, yinc)


@njit_cached(nogil=True)
def _gemv_checked(addr, trans, m, n, alpha, a, lda, x, incx, beta, y, incy):
    """ATen's ``gemv`` template's test for BLAS (``n == 1`` takes ``lda = m``), then the call."""
    if n == 1:
        lda = m
    if max(m, n, lda, incx, incy) > _INT_MAX:
        return False
    gemv(addr, trans, m, n, alpha, a, lda, x, incx, beta, y, incy)
    return True
