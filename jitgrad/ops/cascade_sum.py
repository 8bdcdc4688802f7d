"""float32/float64 sums over dims in PyTorch's CPU order, so ``sum``/``mean``/``nansum`` give
PyTorch's bits rather than NumPy's (pairwise) ones.

A reduction's result depends on how ATen walks the input, so this module rebuilds that walk:

1. the TensorIterator of ``reduce_op(out, x)``: dims sorted by ``reorder_dimensions`` (reduced
   dims first, then by the input's strides; the output compared first) and merged by
   ``coalesce_dimensions``;
2. ``parallel_reduce``: serial below ``GRAIN_SIZE`` elements or with one thread; a full
   reduction in two passes (each thread's ``parallel_for`` chunk into its own partial, then the
   partials reduced); otherwise a split of the outermost kept dim into per-thread pieces
   (rounded to 128-byte column groups when columns are contiguous), each walked serially;
3. the loop over each 2-D piece, ``_cascade_sum_kernels``.

The thread count is jitgrad's (``get_num_threads``), which is also PyTorch's default on a
machine whose cores are not hyper-threaded; sums split across threads differ from a one-thread
PyTorch in the last bits, as PyTorch's own do.
"""
from __future__ import annotations

import numpy as np

from .._iter_layout import reorder_dimensions
from .._settings import get_num_threads

__all__ = ["cascade_sum", "supports"]

GRAIN_SIZE = 32768  # at::internal::GRAIN_SIZE
_VECTOR_BYTES = 32  # the AVX2 kernel's Vectorized<T> (ATen's sum has no AVX512 variant)


def supports(data) -> bool:
    """Whether ``cascade_sum`` handles this array (float32/float64 on the host)."""
    return data.__class__ is np.ndarray and data.dtype.char in "fd"


