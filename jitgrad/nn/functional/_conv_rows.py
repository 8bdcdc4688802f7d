"""Stride-1 convolutions on the CPU as implicit GEMMs over channels-last rows (no im2col).

The input goes once into a zero-padded channels-last buffer ``zp``: one row of ``Cz`` values per
point of the padded grid (``_grid``), samples one after the other, and a zero tail. Seen that
way, with stride 1, kernel tap ``t`` of every output position reads the row ``r + off[t]``
where ``r`` is the row of the output position's own grid point and ``off[t]`` the tap's offset
in the flattened grid, so ONE strided matrix ``zp[off[t] : off[t] + M]`` holds what tap ``t``
reads for the whole batch, and

* forward: ``Y = sum_t zp[off[t] : off[t] + M] @ W_t``  (``W_t`` = ``w[:, :, t]^T``, Cz x Cy),
* weight gradient: ``dW_t = Y^T @ zp[off[t] : off[t] + M]`` (``Y`` zero off the output grid),
* input gradient: ``Z[r] = sum_t Y[r - off[t]] @ w[:, :, t]``, the forward's exact adjoint.

``Y`` has a row for every grid point; the rows of points past the output size are computed and
dropped (6% of them for a padded 32x32 image, 3x3 kernel). That beats im2col + GEMM here
because nothing nine times the input is written and read back, and because MKL runs the
``(M, Cz) x (Cz, Cy)`` shape at its peak (~93 GFLOP/s per core on this AMD EPYC) where the
channels-first im2col's ``(Cy, Cz K) x (Cz K, B L)`` got 41-60 (docs/nn.md).

The GEMMs go in chunks of whole grid lines (``_CHUNK_BYTES`` of rows: in L2) to
``backends.host_threads`` (pool threads, MKL sequential in each), and each forward / input
gradient chunk writes its lines back channels-first while they are in cache. The layout changes
are serial Numba kernels over line ranges, run side by side the same way. Used for
groups == 1, float32/float64, stride 1 and enough channels (``applies``); everything else takes
``_conv_arrays``'s general im2col path.
"""
from __future__ import annotations

import numpy as np

from ...backends import blas, cpu, host_threads
from ...codegen.kcache import njit_cached as njit

__all__ = ["applies", "forward", "input_grad", "weight_grad", "grads"]

_CHUNK_BYTES = 2 << 20  # output rows (and the input rows they read) per GEMM chunk
# Where im2col stays faster (medians, 2 threads, batch 32, 3x3 unless said): 3 -> 64 channels
# at 32x32 (90 ms here vs 36: the GEMMs' inner dim Cz is too short; 8 -> 8 level, 16 -> 16 already
# 12 vs 29), 16 -> 32 at 4x4 (2.3 vs 1.3 ms: 36% of the rows dropped; 8x8 with 21%: 3.1 vs 4.9)
# and 1x1 kernels (24 vs 17 ms at 64 channels, 32x32: im2col is the input itself there)
_MIN_CHANNELS = 16
_MIN_USEFUL = 0.7  # least share of computed rows that are real output positions
# multiply-adds per map below which the pool's hand-offs (~30-60 us a phase) cost more than a
# second thread saves: the caller's thread does it all (train_cnn.py's convolutions)
_THREADED_WORK = 1 << 24

# Serial kernels over a range of lines: host_threads runs the ranges side by side (a prange
# kernel between MKL calls fought MKL's spinning threads for the cores: 2-3x slower, measured)
_FLAGS = dict(nogil=True, error_model="numpy")  # cached: njit_cached


def applies(geo, cz, cy, dtype) -> bool:
    """Whether the row path takes this convolution (faster, measured; else im2col)."""
    if geo.s != (1, 1, 1) or geo.groups != 1 or dtype not in (np.float32, np.float64) or \
            geo.taps == 1:
        return False
    if min(cz, cy) < _MIN_CHANNELS:
        return False
    g = _grid(geo)
    size = g[0] * g[1] * g[2]
    return size > 0 and geo.positions >= _MIN_USEFUL * size


