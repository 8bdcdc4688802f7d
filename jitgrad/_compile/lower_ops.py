"""The lowered ops of ``lower.py``: what a training step's layers do, over NumPy arrays.

Each op has ``inputs`` (value indices), ``out`` (value index), ``check(values) -> bool`` (run
before anything of the step runs), and, for the ops-one-by-one executor, ``forward(arr)``
writing ``arr[out]`` and ``backward(arr, g) -> ([grad or None per input], [(leaf, grad)])``
(``g``: the gradient of ``out``, an array the op may overwrite). ``lower_program.py`` writes
the same work as instructions for one compiled call. Each op computes what its eager
implementation computes, with the same BLAS calls and kernels: the same bits.
"""
from __future__ import annotations

import numpy as np

from ..autograd.node import FREED_MESSAGE, Ctx, FunctionNode, node_class
from ..backends import blas, cpu
from ..nn.functional import _loss_kernels, dense
from ..tensor import Tensor
from . import lower_kernels as K
from . import pending


class Dense:
    """``x @ W^T + b`` (nn.Linear, F.linear): ``_fast_linear``'s and ``_linear_backward``'s
    BLAS calls (the bias as GEMM's C; AddmmBackward0's layouts)."""

    def __init__(self, x, out, weight, bias, shape, x_shape):
        self.inputs, self.out = (x,), out
        self.x_shape = x_shape
        self.weight, self.bias = weight, bias
        self.meta = [(t, t._data.shape, t._data.dtype, t._requires_grad) for t in (weight, bias)]
        self.shape = shape
        self.buf = self.copy = None  # the output; the input's copy (when copies_input)
        self.need_x = False  # set by plan: does x need a gradient?
        self.foldable = False  # set by plan: SGD may fold into the weight-gradient GEMM
        # set by plan: foldable and x is an input, not a buffer of ours: the GEMMs read a copy,
        # which a pending gradient reads later (the caller may write into x meanwhile)
        self.copies_input = False
        self.fold = None  # per run: SGD's alpha (-lr; +lr to maximize) for the weight, or None
        self.bias_lr = None  # per run, one-call program: (lr, maximize) to update the bias

    def check(self, values):
        for t, shape, dt, rg in self.meta:
            d = t._data
            if d.__class__ is not np.ndarray or d.shape != shape or d.dtype != dt or \
                    t._requires_grad != rg:
                return False
        return True

    def forward(self, arr):
        x, w = arr[self.inputs[0]], self.weight._data
        if self.copies_input:
            copy = self.copy = _buffer(self.copy, x.shape, x.dtype)
            np.copyto(copy, x)
            x = arr[self.inputs[0]] = copy
        out = self.buf = _buffer(self.buf, self.shape, w.dtype)
        out[...] = self.bias._data
        blas.matmul(x, w.T, out=out, accumulate=True)
        arr[self.out] = out

    def backward(self, arr, g):
        leaves = []
        if self.bias._requires_grad:
            leaves.append((self.bias, dense._bias_grad(g)))
        x, w = arr[self.inputs[0]], self.weight
        gx = _input_grad(g, w._data, x) if self.need_x else None  # before W changes
        if self.fold is not None:
            # SGD's update as the GEMM's C (the floor's trick); .grad computed when read
            blas.matmul(g.T, x, out=w._data, accumulate=True, alpha=self.fold)
            w._grad = pending.make(g, x, w._data.dtype)
            self.pending.append((w, w._grad))
        elif w._requires_grad:
            leaves.append((w, blas.matmul(g.T, x)))
        return [gx], leaves


