"""Mask ops: ``masked_fill`` (MaskedFillBackward0/1), ``masked_select`` (a bool-mask read),
``nonzero`` and ``argwhere``."""
from __future__ import annotations

import numbers

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from .composite import record
from .functional_args import invalid_combination
from .index_getitem import getitem
from .index_keys import _cuda
from .parser_errors import parser_errors

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


_MASKED_FILL_SIGS = ("(Tensor input, Tensor mask, Tensor value)",
                     "(Tensor input, Tensor mask, Number value)")
_MASKED_FILL_METHOD_SIGS = ("(Tensor mask, Tensor value)", "(Tensor mask, Number value)")


def _masked_fill_args(name, self, args, kwargs):
    """``(input, mask, value)`` as PyTorch's parser binds a masked_fill call (``self``: the
    method form's tensor, None for ``torch.masked_fill``), or its TypeError when no overload
    (a Tensor mask, and a Tensor or Number value) takes the arguments."""
    names = ("mask", "value") if self is not None else ("input", "mask", "value")
    if len(args) == len(names) and not kwargs:
        given = args
    elif len(args) > len(names) or any(k not in names for k in kwargs) or any(
            n in kwargs for n in names[:len(args)]) or len(args) + len(kwargs) != len(names):
        given = None
    else:
        given = list(args) + [kwargs[n] for n in names[len(args):]]
    if given is not None:
        input, mask, value = (self, *given) if self is not None else given
        if isinstance(input, Tensor) and isinstance(mask, Tensor) and isinstance(
                value, (Tensor, numbers.Number, np.number, np.bool_)):
            return input, mask, value
    raise invalid_combination(name, args, kwargs, _MASKED_FILL_METHOD_SIGS
                              if self is not None else _MASKED_FILL_SIGS)


def masked_fill(*args, **kwargs):
    return _masked_fill(*_masked_fill_args("masked_fill", None, args, kwargs))


def masked_fill_method(self, *args, **kwargs):
    """``Tensor.masked_fill``."""
    return _masked_fill(*_masked_fill_args("masked_fill", self, args, kwargs))


def masked_fill_(self, *args, **kwargs):
    """``Tensor.masked_fill_`` (writes overlapping memory too, as PyTorch's does)."""
    _, mask, value = _masked_fill_args("masked_fill_", self, args, kwargs)
    from .inplace import apply_inplace
    return apply_inplace(self, _masked_fill, mask, value, _overlap=False)


#: the C++ type a complex fill value fails to convert to
_C_VALUE_TYPES = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
                  "float64": "double", "uint8": "unsigned char", "int8": "signed char",
                  "int16": "short", "int32": "int", "int64": "long"}


def _real_value(value, dt):
    """A complex fill value as the real one PyTorch converts it to (Scalar.to<T> refuses a
    non-zero imaginary part, except for bool)."""
    if value.imag == 0:
        return value.real
    if dt is D.bool_:
        return True
    raise RuntimeError(f"value cannot be converted to type {_C_VALUE_TYPES.get(dt.name, dt.name)}"
                       " without overflow")


def _masked_fill(input, mask, value):
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
    if isinstance(value, complex):  # (Python's complex and np.complex128)
        value = _real_value(value, input.dtype)
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
            # C-contiguous whatever the layouts (ATen clones with MemoryFormat::Contiguous)
            data = where(mask, value, input.detach()).contiguous()._data.astype(
                input._data.dtype, copy=False)
        return record(name, inputs, data, _masked_fill_backward,
                      attrs={"mask": mask._data.broadcast_to(shape)})
    # C-contiguous whatever the operands' layouts (ATen clones with MemoryFormat::Contiguous)
    data = np.ascontiguousarray(
        np.where(mask._data, np.asarray(value).astype(input._data.dtype), input._data))
    return record(name, inputs, data, _masked_fill_backward,
                  attrs={"mask": np.broadcast_to(mask._data, shape)})


@parser_errors
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
        if as_tuple:
            return (Tensor._make(np.zeros(n, np.int64)),)
        return _nonzero_layout(Tensor._make(np.zeros((n, 0), np.int64)))
    nz = np.nonzero(input._data)
    if as_tuple:
        return tuple(Tensor._make(a.astype(np.int64)) for a in nz)
    # PyTorch's CPU kernel fills an (ndim, n) buffer and returns its transpose: strides (1, n)
    return _nonzero_layout(Tensor._make(np.stack(nz, axis=0).astype(np.int64).T))


def _nonzero_layout(out):
    """``nonzero``'s ``(n, ndim)`` result reports strides ``(1, n)`` as PyTorch's (an empty one
    cannot say them through its array: recorded, _layout)."""
    if not out._data.size:
        from .._layout import record_layout
        record_layout(out, (1, out._data.shape[0]), 0)
    return out


