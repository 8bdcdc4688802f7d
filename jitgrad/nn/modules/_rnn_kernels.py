"""Numba kernels of a whole GRU, plain (tanh/relu) RNN or (by rows, for packed input) LSTM
layer-direction (``rnn_fused.py``): the forward over every time step in one call and its
backward in one call, each GEMM a call of MKL's
``cblas_?gemm`` through its address (as ``_lstm_kernels.py``), so no Python runs between steps.

Packed and padded input alike: the input is 2-D (rows, features); time step ``t`` owns the
``sizes[t]`` rows from ``offsets[t]`` and the first ``sizes[t]`` rows of the hidden state
(``sizes`` non-increasing: a padded input has every size equal to the batch). A forward
direction leaves the rows that ended early at their last value, a reverse direction lets a
sequence join when its last step is reached: RNN.cpp's packed layers. Per-step arrays are indexed
by row, so both directions store where the other would and weight gradients are one GEMM each.

The arithmetic is RNN.cpp's in its order: the input projection ``x @ w_ih.T + b_ih`` of all
steps first (bias in C, beta 1, as addmm), per step ``h @ w_hh.T + b_hh`` the same way, then
GRU's gates r, z, n (``n = tanh(i_n + h_n * r)``, ``hy = (hx - n) * z + n``) or the simple cell's
``act(h_proj + x_proj)``. The backward follows the per-op graph's VJPs (``g - g * z`` for n's
gradient, as the separate sub/mul/add ops give it).
"""
from __future__ import annotations

import numpy as np

from ...codegen.kcache import njit_cached as njit
from ...math import aten_sigmoid as sigmoid  # the sigmoid op's (ATen's bits)
from ...math import tanh

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


@njit(nogil=True, error_model="numpy")
def _project(dst, src, w, bias, gemm, one, rows, n_out, n_in):
    """dst[:rows] = bias + src[:rows] @ w.T (dst (rows, n_out) C-contiguous)."""
    for i in range(rows):
        for j in range(n_out):
            dst[i, j] = bias[j]
    gemm(_ROW_MAJOR, _NO_TRANS, _TRANS, np.int32(rows), np.int32(n_out), np.int32(n_in), one,
         src.ctypes.data, np.int32(n_in), w.ctypes.data, np.int32(n_in), one, dst.ctypes.data,
         np.int32(n_out))


@njit(nogil=True, error_model="numpy")
def _input_grads(dgates, x, w_ih, gemm, consts, dx, dw_ih):
    """dx = dgates @ w_ih and dw_ih = dgates.T @ x over every row at once."""
    zero, one = consts[0], consts[1]
    rows, n_g = dgates.shape
    n_in = x.shape[1]
    nr, ng, ni = np.int32(rows), np.int32(n_g), np.int32(n_in)
    gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, nr, ni, ng, one, dgates.ctypes.data, ng,
         w_ih.ctypes.data, ni, zero, dx.ctypes.data, ni)
    gemm(_ROW_MAJOR, _TRANS, _NO_TRANS, ng, ni, nr, one, dgates.ctypes.data, ng, x.ctypes.data,
         ni, zero, dw_ih.ctypes.data, ni)


@njit(nogil=True, error_model="numpy")
def _hh_grad(dgates, hprev, gemm, consts, dw_hh):
    """dw_hh = dgates.T @ hprev."""
    zero, one = consts[0], consts[1]
    rows, n_g = dgates.shape
    hid = hprev.shape[1]
    nr, ng, nh = np.int32(rows), np.int32(n_g), np.int32(hid)
    gemm(_ROW_MAJOR, _TRANS, _NO_TRANS, ng, nh, nr, one, dgates.ctypes.data, ng,
         hprev.ctypes.data, nh, zero, dw_hh.ctypes.data, nh)


@njit(nogil=True, error_model="numpy")
def _column_sums(a, out):
    """out[j] = sum over rows of a[:, j], in row order."""
    for j in range(out.shape[0]):
        out[j] = 0
    for i in range(a.shape[0]):
        row = a[i]
        for j in range(out.shape[0]):
            out[j] += row[j]


@njit(nogil=True, error_model="numpy")
def weight_grads(dgi, dgh, shared, x, hprev, w_ih, gemm, consts, dx, dw_ih, dw_hh, db_ih, db_hh):
    """After a backward time loop, over every row at once: dx = dgi @ w_ih, dw_ih = dgi.T @ x,
    dw_hh = dgh.T @ hprev and the bias gradients (column sums of dgi and dgh; ``db_hh`` is
    not written when ``shared``: ``dgh`` is ``dgi``, the gradient of both projections). One
    kernel for the three kinds of layer."""
    _input_grads(dgi, x, w_ih, gemm, consts, dx, dw_ih)
    _hh_grad(dgh, hprev, gemm, consts, dw_hh)
    _column_sums(dgi, db_ih)
    if not shared:
        _column_sums(dgh, db_hh)


