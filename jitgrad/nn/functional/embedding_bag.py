"""``F.embedding_bag``: sums, means or maxima of bags of embedding rows, one
``EmbeddingBagBackward0`` node over ``weight`` and ``per_sample_weights``.

The bag layout (which input position falls in which bag, what counts towards a bag's size,
the gradient scales of ``scale_grad_by_freq``) is worked out on the host from the integer
``input``/``offsets``, as ATen's CPU kernel reads them; the arithmetic on ``weight`` is a
composition of tensor ops (``index_select`` + ``index_add`` for sum/mean, a padded
``(bags, longest bag, dim)`` gather + ``max(dim=1)`` for max), so it runs wherever the weight
lives and differentiates (twice, too) through the composition."""
from __future__ import annotations

import warnings

import numpy as np

from ... import _dtype as D
from ...ops.composite import record, record_composition
from ...tensor import Tensor

__all__ = ["embedding_bag"]

_MODES = ("sum", "mean", "max")


def _type_name(t):
    return f"torch.{D.scalar_name(t.dtype)}Tensor"


def _check_types(input, offsets, weight, psw):
    """ATen's check_arguments: index dtypes, weight dtype, per_sample_weights' dtype."""
    for t in (input, offsets):  # PyTorch names argument #1 'indices' for both
        if t.dtype not in (D.int64, D.int32):
            raise RuntimeError(
                "Expected tensor for argument #1 'indices' to have one of the following scalar "
                f"types: Long, Int; but got {_type_name(t)} instead (while checking arguments "
                "for embedding_bag)")
    if weight.dtype not in (D.float16, D.float32, D.float64):
        raise RuntimeError(
            "Expected tensor for argument #1 'weight' to have one of the following scalar types: "
            f"Half, BFloat16, Float, Double; but got {_type_name(weight)} instead (while "
            "checking arguments for embedding_bag)")
    if psw is not None and psw.dtype is not weight.dtype:
        raise RuntimeError(
            "Expected tensor for argument #1 'weight' to have the same type as tensor for "
            "argument #1 'per_sample_weights'; but type "
            f"{_type_name(weight)} does not equal {_type_name(psw)} (while checking arguments "
            "for embedding_bag)")


def _host(t):
    return np.asarray(t.detach().cpu().numpy()).astype(np.int64).reshape(-1)


def _layout(idx, offs, offs_type, num, include_last_offset, padding_idx, fbgemm):
    """(bag of each position or -1, number of bags, positions that count). With
    ``include_last_offset`` the last offset closes the last bag (positions after it belong to
    no bag: the documented meaning; PyTorch's CPU kernel reads uninitialised memory there)."""
    n = idx.size
    if offs.size:
        o0, on = int(offs[0]), int(offs[-1])
        if o0 != 0:
            raise RuntimeError(
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
                f"start from position 0. However, got {o0}\n[ {offs_type}{{}} ]")
        if on > n:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                               f"offsets[-1] of {on}")
    if include_last_offset and offs.size < 1:
        raise RuntimeError("include_last_offset: number of offset should be at least 1")
    bad = np.nonzero((idx < 0) | (idx >= num))[0]
    if bad.size:  # the message of the kernel PyTorch picks: FBGEMM's (float32/float16
        k = int(bad[0])  # sum/mean) or ATen's own loop (float64, max). FBGEMM's position is
        # the one its single-threaded run reports; with several threads PyTorch numbers it
        # within a chunk of bags (and may read the wrong element), which depends on the machine
        if fbgemm:
            raise RuntimeError(f"Index {k} of input takes value {int(idx[k])} which is not in "
                               f"the valid range [0, {num})")
        raise RuntimeError("embedding_bag: Expected idx >= 0 && idx < num_embeddings but found "
                           f"idx to be {int(idx[k])}")
    starts = offs[:-1] if include_last_offset else offs
    ends = np.append(starts[1:], offs[-1] if include_last_offset else n) if starts.size else starts
    bag = np.full(n, -1, dtype=np.int64)
    for b, (s, e) in enumerate(zip(starts.tolist(), ends.tolist())):
        bag[s:e] = b
    live = bag >= 0
    if padding_idx is not None:
        live &= idx != padding_idx
    return bag, starts.size, np.nonzero(live)[0]


