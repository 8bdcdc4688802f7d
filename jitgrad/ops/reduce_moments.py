"""Variance and standard deviation: var, std, var_mean, std_mean, with PyTorch's ``correction``
(``unbiased``), degrees of freedom and its backward (var_backward / std_backward)."""
from __future__ import annotations

import builtins
import warnings

import numpy as np

from .composite import ieee_quiet, record
from .parser_errors import (
    input_type_error,
    invalid_combination,
    is_bool,
    is_int_list,
    raise_instead,
)
from .reduce_args import _attrs, _cuda, _dims, _expand_back, _np_axes, _on_device

__all__ = ["var", "std", "var_mean", "std_mean"]


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    if unbiased is None:
        return 1
    return 1 if unbiased else 0


def _var_args(dim, unbiased, correction):
    # var(dim) / var(unbiased) / var(dim, unbiased) / var(dim, correction=...)
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return dim, _correction(unbiased, correction)


def _warn_dof(denom, name):
    if denom <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=4)


def _var_setup(input, dim, unbiased, correction, name):
    """Axes and attributes of var/std/var_mean/std_mean, with PyTorch's degrees of freedom:
    ``numel(input) / numel(output) - correction`` (a dof <= 0 warns and divides by zero)."""
    if not input.dtype.is_floating_point:  # PyTorch refuses integer and bool inputs
        which = name if name.endswith("_mean") else "std and var"
        raise RuntimeError(f"{which} only support floating point and complex dtypes")
    dim, c = _var_args(dim, unbiased, correction)
    shape = input._data.shape
    axes = _dims(dim, len(shape))
    out_numel = int(np.prod([s for i, s in enumerate(shape) if i not in axes]))
    n = input._data.size // builtins.max(out_numel, 1)
    _warn_dof(n - c, name.split("_")[0])
    # PyTorch's backward uses numel - correction without dim (or for a 0-d input), and the
    # product of the reduced sizes - correction with a dim
    whole = dim is None or len(shape) == 0
    n_red = input._data.size if whole else int(np.prod([shape[i] for i in axes]))
    return axes, _attrs(input, axes, keepdim=False, dof=n - c, whole=whole,
                        grad_dof=n_red - c, n=n)


