"""ATen's CPU flash-attention forward (``cpu_flash_attention`` in
aten/src/ATen/native/cpu/FlashAttentionKernel.cpp), step for step, for PyTorch's bits.

PyTorch's CPU ``scaled_dot_product_attention`` runs this blocked kernel for 4-D float inputs
without dropout (``attention.py`` decides when). Per (batch, head, block of ``q_split`` query
rows) it walks the keys in blocks of ``kv_split`` (512):

* ``qk = q @ k^T`` by MKL's ``cblas_?gemm`` with ATen's column-major arguments, into ATen's
  64-byte aligned per-thread buffer laid out as ATen lays it out (MKL's small-GEMM kernels can
  round differently for differently aligned operands: measured);
* the causal ``-inf`` fill; ``qk * scale``, or with a mask ``qk * scale + mask`` (one FMA: GCC
  contracts it);
* the row max, then ``exp(qk - max)`` and its sum: the vector part ``Vectorized::exp_u20``
  (ATen's own degree-5 polynomial for float32, the same in its AVX-512 and AVX2 builds;
  SLEEF's u10 exp for float64), the lanes reduced as ``vec_reduce_all`` reduces them (a
  shuffle tree for 16 floats on AVX-512, 8 on AVX2; lane order for 8 or 4 doubles), then the
  < one-vector tail with C's ``exp(double)``, float32 too. The vector is the host build's
  (``backends.cpu_capability``: 64 bytes on AVX-512, 32 on AVX2), as PyTorch picks it;
* the running rescale ``sum = tmp_sum + exp_tmp * sum`` (contracted), ``dst *= exp_tmp``, and
  ``dst += p @ v`` by GEMM (beta 0 on the first key block);
* at the end ``out = dst * (1 / sum)`` and ``lse = max + log(sum)``.

``backward`` is ``cpu_flash_attention_backward`` the same way: per block ``attn = exp(scale * q
@ k^T (+ mask) - lse)`` (the scale as the GEMM's alpha; SLEEF's u10 exp on every element), the
causal zeros, ``grad_v += attn^T @ grad_out``, ``grad_attn = attn * (grad_out @ v^T - dsum)``
(``dsum`` the row dot of grad_out and out, in vector lanes), ``grad_q += scale * grad_attn @
k``, ``grad_k += scale * grad_attn^T @ q``, all into zero-filled aligned (B, L, H, E) buffers.

The block sizes: ``q_split`` 256 / 64 / 32 for query lengths >= 768 / >= 192 / shorter,
``kv_split`` 512 (``flash_attention_kernel_impl``). Blocks are independent, so ATen's thread
split does not change the bits; MKL runs single-threaded here, as inside ATen's parallel region.
"""
from __future__ import annotations

import ctypes
import math

import numpy as np
from numba import njit

from ...backends.cpu_capability import CAPABILITY, vector_bytes
from ...math._intrinsics import fma, pow2_m, select
from ...math._sleef import SLEEF_JIT, exp_u10_f32, exp_u10_f64

_NO_TRANS, _TRANS = 111, 112
# one ATen vector in the build PyTorch runs here: 64 bytes (AVX-512: 16 float / 8 double lanes)
# or 32 (AVX2: 8 / 4); it sets where the vector part of a row ends and how its lanes are reduced
_VECTOR_BYTES = vector_bytes(CAPABILITY)

# ---- Vectorized<float>::exp_u20 (vec512_float.h): ATen's "ULP=20" exp ----------------------
_F = np.float32
_C1, _C2, _C3, _C4, _C5 = map(_F, (0.999999701, 0.499991506, 0.166676521, 0.0418978221,
                                   0.00828929059))
_LOG2EF = np.array([0x3fb8aa3b], np.uint32).view(np.float32)[0]
_LN2F = np.array([0x3f317218], np.uint32).view(np.float32)[0]
_LN_FLT_MIN = np.array([0xc2aeac50], np.uint32).view(np.float32)[0]
_LN_FLT_MAX = np.array([0x42b17218], np.uint32).view(np.float32)[0]
_HALF, _ONE, _TWO, _ZERO = _F(0.5), _F(1), _F(2), _F(0)
_MAGIC = _F(1.5 * 2.0 ** 23)  # pow2_m's operand: n + MAGIC holds n in its low mantissa bits