def _freq_scale(idx, pos):
    """Per position, the gradient scale of ``scale_grad_by_freq``, as ATen's CPU backward
    (``_embedding_bag_dense_backward_cpu_sum_mean``) applies it: the rows are visited by
    sorted index, and the k-th distinct row is divided by the count of ``sorted_indices[k]``
    (not of its own index: for [0, 1, 2, 1] row 2 is divided by 2). Reproduced so the CPU
    gradients are PyTorch's."""
    order = np.argsort(idx, kind="stable")
    srt = idx[order]
    counts = np.bincount(idx, minlength=int(idx.max()) + 1 if idx.size else 1)
    uniq = np.unique(srt)
    scale_of_row = {int(r): 1.0 / counts[srt[k]] for k, r in enumerate(uniq)}
    return np.array([scale_of_row[int(idx[p])] for p in pos], dtype=np.float64)


def _scale_grad(t, scale):
    """``t`` unchanged, its gradient multiplied by the constant column ``scale``."""
    def backward(node, g):
        return (g * scale,)
    return record("MulBackward0", (t,), t._data, backward)


def _bags(w, psw, idx_t, pos_t, bag_t, denom, n_bags, mode, freq, dense):
    """The composition on ``weight`` (and ``per_sample_weights``)."""
    from ...ops.factories import zeros
    dim = w.shape[1]
    if mode == "max":
        slots, present = dense
        rows = w.index_select(0, slots.reshape(-1)).reshape(n_bags, -1, dim)
        rows = rows.masked_fill(~present.unsqueeze(2), float("-inf"))
        best = rows.max(1)[0] if rows.shape[1] else zeros(n_bags, dim, dtype=w.dtype,
                                                          device=w.device)
        return best.masked_fill(~present.any(1, keepdim=True), 0.0)
    rows = w.index_select(0, idx_t)
    if freq is not None:
        rows = _scale_grad(rows, freq)
    if psw is not None:
        rows = rows * psw.index_select(0, pos_t).unsqueeze(1)
    out = zeros(n_bags, dim, dtype=w.dtype, device=w.device).index_add(0, bag_t, rows)
    return out / denom if mode == "mean" else out


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """PyTorch's ``F.embedding_bag``: for each bag (``offsets`` into a 1-D ``input``, or each
    row of a 2-D one) the sum, mean or elementwise max of its ``weight`` rows; entries equal to
    ``padding_idx`` are left out (and not counted by the mean); an empty bag gives zeros;
    ``per_sample_weights`` scale the rows (mode 'sum'). Checks and messages in PyTorch's order:
    the Python wrapper's, then ATen's."""
    if weight.dtype is D.int64 and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    psw = per_sample_weights
    if psw is not None and tuple(input.shape) != tuple(psw.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({psw.shape}) is not None, then "
                         f"it must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
        from ...ops.factories import arange
        offsets = arange(0, input.numel(), input.shape[1], dtype=input.dtype,
                         device=input.device)
        include_last_offset = False
        input = input.reshape(-1)
        if psw is not None:
            psw = psw.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        from .._device import _embedding_renorm_
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if psw is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub.")
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{num} "
                               f"through {num - 1}, but got {padding_idx}")
        padding_idx = padding_idx % num
    _check_types(input, offsets, weight, psw)
    idx = _host(input)
    bag, n_bags, pos = _layout(idx, _host(offsets), _type_name(offsets), num,
                               include_last_offset, padding_idx,
                               mode != "max" and weight.dtype is not D.float64)
    dev = weight.device

    def const(a, dtype=None):
        t = Tensor._make(np.ascontiguousarray(a if dtype is None else a.astype(dtype)))
        return t.to(dev)

    idx_t, pos_t, bag_t = const(idx[pos]), const(pos), const(bag[pos])
    sizes = np.bincount(bag[pos], minlength=n_bags)
    npdt = np.dtype(str(weight.dtype).split(".")[-1])
    denom = freq = dense = None
    if mode == "mean":
        denom = const(np.maximum(sizes, 1)[:, None], npdt)
    if scale_grad_by_freq and pos.size:
        freq = const(_freq_scale(idx, pos)[:, None], npdt)
    if mode == "max":  # each bag's rows padded to the longest bag; `present` marks real ones
        longest = int(sizes.max()) if n_bags else 0
        slots = np.zeros((n_bags, longest), dtype=np.int64)
        present = np.zeros((n_bags, longest), dtype=bool)
        rank = np.arange(pos.size) - np.searchsorted(bag[pos], bag[pos])  # place in its bag
        slots[bag[pos], rank] = idx[pos]
        present[bag[pos], rank] = True
        dense = (const(slots), const(present))
    inputs = (weight, psw)
    return record_composition(
        "EmbeddingBagBackward0", inputs,
        lambda w, p: _bags(w, p, idx_t, pos_t, bag_t, denom, n_bags, mode, freq, dense))
