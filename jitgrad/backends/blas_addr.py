"""``addr``'s CPU kernel as ATen runs it (aten/src/ATen/native/cpu/LinearAlgebraKernel.cpp,
``addr_kernel`` through ``cpu_kernel_vec``): ``beta * self + alpha * vec1[i] * vec2[j]``
(``alpha * vec1[i] * vec2[j]`` when ``beta == 0``). addr is no BLAS call: the bits depend on
which elements take the vectorized lambda. That one is compiled for the machine's ATen
capability (AVX2/AVX-512: FMA), so ``(alpha * v1) * v2 + beta * self`` contracts to one fma;
the scalar lambda (the remainder of each run shorter than two vectors, and runs whose operands
are neither contiguous nor broadcast along the inner dim) rounds the product and the sum apart.

Which elements those are follows TensorIterator: the output is a fresh C-contiguous matrix, so
the inner dim is the columns (the rows when there is one column); a run is vectorized when
``self`` is contiguous along it (``vec1`` is the one broadcast operand there); at::parallel_for
(OpenMP) splits the ``m * n`` elements into ``min(threads, ceil(numel / 32768))`` equal pieces
from ATen's grain size (32768) on, and each piece starts its runs where it starts, mid-row
included. A column-major ``self`` makes a column-major result whose runs go down the columns."""
from __future__ import annotations

import os

import numpy as np

from ..codegen.kcache import njit_cached
from ..math._intrinsics import fma
from . import cpu

__all__ = ["addr", "vector_bytes"]

GRAIN_SIZE = 32768  # at::internal::GRAIN_SIZE
_vector_bytes = None


def vector_bytes() -> int:
    """Bytes in the ``Vectorized<T>`` of ATen's addr kernel on this CPU: 32 with AVX2+FMA
    (PyTorch 2.13 runs its AVX2 build of the kernel on AVX-512 machines too: runs of two
    vectors are 16 float32 / 8 float64, measured), 0 for ATen's DEFAULT build (no FMA);
    ``ATEN_CPU_CAPABILITY=default`` selects that one, as for PyTorch."""
    global _vector_bytes
    if _vector_bytes is None:
        flags = set()
        try:
            with open("/proc/cpuinfo") as fh:
                for line in fh:
                    if line.startswith("flags"):
                        flags = set(line.split(":", 1)[1].split())
                        break
        except OSError:
            pass
        cap = os.environ.get("ATEN_CPU_CAPABILITY", "").strip().lower()
        _vector_bytes = 32 if {"avx2", "fma"} <= flags and cap != "default" else 0
    return _vector_bytes


@njit_cached(nogil=True)
def _addr_loop(out, s, v1, v2, alpha, beta, by_rows, vectorized, width, piece):
    """Every run of ``out`` ([outer, inner], C-contiguous; transposed when the runs go down
    the columns) in TensorIterator's order: runs start at each outer index and at each piece
    boundary; the first whole pairs of vectors of a run take the vector lambda (one fma), the
    rest the scalar one."""
    outer, inner = out.shape
    total = outer * inner
    start = 0
    while start < total:
        stop = min(total, start + piece)
        pos = start
        while pos < stop:
            o = pos // inner
            c0 = pos - o * inner
            c1 = min(inner, c0 + (stop - pos))
            nvec = ((c1 - c0) // width) * width if vectorized else 0
            # slices from 0: loops LLVM can vectorize (no negative-index checks)
            row, srow = out[o, c0:c1], s[o, c0:c1]
            if not by_rows:
                a = alpha * v1[o]
                v = v2[c0:c1]
                if beta == 0:
                    for c in range(c1 - c0):
                        row[c] = a * v[c]
                else:
                    for c in range(nvec):
                        row[c] = fma(a, v[c], beta * srow[c])
                    for c in range(nvec, c1 - c0):
                        p = a * v[c]
                        row[c] = beta * srow[c] + p
            else:
                w = v2[o]
                v = v1[c0:c1]
                if beta == 0:
                    for c in range(c1 - c0):
                        row[c] = alpha * v[c] * w
                else:
                    for c in range(nvec):
                        row[c] = fma(alpha * v[c], w, beta * srow[c])
                    for c in range(nvec, c1 - c0):
                        p = alpha * v[c] * w
                        row[c] = beta * srow[c] + p
            pos += c1 - c0
        start = stop


def addr(s: np.ndarray, v1: np.ndarray, v2: np.ndarray, alpha, beta, threads: int) -> np.ndarray:
    """``beta * s + alpha * outer(v1, v2)`` for float32/float64 (``s`` broadcast to the result's
    shape, any strides) in ATen's roundings with ``threads`` intra-op threads."""
    m, n = v1.shape[0], v2.shape[0]
    dt = v1.dtype
    s = np.broadcast_to(s, (m, n))
    s0, s1 = s.strides
    # TensorIterator allocates the result in self's dim order: column-major when self's
    # strides (both nonzero) say so; the runs then go down the columns
    column_major = m > 1 and n > 1 and s0 != 0 and s1 != 0 and s0 < s1
    out = cpu.empty((n, m), dt).T if column_major else cpu.empty((m, n), dt)  # pooled
    if out.size == 0:
        return out
    width = 2 * vector_bytes() // dt.itemsize
    by_rows = (n == 1 and m > 1) or column_major
    step = s0 if by_rows else s1
    # cpu_kernel_vec: vectorized when every input is contiguous along the run but one that is
    # broadcast there (vec1 along a row; vec2 down a column)
    vectorized = width > 0 and (step == dt.itemsize or (m == 1 and n == 1))
    numel = m * n
    # TensorIterator::for_each: serial under the grain size or on one thread, else
    # at::parallel_for (OpenMP): min(threads, ceil(numel / grain)) equal pieces
    tasks = 1 if numel < GRAIN_SIZE else max(1, min(threads, -(-numel // GRAIN_SIZE)))
    piece = -(-numel // tasks)
    # the loop walks [outer, inner] C-contiguous arrays (the compiled loop vectorizes)
    o_arr, s_arr = (out.T, s.T) if by_rows else (out, s)
    if beta == 0:
        s_arr = o_arr  # not read
    _addr_loop(o_arr, np.ascontiguousarray(s_arr), v1, v2, dt.type(alpha), dt.type(beta),
               by_rows, vectorized, max(width, 1), piece)
    return out
