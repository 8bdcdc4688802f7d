"""What every reduction shares: ``dim`` (int, tuple or None) and ``keepdim`` normalised to sorted
axes, the attrs a VJP reads back to bring a reduced gradient to the input's shape, ``dtype=``,
and the host/device test (CUDA tensors take ``reduce_cuda``, imported on first use)."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode

_type_word = D.scalar_name


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