@njit(**SLEEF_JIT)
def exp_u20_f32(x):
    """One lane of ``Vectorized<float>::exp_u20`` (AVX-512 and AVX2 alike): clamp to [ln
    FLT_MIN, ln FLT_MAX], n = floor(fma(x, log2 e, 0.5)), r = x - n ln2 by FMA, a Horner
    polynomial by FMA, then times 2^(n-1) (built from the bits: +0.0 for n = -126) and times 2;
    0 below ln FLT_MIN. Branch-free, so the lane loops vectorize."""
    src = select(x < _LN_FLT_MAX, x, _LN_FLT_MAX)  # _mm512_min_ps(x, max)
    src = select(src > _LN_FLT_MIN, src, _LN_FLT_MIN)
    fx = np.floor(fma(src, _LOG2EF, _HALF))
    r = fma(-fx, _LN2F, src)         # fnmadd: -(fx * ln2) + src, one rounding
    res = fma(r, _C5, _C4)
    res = fma(r, res, _C3)
    res = fma(r, res, _C2)
    res = fma(r, res, _C1)
    res = fma(r, res, _ONE)
    two_n = select(x < _LN_FLT_MIN, _ZERO, pow2_m(fx + _MAGIC, -1))
    return (res * two_n) * _TWO


@njit(**SLEEF_JIT)
def _exp_via_f64(x):
    """The float32 scalar tail's ``exp(tmp1)``: unqualified, it is C's ``exp(double)`` (glibc),
    its result rounded to float (measured: glibc's ``expf`` differs in ~1 of 2000 rows)."""
    return np.float32(math.exp(np.float64(x)))


@njit(**SLEEF_JIT)
def _exp_glibc(x):
    """The float64 scalar tail's ``exp``: glibc's."""
    return math.exp(x)


@njit(**SLEEF_JIT)
def _reduce_lanes_f32(acc):
    """``vec_reduce_all`` of the float lanes of one vector with ``+``: lane i with i ^ h for
    h = lanes/2, ..., 2 (AVX-512: 16 lanes, shuffles by 8, 4, 2; AVX2: 8 lanes,
    ``_mm256_permute2f128_ps`` by 4 then ``_mm256_shuffle_ps`` 0x4E by 2), then 0xB1's lane 0
    with lane 1."""
    n = acc.size
    t = acc.copy()
    u = np.empty(n, np.float32)
    h = n // 2
    while h >= 2:
        for i in range(n):
            u[i] = t[i] + t[i ^ h]
        t, u = u, t
        h //= 2
    return t[0] + t[1]


@njit(**SLEEF_JIT)
def _reduce_lanes_f64(acc):
    """``vec_reduce_all``'s slow path (no SIMD version for double in either build): lane 0 plus
    each further lane in order (8 lanes on AVX-512, 4 on AVX2)."""
    s = acc[0]
    for i in range(1, acc.shape[0]):
        s = s + acc[i]
    return s


@njit(**SLEEF_JIT)
def _row_max(qk, base, size, scale, lanes, acc, ninf):
    """``qk[base:base+size] *= scale`` (skipped for scale 1: the mask kernel scaled already) and
    the maximum, NaN-propagating like ``vec::maximum``, in lanes (vectorizable)."""
    nvec = size - size % lanes
    for j in range(lanes):
        acc[j] = ninf
    for i in range(0, nvec, lanes):
        for j in range(lanes):
            x = qk[base + i + j] * scale
            qk[base + i + j] = x
            acc[j] = select(x > acc[j] or x != x, x, acc[j])
    m = ninf
    for j in range(lanes):
        m = select(acc[j] > m or acc[j] != acc[j], acc[j], m)
    for i in range(nvec, size):
        x = qk[base + i] * scale
        qk[base + i] = x
        m = select(x > m or x != x, x, m)
    return m


@njit(**SLEEF_JIT)
def _exp_reduce_sum(qk, base, size, mx, lanes, acc, vexp, reduce_lanes, sexp):
    """``_exp_reduce_sum_fusion_kernel``: qk[base:base+size] = exp(qk - mx) in place; returns
    the sum as ATen adds it (per-lane sums, the lane reduction, then the scalar tail)."""
    nvec = size - size % lanes
    row = qk[base:base + nvec]
    for c in range(nvec):  # the exps first: a plain elementwise loop, which vectorizes
        row[c] = vexp(row[c] - mx)
    for j in range(lanes):  # then each lane's sum, in ATen's order
        acc[j] = 0
    for i in range(0, nvec, lanes):
        for j in range(lanes):
            acc[j] = acc[j] + row[i + j]
    s = reduce_lanes(acc)
    for i in range(nvec, size):
        e = sexp(qk[base + i] - mx)
        s = s + e
        qk[base + i] = e
    return s


