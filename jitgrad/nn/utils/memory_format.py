"""``convert_conv2d_weight_memory_format`` / ``convert_conv3d_weight_memory_format``: lay the
weights of every (transposed) convolution in a module tree out in ``memory_format``.

The copy is ``weight.detach().clone(memory_format=...)``, which gives PyTorch's channels_last /
channels_last_3d strides (and its rank error). The values, and so every result computed from
the weight, are unchanged, as in PyTorch; jitgrad's kernels do not run faster for the layout.
"""
from __future__ import annotations

import jitgrad as torch

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, classes):
    if isinstance(module, classes):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, classes)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Convert the weights of every ``Conv2d`` / ``ConvTranspose2d`` in ``module``."""
    return _convert(module, memory_format, (torch.nn.Conv2d, torch.nn.ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Convert the weights of every ``Conv3d`` / ``ConvTranspose3d`` in ``module``."""
    return _convert(module, memory_format, (torch.nn.Conv3d, torch.nn.ConvTranspose3d))
