"""Sums and products: sum, mean, prod, logsumexp (a sum in log space), all/any/count_nonzero,
cumsum. VJPs are written with registered ops; CUDA tensors take the kernel layer's tree
reductions and scans (``reduce_cuda``), so forward and backward stay on the device."""
from __future__ import annotations

import functools

import numpy as np

from .. import _dtype as D
from ..autograd.grad_mode import _state as _grad_state
from ..tensor import Tensor
from .cascade_sum import cascade_sum
from .cascade_sum import supports as cascade_supports
from .composite import ieee_quiet, record
from .out import with_out
from .parser_errors import (
    argument_type_error,
    input_type_error,
    invalid_combination,
    is_bool,
    is_int,
    is_int_list,
    parser_errors,
    parser_type_name,
    raise_instead,
)
from .reduce_args import (
    _ALL_AXES,
    NO_DIM,
    STRICT_KEEPDIM,
    _asarray,
    _attrs,
    _cast_for,
    _cuda,
    _dims,
    _expand_back,
    _kept_shape,
    _np_axes,
    _on_device,
    _type_word,
    _wrap,
    keepdim_without_dim,
    reduction_entry,
)

__all__ = ["sum", "mean", "prod", "logsumexp", "all", "any", "count_nonzero", "cumsum"]


def _sum_backward(node, g):
    return (_expand_back(g, node),)


@with_out("sum", "dtype")
@ieee_quiet
def sum(input, dim=NO_DIM, keepdim=False, *, dtype=None):  # noqa: A001 - torch.sum
    named = dim is not NO_DIM
    dim = dim if named else None
    axes = _dims(dim, input._data.ndim)
    input = _cast_for(input, dtype)
    # an explicit dtype is the result's; else integers and bool accumulate in int64
    out_dt = input.dtype if input.dtype.is_floating_point or dtype is not None else D.int64
    if input._data.__class__ is not np.ndarray:
        data = _cuda().device_reduce("sum", input, axes, keepdim, out_dt.np)
    elif cascade_supports(input._data):  # float32/float64: PyTorch's order of additions
        data = cascade_sum(input._data, axes, keepdim)
    elif input._data.dtype == np.float16 and out_dt.np == np.float16:
        # ATen sums half in float (its acc_type) and rounds once; NumPy's float16 reduction
        # rounds partial sums to half (an ulp off PyTorch, e.g. a broadcast add's gradient)
        data = cascade_sum(input._data.astype(np.float32), axes, keepdim).astype(np.float16)
    else:
        data = np.sum(input._data, axis=_np_axes(input, axes), keepdims=keepdim, dtype=out_dt.np)
    name = "SumBackward0" if not named and not keepdim else "SumBackward1"
    return record(name, (input,), _asarray(data), _sum_backward,
                  attrs=_attrs(input, axes, keepdim))


def _host_mean(x, axes, keepdim, n):
    """ATen's CPU mean: the sum (float16 summed in float32) divided by the element count in
    the sum's dtype, then rounded back to half."""
    with np.errstate(all="ignore"):  # an empty mean is NaN without a warning in PyTorch
        if x.dtype == np.float16:
            return (cascade_sum(x.astype(np.float32), axes, keepdim)
                    / np.float32(n)).astype(np.float16)
        if cascade_supports(x):
            return cascade_sum(x, axes, keepdim) / x.dtype.type(n)
        return np.mean(x, axis=axes if x.ndim else None, keepdims=keepdim)


def _mean_backward(node, g):
    return (_expand_back(g, node) / node.ctx.attrs["n"],)


@with_out("mean", iterator=False)
@ieee_quiet
def mean(input, dim=NO_DIM, keepdim=False, *, dtype=None):
    named = dim is not NO_DIM
    dim = dim if named else None
    if dtype is not None and not D.to_dtype(dtype).is_floating_point:
        raise RuntimeError(
            "mean(): could not infer output dtype. Optional dtype must be either a floating "
            f"point or complex dtype. Got: {_type_word(D.to_dtype(dtype))}")
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {_type_word(input.dtype)}")
    axes = _dims(dim, input._data.ndim)
    n = int(np.prod([input._data.shape[a] for a in axes])) if input._data.ndim else 1
    if input._data.__class__ is not np.ndarray:
        data = _cuda().device_reduce("mean", input, axes, keepdim, input._data.dtype)
    else:
        data = _host_mean(input._data, axes, keepdim, n)
    name = "MeanBackward0" if not named and not keepdim else "MeanBackward1"
    return record(name, (input,), _asarray(data, input._data.dtype), _mean_backward,
                  attrs=_attrs(input, axes, keepdim, n=n))


