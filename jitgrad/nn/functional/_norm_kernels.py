"""CPU kernels of the statistics-based normalizations (batch_norm, group_norm, instance_norm).

Every one of them works on the input seen as rows: a contiguous ``(N*C, M)`` matrix (``M`` the
spatial size), one row per (sample, channel). Statistics of a channel (batch norm) or a group
(group norm) are combined from per-row moments (Chan's formula: inside the kernel for batch
norm, whose statistics kernel also returns InvStd and the affine coefficients, so a small batch
norm costs two kernel calls forward and two backward and few host operations; on the host for
group norm), so the kernels below are the only passes over the full tensor: two for the
forward (moments, affine) and two for the backward (gradient sums, affine of two inputs). Each
row is read in one sweep, so a row stays in cache between its two statistics passes.

Per-row coefficients come as a vector of length P that repeats down the rows (row ``r`` uses
entry ``r % P``): batch norm passes its per-channel vectors (P = C), group norm its
per-(sample, channel) ones (P = N*C), and nothing is tiled on the host.

Each kernel is a row body (inlined at Numba IR level) under a serial and a ``prange`` loop over
rows: below ``PARALLEL_MIN_ELEMENTS`` the serial one runs, since a parallel launch costs as much
as the work there. Separate functions, not one function compiled twice: Numba's on-disk cache
is keyed by the function, not by its ``parallel`` flag.

Sums accumulate in float64 (as ATen's CPU batch norm, whose accumulate type for float is
double); the elementwise passes run in the tensor's dtype with coefficients cast to it.
"""
from __future__ import annotations

import os

import numpy as np
from numba import prange

from ...backends.cpu import empty  # pooled: no page faults per call
from ...codegen.kcache import njit_cached as njit

__all__ = ["moments", "batch_norm_stats", "affine", "grad_sums", "channel_grad_sums",
           "batch_norm_backward", "affine2", "PARALLEL_MIN_ELEMENTS"]

# Crossover measured on the 2-core VM (float32, rows of 16 to 1024, tbb, the other core idle):
# at 2^15 elements serial wins (rows of 64: moments 7.8 vs 8.5 us, affine 3.0 vs 5.6 us), at
# 2^16 it is a draw, from 2^17 the parallel kernels win by 1.4-1.7x.
PARALLEL_MIN_ELEMENTS = int(os.environ.get("JITGRAD_NORM_PARALLEL_MIN", 1 << 17))

_FLAGS = dict(nogil=True, error_model="numpy")  # cached: njit_cached
# Each kernel comes as a serial and a prange twin around one inlined row body, not as one
# function compiled with and without parallel=True: Numba's on-disk cache keys an entry by the
# function and its signature, not by those flags, so the two compilations would share entries.
# The sums may be reassociated (LLVM then vectorizes them with several accumulators, as ATen's
# kernels sum); no nnan/ninf: NaN and inf inputs propagate as in PyTorch.
_SUM_FLAGS = dict(_FLAGS, fastmath={"reassoc", "contract"})


@njit(inline="always", **_FLAGS)
def _moments_row(x, r, mean, m2):
    m = x.shape[1]
    s = 0.0
    for j in range(m):
        s += x[r, j]
    mu = s / m if m > 0 else 0.0
    q = 0.0
    for j in range(m):
        d = x[r, j] - mu
        q += d * d
    mean[r] = mu
    m2[r] = q


@njit(**_SUM_FLAGS)
def row_moments_serial(x, mean, m2):
    """Per row: ``mean[r]`` and the centred sum of squares ``m2[r]`` (two passes over the row,
    float64)."""
    for r in range(x.shape[0]):
        _moments_row(x, r, mean, m2)


@njit(parallel=True, **_SUM_FLAGS)
def row_moments_parallel(x, mean, m2):
    for r in prange(x.shape[0]):
        _moments_row(x, r, mean, m2)


