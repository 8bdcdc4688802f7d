"""Convolution on arrays (no autograd): im2col, col2im and the GEMMs between them.

Every convolution (1-, 2- or 3-D, transposed or not, and its two gradients) is one of three
bilinear maps of one *geometry*: a "big" side ``z`` (a convolution's input), a "small" side
``y`` (its output) and a weight ``w`` of shape ``(Cy, Cz / groups, *kernel)``:

* ``forward(z, w) -> y``: ``y = W @ im2col(z)`` (a convolution),
* ``input_grad(y, w) -> z``: ``z = col2im(W^T @ y)`` (a convolution's input gradient, and the
  forward of a transposed convolution),
* ``weight_grad(z, y) -> w``: ``W = y @ im2col(z)^T`` (a convolution's weight gradient).

Each is the adjoint of the others in one argument, so ``conv.py`` writes every backward with
these three (that is what makes gradients of any order work). Arrays are 5-D inside (1-D and
2-D convolutions get unit leading spatial dims), so one code path serves every rank.

The columns of a batch chunk are laid out ``(Cz * K, B * L)`` (``K`` kernel taps, ``L`` output
positions), so each group's product is ONE GEMM with large dimensions. On the CPU the batch is
cut into chunks whose columns fit in cache (``_CHUNK_BYTES``): im2col writes a chunk, the GEMM
reads it back while it is still there, and the columns of the whole batch (nine times the input
for a 3x3 kernel) never exist at once. im2col/col2im are one compiled pass per chunk
(``_conv_cols``), the GEMMs go through ``backends.blas`` (MKL when installed: the path
``matmul`` takes). CUDA arrays take the same steps with the kernels of
``backends/cuda_kernels/conv.py`` and the device matmul.

Stride-1, one-group float convolutions with enough channels skip all of this on the CPU:
large 2-D 3x3 ones go to ``_conv_winograd`` (Winograd F(2x2, 3x3), all three maps), the others
to ``_conv_rows`` (the three maps as implicit GEMMs over channels-last rows).
"""
from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

from ...backends import blas, cpu
from . import _conv_cols as _cols
from . import _conv_rows as _rows
from . import _conv_winograd as _wino

__all__ = ["Geometry", "forward", "input_grad", "weight_grad", "unfold", "fold"]

_CHUNK_BYTES = 32 << 20  # columns per chunk on the CPU (measured: see docs/nn.md)


class Geometry(NamedTuple):
    """One convolution's shape facts, spatial tuples padded to 3 dims. ``lo`` is the zero
    padding before each dim; the padding after follows from the sizes (``span - lo - z``)."""
    z: tuple      # big-side spatial size
    y: tuple      # small-side spatial size
    k: tuple      # kernel size
    s: tuple      # stride
    d: tuple      # dilation
    lo: tuple     # padding before
    groups: int

    @property
    def span(self):
        """Extent of the padded input the taps read: ``(y - 1) s + (k - 1) d + 1`` per dim."""
        return tuple((y - 1) * s + (k - 1) * d + 1 for y, k, s, d in
                     zip(self.y, self.k, self.s, self.d))

    @property
    def taps(self) -> int:
        return self.k[0] * self.k[1] * self.k[2]

    @property
    def positions(self) -> int:
        return self.y[0] * self.y[1] * self.y[2]


def _is_host(a) -> bool:
    return a.__class__ is np.ndarray


# ----------------------------------------------------------------------------- host im2col


def _padded(zc, geo):
    """``zc`` (B, C, *z) inside a zero border: (B, C, *span), or ``zc`` itself when the taps
    read exactly it. Where the span is shorter than ``lo + z`` the tail is cropped."""
    span = geo.span
    if geo.lo == (0, 0, 0) and span == geo.z:
        return zc
    out = cpu.empty(zc.shape[:2] + span, zc.dtype)
    keep = tuple(min(z, sp - lo) for z, sp, lo in zip(geo.z, span, geo.lo))
    inner = tuple(slice(lo, lo + n) for lo, n in zip(geo.lo, keep))
    if any(lo > 0 or lo + n < sp for lo, n, sp in zip(geo.lo, keep, span)):
        out.fill(0)
    out[(slice(None), slice(None)) + inner] = zc[(Ellipsis,) + tuple(slice(0, n) for n in keep)]
    return out


def _tap_slices(geo):
    """For each kernel tap (C order over the kernel dims): the slices of the padded input that
    tap reads for every output position."""
    for tap in itertools.product(*(range(k) for k in geo.k)):
        yield tuple(slice(t * d, t * d + (y - 1) * s + 1, s)
                    for t, d, y, s in zip(tap, geo.d, geo.y, geo.s))


