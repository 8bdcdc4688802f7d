"""Numba kernels of a whole GRU, plain (tanh/relu) RNN or (by rows: packed input, projections)
LSTM layer-direction (``rnn_fused.py``): the forward over every time step in one call and its
backward in one call, each GEMM a call of MKL's
``cblas_?gemm`` through its address (as ``_lstm_kernels.py``), so no Python runs between steps.

Packed and padded input alike: the input is 2-D (rows, features); time step ``t`` owns the
``sizes[t]`` rows from ``offsets[t]`` and the first ``sizes[t]`` rows of the hidden state
(``sizes`` non-increasing: a padded input has every size equal to the batch). A forward
direction leaves the rows that ended early at their last value, a reverse direction lets a
sequence join when its last step is reached: RNN.cpp's packed layers. Per-step arrays are indexed
by row, so both directions store where the other would.

PyTorch runs these layers op by op (RNN.cpp's ``FullLayer``/``PackedLayer`` over its cells), and
the kernels make its operations in its order, so values and gradients are PyTorch's bits at one
thread. Forward: the input projection ``x @ w_ih.T + b_ih`` of all steps first (addmm: bias in
C, beta 1), per step ``h @ w_hh.T + b_hh`` the same way, then the gates as ATen's ops compute
them (``_rnn_gates.py``: SLEEF/glibc sigmoid, MKL VML tanh). Backward: ATen's VJPs
(``_rnn_gates`` element helpers), addmm's backward GEMM calls, and PyTorch's order of sums:

- a hidden state's gradient adds its parts in the order PyTorch's engine receives them: the
  step's output, then (GRU) the next step's ``hidden - n``, then its ``linear_hh``; where the
  next step reads a slice or concatenation of the state (a packed batch shrinking or, reversed,
  growing), that view's node first adds the next step's two parts, so they reach the state as
  one;
- ``w_hh``/``b_hh`` (and a projection's ``w_hr``) are used once per step, so their gradients
  are one GEMM (``sum_to``'s cascade column sum) per step, accumulated in the order the steps'
  backward runs (last step first); ``w_ih``/``b_ih`` serve all steps in one addmm.
"""
from __future__ import annotations

import numpy as np

from ...codegen.kcache import njit_cached as njit
from ...math._intrinsics import fma
from ...ops._cascade_sum_kernels import column_sums_aten
from ._rnn_gates import gru_element_grads, gru_gates, lstm_element_grads, lstm_gates, tanh_rows

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
def _step(s, steps, reverse, sizes, offsets):
    """The time step that forward step ``s`` runs (its rows and first row)."""
    t = steps - 1 - s if reverse else s
    return sizes[t], offsets[t]


@njit(nogil=True, error_model="numpy")
def _back_step(s, steps, reverse, sizes, offsets):
    """The time step that backward step ``s`` runs (the forward steps in reverse)."""
    t = s if reverse else steps - 1 - s
    return sizes[t], offsets[t]


@njit(nogil=True, error_model="numpy")
def _copy_rows(dst, src, rows):
    """dst[:rows] = src[:rows] (2-D, one width)."""
    for i in range(rows):
        for j in range(src.shape[1]):
            dst[i, j] = src[i, j]


@njit(nogil=True, error_model="numpy")
def _fresh_rows(src, off, n, scratch):
    """``src[off:off + n]`` as a GEMM operand where PyTorch's is a tensor of its own (aligned):
    MKL's small GEMMs round by the operands' addresses modulo 16 bytes (measured: one row
    block at another offset gives other bits), so a block that does not start at such an
    address is copied to ``scratch`` (an array of its own) first."""
    rows = src[off:off + n]
    if rows.ctypes.data % 16 == 0:
        return rows
    out = scratch[:n]
    _copy_rows(out, rows, n)
    return out


@njit(nogil=True, error_model="numpy")
def _state_grad(dyr, dhr, width, dst):
    """``dst = dy + dh``: a state's gradient from its output's and the next step's (one part,
    or the last step's ``dhy``)."""
    for j in range(width):
        dst[j] = dyr[j] + dhr[j]


