"""What every reduction shares: ``dim`` (int, tuple or None) and ``keepdim`` normalised to sorted
axes, the attrs a VJP reads back to bring a reduced gradient to the input's shape, ``dtype=``,
and the host/device test (CUDA tensors take ``reduce_cuda``, imported on first use)."""
from __future__ import annotations

import functools
import inspect

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from .numpy_aliases import _ALIAS_NAMES, alias_renamer
from .parser_errors import input_type_error, parser_type_name, raise_instead

_type_word = D.scalar_name


# every axis, per ndim: what ``_dims`` returns for no dim (None, ()), told apart by identity
# from the same axes given one by one (PyTorch's backward unsqueezes those: ``_expand_back``)
_ALL_AXES = tuple(tuple(range(n)) for n in range(65))


def _all_axes(ndim):
    return _ALL_AXES[ndim] if ndim < len(_ALL_AXES) else tuple(range(ndim))


def _dims(dim, ndim):
    """Normalize ``dim`` to a sorted tuple of axes (None -> all axes)."""
    if dim is None:
        return _all_axes(ndim)
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return _all_axes(ndim)
        ds = [_wrap(d, ndim) for d in dim]
        if len(set(ds)) != len(ds):
            raise RuntimeError(f"dim {ds[0]} appears multiple times in the list of dims")
        return tuple(sorted(ds))
    return (_wrap(dim, ndim),)


def _wrap(d, ndim):
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not isinstance(d, (int, np.integer)) or not lo <= d <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but "
                         f"got {d})")
    return int(d) % (ndim or 1)


def _kept_shape(shape, axes):
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _expand_back(g, node):
    """Bring a reduced gradient back to the input's shape (a broadcastable view), as PyTorch's
    ``sum_backward``: the reduced dims given one by one are unsqueezed back, in increasing order
    (``unsqueeze_multiple``), then expanded; a gradient of a reduction without dims (or with
    keepdim) is expanded as it is, so a kept size-1 dim gets stride 0 too."""
    a = node.ctx.attrs
    shape = a["shape"]
    if not a["keepdim"] and shape and (g._data.ndim or a.get("dims_given")):
        for ax in a["axes"]:
            g = g.unsqueeze(ax)
    return g.expand(shape)


def _attrs(x, axes, keepdim, **extra):
    shape = x._data.shape
    d = {"shape": tuple(shape), "kept": _kept_shape(shape, axes), "keepdim": keepdim,
         "axes": axes, "dims_given": axes is not _all_axes(len(shape))}
    d.update(extra)
    return d


def _asarray(data, dtype=None):
    if data.__class__.__name__ == "CudaArray":
        return data
    return np.asarray(data, dtype=dtype)


def _cuda():
    """The CUDA half of the reductions (``reduce_cuda``), imported on first use."""
    from . import reduce_cuda
    return reduce_cuda


def _on_device(t) -> bool:
    return t._data.__class__ is not np.ndarray  # the CPU path pays this one class test


def _np_axes(x, axes):
    return axes if x._data.ndim else None


def _cast_for(input, dtype):
    """``dtype=`` of sum/prod/cumsum: the input is cast first; an integer result of an input
    that requires grad is refused as PyTorch refuses it."""
    if dtype is None:
        return input
    dt = D.to_dtype(dtype)
    if not dt.is_floating_point and input.requires_grad and grad_mode.is_grad_enabled():
        raise RuntimeError(f"Autograd not support dtype: {_type_word(dt)}")
    return input.to(dt)


class _NoDim:
    """The default of ``sum``/``mean``'s ``dim``: PyTorch records SumBackward0 only when no
    ``dim`` is passed at all (``x.sum(None)`` and ``x.sum(dim=None)`` record SumBackward1)."""

    __slots__ = ()

    def __repr__(self):
        return "None"


NO_DIM = _NoDim()


def _given_dims(dim):
    """The dims as written (None/() -> a full reduction) for the error messages."""
    if dim is None or isinstance(dim, (list, tuple)) and len(dim) == 0:
        return None
    return tuple(dim) if isinstance(dim, (list, tuple)) else (dim,)


# PyTorch's overloads of the reductions that take keepdim only beside a dim (sum, mean, prod,
# max, min):
# (method form, function form), as its argument parser lists them
_OVERLOADS = {
    "sum": (" * (*, torch.dtype dtype = None)\n"
            " * (tuple of ints dim, bool keepdim = False, *, torch.dtype dtype = None)\n",
            " * (Tensor input, *, torch.dtype dtype = None)\n"
            " * (Tensor input, tuple of ints dim, bool keepdim = False, *, torch.dtype dtype = "
            "None, Tensor out = None)\n"),
    "mean": (" * (*, torch.dtype dtype = None)\n"
             " * (tuple of ints dim, bool keepdim = False, *, torch.dtype dtype = None)\n",
             " * (Tensor input, *, torch.dtype dtype = None, Tensor out = None)\n"
             " * (Tensor input, tuple of ints dim, bool keepdim = False, *, torch.dtype dtype = "
             "None, Tensor out = None)\n"),
    "prod": (" * (*, torch.dtype dtype = None)\n"
             " * (int dim, bool keepdim = False, *, torch.dtype dtype = None)\n",
             " * (Tensor input, *, torch.dtype dtype = None)\n"
             " * (Tensor input, int dim, bool keepdim = False, *, torch.dtype dtype = None, "
             "Tensor out = None)\n"),
}
for _which in ("max", "min"):
    _OVERLOADS[_which] = (
        " * ()\n      didn't match because some of the keywords were incorrect: {kw}\n"
        " * (Tensor other)\n      didn't match because some of the keywords were incorrect: "
        "{kw}\n * (int dim, bool keepdim = False)\n",
        " * (Tensor input, *, Tensor out = None)\n"
        " * (Tensor input, Tensor other, *, Tensor out = None)\n"
        " * (Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None)\n")
