"""``out=``: PyTorch's rules for writing a function's result into a given tensor, in one place.

* autograd does not record into ``out``: with grad mode on and an argument requiring grad,
  PyTorch refuses ("functions with out=... arguments don't support automatic differentiation");
* the result is cast to ``out``'s dtype when PyTorch's ``canCast`` allows it (``cast="can"``,
  elementwise ops), to any dtype (``"any"``: reductions compute in the out dtype), or must match
  exactly (``"exact"``: matrix products);
* a mismatched ``out`` is resized (with PyTorch's deprecation warning unless it was empty);
* an ``out`` on another device than the result is refused (TensorIterator's or resize_out's
  message), never moved; factories make their result on ``out``'s device;
* an ``out`` partly overlapping an input is refused; ``out`` is returned, its version bumped.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from .parser_errors import parser_type_name

__all__ = ["write_out", "with_out", "can_cast"]

_RESIZE_WARNING = (
    "An output with one or more elements was resized since it had shape {old}, which does not "
    "match the required output shape {new}. This behavior is deprecated, and in a future "
    "PyTorch release outputs will not be resized unless they have zero elements. You can "
    "explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
    "t.resize_(0).")

ARANGE_RESIZE_WARNING = (
    "The number of elements in the out tensor of shape {old} is {n_old} which does not match "
    "the computed number of elements {n_new}. Note that this may occur as a result of rounding "
    "error. The out tensor will be resized to a tensor of shape ({n_new},).")

_PARTIAL_OVERLAP = ("unsupported operation: some elements of the input tensor and the "
                    "written-to tensor refer to a single memory location. Please clone() the "
                    "tensor before performing the operation.")


def can_cast(src, dst) -> bool:
    """PyTorch's ``canCast``: no floating -> integral, no non-bool -> bool."""
    return src._category <= dst._category


def dtype_mismatch(src, dst):
    """clamp's error for an ``out`` of another dtype."""
    return RuntimeError(f"Found dtype {D.scalar_name(dst)} but expected {D.scalar_name(src)}")


def _partial_overlap(a, b) -> bool:
    if a.__class__ is not np.ndarray or b.__class__ is not np.ndarray:
        return False
    if not np.may_share_memory(a, b):
        return False
    same = (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape and a.strides == b.strides)
    return not same and np.shares_memory(a, b)


def _device_error(result, out, iterator):
    """PyTorch's error for an ``out`` on another device than the result: TensorIterator names
    the first non-CPU device among its operands, then the one that differs; structured kernels'
    ``resize_out`` names the result's device and out's."""
    have, got = result.device, out.device
    if iterator:
        first, other = (have, got) if have.type != "cpu" else (got, have)
        return RuntimeError("Expected all tensors to be on the same device, but found at least "
                            f"two devices, {first} and {other}!")
    return RuntimeError(f"Expected out tensor to have device {have}, but got {got} instead")


def _refuse_autograd(fname, out, inputs, result=None):
    if grad_mode.is_grad_enabled() and (
            (result is not None and result._requires_grad) or out._requires_grad
            or any(isinstance(t, Tensor) and t._requires_grad for t in inputs)):
        raise RuntimeError(f"{fname}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")