def _host_im2col(zc, geo):
    """(B, C, *z) -> columns (C * K, B * L): row ``c * K + tap``, column ``b * L + position``."""
    b, c = zc.shape[:2]
    if _cols.im2col_applies(zc.dtype) and (
            c * geo.taps * b * geo.positions <= _KERNEL_COLUMNS or geo.s[2] > 1):
        return _cols.im2col(zc, geo, cpu.empty((c * geo.taps, b * geo.positions), zc.dtype))
    # a strided copy per kernel tap into a padded copy: runs of whole rows, which NumPy copies
    # faster than the kernel's per-element reads once Python's per-tap cost is spread (stride
    # 1, 3.5M column elements: 0.9 vs 1.9 ms; stride 2: 7.4 vs 3.2, so those stay compiled)
    zp = _padded(zc, geo)
    cols = cpu.empty((c, geo.taps, b) + geo.y, zc.dtype)
    for t, sl in enumerate(_tap_slices(geo)):
        np.copyto(cols[:, t], zp[(slice(None), slice(None)) + sl].swapaxes(0, 1))
    return cols.reshape(c * geo.taps, b * geo.positions)


_KERNEL_COLUMNS = 1 << 19  # column elements up to which stride-1 im2col is the compiled pass


def _host_col2im(cols, geo, b, c):
    """The adjoint of ``_host_im2col``: columns (C * K, B * L) summed into (B, C, *z)."""
    if _cols.col2im_applies(cols.dtype):
        return _cols.col2im(cols, geo, np.empty((b, c) + geo.z, cols.dtype))
    span = geo.span  # float16, bool: a strided add per kernel tap into a padded buffer
    acc = np.zeros((b, c) + span, cols.dtype)
    view = cols.reshape((c, geo.taps, b) + geo.y)
    for t, sl in enumerate(_tap_slices(geo)):
        acc[(slice(None), slice(None)) + sl] += view[:, t].swapaxes(0, 1)
    if geo.lo == (0, 0, 0) and span == geo.z:
        return acc
    out = np.zeros((b, c) + geo.z, cols.dtype)
    keep = tuple(min(z, sp - lo) for z, sp, lo in zip(geo.z, span, geo.lo))
    out[(Ellipsis,) + tuple(slice(0, n) for n in keep)] = \
        acc[(slice(None), slice(None)) + tuple(slice(lo, lo + n) for lo, n in zip(geo.lo, keep))]
    return out


def _host_gemm(a, b, ta=False, tb=False, out=None, accumulate=False):
    """``op(a) @ op(b)`` for 2-D arrays (``op`` transposes when asked) through blas.matmul;
    float16 is multiplied in float32 by the callers (see ``_compute_dtype``)."""
    return blas.matmul(a.T if ta else a, b.T if tb else b, out=out, accumulate=accumulate)


