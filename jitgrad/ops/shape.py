"""torch's shape ops as one namespace: the names ``jitgrad/__init__`` and ``ops/methods`` bind.

The ops live by topic (import them from there inside the package):
``shape_views`` (reshape/view/squeeze/unsqueeze/permute/transpose/movedim/t/contiguous),
``shape_expand`` (expand/expand_as/broadcast_to/broadcast_tensors),
``shape_join`` (cat/stack and friends, split/chunk/tensor_split/unbind, narrow/select),
``shape_copies`` (flip/roll/repeat/tile), ``shape_strided`` (diagonal, unfold) and
``shape_args`` (the int/dim/size-list argument rules they share).
"""
from __future__ import annotations

from .shape_args import function_form
from .shape_copies import flip, fliplr, flipud, repeat, roll, tile
from .shape_join import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    cat,
    chunk,
    column_stack,
    concat,
    concatenate,
    dsplit,
    dstack,
    hsplit,
    hstack,
    narrow,
    narrow_method,  # noqa: F401 - Tensor.narrow (ops/methods)
    row_stack,
    select,
    split,
    split_with_sizes,
    stack,
    tensor_split,
    unbind,
    vsplit,
    vstack,
)
from .shape_strided import diagonal, unfold
from .shape_views import (
    H,
    adjoint,
    broadcast_tensors,
    broadcast_to,
    contiguous,
    expand,
    expand_as,
    flatten,
    matrix_H,
    matrix_T,
    moveaxis,
    moveaxis_method,  # noqa: F401 - Tensor.moveaxis (ops/methods)
    movedim,
    movedim_method,  # noqa: F401 - Tensor.movedim (ops/methods)
    numpy_T,
    permute,
    ravel,
    reshape,
    reshape_as,
    squeeze,
    squeeze_method,  # noqa: F401 - Tensor.squeeze (ops/methods)
    swapaxes,
    swapdims,
    t,
    transpose,
    unflatten,
    unsqueeze,
    view,
    view_as,
)

__all__ = ["reshape", "view", "flatten", "unflatten", "squeeze", "unsqueeze", "expand",
           "expand_as", "broadcast_to", "permute", "transpose", "swapaxes", "swapdims", "t",
           "cat", "concat", "concatenate", "stack", "split", "split_with_sizes", "chunk",
           "tensor_split", "hsplit", "vsplit", "dsplit", "unbind", "contiguous", "movedim",
           "moveaxis", "flip", "fliplr", "flipud", "repeat", "broadcast_tensors", "tile",
           "view_as", "reshape_as", "hstack", "vstack", "row_stack", "dstack", "column_stack",
           "narrow", "select", "atleast_1d", "atleast_2d", "atleast_3d", "roll", "ravel",
           "diagonal", "unfold", "numpy_T", "matrix_T", "matrix_H", "H", "adjoint"]


# torch.<op>'s function forms: one sequence argument, no varargs (the methods keep varargs)
torch_permute = function_form(permute, "permute", "dims")
torch_reshape = function_form(reshape, "reshape", "shape")
torch_tile = function_form(tile, "tile", "dims")
torch_flip = function_form(flip, "flip", "dims")
