"""torch.mode: the most frequent value along ``dim`` (the smallest among equally frequent ones)
and an index of it, as ``torch.return_types.mode``; ModeBackward0 puts the gradient at that
index (the selection backward of kthvalue/median). The index among equal values is the one
ATen's CPU kernel reports (_mode_kernels: its std::sort, ported). CUDA tensors are staged
through the host (``host_staged``), as kthvalue/median are."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .composite import ieee_quiet
from .host_staged import host_staged
from .out import write_out
from .parser_errors import parser_type_name
from .reduce_args import _wrap
from .return_types import _return_type
from .sort import _record_selection

__all__ = ["mode"]

ModeResult = _return_type("mode")
ModeOutResult = _return_type("mode_out")


def _mode_indices(a, d):
    """int64 indices of the mode along axis ``d`` of the ndarray ``a`` (size > 0 there)."""
    from ._mode_kernels import mode_rows
    rows = np.moveaxis(a, d, -1)
    lead = rows.shape[:-1]
    rows = rows.reshape(-1, rows.shape[-1])
    if rows.dtype == np.float16:  # exact and order-preserving; Numba has no float16 compares
        rows = rows.astype(np.float32)
    elif rows.dtype == np.bool_:
        rows = rows.astype(np.uint8)
    idx = np.zeros(rows.shape[0], np.int64)
    if rows.shape[0]:
        mode_rows(np.ascontiguousarray(rows), idx)
    return idx.reshape(lead)


@ieee_quiet
def mode(input, dim=-1, keepdim=False, *, out=None):
    """``torch.mode``: (values, indices) of the most frequent value along ``dim``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"mode(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(input)}")
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"mode(): argument 'dim' (position 2) must be int, not "
                        f"{parser_type_name(dim)}")
    res = _mode(input, dim, keepdim)
    if out is None:
        return res
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"mode(): argument 'out' must be tuple of Tensors, not "
                        f"{parser_type_name(out)}")
    vo, io = out
    for t, want, what in ((vo, input.dtype, "values"), (io, D.int64, "indices")):
        if t.dtype is not want:
            raise RuntimeError(f"expected scalar type '{D.scalar_name(want)}' but got "
                               f"'{D.scalar_name(t.dtype)}' for {what} output")
    return ModeOutResult(write_out("mode", res.values, vo, (input,), cast="exact"),
                         write_out("mode", res.indices, io, (input,), cast="exact"))


@host_staged
def _mode(input, dim, keepdim):
    a = input._data
    d = _wrap(dim, a.ndim)
    if a.ndim and a.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    if a.ndim == 0:
        res = _record_selection("ModeBackward0", input, a.copy(), np.zeros((), np.int64), 0,
                                True, ModeResult)
    else:
        idx = _mode_indices(a, d)
        vals = np.take_along_axis(a, np.expand_dims(idx, d), d)
        if keepdim:
            idx = np.expand_dims(idx, d)
        else:
            vals = np.squeeze(vals, d)
        res = _record_selection("ModeBackward0", input, vals, idx, d, keepdim, ModeResult)
    return res
