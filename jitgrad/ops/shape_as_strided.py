"""``torch.as_strided`` / ``Tensor.as_strided(_)``: a view of the tensor's storage (its root
array: a view's base) with any sizes, element strides and storage offset, as ATen's.

Its gradient is ATen's ``as_strided_backward``: the output gradient scatter-added into a
zero storage (elements the view repeats get every contribution), divided by how often the
input's own geometry repeats each element (an expanded input), then read back in the input's
geometry (AsStridedBackward0; AsStridedBackward1 in place). It is computed on the host arrays,
so it is not itself differentiable (no double backward) and CUDA tensors raise
NotImplementedError. An empty view reports the contiguous strides (Tensor.stride's rule for
empty tensors), not the ones asked for.
"""
from __future__ import annotations

import numbers

import numpy as np

from .._layout import record_layout
from .._storage import as_strided as _strided
from ..tensor import Tensor
from .composite import record
from .parser_errors import parser_type_name

__all__ = ["as_strided"]


def _ints(v, name, arg, pos):
    if isinstance(v, (numbers.Integral,)) or not isinstance(v, (tuple, list)) or \
            any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) for s in v):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be tuple of ints, not "
                        f"{parser_type_name(v)}")
    return tuple(int(s) for s in v)


def _flat_storage(t):
    """The flat array of ``t``'s storage and ``t``'s offset in it."""
    from .tensor_extras import _storage
    if t._data.__class__ is not np.ndarray:
        raise NotImplementedError("as_strided of a CUDA tensor is not supported by jitgrad")
    root = t._base if t._base is not None else t
    flat = _storage(root)
    if not np.shares_memory(flat, root._data) and root._data.size:
        raise NotImplementedError("as_strided: this tensor's storage is not one flat array in "
                                  "jitgrad (a NumPy view with gaps); clone() it first")
    return flat, t._memory_offset()


def _indices(shape, strides, offset):
    """The storage index of every element of a (shape, strides, offset) view."""
    idx = np.full(shape, offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        ax = [1] * len(shape)
        ax[d] = n
        idx = idx + (np.arange(n, dtype=np.int64) * s).reshape(ax)
    return idx


def _backward(node, g):
    a = node.ctx.attrs
    gd = g._data
    if gd.__class__ is not np.ndarray:
        raise NotImplementedError("the as_strided backward runs on the host only")
    out_idx = _indices(a["size"], a["stride"], a["offset"])
    inp_idx = _indices(a["inp_size"], a["inp_stride"], a["inp_offset"])
    n = max(int(out_idx.max()) + 1 if out_idx.size else 0,
            int(inp_idx.max()) + 1 if inp_idx.size else 0)
    storage = np.zeros(n, dtype=gd.dtype)
    np.add.at(storage, out_idx.reshape(-1), gd.reshape(-1))
    count = np.bincount(inp_idx.reshape(-1), minlength=n)
    if count.max(initial=0) > 1:  # the input repeats elements: each gets its share
        storage = storage / np.maximum(count, 1).astype(gd.dtype)
    return (Tensor._make(np.ascontiguousarray(storage[inp_idx])),)


def as_strided(input, size, stride, storage_offset=None):
    if not isinstance(input, Tensor):
        raise TypeError(f"as_strided(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(input)}")
    size = _ints(size, "as_strided", "size", 2)
    stride = _ints(stride, "as_strided", "stride", 3)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    flat, inp_offset = _flat_storage(input)
    offset = inp_offset if storage_offset is None else int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if any(n < 0 for n in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                           f"strides={list(stride)}")
    need = 0 if 0 in size else offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
    if need > flat.size:
        item = flat.itemsize
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {offset}, and itemsize {item} requiring a storage size of "
                           f"{need * item} are out of bounds for storage of size "
                           f"{flat.size * item}")
    data = _strided(flat, size, stride, offset) if need else \
        np.empty(size, dtype=flat.dtype)
    # a view of the storage, whatever view ``input`` was: its base is the root, and an
    # in-place write through it replays it on the root's new value as a gather of the same
    # storage elements (the root's row-major order is its storage order when contiguous)
    root = input._base if input._base is not None else input
    view_fn = None
    if root._data.flags.c_contiguous and "_resize_storage" not in root.__dict__:
        def view_fn(b):
            from .basic import tensor
            return b.reshape(-1)[tensor(_indices(size, stride, offset))]
    out = record("AsStridedBackward0", (input,), data, _backward, view_of=root,
                 attrs={"size": size, "stride": stride, "offset": offset,
                        "inp_size": tuple(input.shape), "inp_stride": input.stride(),
                        "inp_offset": inp_offset},
                 view_fn=view_fn)
    if not need:  # an empty view: PyTorch reports the strides and offset it was given
        record_layout(out, stride, offset + input.storage_offset() - inp_offset)
    return out
