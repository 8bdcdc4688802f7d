"""``nn.functional`` for CUDA tensors: the same functions written as compositions of ops that
run on the device (elementwise kernels, reductions, matmul, softmax, gather/index_select,
scatter), so nothing is copied between host and device.

``functional.py``'s CPU code computes the fused losses, ``layer_norm`` and ``embedding`` with
NumPy on ``._data``; for CUDA inputs each of those functions calls the twin below (after the
same argument checks where they read only metadata). ``cross_entropy`` needs no twin: it is
``log_softmax`` + ``nll_loss`` (routed) + label smoothing in ops that run on the device, as are
``l1_loss``, ``softmax``/``log_softmax`` and the activations. Gradients come from autograd
through the composition (so ``create_graph=True`` works unchanged); where the composition's
derivative would differ from the CPU node's formula at an edge (BCE at x = 0 or 1) a ``record``
node carries the CPU node's name and its differentiable backward written with ops.

Differences from the CPU path, all because a check would need a device->host read (PyTorch's
CUDA kernels check asynchronously with device asserts): target class indices, embedding
indices and BCE input ranges are not validated (out-of-range values are undefined behaviour, as
for ``gather``); ``one_hot`` needs ``num_classes`` (inferring it reads the maximum: one d2h).
Reductions accumulate in the tensor's dtype (the CPU losses sum float32 in float64), so float32
results agree to float32 rounding, not bit for bit.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..ops import functional as _F
from ..ops.composite import record, record_composition
from ..ops.linalg_addmm import addmm
from ..ops.linalg_matmul import matmul
from ..tensor import Tensor

__all__ = ["is_cuda", "linear", "dropout", "nll_loss", "mse_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "layer_norm", "embedding", "one_hot"]


def is_cuda(*ts) -> bool:
    """Any CUDA tensor among ``ts`` (the route condition of the functional wrappers)."""
    return any(isinstance(t, Tensor) and t._data.__class__ is not np.ndarray for t in ts)


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


# ----------------------------------------------------------------------------- linear, dropout


def linear(input, weight, bias=None):
    """``x W^T + b``: ``addmm`` (AddmmBackward0) for 2-D inputs, as the CPU path records."""
    if bias is None:
        return matmul(input, weight.t())
    if input.ndim == 2:
        return addmm(bias, input, weight.t())
    if input.ndim == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are 0D "
                           f"and {weight.ndim}D")
    lead = tuple(input.shape[:-1])
    x2 = input.unsqueeze(0) if input.ndim == 1 else input.reshape(-1, input.shape[-1])
    out = addmm(bias, x2, weight.t())
    return out.view(*lead, out.shape[-1])


def dropout(input, p, inplace):
    """``x * mask`` with the keep-mask (0 or 1/(1-p)) drawn on the device by the CUDA
    generator (``_cuda_random.dropout_mask``): MulBackward0, like the CPU path."""
    from .. import _cuda_random
    dt = input._data.dtype if input.is_floating_point() else D.get_default_dtype().np
    mask = Tensor._make(_cuda_random.dropout_mask(tuple(input.shape), p, dt))
    if inplace:
        return input.mul_(mask)
    return input * mask


# ----------------------------------------------------------------------------- nll / CE


def _picked(input, target, weight, ignore_index, class_dim):
    """(``input`` at each target class, per-element weight ``w[t]`` (0 where ignored))."""
    valid = target != ignore_index
    ts = _F.where(valid, target, 0)
    idx = ts.reshape(1) if target.ndim == 0 else ts.unsqueeze(class_dim)
    from ..ops.gather_scatter import gather_checked  # reports "Target t is out of bounds."
    picked = gather_checked(input, class_dim, idx, "nll_target").squeeze(class_dim)
    if target.ndim == 0:
        picked = picked.reshape(())
    vw = valid.to(input.dtype)
    if weight is not None:
        wt = weight.to(input.dtype).index_select(0, ts.reshape(-1)).reshape(tuple(ts.shape))
        vw = wt * vw
    return picked, vw


def _nll_loss(input, target, weight, ignore_index, reduction):
    """``-w[t] x[t]`` per element, summed or averaged by ``sum w[t]`` over kept targets.
    The caller (``functional.nll_loss``) has checked shapes and dtypes."""
    class_dim = 0 if input.ndim == 1 else 1
    target = target.to(D.int64)
    if input.ndim == 1:
        target = target.reshape(())  # a 1-element target for a single sample
    picked, wt = _picked(input, target, weight, ignore_index, class_dim)
    losses = -(picked * wt)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / wt.sum()


def nll_loss(input, target, weight, ignore_index, reduction):
    """One ``NllLossBackward0`` node, as PyTorch (and the CPU path) records it."""
    return record_composition("NllLossBackward0", (input,), lambda x: _nll_loss(
        x, target, weight, ignore_index, reduction))


# ----------------------------------------------------------------------------- regression


def _mse_loss(input, target, reduction, weight=None):
    d = input - target
    loss = d * d if weight is None else d * d * weight
    return _reduce(loss, reduction)


def mse_loss(input, target, reduction, weight=None):
    """One ``MseLossBackward0`` node, as PyTorch (and the CPU path) records it."""
    return record_composition("MseLossBackward0", (input, target),
                              lambda x, t: _mse_loss(x, t, reduction, weight))


# ----------------------------------------------------------------------------- BCE


def binary_cross_entropy(input, target, weight, reduction):
    """``-w (t log x + (1-t) log(1-x))``, logs clamped at -100 (no input range check)."""
    t = target.to(input.dtype)
    wt = None if weight is None else weight.to(input.dtype).detach()
    with grad_mode.no_grad():
        x = input.detach()
        loss = -(t * x.log().clamp_min(-100.0) + (1 - t) * (-x).log1p().clamp_min(-100.0))
        if wt is not None:
            loss = loss * wt
        data = _reduce(loss, reduction)
    # the CPU node's backward: its differentiable branch runs on device tensors as they are
    from .functional.loss_bce import _bce_backward
    return record("BinaryCrossEntropyBackward0", (input, target), data._data, _bce_backward,
                  save=(("x", input), ("t", target)),
                  attrs={"n": max(input.numel(), 1), "reduction": reduction, "weight": wt})


def _binary_cross_entropy_with_logits(input, target, weight, reduction, pos_weight):
    """``(1-t) x - (1 + (pw-1) t) logsigmoid(x)``, times ``weight``: composed, so autograd
    gives the CPU node's gradient ``((pw t + 1 - t) sigmoid(x) - pw t) * w``."""
    t = target.to(input.dtype)
    log_sig = -_F.softplus(-input)
    if pos_weight is not None:
        log_sig = log_sig * ((pos_weight.to(input.dtype) - 1) * t + 1)
    loss = (1 - t) * input - log_sig
    if weight is not None:
        loss = loss * weight.to(input.dtype)
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight, reduction, pos_weight):
    """One ``BinaryCrossEntropyWithLogitsBackward0`` node, as PyTorch and the CPU path."""
    return record_composition(
        "BinaryCrossEntropyWithLogitsBackward0", (input, target),
        lambda x, t: _binary_cross_entropy_with_logits(x, t, weight, reduction, pos_weight))


