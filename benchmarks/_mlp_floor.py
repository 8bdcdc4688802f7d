"""The MLP training step with no framework at all: what any library calling MKL pays at least.

``bench_mlp``'s ``floor`` implementation. It does the same arithmetic as the other three
(784-512-512-10, batch 256, float32, cross-entropy, SGD) with everything a framework could
possibly fuse already fused by hand, and nothing a framework must do (no graph, no tensors, no
gradient arrays kept for the user):

* each layer is one ``cblas_sgemm`` with the bias pre-filled as C (beta = 1), ReLU in place;
* the loss and its gradient are one Numba loop;
* the SGD update is folded into the weight-gradient GEMM (``W += -lr * g^T h``: alpha = -lr,
  beta = 1), so no weight gradient is ever written or read back; the bias update is one loop.

Its time over PyTorch's is the ratio no implementation on the same BLAS can beat on this machine;
the gap between it and jitgrad (or PyTorch) is framework cost. Needs MKL (``jitgrad[mkl]``):
without it, ``make_floor_step`` raises NotImplementedError and asv skips it.
"""
from __future__ import annotations

import ctypes

import numpy as np

_ROW_MAJOR, _N, _T = 101, 111, 112


def _sgemm():
    from jitgrad.backends import blas
    lib = blas._find_mkl()
    if lib is None:
        raise NotImplementedError("the floor step needs MKL (pip install 'jitgrad[mkl]')")
    fn = lib.cblas_sgemm
    vp, i, f = ctypes.c_void_p, ctypes.c_int, ctypes.c_float
    fn.restype = None
    fn.argtypes = [i, i, i, i, i, i, f, vp, i, vp, i, f, vp, i]
    return fn


def _kernels():
    import numba

    @numba.njit(cache=True)
    def relu_(h):
        f = h.ravel()
        for i in range(f.size):
            if f[i] < 0:
                f[i] = 0

    @numba.njit(cache=True)
    def cross_entropy_grad(z, y, g):
        """Mean cross-entropy of logits ``z``; its gradient into ``g``."""
        n, c = z.shape
        total = 0.0
        for r in range(n):
            m = z[r, 0]
            for j in range(1, c):
                m = max(m, z[r, j])
            s = 0.0
            for j in range(c):
                s += np.exp(z[r, j] - m)
            lse = m + np.log(s)
            total += lse - z[r, y[r]]
            for j in range(c):
                g[r, j] = np.exp(z[r, j] - lse) / n
            g[r, y[r]] -= 1.0 / n
        return total / n

    @numba.njit(cache=True)
    def bias_sgd_(b, g, lr):
        """``b -= lr * g.sum(0)``."""
        n, c = g.shape
        acc = np.zeros(c, np.float32)
        for r in range(n):
            for j in range(c):
                acc[j] += g[r, j]
        for j in range(c):
            b[j] -= lr * acc[j]

    @numba.njit(cache=True)
    def relu_mask_(g, h):
        """``g *= h > 0`` (the ReLU VJP, in place)."""
        gf = g.ravel()
        hf = h.ravel()
        for i in range(gf.size):
            if hf[i] <= 0:
                gf[i] = 0

    return relu_, cross_entropy_grad, bias_sgd_, relu_mask_


def make_floor_step(X, y, Ws, bs, lr=0.01):
    """A zero-argument callable doing one step on ``Ws``/``bs`` (float32 arrays, updated in
    place; ``Ws[k]`` is (out, in) like ``nn.Linear.weight``); it returns the loss."""
    sgemm = _sgemm()
    relu_, cross_entropy_grad, bias_sgd_, relu_mask_ = _kernels()
    n = X.shape[0]
    sizes = [X.shape[1]] + [W.shape[0] for W in Ws]
    acts = [np.empty((n, o), np.float32) for o in sizes[1:]]
    grads = [np.empty((n, o), np.float32) for o in sizes[1:]]
    y = np.ascontiguousarray(y, dtype=np.int64)
    last = len(Ws) - 1

    def addr(a):
        return a.__array_interface__["data"][0]

    def step():
        h = X
        for k, (W, b) in enumerate(zip(Ws, bs)):
            out = acts[k]
            out[...] = b
            sgemm(_ROW_MAJOR, _N, _T, n, sizes[k + 1], sizes[k], 1.0, addr(h), sizes[k],
                  addr(W), sizes[k], 1.0, addr(out), sizes[k + 1])
            if k < last:
                relu_(out)
            h = out
        loss = cross_entropy_grad(acts[last], y, grads[last])
        for k in range(last, -1, -1):
            g, W = grads[k], Ws[k]
            h_in = X if k == 0 else acts[k - 1]
            bias_sgd_(bs[k], g, lr)
            if k:  # the input gradient first: it needs W before the update
                g_prev = grads[k - 1]
                sgemm(_ROW_MAJOR, _N, _N, n, sizes[k], sizes[k + 1], 1.0, addr(g), sizes[k + 1],
                      addr(W), sizes[k], 0.0, addr(g_prev), sizes[k])
                relu_mask_(g_prev, acts[k - 1])
            sgemm(_ROW_MAJOR, _T, _N, sizes[k + 1], sizes[k], n, -lr, addr(g), sizes[k + 1],
                  addr(h_in), sizes[k], 1.0, addr(W), sizes[k])
        return loss

    return step
