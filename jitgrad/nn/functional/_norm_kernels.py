"""CPU kernels of the statistics-based normalizations (batch_norm, group_norm, instance_norm).

Every one of them works on the input seen as rows: a contiguous ``(N*C, M)`` matrix (``M`` the
spatial size), one row per (sample, channel). Statistics of a channel (batch norm) or a group
(group norm) are combined from per-row moments on the host (small arrays), so the kernels below
are the only passes over the full tensor: two for the forward (moments, affine) and two for the
backward (gradient sums, affine of two inputs). Rows run in parallel (``prange``); each row is
read in one sweep, so a row stays in cache between its two statistics passes.

Sums accumulate in float64 (as ATen's CPU batch norm, whose accumulate type for float is
double); the elementwise passes run in the tensor's dtype with coefficients cast to it.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["row_moments", "row_affine", "row_grad_sums", "row_affine2"]

_FLAGS = dict(cache=True, nogil=True, error_model="numpy", parallel=True)
# The sums may be reassociated (LLVM then vectorizes them with several accumulators, as ATen's
# kernels sum); no nnan/ninf: NaN and inf inputs propagate as in PyTorch.
_SUM_FLAGS = dict(_FLAGS, fastmath={"reassoc", "contract"})


@njit(**_SUM_FLAGS)
def row_moments(x, mean, m2):
    """Per row: ``mean[r]`` and the centred sum of squares ``m2[r]`` (two passes over the row,
    float64)."""
    rows, m = x.shape
    for r in prange(rows):
        s = 0.0
        for j in range(m):
            s += x[r, j]
        mu = s / m if m > 0 else 0.0
        q = 0.0
        for j in range(m):
            d = x[r, j] - mu
            q += d * d
        mean[r] = mu
        m2[r] = q


@njit(**_FLAGS)
def row_affine(x, a, b, out):
    """``out[r, j] = x[r, j] * a[r] + b[r]`` (``a``, ``b`` in the tensor's dtype)."""
    rows, m = x.shape
    for r in prange(rows):
        ar = a[r]
        br = b[r]
        for j in range(m):
            out[r, j] = x[r, j] * ar + br


@njit(**_SUM_FLAGS)
def row_grad_sums(g, x, mean, sg, sgx):
    """Per row: ``sg[r] = sum g`` and ``sgx[r] = sum g * (x - mean[r])`` (float64)."""
    rows, m = x.shape
    for r in prange(rows):
        mu = mean[r]
        s0 = 0.0
        s1 = 0.0
        for j in range(m):
            gj = g[r, j]
            s0 += gj
            s1 += gj * (x[r, j] - mu)
        sg[r] = s0
        sgx[r] = s1


@njit(**_FLAGS)
def row_affine2(g, x, a, b, c, out):
    """``out[r, j] = g[r, j] * a[r] + x[r, j] * b[r] + c[r]`` (the input gradient of a
    normalization, its per-row coefficients folded)."""
    rows, m = x.shape
    for r in prange(rows):
        ar = a[r]
        br = b[r]
        cr = c[r]
        for j in range(m):
            out[r, j] = g[r, j] * ar + x[r, j] * br + cr


def moments(x2):
    """(mean, m2) per row of a contiguous 2-D array, as float64 vectors."""
    rows = x2.shape[0]
    mean = np.empty(rows, np.float64)
    m2 = np.empty(rows, np.float64)
    if x2.size:
        row_moments(x2, mean, m2)
    else:
        mean[:] = np.nan
        m2[:] = np.nan
    return mean, m2


def _out_like(x2):
    from ...backends import cpu
    return cpu.empty(x2.shape, x2.dtype)  # pooled: no page faults per call


def affine(x2, a, b):
    out = _out_like(x2)
    if x2.size:
        row_affine(x2, a.astype(x2.dtype), b.astype(x2.dtype), out)
    return out


def grad_sums(g2, x2, mean_rows):
    rows = x2.shape[0]
    sg = np.zeros(rows, np.float64)
    sgx = np.zeros(rows, np.float64)
    if x2.size:
        row_grad_sums(g2, x2, mean_rows.astype(np.float64), sg, sgx)
    return sg, sgx


def affine2(g2, x2, a, b, c):
    out = _out_like(x2)
    if x2.size:
        dt = x2.dtype
        row_affine2(g2, x2, a.astype(dt), b.astype(dt), c.astype(dt), out)
    return out
