"""torch.linalg's LU family: lu_factor/lu_factor_ex, lu, lu_solve, torch.lu_unpack and the
deprecated torch.lu / torch.lu_solve.

The packed factorization is LAPACK's getrf (``linalg_lapack.lu_factor_info``; CUDA tensors: the
thread-per-matrix getf2 kernel behind ``linalg.solve`` for square matrices, others staged
through the host's getrf), so the pivots are
LAPACK's 1-based int32 row swaps. Each op records one node with PyTorch's name and its backward
is FunctionsManual's formula (linalg_lu_backward, lu_factor_ex_backward, lu_unpack_backward,
linalg_lu_solve_LU) written with recorded ops, so gradients of any order flow. Only pivoted LU
exists: ``pivot=False`` raises PyTorch's CPU error (CUDA: NotImplementedError)."""
from __future__ import annotations

import warnings

import numpy as np

from . import linalg_lapack as L
from .composite import record
from .linalg_args import _legacy, _tensor_arg
from .linalg_matmul import matmul
from .linalg_solve import _impl, _mT, _write_many, solve_triangular
from .return_types import _return_type

__all__ = ["lu_factor", "lu_factor_ex", "lu", "lu_solve", "lu_unpack", "torch_lu",
           "torch_lu_solve"]

LuFactorResult = _return_type("linalg_lu_factor", ("LU", "pivots"))
LuFactorExResult = _return_type("linalg_lu_factor_ex", ("LU", "pivots", "info"))
LuResult = _return_type("linalg_lu", ("P", "L", "U"))
LuUnpackResult = _return_type("lu_unpack", ("P", "L", "U"))


def _check_rank(fname, A):
    if A.ndim < 2:
        raise RuntimeError(f"{fname}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A.shape)} instead")


def _check_pivot(A, pivot):
    if not pivot:
        if A._data.__class__ is np.ndarray:
            raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the "
                               "CPU")
        raise NotImplementedError("linalg.lu_factor: jitgrad's CUDA LU kernel always pivots; "
                                  "pivot=False is not implemented")


def _raise_lu_info(info, api, is_matrix):
    """lu_factor's error: the first exactly-zero diagonal element of U (1-based)."""
    data = info._data if info._data.__class__ is np.ndarray else info._data.to_host()
    flat = np.asarray(data).reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size:
        i, code = int(bad[0]), int(flat[bad[0]])
        where = "" if is_matrix else f"(Batch element {i}): "
        raise RuntimeError(f"{api}: {where}U[{code},{code}] is zero and using it on lu_solve "
                           "would result in a division by zero. If you still want to perform "
                           "the factorization, consider calling linalg.lu(A, pivot) or "
                           "linalg.lu_factor_ex(A, pivot)")


# ---------------------------------------------------------------------- the P, L, U pieces

def _permutation(pivots, m, dtype):
    """P (m x m, ``dtype``) with A = P L U, from LAPACK's sequential row swaps: in tensor ops,
    so it is made where the pivots live."""
    from ..autograd import grad_mode
    from .factories import arange
    with grad_mode.no_grad():
        batch = tuple(pivots.shape[:-1])
        perm = arange(m, device=pivots.device).expand(*batch, m).contiguous()
        for i in range(pivots.shape[-1]):
            j = pivots[..., i:i + 1].long() - 1
            at_i = perm[..., i:i + 1]
            at_j = perm.gather(-1, j)
            perm = perm.scatter(-1, j, at_i)
            perm = perm.scatter(-1, arange(i, i + 1, device=pivots.device).expand(*batch, 1),
                                at_j)
        # row perm[c] of A is row c of L U: P[perm[c], c] = 1
        rows = arange(m, device=pivots.device).unsqueeze(-1)
        return (rows == perm.unsqueeze(-2)).to(dtype)


def _unpack_LU(LU):
    """L (m x k, unit diagonal) and U (k x n) from the packed factor, in recorded ops."""
    from .factories import eye
    m, n = LU.shape[-2:]
    k = min(m, n)
    Lf = LU.narrow(-1, 0, k).tril(-1) + eye(m, k, dtype=LU.dtype, device=LU.device)
    return Lf, LU.narrow(-2, 0, k).triu()


