"""``clip_grad_norm_`` / ``clip_grad_value_`` (PyTorch's semantics, in place on ``.grad``)."""
from __future__ import annotations

import math

import numpy as np

from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p._grad for p in parameters if p._grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale all gradients so their joint ``norm_type`` norm is at most ``max_norm``; returns
    the total norm (before clipping) as a 0-d tensor. PyTorch's algorithm, in tensor ops, so it
    runs where the gradients live (no host read unless ``error_if_nonfinite``): the norm of the
    per-gradient norms, then every gradient times ``min(max_norm / (total + 1e-6), 1)``."""
    from ... import linalg
    from ...autograd import grad_mode
    from ...ops.shape_join import stack
    grads = _grads(parameters)
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if not grads:
        return Tensor._make(np.asarray(0.0, dtype=np.float32))
    with grad_mode.no_grad():
        norms = [linalg.vector_norm(g, norm_type) for g in grads]
        total = norms[0] if len(norms) == 1 else linalg.vector_norm(stack(norms), norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is "
                "non-finite, so it cannot be clipped. To disable this error and scale the "
                "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
        coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    from ...autograd import grad_mode
    clip_value = float(clip_value)
    with grad_mode.no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
