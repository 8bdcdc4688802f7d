"""The channel-wise dropouts (dropout1d/2d/3d, feature_alpha_dropout) and alpha_dropout: masks
drawn from PyTorch's generator streams as its CPU kernels draw them (``memory_order_draw``)."""
from __future__ import annotations

import math
import warnings

import numpy as np

from ... import _dtype as D
from ...tensor import Tensor
from .. import _device

__all__ = ["dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]


def _feature_dropout(input, p, training, inplace):
    """ATen's ``feature_dropout``: one Bernoulli draw per (sample, channel), a noise tensor of
    shape ``(N, C, 1, ...)`` drawn exactly like ``dropout``'s, then ``input * noise``."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    if not input.is_floating_point():  # the noise is float: PyTorch's mul refuses (any device)
        raise RuntimeError("result type Float can't be cast to the desired output type "
                           f"{D.scalar_name(input.dtype)}")
    dt = input._data.dtype
    if _device.is_cuda(input):
        from ... import _cuda_random
        noise = Tensor._make(_cuda_random.dropout_mask(shape, p, dt))
    else:
        from ...random import default_generator
        noise = Tensor._make(np.zeros((), dt) if p == 1.0
                             else default_generator().dropout_mask(shape, p, dt))
    return input.mul_(noise) if inplace else input * noise


def memory_order_draw(arr, draw):
    """``draw(shape)`` (random numbers in C order) laid out as PyTorch fills
    ``empty_like(arr)``: that keeps a permuted dense input's strides (``x.transpose(0, 1)``
    after batch-first attention) and the CPU samplers fill it in memory order, so the numbers are
    drawn for ``arr``'s dims sorted outermost first, then permuted back."""
    if arr.flags.c_contiguous or arr.ndim < 2:
        return draw(arr.shape)
    perm = sorted(range(arr.ndim), key=lambda d: -arr.strides[d] if arr.shape[d] > 1 else 0)
    if not np.transpose(arr, perm).flags.c_contiguous or min(arr.strides) < 0:
        return draw(arr.shape)  # not dense: empty_like is contiguous
    return np.transpose(draw(tuple(arr.shape[d] for d in perm)), np.argsort(perm))


_SELU_ALPHA = 1.7580993408473766  # ATen's alpha' (-scale * alpha of SELU)


def _alpha_dropout(input, p, training, inplace, feature):
    """ATen's ``_dropout_impl`` with ``alpha_dropout``: ``x * (a noise) + b`` where dropped
    elements become SELU's negative saturation, rescaled to keep mean and variance."""
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        zero = Tensor._make(np.zeros((), input._data.dtype))
        return input.mul_(zero) if inplace else input * zero
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if feature else tuple(input.shape)
    if _device.is_cuda(input):
        from ... import _cuda_random
        keep = Tensor._make(_cuda_random.bernoulli(1.0 - p, shape, input._data.dtype))
    else:
        from ...random import default_generator
        keep = Tensor._make(memory_order_draw(
            input._data if not feature else np.empty(shape, np.int8),
            lambda s: default_generator().bernoulli(1.0 - p, s, input._data.dtype)))
    a = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    b = (keep - 1.0) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p
    noise = keep * a
    return input.mul_(noise).add_(b) if inplace else input * noise + b


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks (keeps zero mean and unit variance)."""
    return _alpha_dropout(input, p, training, inplace, feature=False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout of whole channels (one draw per (sample, channel))."""
    return _alpha_dropout(input, p, training, inplace, feature=True)


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of ``(N, C, L)`` or ``(C, L)`` inputs."""
    _check_p(p)
    nd = input.dim()
    if nd not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {nd}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    if nd == 2:
        x = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
        out = _feature_dropout(x, p, training, inplace)
        return out.squeeze_(0) if inplace else out.squeeze(0)
    return _feature_dropout(input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of ``(N, C, H, W)`` inputs (a 3-D input is taken as (N, C, L),
    with PyTorch's warning)."""
    _check_p(p)
    nd = input.dim()
    if nd not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {nd}-D input to dropout2d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if nd == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs."""
    _check_p(p)
    nd = input.dim()
    if nd not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {nd}-D input to dropout3d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    if nd != 5:
        x = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
        out = _feature_dropout(x, p, training, inplace)
        return out.squeeze_(0) if inplace else out.squeeze(0)
    return _feature_dropout(input, p, training, inplace)
