"""Reductions with ``dim`` (int or tuple) and ``keepdim``; VJPs written with registered ops.

CUDA tensors take the ``_device_*`` / ``_kred`` paths: the kernel layer's tree reductions and
scans (``backends.cuda_kernels``) composed with registered elementwise ops, so forward and
backward stay on the device without a host transfer (docs/cuda.md)."""
from __future__ import annotations

import collections

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .composite import ieee_quiet, record

__all__ = ["sum", "mean", "var", "std", "var_mean", "std_mean", "prod", "max", "min", "amax",
           "amin", "argmax", "argmin", "norm", "logsumexp", "all", "any", "count_nonzero",
           "cumsum", "aminmax"]


class _ReturnType(tuple):
    """torch.return_types.<name>(values=..., indices=...)"""

    _name = "max"
    __slots__ = ()

    def __new__(cls, values, indices):
        return tuple.__new__(cls, (values, indices))

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]

    def __repr__(self):
        return (f"torch.return_types.{self._name}(\nvalues={self[0]!r},\n"
                f"indices={self[1]!r})")


def _return_type(name):
    return type(name, (_ReturnType,), {"_name": name, "__slots__": ()})


MaxResult = _return_type("max")
MinResult = _return_type("min")
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


def _check_floating_for_var(input):
    if not input.dtype.is_floating_point:  # PyTorch refuses integer and bool inputs
        raise RuntimeError("std and var only support floating point and complex dtypes")


def _np_axes(x, axes):
    return axes if x._data.ndim else None


def _sum_backward(node, g):
    return (_expand_back(g, node),)


@ieee_quiet
def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001 - torch.sum
    axes = _dims(dim, input._data.ndim)
    if dtype is not None:
        input = input.to(dtype)
    out_dt = input.dtype if input.dtype.is_floating_point else D.int64
    if input._data.__class__ is not np.ndarray:
        data = _cuda().device_reduce("sum", input, axes, keepdim, out_dt.np)
    else:
        data = np.sum(input._data, axis=_np_axes(input, axes), keepdims=keepdim, dtype=out_dt.np)
    name = "SumBackward0" if dim is None and not keepdim else "SumBackward1"
    return record(name, (input,), _asarray(data), _sum_backward,
                  attrs=_attrs(input, axes, keepdim))


def _mean_backward(node, g):
    return (_expand_back(g, node) / node.ctx.attrs["n"],)


@ieee_quiet
def mean(input, dim=None, keepdim=False, *, dtype=None):
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
        data = np.mean(input._data, axis=_np_axes(input, axes), keepdims=keepdim)
    name = "MeanBackward0" if dim is None and not keepdim else "MeanBackward1"
    return record(name, (input,), _asarray(data, input._data.dtype), _mean_backward,
                  attrs=_attrs(input, axes, keepdim, n=n))


def _type_word(dt):
    return {"int64": "Long", "int32": "Int", "bool": "Bool", "int16": "Short", "int8": "Char",
            "uint8": "Byte"}.get(dt.name, dt.name)


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
        import warnings
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=3)


def _var_backward(node, g):
    a = node.ctx.attrs
    x = node.saved("x")
    mu = x.mean(a["axes"] if x.ndim else None, keepdim=True)
    # denom 0 (one element, unbiased): PyTorch's 2/0 = inf, so the gradient is NaN, not an error
    scale = 2.0 / a["denom"] if a["denom"] else float("inf")
    return (_expand_back(g, node) * (x - mu) * scale,)


@ieee_quiet
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    _check_floating_for_var(input)
    dim, c = _var_args(dim, unbiased, correction)
    axes = _dims(dim, input._data.ndim)
    n = int(np.prod([input._data.shape[a] for a in axes])) if input._data.ndim else 1
    denom = n - c
    if _on_device(input):
        _warn_dof(denom, "var")
        data = _cuda().device_var(input, axes, keepdim, denom, n)
    else:
        data = np.var(input._data, axis=_np_axes(input, axes), keepdims=keepdim, ddof=0)
        _warn_dof(denom, "var")
        data = np.asarray(data * (n / denom) if denom > 0 else np.full_like(data, np.nan),
                          dtype=input._data.dtype)
    return record("VarBackward0", (input,), data, _var_backward, save=(("x", input),),
                  attrs=_attrs(input, axes, keepdim, denom=denom))


def _std_backward(node, g):
    a = node.ctx.attrs
    x = node.saved("x")
    out = node.saved("out")
    mu = x.mean(a["axes"] if x.ndim else None, keepdim=True)
    if not a["keepdim"]:
        out = out.reshape(a["kept"])
    return (_expand_back(g, node) * (x - mu) / (out * a["denom"]),)


