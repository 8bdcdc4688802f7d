"""Flatten parameters into one vector and back (PyTorch's convert_parameters, ported: the
parameters are *views* of the flat vector's slices afterwards, ``view`` refuses layouts it cannot
flatten, and parameters on different devices are refused)."""
from __future__ import annotations

from ...ops.shape_join import cat
from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """One vector of every parameter's elements (``param.view(-1)``, then ``cat``)."""
    param_device = None
    vec = []
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        vec.append(param.view(-1))
    return cat(vec)


def vector_to_parameters(vec, parameters):
    """Each parameter's ``.data`` becomes the next slice of ``vec`` viewed as its shape (so it
    shares ``vec``'s memory and dtype, as in PyTorch)."""
    if not isinstance(vec, Tensor):
        from ... import typename
        raise TypeError(f"expected torch.Tensor, but got: {typename(vec)}")
    param_device = None
    pointer = 0
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        num_param = param.numel()
        param.data = vec[pointer:pointer + num_param].view_as(param).data
        pointer += num_param


def _check_param_device(param, old_param_device):
    """The device index of the first parameter (-1 for the CPU); a TypeError for a later one on
    another device."""
    if old_param_device is None:
        return param.get_device() if param.device.type == "cuda" else -1
    if param.device.type == "cuda":
        warn = param.get_device() != old_param_device
    else:
        warn = old_param_device != -1
    if warn:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return old_param_device
