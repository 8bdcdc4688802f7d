"""Tensor's conversions: to NumPy and Python values (numpy, __array__, item, tolist, len/iter,
bool/float/int/index/complex, ``in``) and to other dtypes and devices (to, type, float/double/...,
cpu, cuda).

They are written as methods of ``TensorConversions``, which is not a base class: ``bind`` copies
them into Tensor's own namespace beside the class body's methods, because jitgrad.compile wraps
the methods ``vars(Tensor)`` holds (and so that lookups stay one dict deep).
"""
from __future__ import annotations

import types
import warnings

import numpy as np

from . import _dtype as D
from ._size import CPU
from .ops.parser_errors import parser_type_name
from .tensor import Tensor  # tensor.py imports this module at its end, once Tensor exists

_SCALAR_GRAD_WARNING = (
    "Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
    "Consider using tensor.detach() first. (Triggered internally at "
    "/__w/pytorch/pytorch/torch/csrc/autograd/generated/python_variable_methods.cpp:822.)")


class TensorConversions:
    """The methods ``bind`` gives Tensor (never instantiated, never inherited)."""

    # ------------------------------------------------------------------ to NumPy / Python values

    def numpy(self, *, force=False):
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        a = self._data
        if a.__class__ is not np.ndarray:
            raise TypeError(_NUMPY_CUDA_ERROR)
        if a.size == 0 and any(a.strides):
            # PyTorch hands NumPy an empty array with no strides to keep: all of them 0
            return np.lib.stride_tricks.as_strided(a, strides=(0,) * a.ndim)
        return a

    def __array__(self, dtype=None, copy=None):
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        a = self._data
        if a.__class__ is not np.ndarray:
            raise TypeError(_NUMPY_CUDA_ERROR)
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        return a.copy() if copy else a

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._host().reshape(()).item()

    def tolist(self):
        return self._host().tolist()

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __bool__(self):
        if self._data.size != 1:
            if self._data.size == 0:
                raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._host().reshape(()))

    def _python_scalar(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self._host().reshape(()).item()

    def __float__(self):
        if self._requires_grad:
            warnings.warn(_SCALAR_GRAD_WARNING, UserWarning, stacklevel=2)
        return float(self._python_scalar())

    def __int__(self):
        return int(self._python_scalar())

    def __index__(self):
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __contains__(self, element):
        if not isinstance(element, (Tensor, int, float, bool, np.number, np.bool_)):
            raise RuntimeError("Tensor.__contains__ only supports Tensor or scalar, but you "
                               f"passed in a {type(element)}.")
        return bool((element == self).any().item())

    # ------------------------------------------------------------------ dtype/device conversions

    def to(self, *args, **kwargs):
        """PyTorch's ``to(dtype, non_blocking=False, copy=False)``, ``to(device=None,
        dtype=None, non_blocking=False, copy=False)``, ``to(other, non_blocking=False,
        copy=False)``; ``memory_format=`` keyword."""
        from ._size import check_device
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        memory_format = kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError("to() received an invalid combination of arguments - got "
                            f"unexpected keyword arguments {sorted(kwargs)}")
        rest = args
        if args:
            a = args[0]
            if isinstance(a, Tensor):
                dtype, device, rest = a.dtype, a.device, args[1:]
            elif isinstance(a, D.dtype) or a in (float, int, bool):
                dtype, rest = a, args[1:]
            elif a is not None and not isinstance(a, bool):
                device, rest = a, args[1:]
                if rest and (isinstance(rest[0], D.dtype) or rest[0] is None):
                    dtype, rest = rest[0], rest[1:]
        if len(rest) > 2 or not all(isinstance(b, (bool, int)) for b in rest):
            raise TypeError("to() received an invalid combination of arguments - got "
                            f"({', '.join(parser_type_name(a) for a in args)})")
        if len(rest) == 2:
            copy = rest[1]
        t = self
        if device is not None:
            dev = check_device(device)
            if dev != self.device:
                if memory_format not in (None, "preserve_format"):
                    # one _to_copy, as PyTorch records it: the layout (and dtype) on the way
                    return _to_device_in_format(self, dev, dtype, memory_format)
                from .ops.copies import to_device
                t = to_device(self, dev)
                copy = False
        # ATen's to_will_alias: an explicit format aliases when suggest_memory_format (not
        # is_contiguous) names it, so a transposed matrix .to(contiguous_format) is itself
        relayout = memory_format is not None and memory_format != "preserve_format" and \
            _suggested_format(t) != memory_format
        if dtype is None or D.to_dtype(dtype) is t.dtype:
            if not (copy or relayout):
                return t
            dtype = t.dtype
        from .ops.copies import cast
        return cast(t, D.to_dtype(dtype), memory_format)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        if dtype is None:
            from .autograd.node import _tensor_type_name
            return _tensor_type_name(self, legacy=True)
        if isinstance(dtype, str):
            dt = _LEGACY_TYPE_NAMES.get(dtype)
            if dt is None:
                raise ValueError(f"invalid type: '{dtype}'")
            dtype = dt
        elif isinstance(dtype, type) and issubclass(dtype, Tensor):  # torch.DoubleTensor
            dtype = dtype._dt
        return self.to(D.to_dtype(dtype))

    def type_as(self, other):
        if not isinstance(other, Tensor):  # an ndarray has a dtype too: PyTorch's TypeError
            from .ops.parser_errors import input_type_error
            raise input_type_error("type_as", (other,), {}, arg="other")
        return self.to(other.dtype)

    def float(self, memory_format=None):
        return self.to(D.float32, memory_format=memory_format)

    def double(self, memory_format=None):
        return self.to(D.float64, memory_format=memory_format)

    def half(self, memory_format=None):
        return self.to(D.float16, memory_format=memory_format)

    def long(self, memory_format=None):
        return self.to(D.int64, memory_format=memory_format)

    def int(self, memory_format=None):
        return self.to(D.int32, memory_format=memory_format)

    def short(self, memory_format=None):
        return self.to(D.int16, memory_format=memory_format)

    def char(self, memory_format=None):
        return self.to(D.int8, memory_format=memory_format)

    def byte(self, memory_format=None):
        return self.to(D.uint8, memory_format=memory_format)

    def bool(self, memory_format=None):
        return self.to(D.bool_, memory_format=memory_format)

    def cpu(self):
        if self._data.__class__ is np.ndarray:
            return self
        from .ops.copies import to_device
        return to_device(self, CPU)

    def cuda(self, device=None):
        from ._size import check_device
        dev = check_device("cuda" if device is None else device)
        if dev.type != "cuda":
            raise RuntimeError(f"Invalid device, must be cuda device (got {device})")
        if self._data.__class__ is not np.ndarray:
            return self
        from .ops.copies import to_device
        return to_device(self, dev)


# Tensor.type("torch.FloatTensor") & co (PyTorch's legacy type names)
_LEGACY_TYPE_NAMES = {
    f"torch.{name}Tensor": dt for name, dt in (
        ("Float", D.float32), ("Double", D.float64), ("Half", D.float16), ("Long", D.int64),
        ("Int", D.int32), ("Short", D.int16), ("Char", D.int8), ("Byte", D.uint8),
        ("Bool", D.bool_))}

_NUMPY_CUDA_ERROR = ("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to "
                     "copy the tensor to host memory first.")


def bind(cls) -> None:
    """Copy the conversions into ``cls``'s namespace, named as if written in its body."""
    for name, fn in vars(TensorConversions).items():
        if isinstance(fn, types.FunctionType):
            fn.__qualname__ = f"{cls.__name__}.{name}"
            setattr(cls, name, fn)


def _suggested_format(t):
    """ATen's suggest_memory_format of ``t``."""
    if t._data.ndim not in (4, 5):  # (the common case: no stride work)
        return "contiguous_format"
    from ._memory_format import suggest_memory_format
    return suggest_memory_format(t._data.shape, t.stride())


def _to_device_in_format(t, dev, dtype, memory_format):
    """``t.to(dev, dtype, memory_format=fmt)`` across devices as one ``_to_copy``: one transfer
    that lands in ``fmt``'s strides (and ``dtype``), one ToCopyBackward0 (its gradient goes back
    to ``t``'s device; the engine casts it back to ``t``'s dtype). Host to CUDA: the host packs
    the elements in the new layout's memory order, then one upload (no device relayout kernel
    after the transfer); CUDA to host: the strided copy kernel lays the result out on the
    device, then one download."""
    from ._memory_format import CHANNELS_LAST_RANK, copy_device, format_strides, record_if_empty
    from .ops.composite import record
    from .ops.copies import _to_device_backward
    want = t.dtype if dtype is None else D.to_dtype(dtype)
    d = t._data
    if dev.type == "cuda":
        from ._cuda_array import CudaArray
        st = format_strides(d.shape, t.stride(), memory_format)
        data = CudaArray.from_host_strided(d if d.dtype == want.np else d.astype(want.np), st)
    else:
        data = copy_device(d, memory_format, want.np).to_host_strided()
    if not (t.dtype.is_floating_point and want.is_floating_point):
        out = Tensor._make(data)
    else:
        out = record("ToCopyBackward0", (t,), data, _to_device_backward,
                     attrs={"device": t.device})
    return record_if_empty(out, memory_format) if memory_format in CHANNELS_LAST_RANK else out
