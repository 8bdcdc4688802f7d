"""3x3 stride-1 convolutions on the CPU by Winograd's minimal filtering, F(2x2, 3x3).

Every 2x2 tile of the output comes from a 4x4 tile of the (zero-padded) input:
``Y = A^T [ U (.) V ] A`` with ``V = B^T d B`` (the input tile transformed), ``U = G g G^T``
(each 3x3 filter transformed once per call) and ``(.)`` summed over input channels. So the
products become 16 GEMMs, one per transformed point ``(xi, nu)``:
``M[xi nu] (tiles, Cy) = V[xi nu] (tiles, Cz) @ U[xi nu] (Cz, Cy)``, 16 multiply-adds per
4 outputs and channel pair instead of 36: 2.25x fewer flops than the direct convolution, the
products in the ``(M, 64) x (64, 64)`` shape MKL runs near its peak.

The tiles go in chunks (``_CHUNK_BYTES`` of transformed input and output per chunk) to
``backends.host_threads``, each thread transforming its chunk's input (a compiled pass reading
the NCHW input in place), running the 16 GEMMs and transforming the result into the NCHW
output while it is in cache. Used by ``_conv_arrays`` for the forward and the input gradient
(itself such a convolution with the flipped weight) and the weight gradient (its adjoint,
below) of float32/float64, one-group, 2-D 3x3 convolutions with stride and dilation 1, at
least ``_MIN_CHANNELS`` channels on both sides and enough work (``applies``).

What it changes: the sums are associated differently (float32 results differ from the direct
convolution by a few units in the last place, as oneDNN's Winograd differs from its direct
kernel), and a NaN or an infinity would spread across the tile it lands in (``inf - inf``
in the transforms) where the direct convolution keeps it to the outputs that read it, so an
input or weight holding one is left to the direct paths (``forward`` returns None).
"""
from __future__ import annotations

import numpy as np

from ...backends import blas, cpu, host_threads
from ...codegen.kcache import njit_cached as njit
from ._conv_rows import _groups

__all__ = ["applies", "forward", "weight_grad"]

_MIN_CHANNELS = 16
# transformed multiply-adds from which Winograd beat the other paths (forward + backward, batch
# 32, 3x3: 64 -> 64 channels at 8x8, 34 M, 1.08x their time; 32 -> 64 at 16x16, 67 M, 0.87x;
# the ResNet layer, 537 M, 0.68x)
_MIN_WORK = 48 << 20
_CHUNK_BYTES = 8 << 20  # transformed input + output per chunk (1024 tiles at 64 + 64 channels)
_FLAGS = dict(nogil=True, error_model="numpy")  # cached: njit_cached

# G, the filter transform (F(2, 3): interpolation points 0, 1, -1, infinity)
_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


