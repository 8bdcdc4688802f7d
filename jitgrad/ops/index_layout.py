"""The strides of an advanced-indexing result, as ATen lays it out.

``x[..., idx]`` is ATen's ``index``: the index tensors are broadcast together (and moved to
the front with the indexed dims of ``x`` when they are not adjacent), ``x`` is restrided so the
indexed dims are replaced by the index shape with stride 0, and a TensorIterator over
(output, restrided ``x``, reshaped indices) allocates the output in the dimension order it
sorts those operands' strides into. NumPy instead puts the index dims first in memory (``x[...,
idx]`` of a (2, 3, 4) tensor: strides (3, 1, 6) where PyTorch has (6, 2, 1)), so the result is
re-laid out to the order computed here. ``index_strides`` reproduces that ordering from shapes
and strides alone (no data), for CPU and CUDA tensors alike.
"""
from __future__ import annotations

import numpy as np

from .._iter_layout import is_contiguous_strides, sort_dims
from .._layout import contiguous_strides
from .._storage import as_strided, elem_strides, is_c_contiguous, view_strides

__all__ = ["index_strides", "plain_key", "aten_layout", "note_empty_index"]


def _expand(shape, st, target):
    """Strides of ``shape``/``st`` expanded to ``target`` (new and broadcast dims: 0)."""
    lead = len(target) - len(shape)
    out = [0] * lead
    for s, t, n in zip(shape, st, target[lead:]):
        out.append(0 if s == 1 and n != 1 else t)
    return out


def _index_entries(comps, nd):
    """(shape, element strides) per dim of ``x`` for the key's index tensors, None for dims it
    keeps whole; None when the key has a 0-d mask (PyTorch reads those another way)."""
    consumed = 0
    for kind, v in comps:
        if kind in ("array", "darray"):
            consumed += 1
        elif kind in ("mask", "dmask"):
            consumed += v.ndim
        elif kind == "slice":
            consumed += 1
    entries = []
    for kind, v in comps:
        if kind == "ellipsis":
            entries += [None] * (nd - consumed)
            consumed = nd
        elif kind == "slice":
            entries.append(None)
        elif kind in ("array", "darray"):
            entries.append((tuple(v.shape), elem_strides(v)))
        elif kind in ("mask", "dmask"):
            k = v.ndim
            if k == 0:
                return None
            # expandTensors: one column of mask.nonzero() (n, k) per mask dim
            n = int(np.count_nonzero(v)) if kind == "mask" else -1
            entries += [((n,), (k,))] * k
        else:
            return None
    return entries + [None] * (nd - len(entries))


def _should_swap(ops, shape, d0, d1):
    # TensorIterator::reorder_dimensions' comparison (no reduction, output not yet allocated)
    for st in ops:
        s0, s1 = st[d0], st[d1]
        if s0 == 0 or s1 == 0:
            continue
        if s0 < s1:
            return -1
        if s0 > s1:
            return 1
        if shape[d0] > shape[d1]:
            return 1
    return 0


def _iteration_order(shape, ops):
    """Dims fastest-first, as TensorIterator's insertion sort leaves ``perm_``."""
    return sort_dims(len(shape), lambda d0, d1: _should_swap(ops, shape, d0, d1))


