"""gather / scatter-add on the device (and index_select / index_add, which are the same kernels
with a broadcast 1-D index).

``gather(x, dim, index)[p] = x[p with p[dim] := index[p]]`` over the positions ``p`` of
``index``; ``scatter_add(dst, dim, index, src)`` adds ``src[p]`` into
``dst[p with p[dim] := index[p]]`` with atomic adds, so repeated indices accumulate (the VJP of a
gather, of ``index_select`` and of embedding lookups).

Every kernel checks its indices with ``bounds.checked_index`` against the caller's ``check``
(``(flag, chk)`` from ``bounds.check_args``: which error, whether negatives wrap): an index out
of range is skipped (a gather writes 0) and reported at the next synchronizing point, as
PyTorch's device-side asserts are. ``check=None``: indices jitgrad made itself (negatives wrap,
nothing reported).
"""
from __future__ import annotations

import numpy as np

from ..cuda_env import device_jit, kernel_jit
from . import bounds
from .common import F16, View, as_view, cuda, pad, scalar_type, to_float32

__all__ = ["gather", "scatter_add", "scatter", "index_select", "index_add", "index_copy",
           "make_gather_kernel", "make_scatter_add_kernel", "make_scatter_kernel"]

_gather_cache: dict = {}
_scatter_cache: dict = {}


@device_jit
def _offsets(r, shape, istrides, xstrides, dim, xsize):
    """(index offset, x offset without the ``dim`` term, raw coordinate) of position r."""
    ioff = 0
    xoff = 0
    for d in range(len(shape) - 1, -1, -1):
        s = shape[d]
        c = r % s
        r //= s
        ioff += c * istrides[d]
        if d != dim:
            xoff += c * xstrides[d]
    return ioff, xoff


def make_gather_kernel(dtype):
    """``(pyfunc, kernel)``; signature ``(x, x_off, xstrides, xsize, idx, i_off, shape,
    istrides, dim, n, out, flag, chk)``: ``out`` (flat, ``n`` elements) has the index's
    ``shape``; ``flag, chk``: the index check (``bounds``)."""
    key = np.dtype(dtype).str
    hit = _gather_cache.get(key)
    if hit is not None:
        return hit

    ty = scalar_type(dtype)

    def gather_flat(x, x_off, xstrides, xsize, idx, i_off, shape, istrides, dim, n, out, flag,
                    chk):
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            ioff, xoff = _offsets(i, shape, istrides, xstrides, dim, xsize)
            j = bounds.checked_index(idx[i_off + ioff], xsize, flag, chk)
            if j < 0:
                out[i] = ty(0)
            else:
                out[i] = x[x_off + xoff + j * xstrides[dim]]

    hit = _gather_cache[key] = (gather_flat, kernel_jit(gather_flat))
    return hit


