"""torch.linalg's LU and Cholesky family: inv/inv_ex, det, slogdet/logdet, solve/solve_ex,
cholesky/cholesky_ex (and the deprecated torch.cholesky), solve_triangular.

Each op computes its arrays once (``linalg_lapack`` on the host; CUDA tensors raise a clear
NotImplementedError until device kernels exist) and records ONE node with PyTorch's name. The
backward functions are derivatives.yaml's formulas written with these same recorded ops and
matmul, so gradients of any order flow through them."""
from __future__ import annotations

import warnings

import numpy as np

from . import linalg_lapack as L
from .composite import record
from .linalg_args import _legacy, _tensor_arg, _write_out
from .linalg_matmul import matmul
from .parser_errors import parser_type_name
from .return_types import _return_type

__all__ = ["inv", "inv_ex", "inverse", "det", "slogdet", "linalg_slogdet", "logdet", "solve",
           "solve_ex", "cholesky", "cholesky_ex", "torch_cholesky", "solve_triangular",
           "LinAlgError"]

LinAlgError = L.LinAlgError
InvExResult = _return_type("linalg_inv_ex", ("inverse", "info"))
SlogdetResult = _return_type("linalg_slogdet", ("sign", "logabsdet"))
TorchSlogdetResult = _return_type("slogdet", ("sign", "logabsdet"))
SolveExResult = _return_type("linalg_solve_ex", ("result", "info"))
CholeskyExResult = _return_type("linalg_cholesky_ex", ("L", "info"))


def _mT(x):
    return x.transpose(-1, -2)


def _impl(*ts):
    """The module computing on ``ts``' arrays: ``linalg_lapack`` for host arrays, the device
    solvers (``cuda_kernels.linalg``, same functions) for CUDA arrays, after PyTorch's
    same-device check."""
    if all(t._data.__class__ is np.ndarray for t in ts):
        return L
    from ..backends import cuda as B
    from .elementwise_call import check_same_device
    check_same_device(ts)
    return B.kernels().linalg


def _contiguous(x):
    return np.ascontiguousarray(x) if x.__class__ is np.ndarray else x.contiguous()


def _check(info, api, is_matrix):
    """Raise the ``_ex`` info's error: PyTorch reads a CUDA info on the host here too."""
    data = info._data
    L.raise_for_info(data if data.__class__ is np.ndarray else data.to_host(), api, is_matrix)


def _write_many(fname, results, out):
    """``out=`` of a multi-output function: a tuple of tensors, one per result."""
    if out is None:
        return results
    if not isinstance(out, (tuple, list)) or len(out) != len(results):
        raise TypeError(f"{fname}(): argument 'out' must be tuple of Tensors, not "
                        f"{parser_type_name(out)}")
    return type(results)(*(_write_out(fname, r, o) for r, o in zip(results, out)))


# ------------------------------------------------------------------------------------ inv

def _inv_backward(node, g, _ginfo):
    Xt = _mT(node.saved("X"))
    return (-matmul(Xt, matmul(g, Xt)),)


def _inv_ex(A, fname):
    _tensor_arg(fname, "A", 1, A)
    L.check_square("linalg.inv", A)
    L.check_floating("linalg.inv", A, low_precision=False)
    x, info = _impl(A).inv_info(A._data)
    return record("LinalgInvExBackward0", (A,), [x, info], _inv_backward,
                  save_outputs=(("X", 0),))


def inv_ex(A, *, check_errors=False, out=None):
    X, info = _inv_ex(A, "linalg_inv_ex")
    if check_errors:
        _check(info, "linalg.inv_ex", A.ndim == 2)
    return _write_many("linalg_inv_ex", InvExResult(X, info), out)


def inv(A, *, out=None):
    X, info = _inv_ex(A, "linalg_inv")
    _check(info, "linalg.inv", A.ndim == 2)
    return _write_out("linalg_inv_ex", X, out)


def inverse(input, *, out=None):
    return inv(input, out=out)


