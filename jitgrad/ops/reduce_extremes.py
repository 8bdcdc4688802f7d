"""Extremes: max, min (whole or along a dim, with indices), amax, amin, aminmax, argmax, argmin;
PyTorch's errors for an empty reduction (no identity) and its three ways of sharing the
gradient among ties (evenly over the whole input, evenly over the matches per slice, to the
selected index)."""
from __future__ import annotations

import functools

import numpy as np

from ..tensor import Tensor
from .composite import record
from .out import with_out
from .parser_errors import parser_type_name
from .reduce_args import (
    STRICT_KEEPDIM,
    _attrs,
    _cuda,
    _dims,
    _expand_back,
    _given_dims,
    _np_axes,
    _wrap,
    keepdim_without_dim,
    reduction_entry,
)
from .return_types import _return_type

__all__ = ["max", "min", "amax", "amin", "aminmax", "argmax", "argmin"]

MaxResult = _return_type("max")
MinResult = _return_type("min")
AminmaxResult = _return_type("aminmax", ("min", "max"))


def _evenly_backward(node, g):
    """max()/min(): the gradient is shared evenly among tied extremes (a NaN result is tied with
    every NaN of the input: PyTorch's evenly_distribute_backward)."""
    x = node.saved("x")
    out = node.saved("out")
    hit = (x == out) | (x.isnan() & out.isnan())
    mask = hit.to(x.dtype)
    if x.is_cuda:  # PyTorch's CUDA branch multiplies: mask * (grad / count)
        return (mask * (g / mask.sum()),)
    # its CPU branch writes grad / count into zeros: the other elements are exactly +0
    from .functional import where
    return (where(hit, g / mask.sum(), 0.0),)


def _count_backward(node, g):
    """amax/amin (and aminmax): the gradient is shared evenly among the elements equal to the
    result (PyTorch's scale_grad_by_count: a NaN result matches nothing, so the gradient is
    NaN)."""
    x = node.saved("x")
    out = node.saved("out")
    a = node.ctx.attrs
    if not a["keepdim"]:
        out = out.reshape(a["kept"])
    mask = (x == out).to(x.dtype)
    count = mask.sum(a["axes"] if x.ndim else None, keepdim=True)
    return (_expand_back(g, node) * mask / count,)


def _select_backward(node, g, _indices_grad=None):
    """max(dim)/min(dim): the gradient goes to the selected index."""
    from .index import scatter_into_zeros
    a = node.ctx.attrs
    if not a["shape"]:  # a 0-d input: the value is the input
        return (g.reshape(()),)
    idx = node.ctx.attrs["indices"]
    if not a["keepdim"]:
        g = g.unsqueeze(a["axes"][0])
        idx = np.expand_dims(idx, a["axes"][0]) if idx.__class__ is np.ndarray else \
            idx.expand_dims(a["axes"][0])
    return (scatter_into_zeros(g, a["shape"], a["axes"][0], idx),)


def _check_dim_arg(name, dim, as_int=False):
    """``dim`` of max/min/argmax/argmin is one int (PyTorch's argument parser: TypeError)."""
    if dim is None or isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        return
    if as_int:
        raise TypeError(f"{name}(): argument 'dim' must be int, not "
                        f"{parser_type_name(dim)}")
    raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, "
                    f"{parser_type_name(dim)}), but expected one of:\n * (Tensor input)\n"
                    " * (Tensor input, int dim, bool keepdim)\n * (Tensor input, Tensor other)")


def _check_nonempty(input, name, dims, full_error=RuntimeError, full_tail=None, sep="():"):
    """PyTorch's errors for max/min/amax/amin/argmax/argmin/aminmax without an identity:
    ``dims`` None is a full reduction, else the dims as the user wrote them."""
    shape = input._data.shape
    if input._data.size != 0:
        return
    if dims is None:
        tail = full_tail if full_tail is not None else (
            " Specify the reduction dim with the 'dim' argument.")
        raise full_error(f"{name}(): Expected reduction dim to be specified for input.numel() "
                         f"== 0.{tail}")
    for d in dims:
        if shape and shape[_wrap(d, len(shape))] == 0:
            raise IndexError(f"{name}{sep} Expected reduction dim {d} to have non-zero size.")


def _extreme(input, dim, keepdim, which):
    np_fn = np.max if which == "max" else np.min
    arg_fn = np.argmax if which == "max" else np.argmin
    _check_dim_arg(which, dim)
    if dim is None:
        _check_nonempty(input, which, None)
        if input._data.__class__ is not np.ndarray:
            data = _cuda().device_reduce("a" + which, input, _dims(None, input.ndim), False, None)
        else:
            data = np.asarray(np_fn(input._data))
        return record("MaxBackward1" if which == "max" else "MinBackward1", (input,), data,
                      _evenly_backward, save=(("x", input),), save_outputs=(("out", 0),),
                      attrs=_attrs(input, _dims(None, input.ndim), False))
    d = _wrap(dim, input._data.ndim)
    _check_nonempty(input, which, (d,))
    ax = d if input._data.ndim else None
    if input._data.__class__ is not np.ndarray:
        from .._cuda_array import CudaArray
        from ..backends import cuda as B
        R = B.kernels().reduce
        vals, idx = (R.max_dim if which == "max" else R.min_dim)(input._data.kview(), d,
                                                                  keepdim)
        data, idx = CudaArray.wrap(vals), CudaArray.wrap(idx)
    else:
        idx = np.asarray(arg_fn(input._data, axis=ax, keepdims=keepdim and ax is not None)
                         ).astype(np.int64)
        data = np.asarray(np_fn(input._data, axis=ax, keepdims=keepdim and ax is not None))
    attrs = _attrs(input, (d,), keepdim)
    attrs["indices"] = idx
    values = record("MaxBackward0" if which == "max" else "MinBackward0", (input,), data,
                    _select_backward, attrs=attrs)
    cls = MaxResult if which == "max" else MinResult
    return cls(values, Tensor._make(idx))


