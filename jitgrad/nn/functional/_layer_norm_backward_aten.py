"""layer_norm's CPU backward in ATen's arithmetic (float32 / float64): PyTorch's bits for the
input, weight and bias gradients (layer_norm_kernel.cpp's LayerNormBackwardKernelImplInternal
and layer_norm_backward_frame, AVX2 widths as for the forward: 8 float32 / 4 float64 lanes).

Measured against ``torch.native_layer_norm``'s gradients (this PyTorch 2.13, element by
element, 1 and 2 threads; each choice below was picked out of the alternatives GCC could have
made, and only this combination gives every bit):

* per row ``i`` with ``a = rstd[i]``: the dot products ``ds = sum(dy * x [* gamma])`` and
  ``db = sum(dy [* gamma])`` by vec::map{2,3}_reduce_all / reduce_all: lane accumulators
  starting from the first vector's products, each later product rounded, then added (no FMA),
  except the partial last vector, whose lanes take one FMA (``fma(dy [* x], gamma|x, acc)``);
  a row shorter than a vector is its products summed left to right.  The lanes are folded as
  reduce_all folds them: float32 by the AVX2 shuffle tree ``((l0+l4)+(l2+l6)) +
  ((l1+l5)+(l3+l7))``, float64 left to right (no SIMD specialisation);
* ``b = fma(db, mean, -ds) * a * a * a * scale``, ``c = fma(-b, mean, -(db * a * scale))``,
  ``scale = 1 / N``;
* ``dx = fma(b, x, a * dy [* gamma]) + c``;
* dgamma/dbeta: ``at::parallel_for(0, M, 1)`` splits the rows into ``min(T, M)`` contiguous
  blocks of ``ceil(M / min(T, M))`` rows (``T = at::get_num_threads()``); block ``t``
  accumulates into its own buffer row, ``buf = fma(dy, fma(a, x, -a * mean), buf)`` and
  ``buf + dy``; then ``dgamma[j] = 0 + buf[0][j] + ... + buf[T-1][j]``.  So the thread count
  changes dgamma/dbeta's bits (not dx's): callers pass jitgrad's thread count, which stands
  for PyTorch's.

The lane accumulation is LLVM ``<lanes x T>`` code (``_make_row_sums``' intrinsics, ds's and
db's sums in one loop), so the lanes share a register as in ATen; the element-wise loops are
plain Numba loops (LLVM's loop vectorizer takes them).  Kernels compile without fast-math:
every FMA is an explicit ``fma``.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from ...codegen.kcache import njit_cached as njit
from ...math._intrinsics import fma
from ._layer_norm_aten import _VECTOR_BYTES

__all__ = ["layer_norm_backward"]

_FLAGS = dict(nogil=True, error_model="numpy", fastmath=False)
_PARALLEL_MIN_ELEMENTS = 1 << 15


def _make_row_sums(has_gamma):
    """An intrinsic ``(dy, x, gamma, nvec, acc)`` for a row's first ``nvec`` whole vectors:
    ``acc[0]`` (lanes) = vec::map{2,3}_reduce_all's accumulator of ``ds``'s products (``dy *
    x``, with gamma ``(dy * x) * gamma``), ``acc[1]`` that of ``db``'s (``dy``, with gamma ``dy
    * gamma``): the first vector's products, then each later vector's rounded products added.
    The two sums run in one loop (two independent add chains: the latency of one, not two; the
    bits are those of two separate passes)."""

    @intrinsic
    def row_sums(typingctx, dy, x, gamma, nvec, acc):
        if not (isinstance(dy, types.Array) and dy.dtype in (types.float32, types.float64)
                and x == dy and gamma == dy and isinstance(acc, types.Array)
                and acc.dtype == dy.dtype and acc.ndim == 2 and acc.layout == "C"):
            return None

        def codegen(context, builder, sig, args):
            lanes = _VECTOR_BYTES * 8 // sig.args[0].dtype.bitwidth
            vt = ir.VectorType(context.get_value_type(sig.args[0].dtype), lanes)
            dyp, xp, gp = [context.make_array(sig.args[k])(context, builder, args[k]).data
                           for k in range(3)]
            accp = builder.bitcast(context.make_array(sig.args[4])(context, builder,
                                                                   args[4]).data,
                                   vt.as_pointer())

            def products(k):
                off = builder.mul(k, ir.Constant(ir.IntType(64), lanes))

                def load(ptr):
                    return builder.load(builder.bitcast(builder.gep(ptr, [off]),
                                                        vt.as_pointer()), align=1)
                d, xv = load(dyp), load(xp)
                ds = builder.fmul(d, xv)
                if has_gamma:
                    g = load(gp)
                    return builder.fmul(ds, g), builder.fmul(d, g)
                return ds, d
            first = products(ir.Constant(ir.IntType(64), 0))
            s_acc = cgutils.alloca_once_value(builder, first[0])
            b_acc = cgutils.alloca_once_value(builder, first[1])
            one = ir.Constant(ir.IntType(64), 1)
            with cgutils.for_range(builder, builder.sub(args[3], one)) as loop:
                ds, db = products(builder.add(loop.index, one))
                builder.store(builder.fadd(builder.load(s_acc), ds), s_acc)
                builder.store(builder.fadd(builder.load(b_acc), db), b_acc)
            builder.store(builder.load(s_acc), accp, align=1)
            builder.store(builder.load(b_acc), builder.gep(accp, [one]), align=1)
            return context.get_dummy_value()
        return types.none(dy, x, gamma, types.int64, acc), codegen
    return row_sums


_row_sums_gamma = _make_row_sums(True)
_row_sums_plain = _make_row_sums(False)


@njit(inline="always", **_FLAGS)
def _fold(acc):
    """vec_reduce_all over the lanes: float32's AVX2 shuffle tree, float64 left to right."""
    w = acc.shape[0]
    if acc.itemsize == 4:
        h = w // 2
        while h >= 1:
            for lane in range(h):
                acc[lane] = acc[lane] + acc[lane + h]
            h //= 2
        return acc[0]
    s = acc[0]
    for lane in range(1, w):
        s = s + acc[lane]
    return s


