"""Helpers shared by the distributions (PyTorch's ``torch/distributions/utils.py``)."""
from __future__ import annotations

from functools import update_wrapper

import numpy as np

import jitgrad as torch

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "BinaryProbs",
           "set_probs_or_logits", "expand_probs", "lazy_property", "tril_matrix_to_vec",
           "vec_to_tril_matrix"]

# torch.types._Number: a bool is a number here too
_Number = (int, float, bool)


def _finfo(dtype):
    # torch.finfo's eps/tiny/min/max are IEEE's, which NumPy's finfo gives for the same type
    return np.finfo(dtype.np)


def broadcast_all(*values):
    """Broadcast tensors and numbers together; numbers become tensors of the first tensor's
    dtype and device (the default dtype when there is none)."""
    if not all(isinstance(v, torch.Tensor) or isinstance(v, _Number) for v in values):
        raise ValueError("Input arguments must all be instances of Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, torch.Tensor) for v in values):
        options = dict(dtype=torch.get_default_dtype())
        for value in values:
            if isinstance(value, torch.Tensor):
                options = dict(dtype=value.dtype, device=value.device)
                break
        values = [v if isinstance(v, torch.Tensor) else torch.tensor(v, **options)
                  for v in values]
    return torch.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    # ``normal_`` on a fresh tensor: the draws PyTorch makes for the same shape and dtype
    return torch.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim):
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    required_shape = value.shape[:-dim] + (-1,)
    return value.reshape(required_shape).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Log-odds (binary) or unnormalized log probabilities (last dim) to probabilities."""
    if is_binary:
        return torch.sigmoid(logits)
    return torch.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamp probabilities to ``[eps, 1 - eps]`` with the dtype's machine epsilon."""
    eps = float(_finfo(probs.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Probabilities to log-odds (binary) or log probabilities (last dim)."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return torch.log(ps_clamped) - torch.log1p(-ps_clamped)
    return torch.log(ps_clamped)


class lazy_property:
    """A property computed on first access and then stored as an instance attribute: a
    distribution built from ``probs`` computes ``logits`` only when asked (and vice versa)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        # the parameters' graph is kept even when first asked under no_grad (as PyTorch does)
        with torch.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """Looks like a property to documentation tools and like a lazy_property to argument
    validation (which skips lazy parameters not yet computed)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle of a (batch of) ``D x D`` matrix as a vector, in row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    arange = torch.arange(n, device=mat.device)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    return mat[..., tril_mask]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of :func:`tril_matrix_to_vec`."""
    # +ve root of D**2 + (1+2*diag)*D - |diag| * (diag+1) - 2*vec.shape[-1] = 0
    n = (-(1 + 2 * diag)
         + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = float(_finfo(vec.dtype).eps)
    if round(n) - n > eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be "
                         "expressed as the lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(vec.shape[:-1] + torch.Size((n, n)))
    arange = torch.arange(n, device=vec.device)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    mat[..., tril_mask] = vec
    return mat


def set_probs_or_logits(dist, probs, logits, prepare_probs=None):
    """``__init__``'s shared start for the distributions given by exactly one of ``probs`` /
    ``logits``: PyTorch's error unless exactly one is given, then that one as a tensor
    (``prepare_probs`` applied to probs) kept as ``_param`` too. Returns the batch shape,
    ``()`` for a Python number."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    if probs is not None:
        (value,) = broadcast_all(probs)
        if prepare_probs is not None:
            value = prepare_probs(value)
        dist.probs = value
    else:
        (value,) = broadcast_all(logits)
        dist.logits = value
    dist._param = value
    given = probs if probs is not None else logits
    return torch.Size() if isinstance(given, _Number) else value.size()


def expand_probs(dist, new, shape):
    """``expand``'s shared step for the distributions given by ``probs`` or ``logits``: ``new``
    gets whichever of the two ``dist`` holds (given or already computed) expanded to ``shape``,
    and the last of them as ``_param`` (what ``param_shape`` and ``_new`` follow)."""
    if "probs" in dist.__dict__:
        new.probs = dist.probs.expand(shape)
        new._param = new.probs
    if "logits" in dist.__dict__:
        new.logits = dist.logits.expand(shape)
        new._param = new.logits


class BinaryProbs:
    """``probs``/``logits`` of a distribution given by either one (a success probability):
    each computed from the other on first use, as PyTorch's Bernoulli-family classes all
    write it out; ``param_shape`` and ``_new`` follow whichever was given (``self._param``)."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)
