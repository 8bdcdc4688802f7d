"""Reductions with ``dim`` (int or tuple) and ``keepdim``; VJPs written with registered ops.

CUDA tensors take the ``_device_*`` / ``_kred`` paths: the kernel layer's tree reductions and
scans (``backends.cuda_kernels``) composed with registered elementwise ops, so forward and
backward stay on the device without a host transfer (docs/cuda.md)."""
from __future__ import annotations

import builtins
import collections
import warnings

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from .composite import ieee_quiet, record
from .out import with_out

__all__ = ["sum", "mean", "var", "std", "var_mean", "std_mean", "prod", "max", "min", "amax",
           "amin", "argmax", "argmin", "norm", "logsumexp", "all", "any", "count_nonzero",
           "cumsum", "aminmax"]


class _ReturnType(tuple):
    """torch.return_types.<name>(values=..., indices=...): a tuple with named fields, printed
    as PyTorch prints its structseqs."""

    _name = "max"
    _fields = ("values", "indices")
    n_fields = n_sequence_fields = 2
    __slots__ = ()

    def __new__(cls, *items):
        if len(items) == 1 and not isinstance(items[0], Tensor):  # from an iterable
            items = tuple(items[0])
        if len(items) != len(cls._fields):
            raise TypeError(f"torch.return_types.{cls._name} takes a {len(cls._fields)}-sequence "
                            f"({len(items)}-sequence given)")
        return tuple.__new__(cls, items)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"torch.return_types.{self._name}(\n{body})"

    def __reduce__(self):
        return (_make_return, (self._name, self._fields, tuple(self)))


def _field(i):
    return property(lambda self: self[i])


_RETURN_TYPES = {}


def _return_type(name, fields=("values", "indices")):
    """The structseq class ``torch.return_types.<name>`` (one class per name)."""
    if name not in _RETURN_TYPES:
        ns = {"_name": name, "_fields": fields, "__slots__": (), "n_fields": len(fields),
              "n_sequence_fields": len(fields)}
        ns.update({f: _field(i) for i, f in enumerate(fields)})
        _RETURN_TYPES[name] = type(name, (_ReturnType,), ns)
    return _RETURN_TYPES[name]


def _make_return(name, fields, items):
    return _return_type(name, tuple(fields))(*items)


MaxResult = _return_type("max")
MinResult = _return_type("min")
AminmaxResult = _return_type("aminmax", ("min", "max"))
collections.abc.Sequence.register(_ReturnType)


def _dims(dim, ndim):
    """Normalize ``dim`` to a sorted tuple of axes (None -> all axes)."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return tuple(range(ndim))
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
    """Bring a reduced gradient back to the input's shape (a broadcastable view)."""
    a = node.ctx.attrs
    if not a["keepdim"]:
        g = g.reshape(a["kept"])
    return g.expand(a["shape"])


def _attrs(x, axes, keepdim, **extra):
    d = {"shape": tuple(x._data.shape), "kept": _kept_shape(x._data.shape, axes),
         "keepdim": keepdim, "axes": axes}
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


def _sum_backward(node, g):
    return (_expand_back(g, node),)


class _NoDim:
    """The default of ``sum``/``mean``'s ``dim``: PyTorch records SumBackward0 only when no
    ``dim`` is passed at all (``x.sum(None)`` and ``x.sum(dim=None)`` record SumBackward1)."""

    __slots__ = ()

    def __repr__(self):
        return "None"


NO_DIM = _NoDim()


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
    else:
        data = np.sum(input._data, axis=_np_axes(input, axes), keepdims=keepdim, dtype=out_dt.np)
    name = "SumBackward0" if not named and not keepdim else "SumBackward1"
    return record(name, (input,), _asarray(data), _sum_backward,
                  attrs=_attrs(input, axes, keepdim))


def _mean_backward(node, g):
    return (_expand_back(g, node) / node.ctx.attrs["n"],)


