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

import math
import numbers
import warnings

import numpy as np

from ... import _dtype as D
from ...autograd import grad_mode
from ...backends import blas, cpu
from ...ops import functional as _F
from ...ops import softmax as _softmax
from ...ops.composite import record, record_composition
from ...ops.linalg import addmm, matmul
from ...tensor import Tensor
from .. import _device  # CUDA inputs: device compositions (the routes below are device-only)

__all__ = [
    "linear", "bilinear", "relu", "relu_", "relu6", "gelu", "silu", "elu", "softmax",
    "log_softmax", "softmin", "dropout", "embedding", "layer_norm", "mse_loss", "l1_loss",
    "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "one_hot", "tanh", "sigmoid", "leaky_relu", "softplus", "logsigmoid", "normalize",
    "hardtanh", "pad", "smooth_l1_loss", "huber_loss",
    "softsign", "hardswish", "hardsigmoid", "mish", "selu", "celu", "glu", "prelu", "threshold",
    "softshrink", "hardshrink", "tanhshrink", "kl_div", "poisson_nll_loss", "gaussian_nll_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "cosine_embedding_loss", "triplet_margin_loss",
    "cosine_similarity", "pairwise_distance", "selu_", "celu_", "threshold_",
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
    """``y_k = x1^T W_k x2 + b_k``: PyTorch's ``_trilinear`` over the flattened inputs
    (TrilinearBackward0), viewed back to the leading shape (ViewBackward0), plus the bias."""
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])

    def build(a, w, b):
        y = (a.unsqueeze(1).unsqueeze(1) @ w) @ b.unsqueeze(1).unsqueeze(-1)
        return y.squeeze(-1).squeeze(-1)

    y = record_composition("TrilinearBackward0", (x1, weight, x2), build)
    y = y.view(*lead, weight.shape[0])
    return y + bias if bias is not None else y


# ----------------------------------------------------------------------------- activations


def _float_only(input, kernel):
    """PyTorch's CPU kernels for these activations are defined for floating types only."""
    if not input.is_floating_point():
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_name(input.dtype)}'")


def _named(node, input, build):
    """``build(input)`` (a composition) recorded as PyTorch's single node ``node``."""
    return record_composition(node, (input,), build)


def _inplace_named(input, node, build):
    """The in-place variant: ``input`` takes the value, its grad_fn is ``node``."""
    from ...ops.inplace import apply_inplace
    return apply_inplace(input, lambda t: _named(node, t, build))


def relu(input, inplace=False):
    if inplace:
        return input.relu_()
    return _F.relu(input)