@njit(nogil=True, error_model="numpy")
def input_grads(dgi, x, w_ih, gemm, consts, threads, dx, dw_ih, db_ih):
    """dx = dgi @ w_ih, dw_ih = dgi.T @ x and db_ih = dgi's column sums over every row at once:
    the backward of the one addmm of the input projection."""
    zero, one = consts[0], consts[1]
    rows, n_g = dgi.shape
    n_in = x.shape[1]
    nr, ng, ni = np.int32(rows), np.int32(n_g), np.int32(n_in)
    gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, nr, ni, ng, one, dgi.ctypes.data, ng,
         w_ih.ctypes.data, ni, zero, dx.ctypes.data, ni)
    gemm(_ROW_MAJOR, _TRANS, _NO_TRANS, ng, ni, nr, one, dgi.ctypes.data, ng, x.ctypes.data,
         ni, zero, dw_ih.ctypes.data, ni)
    column_sums_aten(dgi, db_ih, threads)


@njit(nogil=True, error_model="numpy")
def step_weight_grad(dg, src, hx, sizes, offsets, reverse, gemm, consts, dw):
    """dw = the sum over steps, in backward order, of ``dg[rows of t].T @ src[rows of t]``: a
    weight used once per step (w_hh, w_hr) gets one GEMM per step, added up as the engine
    adds them. ``hx`` (2-D, or empty: none) is the state the first forward step read (w_hh:
    PyTorch's operand there is that tensor, not a copy)."""
    zero, one = consts[0], consts[1]
    n_g, width = dg.shape[1], src.shape[1]
    steps = sizes.shape[0]
    scratch = np.empty_like(dw)
    dgs, srcs = np.empty((sizes[0], n_g), dg.dtype), np.empty((sizes[0], width), src.dtype)
    for s in range(steps):
        n_b, off = _back_step(s, steps, reverse, sizes, offsets)
        dst = dw if s == 0 else scratch
        a = _fresh_rows(dg, off, n_b, dgs)
        b = hx if s == steps - 1 and hx.shape[0] > 0 else _fresh_rows(src, off, n_b, srcs)
        gemm(_ROW_MAJOR, _TRANS, _NO_TRANS, np.int32(n_g), np.int32(width), np.int32(n_b), one,
             a.ctypes.data, np.int32(n_g), b.ctypes.data, np.int32(width), zero,
             dst.ctypes.data, np.int32(width))
        if s > 0:
            for i in range(n_g):
                for j in range(width):
                    dw[i, j] = dw[i, j] + scratch[i, j]


@njit(nogil=True, error_model="numpy")
def step_bias_grad(dg, sizes, offsets, reverse, threads, db, scratch):
    """db = the sum over steps, in backward order, of each step's column sums of ``dg`` (b_hh:
    one addmm per step)."""
    steps = sizes.shape[0]
    for s in range(steps):
        n_b, off = _back_step(s, steps, reverse, sizes, offsets)
        column_sums_aten(dg[off:off + n_b], db if s == 0 else scratch, threads)
        if s > 0:
            for j in range(db.shape[0]):
                db[j] = db[j] + scratch[j]


@njit(nogil=True, error_model="numpy")
def weight_grads(dgi, dgh, x, hprev, hx, w_ih, sizes, offsets, reverse, gemm, consts, threads,
                 dx, dw_ih, dw_hh, db_ih, db_hh):
    """After a backward time loop: the input projection's gradients over every row at once,
    w_hh's and b_hh's step by step (``dgh`` may be ``dgi``: the gradient of both projections).
    One kernel for the three kinds of layer."""
    input_grads(dgi, x, w_ih, gemm, consts, threads, dx, dw_ih, db_ih)
    step_weight_grad(dgh, hprev, hx, sizes, offsets, reverse, gemm, consts, dw_hh)
    step_bias_grad(dgh, sizes, offsets, reverse, threads, db_hh, np.empty_like(db_hh))


# ----------------------------------------------------------------------------- GRU

@njit(nogil=True, error_model="numpy")
def gru_forward(x, w_ih, w_hh, b_ih, b_hh, hx, sizes, offsets, reverse, gemm, consts, tanh_addr,
                gates, ghn, gh, hprev, y, hy):
    """x (N, I), w_ih (3H, I), w_hh (3H, H), b_ih/b_hh (3H,) (zeros without biases), hx (B, H).
    Writes ``gates`` (N, 3H: r, z, n after their activations), ``ghn`` (N, H: the hidden
    projection's n chunk, b_hh included), ``hprev`` (N, H: the hidden state each row saw), the
    output ``y`` (N, H) and the final state ``hy`` (B, H); ``gh`` (B, 3H) is scratch;
    ``tanh_addr`` VML's tanh."""
    rows, n_in = x.shape
    batch, hid = hx.shape
    one = consts[1]
    _project(gates, x, w_ih, b_ih, gemm, one, rows, 3 * hid, n_in)
    _copy_rows(hy, hx, batch)
    steps = sizes.shape[0]
    for s in range(steps):
        n_b, off = _step(s, steps, reverse, sizes, offsets)
        _copy_rows(hprev[off:], hy, n_b)
        _project(gh, hx if s == 0 else hy, w_hh, b_hh, gemm, one, n_b, 3 * hid, hid)
        for b in range(n_b):
            gr, ghr, hyr, yr, hnr = gates[off + b], gh[b], hy[b], y[off + b], ghn[off + b]
            for j in range(hid):
                hnr[j] = ghr[2 * hid + j]
            gru_gates(gr, ghr, hid, one, tanh_addr)
            for j in range(hid):
                n = gr[2 * hid + j]
                h_new = (hyr[j] - n) * gr[hid + j] + n
                hyr[j] = h_new
                yr[j] = h_new


