"""The other losses: kl_div, poisson/gaussian nll, margin ranking, hinge embedding, soft
margin, multilabel soft margin, cosine embedding, triplet margin."""
from __future__ import annotations

import math
import warnings

from ...autograd import grad_mode
from ...ops import functional as _F
from ...ops.composite import record_composition
from ...tensor import Tensor
from ._common import _check_tensor, _legacy_reduction, _reduction
from .activation import _named, logsigmoid
from .distance import pairwise_distance
from .loss_bce import _broadcast_shapes


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