def make_scatter_add_kernel(dtype, op="add"):
    """``(pyfunc, kernel)``; signature ``(dst, dstrides, dsize, idx, i_off, shape, istrides,
    src, s_off, sstrides, dim, n, alpha, flag, chk)``: ``dst`` is the flat contiguous
    destination. ``op``: ``add`` (``src * alpha``), ``max``/``min`` (scatter_reduce's
    amax/amin; ``alpha`` unused), ``nan`` (store src's NaNs: the second amax/amin pass)."""
    key = (np.dtype(dtype).str, op)
    hit = _scatter_cache.get(key)
    if hit is not None:
        return hit
    ty = scalar_type(dtype)

    if op == "add":
        def scatter_add_flat(dst, dstrides, dsize, idx, i_off, shape, istrides, src, s_off,
                             sstrides, dim, n, alpha, flag, chk):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                ioff, doff = _offsets(i, shape, istrides, dstrides, dim, dsize)
                soff, _ = _offsets(i, shape, sstrides, dstrides, dim, dsize)
                j = bounds.checked_index(idx[i_off + ioff], dsize, flag, chk)
                if j < 0:
                    continue
                cuda.atomic.add(dst, doff + j * dstrides[dim], ty(src[s_off + soff] * alpha))
        fn = scatter_add_flat
    elif op == "max":
        def scatter_max_flat(dst, dstrides, dsize, idx, i_off, shape, istrides, src, s_off,
                             sstrides, dim, n, alpha, flag, chk):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                ioff, doff = _offsets(i, shape, istrides, dstrides, dim, dsize)
                soff, _ = _offsets(i, shape, sstrides, dstrides, dim, dsize)
                j = bounds.checked_index(idx[i_off + ioff], dsize, flag, chk)
                if j < 0:
                    continue
                cuda.atomic.max(dst, doff + j * dstrides[dim], ty(src[s_off + soff]))
        fn = scatter_max_flat
    elif op == "nan":
        # after an amax/amin pass: a NaN in src wins (PyTorch propagates it; atomic max/min
        # may ignore it), written once that pass has finished (stream order)
        def scatter_nan_flat(dst, dstrides, dsize, idx, i_off, shape, istrides, src, s_off,
                             sstrides, dim, n, alpha, flag, chk):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                ioff, doff = _offsets(i, shape, istrides, dstrides, dim, dsize)
                soff, _ = _offsets(i, shape, sstrides, dstrides, dim, dsize)
                j = bounds.checked_index(idx[i_off + ioff], dsize, flag, chk)
                v = src[s_off + soff]
                if j >= 0 and v != v:
                    dst[doff + j * dstrides[dim]] = ty(v)
        fn = scatter_nan_flat
    else:
        def scatter_min_flat(dst, dstrides, dsize, idx, i_off, shape, istrides, src, s_off,
                             sstrides, dim, n, alpha, flag, chk):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                ioff, doff = _offsets(i, shape, istrides, dstrides, dim, dsize)
                soff, _ = _offsets(i, shape, sstrides, dstrides, dim, dsize)
                j = bounds.checked_index(idx[i_off + ioff], dsize, flag, chk)
                if j < 0:
                    continue
                cuda.atomic.min(dst, doff + j * dstrides[dim], ty(src[s_off + soff]))
        fn = scatter_min_flat

    hit = _scatter_cache[key] = (fn, kernel_jit(fn))
    return hit


_scatter_set_cache: dict = {}


def make_scatter_kernel(dtype):
    """``scatter_add``'s plain-store twin (``torch.scatter``): same signature without ``alpha``.
    Which of several writes to one element wins is unspecified, as in PyTorch on CUDA."""
    key = np.dtype(dtype).str
    hit = _scatter_set_cache.get(key)
    if hit is not None:
        return hit
    ty = scalar_type(dtype)
    is_bool = np.dtype(dtype).kind == "b"

    def scatter_flat(dst, dstrides, dsize, idx, i_off, shape, istrides, src, s_off, sstrides,
                     dim, n, flag, chk):
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            ioff, doff = _offsets(i, shape, istrides, dstrides, dim, dsize)
            soff, _ = _offsets(i, shape, sstrides, dstrides, dim, dsize)
            j = bounds.checked_index(idx[i_off + ioff], dsize, flag, chk)
            if j < 0:
                continue
            v = src[s_off + soff]
            if is_bool:
                dst[doff + j * dstrides[dim]] = v != 0
            else:
                dst[doff + j * dstrides[dim]] = ty(v)

    hit = _scatter_set_cache[key] = (scatter_flat, kernel_jit(scatter_flat))
    return hit


def _dim(dim, ndim):
    return int(dim) % max(ndim, 1)


def _check(check):
    return bounds.unchecked() if check is None else check


def gather(x, dim, index, check=None):
    """``torch.gather(x, dim, index)``: a new contiguous array of ``index``'s shape."""
    from .. import cuda as backend
    vx, vi = as_view(x), as_view(index)
    d = _dim(dim, vx.ndim)
    out = backend.empty(vi.shape, vx.dtype)
    n = vi.size
    if n:
        nd = max(vx.ndim, 1)
        shape, istrides = pad(vi.shape, vi.strides, nd)
        _, xstrides = pad(vx.shape, vx.strides, nd)
        xsize = vx.shape[d] if vx.ndim else 1
        _, kern = make_gather_kernel(vx.dtype)
        backend.launch_flat(kern, n, (vx.base, np.int64(vx.offset), xstrides, np.int64(xsize),
                                      vi.base, np.int64(vi.offset), shape, istrides,
                                      np.int64(d), np.int64(n),
                                      out.reshape(n)) + _check(check))
    return out


