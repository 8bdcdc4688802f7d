"""Normalization and attention forward / forward+backward (float32), jitgrad beside PyTorch:
batch_norm (training, affine) on a ResNet-style activation, group_norm on the same, and
scaled_dot_product_attention at a small transformer's size."""
from __future__ import annotations

from ._common import arrays, lib_for


class _Norm:
    params = [["jitgrad", "torch"]]
    param_names = ["impl"]
    timeout = 120

    def setup(self, impl):
        self.lib = lib_for(impl)
        self.F = self.lib.nn.functional
        self.make()
        self.t = [self.lib.tensor(a, requires_grad=True) for a in self.np_inputs]
        self.g = self.lib.ones_like(self.forward(*self.t))
        for _ in range(2):  # compile / load kernels outside the timed region
            self.time_forward_backward(impl)

    def time_forward(self, impl):
        self.forward(*self.t)

    def time_forward_backward(self, impl):
        for t in self.t:
            t.grad = None
        self.forward(*self.t).backward(self.g)


class BatchNorm2d(_Norm):
    """``batch_norm(x, training=True)`` with weight and bias, x (32, 64, 32, 32)."""

    def make(self):
        self.np_inputs = arrays((32, 64, 32, 32), (64,), (64,))

    def forward(self, x, w, b):
        return self.F.batch_norm(x, None, None, w, b, training=True)


class GroupNorm(_Norm):
    """``group_norm(x, 8)`` with weight and bias, x (32, 64, 32, 32)."""

    def make(self):
        self.np_inputs = arrays((32, 64, 32, 32), (64,), (64,))

    def forward(self, x, w, b):
        return self.F.group_norm(x, 8, w, b)


class ScaledDotProductAttention(_Norm):
    """``scaled_dot_product_attention(q, k, v, is_causal=True)``, (8, 8, 128, 64) each."""

    def make(self):
        self.np_inputs = arrays((8, 8, 128, 64), (8, 8, 128, 64), (8, 8, 128, 64))

    def forward(self, q, k, v):
        return self.F.scaled_dot_product_attention(q, k, v, is_causal=True)
