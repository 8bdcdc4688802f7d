"""The torch.* (pre-torch.linalg) solvers and factorizations: cholesky_solve, cholesky_inverse,
the deprecated triangular_solve, qr (``some=``) and svd (``some``/``compute_uv``; V, not Vh),
pinverse (``rcond``), and their Tensor methods.

cholesky_solve / cholesky_inverse / triangular_solve record one node each with PyTorch's name
and FunctionsManual's backward in recorded ops; their arrays are two (or one) triangular solves
on either device (``linalg_lapack.triangular_solve`` or the CUDA trsm kernel). qr, svd and
pinverse are PyTorch's compositions over torch.linalg (same nodes as PyTorch shows)."""
from __future__ import annotations

import warnings

import numpy as np

from . import linalg_lapack as L
from .composite import record
from .linalg_args import _legacy, _tensor_arg, _write_out
from .linalg_matmul import matmul
from .linalg_solve import _impl, _mT, _write_many
from .return_types import _return_type

__all__ = ["cholesky_solve", "cholesky_inverse", "triangular_solve", "torch_qr", "torch_svd",
           "pinverse"]

TriangularSolveResult = _return_type("triangular_solve", ("solution", "cloned_coefficient"))
QrResult = _return_type("qr", ("Q", "R"))
SvdResult = _return_type("svd", ("U", "S", "V"))

_TRIANGULAR_SOLVE_DEPRECATED = (
    "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be "
    "removed in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments "
    "reversed and does not return a copy of one of the inputs.\nX = torch.triangular_solve(B, "
    "A).solution\nshould be replaced with\nX = torch.linalg.solve_triangular(A, B). (Triggered "
    "internally at /__w/pytorch/pytorch/aten/src/ATen/native/BatchLinearAlgebra.cpp:2273.)")
_QR_DEPRECATED = (
    "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
    "release.\nThe boolean parameter 'some' has been replaced with a string parameter 'mode'.\n"
    "Q, R = torch.qr(A, some)\nshould be replaced with\nQ, R = torch.linalg.qr(A, 'reduced' if "
    "some else 'complete') (Triggered internally at "
    "/__w/pytorch/pytorch/aten/src/ATen/native/BatchLinearAlgebra.cpp:2505.)")


def _linear_solve_checks(name, b, A):
    """ATen's linearSolveCheckInputs (b first) and the batch broadcast of b and A."""
    if b.dtype is not A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_legacy(b.dtype)} and A of type {_legacy(A.dtype)} instead.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {A.shape[-2]} "
                           f"by {A.shape[-1]} matrices")
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is "
                           f"{A.shape[-1]} by {A.shape[-1]} but each b matrix is {b.shape[-2]} by "
                           f"{b.shape[-1]}")
    return L.broadcast_batch(b.shape, A.shape)


def _broadcast(a, batch):
    shape = tuple(batch) + tuple(a.shape[-2:])
    return np.broadcast_to(a, shape) if a.__class__ is np.ndarray else a.broadcast_to(shape)


def _trsm(impl, a, b, upper, transpose, unit):
    """op(a)^{-1} b for stacks of one batch shape (op: transpose or not)."""
    if transpose:
        return impl.triangular_solve(a.swapaxes(-1, -2), b, not upper, True, unit)
    return impl.triangular_solve(a, b, upper, True, unit)


# -------------------------------------------------------------------------- cholesky_solve

def _cholesky_solve_backward(node, gX):
    upper = node.ctx.attrs["upper"]
    A, X = node.saved("input2"), node.saved("X")
    gB = cholesky_solve(gX, A, upper)
    need_b, need_a = node.ctx.needs_input_grad
    gA = None
    if need_a:
        common = matmul(gB, _mT(X))
        common = common + _mT(common)
        gA = -matmul(A, common) if upper else -matmul(common, A)
    return (gB if need_b else None, gA)


def cholesky_solve(input, input2, upper=False, *, out=None):
    """X with (L L^T) X = input for the Cholesky factor ``input2`` (``upper``: U^T U)."""
    _tensor_arg("cholesky_solve", "input", 1, input)
    _tensor_arg("cholesky_solve", "input2", 2, input2)
    if input.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {input.ndim} "
                           "dimensions instead")
    if input2.ndim < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {input2.ndim} "
                           "dimensions instead")
    batch = _linear_solve_checks("cholesky_solve", input, input2)
    L.check_kernel_dtype("cholesky_solve_cpu", input)
    impl = _impl(input, input2)
    a, b = _broadcast(input2._data, batch), _broadcast(input._data, batch)
    # A = L L^T: L^{-T} (L^{-1} B); A = U^T U: U^{-1} (U^{-T} B)
    y = _trsm(impl, a, b, bool(upper), bool(upper), False)
    x = _trsm(impl, a, y, bool(upper), not upper, False)
    res = record("CholeskySolveBackward0", (input, input2), x, _cholesky_solve_backward,
                 save=(("input2", input2),), save_outputs=(("X", 0),),
                 attrs={"upper": bool(upper)})
    return _write_out("cholesky_solve", res, out)


# ------------------------------------------------------------------------ cholesky_inverse

def _cholesky_inverse_backward(node, g):
    Lf, inv = node.saved("L"), node.saved("inverse")
    common = matmul(inv, matmul(g + _mT(g), inv))
    return (-matmul(Lf, common) if node.ctx.attrs["upper"] else -matmul(common, Lf),)