def _prod_backward(node, g):
    a = node.ctx.attrs
    x = node.saved("x")
    ge = _expand_back(g, node)
    if _on_device(x):
        return (_cuda().device_prod_backward(node, x, ge),)
    if not np.any(x._data == 0):
        out = node.saved("out")
        if not a["keepdim"]:
            out = out.reshape(a["kept"])
        return (ge * out / x,)
    # zeros present: the product of all *other* elements, without dividing
    others = _prod_of_others(x.detach()._data, a["axes"])
    return (ge * Tensor._make(others),)


def _prod_of_others(x, axes):
    moved = np.moveaxis(x, axes, tuple(range(x.ndim - len(axes), x.ndim)))
    flat = moved.reshape(moved.shape[:x.ndim - len(axes)] + (-1,))
    left = np.cumprod(np.concatenate([np.ones_like(flat[..., :1]), flat[..., :-1]], -1), -1)
    rev = flat[..., ::-1]
    right = np.cumprod(np.concatenate([np.ones_like(rev[..., :1]), rev[..., :-1]], -1),
                       -1)[..., ::-1]
    res = (left * right).reshape(moved.shape)
    return np.moveaxis(res, tuple(range(x.ndim - len(axes), x.ndim)), axes)


@with_out("prod", "dtype")
@ieee_quiet
def prod(input, dim=NO_DIM, keepdim=False, *, dtype=None):
    named = dim is not NO_DIM
    if named and (not isinstance(dim, (int, np.integer)) or isinstance(dim, bool)):
        raise TypeError("prod() received an invalid combination of arguments - got (Tensor, "
                        f"dim={parser_type_name(dim)}), but expected one of:\n"
                        " * (Tensor input, *, torch.dtype dtype = None)\n"
                        " * (Tensor input, int dim, bool keepdim = False, *, torch.dtype dtype "
                        "= None)")
    dim = dim if named else None
    input = _cast_for(input, dtype)
    axes = _dims(dim, input._data.ndim)
    out_dt = input.dtype if input.dtype.is_floating_point or dtype is not None else D.int64
    if _on_device(input):
        data = _cuda().kred("prod", input._data, axes, keepdim, out_dt.np)
    else:
        data = np.asarray(np.prod(input._data, axis=_np_axes(input, axes), keepdims=keepdim,
                                  dtype=out_dt.np))
    name = "ProdBackward0" if not named else "ProdBackward1"
    return record(name, (input,), data, _prod_backward, save=(("x", input),),
                  save_outputs=(("out", 0),), attrs=_attrs(input, axes, keepdim))


def _logsumexp_backward(node, g):
    a = node.ctx.attrs
    x = node.saved("x")
    out = node.saved("out")
    if not a["keepdim"]:
        out = out.reshape(a["kept"])
    return (_expand_back(g, node) * (x - out).exp(),)


@with_out("logsumexp", iterator=False, cast_error=lambda src, dst: RuntimeError(
    f"logsumexp(): Expected floating point type for result tensor, but got: {D.scalar_name(dst)}"))
@ieee_quiet
def logsumexp(input, dim=NO_DIM, keepdim=False):
    if dim is NO_DIM:  # PyTorch's parser words it so (Python's own message differs)
        raise TypeError('logsumexp() missing 1 required positional arguments: "dim"')
    axes = _dims(dim, input._data.ndim)
    if not keepdim and input._data.ndim and input._data.size and isinstance(
            dim, (list, tuple)) and not dim:
        # ATen reduces over every dim for an empty dim list but keeps the maxima it adds back
        # unsqueezed (squeezing no dims): its in-place add into the 0-d result fails so
        raise RuntimeError(f"output with shape [] doesn't match the broadcast shape "
                           f"{[1] * input._data.ndim}")
    x = input._data if input.dtype.is_floating_point else input._data.astype(
        D.get_default_dtype().np)
    if _on_device(input):
        return record("LogsumexpBackward0", (input,), _cuda().device_logsumexp(x, axes, keepdim),
                      _logsumexp_backward, save=(("x", input),), save_outputs=(("out", 0),),
                      attrs=_attrs(input, axes, keepdim))
    ax = axes if x.ndim else None
    m = np.max(x, axis=ax, keepdims=True) if x.size else np.zeros(_kept_shape(x.shape, axes),
                                                                  x.dtype)
    m = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        data = np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m
    if not keepdim:
        data = data.reshape(tuple(s for i, s in enumerate(x.shape) if i not in axes))
    return record("LogsumexpBackward0", (input,), np.asarray(data, dtype=x.dtype),
                  _logsumexp_backward, save=(("x", input),), save_outputs=(("out", 0),),
                  attrs=_attrs(input, axes, keepdim))


