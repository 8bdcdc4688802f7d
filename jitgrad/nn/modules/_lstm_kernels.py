"""Numba kernels of a whole LSTM layer-direction (``lstm_fused.py``): the forward over every time
step in one call and its backward in one call, each GEMM a call of MKL's ``cblas_?gemm`` made
from the compiled code through its address (as ``_compile/lower_kernels.run_program`` does), so
no Python runs between the time steps.

Generic over the float dtype: ``gemm`` is ``cblas_sgemm`` or ``cblas_dgemm`` to match, and
``consts`` holds (0, 1) in the dtype (the GEMMs' alpha and beta). Every array is C-contiguous;
the per-time-step arrays are indexed by time ``t`` (not by step), so a reverse direction stores
its values where the forward direction would and the weight gradients are one GEMM each.

Gate order is PyTorch's (input, forget, cell, output), each ``hidden`` wide.
"""
from __future__ import annotations

import numpy as np

from ...codegen.kcache import njit_cached as njit
from ...math import sigmoid, tanh  # vectorizable (Numba has no SVML): the step's loops vectorize

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


@njit(nogil=True, error_model="numpy")
def lstm_forward(x, w_ih, w_hh, bias, hx, cx, reverse, gemm, consts, acts, cprev, tcs, hprev,
                 y, hy, cy):
    """x (T, B, I), w_ih (4H, I), w_hh (4H, H), bias (4H,) (b_ih + b_hh, or zeros), hx/cx
    (B, H). Writes the gate activations ``acts`` (T, B, 4H), the cell state before each step
    ``cprev``, tanh of the cell state after it ``tcs``, the hidden state before it ``hprev``
    (all (T, B, H)), the output ``y`` (T, B, H) and the final ``hy``/``cy``."""
    steps, batch, n_in = x.shape
    hid = hx.shape[1]
    g4 = 4 * hid
    nb, ni, nh, n4, nr = (np.int32(batch), np.int32(n_in), np.int32(hid), np.int32(g4),
                          np.int32(steps * batch))
    one = consts[1]
    # the input projection of all steps at once (RNN.cpp's pre-computed input), bias first
    for t in range(steps):
        for b in range(batch):
            for j in range(g4):
                acts[t, b, j] = bias[j]
    gemm(_ROW_MAJOR, _NO_TRANS, _TRANS, nr, n4, ni, one, x.ctypes.data, ni, w_ih.ctypes.data, ni,
         one, acts.ctypes.data, n4)
    h = hx
    c = cx
    for s in range(steps):
        t = steps - 1 - s if reverse else s
        hp = hprev[t]
        cp = cprev[t]
        for b in range(batch):
            for j in range(hid):
                hp[b, j] = h[b, j]
                cp[b, j] = c[b, j]
        a = acts[t]
        gemm(_ROW_MAJOR, _NO_TRANS, _TRANS, nb, n4, nh, one, hp.ctypes.data, nh, w_hh.ctypes.data,
             nh, one, a.ctypes.data, n4)
        yt = y[t]
        tc = tcs[t]
        for b in range(batch):
            # 1-D rows, one activation per loop, each from j = 0: these loops vectorize (2-D
            # indexing at four gate offsets did not: 8x slower; one loop selecting tanh or
            # sigmoid per element computed both and did not vectorize in float64: 4x slower)
            ar, cpr, tcr, yr, cyr = a[b], cp[b], tc[b], yt[b], cy[b]
            for j in range(2 * hid):
                ar[j] = sigmoid(ar[j])
            for j in range(hid):
                ar[2 * hid + j] = tanh(ar[2 * hid + j])
            for j in range(hid):
                ar[3 * hid + j] = sigmoid(ar[3 * hid + j])
            for j in range(hid):
                cn = ar[hid + j] * cpr[j] + ar[j] * ar[2 * hid + j]
                tcn = tanh(cn)
                tcr[j] = tcn
                yr[j] = ar[3 * hid + j] * tcn
                cyr[j] = cn
        h = yt
        c = cy
    for b in range(batch):
        for j in range(hid):
            hy[b, j] = h[b, j]


@njit(nogil=True, error_model="numpy")
def lstm_backward(x, w_ih, w_hh, reverse, gemm, consts, acts, cprev, tcs, hprev, dy, dhy, dcy,
                  dgates, dh, dc, dx, dw_ih, dw_hh, db):
    """The VJP of ``lstm_forward`` from its saved arrays: ``dy`` (T, B, H), ``dhy``/``dcy``
    (B, H) the incoming gradients (zeros where none came). Writes the pre-activation gate
    gradients ``dgates`` (T, B, 4H), ``dh``/``dc`` (B, H: the gradients of hx and cx), ``dx``
    (T, B, I), ``dw_ih``, ``dw_hh`` and ``db`` (the gradient of either bias). The weight and
    input gradients are one GEMM each over all steps (``dgates`` is kept whole)."""
    steps, batch, n_in = x.shape
    hid = dh.shape[1]
    g4 = 4 * hid
    nb, ni, nh, n4, nr = (np.int32(batch), np.int32(n_in), np.int32(hid), np.int32(g4),
                          np.int32(steps * batch))
    zero, one = consts[0], consts[1]
    for b in range(batch):
        for j in range(hid):
            dh[b, j] = dhy[b, j]
            dc[b, j] = dcy[b, j]
    for s in range(steps):
        t = s if reverse else steps - 1 - s
        a = acts[t]
        cp = cprev[t]
        tc = tcs[t]
        dyt = dy[t]
        dg = dgates[t]
        for b in range(batch):
            ar, cpr, tcr, dyr, dgr, dhr, dcr = a[b], cp[b], tc[b], dyt[b], dg[b], dh[b], dc[b]
            for j in range(hid):
                ig = ar[j]
                fg = ar[hid + j]
                gg = ar[2 * hid + j]
                og = ar[3 * hid + j]
                tcn = tcr[j]
                dht = dyr[j] + dhr[j]
                dct = dcr[j] + dht * og * (one - tcn * tcn)
                dgr[j] = dct * gg * ig * (one - ig)
                dgr[hid + j] = dct * cpr[j] * fg * (one - fg)
                dgr[2 * hid + j] = dct * ig * (one - gg * gg)
                dgr[3 * hid + j] = dht * tcn * og * (one - og)
                dcr[j] = dct * fg
        # dh = dgates[t] @ w_hh: the hidden state's gradient for the step before
        gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, nb, nh, n4, one, dg.ctypes.data, n4,
             w_hh.ctypes.data, nh, zero, dh.ctypes.data, nh)
    gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, nr, ni, n4, one, dgates.ctypes.data, n4,
         w_ih.ctypes.data, ni, zero, dx.ctypes.data, ni)
    gemm(_ROW_MAJOR, _TRANS, _NO_TRANS, n4, ni, nr, one, dgates.ctypes.data, n4, x.ctypes.data,
         ni, zero, dw_ih.ctypes.data, ni)
    gemm(_ROW_MAJOR, _TRANS, _NO_TRANS, n4, nh, nr, one, dgates.ctypes.data, n4,
         hprev.ctypes.data, nh, zero, dw_hh.ctypes.data, nh)
    for j in range(g4):
        db[j] = zero
    for t in range(steps):
        for b in range(batch):
            for j in range(g4):
                db[j] += dgates[t, b, j]
