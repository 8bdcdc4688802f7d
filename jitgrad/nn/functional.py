"""``jitgrad.nn.functional``: PyTorch's functional layer API.

Ops whose PyTorch node is a single fused node (``NllLossBackward0``, ``MseLossBackward0``,
``NativeLayerNormBackward0``, ``EmbeddingBackward0``, the BCE nodes) are composite ops: a NumPy
forward plus ``record(...)``. Their backward has two paths: when the engine runs with grad mode
off (a plain ``backward()``) it computes the gradient with NumPy directly; with
``create_graph=True`` it is written with differentiable jitgrad ops, so higher-order gradients
flow through it. Everything else is a composition of core ops recording PyTorch's node names
(``linear`` is ``addmm(bias, x, w.t())`` -> AddmmBackward0, ``dropout`` is ``x * mask`` ->
MulBackward0, ``cross_entropy`` is ``nll_loss(log_softmax(x))``).
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..backends import blas, cpu
from ..ops import functional as _F
from ..ops import softmax as _softmax
from ..ops.composite import record
from ..ops.linalg import addmm, matmul
from ..tensor import Tensor
from . import _device  # CUDA inputs: device compositions (the routes below are device-only)

__all__ = [
    "linear", "bilinear", "relu", "relu_", "relu6", "gelu", "silu", "elu", "softmax",
    "log_softmax", "softmin", "dropout", "embedding", "layer_norm", "mse_loss", "l1_loss",
    "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "one_hot", "tanh", "sigmoid", "leaky_relu", "softplus", "logsigmoid", "normalize",
    "hardtanh",
]


# ----------------------------------------------------------------------------- helpers


def _check_tensor(x, fn, arg="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


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


# ----------------------------------------------------------------------------- linear


def _linear_backward(node, g):
    """AddmmBackward0 of ``addmm(bias, x, w.t())``, with PyTorch's layouts: the gradient for
    the ``w.t()`` slot is computed as ``(g^T x)^T`` so that, after TBackward0, the weight's
    gradient is a C-contiguous (out, in) array; the bias gradient is summed here directly."""
    need_b, need_x, need_wt = node.ctx.needs_input_grad
    gb = gx = gwt = None
    if not _creating_graph():
        gd = g._data
        if need_b:
            gb = Tensor._make(gd.sum(axis=0))
        if need_wt:
            gwt = Tensor._make(blas.matmul(gd.T, node.saved_array("x")).T)
        if need_x:  # last, so it is still in cache when the activation's VJP reads it next
            gx = Tensor._make(blas.matmul(gd, node.saved_array("w")))
        return (gb, gx, gwt)
    if need_b:
        gb = g.sum(0)
    if need_x:
        gx = g @ node.saved("w")
    if need_wt:
        gwt = (g.t() @ node.saved("x")).t()
    return (gb, gx, gwt)


def _fast_linear(input, weight, bias):
    """2-D ``addmm(bias, input, weight.t())`` as one composite op (AddmmBackward0 with slots
    bias, input, weight.t()), or None when the operands need the general path (dtype
    mismatches, unusual shapes: the core op then raises PyTorch's errors)."""
    x, w, b = input._data, weight._data, bias._data
    if not (x.dtype == w.dtype == b.dtype) or x.dtype.kind != "f" or w.ndim != 2 or \
            b.shape != (w.shape[0],) or x.shape[1] != w.shape[1]:
        return None
    out = cpu.empty((x.shape[0], w.shape[0]), x.dtype)
    out[...] = b  # the bias as GEMM's C (beta = 1), as PyTorch's addmm does
    blas.matmul(x, w.T, out=out, accumulate=True)
    wt = weight.t()
    save = []
    if weight._requires_grad:
        save.append(("x", input))
    if input._requires_grad:
        save.append(("w", weight))
    return record("AddmmBackward0", (bias, input, wt), out, _linear_backward, save=tuple(save))


def linear(input, weight, bias=None):
    """``y = x W^T + b``. 2-D input with bias records AddmmBackward0 (like PyTorch)."""
    _check_tensor(input, "linear")
    if _device.is_cuda(input):
        return _device.linear(input, weight, bias)
    nd = input.ndim
    if bias is None:
        return matmul(input, weight.t())
    if nd == 2:
        out = _fast_linear(input, weight, bias)
        return out if out is not None else addmm(bias, input, weight.t())
    if nd == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are 0D "
                           f"and {weight.ndim}D")
    lead = tuple(input.shape[:-1])
    x2 = input.unsqueeze(0) if nd == 1 else input.reshape(-1, input.shape[-1])
    out = _fast_linear(x2, weight, bias)
    if out is None:
        out = addmm(bias, x2, weight.t())
    return out.view(*lead, out.shape[-1])