@njit(inline="always", **_FLAGS)
def _combine_channels(m, mr, m2r, mean, m2):
    """Per channel ``k`` (rows ``i * C + k``): the mean of its rows' means and its centred sum
    of squares, ``sum m2r + m * sum (mr - mean)^2`` (Chan's combination of equal-size rows)."""
    c = mean.shape[0]
    n = mr.shape[0] // c
    for k in range(c):
        s = 0.0
        for i in range(n):
            s += mr[i * c + k]
        mu = s / n
        t = 0.0
        q = 0.0
        for i in range(n):
            d = mr[i * c + k] - mu
            t += m2r[i * c + k]
            q += d * d
        mean[k] = mu
        m2[k] = t + m * q


@njit(**_FLAGS)
def batch_norm_coefficients(mean, m2, count, eps, w, b, invstd, ca, cb):
    """Per channel, from the batch statistics: ATen's ``InvStd`` (0 where the variance and
    ``eps`` are both 0, else ``1 / sqrt(var + eps)``) and the forward's ``y = x * ca + cb``
    (``ca = invstd * w``, ``cb = b - mean * ca``), all float64. Compiled without fast-math
    and called (not inlined at Numba IR level) from the statistics kernels, so its operations
    keep their own flags: theirs would let LLVM fuse ``b - mean * ca`` into one rounding. The
    same roundings as these formulas in NumPy."""
    for k in range(mean.shape[0]):
        var = m2[k] / count
        inv = 0.0 if (eps == 0 and var == 0) else 1.0 / np.sqrt(var + eps)
        a = inv * w[k]
        invstd[k] = inv
        ca[k] = a
        cb[k] = b[k] - mean[k] * a


