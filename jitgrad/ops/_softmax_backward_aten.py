"""softmax / log_softmax CPU input gradients in ATen's arithmetic (SoftMaxKernel.cpp; the lane
count follows the host's build like the forward's, ``_softmax_aten._VECTOR_BYTES``: 16 float32
/ 8 float64 lanes on AVX-512, 8 / 4 on AVX2), float32 and float64, for PyTorch's bits.

* softmax, last dim (``_vec_host_softmax_backward_lastdim``): ``sum = map2_reduce_all(g * y,
  +)`` in vec::reduce_all's order (``math._lane_reduce``), each product rounded
  before it is added (measured: no FMA here, unlike the loops below), except the partial last
  vector's, fused into its add for float32 when PyTorch runs on one thread (measured on rows
  of 17: with 2 threads, and for float64, it is rounded, even where the rows are too few to
  be split);
  ``out = (g - sum) * y``;
* softmax, other dims (``_vec_softmax_backward``): per ``(outer, inner)`` position the sum over
  dim from 0 of ``g * y`` (one FMA per step, vector and scalar tail alike), then
  ``out = y * (g - sum)``;
* log_softmax, other dims (``_vec_log_softmax_backward``): ``inner`` in chunks of
  ``max(128 KiB / dim / itemsize, lanes)`` whole vectors; the sum over dim of ``g`` from 0,
  then ``out = g - exp(y) * sum`` as one fused multiply-subtract, SLEEF's exp on the vector
  part of a chunk, glibc's on its last ``size % lanes`` positions.

(log_softmax's last dim is nn/functional/_loss_kernels.log_softmax_rows_backward.)  None of
the others depends on the thread count.
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange

from ..codegen.kcache import njit_cached as njit
from ..math._intrinsics import fma
from ..math._lane_reduce import LANE_DOT, lane_reduce
from ._softmax_aten import _FLAGS, _VECTOR_BYTES, _sexp

__all__ = ["softmax_backward"]

_BLOCK_BYTES = 128 * 1024


@njit(parallel=True, **_FLAGS)
def _softmax_lastdim(y, g, out, fuse_tail):
    for r in prange(y.shape[0]):
        acc = np.empty(_VECTOR_BYTES // y.itemsize, y.dtype)
        s = lane_reduce(g[r], y[r], acc, LANE_DOT, fuse_tail)
        for j in range(y.shape[1]):
            out[r, j] = (g[r, j] - s) * y[r, j]


@njit(parallel=True, **_FLAGS)
def _softmax_dim(y, g, out):
    outer, n, inner = y.shape
    for o in prange(outer):
        sm = np.zeros(inner, y.dtype)
        for d in range(n):
            for k in range(inner):
                sm[k] = fma(g[o, d, k], y[o, d, k], sm[k])
        for d in range(n):
            for k in range(inner):
                out[o, d, k] = y[o, d, k] * (g[o, d, k] - sm[k])


@njit(parallel=True, **_FLAGS)
def _log_softmax_dim(y, g, out, chunk):
    outer, n, inner = y.shape
    w = _VECTOR_BYTES // y.itemsize
    chunks = (inner + chunk - 1) // chunk
    for t in prange(outer * chunks):
        o, c = t // chunks, t % chunks
        start = c * chunk
        size = min(chunk, inner - start)
        vec_end = size - size % w
        sm = np.zeros(size, y.dtype)
        for d in range(n):
            for k in range(size):
                sm[k] = sm[k] + g[o, d, start + k]
        for d in range(n):
            for k in range(size):
                v = y[o, d, start + k]
                e = _sexp(v) if k < vec_end else math.exp(v)
                out[o, d, start + k] = fma(-e, sm[k], g[o, d, start + k])


def softmax_backward(y, g, dim, log, threads=1):
    """The input gradient of softmax (``log=False``) / log_softmax along ``dim`` of non-empty
    float32/float64 host arrays ``y`` (the forward's output) and ``g`` (same shape and dtype);
    log_softmax's last dim is not handled here."""
    y = np.ascontiguousarray(y)
    g = np.ascontiguousarray(g)
    out = np.empty(y.shape, y.dtype)
    n = y.shape[dim]
    if dim == y.ndim - 1 and not log:
        fuse = threads == 1 and y.dtype == np.float32
        _softmax_lastdim(y.reshape(-1, n), g.reshape(-1, n), out.reshape(-1, n), fuse)
        return out
    outer = int(np.prod(y.shape[:dim], dtype=np.int64))
    inner = y.size // (outer * n)
    shape3 = (outer, n, inner)
    if log:
        w = _VECTOR_BYTES // y.itemsize
        chunk = max(_BLOCK_BYTES // n // y.itemsize, w) // w * w
        _log_softmax_dim(y.reshape(shape3), g.reshape(shape3), out.reshape(shape3), chunk)
    else:
        _softmax_dim(y.reshape(shape3), g.reshape(shape3), out.reshape(shape3))
    return out
