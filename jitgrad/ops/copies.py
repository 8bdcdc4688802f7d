"""Copies recorded as autograd nodes: ``cast`` (``t.to(dtype)``), ``clone``, ``to_device``
(``t.to(device)``); and two unrecorded helpers: ``accumulate_`` (the engine's in-place gradient
accumulation) and ``where_any`` (tensor_env's ``select``, which may see Python scalars)."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .._memory_format import (
    CHANNELS_LAST_RANK,
    copy_device,
    copy_host,
    dense_strided,
    keeps_numpy_layout,
    preserved_strides,
    record_if_empty,
    to_device_data,
)
from ..tensor import Tensor
from .composite import record
from .parser_errors import input_type_error


def _cast_backward(node, g):
    return (g,)  # the engine casts the gradient back to the input's dtype


def cast(t: Tensor, dt, memory_format=None) -> Tensor:
    """``t.to(dtype)``: a copy in the new dtype, recorded as ToCopyBackward0 (strides kept,
    PyTorch's preserve_format, unless ``memory_format=contiguous_format``)."""
    dt = D.to_dtype(dt)
    d = t._data
    if d.__class__ is not np.ndarray:  # CUDA: the layout the format names, as on the host
        data = copy_device(d, memory_format, dt.np)
    elif memory_format in CHANNELS_LAST_RANK:
        data = copy_host(d, memory_format, dt.np)
    elif memory_format == "contiguous_format":
        data = d.astype(dt.np, order="C")
    else:
        data = _preserved_host_copy(t, d, dt.np)
    if not dt.is_floating_point:
        out = Tensor._make(data)
    else:
        out = record("ToCopyBackward0", (t,), data, _cast_backward)
    return record_if_empty(out, memory_format) if memory_format in CHANNELS_LAST_RANK else out


def _preserved_host_copy(t: Tensor, d, np_dtype):
    """A preserve_format copy of host array ``d`` in ``np_dtype`` (clone, to(dtype)): a dense
    input's exact strides, size-1 dims included (NumPy's own copy gives those C strides),
    else ATen's infer_dense_strides (NumPy's order K breaks ties at size-1 dims otherwise)."""
    if (not d.flags.c_contiguous or 1 in d.shape) and not keeps_numpy_layout(d):
        data = dense_strided(np.empty, d.shape, preserved_strides(d.shape, t.stride()), np_dtype)
        if data is not None:
            np.copyto(data, d, casting="unsafe")
            return data
    return d.astype(np_dtype, order="K", copy=True)


def _clone_backward(node, g):
    return (g,)


def clone(t: Tensor, memory_format=None) -> Tensor:
    try:  # (free until raised) a non-Tensor t: PyTorch's TypeError
        d = t._data
    except AttributeError:
        raise input_type_error("clone", (t,), {}) from None
    if d.__class__ is np.ndarray:
        if memory_format in CHANNELS_LAST_RANK:
            out = record("CloneBackward0", (t,), copy_host(d, memory_format), _clone_backward)
            return record_if_empty(out, memory_format)
        if memory_format not in (None, "preserve_format", "contiguous_format"):
            _check_memory_format(memory_format, d.ndim)
        data = np.array(d, copy=True, order="C") if memory_format == "contiguous_format" \
            else _preserved_host_copy(t, d, d.dtype)
    else:
        if memory_format not in (None, "preserve_format", "contiguous_format") and \
                memory_format not in CHANNELS_LAST_RANK:
            _check_memory_format(memory_format, d.ndim)
        data = copy_device(d, memory_format)
    out = record("CloneBackward0", (t,), data, _clone_backward)
    if not data.size and data.__class__ is np.ndarray and memory_format != "contiguous_format":
        # ATen counts an empty tensor non-overlapping and dense, so preserve_format keeps its
        # strides (empty(0, 3).t().clone(): (1, 3)); NumPy's empty copy forgets them (_layout)
        from .._layout import record_layout
        record_layout(out, t.stride(), 0)
    return out


def _check_memory_format(memory_format, ndim):
    need = {"channels_last": 4, "channels_last_3d": 5}.get(memory_format)
    if need is not None and ndim != need:
        raise RuntimeError(f"required rank {need} tensor to use {memory_format} format")
    raise NotImplementedError(f"jitgrad does not support memory_format={memory_format}")


def _to_device_backward(node, g):
    return (g.to(node.ctx.attrs["device"]),)


def to_device(t: Tensor, dev) -> Tensor:
    """``t.to(device)``: one counted transfer, recorded as ToCopyBackward0 (the gradient goes
    back to ``t``'s device)."""
    data = to_device_data(t, dev)  # t's dense strides kept (channels-last included)
    if not t.dtype.is_floating_point:
        out = Tensor._make(data)
    else:
        out = record("ToCopyBackward0", (t,), data, _to_device_backward,
                     attrs={"device": t.device})
    if data.size == 0 and data.__class__ is np.ndarray:
        from .._layout import record_layout  # NumPy's empty array forgets them
        record_layout(out, t.stride(), 0)
    return out


def accumulate_(dst: Tensor, g: Tensor) -> None:
    """``dst += g`` in place on the storage (gradient accumulation; not recorded)."""
    d = dst._data
    if d.__class__ is not np.ndarray:
        from .elementwise_call import device_add_into
        device_add_into(d, g._data)
    else:
        np.add(d, g._data, out=d, casting="unsafe")
    dst._vc.value += 1


def where_any(cond, a, b):
    """``where`` accepting Python scalars on either branch and a Python bool condition (the
    tensor-env ``select``: a condition on scalar operands is decided in Python)."""
    if not isinstance(cond, Tensor):
        return a if cond else b
    from .functional import where
    return where(cond, a, b)
