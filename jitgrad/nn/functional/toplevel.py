"""The pooling functions PyTorch also exposes at top level (``torch.max_pool2d`` ...).

Those are ATen's native functions, whose signatures are narrower than ``torch.nn.functional``'s
Python wrappers: no ``return_indices`` (``torch.max_pool1d_with_indices`` and
``torch.adaptive_max_pool1d`` always return the pair), no ``divisor_override`` on
``avg_pool1d``, and ``stride=()`` for "the kernel size". Thin wrappers with those signatures,
so a call PyTorch rejects raises the same ``TypeError`` here. ``jitgrad.__getattr__`` serves
them; they are not part of ``jitgrad.nn.functional``.
"""
from __future__ import annotations

from . import pooling as _p

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "avg_pool1d",
           "adaptive_max_pool1d"]


def _stride(stride):
    return None if stride == () else stride  # ATen's empty stride: the kernel size


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _p.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _p.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _p.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    return _p.max_pool1d_with_indices(input, kernel_size, _stride(stride), padding, dilation,
                                      ceil_mode)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True):
    return _p.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                         count_include_pad)


def adaptive_max_pool1d(input, output_size):
    return _p.adaptive_max_pool1d_with_indices(input, output_size)
