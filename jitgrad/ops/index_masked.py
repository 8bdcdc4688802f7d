"""Mask ops: ``masked_fill`` (MaskedFillBackward0/1), ``masked_select`` (a bool-mask read),
``nonzero`` and ``argwhere``."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from .composite import record
from .index_getitem import getitem
from .index_keys import _cuda

# ----------------------------------------------------------------------------- masked & nonzero


def _masked_fill_backward(node, g):
    """MaskedFillBackward0/1: ``g`` with zeros where filled for the input; for a tensor value
    (MaskedFillBackward1) the sum of ``g`` over the filled elements."""
    from .functional import where
    mask = Tensor._make(node.ctx.attrs["mask"])
    needs = node.ctx.needs_input_grad
    gi = where(mask, 0.0, g) if needs[0] else None
    if len(needs) == 1:
        return (gi,)
    return (gi, where(mask, g, 0.0).sum() if needs[1] else None)


#: PyTorch's masked_fill_ names the mask's dtype by its C++ type
_C_TYPE_NAMES = {"uint8": "unsigned char", "int8": "signed char", "int16": "short int",
                 "int32": "int", "int64": "long int", "float16": "c10::Half",
                 "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double"}


def masked_fill(input, mask, value):
    if not isinstance(mask, Tensor) or mask.dtype is not D.bool_:
        got = _C_TYPE_NAMES.get(mask.dtype.name, mask.dtype.name) if isinstance(mask, Tensor) \
            else type(mask).__name__
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{got}")
    tvalue = None
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        tvalue = value  # the Tensor overload: MaskedFillBackward1, the value gets a gradient
        if value._data.__class__ is np.ndarray or input._data.__class__ is np.ndarray:
            value = value.item()  # a 0-d CUDA value stays on the device (no host read)
        else:
            value = value.detach()
    if isinstance(value, (int, float, np.integer, np.floating)):
        # PyTorch converts the value to input's dtype with its overflow check (Scalar.to<T>),
        # whether or not the mask selects anything
        from .factories import _checked_fill
        value = _checked_fill(value, input.dtype)
    name, inputs = ("MaskedFillBackward0", (input,)) if tvalue is None else \
        ("MaskedFillBackward1", (input, tvalue))
    shape = input._data.shape
    if mask._data.shape != shape:
        # PyTorch: expand_outplace(mask, self), so the mask may broadcast the result larger
        from .elementwise_call import broadcast_shapes
        shape = broadcast_shapes(mask._data.shape, shape)
    if input._data.__class__ is not np.ndarray or mask._data.__class__ is not np.ndarray:
        # the elementwise ``where`` kernel, cast back to input's dtype like the CPU path
        from .elementwise_call import check_same_device
        from .functional import where
        check_same_device((input, mask))
        with grad_mode.no_grad():
            data = where(mask, value, input.detach())._data.astype(input._data.dtype,
                                                                  copy=False)
        return record(name, inputs, data, _masked_fill_backward,
                      attrs={"mask": mask._data.broadcast_to(shape)})
    data = np.where(mask._data, np.asarray(value).astype(input._data.dtype), input._data)
    return record(name, inputs, data, _masked_fill_backward,
                  attrs={"mask": np.broadcast_to(mask._data, shape)})


def masked_select(input, mask):
    from .elementwise_call import broadcast_shapes
    if not isinstance(mask, Tensor) or mask.dtype is not D.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes(mask._data.shape, input._data.shape)
    x = input.expand(shape) if tuple(input.shape) != shape else input
    m = mask._data
    return getitem(x, Tensor._make(np.broadcast_to(m, shape) if m.__class__ is np.ndarray
                                   else m.broadcast_to(shape)))


def argwhere(input):
    """``torch.argwhere``: ``nonzero(input)`` (a ``(n, ndim)`` int64 tensor)."""
    return nonzero(input)


def nonzero(input, *, as_tuple=False):
    if input._data.__class__ is not np.ndarray:
        return _cuda().device_nonzero(input, as_tuple)
    if input._data.ndim == 0:  # PyTorch reads a 0-d tensor as a 1-element one
        n = int(input._data != 0)
        return (Tensor._make(np.zeros(n, np.int64)),) if as_tuple else \
            Tensor._make(np.zeros((n, 0), np.int64))
    nz = np.nonzero(input._data)
    if as_tuple:
        return tuple(Tensor._make(a.astype(np.int64)) for a in nz)
    return Tensor._make(np.stack(nz, axis=1).astype(np.int64) if nz else
                        np.zeros((0, 0), np.int64))
