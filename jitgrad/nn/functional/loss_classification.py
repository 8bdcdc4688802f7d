"""``nll_loss`` and ``cross_entropy`` (class indices or probabilities, weights,
``ignore_index``, ``label_smoothing``)."""
from __future__ import annotations

import numpy as np

from ... import _dtype as D
from ...autograd import grad_mode
from ...ops.composite import record, record_composition
from ...ops.softmax import _log_softmax_backward
from ...tensor import Tensor
from .. import _device
from ._common import _check_tensor, _const, _creating_graph, _reduction
from .activation import log_softmax


def _nll_backward(node, g):
    a = node.ctx.attrs
    reduction = a["reduction"]
    if reduction != "none":
        return (_reduced_nll_backward(a, g),)
    coef = a["coef"]  # (N, C, ...) array: -w[t] at the target class, 0 elsewhere
    out_shape = a.get("out_shape")
    if not _creating_graph():
        gd = g._data
        if out_shape is not None:
            gd = gd.reshape(out_shape)
        gd = np.expand_dims(gd, a["class_dim"])
        return (Tensor._make(coef * gd),)
    if out_shape is not None:
        g = g.reshape(out_shape)
    g = g.unsqueeze(a["class_dim"])
    return (_const(coef) * g,)


def _reduced_nll_backward(a, g):
    """ATen's nll_loss_backward of a reduced loss: ``grad = -(g / total_weight)`` (mean) or
    ``-g`` (sum) in the dtype, then ``w[t] * grad`` at each kept target, +0 elsewhere."""
    shape, dt, sel, wsel = a["shape"], a["dtype"], a["sel"], a["wsel"]
    if not _creating_graph():
        gd = dt.type(g._data)
        with np.errstate(divide="ignore", invalid="ignore"):
            grad = -(gd / a["total_weight"]) if a["reduction"] == "mean" else -gd
            out = np.zeros(shape, dt)
            out[sel] = grad if wsel is None else wsel * grad
        return Tensor._make(out)
    coef = np.zeros(shape, dt)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = -(dt.type(1) / a["total_weight"]) if a["reduction"] == "mean" else dt.type(-1)
        coef[sel] = scale if wsel is None else wsel * scale
    return _const(coef) * g


def _common_case(x, t, ignore_index, reduction) -> bool:
    """The usual case: host (N, C) floats, N int64 class indices all in range and none ignored,
    a reduced loss (class weights are the caller's check)."""
    if x.__class__ is not np.ndarray or t.__class__ is not np.ndarray or x.ndim != 2 or \
            t.ndim != 1 or t.dtype != np.int64 or x.dtype.kind != "f" or \
            x.shape[0] != t.shape[0] or not t.size or reduction == "none":
        return False
    lo, hi = t.min(), t.max()
    return not (lo < 0 or hi >= x.shape[1] or
                (lo <= ignore_index <= hi and np.any(t == ignore_index)))


def _nll_common(input, target, ignore_index, reduction):
    """``_common_case`` in a few NumPy calls; None means: take the general path (which also
    raises the errors)."""
    if not _common_case(input._data, target._data, ignore_index, reduction):
        return None
    return _nll_rows(input, target._data, reduction)


def _nll_rows(input, t, reduction):
    """nll_loss of ``_common_case`` arrays (NllLossBackward0)."""
    x = input._data
    n = x.shape[0]
    dt = x.dtype
    total = dt.type(_nll_total(x, t))
    data = np.asarray(total / dt.type(n) if reduction == "mean" else total, dtype=dt)
    if not (grad_mode.is_grad_enabled() and input._requires_grad):
        return Tensor._make(data)
    return record("NllLossBackward0", (input,), data, _nll_backward,
                  attrs={"reduction": reduction, "class_dim": 1, "shape": x.shape,
                         "dtype": dt, "sel": (np.arange(n), t), "wsel": None,
                         "total_weight": dt.type(n)})


def _nll_total(x, t):
    """``-sum(x[r, t[r]])`` in ATen's cascade in the dtype (``_nll_kernels``), as a float64
    (also a compiled step's lowered cross-entropy)."""
    from ._nll_kernels import nll_cascade, nll_rows_total
    if x.flags.c_contiguous and x.dtype in _LOG_SOFTMAX_ROWS and t.flags.c_contiguous:
        return nll_rows_total(x, t)
    picked = x[np.arange(x.shape[0]), t]
    if x.dtype not in _LOG_SOFTMAX_ROWS:  # float16: no compiled cascade, a float64 sum
        return -picked.sum(dtype=np.float64)
    return float(nll_cascade(picked, picked, np.ones(picked.shape, bool), False)[0])


