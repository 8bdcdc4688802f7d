"""ATen's CPU floating-point sum loop (aten/src/ATen/native/cpu/SumKernel.cpp, ``cascade_sum``),
reproduced operation for operation so float32/float64 sums and means equal PyTorch's to the bit.

The loop body ATen runs for one 2-D piece of a reduction (``loop2d``) picks one of four
strategies by the piece's strides, and each adds in its own order:

* ``vectorized_inner_sum``: the reduced dim is contiguous; 256-bit vectors (``lanes`` values:
  8 float32 / 4 float64 — the AVX2 kernel, which ATen also dispatches to on AVX512 machines)
  summed by ``row_sum`` (four interleaved cascades), the scalar tail first, then the lanes;
* ``vectorized_outer_sum``: the kept dim is contiguous; groups of 4 vectors of columns by one
  cascade over the rows, then single vectors by ``row_sum``, then single columns;
* ``scalar_inner_sum`` / ``scalar_outer_sum``: the same cascades over one or four columns.

The cascade (``multi_row_sum``) keeps four levels of partial sums whose chunk size grows with the
row count, so only numbers of similar magnitude meet. Results are added into the output
(``CastStoreAccumulate``: ``*out += value``), which starts at zero.

Compiled without fastmath: the order and rounding of every addition is the point.
"""
from __future__ import annotations

import numpy as np

from ..codegen import kcache
from ..codegen.kcache import njit_cached

_LEVELS = 4
_ILP = 4


def _render_blocks() -> str:
    """Source of ``block_4xW`` (W = 1, 4, 8): the level-0 running sums of one block of rows for
    4 columns of W lanes, as 4*W local accumulators returned as a tuple. Written out lane by
    lane so LLVM keeps them in registers and vectorizes the contiguous lanes; an accumulator
    array would be reloaded and stored on every addition (Numba cannot tell it from ``x``)."""
    lines = ["import numba", "from numba import uint64", ""]
    for width in (1, 4, 8):
        names = [f"a{k}_{w}" for k in range(_ILP) for w in range(width)]
        lines += ["@numba.njit(cache=True, nogil=True)",
                  f"def block_4x{width}(x, o, row_stride, col_stride, n):",
                  "    zero = x.dtype.type(0)"]
        lines += [f"    {a} = zero" for a in names]
        # unsigned indices: no negative-index wraparound select, so the lanes' loads are
        # seen as consecutive and vectorized
        lines += ["    for r in range(n):",
                  "        p = o + r * row_stride"]
        for k in range(_ILP):
            lines.append(f"        q{k} = uint64(p + {k} * col_stride)")
            for w in range(width):
                lines.append(f"        a{k}_{w} += x[q{k} + uint64({w})]")
        lines.append(f"    return ({', '.join(names)},)")
        lines.append("")
    return "\n".join(lines) + "\n"


_blocks = kcache.load(_render_blocks())
block_4x1, block_4x4, block_4x8 = _blocks.block_4x1, _blocks.block_4x4, _blocks.block_4x8


