"""``torch.index_reduce`` / ``Tensor.index_reduce(_)``: prod/mean/amax/amin of ``source``'s
slices into ``input``'s slices along ``dim`` at a 1-D ``index`` (``include_self=False``: the
reduced-into slices of ``input`` take no part), PyTorch's beta op.

It is ``scatter_reduce`` with the index broadcast over ``source`` along ``dim`` (ATen reduces in
the same order), shown as one IndexReduceBackward0 node whose backward differentiates that
composition: derivatives.yaml's index_reduce_backward is scatter_reduce_backward with
index_select for gather, so the gradients agree, on either device. The checks and messages are
ATen's (index_func_meta_impl, then the reduction), made before any work. CUDA tensors: all but
reduce='prod' (NotImplementedError: the device scatter does not multiply)."""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from .parser_errors import parser_type_name

__all__ = ["index_reduce"]

_REDUCTIONS = ("prod", "mean", "amax", "amin")
_warned = False


def _word(dt):
    return D.scalar_name(dt)


def _checks(input, dim, index, source, reduce):
    from .reduce_args import _wrap
    for arg, pos, t in (("input", 1, input), ("index", 3, index), ("source", 4, source)):
        if not isinstance(t, Tensor):
            raise TypeError(f"index_reduce(): argument '{arg}' (position {pos}) must be Tensor, "
                            f"not {parser_type_name(t)}")
    d = _wrap(dim, max(input.ndim, 1))
    if index.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector, but got dim: "
                         f"{index.ndim} with type: {_word(index.dtype)} and size: "
                         f"{list(index.shape)}")
    if index.dtype not in (D.int32, D.int64):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{_word(index.dtype)}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"index_reduce_(): self ({_word(input.dtype)}) and source "
                           f"({_word(source.dtype)}) must have the same scalar type")
    n_src = source.shape[d] if source.ndim else 1
    if index.numel() != n_src:
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be "
                           f"equal to source.size(dim): ({n_src}), for dim: {d}")
    if max(input.ndim, 1) != max(source.ndim, 1) or any(
            a != b for i, (a, b) in enumerate(zip(input.shape, source.shape)) if i != d):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(input.shape)} "
                           f"source.shape = {list(source.shape)}")
    if reduce not in _REDUCTIONS:
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    if index._data.__class__ is np.ndarray and index.numel():
        i = index._data
        if i.min() < 0 or i.max() >= (input.shape[d] if input.ndim else 1):
            raise IndexError("index out of range in self")
    return d


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    global _warned
    d = _checks(input, dim, index, source, reduce)
    if reduce == "prod" and input.is_cuda:  # the device scatter has no multiplying reduction
        from .._cuda_array import unsupported
        raise unsupported("index_reduce with reduce='prod'")
    if not _warned:  # ATen's TORCH_WARN_ONCE
        _warned = True
        warnings.warn("index_reduce() is in beta and the API may change at any time. "
                      "(Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/"
                      "TensorAdvancedIndexing.cpp:1523.)", UserWarning, stacklevel=2)
    from .composite import record_composition
    from .gather_scatter import scatter_reduce

    def build(x, src):
        x1 = x.reshape(1) if x.ndim == 0 else x
        s1 = src.reshape(1) if src.ndim == 0 else src
        view = [1] * s1.ndim
        view[d] = -1
        idx = index.long().reshape(view).expand(tuple(s1.shape))
        out = scatter_reduce(x1, d, idx, s1, reduce, include_self=include_self)
        return out.reshape(()) if x.ndim == 0 else out
    if not include_self and index.dtype is D.int32 and grad_mode.is_grad_enabled() and (
            input.requires_grad or source.requires_grad):
        # ATen's backward zeroes the reduced-into slices with index_fill, which refuses an
        # int32 index: the backward raises
        from .composite import record
        with grad_mode.no_grad():
            out = build(input, source)
        return record("IndexReduceBackward0", (input, source), out._data, _int32_backward)
    return record_composition("IndexReduceBackward0", (input, source), build)


def _int32_backward(node, g):
    raise IndexError("index_fill_(): Expected dtype int64 for index.")


def _index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    from . import inplace
    return inplace.apply_inplace(self, index_reduce, dim, index, source, reduce,
                                 include_self=include_self)


def install():
    """``x.index_reduce(...)`` and ``x.index_reduce_(...)``."""
    def method(self, dim, index, source, reduce, *, include_self=True):
        return index_reduce(self, dim, index, source, reduce, include_self=include_self)
    method.__name__ = "index_reduce"
    _index_reduce_.__name__ = "index_reduce_"
    Tensor.index_reduce = method
    Tensor.index_reduce_ = _index_reduce_
