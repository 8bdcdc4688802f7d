"""Helpers shared by nn.functional's modules: argument checks, PyTorch's legacy
``size_average``/``reduce`` arguments, reductions and gradient scaling for losses."""
from __future__ import annotations

import warnings

import numpy as np

from ...autograd import grad_mode
from ...ops.parser_errors import parser_type_name
from ...tensor import Tensor


def _check_tensor(x, fn, arg="input", position=None):
    """PyTorch's TypeError for a non-Tensor ``arg``: the first argument (``input``/``x1``) is
    position 1, the second (``target``/``x2``) position 2 unless ``position`` says."""
    if not isinstance(x, Tensor):
        position = position or (1 if arg in ("input", "x1") else 2)
        raise TypeError(f"{fn}(): argument '{arg}' (position {position}) must be Tensor, not "
                        f"{parser_type_name(x)}")


def _legacy_reduction(size_average, reduce, emit_warning=True):
    warning = "size_average and reduce args will be deprecated, please use reduction='{}' instead."
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    if emit_warning:
        warnings.warn(warning.format(ret), stacklevel=3)
    return ret


def _reduction(reduction, size_average=None, reduce=None):
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _creating_graph() -> bool:
    """Inside a backward function: True when the engine records (``create_graph=True``)."""
    return grad_mode.is_grad_enabled()


def _const(arr) -> Tensor:
    """A constant (no graph) Tensor of ``arr``: a NumPy array, or already a (device) Tensor."""
    return arr if isinstance(arr, Tensor) else Tensor._make(np.asarray(arr))


def _scalar_like(value, arr):
    """``value`` as a NumPy scalar of ``arr``'s dtype (keeps float32 math in float32)."""
    return arr.dtype.type(value)


def _reduce_np(loss, reduction):
    if reduction == "mean":
        return np.asarray(loss.mean(dtype=loss.dtype) if loss.size else np.nan,
                          dtype=loss.dtype)
    if reduction == "sum":
        return np.asarray(loss.sum(dtype=loss.dtype), dtype=loss.dtype)
    return loss


def _grad_scale(g, reduction, n, like):
    """The incoming gradient of a reduced loss, ready to broadcast over the elementwise loss."""
    if reduction == "mean":
        return g / n
    return g


def _grad_scale_np(g, reduction, n):
    if reduction == "mean":
        return g / g.dtype.type(n)
    return g