def _logical_reduce(input, dim, keepdim, which):
    # PyTorch: bool results, except that uint8 inputs give uint8 (0/1)
    if isinstance(dim, (list, tuple)) and not dim:
        # an empty dim list reduces nothing (unlike sum's): each element's truth value
        data = input.detach().ne(0)._data
        return Tensor._make(data.astype(np.uint8) if input._data.dtype == np.uint8 else data)
    axes = _dims(dim, input.ndim)
    if _on_device(input):
        data = _cuda().kred(which, input._data, axes, keepdim)
    else:
        fn = np.all if which == "all" else np.any
        ax = None if dim is None or not input.ndim else axes
        data = np.asarray(fn(input._data, axis=ax, keepdims=keepdim and input.ndim > 0))
    if input._data.dtype == np.uint8:
        data = data.astype(np.uint8)
    return Tensor._make(data)


# PyTorch's overloads of all/any, for the TypeError when the input is not a Tensor
_LOGICAL_OVERLOADS = ("(Tensor input, *, Tensor out = None)",
                      "(Tensor input, tuple of ints dim = None, bool keepdim = False, *, Tensor "
                      "out = None)",
                      "(Tensor input, int dim, bool keepdim = False, *, Tensor out = None)")


def _logical_error(which, input, dim, keepdim):
    """PyTorch's TypeError for all/any of a non-Tensor (the arguments given other than their
    defaults counted as the parser counts them), else None."""
    given = (input, dim, keepdim)
    while len(given) > 1 and (given[-1] is None or given[-1] is False):
        given = given[:-1]
    return input_type_error(which, given, {}, _LOGICAL_OVERLOADS)


# the method forms' (Tensor.all/any: parser_errors.counted_from_self lists these)
LOGICAL_METHOD_OVERLOADS = ("()", "(tuple of ints dim = None, bool keepdim = False)",
                            "(int dim, bool keepdim = False)")


def _check_logical_keepdim(which, input, dim, keepdim):
    # no overload takes a keepdim other than a bool (any(x, 0, 1)) or a dim other than ints:
    # the parser's listing
    if not (is_bool(keepdim) and (dim is None or is_int_list(dim))):
        given = (input, dim, keepdim) if keepdim is not False else (input, dim)
        raise invalid_combination(which, given, {}, _LOGICAL_OVERLOADS)


def all(input, dim=None, keepdim=False):  # noqa: A001
    _check_logical_keepdim("all", input, dim, keepdim)
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError
        return _logical_reduce(input, dim, keepdim, "all")
    except Exception:
        raise_instead(_logical_error("all", input, dim, keepdim))


def any(input, dim=None, keepdim=False):  # noqa: A001
    _check_logical_keepdim("any", input, dim, keepdim)
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError
        return _logical_reduce(input, dim, keepdim, "any")
    except Exception:
        raise_instead(_logical_error("any", input, dim, keepdim))


def count_nonzero(input, dim=None):
    ax = None if dim is None or not input.ndim else _dims(dim, input.ndim)
    if _on_device(input):  # cast to bool (nonzero, NaN included), then an int64 tree sum
        b = input._data if input._data.dtype == np.bool_ else input._data.astype(np.bool_)
        return Tensor._make(_cuda().kred("sum", b, _dims(dim, input.ndim), False, np.int64))
    if ax is None and dim is not None:
        _dims(dim, input.ndim)  # range check
    return Tensor._make(np.asarray(np.count_nonzero(input._data, axis=ax), dtype=np.int64))


def _cumsum_backward(node, g):
    d = node.ctx.attrs["dim"]
    if g.ndim == 0:  # cumsum of a 0-d tensor is the identity (flip has no dim 0 to flip)
        return (g,)
    if _on_device(g):
        return (_cuda().reverse_cumsum(g, d),)
    return (g.flip(d).cumsum(d).flip(d),)


_SCAN_ACC = {np.dtype(np.float32): np.dtype(np.float64), np.dtype(np.float16): np.dtype(np.float32)}


@with_out("cumsum", "dtype")
@ieee_quiet
@parser_errors
def cumsum(input, dim, *, dtype=None):
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError
        nd = input._data.ndim
    except AttributeError:
        raise input_type_error("cumsum", (input,), {}) from None
    if dim.__class__ is not int and not is_int(dim):  # (Tensor.cumsum: position 1)
        raise argument_type_error("cumsum", "dim", 2, "int", dim)
    d = _wrap(dim, nd)
    input = _cast_for(input, dtype)
    # an explicit dtype is the result's; else integers and bool accumulate in int64
    out_dt = input.dtype if input.dtype.is_floating_point or dtype is not None else D.int64
    if _on_device(input):
        data = _cuda().device_cumsum(input, d, out_dt)
        return record("CumsumBackward0", (input,), data, _cumsum_backward, attrs={"dim": d})
    # ATen's CPU scan accumulates in acc_type (double for float32, float for float16)
    data = np.cumsum(input._data, axis=d if input.ndim else None,
                     dtype=_SCAN_ACC.get(out_dt.np, out_dt.np)).astype(out_dt.np, copy=False)
    return record("CumsumBackward0", (input,), data.reshape(input._data.shape), _cumsum_backward,
                  attrs={"dim": d})


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
logsumexp_method = _method_forms["logsumexp"]

