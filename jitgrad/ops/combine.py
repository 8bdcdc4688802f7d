"""block_diag, cartesian_prod, combinations, rot90, unravel_index, broadcast_shapes: ATen's (and
torch/functional.py's) compositions of views, copies, cat/stack and masked_select, so gradients
and CUDA tensors come from those ops; block_diag and rot90 are shown as PyTorch's one node
(BlockDiagBackward0, Rot90Backward0) by ``record_composition``."""
from __future__ import annotations

import itertools
import operator

import numpy as np

from .. import _dtype as D
from .._size import Size
from ..tensor import Tensor
from .composite import record_composition
from .parser_errors import parser_type_name
from .reduce_args import _wrap

__all__ = ["block_diag", "cartesian_prod", "combinations", "rot90", "unravel_index",
           "broadcast_shapes"]


def _shape_str(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def block_diag(*tensors):
    """A block diagonal matrix of the (at most 2-D) ``tensors``; 0-d and 1-D ones are (1, 1) /
    (1, n) blocks. The result has the promoted dtype."""
    from .basic import empty, zeros
    from .shape_join import cat
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{parser_type_name(t)}")
    if not tensors:
        return empty((1, 0))
    dtype = tensors[0].dtype
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        if t.device != tensors[0].device:
            raise RuntimeError(f"torch.block_diag: input tensors must all be on the same "
                               f"device. Input 0 is on device {tensors[0].device} and input "
                               f"{i} is on device {t.device}")
        dtype = D.promote_types(dtype, t.dtype)
    device = tensors[0].device
    blocks = [t.reshape((1, 1)) if t.ndim == 0 else t.reshape((1, -1)) if t.ndim == 1 else t
              for t in tensors]
    width = sum(b.shape[1] for b in blocks)

    def build(*parts):
        rows, left = [], 0
        for b in parts:
            b = b.reshape((1, 1)) if b.ndim == 0 else b.reshape((1, -1)) if b.ndim == 1 else b
            r, c = b.shape
            rows.append(cat([zeros((r, left), dtype=dtype, device=device), b.to(dtype),
                             zeros((r, width - left - c), dtype=dtype, device=device)], 1))
            left += c
        return cat(rows, 0)
    return record_composition("BlockDiagBackward0", tensors, build)


def _check_1d(tensors):
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {_shape_str(t.shape)}")


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-D tensor, as rows (meshgrid ij, flatten,
    stack); one tensor is returned as it is."""
    from .grids import meshgrid
    from .shape_join import stack
    _check_1d(tensors)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.flatten() for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of a 1-D tensor's elements as rows (itertools order)."""
    from .basic import empty, tensor
    from .grids import meshgrid
    from .shape_join import stack
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {_shape_str(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return empty((0,), dtype=input.dtype, device=input.device)
    n = input.shape[0]
    idx = np.meshgrid(*([np.arange(n)] * r), indexing="ij")
    mask = np.ones(idx[0].shape, bool)
    for i in range(r - 1):
        mask &= idx[i] <= idx[i + 1] if with_replacement else idx[i] < idx[i + 1]
    mask = tensor(mask, device=input.device)
    grids = meshgrid(*([input] * r), indexing="ij")
    return stack([g.masked_select(mask) for g in grids], 1)


def rot90(input, k=1, dims=(0, 1)):
    """Rotation by 90 degrees ``k`` times in the plane ``dims`` (from the first towards the
    second): flips and a transpose, shown as Rot90Backward0."""
    from .shape_views import transpose
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"rot90(): argument 'k' (position 2) must be int, not "
                        f"{parser_type_name(k)}")
    dims = list(dims)
    total = input.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if total < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {total}")
    w0, w1 = _wrap(dims[0], total), _wrap(dims[1], total)
    d0, d1 = dims
    if d0 == d1 or abs(d0 - d1) == total:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    d0, d1 = w0, w1
    k = (4 + (int(k) % 4)) % 4

    def build(x):
        if k == 1:
            return transpose(x.flip((d1,)), d0, d1)
        if k == 2:
            return x.flip((d0, d1))
        if k == 3:
            return transpose(x.flip((d0,)), d0, d1)
        return x.clone(memory_format="contiguous_format")
    return record_composition("Rot90Backward0", (input,), build, backward_name="Rot90Backward0")


def unravel_index(indices, shape):
    """The coordinates (one tensor per dim of ``shape``) of flat ``indices`` (torch/functional.py's
    floor_divide/remainder form)."""
    from .basic import tensor
    if (not isinstance(indices, Tensor) or indices.dtype.is_floating_point
            or indices.dtype is D.bool_):
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, bool) or not isinstance(shape, (int, np.integer, tuple, list, Size)):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    for dim in shape:
        if not isinstance(dim, (int, np.integer)):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got "
                            f"{type(dim)}")
    shape = tuple(int(s) for s in shape)
    if not all(s >= 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    coefs = list(reversed(list(itertools.accumulate(reversed(shape[1:] + (1,)),
                                                    func=operator.mul))))
    res = indices.unsqueeze(-1).floor_divide(
        tensor(coefs, device=indices.device, dtype=D.int64)) % tensor(
        list(shape), device=indices.device, dtype=D.int64)
    return res.unbind(-1)


def broadcast_shapes(*shapes):
    """The shape tensors of these shapes broadcast to (torch._refs._broadcast_shapes)."""
    shapes = tuple((x,) if isinstance(x, (int, np.integer)) else x
                   for x in shapes if x is not None)
    if not shapes:
        return Size([])
    for shape in shapes:
        if not isinstance(shape, (tuple, list, Size)):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a "
                               f"list of ints, got {shape}")
    common = [1] * max(len(shape) for shape in shapes)
    for arg_idx, shape in enumerate(shapes):
        for idx in range(-1, -1 - len(shape), -1):
            if shape[idx] == common[idx]:
                continue
            if common[idx] == 1:
                if shape[idx] < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[idx] = shape[idx]
            if shape[idx] == 1:
                continue
            if common[idx] != shape[idx]:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {shape[idx]} at {idx}! "
                    f"Mismatching argument at index {arg_idx} had {shape}; but expected shape "
                    f"should be broadcastable to {common}")
    for i, s in enumerate(common):
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"torch.Size() takes an iterable of 'int' (item {i} is "
                            f"'{type(s).__name__}')")
    return Size(common)