def _grid(geo):
    """The padded grid's size per dim. Padding before and after a line can be shared: a tap
    that reads past a line's end wraps into the next line's leading padding (zeros) if that is
    at least as long as the trailing one would have been, so a dim needs only
    ``z + max(lo, hi)`` grid points (33 instead of 34 for 32 pixels padded by 1: 6% fewer rows
    for a 2-D image), as long as the data, the wrapped reads and the outputs all fit."""
    return tuple(max(lo + z, sp - lo, y) for lo, z, sp, y in zip(geo.lo, geo.z, geo.span, geo.y))


@njit(**_FLAGS, fastmath={"reassoc"})
def _to_rows(src, dst, g0, g1, g2, lo0, lo1, lo2, start, stop, check, row0=0):
    """Grid lines ``start:stop`` of ``src`` (N, C, z0, z1, z2) as rows of ``dst`` (rows, C):
    row ``((n g0 + p0) g1 + p1) g2 + p2 - row0`` holds ``src[n, :, p - lo]``, zero where that is
    outside ``src``. With ``check``, returns the sum of ``0 * x`` over what it copied (NaN when
    that holds a NaN or an infinity; reassociated, so it vectorizes), else 0.

    The transpose goes 8 channels at a time: their 8 source lines are read together (one
    cache line each) and written row by row. A channel loop over all C at once thrashes L1,
    because NCHW planes of 1024 floats put every channel's line in the same cache set, and
    a single running sum carried through the copy loop cost 1.6x the copy (its add latency)."""
    n, c, z0, z1, z2 = src.shape
    finite = 0.0
    for line in range(start, stop):
        b = line // (g0 * g1)
        i0 = (line // g1) % g0 - lo0
        i1 = line % g1 - lo1
        base = line * g2 - row0
        inside = 0 <= i0 < z0 and 0 <= i1 < z1
        for p2 in range(g2):
            i2 = p2 - lo2
            if not inside or i2 < 0 or i2 >= z2:
                for ch in range(c):
                    dst[base + p2, ch] = 0
        if inside:
            if check:
                for ch in range(c):
                    s = 0.0
                    for i2 in range(z2):
                        s += src[b, ch, i0, i1, i2] * 0
                    finite += s
            for c0 in range(0, c, 8):
                c1 = min(c, c0 + 8)
                for i2 in range(z2):
                    r = base + lo2 + i2
                    for ch in range(c0, c1):
                        dst[r, ch] = src[b, ch, i0, i1, i2]
    return finite


@njit(**_FLAGS)
def _from_rows(src, dst, g0, g1, g2, lo0, lo1, lo2, bias, with_bias, start, stop):
    """The inverse for grid lines ``start:stop``: ``dst[n, :, i] = src[row of (n, i + lo)]``
    (+ ``bias[c]`` when ``with_bias``: not adding a zero keeps a -0.0) for every ``i`` of
    ``dst`` (N, C, y0, y1, y2) on those lines. ``src`` holds the lines' rows from row 0."""
    n, c, y0, y1, y2 = dst.shape
    first = start * g2
    for line in range(start, stop):
        b = line // (g0 * g1)
        i0 = (line // g1) % g0 - lo0
        i1 = line % g1 - lo1
        if i0 < 0 or i0 >= y0 or i1 < 0 or i1 >= y1:
            continue
        base = line * g2 + lo2 - first
        for ch in range(c):
            if with_bias:
                add = bias[ch]
                for i2 in range(y2):
                    dst[b, ch, i0, i1, i2] = src[base + i2, ch] + add
            else:
                for i2 in range(y2):
                    dst[b, ch, i0, i1, i2] = src[base + i2, ch]


def _offsets(geo, grid):
    """Each tap's row offset in the flattened grid (C order over the kernel dims)."""
    k, d = geo.k, geo.d
    return [((t0 * d[0]) * grid[1] + t1 * d[1]) * grid[2] + t2 * d[2]
            for t0 in range(k[0]) for t1 in range(k[1]) for t2 in range(k[2])]


class _Plan:
    """One geometry's rows: grid, tap offsets, row count, chunks of whole grid lines."""

    def __init__(self, geo, n, cz, cy, itemsize):
        self.grid = g = _grid(geo)
        self.offs = _offsets(geo, g)
        self.lines = n * g[0] * g[1]
        self.count = self.lines * g[2]
        per = max(1, _CHUNK_BYTES // max((cz + cy) * itemsize * g[2], 1))  # lines per chunk
        self.chunks = [(a, min(self.lines, a + per)) for a in range(0, self.lines, per)]
        work = self.count * len(self.offs) * cz * cy
        self.threads = host_threads.count() if work >= _THREADED_WORK else 1


def forward(z, w, geo, bias=None):
    """``y`` (N, Cy, *y) of ``z`` (N, Cz, *z) and ``w`` (Cy, Cz, *k), as ``_conv_arrays``'s.

    Each chunk lays out the input rows its taps read (its lines and the ``head`` rows after
    them) in its thread's own buffer right before its GEMMs read them: the layout pass runs
    side by side with other chunks' GEMMs and its output is still in cache when used (one
    shared pass first cost ~1.8 ms of an 18 ms forward, measured)."""
    n, cz = z.shape[:2]
    cy = w.shape[0]
    plan = _Plan(geo, n, cz, cy, z.itemsize)
    g2, offs = plan.grid[2], plan.offs
    head = offs[-1]
    extra = -(-head // g2) if g2 else 0  # whole lines holding the head rows
    wt = np.ascontiguousarray(w.reshape(cy, cz, geo.taps).transpose(2, 1, 0))  # (K, Cz, Cy)
    out = cpu.empty((n, cy) + geo.y, z.dtype)
    with_bias = bias is not None
    b = np.ascontiguousarray(bias) if with_bias else np.zeros(cy, z.dtype)
    most = max((b1 - a1 for a1, b1 in plan.chunks), default=0) * g2
    scratch = cpu.empty((plan.threads, most, cy), z.dtype)  # pooled: no page faults
    zs = cpu.empty((plan.threads, most + extra * g2, cz), z.dtype)

    def chunk(piece, thread):
        a, b1 = piece
        r0, r1 = a * g2, b1 * g2
        zc = zs[thread]
        last = min(plan.lines, b1 + extra)
        _to_rows(z, zc, *plan.grid, *geo.lo, a, last, False, r0)
        zc[(last - a) * g2:r1 - r0 + head] = 0  # past the last line: the zero tail
        yr = scratch[thread, :r1 - r0]
        for t, off in enumerate(offs):
            blas.matmul(zc[off:off + r1 - r0], wt[t], out=yr, accumulate=t > 0)
        _from_rows(yr, out, *plan.grid, 0, 0, 0, b, with_bias, a, b1)

    host_threads.run(chunk, plan.chunks, plan.threads)
    return out


_GROUPS = 8  # weight-gradient partial sums (at least; two per thread), added in a fixed order


def _groups(chunks, threads):
    """The chunks cut into runs of consecutive chunks, each with its own partial weight
    gradient: which thread takes a run varies, what it adds up does not, so the sum is the same
    from run to run (for a given thread count; up to 4 threads, for any)."""
    k = min(len(chunks), max(_GROUPS, 2 * threads))
    return [chunks[i * len(chunks) // k:(i + 1) * len(chunks) // k] for i in range(k)]


def grads(z, y, w, geo, need_z, need_w):
    """``(input_grad(y, w), weight_grad(z, y))`` (None where not needed). The weight gradient
    is None also when ``z`` holds a NaN or an infinity: the rows off the output grid (zero in
    ``Y``) meet input values there too, and 0 * inf is NaN where im2col never multiplies them,
    so the caller takes im2col then.

    One piece of work per run of chunks (see ``_groups``); for each chunk of lines ``a:b1`` it
    lays out, in its thread's own buffers, the rows of ``y`` its taps read (from ``head`` rows
    before the chunk: ``Y[r - off[t]]``) and, for the weight gradient, the rows of ``z`` (to
    ``head`` rows after it), then runs the input gradient ``Z[r] = sum_t Y[r - off[t]] @
    w[:, :, t]`` (cropped into ``gz``) and adds ``dW_t = Y^T @ zp[off[t]:]`` to the run's
    partial sum. As in ``forward``, the layout is in cache when the GEMMs read it and runs
    beside other pieces' GEMMs (one shared layout pass first: ~3.5 ms of a 38 ms backward).
    (Keeping the forward's rows of ``z`` was tried: no gain measured, and it held a copy of
    every input until the backward.)"""
    n, cz = z.shape[:2]
    cy = y.shape[1]
    plan = _Plan(geo, n, cz, cy, y.itemsize)
    g2, offs = plan.grid[2], plan.offs
    head = offs[-1]
    extra = -(-head // g2) if g2 else 0  # whole lines holding the head rows
    lead = extra * g2
    groups = _groups(plan.chunks, plan.threads)
    most = max((b - a for a, b in plan.chunks), default=0) * g2
    ys = cpu.empty((plan.threads, lead + most, cy), y.dtype)
    gz = wt = acc = zr = zs = None
    if need_z:
        wt = np.ascontiguousarray(w.reshape(cy, cz, geo.taps).transpose(2, 0, 1))  # (K, Cy, Cz)
        gz = cpu.empty((n, cz) + geo.z, y.dtype)
        zr = cpu.empty((plan.threads, most, cz), y.dtype)
    if need_w:
        acc = np.zeros((max(len(groups), 1), geo.taps, cy, cz), y.dtype)
        zs = cpu.empty((plan.threads, most + lead, cz), z.dtype)
    finite = [True] * len(groups)

    def piece(job, thread):
        index, chunks = job
        for a, b1 in chunks:
            r0, r1 = a * g2, b1 * g2
            rows = r1 - r0
            yc = ys[thread]  # row i holds Y[r0 - lead + i]; lines before line 0 are zero
            first = max(0, a - extra)
            yc[:(first - a + extra) * g2] = 0
            # y: any strides (the .sum() gradient is a broadcast), read in place
            _to_rows(y, yc, *plan.grid, 0, 0, 0, first, b1, False, r0 - lead)
            if need_z:
                zo = zr[thread, :rows]
                for t, off in enumerate(offs):
                    blas.matmul(yc[lead - off:lead - off + rows], wt[t], out=zo,
                                accumulate=t > 0)
                _from_rows(zo, gz, *plan.grid, *geo.lo, wt[0, 0], False, a, b1)
            if need_w:
                zc = zs[thread]  # row i holds zp[r0 + i]
                last = min(plan.lines, b1 + extra)
                if _to_rows(z, zc, *plan.grid, *geo.lo, a, last, True, r0) != 0:
                    finite[index] = False
                zc[(last - a) * g2:rows + head] = 0  # past the last line: the zero tail
                yt = yc[lead:lead + rows].T
                for t, off in enumerate(offs):
                    blas.matmul(yt, zc[off:off + rows], out=acc[index, t], accumulate=True)

    host_threads.run(piece, list(enumerate(groups)), plan.threads)
    gw = None
    if need_w and all(finite):
        gw = np.ascontiguousarray(acc.sum(axis=0).transpose(1, 2, 0)).reshape(w.shape)
    return gz, gw


def input_grad(y, w, geo, cz):
    """``z`` (N, Cz, *z) from ``y`` (N, Cy, *y), as ``_conv_arrays``'s."""
    z = np.empty((y.shape[0], cz, 0, 0, 0), y.dtype)  # only its batch and channel sizes count
    return grads(z, y, w, geo, True, False)[0]


def weight_grad(z, y, geo, w_shape):
    """``w`` (Cy, Cz, *k) from ``z`` and ``y``, or None (see ``grads``)."""
    return grads(z, y, np.empty(w_shape, z.dtype), geo, False, True)[1]
