"""torch.linalg.ldl_factor / ldl_factor_ex / ldl_solve: LAPACK's Bunch-Kaufman sytrf/sytrs
(real dtypes: ``hermitian`` changes nothing, as hetrf is sytrf for real matrices) through SciPy.

The factor is sytrf's lower compact form (L's strict lower part and D's blocks, the upper
triangle zeroed) and the pivots LAPACK's own (1-based, negative for 2x2 blocks); sytrf runs with
its optimal workspace, as PyTorch's, so the blocked algorithm picks the same pivots. PyTorch
has no derivative for either op: their results carry a ``NotImplemented`` node whose backward
raises PyTorch's error. CUDA tensors are staged through the host (``host_staged``)."""
from __future__ import annotations

import numpy as np

from . import linalg_lapack as L
from .functional_args import _no_derivative
from .host_staged import host_staged, to_host
from .linalg_args import _legacy, _tensor_arg, _write_out
from .linalg_solve import _write_many
from .return_types import _return_type

__all__ = ["ldl_factor", "ldl_factor_ex", "ldl_solve"]

LdlFactorResult = _return_type("linalg_ldl_factor", ("LD", "pivots"))
LdlFactorExResult = _return_type("linalg_ldl_factor_ex", ("LD", "pivots", "info"))


def _sytrf(A: np.ndarray):
    from scipy.linalg import lapack
    n = A.shape[-1]
    LD = np.zeros(A.shape, A.dtype)
    piv = np.empty(A.shape[:-1], np.int32)
    info = np.zeros(A.shape[:-2], np.int32)
    if A.size == 0:
        return LD, piv, info
    sytrf, sytrf_lwork = lapack.get_lapack_funcs(("sytrf", "sytrf_lwork"), (A,))
    work, _ = sytrf_lwork(n, lower=1)
    lwork = max(int(work), 1)
    lds, pivs, infos = LD.reshape((-1, n, n)), piv.reshape((-1, n)), info.reshape(-1)
    for i, a in enumerate(np.ascontiguousarray(A).reshape((-1, n, n))):
        ld, p, infos[i] = sytrf(a, lower=1, lwork=lwork)
        lds[i], pivs[i] = np.tril(ld), p
    return LD, piv, info


def _raise_info(info, api):
    """PyTorch treats a sytrf info > 0 (an exactly singular D) as an unknown code."""
    flat = np.asarray(info).reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size:
        raise RuntimeError('false INTERNAL ASSERT FAILED at "/__w/pytorch/pytorch/aten/src/'
                           'ATen/native/BatchLinearAlgebra.cpp":1642, please report a bug to '
                           f"PyTorch. {api}: Unknown error code: {int(flat[bad[0]])}.")


@host_staged
def _ldl_factor_ex(A, fname):
    _tensor_arg(fname, "A", 1, A)
    api = "torch.linalg.ldl_factor_ex"
    L.check_square(api, A)
    L.check_floating(api, A)
    L.check_kernel_dtype("ldl_factor_kernel_cpu", A)
    from .composite import wrap
    ld, piv, info = _sytrf(A._data)
    LD = _no_derivative("linalg_ldl_factor_ex", wrap(ld), (A,))
    return LD, wrap(piv), wrap(info)


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    LD, piv, info = _ldl_factor_ex(A, "linalg_ldl_factor_ex")
    if check_errors:
        _raise_info(to_host(info), "torch.linalg.ldl_factor_ex")
    return _write_many("linalg_ldl_factor_ex", LdlFactorExResult(LD, piv, info), out)


def ldl_factor(A, *, hermitian=False, out=None):
    LD, piv, info = _ldl_factor_ex(A, "linalg_ldl_factor")
    _raise_info(to_host(info), "torch.linalg.ldl_factor")
    return _write_many("linalg_ldl_factor", LdlFactorResult(LD, piv), out)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """X with A X = B for A's LDL factorization (LD, pivots) from ldl_factor."""
    return _write_out("linalg_ldl_solve", _ldl_solve(LD, pivots, B), out)


@host_staged
def _ldl_solve(LD, pivots, B):
    api = "torch.linalg.ldl_solve"
    _tensor_arg("linalg_ldl_solve", "LD", 1, LD)
    _tensor_arg("linalg_ldl_solve", "pivots", 2, pivots)
    _tensor_arg("linalg_ldl_solve", "B", 3, B)
    L.check_square(api, LD)
    L.check_floating(api, LD)
    # ATen's linearSolveCheckInputs (it reads B.size(-2) before checking B's rank)
    if B.ndim < 2:
        r = max(B.ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [-{r}, {r - 1}], "
                         "but got -2)")
    if B.dtype is not LD.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_legacy(B.dtype)} and A of type {_legacy(LD.dtype)} instead.")
    n = LD.shape[-1]
    if n != B.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {api}: each A matrix is {n} by {n} "
                           f"but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"{api}: Expected LD.shape[:-1] and pivots.shape to be the same, but "
                           f"got pivots with shape {list(pivots.shape)} instead")
    if pivots.dtype.is_floating_point or pivots.dtype.name == "bool":
        raise RuntimeError(f"{api}: Expected pivots to be integers. Got "
                           f"{_legacy(pivots.dtype)}")
    batch = L.broadcast_batch(B.shape, LD.shape)
    L.check_kernel_dtype("ldl_solve_cpu", LD)
    from scipy.linalg import lapack

    from .composite import wrap
    lds = np.broadcast_to(LD._data, batch + (n, n)).reshape((-1, n, n))
    pivs = np.broadcast_to(pivots._data.astype(np.int32), batch + (n,)).reshape((-1, n))
    bs = np.broadcast_to(B._data, batch + B.shape[-2:]).reshape((-1,) + B.shape[-2:])
    X = np.empty(bs.shape, B._data.dtype)
    if X.size:
        sytrs = lapack.get_lapack_funcs("sytrs", (lds,))
        with np.errstate(all="ignore"):
            for i in range(X.shape[0]):
                X[i] = sytrs(lds[i], pivs[i], bs[i], lower=1)[0]
    return _no_derivative("linalg_ldl_solve", wrap(X.reshape(batch + B.shape[-2:])),
                          (LD, pivots, B))
