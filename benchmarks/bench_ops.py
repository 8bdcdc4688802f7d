"""Per-op forward and forward+backward times at a few sizes: elementwise, reduction, matmul,
batched matmul, softmax (float32). jitgrad vs PyTorch eager vs NumPy (NumPy's "backward" is the
hand-written VJP of the same op)."""
from __future__ import annotations

import numpy as np

from ._common import IMPLS, arrays, lib_for


class _Op:
    params = [IMPLS, []]
    param_names = ["impl", "size"]
    timeout = 120

    def setup(self, impl, size):
        self.impl = impl
        self.lib = lib_for(impl)
        self.make(size)
        if self.lib is not None:
            self.t = [self.lib.tensor(a, requires_grad=True) for a in self.np_inputs]
            out = self.forward(*self.t)
            self.g = self.lib.ones_like(out)
        # warm up: compile / load kernels outside the timed region
        for _ in range(2):
            self.time_forward_backward(impl, size)

    def time_forward(self, impl, size):
        if self.lib is None:
            self.np_forward(*self.np_inputs)
        else:
            self.forward(*self.t)

    def time_forward_backward(self, impl, size):
        if self.lib is None:
            self.np_backward(*self.np_inputs)
            return
        for t in self.t:
            t.grad = None
        self.forward(*self.t).backward(self.g)


class Elementwise(_Op):
    """``y = tanh(x * w + x)``: three elementwise ops, their VJPs."""

    params = [IMPLS, [10_000, 1_000_000]]

    def make(self, n):
        self.np_inputs = arrays((n,), (n,))

    def forward(self, x, w):
        return (x * w + x).tanh()

    def np_forward(self, x, w):
        return np.tanh(x * w + x)

    def np_backward(self, x, w):
        y = np.tanh(x * w + x)
        d = 1 - y * y
        return d * (w + 1), d * x


class Reduction(_Op):
    """``x.sum(1)`` and ``x.mean()`` over a (rows, 1000) matrix."""

    params = [IMPLS, [100, 1000]]

    def make(self, rows):
        self.np_inputs = arrays((rows, 1000))

    def forward(self, x):
        return x.sum(1) + x.mean()

    def np_forward(self, x):
        return x.sum(1) + x.mean()

    def np_backward(self, x):
        self.np_forward(x)
        return np.broadcast_to(np.float32(1) + np.float32(x.shape[0] / x.size), x.shape).copy()


class Matmul(_Op):
    """Square ``x @ w``; backward is two more matmuls."""

    params = [IMPLS, [64, 256, 512]]

    def make(self, n):
        self.np_inputs = arrays((n, n), (n, n))

    def forward(self, x, w):
        return x @ w

    def np_forward(self, x, w):
        return x @ w

    def np_backward(self, x, w):
        g = np.ones((x.shape[0], w.shape[1]), dtype=x.dtype)
        x @ w
        return g @ w.T, x.T @ g


class BatchedMatmul(_Op):
    """``torch.bmm`` over a stack of (128, 64) @ (64, 128) products, attention's q @ k^T shape
    (8 heads x 8 sequences = 64); backward is two more stacks, with transposed operands."""

    params = [IMPLS, [8, 64]]

    def make(self, batch):
        self.np_inputs = arrays((batch, 128, 64), (batch, 64, 128))

    def forward(self, x, w):
        return x.bmm(w)

    def np_forward(self, x, w):
        return x @ w

    def np_backward(self, x, w):
        g = np.ones((x.shape[0], x.shape[1], w.shape[2]), dtype=x.dtype)
        x @ w
        return g @ w.transpose(0, 2, 1), x.transpose(0, 2, 1) @ g


class Softmax(_Op):
    """``softmax(x, 1)`` over (rows, 1000) logits."""

    params = [IMPLS, [64, 1024]]

    def make(self, rows):
        self.np_inputs = arrays((rows, 1000))

    def forward(self, x):
        return x.softmax(1)

    def np_forward(self, x):
        e = np.exp(x - x.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    def np_backward(self, x):
        y = self.np_forward(x)
        g = np.ones_like(y)
        return y * (g - (g * y).sum(1, keepdims=True))
