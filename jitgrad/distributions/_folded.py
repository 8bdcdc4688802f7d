"""What ``HalfCauchy`` and ``HalfNormal`` share: ``|X|`` for ``X`` a location-0 ``scale`` family
(``_base``), so the density doubles on ``[0, inf)`` and the cdf, icdf and entropy fold the
base's (PyTorch writes both classes out in full)."""

from __future__ import annotations

import math
from math import inf

import jitgrad as torch

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = []


class _FoldedAtZero(TransformedDistribution):
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _base = None  # the location-scale family folded: Cauchy or Normal

    def __init__(self, scale, validate_args=None):
        base_dist = self._base(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return torch.zeros_like(self.scale)

    def _log_prob_value(self, value):
        return value

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = self._log_prob_value(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        log_prob = torch.where(value >= 0, log_prob, -inf)
        return log_prob

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
