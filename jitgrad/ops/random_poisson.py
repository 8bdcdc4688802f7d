"""``torch.poisson`` and ``torch.binomial``: the samplers under Poisson/Binomial's ``sample``.

Samples come from PyTorch's CPU generator (``jitgrad._random_poisson``: bit for bit after
``manual_seed``). ``poisson`` records ``PoissonBackward0`` whose gradient is zeros
(derivatives.yaml: ``self: zeros_like(self)``); ``binomial`` records PyTorch's
``NotImplemented`` node (backward raises "derivative for aten::binomial is not implemented").

CUDA tensors raise NotImplementedError naming the function, as the gamma sampler does: there is
no device sampler yet (ATen's CUDA stream is Philox through ``curand_uniform`` per thread, which
``_cuda_rng_kernels`` does not provide), and computing on the host is not done silently.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .composite import record
from .functional_args import _no_derivative
from .random_gamma import _broadcast_to_first, _tensor_arg

__all__ = ["poisson", "binomial"]


def _generator(fname, generator):
    from .. import random as R
    if generator is None:
        return R.default_generator()
    if not isinstance(generator, (R.Generator, R._DefaultGenerator)):
        raise TypeError(f"{fname}(): argument 'generator' must be torch.Generator, not "
                        f"{type(generator).__name__}")
    return generator._impl


def _host(fname, *tensors):
    for t in tensors:
        if t._data.__class__ is not np.ndarray:
            raise NotImplementedError(f"{fname}: jitgrad has no CUDA kernel for it (it samples "
                                      "on the CPU only); call it on a .cpu() tensor")


def _poisson_backward(node, g):
    from .basic import zeros_like
    return (zeros_like(g),)


def poisson(input, generator=None):
    """``torch.poisson(rates)``: one Poisson(rate) draw per element, in the rates' dtype."""
    from .._random_poisson import poisson as sample
    _tensor_arg("poisson", "input", 1, input)
    gen = _generator("poisson", generator)
    _host("poisson", input)
    if input.dtype not in (D.float32, D.float64, D.float16):
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for "
                                  f"'{D.scalar_name(input.dtype)}'")
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
    _host("binomial", count, prob)
    for name, t in (("count", count), ("prob", prob)):
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{D.scalar_name(t.dtype)}")
    if prob.dtype != count.dtype:
        raise RuntimeError(f"Found dtype {D.scalar_name(prob.dtype)} but expected "
                           f"{D.scalar_name(count.dtype)}")
    c, p = _broadcast_to_first("binomial", count, prob)
    if count.dtype not in (D.float32, D.float64):
        raise NotImplementedError(f"\"binomial_cpu\" not implemented for "
                                  f"'{D.scalar_name(count.dtype)}'")
    res = Tensor._make(np.asarray(sample(gen, c, p)))
    return _no_derivative("binomial", res, (count, prob))
