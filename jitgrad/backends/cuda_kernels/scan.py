"""Prefix scans on the device: cumulative sum / product along any set of dimensions, inclusive
or exclusive, forward or reversed.

One block per row (grid-stride over rows). A row is walked in chunks of ``BLOCK`` elements: every
thread loads one element, the block scans the chunk in shared memory (Hillis-Steele: ``log2
BLOCK`` steps, each reading ``sm[tid - off]`` before a barrier and writing after it), adds the
running ``carry`` of the previous chunks and writes; the carry then grows by the chunk's total
(``sm[BLOCK-1]``, read by every thread into its own register before the next chunk's loads).
Hillis-Steele does ``O(n log n)`` work instead of Blelloch's ``O(n)``, but has half the barriers
and no bank-conflict padding; at one block per row and ``BLOCK <= 256`` that is the better trade.

Input *and* output are strided views (``View`` strides/offset in elements), so

* a scan along a non-trailing dim needs no transpose copy,
* a *reversed* scan is the same kernel on both views with the scanned dims' strides negated and
  the offsets moved to their last element (reversing every scanned dim reverses their C order),
  which is what the cumsum backward (``flip(cumsum(flip(g)))``) and the "product of all other
  elements" of the prod backward need, without a flip copy;
* the scanned "row" may span several dims (flat C-order index over them), like the reductions.

Short rows (``k <= 32``; 4 under the simulator) and scans along an outer dim with many rows use a
second kernel instead: one *thread* per row, folding sequentially (grid-stride over rows). A block
per 2-element row would idle most of its threads at barriers; and along an outer dim adjacent
threads walk adjacent columns, so the reads are coalesced (PyTorch's ``scan_outer_dim`` does the
same). Both kernels take the same arguments.
"""
from __future__ import annotations

import math

import numpy as np

