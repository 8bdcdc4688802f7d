"""``convert_conv2d_weight_memory_format`` / ``convert_conv3d_weight_memory_format``: lay the
weights of every (transposed) convolution in a module tree out in ``memory_format``.

jitgrad keeps whatever strides an array has but its ``clone`` does not produce the
channels-last layouts, so this module writes them itself: a host copy whose strides are
PyTorch's channels_last / channels_last_3d strides (dims ``N, C, *spatial`` stored as ``N,
*spatial, C``). The values, and so every result computed from the weight, are unchanged, as in
PyTorch; jitgrad's kernels do not run faster for the layout. CUDA weights other than
``contiguous_format`` / ``preserve_format`` raise ``clone``'s NotImplementedError.
"""
from __future__ import annotations

import numpy as np

import jitgrad as torch

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]

_CHANNELS_LAST_RANK = {"channels_last": 4, "channels_last_3d": 5}


def _clone_in_format(weight, memory_format):
    """``weight.detach().clone(memory_format=...)`` including the channels-last layouts."""
    d = weight._data
    rank = _CHANNELS_LAST_RANK.get(memory_format)
    if rank is None or d.__class__ is not np.ndarray:
        return weight.detach().clone(memory_format=memory_format)
    if d.ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {memory_format} format")
    # copy in N, *spatial, C order, then view it back as N, C, *spatial
    nhwc = np.ascontiguousarray(np.moveaxis(d, 1, -1))
    return torch.Tensor._make(np.moveaxis(nhwc, -1, 1))


def _convert(module, memory_format, classes):
    if isinstance(module, classes):
        module.weight.data = _clone_in_format(module.weight, memory_format)
    for child in module.children():
        _convert(child, memory_format, classes)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Convert the weights of every ``Conv2d`` / ``ConvTranspose2d`` in ``module``."""
    return _convert(module, memory_format, (torch.nn.Conv2d, torch.nn.ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Convert the weights of every ``Conv3d`` / ``ConvTranspose3d`` in ``module``."""
    return _convert(module, memory_format, (torch.nn.Conv3d, torch.nn.ConvTranspose3d))
