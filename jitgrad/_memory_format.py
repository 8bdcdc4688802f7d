"""PyTorch's memory formats on host arrays: the channels-last strides, the two channels-last
tests ATen keeps apart, and allocation / copy in a requested format.

A channels_last tensor has dims ``N, C, H, W`` stored as ``N, H, W, C`` (channels_last_3d:
``N, C, D, H, W`` as ``N, D, H, W, C``). NumPy can express that layout: allocate the array in
the stored order and move the channel axis back to position 1 (a view). Only an empty tensor
needs its strides recorded (``_layout``), since NumPy gives an empty array zero strides.

ATen has two different questions, and the entry points use different ones:

* ``is_contiguous(memory_format=channels_last)`` (``compute_channels_last_contiguous_2d``):
  the strides are exactly channels-last ones, ignoring size-1 dims. ``contiguous(fmt)``
  returns ``self`` when this holds.
* ``suggest_memory_format`` (``is_channels_last_strides_2d``): the strides *look* channels-last,
  with ambiguous cases (C == 1, N111 tensors) falling back to contiguous. ``to(memory_format=)``
  returns ``self`` when the suggested format is the requested one.

CUDA storages (``CudaArray``) keep any strides, so the same layouts are made directly:
``format_strides`` names the strides a copy in a format gets (the one rule for both devices),
``CudaArray.empty_strided`` / ``copy_strided`` allocate and copy through them, and
``to_device_data`` moves a tensor between devices keeping them, as PyTorch's ``_to_copy``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["CHANNELS_LAST_RANK", "check_rank", "channels_last_strides", "contiguous_in_order",
           "is_contiguous_in", "suggest_memory_format", "new_host", "copy_host",
           "record_if_empty", "keeps_numpy_layout", "dense_strided", "preserved_strides",
           "format_strides", "copy_device", "to_device_data"]

CHANNELS_LAST_RANK = {"channels_last": 4, "channels_last_3d": 5}
_ORDER = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}  # innermost stored dim first


def check_rank(memory_format, ndim):
    """PyTorch's error for a channels-last format on a tensor of the wrong rank."""
    need = CHANNELS_LAST_RANK.get(memory_format)
    if need is not None and ndim != need:
        raise RuntimeError(f"required rank {need} tensor to use {memory_format} format")


def channels_last_strides(shape) -> tuple:
    """ATen's get_channels_last_strides_2d / _3d (no special case for size 0 or 1)."""
    st = [0] * len(shape)
    acc = 1
    for d in _ORDER[len(shape)]:
        st[d] = acc
        acc *= shape[d]
    return tuple(st)


def contiguous_in_order(shape, strides, order) -> bool:
    """Whether ``strides`` (elements) are the packed ones for the dims taken innermost first in
    ``order``, size-1 dims skipped: ATen's is_contiguous test (compute_contiguous,
    compute_channels_last_contiguous_2d / _3d) for any dim order."""
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def is_contiguous_in(shape, strides, memory_format) -> bool:
    """ATen's compute_channels_last_contiguous_2d / _3d: size-1 dims are skipped."""
    order = _ORDER.get(len(shape))
    if order is None or len(shape) != CHANNELS_LAST_RANK[memory_format]:
        return False
    return contiguous_in_order(shape, strides, order)


def _strides_like_channels_last(shape, strides) -> bool:
    """ATen's is_channels_last_strides_2d_s4 / _3d_s5: ambiguous layouts count as NCHW."""
    if strides[1] == 0:
        return False
    lo = 0
    for d in _ORDER[len(shape)]:
        if shape[d] == 0 or strides[d] < lo:
            return False
        if d == 0 and lo == strides[1]:
            return False
        lo = strides[d] * (shape[d] if shape[d] > 1 else 1)
    return True


def suggest_memory_format(shape, strides) -> str:
    """TensorBase::suggest_memory_format (its default, not the exact-match variant)."""
    if len(shape) in (4, 5) and _strides_like_channels_last(shape, strides):
        return "channels_last" if len(shape) == 4 else "channels_last_3d"
    return "contiguous_format"


def _stored_order(ndim):
    return (0, *range(2, ndim), 1)


def new_host(np_new, shape, dtype, memory_format, *fill):
    """A fresh host array of ``shape`` in a channels-last ``memory_format`` (rank checked)."""
    check_rank(memory_format, len(shape))
    shape = tuple(shape)
    stored = np_new(tuple(shape[d] for d in _stored_order(len(shape))), *fill, dtype=dtype)
    return np.moveaxis(stored, -1, 1)


def copy_host(d, memory_format, dtype=None):
    """A copy of host array ``d`` (cast to ``dtype``) in a channels-last ``memory_format``."""
    out = new_host(np.empty, d.shape, d.dtype if dtype is None else dtype, memory_format)
    np.copyto(out, d, casting="unsafe")
    return out


