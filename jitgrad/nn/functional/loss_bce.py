"""``binary_cross_entropy`` and ``binary_cross_entropy_with_logits`` (``pos_weight``,
``weight``), their fused nodes and broadcasting helpers."""
from __future__ import annotations

import numpy as np

from ... import _dtype as D
from ...ops.composite import record
from ...tensor import Tensor
from .. import _device
from ._common import (
    _check_tensor,
    _const,
    _creating_graph,
    _grad_scale,
    _grad_scale_np,
    _reduce_np,
    _reduction,
)
from .activation import logsigmoid


def _bce_backward(node, g):
    a = node.ctx.attrs
    need_x, need_t = node.ctx.needs_input_grad
    n, reduction = a["n"], a["reduction"]
    wt = a["weight"]
    if not _creating_graph() and g._data.__class__ is np.ndarray:
        x, t = node.saved_array("x"), node.saved_array("t")
        gd = _grad_scale_np(g._data, reduction, n)
        eps = x.dtype.type(1e-12)
        gx = gt = None
        if need_x:
            gx = gd * (x - t) / np.maximum((1 - x) * x, eps)
            if wt is not None:
                gx = gx * wt
            gx = Tensor._make(gx.astype(x.dtype, copy=False))
        if need_t:
            with np.errstate(divide="ignore"):
                gt = -(np.log(x) - np.log1p(-x)) * gd
            if wt is not None:
                gt = gt * wt
            gt = Tensor._make(gt.astype(x.dtype, copy=False))
        return (gx, gt)
    x, t = node.saved("x"), node.saved("t")
    gs = _grad_scale(g, reduction, n, x)
    gx = gt = None
    if need_x:
        gx = gs * (x - t) / ((1 - x) * x).clamp_min(1e-12)
        if wt is not None:
            gx = gx * _const(wt)
    if need_t:
        gt = -(x.log() - (-x).log1p()) * gs
        if wt is not None:
            gt = gt * _const(wt)
    return (gx, gt)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """``-w (t log x + (1-t) log(1-x))`` with logs clamped at -100
    (BinaryCrossEntropyBackward0)."""
    _check_tensor(input, "binary_cross_entropy")
    _check_tensor(target, "binary_cross_entropy", "target")
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the same "
                         "size.")
    if _device.is_cuda(input, target):  # no input range check on the device (no d2h)
        return _device.binary_cross_entropy(input, target, weight, reduction)
    x = input._data
    if target.dtype is not input.dtype:
        raise RuntimeError(f"Found dtype {D.scalar_name(target.dtype)} "
                           f"but expected {D.scalar_name(input.dtype)}")
    if np.any((x < 0) | (x > 1)):
        raise RuntimeError("all elements of input should be between 0 and 1")
    t = target._data.astype(x.dtype, copy=False)
    wt = None
    if weight is not None:
        wt = np.broadcast_to(weight._data.astype(x.dtype, copy=False),
                             _broadcast_to_shape(weight, x.shape))
    with np.errstate(divide="ignore"):
        lx = np.maximum(np.log(x), x.dtype.type(-100))
        l1x = np.maximum(np.log1p(-x), x.dtype.type(-100))
    loss = -(t * lx + (1 - t) * l1x)
    if wt is not None:
        loss = loss * wt
    data = _reduce_np(loss.astype(x.dtype, copy=False), reduction)
    return record("BinaryCrossEntropyBackward0", (input, target), data, _bce_backward,
                  save=(("x", input), ("t", target)),
                  attrs={"n": max(x.size, 1), "reduction": reduction, "weight": wt})


def _broadcast_to_shape(t, shape):
    """``shape`` when ``t`` broadcasts to it, else PyTorch's RuntimeError (expand's message)."""
    ts = tuple(t.shape)
    if len(ts) > len(shape) or any(a != b and a != 1 for a, b in
                                   zip(ts[::-1], shape[::-1])):
        i = next((k for k, (a, b) in enumerate(zip(ts[::-1], shape[::-1]), 1)
                  if a != b and a != 1), 1)
        raise RuntimeError(f"Attempting to broadcast a dimension of length {ts[-i]} at -{i}! "
                           f"Mismatching argument at index 1 had torch.Size({list(ts)}); but "
                           f"expected shape should be broadcastable to {list(shape)}")
    return shape