def bilinear(input1, input2, weight, bias=None):
    """``y_k = x1^T W_k x2 + b_k`` (composition of core ops)."""
    y = ((input1.unsqueeze(-2).unsqueeze(-2) @ weight) @ input2.unsqueeze(-2).unsqueeze(-1))
    y = y.squeeze(-1).squeeze(-1)
    return y + bias if bias is not None else y


# ----------------------------------------------------------------------------- activations


def relu(input, inplace=False):
    if inplace:
        return input.relu_()
    return _F.relu(input)


def relu_(input):
    return input.relu_()


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if inplace:
        return input.clamp_(min_val, max_val)
    return _F.clamp(input, min_val, max_val)


def gelu(input, approximate="none"):
    return _F.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    return input * _F.sigmoid(input)


def elu(input, alpha=1.0, inplace=False):
    return _F.where(input > 0, input, (_F.exp(_F.clamp(input, max=0.0)) - 1) * alpha)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if inplace:
        from ..ops.inplace import apply_inplace
        return apply_inplace(input, _F.leaky_relu, negative_slope)
    return _F.leaky_relu(input, negative_slope)


def softplus(input, beta=1.0, threshold=20.0):
    return _F.softplus(input, beta=beta, threshold=threshold)


def logsigmoid(input):
    # log(sigmoid(x)) = -softplus(-x), computed stably
    return -_F.softplus(-input)


def tanh(input):
    return _F.tanh(input)