def _var_forward(input, axes, keepdim, dof, n):
    if _on_device(input):
        return _cuda().device_var(input, axes, keepdim, dof, n)
    x = input._data
    ax = _np_axes(input, axes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mu = np.mean(x, axis=ax, keepdims=True)
    d = x - mu
    ss = np.sum(d * d, axis=ax, keepdims=keepdim)
    return np.asarray(np.true_divide(ss, builtins.max(dof, 0)), dtype=x.dtype)


def _var_grad(x, ge, a):
    """PyTorch's var_backward for the gradient ``ge`` already expanded to ``x``'s shape."""
    from .functional import where
    mu = x.mean(a["axes"] if x.ndim else None, keepdim=True)
    if a["whole"] and a["dof"] <= 0:
        # 2/0 = inf: NaN where x equals the mean (inf * 0), inf elsewhere
        return where(x == mu, float("nan"), ge * float("inf"))
    dof = a["dof"] if a["whole"] else a["grad_dof"]
    scale = 2.0 / dof if dof else float("inf")
    return ge * (x - mu) * scale


def _std_grad(x, ge, out, a):
    from .functional import where
    if not a["keepdim"]:
        out = out.reshape(a["kept"])
    return _var_grad(x, where(out == 0, 0.0, ge / (out * 2)), a)


def _var_backward(node, g):
    return (_var_grad(node.saved("x"), _expand_back(g, node), node.ctx.attrs),)


def _std_backward(node, g):
    return (_std_grad(node.saved("x"), _expand_back(g, node), node.saved("out"),
                      node.ctx.attrs),)


# PyTorch's overloads of var/std, for the TypeError when the input is not a Tensor
_VAR_OVERLOADS = (
    "(Tensor input, tuple of ints dim, bool unbiased = True, bool keepdim = False, *, Tensor out "
    "= None)",
    "(Tensor input, tuple of ints dim = None, *, Number correction = None, bool keepdim = False, "
    "Tensor out = None)",
    "(Tensor input, bool unbiased = True)")


# var_mean/std_mean's (no ``out``)
_MOMENTS_OVERLOADS = (
    "(Tensor input, tuple of ints dim, bool unbiased = True, bool keepdim = False)",
    "(Tensor input, tuple of ints dim = None, *, Number correction = None, bool keepdim = False)",
    "(Tensor input, bool unbiased = True)")
# the method forms' (Tensor.var/std: parser_errors.counted_from_self lists these)
VAR_METHOD_OVERLOADS = (
    "(tuple of ints dim, bool unbiased = True, bool keepdim = False)",
    "(tuple of ints dim = None, *, Number correction = None, bool keepdim = False)",
    "(bool unbiased = True)")


def _given(input, dim, unbiased, keepdim, correction):
    """The call's arguments as the parser counts them: those other than their defaults."""
    given = (input, dim, unbiased, keepdim)
    while len(given) > 1 and (given[-1] is None or given[-1] is False):
        given = given[:-1]
    return given, ({} if correction is None else {"correction": correction})


def _input_error(name, input, dim, unbiased, keepdim, correction):
    """PyTorch's TypeError for var/std of a non-Tensor, else None."""
    return input_type_error(name, *_given(input, dim, unbiased, keepdim, correction),
                            _VAR_OVERLOADS)


def _check_overload(name, input, dim, unbiased, keepdim, correction):
    """PyTorch's "invalid combination" TypeError where no overload takes the call: a flag that
    is not a bool (``std(0, 1)``), ``unbiased`` with ``correction``, a dim that is not an int
    or ints (a Tensor dim is left to the op)."""
    from ..tensor import Tensor
    if dim.__class__ is bool and unbiased is None and correction is None:
        ok = keepdim is False  # (bool unbiased)
    else:
        ok = (is_bool(keepdim)
              and (dim is None or isinstance(dim, Tensor) or is_int_list(dim))
              and (unbiased is None or is_bool(unbiased))
              and (correction is None or (unbiased is None and not isinstance(correction, str))))
    if not ok:
        args, kwargs = _given(input, dim, unbiased, keepdim, correction)
        raise invalid_combination(name, args, kwargs, _MOMENTS_OVERLOADS
                                  if name.endswith("_mean") else _VAR_OVERLOADS)


@ieee_quiet
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    _check_overload("var", input, dim, unbiased, keepdim, correction)
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError
        axes, attrs = _var_setup(input, dim, unbiased, correction, "var")
    except Exception:
        raise_instead(_input_error("var", input, dim, unbiased, keepdim, correction))
    attrs["keepdim"] = keepdim
    data = _var_forward(input, axes, keepdim, attrs["dof"], attrs["n"])
    return record("VarBackward0", (input,), data, _var_backward, save=(("x", input),),
                  attrs=attrs)


@ieee_quiet
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    _check_overload("std", input, dim, unbiased, keepdim, correction)
    try:  # (free until raised) a non-Tensor input: PyTorch's TypeError
        axes, attrs = _var_setup(input, dim, unbiased, correction, "std")
    except Exception:
        raise_instead(_input_error("std", input, dim, unbiased, keepdim, correction))
    attrs["keepdim"] = keepdim
    data = _var_forward(input, axes, keepdim, attrs["dof"], attrs["n"])
    data = np.asarray(np.sqrt(data)) if not _on_device(input) else _cuda().dev(data).sqrt()._data
    return record("StdBackward0", (input,), data, _std_backward, save=(("x", input),),
                  save_outputs=(("out", 0),), attrs=attrs)


def _mean_part(x, gm, node):
    a = node.ctx.attrs
    return _expand_back(gm, node) / builtins.max(a["n_mean"], 1)


def _var_mean_backward(node, gv, gm):
    x = node.saved("x")
    a = node.ctx.attrs
    gx = None
    if gv is not None:
        gx = _var_grad(x, _expand_back(gv, node), a)
    if gm is not None:
        gx = _mean_part(x, gm, node) if gx is None else gx + _mean_part(x, gm, node)
    return (gx,)


def _std_mean_backward(node, gs, gm):
    x = node.saved("x")
    a = node.ctx.attrs
    gx = None
    if gs is not None:
        gx = _std_grad(x, _expand_back(gs, node), node.saved("out"), a)
    if gm is not None:
        gx = _mean_part(x, gm, node) if gx is None else gx + _mean_part(x, gm, node)
    return (gx,)


@ieee_quiet
def _moments(input, dim, unbiased, keepdim, correction, name):
    axes, attrs = _var_setup(input, dim, unbiased, correction, name)
    attrs["keepdim"] = keepdim
    attrs["n_mean"] = int(np.prod([input._data.shape[i] for i in axes])) if input.ndim else 1
    v = _var_forward(input, axes, keepdim, attrs["dof"], attrs["n"])
    if _on_device(input):
        m = _cuda().device_reduce("mean", input, axes, keepdim, input._data.dtype)
        if name == "std_mean":
            v = _cuda().dev(v).sqrt()._data
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            m = np.asarray(np.mean(input._data, axis=_np_axes(input, axes), keepdims=keepdim),
                           dtype=input._data.dtype)
        if name == "std_mean":
            v = np.asarray(np.sqrt(v))
    if name == "std_mean":
        return record("StdMeanBackward0", (input,), [v, m], _std_mean_backward,
                      save=(("x", input),), save_outputs=(("out", 0),), attrs=attrs)
    return record("VarMeanBackward0", (input,), [v, m], _var_mean_backward,
                  save=(("x", input),), attrs=attrs)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    _check_overload("var_mean", input, dim, unbiased, keepdim, correction)
    return _moments(input, dim, unbiased, keepdim, correction, "var_mean")


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    _check_overload("std_mean", input, dim, unbiased, keepdim, correction)
    return _moments(input, dim, unbiased, keepdim, correction, "std_mean")


# axis= / keepdims= (NumPy's names, accepted by PyTorch's parser) on every reduction here
from .numpy_aliases import accept_numpy_aliases as _aliases  # noqa: E402

for _name in __all__:
    globals()[_name] = _aliases(globals()[_name])
del _name
