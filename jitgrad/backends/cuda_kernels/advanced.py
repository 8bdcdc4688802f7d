"""Advanced indexing on the device: ``x[idx]``, ``x[mask]``, ``x[i, :, j] = v`` and their
gradients (index_put with accumulate), plus ``nonzero`` (stream compaction).

Design: every advanced key is reduced *once* to one int64 array ``lin`` of the broadcast index
shape ``B``: the C-order linear position inside the sub-space of the advanced dims (index arrays
and mask dims). ``lin = sum_j wrap(I_j) * c_j`` (``c_j`` = product of the later advanced sizes;
a mask contributes the flat C-order positions of its True elements, which already are linear
positions over the mask's dims). The read/write kernels then decode ``lin`` with
``offset_of(lin, advanced sizes, advanced strides)``, so the same ``lin`` serves the forward on a
strided input, the gradient written into fresh contiguous zeros, CopySlices' mask and double
backward — only the strides change (:meth:`AdvancedIndex.geometry`).

``nonzero_positions`` needs the number of True elements to size its output: that is one 8-byte
device->host read (counted in ``backends.cuda.stats``), the only transfer of this module —
PyTorch synchronizes for it too. The compaction is the portable version: ``nchunks`` threads
count their own contiguous chunk, one thread scans the counts, then the threads write their
positions in order (stable, like NumPy). A block-level scan (CUB) would be the fast path.

Device index arrays are checked by the linearization kernel (``bounds.checked_index``, negatives
wrap once as in PyTorch): an out-of-range index points at element 0 instead and is reported at
the next synchronizing point with PyTorch's IndexError (docs/cuda-tensors.md).
"""
from __future__ import annotations

import numpy as np

from . import bounds
from .common import (
    F16,
    SIMULATOR,
    View,
    as_view,
    c_strides,
    cuda,
    offset_of,
    pad,
    prod,
    scalar_type,
    to_float32,
)

__all__ = ["AdvancedIndex", "nonzero_positions", "unravel", "make_linear_kernel",
           "make_take_kernel", "make_put_kernel", "make_count_kernel", "make_scan_kernel",
           "make_positions_kernel", "make_unravel_kernel"]

_cache: dict = {}


def _cached(key, build):
    hit = _cache.get(key)
    if hit is None:
        from ..cuda_env import kernel_jit
        pyfunc = build()
        hit = _cache[key] = (pyfunc, kernel_jit(pyfunc))
    return hit


# ----------------------------------------------------------------------------- kernels


def make_linear_kernel():
    """``lin[i] (+)= wrap(idx[ioff + offset_of(i, B, ist)], size) * c`` (``first``: overwrite);
    ``flag, chk``: the bounds check (an out-of-range index counts as 0 and is reported)."""
    def build():
        i64 = scalar_type(np.int64)

        def adv_linear(lin, idx, ioff, bshape, ist, size, c, first, n, flag, chk):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                j = bounds.checked_index(i64(idx[ioff + offset_of(i, bshape, ist)]), size, flag,
                                         chk)
                if j < 0:
                    j = 0
                v = j * c
                if first == 0:
                    v += lin[i]
                lin[i] = v
        return adv_linear
    return _cached("linear", build)


def make_take_kernel(dtype):
    """``out[i] = x[xoff + offset_of(i, O, xst) + offset_of(lin[offset_of(i, O, ost)], asz,
    ast)]``: ``xst`` are x's strides of the basic output dims (0 on B dims), ``ost`` lin's
    strides (0 off B dims)."""
    def build():
        def adv_take(x, xoff, oshape, xst, lin, ost, asz, ast, n, out):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                r = lin[offset_of(i, oshape, ost)]
                out[i] = x[xoff + offset_of(i, oshape, xst) + offset_of(r, asz, ast)]
        return adv_take
    return _cached(("take", np.dtype(dtype).str), build)


def make_put_kernel(dtype, accumulate):
    """The write twin of ``adv_take``: ``dst[p] = src`` or (``accumulate``) ``atomic.add``, so
    repeated indices sum (index_put_(accumulate=True), the VJP of ``x[idx]``). Without
    ``accumulate``, which of several writes to one element wins is unspecified (as in PyTorch)."""
    dtype = np.dtype(dtype)

    def build():
        ty = scalar_type(dtype)
        is_bool = dtype.kind == "b"

        if accumulate:
            def adv_put_add(dst, doff, oshape, dst_st, lin, ost, asz, ast, src, soff, sst, n):
                for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                    r = lin[offset_of(i, oshape, ost)]
                    p = doff + offset_of(i, oshape, dst_st) + offset_of(r, asz, ast)
                    cuda.atomic.add(dst, p, ty(src[soff + offset_of(i, oshape, sst)]))
            return adv_put_add

        def adv_put(dst, doff, oshape, dst_st, lin, ost, asz, ast, src, soff, sst, n):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                r = lin[offset_of(i, oshape, ost)]
                p = doff + offset_of(i, oshape, dst_st) + offset_of(r, asz, ast)
                v = src[soff + offset_of(i, oshape, sst)]
                if is_bool:
                    dst[p] = v != 0
                else:
                    dst[p] = ty(v)
        return adv_put
    return _cached(("put", dtype.str, bool(accumulate)), build)


