"""``NegativeBinomial`` (PyTorch's ``torch/distributions/negative_binomial.py``): samples are
Poisson draws at Gamma-distributed rates (``_standard_gamma`` then ``torch.poisson``, PyTorch's
draws after ``manual_seed``)."""
from __future__ import annotations

import jitgrad as torch

from . import constraints
from .binomial import _CountedTrials
from .gamma import Gamma
from .utils import lazy_property

__all__ = ["NegativeBinomial"]


def _logsigmoid(x):
    from jitgrad.nn.functional import logsigmoid  # loads Numba: on first use
    return logsigmoid(x)


class NegativeBinomial(_CountedTrials):
    """Successes before ``total_count`` failures, success probability ``probs`` in [0, 1)."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        super().__init__(total_count, probs, logits, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(NegativeBinomial, _instance)
        return self._expand_into(new, batch_shape)

    @property
    def mean(self):
        return self.total_count * torch.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / torch.sigmoid(-self.logits)


    @lazy_property
    def _gamma(self):
        # Note that we parameterize with rate = 1/scale (= exp(-logits))
        return Gamma(concentration=self.total_count, rate=torch.exp(-self.logits),
                     validate_args=False)

    def sample(self, sample_shape=torch.Size()):
        with torch.no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return torch.poisson(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = (self.total_count * _logsigmoid(-self.logits)
                                 + value * _logsigmoid(self.logits))
        log_normalization = (-torch.lgamma(self.total_count + value) + torch.lgamma(1.0 + value)
                             + torch.lgamma(self.total_count))
        # The case self.total_count == 0 and value == 0 has probability 1 but
        # lgamma(0) is infinite. Handle this case separately using a function
        # that does not modify tensors in place to allow Jit compilation.
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