_sum_general = sum
_ONES = tuple((1,) * n for n in range(65))  # a full reduction's kept shape, per ndim


@functools.wraps(_sum_general)
def sum(*args, **kwargs):  # noqa: A001
    """``x.sum()`` / ``torch.sum(x)`` of a float32/float64 host tensor (the common call) done
    here; every other call goes through the general ``sum`` and its wrappers (aliases, out=,
    warnings off). Identical results: the general path does the same steps for this call, and
    nothing in them can raise a floating-point warning (the sum is a Numba kernel)."""
    n = len(args)
    if (n == 1 or n == 3 and args[1] is NO_DIM and args[2] is False) and (
            not kwargs or len(kwargs) == 1 and kwargs.get("dtype", NO_DIM) is None):
        x = args[0]
        if isinstance(x, Tensor):
            d = x._data
            if d.__class__ is np.ndarray and d.dtype.char in "fd":
                axes = _ALL_AXES[d.ndim]
                data = cascade_sum(d, axes, False)
                if data.__class__ is not np.ndarray:  # (an empty input's np.sum: a scalar)
                    data = np.asarray(data)
                # the attrs only the node reads: built when record will make one
                attrs = {"shape": d.shape, "kept": _ONES[d.ndim], "keepdim": False,
                         "axes": axes} if x._requires_grad and _grad_state.enabled else None
                return record("SumBackward0", (x,), data, _sum_backward, attrs=attrs)
    if kwargs and len(args) < 2:  # (a dim given by position: nothing to check)
        _check_keepdim("sum", args, kwargs, False)
    return _sum_general(*args, **kwargs)


def _check_keepdim(name, args, kwargs, method):
    err = keepdim_without_dim(name, args, kwargs, method)
    if err is not None:
        raise err


_mean_general = mean


def _make_mean(method):
    """``x.mean()`` / ``torch.mean(x)`` of a non-empty float32/float64 host tensor done here,
    as ``sum`` above: the general path's steps for this call (the cascade sum divided by the
    count in the tensor's dtype, ``_host_mean``), without its errstate. Dividing by a count of
    at least one cannot raise a floating-point warning (no 0/0, no overflow), so the errstate
    only matters for an empty mean, which goes to the general path. One closure per form
    (``method``): the TypeErrors are worded for the method or the function."""
    general = _method_forms["mean"] if method else _mean_general

    def mean(*args, **kwargs):
        if len(args) == 1 and not kwargs:
            x = args[0]
            if isinstance(x, Tensor):
                d = x._data
                if d.__class__ is np.ndarray and d.dtype.char in "fd" and d.size:
                    n = d.size
                    axes = _ALL_AXES[d.ndim]
                    data = np.asarray(cascade_sum(d, axes, False) / d.dtype.type(n), d.dtype)
                    attrs = {"shape": d.shape, "kept": _ONES[d.ndim], "keepdim": False,
                             "axes": axes, "n": n} if x._requires_grad and _grad_state.enabled \
                        else None
                    return record("MeanBackward0", (x,), data, _mean_backward, attrs=attrs)
        if kwargs and len(args) < 2:  # (a dim given by position: nothing to check)
            _check_keepdim("mean", args, kwargs, method)
        return general(*args, **kwargs)
    return functools.wraps(_mean_general)(mean)


mean, mean_method = _make_mean(False), _make_mean(True)
_prod_general = prod


@functools.wraps(_prod_general)
def prod(*args, **kwargs):
    if kwargs and len(args) < 2:  # (a dim given by position: nothing to check)
        _check_keepdim("prod", args, kwargs, False)
    return _prod_general(*args, **kwargs)


@functools.wraps(_prod_general)
def prod_method(*args, **kwargs):
    if kwargs and len(args) < 2:  # (a dim given by position: nothing to check)
        _check_keepdim("prod", args, kwargs, True)
    return _method_forms["prod"](*args, **kwargs)


def sum_method_form(general):
    """``x.sum`` from the method's general path ``general``: ``x.sum()`` straight to ``sum``'s
    fast path, keyword calls checked with the method's TypeError wording."""
    def sum_method(*args, **kwargs):
        if not kwargs:
            if len(args) == 1:
                return sum(args[0])
            return general(*args)
        if len(args) < 2:
            _check_keepdim("sum", args, kwargs, True)
        return general(*args, **kwargs)
    return functools.wraps(general)(sum_method)
