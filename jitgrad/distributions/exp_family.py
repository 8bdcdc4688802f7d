"""``ExponentialFamily``: entropy (and same-family KL) from the log normalizer by autograd."""
from __future__ import annotations

import jitgrad as torch

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Distributions with density ``exp(<t(x), theta> - F(theta) + k(x))``: subclasses give
    ``_natural_params`` (theta), ``_log_normalizer`` (F) and ``_mean_carrier_measure``
    (E[k(x)]); entropy is then a Bregman divergence of F (Nielsen & Nock)."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = torch.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result += lg_normal
        for np, g in zip(nparams, gradients):
            result -= (np * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
