"""``HalfCauchy`` (PyTorch's ``torch/distributions/half_cauchy.py``): ``|Cauchy(0, scale)|``."""

from __future__ import annotations

import math

import jitgrad as torch

from ._folded import _FoldedAtZero
from .cauchy import Cauchy

__all__ = ["HalfCauchy"]


class HalfCauchy(_FoldedAtZero):
    """Creates a half-Cauchy distribution parameterized by `scale` where ``X ~ Cauchy(0, scale)``,
    ``Y = |X| ~ HalfCauchy(scale)``."""

    _base = Cauchy

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return torch.full(
            self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device
        )

    @property
    def variance(self):
        return self.base_dist.variance

    def _log_prob_value(self, value):
        # PyTorch's HalfCauchy (not HalfNormal) takes a number as a tensor of the scale's dtype
        return torch.as_tensor(
            value, dtype=self.base_dist.scale.dtype, device=self.base_dist.scale.device
        )