def sigmoid(input):
    return _F.sigmoid(input)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _softmax.softmax(input, dim, _stacklevel, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return _softmax.softmax(-input, dim, _stacklevel, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _softmax.log_softmax(input, dim, _stacklevel, dtype=dtype)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    return input / denom


# ----------------------------------------------------------------------------- dropout


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes elements with probability ``p`` and scales the rest by ``1/(1-p)``.

    The mask is drawn from the global generator exactly as PyTorch's CPU kernel draws it
    (``bernoulli_(1-p)`` then ``div_(1-p)``), so seeded runs drop the same elements.
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if _device.is_cuda(input):  # mask drawn on the device (CUDA generator)
        return _device.dropout(input, p, inplace)
    from ..random import default_generator
    dt = input._data.dtype if input.is_floating_point() else D.get_default_dtype().np
    if p == 1.0:
        mask = Tensor._make(np.zeros((), dtype=dt))
    else:
        mask = Tensor._make(default_generator().dropout_mask(input._data.shape, p, dt))
    if inplace:
        return input.mul_(mask)
    return input * mask


# ----------------------------------------------------------------------------- embedding


def _embedding_backward(node, g):
    a = node.ctx.attrs
    idx, num, pad = a["indices"], a["num_weights"], a["padding_idx"]
    dim = g.shape[-1]
    flat = idx.reshape(-1)
    if a["scale_grad_by_freq"]:
        counts = np.bincount(flat, minlength=num)
        scale = (1.0 / np.maximum(counts[flat], 1)).astype(g._data.dtype)
    else:
        scale = None
    if not _creating_graph():
        g2 = g._data.reshape(-1, dim)
        if scale is not None:
            g2 = g2 * scale[:, None]
        out = np.zeros((num, dim), dtype=g._data.dtype)
        np.add.at(out, flat, g2)
        if pad >= 0:
            out[pad] = 0
        return (Tensor._make(out),)
    from ..ops.basic import zeros
    g2 = g.reshape(-1, dim)
    if scale is not None:
        g2 = g2 * _const(scale[:, None])
    out = zeros(num, dim, dtype=g.dtype).index_add(0, _const(flat), g2)
    if pad >= 0:
        keep = np.ones((num, 1), dtype=g._data.dtype)
        keep[pad] = 0
        out = out * _const(keep)
    return (out,)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by integer ``input`` (EmbeddingBackward0)."""
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError("embedding(): arguments 'input' and 'weight' must be Tensors")
    num = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= num:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -num:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = num + padding_idx
    else:
        padding_idx = -1
    if input.dtype not in (D.int64, D.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {input.type()} instead (while checking arguments for "
            "embedding)")
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    if _device.is_cuda(input, weight):
        return _device.embedding(input, weight, padding_idx, max_norm, scale_grad_by_freq)
    idx = input._data.astype(np.int64, copy=False)
    if idx.size and (idx.min() < 0 or idx.max() >= num):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _embedding_renorm_(weight, idx, max_norm, norm_type)
    data = weight._data[idx]
    return record("EmbeddingBackward0", (weight,), data, _embedding_backward,
                  attrs={"indices": idx, "num_weights": num, "padding_idx": padding_idx,
                         "scale_grad_by_freq": scale_grad_by_freq})


def _embedding_renorm_(weight, idx, max_norm, norm_type):
    rows = np.unique(idx.reshape(-1))
    w = weight._data
    norms = np.linalg.norm(w[rows].astype(np.float64), ord=norm_type, axis=1)
    big = norms > max_norm
    if np.any(big):
        scale = max_norm / (norms[big] + 1e-7)
        w[rows[big]] = (w[rows[big]] * scale[:, None]).astype(w.dtype)
        weight._vc.value += 1


# ----------------------------------------------------------------------------- layer_norm


def _layer_norm_backward(node, g):
    a = node.ctx.attrs
    axes = a["axes"]
    need_x, need_w, need_b = node.ctx.needs_input_grad
    has_w, has_b = a["has_weight"], a["has_bias"]
    lead = tuple(range(g.ndim - len(axes)))
    if not _creating_graph():
        gd = g._data
        mean, rstd = a["mean"], a["rstd"]
        x = node.saved_array("x")
        xhat = (x - mean) * rstd
        gx = gw = gb = None
        if need_x:
            gxh = gd * node.saved_array("w") if has_w else gd
            m1 = gxh.mean(axis=axes, keepdims=True)
            m2 = (gxh * xhat).mean(axis=axes, keepdims=True)
            gx = Tensor._make((rstd * (gxh - m1 - xhat * m2)).astype(gd.dtype, copy=False))
        if need_w and has_w:
            gw = Tensor._make((gd * xhat).sum(axis=lead).astype(gd.dtype, copy=False))
        if need_b and has_b:
            gb = Tensor._make(gd.sum(axis=lead).astype(gd.dtype, copy=False))
        return (gx, gw, gb)
    # differentiable path: rebuild the statistics from x with recorded ops
    x = node.saved("x")
    mean = x.mean(axes, keepdim=True)
    xc = x - mean
    var = (xc * xc).mean(axes, keepdim=True)
    rstd = (var + a["eps"]).rsqrt()
    xhat = xc * rstd
    gx = gw = gb = None
    if need_x:
        gxh = g * node.saved("w") if has_w else g
        m1 = gxh.mean(axes, keepdim=True)
        m2 = (gxh * xhat).mean(axes, keepdim=True)
        gx = rstd * (gxh - m1 - xhat * m2)
    if need_w and has_w:
        gw = (g * xhat).sum(lead) if lead else g * xhat
    if need_b and has_b:
        gb = g.sum(lead) if lead else g
    return (gx, gw, gb)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalizes over the trailing ``normalized_shape`` dims (NativeLayerNormBackward0)."""
    _check_tensor(input, "layer_norm")
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    normalized_shape = tuple(int(s) for s in normalized_shape)
    k = len(normalized_shape)
    shape = tuple(input.shape)
    if k == 0 or shape[len(shape) - k:] != normalized_shape or len(shape) < k:
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in normalized_shape)}], but got input of size"
            f"{list(shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != normalized_shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(normalized_shape)}")
    if _device.is_cuda(input):
        return _device.layer_norm(input, normalized_shape, weight, bias, eps)
    x = input._data
    axes = tuple(range(x.ndim - k, x.ndim))
    acc = np.float64 if x.dtype in (np.float32, np.float16) else x.dtype
    xa = x.astype(acc, copy=False)
    mean = xa.mean(axis=axes, keepdims=True)
    xc = xa - mean
    var = (xc * xc).mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    y = xc * rstd
    if weight is not None:
        y = y * weight._data
    if bias is not None:
        y = y + bias._data
    y = y.astype(x.dtype, copy=False)
    save = [("x", input)]
    if weight is not None:
        save.append(("w", weight))
    return record("NativeLayerNormBackward0", (input, weight, bias), y, _layer_norm_backward,
                  save=tuple(save),
                  attrs={"axes": axes, "eps": eps, "mean": mean.astype(x.dtype),
                         "rstd": rstd.astype(x.dtype), "has_weight": weight is not None,
                         "has_bias": bias is not None})