@njit_cached(nogil=True)
def _multi_row_sum(x, base, row_stride, col_stride, size, nrows, width, acc):
    """``multi_row_sum<.., nrows>``: ``size`` rows of ``nrows`` columns, each a vector of
    ``width`` lanes (1: scalars); the result is left in ``acc[0, :nrows, :width]``."""
    for j in range(_LEVELS):
        for k in range(nrows):
            for w in range(width):
                acc[j, k, w] = 0
    ceil_log2 = 1
    if size > 2:  # utils::CeilLog2
        v = size - 1
        ceil_log2 = 0
        while v > 0:
            v >>= 1
            ceil_log2 += 1
    level_power = max(4, ceil_log2 // _LEVELS)
    level_step = 1 << level_power
    level_mask = level_step - 1
    i = 0
    while i + level_step <= size:
        # level 0 restarts at zero for every block of level_step rows (it was folded into
        # level 1 and cleared after the previous one), so each of its lanes is a plain
        # running sum over the block: kept in a register, then folded as ATen's j=1 step does
        _level_sums(x, base + i * row_stride, row_stride, col_stride, level_step, nrows,
                    width, acc, 1)
        i += level_step
        if (i & (level_mask << level_power)) != 0:
            continue
        for j in range(2, _LEVELS):
            for k in range(nrows):
                for w in range(width):
                    acc[j, k, w] += acc[j - 1, k, w]
                    acc[j - 1, k, w] = 0
            if (i & (level_mask << (j * level_power))) != 0:
                break
    # the rows left over (fewer than a block) go to level 0, which is zero here: a block sum
    _level_sums(x, base + i * row_stride, row_stride, col_stride, size - i, nrows, width,
                acc, 0)
    for j in range(1, _LEVELS):
        for k in range(nrows):
            for w in range(width):
                acc[0, k, w] += acc[j, k, w]


@njit_cached(nogil=True)
def _level_sums(x, o, row_stride, col_stride, n, nrows, width, acc, level):
    """Running sums from zero of ``n`` rows of ``nrows`` x ``width`` values, added into
    ``acc[level]`` (which holds zero or is where ATen folds its level 0)."""
    if nrows == _ILP and width == 8:
        t8 = block_4x8(x, o, row_stride, col_stride, n)
        for m in range(32):
            acc[level, m // 8, m % 8] += t8[m]
    elif nrows == _ILP and width == 4:
        t4 = block_4x4(x, o, row_stride, col_stride, n)
        for m in range(16):
            acc[level, m // 4, m % 4] += t4[m]
    elif nrows == _ILP and width == 1:
        t1 = block_4x1(x, o, row_stride, col_stride, n)
        for m in range(4):
            acc[level, m, 0] += t1[m]
    else:
        for k in range(nrows):
            for w in range(width):
                q = o + k * col_stride + w
                s = x.dtype.type(0)
                for r in range(n):
                    s += x[q + r * row_stride]
                acc[level, k, w] += s


@njit_cached(nogil=True)
def _row_sum(x, base, stride, size, width, acc):
    """``row_sum``: one column of ``size`` rows as four interleaved cascades, the leftover rows
    added to the first, then the four added in order; the result is ``acc[0, 0, :width]``."""
    size_ilp = size // _ILP
    _multi_row_sum(x, base, stride * _ILP, stride, size_ilp, _ILP, width, acc)
    for i in range(size_ilp * _ILP, size):
        o = base + i * stride
        for w in range(width):
            acc[0, 0, w] += x[o + w]
    for k in range(1, _ILP):
        for w in range(width):
            acc[0, 0, w] += acc[0, k, w]


@njit_cached(nogil=True)
def _loop2d(x, xb, out, ob, size0, size1, is0, is1, os0, os1, lanes, acc):
    """``cascade_sum``'s loop over one 2-D piece: ``size0 x size1`` input elements at ``xb``
    with element strides ``is0``/``is1`` added into ``out`` at ``ob`` (strides ``os0``/``os1``;
    0 on reduced dims)."""
    if os0 != 0 and os1 == 0:  # move the reduction to the first dim
        is0, is1 = is1, is0
        os0, os1 = os1, os0
        size0, size1 = size1, size0
    if os0 != 0 and os1 != 0:  # nothing reduced in this piece: out = out + x
        for j in range(size1):
            for i in range(size0):
                o = ob + i * os0 + j * os1
                out[o] = out[o] + x[xb + i * is0 + j * is1]
        return
    ostr = os1
    if is0 == 1 and size0 >= lanes:  # vectorized_inner_sum
        vec_size = size0 // lanes
        for j in range(size1):
            row = xb + j * is1
            _row_sum(x, row, lanes, vec_size, lanes, acc)
            total = x.dtype.type(0)
            for k in range(vec_size * lanes, size0):
                total += x[row + k]
            for w in range(lanes):
                total += acc[0, 0, w]
            out[ob + j * ostr] += total
    elif is1 == 1 and size1 >= lanes:  # vectorized_outer_sum
        j = 0
        while j + _ILP * lanes <= size1:
            _multi_row_sum(x, xb + j, is0, lanes, size0, _ILP, lanes, acc)
            for r in range(_ILP):
                for w in range(lanes):
                    out[ob + (j + r * lanes + w) * ostr] += acc[0, r, w]
            j += _ILP * lanes
        while j + lanes <= size1:
            _row_sum(x, xb + j, is0, size0, lanes, acc)
            for w in range(lanes):
                out[ob + (j + w) * ostr] += acc[0, 0, w]
            j += lanes
        while j < size1:
            _row_sum(x, xb + j, is0, size0, 1, acc)
            out[ob + j * ostr] += acc[0, 0, 0]
            j += 1
    elif is0 < is1:  # scalar_inner_sum
        for j in range(size1):
            _row_sum(x, xb + j * is1, is0, size0, 1, acc)
            out[ob + j * ostr] += acc[0, 0, 0]
    else:  # scalar_outer_sum
        j = 0
        while j + (_ILP - 1) < size1:
            _multi_row_sum(x, xb + j * is1, is0, is1, size0, _ILP, 1, acc)
            for r in range(_ILP):
                out[ob + (j + r) * ostr] += acc[0, r, 0]
            j += _ILP
        while j < size1:
            _row_sum(x, xb + j * is1, is0, size0, 1, acc)
            out[ob + j * ostr] += acc[0, 0, 0]
            j += 1


@njit_cached(nogil=True)
def serial_sum(x, xb, out, ob, shape, xs, os, begin, end, lanes):
    """``serial_for_each`` over the flat range ``[begin, end)`` of the iterator ``shape``
    (TensorIterator's order: dim 0 fastest) with ATen's ``DimCounter`` steps: each step is the
    largest 2-D piece from the current position, handed to ``_loop2d``."""
    acc = np.zeros((_LEVELS, _ILP, lanes), x.dtype)
    ndim = shape.size
    if end <= begin:
        return
    if ndim <= 1:
        is0 = xs[0] if ndim == 1 else 0
        os0 = os[0] if ndim == 1 else 0
        _loop2d(x, xb + begin * is0, out, ob + begin * os0, end - begin, 1, is0, 0, os0, 0,
                lanes, acc)
        return
    values = np.zeros(ndim, np.int64)
    rem = begin
    for d in range(ndim):
        if shape[d] > 0:
            values[d] = rem % shape[d]
            rem //= shape[d]
    offset = begin
    while offset < end:
        step0 = min(shape[0] - values[0], end - offset)
        step1 = 1
        if step0 == shape[0]:
            step1 = min(shape[1] - values[1], (end - offset) // shape[0])
        xo = xb
        oo = ob
        for d in range(ndim):
            xo += values[d] * xs[d]
            oo += values[d] * os[d]
        _loop2d(x, xo, out, oo, step0, step1, xs[0], xs[1], os[0], os[1], lanes, acc)
        offset += step0 * step1
        overflow = step0
        i = 0
        if step1 != 1:
            i = 1
            overflow = step1
        while i < ndim and overflow > 0:
            v = values[i] + overflow
            if v >= shape[i]:
                overflow = 1
                v -= shape[i]
            else:
                overflow = 0
            values[i] = v
            i += 1


@njit_cached(nogil=True)
def column_sums_aten(g, out, threads):
    """``out[:] = g.sum(0)`` for a C-contiguous 2-D float array as ``cascade_sum`` computes it
    with ``threads`` threads (``cascade_sum.py``'s plan for this layout, its per-thread pieces
    walked one after another: they write disjoint outputs, so the bits are the same). For
    callers inside compiled code (a lowered step's bias gradient), which cannot call
    ``cascade_sum``; ``out`` (1-D, ``g.shape[1]``) is overwritten."""
    nrows, ncols = g.shape
    x = g.reshape(-1)
    lanes = 32 // x.itemsize
    grain = 32768  # at::internal::GRAIN_SIZE
    for j in range(ncols):
        out[j] = 0
    if nrows == 0 or ncols == 0:
        return
    if nrows > 1 and ncols > 1:  # TensorIterator: the reduced dim first, not merged
        shape = np.array([nrows, ncols], np.int64)
        xs = np.array([ncols, 1], np.int64)
        os = np.array([0, 1], np.int64)
    elif ncols > 1:  # one row: a kept dim alone
        shape = np.array([ncols], np.int64)
        xs = np.array([1], np.int64)
        os = np.array([1], np.int64)
    else:  # one column: a full reduction
        shape = np.array([nrows], np.int64)
        xs = np.array([1], np.int64)
        os = np.array([0], np.int64)
    numel = nrows * ncols
    if numel < grain or threads <= 1:
        serial_sum(x, 0, out, 0, shape, xs, os, 0, numel, lanes)
    elif ncols == 1:  # two_pass_reduction over parallel_for's chunks
        tasks = min(threads, (numel + grain - 1) // grain)
        chunk = (numel + tasks - 1) // tasks
        partial = np.zeros(threads, x.dtype)
        for t in range(tasks):
            if t * chunk < numel:
                serial_sum(x, 0, partial, t, shape, xs, os, t * chunk,
                           min(numel, t * chunk + chunk), lanes)
        serial_sum(partial, 0, out, 0, np.array([threads], np.int64),
                   np.array([1], np.int64), np.array([0], np.int64), 0, threads, lanes)
    else:  # parallel_dim_reduction: the columns split, 128-byte groups
        dim = shape.size - 1
        round_to = 128 // x.itemsize
        tasks = min(threads, ncols)
        chunk = (ncols + tasks - 1) // tasks
        for t in range(tasks):
            b = t * chunk
            if b >= ncols:
                break
            e = min(ncols, b + chunk)
            b -= b % round_to
            if e != ncols:
                e -= e % round_to
            if b == e:
                continue
            sub = shape.copy()
            sub[dim] = e - b
            n = 1
            for d in range(sub.size):
                n *= sub[d]
            serial_sum(x, b, out, b, sub, xs, os, 0, n, lanes)