def _chunks(n, per_sample_bytes):
    step = max(1, _CHUNK_BYTES // max(per_sample_bytes, 1))
    return [(i, min(n, i + step)) for i in range(0, n, step)] or [(0, 0)]


# ----------------------------------------------------------------------------- the three maps


class Columns:
    """A forward's im2col of its whole input, kept for the weight gradient (which multiplies
    the same columns) when they are small (``_KEEP_COLUMNS_BYTES``): for the small layers of a
    CNN the second im2col cost as much as the GEMM it feeds."""

    __slots__ = ("cols",)

    def __init__(self, cols):
        self.cols = cols


_KEEP_COLUMNS_BYTES = 4 << 20


def forward(z, w, geo, bias=None, keep=False):
    """``y`` (N, Cy, *y) of ``z`` (N, Cz, *z) and ``w`` (Cy, Cz/G, *k); ``bias`` (Cy,) or None.
    With ``keep``: ``(y, kept)``, ``kept`` what ``grads`` can reuse of the forward's work on
    ``z`` (``Columns``) or None."""
    if not _is_host(z):
        out = _device().forward(z, w, geo, bias)
        return (out, None) if keep else out
    n, cz = z.shape[:2]
    cy, g = w.shape[0], geo.groups
    out = None
    if _wino.applies(geo, n, cz, cy, z.dtype):
        out = _wino.forward(z, w, geo, bias)  # None with a NaN or inf: the rows then
    if out is None and _rows.applies(geo, cz, cy, z.dtype):
        out = _rows.forward(z, w, geo, bias)
    if out is not None:
        return (out, None) if keep else out
    ck = (cz // g) * geo.taps
    wm = w.reshape(g, cy // g, ck)
    L = geo.positions
    out = cpu.empty((n, cy) + geo.y, z.dtype)
    out3 = out.reshape(n, cy, L)
    chunks = _chunks(n, cz * geo.taps * L * z.itemsize)
    cols = None
    for n0, n1 in chunks:
        b = n1 - n0
        if b == 0 or L == 0:
            break
        cols = _host_im2col(z[n0:n1], geo)
        prod = cpu.empty((cy, b * L), z.dtype)
        for gi in range(g):
            rows = slice(gi * ck, (gi + 1) * ck)
            _host_gemm(wm[gi], cols[rows], out=prod[gi * (cy // g):(gi + 1) * (cy // g)])
        dest = out3[n0:n1]
        src = prod.reshape(cy, b, L).swapaxes(0, 1)
        if bias is None:
            np.copyto(dest, src)
        else:
            np.add(src, bias.reshape(1, cy, 1), out=dest)
    if out.size and (n == 0 or L == 0):
        out.fill(0)
    if not keep:
        return out
    whole = len(chunks) == 1 and cols is not None and cols.nbytes <= _KEEP_COLUMNS_BYTES
    return out, (Columns(cols) if whole else None)


def _gy_chunk(y, n0, n1):
    """A chunk of a small-side array (B, Cy, *y) as (Cy, B * L), contiguous."""
    b, cy = n1 - n0, y.shape[1]
    return np.ascontiguousarray(y[n0:n1].reshape(b, cy, -1).swapaxes(0, 1)).reshape(cy, -1)


def input_grad(y, w, geo, cz):
    """``z`` (N, Cz, *z) from ``y`` (N, Cy, *y): col2im(W^T @ y), the adjoint of ``forward``
    in ``z``."""
    if not _is_host(y):
        return _device().input_grad(y, w, geo, cz)
    if _winograd_input_grad(geo, cz, y):
        return _input_grad_as_conv(y, w, geo, cz)
    if _rows.applies(geo, cz, y.shape[1], y.dtype):
        return _rows.input_grad(y, w, geo, cz)
    if _flips(geo, cz, y.shape[1]) and _can_flip(geo):
        return _input_grad_as_conv(y, w, geo, cz)
    n, cy = y.shape[:2]
    g = geo.groups
    ck = (cz // g) * geo.taps
    wm = w.reshape(g, cy // g, ck)
    out = np.empty((n, cz) + geo.z, y.dtype)
    L = geo.positions
    for n0, n1 in _chunks(n, cz * geo.taps * L * y.itemsize):
        if n1 == n0:
            break
        gy = _gy_chunk(y, n0, n1)
        cols = cpu.empty((cz * geo.taps, gy.shape[1]), y.dtype)
        og = cy // g
        for gi in range(g):
            _host_gemm(wm[gi], gy[gi * og:(gi + 1) * og], ta=True,
                       out=cols[gi * ck:(gi + 1) * ck])
        out[n0:n1] = _host_col2im(cols, geo, n1 - n0, cz)
    return out


def _flipped_geometry(geo):
    """The geometry of the input gradient as a convolution of ``y`` (``_input_grad_as_conv``)."""
    lo2 = tuple(d * (k - 1) - lo for d, k, lo in zip(geo.d, geo.k, geo.lo))
    return Geometry(geo.y, geo.z, geo.k, (1, 1, 1), geo.d, lo2, geo.groups)


def _winograd_input_grad(geo, cz, y):
    """Whether the input gradient goes as a convolution the Winograd path takes."""
    return _can_flip(geo) and _wino.applies(_flipped_geometry(geo), y.shape[0], y.shape[1], cz,
                                            y.dtype)


def _can_flip(geo):
    return geo.s == (1, 1, 1) and all(lo <= d * (k - 1) for lo, d, k in
                                      zip(geo.lo, geo.d, geo.k))


def _flips(geo, cz, cy):
    """Whether a stride-1 input gradient is computed as a convolution (see below)."""
    return cz > cy


def _input_grad_as_conv(y, w, geo, cz):
    """With stride 1 the input gradient is itself a convolution: of ``y`` padded by
    ``d (k - 1) - lo`` with the weight flipped and its channel dims swapped (per group): im2col
    of ``y`` + GEMM instead of GEMM + col2im into ``z``. The GEMMs do the same work, so what
    decides is the data each moves: ``Cy`` vs ``Cz`` columns per tap and position. Taken when
    ``Cz > Cy`` (measured, 3x3, batch 32: 32 -> 8 channels at 8x8 402 vs 648 us; 8 -> 32:
    646 vs 328, 3 -> 16 at 32x32: 4.6 vs 1.9 ms, level at Cz = Cy), and whenever the flipped
    convolution goes Winograd (``_winograd_input_grad``)."""
    cy, g = w.shape[0], geo.groups
    og, cg = cy // g, cz // g
    flipped = w.reshape((g, og, cg) + geo.k)[..., ::-1, ::-1, ::-1]
    w2 = np.ascontiguousarray(flipped.swapaxes(1, 2)).reshape((cz, og) + geo.k)
    return forward(y, w2, _flipped_geometry(geo))


def grads(z, y, w, geo, need_z, need_w, kept=None):
    """``(input_grad(y, w), weight_grad(z, y))``, None where not needed: a convolution's
    backward. On the CPU the row path shares its layout of ``y`` between the two; ``kept``:
    what ``forward(z, w, geo, keep=True)`` kept of its work on ``z``, reused if given."""
    cz = z.shape[1]
    gz = gw = None
    if need_z and _is_host(z) and _winograd_input_grad(geo, cz, y):
        gz, need_z = _input_grad_as_conv(y, w, geo, cz), False
    if need_w and _is_host(z) and _wino.applies(geo, z.shape[0], cz, y.shape[1], z.dtype):
        gw = _wino.weight_grad(z, y, geo, tuple(w.shape))  # None with a NaN or inf
        need_w = gw is None
    if _is_host(z) and _rows.applies(geo, cz, y.shape[1], z.dtype) and (need_z or need_w):
        gz2, gw2 = _rows.grads(z, y, w, geo, need_z, need_w)
        gz = gz if gz2 is None else gz2
        gw = gw if gw2 is None else gw2
    elif need_z:
        gz = input_grad(y, w, geo, cz)
    if need_w and gw is None:
        cols = kept.cols if isinstance(kept, Columns) else None
        gw = weight_grad(z, y, geo, tuple(w.shape), cols)
    return gz, gw


def weight_grad(z, y, geo, w_shape, cols=None):
    """``w`` of shape ``w_shape`` from ``z`` (N, Cz, *z) and ``y`` (N, Cy, *y):
    sum over the batch of y @ im2col(z)^T, the adjoint of ``forward`` in ``w``. ``cols``: the
    whole batch's im2col(z), if at hand."""
    if not _is_host(z):
        return _device().weight_grad(z, y, geo, w_shape)
    n, cz = z.shape[:2]
    cy, g = w_shape[0], geo.groups
    if _wino.applies(geo, n, cz, cy, z.dtype):
        out = _wino.weight_grad(z, y, geo, w_shape)
        if out is not None:
            return out
    if cols is None and _rows.applies(geo, cz, cy, z.dtype):
        out = _rows.weight_grad(z, y, geo, w_shape)
        if out is not None:
            return out
    ck = (cz // g) * geo.taps
    og = cy // g
    out = np.zeros((g, og, ck), z.dtype)
    L = geo.positions
    given = cols
    for n0, n1 in [(0, n)] if given is not None else _chunks(n, cz * geo.taps * L * z.itemsize):
        if n1 == n0 or L == 0:
            break
        cols = given if given is not None else _host_im2col(z[n0:n1], geo)
        gy = _gy_chunk(y, n0, n1)
        for gi in range(g):
            _host_gemm(gy[gi * og:(gi + 1) * og], cols[gi * ck:(gi + 1) * ck], tb=True,
                       out=out[gi], accumulate=True)
    return out.reshape(w_shape)


# ----------------------------------------------------------------------------- unfold / fold


def unfold(z, geo):
    """F.unfold: (N, C, *z) -> (N, C * K, L)."""
    n, c = z.shape[:2]
    if not _is_host(z):
        return _device().unfold(z, geo)
    if n == 0 or geo.positions == 0:
        return np.zeros((n, c * geo.taps, geo.positions), z.dtype)
    cols = _host_im2col(z, geo)
    return np.ascontiguousarray(cols.reshape(c * geo.taps, n, -1).swapaxes(0, 1))


def fold(cols, geo, c):
    """F.fold: (N, C * K, L) -> (N, C, *z), overlapping taps summed."""
    n = cols.shape[0]
    if not _is_host(cols):
        return _device().fold(cols, geo, c)
    if n == 0 or geo.positions == 0:
        return np.zeros((n, c) + geo.z, cols.dtype)
    flat = np.ascontiguousarray(cols.swapaxes(0, 1)).reshape(c * geo.taps, -1)
    return _host_col2im(flat, geo, n, c)


def _device():
    from . import _conv_device
    return _conv_device