# ----------------------------------------------------------------------------- det, slogdet

def _inv_transposed(A):
    """A^{-T} by the recorded (differentiable) inverse; no singularity error, as a backward
    formula must not raise."""
    return _mT(_inv_ex(A, "linalg_inv_ex")[0])


def _det_backward(node, g):
    """PyTorch's linalg_det_backward: det(A) A^{-T} g. A singular matrix (det exactly 0) has
    no inverse: a first-order pass gives it 0 there (PyTorch's eps-perturbed LU solve of a
    zero right-hand side); with create_graph the cofactors come from the SVD on the CPU, as
    PyTorch's singular branch does (CUDA has no SVD yet: the inverse formula, NaN there)."""
    from ..autograd import grad_mode
    from .functional import where
    det_, A = node.saved("det"), node.saved("A")
    d = (g * det_).unsqueeze(-1).unsqueeze(-1)
    singular = (det_ == 0).unsqueeze(-1).unsqueeze(-1)
    if A.numel() == 0:
        return (None,)
    if not bool(singular.any()):
        return (d * _inv_transposed(A),)
    # each branch runs on matrices it is defined for (fillers elsewhere), so the branch where
    # does not select gets finite zero gradients, not 0 * inf
    from .basic import arange
    n = A.shape[-1]
    filler = arange(1, n + 1, dtype=A.dtype, device=A.device).diag_embed()
    regular = d * _inv_transposed(where(singular, filler, A))
    if grad_mode.is_grad_enabled() and A._data.__class__ is np.ndarray:
        return (where(singular, _det_cofactors_svd(where(singular, A, filler), g), regular),)
    return (where(singular, 0.0, regular),)


def _det_cofactors_svd(A, g):
    """g times the cofactor matrix by the SVD: U diag(prod of the other s_j) V^T det(U V^T)."""
    from .linalg_decomp import svd
    from .shape_join import cat
    U, S, Vh = svd(A)
    alpha = det(U) * det(Vh)
    gs = (g * alpha).unsqueeze(-1)
    ones = S.new_ones(S.shape[:-1] + (1,))
    n = S.shape[-1]
    before = cat([ones, S.narrow(-1, 0, n - 1)], -1).cumprod(-1)
    after = cat([ones, S.narrow(-1, 1, n - 1).flip(-1)], -1).cumprod(-1).flip(-1)
    return matmul(U * (gs * before * after).unsqueeze(-2), Vh)


def det(A, *, out=None):
    _tensor_arg("linalg_det", "A", 1, A)
    L.check_square("linalg.det", A)
    L.check_floating("linalg.det", A)
    L.check_kernel_dtype("lu_cpu", A)
    d = _impl(A).det(A._data)
    res = record("LinalgDetBackward0", (A,), d, _det_backward, save=(("A", A),),
                 save_outputs=(("det", 0),))
    return _write_out("linalg_det", res, out)


def _slogdet_backward(node, _gsign, glogabs):
    # a real matrix's sign is piecewise constant: only logabsdet has a gradient
    if glogabs is None:
        return (None,)
    return (glogabs.unsqueeze(-1).unsqueeze(-1) * _inv_transposed(node.saved("A")),)


def _slogdet(A, fname):
    _tensor_arg("linalg_slogdet", "A", 1, A)
    L.check_square(fname, A)
    L.check_floating(fname, A, low_precision=False)
    sign, logabs = _impl(A).slogdet(A._data)
    return record("LinalgSlogdetBackward0", (A,), [sign, logabs], _slogdet_backward,
                  save=(("A", A),))


def linalg_slogdet(A, *, out=None):
    return _write_many("linalg_slogdet", SlogdetResult(*_slogdet(A, "linalg.slogdet")), out)


def slogdet(input, *, out=None):
    return _write_many("slogdet", TorchSlogdetResult(*_slogdet(input, "linalg.slogdet")), out)