def _input_grad(g, w, x):
    """``g @ W`` as eager's AddmmBackward0 computes it (mm_mat1_backward): ``(W^T g^T)^T`` when
    ``x`` passes ATen's column-major test (size-1 dims included: a (1, 1) input does), else
    ``g @ W``. The two are different GEMM calls (for a (1, k) @ (k, 1) product MKL's bits
    differ); the result is C-contiguous either way."""
    s0, s1 = (st // x.itemsize for st in x.strides)
    if s0 == 1 and s1 == x.shape[0]:
        return np.ascontiguousarray(blas.matmul(w.T, g.T).T)
    return blas.matmul(g, w)


class Relu:
    """The registry's relu and its VJP (``select(a < 0, 0, a)``; ``select(out > 0, g, g * 0)``),
    in place when nothing else reads the input."""

    def __init__(self, x, out, shape, dtype):
        self.inputs, self.out = (x,), out
        self.in_place = False  # set by plan
        self.shape, self.dtype, self.buf = shape, dtype, None

    def check(self, values):
        return True

    def forward(self, arr):
        x = arr[self.inputs[0]]
        if self.in_place:
            out = x
        else:
            out = self.buf = _buffer(self.buf, self.shape, self.dtype)
        K.relu(x.reshape(-1), out.reshape(-1))
        arr[self.out] = out

    def backward(self, arr, g):
        K.relu_vjp(g.reshape(-1), arr[self.out].reshape(-1))
        return [g], ()


class CrossEntropy:
    """Mean ``cross_entropy`` of (N, C) logits and int64 class indices, no weights or label
    smoothing: the fast path's arithmetic (``_log_softmax_rows``, ``_nll_rows``) and the
    VJPs the engine runs for it (NllLossBackward0, then LogSoftmaxBackward0's direct form)."""

    def __init__(self, logits, target, out, ignore_index, node_name, meta):
        self.inputs, self.out = (logits, target), out
        self.ignore_index, self.node_name, self.meta = ignore_index, node_name, meta
        self.lsm = None

    def check(self, values):
        n, c = self.meta[0]
        t = values[self.inputs[1]]._data
        if t.__class__ is not np.ndarray or t.dtype != np.int64 or t.shape != (n,) or not n:
            return False
        lo, hi = t.min(), t.max()
        ig = self.ignore_index
        return not (lo < 0 or hi >= c or (lo <= ig <= hi and np.any(t == ig)))

    def forward(self, arr):
        from ..nn.functional import loss_classification
        x = arr[self.inputs[0]]
        self.lsm = loss_classification._log_softmax_array(x)
        t = arr[self.inputs[1]]
        n = x.shape[0]
        total = loss_classification._nll_total(self.lsm, t)
        self.scale = 1.0 / n
        arr[self.out] = self.mean(total, x.dtype)

    def mean(self, total, dtype):
        """The loss from the NLL total (a float64 holding the dtype's cascade sum): divided
        by N in the dtype, as eager's ``_nll_rows`` and ATen do."""
        dt = np.dtype(dtype)
        return np.asarray(dt.type(total) / dt.type(self.meta[0][0]), dtype=dt)

    def backward(self, arr, g):
        lsm, t = self.lsm, arr[self.inputs[1]]
        coef = np.zeros(lsm.shape, dtype=lsm.dtype)
        coef[np.arange(lsm.shape[0]), t] = lsm.dtype.type(-self.scale)
        gd = coef * g
        gx = np.empty_like(lsm)
        _loss_kernels.log_softmax_rows_backward(lsm, gd, gx)
        self.lsm = None
        return [gx, None], ()

    def result(self, data):
        """The loss tensor: eager's value and grad_fn name, its graph already freed (a second
        ``backward()`` raises eager's error; ``grad_fn.next_functions`` is empty)."""
        return freed_result(data, self.node_name)


def freed_result(data, node_name):
    """A tensor over ``data`` whose ``grad_fn`` is a node named ``node_name`` with its graph
    already freed: what eager returns for a value a ``backward()`` went through."""
    out = Tensor._make(data)
    node = node_class(node_name, FunctionNode)((), ((tuple(out.shape), out.dtype),), Ctx(),
                                               _freed_backward)
    node._released = True
    out._grad_fn, out._output_nr, out._requires_grad = node, 0, True
    return out


def _buffer(b, shape, dtype):
    """``b``, or a new buffer when ``b`` is None or of another shape: the one buffer of a
    lowered op, allocated on its first run (pooled, aligned) and written on every run."""
    if b is None or b.shape != shape:
        b = cpu.empty(shape, dtype)
    return b


def _freed_backward(node, g):
    raise RuntimeError(FREED_MESSAGE)