# ----------------------------------------------------------------------------- GRU

@njit(nogil=True, error_model="numpy")
def gru_forward(x, w_ih, w_hh, b_ih, b_hh, hx, sizes, offsets, reverse, gemm, consts, gates,
                ghn, gh, hprev, y, hy):
    """x (N, I), w_ih (3H, I), w_hh (3H, H), b_ih/b_hh (3H,) (zeros without biases), hx (B, H).
    Writes ``gates`` (N, 3H: r, z, n after their activations), ``ghn`` (N, H: the hidden
    projection's n chunk, b_hh included), ``hprev`` (N, H: the hidden state each row saw), the
    output ``y`` (N, H) and the final state ``hy`` (B, H); ``gh`` (B, 3H) is scratch."""
    rows, n_in = x.shape
    batch, hid = hx.shape
    one = consts[1]
    _project(gates, x, w_ih, b_ih, gemm, one, rows, 3 * hid, n_in)
    for b in range(batch):
        for j in range(hid):
            hy[b, j] = hx[b, j]
    steps = sizes.shape[0]
    for s in range(steps):
        t = steps - 1 - s if reverse else s
        n_b, off = sizes[t], offsets[t]
        for b in range(n_b):
            hp = hprev[off + b]
            for j in range(hid):
                hp[j] = hy[b, j]
        _project(gh, hy, w_hh, b_hh, gemm, one, n_b, 3 * hid, hid)
        for b in range(n_b):
            gr, ghr, hyr, yr, hnr = gates[off + b], gh[b], hy[b], y[off + b], ghn[off + b]
            for j in range(2 * hid):
                gr[j] = sigmoid(ghr[j] + gr[j])
            for j in range(hid):
                hn = ghr[2 * hid + j]
                hnr[j] = hn
                n = tanh(gr[2 * hid + j] + hn * gr[j])
                gr[2 * hid + j] = n
                h_new = (hyr[j] - n) * gr[hid + j] + n
                hyr[j] = h_new
                yr[j] = h_new


@njit(nogil=True, error_model="numpy")
def gru_backward(w_hh, sizes, offsets, reverse, gemm, consts, gates, ghn, hprev, dy, dhy, dgi,
                 dgh, dh):
    """The time loop of ``gru_forward``'s VJP from its saved arrays; ``dy`` (N, H) and ``dhy``
    (B, H) the incoming gradients (zeros where none came). Writes the pre-activation gradients
    of the input projection ``dgi`` and of the hidden projection ``dgh`` (N, 3H each; they
    differ in the n chunk) and ``dh`` (B, H: hx's gradient); ``weight_grads`` does the rest."""
    hid = dh.shape[1]
    one = consts[1]
    dh[:, :] = dhy
    steps = sizes.shape[0]
    for s in range(steps):
        t = s if reverse else steps - 1 - s
        n_b, off = sizes[t], offsets[t]
        for b in range(n_b):
            gr, hnr, hpr, dyr = gates[off + b], ghn[off + b], hprev[off + b], dy[off + b]
            dgir, dghr, dhr = dgi[off + b], dgh[off + b], dh[b]
            for j in range(hid):
                r, z, n = gr[j], gr[hid + j], gr[2 * hid + j]
                g = dyr[j] + dhr[j]
                gz = g * z
                dn = (g - gz) * (one - n * n)
                dr = dn * hnr[j] * r * (one - r)
                dz = g * (hpr[j] - n) * z * (one - z)
                dgir[j] = dr
                dgir[hid + j] = dz
                dgir[2 * hid + j] = dn
                dghr[j] = dr
                dghr[hid + j] = dz
                dghr[2 * hid + j] = dn * r
                dhr[j] = gz
        # dh[:n_b] += dgh[t] @ w_hh: the previous hidden state's other gradient
        gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, np.int32(n_b), np.int32(hid), np.int32(3 * hid),
             one, dgh[off:].ctypes.data, np.int32(3 * hid), w_hh.ctypes.data, np.int32(hid), one,
             dh.ctypes.data, np.int32(hid))


# ----------------------------------------------------------------------------- tanh/relu RNN

