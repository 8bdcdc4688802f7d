"""Pooling and resampling, forward and forward+backward (float32), jitgrad vs PyTorch eager:
a 2x2 max pool and a 2x2 average pool on a ResNet-sized activation (32, 64, 32, 32), and a
bilinear x2 upsampling of (8, 64, 32, 32)."""
from __future__ import annotations

from ._common import arrays, lib_for

CASES = {
    "max_pool2d": ((32, 64, 32, 32), lambda F, x: F.max_pool2d(x, 2)),
    "avg_pool2d": ((32, 64, 32, 32), lambda F, x: F.avg_pool2d(x, 2)),
    "bilinear_x2": ((8, 64, 32, 32),
                    lambda F, x: F.interpolate(x, scale_factor=2, mode="bilinear")),
}


class Pool:
    params = [["jitgrad", "torch"], list(CASES)]
    param_names = ["impl", "op"]
    timeout = 120

    def setup(self, impl, op):
        lib = lib_for(impl)
        self.F = lib.nn.functional
        shape, self.fn = CASES[op]
        (x,) = arrays(shape)
        self.x = lib.tensor(x, requires_grad=True)
        self.g = lib.ones_like(self.fn(self.F, self.x))
        for _ in range(2):  # compile / load kernels outside the timed region
            self.time_forward_backward(impl, op)

    def time_forward(self, impl, op):
        self.fn(self.F, self.x.detach())

    def time_forward_backward(self, impl, op):
        self.x.grad = None
        self.fn(self.F, self.x).backward(self.g)
