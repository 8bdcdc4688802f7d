"""torch.linalg: the products, norms, LU/Cholesky solvers (ops/linalg_solve.py, the LU family
in ops/linalg_lu.py, LDL in ops/linalg_ldl.py), orthogonal decompositions
(ops/linalg_decomp.py) and compositions (ops/linalg_extra.py, cond/tensorinv/tensorsolve in
ops/linalg_cond.py) jitgrad implements; matrix norms that need singular values raise
NotImplementedError."""
from __future__ import annotations

from .ops.linalg_args import _write_out
from .ops.linalg_cond import cond, tensorinv, tensorsolve
from .ops.linalg_contract import vecdot
from .ops.linalg_decomp import eigh, eigvalsh, lstsq, matrix_rank, pinv, qr, svd, svdvals
from .ops.linalg_extra import linalg_cross as cross
from .ops.linalg_extra import linalg_diagonal as diagonal
from .ops.linalg_extra import matrix_power, vander
from .ops.linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve
from .ops.linalg_lu import lu, lu_factor, lu_factor_ex, lu_solve
from .ops.linalg_matmul import matmul, multi_dot
from .ops.linalg_orth import householder_product, matrix_exp
from .ops.linalg_solve import (
    LinAlgError,
    cholesky,
    cholesky_ex,
    det,
    inv,
    inv_ex,
    solve,
    solve_ex,
    solve_triangular,
)
from .ops.linalg_solve import linalg_slogdet as slogdet
from .ops.parser_errors import parser_type_name
from .ops.reduce_norm import norm as _vector_norm
from .tensor import Tensor

__all__ = ["matmul", "multi_dot", "vecdot", "vector_norm", "matrix_norm", "norm", "inv", "inv_ex",
           "det", "slogdet", "solve", "solve_ex", "cholesky", "cholesky_ex", "solve_triangular",
           "matrix_power", "cross", "diagonal", "vander", "LinAlgError", "qr", "eigh", "eigvalsh",
           "svd", "svdvals", "pinv", "matrix_rank", "lstsq", "householder_product", "matrix_exp",
           "lu", "lu_factor", "lu_factor_ex", "lu_solve", "cond", "tensorinv", "tensorsolve",
           "ldl_factor", "ldl_factor_ex", "ldl_solve"]


def _type_word(dt):
    from .ops.linalg_args import _legacy
    return _legacy(dt)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    if not isinstance(x, Tensor):
        raise TypeError(f"linalg_vector_norm(): argument 'input' (position 1) must be Tensor, "
                        f"not {parser_type_name(x)}")
    if isinstance(ord, str):
        raise TypeError("linalg_vector_norm(): argument 'ord' must be Number, not str")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_type_word(x.dtype)}")
    if dtype is not None:
        x = x.to(dtype)
    return _write_out("linalg_vector_norm", _vector_norm(x, ord, dim, keepdim), out)


_SVD_ORDS = ("nuc", 2, -2)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):  # noqa: A002
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_type_word(A.dtype)}")
    dim = tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(map(str, dim))}")
    d0, d1 = (d % A.ndim for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, "
                           f"{dim[1]})")
    if dtype is not None:
        A = A.to(dtype)
    if ord == "fro":
        res = _vector_norm(A, 2, (d0, d1), keepdim)
    elif ord in _SVD_ORDS:
        # ATen: the two dims moved to the end, svdvals, then sum / amax / amin over them
        from .ops.linalg_decomp import svdvals
        perm = [i for i in range(A.ndim) if i not in (d0, d1)] + [d0, d1]
        sv = svdvals(A.permute(perm))
        res = sv.sum(-1, keepdim) if ord == "nuc" else \
            sv.amax(-1, keepdim) if ord == 2 else sv.amin(-1, keepdim)
        if keepdim:
            res = res.unsqueeze(-1).permute([perm.index(i) for i in range(A.ndim)])
    elif isinstance(ord, str):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    elif ord in (1, -1, float("inf"), -float("inf")):
        if abs(ord) == float("inf"):
            d0, d1 = d1, d0
        if not keepdim and d0 < d1:
            d1 -= 1
        s = _vector_norm(A, 1, d0, keepdim)
        res = s.amax(d1, keepdim) if ord > 0 else s.amin(d1, keepdim)
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    return _write_out("linalg_matrix_norm", res, out)


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):  # noqa: A002
    if dim is not None:
        dim = (dim,) if isinstance(dim, int) else tuple(dim)
    if ord is not None:
        if isinstance(ord, str) or (dim is not None and len(dim) == 2) or (
                dim is None and A.ndim == 2):
            return matrix_norm(A, ord, dim if dim is not None else (-2, -1), keepdim,
                               dtype=dtype, out=out)
        if dim is None and A.ndim != 1:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must "
                               f"be 1D or 2D. Got {A.ndim}D.")
        return vector_norm(A, ord, dim, keepdim, dtype=dtype, out=out)
    return vector_norm(A, 2, dim, keepdim, dtype=dtype, out=out)
