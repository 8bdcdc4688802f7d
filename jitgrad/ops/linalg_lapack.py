"""The factorizations' shared rules and their host arrays: PyTorch's argument checks and error
words for torch.linalg's solvers (inv, det, slogdet, solve, cholesky, solve_triangular),
``LinAlgError``, the ``info`` checks of the ``_ex`` variants, and the LAPACK calls on NumPy
arrays (``np.linalg``'s batched routines first; one LAPACK call per matrix only where a batch
holds a singular matrix, because NumPy's batched routines raise without saying which one), and
getrf/getrs for the LU family of ``linalg_lu``."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError (``torch._C._LinAlgError``): a RuntimeError subclass."""


LinAlgError.__name__ = LinAlgError.__qualname__ = "_LinAlgError"


# ------------------------------------------------------------------------ argument checks

def check_matrix(fname, t, arg="A"):
    if t.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor {arg} must have at least 2 dimensions.")


def check_square(fname, t, arg="A"):
    check_matrix(fname, t, arg)
    if t.shape[-1] != t.shape[-2]:
        raise RuntimeError(f"{fname}: {arg} must be batches of square matrices, but they are "
                           f"{t.shape[-2]} by {t.shape[-1]} matrices")


def check_floating(fname, t, low_precision=True):
    """PyTorch's checkFloatingOrComplex; ``low_precision=False`` refuses float16 as inv and
    slogdet do (det, solve and cholesky fail later, in their CPU kernel)."""
    if not t.dtype.is_floating_point:
        raise RuntimeError(f"{fname}: Expected a floating point or complex tensor as input. "
                           f"Got {D.scalar_name(t.dtype)}")
    if not low_precision and t.dtype.name in ("float16", "bfloat16"):
        raise RuntimeError(f"{fname}: Low precision dtypes not supported. Got "
                           f"{D.scalar_name(t.dtype)}")


def check_kernel_dtype(kernel, t):
    """The CPU kernels exist for float32/float64 only: PyTorch's NotImplementedError."""
    if t.dtype.name not in ("float32", "float64"):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{D.scalar_name(t.dtype)}'")


def check_solver(fname, A, B, left):
    """PyTorch's checkInputsSolver: A square, B a matrix, the shared dimension equal."""
    check_square(fname, A)
    check_matrix(fname, B, "B")
    if (A.shape[-2] != B.shape[-2]) if left else (A.shape[-1] != B.shape[-1]):
        raise RuntimeError(f"{fname}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{A.shape[-1]} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")


def broadcast_batch(a_shape, b_shape):
    """The broadcast batch shape of two stacks of matrices (PyTorch's infer_size and its
    error, ``a`` being the first)."""
    from .elementwise_call import broadcast_shapes
    return broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2]))


# ------------------------------------------------------------------------- info -> errors

def raise_for_info(info: np.ndarray, api: str, is_matrix: bool) -> None:
    """PyTorch's _linalg_check_errors: the first failing matrix's error (``(Batch element i)``
    unless the input is one matrix), worded by the API's name."""
    flat = np.asarray(info).reshape(-1)
    bad = np.flatnonzero(flat)
    if not bad.size:
        return
    i = int(bad[0])
    code = int(flat[i])
    where = "" if is_matrix else f": (Batch element {i})"
    if "inv" in api:
        msg = (f"The diagonal element {code} is zero, the inversion could not be completed "
               "because the input matrix is singular.")
    elif "solve" in api:
        msg = "The solver failed because the input matrix is singular."
    else:
        msg = ("The factorization could not be completed because the input is not "
               f"positive-definite (the leading minor of order {code} is not positive-definite).")
    raise LinAlgError(f"{api}{where}: {msg}")


# ------------------------------------------------------------------------- host LAPACK

def _stack(a, n_tail=2):
    """``a`` as a C-contiguous (N, ...) stack of its trailing ``n_tail``-d blocks."""
    return np.ascontiguousarray(a).reshape((-1,) + a.shape[a.ndim - n_tail:])


def lu_solve_info(A: np.ndarray, B: np.ndarray):
    """``A^{-1} B`` (batch shapes broadcast) and getrf's info per matrix of ``A`` (the index of
    the first zero pivot; shaped like A's batch, as PyTorch's linalg.solve_ex factors A once)."""
    info = np.zeros(A.shape[:-2], np.int32)
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    A0, A = A, np.broadcast_to(A, batch + A.shape[-2:])
    B = np.broadcast_to(B, batch + B.shape[-2:])
    try:
        with np.errstate(all="ignore"):
            return np.linalg.solve(A, B), info
    except np.linalg.LinAlgError:
        pass
    from scipy.linalg import lapack  # on first use: SciPy adds ~0.25 s to import jitgrad
    getrf, getrs = lapack.get_lapack_funcs(("getrf", "getrs"), (A,))
    flat = info.reshape(-1)
    for i, a in enumerate(_stack(A0)):
        flat[i] = getrf(a)[2]
    As, Bs = _stack(A), _stack(B)
    X = np.empty_like(Bs)
    with np.errstate(all="ignore"):
        for i in range(As.shape[0]):
            lu, piv, _ = getrf(As[i])
            X[i] = getrs(lu, piv, Bs[i])[0]
    return X.reshape(B.shape), info


