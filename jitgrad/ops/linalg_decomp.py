"""torch.linalg's orthogonal decompositions on the CPU: qr, eigh/eigvalsh, svd/svdvals, and
what is built on them: pinv, matrix_rank.

NumPy's LAPACK computes the factors (the same routines PyTorch calls: QR agrees to rounding;
singular and eigen vectors are unique only up to sign, so they may differ from PyTorch's by a
column's sign while every sign-invariant quantity agrees). Each op records one node with
PyTorch's name; its backward is FunctionsManual's formula written with recorded ops, so
create_graph works. CUDA tensors are staged through the host (``host_staged``: LAPACK on a
host copy, the factors uploaded, the same node recorded on the device tensors, its backward
on the device)."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from . import linalg_lapack as L
from .composite import record, wrap
from .host_staged import host_staged
from .linalg_args import _tensor_arg, _write_out
from .linalg_matmul import matmul
from .return_types import _return_type

__all__ = ["qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv", "matrix_rank", "lstsq"]

QRResult = _return_type("linalg_qr", ("Q", "R"))
EighResult = _return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))
SVDResult = _return_type("linalg_svd", ("U", "S", "Vh"))
LstsqResult = _return_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))


def _mT(x):
    return x.transpose(-1, -2)


def _write_many(fname, results, out):
    if out is None:
        return results
    return type(results)(*(_write_out(fname, r, o) for r, o in zip(results, out)))


# -------------------------------------------------------------------------------------- qr

def _qr_backward(node, gQ, gR):
    a = node.ctx.attrs
    if a["mode"] == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going "
                           "to differentiate through linalg.qr.")
    m, n = a["m"], a["n"]
    if a["mode"] == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                           "and nrows > ncols.")
    from .linalg_solve import solve_triangular
    from .triangular import tril, triu
    Q, R = node.saved("Q"), node.saved("R")
    if gQ is None and gR is None:
        return (None,)
    if gQ is None:
        M = matmul(gR, _mT(R))
    elif gR is None:
        M = -matmul(_mT(Q), gQ)
    else:
        M = matmul(gR, _mT(R)) - matmul(_mT(Q), gQ)
    if m >= n:
        # triu(M) + triu(M)^T with the diagonal counted once: the adjoint of a symmetric part
        b = matmul(Q, triu(M) + _mT(triu(M, 1)))
        if gQ is not None:
            b = b + gQ
        return (solve_triangular(_mT(R), b, upper=False, left=False),)
    from .shape_join import cat
    b = matmul(Q, tril(_mT(M) - M))
    res = solve_triangular(_mT(R.narrow(-1, 0, m)), b, upper=False, left=False)
    res = cat([res, res.new_zeros(res.shape[:-1] + (n - m,))], -1)
    return (res if gR is None else res + matmul(Q, gR),)


def qr(A, mode="reduced", *, out=None):
    return _write_many("linalg_qr", QRResult(*_qr(A, mode)), out)


@host_staged
def _qr(A, mode):
    _tensor_arg("linalg_qr", "A", 1, A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    L.check_matrix("linalg.qr", A)
    L.check_floating("linalg.qr", A)
    L.check_kernel_dtype("geqrf_cpu", A)
    a = A._data
    if mode == "r":
        q, r = np.empty((0,), a.dtype), np.linalg.qr(a, mode="r")
    else:
        q, r = np.linalg.qr(a, mode=mode)
    return record("LinalgQrBackward0", (A,), [np.ascontiguousarray(q), np.ascontiguousarray(r)],
                  _qr_backward, save_outputs=(("Q", 0), ("R", 1)),
                  attrs={"mode": mode, "m": A.shape[-2], "n": A.shape[-1]})


# ------------------------------------------------------------------------------------ eigh

def _eigh_backward(node, gL, gV):
    from .triangular import diag_embed
    L_, V = node.saved("L"), node.saved("V")
    if gV is None:
        if gL is None:
            return (None,)
        return (matmul(V * gL.unsqueeze(-2), _mT(V)),)
    VhgV = matmul(_mT(V), gV)
    VhgV = 0.5 * (VhgV - _mT(VhgV))
    E = L_.unsqueeze(-2) - L_.unsqueeze(-1)
    n = E.shape[-1]
    from .basic import eye
    E = E + eye(n, dtype=E.dtype, device=E.device)  # its diagonal (0) divides a zero diagonal
    ret = VhgV / E
    if gL is not None:
        ret = ret + diag_embed(gL)
    return (matmul(V, matmul(ret, _mT(V))),)


@host_staged
def _eigh(A, UPLO, fname):
    _tensor_arg(fname, "A", 1, A)
    L.check_square("linalg.eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    L.check_kernel_dtype("linalg_eigh_cpu", A)
    a = A._data
    try:
        w, v = np.linalg.eigh(a, UPLO=UPLO)
    except np.linalg.LinAlgError:
        _raise_eigh_info(a, UPLO)
        raise
    return record("LinalgEighBackward0", (A,), [w, np.ascontiguousarray(v)], _eigh_backward,
                  save_outputs=(("L", 0), ("V", 1)))


def _raise_eigh_info(a, UPLO):
    """syevd's error code for the first matrix that did not converge, in PyTorch's words."""
    from scipy.linalg import lapack
    syevd = lapack.get_lapack_funcs("syevd", (a,))
    stack = np.ascontiguousarray(a).reshape((-1,) + a.shape[-2:])
    for i, m in enumerate(stack):
        info = syevd(m, compute_v=1, lower=int(UPLO == "L"))[-1]
        if info > 0:
            where = "" if a.ndim == 2 else f": (Batch element {i})"
            raise L.LinAlgError(
                f"linalg.eigh{where}: The algorithm failed to converge because the input matrix "
                f"is ill-conditioned or has too many repeated eigenvalues (error code: {info}).")


def eigh(A, UPLO="L", *, out=None):
    return _write_many("linalg_eigh", EighResult(*_eigh(A, UPLO, "linalg_eigh")), out)


def eigvalsh(A, UPLO="L", *, out=None):
    return _write_out("linalg_eigvalsh", _eigh(A, UPLO, "linalg_eigvalsh")[0], out)


# ------------------------------------------------------------------------------------- svd

def _svd_backward(node, gU, gS, gVh):
    """FunctionsManual's svd_backward (real case), on the reduced factors."""
    k = node.ctx.attrs["k"]
    U, S, Vh = node.saved("U"), node.saved("S"), node.saved("Vh")
    if node.ctx.attrs["full"]:
        U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
        gU = None if gU is None else gU.narrow(-1, 0, k)
        gVh = None if gVh is None else gVh.narrow(-2, 0, k)
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:
        if gS is None:
            return (None,)
        return (matmul(U, gS.unsqueeze(-1) * Vh) if m >= n else matmul(U * gS.unsqueeze(-2), Vh),)
    from .basic import eye
    from .triangular import diag_embed
    UhgU = None if gU is None else matmul(_mT(U), gU)
    UhgU = None if UhgU is None else UhgU - _mT(UhgU)
    VhgV = None if gVh is None else matmul(Vh, _mT(gVh))
    VhgV = None if VhgV is None else VhgV - _mT(VhgV)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye(k, dtype=S.dtype, device=S.device)
    if UhgU is not None and VhgV is not None:
        gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E
    elif UhgU is not None:
        gA = UhgU * (S.unsqueeze(-2) / E)
    else:
        gA = S.unsqueeze(-1) * (VhgV / E)
    if gS is not None:
        gA = gA + diag_embed(gS)
    if m > n and gU is not None:
        gA = matmul(U, gA)
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - matmul(U, matmul(_mT(U), gUSinv))
        return (matmul(gA, Vh),)
    if m < n and gVh is not None:
        gA = matmul(gA, Vh)
        SinvgVh = gVh / S.unsqueeze(-1)
        gA = gA + SinvgVh - matmul(matmul(SinvgVh, _mT(Vh)), Vh)
        return (matmul(U, gA),)
    return (matmul(U, matmul(gA, Vh)) if m >= n else matmul(matmul(U, gA), Vh),)


