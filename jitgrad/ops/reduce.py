"""Reductions as one namespace: the names ``jitgrad/__init__`` and ``ops/methods`` bind.

Every reduction takes ``dim`` (int or tuple) and ``keepdim``; VJPs are written with registered
ops. The ops live by topic (import them from there inside the package): ``reduce_sums`` (sum,
mean, prod, logsumexp, all/any/count_nonzero, cumsum), ``reduce_moments`` (var, std, var_mean,
std_mean), ``reduce_extremes`` (max, min, amax, amin, aminmax, argmax, argmin), ``reduce_norm``
(norm), over ``reduce_args`` (the dim/keepdim/dtype rules and VJP attrs they share) and
``return_types`` (the named tuples). CUDA tensors take ``reduce_cuda``: the kernel layer's tree
reductions and scans composed with registered elementwise ops, so forward and backward stay on
the device without a host transfer (docs/cuda.md).
"""
from __future__ import annotations

from .reduce_args import NO_DIM  # noqa: F401 - the default dim of ops/methods' sum
from .reduce_extremes import amax, amin, aminmax, argmax, argmin, max, min
from .reduce_moments import std, std_mean, var, var_mean
from .reduce_norm import norm
from .reduce_sums import all, any, count_nonzero, cumsum, logsumexp, mean, prod, sum

# the pickles of a max/min/sort result written before return_types.py existed name this place
from .return_types import _make_return  # noqa: F401

__all__ = ["sum", "mean", "var", "std", "var_mean", "std_mean", "prod", "max", "min", "amax",
           "amin", "argmax", "argmin", "norm", "logsumexp", "all", "any", "count_nonzero",
           "cumsum", "aminmax"]
