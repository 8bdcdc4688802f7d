"""layer_norm's CPU forward in ATen's arithmetic (float32 / float64): PyTorch's bits for the
output, the saved mean and rstd (layer_norm_kernel.cpp's LayerNormKernelImplInternal over
moments_utils.h's RowwiseMoments).

Measured against ``torch.native_layer_norm`` (this PyTorch 2.13, element by element; the
variants below were each tried and only this combination gives every bit):

* the kernel runs with AVX2 widths (8 float32 / 4 float64 lanes), not AVX-512's, although
  the CPU capability reads AVX512;
* RowwiseMoments, all in the input's dtype ``T``: the first ``n = N // lanes`` whole vectors in
  chunks of 16 vectors, each a per-lane Welford pass from zero with UpdateMomentsVec's explicit
  ``fmadd``s (``m1 = fma(1/(j+1), delta, m1)``, ``m2 = fma(delta, x - m1, m2)``); each chunk
  merged into a cascade of ``CeilLog2(ceil(n / 16))`` levels (a binary counter's carries), the
  levels then folded into level 0, by AddMomentsVec's newer form: ``cd = c * delta``,
  ``m1 + cd``, ``fmadd(delta * m0, cd, m2 + m2_add)`` (no other contraction in vector code);
  the last ``N % lanes`` values by a scalar Welford pass (``m1 += delta / count``, ``m2 +=
  delta * (x - m1)`` with the product rounded: no FMA, measured on rows shorter than a vector
  and on 1031-long rows, where an FMA differs in ~1% of rows); the lanes then merged into it
  one by one with the scalar AddMoments, which GCC contracts (``m1 = fma(c, delta, m1)``,
  ``m2 += fma(delta * delta * c, m0, m2_add)``);
  ``var = m2 / N``;
* ``rstd = 1 / sqrt(var + T(eps))``;
* ``y = fma((x + (-mean)) * rstd, gamma, beta)``; without gamma, ``fma(x + (-mean), rstd,
  beta)`` (GCC folds the ``* 1``), a missing beta being 0.

Rows are independent (``parallel_for`` over rows), so the thread count does not change a bit.
Kernels compile without fast-math: every FMA is an explicit ``fma``. The vector parts
(UpdateMomentsVec's chunk pass, AddMomentsVec) are LLVM ``<lanes x T>`` code written by two
intrinsics, one vector op per ATen vector op, so the lanes run as one register as in ATen.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from ...codegen.kcache import njit_cached as njit
from ...math._intrinsics import fma

__all__ = ["layer_norm_forward"]

_FLAGS = dict(nogil=True, error_model="numpy", fastmath=False)
_VECTOR_BYTES = 32            # AVX2 widths (measured: see above)
_CHUNK = 16                   # moments_utils.h's kChunkSize
_PARALLEL_MIN_ELEMENTS = 1 << 16


def _ceil_log2(x):
    """ATen's utils::CeilLog2 (1 for x <= 2)."""
    return 1 if x <= 2 else int(x - 1).bit_length()


@njit(inline="always", **_FLAGS)
def _add_moments(m0_add, m1_add, m2_add, m0, m1, m2, like):
    """The scalar AddMoments, as GCC contracts it: ``m1 += c * delta`` one FMA, ``m2 += m2_add
    + delta * delta * c * m0`` with the last product fused into the inner add."""
    dt = like.dtype.type
    n = m0 + m0_add
    c = dt(0) if n == 0 else dt(m0_add) / dt(n)
    delta = m1_add - m1
    return n, fma(c, delta, m1), m2 + fma(delta * delta * c, dt(m0), m2_add)


def _lanes(x):
    """The AVX2 vector width in ``x``'s dtype, a compile-time constant (8 float32, 4 float64)."""
    return _VECTOR_BYTES // x.itemsize


