"""Flatten parameters into one vector and back."""
from __future__ import annotations

from ...autograd import grad_mode
from ...ops.shape_join import cat

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    pointer = 0
    for p in parameters:
        n = p.numel()
        with grad_mode.no_grad():
            p._data[...] = vec._data[pointer:pointer + n].reshape(p._data.shape)
            p._vc.value += 1
        pointer += n