@ieee_quiet
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    _check_floating_for_var(input)
    dim, c = _var_args(dim, unbiased, correction)
    axes = _dims(dim, input._data.ndim)
    n = int(np.prod([input._data.shape[a] for a in axes])) if input._data.ndim else 1
    denom = n - c
    if _on_device(input):
        _warn_dof(denom, "std")
        data = _cuda().dev(_cuda().device_var(input, axes, keepdim, denom, n)).sqrt()._data
    else:
        v = np.var(input._data, axis=_np_axes(input, axes), keepdims=keepdim, ddof=0)
        _warn_dof(denom, "std")
        data = np.asarray(np.sqrt(v * (n / denom)) if denom > 0 else np.full_like(v, np.nan),
                          dtype=input._data.dtype)
    return record("StdBackward0", (input,), data, _std_backward, save=(("x", input),),
                  save_outputs=(("out", 0),), attrs=_attrs(input, axes, keepdim, denom=denom))


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return (var(input, dim, unbiased, keepdim, correction=correction),
            mean(input, dim if not isinstance(dim, bool) else None, keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return (std(input, dim, unbiased, keepdim, correction=correction),
            mean(input, dim if not isinstance(dim, bool) else None, keepdim))


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


@ieee_quiet
def prod(input, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    axes = _dims(dim, input._data.ndim)
    out_dt = input.dtype if input.dtype.is_floating_point else D.int64
    if _on_device(input):
        data = _cuda().kred("prod", input._data, axes, keepdim, out_dt.np)
    else:
        data = np.asarray(np.prod(input._data, axis=_np_axes(input, axes), keepdims=keepdim,
                                  dtype=out_dt.np))
    name = "ProdBackward0" if dim is None else "ProdBackward1"
    return record(name, (input,), data, _prod_backward, save=(("x", input),),
                  save_outputs=(("out", 0),), attrs=_attrs(input, axes, keepdim))


def _evenly_backward(node, g):
    """max()/min()/amax/amin: the gradient is shared evenly among tied extremes."""
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
    idx = node.ctx.attrs["indices"]
    if not a["keepdim"]:
        g = g.unsqueeze(a["axes"][0])
        idx = np.expand_dims(idx, a["axes"][0]) if idx.__class__ is np.ndarray else \
            idx.expand_dims(a["axes"][0])
    return (scatter_into_zeros(g, a["shape"], a["axes"][0], idx),)


def _extreme(input, dim, keepdim, which):
    np_fn = np.max if which == "max" else np.min
    arg_fn = np.argmax if which == "max" else np.argmin
    if input._data.size == 0 and (dim is None or input._data.shape[_wrap(dim, input.ndim)] == 0):
        raise RuntimeError(f"{which}(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")
    if dim is None:
        if input._data.__class__ is not np.ndarray:
            data = _cuda().device_reduce("a" + which, input, _dims(None, input.ndim), False, None)
        else:
            data = np.asarray(np_fn(input._data))
        return record("MaxBackward1" if which == "max" else "MinBackward1", (input,), data,
                      _evenly_backward, save=(("x", input),), save_outputs=(("out", 0),),
                      attrs=_attrs(input, _dims(None, input.ndim), False))
    d = _wrap(dim, input._data.ndim)
    ax = d if input._data.ndim else None
    if input._data.__class__ is not np.ndarray:
        if input._data.ndim == 0:
            raise NotImplementedError(f"jitgrad: {which}(input, dim) of a 0-d tensor is not "
                                      "implemented for device 'cuda:0' yet")
        from .._cuda_array import CudaArray
        from ..backends import cuda as B
        R = B.kernels().reduce
        vals, idx = (R.max_dim if which == "max" else R.min_dim)(input._data.kview(), d,
                                                                  keepdim)
        data, idx = CudaArray.wrap(vals), CudaArray.wrap(idx)
    else:
        idx = np.asarray(arg_fn(input._data, axis=ax, keepdims=keepdim)).astype(np.int64)
        data = np.asarray(np_fn(input._data, axis=ax, keepdims=keepdim))
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


def _amax(input, dim, keepdim, which):
    axes = _dims(dim if dim != () else None, input._data.ndim)
    fn = np.max if which == "amax" else np.min
    if input._data.__class__ is not np.ndarray:
        data = _cuda().device_reduce(which, input, axes, keepdim, None)
    else:
        data = np.asarray(fn(input._data, axis=_np_axes(input, axes), keepdims=keepdim))
    return record("AmaxBackward0" if which == "amax" else "AminBackward0", (input,), data,
                  _evenly_backward, save=(("x", input),), save_outputs=(("out", 0),),
                  attrs=_attrs(input, axes, keepdim))


def amax(input, dim=(), keepdim=False):
    return _amax(input, dim, keepdim, "amax")


def amin(input, dim=(), keepdim=False):
    return _amax(input, dim, keepdim, "amin")


def aminmax(input, *, dim=None, keepdim=False):
    return amin(input, dim if dim is not None else (), keepdim), \
        amax(input, dim if dim is not None else (), keepdim)


def argmax(input, dim=None, keepdim=False):
    if input._data.__class__ is not np.ndarray and input.ndim:
        return _cuda().device_arg(input, dim, keepdim, "max")
    if dim is None:
        r = np.asarray(np.argmax(input._data))
        return Tensor._make((r.reshape((1,) * input.ndim) if keepdim else r).astype(np.int64))
    return Tensor._make(np.asarray(np.argmax(input._data, axis=_wrap(dim, input.ndim),
                                             keepdims=keepdim)).astype(np.int64))


def argmin(input, dim=None, keepdim=False):
    if input._data.__class__ is not np.ndarray and input.ndim:
        return _cuda().device_arg(input, dim, keepdim, "min")
    if dim is None:
        r = np.asarray(np.argmin(input._data))
        return Tensor._make((r.reshape((1,) * input.ndim) if keepdim else r).astype(np.int64))
    return Tensor._make(np.asarray(np.argmin(input._data, axis=_wrap(dim, input.ndim),
                                             keepdims=keepdim)).astype(np.int64))


def _norm_backward(node, g):
    a = node.ctx.attrs
    x = node.saved("x")
    out = node.saved("out")
    if not a["keepdim"]:
        out = out.reshape(a["kept"])
    ge = _expand_back(g, node)
    p = a["p"]
    if p == 2:
        from .functional import where
        safe = where(out == 0, 1.0, out)
        return (where(out == 0, 0.0, ge * x / safe),)
    if p == 1:
        return (ge * x.sign(),)
    if p in (float("inf"), -float("inf")):
        ax = x.abs()
        mask = (ax == out).to(x.dtype)
        return (ge * x.sign() * mask / mask.sum(a["axes"], keepdim=True),)
    from .functional import where
    ax = x.abs()
    safe = where(out == 0, 1.0, out)
    return (where(out == 0, 0.0, ge * x.sign() * ax ** (p - 1) / safe ** (p - 1)),)


@ieee_quiet
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    if p == "fro" or p is None:
        p = 2
    if not isinstance(p, (int, float)):
        raise RuntimeError(f"norm: unsupported p={p!r}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_type_word(input.dtype)}")
    axes = _dims(dim, input._data.ndim)
    if _on_device(input):
        return record("LinalgVectorNormBackward0", (input,),
                      _cuda().device_norm(input, p, axes, keepdim), _norm_backward,
                      save=(("x", input),), save_outputs=(("out", 0),),
                      attrs=_attrs(input, axes, keepdim, p=p))
    ax = _np_axes(input, axes)
    a = np.abs(input._data)
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
    data = np.asarray(data, dtype=input._data.dtype)
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


def all(input, dim=None, keepdim=False):  # noqa: A001
    ax = None if dim is None else _dims(dim, input.ndim)
    if _on_device(input):
        return Tensor._make(_cuda().kred("all", input._data, _dims(dim, input.ndim), keepdim))
    return Tensor._make(np.asarray(np.all(input._data, axis=ax, keepdims=keepdim)))


def any(input, dim=None, keepdim=False):  # noqa: A001
    ax = None if dim is None else _dims(dim, input.ndim)
    if _on_device(input):
        return Tensor._make(_cuda().kred("any", input._data, _dims(dim, input.ndim), keepdim))
    return Tensor._make(np.asarray(np.any(input._data, axis=ax, keepdims=keepdim)))


def count_nonzero(input, dim=None):
    ax = None if dim is None else _dims(dim, input.ndim)
    if _on_device(input):  # cast to bool (nonzero, NaN included), then an int64 tree sum
        b = input._data if input._data.dtype == np.bool_ else input._data.astype(np.bool_)
        return Tensor._make(_cuda().kred("sum", b, _dims(dim, input.ndim), False, np.int64))
    return Tensor._make(np.asarray(np.count_nonzero(input._data, axis=ax), dtype=np.int64))


def _cumsum_backward(node, g):
    d = node.ctx.attrs["dim"]
    if g.ndim == 0:  # cumsum of a 0-d tensor is the identity (flip has no dim 0 to flip)
        return (g,)
    if _on_device(g):
        return (_cuda().reverse_cumsum(g, d),)
    return (g.flip(d).cumsum(d).flip(d),)


@ieee_quiet
def cumsum(input, dim, *, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    d = _wrap(dim, input._data.ndim)
    out_dt = input.dtype if input.dtype.is_floating_point else D.int64
    if _on_device(input):
        data = _cuda().device_cumsum(input, d, out_dt)
        return record("CumsumBackward0", (input,), data, _cumsum_backward, attrs={"dim": d})
    data = np.cumsum(input._data, axis=d if input.ndim else None, dtype=out_dt.np)
    return record("CumsumBackward0", (input,), data.reshape(input._data.shape), _cumsum_backward,
                  attrs={"dim": d})