@njit(nogil=True, error_model="numpy")
def simple_forward(x, w_ih, w_hh, b_ih, b_hh, hx, sizes, offsets, reverse, relu, gemm, consts,
                   xw, gh, hprev, y, hy):
    """The tanh (``relu`` False) or relu RNN: ``xw`` (N, H) the input projection, ``gh`` (B, H)
    scratch; writes ``hprev``, ``y`` (N, H) and ``hy`` (B, H)."""
    rows, n_in = x.shape
    batch, hid = hx.shape
    zero, one = consts[0], consts[1]
    _project(xw, x, w_ih, b_ih, gemm, one, rows, hid, n_in)
    for b in range(batch):
        for j in range(hid):
            hy[b, j] = hx[b, j]
    steps = sizes.shape[0]
    for s in range(steps):
        t = steps - 1 - s if reverse else s
        n_b, off = sizes[t], offsets[t]
        for b in range(n_b):
            hp = hprev[off + b]
            for j in range(hid):
                hp[j] = hy[b, j]
        _project(gh, hy, w_hh, b_hh, gemm, one, n_b, hid, hid)
        for b in range(n_b):
            ghr, xwr, hyr, yr = gh[b], xw[off + b], hy[b], y[off + b]
            if relu:
                for j in range(hid):
                    v = ghr[j] + xwr[j]
                    v = v if v > zero or v != v else zero  # relu keeps NaN, as ATen's
                    hyr[j] = v
                    yr[j] = v
            else:
                for j in range(hid):
                    v = tanh(ghr[j] + xwr[j])
                    hyr[j] = v
                    yr[j] = v


@njit(nogil=True, error_model="numpy")
def simple_backward(w_hh, sizes, offsets, reverse, relu, gemm, consts, y, dy, dhy, dg, dh):
    """The time loop of ``simple_forward``'s VJP: ``dg`` (N, H) the pre-activation gradient
    (the same for both projections) and ``dh`` (B, H) hx's; ``weight_grads`` does the rest."""
    hid = dh.shape[1]
    zero, one = consts[0], consts[1]
    dh[:, :] = dhy
    steps = sizes.shape[0]
    for s in range(steps):
        t = s if reverse else steps - 1 - s
        n_b, off = sizes[t], offsets[t]
        for b in range(n_b):
            yr, dyr, dgr, dhr = y[off + b], dy[off + b], dg[off + b], dh[b]
            if relu:
                for j in range(hid):
                    g = dyr[j] + dhr[j]
                    dgr[j] = g if yr[j] > zero else zero  # threshold_backward: result > 0
            else:
                for j in range(hid):
                    v = yr[j]
                    dgr[j] = (dyr[j] + dhr[j]) * (one - v * v)
        gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, np.int32(n_b), np.int32(hid), np.int32(hid), one,
             dg[off:].ctypes.data, np.int32(hid), w_hh.ctypes.data, np.int32(hid), zero,
             dh.ctypes.data, np.int32(hid))


# ----------------------------------------------------------------------------- LSTM, by rows

@njit(nogil=True, error_model="numpy")
def lstm_forward(x, w_ih, w_hh, b_ih, b_hh, hx, cx, sizes, offsets, reverse, gemm, consts, acts,
                 gh, cprev, tcs, hprev, y, hy, cy):
    """An LSTM layer-direction by rows (packed input; ``_lstm_kernels.py`` has the padded
    oneDNN-like one): gates i, f, g, o. Writes ``acts`` (N, 4H: the gates after their
    activations), ``cprev``/``hprev`` (N, H: the states each row saw), ``tcs`` (N, H: tanh of
    the new cell state), ``y`` (N, H), ``hy``/``cy`` (B, H); ``gh`` (B, 4H) is scratch."""
    rows, n_in = x.shape
    batch, hid = hx.shape
    one = consts[1]
    _project(acts, x, w_ih, b_ih, gemm, one, rows, 4 * hid, n_in)
    for b in range(batch):
        for j in range(hid):
            hy[b, j] = hx[b, j]
            cy[b, j] = cx[b, j]
    steps = sizes.shape[0]
    for s in range(steps):
        t = steps - 1 - s if reverse else s
        n_b, off = sizes[t], offsets[t]
        for b in range(n_b):
            hp, cp = hprev[off + b], cprev[off + b]
            for j in range(hid):
                hp[j] = hy[b, j]
                cp[j] = cy[b, j]
        _project(gh, hy, w_hh, b_hh, gemm, one, n_b, 4 * hid, hid)
        for b in range(n_b):
            ar, ghr, cpr, tcr, yr, hyr, cyr = (acts[off + b], gh[b], cprev[off + b],
                                                tcs[off + b], y[off + b], hy[b], cy[b])
            # one activation per loop, each from j = 0: a loop selecting tanh or sigmoid per
            # element computes both and did not vectorize in float64 (5x the time)
            for j in range(2 * hid):
                ar[j] = sigmoid(ghr[j] + ar[j])
            for j in range(hid):
                ar[2 * hid + j] = tanh(ghr[2 * hid + j] + ar[2 * hid + j])
            for j in range(hid):
                ar[3 * hid + j] = sigmoid(ghr[3 * hid + j] + ar[3 * hid + j])
            for j in range(hid):
                kept = ar[hid + j] * cpr[j]
                added = ar[j] * ar[2 * hid + j]
                c_new = kept + added
                tc = tanh(c_new)
                tcr[j] = tc
                h_new = ar[3 * hid + j] * tc
                yr[j] = h_new
                hyr[j] = h_new
                cyr[j] = c_new


