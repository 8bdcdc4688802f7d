"""Triangles and diagonals: tril/triu, tril_indices/triu_indices, diag, diag_embed, diagflat.

Written over registered ops and the strided-write helpers of ``shape_strided.py``, so one body
serves the CPU and CUDA. Node names are PyTorch's: TrilBackward0/TriuBackward0, DiagEmbedBackward0
(diag of a vector, diag_embed, diagflat) and DiagonalBackward0_copy (diag of a matrix).
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..tensor import Tensor
from .composite import record, record_composition
from .out import with_out
from .parser_errors import parser_type_name


def _exact_out(name):
    """out= of tril/triu must have the result's dtype exactly (PyTorch's words)."""
    return with_out(name, "exact", cast_error=lambda src, dst: RuntimeError(
        f"Expected out tensor to have dtype {D.c_name(src)}, but got {D.c_name(dst)} instead"))

__all__ = ["tril", "triu", "tril_indices", "triu_indices", "diag", "diag_embed", "diagflat"]


def _triangle_mask(rows, cols, k, lower, device):
    """Bool (rows, cols): True on and below (``lower``) / above the ``k``-th diagonal."""
    from .basic import arange
    offset = arange(cols, device=device).reshape((1, cols)) - arange(
        rows, device=device).reshape((rows, 1))
    return offset <= k if lower else offset >= k


def _triangle(input, diagonal, lower):
    from .basic import full
    from .functional import where
    name = "tril" if lower else "triu"
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(input)}")
    if input.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    if isinstance(diagonal, bool) or not isinstance(diagonal, (int, np.integer)):
        raise TypeError(f"{name}(): argument 'diagonal' (position 2) must be int, not "
                        f"{parser_type_name(diagonal)}")
    if input._data.__class__ is np.ndarray:  # NumPy's own triangle on the CPU
        data = (np.tril if lower else np.triu)(input._data, int(diagonal))
    else:
        rows, cols = input.shape[-2:]
        mask = _triangle_mask(rows, cols, int(diagonal), lower, input.device)
        zero = full((), 0, dtype=input.dtype, device=input.device)
        data = where(mask, input.detach(), zero)._data
    return record("TrilBackward0" if lower else "TriuBackward0", (input,), data,
                  lambda node, g: (_triangle(g, diagonal, lower),))


@_exact_out("tril")
def tril(input, diagonal=0):
    """The lower triangle of the last two dims (on and below the ``diagonal``-th), zeros
    elsewhere."""
    return _triangle(input, diagonal, True)


@_exact_out("triu")
def triu(input, diagonal=0):
    """The upper triangle of the last two dims (on and above the ``diagonal``-th)."""
    return _triangle(input, diagonal, False)


def _indices(name, row, col, offset, dtype, device, lower):
    from .basic import tensor
    dt = D.int64 if dtype is None else D.to_dtype(dtype)
    if dt.is_floating_point or dt is D.bool_:
        raise NotImplementedError(f"\"{name}\" not implemented for '{D.scalar_name(dt)}'")
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    fn = np.tril_indices if lower else np.triu_indices
    r, c = fn(row, offset, col) if row else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    return tensor(np.stack([r, c]).astype(dt.np).reshape(2, -1), dtype=dt, device=device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None,
                 requires_grad=False):
    """Coordinates (2, N) of the lower triangle of a (row, col) matrix, row by row."""
    return _indices("tril_indices", row, col, offset, dtype, device, True)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None,
                 requires_grad=False):
    """Coordinates (2, N) of the upper triangle of a (row, col) matrix, row by row."""
    return _indices("triu_indices", row, col, offset, dtype, device, False)


def _diag_embed_backward(node, g):
    from .shape_strided import diagonal
    a = node.ctx.attrs
    return (diagonal(g, a["offset"], a["d1"], a["d2"]),)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose (dim1, dim2) ``offset``-th diagonals hold the last dim of ``input``
    (zeros elsewhere); DiagEmbedBackward0 (its gradient is that diagonal of the gradient)."""
    from .._storage import as_strided as _strided
    from .._storage import elem_strides as _elem_strides
    from .basic import zeros
    from .shape_args import _wrap
    from .shape_strided import _diag_geometry, _write
    nd = input.ndim + 1
    d1, d2 = _wrap(dim1, nd, "diag_embed"), _wrap(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] if input.ndim else 1
    m = n + abs(int(offset))
    rest = iter(input.shape[:-1])
    shape = tuple(m if i in (d1, d2) else next(rest) for i in range(nd))
    out = zeros(shape, dtype=input.dtype, device=input.device)._data
    dshape, st, off = _diag_geometry(shape, _elem_strides(out), int(offset), d1, d2)
    _write(_strided(out, dshape, st, off), input._data.reshape(dshape))
    return record("DiagEmbedBackward0", (input,), out, _diag_embed_backward,
                  attrs={"offset": int(offset), "d1": d1, "d2": d2})


def diag(input, diagonal=0):
    """A vector's square matrix (DiagEmbedBackward0) or a matrix's ``diagonal``-th diagonal
    as a new vector (DiagonalBackward0_copy)."""
    from .shape_strided import diagonal as diagonal_view
    if not isinstance(input, Tensor):
        raise TypeError(f"diag(): argument 'input' (position 1) must be Tensor, not "
                        f"{parser_type_name(input)}")
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    return record_composition("DiagonalBackward0_copy", (input,),
                              lambda x: diagonal_view(x, diagonal).clone())


def diagflat(input, offset=0):
    """``diag`` of the flattened input (a square matrix)."""
    return diag_embed(input.reshape(-1), offset, 0, 1)