@with_out("mean")
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
        with warnings.catch_warnings():  # an empty mean is NaN without a warning in PyTorch
            warnings.simplefilter("ignore", RuntimeWarning)
            data = np.mean(input._data, axis=_np_axes(input, axes), keepdims=keepdim)
    name = "MeanBackward0" if not named and not keepdim else "MeanBackward1"
    return record(name, (input,), _asarray(data, input._data.dtype), _mean_backward,
                  attrs=_attrs(input, axes, keepdim, n=n))


_type_word = D.scalar_name


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


@ieee_quiet
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    axes, attrs = _var_setup(input, dim, unbiased, correction, "var")
    attrs["keepdim"] = keepdim
    data = _var_forward(input, axes, keepdim, attrs["dof"], attrs["n"])
    return record("VarBackward0", (input,), data, _var_backward, save=(("x", input),),
                  attrs=attrs)


@ieee_quiet
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    axes, attrs = _var_setup(input, dim, unbiased, correction, "std")
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
    return _moments(input, dim, unbiased, keepdim, correction, "var_mean")


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _moments(input, dim, unbiased, keepdim, correction, "std_mean")


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
                        f"dim={type(dim).__name__}), but expected one of:\n"
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


def _evenly_backward(node, g):
    """max()/min(): the gradient is shared evenly among tied extremes (a NaN result is tied with
    every NaN of the input: PyTorch's evenly_distribute_backward)."""
    x = node.saved("x")
    out = node.saved("out")
    mask = ((x == out) | (x.isnan() & out.isnan())).to(x.dtype)
    return (g * mask / mask.sum(),)


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
                        f"{type(dim).__name__}")
    raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, "
                    f"{type(dim).__name__}), but expected one of:\n * (Tensor input)\n"
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


def _given_dims(dim):
    """The dims as written (None/() -> a full reduction) for the error messages."""
    if dim is None or isinstance(dim, (list, tuple)) and len(dim) == 0:
        return None
    return tuple(dim) if isinstance(dim, (list, tuple)) else (dim,)


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


def _norm_backward(node, g):
    """PyTorch's norm_backward, case by case (a zero norm gives a zero gradient, p = 0 none)."""
    from .functional import where
    a = node.ctx.attrs
    p = a["p"]
    x = node.saved("x")
    out = node.saved("out")
    if not a["keepdim"]:
        out = out.reshape(a["kept"])
    ge = _expand_back(g, node)
    if p == 0:
        return (None,)  # PyTorch's: no gradient (x.grad stays None)
    if p == 1:
        return (ge * x.sign(),)
    if p == 2:
        return (ge * where(out == 0, 0.0, x / out),)
    if p in (float("inf"), -float("inf")):
        ax = x.abs()
        mask = ((ax == out) | ax.isnan()).to(ge.dtype)
        count = mask.sum(a["axes"] if x.ndim else None, keepdim=True)
        return (x.sign() * (ge / count * mask),)
    if p < 1:
        scaled = x.sign() * where(x == 0, 0.0, x.abs() ** (p - 1))
        return (scaled * ge * out ** (1 - p),)
    scale = where(out == 0, 0.0, ge / out ** (p - 1))
    scaled = x.sign() * x.abs() ** (p - 1) if p < 2 else x * x.abs() ** (p - 2)
    return (scaled * scale,)


