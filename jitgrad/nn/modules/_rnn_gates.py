"""The gate arithmetic of one RNN step as ATen's CPU ops compute it, for the fused kernels of the
cells (``_rnn_cell_kernels.py``) and of the layers (``_rnn_kernels.py``): PyTorch's bits.

PyTorch's CPU cells (RNN.cpp ``LSTMCell``/``GRUCell``/``SimpleCell``) are ATen compositions:
``linear_hh(hx).add_(linear_ih(x))``, then ``unsafe_chunk`` and in-place ``sigmoid_``/``tanh_``
per gate chunk, then elementwise mul/add. Two of those ops are not the plain formula:

- ``sigmoid_`` is ``cpu_kernel_vec``: over each contiguous run (one gate chunk of one batch row,
  ``hidden`` elements) ``vectorized_loop`` takes steps of two vectors (AVX-512: 32 floats / 16
  doubles, 128 bytes; AVX2: 16 / 8, 64 bytes: the build ``backends.cpu_capability`` names) with
  the vector lambda (``math.aten_sigmoid``: SLEEF's exp) and computes the remaining ``hidden %
  32`` (``% 16``; AVX2 ``% 16`` / ``% 8``) elements with the scalar lambda ``1 / (1 +
  std::exp(-x))`` (glibc's exp, which Numba's ``math.exp`` calls: no SVML here);
- ``tanh_`` (and ``tanh``) is MKL VML's ``vs/vdTanh`` (ATen's vml.h, ``backends/vml.py``):
  elementwise, so one call per contiguous run gives the bits of ATen's chunked calls.

One thread: ATen splits runs only at ``parallel_for`` chunks (32768 elements), so a multi-thread
PyTorch's sigmoid tails can fall elsewhere on large steps. The elementwise mul/add of the
steps stay in the kernels (Numba compiles without ``contract``: no FMA forms, as in ATen's
separate ops).
"""
from __future__ import annotations

import math

import numpy as np

from ...backends.cblas_calls import VML_MODE, _call_vml
from ...backends.cpu_capability import CAPABILITY, vector_bytes
from ...codegen.kcache import njit_cached as njit
from ...math import aten_sigmoid
from ...math._intrinsics import fma

# vectorized_loop's step: 2 * sizeof(Vectorized<T>) in the ATen build PyTorch runs here
# (128 bytes on AVX-512, 64 on AVX2)
_PAIR_BYTES = 2 * vector_bytes(CAPABILITY)
_VML_CHUNK = 1 << 30  # MKL_INT is int32: longer spans in pieces (elementwise)


@njit(nogil=True, error_model="numpy")
def _sigmoid_span(row, add):
    """``row[j] = aten_sigmoid(add[j] + row[j])`` over whole 1-D slices: a loop of its own from
    0, which LLVM vectorizes (over ``range(lo, hi)`` inside ``sigmoid_run`` it stayed scalar:
    3-5x slower at 256 elements; the same bits either way, no fast-math here)."""
    for j in range(row.size):
        row[j] = aten_sigmoid(add[j] + row[j])


