"""The multi-class margin losses (``multi_margin_loss``, ``multilabel_margin_loss``: ATen ops,
one node each, written as compositions so they run on any device) and PyTorch's Python
``triplet_margin_with_distance_loss``."""
from __future__ import annotations

from ... import _dtype as D
from ...autograd import grad_mode
from ...ops import functional as _F
from ...ops.composite import record_composition
from ._common import _check_tensor, _legacy_reduction, _reduction
from .loss_extra import _apply_reduction

__all__ = ["multi_margin_loss", "multilabel_margin_loss", "triplet_margin_with_distance_loss"]


def _sizes(t):
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def _frames(input, what):
    """ATen's shape check shared by both losses: (nframe, dim) of a 0-d, 1-d or 2-d input."""
    nd = input.dim()
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {_sizes(input)}")
    if nd <= 1:
        return 1, (1 if nd == 0 else input.shape[0])
    return input.shape[0], input.shape[1]


def _need_long(target):
    if target.dtype is not D.int64:
        raise RuntimeError(f"expected scalar type Long but found {D.scalar_name(target.dtype)}")


def _float_kernel(input, kernel):
    if not input.is_floating_point():
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_name(input.dtype)}'")


def _reduce_frames(loss, reduction, keep_frames):
    """ATen's reduction of the per-frame losses: 'none' keeps (nframe,) only when the target
    has a batch dim, else a 0-d result."""
    if reduction == "none":
        return loss if keep_frames else loss.reshape(())
    return loss.sum() if reduction == "sum" else loss.mean()


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """``sum_{i != y} w_y * max(0, margin - x_y + x_i)^p / C`` per sample
    (MultiMarginLossBackward0). The hinge is ``relu``: no gradient where it is exactly 0, as
    ATen's ``z > 0``."""
    _check_tensor(input, "multi_margin_loss")
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    elif reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    nframe, dim = _frames(input, "multi_margin_loss")
    if not (target.dim() <= 1 and target.numel() == nframe):
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{nframe}], but got "
            f"{_sizes(target)}. Input has shape {_sizes(input)}.")
    if weight is not None and not (weight.dim() <= 1 and weight.numel() == dim):
        raise RuntimeError(f"inconsistent weight size, expected {dim} but got {_sizes(weight)}")
    if weight is not None and weight.requires_grad and grad_mode.is_grad_enabled():
        raise RuntimeError("The function 'multi_margin_loss' is not differentiable with "
                           "respect to argument 'weight'. This input cannot have "
                           "requires_grad True.")
    _need_long(target)
    _float_kernel(input, "multi_margin_loss_cpu_kernel")
    tgt = target.reshape(nframe, 1)
    if nframe and bool(((tgt < 0) | (tgt >= dim)).any()):
        raise RuntimeError("target out of range")
    from ...ops.basic import arange
    others = arange(dim, device=input.device).reshape(1, dim) != tgt  # (nframe, dim)

    def build(x):
        x2 = x.reshape(nframe, dim)
        z = _F.relu(margin - x2.gather(1, tgt) + x2)
        h = z if p == 1 else z * z
        if weight is not None:
            h = h * weight.reshape(-1)[tgt]
        per = _F.where(others, h, 0.0).sum(1) / dim
        return _reduce_frames(per, reduction, target.dim() > 0)

    return record_composition("MultiMarginLossBackward0", (input,), build)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``sum_{j in targets} sum_{i not in targets} max(0, 1 - (x_j - x_i)) / C`` per sample;
    each row of ``target`` lists class indices up to its first -1
    (MultilabelMarginLossBackward0)."""
    _check_tensor(input, "multilabel_margin_loss")
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    else:
        reduction = _reduction(reduction)
    nframe, dim = _frames(input, "multilabel_margin_loss")
    if input.dim() <= 1:
        ok = target.dim() <= 1 and target.numel() == dim
    else:
        ok = target.dim() == 2 and tuple(target.shape) == (nframe, dim)
    if not ok:
        raise RuntimeError(f"inconsistent target size: {_sizes(target)} for input of size: "
                           f"{_sizes(input)}")
    _need_long(target)
    _float_kernel(input, "multilabel_margin_loss_forward_out_frame")
    tgt = target.reshape(nframe, dim)
    if tgt.numel() and bool(((tgt < -1) | (tgt >= dim)).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    from ...ops.basic import arange
    # the prefix of each row before its first -1; counts[n, j]: how often class j is listed
    # there (ATen loops over the list, so a repeated class counts twice)
    live = (tgt != -1).to(D.int64).cumprod(1) > 0
    classes = arange(dim, device=input.device).reshape(1, 1, dim)
    hits = (tgt.unsqueeze(2) == classes) & live.unsqueeze(2)         # (n, slot, class)
    counts = hits.to(input.dtype).sum(1)                             # (n, class)
    is_target = hits.any(1)

    def build(x):
        x2 = x.reshape(nframe, dim)
        z = _F.relu(1 - x2.unsqueeze(2) + x2.unsqueeze(1))          # z[n, j, i]
        pairs = _F.where(is_target.unsqueeze(1), 0.0, z)            # i must not be a target
        per = (pairs.sum(2) * counts).sum(1) / dim
        return _reduce_frames(per, reduction, target.dim() > 1)

    return record_composition("MultilabelMarginLossBackward0", (input,), build)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """PyTorch's Python definition: ``max(0, margin + d(a, p) - d(a, n))`` with any distance
    function (``pairwise_distance`` by default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, pd, nd = anchor.ndim, positive.ndim, negative.ndim
    if not (a == pd and pd == nd):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {pd}D, "
                           f"and negative {nd}D inputs")
    if distance_function is None:
        from .distance import pairwise_distance as distance_function
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = _F.minimum(dist_neg, distance_function(positive, negative))
    return _apply_reduction(_F.clamp_min(margin + dist_pos - dist_neg, 0), reduction)
