"""Indexing's public namespace: ``x[key]`` (ints, slices with steps, None, Ellipsis, int/bool
tensors), ``x[key] = v`` recorded as CopySlices, gather, scatter, index_select, masked_fill.

Reading ``x[key]`` and "embedding g into zeros at key" are each other's VJPs, so gradients of any
order flow through indexing.

The code lives by topic: ``index_keys`` (key normalisation, classification, bounds checks),
``index_getitem`` (reads and their VJP), ``index_setitem`` (writes: setitem, index_put),
``index_masked`` (masked_fill/select, nonzero), ``gather_scatter`` and ``index_dim`` (one
index tensor along a dim), ``index_cuda`` (the CUDA half). Callers import from here.
"""
from __future__ import annotations

# ----------------------------------------------------------------------------- gather & co
# (ops/gather_scatter.py and ops/index_dim.py; re-exported here, where callers look for them)
from .gather_scatter import (
    gather,
    scatter,
    scatter_add,
    scatter_into_zeros,
    scatter_reduce,
    take_along_dim,
)
from .index_dim import index_add, index_copy, index_fill, index_select, put, take

# ----------------------------------------------------------------------------- by topic
# the helpers other modules imported from here before the split stay importable from here
from .index_getitem import _getitem_backward, getitem, index_embed  # noqa: F401
from .index_keys import _is_basic, _mask_ndim, _np_key, sequence_key  # noqa: F401
from .index_masked import argwhere, masked_fill, masked_select, nonzero
from .index_setitem import (  # noqa: F401
    _broadcast_error,
    check_inplace,
    index_put,
    raise_after_shape_check,
    setitem,
)

__all__ = ["getitem", "setitem", "gather", "scatter", "scatter_add", "scatter_reduce",
           "index_select", "index_copy", "index_fill", "take", "put", "masked_fill",
           "masked_select", "nonzero", "scatter_into_zeros", "index_add", "take_along_dim",
           "index_put", "argwhere"]