def logdet(input):
    """PyTorch's composite: NaN where the determinant is negative (WhereBackward0)."""
    from .functional import where
    sign, logabs = _slogdet(input, "logdet")
    return where(sign == -1.0, float("nan"), logabs)


# ----------------------------------------------------------------------------------- solve

def _solve_backward(node, gX, _ginfo):
    A, X = node.saved("A"), node.saved("X")
    left, vector = node.ctx.attrs["left"], node.ctx.attrs["vector"]
    if vector:
        gX, X = gX.unsqueeze(-1), X.unsqueeze(-1)
    gB = _solve_ex(_mT(A), gX, left, "linalg_solve_ex")[0]
    need_a, _ = node.ctx.needs_input_grad
    gA = None
    if need_a:
        gA = -(matmul(gB, _mT(X)) if left else matmul(_mT(X), gB))
    return (gA, gB.squeeze(-1) if vector else gB)


def _solve_ex(A, B, left, fname):
    _tensor_arg(fname, "A", 1, A)
    _tensor_arg(fname, "B", 2, B)
    L.check_floating("linalg.solve", A)
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A "
                           f"of type {_legacy(A.dtype)} and B of type {_legacy(B.dtype)} instead")
    # NumPy's rule: B is a (batch of) vector(s) when it is 1-D or A's shape without its last dim
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    B_ = B.unsqueeze(-1) if vector else B
    L.check_solver("linalg.solve", A, B_, left)
    L.broadcast_batch(B_.shape, A.shape)
    if not left and vector:
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not "
                           "supported for left=False. In this case linalg.solve is equivalent "
                           "to B / A.squeeze(-1)")
    L.check_kernel_dtype("lu_cpu", A)
    impl, a, b = _impl(A, B_), A._data, B_._data
    if left:
        x, info = impl.lu_solve_info(a, b)
    else:  # X A = B  <=>  A^T X^T = B^T
        xt, info = impl.lu_solve_info(a.swapaxes(-1, -2), b.swapaxes(-1, -2))
        x = _contiguous(xt.swapaxes(-1, -2))
    if vector:
        x = x.reshape(x.shape[:-1])
    return record("LinalgSolveExBackward0", (A, B), [x, info], _solve_backward,
                  save=(("A", A),), save_outputs=(("X", 0),),
                  attrs={"left": left, "vector": vector})


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    X, info = _solve_ex(A, B, left, "linalg_solve_ex")
    if check_errors:
        _check(info, "torch.linalg.solve_ex", A.ndim == 2)
    return _write_many("linalg_solve_ex", SolveExResult(X, info), out)


def solve(A, B, *, left=True, out=None):
    X, info = _solve_ex(A, B, left, "linalg_solve")
    _check(info, "torch.linalg.solve", A.ndim == 2)
    return _write_out("linalg_solve", X, out)


# ------------------------------------------------------------------------------- cholesky

def _cholesky_backward(node, gL, _ginfo=None):
    """PyTorch's cholesky_backward: gA = L^{-H} sym(tril(L^H gL)) L^{-1}, symmetric."""
    from .triangular import tril
    Lf = node.saved("L")
    if node.ctx.attrs["upper"]:
        Lf, gL = _mT(Lf), _mT(gL)
    gA = tril(matmul(_mT(Lf), gL))
    gA = 0.5 * (gA + _mT(tril(gA, -1)))
    gA = solve_triangular(_mT(Lf), gA, upper=True, left=True)
    return (solve_triangular(Lf, gA, upper=False, left=False),)


def _cholesky_ex(A, upper, fname, node_name="LinalgCholeskyExBackward0", api="linalg.cholesky"):
    _tensor_arg(fname, "A" if api != "cholesky" else "input", 1, A)
    L.check_square(api, A)
    if api != "cholesky":
        L.check_floating(api, A)
    L.check_kernel_dtype("cholesky_cpu", A)
    lf, info = _impl(A).cholesky_info(A._data, bool(upper))
    return record(node_name, (A,), [lf, info], _cholesky_backward, save_outputs=(("L", 0),),
                  attrs={"upper": bool(upper)})


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    Lf, info = _cholesky_ex(A, upper, "linalg_cholesky_ex")
    if check_errors:
        _check(info, "linalg.cholesky_ex", A.ndim == 2)
    return _write_many("linalg_cholesky_ex", CholeskyExResult(Lf, info), out)