@host_staged
def _svd(A, full_matrices, fname):
    _tensor_arg(fname, "A", 1, A)
    L.check_matrix("linalg.svd", A)
    L.check_floating("linalg.svd", A)
    L.check_kernel_dtype("linalg_svd_cpu", A)
    a = A._data
    bad = ~np.isfinite(a).reshape((-1, a.shape[-2] * a.shape[-1])).all(-1)
    if bad.any():
        where = "" if a.ndim == 2 else f": (Batch element {int(np.argmax(bad))})"
        raise L.LinAlgError(f"linalg.svd{where}: The algorithm failed to converge because the "
                            "input matrix contained non-finite values.")
    u, s, vh = np.linalg.svd(a, full_matrices=bool(full_matrices))
    return record("LinalgSvdBackward0", (A,), [u, s, vh], _svd_backward,
                  save_outputs=(("U", 0), ("S", 1), ("Vh", 2)),
                  attrs={"full": bool(full_matrices), "k": s.shape[-1]})


def svd(A, full_matrices=True, *, driver=None, out=None):
    return _write_many("linalg_svd", SVDResult(*_svd(A, full_matrices, "linalg_svd")), out)


def svdvals(A, *, driver=None, out=None):
    return _write_out("linalg_svdvals", _svd(A, False, "linalg_svdvals")[1], out)


