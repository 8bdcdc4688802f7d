"""Compiled calls of MKL's ``cblas_?gemv`` and ``cblas_?dot`` for ``blas_vector`` (and
``cblas_?gemm`` for ``blas.matmul``'s 2-D products, ``aten_gemm``, the only place ATen's GEMM
argument choice is written; ``cblas_?gemm_batch_strided`` for its stacks): one Numba
function per routine reads the operands' addresses and makes the call, so a small product costs a
Numba dispatch (about a microsecond) instead of a ctypes call with its argument conversions and a
Python-level address read per operand (10-15 us for a 3x5 ``mv``).

The routine's address is an argument (an integer), not a global: a kernel that bakes an
address in cannot be cached on disk (the library loads elsewhere in the next process), and a
ctypes function object as an argument is typed by Numba in Python on every call. ``_call_gemv``/
``_call_dot`` turn the integer into a C function pointer of the CBLAS prototype (LP64: ``int``
sizes and strides, ``float``/``double`` scalars passed by value) and call it. The arguments are
the ones the ctypes call passed (alpha and beta rounded to the dtype the same way), so the
results are the same bits. The same pattern calls VML's ``vm?<Func>`` for ``backends/vml.py``
(end of file)."""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ..codegen.kcache import njit_cached

_ROW_MAJOR, _COL_MAJOR, _NO_TRANS, _TRANS = 101, 102, 111, 112
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


@intrinsic
def _call_gemm(typingctx, addr, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """``cblas_?gemm(CblasColMajor, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c,
    ldc)`` at ``addr``; the integers are int32, the pointers uintp, alpha/beta the dtype's
    scalar."""
    sig = types.void(addr, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)

    def codegen(context, builder, signature, args):
        i32, vp = ir.IntType(32), ir.IntType(8).as_pointer()
        flt = _llvm_scalar(signature.args[6])
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i32, i32, i32, flt, vp, i32, vp,
                                               i32, flt, vp, i32])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        (_, ta, tb, mm, nn, kk, al, pa, la, pb, lb, be, pc, lc) = args
        builder.call(fn, [ir.Constant(i32, _COL_MAJOR), ta, tb, mm, nn, kk, al,
                          builder.inttoptr(pa, vp), la, builder.inttoptr(pb, vp), lb, be,
                          builder.inttoptr(pc, vp), lc])
        return context.get_dummy_value()
    return sig, codegen


@njit_cached(nogil=True, inline="always")
def _operand_layout(s0, s1, rows, cols, tc):
    """(transpose flag, copy?) for one GEMM operand of element strides ``s0``/``s1`` along the
    call's rows/cols: read in place when one of them is unit and the other a valid leading
    dimension, else a C-contiguous copy (read transposed unless the result is row-major)."""
    if s0 == 1 and s1 >= max(1, rows):
        return False, False
    if s1 == 1 and s0 >= max(1, cols):
        return True, False
    return not tc, True


