"""softmax / log_softmax (and their backward) along one dimension, one block per row.

Per row: a shared-memory tree finds the max (NaN propagates), a second tree sums
``exp(x - max)``, then each thread writes its elements. The shift is the max even when it is
infinite, as in PyTorch: a row holding +inf (or only -inf) is all NaN. Rows are addressed
through :class:`View` strides for input and output alike, so a softmax along any dimension is
the last-dimension kernel applied to a permuted view: no transpose copies.

Backward (for the no-``create_graph`` path; with ``create_graph`` the core composes registered
ops instead): ``softmax``: ``gx = y * (g - sum(g * y))``; ``log_softmax``:
``gx = g - exp(y) * sum(g)``.
"""
from __future__ import annotations

import math

import numpy as np

from ..cuda_env import kernel_jit
from .common import (
    View,
    as_view,
    block_size,
    c_strides,
    cuda,
    half_as_float32,
    max_blocks,
    offset_of,
    pad,
    prod,
    scalar_type,
)

__all__ = ["softmax", "log_softmax", "softmax_backward", "log_softmax_backward",
           "make_softmax_kernel", "make_softmax_backward_kernel"]

_fwd_cache: dict = {}
_bwd_cache: dict = {}


def make_softmax_kernel(dtype, tpb: int, log: bool):
    """``(pyfunc, kernel)``; signature ``(x, x_off, lshape, x_lstrides, x_k, out, o_lstrides,
    o_k, rows, k)``: row ``m`` starts at ``offset_of(m, lshape, lstrides)``, its elements are
    ``x_k`` apart."""
    key = (np.dtype(dtype).str, tpb, log)
    hit = _fwd_cache.get(key)
    if hit is not None:
        return hit
    ty = scalar_type(dtype)
    half = tpb // 2
    ninf = -math.inf

    def softmax_rows(x, x_off, lshape, x_lstrides, x_k, out, o_lstrides, o_k, rows, k):
        sm = cuda.shared.array(tpb, ty)
        tid = cuda.threadIdx.x
        for m in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            px = x_off + offset_of(m, lshape, x_lstrides)
            po = offset_of(m, lshape, o_lstrides)
            a = ty(ninf)
            for r in range(tid, k, tpb):
                v = x[px + r * x_k]
                if v != v or v > a:
                    a = v
                    if v != v:
                        break
            sm[tid] = a
            cuda.syncthreads()
            s = half
            while s > 0:
                if tid < s:
                    o = sm[tid + s]
                    if sm[tid] == sm[tid] and (o != o or o > sm[tid]):
                        sm[tid] = o
                cuda.syncthreads()
                s //= 2
            mx = sm[0]
            cuda.syncthreads()
            a = ty(0)
            for r in range(tid, k, tpb):
                a += math.exp(x[px + r * x_k] - mx)
            sm[tid] = a
            cuda.syncthreads()
            s = half
            while s > 0:
                if tid < s:
                    sm[tid] += sm[tid + s]
                cuda.syncthreads()
                s //= 2
            tot = sm[0]
            cuda.syncthreads()
            if log:
                lt = math.log(tot)
                for r in range(tid, k, tpb):
                    out[po + r * o_k] = (x[px + r * x_k] - mx) - lt
            else:
                for r in range(tid, k, tpb):
                    out[po + r * o_k] = math.exp(x[px + r * x_k] - mx) / tot

    hit = _fwd_cache[key] = (softmax_rows, kernel_jit(softmax_rows))
    return hit