def _nll_check_target(input, target):
    """PyTorch's checks of an nll_loss target, in its order: batch size, target shape, dtype."""
    nd = input.ndim
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    if nd >= 2 and target.ndim >= 1 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0]}).")
    if nd == 1:
        if target.ndim == 1 and target.shape[0] != 1:
            raise ValueError("For 1D input, 1D target must have size 1, but got target size: "
                             f"{target.shape[0]}")
        if target.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    elif nd == 2:
        if target.ndim != 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    elif tuple(target.shape[1:]) != tuple(input.shape[2:]):
        raise RuntimeError(f"Expected target size {[input.shape[0]] + list(input.shape[2:])}, "
                           f"got {list(target.shape)}")
    if target.dtype.is_floating_point or target.dtype not in (D.int64, D.uint8):
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{D.scalar_name(target.dtype)}")


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log likelihood over class indices (NllLossBackward0 / NllLoss2DBackward0)."""
    _check_tensor(input, "nll_loss_nd")  # (the ATen op the parser names)
    _check_tensor(target, "nll_loss_nd", "target")
    reduction = _reduction(reduction, size_average, reduce)
    if weight is None and not _device.is_cuda(input):
        out = _nll_common(input, target, ignore_index, reduction)
        if out is not None:
            return out
    nd = input.ndim
    _nll_check_target(input, target)
    x = input._data
    class_dim = 0 if nd == 1 else 1
    C = x.shape[class_dim]
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != C):
        raise RuntimeError(f"weight tensor should be defined either for all {C} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    if _device.is_cuda(input, target):  # shapes/dtypes checked above; values not (no d2h)
        return _device.nll_loss(input, target, weight, ignore_index, reduction)
    t = target._data.astype(np.int64, copy=False)
    if nd == 1:
        t = t.reshape(())
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= C))
    if np.any(bad):
        from ...ops.index_rules import range_error
        raise range_error("nll_target", t[bad].flat[0], class_dim, C)
    ts = np.where(valid, t, 0)
    ti = np.expand_dims(ts, class_dim)
    picked = np.take_along_axis(x, ti, axis=class_dim).squeeze(class_dim)
    if weight is not None:
        wt = weight._data.astype(x.dtype, copy=False)[ts] * valid
    else:
        wt = valid.astype(x.dtype)
    name = "NllLoss2DBackward0" if nd >= 3 else "NllLossBackward0"
    track = grad_mode.is_grad_enabled() and input._requires_grad
    if reduction == "none":
        data = np.asarray(-(picked * wt), dtype=x.dtype)
        if not track:
            return Tensor._make(data)
        coef = np.zeros(x.shape, dtype=x.dtype)
        # 0 - wt, not -wt: ignored targets get +0.0 in the gradient, as PyTorch prints
        np.put_along_axis(coef, ti, np.expand_dims((0 - wt).astype(x.dtype, copy=False),
                                                   class_dim), axis=class_dim)
        attrs = {"coef": coef, "reduction": reduction, "class_dim": class_dim}
    else:
        data, attrs = _nll_reduced(x, ti, picked, wt, valid, weight is not None, class_dim,
                                   reduction)
        if not track:
            return Tensor._make(data)
    viewed = reduction == "none" and nd >= 3 and nd != 4
    if viewed:  # PyTorch runs nll_loss2d on a 4-D view and views the result back
        shape = data.shape
        data = data.reshape(shape[0], -1, 1) if nd == 3 else data.reshape(shape[0], 1, -1)
    attrs["out_shape"] = shape if viewed else None
    out = record(name, (input,), data, _nll_backward, attrs=attrs)
    return out.view(*shape) if viewed else out


def _nll_reduced(x, ti, picked, wt, valid, weighted, class_dim, reduction):
    """A mean/sum loss in ATen's cascade (``_nll_kernels``) and its backward's attrs."""
    from ._nll_kernels import nll_cascade
    dt = x.dtype
    p = np.ascontiguousarray(picked.reshape(-1))
    keep = np.ascontiguousarray(valid.reshape(-1))
    if dt in _LOG_SOFTMAX_ROWS:
        total, wtotal = nll_cascade(p, np.ascontiguousarray(wt.reshape(-1)), keep, weighted)
    else:  # float16: no compiled cascade, float64 sums
        total = -(p * wt.reshape(-1)).astype(np.float64).sum()
        wtotal = wt.astype(np.float64).sum()
    total = dt.type(total)  # Numba hands back Python floats: divide as the dtype
    wtotal = dt.type(wtotal if weighted else np.count_nonzero(keep))
    with np.errstate(invalid="ignore", divide="ignore"):
        data = np.asarray(total / wtotal if reduction == "mean" else total, dtype=dt)
    mask = np.zeros(x.shape, bool)
    np.put_along_axis(mask, ti, np.expand_dims(valid, class_dim), axis=class_dim)
    sel = np.nonzero(mask)
    wsel = None
    if weighted:
        wfull = np.zeros(x.shape, dt)
        np.put_along_axis(wfull, ti, np.expand_dims(wt.astype(dt, copy=False), class_dim),
                          axis=class_dim)
        wsel = wfull[sel]
    return data, {"reduction": reduction, "class_dim": class_dim, "shape": x.shape,
                  "dtype": dt, "sel": sel, "wsel": wsel, "total_weight": dt.type(wtotal)}


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """``nll_loss(log_softmax(input, 1), target)`` for class indices; soft targets (class
    probabilities, same shape as input) are supported too."""
    _check_tensor(input, "cross_entropy_loss")  # (the ATen op the parser names)
    _check_tensor(target, "cross_entropy_loss", "target")
    reduction = _reduction(reduction, size_average, reduce)
    if label_smoothing > 1.0:  # PyTorch lets a negative value through (= no smoothing)
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    class_dim = 0 if input.ndim == 1 else 1
    if target.is_floating_point() and tuple(target.shape) == tuple(input.shape):
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing,
                                    class_dim)
    xd, td = input._data, target._data
    if not (xd.ndim == 2 and td.ndim == 1 and target.dtype is D.int64 and
            xd.shape[0] == td.shape[0]):  # the common case needs no further checks
        if xd.ndim == 0:
            raise RuntimeError("Expected floating point type for target with class "
                               "probabilities, got "
                               f"{D.scalar_name(target.dtype)}")
        _nll_check_target(input, target)
    if weight is None and label_smoothing <= 0.0 and \
            _common_case(xd, td, ignore_index, reduction) and xd.dtype in _LOG_SOFTMAX_ROWS:
        return _nll_rows(_log_softmax_rows(input), td, reduction)
    lsm = log_softmax(input, class_dim)
    nll = nll_loss(lsm, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0.0:
        return nll
    C = input.shape[class_dim]
    ignore_mask = target == ignore_index
    if weight is not None:
        wshape = [1] * input.ndim
        wshape[class_dim] = C
        smooth = -(lsm * weight.view(*wshape)).sum(class_dim)
    else:
        smooth = -lsm.sum(class_dim)
    smooth = smooth.masked_fill(ignore_mask, 0.0)
    if reduction == "mean":
        if weight is not None:
            tsafe = target.masked_fill(ignore_mask, 0)
            wsum = (weight[tsafe.reshape(-1)] * (~ignore_mask).reshape(-1).to(weight.dtype))
            ret = smooth.sum() / wsum.sum()
        else:
            ret = smooth.sum() / (~ignore_mask).sum()
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return (1 - label_smoothing) * nll + ret * (label_smoothing / C)


_LOG_SOFTMAX_ROWS = (np.dtype(np.float32), np.dtype(np.float64))


def _log_softmax_rows(input):
    """``log_softmax(input, 1)`` of a host (N, C) float32/float64 tensor, with the node of
    ``ops.softmax.log_softmax`` (LogSoftmaxBackward0), without its argument handling, which
    costs as much as the arithmetic for a classifier's logits; ATen's row kernel
    (``ops/_softmax_aten``: SLEEF exp/log, reduce_all's order), so PyTorch's bits."""
    data = _log_softmax_array(input._data)
    return record("LogSoftmaxBackward0", (input,), data, _log_softmax_rows_backward,
                  save_outputs=(("out", 0),), attrs={"dim": 1})


def _log_softmax_rows_backward(node, g):
    """LogSoftmaxBackward0 of ``_log_softmax_rows``: one compiled pass per row
    (``_loss_kernels``, also a lowered step's) when no graph is being recorded."""
    y = node.saved("out")
    yd, gd = y._data, g._data
    if not grad_mode.is_grad_enabled() and gd.__class__ is np.ndarray and \
            yd.__class__ is np.ndarray and gd.shape == yd.shape and gd.dtype == yd.dtype and \
            yd.flags.c_contiguous and gd.flags.c_contiguous:
        from ._loss_kernels import log_softmax_rows_backward
        out = np.empty_like(yd)
        log_softmax_rows_backward(yd, gd, out)
        return (Tensor._make(out),)
    return _log_softmax_backward(node, g)


def _log_softmax_array(x):
    """``log_softmax(x, 1)`` of a host (N, C) float32/float64 array (also a compiled step's
    lowered cross-entropy, ``_compile/lower.py``: the same bits)."""
    if x.shape[0] and x.shape[1]:  # ATen's kernel, as F.log_softmax (ops/_softmax_aten)
        from ..._settings import get_num_threads
        from ...ops._softmax_aten import softmax_forward
        return softmax_forward(x, 1, True, get_num_threads())
    with np.errstate(all="ignore"):  # inf - inf is NaN silently, as in PyTorch
        shifted = x - x.max(axis=1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _cross_entropy_probs(input, target, weight, reduction, label_smoothing, class_dim):
    C = input.shape[class_dim]
    lsm = log_softmax(input, class_dim)
    if label_smoothing > 0.0:
        target = target * (1 - label_smoothing) + label_smoothing / C
    prod = lsm * target
    if weight is not None:
        wshape = [1] * input.ndim
        wshape[class_dim] = C
        prod = prod * weight.view(*wshape)
    if reduction == "none":
        return -prod.sum(class_dim)
    total = -prod.sum()
    if reduction == "sum":
        return total
    if input.numel() == 0:
        return total.fill_(float("nan"))
    n = input.numel() // C
    # PyTorch divides by a Scalar: DivBackward1
    return record_composition("DivBackward1", (total,), lambda t: t / n)