@njit_cached(nogil=True, inline="always")
def _gemm_layout(x, y, out):
    """The first half of ATen's choice for ``out = x @ y`` (``addmm_impl_cpu_``): (ok, tc, ta,
    tb, copy_a, copy_b, m, n, k, ldc), ``tc`` the row-major result (operands swapped: ``a`` is
    then ``y``), ``copy_*`` an operand GEMM reads as a C-contiguous copy; ok False where ATen
    would not call BLAS (a stride not a multiple of the item size, a result layout GEMM can't
    write). The layout tests look at every stride, size-1 dims included, as ATen's do: MKL picks
    its kernel by these arguments, so a different but equivalent call can give different bits."""
    item = x.itemsize
    xs0, xs1 = x.strides
    ys0, ys1 = y.strides
    os0, os1 = out.strides
    r0, r1 = out.shape
    if xs0 % item or xs1 % item or ys0 % item or ys1 % item or os0 % item or os1 % item:
        return False, False, False, False, False, False, 0, 0, 0, 0
    rs0, rs1 = os0 // item, os1 // item
    if rs0 == 1 and (r1 == 1 or rs1 >= max(1, r0)):
        m, n, k, ldc = r0, r1, x.shape[1], rs1
        ta, ca = _operand_layout(xs0 // item, xs1 // item, m, k, False)
        tb, cb = _operand_layout(ys0 // item, ys1 // item, k, n, False)
        return True, False, ta, tb, ca, cb, m, n, k, ldc
    if rs1 == 1 and (r0 == 1 or rs0 >= max(1, r1)):
        m, n, k, ldc = r1, r0, y.shape[0], rs0
        ta, ca = _operand_layout(ys1 // item, ys0 // item, m, k, True)
        tb, cb = _operand_layout(xs1 // item, xs0 // item, k, n, True)
        return True, True, ta, tb, ca, cb, m, n, k, ldc
    return False, False, False, False, False, False, 0, 0, 0, 0


@njit_cached(nogil=True, inline="always")
def _gemm_lds(ta, tb, m, n, k, lda, ldb, ldc):
    """The second half: the leading dimensions as cpublas ``gemm``'s ``normalize_last_dims``
    sets them, and its ``use_blas_gemm`` test (ok, lda, ldb, ldc)."""
    if n == 1:
        ldc = m
    if ta:
        lda = k if m == 1 else lda
    elif k == 1:
        lda = m
    if tb:
        ldb = n if k == 1 else ldb
    elif n == 1:
        ldb = k
    ok = (lda >= max(1, k if ta else m) and ldb >= max(1, n if tb else k) and
          ldc >= max(1, m) and max(m, n, k, lda, ldb, ldc) <= _INT_MAX)
    return ok, lda, ldb, ldc


@njit_cached(nogil=True)
def gemm_plan(x, y, out):
    """ATen's GEMM arguments for ``out = x @ y`` where both operands are read in place
    (``blas.addbmm`` makes one such call per matrix, the addresses moving): (ok, swapped, transa,
    transb, m, n, k, lda, ldb, ldc), ``swapped`` meaning ``a`` is ``y``; ok False where ATen
    would not call BLAS or would copy an operand."""
    ok, tc, ta, tb, ca, cb, m, n, k, ldc = _gemm_layout(x, y, out)
    if not ok or ca or cb:
        return False, False, 0, 0, 0, 0, 0, 0, 0, 0
    item = x.itemsize
    a_st = y.strides if tc else x.strides
    b_st = x.strides if tc else y.strides
    lda = a_st[1 if ta == tc else 0] // item
    ldb = b_st[1 if tb == tc else 0] // item
    ok, lda, ldb, ldc = _gemm_lds(ta, tb, m, n, k, lda, ldb, ldc)
    return ok, tc, _TRANS if ta else _NO_TRANS, _TRANS if tb else _NO_TRANS, m, n, k, lda, ldb, \
        ldc


@njit_cached(nogil=True)
def aten_gemm(addr, x, y, out, alpha, beta):
    """``out = beta * out + alpha * x @ y`` (2-D, non-empty, one float dtype) by the
    ``cblas_?gemm`` at ``addr`` with the arguments ATen's ``addmm_impl_cpu_`` passes
    (``_gemm_layout``, ``_gemm_lds``). False, having written nothing, where ATen would not
    call BLAS (a stride not a multiple of the item size, a result layout GEMM can't write, a
    size or leading dimension past ``int``): the caller then computes the product otherwise.
    alpha and beta are Python floats, rounded to the dtype as ctypes rounds them."""
    ok, tc, ta, tb, ca, cb, m, n, k, ldc = _gemm_layout(x, y, out)
    if not ok:
        return False
    if tc:
        return _gemm_operands(addr, tc, ta, tb, ca, cb, y, x, out, m, n, k, ldc, alpha, beta)
    return _gemm_operands(addr, tc, ta, tb, ca, cb, x, y, out, m, n, k, ldc, alpha, beta)


_gemm_prepared = []


def _source(scalar):
    """Any layout, read-only or not, aligned or not: every 2-D operand of ``scalar`` converts
    to this type at the call (a fraction of a microsecond)."""
    return types.Array(scalar, 2, "A", readonly=True, aligned=False)


def gemm_entry():
    """``aten_gemm`` compiled for any-layout (``'A'``) float32 and float64 operands, read-only
    or unaligned ones included, and no further: every operand converts to these types at the
    call, so every layout shares two compilations (two cold ones, a few seconds; a disk cache
    load afterwards) instead of one per combination of operand layouts."""
    if not _gemm_prepared:
        for scalar in (types.float32, types.float64):
            src = _source(scalar)
            aten_gemm.compile((types.int64, src, src, types.Array(scalar, 2, "A", aligned=False),
                               types.float64, types.float64))
        aten_gemm.disable_compile()
        _gemm_prepared.append(aten_gemm)
    return _gemm_prepared[0]


_plan_prepared = []


def plan_entry():
    """``gemm_plan`` compiled as ``gemm_entry`` compiles ``aten_gemm``."""
    if not _plan_prepared:
        for scalar in (types.float32, types.float64):
            src = _source(scalar)
            gemm_plan.compile((src, src, types.Array(scalar, 2, "A", aligned=False)))
        gemm_plan.disable_compile()
        _plan_prepared.append(gemm_plan)
    return _plan_prepared[0]


@njit_cached(nogil=True)
def _gemm_operands(addr, tc, ta, tb, ca, cb, m1, m2, out, m, n, k, ldc, alpha, beta):
    """``aten_gemm`` once the layout is chosen: each operand read in place or copied
    C-contiguous, its leading dimension read off the array GEMM reads, then the call."""
    item = m1.itemsize
    a = np.ascontiguousarray(m1) if ca else m1
    b = np.ascontiguousarray(m2) if cb else m2
    lda = a.strides[1 if ta == tc else 0] // item
    ldb = b.strides[1 if tb == tc else 0] // item
    ok, lda, ldb, ldc = _gemm_lds(ta, tb, m, n, k, lda, ldb, ldc)
    if not ok:
        return False
    scalar = out.dtype.type
    _call_gemm(addr, np.int32(_TRANS if ta else _NO_TRANS), np.int32(_TRANS if tb else _NO_TRANS),
               np.int32(m), np.int32(n), np.int32(k), scalar(alpha), a.ctypes.data, np.int32(lda),
               b.ctypes.data, np.int32(ldb), scalar(beta), out.ctypes.data, np.int32(ldc))
    return True


@intrinsic
def _call_gemm_strided(typingctx, addr, transa, transb, m, n, k, alpha, a, lda, stridea, b, ldb,
                       strideb, beta, c, ldc, stridec, batch):
    """``cblas_?gemm_batch_strided(CblasRowMajor, transa, transb, m, n, k, alpha, a, lda,
    stridea, b, ldb, strideb, beta, c, ldc, stridec, batch)`` at ``addr``; the integers are
    int32, the pointers uintp, alpha/beta the dtype's scalar."""
    sig = types.void(addr, transa, transb, m, n, k, alpha, a, lda, stridea, b, ldb, strideb, beta,
                     c, ldc, stridec, batch)

    def codegen(context, builder, signature, args):
        i32, vp = ir.IntType(32), ir.IntType(8).as_pointer()
        flt = _llvm_scalar(signature.args[6])
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i32, i32, i32, flt, vp, i32, i32,
                                               vp, i32, i32, flt, vp, i32, i32, i32])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        (_, ta, tb, mm, nn, kk, al, pa, la, sa, pb, lb, sb, be, pc, lc, sc, nb) = args
        builder.call(fn, [ir.Constant(i32, _ROW_MAJOR), ta, tb, mm, nn, kk, al,
                          builder.inttoptr(pa, vp), la, sa, builder.inttoptr(pb, vp), lb, sb, be,
                          builder.inttoptr(pc, vp), lc, sc, nb])
        return context.get_dummy_value()
    return sig, codegen


@njit_cached(nogil=True, inline="always")
def matrix_layout(rows, cols, row_stride, col_stride, item):
    """(transpose flag, leading dimension) with which row-major GEMM reads a ``rows x cols``
    matrix of these byte strides in place, or ``(0, 0)`` when neither dim has unit stride (or
    a stride is not a multiple of the item size). A dim of size 1 has no stride to honour."""
    if row_stride % item or col_stride % item:
        return 0, 0
    sr = row_stride // item
    sc = col_stride // item
    if (cols <= 1 or sc == 1) and (rows <= 1 or sr >= cols):
        return _NO_TRANS, sr if rows > 1 else max(cols, 1)
    if (rows <= 1 or sr == 1) and (cols <= 1 or sc >= rows):
        return _TRANS, sc if cols > 1 else max(rows, 1)
    return 0, 0


@njit_cached(nogil=True)
def gemm_batch_strided(addr, x0, y0, out0, nb, bx, by, bc, ldc, apart, alpha, beta):
    """``out[i] = beta * out[i] + alpha * x[i] @ y[i]`` for ``i < nb`` by the
    ``cblas_?gemm_batch_strided`` at ``addr``: ``x0``/``y0``/``out0`` are the first matrices,
    matrix ``i`` lies ``i * bx`` (``by``, ``bc``) bytes past them, ``out``'s rows ``ldc`` elements
    apart. False, having called nothing, where GEMM can't read a matrix of ``x``/``y`` in place,
    a batch stride is not whole elements, a size passes ``int``, or (``apart``) the matrices of
    ``x`` or ``y`` overlap without coinciding (MKL may reject such a stride). alpha and beta are
    Python floats, rounded to the dtype as ctypes rounds them."""
    item = x0.itemsize
    m, k = x0.shape
    n = y0.shape[1]
    ta, lda = matrix_layout(m, k, x0.strides[0], x0.strides[1], item)
    tb, ldb = matrix_layout(k, n, y0.strides[0], y0.strides[1], item)
    if ta == 0 or tb == 0 or bx % item or by % item or bc % item:
        return False
    sx, sy, sc = bx // item, by // item, bc // item
    if apart and not ((sx == 0 or sx >= lda * (m if ta == _NO_TRANS else k)) and
                      (sy == 0 or sy >= ldb * (k if tb == _NO_TRANS else n))):
        return False
    if max(m, n, k, nb, lda, ldb, ldc, sx, sy, sc) > _INT_MAX or m * n * nb > _INT_MAX:
        return False
    scalar = out0.dtype.type
    i32 = np.int32
    _call_gemm_strided(addr, i32(ta), i32(tb), i32(m), i32(n), i32(k), scalar(alpha),
                       x0.ctypes.data, i32(lda), i32(sx), y0.ctypes.data, i32(ldb), i32(sy),
                       scalar(beta), out0.ctypes.data, i32(ldc), i32(sc), i32(nb))
    return True


_strided_prepared = []


def strided_entry():
    """``gemm_batch_strided`` compiled for any-layout float32/float64 first matrices (``x0``/
    ``y0`` read-only or not), and no further (as ``gemm_entry``); an unaligned operand matches
    no signature (TypeError): the caller copies it."""
    if not _strided_prepared:
        i64, f64 = types.int64, types.float64
        for scalar in (types.float32, types.float64):
            src = types.Array(scalar, 2, "A", readonly=True)
            gemm_batch_strided.compile((i64, src, src, types.Array(scalar, 2, "A"), i64, i64,
                                        i64, i64, i64, types.boolean, f64, f64))
        gemm_batch_strided.disable_compile()
        _strided_prepared.append(gemm_batch_strided)
    return _strided_prepared[0]


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


# ----------------------------------------------------------------------------- MKL VML
# backends/vml.py's calls: one routine per (op, dtype), the address an argument as above.
# ATen's flags (aten/src/ATen/cpu/vml.h): VML_HA | VML_FTZDAZ_OFF | VML_ERRMODE_IGNORE
VML_MODE = 0x2 | 0x140000 | 0x100
_VML_CHUNK = 1 << 30  # MKL_INT is int32 (LP64): longer arrays go in pieces (elementwise)


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
def vml_apply(addr, x, out):
    """``vm?<Func>(n, x, out, MODE)`` at ``addr`` over 1-D C-contiguous ``x`` and ``out``
    (``backends/vml.py``), in pieces of at most ``_VML_CHUNK`` elements."""
    n = x.size
    item = x.itemsize
    px = x.ctypes.data
    po = out.ctypes.data
    i = 0
    while i < n:
        m = min(n - i, _VML_CHUNK)
        _call_vml(addr, np.int32(m), px + i * item, po + i * item, np.int64(VML_MODE))
        i += m


_vml_prepared = []


def vml_entry():
    """``vml_apply`` compiled for 1-D C-contiguous float32/float64 operands (the input read-only
    or not: a writable array converts to the read-only type), and no further."""
    if not _vml_prepared:
        for scalar in (types.float32, types.float64):
            x = types.Array(scalar, 1, "C", readonly=True)
            vml_apply.compile((types.int64, x, types.Array(scalar, 1, "C")))
        vml_apply.disable_compile()
        _vml_prepared.append(vml_apply)
    return _vml_prepared[0]
