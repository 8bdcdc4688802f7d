"""Binning: bucketize, searchsorted, histc (no gradients: integer results / counts).

The index of each value among sorted boundaries is one primitive, ``_insertion_points``: NumPy's
binary search on the CPU; on CUDA the count of boundaries before each value (a broadcast
comparison and a sum, registered ops and a device reduction). NaN values go past every boundary
and NaN boundaries sort last, as in PyTorch's binary search.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor

__all__ = ["bucketize", "searchsorted", "histc"]


def _insertion_points(boundaries, values, right):
    """int64 positions of ``values`` (shape S) in ``boundaries`` (1-D, or rows matching S's
    leading dims), ``side='right'`` when ``right``."""
    side = "right" if right else "left"
    b, v = boundaries._data, values._data
    if b.__class__ is np.ndarray and v.__class__ is np.ndarray:
        if b.ndim == 1:
            return Tensor._make(np.asarray(np.searchsorted(b, v, side=side), dtype=np.int64))
        rows_b = b.reshape(-1, b.shape[-1])
        rows_v = v.reshape(-1, v.shape[-1])
        out = np.empty(rows_v.shape, np.int64)
        for i in range(rows_b.shape[0]):
            out[i] = np.searchsorted(rows_b[i], rows_v[i], side=side)
        return Tensor._make(out.reshape(v.shape))
    # device: position = how many boundaries precede the value (left: b < v, right: b <= v,
    # written as "not b >= v" / "not b > v" so a NaN value counts every boundary)
    bb = boundaries.unsqueeze(-2) if b.ndim > 1 else boundaries
    before = (bb > values.unsqueeze(-1)) if right else (bb >= values.unsqueeze(-1))
    return before.logical_not().sum(-1)


def _as_tensor_values(values, like):
    from .basic import tensor
    if isinstance(values, Tensor):
        return values
    return tensor(values, device=like.device)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """Indices where ``input``'s values would be inserted into ``sorted_sequence`` (its last
    dim; 1-D, or one row per leading index of ``input``) keeping it sorted."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites,"
                               " got side of left while right was True")
        right = side == "right"
    seq = sorted_sequence
    values = _as_tensor_values(input, seq)
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if seq.ndim > 1 and (values.ndim != seq.ndim or
                         tuple(values.shape[:-1]) != tuple(seq.shape[:-1])):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(seq.shape)} and input value tensor "
            f"{list(values.shape)}")
    if sorter is not None:
        if tuple(sorter.shape) != tuple(seq.shape):
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(seq.shape)}and got sorter "
                               f"tensor {list(sorter.shape)}")
        from .index import gather
        seq = gather(seq, -1, sorter)
    ct = D.result_type(seq, values)
    seq, values = seq.detach().to(ct), values.detach().to(ct)
    out = _insertion_points(seq, values, right)
    return out.to(D.int32) if out_int32 else out


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value: ``i`` with ``boundaries[i-1] < x <= boundaries[i]`` (``right``:
    ``boundaries[i-1] <= x < boundaries[i]``)."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def histc(input, bins=100, min=0, max=0):  # noqa: A002 - PyTorch's names
    """Counts in ``bins`` equal-width bins over [min, max] (both 0: the data's range); values
    outside are ignored, ``max`` itself falls in the last bin. No gradient."""
    from .basic import zeros
    from .functional import where
    from .index import scatter_add
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for "
                                  f"'{D.scalar_name(input.dtype)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                           "dimension 0")
    x = input.detach().reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and x.numel():
        lo, hi = float(x.min().item()), float(x.max().item())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    # PyTorch's bin: (x - min) * bins / (max - min) in the input's precision, truncated; x ==
    # max goes to the last bin; values outside [min, max] (and NaN) to a dropped extra bin
    pos = ((x - lo) * bins / (hi - lo)).floor().clamp(0, bins - 1)
    inside = (x >= lo) & (x <= hi)
    idx = where(inside, pos, _full_like0(x, bins)).long()
    counts = scatter_add(zeros(bins + 1, dtype=input.dtype, device=input.device), 0, idx,
                         where(inside, _full_like0(x, 1), _full_like0(x, 0)))
    return counts[:bins].clone()


def _full_like0(like, v):
    from .basic import full
    return full((), v, dtype=like.dtype, device=like.device)
