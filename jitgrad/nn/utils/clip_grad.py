"""Gradient clipping, in PyTorch 2.13's structure: ``get_total_norm`` (the norm of the
per-tensor norms), ``clip_grads_with_norm_`` (every gradient times ``min(max_norm / (total +
1e-6), 1)``), ``clip_grad_norm_`` = the two in turn, the deprecated ``clip_grad_norm`` and
``clip_grad_value_``. All in tensor ops, so they run where the gradients live (no host read
unless ``error_if_nonfinite``).

PyTorch groups the tensors by (device, dtype) and runs ``_foreach_*`` kernels per group where
the device has them (CPU and CUDA, the only devices jitgrad has); jitgrad has no foreach
kernels, so each group takes the per-tensor loop, which gives the same values (ATen's CPU
foreach_norm/foreach_mul_ fall back to the same per-tensor ops). ``foreach=True`` on a device
without foreach support raises PyTorch's error.
"""
from __future__ import annotations

import functools
import types
import warnings

from ...tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_"]

_FOREACH_DEVICES = ("cpu", "cuda")


def _no_grad(func):
    """A wrapper frame of its own (as PyTorch's), so the warnings' stacklevels match."""
    def _no_grad_wrapper(*args, **kwargs):
        from ...autograd import grad_mode
        with grad_mode.no_grad():
            return func(*args, **kwargs)
    functools.update_wrapper(_no_grad_wrapper, func)
    return _no_grad_wrapper


def _group_by_device_and_dtype(tensors):
    """``{(device, dtype): [tensors]}`` in first-seen order."""
    groups = {}
    for t in tensors:
        groups.setdefault((t.device, t.dtype), []).append(t)
    return groups


def _check_foreach(foreach, device):
    if foreach and device.type not in _FOREACH_DEVICES:
        raise RuntimeError(f"foreach=True was passed, but can't use the foreach API on "
                           f"{device.type} tensors")


@_no_grad
def _get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the tensors' norms (as if all tensors were one vector)."""
    from ... import linalg
    from ...ops.basic import tensor as make_tensor
    from ...ops.shape_join import stack
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return make_tensor(0.0)
    first_device = tensors[0].device
    norms = []
    for (device, _), device_tensors in _group_by_device_and_dtype(tensors).items():
        _check_foreach(foreach, device)
        norms.extend(linalg.vector_norm(g, norm_type) for g in device_tensors)
    total_norm = linalg.vector_norm(stack([n.to(first_device) for n in norms]), norm_type)
    if error_if_nonfinite and bool(total_norm.isnan() | total_norm.isinf()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total_norm


@_no_grad
def _clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients in place by ``min(max_norm / (total_norm + 1e-6), 1)``."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    # multiplying by a coefficient clamped to 1 instead of branching on it: no host read
    clip_coef_clamped = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
    for (device, _), device_grads in _group_by_device_and_dtype(grads).items():
        _check_foreach(foreach, device)
        coef = clip_coef_clamped.to(device)
        for g in device_grads:
            g.mul_(coef)


@_no_grad
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Clip the joint ``norm_type`` norm of the gradients to ``max_norm``; returns the total
    norm before clipping."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)  # a generator is read once, for both steps
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.",
                          stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = _get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    _clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    """Deprecated alias of :func:`clip_grad_norm_`."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient into ``[-clip_value, clip_value]`` in place."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    clip_value = float(clip_value)
    grads = [p.grad for p in parameters if p.grad is not None]
    for (device, _), device_grads in _group_by_device_and_dtype(grads).items():
        _check_foreach(foreach, device)
        for grad in device_grads:
            grad.clamp_(min=-clip_value, max=clip_value)
