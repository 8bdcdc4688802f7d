"""``ctc_loss`` (Connectionist Temporal Classification) as ATen's CPU ``LossCTC.cpp``: the
``ctc_loss_impl`` wrapper (unbatched input, ``zero_infinity``, the reductions, composed of
recorded ops so the graph shows PyTorch's nodes), ``_ctc_loss``'s argument checks in its order
and messages, and one ``CtcLossBackward0`` node whose VJP is ``_ctc_loss_backward``. The alpha
and beta recursions are Numba kernels (``_ctc_kernels``).

``torch.ctc_loss`` is the ATen spelling: the reduction as an int (0 none, 1 mean, 2 sum; any
other value leaves the losses unreduced, as ATen's ``if`` chain does; omitted, it is 0, as in
PyTorch's binding, whatever its printed signature says).

Deviations: targets are read only where the lengths say; ATen does not range-check those
labels (an out-of-range one reads past the row), here one raises RuntimeError. CUDA tensors
have no device kernel: ``_ctc_loss`` and its backward are staged through the host
(``host_staged``: the kernels on host copies, the losses and the gradient uploaded, one
``CtcLossBackward0`` node on the device tensors); the targets may stay on the CPU, as ATen
moves them for the user.
"""
from __future__ import annotations

import numpy as np

from ... import _dtype as D
from ...autograd import grad_mode
from ...ops.composite import record
from ...ops.host_staged import host_staged, like_device, to_host
from ...ops.parser_errors import parser_type_name
from ...tensor import Tensor
from ._common import _reduction

__all__ = ["ctc_loss"]

_C = "(while checking arguments for ctc_loss_allocate_outputs)"
_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}
_SIGNATURES = (
    " * (Tensor log_probs, Tensor targets, tuple of ints input_lengths, tuple of ints "
    "target_lengths, int blank = 0, int reduction = at::Reduction::Mean, bool zero_infinity = "
    "False)\n"
    " * (Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths, "
    "int blank = 0, int reduction = at::Reduction::Mean, bool zero_infinity = False)\n")


def _not_integral(dt) -> bool:
    return np.dtype(dt.name).kind not in "iu"  # bool is not integral here


def _int_list(v) -> bool:
    """A ``tuple of ints`` argument: a list/tuple of Python or NumPy ints (not bools)."""
    return isinstance(v, (list, tuple)) and all(
        isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v)


def _parse(args, kwargs):
    """PyTorch's argument parser for ``torch.ctc_loss``'s two overloads: both lengths as
    Tensors, or both as sequences of ints; anything else is its TypeError."""
    (lp, tg, il, tl), rest = args[:4], args[4:]
    blank = rest[0] if len(rest) > 0 else kwargs.get("blank", 0)
    # the binding's default is not the Mean its signature prints: an omitted reduction is 0
    # ("none"; PyTorch's parser reads the default "at::Reduction::Mean" as 0)
    red = rest[1] if len(rest) > 1 else kwargs.get("reduction", 0)
    zinf = rest[2] if len(rest) > 2 else kwargs.get("zero_infinity", False)
    ok = isinstance(lp, Tensor) and isinstance(tg, Tensor) and \
        isinstance(blank, (int, np.integer)) and not isinstance(blank, bool) and \
        isinstance(red, (int, np.integer)) and not isinstance(red, bool) and \
        isinstance(zinf, (bool, np.bool_)) and \
        ((isinstance(il, Tensor) and isinstance(tl, Tensor)) or (_int_list(il) and _int_list(tl)))
    if not ok:
        got = ", ".join([parser_type_name(a) for a in args] +
                        [f"{k}={parser_type_name(v)}" for k, v in kwargs.items()])
        raise TypeError("ctc_loss() received an invalid combination of arguments - got "
                        f"({got}), but expected one of:\n" + _SIGNATURES)
    return lp, tg, il, tl, int(blank), int(red), bool(zinf)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """The CTC loss of (T, N, C) (or unbatched (T, C)) log-probabilities against padded (N, S)
    or concatenated targets; ``reduction='mean'`` divides each loss by its target length
    (clamped to 1) before averaging over the batch."""
    enum = _REDUCTIONS[_reduction(reduction)]
    return torch_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, enum,
                          zero_infinity)


def torch_ctc_loss(*args, **kwargs):
    """``torch.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0,
    reduction=0, zero_infinity=False)`` (ATen's signature: the reduction as an int)."""
    lp, tg, il, tl, blank, reduction, zero_infinity = _parse(args, kwargs)
    if isinstance(il, Tensor):  # the Tensor overload's own checks, then host int64 lists
        if _not_integral(il.dtype):
            raise RuntimeError("input_lengths must be integral")
        if _not_integral(tl.dtype):
            raise RuntimeError("target_lengths must be integral")
        il = to_host(il).astype(np.int64).reshape(-1)
        tl = to_host(tl).astype(np.int64).reshape(-1)
    else:
        il = np.array(il, dtype=np.int64).reshape(-1)
        tl = np.array(tl, dtype=np.int64).reshape(-1)
    batched = lp.ndim == 3
    x = lp if batched else lp.unsqueeze(1)  # UnsqueezeBackward0, as ATen's impl
    res = _ctc_loss(x, tg, il, tl, blank, zero_infinity)
    if zero_infinity:
        from ...ops.basic import zeros
        from ...ops.functional_compare import where
        res = where(res == float("inf"), zeros((), dtype=res.dtype, device=res.device), res)
    if reduction == 1:
        from ...ops.basic import tensor
        lengths = tensor(tl.tolist(), dtype=res.dtype, device=res.device).clamp_min(1)
        return (res / lengths).mean()
    if reduction == 2:
        return res.sum()
    return res if batched else res.squeeze(0)