def _lu_unpack_backward(node, _gP, gL, gU):
    """lu_unpack_backward: L's strict lower part and U's upper part, placed back in LU."""
    from .shape_join import cat
    m, n = node.ctx.attrs["m"], node.ctx.attrs["n"]
    if gL is None and gU is None:
        return (None, None)
    k = min(m, n)
    parts = []
    if gU is not None:  # U's part first: PyTorch's triu error comes before tril's
        gu = gU.triu()  # k x n
        if m > n:
            gu = cat([gu, gu.new_zeros(gu.shape[:-2] + (m - k, n))], -2)
        parts.append(gu)
    if gL is not None:
        gl = gL.tril(-1)  # m x k
        if m < n:
            gl = cat([gl, gl.new_zeros(gl.shape[:-1] + (n - k,))], -1)
        parts.append(gl)
    return (parts[0] if len(parts) == 1 else parts[0] + parts[1], None)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    _tensor_arg("lu_unpack", "LU_data", 1, LU_data)
    _tensor_arg("lu_unpack", "LU_pivots", 2, LU_pivots)
    from ..autograd import grad_mode
    if LU_data.ndim < 2 and not (LU_data.requires_grad and grad_mode.is_grad_enabled()):
        _check_rank("torch.lu_unpack", LU_data)
    if LU_data.ndim < 2:  # the autograd wrapper reads LU.size(-2) first
        r = max(LU_data.ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [-{r}, {r - 1}], "
                         "but got -2)")
    if unpack_pivots and LU_pivots.dtype.name != "int32":
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                           "torch.int32 dtype.\nNote: this function is intended to be used with "
                           "the output produced by torch.linalg.lu_factor")
    m, n = LU_data.shape[-2:]
    with grad_mode.no_grad():
        if unpack_data:
            Lf, U = _unpack_LU(LU_data.detach())
            Lf, U = Lf._data, U._data
        else:
            Lf = U = LU_data.detach().new_empty((0,))._data
        if unpack_pivots:
            P = _permutation(LU_pivots, m, LU_data.dtype)._data
        else:
            P = LU_data.detach().new_empty((0,))._data
    P, Lf, U = record("LuUnpackBackward0", (LU_data, None), [P, Lf, U], _lu_unpack_backward,
                      attrs={"m": m, "n": n})
    _non_differentiable(P)
    return _write_many("lu_unpack", LuUnpackResult(P, Lf, U), out)


def _non_differentiable(t):
    """An integer-valued output PyTorch marks non-differentiable (P): no grad_fn."""
    t._grad_fn = None
    t._requires_grad = False


# -------------------------------------------------------------------------- lu_factor(_ex)

def _lu_backward(gL, gU, P, Lf, U):
    """FunctionsManual's linalg_lu_backward (real, pivoted): A's gradient from L's and U's."""
    from .shape_join import cat
    if gL is None and gU is None:
        return None
    m, n = Lf.shape[-2], U.shape[-1]
    k = min(m, n)
    if m == n:
        gA = None if gL is None else matmul(_mT(Lf), gL).tril(-1)
        if gU is not None:
            t = matmul(gU, _mT(U)).triu()
            gA = t if gA is None else gA + t
        gA = solve_triangular(_mT(U), gA, upper=False, left=False)
        gA = solve_triangular(_mT(Lf), gA, upper=True, left=True, unitriangular=True)
        return matmul(P, gA)
    if m < n:
        U1 = U.narrow(-1, 0, k)
        gA = None if gL is None else matmul(_mT(Lf), gL)
        if gU is not None:
            t = matmul(gU.triu(), _mT(U))
            gA = -t if gA is None else gA - t
        gA = solve_triangular(_mT(U1), gA.tril(-1), upper=False, left=False)
        if gU is not None:
            gA = cat([gA + gU.narrow(-1, 0, k).triu(), gU.narrow(-1, k, n - k)], -1)
        gA = solve_triangular(_mT(Lf), gA, upper=True, left=True, unitriangular=True)
        if gU is None:
            gA = cat([gA, gA.new_zeros(gA.shape[:-1] + (n - k,))], -1)
        return matmul(P, gA)
    L1 = Lf.narrow(-2, 0, k)
    gA = None if gU is None else matmul(gU, _mT(U))
    if gL is not None:
        t = matmul(_mT(Lf), gL.tril(-1))
        gA = -t if gA is None else gA - t
    gA = solve_triangular(_mT(L1), gA.triu(), upper=True, left=True, unitriangular=True)
    if gL is not None:
        gA = cat([gA + gL.narrow(-2, 0, k).tril(-1), gL.narrow(-2, k, m - k)], -2)
    gA = solve_triangular(_mT(U), gA, upper=False, left=False)
    if gL is None:
        gA = cat([gA, gA.new_zeros(gA.shape[:-2] + (m - k, n))], -2)
    return matmul(P, gA)