@njit(nogil=True, **SLEEF_JIT)
def _gemm_call(addr, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """cpublas::gemm: ``normalize_last_dims`` then the column-major ?gemm call."""
    if n == 1:
        ldc = m
    if ta == _TRANS:
        if m == 1:
            lda = k
    elif k == 1:
        lda = m
    if tb == _TRANS:
        if k == 1:
            ldb = n
    elif n == 1:
        ldb = k
    _call_gemm(addr, np.int32(ta), np.int32(tb), np.int32(m), np.int32(n), np.int32(k), alpha,
               a, np.int32(lda), b, np.int32(ldb), beta, c, np.int32(ldc))


from ...backends.cblas_calls import _call_gemm  # noqa: E402  (after the njit helpers)


@njit(nogil=True, **SLEEF_JIT)
def _item_strides(a):
    """The first three strides of ``a`` in elements (the kernels address by ``ctypes.data``)."""
    item = a.itemsize
    return a.strides[0] // item, a.strides[1] // item, a.strides[2] // item


@njit(nogil=True, **SLEEF_JIT)
def _aligned_block(size, like):
    """ATen's per-thread scratch buffer: ``size`` uninitialized elements of ``like``'s dtype on a
    64-byte boundary (MKL's small-GEMM kernels can round differently for differently aligned
    operands)."""
    item = like.itemsize
    raw = np.empty(size + 64 // item, like.dtype)
    lead = ((64 - raw.ctypes.data % 64) % 64) // item
    return raw[lead:lead + size]


@njit(nogil=True, **SLEEF_JIT)
def flash_forward(addr, q, k, v, mask, has_mask, out, lse, consts, causal, q_split, kv_split,
                  vexp, reduce_lanes, sexp):
    """``cpu_flash_attention`` over ``q`` (B, H, L, E), ``k``/``v`` (B, H, S, E) (any strides,
    element strides in whole items), ``mask`` (B|1, H|1, L|1, S|1, strides 0 where broadcast,
    the query's dtype) into ``out`` (B, L, H, E) and ``lse`` (B, L, H); ``consts`` holds
    (scale, 0, 1, -inf) in that dtype (Numba would widen Python constants to float64)."""
    item = q.itemsize
    nb, nh, q_size, hd = q.shape
    kv_size = k.shape[2]
    lanes = _VECTOR_BYTES // item
    qs_b, qs_h, qs_m = _item_strides(q)
    ks_b, ks_h, ks_n = _item_strides(k)
    vs_b, vs_h, vs_n = _item_strides(v)
    q_split = min(q_split, q_size)
    kv_split = min(kv_split, kv_size)
    q_slices = (q_size + q_split - 1) // q_split
    scale, zero, one, ninf = consts[0], consts[1], consts[2], consts[3]
    # ATen's per-thread buffer: qk, qk_max, qk_sum, dst in one 64-byte aligned block
    size = q_split * kv_split + 2 * q_split + q_split * hd
    buf = _aligned_block(size, q)
    qk = buf[:q_split * kv_split]
    qk_max = buf[q_split * kv_split:q_split * kv_split + q_split]
    qk_sum = buf[q_split * kv_split + q_split:q_split * kv_split + 2 * q_split]
    dst = buf[q_split * kv_split + 2 * q_split:]
    acc = np.empty(lanes, q.dtype)
    qb = q.ctypes.data
    kb = k.ctypes.data
    vb = v.ctypes.data
    for i in range(nb):
        mi = i if mask.shape[0] > 1 else 0
        for j in range(nh):
            mj = j if mask.shape[1] > 1 else 0
            for kk in range(q_slices):
                m = kk * q_split
                q_block = min(q_split, q_size - m)
                for r in range(q_block):
                    qk_max[r] = ninf
                    qk_sum[r] = zero
                num_keys = min(m + q_block, kv_size) if causal else kv_size
                for n in range(0, num_keys, kv_split):
                    kv_block = min(kv_split, kv_size - n)
                    _gemm_call(addr, _TRANS, _NO_TRANS, kv_block, q_block, hd, one,
                               kb + (i * ks_b + j * ks_h + n * ks_n) * item, ks_n,
                               qb + (i * qs_b + j * qs_h + m * qs_m) * item, qs_m, zero,
                               qk.ctypes.data, kv_block)
                    if causal and num_keys - n <= kv_split:
                        for r in range(q_block):
                            last = m + r - n
                            for c in range(max(last + 1, 0), kv_block):
                                qk[r * kv_block + c] = ninf
                    if has_mask:
                        for r in range(q_block):
                            for c in range(kv_block):
                                qk[r * kv_block + c] = fma(qk[r * kv_block + c], scale,
                                                           mask[mi, mj, m + r, n + c])
                    for r in range(q_block):
                        base = r * kv_block
                        # the row max (after qk *= scale without a mask): exact in any order
                        tmax = _row_max(qk, base, kv_block, one if has_mask else scale, lanes,
                                        acc, ninf)
                        tmax = qk_max[r] if qk_max[r] > tmax else tmax
                        if tmax == ninf:
                            for c in range(kv_block):
                                qk[base + c] = zero
                        else:
                            tsum = _exp_reduce_sum(qk, base, kv_block, tmax, lanes, acc, vexp,
                                                   reduce_lanes, sexp)
                            exp_tmp = math.exp(qk_max[r] - tmax)
                            qk_sum[r] = fma(exp_tmp, qk_sum[r], tsum)
                            qk_max[r] = tmax
                            if n > 0:
                                for d in range(hd):
                                    dst[r * hd + d] = dst[r * hd + d] * exp_tmp
                    _gemm_call(addr, _NO_TRANS, _NO_TRANS, hd, q_block, kv_block, one,
                               vb + (i * vs_b + j * vs_h + n * vs_n) * item, vs_n,
                               qk.ctypes.data, kv_block, zero if n == 0 else one,
                               dst.ctypes.data, hd)
                for r in range(q_block):
                    if qk_max[r] == ninf:
                        qk_max[r] = zero
                    if qk_sum[r] == zero:
                        qk_sum[r] = one
                    rec = one / qk_sum[r]
                    for d in range(hd):
                        out[i, m + r, j, d] = dst[r * hd + d] * rec
                    lse[i, m + r, j] = qk_max[r] + math.log(qk_sum[r])


_addr = {}
# the vector exp, the lane reduction and the scalar tail's exp of each dtype (by item size)
# (exp_u20 is the same polynomial in vec256_float.h and vec512_float.h; only the lane count and
# so the float32 reduction tree differ between the builds)
_REDUCE_F32 = _reduce_lanes_f32
_VECTOR_MATH = {4: (exp_u20_f32, _REDUCE_F32, _exp_via_f64),
                8: (exp_u10_f64, _reduce_lanes_f64, _exp_glibc)}


def gemm_address(dtype):
    """The address of MKL's ``cblas_?gemm`` for ``dtype`` (None without MKL)."""
    dt = np.dtype(dtype)
    if dt not in _addr:
        from ...backends import blas
        if blas._gemm is None:
            blas._load()
        fn = blas._gemm.get(dt)
        _addr[dt] = None if fn is None else ctypes.cast(fn, ctypes.c_void_p).value
    return _addr[dt]


def split_sizes(q_len):
    """``flash_attention_kernel_impl``'s (q_split, kv_split) for a query length."""
    return (256 if q_len >= 768 else 64 if q_len >= 192 else 32), 512


def _mask_4d(mask, dtype, q_len, kv_len):
    """ATen's ``reshape_attn_mask_to_4d`` (a placeholder without a mask), in ``dtype``."""
    if mask is None:
        return np.zeros((1, 1, 1, 1), dtype)
    m4 = np.asarray(mask, dtype)
    if m4.ndim == 2:
        m4 = m4.reshape(1, 1, *m4.shape)
    return np.broadcast_to(m4, (m4.shape[0], m4.shape[1], q_len, kv_len))


def forward(q, k, v, mask, is_causal, scale):
    """``(out (B, H, L, E), lse (B, H, L))``
    for NumPy arrays ``q``/``k``/``v`` of one float dtype; ``mask`` None or an array
    broadcastable as ATen's ``reshape_attn_mask_to_4d`` allows, in the query's dtype. None
    without MKL."""
    addr = gemm_address(q.dtype)
    if addr is None:
        return None
    nb, nh, q_len, hd = q.shape
    kv_len = k.shape[2]
    m4 = _mask_4d(mask, q.dtype, q_len, kv_len)
    out = np.empty((nb, nh, q_len, hd), q.dtype)  # PyTorch's result is (B, H, L, E)
    lse = np.empty((nb, nh, q_len), q.dtype)
    qs, ks = split_sizes(q_len)
    from ...backends import blas
    prev = blas.set_local_threads(1)
    try:
        consts = np.array([scale, 0.0, 1.0, -np.inf], q.dtype)
        flash_forward(addr, q, k, v, m4, mask is not None, out.transpose(0, 2, 1, 3),
                      lse.transpose(0, 2, 1), consts,
                      bool(is_causal), qs, ks, *_VECTOR_MATH[q.dtype.itemsize])
    finally:
        blas.set_local_threads(prev)
    return out, lse


# ---- backward: cpu_flash_attention_backward ---------------------------------------------------


@njit(**SLEEF_JIT)
def _dot_reduce(a, b, lanes, acc, reduce_lanes):
    """``vec::map2_reduce_all(x * y, +)`` over two rows: per-lane sums from the first vector
    (``acc + x * y``, two roundings: measured, not contracted), the partial last vector added
    into its lanes (``Vec::set``), then ``vec_reduce_all``; under one vector, the lanes added in
    order."""
    size = a.size
    if size < lanes:
        s = a[0] * b[0]
        for i in range(1, size):
            s = s + a[i] * b[i]
        return s
    for j in range(lanes):
        acc[j] = a[j] * b[j]
    d = lanes
    nvec = size - size % lanes
    while d < nvec:
        for j in range(lanes):
            acc[j] = acc[j] + a[d + j] * b[d + j]
        d += lanes
    for j in range(size - d):
        acc[j] = acc[j] + a[d + j] * b[d + j]
    return reduce_lanes(acc)


@njit(nogil=True, **SLEEF_JIT)
def flash_backward(addr, q, k, v, mask, has_mask, out, lse, gout, gq, gk, gv, consts, causal,
                   q_split, kv_split, vexp, reduce_lanes):
    """``cpu_flash_attention_backward``: ``q``, ``out``, ``gout``, ``gq`` are (B, L, H, E) views
    (ATen's transposed layout), ``k``, ``v``, ``gk``, ``gv`` (B, S, H, E), ``lse`` (B, L, H);
    ``gq``/``gk``/``gv`` zero-filled, accumulated into by GEMM (beta 1) as ATen does."""
    item = q.itemsize
    nb, q_size, nh, hd = q.shape
    kv_size = k.shape[1]
    lanes = _VECTOR_BYTES // item
    qs_b, qs_m, qs_h = _item_strides(q)
    ks_b, ks_n, ks_h = _item_strides(k)
    vs_b, vs_n, vs_h = _item_strides(v)
    gos_b, gos_m, gos_h = _item_strides(gout)
    gqs_b, gqs_m, gqs_h = _item_strides(gq)
    gks_b, gks_n, gks_h = _item_strides(gk)
    gvs_b, gvs_n, gvs_h = _item_strides(gv)
    q_split = min(q_split, q_size)
    kv_split = min(kv_split, kv_size)
    scale, zero, one = consts[0], consts[1], consts[2]
    size = 2 * q_split * kv_split  # ATen's per-thread buffer: attn, then grad_attn
    buf = _aligned_block(size, q)
    attn = buf[:q_split * kv_split]
    gattn = buf[q_split * kv_split:]
    dsum = np.empty(q_split, q.dtype)
    acc = np.empty(lanes, q.dtype)
    qb, kb, vb = q.ctypes.data, k.ctypes.data, v.ctypes.data
    gob, gqb, gkb, gvb = gout.ctypes.data, gq.ctypes.data, gk.ctypes.data, gv.ctypes.data
    for i in range(nb):
        mi = i if mask.shape[0] > 1 else 0
        for j in range(nh):
            mj = j if mask.shape[1] > 1 else 0
            for m in range(0, q_size, q_split):
                q_block = min(q_split, q_size - m)
                for r in range(q_block):
                    dsum[r] = _dot_reduce(gout[i, m + r, j], out[i, m + r, j], lanes, acc,
                                          reduce_lanes)
                num_keys = min(m + q_block, kv_size) if causal else kv_size
                for n in range(0, num_keys, kv_split):
                    kv_block = min(kv_split, kv_size - n)
                    _gemm_call(addr, _TRANS, _NO_TRANS, kv_block, q_block, hd, scale,
                               kb + (i * ks_b + j * ks_h + n * ks_n) * item, ks_n,
                               qb + (i * qs_b + j * qs_h + m * qs_m) * item, qs_m, zero,
                               attn.ctypes.data, kv_block)
                    if has_mask:
                        for r in range(q_block):
                            for c in range(kv_block):
                                attn[r * kv_block + c] = fma(attn[r * kv_block + c], one,
                                                             mask[mi, mj, m + r, n + c])
                    for r in range(q_block):
                        norm = lse[i, m + r, j]
                        for c in range(kv_block):
                            attn[r * kv_block + c] = vexp(attn[r * kv_block + c] - norm)
                    if causal and num_keys - n <= kv_split:
                        for r in range(q_block):
                            last = m + r - n
                            for c in range(max(last + 1, 0), kv_block):
                                attn[r * kv_block + c] = zero
                    _gemm_call(addr, _NO_TRANS, _TRANS, hd, kv_block, q_block, one,
                               gob + (i * gos_b + j * gos_h + m * gos_m) * item, gos_m,
                               attn.ctypes.data, kv_block, one,
                               gvb + (i * gvs_b + j * gvs_h + n * gvs_n) * item, gvs_n)
                    _gemm_call(addr, _TRANS, _NO_TRANS, kv_block, q_block, hd, one,
                               vb + (i * vs_b + j * vs_h + n * vs_n) * item, vs_n,
                               gob + (i * gos_b + j * gos_h + m * gos_m) * item, gos_m, zero,
                               gattn.ctypes.data, kv_block)
                    for r in range(q_block):
                        d = dsum[r]
                        for c in range(kv_block):
                            x = r * kv_block + c
                            gattn[x] = attn[x] * (gattn[x] - d)
                    _gemm_call(addr, _NO_TRANS, _NO_TRANS, hd, q_block, kv_block, scale,
                               kb + (i * ks_b + j * ks_h + n * ks_n) * item, ks_n,
                               gattn.ctypes.data, kv_block, one,
                               gqb + (i * gqs_b + j * gqs_h + m * gqs_m) * item, gqs_m)
                    _gemm_call(addr, _NO_TRANS, _TRANS, hd, kv_block, q_block, scale,
                               qb + (i * qs_b + j * qs_h + m * qs_m) * item, qs_m,
                               gattn.ctypes.data, kv_block, one,
                               gkb + (i * gks_b + j * gks_h + n * gks_n) * item, gks_n)


def _aligned_zeros(shape, dtype):
    """A zero-filled C-contiguous array on a 64-byte boundary (as ``at::zeros``)."""
    dt = np.dtype(dtype)
    count = int(np.prod(shape))
    raw = np.zeros(count + 64 // dt.itemsize, dt)
    lead = ((64 - raw.ctypes.data % 64) % 64) // dt.itemsize
    return raw[lead:lead + count].reshape(shape)


def backward(grad_out, q, k, v, out, lse, mask, is_causal, scale):
    """``(grad_q, grad_k, grad_v)`` (B, H, L|S, E) for NumPy arrays as ``forward`` took them,
    ``out``/``lse`` its results and ``grad_out`` (B, H, L, E); None without MKL."""
    addr = gemm_address(q.dtype)
    if addr is None:
        return None
    nb, nh, q_len, hd = q.shape
    kv_len = k.shape[2]
    m4 = _mask_4d(mask, q.dtype, q_len, kv_len)
    # ATen: grad_out.transpose(1, 2).contiguous() (a fresh aligned buffer), zeros for the grads
    go = _aligned_zeros((nb, q_len, nh, hd), q.dtype)
    go[...] = grad_out.transpose(0, 2, 1, 3)
    gq = _aligned_zeros((nb, q_len, nh, hd), q.dtype)
    gk = _aligned_zeros((nb, kv_len, nh, hd), q.dtype)
    gv = _aligned_zeros((nb, kv_len, nh, hd), q.dtype)
    qs, ks = split_sizes(q_len)
    consts = np.array([scale, 0.0, 1.0, -np.inf], q.dtype)
    from ...backends import blas
    prev = blas.set_local_threads(1)
    try:
        flash_backward(addr, q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3),
                       v.transpose(0, 2, 1, 3), m4, mask is not None,
                       out.transpose(0, 2, 1, 3), lse.transpose(0, 2, 1), go, gq, gk, gv,
                       consts, bool(is_causal), qs, ks, _BACKWARD_EXP[q.dtype.itemsize],
                       _VECTOR_MATH[q.dtype.itemsize][1])
    finally:
        blas.set_local_threads(prev)
    return gq.transpose(0, 2, 1, 3), gk.transpose(0, 2, 1, 3), gv.transpose(0, 2, 1, 3)


# the backward's exp: ``Vectorized::exp`` (SLEEF u10) on every element (vec::map's tail is a
# partial vector)
_BACKWARD_EXP = {4: exp_u10_f32, 8: exp_u10_f64}
