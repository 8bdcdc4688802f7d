"""Numba kernels of one step of ``LSTMCell``/``GRUCell``/``RNNCell`` (``rnn_cells_fused.py``):
both projections and the gate arithmetic in one call, the backward (gate gradients and the
GEMMs of the input, hidden state and weight gradients) in another; GEMMs through MKL's
``cblas_?gemm`` address as ``_rnn_kernels.py`` (whose ``_project`` they share).

The forward performs the per-op cell's operations (``rnn_stack.lstm_cell``/``gru_cell``/
``tanh_cell``) in its order: ``x @ w_ih.T + b_ih`` and ``h @ w_hh.T + b_hh`` each as addmm does
it (bias in C, beta 1: PyTorch's bits), their sum ``gh + gi``, then the gates as ATen's
``sigmoid_``/``tanh_`` compute them (``_rnn_gates.py``: SLEEF lanes and glibc tails, MKL VML's
tanh); no FMA forms (Numba compiles without ``contract``), so values are PyTorch's CPU cell's
bit for bit. Besides the
cell's results each kernel writes the intermediates that ``rnn_cells_fused`` presents through
real ops (PyTorch's output node names): LSTM ``sigmoid(o)``, ``tanh(cy)``, ``sigmoid(f) * cx``,
``sigmoid(i) * tanh(g)``; GRU ``n`` and ``z``; RNN the pre-activation.

The backward kernels take the gradients of those intermediates and follow the per-op graph's
VJPs in ATen's arithmetic (``_rnn_gates.lstm_element_grads``/``gru_element_grads``), then make
addmm's backward GEMM calls and ``sum_to``'s bias sums: PyTorch's gradient bits too.
"""
from __future__ import annotations

import numpy as np

from ...codegen.kcache import njit_cached as njit
from ...ops._cascade_sum_kernels import column_sums_aten
from ._rnn_gates import gru_element_grads, gru_gates, lstm_element_grads, lstm_gates, tanh_rows
from ._rnn_kernels import _project

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


@njit(nogil=True, error_model="numpy")
def _gates(x, w_ih, w_hh, b_ih, b_hh, hx, gemm, one, gi, gh):
    """gi = b_ih + x @ w_ih.T and gh = b_hh + hx @ w_hh.T (addmm's way)."""
    batch, n_in = x.shape
    n_g = gi.shape[1]
    _project(gi, x, w_ih, b_ih, gemm, one, batch, n_g, n_in)
    _project(gh, hx, w_hh, b_hh, gemm, one, batch, n_g, hx.shape[1])


@njit(nogil=True, error_model="numpy")
def lstm_forward(x, w_ih, w_hh, b_ih, b_hh, hx, cx, gemm, consts, tanh_addr, acts, gh, og, tc,
                 kept, added, hy, cy):
    """``acts`` (B, 4H) ends as sigmoid(i), sigmoid(f), tanh(g), sigmoid(o); ``gh`` scratch;
    ``og``, ``tc``, ``kept``, ``added`` the presented intermediates, ``hy``/``cy`` the cell's
    results (B, H each); ``tanh_addr`` VML's tanh."""
    one = consts[1]
    _gates(x, w_ih, w_hh, b_ih, b_hh, hx, gemm, one, acts, gh)
    batch, hid = hx.shape
    for b in range(batch):
        a = acts[b]
        lstm_gates(a, gh[b], hid, one, tanh_addr)
        for j in range(hid):
            k = a[hid + j] * cx[b, j]
            d = a[j] * a[2 * hid + j]
            kept[b, j] = k
            added[b, j] = d
            cy[b, j] = k + d
            og[b, j] = a[3 * hid + j]
    tanh_rows(tanh_addr, cy, tc, batch)  # cy.tanh(): one VML call over the whole state
    for b in range(batch):
        for j in range(hid):
            hy[b, j] = og[b, j] * tc[b, j]


@njit(nogil=True, error_model="numpy")
def lstm_backward(acts, cx, tc, g_og, g_tc, g_kept, g_added, consts, dg, dcx):
    """Gate gradients ``dg`` (B, 4H: pre-activation, both projections') and cx's ``dcx`` from
    the gradients of ``lstm_forward``'s intermediates."""
    one = consts[1]
    batch, hid = cx.shape
    for b in range(batch):
        a, d = acts[b], dg[b]
        for j in range(hid):
            d[j], d[hid + j], d[2 * hid + j], d[3 * hid + j], dcx[b, j] = lstm_element_grads(
                a[j], a[hid + j], a[2 * hid + j], a[3 * hid + j], cx[b, j], tc[b, j],
                g_og[b, j], g_tc[b, j], g_kept[b, j], g_added[b, j], one)