@njit(nogil=True, error_model="numpy")
def lstm_backward(w_hh, sizes, offsets, reverse, gemm, consts, acts, cprev, tcs, dy, dhy, dcy,
                  dg, dh, dc):
    """The time loop of ``lstm_forward``'s VJP: ``dg`` (N, 4H) the pre-activation gate
    gradients (the same for both projections), ``dh``/``dc`` (B, H) hx's and cx's;
    ``weight_grads`` does the rest."""
    hid = dh.shape[1]
    zero, one = consts[0], consts[1]
    dh[:, :] = dhy
    dc[:, :] = dcy
    steps = sizes.shape[0]
    for s in range(steps):
        t = s if reverse else steps - 1 - s
        n_b, off = sizes[t], offsets[t]
        for b in range(n_b):
            ar, cpr, tcr, dyr, dgr, dhr, dcr = (acts[off + b], cprev[off + b], tcs[off + b],
                                                 dy[off + b], dg[off + b], dh[b], dc[b])
            for j in range(hid):
                ig, fg, gg, og = ar[j], ar[hid + j], ar[2 * hid + j], ar[3 * hid + j]
                tc = tcr[j]
                dht = dyr[j] + dhr[j]
                dct = dcr[j] + dht * og * (one - tc * tc)
                dgr[j] = dct * gg * ig * (one - ig)
                dgr[hid + j] = dct * cpr[j] * fg * (one - fg)
                dgr[2 * hid + j] = dct * ig * (one - gg * gg)
                dgr[3 * hid + j] = dht * tc * og * (one - og)
                dcr[j] = dct * fg
        # dh[:n_b] = dg[t] @ w_hh: a state reaches the next step through the gates only
        gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, np.int32(n_b), np.int32(hid), np.int32(4 * hid),
             one, dg[off:].ctypes.data, np.int32(4 * hid), w_hh.ctypes.data, np.int32(hid),
             zero, dh.ctypes.data, np.int32(hid))


# ----------------------------------------------------------------------------- LSTM, projected

@njit(nogil=True, error_model="numpy")
def lstm_proj_forward(x, w_ih, w_hh, b_ih, b_hh, w_hr, hx, cx, sizes, offsets, reverse, gemm,
                      consts, acts, gh, cprev, tcs, hraw, hprev, y, hy, cy):
    """``lstm_forward`` with projections (``proj_size`` P < H): the hidden state is
    ``(o * tanh(c)) @ w_hr.T`` (RNN.cpp's ``matmul_hr``: a GEMM without bias), so ``hx``,
    ``hprev``, ``y``, ``hy`` are (., P), ``w_hh`` (4H, P), ``w_hr`` (P, H); ``cx``, ``cprev``,
    ``tcs``, ``cy`` (., H). Also writes ``hraw`` (N, H: the state before the projection,
    w_hr's gradient needs it); ``gh`` (B, 4H) is scratch."""
    rows, n_in = x.shape
    batch, proj = hx.shape
    hid = cx.shape[1]
    zero, one = consts[0], consts[1]
    _project(acts, x, w_ih, b_ih, gemm, one, rows, 4 * hid, n_in)
    for b in range(batch):
        for j in range(proj):
            hy[b, j] = hx[b, j]
        for j in range(hid):
            cy[b, j] = cx[b, j]
    steps = sizes.shape[0]
    for s in range(steps):
        t = steps - 1 - s if reverse else s
        n_b, off = sizes[t], offsets[t]
        for b in range(n_b):
            hp, cp = hprev[off + b], cprev[off + b]
            for j in range(proj):
                hp[j] = hy[b, j]
            for j in range(hid):
                cp[j] = cy[b, j]
        _project(gh, hy, w_hh, b_hh, gemm, one, n_b, 4 * hid, proj)
        for b in range(n_b):
            ar, ghr, cpr, tcr, hrr, cyr = (acts[off + b], gh[b], cprev[off + b], tcs[off + b],
                                           hraw[off + b], cy[b])
            for j in range(2 * hid):
                ar[j] = sigmoid(ghr[j] + ar[j])
            for j in range(hid):
                ar[2 * hid + j] = tanh(ghr[2 * hid + j] + ar[2 * hid + j])
            for j in range(hid):
                ar[3 * hid + j] = sigmoid(ghr[3 * hid + j] + ar[3 * hid + j])
            for j in range(hid):
                kept = ar[hid + j] * cpr[j]
                added = ar[j] * ar[2 * hid + j]
                c_new = kept + added
                tc = tanh(c_new)
                tcr[j] = tc
                hrr[j] = ar[3 * hid + j] * tc
                cyr[j] = c_new
        # y[rows of t] = hraw[rows of t] @ w_hr.T, then the state takes it
        gemm(_ROW_MAJOR, _NO_TRANS, _TRANS, np.int32(n_b), np.int32(proj), np.int32(hid), one,
             hraw[off:].ctypes.data, np.int32(hid), w_hr.ctypes.data, np.int32(hid), zero,
             y[off:].ctypes.data, np.int32(proj))
        for b in range(n_b):
            for j in range(proj):
                hy[b, j] = y[off + b, j]


