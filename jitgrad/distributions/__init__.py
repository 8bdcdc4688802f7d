"""``jitgrad.distributions``: PyTorch's ``torch.distributions`` for the families RL and VAE
code uses, ported op for op onto jitgrad's tensors, so parameters get gradients through
``log_prob``/``entropy``/``rsample``/``kl_divergence`` and, after ``manual_seed``, CPU samples
are PyTorch's bit for bit (the same sampler calls in the same order).

Not here (yet): the families that need ``_standard_gamma``/``lgamma``/``digamma`` (Gamma, Beta,
Dirichlet, Poisson, ...), ``LowRankMultivariateNormal``, transforms and
``TransformedDistribution``.
"""
from . import constraints  # noqa: F401 - torch.distributions.constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .uniform import Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "Exponential", "ExponentialFamily",
           "Independent", "Laplace", "MultivariateNormal", "Normal", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "Uniform", "kl_divergence", "register_kl"]