@njit(nogil=True, error_model="numpy")
def gru_forward(x, w_ih, w_hh, b_ih, b_hh, hx, gemm, consts, tanh_addr, acts, gh, n_out, z_out,
                hy):
    """``acts`` (B, 3H) ends as r, z, n; ``gh`` keeps the hidden projection (its n chunk is
    needed backward); ``n_out`` = n and ``z_out`` = z the presented intermediates, ``hy`` =
    (hx - n) * z + n the cell's result (which ``rnn_cells_fused`` recomputes by real ops when
    it records a graph); ``tanh_addr`` VML's tanh."""
    one = consts[1]
    _gates(x, w_ih, w_hh, b_ih, b_hh, hx, gemm, one, acts, gh)
    batch, hid = hx.shape
    for b in range(batch):
        a = acts[b]
        gru_gates(a, gh[b], hid, one, tanh_addr)
        for j in range(hid):
            n = a[2 * hid + j]
            z = a[hid + j]
            n_out[b, j] = n
            z_out[b, j] = z
            hy[b, j] = (hx[b, j] - n) * z + n


@njit(nogil=True, error_model="numpy")
def gru_backward(acts, gh, g_n, g_z, consts, dgi, dgh):
    """Gate gradients of the input projection ``dgi`` and of the hidden one ``dgh`` (B, 3H;
    they differ in the n chunk: ``h_n * r``) from those of n and z."""
    one = consts[1]
    batch, n_g = acts.shape
    hid = n_g // 3
    for b in range(batch):
        a, ghr, di, dh = acts[b], gh[b], dgi[b], dgh[b]
        for j in range(hid):
            r = a[j]
            dr, dz, dn = gru_element_grads(r, a[hid + j], a[2 * hid + j], ghr[2 * hid + j],
                                           g_n[b, j], g_z[b, j], one)
            di[j] = dh[j] = dr
            di[hid + j] = dh[hid + j] = dz
            di[2 * hid + j] = dn
            dh[2 * hid + j] = dn * r


@njit(nogil=True, error_model="numpy")
def simple_forward(x, w_ih, w_hh, b_ih, b_hh, hx, gemm, consts, gi, gh):
    """``gi`` ends as the pre-activation gh + gi (the tanh/relu is a real op)."""
    _gates(x, w_ih, w_hh, b_ih, b_hh, hx, gemm, consts[1], gi, gh)
    for b in range(gi.shape[0]):
        a, ghr = gi[b], gh[b]
        for j in range(gi.shape[1]):
            a[j] = ghr[j] + a[j]


@njit(nogil=True, error_model="numpy")
def input_grads(dgi, dgh, x, hx, w_ih, w_hh, gemm, consts, needs, n_in, hid, threads, dx, dh,
                dw_ih, dw_hh, db_ih, db_hh):
    """From the gate gradients: dx = dgi @ w_ih, dh = dgh @ w_hh, dw_ih = dgi.T @ x, dw_hh =
    dgh.T @ hx and the bias gradients (column sums); only those whose slot ``needs`` (x, w_ih,
    w_hh, b_ih, b_hh, hx) flags; the arrays the others would need may be empty (not saved).
    The GEMMs are the calls ATen's addmm backward makes (``grad.mm(w)``, ``grad.t().mm(x)``),
    the bias sums ``sum_to``'s cascade sum over ``threads``: PyTorch's bits."""
    zero, one = consts[0], consts[1]
    batch, n_g = dgi.shape
    nb, ng, ni, nh = np.int32(batch), np.int32(n_g), np.int32(n_in), np.int32(hid)
    if needs[0]:
        gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, nb, ni, ng, one, dgi.ctypes.data, ng,
             w_ih.ctypes.data, ni, zero, dx.ctypes.data, ni)
    if needs[1]:
        gemm(_ROW_MAJOR, _TRANS, _NO_TRANS, ng, ni, nb, one, dgi.ctypes.data, ng,
             x.ctypes.data, ni, zero, dw_ih.ctypes.data, ni)
    if needs[2]:
        gemm(_ROW_MAJOR, _TRANS, _NO_TRANS, ng, nh, nb, one, dgh.ctypes.data, ng,
             hx.ctypes.data, nh, zero, dw_hh.ctypes.data, nh)
    if needs[3]:
        column_sums_aten(dgi, db_ih, threads)
    if needs[4]:
        column_sums_aten(dgh, db_hh, threads)
    if needs[5]:
        gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, nb, nh, ng, one, dgh.ctypes.data, ng,
             w_hh.ctypes.data, nh, zero, dh.ctypes.data, nh)