@njit(inline="always", **_FLAGS)
def _dot_sums(dy, x, gamma, has_gamma, acc):
    """``(ds, db)`` of a row: vec::map{2,3}_reduce_all / reduce_all (``acc``: (2, lanes))."""
    n = x.shape[0]
    w = acc.shape[1]
    dt = x.dtype.type
    if n < w:  # one partial vector, summed left to right
        ds = dt(0)
        db = dt(0)
        for j in range(n):
            if has_gamma:
                vs = dy[j] * x[j] * gamma[j]
                vb = dy[j] * gamma[j]
            else:
                vs = dy[j] * x[j]
                vb = dy[j]
            ds = vs if j == 0 else ds + vs
            db = vb if j == 0 else db + vb
        return ds, db
    nvec = n // w
    if has_gamma:
        _row_sums_gamma(dy, x, gamma, np.int64(nvec), acc)
    else:
        _row_sums_plain(dy, x, gamma, np.int64(nvec), acc)
    d = nvec * w
    for lane in range(n - d):  # the partial last vector: its last product fused into the add
        j = d + lane
        if has_gamma:
            acc[0, lane] = fma(dy[j] * x[j], gamma[j], acc[0, lane])
            acc[1, lane] = fma(dy[j], gamma[j], acc[1, lane])
        else:
            acc[0, lane] = fma(dy[j], x[j], acc[0, lane])
            acc[1, lane] = acc[1, lane] + dy[j]
    return _fold(acc[0]), _fold(acc[1])