def _lu_factor_ex_backward(node, gLU, _gpiv, _ginfo):
    """lu_factor_ex_backward: LU's gradient split into L's strict lower and U's upper part."""
    if gLU is None:
        return (None,)
    LU, piv = node.saved("LU"), node.saved("pivots")
    P, Lf, U = lu_unpack(LU, piv)
    k = min(LU.shape[-2:])
    return (_lu_backward(gLU.narrow(-1, 0, k).tril(-1), gLU.narrow(-2, 0, k).triu(), P, Lf, U),)


def _factor(A):
    """getrf's (LU, pivots, info) arrays on A's device. The CUDA kernel factors square
    matrices; other shapes are staged through the host's getrf (``host_staged.host_arrays``)."""
    impl = _impl(A)
    if impl is not L and A.shape[-1] != A.shape[-2]:
        from .host_staged import host_arrays
        return host_arrays(L.lu_factor_info)(A._data)
    return impl.lu_factor_info(A._data)


def _lu_factor_ex(A, pivot, fname, rank_name="torch.lu_factor"):
    _tensor_arg(fname, "A", 1, A)
    _check_rank(rank_name, A)
    L.check_kernel_dtype("lu_cpu", A)
    _check_pivot(A, pivot)
    lu_, piv, info = _factor(A)
    LU, pivots, info = record("LinalgLuFactorExBackward0", (A,), [lu_, piv, info],
                              _lu_factor_ex_backward, save_outputs=(("LU", 0), ("pivots", 1)))
    return LU, pivots, info


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    LU, piv, info = _lu_factor_ex(A, pivot, "linalg_lu_factor_ex")
    if check_errors:
        _raise_lu_info(info, "torch.linalg.lu_factor_ex", A.ndim == 2)
    return _write_many("linalg_lu_factor_ex", LuFactorExResult(LU, piv, info), out)


def lu_factor(A, *, pivot=True, out=None):
    LU, piv, info = _lu_factor_ex(A, pivot, "linalg_lu_factor")
    _raise_lu_info(info, "torch.linalg.lu_factor", A.ndim == 2)
    return _write_many("linalg_lu_factor", LuFactorResult(LU, piv), out)


# -------------------------------------------------------------------------------------- lu

def _linalg_lu_backward(node, _gP, gL, gU):
    return (_lu_backward(gL, gU, node.saved("P"), node.saved("L"), node.saved("U")),)


def lu(A, *, pivot=True, out=None):
    """P, L, U with A = P L U (P carries no gradient). No error for a singular matrix."""
    from ..autograd import grad_mode
    _tensor_arg("linalg_lu", "A", 1, A)
    _check_rank("linalg.lu", A)
    L.check_kernel_dtype("lu_cpu", A)
    _check_pivot(A, pivot)
    with grad_mode.no_grad():
        lu_, piv, _ = _factor(A)
        P, Lf, U = lu_unpack(_wrap(lu_), _wrap(piv))
    P, Lf, U = record("LinalgLuBackward0", (A,), [P._data, Lf._data, U._data],
                      _linalg_lu_backward, save_outputs=(("P", 0), ("L", 1), ("U", 2)))
    _non_differentiable(P)
    return _write_many("linalg_lu", LuResult(P, Lf, U), out)


def _wrap(a):
    from .composite import wrap
    return wrap(a)


# -------------------------------------------------------------------------------- lu_solve

def _lu_solve_LU(gX, LU, pivots, X, left, adjoint):
    """FunctionsManual's linalg_lu_solve_LU (real): the packed factor's gradient."""
    P, Lf, U = lu_unpack(LU, pivots, True, left == adjoint)
    if left != adjoint:
        gR = solve_triangular(_mT(U), -matmul(gX if left else _mT(gX), _mT(X) if left else X),
                              upper=False)
        gL = solve_triangular(_mT(Lf), matmul(gR, _mT(U)), upper=True, left=True,
                              unitriangular=True).tril(-1)
        return gL + gR.triu()
    gR = -matmul(matmul(matmul(_mT(P), X if left else _mT(X)), _mT(gX) if left else gX), P)
    gR = solve_triangular(_mT(Lf), gR, upper=True, left=False, unitriangular=True)
    gU = solve_triangular(_mT(U), matmul(_mT(Lf), gR), upper=False, left=False).triu()
    return gR.tril(-1) + gU


