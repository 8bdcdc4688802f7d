"""``torch._standard_gamma``, ``torch._standard_gamma_grad``, ``torch._sample_dirichlet`` and
``torch._dirichlet_grad``: the ops under Gamma/Chi2/Beta/Dirichlet's ``rsample``.

Samples come from PyTorch's CPU generator (``jitgrad._random_gamma``: bit for bit after
``manual_seed``); the gradients are ATen's reparameterization formulas
(``gamma_grad_kernels``). ``_standard_gamma`` records ``StandardGammaBackward0`` (derivatives.yaml:
``grad * _standard_gamma_grad(self, result)``); ``_sample_dirichlet`` and ``_dirichlet_grad``
record PyTorch's ``NotImplemented`` node, ``_standard_gamma_grad`` its
``StandardGammaGradBackward0`` whose backward raises, as PyTorch's do.

CUDA tensors draw on the device from the CUDA generator (``_cuda_random.standard_gamma``:
ATen's sample_gamma per element over Philox, reproducible under ``manual_seed``, the same
distribution as the CPU path but not its numbers; never the CPU stream). Dirichlet normalizes
those gammas along the last dim (as ATen's CUDA kernel) and clamps as the CPU path. The two
gradient formulas are deterministic: staged through the host (``host_staged``).
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .composite import record
from .elementwise_call import broadcast_shapes
from .functional_args import _no_derivative
from .host_staged import host_staged
from .out import _RESIZE_WARNING

__all__ = ["_standard_gamma", "_standard_gamma_grad", "_sample_dirichlet", "_dirichlet_grad"]


def _tensor_arg(fname, name, pos, t):
    if not isinstance(t, Tensor):
        what = type(t).__name__
        raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be Tensor, "
                        f"not {what}")
    return t


def _host(fname, *tensors):
    """For samplers with no device kernel (random_poisson): a CUDA tensor raises, naming the
    function (drawing on the host would use the CPU generator's stream)."""
    for t in tensors:
        if t._data.__class__ is not np.ndarray:
            raise NotImplementedError(f"{fname}: jitgrad has no CUDA kernel for it (it samples "
                                      "or differentiates on the CPU only); call it on a .cpu() "
                                      "tensor")


def _device_gammas(input, generator):
    """Gamma(alpha, 1) samples of a CUDA ``input`` from the CUDA generator (a CudaArray), or
    None for a CPU tensor."""
    if input._data.__class__ is np.ndarray:
        return None
    from .random_factories import _cuda_rng
    return _cuda_rng(generator).standard_gamma(input._data)


def _float_kernel(kernel, t):
    if t.dtype not in (D.float32, D.float64):
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_name(t.dtype)}'")


def _same_dtype(first, *others):
    for t in others:
        if t.dtype != first.dtype:
            raise RuntimeError(f"Found dtype {D.scalar_name(t.dtype)} but expected "
                               f"{D.scalar_name(first.dtype)}")


def _gen(generator):
    from .. import random as R
    return generator._impl if generator is not None else R.default_generator()


def _standard_gamma_backward(node, g):
    return (g * _standard_gamma_grad(node.saved("self"), node.saved("result")),)


def _standard_gamma(input, generator=None):
    """``torch._standard_gamma(alpha)``: Gamma(alpha, 1) samples, one per element."""
    from .._random_gamma import standard_gamma
    _tensor_arg("_standard_gamma", "input", 1, input)
    _float_kernel("gamma_cpu", input)
    res = _device_gammas(input, generator)
    if res is None:
        res = standard_gamma(_gen(generator), input._data)
    return record("StandardGammaBackward0", (input,), res, _standard_gamma_backward,
                  save=(("self", input),), save_outputs=(("result", 0),))


def _normalized(gam):
    """Dirichlet rows from gamma samples: ``gam / gam.sum(-1)`` (ATen's CUDA kernel), clamped
    to [tiny, the float below 1] as the CPU path's ratios are."""
    from ..autograd.grad_mode import no_grad
    fi = np.finfo(gam._data.dtype)
    with no_grad():
        ratio = gam / gam.sum(-1, keepdim=True)
        return ratio.clamp(float(fi.tiny), float(1.0 - fi.epsneg))


def _broadcast_to_first(fname, first, *others):
    """TensorIterator's broadcast of the inputs; the output (allocated with the first input's
    shape) is resized, with PyTorch's warning, when the broadcast shape is larger."""
    shape = broadcast_shapes(*[tuple(t._data.shape) for t in (first,) + others])
    if shape != tuple(first._data.shape):
        warnings.warn(_RESIZE_WARNING.format(old=list(first._data.shape), new=list(shape)),
                      UserWarning, stacklevel=3)
    return [np.broadcast_to(t._data, shape) for t in (first,) + others]


def _standard_gamma_grad_backward(node, *grads):
    raise NotImplementedError("the derivative for '_standard_gamma_grad' is not implemented.")


@host_staged
def _standard_gamma_grad(self, output):
    """``torch._standard_gamma_grad(alpha, x)``: d x / d alpha of a Gamma(alpha, 1) sample x
    (ATen's ``standard_gamma_grad_one``). Differentiable in neither argument (backward raises
    for ``self``; ``output`` gets no edge)."""
    from .gamma_grad_kernels import standard_gamma_grad
    _tensor_arg("_standard_gamma_grad", "self", 1, self)
    _tensor_arg("_standard_gamma_grad", "output", 2, output)
    _float_kernel("_standard_gamma_grad_cpu", self)
    _same_dtype(self, output)
    a, x = _broadcast_to_first("_standard_gamma_grad", self, output)
    res = standard_gamma_grad(a, x)
    return record("StandardGammaGradBackward0", (self,), res, _standard_gamma_grad_backward)


def _sample_dirichlet(input, generator=None):
    """``torch._sample_dirichlet(alpha)``: Dirichlet samples along the last dimension."""
    from .._random_gamma import sample_dirichlet
    _tensor_arg("_sample_dirichlet", "input", 1, input)
    _float_kernel("dirichlet", input)
    gam = _device_gammas(input, generator)
    if gam is None:
        res = Tensor._make(sample_dirichlet(_gen(generator), input._data))
    else:
        res = _normalized(Tensor._make(gam))
    return _no_derivative("_sample_dirichlet", res, (input,))


@host_staged
def _dirichlet_grad(x, alpha, total):
    """``torch._dirichlet_grad(x, alpha, total)``: ATen's ``dirichlet_grad_one`` per element
    (the reparameterization gradient of a Beta(alpha, total - alpha) sample, scaled by
    1 / (1 - x)); not differentiable."""
    from .gamma_grad_kernels import dirichlet_grad
    for pos, (name, t) in enumerate((("x", x), ("alpha", alpha), ("total", total)), 1):
        _tensor_arg("_dirichlet_grad", name, pos, t)
    _float_kernel("_dirichlet_grad_cpu", x)
    _same_dtype(x, alpha, total)
    arrays = _broadcast_to_first("_dirichlet_grad", x, alpha, total)
    res = Tensor._make(dirichlet_grad(*arrays))
    return _no_derivative("_dirichlet_grad", res, (x, alpha, total))
