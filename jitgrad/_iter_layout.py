"""TensorIterator's dim order and the output layout it gives elementwise results.

One home for ATen's ``TensorIteratorBase::reorder_dimensions`` (an insertion sort of the dims
by stride, operand by operand) and for what ``fast_set_up`` / ``allocate_or_resize_outputs``
make of it: the strides PyTorch gives a freshly allocated elementwise output. Used by the
eager elementwise path (outputs), the cascade sum (reduction order), the strided sigmoid
routine (iteration order) and ``Tensor.dim_order``.
"""
from __future__ import annotations

from ._memory_format import _non_overlapping_and_dense

__all__ = ["dim_comparator", "sort_dims", "reorder_dimensions", "elementwise_output_strides",
           "elementwise_output_perm", "elementwise_output_layout", "dense_strides_like",
           "is_contiguous_strides", "is_channels_last_strides"]


def dim_comparator(shape, operand_strides, reduction_outputs=0):
    """ATen's ``should_swap(dim0, dim1)``: 1 to swap, -1 to keep, 0 undecided. Operands are
    consulted in order (outputs first in ATen); a stride of 0 (a broadcast dim) defers to the
    next operand; equal strides put the smaller size first or defer. The first
    ``reduction_outputs`` operands are reduction outputs: their zero-stride (reduced) dims go
    to the front."""

    def should_swap(d0, d1):
        for k, strides in enumerate(operand_strides):
            s0, s1 = strides[d0], strides[d1]
            if k < reduction_outputs and (s0 == 0) != (s1 == 0):
                return 1 if s1 == 0 else -1
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    return should_swap


def sort_dims(ndim, should_swap) -> list:
    """ATen's insertion sort with ambiguous comparisons: the dims, innermost first, starting
    from the reversed order (ties keep it)."""
    perm = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm


def reorder_dimensions(shape, operand_strides, reduction_outputs=0) -> list:
    """TensorIterator's ``perm_``: the dims innermost first, for operands' strides aligned to
    ``shape`` (broadcast dims given stride 0)."""
    return sort_dims(len(shape), dim_comparator(shape, operand_strides, reduction_outputs))


def dense_strides_like(shape, strides) -> tuple:
    """ATen's ``infer_dense_strides``: dense strides keeping the dim order of a non-dense
    tensor's ``strides`` (what preserve_format gives ``empty_like``/``clone``/``to`` of a
    sliced or expanded tensor): ``reorder_dimensions`` of the one operand."""
    out, step = [0] * len(shape), 1
    for d in reorder_dimensions(shape, (strides,)):
        out[d] = step
        if shape[d] > 1:  # size 0 counted as 1
            step *= shape[d]
    return tuple(out)


def is_contiguous_strides(shape, strides) -> bool:
    """ATen's ``is_contiguous()``: size-1 dims' strides don't count; empty tensors are."""
    expected = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n == 0:
            return True
        if n != 1:
            if s != expected:
                return False
            expected *= n
    return True


def is_channels_last_strides(shape, strides) -> bool:
    """ATen's ``is_contiguous(ChannelsLast)`` for a 4-D tensor (C, W, H, N innermost first)."""
    if len(shape) != 4:
        return False
    if 0 in shape:
        return True
    expected = 1
    for d in (1, 3, 2, 0):
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def elementwise_output_perm(shape, operands):
    """The dims, outermost first, of the dense layout ATen allocates an elementwise output
    with, or None for C-contiguous (``fast_set_up``, else ``reorder_dimensions`` and
    ``allocate_or_resize_outputs``). ``operands``: (shape, strides in elements) of the inputs
    (and of a defined output that keeps its size), in ATen's operand order; 0-dim operands
    (scalars) broadcast everywhere."""
    return elementwise_output_layout(shape, operands)[0]


def elementwise_output_layout(shape, operands):
    """``(perm, strides)``: ``perm`` as ``elementwise_output_perm``; ``strides`` (elements) the
    output's own where they differ from the dense ones ``perm`` rebuilds, else None. They can
    differ only at size-1 dims, whose strides no contiguity check reads: ``fast_set_up``'s
    dense case gives the output the operands' strides as they are (a (1, 2, 2) tensor with
    strides (7, 1, 2) times itself has strides (7, 1, 2)), where the sorted order rebuilds
    them from the sizes inside (4 there)."""
    nd = len(shape)
    if nd < 2:
        return None, None
    shape = tuple(shape)
    # fast_set_up: every operand of the output's shape, all contiguous / channels-last / dense
    # with equal strides (the output takes those strides)
    if all(tuple(s) == shape for s, _ in operands):
        if all(is_contiguous_strides(shape, st) for _, st in operands):
            return None, None
        if nd == 4 and all(is_channels_last_strides(shape, st) for _, st in operands):
            return (0, 2, 3, 1), None
        first = tuple(operands[-1][1])
        if (all(tuple(st) == first for _, st in operands)
                and _non_overlapping_and_dense(shape, first)):
            # outermost first; a size-1 dim sharing a stride goes inside the larger dim, so
            # the dense strides rebuilt from this order are the operands' own, but for size-1
            # dims of any other stride
            perm = tuple(sorted(range(nd), key=lambda d: (-first[d], -shape[d], d)))
            if perm == tuple(range(nd)):
                return None, None
            return perm, (first if first != _dense_strides(shape, perm) else None)
    # compute_strides: broadcast dims (size 1 against a larger size) get stride 0
    aligned = []
    for s, st in operands:
        off = nd - len(s)
        row = [0] * off
        for i, (n, k) in enumerate(zip(s, st)):
            row.append(0 if n == 1 and shape[off + i] != 1 else k)
        aligned.append(row)
    perm = reorder_dimensions(shape, aligned)
    if perm == list(range(nd - 1, -1, -1)):
        return None, None
    return tuple(reversed(perm)), None


def _dense_strides(shape, perm) -> tuple:
    """The dense strides of ``shape`` with the dims ``perm`` (outermost first), as ATen's
    ``compatible_stride`` builds them (a size-1 dim takes the product of the sizes inside)."""
    out, step = [0] * len(shape), 1
    for d in reversed(perm):
        out[d] = step
        step *= shape[d]
    return tuple(out)


def elementwise_output_strides(shape, operands):
    """The strides ATen allocates an elementwise output with, or None for C-contiguous
    (operands as ``elementwise_output_perm``)."""
    perm, strides = elementwise_output_layout(shape, operands)
    if perm is None or strides is not None:
        return strides
    return _dense_strides(shape, perm)