@njit(nogil=True, error_model="numpy")
def sigmoid_run(row, add, lo, hi, one):
    """``row[j] = sigmoid(add[j] + row[j])`` for ``lo <= j < hi``, one contiguous run of
    ATen's ``sigmoid_``: vector lanes, then its scalar tail."""
    vec_end = hi - (hi - lo) % (_PAIR_BYTES // row.itemsize)
    _sigmoid_span(row[lo:vec_end], add[lo:vec_end])
    for j in range(vec_end, hi):
        row[j] = one / (one + math.exp(-(add[j] + row[j])))


@njit(nogil=True, error_model="numpy")
def vml_span(addr, src, dst, n, item):
    """``dst[:n] = f(src[:n])`` by the VML function at ``addr`` over raw addresses (``src`` may
    be ``dst``: VML works in place)."""
    i = 0
    while i < n:
        m = min(n - i, _VML_CHUNK)
        _call_vml(addr, np.int32(m), src + i * item, dst + i * item, np.int64(VML_MODE))
        i += m


@njit(nogil=True, error_model="numpy")
def tanh_run(addr, row, lo, n):
    """``row[lo:lo + n] = tanh(row[lo:lo + n])`` in place (``addr``: VML's tanh)."""
    p = row.ctypes.data + lo * row.itemsize
    vml_span(addr, p, p, n, row.itemsize)


@njit(nogil=True, error_model="numpy")
def tanh_rows(addr, src, dst, rows):
    """``dst[:rows] = tanh(src[:rows])`` for C-contiguous 2-D ``src``/``dst`` of one width."""
    vml_span(addr, src.ctypes.data, dst.ctypes.data, rows * src.shape[1], src.itemsize)


@njit(nogil=True, error_model="numpy")
def lstm_gates(ar, ghr, hid, one, tanh_addr):
    """One batch row of an LSTM step: ``ar`` (4H: the input projection) ends as sigmoid(i),
    sigmoid(f), tanh(g), sigmoid(o) of ``ghr + ar`` (``ghr`` the hidden projection), each chunk
    a run of ATen's ``sigmoid_``/``tanh_``."""
    sigmoid_run(ar, ghr, 0, hid, one)
    sigmoid_run(ar, ghr, hid, 2 * hid, one)
    for j in range(2 * hid, 3 * hid):
        ar[j] = ghr[j] + ar[j]
    tanh_run(tanh_addr, ar, 2 * hid, hid)
    sigmoid_run(ar, ghr, 3 * hid, 4 * hid, one)


@njit(nogil=True, error_model="numpy")
def gru_gates(ar, ghr, hid, one, tanh_addr):
    """One batch row of a GRU step: ``ar`` (3H: the input projection) ends as r, z and n =
    tanh(i_n + h_n * r), RNN.cpp's ``GRUCell`` (``ghr`` the hidden projection)."""
    sigmoid_run(ar, ghr, 0, hid, one)
    sigmoid_run(ar, ghr, hid, 2 * hid, one)
    for j in range(hid):
        ar[2 * hid + j] = ar[2 * hid + j] + ghr[2 * hid + j] * ar[j]
    tanh_run(tanh_addr, ar, 2 * hid, hid)


# ----------------------------------------------------------------------------- gradients
# The per-op graph's VJPs in ATen's arithmetic: sigmoid_backward ``grad * (1 - y) * y``,
# tanh_backward ``grad * (1 - y * y)`` with ``1 - y * y`` one FMA (its GCC build contracts
# the vector and the scalar lambda alike: measured), mul's ``grad * other``.

@njit(nogil=True, error_model="numpy")
def lstm_element_grads(ig, fg, gg, og, cx, tc, g_og, g_tc, g_kept, g_added, one):
    """One unit of an LSTM step backward: gates i, f, g, o (after their activations), the
    previous cell state ``cx``, ``tc`` = tanh(cy), and the gradients of ``o``, of ``tanh(cy)``
    and of the two summands of cy (``f * cx``, ``i * g``). Returns the pre-activation
    gradients of i, f, g, o and cx's gradient. cy's gradient is each summand's plus the
    tanh's, added after (the engine's order: the tanh's node runs last)."""
    dc = g_tc * fma(-tc, tc, one)
    gk = g_kept + dc
    ga = g_added + dc
    return (ga * gg * (one - ig) * ig, gk * cx * (one - fg) * fg, ga * ig * fma(-gg, gg, one),
            g_og * (one - og) * og, gk * fg)


@njit(nogil=True, error_model="numpy")
def gru_element_grads(r, z, n, h_n, g_n, g_z, one):
    """One unit of a GRU step backward from the gradients of n and z (the hidden projection's
    n chunk ``h_n`` before ``* r``): the pre-activation gradients of r, z and n."""
    dn = g_n * fma(-n, n, one)
    return dn * h_n * (one - r) * r, g_z * (one - z) * z, dn