def make_count_kernel():
    """``counts[c]`` = nonzeros of x's C-order elements ``[c*chunk, (c+1)*chunk)``."""
    def build():
        def nz_count(x, xoff, shape, st, n, chunk, nchunks, counts):
            for c in range(cuda.grid(1), nchunks, cuda.gridsize(1)):
                s = 0
                for i in range(c * chunk, min(n, (c + 1) * chunk)):
                    if x[xoff + offset_of(i, shape, st)] != 0:
                        s += 1
                counts[c] = s
        return nz_count
    return _cached("count", build)


def make_scan_kernel():
    """One thread: exclusive prefix sum of ``counts`` in place, total in ``total[0]``."""
    def build():
        def nz_scan(counts, nchunks, total):
            if cuda.grid(1) == 0:
                acc = 0
                for c in range(nchunks):
                    v = counts[c]
                    counts[c] = acc
                    acc += v
                total[0] = acc
        return nz_scan
    return _cached("scan", build)


def make_positions_kernel():
    """Each chunk writes the C-order positions of its nonzeros from its scanned start."""
    def build():
        def nz_positions(x, xoff, shape, st, n, chunk, nchunks, starts, pos):
            for c in range(cuda.grid(1), nchunks, cuda.gridsize(1)):
                k = starts[c]
                for i in range(c * chunk, min(n, (c + 1) * chunk)):
                    if x[xoff + offset_of(i, shape, st)] != 0:
                        pos[k] = i
                        k += 1
        return nz_positions
    return _cached("positions", build)


def make_unravel_kernel():
    """``out[i, d]`` = coordinate ``d`` of the C-order position ``pos[i]`` in ``shape``."""
    def build():
        def nz_unravel(pos, shape, n, out):
            nd = len(shape)
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                r = pos[i]
                for d in range(nd - 1, -1, -1):
                    out[i * nd + d] = r % shape[d]
                    r //= shape[d]
        return nz_unravel
    return _cached("unravel", build)


# ----------------------------------------------------------------------------- nonzero

#: Upper bound on compaction chunks (one serial scan step each); tiny under the simulator so
#: chunks hold several elements at test sizes.
MAX_CHUNKS = 32 if SIMULATOR else 4096