del _which


def keepdim_without_dim(name, args, kwargs, method):
    """PyTorch's TypeError for ``sum``/``mean``/``prod``/``max``/``min`` given ``keepdim=`` (or
    ``keepdims=``) but no dim: no overload takes it (the one without a dim has no keepdim), or
    None when the call has a dim or no keepdim. ``args`` include the tensor (``self`` for a
    method)."""
    if len(args) > 1 or "dim" in kwargs or "axis" in kwargs or (
            "keepdim" not in kwargs and "keepdims" not in kwargs):
        return None
    if "dtype" in kwargs:  # only the dim overload takes both: its missing argument is named
        return TypeError(f'{name}() missing 1 required positional arguments: "dim"')
    given = [parser_type_name(a) for a in args[1 if method else 0:]]
    kws = [f"{k}={parser_type_name(v)}" for k, v in kwargs.items()]
    got = ", ".join(given + kws) if given else "".join(k + ", " for k in kws)
    kw = "keepdim" if "keepdim" in kwargs else "keepdims"
    overloads = _OVERLOADS[name][0 if method else 1].replace("{kw}", kw)
    return TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but "
                     f"expected one of:\n{overloads}")


# reductions whose ``keepdim`` PyTorch's parser takes as a strict bool (an int, None or NumPy
# bool is a TypeError there, never truthiness: ``x.sum(0, 1)`` is not ``keepdim=True``), each
# with what a ``keepdim=`` keyword without a dim is: checked on its own where the overload with
# keepdim has a default dim (``x.amax(keepdim=1)``), the missing dim where it has none
# (``x.median(keepdim=True)``), or sum/mean/prod/max/min's invalid combination, raised before
# (``keepdim_without_dim``)
_ALONE, _MISSING_DIM, _NO_OVERLOAD = "checked alone", "missing dim", "no overload"
STRICT_KEEPDIM = {"sum": _NO_OVERLOAD, "mean": _NO_OVERLOAD, "prod": _NO_OVERLOAD,
                  "max": _NO_OVERLOAD, "min": _NO_OVERLOAD, "logsumexp": _MISSING_DIM,
                  "median": _MISSING_DIM, "nanmedian": _MISSING_DIM, "amax": _ALONE,
                  "amin": _ALONE, "argmax": _ALONE, "argmin": _ALONE, "nansum": _ALONE}


def reduction_entry(fn, name=None, method=False):
    """``fn`` (a reduction ``(input, dim, keepdim, ...)`` named in ``STRICT_KEEPDIM``) taking its
    arguments as PyTorch's parser does, in one layer: NumPy's ``axis=``/``keepdims=`` for
    ``dim=``/``keepdim=`` (``numpy_aliases``) and ``keepdim`` a strict bool. ``method``: the
    Tensor method's form, whose TypeError counts positions from ``self`` (``x.sum(0, 1)`` names
    position 2, ``torch.sum(x, 0, 1)`` position 3)."""
    name = name or fn.__name__
    rename = alias_renamer(fn, name)
    at = list(inspect.signature(fn).parameters).index("keepdim")  # (in args, self included)
    position = at if method else at + 1
    without_dim = STRICT_KEEPDIM[name]
    missing_dim = without_dim is _MISSING_DIM

    # the function form's overloads, for the error when its input is not a Tensor
    overloads = None if method or name not in _OVERLOADS else \
        [line[3:] for line in _OVERLOADS[name][1].splitlines()]

    @functools.wraps(fn)
    def reduction(*args, **kwargs):
        try:  # (free until raised) a non-Tensor input is the parser's TypeError, below
            if len(args) > at and args[at].__class__ is not bool:
                raise TypeError(f"{name}(): argument 'keepdim' (position {position}) must be "
                                f"bool, not {parser_type_name(args[at])}")
            if not kwargs:  # the common call
                return fn(*args)
            if not _ALIAS_NAMES.isdisjoint(kwargs):
                kwargs = rename(args, kwargs)
            k = kwargs.get("keepdim", False)
            if k.__class__ is not bool or missing_dim and "keepdim" in kwargs:
                if len(args) > 1 or "dim" in kwargs or without_dim is _ALONE:
                    if k.__class__ is not bool:
                        raise TypeError(f"{name}(): argument 'keepdim' must be bool, not "
                                        f"{parser_type_name(k)}")
                elif missing_dim:
                    raise TypeError(f'{name}() missing 1 required positional arguments: "dim"')
            return fn(*args, **kwargs)
        except Exception:
            raise_instead(None if method else input_type_error(name, args, kwargs, overloads))
    return reduction