def index_strides(shape, st, comps, out_shape):
    """Element strides of ATen's ``x[key]`` for ``x`` of ``shape``/``st`` and a key of index
    tensors, masks, whole slices and Ellipsis (``comps``, as ``index_keys`` gives them), whose
    result has ``out_shape``; None when this model does not apply (the caller keeps its own)."""
    entries = _index_entries(comps, len(shape))
    if entries is None or any(e is not None and e[0] == (-1,) for e in entries):
        return None
    defined = [e for e in entries if e is not None]
    if not defined:
        return None
    bshape = tuple(np.broadcast_shapes(*[e[0] for e in defined]))
    idx = [None if e is None else _expand(e[0], e[1], bshape) for e in entries]
    shape, st = list(shape), list(st)
    where = [i for i, e in enumerate(idx) if e is not None]
    if where[-1] - where[0] + 1 != len(where):  # transposeToFront
        order = where + [i for i, e in enumerate(idx) if e is None]
        shape, st, idx = [shape[i] for i in order], [st[i] for i in order], [idx[i] for i in order]
        where = list(range(len(where)))
    before, end = where[0], where[-1] + 1
    src_shape = tuple(shape[:before]) + bshape + tuple(shape[end:])
    if src_shape != tuple(out_shape):
        return None
    src_st = st[:before] + [0] * len(bshape) + st[end:]
    new_shape = (1,) * before + bshape + (1,) * (len(shape) - end)
    ops = [src_st]
    for i in where:
        vst = view_strides(bshape, idx[i], new_shape)
        if vst is None:  # reshape copies: contiguous
            vst = view_strides(new_shape, _contiguous(new_shape), new_shape)
        ops.append([0 if n == 1 and s != 1 else v for v, n, s in zip(vst, new_shape, src_shape)])
    if new_shape == src_shape and all(is_contiguous_strides(src_shape, o) for o in ops):
        # TensorIterator's fast setup (every operand contiguous, one shape): contiguous output
        return contiguous_strides(src_shape), list(range(len(src_shape) - 1, -1, -1))
    perm = _iteration_order(src_shape, ops)
    if perm == list(range(len(src_shape) - 1, -1, -1)):  # "inverted": a plain contiguous output
        return contiguous_strides(src_shape), perm  # (a size-0 dim counted as 1)
    out, acc = [0] * len(src_shape), 1  # compatible_stride (past a size-0 dim: 0)
    for d in perm:
        out[d] = acc
        acc *= src_shape[d]
    return tuple(out), perm


def _contiguous(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= s
    return tuple(reversed(st))


def _dense_c(a) -> bool:
    """C-contiguous down to its size-1 dims' strides (NumPy's flag and ATen's is_contiguous
    skip those, ATen's sort reads them)."""
    if not is_c_contiguous(a):
        return False
    if 1 not in a.shape:  # (the common case: no strides to compute)
        return True
    return elem_strides(a) == contiguous_strides(a.shape) or a.size == 0


def plain_key(x_data, comps) -> bool:
    """True for the common keys whose ATen result is C-contiguous without the sort: ``x``
    C-contiguous (``_dense_c``), index tensors (no masks) of one shape, each C-contiguous,
    next to each other (every operand's strides then decrease in dim order, or are 0, so
    nothing swaps)."""
    if not _dense_c(x_data):
        return False
    shape, seen, gap = None, False, False
    for kind, v in comps:
        if kind == "array" or kind == "darray":
            if gap or not _dense_c(v) or (shape is not None and v.shape != shape):
                return False
            shape, seen = v.shape, True
        elif kind == "slice" or kind == "ellipsis":
            gap = seen
        else:
            return False
    return seen


def aten_layout(x_data, comps, data):
    """``data`` (the gathered ``x[key]``, a NumPy array or CudaArray) in ATen's layout: itself
    when its strides already agree, else a copy with them."""
    if not data.size or data.ndim < 2:
        return data
    if plain_key(x_data, comps):
        if not is_c_contiguous(data):
            data = np.ascontiguousarray(data) if data.__class__ is np.ndarray else \
                data.contiguous()
        want = contiguous_strides(data.shape)
        # (a size-1 dim's stride is free in memory: set it as ATen's, no copy)
        return data if elem_strides(data) == want else as_strided(data, data.shape, want)
    got = index_strides(x_data.shape, elem_strides(x_data), comps, data.shape)
    if got is None:
        return data
    want, perm = got
    if elem_strides(data) == want:
        return data
    if data.__class__ is np.ndarray:
        order = perm[::-1]  # slowest first
        out = np.empty([data.shape[d] for d in order], data.dtype).transpose(np.argsort(order))
        out[...] = data
        return out
    from .._cuda_array import CudaArray
    from ..backends import cuda as B
    out = CudaArray.empty_strided(data.shape, want, data.dtype)
    B.kernels().layout.copy_into(out.kview(), data.kview())
    return out


def note_empty_index(out, x, comps):
    """An empty CPU result's strides are metadata only (``_layout``): record ATen's, which
    hold 0 past a size-0 dim in iteration order (``x[idx, 1:1]``: (0, 1, 3) for (1, 3, 0)).
    ``x``'s own strides are PyTorch's (``stride()``): an empty ``x``'s array does not know them."""
    got = index_strides(x.shape, x.stride(), comps, out._data.shape)
    if got is not None:
        from .._layout import record_layout
        record_layout(out, got[0], 0)
