"""Host routines with MKL VML's calling convention for ops whose ATen CPU kernel is not
elementwise-uniform: ``sigmoid``. ``backends/vml.py`` hands out their addresses like VML's, so
eager, the fused kernels and ``jitgrad.compile`` call them (and reuse their saved values) as
they do VML's.

ATen's ``sigmoid`` is ``cpu_kernel_vec`` (UnaryOpsKernel.cpp): over each contiguous inner run
``vectorized_loop`` (Loops.h) applies the vector lambda (``1 / (exp(-x) + 1)`` with SLEEF's exp:
``math.aten_sigmoid``) to steps of two vectors (AVX-512: 32 floats / 16 doubles; AVX2: 16 / 8,
the build ``backends.cpu_capability`` says PyTorch runs here) and the scalar
lambda ``1 / (1 + std::exp(-x))`` (glibc's exp: Numba's ``math.exp``) to the rest of the run;
a non-contiguous inner dimension runs the scalar lambda throughout (``basic_loop``). The runs:
TensorIterator's inner rows (after it orders dims by stride and coalesces them), cut where
``at::parallel_for`` splits ``[0, numel)`` among threads: with ``numel > GRAIN_SIZE`` (32768)
and ``t > 1`` threads, ``min(t, ceil(numel / 32768))`` chunks of ``ceil(numel / chunks)``.

``sigmoid_routine(dtype)``: the address of ``void f(int32 n, T *x, T *y, int64 mode)`` doing
that for one contiguous tensor of ``n`` elements (the thread count read from ``set_threads``'
cell, which ``set_num_threads`` updates through ``host_threads.count_changed``, so a compiled
replay cuts at the current count); the chunks run on Numba's threads, as ATen runs them on its
own. ``sigmoid_strided(x, out)``: the same for any strided ``x`` (its
TensorIterator rows), ``out`` C-contiguous of ``x``'s shape.
"""
from __future__ import annotations

import ctypes
import math

import numpy as np
from llvmlite import ir
from numba import carray, cfunc, prange, types
from numba.extending import intrinsic

from .._iter_layout import reorder_dimensions
from ..codegen.kcache import njit_cached as njit
from ..math import aten_sigmoid
from . import cpu
from .cpu_capability import CAPABILITY, vector_bytes

__all__ = ["sigmoid_routine", "sigmoid_strided", "set_threads", "GRAIN_SIZE"]

GRAIN_SIZE = 32768  # at::internal::GRAIN_SIZE
# vectorized_loop's step: 2 * sizeof(Vectorized<T>) in the ATen build PyTorch runs here
# (128 bytes on AVX-512, 64 on AVX2)
_VEC_BYTES = 2 * vector_bytes(CAPABILITY)

# the thread count the routines split by: a cell read through its address, since a cfunc
# called from compiled code has no Python state to consult
_threads = ctypes.c_int64(1)
_THREADS_ADDR = ctypes.addressof(_threads)


def set_threads(n: int) -> None:
    _threads.value = int(n)


@intrinsic
def _load_i64(typingctx, addr):
    """The int64 at the raw address ``addr``."""
    def codegen(context, builder, signature, args):
        p = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
        return builder.load(p)
    return types.int64(addr), codegen