def cholesky_inverse(input, upper=False, *, out=None):
    """(L L^T)^{-1} (``upper``: (U^T U)^{-1}) from the Cholesky factor ``input``."""
    _tensor_arg("cholesky_inverse", "input", 1, input)
    L.check_square("cholesky_inverse", input)
    L.check_kernel_dtype("cholesky_inverse_out_cpu", input)
    impl = _impl(input)
    a = input._data
    # potri's singularity check: the first zero on the factor's diagonal (1-based)
    zero = (input.detach().diagonal(0, -2, -1) == 0)._data
    zero = zero if zero.__class__ is np.ndarray else zero.to_host()  # the flags, as _check
    info = np.where(zero.any(-1), zero.argmax(-1) + 1, 0).astype(np.int32)
    L.raise_for_info(info, "cholesky_inverse", input.ndim == 2)
    from .factories import eye
    n = input.shape[-1]
    ident = eye(n, dtype=input.dtype, device=input.device)._data
    ident = _broadcast(ident, input.shape[:-2])
    y = _trsm(impl, a, ident, bool(upper), bool(upper), False)
    x = _trsm(impl, a, y, bool(upper), not upper, False)
    res = record("CholeskyInverseBackward0", (input,), x, _cholesky_inverse_backward,
                 save=(("L", input),), save_outputs=(("inverse", 0),),
                 attrs={"upper": bool(upper)})
    return _write_out("cholesky_inverse", res, out)


# ------------------------------------------------------------------------ triangular_solve

def _triangular_solve_backward(node, gX, gM):
    a = node.ctx.attrs
    upper, transpose, unit = a["upper"], a["transpose"], a["unitriangular"]
    A, X = node.saved("A"), node.saved("X")
    need_b, need_a = node.ctx.needs_input_grad
    gB = gA = None
    if gX is not None:
        gB = _triangular_solve(gX, A, upper, not transpose, unit)[0]
        if need_a:
            gA = -matmul(X, _mT(gB)) if transpose else -matmul(gB, _mT(X))
            gA = gA.triu(int(unit)) if upper else gA.tril(-int(unit))
    if need_a and gM is not None:
        gA = gM if gA is None else gA + gM
    return (gB if need_b else None, gA)


def _triangular_solve(b, A, upper, transpose, unit):
    if b.ndim < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, "
                           f"but it has {b.ndim} dimensions instead")
    if A.ndim < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected A to have at least 2 dimensions, "
                           f"but it has {A.ndim} dimensions instead")
    batch = _linear_solve_checks("triangular_solve", b, A)
    L.check_kernel_dtype("triangular_solve_cpu", A)
    impl = _impl(b, A)
    a = _broadcast(A._data, batch)
    x = _trsm(impl, a, _broadcast(b._data, batch), bool(upper), bool(transpose), bool(unit))
    m = np.array(a) if a.__class__ is np.ndarray else a.contiguous()
    return record("TriangularSolveBackward0", (b, A), [x, m], _triangular_solve_backward,
                  save=(("A", A),), save_outputs=(("X", 0),),
                  attrs={"upper": bool(upper), "transpose": bool(transpose),
                         "unitriangular": bool(unit)})


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """Deprecated: (op(A)^{-1} input, a copy of A broadcast to the batch)."""
    warnings.warn(_TRIANGULAR_SOLVE_DEPRECATED, UserWarning, stacklevel=2)
    _tensor_arg("triangular_solve", "input", 1, input)
    _tensor_arg("triangular_solve", "A", 2, A)
    res = TriangularSolveResult(*_triangular_solve(input, A, upper, transpose, unitriangular))
    return _write_many("triangular_solve", res, out)


# ----------------------------------------------------------------------- qr, svd, pinverse

def torch_qr(input, some=True, *, out=None):
    """Deprecated: linalg.qr(input, 'reduced' if some else 'complete')."""
    warnings.warn(_QR_DEPRECATED, UserWarning, stacklevel=2)
    from .linalg_decomp import qr
    _tensor_arg("qr", "input", 1, input)
    return _write_many("qr", QrResult(*qr(input, "reduced" if some else "complete")), out)


def torch_svd(input, some=True, compute_uv=True, *, out=None):
    """U, S, V (not V^H) from linalg.svd; without ``compute_uv``, S from linalg.svdvals and
    zero m x m / n x n U and V, as PyTorch."""
    from .linalg_decomp import svd, svdvals
    _tensor_arg("svd", "input", 1, input)
    if input.ndim < 2:
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has "
                           f"{input.ndim} dimensions instead")
    if compute_uv:
        U, S, Vh = svd(input, full_matrices=not some)
        res = SvdResult(U, S, Vh.mT)
    else:
        S = svdvals(input)
        m, n = input.shape[-2:]
        batch = tuple(input.shape[:-2])
        res = SvdResult(input.new_zeros(batch + (m, m)).detach(), S,
                        input.new_zeros(batch + (n, n)).detach())
    return _write_many("svd", res, out)


def pinverse(input, rcond=1e-15):
    """linalg.pinv with atol=0, rtol=rcond."""
    from .linalg_decomp import pinv
    return pinv(input, atol=0.0, rtol=rcond)


def methods():
    """The Tensor methods PyTorch has for these (bound by ops/methods.py)."""
    return {"cholesky_solve": cholesky_solve, "cholesky_inverse": cholesky_inverse,
            "triangular_solve": triangular_solve, "qr": torch_qr, "svd": torch_svd,
            "pinverse": pinverse}
