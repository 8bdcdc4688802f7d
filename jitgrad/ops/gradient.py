"""``torch.gradient``: second-order central differences inside, first- or second-order one-sided
differences at the edges, along each requested dim; ATen's ``gradient`` overloads
(ReduceOps.cpp) replayed op for op (slices, arithmetic, ``cat`` of prepend/center/append), so
values, dtypes (an integer input divides into the default float dtype), the CatBackward0
nodes, gradients and both devices come from those ops.

``spacing`` is a number (the same step on every dim), a list of numbers (one per dim) or a
list of 1-D coordinate tensors (one per dim: the non-uniform formula); ``dim`` an int or a
list of ints. The checks and their messages are ATen's ``pre_check_gradient``, in its order.
"""
from __future__ import annotations

import numbers

from ..tensor import Tensor
from .parser_errors import parser_type_name

__all__ = ["gradient"]

_SIGNATURES = (
    " * (Tensor input, *, tuple of ints dim, int edge_order = 1)\n"
    " * (Tensor input, *, Number spacing, tuple of ints dim, int edge_order = 1)\n"
    " * (Tensor input, *, Number spacing = None, int dim = None, int edge_order = 1)\n"
    " * (Tensor input, *, tuple of Scalars spacing, int dim = None, int edge_order = 1)\n"
    " * (Tensor input, *, tuple of Scalars spacing, tuple of ints dim, int edge_order = 1)\n"
    " * (Tensor input, *, tuple of Tensors spacing, int dim = None, int edge_order = 1)\n"
    " * (Tensor input, *, tuple of Tensors spacing, tuple of ints dim, int edge_order = 1)\n")


def _bad_call(input, spacing, dim, edge_order):
    got = [parser_type_name(input)]
    if dim is not None:
        got.append(f"dim={parser_type_name(dim)}")
    if edge_order != 1:
        got.append(f"edge_order={parser_type_name(edge_order)}")
    if spacing is not None:
        got.append(f"spacing={parser_type_name(spacing)}")
    return TypeError(f"gradient() received an invalid combination of arguments - got "
                     f"({', '.join(got)}), but expected one of:\n{_SIGNATURES}")


def _is_number(v):
    return isinstance(v, numbers.Number)


def _slice(t, d, start, end=None):
    return t[(slice(None),) * d + (slice(start, end),)]


def _cat(prepend, center, append, d):
    from .shape_join import cat
    return cat([prepend, center, append], d)


def _uniform(x, d, h, edge_order):
    """ATen's gradient_helper_float for one dim: a scalar step ``h``."""
    center = (_slice(x, d, 2) - _slice(x, d, 0, -2)) / h
    if edge_order == 1:
        prepend = (_slice(x, d, 1, 2) - _slice(x, d, 0, 1)) / h
        append = (_slice(x, d, -1) - _slice(x, d, -2, -1)) / h
    else:
        prepend = (_slice(x, d, 0, 1) * -1.5 + _slice(x, d, 1, 2) * 2
                   - _slice(x, d, 2, 3) * 0.5) / h
        append = (_slice(x, d, -3, -2) * 0.5 + _slice(x, d, -2, -1) * -2
                  + _slice(x, d, -1) * 1.5) / h
    return _cat(prepend, center / 2, append, d)


def _coordinates(x, d, coords, edge_order):
    """ATen's gradient_helper for one dim: the sample coordinates along it."""
    if coords.dim() != 1:
        raise RuntimeError("torch.gradient expected each element of spacing to have one "
                           f"dimension, but got an element with {coords.dim()} dimensions!")
    shp = [1] * x.dim()
    shp[d] = -1
    ax_dx = coords.diff(1, 0)
    dx1, dx2 = ax_dx[0:-1], ax_dx[1:]
    a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shp)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shp)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shp)
    center = a * _slice(x, d, 0, -2) + b * _slice(x, d, 1, -1) + c * _slice(x, d, 2)
    if edge_order == 1:
        prepend = (_slice(x, d, 1, 2) - _slice(x, d, 0, 1)) / ax_dx[0]
        append = (_slice(x, d, -1) - _slice(x, d, -2, -1)) / ax_dx[-1]
    else:
        h0, h1 = ax_dx[0], ax_dx[1]
        a = -(2.0 * h0 + h1) / (h0 * (h0 + h1))
        b = (h0 + h1) / (h0 * h1)
        c = (-h0) / (h1 * (h0 + h1))
        prepend = a * _slice(x, d, 0, 1) + b * _slice(x, d, 1, 2) + c * _slice(x, d, 2, 3)
        hl, hp = ax_dx[-1], ax_dx[-2]
        a = hl / (hp * (hl + hp))
        b = -(hl + hp) / (hl * hp)
        c = (2 * hl + hp) / (hl * (hl + hp))
        append = a * _slice(x, d, -3, -2) + b * _slice(x, d, -2, -1) + c * _slice(x, d, -1)
    return _cat(prepend, center, append, d)


def _dims(x, dim):
    """``dim`` wrapped (an int -> one dim); None: every dim."""
    from .reduce_args import _wrap
    if dim is None:
        return list(range(x.dim())), False
    if isinstance(dim, int) and not isinstance(dim, bool):
        return [_wrap(dim, x.dim())], True
    dims = [_wrap(int(d), x.dim()) for d in dim]
    for i, d in enumerate(dims):
        if d in dims[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return dims, True


def gradient(input, *, spacing=None, dim=None, edge_order=1):
    """``torch.gradient(input, *, spacing=1, dim=None, edge_order=1)`` -> tuple of Tensors."""
    if not isinstance(input, Tensor) or not isinstance(edge_order, int) or isinstance(
            spacing, (Tensor, str)) or isinstance(dim, (float, str, Tensor)):
        raise _bad_call(input, spacing, dim, edge_order)
    from .. import _dtype as D
    if input.dtype is D.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    dims, dim_given = _dims(input, dim)
    if spacing is None:
        steps, given = [1.0] * len(dims), None
    elif _is_number(spacing):
        steps, given = [spacing] * len(dims), len(dims)
    else:
        steps = list(spacing)
        given = len(steps)
        kinds = {isinstance(s, Tensor) for s in steps}
        if len(kinds) > 1 or not (kinds == {True} or all(_is_number(s) for s in steps)):
            raise _bad_call(input, spacing, dim, edge_order)
    if given is not None and not dim_given and given != input.dim():
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
            f"equal to 'self.dim() = {input.dim()}', since dim argument was not given, but "
            f"got a list of length {given}")
    if given is not None and dim_given and given != len(dims):
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar or it's spacing and "
            f"dim arguments to have the same length, but got a spacing argument of length "
            f"{given} and a dim argument of length {len(dims)}.")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    if steps and isinstance(steps[0], Tensor):
        return tuple(_coordinates(input, d, c, edge_order) for d, c in zip(dims, steps))
    return tuple(_uniform(input, d, h, edge_order) for d, h in zip(dims, steps))