# ------------------------------------------------------------------------- pinv, matrix_rank

def _tolerances(A, atol, rtol):
    """PyTorch's get_atol_rtol: rtol defaults to eps * max(m, n), or 0 when atol > 0 is
    given."""
    eps = float(np.finfo(A.dtype.np).eps)
    a = 0.0 if atol is None else float(atol)
    if rtol is None:
        r = 0.0 if (atol is not None and a > 0) else eps * max(A.shape[-2], A.shape[-1])
    else:
        r = float(rtol)
    return a, r


def _pinv_backward(node, g):
    return (_pinv_vjp(g, node.saved("P"), node.saved("A")),)


def _pinv_vjp(g, P, A):
    """FunctionsManual's pinv_backward: the gradient wrt A of <g, pinv(A)>."""
    m, n = A.shape[-2], A.shape[-1]
    Ph, gh = _mT(P), _mT(g)
    if m <= n:
        K = matmul(gh, P)
        KPh = matmul(K, Ph)
        return (-_mT(matmul(P, K)) + KPh - matmul(matmul(A, P), KPh)
                + matmul(matmul(Ph, P), gh - matmul(K, A)))
    K = matmul(P, gh)
    PhK = matmul(Ph, K)
    return (-_mT(matmul(K, P)) + matmul(matmul(gh - matmul(A, K), P), Ph) + PhK
            - matmul(matmul(PhK, P), A))


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    return _write_out("linalg_pinv", _pinv(A, atol, rtol, hermitian), out)