def relu_(input):
    return input.relu_()


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``clamp(input, min_val, max_val)`` recorded as HardtanhBackward0; integer inputs keep
    their dtype (PyTorch's hardtanh is defined for them)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if not input.is_floating_point() and input.dtype is not D.bool_:
        data = np.clip(input._data, min_val, max_val).astype(input._data.dtype)
        if inplace:
            input._data[...] = data
            input._vc.value += 1
            return input
        return Tensor._make(data)

    def build(t):
        return _F.clamp(t, min_val, max_val)

    if inplace:
        return _inplace_named(input, "HardtanhBackward0", build)
    return _named("HardtanhBackward0", input, build)


def gelu(input, approximate="none"):
    return _F.gelu(input, approximate=approximate)


def _silu(t):
    return t * _F.sigmoid(t)


def silu(input, inplace=False):
    _float_only(input, "silu_cpu")
    if inplace:
        return _inplace_named(input, "SiluBackward0", _silu)
    return _named("SiluBackward0", input, _silu)


def elu(input, alpha=1.0, inplace=False):
    _float_only(input, "elu_cpu")

    def build(t):
        return _F.where(t > 0, t, (_F.exp(_F.clamp(t, max=0.0)) - 1) * alpha)

    if inplace:  # PyTorch's elu_ records EluBackward1
        return _inplace_named(input, "EluBackward1", build)
    return _named("EluBackward0", input, build)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if inplace:  # PyTorch's leaky_relu_ records LeakyReluBackward1
        return _inplace_named(input, "LeakyReluBackward1",
                              lambda t: _F.leaky_relu(t, negative_slope))
    return _F.leaky_relu(input, negative_slope)


def softplus(input, beta=1.0, threshold=20.0):
    return _F.softplus(input, beta=beta, threshold=threshold)


def logsigmoid(input):
    # log(sigmoid(x)) = -softplus(-x), computed stably
    _float_only(input, "log_sigmoid_cpu")
    return _named("LogSigmoidBackward0", input, lambda t: -_F.softplus(-t))


def tanh(input):
    return _F.tanh(input)


def sigmoid(input):
    return _F.sigmoid(input)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _softmax.softmax(input, dim, _stacklevel, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``(-input).softmax(dim)`` (SoftmaxBackward0 over NegBackward0); the implicit-dim warning
    names softmin, as PyTorch's."""
    if dim is None:
        warnings.warn("Implicit dimension choice for softmin has been deprecated. Change the "
                      "call to include dim=X as an argument.", UserWarning,
                      stacklevel=max(_stacklevel - 1, 1))
        dim = 0 if input.dim() in (0, 1, 3) else 1
    return _softmax.softmax(-input, dim, _stacklevel, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _softmax.log_softmax(input, dim, _stacklevel, dtype=dtype)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    return input / denom


# ----------------------------------------------------------------------------- pad


def _pad_index(n, lo, hi, mode):
    """Source index (or -1 for the constant fill) of each output position along one dim."""
    j = np.arange(-lo, n + hi)
    if mode == "constant":
        return np.where((j >= 0) & (j < n), j, -1)
    if mode == "replicate":
        return np.clip(j, 0, n - 1)
    if mode == "circular":  # negative pads crop first; the wrap reads the cropped range
        start, m = max(-lo, 0), n + min(lo, 0) + min(hi, 0)
        return start + np.mod(np.arange(-max(lo, 0), m + max(hi, 0)), m)
    period = 2 * (n - 1)  # reflect: mirror about the edges, edges not repeated
    if period == 0:
        return np.zeros_like(j)
    j = np.mod(j, period)
    return np.where(j < n, j, period - j)


def _pad_backward(node, g):
    a = node.ctx.attrs
    maps, shape = a["maps"], a["in_shape"]
    if not _creating_graph():
        gd = g._data
        for d, idx in reversed(maps):
            valid = idx >= 0
            gm = np.moveaxis(gd, d, 0)[valid]
            out = np.zeros((shape[d],) + gm.shape[1:], dtype=gd.dtype)
            np.add.at(out, idx[valid], gm)
            gd = np.moveaxis(out, 0, d)
        return (Tensor._make(np.ascontiguousarray(gd)),)
    from ...ops.basic import zeros
    for d, idx in reversed(maps):
        valid = idx >= 0
        gsel = g.index_select(d, _const(np.nonzero(valid)[0]))
        zshape = list(g.shape)
        zshape[d] = shape[d]
        g = zeros(*zshape, dtype=g.dtype).index_add(d, _const(idx[valid]), gsel)
    return (g,)


def pad(input, pad, mode="constant", value=None):
    """PyTorch's ``F.pad``: ``pad`` lists (left, right) pairs from the last dim backwards.
    Nodes: ConstantPadNdBackward0, ReflectionPad{1,2,3}DBackward0,
    ReplicationPad{1,2,3}DBackward0, CopySlices (circular, as PyTorch's Python version)."""
    _check_tensor(input, "pad")
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    nd, k = input.ndim, len(pad) // 2
    if k > nd:
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of "
                           f"dimension {nd}")
    shape = tuple(input.shape)
    if mode == "constant":
        name = "ConstantPadNdBackward0"
    elif mode in ("reflect", "replicate", "circular"):
        if value is not None and value != 0:
            raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
        if not (k in (1, 2, 3) and k + 1 <= nd <= k + 2):
            raise NotImplementedError(
                f"Padding size {len(pad)} is not supported for {nd}D input tensor.\n"
                "Supported combinations for non-constant padding:\n"
                "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
        name = {"reflect": f"ReflectionPad{k}DBackward0",
                "replicate": f"ReplicationPad{k}DBackward0", "circular": "CopySlices"}[mode]
    else:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    maps = []
    for i in range(k):
        d = nd - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        n = shape[d]
        if n + lo + hi < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError("Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension "
                               f"{d} of input {list(shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        maps.append((d, _pad_index(n, lo, hi, mode)))
    if _device.is_cuda(input):
        raise NotImplementedError("F.pad is not implemented for CUDA tensors yet")
    x = input._data
    for d, idx in maps:
        taken = np.take(x, np.maximum(idx, 0), axis=d)
        if mode == "constant" and np.any(idx < 0):
            fill = np.zeros((), dtype=x.dtype) if value is None else np.asarray(value).astype(
                x.dtype)
            mask_shape = [1] * x.ndim
            mask_shape[d] = idx.size
            taken = np.where((idx < 0).reshape(mask_shape), fill, taken)
        x = taken
    return record(name, (input,), np.ascontiguousarray(x), _pad_backward,
                  attrs={"maps": maps, "in_shape": shape})


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
    if not input.is_floating_point():  # the mask is float: PyTorch's in-place mul_ refuses
        raise RuntimeError("result type Float can't be cast to the desired output type "
                           f"{D.scalar_name(input.dtype)}")
    from ...random import default_generator
    dt = input._data.dtype
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
    from ...ops.basic import zeros
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
        return _device.embedding(input, weight, padding_idx, max_norm, scale_grad_by_freq,
                                 norm_type)
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
    if isinstance(normalized_shape, numbers.Integral):  # nn.LayerNorm converts; F does not
        raise TypeError("layer_norm(): argument 'normalized_shape' (position 2) must be tuple "
                        f"of ints, not {type(normalized_shape).__name__}")
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
        from ...ops.shape import broadcast_tensors
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
        from ...ops.shape import broadcast_tensors
        input, target = broadcast_tensors(input, target)
    ct = D.result_type(input, target)
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


# ----------------------------------------------------------------------------- nll / CE


def _nll_backward(node, g):
    a = node.ctx.attrs
    coef = a["coef"]  # (N, C, ...) array: -w[t]/denominator at the target class, 0 elsewhere
    reduction = a["reduction"]
    out_shape = a.get("out_shape")
    if not _creating_graph():
        gd = g._data
        if reduction == "none":
            if out_shape is not None:
                gd = gd.reshape(out_shape)
            gd = np.expand_dims(gd, a["class_dim"])
        return (Tensor._make(coef * gd),)
    if reduction == "none":
        if out_shape is not None:
            g = g.reshape(out_shape)
        g = g.unsqueeze(a["class_dim"])
    return (_const(coef) * g,)


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
    _check_tensor(input, "nll_loss")
    _check_tensor(target, "nll_loss", "target")
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
        data = np.asarray(losses, dtype=x.dtype)
        denom = None
        coef_w = 0 - wt
    else:
        total = losses.astype(np.float64).sum()
        if reduction == "mean":
            denom = float(wt.astype(np.float64).sum())
            with np.errstate(invalid="ignore", divide="ignore"):
                data = np.asarray(total / denom, dtype=x.dtype)
            # 0 - wt, not -wt: ignored targets get +0.0 in the gradient, as PyTorch prints;
            # a zero total weight: PyTorch's -(g / 0) * w is NaN, but ignored targets stay 0
            if denom != 0:
                coef_w = (0 - wt) / x.dtype.type(denom)
            else:
                coef_w = np.where(valid, x.dtype.type(np.nan), x.dtype.type(0))
        else:
            data = np.asarray(total, dtype=x.dtype)
            coef_w = 0 - wt
    name = "NllLoss2DBackward0" if nd >= 3 else "NllLossBackward0"
    if not (grad_mode.is_grad_enabled() and input._requires_grad):
        return Tensor._make(data)
    coef = np.zeros(x.shape, dtype=x.dtype)
    np.put_along_axis(coef, ti, np.expand_dims(coef_w.astype(x.dtype, copy=False), class_dim),
                      axis=class_dim)
    viewed = reduction == "none" and nd >= 3 and nd != 4
    if viewed:  # PyTorch runs nll_loss2d on a 4-D view and views the result back
        shape = data.shape
        data = data.reshape(shape[0], -1, 1) if nd == 3 else data.reshape(shape[0], 1, -1)
    out = record(name, (input,), data, _nll_backward,
                 attrs={"coef": coef, "reduction": reduction, "class_dim": class_dim,
                        "out_shape": shape if viewed else None})
    return out.view(*shape) if viewed else out


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """``nll_loss(log_softmax(input, 1), target)`` for class indices; soft targets (class
    probabilities, same shape as input) are supported too."""
    _check_tensor(input, "cross_entropy")
    _check_tensor(target, "cross_entropy", "target")
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


# ----------------------------------------------------------------------------- more activations
# Compositions of core ops; where PyTorch's CPU path records one node (HardswishBackward0,
# EluBackward0 for selu, GluBackward0, ...), the composition is a ``record_composition`` under
# that name, so the gradient and double backward are the composition's. Values follow ATen's
# formulas in the same operation order.

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _in_dtype(value, dt):
    """A Python scalar rounded to ``dt`` (ATen converts its Scalars to the kernel's type)."""
    return float(np.dtype(dt.np).type(value)) if dt.is_floating_point else value


def _elu_build(alpha, scale, input_scale, dt):
    """ATen's elu kernel: ``x > 0 ? x * scale : (exp(x * input_scale) - 1) * alpha * scale``
    (alpha * scale multiplied in the tensor's dtype, as ATen's coefficients are)."""
    negcoef = _in_dtype(_in_dtype(alpha, dt) * _in_dtype(scale, dt), dt)

    def build(t):
        neg = _F.clamp(t, max=0.0)
        if input_scale != 1.0:
            neg = neg * input_scale
        pos = t * scale if scale != 1.0 else t
        return _F.where(t > 0, pos, (_F.exp(neg) - 1) * negcoef)
    return build


def softsign(input):
    """``input / (input.abs() + 1)`` (DivBackward0), PyTorch's Python definition."""
    return input / (input.abs() + 1)


def _relu6_shifted(t):
    """``clamp(t + 3, 0, 6)`` whose derivative is 1 strictly inside (-3, 3) and 0 at and
    beyond the kinks (ATen's hardswish/hardsigmoid gradients): outside, a constant."""
    inside = (t > -3.0) & (t < 3.0)
    return _F.where(inside, t + 3, _F.clamp(t.detach() + 3, 0.0, 6.0))


def _hardswish(t):
    return t * _relu6_shifted(t) / 6


def hardswish(input, inplace=False):
    """``x * clamp(x + 3, 0, 6) / 6`` (HardswishBackward0, also in place)."""
    _check_tensor(input, "hardswish")
    _float_only(input, "hardswish_cpu")
    if inplace:
        return _inplace_named(input, "HardswishBackward0", _hardswish)
    return _named("HardswishBackward0", input, _hardswish)


def _hardsigmoid_backward(node, g):
    # ATen: g * (1.0f / 6.0f) strictly inside (-3, 3), else 0 (the float constant even for
    # float64, so its gradients carry float32's 1/6)
    x = node.saved("x")
    inside = (x > -3.0) & (x < 3.0)
    return ((g * float(np.float32(1.0) / np.float32(6.0))).masked_fill(~inside, 0.0),)


def _hardsigmoid(t):
    with grad_mode.no_grad():
        out = _F.clamp(t + 3, 0.0, 6.0) / 6
    return record("HardsigmoidBackward0", (t,), out._data, _hardsigmoid_backward,
                  save=(("x", t),))


def hardsigmoid(input, inplace=False):
    """``clamp(x + 3, 0, 6) / 6`` (HardsigmoidBackward0, also in place)."""
    _check_tensor(input, "hardsigmoid")
    _float_only(input, "hardsigmoid_cpu")
    if inplace:
        from ...ops.inplace import apply_inplace
        return apply_inplace(input, _hardsigmoid)
    return _hardsigmoid(input)


def _mish(t):
    return t * _F.tanh(_F.softplus(t))


def mish(input, inplace=False):
    """``x * tanh(softplus(x))`` (MishBackward0, also in place)."""
    _check_tensor(input, "mish")
    _float_only(input, "mish_cpu")
    if inplace:
        return _inplace_named(input, "MishBackward0", _mish)
    return _named("MishBackward0", input, _mish)


def selu(input, inplace=False):
    """``scale * elu(x, alpha)`` with PyTorch's constants: EluBackward0 (in place
    EluBackward1), as ATen computes it with its elu kernel."""
    _check_tensor(input, "selu")
    _float_only(input, "elu_cpu")
    build = _elu_build(_SELU_ALPHA, _SELU_SCALE, 1.0, input.dtype)
    if inplace:
        return _inplace_named(input, "EluBackward1", build)
    return _named("EluBackward0", input, build)


def celu(input, alpha=1.0, inplace=False):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` (CeluBackward0; in place
    CeluBackward1)."""
    _check_tensor(input, "celu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    _float_only(input, "elu_cpu")
    dt = input.dtype
    build = _elu_build(alpha, 1.0, 1.0 / alpha, dt)
    # PyTorch's derivative scales the input by 1.0 / float(alpha) (float32's alpha even for
    # float64 tensors), not by the forward's 1 / alpha: its own backward, so gradients match
    attrs = {"negcoef": _in_dtype(alpha, dt),
             "ipt": _in_dtype(1.0 / float(np.float32(alpha)), dt)}

    def fn(t):
        with grad_mode.no_grad():
            out = build(t)
        return record("CeluBackward0", (t,), out._data, _celu_backward, save=(("x", t),),
                      attrs=attrs)

    def fn_(t):  # celu_ differentiates through its result (ATen's is_result form)
        with grad_mode.no_grad():
            out = build(t)
        return record("CeluBackward1", (t,), out._data, _celu_backward_result,
                      save_outputs=(("out", 0),), attrs=attrs)

    if inplace:
        from ...ops.inplace import apply_inplace
        return apply_inplace(input, fn_)
    return fn(input)


def _celu_backward(node, g):
    a = node.ctx.attrs
    x = node.saved("x")
    neg = g * a["ipt"] * a["negcoef"] * _F.exp(_F.clamp(x, max=0.0) * a["ipt"])
    return (_F.where(x > 0, g, neg),)


def _celu_backward_result(node, g):
    a = node.ctx.attrs
    y = node.saved("out")
    return (_F.where(y > 0, g, g * a["ipt"] * (y + a["negcoef"])),)


def threshold(input, threshold, value, inplace=False):
    """``x <= threshold ? value : x`` (ThresholdBackward0; in place ThresholdBackward1). Integer
    tensors keep their dtype (the scalars converted to it, as ATen does)."""
    _check_tensor(input, "threshold")
    if input.dtype is D.bool_:
        raise NotImplementedError("\"threshold_cpu\" not implemented for 'Bool'")
    if not input.is_floating_point():
        x = input._data
        if x.__class__ is not np.ndarray:
            raise NotImplementedError("threshold of an integer CUDA tensor")
        data = np.where(x <= int(threshold), x.dtype.type(int(value)), x)
        if inplace:
            x[...] = data
            input._vc.value += 1
            return input
        return Tensor._make(data)

    def build(t):
        return _F.where(t <= threshold, value, t)

    if inplace:
        return _inplace_named(input, "ThresholdBackward1", build)
    return _named("ThresholdBackward0", input, build)


def _shrink_lambda_check(input, lambd):
    if input.is_floating_point():
        top = float(np.finfo(input.dtype.np).max)
        if not 0 <= lambd <= top:
            raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype "
                               f"{D.scalar_name(input.dtype)}, but found {lambd:g}")


def softshrink(input, lambd=0.5):
    """``x - l`` above ``l``, ``x + l`` below ``-l``, 0 between (SoftshrinkBackward0)."""
    _check_tensor(input, "softshrink")
    _float_only(input, "softshrink_check")
    _shrink_lambda_check(input, lambd)
    lam = _in_dtype(lambd, input.dtype)

    def build(t):
        return _F.where(t > lam, t - lam, _F.where(t < -lam, t + lam, t * 0))

    return _named("SoftshrinkBackward0", input, build)


def hardshrink(input, lambd=0.5):
    """``x`` outside ``[-l, l]``, 0 inside (HardshrinkBackward0)."""
    _check_tensor(input, "hardshrink")
    _float_only(input, "hardshrink_cpu")
    lam = _in_dtype(lambd, input.dtype)

    def build(t):
        return _F.where((t >= -lam) & (t <= lam), 0.0, t)

    return _named("HardshrinkBackward0", input, build)


def tanhshrink(input):
    """``input - input.tanh()`` (SubBackward0), PyTorch's Python definition."""
    return input - input.tanh()


def glu(input, dim=-1):
    """``a * sigmoid(b)`` for the two halves of ``dim`` (GluBackward0)."""
    _check_tensor(input, "glu")
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = input._wrap_dim(dim)
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    _float_only(input, "glu_cpu")
    h = n // 2

    def build(t):
        return t.narrow(d, 0, h) * _F.sigmoid(t.narrow(d, h, h))

    return _named("GluBackward0", input, build)


def prelu(input, weight):
    """``x > 0 ? x : weight * x`` with one weight per channel (dim 1) or a single one
    (PreluKernelBackward0; the weight reshaped to broadcast first, ViewBackward0, as ATen)."""
    _check_tensor(input, "prelu")
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu(): argument 'weight' (position 2) must be Tensor, not "
                        f"{type(weight).__name__}")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{D.scalar_name(input.dtype)} and {D.scalar_name(weight.dtype)}")
    nd, nw = input.dim(), weight.numel()
    if nw != 1:
        if nd == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if nd > 1 else 1
        if channels != nw:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {nw} and channel size = {channels}.")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.dim()}")
    _float_only(input, "prelu_cpu")
    w = weight
    if nd != weight.dim():
        shape = [1] * nd
        if nd > 1:
            shape[1] = nw
        w = weight.reshape(shape)

    def build(x, w):
        return _F.where(x > 0, x, w * x)

    return record_composition("PreluKernelBackward0", (input, w), build)


# ----------------------------------------------------------------------------- more losses


def _apply_reduction(loss, reduction):
    """ATen's apply_loss_reduction: MeanBackward0 / SumBackward0 / the elementwise loss."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _clamp_min(t, v):
    return _F.clamp_min(t, v)  # ClampMinBackward0, as ATen's clamp_min


def _xlogy_self(t):
    """``xlogy(t, t)``: 0 where t == 0 (XlogyBackward0; one edge for both operands)."""
    return record_composition(
        "XlogyBackward0", (t,), lambda a: _F.where(a == 0, 0.0, a * _F.log(a)))


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """PyTorch's kl_div: ``xlogy(t, t) - t * x`` (``exp(t) * (t - x)`` with ``log_target``),
    reduced; ``'batchmean'`` sums and divides by the batch size (DivBackward0)."""
    _check_tensor(input, "kl_div")
    _check_tensor(target, "kl_div", "target")
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
        red = reduction
    else:
        if reduction == "mean":
            warnings.warn(
                "reduction: 'mean' divides the total loss by both the batch size and the "
                "support size.'batchmean' divides only by the batch size, and aligns with the "
                "KL div math definition.'mean' will be changed to behave the same as "
                "'batchmean' in the next major release.", stacklevel=2)
        red = "sum" if reduction == "batchmean" else _reduction(reduction)
    if not (input.is_floating_point() and target.is_floating_point()):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = _F.exp(target) * (target - input)
    else:
        loss = _xlogy_self(target) - target * input
    out = _apply_reduction(loss, red)
    if reduction == "batchmean" and input.dim() != 0:
        out = out / input.shape[0]
    return out


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """``exp(x) - t * x`` (or ``x - t * log(x + eps)``), plus Stirling's term for t > 1 with
    ``full``."""
    _check_tensor(input, "poisson_nll_loss")
    _check_tensor(target, "poisson_nll_loss", "target")
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = _F.exp(input) - target * input
    else:
        loss = input - target * _F.log(input + eps)
    if full:
        stirling = target * _F.log(target) - target + 0.5 * _F.log(2 * math.pi * target)
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _apply_reduction(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """PyTorch's Python definition: ``0.5 * (log(var) + (x - t)**2 / var)`` with ``var``
    clamped to ``eps`` without changing its gradient."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        from ...ops.basic import ones_like
        var = var * ones_like(input)
    elif not isinstance(var, Tensor):
        raise TypeError(f"any() received an invalid combination of arguments - got "
                        f"({type(var < 0).__name__})")
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    vs, xs = tuple(var.shape), tuple(input.shape)
    if vs != xs:
        if xs[:-1] == vs:
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and sum(b for a, b in zip(xs, vs) if a != b) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with grad_mode.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (_F.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _apply_reduction(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """``max(0, -t * (x1 - x2) + margin)``."""
    reduction = _reduction(reduction, size_average, reduce)
    if not (input1.dim() == input2.dim() == target.dim()):
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _apply_reduction(_clamp_min(-target * (input1 - input2) + margin, 0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """``x`` where t == 1, ``max(0, margin - x)`` where t == -1 (ATen's where form)."""
    _check_tensor(input, "hinge_embedding_loss")
    _check_tensor(target, "hinge_embedding_loss", "target")
    reduction = _reduction(reduction, size_average, reduce)
    _broadcast_shapes(tuple(target.shape), tuple(input.shape))
    from ...ops.basic import zeros_like
    zeros = zeros_like(input)
    margin_clamp = _clamp_min(margin - input, 0)
    output_margin = _F.where(target != 1, margin_clamp, zeros)
    output_self = _F.where(target != -1, input, zeros)
    return _apply_reduction(output_margin + output_self, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-t * x))``, reduced, as one node (SoftMarginLossBackward0)."""
    _check_tensor(input, "soft_margin_loss")
    _check_tensor(target, "soft_margin_loss", "target")
    reduction = _reduction(reduction, size_average, reduce)
    if target._requires_grad and grad_mode.is_grad_enabled():
        raise RuntimeError("The function 'soft_margin_loss' is not differentiable with respect "
                           "to argument 'target'. This input cannot have requires_grad True.")

    def build(x):
        return _apply_reduction(_F.log1p(_F.exp(-x * target)), reduction)

    return _named("SoftMarginLossBackward0", input, build)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """PyTorch's Python definition: the mean over classes of the two-sided log-sigmoid loss."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    C = input.size(class_dim)
    loss = loss.sum(dim=class_dim) / C
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(reduction + " is not valid")


def _sizes(t):
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos`` where t == 1, ``max(0, cos - margin)`` where t == -1 (ATen's formula, with
    its 1e-12 in the squared magnitudes)."""
    reduction = _reduction(reduction, size_average, reduce)
    td = target.dim()
    if td not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if td == 1 and not (input1.dim() == 2 and input2.dim() == 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with "
                           f"sizes {_sizes(input1)} and {_sizes(input2)}.")
    if td == 0 and not (input1.dim() == 1 and input2.dim() == 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with "
                           f"sizes {_sizes(input1)} and {_sizes(input2)}.")
    eps = 1e-12
    prod_sum = (input1 * input2).sum(td)
    mag_square1 = (input1 * input1).sum(td) + eps
    mag_square2 = (input2 * input2).sum(td) + eps
    cos = prod_sum / (mag_square1 * mag_square2).sqrt()
    _broadcast_shapes(tuple(target.shape), tuple(cos.shape))
    from ...ops.basic import zeros_like
    zeros = zeros_like(cos)
    pos = 1 - cos
    neg = _clamp_min(cos - margin, 0)
    output = _F.where(target == 1, pos, zeros) + _F.where(target == -1, neg, zeros)
    return _apply_reduction(output, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(0, margin + d(a, p) - d(a, n))`` with ``pairwise_distance`` (``swap``: the
    smaller of d(a, n) and d(p, n))."""
    reduction = _reduction(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, pd, nd = anchor.dim(), positive.dim(), negative.dim()
    if not a == pd == nd:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {pd}D, "
                           f"and negative {nd}D inputs")
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = _F.minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _apply_reduction(_clamp_min(margin + dist_pos - dist_neg, 0), reduction)


# ----------------------------------------------------------------------------- distances


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """ATen's: each input divided by its norm clamped to ``eps`` (the clamp outside the graph,
    CloneBackward0), then the product summed over ``dim`` (SumBackward1)."""
    _check_tensor(x1, "cosine_similarity", "x1")
    _check_tensor(x2, "cosine_similarity", "x2")
    ct = D.result_type(x1, x2)
    if not ct.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{D.scalar_name(ct)}")
    if not x1.is_floating_point():
        x1 = x1.to(ct)
    if not x2.is_floating_point():
        x2 = x2.to(ct)
    s1, s2 = tuple(x1.shape), tuple(x2.shape)
    if s1 != s2:
        shape = _broadcast_shapes(s1, s2)
        x1 = x1 if s1 == shape else x1.expand(*shape)
        x2 = x2 if s2 == shape else x2.expand(*shape)
    from ...linalg import vector_norm
    n1 = vector_norm(x1, 2, dim=dim, keepdim=True).clone()
    n2 = vector_norm(x2, 2, dim=dim, keepdim=True).clone()
    with grad_mode.no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``norm(x1 - x2 + eps, p, last dim)`` (NormBackward1, as ATen's at::norm records)."""
    _check_tensor(x1, "pairwise_distance", "x1")
    _check_tensor(x2, "pairwise_distance", "x2")
    dim = max(x1.dim(), x2.dim()) - 1
    # ATen adds the Scalar eps: AddBackward1
    diff = record_composition("AddBackward1", (x1 - x2,), lambda d: d + eps)
    return record_composition("NormBackward1", (diff,), lambda d: d.norm(p, dim, keepdim))


def selu_(input):
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def threshold_(input, threshold, value):  # noqa: F811 - PyTorch's name, like threshold's arg
    return globals()["threshold"](input, threshold, value, inplace=True)