# ----------------------------------------------------------------------------- mse / l1


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
        from ..ops.shape import broadcast_tensors
        input, target = broadcast_tensors(input, target)
    if weight is not None:
        loss = (input - target) ** 2 * weight
        return loss if reduction == "none" else (loss.mean() if reduction == "mean"
                                                 else loss.sum())
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


# ----------------------------------------------------------------------------- nll / CE


def _nll_backward(node, g):
    a = node.ctx.attrs
    coef = a["coef"]  # (N, C, ...) array: -w[t]/denominator at the target class, 0 elsewhere
    reduction = a["reduction"]
    if not _creating_graph():
        gd = g._data
        if reduction == "none":
            gd = np.expand_dims(gd, a["class_dim"])
        return (Tensor._make(coef * gd),)
    if reduction == "none":
        g = g.unsqueeze(a["class_dim"])
    return (_const(coef) * g,)


_TYPE_WORD = {"float32": "Float", "float64": "Double", "int32": "Int", "int64": "Long",
              "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
              "float16": "Half"}


def _nll_common(input, target, ignore_index, reduction):
    """The usual case, (N, C) floats, N int64 class indices all in range and none ignored, no
    class weights, in a few NumPy calls; None means: take the general path (which also raises
    the errors)."""
    x, t = input._data, target._data
    if x.ndim != 2 or t.ndim != 1 or t.dtype != np.int64 or x.dtype.kind != "f" or \
            x.shape[0] != t.shape[0] or not t.size or reduction == "none":
        return None
    n, C = x.shape
    lo, hi = t.min(), t.max()
    if lo < 0 or hi >= C or (lo <= ignore_index <= hi and np.any(t == ignore_index)):
        return None
    rows = np.arange(n)
    total = -x[rows, t].sum(dtype=np.float64)
    scale = 1.0 / n if reduction == "mean" else 1.0
    data = np.asarray(total * scale, dtype=x.dtype)
    if not (grad_mode.is_grad_enabled() and input._requires_grad):
        return Tensor._make(data)
    coef = np.zeros(x.shape, dtype=x.dtype)
    coef[rows, t] = x.dtype.type(-scale)
    return record("NllLossBackward0", (input,), data, _nll_backward,
                  attrs={"coef": coef, "reduction": reduction, "class_dim": 1})


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log likelihood over class indices (NllLossBackward0 / NllLoss2DBackward0)."""
    _check_tensor(input, "nll_loss")
    _check_tensor(target, "nll_loss", "target")
    reduction = _reduction(reduction, size_average, reduce)
    if weight is None and not _device.is_cuda(input):
        out = _nll_common(input, target, ignore_index, reduction)
        if out is not None:
            return out
    nd = input.ndim
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    if nd >= 2 and target.ndim >= 1 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0]}).")
    if target.dtype.is_floating_point or target.dtype not in (D.int64, D.uint8):
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{_TYPE_WORD.get(target.dtype.name, target.dtype.name)}")
    x = input._data
    class_dim = 0 if nd == 1 else 1
    C = x.shape[class_dim]
    if nd == 1:
        if target.ndim == 1 and target.shape[0] != 1:
            raise ValueError("For 1D input, 1D target must have size 1, but got target size: "
                             f"{target.shape[0]}")
        if target.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    elif nd == 2:
        if target.ndim != 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    elif tuple(target.shape[1:]) != tuple(x.shape[2:]):
        raise RuntimeError(f"Expected target size {[x.shape[0]] + list(x.shape[2:])}, got "
                           f"{list(target.shape)}")
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
        raise IndexError(f"Target {int(t[bad].flat[0])} is out of bounds.")
    ts = np.where(valid, t, 0)
    ti = np.expand_dims(ts, class_dim)
    picked = np.take_along_axis(x, ti, axis=class_dim).squeeze(class_dim)
    if weight is not None:
        wt = weight._data.astype(x.dtype, copy=False)[ts] * valid
    else:
        wt = valid.astype(x.dtype)
    losses = -(picked * wt)
    if reduction == "none":
        data = losses.astype(x.dtype, copy=False)
        denom = None
        coef_w = 0 - wt
    else:
        total = losses.astype(np.float64).sum()
        if reduction == "mean":
            denom = float(wt.astype(np.float64).sum())
            with np.errstate(invalid="ignore", divide="ignore"):
                data = np.asarray(total / denom, dtype=x.dtype)
            # 0 - wt, not -wt: ignored targets get +0.0 in the gradient, as PyTorch prints
            coef_w = (0 - wt) / x.dtype.type(denom) if denom != 0 else wt * x.dtype.type(np.nan)
        else:
            data = np.asarray(total, dtype=x.dtype)
            coef_w = 0 - wt
    name = "NllLoss2DBackward0" if nd >= 3 else "NllLossBackward0"
    if not (grad_mode.is_grad_enabled() and input._requires_grad):
        return Tensor._make(data)
    coef = np.zeros(x.shape, dtype=x.dtype)
    np.put_along_axis(coef, ti, np.expand_dims(coef_w.astype(x.dtype, copy=False), class_dim),
                      axis=class_dim)
    return record(name, (input,), data, _nll_backward,
                  attrs={"coef": coef, "reduction": reduction, "class_dim": class_dim})


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """``nll_loss(log_softmax(input, 1), target)`` for class indices; soft targets (class
    probabilities, same shape as input) are supported too."""
    _check_tensor(input, "cross_entropy")
    _check_tensor(target, "cross_entropy", "target")
    reduction = _reduction(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    class_dim = 0 if input.ndim == 1 else 1
    if target.is_floating_point() and tuple(target.shape) == tuple(input.shape):
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing,
                                    class_dim)
    if input.ndim >= 2 and target.ndim >= 1 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0]}).")
    if target.dtype not in (D.int64, D.uint8):
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{_TYPE_WORD.get(target.dtype.name, target.dtype.name)}")
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


def _cross_entropy_probs(input, target, weight, reduction, label_smoothing, class_dim):
    C = input.shape[class_dim]
    lsm = log_softmax(input, class_dim)
    if label_smoothing > 0.0:
        target = target * (1 - label_smoothing) + label_smoothing / C
    if weight is not None:
        wshape = [1] * input.ndim
        wshape[class_dim] = C
        lsm = lsm * weight.view(*wshape)
    loss = -(lsm * target).sum(class_dim)
    if reduction == "mean":
        n = input.numel() // C if input.ndim > 1 else 1
        return loss.sum() / n
    if reduction == "sum":
        return loss.sum()
    return loss


# ----------------------------------------------------------------------------- BCE


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
    if np.any((x < 0) | (x > 1)):
        raise RuntimeError("all elements of input should be between 0 and 1")
    t = target._data.astype(x.dtype, copy=False)
    wt = None
    if weight is not None:
        wt = np.broadcast_to(weight._data.astype(x.dtype, copy=False), x.shape)
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
                           f"{_TYPE_WORD.get(input.dtype.name, input.dtype.name)}")
    if _device.is_cuda(input, target):
        return _device.binary_cross_entropy_with_logits(input, target, weight, reduction,
                                                        pos_weight)
    t = target._data.astype(x.dtype, copy=False)
    log_sig = _log_sigmoid_np(x)
    pw = wt = None
    if pos_weight is not None:
        pw = np.broadcast_to(pos_weight._data.astype(x.dtype, copy=False),
                             np.broadcast_shapes(pos_weight.shape, x.shape))
        log_weight = (pw - 1) * t + 1
        log_sig = log_sig * log_weight
    loss = (1 - t) * x - log_sig
    if weight is not None:
        wt = np.broadcast_to(weight._data.astype(x.dtype, copy=False),
                             np.broadcast_shapes(weight.shape, x.shape))
        loss = loss * wt
    data = _reduce_np(loss.astype(x.dtype, copy=False), reduction)
    return record("BinaryCrossEntropyWithLogitsBackward0", (input, target), data,
                  _bce_logits_backward, save=(("x", input), ("t", target)),
                  attrs={"n": max(x.size, 1), "reduction": reduction, "weight": wt,
                         "pos_weight": pw})


# ----------------------------------------------------------------------------- one_hot


def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding with a trailing class dimension."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"one_hot(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    if tensor.dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if _device.is_cuda(tensor):
        return _device.one_hot(tensor, num_classes)
    a = tensor._data
    if a.size == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return Tensor._make(np.zeros(a.shape + (int(num_classes),), dtype=np.int64))
    if a.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(a.max()) + 1
    elif a.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = np.zeros(a.shape + (int(num_classes),), dtype=np.int64)
    np.put_along_axis(out, a[..., None], 1, axis=-1)
    return Tensor._make(out)