# ----------------------------------------------------------------------------- layer_norm


def _layer_norm(input, normalized_shape, weight, bias, eps):
    """Statistics over the trailing dims with device reductions; the caller checked shapes."""
    axes = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    mean = input.mean(axes, keepdim=True)
    xc = input - mean
    var = (xc * xc).mean(axes, keepdim=True)
    y = xc * (var + eps).rsqrt()
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def layer_norm(input, normalized_shape, weight, bias, eps):
    """One ``NativeLayerNormBackward0`` node, as PyTorch (and the CPU path) records it."""
    return record_composition("NativeLayerNormBackward0", (input, weight, bias),
                              lambda x, w, b: _layer_norm(x, normalized_shape, w, b, eps))


# ----------------------------------------------------------------------------- embedding


def _embedding(input, weight, padding_idx, max_norm, scale_grad_by_freq):
    """Rows of ``weight`` (index_select; the backward is index_add on the device). The row at
    ``padding_idx`` gets no gradient: where the index is the padding index the output is taken
    from a detached copy (same values, no edge)."""
    idx = input.to(D.int64)
    flat = idx.reshape(-1)
    rows = weight.index_select(0, flat)
    if scale_grad_by_freq:
        rows = _scaled_by_frequency(rows, flat, weight.shape[0])
    if padding_idx >= 0 and weight._requires_grad:
        rows = _F.where((flat == padding_idx).unsqueeze(1), rows.detach(), rows)
    return rows.reshape(*tuple(input.shape), weight.shape[1])


def _scaled_by_frequency(rows, flat, num):
    """``rows`` unchanged, the gradient of each occurrence divided by the number of times its
    index occurs in ``flat`` (PyTorch's scale_grad_by_freq), the counts made on the device."""
    from ..ops.factories import ones, zeros
    with grad_mode.no_grad():
        counts = zeros(num, dtype=rows.dtype, device=rows.device).index_add(
            0, flat, ones(flat.shape[0], dtype=rows.dtype, device=rows.device))
        scale = (1.0 / counts).index_select(0, flat).unsqueeze(1)

    def backward(node, g):
        return (g * scale,)
    return record("MulBackward0", (rows,), rows._data, backward)


def _embedding_renorm_(weight, input, max_norm, norm_type):
    """PyTorch's embedding_renorm_ on the device, with no host read: every row that ``input``
    references and whose ``norm_type`` norm exceeds ``max_norm`` is scaled in place by
    ``max_norm / (norm + 1e-7)`` (the others are written back unchanged: repeated indices all
    write the same value)."""
    from .. import linalg
    from ..autograd import grad_mode
    with grad_mode.no_grad():
        flat = input.to(D.int64).reshape(-1)
        rows = weight.detach().index_select(0, flat)
        norms = linalg.vector_norm(rows.double(), float(norm_type), dim=1, keepdim=True)
        scale = _F.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[flat] = (rows.double() * scale).to(weight.dtype)


def embedding(input, weight, padding_idx, max_norm, scale_grad_by_freq, norm_type=2.0):
    """One ``EmbeddingBackward0`` node, as PyTorch (and the CPU path) records it."""
    if max_norm is not None and input.numel():
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return record_composition("EmbeddingBackward0", (weight,), lambda w: _embedding(
        input, w, padding_idx, max_norm, scale_grad_by_freq))


def one_hot(tensor, num_classes):
    """int64 one-hot with a trailing class dim: ``zeros(..., C).scatter(-1, t[..., None], 1)``."""
    from ..ops.basic import zeros
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max().item()) + 1  # one device->host read, like PyTorch's
    out = zeros(*tuple(tensor.shape), int(num_classes), dtype=D.int64, device=tensor.device)
    if tensor.numel() == 0:
        return out
    return out.scatter(-1, tensor.unsqueeze(-1), 1)
