"""PyTorch's strides and storage offset where a NumPy array cannot say them.

A CPU tensor's ``stride()`` and ``storage_offset()`` are read off its NumPy array (strides) and
its view base (pointer difference). Two cases lose them:

* empty arrays: NumPy gives a fresh empty array zero strides, and a basic slice of length 0
  does not advance the data pointer (``a[3:3]`` starts where ``a`` does), while PyTorch keeps
  the strides and offset its view arithmetic computed (``x[:, 2:2]`` of a (4, 5) tensor is
  stride (5, 1), offset 2; ``empty(0, 3).t()`` is stride (1, 3));
* tensors from ``load`` that shared a storage when saved: each is its own array here, PyTorch
  keeps the offset into the shared storage.

For those the op that makes the tensor records PyTorch's layout in the tensor's ``__dict__``,
tied to the exact ``_data`` array it describes (a tensor whose data is later replaced, by
``set_`` or a resize, falls back to what the array says). Views of empty tensors compute theirs
from their input's layout, as ATen's view functions do. Nothing here touches memory: the
recorded numbers are metadata only.
"""
from __future__ import annotations

import numpy as np

__all__ = ["contiguous_strides", "recorded", "record_layout", "layout", "getitem_geometry",
           "note_getitem", "note_permute", "note_view", "note_expand", "note_unsqueeze",
           "note_squeeze"]

_KEY = "_torch_layout"


def contiguous_strides(shape) -> tuple:
    """PyTorch's strides for a fresh tensor of ``shape`` (a size-0 dim counts as 1)."""
    st, acc = [], 1
    for n in reversed(shape):
        st.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(st))


def recorded(t):
    """``(strides or None, offset)`` recorded for ``t``'s current data, or None."""
    rec = t.__dict__.get(_KEY)
    if rec is not None and rec[0] is t._data:
        return rec[1], rec[2]
    return None


def record_layout(t, strides, offset):
    """``strides`` (ints, or None: the array's own) and ``offset`` (an int) for ``t``."""
    t.__dict__[_KEY] = (t._data, None if strides is None else tuple(strides), offset)


def layout(t):
    """``(strides, storage offset)`` of CPU tensor ``t`` as PyTorch reports them."""
    d = t._data
    if d.size and t._base is None and _KEY not in t.__dict__:  # (the common input: no calls)
        isz = d.itemsize
        return tuple(s // isz for s in d.strides), 0
    return t.stride(), t.storage_offset()


def _empty_cpu(out) -> bool:
    d = out._data
    return d.__class__ is np.ndarray and d.size == 0


def getitem_geometry(shape, st, off, key):
    """``(shape, strides, offset)`` of ``x[key]`` for ``x`` of ``shape``/``st``/``off`` (a basic
    key: ints, slices, None, one Ellipsis, as NumPy took it): ATen's applySlicing, one
    component at a time, so a None's stride is the unsqueeze rule on the dims as they stand
    when it is reached (``x[:, None]`` of a (4, 5) tensor: 5, where NumPy says 0)."""
    nd = len(shape)
    shape, st, dim = list(shape), list(st), 0
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    for k in key:
        if k is Ellipsis:
            dim += nd - consumed
            consumed = nd  # (a second Ellipsis, if NumPy took one, skips none)
        elif k is None:  # unsqueeze(dim): the new dim's stride is ATen's
            st.insert(dim, shape[dim] * st[dim] if dim < len(shape) else 1)
            shape.insert(dim, 1)
            dim += 1
        elif isinstance(k, slice):
            start, stop, step = k.indices(shape[dim])
            off += start * st[dim]
            shape[dim] = len(range(start, stop, step))
            st[dim] *= step
            dim += 1
        else:
            i = int(k)
            off += (i + shape[dim] if i < 0 else i) * st[dim]
            del shape[dim], st[dim]
    return shape, st, off


def note_getitem(out, x, key):
    """``out = x[key]`` of an empty result: its strides and offset from ATen's view arithmetic
    on ``x``'s layout (``getitem_geometry``)."""
    if not _empty_cpu(out):
        return
    st, off = layout(x)
    shape, st, off = getitem_geometry(x._data.shape, st, off, key)
    if tuple(shape) == out._data.shape:
        record_layout(out, st, off)


def note_permute(out, x, dims):
    """``out`` = ``x`` with its dims reordered (permute/transpose/t/movedim)."""
    if _empty_cpu(out):
        st, off = layout(x)
        record_layout(out, [st[d] for d in dims], off)


def note_view(out, x):
    """``out`` = ``x`` viewed with another shape: ATen's computeStride for an empty tensor
    (its own strides for the same shape, else contiguous ones), the offset kept."""
    if _empty_cpu(out):
        from ._storage import view_strides
        st, off = layout(x)
        record_layout(out, view_strides(x._data.shape, st, out._data.shape), off)


def note_expand(out, x):
    """``out`` = ``x`` expanded: ATen's inferExpandGeometry on ``x``'s layout."""
    if _empty_cpu(out):
        st, off = layout(x)
        shape, target = x._data.shape, out._data.shape
        lead = len(target) - len(shape)
        want = [0] * len(target)
        for i in range(len(target) - 1, -1, -1):
            j = i - lead
            size = shape[j] if j >= 0 else 1
            stride = st[j] if j >= 0 else (target[i + 1] * want[i + 1]
                                           if i + 1 < len(target) else 1)
            want[i] = stride if size == target[i] else 0
        record_layout(out, want, off)


def note_unsqueeze(out, x, dim):
    if _empty_cpu(out):
        st, off = layout(x)
        shape = x._data.shape
        st = list(st)
        st.insert(dim, shape[dim] * st[dim] if dim < len(shape) else 1)
        record_layout(out, st, off)


def note_squeeze(out, x, dims):
    """``out`` = ``x`` without the size-1 dims ``dims`` (those squeezed)."""
    if _empty_cpu(out):
        st, off = layout(x)
        record_layout(out, [s for i, s in enumerate(st) if i not in dims], off)