# ----------------------------------------------------------------------------- masked_scatter
# PyTorch's CPU masked_scatter_: the masked positions (row-major order) take ``source``'s first
# elements. Built on the device-neutral pieces: the mask's running count gives each masked
# position its source index (1-based, into ``source`` behind one pad slot that unmasked positions
# read), one gather with a range check (CPU: raised at once; CUDA: the device-side flag, raised at
# the next synchronizing point as PyTorch's asynchronous assert), then ``where``.

def _masked_scatter_rule():
    from .index_rules import _INT64, RULES, IndexRule
    if "masked_scatter" not in RULES:
        RULES["masked_scatter"] = IndexRule(
            _INT64, (RuntimeError, "masked_scatter(): index dtype"), False,
            (RuntimeError, "Number of elements of source < number of ones in mask"))
    return "masked_scatter"


def _masked_scatter_backward(node, g):
    """MaskedScatterBackward0: ``g`` with zeros where scattered for the input; for ``source``,
    ``g``'s masked elements in order, zero-padded to ``source``'s size (a scatter-add of ``g``
    at the source index of each position; unmasked positions go to a discarded last slot)."""
    from .basic import zeros
    from .functional import where
    a = node.ctx.attrs
    need_self, need_src = node.ctx.needs_input_grad
    mask = Tensor._make(a["mask"])
    gi = where(mask, 0.0, g) if need_self else None
    gs = None
    if need_src:
        n = a["numel"]
        slots = zeros(n + 1, dtype=g.dtype, device=g.device)
        gs = slots.scatter_add(0, Tensor._make(a["slot"]), g.reshape(-1))[:n] \
            .reshape(a["src_shape"])
    return (gi, gs)


def _masked_scatter_checks(input, mask, source, pos):
    import warnings

    from .functional_args import _need_tensor
    _need_tensor(mask, "masked_scatter", pos, "mask")
    _need_tensor(source, "masked_scatter", pos + 1, "source")
    if source.dtype is not input.dtype:
        raise RuntimeError("masked_scatter: expected self and source to have same dtypes but got"
                           f"{D.scalar_name(input.dtype)} and {D.scalar_name(source.dtype)}")
    if mask.dtype is D.uint8:
        warnings.warn("masked_scatter_ received a mask with dtype torch.uint8, this behavior is "
                      "now deprecated,please use a mask with dtype torch.bool instead.",
                      UserWarning, stacklevel=3)
    if mask.dtype is not D.bool_:
        raise RuntimeError("masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {D.scalar_name(mask.dtype)}")


def masked_scatter(input, mask, source, *, _pos=2):
    """``torch.masked_scatter``: ``input`` (broadcast with ``mask``) with its masked positions
    filled, in row-major order, from ``source``'s first elements (MaskedScatterBackward0)."""
    from .basic import zeros
    from .elementwise_call import broadcast_shapes, check_same_device
    from .functional import where
    from .gather_scatter import gather_data
    from .shape_join import cat
    if isinstance(mask, Tensor):  # expand_outplace(mask, self) comes first
        shape = broadcast_shapes(mask._data.shape, input._data.shape)
    _masked_scatter_checks(input, mask, source, _pos)
    check_same_device((input, mask, source))
    with grad_mode.no_grad():
        m = mask.expand(shape) if tuple(mask.shape) != shape else mask
        flat = m.reshape(-1)
        slot = where(flat, flat.cumsum(0), 0)  # 1-based source index; 0: the pad slot
        padded = cat([zeros(1, dtype=source.dtype, device=source.device),
                      source.detach().reshape(-1)])
        vals = Tensor._make(gather_data(padded._data, 0, slot._data, _masked_scatter_rule()))
        x = input.detach()
        data = where(m, vals.reshape(shape), x.expand(shape) if tuple(x.shape) != shape else x)
        n = source.numel()
        back = where(flat, slot - 1, n)  # the backward's scatter slots (n: discarded)
    return record("MaskedScatterBackward0", (input, source), data._data,
                  _masked_scatter_backward,
                  attrs={"mask": m._data, "slot": back._data, "numel": n,
                         "src_shape": tuple(source.shape)})


def masked_scatter_method(input, mask, source):
    return masked_scatter(input, mask, source, _pos=1)


def masked_scatter_(input, mask, source):
    """``x.masked_scatter_(mask, source)``: the mask must expand to ``x``'s shape (PyTorch's
    in-place form does not broadcast ``x``)."""
    from . import inplace
    if isinstance(mask, Tensor) and tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:  # PyTorch's expand error names the mask's C++ type
            dev = "CUDA" if mask.device.type == "cuda" else "CPU"
            raise RuntimeError(
                f"expand({dev}{D.scalar_name(mask.dtype)}Type{{{list(mask.shape)}}}, "
                f"size={list(input.shape)}): the number of sizes provided ({input.ndim}) must "
                f"be greater or equal to the number of dimensions in the tensor ({mask.ndim})")
        mask = mask.expand(input.shape)
    return inplace.apply_inplace(input, masked_scatter_method, mask, source)