def _contiguous_strides(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return strides[::-1]


def _iterator(shape, xs, os):
    """TensorIterator's dims (fastest first) for output strides ``os`` and input strides ``xs``
    (elements, both in the tensor's dim order): (shape, input strides, output strides)."""
    ndim = len(shape)
    perm = reorder_dimensions(shape, (os, xs), reduction_outputs=1)
    sh = [shape[p] for p in perm]
    st = [[xs[p] for p in perm], [os[p] for p in perm]]
    if ndim == 0:
        return sh, st[0], st[1]
    prev = 0
    for dim in range(1, ndim):
        n0, n1 = sh[prev], sh[dim]
        merge = n0 == 1 or n1 == 1 or all(n0 * s[prev] == s[dim] for s in st)
        if merge:
            if sh[prev] == 1:
                for s in st:
                    s[prev] = s[dim]
            sh[prev] *= sh[dim]
        else:
            prev += 1
            if prev != dim:
                for s in st:
                    s[prev] = s[dim]
                sh[prev] = sh[dim]
    n = prev + 1
    return sh[:n], st[0][:n], st[1][:n]


def _flat_input(x):
    """``x``'s memory (non-negative strides) as a 1-D array from its first element."""
    item = x.itemsize
    span = 1 + sum((n - 1) * (s // item) for n, s in zip(x.shape, x.strides))
    return np.lib.stride_tricks.as_strided(x, shape=(span,), strides=(item,), writeable=False)


def _parallel_chunks(n, grain, threads):
    """``at::parallel_for(0, n, grain)``'s pieces: (thread id, begin, end)."""
    if not (n > grain and n > 1 and threads > 1):
        return [(0, 0, n)]
    tasks = min(threads, -(-n // grain)) if grain > 0 else threads
    chunk = -(-n // tasks)
    return [(t, t * chunk, min(n, t * chunk + chunk)) for t in range(tasks) if t * chunk < n]


_plans: dict = {}


def _plan(x, axes, keepdim, threads):
    """The walk for this layout, cached: (kept shape, output shape, iterator shape, input and
    output strides as int64 arrays, element count, lanes)."""
    key = (x.shape, x.strides, x.dtype.char, axes, keepdim, threads)
    plan = _plans.get(key)
    if plan is None:
        dims = set(axes)
        kept_shape = tuple(1 if d in dims else n for d, n in enumerate(x.shape))
        out_shape = kept_shape if keepdim else tuple(n for d, n in enumerate(x.shape)
                                                     if d not in dims)
        xs = [s // x.itemsize for s in x.strides]
        os = [0 if (d in dims and n > 1) else s
              for d, (n, s) in enumerate(zip(x.shape, _contiguous_strides(kept_shape)))]
        shape, xs, os = _iterator(x.shape, xs, os)
        numel = 1
        for n in shape:
            numel *= n
        plan = (kept_shape, out_shape, shape, np.asarray(shape, np.int64),
                np.asarray(xs, np.int64), np.asarray(os, np.int64), numel,
                _VECTOR_BYTES // x.itemsize)
        if len(_plans) > 4096:
            _plans.clear()
        _plans[key] = plan
    return plan


_serial_sum = []


def _serial():
    """The Numba kernel (imported on first use, not with jitgrad; then kept here, not looked up
    by an import statement per sum)."""
    if not _serial_sum:
        from ._cascade_sum_kernels import serial_sum
        _serial_sum.append(serial_sum)
    return _serial_sum[0]


def cascade_sum(x: np.ndarray, axes, keepdim: bool) -> np.ndarray:
    """``x.sum(axes, keepdim)`` (axes: a tuple of non-negative ints) as PyTorch's CPU kernel
    computes it, in ``x``'s float dtype."""
    if axes.__class__ is not tuple:
        axes = tuple(axes)
    threads = get_num_threads()
    plan = _plans.get((x.shape, x.strides, x.dtype.char, axes, keepdim, threads))
    if plan is not None and (plan[6] < GRAIN_SIZE or threads == 1):
        # a layout seen before (so non-empty, with usable strides) summed serially: the common
        # small sum, without the checks below
        result = np.zeros(plan[0], x.dtype)
        _serial()(x.reshape(-1) if x.flags.c_contiguous else _flat_input(x), 0,
                  result.reshape(-1), 0, plan[3], plan[4], plan[5], 0, plan[6], plan[7])
        return result.reshape(plan[1])
    serial_sum = _serial()
    dt = x.dtype
    if x.size == 0 or any(s < 0 or s % x.itemsize for s in x.strides):
        # (empty: zeros; negative or unaligned NumPy strides, which torch never has: a copy)
        if x.size == 0:
            return np.sum(x, axis=axes, keepdims=keepdim)
        x = np.ascontiguousarray(x)
    kept_shape, out_shape, shape, sh, xsa, osa, numel, lanes = _plan(x, axes, keepdim, threads)
    result = np.zeros(kept_shape, dt)
    flat = x.reshape(-1) if x.flags.c_contiguous else _flat_input(x)
    out = result.reshape(-1)
    if numel < GRAIN_SIZE or threads == 1:
        serial_sum(flat, 0, out, 0, sh, xsa, osa, 0, numel, lanes)
    elif out.size == 1:
        # two_pass_reduction: per-thread partials (zero where a thread got no chunk), then
        # their own reduction into the output
        from ..backends import host_threads
        partial = np.zeros(threads, dt)
        host_threads.run(lambda c, _: serial_sum(flat, 0, partial, c[0], sh, xsa, osa, c[1],
                                                 c[2], lanes),
                         _parallel_chunks(numel, GRAIN_SIZE, threads), threads)
        serial_sum(partial, 0, out, 0, np.asarray([threads], np.int64),
                   np.asarray([1], np.int64), np.asarray([0], np.int64), 0, threads, lanes)
    else:
        _dim_split(flat, out, shape, list(xsa), list(osa), threads, lanes, dt.itemsize)
    return result.reshape(out_shape)


def _dim_split(flat, out, shape, xs, os, threads, lanes, itemsize):
    """``parallel_dim_reduction``: the outermost kept dim of at least ``threads`` (else the
    largest) split into per-thread pieces, each walked serially (its 2-D pieces start at the
    piece's first column, which is what the column grouping depends on)."""
    ndim = len(shape)
    dim = ndim - 1
    best = dim
    while dim >= 0 and not (os[dim] == 0 and shape[dim] > 1):
        if shape[dim] >= threads:
            best = dim
            break
        if shape[dim] > shape[best]:
            best = dim
        dim -= 1
    dim = best
    cols = shape[dim]
    round_to = 128 // itemsize if xs[dim] == 1 else 0
    pieces = []
    for _, b, e in _parallel_chunks(cols, 1, threads):
        if round_to:
            b -= b % round_to
            if e != cols:
                e -= e % round_to
        if b != e:
            pieces.append((b, e))
    xsa, osa = np.asarray(xs, np.int64), np.asarray(os, np.int64)
    from ..backends import host_threads
    from ._cascade_sum_kernels import serial_sum

    def piece(be, _):
        b, e = be
        sub = list(shape)
        sub[dim] = e - b
        serial_sum(flat, b * xs[dim], out, b * os[dim], np.asarray(sub, np.int64), xsa, osa,
                   0, int(np.prod(sub)), lanes)

    host_threads.run(piece, pieces, threads)
