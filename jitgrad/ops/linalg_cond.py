"""torch.linalg.cond, tensorinv and tensorsolve: ATen's compositions over svdvals, inv_ex,
matrix_norm and solve, written with the same ops so the results carry PyTorch's nodes
(SqueezeBackward1 / NanToNumBackward0 / MulBackward0 for cond, ReshapeAliasBackward0 for
tensorinv, ViewBackward0 for tensorsolve) and differentiate as PyTorch's do."""
from __future__ import annotations

import math

from . import linalg_lapack as L
from .linalg_args import _tensor_arg, _write_out

__all__ = ["cond", "tensorinv", "tensorsolve"]

_NUMBER_ORDS = (2, -2, 1, -1, math.inf, -math.inf)


def _ord_word(p):
    """How ATen prints ``ord`` in cond's messages: a float with std::to_string, an int as is."""
    if isinstance(p, float):
        return "inf" if p == math.inf else "-inf" if p == -math.inf else f"{p:f}"
    return str(p)


def _check_ord(p):
    if (p not in ("fro", "nuc")) if isinstance(p, str) else (p not in _NUMBER_ORDS):
        # a Scalar printed by an ostream: %g
        word = f"{p:g}" if isinstance(p, float) else p
        raise RuntimeError(f"linalg.cond got an invalid norm type: {word}")


def _empty(A):
    """NumPy leaves 0x0 matrices' condition number undefined: PyTorch returns zeros."""
    from .factories import zeros
    return zeros(tuple(A.shape[:-2]), dtype=A.dtype, device=A.device)


def _by_inverse(A, p):
    """_linalg_cond_helper: ||A|| ||A^{-1}|| (the inverse of a singular matrix read as inf)."""
    from ..linalg import matrix_norm
    from .linalg_solve import inv_ex
    inverse, info = inv_ex(A)
    inverse.masked_fill_((info > 0).unsqueeze(-1).unsqueeze(-1), math.inf)
    res = matrix_norm(A, p) * matrix_norm(inverse, p)
    # 0 * inf is NaN: NumPy (and PyTorch) report inf
    return res.nan_to_num_(math.inf, math.inf, -math.inf)


def cond(A, p=None, *, out=None):
    from .linalg_decomp import svdvals
    _tensor_arg("linalg_cond", "A", 1, A)
    if isinstance(p, str):
        L.check_square(f"linalg.cond(ord={p})", A)
        _check_ord(p)
        if A.numel() == 0:
            return _write_out("linalg_cond", _empty(A), out)
        if p == "nuc":
            s = svdvals(A)
            return _write_out("linalg_cond", s.sum(-1) * s.reciprocal().sum(-1), out)
        return _write_out("linalg_cond", _by_inverse(A, p), out)
    if A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    p = 2 if p is None else p
    _check_ord(p)
    if A.numel() == 0:
        return _write_out("linalg_cond", _empty(A), out)
    if abs(p) == 2:
        s = svdvals(A)
        s_max, s_min = s.narrow(-1, 0, 1), s.narrow(-1, s.shape[-1] - 1, 1)
        res = (s_min / s_max if p == -2 else s_max / s_min).squeeze(-1)
        return _write_out("linalg_cond", res, out)
    L.check_square(f"linalg.cond(ord={_ord_word(p)})", A)
    return _write_out("linalg_cond", _by_inverse(A, p), out)


def _prod(shape):
    return math.prod(int(s) for s in shape)


def tensorinv(A, ind=2, *, out=None):
    """The inverse of A read as a prod(shape[:ind]) x prod(shape[ind:]) matrix, shaped
    shape[ind:] + shape[:ind]."""
    from .linalg_solve import _check, _inv_ex
    _tensor_arg("linalg_tensorinv", "input", 1, A)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    if ind > A.ndim:
        raise RuntimeError(f"ArrayRef: invalid slice, N = {ind}; size = {A.ndim}")
    head, tail = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if _prod(tail) != _prod(head):
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {_prod(tail)} != {_prod(head)}")
    n = _prod(tail)
    # LAPACK's inverse is column-major in PyTorch: the inverse of M^T, transposed, is that
    # layout, so the reshape is the same view (ReshapeAliasBackward0)
    M = A.reshape(n, n)
    result, info = _inv_ex(M.mT, "linalg_inv_ex")
    _check(info, "inv", True)
    return _write_out("linalg_tensorinv", result.mT.reshape(tail + head), out)


def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.ndim) = B: A's trailing dims (after moving ``dims`` there) are
    X's shape."""
    from .linalg_solve import solve
    from .shape_views import movedim
    _tensor_arg("linalg_tensorsolve", "A", 1, A)
    _tensor_arg("linalg_tensorsolve", "B", 2, B)
    ndim = A.ndim
    A_ = A
    if dims is not None:
        dims = tuple(dims) if not isinstance(dims, int) else (dims,)
        A_ = movedim(A_, dims, tuple(range(ndim - len(dims), ndim)))
    shape = tuple(A_.shape[B.ndim:])
    if _prod(shape) != _prod(B.shape):
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:])"
                           " == prod(self.shape[:other.ndim]), but got "
                           f"{_prod(shape)} != {_prod(B.shape)}")
    n = _prod(shape)
    res = solve(A_.reshape(n, n), B.flatten())
    return _write_out("linalg_tensorsolve", res.reshape(shape), out)
