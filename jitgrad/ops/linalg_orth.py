"""Orthogonal-matrix building blocks: ``geqrf`` (LAPACK's compact QR: R above the diagonal,
the Householder vectors below, and their ``tau``), ``linalg.householder_product`` (LAPACK's
orgqr: the Q those reflectors make) and ``matrix_exp`` (``linalg.matrix_exp``) — what
``nn.utils.parametrizations.orthogonal`` is built from.

``geqrf`` calls NumPy's LAPACK (``qr(mode="raw")`` is geqrf, stored transposed); like
PyTorch's it is not differentiable (its backward raises PyTorch's error).
``householder_product`` applies the reflectors ``H_i = I - tau_i v_i v_i^H`` to the first
columns of the identity in recorded ops, shown as one ``LinalgHouseholderProductBackward0``
node (``record_composition``): the values are orgqr's up to rounding and the gradients (and
double backward) are the composition's. ``matrix_exp`` runs SciPy's ``expm`` (Pade with
scaling and squaring; float32 computed in float64, then rounded) and records PyTorch's
derivative: the upper-right block of ``matrix_exp([[A^H, G], [0, A^H]])``, itself recorded,
so double backward works. CUDA tensors: geqrf and matrix_exp are staged through the host
(``host_staged``: the same nodes, matrix_exp's backward through the staged op itself);
householder_product's composition runs on the device.
"""
from __future__ import annotations

import numpy as np

from . import linalg_lapack as L
from .composite import record, record_composition
from .host_staged import host_staged
from .return_types import _return_type

__all__ = ["geqrf", "householder_product", "matrix_exp"]

GeqrfResult = _return_type("geqrf", ("a", "tau"))


def _geqrf_backward(node, *grads):
    raise RuntimeError("derivative for geqrf is not implemented")


def geqrf(input, *, out=None):
    """``(a, tau)``: LAPACK geqrf's compact QR of each matrix of ``input``."""
    res = _geqrf(input)
    if out is not None:
        for o, r in zip(out, res):
            o.resize_(r.shape).copy_(r)
        return GeqrfResult(*out)
    return GeqrfResult(*res)


@host_staged
def _geqrf(input):
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    L.check_floating("torch.geqrf", input)
    a = input._data
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    flat = a.reshape((-1, m, n))
    qa = np.empty_like(flat)
    taus = np.empty((flat.shape[0], min(m, n)), dtype=a.dtype)
    for i, mat in enumerate(flat):
        if mat.size == 0:
            continue
        h, tau = np.linalg.qr(mat, mode="raw")  # h is geqrf's (Fortran-order) a, transposed
        qa[i] = h.T
        taus[i] = tau
    return record("GeqrfBackward0", (input,), [qa.reshape(a.shape),
                                               taus.reshape(batch + (min(m, n),))],
                  _geqrf_backward)


def householder_product(input, tau, *, out=None):
    """The first ``n`` columns of ``H_1 H_2 ... H_k`` for the reflectors stored in the columns
    of ``input`` (below the diagonal, unit diagonal implied) and scalars ``tau``."""
    fname = "torch.linalg.householder_product"
    if input.ndim < 2:
        raise RuntimeError(f"{fname}: input must have at least 2 dimensions.")
    m, n = input.shape[-2:]
    k = tau.shape[-1] if tau.ndim else 1
    if m < n:
        raise RuntimeError(f"{fname}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if n < k:
        raise RuntimeError(f"{fname}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if input.ndim - tau.ndim != 1:
        raise RuntimeError(f"{fname}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.ndim} and input.ndim is equal to "
                           f"{input.ndim}")
    if tau.dtype != input.dtype:
        raise RuntimeError(f"{fname}: tau dtype {tau.dtype} does not match input dtype "
                           f"{input.dtype}")

    def build(A, t):
        from .factories import eye
        eye_mn = eye(m, n, dtype=A.dtype, device=A.device)
        # the reflector vectors: A's strictly lower part with an implied 1 on the diagonal
        V = A[..., :, :k].tril(-1) + eye_mn[:, :k]
        Q = eye_mn.expand(*A.shape[:-2], m, n)
        for i in range(k - 1, -1, -1):
            v = V[..., :, i:i + 1]
            Q = Q - t[..., i:i + 1].unsqueeze(-1) * (v @ (v.mH @ Q))
        return Q
    res = record_composition("LinalgHouseholderProductBackward0", (input, tau), build)
    if out is not None:
        out.resize_(res.shape).copy_(res)
        return out
    return res


def _matrix_exp_backward(node, g):
    from .factories import zeros_like
    from .shape_join import cat
    A = node.saved("self")
    n = A.shape[-1]
    Ah = A.mH
    meta = cat([cat([Ah, g], -1), cat([zeros_like(A), Ah], -1)], -2)
    return (matrix_exp(meta).narrow(-2, 0, n).narrow(-1, n, n),)


@host_staged
def matrix_exp(A):
    """``exp(A)`` of each square matrix of ``A``."""
    L.check_square("linalg.matrix_exp", A)
    L.check_floating("linalg.matrix_exp", A)
    a = A._data
    from scipy.linalg import expm
    wide = a.astype(np.float64) if a.dtype in (np.float16, np.float32) else a
    if wide.size == 0:
        e = wide.copy()
    else:
        e = expm(wide)
    return record("LinalgMatrixExpBackward0", (A,), np.ascontiguousarray(e.astype(a.dtype)),
                  _matrix_exp_backward, save=(("self", A),))