def cholesky(A, *, upper=False, out=None):
    Lf, info = _cholesky_ex(A, upper, "linalg_cholesky")
    _check(info, "linalg.cholesky", A.ndim == 2)
    return _write_out("linalg_cholesky", Lf, out)


_CHOLESKY_DEPRECATED = (
    "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a "
    "future PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = "
    "torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, upper=True)\nshould be replaced "
    "with\nU = torch.linalg.cholesky(A).mH\nThis transform will produce equivalent results for "
    "all valid (symmetric positive definite) inputs. (Triggered internally at "
    "/__w/pytorch/pytorch/aten/src/ATen/native/BatchLinearAlgebra.cpp:1765.)")


def torch_cholesky(input, upper=False, *, out=None):
    """The deprecated torch.cholesky (CholeskyBackward0; its errors say "cholesky:"). PyTorch
    warns once per process (TORCH_WARN_ONCE); here Python's warning filters decide."""
    warnings.warn(_CHOLESKY_DEPRECATED, UserWarning, stacklevel=2)
    Lf, info = _cholesky_ex(input, upper, "cholesky", "CholeskyBackward0", "cholesky")
    _check(info, "cholesky", input.ndim == 2)
    return _write_out("cholesky", Lf, out)


# ------------------------------------------------------------------------ solve_triangular

def _solve_triangular_backward(node, g):
    from .triangular import tril, triu
    A, X = node.saved("A"), node.saved("X")
    a = node.ctx.attrs
    upper, left, unit = a["upper"], a["left"], a["unitriangular"]
    need_a, _ = node.ctx.needs_input_grad
    gB = solve_triangular(_mT(A), g, upper=not upper, left=left, unitriangular=unit)
    gA = None
    if need_a:
        gA = -(matmul(gB, _mT(X)) if left else matmul(_mT(X), gB))
        gA = triu(gA, int(unit)) if upper else tril(gA, -int(unit))
    return (gA, gB)


_REQUIRED = object()


def solve_triangular(A, B, *, upper=_REQUIRED, left=True, unitriangular=False, out=None):
    if upper is _REQUIRED:
        raise TypeError('linalg_solve_triangular() missing 1 required positional arguments: '
                        '"upper"')
    _tensor_arg("linalg_solve_triangular", "input", 1, A)
    _tensor_arg("linalg_solve_triangular", "B", 2, B)
    L.check_solver("linalg.solve_triangular", A, B, left)
    L.broadcast_batch(B.shape, A.shape)
    L.check_kernel_dtype("triangular_solve_cpu", A)
    if B.dtype is not A.dtype:  # PyTorch computes in A's dtype
        B = B.to(A.dtype)
    impl, a, b = _impl(A, B), A._data, B._data
    batch = L.broadcast_batch(b.shape, a.shape)
    x = impl.triangular_solve(a.broadcast_to(batch + a.shape[-2:]) if a.__class__ is not
                              np.ndarray else np.broadcast_to(a, batch + a.shape[-2:]),
                              b.broadcast_to(batch + b.shape[-2:]) if b.__class__ is not
                              np.ndarray else np.broadcast_to(b, batch + b.shape[-2:]),
                              bool(upper), bool(left), bool(unitriangular))
    res = record("LinalgSolveTriangularBackward0", (A, B), x, _solve_triangular_backward,
                 save=(("A", A),), save_outputs=(("X", 0),),
                 attrs={"upper": bool(upper), "left": bool(left),
                        "unitriangular": bool(unitriangular)})
    return _write_out("linalg_solve_triangular", res, out)
