"""The storage interface: what the core may ask of a tensor's ``_data``, for both kinds of it.

A CPU tensor keeps a NumPy array, a CUDA tensor a :class:`~jitgrad._cuda_array.CudaArray`
(strided view of a flat numba-cuda device buffer). Layout questions that go beyond ``shape``,
``dtype``, ``ndim``, ``size`` and ``itemsize`` — strides, contiguity, aliasing, "is this the
whole allocation?" — are answered here, once per kind, and nowhere else. In particular nothing
outside ``_cuda_array.py`` and ``backends/`` touches a raw numba-cuda device array: those differ
between the simulator (a NumPy wrapper: ``flags`` is NumPy's flags object, ``base`` exists) and
the hardware (``DeviceNDArray``: ``flags`` is a dict, no ``base``), which is how a
``data.base.flags.owndata`` passed every simulator test and failed every training step on a GPU.

``view_strides`` is the one implementation of ``view``'s stride rule (ATen's ``computeStride``)
for CPU and CUDA tensors alike.

This module does not import numba.
"""
from __future__ import annotations

import numpy as np

__all__ = ["elem_strides", "is_c_contiguous", "shares_memory", "as_strided", "view_strides",
           "spans_whole_buffer", "offset_from", "expand_strides"]


def elem_strides(a) -> tuple:
    """Strides in elements (NumPy reports bytes)."""
    if a.__class__ is not np.ndarray:
        return tuple(a.st)
    return tuple(s // a.itemsize for s in a.strides)


def is_c_contiguous(a) -> bool:
    if a.__class__ is not np.ndarray:
        return a.is_contiguous()
    return bool(a.flags.c_contiguous)


def shares_memory(a, b) -> bool:
    if a.__class__ is not np.ndarray:
        return a.shares_memory(b)
    if b.__class__ is not np.ndarray:
        return False
    return bool(np.shares_memory(a, b))


def offset_from(a, base) -> int:
    """Elements between ``base``'s first element and ``a``'s (``a`` a view of ``base``)."""
    if a.__class__ is not np.ndarray:
        return a.offset - base.offset
    return (a.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // a.itemsize


def spans_whole_buffer(a) -> bool:
    """True when ``a`` is C-contiguous and covers its whole allocation: no other array can be a
    view of memory outside it (the engine adopts such gradients as ``.grad`` without a copy)."""
    if a.__class__ is not np.ndarray:
        return a.is_contiguous() and a.spans_buffer()
    if not a.flags.c_contiguous:
        return False
    base = a.base
    if base is None:
        return True
    if not isinstance(base, np.ndarray):
        return False
    # a reshape of a fresh array: same bytes as its owner (a slice of a bigger one is not)
    if base.flags.owndata and base.nbytes == a.nbytes:
        return True
    whole = _whole.get(id(base))  # an aligned pool array (backends/cpu.py) or a view of it
    return (whole is not None and whole[0]() is base
            and whole[1:] == (a.__array_interface__["data"][0], a.nbytes))


# id(byte buffer) -> (weakref to it, address, bytes) of the aligned array that is all of it
_whole = {}


def register_whole(a):
    """``a`` (a view of a byte buffer a few bytes larger, made to start aligned) is the only
    array of its buffer: ``spans_whole_buffer`` says so for it and its reshapes."""
    import weakref
    base = a.base
    key = id(base)
    _whole[key] = (weakref.ref(base, lambda _, k=key: _whole.pop(k, None)),
                   a.__array_interface__["data"][0], a.nbytes)


def as_strided(a, shape, st, offset=0):
    """A view of storage ``a`` with ``shape``, element strides ``st`` and ``offset`` elements
    past ``a``'s first element (PyTorch's as_strided). The caller keeps it inside ``a``."""
    shape, st = tuple(int(s) for s in shape), tuple(int(s) for s in st)
    if a.__class__ is not np.ndarray:
        return a.strided(shape, st, a.offset + offset)
    if offset:
        a = np.lib.stride_tricks.as_strided(a, (offset + 1,), (a.itemsize,))[offset:]
    return np.lib.stride_tricks.as_strided(a, shape, tuple(s * a.itemsize for s in st))


def view_strides(oldshape, oldstride, newshape):
    """Element strides of ``newshape`` viewing a tensor of ``oldshape``/``oldstride`` without a
    copy, or None when impossible: ATen's ``computeStride`` (TensorUtils.cpp), so ``view`` and
    ``stride()`` agree with PyTorch on CPU and CUDA tensors (a ``split`` piece of the last dim
    views as ``(B, T, H, C // H)``; NumPy's own rule differs on size-1 and empty dims)."""
    oldshape, oldstride, newshape = tuple(oldshape), tuple(oldstride), tuple(newshape)
    if not oldshape:
        return (1,) * len(newshape)
    numel = 1
    for s in oldshape:
        numel *= s
    if numel == 0:
        if oldshape == newshape:
            return oldstride
        st, acc = [], 1
        for s in reversed(newshape):
            st.append(acc)
            acc *= max(s, 1)
        return tuple(reversed(st))
    newstride = [0] * len(newshape)
    view_d = len(newshape) - 1
    chunk_base_stride = oldstride[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[tensor_d]
        # the end of a chunk of dims that are contiguous with each other
        if tensor_d == 0 or (oldshape[tensor_d - 1] != 1
                             and oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base_stride
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = oldstride[tensor_d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)


def expand_strides(shape, strides, target):
    """The strides of ``expand(target)`` of a tensor of ``shape``/``strides`` (non-empty, at
    least one dim; ``target`` checked and with its -1s resolved): ATen's inferExpandGeometry,
    walked from the last dim. A kept dim keeps its stride, an expanded one gets 0, a new
    leading unit dim the extent of the dims after it. (NumPy's broadcast_to gives 0 to every
    unit dim.) Units are the caller's: bytes in, bytes out."""
    lead = len(target) - len(shape)
    want = [0] * len(target)
    for i in range(len(target) - 1, -1, -1):
        j = i - lead
        if j >= 0:
            want[i] = strides[j] if target[i] == shape[j] else 0
        elif target[i] == 1:
            want[i] = target[i + 1] * want[i + 1]
    return tuple(want)
