"""Matrix products on the device: a tiled shared-memory (batched) matmul.

``C[b] = A[b] @ B[b]`` for every batch index ``b`` of the broadcast batch shape. Each block
computes a ``TILE x TILE`` tile of one output matrix: per step it stages a tile of ``A`` and one
of ``B`` in shared memory (zero-padded at the edges), synchronizes, and accumulates the inner
products from shared memory. Operands are read through :class:`View` strides, so transposed
operands (``g @ b.T`` in the backward pass) and broadcast batches (stride 0) cost no copy. This
is the portable fallback (roughly "kernel 3" of the well-known SGEMM walkthrough; see
NUMBA_NOTES.md): when CuPy is installed on a real GPU, :func:`matmul` hands the product to
cuBLAS instead (``backends/cuda_cublas.py``, which says when it does not).
"""
from __future__ import annotations

import numpy as np

from ..cuda_env import kernel_jit
from .common import (
    SIMULATOR,
    View,
    as_view,
    cuda,
    half_as_float32,
    offset_of,
    pad,
    prod,
    scalar_type,
)

__all__ = ["matmul", "make_matmul_kernel", "TILE", "View"]

TILE = 16
SIM_TILE = 4

_cache: dict = {}


def tile_size() -> int:
    return SIM_TILE if SIMULATOR else TILE


def make_matmul_kernel(dtype, tile: int):
    """``(pyfunc, kernel)``; signature ``(a, a_off, bshape, a_bstrides, a_sm, a_sk, b, b_off,
    b_bstrides, b_sk, b_sn, c, nbatch, m, n, k)``; ``c`` is the flat contiguous output."""
    key = (np.dtype(dtype).str, tile)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    ty = scalar_type(dtype)

    def matmul_tiled(a, a_off, bshape, a_bstrides, a_sm, a_sk, b, b_off, b_bstrides, b_sk, b_sn,
                     c, nbatch, m, n, k):
        sa = cuda.shared.array((tile, tile), ty)
        sb = cuda.shared.array((tile, tile), ty)
        tx = cuda.threadIdx.x
        tyy = cuda.threadIdx.y
        col = cuda.blockIdx.x * tile + tx
        row = cuda.blockIdx.y * tile + tyy
        nsteps = (k + tile - 1) // tile
        for bat in range(cuda.blockIdx.z, nbatch, cuda.gridDim.z):
            pa = a_off + offset_of(bat, bshape, a_bstrides)
            pb = b_off + offset_of(bat, bshape, b_bstrides)
            acc = ty(0)
            for t in range(nsteps):
                ka = t * tile + tx
                if row < m and ka < k:
                    sa[tyy, tx] = a[pa + row * a_sm + ka * a_sk]
                else:
                    sa[tyy, tx] = ty(0)
                kb = t * tile + tyy
                if kb < k and col < n:
                    sb[tyy, tx] = b[pb + kb * b_sk + col * b_sn]
                else:
                    sb[tyy, tx] = ty(0)
                cuda.syncthreads()
                for kk in range(tile):
                    acc += sa[tyy, kk] * sb[kk, tx]
                cuda.syncthreads()
            if row < m and col < n:
                c[(bat * m + row) * n + col] = acc

    hit = _cache[key] = (matmul_tiled, kernel_jit(matmul_tiled))
    return hit


def _broadcast_batch(sa, sb):
    nd = max(len(sa), len(sb))
    sa = (1,) * (nd - len(sa)) + tuple(sa)
    sb = (1,) * (nd - len(sb)) + tuple(sb)
    out = []
    for x, y in zip(sa, sb):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"matmul: batch dimensions {sa} and {sb} do not broadcast")
        out.append(max(x, y))
    return tuple(out)


@half_as_float32
def matmul(a, b):
    """``a @ b`` for a View/device array of rank >= 2 each (batch dims broadcast, NumPy rules).

    1-D operands are the caller's business (``unsqueeze`` them into a View first, as
    ``torch.matmul`` does). Returns a C-contiguous device array of shape ``batch + (m, n)``."""
    from .. import cuda as backend
    va, vb = as_view(a), as_view(b)
    if va.ndim < 2 or vb.ndim < 2:
        raise ValueError("device matmul needs operands of rank >= 2")
    if va.dtype != vb.dtype:
        raise TypeError(f"matmul: dtypes differ ({va.dtype} and {vb.dtype})")
    m, k = va.shape[-2:]
    k2, n = vb.shape[-2:]
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n})")
    batch = _broadcast_batch(va.shape[:-2], vb.shape[:-2])
    ea = va.expand(batch + (m, k))
    eb = vb.expand(batch + (k, n))
    out = backend.empty(batch + (m, n), va.dtype)
    nbatch = prod(batch)
    if out.size == 0:
        return out
    if k == 0:
        from .layout import fill
        fill(out, 0)
        return out
    from .. import cuda_cublas
    if cuda_cublas.usable(va.dtype) and cuda_cublas.gemm(ea, eb, out, nbatch, m, n, k):
        return out
    bshape, a_bst = pad(batch, ea.strides[:-2])
    _, b_bst = pad(batch, eb.strides[:-2])
    tile = tile_size()
    _, kern = make_matmul_kernel(va.dtype, tile)
    grid = ((n + tile - 1) // tile, (m + tile - 1) // tile, max(1, min(nbatch, 65535)))
    backend.launch_kernel(kern, grid, (tile, tile), (
        ea.base, np.int64(ea.offset), bshape, a_bst, np.int64(ea.strides[-2]),
        np.int64(ea.strides[-1]), eb.base, np.int64(eb.offset), b_bst, np.int64(eb.strides[-2]),
        np.int64(eb.strides[-1]), out.reshape(out.size), np.int64(nbatch), np.int64(m),
        np.int64(n), np.int64(k)))
    return out