def scatter_add(dst, dim, index, src, alpha=1, check=None, op="add"):
    """``dst.scatter_add_(dim, index, src * alpha)`` in place on the contiguous device array
    ``dst``; returns ``dst``. ``op="max"/"min"``: scatter_reduce's amax/amin instead."""
    from .. import cuda as backend
    vd, vi, vs = as_view(dst), as_view(index), as_view(src)
    if isinstance(dst, View) or not dst.is_c_contiguous():
        raise ValueError("scatter_add writes into a contiguous device array")
    if vd.dtype == F16:  # accumulate in float32 (no float16 atomics), round once into dst
        from .layout import copy_into
        acc = scatter_add(to_float32(dst), dim, index, vs if vs.dtype != F16 else
                          to_float32(vs), alpha, check, op)
        copy_into(vd, acc)
        return dst
    d = _dim(dim, vd.ndim)
    n = vi.size
    if n:
        nd = max(vd.ndim, 1)
        shape, istrides = pad(vi.shape, vi.strides, nd)
        _, sstrides = pad(vs.shape, vs.strides, nd)
        _, dstrides = pad(vd.shape, vd.strides, nd)
        dsize = vd.shape[d] if vd.ndim else 1
        _, kern = make_scatter_add_kernel(vd.dtype, op)
        backend.launch_flat(kern, n, (vd.base, dstrides, np.int64(dsize), vi.base,
                                      np.int64(vi.offset), shape, istrides, vs.base,
                                      np.int64(vs.offset), sstrides, np.int64(d), np.int64(n),
                                      vd.dtype.type(alpha)) + _check(check))
    return dst


def scatter(dst, dim, index, src, check=None):
    """``dst.scatter_(dim, index, src)`` in place on the contiguous device array ``dst``
    (``src``: a View/array at least as large as ``index``, or a 1-element View expanded to the
    index's shape for a scalar value); returns ``dst``."""
    from .. import cuda as backend
    vd, vi, vs = as_view(dst), as_view(index), as_view(src)
    if isinstance(dst, View) or not dst.is_c_contiguous():
        raise ValueError("scatter writes into a contiguous device array")
    d = _dim(dim, vd.ndim)
    n = vi.size
    if n:
        nd = max(vd.ndim, 1)
        shape, istrides = pad(vi.shape, vi.strides, nd)
        _, sstrides = pad(vs.shape, vs.strides, nd)
        _, dstrides = pad(vd.shape, vd.strides, nd)
        dsize = vd.shape[d] if vd.ndim else 1
        _, kern = make_scatter_kernel(vd.dtype)
        backend.launch_flat(kern, n, (vd.base, dstrides, np.int64(dsize), vi.base,
                                      np.int64(vi.offset), shape, istrides, vs.base,
                                      np.int64(vs.offset), sstrides, np.int64(d), np.int64(n))
                          + _check(check))
    return dst


def _broadcast_index(index, shape, dim):
    """A 1-D index as a View of ``shape`` that varies along ``dim`` only."""
    vi = as_view(index)
    if vi.ndim != 1:
        raise ValueError("index_select/index_add take a 1-D index")
    strides = [0] * len(shape)
    strides[dim] = vi.strides[0]
    return View(vi.base, shape, strides, vi.offset)


def index_select(x, dim, index, check=None):
    """``torch.index_select(x, dim, index)`` for a 1-D integer index."""
    vx = as_view(x)
    d = _dim(dim, vx.ndim)
    shape = list(vx.shape)
    shape[d] = as_view(index).size
    return gather(vx, d, _broadcast_index(index, tuple(shape), d), check)


def index_add(dst, dim, index, src, alpha=1, check=None):
    """``dst.index_add_(dim, index, src, alpha=alpha)`` in place (embedding backward is
    ``index_add(zeros, 0, ids, g)``)."""
    vs = as_view(src)
    d = _dim(dim, len(dst.shape))
    return scatter_add(dst, d, _broadcast_index(index, vs.shape, d), vs, alpha, check)


def index_copy(dst, dim, index, src, check=None):
    """``dst.index_copy_(dim, index, src)`` (and index_fill_ with an expanded 1-element
    ``src``) in place: the scatter kernel over the 1-D index broadcast along ``dim``."""
    vs = as_view(src)
    d = _dim(dim, len(dst.shape))
    return scatter(dst, d, _broadcast_index(index, vs.shape, d), vs, check)