def inv_info(A: np.ndarray):
    return lu_solve_info(A, np.eye(A.shape[-1], dtype=A.dtype))


def det(A: np.ndarray):
    with np.errstate(all="ignore"):
        return np.asarray(np.linalg.det(A), A.dtype)


def slogdet(A: np.ndarray):
    with np.errstate(all="ignore"):
        sign, logabs = np.linalg.slogdet(A)
    return np.asarray(sign, A.dtype), np.asarray(logabs, A.dtype)


def cholesky_info(A: np.ndarray, upper: bool):
    """The Cholesky factor of each matrix (read from its lower triangle, or the upper with
    ``upper``) and potrf's info (the order of the first leading minor that is not
    positive-definite; the factor is then partial, as LAPACK leaves it)."""
    info = np.zeros(A.shape[:-2], np.int32)
    try:
        with np.errstate(all="ignore"):
            Lf = np.linalg.cholesky(A, upper=upper)
    except np.linalg.LinAlgError:
        from scipy.linalg import lapack
        potrf = lapack.get_lapack_funcs("potrf", (A,))
        As = _stack(A)
        Lf = np.empty_like(As)
        flat = info.reshape(-1)
        with np.errstate(all="ignore"):
            for i in range(As.shape[0]):
                Lf[i], flat[i] = potrf(As[i], lower=not upper, clean=1)
        Lf = Lf.reshape(A.shape)
    # MKL's potrf (PyTorch's) stops at a NaN pivot; OpenBLAS's carries it on. A NaN spreads
    # only to later pivots, so the first NaN pivot is where MKL stops.
    nan = np.isnan(np.diagonal(Lf, 0, -2, -1))
    if nan.any():
        first = np.where(nan.any(-1), nan.argmax(-1) + 1, 0).astype(np.int32)
        info = np.where(info == 0, first, info).astype(np.int32)
    return Lf, info


def triangular_solve(A: np.ndarray, B: np.ndarray, upper: bool, left: bool, unit: bool):
    """BLAS trsm per matrix (no singularity check: zero pivots give inf/NaN, as PyTorch's)."""
    from scipy.linalg import blas
    trsm = blas.get_blas_funcs("trsm", (A,))
    if A.size == 0 or B.size == 0:  # nothing to solve (and no stack shape to infer)
        return np.zeros(B.shape, B.dtype)
    As, Bs = _stack(A), _stack(B)
    X = np.empty_like(Bs)
    with np.errstate(all="ignore"):
        for i in range(As.shape[0]):
            X[i] = trsm(1.0, As[i], Bs[i], side=0 if left else 1, lower=not upper,
                        diag=1 if unit else 0)
    return X.reshape(B.shape)


def lu_factor_info(A: np.ndarray):
    """getrf per matrix (any m x n): the packed LU, the pivots (LAPACK's 1-based row swaps,
    int32, min(m, n) of them) and info (the first exactly-zero pivot of U, 1-based)."""
    m, n = A.shape[-2:]
    k = min(m, n)
    LU = np.empty(A.shape, A.dtype)
    piv = np.empty(A.shape[:-2] + (k,), np.int32)
    info = np.zeros(A.shape[:-2], np.int32)
    if A.size == 0:
        piv[...] = np.arange(1, k + 1, dtype=np.int32)
        return LU, piv, info
    from scipy.linalg import lapack
    getrf = lapack.get_lapack_funcs("getrf", (A,))
    lus, pivs, infos = LU.reshape((-1, m, n)), piv.reshape((-1, k)), info.reshape(-1)
    with np.errstate(all="ignore"):
        for i, a in enumerate(_stack(A)):
            lus[i], p, infos[i] = getrf(a)
            pivs[i] = p + 1  # SciPy returns the swaps 0-based
    return LU, piv, info


def lu_solve_factored(LU: np.ndarray, piv: np.ndarray, B: np.ndarray, trans: bool):
    """getrs per matrix: ``A^{-1} B`` (``trans``: ``A^{-T} B``) for A = P L U packed in ``LU``;
    the batch shapes broadcast (``piv`` has LU's)."""
    n = LU.shape[-1]
    batch = np.broadcast_shapes(LU.shape[:-2], B.shape[:-2])
    LUs = _stack(np.broadcast_to(LU, batch + LU.shape[-2:]))
    pivs = _stack(np.broadcast_to(piv, batch + piv.shape[-1:]), 1)
    Bs = _stack(np.broadcast_to(B, batch + B.shape[-2:]))
    X = np.empty_like(Bs)
    if X.size == 0 or n == 0:
        return X.reshape(batch + B.shape[-2:])
    from scipy.linalg import lapack
    getrs = lapack.get_lapack_funcs("getrs", (LUs,))
    with np.errstate(all="ignore"):
        for i in range(LUs.shape[0]):
            X[i] = getrs(LUs[i], pivs[i] - 1, Bs[i], trans=int(trans))[0]
    return X.reshape(batch + B.shape[-2:])