@host_staged(same_device=False)
def _ctc_loss(lp, targets, il, tl, blank, zero_infinity):
    """``at::_ctc_loss`` on the CPU: the per-item negative log-likelihoods (N,), one
    ``CtcLossBackward0`` node."""
    if lp.dtype not in (D.float32, D.float64):
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for "
                                  f"'{D.scalar_name(lp.dtype)}'")
    if lp.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    tg, offs, max_tl = _check(lp, targets, il, tl, blank)
    x = np.ascontiguousarray(lp._data)
    from ._ctc_kernels import forward
    nll, la = forward(x, tg, offs, il, tl, blank, max_tl)
    if not (grad_mode.is_grad_enabled() and lp._requires_grad):
        return Tensor._make(nll)
    return record("CtcLossBackward0", (lp,), nll, _ctc_backward, save=(("log_probs", lp),),
                  attrs={"tg": tg, "offs": offs, "il": il, "tl": tl, "blank": blank,
                         "nll": nll, "la": la, "zero_infinity": zero_infinity})


def _check(lp, targets, il, tl, blank):
    """``ctc_loss_allocate_outputs``'s checks, in its order; returns the targets as one int64
    vector with each item's offset, and the longest target."""
    if lp.ndim != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {lp.ndim}-dimensional "
                           f"tensor for argument #1 'log_probs' {_C}")
    if not 1 <= targets.ndim <= 2:
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.ndim}-dimensional "
                           f"tensor for argument #2 'targets' {_C}")
    T, N, C = lp.shape
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    if il.shape[0] != N:
        raise RuntimeError("input_lengths must be of size batch_size")
    if tl.shape[0] != N:
        raise RuntimeError("target_lengths must be of size batch_size")
    for v in tl:
        if v < 0:
            raise RuntimeError("Expected target_lengths to have value at least 0, but got "
                               f"value {v} {_C}")
    max_tl = int(tl.max()) if N else 0
    tgd = np.asarray(targets._data).astype(np.int64)  # targets.to(kLong), as ATen's impl
    if targets.ndim == 1:
        pos = int(tl.sum())
        if tgd.shape[0] != pos:
            raise RuntimeError(f"Expected tensor to have size {pos} at dimension 0, but got "
                               f"size {tgd.shape[0]} for argument #2 'targets' {_C}")
        offs = np.zeros(N, np.int64)
        np.cumsum(tl[:-1], out=offs[1:])
        tg = np.ascontiguousarray(tgd)
    else:
        if tgd.shape[0] != N:
            raise RuntimeError(f"Expected tensor to have size {N} at dimension 0, but got "
                               f"size {tgd.shape[0]} for argument #2 'targets' {_C}")
        if tgd.shape[1] < max_tl:
            raise RuntimeError(f"Expected tensor to have size at least {max_tl} at dimension "
                               f"1, but got size {tgd.shape[1]} for argument #2 'targets' {_C}")
        offs = np.arange(N, dtype=np.int64) * tgd.shape[1]
        tg = np.ascontiguousarray(tgd).reshape(-1)
    for b in range(N):
        if il[b] < 0:
            raise RuntimeError("Expected input_lengths to have value at least 0, but got "
                               f"value {il[b]} {_C}")
        if il[b] > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got "
                               f"value {il[b]} {_C}")
    for b in range(N):  # ATen reads these labels unchecked; here they must be classes
        used = tg[offs[b]:offs[b] + tl[b]]
        if used.size and (used.min() < 0 or used.max() >= C):
            bad = used[(used < 0) | (used >= C)][0]
            raise RuntimeError(f"ctc_loss: target label {bad} of batch item {b} is out of "
                               f"the range of {C} classes")
    return tg, offs, max_tl


def _ctc_backward(node, g):
    """``_ctc_loss_backward`` (its own derivative is not implemented, as in PyTorch)."""
    a = node.ctx.attrs
    from ._ctc_kernels import backward
    lp = node.saved("log_probs")  # checks its version: modified in place, it raises
    gd = to_host(g.detach()) if isinstance(g, Tensor) else np.asarray(g)
    grad = backward(np.broadcast_to(gd, a["nll"].shape), np.ascontiguousarray(to_host(lp)),
                    a["tg"], a["offs"], a["il"], a["tl"], a["blank"], a["nll"], a["la"],
                    a["zero_infinity"])
    grad = like_device(grad, lp)  # a host-staged forward: the gradient goes back to the device
    if grad_mode.is_grad_enabled():  # create_graph: a node that refuses, as PyTorch's
        return (record("NotImplemented", (g, lp), grad, _ctc_double_backward),)
    return (Tensor._make(grad),)


def _ctc_double_backward(node, g):
    raise RuntimeError("derivative for aten::_ctc_loss_backward is not implemented")