@njit(**_SUM_FLAGS)
def batch_norm_stats_serial(x, eps, w, b, mean, m2, invstd, ca, cb):
    """Batch norm's training forward up to the affine pass: per channel (``C`` = the length of
    ``mean``) the mean, centred sum of squares, InvStd and the coefficients ``ca``, ``cb``."""
    rows = x.shape[0]
    mr = np.empty(rows)
    m2r = np.empty(rows)
    for r in range(rows):
        _moments_row(x, r, mr, m2r)
    _combine_channels(x.shape[1], mr, m2r, mean, m2)
    batch_norm_coefficients(mean, m2, (rows // mean.shape[0]) * x.shape[1], eps, w, b, invstd,
                            ca, cb)


@njit(parallel=True, **_SUM_FLAGS)
def batch_norm_stats_parallel(x, eps, w, b, mean, m2, invstd, ca, cb):
    rows = x.shape[0]
    mr = np.empty(rows)
    m2r = np.empty(rows)
    for r in prange(rows):
        _moments_row(x, r, mr, m2r)
    _combine_channels(x.shape[1], mr, m2r, mean, m2)
    batch_norm_coefficients(mean, m2, (rows // mean.shape[0]) * x.shape[1], eps, w, b, invstd,
                            ca, cb)


@njit(inline="always", **_FLAGS)
def _affine_row(x, r, a, b, out):
    k = r % a.shape[0]
    ar = a[k]
    br = b[k]
    for j in range(x.shape[1]):
        out[r, j] = x[r, j] * ar + br


@njit(**_FLAGS)
def row_affine_serial(x, a, b, out):
    """``out[r, j] = x[r, j] * a[r % P] + b[r % P]`` (``a``, ``b`` of length P, in the
    tensor's dtype)."""
    for r in range(x.shape[0]):
        _affine_row(x, r, a, b, out)


@njit(parallel=True, **_FLAGS)
def row_affine_parallel(x, a, b, out):
    for r in prange(x.shape[0]):
        _affine_row(x, r, a, b, out)


@njit(inline="always", **_FLAGS)
def _grad_sums_row(g, x, r, mean, sg, sgx):
    mu = mean[r % mean.shape[0]]
    s0 = 0.0
    s1 = 0.0
    for j in range(x.shape[1]):
        gj = g[r, j]
        s0 += gj
        s1 += gj * (x[r, j] - mu)
    sg[r] = s0
    sgx[r] = s1


@njit(**_SUM_FLAGS)
def row_grad_sums_serial(g, x, mean, sg, sgx):
    """Per row: ``sg[r] = sum g`` and ``sgx[r] = sum g * (x - mean[r % P])`` (float64)."""
    for r in range(x.shape[0]):
        _grad_sums_row(g, x, r, mean, sg, sgx)


@njit(parallel=True, **_SUM_FLAGS)
def row_grad_sums_parallel(g, x, mean, sg, sgx):
    for r in prange(x.shape[0]):
        _grad_sums_row(g, x, r, mean, sg, sgx)


@njit(inline="always", **_FLAGS)
def _sum_channels(rows_sum, out):
    c = out.shape[0]
    for k in range(c):
        s = 0.0
        for i in range(rows_sum.shape[0] // c):
            s += rows_sum[i * c + k]
        out[k] = s


@njit(**_SUM_FLAGS)
def channel_grad_sums_serial(g, x, mean, sg, sgx):
    """Per channel ``k`` (length of ``mean``): ``sg[k] = sum g`` and ``sgx[k] = sum g *
    (x - mean[k])`` over its rows (float64)."""
    rows = x.shape[0]
    sgr = np.empty(rows)
    sgxr = np.empty(rows)
    for r in range(rows):
        _grad_sums_row(g, x, r, mean, sgr, sgxr)
    _sum_channels(sgr, sg)
    _sum_channels(sgxr, sgx)


@njit(parallel=True, **_SUM_FLAGS)
def channel_grad_sums_parallel(g, x, mean, sg, sgx):
    rows = x.shape[0]
    sgr = np.empty(rows)
    sgxr = np.empty(rows)
    for r in prange(rows):
        _grad_sums_row(g, x, r, mean, sgr, sgxr)
    _sum_channels(sgr, sg)
    _sum_channels(sgxr, sgx)


@njit(inline="always", **_FLAGS)
def _affine2_row(g, x, r, a, b, c, out):
    k = r % a.shape[0]
    ar = a[k]
    br = b[k]
    cr = c[k]
    for j in range(x.shape[1]):
        out[r, j] = g[r, j] * ar + x[r, j] * br + cr


@njit(**_FLAGS)
def row_affine2_serial(g, x, a, b, c, out):
    """``out[r, j] = g[r, j] * a[k] + x[r, j] * b[k] + c[k]``, ``k = r % P`` (the input
    gradient of a normalization, its coefficients folded)."""
    for r in range(x.shape[0]):
        _affine2_row(g, x, r, a, b, c, out)


# The name batch_norm_backward_serial calls: a global a jitted function reads is frozen into
# it when compiled, so it must not be one that may be rebound (tests wrap the public names).
_row_affine2_serial = row_affine2_serial


@njit(parallel=True, **_FLAGS)
def row_affine2_parallel(g, x, a, b, c, out):
    for r in prange(x.shape[0]):
        _affine2_row(g, x, r, a, b, c, out)


@njit(**_FLAGS)
def batch_norm_grad_coefficients(sg, sgx, mean, invstd, w, count, ca, cb, cc):
    """Training batch norm's input gradient ``g * ca + x * cb + cc`` per channel, from the
    channel sums: ``ca = w invstd``, ``cb = -w invstd^3 sgx / n``, ``cc = -ca sg / n - mean cb``
    (float64 math, stored in the arrays' dtype). Without fast-math, as NumPy evaluates it."""
    for k in range(sg.shape[0]):
        a = w[k] * invstd[k]
        b = -w[k] * invstd[k] ** 3.0 * sgx[k] / count
        ca[k] = a
        cb[k] = b
        cc[k] = -a * sg[k] / count - mean[k] * b


@njit(**_SUM_FLAGS)
def batch_norm_backward_serial(g, x, mean, invstd, w, sg, sgx, coef, gx):
    """Training batch norm's backward on small inputs in one call: the channel sums of ``g``
    and ``g * (x - mean)`` (into ``sg``, ``sgx``), the coefficients (``coef``: 3 x C in the
    tensor's dtype) and the input gradient ``gx``."""
    rows = x.shape[0]
    sgr = np.empty(rows)
    sgxr = np.empty(rows)
    for r in range(rows):
        _grad_sums_row(g, x, r, mean, sgr, sgxr)
    _sum_channels(sgr, sg)
    _sum_channels(sgxr, sgx)
    count = (rows // sg.shape[0]) * x.shape[1]
    batch_norm_grad_coefficients(sg, sgx, mean, invstd, w, count, coef[0], coef[1], coef[2])
    _row_affine2_serial(g, x, coef[0], coef[1], coef[2], gx)  # its own flags: no contraction


def _parallel(x2) -> bool:
    return x2.size >= PARALLEL_MIN_ELEMENTS


def moments(x2):
    """(mean, m2) per row of a contiguous 2-D array, as float64 vectors."""
    rows = x2.shape[0]
    mean = np.empty(rows, np.float64)
    m2 = np.empty(rows, np.float64)
    if x2.size:
        (row_moments_parallel if _parallel(x2) else row_moments_serial)(x2, mean, m2)
    else:
        mean[:] = np.nan
        m2[:] = np.nan
    return mean, m2


def batch_norm_stats(x2, channels, eps, w, b):
    """Training statistics of a non-empty ``(N*C, M)`` array: per channel ``(mean, centred sum
    of squares, invstd, ca, cb)`` (float64; ``w``, ``b`` float64 vectors, ones/zeros when
    absent), with ``y = x * ca + cb`` the normalized output."""
    out = np.empty((5, channels), np.float64)
    (batch_norm_stats_parallel if _parallel(x2) else batch_norm_stats_serial)(
        x2, float(eps), w, b, out[0], out[1], out[2], out[3], out[4])
    return out[0], out[1], out[2], out[3], out[4]


def channel_grad_sums(g2, x2, mean):
    """(sum g, sum g * (x - mean)) per channel, ``mean`` a float64 vector of length C."""
    sg = np.zeros(mean.shape[0], np.float64)
    sgx = np.zeros(mean.shape[0], np.float64)
    if x2.size:
        (channel_grad_sums_parallel if _parallel(x2) else channel_grad_sums_serial)(
            g2, x2, mean, sg, sgx)
    return sg, sgx


def affine(x2, a, b):
    """``x2 * a + b`` with ``a``, ``b`` per row, repeating with their length (float64 in)."""
    out = empty(x2.shape, x2.dtype)
    if x2.size:
        dt = x2.dtype
        (row_affine_parallel if _parallel(x2) else row_affine_serial)(
            x2, a.astype(dt), b.astype(dt), out)
    return out


def grad_sums(g2, x2, mean):
    """Per row: (sum g, sum g * (x - mean)), ``mean`` per row repeating with its length."""
    rows = x2.shape[0]
    sg = np.zeros(rows, np.float64)
    sgx = np.zeros(rows, np.float64)
    if x2.size:
        (row_grad_sums_parallel if _parallel(x2) else row_grad_sums_serial)(
            g2, x2, mean.astype(np.float64, copy=False), sg, sgx)
    return sg, sgx


def batch_norm_backward(g2, x2, mean, invstd, w):
    """Training batch norm's ``(sg, sgx, gx)`` per channel sums and input gradient, for a
    non-empty ``(N*C, M)`` pair; ``mean``, ``invstd``, ``w``: float64 vectors of length C."""
    c = mean.shape[0]
    if _parallel(x2):  # the same steps as separate parallel launches
        sg, sgx = channel_grad_sums(g2, x2, mean)
        n = x2.size // c
        ca = w * invstd
        cb = -w * invstd ** 3 * sgx / n
        cc = -ca * sg / n - mean * cb
        return sg, sgx, affine2(g2, x2, ca, cb, cc)
    sg = np.empty(c, np.float64)
    sgx = np.empty(c, np.float64)
    gx = empty(x2.shape, x2.dtype)
    batch_norm_backward_serial(g2, x2, mean, invstd, w, sg, sgx, np.empty((3, c), x2.dtype), gx)
    return sg, sgx, gx


def affine2(g2, x2, a, b, c):
    """``g2 * a + x2 * b + c`` with ``a``, ``b``, ``c`` per row, repeating with their length."""
    out = empty(x2.shape, x2.dtype)
    if x2.size:
        dt = x2.dtype
        (row_affine2_parallel if _parallel(x2) else row_affine2_serial)(
            g2, x2, a.astype(dt), b.astype(dt), c.astype(dt), out)
    return out
