"""Numba kernels of ``ctc_loss``: ATen's CPU forward (alpha) and backward (beta and the
collected gradient) recursions of ``LossCTC.cpp``, statement for statement, in log space over
the extended target ``l'`` (blanks between the labels and at both ends).

Layouts: ``lp`` is the (T, N, C) log-probabilities, C-contiguous; ``tg`` the targets as one
int64 vector, item ``b``'s labels at ``tg[offs[b] : offs[b] + tl[b]]``; ``la``/``lb`` are
(N, T, 2 * max(tl) + 1). Every float is the input's dtype: ``neginf`` and ``zero`` come in as
arguments of that dtype so that Numba keeps float32 arithmetic in float32 (a literal ``0`` would
unify a float32 variable to float64), as the C++ ``scalar_t`` does.

Each batch loop comes as a serial and a ``prange`` twin around one inlined item body (as
``_norm_kernels``: Numba's disk cache keys entries by function and signature, not by the
``parallel`` flag). Items are independent, so the twins give the same bits.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from ...codegen.kcache import njit_cached as njit

__all__ = ["forward", "backward", "PARALLEL_MIN_WORK"]

# Below this many (batch x time x extended-target) steps a parallel launch costs more than
# it saves on the 2-core VM.
PARALLEL_MIN_WORK = 1 << 15

_FLAGS = dict(nogil=True, error_model="numpy")


@njit(inline="always", **_FLAGS)
def _prime(tg, off, s, blank):
    """``get_target_prime``: the label at position ``s`` of the extended target."""
    if s % 2 == 0:
        return blank
    return tg[off + s // 2]


@njit(inline="always", **_FLAGS)
def _alpha_item(b, lp, tg, offs, il, tl, blank, la, nll, neginf, zero):
    input_length = il[b]
    target_length = tl[b]
    off = offs[b]
    if input_length == 0:
        nll[b] = -(zero if target_length == 0 else neginf)
        return
    la[b, 0, 0] = lp[0, b, blank]
    if target_length > 0:
        la[b, 0, 1] = lp[0, b, _prime(tg, off, 1, blank)]
    for t in range(1, input_length):
        for s in range(2 * target_length + 1):
            cur = _prime(tg, off, s, blank)
            la1 = la[b, t - 1, s]
            lamax = la1
            if s > 0:
                la2 = la[b, t - 1, s - 1]
                if la2 > lamax:
                    lamax = la2
            else:
                la2 = neginf
            if s > 1 and _prime(tg, off, s - 2, blank) != cur:
                la3 = la[b, t - 1, s - 2]
                if la3 > lamax:
                    lamax = la3
            else:
                la3 = neginf
            if lamax == neginf:  # cannot do neginf - neginf
                lamax = zero
            la[b, t, s] = (np.log(np.exp(la1 - lamax) + np.exp(la2 - lamax)
                                  + np.exp(la3 - lamax)) + lamax) + lp[t, b, cur]
    if target_length == 0:
        nll[b] = -la[b, input_length - 1, 0]
    else:
        l1 = la[b, input_length - 1, target_length * 2]
        l2 = la[b, input_length - 1, target_length * 2 - 1]
        m = l2 if l1 < l2 else l1  # std::max
        if m == neginf:
            m = zero
        nll[b] = -(np.log(np.exp(l1 - m) + np.exp(l2 - m)) + m)


@njit(**_FLAGS)
def _forward_serial(lp, tg, offs, il, tl, blank, la, nll, neginf, zero):
    for b in range(lp.shape[1]):
        _alpha_item(b, lp, tg, offs, il, tl, blank, la, nll, neginf, zero)


@njit(parallel=True, **_FLAGS)
def _forward_parallel(lp, tg, offs, il, tl, blank, la, nll, neginf, zero):
    for b in prange(lp.shape[1]):
        _alpha_item(b, lp, tg, offs, il, tl, blank, la, nll, neginf, zero)


@njit(inline="always", **_FLAGS)
def _beta_item(b, gout, lp, tg, offs, il, tl, blank, nll, la, lb, grad, zero_infinity,
               neginf, zero):
    T = lp.shape[0]
    C = lp.shape[2]
    nllb = nll[b]
    if zero_infinity and nllb == -neginf:
        for t in range(T):
            for c in range(C):
                grad[t, b, c] = zero
        return
    input_length = il[b]
    target_length = tl[b]
    off = offs[b]
    if input_length > 0:
        last = input_length - 1
        for s in range(lb.shape[2]):
            lb[b, last, s] = neginf
        lb[b, last, 2 * target_length] = lp[last, b, blank]
        grad[last, b, blank] = la[b, last, 2 * target_length] + lb[b, last, 2 * target_length]
        if target_length > 0:
            cur = _prime(tg, off, 2 * target_length - 1, blank)
            lb[b, last, 2 * target_length - 1] = lp[last, b, cur]
            # a blank and a non-blank: different labels, no log-add needed
            grad[last, b, cur] = (la[b, last, 2 * target_length - 1]
                                  + lb[b, last, 2 * target_length - 1])
    for t in range(input_length - 2, -1, -1):
        for s in range(2 * target_length, -1, -1):
            lb1 = lb[b, t + 1, s]
            lbmax = lb1
            cur = _prime(tg, off, s, blank)
            if s < 2 * target_length:
                lb2 = lb[b, t + 1, s + 1]
                if lb2 > lbmax:
                    lbmax = lb2
            else:
                lb2 = neginf
            if s < 2 * target_length - 1 and _prime(tg, off, s + 2, blank) != cur:
                lb3 = lb[b, t + 1, s + 2]
                if lb3 > lbmax:
                    lbmax = lb3
            else:
                lb3 = neginf
            if lbmax == neginf:
                lbmax = zero
            lb[b, t, s] = (np.log(np.exp(lb1 - lbmax) + np.exp(lb2 - lbmax)
                                  + np.exp(lb3 - lbmax)) + lbmax) + lp[t, b, cur]
            # collected[t, l'[s]] "log+=" alpha + beta (several s share one label)
            lab = la[b, t, s] + lb[b, t, s]
            lcab = grad[t, b, cur]
            if lcab == neginf:
                grad[t, b, cur] = lab
            else:
                mx = lab if lcab < lab else lcab
                grad[t, b, cur] = np.log(np.exp(lcab - mx) + np.exp(lab - mx)) + mx
    gr = gout[b]
    for t in range(input_length):
        for c in range(C):
            res = grad[t, b, c]
            lpv = lp[t, b, c]
            grad[t, b, c] = (np.exp(lpv) - np.exp(res + nllb - lpv)) * gr
    for t in range(input_length, T):
        for c in range(C):
            grad[t, b, c] = zero


@njit(**_FLAGS)
def _backward_serial(gout, lp, tg, offs, il, tl, blank, nll, la, lb, grad, zero_infinity,
                     neginf, zero):
    for b in range(lp.shape[1]):
        _beta_item(b, gout, lp, tg, offs, il, tl, blank, nll, la, lb, grad, zero_infinity,
                   neginf, zero)


@njit(parallel=True, **_FLAGS)
def _backward_parallel(gout, lp, tg, offs, il, tl, blank, nll, la, lb, grad, zero_infinity,
                       neginf, zero):
    for b in prange(lp.shape[1]):
        _beta_item(b, gout, lp, tg, offs, il, tl, blank, nll, la, lb, grad, zero_infinity,
                   neginf, zero)


def _parallel(lp, la) -> bool:
    return lp.shape[1] > 1 and la.size >= PARALLEL_MIN_WORK


def forward(lp, tg, offs, il, tl, blank, max_target_length):
    """``(neg_log_likelihood, log_alpha)`` of C-contiguous (T, N, C) ``lp`` (float32/64)."""
    T, N, _ = lp.shape
    la = np.full((N, T, 2 * max_target_length + 1), -np.inf, dtype=lp.dtype)
    nll = np.empty(N, dtype=lp.dtype)
    run = _forward_parallel if _parallel(lp, la) else _forward_serial
    run(lp, tg, offs, il, tl, blank, la, nll, lp.dtype.type(-np.inf), lp.dtype.type(0))
    return nll, la


def backward(gout, lp, tg, offs, il, tl, blank, nll, la, zero_infinity):
    """The gradient w.r.t. ``lp`` (``_ctc_loss_backward``), ``gout`` the (N,) incoming one."""
    grad = np.full(lp.shape, -np.inf, dtype=lp.dtype)  # the log of an empty sum
    lb = np.empty_like(la)
    run = _backward_parallel if _parallel(lp, la) else _backward_serial
    run(np.ascontiguousarray(gout, dtype=lp.dtype), lp, tg, offs, il, tl, blank, nll, la, lb,
        grad, bool(zero_infinity), lp.dtype.type(-np.inf), lp.dtype.type(0))
    return grad
