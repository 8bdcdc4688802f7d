"""Batch norm's CPU backward in ATen's arithmetic (float32 / float64 inputs): PyTorch's bits for
the input, weight and bias gradients (batch_norm_kernel.cpp, PyTorch 2.13, checked element by
element against ``torch``'s autograd).

The kernel runs with AVX2 widths (8 float32 / 4 float64 lanes): batch_norm_kernel.cpp
registers with ``REGISTER_DISPATCH``, which leaves the AVX-512 slot empty, so the AVX2 build
runs although the CPU capability reads AVX512.

* ``(N, C, *)`` inputs with a plane of more than one element
  (``batch_norm_cpu_backward_contiguous_impl``), per channel: for each sample's plane, in
  order, ``sum += reduce_all(dy)`` and ``dotp += map2_reduce_all((x - mean) * dy)``, each
  plane reduced in ``T`` in ``vec::reduce_all``'s lane order (a plane shorter than a vector
  left to right; else per lane, then folded: float32 by AVX2's butterfly, float64 left to
  right) and added into a double. In the whole vectors the dot's product is rounded before
  the add; the partial last vector's is contracted (one FMA per lane). Then ``k = T(dotp) *
  invstd * invstd / T(N)`` and ``grad_mean = T(sum / N)``; ``dx = (dy - grad_mean - (x -
  mean) * k) * invstd * w`` with the subtraction of the product one FMA (whole and partial
  vectors alike: map2's lambda); ``grad_weight = T(dotp * invstd)``, ``grad_bias = T(sum)``.
* ``(N, C)`` inputs, and channels-last ones as their ``(N * spatial, C)`` rows (ATen's
  channels-last kernel): rows split over the threads as ``parallel_for`` splits them, per
  thread and channel ``sum += dy`` and ``dotp = fma(x - mean, dy, dotp)`` in ``T``; the
  threads' partials added in order in double and rounded to ``T``; then all in ``T``: ``k =
  dotp * invstd * invstd / N``, ``grad_mean = sum / N``, ``dx`` as above for the channels in
  whole vectors, unfused for the last ``C % lanes`` (that loop's explicit partial vector),
  ``grad_weight = dotp * invstd``, ``grad_bias = sum``.
* evaluation: ``mean`` is the running mean, ``invstd = T(1 / sqrt(double(running_var) +
  eps))`` and ``dx = dy * invstd * w`` (two roundings).

The whole vectors of the plane kernels are LLVM ``<lanes x T>`` code (``_whole_vectors*``),
one vector op per ATen vector op, so the lanes share a register as in ATen (Numba loops over
the lanes stay scalar, and the plain input-gradient loop was not vectorized either: ~3x the
time).
Kernels compile without fast-math flags: every FMA is an explicit ``fma``.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from ...backends.cpu import empty
from ...codegen.kcache import njit_cached as njit
from ...math._intrinsics import fma
from ._layer_norm_aten import _splat, _vector_env

__all__ = ["batch_norm_backward", "batch_norm_backward_general"]

_FLAGS = dict(nogil=True, error_model="numpy", fastmath=False)
_VECTOR_BYTES = 32                 # AVX2 widths (see above)
PARALLEL_MIN_ELEMENTS = 1 << 17    # _norm_kernels' crossover


@njit(inline="always", **_FLAGS)
def _fold(acc):
    """``vec_reduce_all`` of one full vector: float32 by AVX2's butterfly (lane ``l`` with
    ``l + 4``, then ``+ 2``, then ``+ 1``), float64 left to right (no SIMD specialization)."""
    if acc.shape[0] == 8:
        return (((acc[0] + acc[4]) + (acc[2] + acc[6]))
                + ((acc[1] + acc[5]) + (acc[3] + acc[7])))
    s = acc[0]
    for i in range(1, acc.shape[0]):
        s += acc[i]
    return s


@intrinsic
def _whole_vectors(typingctx, x, dy, base, count, mean, acc):
    """The lane accumulators of ``reduce_all(dy)`` and ``map2_reduce_all((x - mean) * dy)``
    over ``count >= 1`` whole vectors from ``base`` into rows 0 and 1 of ``acc`` (``(2,
    lanes)``): LLVM ``<lanes x T>`` code, one vector op per ATen vector op (the product
    rounded, then added: in the whole vectors GCC does not contract the two lambdas), so the
    lanes run as one register (a Numba loop over the lanes stays scalar)."""
    if not (isinstance(x, types.Array) and x.dtype in (types.float32, types.float64)
            and dy == x and mean == x.dtype and isinstance(acc, types.Array)
            and acc.dtype == x.dtype and acc.ndim == 2 and acc.layout == "C"):
        return None

    def codegen(context, builder, sig, args):
        x_arr, dy_arr, base_v, cnt_v, mean_v, acc_arr = args
        vt, row, _ = _vector_env(context, builder, sig.args[5], acc_arr)
        xp = context.make_array(sig.args[0])(context, builder, x_arr).data
        dp = context.make_array(sig.args[1])(context, builder, dy_arr).data
        mu = _splat(builder, vt, mean_v)
        lanes = ir.Constant(ir.IntType(64), vt.count)

        def load(ptr, v):
            off = builder.add(base_v, builder.mul(v, lanes))
            return builder.load(builder.bitcast(builder.gep(ptr, [off]), vt.as_pointer()),
                                align=1)
        zero = ir.Constant(ir.IntType(64), 0)
        d0 = load(dp, zero)
        acc_s = cgutils.alloca_once_value(builder, d0)
        acc_d = cgutils.alloca_once_value(builder, builder.fmul(builder.fsub(load(xp, zero),
                                                                             mu), d0))
        one = ir.Constant(ir.IntType(64), 1)
        with cgutils.for_range(builder, builder.sub(cnt_v, one)) as loop:
            v = builder.add(loop.index, one)
            dv = load(dp, v)
            builder.store(builder.fadd(builder.load(acc_s), dv), acc_s)
            prod = builder.fmul(builder.fsub(load(xp, v), mu), dv)
            builder.store(builder.fadd(builder.load(acc_d), prod), acc_d)
        builder.store(builder.load(acc_s), row(zero), align=1)
        builder.store(builder.load(acc_d), row(one), align=1)
        return context.get_dummy_value()
    return types.none(x, dy, types.int64, types.int64, mean, acc), codegen


@intrinsic
def _whole_vectors_dx(typingctx, x, dy, gx, base, count, coef, train):
    """The input gradient over ``count`` whole vectors from ``base``, as ATen's vector
    lambdas compile: training ``(fma(-(x - mean), k, dy - grad_mean) * invstd) * w``,
    evaluation ``dy * invstd * w``, with ``coef = (mean, k, grad_mean, invstd, w)`` (an array
    in the dtype), in ``<lanes x T>`` code."""
    if not (isinstance(x, types.Array) and x.dtype in (types.float32, types.float64)
            and dy == x and isinstance(gx, types.Array) and gx.dtype == x.dtype
            and isinstance(coef, types.Array) and coef.dtype == x.dtype
            and isinstance(train, types.Boolean)):
        return None

    def codegen(context, builder, sig, args):
        x_arr, dy_arr, gx_arr, base_v, cnt_v, coef_arr, train_v = args
        lanes = 32 * 8 // sig.args[0].dtype.bitwidth
        vt = ir.VectorType(context.get_value_type(sig.args[0].dtype), lanes)
        vfma = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vt, [vt, vt, vt]),
            f"llvm.fma.v{lanes}f{sig.args[0].dtype.bitwidth}")
        xp = context.make_array(sig.args[0])(context, builder, x_arr).data
        dp = context.make_array(sig.args[1])(context, builder, dy_arr).data
        gp = context.make_array(sig.args[2])(context, builder, gx_arr).data
        cp = context.make_array(sig.args[5])(context, builder, coef_arr).data
        mu, k, gm, inv, w = (_splat(builder, vt, builder.load(builder.gep(
            cp, [ir.Constant(ir.IntType(64), i)]))) for i in range(5))
        step = ir.Constant(ir.IntType(64), lanes)

        def at(ptr, v):
            off = builder.add(base_v, builder.mul(v, step))
            return builder.bitcast(builder.gep(ptr, [off]), vt.as_pointer())
        with builder.if_else(train_v) as (training, evaluating):
            with training:
                with cgutils.for_range(builder, cnt_v) as loop:
                    v = loop.index
                    d = builder.fsub(builder.load(at(xp, v), align=1), mu)
                    t = builder.fsub(builder.load(at(dp, v), align=1), gm)
                    r = builder.call(vfma, [builder.fneg(d), k, t])
                    builder.store(builder.fmul(builder.fmul(r, inv), w), at(gp, v), align=1)
            with evaluating:  # dy * invstd * w
                with cgutils.for_range(builder, cnt_v) as loop:
                    v = loop.index
                    r = builder.fmul(builder.load(at(dp, v), align=1), inv)
                    builder.store(builder.fmul(r, w), at(gp, v), align=1)
        return context.get_dummy_value()
    return types.none(x, dy, gx, types.int64, types.int64, coef, types.boolean), codegen


@njit(inline="always", **_FLAGS)
def _plane_sums(x, dy, base, m, mean, acc):
    """``(reduce_all(dy), map2_reduce_all((x - mean) * dy))`` over ``m`` elements from
    ``base`` (flat arrays), in ``T`` and ATen's lane order; ``acc`` a ``(2, lanes)`` scratch."""
    w = acc.shape[1]
    if m < w:  # one partial vector: its lanes added left to right, products rounded
        s = dy[base]
        d = (x[base] - mean) * dy[base]
        for j in range(base + 1, base + m):
            s += dy[j]
            d += (x[j] - mean) * dy[j]
        return s, d
    full = m - m % w
    _whole_vectors(x, dy, np.int64(base), np.int64(full // w), mean, acc)
    acc_s = acc[0]
    acc_d = acc[1]
    for j in range(base + full, base + m):  # the partial last vector, into the first lanes
        lane = j - base - full
        acc_s[lane] += dy[j]
        acc_d[lane] = fma(x[j] - mean, dy[j], acc_d[lane])
    return _fold(acc_s), _fold(acc_d)


@njit(inline="always", **_FLAGS)
def _channel(x, dy, c, n_batch, channels, m, mean, invstd, w, train, need_gx, gx, sums):
    dt = x.dtype.type
    acc = np.empty((2, _VECTOR_BYTES // x.itemsize), x.dtype)
    mu = mean[c]
    s = 0.0
    d = 0.0
    for n in range(n_batch):
        ps, pd = _plane_sums(x, dy, (n * channels + c) * m, m, mu, acc)
        s += ps
        d += pd
    sums[0, c] = s
    sums[1, c] = d
    if not need_gx:
        return
    inv = invstd[c]
    wc = w[c]
    total = n_batch * m
    k = dt(d) * inv * inv / dt(total)
    gm = dt(s / total)
    coef = np.empty(5, x.dtype)
    coef[0] = mu
    coef[1] = k
    coef[2] = gm
    coef[3] = inv
    coef[4] = wc
    lanes = acc.shape[1]
    full = m - m % lanes
    for n in range(n_batch):
        base = (n * channels + c) * m
        _whole_vectors_dx(x, dy, gx, np.int64(base), np.int64(full // lanes), coef, train)
        for j in range(base + full, base + m):  # map2's partial vector: the same lambda
            if train:
                r = fma(-(x[j] - mu), k, dy[j] - gm) * inv
            else:
                r = dy[j] * inv
            gx[j] = r * wc


@njit(**_FLAGS)
def _planes_serial(x, dy, n_batch, channels, m, mean, invstd, w, train, need_gx, gx, sums):
    for c in range(channels):
        _channel(x, dy, c, n_batch, channels, m, mean, invstd, w, train, need_gx, gx, sums)


@njit(parallel=True, **_FLAGS)
def _planes_parallel(x, dy, n_batch, channels, m, mean, invstd, w, train, need_gx, gx, sums):
    for c in prange(channels):  # ATen's parallel_for over channels: each channel's sums stay
        _channel(x, dy, c, n_batch, channels, m, mean, invstd, w, train, need_gx, gx, sums)


@njit(inline="always", **_FLAGS)
def _rows_chunk_sums(x, dy, t, chunk, mean, buf):
    """Thread ``t``'s rows: per-channel ``sum += dy``, ``dotp = fma(x - mean, dy, dotp)`` in T."""
    for i in range(t * chunk, min(x.shape[0], (t + 1) * chunk)):
        for k in range(x.shape[1]):
            buf[0, t, k] += dy[i, k]
            buf[1, t, k] = fma(x[i, k] - mean[k], dy[i, k], buf[1, t, k])


@njit(inline="always", **_FLAGS)
def _rows_input_grad(x, dy, i, coef, full, train, gx):
    """Row ``i`` of the input gradient; ``coef`` rows: mean, k, grad_mean, invstd, w."""
    for k in range(x.shape[1]):
        if train:
            if k < full:  # the whole vectors: the product's subtraction one FMA
                r = fma(-(x[i, k] - coef[0, k]), coef[1, k], dy[i, k] - coef[2, k]) * coef[3, k]
            else:  # the partial last vector: GCC leaves it uncontracted
                r = (dy[i, k] - coef[2, k] - (x[i, k] - coef[0, k]) * coef[1, k]) * coef[3, k]
        else:
            r = dy[i, k] * coef[3, k]
        gx[i, k] = r * coef[4, k]


@njit(**_FLAGS)
def _rows_serial(x, dy, tasks, mean, buf, coef, full, train, gx, grads):
    if grads:
        for i in range(x.shape[0]):
            _rows_input_grad(x, dy, i, coef, full, train, gx)
    else:
        chunk = (x.shape[0] + tasks - 1) // tasks
        for t in range(tasks):
            _rows_chunk_sums(x, dy, t, chunk, mean, buf)


@njit(parallel=True, **_FLAGS)
def _rows_parallel(x, dy, tasks, mean, buf, coef, full, train, gx, grads):
    if grads:
        for i in prange(x.shape[0]):  # elementwise: any split gives the same bits
            _rows_input_grad(x, dy, i, coef, full, train, gx)
    else:
        chunk = (x.shape[0] + tasks - 1) // tasks
        for t in prange(tasks):  # parallel_for(0, N, 1): one chunk of rows per thread
            _rows_chunk_sums(x, dy, t, chunk, mean, buf)


@njit(**_FLAGS)
def _rows_backward(x, dy, tasks, mean, invstd, w, train, need_gx, gx, sums, parallel):
    """The channels-last kernel over an ``(N, C)`` pair (``sums`` rows: sum, dotp in T);
    ``parallel``: the row chunks on Numba's threads (the bits depend on ``tasks`` only)."""
    n, c = x.shape
    dt = x.dtype.type
    buf = np.zeros((2, tasks, c), x.dtype)
    coef = np.empty((5, c), x.dtype)
    full = c - c % (_VECTOR_BYTES // x.itemsize)
    if parallel:
        _rows_parallel(x, dy, tasks, mean, buf, coef, full, train, gx, False)
    else:
        _rows_serial(x, dy, tasks, mean, buf, coef, full, train, gx, False)
    for k in range(c):
        s = 0.0
        d = 0.0
        for t in range(tasks):
            s += buf[0, t, k]
            d += buf[1, t, k]
        sums[0, k] = s
        sums[1, k] = d
    if not need_gx:
        return
    nt = dt(n)
    for k in range(c):
        coef[0, k] = mean[k]
        coef[1, k] = sums[1, k] * invstd[k] * invstd[k] / nt
        coef[2, k] = sums[0, k] / nt
        coef[3, k] = invstd[k]
        coef[4, k] = w[k]
    if parallel:
        _rows_parallel(x, dy, tasks, mean, buf, coef, full, train, gx, True)
    else:
        _rows_serial(x, dy, tasks, mean, buf, coef, full, train, gx, True)


@njit(inline="always", **_FLAGS)
def _general_channel(xv, gv, c, mean, invstd, w, sums, train, need_gx, gxv, dotp):
    """Channel ``c`` of ATen's TensorIterator route; ``xv``/``gv``/``gxv`` are 5-D views
    ``(C, a, b, c, d)`` whose C-order walk is the iterator's order (no copies: strided and
    expanded operands are read where they lie): ``dotp += (x - mean) * dy`` (product in
    ``T``, sum in double), then ``gi = (x - mean) * k`` and ``dx = (dy - grad_mean - gi) *
    invstd * w``, unfused, in ``T``."""
    dt = xv.dtype.type
    _, n0, n1, n2, n3 = xv.shape
    mu = mean[c]
    inv = invstd[c]
    wc = w[c]
    d = 0.0
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                for i3 in range(n3):
                    d += (xv[c, i0, i1, i2, i3] - mu) * gv[c, i0, i1, i2, i3]
    dotp[c] = d
    if not need_gx:
        return
    n = dt(n0 * n1 * n2 * n3)
    k = dt(d) * inv * inv / n
    gm = sums[c] / n
    for i0 in range(n0):
        for i1 in range(n1):
            for i2 in range(n2):
                for i3 in range(n3):
                    if train:
                        gi = (xv[c, i0, i1, i2, i3] - mu) * k
                        r = (gv[c, i0, i1, i2, i3] - gm - gi) * inv * wc
                    else:
                        r = gv[c, i0, i1, i2, i3] * inv * wc
                    gxv[c, i0, i1, i2, i3] = r


@njit(**_FLAGS)
def _general_serial(xv, gv, mean, invstd, w, sums, train, need_gx, gxv, dotp):
    for c in range(xv.shape[0]):
        _general_channel(xv, gv, c, mean, invstd, w, sums, train, need_gx, gxv, dotp)


@njit(parallel=True, **_FLAGS)
def _general_parallel(xv, gv, mean, invstd, w, sums, train, need_gx, gxv, dotp):
    for c in prange(xv.shape[0]):  # parallel_for(0, C, 1): each channel serial
        _general_channel(xv, gv, c, mean, invstd, w, sums, train, need_gx, gxv, dotp)


def batch_norm_backward_general(xv, gv, gxv, dy_sum, mean, invstd, w, train, eps):
    """Normalization.cpp's route when the input and output gradient are not both contiguous
    in one memory format (an expanded gradient, as ``y.sum().backward()`` gives, mixed
    layouts, strided views): ``xv``/``gv`` are 5-D ``(C, a, b, c, d)`` views of the input
    and gradient whose C-order walk is TensorIterator's order for each channel, ``gxv`` the
    input gradient's view alike (written; None: not needed), ``dy_sum`` is ``at::sum`` of
    the gradient over all but the channel dim (in ``T``). Returns ``(grad_weight,
    grad_bias)``; ``mean``/``invstd`` as for ``batch_norm_backward``."""
    dt = xv.dtype
    channels = xv.shape[0]
    mean_t = np.ascontiguousarray(mean, dt)
    if train:
        inv_t = np.ascontiguousarray(invstd, dt)
    else:  # 1 / std::sqrt(running_var + eps): the sum and root in double, stored in T
        with np.errstate(divide="ignore", invalid="ignore"):
            inv_t = (1.0 / np.sqrt(np.asarray(invstd, dt).astype(np.float64) + eps)).astype(dt)
    w_t = np.ones(channels, dt) if w is None else np.ascontiguousarray(w, dt)
    sums = np.ascontiguousarray(dy_sum, dt)
    need_gx = gxv is not None
    if not need_gx:
        gxv = np.empty((1, 1, 1, 1, 1), dt)
    dotp = np.empty(channels, np.float64)
    kernel = _general_parallel if xv.size >= PARALLEL_MIN_ELEMENTS else _general_serial
    kernel(xv, gv, mean_t, inv_t, w_t, sums, train, need_gx, gxv, dotp)
    gw = (dotp * inv_t.astype(np.float64)).astype(dt)
    return gw, sums.copy()


def batch_norm_backward(x, dy, mean, invstd, w, train, eps, need_gx):
    """``(grad_input or None, grad_weight, grad_bias)`` as arrays in ``x``'s dtype for a
    contiguous non-empty float32/float64 ``x`` of shape ``(N, C, *)`` and ``dy`` alike.

    ``mean``/``invstd``: the saved batch statistics in training; in evaluation ``mean`` is the
    running mean and ``invstd`` the running variance (transformed here as ATen does). ``w``:
    the weight array or None."""
    dt = x.dtype
    n_batch, channels = x.shape[0], x.shape[1]
    m = x.size // (n_batch * channels)
    mean_t = np.ascontiguousarray(mean, dt)
    if train:
        inv_t = np.ascontiguousarray(invstd, dt)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            inv_t = (1.0 / np.sqrt(np.asarray(invstd, dt).astype(np.float64) + eps)).astype(dt)
    w_t = np.ones(channels, dt) if w is None else np.ascontiguousarray(w, dt)
    dy = np.ascontiguousarray(dy, dt)
    gx = empty(x.shape, dt) if need_gx else np.empty((1, 1), dt)
    if m == 1:
        from ..._settings import get_num_threads
        sums = np.empty((2, channels), dt)
        tasks = max(1, min(get_num_threads(), n_batch))
        _rows_backward(x.reshape(n_batch, channels), dy.reshape(n_batch, channels), tasks,
                       mean_t, inv_t, w_t, train, need_gx,
                       gx.reshape(n_batch, channels) if need_gx else gx, sums,
                       x.size >= PARALLEL_MIN_ELEMENTS)
        return (gx if need_gx else None), sums[1] * inv_t, sums[0].copy()
    sums = np.empty((2, channels), np.float64)
    kernel = _planes_parallel if x.size >= PARALLEL_MIN_ELEMENTS else _planes_serial
    kernel(x.reshape(-1), dy.reshape(-1), n_batch, channels, m, mean_t, inv_t, w_t, train,
           need_gx, gx.reshape(-1) if need_gx else gx.reshape(-1), sums)
    gw = (sums[1] * inv_t.astype(np.float64)).astype(dt)
    return (gx if need_gx else None), gw, sums[0].astype(dt)