def with_out(fname: str, mode: str = "can", cast_error=None, resize_warning=_RESIZE_WARNING,
             iterator=None):
    """Give ``fn`` PyTorch's ``out=`` keyword. ``mode``: ``"can"`` (the result is cast to
    ``out``'s dtype where ``canCast`` allows), ``"dtype"`` (computed in ``out``'s dtype through
    ``fn``'s ``dtype=``, as sum/prod/cumsum do), ``"factory"`` (made in ``out``'s dtype and on
    its device through ``dtype=`` and ``device=``, as zeros/full/rand do), ``"input"`` (``out`` must
    have the input's dtype, as amax/amin require), ``"exact"`` (the result's dtype, as clamp
    requires). ``cast_error(src, dst)``: the exception for a refused cast. ``resize_warning``:
    the text warned when a non-empty ``out`` is resized (None: resized silently)."""
    def wrap(fn):
        @functools.wraps(fn)
        def with_out_kw(*args, out=None, **kwargs):
            if out is None:
                return fn(*args, **kwargs)
            if not isinstance(out, Tensor):
                raise TypeError(f"{fname}(): argument 'out' must be Tensor, not "
                                f"{parser_type_name(out)}")
            inputs = [a for a in args if isinstance(a, Tensor)]
            _refuse_autograd(fname, out, inputs)
            if mode in ("dtype", "factory") and kwargs.get("dtype") is None:
                kwargs["dtype"] = out.dtype
            if mode == "factory" and kwargs.get("device") is None:
                kwargs["device"] = out.device
            if mode == "input" and inputs and inputs[0].dtype is not out.dtype:
                raise RuntimeError(
                    "Expected the dtype for input and out to match, but got "
                    f"{D.scalar_name(inputs[0].dtype)} for input's dtype and "
                    f"{D.scalar_name(out.dtype)} for out's dtype.")
            with grad_mode.no_grad():
                res = fn(*args, **kwargs)
            err = cast_error(res.dtype, out.dtype) if cast_error is not None else None
            cast = {"dtype": "any", "factory": "any", "exact": "exact"}.get(mode, "can")
            return write_out(fname, res, out, inputs, cast=cast, cast_error=err,
                             resize_warning=resize_warning,
                             iterator=mode == "can" if iterator is None else iterator)
        return with_out_kw
    return wrap


def write_out(fname: str, result: Tensor, out, inputs=(), cast: str = "can",
              cast_error=None, resize_warning=_RESIZE_WARNING, iterator=None) -> Tensor:
    """Write ``result`` (computed by ``fname`` from ``inputs``) into ``out`` and return ``out``;
    ``result`` when ``out`` is None. ``cast_error``: the exception for a refused cast (the
    default is PyTorch's RuntimeError "result type X can't be cast to the desired output
    type Y"). ``iterator``: the op is one of ATen's TensorIterator ops (the default for
    ``cast="can"``, the elementwise family), which checks ``out``'s device before its dtype
    and words the error its own way (:func:`_device_error`)."""
    if out is None:
        return result
    if not isinstance(out, Tensor):
        raise TypeError(f"{fname}(): argument 'out' must be Tensor, not {parser_type_name(out)}")
    _refuse_autograd(fname, out, inputs, result)
    if iterator is None:
        iterator = cast == "can"
    # a result on another device than out (one GPU: NumPy storage or not) is refused, never
    # moved: out keeps its device, as PyTorch's resize_out/TensorIterator demand
    wrong_device = (result._data.__class__ is np.ndarray) != (out._data.__class__ is np.ndarray)
    if wrong_device and iterator:
        raise _device_error(result, out, iterator)
    src, dst = result.dtype, out.dtype
    if src is not dst:
        if cast == "exact":
            if cast_error is not None:
                raise cast_error
            raise RuntimeError(f"Expected out tensor to have dtype {D.c_name(src)}, but got "
                               f"{D.c_name(dst)} instead")
        if cast == "can" and not can_cast(src, dst):
            if cast_error is not None:
                raise cast_error
            raise RuntimeError(f"result type {D.scalar_name(src)} can't be cast to the desired "
                               f"output type {D.scalar_name(dst)}")
    if wrong_device:
        raise _device_error(result, out, iterator)
    for t in inputs:
        if isinstance(t, Tensor) and _partial_overlap(t._data, out._data):
            raise RuntimeError(_PARTIAL_OVERLAP)
    data = result._data
    if tuple(out._data.shape) != tuple(data.shape):
        if out._data.size != 0 and resize_warning is not None:
            warnings.warn(resize_warning.format(old=list(out._data.shape), new=list(data.shape),
                                                n_old=out._data.size, n_new=data.size),
                          UserWarning, stacklevel=3)
        out._data = data.astype(dst.np) if data.__class__ is np.ndarray else \
            (data if src is dst else result.to(dst)._data)
        out._vc.value += 1
        return out
    with grad_mode.no_grad():
        out.copy_(result)
    return out