@host_staged
def _pinv(A, atol, rtol, hermitian):
    _tensor_arg("linalg_pinv", "input", 1, A)
    if A.ndim < 2 or A.dtype.name not in ("float32", "float64"):
        raise RuntimeError(f"linalg.pinv({D.scalar_name(A.dtype)}{{{list(A.shape)}}}): expected "
                           "a tensor with 2 or more dimensions of float, double, cfloat or "
                           "cdouble types")
    if hermitian:
        L.check_square("linalg.eigh", A)
    a = A._data
    at, rt = _tolerances(A, atol, rtol)
    with np.errstate(all="ignore"):
        if hermitian:
            w, v = np.linalg.eigh(a)
            big = np.abs(w).max(-1, keepdims=True, initial=0.0)
            keep = np.abs(w) > np.maximum(at, rt * big)
            winv = np.where(keep, 1.0 / np.where(keep, w, 1.0), 0.0).astype(a.dtype)
            p = (v * winv[..., None, :]) @ np.swapaxes(v, -1, -2)
        else:
            u, s, vh = np.linalg.svd(a, full_matrices=False)
            big = s[..., :1] if s.shape[-1] else np.zeros(s.shape[:-1] + (1,), s.dtype)
            keep = s > np.maximum(at, rt * big)
            sinv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0).astype(a.dtype)
            p = (np.swapaxes(vh, -1, -2) * sinv[..., None, :]) @ np.swapaxes(u, -1, -2)
    return record("LinalgPinvBackward0", (A,), np.ascontiguousarray(p, a.dtype),
                  _pinv_backward, save=(("A", A),), save_outputs=(("P", 0),))


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    return _write_out("linalg_matrix_rank", _matrix_rank(A, atol, rtol, hermitian), out)


@host_staged
def _matrix_rank(A, atol, rtol, hermitian):
    _tensor_arg("linalg_matrix_rank", "input", 1, A)
    L.check_matrix("torch.linalg.matrix_rank", A, "input")
    if A.dtype.name not in ("float32", "float64"):
        raise RuntimeError("This function doesn't handle types other than float and double")
    a = A._data
    at, rt = _tolerances(A, atol, rtol)
    if hermitian:
        s = np.abs(np.linalg.eigvalsh(a))
    else:
        s = np.linalg.svd(a, compute_uv=False)
    big = s.max(-1, keepdims=True, initial=0.0)
    rank = (s > np.maximum(at, rt * big)).sum(-1).astype(np.int64)
    return wrap(np.asarray(rank))


# ----------------------------------------------------------------------------------- lstsq

_LSTSQ = "torch.linalg.lstsq"


def _lstsq_check(A, B, driver):
    if A.ndim < 2:
        raise RuntimeError(f"{_LSTSQ}: input must have at least 2 dimensions.")
    if B.ndim < 1:
        raise RuntimeError(f"{_LSTSQ}: other must have at least 1 dimension.")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{_LSTSQ}: Expected input and other to have the same dtype, but got "
                           f"input's dtype {D.scalar_name(A.dtype)} and other's dtype "
                           f"{D.scalar_name(B.dtype)}")
    diff = A.ndim - B.ndim
    if not 0 <= diff <= 1:
        raise RuntimeError(f"{_LSTSQ}: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    if A.shape[-2] != (B.shape[-1] if diff else B.shape[-2]):
        raise RuntimeError(f"{_LSTSQ}: input.size(-2) should match other.size(-2)")
    if driver is not None and driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"{_LSTSQ}: parameter `driver` should be one of (gels, gelsy, gelsd, "
                           "gelss)")
    if A.dtype.name not in ("float32", "float64"):
        raise RuntimeError("This function doesn't handle types other than float and double")
    return bool(diff)


def _lstsq_arrays(a, b, rcond, driver):
    """Per matrix: LAPACK's solution, rank and singular values (``gels``: info as the rank)."""
    from scipy.linalg import lapack
    from scipy.linalg import lstsq as sp_lstsq
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    As, Bs = a.reshape((-1, m, n)), b.reshape((-1, m, b.shape[-1]))
    X = np.empty((As.shape[0], n, b.shape[-1]), a.dtype)
    ranks = np.zeros(As.shape[0], np.int64)
    svs = np.zeros((As.shape[0], min(m, n)), a.dtype)
    for i in range(As.shape[0]):
        if driver == "gels":
            gels = lapack.get_lapack_funcs("gels", (As[i],))
            bi = np.zeros((max(m, n), b.shape[-1]), a.dtype)
            bi[:m] = Bs[i]
            _, x, info = gels(As[i], bi)
            if info > 0:
                where = "" if not batch else f": (Batch element {i})"
                raise L.LinAlgError(
                    f"{_LSTSQ}{where}: The least squares solution could not be computed because "
                    f"the input matrix does not have full rank (error code: {info}).")
            X[i] = x[:n]
        else:
            x, _, rank, sv = sp_lstsq(As[i], Bs[i], cond=rcond, lapack_driver=driver,
                                      check_finite=False)
            X[i], ranks[i] = x, rank
            if sv is not None:
                svs[i] = sv
    return (X.reshape(batch + (n, b.shape[-1])), ranks.reshape(batch),
            svs.reshape(batch + (min(m, n),)))


