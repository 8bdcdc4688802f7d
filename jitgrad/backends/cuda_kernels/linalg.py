"""Small dense solvers on the device: LU with partial pivoting (LAPACK getf2's order: the first
largest |pivot|, rows swapped, a zero pivot recorded in ``info`` and the factorization carried
on), the LU solve, determinants from the LU, Cholesky (potf2's column order, stopping at the
first pivot that is not positive) and triangular solves.

One thread per matrix (per right-hand column for the solves), grid-stride: these are for the
small matrices (a few dozen rows) the ops are used on in training code, where a block per
matrix would idle most of its threads at barriers. Every kernel works in place on a fresh
C-contiguous (batch, n, m) copy. Typed ``zero``/``one`` arguments keep float32 kernels free of
float64 arithmetic (a bare literal would promote them).

The functions below mirror ``ops/linalg_lapack``'s host functions (same names, arguments and
results, CudaArrays for NumPy arrays), so an op picks its module by where its data lives.
"""
from __future__ import annotations

import math

import numpy as np

from ..cuda_env import kernel_jit
from .common import cuda

__all__ = ["lu_solve_info", "inv_info", "cholesky_info", "triangular_solve", "det", "slogdet",
           "lu_factor_info", "lu_solve_factored"]

_cache: dict = {}


def lu_kernel(a, n, batch, piv, info, zero):
    for m in range(cuda.grid(1), batch, cuda.gridsize(1)):
        base = m * n * n
        info[m] = 0
        for j in range(n):
            p = j
            best = abs(a[base + j * n + j])
            for i in range(j + 1, n):
                v = abs(a[base + i * n + j])
                if v > best:
                    best = v
                    p = i
            piv[m * n + j] = p + 1
            if a[base + p * n + j] != zero:
                if p != j:
                    for k in range(n):
                        t = a[base + j * n + k]
                        a[base + j * n + k] = a[base + p * n + k]
                        a[base + p * n + k] = t
                d = a[base + j * n + j]
                for i in range(j + 1, n):
                    a[base + i * n + j] = a[base + i * n + j] / d
            elif info[m] == 0:
                info[m] = j + 1
            for i in range(j + 1, n):
                f = a[base + i * n + j]
                for k in range(j + 1, n):
                    a[base + i * n + k] = a[base + i * n + k] - f * a[base + j * n + k]


def lu_solve_kernel(lu, piv, n, b, k, total, ident, zero, one):
    """B <- A^{-1} B for each (matrix, column); ``ident``: B starts as the identity (inv)."""
    for t in range(cuda.grid(1), total, cuda.gridsize(1)):
        m = t // k
        c = t - m * k
        la = m * n * n
        bb = m * n * k + c
        if ident:
            for i in range(n):
                b[bb + i * k] = one if i == c else zero
        for i in range(n):
            p = piv[m * n + i] - 1
            if p != i:
                s = b[bb + i * k]
                b[bb + i * k] = b[bb + p * k]
                b[bb + p * k] = s
        for i in range(n):
            s = b[bb + i * k]
            for j in range(i):
                s = s - lu[la + i * n + j] * b[bb + j * k]
            b[bb + i * k] = s
        for i in range(n - 1, -1, -1):
            s = b[bb + i * k]
            for j in range(i + 1, n):
                s = s - lu[la + i * n + j] * b[bb + j * k]
            b[bb + i * k] = s / lu[la + i * n + i]


def det_kernel(lu, piv, n, batch, det, sign, logabs, zero, one):
    """det = sign(perm) prod(diag U); slogdet's sign and sum(log|u_ii|) (-inf when singular,
    with sign 0)."""
    for m in range(cuda.grid(1), batch, cuda.gridsize(1)):
        d = one
        s = one
        la = zero
        singular = False
        for i in range(n):
            u = lu[m * n * n + i * n + i]
            if piv[m * n + i] != i + 1:
                d = -d
                s = -s
            d = d * u
            if u < zero:
                s = -s
            if u != zero:  # log(0) is -inf on the device but an error in the simulator
                la = la + math.log(abs(u))
            else:
                singular = True
        det[m] = d
        if singular:
            s = zero
            la = -(one / zero)
        sign[m] = s
        logabs[m] = la