def applies(geo, n, cz, cy, dtype) -> bool:
    """Whether a batch of ``n`` goes this way: the geometry, and enough work that the
    transforms and the 16 small GEMMs per chunk pay (``_MIN_WORK``)."""
    if not (geo.k == (1, 3, 3) and geo.s == (1, 1, 1) and geo.d == (1, 1, 1) and
            geo.groups == 1 and geo.z[0] == 1 and geo.lo[0] == 0 and
            dtype in (np.float32, np.float64) and min(cz, cy) >= _MIN_CHANNELS):
        return False
    tiles = n * -(-geo.y[1] // 2) * -(-geo.y[2] // 2)
    return tiles * 16 * cz * cy >= _MIN_WORK


@njit(**_FLAGS)
def _store_transformed(v, row, c, d00, d01, d02, d03, d10, d11, d12, d13, d20, d21, d22, d23,
                       d30, d31, d32, d33):
    """``v[k, row, c]`` = point ``k`` of ``B^T d B``."""
    # B^T d: rows (d0 - d2, d1 + d2, d2 - d1, d1 - d3)
    a00 = d00 - d20
    a01 = d01 - d21
    a02 = d02 - d22
    a03 = d03 - d23
    a10 = d10 + d20
    a11 = d11 + d21
    a12 = d12 + d22
    a13 = d13 + d23
    a20 = d20 - d10
    a21 = d21 - d11
    a22 = d22 - d12
    a23 = d23 - d13
    a30 = d10 - d30
    a31 = d11 - d31
    a32 = d12 - d32
    a33 = d13 - d33
    # (B^T d) B: the same on columns
    v[0, row, c] = a00 - a02
    v[1, row, c] = a01 + a02
    v[2, row, c] = a02 - a01
    v[3, row, c] = a01 - a03
    v[4, row, c] = a10 - a12
    v[5, row, c] = a11 + a12
    v[6, row, c] = a12 - a11
    v[7, row, c] = a11 - a13
    v[8, row, c] = a20 - a22
    v[9, row, c] = a21 + a22
    v[10, row, c] = a22 - a21
    v[11, row, c] = a21 - a23
    v[12, row, c] = a30 - a32
    v[13, row, c] = a31 + a32
    v[14, row, c] = a32 - a31
    v[15, row, c] = a31 - a33
    return (d00 + d01 + d02 + d03 + d10 + d11 + d12 + d13 + d20 + d21 + d22 + d23 + d30 +
            d31 + d32 + d33) * 0


@njit(**_FLAGS)
def _transform_input(x, v, zero, t0, t1, th, tw, lo1, lo2):
    """``v[k, t - t0, c]`` = point ``k`` of ``B^T d B`` for the 4x4 input tile ``d`` of tile
    ``t`` (row-major over (sample, tile row, tile column)) and channel ``c``. Returns the sum
    of ``0 * d`` (NaN when the input held a NaN or an infinity); ``zero``: 0 of ``x``'s type
    (the padding). Tiles wholly inside the input read it directly; border tiles through a
    zero-padded copy of their window (a bounds check per element in the common loop made the
    whole pass 4-6x slower)."""
    nb, nc, h, w = x.shape
    per = th * tw
    finite = 0.0
    d = np.empty((4, 4), x.dtype)
    for t in range(t0, t1):
        b = t // per
        i = (t % per) // tw
        j = t % tw
        r = 2 * i - lo1
        q = 2 * j - lo2
        row = t - t0
        if r >= 0 and q >= 0 and r + 4 <= h and q + 4 <= w:
            for c in range(nc):
                finite += _store_transformed(
                    v, row, c, x[b, c, r, q], x[b, c, r, q + 1], x[b, c, r, q + 2],
                    x[b, c, r, q + 3], x[b, c, r + 1, q], x[b, c, r + 1, q + 1],
                    x[b, c, r + 1, q + 2], x[b, c, r + 1, q + 3], x[b, c, r + 2, q],
                    x[b, c, r + 2, q + 1], x[b, c, r + 2, q + 2], x[b, c, r + 2, q + 3],
                    x[b, c, r + 3, q], x[b, c, r + 3, q + 1], x[b, c, r + 3, q + 2],
                    x[b, c, r + 3, q + 3])
            continue
        for c in range(nc):
            for u in range(4):
                for e in range(4):
                    rr = r + u
                    cc = q + e
                    d[u, e] = x[b, c, rr, cc] if 0 <= rr < h and 0 <= cc < w else zero
            finite += _store_transformed(
                v, row, c, d[0, 0], d[0, 1], d[0, 2], d[0, 3], d[1, 0], d[1, 1], d[1, 2],
                d[1, 3], d[2, 0], d[2, 1], d[2, 2], d[2, 3], d[3, 0], d[3, 1], d[3, 2], d[3, 3])
    return finite


@njit(**_FLAGS)
def _transform_output(m, out, bias, with_bias, t0, t1, th, tw):
    """``out[b, c, 2i:2i+2, 2j:2j+2] = A^T M A`` (+ ``bias[c]``) for tiles ``t0:t1``, cropped
    to ``out``'s size."""
    nb, nc, h, w = out.shape
    per = th * tw
    for t in range(t0, t1):
        b = t // per
        i = (t % per) // tw
        j = t % tw
        row = t - t0
        r = 2 * i
        q = 2 * j
        for c in range(nc):
            m00 = m[0, row, c]
            m01 = m[1, row, c]
            m02 = m[2, row, c]
            m03 = m[3, row, c]
            m10 = m[4, row, c]
            m11 = m[5, row, c]
            m12 = m[6, row, c]
            m13 = m[7, row, c]
            m20 = m[8, row, c]
            m21 = m[9, row, c]
            m22 = m[10, row, c]
            m23 = m[11, row, c]
            m30 = m[12, row, c]
            m31 = m[13, row, c]
            m32 = m[14, row, c]
            m33 = m[15, row, c]
            # A^T M: rows (m0 + m1 + m2, m1 - m2 - m3)
            s00 = m00 + m10 + m20
            s01 = m01 + m11 + m21
            s02 = m02 + m12 + m22
            s03 = m03 + m13 + m23
            s10 = m10 - m20 - m30
            s11 = m11 - m21 - m31
            s12 = m12 - m22 - m32
            s13 = m13 - m23 - m33
            y00 = s00 + s01 + s02
            y01 = s01 - s02 - s03
            y10 = s10 + s11 + s12
            y11 = s11 - s12 - s13
            if with_bias:  # (not adding a zero keeps a -0.0, as the direct paths do)
                y00 += bias[c]
                y01 += bias[c]
                y10 += bias[c]
                y11 += bias[c]
            out[b, c, r, q] = y00
            if q + 1 < w:
                out[b, c, r, q + 1] = y01
            if r + 1 < h:
                out[b, c, r + 1, q] = y10
                if q + 1 < w:
                    out[b, c, r + 1, q + 1] = y11


@njit(**_FLAGS)
def _transform_gradient(g, gh, zero, t0, t1, th, tw):
    """``gh[k, t - t0, c]`` = point ``k`` of ``A g A^T`` for the 2x2 output-gradient tile
    ``g`` of tile ``t`` (zero past the output's edge): the adjoint of ``_transform_output``.
    Returns the sum of ``0 * g``."""
    nb, nc, h, w = g.shape
    per = th * tw
    finite = 0.0
    for t in range(t0, t1):
        b = t // per
        i = (t % per) // tw
        j = t % tw
        r = 2 * i
        q = 2 * j
        row = t - t0
        full = r + 2 <= h and q + 2 <= w
        for c in range(nc):
            g00 = g[b, c, r, q]
            if full:
                g01 = g[b, c, r, q + 1]
                g10 = g[b, c, r + 1, q]
                g11 = g[b, c, r + 1, q + 1]
            else:
                g01 = g[b, c, r, q + 1] if q + 1 < w else zero
                g10 = g[b, c, r + 1, q] if r + 1 < h else zero
                g11 = g[b, c, r + 1, q + 1] if r + 1 < h and q + 1 < w else zero
            finite += (g00 + g01 + g10 + g11) * 0
            # A g: rows (g0, g0 + g1, g0 - g1, -g1); then the same on columns
            p0 = g00
            p1 = g01
            s0 = g00 + g10
            s1 = g01 + g11
            d0 = g00 - g10
            d1 = g01 - g11
            n0 = -g10
            n1 = -g11
            gh[0, row, c] = p0
            gh[1, row, c] = p0 + p1
            gh[2, row, c] = p0 - p1
            gh[3, row, c] = -p1
            gh[4, row, c] = s0
            gh[5, row, c] = s0 + s1
            gh[6, row, c] = s0 - s1
            gh[7, row, c] = -s1
            gh[8, row, c] = d0
            gh[9, row, c] = d0 + d1
            gh[10, row, c] = d0 - d1
            gh[11, row, c] = -d1
            gh[12, row, c] = n0
            gh[13, row, c] = n0 + n1
            gh[14, row, c] = n0 - n1
            gh[15, row, c] = -n1
    return finite


def _filters(w):
    """``U[xi nu]`` as (16, Cz, Cy): ``G g G^T`` of each (Cy, Cz) 3x3 filter, in float64.
    (Two stacked matmuls: ``np.einsum(..., optimize=True)`` spent ~0.4 ms per call choosing
    its path.)"""
    cy, cz = w.shape[:2]
    u = _G @ w.astype(np.float64) @ _G.T  # (Cy, Cz, 4, 4)
    return np.ascontiguousarray(u.reshape(cy, cz, 16).transpose(2, 1, 0).astype(w.dtype))


def forward(z, w, geo, bias=None):
    """``y`` (N, Cy, 1, *y) of ``z`` (N, Cz, 1, *z) and ``w`` (Cy, Cz, 1, 3, 3), as
    ``_conv_arrays.forward``'s; None when ``z`` or ``w`` holds a NaN or an infinity."""
    if not np.isfinite(w).all():
        return None
    n, cz = z.shape[:2]
    cy = w.shape[0]
    x = z[:, :, 0]
    th, tw, chunks, threads = _tiling(geo, n, cz, cy, z.itemsize)
    u = _filters(w[:, :, 0])
    out = cpu.empty((n, cy, 1) + geo.y[1:], z.dtype)
    o4 = out[:, :, 0]
    with_bias = bias is not None
    b = np.ascontiguousarray(bias) if with_bias else np.zeros(cy, z.dtype)
    most = max((t1 - t0 for t0, t1 in chunks), default=0)
    # one spare row per transformed point: with 1024 rows of 64 float32 the 16 points' rows
    # would lie 256 KiB apart, all in one L1 set (4 KiB aliasing): the transforms, which touch
    # the 16 together, ran 8x slower so
    vs = cpu.empty((threads, 16, most + 1, cz), z.dtype)
    ms = cpu.empty((threads, 16, most + 1, cy), z.dtype)

    def chunk(piece, thread):
        t0, t1 = piece
        v, m = vs[thread][:, :t1 - t0], ms[thread][:, :t1 - t0]
        finite = _transform_input(x, v, x.dtype.type(0), t0, t1, th, tw, geo.lo[1], geo.lo[2])
        blas.matmul_batch(v, u, m)
        _transform_output(m, o4, b, with_bias, t0, t1, th, tw)
        return finite

    sums = host_threads.run(chunk, chunks, threads)
    if any(s != 0 for results in sums.values() for s in results):
        return None
    return out


def _tiling(geo, n, c_in, c_out, itemsize):
    """(tile rows, tile columns, chunks of tiles, threads) for a call."""
    y1, y2 = geo.y[1], geo.y[2]
    th, tw = -(-y1 // 2), -(-y2 // 2)
    tiles = n * th * tw
    per = max(64, _CHUNK_BYTES // (16 * (c_in + c_out) * itemsize))
    chunks = [(t, min(tiles, t + per)) for t in range(0, tiles, per)]
    work = tiles * 16 * c_in * c_out
    threads = host_threads.count() if work >= 1 << 24 and len(chunks) > 1 else 1
    return th, tw, chunks, threads


def weight_grad(z, y, geo, w_shape):
    """``w`` (Cy, Cz, 1, 3, 3) from ``z`` (N, Cz, 1, *z) and ``y`` (N, Cy, 1, *y), as
    ``_conv_arrays.weight_grad``'s; None when either holds a NaN or an infinity.

    The adjoint of ``forward`` in the weight: per transformed point,
    ``dU[xi nu] (Cy, Cz) = sum over tiles of (A g A^T)[xi nu]^T V[xi nu]`` (16 GEMMs over the
    tiles of a chunk, added to a partial sum per run of chunks: the same from run to run
    whichever thread takes a run), then ``dW = G^T dU G`` per filter."""
    n, cz = z.shape[:2]
    cy = y.shape[1]
    x, g = z[:, :, 0], y[:, :, 0]
    th, tw, chunks, threads = _tiling(geo, n, cz, cy, z.itemsize)
    runs = _groups(chunks, threads)  # the row path's runs: the same partial sums every run
    k = len(runs)
    most = max((t1 - t0 for t0, t1 in chunks), default=0)
    vs = cpu.empty((threads, 16, most + 1, cz), z.dtype)  # + 1: see forward
    gs = cpu.empty((threads, 16, most + 1, cy), z.dtype)
    acc = np.zeros((max(k, 1), 16, cy, cz), z.dtype)
    zx, zg = x.dtype.type(0), g.dtype.type(0)

    def run(job, thread):
        index, pieces = job
        finite = 0.0
        for t0, t1 in pieces:
            v, gh = vs[thread][:, :t1 - t0], gs[thread][:, :t1 - t0]
            finite += _transform_input(x, v, zx, t0, t1, th, tw, geo.lo[1], geo.lo[2])
            finite += _transform_gradient(g, gh, zg, t0, t1, th, tw)
            blas.matmul_batch(gh.transpose(0, 2, 1), v, acc[index], accumulate=True)
        return finite

    sums = host_threads.run(run, list(enumerate(runs)), threads)
    if any(s != 0 for results in sums.values() for s in results):
        return None
    du = acc.sum(axis=0).astype(np.float64).reshape(4, 4, cy, cz).transpose(2, 3, 0, 1)
    dw = _G.T @ du @ _G  # (Cy, Cz, 3, 3)
    return dw.astype(z.dtype).reshape(w_shape)
