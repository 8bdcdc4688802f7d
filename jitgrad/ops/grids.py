"""meshgrid and repeat_interleave: compositions of views, copies and index_select.

meshgrid's outputs are expanded views of its inputs (ExpandBackward0, as PyTorch);
repeat_interleave with an int is unsqueeze/expand/clone/view (ViewBackward0), with a tensor of
repeats an index_select (IndexSelectBackward0). A tensor of repeats is read on the host (the
output's size depends on its values, as in PyTorch without ``output_size``).
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .parser_errors import parser_type_name

__all__ = ["meshgrid", "repeat_interleave"]

_MESHGRID_WARNING = ("torch.meshgrid: in an upcoming release, it will be required to pass the "
                     "indexing argument.")
_warned = False  # PyTorch warns once per process (TORCH_WARN_ONCE)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids of 0-d/1-D ``tensors``: ``"ij"`` (matrix: output dim i is tensor i's)
    or ``"xy"`` (Cartesian: the first two swapped). Omitting ``indexing`` means ``"ij"`` with
    PyTorch's warning."""
    global _warned
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        if not _warned:
            _warned = True
            warnings.warn(_MESHGRID_WARNING, UserWarning, stacklevel=2)
        indexing = "ij"
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"meshgrid(): expected Tensor as element 0 in argument 0, but got "
                            f"{parser_type_name(t)}")
    if any(t.dtype is not tensors[0].dtype for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    if any(t.device != tensors[0].device for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same device")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t}")
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    n = len(tensors)
    # output dim of each input: "xy" swaps the first two (the grid is (len(y), len(x), ...))
    place = list(range(n))
    if indexing == "xy" and n >= 2:
        place[0], place[1] = 1, 0
    sizes = [0] * n
    for t, p in zip(tensors, place):
        sizes[p] = t.numel()
    grids = []
    for t, p in zip(tensors, place):
        view = [1] * n
        view[p] = sizes[p]
        grids.append(t.reshape(tuple(view)).expand(tuple(sizes)))
    return tuple(grids)


def _repeats_error(input, repeats, dim):
    got = ", ".join(parser_type_name(a)
                    for a in (input, repeats))
    return TypeError(f"repeat_interleave() received an invalid combination of arguments - got "
                     f"({got}), but expected one of:\n"
                     " * (Tensor input, Tensor repeats, int dim = None, *, int output_size = "
                     "None)\n * (Tensor input, int repeats, int dim = None, *, int output_size "
                     "= None)\n * (Tensor repeats, *, int output_size = None)\n")


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element (slice along ``dim``; the flattened input when ``dim`` is None) repeated
    ``repeats`` times (an int, or one count per element); ``repeat_interleave(counts)`` gives
    ``arange(len(counts))`` repeated by ``counts``."""
    from .basic import arange, tensor
    from .index import index_select
    from .reduce_args import _wrap
    if not isinstance(input, Tensor):
        raise _repeats_error(input, repeats, dim)
    if repeats is None:  # the counts themselves: indices 0..n-1 repeated
        counts = input
        return repeat_interleave(arange(counts.numel(), device=counts.device), counts, 0,
                                 output_size=output_size)
    if dim is None:
        input = input.reshape(-1)
        dim = 0
    d = _wrap(dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    if isinstance(repeats, Tensor):
        if repeats.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if repeats.dtype.is_floating_point or repeats.dtype is D.bool_:
            raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for "
                                      f"'{D.scalar_name(repeats.dtype)}'")
        counts = np.asarray(repeats.cpu()._data, dtype=np.int64).reshape(-1)
        if counts.shape[0] == 1:  # one count (0-d or one element) for every element
            counts = np.broadcast_to(counts, (n,))
        if counts.shape[0] != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but "
                               f"got repeats.size(0) = {counts.shape[0]} and input.size"
                               f"({d}) = {n}")
        if (counts < 0).any():
            raise RuntimeError("repeats can not be negative")
        if output_size is not None and output_size != int(counts.sum()):
            raise RuntimeError("allocated size does not match required size")
        index = tensor(np.repeat(np.arange(n, dtype=np.int64), counts), device=input.device)
        if input.ndim == 0:
            input = input.reshape(1)
        return index_select(input, d, index)
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)):
        raise _repeats_error(input, repeats, dim)
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    if output_size is not None and output_size != n * repeats:
        raise RuntimeError("allocated size does not match required size")
    if input.ndim == 0:
        input = input.reshape(1)
    shape = tuple(input.shape)
    grown = input.unsqueeze(d + 1).expand(shape[:d + 1] + (int(repeats),) + shape[d + 1:])
    return grown.clone(memory_format="contiguous_format").view(
        shape[:d] + (shape[d] * int(repeats),) + shape[d + 1:])