def _lu_solve_backward(node, gX):
    a = node.ctx.attrs
    LU, piv = node.saved("LU"), node.saved("pivots")
    need_lu, _, need_b = node.ctx.needs_input_grad
    gLU = gB = None
    if need_lu:
        gLU = _lu_solve_LU(gX, LU, piv, node.saved("X"), a["left"], a["adjoint"])
    if need_b:
        gB = lu_solve(LU, piv, gX, left=a["left"], adjoint=not a["adjoint"])
    return (gLU, None, gB)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    _tensor_arg("linalg_lu_solve", "LU", 1, LU)
    _tensor_arg("linalg_lu_solve", "pivots", 2, pivots)
    _tensor_arg("linalg_lu_solve", "B", 3, B)
    L.check_floating("torch.linalg.lu_solve", LU)
    if LU.dtype is not B.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found "
                           f"LU of type {_legacy(LU.dtype)} and B of type {_legacy(B.dtype)} "
                           "instead")
    if pivots.dtype.name != "int32":
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    L.check_square("torch.linalg.lu_solve", LU)
    L.check_solver("linalg.lu_solve", LU, B, left)
    if LU.shape[-1] != (pivots.shape[-1] if pivots.ndim else 1):
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the "
                           "dimension of the matrix")
    if tuple(LU.shape[:-1]) != tuple(pivots.shape):
        raise RuntimeError("linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the "
                           f"same, but got pivots with shape {list(pivots.shape)} instead")
    L.broadcast_batch(B.shape, LU.shape)
    L.check_kernel_dtype("lu_solve_cpu", LU)
    impl = _impl(LU, pivots, B)
    # X op(A) = B  <=>  op(A)^T X^T = B^T
    trans = bool(adjoint) if left else not adjoint
    b = B._data if left else B._data.swapaxes(-1, -2)
    if impl is L or not trans:
        x = impl.lu_solve_factored(LU._data, pivots._data, b, trans)
    else:
        x = _solve_transposed(LU, pivots, b)
    if not left:
        x = np.ascontiguousarray(x.swapaxes(-1, -2)) if x.__class__ is np.ndarray else \
            x.swapaxes(-1, -2).contiguous()
    res = record("LinalgLuSolveBackward0", (LU, pivots, B), x, _lu_solve_backward,
                 save=(("LU", LU), ("pivots", pivots)), save_outputs=(("X", 0),),
                 attrs={"left": bool(left), "adjoint": bool(adjoint)})
    from .linalg_args import _write_out
    return _write_out("linalg_lu_solve", res, out)


def _solve_transposed(LU, pivots, b):
    """``A^{-T} B`` = P L^{-T} U^{-T} B for a device LU (whose kernel solves A X = B only):
    the device triangular solves and the permutation as a product."""
    from ..autograd import grad_mode
    with grad_mode.no_grad():
        Lf, U = _unpack_LU(LU.detach())
        y = solve_triangular(_mT(U), _wrap(b), upper=False)
        y = solve_triangular(_mT(Lf), y, upper=True, unitriangular=True)
        return matmul(_permutation(pivots, LU.shape[-1], LU.dtype), y)._data


# ------------------------------------------------------------------------ deprecated forms

_LU_DEPRECATED = (
    "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and "
    "will be removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\n"
    "should be replaced with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\n"
    "LU, pivots, info = torch.lu(A, compute_pivots, get_infos=True)\nshould be replaced with\n"
    "LU, pivots, info = torch.linalg.lu_factor_ex(A, compute_pivots) (Triggered internally at "
    "/__w/pytorch/pytorch/aten/src/ATen/native/BatchLinearAlgebra.cpp:2073.)")
_LU_SOLVE_DEPRECATED = (
    "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a "
    "future PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\n"
    "X = torch.lu_solve(B, LU, pivots)\nshould be replaced with\nX = torch.linalg.lu_solve(LU, "
    "pivots, B) (Triggered internally at "
    "/__w/pytorch/pytorch/aten/src/ATen/native/BatchLinearAlgebra.cpp:2230.)")


def torch_lu(A, pivot=True, get_infos=False, out=None):
    """The deprecated torch.lu / Tensor.lu: (LU, pivots[, infos]), never an error for a
    singular matrix (PyTorch warns once per process; here Python's filters decide)."""
    warnings.warn(_LU_DEPRECATED, UserWarning, stacklevel=2)
    LU, piv, info = _lu_factor_ex(A, pivot, "_lu_with_info")
    res = (LU, piv, info) if get_infos else (LU, piv)
    if out is not None:
        return tuple(_write_many("lu", LuFactorExResult(*res) if get_infos else
                                 LuFactorResult(*res), out))
    return res


def torch_lu_solve(input, LU_data, LU_pivots, *, out=None):
    """The deprecated torch.lu_solve(B, LU, pivots) / Tensor.lu_solve."""
    warnings.warn(_LU_SOLVE_DEPRECATED, UserWarning, stacklevel=2)
    return lu_solve(LU_data, LU_pivots, input, out=out)


def methods():
    """The Tensor methods PyTorch has for these (bound by ops/methods.py)."""
    return {"lu": torch_lu, "lu_solve": torch_lu_solve}