@overload(_lanes, inline="always")
def _lanes_ol(x):
    w = _VECTOR_BYTES * 8 // x.dtype.bitwidth
    return lambda x: w


def _vector_env(context, builder, st_type, st_value):
    """(lane vector type, pointer to the lane vector in row ``k`` of the state array, the
    vector llvm.fma) for the intrinsics below."""
    lanes = _VECTOR_BYTES * 8 // st_type.dtype.bitwidth
    vt = ir.VectorType(context.get_value_type(st_type.dtype), lanes)
    data = context.make_array(st_type)(context, builder, st_value).data

    def row(k):
        off = builder.mul(k, ir.Constant(ir.IntType(64), lanes))
        return builder.bitcast(builder.gep(data, [off]), vt.as_pointer())
    vfma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt, vt, vt]),
                                          f"llvm.fma.v{lanes}f{st_type.dtype.bitwidth}")
    return vt, row, vfma


def _splat(builder, vt, value):
    v = builder.insert_element(ir.Constant(vt, ir.Undefined), value,
                               ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(v, ir.Constant(vt, ir.Undefined),
                                  ir.Constant(ir.VectorType(ir.IntType(32), vt.count),
                                              [0] * vt.count))


# The vector parts of RowwiseMoments are LLVM ``<lanes x T>`` code (intrinsics), not Numba
# loops over the lanes: Numba leaves LLVM's SLP vectorizer off and a fixed 8- or 4-lane loop is
# unrolled before the loop vectorizer runs, so written in Python the lanes ran one by one (the
# kernel was ~4x PyTorch's time, against ~2x with the chunk pass alone in vector code). The
# state array ``st`` holds, per cascade level ``d``, m1 in row ``2d`` and m2 in row ``2d + 1``.

@intrinsic
def _chunk_moments(typingctx, xr, base, cnt, cv, st, slot):
    """UpdateMomentsVec over ``cnt`` whole vectors from ``xr[base]``, from zero, into level
    ``slot`` of ``st``: per lane ``delta = x - m1; m1 = fma(c_j, delta, m1); m2 = fma(delta,
    x - m1, m2)`` with ``c_j = cv[j]`` (ATen's explicit ``fmadd``s)."""
    if not (isinstance(xr, types.Array) and xr.dtype in (types.float32, types.float64)
            and cv == xr and isinstance(st, types.Array) and st.dtype == xr.dtype
            and st.ndim == 2 and st.layout == "C"):
        return None

    def codegen(context, builder, sig, args):
        x_arr, base_v, cnt_v, cv_arr, st_arr, slot_v = args
        vt, row, vfma = _vector_env(context, builder, sig.args[4], st_arr)
        xp = context.make_array(sig.args[0])(context, builder, x_arr).data
        cp = context.make_array(sig.args[3])(context, builder, cv_arr).data
        m1 = cgutils.alloca_once_value(builder, ir.Constant(vt, None))
        m2 = cgutils.alloca_once_value(builder, ir.Constant(vt, None))
        with cgutils.for_range(builder, cnt_v) as loop:
            j = loop.index
            off = builder.add(base_v, builder.mul(j, ir.Constant(ir.IntType(64), vt.count)))
            x = builder.load(builder.bitcast(builder.gep(xp, [off]), vt.as_pointer()), align=1)
            c = _splat(builder, vt, builder.load(builder.gep(cp, [j])))
            a = builder.load(m1)
            delta = builder.fsub(x, a)
            a = builder.call(vfma, [c, delta, a])
            builder.store(a, m1)
            builder.store(builder.call(vfma, [delta, builder.fsub(x, a), builder.load(m2)]), m2)
        k = builder.mul(slot_v, ir.Constant(ir.IntType(64), 2))
        builder.store(builder.load(m1), row(k), align=1)
        builder.store(builder.load(m2), row(builder.add(k, ir.Constant(k.type, 1))), align=1)
        return context.get_dummy_value()
    return types.none(xr, types.int64, types.int64, cv, st, types.int64), codegen


@intrinsic
def _merge_vec(typingctx, st, src, dst, c, m0):
    """AddMomentsVec of level ``src`` into level ``dst`` of ``st``, ``c = m0_add / n`` and
    ``m0`` (dst's count) given as T: ``delta = m1_add - m1; cd = c * delta; m1 += cd; m2 =
    fmadd(delta * m0, cd, m2 + m2_add)`` (the vector operators are not contracted)."""
    if not (isinstance(st, types.Array) and st.dtype in (types.float32, types.float64)
            and st.ndim == 2 and st.layout == "C" and c == m0 == st.dtype):
        return None

    def codegen(context, builder, sig, args):
        st_arr, src_v, dst_v, c_v, m0_v = args
        vt, row, vfma = _vector_env(context, builder, sig.args[0], st_arr)
        one = ir.Constant(ir.IntType(64), 1)
        two = ir.Constant(ir.IntType(64), 2)
        s1 = row(builder.mul(src_v, two))
        s2 = row(builder.add(builder.mul(src_v, two), one))
        d1 = row(builder.mul(dst_v, two))
        d2 = row(builder.add(builder.mul(dst_v, two), one))
        a1, a2 = builder.load(s1, align=1), builder.load(s2, align=1)
        b1, b2 = builder.load(d1, align=1), builder.load(d2, align=1)
        delta = builder.fsub(a1, b1)
        cd = builder.fmul(_splat(builder, vt, c_v), delta)
        builder.store(builder.fadd(b1, cd), d1, align=1)
        builder.store(builder.call(vfma, [builder.fmul(delta, _splat(builder, vt, m0_v)), cd,
                                          builder.fadd(b2, a2)]), d2, align=1)
        return context.get_dummy_value()
    return types.none(st, types.int64, types.int64, c, m0), codegen


@njit(inline="always", **_FLAGS)
def _merge(st, m0s, src, dst):
    """Level ``src`` (count ``m0s[src]``) merged into level ``dst``; ``m0s[dst]`` updated."""
    dt = st.dtype.type
    m0 = m0s[dst]
    n = m0 + m0s[src]
    c = dt(0) if n == 0 else dt(m0s[src]) / dt(n)
    _merge_vec(st, np.int64(src), np.int64(dst), c, dt(m0))
    m0s[dst] = n


@njit(inline="always", **_FLAGS)
def _row_moments(xr, depth, m0s, st, cv):
    """RowwiseMoments(xr, N): (mean, var) in xr's dtype. ``m0s``: depth + 1 counts; ``st``:
    2 * (depth + 1) rows of lanes (levels 0..depth-1 the cascade, level depth the chunk)."""
    big_n = xr.shape[0]
    w = _lanes(xr)
    dt = xr.dtype.type
    zero = dt(0)
    n = big_n // w
    m = (n + _CHUNK - 1) // _CHUNK
    for d in range(depth):
        m0s[d] = 0
        for lane in range(w):
            st[2 * d, lane] = zero
            st[2 * d + 1, lane] = zero
    for i in range(m):
        cnt = min(_CHUNK, n - i * _CHUNK)
        _chunk_moments(xr, np.int64(i * _CHUNK * w), np.int64(cnt), cv, st, np.int64(depth))
        # AddMomentsVec(cnt, v, stack[0]), then the carries up the cascade
        m0s[depth] = cnt
        _merge(st, m0s, depth, 0)
        mask = i + 1
        j = 1
        while j < depth and (mask & 1) == 0:
            _merge(st, m0s, j - 1, j)
            m0s[j - 1] = 0
            for lane in range(w):
                st[2 * j - 2, lane] = zero
                st[2 * j - 1, lane] = zero
            mask >>= 1
            j += 1
    for d in range(1, depth):
        _merge(st, m0s, d, 0)
    c0 = 0
    m1 = zero
    m2 = zero
    for i in range(n * w, big_n):
        x = xr[i]
        delta = x - m1
        c0 += 1
        m1 = m1 + delta / dt(c0)
        m2 = m2 + delta * (x - m1)  # not contracted (measured: rows of 3..7, 1031)
    for lane in range(w):
        c0, m1, m2 = _add_moments(n, st[0, lane], st[1, lane], c0, m1, m2, st)
    return m1, m2 / dt(big_n)


@njit(inline="always", **_FLAGS)
def _row(x, r, gamma, beta, eps, depth, y, stats, gamma_given, m0s, st, cv):
    dt = x.dtype.type
    xr = x[r]
    yr = y[r]
    mean, var = _row_moments(xr, depth, m0s, st, cv)
    rstd = dt(1) / np.sqrt(var + eps)
    bias = -mean
    if gamma_given:
        for j in range(xr.shape[0]):
            yr[j] = fma((xr[j] + bias) * rstd, gamma[j], beta[j])
    else:  # GCC folds ``* 1`` of the missing gamma and fuses the product left
        for j in range(xr.shape[0]):
            yr[j] = fma(xr[j] + bias, rstd, beta[j])
    stats[0, r] = mean
    stats[1, r] = rstd


@njit(inline="always", **_FLAGS)
def _rows(x, lo, hi, gamma, beta, eps, depth, y, stats, gamma_given):
    """Rows ``lo:hi``, with one set of scratch arrays (the cascade, 1/(j+1), the lanes)."""
    w = _lanes(x)
    dt = x.dtype.type
    m0s = np.zeros(depth + 1, np.int64)
    st = np.empty((2 * depth + 2, w), x.dtype)
    cv = np.empty(_CHUNK, x.dtype)
    for j in range(_CHUNK):
        cv[j] = dt(1) / dt(j + 1)
    for r in range(lo, hi):
        _row(x, r, gamma, beta, eps, depth, y, stats, gamma_given, m0s, st, cv)


@njit(**_FLAGS)
def _rows_serial(x, gamma, beta, eps, depth, y, stats, gamma_given):
    _rows(x, 0, x.shape[0], gamma, beta, eps[0], depth, y, stats, gamma_given)


@njit(parallel=True, **_FLAGS)
def _rows_parallel(x, gamma, beta, eps, depth, y, stats, gamma_given, blocks):
    m = x.shape[0]
    for b in prange(blocks):
        _rows(x, b * m // blocks, (b + 1) * m // blocks, gamma, beta, eps[0], depth, y, stats,
              gamma_given)


def layer_norm_forward(x2, weight, bias, eps, threads=1):
    """``(y, mean, rstd)`` of a C-contiguous ``(M, N)`` float32/float64 array (M, N > 0)
    normalized over its rows; ``weight``/``bias``: arrays of N values or None. ``mean`` and
    ``rstd`` have M values, in the input's dtype (ATen's saved statistics)."""
    dt = x2.dtype
    n = x2.shape[1]
    gamma = np.ones(n, dt) if weight is None else np.ascontiguousarray(weight, dt).reshape(n)
    beta = np.zeros(n, dt) if bias is None else np.ascontiguousarray(bias, dt).reshape(n)
    w = _VECTOR_BYTES // dt.itemsize
    depth = _ceil_log2(-(-(n // w) // _CHUNK))
    y = np.empty(x2.shape, dt)
    stats = np.empty((2, x2.shape[0]), dt)
    args = (np.ascontiguousarray(x2), gamma, beta, np.array([eps], dt), depth, y, stats,
            weight is not None)
    if x2.size >= _PARALLEL_MIN_ELEMENTS and threads > 1:
        # row blocks, not rows, so each task allocates its scratch once
        _rows_parallel(*args, min(x2.shape[0], 4 * threads))
    else:
        _rows_serial(*args)
    return y, stats[0], stats[1]