@njit(nogil=True, error_model="numpy")
def gru_backward(w_hh, sizes, offsets, reverse, gemm, consts, gates, ghn, hprev, dy, dhy, dgi,
                 dgh, dh, direct):
    """The time loop of ``gru_forward``'s VJP from its saved arrays; ``dy`` (N, H) and ``dhy``
    (B, H) the incoming gradients (zeros where none came). Writes the pre-activation gradients
    of the input projection ``dgi`` and of the hidden projection ``dgh`` (N, 3H each; they
    differ in the n chunk) and ``dh`` (B, H: hx's gradient); ``direct`` (B, H) is scratch
    (the ``hidden - n`` part of a state's gradient, kept apart from the ``linear_hh`` part
    that the GEMM writes into ``dh``); ``weight_grads`` does the rest."""
    hid = dh.shape[1]
    zero, one = consts[0], consts[1]
    _copy_rows(dh, dhy, dh.shape[0])
    g = np.empty(hid, dh.dtype)
    dgs = np.empty((sizes[0], 3 * hid), dh.dtype)
    steps = sizes.shape[0]
    n_prev = 0  # the rows of the step whose backward ran before (0: none)
    for s in range(steps):
        n_b, off = _back_step(s, steps, reverse, sizes, offsets)
        for b in range(n_b):
            gr, hnr, hpr, dyr = gates[off + b], ghn[off + b], hprev[off + b], dy[off + b]
            dgir, dghr, dhr, drr = dgi[off + b], dgh[off + b], dh[b], direct[b]
            if b >= n_prev:  # the state's last step: its output's and dhy's gradients
                _state_grad(dyr, dhr, hid, g)
            elif n_prev != n_b:  # the next step read a slice / concatenation of the state
                for j in range(hid):
                    g[j] = dyr[j] + (drr[j] + dhr[j])
            else:
                for j in range(hid):
                    g[j] = (dyr[j] + drr[j]) + dhr[j]
            for j in range(hid):
                r, z, n = gr[j], gr[hid + j], gr[2 * hid + j]
                gz = g[j] * z
                dr, dz, dn = gru_element_grads(r, z, n, hnr[j], g[j] - gz, g[j] * (hpr[j] - n),
                                               one)
                dgir[j] = dghr[j] = dr
                dgir[hid + j] = dghr[hid + j] = dz
                dgir[2 * hid + j] = dn
                dghr[2 * hid + j] = dn * r
                drr[j] = gz
        # dh[:n_b] = dgh[t] @ w_hh: the previous hidden state's linear_hh part
        gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, np.int32(n_b), np.int32(hid), np.int32(3 * hid),
             one, _fresh_rows(dgh, off, n_b, dgs).ctypes.data, np.int32(3 * hid),
             w_hh.ctypes.data, np.int32(hid), zero, dh.ctypes.data, np.int32(hid))
        n_prev = n_b
    for b in range(dh.shape[0]):  # hx: each row's parts from the step that read it first
        for j in range(hid):
            dh[b, j] = direct[b, j] + dh[b, j]


# ----------------------------------------------------------------------------- tanh/relu RNN