from ..cuda_env import device_jit, kernel_jit
from .common import (
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
from .reduce import _COMBINE, _axes, _identity

__all__ = ["make_scan_kernel", "make_seq_scan_kernel", "scan", "cumsum", "cumprod"]

_cache: dict = {}


@device_jit
def _logaddexp(a, b):
    # log(exp(a) + exp(b)) without overflow; two equal infinities give themselves (not NaN)
    m = a if a > b else b
    if a == b and a - a != a - a:
        return a
    if m != m:
        return m
    return m + math.log1p(math.exp(-abs(a - b)))


# scans beyond the reductions' combines: logcumsumexp's running log-sum-exp (identity -inf)
_SCAN_COMBINE = {"logaddexp": _logaddexp}


def _scan_identity(op, acc_dtype):
    """The fold's identity: 0 / 1 for sum / prod, the lowest (highest) value for a running max
    (min), -inf for logaddexp."""
    if op == "logaddexp":
        return -math.inf
    return _identity(op, acc_dtype)


def make_scan_kernel(op: str, acc_dtype, tpb: int, exclusive: bool):
    """``(pyfunc, kernel)`` of the ``op`` (sum/prod) scan accumulating in ``acc_dtype``.

    Signature: ``(x, xoff, kshape, kxst, rshape, rxst, out, ooff, kost, rost, m_total,
    k_total)``: row ``m`` (C-order over ``kshape``) of ``k_total`` elements (C-order over
    ``rshape``), read at ``x[xoff + kxst·m + rxst·r]`` and written at ``out[ooff + ...]``.
    ``exclusive``: element ``r`` gets the fold of elements ``< r`` (the identity for ``r = 0``).
    """
    key = (op, np.dtype(acc_dtype).str, tpb, exclusive)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    acc = scalar_type(acc_dtype)
    combine = _SCAN_COMBINE.get(op) or _COMBINE[op]
    init = _scan_identity(op, acc_dtype)
    last = tpb - 1

    def scan_rows(x, xoff, kshape, kxst, rshape, rxst, out, ooff, kost, rost, m_total,
                  k_total):
        sm = cuda.shared.array(tpb, acc)
        tid = cuda.threadIdx.x
        for m in range(cuda.blockIdx.x, m_total, cuda.gridDim.x):
            xbase = xoff + offset_of(m, kshape, kxst)
            obase = ooff + offset_of(m, kshape, kost)
            carry = acc(init)
            for c0 in range(0, k_total, tpb):
                r = c0 + tid
                a = acc(init)
                if r < k_total:
                    a = acc(x[xbase + offset_of(r, rshape, rxst)])
                sm[tid] = a
                cuda.syncthreads()
                off = 1
                while off < tpb:  # Hillis-Steele: sm[tid] = fold(sm[tid-2off+1 .. tid])
                    if tid >= off:
                        a = combine(sm[tid - off], a)
                    cuda.syncthreads()
                    sm[tid] = a
                    cuda.syncthreads()
                    off *= 2
                if r < k_total:
                    if exclusive:
                        v = carry
                        if tid > 0:
                            v = combine(carry, sm[tid - 1])
                    else:
                        v = combine(carry, a)
                    out[obase + offset_of(r, rshape, rost)] = v
                carry = combine(carry, sm[last])
                cuda.syncthreads()  # everyone has read sm[last] before the next chunk writes

    hit = _cache[key] = (scan_rows, kernel_jit(scan_rows))
    return hit


def make_seq_scan_kernel(op: str, acc_dtype, exclusive: bool):
    """``(pyfunc, kernel)``: the same scan as :func:`make_scan_kernel` (same signature), one
    thread per row."""
    key = ("seq", op, np.dtype(acc_dtype).str, exclusive)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    acc = scalar_type(acc_dtype)
    combine = _SCAN_COMBINE.get(op) or _COMBINE[op]
    init = _scan_identity(op, acc_dtype)

    def scan_seq(x, xoff, kshape, kxst, rshape, rxst, out, ooff, kost, rost, m_total, k_total):
        for m in range(cuda.grid(1), m_total, cuda.gridsize(1)):
            xbase = xoff + offset_of(m, kshape, kxst)
            obase = ooff + offset_of(m, kshape, kost)
            carry = acc(init)
            for r in range(k_total):
                v = acc(x[xbase + offset_of(r, rshape, rxst)])
                if exclusive:
                    out[obase + offset_of(r, rshape, rost)] = carry
                    carry = combine(carry, v)
                else:
                    carry = combine(carry, v)
                    out[obase + offset_of(r, rshape, rost)] = carry

    hit = _cache[key] = (scan_seq, kernel_jit(scan_seq))
    return hit


# ----------------------------------------------------------------------------- host side

SEQ_MAX, SIM_SEQ_MAX = 32, 4  # rows up to this long: one thread per row
OUTER_ROWS = 4096  # this many rows along an outer dim (unit-stride kept dim): one thread per row


def _use_threads(k_total, m_total, kept_strides):
    from ..cuda_env import SIMULATOR
    if k_total <= (SIM_SEQ_MAX if SIMULATOR else SEQ_MAX):
        return True
    return m_total >= OUTER_ROWS and any(abs(s) == 1 for s in kept_strides)



def _split(shape, strides, offset, axes, reverse):
    """(kept strides, scanned strides, offset) with the scanned dims flipped for ``reverse``."""
    rst = [strides[d] for d in axes]
    if reverse:
        offset += sum((shape[d] - 1) * strides[d] for d in axes if shape[d] > 0)
        rst = [-s for s in rst]
    kst = [strides[d] for d in range(len(shape)) if d not in axes]
    return kst, rst, offset


@half_as_float32
def scan(x, dim, op="sum", dtype=None, exclusive=False, reverse=False, kernel=None):
    """Cumulative ``op`` (sum/prod) of ``x`` (View or device array) over ``dim`` (int, tuple of
    dims scanned in C order, or None = all): a fresh C-contiguous array of ``x``'s shape.

    ``dtype`` is the accumulation and output dtype (default: the input's for floats, int64 for
    integers and bools, as ``torch.cumsum``). ``kernel`` forces ``"block"`` (block per row) or
    ``"thread"`` (thread per row); by default the row length and layout choose."""
    from .. import cuda as backend
    v = as_view(x)
    axes = _axes(dim, v.ndim)
    if dtype is None:
        dtype = v.dtype if v.dtype.kind == "f" else np.dtype(np.int64)
    dtype = np.dtype(dtype)
    out = backend.empty(v.shape, dtype)
    kept = [d for d in range(v.ndim) if d not in axes]
    m_total, k_total = prod(v.shape[d] for d in kept), prod(v.shape[d] for d in axes)
    if m_total == 0 or k_total == 0:
        return out
    kxs, rxs, xoff = _split(v.shape, v.strides, v.offset, axes, reverse)
    kos, ros, ooff = _split(v.shape, c_strides(v.shape), 0, axes, reverse)
    if kernel is None:
        kernel = "thread" if _use_threads(k_total, m_total, kxs) else "block"
    kshape, kxs = pad([v.shape[d] for d in kept], kxs)
    _, kos = pad([v.shape[d] for d in kept], kos)
    rshape, rxs = pad([v.shape[d] for d in axes], rxs)
    _, ros = pad([v.shape[d] for d in axes], ros)
    args = (v.base, np.int64(xoff), kshape, kxs, rshape, rxs, out.reshape(v.size),
            np.int64(ooff), kos, ros, np.int64(m_total), np.int64(k_total))
    if kernel == "thread":
        _, kern = make_seq_scan_kernel(op, dtype, bool(exclusive))
        backend.launch_flat(kern, m_total, args)
        return out
    tpb = block_size(k_total)
    _, kern = make_scan_kernel(op, dtype, tpb, bool(exclusive))
    backend.launch_kernel(kern, max(1, min(m_total, max_blocks())), tpb, args)
    return out


def cumsum(x, dim, dtype=None, reverse=False):
    return scan(x, dim, "sum", dtype, reverse=reverse)


def cumprod(x, dim, dtype=None, reverse=False):
    return scan(x, dim, "prod", dtype, reverse=reverse)