def make_softmax_backward_kernel(dtype, tpb: int, log: bool):
    """``(pyfunc, kernel)``; signature ``(y, y_off, g, g_off, lshape, y_lstrides, y_k,
    g_lstrides, g_k, out, o_lstrides, o_k, rows, k)``."""
    key = (np.dtype(dtype).str, tpb, log)
    hit = _bwd_cache.get(key)
    if hit is not None:
        return hit
    ty = scalar_type(dtype)
    half = tpb // 2

    def softmax_backward_rows(y, y_off, g, g_off, lshape, y_lstrides, y_k, g_lstrides, g_k,
                              out, o_lstrides, o_k, rows, k):
        sm = cuda.shared.array(tpb, ty)
        tid = cuda.threadIdx.x
        for m in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            py = y_off + offset_of(m, lshape, y_lstrides)
            pg = g_off + offset_of(m, lshape, g_lstrides)
            po = offset_of(m, lshape, o_lstrides)
            a = ty(0)
            for r in range(tid, k, tpb):
                if log:
                    a += g[pg + r * g_k]
                else:
                    a += g[pg + r * g_k] * y[py + r * y_k]
            sm[tid] = a
            cuda.syncthreads()
            s = half
            while s > 0:
                if tid < s:
                    sm[tid] += sm[tid + s]
                cuda.syncthreads()
                s //= 2
            tot = sm[0]
            cuda.syncthreads()
            for r in range(tid, k, tpb):
                gv = g[pg + r * g_k]
                yv = y[py + r * y_k]
                if log:
                    out[po + r * o_k] = gv - math.exp(yv) * tot
                else:
                    out[po + r * o_k] = yv * (gv - tot)

    hit = _bwd_cache[key] = (softmax_backward_rows, kernel_jit(softmax_backward_rows))
    return hit


def _rows(v: View, dim: int):
    """Leading geometry of the rows of ``v`` along ``dim``: (lshape, lstrides, stride_k)."""
    lead = [d for d in range(v.ndim) if d != dim]
    lshape, lstr = pad([v.shape[d] for d in lead], [v.strides[d] for d in lead])
    return lshape, lstr, v.strides[dim]


def _launch(kern, tpb, rows, args):
    from .. import cuda as backend
    backend.launch_kernel(kern, max(1, min(rows, max_blocks())), tpb, args)


@half_as_float32
def _forward(x, dim, log):
    from .. import cuda as backend
    v = as_view(x)
    if v.ndim == 0:
        out = backend.empty((), v.dtype)
        from .layout import fill
        return fill(out, 0 if log else 1)
    dim = int(dim) % v.ndim
    out = backend.empty(v.shape, v.dtype)
    k = v.shape[dim]
    rows = prod(v.shape) // k if k else 0
    if rows == 0 or k == 0:
        return out
    lshape, x_lst, x_k = _rows(v, dim)
    _, o_lst, o_k = _rows(View(out.reshape(out.size), v.shape, c_strides(v.shape)), dim)
    tpb = block_size(k)
    _, kern = make_softmax_kernel(v.dtype, tpb, log)
    _launch(kern, tpb, rows, (v.base, np.int64(v.offset), lshape, x_lst, np.int64(x_k),
                              out.reshape(out.size), o_lst, np.int64(o_k), np.int64(rows),
                              np.int64(k)))
    return out


def softmax(x, dim=-1):
    """softmax of a float View/device array along ``dim``; a new contiguous array."""
    return _forward(x, dim, False)


def log_softmax(x, dim=-1):
    return _forward(x, dim, True)


@half_as_float32
def _backward(y, g, dim, log):
    from .. import cuda as backend
    vy, vg = as_view(y), as_view(g)
    if vy.shape != vg.shape:
        raise ValueError(f"softmax backward: shapes differ ({vy.shape} and {vg.shape})")
    out = backend.empty(vy.shape, vy.dtype)
    if vy.ndim == 0:
        from .layout import fill
        return fill(out, 0)
    dim = int(dim) % vy.ndim
    k = vy.shape[dim]
    rows = prod(vy.shape) // k if k else 0
    if rows == 0 or k == 0:
        return out
    lshape, y_lst, y_k = _rows(vy, dim)
    _, g_lst, g_k = _rows(vg, dim)
    _, o_lst, o_k = _rows(View(out.reshape(out.size), vy.shape, c_strides(vy.shape)), dim)
    tpb = block_size(k)
    _, kern = make_softmax_backward_kernel(vy.dtype, tpb, log)
    _launch(kern, tpb, rows, (vy.base, np.int64(vy.offset), vg.base, np.int64(vg.offset),
                              lshape, y_lst, np.int64(y_k), g_lst, np.int64(g_k),
                              out.reshape(out.size), o_lst, np.int64(o_k), np.int64(rows),
                              np.int64(k)))
    return out


def softmax_backward(y, g, dim=-1):
    """Input gradient of ``y = softmax(x, dim)`` given the output gradient ``g``."""
    return _backward(y, g, dim, False)


def log_softmax_backward(y, g, dim=-1):
    """Input gradient of ``y = log_softmax(x, dim)`` given the output gradient ``g``."""
    return _backward(y, g, dim, True)