def record_if_empty(t, memory_format):
    """An empty result's channels-last strides, which NumPy cannot keep (``_layout``)."""
    d = t._data
    if d.__class__ is np.ndarray and d.size == 0:
        from ._layout import record_layout
        record_layout(t, channels_last_strides(d.shape), 0)
    return t


def keeps_numpy_layout(d) -> bool:
    """Whether NumPy's own copy of host array ``d`` has PyTorch's preserve_format strides: a
    C-contiguous array whose size-1 dims also have C strides (NumPy's flag ignores those,
    ATen's empty_strided keeps them: a (2, 3, 1, 1) channels-last tensor is (3, 1, 3, 3))."""
    if not d.flags.c_contiguous:
        return False
    if 1 not in d.shape or d.size == 0:
        return True
    acc = d.itemsize
    for n, s in zip(reversed(d.shape), reversed(d.strides)):
        if s != acc:
            return False
        acc *= n
    return True


def _non_overlapping_and_dense(shape, strides) -> bool:
    """ATen's compute_non_overlapping_and_dense."""
    dims = sorted((d for d in range(len(shape)) if shape[d] >= 2), key=lambda d: strides[d])
    need = 1
    for d in dims:
        if strides[d] != need:
            return False
        need *= shape[d]
    return True


def dense_strided(np_new, shape, strides, dtype, *fill):
    """A fresh non-empty host array with exactly ``strides`` (elements) when they are
    non-overlapping and dense, as ATen's preserve_format keeps them; else None."""
    n = 1
    for s in shape:
        n *= s
    if n == 0 or not _non_overlapping_and_dense(shape, strides):
        return None
    buf = np_new((n,), *fill, dtype=dtype)
    isz = buf.itemsize
    return np.lib.stride_tricks.as_strided(buf, tuple(shape), tuple(s * isz for s in strides))


def preserved_strides(shape, strides) -> tuple:
    """ATen's preserve_format strides for a copy (empty_like / clone / _to_copy): a
    non-overlapping dense tensor's own (an empty tensor counts as dense), else
    infer_dense_strides."""
    n = 1
    for s in shape:
        n *= s
    if n == 0 or _non_overlapping_and_dense(shape, strides):
        return tuple(strides)
    from ._iter_layout import dense_strides_like
    return dense_strides_like(shape, strides)


def format_strides(shape, strides, memory_format) -> tuple:
    """The strides of a copy / ``*_like`` result of a tensor of ``shape``/``strides`` in
    ``memory_format`` (None: preserve_format); a channels-last format checks the rank."""
    if memory_format in CHANNELS_LAST_RANK:
        check_rank(memory_format, len(shape))
        return channels_last_strides(shape)
    if memory_format == "contiguous_format":
        from ._layout import contiguous_strides
        return contiguous_strides(shape)
    return preserved_strides(shape, strides)


def copy_device(d, memory_format, dtype=None):
    """A copy of CUDA storage ``d`` (cast to ``dtype``) in ``memory_format``: the strides
    ``format_strides`` names, written through by the strided copy kernel."""
    st = format_strides(d.shape, d.st, memory_format)
    from ._layout import contiguous_strides
    if st == contiguous_strides(d.shape):
        return d.astype(d.dtype if dtype is None else dtype)  # the contiguous copy kernel
    return d.copy_strided(st, dtype)


def to_device_data(t, dev):
    """``t``'s data on ``dev`` with ``t``'s preserve_format strides (PyTorch's ``.to(device)``
    / ``.cpu()`` keep a dense tensor's, channels-last included): one transfer."""
    d = t._data
    if d.size:  # the common case, plain C strides (size-1 dims included): no stride work
        from ._cuda_array import CudaArray, c_strides
        if dev.type == "cuda" and d.__class__ is np.ndarray and keeps_numpy_layout(d):
            return CudaArray.from_host(d)
        if dev.type != "cuda" and d.__class__ is CudaArray and d.st == c_strides(d.shape):
            return d.to_host()
    st = preserved_strides(d.shape, t.stride())
    from ._layout import contiguous_strides
    dense_c = st == contiguous_strides(d.shape)
    if dev.type == "cuda":
        from ._cuda_array import CudaArray
        if dense_c or d.size == 0:
            out = CudaArray.from_host(d)
            return out if dense_c else CudaArray(out.buf, d.shape, st)
        return CudaArray.from_host_strided(d, st)  # (packs a non-dense input into ``st``)
    if dense_c:
        return d.to_host()
    if d.size == 0:
        return np.empty(d.shape, d.dtype)  # (the caller records the strides)
    if st != d.st:
        d = d.copy_strided(st)
    return d.to_host_strided()