@njit(inline="always", **_FLAGS)
def _block(dy, x, mean, rstd, gamma, has_gamma, lo, hi, dx, need_dx, bg, bb, need_dgb):
    """Rows ``lo:hi``: their dx, and their dgamma/dbeta sums into buffer rows ``bg``/``bb``."""
    n = x.shape[1]
    dt = x.dtype.type
    scale = dt(1) / dt(n)
    acc = np.empty((2, _VECTOR_BYTES // x.itemsize), x.dtype)
    for i in range(lo, hi):
        a = rstd[i]
        dyr = dy[i]
        xr = x[i]
        if need_dgb:
            nb = -a * mean[i]
            for j in range(n):
                bg[j] = fma(dyr[j], fma(a, xr[j], nb), bg[j])
                bb[j] = bb[j] + dyr[j]
        if need_dx:
            ds, db = _dot_sums(dyr, xr, gamma, has_gamma, acc)
            m = mean[i]
            b = fma(db, m, -ds) * a * a * a * scale
            c = fma(-b, m, -(db * a * scale))
            dxr = dx[i]
            if has_gamma:
                for j in range(n):
                    dxr[j] = fma(b, xr[j], a * dyr[j] * gamma[j]) + c
            else:
                for j in range(n):
                    dxr[j] = fma(b, xr[j], a * dyr[j]) + c


@njit(parallel=True, **_FLAGS)
def _backward(dy, x, mean, rstd, gamma, has_gamma, dx, need_dx, buf, need_dgb, blocks, chunk):
    for t in prange(blocks):
        lo = t * chunk
        hi = min(lo + chunk, x.shape[0])
        _block(dy, x, mean, rstd, gamma, has_gamma, lo, hi, dx, need_dx, buf[0, t], buf[1, t],
               need_dgb)


@njit(**_FLAGS)
def _backward_serial(dy, x, mean, rstd, gamma, has_gamma, dx, need_dx, buf, need_dgb, blocks,
                     chunk):
    for t in range(blocks):
        lo = t * chunk
        hi = min(lo + chunk, x.shape[0])
        _block(dy, x, mean, rstd, gamma, has_gamma, lo, hi, dx, need_dx, buf[0, t], buf[1, t],
               need_dgb)


@njit(**_FLAGS)
def _sum_buffers(buf, out):
    """ATen's second pass: ``0 + buf[0] + ... + buf[T-1]`` per column (dgamma, dbeta)."""
    dt = buf.dtype.type
    for k in range(2):
        for j in range(buf.shape[2]):
            s = dt(0)
            for t in range(buf.shape[1]):
                s = s + buf[k, t, j]
            out[k, j] = s


def layer_norm_backward(dy, x, mean, rstd, weight, need_dx, need_dweight, need_dbias,
                        threads=1):
    """``(dx, dweight, dbias)`` (None where not asked for) of layer_norm over the rows of a
    C-contiguous ``(M, N)`` float32/float64 ``x`` (M, N > 0); ``dy`` like ``x``; ``mean`` and
    ``rstd``: the forward's M saved statistics; ``weight``: N values or None (dweight is then
    never computed); ``threads``: the thread count PyTorch would run with (it picks how the
    rows' dweight/dbias sums are split)."""
    dt = x.dtype
    m, n = x.shape
    dy = np.ascontiguousarray(dy, dt)
    x = np.ascontiguousarray(x)
    mean = np.ascontiguousarray(mean, dt).reshape(m)
    rstd = np.ascontiguousarray(rstd, dt).reshape(m)
    has_gamma = weight is not None
    gamma = np.ascontiguousarray(weight, dt).reshape(n) if has_gamma else np.ones(n, dt)
    need_dweight = need_dweight and has_gamma
    need_dgb = need_dweight or need_dbias
    threads = max(int(threads), 1)
    dx = np.empty((m, n), dt) if need_dx else np.empty((1, n), dt)
    buf = np.zeros((2, threads, n), dt)
    args = (dy, x, mean, rstd, gamma, has_gamma, dx, need_dx, buf, need_dgb)
    # ATen's parallel_for(0, M, grain 1): min(T, M) blocks of ceil(M / min(T, M)) rows, block t
    # summing into buffer row t (only dweight/dbias see the split)
    chunk = -(-m // min(threads, m))
    blocks = -(-m // chunk)
    if threads > 1 and x.size >= _PARALLEL_MIN_ELEMENTS:
        _backward(*args, blocks, chunk)
    else:
        _backward_serial(*args, blocks, chunk)
    dweight = dbias = None
    if need_dgb:
        out = np.empty((2, n), dt)
        _sum_buffers(buf, out)
        dweight = out[0] if need_dweight else None
        dbias = out[1] if need_dbias else None
    return (dx if need_dx else None), dweight, dbias