def nonzero_positions(x):
    """C-order positions (int64, 1-D device array) of the nonzero elements of the View/array
    ``x`` (NaN counts as nonzero). One counted 8-byte device->host read: the count."""
    from .. import cuda as backend
    v = as_view(x)
    n = v.size
    if n == 0:
        return backend.empty((0,), np.int64)
    nchunks = min(n, MAX_CHUNKS)
    chunk = -(-n // nchunks)
    nchunks = -(-n // chunk)
    shape, st = pad(v.shape, v.strides)
    counts = backend.empty((nchunks,), np.int64)
    total = backend.empty((1,), np.int64)
    args = (v.base, np.int64(v.offset), shape, st, np.int64(n), np.int64(chunk),
            np.int64(nchunks))
    backend.launch_flat(make_count_kernel()[1], nchunks, args + (counts,))
    backend.launch_kernel(make_scan_kernel()[1], 1, 1, (counts, np.int64(nchunks), total))
    count = int(backend.to_host(total)[0])  # the documented host read
    pos = backend.empty((count,), np.int64)
    if count:
        backend.launch_flat(make_positions_kernel()[1], nchunks, args + (counts, pos))
    return pos


def unravel(pos, shape):
    """``(len(pos), len(shape))`` int64 coordinates of the C-order positions ``pos``."""
    from .. import cuda as backend
    shape = tuple(int(s) for s in shape)
    n = int(pos.shape[0])
    out = backend.empty((n * len(shape),), np.int64)
    if n:
        backend.launch_flat(make_unravel_kernel()[1], n, (pos, shape, np.int64(n), out))
    return out.reshape(n, len(shape)) if n else backend.empty((0, len(shape)), np.int64)


# ----------------------------------------------------------------------------- the plan


def _broadcast(shapes):
    return tuple(int(s) for s in np.broadcast_shapes(*shapes))


class AdvancedIndex:
    """A normalized advanced key for tensors of one shape. ``entries`` (Ellipsis expanded, every
    dim covered) are ``("slice", slice)``, ``("none", None)``, ``("int", i)`` (in range),
    ``("index", int View/array)`` (one dim) and ``("positions", (pos, k))`` (a k-dim mask as
    C-order positions of its True elements). ``error``: (exception, template) reported for an
    out-of-range ``index`` entry (``bounds``; None: unchecked). NumPy's placement rule: the
    broadcast index dims
    ``B`` replace the advanced components when those (ints included) are adjacent, else they
    come first."""

    def __init__(self, shape, entries, error=None):
        from .. import cuda as backend
        self.shape = tuple(int(s) for s in shape)
        self.seq, comps, adims = [], [], []
        dim = 0
        for kind, v in entries:
            if kind == "index":
                comps.append((as_view(v), len(adims), 1))
                adims.append(dim)
                dim += 1
            elif kind == "positions":
                pos, k = v
                comps.append((as_view(pos), len(adims), k))
                adims += range(dim, dim + k)
                dim += k
            elif kind in ("int", "slice"):
                self.seq.append((kind, dim, v))
                dim += 1
                continue
            self.seq.append((kind, None, v))
        self.adims = tuple(adims)
        asz = [self.shape[d] for d in adims]
        self.bshape = _broadcast([c[0].shape for c in comps])
        at = [i for i, e in enumerate(self.seq) if e[0] in ("index", "positions", "int")]
        self.adjacent = at == list(range(at[0], at[-1] + 1))
        n = prod(self.bshape)
        self.lin = backend.empty((n,), np.int64)
        if n:
            bshape = pad(self.bshape, self.bshape)[0]
            for j, (v, first, k) in enumerate(comps):
                e = v.expand(self.bshape)
                _, ist = pad(e.shape, e.strides, len(bshape))
                # PyTorch numbers the dimension among the index tensors (``first``)
                check = bounds.check_args(error, True, first) if error is not None and k == 1 \
                    else bounds.unchecked()
                backend.launch_flat(make_linear_kernel()[1], n, (
                    self.lin, e.base, np.int64(e.offset), bshape, ist,
                    np.int64(prod(asz[first:first + k])), np.int64(prod(asz[first + k:])),
                    np.int64(j == 0), np.int64(n)) + check)

    def out_shape(self):
        return self.geometry(c_strides(self.shape), 0)[0]

    def geometry(self, st, offset):
        """``(out shape, base strides per out dim, lin strides per out dim, advanced sizes,
        advanced strides, base offset)`` of this key on storage of strides ``st``."""
        oshape, xst, ost = [], [], []
        off = int(offset)
        bst = c_strides(self.bshape)
        where = 0 if not self.adjacent else None
        for kind, d, v in self.seq:
            if where is None and kind in ("index", "positions", "int"):
                where = len(oshape)
            if kind == "slice":
                start, stop, step = v.indices(self.shape[d])
                m = len(range(start, stop, step))
                oshape.append(m)
                xst.append(st[d] * step)
                ost.append(0)
                off += start * st[d] if m else 0
            elif kind == "none":
                oshape.append(1)
                xst.append(0)
                ost.append(0)
            elif kind == "int":
                off += (v + self.shape[d] if v < 0 else v) * st[d]
        nb = len(self.bshape)
        oshape[where:where] = self.bshape
        xst[where:where] = [0] * nb
        ost[where:where] = bst
        asz = tuple(self.shape[d] for d in self.adims)
        ast = tuple(int(st[d]) for d in self.adims)
        return tuple(oshape), tuple(xst), tuple(ost), asz, ast, off

    def take(self, x):
        """``x[key]`` as a fresh C-contiguous device array (``x``: a View of ``self.shape``)."""
        from .. import cuda as backend
        v = as_view(x)
        oshape, xst, ost, asz, ast, off = self.geometry(v.strides, v.offset)
        out = backend.empty(oshape, v.dtype)
        n = prod(oshape)
        if n:
            o, xs = pad(oshape, xst)
            _, os_ = pad(oshape, ost)
            backend.launch_flat(make_take_kernel(v.dtype)[1], n, (
                v.base, np.int64(off), o, xs, self.lin, os_, asz, ast, np.int64(n),
                out.reshape(n)))
        return out

    def put(self, dst, src, accumulate=False):
        """``dst[key] = src`` (or ``+=`` with ``accumulate``) in place; ``dst`` a View of
        ``self.shape`` (any strides), ``src`` a View/array broadcastable to the indexed shape
        (cast to dst's dtype). ``ValueError`` when it does not broadcast."""
        from .. import cuda as backend
        if accumulate and dst.dtype == F16:  # accumulate in float32, round once into dst
            from .layout import copy_into
            acc = to_float32(dst)
            self.put(as_view(acc), src, True)
            copy_into(dst, acc)
            return
        oshape, dst_st, ost, asz, ast, off = self.geometry(dst.strides, dst.offset)
        vs = as_view(src).expand(oshape)
        n = prod(oshape)
        if n:
            o, ds = pad(oshape, dst_st)
            _, os_ = pad(oshape, ost)
            _, ss = pad(vs.shape, vs.strides, len(o))
            backend.launch_flat(make_put_kernel(dst.dtype, accumulate)[1], n, (
                dst.base, np.int64(off), o, ds, self.lin, os_, asz, ast, vs.base,
                np.int64(vs.offset), ss, np.int64(n)))


def scalar_view(value, dtype):
    """A 0-d View of a 1-element device array holding ``value`` (filled by a kernel, no
    transfer); it expands to any shape."""
    from .. import cuda as backend
    return View(backend.full((1,), value, dtype), ())