def cholesky_kernel(a, n, batch, info, zero):
    """Lower Cholesky factor in place from the lower triangle (upper triangle zeroed)."""
    for m in range(cuda.grid(1), batch, cuda.gridsize(1)):
        base = m * n * n
        info[m] = 0
        for j in range(n):
            for k in range(j + 1, n):
                a[base + j * n + k] = zero
        for j in range(n):
            s = a[base + j * n + j]
            for k in range(j):
                s = s - a[base + j * n + k] * a[base + j * n + k]
            if not s > zero:  # also NaN: potrf stops at the first pivot that is not positive
                a[base + j * n + j] = s
                info[m] = j + 1
                break
            s = math.sqrt(s)
            a[base + j * n + j] = s
            for i in range(j + 1, n):
                t = a[base + i * n + j]
                for k in range(j):
                    t = t - a[base + i * n + k] * a[base + j * n + k]
                a[base + i * n + j] = t / s


def trsm_kernel(a, n, b, k, total, upper, unit):
    """B <- A^{-1} B (left, A triangular; no singularity check, as BLAS trsm)."""
    for t in range(cuda.grid(1), total, cuda.gridsize(1)):
        m = t // k
        c = t - m * k
        la = m * n * n
        bb = m * n * k + c
        for r in range(n):
            i = n - 1 - r if upper else r
            s = b[bb + i * k]
            if upper:
                for j in range(i + 1, n):
                    s = s - a[la + i * n + j] * b[bb + j * k]
            else:
                for j in range(i):
                    s = s - a[la + i * n + j] * b[bb + j * k]
            b[bb + i * k] = s if unit else s / a[la + i * n + i]


_PY = {"lu": lu_kernel, "lu_solve": lu_solve_kernel, "det": det_kernel,
       "cholesky": cholesky_kernel, "trsm": trsm_kernel}


def kernel(name):
    """The compiled ``name`` kernel (one dispatcher each; numba specializes per dtype)."""
    hit = _cache.get(name)
    if hit is None:
        hit = _cache[name] = kernel_jit(_PY[name])
    return hit


# ------------------------------------------------------------------------ array level

def _launch(name, total, args):
    from .. import cuda as B
    if total:
        B.launch_flat(kernel(name), total, args)


def _copy(x, shape=None):
    """A fresh C-contiguous (batch, r, c) copy of CudaArray ``x`` (broadcast to ``shape``)."""
    from ..._cuda_array import CudaArray
    from .. import cuda as B
    shape = tuple(x.shape if shape is None else shape)
    flat = x.flat(shape)
    if shape == x.shape and x.is_contiguous():  # flat() gave x's own buffer: the kernels write
        out = B.empty(flat.shape, x.dtype)
        if flat.shape[0]:
            B.copy_device(out, flat)
        flat = out
    return CudaArray(flat, shape)


def _batch(shape):
    return int(np.prod(shape[:-2], dtype=np.int64))


def _scalars(dt):
    t = np.dtype(dt).type
    return t(0), t(1)


def _lu(a):
    """(LU, pivots, info) of each matrix of CudaArray ``a``."""
    from ..._cuda_array import CudaArray
    from .. import cuda as B
    lu = _copy(a)
    n, batch = a.shape[-1], _batch(a.shape)
    piv = B.empty((max(batch * n, 1),), np.int32)
    info = B.empty((max(batch, 1),), np.int32)
    _launch("lu", batch, (lu.buf, np.int64(n), np.int64(batch), piv, info,
                          _scalars(a.dtype)[0]))
    piv = CudaArray(piv[:batch * n], a.shape[:-1])
    return lu, piv, CudaArray(info[:batch], a.shape[:-2])


