"""Regression losses: mse, l1, smooth_l1, huber (one pointwise-loss builder)."""
from __future__ import annotations

import warnings

import numpy as np

from ... import _dtype as D
from ...ops import functional as _F
from ...ops.composite import record
from ...tensor import Tensor
from .. import _device
from ._common import (
    _check_tensor,
    _creating_graph,
    _grad_scale,
    _grad_scale_np,
    _reduce_np,
    _reduction,
)


def _mse_backward(node, g):
    a = node.ctx.attrs
    need_x, need_t = node.ctx.needs_input_grad
    n, reduction = a["n"], a["reduction"]
    if not _creating_graph():
        x, t = node.saved_array("x"), node.saved_array("t")
        gd = g._data
        norm = x.dtype.type(2.0 / n if reduction == "mean" else 2.0)
        gx = (norm * (x - t)) * gd
        return (Tensor._make(gx) if need_x else None,
                Tensor._make(-gx) if need_t else None)
    x, t = node.saved("x"), node.saved("t")
    norm = 2.0 / n if reduction == "mean" else 2.0
    gx = (x - t) * norm * g
    return (gx if need_x else None, -gx if need_t else None)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (MseLossBackward0)."""
    _check_tensor(input, "mse_loss")
    _check_tensor(target, "mse_loss", "target")
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.", UserWarning, stacklevel=2)
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        from ...ops.shape_views import broadcast_tensors
        input, target = broadcast_tensors(input, target)
    if weight is not None:  # PyTorch's Python-side weighted MSE
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        loss = (input - target) ** 2 * weight
        if reduction == "none":
            return loss
        return loss.sum() if reduction == "sum" else loss.sum() / weight.sum()
    if _device.is_cuda(input, target):
        return _device.mse_loss(input, target, reduction)
    ct = D.result_type(input, target)
    x = input._data.astype(ct.np, copy=False)
    t = target._data.astype(ct.np, copy=False)
    d = x - t
    data = _reduce_np(d * d, reduction)
    return record("MseLossBackward0", (input, target), data, _mse_backward,
                  save=(("x", input), ("t", target)),
                  attrs={"n": max(int(d.size), 1), "reduction": reduction})


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(reduction, size_average, reduce)
    loss = (input - target).abs()
    return loss if reduction == "none" else (loss.mean() if reduction == "mean" else loss.sum())


def _pointwise_loss_backward(node, g):
    a = node.ctx.attrs
    need_x, need_t = node.ctx.needs_input_grad
    n, reduction, k = a["n"], a["reduction"], a["k"]
    if not _creating_graph():
        d = node.saved_array("x") - node.saved_array("t")
        gx = a["df_np"](d, d.dtype.type(k)) * _grad_scale_np(g._data, reduction, n)
        gx = gx.astype(d.dtype, copy=False)
        return (Tensor._make(gx) if need_x else None, Tensor._make(-gx) if need_t else None)
    d = node.saved("x") - node.saved("t")
    gx = a["df_t"](d, k) * _grad_scale(g, reduction, n, d)
    return (gx if need_x else None, -gx if need_t else None)


def _pointwise_loss(name, fn, input, target, reduction, k, f_np, df_np, df_t):
    """A loss ``f(input - target)`` reduced, as ONE node ``name`` (NumPy forward; backward
    ``df(d) * g`` with NumPy, or with recorded ops under ``create_graph``)."""
    _check_tensor(input, fn)
    _check_tensor(target, fn, "target")
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.", UserWarning, stacklevel=3)
        from ...ops.shape_views import broadcast_tensors
        input, target = broadcast_tensors(input, target)
    ct = D.result_type(input, target)
    if _device.is_cuda(input, target):  # device tensor ops, shown as PyTorch's one node
        from ...ops.composite import record_composition

        def build(x, t):
            loss = _LOSS_T[name](x.to(ct) - t.to(ct), k)
            return loss if reduction == "none" else (
                loss.mean() if reduction == "mean" else loss.sum())
        return record_composition(name, (input, target), build)
    x = input._data.astype(ct.np, copy=False)
    d = x - target._data.astype(ct.np, copy=False)
    data = _reduce_np(np.asarray(f_np(d, d.dtype.type(k)), dtype=d.dtype), reduction)
    return record(name, (input, target), data, _pointwise_loss_backward,
                  save=(("x", input), ("t", target)),
                  attrs={"n": max(int(d.size), 1), "reduction": reduction, "k": k,
                         "df_np": df_np, "df_t": df_t})


def _smooth_l1_np(d, beta):
    z = np.abs(d)
    return np.where(z < beta, d.dtype.type(0.5) * z * z / beta, z - d.dtype.type(0.5) * beta)


def _smooth_l1_grad_np(d, beta):
    return np.where(d < -beta, -1, np.where(d > beta, 1, d / beta)).astype(d.dtype, copy=False)


def _smooth_l1_grad_t(d, beta):
    return _F.where(d < -beta, -1.0, _F.where(d > beta, 1.0, d / beta))


def _huber_np(d, delta):
    z = np.abs(d)
    return np.where(z < delta, d.dtype.type(0.5) * z * z, delta * (z - d.dtype.type(0.5) * delta))


def _huber_grad_np(d, delta):
    return np.where(d < -delta, -delta, np.where(d > delta, delta, d)).astype(d.dtype,
                                                                              copy=False)


def _huber_grad_t(d, delta):
    return _F.where(d < -delta, -delta, _F.where(d > delta, delta, d))


def _smooth_l1_t(d, beta):
    z = d.abs()
    return _F.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta)


def _huber_t(d, delta):
    z = d.abs()
    return _F.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta))


# the losses as tensor ops (CUDA tensors: no NumPy forward)
_LOSS_T = {"SmoothL1LossBackward0": _smooth_l1_t, "HuberLossBackward0": _huber_t}


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 d^2 / beta`` below ``beta``, ``|d| - 0.5 beta`` above (SmoothL1LossBackward0;
    ``beta=0`` is ``l1_loss``, as in PyTorch)."""
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        return l1_loss(input, target, reduction=reduction)
    return _pointwise_loss("SmoothL1LossBackward0", "smooth_l1_loss", input, target, reduction,
                           float(beta), _smooth_l1_np, _smooth_l1_grad_np, _smooth_l1_grad_t)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d^2`` below ``delta``, ``delta (|d| - 0.5 delta)`` above (HuberLossBackward0)."""
    if weight is not None:  # PyTorch's Python-side weighted Huber
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        reduction = _reduction(reduction)
        loss = huber_loss(input, target, reduction="none", delta=delta) * weight
        if reduction == "none":
            return loss
        return loss.sum() if reduction == "sum" else loss.mean()  # (unlike mse_loss's)
    reduction = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    return _pointwise_loss("HuberLossBackward0", "huber_loss", input, target, reduction,
                           float(delta), _huber_np, _huber_grad_np, _huber_grad_t)