@ieee_quiet
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    if p == "fro" or p is None:
        p = 2
    if not isinstance(p, (int, float)):
        raise RuntimeError(f"norm: unsupported p={p!r} (jitgrad has vector norms only; matrix "
                           "norms such as 'nuc' are not implemented)")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_type_word(input.dtype)}")
    axes = _dims(dim, input._data.ndim)
    if (p < 0 or p == float("inf")) and input._data.size == 0:
        word = "inf" if p == float("inf") else "-inf" if p == -float("inf") else (
            f"{p:g}" if isinstance(p, float) else str(p))
        if dim is None or isinstance(dim, (list, tuple)) and len(dim) == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {word} norm on an empty "
                               "tensor because the operation does not have an identity")
        for d in _given_dims(dim):
            if input._data.shape[_wrap(d, input.ndim)] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {word} norm on the "
                                   f"dimension {d}because this dimension is empty and the "
                                   "operation does not have an identity")
    src = input._data
    if dtype is not None:
        dt = D.to_dtype(dtype)
        if D.promote_types(input.dtype, dt) is not dt:
            words = {"float64": "Double", "float32": "Float", "float16": "Half"}
            raise RuntimeError(
                f"linalg.vector_norm: the dtype of the input ({words.get(input.dtype.name)}) "
                f"should be convertible without narrowing to the specified dtype "
                f"({words.get(dt.name, _type_word(dt))})")
        src = src.astype(dt.np)
    if _on_device(input):
        x = input if dtype is None else Tensor._make(src)
        return record("LinalgVectorNormBackward0", (input,),
                      _cuda().device_norm(x, p, axes, keepdim), _norm_backward,
                      save=(("x", input),), save_outputs=(("out", 0),),
                      attrs=_attrs(input, axes, keepdim, p=p))
    ax = _np_axes(input, axes)
    a = np.abs(src)
    if p == 2:
        data = np.sqrt(np.sum(a * a, axis=ax, keepdims=keepdim))
    elif p == 1:
        data = np.sum(a, axis=ax, keepdims=keepdim)
    elif p == float("inf"):
        data = np.max(a, axis=ax, keepdims=keepdim)
    elif p == -float("inf"):
        data = np.min(a, axis=ax, keepdims=keepdim)
    elif p == 0:
        data = np.sum(a != 0, axis=ax, keepdims=keepdim)
    else:
        data = np.sum(a ** p, axis=ax, keepdims=keepdim) ** (1.0 / p)
    data = np.asarray(data, dtype=src.dtype)
    return record("LinalgVectorNormBackward0", (input,), data, _norm_backward,
                  save=(("x", input),), save_outputs=(("out", 0),),
                  attrs=_attrs(input, axes, keepdim, p=p))


def _logsumexp_backward(node, g):
    a = node.ctx.attrs
    x = node.saved("x")
    out = node.saved("out")
    if not a["keepdim"]:
        out = out.reshape(a["kept"])
    return (_expand_back(g, node) * (x - out).exp(),)


@with_out("logsumexp", cast_error=lambda src, dst: RuntimeError(
    f"logsumexp(): Expected floating point type for result tensor, but got: {D.scalar_name(dst)}"))
@ieee_quiet
def logsumexp(input, dim, keepdim=False):
    axes = _dims(dim, input._data.ndim)
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


def all(input, dim=None, keepdim=False):  # noqa: A001
    return _logical_reduce(input, dim, keepdim, "all")


def any(input, dim=None, keepdim=False):  # noqa: A001
    return _logical_reduce(input, dim, keepdim, "any")


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


@with_out("cumsum", "dtype")
@ieee_quiet
def cumsum(input, dim, *, dtype=None):
    d = _wrap(dim, input._data.ndim)
    input = _cast_for(input, dtype)
    # an explicit dtype is the result's; else integers and bool accumulate in int64
    out_dt = input.dtype if input.dtype.is_floating_point or dtype is not None else D.int64
    if _on_device(input):
        data = _cuda().device_cumsum(input, d, out_dt)
        return record("CumsumBackward0", (input,), data, _cumsum_backward, attrs={"dim": d})
    data = np.cumsum(input._data, axis=d if input.ndim else None, dtype=out_dt.np)
    return record("CumsumBackward0", (input,), data.reshape(input._data.shape), _cumsum_backward,
                  attrs={"dim": d})


# axis= / keepdims= (NumPy's names, accepted by PyTorch's parser) on every reduction here
from .numpy_aliases import accept_numpy_aliases as _aliases  # noqa: E402

for _name in __all__:
    if _name != "norm":  # a Python function in PyTorch: refuses axis=
        globals()[_name] = _aliases(globals()[_name])
del _name