def lu_solve_info(A, B_, ident=False):
    """``A^{-1} B`` (batch shapes broadcast) and getrf's info per matrix of ``A``."""
    lu, piv, info = _lu(A)
    n = A.shape[-1]
    batch = tuple(np.broadcast_shapes(A.shape[:-2], B_.shape[:-2]))
    k = B_.shape[-1]
    x = _copy(B_, batch + (n, k))
    if batch != A.shape[:-2]:
        lu, piv = _copy(lu, batch + (n, n)), _copy(piv, batch + (n,))
    total = _batch(x.shape) * k
    zero, one = _scalars(A.dtype)
    _launch("lu_solve", total, (lu.buf, piv.buf, np.int64(n), x.buf, np.int64(k),
                                np.int64(total), bool(ident), zero, one))
    return x, info


def lu_factor_info(A):
    """(LU, pivots, info) as the host's getrf gives them; the kernel factors square matrices."""
    if A.shape[-1] != A.shape[-2]:
        raise NotImplementedError("linalg.lu_factor: jitgrad's CUDA LU kernel factors square "
                                  "matrices only; call it on a .cpu() tensor")
    return _lu(A)


def lu_solve_factored(LU, piv, B_, trans: bool):
    """``A^{-1} B`` from a packed LU and its pivots (batch shapes broadcast)."""
    if trans:
        raise NotImplementedError("linalg.lu_solve: jitgrad's CUDA LU solve has no transposed "
                                  "form (adjoint, or left=False); call it on a .cpu() tensor")
    n, k = LU.shape[-1], B_.shape[-1]
    batch = tuple(np.broadcast_shapes(LU.shape[:-2], B_.shape[:-2]))
    x = _copy(B_, batch + (n, k))
    lu, piv = _copy(LU, batch + (n, n)), _copy(piv, batch + (n,))
    total = _batch(x.shape) * k
    zero, one = _scalars(LU.dtype)
    _launch("lu_solve", total, (lu.buf, piv.buf, np.int64(n), x.buf, np.int64(k),
                                np.int64(total), False, zero, one))
    return x


def inv_info(A):
    return lu_solve_info(A, A, ident=True)


def _det_parts(A):
    from ..._cuda_array import CudaArray
    from .. import cuda as B
    lu, piv, _ = _lu(A)
    n, batch = A.shape[-1], _batch(A.shape)
    outs = [B.empty((max(batch, 1),), A.dtype) for _ in range(3)]
    zero, one = _scalars(A.dtype)
    _launch("det", batch, (lu.buf, piv.buf, np.int64(n), np.int64(batch), *outs, zero, one))
    return [CudaArray(o[:batch], A.shape[:-2]) for o in outs]


def det(A):
    return _det_parts(A)[0]


def slogdet(A):
    _, sign, logabs = _det_parts(A)
    return sign, logabs


def cholesky_info(A, upper: bool):
    """The factor read from the lower triangle (``upper``: the upper one, as U = L^T of A^T)
    and potrf's info."""
    from ..._cuda_array import CudaArray
    from .. import cuda as B
    src = A.swapaxes(-1, -2) if upper else A
    lf = _copy(src)
    n, batch = A.shape[-1], _batch(A.shape)
    info = B.empty((max(batch, 1),), np.int32)
    _launch("cholesky", batch, (lf.buf, np.int64(n), np.int64(batch), info,
                                _scalars(A.dtype)[0]))
    if upper:
        lf = _copy(lf.swapaxes(-1, -2))
    return lf, CudaArray(info[:batch], A.shape[:-2])


def triangular_solve(A, B_, upper: bool, left: bool, unit: bool):
    """A^{-1} B (``left``) or B A^{-1} (as A^T X^T = B^T) for stacks of one batch shape."""
    if not left:
        xt = triangular_solve(A.swapaxes(-1, -2), B_.swapaxes(-1, -2), not upper, True, unit)
        return _copy(xt.swapaxes(-1, -2))
    a, x = _copy(A), _copy(B_)
    n, k = A.shape[-1], B_.shape[-1]
    total = _batch(x.shape) * k
    _launch("trsm", total, (a.buf, np.int64(n), x.buf, np.int64(k), np.int64(total),
                            bool(upper), bool(unit)))
    return x
