"""expand/expand_as/broadcast_to/broadcast_tensors: views with stride 0 on the expanded dims
(ATen's inferExpandGeometry for the sizes and the strides, ``_storage.expand_strides``)."""
from __future__ import annotations

import numpy as np

from .._layout import note_expand
from .._storage import expand_strides
from .composite import record
from .parser_errors import input_type_error
from .shape_args import _NOT_GIVEN, _size_list


def _expand_backward(node, g):
    return (g,)  # the engine sums the gradient back to the input's shape


_ndarray = np.ndarray


def _expand_fast(x, sizes):
    """The view ``expand`` makes of a non-empty C-contiguous host array of at least one dim for
    plain-int sizes that its checks accept, or None. ``np.broadcast_to`` costs ~3 us (an
    nditer); an ndarray over x's buffer with ATen's strides is the same read-only view with the
    same base (x) in ~1 us."""
    shp = x.shape
    lead = len(sizes) - len(shp)
    if lead < 0 or not shp:
        return None
    target = []
    for i, s in enumerate(sizes):
        if s.__class__ is not int:
            return None
        if i < lead:
            if s < 1:
                return None
        else:
            cur = shp[i - lead]
            if s == -1:
                s = cur
            elif s != cur and (cur != 1 or s < 1):
                return None  # an error, or an empty result: the general path
        target.append(s)
    target = tuple(target)
    data = _ndarray(target, x.dtype, x, 0, expand_strides(shp, x.strides, target))
    data.setflags(write=False)
    return data


def expand(input, *args, size=_NOT_GIVEN):
    x = input._data
    if args and size is _NOT_GIVEN and x.__class__ is np.ndarray and x.size \
            and x.flags.c_contiguous:
        data = _expand_fast(x, args[0] if len(args) == 1 and isinstance(args[0], (tuple, list))
                            else args)
        if data is not None:
            return record("ExpandBackward0", (input,), data, _expand_backward, view_of=input)
    sizes = _size_list(args, "expand", "size", size)
    shp = input._data.shape
    if len(sizes) < len(shp):
        from ..autograd.node import _tensor_type_name
        raise RuntimeError(f"expand({_tensor_type_name(input)}{{{list(shp)}}}, size="
                           f"{list(sizes)}): the number of sizes provided ({len(sizes)}) must be "
                           f"greater or equal to the number of dimensions in the tensor "
                           f"({len(shp)})")
    lead = len(sizes) - len(shp)
    target = []
    for i in reversed(range(len(sizes))):  # ATen's inferExpandGeometry checks the last dim first
        s = sizes[i]
        if i < lead:
            if s == -1:  # (ATen refuses only -1 here; other negatives fail below)
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            target.append(s)
        else:
            cur = shp[i - lead]
            if s == -1:
                s = cur
            if cur != s and cur != 1:
                raise RuntimeError(
                    f"The expanded size of the tensor ({s}) must match the existing size ({cur})"
                    f" at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor "
                    f"sizes: {list(shp)}")
            target.append(s)
    target.reverse()
    if min(target, default=0) < 0:
        # ATen takes a negative size other than -1 into the geometry, then its numel's
        # overflow check refuses it (a size-0 dim beside it gives a tensor of negative size
        # there, which NumPy cannot hold: the same error here)
        raise RuntimeError("numel: integer multiplication overflow")
    x = input._data
    if x.__class__ is not np.ndarray:
        data = x.broadcast_to(tuple(target))
    else:
        data = np.broadcast_to(x, tuple(target))
        want = expand_strides(shp, x.strides, target) if x.size and x.ndim else data.strides
        if data.strides != want:  # (broadcast_to zeroes every unit dim's stride)
            data = np.lib.stride_tricks.as_strided(x, tuple(target), want, writeable=False)
    out = record("ExpandBackward0", (input,), data, _expand_backward, view_of=input)
    if not out._data.size:
        note_expand(out, input)
    return out


def expand_as(input, other):
    try:  # (free until raised) PyTorch's TypeError for a non-Tensor other (an ndarray too)
        shape = other._data.shape
    except AttributeError:
        raise input_type_error("expand_as", (other,), {}, arg="other") from None
    return expand(input, tuple(shape))


def broadcast_to(input, size):
    return expand(input, tuple(size))


def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    from .elementwise_call import broadcast_shapes
    shape = broadcast_shapes(*(t._data.shape for t in tensors))
    # as PyTorch (expand_outplace): a tensor that already has the shape is returned itself
    return tuple(t if t._data.shape == shape else expand(t, shape) for t in tensors)
