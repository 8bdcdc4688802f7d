"""``torch.poisson`` and ``torch.binomial``: the samplers under Poisson/Binomial's ``sample``.

Samples come from PyTorch's CPU generator (``jitgrad._random_poisson``: bit for bit after
``manual_seed``). ``poisson`` records ``PoissonBackward0`` whose gradient is zeros
(derivatives.yaml: ``self: zeros_like(self)``); ``binomial`` records PyTorch's
``NotImplemented`` node (backward raises "derivative for aten::binomial is not implemented").

CUDA tensors draw on the device from the CUDA generator (``_cuda_rng_poisson``: the same
algorithms over Philox, reproducible under ``manual_seed``; the CPU path's distribution, not
its numbers; never the CPU stream), as the gamma sampler does.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .composite import record
from .elementwise_call import broadcast_shapes
from .functional_args import _no_derivative
from .out import _RESIZE_WARNING
from .parser_errors import parser_type_name
from .random_gamma import _broadcast_to_first, _tensor_arg

__all__ = ["poisson", "binomial"]


def _generator(fname, generator):
    from .. import random as R
    if generator is None:
        return R.default_generator()
    if not isinstance(generator, (R.Generator, R._DefaultGenerator)):
        raise TypeError(f"{fname}(): argument 'generator' must be torch.Generator, not "
                        f"{parser_type_name(generator)}")
    return generator._impl


def _on_device(generator, *tensors):
    """True for CUDA tensors (all on one device, else PyTorch's error; a CPU generator is
    refused as PyTorch refuses it)."""
    from .elementwise_call import check_same_device
    if check_same_device(tensors).type != "cuda":
        return False
    from .random_factories import _cuda_rng
    _cuda_rng(generator)
    return True


def _kind(t):
    """The device in ATen's kernel names (poisson_cpu / poisson_cuda)."""
    return "cpu" if t._data.__class__ is np.ndarray else "cuda"


def _poisson_backward(node, g):
    from .basic import zeros_like
    return (zeros_like(g),)


def poisson(input, generator=None):
    """``torch.poisson(rates)``: one Poisson(rate) draw per element, in the rates' dtype."""
    from .._random_poisson import poisson as sample
    _tensor_arg("poisson", "input", 1, input)
    gen = _generator("poisson", generator)
    if input.dtype not in (D.float32, D.float64, D.float16):
        raise NotImplementedError(f"\"poisson_{_kind(input)}\" not implemented for "
                                  f"'{D.scalar_name(input.dtype)}'")
    if _on_device(generator, input):
        from .._cuda_rng_poisson import poisson as device_sample
        res = device_sample(input._data)
    else:
        res = sample(gen, input._data)
    return record("PoissonBackward0", (input,), res, _poisson_backward)


def binomial(count, prob, generator=None):
    """``torch.binomial(count, prob)``: Binomial(count, prob) draws, broadcast as
    TensorIterator does (the output, made with count's shape, is resized with PyTorch's warning
    when the broadcast shape is larger)."""
    from .._random_poisson import binomial as sample
    _tensor_arg("binomial", "count", 1, count)
    _tensor_arg("binomial", "prob", 2, prob)
    gen = _generator("binomial", generator)
    for name, t in (("count", count), ("prob", prob)):
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{D.scalar_name(t.dtype)}")
    if prob.dtype != count.dtype:
        raise RuntimeError(f"Found dtype {D.scalar_name(prob.dtype)} but expected "
                           f"{D.scalar_name(count.dtype)}")
    device = _on_device(generator, count, prob)
    if device:
        shape = broadcast_shapes(tuple(count._data.shape), tuple(prob._data.shape))
        if shape != tuple(count._data.shape):
            warnings.warn(_RESIZE_WARNING.format(old=list(count._data.shape), new=list(shape)),
                          UserWarning, stacklevel=2)
    else:
        c, p = _broadcast_to_first("binomial", count, prob)
    if count.dtype not in (D.float32, D.float64):
        raise NotImplementedError(f"\"binomial_{_kind(count)}\" not implemented for "
                                  f"'{D.scalar_name(count.dtype)}'")
    if device:
        from .._cuda_rng_poisson import binomial as device_sample
        res = Tensor._make(device_sample(count._data, prob._data, shape))
    else:
        res = Tensor._make(np.asarray(sample(gen, c, p)))
    return _no_derivative("binomial", res, (count, prob))
