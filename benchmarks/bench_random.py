"""Random draws: 10M uniform / normal float32 numbers from a seeded generator, jitgrad vs PyTorch
(jitgrad reproduces PyTorch's CPU mt19937 streams bit for bit, so both do the same work)."""
from __future__ import annotations

from ._common import lib_for


class Draws:
    params = [["jitgrad", "torch"], ["rand", "randn"]]
    param_names = ["impl", "kind"]
    timeout = 120

    def setup(self, impl, kind):
        self.lib = lib_for(impl)
        self.gen = self.lib.Generator().manual_seed(0)
        self.draw = getattr(self.lib, kind)
        self.draw(100, generator=self.gen)  # compile / load the kernels outside the timing

    def time_draw_10M(self, impl, kind):
        self.draw(10_000_000, generator=self.gen)