@njit(nogil=True, error_model="numpy")
def simple_forward(x, w_ih, w_hh, b_ih, b_hh, hx, sizes, offsets, reverse, relu, gemm, consts,
                   tanh_addr, xw, gh, hprev, y, hy):
    """The tanh (``relu`` False) or relu RNN: ``xw`` (N, H) the input projection, ``gh`` (B, H)
    scratch; writes ``hprev``, ``y`` (N, H) and ``hy`` (B, H)."""
    rows, n_in = x.shape
    batch, hid = hx.shape
    zero, one = consts[0], consts[1]
    _project(xw, x, w_ih, b_ih, gemm, one, rows, hid, n_in)
    _copy_rows(hy, hx, batch)
    steps = sizes.shape[0]
    for s in range(steps):
        n_b, off = _step(s, steps, reverse, sizes, offsets)
        _copy_rows(hprev[off:], hy, n_b)
        _project(gh, hx if s == 0 else hy, w_hh, b_hh, gemm, one, n_b, hid, hid)
        for b in range(n_b):
            ghr, xwr, hyr = gh[b], xw[off + b], hy[b]
            for j in range(hid):
                hyr[j] = ghr[j] + xwr[j]
            if relu:
                for j in range(hid):
                    v = hyr[j]
                    hyr[j] = v if v > zero or v != v else zero  # relu keeps NaN, as ATen's
        if not relu:
            tanh_rows(tanh_addr, hy, hy, n_b)
        _copy_rows(y[off:], hy, n_b)


@njit(nogil=True, error_model="numpy")
def simple_backward(w_hh, sizes, offsets, reverse, relu, gemm, consts, y, dy, dhy, dg, dh):
    """The time loop of ``simple_forward``'s VJP: ``dg`` (N, H) the pre-activation gradient
    (the same for both projections) and ``dh`` (B, H) hx's; ``weight_grads`` does the rest."""
    hid = dh.shape[1]
    zero, one = consts[0], consts[1]
    _copy_rows(dh, dhy, dh.shape[0])
    dgs = np.empty((sizes[0], hid), dh.dtype)
    steps = sizes.shape[0]
    for s in range(steps):
        n_b, off = _back_step(s, steps, reverse, sizes, offsets)
        for b in range(n_b):
            yr, dgr = y[off + b], dg[off + b]
            _state_grad(dy[off + b], dh[b], hid, dgr)
            if relu:
                for j in range(hid):  # threshold_backward: zero where the result <= 0
                    dgr[j] = zero if yr[j] <= zero else dgr[j]
            else:
                for j in range(hid):
                    v = yr[j]
                    dgr[j] = dgr[j] * fma(-v, v, one)
        gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, np.int32(n_b), np.int32(hid), np.int32(hid), one,
             _fresh_rows(dg, off, n_b, dgs).ctypes.data, np.int32(hid), w_hh.ctypes.data,
             np.int32(hid), zero, dh.ctypes.data, np.int32(hid))


# ----------------------------------------------------------------------------- LSTM, by rows

@njit(nogil=True, error_model="numpy")
def lstm_forward(x, w_ih, w_hh, b_ih, b_hh, w_hr, hx, cx, sizes, offsets, reverse, gemm, consts,
                 tanh_addr, acts, gh, cprev, tcs, hraw, hprev, y, hy, cy):
    """An LSTM layer-direction by rows (packed input, or projections; ``_lstm_kernels.py`` has
    the padded oneDNN-like one): gates i, f, g, o. With ``proj_size`` P > 0 (``w_hr`` (P, H);
    empty: none) the hidden state is ``(o * tanh(c)) @ w_hr.T`` (RNN.cpp's ``matmul_hr``: a
    GEMM without bias), so ``hx``, ``hprev``, ``y``, ``hy`` are (., P) and ``w_hh`` (4H, P);
    ``cx``, ``cprev``, ``tcs``, ``cy`` are (., H). Writes ``acts`` (N, 4H: the gates after
    their activations), ``cprev``/``hprev`` (the states each row saw), ``tcs`` (N, H: tanh of
    the new cell state), ``hraw`` (N, H: with projections, the state before it, w_hr's
    gradient needs it; else empty), ``y``, ``hy``/``cy``; ``gh`` (B, 4H) is scratch."""
    rows, n_in = x.shape
    batch, width = hx.shape
    hid = cx.shape[1]
    projected = w_hr.shape[0] > 0
    zero, one = consts[0], consts[1]
    _project(acts, x, w_ih, b_ih, gemm, one, rows, 4 * hid, n_in)
    _copy_rows(hy, hx, batch)
    _copy_rows(cy, cx, batch)
    hr = np.empty((batch, hid), cx.dtype) if projected else hy
    steps = sizes.shape[0]
    for s in range(steps):
        n_b, off = _step(s, steps, reverse, sizes, offsets)
        _copy_rows(hprev[off:], hy, n_b)
        _copy_rows(cprev[off:], cy, n_b)
        _project(gh, hx if s == 0 else hy, w_hh, b_hh, gemm, one, n_b, 4 * hid, width)
        for b in range(n_b):
            ar, cpr, cyr = acts[off + b], cprev[off + b], cy[b]
            lstm_gates(ar, gh[b], hid, one, tanh_addr)
            for j in range(hid):
                cyr[j] = ar[hid + j] * cpr[j] + ar[j] * ar[2 * hid + j]
        tanh_rows(tanh_addr, cy, tcs[off:], n_b)  # cy.tanh(): one VML call for the step
        for b in range(n_b):
            ar, tcr, hrr = acts[off + b], tcs[off + b], hr[b]
            for j in range(hid):
                hrr[j] = ar[3 * hid + j] * tcr[j]
        if projected:
            # hy = hr @ w_hr.T, each operand an array of its own as PyTorch's (see
            # _fresh_rows); hraw keeps a copy
            gemm(_ROW_MAJOR, _NO_TRANS, _TRANS, np.int32(n_b), np.int32(width), np.int32(hid),
                 one, hr.ctypes.data, np.int32(hid), w_hr.ctypes.data, np.int32(hid), zero,
                 hy.ctypes.data, np.int32(width))
            _copy_rows(hraw[off:], hr, n_b)
        _copy_rows(y[off:], hy, n_b)