def _broadcast_shapes(a, b):
    """np.broadcast_shapes with PyTorch's error (RuntimeError, its wording)."""
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        for i in range(1, max(len(a), len(b)) + 1):
            da = a[-i] if i <= len(a) else 1
            db = b[-i] if i <= len(b) else 1
            if da != db and da != 1 and db != 1:
                dim = max(len(a), len(b)) - i
                raise RuntimeError(f"The size of tensor a ({da}) must match the size of tensor "
                                   f"b ({db}) at non-singleton dimension {dim}") from None
        raise


def _log_sigmoid_np(x):
    return np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))


def _bce_logits_backward(node, g):
    a = node.ctx.attrs
    need_x, need_t = node.ctx.needs_input_grad
    n, reduction = a["n"], a["reduction"]
    wt, pw = a["weight"], a["pos_weight"]
    if not _creating_graph():
        x, t = node.saved_array("x"), node.saved_array("t")
        gd = _grad_scale_np(g._data, reduction, n)
        gx = gt = None
        if need_x:
            with np.errstate(over="ignore"):  # exp(-x) = inf for x << 0 gives sigmoid 0
                sig = 1 / (1 + np.exp(-x))
            if pw is not None:
                tp = pw * t
                gx = (tp + 1 - t) * sig - tp
            else:
                gx = sig - t
            gx = gx * gd
            if wt is not None:
                gx = gx * wt
            gx = Tensor._make(gx.astype(x.dtype, copy=False))
        if need_t:
            if pw is not None:
                gt = (_log_sigmoid_np(-x) - _log_sigmoid_np(x) * pw) * gd
            else:
                gt = -x * gd
            if wt is not None:
                gt = gt * wt
            gt = Tensor._make(gt.astype(x.dtype, copy=False))
        return (gx, gt)
    x, t = node.saved("x"), node.saved("t")
    gs = _grad_scale(g, reduction, n, x)
    gx = gt = None
    if need_x:
        sig = x.sigmoid()
        if pw is not None:
            tp = _const(pw) * t
            gx = ((tp + 1 - t) * sig - tp) * gs
        else:
            gx = (sig - t) * gs
        if wt is not None:
            gx = gx * _const(wt)
    if need_t:
        if pw is not None:
            gt = (logsigmoid(-x) - logsigmoid(x) * _const(pw)) * gs
        else:
            gt = -x * gs
        if wt is not None:
            gt = gt * _const(wt)
    return (gx, gt)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """Sigmoid + binary cross entropy in one numerically stable op
    (BinaryCrossEntropyWithLogitsBackward0)."""
    _check_tensor(input, "binary_cross_entropy_with_logits")
    _check_tensor(target, "binary_cross_entropy_with_logits", "target")
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    x = input._data
    if not input.is_floating_point():
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{D.scalar_name(input.dtype)}")
    if not target.is_floating_point():  # PyTorch computes in place into the target's type
        rt = D.scalar_name(D.result_type(input, target))
        raise RuntimeError(f"result type {rt} can't be cast to the desired output type "
                           f"{D.scalar_name(target.dtype)}")
    if _device.is_cuda(input, target):
        return _device.binary_cross_entropy_with_logits(input, target, weight, reduction,
                                                        pos_weight)
    t = target._data.astype(x.dtype, copy=False)
    log_sig = _log_sigmoid_np(x)
    pw = wt = None
    if pos_weight is not None:
        pw = np.broadcast_to(pos_weight._data.astype(x.dtype, copy=False),
                             _broadcast_shapes(tuple(pos_weight.shape), x.shape))
        log_weight = (pw - 1) * t + 1
        log_sig = log_sig * log_weight
    loss = (1 - t) * x - log_sig
    if weight is not None:
        wt = np.broadcast_to(weight._data.astype(x.dtype, copy=False),
                             _broadcast_shapes(tuple(weight.shape), x.shape))
        loss = loss * wt
    data = _reduce_np(loss.astype(x.dtype, copy=False), reduction)
    return record("BinaryCrossEntropyWithLogitsBackward0", (input, target), data,
                  _bce_logits_backward, save=(("x", input), ("t", target)),
                  attrs={"n": max(x.size, 1), "reduction": reduction, "weight": wt,
                         "pos_weight": pw})