def max(input, dim=None, keepdim=False, *, other=None):  # noqa: A001
    if isinstance(dim, Tensor):
        from .functional import maximum
        return maximum(input, dim)
    return _extreme(input, dim, keepdim, "max")


def min(input, dim=None, keepdim=False):  # noqa: A001
    if isinstance(dim, Tensor):
        from .functional import minimum
        return minimum(input, dim)
    return _extreme(input, dim, keepdim, "min")


def _amax_data(input, axes, keepdim, which):
    if input._data.__class__ is not np.ndarray:
        return _cuda().device_reduce(which, input, axes, keepdim, None)
    fn = np.max if which == "amax" else np.min
    return np.asarray(fn(input._data, axis=_np_axes(input, axes), keepdims=keepdim))


def _amax(input, dim, keepdim, which):
    axes = _dims(dim if dim != () else None, input._data.ndim)
    _check_nonempty(input, which, _given_dims(dim))
    data = _amax_data(input, axes, keepdim, which)
    return record("AmaxBackward0" if which == "amax" else "AminBackward0", (input,), data,
                  _count_backward, save=(("x", input),), save_outputs=(("out", 0),),
                  attrs=_attrs(input, axes, keepdim))


@with_out("amax", "input")
def amax(input, dim=(), keepdim=False):
    return _amax(input, dim, keepdim, "amax")


@with_out("amin", "input")
def amin(input, dim=(), keepdim=False):
    return _amax(input, dim, keepdim, "amin")


def _aminmax_backward(node, gmin, gmax):
    x = node.saved("x")
    a = node.ctx.attrs
    gx = None
    for g, name in ((gmin, "min"), (gmax, "max")):
        if g is None:
            continue
        out = node.saved(name)
        if not a["keepdim"]:
            out = out.reshape(a["kept"])
        mask = (x == out).to(x.dtype)
        part = _expand_back(g, node) * mask / mask.sum(a["axes"] if x.ndim else None,
                                                         keepdim=True)
        gx = part if gx is None else gx + part
    return (gx,)


def aminmax(input, *, dim=None, keepdim=False):
    if input._data.size == 0:
        if dim is None:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        _check_nonempty(input, "aminmax", (_wrap(dim, input.ndim),), sep=":")
    axes = _dims(dim, input._data.ndim)
    lo = _amax_data(input, axes, keepdim, "amin")
    hi = _amax_data(input, axes, keepdim, "amax")
    lo, hi = record("AminmaxBackward0", (input,), [lo, hi], _aminmax_backward,
                    save=(("x", input),), save_outputs=(("min", 0), ("max", 1)),
                    attrs=_attrs(input, axes, keepdim))
    return AminmaxResult(lo, hi)


def _arg(input, dim, keepdim, which):
    name = "arg" + which
    _check_dim_arg(name, dim, as_int=True)
    if input.dtype.name == "bool":
        raise RuntimeError(f"{name}(): does not support bool input")
    _check_nonempty(input, name, None if dim is None else (_wrap(dim, input.ndim),),
                    full_error=IndexError, full_tail="")
    if input._data.__class__ is not np.ndarray:
        return _cuda().device_arg(input, dim, keepdim, which)
    fn = np.argmax if which == "max" else np.argmin
    if dim is None:
        r = np.asarray(fn(input._data))
        return Tensor._make((r.reshape((1,) * input.ndim) if keepdim else r).astype(np.int64))
    return Tensor._make(np.asarray(fn(input._data, axis=_wrap(dim, input.ndim) if input.ndim
                                      else None, keepdims=keepdim and input.ndim > 0)
                                   ).astype(np.int64))


def argmax(input, dim=None, keepdim=False):
    return _arg(input, dim, keepdim, "max")


def argmin(input, dim=None, keepdim=False):
    return _arg(input, dim, keepdim, "min")


# axis= / keepdims= (NumPy's names, accepted by PyTorch's parser) on every reduction here, and
# keepdim a strict bool where PyTorch's is (reduction_entry; one form for the methods, whose
# TypeErrors count positions from self)
from .numpy_aliases import accept_numpy_aliases as _aliases  # noqa: E402

_method_forms = {}
for _name in __all__:
    if _name in STRICT_KEEPDIM:
        _method_forms[_name] = reduction_entry(globals()[_name], method=True)
        globals()[_name] = reduction_entry(globals()[_name])
    else:
        globals()[_name] = _aliases(globals()[_name])
del _name
amax_method, amin_method = _method_forms["amax"], _method_forms["amin"]
argmax_method, argmin_method = _method_forms["argmax"], _method_forms["argmin"]


def _keepdim_checked(fn, method):
    """``max``/``min`` refusing ``keepdim=`` without a dim with PyTorch's TypeError (worded
    for the method or the function)."""
    name = fn.__name__

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        if kwargs and len(args) < 2:
            err = keepdim_without_dim(name, args, kwargs, method)
            if err is not None:
                raise err
        return fn(*args, **kwargs)
    return checked


max_method = _keepdim_checked(_method_forms["max"], True)
min_method = _keepdim_checked(_method_forms["min"], True)
max, min = _keepdim_checked(max, False), _keepdim_checked(min, False)  # noqa: A001
