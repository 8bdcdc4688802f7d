"""The Numba side of ``lower.py``'s lowered steps: the registry's relu and its VJP
(``ops/elementwise_activation.py``'s ``relu``) as flat loops over contiguous arrays, computing
what the eager kernels compute bit for bit, and ``run_program``, the interpreter that runs a whole
lowered step in one call (``lower_program.py``)."""
from __future__ import annotations

import numpy as np

from ..codegen.kcache import njit_cached as njit
from ..nn.functional._loss_kernels import log_softmax_rows_backward
from ..nn.functional._nll_kernels import nll_rows_total
from ..ops._cascade_sum_kernels import column_sums_aten
from ..ops._softmax_aten import _lastdim_serial
from ..optim._kernels import sgd_step


@njit(nogil=True)
def relu(x, out):
    """``out = select(x < 0, 0, x)`` (NaN passes through, as in PyTorch); ``out`` may be ``x``."""
    for i in range(x.size):
        v = x[i]
        out[i] = 0 if v < 0 else v


@njit(nogil=True)
def relu_vjp(g, out):
    """``g = select(out > 0, g, g * 0)`` in place (``g * 0`` keeps NaN and the sign of zero)."""
    for i in range(g.size):
        if not out[i] > 0:
            g[i] = g[i] * 0



# ----------------------------------------------------------------------------- the interpreter
# A lowered step as one compiled call (``lower_program.py``): between the GEMMs no Python runs,
# whose interpreter state a GEMM evicts from the caches (measured: the step's non-GEMM work
# took 0.29 ms alone and 0.77 ms between the GEMMs as Python calls). Each instruction is a row
# of ``code``: opcode, then slots of ``f`` (2-D arrays of the step's dtype; a bias is a (1, n)
# view), of ``ints`` (targets) and of ``scal`` (scalars of the dtype), or of ``out64``.

NOP, COPY, FILL_ROWS, GEMM, RELU, RELU_VJP, COLUMN_SUMS, CE_FORWARD, CE_BACKWARD, SGD = range(10)
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


@njit(nogil=True, error_model="numpy")
def run_program(code, f, ints, scal, out64, gemm):
    for k in range(code.shape[0]):
        op = code[k, 0]
        if op == NOP:
            continue
        a = f[code[k, 1]]
        if op == COPY:  # f[2] = f[1]
            b = f[code[k, 2]]
            for r in range(a.shape[0]):
                for j in range(a.shape[1]):
                    b[r, j] = a[r, j]
        elif op == FILL_ROWS:  # every row of f[2] = the (1, n) row f[1]
            b = f[code[k, 2]]
            for r in range(b.shape[0]):
                for j in range(b.shape[1]):
                    b[r, j] = a[0, j]
        elif op == GEMM:  # f[3] = scal[5] * op(f[1]) @ op(f[2]) + scal[6] * f[3]; 4: trans bits
            b = f[code[k, 2]]
            c = f[code[k, 3]]
            ta = code[k, 4] & 1
            tb = code[k, 4] & 2
            m = a.shape[1] if ta else a.shape[0]
            kk = a.shape[0] if ta else a.shape[1]
            n = b.shape[0] if tb else b.shape[1]
            if m == 0 or n == 0:
                continue
            beta = scal[code[k, 6]]
            if kk == 0:
                if beta == 0:
                    c[:, :] = 0
                continue
            gemm(_ROW_MAJOR, _TRANS if ta else _NO_TRANS, _TRANS if tb else _NO_TRANS,
                 np.int32(m), np.int32(n), np.int32(kk), scal[code[k, 5]], a.ctypes.data,
                 np.int32(max(a.shape[1], 1)), b.ctypes.data, np.int32(max(b.shape[1], 1)),
                 beta, c.ctypes.data, np.int32(max(c.shape[1], 1)))
        elif op == RELU:  # f[2] = relu(f[1])
            relu(a.reshape(-1), f[code[k, 2]].reshape(-1))
        elif op == RELU_VJP:  # f[1] = relu_vjp(f[1], relu's output f[2])
            relu_vjp(a.reshape(-1), f[code[k, 2]].reshape(-1))
        elif op == COLUMN_SUMS:  # the (1, n) f[2] = column sums of f[1], code[k, 3] threads
            column_sums_aten(a, f[code[k, 2]][0], code[k, 3])
        elif op == CE_FORWARD:  # f[2] = log_softmax(f[1]); out64[4] = -sum f[2][r, ints[3][r]]
            b = f[code[k, 2]]
            _lastdim_serial(a, b, True)  # eager cross_entropy's log_softmax (ATen's bits)
            out64[code[k, 4]] = nll_rows_total(b, ints[code[k, 3]])
        elif op == CE_BACKWARD:  # f[2] = VJP of the mean NLL at f[1] (scal[4] = -1/N)
            b = f[code[k, 2]]
            t = ints[code[k, 3]]
            b[:, :] = 0
            for r in range(b.shape[0]):
                b[r, t[r]] = scal[code[k, 4]]
            log_softmax_rows_backward(a, b, b)
        elif op == SGD:  # plain SGD on the (1, n) f[1] with gradient f[2]: scal[3] = -lr,
            g = f[code[k, 2]]  # scal[4] != 0: maximize (the optimizer's own kernel)
            zero = scal[0]
            sgd_step(a[0], g[0], a[0], scal[code[k, 3]], zero, zero, scal[1], False, False,
                     False, False, scal[code[k, 4]] != 0)