@njit(nogil=True, error_model="numpy")
def lstm_backward(w_hh, w_hr, sizes, offsets, reverse, gemm, consts, acts, cprev, tcs, dy, dhy,
                  dcy, dhp, dg, dh, dc):
    """The time loop of ``lstm_forward``'s VJP: ``dg`` (N, 4H) the pre-activation gate
    gradients (the same for both projections), ``dh`` (B, P or H) / ``dc`` (B, H) hx's and
    cx's; with projections ``dhp`` (N, P) the gradient of each row's projected state (w_hr's
    gradient is ``dhp.T @ hraw``, step by step; else empty). ``weight_grads`` does the rest."""
    width, hid = dh.shape[1], dc.shape[1]
    projected = w_hr.shape[0] > 0
    zero, one = consts[0], consts[1]
    _copy_rows(dh, dhy, dh.shape[0])
    _copy_rows(dc, dcy, dc.shape[0])
    dgs, dhps = np.empty((sizes[0], 4 * hid), dh.dtype), np.empty((sizes[0], width), dh.dtype)
    # the gradient of the states before the projection (without one: dh itself)
    dhr = np.empty((sizes[0], hid), dh.dtype) if projected else dh
    steps = sizes.shape[0]
    for s in range(steps):
        n_b, off = _back_step(s, steps, reverse, sizes, offsets)
        for b in range(n_b):  # the states' gradients: the output's plus the next step's
            _state_grad(dy[off + b], dh[b], width, dhp[off + b] if projected else dh[b])
        if projected:  # dhr = dhp @ w_hr
            gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, np.int32(n_b), np.int32(hid),
                 np.int32(width), one, _fresh_rows(dhp, off, n_b, dhps).ctypes.data,
                 np.int32(width), w_hr.ctypes.data, np.int32(hid), zero, dhr.ctypes.data,
                 np.int32(hid))
        for b in range(n_b):
            ar, cpr, tcr, dhrr, dgr, dcr = (acts[off + b], cprev[off + b], tcs[off + b],
                                            dhr[b], dg[off + b], dc[b])
            for j in range(hid):
                og, tc, dht = ar[3 * hid + j], tcr[j], dhrr[j]
                dgr[j], dgr[hid + j], dgr[2 * hid + j], dgr[3 * hid + j], dcr[j] = \
                    lstm_element_grads(ar[j], ar[hid + j], ar[2 * hid + j], og, cpr[j], tc,
                                       dht * tc, dht * og, dcr[j], dcr[j], one)
        # dh[:n_b] = dg[t] @ w_hh: a state reaches the next step through the gates only
        gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, np.int32(n_b), np.int32(width),
             np.int32(4 * hid), one, _fresh_rows(dg, off, n_b, dgs).ctypes.data,
             np.int32(4 * hid), w_hh.ctypes.data, np.int32(width), zero, dh.ctypes.data,
             np.int32(width))


@njit(nogil=True, error_model="numpy")
def proj_grad(dhp, hraw, sizes, offsets, reverse, gemm, consts, dw_hr):
    """dw_hr: ``matmul_hr``'s weight gradient, one GEMM per step (``dhp.T @ hraw``)."""
    step_weight_grad(dhp, hraw, np.empty((0, hraw.shape[1]), hraw.dtype), sizes, offsets,
                     reverse, gemm, consts, dw_hr)