@njit(nogil=True, error_model="numpy")
def _chunk_length(n, threads):
    """The length of ``at::parallel_for``'s chunks of ``[0, n)`` at ``threads`` threads."""
    if n <= GRAIN_SIZE or threads <= 1:
        return max(n, 1)
    tasks = min(threads, (n + GRAIN_SIZE - 1) // GRAIN_SIZE)
    return (n + tasks - 1) // tasks


@njit(nogil=True, error_model="numpy")
def _vector_span(x, out):
    """The vector lambda over a whole span; a loop of its own, which LLVM vectorizes (inside
    ``sigmoid_runs``' run loop it stays scalar: ~4x slower)."""
    for j in range(x.size):
        out[j] = aten_sigmoid(x[j])


@njit(nogil=True, error_model="numpy")
def _chunk_runs(x, out, lo, hi, row, vectorized, one):
    """One ``parallel_for`` chunk ``[lo, hi)`` of ``sigmoid_runs``: its runs end at multiples
    of ``row`` and at ``hi``; each run's whole steps of two vectors take the vector lambda where
    ``vectorized``, its remainder the scalar one."""
    step = _VEC_BYTES // x.itemsize
    start = lo
    while start < hi:
        end = min((start // row + 1) * row, hi)
        vec_end = end - (end - start) % step if vectorized else start
        _vector_span(x[start:vec_end], out[start:vec_end])
        for j in range(vec_end, end):
            out[j] = one / (one + math.exp(-x[j]))
        start = end


@njit(parallel=True, nogil=True, error_model="numpy")
def _chunks_parallel(x, out, row, chunk, vectorized, one):
    """The chunks on Numba's threads, one per thread as ``at::parallel_for`` runs them (the
    chunk count is at most jitgrad's thread count; Numba's, capped at the cores, may be lower:
    the bits depend on the chunks only)."""
    n = x.size
    for t in prange((n + chunk - 1) // chunk):
        _chunk_runs(x, out, t * chunk, min((t + 1) * chunk, n), row, vectorized, one)


@njit(nogil=True, error_model="numpy")
def sigmoid_runs(x, out, row, chunk, vectorized, one):
    """``out = sigmoid(x)`` over 1-D ``x``/``out`` in TensorIterator's order, cut into
    ``parallel_for``'s chunks of ``chunk`` elements (in parallel where there are several) and
    each chunk into runs ending at multiples of ``row``."""
    n = x.size
    if chunk < n:
        _chunks_parallel(x, out, row, chunk, vectorized, one)
    else:
        _chunk_runs(x, out, 0, n, row, vectorized, one)


def _make_routine(np_dtype):
    one = np_dtype.type(1)
    dt = np_dtype
    # run the parallel kernel once from Python first: that starts Numba's threading layer,
    # whose runtime symbols (allocate_sched, ...) the cfunc's linking needs ("LLVM ERROR:
    # Symbol not found" aborts the process when no parallel kernel has run yet)
    tiny = np.zeros(2, dt)
    _chunks_parallel(tiny, tiny.copy(), 2, 1, True, one)

    @cfunc(types.void(types.int32, types.voidptr, types.voidptr, types.int64),
           nopython=True, error_model="numpy")
    def routine(n, px, py, mode):
        x = carray(px, n, dt)
        y = carray(py, n, dt)
        sigmoid_runs(x, y, n, _chunk_length(n, _load_i64(_THREADS_ADDR)), True, one)

    return routine


_routines = {}  # np.dtype -> cfunc (kept alive: its address is handed out)


def sigmoid_routine(np_dtype) -> int:
    """The address of the contiguous sigmoid routine for float32/float64 (0 for others)."""
    dt = np.dtype(np_dtype)
    if dt not in (np.float32, np.float64):
        return 0
    fn = _routines.get(dt)
    if fn is None:
        fn = _routines[dt] = _make_routine(dt)
    return fn.address


def _iteration_order(shape, strides):
    """TensorIterator's dim order for one input (innermost first; ``reorder_dimensions``: an
    insertion sort by stride, broadcast dims left in place, ties to the smaller size) and its
    coalesced inner row: (order, row length, inner stride in bytes)."""
    perm = reorder_dimensions(shape, (strides,))
    dims = [d for d in perm if shape[d] != 1]  # size-1 dims coalesce away
    if not dims:
        return perm, 1, 0
    row, stride = shape[dims[0]], strides[dims[0]]
    for d in dims[1:]:
        if strides[d] != row * stride:
            break
        row *= shape[d]
    return perm, row, stride


def sigmoid_strided(x: np.ndarray, out: np.ndarray, threads: int,
                    flat: np.ndarray | None = None) -> None:
    """``out[...] = sigmoid(x)`` with ATen's runs for strided ``x`` (float32/float64), ``out``
    C-contiguous of ``x``'s shape (or flat): its elements computed in TensorIterator's order.
    ``flat``: a C-contiguous copy of ``x`` in C order, if the caller made one (not copied
    again where ATen's order is C order)."""
    one = x.dtype.type(1)
    if x.flags.c_contiguous:  # TensorIterator's fast setup: one run of numel
        flat = x.reshape(-1)
        sigmoid_runs(flat, out.reshape(-1), max(flat.size, 1), _chunk_length(flat.size, threads),
                     True, one)
        return
    perm, row, stride = _iteration_order(x.shape, x.strides)
    order = perm[::-1]  # outermost first: C order of the transposed views is ATen's order
    view = x.transpose(order)
    in_order = order == sorted(order)  # C order is ATen's: read ``flat``, write ``out``
    if in_order and flat is not None:
        src = flat
    else:
        src = cpu.empty(view.shape, x.dtype)  # pooled: fresh pages would fault on every call
        src[...] = view
        src = src.reshape(-1)
    res = out.reshape(-1) if in_order else cpu.empty(src.shape, x.dtype)
    vectorized = stride in (x.itemsize, 0) and min(x.strides, default=0) >= 0
    sigmoid_runs(src, res, max(row, 1), _chunk_length(src.size, threads), vectorized, one)
    if not in_order:
        out.reshape(x.shape).transpose(order)[...] = res.reshape(view.shape)