@njit(nogil=True, error_model="numpy")
def lstm_proj_backward(w_hh, w_hr, sizes, offsets, reverse, gemm, consts, acts, cprev, tcs, dy,
                       dhy, dcy, dhp, dhr, dg, dh, dc):
    """The time loop of ``lstm_proj_forward``'s VJP: ``dhp`` (N, P) the gradient of each
    row's projected state (w_hr's gradient is ``dhp.T @ hraw``), ``dhr`` (B, H) scratch,
    ``dg`` (N, 4H) the gate gradients, ``dh`` (B, P) / ``dc`` (B, H) hx's and cx's."""
    proj = dh.shape[1]
    hid = dc.shape[1]
    zero, one = consts[0], consts[1]
    dh[:, :] = dhy
    dc[:, :] = dcy
    steps = sizes.shape[0]
    for s in range(steps):
        t = s if reverse else steps - 1 - s
        n_b, off = sizes[t], offsets[t]
        for b in range(n_b):
            for j in range(proj):
                dhp[off + b, j] = dy[off + b, j] + dh[b, j]
        # the state before the projection: dhr = dhp @ w_hr
        gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, np.int32(n_b), np.int32(hid), np.int32(proj),
             one, dhp[off:].ctypes.data, np.int32(proj), w_hr.ctypes.data, np.int32(hid), zero,
             dhr.ctypes.data, np.int32(hid))
        for b in range(n_b):
            ar, cpr, tcr, dgr, dhrr, dcr = (acts[off + b], cprev[off + b], tcs[off + b],
                                            dg[off + b], dhr[b], dc[b])
            for j in range(hid):
                ig, fg, gg, og = ar[j], ar[hid + j], ar[2 * hid + j], ar[3 * hid + j]
                tc = tcr[j]
                dht = dhrr[j]
                dct = dcr[j] + dht * og * (one - tc * tc)
                dgr[j] = dct * gg * ig * (one - ig)
                dgr[hid + j] = dct * cpr[j] * fg * (one - fg)
                dgr[2 * hid + j] = dct * ig * (one - gg * gg)
                dgr[3 * hid + j] = dht * tc * og * (one - og)
                dcr[j] = dct * fg
        gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, np.int32(n_b), np.int32(proj), np.int32(4 * hid),
             one, dg[off:].ctypes.data, np.int32(4 * hid), w_hh.ctypes.data, np.int32(proj),
             zero, dh.ctypes.data, np.int32(proj))


@njit(nogil=True, error_model="numpy")
def proj_grad(dhp, hraw, gemm, consts, dw_hr):
    """dw_hr = dhp.T @ hraw over every row."""
    rows, proj = dhp.shape
    hid = hraw.shape[1]
    gemm(_ROW_MAJOR, _TRANS, _NO_TRANS, np.int32(proj), np.int32(hid), np.int32(rows),
         consts[1], dhp.ctypes.data, np.int32(proj), hraw.ctypes.data, np.int32(hid), consts[0],
         dw_hr.ctypes.data, np.int32(hid))
