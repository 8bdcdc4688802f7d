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
    the total norm (before clipping) as a 0-d tensor."""
    grads = _grads(parameters)
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if not grads:
        return Tensor._make(np.asarray(0.0, dtype=np.float32))
    dt = grads[0]._data.dtype
    if norm_type == math.inf:
        norms = [np.max(np.abs(g._data)) if g._data.size else 0.0 for g in grads]
        total = max(norms)
    else:
        total = sum(float(np.sum(np.abs(g._data.astype(np.float64)) ** norm_type))
                    for g in grads) ** (1.0 / norm_type)
    total_t = Tensor._make(np.asarray(total, dtype=dt))
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
            "by the non-finite norm anyway, set `error_if_nonfinite=False`")
    clip_coef = dt.type(max_norm) / (dt.type(total) + dt.type(1e-6))
    if clip_coef < 1:
        for g in grads:
            g._data *= clip_coef
            g._vc.value += 1
    return total_t


def clip_grad_value_(parameters, clip_value, foreach=None):
    clip_value = float(clip_value)
    for g in _grads(parameters):
        np.clip(g._data, -clip_value, clip_value, out=g._data)
        g._vc.value += 1