def _lstsq_backward(node, gX, gres):
    from .linalg_solve import _mT as mT
    A, B, X = node.saved("A"), node.saved("B"), node.saved("X")
    vector = node.ctx.attrs["vector"]
    if vector:
        B, X = B.unsqueeze(-1), X.unsqueeze(-1)
        gX = None if gX is None else gX.unsqueeze(-1)
    need_a, need_b = node.ctx.needs_input_grad
    gA = gB = None
    if gX is not None:
        P = pinv(A)
        if need_a:
            gA = _pinv_vjp(matmul(gX, mT(B)), P, A)
        if need_b:
            gB = matmul(mT(P), gX)
    if gres is not None and gres.numel():
        # at the minimum the residuals' derivative in X vanishes: only A and B move them
        r = (matmul(A, X) - B) * (2.0 * gres.unsqueeze(-2))
        if need_a:
            ga = matmul(r, mT(X))
            gA = ga if gA is None else gA + ga
        if need_b:
            gB = -r if gB is None else gB - r
    if vector and gB is not None:
        gB = gB.squeeze(-1)
    return (gA, gB)


@host_staged
def lstsq(A, B, rcond=None, *, driver=None):
    """Least squares (the CPU drivers: gelsy by default, gelsd, gelss, gels). Residuals
    (||AX - B||^2 per column) only when m > n, the driver is not gelsy and every matrix has
    full rank, as PyTorch."""
    _tensor_arg("linalg_lstsq", "self", 1, A)
    _tensor_arg("linalg_lstsq", "b", 2, B)
    vector = _lstsq_check(A, B, driver)
    B_ = B.unsqueeze(-1) if vector else B
    batch = L.broadcast_batch(A.shape, B_.shape)
    a, b = A._data, B_._data
    m, n = A.shape[-2:]
    driver = driver or "gelsy"
    rc = float(np.finfo(a.dtype).eps) * max(m, n) if rcond is None else float(rcond)
    a = np.ascontiguousarray(np.broadcast_to(a, batch + (m, n)))
    b = np.ascontiguousarray(np.broadcast_to(b, batch + b.shape[-2:]))
    x, rank, sv = _lstsq_arrays(a, b, rc, driver)
    full = driver == "gels" or bool((rank == n).all())
    if m > n and driver != "gelsy" and full:
        res = ((a @ x - b) ** 2).sum(-2).astype(a.dtype)
    else:
        res = np.empty((0,), a.dtype)
    if vector:
        x = x[..., 0]
    # rank and singular values describe A: PyTorch shapes them by A's own batch
    pad = (1,) * (len(batch) - (A.ndim - 2)) + tuple(A.shape[:-2])
    own = tuple(slice(None) if p == q else slice(0, 1) for p, q in zip(pad, batch))
    rank = rank[own].reshape(A.shape[:-2])
    sv = sv[own].reshape(A.shape[:-2] + sv.shape[-1:])
    X, residuals = record("LinalgLstsqBackward0", (A, B), [np.ascontiguousarray(x), res],
                          _lstsq_backward, save=(("A", A), ("B", B)), save_outputs=(("X", 0),),
                          attrs={"vector": vector})
    rank_t = wrap(np.asarray(rank) if driver != "gels" else np.empty((0,), np.int64))
    sv_t = wrap(sv if driver in ("gelsd", "gelss") else np.empty((0,), a.dtype))
    return LstsqResult(X, residuals, rank_t, sv_t)
