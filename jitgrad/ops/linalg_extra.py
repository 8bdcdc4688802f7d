"""torch.linalg's compositions: matrix_power, cross (and the deprecated default dim of
torch.cross), diagonal, vander. matrix_power, diagonal and vander are written with recorded
ops, as ATen writes them, so their nodes are PyTorch's (MmBackward0/UnsafeViewBackward0,
CopyBackwards, DiagonalBackward0, CatBackward0); cross records LinalgCrossBackward0 over a
product computed with elementwise ops (CPU and CUDA alike)."""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as D
from ..autograd import grad_mode
from .composite import record
from .elementwise_call import broadcast_shapes
from .linalg_args import _tensor_arg, _write_out
from .linalg_lapack import check_square
from .linalg_matmul import matmul
from .parser_errors import parser_type_name

__all__ = ["matrix_power", "linalg_cross", "cross", "linalg_diagonal", "vander"]


def _int_arg(fname, argname, pos, n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be int, not "
                        f"{parser_type_name(n)}")
    return int(n)


# ---------------------------------------------------------------------------- matrix_power

def _matrix_power(A, n, fname):
    _tensor_arg(fname, "input", 1, A)
    n = _int_arg(fname, "n", 2, n)
    check_square("linalg.matrix_power", A)
    if n == 0:
        from .basic import eye
        # clone then copy_: the identity stays in the graph (CopyBackwards), as in ATen
        return A.clone().copy_(eye(A.shape[-1], dtype=A.dtype, device=A.device))
    if n == 1:
        return A.clone()
    from .linalg_solve import inv
    if n == -1:
        return inv(A)
    a = inv(A) if n < 0 else A
    n = abs(n)
    if n == 2:
        return matmul(a, a)
    if n == 3:
        return matmul(matmul(a, a), a)
    # ATen's binary decomposition, least significant bit first: the same products in the same
    # order, so the rounding matches
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = a if z is None else matmul(z, z)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


def matrix_power(A, n, *, out=None):
    return _write_out("linalg_matrix_power", _matrix_power(A, n, "linalg_matrix_power"), out)


def torch_matrix_power(input, n, *, out=None):
    return _write_out("matrix_power", _matrix_power(input, n, "matrix_power"), out)


# ----------------------------------------------------------------------------------- cross

def _cross_data(x, y, dim):
    """x × y along ``dim`` (shapes broadcast) with elementwise ops, as an array."""
    from .shape_join import stack
    with grad_mode.no_grad():
        x0, x1, x2 = (x.select(dim, i) for i in range(3))
        y0, y1, y2 = (y.select(dim, i) for i in range(3))
        out = stack([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0], dim)
    return out._data


def _cross_backward(node, g):
    dim = node.ctx.attrs["dim"]
    need_x, need_y = node.ctx.needs_input_grad
    return (linalg_cross(node.saved("y"), g, dim=dim) if need_x else None,
            linalg_cross(g, node.saved("x"), dim=dim) if need_y else None)


def linalg_cross(input, other, *, dim=-1, out=None):
    _tensor_arg("linalg_cross", "input", 1, input)
    _tensor_arg("linalg_cross", "other", 2, other)
    dim = _int_arg("linalg_cross", "dim", 3, dim)
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    nd = max(input.ndim, 1)
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
                         f"but got {dim})")
    d = dim % nd
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    broadcast_shapes(tuple(input.shape), tuple(other.shape))
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {D.scalar_name(input.dtype)} but found "
                           f"{D.scalar_name(other.dtype)}")
    save = []
    if other._requires_grad:
        save.append(("x", input))
    if input._requires_grad:
        save.append(("y", other))
    res = record("LinalgCrossBackward0", (input, other), _cross_data(input, other, d),
                 _cross_backward, save=tuple(save), attrs={"dim": d})
    return _write_out("linalg_cross", res, out)


_CROSS_DEPRECATED = (
    "Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
    "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to "
    "agree with that of linalg.cross in a future release. (Triggered internally at "
    "/__w/pytorch/pytorch/aten/src/ATen/native/Cross.cpp:63.)")


def cross(input, other, dim=None, *, out=None):
    """torch.cross: without ``dim``, the first dimension of ``input`` of size 3 (deprecated:
    PyTorch warns once per process; here Python's warning filters decide)."""
    _tensor_arg("cross", "input", 1, input)
    if dim is None:
        warnings.warn(_CROSS_DEPRECATED, UserWarning, stacklevel=2)
        dim = next((i for i, s in enumerate(input.shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return linalg_cross(input, other, dim=dim, out=out)


# -------------------------------------------------------------------------- diagonal, vander

def linalg_diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    from .shape import diagonal
    return diagonal(A, offset, dim1, dim2)


def vander(x, *, N=None):
    """ATen's linalg_vander: [1, x, x^2, ...] as a cumprod of x repeated, after a column of ones
    (CatBackward0)."""
    from .basic import ones
    from .cumulative import cumprod
    from .shape_join import cat
    _tensor_arg("linalg_vander", "x", 1, x)
    dt = x.dtype
    if dt.name == "bool" or (dt.is_floating_point and dt.name not in ("float32", "float64")):
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer "
                           f"tensors, but got {D.scalar_name(dt)}")
    x_ = x.unsqueeze(-1) if x.ndim == 0 else x
    shape = list(x_.shape)
    n = shape[-1] if N is None else _int_arg("linalg_vander", "N", 2, N)
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = cumprod(x_.unsqueeze(-1).expand(shape + [n - 1]), -1)
    return cat([ones(shape + [1], dtype=dt, device=x.device), powers], -1)
