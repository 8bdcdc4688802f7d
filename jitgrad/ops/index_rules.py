"""One place for the checks every op that takes an index tensor makes: which index dtypes it
accepts, whether negative indices wrap, and PyTorch's error (type and words) for each.

PyTorch has no single rule: ``gather``/``scatter*``/``index_add``/``index_copy``/
``index_select``/``embedding`` and loss targets refuse negative indices, while ``take``,
``put_``, ``index_fill`` and advanced indexing (``x[idx]``, ``index_put_``) read ``-1`` as the
last element. An op names its :class:`IndexRule` (``RULES``) and calls :func:`index_data` (the
dtype check) and :func:`check_range` (the values). On the CPU the range check is a vectorized
min/max before anything is written; on CUDA it needs the values, which live on the device, so
:func:`device_check` hands the kernel a code instead: the kernel skips an out-of-range element
and raises a device-side flag that the next synchronizing point turns into this same error
(``backends/cuda_kernels/bounds.py``, docs/cuda-tensors.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .parser_errors import parser_type_name

__all__ = ["IndexRule", "RULES", "index_data", "check_range", "device_check", "range_error",
           "dtype_word"]

_INT32_64 = (D.int64, D.int32)
_INT64 = (D.int64,)


@dataclass(frozen=True)
class IndexRule:
    """``bounds``/``dtype``: (exception class, message template). Templates may use
    ``{index}``, ``{dim}``, ``{size}`` (the first bad index in C order, the dimension, its size)
    and ``{got}`` (the index dtype's PyTorch scalar name: Float, Int, ...)."""

    dtypes: tuple
    dtype_error: tuple
    negatives: bool
    bounds_error: tuple


_OOB = "index {index} is out of bounds for dimension {dim} with size {size}"
_TAKE_OOB = "out of range: tried to access index {index} on a tensor of {size} elements."

RULES = {
    "gather": IndexRule(_INT32_64, (RuntimeError, "gather(): Expected dtype int32/int64 for "
                                                  "index"), False, (RuntimeError, _OOB)),
    "scatter": IndexRule(_INT32_64, (RuntimeError, "scatter(): Expected dtype int32/int64 for "
                                                   "index"), False, (RuntimeError, _OOB)),
    "index_select": IndexRule(_INT32_64, (RuntimeError, "index_select(): Expected dtype int32 "
                                                        "or int64 for index"), False,
                              (IndexError, "index out of range in self")),
    "index_add": IndexRule(_INT32_64, (RuntimeError, "index_add_(): Expected dtype int32/int64 "
                                                     "for index but got: {got}"), False,
                           (RuntimeError, _OOB)),
    # PyTorch's CPU kernels word the same range error differently by code path: index_add_
    # runs scatter_add (first or last dim of 2+, alpha 1, int64 index: the message above) or
    # a loop ("index out of range in self"); index_select along dim 1 of 2+ dims runs a
    # batched copy with its own check
    "index_add_loop": IndexRule(_INT32_64, (RuntimeError, "index_add_(): Expected dtype "
                                                          "int32/int64 for index but got: {got}"),
                                False, (IndexError, "index out of range in self")),
    "index_select_dim1": IndexRule(_INT32_64, (RuntimeError, "index_select(): Expected dtype "
                                                             "int32 or int64 for index"), False,
                                   (RuntimeError, "INDICES element is out of DATA bounds, "
                                                  "id={index} axis_dim={size}")),
    "index_copy": IndexRule(_INT64, (RuntimeError, "index_copy_(): Expected a long tensor for "
                                                   "index, but got {got}"), False,
                            (IndexError, "index_copy_(): " + _OOB)),
    "index_fill": IndexRule(_INT64, (IndexError, "index_fill_(): Expected dtype int64 for "
                                                 "index."), True, (IndexError, _OOB)),
    "take": IndexRule(_INT64, (RuntimeError, "take(): Expected a long tensor for index, but got "
                                             "{got}"), True, (IndexError, _TAKE_OOB)),
    "put": IndexRule(_INT64, (RuntimeError, "put_(): Expected a long tensor for index, but got "
                                            "{got}"), True, (IndexError, _TAKE_OOB)),
    # x[idx], x[idx] = v, index_put_: the dimension is counted among the index tensors
    "advanced": IndexRule((D.int64, D.int32), (IndexError, "tensors used as indices must be "
                                                           "long, int, byte or bool tensors"),
                          True, (IndexError, _OOB)),
    "embedding": IndexRule(_INT32_64, (RuntimeError, "Expected tensor for argument #1 'indices' "
                                                     "to have one of the following scalar "
                                                     "types: Long, Int; but got {got} instead "
                                                     "(while checking arguments for embedding)"),
                           False, (IndexError, "index out of range in self")),
    "nll_target": IndexRule((D.int64, D.uint8), (RuntimeError, "expected target dtype to be "
                                                               "Long or Byte, but got {got}"),
                            False, (IndexError, "Target {index} is out of bounds.")),
}


def dtype_word(dtype) -> str:
    """PyTorch's scalar type name (Float, Int, Bool, ...)."""
    return D.scalar_name(dtype)


def index_data(index, rule: str, position=None):
    """The index tensor's storage (NumPy or CUDA), after the rule's dtype check. ``position``:
    the index argument's place in the call, for PyTorch's TypeError (3 in
    ``torch.index_select(x, 0, i)``, 2 in ``x.index_select(0, i)``)."""
    r = RULES[rule]
    if not isinstance(index, Tensor):
        where = f" (position {position})" if position else ""
        raise TypeError(f"{rule}(): argument 'index'{where} must be Tensor, not "
                        f"{parser_type_name(index)}")
    if index.dtype not in r.dtypes:
        exc, msg = r.dtype_error
        raise exc(msg.format(got=dtype_word(index.dtype)))
    return index._data


def range_error(rule: str, index: int, dim: int, size: int) -> Exception:
    exc, msg = RULES[rule].bounds_error
    return exc(msg.format(index=int(index), dim=int(dim), size=int(size)))


def check_range(idx, size: int, dim: int, rule: str) -> np.ndarray | None:
    """Raise the rule's error for the first index (C order) outside ``[0, size)`` (or
    ``[-size, size)`` where the rule takes negatives). CPU arrays only: returns ``idx`` as
    int64 with negatives wrapped (ready for NumPy); CUDA arrays return None (checked by the
    kernel, :func:`device_check`)."""
    if idx.__class__ is not np.ndarray:
        return None
    idx = idx.astype(np.int64, copy=False)
    if idx.size == 0:
        return idx
    lo = -size if RULES[rule].negatives else 0
    if idx.min() < lo or idx.max() >= size:
        bad = idx[(idx < lo) | (idx >= size)]
        raise range_error(rule, bad.flat[0], dim, size)
    if lo < 0 and idx.min() < 0:
        idx = np.where(idx < 0, idx + size, idx)
    return idx


def device_check(rule: str, dim: int):
    """The (code, allow_negatives, dim) triple a CUDA index kernel checks its indices with."""
    from ..backends.cuda_kernels import bounds
    r = RULES[rule]
    return bounds.check_args(r.bounds_error, r.negatives, dim)
